// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap I/O: the log writer, reads served from memory, checkpoints and
 * loading (checkpoint + roll-forward replay).
 *
 * Locking: see dmr.h.  Everything here that changes state runs in the
 * worker (one work item) or, with the worker stopped, in the
 * constructor, destructor and postsuspend.  @map_lock is taken around map
 * changes because dmr_map_read() looks the map up from the submission path.
 *
 * Crash model and ordering rules (Documentation/dm-remap-design.rst):
 *
 *  1. A write is complete once copied into the open segment in memory
 *     (a volatile write cache, as advertised).  A REQ_PREFLUSH or REQ_FUA
 *     request completes only after every unit holding an earlier write
 *     was written, the last with REQ_PREFLUSH | REQ_FUA: everything
 *     acknowledged before the flush is then on stable media.
 *  2. Units are self-checking (summary checksum, data checksum, sequence
 *     number), so replay stops at the first torn or missing one.
 *  3. The first write to a segment carries REQ_PREFLUSH, so no unit of a
 *     segment can reach the media before every unit of the segments
 *     before it: after a crash at most the segment replay stops in and the
 *     one it would go on to can hold stale units beyond the end of the log.
 *     A segment is written whole (all its units, however many) once it is
 *     done, by the second stage (dmr_flight_fn()), while the next one
 *     fills; only a flush writes part of a segment.  dmr_seal() waits for
 *     the second stage before writing or flushing anything else, which
 *     keeps rules 1 and 3.
 *  4. After a crash both of those are burnt (never written again) and a
 *     checkpoint is written before any new write, so new units start on a
 *     fresh segment and a stale unit can never be mistaken for a new one.
 *  5. A checkpoint first seals the open unit and flushes the device (the
 *     log it covers is durable), writes the map blocks changed since that
 *     slot was last written, the CRC table and the segment table, then its
 *     header with REQ_PREFLUSH | REQ_FUA.  A torn slot fails its checksums
 *     and the other slot, with a longer replay, is used.  A slot that
 *     cannot be read refuses the load (dmr_ckpt_order()).
 *  6. Segments are only ever taken from those never written since format,
 *     so nothing a checkpoint or a reachable unit points to is overwritten.
 *  7. A clean checkpoint is the last write of its instance.  Before an
 *     instance accepts its first write after loading (or writing) a clean
 *     checkpoint, it rewrites that header without the clean flag
 *     (dmr_mark_dirty()).  So a clean checkpoint that is the newest one
 *     has nothing after it, and a load that finds one skips recovery only
 *     when replay finds nothing either (dmr_load_needs_recovery()); any
 *     other load burns as in rule 4.  Without this, a unit lost in front
 *     of a surviving one would leave the survivor where the new log, which
 *     reuses the same offsets and sequence numbers, could later replay it.
 *  8. Only an active instance writes: from its load (constructor, or
 *     preresume when another instance of the same device was live) to its
 *     postsuspend, which writes a clean checkpoint.  A table reload
 *     therefore hands the device over: the old instance's postsuspend
 *     writes its last checkpoint before the new one's preresume loads it,
 *     and the old destructor writes nothing.  A read-only table never
 *     writes; it replays in memory only.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/ioprio.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dmr.h"

static u32 dmr_seg_blocks(const struct dmr_target *rc)
{
	return rc->sb.geo.segment_blocks;
}

/* Device block of block @offset of segment @seg. */
static u64 dmr_seg_block(const struct dmr_target *rc, u32 seg, u32 offset)
{
	return rc->sb.geo.data_offset + (u64)seg * dmr_seg_blocks(rc) + offset;
}

/* Synchronous block I/O on the device through dm-io. */
static int dmr_rw(struct dmr_target *rc, blk_opf_t opf, u64 blocknr, u32 nr,
		  void *buf)
{
	struct dm_io_region region = {
		.bdev = rc->dev->bdev,
		.sector = blocknr * DMR_SECTORS_PER_BLOCK,
		.count = (sector_t)nr * DMR_SECTORS_PER_BLOCK,
	};
	struct dm_io_request req = {
		.bi_opf = opf,
		.mem.type = is_vmalloc_addr(buf) ? DM_IO_VMA : DM_IO_KMEM,
		.mem.ptr.addr = buf,
		.client = rc->io_client,
	};
	unsigned long error_bits = 0;

	return dmr_dm_io(&req, &region, &error_bits);
}

/* Enter failed mode, keeping the first error. */
static void dmr_fail(struct dmr_target *rc, int err, const char *what)
{
	if (!rc->first_error) {
		rc->first_error = err;
		DMERR("%s: %s failed (%d): switching to read-only (failed) mode",
		      dm_device_name(dm_table_get_md(rc->ti->table)), what, err);
	}
	WRITE_ONCE(rc->mode, DMR_MODE_FAILED);
}

/* Make @pos.segment the open segment (under map_lock). */
static void dmr_open_segment(struct dmr_target *rc)
{
	struct dmr_seg *s;

	rc->open_segment = rc->pos.segment;
	rc->seg_fresh = true;
	rc->seg_written = 0;
	if (rc->pos.segment == DMR_NO_SEGMENT)
		return;
	s = &rc->map.segs[rc->pos.segment];
	s->flags |= DMR_SEG_USED;
	s->seq = rc->pos.seq + 1;
	rc->pos.next_segment = dmr_seg_alloc(&rc->map, &rc->alloc_cursor,
					     rc->pos.segment, DMR_NO_SEGMENT);
}

/*
 * Add the checksums to the units in blocks [@from, @from + @nr) of segment
 * buffer @buf and write them to @blocknr.
 */
static int dmr_write_units(struct dmr_target *rc, u8 *buf, u32 from, u32 nr,
			   u64 blocknr, blk_opf_t opf)
{
	u32 piece = dmr_write_piece(rc->sb.stripe_blocks), end = from + nr;
	int r;

	if (WARN_ON_ONCE(!dmr_units_finish(buf, from, end)))
		return -EIO;
	/*
	 * Pieces that end on stripe boundaries of the segment: dm-io would
	 * cut its bios wherever the buffer's pages stop being contiguous.
	 * Only the first carries REQ_PREFLUSH (rule 3); each carries the
	 * FUA of a flush, so all of them are durable when it completes.
	 */
	while (from < end) {
		u32 n = dmr_piece_len(from, end, piece);

		r = dmr_rw(rc, opf, blocknr, n, buf + (size_t)from * DMR_BLOCK_SIZE);
		if (r)
			return r;
		opf &= ~REQ_PREFLUSH;
		from += n;
		blocknr += n;
	}
	return 0;
}

