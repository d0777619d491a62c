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
 * Crash safety: nothing here writes the device; a cache that only a
 * checkpoint lets shrink says so to the worker (dmr_map_trim(); rule 5
 * for the checkpoint).  A page leaves only when the
 * newest slot holds its current copy (dmr_map_evict()), and @map_crc its
 * CRC; the next checkpoint, into the other slot, copies the block across
 * before it writes its header (dmr_write_map()), so whichever slot a load
 * picks holds it, and the newest is never written while it is the only
 * copy.
 */
#include <linux/bio.h>
#include <linux/mempool.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "dmr.h"

static bool dmr_page_batch_submit(struct dmr_target *rc, bool wait);

/* GC's read-ahead (dmr_map_prefetch()): at most this many map pages at once */
#define DMR_PREFETCH_PAGES	32

/* One page of a read-ahead: its memory, and its read's error bits. */
struct dmr_prefetch_page {
	struct dmr_prefetch *pf;
	u32 *page;
	unsigned long error;
};

/*
 * struct dmr_prefetch - the worker's read-ahead of map pages
 * @pages: the pages being read (dmr_pages_pick())
 * @io: each one's memory and error, the error written by its read's end
 * @pending: reads not ended, plus one the submitter holds while it
 *	submits: the end that takes it to zero completes @done
 * @done: all the reads ended
 */
struct dmr_prefetch {
	u64 pages[DMR_PREFETCH_PAGES];
	struct dmr_prefetch_page io[DMR_PREFETCH_PAGES];
	atomic_t pending;
	struct completion done;
};

/*
 * Test hook (fault injection, as fault_flight_fail): the next this many
 * map pages a loaded target asks the kernel for are refused, as when
 * memory is short, so that a test can show the worker goes on with the
 * reserve (issue 40, item 11).  0, the default, does nothing.
 */
static unsigned int dmr_fault_page_alloc;
module_param_named(fault_page_alloc, dmr_fault_page_alloc, uint, 0600);
MODULE_PARM_DESC(fault_page_alloc,
		 "Test hook: refuse the next N map page allocations of loaded targets");

/* The reserve's allocator (mempool_alloc_t): a map page, or none. */
static void *dmr_page_pool_alloc(gfp_t gfp, void *data)
{
	struct dmr_target *rc = data;

	if (READ_ONCE(rc->loaded) && dmr_fault_take(&dmr_fault_page_alloc))
		return NULL;
	return kmalloc(DMR_BLOCK_SIZE, gfp);
}

/**
 * dmr_page_pool_init() - the map page reserve
 * @rc: target
 *
 * DMR_MAP_RESERVE pages set aside at construction (128 KiB, left out of
 * the memory check's count with the other small fixed allocations,
 * dmr_map_memory_bytes()), for the worker when memory is short: see
 * dmr_map_page_get().
 *
 * Return: 0 or -ENOMEM.
 */
static int dmr_page_pool_init(struct dmr_target *rc)
{
	rc->page_pool = mempool_create(DMR_MAP_RESERVE, dmr_page_pool_alloc,
				       mempool_kfree, rc);
	return rc->page_pool ? 0 : -ENOMEM;
}

/* After dmr_page_batch_exit(): no callback returns a page any more. */
static void dmr_page_pool_exit(struct dmr_target *rc)
{
	mempool_destroy(rc->page_pool);
	rc->page_pool = NULL;
}

