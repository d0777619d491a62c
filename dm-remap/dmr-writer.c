// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap writer and loader decisions (see dmr-writer.h).
 *
 * Pure code: the module, KUnit and the userspace tools run exactly this.
 * No locking: every function works on what the caller passes.
 */
#include "dmr-writer.h"

/**
 * dmr_seg_done() - is a segment left once its units end at @end?
 * @end: block after the last unit closed in the segment
 * @seg_blocks: blocks per segment
 *
 * The same rule as dmr_log_advance(): a unit needs a summary and at least
 * one data block, so a segment with fewer than two free blocks is done.
 */
bool dmr_seg_done(u32 end, u32 seg_blocks)
{
	return end + 2 > seg_blocks;
}

/**
 * dmr_head_next_free() - the next block a head writes in its segment
 * @segment: the head's segment (DMR_NO_SEGMENT if none)
 * @offset: where its next unit's summary goes
 * @unit_open: it has a unit open
 * @wp: the open unit's write pointer
 * @seg_blocks: blocks per segment
 *
 * What dmr_gc_segments_needed() takes as the room a GC head has left.
 *
 * Return: @wp with a unit open, else @offset; @seg_blocks (no room) with
 * no segment or one that is done.
 */
u32 dmr_head_next_free(u32 segment, u32 offset, bool unit_open, u32 wp, u32 seg_blocks)
{
	u32 next = unit_open ? wp : offset;

	if (segment == DMR_NO_SEGMENT || dmr_seg_done(next, seg_blocks))
		return seg_blocks;
	return next;
}

/**
 * dmr_seal_action() - how to write what sealing the open unit closed
 * @flush: the seal is for a flush or FUA: everything must be durable
 * @unwritten: blocks of the open segment closed but not yet written
 *	(the units closed since the last write, the one just closed included)
 * @seg_done: the open segment is done (dmr_seg_done())
 *
 * A segment is written whole, once it is done, by the second stage, so it
 * goes down as one segment-aligned write however many units (at most 1008
 * data blocks each) it holds.  Only a flush writes a segment piecemeal:
 * all its closed units at once, synchronously, with the flush.
 *
 * Return: the action.
 */
enum dmr_seal_action dmr_seal_action(bool flush, u32 unwritten, bool seg_done)
{
	if (!unwritten)
		return flush ? DMR_SEAL_FLUSH : DMR_SEAL_NONE;
	if (flush)
		return DMR_SEAL_WRITE;
	return seg_done ? DMR_SEAL_FLIGHT : DMR_SEAL_NONE;
}

/**
 * dmr_unit_flags() - the flags a head's next unit starts with
 * @reloc: a GC head's (or the single head's) unit: relocations
 * @wide: the device's log is wide (struct dmr_geometry's @wide)
 *
 * Return: DMR_UNIT_RELOC and DMR_UNIT_WIDE as asked, for dmr_unit_reset().
 */
u32 dmr_unit_flags(bool reloc, bool wide)
{
	return (reloc ? DMR_UNIT_RELOC : 0) | (wide ? DMR_UNIT_WIDE : 0);
}

/**
 * dmr_unit_takes_block() - can the open unit take one more data block?
 * @unit_open: a unit is open
 * @u: the open unit
 * @wp: next free block of the open segment
 * @seg_blocks: blocks per segment
 *
 * Return: false when a unit must be opened (after sealing the open one).
 */
bool dmr_unit_takes_block(bool unit_open, const struct dmr_unit *u, u32 wp,
			  u32 seg_blocks)
{
	return unit_open && wp < seg_blocks &&
	       dmr_unit_room(u, dmr_unit_block_words(u));
}

/**
 * dmr_unit_takes_data() - can the open unit take a write's next data block?
 * @unit_open: a unit is open
 * @u: the open unit
 * @wp: next free block of the open segment
 * @seg_blocks: blocks per segment
 *
 * As dmr_unit_takes_block(), and the unit records no large segment: the
 * writer keeps records and data blocks in units of their own, so that
 * replay asks for the map pages of at most DMR_UNIT_MAX_EXTENTS records
 * or of fewer than a segment's blocks at once, not both
 * (dmr_map_cache_most()).  (Replay still applies a unit holding both,
 * as the first format 5 writer wrote them.)
 *
 * Return: false when a unit must be opened (after sealing the open one).
 */
bool dmr_unit_takes_data(bool unit_open, const struct dmr_unit *u, u32 wp,
			 u32 seg_blocks)
{
	return dmr_unit_takes_block(unit_open, u, wp, seg_blocks) && !u->nr_extents;
}

/**
 * dmr_write_chunk() - how many blocks of a write go into the open unit
 * @u: the open unit, which takes at least one block
 * @wp: next free block of the open segment
 * @seg_blocks: blocks per segment
 * @want: blocks the write still has
 *
 * Return: at least 1, at most @want.
 */
u32 dmr_write_chunk(const struct dmr_unit *u, u32 wp, u32 seg_blocks, u32 want)
{
	u32 n = min(want, seg_blocks - wp);
	u32 bw = dmr_unit_block_words(u);

	return min(n, (DMR_SUMMARY_WORDS - dmr_unit_words(u)) / bw);
}

