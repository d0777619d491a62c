// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap log writer: the log heads, units, segment writes, writes,
 * discards and flushes.  The worker that calls it is in dmr-worker.c.
 *
 * Locking: see dmr.h.  Everything here runs in the worker (one work item)
 * or, with the worker stopped, in the constructor, destructor and
 * postsuspend.  @map_lock is taken around map and segment-state changes
 * because dmr_map_read() looks them up from the submission path.
 *
 * Crash model and ordering rules (Documentation/dm-remap-design.rst):
 *
 *  1. A write is complete once copied into its head's open segment in
 *     memory (a volatile write cache, as advertised).  A REQ_PREFLUSH or
 *     REQ_FUA request completes only after its data is in a head and a
 *     group commit (dmr_group_commit() in dmr-worker.c) then wrote every
 *     closed unit of every head, the last write carrying REQ_PREFLUSH |
 *     REQ_FUA, or flushed the device (dmr_flush_all()): everything
 *     acknowledged before it, and its own data, are then on stable
 *     media.  Its preflush needs no flush before its data is taken:
 *     replay applies a prefix of the log (rule 2), so that data is never
 *     found without what was written before it.
 *  2. Units are self-checking (summary checksum, data checksum, sequence
 *     number); all heads share one sequence, and replay applies units in
 *     sequence order and stops at the first one missing or torn, on
 *     whatever head (dmr_replay_heads()).  A unit that survives a crash
 *     behind a lost one is therefore never applied, and after a flush no
 *     unit before it can be missing.
 *  3. A segment is written whole (all its units) once it is done, by the
 *     second stage (dmr_flight_fn()), while its head goes on in the next
 *     one; only a flush writes part of a segment.  At most
 *     DMR_FLIGHT_SLOTS segments are in flight, written in any order, and
 *     dmr_seal() waits for all of them before a flush or the synchronous
 *     write that goes with it, so rule 1's flush covers them.  Their
 *     blocks are read from their buffers (DMR_SEG_MEM) until the worker
 *     reaped the write.
 *  4. After a crash the log's sequence resumes above any number a unit on
 *     the device can carry (dmr_seq_after_recovery(), with the window of
 *     dmr_seq_window_full(), counted from dmr_ckpt_log_seq_bound() when
 *     the load fell back past a damaged newer slot), and a checkpoint is
 *     written before any new write.  Heads go on where replay left them: a stale unit there, or
 *     anywhere in a segment used again, is numbered below what replay
 *     wants and is never taken for a new one.
 *  5. A checkpoint first writes every head's closed units and flushes the
 *     device (the log it covers is durable), writes the map blocks
 *     changed since that slot was last written, the CRC table and the
 *     segment table, then its header with REQ_PREFLUSH | REQ_FUA.  A torn
 *     slot fails its checksums and the other slot, with a longer replay,
 *     is used.  A slot that cannot be read refuses the load
 *     (dmr_ckpt_order()).
 *  6. The reuse rule (dmr_seg_reusable()): a segment is written again only
 *     when it is empty and sealed, two checkpoints completed since it was
 *     sealed (neither slot's replay reads a unit in it), a device flush
 *     completed since it emptied (the units that moved or overwrote its
 *     blocks are durable, so replay from either slot, whose map may still
 *     point into it, takes every entry out before the segment's next use
 *     is applied), and no read sent down to it is still in flight.  GC
 *     moves a block only if the map still points at the copy it read
 *     (dmr_move_commit()), and replay applies a relocation unit with the
 *     same rule.
 *  7. A clean checkpoint is the last write of its instance.  Before an
 *     instance accepts its first write after loading (or writing) a clean
 *     checkpoint, it rewrites that header without the clean flag
 *     (dmr_mark_dirty()).  So a clean checkpoint that is the newest one
 *     has nothing after it, and a load that finds one skips recovery only
 *     when replay finds nothing either (dmr_load_needs_recovery()).
 *  8. Only an active instance writes: from its load (constructor, or
 *     preresume when another instance of the same device was live) to its
 *     postsuspend, which writes a clean checkpoint.  A table reload
 *     therefore hands the device over: the old instance's postsuspend
 *     writes its last checkpoint before the new one's preresume loads it,
 *     and the old destructor writes nothing.  A read-only table never
 *     writes; it replays in memory only.
 *  9. A unit that leaves its segment done records the segment its head
 *     goes on in; the head reserves it before its write pointer gets
 *     there (dmr_head_needs_next()), so replay can follow every head.
 * 10. Units take their sequence number when they are closed, and replay
 *     applies user units in that order, so two copies of a block must be
 *     numbered in the order they were written.  A write closes any other
 *     user head's open unit that holds the current copy of one of its
 *     blocks first (dmr_order_before()), and a discard closes its own
 *     unit at once, before any later write can be numbered.  Within one
 *     unit, entries apply in order; relocations need no care (rule 6).
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/ioprio.h>
#include <linux/module.h>

#include "dmr.h"

/*
 * Test hook (fault injection, as dm-flakey's, for the VM tests): the next
 * this many segments handed to the second stage fail with -EIO at once,
 * unwritten, as a device whose write fails would; at once, so that the
 * next reap finds the failure (a test can then tell which path reaped
 * it).  0, the default, does nothing.
 */
static unsigned int dmr_fault_flight_fail;
module_param_named(fault_flight_fail, dmr_fault_flight_fail, uint, 0600);
MODULE_PARM_DESC(fault_flight_fail,
		 "Test hook: fail the next N segment writes of the second stage");

/*
 * flight_serial=Y: the second stage's slots write one at a time (their
 * checksums still beside each other).  md RAID-5 gives its members more,
 * smaller commands when segment writes come from several slots at once.
 */
static bool dmr_flight_serial;
module_param_named(flight_serial, dmr_flight_serial, bool, 0644);
MODULE_PARM_DESC(flight_serial, "Second-stage segment writes one at a time");

/*
 * Add the checksums to the units in blocks [@from, @units_end) of segment
 * buffer @buf and write blocks [@from, @end) to @blocknr (the device block
 * of @from): the blocks after the units, if any, are the zeroed ones
 * dmr_stripe_pad() adds to end the write on a stripe boundary.  With
 * @flush the first piece goes down with REQ_PREFLUSH and every piece with
 * REQ_FUA: everything written before, and these units, are then durable
 * (dmr_flush_carrier()).
 *
 * Crash ordering of the padding: the zeroed blocks are past the head's
 * last unit, where replay looks for the next summary and finds none (a
 * zero block has no magic), as it finds none in whatever the segment held
 * there before; the next units are written over them, each unit whole
 * with its summary as without padding.  So replay stops where it would
 * have stopped (rules 1-3).
 */
static int dmr_write_units(struct dmr_target *rc, u8 *buf, u32 from, u32 units_end,
			   u32 end, u64 blocknr, bool flush)
{
	u32 piece = dmr_write_piece(rc->sb.stripe_blocks);
	blk_opf_t opf = REQ_OP_WRITE | REQ_SYNC;
	int r;

	if (WARN_ON_ONCE(units_end > end || !dmr_units_finish(buf, from, units_end)))
		return -EIO;
	/*
	 * Pieces that end on stripe boundaries of the segment: dm-io would
	 * cut its bios wherever the buffer's pages stop being contiguous.
	 */
	while (from < end) {
		u32 n = dmr_piece_len(from, end, piece);

		r = dmr_rw(rc, opf | (flush ? REQ_PREFLUSH | REQ_FUA : 0), blocknr, n,
			   buf + (size_t)from * DMR_BLOCK_SIZE);
		if (r)
			return r;
		opf |= flush ? REQ_FUA : 0;	/* preflush once: pieces are waited for */
		flush = false;
		from += n;
		blocknr += n;
	}
	return 0;
}

/*
 * The writer's second stage: checksums and writes the units of a segment
 * that is done, on another CPU, while the worker goes on; a large
 * segment's data checksum first (the worker waits for that alone before
 * it closes the unit that records the segment: dmr_large_csum_give()).
 * Owns its slot's buffer until it completes @done.
 */
static void dmr_flight_fn(struct work_struct *work)
{
	struct dmr_flight *f = container_of(work, struct dmr_flight, work);
	bool serial = READ_ONCE(dmr_flight_serial);

	if (f->large) {
		f->csum = dmr_data_csum(f->buf, f->nr);
		complete(&f->csummed);
	}
	if (serial)
		mutex_lock(&f->rc->flight_io_lock);
	f->error = dmr_write_units(f->rc, f->buf, f->off, f->units_end, f->off + f->nr,
				   f->blocknr, false);
	if (serial)
		mutex_unlock(&f->rc->flight_io_lock);
	complete(&f->done);
}

/* The constructor: the second stage's slots (dmr_io_init() gave their buffers). */
void dmr_write_init(struct dmr_target *rc)
{
	unsigned int i;

	mutex_init(&rc->flight_io_lock);

	for (i = 0; i < DMR_FLIGHT_SLOTS; i++) {
		struct dmr_flight *f = &rc->flight[i];

		f->rc = rc;
		INIT_WORK(&f->work, dmr_flight_fn);
		init_completion(&f->done);
		init_completion(&f->csummed);
		f->segment = DMR_NO_SEGMENT;
	}
}

/*
 * Give large segment @f's data checksum to its record, once: wait until
 * the second stage computed it, and put it in the cold head's open unit,
 * which records the segment (dmr_write_large()).  Called for every
 * pending slot before that unit closes (dmr_large_csums()) and when the
 * worker reaps the slot, whichever comes first; so the unit is still the
 * one that took the record, and it is never closed, hence never written,
 * with a record missing its checksum (replay would take the segment for
 * a torn write and stop there).
 */
static int dmr_large_csum_give(struct dmr_target *rc, struct dmr_flight *f)
{
	struct dmr_head *h = &rc->heads[DMR_HEAD_COLD];

	if (!f->large || f->csum_given)
		return 0;
	wait_for_completion(&f->csummed);
	f->csum_given = true;
	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return 0;	/* nothing is closed or written any more */
	if (WARN_ON_ONCE(!h->unit_open ||
			 !dmr_unit_set_extent_csum(h->unit, f->segment, f->csum))) {
		dmr_fail(rc, -EIO, "large segment without its record");
		return -EIO;
	}
	return 0;
}

/* Before the cold head's unit closes: every pending large segment's checksum. */
static int dmr_large_csums(struct dmr_target *rc)
{
	unsigned int i;
	int r = 0;

	for (i = 0; i < DMR_FLIGHT_SLOTS && !r; i++)
		if (rc->flight[i].pending)
			r = dmr_large_csum_give(rc, &rc->flight[i]);
	return r;
}

/*
 * Wait until slot @f's segment is on the device.  Its blocks are then read
 * from the device again, and its buffer is free for the next segment.  If
 * the write failed, the target goes to failed mode, which never seals
 * again, and the segment's blocks go on being read from the buffer: the
 * device does not hold them.  A large segment's checksum goes to its
 * record if it has not yet, and to its segment entry before the segment
 * leaves memory: GC takes no segment in memory (DMR_SEG_GC_MASK), and a
 * checkpoint reaps every slot before it writes the segment table
 * (dmr_flush_all()), so neither sees the entry without it.
 */
static int dmr_flight_reap(struct dmr_target *rc, struct dmr_flight *f)
{
	struct dmr_seg *s;
	int r;

	if (!f->pending)
		return 0;
	wait_for_completion_io(&f->done);
	f->pending = false;
	if (f->error) {
		dmr_fail(rc, f->error, "log write");
		return f->error;
	}
	r = dmr_large_csum_give(rc, f);
	if (r)
		return r;
	spin_lock(&rc->map_lock);
	if (!WARN_ON_ONCE(f->segment == DMR_NO_SEGMENT)) {
		s = &rc->map.segs[f->segment];
		if (f->large && (s->flags & DMR_SEG_LARGE))
			s->csum = f->csum;
		dmr_seg_set_mem(&rc->map, f->segment, false);
	}
	f->segment = DMR_NO_SEGMENT;
	spin_unlock(&rc->map_lock);
	return 0;
}

/*
 * Hand slot @f (reaped, its buffer filled) to the second stage: blocks
 * [@off, @off + @nr) of its buffer go to device block @blocknr, the units
 * in [@off, @units_end) checksummed first, and with @large (a large
 * segment, no units) the data checksum computed first.  Its segment is
 * @f->segment, read from the buffer until the worker reaps the write.
 */
static void dmr_flight_go(struct dmr_target *rc, struct dmr_flight *f, u32 off,
			  u32 units_end, u32 nr, u64 blocknr, bool large)
{
	f->off = off;
	f->units_end = units_end;
	f->nr = nr;
	f->blocknr = blocknr;
	f->large = large;
	f->csum_given = false;
	reinit_completion(&f->done);
	reinit_completion(&f->csummed);
	f->pending = true;
	rc->flight_next = (rc->flight_next + 1) % DMR_FLIGHT_SLOTS;
	if (unlikely(dmr_fault_take(&dmr_fault_flight_fail))) {
		f->error = -EIO;	/* the test hook: not written */
		f->csum = 0;		/* (the target fails at the reap) */
		complete(&f->csummed);
		complete(&f->done);
	} else {
		queue_work(rc->flight_wq, &f->work);
	}
}

/* Rule 3's invariant: is any segment still in the second stage? */
static bool dmr_flight_busy(const struct dmr_target *rc)
{
	unsigned int i;

	for (i = 0; i < DMR_FLIGHT_SLOTS; i++)
		if (rc->flight[i].pending)
			return true;
	return false;
}

/* Reap, without waiting, every slot whose write has completed. */
static int dmr_flight_reap_done(struct dmr_target *rc)
{
	unsigned int i;
	int r = 0;

	for (i = 0; i < DMR_FLIGHT_SLOTS && !r; i++) {
		struct dmr_flight *f = &rc->flight[i];

		if (f->pending && completion_done(&f->done))
			r = dmr_flight_reap(rc, f);
	}
	return r;
}

/**
 * dmr_flight_wait() - wait until every segment in flight is on the device
 * @rc: target; called by the worker, or with the worker stopped
 *
 * Reaps the slots oldest first.
 *
 * Return: 0 or the first write error (the target is then in failed mode).
 */
int dmr_flight_wait(struct dmr_target *rc)
{
	unsigned int i;
	int r = 0, e;

	for (i = 0; i < DMR_FLIGHT_SLOTS; i++) {
		e = dmr_flight_reap(rc, &rc->flight[(rc->flight_next + i) %
						     DMR_FLIGHT_SLOTS]);
		r = r ?: e;
	}
	return r;
}

/**
 * dmr_head_enter() - a head starts on a segment (under map_lock)
 * @rc: target
 * @h: the head
 * @seg: the segment, reserved for it
 *
 * Its blocks are read from the head's buffer from now on.
 */
void dmr_head_enter(struct dmr_target *rc, struct dmr_head *h, u32 seg)
{
	h->pos.segment = seg;
	h->pos.offset = 0;
	h->pos.next_segment = DMR_NO_SEGMENT;
	h->seg_written = 0;
	h->padded = 0;
	h->unit_open = false;
	dmr_seg_open(&rc->map, seg, rc->seq + 1);
	dmr_seg_set_head(&rc->map.segs[seg], h - rc->heads);
	dmr_seg_set_mem(&rc->map, seg, true);
}

/*
 * Close a head's open unit: its summary is encoded in the segment buffer
 * in front of its data (the checksums are added when it is written) and
 * the head's position moves past it.  It takes the next sequence number.
 */
static void dmr_close_unit(struct dmr_target *rc, struct dmr_head *h)
{
	struct dmr_unit *u = h->unit;
	u32 off = h->pos.offset;

	u->seq = rc->seq + 1;
	u->blocknr = dmr_seg_block(rc, h->pos.segment, off);
	u->next_segment = h->pos.next_segment;
	dmr_unit_encode_body(u, rc->sb.uuid,
			     (u8 *)h->buf + (size_t)off * DMR_BLOCK_SIZE);
	rc->seq = u->seq;
	h->pos.offset = h->wp;
	h->unit_open = false;
}

/*
 * dmr_seal(), and with @fua (only with @sync) the write, if any, carries
 * REQ_PREFLUSH | REQ_FUA (dmr_flush_carrier()).
 */
static int __dmr_seal(struct dmr_target *rc, struct dmr_head *h, bool sync,
		      bool fua);
static int dmr_seg_leave(struct dmr_target *rc, struct dmr_head *h,
			 struct dmr_flight *f);

/**
 * dmr_seal() - close a head's open unit and write what must be written
 * @rc: target
 * @h: the head
 * @sync: write every closed unit of the head now, and wait (a flush)
 *
 * dmr_seal_action() decides: a closed unit waits in the buffer until its
 * segment is done (then the whole segment is handed to the second stage
 * and the head goes on in its reserved next segment at once), or until a
 * flush, which writes every closed unit of the segment synchronously.
 * A seal that writes (or is for a flush) first waits for the second stage
 * (rule 3); one that only closes the unit does not.
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
int dmr_seal(struct dmr_target *rc, struct dmr_head *h, bool sync)
{
	return __dmr_seal(rc, h, sync, false);
}

static int __dmr_seal(struct dmr_target *rc, struct dmr_head *h, bool sync,
		      bool fua)
{
	u32 seg = h->pos.segment, from = h->seg_written, nr, stop;
	struct dmr_flight *f = NULL;
	enum dmr_seal_action act;
	bool done;
	int r;

	/*
	 * Nothing is sealed or written once the target failed: a unit
	 * numbered after a write that failed (a hole replay stops at) would
	 * be written for nothing, and a flush after it would acknowledge
	 * data the next load drops (dmr_flight_reap() reports a failed
	 * write only once, to whoever reaped it).
	 */
	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return rc->first_error ?: -EIO;
	if (h->unit_open && (h->unit->nr_blocks || h->unit->nr_discards ||
			     h->unit->nr_extents)) {
		/* its records' checksums, from the second stage */
		r = h->unit->nr_extents ? dmr_large_csums(rc) : 0;
		if (r)
			return r;
		dmr_close_unit(rc, h);
	}
	h->unit_open = false;
	nr = h->pos.offset - from;
	done = seg != DMR_NO_SEGMENT && dmr_seg_done(h->pos.offset, dmr_seg_blocks(rc));
	act = dmr_seal_action(sync, nr, done);
	if (act == DMR_SEAL_NONE)
		return 0;	/* nothing written: the second stage may go on */
	/*
	 * Rule 3: a flush, and the synchronous write that goes with it, come
	 * after every segment in flight is written.  A done segment only
	 * needs a free slot: the oldest, reaped if still busy.
	 */
	if (act == DMR_SEAL_FLIGHT) {
		f = &rc->flight[rc->flight_next];
		r = dmr_flight_reap_done(rc) ?: dmr_flight_reap(rc, f);
	} else {
		r = dmr_flight_wait(rc);
		if (!r && WARN_ON_ONCE(dmr_flight_busy(rc))) {
			dmr_fail(rc, -EIO, "flush with a segment in flight");
			r = -EIO;
		}
	}
	if (r || act == DMR_SEAL_FLUSH)
		return r;	/* a flush is the caller's (dmr_flush_all()) */
	/* rule 9: a done segment is left for a reserved one; checked first */
	if (done && WARN_ON_ONCE(h->pos.next_segment == DMR_NO_SEGMENT)) {
		dmr_fail(rc, -EIO, "log head without a next segment");
		return -EIO;
	}
	/* no stripe left part written: no read-modify-write below (goal 3) */
	stop = dmr_stripe_pad(h->pos.offset, h->padded,
			      rc->opts.no_stripe_fill ? 0 : rc->sb.stripe_blocks,
			      dmr_seg_blocks(rc));
	memset((u8 *)h->buf + (size_t)h->pos.offset * DMR_BLOCK_SIZE, 0,
	       (size_t)(stop - h->pos.offset) * DMR_BLOCK_SIZE);
	h->padded = max(h->padded, stop);
	if (act == DMR_SEAL_FLIGHT) {
		/* the segment is done: the head fills the next in another buffer */
		swap(h->buf, f->buf);
		dmr_flight_go(rc, f, from, h->pos.offset, stop - from,
			      dmr_seg_block(rc, seg, from), false);
	} else {
		r = dmr_write_units(rc, h->buf, from, h->pos.offset, stop,
				    dmr_seg_block(rc, seg, from), fua);
		if (r) {
			dmr_fail(rc, r, "log write");
			return r;
		}
		if (!done)
			atomic64_inc(&rc->stats.short_units);
	}
	h->seg_written = h->pos.offset;
	atomic64_add(nr, &rc->stats.device_blocks);
	rc->total_log += nr;
	if (!done)
		return 0;
	return dmr_seg_leave(rc, h, f);
}

