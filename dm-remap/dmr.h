/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap: internal interfaces of the kernel module.
 *
 * Files, by job:
 *   dmr-target.c    device-mapper glue: table, map, status, messages, suspend
 *   dmr-worker.c    the worker: asks dmr_worker_next() what to do next,
 *                   takes the queue, makes the group commit
 *   dmr-write.c     the log writer: heads, units, writes, discards, flushes
 *   dmr-read.c      reads: the remapping fast path, reads from memory,
 *                   per-segment counts of reads in flight
 *   dmr-ckpt.c      checkpoints, and loading (checkpoint + replay)
 *   dmr-gc.c        garbage collection: victims, relocation, freeing
 *   dmr-io.c        set-up, tear-down and synchronous I/O helpers
 *   dmr-metadata.c  the superblock
 * and the pure code they call: dmr-map.c (map, segment states, move and
 * reuse rules), dmr-policy.c (GC policy, temperature), dmr-log.c (units,
 * checkpoint headers, replay), dmr-writer.c (writer and loader decisions),
 * dmr-format.c, dmr-table.c.
 *
 * The stack (issue 40), from the top.  Each file calls only files of a
 * lower layer, and the pure code; tests/host/test_layers.py checks it:
 *   layer 0: dmr-target.c
 *   layer 1: dmr-worker.c
 *   layer 2: dmr-gc.c dmr-ckpt.c
 *   layer 3: dmr-write.c dmr-read.c
 *   layer 4: dmr-page.c
 *   layer 5: dmr-metadata.c
 *   layer 6: dmr-io.c
 * A mechanism that needs work from above returns that need to the
 * worker, whose pure decision (dmr_worker_next()) schedules it: GC's
 * policy asking for a checkpoint (dmr_gc_run(): DMR_GC_WANTS_CKPT), the
 * map cache that only a checkpoint lets shrink (dmr_map_trim()), a user
 * write or discard that waits for GC to free a segment (DMR_NO_ROOM) or
 * a discard between its pieces (both held by the worker, struct
 * dmr_target @held), the clean checkpoint to be marked not clean before
 * the log is written (rule 7), and what a checkpoint made reusable
 * (@ckpt_seq moved past @gc_freed_ckpt: GC frees it).  Set-up goes the
 * same way: each layer sets up its own state (dmr_io_init(), then
 * dmr_page_init() and upwards), called by the constructor.  Callbacks a
 * layer registers (work items, bio end functions, the map's page
 * allocator) run that layer's code and queue the worker at most.
 *
 * Concurrency model.  All writes, discards, flushes, checkpoints, garbage
 * collection and reads that must be served from memory are handled by one
 * worker, a single work item that never runs concurrently with itself
 * (dmr-worker.c), so the log heads, the sequence number and GC state
 * have a single owner.  A plain write that comes while the worker is idle
 * and would handle it first is handled by its submitter instead, as the
 * worker would (dmr_worker_inline()): the worker's run and such a write
 * each hold @worker_lock, so that owner is whoever holds it.  A segment that is done is
 * checksummed and written by a second stage (a slot of @flight) while the
 * worker fills the next one; the worker hands the slot its buffer before
 * queueing it and takes the slot back only after its @done, so each
 * buffer has one owner at a time.  The map and segment table are read
 * from the bio submission path too (dmr_map_read() sends reads of data on
 * the device straight down, without a lock), so every change to them is
 * made under @map_lock with entries stored by WRITE_ONCE(), and the
 * worker's own reads of them need no lock.
 *
 * Blocks move: GC copies valid blocks out of a victim segment and the
 * segment is written again later.  A read sent down holds a count on the
 * segment it looked up in @readers: taken before a second lookup that
 * must find the same entry (lock-free, dmr_map_read()), or by the worker,
 * which owns the map; dropped at completion (dmr-read.c).  A segment is
 * reused only when its count is zero (dmr_seg_reusable()), and becomes
 * reusable only after no map entry points into it, so no new count can
 * be taken on it.  The read thus finds the data it looked up, old or new.
 *
 * Lifecycle.  The constructor allocates and, unless another instance of
 * the same device is live (a table reload), loads; otherwise the load
 * waits for preresume, after the old instance's postsuspend wrote its
 * last checkpoint.  An instance writes only while @active: from its load
 * to its postsuspend (see rule 8 in dmr-write.c).
 */
