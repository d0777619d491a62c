// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap garbage collection: the mechanism.  What to do, which victim
 * and when to throttle are decided by the pure policy (dmr-policy.c);
 * this file carries it out: it reads a victim, moves its valid blocks to
 * the GC head, flushes the log or writes checkpoints when the policy asks,
 * and frees (and discards) segments that the reuse rule allows.
 *
 * Locking: see dmr.h.  Everything here runs in the worker (freeing after
 * a checkpoint too: the worker's DMR_WORKER_GC_FREE).  Map changes are made
 * under @map_lock.  A victim is read asynchronously and user writes are
 * served while the read is in flight, so a block may be overwritten or
 * discarded between the read and its move: the move rule
 * (dmr_move_commit(): the map still points at the copy read) decides at
 * commit, and replay applies it again.  The moves themselves run in the
 * worker, one victim at a time.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/wait.h>

#include "dmr.h"

/*
 * Count prefree segments by what they wait for (dmr_seg_reuse_wait()): a
 * checkpoint, a flush, or (ready otherwise) reads in flight.  The map
 * keeps them on a list each (struct dmr_map), with its count.
 */
void dmr_gc_prefree_waiting(struct dmr_target *rc, struct dmr_gc_state *st)
{
	st->nr_prefree_ckpt = rc->map.nr_wait[DMR_REUSE_CKPT];
	st->nr_prefree_flush = rc->map.nr_wait[DMR_REUSE_FLUSH];
	st->nr_prefree_readers = rc->map.nr_wait[DMR_REUSE_READY];
}

/**
 * dmr_gc_free_ready() - free every segment the reuse rule allows
 * @rc: target, in the worker
 *
 * Looks only at the prefree segments that wait for nothing but their
 * reads in flight (the map's ready list): a segment leaves it only here,
 * in the worker, so it can be walked without @map_lock, which is taken
 * for each segment freed.  Those with reads in flight stay on it.
 *
 * Each is discarded on the device below first when that is enabled (the
 * no_discard_passdown option is not given and the device supports
 * discard), so an SSD's own FTL knows the space is free.  A failed
 * discard only costs that: the segment is free anyway.
 *
 * The counts of reads in flight are read after a full barrier: it pairs
 * with the one in dmr_map_read(), between taking a count and looking the
 * entry up again, so a read that looked up an entry of a prefree segment
 * either sees that the entry left, or is seen here.
 */
void dmr_gc_free_ready(struct dmr_target *rc)
{
	u32 seg_blocks = dmr_seg_blocks(rc), n, i, next;

	n = rc->map.nr_wait[DMR_REUSE_READY];
	if (!n)
		return;
	smp_mb();	/* entries moved out, then counts: see dmr_map_read() */
	for (i = dmr_seg_ready_first(&rc->map); n; n--, i = next) {
		next = dmr_seg_next(&rc->map, i);
		if (!dmr_seg_reusable(&rc->map.segs[i], rc->map.ckpt_seq,
				      rc->map.flush_seq, atomic_read(&rc->readers[i])))
			continue;
		if (rc->discard_free &&
		    blkdev_issue_discard(rc->dev->bdev,
					 dmr_seg_block(rc, i, 0) * DMR_SECTORS_PER_BLOCK,
					 (sector_t)seg_blocks * DMR_SECTORS_PER_BLOCK,
					 GFP_NOIO))
			DMWARN_LIMIT("%s: discard of freed segment %u failed",
				     rc->dev->name, i);
		spin_lock(&rc->map_lock);
		dmr_seg_make_free(&rc->map, i);
		spin_unlock(&rc->map_lock);
		atomic64_inc(&rc->stats.segs_freed);
	}
}

/*
 * Module parameter: GC folds the CRCs its check of a victim computed into
 * the checksums of the units it moves blocks to (dmr_data_csum_fold()),
 * rather than the second stage reading every moved block again.  0 reads
 * them again, as before; for side-by-side runs.  Read when a relocation
 * unit takes its first block.
 */
static bool dmr_gc_crc_carry = true;
module_param_named(gc_crc_carry, dmr_gc_crc_carry, bool, 0644);
MODULE_PARM_DESC(gc_crc_carry,
		 "GC folds the checked blocks' CRCs into their new units' checksums (default 1)");

/*
 * Move one valid block of the victim to GC head @hid; @crc is its
 * dmr_block_digest(), from the victim's check.
 */
static int dmr_gc_move(struct dmr_target *rc, unsigned int hid, u64 lba,
		       u64 src, const u8 *data, u32 crc)
{
	struct dmr_head *h = &rc->heads[hid];
	u64 dst;
	bool moved;
	u32 n;
	int r;

	r = dmr_head_room(rc, hid, 1, &n);
	if (r)
		return r;
	memcpy((u8 *)h->buf + (size_t)h->wp * DMR_BLOCK_SIZE, data, DMR_BLOCK_SIZE);
	dst = dmr_seg_pba(&rc->map, h->pos.segment, h->wp);
	spin_lock(&rc->map_lock);
	moved = dmr_move_commit(&rc->map, lba, src, dst);
	spin_unlock(&rc->map_lock);
	if (!moved)
		return 0;	/* overwritten or discarded meanwhile: it wins */
	if (!h->unit->nr_blocks)
		h->unit->crc_known = READ_ONCE(dmr_gc_crc_carry);
	h->unit->crc[h->unit->nr_blocks] = crc;
	h->unit->lba[h->unit->nr_blocks] = lba;
	h->unit->src[h->unit->nr_blocks++] = src;
	h->wp++;
	rc->total_moved++;
	atomic64_inc(&rc->stats.gc_moved);
	return 0;
}

/* The victim's read, and its check, are over: hand it to the worker. */
static void dmr_gc_read_over(struct dmr_target *rc)
{
	/* error and @gc_ok, then ended; the worker reads them in the other order */
	smp_store_release(&rc->gc_rd_ended, true);
	queue_work(rc->wq, &rc->work);
	/*
	 * Last: this end is over.  complete_all(), which no wait consumes:
	 * the worker may collect as soon as it sees @gc_rd_ended, before this
	 * runs, so the next read's submission waits for it before it re-arms
	 * @gc_rd_done, and dmr_gc_read_drop() before @rc may be freed.
	 */
	complete_all(&rc->gc_rd_done);
}

/**
 * dmr_gc_verify_fn() - check a victim's data beside the worker
 * @work: @rc->gc_verify, queued by dmr_gc_read_end() on @gc_verify_wq
 *
 * dmr_seg_verify() marks in @gc_ok the units dmr_gc_collect() may move.
 * The victim is not reused meanwhile: its read holds a reference in
 * @readers until it is collected.  The worker does not look at @gc_buf
 * or @gc_ok before @gc_rd_ended, which dmr_gc_read_over() sets after
 * this, with release semantics; @gc_rd_done completes last, so
 * dmr_gc_read_drop() and the next read's submission wait for this too.
 */
static void dmr_gc_verify_fn(struct work_struct *work)
{
	struct dmr_target *rc = container_of(work, struct dmr_target, gc_verify);
	u32 seg = rc->gc_rd_seg, seg_blocks = dmr_seg_blocks(rc);
	const struct dmr_seg *s = &rc->map.segs[seg];

	/*
	 * A large segment (no summary): all its blocks against the checksum
	 * its entry keeps, @gc_ok[0] the answer.  Neither changes while the
	 * read holds the victim (the segment is not reused meanwhile).
	 */
	if (READ_ONCE(s->flags) & DMR_SEG_LARGE)
		rc->gc_ok[0] = dmr_blocks_check(rc->gc_buf, seg_blocks, s->csum, rc->gc_crc);
	else
		dmr_seg_verify(rc->gc_buf, dmr_seg_block(rc, seg, 0),
			       dmr_seg_pba(&rc->map, seg, 0), seg_blocks, s->seq,
			       rc->sb.uuid, &rc->map, rc->gc_vunit, rc->gc_ok, rc->gc_crc);
	dmr_gc_read_over(rc);
}

/* The constructor: no victim read, and none whose end is running. */
void dmr_gc_init(struct dmr_target *rc)
{
	rc->gc_rd_seg = DMR_NO_SEGMENT;
	INIT_WORK(&rc->gc_verify, dmr_gc_verify_fn);
	init_completion(&rc->gc_rd_done);
	complete_all(&rc->gc_rd_done);	/* no read's end is running */
}

/* The victim's read ended (dm-io's completion, any context). */
static void dmr_gc_read_end(unsigned long error, void *context)
{
	struct dmr_target *rc = context;

	rc->gc_rd_error = error;
	if (!error)	/* the check, then the worker */
		queue_work(rc->gc_verify_wq, &rc->gc_verify);
	else
		dmr_gc_read_over(rc);
}

/**
 * dmr_gc_read_submit() - start reading a victim into GC's buffer
 * @rc: target, in the worker, no victim read pending
 * @seg: the victim (dmr_gc_victim())
 *
 * Reads the whole segment at once (a victim is mostly valid in steady
 * state, so reading around the dead blocks costs little and one large
 * read is cheap on the devices this is for), asynchronously: the worker
 * serves requests while it is in flight (dmr_gc_read_step()).  The read
 * takes a reference in @readers, as a user's read does, so the segment is
 * not reused (dmr_seg_reusable()) until it is collected or dropped: what
 * the buffer holds of every block the map still points at then is what
 * the device holds, since a sealed segment is written again only after it
 * was freed.
 */
static void dmr_gc_read_submit(struct dmr_target *rc, u32 seg)
{
	struct dm_io_region region = {
		.bdev = rc->dev->bdev,
		.sector = dmr_seg_block(rc, seg, 0) * DMR_SECTORS_PER_BLOCK,
		.count = (sector_t)dmr_seg_blocks(rc) * DMR_SECTORS_PER_BLOCK,
	};
	struct dm_io_request req = {
		.bi_opf = REQ_OP_READ,
		.mem.type = DM_IO_VMA,
		.mem.ptr.vma = rc->gc_buf,
		.notify.fn = dmr_gc_read_end,
		.notify.context = rc,
		.client = rc->io_client,
	};
	struct blk_plug plug;
	int r;

	/* the previous read's end may still be running: let it finish */
	wait_for_completion(&rc->gc_rd_done);
	reinit_completion(&rc->gc_rd_done);
	atomic_inc(&rc->readers[seg]);
	rc->gc_rd_seg = seg;
	rc->gc_rd_error = 0;
	WRITE_ONCE(rc->gc_rd_ended, false);
	blk_start_plug(&plug);
	r = dmr_dm_io(&req, &region, NULL);
	blk_finish_plug(&plug);
	if (r)	/* not submitted: end it here, collecting reports it */
		dmr_gc_read_end(~0UL, rc);
}

/**
 * dmr_gc_read_drop() - wait for a pending victim read and forget it
 * @rc: target; the worker is stopped, or stopping (GC starts no read then)
 *
 * The victim is not collected; GC chooses again after resume.
 */
void dmr_gc_read_drop(struct dmr_target *rc)
{
	/* even if collected: its end may still be running */
	wait_for_completion(&rc->gc_rd_done);
	if (rc->gc_rd_seg == DMR_NO_SEGMENT)
		return;
	dmr_reader_put(rc, rc->gc_rd_seg);
	rc->gc_rd_seg = DMR_NO_SEGMENT;
}

/*
 * Issue 41: GC reads the map pages its victim's tests need ahead of them,
 * together (dmr_gc_lbas(), dmr_map_prefetch()), and stops testing at the
 * victim's last valid block; N tests each block to the victim's end, each
 * with its own synchronous read of a page out, as before, for the
 * benchmark's side by side (guest-mapcache.py's gc phase).  Read at each
 * victim.
 */
static bool dmr_gc_prefetch = true;
module_param_named(gc_prefetch, dmr_gc_prefetch, bool, 0644);
MODULE_PARM_DESC(gc_prefetch,
		 "GC reads the map pages of a victim's blocks ahead, together (map_cache)");

/*
 * The unit at block @off of victim @seg, read into GC's buffer: decoded
 * into @u, or false where the walk ends (no valid summary, one of an
 * earlier use of the segment, from before @first_seq, or one that would
 * run past the segment's end).
 */
static bool dmr_gc_unit(struct dmr_target *rc, u32 seg, u32 off, u64 first_seq,
			struct dmr_unit *u)
{
	u32 seg_blocks = dmr_seg_blocks(rc);

	return off + 2 <= seg_blocks &&
	       dmr_unit_decode((u8 *)rc->gc_buf + (size_t)off * DMR_BLOCK_SIZE,
			       dmr_seg_block(rc, seg, off), rc->sb.uuid,
			       rc->sb.geo.logical_blocks, u) == DMR_LOG_OK &&
	       u->seq >= first_seq && off + 1 + u->nr_blocks <= seg_blocks;
}

/*
 * The logical blocks victim @seg's summaries list, in the order
 * dmr_gc_collect() walks them, into @gc_lbas (at most a segment's
 * blocks), for the read-ahead of their map pages.  Returns their number.
 */
static u32 dmr_gc_lbas(struct dmr_target *rc, u32 seg, u64 first_seq)
{
	const struct dmr_seg *s = &rc->map.segs[seg];
	struct dmr_unit *u = rc->gc_unit;
	u32 off = 0, n = 0, i;

	if (s->flags & DMR_SEG_LARGE) {	/* its blocks in order, from its base */
		for (n = 0; n < dmr_seg_blocks(rc); n++)
			rc->gc_lbas[n] = s->base - 1 + n;
		return n;
	}
	while (dmr_gc_unit(rc, seg, off, first_seq, u)) {
		for (i = 0; i < u->nr_blocks; i++)
			rc->gc_lbas[n++] = u->lba[i];
		off += 1 + u->nr_blocks;
	}
	return n;
}

/*
 * dmr_gc_collect() of a large segment (format 5): block i holds logical
 * block @base - 1 + i, checked whole against the segment's checksum by
 * dmr_gc_verify_fn() (@gc_ok[0]); its live blocks move as a unit's do.
 * @nr: the read-ahead of their map pages (dmr_gc_lbas(); 0: none).  A
 * live block in a segment that fails its checksum is not moved
 * (*@unverified: the segment is refused, never collected again).
 */
static int dmr_gc_collect_large(struct dmr_target *rc, u32 seg, unsigned int hid,
				u32 nr, bool *unverified)
{
	u64 lba = rc->map.segs[seg].base - 1, src;
	u32 seg_blocks = dmr_seg_blocks(rc), i, ahead = 0;
	int r;

	for (i = 0; i < seg_blocks && rc->map.segs[seg].valid; i++) {
		if (i == ahead && ahead < nr)
			ahead += dmr_map_prefetch(rc, rc->gc_lbas + ahead, nr - ahead);
		r = dmr_map_need(rc, lba + i, 1);	/* map_cache */
		if (r)
			return r;
		src = dmr_seg_pba(&rc->map, seg, i);
		if (dmr_map_get(&rc->map, lba + i) != src + 1)
			continue;	/* not valid any more */
		if (!rc->gc_ok[0])
			break;
		r = dmr_gc_move(rc, hid, lba + i, src,
				(u8 *)rc->gc_buf + (size_t)i * DMR_BLOCK_SIZE, rc->gc_crc[i]);
		if (r)
			return r;
	}
	if (i < seg_blocks && rc->map.segs[seg].valid && !rc->gc_ok[0]) {
		atomic64_inc(&rc->stats.gc_unverified);
		DMERR_LIMIT("%s: GC: large segment at %llu (segment %u) fails its data checksum",
			    rc->dev->name, (unsigned long long)dmr_seg_block(rc, seg, 0), seg);
		*unverified = true;
	}
	return 0;
}

/**
 * dmr_gc_collect() - collect the victim whose read completed
 * @rc: target, in the worker
 *
 * Walks the victim's units from the first summary, and moves every block
 * the map still points at.  A unit numbered below the segment's first
 * unit belongs to an earlier use of the segment and ends the walk.  The
 * blocks go to the GC head dmr_gc_head() names (hot or cold victim).  The
 * segment is then empty, hence prefree.  The read's reference is dropped
 * last, so the segment is not reused before the map has left it.
 *
 * With a map_cache, the map pages of the blocks' tests are read ahead,
 * up to DMR_PREFETCH_PAGES at once, when the walk reaches the first block
 * the last read-ahead did not cover (@ahead).  The walk ends once the
 * valid blocks it found in the unit at hand are all the segment still
 * holds (its count, which only falls while it is a victim: no head
 * writes a sealed segment): the blocks after them are known dead, and
 * their tests would only read map pages back for nothing.  Both go with
 * the module parameter gc_prefetch.
 *
 * GC never launders corruption: a unit holding valid blocks is moved only
 * if its data matches the checksum its summary carries (checked by
 * dmr_gc_verify_fn() when the read ended: @gc_ok), since a move writes them again under a fresh
 * checksum and nothing could tell them damaged after that.  The blocks
 * of a unit that fails stay where they are (reads return what the device
 * holds, and `remapctl check` names them), the segment is never
 * collected while it holds them (DMR_SEG_NOGC), a kernel message names
 * it and status counts it (gc_unverified).  Likewise a segment whose
 * blocks no summary lists.  A victim that cannot be read is left for now
 * (DMR_SEG_GCERR, counted in gc_read_errors) and becomes a candidate
 * again after the next checkpoint (dmr_gc_retry()): a read error may be
 * passing, and the space must not leak for good.
 *
 * Return: 0 or a negative errno from the log writer.
 */
static int dmr_gc_collect(struct dmr_target *rc)
{
	u32 seg = rc->gc_rd_seg, off = 0, i, live, tested, base = 0, ahead = 0, nr = 0;
	bool fast = READ_ONCE(dmr_gc_prefetch);
	u64 first_seq = rc->map.segs[seg].seq;
	unsigned int hid = dmr_gc_head(&rc->map, &rc->map.segs[seg], rc->seq,
				       &rc->temp);
	struct dmr_unit *u = rc->gc_unit;
	u32 refuse = DMR_SEG_NOGC;
	u8 *buf = rc->gc_buf;
	bool unverified = false;
	int r = 0;

	if (rc->gc_rd_error) {
		atomic64_inc(&rc->stats.gc_read_errors);
		DMERR_LIMIT("%s: GC cannot read segment %u; retried after a checkpoint",
			    rc->dev->name, seg);
		refuse = DMR_SEG_GCERR;
		rc->gc_retry = true;
		goto bad;
	}
	/*
	 * Rule 7: GC writes the log too; the worker marked the clean
	 * checkpoint not clean before this step (a victim read was
	 * pending: DMR_WORKER_MARK_DIRTY).
	 */
	if (WARN_ON_ONCE(rc->ckpt_clean_on_disk)) {
		r = -EIO;
		goto out;
	}
	if (fast && rc->pc.cap)
		nr = dmr_gc_lbas(rc, seg, first_seq);
	if (rc->map.segs[seg].flags & DMR_SEG_LARGE) {
		r = dmr_gc_collect_large(rc, seg, hid, nr, &unverified);
		if (r)
			goto out;
		goto collected;
	}
	while (dmr_gc_unit(rc, seg, off, first_seq, u)) {
		u64 blk = dmr_seg_block(rc, seg, off);
		u8 *data = buf + (size_t)(off + 1) * DMR_BLOCK_SIZE;

		for (i = 0, live = 0; i < u->nr_blocks; i++) {
			if (fast && live == rc->map.segs[seg].valid)
				break;		/* the rest is dead */
			if (base + i == ahead && ahead < nr)	/* (the same walk) */
				ahead += dmr_map_prefetch(rc, rc->gc_lbas + ahead, nr - ahead);
			r = dmr_map_need(rc, u->lba[i], 1);	/* map_cache */
			if (r)
				goto out;
			live += dmr_map_get(&rc->map, u->lba[i]) ==
				dmr_seg_pba(&rc->map, seg, off + 1 + i) + 1;
		}
		tested = i;
		if (live && !rc->gc_ok[off]) {	/* dmr_gc_verify_fn() */
			atomic64_inc(&rc->stats.gc_unverified);
			DMERR_LIMIT("%s: GC: unit at %llu (segment %u) fails its data checksum",
				    rc->dev->name, (unsigned long long)blk, seg);
			unverified = true;
			live = 0;
		}
		for (i = 0; live && i < tested; i++) {
			u64 src = dmr_seg_pba(&rc->map, seg, off + 1 + i);

			if (dmr_map_get(&rc->map, u->lba[i]) != src + 1)
				continue;	/* not valid any more */
			r = dmr_gc_move(rc, hid, u->lba[i], src,
					data + (size_t)i * DMR_BLOCK_SIZE,
					rc->gc_crc[off + 1 + i]);
			if (r)
				goto out;
		}
		if (tested < u->nr_blocks)
			break;
		off += 1 + u->nr_blocks;
		base += u->nr_blocks;
	}
collected:
	atomic64_inc(&rc->stats.gc_runs);
	if (!rc->map.segs[seg].valid)
		goto out;
	if (!unverified)
		DMERR_LIMIT("%s: GC left %u blocks in segment %u that no summary lists",
			    rc->dev->name, rc->map.segs[seg].valid, seg);
bad:
	spin_lock(&rc->map_lock);
	dmr_seg_gc_refuse(&rc->map, seg, refuse);
	spin_unlock(&rc->map_lock);
out:
	rc->gc_rd_seg = DMR_NO_SEGMENT;
	dmr_reader_put(rc, seg);
	return r;
}

/**
 * dmr_gc_retry() - victims GC could not read are candidates again
 * @rc: target, in the worker; after a checkpoint (DMR_WORKER_GC_FREE)
 */
void dmr_gc_retry(struct dmr_target *rc)
{
	if (!rc->gc_retry)
		return;
	spin_lock(&rc->map_lock);
	dmr_seg_gc_retry_all(&rc->map);
	spin_unlock(&rc->map_lock);
	rc->gc_retry = false;
}

/*
 * The condition GC's wait for reads in flight ends on: a prefree segment
 * that only waited for its reads (DMR_GC_WAIT_READERS) is reusable now.
 * Such segments stay prefree until dmr_gc_free_ready() runs, so counting
 * the prefree segments that wait for readers would stay true until the
 * timeout; dmr_reader_put()'s wake-up finds them here.  Only the map's
 * ready list is looked at: the worker waits here, and only the worker
 * changes it.  The barrier pairs with dmr_map_read()'s, as in
 * dmr_gc_free_ready().
 */
static u32 dmr_readers_of(const void *ctx, u32 seg)
{
	const struct dmr_target *rc = ctx;

	return atomic_read(&rc->readers[seg]);
}

static bool dmr_gc_readers_gone(struct dmr_target *rc)
{
	smp_mb();	/* entries moved out, then counts: see dmr_map_read() */
	return dmr_map_ready_reusable(&rc->map, dmr_readers_of, rc);
}

/*
 * Whether moving @victim takes no more segments than are free: the GC
 * head dmr_gc_collect() would move it to, where that head writes next
 * (the summary slot of its next unit when none is open; no segment when
 * its current one is done), and whether it has reserved its next one.
 */
static bool dmr_gc_victim_fits(struct dmr_target *rc, u32 victim)
{
	const struct dmr_seg *s = &rc->map.segs[victim];
	const struct dmr_head *h = &rc->heads[dmr_gc_head(&rc->map, s, rc->seq,
							  &rc->temp)];
	u32 seg_blocks = dmr_seg_blocks(rc);
	u32 next_free = dmr_head_next_free(h->pos.segment, h->pos.offset, h->unit_open,
					   h->wp, seg_blocks);

	return dmr_gc_segments_needed(s->valid, rc->map.wide, next_free,
				      h->pos.next_segment != DMR_NO_SEGMENT,
				      seg_blocks) <= rc->map.nr_free;
}

/**
 * dmr_gc_run() - one GC action, as the policy decides
 * @rc: target, in the worker
 * @urgent: a user write waits for a segment (greedy victims, no idling)
 *
 * A checkpoint the policy asks for (DMR_GC_CHECKPOINT: segments that
 * wait for one) is returned to the worker, which writes it and then
 * frees what it made reusable (DMR_WORKER_GC_FREE): GC does not call
 * up into the checkpoint.
 *
 * Return: DMR_GC_NOTHING, DMR_GC_RAN after an action, DMR_GC_WANTS_CKPT,
 * or a negative errno (-ENOSPC when nothing can free space, which the
 * format's reserved segments and the watermark checks rule out).
 */
int dmr_gc_run(struct dmr_target *rc, bool urgent)
{
	struct dmr_gc_state st = { .user_waits = urgent };
	struct dmr_gc_params p;
	u32 victim;
	bool ended;
	int r;

	BUILD_BUG_ON(DMR_GC_RAN != 0 || DMR_GC_NOTHING != 1);
	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return -EIO;
	/* acquire: pairs with dmr_gc_read_end(), @gc_rd_error is then set */
	ended = smp_load_acquire(&rc->gc_rd_ended);
	switch (dmr_gc_read_step(rc->gc_rd_seg != DMR_NO_SEGMENT, ended, urgent)) {
	case DMR_GC_READ_WAIT:
		wait_for_completion(&rc->gc_rd_done);
		fallthrough;
	case DMR_GC_READ_COLLECT:
		return dmr_gc_collect(rc);
	case DMR_GC_READ_LATER:
		return DMR_GC_NOTHING;	/* its end queues the worker */
	default:
		break;
	}
	spin_lock(&rc->map_lock);
	p = rc->gc;
	spin_unlock(&rc->map_lock);
	rc->gc_active = dmr_gc_active(&p, rc->gc_active, rc->map.nr_free,
				      rc->map.nr_prefree);
	/* the common case, after every request: nothing to do, no scan */
	if (!urgent && !rc->gc_active)
		return DMR_GC_NOTHING;
	dmr_gc_free_ready(rc);
	st.nr_free = rc->map.nr_free;
	dmr_gc_prefree_waiting(rc, &st);
	st.active = rc->gc_active;
	victim = dmr_gc_victim(&rc->map, urgent, rc->seq);
	st.victim = victim != DMR_NO_SEGMENT;
	if (st.victim)
		st.victim_fits = dmr_gc_victim_fits(rc, victim);

	switch (dmr_gc_decide(&p, &st)) {
	case DMR_GC_COLLECT:
		dmr_gc_read_submit(rc, victim);
		if (urgent) {	/* a user waits: no point in returning */
			wait_for_completion(&rc->gc_rd_done);
			return dmr_gc_collect(rc);
		}
		return DMR_GC_RAN;
	case DMR_GC_CHECKPOINT:
		return DMR_GC_WANTS_CKPT;
	case DMR_GC_FLUSH:
		r = dmr_flush_all(rc, true);
		if (!r)
			dmr_gc_free_ready(rc);
		return r;
	case DMR_GC_WAIT_READERS:
		wait_event_timeout(rc->readers_wq, dmr_gc_readers_gone(rc), HZ / 10);
		return DMR_GC_RAN;
	case DMR_GC_STUCK:
		DMERR_LIMIT("%s: no space can be freed (%u free, %u prefree segments)",
			    rc->dev->name, rc->map.nr_free, rc->map.nr_prefree);
		return -ENOSPC;
	default:
		return DMR_GC_NOTHING;
	}
}

/**
 * dmr_gc_collect_now() - the gc_collect message: collect one victim now
 * @rc: target, in the worker
 *
 * Whatever the watermarks: a victim read in flight is waited for and
 * collected; otherwise the victim background GC would choose
 * (cost-benefit) is read and collected.  What it frees becomes free by
 * the reuse rule, as any collection's.
 *
 * Return: 0, -ENODATA if no segment is collectable, or a negative errno.
 */
int dmr_gc_collect_now(struct dmr_target *rc)
{
	u32 victim;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return -EROFS;
	if (rc->gc_rd_seg == DMR_NO_SEGMENT) {
		victim = dmr_gc_victim(&rc->map, false, rc->seq);
		if (victim == DMR_NO_SEGMENT)
			return -ENODATA;
		dmr_gc_read_submit(rc, victim);
	}
	wait_for_completion(&rc->gc_rd_done);
	return dmr_gc_collect(rc);
}

/*
 * Whether a background step would find nothing to do: no victim read
 * pending and the watermarks do not start GC (dmr_gc_active()).
 */
bool dmr_gc_idle(struct dmr_target *rc)
{
	struct dmr_gc_params p;

	if (rc->gc_rd_seg != DMR_NO_SEGMENT)
		return false;
	spin_lock(&rc->map_lock);
	p = rc->gc;
	spin_unlock(&rc->map_lock);
	return !dmr_gc_active(&p, rc->gc_active, rc->map.nr_free, rc->map.nr_prefree);
}

/**
 * dmr_gc_background() - one step of background GC, if it has work
 * @rc: target, in the worker
 *
 * Not while suspended or stopping (postsuspend waits for the worker), and
 * never when the target cannot write.
 *
 * Return: dmr_gc_run()'s, or DMR_GC_NOTHING.
 */
int dmr_gc_background(struct dmr_target *rc)
{
	int r;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE || READ_ONCE(rc->stopping) ||
	    READ_ONCE(rc->suspended) || !rc->active)
		return DMR_GC_NOTHING;
	r = dmr_gc_run(rc, false);
	WRITE_ONCE(rc->gc_mode, rc->gc_active ? DMR_GC_MODE_BACKGROUND :
		   DMR_GC_MODE_IDLE);
	return r;
}