/*
 * Head @h's segment is done and written, or handed to second-stage slot
 * @f (NULL if written): seal it and go on in the segment reserved.
 */
static int dmr_seg_leave(struct dmr_target *rc, struct dmr_head *h,
			 struct dmr_flight *f)
{
	u32 seg = h->pos.segment, next = h->pos.next_segment;

	/* __dmr_seal() checks before handing @f over */
	if (WARN_ON_ONCE(next == DMR_NO_SEGMENT)) {
		dmr_fail(rc, -EIO, "log head without a next segment");
		return -EIO;
	}
	spin_lock(&rc->map_lock);
	if (f)
		f->segment = seg;	/* still read from the slot's buffer */
	else
		dmr_seg_set_mem(&rc->map, seg, false);
	dmr_seg_seal(&rc->map, seg);
	dmr_head_enter(rc, h, next);
	spin_unlock(&rc->map_lock);
	return 0;
}

/**
 * dmr_flush_all() - write every head's closed units, then flush
 * @rc: target
 * @flush_device: make them durable (false: the caller's next write
 *	carries a flush)
 *
 * Units of all heads share one sequence and replay stops at the first one
 * missing, so a flush must write every head, not only the one holding the
 * request's data (rule 1).  The heads are written one after another, each
 * write waited for, and the last one that writes anything carries the
 * flush (REQ_PREFLUSH | REQ_FUA, dmr_flush_carrier()); if none writes, a
 * plain device flush is issued.  Either way, when this returns 0 every
 * unit closed so far, and the second stage's segment before them, is on
 * stable media.
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
int dmr_flush_all(struct dmr_target *rc, bool flush_device)
{
	bool unwritten[DMR_NR_HEADS];
	unsigned int i;
	int carrier = -1, r;

	/* a failed target flushes nothing: every waiting flush fails */
	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return rc->first_error ?: -EIO;
	if (flush_device) {
		for (i = 0; i < DMR_NR_HEADS; i++) {
			struct dmr_head *h = &rc->heads[i];

			unwritten[i] = dmr_head_unwritten(h->unit_open, h->unit,
							  h->pos.offset, h->seg_written);
		}
		carrier = dmr_flush_carrier(unwritten, DMR_NR_HEADS);
	}
	for (i = 0; i < DMR_NR_HEADS; i++) {
		r = __dmr_seal(rc, &rc->heads[i], true, carrier == (int)i);
		if (r)
			return r;
	}
	if (!flush_device)
		return 0;
	if (carrier < 0) {
		r = blkdev_issue_flush(rc->dev->bdev);
		if (r) {
			dmr_fail(rc, r, "device flush");
			return r;
		}
	}
	atomic64_inc(&rc->stats.device_flushes);
	/* every unit closed so far is durable: the reuse rule counts this */
	spin_lock(&rc->map_lock);
	dmr_map_flush_done(&rc->map);
	spin_unlock(&rc->map_lock);
	return 0;
}