#ifndef DMR_H
#define DMR_H

#define DMR_KERNEL_GLUE
#include <linux/device-mapper.h>
#include <linux/dm-io.h>
#include <linux/atomic.h>
#include <linux/bio.h>
#include <linux/completion.h>
#include <linux/mempool.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "dmr-codec.h"
#include "dmr-table.h"
#include "dmr-map.h"
#include "dmr-log.h"
#include "dmr-writer.h"
#include "dmr-policy.h"

#define DM_MSG_PREFIX "remap"

/* Counters shown in status; reset by the clear_stats message. */
struct dmr_stats {
	atomic64_t user_blocks;		/* 4 KiB blocks written by the user */
	atomic64_t device_blocks;	/* blocks written to the log (all heads) */
	atomic64_t flushes;		/* flush / FUA requests */
	atomic64_t short_units;		/* units sealed before their segment was full */
	atomic64_t discards;		/* discard / write-zeroes bios */
	atomic64_t gc_runs;		/* victims collected */
	atomic64_t gc_moved;		/* blocks relocated by GC */
	atomic64_t segs_freed;		/* segments made free again */
	atomic64_t throttled;		/* user writes that waited for GC */
	atomic64_t device_flushes;	/* flushes made durable on the device */
	/* retired with the zero-copy path (issue 25): 0, in status for parsers */
	atomic64_t zero_copy_blocks;
	atomic64_t zero_copy_recopied;
	atomic64_t gc_read_errors;	/* victim reads that failed (tried again later) */
	atomic64_t gc_unverified;	/* victim units failing their data checksum */
	atomic64_t map_misses;		/* map pages read back (map_cache) */
	atomic64_t map_evictions;	/* map pages that left memory */
	atomic64_t map_forced;		/* checkpoints written to clean pages */
	atomic64_t inline_writes;	/* writes handled by their submitter */
	atomic64_t ckpt_table_blocks;	/* CRC and segment table blocks written */
	atomic64_t read_splits;		/* read pieces past a read's first (scatter) */
	atomic64_t large_segments;	/* large writes' segments of their own */
};

/**
 * struct dmr_head - one log head (worker)
 * @buf: its open segment in memory
 * @unit: the unit being filled
 * @unit_open: @unit has a summary slot at @pos.offset
 * @wp: next free block of the open segment
 * @seg_written: blocks of the open segment written (or in flight); the
 *	closed units after them wait in @buf
 * @pos: the open segment, the offset of the open unit's summary and the
 *	segment reserved to go on in
 * @padded: blocks of the open segment, from its start, written or in
 *	flight: its units, and the zeroed blocks after them that end a write
 *	on a stripe boundary (dmr_stripe_pad()); after a load, where the
 *	head went on
 */
struct dmr_head {
	void *buf;
	struct dmr_unit *unit;
	bool unit_open;
	u32 wp;
	u32 seg_written;
	struct dmr_log_pos pos;
	u32 padded;
};

/**
 * struct dmr_flight - a done segment the second stage checksums and writes
 * @rc: its target
 * @work: dmr_flight_fn()
 * @done: the write finished (its error is in @error)
 * @csummed: a large segment's @csum is computed (completed before its
 *	write starts; dmr_large_csum_give() waits for it)
 * @pending: queued and not yet reaped by the worker (worker)
 * @large: a large segment (dmr_write_large()): the second stage computes
 *	its data checksum first, into @csum
 * @csum_given: @csum is in the record of the segment (worker)
 * @error: 0 or the write's error
 * @csum: with @large, dmr_data_csum() of the segment's blocks, once
 *	@csummed
 * @buf: the segment's buffer; a free buffer when not @pending
 * @segment: the segment (DMR_NO_SEGMENT if none; changed under map_lock):
 *	its blocks are served from @buf until the worker reaped the write
 * @off: first block of the write in its segment (a summary)
 * @units_end: block after its last unit (the zeroed blocks after it end
 *	the write on a stripe boundary: dmr_stripe_pad())
 * @nr: blocks of the write: one or more whole units, and those zeroed
 *	blocks
 * @blocknr: device block of @off
 */
