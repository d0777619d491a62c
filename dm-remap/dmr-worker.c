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
 * dmr-ckpt.c and dmr-gc.c.  The group commit, which completes flush and
 * FUA requests, is here.
 *
 * Locking: see dmr.h.  @bio_lock protects the queue, which the map method
 * fills (dmr_queue_bio()); everything else the worker reads and changes
 * is its own, except the flags the timer, the messages and
 * dmr_worker_stop() set (READ_ONCE()).
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
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
 * One request.  A flush or FUA write leaves it waiting in @commit_bios
 * (dmr_do_write()), counted in @nr_commit; while one waits, every request
 * handled counts towards dmr_group_commit_now()'s bound, from the oldest
 * waiter's arrival, and defers its GC step (@gc_owed).
 */
static void dmr_handle_bio(struct dmr_target *rc, struct bio *bio)
{
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
	/*
	 * A queue of large requests (a whole-device discard comes as
	 * hundreds of 4 GiB bios) must not hold the CPU: without
	 * preemption the worker would run them all back to back.
	 */
	cond_resched();
	WRITE_ONCE(rc->nr_handled, rc->nr_handled + 1);
	rc->commit_behind = dmr_commit_behind(rc->nr_commit, rc->nr_handled,
					      rc->commit_since);
	rc->gc_owed = dmr_gc_owed_after_request(rc->nr_commit, rc->gc_owed);
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
}

/*
 * The worker.  Flush and FUA requests wait for the group commit
 * (dmr_group_commit_now()), which is always made before the worker
 * stops, so none is left behind.  Background GC takes one step after
 * each request while no flush waits (the steps deferred while one waits
 * come after its commit), and goes on while it has work and no request
 * waits.  Queued requests are taken all at once (one round of
 * @bio_lock per batch, not per request) and handled in their order.
 * dmr_worker_next() gives the order and the conditions of each step.
 */
void dmr_worker(struct work_struct *work)
{
	struct dmr_target *rc = container_of(work, struct dmr_target, work);
	enum dmr_worker_phase phase = DMR_WORKER_AT_ROUND;
	struct dmr_worker_state s = { };
	struct bio_list batch = BIO_EMPTY_LIST;
	unsigned long flags;
	/*
	 * Every allocation the worker makes, its own and those of the
	 * kernel functions it calls (a map page read back, a first write to
	 * a 4 MiB region, the RCU free of an evicted page), is GFP_NOIO from
	 * here on: reclaim must not wait for writeback that would queue
	 * behind this very worker (swap or dirty pages on dm-remap).
	 */
	unsigned int noio = memalloc_noio_save();

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
			dmr_map_trim(rc);
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
			dmr_handle_bio(rc, bio_list_pop(&batch));
			dmr_map_trim(rc);	/* map_cache: back to its size */
			break;
		case DMR_WORKER_COMMIT:
			dmr_group_commit(rc);
			break;
		case DMR_WORKER_GC_STEP:
			s.gc_did = dmr_gc_background(rc);
			rc->gc_owed = dmr_gc_owed_after_step(rc->gc_owed, s.gc_did);
			dmr_map_trim(rc);
			break;
		case DMR_WORKER_IDLE:
			memalloc_noio_restore(noio);
			return;
		}
	}
}
