/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap kernel compatibility: every kernel-version difference lives here.
 *
 * Supported: Linux 6.1 LTS through 6.12 LTS.  Differences are detected by
 * feature probes (a macro the newer API defines), not by version numbers.
 */
#ifndef DMR_COMPAT_H
#define DMR_COMPAT_H

/* crc32c(): declared in <linux/crc32c.h> in every supported kernel. */
#include <linux/crc32c.h>

/* xxh64(): <linux/xxhash.h> (lib/xxhash.c) in every supported kernel. */
#include <linux/xxhash.h>

/* 64-bit division helpers (div64_u64) for 32-bit builds. */
#include <linux/math64.h>

#ifdef DMR_KERNEL_GLUE
#include <linux/device-mapper.h>

/*
 * Block device open modes: fmode_t FMODE_* until 6.5, then blk_mode_t
 * BLK_OPEN_*, which are macros, so their presence is the probe.
 * dmr_table_writable() says whether the table was loaded read-write;
 * DMR_OPEN_READ is the mode for a read-only open.
 */
#ifdef BLK_OPEN_WRITE
#define DMR_OPEN_WRITE	BLK_OPEN_WRITE
#define DMR_OPEN_READ	BLK_OPEN_READ
#else
#define DMR_OPEN_WRITE	FMODE_WRITE
#define DMR_OPEN_READ	FMODE_READ
#endif

static inline bool dmr_table_writable(struct dm_target *ti)
{
	return dm_table_get_mode(ti->table) & DMR_OPEN_WRITE;
}

/*
 * dm_io() gained an ioprio argument in 6.9; Debian's 6.1 kernels carry
 * that change as a stable backport, so both supported trees take five
 * arguments.  A vanilla 6.1 needs the four-argument call here.
 */
#include <linux/dm-io.h>
#include <linux/ioprio.h>

static inline int dmr_dm_io(struct dm_io_request *req, struct dm_io_region *region,
			    unsigned long *error_bits)
{
	return dm_io(req, 1, region, error_bits, IOPRIO_DEFAULT);
}

/*
 * The kernel's vmalloc space, for dmr_map_fits(): VMALLOC_TOTAL where the
 * architecture defines it (x86-64, arm64), else unknown (0: not checked).
 */
#include <linux/vmalloc.h>
#include <linux/pgtable.h>

static inline u64 dmr_vmalloc_total(void)
{
#ifdef VMALLOC_TOTAL
	return VMALLOC_TOTAL;
#else
	return 0;
#endif
}

#endif /* DMR_KERNEL_GLUE */

#endif /* DMR_COMPAT_H */