/*
 * Reserve the segment a head goes on in.  A user head that may not take
 * one (the throttle, dmr_head_may_alloc()) returns DMR_NO_ROOM: its
 * request goes back to the worker, which runs urgent GC until there is
 * room (DMR_NEED_ROOM).  GC's heads never wait for a user write: with no
 * free segment at all GC cannot go on.
 */
static int dmr_reserve_next(struct dmr_target *rc, unsigned int hid)
{
	struct dmr_head *h = &rc->heads[hid];
	u32 seg;

	if (!dmr_head_may_alloc(&rc->gc, hid, rc->map.nr_free)) {
		if (!dmr_head_is_gc(hid))
			return DMR_NO_ROOM;
		DMERR_LIMIT("%s: GC has no free segment", rc->dev->name);
		return -ENOSPC;
	}
	spin_lock(&rc->map_lock);
	seg = dmr_seg_alloc(&rc->map);
	spin_unlock(&rc->map_lock);
	if (WARN_ON_ONCE(seg == DMR_NO_SEGMENT))
		return -ENOSPC;
	h->pos.next_segment = seg;
	return 0;
}

/**
 * dmr_head_room() - make a head ready to take data
 * @rc: target
 * @hid: the head (enum dmr_head_id)
 * @want: blocks the caller has (0 for a discard or a large segment's
 *	record)
 * @n: set to the blocks the open unit takes now (at least 1 if @want)
 *
 * Opens a unit if none can take a block (sealing a full one), and
 * reserves the next segment first if taking @n blocks leaves the segment
 * done (rule 9).
 *
 * Return: 0, DMR_NO_ROOM if a user head must wait for GC to free a
 * segment (its request returns to the worker: dmr_reserve_next()), or a
 * negative errno.
 */
