// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for dm-remap's pure code: on-disk codec, geometry, the memory
 * a loaded device needs and the table-line parser.
 *
 * The same file is compiled into the userspace test runner
 * (tools/tests/test-pure.c, through a small KUnit shim), so these cases run
 * both in the UML kernel and on the host.
 */
#include <kunit/test.h>

#include "dmr-codec.h"
#include "dmr-map.h"
#include "dmr-policy.h"
#include "dmr-table.h"

/* ------------------------------------------------------------------ */
/* strict number parsing */

struct dmr_u64_case {
	const char *in;
	int rc;
	u64 val;
};

static const struct dmr_u64_case dmr_u64_cases[] = {
	{ "0", 0, 0 },
	{ "30", 0, 30 },
	{ "007", 0, 7 },
	{ "18446744073709551615", 0, ~0ULL },
	{ "18446744073709551616", -EINVAL, 0 },
	{ "", -EINVAL, 0 },
	{ "-1", -EINVAL, 0 },
	{ "+1", -EINVAL, 0 },
	{ " 1", -EINVAL, 0 },
	{ "1 ", -EINVAL, 0 },
	{ "12abc", -EINVAL, 0 },
	{ "0x10", -EINVAL, 0 },
};

static void dmr_u64_desc(const struct dmr_u64_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "'%s'", c->in);
}

KUNIT_ARRAY_PARAM(dmr_u64, dmr_u64_cases, dmr_u64_desc);

static void dmr_test_parse_u64(struct kunit *test)
{
	const struct dmr_u64_case *c = test->param_value;
	u64 v = 12345;
	int rc = dmr_parse_u64(c->in, &v);

	KUNIT_EXPECT_EQ(test, rc, c->rc);
	if (!c->rc)
		KUNIT_EXPECT_EQ(test, v, c->val);
	else
		KUNIT_EXPECT_EQ(test, v, 12345ULL);
}

/* ------------------------------------------------------------------ */
/* table-line options */

#define DMR_MAX_WORDS 16

/**
 * struct dmr_opt_case - one optional-argument list
 * @words: the words after <dev>, NULL terminated
 * @error: expected ti->error, NULL if the line is valid
 * @read_only: expected flag
 * @ignore_discard: expected flag
 * @interval: expected checkpoint interval
 * @no_passdown: expected no_discard_passdown flag
 * @gc_low: expected gc_low (0: not given)
 * @gc_high: expected gc_high (0: not given)
 * @zero_copy: expected zero_copy flag
 * @map_cache: expected map_cache (0: not given)
 * @no_fill: expected no_stripe_fill flag
 * @no_large: expected no_large_writes flag
 */
struct dmr_opt_case {
	const char *words[DMR_MAX_WORDS];
	const char *error;
	bool read_only, ignore_discard;
	u32 interval;
	bool no_passdown;
	u32 gc_low, gc_high;
	bool zero_copy;
	u32 map_cache;
	bool no_fill;
	bool no_large;
};

static const struct dmr_opt_case dmr_opt_cases[] = {
	/* valid lines */
	{ { NULL }, NULL, false, false, 30 },
	{ { "0", NULL }, NULL, false, false, 30 },
	{ { "1", "read_only", NULL }, NULL, true, false, 30 },
	{ { "1", "ignore_discard", NULL }, NULL, false, true, 30 },
	{ { "2", "checkpoint_interval", "5", NULL }, NULL, false, false, 5 },
	{ { "4", "checkpoint_interval", "86400", "ignore_discard", "read_only", NULL },
	  NULL, true, true, 86400 },
	/* malformed lines, each with its own message */
	{ { "x", NULL }, "Invalid optional argument count" },
	{ { "1x", "read_only", NULL }, "Invalid optional argument count" },
	{ { "-1", NULL }, "Invalid optional argument count" },
	{ { "2", "read_only", NULL }, "Optional argument count exceeds the arguments given" },
	{ { "1", NULL }, "Optional argument count exceeds the arguments given" },
	{ { "0", "read_only", NULL }, "Too many arguments" },
	{ { "1", "read_only", "extra", NULL }, "Too many arguments" },
	{ { "1", "bogus", NULL }, "Unrecognised optional argument" },
	{ { "1", "READ_ONLY", NULL }, "Unrecognised optional argument" },
	{ { "2", "read_only", "read_only", NULL }, "Duplicate optional argument read_only" },
	{ { "2", "ignore_discard", "ignore_discard", NULL },
	  "Duplicate optional argument ignore_discard" },
	{ { "1", "checkpoint_interval", NULL }, "Missing value for checkpoint_interval" },
	{ { "2", "checkpoint_interval", "abc", NULL },
	  "Invalid checkpoint_interval (not a number)" },
	{ { "2", "checkpoint_interval", "5s", NULL },
	  "Invalid checkpoint_interval (not a number)" },
	{ { "2", "checkpoint_interval", "0", NULL },
	  "checkpoint_interval out of range (1 to 86400 seconds)" },
	{ { "2", "checkpoint_interval", "86401", NULL },
	  "checkpoint_interval out of range (1 to 86400 seconds)" },
	{ { "2", "checkpoint_interval", "99999999999999999999", NULL },
	  "Invalid checkpoint_interval (not a number)" },
	{ { "4", "checkpoint_interval", "5", "checkpoint_interval", "6", NULL },
	  "Duplicate optional argument checkpoint_interval" },
	{ { "2", "read_only", "checkpoint_interval", NULL },
	  "Missing value for checkpoint_interval" },
	/* no_discard_passdown */
	{ { "1", "no_discard_passdown", NULL }, NULL, false, false, 30, true },
	{ { "2", "ignore_discard", "no_discard_passdown", NULL },
	  NULL, false, true, 30, true },
	{ { "2", "no_discard_passdown", "no_discard_passdown", NULL },
	  "Duplicate optional argument no_discard_passdown" },
	{ { "2", "no_discard_passdown", "1", NULL }, "Unrecognised optional argument" },
	/* GC watermarks: the parser checks the range, the module the device */
	{ { "2", "gc_low", "1", NULL }, NULL, false, false, 30, false, 1, 0 },
	{ { "2", "gc_high", "2147483647", NULL },
	  NULL, false, false, 30, false, 0, 2147483647 },
	{ { "4", "gc_low", "12", "gc_high", "40", NULL },
	  NULL, false, false, 30, false, 12, 40 },
	{ { "4", "gc_high", "3", "gc_low", "9", NULL },
	  NULL, false, false, 30, false, 9, 3 },	/* dmr_gc_params_check()'s job */
	{ { "9", "gc_high", "8", "read_only", "gc_low", "007",
	    "checkpoint_interval", "60", "no_discard_passdown", "ignore_discard", NULL },
	  NULL, true, true, 60, true, 7, 8 },
	{ { "1", "gc_low", NULL }, "Missing value for gc_low" },
	{ { "1", "gc_high", NULL }, "Missing value for gc_high" },
	{ { "2", "gc_high", "gc_low", NULL }, "Invalid gc_high (not a number)" },
	{ { "2", "read_only", "gc_low", NULL }, "Missing value for gc_low" },
	{ { "3", "gc_low", "4", "gc_high", NULL }, "Missing value for gc_high" },
	{ { "2", "gc_low", "abc", NULL }, "Invalid gc_low (not a number)" },
	{ { "2", "gc_low", "-1", NULL }, "Invalid gc_low (not a number)" },
	{ { "2", "gc_high", "1e3", NULL }, "Invalid gc_high (not a number)" },
	{ { "2", "gc_high", "99999999999999999999", NULL },
	  "Invalid gc_high (not a number)" },
	{ { "2", "gc_low", "0", NULL }, "gc_low out of range (1 to 2147483647 segments)" },
	{ { "2", "gc_high", "0", NULL }, "gc_high out of range (1 to 2147483647 segments)" },
	{ { "2", "gc_low", "2147483648", NULL },
	  "gc_low out of range (1 to 2147483647 segments)" },
	{ { "2", "gc_high", "4294967296", NULL },
	  "gc_high out of range (1 to 2147483647 segments)" },
	{ { "4", "gc_low", "4", "gc_low", "4", NULL }, "Duplicate optional argument gc_low" },
	{ { "5", "gc_high", "9", "read_only", "gc_high", "9", NULL },
	  "Duplicate optional argument gc_high" },
	/* zero_copy */
	{ { "1", "zero_copy", NULL }, NULL, false, false, 30, false, 0, 0, true },
	{ { "4", "zero_copy", "gc_low", "5", "ignore_discard", NULL },
	  NULL, false, true, 30, false, 5, 0, true },
	{ { "2", "zero_copy", "zero_copy", NULL },
	  "Duplicate optional argument zero_copy" },
	{ { "2", "zero_copy", "0", NULL }, "Unrecognised optional argument" },
	/* map_cache, in MiB */
	{ { "2", "map_cache", "1", NULL }, NULL, false, false, 30, false, 0, 0, false, 1 },
	{ { "2", "map_cache", "1048576", NULL },
	  NULL, false, false, 30, false, 0, 0, false, 1048576 },
	{ { "3", "read_only", "map_cache", "64", NULL },
	  NULL, true, false, 30, false, 0, 0, false, 64 },
	{ { "1", "map_cache", NULL }, "Missing value for map_cache" },
	{ { "2", "map_cache", "64M", NULL }, "Invalid map_cache (not a number)" },
	{ { "2", "map_cache", "0", NULL }, "map_cache out of range (1 to 1048576 MiB)" },
	{ { "2", "map_cache", "1048577", NULL },
	  "map_cache out of range (1 to 1048576 MiB)" },
	{ { "4", "map_cache", "8", "map_cache", "8", NULL },
	  "Duplicate optional argument map_cache" },
	/* no_stripe_fill */
	{ { "1", "no_stripe_fill", NULL },
	  NULL, false, false, 30, false, 0, 0, false, 0, true },
	{ { "3", "map_cache", "2", "no_stripe_fill", NULL },
	  NULL, false, false, 30, false, 0, 0, false, 2, true },
	{ { "2", "no_stripe_fill", "no_stripe_fill", NULL },
	  "Duplicate optional argument no_stripe_fill" },
	{ { "2", "no_stripe_fill", "1", NULL }, "Unrecognised optional argument" },
	/* no_large_writes */
	{ { "1", "no_large_writes", NULL },
	  NULL, false, false, 30, false, 0, 0, false, 0, false, true },
	{ { "2", "no_stripe_fill", "no_large_writes", NULL },
	  NULL, false, false, 30, false, 0, 0, false, 0, true, true },
	{ { "2", "no_large_writes", "no_large_writes", NULL },
	  "Duplicate optional argument no_large_writes" },
	{ { "1", "no_large_write", NULL }, "Unrecognised optional argument" },
};