/*
 * The writer's second stage: checksums and writes the units of a segment
 * that is done, on another CPU, while the worker goes on filling the next
 * segment in the other buffer.  Owns @flight_buf until it completes
 * @flight_done.
 */
static void dmr_flight_fn(struct work_struct *work)
{
	struct dmr_target *rc = container_of(work, struct dmr_target, flight_work);

	rc->flight_error = dmr_write_units(rc, rc->flight_buf, rc->flight_off,
					   rc->flight_nr, rc->flight_blocknr,
					   rc->flight_opf);
	complete(&rc->flight_done);
}

/**
 * dmr_flight_wait() - wait until the segment in flight is on the device
 * @rc: target; called by the worker, or with the worker stopped
 *
 * Its blocks are then read from the device again, and its buffer is free
 * for the next segment.  If the write failed, the target goes to failed
 * mode, which never seals again, and the segment's blocks go on being
 * read from its buffer: the device does not hold them.
 *
 * Return: 0 or the write's error (the target is then in failed mode).
 */
static int dmr_flight_wait(struct dmr_target *rc)
{
	if (!rc->flight_pending)
		return 0;
	wait_for_completion_io(&rc->flight_done);
	rc->flight_pending = false;
	if (rc->flight_error) {
		dmr_fail(rc, rc->flight_error, "log write");
		return rc->flight_error;
	}
	spin_lock(&rc->map_lock);
	rc->flight_segment = DMR_NO_SEGMENT;
	spin_unlock(&rc->map_lock);
	return 0;
}

/*
 * Close the open unit: its summary is encoded in the segment buffer in
 * front of its data (the checksums are added when it is written) and the
 * log position moves past it.  The unit is then free for the next one.
 */
static void dmr_close_unit(struct dmr_target *rc)
{
	struct dmr_unit *u = rc->unit;
	u32 off = rc->pos.offset;

	u->seq = rc->pos.seq + 1;
	u->blocknr = dmr_seg_block(rc, rc->pos.segment, off);
	u->next_segment = rc->pos.next_segment;
	dmr_unit_encode_body(u, rc->sb.uuid,
			     (u8 *)rc->segbuf + (size_t)off * DMR_BLOCK_SIZE);
	rc->pos.seq = u->seq;
	rc->pos.offset = rc->wp;
	rc->unit_open = false;
}

/**
 * dmr_seal() - close the open unit and write what must be written
 * @rc: target
 * @flush: make it and everything before it durable (flush / FUA)
 *
 * dmr_seal_action() decides: a closed unit waits in the buffer until its
 * segment is done (then the whole segment is handed to the second stage
 * and the worker goes on in the next one at once), or until a flush,
 * which writes every closed unit of the segment synchronously.  Every
 * seal first waits for the second stage: rule 1 (a flush covers the
 * segment in flight, whose writes were acknowledged) and rule 3 (the next
 * segment's first write carries REQ_PREFLUSH, which orders it only behind
 * writes that have completed) both need it, and then at most one segment
 * is ever in flight.
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
static int dmr_seal(struct dmr_target *rc, bool flush)
{
	u32 seg = rc->pos.segment, from = rc->seg_written, nr;
	blk_opf_t opf = REQ_OP_WRITE | REQ_SYNC;
	enum dmr_seal_action act;
	bool done;
	int r;

	r = dmr_flight_wait(rc);
	if (r)
		return r;
	if (rc->unit_open && (rc->unit->nr_blocks || rc->unit->nr_discards))
		dmr_close_unit(rc);
	rc->unit_open = false;
	nr = rc->pos.offset - from;
	done = seg != DMR_NO_SEGMENT && dmr_seg_done(rc->pos.offset, dmr_seg_blocks(rc));
	act = dmr_seal_action(flush, nr, done);
	if (act == DMR_SEAL_NONE)
		return 0;
	if (act == DMR_SEAL_FLUSH) {
		r = blkdev_issue_flush(rc->dev->bdev);
		if (r)
			dmr_fail(rc, r, "device flush");
		return r;
	}

	if (flush)
		opf |= REQ_PREFLUSH | REQ_FUA;
	if (rc->seg_fresh)
		opf |= REQ_PREFLUSH;	/* rule 3 */
	if (act == DMR_SEAL_FLIGHT) {
		/* the segment is done: the next one fills the other buffer */
		swap(rc->segbuf, rc->flight_buf);
		rc->flight_off = from;
		rc->flight_nr = nr;
		rc->flight_blocknr = dmr_seg_block(rc, seg, from);
		rc->flight_opf = opf;
		reinit_completion(&rc->flight_done);
		rc->flight_pending = true;
		queue_work(rc->flight_wq, &rc->flight_work);
	} else {
		r = dmr_write_units(rc, rc->segbuf, from, nr,
				    dmr_seg_block(rc, seg, from), opf);
		if (r) {
			dmr_fail(rc, r, "log write");
			return r;
		}
		if (!done)
			atomic64_inc(&rc->stats.short_units);
	}
	rc->seg_fresh = false;
	rc->seg_written = rc->pos.offset;
	atomic64_add(nr, &rc->stats.device_blocks);
	if (!done)
		return 0;

	spin_lock(&rc->map_lock);
	/* with open_segment, so a read never sees it as on the device early */
	if (rc->flight_pending)
		rc->flight_segment = seg;
	rc->pos.segment = rc->pos.next_segment;
	rc->pos.offset = 0;
	rc->pos.next_segment = DMR_NO_SEGMENT;
	dmr_open_segment(rc);
	spin_unlock(&rc->map_lock);
	return 0;
}

