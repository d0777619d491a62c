// SPDX-License-Identifier: GPL-2.0-only
/*
 * remapctl - format and manage dm-remap devices.
 *
 *   remapctl format DEV [--segment-size SIZE] [--overprovision PCT]
 *                       [--label TEXT] [--grow-limit SIZE] [--map-cache MIB]
 *                       [--wide] [--max-memory SIZE] [--force]
 *   remapctl dump [--json] DEV
 *   remapctl check DEV [--repair]
 *   remapctl status [NAME] [--json]
 *   remapctl activate [--remaptab FILE] [--device DEV] [--dry-run]
 *   remapctl deactivate [--remaptab FILE] [--device DEV] [--dry-run]
 *   remapctl probe DEV
 *   remapctl create NAME DEV [--read-only] [--ignore-discard]
 *                            [--checkpoint-interval SECS]
 *                            [--no-discard-passdown] [--gc-low N] [--gc-high N]
 *                            [--map-cache MIB] [--no-stripe-fill]
 *                            [--no-large-writes]
 *   remapctl grow NAME
 *   remapctl remove NAME
 *   remapctl --help | help [COMMAND] | --version
 *
 * create still takes --zero-copy (-z), retired and left out of its usage:
 * the module accepts zero_copy and ignores it, so old remaptab lines and
 * scripts keep working.
 *
 * Every command takes -h and --help (its synopsis and what it does, on
 * standard output, exit 0, nothing else done) and its options before or
 * after its arguments (getopt_long() permutes them; "--" ends the
 * options).  The commands' synopses are in commands[], at the end, which
 * both kinds of help print.
 *
 * The superblock codec and geometry come from ../dm-remap/dmr-format.c,
 * the very code the kernel module runs.
 *
 * format refuses (without --force) a device whose map would need more
 * kernel memory than this machine has; it reads MemTotal and VmallocTotal
 * from /proc/meminfo.  Test hook: the environment variable DMR_MEMINFO
 * names a file read instead of /proc/meminfo, so tests/host can fake a
 * machine's memory.  Likewise DMR_SYSFS_BLOCK and DMR_DEV_DIR stand for
 * /sys/class/block and /dev when activate looks for a UUID=, and
 * DMR_SYSFS_ROOT for /sys when check --repair looks for a loop device on
 * an image.
 *
 * Exit status: 0 success, 1 failure or refusal, 2 bad usage; check exits
 * as fsck does (dmr-check.h): 0 clean, 1 corrected, 4 errors left, 8 the
 * check could not be done.
 */
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dmr-check.h"
#include "dmr-codec.h"
#include "dmr-log.h"
#include "dmr-msg.h"
#include "dmr-probe.h"
#include "dmr-waf.h"
#include "dmr-table.h"
#include "dmr-writer.h"

const char *dmr_prog = "remapctl";

/* dkms.conf's PACKAGE_VERSION, from tools/Makefile */
#ifndef DMR_TOOLS_VERSION
#define DMR_TOOLS_VERSION "unknown"
#endif

/*
 * The commands, their synopses and what each does: "remapctl --help"
 * prints every synopsis, "remapctl COMMAND --help" (or -h, or "remapctl
 * help COMMAND") one command's, with its text.
 */
struct command {
	const char *name;
	const char *synopsis;	/* after "remapctl NAME " */
	const char *summary;	/* one line, for remapctl --help */
	const char *text;	/* for remapctl NAME --help */
	int (*run)(int argc, char **argv);
};

static const struct command *find_command(const char *name);

/* "@lead remapctl NAME SYNOPSIS", its continuation lines under its first argument. */
static void print_synopsis(const char *lead, const struct command *cmd)
{
	int indent = printf("%s%s %s ", lead, dmr_prog, cmd->name);
	const char *p, *nl;

	for (p = cmd->synopsis; (nl = strchr(p, '\n')); p = nl + 1)
		printf("%.*s\n%*s", (int)(nl - p), p, indent, "");
	printf("%s\n", p);
}

static void command_help(const char *name)
{
	const struct command *cmd = find_command(name);

	print_synopsis("Usage: ", cmd);
	printf("\n%s\n", cmd->text);
	printf("Options may come before or after the arguments; -h or --help prints this.\n");
}

/*
 * getopt_long() refused an option (it returned '?'): say which, and why.
 * @optstring: the command's short options, to tell a missing value from
 * an unknown letter.
 */
static void __attribute__((noreturn))
bad_option(const char *cmd, const char *optstring, char *const argv[])
{
	const char *arg = argv[optind - 1], *p;

	if (!strncmp(arg, "--", 2)) {
		int len = strcspn(arg, "=");

		/* optopt is the option's value for a known long option, else 0 */
		if (optopt && arg[len])
			usage_error("%s: option '%.*s' takes no value", cmd, len, arg);
		if (optopt)
			usage_error("%s: option '%s' needs a value", cmd, arg);
		usage_error("%s: unrecognised or ambiguous option '%.*s'", cmd, len, arg);
	}
	p = optopt ? strchr(optstring, optopt) : NULL;
	if (p && p[1] == ':')
		usage_error("%s: option '-%c' needs a value", cmd, optopt);
	usage_error("%s: unrecognised option '-%c'", cmd, optopt);
}

/* Parse "123", "64K", "4M", "1G", "2T" into bytes, at most 4 EiB; -1 on error. */
static long long parse_size(const char *s)
{
	const char *units = "KMGT", *u;
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
	if (u) {
		shift = 10 * (unsigned int)(u - units + 1);
		end++;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end || v > (1ULL << 62) >> shift)
		return -1;
	return v << shift;
}

struct device {
	const char *path;
	int fd;
	bool is_blk;
	uint64_t bytes;
	uint32_t io_opt, io_min;
};

static void open_device(struct device *d, const char *path, int flags, bool excl)
{
	struct stat st;

	d->path = path;
	if (stat(path, &st))
		die("%s: %s", path, strerror(errno));
	d->is_blk = S_ISBLK(st.st_mode);
	if (!d->is_blk && !S_ISREG(st.st_mode))
		die("%s: not a block device or regular file", path);
	d->fd = open(path, flags | (d->is_blk && excl ? O_EXCL : 0));
	if (d->fd < 0) {
		/* in use: always refused, --force or not (as mke2fs, cryptsetup) */
		if (errno == EBUSY)
			die("%s: device is in use (mounted, held by another device or open "
			    "exclusively); refusing to touch it", path);
		die("%s: %s", path, strerror(errno));
	}
	d->io_opt = d->io_min = 0;
	if (d->is_blk) {
		/*
		 * The module writes the device with bios that bypass its page
		 * cache (a grow's superblock, checkpoints, the log): what an
		 * earlier read left cached may be stale.  Drop it (clean pages
		 * only; nothing is lost).
		 */
		posix_fadvise(d->fd, 0, 0, POSIX_FADV_DONTNEED);
		if (ioctl(d->fd, BLKGETSIZE64, &d->bytes))
			die("%s: cannot get size: %s", path, strerror(errno));
		if (ioctl(d->fd, BLKIOOPT, &d->io_opt))
			d->io_opt = 0;
		if (ioctl(d->fd, BLKIOMIN, &d->io_min))
			d->io_min = 0;
	} else {
		d->bytes = st.st_size;
	}
}

static void read_block(struct device *d, uint64_t blocknr, void *buf)
{
	ssize_t r = pread(d->fd, buf, DMR_BLOCK_SIZE, blocknr * DMR_BLOCK_SIZE);

	if (r != DMR_BLOCK_SIZE)
		die("%s: read of block %" PRIu64 " failed: %s", d->path, blocknr,
		    r < 0 ? strerror(errno) : "short read");
}

static void write_block(struct device *d, uint64_t blocknr, const void *buf)
{
	ssize_t r = pwrite(d->fd, buf, DMR_BLOCK_SIZE, blocknr * DMR_BLOCK_SIZE);

	if (r != DMR_BLOCK_SIZE)
		die("%s: write of block %" PRIu64 " failed: %s", d->path, blocknr,
		    r < 0 ? strerror(errno) : "short write");
}

/* Write @nr blocks from @buf (or zeroes if NULL) at @blocknr, in big chunks. */
static void write_blocks(struct device *d, uint64_t blocknr, uint64_t nr,
			 const void *buf)
{
	static void *zeroes;
	const uint64_t chunk = 256;

	if (!buf) {
		if (!zeroes && posix_memalign(&zeroes, DMR_BLOCK_SIZE, chunk * DMR_BLOCK_SIZE))
			die("out of memory");
		memset(zeroes, 0, chunk * DMR_BLOCK_SIZE);
	}
	while (nr) {
		uint64_t n = nr < chunk ? nr : chunk;
		ssize_t r = pwrite(d->fd, buf ? buf : zeroes, n * DMR_BLOCK_SIZE,
				   blocknr * DMR_BLOCK_SIZE);

		if (r != (ssize_t)(n * DMR_BLOCK_SIZE))
			die("%s: write at block %" PRIu64 " failed: %s", d->path, blocknr,
			    r < 0 ? strerror(errno) : "short write");
		if (buf)
			buf = (const char *)buf + n * DMR_BLOCK_SIZE;
		blocknr += n;
		nr -= n;
	}
}

/*
 * Make @nr blocks at @blocknr read as zeroes, without writing them where
 * the device can do it itself.  On a block device, FALLOC_FL_PUNCH_HOLE is
 * a write-zeroes that may unmap (EOPNOTSUPP where the device has none) and
 * FALLOC_FL_ZERO_RANGE one that keeps the blocks allocated; on an image
 * file they punch a hole or allocate zeroed extents.  Only if both fail are
 * the zeroes written.  Either way they are durable after the next
 * sync_device(), as a write would be, so a multi-TiB sparse or thinly
 * provisioned device formats without gigabytes of zeroes being written.
 */
static void zero_blocks(struct device *d, uint64_t blocknr, uint64_t nr)
{
	off_t off = blocknr * DMR_BLOCK_SIZE, len = nr * DMR_BLOCK_SIZE;

	if (!nr)
		return;
	if (!fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) ||
	    !fallocate(d->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len))
		return;
	write_blocks(d, blocknr, nr, NULL);
}

/*
 * Write checkpoint slot 0 as the empty, clean state the module starts
 * from: all-zero map and segment table, a CRC table of zero map blocks, and
 * a header that starts log head h at block 0 of segment h.
 */