static void dmr_opt_desc(const struct dmr_opt_case *c, char *desc)
{
	int i, n = 0;

	desc[0] = '\0';
	for (i = 0; c->words[i] && n < KUNIT_PARAM_DESC_SIZE; i++)
		n += snprintf(desc + n, KUNIT_PARAM_DESC_SIZE - n, "%s%s",
			      i ? " " : "", c->words[i]);
	if (!i)
		snprintf(desc, KUNIT_PARAM_DESC_SIZE, "(none)");
}

KUNIT_ARRAY_PARAM(dmr_opt, dmr_opt_cases, dmr_opt_desc);

static unsigned int dmr_count_words(const char *const *w)
{
	unsigned int n = 0;

	while (w[n])
		n++;
	return n;
}

static void dmr_test_options(struct kunit *test)
{
	const struct dmr_opt_case *c = test->param_value;
	unsigned int argc = dmr_count_words(c->words);
	const char *err = NULL;
	struct dmr_options o;
	int rc;

	rc = dmr_options_parse(&o, argc, (char **)c->words, &err);
	if (c->error) {
		KUNIT_EXPECT_EQ(test, rc, -EINVAL);
		KUNIT_ASSERT_NOT_NULL(test, err);
		KUNIT_EXPECT_STREQ(test, err, c->error);
		return;
	}
	KUNIT_EXPECT_EQ(test, rc, 0);
	KUNIT_EXPECT_EQ(test, o.read_only, c->read_only);
	KUNIT_EXPECT_EQ(test, o.ignore_discard, c->ignore_discard);
	KUNIT_EXPECT_EQ(test, o.checkpoint_interval, c->interval);
	KUNIT_EXPECT_EQ(test, o.no_discard_passdown, c->no_passdown);
	KUNIT_EXPECT_EQ(test, o.gc_low, c->gc_low);
	KUNIT_EXPECT_EQ(test, o.gc_high, c->gc_high);
	KUNIT_EXPECT_EQ(test, o.zero_copy, c->zero_copy);
	KUNIT_EXPECT_EQ(test, o.map_cache, c->map_cache);
	KUNIT_EXPECT_EQ(test, o.no_stripe_fill, c->no_fill);
	KUNIT_EXPECT_EQ(test, o.no_large_writes, c->no_large);
}

/* Parsing then emitting gives back the words the table gave, in order. */
static void dmr_test_options_emit(struct kunit *test)
{
	static const char *const lines[] = {
		"1 read_only",
		"2 ignore_discard read_only",
		"4 checkpoint_interval 7 read_only ignore_discard",
		"3 read_only checkpoint_interval 86400",
		"1 no_discard_passdown",
		"3 gc_high 9 zero_copy",
		"2 gc_low 5",
		"4 gc_high 2147483647 gc_low 1",
		"5 gc_low 4 no_discard_passdown gc_high 8",
		"8 gc_high 8 checkpoint_interval 60 gc_low 7 no_discard_passdown read_only",
		/* the longest line there is */
		"3 map_cache 64 read_only",
		"2 no_stripe_fill read_only",
		"2 no_large_writes no_stripe_fill",
		/* the longest line there is (DMR_TABLE_OPTS_MAX) */
		"14 read_only ignore_discard checkpoint_interval 86400 no_discard_passdown gc_low 2147483647 gc_high 2147483647 zero_copy map_cache 1048576 no_stripe_fill no_large_writes",
	};
	char buf[DMR_TABLE_OPTS_MAX], copy[DMR_TABLE_OPTS_MAX], small[8];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lines); i++) {
		char *words[DMR_MAX_WORDS], *p = copy;
		const char *err = NULL;
		struct dmr_options o;
		unsigned int argc = 0;

		snprintf(copy, sizeof(copy), "%s", lines[i]);
		while (p && *p && argc < DMR_MAX_WORDS) {
			words[argc++] = p;
			p = strchr(p, ' ');
			if (p)
				*p++ = '\0';
		}
		KUNIT_ASSERT_EQ(test, dmr_options_parse(&o, argc, words, &err), 0);
		KUNIT_EXPECT_EQ(test, dmr_options_emit(&o, buf, sizeof(buf)),
				(int)strlen(lines[i]));
		KUNIT_EXPECT_STREQ(test, buf, lines[i]);
		KUNIT_EXPECT_EQ(test, dmr_options_emit(&o, small, sizeof(small)),
				-ENOSPC);
	}

	/* no optional arguments: nothing at all is emitted */
	{
		struct dmr_options o;

		dmr_options_init(&o);
		KUNIT_EXPECT_EQ(test, dmr_options_emit(&o, buf, sizeof(buf)), 0);
		KUNIT_EXPECT_STREQ(test, buf, "");
	}
}

/* Split @line (copied into @copy) into @words; return their number. */
static unsigned int dmr_split_words(const char *line, char *copy, size_t len,
				    char **words)
{
	unsigned int argc = 0;
	char *p = copy;

	snprintf(copy, len, "%s", line);
	while (p && *p && argc < DMR_MAX_WORDS) {
		words[argc++] = p;
		p = strchr(p, ' ');
		if (p)
			*p++ = '\0';
	}
	return argc;
}

/*
 * `dmsetup table` shows the watermarks in use (the gc_low / gc_high
 * messages change them): in their place when the table gave them, added
 * when they differ from the defaults (5 and 5 here), and a reload of the
 * line gives the same watermarks.
 */