/**
 * dmr_map_page_get() - memory for a map page (not zeroed)
 * @rc: target; loaded, the worker
 * @wait: wait for it (a page the request cannot do without)
 *
 * Issue 40, item 11: the worker serves the device's own writes, so
 * reclaim may wait for it (swap or dirty page cache on the device).
 * GFP_NOIO, under the worker's memalloc_noio_save() too, keeps reclaim
 * from writing to the device; the reserve keeps the worker going when
 * reclaim finds nothing: pages come from the kernel without waiting, or
 * from the reserve, which the pages leaving the cache refill after their
 * grace period (dmr_page_batch_free()).  Only then does it wait: first
 * the evicted pages of a partial batch are handed to RCU, so that the
 * wait ends on their return if on nothing else (mempool_alloc() also
 * retries reclaim every 5 s).  With a cache (map_cache), the pages a
 * request holds at once are its own (within DMR_MAP_RESERVE for any
 * request of up to DMR_MAP_RESERVE - 1 pages of the map: 124 MiB of
 * logical space narrow, 62 MiB wide) and every other left the cache at
 * its last trim, so the wait always ends.  Without a cache, pages never
 * leave and nothing would end a wait on the reserve but that 5 s timer:
 * the reserve covers the first DMR_MAP_RESERVE pages memory refused, and
 * after that the worker waits in the page allocator's own reclaim loop,
 * as any GFP_NOIO allocation does.
 *
 * While loading nothing waits: a page without memory fails the table
 * load (its error), never calls the OOM killer.
 *
 * Return: the page, or NULL (loading, or !@wait).
 */
static u32 *dmr_map_page_get(struct dmr_target *rc, bool wait)
{
	u32 *page;

	if (!READ_ONCE(rc->loaded))
		return kmalloc(DMR_BLOCK_SIZE, GFP_NOIO | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	page = mempool_alloc(rc->page_pool, GFP_NOIO & ~__GFP_DIRECT_RECLAIM);
	if (page || !wait)
		return page;
	if (!rc->pc.cap)	/* no cache: no page comes back to the reserve */
		return kmalloc(DMR_BLOCK_SIZE, GFP_NOIO);
	dmr_page_batch_submit(rc, true);
	return mempool_alloc(rc->page_pool, GFP_NOIO);
}

/**
 * dmr_map_cache_init() - the cache the table asks for
 * @rc: target, its map allocated
 *
 * A cache as large as the map (or none asked for) is no cache: every
 * page stays, as without the option.
 *
 * Return: 0 or -ENOMEM.
 */
static int dmr_map_cache_init(struct dmr_target *rc)
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
	rc->pf = kzalloc(sizeof(*rc->pf), GFP_KERNEL);
	if (!ring || !state || !ref || !rc->pf) {
		kvfree(ring);
		kvfree(state);
		kvfree(ref);
		kfree(rc->pf);
		rc->pf = NULL;
		return -ENOMEM;
	}
	init_completion(&rc->pf->done);
	dmr_page_clock_init(&rc->pc, ring, state, ref, cap, rc->map.nr_map_blocks);
	return 0;
}

static void dmr_map_cache_exit(struct dmr_target *rc)
{
	kvfree(rc->pc.ring);
	kvfree(rc->pc.state);
	kvfree(rc->pc.ref);
	kfree(rc->pf);
	rc->pf = NULL;
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
	return dmr_map_need(ctx, lba, n);	/* (replay asks for n > 0) */
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

/* Page @p, read and checked, into the map (dmr_map_page_in(), its lock). */
static int dmr_page_put_in(struct dmr_target *rc, u64 p, u32 *page)
{
	int r;

	spin_lock(&rc->map_lock);
	r = dmr_map_page_in(&rc->map, p, page);
	spin_unlock(&rc->map_lock);
	return r;
}

/* Where map page @p is on the device: in the slot written last. */
static u64 dmr_page_block(struct dmr_target *rc, u64 p)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	unsigned int slot = rc->ckpt_slot ^ 1;	/* the last one written */
	struct dmr_ckpt_layout l;

	dmr_ckpt_layout(geo, &l);
	return geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks + l.map_offset + p;
}

/* A page as read: its CRC checked, then decoded in place. */
static int dmr_page_check(struct dmr_target *rc, u64 p, u32 *page)
{
	if (crc32c(~0U, page, DMR_BLOCK_SIZE) != rc->map_crc[p])
		return -EILSEQ;
	dmr_map_block_decode(&rc->map, p, page, page);	/* in place */
	return 0;
}

/*
 * Map page @p as the newest slot holds it, into @page: the one read, its
 * CRC checked against the slot's table (the same for both slots: the
 * page was clean for both when it left), then its entries decoded.
 */