static void write_initial_checkpoint(struct device *d, const struct dmr_sb *sb)
{
	const struct dmr_geometry *geo = &sb->geo;
	struct dmr_ckpt_layout l;
	struct dmr_ckpt c = { 0 };
	uint32_t zero_crc, *crcs, sum, b;
	uint64_t i, base = geo->ckpt_offset;
	void *block;

	dmr_ckpt_layout(geo, &l);
	if (posix_memalign(&block, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE) ||
	    posix_memalign((void **)&crcs, DMR_BLOCK_SIZE, l.crc_blocks * DMR_BLOCK_SIZE))
		die("out of memory");
	memset(block, 0, DMR_BLOCK_SIZE);
	zero_crc = crc32c(~0U, block, DMR_BLOCK_SIZE);
	memset(crcs, 0, l.crc_blocks * DMR_BLOCK_SIZE);
	for (i = 0; i < l.map_blocks; i++)
		crcs[i] = htole32(zero_crc);
	c.crc_csum = crc32c(~0U, crcs, l.crc_blocks * DMR_BLOCK_SIZE);
	sum = ~0U;
	for (b = 0; b < l.segtab_blocks; b++)
		sum = crc32c(sum, block, DMR_BLOCK_SIZE);
	c.segtab_csum = sum;

	write_blocks(d, base + l.crc_offset, l.crc_blocks, crcs);
	zero_blocks(d, base + l.map_offset, l.map_blocks);
	zero_blocks(d, base + l.segtab_offset, l.segtab_blocks);
	c.flags = DMR_CKPT_CLEAN;
	c.seq = 1;
	c.blocknr = base;
	c.logical_blocks = geo->logical_blocks;
	c.nr_segments = geo->nr_segments;
	/*
	 * Head h starts at segment h: no stale unit may be found there (the
	 * first block of each is zeroed).
	 */
	for (i = 0; i < DMR_NR_HEADS; i++) {
		write_blocks(d, geo->data_offset + (uint64_t)i * geo->segment_blocks,
			     1, NULL);
		c.heads[i].segment = i;
		c.heads[i].offset = 0;
		c.heads[i].next_segment = DMR_NO_SEGMENT;
	}
	dmr_ckpt_encode(&c, sb->uuid, block);
	write_block(d, base, block);
	free(crcs);
	free(block);
}

static void sync_device(struct device *d)
{
	if (fsync(d->fd))
		die("%s: fsync failed: %s", d->path, strerror(errno));
}

/* Return a description of any signature found on the device, or NULL. */
static char *find_signature(struct device *d)
{
	char *found;

	if (dmr_probe_signature(d->path, &found))
		die("%s: signature probe failed", d->path);
	return found;
}

static void fmt_bytes(uint64_t b, char *out, size_t len)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = b;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f %s", v, unit[u]);
}

/*
 * Read MemTotal and VmallocTotal, in bytes (0 for a missing line), from
 * /proc/meminfo, or from the file DMR_MEMINFO names (a test hook).
 * Return: 0, or -1 if the file cannot be read or has no MemTotal.
 */
static int read_meminfo(const char **path, uint64_t *mem, uint64_t *vmalloc)
{
	unsigned long long kb;
	char line[256];
	FILE *f;

	*path = getenv("DMR_MEMINFO");
	if (!*path || !**path)
		*path = "/proc/meminfo";
	*mem = *vmalloc = 0;
	f = fopen(*path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			*mem = kb * 1024;
		else if (sscanf(line, "VmallocTotal: %llu kB", &kb) == 1)
			*vmalloc = kb * 1024;
	}
	fclose(f);
	return *mem ? 0 : -1;
}

/*
 * Refuse, unless @force, a geometry whose map the module could not load
 * here with a map cache of @cache MiB (0: the whole map): the map at
 * @geo's grow limit if it has one (what the device will need once grown),
 * against @max bytes (--max-memory), by default half of MemTotal, since
 * the map is kernel memory that is never swapped out and the machine
 * needs the rest (dmr_map_fits(), and the vmalloc space).  With @force,
 * warn and go on (the device may be meant for a bigger machine).
 */
static void check_memory(const struct device *d, const struct dmr_geometry *geo,
			 u32 cache, bool force, uint64_t max)
{
	uint64_t need = dmr_map_memory_bytes(geo, cache), mem, vmalloc, budget;
	char hneed[32], hhave[32], hmem[32], msg[384];
	struct dmr_geometry at_limit;
	const char *path;
	enum dmr_fit fit;

	if (geo->grow_limit && dmr_geometry_grow(geo, geo->grow_limit, &at_limit) == DMR_GEO_OK)
		need = dmr_map_memory_bytes(&at_limit, cache);
	fmt_bytes(need, hneed, sizeof(hneed));
	if (read_meminfo(&path, &mem, &vmalloc) && !max) {
		fprintf(stderr,
			"%s: warning: cannot read MemTotal from %s; the map needs %s (not checked)\n",
			dmr_prog, path, hneed);
		return;
	}
	budget = max ? max : mem / 2;
	fit = dmr_map_fits(need, budget, vmalloc);
	if (fit == DMR_FIT_OK)
		return;
	fmt_bytes(fit == DMR_FIT_NO_MEMORY ? budget : vmalloc, hhave, sizeof(hhave));
	fmt_bytes(mem, hmem, sizeof(hmem));
	if (fit == DMR_FIT_NO_VMALLOC)
		snprintf(msg, sizeof(msg), "the map of this device%s needs %s of kernel memory, "
			 "more than this kernel's %s of vmalloc space",
			 geo->grow_limit ? " at its grow limit" : "", hneed, hhave);
	else if (max)
		snprintf(msg, sizeof(msg), "the map of this device%s needs %s of kernel memory, "
			 "more than the %s --max-memory allows",
			 geo->grow_limit ? " at its grow limit" : "", hneed, hhave);
	else
		snprintf(msg, sizeof(msg), "the map of this device%s needs %s of kernel memory, "
			 "more than %s, half of this machine's %s of RAM (--max-memory allows "
			 "more)", geo->grow_limit ? " at its grow limit" : "", hneed, hhave, hmem);
	if (!force)
		die("%s: %s; refusing to format it (%s)", d->path, msg,
		    cache ? "give it a smaller --map-cache, or use --force to format it "
		    "for a bigger machine" : "give it a --map-cache, or use --force to "
		    "format it for a bigger machine");
	fprintf(stderr, "%s: warning: %s: %s; formatting anyway (--force)\n",
		dmr_prog, d->path, msg);
}

/*
 * The smallest device, in blocks, that formats with these parameters
 * (dmr_geometry_compute_wide()'s: its metadata and the fewest segments
 * fit).  The metadata grows with the device, so that size is the least
 * fixed point of "the metadata of a device of n blocks and the fewest
 * segments": iterated from below, it is reached without passing it.
 * Return: the size, or 0 if no device formats (past the grow limit).
 */
static uint64_t min_device_blocks(uint64_t limit, u32 seg_blocks, u32 op, bool wide)
{
	const uint64_t segs = DMR_RESERVED_SEGMENTS + DMR_MIN_USER_SEGMENTS;
	uint64_t n = segs * seg_blocks, next;
	enum dmr_geo_status st;
	struct dmr_geometry g;

	for (;;) {
		st = dmr_geometry_compute_wide(n, limit, seg_blocks, op, wide, &g);
		if (st == DMR_GEO_OK)
			return n;
		if (st != DMR_GEO_TOO_SMALL)
			return 0;
		/* too small: the metadata and the segments need more than n */
		next = g.data_offset + segs * seg_blocks;
		if (next <= n)
			return 0;
		n = next;
	}
}

/* A device too small for its segment size: say the least size that formats. */
static void __attribute__((noreturn))
too_small(const struct device *d, uint64_t limit, u32 seg_blocks, u32 op, bool wide)
{
	uint64_t min = min_device_blocks(limit, seg_blocks, op, wide);
	char hmin[32], hseg[32];

	fmt_bytes((uint64_t)seg_blocks * DMR_BLOCK_SIZE, hseg, sizeof(hseg));
	if (!min)
		die("%s: device too small for this segment size (%s), and the grow limit "
		    "leaves no room for more", d->path, hseg);
	fmt_bytes(min * DMR_BLOCK_SIZE, hmin, sizeof(hmin));
	die("%s: device too small for this segment size: segments of %s need a device "
	    "of at least %s (%" PRIu64 " bytes), this one has %" PRIu64 " bytes", d->path,
	    hseg, hmin, min * DMR_BLOCK_SIZE, d->bytes);
}

/*
 * A device formatted with 64-bit block numbers: say so when format chose
 * them (@auto_wide), and what the checkpoint slots, sized for 8-byte map
 * entries, take: about 0.4% of the device, or of its grow limit.
 */
static void print_wide(const struct device *d, const struct dmr_geometry *geo,
		       bool auto_wide)
{
	uint64_t slots = (uint64_t)DMR_CKPT_SLOTS * geo->ckpt_slot_blocks;
	uint64_t sized = geo->grow_limit ? geo->grow_limit : geo->device_blocks;
	char hslots[32], hsized[32];

	if (auto_wide)
		printf("%s: past 16 TiB: 64-bit block numbers%s (as --wide: 8 bytes of map "
		       "per block, modules before format 4 refuse it)\n", d->path,
		       geo->grow_limit ? ", for its grow limit" : "");
	fmt_bytes(slots * DMR_BLOCK_SIZE, hslots, sizeof(hslots));
	fmt_bytes(sized * DMR_BLOCK_SIZE, hsized, sizeof(hsized));
	if (geo->grow_limit)
		printf("checkpoint slots: %s, %.1f%% of the grow limit's %s (%.1f%% of the "
		       "device now)\n", hslots, 100.0 * slots / sized, hsized,
		       100.0 * slots / geo->device_blocks);
	else
		printf("checkpoint slots: %s, %.1f%% of the device\n", hslots,
		       100.0 * slots / sized);
}

