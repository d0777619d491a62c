/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap writer and loader decisions: functions defined in dmr-writer.c.
 *
 * Pure code (see dmr-pure.h).  Every choice the log writer and the loader
 * make (when a unit is sealed and how it is written, where a discard goes,
 * which checkpoint slot a load uses, whether a load is a recovery, what an
 * empty flush returns, whether the checkpoint timer re-arms, what the
 * worker does next) is a function here, so KUnit tests it and the kernel
 * glue in dmr-worker.c, dmr-write.c, dmr-ckpt.c and dmr-target.c only
 * carries it out.  No locking: the callers own the state passed in.
 */
#ifndef DMR_WRITER_H
#define DMR_WRITER_H

#include "dmr-log.h"

enum dmr_mode {
	DMR_MODE_WRITE,		/* normal */
	DMR_MODE_READ_ONLY,	/* read-only table: never writes the device */
	DMR_MODE_FAILED,	/* a metadata or log write failed: reads only */
};

/**
 * enum dmr_seal_action - what sealing the open unit writes
 * @DMR_SEAL_NONE: nothing: the closed unit waits in the segment buffer
 *	until the segment fills or a flush comes (segments of more than one
 *	unit are written whole, not unit by unit)
 * @DMR_SEAL_FLUSH: nothing to write, but flush the device
 * @DMR_SEAL_WRITE: write the units not yet written, and wait
 * @DMR_SEAL_FLIGHT: the segment is done and needs no flush: hand it to
 *	the second stage and go on in the next segment
 */
enum dmr_seal_action {
	DMR_SEAL_NONE,
	DMR_SEAL_FLUSH,
	DMR_SEAL_WRITE,
	DMR_SEAL_FLIGHT,
};

bool dmr_seg_done(u32 end, u32 seg_blocks);
enum dmr_seal_action dmr_seal_action(bool flush, u32 unwritten, bool seg_done);
u32 dmr_unit_flags(bool reloc, bool wide);
u32 dmr_head_next_free(u32 segment, u32 offset, bool unit_open, u32 wp, u32 seg_blocks);
bool dmr_unit_takes_block(bool unit_open, const struct dmr_unit *u, u32 wp,
			  u32 seg_blocks);
bool dmr_unit_takes_data(bool unit_open, const struct dmr_unit *u, u32 wp,
			 u32 seg_blocks);
u32 dmr_write_chunk(const struct dmr_unit *u, u32 wp, u32 seg_blocks, u32 want);
bool dmr_seal_after_write(bool unit_open, u32 wp, u32 seg_blocks);

/* Flush and FUA requests one group commit waits for at most. */
#define DMR_GROUP_COMMIT_MAX	64U

/*
 * Requests handled since a waiting flush arrived before it is committed
 * regardless.
 */
#define DMR_GROUP_COMMIT_BEHIND	256U

/*
 * Background GC steps deferred while flushes wait (struct
 * dmr_worker_state @gc_owed) before one is taken regardless.
 */
#define DMR_GC_OWED_MAX		4U

bool dmr_group_commit_now(u32 waiting, bool queue_empty, u32 behind);
u32 dmr_commit_behind(u32 waiting, u32 handled, u32 since);
u32 dmr_gc_owed_after_request(u32 waiting, u32 owed);
u32 dmr_gc_owed_after_step(u32 owed, bool did);

/**
 * enum dmr_worker_step - what the worker does next (dmr_worker_next())
 * @DMR_WORKER_CHECKPOINT_DUE: the periodic checkpoint the timer asked for
 * @DMR_WORKER_GC_COLLECT: the collection the gc_collect message asked for
 * @DMR_WORKER_CHECKPOINT_WINDOW: a checkpoint, before the sequence
 *	window fills (dmr_seq_window_full())
 * @DMR_WORKER_TAKE_QUEUE: take every queued request into the batch
 * @DMR_WORKER_HANDLE_BIO: handle the batch's next request
 * @DMR_WORKER_COMMIT: the group commit (dmr_group_commit_now())
 * @DMR_WORKER_GC_STEP: try one step of background GC, and record in
 *	@gc_did of struct dmr_worker_state whether it did something
 * @DMR_WORKER_IDLE: nothing to do: the worker returns
 * @DMR_WORKER_GC_FREE: free the segments a checkpoint made reusable, and
 *	make the victims GC could not read candidates again
 * @DMR_WORKER_CHECKPOINT_NEEDED: the checkpoint a mechanism asked for
 *	(DMR_NEED_CKPT_GC, DMR_NEED_CKPT_CACHE)
 * @DMR_WORKER_MARK_DIRTY: mark the clean checkpoint not clean, before the
 *	next step writes the log (rule 7)
 * @DMR_WORKER_GC_URGENT: one step of urgent GC for the held request,
 *	which waits for a free segment (DMR_NEED_ROOM)
 * @DMR_WORKER_RESUME: the held request goes on
 */