static int dmr_page_read(struct dmr_target *rc, u64 p, u32 *page)
{
	int r = dmr_rw(rc, REQ_OP_READ, dmr_page_block(rc, p), 1, page);

	return r ? r : dmr_page_check(rc, p, page);
}

/*
 * Map page @p back in: a miss.  A page that cannot be read or fails its
 * checks is the map lost for its blocks: the I/O error of the request
 * that needed it, and failed mode (read-only), as a damaged checkpoint is
 * at load.  Its memory is dmr_map_page_get()'s, waiting for it if @wait;
 * without memory at once (!@wait), or while loading (replay reads pages
 * back: a lack of memory fails the table load rather than waiting for
 * it), -ENOMEM, the target unchanged.
 */
static int dmr_page_fetch(struct dmr_target *rc, u64 p, bool wait)
{
	u32 *page = dmr_map_page_get(rc, wait);
	int r;

	if (!page)
		return -ENOMEM;
	r = dmr_page_read(rc, p, page);
	if (!r)
		r = dmr_page_put_in(rc, p, page);
	if (r) {
		mempool_free(page, rc->page_pool);
		DMERR_LIMIT("%s: map page %llu cannot be read back (%d)",
			    rc->dev->name, (unsigned long long)p, r);
		dmr_fail(rc, -EIO, "map page read");
		return -EIO;
	}
	atomic64_inc(&rc->stats.map_misses);
	return 0;
}

/**
 * dmr_map_need_part() - the map pages of blocks [@lba, @lba + @n) in memory
 * @rc: target (worker)
 * @lba: first logical block
 * @n: blocks (> 0)
 * @whole: every page is needed (dmr_need_waits()); if not, the pages
 *	after the first are taken only as memory gives them at once
 * @got: blocks from @lba whose pages are in memory now: @n, or fewer
 *	without @whole (at least the first page's)
 *
 * Called by the worker before it looks up or changes their entries: a
 * write, a discard, a read the map path could not serve, GC's test of a
 * block.  Each page is used in the cache, and joins it if it was not
 * there, over its size until dmr_map_trim() (nothing leaves during a
 * request, so a page needed here stays until the request is done).
 *
 * Return: 0, -ENOMEM (loading), or -EIO if a page out could not be
 * read back.
 */
int dmr_map_need_part(struct dmr_target *rc, u64 lba, u64 n, bool whole, u64 *got)
{
	u64 first = lba >> rc->map.page_shift, p;
	u64 last = (lba + n - 1) >> rc->map.page_shift;
	int r;

	*got = n;
	if (!rc->pc.cap)
		return 0;
	for (p = first; p <= last; p++) {
		if (dmr_page_clock_touch(&rc->pc, p))
			continue;
		if (dmr_map_page_state(&rc->map, p) == DMR_PAGE_EVICTED) {
			bool wait = dmr_need_waits(whole, p - first);

			r = dmr_page_fetch(rc, p, wait);
			if (r == -ENOMEM && !wait) {
				*got = dmr_need_blocks_in(lba, n, p - first,
							  rc->map.page_shift);
				return 0;
			}
			if (r)
				return r;
		}
		dmr_page_clock_insert(&rc->pc, p);
	}
	return 0;
}

/*
 * Whether the map pages of blocks [@lba, @lba + @n) are all in memory,
 * so that dmr_map_need() would read nothing back (the worker's, or a
 * writer holding its lock: dmr_worker_inline()).
 */
bool dmr_map_resident(struct dmr_target *rc, u64 lba, u64 n)
{
	u64 p = lba >> rc->map.page_shift, last = (lba + n - 1) >> rc->map.page_shift;

	if (!rc->pc.cap)
		return true;
	for (; p <= last; p++)
		if (dmr_map_page_state(&rc->map, p) == DMR_PAGE_EVICTED)
			return false;
	return true;
}

/* dmr_pages_pick()'s test: a page out of memory. */
static bool dmr_prefetch_want(void *ctx, u64 p)
{
	struct dmr_target *rc = ctx;

	return dmr_map_page_state(&rc->map, p) == DMR_PAGE_EVICTED;
}

