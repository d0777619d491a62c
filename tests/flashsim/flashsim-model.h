/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * flashsim: a test-only model of a flash drive's service time.
 *
 * This header and flashsim-model.c are pure: no bio, no lock, no
 * allocation, no clock.  The caller (dm-flashsim-target.c in the kernel,
 * flashsim-model-test.c in userspace) owns the memory, serialises every
 * call on one model and supplies "now"; the model answers what one
 * command costs on the media (in nanoseconds) and updates its state, the
 * way the drive's flash translation layer (FTL) would.
 *
 * Two FTLs:
 *
 *   block  a block-mapped (log-block) FTL: 2007 SSDs, SD cards, eMMC, USB
 *          sticks, DRAM-less SSDs.  Up to open_blocks erase blocks are open
 *          (LRU), each with a write pointer.  A write that continues an open
 *          block at its write pointer, or starts an erase block at offset 0,
 *          costs its program time; any other write costs one read-modify-
 *          write (merge) of the erase block: read it whole, erase, program
 *          it whole.  The merge opens the block with its write pointer just
 *          after the write, so a sequential stream that started mid-block
 *          pays once.  A block whose write pointer reaches its end closes.
 *   page   a page-mapped FTL: modern SSDs.  A page map over spare percent
 *          more flash than the logical size; writes append to one log;
 *          when fewer than FLASHSIM_GC_FREE erase blocks are free, greedy
 *          GC copies the valid pages of the block with the fewest and
 *          erases it, and the write that triggered it pays for the copies
 *          and the erase.  DISCARD unmaps pages.
 *
 * Reads cost read_us + size / read bandwidth in both modes.
 *
 * Memory (flashsim_state_bytes()): block mode keeps only its open blocks
 * (no per-GiB state); page mode 4 bytes per logical page (map), 4 per
 * physical page (reverse map) and 8 per erase block: about 2.1 MiB per
 * GiB with 4 KiB pages and spare=7.  FLASHSIM_MAX_STATE caps it.
 */
#ifndef FLASHSIM_MODEL_H
#define FLASHSIM_MODEL_H

#ifdef __KERNEL__
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/string.h>
#include <linux/types.h>
#else
#include "dmr-user.h"
#endif

enum flashsim_mode {
	FLASHSIM_BLOCK,
	FLASHSIM_PAGE,
};

/* Most open erase blocks a block-mapped model keeps (log blocks). */
#define FLASHSIM_MAX_OPEN	16
/* Free erase blocks page-mode GC keeps (one to write, one in reserve). */
#define FLASHSIM_GC_FREE	2
/*
 * Spare erase blocks page mode needs beyond the logical size, so that a
 * GC victim always has an invalid page (see flashsim_params_check()).
 */
#define FLASHSIM_MIN_SPARE_BLOCKS	4
/* Most model state a table may ask for: test devices only. */
#define FLASHSIM_MAX_STATE	(256ULL << 20)
/* No page: the map's "unmapped" and the reverse map's "free/invalid". */
#define FLASHSIM_NO_PAGE	0xffffffffU

/* Parameters: what the table line sets (flashsim_parse_param()). */
struct flashsim_params {
	enum flashsim_mode mode;
	u32 page_kib;		/* flash page, the page map's unit */
	u32 erase_kib;		/* erase block */
	u32 read_us;		/* per read command (access time) */
	u32 write_us;		/* per write command */
	u32 read_mibs;		/* read bandwidth, MiB/s */
	u32 prog_mibs;		/* program bandwidth, MiB/s */
	u32 erase_us;		/* one erase block erase */
	u32 open_blocks;	/* block mode: open erase blocks (LRU) */
	u32 spare;		/* page mode: over-provisioning, percent */
	u32 flush_us;		/* per flush (cache flush) command */
};