static int cmd_format(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "segment-size", required_argument, NULL, 's' },
		{ "overprovision", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'l' },
		{ "grow-limit", required_argument, NULL, 'g' },
		{ "map-cache", required_argument, NULL, 'M' },	/* no short option */
		{ "wide", no_argument, NULL, 'W' },		/* no short option */
		{ "max-memory", required_argument, NULL, 'X' },	/* no short option */
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long long seg_bytes = 0, limit_bytes = 0, max_mem = 0;
	u64 op = DMR_DEFAULT_OVERPROVISION, cache = 0;
	const char *label = "", *limit_arg = NULL;
	bool force = false, wide = false, auto_wide = false;
	struct device d;
	struct dmr_sb sb;
	enum dmr_geo_status gst;
	u32 seg_blocks, stripe_blocks;
	char *sig, hsize[32], hseg[32];
	static const char sopts[] = "s:o:l:g:fh";
	void *buf, *zero;
	int c, i;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			seg_bytes = parse_size(optarg);
			if (seg_bytes <= 0 || seg_bytes % DMR_BLOCK_SIZE ||
			    seg_bytes / DMR_BLOCK_SIZE < DMR_MIN_SEGMENT_BLOCKS ||
			    seg_bytes / DMR_BLOCK_SIZE > DMR_MAX_SEGMENT_BLOCKS)
				usage_error("invalid --segment-size '%s' (bytes, with an "
					    "optional K, M or G suffix or KiB, MiB, GiB: a "
					    "multiple of 4K from 256K to 1G)", optarg);
			break;
		case 'o':
			if (dmr_parse_u64(optarg, &op) || op < DMR_MIN_OVERPROVISION ||
			    op > DMR_MAX_OVERPROVISION)
				usage_error("invalid --overprovision '%s' (%u to %u percent)",
					    optarg, DMR_MIN_OVERPROVISION, DMR_MAX_OVERPROVISION);
			break;
		case 'l':
			if (strlen(optarg) > DMR_LABEL_LEN)
				usage_error("--label longer than %d characters", DMR_LABEL_LEN);
			label = optarg;
			break;
		case 'g':
			limit_arg = optarg;
			limit_bytes = parse_size(optarg);
			if (limit_bytes <= 0)
				usage_error("invalid --grow-limit '%s' (a size: 16T, 800G)", optarg);
			break;
		case 'M':
			/* the target's range (dmr-table.c) */
			if (dmr_parse_u64(optarg, &cache) || !cache || cache > DMR_MAX_MAP_CACHE)
				usage_error("invalid --map-cache '%s' (1 to %u MiB)", optarg,
					    DMR_MAX_MAP_CACHE);
			break;
		case 'W':
			wide = true;
			break;
		case 'X':
			max_mem = parse_size(optarg);
			if (max_mem <= 0)
				usage_error("invalid --max-memory '%s' (a size: 512M, 16G)", optarg);
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			command_help("format");
			return 0;
		default:
			bad_option("format", sopts, argv);
		}
	}
	if (optind != argc - 1)
		usage_error("format needs exactly one device");

	if (posix_memalign(&buf, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE) ||
	    posix_memalign(&zero, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE))
		die("out of memory");
	memset(zero, 0, DMR_BLOCK_SIZE);

	/* exclusive even with --force: that overrides signatures only */
	open_device(&d, argv[optind], O_RDWR, true);
	sig = find_signature(&d);
	if (sig && !force)
		die("%s holds a %s signature; refusing to format it (use --force)",
		    d.path, sig);

	stripe_blocks = d.io_opt % DMR_BLOCK_SIZE ? 0 : d.io_opt / DMR_BLOCK_SIZE;
	if (seg_bytes) {
		seg_blocks = seg_bytes / DMR_BLOCK_SIZE;
		if (stripe_blocks && seg_blocks % stripe_blocks)
			fprintf(stderr, "%s: warning: segment size is not a multiple of the "
				"%u KiB full stripe; writes will cause RAID read-modify-write\n",
				dmr_prog, d.io_opt / 1024);
	} else {
		seg_blocks = dmr_default_segment_blocks(d.io_opt, d.io_min);
	}

	memset(&sb, 0, sizeof(sb));
	/* a value this device cannot take is bad usage too (EXIT STATUS: 2) */
	if (limit_bytes && (uint64_t)limit_bytes / DMR_BLOCK_SIZE < d.bytes / DMR_BLOCK_SIZE)
		usage_error("%s: --grow-limit %s is smaller than the device (%" PRIu64 " bytes)",
			    d.path, limit_arg, d.bytes);
	gst = dmr_geometry_compute_wide(d.bytes / DMR_BLOCK_SIZE, limit_bytes / DMR_BLOCK_SIZE,
					seg_blocks, op, wide, &sb.geo);
	/*
	 * Past 16 TiB of data area (or of grow limit): 64-bit block numbers,
	 * which a device that fits in 32 bits does without (they cost it
	 * twice the map memory and 1-2% more writes).  Said with the result.
	 */
	if (gst == DMR_GEO_TOO_LARGE && !wide) {
		wide = auto_wide = true;
		gst = dmr_geometry_compute_wide(d.bytes / DMR_BLOCK_SIZE,
						limit_bytes / DMR_BLOCK_SIZE, seg_blocks, op, wide,
						&sb.geo);
	}
	if (gst == DMR_GEO_TOO_LARGE)
		dmr_exit_msg(limit_bytes ? 2 : 1, "%s: %s too large: at most 2^32 - 2 segments "
			     "(4 PiB of 1 MiB segments; a larger --segment-size reaches further)",
			     d.path, limit_bytes ? "--grow-limit" : "device");
	if (gst == DMR_GEO_TOO_SMALL && limit_bytes && sb.geo.data_offset >= sb.geo.device_blocks) {
		fmt_bytes(sb.geo.data_offset * DMR_BLOCK_SIZE, hsize, sizeof(hsize));
		die("%s: too small for the checkpoint slots of --grow-limit %s (%s)", d.path,
		    limit_arg, hsize);
	}
	if (gst == DMR_GEO_TOO_SMALL)
		too_small(&d, limit_bytes / DMR_BLOCK_SIZE, seg_blocks, op, wide);
	if (gst != DMR_GEO_OK)
		die("%s: %s", d.path, dmr_geo_strerror(gst));
	if (limit_bytes)
		sb.feature_incompat |= DMR_FEATURE_INCOMPAT_GROW;
	check_memory(&d, &sb.geo, cache, force, max_mem);
	sb.version = DMR_FORMAT_VERSION;
	sb.generation = 1;
	sb.ctime = time(NULL);
	sb.stripe_blocks = stripe_blocks;
	snprintf(sb.label, sizeof(sb.label), "%s", label);
	if (getrandom(sb.uuid, sizeof(sb.uuid), 0) != sizeof(sb.uuid))
		die("cannot get random bytes for the uuid");

	/*
	 * --force: every signature libblkid finds is erased, not just those
	 * the blocks written below happen to cover (an md superblock at the
	 * end of the device, a backup elsewhere), and each is named.
	 */
	if (sig) {
		if (!strcmp(sig, "dm-remap"))
			fprintf(stderr, "%s: %s: overwriting its dm-remap superblock (--force)\n",
				dmr_prog, d.path);
		if (dmr_wipe_signatures(d.fd, d.path, stderr, dmr_prog) < 0)
			die("%s: wiping its signatures failed", d.path);
		sync_device(&d);
	}
	free(sig);

	/*
	 * Ordering: first destroy both old superblocks, then clear the
	 * checkpoint slot headers and write the initial checkpoint, flush,
	 * and only then write the new superblocks and flush again.  An
	 * interrupted format leaves no valid superblock pointing at stale
	 * metadata.  The map and segment table are zeroed by fallocate()
	 * where the device supports it (zero_blocks()); the first flush
	 * makes those zeroes durable as it does the written blocks.
	 */
	for (i = 0; i < DMR_SB_COPIES; i++)
		write_block(&d, i, zero);
	for (i = 0; i < DMR_CKPT_SLOTS; i++)
		write_block(&d, sb.geo.ckpt_offset + (u64)i * sb.geo.ckpt_slot_blocks, zero);
	write_initial_checkpoint(&d, &sb);
	sync_device(&d);
	for (i = DMR_SB_COPIES - 1; i >= 0; i--) {
		sb.blocknr = i;
		dmr_sb_encode(&sb, buf);
		write_block(&d, i, buf);
	}
	sync_device(&d);
	close(d.fd);

	fmt_bytes(sb.geo.logical_blocks * DMR_BLOCK_SIZE, hsize, sizeof(hsize));
	fmt_bytes((uint64_t)seg_blocks * DMR_BLOCK_SIZE, hseg, sizeof(hseg));
	printf("formatted %s: %" PRIu64 " segments of %s, overprovision %u%%\n",
	       d.path, (uint64_t)sb.geo.nr_segments, hseg, sb.geo.overprovision);
	printf("logical size: %" PRIu64 " sectors (%s)\n",
	       (uint64_t)sb.geo.logical_blocks * DMR_SECTORS_PER_BLOCK, hsize);
	/* what create --map-cache would load: the cache is the table's */
	printf("table: 0 %" PRIu64 " remap %s", (uint64_t)sb.geo.logical_blocks *
	       DMR_SECTORS_PER_BLOCK, d.path);
	if (cache)
		printf(" 2 map_cache %" PRIu64, cache);
	putchar('\n');
	if (sb.geo.wide)
		print_wide(&d, &sb.geo, auto_wide);
	fmt_bytes(dmr_map_memory_bytes(&sb.geo, cache), hsize, sizeof(hsize));
	if (cache && dmr_map_memory_bytes(&sb.geo, cache) != dmr_map_memory_bytes(&sb.geo, 0))
		printf("kernel memory when loaded: %s with map_cache %" PRIu64
		       " (create --map-cache %" PRIu64 ")\n", hsize, cache, cache);
	else
		printf("kernel memory when loaded: %s\n", hsize);
	if (limit_bytes) {
		struct dmr_geometry at_limit;

		if (dmr_geometry_grow(&sb.geo, sb.geo.grow_limit, &at_limit) == DMR_GEO_OK) {
			fmt_bytes(sb.geo.grow_limit * DMR_BLOCK_SIZE, hsize, sizeof(hsize));
			printf("grows online (remapctl grow) up to a device of %s:", hsize);
			fmt_bytes(at_limit.logical_blocks * DMR_BLOCK_SIZE, hsize, sizeof(hsize));
			printf(" logical size %s,", hsize);
			fmt_bytes(dmr_map_memory_bytes(&at_limit, cache), hsize, sizeof(hsize));
			printf(" kernel memory %s\n", hsize);
		}
	}
	/*
	 * What the spare means: greedy GC's steady state under uniform random
	 * writes over the whole logical space (tools/remap-sim measures the
	 * module within 5% of it at 10%), and with part of it trimmed.
	 */
	printf("predicted write amplification, uniform random writes: %.2f when every\n"
	       "  logical block holds data; blocks the file system discards (mount -o\n"
	       "  discard, fstrim) add to the spare: %.2f with 20%% trimmed, %.2f with 50%%\n",
	       dmr_waf_trimmed(sb.geo.overprovision, 0),
	       dmr_waf_trimmed(sb.geo.overprovision, 0.2),
	       dmr_waf_trimmed(sb.geo.overprovision, 0.5));
	return 0;
}

/*
 * Load the best superblock; print per-copy status when verbose.  A device
 * whose only superblocks are of another format version is refused here,
 * with why and what to do (dmr_sb_version_msg()).
 */
static int load_sb(struct device *d, struct dmr_sb *out, bool verbose)
{
	u32 other = 0;
	struct dmr_sb sb;
	void *buf;
	int i, best = -1;

	if (posix_memalign(&buf, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE))
		die("out of memory");
	for (i = 0; i < DMR_SB_COPIES; i++) {
		enum dmr_sb_status st;

		read_block(d, i, buf);
		st = dmr_sb_decode(buf, i, &sb);
		if (verbose)
			printf("superblock_copy%d=%s\n", i, dmr_sb_strerror(st));
		if (st == DMR_SB_OK && (best < 0 || sb.generation > out->generation)) {
			*out = sb;
			best = i;
		}
		if (st == DMR_SB_BAD_VERSION)
			other = sb.version;
	}
	free(buf);
	if (best < 0 && other) {
		char msg[512];

		/* not "no superblock": say which format, and what to do */
		dmr_sb_version_msg(msg, sizeof(msg), other);
		die("%s: %s", d->path, msg);
	}
	return best;
}

/*
 * Print each checkpoint slot's header and the slot the module would load
 * first (dmr_ckpt_order(), -1 when it would refuse).  Only the headers are checked
 * here, not the map and segment table they checksum.
 */