/* Make sure an open unit has room for one more data block. */
static int dmr_room(struct dmr_target *rc)
{
	int r;

	if (dmr_unit_takes_block(rc->unit_open, rc->unit, rc->wp, dmr_seg_blocks(rc)))
		return 0;
	if (rc->unit_open) {
		r = dmr_seal(rc, false);
		if (r)
			return r;
	}
	if (rc->pos.segment == DMR_NO_SEGMENT)
		return -ENOSPC;
	dmr_unit_reset(rc->unit);
	rc->unit_open = true;
	rc->wp = rc->pos.offset + 1;
	return 0;
}

/**
 * dmr_mark_dirty() - rule 7: the clean checkpoint on the device stops being clean
 * @rc: target, in the worker, before it accepts a write or discard
 *
 * Rewrites the header of the last checkpoint loaded or written, which was
 * clean, without the clean flag, with REQ_FUA, and waits.  Same slot,
 * same sequence number: only the flag and the header checksum change.  A
 * torn rewrite fails its checksum and the load uses the other slot, whose
 * log chain reaches this one's position (nothing was written after it).
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
static int dmr_mark_dirty(struct dmr_target *rc)
{
	struct dmr_ckpt c = rc->last_ckpt;
	int r;

	c.flags &= ~DMR_CKPT_CLEAN;
	dmr_ckpt_encode(&c, rc->sb.uuid, rc->bounce);
	r = dmr_rw(rc, REQ_OP_WRITE | REQ_SYNC | REQ_FUA, c.blocknr, 1, rc->bounce);
	if (r) {
		dmr_fail(rc, r, "checkpoint write");
		return r;
	}
	rc->last_ckpt = c;
	rc->ckpt_clean_on_disk = false;
	return 0;
}

static u64 dmr_bio_lba(struct dmr_target *rc, struct bio *bio)
{
	return dm_target_offset(rc->ti, bio->bi_iter.bi_sector) >> 3;
}

/* Copy @bytes from the bio's current position to @dst, advancing the bio. */
static void dmr_copy_from_bio(struct bio *bio, u8 *dst, unsigned int bytes)
{
	struct bvec_iter iter, start = bio->bi_iter;
	struct bio_vec bv;

	start.bi_size = bytes;
	__bio_for_each_segment(bv, bio, iter, start) {
		memcpy_from_bvec(dst, &bv);
		dst += bv.bv_len;
	}
	bio_advance(bio, bytes);
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

static void dmr_do_write(struct dmr_target *rc, struct bio *bio)
{
	u32 seg_blocks = dmr_seg_blocks(rc);
	u64 lba = dmr_bio_lba(rc, bio);
	bool fua = bio->bi_opf & REQ_FUA;
	int r = 0;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE) {
		r = -EIO;
		goto out;
	}
	if (bio->bi_iter.bi_size && rc->ckpt_clean_on_disk) {
		r = dmr_mark_dirty(rc);		/* rule 7 */
		if (r)
			goto out;
	}
	if (bio->bi_opf & (REQ_PREFLUSH | REQ_FUA))
		atomic64_inc(&rc->stats.flushes);
	if (bio->bi_opf & REQ_PREFLUSH) {
		r = dmr_seal(rc, true);
		if (r)
			goto out;
	}
	while (bio->bi_iter.bi_size) {
		u32 n, i, pba;

		r = dmr_room(rc);
		if (r)
			goto out;
		n = dmr_write_chunk(rc->unit, rc->wp, seg_blocks,
				    bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT);
		dmr_copy_from_bio(bio, (u8 *)rc->segbuf +
				  (size_t)rc->wp * DMR_BLOCK_SIZE,
				  n << DMR_BLOCK_SHIFT);
		pba = rc->pos.segment * seg_blocks + rc->wp;
		spin_lock(&rc->map_lock);
		for (i = 0; i < n; i++) {
			dmr_map_set(&rc->map, lba + i, pba + i);
			rc->unit->lba[rc->unit->nr_blocks++] = lba + i;
		}
		spin_unlock(&rc->map_lock);
		rc->wp += n;
		lba += n;
		atomic64_add(n, &rc->stats.user_blocks);
	}
	if (dmr_seal_after_write(fua, rc->unit_open, rc->wp, seg_blocks))
		r = dmr_seal(rc, fua);
out:
	bio->bi_status = errno_to_blk_status(r);
	bio_endio(bio);
}

static void dmr_do_discard(struct dmr_target *rc, struct bio *bio)
{
	u64 lba = dmr_bio_lba(rc, bio), b;
	u64 nr = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT;
	int r = 0;

	atomic64_inc(&rc->stats.discards);
	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE) {
		r = -EIO;
		goto out;
	}
	if (nr && rc->ckpt_clean_on_disk) {
		r = dmr_mark_dirty(rc);		/* rule 7 */
		if (r)
			goto out;
	}
	while (nr) {
		u32 count = min_t(u64, nr, 1U << 30);
		struct dmr_unit *u;

		if (dmr_discard_needs_seal(rc->unit_open, rc->unit)) {
			r = dmr_seal(rc, false);
			if (r)
				goto out;
		}
		r = dmr_room(rc);
		if (r)
			goto out;
		/* the unit open now, after any seal: never one sealed before */
		u = rc->unit;
		u->discard[u->nr_discards][0] = lba;
		u->discard[u->nr_discards][1] = count;
		u->nr_discards++;
		spin_lock(&rc->map_lock);
		for (b = 0; b < count; b++)
			dmr_map_unmap(&rc->map, lba + b);
		spin_unlock(&rc->map_lock);
		lba += count;
		nr -= count;
	}
	bio_advance(bio, bio->bi_iter.bi_size);
out:
	bio->bi_status = errno_to_blk_status(r);
	bio_endio(bio);
}

/*
 * Look up the run starting at @lba (at most @max blocks), clamped to one
 * segment.  Caller holds map_lock or is the worker.
 */
static u32 dmr_lookup_run(struct dmr_target *rc, u64 lba, u32 max, u32 *entry)
{
	u32 seg_blocks = dmr_seg_blocks(rc);
	u32 run = dmr_map_run(&rc->map, lba, max, entry);

	if (*entry != DMR_UNMAPPED)
		run = min(run, seg_blocks - (*entry - 1) % seg_blocks);
	return run;
}