/* A read-ahead's read ended (dm-io's completion, any context). */
static void dmr_prefetch_end(unsigned long error, void *context)
{
	struct dmr_prefetch_page *io = context;
	struct dmr_prefetch *pf = io->pf;

	io->error = error;
	if (atomic_dec_and_test(&pf->pending))	/* (a full barrier after @error) */
		complete(&pf->done);
}

/*
 * A page the read-ahead read: in the map and the cache if it reads and
 * checks, as dmr_page_fetch() would put it; if not, let go: the test of
 * its block reads it again (dmr_map_need()), and a page that cannot be
 * read fails there, with its message and failed mode.
 */
static void dmr_prefetch_install(struct dmr_target *rc, u64 p, u32 *page,
				 unsigned long error)
{
	int r = error ? -EIO : dmr_page_check(rc, p, page);

	if (!r)
		r = dmr_page_put_in(rc, p, page);
	if (r) {
		mempool_free(page, rc->page_pool);
		return;
	}
	dmr_page_clock_insert(&rc->pc, p);
	atomic64_inc(&rc->stats.map_misses);
}

/**
 * dmr_map_prefetch() - read the map pages of some blocks in, together
 * @rc: target (worker), loaded
 * @lba: logical blocks (GC's victim's, from the next one it tests)
 * @n: their number
 *
 * Issue 41: GC tested a victim's blocks one at a time, each test that
 * found its page out reading it with one synchronous 4 KiB read.  Here the
 * pages out among the first blocks of @lba, up to DMR_PREFETCH_PAGES of
 * them (dmr_pages_pick(): ascending, so that neighbours in the slot merge
 * under the plug), are read all in flight at once, and join the cache as
 * dmr_map_need() would have them join (over its size until
 * dmr_map_trim(), as every page a request needs).  Only an optimisation:
 * the memory comes from the kernel without waiting and never from the
 * reserve, which is the worker's promise of progress
 * (dmr_map_page_get()); without memory, or with a read or check that
 * fails, the tests read what is missing one at a time as before.
 *
 * Return: the blocks from @lba the read-ahead covered (at least one if
 * @n > 0 and the target has a cache): the caller's next read-ahead
 * starts there.
 */
u32 dmr_map_prefetch(struct dmr_target *rc, const u64 *lba, u32 n)
{
	struct dmr_prefetch *pf = rc->pf;
	struct blk_plug plug;
	u32 used, k, got, i;

	if (!pf || !n)
		return 0;
	k = dmr_pages_pick(lba, n, rc->map.page_shift, dmr_prefetch_want, rc,
			   pf->pages, DMR_PREFETCH_PAGES, &used);
	if (k) {
		reinit_completion(&pf->done);
		atomic_set(&pf->pending, 1);
		blk_start_plug(&plug);
		for (got = 0; got < k; got++) {
			struct dmr_prefetch_page *io = &pf->io[got];
			struct dm_io_region region = {
				.bdev = rc->dev->bdev,
				.sector = dmr_page_block(rc, pf->pages[got]) *
					  DMR_SECTORS_PER_BLOCK,
				.count = DMR_SECTORS_PER_BLOCK,
			};
			struct dm_io_request req = {
				.bi_opf = REQ_OP_READ,
				.mem.type = DM_IO_KMEM,
				.notify.fn = dmr_prefetch_end,
				.notify.context = io,
				.client = rc->io_client,
			};

			/* a fault test's refusals are the worker's (the reserve) */
			io->page = READ_ONCE(dmr_fault_page_alloc) ? NULL :
				kmalloc(DMR_BLOCK_SIZE, GFP_NOIO | __GFP_NORETRY | __GFP_NOWARN);
			if (!io->page)
				break;
			io->pf = pf;
			io->error = 0;
			req.mem.ptr.addr = io->page;
			atomic_inc(&pf->pending);
			if (dmr_dm_io(&req, &region, NULL))	/* not submitted */
				dmr_prefetch_end(~0UL, &pf->io[got]);
		}
		blk_finish_plug(&plug);
		if (!atomic_dec_and_test(&pf->pending))
			wait_for_completion(&pf->done);
		for (i = 0; i < got; i++)
			dmr_prefetch_install(rc, pf->pages[i], pf->io[i].page, pf->io[i].error);
	}
	return used;
}