static void dump_ckpts(struct device *d, const struct dmr_sb *sb)
{
	const struct dmr_geometry *geo = &sb->geo;
	enum dmr_log_status st[DMR_CKPT_SLOTS];
	struct dmr_ckpt c[DMR_CKPT_SLOTS];
	int i, n, bad, order[DMR_CKPT_SLOTS];
	struct dmr_ckpt_layout l;
	unsigned int h;
	void *buf;

	dmr_ckpt_layout(geo, &l);
	if (posix_memalign(&buf, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE))
		die("out of memory");
	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		uint64_t blk = geo->ckpt_offset + (uint64_t)i * geo->ckpt_slot_blocks;

		st[i] = DMR_LOG_READ_ERROR;
		if (pread(d->fd, buf, DMR_BLOCK_SIZE, blk * DMR_BLOCK_SIZE) == DMR_BLOCK_SIZE)
			st[i] = dmr_ckpt_decode(buf, blk, sb->uuid, &c[i]);
		printf("ckpt%d=%s\n", i, dmr_log_strerror(st[i]));
		if (st[i] != DMR_LOG_OK)
			continue;
		printf("ckpt%d_seq=%" PRIu64 "\nckpt%d_clean=%d\nckpt%d_twin=%d\n", i,
		       (uint64_t)c[i].seq, i, !!(c[i].flags & DMR_CKPT_CLEAN), i,
		       !!(c[i].flags & DMR_CKPT_TWIN));
		printf("ckpt%d_log_seq=%" PRIu64 "\n", i, (uint64_t)c[i].log_seq);
		for (h = 0; h < DMR_NR_HEADS; h++) {
			const struct dmr_log_pos *p = &c[i].heads[h];

			printf("ckpt%d_head%u_segment=%lld\n", i, h,
			       p->segment == DMR_NO_SEGMENT ? -1LL : (long long)p->segment);
			printf("ckpt%d_head%u_offset=%u\n", i, h, p->offset);
			printf("ckpt%d_head%u_next=%lld\n", i, h,
			       p->next_segment == DMR_NO_SEGMENT ? -1LL :
			       (long long)p->next_segment);
		}
		printf("ckpt%d_user_blocks=%" PRIu64 "\nckpt%d_log_blocks=%" PRIu64 "\n",
		       i, (uint64_t)c[i].user_blocks, i, (uint64_t)c[i].log_blocks);
		printf("ckpt%d_gc_moved=%" PRIu64 "\n", i, (uint64_t)c[i].gc_moved);
		printf("ckpt%d_temp_threshold=%" PRIu64 "\n", i, (uint64_t)c[i].temp_threshold);
		printf("ckpt%d_age_jumps=%u\n", i, c[i].age.nr);
		for (h = 0; h < c[i].age.nr; h++)
			printf("ckpt%d_age_jump%u=%" PRIu64 ":%" PRIu64 "\n", i, h,
			       (uint64_t)c[i].age.at[h], (uint64_t)c[i].age.len[h]);
		printf("ckpt%d_header_block=%" PRIu64 "\nckpt%d_map_block=%" PRIu64 "\n",
		       i, blk, i, blk + l.map_offset);
		printf("ckpt%d_logical_blocks=%" PRIu64 "\nckpt%d_nr_segments=%" PRIu64 "\n",
		       i, (uint64_t)c[i].logical_blocks, i, (uint64_t)c[i].nr_segments);
	}
	/* the module's own choice: an unreadable header refuses the load */
	n = dmr_ckpt_order(st, c, order, &bad);
	printf("newest_ckpt=%d\n", n > 0 ? order[0] : -1);
	free(buf);
}

/* The uuid as dump prints it and remaptab's UUID= takes it. */
static void uuid_str(const u8 *uuid, char *out)
{
	int i, n = 0;

	for (i = 0; i < 16; i++)
		n += sprintf(out + n, "%02x%s", uuid[i],
			     (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
}

/* Print dump's KEY=VALUE lines as one JSON object (numbers as numbers). */
static void print_json_kv(const char *text)
{
	const char *line = text, *eq, *nl;
	bool first = true;

	putchar('{');
	for (; *line; line = *nl ? nl + 1 : nl) {
		const char *v, *p;
		bool num;

		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line);
		eq = memchr(line, '=', nl - line);
		if (!eq)
			continue;
		v = eq + 1;
		num = v < nl && (*v == '-' ? v + 1 < nl : true);
		for (p = *v == '-' ? v + 1 : v; p < nl && num; p++)
			num = *p >= '0' && *p <= '9';
		num = num && !(v[*v == '-'] == '0' && nl - v > 1 + (*v == '-'));
		printf("%s\"%.*s\": ", first ? "" : ", ", (int)(eq - line), line);
		first = false;
		if (num) {
			printf("%.*s", (int)(nl - v), v);
			continue;
		}
		putchar('"');
		for (p = v; p < nl; p++) {
			if (*p == '"' || *p == '\\')
				printf("\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
		putchar('"');
	}
	printf("}\n");
}

static int cmd_dump(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "h";
	struct device d;
	struct dmr_sb sb;
	char uuid[40];
	int copy, c;
	bool json = false;
	FILE *real = stdout;
	char *text = NULL;
	size_t len = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			command_help("dump");
			return 0;
		default:
			bad_option("dump", sopts, argv);
		}
	}
	if (optind != argc - 1)
		usage_error("dump needs exactly one device");
	open_device(&d, argv[optind], O_RDONLY, false);
	/* --json: the same lines, collected, then printed as one object */
	if (json) {
		stdout = open_memstream(&text, &len);
		if (!stdout) {
			stdout = real;
			die("out of memory");
		}
	}
	if (d.bytes < DMR_SB_COPIES * DMR_BLOCK_SIZE)
		die("%s: too small to hold a dm-remap superblock", d.path);
	copy = load_sb(&d, &sb, true);
	if (copy < 0)
		die("%s: no valid dm-remap superblock", d.path);
	uuid_str(sb.uuid, uuid);
	printf("using_copy=%d\nversion=%u\ngeneration=%" PRIu64 "\nuuid=%s", copy,
	       sb.version, (uint64_t)sb.generation, uuid);
	printf("\nlabel=%s\nctime=%" PRIu64 "\n", sb.label, (uint64_t)sb.ctime);
	printf("device_blocks=%" PRIu64 "\nsegment_blocks=%u\nnr_segments=%" PRIu64 "\n",
	       (uint64_t)sb.geo.device_blocks, sb.geo.segment_blocks,
	       (uint64_t)sb.geo.nr_segments);
	printf("data_offset=%" PRIu64 "\nckpt_offset=%" PRIu64 "\nckpt_slot_blocks=%u\n",
	       (uint64_t)sb.geo.data_offset, (uint64_t)sb.geo.ckpt_offset,
	       sb.geo.ckpt_slot_blocks);
	printf("overprovision=%u\nstripe_blocks=%u\nlogical_blocks=%" PRIu64 "\n",
	       sb.geo.overprovision, sb.stripe_blocks, (uint64_t)sb.geo.logical_blocks);
	printf("logical_sectors=%" PRIu64 "\n",
	       (uint64_t)sb.geo.logical_blocks * DMR_SECTORS_PER_BLOCK);
	dump_ckpts(&d, &sb);
	/* added with growing online: after the lines scripts knew before */
	printf("feature_incompat=%u\ngrow_limit=%" PRIu64 "\n", sb.feature_incompat,
	       (uint64_t)sb.geo.grow_limit);
	close(d.fd);
	if (json) {
		fclose(stdout);
		stdout = real;
		print_json_kv(text);
		free(text);
	}
	return 0;
}

/* remapctl check: reader and writer over the open device */
static int check_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	struct device *d = ctx;
	size_t len = (size_t)nr * DMR_BLOCK_SIZE;

	if ((blocknr + nr) * DMR_BLOCK_SIZE > d->bytes)
		return -EIO;
	return pread(d->fd, buf, len, blocknr * DMR_BLOCK_SIZE) == (ssize_t)len ? 0 : -EIO;
}

static int check_write(void *ctx, u64 blocknr, u32 nr, const void *buf)
{
	struct device *d = ctx;
	size_t len = (size_t)nr * DMR_BLOCK_SIZE;

	if ((blocknr + nr) * DMR_BLOCK_SIZE > d->bytes)
		return -EIO;
	return pwrite(d->fd, buf, len, blocknr * DMR_BLOCK_SIZE) == (ssize_t)len ? 0 : -EIO;
}

static int check_flush(void *ctx)
{
	struct device *d = ctx;

	return fsync(d->fd) ? -errno : 0;
}

/*
 * The loop device whose backing file is the regular file @st (as losetup -j
 * finds it), into @out; sysfs's /sys/block/loopN/loop/backing_file, under
 * DMR_SYSFS_ROOT instead of /sys if set (a test hook: a fake sysfs tree).
 * Return: true if one is attached.
 */
static bool loop_backed(const struct stat *st, char *out, size_t len)
{
	const char *root = getenv("DMR_SYSFS_ROOT") ? : "/sys";
	char path[PATH_MAX], file[PATH_MAX];
	struct dirent *e;
	bool found = false;
	struct stat bst;
	DIR *dir;
	FILE *f;

	snprintf(path, sizeof(path), "%s/block", root);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!found && (e = readdir(dir))) {
		if (strncmp(e->d_name, "loop", 4))
			continue;
		snprintf(path, sizeof(path), "%s/block/%s/loop/backing_file", root, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(file, sizeof(file), f)) {
			file[strcspn(file, "\n")] = '\0';
			found = !stat(file, &bst) && bst.st_dev == st->st_dev &&
				bst.st_ino == st->st_ino;
		}
		fclose(f);
		if (found)
			snprintf(out, len, "/dev/%s", e->d_name);
	}
	closedir(dir);
	return found;
}

/*
 * After a repair, check again without writing, as fsck's second pass: the
 * repair is reported as done only if what it wrote checks clean.
 */
static int recheck(const struct dmr_check *done)
{
	struct dmr_check ck = *done;
	char *text = NULL;
	size_t len = 0;
	int ret;

	ck.write = NULL;
	ck.errors = ck.repaired = ck.units = ck.large = ck.mapped = ck.replayed = 0;
	ck.operational = false;
	ck.progress = false;
	ck.out = open_memstream(&text, &len);
	if (!ck.out)
		die("out of memory");
	ret = dmr_check_run(&ck);
	fclose(ck.out);
	if (ret != DMR_CHECK_CLEAN) {
		char *line, *save = NULL;

		printf("error: the device does not check clean after the repair:\n");
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (!strncmp(line, "error: ", 7))
				printf("  %s\n", line);
	} else {
		printf("checked again after the repair: clean\n");
	}
	free(text);
	return ret;
}