int dmr_head_room(struct dmr_target *rc, unsigned int hid, u32 want, u32 *n)
{
	struct dmr_head *h = &rc->heads[hid];
	u32 seg_blocks = dmr_seg_blocks(rc);
	int r;

	for (;;) {
		/* data blocks and large segments' records in units of their own */
		bool takes = want ? dmr_unit_takes_data(h->unit_open, h->unit, h->wp, seg_blocks) :
			     dmr_unit_takes_block(h->unit_open, h->unit, h->wp, seg_blocks);

		if (!takes) {
			if (h->unit_open) {
				r = dmr_seal(rc, h, false);
				if (r)
					return r;
				continue;
			}
			dmr_unit_reset(h->unit, dmr_unit_flags(dmr_head_is_gc(hid),
							       rc->sb.geo.wide));
			h->unit_open = true;
			h->wp = h->pos.offset + 1;
		}
		*n = want ? dmr_write_chunk(h->unit, h->wp, seg_blocks, want) : 0;
		if (!dmr_head_needs_next(h->pos.next_segment, h->wp + *n, seg_blocks))
			return 0;
		r = dmr_reserve_next(rc, hid);
		if (r)
			return r;
	}
}

/* The logical block where @bio's data starts. */
u64 dmr_bio_lba(struct dmr_target *rc, struct bio *bio)
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

