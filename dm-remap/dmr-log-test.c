// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for dm-remap's map, segment accounting, log-unit and
 * checkpoint codecs, and roll-forward replay against an in-memory fake
 * device.  Also compiled into the host runner tools/tests/test-pure.
 */
#include <kunit/test.h>

#include "dmr-log.h"
#include "dmr-writer.h"

/*
 * Replay runs on a 2 MiB fake device (7 segments of 64 blocks, 288
 * logical blocks); the map tests use a 64 MiB geometry without storage.
 */
#define T_DEV_BLOCKS	1536
/*
 * Blocks of the fake device backed by memory (kmalloc()'s 4 MiB limit):
 * the metadata and the first segments, where every test writes; the rest
 * reads as never written.
 */
#define T_STORE_BLOCKS	512
#define T_MAP_BLOCKS	16384
#define T_SEG_BLOCKS	64

/**
 * struct dmr_fake - in-memory device plus the structures replay needs
 * @geo: geometry of the fake device
 * @uuid: its uuid
 * @dev: T_STORE_BLOCKS blocks of storage (NULL for map-only tests)
 * @map: map under test
 * @unit: scratch unit
 * @buf: replay scratch, one segment
 * @fail_reads_from: reads of blocks at or above this fail (0: never)
 * @fail_writes_from: writes of blocks at or above this fail (0: never)
 */
/* The page allocator of a fake's maps: fails once @fail_after were given. */
struct dmr_fake_pages {
	struct kunit *test;
	int fail_after;		/* -1: never */
	int allocated;
	u64 last;		/* the page the last one was for */
};

/* table blocks dmr_fake_table_read() records, of each table */
#define DMR_TR_MAX	64U

struct dmr_fake {
	struct dmr_geometry geo;
	u8 uuid[16];
	u8 *dev;
	struct dmr_map map;
	struct dmr_unit *unit;
	void *buf;
	u64 fail_reads_from;
	u64 fail_writes_from;
	struct dmr_fake_pages pages;
	struct dmr_fake_hooks *hooks;
	struct dmr_step_hooks *steps;
	u32 (*table_seen)[2][DMR_TR_MAX];	/* dmr_fake_table_read() */
};

/*
 * The load's and replay's calls out (dmr_slot_io's @loaded, dmr_replay's
 * @need), as the module's map cache uses them: what they were called
 * with, counts kept a page at a time, pages let go as they are counted.
 */
struct dmr_fake_hooks {
	struct dmr_map *m;
	u64 seen[8];
	unsigned int nr_seen;
	u32 *valid;		/* per segment */
	u64 mapped;
	bool evict;		/* take each page out once counted */
	u64 fail_page;		/* @loaded fails on this page (-EILSEQ) */
	u32 fail_lba;		/* @need fails when asked for it (-EIO) */
	unsigned int units;	/* @need calls */
};

static int dmr_fake_loaded(void *ctx, u64 p)
{
	struct dmr_fake_hooks *h = ((struct dmr_fake *)ctx)->hooks;
	bool absent;

	if (h->nr_seen < ARRAY_SIZE(h->seen))
		h->seen[h->nr_seen++] = p;
	if (p == h->fail_page || dmr_map_count_page(h->m, p, h->valid, &h->mapped))
		return -EILSEQ;
	/* (the slot loaded, 1, is the newest; the page is kunit's to free) */
	if (h->evict && !dmr_map_evict(h->m, p, 1, &absent))
		return -EINVAL;
	return 0;
}

static int dmr_fake_need(void *ctx, u64 lba, u64 n)
{
	struct dmr_fake_hooks *h = ((struct dmr_fake *)ctx)->hooks;

	h->units++;
	return h->fail_lba >= lba && h->fail_lba - lba < n ? -EIO : 0;
}

static int dmr_fake_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	struct dmr_fake *f = ctx;

	if (blocknr + nr > T_DEV_BLOCKS)
		return -EIO;
	if (f->fail_reads_from && blocknr + nr > f->fail_reads_from)
		return -EIO;
	for (; nr; nr--, blocknr++, buf = (u8 *)buf + DMR_BLOCK_SIZE) {
		if (blocknr < T_STORE_BLOCKS)
			memcpy(buf, f->dev + blocknr * DMR_BLOCK_SIZE, DMR_BLOCK_SIZE);
		else
			memset(buf, 0, DMR_BLOCK_SIZE);
	}
	return 0;
}

/* Writes (dmr_slot_write()) go to the blocks backed by memory only. */
static int dmr_fake_write(void *ctx, u64 blocknr, u32 nr, const void *buf)
{
	struct dmr_fake *f = ctx;

	if (blocknr + nr > T_STORE_BLOCKS)
		return -EIO;
	if (f->fail_writes_from && blocknr + nr > f->fail_writes_from)
		return -EIO;
	memcpy(f->dev + blocknr * DMR_BLOCK_SIZE, buf, (size_t)nr * DMR_BLOCK_SIZE);
	return 0;
}

/* A page of the map, as the module's is: allocated when first needed. */
static void *dmr_fake_page_alloc(void *ctx, u64 page)
{
	struct dmr_fake_pages *fp = ctx;

	if (fp->fail_after >= 0 && fp->allocated >= fp->fail_after)
		return NULL;
	fp->allocated++;
	fp->last = page;
	return kunit_kzalloc(fp->test, DMR_BLOCK_SIZE, GFP_KERNEL);
}

/*
 * The map of the module's kind: no page until a block of it is mapped
 * (dmr_map_reserve(), through @f->pages).
 */
static void dmr_fake_map_init(struct kunit *test, struct dmr_fake *f,
			      struct dmr_map *m)
{
	u64 nr_map_blocks = (f->geo.logical_blocks + DMR_MAP_NARROW_ENTRIES - 1) /
			    DMR_MAP_NARROW_ENTRIES;
	u32 **l2p = kunit_kzalloc(test, nr_map_blocks * sizeof(*l2p), GFP_KERNEL);
	struct dmr_seg *segs = kunit_kzalloc(test, f->geo.nr_segments * sizeof(*segs),
					     GFP_KERNEL);
	u8 *dirty = kunit_kzalloc(test, nr_map_blocks, GFP_KERNEL);
	u32 *lists = kunit_kzalloc(test, DMR_MAP_LISTS(f->geo.segment_blocks) *
				   sizeof(*lists), GFP_KERNEL);

	if (!l2p || !segs || !dirty || !lists)
		kunit_skip(test, "cannot allocate the map");
	dmr_map_init(m, l2p, NULL, f->geo.logical_blocks, segs, f->geo.nr_segments,
		     f->geo.segment_blocks, dirty, lists);
	f->pages.test = test;
	f->pages.fail_after = -1;
	m->page_alloc = dmr_fake_page_alloc;
	m->page_ctx = &f->pages;
}

/* Map @lba to @pba in a map of dmr_fake_map_init()'s, page first. */
static void dmr_t_set(struct kunit *test, struct dmr_map *m, u64 lba, u64 pba)
{
	KUNIT_ASSERT_EQ(test, dmr_map_reserve(m, lba, 1), 0);
	dmr_map_set(m, lba, pba);
}

static struct dmr_fake *dmr_fake_geo(struct kunit *test, u64 dev_blocks,
				     bool storage)
{
	struct dmr_fake *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	int i;

	if (!f)
		kunit_skip(test, "cannot allocate the fake device");
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(dev_blocks, T_SEG_BLOCKS, 10,
						   &f->geo), DMR_GEO_OK);
	for (i = 0; i < 16; i++)
		f->uuid[i] = 0x40 + i;
	if (storage) {
		f->dev = kunit_kzalloc(test, (size_t)T_STORE_BLOCKS * DMR_BLOCK_SIZE,
				       GFP_KERNEL);
		if (!f->dev)
			kunit_skip(test, "cannot allocate the fake device");
	}
	f->unit = kunit_kzalloc(test, sizeof(*f->unit), GFP_KERNEL);
	f->buf = kunit_kzalloc(test, (size_t)T_SEG_BLOCKS * DMR_BLOCK_SIZE, GFP_KERNEL);
	if (!f->unit || !f->buf)
		kunit_skip(test, "cannot allocate the fake device");
	dmr_fake_map_init(test, f, &f->map);
	return f;
}

static struct dmr_fake *dmr_fake_new(struct kunit *test)
{
	return dmr_fake_geo(test, T_DEV_BLOCKS, true);
}

static u8 *dmr_fake_block(struct dmr_fake *f, u32 segment, u32 offset)
{
	u64 b = f->geo.data_offset + (u64)segment * f->geo.segment_blocks + offset;

	/* every test writes within the blocks backed by memory */
	if (b >= T_STORE_BLOCKS)
		return NULL;
	return f->dev + b * DMR_BLOCK_SIZE;
}

/* Content of logical block @lba as written by generation @gen. */
static void dmr_fill(u8 *block, u32 lba, u32 gen)
{
	u32 i;

	for (i = 0; i < DMR_BLOCK_SIZE; i += 8) {
		block[i] = lba;
		block[i + 1] = lba >> 8;
		block[i + 2] = lba >> 16;
		block[i + 3] = gen;
		block[i + 4] = i;
		block[i + 5] = i >> 8;
		block[i + 6] = 0xa5;
		block[i + 7] = 0x5a;
	}
}

/**
 * dmr_fake_write_unit() - write one unit the way the module does
 * @f: fake device
 * @pos: log position; advanced
 * @lbas: logical blocks of the data, @nr of them
 * @gen: data generation (for the content)
 * @discard_first: first block of one discard extent (with @discard_count)
 * @discard_count: 0 for no discard
 *
 * Return: the segment and offset the unit went to, packed as seg << 16 | off.
 */
static u32 dmr_fake_write_unit(struct dmr_fake *f, struct dmr_log_pos *pos,
			       const u32 *lbas, u32 nr, u32 gen,
			       u32 discard_first, u32 discard_count)
{
	struct dmr_unit *u = f->unit;
	u32 seg = pos->segment, off = pos->offset, i;

	if (pos->next_segment == DMR_NO_SEGMENT)
		pos->next_segment = seg + 1 < f->geo.nr_segments ? seg + 1 : DMR_NO_SEGMENT;
	dmr_unit_reset(u, 0);
	u->seq = pos->seq + 1;
	u->blocknr = f->geo.data_offset + (u64)seg * f->geo.segment_blocks + off;
	u->next_segment = pos->next_segment;
	if (discard_count) {
		u->discard[0][0] = discard_first;
		u->discard[0][1] = discard_count;
		u->nr_discards = 1;
	}
	for (i = 0; i < nr; i++) {
		u->lba[i] = lbas[i];
		dmr_fill(dmr_fake_block(f, seg, off + 1 + i), lbas[i], gen);
	}
	u->nr_blocks = nr;
	dmr_unit_encode(u, f->uuid, dmr_fake_block(f, seg, off + 1),
			dmr_fake_block(f, seg, off));
	pos->seq = u->seq;
	dmr_log_advance(pos, 1 + nr, f->geo.segment_blocks);
	return seg << 16 | off;
}

static struct dmr_replay dmr_fake_replay_params(struct dmr_fake *f)
{
	struct dmr_replay r = {
		.geo = &f->geo,
		.uuid = f->uuid,
		.read = dmr_fake_read,
		.ctx = f,
		.buf = f->buf,
		.unit = f->unit,
	};
	return r;
}

/*
 * Replay the fake device from the empty state into a fresh map (@r its
 * parameters); returns dmr_replay_log()'s result.
 */
static int dmr_fake_replay_rc(struct kunit *test, struct dmr_fake *f, struct dmr_map *m,
			      struct dmr_log_pos *pos, struct dmr_replay *r)
{
	*r = dmr_fake_replay_params(f);
	dmr_fake_map_init(test, f, m);
	memset(pos, 0, sizeof(*pos));
	pos->next_segment = DMR_NO_SEGMENT;
	/* as the loader does: segment states are rebuilt after replay */
	m->track = false;
	return dmr_replay_log(r, m, pos);
}

/* dmr_fake_replay_rc() that succeeds, the segment states rebuilt. */
static struct dmr_replay dmr_fake_replay(struct kunit *test, struct dmr_fake *f,
					 struct dmr_map *m, struct dmr_log_pos *pos)
{
	struct dmr_replay r;

	KUNIT_EXPECT_EQ(test, dmr_fake_replay_rc(test, f, m, pos, &r), 0);
	dmr_map_load_states(m);
	return r;
}

/* The physical block holding @lba must contain generation @gen of it. */
static void dmr_expect_content(struct kunit *test, struct dmr_fake *f,
			       struct dmr_map *m, u32 lba, u32 gen)
{
	u8 want[64];
	u32 e = dmr_map_get(m, lba);
	u8 *b;

	KUNIT_ASSERT_NE(test, e, DMR_UNMAPPED);
	b = f->dev + (f->geo.data_offset + e - 1) * DMR_BLOCK_SIZE;
	dmr_fill(f->buf, lba, gen);
	memcpy(want, f->buf, sizeof(want));
	KUNIT_EXPECT_EQ(test, memcmp(b, want, sizeof(want)), 0);
}

static void dmr_expect_segments_match(struct kunit *test, struct dmr_map *m)
{
	u32 *count = kunit_kzalloc(test, m->nr_segs * sizeof(*count), GFP_KERNEL);
	u64 lba, total = 0, e;
	u32 s;

	KUNIT_ASSERT_NOT_NULL(test, count);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(m));
	for (lba = 0; lba < m->nr_logical; lba++) {
		e = dmr_map_get(m, lba);
		if (e) {
			count[dmr_pba_segment(m, e - 1)]++;
			total++;
		}
	}
	for (s = 0; s < m->nr_segs; s++)
		KUNIT_EXPECT_EQ(test, m->segs[s].valid, count[s]);
	KUNIT_EXPECT_EQ(test, total, m->mapped);
}

/* ------------------------------------------------------------------ */
/* map */

static void dmr_test_map_basic(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, false);
	struct dmr_map *m = &f->map;
	u64 first;

	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 5), DMR_UNMAPPED);
	memset(m->dirty, 0, m->nr_map_blocks);
	dmr_t_set(test, m, 5, 100);
	dmr_t_set(test, m, 6, 101);
	dmr_t_set(test, m, 7, 102);
	dmr_t_set(test, m, 2000, 3 * T_SEG_BLOCKS);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 5), 101U);
	KUNIT_EXPECT_EQ(test, m->mapped, 4ULL);
	KUNIT_EXPECT_EQ(test, m->segs[1].valid, 3U);	/* pba 100..102 */
	KUNIT_EXPECT_EQ(test, m->segs[3].valid, 1U);
	KUNIT_EXPECT_EQ(test, m->dirty[0], DMR_DIRTY_ALL);
	KUNIT_EXPECT_EQ(test, m->dirty[1], DMR_DIRTY_ALL);	/* lba 2000 */
	KUNIT_EXPECT_EQ(test, m->dirty[2], 0);

	/* overwrite moves the block: the old segment loses it */
	dmr_t_set(test, m, 6, 2 * T_SEG_BLOCKS + 1);
	KUNIT_EXPECT_EQ(test, m->segs[1].valid, 2U);
	KUNIT_EXPECT_EQ(test, m->segs[2].valid, 1U);
	KUNIT_EXPECT_EQ(test, m->mapped, 4ULL);

	/* runs: 5 alone (6 moved), unmapped 8..1999 in one run */
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 5, 10, &first), 1U);
	KUNIT_EXPECT_EQ(test, first, 101U);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 8, 3000, &first), 1992U);
	KUNIT_EXPECT_EQ(test, first, DMR_UNMAPPED);

	dmr_map_unmap(m, 5);
	dmr_map_unmap(m, 5);	/* idempotent */
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 5), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m->mapped, 3ULL);
	dmr_expect_segments_match(test, m);
}

/*
 * The map's pages: none until a block of one is mapped; lookups, runs,
 * recounts and checkpoint encoding treat a missing page as all unmapped;
 * a failed allocation leaves the map as it was.
 */