static void dmr_test_options_with_gc(struct kunit *test)
{
	static const struct {
		const char *table;
		u32 low, high;
		const char *want;
	} cases[] = {
		{ "", 5, 5, "" },
		{ "", 5, 12, "2 gc_high 12" },
		{ "", 9, 12, "4 gc_low 9 gc_high 12" },
		{ "", 4, 5, "2 gc_low 4" },
		{ "1 read_only", 9, 9, "5 read_only gc_low 9 gc_high 9" },
		{ "2 gc_high 10", 8, 12, "4 gc_high 12 gc_low 8" },
		{ "2 gc_high 10", 5, 10, "2 gc_high 10" },
		/* given, now at the default: still emitted, with its value now */
		{ "4 gc_low 7 gc_high 7", 5, 5, "4 gc_low 5 gc_high 5" },
		{ "3 zero_copy gc_low 6", 6, 6, "5 zero_copy gc_low 6 gc_high 6" },
	};
	char copy[160], buf[160];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *words[DMR_MAX_WORDS];
		struct dmr_options in, given, out, back;
		struct dmr_gc_params p = { .reserve = 4, .low = 5, .high = 5, .batch = 2 };
		const char *err = NULL;
		unsigned int argc;

		argc = dmr_split_words(cases[i].table, copy, sizeof(copy), words);
		KUNIT_ASSERT_EQ(test, dmr_options_parse(&in, argc, words, &err), 0);
		given = in;
		dmr_options_with_gc(&in, cases[i].low, cases[i].high, 5, 5, &out);
		KUNIT_ASSERT_GE(test, dmr_options_emit(&out, buf, sizeof(buf)), 0);
		KUNIT_EXPECT_STREQ(test, buf, cases[i].want);
		/* the table's own options are untouched */
		KUNIT_EXPECT_EQ(test, memcmp(&in, &given, sizeof(in)), 0);

		/* a reload of that line: the same watermarks */
		argc = dmr_split_words(buf, copy, sizeof(copy), words);
		KUNIT_ASSERT_EQ(test, dmr_options_parse(&back, argc, words, &err), 0);
		dmr_gc_params_apply(&p, back.gc_low, back.gc_high);
		KUNIT_EXPECT_EQ(test, p.low, cases[i].low);
		KUNIT_EXPECT_EQ(test, p.high, cases[i].high);
	}
}

/* ------------------------------------------------------------------ */
/* geometry */

struct dmr_geo_case {
	u64 device_blocks;
	u32 segment_blocks;
	u32 overprovision;
	enum dmr_geo_status st;
};

static const struct dmr_geo_case dmr_geo_cases[] = {
	{ 16384, 256, 10, DMR_GEO_OK },			/* 64 MiB, 1 MiB segments */
	{ 16384, 384, 10, DMR_GEO_OK },			/* 1.5 MiB RAID-5 stripe */
	{ 262144, 288, 7, DMR_GEO_OK },			/* 1 GiB */
	{ 1ULL << 31, 2048, 10, DMR_GEO_OK },		/* 8 TiB, 8 MiB segments */
	{ 1ULL << 33, 2048, 10, DMR_GEO_TOO_LARGE },	/* 32 TiB */
	/*
	 * largest device with 1 MiB segments: 2^24 - 1 segments, ~16 TiB
	 * (format 5's checkpoint slots: 8676608 blocks before the data area)
	 */
	{ 4303643903ULL, 256, 10, DMR_GEO_OK },
	{ 4303643904ULL, 256, 10, DMR_GEO_TOO_LARGE },
	{ 65536, 64, 3, DMR_GEO_OK },			/* smallest segment */
	{ 4608, 256, 10, DMR_GEO_TOO_SMALL },		/* 18 MiB: too few segments */
	{ 4864, 256, 10, DMR_GEO_OK },			/* 19 MiB: just enough */
	{ 100, 64, 10, DMR_GEO_TOO_SMALL },
	{ 16384, 63, 10, DMR_GEO_BAD_SEGMENT_SIZE },
	{ 16384, DMR_MAX_SEGMENT_BLOCKS + 1, 10, DMR_GEO_BAD_SEGMENT_SIZE },
	{ 16384, 256, 2, DMR_GEO_BAD_OVERPROVISION },
	{ 16384, 256, 61, DMR_GEO_BAD_OVERPROVISION },
};

static void dmr_geo_desc(const struct dmr_geo_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%llu blocks, seg %u, op %u",
		 (unsigned long long)c->device_blocks, c->segment_blocks,
		 c->overprovision);
}

KUNIT_ARRAY_PARAM(dmr_geo, dmr_geo_cases, dmr_geo_desc);

static void dmr_test_geometry(struct kunit *test)
{
	const struct dmr_geo_case *c = test->param_value;
	struct dmr_geometry g;
	u64 meta_end, user_blocks;

	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(c->device_blocks,
						   c->segment_blocks,
						   c->overprovision, &g), c->st);
	if (c->st != DMR_GEO_OK)
		return;

	/* metadata fits before the data area, which is segment aligned */
	meta_end = g.ckpt_offset + (u64)DMR_CKPT_SLOTS * g.ckpt_slot_blocks;
	KUNIT_EXPECT_GE(test, g.ckpt_offset, (u64)DMR_SB_COPIES);
	KUNIT_EXPECT_LE(test, meta_end, g.data_offset);
	KUNIT_EXPECT_EQ(test, g.data_offset % c->segment_blocks, 0ULL);
	/* a checkpoint slot holds a full map of the device and a segment table */
	KUNIT_EXPECT_GE(test, ((u64)g.ckpt_slot_blocks - 1) * DMR_BLOCK_SIZE,
			g.logical_blocks * DMR_MAP_ENTRY_SIZE +
			g.nr_segments * DMR_SEGTAB_ENTRY_SIZE);
	/* segments fit on the device and use all whole segments there are */
	KUNIT_EXPECT_LE(test, g.data_offset + g.nr_segments * c->segment_blocks,
			c->device_blocks);
	KUNIT_EXPECT_LT(test, c->device_blocks - (g.data_offset +
			g.nr_segments * c->segment_blocks), (u64)c->segment_blocks);
	/* user capacity leaves the reserve and the overprovision */
	user_blocks = (g.nr_segments - DMR_RESERVED_SEGMENTS) * c->segment_blocks;
	KUNIT_EXPECT_LE(test, g.logical_blocks * 100,
			user_blocks * (100 - c->overprovision));
	KUNIT_EXPECT_GT(test, (g.logical_blocks + 1) * 100,
			user_blocks * (100 - c->overprovision));
}

struct dmr_seg_case {
	u32 io_opt, io_min, blocks;
};

static const struct dmr_seg_case dmr_seg_cases[] = {
	{ 0, 0, 256 },				/* no hint: 1 MiB */
	{ 0, 512, 256 },
	{ 0, 65536, 256 },			/* chunk only */
	{ 1536 * 1024, 512 * 1024, 384 },	/* RAID-5 3+1, 512K chunk */
	{ 3 * 65536, 65536, 288 },		/* RAID-5 3+1, 64K chunk */
	{ 12288, 4096, 258 },			/* 12 KiB stripe */
	{ 6144, 2048, 258 },			/* not 4K aligned: lcm 12 KiB */
	{ 8 << 20, 1 << 20, 2048 },		/* 8 MiB stripe */
	{ 1U << 31, 0, DMR_MAX_SEGMENT_BLOCKS },	/* capped */
};

static void dmr_seg_desc(const struct dmr_seg_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "io_opt %u io_min %u",
		 c->io_opt, c->io_min);
}

KUNIT_ARRAY_PARAM(dmr_seg, dmr_seg_cases, dmr_seg_desc);

static void dmr_test_default_segment(struct kunit *test)
{
	const struct dmr_seg_case *c = test->param_value;
	u32 b = dmr_default_segment_blocks(c->io_opt, c->io_min);

	KUNIT_EXPECT_EQ(test, b, c->blocks);
	KUNIT_EXPECT_GE(test, b, DMR_DEFAULT_SEGMENT_MIN);
	if (c->io_opt && c->io_opt % DMR_BLOCK_SIZE == 0 &&
	    b < DMR_MAX_SEGMENT_BLOCKS)
		KUNIT_EXPECT_EQ(test, ((u64)b * DMR_BLOCK_SIZE) % c->io_opt, 0ULL);
}

/* ------------------------------------------------------------------ */
/* memory a loaded device needs */

/* kvmalloc() refuses any size above INT_MAX */
#define DMR_TEST_INT_MAX	0x7fffffffULL

