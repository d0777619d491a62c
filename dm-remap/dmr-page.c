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
 * (dmr_map_read()), so an evicted page is freed after a grace period, in
 * batches of fixed arrays (dmr_page_free_rcu()): nothing the worker does
 * to let a page go allocates memory or waits for a grace period of its
 * own (issue 40, item 11; kvfree_rcu_mightsleep() may do both).
 *
 * Crash safety: nothing here writes the device but the checkpoints the
 * cache forces (dmr_checkpoint(), rule 5).  A page leaves only when the
 * newest slot holds its current copy (dmr_map_evict()), and @map_crc its
 * CRC; the next checkpoint, into the other slot, copies the block across
 * before it writes its header (dmr_write_map()), so whichever slot a load
 * picks holds it, and the newest is never written while it is the only
 * copy.
 */
#include <linux/bio.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "dmr.h"

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
	u64 cap = dmr_map_cache_pages(&rc->sb.geo, rc->opts.map_cache);
	u32 *ring;
	u8 *state, *ref;

	if (!cap)
		return 0;
	/* a u32 and two bytes per map block: above INT_MAX bytes at the limit */
	ring = dmr_alloc_dev_array(rc, DMR_ARRAY_PC_RING);
	state = dmr_alloc_dev_array(rc, DMR_ARRAY_PC_STATE);
	ref = dmr_alloc_dev_array(rc, DMR_ARRAY_PC_REF);
	if (!ring || !state || !ref) {
		kvfree(ring);
		kvfree(state);
		kvfree(ref);
		return -ENOMEM;
	}
	dmr_page_clock_init(&rc->pc, ring, state, ref, cap, rc->map.nr_map_blocks);
	return 0;
}

void dmr_map_cache_exit(struct dmr_target *rc)
{
	kvfree(rc->pc.ring);
	kvfree(rc->pc.state);
	kvfree(rc->pc.ref);
	rc->pc.cap = 0;
}

/**
 * dmr_map_cache_loaded() - a map page the load filled (dmr_slot_io's @loaded)
 * @ctx: the target, loading slot @rc->ckpt_slot ^ 1 (dmr_load_slot())
 * @p: the page
 *
 * Its entries are counted into @rc->load_valid and @rc->load_mapped (the
 * load checks them once every page was counted); then, with a cache, it
 * joins the cache and victims leave, so a map larger than the memory
 * given to it loads in the cache's size.  The pages leave dirty for the
 * other slot only, as the loaded slot holds them (dmr_map_evict()); the
 * target is not writable yet, so no checkpoint is forced.  The loader's
 * bounce buffer is in use: nothing here reads or writes the device.
 *
 * Return: 0, or -EILSEQ if an entry points outside the data area.
 */
int dmr_map_cache_loaded(void *ctx, u64 p)
{
	struct dmr_target *rc = ctx;

	if (dmr_map_count_page(&rc->map, p, rc->load_valid, &rc->load_mapped))
		return -EILSEQ;
	if (!rc->pc.cap)
		return 0;
	if (!(rc->pc.state[p] & DMR_PC_RESIDENT))
		dmr_page_clock_insert(&rc->pc, p);
	dmr_map_trim(rc);
	return 0;
}

/**
 * dmr_map_cache_replay() - map pages replay is about to change (dmr_replay's @need)
 * @ctx: the target
 * @lba: first logical block
 * @n: blocks
 *
 * Pages out are read back (dmr_map_need()).  A unit replayed makes them
 * dirty for both slots: they leave only after the checkpoints replay
 * writes when the cache is over its size (dmr_replay_step(), dmr-ckpt.c),
 * or the recovery checkpoint.
 *
 * Return: 0, or dmr_map_need()'s error.
 */
int dmr_map_cache_replay(void *ctx, u64 lba, u64 n)
{
	return n ? dmr_map_need(ctx, lba, n) : 0;
}

/*
 * After replay: the pages the log gave (dmr_map_reserve()) join the
 * cache.  What may leave leaves at the end of dmr_load(), after the
 * recovery checkpoint.
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
	unsigned int slot = rc->ckpt_slot ^ 1;	/* the last one written */
	struct dmr_ckpt_layout l;
	int r;

	dmr_ckpt_layout(geo, &l);
	r = dmr_rw(rc, REQ_OP_READ, geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks +
		   l.map_offset + p, 1, page);
	if (r)
		return r;
	if (crc32c(~0U, page, DMR_BLOCK_SIZE) != rc->map_crc[p])
		return -EILSEQ;
	dmr_map_block_decode(&rc->map, p, page, page);	/* in place */
	return 0;
}

/*
 * Map page @p back in: a miss.  A page that cannot be read or fails its
 * checks is the map lost for its blocks: the I/O error of the request
 * that needed it, and failed mode (read-only), as a damaged checkpoint is
 * at load.  Allocated as a new map page is (dmr_map_gfp()): while
 * loading (replay reads pages back), a lack of memory fails the table
 * load rather than waiting for it.
 */