/**
 * dmr_seal_after_write() - seal right after a write was copied in?
 * @unit_open: a unit is open
 * @wp: next free block of the open segment
 * @seg_blocks: blocks per segment
 *
 * A write that filled the segment seals, so the segment goes to the
 * device now rather than at the next write.  (A FUA write waits for the
 * group commit, dmr_group_commit_now(), which seals every head.)
 */
bool dmr_seal_after_write(bool unit_open, u32 wp, u32 seg_blocks)
{
	return unit_open && wp == seg_blocks;
}

/**
 * dmr_group_commit_now() - is the group commit due?
 * @waiting: flush and FUA requests whose data is in the log and that wait
 *	for a device flush
 * @queue_empty: no other request waits for the worker
 * @behind: requests the worker handled since the oldest of them arrived
 *
 * Requests that arrive while the worker copies, writes or flushes queue
 * up behind it, and every flush or FUA among them joins the next commit:
 * one write of each head's closed units and one device flush for all of
 * them.  The commit is made once the queue is empty, so every request
 * that came meanwhile has joined it, once DMR_GROUP_COMMIT_MAX wait, or
 * once DMR_GROUP_COMMIT_BEHIND requests were handled since the oldest
 * waiter arrived: writers at queue depth that never let the queue empty
 * cannot hold a flush back longer than that, counted from its arrival
 * (the requests queued ahead of it included), not from when the worker
 * got to it.
 */
bool dmr_group_commit_now(u32 waiting, bool queue_empty, u32 behind)
{
	return waiting && (queue_empty || waiting >= DMR_GROUP_COMMIT_MAX ||
			   behind >= DMR_GROUP_COMMIT_BEHIND);
}

/**
 * dmr_commit_behind() - dmr_group_commit_now()'s @behind after a request
 * @waiting: flush and FUA requests waiting, the one just handled included
 * @handled: requests the worker handled so far (a count that wraps)
 * @since: @handled when the oldest waiting one arrived (dmr_map())
 *
 * Return: requests handled since the oldest waiter arrived, or 0 with
 * none waiting.
 */
u32 dmr_commit_behind(u32 waiting, u32 handled, u32 since)
{
	return waiting ? handled - since : 0;
}

/**
 * dmr_gc_owed_after_request() - GC steps owed after a request was handled
 * @waiting: flush and FUA requests waiting, the one just handled included
 * @owed: the steps owed before it
 *
 * Each request earns background GC a step after it (dmr_worker_next()),
 * deferred while a flush waits, so that the flush is not delayed; the
 * deferred steps are taken after the commit.  With only flush and FUA
 * writes a flush always waits: without the debt GC would get one step
 * per commit, where a collection takes two, and free space would run
 * down to the urgent GC that stalls writes.
 *
 * Return: the steps owed now.
 */
u32 dmr_gc_owed_after_request(u32 waiting, u32 owed)
{
	return waiting ? owed + 1 : owed;
}

/**
 * dmr_gc_owed_after_step() - GC steps owed after one was taken
 * @owed: the steps owed before it
 * @did: the step did something
 *
 * A step that found nothing to do clears the debt: GC is not behind.
 *
 * Return: the steps owed now.
 */
u32 dmr_gc_owed_after_step(u32 owed, bool did)
{
	return did && owed ? owed - 1 : 0;
}

/*
 * Rule 7: the clean checkpoint is marked not clean before a step that
 * writes the log; a target that cannot write marks nothing (the step
 * then fails on its own).
 */
static bool dmr_worker_dirty_first(const struct dmr_worker_state *s, bool writes)
{
	return writes && s->clean_on_disk && s->mode_write;
}

/*
 * What the mechanisms returned (@need, @held, @ckpt_unfreed) comes before
 * the round, in this order: GC frees what a checkpoint made reusable
 * (a target that cannot write frees nothing: freeing discards);
 * a checkpoint asked for is written (GC's even while stopping, as GC
 * waits for it with a request held; the map cache's not, as the
 * periodic one: postsuspend's clean checkpoint is next); then the held
 * request: urgent GC while it waits for room, else it goes on.  The
 * phase does not move: the round goes on where it was afterwards.
 */
static bool dmr_worker_need(const struct dmr_worker_state *s,
			    enum dmr_worker_step *step)
{
	if (s->ckpt_unfreed && s->mode_write)
		*step = DMR_WORKER_GC_FREE;
	else if (s->mode_write && ((s->need & DMR_NEED_CKPT_GC) ||
				   ((s->need & DMR_NEED_CKPT_CACHE) && !s->stopping)))
		*step = DMR_WORKER_CHECKPOINT_NEEDED;
	else if (s->held && (s->need & DMR_NEED_ROOM))
		*step = DMR_WORKER_GC_URGENT;
	else if (s->held)
		*step = DMR_WORKER_RESUME;
	else
		return false;
	return true;
}