struct dmr_flight {
	struct dmr_target *rc;
	struct work_struct work;
	struct completion done;
	struct completion csummed;
	bool pending;
	bool large;
	bool csum_given;
	int error;
	u32 csum;
	void *buf;
	u32 segment;
	u32 off;
	u32 units_end;
	u32 nr;
	u64 blocknr;
};

/*
 * What dmr_map() keeps per bio: the segment a remapped read holds, and
 * for a write, discard or flush it queues, the worker's @nr_handled when
 * it arrived, and whether the worker began it already (a request held,
 * and resumed: struct dmr_target @held), so it is counted once.
 */
struct dmr_per_bio {
	u32 seg;
	u32 arrived;
	bool begun;
};

/*
 * What handling a request returned to the worker (dmr_do_write(),
 * dmr_do_discard()):
 * @DMR_BIO_ENDED: it ended, or waits for the group commit
 * @DMR_BIO_MORE: a discard's piece is done, not the discard: the worker
 *	holds it and resumes it after trimming the map cache
 * @DMR_BIO_NO_ROOM: it waits for a free segment (DMR_NEED_ROOM): the
 *	worker holds it, runs urgent GC and resumes it
 */
enum dmr_bio_result {
	DMR_BIO_ENDED,
	DMR_BIO_MORE,
	DMR_BIO_NO_ROOM,
};

/* dmr_head_room(): a user head may not take a segment now (throttle) */
#define DMR_NO_ROOM	1

/*
 * What dmr_gc_run() and dmr_gc_background() return, besides a negative
 * errno: it did something, there was nothing to do, or the policy asks
 * for a checkpoint, which the worker writes (DMR_NEED_CKPT_GC).
 */
#define DMR_GC_RAN		0
#define DMR_GC_NOTHING		1
#define DMR_GC_WANTS_CKPT	2

/* A clone of a read the worker sends down: it holds a count on @seg. */
struct dmr_clone {
	struct dmr_target *rc;
	u32 seg;
	struct bio bio;
};

enum dmr_gc_mode {
	DMR_GC_MODE_IDLE,
	DMR_GC_MODE_BACKGROUND,	/* between the watermarks */
	DMR_GC_MODE_URGENT,	/* a user write waits for space */
};

