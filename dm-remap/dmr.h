/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap: internal interfaces of the kernel module.
 *
 * Concurrency model: a struct dmr_target is built by the constructor and
 * torn down by the destructor, which device-mapper never runs concurrently
 * with I/O.  In pass-through mode the I/O path touches only immutable
 * geometry and atomic counters, so it takes no lock.
 */
#ifndef DMR_H
#define DMR_H

#define DMR_KERNEL_GLUE
#include <linux/device-mapper.h>
#include <linux/atomic.h>

#include "dmr-codec.h"
#include "dmr-table.h"

#define DM_MSG_PREFIX "remap"

/* I/O statistics shown in status; reset by the clear_stats message. */
struct dmr_stats {
	atomic64_t reads;
	atomic64_t writes;
	atomic64_t discards;
	atomic64_t flushes;
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
	struct dmr_stats stats;
};

/* Functions defined in dmr-metadata.c */
int __must_check dmr_read_superblock(struct block_device *bdev,
				     struct dmr_sb *sb, unsigned int *copy,
				     unsigned int *nr_valid,
				     const char **error);

#endif /* DMR_H */
