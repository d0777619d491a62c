/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap: internal interfaces of the kernel module.
 *
 * Concurrency model.  All writes, discards, flushes, checkpoints and reads
 * that must be served from memory are handled by one worker, a single work
 * item that never runs concurrently with itself (dmr-io.c), so the log
 * writer state (open unit, segment buffer, log position) has a single
 * owner and needs no lock.  A segment that is done is checksummed and
 * written by a second stage (@flight_work) while the worker fills the
 * other buffer; the worker hands it @flight_buf before queueing it and
 * takes it back only after @flight_done, so it too has one owner at a
 * time.  The map and segment table are read from the bio submission path
 * too (dmr_map() sends reads of data already on the device straight
 * down), so every change to them, and to @open_segment and
 * @flight_segment, is made under @map_lock.  Blocks are never moved once
 * on the device (there is no garbage collection yet), so a read sent down
 * with a location looked up under @map_lock always finds the data it
 * looked up, old or new.
 *
 * Lifecycle.  The constructor allocates and, unless another instance of
 * the same device is live (a table reload), loads; otherwise the load
 * waits for preresume, after the old instance's postsuspend wrote its
 * last checkpoint.  An instance writes only while @active: from its load
 * to its postsuspend (see rule 8 in dmr-io.c).
 */
#ifndef DMR_H
#define DMR_H

#define DMR_KERNEL_GLUE
#include <linux/device-mapper.h>
#include <linux/dm-io.h>
#include <linux/atomic.h>
#include <linux/bio.h>
#include <linux/completion.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "dmr-codec.h"
#include "dmr-table.h"
#include "dmr-map.h"
#include "dmr-log.h"
#include "dmr-writer.h"

#define DM_MSG_PREFIX "remap"

/* Counters shown in status; reset by the clear_stats message. */
struct dmr_stats {
	atomic64_t user_blocks;		/* 4 KiB blocks written by the user */
	atomic64_t device_blocks;	/* blocks written to the log */
	atomic64_t flushes;		/* flush / FUA requests */
	atomic64_t short_units;		/* units sealed before their segment was full */
	atomic64_t discards;		/* discard / write-zeroes bios */
};

/**
 * struct dmr_target - one dm-remap target instance
 * @ti: the device-mapper target
 * @dev: the formatted device below
 * @opts: optional table arguments
 * @sb: the superblock in use (immutable after the constructor)
 * @sb_copy: which superblock copy @sb came from
 * @sb_copies_valid: how many copies validated at load
 * @data_start: first sector of the data area on @dev
 * @io_client: dm-io client for log and metadata I/O
 * @bs: bio set for clones of reads sent down
 * @map_lock: protects @map (entries, segment table, dirty bits),
 *	@open_segment and @flight_segment; taken in the submission path,
 *	so never held across I/O
 * @map: the map and segment table
 * @open_segment: segment whose blocks are served from @segbuf
 * @flight_segment: segment whose last unit the second stage is writing
 *	from @flight_buf (DMR_NO_SEGMENT if none); its blocks are served
 *	from there until the worker has seen the write complete
 * @bio_lock: protects @bios
 * @bios: bios waiting for the worker
 * @wq: workqueue of @work (one item: never runs concurrently with itself)
 * @flight_wq: unbound workqueue of @flight_work, so it runs on another CPU
 * @flight_work: the writer's second stage: checksum and write a full segment
 * @flight_done: @flight_work finished (its error is in @flight_error)
 * @flight_pending: @flight_work queued and not yet waited for (worker)
 * @flight_error: 0 or the second stage's write error
 * @flight_buf: buffer of @flight_segment; free otherwise
 * @flight_off: first block of that write in its segment (a summary)
 * @flight_nr: blocks of that write: one or more whole units
 * @flight_blocknr: device block of @flight_off
 * @flight_opf: request flags of that write
 * @work: the worker
 * @ckpt_work: periodic checkpoint timer: sets @ckpt_due, queues @work
 * @ckpt_due: a checkpoint is due, the worker does it
 * @mode: enum dmr_mode; written by the worker, read anywhere
 * @first_error: first metadata or log write error (negative errno), kept
 * @segbuf: the open segment in memory (worker)
 * @unit: the unit being filled (worker)
 * @unit_open: @unit has a summary slot at @pos.offset (worker)
 * @wp: next free block in the open segment (worker)
 * @seg_fresh: nothing written to the open segment yet (worker)
 * @seg_written: blocks of the open segment written (or in flight); the
 *	closed units after them wait in @segbuf (worker)
 * @pos: log position: open segment, offset of the open unit's summary,
 *	the segment after it, last sequence number written (worker)
 * @alloc_cursor: segment allocator cursor (worker)
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
 * @map_crc: CRC32C of each map block as last written to a slot (worker)
 * @bounce: scratch for checkpoint I/O, DMR_BOUNCE_BLOCKS blocks (worker)
 * @replayed: log units applied at load
 * @stats: counters
 */
struct dmr_target {
	struct dm_target *ti;
	struct dm_dev *dev;
	struct dmr_options opts;
	struct dmr_sb sb;
	unsigned int sb_copy;
	unsigned int sb_copies_valid;
	sector_t data_start;
	struct dm_io_client *io_client;
	struct bio_set bs;

	spinlock_t map_lock;	/* map, segment table, open/flight_segment */
	struct dmr_map map;
	u32 open_segment;
	u32 flight_segment;

	spinlock_t bio_lock;		/* bios */
	struct bio_list bios;
	struct workqueue_struct *wq;
	struct work_struct work;
	struct delayed_work ckpt_work;

	struct workqueue_struct *flight_wq;
	struct work_struct flight_work;
	struct completion flight_done;
	bool flight_pending;
	int flight_error;
	void *flight_buf;
	u32 flight_off;
	u32 flight_nr;
	u64 flight_blocknr;
	blk_opf_t flight_opf;

	int mode;
	int first_error;

	void *segbuf;
	struct dmr_unit *unit;
	bool unit_open;
	u32 wp;
	bool seg_fresh;
	u32 seg_written;
	struct dmr_log_pos pos;
	u32 alloc_cursor;
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
	u32 *map_crc;
	void *bounce;
	u64 replayed;
	struct dmr_stats stats;
};

/* Functions defined in dmr-metadata.c */
int __must_check dmr_read_superblock(struct block_device *bdev,
				     struct dmr_sb *sb, unsigned int *copy,
				     unsigned int *nr_valid,
				     const char **error);

/* Functions defined in dmr-io.c */
int __must_check dmr_io_init(struct dmr_target *rc, const char **error);
void dmr_io_exit(struct dmr_target *rc);
int __must_check dmr_load(struct dmr_target *rc, const char **error);
int dmr_map_read(struct dmr_target *rc, struct bio *bio);
void dmr_queue_bio(struct dmr_target *rc, struct bio *bio);
int dmr_checkpoint_now(struct dmr_target *rc, bool clean);
void dmr_worker_stop(struct dmr_target *rc);
void dmr_worker_start(struct dmr_target *rc);
u64 dmr_map_memory(const struct dmr_target *rc);

#endif /* DMR_H */