enum dmr_worker_step {
	DMR_WORKER_CHECKPOINT_DUE,
	DMR_WORKER_GC_COLLECT,
	DMR_WORKER_CHECKPOINT_WINDOW,
	DMR_WORKER_TAKE_QUEUE,
	DMR_WORKER_HANDLE_BIO,
	DMR_WORKER_COMMIT,
	DMR_WORKER_GC_STEP,
	DMR_WORKER_IDLE,
	DMR_WORKER_GC_FREE,
	DMR_WORKER_CHECKPOINT_NEEDED,
	DMR_WORKER_MARK_DIRTY,
	DMR_WORKER_GC_URGENT,
	DMR_WORKER_RESUME,
};

/*
 * What a mechanism below the worker needs from above, returned to the
 * worker (struct dmr_target @need), which dmr_worker_next() schedules:
 * @DMR_NEED_CKPT_GC: GC's policy asks for a checkpoint (dmr_gc_run())
 * @DMR_NEED_CKPT_CACHE: the map cache is over its size and every page in
 *	it changed since the newest checkpoint (dmr_map_trim())
 * @DMR_NEED_ROOM: the held request waits for a free segment
 *	(dmr_head_room(): urgent GC frees one)
 */
#define DMR_NEED_CKPT_GC	0x1U
#define DMR_NEED_CKPT_CACHE	0x2U
#define DMR_NEED_ROOM		0x4U

/**
 * enum dmr_worker_phase - where the worker is in its round
 * @DMR_WORKER_AT_ROUND: a round begins: the periodic checkpoint is next
 * @DMR_WORKER_AT_COLLECT: the gc_collect message is next
 * @DMR_WORKER_AT_WINDOW: the sequence window's checkpoint is next
 * @DMR_WORKER_AT_TAKE: taking the queue, if the batch is empty, is next
 * @DMR_WORKER_AT_POP: the batch's next request, or with none the
 *	empty queue's commit or GC step, is next
 * @DMR_WORKER_AT_GC_TRIED: the empty queue's GC step was tried: go on
 *	if it did something, else stop
 * @DMR_WORKER_AT_REQ_COMMIT: a request was handled: its commit is next
 * @DMR_WORKER_AT_REQ_GC: a request was handled: its GC step is next
 * @DMR_WORKER_AT_OWED: a group commit was made: the GC steps deferred
 *	while it waited are next
 *
 * dmr_worker_next() owns the phase: the worker only starts each run at
 * DMR_WORKER_AT_ROUND.  Each check is made once per round, in this
 * order, so a step that leaves its condition true (a failed checkpoint)
 * cannot hold the worker from its requests.
 */
enum dmr_worker_phase {
	DMR_WORKER_AT_ROUND,
	DMR_WORKER_AT_COLLECT,
	DMR_WORKER_AT_WINDOW,
	DMR_WORKER_AT_TAKE,
	DMR_WORKER_AT_POP,
	DMR_WORKER_AT_GC_TRIED,
	DMR_WORKER_AT_REQ_COMMIT,
	DMR_WORKER_AT_REQ_GC,
	DMR_WORKER_AT_OWED,
};

/**
 * struct dmr_worker_state - what the worker's next step depends on
 * @stopping: the worker is being stopped (postsuspend, destructor)
 * @ckpt_due: the checkpoint timer fired
 * @gc_collect_req: the gc_collect message waits
 * @mode_write: the target writes (DMR_MODE_WRITE)
 * @seq_window_full: dmr_seq_window_full() of the log's sequence
 * @batch_empty: the batch holds no request; at DMR_WORKER_AT_POP, after
 *	the queue was taken, no request waits at all
 * @nr_commit: flush and FUA requests waiting for the group commit
 * @commit_behind: requests handled since the oldest of them arrived
 *	(dmr_commit_behind())
 * @gc_owed: background GC steps deferred while flushes waited
 *	(dmr_gc_owed_after_request()), not taken since
 * @gc_did: the last GC step did something
 * @need: DMR_NEED_* the mechanisms returned, not served yet
 * @held: a request the worker began is held, to go on before any other
 *	(a discard between its pieces, a write waiting for room)
 * @ckpt_unfreed: a checkpoint completed since the segments it made
 *	reusable were last freed (DMR_WORKER_GC_FREE)
 * @clean_on_disk: the newest checkpoint on the device is clean (rule 7)
 * @next_writes: the batch's next request writes the log (data or a
 *	discard)
 * @gc_rd_pending: a victim read is pending: GC's next step may move
 *	its blocks, which writes the log
 *
 * Sampled by the worker before each dmr_worker_next(), except @gc_did,
 * which is the GC step's result.  Whether background GC has work is not
 * known without doing the step (it decides on the segment table under
 * the worker's own state), so GC is a step the worker tries and reports.
 */
struct dmr_worker_state {
	bool stopping;
	bool ckpt_due;
	bool gc_collect_req;
	bool mode_write;
	bool seq_window_full;
	bool batch_empty;
	u32 nr_commit;
	u32 commit_behind;
	u32 gc_owed;
	bool gc_did;
	u32 need;
	bool held;
	bool ckpt_unfreed;
	bool clean_on_disk;
	bool next_writes;
	bool gc_rd_pending;
};