/**
 * struct dmr_mem_case - a device and the kernel memory its map needs
 * @name: description
 * @device_blocks: device size given to dmr_geometry_compute()
 * @segment_blocks: segment size
 * @overprovision: percent
 * @nr_segments: expected segments
 * @logical_blocks: expected logical blocks
 * @bytes: expected dmr_map_memory_bytes(), worked out by hand below as
 *	map (4096 per page of 1024 entries and the page's pointer, 8, with
 *	logical = (segments - 10) * segment_blocks * (100 - overprovision)
 *	/ 100) + segment table, with its list links, reader counts and the
 *	load's valid counts ((64 + 4 + 4) * segments) + the segment lists' heads
 *	(4 * (segment_blocks + 5)) + map block bookkeeping
 *	(5 * ceil(logical / 1024)): 4109 * ceil(logical / 1024) for the
 *	map's part + eight segment buffers (four heads,
 *	three in flight, GC's: 8 * 4096 * segment_blocks) + bounce buffer
 *	(64 * 4096) + the checkpoint's table hashes (8 per block of the CRC
 *	table, ceil(map blocks * 4 / 4096), and of the segment table,
 *	ceil(segments * 32 / 4096), for each of the two slots) + the write
 *	heat (2 bits per logical block, ceil(logical / 4))
 * @over_int_max: the map alone is above INT_MAX bytes
 * @cache_mib: a map_cache to try, 0 for none
 * @cache_bytes: dmr_map_memory_bytes() with it: 4096 per page the cache
 *	may hold at once (256 per MiB, and the larger of half of that and
 *	two, or a segment's blocks: dmr_map_cache_most()) instead of per map
 *	block, and 6 more per map
 *	block (the CLOCK's ring entry, state and used byte), and no write
 *	heat; a cache as large as the map is none (dmr_map_cache_init())
 */
struct dmr_mem_case {
	const char *name;
	u64 device_blocks;
	u32 segment_blocks, overprovision;
	u64 nr_segments, logical_blocks, bytes;
	bool over_int_max;
	u32 cache_mib;
	u64 cache_bytes;
};

static const struct dmr_mem_case dmr_mem_cases[] = {
	/* 4109 * 12 + 4536 + 1044 + 8388608 + 262144 + 16 * (1 + 1) + 3053 */
	/* 12 map blocks, a cache of 256 pages: none */
	{ "64 MiB", 16384, 256, 10, 63, 12211, 8708725ULL, false, 1, 8708725ULL },
	/*
	 * 4109 * 532909 + 158224968 + 1044 + 8388608 + 262144 + 16 * (521 + 17169) +
	 * 136424463
	 */
	{ "2.1 TiB, 3% overprovision", 563714457ULL, 256, 3,
	  2197569, 545697850ULL, 2493307348ULL, true, 0, 2493307348ULL },
	/*
	 * 4109 * 529770 + 169526808 + 1044 + 8388608 + 262144 + 16 * (518 + 18395) +
	 * 135620871
	 */
	{ "2.25 TiB", 603979776ULL, 256, 10,
	  2354539, 542483481ULL, 2490927013ULL, true, 0, 2490927013ULL },
	/*
	 * 4109 * 1883713 + 75349224 + 8212 + 67108864 + 262144 + 16 * (1840 + 8176) +
	 * 482230426
	 */
	{ "8 TiB, 8 MiB segments", 1ULL << 31, 2048, 10,
	  1046517, 1928921702ULL, 8365295843ULL, true,
	  /*
	   * 4096 * 24578 + 19 * 1883713 + 75349224 + 8212 + 67108864 + 262144 +
	   * 16 * (1840 + 8176)
	   */
	  64, 279350735ULL },
	/*
	 * 4109 * 3774756 + 1207922544 + 1044 + 8388608 + 262144 + 16 * (3687 + 131068) +
	 * 966337459
	 */
	{ "largest, ~16 TiB", 4303512319ULL, 256, 10,
	  16776702, 3865349836ULL, 17695540283ULL, true,
	  /*
	   * 4096 * 393218 + 19 * 3774756 + 1207922544 + 1044 + 8388608 + 262144 +
	   * 16 * (3687 + 131068)
	   */
	  1024, 2901071712ULL },
};

static void dmr_mem_desc(const struct dmr_mem_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->name);
}

KUNIT_ARRAY_PARAM(dmr_mem, dmr_mem_cases, dmr_mem_desc);

static void dmr_test_map_memory(struct kunit *test)
{
	const struct dmr_mem_case *c = test->param_value;
	struct dmr_geometry g;

	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(c->device_blocks,
						   c->segment_blocks,
						   c->overprovision, &g),
			DMR_GEO_OK);
	KUNIT_EXPECT_EQ(test, g.nr_segments, c->nr_segments);
	KUNIT_EXPECT_EQ(test, g.logical_blocks, c->logical_blocks);
	KUNIT_EXPECT_EQ(test, dmr_map_memory_bytes(&g, 0), c->bytes);
	KUNIT_EXPECT_EQ(test, dmr_map_memory_bytes(&g, c->cache_mib), c->cache_bytes);
	/* above 2^29 logical blocks, the map cannot come from kvmalloc() */
	KUNIT_EXPECT_EQ(test, g.logical_blocks > (1ULL << 29), c->over_int_max);
	KUNIT_EXPECT_EQ(test, g.logical_blocks * DMR_MAP_ENTRY_SIZE > DMR_TEST_INT_MAX,
			c->over_int_max);
}

/*
 * Every array the module sizes by the device, at the format's limits:
 * 2^32 - 2 segments (of 256 KiB), and the largest map (4 PiB of 1 MiB
 * segments, wide).  Each one above INT_MAX bytes (the load's valid
 * counts, the map cache's ring, the map's page pointers) goes to vmalloc
 * (dmr_alloc_path()), none is refused on a 64-bit kernel, and
 * dmr_map_memory_bytes() counts them all, the load's valid counts too.
 */
static void dmr_test_arrays_at_limits(struct kunit *test)
{
	struct dmr_geometry segs = {
		.nr_segments = 0xfffffffeULL, .segment_blocks = DMR_MIN_SEGMENT_BLOCKS,
		.wide = true,
	}, big, more;
	u64 sum, total;
	int a, i;

	segs.logical_blocks = (segs.nr_segments - 10) * DMR_MIN_SEGMENT_BLOCKS / 10 * 9;
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_wide(1ULL << 40, 0, 256, 10, true, &big),
			DMR_GEO_OK);
	for (i = 0; i < 2; i++) {
		const struct dmr_geometry *g = i ? &big : &segs;

		sum = 0;
		for (a = 0; a < DMR_NR_ARRAYS; a++) {
			/* the cache's arrays with one, the others without */
			u64 n = dmr_array_elems(g, a < DMR_ARRAY_PC_RING ? 0 : 1, a);
			u32 size = dmr_array_elem_size(a);

			KUNIT_EXPECT_GT(test, n, 0ULL);
			KUNIT_EXPECT_NE(test, dmr_alloc_path(n, size, ~0ULL), DMR_ALLOC_TOO_BIG);
			if (n * size > DMR_KVMALLOC_MAX)
				KUNIT_EXPECT_EQ(test, dmr_alloc_path(n, size, ~0ULL),
						DMR_ALLOC_VMALLOC);
			if (a < DMR_ARRAY_PC_RING)
				sum += n * size;
		}
		/* the arrays, the map's pages, eight segment buffers, the bounce */
		total = sum + dmr_map_blocks(g->logical_blocks, true) * DMR_BLOCK_SIZE +
			8ULL * g->segment_blocks * DMR_BLOCK_SIZE + 64 * DMR_BLOCK_SIZE;
		KUNIT_EXPECT_EQ(test, dmr_map_memory_bytes(g, 0), total);
	}
	/* the ones above INT_MAX at the limits */
	KUNIT_EXPECT_EQ(test, dmr_array_elems(&segs, 0, DMR_ARRAY_LOAD_VALID) * 4,
			0x3fffffff8ULL);
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(0xfffffffeULL, 4, ~0ULL), DMR_ALLOC_VMALLOC);
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(dmr_array_elems(&segs, 0, DMR_ARRAY_SEGS),
					     dmr_array_elem_size(DMR_ARRAY_SEGS), ~0ULL),
			DMR_ALLOC_VMALLOC);
	KUNIT_EXPECT_GT(test, dmr_array_elems(&big, 1, DMR_ARRAY_PC_RING) * 4, DMR_KVMALLOC_MAX);
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(dmr_array_elems(&big, 1, DMR_ARRAY_PC_RING), 4,
					     ~0ULL), DMR_ALLOC_VMALLOC);
	/* no cache, none of its arrays; a cache, no write heat */
	KUNIT_EXPECT_EQ(test, dmr_array_elems(&big, 0, DMR_ARRAY_PC_RING), 0ULL);
	KUNIT_EXPECT_EQ(test, dmr_array_elems(&big, 1, DMR_ARRAY_HEAT), 0ULL);
	KUNIT_EXPECT_EQ(test, dmr_array_elems(&big, 0, DMR_ARRAY_HEAT),
			(big.logical_blocks + 3) / 4);
	/* a segment more costs its entry, reader count and load count */
	more = segs;
	more.nr_segments++;
	KUNIT_EXPECT_EQ(test, dmr_map_memory_bytes(&more, 0) - dmr_map_memory_bytes(&segs, 0),
			(u64)sizeof(struct dmr_seg) + 4 + 4);
	/* the boundary, and a 32-bit address space */
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(DMR_KVMALLOC_MAX, 1, ~0ULL), DMR_ALLOC_KVCALLOC);
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(DMR_KVMALLOC_MAX + 1, 1, ~0ULL), DMR_ALLOC_VMALLOC);
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(1ULL << 62, 8, ~0ULL), DMR_ALLOC_TOO_BIG);
	KUNIT_EXPECT_EQ(test, dmr_alloc_path(1ULL << 30, 4, 0xffffffffULL), DMR_ALLOC_TOO_BIG);
}