/*
 * Common start of a write or discard: mode, rule 7.  The worker marks
 * the clean checkpoint not clean before a request that changes anything
 * (DMR_WORKER_MARK_DIRTY), so a clean one here is a bug: the log is not
 * written under it.
 */
static int dmr_write_begin(struct dmr_target *rc, bool changes)
{
	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return -EIO;
	if (changes && WARN_ON_ONCE(rc->ckpt_clean_on_disk))
		return -EIO;	/* rule 7 */
	return 0;
}

/*
 * Rule 10: before head @hid takes blocks [@lba, @lba + @n), close any other
 * user head's open unit that holds one of their current copies, or
 * records the large segment holding it (dmr_unit_records()), so that the
 * unit holding the older copy is numbered, hence replayed, first.  @hid
 * DMR_NR_HEADS: every user head's (a large segment, which its unit
 * applies before the unit's data blocks: dmr_write_large()).
 * (GC's heads need no such care: a relocation applies only where the
 * map still points at its source, and a block moved twice left a sealed
 * segment, whose units were all numbered before the second move's.)
 */
static int dmr_order_before(struct dmr_target *rc, unsigned int hid, u64 lba, u32 n)
{
	u32 seg_blocks = dmr_seg_blocks(rc), i;
	unsigned int g;
	int r;

	for (g = DMR_HEAD_HOT; g <= DMR_HEAD_COLD; g++) {
		struct dmr_head *o = &rc->heads[g];

		if (g != hid && dmr_unit_records(o->unit_open, o->unit, seg_blocks, lba, n)) {
			r = dmr_seal(rc, o, false);
			if (r)
				return r;
		}
	}
	for (i = 0; i < n; i++) {
		u64 e = dmr_map_get(&rc->map, lba + i);

		if (e == DMR_UNMAPPED)
			continue;
		for (g = DMR_HEAD_HOT; g <= DMR_HEAD_COLD; g++) {
			struct dmr_head *o = &rc->heads[g];

			if (g == hid || !dmr_copy_in_open_unit(e, seg_blocks, o->unit_open,
							       o->pos.segment,
							       o->pos.offset, o->wp))
				continue;
			r = dmr_seal(rc, o, false);
			if (r)
				return r;
		}
	}
	return 0;
}

