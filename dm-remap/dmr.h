/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap: internal interfaces of the kernel module.
 *
 * Concurrency model.  All writes, discards, flushes, checkpoints and reads
 * that must be served from memory are handled by one worker, a single work
 * item that never runs concurrently with itself (dmr-io.c), so the log
 * writer state (open unit, segment buffer, log position) has a single
 * owner and needs no lock.  A unit that fills its segment is checksummed
 * and written by a second stage (@flight_work) while the worker fills the
 * other buffer; the worker hands it @flight_unit and @flight_buf before
 * queueing it and takes them back only after @flight_done, so they too
 * have one owner at a time.  The map and
 * segment table are read from the bio submission path too (dmr_map() sends
 * reads of data already on the device straight down), so every change to
 * them, and to @open_segment, is made under @map_lock.  Blocks are never
 * moved once on the device (there is no garbage collection yet), so a read
 * sent down with a location looked up under @map_lock always finds the
 * data it looked up, old or new.
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

#define DM_MSG_PREFIX "remap"

enum dmr_mode {
	DMR_MODE_WRITE,		/* normal */
	DMR_MODE_READ_ONLY,	/* table said read_only */
	DMR_MODE_FAILED,	/* a metadata or log write failed: reads only */
};

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
 * @flight_unit: unit being written by the second stage; free otherwise
 * @flight_buf: buffer of @flight_segment; free otherwise
 * @flight_off: first block (the summary) of that unit in its segment
 * @flight_nr: blocks in that unit, summary included
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
 * @seg_fresh: no unit written to the open segment yet (worker)
 * @pos: log position: open segment, offset of the open unit's summary,
 *	the segment after it, last sequence number written (worker)
 * @alloc_cursor: segment allocator cursor (worker)
 * @suspended: between postsuspend and resume: no periodic checkpoints
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
	struct dmr_unit *flight_unit;
	void *flight_buf;
	u32 flight_off;
	u32 flight_nr;
	blk_opf_t flight_opf;

	int mode;
	int first_error;

	void *segbuf;
	struct dmr_unit *unit;
	bool unit_open;
	u32 wp;
	bool seg_fresh;
	struct dmr_log_pos pos;
	u32 alloc_cursor;
	bool suspended;
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

#define DMR_BOUNCE_BLOCKS	64U

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
