// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap worker: the coordinator that drains the request queue.
 *
 * Every bio that changes state or needs a head's segment, checkpoints,
 * and GC are handled by one work item, so it never runs concurrently with
 * itself; it is queued on the submitting CPU (a plain, not ordered,
 * workqueue) which saves a cross-CPU wake-up per request.  It decides
 * nothing itself: it samples its state, asks dmr_worker_next() (pure,
 * dmr-writer.c, KUnit-tested) what to do next, and calls the mechanism
 * that does it: dmr-write.c (writes, discards, flushes), dmr-read.c,
 * dmr-ckpt.c and dmr-gc.c.  What those need from above they return
 * here (@need, @held: the stack in dmr.h), and dmr_worker_next() serves
 * it first.  The group commit, which completes flush and FUA requests,
 * is here.
 *
 * A plain write that comes while the worker is idle, and that the
 * worker would handle first, is handled by its submitter, in its own
 * context (dmr_worker_inline()), with no queue, wake-up or sleep.
 *
 * Locking: see dmr.h.  @bio_lock protects the queue, which the map method
 * fills (dmr_queue_bio()).  @worker_lock is held by the worker for its
 * whole run and by a submitter handling its write: everything else the
 * worker reads and changes is theirs under it, except the flags the
 * timer, the messages and dmr_worker_stop() set (READ_ONCE()).
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/module.h>
#include <linux/sched/mm.h>

#include "dmr.h"

void dmr_queue_bio(struct dmr_target *rc, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&rc->bio_lock, flags);
	bio_list_add(&rc->bios, bio);
	spin_unlock_irqrestore(&rc->bio_lock, flags);
	queue_work(rc->wq, &rc->work);
}

/*
 * The group commit: one flush (dmr_flush_all()) for every flush and FUA
 * request waiting in @commit_bios, which then complete with its result
 * (rule 1 in dmr-write.c).
 */
static void dmr_group_commit(struct dmr_target *rc)
{
	blk_status_t st = errno_to_blk_status(dmr_flush_all(rc, true));
	struct bio *bio;

	while ((bio = bio_list_pop(&rc->commit_bios))) {
		bio->bi_status = st;
		bio_endio(bio);
	}
	rc->nr_commit = 0;
	rc->commit_behind = 0;
}

/*
 * A request ended (dmr_worker_request()): while a flush or FUA request
 * waits in @commit_bios (dmr_do_write()), counted in @nr_commit, every
 * request handled counts towards dmr_group_commit_now()'s bound, from
 * the oldest waiter's arrival, and defers its GC step (@gc_owed).
 */
static void dmr_worker_request_done(struct dmr_target *rc)
{
	if (rc->room_wait) {
		rc->room_wait = false;
		WRITE_ONCE(rc->gc_mode, rc->gc_active ? DMR_GC_MODE_BACKGROUND :
			   DMR_GC_MODE_IDLE);
	}
	WRITE_ONCE(rc->nr_handled, rc->nr_handled + 1);
	rc->commit_behind = dmr_commit_behind(rc->nr_commit, rc->nr_handled,
					      rc->commit_since);
	rc->gc_owed = dmr_gc_owed_after_request(rc->nr_commit, rc->gc_owed);
}

static enum dmr_bio_result dmr_handle_bio(struct dmr_target *rc, struct bio *bio)
{
	switch (bio_op(bio)) {
	case REQ_OP_READ:
		dmr_do_read(rc, bio);
		return DMR_BIO_ENDED;
	case REQ_OP_WRITE:
		return dmr_do_write(rc, bio);
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		return dmr_do_discard(rc, bio);
	default:
		bio_io_error(bio);
		return DMR_BIO_ENDED;
	}
}

/*
 * One request goes on: handled for the first time, or resumed.  One
 * that is not done is held (@held), and goes on before any other
 * (dmr_worker_next()): a discard between its pieces, so that the map
 * cache is trimmed (and the checkpoint that needs, written) between
 * them, or a write that waits for a free segment, which urgent GC frees
 * (DMR_NEED_ROOM; throttled, counted once per request).
 */
static void dmr_worker_request(struct dmr_target *rc, struct bio *bio)
{
	enum dmr_bio_result res = dmr_handle_bio(rc, bio);

	/*
	 * A queue of large requests (a whole-device discard comes as
	 * hundreds of 4 GiB bios) must not hold the CPU: without
	 * preemption the worker would run them all back to back.
	 */
	cond_resched();
	if (res == DMR_BIO_ENDED) {
		dmr_worker_request_done(rc);
		return;
	}
	rc->held = bio;
	if (res != DMR_BIO_NO_ROOM)
		return;
	rc->need |= DMR_NEED_ROOM;
	if (!rc->room_wait) {
		rc->room_wait = true;
		atomic64_inc(&rc->stats.throttled);
		WRITE_ONCE(rc->gc_mode, DMR_GC_MODE_URGENT);
	}
}