/**
 * struct dmr_target - one dm-remap target instance
 * @ti: the device-mapper target
 * @dev: the formatted device below
 * @opts: optional table arguments
 * @sb: the superblock in use (immutable after the constructor, but for
 *	its generation when a load grows the device, dmr_write_superblock())
 * @grow_from: the device size (blocks) the superblock on the device has
 *	when this instance grows it at load (the constructor set @sb to the
 *	grown geometry), else 0
 * @sb_copy: which superblock copy @sb came from
 * @sb_copies_valid: how many copies validated at load
 * @data_start: first sector of the data area on @dev
 * @io_client: dm-io client for log and metadata I/O
 * @bs: bio set for clones of reads the worker sends down
 * @map_lock: protects @map (entries, segment table and states, dirty
 *	bits, counters), the @flight segments and @gc; taken by status and
 *	messages too, never held across I/O
 * @map: the map and segment table
 * @pc: the map cache (dmr-page.c): which pages stay in memory with the
 *	map_cache option (@pc.cap 0: all of them); the worker's, but for
 *	its used bytes, which the read path sets (dmr_page_clock_ref())
 * @readers: per segment, reads sent down and not completed (atomics)
 * @readers_wq: GC waits here for @readers of emptied segments to drain
 * @bio_lock: protects @bios
 * @worker_lock: held by whoever handles requests: the worker for its
 *	whole run, or a writer handling its own write (dmr_worker_inline());
 *	everything the comments call the worker's is theirs under it
 * @worker_running: the worker holds @worker_lock (a writer that finds
 *	it held by the worker queues its request rather than wait)
 * @bios: bios waiting for the worker
 * @wq: workqueue of @work (one item: never runs concurrently with itself)
 * @flight_wq: unbound workqueue of the second stage, so it runs on other
 *	CPUs, up to DMR_FLIGHT_SLOTS writes at once
 * @flight: the second stage's slots, used in turn (worker)
 * @flight_next: the slot the next done segment takes (worker)
 * @flight_io_lock: with the module parameter flight_serial, held by a slot
 *	for its write (not its checksums): the device below gets one
 *	segment's write at a time
 * @commit_bios: flush and FUA requests waiting for the group commit (worker)
 * @nr_commit: how many (worker)
 * @work: the worker
 * @ckpt_work: periodic checkpoint timer: sets @ckpt_due, queues @work
 * @ckpt_due: a checkpoint is due, the worker does it
 * @mode: enum dmr_mode; written by the worker, read anywhere
 * @first_error: first metadata or log write error (negative errno), kept
 * @heads: the log heads (enum dmr_head_id)
 * @seq: last log sequence number used (worker)
 * @gc: GC watermarks (@map_lock for writers, the worker reads a copy)
 * @gc_active: background GC running (worker)
 * @gc_mode: enum dmr_gc_mode, for status
 * @gc_buf: GC's copy of the victim segment (worker)
 * @gc_unit: scratch for the victim's summaries (worker)
 * @gc_vunit: scratch for the victim's summaries (@gc_verify)
 * @gc_lbas: scratch: the logical blocks the victim's summaries list, for
 *	the read-ahead of their map pages (worker)
 * @gc_ok: per block of the victim, its unit may be moved
 *	(dmr_seg_verify(): written by @gc_verify before @gc_rd_ended, read
 *	by the worker after)
 * @gc_crc: per block of the victim, its dmr_block_digest() where @gc_ok
 *	marks its unit (dmr_seg_verify(); the same hand-over as @gc_ok)
 * @gc_verify_wq: unbound, where @gc_verify runs beside the worker
 * @gc_verify: checks the victim's data when its read ends (dmr-gc.c)
 * @gc_rd_seg: the victim whose read into @gc_buf is pending, in flight or
 *	done and not collected yet, holding a reference in @readers
 *	(DMR_NO_SEGMENT: none; worker, or dmr_worker_stop())
 * @gc_rd_error: that read's dm-io error bits (its end, before @gc_rd_ended)
 * @gc_rd_ended: that read ended (release/acquire with @gc_rd_error)
 * @gc_rd_done: complete while no read's end is running: re-armed at
 *	submission, completed (complete_all()) as the end's last action
 * @gc_retry: some segment is DMR_SEG_GCERR: dmr_gc_retry() after the next
 *	checkpoint (worker)
 * @discard_free: discard freed segments on @dev
 * @temp: the write temperature estimate (worker)
 * @total_user: user blocks written since format (worker; status reads it)
 * @total_log: log blocks written since format (worker; status reads it)
 * @total_moved: blocks relocated since format (worker; status reads it)
 * @suspended: between postsuspend and resume: no periodic checkpoints
 * @stopping: dmr_worker_stop() began: the timer is not re-armed
 * @read_only: never write the device (read_only option or read-only table)
 * @loaded: dmr_load() succeeded
 * @deferred: another instance of the device was live at construction:
 *	load at preresume
 * @active: this instance owns the device for writing (load to postsuspend)
 * @ckpt_clean_on_disk: the newest checkpoint on the device is clean: mark
 *	it dirty before the next write (rule 7, worker)
 * @last_ckpt: header of the newest checkpoint on the device (worker)
 * @zero_crc: CRC32C of an all-zero block (an unmapped map block)
 * @node: entry in the list of instances (dmr-target.c)
 * @ckpt_requested: the due checkpoint is written even if nothing changed
 * @ckpt_seq: sequence number of the last checkpoint written or loaded
 * @ckpt_log_seq: log sequence number the last checkpoint covers (worker)
 * @ckpt_slot: slot the next checkpoint goes to (worker)
 * @ckpt_other_blank: that slot was never written (a device fresh from
 *	format): dmr_mark_dirty() writes a checkpoint there (worker)
 * @map_crc: CRC32C of each map block as last written to a slot (worker)
 * @tab_hash: per slot, a 64-bit hash of each block of its CRC table then
 *	its segment table as this instance last wrote it there (worker;
 *	dmr_write_table())
 * @tab_known: @tab_hash of that slot holds what the slot holds: set by a
 *	checkpoint whose table writes all succeeded, cleared when one starts
 *	(worker)
 * @bounce: scratch for checkpoint I/O, DMR_BOUNCE_BLOCKS blocks (worker)
 * @replayed: log units applied at load
 * @ctl_lock: serialises the checkpoint message with postsuspend,
 *	preresume and resume (dm holds only SRCU around a message)
 * @gc_collect_req: the gc_collect message waits for the worker to collect
 * @gc_collect_result: what dmr_gc_collect_now() returned for it (worker)
 * @commit_behind: requests the worker handled since the oldest flush in
 *	@commit_bios arrived (worker; dmr_group_commit_now())
 * @commit_since: @nr_handled when that flush arrived (worker)
 * @nr_handled: requests the worker handled, a count that wraps (written
 *	by the worker only; dmr_map() reads it without a lock: a stale
 *	value only makes the count from arrival larger, a commit sooner)
 * @gc_owed: background GC steps deferred while flushes waited (worker;
 *	dmr_gc_owed_after_request())
 * @need: DMR_NEED_* the mechanisms below returned to the worker, not
 *	served yet (worker; dmr_worker_next() schedules them)
 * @held: a request begun and not done, which goes on before any other:
 *	a discard between its pieces, a write waiting for room (worker)
 * @room_wait: @held waits, or waited, for room: throttled was counted
 *	and @gc_mode is urgent until it ends (worker)
 * @gc_freed_ckpt: @ckpt_seq when GC last freed what a checkpoint made
 *	reusable (worker; DMR_WORKER_GC_FREE while they differ)
 * @stats: counters
 */