static int cmd_check(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "rh";
	struct dmr_check ck = { .out = stdout };
	char loopdev[PATH_MAX];
	bool repair = false;
	struct device d = {};
	struct stat st;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			repair = true;
			break;
		case 'h':
			command_help("check");
			return 0;
		default:
			bad_option("check", sopts, argv);
		}
	}
	if (optind != argc - 1)
		usage_error("check needs exactly one device");
	d.path = argv[optind];
	/* not open_device(): every failure to get at the device exits 8 */
	if (stat(d.path, &st))
		dmr_exit_msg(DMR_CHECK_OPERATIONAL, "%s: %s", d.path, strerror(errno));
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		dmr_exit_msg(DMR_CHECK_OPERATIONAL, "%s: not a block device or regular file",
			     d.path);
	d.is_blk = S_ISBLK(st.st_mode);
	/* an image has no O_EXCL: the loop device a target may sit on */
	if (repair && !d.is_blk && loop_backed(&st, loopdev, sizeof(loopdev)))
		dmr_exit_msg(DMR_CHECK_OPERATIONAL, "%s: image in use: %s is attached to it "
			     "(losetup -j); detach it (losetup -d) before check --repair",
			     d.path, loopdev);
	d.fd = open(d.path, (repair ? O_RDWR : O_RDONLY) | (d.is_blk ? O_EXCL : 0));
	if (d.fd < 0)
		dmr_exit_msg(DMR_CHECK_OPERATIONAL, "%s: %s", d.path, errno == EBUSY ?
			     "device is in use (an active dm-remap target, mounted or held); "
			     "check works on a device that is not in use" : strerror(errno));
	if (d.is_blk ? ioctl(d.fd, BLKGETSIZE64, &d.bytes) != 0 : (d.bytes = st.st_size, 0))
		dmr_exit_msg(DMR_CHECK_OPERATIONAL, "%s: cannot get size: %s", d.path,
			     strerror(errno));
	ck.read = check_read;
	ck.write = repair ? check_write : NULL;
	ck.flush = check_flush;
	ck.ctx = &d;
	ck.dev_blocks = d.bytes / DMR_BLOCK_SIZE;
	ck.progress = isatty(STDERR_FILENO);
	ret = dmr_check_run(&ck);
	if (ck.repaired && fsync(d.fd)) {
		fprintf(stderr, "%s: %s: fsync: %s\n", dmr_prog, d.path, strerror(errno));
		ret = DMR_CHECK_OPERATIONAL;
	}
	if (ret == DMR_CHECK_CORRECTED && recheck(&ck) != DMR_CHECK_CLEAN)
		ret = DMR_CHECK_ERRORS;
	close(d.fd);
	printf("check: %s: %llu log units checked, %llu replayed, %llu blocks mapped; "
	       "%u errors, %u repaired%s\n", d.path, (unsigned long long)ck.units,
	       (unsigned long long)ck.replayed, (unsigned long long)ck.mapped, ck.errors,
	       ck.repaired, ck.operational ? ", check incomplete" : "");
	return ret;
}

/*
 * remapctl status: the target's status fields (Documentation/dm-remap.rst,
 * "Status"), in this order.  Words, not numbers: mode, gc_state and the
 * two write amplifications ("-" before any user write).
 */
static const char *const status_names[] = {
	"mode", "version", "logical_blocks", "segment_sectors", "segments",
	"free_segments", "user_blocks", "device_blocks", "flushes", "short_units",
	"checkpoint_seq", "replayed_units", "map_memory", "sb_copies_ok", "discards",
	"first_error", "gc_state", "gc_low", "gc_high", "gc_reserve",
	"prefree_segments", "gc_runs", "gc_moved", "segments_freed", "throttled",
	"waf_load", "waf_format", "device_flushes", "zero_copy_blocks",
	"zero_copy_recopied", "gc_read_errors", "gc_unverified", "map_misses",
	"map_evictions", "map_forced", "map_pages_peak", "inline_writes",
	"ckpt_table_blocks", "read_splits", "large_segments",
};
#define NR_STATUS	ARRAY_SIZE(status_names)

enum {
	ST_MODE, ST_VERSION, ST_LOGICAL, ST_SEG_SECTORS, ST_SEGMENTS, ST_FREE,
	ST_USER, ST_DEVICE, ST_FLUSHES, ST_SHORT, ST_CKPT_SEQ, ST_REPLAYED,
	ST_MAP_MEMORY, ST_SB_OK, ST_DISCARDS, ST_FIRST_ERROR, ST_GC_STATE,
	ST_GC_LOW, ST_GC_HIGH, ST_GC_RESERVE, ST_PREFREE, ST_GC_RUNS, ST_GC_MOVED,
	ST_FREED, ST_THROTTLED, ST_WAF_LOAD, ST_WAF_FORMAT, ST_DEV_FLUSHES,
	ST_ZC_BLOCKS, ST_ZC_RECOPIED, ST_GC_READ_ERRORS, ST_GC_UNVERIFIED, ST_MAP_MISSES,
	ST_MAP_EVICTIONS, ST_MAP_FORCED, ST_MAP_PEAK, ST_INLINE, ST_CKPT_TABLES,
	ST_READ_SPLITS, ST_LARGE,
};

static bool status_is_word(unsigned int i)
{
	return i == ST_MODE || i == ST_GC_STATE || i == ST_WAF_LOAD || i == ST_WAF_FORMAT;
}

/* Run a command, its standard output into @buf (NUL terminated). */
static int run_capture(char *const argv[], char *buf, size_t len)
{
	int fds[2], status;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (pipe(fds))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", dmr_prog, argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	while (n + 1 < len && (r = read(fds[0], buf + n, len - 1 - n)) > 0)
		n += r;
	buf[n] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void print_status_human(const char *name, char *const f[NR_STATUS],
			       const unsigned long long v[NR_STATUS])
{
	unsigned long long seg_bytes = v[ST_SEG_SECTORS] * 512;
	char a[32], b[32], c[32];
	int err = (int)(long long)v[ST_FIRST_ERROR];

	fmt_bytes(v[ST_LOGICAL] * DMR_BLOCK_SIZE, a, sizeof(a));
	printf("name:             %s\n", name);
	printf("mode:             %s\n", f[ST_MODE]);
	printf("format version:   %llu\n", v[ST_VERSION]);
	printf("capacity:         %s (%llu blocks of 4 KiB)\n", a, v[ST_LOGICAL]);
	fmt_bytes(seg_bytes, a, sizeof(a));
	fmt_bytes(v[ST_FREE] * seg_bytes, b, sizeof(b));
	printf("segments:         %llu of %s; free %llu (%s, %.1f%%), prefree %llu\n",
	       v[ST_SEGMENTS], a, v[ST_FREE], b,
	       v[ST_SEGMENTS] ? 100.0 * v[ST_FREE] / v[ST_SEGMENTS] : 0.0, v[ST_PREFREE]);
	fmt_bytes(v[ST_USER] * DMR_BLOCK_SIZE, a, sizeof(a));
	fmt_bytes(v[ST_DEVICE] * DMR_BLOCK_SIZE, b, sizeof(b));
	printf("written:          %s by users, %s to the log (since load or clear_stats)\n",
	       a, b);
	printf("write amp.:       %s since load, %s since format\n", f[ST_WAF_LOAD],
	       f[ST_WAF_FORMAT]);
	printf("flushes:          %llu requests, %llu on the device, %llu short units\n",
	       v[ST_FLUSHES], v[ST_DEV_FLUSHES], v[ST_SHORT]);
	printf("checkpoint:       seq %llu; %llu log units replayed at load\n",
	       v[ST_CKPT_SEQ], v[ST_REPLAYED]);
	fmt_bytes(v[ST_GC_MOVED] * DMR_BLOCK_SIZE, c, sizeof(c));
	printf("gc:               %s; starts below %llu free segments, stops at %llu, "
	       "reserve %llu\n", f[ST_GC_STATE], v[ST_GC_LOW], v[ST_GC_HIGH],
	       v[ST_GC_RESERVE]);
	printf("gc work:          %llu segments collected, %s moved, %llu freed, "
	       "%llu writes throttled\n", v[ST_GC_RUNS], c, v[ST_FREED], v[ST_THROTTLED]);
	printf("discards:         %llu\n", v[ST_DISCARDS]);
	fmt_bytes(v[ST_MAP_MEMORY], a, sizeof(a));
	printf("kernel memory:    %s\n", a);
	printf("superblocks:      %llu of %d valid at load%s\n", v[ST_SB_OK], DMR_SB_COPIES,
	       v[ST_SB_OK] < DMR_SB_COPIES ? " (degraded: run remapctl check --repair "
	       "after removing the target)" : "");
	if (err)
		printf("first error:      %d (%s)\n", err, strerror(-err));
	else
		printf("first error:      none\n");
	printf("gc problems:      %llu victim reads failed (tried again after a "
	       "checkpoint), %llu units left unmoved: data fails its checksum%s\n",
	       v[ST_GC_READ_ERRORS], v[ST_GC_UNVERIFIED],
	       v[ST_GC_UNVERIFIED] ? " (run remapctl check after removing the target)" : "");
	printf("map cache:        %llu pages read back, %llu evicted, %llu checkpoints "
	       "forced; at most %llu pages in memory since load\n", v[ST_MAP_MISSES],
	       v[ST_MAP_EVICTIONS], v[ST_MAP_FORCED], v[ST_MAP_PEAK]);
	printf("inline writes:    %llu of the user's writes handled by their "
	       "submitter, not queued\n", v[ST_INLINE]);
	printf("checkpoint tables: %llu blocks written (unchanged blocks are not "
	       "written again)\n", v[ST_CKPT_TABLES]);
	printf("read splits:      %llu pieces past a read's first (its blocks not "
	       "stored one after the other)\n", v[ST_READ_SPLITS]);
	printf("large segments:   %llu written whole by large writes (no summary in "
	       "them)\n", v[ST_LARGE]);
}

static void print_status_json(const char *name, char *const f[NR_STATUS],
			      const unsigned long long v[NR_STATUS])
{
	unsigned int i;

	printf("{\"name\": \"%s\"", name);
	for (i = 0; i < NR_STATUS; i++) {
		if (i == ST_FIRST_ERROR)
			printf(", \"%s\": %lld", status_names[i], (long long)v[i]);
		else if (i == ST_WAF_LOAD || i == ST_WAF_FORMAT)
			printf(strcmp(f[i], "-") ? ", \"%s\": %s" : ", \"%s\": null",
			       status_names[i], f[i]);
		else if (status_is_word(i))
			printf(", \"%s\": \"%s\"", status_names[i], f[i]);
		else
			printf(", \"%s\": %llu", status_names[i], v[i]);
	}
	printf(", \"capacity_bytes\": %llu, \"segment_bytes\": %llu, \"free_bytes\": %llu}\n",
	       v[ST_LOGICAL] * DMR_BLOCK_SIZE, v[ST_SEG_SECTORS] * 512,
	       v[ST_FREE] * v[ST_SEG_SECTORS] * 512);
}

/*
 * The status of dm-remap device @name, printed (human units or @json)
 * after @sep.  Return: 0, or 1 with a message and nothing printed (not a
 * dm-remap device, gone, or a status this remapctl cannot read).
 */
static int status_one(const char *name, bool json, const char *sep)
{
	char out[4096], *f[3 + NR_STATUS], *save = NULL, *tok, *end;
	char *const args[] = { "dmsetup", "status", (char *)name, NULL };
	unsigned long long v[NR_STATUS] = {};
	unsigned int n = 0, i;

	if (run_capture(args, out, sizeof(out))) {
		fprintf(stderr, "%s: %s: dmsetup status failed\n", dmr_prog, name);
		return 1;
	}
	/*
	 * A newer module appends fields (never reorders them): those past
	 * the ones this remapctl knows are counted and ignored.
	 */
	for (tok = strtok_r(out, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		if (n < ARRAY_SIZE(f))
			f[n] = tok;
		n++;
	}
	if (n < 3 || strcmp(f[2], "remap")) {
		fprintf(stderr, "%s: %s: not a dm-remap device\n", dmr_prog, name);
		return 1;
	}
	if (n < 3 + NR_STATUS) {
		/* an older module: field 2 is its on-disk format version */
		fprintf(stderr, "%s: %s: the module's status has %u field%s (its on-disk "
			"format version: %s), this remapctl reads %zu (dm-remap %s, on-disk "
			"format version %u): an older module; use the remapctl of its "
			"release, or load this release's module\n", dmr_prog, name, n - 3,
			n - 3 == 1 ? "" : "s",
			n > 3 + ST_VERSION ? f[3 + ST_VERSION] : "not given", NR_STATUS,
			DMR_TOOLS_VERSION, DMR_FORMAT_VERSION);
		return 1;
	}
	for (i = 0; i < NR_STATUS; i++) {
		if (status_is_word(i))
			continue;
		errno = 0;
		v[i] = i == ST_FIRST_ERROR ? (unsigned long long)strtoll(f[3 + i], &end, 10) :
			strtoull(f[3 + i], &end, 10);
		if (errno || *end || end == f[3 + i]) {
			fprintf(stderr, "%s: %s: status field %u (%s) is not a number: '%s'\n",
				dmr_prog, name, i + 1, status_names[i], f[3 + i]);
			return 1;
		}
	}
	fputs(sep, stdout);
	if (json)
		print_status_json(name, f + 3, v);
	else
		print_status_human(name, f + 3, v);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "h";
	char *const ls[] = { "dmsetup", "ls", "--target", "remap", NULL };
	char out[16384], *save = NULL, *line;
	unsigned int nr = 0;
	bool json = false;
	int c, bad = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			command_help("status");
			return 0;
		default:
			bad_option("status", sopts, argv);
		}
	}
	if (optind < argc - 1)
		usage_error("status takes at most one NAME");
	if (optind == argc - 1)
		return status_one(argv[optind], json, "");
	/* every dm-remap device: "NAME\t(MAJ:MIN)" lines, or "No devices found" */
	if (run_capture(ls, out, sizeof(out)))
		die("dmsetup ls --target remap failed");
	if (json)
		printf("[");
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name = line + strspn(line, " \t");

		if (!strcmp(name, "No devices found"))
			continue;
		name[strcspn(name, " \t")] = '\0';
		if (!*name)
			continue;
		fflush(stdout);
		if (status_one(name, json, !nr ? "" : json ? ",\n " : "\n"))
			bad = 1;
		else
			nr++;
	}
	if (json)
		printf("]\n");
	else if (!nr && !bad)
		printf("no dm-remap device is active\n");
	return bad;
}