static void dmr_do_read(struct dmr_target *rc, struct bio *bio)
{
	u32 seg_blocks = dmr_seg_blocks(rc);
	u64 lba = dmr_bio_lba(rc, bio);

	while (bio->bi_iter.bi_size) {
		u32 n = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT, e, run, pba;
		struct bio *clone;

		run = dmr_lookup_run(rc, lba, n, &e);
		pba = e - 1;
		if (e == DMR_UNMAPPED) {
			dmr_copy_to_bio(bio, NULL, run << DMR_BLOCK_SHIFT);
		} else if (pba / seg_blocks == rc->open_segment ||
			   pba / seg_blocks == rc->flight_segment) {
			u8 *buf = pba / seg_blocks == rc->open_segment ?
				  rc->segbuf : rc->flight_buf;

			dmr_copy_to_bio(bio, buf + (size_t)(pba % seg_blocks) *
					DMR_BLOCK_SIZE, run << DMR_BLOCK_SHIFT);
		} else {
			clone = bio_alloc_clone(rc->dev->bdev, bio, GFP_NOIO, &rc->bs);
			clone->bi_iter.bi_size = run << DMR_BLOCK_SHIFT;
			clone->bi_iter.bi_sector = rc->data_start +
				(sector_t)pba * DMR_SECTORS_PER_BLOCK;
			bio_chain(clone, bio);
			submit_bio_noacct(clone);
			bio_advance(bio, run << DMR_BLOCK_SHIFT);
		}
		lba += run;
	}
	bio_endio(bio);
}

/**
 * dmr_map_read() - the read fast path, from dmr_map()
 * @rc: target
 * @bio: a read
 *
 * A read whose first blocks are on the device, physically contiguous, is
 * remapped straight down (trimmed with dm_accept_partial_bio() to that
 * run; device-mapper resubmits the rest).  Anything else goes to the
 * worker.
 *
 * Return: a DM_MAPIO_* code.
 */
int dmr_map_read(struct dmr_target *rc, struct bio *bio)
{
	u32 seg_blocks = dmr_seg_blocks(rc);
	u32 n = bio_sectors(bio) >> 3, e, run;
	bool on_device;

	spin_lock(&rc->map_lock);
	run = dmr_lookup_run(rc, dmr_bio_lba(rc, bio), n, &e);
	on_device = e != DMR_UNMAPPED && (e - 1) / seg_blocks != rc->open_segment &&
		    (e - 1) / seg_blocks != rc->flight_segment;
	spin_unlock(&rc->map_lock);

	if (!on_device) {
		dmr_queue_bio(rc, bio);
		return DM_MAPIO_SUBMITTED;
	}
	if (run < n)
		dm_accept_partial_bio(bio, run * DMR_SECTORS_PER_BLOCK);
	bio_set_dev(bio, rc->dev->bdev);
	bio->bi_iter.bi_sector = rc->data_start +
		(sector_t)(e - 1) * DMR_SECTORS_PER_BLOCK;
	return DM_MAPIO_REMAPPED;
}

void dmr_queue_bio(struct dmr_target *rc, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&rc->bio_lock, flags);
	bio_list_add(&rc->bios, bio);
	spin_unlock_irqrestore(&rc->bio_lock, flags);
	queue_work(rc->wq, &rc->work);
}

static void dmr_checkpoint_due(struct dmr_target *rc);

/*
 * The worker: every bio that changes state or needs the open segment, and
 * checkpoints.  One work item, so it never runs concurrently with itself;
 * it is queued on the submitting CPU (a plain, not ordered, workqueue)
 * which saves a cross-CPU wake-up per request.
 */
static void dmr_worker(struct work_struct *work)
{
	struct dmr_target *rc = container_of(work, struct dmr_target, work);
	unsigned long flags;
	struct bio *bio;

	for (;;) {
		if (READ_ONCE(rc->ckpt_due))
			dmr_checkpoint_due(rc);
		spin_lock_irqsave(&rc->bio_lock, flags);
		bio = bio_list_pop(&rc->bios);
		spin_unlock_irqrestore(&rc->bio_lock, flags);
		if (!bio)
			break;
		switch (bio_op(bio)) {
		case REQ_OP_READ:
			dmr_do_read(rc, bio);
			break;
		case REQ_OP_WRITE:
			dmr_do_write(rc, bio);
			break;
		case REQ_OP_DISCARD:
		case REQ_OP_WRITE_ZEROES:
			dmr_do_discard(rc, bio);
			break;
		default:
			bio_io_error(bio);
		}
	}
}

/* ------------------------------------------------------------------ */
/* checkpoints */

/* Fill bounce block @i with map block @p, little endian, zero padded. */
static void dmr_map_block_to_bounce(struct dmr_target *rc, u64 p, u32 i)
{
	__le32 *dst = (__le32 *)((u8 *)rc->bounce + (size_t)i * DMR_BLOCK_SIZE);
	u64 first = p * DMR_MAP_ENTRIES_PER_BLOCK, j;

	for (j = 0; j < DMR_MAP_ENTRIES_PER_BLOCK; j++)
		dst[j] = cpu_to_le32(first + j < rc->map.nr_logical ?
				     rc->map.l2p[first + j] : 0);
}

/* Is map block @p all unmapped (its on-disk form all zero)? */
static bool dmr_map_block_zero(const struct dmr_target *rc, u64 p)
{
	u64 first = p * DMR_MAP_ENTRIES_PER_BLOCK;
	u64 n = min_t(u64, DMR_MAP_ENTRIES_PER_BLOCK, rc->map.nr_logical - first);

	return !memchr_inv(&rc->map.l2p[first], 0, n * sizeof(u32));
}

static bool dmr_map_block_dirty(const struct dmr_target *rc, u64 p,
				unsigned int slot)
{
	return rc->map.dirty[p] & DMR_DIRTY_SLOT(slot);
}