/*
 * Map pages evicted, waiting for an RCU grace period to be freed
 * (dmr_page_free_rcu()): a fixed array, so that letting a page go never
 * allocates memory in the worker.
 */
#define DMR_EVICT_BATCH	64

/*
 * Map pages set aside for the worker when memory is short
 * (dmr_map_page_get(); issue 40, item 11): 128 KiB a target.
 */
#define DMR_MAP_RESERVE	32

struct dmr_page_batch {
	struct rcu_head rcu;
	struct dmr_target *rc;
	unsigned int nr;
	bool busy;		/* handed to call_rcu(), not yet freed */
	u32 *pages[DMR_EVICT_BATCH];
};

struct dmr_target {
	struct dm_target *ti;
	struct dm_dev *dev;
	struct dmr_options opts;
	struct dmr_sb sb;
	unsigned int sb_copy;
	unsigned int sb_copies_valid;
	u64 grow_from;
	sector_t data_start;
	struct dm_io_client *io_client;
	struct bio_set bs;

	spinlock_t map_lock;	/* map, segment states, flight_segment, gc */
	struct dmr_map map;
	struct dmr_page_clock pc;
	struct dmr_prefetch *pf;	/* GC's map page read-ahead (worker) */
	/*
	 * Evicted map pages, freed after an RCU grace period in batches
	 * (dmr_page_free_rcu()): the worker's (the load's before it runs);
	 * a batch's @busy is shared with its RCU callback, which clears it
	 * and wakes @evict_wq.
	 */
	struct dmr_page_batch evict[2];
	mempool_t *page_pool;	/* the map page reserve (its own lock) */
	unsigned int evict_cur;
	wait_queue_head_t evict_wq;
	u32 *load_valid;	/* dmr_load() only: counts per segment */
	u64 load_mapped;	/* and of mapped blocks (dmr_map_cache_loaded()) */
	bool replay_ckpt;	/* dmr_load(): replay may checkpoint (dmr_replay_step()) */
	int replay_ckpt_err;	/* the error of the one that failed, if one did */
	atomic_t *readers;
	wait_queue_head_t readers_wq;

