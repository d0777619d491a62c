// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap map cache: with the table option map_cache, only that many
 * MiB of map pages stay in memory; the others are out, and read back
 * from the newest checkpoint slot when a request or GC needs them.
 *
 * Which page leaves is the CLOCK policy's (dmr_page_clock_*(),
 * dmr-policy.c); what leaving and coming back do to the map is the pure
 * map's (dmr_map_evict(), dmr_map_page_in(), dmr-map.c).  Both are
 * KUnit-tested and run by the simulator (remap-sim --map-cache); this
 * file is the glue: the read of a page, the worker's calls, the frees.
 *
 * Locking: the cache (struct dmr_page_clock) is the worker's, but for its
 * used bytes, which the read path sets without a lock on a hit
 * (dmr_page_clock_ref()).  A page changes state under @map_lock; the
 * read path looks entries up without it, inside an RCU read-side section
 * (dmr_map_read()), so an evicted page is freed after a grace period
 * (kvfree_rcu_mightsleep()).
 *
 * Crash safety: nothing here writes the device but the checkpoints the
 * cache forces (dmr_checkpoint(), rule 5).  A page leaves only when both
 * slots hold its current copy (its dirty bits are clear), so whichever
 * slot the next load picks holds it, and @map_crc holds its CRC.
 */
#include <linux/bio.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "dmr.h"

/* Pages per MiB of map_cache. */
#define DMR_PAGES_PER_MIB	((1U << 20) / DMR_BLOCK_SIZE)

/**
 * dmr_map_cache_init() - the cache the table asks for
 * @rc: target, its map allocated
 *
 * A cache as large as the map (or none asked for) is no cache: every
 * page stays, as without the option.
 *
 * Return: 0 or -ENOMEM.
 */
int dmr_map_cache_init(struct dmr_target *rc)
{
	u64 nr = rc->map.nr_map_blocks, cap = (u64)rc->opts.map_cache * DMR_PAGES_PER_MIB;
	u32 *ring;
	u8 *state, *ref;

	if (!cap || cap >= nr)
		return 0;
	ring = kvcalloc(nr, sizeof(*ring), GFP_KERNEL | __GFP_NOWARN);
	state = kvzalloc(nr, GFP_KERNEL | __GFP_NOWARN);
	ref = kvzalloc(nr, GFP_KERNEL | __GFP_NOWARN);
	if (!ring || !state || !ref) {
		kvfree(ring);
		kvfree(state);
		kvfree(ref);
		return -ENOMEM;
	}
	dmr_page_clock_init(&rc->pc, ring, state, ref, cap, nr);
	return 0;
}

void dmr_map_cache_exit(struct dmr_target *rc)
{
	kvfree(rc->pc.ring);
	kvfree(rc->pc.state);
	kvfree(rc->pc.ref);
	rc->pc.cap = 0;
}

/*
 * After a load: every page the checkpoint and the log gave is in the
 * cache, over its size until the first checkpoint makes them clean for
 * both slots (dmr_load_slot() leaves them dirty for the other one).
 */
void dmr_map_cache_start(struct dmr_target *rc)
{
	u64 p;

	if (!rc->pc.cap)
		return;
	for (p = 0; p < rc->map.nr_map_blocks; p++) {
		if (dmr_map_page_state(&rc->map, p) == DMR_PAGE_RESIDENT &&
		    !(rc->pc.state[p] & DMR_PC_RESIDENT))
			dmr_page_clock_insert(&rc->pc, p);
	}
}

/*
 * Map page @p as the newest slot holds it, into @page: the one read, its
 * CRC checked against the slot's table (the same for both slots: the
 * page was clean for both when it left), then its entries decoded.
 */
static int dmr_page_read(struct dmr_target *rc, u64 p, u32 *page)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	unsigned int slot = rc->ckpt_slot ^ 1, i;	/* the last one written */
	struct dmr_ckpt_layout l;
	int r;

	dmr_ckpt_layout(geo, &l);
	r = dmr_rw(rc, REQ_OP_READ, geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks +
		   l.map_offset + p, 1, page);
	if (r)
		return r;
	if (crc32c(~0U, page, DMR_BLOCK_SIZE) != rc->map_crc[p])
		return -EILSEQ;
	for (i = 0; i < DMR_MAP_ENTRIES_PER_BLOCK; i++)
		page[i] = le32_to_cpu(((__le32 *)page)[i]);
	return 0;
}