/**
 * dmr_worker_inline_ok() - may a write be handled by its submitter?
 * @s: the state, sampled with the worker's lock held and the batch empty
 * @active: the instance owns the device for writing (rule 8)
 * @gc_idle: a background GC step would find nothing to do
 * @resident: the write's map pages are in memory (nothing to read back)
 *
 * A plain write (no flush, no FUA) whose submitter took the worker's
 * lock is handled in the submitter's context when the worker would do
 * nothing before it and nothing the write needs does I/O of its own:
 * dmr_worker_next(), with it as the batch's only request, would handle
 * it first (no need, no held request, no checkpoint due or asked for,
 * no mark of a clean checkpoint first: rule 7), no flush waits for the
 * group commit (it would take the request's GC step's place), and GC
 * has nothing to do (its step after the request, and the pace of
 * background GC, stay the worker's).  A target that does not write, is
 * stopping, or is not the active instance (rule 8) queues it.
 *
 * Return: true if the submitter handles it.
 */
bool dmr_worker_inline_ok(const struct dmr_worker_state *s, bool active, bool gc_idle,
			  bool resident)
{
	return active && s->mode_write && !s->stopping && !s->ckpt_due && !s->gc_collect_req &&
	       !s->seq_window_full && !s->nr_commit && !s->gc_owed && !s->need &&
	       !s->held && !s->ckpt_unfreed && !s->clean_on_disk && !s->gc_rd_pending &&
	       gc_idle && resident;
}

/**
 * dmr_worker_next() - what the worker does next
 * @s: the state, as the worker sampled it just now
 * @phase: where the worker is in its round (DMR_WORKER_AT_ROUND when it
 *	starts); set to where it will be once the step returned is done
 *
 * First, whatever the phase, what the mechanisms below returned
 * (dmr_worker_need()).  Then a round, each check once and in this order:
 *
 *  1. the periodic checkpoint, if the timer asked for it, then the
 *     gc_collect message's collection, then a checkpoint if the sequence
 *     window is full (a writing target only).  A stopping worker does
 *     none of them: postsuspend's clean checkpoint owns the checkpoint
 *     state, and a timer that fired between dmr_worker_stop()'s cancels
 *     may still queue the worker.
 *  2. If the batch is empty, the queue is taken into it, all at once.
 *  3. The batch's next request is handled.  After it, the group commit
 *     if dmr_group_commit_now() says so with the queue not empty (a
 *     queue that never empties still commits within
 *     DMR_GROUP_COMMIT_BEHIND requests), then one GC step, but only while
 *     no flush waits (it would delay the flush), or once more than
 *     DMR_GC_OWED_MAX steps were deferred so.  The next round begins.
 *  4. With no request at all, the group commit if a flush waits (every
 *     request that came has joined it), and the next round; else one GC
 *     step, and the next round if it did something; else the worker
 *     stops.  So no flush is left waiting when the worker stops.
 *
 * After a group commit, the GC steps deferred while it waited (@gc_owed,
 * dmr_gc_owed_after_request()), one after another until none is owed or
 * one finds nothing to do; then the next round.
 *
 * A step that writes the log (a request that writes, the collection, a
 * GC step with a victim read pending) is preceded by
 * DMR_WORKER_MARK_DIRTY while the newest checkpoint is clean, in the
 * same phase.
 *
 * Return: the step.
 */
enum dmr_worker_step dmr_worker_next(const struct dmr_worker_state *s,
				     enum dmr_worker_phase *phase)
{
	enum dmr_worker_step need;

	if (dmr_worker_need(s, &need))
		return need;
	/* each case returns a step, or moves @phase on and looks again */
	for (;;) {
		switch (*phase) {
		case DMR_WORKER_AT_ROUND:
			*phase = DMR_WORKER_AT_COLLECT;
			if (s->ckpt_due && !s->stopping)
				return DMR_WORKER_CHECKPOINT_DUE;
			break;
		case DMR_WORKER_AT_COLLECT:
			if (!s->gc_collect_req || s->stopping) {
				*phase = DMR_WORKER_AT_WINDOW;
				break;
			}
			if (dmr_worker_dirty_first(s, true))
				return DMR_WORKER_MARK_DIRTY;
			*phase = DMR_WORKER_AT_WINDOW;
			return DMR_WORKER_GC_COLLECT;
		case DMR_WORKER_AT_WINDOW:
			*phase = DMR_WORKER_AT_TAKE;
			if (s->mode_write && !s->stopping && s->seq_window_full)
				return DMR_WORKER_CHECKPOINT_WINDOW;
			break;
		case DMR_WORKER_AT_TAKE:
			*phase = DMR_WORKER_AT_POP;
			if (s->batch_empty)
				return DMR_WORKER_TAKE_QUEUE;
			break;
		case DMR_WORKER_AT_POP:
			if (!s->batch_empty) {
				if (dmr_worker_dirty_first(s, s->next_writes))
					return DMR_WORKER_MARK_DIRTY;
				*phase = DMR_WORKER_AT_REQ_COMMIT;
				return DMR_WORKER_HANDLE_BIO;
			}
			if (dmr_group_commit_now(s->nr_commit, true, s->commit_behind)) {
				*phase = DMR_WORKER_AT_OWED;
				return DMR_WORKER_COMMIT;
			}
			if (dmr_worker_dirty_first(s, s->gc_rd_pending))
				return DMR_WORKER_MARK_DIRTY;
			*phase = DMR_WORKER_AT_GC_TRIED;
			return DMR_WORKER_GC_STEP;
		case DMR_WORKER_AT_GC_TRIED:
			if (!s->gc_did)
				return DMR_WORKER_IDLE;
			*phase = DMR_WORKER_AT_ROUND;
			break;
		case DMR_WORKER_AT_REQ_COMMIT:
			*phase = DMR_WORKER_AT_REQ_GC;
			if (dmr_group_commit_now(s->nr_commit, false, s->commit_behind)) {
				*phase = DMR_WORKER_AT_OWED;
				return DMR_WORKER_COMMIT;
			}
			break;
		case DMR_WORKER_AT_REQ_GC:
			if (s->nr_commit && s->gc_owed <= DMR_GC_OWED_MAX) {
				*phase = DMR_WORKER_AT_ROUND;
				break;
			}
			if (dmr_worker_dirty_first(s, s->gc_rd_pending))
				return DMR_WORKER_MARK_DIRTY;
			*phase = DMR_WORKER_AT_ROUND;
			return DMR_WORKER_GC_STEP;
		case DMR_WORKER_AT_OWED:
			if (!s->gc_owed) {
				*phase = DMR_WORKER_AT_ROUND;
				break;
			}
			if (dmr_worker_dirty_first(s, s->gc_rd_pending))
				return DMR_WORKER_MARK_DIRTY;
			return DMR_WORKER_GC_STEP;
		}
	}
}