static void dmr_map_block_clean(struct dmr_target *rc, u64 p, u64 n,
				unsigned int slot)
{
	u64 j;

	spin_lock(&rc->map_lock);
	for (j = 0; j < n; j++)
		rc->map.dirty[p + j] &= ~DMR_DIRTY_SLOT(slot);
	spin_unlock(&rc->map_lock);
}

/*
 * Write the map blocks of slot @slot (at @start) that changed since it was
 * last written.  Runs of unmapped (all-zero) blocks go down as
 * write-zeroes, which costs a thin or flash device nothing and falls back
 * to writing zeroes elsewhere, so a large, mostly empty map is cheap to
 * checkpoint.  Only the worker changes the map, so it is stable here.
 */
static int dmr_write_map(struct dmr_target *rc, u64 start, unsigned int slot)
{
	u64 p = 0, nr = rc->map.nr_map_blocks;
	int r;

	while (p < nr) {
		u64 i = 0;

		if (!dmr_map_block_dirty(rc, p, slot)) {
			p++;
			continue;
		}
		if (dmr_map_block_zero(rc, p)) {
			while (p + i < nr && dmr_map_block_dirty(rc, p + i, slot) &&
			       dmr_map_block_zero(rc, p + i))
				rc->map_crc[p + i++] = rc->zero_crc;
			r = blkdev_issue_zeroout(rc->dev->bdev,
						 (start + p) * DMR_SECTORS_PER_BLOCK,
						 i * DMR_SECTORS_PER_BLOCK, GFP_NOIO, 0);
		} else {
			while (p + i < nr && i < DMR_BOUNCE_BLOCKS &&
			       dmr_map_block_dirty(rc, p + i, slot) &&
			       !dmr_map_block_zero(rc, p + i)) {
				dmr_map_block_to_bounce(rc, p + i, i);
				rc->map_crc[p + i] = crc32c(~0U, (u8 *)rc->bounce +
							    (size_t)i * DMR_BLOCK_SIZE,
							    DMR_BLOCK_SIZE);
				i++;
			}
			r = dmr_rw(rc, REQ_OP_WRITE, start + p, i, rc->bounce);
		}
		if (r)
			return r;
		dmr_map_block_clean(rc, p, i, slot);
		p += i;
	}
	return 0;
}

/* Write the CRC table (@crc false: the segment table) of a slot. */
static int dmr_write_table(struct dmr_target *rc, u64 start, u64 nr_blocks,
			   bool crc, u32 *csum)
{
	u64 b, item = 0;
	u32 per_block = crc ? DMR_BLOCK_SIZE / 4 : DMR_BLOCK_SIZE / DMR_SEGTAB_ENTRY_SIZE;
	u64 nr_items = crc ? rc->map.nr_map_blocks : rc->map.nr_segs;
	int r;

	*csum = ~0U;
	for (b = 0; b < nr_blocks; ) {
		u32 n = min_t(u64, nr_blocks - b, DMR_BOUNCE_BLOCKS), k;

		memset(rc->bounce, 0, (size_t)n * DMR_BLOCK_SIZE);
		for (k = 0; k < n * per_block && item < nr_items; k++, item++) {
			if (crc) {
				((__le32 *)rc->bounce)[k] = cpu_to_le32(rc->map_crc[item]);
			} else {
				struct dmr_disk_segment *d = rc->bounce;
				struct dmr_seg *s = &rc->map.segs[item];

				d[k].seq = cpu_to_le64(s->seq);
				d[k].valid = cpu_to_le32(s->valid);
				d[k].flags = cpu_to_le32(s->flags);
			}
		}
		*csum = crc32c(*csum, rc->bounce, (size_t)n * DMR_BLOCK_SIZE);
		r = dmr_rw(rc, REQ_OP_WRITE, start + b, n, rc->bounce);
		if (r)
			return r;
		b += n;
	}
	return 0;
}

/**
 * dmr_checkpoint() - write a checkpoint (rule 5 above)
 * @rc: target; the worker must not be running concurrently
 * @clean: mark it as the last thing this instance writes
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
static int dmr_checkpoint(struct dmr_target *rc, bool clean)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	unsigned int slot = rc->ckpt_slot;
	u64 base = geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks;
	struct dmr_ckpt_layout l;
	struct dmr_ckpt c = {};
	int r;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return rc->first_error;
	r = dmr_seal(rc, true);
	if (r)
		return r;

	dmr_ckpt_layout(geo, &l);
	r = dmr_write_map(rc, base + l.map_offset, slot);
	if (r)
		goto fail;
	r = dmr_write_table(rc, base + l.crc_offset, l.crc_blocks, true, &c.crc_csum);
	if (r)
		goto fail;
	r = dmr_write_table(rc, base + l.segtab_offset, l.segtab_blocks, false,
			    &c.segtab_csum);
	if (r)
		goto fail;

	c.flags = clean ? DMR_CKPT_CLEAN : 0;
	c.seq = rc->ckpt_seq + 1;
	c.log_seq = rc->pos.seq;
	c.blocknr = base;
	c.log_segment = rc->pos.segment;
	c.log_offset = rc->pos.offset;
	c.next_segment = rc->pos.next_segment;
	c.mapped_blocks = rc->map.mapped;
	dmr_ckpt_encode(&c, rc->sb.uuid, rc->bounce);
	r = dmr_rw(rc, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, base, 1, rc->bounce);
	if (r)
		goto fail;
	rc->ckpt_seq = c.seq;
	rc->ckpt_log_seq = c.log_seq;
	rc->ckpt_slot ^= 1;
	rc->last_ckpt = c;
	rc->ckpt_clean_on_disk = clean;
	return 0;
fail:
	dmr_fail(rc, r, "checkpoint write");
	return r;
}

/* In the worker: a periodic or requested checkpoint is due. */
static void dmr_checkpoint_due(struct dmr_target *rc)
{
	WRITE_ONCE(rc->ckpt_due, false);
	/* the periodic checkpoint is skipped when nothing changed since */
	if (READ_ONCE(rc->ckpt_requested) || rc->unit_open ||
	    rc->pos.seq != rc->ckpt_log_seq)
		dmr_checkpoint(rc, false);
	WRITE_ONCE(rc->ckpt_requested, false);
	if (dmr_ckpt_rearm(READ_ONCE(rc->mode), READ_ONCE(rc->suspended),
			   READ_ONCE(rc->stopping)))
		queue_delayed_work(rc->wq, &rc->ckpt_work,
				   rc->opts.checkpoint_interval * HZ);
}

