// SPDX-License-Identifier: GPL-2.0-only
/*
 * remapctl - format and manage dm-remap devices.
 *
 *   remapctl format DEV [--segment-size SIZE] [--overprovision PCT]
 *                       [--label TEXT] [--force]
 *   remapctl dump DEV
 *   remapctl create NAME DEV [--read-only] [--ignore-discard]
 *                            [--checkpoint-interval SECS]
 *                            [--no-discard-passdown] [--gc-low N]
 *                            [--gc-high N] [--zero-copy]
 *   remapctl remove NAME
 *
 * The superblock codec and geometry come from ../dm-remap/dmr-format.c,
 * the very code the kernel module runs.
 *
 * format refuses (without --force) a device whose map would need more
 * kernel memory than this machine has; it reads MemTotal and VmallocTotal
 * from /proc/meminfo.  Test hook: the environment variable DMR_MEMINFO
 * names a file read instead of /proc/meminfo, so tests/host can fake a
 * machine's memory.
 *
 * Exit status: 0 success, 1 failure or refusal, 2 bad usage.
 */
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
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dmr-codec.h"
#include "dmr-log.h"
#include "dmr-msg.h"
#include "dmr-probe.h"
#include "dmr-table.h"
#include "dmr-writer.h"

const char *dmr_prog = "remapctl";


static void help(void)
{
	printf("Usage:\n"
	       "  %s format DEV [--segment-size SIZE] [--overprovision PCT] [--label TEXT] [--force]\n"
	       "  %s dump DEV\n"
	       "  %s create NAME DEV [--read-only] [--ignore-discard] [--checkpoint-interval SECS]\n"
	       "                    [--no-discard-passdown] [--gc-low N] [--gc-high N] [--zero-copy]\n"
	       "  %s remove NAME\n"
	       "\n"
	       "SIZE takes a K, M or G suffix (powers of 1024).  The default segment\n"
	       "size is the smallest whole number of full RAID stripes of at least 1 MiB.\n"
	       "format refuses a device that is in use or holds a filesystem, RAID, LVM,\n"
	       "partition table or dm-remap signature, or whose map needs more kernel\n"
	       "memory than this machine has, unless --force is given.\n",
	       dmr_prog, dmr_prog, dmr_prog, dmr_prog);
}

/* Parse "123", "64K", "4M", "1G" into bytes; -1 on error. */
static long long parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K':
		v <<= 10; end++; break;
	case 'm': case 'M':
		v <<= 20; end++; break;
	case 'g': case 'G':
		v <<= 30; end++; break;
	default:
		break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end || v > (1ULL << 40))
		return -1;
	return v;
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
		if (errno == EBUSY)
			die("%s: device is in use (mounted, or held by another device); "
			    "use --force to override", path);
		die("%s: %s", path, strerror(errno));
	}
	d->io_opt = d->io_min = 0;
	if (d->is_blk) {
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
 * Refuse, unless @force, a geometry whose map the module could never load
 * on this machine (dmr_map_fits()); with @force, warn and go on (the
 * device may be meant for a bigger machine).
 */
static void check_memory(const struct device *d, const struct dmr_geometry *geo,
			 bool force)
{
	uint64_t need = dmr_map_memory_bytes(geo), mem, vmalloc;
	char hneed[32], hhave[32], msg[256];
	const char *path;
	enum dmr_fit fit;

	fmt_bytes(need, hneed, sizeof(hneed));
	if (read_meminfo(&path, &mem, &vmalloc)) {
		fprintf(stderr,
			"%s: warning: cannot read MemTotal from %s; the map needs %s (not checked)\n",
			dmr_prog, path, hneed);
		return;
	}
	fit = dmr_map_fits(need, mem, vmalloc);
	if (fit == DMR_FIT_OK)
		return;
	fmt_bytes(fit == DMR_FIT_NO_MEMORY ? mem : vmalloc, hhave, sizeof(hhave));
	snprintf(msg, sizeof(msg),
		 "the map of this device needs %s of kernel memory, more than this %s %s%s",
		 hneed, fit == DMR_FIT_NO_MEMORY ? "machine's" : "kernel's", hhave,
		 fit == DMR_FIT_NO_MEMORY ? " of RAM" : " of vmalloc space");
	if (!force)
		die("%s: %s; the module could not load it here (%s)", d->path, msg,
		    "use --force to format it for a bigger machine");
	fprintf(stderr, "%s: warning: %s: %s; formatting anyway (--force)\n",
		dmr_prog, d->path, msg);
}

static int cmd_format(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "segment-size", required_argument, NULL, 's' },
		{ "overprovision", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'l' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long long seg_bytes = 0;
	u64 op = DMR_DEFAULT_OVERPROVISION;
	const char *label = "";
	bool force = false;
	struct device d;
	struct dmr_sb sb;
	enum dmr_geo_status gst;
	u32 seg_blocks, stripe_blocks;
	char *sig, hsize[32], hseg[32];
	void *buf, *zero;
	int c, i;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:o:l:fh", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			seg_bytes = parse_size(optarg);
			if (seg_bytes <= 0 || seg_bytes % DMR_BLOCK_SIZE)
				usage_error("invalid --segment-size '%s' (a multiple of 4K)", optarg);
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
		case 'f':
			force = true;
			break;
		case 'h':
			help();
			return 0;
		default:
			usage_error("format: unrecognised option or missing value '%s'",
				    argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		usage_error("format needs exactly one device");

	if (posix_memalign(&buf, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE) ||
	    posix_memalign(&zero, DMR_BLOCK_SIZE, DMR_BLOCK_SIZE))
		die("out of memory");
	memset(zero, 0, DMR_BLOCK_SIZE);

	open_device(&d, argv[optind], O_RDWR, !force);
	sig = find_signature(&d);
	if (sig && !force)
		die("%s holds a %s signature; refusing to format it (use --force)",
		    d.path, sig);
	if (sig)
		fprintf(stderr, "%s: overwriting %s signature on %s (--force)\n",
			dmr_prog, sig, d.path);
	free(sig);

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
	gst = dmr_geometry_compute(d.bytes / DMR_BLOCK_SIZE, seg_blocks, op, &sb.geo);
	if (gst != DMR_GEO_OK)
		die("%s: %s", d.path, dmr_geo_strerror(gst));
	check_memory(&d, &sb.geo, force);
	sb.version = DMR_FORMAT_VERSION;
	sb.generation = 1;
	sb.ctime = time(NULL);
	sb.stripe_blocks = stripe_blocks;
	snprintf(sb.label, sizeof(sb.label), "%s", label);
	if (getrandom(sb.uuid, sizeof(sb.uuid), 0) != sizeof(sb.uuid))
		die("cannot get random bytes for the uuid");

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
	printf("table: 0 %" PRIu64 " remap %s\n",
	       (uint64_t)sb.geo.logical_blocks * DMR_SECTORS_PER_BLOCK, d.path);
	fmt_bytes(dmr_map_memory_bytes(&sb.geo), hsize, sizeof(hsize));
	printf("kernel memory when loaded: %s\n", hsize);
	return 0;
}

/* Load the best superblock; print per-copy status when verbose. */
static int load_sb(struct device *d, struct dmr_sb *out, bool verbose)
{
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
	}
	free(buf);
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
		printf("ckpt%d_seq=%" PRIu64 "\nckpt%d_clean=%d\n", i, (uint64_t)c[i].seq,
		       i, !!(c[i].flags & DMR_CKPT_CLEAN));
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
		printf("ckpt%d_header_block=%" PRIu64 "\nckpt%d_map_block=%" PRIu64 "\n",
		       i, blk, i, blk + l.map_offset);
	}
	/* the module's own choice: an unreadable header refuses the load */
	n = dmr_ckpt_order(st, c, order, &bad);
	printf("newest_ckpt=%d\n", n > 0 ? order[0] : -1);
	free(buf);
}