	spinlock_t bio_lock;		/* bios */
	struct mutex worker_lock;	/* the worker's state (dmr_worker_inline()) */
	bool worker_running;
	struct bio_list bios;
	struct workqueue_struct *wq;
	struct work_struct work;
	struct delayed_work ckpt_work;

	struct workqueue_struct *flight_wq;
	struct dmr_flight flight[DMR_FLIGHT_SLOTS];
	unsigned int flight_next;
	struct mutex flight_io_lock;	/* one slot's write at a time (flight_serial) */

	struct bio_list commit_bios;
	u32 nr_commit;

	int mode;
	int first_error;

	struct dmr_head heads[DMR_NR_HEADS];
	u64 seq;
	struct dmr_gc_params gc;
	bool gc_active;
	int gc_mode;
	void *gc_buf;
	struct dmr_unit *gc_unit;
	struct dmr_unit *gc_vunit;
	u64 *gc_lbas;
	u8 *gc_ok;
	u32 *gc_crc;
	struct workqueue_struct *gc_verify_wq;
	struct work_struct gc_verify;
	u32 gc_rd_seg;
	unsigned long gc_rd_error;
	bool gc_rd_ended;
	struct completion gc_rd_done;
	bool gc_retry;
	bool discard_free;
	struct dmr_temp temp;
	u64 total_user;
	u64 total_log;
	u64 total_moved;

	bool suspended;
	bool stopping;
	bool read_only;
	bool loaded;
	bool deferred;
	bool active;
	bool ckpt_clean_on_disk;
	struct dmr_ckpt last_ckpt;
	u32 zero_crc;
	struct list_head node;
	bool ckpt_requested;
	bool ckpt_due;
	u64 ckpt_seq;
	u64 ckpt_log_seq;
	unsigned int ckpt_slot;
	bool ckpt_other_blank;
	u32 *map_crc;
	u64 *tab_hash;
	bool tab_known[2];
	void *bounce;
	u64 replayed;
	struct mutex ctl_lock;	/* message vs postsuspend/preresume/resume */
	bool gc_collect_req;
	int gc_collect_result;
	u32 commit_behind;
	u32 commit_since;
	u32 nr_handled;
	u32 gc_owed;
	u32 need;
	struct bio *held;
	bool room_wait;
	u64 gc_freed_ckpt;
	struct dmr_stats stats;
};

/*
 * Take one from a test hook's fault count (fault_flight_fail,
 * fault_page_alloc); true if there was one to take.
 */
static inline bool dmr_fault_take(unsigned int *count)
{
	unsigned int n = READ_ONCE(*count);

	while (n) {
		unsigned int old = cmpxchg(count, n, n - 1);

		if (old == n)
			return true;
		n = old;
	}
	return false;
}

static inline u32 dmr_seg_blocks(const struct dmr_target *rc)
{
	return rc->sb.geo.segment_blocks;
}

/* Device block of block @offset of segment @seg. */
static inline u64 dmr_seg_block(const struct dmr_target *rc, u32 seg, u32 offset)
{
	return rc->sb.geo.data_offset + (u64)seg * dmr_seg_blocks(rc) + offset;
}

/* Functions defined in dmr-metadata.c */
int __must_check dmr_write_superblock(struct dmr_target *rc);
int __must_check dmr_read_superblock(struct block_device *bdev,
				     struct dmr_sb *sb, unsigned int *copy,
				     unsigned int *nr_valid,
				     const char **error);

