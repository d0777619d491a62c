// SPDX-License-Identifier: GPL-2.0-only
/*
 * Signature probing for the tools that write to devices (remapctl format,
 * bm-flash write tests): filesystems, RAID members, LVM PVs and partition
 * tables through libblkid, and dm-remap's own superblock (block 0 or 1).
 */
#include <blkid/blkid.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmr-probe.h"

#define PROBE_BLOCK	4096
#define DMR_SB_MAGIC_STR	"DM-REMAP"

static int has_dmr_magic(const char *path)
{
	char buf[2 * PROBE_BLOCK];
	ssize_t r;
	int fd, i, found = 0;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	r = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	for (i = 0; i < 2 && (i + 1) * PROBE_BLOCK <= r; i++)
		found |= !memcmp(buf + i * PROBE_BLOCK, DMR_SB_MAGIC_STR,
				 strlen(DMR_SB_MAGIC_STR));
	return found;
}

/**
 * dmr_probe_signature() - look for anything a write would destroy
 * @path: device or image file
 * @found: set to a malloc'ed description of the signature, or NULL
 *
 * Return: 0, or -1 if the device could not be probed.
 */
int dmr_probe_signature(const char *path, char **found)
{
	int r;

	*found = NULL;
	r = has_dmr_magic(path);
	if (r < 0)
		return -1;
	if (r) {
		*found = strdup("dm-remap");
		return 0;
	}
	return dmr_probe_foreign(path, found);
}

/**
 * dmr_probe_foreign() - the signatures libblkid knows, dm-remap's aside
 * @path: device or image file
 * @found: set to a malloc'ed description of the signature, or NULL
 *
 * What remapctl probe looks for beside a dm-remap superblock: a RAID-1
 * member whose md metadata sits at its end holds the array's superblock
 * at block 0 too.
 *
 * Return: 0, or -1 if the device could not be probed.
 */
int dmr_probe_foreign(const char *path, char **found)
{
	const char *val = NULL;
	blkid_probe pr;
	int r;

	*found = NULL;
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return -1;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	r = 0;
	switch (blkid_do_safeprobe(pr)) {
	case 0:
		if (!blkid_probe_lookup_value(pr, "TYPE", &val, NULL) ||
		    !blkid_probe_lookup_value(pr, "PTTYPE", &val, NULL))
			*found = strdup(val);
		else
			*found = strdup("unknown signature");
		break;
	case -2:
		*found = strdup("several conflicting signatures");
		break;
	case 1:
		break;
	default:
		r = -1;
	}
	blkid_free_probe(pr);
	return r;
}

/**
 * dmr_wipe_signatures() - erase every signature libblkid finds, as wipefs -a
 * @fd: the device, open for writing
 * @path: its name, for the report
 * @report: where a line per signature wiped goes ("wiped TYPE signature
 *	at offset N"), prefixed with @prog
 * @prog: the program's name
 *
 * Filesystems, RAID members (an md 0.90 or 1.0 superblock at the end of
 * the device too) and partition tables: each magic found is zeroed by
 * blkid_do_wipe(), which steps the probe back, so the loop probes the
 * same area again until nothing is left.  The caller flushes.
 *
 * Return: how many were wiped, or -1 if the probe or a wipe failed.
 */
int dmr_wipe_signatures(int fd, const char *path, FILE *report, const char *prog)
{
	blkid_probe pr = blkid_new_probe();
	int n = 0;

	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		if (pr)
			blkid_free_probe(pr);
		return -1;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	while (blkid_do_probe(pr) == 0) {
		const char *type = "unknown", *off = NULL;

		if (blkid_probe_lookup_value(pr, "TYPE", &type, NULL))
			blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL);
		if (blkid_probe_lookup_value(pr, "SBMAGIC_OFFSET", &off, NULL))
			blkid_probe_lookup_value(pr, "PTMAGIC_OFFSET", &off, NULL);
		/* the report first: blkid_do_wipe() resets the values */
		fprintf(report, "%s: %s: wiping %s signature at offset %s\n", prog, path,
			type, off ? off : "?");
		if (blkid_do_wipe(pr, 0)) {
			blkid_free_probe(pr);
			return -1;
		}
		n++;
	}
	blkid_free_probe(pr);
	return n;
}