/*
 * Open a unit of the cold head that @needs_seal accepts (a discard's, or
 * a large segment's record: dmr_discard_needs_seal(),
 * dmr_extent_needs_seal()), sealing the open one first if it does not.
 * Return: 0, DMR_NO_ROOM (dmr_head_room()) or a negative errno.
 */
static int dmr_cold_unit(struct dmr_target *rc,
			 bool (*needs_seal)(bool unit_open, const struct dmr_unit *u))
{
	struct dmr_head *h = &rc->heads[DMR_HEAD_COLD];
	u32 n;
	int r;

	for (;;) {
		if (needs_seal(h->unit_open, h->unit)) {
			r = dmr_seal(rc, h, false);
			if (r)
				return r;
		}
		r = dmr_head_room(rc, DMR_HEAD_COLD, 0, &n);
		if (r)
			return r;
		/* opening a unit may have sealed a full one: check again */
		if (!needs_seal(h->unit_open, h->unit))
			return 0;
	}
}

/**
 * dmr_write_large() - the next segment of a write into a segment of its own
 * @rc: target
 * @bio: the write, at logical block @lba, with a segment's blocks or more
 *	left; advanced past them
 * @lba: a multiple of the segment size (dmr_large_split())
 *
 * Issue 41's goal 1: the blocks go whole into a free segment, from its
 * block 0 and with no summary (a large segment, format 5), written by the
 * second stage as a done head segment is, and read from its slot's
 * buffer meanwhile; the cold head's open unit records it (its first
 * logical block, the segment, the data's checksum: DMR_UNIT_EXTENTS).
 * The second stage computes that checksum, on another CPU, before its
 * write (a megabyte's crc32c was three quarters of the writer's CPU
 * here); the record gets it before its unit closes, the segment's entry
 * when the slot is reaped (dmr_large_csum_give(), dmr_flight_reap()).
 * Overwritten, it empties whole, and GC never moves it; a stripe of it
 * is never written twice.
 *
 * Crash ordering.  The unit that records it is written after the segment
 * was handed to the second stage, with no flush between them, so either
 * may reach the device first; replay checks the segment's data against
 * the record and, if they differ, stops at that unit as at a torn one
 * (rule 2).  A flush waits for the second stage before it writes a unit
 * (rule 3), so the segment is durable before any flush that covers its
 * record completes.  Rule 10: the record applies after the unit's
 * discards and before its data blocks (dmr_unit_apply()), so it goes
 * into a unit with no data block yet, and every user head's open unit
 * with a current copy of one of its blocks, or a record of one, is
 * closed first; a later write of them to the hot head closes this unit
 * first (dmr_order_before()).  The reuse rule holds as for any segment:
 * it is sealed at once, and the checkpoints it counts come after the
 * unit that records it is written (a checkpoint writes every head's
 * units first).
 *
 * Return: 0, DMR_NO_ROOM before anything changed (the throttle: the
 * request returns to the worker), or a negative errno.
 */