/**
 * dmr_message_checkpoint_verdict() - may a checkpoint message run now?
 * @mode: enum dmr_mode
 * @active: the instance owns the device (load to postsuspend)
 * @stopping: the worker is being stopped (postsuspend or destructor)
 *
 * Return: 0, -EROFS (the target does not write), or -EBUSY (suspended or
 * stopping: the last checkpoint is postsuspend's).
 */
int dmr_message_checkpoint_verdict(int mode, bool active, bool stopping)
{
	if (mode != DMR_MODE_WRITE)
		return -EROFS;
	if (!active || stopping)
		return -EBUSY;
	return 0;
}

/**
 * dmr_instance_relation() - what another instance is to one being built
 * @same_bdev: both opened the same block device
 * @same_uuid: their superblocks have the same uuid: the same dm-remap
 *	device, possibly through an alias (a dm-linear slice from block 0,
 *	a second loop device over one image file, a cloned disk)
 * @same_md: both belong to the same mapped device
 * @same_table: both belong to the same table of it
 *
 * An instance of the same dm-remap device (either match) is a table
 * reload only from another table of the same mapped device: the new
 * instance then loads at preresume, after the old one's postsuspend wrote
 * its last checkpoint (rule 8 in dmr-write.c).  Anywhere else (another
 * mapped device, or twice in one table) both would go live on one log,
 * and the new one is refused.
 *
 * Return: the relation.
 */
enum dmr_instance_rel dmr_instance_relation(bool same_bdev, bool same_uuid,
					    bool same_md, bool same_table)
{
	if (!same_bdev && !same_uuid)
		return DMR_INSTANCE_UNRELATED;
	if (same_md && !same_table)
		return DMR_INSTANCE_RELOAD;
	return DMR_INSTANCE_REFUSE;
}

/**
 * dmr_head_unwritten() - does a flush have to write something of a head?
 * @unit_open: the head has an open unit
 * @u: that unit
 * @offset: the head's next unit position in its segment
 * @written: blocks of the segment written (or in flight)
 *
 * True if a closed unit waits in the buffer, or the open unit holds
 * blocks or discards (sealing closes it).
 */
bool dmr_head_unwritten(bool unit_open, const struct dmr_unit *u, u32 offset,
			u32 written)
{
	return offset > written ||
	       (unit_open && (u->nr_blocks || u->nr_discards || u->nr_extents));
}

/**
 * dmr_flush_carrier() - which head's write carries a flush's PREFLUSH|FUA
 * @unwritten: per head, dmr_head_unwritten()
 * @nr: heads
 *
 * A flush writes the heads in order, each write waited for.  The last one
 * that writes anything goes down with REQ_PREFLUSH | REQ_FUA: its
 * preflush makes the writes before it (every other head, the second
 * stage's) durable and FUA makes it durable itself, so no separate device
 * flush is needed.
 *
 * Return: that head, or -1 if no head writes (a plain device flush).
 */
int dmr_flush_carrier(const bool *unwritten, unsigned int nr)
{
	int i;

	for (i = (int)nr - 1; i >= 0; i--)
		if (unwritten[i])
			return i;
	return -1;
}

/**
 * dmr_discard_needs_seal() - must the open unit be sealed before a discard?
 * @unit_open: a unit is open
 * @u: the open unit
 *
 * Replay applies a unit's discards before its large segments and data
 * blocks, so a discard may only join a unit that has neither yet, and
 * only while its summary has room for one more extent.
 */
bool dmr_discard_needs_seal(bool unit_open, const struct dmr_unit *u)
{
	return unit_open && (u->nr_blocks || u->nr_extents ||
			     !dmr_unit_room(u, dmr_unit_discard_words(u)));
}

/**
 * dmr_extent_needs_seal() - must the open unit be sealed before it records
 *	a large segment?
 * @unit_open: a unit is open
 * @u: the open unit
 *
 * Replay applies a unit's large segments after its discards and before
 * its data blocks (dmr_unit_apply()), so a large segment may only join a
 * unit that has no data block yet, and only while it has room for one
 * more record (the count word with the first: dmr_unit_room()).
 */