/**
 * struct dmr_fit_case - a memory need against a machine
 * @name: description
 * @bytes: dmr_map_memory_bytes() of the device
 * @mem: MemTotal in bytes, 0 if unknown
 * @vmalloc: VmallocTotal in bytes, 0 if unknown
 * @expect: dmr_map_fits() verdict
 */
struct dmr_fit_case {
	const char *name;
	u64 bytes, mem, vmalloc;
	enum dmr_fit expect;
};

#define DMR_GIB	(1024ULL * 1024 * 1024)
#define DMR_TIB	(1024 * DMR_GIB)

static const struct dmr_fit_case dmr_fit_cases[] = {
	{ "64 MiB device, 1 GiB machine", 2416590ULL, DMR_GIB, 32 * DMR_TIB,
	  DMR_FIT_OK },
	{ "16 TiB device, 64 GiB machine", 15751548601ULL, 64 * DMR_GIB,
	  32 * DMR_TIB, DMR_FIT_OK },
	{ "16 TiB device, 8 GiB machine", 15751548601ULL, 8 * DMR_GIB,
	  32 * DMR_TIB, DMR_FIT_NO_MEMORY },
	{ "exactly all of RAM", 4 * DMR_GIB, 4 * DMR_GIB, 32 * DMR_TIB,
	  DMR_FIT_OK },
	{ "one byte more than RAM", 4 * DMR_GIB + 1, 4 * DMR_GIB, 32 * DMR_TIB,
	  DMR_FIT_NO_MEMORY },
	{ "2.1 TiB device, 1 GiB vmalloc", 2223052003ULL, 4 * DMR_GIB,
	  DMR_GIB, DMR_FIT_NO_VMALLOC },
	{ "exactly all of vmalloc", DMR_GIB, 4 * DMR_GIB, DMR_GIB,
	  DMR_FIT_OK },
	{ "vmalloc unknown", 2223052003ULL, 4 * DMR_GIB, 0, DMR_FIT_OK },
	{ "RAM unknown", 2223052003ULL, 0, 32 * DMR_TIB, DMR_FIT_OK },
	{ "RAM unknown, vmalloc too small", 2223052003ULL, 0, DMR_GIB,
	  DMR_FIT_NO_VMALLOC },
	{ "both unknown", ~0ULL, 0, 0, DMR_FIT_OK },
	{ "both too small: RAM first", 2223052003ULL, DMR_GIB, DMR_GIB,
	  DMR_FIT_NO_MEMORY },
};

static void dmr_fit_desc(const struct dmr_fit_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->name);
}

KUNIT_ARRAY_PARAM(dmr_fit, dmr_fit_cases, dmr_fit_desc);

static void dmr_test_map_fits(struct kunit *test)
{
	const struct dmr_fit_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, dmr_map_fits(c->bytes, c->mem, c->vmalloc),
			c->expect);
}

/* Every verdict has its own message, and only DMR_FIT_OK reads "ok". */
static void dmr_test_fit_strerror(struct kunit *test)
{
	int i, j;

	KUNIT_EXPECT_STREQ(test, dmr_fit_strerror(DMR_FIT_OK), "ok");
	for (i = 0; i < DMR_FIT_NR_STATUS; i++)
		for (j = i + 1; j < DMR_FIT_NR_STATUS; j++)
			KUNIT_EXPECT_STRNEQ(test, dmr_fit_strerror(i),
					    dmr_fit_strerror(j));
}

/* ------------------------------------------------------------------ */
/* superblock codec */

static void dmr_make_sb(struct dmr_sb *sb, u64 blocknr)
{
	int i;

	memset(sb, 0, sizeof(*sb));
	sb->version = DMR_FORMAT_VERSION;
	sb->blocknr = blocknr;
	sb->generation = 42;
	for (i = 0; i < 16; i++)
		sb->uuid[i] = 0xa0 + i;
	sb->ctime = 1700000000;
	sb->stripe_blocks = 384;
	snprintf(sb->label, sizeof(sb->label), "unit-test");
	/* 64 MiB device, RAID-5 stripe sized segments */
	if (dmr_geometry_compute(16384, 384, 10, &sb->geo) != DMR_GEO_OK)
		memset(&sb->geo, 0, sizeof(sb->geo));
}

static void *dmr_test_block(struct kunit *test)
{
	void *b = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);

	if (!b)
		kunit_skip(test, "cannot allocate a block buffer");
	return b;
}

/*
 * Growing online (issue 26): a grow limit sizes the slots and places the
 * data area for the limit; growing keeps both and adds segments and
 * logical blocks exactly as a format at the new size with the same limit
 * would; a table length decides whether a load grows; the superblock
 * carries the limit with its feature bit.
 */