static int run(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", dmr_prog, argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int cmd_create(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "read-only", no_argument, NULL, 'r' },
		{ "ignore-discard", no_argument, NULL, 'd' },
		{ "checkpoint-interval", required_argument, NULL, 'c' },
		{ "no-discard-passdown", no_argument, NULL, 'p' },
		{ "gc-low", required_argument, NULL, 'l' },
		{ "gc-high", required_argument, NULL, 'H' },	/* no short option */
		{ "zero-copy", no_argument, NULL, 'z' },	/* retired, not in the usage */
		{ "map-cache", required_argument, NULL, 'M' },	/* no short option */
		{ "no-stripe-fill", no_argument, NULL, 'S' },	/* no short option */
		{ "no-large-writes", no_argument, NULL, 'L' },	/* no short option */
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "rdc:pl:zh";
	char opts[256] = "", table[1024];
	unsigned int nopt = 0;
	struct device d;
	struct dmr_sb sb;
	u64 v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		size_t n = strlen(opts);

		switch (c) {
		case 'r':
			snprintf(opts + n, sizeof(opts) - n, " read_only");
			nopt++;
			break;
		case 'd':
			snprintf(opts + n, sizeof(opts) - n, " ignore_discard");
			nopt++;
			break;
		case 'c':
			/* the target's range (dmr-table.c) */
			if (dmr_parse_u64(optarg, &v) || !v || v > DMR_MAX_CHECKPOINT_INTERVAL)
				usage_error("invalid --checkpoint-interval '%s' (1 to %u seconds)",
					    optarg, DMR_MAX_CHECKPOINT_INTERVAL);
			snprintf(opts + n, sizeof(opts) - n, " checkpoint_interval %llu",
				 (unsigned long long)v);
			nopt += 2;
			break;
		case 'p':
			snprintf(opts + n, sizeof(opts) - n, " no_discard_passdown");
			nopt++;
			break;
		case 'l':
		case 'H':
			/* the target's range (dmr-table.c); it checks the pair */
			if (dmr_parse_u64(optarg, &v) || !v || v > INT_MAX)
				usage_error("invalid --gc-%s '%s' (1 to %d segments)",
					    c == 'l' ? "low" : "high", optarg, INT_MAX);
			snprintf(opts + n, sizeof(opts) - n, " gc_%s %llu",
				 c == 'l' ? "low" : "high", (unsigned long long)v);
			nopt += 2;
			break;
		case 'z':
			snprintf(opts + n, sizeof(opts) - n, " zero_copy");
			nopt++;
			break;
		case 'M':
			/* the target's range (dmr-table.c) */
			if (dmr_parse_u64(optarg, &v) || !v || v > DMR_MAX_MAP_CACHE)
				usage_error("invalid --map-cache '%s' (1 to %u MiB)", optarg,
					    DMR_MAX_MAP_CACHE);
			snprintf(opts + n, sizeof(opts) - n, " map_cache %llu",
				 (unsigned long long)v);
			nopt += 2;
			break;
		case 'S':
			snprintf(opts + n, sizeof(opts) - n, " no_stripe_fill");
			nopt++;
			break;
		case 'L':
			snprintf(opts + n, sizeof(opts) - n, " no_large_writes");
			nopt++;
			break;
		case 'h':
			command_help("create");
			return 0;
		default:
			bad_option("create", sopts, argv);
		}
	}
	if (optind != argc - 2)
		usage_error("create needs NAME and DEV");
	open_device(&d, argv[optind + 1], O_RDONLY, false);
	if (d.bytes < DMR_SB_COPIES * DMR_BLOCK_SIZE || load_sb(&d, &sb, false) < 0)
		die("%s: not formatted for dm-remap (run '%s format')", d.path, dmr_prog);
	close(d.fd);
	if (nopt)
		snprintf(table, sizeof(table), "0 %" PRIu64 " remap %s %u%s",
			 (uint64_t)sb.geo.logical_blocks * DMR_SECTORS_PER_BLOCK,
			 d.path, nopt, opts);
	else
		snprintf(table, sizeof(table), "0 %" PRIu64 " remap %s",
			 (uint64_t)sb.geo.logical_blocks * DMR_SECTORS_PER_BLOCK, d.path);
	{
		char *const args[] = { "dmsetup", "create", argv[optind], "--table",
				       table, NULL };
		return run(args) ? 1 : 0;
	}
}

/*
 * The device of a table line's "major:minor" (what dmsetup table prints),
 * from sysfs; a path (a table loaded with one) is used as it is.
 */
static void table_dev_path(const char *dev, char *out, size_t len)
{
	char uevent[128], line[256];
	unsigned int maj, min;
	FILE *f;

	if (dev[0] == '/' || sscanf(dev, "%u:%u", &maj, &min) != 2) {
		snprintf(out, len, "%s", dev);
		return;
	}
	snprintf(uevent, sizeof(uevent), "/sys/dev/block/%u:%u/uevent", maj, min);
	f = fopen(uevent, "r");
	if (!f)
		die("%s: cannot find the device %s", uevent, dev);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "DEVNAME=", 8)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "/dev/%s", line + 8);
		}
	fclose(f);
	if (!out[0])
		die("%s: no DEVNAME for %s", uevent, dev);
}

static int cmd_grow(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "h";
	char out[4096], table[4096], path[512], hold[32], hnew[32];
	char *fields[4], *rest, *p, *save = NULL;
	unsigned long long start, len;
	uint64_t dev_blocks, new_len;
	struct dmr_geometry g;
	enum dmr_geo_status st;
	const char *name;
	struct device d;
	struct dmr_sb sb;
	int c, i;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		if (c != 'h')
			bad_option("grow", sopts, argv);
		command_help("grow");
		return 0;
	}
	if (optind != argc - 1)
		usage_error("grow needs exactly one NAME");
	name = argv[optind];
	{
		char *const args[] = { "dmsetup", "table", (char *)name, NULL };

		if (run_capture(args, out, sizeof(out)))
			die("%s: dmsetup table failed", name);
	}
	/*
	 * One line: 0 LEN remap DEV [OPTIONS].  The reload below (and its
	 * rollback) is built from that line alone: a table of more lines would
	 * lose the others, so it is refused, nothing changed.
	 */
	for (i = 0, p = out; *p; p++)
		if (*p == '\n' && p[1] && p[1] != '\n')
			i++;
	if (i)
		die("%s: its table has %d lines; only a table of one remap line can grow "
		    "(nothing changed)", name, i + 1);
	out[strcspn(out, "\n")] = '\0';
	p = out;
	for (i = 0; i < 4; i++) {
		fields[i] = strtok_r(p, " ", &save);
		p = NULL;
		if (!fields[i])
			die("%s: not a dm-remap device (table '%s')", name, out);
	}
	rest = strtok_r(NULL, "", &save);
	if (strcmp(fields[2], "remap"))
		die("%s: not a dm-remap device (its target is %s)", name, fields[2]);
	if (sscanf(fields[0], "%llu", &start) != 1 || start ||
	    sscanf(fields[1], "%llu", &len) != 1)
		die("%s: a table of more than one remap target from sector 0 cannot grow",
		    name);
	table_dev_path(fields[3], path, sizeof(path));
	open_device(&d, path, O_RDONLY, false);
	if (d.bytes < DMR_SB_COPIES * DMR_BLOCK_SIZE || load_sb(&d, &sb, false) < 0)
		die("%s: not formatted for dm-remap", d.path);
	close(d.fd);

	dev_blocks = d.bytes / DMR_BLOCK_SIZE;
	if (sb.geo.grow_limit && dev_blocks > sb.geo.grow_limit) {
		fmt_bytes(sb.geo.grow_limit * DMR_BLOCK_SIZE, hnew, sizeof(hnew));
		fprintf(stderr, "%s: warning: %s is larger than the grow limit it was formatted "
			"with; growing to %s\n", dmr_prog, d.path, hnew);
		dev_blocks = sb.geo.grow_limit;
	}
	st = dmr_geometry_grow(&sb.geo, dev_blocks, &g);
	if (st != DMR_GEO_OK)
		die("%s: cannot grow %s: %s", name, d.path, dmr_geo_strerror(st));
	new_len = g.logical_blocks * DMR_SECTORS_PER_BLOCK;
	if (new_len <= len) {
		printf("%s: nothing to grow: %llu sectors, all %s offers\n", name, len, d.path);
		return 0;
	}
	snprintf(table, sizeof(table), "0 %" PRIu64 " remap %s%s%s", new_len, fields[3],
		 rest ? " " : "", rest ? rest : "");
	{
		char *const reload[] = { "dmsetup", "reload", (char *)name, "--table", table,
					 NULL };
		char *const resume[] = { "dmsetup", "resume", (char *)name, NULL };

		if (run(reload))
			die("%s: dmsetup reload failed; the target is unchanged", name);
		if (run(resume)) {
			/* the old line back, so that the device is not left suspended */
			char old[4096];
			char *const back[] = { "dmsetup", "reload", (char *)name, "--table", old,
					       NULL };

			snprintf(old, sizeof(old), "0 %llu remap %s%s%s", len, fields[3],
				 rest ? " " : "", rest ? rest : "");
			if (run(back) || run(resume))
				die("%s: grow failed, and so did reloading its old table: the "
				    "device is suspended (dmsetup table, dmesg)", name);
			die("%s: grow failed (see dmesg); the old table is back", name);
		}
	}
	fmt_bytes(len * 512, hold, sizeof(hold));
	fmt_bytes(new_len * 512, hnew, sizeof(hnew));
	printf("grew %s: %llu to %" PRIu64 " sectors (%s to %s), %" PRIu64 " segments\n",
	       name, len, new_len, hold, hnew, (uint64_t)g.nr_segments);
	printf("now grow its file system: resize2fs /dev/mapper/%s, or xfs_growfs on its "
	       "mount point\n", name);
	return 0;
}