static void dmr_test_map_pages(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, false);
	struct dmr_map *m = &f->map;
	u64 last = m->nr_logical - 1, p;
	u32 *blk = f->buf, zero_crc;
	u64 first;
	int given;

	KUNIT_ASSERT_GE(test, m->nr_map_blocks, 4ULL);
	KUNIT_EXPECT_EQ(test, m->nr_pages, 0ULL);
	for (p = 0; p < m->nr_map_blocks; p++)
		KUNIT_EXPECT_NULL(test, m->pages[p]);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 5), DMR_UNMAPPED);
	KUNIT_EXPECT_TRUE(test, dmr_slot_map_zero(m, 0));

	/* a range across a page boundary: both pages, nothing else */
	KUNIT_ASSERT_EQ(test, dmr_map_reserve(m, 1000, 50), 0);
	KUNIT_EXPECT_EQ(test, m->nr_pages, 2ULL);
	KUNIT_EXPECT_NOT_NULL(test, m->pages[0]);
	KUNIT_EXPECT_NOT_NULL(test, m->pages[1]);
	KUNIT_EXPECT_NULL(test, m->pages[2]);
	given = f->pages.allocated;
	KUNIT_ASSERT_EQ(test, dmr_map_reserve(m, 1023, 2), 0);	/* there already */
	KUNIT_EXPECT_EQ(test, f->pages.allocated, given);
	KUNIT_EXPECT_EQ(test, dmr_map_reserve(m, 7, 0), 0);
	KUNIT_EXPECT_EQ(test, f->pages.allocated, given);

	/* a run over zeroed pages and a missing one is one unmapped run */
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 0, 3000, &first), 3000U);
	KUNIT_EXPECT_EQ(test, first, DMR_UNMAPPED);
	dmr_t_set(test, m, 2100, 3 * T_SEG_BLOCKS);		/* page 2 */
	KUNIT_EXPECT_EQ(test, m->nr_pages, 3ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 0, 3000, &first), 2100U);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 2100, 2, &first), 1U);
	KUNIT_EXPECT_EQ(test, first, 3 * T_SEG_BLOCKS + 1);

	/* the last entry, past missing pages: recount finds both blocks */
	dmr_t_set(test, m, last, 3 * T_SEG_BLOCKS + 1);
	KUNIT_EXPECT_NULL(test, m->pages[3]);
	m->mapped = 12345;
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), 0);
	KUNIT_EXPECT_EQ(test, m->mapped, 2ULL);
	KUNIT_EXPECT_EQ(test, m->segs[3].valid, 2U);
	dmr_expect_segments_match(test, m);

	/* a missing page is written to a checkpoint as zeroes */
	memset(blk, 0xa5, DMR_BLOCK_SIZE);
	memset((u8 *)blk + DMR_BLOCK_SIZE, 0, DMR_BLOCK_SIZE);
	zero_crc = crc32c(~0U, (u8 *)blk + DMR_BLOCK_SIZE, DMR_BLOCK_SIZE);
	KUNIT_EXPECT_TRUE(test, dmr_slot_map_zero(m, 3));
	KUNIT_EXPECT_FALSE(test, dmr_slot_map_zero(m, 2));
	KUNIT_EXPECT_EQ(test, dmr_slot_map_encode(m, 3, blk), zero_crc);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(blk, 0, DMR_BLOCK_SIZE));

	/* no memory: -ENOMEM, and the map is unchanged */
	f->pages.fail_after = f->pages.allocated;
	KUNIT_EXPECT_EQ(test, dmr_map_reserve(m, 3 * DMR_MAP_NARROW_ENTRIES, 1), -ENOMEM);
	KUNIT_EXPECT_NULL(test, m->pages[3]);
	KUNIT_EXPECT_EQ(test, m->nr_pages, 4ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 3 * DMR_MAP_NARROW_ENTRIES), DMR_UNMAPPED);
}

/*
 * Format 4's wide map: 8-byte entries, 512 a page, data-area blocks past
 * 2^32 (a 32 TiB data area of 1 GiB segments here: 32768 segments, a
 * small logical space so the pages stay few).  Every map operation keeps
 * the high words: set, get, runs across 2^32, moves, unmaps, recounts,
 * page counts, eviction and page-in, a unit applied in a segment past
 * 2^32, and a checkpoint's map block (little-endian 64-bit words) back.
 */
static void dmr_test_map_wide(struct kunit *test)
{
	const u32 sb = DMR_MAX_SEGMENT_BLOCKS, nr_segs = 32768;
	const u64 nr_logical = 4 * DMR_MAP_WIDE_ENTRIES + 7, high = 1ULL << 32;
	struct dmr_fake_pages fp = { .test = test, .fail_after = -1 };
	u64 nr_map = dmr_map_blocks(nr_logical, true), first, lba;
	u32 **pages = kunit_kzalloc(test, nr_map * sizeof(*pages), GFP_KERNEL);
	struct dmr_seg *segs = kunit_kzalloc(test, nr_segs * sizeof(*segs), GFP_KERNEL);
	u8 *dirty = kunit_kzalloc(test, nr_map, GFP_KERNEL);
	u32 *lists = kunit_kzalloc(test, DMR_MAP_LISTS(sb) * sizeof(*lists), GFP_KERNEL);
	struct dmr_map *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	struct dmr_unit *u = kunit_kzalloc(test, sizeof(*u), GFP_KERNEL);
	u32 *blk = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);
	u32 *copy = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);
	u32 valid0, valid1, i, *page, *counts;
	const __le64 *words = (const __le64 *)blk;
	bool absent;

	KUNIT_ASSERT_TRUE(test, pages && segs && dirty && lists && m && u && blk && copy);
	KUNIT_EXPECT_EQ(test, nr_map, 5ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_blocks(nr_logical, false), 3ULL);
	dmr_map_init_wide(m, true, pages, NULL, nr_logical, segs, nr_segs, sb, dirty, lists);
	m->page_alloc = dmr_fake_page_alloc;
	m->page_ctx = &fp;
	KUNIT_EXPECT_EQ(test, dmr_map_per_page(m), 512U);
	KUNIT_EXPECT_EQ(test, dmr_map_page_len(m, 4), 7U);

	/* ten blocks on 2^32 - 5 ... 2^32 + 4: two segments, one run */
	for (i = 0; i < 10; i++)
		dmr_t_set(test, m, 510 + i, high - 5 + i);
	KUNIT_EXPECT_EQ(test, m->nr_pages, 2ULL);	/* across pages 0 and 1 */
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 510), high - 5 + 1);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 519), high + 4 + 1);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 510, 20, &first), 10U);
	KUNIT_EXPECT_EQ(test, first, high - 4);
	KUNIT_EXPECT_EQ(test, dmr_pba_segment(m, high - 1), (u32)(high / sb) - 1);
	KUNIT_EXPECT_EQ(test, dmr_pba_offset(m, high + 4), 4U);
	KUNIT_EXPECT_EQ(test, dmr_seg_pba(m, high / sb, 4), high + 4);
	valid0 = m->segs[high / sb - 1].valid;
	valid1 = m->segs[high / sb].valid;
	KUNIT_EXPECT_EQ(test, valid0, 5U);
	KUNIT_EXPECT_EQ(test, valid1, 5U);

	/* a move to the last block of the data area, 2^33 - 1 */
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(m, 519, high + 4, 2 * high - 1));
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(m, 519, high + 4, 2 * high - 2));
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 519), 2 * high);
	KUNIT_EXPECT_EQ(test, m->segs[nr_segs - 1].valid, 1U);
	KUNIT_EXPECT_EQ(test, m->segs[high / sb].valid, 4U);
	dmr_map_unmap(m, 518);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 518), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m->mapped, 9ULL);
	dmr_expect_segments_match(test, m);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), 0);
	KUNIT_EXPECT_EQ(test, m->segs[high / sb].valid, 3U);
	KUNIT_EXPECT_EQ(test, m->segs[nr_segs - 1].valid, 1U);

	/* a unit applied at block 1 of the segment that starts at 2^32 */
	dmr_unit_reset(u, DMR_UNIT_WIDE);
	u->seq = 1;
	u->nr_blocks = 3;
	for (i = 0; i < 3; i++)
		u->lba[i] = 3 * DMR_MAP_WIDE_ENTRIES + i;
	KUNIT_ASSERT_EQ(test, dmr_unit_apply(m, u, high / sb, 0), 0);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, dmr_map_get(m, 3 * DMR_MAP_WIDE_ENTRIES + i),
				high + 1 + i + 1);

	/* the checkpoint's map block: 64-bit little-endian words, and back */
	dmr_t_set(test, m, 2 * DMR_MAP_WIDE_ENTRIES - 1, 2 * high - 2);	/* page 1's last */
	dmr_slot_map_encode(m, 1, blk);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(words[7]), 2 * high);	/* lba 519, moved */
	KUNIT_EXPECT_EQ(test, le64_to_cpu(words[0]), high - 5 + 2 + 1);	/* lba 512 */
	memset(copy, 0xff, DMR_BLOCK_SIZE);
	dmr_map_block_decode(m, 1, blk, copy);
	KUNIT_EXPECT_EQ(test, memcmp(copy, m->pages[1], DMR_BLOCK_SIZE), 0);
	KUNIT_EXPECT_EQ(test, ((u64 *)copy)[511], 2 * high - 1);	/* lba 1023 */

	/* out and back in as it left; an entry past the data area refused */
	memset(dirty, 0, nr_map);
	page = dmr_map_evict(m, 1, 0, &absent);
	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_EXPECT_FALSE(test, absent);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 515), DMR_MAP_MISS);
	((u64 *)copy)[3] = 2 * high + 1;
	KUNIT_EXPECT_EQ(test, dmr_map_page_in(m, 1, copy), -EINVAL);
	KUNIT_EXPECT_EQ(test, dmr_map_page_in(m, 1, page), 0);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 512), high - 2);

	/* a page at a time, the counts are the segments' (map_cache's load) */
	counts = kunit_kzalloc(test, nr_segs * sizeof(*counts), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, counts);
	lba = 0;
	for (first = 0; first < nr_map; first++)
		KUNIT_EXPECT_EQ(test, dmr_map_count_page(m, first, counts, &lba), 0);
	KUNIT_EXPECT_EQ(test, lba, m->mapped);
	for (i = 0; i < nr_segs; i++)
		KUNIT_EXPECT_EQ(test, counts[i], m->segs[i].valid);
}

/*
 * A page leaves memory only when the newest slot holds it; then every lookup in
 * it is a miss, nothing maps over it with a zeroed page, and it comes
 * back as it left (dmr_map_evict(), dmr_map_page_in()).
 */
static void dmr_test_map_evict(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, false);
	struct dmr_map *m = &f->map;
	u32 i, *page, *copy, limit = m->nr_segs * m->seg_blocks;
	u64 first;
	bool absent = true;
	int given;

	/* 1020...1024 on physical 100...104: a run across pages 0 and 1 */
	for (i = 0; i < 5; i++)
		dmr_t_set(test, m, 1020 + i, 100 + i);
	dmr_t_set(test, m, 5000, 200);				/* page 4 */
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 1020, 10, &first), 5U);
	KUNIT_ASSERT_EQ(test, m->nr_pages, 3ULL);

	/* dirty for the newest slot: it stays, whatever the other holds */
	m->dirty[1] = DMR_DIRTY_SLOT(1);
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 1, 1, &absent));
	m->dirty[1] = DMR_DIRTY_SLOT(0);
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 1, 0, &absent));
	m->dirty[1] = DMR_DIRTY_ALL;
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 1, 0, &absent));
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 1, 1, &absent));
	KUNIT_EXPECT_EQ(test, dmr_map_page_state(m, 1), DMR_PAGE_RESIDENT);
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 2, 0, &absent));	/* absent */

	/*
	 * Dirty only for the slot the next checkpoint writes: it may leave
	 * (that checkpoint copies it from the newest, dmr_write_map()); its
	 * dirty bit stays for that copy.
	 */
	m->dirty[1] = DMR_DIRTY_SLOT(1);
	copy = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, copy);
	memcpy(copy, m->pages[1], DMR_BLOCK_SIZE);
	page = dmr_map_evict(m, 1, 0, &absent);
	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_EXPECT_FALSE(test, absent);
	KUNIT_EXPECT_EQ(test, m->dirty[1], (u8)DMR_DIRTY_SLOT(1));
	m->dirty[1] = 0;
	KUNIT_EXPECT_EQ(test, dmr_map_page_state(m, 1), DMR_PAGE_EVICTED);
	KUNIT_EXPECT_EQ(test, m->nr_pages, 2ULL);
	KUNIT_EXPECT_EQ(test, m->nr_out, 1ULL);
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 1, 0, &absent));	/* out already */

	/* every block of it is a miss, mapped or not; a run stops before it */
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 1024), DMR_MAP_MISS);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 2047), DMR_MAP_MISS);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 1023), 104U);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 1020, 10, &first), 4U);
	KUNIT_EXPECT_EQ(test, first, 101U);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 1024, 10, &first), 1U);
	KUNIT_EXPECT_EQ(test, first, DMR_MAP_MISS);
	/*
	 * The largest entry there can be (the data area's last block of a
	 * 16 TiB device, set by hand): the miss after it is no next entry.
	 */
	m->pages[0][1023] = 0xfffffffeU;
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 1023, 2, &first), 1U);
	m->pages[0][1023] = 104;

	/* nothing replaces it with zeroes; nothing counts it as unmapped */
	given = f->pages.allocated;
	KUNIT_EXPECT_EQ(test, dmr_map_reserve(m, 1000, 100), 0);
	KUNIT_EXPECT_EQ(test, f->pages.allocated, given);
	KUNIT_EXPECT_EQ(test, dmr_map_page_state(m, 1), DMR_PAGE_EVICTED);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), -EINVAL);
	KUNIT_EXPECT_FALSE(test, dmr_map_consistent(m));
	KUNIT_EXPECT_FALSE(test, dmr_slot_map_zero(m, 1));

	/* a copy pointing outside the data area stays out */
	copy[7] = limit + 1;
	KUNIT_EXPECT_EQ(test, dmr_map_page_in(m, 1, copy), -EINVAL);
	KUNIT_EXPECT_EQ(test, dmr_map_page_state(m, 1), DMR_PAGE_EVICTED);
	copy[7] = DMR_UNMAPPED;
	KUNIT_EXPECT_EQ(test, dmr_map_page_in(m, 1, copy), 0);
	KUNIT_EXPECT_TRUE(test, m->pages[1] == copy);
	KUNIT_EXPECT_EQ(test, dmr_map_page_in(m, 1, copy), -ENOENT);
	KUNIT_EXPECT_EQ(test, m->nr_out, 0ULL);
	KUNIT_EXPECT_EQ(test, m->nr_pages, 3ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 1020, 10, &first), 5U);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), 0);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(m));

	/* a page with nothing mapped left leaves as absent */
	dmr_map_unmap(m, 5000);
	KUNIT_EXPECT_NULL(test, dmr_map_evict(m, 4, 1, &absent));	/* dirty */
	m->dirty[4] = 0;
	KUNIT_EXPECT_NOT_NULL(test, dmr_map_evict(m, 4, 1, &absent));
	KUNIT_EXPECT_TRUE(test, absent);
	KUNIT_EXPECT_EQ(test, dmr_map_page_state(m, 4), DMR_PAGE_ABSENT);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 5000), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m->nr_out, 0ULL);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(m));
	KUNIT_EXPECT_EQ(test, dmr_map_reserve(m, 5000, 1), 0);	/* a new page */
	KUNIT_EXPECT_EQ(test, f->pages.allocated, given + 1);
	KUNIT_EXPECT_EQ(test, f->pages.last, 4ULL);

	/* a checkpoint loaded over an out page replaces it or clears it */
	m->dirty[1] = 0;
	KUNIT_ASSERT_NOT_NULL(test, dmr_map_evict(m, 1, 0, &absent));
	dmr_map_load_zero(m, 1);
	KUNIT_EXPECT_EQ(test, dmr_map_page_state(m, 1), DMR_PAGE_ABSENT);
	KUNIT_EXPECT_EQ(test, m->nr_out, 0ULL);
	KUNIT_ASSERT_NOT_NULL(test, dmr_map_load_page(m, 1));
	m->pages[1][0] = 300;
	KUNIT_ASSERT_NOT_NULL(test, dmr_map_evict(m, 1, 0, &absent));
	page = dmr_map_load_page(m, 1);
	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_EXPECT_TRUE(test, m->pages[1] == page);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 1024), DMR_UNMAPPED);	/* to be filled */
	KUNIT_EXPECT_EQ(test, m->nr_out, 0ULL);
	KUNIT_EXPECT_EQ(test, f->pages.last, 1ULL);
}