/* The checkpoint timer only hands the checkpoint to the worker. */
static void dmr_ckpt_timer(struct work_struct *work)
{
	struct dmr_target *rc = container_of(to_delayed_work(work),
					     struct dmr_target, ckpt_work);

	WRITE_ONCE(rc->ckpt_due, true);
	queue_work(rc->wq, &rc->work);
}

/**
 * dmr_checkpoint_now() - checkpoint on request
 * @rc: target
 * @clean: see dmr_checkpoint(); only with the worker stopped
 *
 * Return: 0 or the target's first error.
 */
int dmr_checkpoint_now(struct dmr_target *rc, bool clean)
{
	if (clean)
		return dmr_checkpoint(rc, true);
	/* run it in the worker, serialised with the I/O */
	WRITE_ONCE(rc->ckpt_requested, true);
	WRITE_ONCE(rc->ckpt_due, true);
	queue_work(rc->wq, &rc->work);
	flush_work(&rc->work);
	return READ_ONCE(rc->mode) == DMR_MODE_FAILED ? rc->first_error : 0;
}

/**
 * dmr_worker_stop() - stop periodic checkpoints, wait for the worker and the log
 * @rc: target; no new I/O arrives (postsuspend, destructor)
 *
 * The worker re-arms the timer after a periodic checkpoint, so @stopping is
 * set first (the worker no longer re-arms once it sees it), the timer is
 * cancelled, the worker flushed, and the timer cancelled again in case
 * the worker re-armed it before it saw @stopping.  Then nothing is left
 * queued that could run after the destructor frees the target.
 */
void dmr_worker_stop(struct dmr_target *rc)
{
	WRITE_ONCE(rc->stopping, true);
	cancel_delayed_work_sync(&rc->ckpt_work);
	flush_work(&rc->work);
	cancel_delayed_work_sync(&rc->ckpt_work);
	dmr_flight_wait(rc);
}

/* Start periodic checkpoints (resume of an active, writable instance). */
void dmr_worker_start(struct dmr_target *rc)
{
	WRITE_ONCE(rc->stopping, false);
	if (dmr_ckpt_rearm(READ_ONCE(rc->mode), READ_ONCE(rc->suspended), false))
		queue_delayed_work(rc->wq, &rc->ckpt_work,
				   rc->opts.checkpoint_interval * HZ);
}

/* ------------------------------------------------------------------ */
/* loading */

static int dmr_replay_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	return dmr_rw(ctx, REQ_OP_READ, blocknr, nr, buf);
}

/* Read a table (CRC or segment) of a slot; checks its checksum. */
static int dmr_read_table(struct dmr_target *rc, u64 start, u64 nr_blocks,
			  bool crc, u32 csum)
{
	u32 per_block = crc ? DMR_BLOCK_SIZE / 4 : DMR_BLOCK_SIZE / DMR_SEGTAB_ENTRY_SIZE;
	u64 nr_items = crc ? rc->map.nr_map_blocks : rc->map.nr_segs;
	u64 b, item = 0;
	u32 sum = ~0U;
	int r;

	for (b = 0; b < nr_blocks; ) {
		u32 n = min_t(u64, nr_blocks - b, DMR_BOUNCE_BLOCKS), k;

		r = dmr_rw(rc, REQ_OP_READ, start + b, n, rc->bounce);
		if (r)
			return r;
		sum = crc32c(sum, rc->bounce, (size_t)n * DMR_BLOCK_SIZE);
		for (k = 0; k < n * per_block && item < nr_items; k++, item++) {
			if (crc) {
				rc->map_crc[item] = le32_to_cpu(((__le32 *)rc->bounce)[k]);
			} else {
				struct dmr_disk_segment *d = rc->bounce;
				struct dmr_seg *s = &rc->map.segs[item];

				s->seq = le64_to_cpu(d[k].seq);
				s->valid = le32_to_cpu(d[k].valid);
				s->flags = le32_to_cpu(d[k].flags);
			}
		}
		b += n;
	}
	return sum == csum ? 0 : -EILSEQ;
}

/*
 * Load the map and segment table of one slot whose header validated.
 * Return: 0, -EILSEQ if a checksum or count does not match (a torn slot:
 * the other one may be used), or the read error.
 */
static int dmr_load_slot(struct dmr_target *rc, unsigned int slot,
			 const struct dmr_ckpt *c)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	u64 base = geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks, p;
	struct dmr_ckpt_layout l;
	int r;

	dmr_ckpt_layout(geo, &l);
	r = dmr_read_table(rc, base + l.crc_offset, l.crc_blocks, true, c->crc_csum);
	if (r)
		return r;
	for (p = 0; p < rc->map.nr_map_blocks; ) {
		u32 n = min_t(u64, rc->map.nr_map_blocks - p, DMR_BOUNCE_BLOCKS), i, j;

		r = dmr_rw(rc, REQ_OP_READ, base + l.map_offset + p, n, rc->bounce);
		if (r)
			return r;
		for (i = 0; i < n; i++) {
			__le32 *src = (__le32 *)((u8 *)rc->bounce +
						 (size_t)i * DMR_BLOCK_SIZE);
			u64 first = (p + i) * DMR_MAP_ENTRIES_PER_BLOCK;

			u64 cnt = min_t(u64, DMR_MAP_ENTRIES_PER_BLOCK,
					rc->map.nr_logical - first);

			/* an unmapped block: no CRC to compute */
			if (rc->map_crc[p + i] == rc->zero_crc &&
			    !memchr_inv(src, 0, DMR_BLOCK_SIZE)) {
				memset(&rc->map.l2p[first], 0, cnt * sizeof(u32));
				continue;
			}
			if (crc32c(~0U, src, DMR_BLOCK_SIZE) != rc->map_crc[p + i])
				return -EILSEQ;
			for (j = 0; j < cnt; j++)
				rc->map.l2p[first + j] = le32_to_cpu(src[j]);
		}
		p += n;
	}
	r = dmr_read_table(rc, base + l.segtab_offset, l.segtab_blocks, false,
			   c->segtab_csum);
	if (r)
		return r;
	r = dmr_map_recount(&rc->map);
	if (r || rc->map.mapped != c->mapped_blocks)
		return -EILSEQ;
	/* this slot now matches memory; the other one is out of date */
	memset(rc->map.dirty, DMR_DIRTY_SLOT(slot ^ 1), rc->map.nr_map_blocks);
	return 0;
}