/* dmr_map_need_part() of every page: a write, a read, GC's test. */
int dmr_map_need(struct dmr_target *rc, u64 lba, u64 n)
{
	u64 got;

	return dmr_map_need_part(rc, lba, n, true, &got);
}

/* RCU callback: a batch's grace period is over, no reader holds its pages. */
static void dmr_page_batch_free(struct rcu_head *head)
{
	struct dmr_page_batch *b = container_of(head, struct dmr_page_batch, rcu);
	struct dmr_target *rc = b->rc;
	unsigned int i;

	/* back to the reserve first (mempool_free() is safe in softirq) */
	for (i = 0; i < b->nr; i++)
		mempool_free(b->pages[i], rc->page_pool);
	b->nr = 0;
	smp_store_release(&b->busy, false);	/* the frees, then the flag */
	wake_up(&rc->evict_wq);
}

static void dmr_page_batch_init(struct dmr_target *rc)
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
 * Destructor (dmr_page_exit()), after the worker stopped: every page
 * evicted is freed, and no callback of this target is left to run.
 */
static void dmr_page_batch_exit(struct dmr_target *rc)
{
	if (!rc->evict[0].rc)
		return;		/* dmr_page_batch_init() never ran */
	dmr_page_batch_submit(rc, true);
	rcu_barrier();
}

/**
 * dmr_map_trim() - cache victims leave, as long as one may
 * @rc: target (worker, or the load)
 *
 * Victims leave until the cache is within its size or every page in it
 * changed since the newest checkpoint (dmr_map_evict() takes only a page
 * that slot holds).  Writes nothing.  A cache left over its size needs a
 * checkpoint, which the worker writes (DMR_NEED_CKPT_CACHE; one is
 * enough: after it every page is clean for the newest slot) and the
 * loader's replay too (dmr_replay_step()); a target that cannot write
 * one (read only, failed, stopping) stays over its size.
 *
 * Return: true if the cache is still over its size.
 */
bool dmr_map_trim(struct dmr_target *rc)
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
 * A new page of the map (struct dmr_map): the worker maps a block of it
 * for the first time (dmr_map_reserve(), outside the map's lock), or a
 * load finds it in a checkpoint or the log.  Its memory is
 * dmr_map_page_get()'s: the reserve, waited for, in the worker; while
 * loading, a failure is an error for the table load.
 */
static void *dmr_map_page_alloc(void *ctx, u64 page __always_unused)
{
	u32 *p = dmr_map_page_get(ctx, true);

	if (p)
		memset(p, 0, DMR_BLOCK_SIZE);
	return p;
}

/*
 * The constructor, after dmr_io_init() allocated the map's arrays: the
 * eviction batches, the map's page allocator, the reserve and the cache.
 */
int dmr_page_init(struct dmr_target *rc, const char **error)
{
	dmr_page_batch_init(rc);
	rc->map.page_alloc = dmr_map_page_alloc;
	rc->map.page_ctx = rc;
	if (dmr_page_pool_init(rc)) {
		*error = "Cannot allocate the map page reserve";
		return -ENOMEM;
	}
	if (dmr_map_cache_init(rc)) {
		*error = "Cannot allocate the map cache";
		return -ENOMEM;
	}
	return 0;
}

/*
 * Undo dmr_page_init(), safe on a partial one, before dmr_io_exit()
 * frees the pages still in the map: evicted pages are freed (an RCU
 * barrier), then the reserve and the cache go.
 */
void dmr_page_exit(struct dmr_target *rc)
{
	dmr_page_batch_exit(rc);
	dmr_page_pool_exit(rc);
	dmr_map_cache_exit(rc);
}