bool dmr_extent_needs_seal(bool unit_open, const struct dmr_unit *u)
{
	return unit_open && (u->nr_blocks || u->nr_extents >= DMR_UNIT_MAX_EXTENTS ||
			     !dmr_unit_room(u, dmr_unit_extent_words(u) + !u->nr_extents));
}

/**
 * dmr_unit_set_extent_csum() - give a large segment's record its checksum
 * @u: the open unit that records the segment
 * @seg: the large segment
 * @csum: dmr_data_csum() of its blocks, which the second stage computed
 *	(dmr_write_large() hands the segment over before it has one)
 *
 * Return: true, or false when @u records no segment @seg: the caller
 * fails the target rather than close a unit whose record replay would
 * take for a torn write.
 */
bool dmr_unit_set_extent_csum(struct dmr_unit *u, u32 seg, u32 csum)
{
	u32 i;

	for (i = 0; i < u->nr_extents; i++) {
		if (u->ext_seg[i] == seg) {
			u->ext_csum[i] = csum;
			return true;
		}
	}
	return false;
}

/**
 * dmr_unit_records() - does an open unit record a large segment of some
 *	of blocks [@lba, @lba + @n)?
 * @unit_open: a unit is open
 * @u: the open unit
 * @seg_blocks: blocks per segment (each large segment's length)
 * @lba: first logical block
 * @n: blocks
 *
 * Rule 10 (dmr-write.c): their current copy is in that large segment,
 * which the unit names; a write of one of them to another head closes
 * the unit first, so that the large segment is numbered first.
 */
bool dmr_unit_records(bool unit_open, const struct dmr_unit *u, u32 seg_blocks,
		      u64 lba, u64 n)
{
	u32 i;

	for (i = 0; unit_open && i < u->nr_extents; i++)
		if (u->ext_lba[i] < lba + n && lba < u->ext_lba[i] + seg_blocks)
			return true;
	return false;
}

/* Pieces of at least 1 MiB: 256 blocks, one bio's worth of pages. */
#define DMR_PIECE_MIN	256U

/**
 * dmr_write_piece() - blocks per piece of a log write
 * @stripe_blocks: full stripe recorded at format (0 if none)
 *
 * A segment is written in pieces of whole stripes of at least 1 MiB but
 * at most 256 blocks when that is possible (one bio each), so every
 * piece but a flush's first and last is a full-stripe, aligned write.
 *
 * Return: the piece size in blocks.
 */
u32 dmr_write_piece(u32 stripe_blocks)
{
	if (!stripe_blocks || stripe_blocks >= DMR_PIECE_MIN)
		return stripe_blocks ? stripe_blocks : DMR_PIECE_MIN;
	return DMR_PIECE_MIN / stripe_blocks * stripe_blocks;
}

/**
 * dmr_mem_run() - where a run of blocks of a segment in memory is read
 * @off: block of the run's start in its segment
 * @run: blocks in the run
 * @on_disk: blocks of the segment, from its start, already on the device
 *	(a head's written blocks, or those before a second-stage write)
 * @from_buf: set to true if the run is copied from the segment's buffer
 *
 * Blocks on the device are read from there, the others from the buffer.
 *
 * Return: blocks of the run, from @off, read from the same place.
 */
u32 dmr_mem_run(u32 off, u32 run, u32 on_disk, bool *from_buf)
{
	*from_buf = off >= on_disk;
	return *from_buf ? run : min(run, on_disk - off);
}

/**
 * dmr_piece_len() - length of the piece that starts at @from
 * @from: block of the segment where the piece starts
 * @end: block after the last one to write
 * @piece: dmr_write_piece()
 *
 * Return: blocks up to the next piece boundary of the segment, or @end.
 */
u32 dmr_piece_len(u32 from, u32 end, u32 piece)
{
	u32 next = (from / piece + 1) * piece;

	return min(next, end) - from;
}

/**
 * dmr_stripe_pad() - where a log write ends: the end of its last stripe
 * @end: block after the last unit to write, in their segment
 * @padded: blocks of the segment, from its start, the head has written
 *	already (its units, and the zeroed blocks after them)
 * @stripe_blocks: full stripe recorded at format (0 if none)
 * @seg_blocks: blocks per segment, a whole number of stripes
 *
 * A write that leaves part of a parity RAID stripe unwritten makes the
 * array read old data and parity, or the rest of the stripe, to compute
 * the new parity: the read-modify-write dm-remap exists to avoid, and what
 * a flush's short unit cost on md RAID-5 (issue 41, goal 3).  So a write
 * that goes past what the head wrote before is padded with zeroed blocks
 * to the end of its last stripe (the next units take their place): the
 * first write into a stripe covers the rest of it, and the array computes
 * the parity from what it is given.  A later short unit in the same
 * stripe rewrites part of a stripe the array has just written (md keeps
 * it in its stripe cache: no read).  A write that starts inside a stripe
 * the head wrote before is not widened backwards: that would write up to
 * a stripe per flush instead of a unit.  Stripes over DMR_STRIPE_FILL_MAX
 * blocks are not padded.
 *
 * Return: the block after the last to write, at least @end.
 */
