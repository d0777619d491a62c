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
 *     request completes only after the unit holding every earlier write
 *     was written with REQ_PREFLUSH | REQ_FUA: everything acknowledged
 *     before the flush is then on stable media.
 *  2. Units are self-checking (summary checksum, data checksum, sequence
 *     number), so replay stops at the first torn or missing one.
 *  3. The first unit written to a segment carries REQ_PREFLUSH, so no unit
 *     of a segment can reach the media before every unit of the segments
 *     before it: after a crash at most the segment replay stops in and the
 *     one it would go on to can hold stale units beyond the end of the log.
 *     A full segment is written by the second stage (dmr_flight_fn())
 *     while the next one fills; dmr_seal() waits for that write before
 *     writing or flushing anything else, which keeps rules 1 and 3.
 *  4. After a crash both of those are burnt (never written again) and a
 *     checkpoint is written before any new write, so new units start on a
 *     fresh segment and a stale unit can never be mistaken for a new one.
 *  5. A checkpoint first seals the open unit and flushes the device (the
 *     log it covers is durable), writes the map blocks changed since that
 *     slot was last written, the CRC table and the segment table, then its
 *     header with REQ_PREFLUSH | REQ_FUA.  A torn slot fails its checksums
 *     and the other slot, with a longer replay, is used.
 *  6. Segments are only ever taken from those never written since format,
 *     so nothing a checkpoint or a reachable unit points to is overwritten.
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
	if (rc->pos.segment == DMR_NO_SEGMENT)
		return;
	s = &rc->map.segs[rc->pos.segment];
	s->flags |= DMR_SEG_USED;
	s->seq = rc->pos.seq + 1;
	rc->pos.next_segment = dmr_seg_alloc(&rc->map, &rc->alloc_cursor,
					     rc->pos.segment, DMR_NO_SEGMENT);
}

/* Encode unit @u (summary at block @off of @buf) and write it, @nr blocks. */
static int dmr_write_unit(struct dmr_target *rc, struct dmr_unit *u, u8 *buf,
			  u32 off, u32 nr, blk_opf_t opf)
{
	u8 *summary = buf + (size_t)off * DMR_BLOCK_SIZE;

	dmr_unit_encode(u, rc->sb.uuid, summary + DMR_BLOCK_SIZE, summary);
	return dmr_rw(rc, opf, u->blocknr, nr, summary);
}

/*
 * The writer's second stage: checksums and writes the unit that filled a
 * segment, on another CPU, while the worker goes on filling the next
 * segment in the other buffer.  Owns @flight_unit and @flight_buf until it
 * completes @flight_done.
 */
static void dmr_flight_fn(struct work_struct *work)
{
	struct dmr_target *rc = container_of(work, struct dmr_target, flight_work);

	rc->flight_error = dmr_write_unit(rc, rc->flight_unit, rc->flight_buf,
					  rc->flight_off, rc->flight_nr,
					  rc->flight_opf);
	complete(&rc->flight_done);
}

/**
 * dmr_flight_wait() - wait until the segment in flight is on the device
 * @rc: target; called by the worker, or with the worker stopped
 *
 * Its blocks are then read from the device again, and its buffer and
 * unit are free for the next segment.  If the write failed, the target
 * goes to failed mode, which never seals again, and the segment's blocks
 * go on being read from its buffer: the device does not hold them.
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

/**
 * dmr_seal() - write the open unit to the device
 * @rc: target
 * @flush: make it and everything before it durable (flush / FUA)
 *
 * With no open unit (or an empty one) and @flush, just flushes the device.
 *
 * A unit that fills its segment, without @flush, is handed to the second
 * stage (dmr_flight_fn()) and the worker goes on in the next segment at
 * once.  Every seal first waits for that write: rule 1 (a flush covers
 * the segment in flight, whose writes were acknowledged) and rule 3 (the
 * next segment's first unit carries REQ_PREFLUSH, which orders it only
 * behind writes that have completed) both need it, and then at most one
 * segment is ever in flight.
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
static int dmr_seal(struct dmr_target *rc, bool flush)
{
	struct dmr_unit *u = rc->unit;
	u32 seg = rc->pos.segment, off = rc->pos.offset;
	u32 nr = rc->wp - off;
	blk_opf_t opf = REQ_OP_WRITE | REQ_SYNC;
	struct dmr_log_pos next = rc->pos;
	int r;

	r = dmr_flight_wait(rc);
	if (r)
		return r;
	if (!rc->unit_open || (!u->nr_blocks && !u->nr_discards)) {
		rc->unit_open = false;
		if (!flush)
			return 0;
		r = blkdev_issue_flush(rc->dev->bdev);
		if (r)
			dmr_fail(rc, r, "device flush");
		return r;
	}

	u->seq = rc->pos.seq + 1;
	u->blocknr = dmr_seg_block(rc, seg, off);
	u->next_segment = rc->pos.next_segment;
	if (flush)
		opf |= REQ_PREFLUSH | REQ_FUA;
	if (rc->seg_fresh)
		opf |= REQ_PREFLUSH;	/* rule 3 */
	dmr_log_advance(&next, nr, dmr_seg_blocks(rc));
	if (!flush && next.segment != seg) {
		/* the segment is full: the next one fills the other buffer */
		swap(rc->unit, rc->flight_unit);
		swap(rc->segbuf, rc->flight_buf);
		rc->flight_off = off;
		rc->flight_nr = nr;
		rc->flight_opf = opf;
		reinit_completion(&rc->flight_done);
		rc->flight_pending = true;
		queue_work(rc->flight_wq, &rc->flight_work);
	} else {
		r = dmr_write_unit(rc, u, rc->segbuf, off, nr, opf);
		if (r) {
			dmr_fail(rc, r, "log write");
			return r;
		}
	}
	rc->seg_fresh = false;
	rc->unit_open = false;
	rc->pos.seq = u->seq;
	atomic64_add(nr, &rc->stats.device_blocks);
	if (rc->wp + 2 <= dmr_seg_blocks(rc))
		atomic64_inc(&rc->stats.short_units);

	spin_lock(&rc->map_lock);
	/* with open_segment, so a read never sees it as on the device early */
	if (rc->flight_pending)
		rc->flight_segment = seg;
	dmr_log_advance(&rc->pos, nr, dmr_seg_blocks(rc));
	if (rc->pos.segment != seg)
		dmr_open_segment(rc);
	spin_unlock(&rc->map_lock);
	return 0;
}