enum dmr_worker_step dmr_worker_next(const struct dmr_worker_state *s,
				     enum dmr_worker_phase *phase);
int dmr_message_checkpoint_verdict(int mode, bool active, bool stopping);
bool dmr_worker_inline_ok(const struct dmr_worker_state *s, bool active, bool gc_idle,
			  bool resident);

/**
 * enum dmr_instance_rel - another instance, to one being built (dmr_instance_relation())
 * @DMR_INSTANCE_UNRELATED: another device
 * @DMR_INSTANCE_RELOAD: the same device in another table of the same
 *	mapped device: a table reload, which loads at preresume
 * @DMR_INSTANCE_REFUSE: the same device elsewhere: refused (-EBUSY)
 */
enum dmr_instance_rel {
	DMR_INSTANCE_UNRELATED,
	DMR_INSTANCE_RELOAD,
	DMR_INSTANCE_REFUSE,
};

enum dmr_instance_rel dmr_instance_relation(bool same_bdev, bool same_uuid,
					    bool same_md, bool same_table);
bool dmr_head_unwritten(bool unit_open, const struct dmr_unit *u, u32 offset,
			u32 written);
int dmr_flush_carrier(const bool *unwritten, unsigned int nr);
bool dmr_discard_needs_seal(bool unit_open, const struct dmr_unit *u);
bool dmr_extent_needs_seal(bool unit_open, const struct dmr_unit *u);
bool dmr_unit_set_extent_csum(struct dmr_unit *u, u32 seg, u32 csum);
bool dmr_unit_records(bool unit_open, const struct dmr_unit *u, u32 seg_blocks,
		      u64 lba, u64 n);
u32 dmr_write_piece(u32 stripe_blocks);
u32 dmr_piece_len(u32 from, u32 end, u32 piece);
u32 dmr_mem_run(u32 off, u32 run, u32 on_disk, bool *from_buf);
/*
 * Largest stripe a log write is padded to (dmr_stripe_pad()): 1 MiB, a
 * piece (dmr_write_piece()).
 */
#define DMR_STRIPE_FILL_MAX	256U
u32 dmr_stripe_pad(u32 end, u32 padded, u32 stripe_blocks, u32 seg_blocks);

/**
 * enum dmr_empty_flush - what the map method does with an empty flush
 * @DMR_FLUSH_QUEUE: hand it to the worker (it seals the open unit)
 * @DMR_FLUSH_DONE: complete it at once: nothing was ever written
 * @DMR_FLUSH_FAIL: fail it: acknowledged writes may be in memory only
 */
enum dmr_empty_flush {
	DMR_FLUSH_QUEUE,
	DMR_FLUSH_DONE,
	DMR_FLUSH_FAIL,
};

enum dmr_empty_flush dmr_empty_flush_verdict(int mode);
bool dmr_ckpt_rearm(int mode, bool suspended, bool stopping);

int __must_check dmr_ckpt_order(const enum dmr_log_status st[DMR_CKPT_SLOTS],
				const struct dmr_ckpt c[DMR_CKPT_SLOTS],
				int order[DMR_CKPT_SLOTS], int *bad_slot);
bool dmr_load_fell_back(const enum dmr_log_status st[DMR_CKPT_SLOTS],
			const struct dmr_ckpt c[DMR_CKPT_SLOTS], int slot);
bool dmr_load_needs_recovery(const struct dmr_ckpt *c, u64 units,
			     enum dmr_log_status stop, bool fell_back);
bool dmr_ckpt_twin_holds(const struct dmr_ckpt *c, enum dmr_log_status other_st,
			 const struct dmr_ckpt *other);

/* Units the writer may number past the newest completed checkpoint. */
#define DMR_SEQ_WINDOW		BIT_ULL(32)

u64 dmr_seq_after_recovery(u64 ckpt_log_seq, u64 replayed_seq);
u64 dmr_ckpt_log_seq_bound(const enum dmr_log_status st[DMR_CKPT_SLOTS],
			   const struct dmr_ckpt c[DMR_CKPT_SLOTS], int slot);
bool dmr_seq_window_full(u64 seq, u64 ckpt_log_seq);
bool dmr_head_needs_next(u32 next_segment, u32 wp, u32 seg_blocks);
bool dmr_copy_in_open_unit(u64 entry, u32 seg_blocks, bool unit_open,
			   u32 segment, u32 unit_offset, u32 wp);

/* Map entries a discard unmaps under one hold of the map lock. */
#define DMR_UNMAP_STEP		4096U

u32 dmr_unmap_step(u64 left);
u32 dmr_discard_piece(u32 cap, unsigned int page_shift);
bool dmr_need_waits(bool whole, u64 got);
u64 dmr_need_blocks_in(u64 lba, u64 n, u64 pages, unsigned int page_shift);
bool dmr_replay_may_checkpoint(bool writable, bool fell_back, bool growing,
			       bool sb_copies_ok);
bool dmr_replay_ckpt_due(u64 cached, u32 cap, bool may, bool heads_valid);

#endif /* DMR_WRITER_H */