u32 dmr_stripe_pad(u32 end, u32 padded, u32 stripe_blocks, u32 seg_blocks)
{
	u32 hi;

	if (stripe_blocks < 2 || stripe_blocks > DMR_STRIPE_FILL_MAX || end <= padded)
		return end;
	hi = end + (stripe_blocks - end % stripe_blocks) % stripe_blocks;
	return max(min(hi, seg_blocks), end);
}

/**
 * dmr_empty_flush_verdict() - an empty flush, by target mode
 * @mode: enum dmr_mode
 *
 * In failed mode writes that were acknowledged may exist only in memory,
 * so a flush must fail; a read-only table never accepted a write, so
 * there is nothing to flush.
 */
enum dmr_empty_flush dmr_empty_flush_verdict(int mode)
{
	switch (mode) {
	case DMR_MODE_WRITE:
		return DMR_FLUSH_QUEUE;
	case DMR_MODE_READ_ONLY:
		return DMR_FLUSH_DONE;
	default:
		return DMR_FLUSH_FAIL;
	}
}

/**
 * dmr_ckpt_rearm() - does the periodic checkpoint timer re-arm itself?
 * @mode: enum dmr_mode
 * @suspended: between postsuspend and resume
 * @stopping: the worker is being stopped (postsuspend, destructor)
 */
bool dmr_ckpt_rearm(int mode, bool suspended, bool stopping)
{
	return mode == DMR_MODE_WRITE && !suspended && !stopping;
}

/**
 * dmr_ckpt_order() - which checkpoint slots a load tries, newest first
 * @st: each slot header's decode status (DMR_LOG_READ_ERROR if unreadable)
 * @c: the decoded headers (where @st is DMR_LOG_OK)
 * @order: filled with the valid slots, newest (highest seq) first
 * @bad_slot: on -EIO, the slot that could not be read
 *
 * A header that cannot be read may be the newest one, whose log chain is
 * the only one that reaches the writes made after it: a load that went on
 * from the other slot could drop acknowledged data.  So a read error
 * refuses the load; only a header that was read and failed its checks (a
 * torn or never-written slot) is passed over.
 *
 * Return: number of valid slots (0 to 2), or -EIO.
 */
int dmr_ckpt_order(const enum dmr_log_status st[DMR_CKPT_SLOTS],
		   const struct dmr_ckpt c[DMR_CKPT_SLOTS],
		   int order[DMR_CKPT_SLOTS], int *bad_slot)
{
	int i, n = 0;

	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		if (st[i] == DMR_LOG_READ_ERROR) {
			*bad_slot = i;
			return -EIO;
		}
	}
	for (i = 0; i < DMR_CKPT_SLOTS; i++)
		if (st[i] == DMR_LOG_OK)
			order[n++] = i;
	if (n == 2 && c[order[1]].seq > c[order[0]].seq) {
		order[0] = 1;
		order[1] = 0;
	}
	return n;
}

/**
 * dmr_load_fell_back() - is the slot loaded other than the newest one?
 * @st: each slot header's decode status
 * @c: the decoded headers
 * @slot: the slot loaded
 *
 * True if the other header is valid and newer (its tables were damaged),
 * or is present but does not decode (a torn or damaged header: not
 * DMR_LOG_BAD_MAGIC, which a slot never written shows).  Either may be a
 * newer checkpoint whose log went on past this slot's.
 */
bool dmr_load_fell_back(const enum dmr_log_status st[DMR_CKPT_SLOTS],
			const struct dmr_ckpt c[DMR_CKPT_SLOTS], int slot)
{
	int other = slot ^ 1;

	if (st[other] == DMR_LOG_OK)
		return c[other].seq > c[slot].seq;
	return st[other] != DMR_LOG_BAD_MAGIC;
}

/**
 * dmr_ckpt_twin_holds() - does the other slot hold the loaded checkpoint's map?
 * @c: the checkpoint loaded
 * @other_st: the other slot header's decode status
 * @other: the other slot's header (where @other_st is DMR_LOG_OK)
 *
 * A clean shutdown writes its clean checkpoint twice, to one slot and then
 * to the other with DMR_CKPT_TWIN and the next sequence number, with the
 * worker stopped in between: both slots then hold the same map blocks
 * and tables.  A load of the second need not rewrite the first's map
 * blocks (before this, the first checkpoint after every load rewrote the
 * whole map into the other slot: 58 GiB on a full 32 TiB device).
 *
 * The other slot must be the one the twin followed: valid, clean, one
 * sequence number before it, with the same log position, sizes, count of
 * mapped blocks and table checksums.  A torn twin fails its own checks and
 * the load uses the first slot (dmr_load_fell_back()); rule 7's rewrite
 * of the twin's header keeps the flag, which still holds: the tables did
 * not change.
 *
 * Return: true if the other slot's map blocks are the loaded slot's.
 */
bool dmr_ckpt_twin_holds(const struct dmr_ckpt *c, enum dmr_log_status other_st,
			 const struct dmr_ckpt *other)
{
	unsigned int i;

	if (!(c->flags & DMR_CKPT_TWIN) || other_st != DMR_LOG_OK ||
	    !(other->flags & DMR_CKPT_CLEAN) || other->seq + 1 != c->seq ||
	    other->log_seq != c->log_seq || other->mapped_blocks != c->mapped_blocks ||
	    other->crc_csum != c->crc_csum || other->segtab_csum != c->segtab_csum ||
	    other->logical_blocks != c->logical_blocks ||
	    other->nr_segments != c->nr_segments)
		return false;
	for (i = 0; i < DMR_NR_HEADS; i++)
		if (other->heads[i].segment != c->heads[i].segment ||
		    other->heads[i].offset != c->heads[i].offset ||
		    other->heads[i].next_segment != c->heads[i].next_segment)
			return false;
	return true;
}