/* Functions defined in dmr-io.c */
int __must_check dmr_io_init(struct dmr_target *rc, const char **error);
void dmr_io_exit(struct dmr_target *rc);
int dmr_rw(struct dmr_target *rc, blk_opf_t opf, u64 blocknr, u32 nr, void *buf);
void dmr_fail(struct dmr_target *rc, int err, const char *what);
u64 dmr_map_memory(const struct dmr_target *rc);
void *dmr_alloc_dev_array(const struct dmr_target *rc, enum dmr_array a);

/* Functions defined in dmr-worker.c */
void dmr_queue_bio(struct dmr_target *rc, struct bio *bio);
bool dmr_worker_inline(struct dmr_target *rc, struct bio *bio);
void dmr_worker(struct work_struct *work);
void dmr_worker_init(struct dmr_target *rc);
int dmr_checkpoint_now(struct dmr_target *rc, bool clean);
void dmr_worker_stop(struct dmr_target *rc);
void dmr_worker_start(struct dmr_target *rc);

/* Functions defined in dmr-write.c */
u64 dmr_bio_lba(struct dmr_target *rc, struct bio *bio);
enum dmr_bio_result dmr_do_write(struct dmr_target *rc, struct bio *bio);
enum dmr_bio_result dmr_do_discard(struct dmr_target *rc, struct bio *bio);
void dmr_write_init(struct dmr_target *rc);
int dmr_flight_wait(struct dmr_target *rc);
int dmr_flush_all(struct dmr_target *rc, bool flush_device);
int dmr_head_room(struct dmr_target *rc, unsigned int hid, u32 want, u32 *n);
int dmr_seal(struct dmr_target *rc, struct dmr_head *h, bool sync);
void dmr_head_enter(struct dmr_target *rc, struct dmr_head *h, u32 seg);

/* Functions defined in dmr-read.c */
bool dmr_map_read(struct dmr_target *rc, struct bio *bio);
void dmr_do_read(struct dmr_target *rc, struct bio *bio);
void dmr_reader_put(struct dmr_target *rc, u32 seg);

/* Functions defined in dmr-ckpt.c */
int __must_check dmr_load(struct dmr_target *rc, const char **error);
int dmr_checkpoint(struct dmr_target *rc, bool clean);
void dmr_checkpoint_due(struct dmr_target *rc);
int dmr_mark_dirty(struct dmr_target *rc);

/* Functions defined in dmr-page.c */
int dmr_page_init(struct dmr_target *rc, const char **error);
void dmr_page_exit(struct dmr_target *rc);
int dmr_map_cache_loaded(void *ctx, u64 p);
int dmr_map_cache_replay(void *ctx, u64 lba, u64 n);
void dmr_map_cache_start(struct dmr_target *rc);
int __must_check dmr_map_need(struct dmr_target *rc, u64 lba, u64 n);
bool dmr_map_resident(struct dmr_target *rc, u64 lba, u64 n);
u32 dmr_map_prefetch(struct dmr_target *rc, const u64 *lba, u32 n);
int __must_check dmr_map_need_part(struct dmr_target *rc, u64 lba, u64 n, bool whole,
				   u64 *got);
bool dmr_map_trim(struct dmr_target *rc);

/* Functions defined in dmr-gc.c */
void dmr_gc_init(struct dmr_target *rc);
int dmr_gc_run(struct dmr_target *rc, bool urgent);
int dmr_gc_background(struct dmr_target *rc);
bool dmr_gc_idle(struct dmr_target *rc);
void dmr_gc_read_drop(struct dmr_target *rc);
void dmr_gc_free_ready(struct dmr_target *rc);
void dmr_gc_prefree_waiting(struct dmr_target *rc, struct dmr_gc_state *st);
void dmr_gc_retry(struct dmr_target *rc);
int dmr_gc_collect_now(struct dmr_target *rc);

#endif /* DMR_H */