static void dmr_test_map_runs_and_recount(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, false);
	struct dmr_map *m = &f->map;
	u64 first;
	u32 lba;

	for (lba = 0; lba < 100; lba++)
		dmr_t_set(test, m, lba, 500 + lba);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 0, 100, &first), 100U);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 10, 5, &first), 5U);
	KUNIT_EXPECT_EQ(test, first, 511U);
	dmr_t_set(test, m, 50, 7);
	KUNIT_EXPECT_EQ(test, dmr_map_run(m, 0, 100, &first), 50U);
	dmr_expect_segments_match(test, m);

	/* recount rebuilds the same accounting from the entries alone */
	for (lba = 0; lba < m->nr_segs; lba++)
		m->segs[lba].valid = 0xffffffff;
	m->mapped = 12345;
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), 0);
	dmr_expect_segments_match(test, m);
	KUNIT_EXPECT_EQ(test, m->mapped, 100ULL);

	/* an entry outside the data area is corruption */
	m->pages[0][3] = m->nr_segs * T_SEG_BLOCKS + 1;
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* codecs */

static void dmr_test_unit_codec(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_unit *u = f->unit, *out;
	u8 *block = f->buf;
	u8 *data = f->dev + 8 * DMR_BLOCK_SIZE;
	u32 i;

	out = kunit_kzalloc(test, sizeof(*out), GFP_KERNEL);
	if (!out)
		kunit_skip(test, "no memory");
	dmr_unit_reset(u, 0);
	u->seq = 77;
	u->blocknr = 1234;
	u->next_segment = 9;
	u->nr_discards = 1;
	u->discard[0][0] = 10;
	u->discard[0][1] = 5;
	for (i = 0; i < 3; i++) {
		u->lba[i] = 100 + 3 * i;
		dmr_fill(data + i * DMR_BLOCK_SIZE, u->lba[i], 1);
	}
	u->nr_blocks = 3;
	dmr_unit_encode(u, f->uuid, data, block);
	KUNIT_ASSERT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 10000, out),
			DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out->seq, 77ULL);
	KUNIT_EXPECT_EQ(test, out->next_segment, 9U);
	KUNIT_EXPECT_EQ(test, out->nr_blocks, 3U);
	KUNIT_EXPECT_EQ(test, out->lba[2], 106U);
	KUNIT_EXPECT_EQ(test, out->nr_discards, 1U);
	KUNIT_EXPECT_EQ(test, out->discard[0][1], 5U);
	KUNIT_EXPECT_EQ(test, out->data_csum, dmr_data_csum(data, 3));

	/* each corruption class */
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1235, f->uuid, 10000, out),
			DMR_LOG_BAD_LOCATION);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 100, out),
			DMR_LOG_BAD_COUNTS);
	f->uuid[0] ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 10000, out),
			DMR_LOG_BAD_UUID);
	f->uuid[0] ^= 1;
	block[500] ^= 0x20;
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 10000, out),
			DMR_LOG_BAD_CSUM);
	block[0] = 0;
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 10000, out),
			DMR_LOG_BAD_MAGIC);
	/* a checkpoint header never validates as a summary and vice versa */
	{
		struct dmr_ckpt c = { .seq = 1, .blocknr = 1234 };

		dmr_ckpt_encode(&c, f->uuid, block);
		KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 10000, out),
				DMR_LOG_BAD_MAGIC);
		memcpy(block, DMR_SUMMARY_MAGIC, DMR_MAGIC_LEN);
		KUNIT_EXPECT_EQ(test, dmr_unit_decode(block, 1234, f->uuid, 10000, out),
				DMR_LOG_BAD_CSUM);
	}
	/* room: one word per block, two per extent */
	dmr_unit_reset(u, 0);
	u->nr_blocks = DMR_SUMMARY_WORDS - 2;
	KUNIT_EXPECT_TRUE(test, dmr_unit_room(u, 2));
	KUNIT_EXPECT_FALSE(test, dmr_unit_room(u, 3));
}

/*
 * Format 5's large segments in a summary (DMR_UNIT_EXTENTS): a count,
 * then per segment its first logical block, the segment and its data
 * checksum, before the block entries and discards, narrow and wide; the
 * words they take in the room; every bad count refused.
 */
static void dmr_test_unit_codec_extents(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_unit *u = f->unit, *out;
	struct dmr_disk_summary *d = f->buf;
	u8 *data = f->dev + 8 * DMR_BLOCK_SIZE;
	unsigned int wide;
	u32 i, words;

	out = kunit_kzalloc(test, sizeof(*out), GFP_KERNEL);
	if (!out)
		kunit_skip(test, "no memory");
	for (wide = 0; wide < 2; wide++) {
		u64 big = wide ? (1ULL << 32) + 5 : 4000;

		dmr_unit_reset(u, wide ? DMR_UNIT_WIDE : 0);
		u->seq = 78;
		u->blocknr = 1234;
		u->next_segment = DMR_NO_SEGMENT;
		u->nr_discards = 1;
		u->discard[0][0] = 10;
		u->discard[0][1] = 5;
		u->nr_extents = 2;
		u->ext_lba[0] = 256;
		u->ext_seg[0] = 7;
		u->ext_csum[0] = 0xdeadbeef;
		u->ext_lba[1] = big;
		u->ext_seg[1] = 3;
		u->ext_csum[1] = 1;
		for (i = 0; i < 2; i++) {
			u->lba[i] = 100 + i;
			dmr_fill(data + i * DMR_BLOCK_SIZE, u->lba[i], 1);
		}
		u->nr_blocks = 2;
		dmr_unit_encode(u, f->uuid, data, d);
		KUNIT_EXPECT_EQ(test, le32_to_cpu(d->flags) & DMR_UNIT_EXTENTS, DMR_UNIT_EXTENTS);
		KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[0]), 2U);
		KUNIT_ASSERT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, 1ULL << 33, out),
				DMR_LOG_OK);
		KUNIT_EXPECT_EQ(test, out->nr_extents, 2U);
		KUNIT_EXPECT_EQ(test, out->ext_lba[0], 256ULL);
		KUNIT_EXPECT_EQ(test, out->ext_seg[0], 7U);
		KUNIT_EXPECT_EQ(test, out->ext_csum[0], 0xdeadbeefU);
		KUNIT_EXPECT_EQ(test, out->ext_lba[1], big);
		KUNIT_EXPECT_EQ(test, out->ext_seg[1], 3U);
		KUNIT_EXPECT_EQ(test, out->ext_csum[1], 1U);
		KUNIT_EXPECT_EQ(test, out->nr_blocks, 2U);
		KUNIT_EXPECT_EQ(test, out->lba[1], 101ULL);
		KUNIT_EXPECT_EQ(test, out->nr_discards, 1U);
		KUNIT_EXPECT_EQ(test, out->discard[0][0], 10ULL);
		KUNIT_EXPECT_EQ(test, out->data_csum, dmr_data_csum(data, 2));
		/* the count word, then 3 words a segment (4 wide) */
		words = 1 + 2 * (wide ? 4 : 3) + 2 * (wide ? 2 : 1) + 2 * (wide ? 2 : 1);
		KUNIT_EXPECT_TRUE(test, dmr_unit_room(u, DMR_SUMMARY_WORDS - words));
		KUNIT_EXPECT_FALSE(test, dmr_unit_room(u, DMR_SUMMARY_WORDS - words + 1));
		/* a logical block past the device */
		KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, wide ? big : 256, out),
				DMR_LOG_BAD_COUNTS);
	}
	/* a unit without large segments has no count word */
	dmr_unit_reset(u, 0);
	u->blocknr = 0;
	u->nr_blocks = 1;
	u->lba[0] = 100;
	dmr_unit_encode(u, f->uuid, data, d);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->flags), 0U);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[0]), 100U);
	/* counts: none with the flag, too many, in a relocation unit */
	d->flags = cpu_to_le32(DMR_UNIT_EXTENTS);
	d->words[0] = 0;
	dmr_unit_finish_csum(d, 0);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 0, f->uuid, 10000, out), DMR_LOG_BAD_COUNTS);
	d->words[0] = cpu_to_le32(DMR_UNIT_MAX_EXTENTS + 1);
	dmr_unit_finish_csum(d, 0);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 0, f->uuid, 10000, out), DMR_LOG_BAD_COUNTS);
	d->words[0] = cpu_to_le32(1);
	d->nr_blocks = 0;
	dmr_unit_finish_csum(d, 0);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 0, f->uuid, 10000, out), DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out->nr_extents, 1U);
	d->flags = cpu_to_le32(DMR_UNIT_EXTENTS | DMR_UNIT_RELOC);
	dmr_unit_finish_csum(d, 0);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 0, f->uuid, 10000, out), DMR_LOG_BAD_COUNTS);
	/* an unknown flag (format 4's decoder refused DMR_UNIT_EXTENTS so) */
	d->flags = cpu_to_le32(0x8);
	dmr_unit_finish_csum(d, 0);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 0, f->uuid, 10000, out), DMR_LOG_BAD_COUNTS);
}

/*
 * Format 4's wide units (DMR_UNIT_WIDE, issue 26): every number two
 * words, low first, so block numbers past 2^32 survive; at the 32-bit
 * boundary and at 2^40 (4 PiB of 4 KiB blocks).
 */
static const u64 dmr_wide_values[] = {
	0, (1ULL << 32) - 2, (1ULL << 32) - 1, 1ULL << 32, (1ULL << 32) + 1,
	(1ULL << 40) - 1,
};

/*
 * Format 6's data checksum, bit for bit: a block's digest is xxh64's low
 * 32 bits with DMR_BLOCK_DIGEST_SEED (the values from an implementation
 * written apart from both the kernel's lib/xxhash.c and the tools', which
 * gives xxh64's published 0xef46db3751d8e999 for no bytes and seed 0), so
 * the module and remapctl read each other's devices; the checksum of
 * blocks is the salted fold of their digests, in order, and depends on
 * their order; a chain over pieces gives what the blocks give at once.
 */
static void dmr_test_block_digest(struct kunit *test)
{
	u8 *b = kunit_kzalloc(test, 3 * DMR_BLOCK_SIZE, GFP_KERNEL);
	u32 i, c;

	if (!b)
		kunit_skip(test, "no memory");
	KUNIT_EXPECT_EQ(test, xxh64("", 0, 0), 0xef46db3751d8e999ULL);
	KUNIT_EXPECT_EQ(test, dmr_block_digest(b), 0xc1fb7177U);
	for (i = 0; i < DMR_BLOCK_SIZE; i++)
		b[i] = (u8)(i * 7 + (i >> 9));
	KUNIT_EXPECT_EQ(test, dmr_block_digest(b), 0x93466f44U);
	KUNIT_EXPECT_EQ(test, dmr_data_csum(b, 1),
			dmr_data_csum_fold(DMR_DATA_CSUM_SEED, 0x93466f44U) ^ DMR_DATA_CSUM_SALT);
	memset(b + DMR_BLOCK_SIZE, 0x5a, 2 * DMR_BLOCK_SIZE);
	b[2 * DMR_BLOCK_SIZE] = 1;
	c = dmr_data_csum_add(DMR_DATA_CSUM_SEED, b, 1);
	c = dmr_data_csum_add(c, b + DMR_BLOCK_SIZE, 2);
	KUNIT_EXPECT_EQ(test, dmr_data_csum_end(c), dmr_data_csum(b, 3));
	/* the same blocks in another order, and one bit changed */
	c = dmr_data_csum(b, 3);
	memcpy(b + 2 * DMR_BLOCK_SIZE, b + DMR_BLOCK_SIZE, DMR_BLOCK_SIZE);
	b[DMR_BLOCK_SIZE] = 1;
	KUNIT_EXPECT_NE(test, dmr_data_csum(b, 3), c);
	b[DMR_BLOCK_SIZE] = 0x5a;
	b[2 * DMR_BLOCK_SIZE] = 1;
	KUNIT_EXPECT_EQ(test, dmr_data_csum(b, 3), c);
	b[4095] ^= 0x10;
	KUNIT_EXPECT_NE(test, dmr_data_csum(b, 3), c);
}

/*
 * GC's checksums from the blocks' digests (dmr_data_csum_fold()): the
 * fold of a block's digest is what adding the block gives, from any
 * running value, and a block of digest 0 multiplies it as a CRC32C
 * register is by a block of zeros (DMR_CRC32C_X_BLOCK);
 * dmr_unit_data_check() answers against the data checksum and leaves the
 * digests; a unit built with them (crc_known) is encoded with the data
 * checksum the data give, which finish keeps without reading the data,
 * and decodes; a unit without them is checksummed from its data.
 */
static void dmr_test_csum_fold(struct kunit *test)
{
	static const u32 regs[] = { 0, 1, ~0U, 0x80000000U, 0x12345678U };
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_unit *u = f->unit, *out;
	struct dmr_disk_summary *d = f->buf;
	u8 *data = f->dev + 8 * DMR_BLOCK_SIZE, *zero = f->dev + 16 * DMR_BLOCK_SIZE;
	u32 i, crc[3], c;

	out = kunit_kzalloc(test, sizeof(*out), GFP_KERNEL);
	if (!out)
		kunit_skip(test, "no memory");
	memset(zero, 0, DMR_BLOCK_SIZE);
	for (i = 0; i < ARRAY_SIZE(regs); i++)	/* DMR_CRC32C_X_BLOCK */
		KUNIT_EXPECT_EQ(test, dmr_data_csum_fold(regs[i], 0),
				crc32c(regs[i], zero, DMR_BLOCK_SIZE));
	for (i = 0; i < 3 * DMR_BLOCK_SIZE; i++)
		data[i] = (u8)(i * 7 + (i >> 12) * 31 + (i >> 9));
	for (i = 0; i < ARRAY_SIZE(regs); i++)
		KUNIT_EXPECT_EQ(test, dmr_data_csum_fold(regs[i], dmr_block_digest(data)),
				dmr_data_csum_add(regs[i], data, 1));

	dmr_unit_reset(u, DMR_UNIT_RELOC);
	u->nr_blocks = 3;
	u->data_csum = dmr_data_csum(data, 3);
	memset(crc, 0, sizeof(crc));
	KUNIT_EXPECT_TRUE(test, dmr_unit_data_check(u, data, crc));
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, crc[i], dmr_block_digest(data + i * DMR_BLOCK_SIZE));
	data[2 * DMR_BLOCK_SIZE + 4095] ^= 1;
	KUNIT_EXPECT_FALSE(test, dmr_unit_data_check(u, data, crc));
	data[2 * DMR_BLOCK_SIZE + 4095] ^= 1;
	data[0] ^= 0x80;
	KUNIT_EXPECT_FALSE(test, dmr_unit_data_check(u, data, crc));
	data[0] ^= 0x80;

	/* a relocation unit built from the CRCs, as dmr_gc_move() does */
	dmr_unit_reset(u, DMR_UNIT_RELOC);
	KUNIT_EXPECT_FALSE(test, u->crc_known);
	u->seq = 5;
	u->blocknr = 40;
	u->next_segment = DMR_NO_SEGMENT;
	u->crc_known = true;
	for (i = 0; i < 3; i++) {
		u->lba[i] = 10 + i;
		u->src[i] = 20 + i;
		u->crc[i] = dmr_block_digest(data + i * DMR_BLOCK_SIZE);
	}
	u->nr_blocks = 3;
	dmr_unit_encode_body(u, f->uuid, d);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->csum), DMR_SUMMARY_DATA_SET);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->data_csum), dmr_data_csum(data, 3));
	/* finish keeps it: the data it is given are not read */
	KUNIT_EXPECT_EQ(test, dmr_unit_finish(d, zero), dmr_data_csum(data, 3));
	KUNIT_ASSERT_EQ(test, dmr_unit_decode(d, 40, f->uuid, 1000, out), DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out->data_csum, dmr_data_csum(data, 3));
	KUNIT_EXPECT_TRUE(test, dmr_unit_data_check(out, data, crc));
	/* a second finish (the marker gone) reads the data: the same one */
	c = le32_to_cpu(d->data_csum);
	dmr_unit_finish(d, data);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->data_csum), c);

	/* without them, finish reads the data */
	u->crc_known = false;
	dmr_unit_encode_body(u, f->uuid, d);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->csum), 0U);
	KUNIT_EXPECT_EQ(test, dmr_unit_finish(d, zero), dmr_data_csum(zero, 3));
}