static int cmd_remove(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "h";
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		if (c != 'h')
			bad_option("remove", sopts, argv);
		command_help("remove");
		return 0;
	}
	if (optind != argc - 1)
		usage_error("remove needs exactly one NAME");
	{
		/*
		 * --retry: udev's probe of a device it just saw change (a
		 * blkid after create or a write) holds it open for a moment,
		 * and the remove fails with EBUSY; dmsetup retries a few
		 * times first, as lvremove does.  A device really in use is
		 * still refused.
		 */
		char *const args[] = { "dmsetup", "remove", "--retry", argv[optind], NULL };

		return run(args) ? 1 : 0;
	}
}

/*
 * remapctl activate / deactivate: /etc/remaptab, one device per line,
 *
 *   NAME  DEV  [OPTIONS]
 *
 * '#' starts a comment.  DEV is a path or UUID=<uuid> (the superblock's,
 * as dump prints it), found by reading the superblock of every block
 * device in /sys/class/block.  OPTIONS are create's flags without their
 * dashes, comma separated, values after '=' (read-only,gc-low=8).  Each
 * device is created by running "remapctl create", so one bad line does not
 * stop the others; a device that exists already is left alone.  Exit
 * status 0 if every line is active at the end (1 otherwise, 2 for a
 * remaptab that cannot be read).
 */
#define REMAPTAB	"/etc/remaptab"
#define REMAPTAB_ARGS	32


/*
 * The first valid superblock copy on @path, into @sb.  Reads two blocks
 * and writes nothing; never dies.  @other (may be NULL): the format
 * version of a copy of another version, 0 if none.
 * Return: true if one is valid.
 */
static bool probe_sb(const char *path, struct dmr_sb *sb, u32 *other)
{
	enum dmr_sb_status st;
	void *buf;
	bool found = false;
	int fd, i;

	if (other)
		*other = 0;
	if (posix_memalign(&buf, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (i = 0; fd >= 0 && i < DMR_SB_COPIES && !found; i++) {
		if (pread(fd, buf, DMR_BLOCK_SIZE, (off_t)i * DMR_BLOCK_SIZE) != DMR_BLOCK_SIZE)
			break;
		st = dmr_sb_decode(buf, i, sb);
		found = st == DMR_SB_OK;
		if (st == DMR_SB_BAD_VERSION && other)
			*other = sb->version;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return found;
}

static bool probe_uuid(const char *path, const char *want)
{
	struct dmr_sb sb;
	char u[40];

	if (!probe_sb(path, &sb, NULL))
		return false;
	uuid_str(sb.uuid, u);
	return !strcasecmp(u, want);
}

/* Whether sysfs directory @dir (a block device's) lists holders: md, dm. */
static bool has_holders(const char *dir)
{
	char path[PATH_MAX + 16];	/* @dir is at most PATH_MAX */
	struct dirent *e;
	bool held = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/holders", dir);
	d = opendir(path);
	if (!d)
		return false;
	while (!held && (e = readdir(d)))
		held = e->d_name[0] != '.';
	closedir(d);
	return held;
}

/*
 * The block devices holding dm-remap uuid @want, the way a UUID= line is
 * resolved (at boot, and for activate --device alike): every device of
 * /sys/class/block whose superblock carries it.  A device that another
 * one holds (a RAID-1 member whose metadata is at its end shows the
 * array's first blocks; a dm-linear slice from block 0 shows its disk's)
 * is not a candidate.  At most @max of them into @cands.
 * Return: how many were found (at most @max).
 */
static int find_uuid(const char *want, char cands[][PATH_MAX], int max)
{
	const char *sysdir = getenv("DMR_SYSFS_BLOCK") ? : "/sys/class/block";
	const char *devdir = getenv("DMR_DEV_DIR") ? : "/dev";
	char path[PATH_MAX];
	struct dirent *e;
	int found = 0;
	DIR *dir = opendir(sysdir);

	if (!dir)
		return 0;
	while (found < max && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", sysdir, e->d_name);
		if (has_holders(path))
			continue;
		snprintf(cands[found], PATH_MAX, "%s/%s", devdir, e->d_name);
		if (probe_uuid(cands[found], want))
			found++;
	}
	closedir(dir);
	return found;
}

/* Whether paths @a and @b are the same block device (or the same file). */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return false;
	if (S_ISBLK(sa.st_mode) || S_ISBLK(sb.st_mode))
		return S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode) && sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The device a UUID= line names, from the @n candidates find_uuid() gave
 * (@cands): the one candidate, and for activate --device (@only) only if
 * that candidate is @only itself.  Two candidates are ambiguous: creating
 * over the wrong one (a dd clone) would write under the other, so nothing
 * is picked, whichever of them udev reported first.
 * Return: the device, or NULL with the reason in @why.
 */
static const char *uuid_pick(char cands[][PATH_MAX], int n, const char *only,
			     char *why, size_t len)
{
	if (n > 1)
		snprintf(why, len, "on %s and %s (and maybe more): not created; name the "
			 "device by its path", cands[0], cands[1]);
	else if (!n && only)
		snprintf(why, len, "%s carries it, but it is not a block device the uuid "
			 "resolves to: not created; name the device by its path", only);
	else if (!n)
		snprintf(why, len, "no block device holds it");
	else if (only && !same_file(cands[0], only))
		snprintf(why, len, "resolves to %s, not %s: not created", cands[0], only);
	else
		return only ? only : cands[0];
	return NULL;
}

/*
 * Whether the remaptab DEV field @spec names the device @only (activate
 * --device): a UUID= that @only's superblock carries (resolved afterwards
 * by find_uuid() and uuid_pick(), as any UUID= is), or a path to the same
 * block device (or file).
 */
static bool same_device(const char *spec, const char *only)
{
	if (!strncasecmp(spec, "UUID=", 5))
		return probe_uuid(only, spec + 5);
	return same_file(spec, only);
}

/* Whether block device @path is held by md or dm (a member, a slice). */
static bool dev_held(const char *path)
{
	struct stat st;
	char sys[64];

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return false;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_rdev),
		 minor(st.st_rdev));
	return has_holders(sys);
}

static bool dm_exists(const char *name)
{
	char out[256];
	char *const args[] = { "dmsetup", "info", "-c", "--noheadings", "-o", "name",
			       (char *)name, NULL };

	return run_capture(args, out, sizeof(out)) == 0 && out[0];
}

static int cmd_activate(int argc, char **argv, bool activate)
{
	static const struct option lopts[] = {
		{ "remaptab", required_argument, NULL, 't' },
		{ "device", required_argument, NULL, 'd' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "t:d:nh";
	const char *tab = REMAPTAB, *cmd = activate ? "activate" : "deactivate", *only = NULL;
	char line[1024], optline[1024], self[PATH_MAX], dev[PATH_MAX];
	unsigned int lineno = 0, bad = 0, done = 0, nrm = 0, matched = 0;
	char *rm_names[256];
	bool dry = false;
	FILE *f;
	ssize_t n;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			tab = optarg;
			break;
		case 'd':
			only = optarg;
			break;
		case 'n':
			dry = true;
			break;
		case 'h':
			command_help(cmd);
			return 0;
		default:
			bad_option(cmd, sopts, argv);
		}
	}
	if (optind != argc)
		usage_error("%s takes no arguments besides its options", cmd);
	f = fopen(tab, "r");
	if (!f) {
		/* exit 2, as documented, but not a usage error: no "Try --help" */
		fprintf(stderr, "%s: %s: %s\n", dmr_prog, tab, strerror(errno));
		exit(2);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		die("cannot find my own program: %s", strerror(errno));
	self[n] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *args[REMAPTAB_ARGS + 8], *w[4], *save = NULL, *hash, *opt;
		char refused[160] = "";
		unsigned int nw = 0, na = 0;

		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		for (opt = strtok_r(line, " \t\n", &save); opt && nw < 4;
		     opt = strtok_r(NULL, " \t\n", &save))
			w[nw++] = opt;
		if (!nw)
			continue;
		if (nw < 2 || nw > 3) {
			fprintf(stderr, "%s: %s:%u: want NAME DEV [OPTIONS]\n", dmr_prog, tab, lineno);
			bad++;
			continue;
		}
		/* --device: only the lines naming that device; the others are not ours */
		if (only && !same_device(w[1], only))
			continue;
		matched++;
		if (!activate) {
			/* removed last line first: a device may sit on an earlier one */
			if (nrm < ARRAY_SIZE(rm_names))
				rm_names[nrm++] = strdup(w[0]);
			continue;
		}
		if (dm_exists(w[0])) {
			printf("%s: %s: already active\n", cmd, w[0]);
			done++;
			continue;
		}
		/* --device: a member or a slice is not it */
		if (only && dev_held(only)) {
			fprintf(stderr, "%s: %s:%u: %s: %s is held by another device (a RAID "
				"member?): not created\n", dmr_prog, tab, lineno, w[0], only);
			bad++;
			continue;
		}
		if (!strncasecmp(w[1], "UUID=", 5)) {
			char cands[2][PATH_MAX], why[3 * PATH_MAX];
			int nc = find_uuid(w[1] + 5, cands, ARRAY_SIZE(cands));
			const char *pick = uuid_pick(cands, nc, only, why, sizeof(why));

			if (!pick) {
				fprintf(stderr, "%s: %s:%u: %s: %s\n", dmr_prog, tab, lineno, w[1],
					why);
				bad++;
				continue;
			}
			/* both are paths of at most PATH_MAX - 1 */
			memcpy(dev, pick, strnlen(pick, sizeof(dev) - 1));
			dev[strnlen(pick, sizeof(dev) - 1)] = '\0';
		} else {
			/* --device: the line's own path, as it names the device */
			snprintf(dev, sizeof(dev), "%s", w[1]);
		}
		args[na++] = self;
		args[na++] = "create";
		/* the options as written, for the line below: strtok_r() splits w[2] */
		snprintf(optline, sizeof(optline), "%s", nw == 3 ? w[2] : "");
		for (opt = nw == 3 ? strtok_r(w[2], ",", &save) : NULL; opt;
		     opt = strtok_r(NULL, ",", &save)) {
			static char flags[REMAPTAB_ARGS][64];
			char *eq = strchr(opt, '=');

			if (eq)
				*eq = '\0';
			/*
			 * Refused, with the line: more options than create has
			 * (none dropped silently), one without a name (create
			 * would take "--" for the end of its options), --help or
			 * a prefix of it (create would print its usage, exit 0).
			 */
			if (na + 2 > REMAPTAB_ARGS) {
				snprintf(refused, sizeof(refused), "too many options (more "
					 "words than create has options and values)");
				break;
			}
			if (!*opt) {
				snprintf(refused, sizeof(refused), "an option without a name ('=%s')",
					 eq ? eq + 1 : "");
				break;
			}
			if (!strncmp(opt, "help", strlen(opt))) {
				snprintf(refused, sizeof(refused), "'%.64s' is not an option of create",
					 opt);
				break;
			}
			snprintf(flags[na], sizeof(flags[na]), "--%s", opt);
			args[na] = flags[na];
			na++;
			if (eq)
				args[na++] = eq + 1;
		}
		if (*refused) {
			fprintf(stderr, "%s: %s:%u: %s: %s\n", dmr_prog, tab, lineno, w[0],
				refused);
			bad++;
			continue;
		}
		args[na++] = w[0];
		args[na++] = dev;
		args[na] = NULL;
		printf("%s: %s: create over %s%s%s\n", cmd, w[0], dev, nw == 3 ? " with " : "",
		       optline);
		fflush(stdout);
		if (!dry && run(args)) {
			fprintf(stderr, "%s: %s:%u: %s: create failed\n", dmr_prog, tab, lineno, w[0]);
			bad++;
			continue;
		}
		done++;
	}
	fclose(f);
	while (nrm--) {
		char *const rm[] = { "dmsetup", "remove", "--retry", rm_names[nrm],
				     NULL };

		if (!rm_names[nrm])
			die("out of memory");
		if (dm_exists(rm_names[nrm])) {
			printf("%s: %s: remove\n", cmd, rm_names[nrm]);
			fflush(stdout);
			if (!dry && run(rm))
				bad++;
			else
				done++;
		}
		free(rm_names[nrm]);
	}
	if (only && !matched && !bad) {
		printf("%s: %s: in no line of %s, left alone\n", cmd, only, tab);
		return 0;
	}
	printf("%s: %u done, %u failed\n", cmd, done, bad);
	return bad ? 1 : 0;
}