static void dmr_test_geometry_grow(struct kunit *test)
{
	const u64 dev = 16384, limit = 4 * 16384;
	struct dmr_geometry plain, g, big, at_limit, out, wide;
	struct dmr_sb in, sbo;
	void *block = dmr_test_block(test);

	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(dev, 64, 10, &plain), DMR_GEO_OK);
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_limit(dev, limit, 64, 10, &g), DMR_GEO_OK);
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_limit(limit, 0, 64, 10, &at_limit),
			DMR_GEO_OK);
	/* the slots of the limit, the segments of the device */
	KUNIT_EXPECT_EQ(test, g.ckpt_slot_blocks, at_limit.ckpt_slot_blocks);
	KUNIT_EXPECT_EQ(test, g.data_offset, at_limit.data_offset);
	KUNIT_EXPECT_GT(test, g.ckpt_slot_blocks, plain.ckpt_slot_blocks);
	KUNIT_EXPECT_EQ(test, g.nr_segments, (dev - g.data_offset) / 64);
	KUNIT_EXPECT_EQ(test, g.grow_limit, limit);

	KUNIT_ASSERT_EQ(test, dmr_geometry_grow(&g, 2 * dev, &big), DMR_GEO_OK);
	KUNIT_EXPECT_EQ(test, big.data_offset, g.data_offset);
	KUNIT_EXPECT_EQ(test, big.ckpt_slot_blocks, g.ckpt_slot_blocks);
	KUNIT_EXPECT_EQ(test, big.nr_segments, (2 * dev - g.data_offset) / 64);
	KUNIT_EXPECT_GT(test, big.logical_blocks, g.logical_blocks);
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_limit(2 * dev, limit, 64, 10, &out),
			DMR_GEO_OK);
	KUNIT_EXPECT_EQ(test, memcmp(&out, &big, sizeof(out)), 0);
	KUNIT_EXPECT_EQ(test, dmr_geometry_grow(&g, limit, &out), DMR_GEO_OK);
	KUNIT_EXPECT_EQ(test, out.nr_segments, at_limit.nr_segments);
	KUNIT_EXPECT_EQ(test, dmr_geometry_grow(&g, limit + 1, &out),
			DMR_GEO_BEYOND_GROW_LIMIT);
	KUNIT_EXPECT_EQ(test, dmr_geometry_grow(&g, dev - 1, &out), DMR_GEO_SHRINK);
	KUNIT_EXPECT_EQ(test, dmr_geometry_grow(&plain, 2 * dev, &out), DMR_GEO_NO_GROW_LIMIT);
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_limit(dev, dev - 1, 64, 10, &out),
			DMR_GEO_BAD_GROW_LIMIT);
	/* 32-bit entries: the limit, not the device, must stay under 16 TiB */
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_limit(1ULL << 24, (1ULL << 32) + (1ULL << 24),
							 64, 10, &out), DMR_GEO_TOO_LARGE);
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_limit(1ULL << 24, (1ULL << 32) - (1ULL << 20),
							 64, 10, &out), DMR_GEO_OK);
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_limit(dev, 1ULL << 30, 64, 10, &out),
			DMR_GEO_TOO_SMALL);	/* no room for the limit's slots */

	/* what a table's length asks for */
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&g, 2 * dev, g.logical_blocks, &out),
			DMR_GROW_NONE);
	KUNIT_EXPECT_EQ(test, out.nr_segments, g.nr_segments);
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&g, 2 * dev, big.logical_blocks, &out),
			DMR_GROW_YES);
	KUNIT_EXPECT_EQ(test, memcmp(&out, &big, sizeof(out)), 0);
	/* a device grown past the limit grows to the limit */
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&g, 8 * dev, g.logical_blocks + 1, &out),
			DMR_GROW_YES);
	KUNIT_EXPECT_EQ(test, out.device_blocks, limit);
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&g, 2 * dev, big.logical_blocks + 1,
						      &out), DMR_GROW_TOO_LONG);
	KUNIT_EXPECT_EQ(test, out.nr_segments, g.nr_segments);
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&g, dev - 1, g.logical_blocks + 1, &out),
			DMR_GROW_SHRUNK);
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&plain, 2 * dev,
						      plain.logical_blocks + 1, &out),
			DMR_GROW_NO_LIMIT);

	/* the superblock carries it, with its feature */
	dmr_make_sb(&in, 0);
	in.geo = big;
	in.feature_incompat = DMR_FEATURE_INCOMPAT_GROW;
	dmr_sb_encode(&in, block);
	KUNIT_ASSERT_EQ(test, dmr_sb_decode(block, 0, &sbo), DMR_SB_OK);
	KUNIT_EXPECT_EQ(test, memcmp(&sbo.geo, &big, sizeof(big)), 0);
	in.feature_incompat = 0;
	dmr_sb_encode(&in, block);
	KUNIT_EXPECT_EQ(test, dmr_sb_decode(block, 0, &sbo), DMR_SB_BAD_GEOMETRY);
	/* a grown superblock whose data area does not follow from its limit */
	in.feature_incompat = DMR_FEATURE_INCOMPAT_GROW;
	in.geo.grow_limit = limit * 2;
	dmr_sb_encode(&in, block);
	KUNIT_EXPECT_EQ(test, dmr_sb_decode(block, 0, &sbo), DMR_SB_BAD_GEOMETRY);
	/*
	 * Wide (format 4): the feature bit is the geometry's @wide, written
	 * from it and read into it; the layout follows it (8-byte map
	 * entries: twice the map blocks in a slot), and a grow keeps it.
	 */
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_wide(dev, limit, 64, 10, true, &wide),
			DMR_GEO_OK);
	KUNIT_EXPECT_TRUE(test, wide.wide);
	KUNIT_EXPECT_GT(test, wide.ckpt_slot_blocks, g.ckpt_slot_blocks);
	in.geo = wide;
	in.feature_incompat = DMR_FEATURE_INCOMPAT_GROW;
	dmr_sb_encode(&in, block);
	KUNIT_ASSERT_EQ(test, dmr_sb_decode(block, 0, &sbo), DMR_SB_OK);
	KUNIT_EXPECT_TRUE(test, sbo.geo.wide);
	KUNIT_EXPECT_EQ(test, memcmp(&sbo.geo, &wide, sizeof(wide)), 0);
	KUNIT_EXPECT_EQ(test, sbo.feature_incompat,
			DMR_FEATURE_INCOMPAT_GROW | DMR_FEATURE_INCOMPAT_WIDE);
	KUNIT_ASSERT_EQ(test, dmr_geometry_grow(&sbo.geo, 2 * dev, &out), DMR_GEO_OK);
	KUNIT_EXPECT_TRUE(test, out.wide);
	KUNIT_EXPECT_EQ(test, out.data_offset, wide.data_offset);
	KUNIT_EXPECT_EQ(test, out.nr_segments, (2 * dev - wide.data_offset) / 64);
	KUNIT_EXPECT_EQ(test, dmr_geometry_for_length(&sbo.geo, 2 * dev, out.logical_blocks,
						      &big), DMR_GROW_YES);
	KUNIT_EXPECT_TRUE(test, big.wide);
	/* the bit without its layout, or the layout without its bit */
	in.geo = g;
	in.geo.wide = true;
	dmr_sb_encode(&in, block);
	KUNIT_EXPECT_EQ(test, dmr_sb_decode(block, 0, &sbo), DMR_SB_BAD_GEOMETRY);
	in.geo = wide;
	in.geo.wide = false;
	in.feature_incompat = DMR_FEATURE_INCOMPAT_GROW | DMR_FEATURE_INCOMPAT_WIDE;
	dmr_sb_encode(&in, block);
	KUNIT_EXPECT_EQ(test, dmr_sb_decode(block, 0, &sbo), DMR_SB_BAD_GEOMETRY);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmr_disk_superblock, grow_limit), 160UL);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmr_disk_ckpt, nr_segments), 296UL);
}

/*
 * Format 4's limits: 32-bit map entries stop below 2^32 data blocks (16
 * TiB), 64-bit ones at 2^32 - 2 segments (4 PiB of 1 MiB segments) or a
 * checkpoint slot of 2^32 blocks (the superblock's field); past either,
 * too large comes before too small.  A wide geometry's slots hold 8-byte
 * entries: twice the map blocks.
 */
static void dmr_test_geometry_wide_limits(struct kunit *test)
{
	const u64 tib = 1ULL << 28;	/* blocks */
	struct dmr_geometry g, n;

	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_wide(32 * tib, 0, 2048, 10, false, &g),
			DMR_GEO_TOO_LARGE);
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_wide(32 * tib, 0, 2048, 10, true, &g),
			DMR_GEO_OK);
	KUNIT_EXPECT_TRUE(test, g.wide);
	KUNIT_EXPECT_GT(test, g.logical_blocks, 1ULL << 32);
	KUNIT_EXPECT_LT(test, g.nr_segments * g.segment_blocks, 32 * tib);
	KUNIT_EXPECT_EQ(test, dmr_map_blocks(g.logical_blocks, true),
			(g.logical_blocks + 511) / 512);
	/* just under 16 TiB: narrow still, twice the map blocks when wide */
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_wide(16 * tib - 8192, 0, 256, 10, false, &n),
			DMR_GEO_OK);
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_wide(16 * tib - 8192, 0, 256, 10, true, &g),
			DMR_GEO_OK);
	KUNIT_EXPECT_EQ(test, dmr_map_blocks(16 * tib - 8192, true),
			2 * dmr_map_blocks(16 * tib - 8192, false));
	KUNIT_EXPECT_GT(test, g.ckpt_slot_blocks, n.ckpt_slot_blocks);
	KUNIT_EXPECT_GE(test, g.data_offset, n.data_offset);
	/* 4 PiB of 1 MiB segments fits, 4 PiB + 64 TiB does not */
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_wide(1ULL << 40, 0, 256, 10, true, &g),
			DMR_GEO_OK);
	KUNIT_EXPECT_GT(test, g.nr_segments, (1ULL << 32) - (1ULL << 25));
	KUNIT_EXPECT_LT(test, g.nr_segments, (u64)DMR_NO_SEGMENT);
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_wide((1ULL << 40) + (1ULL << 34), 0, 256,
							10, true, &g), DMR_GEO_TOO_LARGE);
	/* as a grow limit on a small device: too large, not too small */
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_wide(1ULL << 20, (1ULL << 40) + (1ULL << 34),
							256, 10, true, &g), DMR_GEO_TOO_LARGE);
	/* 16 PiB of 1 GiB segments: few segments, but a slot of 2^33 blocks */
	KUNIT_EXPECT_EQ(test, dmr_geometry_compute_wide(1ULL << 42, 0, DMR_MAX_SEGMENT_BLOCKS,
							10, true, &g), DMR_GEO_TOO_LARGE);
}