static int dmr_page_fetch(struct dmr_target *rc, u64 p)
{
	u32 *page = kmalloc(DMR_BLOCK_SIZE, dmr_map_gfp(rc));
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
	u64 p, last = (lba + n - 1) >> rc->map.page_shift;
	int r;

	if (!rc->pc.cap)
		return 0;
	for (p = lba >> rc->map.page_shift; p <= last; p++) {
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

/* RCU callback: a batch's grace period is over, no reader holds its pages. */
static void dmr_page_batch_free(struct rcu_head *head)
{
	struct dmr_page_batch *b = container_of(head, struct dmr_page_batch, rcu);
	struct dmr_target *rc = b->rc;
	unsigned int i;

	for (i = 0; i < b->nr; i++)
		kfree(b->pages[i]);
	b->nr = 0;
	smp_store_release(&b->busy, false);	/* the frees, then the flag */
	wake_up(&rc->evict_wq);
}

void dmr_page_batch_init(struct dmr_target *rc)
{
	unsigned int i;

	init_waitqueue_head(&rc->evict_wq);
	for (i = 0; i < ARRAY_SIZE(rc->evict); i++)
		rc->evict[i].rc = rc;
}

/*
 * Hand the current batch to RCU and go on in the other one, once that
 * one's grace period is over (@wait), or if it already is.
 * Return: true if handed over.
 */
static bool dmr_page_batch_submit(struct dmr_target *rc, bool wait)
{
	struct dmr_page_batch *b = &rc->evict[rc->evict_cur];
	struct dmr_page_batch *next = &rc->evict[rc->evict_cur ^ 1];

	if (!b->nr)
		return true;
	/* acquire: pairs with dmr_page_batch_free()'s release of @busy */
	if (smp_load_acquire(&next->busy)) {
		if (!wait)
			return false;
		/* (the same pairing) */
		wait_event(rc->evict_wq, !smp_load_acquire(&next->busy));
	}
	WRITE_ONCE(b->busy, true);
	call_rcu(&b->rcu, dmr_page_batch_free);
	rc->evict_cur ^= 1;
	return true;
}

/*
 * An evicted page, freed once no lockless reader (dmr_map_read()) can
 * hold it.  A full batch waits for the other one's grace period, which
 * began DMR_EVICT_BATCH evictions ago.
 */
static void dmr_page_free_rcu(struct dmr_target *rc, u32 *page)
{
	struct dmr_page_batch *b = &rc->evict[rc->evict_cur];

	if (b->nr == DMR_EVICT_BATCH) {
		dmr_page_batch_submit(rc, true);
		b = &rc->evict[rc->evict_cur];
	}
	b->pages[b->nr++] = page;
}

/*
 * Destructor (dmr_io_exit()), after the worker stopped: every page
 * evicted is freed, and no callback of this target is left to run.
 */
void dmr_page_batch_exit(struct dmr_target *rc)
{
	if (!rc->evict[0].rc)
		return;		/* dmr_page_batch_init() never ran */
	dmr_page_batch_submit(rc, true);
	rcu_barrier();
}

/**
 * dmr_map_evict_clean() - cache victims leave, as long as one may
 * @rc: target (worker, or the load)
 *
 * Victims leave until the cache is within its size or every page in it
 * changed since the newest checkpoint (dmr_map_evict() takes only a page
 * that slot holds).  Writes nothing.
 *
 * Return: true if the cache is still over its size.
 */
bool dmr_map_evict_clean(struct dmr_target *rc)
{
	struct dmr_page_clock *c = &rc->pc;
	/* (the slot written last: the next checkpoint goes to @ckpt_slot) */
	unsigned int newest = rc->ckpt_slot ^ 1;
	bool absent;
	u32 victim;
	u32 *page;

	if (!c->cap)
		return false;
	while (c->nr > c->cap &&
	       (victim = dmr_page_clock_victim(c, rc->map.dirty, newest)) != DMR_NO_PAGE) {
		spin_lock(&rc->map_lock);
		page = dmr_map_evict(&rc->map, victim, newest, &absent);
		spin_unlock(&rc->map_lock);
		if (!page)	/* in the cache but never allocated */
			continue;
		/* the read path may still be looking at it */
		dmr_page_free_rcu(rc, page);
		atomic64_inc(&rc->stats.map_evictions);
	}
	/* a partial batch goes if it need not wait; at the next call if not */
	dmr_page_batch_submit(rc, false);
	return c->nr > c->cap;
}

/*
 * Cache victims leave until it is within its size.  A checkpoint is
 * forced when every page in it changed since the last one (one is
 * enough: after it every page is clean for the newest slot, which is all
 * dmr_map_evict() asks); a target that cannot write one (read only,
 * failed, stopping) stays over its size.
 */
void dmr_map_trim(struct dmr_target *rc)
{
	if (!dmr_map_evict_clean(rc) ||
	    READ_ONCE(rc->mode) != DMR_MODE_WRITE || READ_ONCE(rc->stopping))
		return;
	if (dmr_checkpoint(rc, false))
		return;
	atomic64_inc(&rc->stats.map_forced);
	dmr_map_evict_clean(rc);
}