static int cmd_probe(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char sopts[] = "h";
	struct dmr_sb sb;
	char u[40], *sig;
	u32 other;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			command_help("probe");
			return 0;
		default:
			bad_option("probe", sopts, argv);
		}
	}
	if (optind != argc - 1)
		usage_error("probe needs exactly one device");
	if (!probe_sb(argv[optind], &sb, &other)) {
		char msg[512];

		/* a device udev will not activate: say why (nothing on stdout) */
		if (!other)
			return 1;
		dmr_sb_version_msg(msg, sizeof(msg), other);
		fprintf(stderr, "%s: %s: %s\n", dmr_prog, argv[optind], msg);
		return 1;
	}
	/*
	 * A superblock beside another signature: a RAID-1 member with its
	 * metadata at the end (the array is the device), or a disk formatted
	 * over since.  Activating it would write under the other owner.
	 */
	if (dmr_probe_foreign(argv[optind], &sig))
		die("%s: signature probe failed", argv[optind]);
	if (sig) {
		fprintf(stderr, "%s: %s: a dm-remap superblock, but also a %s signature: "
			"not activated (a RAID member, or formatted over since)\n",
			dmr_prog, argv[optind], sig);
		free(sig);
		return 1;
	}
	uuid_str(sb.uuid, u);
	printf("DMR_UUID=%s\nDMR_VERSION=%u\n", u, sb.version);
	return 0;
}

static int cmd_activate_on(int argc, char **argv)
{
	return cmd_activate(argc, argv, true);
}

static int cmd_deactivate(int argc, char **argv)
{
	return cmd_activate(argc, argv, false);
}

static const struct command commands[] = {
	{ "format", "DEV [--segment-size SIZE] [--overprovision PCT] [--label TEXT]\n"
	  "[--grow-limit SIZE] [--map-cache MIB] [--wide] [--max-memory SIZE] [--force]",
	  "write a fresh superblock and an empty checkpoint on DEV",
	  "Write a fresh superblock and an empty checkpoint.  SIZE takes a K, M, G\n"
	  "or T suffix (powers of 1024); the default segment size is the smallest\n"
	  "whole number of full RAID stripes of at least 1 MiB.  PCT is the share of\n"
	  "the data area kept spare for garbage collection.  --grow-limit: room for\n"
	  "the device to grow online (remapctl grow) up to SIZE; the checkpoint slots\n"
	  "are sized for it (about 0.2% of SIZE; 0.4% with 64-bit block numbers,\n"
	  "which a SIZE past 16 TiB gets, as --wide).  format refuses a device that is\n"
	  "in use (even with --force), and unless --force is given one that holds\n"
	  "a filesystem, RAID, LVM, partition table or dm-remap signature, or whose\n"
	  "map (at the grow limit) needs more kernel memory than --max-memory SIZE\n"
	  "allows, by default half of this machine's RAM.  --map-cache: the memory\n"
	  "is checked and printed for a table with that map_cache (create\n"
	  "--map-cache MIB), not the whole map, and the table line printed has it.\n"
	  "--wide: 64-bit block numbers (8 bytes of map per block, log units of\n"
	  "half as many blocks), which a device (or --grow-limit) past 16 TiB gets\n"
	  "without asking; modules before format 4 refuse such a device.\n",
	  cmd_format },
	{ "dump", "[--json] DEV",
	  "print DEV's superblock copies and checkpoint headers",
	  "Print the superblock copies and both checkpoint headers as KEY=VALUE\n"
	  "lines; --json prints the same keys as one JSON object.\n",
	  cmd_dump },
	{ "check", "DEV [--repair]",
	  "check DEV offline, as fsck does (--repair mends what needs no guess)",
	  "Check an unused device offline and exit like fsck: 0 clean, 1 corrected\n"
	  "(--repair), 4 errors left, 8 could not check.  --repair rewrites a\n"
	  "damaged superblock copy, and a checkpoint slot from the one the module\n"
	  "loads and the log after it; nothing that needs a guess.\n",
	  cmd_check },
	{ "status", "[NAME] [--json]",
	  "the status of an active target, or of every one, in human units or JSON",
	  "Print the status of the dm-remap target NAME in human units (dmsetup\n"
	  "status); --json prints every field under its name.  Without NAME, the\n"
	  "status of every dm-remap device dmsetup lists, one after the other\n"
	  "(--json: a JSON array).\n",
	  cmd_status },
	{ "activate", "[--remaptab FILE] [--device DEV] [--dry-run]",
	  "create every device listed in /etc/remaptab",
	  "Create every device of /etc/remaptab (or FILE): NAME DEV [OPTIONS] per\n"
	  "line; DEV a path or UUID=<dm-remap uuid>; OPTIONS create's options without\n"
	  "the dashes, comma separated: read-only,gc-low=8.  --device DEV: only\n"
	  "the lines naming DEV, by its uuid or a path to the same device (udev's\n"
	  "rule when a disk appears); a device no line names is left alone.\n"
	  "--dry-run prints what it would create.\n",
	  cmd_activate_on },
	{ "deactivate", "[--remaptab FILE] [--device DEV] [--dry-run]",
	  "remove every active device listed in /etc/remaptab",
	  "Remove the active devices of /etc/remaptab (or FILE), last line first;\n"
	  "--device DEV: only those of the lines naming DEV.\n",
	  cmd_deactivate },
	{ "probe", "DEV",
	  "print DEV's dm-remap uuid for udev (exit 1 if it holds none)",
	  "Read DEV's superblock copies (two blocks; nothing is written) and print\n"
	  "DMR_UUID=<uuid> and DMR_VERSION=<format> as udev's IMPORT{program}\n"
	  "reads them.  Exit status 1, with nothing printed, if DEV holds no valid\n"
	  "dm-remap superblock, or if libblkid also finds another signature on it\n"
	  "(a RAID-1 member with its metadata at the end; said on stderr).\n"
	  "69-dm-remap.rules runs it on each disk and partition once it is ready.\n",
	  cmd_probe },
	{ "create", "NAME DEV [--read-only] [--ignore-discard] [--checkpoint-interval SECS]\n"
	  "[--no-discard-passdown] [--gc-low N] [--gc-high N] [--map-cache MIB]\n"
	  "[--no-stripe-fill] [--no-large-writes]",
	  "create one target over a formatted device",
	  "Create the dm-remap target NAME over the formatted DEV (dmsetup create),\n"
	  "the options in its table line in the order given.\n",
	  cmd_create },
	{ "grow", "NAME",
	  "give an active target the space its device grew by",
	  "After the device below NAME grew (an md reshape, lvextend), reload NAME's\n"
	  "table with the longer length that space gives (dmsetup reload, resume):\n"
	  "the module adds the new segments and writes the superblock before\n"
	  "anything else.  Only a device formatted with a grow limit (see format)\n"
	  "grows, up to that limit; a smaller device (shrinking) is refused.  Then\n"
	  "grow the file system: resize2fs, xfs_growfs.\n",
	  cmd_grow },
	{ "remove", "NAME",
	  "remove one target",
	  "Remove the target NAME (dmsetup remove, tried again for a moment\n"
	  "while udev still probes it after a change; one in use is refused).\n",
	  cmd_remove },
};

static const struct command *find_command(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void commands_help(void)
{
	unsigned int i;

	printf("Usage:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		print_synopsis("  ", &commands[i]);
	printf("\nCommands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		printf("  %-11s %s\n", commands[i].name, commands[i].summary);
	printf("\n"
	       "Options may come before or after the arguments.  '%s COMMAND --help'\n"
	       "(or -h, or '%s help COMMAND') describes one command.\n",
	       dmr_prog, dmr_prog);
}

int main(int argc, char **argv)
{
	const struct command *cmd;

	opterr = 0;	/* bad_option() reports bad options itself */
	if (argc < 2)
		usage_error("missing command");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		if (argc == 2) {
			commands_help();
			return 0;
		}
		if (argc > 3 || !find_command(argv[2]))
			usage_error("help takes one command name");
		command_help(argv[2]);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("%s (dm-remap) %s, on-disk format version %u\n", dmr_prog,
		       DMR_TOOLS_VERSION, DMR_FORMAT_VERSION);
		return 0;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		usage_error("unknown command '%s'", argv[1]);
	return cmd->run(argc - 1, argv + 1);
}
