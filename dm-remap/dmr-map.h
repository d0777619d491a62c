/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap logical-to-physical map and segment table: functions defined in
 * dmr-map.c.
 *
 * Pure code.  The map is not locked here: in the module, every mutation
 * happens under struct dmr_target's map_lock (see dmr.h) and lookups from
 * the I/O submission path take the same lock.
 *
 * Physical block numbers ("pba") are relative to the start of the data
 * area: segment s holds pba s * segment_blocks ... (s + 1) * segment_blocks - 1.
 * A map entry is 0 for an unmapped block, else pba + 1.
 */
#ifndef DMR_MAP_H
#define DMR_MAP_H

#include "dmr-pure.h"

#define DMR_UNMAPPED	0U

/**
 * struct dmr_seg - in-memory segment table entry
 * @seq: log sequence number of the first unit written to the segment
 * @valid: mapped logical blocks whose data lives in the segment
 * @flags: DMR_SEG_USED once anything was written to it
 */
struct dmr_seg {
	u64 seq;
	u32 valid;
	u32 flags;
};

/* Per map block dirty bits: one per checkpoint slot. */
#define DMR_DIRTY_SLOT(slot)	(1U << (slot))
#define DMR_DIRTY_ALL		(DMR_DIRTY_SLOT(0) | DMR_DIRTY_SLOT(1))

/**
 * struct dmr_map - the map and the segment table
 * @l2p: one entry per logical block
 * @nr_logical: logical blocks
 * @segs: one entry per segment
 * @nr_segs: segments
 * @seg_blocks: blocks per segment
 * @mapped: logical blocks currently mapped
 * @dirty: per map block (DMR_MAP_ENTRIES_PER_BLOCK entries), the slots
 *	whose copy of that block is out of date
 * @nr_map_blocks: entries in @dirty
 */
struct dmr_map {
	u32 *l2p;
	u64 nr_logical;
	struct dmr_seg *segs;
	u32 nr_segs;
	u32 seg_blocks;
	u64 mapped;
	u8 *dirty;
	u64 nr_map_blocks;
};

void dmr_map_init(struct dmr_map *m, u32 *l2p, u64 nr_logical,
		  struct dmr_seg *segs, u32 nr_segs, u32 seg_blocks, u8 *dirty);
u32 dmr_map_get(const struct dmr_map *m, u64 lba);
void dmr_map_set(struct dmr_map *m, u64 lba, u32 pba);
void dmr_map_unmap(struct dmr_map *m, u64 lba);
u32 dmr_map_run(const struct dmr_map *m, u64 lba, u32 max, u32 *first);
int __must_check dmr_map_recount(struct dmr_map *m);
bool dmr_map_consistent(const struct dmr_map *m);
u32 dmr_seg_alloc(const struct dmr_map *m, u32 *cursor, u32 busy1, u32 busy2);
u32 dmr_seg_free_count(const struct dmr_map *m);

static inline u32 dmr_pba_segment(const struct dmr_map *m, u32 pba)
{
	return pba / m->seg_blocks;
}

#endif /* DMR_MAP_H */