/* Counters, reported by dmsetup status and zeroed by "reset". */
struct flashsim_counters {
	u64 reads;
	u64 writes;
	u64 discards;
	u64 flushes;
	u64 host_pages;		/* pages the host wrote */
	u64 flash_pages;	/* pages programmed on flash: host, merge, GC */
	u64 rmws;		/* block mode: erase-block read-modify-writes */
	u64 gc_copies;		/* page mode: valid pages GC copied */
	u64 erases;
	u64 busy_ns;		/* media busy time: sum of the costs */
};

struct flashsim_open {
	u64 block;		/* erase block number */
	u64 wp;			/* write pointer, sectors into the block */
	u64 stamp;		/* LRU: larger is more recent; 0 = slot free */
};

struct flashsim_model {
	struct flashsim_params p;
	u64 nr_sectors;		/* logical size */
	u32 page_sectors;
	u32 erase_sectors;
	u32 pages_per_block;

	/* block mode */
	struct flashsim_open open[FLASHSIM_MAX_OPEN];
	u64 clock;		/* LRU stamps */

	/* page mode: arrays carved from the caller's memory */
	u32 nr_lpages;
	u32 nr_blocks;
	u32 *l2p;		/* logical page -> physical page */
	u32 *p2l;		/* physical page -> logical page */
	u32 *valid;		/* valid pages per erase block */
	u32 *free;		/* stack of free erase blocks */
	u32 nr_free;
	u32 active;		/* erase block the log appends to */
	u32 active_wp;		/* next page in it; pages_per_block: full */

	struct flashsim_counters c;
};

/* Set p to the defaults of mode's profile (see the .rst). */
void flashsim_params_default(struct flashsim_params *p, enum flashsim_mode mode);
/* Parse "block"/"page"; 0 or -EINVAL. */
int flashsim_parse_mode(const char *arg, enum flashsim_mode *mode);
/* Apply one "key=value"; *seen tracks keys given; 0 or -EINVAL, *why set. */
int flashsim_parse_param(struct flashsim_params *p, const char *arg, u32 *seen,
			 const char **why);
/* Emit the table's "key=value ..." form of p into buf; bytes written. */
int flashsim_format_params(const struct flashsim_params *p, char *buf, size_t len);
/* Whether p fits a device of nr_sectors; 0 or -EINVAL / -ENOMEM, *why set. */
int flashsim_params_check(const struct flashsim_params *p, u64 nr_sectors,
			  const char **why);
/* Bytes of state memory flashsim_model_init() needs (checked params). */
u64 flashsim_state_bytes(const struct flashsim_params *p, u64 nr_sectors);
/* Fresh (erased, unmapped) model over mem of flashsim_state_bytes(). */
void flashsim_model_init(struct flashsim_model *m, const struct flashsim_params *p,
			 u64 nr_sectors, void *mem);

/* Cost in ns of each command, with the state update; counters too. */
u64 flashsim_read(struct flashsim_model *m, u64 sector, u64 nr);
u64 flashsim_write(struct flashsim_model *m, u64 sector, u64 nr);
u64 flashsim_discard(struct flashsim_model *m, u64 sector, u64 nr);
u64 flashsim_flush(struct flashsim_model *m);
void flashsim_reset_counters(struct flashsim_model *m);

/*
 * The media timeline: when a command arriving at now completes, given
 * the time the media is busy until; advances *busy_until.
 */
u64 flashsim_schedule(u64 *busy_until, u64 now, u64 service);

/* Model decisions, exposed for the unit test. */
enum flashsim_wkind {
	FLASHSIM_W_SEQ,		/* continues an open block at its write pointer */
	FLASHSIM_W_FRESH,	/* starts an erase block at offset 0 */
	FLASHSIM_W_RMW,		/* anything else: erase-block read-modify-write */
};

enum flashsim_wkind flashsim_block_classify(const struct flashsim_model *m,
					    u64 block, u64 off);
u64 flashsim_xfer_ns(u64 bytes, u32 mibs);
u64 flashsim_rmw_ns(const struct flashsim_model *m);
u32 flashsim_gc_victim(const struct flashsim_model *m);

#endif /* FLASHSIM_MODEL_H */