/**
 * dmr_load_needs_recovery() - was the target stopped uncleanly?
 * @c: the checkpoint loaded
 * @units: log units replayed after it
 * @stop: why replay stopped (struct dmr_replay's @stop)
 * @fell_back: the load passed over a newer or damaged slot
 *	(dmr_load_fell_back())
 *
 * A clean checkpoint is the last thing its instance wrote, and every
 * instance marks its loaded clean checkpoint not-clean before it accepts
 * a write (dmr-ckpt.c, dmr_mark_dirty()), so after a clean checkpoint that
 * is still the newest nothing can follow: replay must find no unit, and
 * every head's chain must end normally (dmr_log_stop_benign(): a block
 * that never held a unit, or a unit of an earlier use of its segment).
 * A clean slot that is not the newest proves nothing: units numbered
 * after it may be on the device, so the sequence must jump (rule 4).
 */
bool dmr_load_needs_recovery(const struct dmr_ckpt *c, u64 units,
			     enum dmr_log_status stop, bool fell_back)
{
	return fell_back || !(c->flags & DMR_CKPT_CLEAN) || units ||
	       !dmr_log_stop_benign(stop);
}

/**
 * dmr_seq_after_recovery() - where the log's sequence resumes after a crash
 * @ckpt_log_seq: last sequence number of the checkpoint loaded
 * @replayed_seq: last sequence number replay applied
 *
 * Units written after the last one replayed may survive the crash (they
 * follow a lost one) and sit in segments the new log will use again.  The
 * writer never numbers a unit more than DMR_SEQ_WINDOW past the newest
 * completed checkpoint (dmr_seq_window_full()), and the checkpoint loaded
 * is the newest completed one, so every unit on the device is numbered at
 * most @ckpt_log_seq + DMR_SEQ_WINDOW.  Resuming above that, a stale unit
 * is never the next one replay wants.
 *
 * Return: the last sequence number to count as used.
 */
u64 dmr_seq_after_recovery(u64 ckpt_log_seq, u64 replayed_seq)
{
	return max_t(u64, replayed_seq, ckpt_log_seq + DMR_SEQ_WINDOW);
}

/**
 * dmr_ckpt_log_seq_bound() - the newest completed checkpoint's log sequence, at most
 * @st: each slot's header status (dmr_ckpt_decode())
 * @c: the headers that decoded
 * @slot: the slot loaded
 *
 * dmr_seq_after_recovery() counts from the newest completed checkpoint.
 * That is the slot loaded, unless the load fell back past a newer slot
 * whose tables are damaged: then it is that slot's, if its header
 * decodes.  A header that does not decode may be a newer, completed
 * checkpoint damaged since; it was written at most DMR_SEQ_WINDOW / 2
 * units (and a request's) after the slot loaded (dmr_seq_window_full()),
 * so @slot's log sequence plus DMR_SEQ_WINDOW is above it.
 *
 * Return: a log sequence number no completed checkpoint's is above.
 */
u64 dmr_ckpt_log_seq_bound(const enum dmr_log_status st[DMR_CKPT_SLOTS],
			   const struct dmr_ckpt c[DMR_CKPT_SLOTS], int slot)
{
	int other = slot ^ 1;

	if (st[other] == DMR_LOG_OK)
		return max_t(u64, c[slot].log_seq, c[other].log_seq);
	return c[slot].log_seq + DMR_SEQ_WINDOW;
}

/**
 * dmr_seq_window_full() - must a checkpoint come before more units?
 * @seq: last sequence number used
 * @ckpt_log_seq: last sequence number of the newest completed checkpoint
 *
 * True once half the window is used: the writer checkpoints before the
 * next request, which closes far fewer than DMR_SEQ_WINDOW / 2 units.
 */
bool dmr_seq_window_full(u64 seq, u64 ckpt_log_seq)
{
	return seq - ckpt_log_seq >= DMR_SEQ_WINDOW / 2;
}

/**
 * dmr_head_needs_next() - must a head reserve its next segment first?
 * @next_segment: the segment it reserved (DMR_NO_SEGMENT if none)
 * @wp: where its write pointer will be after the chunk
 * @seg_blocks: blocks per segment
 *
 * A unit that leaves its segment done records where its head goes on, so
 * the head reserves that segment before its write pointer gets there.
 */
bool dmr_head_needs_next(u32 next_segment, u32 wp, u32 seg_blocks)
{
	return next_segment == DMR_NO_SEGMENT && dmr_seg_done(wp, seg_blocks);
}

/**
 * dmr_copy_in_open_unit() - is a block's copy in a head's open unit?
 * @entry: the block's map entry (pba + 1, not DMR_UNMAPPED)
 * @seg_blocks: blocks per segment
 * @unit_open: the head has an open unit
 * @segment: the head's segment
 * @unit_offset: block of the open unit's summary in @segment
 * @wp: the head's write pointer (end of the open unit's data)
 *
 * Rule 10 (dmr-write.c): a write of the block to another head must close
 * that unit first, so that the older copy is numbered first.
 */