static void dmr_test_unit_codec_wide(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_unit *u = f->unit, *out;
	struct dmr_disk_summary *d = f->buf;
	const u64 nr_logical = 1ULL << 40;
	const u32 n = ARRAY_SIZE(dmr_wide_values);
	u8 *data = f->dev + 8 * DMR_BLOCK_SIZE;
	u32 i;

	out = kunit_kzalloc(test, sizeof(*out), GFP_KERNEL);
	if (!out)
		kunit_skip(test, "no memory");
	memset(data, 0x5a, n * DMR_BLOCK_SIZE);

	/* a user unit: logical blocks and discard extents across 2^32 */
	dmr_unit_reset(u, DMR_UNIT_WIDE);
	u->seq = 5;
	u->blocknr = 1234;
	u->next_segment = DMR_NO_SEGMENT;
	for (i = 0; i < n; i++)
		u->lba[u->nr_blocks++] = dmr_wide_values[i];
	u->discard[0][0] = (1ULL << 32) - 3;	/* straddles 2^32 */
	u->discard[0][1] = 6;
	u->discard[1][0] = 7;			/* longer than 2^32 blocks */
	u->discard[1][1] = (1ULL << 32) + 5;
	u->discard[2][0] = nr_logical - 1;	/* the last block */
	u->discard[2][1] = 1;
	u->nr_discards = 3;
	dmr_unit_encode(u, f->uuid, data, d);
	/* the layout: low word, then high word */
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->flags), DMR_UNIT_WIDE);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[2 * 3]), 0U);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[2 * 3 + 1]), 1U);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[2 * 2]), 0xffffffffU);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[2 * 2 + 1]), 0U);
	KUNIT_ASSERT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, nr_logical, out),
			DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out->flags, DMR_UNIT_WIDE);
	KUNIT_ASSERT_EQ(test, out->nr_blocks, n);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, out->lba[i], dmr_wide_values[i]);
	KUNIT_ASSERT_EQ(test, out->nr_discards, 3U);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, out->discard[i][0], u->discard[i][0]);
		KUNIT_EXPECT_EQ(test, out->discard[i][1], u->discard[i][1]);
	}
	KUNIT_EXPECT_EQ(test, out->data_csum, dmr_data_csum(data, n));
	/* the bounds hold past 2^32: one block too far, and no wrap around */
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, (1ULL << 40) - 1, out),
			DMR_LOG_BAD_COUNTS);
	u->nr_blocks = 0;
	u->discard[2][0] = ~0ULL;		/* first + count wraps to 0 */
	u->discard[2][1] = 1;
	dmr_unit_encode(u, f->uuid, data, d);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, nr_logical, out),
			DMR_LOG_BAD_COUNTS);
	u->discard[2][0] = 1;
	u->discard[2][1] = ~0ULL;		/* a count past the device */
	dmr_unit_encode(u, f->uuid, data, d);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, nr_logical, out),
			DMR_LOG_BAD_COUNTS);

	/* a relocation unit: logical block and source, both wide */
	dmr_unit_reset(u, DMR_UNIT_RELOC | DMR_UNIT_WIDE);
	u->seq = 6;
	u->blocknr = 99;
	for (i = 0; i < n; i++) {
		u->lba[u->nr_blocks] = dmr_wide_values[n - 1 - i];
		u->src[u->nr_blocks++] = dmr_wide_values[i] + 3;
	}
	dmr_unit_encode(u, f->uuid, data, d);
	KUNIT_ASSERT_EQ(test, dmr_unit_decode(d, 99, f->uuid, nr_logical, out),
			DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out->flags, DMR_UNIT_RELOC | DMR_UNIT_WIDE);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_EQ(test, out->lba[i], dmr_wide_values[n - 1 - i]);
		KUNIT_EXPECT_EQ(test, out->src[i], dmr_wide_values[i] + 3);
	}

	/* a narrow unit keeps one word a number: 2^32 - 1 is its largest */
	dmr_unit_reset(u, 0);
	u->blocknr = 1234;
	u->lba[0] = (1ULL << 32) - 1;
	u->lba[1] = 8;
	u->nr_blocks = 2;
	dmr_unit_encode(u, f->uuid, data, d);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(d->words[1]), 8U);
	KUNIT_ASSERT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, nr_logical, out),
			DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out->lba[0], (1ULL << 32) - 1);
	/* an unknown flag is refused */
	d->flags = cpu_to_le32(DMR_UNIT_WIDE << 1);
	dmr_unit_finish_csum(d, dmr_data_csum(data, 2));
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, nr_logical, out),
			DMR_LOG_BAD_COUNTS);

	/* room: two words a number, so half the blocks and extents */
	dmr_unit_reset(u, DMR_UNIT_WIDE);
	KUNIT_EXPECT_EQ(test, dmr_unit_block_words(u), 2U);
	KUNIT_EXPECT_EQ(test, dmr_unit_discard_words(u), 4U);
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 0, 4096, 4096), DMR_SUMMARY_WORDS / 2);
	u->nr_blocks = DMR_SUMMARY_WORDS / 2 - 1;
	KUNIT_EXPECT_TRUE(test, dmr_unit_takes_block(true, u, 0, 4096));
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 0, 4096, 4096), 1U);
	u->nr_blocks++;
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(true, u, 0, 4096));
	dmr_unit_reset(u, DMR_UNIT_WIDE);
	u->nr_discards = DMR_SUMMARY_WORDS / 4 - 1;
	KUNIT_EXPECT_FALSE(test, dmr_discard_needs_seal(true, u));
	u->nr_discards++;
	KUNIT_EXPECT_TRUE(test, dmr_discard_needs_seal(true, u));
	dmr_unit_reset(u, DMR_UNIT_RELOC | DMR_UNIT_WIDE);
	KUNIT_EXPECT_EQ(test, dmr_unit_block_words(u), 4U);
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 0, 4096, 4096), DMR_SUMMARY_WORDS / 4);
	/* and a decoder refuses a wide unit that claims more than fit */
	dmr_unit_reset(u, DMR_UNIT_WIDE);
	u->blocknr = 1234;
	u->nr_blocks = DMR_SUMMARY_WORDS / 2;
	memset(u->lba, 0, sizeof(u->lba));
	dmr_unit_encode_body(u, f->uuid, d);
	d->nr_blocks = cpu_to_le32(DMR_SUMMARY_WORDS / 2 + 1);
	dmr_unit_finish_csum(d, 0);
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(d, 1234, f->uuid, nr_logical, out),
			DMR_LOG_BAD_COUNTS);
}

static void dmr_test_ckpt_codec(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_ckpt c = {
		.flags = DMR_CKPT_CLEAN, .seq = 5, .log_seq = 99, .blocknr = 2,
		.heads = { { 7, 33, 8 }, { 9, 0, DMR_NO_SEGMENT }, { 1, 250, 2 } },
		.crc_csum = 0xdeadbeef, .segtab_csum = 0x12345678,
		.mapped_blocks = 4242, .user_blocks = 1ULL << 40,
		.log_blocks = (1ULL << 40) + 3, .gc_moved = 77,
		.temp_threshold = 123456789,
		.age = { .nr = 2, .at = { 1000 + (1ULL << 32), 5000 + (2ULL << 32) },
			 .len = { 1ULL << 32, 1ULL << 32 } },
	}, out;
	struct dmr_disk_ckpt *d;
	u8 *block = f->buf;
	unsigned int h;

	dmr_ckpt_encode(&c, f->uuid, block);
	KUNIT_ASSERT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out), DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out.flags, c.flags);
	KUNIT_EXPECT_EQ(test, out.seq, c.seq);
	KUNIT_EXPECT_EQ(test, out.log_seq, c.log_seq);
	for (h = 0; h < DMR_NR_HEADS; h++) {
		KUNIT_EXPECT_EQ(test, out.heads[h].segment, c.heads[h].segment);
		KUNIT_EXPECT_EQ(test, out.heads[h].offset, c.heads[h].offset);
		KUNIT_EXPECT_EQ(test, out.heads[h].next_segment, c.heads[h].next_segment);
	}
	KUNIT_EXPECT_EQ(test, out.crc_csum, c.crc_csum);
	KUNIT_EXPECT_EQ(test, out.segtab_csum, c.segtab_csum);
	KUNIT_EXPECT_EQ(test, out.mapped_blocks, c.mapped_blocks);
	KUNIT_EXPECT_EQ(test, out.user_blocks, c.user_blocks);
	KUNIT_EXPECT_EQ(test, out.log_blocks, c.log_blocks);
	KUNIT_EXPECT_EQ(test, out.gc_moved, c.gc_moved);
	/* item 14: the temperature estimate and the age clock */
	KUNIT_EXPECT_EQ(test, out.temp_threshold, c.temp_threshold);
	KUNIT_EXPECT_EQ(test, out.age.nr, 2U);
	for (h = 0; h < 2; h++) {
		KUNIT_EXPECT_EQ(test, out.age.at[h], c.age.at[h]);
		KUNIT_EXPECT_EQ(test, out.age.len[h], c.age.len[h]);
	}
	/* a header of the first format 3 modules: zero there, no jump */
	d = (struct dmr_disk_ckpt *)block;
	d->temp_threshold = 0;
	d->nr_age_jumps = 0;
	memset(d->age_jumps, 0, sizeof(d->age_jumps));
	d->csum = cpu_to_le32(dmr_csum_block(d, DMR_CKPT_CSUM_SALT));
	KUNIT_ASSERT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out), DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, out.temp_threshold, 0ULL);
	KUNIT_EXPECT_EQ(test, out.age.nr, 0U);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&out.age, 10, 1ULL << 40), (1ULL << 40) - 10);
	/* clocks no writer makes: too many jumps, out of order, too long */
	d->nr_age_jumps = cpu_to_le32(DMR_AGE_JUMPS + 1);
	d->csum = cpu_to_le32(dmr_csum_block(d, DMR_CKPT_CSUM_SALT));
	KUNIT_EXPECT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out), DMR_LOG_BAD_COUNTS);
	d->nr_age_jumps = cpu_to_le32(2);
	d->age_jumps[0].at = cpu_to_le64(1ULL << 33);
	d->age_jumps[0].len = cpu_to_le64(1ULL << 32);
	d->age_jumps[1].at = cpu_to_le64(1ULL << 32);
	d->age_jumps[1].len = cpu_to_le64(1000);
	d->csum = cpu_to_le32(dmr_csum_block(d, DMR_CKPT_CSUM_SALT));
	KUNIT_EXPECT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out), DMR_LOG_BAD_COUNTS);
	d->nr_age_jumps = cpu_to_le32(1);
	d->age_jumps[0].len = cpu_to_le64(1ULL << 33);
	d->csum = cpu_to_le32(dmr_csum_block(d, DMR_CKPT_CSUM_SALT));
	KUNIT_EXPECT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out), DMR_LOG_BAD_COUNTS);
	dmr_ckpt_encode(&c, f->uuid, block);
	KUNIT_EXPECT_EQ(test, dmr_ckpt_decode(block, 3, f->uuid, &out),
			DMR_LOG_BAD_LOCATION);
	block[4000] ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out),
			DMR_LOG_BAD_CSUM);
	memset(block, 0, DMR_BLOCK_SIZE);
	KUNIT_EXPECT_EQ(test, dmr_ckpt_decode(block, 2, f->uuid, &out),
			DMR_LOG_BAD_MAGIC);
}

static void dmr_test_ckpt_layout(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_ckpt_layout l;

	dmr_ckpt_layout(&f->geo, &l);
	KUNIT_EXPECT_EQ(test, l.map_blocks * DMR_MAP_NARROW_ENTRIES >=
			f->geo.logical_blocks, true);
	KUNIT_EXPECT_EQ(test, l.crc_blocks * DMR_BLOCK_SIZE >= l.map_blocks * 4, true);
	KUNIT_EXPECT_EQ(test, l.segtab_blocks * DMR_BLOCK_SIZE >=
			f->geo.nr_segments * DMR_SEGTAB_ENTRY_SIZE, true);
	KUNIT_EXPECT_LE(test, l.segtab_offset + l.segtab_blocks,
			(u64)f->geo.ckpt_slot_blocks);
}

/* ------------------------------------------------------------------ */
/* replay */

static void dmr_test_replay_order_newest_wins(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 1, 2, 3 }, b[] = { 2, 9 }, c[] = { 3 };
	struct dmr_map m;
	struct dmr_replay r;

	dmr_fake_write_unit(f, &pos, a, 3, 1, 0, 0);
	dmr_fake_write_unit(f, &pos, b, 2, 2, 0, 0);
	dmr_fake_write_unit(f, &pos, c, 1, 3, 0, 0);
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 3ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_MAGIC);	/* end of written log */
	KUNIT_EXPECT_EQ(test, pos.seq, 3ULL);
	KUNIT_EXPECT_EQ(test, pos.offset, 1U + 3 + 1 + 2 + 1 + 1);
	dmr_expect_content(test, f, &m, 1, 1);
	dmr_expect_content(test, f, &m, 2, 2);
	dmr_expect_content(test, f, &m, 3, 3);
	dmr_expect_content(test, f, &m, 9, 2);
	KUNIT_EXPECT_EQ(test, m.mapped, 4ULL);
	dmr_expect_segments_match(test, &m);
	KUNIT_EXPECT_TRUE(test, m.segs[0].flags & DMR_SEG_USED);
	KUNIT_EXPECT_EQ(test, m.segs[0].seq, 1ULL);
}

static void dmr_test_replay_torn_unit_stops(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 1 }, b[] = { 1, 2 }, c[] = { 3 };
	struct dmr_map m;
	struct dmr_replay r;
	u32 where;

	dmr_fake_write_unit(f, &pos, a, 1, 1, 0, 0);
	where = dmr_fake_write_unit(f, &pos, b, 2, 2, 0, 0);
	dmr_fake_write_unit(f, &pos, c, 1, 3, 0, 0);
	/* tear the second unit's last data block */
	dmr_fake_block(f, where >> 16, (where & 0xffff) + 2)[100] ^= 1;
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 1ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_DATA);
	dmr_expect_content(test, f, &m, 1, 1);		/* not the torn gen 2 */
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 2), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 3), DMR_UNMAPPED);	/* after the tear */
	KUNIT_EXPECT_EQ(test, pos.seq, 1ULL);
	dmr_expect_segments_match(test, &m);
}

static void dmr_test_replay_bad_summary_stops(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 4 }, b[] = { 5 };
	struct dmr_map m;
	struct dmr_replay r;
	u32 where;

	dmr_fake_write_unit(f, &pos, a, 1, 1, 0, 0);
	where = dmr_fake_write_unit(f, &pos, b, 1, 1, 0, 0);
	dmr_fake_block(f, where >> 16, where & 0xffff)[40] ^= 0x80;
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 1ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_CSUM);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 5), DMR_UNMAPPED);
}

static void dmr_test_replay_sequence_gap_stops(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 4 }, b[] = { 5 };
	struct dmr_map m;
	struct dmr_replay r;

	dmr_fake_write_unit(f, &pos, a, 1, 1, 0, 0);
	pos.seq += 5;	/* a unit from a later epoch at the next position */
	dmr_fake_write_unit(f, &pos, b, 1, 1, 0, 0);
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 1ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_SEQ);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 5), DMR_UNMAPPED);
}

static void dmr_test_replay_discards(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 10, 11, 12, 13 }, b[] = { 12 };
	struct dmr_map m;
	struct dmr_replay r;

	dmr_fake_write_unit(f, &pos, a, 4, 1, 0, 0);
	/* discard 10..13, then (same unit, later in time) rewrite 12 */
	dmr_fake_write_unit(f, &pos, b, 1, 2, 10, 4);
	/* a discard-only unit of 13 again and of never-written blocks */
	dmr_fake_write_unit(f, &pos, NULL, 0, 0, 13, 100);
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 3ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 10), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 11), DMR_UNMAPPED);
	dmr_expect_content(test, f, &m, 12, 2);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 13), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m.mapped, 1ULL);
	dmr_expect_segments_match(test, &m);
}

/*
 * Write a large segment the way the module will: logical blocks
 * [@lba, @lba + a segment) of generation @gen from block 0 of @seg, no
 * summary.  Return: its data checksum.
 */
static u32 dmr_fake_write_large(struct kunit *test, struct dmr_fake *f, u32 seg,
				u32 lba, u32 gen)
{
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, dmr_fake_block(f, seg, f->geo.segment_blocks - 1));
	for (i = 0; i < f->geo.segment_blocks; i++)
		dmr_fill(dmr_fake_block(f, seg, i), lba + i, gen);
	return dmr_data_csum(dmr_fake_block(f, seg, 0), f->geo.segment_blocks);
}