static int dmr_write_large(struct dmr_target *rc, struct bio *bio, u64 lba)
{
	struct dmr_head *h = &rc->heads[DMR_HEAD_COLD];
	u32 seg_blocks = dmr_seg_blocks(rc), seg, b;
	struct dmr_flight *f;
	struct dmr_unit *u;
	u64 pba;
	int r;

	r = dmr_order_before(rc, DMR_NR_HEADS, lba, seg_blocks) ?:
	    dmr_cold_unit(rc, dmr_extent_needs_seal);
	if (r)
		return r;
	if (!dmr_head_may_alloc(&rc->gc, DMR_HEAD_COLD, rc->map.nr_free))
		return DMR_NO_ROOM;
	/* the map's pages for its blocks, before the lock (may sleep) */
	r = dmr_map_reserve(&rc->map, lba, seg_blocks);
	if (r)
		return r;
	/* a slot of the second stage: the oldest, reaped if still busy */
	f = &rc->flight[rc->flight_next];
	r = dmr_flight_reap_done(rc) ?: dmr_flight_reap(rc, f);
	if (r)
		return r;
	spin_lock(&rc->map_lock);
	seg = dmr_seg_alloc(&rc->map);
	spin_unlock(&rc->map_lock);
	if (WARN_ON_ONCE(seg == DMR_NO_SEGMENT))
		return -ENOSPC;
	dmr_copy_from_bio(bio, f->buf, seg_blocks << DMR_BLOCK_SHIFT);
	pba = dmr_seg_pba(&rc->map, seg, 0);
	spin_lock(&rc->map_lock);
	dmr_seg_open(&rc->map, seg, rc->seq + 1);
	dmr_seg_set_mem(&rc->map, seg, true);	/* read from @f's buffer */
	f->segment = seg;
	spin_unlock(&rc->map_lock);
	/* as a discard unmaps: the lock held for a step at a time */
	for (b = 0; b < seg_blocks; ) {
		u32 end = b + dmr_unmap_step(seg_blocks - b);

		spin_lock(&rc->map_lock);
		for (; b < end; b++)
			dmr_map_set(&rc->map, lba + b, pba + b);
		spin_unlock(&rc->map_lock);
		cond_resched();
	}
	spin_lock(&rc->map_lock);
	dmr_seg_large(&rc->map, seg, lba, 0);	/* its checksum: at the reap */
	dmr_seg_seal(&rc->map, seg);
	spin_unlock(&rc->map_lock);
	u = h->unit;
	u->ext_lba[u->nr_extents] = lba;
	u->ext_seg[u->nr_extents] = seg;
	u->ext_csum[u->nr_extents] = 0;	/* dmr_large_csum_give() */
	u->nr_extents++;
	dmr_flight_go(rc, f, 0, 0, seg_blocks, dmr_seg_block(rc, seg, 0), true);
	atomic64_add(seg_blocks, &rc->stats.user_blocks);
	atomic64_add(seg_blocks, &rc->stats.device_blocks);
	atomic64_inc(&rc->stats.large_segments);
	rc->total_user += seg_blocks;
	rc->total_log += seg_blocks;
	return 0;
}

/*
 * A write, or an empty flush.  A REQ_PREFLUSH or REQ_FUA request is not
 * completed here: once its data is in its head it waits in @commit_bios
 * for the group commit (dmr_group_commit()), whose flush makes everything
 * closed before it durable, its own data included (rule 1).  Its preflush
 * needs no flush of its own first: replay applies a prefix of the log
 * (rule 2), so its data is never found on the device without what was
 * written before it, and the request completes only after the flush.
 *
 * The whole segment-aligned segments of a write (dmr_large_split()) go
 * into segments of their own (dmr_write_large()) unless the table says
 * no_large_writes; the rest goes to a head.
 *
 * A write that finds no room (DMR_NO_ROOM) returns to the worker with
 * the blocks it wrote so far in its head and the bio advanced past them;
 * when resumed it goes on from there, as a new request of what is left
 * (chosen a head again by its first block).
 *
 * Return: DMR_BIO_ENDED, or DMR_BIO_NO_ROOM (the worker holds it).
 */
enum dmr_bio_result dmr_do_write(struct dmr_target *rc, struct bio *bio)
{
	struct dmr_per_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	u32 seg_blocks = dmr_seg_blocks(rc);
	u64 lba = dmr_bio_lba(rc, bio);
	unsigned int hid;
	struct dmr_head *h;
	int r;