static void dmr_test_sb_roundtrip(struct kunit *test)
{
	struct dmr_sb in, out;
	void *block = dmr_test_block(test);
	u64 nr;

	for (nr = 0; nr < DMR_SB_COPIES; nr++) {
		dmr_make_sb(&in, nr);
		KUNIT_ASSERT_NE(test, in.geo.nr_segments, 0ULL);
		dmr_sb_encode(&in, block);
		KUNIT_EXPECT_TRUE(test, dmr_sb_has_magic(block));
		KUNIT_ASSERT_EQ(test, dmr_sb_decode(block, nr, &out), DMR_SB_OK);
		KUNIT_EXPECT_EQ(test, out.version, in.version);
		KUNIT_EXPECT_EQ(test, out.blocknr, nr);
		KUNIT_EXPECT_EQ(test, out.generation, in.generation);
		KUNIT_EXPECT_EQ(test, out.ctime, in.ctime);
		KUNIT_EXPECT_EQ(test, out.stripe_blocks, in.stripe_blocks);
		KUNIT_EXPECT_EQ(test, memcmp(out.uuid, in.uuid, 16), 0);
		KUNIT_EXPECT_STREQ(test, out.label, in.label);
		KUNIT_EXPECT_EQ(test, memcmp(&out.geo, &in.geo, sizeof(in.geo)), 0);
	}
}

/*
 * The label is a NUL-padded string: bytes after its NUL (which the
 * checksum covers, so they validate) are not part of it, and the decoded
 * superblock encodes back to a block that decodes to the very same one.
 * Found by the fuzz target fuzz-sb.
 */
static void dmr_test_sb_label_after_nul(struct kunit *test)
{
	struct dmr_disk_superblock *d = dmr_test_block(test);
	void *again = dmr_test_block(test);
	struct dmr_sb in, out, out2;

	dmr_make_sb(&in, 0);
	dmr_sb_encode(&in, d);
	d->label[DMR_LABEL_LEN - 2] = 'x';	/* after "unit-test" and its NUL */
	d->csum = cpu_to_le32(dmr_csum_block(d, DMR_SB_CSUM_SALT));
	KUNIT_ASSERT_EQ(test, dmr_sb_decode(d, 0, &out), DMR_SB_OK);
	KUNIT_EXPECT_STREQ(test, out.label, "unit-test");
	KUNIT_EXPECT_EQ(test, out.label[DMR_LABEL_LEN - 2], 0);
	dmr_sb_encode(&out, again);
	KUNIT_ASSERT_EQ(test, dmr_sb_decode(again, 0, &out2), DMR_SB_OK);
	KUNIT_EXPECT_EQ(test, memcmp(&out, &out2, sizeof(out)), 0);
}

/* The on-disk encoding is fixed: little endian, fields at fixed offsets. */
static void dmr_test_sb_layout(struct kunit *test)
{
	struct dmr_sb in;
	u8 *b = dmr_test_block(test);

	dmr_make_sb(&in, 1);
	dmr_sb_encode(&in, b);
	KUNIT_EXPECT_EQ(test, memcmp(b, "DM-REMAP", 8), 0);
	KUNIT_EXPECT_EQ(test, b[12], DMR_FORMAT_VERSION);	/* version, LE */
	KUNIT_EXPECT_EQ(test, b[13], 0);
	KUNIT_EXPECT_EQ(test, b[29], DMR_BLOCK_SIZE >> 8);	/* 4096 = 00 10 */
	KUNIT_EXPECT_EQ(test, b[32], 1);			/* blocknr */
	KUNIT_EXPECT_EQ(test, b[40], 42);			/* generation */
	KUNIT_EXPECT_EQ(test, b[92], 384 & 0xff);		/* segment_blocks */
	KUNIT_EXPECT_EQ(test, b[93], 384 >> 8);
	KUNIT_EXPECT_EQ(test, (u32)(b[8] | b[9] << 8 | b[10] << 16 | (u32)b[11] << 24),
			dmr_csum_block(b, DMR_SB_CSUM_SALT));
	/* salting: the same bytes do not validate as another block type */
	KUNIT_EXPECT_NE(test, dmr_csum_block(b, DMR_SB_CSUM_SALT),
			dmr_csum_block(b, DMR_CKPT_CSUM_SALT));
}

/* Known-answer test so the kernel and userspace CRC32C agree. */
static void dmr_test_crc32c_kat(struct kunit *test)
{
	/* CRC-32C check value: "123456789" -> 0xE3069283 */
	KUNIT_EXPECT_EQ(test, ~crc32c(~0U, "123456789", 9), 0xE3069283U);
}

/**
 * struct dmr_corrupt_case - one way a superblock copy can be damaged
 * @name: description
 * @offset: byte to change
 * @value: xor applied (when @set is false) or value stored
 * @set: store @value rather than xor it
 * @resum: recompute the checksum afterwards (a well-formed but wrong block)
 * @read_at: block number the copy is "read from"
 * @expect: status dmr_sb_decode() must report
 */
struct dmr_corrupt_case {
	const char *name;
	unsigned int offset;
	u8 value;
	bool set, resum;
	u64 read_at;
	enum dmr_sb_status expect;
};

static const struct dmr_corrupt_case dmr_corrupt_cases[] = {
	{ "magic byte", 0, 0x01, false, false, 0, DMR_SB_BAD_MAGIC },
	{ "magic zeroed", 7, 0x00, true, true, 0, DMR_SB_BAD_MAGIC },
	{ "checksum field", 9, 0x80, false, false, 0, DMR_SB_BAD_CSUM },
	{ "payload bit", 100, 0x04, false, false, 0, DMR_SB_BAD_CSUM },
	{ "reserved tail", 4095, 0x01, false, false, 0, DMR_SB_BAD_CSUM },
	{ "version 7", 12, 7, true, true, 0, DMR_SB_BAD_VERSION },
	{ "version 5", 12, 5, true, true, 0, DMR_SB_BAD_VERSION },
	{ "version 4", 12, 4, true, true, 0, DMR_SB_BAD_VERSION },
	{ "version 3", 12, 3, true, true, 0, DMR_SB_BAD_VERSION },
	{ "version 2", 12, 2, true, true, 0, DMR_SB_BAD_VERSION },
	{ "version 1", 12, 1, true, true, 0, DMR_SB_BAD_VERSION },
	{ "version 0", 12, 0, true, true, 0, DMR_SB_BAD_VERSION },
	{ "incompat feature", 24, 0x04, true, true, 0, DMR_SB_BAD_FEATURES },
	{ "grow feature, no limit", 24, 0x01, true, true, 0, DMR_SB_BAD_GEOMETRY },
	{ "grow limit, no feature", 163, 0x01, true, true, 0, DMR_SB_BAD_GEOMETRY },
	{ "block size 8192", 29, 0x20, true, true, 0, DMR_SB_BAD_BLOCK_SIZE },
	{ "misdirected: read at 1", 0, 0, false, false, 1, DMR_SB_BAD_LOCATION },
	{ "location field", 32, 5, true, true, 0, DMR_SB_BAD_LOCATION },
	{ "logical blocks", 112, 0x01, false, true, 0, DMR_SB_BAD_GEOMETRY },
	{ "data offset", 96, 0x01, false, true, 0, DMR_SB_BAD_GEOMETRY },
	{ "segment size", 92, 0xff, true, true, 0, DMR_SB_BAD_GEOMETRY },
	{ "overprovision 0", 120, 0, true, true, 0, DMR_SB_BAD_GEOMETRY },
	{ "ckpt slot size", 88, 0x01, false, true, 0, DMR_SB_BAD_GEOMETRY },
};