/* A unit recording large segment @seg of @lba (and its checksum), no data. */
static void dmr_fake_write_extent_unit(struct dmr_fake *f, struct dmr_log_pos *pos,
				       u32 seg, u32 lba, u32 csum, const u32 *lbas,
				       u32 nr, u32 gen)
{
	struct dmr_unit *u = f->unit;
	u32 s = pos->segment, off = pos->offset, i;

	if (pos->next_segment == DMR_NO_SEGMENT)
		pos->next_segment = s + 1;
	dmr_unit_reset(u, 0);
	u->seq = pos->seq + 1;
	u->blocknr = f->geo.data_offset + (u64)s * f->geo.segment_blocks + off;
	u->next_segment = pos->next_segment;
	u->nr_extents = 1;
	u->ext_lba[0] = lba;
	u->ext_seg[0] = seg;
	u->ext_csum[0] = csum;
	for (i = 0; i < nr; i++) {
		u->lba[i] = lbas[i];
		dmr_fill(dmr_fake_block(f, s, off + 1 + i), lbas[i], gen);
	}
	u->nr_blocks = nr;
	dmr_unit_encode(u, f->uuid, dmr_fake_block(f, s, off + 1), dmr_fake_block(f, s, off));
	pos->seq = u->seq;
	dmr_log_advance(pos, 1 + nr, f->geo.segment_blocks);
}

/*
 * Replay of a large segment (format 5): its logical blocks map to it in
 * order after what came before in the log, the unit's own data blocks
 * after it; the segment is used, large, with its base and checksum, and
 * its valid count follows; torn (its data do not match the record), the
 * unit is not applied and replay stops there; a record naming the unit's
 * own segment, a head's or one past the device is refused (-EINVAL).
 */
static void dmr_test_replay_large_segment(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 1, 2, 3, 70 }, b[] = { 2 };
	const u32 big = 3, n = T_SEG_BLOCKS;
	struct dmr_replay r;
	struct dmr_map m;
	u32 csum, i;

	dmr_fake_write_unit(f, &pos, a, 4, 1, 0, 0);
	csum = dmr_fake_write_large(test, f, big, 0, 2);
	dmr_fake_write_extent_unit(f, &pos, big, 0, csum, b, 1, 3);
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_MAGIC);
	for (i = 0; i < n; i++) {
		if (i == 2)
			continue;
		KUNIT_EXPECT_EQ(test, dmr_map_get(&m, i), dmr_seg_pba(&m, big, i) + 1);
		dmr_expect_content(test, f, &m, i, 2);
	}
	dmr_expect_content(test, f, &m, 2, 3);		/* the unit's block, after */
	dmr_expect_content(test, f, &m, 70, 1);		/* outside the segment */
	KUNIT_EXPECT_EQ(test, m.mapped, (u64)n + 1);
	KUNIT_EXPECT_EQ(test, m.segs[big].valid, n - 1);
	KUNIT_EXPECT_EQ(test, m.segs[0].valid, 2U);
	KUNIT_EXPECT_EQ(test, m.segs[big].flags & (DMR_SEG_USED | DMR_SEG_LARGE),
			DMR_SEG_USED | DMR_SEG_LARGE);
	KUNIT_EXPECT_EQ(test, m.segs[big].base, 1ULL);
	KUNIT_EXPECT_EQ(test, m.segs[big].csum, csum);
	KUNIT_EXPECT_EQ(test, m.segs[big].seq, 2ULL);
	dmr_expect_segments_match(test, &m);

	/* torn: one bit of the large segment */
	dmr_fake_block(f, big, n - 1)[7] ^= 1;
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 1ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_DATA);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 0), DMR_UNMAPPED);
	dmr_expect_content(test, f, &m, 2, 1);
	KUNIT_EXPECT_FALSE(test, m.segs[big].flags & DMR_SEG_USED);
	dmr_expect_segments_match(test, &m);
	dmr_fake_block(f, big, n - 1)[7] ^= 1;

	/* a second record of the same segment, for other blocks: not empty */
	memset(&pos, 0, sizeof(pos));
	pos.next_segment = DMR_NO_SEGMENT;
	dmr_fake_write_unit(f, &pos, a, 4, 1, 0, 0);
	dmr_fake_write_extent_unit(f, &pos, big, 0, csum, b, 1, 3);
	dmr_fake_write_extent_unit(f, &pos, big, 128, csum, NULL, 0, 0);
	KUNIT_EXPECT_EQ(test, dmr_fake_replay_rc(test, f, &m, &pos, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);

	/* records that cannot be: the unit's own segment, the next, past the end */
	for (i = 0; i < 3; i++) {
		struct dmr_fake *g = dmr_fake_new(test);
		struct dmr_log_pos p = { .next_segment = DMR_NO_SEGMENT };
		u32 seg = i == 0 ? 0 : i == 1 ? 1 : g->geo.nr_segments;

		dmr_fake_write_extent_unit(g, &p, seg, 0, 0, NULL, 0, 0);
		KUNIT_EXPECT_EQ(test, dmr_fake_replay_rc(test, g, &m, &p, &r), -EINVAL);
		KUNIT_EXPECT_EQ(test, m.mapped, 0ULL);
	}
}

/*
 * A segment the checkpoint has as a large one, emptied and reused by a
 * head after it: replay's first unit there starts a head's use, and the
 * segment is no large one any more (its base and checksum gone), or GC
 * would look for its blocks where the old base puts them.
 */
static void dmr_test_replay_reuse_of_a_large_segment(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	u32 lbas[T_SEG_BLOCKS], i;
	struct dmr_replay r;
	struct dmr_map m;

	for (i = 0; i < T_SEG_BLOCKS; i++)
		lbas[i] = 500 + i;
	dmr_fake_write_unit(f, &pos, lbas, T_SEG_BLOCKS - 1, 1, 0, 0);	/* fills segment 0 */
	dmr_fake_write_unit(f, &pos, lbas, 3, 2, 0, 0);		/* segment 1 */
	KUNIT_ASSERT_EQ(test, pos.segment, 1U);
	r = dmr_fake_replay_params(f);
	dmr_fake_map_init(test, f, &m);
	m.segs[1].flags = DMR_SEG_USED | DMR_SEG_LARGE;
	m.segs[1].seq = 0;
	m.segs[1].base = 1001;
	m.segs[1].csum = 77;
	memset(&pos, 0, sizeof(pos));
	pos.next_segment = DMR_NO_SEGMENT;
	m.track = false;
	KUNIT_ASSERT_EQ(test, dmr_replay_log(&r, &m, &pos), 0);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_FALSE(test, m.segs[1].flags & DMR_SEG_LARGE);
	KUNIT_EXPECT_EQ(test, m.segs[1].base, 0ULL);
	KUNIT_EXPECT_EQ(test, m.segs[1].csum, 0U);
	KUNIT_EXPECT_EQ(test, m.segs[1].valid, 3U);
	dmr_expect_content(test, f, &m, 500, 2);
}

static void dmr_test_replay_crosses_segments(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	u32 lbas[T_SEG_BLOCKS], i, n = 0;
	struct dmr_map m;
	struct dmr_replay r;

	for (i = 0; i < T_SEG_BLOCKS; i++)
		lbas[i] = 100 + i;
	/* 3 full segments (1 summary + 63 data each) and a short unit */
	for (i = 0; i < 3; i++)
		dmr_fake_write_unit(f, &pos, lbas, T_SEG_BLOCKS - 1, i + 1, 0, 0);
	KUNIT_EXPECT_EQ(test, pos.segment, 3U);
	KUNIT_EXPECT_EQ(test, pos.offset, 0U);
	dmr_fake_write_unit(f, &pos, lbas, 5, 9, 0, 0);
	/* a unit that leaves one block free: the next goes to a new segment */
	dmr_fake_write_unit(f, &pos, lbas + 5, T_SEG_BLOCKS - 6 - 1 - 1, 9, 0, 0);
	KUNIT_EXPECT_EQ(test, pos.segment, 4U);
	r = dmr_fake_replay(test, f, &m, &pos);
	n = r.units;
	KUNIT_EXPECT_EQ(test, n, 5U);
	KUNIT_EXPECT_EQ(test, pos.segment, 4U);
	KUNIT_EXPECT_EQ(test, pos.offset, 0U);
	dmr_expect_content(test, f, &m, 100, 9);
	dmr_expect_content(test, f, &m, 104, 9);
	dmr_expect_content(test, f, &m, 105, 9);
	dmr_expect_content(test, f, &m, 160, 9);
	dmr_expect_content(test, f, &m, 161, 3);
	KUNIT_EXPECT_EQ(test, m.segs[0].valid, 0U);	/* all overwritten */
	KUNIT_EXPECT_EQ(test, m.segs[2].valid, 2U);	/* 161, 162 */
	KUNIT_EXPECT_EQ(test, m.segs[3].valid, 61U);
	dmr_expect_segments_match(test, &m);
}

static void dmr_test_replay_from_checkpoint_position(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT }, ck;
	static const u32 a[] = { 1, 2 }, b[] = { 2 }, c[] = { 3 };
	struct dmr_replay r = dmr_fake_replay_params(f);
	struct dmr_map *m = &f->map;

	dmr_fake_write_unit(f, &pos, a, 2, 1, 0, 0);
	/* "checkpoint": the map as of unit 1 and the position after it */
	KUNIT_ASSERT_EQ(test, dmr_replay_log(&r, m, &(struct dmr_log_pos){
		.next_segment = DMR_NO_SEGMENT }), 0);
	ck = pos;
	dmr_fake_write_unit(f, &pos, b, 1, 2, 0, 0);
	dmr_fake_write_unit(f, &pos, c, 1, 2, 0, 0);
	KUNIT_EXPECT_EQ(test, dmr_replay_log(&r, m, &ck), 0);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, ck.seq, 3ULL);
	dmr_expect_content(test, f, m, 1, 1);
	dmr_expect_content(test, f, m, 2, 2);
	dmr_expect_content(test, f, m, 3, 2);
	dmr_expect_segments_match(test, m);
}

/*
 * Replay maps blocks into pages it allocates; without memory it stops
 * with -ENOMEM before applying the unit, and the load fails.
 */
static void dmr_test_replay_no_memory(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT }, ck;
	static const u32 a[] = { 1, 2 }, b[] = { 700 };
	struct dmr_replay r;
	struct dmr_map m;

	KUNIT_ASSERT_EQ(test, f->map.nr_map_blocks, 1ULL);
	dmr_fake_write_unit(f, &pos, a, 2, 1, 0, 0);
	dmr_fake_write_unit(f, &pos, b, 1, 1, 0, 0);
	r = dmr_fake_replay_params(f);
	dmr_fake_map_init(test, f, &m);
	f->pages.fail_after = f->pages.allocated;	/* no page to give */
	m.track = false;
	ck = (struct dmr_log_pos){ .next_segment = DMR_NO_SEGMENT };
	KUNIT_EXPECT_EQ(test, dmr_replay_log(&r, &m, &ck), -ENOMEM);
	KUNIT_EXPECT_EQ(test, r.units, 0ULL);
	KUNIT_EXPECT_EQ(test, m.mapped, 0ULL);
	KUNIT_EXPECT_EQ(test, m.nr_pages, 0ULL);
	KUNIT_EXPECT_EQ(test, m.nr_free, m.nr_segs);	/* the unit not applied */

	/*
	 * The call before a unit's blocks change (dmr_replay's @need, the
	 * map cache's read of pages out), once per data block: its error
	 * ends the replay, the unit it was called for not applied.
	 */
	{
		struct dmr_fake_hooks h = { .fail_lba = 700, .fail_page = ~0ULL };

		f->pages.fail_after = -1;
		f->hooks = &h;
		r = dmr_fake_replay_params(f);
		r.need = dmr_fake_need;
		dmr_fake_map_init(test, f, &m);
		m.track = false;
		ck = (struct dmr_log_pos){ .next_segment = DMR_NO_SEGMENT };
		KUNIT_EXPECT_EQ(test, dmr_replay_log(&r, &m, &ck), -EIO);
		KUNIT_EXPECT_EQ(test, h.units, 3U);	/* 1, 2, then 700 */
		KUNIT_EXPECT_EQ(test, r.units, 1ULL);
		KUNIT_EXPECT_NE(test, dmr_map_get(&m, 1), DMR_UNMAPPED);
		KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 700), DMR_UNMAPPED);
		KUNIT_EXPECT_EQ(test, m.mapped, 2ULL);
	}

	/* with memory: both units, in the one page */
	f->pages.fail_after = -1;
	r = dmr_fake_replay(test, f, &m, &ck);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, m.nr_pages, 1ULL);
	dmr_expect_content(test, f, &m, 1, 1);
	dmr_expect_content(test, f, &m, 700, 1);
	dmr_expect_segments_match(test, &m);
}

/* What dmr_replay's @need and @step were called with (dmr_test_replay_steps()). */
struct dmr_step_rec {
	struct dmr_log_pos pos;
	u64 seq;
	u64 *entries;		/* the map's entry of every logical block */
	u64 mapped;
};

struct dmr_step_hooks {
	struct kunit *test;
	struct dmr_map *m;
	struct dmr_step_rec rec[8];
	unsigned int nr;
	u64 need_lba[16], need_n[16];
	unsigned int nr_need;
	unsigned int fail_at;	/* the step that fails (-EIO), counted from 1; 0: none */
};

static int dmr_step_need(void *ctx, u64 lba, u64 n)
{
	struct dmr_step_hooks *sh = ((struct dmr_fake *)ctx)->steps;

	if (sh->nr_need < ARRAY_SIZE(sh->need_lba)) {
		sh->need_lba[sh->nr_need] = lba;
		sh->need_n[sh->nr_need] = n;
	}
	sh->nr_need++;
	return 0;
}

