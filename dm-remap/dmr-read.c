// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap reads: the remapping fast path, reads served from memory, and
 * the per-segment counts of reads in flight that keep GC from reusing a
 * segment under a read (see dmr.h).
 *
 * Locking: dmr_map_read() runs in the submission path and takes no lock:
 * it reads map entries once each (READ_ONCE(); the worker stores them
 * with WRITE_ONCE() under @map_lock) and validates its lookup after
 * taking its count on the segment (see there).  dmr_do_read() runs in the
 * worker, which owns the map.  Counts are dropped at completion, in any
 * context.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>

#include "dmr.h"

static u64 dmr_read_lba(struct dmr_target *rc, struct bio *bio)
{
	return dm_target_offset(rc->ti, bio->bi_iter.bi_sector) >> 3;
}

/**
 * dmr_reader_put() - a read sent down to @seg completed
 * @rc: target
 * @seg: the segment it read
 *
 * Wakes GC if it waits for reads to an emptied segment to drain.
 */
void dmr_reader_put(struct dmr_target *rc, u32 seg)
{
	if (atomic_dec_and_test(&rc->readers[seg]) && wq_has_sleeper(&rc->readers_wq))
		wake_up(&rc->readers_wq);
}

/*
 * Look up the run starting at @lba (at most @max blocks), clamped to one
 * segment.  Called by the worker, which owns the map, or locklessly by
 * dmr_map_read(), which checks the result (entries are WRITE_ONCE()).
 */
static u32 dmr_lookup_run(struct dmr_target *rc, u64 lba, u32 max, u64 *entry)
{
	u32 seg_blocks = dmr_seg_blocks(rc);
	u32 run = dmr_map_run(&rc->map, lba, max, entry);

	if (*entry != DMR_UNMAPPED)
		run = min(run, seg_blocks - dmr_pba_offset(&rc->map, *entry - 1));
	return run;
}

/* Copy @bytes into the bio (zeroes if @src is NULL), advancing the bio. */
static void dmr_copy_to_bio(struct bio *bio, const u8 *src, unsigned int bytes)
{
	struct bvec_iter iter, start = bio->bi_iter;
	struct bio_vec bv;

	start.bi_size = bytes;
	__bio_for_each_segment(bv, bio, iter, start) {
		if (src) {
			memcpy_to_bvec(&bv, src);
			src += bv.bv_len;
		} else {
			memzero_bvec(&bv);
		}
	}
	bio_advance(bio, bytes);
}

/*
 * The buffer holding segment @seg in memory (a head's, or one in flight),
 * and in @on_disk how many blocks of it, from its start, are on the
 * device already: those are read from there (dmr_mem_run()).
 */
static u8 *dmr_mem_segment(struct dmr_target *rc, u32 seg, u32 *on_disk)
{
	unsigned int i;

	for (i = 0; i < DMR_NR_HEADS; i++)
		if (rc->heads[i].pos.segment == seg) {
			*on_disk = rc->heads[i].seg_written;
			return rc->heads[i].buf;
		}
	for (i = 0; i < DMR_FLIGHT_SLOTS; i++)
		if (rc->flight[i].segment == seg) {
			*on_disk = rc->flight[i].off;
			return rc->flight[i].buf;
		}
	return NULL;
}

/* A clone sent down by the worker completed: drop its count, end the parent. */
static void dmr_clone_endio(struct bio *clone)
{
	struct dmr_clone *c = container_of(clone, struct dmr_clone, bio);
	struct bio *parent = clone->bi_private;

	if (clone->bi_status && !parent->bi_status)
		parent->bi_status = clone->bi_status;
	dmr_reader_put(c->rc, c->seg);
	bio_put(clone);
	bio_endio(parent);
}

/**
 * dmr_do_read() - a read the worker serves
 * @rc: target
 * @bio: the read
 *
 * Unmapped blocks read as zeroes, blocks of a segment in memory that are
 * not on the device yet are copied from its buffer, and runs on the
 * device go down as clones that
 * each hold a count on their segment (the worker owns the map, so the
 * count is taken before anything can free the segment).  Each piece past
 * the first counts in read_splits, as dmr_map_read()'s cuts do.
 */
