// SPDX-License-Identifier: GPL-2.0-only
/*
 * bm-flash - random read and random write benchmark for block devices.
 *
 *   bm-flash [--bs LIST] [--threads LIST] [--seconds S] [--size BYTES]
 *            [--read-only | --write-only] [--json | --csv] [--force]
 *            [--max-bytes N] [--seed N] [--check] DEVICE
 *   bm-flash --version | --help
 *
 * A re-implementation of the method of EasyCo's bm-flash, the benchmark
 * behind the papers this project started from: blocking, block-aligned
 * O_DIRECT pread()/pwrite() at random offsets from 1, 10 and 40 threads,
 * block sizes 512 bytes to 1 MiB, read and write tested separately for a
 * fixed time per cell.  The default output is the papers' table (IOPS and
 * bandwidth per thread count); --json and --csv give machine-readable forms.
 *
 * Write tests destroy the data on DEVICE.  They refuse a device that is in
 * use or holds a filesystem, RAID, LVM, partition-table or dm-remap
 * signature, and any regular file, unless --force is given; --read-only
 * runs never write.
 *
 * Exit status: 0 success, 1 I/O error or refusal, 2 bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dmr-format.h"	/* DMR_FORMAT_VERSION, for --version */
#include "dmr-probe.h"

/* dkms.conf's PACKAGE_VERSION, from tools/Makefile (as remapctl's) */
#ifndef DMR_TOOLS_VERSION
#define DMR_TOOLS_VERSION "unknown"
#endif

#define MAX_LIST	32
#define MIN_BS		512U
#define MAX_BS		(16U << 20)
#define MAX_THREADS	1024U
#define MAX_SECONDS	86400.0

static const char *prog = "bm-flash";

enum op { OP_READ, OP_WRITE, NR_OPS };
static const char *const op_name[NR_OPS] = { "read", "write" };

struct options {
	uint32_t bs[MAX_LIST];
	unsigned int nr_bs;
	unsigned int threads[MAX_LIST];
	unsigned int nr_threads;
	double seconds;
	uint64_t size;			/* 0: the whole device */
	uint64_t max_bytes;		/* 0: cells end on time only */
	bool ops[NR_OPS];
	bool json, csv, force;
	bool check_only;		/* --check: safety checks, no I/O */
	uint64_t seed;
	const char *path;
};

struct device {
	const char *path;
	int fd;
	bool is_blk;
	uint64_t bytes;			/* whole device or file */
	uint64_t region;		/* tested bytes from offset 0 */
	uint32_t lbs;			/* logical block size */
	size_t align;			/* buffer alignment */
};

struct result {
	bool valid;
	uint64_t ios;
	double seconds;
};

/* One benchmark cell: one op, block size and thread count. */
struct cell {
	const struct device *dev;
	enum op op;
	uint32_t bs;
	uint64_t nblocks;		/* bs-sized slots in the region */
	uint64_t seed;
	uint64_t max_ios;		/* 0: no cap (--max-bytes) */
	atomic_uint_fast64_t issued;	/* I/Os started, counted with a cap */
	pthread_barrier_t start;
	atomic_bool stop;
};

struct worker {
	struct cell *cell;
	pthread_t tid;
	unsigned int id;
	uint64_t ios;
	int err;			/* errno of the failure, 0 if none */
	bool short_io;
	uint64_t err_off;
	double begin;			/* when it passed the start barrier */
	double end;			/* when its last I/O completed */
};