static int dmr_step_step(void *ctx, const struct dmr_log_pos *pos, unsigned int nr,
			 u64 seq)
{
	struct dmr_fake *f = ctx;
	struct dmr_step_hooks *sh = f->steps;
	struct dmr_step_rec *rec;
	u64 lba;

	KUNIT_EXPECT_EQ(sh->test, nr, 1U);
	if (++sh->nr == sh->fail_at)
		return -EIO;
	if (sh->nr > ARRAY_SIZE(sh->rec))
		return 0;
	rec = &sh->rec[sh->nr - 1];
	rec->pos = pos[0];
	rec->seq = seq;
	rec->mapped = sh->m->mapped;
	rec->entries = kunit_kzalloc(sh->test, f->geo.logical_blocks * sizeof(u64), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(sh->test, rec->entries);
	for (lba = 0; lba < f->geo.logical_blocks; lba++)
		rec->entries[lba] = dmr_map_get(sh->m, lba);
	return 0;
}

/*
 * Item 10 of issue 40: replay with the map cache's calls.  A discard
 * extent is asked for (@need) and unmapped in pieces of @discard_step
 * blocks, with a step (where the module may write a checkpoint) after
 * each piece, at the position and sequence before its unit; its data
 * blocks are asked for after every piece; a step follows every unit, at
 * the position after it.  The property a checkpoint there relies on: the
 * map as it was at any step, replayed from that step's position and
 * sequence, ends in the map the whole replay gives (so a load from a
 * checkpoint written mid-discard loads the same device).  A step's error
 * ends the replay with it.
 */
static void dmr_test_replay_steps(struct kunit *test)
{
	static const unsigned int want_seq[] = { 1, 1, 1, 1, 1, 2, 3 };
	static const u32 a[] = { 1, 2, 3, 60, 61, 150 }, b[] = { 2, 120 }, c[] = { 130, 3 };
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_step_hooks *sh = kunit_kzalloc(test, sizeof(*sh), GFP_KERNEL);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT }, ck, p2;
	struct dmr_replay r, r2;
	struct dmr_map m, m2;
	unsigned int i, wrong;
	u64 lba, s2;

	KUNIT_ASSERT_NOT_NULL(test, sh);
	KUNIT_ASSERT_GT(test, f->geo.logical_blocks, 200ULL);
	dmr_fake_write_unit(f, &pos, a, ARRAY_SIZE(a), 1, 0, 0);
	dmr_fake_write_unit(f, &pos, b, ARRAY_SIZE(b), 2, 0, 200);	/* [0, 200) first */
	dmr_fake_write_unit(f, &pos, c, ARRAY_SIZE(c), 3, 0, 0);
	f->steps = sh;
	sh->test = test;
	r = dmr_fake_replay_params(f);
	r.need = dmr_step_need;
	r.step = dmr_step_step;
	r.discard_step = 64;
	dmr_fake_map_init(test, f, &m);
	m.track = false;
	sh->m = &m;
	ck = (struct dmr_log_pos){ .next_segment = DMR_NO_SEGMENT };
	KUNIT_ASSERT_EQ(test, dmr_replay_log(&r, &m, &ck), 0);
	KUNIT_EXPECT_EQ(test, r.units, 3ULL);

	/* unit 1's blocks; unit 2's discard, 64 at a time, then its blocks; unit 3's */
	KUNIT_ASSERT_EQ(test, sh->nr_need, 6U + 4 + 2 + 2);
	for (i = 0; i < 4; i++) {
		KUNIT_EXPECT_EQ(test, sh->need_lba[6 + i], 64ULL * i);
		KUNIT_EXPECT_EQ(test, sh->need_n[6 + i], i < 3 ? 64ULL : 8ULL);
	}
	KUNIT_EXPECT_EQ(test, sh->need_lba[10], 2ULL);
	KUNIT_EXPECT_EQ(test, sh->need_lba[11], 120ULL);

	KUNIT_ASSERT_EQ(test, sh->nr, (unsigned int)ARRAY_SIZE(want_seq));
	for (i = 0; i < sh->nr; i++)
		KUNIT_EXPECT_EQ(test, sh->rec[i].seq, (u64)want_seq[i]);
	/* the pieces' steps are at unit 2, where the step after unit 1 was */
	for (i = 1; i < 5; i++) {
		KUNIT_EXPECT_EQ(test, sh->rec[i].pos.segment, sh->rec[0].pos.segment);
		KUNIT_EXPECT_EQ(test, sh->rec[i].pos.offset, sh->rec[0].pos.offset);
	}
	KUNIT_EXPECT_EQ(test, sh->rec[5].pos.offset, sh->rec[0].pos.offset + 3);
	/* after two pieces: [0, 128) unmapped, 150 still mapped, nothing of unit 2 set */
	KUNIT_EXPECT_EQ(test, sh->rec[2].entries[60], (u64)DMR_UNMAPPED);
	KUNIT_EXPECT_NE(test, sh->rec[2].entries[150], (u64)DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, sh->rec[2].entries[120], (u64)DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, sh->rec[2].mapped, 1ULL);

	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 1), (u64)DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 150), (u64)DMR_UNMAPPED);
	dmr_expect_content(test, f, &m, 2, 2);
	dmr_expect_content(test, f, &m, 120, 2);
	dmr_expect_content(test, f, &m, 130, 3);
	dmr_expect_content(test, f, &m, 3, 3);
	KUNIT_EXPECT_EQ(test, m.mapped, 4ULL);

	/* from every step, the map then and the rest of the log: the same map */
	for (i = 0; i < sh->nr; i++) {
		dmr_fake_map_init(test, f, &m2);
		m2.track = false;
		for (lba = 0; lba < f->geo.logical_blocks; lba++)
			if (sh->rec[i].entries[lba] != DMR_UNMAPPED)
				dmr_t_set(test, &m2, lba, sh->rec[i].entries[lba] - 1);
		KUNIT_EXPECT_EQ(test, m2.mapped, sh->rec[i].mapped);
		r2 = dmr_fake_replay_params(f);
		p2 = sh->rec[i].pos;
		s2 = sh->rec[i].seq;
		KUNIT_EXPECT_EQ(test, dmr_replay_heads(&r2, &m2, &p2, 1, &s2), 0);
		KUNIT_EXPECT_EQ(test, s2, 3ULL);
		for (wrong = 0, lba = 0; lba < f->geo.logical_blocks; lba++)
			wrong += dmr_map_get(&m2, lba) != dmr_map_get(&m, lba);
		KUNIT_EXPECT_EQ_MSG(test, wrong, 0U, "from step %u", i + 1);
		KUNIT_EXPECT_EQ(test, m2.mapped, m.mapped);
	}

	/* a step that fails (the third: unit 2's second piece) ends the replay */
	memset(sh, 0, sizeof(*sh));
	sh->test = test;
	sh->fail_at = 3;
	dmr_fake_map_init(test, f, &m);
	m.track = false;
	sh->m = &m;
	ck = (struct dmr_log_pos){ .next_segment = DMR_NO_SEGMENT };
	KUNIT_EXPECT_EQ(test, dmr_replay_log(&r, &m, &ck), -EIO);
	KUNIT_EXPECT_EQ(test, r.units, 1ULL);
	KUNIT_EXPECT_EQ(test, sh->nr_need, 6U + 2);
}

static void dmr_test_replay_read_error_and_end(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	struct dmr_log_pos pos = { .next_segment = DMR_NO_SEGMENT };
	static const u32 a[] = { 1 };
	struct dmr_map m;
	struct dmr_replay r;

	dmr_fake_write_unit(f, &pos, a, 1, 1, 0, 0);
	f->fail_reads_from = f->geo.data_offset + 1;	/* data block unreadable */
	r = dmr_fake_replay(test, f, &m, &pos);
	KUNIT_EXPECT_EQ(test, r.units, 0ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_READ_ERROR);
	f->fail_reads_from = 0;

	pos = (struct dmr_log_pos){ .segment = DMR_NO_SEGMENT };
	r = dmr_fake_replay_params(f);
	KUNIT_EXPECT_EQ(test, dmr_replay_log(&r, &f->map, &pos), 0);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_END);
}

/* Write slot @slot's tables for map @m to the fake device; fills @c's sums. */
static void dmr_fake_write_slot(struct dmr_fake *f, unsigned int slot,
				const struct dmr_map *m, struct dmr_ckpt *c)
{
	u64 base = f->geo.ckpt_offset + (u64)slot * f->geo.ckpt_slot_blocks, p;
	struct dmr_ckpt_layout l;
	struct dmr_disk_segment *d;
	__le32 *crcs, *blk;
	u32 i;

	dmr_ckpt_layout(&f->geo, &l);
	crcs = (__le32 *)(f->dev + (base + l.crc_offset) * DMR_BLOCK_SIZE);
	memset(crcs, 0, l.crc_blocks * DMR_BLOCK_SIZE);
	for (p = 0; p < m->nr_map_blocks; p++) {
		blk = (__le32 *)(f->dev + (base + l.map_offset + p) * DMR_BLOCK_SIZE);
		memset(blk, 0, DMR_BLOCK_SIZE);
		for (i = 0; i < DMR_MAP_NARROW_ENTRIES &&
		     p * DMR_MAP_NARROW_ENTRIES + i < m->nr_logical; i++)
			blk[i] = cpu_to_le32(dmr_map_get(m, p * DMR_MAP_NARROW_ENTRIES + i));
		crcs[p] = cpu_to_le32(crc32c(~0U, blk, DMR_BLOCK_SIZE));
	}
	c->crc_csum = crc32c(~0U, crcs, l.crc_blocks * DMR_BLOCK_SIZE);
	d = (struct dmr_disk_segment *)(f->dev + (base + l.segtab_offset) * DMR_BLOCK_SIZE);
	memset(d, 0, l.segtab_blocks * DMR_BLOCK_SIZE);
	for (i = 0; i < m->nr_segs; i++) {
		d[i].seq = cpu_to_le64(m->segs[i].seq);
		d[i].valid = cpu_to_le32(m->segs[i].valid);
		u64 delta = m->segs[i].seq - m->segs[i].birth;

		/* the birth: below 2^11, its float is the value itself; a
		 * birth past the seq is written as none (0)
		 */
		if (m->segs[i].birth > m->segs[i].seq)
			delta = 0;
		d[i].flags = cpu_to_le32((m->segs[i].flags & (DMR_SEG_USED | DMR_SEG_LARGE)) |
					  (m->segs[i].flags & DMR_SEG_HOT ? DMR_DISK_SEG_HOT : 0) |
					  (delta < 2048 ? (u32)delta << 16 : 0xffff0000U));
		/* format 5: a large segment's base and data checksum */
		if (m->segs[i].flags & DMR_SEG_LARGE) {
			d[i].base = cpu_to_le64(m->segs[i].base);
			d[i].data_csum = cpu_to_le32(m->segs[i].csum);
		}
	}
	c->segtab_csum = crc32c(~0U, d, l.segtab_blocks * DMR_BLOCK_SIZE);
}

/*
 * A checkpoint slot's tables load into the map (dmr_slot_load(), shared
 * by the loader and remapctl check), and each table that does not match
 * its checksum is named.
 */
/*
 * A slot's all-zero map blocks give the loaded map no page; the others
 * one each, and a recount finds a block at the start of a page that
 * follows a missing one.
 */
static void dmr_test_slot_load_pages(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, true);
	u32 *map_crc = kunit_kzalloc(test, f->map.nr_map_blocks * sizeof(u32), GFP_KERNEL);
	struct dmr_slot_io io = { .read = dmr_fake_read, .ctx = f, .bounce = f->buf,
				  .bounce_blocks = 2 };
	static const u64 lbas[] = { 3, 5 * DMR_MAP_NARROW_ENTRIES,
				    9 * DMR_MAP_NARROW_ENTRIES + 17 };
	struct dmr_ckpt c = { .seq = 5 };
	struct dmr_slot_err err;
	struct dmr_map m;
	u64 p;
	u32 i;

	if (!map_crc)
		kunit_skip(test, "cannot allocate the CRC table");
	KUNIT_ASSERT_GE(test, f->map.nr_map_blocks, 10ULL);
	KUNIT_ASSERT_LT(test, f->geo.ckpt_offset + 2 * f->geo.ckpt_slot_blocks,
			(u64)T_STORE_BLOCKS);
	for (i = 0; i < ARRAY_SIZE(lbas); i++)
		dmr_t_set(test, &f->map, lbas[i], 5 + i);
	f->map.segs[0].flags |= DMR_SEG_USED;
	dmr_fake_write_slot(f, 1, &f->map, &c);

	dmr_fake_map_init(test, f, &m);
	m.track = false;
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);
	for (p = 0; p < m.nr_map_blocks; p++)
		KUNIT_EXPECT_EQ(test, !!m.pages[p], p == 0 || p == 5 || p == 9);
	KUNIT_EXPECT_EQ(test, m.nr_pages, 3ULL);
	m.mapped = 0;
	KUNIT_EXPECT_EQ(test, dmr_map_recount(&m), 0);
	KUNIT_EXPECT_EQ(test, m.mapped, 3ULL);
	KUNIT_EXPECT_EQ(test, m.segs[0].valid, 3U);
	for (i = 0; i < ARRAY_SIZE(lbas); i++)
		KUNIT_EXPECT_EQ(test, dmr_map_get(&m, lbas[i]), 5 + i + 1);
}

/*
 * The load calls out after each page that holds a mapped entry, in order
 * (dmr_slot_io's @loaded): counted a page at a time, the counts are the
 * recount's, and pages let go as they are counted leave a map with none
 * in memory that still reads back from the slot; the call's error ends
 * the load at its page.
 */
static void dmr_test_slot_load_streams(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, true);
	u32 *map_crc = kunit_kzalloc(test, f->map.nr_map_blocks * sizeof(u32), GFP_KERNEL);
	struct dmr_fake_hooks *h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	struct dmr_slot_io io = { .read = dmr_fake_read, .ctx = f, .bounce = f->buf,
				  .bounce_blocks = 2, .loaded = dmr_fake_loaded };
	static const u64 lbas[] = { 3, 4, 5 * DMR_MAP_NARROW_ENTRIES + 1,
				    9 * DMR_MAP_NARROW_ENTRIES + 17 };
	struct dmr_ckpt c = { .seq = 5 };
	struct dmr_slot_err err;
	struct dmr_map m;
	u32 i, seg0, *valid;

	valid = kunit_kzalloc(test, f->map.nr_segs * sizeof(u32), GFP_KERNEL);
	if (!map_crc || !h || !valid)
		kunit_skip(test, "cannot allocate");
	KUNIT_ASSERT_GE(test, f->map.nr_map_blocks, 10ULL);
	seg0 = f->map.seg_blocks;	/* the first block of segment 1 */
	for (i = 0; i < ARRAY_SIZE(lbas); i++)
		dmr_t_set(test, &f->map, lbas[i], i < 2 ? 5 + i : seg0 + i);
	f->map.segs[0].flags |= DMR_SEG_USED;
	f->map.segs[1].flags |= DMR_SEG_USED;
	dmr_fake_write_slot(f, 1, &f->map, &c);
	f->hooks = h;

	dmr_fake_map_init(test, f, &m);
	m.track = false;
	h->m = &m;
	h->valid = valid;
	h->fail_page = ~0ULL;
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);
	KUNIT_ASSERT_EQ(test, h->nr_seen, 3U);
	KUNIT_EXPECT_EQ(test, h->seen[0], 0ULL);
	KUNIT_EXPECT_EQ(test, h->seen[1], 5ULL);
	KUNIT_EXPECT_EQ(test, h->seen[2], 9ULL);
	KUNIT_EXPECT_EQ(test, h->mapped, 4ULL);
	KUNIT_EXPECT_EQ(test, h->valid[0], 2U);
	KUNIT_EXPECT_EQ(test, h->valid[1], 2U);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(&m), 0);
	KUNIT_EXPECT_EQ(test, m.mapped, h->mapped);
	for (i = 0; i < m.nr_segs; i++)
		KUNIT_EXPECT_EQ(test, m.segs[i].valid, h->valid[i]);

	/*
	 * Each page leaves as it is counted: none in memory at the end.  As
	 * the module's load: the slot loaded holds every page, the other
	 * one none (a fresh map is dirty for both).
	 */
	KUNIT_EXPECT_EQ(test, m.dirty[0], (u8)DMR_DIRTY_ALL);
	memset(m.dirty, DMR_DIRTY_SLOT(0), m.nr_map_blocks);
	memset(h, 0, sizeof(*h));
	memset(valid, 0, m.nr_segs * sizeof(u32));
	h->m = &m;
	h->valid = valid;
	h->evict = true;
	h->fail_page = ~0ULL;
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);
	KUNIT_EXPECT_EQ(test, h->mapped, 4ULL);
	KUNIT_EXPECT_EQ(test, m.nr_pages, 0ULL);
	KUNIT_EXPECT_EQ(test, m.nr_out, 3ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 3), DMR_MAP_MISS);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 2 * DMR_MAP_NARROW_ENTRIES), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_count_page(&m, 5, h->valid, &h->mapped), -EINVAL);

	/* a page that fails the call: the load fails there, with its error */
	memset(h, 0, sizeof(*h));
	h->m = &m;
	h->valid = valid;
	h->fail_page = 5;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_MAP);
	KUNIT_EXPECT_EQ(test, err.block, 5ULL);
	KUNIT_EXPECT_EQ(test, h->nr_seen, 2U);

	/* an entry outside the data area is not counted */
	m.pages[0][3] = m.nr_segs * m.seg_blocks + 1;
	KUNIT_EXPECT_EQ(test, dmr_map_count_page(&m, 0, h->valid, &h->mapped), -EINVAL);
}

/*
 * Growing online: a slot written before the device grew covers fewer map
 * blocks and segments than the grown map.  It loads into the grown map
 * from the same places (the grow limit fixes the tables' offsets); the
 * rest is unmapped and free, whatever the map held before; its header's
 * sizes are checked (dmr_ckpt_geometry()).
 */