/**
 * dmr_load() - newest valid checkpoint, then roll the log forward
 * @rc: target, with dmr_io_init() done
 * @error: static message for ti->error
 *
 * After a crash (dmr_load_needs_recovery()) this burns the segments the
 * log ended in and writes a checkpoint that starts the log on a fresh
 * segment (rules 3, 4 and 7).  A read-only table replays in memory only
 * and never writes (rule 8).  A read error on a checkpoint refuses the
 * load (rule 5).
 *
 * Return: 0 or a negative errno.
 */
int dmr_load(struct dmr_target *rc, const char **error)
{
	static const char *const read_error[DMR_CKPT_SLOTS] = {
		"I/O error reading checkpoint slot 0",
		"I/O error reading checkpoint slot 1",
	};
	const struct dmr_geometry *geo = &rc->sb.geo;
	struct dmr_ckpt c[DMR_CKPT_SLOTS];
	enum dmr_log_status st[DMR_CKPT_SLOTS];
	struct dmr_replay rp = {
		.geo = geo, .uuid = rc->sb.uuid, .read = dmr_replay_read,
		.ctx = rc, .buf = rc->segbuf, .unit = rc->unit,
	};
	int order[DMR_CKPT_SLOTS], i, n, bad = 0, slot = -1, r;
	bool recovery;

	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		u64 blk = geo->ckpt_offset + (u64)i * geo->ckpt_slot_blocks;

		r = dmr_rw(rc, REQ_OP_READ, blk, 1, rc->bounce);
		st[i] = r ? DMR_LOG_READ_ERROR :
			dmr_ckpt_decode(rc->bounce, blk, rc->sb.uuid, &c[i]);
	}
	n = dmr_ckpt_order(st, c, order, &bad);
	if (n < 0) {
		*error = read_error[bad];
		return n;
	}
	for (i = 0; i < n; i++) {
		int s = order[i];

		r = dmr_load_slot(rc, s, &c[s]);
		if (!r) {
			slot = s;
			break;
		}
		if (r != -EILSEQ) {
			*error = read_error[s];
			return r;
		}
		DMWARN("%s: checkpoint slot %d (seq %llu) fails its checksums, trying the other",
		       rc->dev->name, s, (unsigned long long)c[s].seq);
	}
	if (slot < 0) {
		*error = st[0] == DMR_LOG_BAD_MAGIC && st[1] == DMR_LOG_BAD_MAGIC ?
			 "No checkpoint on the device (format it with remapctl)" :
			 "No valid checkpoint (metadata corrupted)";
		return -EINVAL;
	}

	rc->ckpt_seq = c[slot].seq;
	rc->ckpt_log_seq = c[slot].log_seq;
	rc->ckpt_slot = slot ^ 1;
	rc->last_ckpt = c[slot];
	rc->pos.segment = c[slot].log_segment;
	rc->pos.offset = c[slot].log_offset;
	rc->pos.next_segment = c[slot].next_segment;
	rc->pos.seq = c[slot].log_seq;
	if ((rc->pos.segment != DMR_NO_SEGMENT && rc->pos.segment >= geo->nr_segments) ||
	    rc->pos.offset + 2 > geo->segment_blocks) {
		*error = "Checkpoint log position out of range";
		return -EINVAL;
	}

	r = dmr_replay_log(&rp, &rc->map, &rc->pos);
	if (r) {
		*error = "Log corrupted (unit does not fit its segment)";
		return r;
	}
	if (rp.stop == DMR_LOG_READ_ERROR) {
		*error = "I/O error reading the log";
		return -EIO;
	}
	rc->replayed = rp.units;
	recovery = dmr_load_needs_recovery(&c[slot], rp.units, rp.stop);
	rc->mode = rc->read_only ? DMR_MODE_READ_ONLY : DMR_MODE_WRITE;
	if (recovery)
		DMINFO("%s: recovery%s: checkpoint %llu (slot %d), %llu units replayed, end: %s",
		       rc->dev->name, rc->read_only ? " in memory (read-only)" : "",
		       (unsigned long long)c[slot].seq, slot,
		       (unsigned long long)rp.units, dmr_log_strerror(rp.stop));

	if (rc->read_only) {
		/* rule 8: nothing is written; every mapped block is on the device */
		rc->open_segment = DMR_NO_SEGMENT;
		rc->loaded = true;
		return 0;
	}
	if (recovery) {
		/* rule 4: burn where the log ended, restart on a fresh segment */
		if (rc->pos.segment != DMR_NO_SEGMENT)
			rc->map.segs[rc->pos.segment].flags |= DMR_SEG_USED;
		if (rc->pos.next_segment != DMR_NO_SEGMENT)
			rc->map.segs[rc->pos.next_segment].flags |= DMR_SEG_USED;
		rc->pos.segment = dmr_seg_alloc(&rc->map, &rc->alloc_cursor,
						DMR_NO_SEGMENT, DMR_NO_SEGMENT);
		rc->pos.offset = 0;
		rc->pos.next_segment = DMR_NO_SEGMENT;
		dmr_open_segment(rc);
		rc->seg_written = 0;
		rc->unit_open = false;
		r = dmr_checkpoint(rc, false);
		if (r) {
			*error = "Cannot write the recovery checkpoint";
			return r;
		}
		rc->loaded = true;
		return 0;
	}

	/* rule 7: the clean checkpoint is marked not clean at the first write */
	rc->ckpt_clean_on_disk = true;
	/* go on in the open segment: its written part must be in memory */
	rc->open_segment = rc->pos.segment;
	rc->seg_fresh = rc->pos.offset == 0;
	rc->seg_written = rc->pos.offset;
	if (rc->pos.segment != DMR_NO_SEGMENT && rc->pos.offset) {
		r = dmr_rw(rc, REQ_OP_READ, dmr_seg_block(rc, rc->pos.segment, 0),
			   rc->pos.offset, rc->segbuf);
		if (r) {
			*error = "Cannot read the open segment";
			return r;
		}
	}
	if (rc->pos.segment != DMR_NO_SEGMENT) {
		struct dmr_seg *s = &rc->map.segs[rc->pos.segment];

		if (!(s->flags & DMR_SEG_USED)) {
			s->flags |= DMR_SEG_USED;
			s->seq = rc->pos.seq + 1;
		}
		if (rc->pos.next_segment == DMR_NO_SEGMENT)
			rc->pos.next_segment = dmr_seg_alloc(&rc->map, &rc->alloc_cursor,
							     rc->pos.segment,
							     DMR_NO_SEGMENT);
	}
	rc->loaded = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* set-up */