void dmr_do_read(struct dmr_target *rc, struct bio *bio)
{
	u64 lba = dmr_read_lba(rc, bio);
	int r;

	r = dmr_map_need(rc, lba, bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT);
	if (r) {
		bio->bi_status = errno_to_blk_status(r);
		bio_endio(bio);
		return;
	}
	while (bio->bi_iter.bi_size) {
		u32 n = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT, run, seg = 0, off = 0;
		u32 on_disk = 0;
		u64 e, pba;
		struct dmr_clone *c;
		struct bio *clone;
		bool from_buf;
		u8 *buf;

		run = dmr_lookup_run(rc, lba, n, &e);
		pba = e - 1;
		if (e != DMR_UNMAPPED) {
			seg = dmr_pba_segment(&rc->map, pba);
			off = dmr_pba_offset(&rc->map, pba);
		}
		buf = e == DMR_UNMAPPED ? NULL : dmr_mem_segment(rc, seg, &on_disk);
		if (buf) {
			run = dmr_mem_run(off, run, on_disk, &from_buf);
			if (!from_buf)
				buf = NULL;
		}
		if (e == DMR_UNMAPPED) {
			dmr_copy_to_bio(bio, NULL, run << DMR_BLOCK_SHIFT);
		} else if (buf) {
			dmr_copy_to_bio(bio, buf + (size_t)off * DMR_BLOCK_SIZE,
					run << DMR_BLOCK_SHIFT);
		} else {
			clone = bio_alloc_clone(rc->dev->bdev, bio, GFP_NOIO, &rc->bs);
			c = container_of(clone, struct dmr_clone, bio);
			c->rc = rc;
			c->seg = seg;
			atomic_inc(&rc->readers[seg]);
			clone->bi_iter.bi_size = run << DMR_BLOCK_SHIFT;
			clone->bi_iter.bi_sector = rc->data_start +
				(sector_t)pba * DMR_SECTORS_PER_BLOCK;
			clone->bi_private = bio;
			clone->bi_end_io = dmr_clone_endio;
			bio_inc_remaining(bio);
			submit_bio_noacct(clone);
			bio_advance(bio, run << DMR_BLOCK_SHIFT);
		}
		lba += run;
		if (bio->bi_iter.bi_size)
			atomic64_inc(&rc->stats.read_splits);
	}
	bio_endio(bio);
}

/* Lookups a read retries when the map changes under it, then the worker. */
#define DMR_READ_RETRIES	4

/**
 * dmr_map_read() - the read fast path, from dmr_map()
 * @rc: target
 * @bio: a read
 *
 * A read whose first blocks are on the device, physically contiguous, is
 * remapped straight down (trimmed with dm_accept_partial_bio() to that
 * run; device-mapper resubmits the rest), holding a count on the segment
 * until dmr_end_io().  Anything else is for the worker: the caller
 * queues it.  A cut counts in read_splits (issue 41, goal 2: how
 * scattered the reads users make find their blocks); a read served
 * whole counts nothing, so the counter costs the contiguous reads
 * nothing.
 *
 * No lock is taken.  The entry of the first block names the segment; the
 * read takes its count on that segment, then (after a full barrier) looks
 * the run up again and goes on only if it starts at the same entry.  The
 * reuse rule frees a segment only after every entry left it, and
 * dmr_gc_free_ready() reads the counts after a full barrier, so either
 * the second lookup sees an entry that left (and the read retries) or GC
 * sees the count (and does not reuse the segment).  The second lookup's
 * run, all in that segment, is then stable while the count is held: its
 * blocks hold the data of those logical blocks, the current copy or one
 * overwritten by a write racing with this read.  DMR_SEG_MEM is read
 * after the entry: a head sets it, under @map_lock, before any entry
 * points into its segment, and the lock's release orders the two.
 *
 * Return: true if @bio was remapped (DM_MAPIO_REMAPPED), false if the
 * worker must serve it.
 */
bool dmr_map_read(struct dmr_target *rc, struct bio *bio)
{
	struct dmr_per_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	u32 n = bio_sectors(bio) >> 3, run, seg;
	u64 lba = dmr_read_lba(rc, bio), e, e2;
	unsigned int tries;

	/* a map page that leaves is freed after a grace period (dmr-page.c) */
	rcu_read_lock();
	for (tries = 0; tries < DMR_READ_RETRIES; tries++) {
		e = dmr_map_get(&rc->map, lba);
		/* a page out of memory (DMR_MAP_MISS): the worker reads it in */
		if (e == DMR_UNMAPPED || e == DMR_MAP_MISS)
			break;
		seg = dmr_pba_segment(&rc->map, e - 1);
		atomic_inc(&rc->readers[seg]);
		smp_mb__after_atomic();	/* pairs with dmr_gc_free_ready() */
		run = dmr_lookup_run(rc, lba, n, &e2);
		if (e2 == e) {
			if (!(READ_ONCE(rc->map.segs[seg].flags) & DMR_SEG_MEM))
				goto remap;
			tries = DMR_READ_RETRIES;	/* in memory: the worker */
		}
		dmr_reader_put(rc, seg);
	}
	rcu_read_unlock();
	return false;

remap:
	rcu_read_unlock();
	if (rc->pc.cap)		/* a hit: the page's second chance */
		dmr_page_clock_ref(&rc->pc, lba >> rc->map.page_shift);
	pb->seg = seg;
	if (run < n) {
		dm_accept_partial_bio(bio, run * DMR_SECTORS_PER_BLOCK);
		atomic64_inc(&rc->stats.read_splits);
	}
	bio_set_dev(bio, rc->dev->bdev);
	bio->bi_iter.bi_sector = rc->data_start +
		(sector_t)(e - 1) * DMR_SECTORS_PER_BLOCK;
	return true;
}