static void dmr_test_slot_load_grown(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	const u64 limit = 96 * 1024;
	struct dmr_geometry small, big, cg;
	struct dmr_ckpt_layout ls, lb;
	struct dmr_slot_io io = { .read = dmr_fake_read, .ctx = f, .bounce = f->buf,
				  .bounce_blocks = 2 };
	struct dmr_ckpt c = { .seq = 5 }, bad;
	struct dmr_slot_err err;
	u32 *map_crc, zero_crc;
	/* (the map on the heap: the frame stays under KASAN's 2048 bytes) */
	struct dmr_map *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	u64 p, last;

	KUNIT_ASSERT_NOT_NULL(test, m);
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute_limit(T_DEV_BLOCKS, limit, T_SEG_BLOCKS,
							 10, &small), DMR_GEO_OK);
	KUNIT_ASSERT_EQ(test, dmr_geometry_grow(&small, limit, &big), DMR_GEO_OK);
	KUNIT_ASSERT_LT(test, small.ckpt_offset + 2 * small.ckpt_slot_blocks,
			(u64)T_STORE_BLOCKS);
	dmr_ckpt_layout(&small, &ls);
	dmr_ckpt_layout(&big, &lb);
	KUNIT_EXPECT_EQ(test, ls.map_offset, lb.map_offset);
	KUNIT_EXPECT_EQ(test, ls.segtab_offset, lb.segtab_offset);
	KUNIT_EXPECT_LT(test, ls.map_blocks, lb.map_blocks);
	KUNIT_EXPECT_LT(test, ls.segtab_blocks, lb.segtab_blocks);

	/* the slot, written with the small geometry */
	f->geo = small;
	dmr_fake_map_init(test, f, &f->map);
	dmr_t_set(test, &f->map, 0, 5);
	dmr_t_set(test, &f->map, small.logical_blocks - 1, 70);
	f->map.segs[0].flags |= DMR_SEG_USED;
	f->map.segs[1].flags |= DMR_SEG_USED;
	f->map.segs[1].seq = 33;
	dmr_fake_write_slot(f, 1, &f->map, &c);
	c.logical_blocks = small.logical_blocks;
	c.nr_segments = small.nr_segments;

	/* loaded into the grown map, which held stale entries past it */
	f->geo = big;
	dmr_fake_map_init(test, f, m);
	map_crc = kunit_kzalloc(test, m->nr_map_blocks * sizeof(u32), GFP_KERNEL);
	if (!map_crc)
		kunit_skip(test, "cannot allocate the CRC table");
	last = big.logical_blocks - 1;
	dmr_t_set(test, m, last, 9);
	m->segs[big.nr_segments - 1].flags = DMR_SEG_USED;
	m->segs[big.nr_segments - 1].valid = 7;
	m->segs[big.nr_segments - 1].seq = 99;
	memset(map_crc, 0xa5, m->nr_map_blocks * sizeof(u32));
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &big, 1, &c, m, map_crc, &err), 0);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, 0), 6U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, small.logical_blocks - 1), 71U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, small.logical_blocks), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(m, last), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m->segs[1].seq, 33ULL);
	KUNIT_EXPECT_EQ(test, m->segs[big.nr_segments - 1].flags, 0U);
	KUNIT_EXPECT_EQ(test, m->segs[big.nr_segments - 1].valid, 0U);
	KUNIT_EXPECT_EQ(test, m->segs[big.nr_segments - 1].seq, 0ULL);
	memset(f->buf, 0, DMR_BLOCK_SIZE);
	zero_crc = crc32c(~0U, f->buf, DMR_BLOCK_SIZE);
	for (p = ls.map_blocks; p < m->nr_map_blocks; p++)
		KUNIT_EXPECT_EQ(test, map_crc[p], zero_crc);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(m), 0);
	KUNIT_EXPECT_EQ(test, m->mapped, 2ULL);

	/*
	 * The tools' map: one flat array behind the pages, the last page
	 * short; what lies past the slot is cleared within it (a guard past
	 * its end stays as it was).
	 */
	{
		u64 nr = m->nr_map_blocks, j;
		u32 *flat = kunit_kzalloc(test, (big.logical_blocks + 16) * sizeof(u32),
					  GFP_KERNEL);
		u32 **pages = kunit_kzalloc(test, nr * sizeof(*pages), GFP_KERNEL);
		struct dmr_map *fm = kunit_kzalloc(test, sizeof(*fm), GFP_KERNEL);

		if (!flat || !pages || !fm)
			kunit_skip(test, "cannot allocate the flat map");
		KUNIT_ASSERT_NE(test, big.logical_blocks % DMR_MAP_NARROW_ENTRIES, 0ULL);
		for (j = 0; j < big.logical_blocks + 16; j++)
			flat[j] = 0x5a5a5a5a;
		dmr_map_init(fm, pages, flat, big.logical_blocks, m->segs, big.nr_segments,
			     big.segment_blocks, m->dirty, m->lists);
		fm->track = false;
		for (j = 0; j < big.logical_blocks + 16; j++)
			flat[j] = j < big.logical_blocks ? 7 : 0x5a5a5a5a;
		KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &big, 1, &c, fm, map_crc, &err), 0);
		KUNIT_EXPECT_EQ(test, dmr_map_get(fm, 0), 6U);
		KUNIT_EXPECT_EQ(test, dmr_map_get(fm, last), DMR_UNMAPPED);
		for (j = big.logical_blocks; j < big.logical_blocks + 16; j++)
			KUNIT_EXPECT_EQ(test, flat[j], 0x5a5a5a5aU);
	}

	/* the header's sizes */
	KUNIT_EXPECT_TRUE(test, dmr_ckpt_geometry(&big, &c, &cg));
	KUNIT_EXPECT_EQ(test, cg.nr_segments, small.nr_segments);
	KUNIT_EXPECT_EQ(test, cg.logical_blocks, small.logical_blocks);
	bad = c;
	bad.logical_blocks = 0;
	bad.nr_segments = 0;	/* a module before growing: the superblock's */
	KUNIT_EXPECT_TRUE(test, dmr_ckpt_geometry(&big, &bad, &cg));
	KUNIT_EXPECT_EQ(test, cg.nr_segments, big.nr_segments);
	bad.nr_segments = small.nr_segments;	/* half of them */
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_geometry(&big, &bad, &cg));
	bad = c;
	bad.nr_segments = big.nr_segments + 1;
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_geometry(&big, &bad, &cg));
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &big, 1, &bad, m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_SIZES);
	bad = c;
	bad.logical_blocks = big.logical_blocks + 1;
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_geometry(&big, &bad, &cg));
	/* a device without a grow limit never grew: only its own sizes */
	big.grow_limit = 0;
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_geometry(&big, &c, &cg));
	bad.logical_blocks = big.logical_blocks;
	bad.nr_segments = big.nr_segments;
	KUNIT_EXPECT_TRUE(test, dmr_ckpt_geometry(&big, &bad, &cg));
}

/* dmr_fake_read(), counting the map blocks read (from @map_first on). */
struct dmr_count_read {
	struct dmr_fake *f;
	u64 map_first, map_end, map_read;
};

static int dmr_count_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	struct dmr_count_read *c = ctx;
	u64 b;

	for (b = blocknr; b < blocknr + nr; b++)
		c->map_read += b >= c->map_first && b < c->map_end;
	return dmr_fake_read(c->f, blocknr, nr, buf);
}

/*
 * The module's load reads only the map blocks the CRC table records as
 * not all-zero; the others are unmapped on the table's word (a stale or
 * damaged block there is not looked at), and a page the map had for one
 * is cleared.  remapctl check (@read_zero) reads and checks them all.
 */
static void dmr_test_slot_load_skips_zero_blocks(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_MAP_BLOCKS, true);
	u32 *map_crc = kunit_kzalloc(test, f->map.nr_map_blocks * sizeof(u32), GFP_KERNEL);
	struct dmr_count_read cr = { .f = f };
	struct dmr_slot_io io = { .read = dmr_count_read, .ctx = &cr, .bounce = f->buf,
				  .bounce_blocks = 4 };
	u64 base = f->geo.ckpt_offset + f->geo.ckpt_slot_blocks;
	struct dmr_ckpt c = { .seq = 5 };
	struct dmr_ckpt_layout l;
	struct dmr_slot_err err;
	struct dmr_map m;

	if (!map_crc)
		kunit_skip(test, "cannot allocate the CRC table");
	dmr_ckpt_layout(&f->geo, &l);
	KUNIT_ASSERT_GE(test, l.map_blocks, 10ULL);
	KUNIT_ASSERT_LT(test, base + l.segtab_offset + l.segtab_blocks, (u64)T_STORE_BLOCKS);
	dmr_t_set(test, &f->map, 3, 5);
	dmr_t_set(test, &f->map, 5 * DMR_MAP_NARROW_ENTRIES + 1, 6);
	dmr_t_set(test, &f->map, 6 * DMR_MAP_NARROW_ENTRIES + 2, 7);
	f->map.segs[0].flags |= DMR_SEG_USED;
	dmr_fake_write_slot(f, 1, &f->map, &c);
	cr.map_first = base + l.map_offset;
	cr.map_end = cr.map_first + l.map_blocks;
	/* a zero block the table records as such holds garbage on the device */
	memset(f->dev + (cr.map_first + 3) * DMR_BLOCK_SIZE, 0xff, DMR_BLOCK_SIZE);

	dmr_fake_map_init(test, f, &m);
	m.track = false;
	dmr_t_set(test, &m, 3 * DMR_MAP_NARROW_ENTRIES + 9, 11);	/* stale */
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);
	KUNIT_EXPECT_EQ(test, cr.map_read, 3ULL);	/* blocks 0, 5 and 6 */
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 3), 6U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 5 * DMR_MAP_NARROW_ENTRIES + 1), 7U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 6 * DMR_MAP_NARROW_ENTRIES + 2), 8U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 3 * DMR_MAP_NARROW_ENTRIES + 9), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(&m), 0);
	KUNIT_EXPECT_EQ(test, m.mapped, 3ULL);

	/* remapctl check's way: every block read, the garbage found */
	io.read_zero = true;
	cr.map_read = 0;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_MAP);
	KUNIT_EXPECT_EQ(test, err.block, 3ULL);
	memset(f->dev + (cr.map_first + 3) * DMR_BLOCK_SIZE, 0, DMR_BLOCK_SIZE);
	cr.map_read = 0;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);
	KUNIT_EXPECT_EQ(test, cr.map_read, l.map_blocks);
}

static void dmr_test_slot_load(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	u32 *map_crc = kunit_kzalloc(test, f->map.nr_map_blocks * sizeof(u32), GFP_KERNEL);
	struct dmr_slot_io io = { .read = dmr_fake_read, .ctx = f, .bounce = f->buf,
				  .bounce_blocks = 2 };
	u64 base = f->geo.ckpt_offset + f->geo.ckpt_slot_blocks;
	struct dmr_ckpt c = { .seq = 5 };
	struct dmr_slot_err err;
	struct dmr_ckpt_layout l;
	struct dmr_map m;
	u8 *b;

	if (!map_crc)
		kunit_skip(test, "cannot allocate the CRC table");
	dmr_ckpt_layout(&f->geo, &l);
	dmr_t_set(test, &f->map, 0, 5);
	dmr_t_set(test, &f->map, 7, 69);
	dmr_t_set(test, &f->map, f->geo.logical_blocks - 1, 70);
	f->map.segs[0].flags |= DMR_SEG_USED;
	f->map.segs[1].flags |= DMR_SEG_USED | DMR_SEG_OPEN;	/* only USED is on disk */
	f->map.segs[1].seq = 33;
	dmr_fake_write_slot(f, 1, &f->map, &c);

	dmr_fake_map_init(test, f, &m);
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);
	/* entries are pba + 1 */
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 0), 6U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 7), 70U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, f->geo.logical_blocks - 1), 71U);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 1), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m.segs[0].valid, 1U);	/* as the slot recorded */
	KUNIT_EXPECT_EQ(test, m.segs[1].valid, 2U);
	KUNIT_EXPECT_EQ(test, m.segs[1].seq, 33ULL);
	KUNIT_EXPECT_EQ(test, m.segs[1].flags, DMR_SEG_USED);
	KUNIT_EXPECT_EQ(test, m.segs[2].flags, 0U);
	KUNIT_EXPECT_EQ(test, dmr_map_recount(&m), 0);
	KUNIT_EXPECT_EQ(test, m.mapped, 3ULL);

	/* each table against its checksum */
	b = f->dev + (base + l.map_offset) * DMR_BLOCK_SIZE + 100;
	*b ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_MAP);
	KUNIT_EXPECT_EQ(test, err.block, 0ULL);
	*b ^= 1;
	b = f->dev + (base + l.crc_offset) * DMR_BLOCK_SIZE + 4000;
	*b ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_CRC_TABLE);
	*b ^= 1;
	b = f->dev + (base + l.segtab_offset) * DMR_BLOCK_SIZE + 16 + 8;
	*b ^= 1;				/* segment 1's valid count */
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_SEGTAB);
	*b ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), 0);

	/* slot 0 was never written: its CRC table does not match */
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 0, &c, &m, map_crc, &err), -EILSEQ);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_CRC_TABLE);

	/* the reader's error is returned as it is */
	f->fail_reads_from = base + l.map_offset;
	KUNIT_EXPECT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c, &m, map_crc, &err), -EIO);
	KUNIT_EXPECT_EQ(test, err.table, DMR_SLOT_MAP);
	f->fail_reads_from = 0;
}

/* dmr_slot_io's @table_read: each table block's CRC, into @table_seen */

static void dmr_fake_table_read(void *ctx, bool crc, u64 block, u32 nr, const void *buf)
{
	struct dmr_fake *f = ctx;
	u32 j;

	for (j = 0; j < nr; j++)
		if (block + j < DMR_TR_MAX)
			(*f->table_seen)[crc][block + j] =
				crc32c(~0U, (const u8 *)buf + (size_t)j * DMR_BLOCK_SIZE,
				       DMR_BLOCK_SIZE);
}

/*
 * dmr_slot_write() (remapctl check --repair, with the encoders the
 * module's checkpoint writer uses) writes, byte for byte, the slot the
 * test's own writer above writes for the same map, and dmr_slot_load()
 * reads it back.
 */