bool dmr_copy_in_open_unit(u64 entry, u32 seg_blocks, bool unit_open,
			   u32 segment, u32 unit_offset, u32 wp)
{
	u64 pba = entry - 1, seg = div64_u64(pba, seg_blocks);
	u32 off = (u32)(pba - seg * seg_blocks);

	return unit_open && seg == segment && off > unit_offset && off < wp;
}

/**
 * dmr_unmap_step() - map entries a discard unmaps per hold of the map lock
 * @left: entries of the extent still to unmap
 *
 * Bounds how long preemption is off on the worker's CPU, and how long
 * status and messages wait for the lock, whatever the discard's size.
 *
 * Return: at least 1 (if @left), at most DMR_UNMAP_STEP.
 */
u32 dmr_unmap_step(u64 left)
{
	return min_t(u64, left, DMR_UNMAP_STEP);
}

/**
 * dmr_discard_piece() - blocks of a discard changed before the map cache is trimmed
 * @cap: the cache's size in map pages (0: no cache)
 * @page_shift: log2 of the logical blocks a map page maps
 *
 * Every page of a piece is read back and changed before any may leave,
 * so a piece needs half the cache's pages (one more when it is not
 * aligned): the cache then holds at most one and a half times its size.
 * Without a cache, a discard of up to 2^30 blocks goes whole.  The
 * writer cuts discards this way (dmr_do_discard()), and replay a unit's
 * discard extents (struct dmr_replay's @discard_step).
 *
 * Return: blocks, at least one page's, at most 2^30.
 */
u32 dmr_discard_piece(u32 cap, unsigned int page_shift)
{
	if (!cap)
		return 1U << 30;
	return min_t(u64, (u64)max(cap / 2, 1U) << page_shift, 1U << 30);
}

/**
 * dmr_need_waits() - may a map page the worker needs wait for memory?
 * @whole: the caller needs every page of its extent (a write, a read,
 *	GC's test of a block); a discard's piece needs only its first
 * @got: pages of the extent already in memory, from its first
 *
 * Issue 40, item 11: a page the worker waits for comes from the map
 * page reserve (dmr_map_page_get()), which only the pages leaving the
 * cache refill, and nothing leaves during a request.  A discard's piece
 * is half the cache, more than the reserve: it waits for its first page
 * only, and ends where the pages memory gave at once end
 * (dmr_need_blocks_in()); the rest is its next piece, after the cache
 * was trimmed.
 *
 * Return: true to wait (the reserve, then reclaim), false to take only
 * what memory gives at once.
 */
bool dmr_need_waits(bool whole, u64 got)
{
	return whole || !got;
}

/**
 * dmr_need_blocks_in() - blocks of an extent its first map pages cover
 * @lba: first logical block
 * @n: blocks
 * @pages: pages of the extent in memory, from the first
 * @page_shift: log2 of the logical blocks a map page maps
 *
 * Return: blocks from @lba, at most @n.
 */
u64 dmr_need_blocks_in(u64 lba, u64 n, u64 pages, unsigned int page_shift)
{
	u64 end;

	if (!pages)
		return 0;
	end = ((lba >> page_shift) + pages) << page_shift;
	return min(n, end - lba);
}

/**
 * dmr_replay_may_checkpoint() - may a load write checkpoints while it replays?
 * @writable: the table is not read-only (rule 8: a read-only load writes
 *	nothing)
 * @fell_back: dmr_load_fell_back(): the newer slot is damaged.  A
 *	checkpoint goes to the slot not loaded, that one, and with it the
 *	log sequence it may have promised (dmr_ckpt_log_seq_bound()), which
 *	a later load would need if this one does not finish
 * @growing: the load grows the device, whose new superblock goes down
 *	before anything is written under it (dmr_load())
 * @sb_copies_ok: both superblock copies are current; one that is not is
 *	rewritten before anything else is written (dmr_load())
 *
 * Replay's checkpoints (dmr_replay_step()) let the map pages it made
 * dirty leave memory, so a load with table option map_cache holds the
 * cache's size and no more, whatever the log since the last checkpoint
 * touched.  A load where they may not be written keeps those pages until
 * its recovery checkpoint, as a read-only load keeps them until it is
 * removed.
 *
 * Return: true if they may be written.
 */
bool dmr_replay_may_checkpoint(bool writable, bool fell_back, bool growing,
			       bool sb_copies_ok)
{
	return writable && !fell_back && !growing && sb_copies_ok;
}

/**
 * dmr_replay_ckpt_due() - must replay write a checkpoint now?
 * @cached: map pages in the cache (after the clean ones left)
 * @cap: the cache's size (0: no cache)
 * @may: dmr_replay_may_checkpoint()
 * @heads_valid: dmr_heads_valid() of the positions a load would start
 *	from: one that would refuse them is never written
 *
 * Return: true if the cache is still over its size and a checkpoint may
 * be written.
 */
bool dmr_replay_ckpt_due(u64 cached, u32 cap, bool may, bool heads_valid)
{
	return cap && cached > cap && may && heads_valid;
}