static void __attribute__((noreturn, format(printf, 2, 3))) fail(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

#define usage_error(...)	fail(2, __VA_ARGS__)
#define die(...)		fail(1, __VA_ARGS__)

static void help(void)
{
	printf("Usage: %s [options] DEVICE\n"
	       "\n"
	       "Random read and random write IOPS and bandwidth with blocking O_DIRECT\n"
	       "I/O at random block-aligned offsets, from several threads.\n"
	       "\n"
	       "  --bs LIST        block sizes (default 512,4K,8K,16K,32K,64K,128K,256K,512K,1M)\n"
	       "  --threads LIST   thread counts (default 1,10,40)\n"
	       "  --seconds S      run time of each cell, fractions allowed (default 10)\n"
	       "  --size BYTES     test only the first BYTES of DEVICE (K, M, G, T suffix)\n"
	       "  --max-bytes N    end a cell after N bytes if that comes before --seconds\n"
	       "                   (IOPS are over the time it really ran)\n"
	       "  --read-only      read tests only; DEVICE is opened read-only\n"
	       "  --write-only     write tests only\n"
	       "  --json           print one JSON object instead of the table\n"
	       "  --csv            print CSV (op,bs,threads,iops,bw_bytes,ios,seconds)\n"
	       "  --force          write even to a device that is in use or holds a\n"
	       "                   filesystem, RAID, LVM, partition table or dm-remap signature,\n"
	       "                   or to a regular file (an image)\n"
	       "  --seed N         seed of the offset and data generators (default 1)\n"
	       "  --check          only check that a write test of DEVICE would be\n"
	       "                   allowed (exit 0) or refused (exit 1); no I/O\n"
	       "  --version        print the version of the tools and of the on-disk\n"
	       "                   format, and exit\n"
	       "  --help           show this help\n"
	       "\n"
	       "Write tests overwrite the data on DEVICE with random bytes.  DEVICE may\n"
	       "be a regular file on a filesystem that supports O_DIRECT.  Block sizes\n"
	       "below the device's logical block size are skipped.  Bandwidth is in\n"
	       "bytes per second with 1024-based K, M, G suffixes.\n",
	       prog);
}

/* Parse "123", "64K", "4M", "1G" (optionally "B"/"KiB"...) into bytes; 0 on error. */
static uint64_t parse_size(const char *s)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return 0;
	switch (*end) {
	case 'k': case 'K':
		shift = 10; end++; break;
	case 'm': case 'M':
		shift = 20; end++; break;
	case 'g': case 'G':
		shift = 30; end++; break;
	case 't': case 'T':
		shift = 40; end++; break;
	default:
		break;
	}
	if (shift && *end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (1ULL << 50) >> shift)
		return 0;
	return (uint64_t)v << shift;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Split a comma-separated list; returns the number of items. */
static unsigned int split_list(const char *opt, char *s, char **items)
{
	unsigned int n = 0;
	char *tok, *save;

	if (!*s || *s == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		usage_error("--%s: empty list item", opt);
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_LIST)
			usage_error("--%s: more than %u items", opt, MAX_LIST);
		items[n++] = tok;
	}
	return n;
}

static void parse_bs_list(struct options *o, char *arg)
{
	char *items[MAX_LIST];
	unsigned int i, n;

	n = split_list("bs", arg, items);
	for (i = 0; i < n; i++) {
		uint64_t v = parse_size(items[i]);

		if (!v)
			usage_error("--bs: bad block size '%s'", items[i]);
		if (!is_pow2(v))
			usage_error("--bs: block size '%s' is not a power of two", items[i]);
		if (v < MIN_BS || v > MAX_BS)
			usage_error("--bs: block size '%s' is outside 512 bytes to %u MiB",
				    items[i], MAX_BS >> 20);
		o->bs[i] = v;
	}
	o->nr_bs = n;
}

static void parse_threads_list(struct options *o, char *arg)
{
	char *items[MAX_LIST];
	unsigned int i, n;

	n = split_list("threads", arg, items);
	for (i = 0; i < n; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(items[i], &end, 10);
		if (errno || end == items[i] || *end || v < 1 || v > (long)MAX_THREADS)
			usage_error("--threads: '%s' is not a thread count from 1 to %u",
				    items[i], MAX_THREADS);
		o->threads[i] = v;
	}
	o->nr_threads = n;
}

static double parse_seconds(const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v <= 0 || v > MAX_SECONDS)
		usage_error("--seconds: '%s' is not a time from 0 to %.0f seconds",
			    arg, MAX_SECONDS);
	return v;
}

static uint64_t parse_seed(const char *arg)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || *arg == '-')
		usage_error("--seed: '%s' is not a non-negative integer", arg);
	return v;
}

static void set_defaults(struct options *o)
{
	static const uint32_t bs[] = { 512, 4 << 10, 8 << 10, 16 << 10, 32 << 10,
				       64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20 };
	static const unsigned int threads[] = { 1, 10, 40 };

	memset(o, 0, sizeof(*o));
	memcpy(o->bs, bs, sizeof(bs));
	o->nr_bs = sizeof(bs) / sizeof(bs[0]);
	memcpy(o->threads, threads, sizeof(threads));
	o->nr_threads = sizeof(threads) / sizeof(threads[0]);
	o->seconds = 10;
	o->ops[OP_READ] = o->ops[OP_WRITE] = true;
	o->seed = 1;
}