/* Make sure an open unit has room for one more data block. */
static int dmr_room(struct dmr_target *rc)
{
	int r;

	if (rc->unit_open && rc->wp < dmr_seg_blocks(rc) &&
	    dmr_unit_room(rc->unit, 1))
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
	int r = 0;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE) {
		r = -EIO;
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
		n = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT;
		n = min(n, seg_blocks - rc->wp);
		n = min_t(u32, n, DMR_SUMMARY_WORDS - rc->unit->nr_blocks -
			  2 * rc->unit->nr_discards);
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
	if (bio->bi_opf & REQ_FUA)
		r = dmr_seal(rc, true);
	else if (rc->unit_open && rc->wp == seg_blocks)
		r = dmr_seal(rc, false);	/* full: start writing it now */
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
	while (nr) {
		struct dmr_unit *u = rc->unit;
		u32 count = min_t(u64, nr, 1U << 30);

		/* discards go before a unit's data blocks: seal if it has any */
		if (rc->unit_open && (u->nr_blocks || !dmr_unit_room(u, 2))) {
			r = dmr_seal(rc, false);
			if (r)
				goto out;
		}
		r = dmr_room(rc);
		if (r)
			goto out;
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
	u64 base = geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks, p;
	struct dmr_ckpt_layout l;
	struct dmr_ckpt c = {};
	int r;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return rc->first_error;
	r = dmr_seal(rc, true);
	if (r)
		return r;

	dmr_ckpt_layout(geo, &l);
	for (p = 0; p < rc->map.nr_map_blocks; ) {
		u32 i = 0, j;

		while (p + i < rc->map.nr_map_blocks && i < DMR_BOUNCE_BLOCKS &&
		       (rc->map.dirty[p + i] & DMR_DIRTY_SLOT(slot))) {
			dmr_map_block_to_bounce(rc, p + i, i);
			rc->map_crc[p + i] = crc32c(~0U, (u8 *)rc->bounce +
						    (size_t)i * DMR_BLOCK_SIZE,
						    DMR_BLOCK_SIZE);
			i++;
		}
		if (!i) {
			p++;
			continue;
		}
		r = dmr_rw(rc, REQ_OP_WRITE, base + l.map_offset + p, i, rc->bounce);
		if (r)
			goto fail;
		spin_lock(&rc->map_lock);
		for (j = 0; j < i; j++)
			rc->map.dirty[p + j] &= ~DMR_DIRTY_SLOT(slot);
		spin_unlock(&rc->map_lock);
		p += i;
	}
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
	if (READ_ONCE(rc->mode) == DMR_MODE_WRITE && !READ_ONCE(rc->suspended))
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

/* Stop periodic checkpoints, wait for the worker and the log writes. */
void dmr_worker_stop(struct dmr_target *rc)
{
	cancel_delayed_work_sync(&rc->ckpt_work);
	flush_work(&rc->work);
	dmr_flight_wait(rc);
}

void dmr_worker_start(struct dmr_target *rc)
{
	if (READ_ONCE(rc->mode) == DMR_MODE_WRITE)
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

/* Load the map and segment table of one slot whose header validated. */
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

			if (crc32c(~0U, src, DMR_BLOCK_SIZE) != rc->map_crc[p + i])
				return -EILSEQ;
			for (j = 0; j < DMR_MAP_ENTRIES_PER_BLOCK &&
			     first + j < rc->map.nr_logical; j++)
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
 * After a crash (anything but a clean checkpoint with nothing after it)
 * this burns the segments the log ended in and writes a checkpoint that
 * starts the log on a fresh segment (rules 3 and 4), unless read-only.
 *
 * Return: 0 or a negative errno.
 */
int dmr_load(struct dmr_target *rc, const char **error)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	struct dmr_ckpt c[DMR_CKPT_SLOTS];
	enum dmr_log_status st[DMR_CKPT_SLOTS];
	struct dmr_replay rp = {
		.geo = geo, .uuid = rc->sb.uuid, .read = dmr_replay_read,
		.ctx = rc, .buf = rc->segbuf, .unit = rc->unit,
	};
	int order[DMR_CKPT_SLOTS], i, slot = -1, r;
	bool recovery;

	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		u64 blk = geo->ckpt_offset + (u64)i * geo->ckpt_slot_blocks;

		r = dmr_rw(rc, REQ_OP_READ, blk, 1, rc->bounce);
		st[i] = r ? DMR_LOG_READ_ERROR :
			dmr_ckpt_decode(rc->bounce, blk, rc->sb.uuid, &c[i]);
	}
	order[0] = st[1] == DMR_LOG_OK && (st[0] != DMR_LOG_OK || c[1].seq > c[0].seq);
	order[1] = !order[0];
	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		int s = order[i];

		if (st[s] != DMR_LOG_OK)
			continue;
		r = dmr_load_slot(rc, s, &c[s]);
		if (!r) {
			slot = s;
			break;
		}
		DMWARN("checkpoint slot %d (seq %llu) unusable (%d), trying the other",
		       s, (unsigned long long)c[s].seq, r);
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
	recovery = !(c[slot].flags & DMR_CKPT_CLEAN) || rp.units ||
		   (rp.stop != DMR_LOG_BAD_MAGIC && rp.stop != DMR_LOG_END);
	if (recovery)
		DMINFO("%s: recovery: checkpoint %llu (slot %d), %llu units replayed, end: %s",
		       rc->dev->name, (unsigned long long)c[slot].seq, slot,
		       (unsigned long long)rp.units, dmr_log_strerror(rp.stop));

	rc->mode = rc->opts.read_only ? DMR_MODE_READ_ONLY : DMR_MODE_WRITE;
	if (recovery && rc->mode == DMR_MODE_WRITE) {
		/* rule 4: burn where the log ended, restart on a fresh segment */
		if (rc->pos.segment != DMR_NO_SEGMENT)
			rc->map.segs[rc->pos.segment].flags |= DMR_SEG_USED;
		if (rc->pos.next_segment != DMR_NO_SEGMENT)
			rc->map.segs[rc->pos.next_segment].flags |= DMR_SEG_USED;
		rc->pos.segment = dmr_seg_alloc(&rc->map, &rc->alloc_cursor,
						DMR_NO_SEGMENT, DMR_NO_SEGMENT);
		rc->pos.offset = 0;
		dmr_open_segment(rc);
		rc->unit_open = false;
		r = dmr_checkpoint(rc, false);
		if (r) {
			*error = "Cannot write the recovery checkpoint";
			return r;
		}
		return 0;
	}

	/* go on in the open segment: its written part must be in memory */
	rc->open_segment = rc->pos.segment;
	rc->seg_fresh = rc->pos.offset == 0;
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

	l2p = kvcalloc(geo->logical_blocks, sizeof(u32), GFP_KERNEL);
	segs = kvcalloc(geo->nr_segments, sizeof(*segs), GFP_KERNEL);
	dirty = kvzalloc(nr_map_blocks, GFP_KERNEL);
	rc->map_crc = kvcalloc(nr_map_blocks, sizeof(u32), GFP_KERNEL);
	rc->segbuf = vmalloc((size_t)geo->segment_blocks * DMR_BLOCK_SIZE);
	rc->flight_buf = vmalloc((size_t)geo->segment_blocks * DMR_BLOCK_SIZE);
	rc->bounce = vmalloc((size_t)DMR_BOUNCE_BLOCKS * DMR_BLOCK_SIZE);
	rc->unit = kzalloc(sizeof(*rc->unit), GFP_KERNEL);
	rc->flight_unit = kzalloc(sizeof(*rc->flight_unit), GFP_KERNEL);
	rc->map.l2p = l2p;
	rc->map.segs = segs;
	rc->map.dirty = dirty;
	if (!l2p || !segs || !dirty || !rc->map_crc || !rc->segbuf ||
	    !rc->flight_buf || !rc->bounce || !rc->unit || !rc->flight_unit) {
		*error = "Cannot allocate the map";
		return -ENOMEM;
	}
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
	kfree(rc->flight_unit);
	kfree(rc->unit);
	vfree(rc->bounce);
	vfree(rc->flight_buf);
	vfree(rc->segbuf);
	kvfree(rc->map_crc);
	kvfree(rc->map.dirty);
	kvfree(rc->map.segs);
	kvfree(rc->map.l2p);
}