/*
 * Map page @p back in: a miss.  A page that cannot be read or fails its
 * checks is the map lost for its blocks: the I/O error of the request
 * that needed it, and failed mode (read-only), as a damaged checkpoint is
 * at load.
 */
static int dmr_page_fetch(struct dmr_target *rc, u64 p)
{
	u32 *page = kmalloc(DMR_BLOCK_SIZE, GFP_NOIO);
	int r;

	if (!page)
		return -ENOMEM;
	r = dmr_page_read(rc, p, page);
	if (!r) {
		spin_lock(&rc->map_lock);
		r = dmr_map_page_in(&rc->map, p, page);
		spin_unlock(&rc->map_lock);
	}
	if (r) {
		kfree(page);
		DMERR_LIMIT("%s: map page %llu cannot be read back (%d)",
			    rc->dev->name, (unsigned long long)p, r);
		dmr_fail(rc, -EIO, "map page read");
		return -EIO;
	}
	atomic64_inc(&rc->stats.map_misses);
	return 0;
}

/**
 * dmr_map_need() - the map pages of blocks [@lba, @lba + @n) in memory
 * @rc: target (worker)
 * @lba: first logical block
 * @n: blocks (> 0)
 *
 * Called by the worker before it looks up or changes their entries: a
 * write, a discard, a read the map path could not serve, GC's test of a
 * block.  Each page is used in the cache, and joins it if it was not
 * there, over its size until dmr_map_trim() (nothing leaves during a
 * request, so a page needed here stays until the request is done).
 *
 * Return: 0, -ENOMEM, or -EIO if a page out could not be read back.
 */
int dmr_map_need(struct dmr_target *rc, u64 lba, u64 n)
{
	u64 p, last = (lba + n - 1) >> DMR_MAP_PAGE_SHIFT;
	int r;

	if (!rc->pc.cap)
		return 0;
	for (p = lba >> DMR_MAP_PAGE_SHIFT; p <= last; p++) {
		if (dmr_page_clock_touch(&rc->pc, p))
			continue;
		if (dmr_map_page_state(&rc->map, p) == DMR_PAGE_EVICTED) {
			r = dmr_page_fetch(rc, p);
			if (r)
				return r;
		}
		dmr_page_clock_insert(&rc->pc, p);
	}
	return 0;
}

/*
 * Cache victims leave until it is within its size.  Checkpoints are
 * forced (at most two: after two, every page is clean for both slots)
 * when every page in it is dirty; a target that cannot write one (read
 * only, failed, stopping) stays over its size.
 */
void dmr_map_trim(struct dmr_target *rc)
{
	struct dmr_page_clock *c = &rc->pc;
	unsigned int forced;
	bool absent;
	u32 victim;
	u32 *page;

	if (!c->cap || c->nr <= c->cap)
		return;
	for (forced = 0; ; forced++) {
		while (c->nr > c->cap &&
		       (victim = dmr_page_clock_victim(c, rc->map.dirty)) != DMR_NO_PAGE) {
			spin_lock(&rc->map_lock);
			page = dmr_map_evict(&rc->map, victim, &absent);
			spin_unlock(&rc->map_lock);
			if (!page)	/* in the cache but never allocated */
				continue;
			/* the read path may still be looking at it */
			kvfree_rcu_mightsleep(page);
			atomic64_inc(&rc->stats.map_evictions);
		}
		if (c->nr <= c->cap || forced == DMR_REUSE_CHECKPOINTS ||
		    READ_ONCE(rc->mode) != DMR_MODE_WRITE || READ_ONCE(rc->stopping))
			return;
		if (dmr_checkpoint(rc, false))
			return;
		atomic64_inc(&rc->stats.map_forced);
	}
}
