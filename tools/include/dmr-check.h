/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * remapctl check: an offline consistency check of a dm-remap device
 * (tools/lib/check.c).  It loads the device the way the module's
 * constructor does, with the module's own codec, slot loader, replay and
 * map code, and then checks what the loader takes on trust.
 */
#ifndef DMR_CHECK_H
#define DMR_CHECK_H

#include "dmr-log.h"

/* Exit codes, as fsck's. */
#define DMR_CHECK_CLEAN		0	/* no problem */
#define DMR_CHECK_CORRECTED	1	/* problems found, all repaired */
#define DMR_CHECK_ERRORS	4	/* problems left */
#define DMR_CHECK_OPERATIONAL	8	/* could not check (I/O, not dm-remap) */

/**
 * struct dmr_check - one run of the check
 * @read: block reader of the device
 * @write: block writer (NULL: --repair not given)
 * @flush: makes what @write wrote durable (with @write)
 * @ctx: passed to @read, @write and @flush
 * @dev_blocks: size of the device now, in blocks
 * @progress: report progress on stderr (a terminal)
 * @out: where problems and notes go, one line each
 * @errors: problems found and not repaired (out)
 * @repaired: problems found and repaired (out)
 * @operational: the check could not be completed (out)
 * @units: log units whose summary and data checksum were checked (out)
 * @large: large segments whose data checksum was checked (out)
 * @mapped: mapped logical blocks after replay (out)
 * @replayed: units replay applied (out)
 */
struct dmr_check {
	dmr_read_fn read;
	dmr_write_fn write;
	int (*flush)(void *ctx);
	void *ctx;
	u64 dev_blocks;
	bool progress;
	FILE *out;
	unsigned int errors;
	unsigned int repaired;
	bool operational;
	u64 units;
	u64 large;
	u64 mapped;
	u64 replayed;
};

int dmr_check_run(struct dmr_check *ck);

/*
 * Why a superblock of format @version (not DMR_FORMAT_VERSION) is not
 * read, and what to do, into @buf: the one wording of every command.
 */
void dmr_sb_version_msg(char *buf, size_t len, u32 version);

#endif /* DMR_CHECK_H */