static void parse_args(struct options *o, int argc, char **argv)
{
	enum { O_BS = 256, O_THREADS, O_SECONDS, O_SIZE, O_RO, O_WO, O_JSON, O_CSV,
	       O_FORCE, O_SEED, O_CHECK, O_MAX_BYTES, O_HELP, O_VERSION };
	static const struct option lopts[] = {
		{ "bs", required_argument, NULL, O_BS },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "size", required_argument, NULL, O_SIZE },
		{ "read-only", no_argument, NULL, O_RO },
		{ "write-only", no_argument, NULL, O_WO },
		{ "json", no_argument, NULL, O_JSON },
		{ "csv", no_argument, NULL, O_CSV },
		{ "force", no_argument, NULL, O_FORCE },
		{ "seed", required_argument, NULL, O_SEED },
		{ "check", no_argument, NULL, O_CHECK },
		{ "max-bytes", required_argument, NULL, O_MAX_BYTES },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	bool ro = false, wo = false;
	int c;

	set_defaults(o);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hV", lopts, NULL)) != -1) {
		switch (c) {
		case O_BS:
			parse_bs_list(o, optarg);
			break;
		case O_THREADS:
			parse_threads_list(o, optarg);
			break;
		case O_SECONDS:
			o->seconds = parse_seconds(optarg);
			break;
		case O_SIZE:
			o->size = parse_size(optarg);
			if (!o->size)
				usage_error("--size: bad size '%s'", optarg);
			break;
		case O_RO:
			ro = true;
			break;
		case O_WO:
			wo = true;
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_CSV:
			o->csv = true;
			break;
		case O_FORCE:
			o->force = true;
			break;
		case O_SEED:
			o->seed = parse_seed(optarg);
			break;
		case O_CHECK:
			o->check_only = true;
			break;
		case O_MAX_BYTES:
			o->max_bytes = parse_size(optarg);
			if (!o->max_bytes)
				usage_error("--max-bytes: bad size '%s'", optarg);
			break;
		case 'h':
		case O_HELP:
			help();
			exit(0);
		case 'V':
		case O_VERSION:
			/* as remapctl --version: the package's and the format's */
			printf("%s (dm-remap) %s, on-disk format version %u\n", prog,
			       DMR_TOOLS_VERSION, DMR_FORMAT_VERSION);
			exit(0);
		case ':':
			usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (ro && wo)
		usage_error("--read-only and --write-only exclude each other");
	if (o->json && o->csv)
		usage_error("--json and --csv exclude each other");
	if (o->check_only && ro)
		usage_error("--check tests write safety; it excludes --read-only");
	if (ro)
		o->ops[OP_WRITE] = false;
	if (wo)
		o->ops[OP_READ] = false;
	if (optind == argc)
		usage_error("no device given (see --help)");
	if (argc - optind > 1)
		usage_error("only one device can be tested, got %d", argc - optind);
	o->path = argv[optind];
}

/* Open the device: O_DIRECT, and O_EXCL on block devices for write tests. */
static void open_device(struct device *d, const struct options *o)
{
	bool writing = o->ops[OP_WRITE];
	int flags = O_DIRECT | O_CLOEXEC | (writing ? O_RDWR : O_RDONLY);
	struct stat st;

	d->path = o->path;
	if (stat(d->path, &st)) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
			usage_error("%s: %s", d->path, strerror(errno));
		die("%s: %s", d->path, strerror(errno));
	}
	d->is_blk = S_ISBLK(st.st_mode);
	if (!d->is_blk && !S_ISREG(st.st_mode))
		usage_error("%s: not a block device or regular file", d->path);
	if (d->is_blk && writing && !o->force)
		flags |= O_EXCL;
	d->fd = open(d->path, flags);
	if (d->fd >= 0)
		return;
	switch (errno) {
	case EACCES:
	case EPERM:
		usage_error("%s: %s", d->path, strerror(errno));
	case EROFS:
		usage_error("%s: read-only; only --read-only tests are possible", d->path);
	case EBUSY:
		die("%s: device is in use (mounted, or held by another device); "
		    "refusing to write to it (use --force to override)", d->path);
	case EINVAL:
		die("%s: cannot open with O_DIRECT (unsupported by this filesystem?)",
		    d->path);
	default:
		die("%s: %s", d->path, strerror(errno));
	}
}