/*
 * Urgent GC, for the held request waiting for room.  GC never waits for
 * a user write, so this ends: with room (the request goes on, and may
 * find none again), a checkpoint GC asks for first, or an error, which
 * ends the request.
 */
static void dmr_worker_urgent(struct dmr_target *rc)
{
	struct bio *bio;
	int r;

	rc->need &= ~DMR_NEED_ROOM;
	r = dmr_gc_run(rc, true);
	if (r == DMR_GC_WANTS_CKPT) {
		rc->need |= DMR_NEED_CKPT_GC | DMR_NEED_ROOM;
	} else if (r < 0) {
		bio = rc->held;
		rc->held = NULL;
		bio->bi_status = errno_to_blk_status(r);
		bio_endio(bio);
		dmr_worker_request_done(rc);
	}
}

/* map_cache: back to its size, or a checkpoint is needed for that */
static void dmr_worker_trim(struct dmr_target *rc)
{
	if (dmr_map_trim(rc))
		rc->need |= DMR_NEED_CKPT_CACHE;
}

/*
 * The checkpoint a mechanism asked for (@need): one serves both.  The
 * map cache's is counted (map_forced), and the pages it made clean
 * leave; if some cannot (the read path keeps using them), the cache
 * stays over its size until the next trim, which may ask again: never
 * one checkpoint after another with nothing between.
 */
static void dmr_worker_checkpoint(struct dmr_target *rc)
{
	bool cache = rc->need & DMR_NEED_CKPT_CACHE;

	rc->need &= ~(DMR_NEED_CKPT_GC | DMR_NEED_CKPT_CACHE);
	if (!dmr_checkpoint(rc, false) && cache)
		atomic64_inc(&rc->stats.map_forced);
	dmr_map_trim(rc);
}

/* Whether @bio, the batch's next request, writes the log (rule 7). */
static bool dmr_bio_writes(const struct bio *bio)
{
	if (!bio)
		return false;
	switch (bio_op(bio)) {
	case REQ_OP_WRITE:
		return bio->bi_iter.bi_size;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		return true;
	default:
		return false;
	}
}

/* What dmr_worker_next() decides on, read afresh before each step. */
static void dmr_worker_sample(struct dmr_target *rc,
			      const struct bio_list *batch,
			      struct dmr_worker_state *s)
{
	s->stopping = READ_ONCE(rc->stopping);
	s->ckpt_due = READ_ONCE(rc->ckpt_due);
	s->gc_collect_req = READ_ONCE(rc->gc_collect_req);
	s->mode_write = READ_ONCE(rc->mode) == DMR_MODE_WRITE;
	s->seq_window_full = dmr_seq_window_full(rc->seq, rc->ckpt_log_seq);
	s->batch_empty = bio_list_empty(batch);
	s->nr_commit = rc->nr_commit;
	s->commit_behind = rc->commit_behind;
	s->gc_owed = rc->gc_owed;
	s->need = rc->need;
	s->held = !!rc->held;
	s->ckpt_unfreed = rc->ckpt_seq != rc->gc_freed_ckpt;
	s->clean_on_disk = rc->ckpt_clean_on_disk;
	s->next_writes = dmr_bio_writes(bio_list_peek((struct bio_list *)batch));
	s->gc_rd_pending = rc->gc_rd_seg != DMR_NO_SEGMENT;
}

/* Off: every write is queued to the worker (the bench's side by side). */
static bool dmr_inline_writes = true;
module_param_named(inline_writes, dmr_inline_writes, bool, 0644);
MODULE_PARM_DESC(inline_writes,
		 "Plain writes are handled by their submitter while the worker is idle (default Y)");