static void dmr_corrupt_desc(const struct dmr_corrupt_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->name);
}

KUNIT_ARRAY_PARAM(dmr_corrupt, dmr_corrupt_cases, dmr_corrupt_desc);

static void dmr_test_sb_corruption(struct kunit *test)
{
	const struct dmr_corrupt_case *c = test->param_value;
	u8 *b = dmr_test_block(test);
	struct dmr_sb in, out;

	dmr_make_sb(&in, 0);
	dmr_sb_encode(&in, b);
	if (c->set)
		b[c->offset] = c->value;
	else
		b[c->offset] ^= c->value;
	if (c->resum) {
		u32 sum = dmr_csum_block(b, DMR_SB_CSUM_SALT);

		b[8] = sum;
		b[9] = sum >> 8;
		b[10] = sum >> 16;
		b[11] = sum >> 24;
	}
	KUNIT_EXPECT_EQ(test, dmr_sb_decode(b, c->read_at, &out), c->expect);
	KUNIT_EXPECT_STRNEQ(test, dmr_sb_strerror(c->expect), "ok");
}

/* Every status has its own message. */
static void dmr_test_sb_strerror(struct kunit *test)
{
	int i, j;

	for (i = 0; i < DMR_SB_NR_STATUS; i++)
		for (j = i + 1; j < DMR_SB_NR_STATUS; j++)
			KUNIT_EXPECT_STRNEQ(test, dmr_sb_strerror(i),
					    dmr_sb_strerror(j));
}

/*
 * A superblock of another format version is refused, decodes its
 * version (for the kernel log's message), and the remedy depends on
 * which side of this version it is (dmr_sb_version_remedy()).
 */
/*
 * Issue 40 item 4: a copy that is damaged, or valid with an older
 * generation (a crash between the two writes of a grow), is not current;
 * a writable load rewrites it.  Generations as a grow leaves them: 7 the
 * old superblock, 8 the grown one.
 */
static void dmr_test_sb_copies_current(struct kunit *test)
{
	enum dmr_sb_status ok2[2] = { DMR_SB_OK, DMR_SB_OK };
	enum dmr_sb_status bad1[2] = { DMR_SB_OK, DMR_SB_BAD_CSUM };
	enum dmr_sb_status rerr0[2] = { DMR_SB_NR_STATUS, DMR_SB_OK };
	u64 same[2] = { 8, 8 }, stale1[2] = { 8, 7 }, stale0[2] = { 7, 8 };

	KUNIT_EXPECT_EQ(test, dmr_sb_copies_current(ok2, same, 0), 2U);
	KUNIT_EXPECT_EQ(test, dmr_sb_copies_current(ok2, same, 1), 2U);
	/* the grown copy first, the old one not yet rewritten: either order */
	KUNIT_EXPECT_EQ(test, dmr_sb_copies_current(ok2, stale1, 0), 1U);
	KUNIT_EXPECT_EQ(test, dmr_sb_copies_current(ok2, stale0, 1), 1U);
	/* a damaged copy or a read error: whatever its (unread) generation */
	KUNIT_EXPECT_EQ(test, dmr_sb_copies_current(bad1, same, 0), 1U);
	KUNIT_EXPECT_EQ(test, dmr_sb_copies_current(rerr0, same, 1), 1U);
}

static void dmr_test_sb_other_version(struct kunit *test)
{
	static const u32 versions[] = { 1, 2, 3, 4, 5, DMR_FORMAT_VERSION + 1, 0xffffffffU };
	void *block = dmr_test_block(test);
	struct dmr_sb in, out;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(versions); i++) {
		dmr_make_sb(&in, 0);
		in.version = versions[i];
		dmr_sb_encode(&in, block);
		KUNIT_EXPECT_EQ(test, dmr_sb_decode(block, 0, &out), DMR_SB_BAD_VERSION);
		KUNIT_EXPECT_EQ(test, out.version, versions[i]);
	}
	for (i = 1; i < DMR_FORMAT_VERSION; i++)
		KUNIT_EXPECT_NOT_NULL(test, strstr(dmr_sb_version_remedy(i),
						   "reformat with this version's remapctl"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(dmr_sb_version_remedy(DMR_FORMAT_VERSION + 1),
					   "newer dm-remap module"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(dmr_sb_version_remedy(0xffffffffU),
					   "newer dm-remap module"));
}

/*
 * The birth's 16-bit float in the segment table (dmr_birth_encode()):
 * exact below 2^11, rounded down by less than 2^-11 above, monotonic,
 * and clamped at its largest value.
 */
static void dmr_test_birth_codec(struct kunit *test)
{
	u64 d, prev = 0, back;
	u32 c;

	for (d = 0; d < 2048; d++)
		KUNIT_EXPECT_EQ(test, dmr_birth_encode(d), (u32)d);
	KUNIT_EXPECT_EQ(test, dmr_birth_encode(2048), 1U << 11);
	KUNIT_EXPECT_EQ(test, dmr_birth_encode(4095), 1U << 11 | 2047);
	KUNIT_EXPECT_EQ(test, dmr_birth_encode(4096), 2U << 11);
	KUNIT_EXPECT_EQ(test, dmr_birth_encode(5001), 2U << 11 | 452);
	KUNIT_EXPECT_EQ(test, dmr_birth_decode(2U << 11 | 452), 5000ULL);
	for (d = 1; d < (1ULL << 44); d += d / 7 + 1) {
		c = dmr_birth_encode(d);
		KUNIT_EXPECT_LT(test, c, 1U << 16);
		back = dmr_birth_decode(c);
		KUNIT_EXPECT_GE(test, back, prev);
		if (d < (4096ULL << 30)) {
			KUNIT_EXPECT_LE(test, back, d);
			KUNIT_EXPECT_LE(test, (d - back) * 2048, d);
		}
		prev = back;
	}
	KUNIT_EXPECT_EQ(test, dmr_birth_encode(1ULL << 50), 0xffffU);
	KUNIT_EXPECT_EQ(test, dmr_birth_decode(0xffff), 4095ULL << 30);
	KUNIT_EXPECT_EQ(test, dmr_birth_decode(0xffff0000U), 0ULL);
}

static struct kunit_case dmr_pure_cases[] = {
	KUNIT_CASE_PARAM(dmr_test_parse_u64, dmr_u64_gen_params),
	KUNIT_CASE_PARAM(dmr_test_options, dmr_opt_gen_params),
	KUNIT_CASE(dmr_test_options_emit),
	KUNIT_CASE(dmr_test_options_with_gc),
	KUNIT_CASE(dmr_test_birth_codec),
	KUNIT_CASE_PARAM(dmr_test_geometry, dmr_geo_gen_params),
	KUNIT_CASE(dmr_test_geometry_grow),
	KUNIT_CASE(dmr_test_geometry_wide_limits),
	KUNIT_CASE_PARAM(dmr_test_default_segment, dmr_seg_gen_params),
	KUNIT_CASE_PARAM(dmr_test_map_memory, dmr_mem_gen_params),
	KUNIT_CASE(dmr_test_arrays_at_limits),
	KUNIT_CASE_PARAM(dmr_test_map_fits, dmr_fit_gen_params),
	KUNIT_CASE(dmr_test_fit_strerror),
	KUNIT_CASE(dmr_test_crc32c_kat),
	KUNIT_CASE(dmr_test_sb_roundtrip),
	KUNIT_CASE(dmr_test_sb_label_after_nul),
	KUNIT_CASE(dmr_test_sb_layout),
	KUNIT_CASE_PARAM(dmr_test_sb_corruption, dmr_corrupt_gen_params),
	KUNIT_CASE(dmr_test_sb_strerror),
	KUNIT_CASE(dmr_test_sb_other_version),
	KUNIT_CASE(dmr_test_sb_copies_current),
	{}
};

static struct kunit_suite dmr_pure_suite = {
	.name = "dm-remap-pure",
	.test_cases = dmr_pure_cases,
};

kunit_test_suite(dmr_pure_suite);

MODULE_DESCRIPTION("KUnit tests for dm-remap's pure code");
MODULE_LICENSE("GPL");