/*
 * The smallest O_DIRECT transfer of a regular file: 512 bytes, or what the
 * filesystem reports through statx(STATX_DIOALIGN) where it says more.
 */
static int file_dio_align(const struct device *d)
{
#ifdef STATX_DIOALIGN
	struct statx stx;

	if (!statx(d->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align > 512 &&
	    is_pow2(stx.stx_dio_offset_align))
		return stx.stx_dio_offset_align;
#else
	(void)d;
#endif
	return 512;
}

static void probe_geometry(struct device *d, const struct options *o)
{
	int lbs = 512;

	if (d->is_blk) {
		if (ioctl(d->fd, BLKGETSIZE64, &d->bytes))
			die("%s: cannot get size: %s", d->path, strerror(errno));
		if (ioctl(d->fd, BLKSSZGET, &lbs) || lbs < 512 || !is_pow2(lbs))
			die("%s: cannot get the logical block size", d->path);
	} else {
		struct stat st;

		if (fstat(d->fd, &st))
			die("%s: %s", d->path, strerror(errno));
		d->bytes = st.st_size;
		lbs = file_dio_align(d);
	}
	d->lbs = lbs;
	d->align = lbs > 4096 ? lbs : 4096;
	if (o->size > d->bytes)
		usage_error("%s: --size %" PRIu64 " is larger than the device (%" PRIu64
			    " bytes)", d->path, o->size, d->bytes);
	d->region = (o->size ? o->size : d->bytes) / d->lbs * d->lbs;
	if (!d->region)
		usage_error("%s: too small to test (%" PRIu64 " bytes)", d->path, d->bytes);
}

/* Return a description of any signature found on the device, or NULL. */
static char *find_signature(const struct device *d)
{
	char *found;

	if (dmr_probe_signature(d->path, &found))
		die("%s: signature probe failed", d->path);
	return found;
}

static void check_signature(const struct device *d, const struct options *o)
{
	char *sig;

	if (!o->ops[OP_WRITE])
		return;
	sig = find_signature(d);
	if (sig && !o->force)
		die("%s: holds a signature (%s); refusing to write to it "
		    "(use --force to override)", d->path, sig);
	if (sig)
		fprintf(stderr, "%s: %s: overwriting its signature (%s) (--force)\n",
			prog, d->path, sig);
	free(sig);
	/* a plain file (a config file, a database) never looks like a disk */
	if (!d->is_blk && !o->force)
		die("%s: is a regular file, not a block device; a write test would "
		    "overwrite it (use --force for an image file)", d->path);
}

static void fmt_bs(uint32_t bs, char *out, size_t len)
{
	if (bs >= (1U << 20))
		snprintf(out, len, "%uM", bs >> 20);
	else if (bs >= 1024)
		snprintf(out, len, "%uK", bs >> 10);
	else
		snprintf(out, len, "%uB", bs);
}

/* Bandwidth like the papers: 1024-based, one decimal, "61.3K", "1932.7K", "2.0M". */
static void fmt_bw(double bytes, char *out, size_t len)
{
	static const char unit[] = "KMGT";
	double v = bytes / 1024;
	int u = 0;

	while (v >= 2048 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f%c", v, unit[u]);
}

/* Mark block sizes that cannot be tested, with a note on stderr. */
static void check_block_sizes(const struct device *d, const struct options *o, bool *skip)
{
	unsigned int i, left = 0;
	char b[16];

	for (i = 0; i < o->nr_bs; i++) {
		fmt_bs(o->bs[i], b, sizeof(b));
		skip[i] = true;
		if (o->bs[i] < d->lbs)
			fprintf(stderr, "%s: skipping %s: below the device's %u-byte "
				"logical block size\n", prog, b, d->lbs);
		else if (o->bs[i] > d->region)
			fprintf(stderr, "%s: skipping %s: larger than the tested region "
				"(%" PRIu64 " bytes)\n", prog, b, d->region);
		else
			skip[i] = false;
		left += !skip[i];
	}
	if (!left)
		usage_error("%s: none of the block sizes can be tested", d->path);
}

/* splitmix64: seeds the per-thread generators. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* xorshift64*: the fast per-thread generator; state must not be 0. */
static uint64_t xorshift64s(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t thread_seed(uint64_t cell_seed, unsigned int id)
{
	uint64_t x = cell_seed ^ ((uint64_t)id << 32);
	uint64_t s = splitmix64(&x);

	return s ? s : 0x2545f4914f6cdd1dULL;
}

static void fill_random(void *buf, size_t len, uint64_t *rng)
{
	uint64_t *p = buf;
	size_t i;

	for (i = 0; i < len / sizeof(*p); i++)
		p[i] = xorshift64s(rng);
}

/* Change the first word of every sector, so no two writes carry the same data. */
static void scramble(void *buf, size_t len, uint64_t *rng)
{
	size_t i;

	for (i = 0; i < len; i += 512)
		*(uint64_t *)((char *)buf + i) = xorshift64s(rng);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct cell *c = w->cell;
	int fd = c->dev->fd;
	uint64_t rng = thread_seed(c->seed, w->id);
	void *buf = NULL;

	if (posix_memalign(&buf, c->dev->align, c->bs)) {
		buf = NULL;
		w->err = ENOMEM;
		atomic_store(&c->stop, true);
	} else {
		fill_random(buf, c->bs, &rng);
	}
	pthread_barrier_wait(&c->start);
	w->begin = now();
	while (buf && !atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		uint64_t off = xorshift64s(&rng) % c->nblocks * c->bs;
		ssize_t r;

		if (c->max_ios && atomic_fetch_add(&c->issued, 1) >= c->max_ios) {
			atomic_store(&c->stop, true);
			break;
		}

		if (c->op == OP_WRITE) {
			scramble(buf, c->bs, &rng);
			r = pwrite(fd, buf, c->bs, off);
		} else {
			r = pread(fd, buf, c->bs, off);
		}
		if (r != (ssize_t)c->bs) {
			w->err = r < 0 ? errno : EIO;
			w->short_io = r >= 0;
			w->err_off = off;
			atomic_store(&c->stop, true);
			break;
		}
		w->ios++;
	}
	w->end = now();
	free(buf);
	return NULL;
}

/* Sleep until @end, waking early when the cell is stopped by an error. */
static void wait_cell(struct cell *c, double end)
{
	double left;

	while (!atomic_load(&c->stop) && (left = end - now()) > 0) {
		struct timespec ts;

		if (left > 0.05)
			left = 0.05;
		ts.tv_sec = 0;
		ts.tv_nsec = left * 1e9;
		nanosleep(&ts, NULL);
	}
	atomic_store(&c->stop, true);
}

static void report_worker_error(const struct cell *c, const struct worker *w)
{
	if (w->err == ENOMEM)
		die("out of memory for %u-byte buffers", c->bs);
	die("%s: %s of %u bytes at offset %" PRIu64 " failed: %s", c->dev->path,
	    op_name[c->op], c->bs, w->err_off,
	    w->short_io ? "short transfer" : strerror(w->err));
}

static void run_cell(struct cell *c, unsigned int threads, struct result *res)
{
	struct worker *w = calloc(threads, sizeof(*w));
	double start, end;
	unsigned int i;
	int err;

	if (!w)
		die("out of memory");
	atomic_init(&c->stop, false);
	atomic_init(&c->issued, 0);
	if (pthread_barrier_init(&c->start, NULL, threads + 1))
		die("cannot initialise a barrier");
	for (i = 0; i < threads; i++) {
		w[i].cell = c;
		w[i].id = i;
		err = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
		if (err)
			die("cannot create thread %u: %s", i + 1, strerror(err));
	}
	pthread_barrier_wait(&c->start);
	start = now();
	wait_cell(c, start + res->seconds);
	res->ios = 0;
	end = start;
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		res->ios += w[i].ios;
		/*
		 * The cell runs from the first worker's start to the last one's
		 * last I/O, not to the timer poll: a capped cell can be over
		 * before this thread even reads the clock after the barrier.
		 */
		if (w[i].begin < start)
			start = w[i].begin;
		if (w[i].end > end)
			end = w[i].end;
	}
	pthread_barrier_destroy(&c->start);
	for (i = 0; i < threads; i++)
		if (w[i].err)
			report_worker_error(c, &w[i]);
	free(w);
	res->seconds = end - start;
	res->valid = true;
}

static void progress(unsigned int done, unsigned int total, uint32_t bs,
		     enum op op, unsigned int threads)
{
	char b[16];

	fmt_bs(bs, b, sizeof(b));
	fprintf(stderr, "\r[%*u/%u] %s %s %u thread%s...   ", total >= 100 ? 3 : 2,
		done, total, b, op_name[op], threads, threads == 1 ? "" : "s");
	fflush(stderr);
}

static void progress_clear(void)
{
	fprintf(stderr, "\r%60s\r", "");
	fflush(stderr);
}

/* res[op][bs index][thread index] */
typedef struct result results_t[NR_OPS][MAX_LIST][MAX_LIST];

/* Run the grid: all read cells, then all write cells. */
static void run_all(const struct device *d, const struct options *o,
		    const bool *skip, results_t res)
{
	bool tty = isatty(STDERR_FILENO);
	unsigned int total = 0, done = 0, i, t, nbs = 0;
	enum op op;

	for (i = 0; i < o->nr_bs; i++)
		nbs += !skip[i];
	for (op = 0; op < NR_OPS; op++)
		total += o->ops[op] ? nbs * o->nr_threads : 0;
	for (op = 0; op < NR_OPS; op++) {
		if (!o->ops[op])
			continue;
		for (i = 0; i < o->nr_bs; i++) {
			if (skip[i])
				continue;
			for (t = 0; t < o->nr_threads; t++) {
				struct cell c = {
					.dev = d, .op = op, .bs = o->bs[i],
					.nblocks = d->region / o->bs[i],
				};
				uint64_t x = o->seed + ((uint64_t)op << 48) +
					     ((uint64_t)i << 40) + ((uint64_t)t << 32);

				c.seed = splitmix64(&x);
				if (o->max_bytes)
					c.max_ios = o->max_bytes / o->bs[i] ?: 1;
				if (tty)
					progress(++done, total, o->bs[i], op, o->threads[t]);
				res[op][i][t].seconds = o->seconds;
				run_cell(&c, o->threads[t], &res[op][i][t]);
			}
		}
	}
	if (tty)
		progress_clear();
}

static double iops_of(const struct result *r)
{
	return r->seconds > 0 ? r->ios / r->seconds : 0;
}

/* Print a line with trailing blanks removed. */
static void put_line(char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
	puts(s);
}

#define LABEL_W	10
#define IOPS_W	8
#define BW_W	7
#define PAIR_W	(2 + IOPS_W + 1 + BW_W)
#define SEP	"  "

static void print_table_header(const struct options *o)
{
	char line[4096], lbl[32];
	unsigned int t, n;
	int p, sec_w = o->nr_threads * PAIR_W;
	enum op op;

	p = snprintf(line, sizeof(line), "%-*s", LABEL_W, "Block Size");
	for (op = 0; op < NR_OPS; op++)
		if (o->ops[op])
			p += snprintf(line + p, sizeof(line) - p, SEP "  %-*s", sec_w - 2,
				      op == OP_READ ? "Random Read Tests:" : "Random Write Tests:");
	put_line(line);

	p = snprintf(line, sizeof(line), "%-*s", LABEL_W, "");
	for (op = 0; op < NR_OPS; op++) {
		if (!o->ops[op])
			continue;
		p += snprintf(line + p, sizeof(line) - p, SEP);
		for (t = 0; t < o->nr_threads; t++) {
			n = o->threads[t];
			snprintf(lbl, sizeof(lbl), "%u thread%s", n, n == 1 ? "" : "s");
			p += snprintf(line + p, sizeof(line) - p, "%*s", PAIR_W, lbl);
		}
	}
	put_line(line);

	p = snprintf(line, sizeof(line), "%-*s", LABEL_W, "");
	for (op = 0; op < NR_OPS; op++) {
		if (!o->ops[op])
			continue;
		p += snprintf(line + p, sizeof(line) - p, SEP);
		for (t = 0; t < o->nr_threads; t++)
			p += snprintf(line + p, sizeof(line) - p, "  %*s %*s",
				      IOPS_W, "IOPS", BW_W, "BW");
	}
	put_line(line);
}

static void print_table(const struct options *o, const bool *skip, results_t res)
{
	char line[4096], b[16], bw[16];
	unsigned int i, t;
	enum op op;
	int p;

	print_table_header(o);
	for (i = 0; i < o->nr_bs; i++) {
		if (skip[i])
			continue;
		fmt_bs(o->bs[i], b, sizeof(b));
		p = snprintf(line, sizeof(line), "%-*s", LABEL_W, b);
		for (op = 0; op < NR_OPS; op++) {
			if (!o->ops[op])
				continue;
			p += snprintf(line + p, sizeof(line) - p, SEP);
			for (t = 0; t < o->nr_threads; t++) {
				double iops = iops_of(&res[op][i][t]);

				fmt_bw(iops * o->bs[i], bw, sizeof(bw));
				p += snprintf(line + p, sizeof(line) - p, "  %*.0f %*s",
					      IOPS_W, iops, BW_W, bw);
			}
		}
		put_line(line);
	}
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* Call @fn for every measured cell, in run order. */
static void for_each_result(const struct options *o, const bool *skip, results_t res,
			    void (*fn)(enum op, uint32_t, unsigned int,
				       const struct result *, bool first))
{
	bool first = true;
	unsigned int i, t;
	enum op op;

	for (op = 0; op < NR_OPS; op++)
		for (i = 0; i < o->nr_bs; i++)
			for (t = 0; t < o->nr_threads; t++)
				if (o->ops[op] && !skip[i] && res[op][i][t].valid) {
					fn(op, o->bs[i], o->threads[t], &res[op][i][t], first);
					first = false;
				}
}

static void json_result(enum op op, uint32_t bs, unsigned int threads,
			const struct result *r, bool first)
{
	double iops = iops_of(r);

	printf("%s\n    {\"op\": \"%s\", \"bs\": %u, \"threads\": %u, \"iops\": %.2f, "
	       "\"bw_bytes\": %.0f, \"ios\": %" PRIu64 ", \"seconds\": %.6f}",
	       first ? "" : ",", op_name[op], bs, threads, iops, iops * bs, r->ios,
	       r->seconds);
}

static void csv_result(enum op op, uint32_t bs, unsigned int threads,
		       const struct result *r, bool first)
{
	double iops = iops_of(r);

	(void)first;
	printf("%s,%u,%u,%.2f,%.0f,%" PRIu64 ",%.6f\n", op_name[op], bs, threads,
	       iops, iops * bs, r->ios, r->seconds);
}

static void print_json(const struct device *d, const struct options *o,
		       const bool *skip, results_t res)
{
	printf("{\n  \"device\": ");
	json_string(d->path);
	printf(",\n  \"size_bytes\": %" PRIu64 ",\n  \"logical_block_size\": %u,\n"
	       "  \"seconds_per_cell\": %g,\n  \"seed\": %" PRIu64 ",\n  \"results\": [",
	       d->region, d->lbs, o->seconds, o->seed);
	for_each_result(o, skip, res, json_result);
	printf("\n  ]\n}\n");
}

static void print_csv(const struct options *o, const bool *skip, results_t res)
{
	printf("op,bs,threads,iops,bw_bytes,ios,seconds\n");
	for_each_result(o, skip, res, csv_result);
}

int main(int argc, char **argv)
{
	static results_t res;
	struct options o;
	struct device d;
	bool skip[MAX_LIST];

	parse_args(&o, argc, argv);
	open_device(&d, &o);
	probe_geometry(&d, &o);
	check_signature(&d, &o);
	if (o.check_only) {
		printf("%s: a write test is allowed%s\n", d.path,
		       o.force ? " (--force)" : "");
		close(d.fd);
		return 0;
	}
	check_block_sizes(&d, &o, skip);
	run_all(&d, &o, skip, res);
	close(d.fd);

	if (o.json)
		print_json(&d, &o, skip, res);
	else if (o.csv)
		print_csv(&o, skip, res);
	else
		print_table(&o, skip, res);
	if (fflush(stdout) || ferror(stdout))
		die("error writing the results: %s", strerror(errno));
	return 0;
}