/**
 * dmr_worker_inline() - a plain write handled by its submitter
 * @rc: target
 * @bio: a write with data, neither REQ_PREFLUSH nor REQ_FUA (dmr_map())
 *
 * Queueing each write to the worker costs a wake-up and a sleep per
 * request, and with many writers the worker's CPU is shared with the
 * writers it wakes (issue 41: eight psync writers took half of one
 * writer's IOPS).  So a writer that gets @worker_lock does the worker's
 * job for its own request, in its own context, when the worker would
 * do nothing before it and nothing it needs does I/O of its own
 * (dmr_worker_inline_ok(): no need, no held request, no flush waiting,
 * no checkpoint due, the checkpoint not clean, GC idle, its map pages in
 * memory).  It is then handled exactly as the worker handles a request
 * (dmr_worker_request(): the same writer, the same ordering rules, the
 * same throttle, which holds it for the worker), under the same lock,
 * so the log has one owner at a time as before.  It waits for
 * @worker_lock when another writer holds it (a copy and a map update),
 * not when it sees the worker holding it (@worker_running: a checkpoint,
 * GC; only a writer that comes in the instant before the worker sets it
 * waits for that run, as a queued request would), and never in memory
 * reclaim (PF_MEMALLOC: swap written to dm-remap): such a request is
 * queued as before.  It never submits I/O itself (bios submitted from a
 * map method wait on current->bio_list until it returns): a segment
 * that is done goes to the second stage, whose slot it may wait for.
 * What it leaves for the worker (a need, a held request, GC work) queues
 * the worker.
 *
 * Return: true if the request was handled (ended, or held for the
 * worker), false if the caller queues it.
 */
bool dmr_worker_inline(struct dmr_target *rc, struct bio *bio)
{
	struct dmr_worker_state s = { };
	struct bio_list none = BIO_EMPTY_LIST;
	u64 lba = dmr_bio_lba(rc, bio);
	u64 nr;
	unsigned int noio;
	bool ok, kick;

	if (!READ_ONCE(dmr_inline_writes))
		return false;
	if (!mutex_trylock(&rc->worker_lock)) {
		if (READ_ONCE(rc->worker_running) || (current->flags & PF_MEMALLOC))
			return false;
		mutex_lock(&rc->worker_lock);
	}
	dmr_worker_sample(rc, &none, &s);
	nr = bio->bi_iter.bi_size >> DMR_BLOCK_SHIFT;
	ok = dmr_worker_inline_ok(&s, rc->active, dmr_gc_idle(rc), dmr_map_resident(rc, lba, nr));
	if (!ok) {
		mutex_unlock(&rc->worker_lock);
		return false;
	}
	noio = memalloc_noio_save();	/* as the worker's (dmr_worker()) */
	atomic64_inc(&rc->stats.inline_writes);
	dmr_worker_request(rc, bio);
	dmr_worker_trim(rc);
	kick = rc->need || rc->held || !dmr_gc_idle(rc);
	memalloc_noio_restore(noio);
	mutex_unlock(&rc->worker_lock);
	if (kick)
		queue_work(rc->wq, &rc->work);
	return true;
}

/*
 * The worker.  Flush and FUA requests wait for the group commit
 * (dmr_group_commit_now()), which is always made before the worker
 * stops, so none is left behind.  Background GC takes one step after
 * each request while no flush waits (the steps deferred while one waits
 * come after its commit), and goes on while it has work and no request
 * waits.  Queued requests are taken all at once (one round of
 * @bio_lock per batch, not per request) and handled in their order.
 * dmr_worker_next() gives the order and the conditions of each step,
 * the needs the mechanisms below return (@need, @held) first.
 */
