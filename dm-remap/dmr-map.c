// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap map and segment accounting.
 *
 * Pure code (see dmr-pure.h); locking is the caller's (see dmr-map.h).
 * Invariant kept by every function here: the sum of the segments' valid
 * counts equals @mapped, and equals the number of non-zero map entries.
 */
#include "dmr-map.h"

/**
 * dmr_map_init() - set up an empty map over caller-allocated arrays
 * @m: the map
 * @l2p: @nr_logical entries
 * @nr_logical: logical blocks
 * @segs: @nr_segs entries
 * @nr_segs: segments
 * @seg_blocks: blocks per segment
 * @dirty: one byte per map block (DIV_ROUND_UP(@nr_logical, 1024))
 *
 * Every map block starts dirty for both checkpoint slots.
 */
void dmr_map_init(struct dmr_map *m, u32 *l2p, u64 nr_logical,
		  struct dmr_seg *segs, u32 nr_segs, u32 seg_blocks, u8 *dirty)
{
	m->l2p = l2p;
	m->nr_logical = nr_logical;
	m->segs = segs;
	m->nr_segs = nr_segs;
	m->seg_blocks = seg_blocks;
	m->mapped = 0;
	m->dirty = dirty;
	m->nr_map_blocks = div64_u64(nr_logical + DMR_MAP_ENTRIES_PER_BLOCK - 1,
				     DMR_MAP_ENTRIES_PER_BLOCK);
	memset(l2p, 0, nr_logical * sizeof(*l2p));
	memset(segs, 0, (size_t)nr_segs * sizeof(*segs));
	memset(dirty, DMR_DIRTY_ALL, m->nr_map_blocks);
}

static void dmr_map_dirty(struct dmr_map *m, u64 lba)
{
	m->dirty[div64_u64(lba, DMR_MAP_ENTRIES_PER_BLOCK)] = DMR_DIRTY_ALL;
}

/* Return: the map entry of @lba: DMR_UNMAPPED or pba + 1. */
u32 dmr_map_get(const struct dmr_map *m, u64 lba)
{
	return m->l2p[lba];
}

static void dmr_map_drop(struct dmr_map *m, u32 entry)
{
	struct dmr_seg *s = &m->segs[dmr_pba_segment(m, entry - 1)];

	s->valid--;
	m->mapped--;
}

/**
 * dmr_map_set() - point a logical block at a physical block
 * @m: the map
 * @lba: logical block, below @m->nr_logical
 * @pba: physical block in the data area
 *
 * The block's previous location, if any, stops being valid.
 */
void dmr_map_set(struct dmr_map *m, u64 lba, u32 pba)
{
	u32 old = m->l2p[lba];

	if (old != DMR_UNMAPPED)
		dmr_map_drop(m, old);
	m->l2p[lba] = pba + 1;
	m->segs[dmr_pba_segment(m, pba)].valid++;
	m->mapped++;
	dmr_map_dirty(m, lba);
}

/* Unmap a logical block (discard); a no-op if it is not mapped. */
void dmr_map_unmap(struct dmr_map *m, u64 lba)
{
	u32 old = m->l2p[lba];

	if (old == DMR_UNMAPPED)
		return;
	dmr_map_drop(m, old);
	m->l2p[lba] = DMR_UNMAPPED;
	dmr_map_dirty(m, lba);
}

/**
 * dmr_map_run() - length of a run of logical blocks stored alike
 * @m: the map
 * @lba: first logical block
 * @max: at most this many blocks (> 0, and @lba + @max <= nr_logical)
 * @first: the entry of @lba (DMR_UNMAPPED or pba + 1)
 *
 * Return: how many blocks from @lba are either all unmapped or mapped to
 * consecutive physical blocks, so that one I/O can serve them.
 */
u32 dmr_map_run(const struct dmr_map *m, u64 lba, u32 max, u32 *first)
{
	u32 e = m->l2p[lba], n;

	*first = e;
	for (n = 1; n < max; n++) {
		u32 next = m->l2p[lba + n];

		if (e == DMR_UNMAPPED ? next != DMR_UNMAPPED : next != e + n)
			break;
	}
	return n;
}

/**
 * dmr_map_recount() - rebuild valid counts and @mapped from the map
 * @m: the map
 *
 * Used after a checkpoint was loaded.
 *
 * Return: 0, or -EINVAL if an entry points outside the data area.
 */
int dmr_map_recount(struct dmr_map *m)
{
	u64 lba, limit = (u64)m->nr_segs * m->seg_blocks;
	u32 s;

	for (s = 0; s < m->nr_segs; s++)
		m->segs[s].valid = 0;
	m->mapped = 0;
	for (lba = 0; lba < m->nr_logical; lba++) {
		u32 e = m->l2p[lba];

		if (e == DMR_UNMAPPED)
			continue;
		if (e - 1 >= limit)
			return -EINVAL;
		m->segs[dmr_pba_segment(m, e - 1)].valid++;
		m->mapped++;
	}
	return 0;
}

/**
 * dmr_map_consistent() - check the accounting invariant
 * @m: the map
 *
 * Return: true if the valid counts match the map entry by entry.
 */
bool dmr_map_consistent(const struct dmr_map *m)
{
	u64 lba, sum = 0, nonzero = 0;
	u32 s;

	for (s = 0; s < m->nr_segs; s++)
		sum += m->segs[s].valid;
	for (lba = 0; lba < m->nr_logical; lba++)
		nonzero += m->l2p[lba] != DMR_UNMAPPED;
	return sum == m->mapped && nonzero == m->mapped;
}

/**
 * dmr_seg_alloc() - choose a segment to write next
 * @m: the map
 * @cursor: where the previous search ended; advanced
 * @busy1: segment that must not be chosen (the open one), or DMR_NO_SEGMENT
 * @busy2: another one (the one already chosen to follow), or DMR_NO_SEGMENT
 *
 * Only segments never written since format are handed out: without
 * garbage collection nothing that recovery might still read is ever
 * overwritten.
 *
 * Return: a segment number, or DMR_NO_SEGMENT when none is free.
 */
u32 dmr_seg_alloc(const struct dmr_map *m, u32 *cursor, u32 busy1, u32 busy2)
{
	u32 i, s;

	for (i = 0; i < m->nr_segs; i++) {
		s = (*cursor + i) % m->nr_segs;
		if (!(m->segs[s].flags & DMR_SEG_USED) && s != busy1 && s != busy2) {
			*cursor = (s + 1) % m->nr_segs;
			return s;
		}
	}
	return DMR_NO_SEGMENT;
}

/* Return: segments never written since format. */
u32 dmr_seg_free_count(const struct dmr_map *m)
{
	u32 s, n = 0;

	for (s = 0; s < m->nr_segs; s++)
		n += !(m->segs[s].flags & DMR_SEG_USED);
	return n;
}