/* Return: bytes of memory the map, segment table and buffers use. */
u64 dmr_map_memory(const struct dmr_target *rc)
{
	return rc->map.nr_logical * sizeof(u32) +
	       (u64)rc->map.nr_segs * sizeof(struct dmr_seg) +
	       rc->map.nr_map_blocks * (1 + sizeof(u32));
}

/*
 * Zeroed array of @n elements of @size bytes.  kvcalloc() refuses more
 * than INT_MAX bytes, and the map of a device above 2 TiB of logical
 * space (2^29 blocks) is bigger than that, so those go to vmalloc
 * directly.  Freed with kvfree() either way.
 */
static void *dmr_alloc_array(u64 n, size_t size)
{
	u64 bytes = n * size;

	if (bytes <= INT_MAX)
		return kvcalloc(n, size, GFP_KERNEL);
	if (bytes > ULONG_MAX)
		return NULL;
	return __vmalloc(bytes, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN);
}

int dmr_io_init(struct dmr_target *rc, const char **error)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	u64 nr_map_blocks = DIV_ROUND_UP_ULL(geo->logical_blocks,
					     DMR_MAP_ENTRIES_PER_BLOCK);
	u32 *l2p;
	struct dmr_seg *segs;
	u8 *dirty;

	spin_lock_init(&rc->map_lock);
	spin_lock_init(&rc->bio_lock);
	bio_list_init(&rc->bios);
	INIT_WORK(&rc->work, dmr_worker);
	INIT_DELAYED_WORK(&rc->ckpt_work, dmr_ckpt_timer);
	INIT_WORK(&rc->flight_work, dmr_flight_fn);
	init_completion(&rc->flight_done);
	rc->open_segment = DMR_NO_SEGMENT;
	rc->flight_segment = DMR_NO_SEGMENT;

	rc->mode = DMR_MODE_READ_ONLY;	/* until dmr_load() */
	l2p = dmr_alloc_array(geo->logical_blocks, sizeof(u32));
	segs = dmr_alloc_array(geo->nr_segments, sizeof(*segs));
	dirty = dmr_alloc_array(nr_map_blocks, 1);
	rc->map_crc = dmr_alloc_array(nr_map_blocks, sizeof(u32));
	rc->segbuf = vmalloc((size_t)geo->segment_blocks * DMR_BLOCK_SIZE);
	rc->flight_buf = vmalloc((size_t)geo->segment_blocks * DMR_BLOCK_SIZE);
	rc->bounce = vmalloc((size_t)DMR_BOUNCE_BLOCKS * DMR_BLOCK_SIZE);
	rc->unit = kzalloc(sizeof(*rc->unit), GFP_KERNEL);
	rc->map.l2p = l2p;
	rc->map.segs = segs;
	rc->map.dirty = dirty;
	if (!l2p || !segs || !dirty || !rc->map_crc || !rc->segbuf ||
	    !rc->flight_buf || !rc->bounce || !rc->unit) {
		*error = "Cannot allocate the map";
		return -ENOMEM;
	}
	memset(rc->bounce, 0, DMR_BLOCK_SIZE);
	rc->zero_crc = crc32c(~0U, rc->bounce, DMR_BLOCK_SIZE);
	dmr_map_init(&rc->map, l2p, geo->logical_blocks, segs, geo->nr_segments,
		     geo->segment_blocks, dirty);

	rc->io_client = dm_io_client_create();
	if (IS_ERR(rc->io_client)) {
		rc->io_client = NULL;
		*error = "Cannot create the dm-io client";
		return -ENOMEM;
	}
	if (bioset_init(&rc->bs, BIO_POOL_SIZE, 0, 0)) {
		*error = "Cannot create the bio set";
		return -ENOMEM;
	}
	rc->wq = alloc_workqueue("dmr-%s", WQ_MEM_RECLAIM, 0,
				 dm_device_name(dm_table_get_md(rc->ti->table)));
	/* unbound, so the second stage runs beside the worker, not behind it */
	rc->flight_wq = alloc_workqueue("dmr-%s-log", WQ_MEM_RECLAIM | WQ_UNBOUND, 1,
					dm_device_name(dm_table_get_md(rc->ti->table)));
	if (!rc->wq || !rc->flight_wq) {
		*error = "Cannot create the workqueue";
		return -ENOMEM;
	}
	return 0;
}

/* Free what dmr_io_init() allocated; safe on a partial init. */
void dmr_io_exit(struct dmr_target *rc)
{
	if (rc->wq)
		destroy_workqueue(rc->wq);
	if (rc->flight_wq)
		destroy_workqueue(rc->flight_wq);
	bioset_exit(&rc->bs);
	if (rc->io_client)
		dm_io_client_destroy(rc->io_client);
	kfree(rc->unit);
	vfree(rc->bounce);
	vfree(rc->flight_buf);
	vfree(rc->segbuf);
	kvfree(rc->map_crc);
	kvfree(rc->map.dirty);
	kvfree(rc->map.segs);
	kvfree(rc->map.l2p);
}