static int cmd_dump(int argc, char **argv)
{
	struct device d;
	struct dmr_sb sb;
	int i, copy;

	if (argc != 2)
		usage_error("dump needs exactly one device");
	open_device(&d, argv[1], O_RDONLY, false);
	if (d.bytes < DMR_SB_COPIES * DMR_BLOCK_SIZE)
		die("%s: too small to hold a dm-remap superblock", d.path);
	copy = load_sb(&d, &sb, true);
	if (copy < 0)
		die("%s: no valid dm-remap superblock", d.path);
	printf("using_copy=%d\nversion=%u\ngeneration=%" PRIu64 "\nuuid=", copy,
	       sb.version, (uint64_t)sb.generation);
	for (i = 0; i < 16; i++)
		printf("%02x%s", sb.uuid[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
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
	close(d.fd);
	return 0;
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
		{ "gc-high", required_argument, NULL, 'h' },
		{ "zero-copy", no_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 },
	};
	char opts[256] = "", table[1024];
	unsigned int nopt = 0;
	struct device d;
	struct dmr_sb sb;
	u64 v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "rdc:pl:h:z", lopts, NULL)) != -1) {
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
			if (dmr_parse_u64(optarg, &v))
				usage_error("invalid --checkpoint-interval '%s'", optarg);
			snprintf(opts + n, sizeof(opts) - n, " checkpoint_interval %llu",
				 (unsigned long long)v);
			nopt += 2;
			break;
		case 'p':
			snprintf(opts + n, sizeof(opts) - n, " no_discard_passdown");
			nopt++;
			break;
		case 'l':
		case 'h':
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
		default:
			usage_error("create: unrecognised option or missing value '%s'",
				    argv[optind - 1]);
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

static int cmd_remove(int argc, char **argv)
{
	if (argc != 2)
		usage_error("remove needs NAME");
	{
		char *const args[] = { "dmsetup", "remove", argv[1], NULL };
		return run(args) ? 1 : 0;
	}
}

int main(int argc, char **argv)
{
	opterr = 0;	/* usage_error() reports bad options itself */
	if (argc < 2)
		usage_error("missing command");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		help();
		return 0;
	}
	if (!strcmp(argv[1], "format"))
		return cmd_format(argc - 1, argv + 1);
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(argv[1], "create"))
		return cmd_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "remove"))
		return cmd_remove(argc - 1, argv + 1);
	usage_error("unknown command '%s'", argv[1]);
}