static void dmr_test_slot_write(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_new(test);
	u64 nr_map = f->map.nr_map_blocks;
	u32 *map_crc = kunit_kzalloc(test, nr_map * sizeof(u32), GFP_KERNEL);
	u32 *crc_back = kunit_kzalloc(test, nr_map * sizeof(u32), GFP_KERNEL);
	struct dmr_slot_io io = { .read = dmr_fake_read, .write = dmr_fake_write,
				  .ctx = f, .bounce = f->buf, .bounce_blocks = 2 };
	u64 base0 = f->geo.ckpt_offset, base1 = base0 + f->geo.ckpt_slot_blocks, p, lba;
	struct dmr_ckpt c0 = { .seq = 4 }, c1 = { .seq = 5 };
	struct dmr_slot_err err;
	struct dmr_ckpt_layout l;
	struct dmr_map m;
	u32 seg;

	if (!map_crc || !crc_back)
		kunit_skip(test, "cannot allocate the CRC tables");
	dmr_ckpt_layout(&f->geo, &l);
	dmr_t_set(test, &f->map, 0, 5);
	dmr_t_set(test, &f->map, 7, 69);
	dmr_t_set(test, &f->map, f->geo.logical_blocks - 1, 70);	/* the last entry */
	f->map.segs[0].flags |= DMR_SEG_USED;
	f->map.segs[0].seq = 9;
	f->map.segs[1].flags |= DMR_SEG_USED | DMR_SEG_OPEN | DMR_SEG_MEM;
	f->map.segs[1].seq = 33;
	f->map.segs[2].flags |= DMR_SEG_USED | DMR_SEG_PREFREE;	/* empty, sealed */
	f->map.segs[2].seq = 12;
	f->map.segs[3].flags |= DMR_SEG_USED | DMR_SEG_HOT;	/* a hot head's, sealed */
	f->map.segs[3].seq = 2040;
	f->map.segs[3].birth = 1;	/* GC moved older data into it */
	f->map.segs[4].flags |= DMR_SEG_USED;
	f->map.segs[4].seq = 50;
	f->map.segs[4].birth = 50;
	/* a birth past the seq is written as none: it loads as the seq */
	f->map.segs[5].flags |= DMR_SEG_USED;
	f->map.segs[5].seq = 7;
	f->map.segs[5].birth = 9;
	/* a large segment (format 5): its base and checksum go with it */
	f->map.segs[6].flags |= DMR_SEG_USED | DMR_SEG_LARGE;
	f->map.segs[6].seq = 60;
	f->map.segs[6].birth = 60;
	f->map.segs[6].base = 513;
	f->map.segs[6].csum = 0xabcd1234;
	/* large but not used is no large segment: it loads as a free one */
	f->map.segs[7].flags |= DMR_SEG_LARGE;
	f->map.segs[7].base = 5;
	f->map.segs[7].csum = 5;

	dmr_fake_write_slot(f, 0, &f->map, &c0);
	KUNIT_ASSERT_EQ(test, dmr_slot_write(&io, &f->geo, 1, &f->map, map_crc, &c1), 0);
	KUNIT_EXPECT_EQ(test, c1.crc_csum, c0.crc_csum);
	KUNIT_EXPECT_EQ(test, c1.segtab_csum, c0.segtab_csum);
	KUNIT_EXPECT_EQ(test, memcmp(f->dev + (base0 + 1) * DMR_BLOCK_SIZE,
				     f->dev + (base1 + 1) * DMR_BLOCK_SIZE,
				     (size_t)(f->geo.ckpt_slot_blocks - 1) * DMR_BLOCK_SIZE), 0);
	/* the header is the caller's: not written */
	KUNIT_EXPECT_TRUE(test, !memchr_inv(f->dev + base1 * DMR_BLOCK_SIZE, 0,
					    DMR_BLOCK_SIZE));
	for (p = 0; p < nr_map; p++)
		KUNIT_EXPECT_EQ(test, map_crc[p],
				crc32c(~0U, f->dev + (base1 + l.map_offset + p) * DMR_BLOCK_SIZE,
				       DMR_BLOCK_SIZE));

	dmr_fake_map_init(test, f, &m);
	/* the load hands each table block it read to @table_read, as held */
	f->table_seen = kunit_kzalloc(test, sizeof(*f->table_seen), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->table_seen);
	io.table_read = dmr_fake_table_read;
	KUNIT_ASSERT_EQ(test, dmr_slot_load(&io, &f->geo, 1, &c1, &m, crc_back, &err), 0);
	io.table_read = NULL;
	KUNIT_ASSERT_LE(test, l.crc_blocks, (u64)DMR_TR_MAX);
	KUNIT_ASSERT_LE(test, l.segtab_blocks, (u64)DMR_TR_MAX);
	for (p = 0; p < l.crc_blocks; p++)
		KUNIT_EXPECT_EQ(test, (*f->table_seen)[1][p],
				crc32c(~0U, f->dev + (base1 + l.crc_offset + p) * DMR_BLOCK_SIZE,
				       DMR_BLOCK_SIZE));
	for (p = 0; p < l.segtab_blocks; p++)
		KUNIT_EXPECT_EQ(test, (*f->table_seen)[0][p],
				crc32c(~0U, f->dev + (base1 + l.segtab_offset + p) * DMR_BLOCK_SIZE,
				       DMR_BLOCK_SIZE));
	for (lba = 0; lba < m.nr_logical; lba++)
		KUNIT_EXPECT_EQ(test, dmr_map_get(&m, lba), dmr_map_get(&f->map, lba));
	/* a map block with nothing mapped gets no page */
	for (p = 0; p < nr_map; p++) {
		bool any = false;

		for (lba = p * DMR_MAP_NARROW_ENTRIES;
		     lba < min_t(u64, (p + 1) * DMR_MAP_NARROW_ENTRIES, m.nr_logical); lba++)
			any |= dmr_map_get(&f->map, lba) != DMR_UNMAPPED;
		KUNIT_EXPECT_EQ(test, !!m.pages[p], any);
		KUNIT_EXPECT_EQ(test, !!m.pages[p], !!f->map.pages[p]);
	}
	KUNIT_EXPECT_EQ(test, m.nr_pages, f->map.nr_pages);
	KUNIT_EXPECT_EQ(test, memcmp(crc_back, map_crc, nr_map * sizeof(u32)), 0);
	for (seg = 0; seg < m.nr_segs; seg++) {
		KUNIT_EXPECT_EQ(test, m.segs[seg].seq, f->map.segs[seg].seq);
		KUNIT_EXPECT_EQ(test, m.segs[seg].valid, f->map.segs[seg].valid);
		/*
		 * only USED, HOT and LARGE are on disk (item 14: the hot flag
		 * survives), LARGE with USED only, with its base and checksum
		 */
		KUNIT_EXPECT_EQ(test, m.segs[seg].flags,
				f->map.segs[seg].flags & (DMR_SEG_USED | DMR_SEG_HOT |
							  (seg == 7 ? 0 : DMR_SEG_LARGE)));
		KUNIT_EXPECT_EQ(test, m.segs[seg].base, seg == 6 ? 513ULL : 0ULL);
		KUNIT_EXPECT_EQ(test, m.segs[seg].csum, seg == 6 ? 0xabcd1234U : 0U);
		/* and the birth (issue 25); one past the seq loads as the seq */
		KUNIT_EXPECT_EQ(test, m.segs[seg].birth,
				seg == 5 ? 7ULL : f->map.segs[seg].birth);
	}

	/* an unmapped map block is all zeroes, and dmr_slot_map_zero() says so */
	KUNIT_EXPECT_FALSE(test, dmr_slot_map_zero(&f->map, 0));
	dmr_map_unmap(&f->map, 0);
	dmr_map_unmap(&f->map, 7);
	dmr_map_unmap(&f->map, f->geo.logical_blocks - 1);
	KUNIT_EXPECT_TRUE(test, dmr_slot_map_zero(&f->map, 0));
	KUNIT_ASSERT_EQ(test, dmr_slot_write(&io, &f->geo, 1, &f->map, map_crc, &c1), 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(f->dev + (base1 + l.map_offset) *
					    DMR_BLOCK_SIZE, 0, DMR_BLOCK_SIZE));

	/* the writer's error is returned as it is, from any table */
	f->fail_writes_from = base1 + l.segtab_offset;
	KUNIT_EXPECT_EQ(test, dmr_slot_write(&io, &f->geo, 1, &f->map, map_crc, &c1), -EIO);
	f->fail_writes_from = base1 + l.map_offset;
	KUNIT_EXPECT_EQ(test, dmr_slot_write(&io, &f->geo, 1, &f->map, map_crc, &c1), -EIO);
	f->fail_writes_from = 0;
}

/*
 * After a load the heads' segments, and the ones they reserved, are open
 * (never free, never prefree), and a head's segment without a unit of its
 * use starts that use at the sequence number given, as a head's segment
 * even where the slot has a large segment (dmr_heads_load_states(),
 * dmr_heads_open(): the module's load and remapctl check --repair).
 */
static void dmr_test_heads_states_open(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_DEV_BLOCKS, false);
	struct dmr_map *m = &f->map;
	struct dmr_log_pos pos[DMR_NR_HEADS];
	unsigned int i;

	KUNIT_ASSERT_GE(test, f->geo.nr_segments, DMR_NR_HEADS + 2);
	for (i = 0; i < DMR_NR_HEADS; i++)
		pos[i] = (struct dmr_log_pos){ .segment = i, .offset = 0,
					       .next_segment = DMR_NO_SEGMENT };
	pos[0].offset = 9;
	pos[0].next_segment = DMR_NR_HEADS;		/* reserved */
	m->track = false;
	m->segs[0].flags = DMR_SEG_USED;		/* head 0 wrote there */
	m->segs[0].seq = 40;
	m->segs[DMR_NR_HEADS + 1].flags = DMR_SEG_USED;	/* sealed, empty */
	/* head 1 at the start of a segment the slot has as a large one */
	m->segs[1].flags = DMR_SEG_USED | DMR_SEG_LARGE;
	m->segs[1].seq = 30;
	m->segs[1].birth = 30;
	m->segs[1].base = 65;
	m->segs[1].csum = 0x1234;
	dmr_heads_load_states(m, pos);
	for (i = 0; i <= DMR_NR_HEADS; i++)
		KUNIT_EXPECT_TRUE(test, m->segs[i].flags & DMR_SEG_OPEN);
	KUNIT_EXPECT_FALSE(test, m->segs[DMR_NR_HEADS + 1].flags & DMR_SEG_OPEN);
	KUNIT_EXPECT_TRUE(test, m->segs[DMR_NR_HEADS + 1].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_EQ(test, m->nr_prefree, 1U);
	KUNIT_EXPECT_EQ(test, m->nr_free, f->geo.nr_segments - DMR_NR_HEADS - 2);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(m));

	dmr_heads_open(m, pos, 77);
	KUNIT_EXPECT_EQ(test, m->segs[0].seq, 40ULL);	/* already in use */
	for (i = 1; i < DMR_NR_HEADS; i++) {
		KUNIT_EXPECT_TRUE(test, m->segs[i].flags & DMR_SEG_USED);
		KUNIT_EXPECT_EQ(test, m->segs[i].seq, 77ULL);
		KUNIT_EXPECT_EQ(test, m->segs[i].birth, 77ULL);
		/* a new use: no large segment's any more */
		KUNIT_EXPECT_FALSE(test, m->segs[i].flags & DMR_SEG_LARGE);
		KUNIT_EXPECT_EQ(test, m->segs[i].base, 0ULL);
		KUNIT_EXPECT_EQ(test, m->segs[i].csum, 0U);
	}
	/* a reserved segment is not used until a unit goes there */
	KUNIT_EXPECT_FALSE(test, m->segs[DMR_NR_HEADS].flags & DMR_SEG_USED);
	KUNIT_EXPECT_EQ(test, m->nr_free, f->geo.nr_segments - DMR_NR_HEADS - 2);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(m));
}

/*
 * A slot whose map uses a segment it records as free is damaged: the
 * loader passes over it (dmr_map_free_mapped()).
 */
static void dmr_test_map_free_mapped(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_DEV_BLOCKS, false);
	struct dmr_map *m = &f->map;
	u32 seg = 99;

	m->track = false;
	m->segs[0].flags = DMR_SEG_USED;
	dmr_t_set(test, m, 3, 1);				/* segment 0 */
	KUNIT_ASSERT_EQ(test, dmr_map_recount(m), 0);
	KUNIT_EXPECT_FALSE(test, dmr_map_free_mapped(m, &seg));
	KUNIT_EXPECT_EQ(test, seg, 99U);
	dmr_t_set(test, m, 4, 2 * T_SEG_BLOCKS + 5);	/* segment 2, free */
	KUNIT_ASSERT_EQ(test, dmr_map_recount(m), 0);
	KUNIT_EXPECT_TRUE(test, dmr_map_free_mapped(m, &seg));
	KUNIT_EXPECT_EQ(test, seg, 2U);
	m->segs[2].flags = DMR_SEG_USED | DMR_SEG_OPEN;
	KUNIT_EXPECT_FALSE(test, dmr_map_free_mapped(m, &seg));
	/* open but not used (a reserved segment) with blocks in it is free too */
	m->segs[2].flags = DMR_SEG_OPEN;
	KUNIT_EXPECT_TRUE(test, dmr_map_free_mapped(m, &seg));
}

/* The checkpoint's head positions the loader accepts (dmr_heads_valid()). */
static void dmr_test_heads_valid(struct kunit *test)
{
	struct dmr_fake *f = dmr_fake_geo(test, T_DEV_BLOCKS, false);
	u32 nr = f->geo.nr_segments, sb = f->geo.segment_blocks;
	struct dmr_log_pos ok[DMR_NR_HEADS], p[DMR_NR_HEADS];
	unsigned int i;

	for (i = 0; i < DMR_NR_HEADS; i++)
		ok[i] = (struct dmr_log_pos){ .segment = i, .offset = 0,
					      .next_segment = DMR_NO_SEGMENT };
	ok[1].offset = sb - 2;			/* room for one more unit */
	ok[2].next_segment = nr - 1;
	KUNIT_EXPECT_TRUE(test, dmr_heads_valid(&f->geo, ok));

	memcpy(p, ok, sizeof(p));
	p[3].segment = nr;			/* past the device */
	KUNIT_EXPECT_FALSE(test, dmr_heads_valid(&f->geo, p));
	memcpy(p, ok, sizeof(p));
	p[1].offset = sb - 1;			/* no room for a unit */
	KUNIT_EXPECT_FALSE(test, dmr_heads_valid(&f->geo, p));
	memcpy(p, ok, sizeof(p));
	p[2].next_segment = nr;			/* goes on past the device */
	KUNIT_EXPECT_FALSE(test, dmr_heads_valid(&f->geo, p));
	memcpy(p, ok, sizeof(p));
	p[2].next_segment = p[2].segment;	/* goes on in itself */
	KUNIT_EXPECT_FALSE(test, dmr_heads_valid(&f->geo, p));
	memcpy(p, ok, sizeof(p));
	p[3].segment = p[0].segment;		/* two heads, one segment */
	KUNIT_EXPECT_FALSE(test, dmr_heads_valid(&f->geo, p));
}

/*
 * dmr_table_run(): a checkpoint writes the runs of table blocks whose hash
 * changed since the slot got them, every block when the slot's are not
 * known, and nothing when none changed.
 */
static void dmr_test_table_run(struct kunit *test)
{
	u64 was[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, now[10];
	u32 i, len, runs[4][2], nr = 0;

	memcpy(now, was, sizeof(now));
	KUNIT_EXPECT_EQ(test, dmr_table_run(was, now, 10, 0, &len), 10U);
	KUNIT_EXPECT_EQ(test, len, 0U);
	/* not known: one run of all of them, from any start */
	KUNIT_EXPECT_EQ(test, dmr_table_run(NULL, now, 10, 0, &len), 0U);
	KUNIT_EXPECT_EQ(test, len, 10U);
	KUNIT_EXPECT_EQ(test, dmr_table_run(NULL, now, 10, 4, &len), 4U);
	KUNIT_EXPECT_EQ(test, len, 6U);
	KUNIT_EXPECT_EQ(test, dmr_table_run(NULL, now, 10, 10, &len), 10U);
	KUNIT_EXPECT_EQ(test, len, 0U);
	/* blocks 0, 3-5 and 9 changed: three runs, as the writer walks them */
	now[0] = 100;
	now[3] = 103;
	now[4] = 104;
	now[5] = 105;
	now[9] = 109;
	for (i = 0; (i = dmr_table_run(was, now, 10, i, &len)) < 10 && nr < 4; i += len) {
		runs[nr][0] = i;
		runs[nr++][1] = len;
	}
	KUNIT_ASSERT_EQ(test, nr, 3U);
	KUNIT_EXPECT_EQ(test, runs[0][0], 0U);
	KUNIT_EXPECT_EQ(test, runs[0][1], 1U);
	KUNIT_EXPECT_EQ(test, runs[1][0], 3U);
	KUNIT_EXPECT_EQ(test, runs[1][1], 3U);
	KUNIT_EXPECT_EQ(test, runs[2][0], 9U);
	KUNIT_EXPECT_EQ(test, runs[2][1], 1U);
}

static struct kunit_case dmr_log_cases[] = {
	KUNIT_CASE(dmr_test_map_basic),
	KUNIT_CASE(dmr_test_map_pages),
	KUNIT_CASE(dmr_test_map_wide),
	KUNIT_CASE(dmr_test_map_evict),
	KUNIT_CASE(dmr_test_map_runs_and_recount),
	KUNIT_CASE(dmr_test_unit_codec),
	KUNIT_CASE(dmr_test_unit_codec_extents),
	KUNIT_CASE(dmr_test_unit_codec_wide),
	KUNIT_CASE(dmr_test_block_digest),
	KUNIT_CASE(dmr_test_csum_fold),
	KUNIT_CASE(dmr_test_ckpt_codec),
	KUNIT_CASE(dmr_test_ckpt_layout),
	KUNIT_CASE(dmr_test_replay_order_newest_wins),
	KUNIT_CASE(dmr_test_replay_torn_unit_stops),
	KUNIT_CASE(dmr_test_replay_bad_summary_stops),
	KUNIT_CASE(dmr_test_replay_sequence_gap_stops),
	KUNIT_CASE(dmr_test_replay_discards),
	KUNIT_CASE(dmr_test_replay_large_segment),
	KUNIT_CASE(dmr_test_replay_reuse_of_a_large_segment),
	KUNIT_CASE(dmr_test_replay_crosses_segments),
	KUNIT_CASE(dmr_test_replay_from_checkpoint_position),
	KUNIT_CASE(dmr_test_replay_no_memory),
	KUNIT_CASE(dmr_test_replay_steps),
	KUNIT_CASE(dmr_test_replay_read_error_and_end),
	KUNIT_CASE(dmr_test_heads_valid),
	KUNIT_CASE(dmr_test_slot_load_pages),
	KUNIT_CASE(dmr_test_slot_load_streams),
	KUNIT_CASE(dmr_test_slot_load),
	KUNIT_CASE(dmr_test_slot_load_grown),
	KUNIT_CASE(dmr_test_slot_load_skips_zero_blocks),
	KUNIT_CASE(dmr_test_slot_write),
	KUNIT_CASE(dmr_test_table_run),
	KUNIT_CASE(dmr_test_heads_states_open),
	KUNIT_CASE(dmr_test_map_free_mapped),
	{}
};

static struct kunit_suite dmr_log_suite = {
	.name = "dm-remap-log",
	.test_cases = dmr_log_cases,
};

kunit_test_suite(dmr_log_suite);