	r = dmr_write_begin(rc, bio->bi_iter.bi_size);
	if (r)
		goto out;
	if (!pb->begun && (bio->bi_opf & (REQ_PREFLUSH | REQ_FUA)))
		atomic64_inc(&rc->stats.flushes);
	pb->begun = true;
	if (!bio->bi_iter.bi_size)
		goto done;
	/* its map pages, read back if they were out (nothing leaves meanwhile) */
	r = dmr_map_need(rc, lba, bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT);
	if (r)
		goto out;
	/* the whole request goes to one head, chosen by its first block */
	hid = dmr_temp_classify(&rc->temp, &rc->map, lba, dmr_map_get(&rc->map, lba), rc->seq);
	h = &rc->heads[hid];
	while (bio->bi_iter.bi_size) {
		u32 n, i, want = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT;
		u64 pba, first, big;

		big = rc->opts.no_large_writes ? 0 :
		      dmr_large_split(lba, want, seg_blocks, &first);
		if (big && first == lba) {
			r = dmr_write_large(rc, bio, lba);
			if (r == DMR_NO_ROOM)
				return DMR_BIO_NO_ROOM;
			if (r)
				goto out;
			lba += seg_blocks;
			continue;
		}
		if (big)
			want = first - lba;	/* up to the large part */
		r = dmr_head_room(rc, hid, want, &n);
		if (r == DMR_NO_ROOM)
			return DMR_BIO_NO_ROOM;
		if (r)
			goto out;
		r = dmr_order_before(rc, hid, lba, n);
		if (r)
			goto out;
		/* the map's pages for them, before the lock (may sleep) */
		r = dmr_map_reserve(&rc->map, lba, n);
		if (r)
			goto out;
		dmr_copy_from_bio(bio, (u8 *)h->buf + (size_t)h->wp * DMR_BLOCK_SIZE,
				  n << DMR_BLOCK_SHIFT);
		pba = dmr_seg_pba(&rc->map, h->pos.segment, h->wp);
		spin_lock(&rc->map_lock);
		for (i = 0; i < n; i++) {
			dmr_map_set(&rc->map, lba + i, pba + i);
			h->unit->lba[h->unit->nr_blocks++] = lba + i;
		}
		spin_unlock(&rc->map_lock);
		h->wp += n;
		lba += n;
		atomic64_add(n, &rc->stats.user_blocks);
		rc->total_user += n;
	}
	if (dmr_seal_after_write(h->unit_open, h->wp, seg_blocks))
		r = dmr_seal(rc, h, false);
	if (r)
		goto out;
done:
	if (bio->bi_opf & (REQ_PREFLUSH | REQ_FUA)) {
		/* the oldest waiter: its arrival starts the commit's bound */
		if (!rc->nr_commit)
			rc->commit_since = pb->arrived;
		bio_list_add(&rc->commit_bios, bio);
		rc->nr_commit++;
		return DMR_BIO_ENDED;
	}
out:
	bio->bi_status = errno_to_blk_status(r);
	bio_endio(bio);
	return DMR_BIO_ENDED;
}

/*
 * A discard (or write of zeroes), one piece per call: its pieces are
 * what the map cache allows between trims (dmr_discard_piece()), and the
 * worker trims the cache between them, and writes the checkpoint that
 * needs, while it holds the discard (DMR_BIO_MORE).  The cold head's
 * unit stays open across the pieces (another request's seal or a
 * checkpoint may close it: the next piece goes into a new one), and is
 * closed after the last one.  A piece that finds no room returns to the
 * worker before it changes anything, and is done again when resumed.
 *
 * Return: DMR_BIO_ENDED, DMR_BIO_MORE or DMR_BIO_NO_ROOM (the worker
 * holds it for the last two).
 */
enum dmr_bio_result dmr_do_discard(struct dmr_target *rc, struct bio *bio)
{
	struct dmr_per_bio *pb = dm_per_bio_data(bio, sizeof(*pb));
	struct dmr_head *h = &rc->heads[DMR_HEAD_COLD];
	u64 lba = dmr_bio_lba(rc, bio), b;
	u64 nr = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT;
	u32 piece = dmr_discard_piece(rc->pc.cap, rc->map.page_shift);
	u32 count = min_t(u64, nr, piece);
	struct dmr_unit *u;
	u64 got;
	int r;

	if (!pb->begun)
		atomic64_inc(&rc->stats.discards);
	pb->begun = true;
	r = dmr_write_begin(rc, nr);
	if (r || !nr)
		goto out;
	/*
	 * Its map pages, read back if they were out; short of memory, the
	 * piece ends where the pages it got end (dmr_need_waits())
	 */
	r = dmr_map_need_part(rc, lba, count, false, &got);
	if (r)
		goto out;
	count = got;
	/* rule 10: a copy in the hot head's open unit is numbered first */
	r = dmr_order_before(rc, DMR_HEAD_COLD, lba, count);
	if (r)
		goto out;
	r = dmr_cold_unit(rc, dmr_discard_needs_seal);
	if (r == DMR_NO_ROOM)
		return DMR_BIO_NO_ROOM;
	if (r)
		goto out;
	/* the unit open now, after any seal: never one sealed before */
	u = h->unit;
	u->discard[u->nr_discards][0] = lba;
	u->discard[u->nr_discards][1] = count;
	u->nr_discards++;
	/*
	 * @map_lock is a spin lock (status and messages take it): held for
	 * at most DMR_UNMAP_STEP entries at a time, since a piece holds up
	 * to 2^20 blocks and preemption is off while it is held, with a
	 * chance to reschedule between the steps.  Only the worker changes
	 * the map, so the extent is consistent between steps.
	 */
	for (b = 0; b < count; ) {
		u64 end = b + dmr_unmap_step(count - b);

		spin_lock(&rc->map_lock);
		for (; b < end; b++)
			dmr_map_unmap(&rc->map, lba + b);
		spin_unlock(&rc->map_lock);
		cond_resched();
	}
	bio_advance(bio, count << DMR_BLOCK_SHIFT);
	/*
	 * map_cache: the worker trims the pages this piece unmapped back to
	 * the cache's size before the next: here, where the piece is in
	 * the map and in its unit, a checkpoint it needs covers both or
	 * neither.
	 */
	if (bio->bi_iter.bi_size)
		return DMR_BIO_MORE;
	/*
	 * Rule 10 for discards: the unit is closed now, so a later write of
	 * these blocks, to any head, is numbered after it.
	 */
	r = dmr_seal(rc, h, false);
out:
	bio->bi_status = errno_to_blk_status(r);
	bio_endio(bio);
	return DMR_BIO_ENDED;
}