void dmr_worker(struct work_struct *work)
{
	struct dmr_target *rc = container_of(work, struct dmr_target, work);
	enum dmr_worker_phase phase = DMR_WORKER_AT_ROUND;
	struct dmr_worker_state s = { };
	struct bio_list batch = BIO_EMPTY_LIST;
	struct bio *bio;
	unsigned long flags;
	int r;
	/*
	 * Every allocation the worker makes, its own and those of the
	 * kernel functions it calls (a map page read back, a first write to
	 * a 4 MiB region, the RCU free of an evicted page), is GFP_NOIO from
	 * here on: reclaim must not wait for writeback that would queue
	 * behind this very worker (swap or dirty pages on dm-remap).
	 */
	unsigned int noio = memalloc_noio_save();

	mutex_lock(&rc->worker_lock);
	WRITE_ONCE(rc->worker_running, true);
	for (;;) {
		dmr_worker_sample(rc, &batch, &s);
		switch (dmr_worker_next(&s, &phase)) {
		case DMR_WORKER_CHECKPOINT_DUE:
			/*
			 * dmr_worker_next() gives this and the next two steps
			 * only to a worker that is not stopping: postsuspend's
			 * clean checkpoint owns the checkpoint state, and a
			 * timer that fired between dmr_worker_stop()'s cancels
			 * may still queue us.
			 */
			dmr_checkpoint_due(rc);
			break;
		case DMR_WORKER_GC_COLLECT:
			rc->gc_collect_result = dmr_gc_collect_now(rc);
			WRITE_ONCE(rc->gc_collect_req, false);
			dmr_worker_trim(rc);
			break;
		case DMR_WORKER_CHECKPOINT_WINDOW:
			/* rule 4: no unit is numbered past the window */
			dmr_checkpoint(rc, false);
			break;
		case DMR_WORKER_TAKE_QUEUE:
			spin_lock_irqsave(&rc->bio_lock, flags);
			batch = rc->bios;
			bio_list_init(&rc->bios);
			spin_unlock_irqrestore(&rc->bio_lock, flags);
			break;
		case DMR_WORKER_HANDLE_BIO:
			dmr_worker_request(rc, bio_list_pop(&batch));
			dmr_worker_trim(rc);
			break;
		case DMR_WORKER_RESUME:
			bio = rc->held;
			rc->held = NULL;
			dmr_worker_request(rc, bio);
			dmr_worker_trim(rc);
			break;
		case DMR_WORKER_COMMIT:
			dmr_group_commit(rc);
			break;
		case DMR_WORKER_GC_STEP:
			r = dmr_gc_background(rc);
			if (r == DMR_GC_WANTS_CKPT)
				rc->need |= DMR_NEED_CKPT_GC;
			s.gc_did = r == DMR_GC_RAN || r == DMR_GC_WANTS_CKPT;
			rc->gc_owed = dmr_gc_owed_after_step(rc->gc_owed, s.gc_did);
			dmr_worker_trim(rc);
			break;
		case DMR_WORKER_GC_URGENT:
			dmr_worker_urgent(rc);
			dmr_worker_trim(rc);
			break;
		case DMR_WORKER_GC_FREE:
			/* what the checkpoint made reusable (the reuse rule) */
			rc->gc_freed_ckpt = rc->ckpt_seq;
			dmr_gc_free_ready(rc);
			dmr_gc_retry(rc);
			break;
		case DMR_WORKER_CHECKPOINT_NEEDED:
			dmr_worker_checkpoint(rc);
			break;
		case DMR_WORKER_MARK_DIRTY:
			/* rule 7 (a failure leaves the target failed) */
			dmr_mark_dirty(rc);
			break;
		case DMR_WORKER_IDLE:
			WRITE_ONCE(rc->worker_running, false);
			mutex_unlock(&rc->worker_lock);
			memalloc_noio_restore(noio);
			return;
		}
	}
}

/* The checkpoint timer only hands the checkpoint to the worker. */
static void dmr_ckpt_timer(struct work_struct *work)
{
	struct dmr_target *rc = container_of(to_delayed_work(work),
					     struct dmr_target, ckpt_work);

	WRITE_ONCE(rc->ckpt_due, true);
	queue_work(rc->wq, &rc->work);
}

/* The constructor: the worker and its timer (dmr_io_init() made @wq). */
void dmr_worker_init(struct dmr_target *rc)
{
	INIT_WORK(&rc->work, dmr_worker);
	mutex_init(&rc->worker_lock);
	INIT_DELAYED_WORK(&rc->ckpt_work, dmr_ckpt_timer);
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
 * queued that could run after the destructor frees the target.  The
 * worker returns only with nothing held (dmr_worker_next()).
 */
void dmr_worker_stop(struct dmr_target *rc)
{
	WRITE_ONCE(rc->stopping, true);
	/* a writer handling its request (dmr_worker_inline()) finishes */
	mutex_lock(&rc->worker_lock);
	mutex_unlock(&rc->worker_lock);
	cancel_delayed_work_sync(&rc->ckpt_work);
	flush_work(&rc->work);
	/* no new victim read while stopping; its end queued the worker */
	dmr_gc_read_drop(rc);
	flush_work(&rc->work);
	cancel_delayed_work_sync(&rc->ckpt_work);
	dmr_flight_wait(rc);
}

/*
 * Resume: periodic checkpoints again.  A map cache checkpoint asked for
 * while stopping is dropped: postsuspend's clean one made every page
 * clean since (the worker is stopped: its state is ours here).
 */
void dmr_worker_start(struct dmr_target *rc)
{
	rc->need &= ~DMR_NEED_CKPT_CACHE;
	WRITE_ONCE(rc->stopping, false);
	if (dmr_ckpt_rearm(READ_ONCE(rc->mode), READ_ONCE(rc->suspended), false))
		queue_delayed_work(rc->wq, &rc->ckpt_work,
				   rc->opts.checkpoint_interval * HZ);
}
