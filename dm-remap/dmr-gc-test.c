// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for dm-remap's garbage-collection rules:
 *
 * - the move rule (dmr_move_commit()) at run time and, through relocation
 *   units, at replay;
 * - multi-head replay: units applied in sequence order across the heads,
 *   a missing unit stops every head, stale units are not applied;
 * - the segment reuse rule and segment allocation;
 * - the accounting invariants under a seeded random workload;
 * - the contracts of the GC policy (dmr-policy.c).
 *
 * Also compiled into the host runner tools/tests/test-pure, in one
 * translation unit with the other suites: every name here starts with
 * dmr_gct_ or GCT_.
 */
#include <kunit/test.h>
#include <linux/vmalloc.h>

#include "dmr-log.h"
#include "dmr-policy.h"

/*
 * The replay tests run on a small fake device: 7 segments of 64 blocks
 * after 8 blocks of (unused) metadata, 256 logical blocks.  Its geometry
 * is set by hand: replay only reads the data area.  Head h starts in
 * segment h (DMR_HEAD_HOT in 0, DMR_HEAD_COLD in 1, DMR_HEAD_GC in 2).
 */
#define GCT_SEG_BLOCKS	64U
#define GCT_NR_SEGS	7U
#define GCT_LOGICAL	256U
#define GCT_DATA_OFFSET	8U
#define GCT_DEV_BLOCKS	(GCT_DATA_OFFSET + GCT_NR_SEGS * GCT_SEG_BLOCKS)

static int dmr_gct_vz_init(struct kunit_resource *res, void *size)
{
	res->data = vzalloc(*(size_t *)size);
	return res->data ? 0 : -ENOMEM;
}

static void dmr_gct_vz_free(struct kunit_resource *res)
{
	vfree(res->data);
}

/*
 * Zeroed memory freed with the test, from vmalloc: the segment table of a
 * device of more than 2^16 segments (64 bytes each since format 5) is
 * past kmalloc's largest size (dmr_gct_victim_whole_device()).  A KUnit
 * resource, not a deferred action: those came in 6.5.
 */
static void *dmr_gct_vzalloc(struct kunit *test, size_t size)
{
	return kunit_alloc_resource(test, dmr_gct_vz_init, dmr_gct_vz_free, GFP_KERNEL,
				    &size);
}

static void dmr_gct_map_init(struct kunit *test, struct dmr_map *m,
			     u32 nr_logical, u32 nr_segs, u32 seg_blocks)
{
	u32 nr_map_blocks = (nr_logical + DMR_MAP_NARROW_ENTRIES - 1) /
			    DMR_MAP_NARROW_ENTRIES;
	u32 *l2p = kunit_kzalloc(test, nr_logical * sizeof(*l2p), GFP_KERNEL);
	u32 **pages = kunit_kzalloc(test, nr_map_blocks * sizeof(*pages), GFP_KERNEL);
	struct dmr_seg *segs = dmr_gct_vzalloc(test, (size_t)nr_segs * sizeof(*segs));
	u8 *dirty = kunit_kzalloc(test, nr_map_blocks, GFP_KERNEL);
	u32 *lists = kunit_kzalloc(test, DMR_MAP_LISTS(seg_blocks) * sizeof(*lists),
				   GFP_KERNEL);

	if (!l2p || !pages || !segs || !dirty || !lists)
		kunit_skip(test, "cannot allocate a map");
	/* every page there at once, as the tools have it */
	dmr_map_init(m, pages, l2p, nr_logical, segs, nr_segs, seg_blocks, dirty, lists);
}

/**
 * struct dmr_gct_dev - in-memory device for the replay tests
 * @geo: its geometry
 * @uuid: its uuid
 * @dev: GCT_DEV_BLOCKS blocks
 * @unit: the unit dmr_gct_write() builds
 * @units: replay scratch, one unit per head
 * @buf: replay scratch, one segment
 * @map: the map replayed into; holds the checkpoint's map before replay
 */
struct dmr_gct_dev {
	struct dmr_geometry geo;
	u8 uuid[16];
	u8 *dev;
	struct dmr_unit *unit;
	struct dmr_unit *units;
	void *buf;
	struct dmr_map map;
};

static int dmr_gct_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	struct dmr_gct_dev *f = ctx;

	if (blocknr + nr > GCT_DEV_BLOCKS)
		return -EIO;
	memcpy(buf, f->dev + blocknr * DMR_BLOCK_SIZE, (size_t)nr * DMR_BLOCK_SIZE);
	return 0;
}

static struct dmr_gct_dev *dmr_gct_dev_new(struct kunit *test)
{
	struct dmr_gct_dev *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	u32 i;

	if (!f)
		kunit_skip(test, "cannot allocate the fake device");
	f->geo.device_blocks = GCT_DEV_BLOCKS;
	f->geo.segment_blocks = GCT_SEG_BLOCKS;
	f->geo.overprovision = 10;
	f->geo.data_offset = GCT_DATA_OFFSET;
	f->geo.nr_segments = GCT_NR_SEGS;
	f->geo.logical_blocks = GCT_LOGICAL;
	for (i = 0; i < sizeof(f->uuid); i++)
		f->uuid[i] = 0x90 + i;
	f->dev = kunit_kzalloc(test, (size_t)GCT_DEV_BLOCKS * DMR_BLOCK_SIZE,
			       GFP_KERNEL);
	f->unit = kunit_kzalloc(test, sizeof(*f->unit), GFP_KERNEL);
	f->units = kunit_kzalloc(test, DMR_NR_HEADS * sizeof(*f->units),
				 GFP_KERNEL);
	f->buf = kunit_kzalloc(test, (size_t)GCT_SEG_BLOCKS * DMR_BLOCK_SIZE,
			       GFP_KERNEL);
	if (!f->dev || !f->unit || !f->units || !f->buf)
		kunit_skip(test, "cannot allocate the fake device");
	dmr_gct_map_init(test, &f->map, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	return f;
}

/* Every head at the start of its own segment (see GCT_SEG_BLOCKS). */
static void dmr_gct_heads(struct dmr_log_pos *pos)
{
	unsigned int h;

	for (h = 0; h < DMR_NR_HEADS; h++) {
		pos[h].segment = h;
		pos[h].offset = 0;
		pos[h].next_segment = DMR_NO_SEGMENT;
		pos[h].seq = 0;
	}
}

/*
 * Write a unit at a head's position the way the writer does: sequence
 * number @seq, one discard extent (@discard_count blocks from
 * @discard_first; none if 0), then @nr data blocks of @lba.  With @src it
 * is a relocation unit: data block i is a copy of data-area block @src[i].
 * It records @pos->next_segment, where the head goes on (rule 9).
 *
 * Return: the data-area block of the unit's first data block.
 */
static u32 dmr_gct_write(struct dmr_gct_dev *f, struct dmr_log_pos *pos,
			 u64 seq, const u32 *lba, const u32 *src, u32 nr,
			 u32 discard_first, u32 discard_count)
{
	struct dmr_unit *u = f->unit;
	u32 first = pos->segment * GCT_SEG_BLOCKS + pos->offset + 1, i;
	u8 *data = f->dev + ((size_t)GCT_DATA_OFFSET + first) * DMR_BLOCK_SIZE;

	dmr_unit_reset(u, src ? DMR_UNIT_RELOC : 0);
	u->seq = seq;
	u->blocknr = GCT_DATA_OFFSET + first - 1;
	u->next_segment = pos->next_segment;
	if (discard_count) {
		u->discard[0][0] = discard_first;
		u->discard[0][1] = discard_count;
		u->nr_discards = 1;
	}
	for (i = 0; i < nr; i++) {
		u->lba[i] = lba[i];
		if (src)
			u->src[i] = src[i];
		memset(data + (size_t)i * DMR_BLOCK_SIZE, (u8)(lba[i] * 7 + seq),
		       DMR_BLOCK_SIZE);
	}
	u->nr_blocks = nr;
	dmr_unit_encode(u, f->uuid, data, data - DMR_BLOCK_SIZE);
	dmr_log_advance(pos, 1 + nr, GCT_SEG_BLOCKS);
	return first;
}

static u32 dmr_gct_user(struct dmr_gct_dev *f, struct dmr_log_pos *pos,
			u64 seq, const u32 *lba, u32 nr)
{
	return dmr_gct_write(f, pos, seq, lba, NULL, nr, 0, 0);
}

static u32 dmr_gct_reloc(struct dmr_gct_dev *f, struct dmr_log_pos *pos,
			 u64 seq, const u32 *lba, const u32 *src, u32 nr)
{
	return dmr_gct_write(f, pos, seq, lba, src, nr, 0, 0);
}

/* Start over from an empty checkpoint: every segment free, nothing mapped. */
static void dmr_gct_map_reset(struct dmr_gct_dev *f)
{
	dmr_map_init(&f->map, f->map.pages, NULL, GCT_LOGICAL, f->map.segs,
		     GCT_NR_SEGS, GCT_SEG_BLOCKS, f->map.dirty, f->map.lists);
}

/*
 * Replay the fake device's first @nr heads into f->map as the loader
 * does: from the checkpoint state in f->map and the heads at their start,
 * segment tracking off during replay, then segment states rebuilt with
 * the heads' segments open.  @seq: the checkpoint's last sequence number,
 * set to the last one applied.  @pos: the heads' positions (out).
 */
static struct dmr_replay dmr_gct_replay(struct kunit *test,
					struct dmr_gct_dev *f, unsigned int nr,
					u64 *seq, struct dmr_log_pos *pos)
{
	struct dmr_replay r = {
		.geo = &f->geo,
		.uuid = f->uuid,
		.read = dmr_gct_read,
		.ctx = f,
		.buf = f->buf,
		.unit = f->units,
	};
	unsigned int h;

	dmr_gct_heads(pos);
	f->map.track = false;
	KUNIT_EXPECT_EQ(test, dmr_replay_heads(&r, &f->map, pos, nr, seq), 0);
	for (h = 0; h < nr; h++)
		if (pos[h].segment != DMR_NO_SEGMENT)
			f->map.segs[pos[h].segment].flags |= DMR_SEG_OPEN;
	dmr_map_load_states(&f->map);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&f->map));
	return r;
}

/* ------------------------------------------------------------------ */
/* the move rule at run time */

static void dmr_gct_move_commit_rule(struct kunit *test)
{
	const u32 b = GCT_SEG_BLOCKS, cold = 1, gc = 2, hot = 3;
	struct dmr_map m;
	u32 src;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	/* lba 5, 6, 7 in a sealed segment; GC and a user head open */
	dmr_seg_open(&m, cold, 1);
	dmr_map_set(&m, 5, cold * b + 1);
	dmr_map_set(&m, 6, cold * b + 2);
	dmr_map_set(&m, 7, cold * b + 3);
	dmr_seg_seal(&m, cold);
	dmr_seg_open(&m, gc, 2);
	dmr_seg_open(&m, hot, 3);

	/* nothing happened since the copy was read: the move commits */
	src = dmr_map_get(&m, 5) - 1;
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(&m, 5, src, gc * b + 1));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 5), gc * b + 2);
	KUNIT_EXPECT_EQ(test, m.segs[cold].valid, 2U);
	KUNIT_EXPECT_EQ(test, m.segs[gc].valid, 1U);
	/* the same move again: the map no longer points at its source */
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(&m, 5, src, gc * b + 2));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 5), gc * b + 2);
	KUNIT_EXPECT_EQ(test, m.segs[gc].valid, 1U);

	/* an overwrite between "copy read" and commit wins */
	src = dmr_map_get(&m, 6) - 1;
	dmr_map_set(&m, 6, hot * b + 1);
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(&m, 6, src, gc * b + 3));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 6), hot * b + 2);
	KUNIT_EXPECT_EQ(test, m.segs[cold].valid, 1U);
	KUNIT_EXPECT_EQ(test, m.segs[gc].valid, 1U);
	KUNIT_EXPECT_EQ(test, m.segs[hot].valid, 1U);
	/* the rule is about locations: moving the new copy commits */
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(&m, 6, hot * b + 1, gc * b + 4));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 6), gc * b + 5);
	KUNIT_EXPECT_EQ(test, m.segs[hot].valid, 0U);
	KUNIT_EXPECT_EQ(test, m.segs[gc].valid, 2U);
	/* an open segment that empties is not prefree: its head goes on */
	KUNIT_EXPECT_FALSE(test, m.segs[hot].flags & DMR_SEG_PREFREE);

	/* a discard between "copy read" and commit wins */
	src = dmr_map_get(&m, 7) - 1;
	dmr_map_unmap(&m, 7);
	KUNIT_EXPECT_EQ(test, m.segs[cold].valid, 0U);
	KUNIT_EXPECT_TRUE(test, m.segs[cold].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(&m, 7, src, gc * b + 5));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 7), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, m.segs[gc].valid, 2U);
	KUNIT_EXPECT_EQ(test, m.segs[cold].valid, 0U);
	KUNIT_EXPECT_EQ(test, m.nr_prefree, 1U);

	/* a block never written is not "moved" into existence */
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(&m, 100, 0, gc * b + 6));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&m, 100), DMR_UNMAPPED);

	KUNIT_EXPECT_EQ(test, m.mapped, 2ULL);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
}

/* ------------------------------------------------------------------ */
/* the move rule at replay */

/* A user write logged before a relocation of the copy it replaced wins. */
static void dmr_gct_replay_overwrite_beats_reloc(struct kunit *test)
{
	static const u32 ab[] = { 10, 11 }, a[] = { 10 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	u32 old, user, dst, src[2], lba;
	struct dmr_replay r;
	struct dmr_map rt;
	u64 seq = 0;

	dmr_gct_heads(w);
	old = dmr_gct_user(f, &w[0], 1, ab, 2);
	/* GC reads 10 and 11; a user overwrites 10; GC logs its move after */
	user = dmr_gct_user(f, &w[0], 2, a, 1);
	src[0] = old;
	src[1] = old + 1;
	dst = dmr_gct_reloc(f, &w[1], 3, ab, src, 2);

	r = dmr_gct_replay(test, f, 2, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 3ULL);
	KUNIT_EXPECT_EQ(test, seq, 3ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 10), user + 1);	/* not moved */
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 11), dst + 2);	/* moved */
	KUNIT_EXPECT_EQ(test, f->map.segs[0].valid, 1U);
	KUNIT_EXPECT_EQ(test, f->map.segs[1].valid, 1U);
	KUNIT_EXPECT_EQ(test, f->map.mapped, 2ULL);

	/* the same events at run time end in the same map */
	dmr_gct_map_init(test, &rt, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	dmr_map_set(&rt, 10, old);
	dmr_map_set(&rt, 11, old + 1);
	dmr_map_set(&rt, 10, user);
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(&rt, 10, old, dst));
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(&rt, 11, old + 1, dst + 1));
	for (lba = 0; lba < GCT_LOGICAL; lba++)
		if (dmr_map_get(&rt, lba) != dmr_map_get(&f->map, lba))
			break;
	KUNIT_EXPECT_EQ(test, lba, GCT_LOGICAL);
}

/* A relocation logged before a user write: the write still wins. */
static void dmr_gct_replay_reloc_then_overwrite(struct kunit *test)
{
	static const u32 a[] = { 20 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	u32 old, dst, user;
	struct dmr_replay r;
	u64 seq = 0;

	dmr_gct_heads(w);
	old = dmr_gct_user(f, &w[DMR_HEAD_COLD], 1, a, 1);
	dst = dmr_gct_reloc(f, &w[DMR_HEAD_GC], 2, a, &old, 1);

	/* up to the relocation: the block moved */
	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 20), dst + 1);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_COLD].valid, 0U);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_GC].valid, 1U);

	/* then a user write of it, on a third head */
	user = dmr_gct_user(f, &w[DMR_HEAD_HOT], 3, a, 1);
	dmr_gct_map_reset(f);
	seq = 0;
	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 3ULL);
	KUNIT_EXPECT_EQ(test, seq, 3ULL);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_MAGIC);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 20), user + 1);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_HOT].valid, 1U);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_COLD].valid, 0U);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_GC].valid, 0U);
	KUNIT_EXPECT_EQ(test, f->map.mapped, 1ULL);
}

/* A discard logged before a relocation of the discarded copy wins. */
static void dmr_gct_replay_discard_beats_reloc(struct kunit *test)
{
	static const u32 ab[] = { 30, 31 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	u32 old, dst, src[2];
	struct dmr_replay r;
	u64 seq = 0;

	dmr_gct_heads(w);
	old = dmr_gct_user(f, &w[DMR_HEAD_HOT], 1, ab, 2);
	dmr_gct_write(f, &w[DMR_HEAD_COLD], 2, NULL, NULL, 0, 30, 1);
	src[0] = old;
	src[1] = old + 1;
	dst = dmr_gct_reloc(f, &w[DMR_HEAD_GC], 3, ab, src, 2);

	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 3ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 30), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 31), dst + 2);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_HOT].valid, 0U);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_GC].valid, 1U);
	KUNIT_EXPECT_EQ(test, f->map.mapped, 1ULL);
}

/* A relocation of a block nothing else touched moves it, and only it. */
static void dmr_gct_replay_reloc_moves_untouched(struct kunit *test)
{
	static const u32 abc[] = { 40, 41, 42 }, b[] = { 41 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	u32 old, dst, src;
	struct dmr_replay r;
	u64 seq = 0;

	dmr_gct_heads(w);
	old = dmr_gct_user(f, &w[DMR_HEAD_HOT], 1, abc, 3);
	src = old + 1;
	dst = dmr_gct_reloc(f, &w[DMR_HEAD_GC], 2, b, &src, 1);

	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 40), old + 1);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 41), dst + 1);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 42), old + 3);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_HOT].valid, 2U);
	KUNIT_EXPECT_EQ(test, f->map.segs[DMR_HEAD_GC].valid, 1U);
	/* each head went past its units: summary and data blocks */
	KUNIT_EXPECT_EQ(test, pos[DMR_HEAD_HOT].offset, 4U);
	KUNIT_EXPECT_EQ(test, pos[DMR_HEAD_COLD].offset, 0U);
	KUNIT_EXPECT_EQ(test, pos[DMR_HEAD_GC].offset, 2U);
}

/* ------------------------------------------------------------------ */
/* multi-head replay */

/* Units of three heads with interleaved numbers apply in number order. */
static void dmr_gct_replay_merges_heads(struct kunit *test)
{
	/* head of the unit numbered i + 1 */
	static const u8 head[] = { 0, 0, 1, 2, 2, 2, 1, 0, 1 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	u32 i, lba[2], at, per_head[DMR_NR_HEADS] = {};
	struct dmr_replay r;
	struct dmr_map want;
	u64 seq = 0;

	dmr_gct_map_init(test, &want, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	dmr_gct_heads(w);
	for (i = 0; i < ARRAY_SIZE(head); i++) {
		lba[0] = 50 + (i * 3) % 4;	/* shared with other units */
		lba[1] = 100 + i;
		at = dmr_gct_user(f, &w[head[i]], i + 1, lba, 2);
		dmr_map_set(&want, lba[0], at);
		dmr_map_set(&want, lba[1], at + 1);
		per_head[head[i]]++;
	}
	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, (u64)ARRAY_SIZE(head));
	KUNIT_EXPECT_EQ(test, seq, (u64)ARRAY_SIZE(head));
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_MAGIC);
	for (i = 0; i < DMR_NR_HEADS; i++) {
		KUNIT_EXPECT_EQ(test, r.head_stop[i], DMR_LOG_BAD_MAGIC);
		KUNIT_EXPECT_EQ(test, pos[i].offset, 3 * per_head[i]);
	}
	/* lba 50 was last written by unit 9, on head 1 */
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 50), dmr_map_get(&want, 50));
	for (i = 0; i < GCT_LOGICAL; i++)
		if (dmr_map_get(&f->map, i) != dmr_map_get(&want, i))
			break;
	KUNIT_EXPECT_EQ(test, i, GCT_LOGICAL);
	KUNIT_EXPECT_EQ(test, f->map.mapped, want.mapped);
}

/* Unit 3 was never written: units 4 and 5, on other heads, are not applied. */
static void dmr_gct_replay_missing_unit_stops(struct kunit *test)
{
	static const u32 a[] = { 60 }, b[] = { 61 }, d[] = { 63 }, e[] = { 64 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	struct dmr_replay r;
	u64 seq = 0;

	dmr_gct_heads(w);
	dmr_gct_user(f, &w[0], 1, a, 1);
	dmr_gct_user(f, &w[1], 2, b, 1);
	/* unit 3 would have gone to head 2 */
	dmr_gct_user(f, &w[0], 4, d, 1);
	dmr_gct_user(f, &w[1], 5, e, 1);

	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, seq, 2ULL);
	KUNIT_EXPECT_NE(test, dmr_map_get(&f->map, 60), DMR_UNMAPPED);
	KUNIT_EXPECT_NE(test, dmr_map_get(&f->map, 61), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 63), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 64), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, r.head_stop[0], DMR_LOG_BAD_SEQ);	/* holds 4 */
	KUNIT_EXPECT_EQ(test, r.head_stop[1], DMR_LOG_BAD_SEQ);	/* holds 5 */
	KUNIT_EXPECT_EQ(test, r.head_stop[2], DMR_LOG_BAD_MAGIC);
	KUNIT_EXPECT_EQ(test, r.stop, DMR_LOG_BAD_SEQ);
	/* the heads stop on the units not applied */
	KUNIT_EXPECT_EQ(test, pos[0].offset, 2U);
	KUNIT_EXPECT_EQ(test, pos[1].offset, 2U);
	KUNIT_EXPECT_EQ(test, pos[2].offset, 0U);
	KUNIT_EXPECT_EQ(test, f->map.mapped, 2ULL);
}

/* Unit 3 is torn: nothing after it is applied, whatever its head. */
static void dmr_gct_replay_torn_unit_stops(struct kunit *test)
{
	static const u32 a[] = { 60 }, b[] = { 61 }, c[] = { 62 }, d[] = { 63 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	struct dmr_replay r;
	u64 seq = 0;
	u32 torn;

	dmr_gct_heads(w);
	dmr_gct_user(f, &w[0], 1, a, 1);
	dmr_gct_user(f, &w[2], 2, b, 1);
	torn = dmr_gct_user(f, &w[1], 3, c, 1);
	dmr_gct_user(f, &w[0], 4, d, 1);
	f->dev[((size_t)GCT_DATA_OFFSET + torn) * DMR_BLOCK_SIZE + 100] ^= 1;

	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, seq, 2ULL);
	KUNIT_EXPECT_EQ(test, r.head_stop[1], DMR_LOG_BAD_DATA);
	KUNIT_EXPECT_EQ(test, r.head_stop[0], DMR_LOG_BAD_SEQ);	/* holds 4 */
	KUNIT_EXPECT_FALSE(test, dmr_log_stop_benign(r.stop));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 62), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 63), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, f->map.mapped, 2ULL);
}

/*
 * Units numbered at or below the checkpoint's last one (left from an
 * earlier use of a reused segment) end their head's chain unapplied.
 */
static void dmr_gct_replay_stale_not_applied(struct kunit *test)
{
	static const u32 a[] = { 71 }, b[] = { 72 }, old[] = { 70 }, c[] = { 73 };
	const u32 seg5 = 5 * GCT_SEG_BLOCKS + 1;
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	struct dmr_replay r;
	u64 seq = 5;

	/* the checkpoint (units up to 5): lba 70 lives in segment 5 */
	dmr_seg_open(&f->map, 5, 1);
	dmr_map_set(&f->map, 70, seg5);
	dmr_seg_seal(&f->map, 5);

	dmr_gct_heads(w);
	dmr_gct_user(f, &w[0], 6, a, 1);
	dmr_gct_user(f, &w[0], 7, b, 1);
	dmr_gct_user(f, &w[0], 2, c, 1);	/* head 0 runs into old units */
	dmr_gct_user(f, &w[1], 3, old, 1);
	dmr_gct_user(f, &w[2], 5, old, 1);	/* == the checkpoint's */

	r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
	KUNIT_EXPECT_EQ(test, r.units, 2ULL);
	KUNIT_EXPECT_EQ(test, seq, 7ULL);
	KUNIT_EXPECT_EQ(test, r.head_stop[0], DMR_LOG_STALE);
	KUNIT_EXPECT_EQ(test, r.head_stop[1], DMR_LOG_STALE);
	KUNIT_EXPECT_EQ(test, r.head_stop[2], DMR_LOG_STALE);
	KUNIT_EXPECT_TRUE(test, dmr_log_stop_benign(r.stop));
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 70), seg5 + 1);
	KUNIT_EXPECT_NE(test, dmr_map_get(&f->map, 71), DMR_UNMAPPED);
	KUNIT_EXPECT_NE(test, dmr_map_get(&f->map, 72), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 73), DMR_UNMAPPED);
	KUNIT_EXPECT_EQ(test, f->map.segs[1].valid, 0U);
	KUNIT_EXPECT_EQ(test, f->map.segs[2].valid, 0U);
	KUNIT_EXPECT_EQ(test, f->map.segs[5].valid, 1U);
	KUNIT_EXPECT_EQ(test, pos[0].offset, 4U);
	KUNIT_EXPECT_EQ(test, pos[1].offset, 0U);
	KUNIT_EXPECT_EQ(test, f->map.mapped, 3ULL);
}

/*
 * The reuse rule lets a segment be written again while a checkpoint's map
 * still points into it, once what emptied it is durable: replay from that
 * checkpoint applies the relocation first (it is numbered before every
 * unit of the segment's next use), so the map leaves the old copies before
 * the new ones are mapped.  Had the relocation been lost, replay would
 * stop before it and map lba 70 onto lba 80's data: what the flush the
 * rule waits for prevents.
 */
static void dmr_gct_replay_into_reused_segment(struct kunit *test)
{
	static const u32 moved[] = { 70, 71 }, fresh[] = { 80 };
	const u32 seg5 = 5 * GCT_SEG_BLOCKS + 1;
	const u32 src[] = { seg5, seg5 + 1 };
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos w[DMR_NR_HEADS], pos[DMR_NR_HEADS];
	u32 fill[GCT_SEG_BLOCKS - 1], i, dst, at;
	struct dmr_replay r;
	u64 seq;
	int lost;

	for (i = 0; i < ARRAY_SIZE(fill); i++)
		fill[i] = 100 + i;
	dmr_gct_heads(w);
	/* GC moves lbas 70 and 71 out of segment 5 to its head (segment 2) */
	dst = dmr_gct_reloc(f, &w[DMR_HEAD_GC], 6, moved, src, 2);
	/* the hot head fills segment 0 and goes on in segment 5, reused */
	w[DMR_HEAD_HOT].next_segment = 5;
	dmr_gct_user(f, &w[DMR_HEAD_HOT], 7, fill, ARRAY_SIZE(fill));
	KUNIT_ASSERT_EQ(test, w[DMR_HEAD_HOT].segment, 5U);
	at = dmr_gct_user(f, &w[DMR_HEAD_HOT], 8, fresh, 1);
	KUNIT_ASSERT_EQ(test, at, seg5);	/* over lba 70's old copy */

	for (lost = 0; lost <= 1; lost++) {
		/* the checkpoint (units up to 5): both live in sealed segment 5 */
		dmr_gct_map_reset(f);
		dmr_seg_open(&f->map, 5, 1);
		dmr_map_set(&f->map, 70, seg5);
		dmr_map_set(&f->map, 71, seg5 + 1);
		dmr_seg_seal(&f->map, 5);
		if (lost)	/* the relocation unit never reached the media */
			memset(f->dev + ((size_t)GCT_DATA_OFFSET + dst - 1) *
			       DMR_BLOCK_SIZE, 0, DMR_BLOCK_SIZE);
		seq = 5;
		r = dmr_gct_replay(test, f, DMR_NR_HEADS, &seq, pos);
		if (lost) {
			KUNIT_EXPECT_EQ(test, r.units, 0ULL);
			KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 70), seg5 + 1);
			continue;
		}
		KUNIT_EXPECT_EQ(test, r.units, 3ULL);
		KUNIT_EXPECT_EQ(test, seq, 8ULL);
		KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 70), dst + 1);
		KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 71), dst + 2);
		KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 80), seg5 + 1);
		KUNIT_EXPECT_EQ(test, dmr_map_get(&f->map, 100), 2U);
		KUNIT_EXPECT_EQ(test, f->map.segs[5].valid, 1U);
		KUNIT_EXPECT_EQ(test, f->map.segs[5].seq, 8ULL);
		KUNIT_EXPECT_EQ(test, f->map.segs[2].valid, 2U);
		KUNIT_EXPECT_EQ(test, pos[DMR_HEAD_HOT].segment, 5U);
		KUNIT_EXPECT_EQ(test, pos[DMR_HEAD_HOT].offset, 2U);
	}
}

/* ------------------------------------------------------------------ */
/* the reuse rule and allocation */

/* An open segment that empties waits for its head; sealed, it is prefree. */
static void dmr_gct_reuse_open_then_sealed(struct kunit *test)
{
	const u32 b = GCT_SEG_BLOCKS;
	struct dmr_map m;
	u32 s, lba;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	m.ckpt_seq = 7;
	s = dmr_seg_alloc(&m);
	KUNIT_ASSERT_NE(test, s, DMR_NO_SEGMENT);
	KUNIT_EXPECT_TRUE(test, m.segs[s].flags & DMR_SEG_OPEN);
	KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 1);
	dmr_seg_open(&m, s, 1);
	KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 1);
	for (lba = 0; lba < 4; lba++)
		dmr_map_set(&m, lba, s * b + 1 + lba);
	for (lba = 0; lba < 4; lba++)
		dmr_map_unmap(&m, lba);
	KUNIT_EXPECT_EQ(test, m.segs[s].valid, 0U);
	KUNIT_EXPECT_FALSE(test, m.segs[s].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_EQ(test, m.nr_prefree, 0U);
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[s], 1000, 1000, 0));
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));

	dmr_seg_seal(&m, s);
	KUNIT_EXPECT_TRUE(test, m.segs[s].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_EQ(test, m.nr_prefree, 1U);
	KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 1);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));

	/* a segment only reserved, never written, is free again once sealed */
	s = dmr_seg_alloc(&m);
	KUNIT_ASSERT_NE(test, s, DMR_NO_SEGMENT);
	KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 2);
	dmr_seg_seal(&m, s);
	KUNIT_EXPECT_TRUE(test, dmr_seg_is_free(&m.segs[s]));
	KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 1);
	KUNIT_EXPECT_EQ(test, m.nr_prefree, 1U);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
}

/*
 * Reusable only DMR_REUSE_CHECKPOINTS checkpoints after it was sealed (no
 * slot's replay reaches it) and a flush after it emptied (what emptied it
 * is durable), with no read in flight.
 */
static void dmr_gct_reuse_counts_checkpoints(struct kunit *test)
{
	const u32 b = GCT_SEG_BLOCKS;
	struct dmr_map m;
	struct dmr_seg copy;
	u32 sa, sb, head;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	m.ckpt_seq = 7;
	m.flush_seq = 30;
	sa = dmr_seg_alloc(&m);
	sb = dmr_seg_alloc(&m);
	head = dmr_seg_alloc(&m);
	KUNIT_ASSERT_NE(test, head, DMR_NO_SEGMENT);
	dmr_seg_open(&m, sa, 1);
	dmr_seg_open(&m, sb, 2);
	dmr_seg_open(&m, head, 3);
	dmr_map_set(&m, 10, sa * b + 1);
	dmr_map_set(&m, 11, sb * b + 1);
	dmr_map_set(&m, 12, sb * b + 2);
	dmr_seg_seal(&m, sa);		/* both sealed at checkpoint 7 */
	dmr_seg_seal(&m, sb);

	/* sealed with valid blocks: never reusable */
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sa], 1000, 1000, 0));
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sb], 1000, 1000, 0));

	/* sa empties at once (an overwrite): two checkpoints from its seal */
	dmr_map_set(&m, 10, head * b + 1);
	KUNIT_EXPECT_TRUE(test, m.segs[sa].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_CKPT], 1U);
	KUNIT_EXPECT_EQ(test, dmr_seg_reuse_wait(&m.segs[sa], 8, 1000),
			DMR_REUSE_CKPT);
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sa], 7, 1000, 0));
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sa], 8, 1000, 0));
	KUNIT_EXPECT_TRUE(test, dmr_seg_reusable(&m.segs[sa],
						 7 + DMR_REUSE_CHECKPOINTS, 31, 0));
	KUNIT_EXPECT_TRUE(test, dmr_seg_reusable(&m.segs[sa], 100, 100, 0));
	/* ... and a flush since it emptied: the overwrite's unit is durable */
	KUNIT_EXPECT_EQ(test, dmr_seg_reuse_wait(&m.segs[sa], 100, 30),
			DMR_REUSE_FLUSH);
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sa], 100, 30, 0));
	/* ... and not while a read to it is in flight */
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sa],
						  7 + DMR_REUSE_CHECKPOINTS, 31, 1));

	/*
	 * sb empties long after its seal (a discard, at checkpoint 20 and
	 * flush 40): no checkpoint is needed any more, only a flush.
	 */
	dmr_map_ckpt_done(&m, 20);
	/* sa now only waits for a flush since it emptied (flush 31) */
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_CKPT], 0U);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_FLUSH], 1U);
	while (m.flush_seq < 40)
		dmr_map_flush_done(&m);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_READY], 1U);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
	dmr_map_unmap(&m, 11);
	KUNIT_EXPECT_FALSE(test, m.segs[sb].flags & DMR_SEG_PREFREE);
	dmr_map_unmap(&m, 12);
	KUNIT_EXPECT_TRUE(test, m.segs[sb].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_EQ(test, m.nr_prefree, 2U);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_FLUSH], 1U);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_READY], 1U);
	KUNIT_EXPECT_EQ(test, dmr_seg_reuse_wait(&m.segs[sb], 20, 40),
			DMR_REUSE_FLUSH);
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[sb], 20, 40, 0));
	KUNIT_EXPECT_EQ(test, dmr_seg_reuse_wait(&m.segs[sb], 20, 41),
			DMR_REUSE_READY);
	KUNIT_EXPECT_TRUE(test, dmr_seg_reusable(&m.segs[sb], 20, 41, 0));

	/* prefree or not, a segment holding a valid block is refused */
	copy = m.segs[sb];
	copy.valid = 1;
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&copy, 1000, 1000, 0));
	/* a free segment is not "reusable": it is free already */
	KUNIT_EXPECT_FALSE(test, dmr_seg_reusable(&m.segs[GCT_NR_SEGS - 1], 1000,
						  1000, 0));

	/* freed, it counts as free again */
	dmr_map_flush_done(&m);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_READY], 2U);
	KUNIT_ASSERT_TRUE(test, dmr_seg_reusable(&m.segs[sa], m.ckpt_seq,
						 m.flush_seq, 0));
	dmr_seg_make_free(&m, sa);
	KUNIT_EXPECT_TRUE(test, dmr_seg_is_free(&m.segs[sa]));
	KUNIT_EXPECT_EQ(test, m.nr_prefree, 1U);
	KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_READY], 1U);
	KUNIT_EXPECT_EQ(test, dmr_seg_ready_first(&m), sb);
	KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 2);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));

	/* at load nothing is known: every written segment waits two checkpoints */
	dmr_map_load_states(&m);
	KUNIT_EXPECT_TRUE(test, m.segs[sb].flags & DMR_SEG_PREFREE);
	KUNIT_EXPECT_EQ(test, dmr_seg_reuse_wait(&m.segs[sb], 21, 1000),
			DMR_REUSE_CKPT);
	KUNIT_EXPECT_TRUE(test, dmr_seg_reusable(&m.segs[sb],
						 20 + DMR_REUSE_CHECKPOINTS, 42, 0));
}

/*
 * Allocation hands out free segments only, each once, in the order they
 * became free (here rotated by @start segments reserved and given back
 * first), from the free list: a segment freed by the reuse rule joins it
 * last.
 */
static void dmr_gct_alloc_skips_unfree(struct kunit *test)
{
	const u32 b = GCT_SEG_BLOCKS;
	bool was_free[GCT_NR_SEGS], given[GCT_NR_SEGS];
	u32 start, s, prefree, open, sealed, reserved, n;
	struct dmr_map m;

	for (start = 0; start < GCT_NR_SEGS; start++) {
		dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
		for (n = 0; n < start; n++)
			dmr_seg_seal(&m, dmr_seg_alloc(&m));	/* reserved, given back */
		prefree = dmr_seg_alloc(&m);
		open = dmr_seg_alloc(&m);
		sealed = dmr_seg_alloc(&m);
		reserved = dmr_seg_alloc(&m);
		KUNIT_ASSERT_NE(test, reserved, DMR_NO_SEGMENT);
		KUNIT_EXPECT_EQ(test, prefree, start);
		KUNIT_EXPECT_EQ(test, reserved, (start + 3) % GCT_NR_SEGS);
		dmr_seg_open(&m, prefree, 1);
		dmr_seg_open(&m, open, 2);
		dmr_seg_open(&m, sealed, 3);
		dmr_map_set(&m, 1, prefree * b + 1);
		dmr_map_set(&m, 2, sealed * b + 1);
		dmr_seg_seal(&m, prefree);
		dmr_seg_seal(&m, sealed);
		dmr_map_set(&m, 1, open * b + 1);
		KUNIT_ASSERT_TRUE(test, m.segs[prefree].flags & DMR_SEG_PREFREE);

		for (s = 0; s < GCT_NR_SEGS; s++) {
			was_free[s] = dmr_seg_is_free(&m.segs[s]);
			given[s] = false;
		}
		KUNIT_EXPECT_EQ(test, m.nr_free, GCT_NR_SEGS - 4);
		for (n = 0; (s = dmr_seg_alloc(&m)) != DMR_NO_SEGMENT; n++) {
			KUNIT_ASSERT_TRUE(test, s < GCT_NR_SEGS && n < GCT_NR_SEGS);
			KUNIT_EXPECT_TRUE(test, was_free[s]);
			KUNIT_EXPECT_FALSE(test, given[s]);
			KUNIT_EXPECT_EQ(test, s, (start + 4 + n) % GCT_NR_SEGS);
			given[s] = true;
		}
		KUNIT_EXPECT_EQ(test, n, GCT_NR_SEGS - 4);
		KUNIT_EXPECT_EQ(test, m.nr_free, 0U);
		KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));

		/* once the reuse rule allows it, the prefree one is handed out */
		dmr_map_ckpt_done(&m, m.ckpt_seq + DMR_REUSE_CHECKPOINTS);
		dmr_map_flush_done(&m);
		KUNIT_EXPECT_EQ(test, m.nr_wait[DMR_REUSE_READY], 1U);
		KUNIT_EXPECT_EQ(test, dmr_seg_ready_first(&m), prefree);
		KUNIT_ASSERT_TRUE(test, dmr_seg_reusable(&m.segs[prefree], m.ckpt_seq,
							 m.flush_seq, 0));
		dmr_seg_make_free(&m, prefree);
		KUNIT_EXPECT_EQ(test, dmr_seg_alloc(&m), prefree);
		KUNIT_EXPECT_EQ(test, dmr_seg_alloc(&m), DMR_NO_SEGMENT);
		KUNIT_EXPECT_EQ(test, m.nr_prefree, 0U);
		KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
	}
	/* with tracking off (loading), nothing is handed out */
	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	m.track = false;
	KUNIT_EXPECT_EQ(test, dmr_seg_alloc(&m), DMR_NO_SEGMENT);
}

/* ------------------------------------------------------------------ */
/* accounting under a random workload */

#define GCT_SIM_SEGS		16U
#define GCT_SIM_SEG_BLOCKS	32U
#define GCT_SIM_LOGICAL		200U
#define GCT_SIM_STEPS		4000U
#define GCT_SIM_RESERVE		2U	/* free segments user heads leave to GC */
#define GCT_SIM_READS		4U	/* reads in flight, at most */

/**
 * struct dmr_gct_sim - a model of the writer, GC, reads and checkpoints
 * @m: the map
 * @seg: each head's open segment, or DMR_NO_SEGMENT
 * @off: next block in it
 * @seq: log sequence number, one per block written
 * @rng: xorshift32 state
 * @emptied: the flush count at which each prefree segment emptied
 * @sealed: the checkpoint at which each segment was last sealed
 * @was_prefree: each segment's prefree flag after the previous step
 * @was_open: each segment's open flag after the previous step
 * @inflight: a sealed segment whose write is still in flight
 *	(DMR_SEG_MEM), or DMR_NO_SEGMENT
 * @readers: per segment, reads in flight to it
 * @reads: the segment of each read in flight
 * @nr_reads: reads in flight
 * @writes: user blocks written
 * @moved: moves committed
 * @lost: moves that lost to a write or discard
 * @collected: victims emptied
 * @freed: segments made free
 * @kept: times a free pass left a segment on the ready list for its reads
 * @reaped: in-flight writes completed after their segment was sealed
 */
struct dmr_gct_sim {
	struct dmr_map m;
	u32 seg[DMR_NR_HEADS];
	u32 off[DMR_NR_HEADS];
	u64 seq;
	u32 rng;
	u64 emptied[GCT_SIM_SEGS];
	u64 sealed[GCT_SIM_SEGS];
	bool was_prefree[GCT_SIM_SEGS];
	bool was_open[GCT_SIM_SEGS];
	u32 inflight;
	u32 readers[GCT_SIM_SEGS];
	u32 reads[GCT_SIM_READS];
	u32 nr_reads;
	u32 writes, moved, lost, collected, freed, kept, reaped;
};

static u32 dmr_gct_rand(struct dmr_gct_sim *s)
{
	u32 x = s->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->rng = x;
	return x;
}

/* The next block of head @h, opening a segment if needed (or DMR_NO_SEGMENT). */
static u32 dmr_gct_sim_block(struct dmr_gct_sim *s, unsigned int h)
{
	struct dmr_map *m = &s->m;

	if (s->seg[h] == DMR_NO_SEGMENT) {
		u32 seg;

		if (h != DMR_HEAD_GC && m->nr_free <= GCT_SIM_RESERVE)
			return DMR_NO_SEGMENT;
		seg = dmr_seg_alloc(m);
		if (seg == DMR_NO_SEGMENT)
			return DMR_NO_SEGMENT;
		dmr_seg_open(m, seg, s->seq + 1);
		s->seg[h] = seg;
		s->off[h] = 0;
	}
	s->seq++;
	return s->seg[h] * m->seg_blocks + s->off[h]++;
}

/*
 * Seal head @h's segment once its last block is mapped; half the time
 * its write is still in flight then (DMR_SEG_MEM until dmr_gct_sim_reap()).
 */
static void dmr_gct_sim_fill(struct dmr_gct_sim *s, unsigned int h)
{
	u32 seg = s->seg[h];

	if (seg == DMR_NO_SEGMENT || s->off[h] != s->m.seg_blocks)
		return;
	if (s->inflight == DMR_NO_SEGMENT && dmr_gct_rand(s) & 1) {
		dmr_seg_set_mem(&s->m, seg, true);
		s->inflight = seg;
	}
	dmr_seg_seal(&s->m, seg);
	s->seg[h] = DMR_NO_SEGMENT;
}

/* The write of the sealed segment in flight completes. */
static void dmr_gct_sim_reap(struct dmr_gct_sim *s)
{
	if (s->inflight == DMR_NO_SEGMENT)
		return;
	dmr_seg_set_mem(&s->m, s->inflight, false);
	s->inflight = DMR_NO_SEGMENT;
	s->reaped++;
}

/* A read of @lba starts (a count on its segment), or one in flight ends. */
static void dmr_gct_sim_read(struct dmr_gct_sim *s, u32 lba, bool start)
{
	u32 e = dmr_map_get(&s->m, lba), i;

	if (start) {
		if (e == DMR_UNMAPPED || s->nr_reads == GCT_SIM_READS)
			return;
		i = dmr_pba_segment(&s->m, e - 1);
		s->readers[i]++;
		s->reads[s->nr_reads++] = i;
	} else if (s->nr_reads) {
		i = lba % s->nr_reads;
		s->readers[s->reads[i]]--;
		s->reads[i] = s->reads[--s->nr_reads];
	}
}

static void dmr_gct_sim_write(struct dmr_gct_sim *s, u32 lba)
{
	unsigned int h = dmr_gct_rand(s) & 1 ? DMR_HEAD_HOT : DMR_HEAD_COLD;
	u32 pba = dmr_gct_sim_block(s, h);

	if (pba == DMR_NO_SEGMENT)
		return;		/* throttled */
	dmr_map_set(&s->m, lba, pba);
	s->writes++;
	dmr_gct_sim_fill(s, h);
}

/*
 * GC moves @lba: reads its copy; then @race 1 a user write of it, 2 a
 * discard of it; then it writes the copy to the GC head and commits.
 *
 * Return: whether dmr_move_commit() kept the move rule.
 */
static bool dmr_gct_sim_move(struct dmr_gct_sim *s, u32 lba, u32 race)
{
	struct dmr_map *m = &s->m;
	u32 e = dmr_map_get(m, lba), dst, now;
	bool moved;

	if (e == DMR_UNMAPPED)
		return true;
	dst = dmr_gct_sim_block(s, DMR_HEAD_GC);
	if (dst == DMR_NO_SEGMENT)
		return true;
	if (race == 1)
		dmr_gct_sim_write(s, lba);
	else if (race == 2)
		dmr_map_unmap(m, lba);
	now = dmr_map_get(m, lba);
	moved = dmr_move_commit(m, lba, e - 1, dst);
	dmr_gct_sim_fill(s, DMR_HEAD_GC);
	if (moved)
		s->moved++;
	else
		s->lost++;
	return moved == (now == e) && dmr_map_get(m, lba) == (moved ? dst + 1 : now);
}

/* Collect one victim: move every block still valid in it. */
static bool dmr_gct_sim_collect(struct dmr_gct_sim *s)
{
	struct dmr_map *m = &s->m;
	bool greedy = dmr_gct_rand(s) & 1;
	u32 v = dmr_gc_victim(m, greedy, s->seq);
	u32 lba, e;

	if (v == DMR_NO_SEGMENT)
		return true;
	for (lba = 0; lba < m->nr_logical && m->segs[v].valid; lba++) {
		e = dmr_map_get(m, lba);
		if (e != DMR_UNMAPPED && dmr_pba_segment(m, e - 1) == v &&
		    !dmr_gct_sim_move(s, lba, 0))
			return false;
	}
	if (m->segs[v].valid)
		return true;	/* GC ran out of space: goes on later */
	s->collected++;
	return m->segs[v].flags & DMR_SEG_PREFREE;
}

/*
 * A flush (or with @ckpt a checkpoint, which flushes too) completes: free
 * what the reuse rule allows, as dmr_gc_free_ready() does, from the map's
 * ready list, checking each against the model's own record, and that no
 * segment a scan finds reusable is left behind.  Return: NULL, or what
 * went wrong.
 */
static const char *dmr_gct_sim_flush(struct dmr_gct_sim *s, bool ckpt)
{
	struct dmr_map *m = &s->m;
	u32 i, n, next, reusable = 0;

	if (ckpt)
		dmr_map_ckpt_done(m, m->ckpt_seq + 1);
	dmr_map_flush_done(m);
	for (i = 0; i < m->nr_segs; i++)
		reusable += dmr_seg_reusable(&m->segs[i], m->ckpt_seq, m->flush_seq,
					     s->readers[i]);
	n = m->nr_wait[DMR_REUSE_READY];
	for (i = dmr_seg_ready_first(m); n; n--, i = next) {
		next = dmr_seg_next(m, i);
		if (s->readers[i]) {
			s->kept++;
			continue;
		}
		if (!dmr_seg_reusable(&m->segs[i], m->ckpt_seq, m->flush_seq, 0) ||
		    m->ckpt_seq < s->sealed[i] + DMR_REUSE_CHECKPOINTS ||
		    m->flush_seq <= s->emptied[i])
			return "the ready list holds a segment the reuse rule refuses";
		dmr_seg_make_free(m, i);
		s->freed++;
		reusable--;
	}
	return reusable ? "a reusable segment is not on the ready list" : NULL;
}

/* A head reserves a segment to go on in, and gives it back unused. */
static void dmr_gct_sim_reserve(struct dmr_gct_sim *s)
{
	u32 seg = dmr_seg_alloc(&s->m);

	if (seg != DMR_NO_SEGMENT)
		dmr_seg_seal(&s->m, seg);
}

/* GC finds a sealed segment inconsistent (rare: it is never collected again). */
static void dmr_gct_sim_nogc(struct dmr_gct_sim *s, u32 seg)
{
	if ((s->m.segs[seg].flags & DMR_SEG_GC_MASK) == DMR_SEG_USED)
		dmr_seg_gc_refuse(&s->m, seg, DMR_SEG_NOGC);
}

/*
 * Full scans of the segment table, for the lists to agree with: the
 * fewest valid blocks of a collectable segment (greedy's score; or
 * DMR_NO_SEGMENT if none is collectable), and the best cost-benefit score
 * of any collectable segment.
 */
static u32 dmr_gct_scan_fewest(const struct dmr_map *m)
{
	u32 i, fewest = DMR_NO_SEGMENT;

	for (i = 0; i < m->nr_segs; i++)
		if (dmr_seg_collectable(&m->segs[i], m->seg_blocks, m->wide) &&
		    (fewest == DMR_NO_SEGMENT || m->segs[i].valid < fewest))
			fewest = m->segs[i].valid;
	return fewest;
}

static u64 dmr_gct_scan_best(const struct dmr_map *m, u64 now_seq)
{
	u64 best = 0, score;
	u32 i;

	for (i = 0; i < m->nr_segs; i++) {
		if (!dmr_seg_collectable(&m->segs[i], m->seg_blocks, m->wide))
			continue;
		score = dmr_gc_score(m, &m->segs[i], now_seq, false);
		if (score > best)
			best = score;
	}
	return best;
}

/* The most segments a bucket of collectable ones holds. */
static u32 dmr_gct_bucket_max(const struct dmr_map *m)
{
	u32 v, seg, n, most = 0;

	for (v = 0; v < m->seg_blocks && dmr_gc_move_cost(v, m->wide) < m->seg_blocks; v++) {
		seg = dmr_seg_bucket_first(m, v);
		for (n = 0; seg != DMR_NO_SEGMENT && n <= m->nr_segs; n++) {
			seg = dmr_seg_next(m, seg);
			if (seg == dmr_seg_bucket_first(m, v))
				seg = DMR_NO_SEGMENT;
		}
		most = max(most, n);
	}
	return most;
}

/*
 * The prefree segments by what they wait for, by a scan: what
 * dmr_gc_prefree_waiting() counted before the map kept lists.
 */
static bool dmr_gct_scan_prefree(const struct dmr_map *m)
{
	u32 n[DMR_REUSE_WAITS] = {}, i;

	for (i = 0; i < m->nr_segs; i++)
		if (m->segs[i].flags & DMR_SEG_PREFREE)
			n[dmr_seg_reuse_wait(&m->segs[i], m->ckpt_seq, m->flush_seq)]++;
	for (i = 0; i < DMR_REUSE_WAITS; i++)
		if (n[i] != m->nr_wait[i])
			return false;
	return true;
}

/*
 * The victim choices agree with full scans: greedy takes a segment with
 * the fewest valid blocks of any collectable one; cost-benefit takes a
 * collectable segment whenever there is one, scores at least the first
 * segment of every bucket, and the best of the device when no bucket
 * holds more segments than it looks at.
 *
 * Return: NULL, or which choice did not.
 */
static const char *dmr_gct_victims_agree(struct dmr_map *m, u64 now_seq)
{
	u32 fewest = dmr_gct_scan_fewest(m), v, i;
	u64 score;

	v = dmr_gc_victim(m, true, now_seq);
	if (fewest == DMR_NO_SEGMENT ? v != DMR_NO_SEGMENT :
	    v == DMR_NO_SEGMENT || m->segs[v].valid != fewest ||
	    !dmr_seg_collectable(&m->segs[v], m->seg_blocks, m->wide))
		return "greedy victim differs from a full scan";
	v = dmr_gc_victim(m, false, now_seq);
	if (v == DMR_NO_SEGMENT ? fewest != DMR_NO_SEGMENT :
	    !dmr_seg_collectable(&m->segs[v], m->seg_blocks, m->wide))
		return "cost-benefit missed a collectable segment";
	if (v == DMR_NO_SEGMENT)
		return NULL;
	score = dmr_gc_score(m, &m->segs[v], now_seq, false);
	for (i = 0; i < m->nr_segs; i++)
		if (dmr_seg_collectable(&m->segs[i], m->seg_blocks, m->wide) &&
		    dmr_seg_bucket_first(m, m->segs[i].valid) == i &&
		    dmr_gc_score(m, &m->segs[i], now_seq, false) > score)
			return "cost-benefit passed over the first segment of a bucket";
	if (dmr_gct_bucket_max(m) <= DMR_GC_CB_PER_BUCKET &&
	    score != dmr_gct_scan_best(m, now_seq))
		return "cost-benefit differs from a full scan";
	return NULL;
}

/*
 * The invariants, and when each prefree segment emptied.  Return: NULL,
 * or the first one broken.
 */
static const char *dmr_gct_sim_check(struct dmr_gct_sim *s)
{
	struct dmr_map *m = &s->m;
	u32 i, open = 0, sealed = 0, heads = 0;

	for (i = 0; i < m->nr_segs; i++) {
		const struct dmr_seg *g = &m->segs[i];
		bool prefree = g->flags & DMR_SEG_PREFREE;

		if (prefree && !s->was_prefree[i])
			s->emptied[i] = m->flush_seq;
		s->was_prefree[i] = prefree;
		if (s->was_open[i] && !(g->flags & DMR_SEG_OPEN))
			s->sealed[i] = m->ckpt_seq;
		s->was_open[i] = g->flags & DMR_SEG_OPEN;
		if (dmr_seg_is_free(g)) {
			if (g->valid || prefree)
				return "a free segment holds data";
		} else if (g->flags & DMR_SEG_OPEN) {
			open++;
		} else if (!prefree) {
			if (!g->valid)
				return "a sealed empty segment is not prefree";
			sealed++;
		}
	}
	for (i = 0; i < DMR_NR_HEADS; i++) {
		if (s->seg[i] == DMR_NO_SEGMENT)
			continue;
		if (!(m->segs[s->seg[i]].flags & DMR_SEG_OPEN))
			return "a head's segment is not open";
		heads++;
	}
	if (!dmr_map_lists_consistent(m))
		return "segment lists differ from a full scan";
	if (!dmr_gct_scan_prefree(m))
		return "prefree list counts differ from a full scan";
	if (!dmr_map_consistent(m) || open != heads ||
	    m->nr_free + m->nr_prefree + open + sealed != m->nr_segs)
		return "accounting";
	return dmr_gct_victims_agree(m, s->seq);
}

/* One step of the random workload (@op in 0 ... 199).  Return: NULL, or a broken rule. */
static const char *dmr_gct_sim_step(struct dmr_gct_sim *s, u32 op, u32 lba)
{
	if (op < 90) {
		dmr_gct_sim_write(s, lba);
	} else if (op < 110) {
		dmr_map_unmap(&s->m, lba);
	} else if (op < 146) {
		if (!dmr_gct_sim_move(s, lba, dmr_gct_rand(s) % 3))
			return "a move broke the move rule";
	} else if (op < 158) {
		if (!dmr_gct_sim_collect(s))
			return "a collection broke a rule";
	} else if (op < 178) {
		return dmr_gct_sim_flush(s, op < 166);
	} else if (op < 184) {
		dmr_gct_sim_reserve(s);
	} else if (op < 194) {
		dmr_gct_sim_read(s, lba, op < 189);
	} else if (op < 199) {
		dmr_gct_sim_reap(s);
	} else {
		dmr_gct_sim_nogc(s, lba % GCT_SIM_SEGS);
	}
	return NULL;
}

static const u32 dmr_gct_seeds[] = { 1, 0x2545f491, 0x9e3779b9, 0xdeadbeef };

static void dmr_gct_seed_desc(const u32 *seed, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "seed %#x", *seed);
}

KUNIT_ARRAY_PARAM(dmr_gct_seed, dmr_gct_seeds, dmr_gct_seed_desc);

/*
 * A seeded random workload of writes, discards, moves racing with them,
 * collections, flushes, checkpoints, reservations, reads in flight,
 * segments written after their seal and segments GC gives up on.  After
 * every step the accounting holds, the segment lists (buckets and
 * prefree lists) agree with a full scan of the segment table, and so do
 * the victim choices and the prefree counts.
 */
static void dmr_gct_random_accounting(struct kunit *test)
{
	struct dmr_gct_sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	const char *why = NULL;
	u32 step, bad = 0, op, lba;
	unsigned int h;

	if (!s)
		kunit_skip(test, "cannot allocate the model");
	s->rng = *(const u32 *)test->param_value;
	dmr_gct_map_init(test, &s->m, GCT_SIM_LOGICAL, GCT_SIM_SEGS,
			 GCT_SIM_SEG_BLOCKS);
	for (h = 0; h < DMR_NR_HEADS; h++)
		s->seg[h] = DMR_NO_SEGMENT;
	s->inflight = DMR_NO_SEGMENT;
	for (step = 1; step <= GCT_SIM_STEPS && !bad; step++) {
		op = dmr_gct_rand(s) % 200;
		lba = dmr_gct_rand(s) % GCT_SIM_LOGICAL;
		why = dmr_gct_sim_step(s, op, lba);
		if (!why)
			why = dmr_gct_sim_check(s);
		if (why)
			bad = step;
	}
	/* the first step that broke a rule or an invariant, and which */
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_STREQ(test, why ? why : "(none)", "(none)");
	/* and the workload went through every path */
	KUNIT_EXPECT_GT(test, s->writes, GCT_SIM_STEPS / 4);
	KUNIT_EXPECT_GT(test, s->moved, 0U);
	KUNIT_EXPECT_GT(test, s->lost, 0U);
	KUNIT_EXPECT_GT(test, s->collected, 0U);
	KUNIT_EXPECT_GT(test, s->freed, 0U);
	KUNIT_EXPECT_GT(test, s->kept, 0U);
	KUNIT_EXPECT_GT(test, s->reaped, 0U);
}

/* ------------------------------------------------------------------ */
/* policy contracts */

/*
 * Set a segment's state by hand.  The segment lists are out of date until
 * dmr_gct_victim() rebuilds them (dmr_map_lists_rebuild()).
 */
static void dmr_gct_set_seg(struct dmr_map *m, u32 seg, u32 flags, u32 valid,
			    u64 seq)
{
	m->segs[seg].flags = flags;
	m->segs[seg].valid = valid;
	m->segs[seg].seq = seq;
}

static u32 dmr_gct_victim(struct dmr_map *m, bool greedy, u64 now_seq)
{
	dmr_map_lists_rebuild(m);
	return dmr_gc_victim(m, greedy, now_seq);
}

/* A block of segment @seg stops being valid (an overwrite elsewhere). */
static void dmr_gct_drop(struct dmr_map *m, u32 seg)
{
	m->pages[0][0] = seg * m->seg_blocks + 1;
	m->mapped++;
	dmr_map_unmap(m, 0);
}

static void dmr_gct_victim_greedy(struct kunit *test)
{
	const u32 b = GCT_SEG_BLOCKS;
	struct dmr_map m;
	u32 s;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, 12, GCT_SEG_BLOCKS);
	/* never victims, whatever their counts and ages */
	dmr_gct_set_seg(&m, 0, 0, 0, 0);				/* free */
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED | DMR_SEG_OPEN, 1, 1);	/* a head's */
	dmr_gct_set_seg(&m, 2, DMR_SEG_OPEN, 0, 0);			/* reserved */
	dmr_gct_set_seg(&m, 3, DMR_SEG_USED | DMR_SEG_MEM, 1, 1);
	dmr_gct_set_seg(&m, 4, DMR_SEG_USED | DMR_SEG_PREFREE, 0, 1);
	dmr_gct_set_seg(&m, 5, DMR_SEG_USED | DMR_SEG_NOGC, 1, 1);
	dmr_gct_set_seg(&m, 6, DMR_SEG_USED, b - 1, 1);		/* full */
	for (s = 7; s < 12; s++)
		dmr_gct_set_seg(&m, s, 0, 0, 0);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), DMR_NO_SEGMENT);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 100), DMR_NO_SEGMENT);
	for (s = 0; s < 12; s++)
		KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&m.segs[s], b, false));
	/* the full one is a GC candidate but for its move cost: in a bucket */
	KUNIT_EXPECT_EQ(test, m.nr_bucketed, 1U);
	KUNIT_EXPECT_EQ(test, dmr_seg_fewest_valid(&m), 6U);

	/*
	 * The fewest valid blocks wins, whatever the age; on a tie, the
	 * segment that has had its count longest (here: joined its bucket
	 * first, in segment order at the rebuild).
	 */
	dmr_gct_set_seg(&m, 7, DMR_SEG_USED, 20, 10);
	dmr_gct_set_seg(&m, 8, DMR_SEG_USED, 9, 60);
	dmr_gct_set_seg(&m, 9, DMR_SEG_USED, 30, 1);	/* oldest: no matter */
	dmr_gct_set_seg(&m, 10, DMR_SEG_USED, 9, 40);
	dmr_gct_set_seg(&m, 11, DMR_SEG_USED, 12, 50);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), 8U);
	/* a non-candidate with fewer valid blocks never wins */
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED | DMR_SEG_OPEN, 0, 0);
	dmr_gct_set_seg(&m, 3, DMR_SEG_USED | DMR_SEG_MEM, 0, 0);
	dmr_gct_set_seg(&m, 5, DMR_SEG_USED | DMR_SEG_NOGC, 0, 0);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), 8U);
	/* losing a block moves a segment down a bucket: 10 wins now */
	dmr_gct_drop(&m, 10);
	KUNIT_EXPECT_EQ(test, m.segs[10].valid, 8U);
	KUNIT_EXPECT_EQ(test, dmr_gc_victim(&m, true, 100), 10U);
	KUNIT_EXPECT_TRUE(test, dmr_map_lists_consistent(&m));
	/* ... and one that joins its bucket goes behind: 8 still waits */
	dmr_gct_drop(&m, 8);
	KUNIT_EXPECT_EQ(test, dmr_gc_victim(&m, true, 100), 10U);
	/* written again once its write completes (DMR_SEG_MEM cleared) */
	dmr_seg_set_mem(&m, 3, false);
	KUNIT_EXPECT_EQ(test, m.segs[3].flags & DMR_SEG_GC_MASK, DMR_SEG_USED);
	KUNIT_EXPECT_EQ(test, dmr_gc_victim(&m, true, 100), 3U);
	dmr_seg_gc_refuse(&m, 3, DMR_SEG_NOGC);
	KUNIT_EXPECT_EQ(test, dmr_gc_victim(&m, true, 100), 10U);
	KUNIT_EXPECT_TRUE(test, dmr_map_lists_consistent(&m));

	/* the fullest segment that still gains a block is a candidate */
	for (s = 7; s < 12; s++)
		dmr_gct_set_seg(&m, s, 0, 0, 0);
	dmr_gct_set_seg(&m, 9, DMR_SEG_USED, b - 2, 1);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), 9U);
}

static void dmr_gct_victim_cost_benefit(struct kunit *test)
{
	const u32 b = GCT_SEG_BLOCKS;
	struct dmr_map m;
	u32 s;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, 4, GCT_SEG_BLOCKS);
	/* same valid count: the older one */
	dmr_gct_set_seg(&m, 0, DMR_SEG_USED, 16, 900);
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED, 16, 100);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 1000), 1U);
	KUNIT_EXPECT_GT(test, dmr_gc_score(&m, &m.segs[1], 1000, false),
			dmr_gc_score(&m, &m.segs[0], 1000, false));
	dmr_gct_set_seg(&m, 0, DMR_SEG_USED, 16, 100);
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED, 16, 900);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 1000), 0U);

	/*
	 * (1 - u) * age / u, in blocks as free * age / (valid + 1): young
	 * and nearly empty (4 valid of 64, age 11) scores 60 * 11 / 5 = 132;
	 * old and half full (32 valid, age 1001) 32 * 1001 / 33 = 970:
	 * cost-benefit takes the old one, greedy the young one.
	 */
	dmr_gct_set_seg(&m, 0, DMR_SEG_USED, 4, 990);
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED, 32, 0);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 1000), 1U);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 1000), 0U);
	/* half full and not much older (age 21: 32 * 21 / 33 = 20): the young one */
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED, 32, 980);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 1000), 0U);
	/* greedy scores are the blocks freed, whatever the age */
	KUNIT_EXPECT_EQ(test, dmr_gc_score(&m, &m.segs[0], 1000, true), (u64)(b - 4));
	KUNIT_EXPECT_EQ(test, dmr_gc_score(&m, &m.segs[1], 1000, true), (u64)(b - 32));

	/*
	 * Each bucket is looked at from the segment that has had its count
	 * longest, DMR_GC_CB_PER_BUCKET of them: in a bucket of more, an old
	 * segment that joined last is passed over until those before it
	 * leave.
	 */
	dmr_gct_map_init(test, &m, GCT_LOGICAL, DMR_GC_CB_PER_BUCKET + 1, b);
	for (s = 0; s < DMR_GC_CB_PER_BUCKET; s++)
		dmr_gct_set_seg(&m, s, DMR_SEG_USED, 32, 900 + s);
	dmr_gct_set_seg(&m, s, DMR_SEG_USED, 32, 10);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 1000), 0U);
	dmr_gct_drop(&m, 0);	/* 0 leaves the bucket of 32 */
	dmr_gct_drop(&m, 1);
	KUNIT_EXPECT_EQ(test, dmr_gc_victim(&m, false, 1000), DMR_GC_CB_PER_BUCKET);
}

/*
 * Issue 24 item 14: a recovery resumes the sequence 2^32 on (rule 4), and
 * ages must not count the jump.  The clock: one jump, a segment opened
 * before it, one after, none older than it is; nine jumps merge the
 * oldest two and nobody looks older than he is.
 */
static void dmr_gct_age_clock(struct kunit *test)
{
	const u64 J = 1ULL << 32;
	struct dmr_age_clock c = { };
	u64 from, to, born, now;
	u32 i;

	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 10, 110), 100ULL);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 110, 10), 0ULL);
	/* replay applied 500, the next unit is 500 + 2^32 + 1 */
	dmr_age_clock_jump(&c, 500, 501 + J);
	KUNIT_EXPECT_EQ(test, c.nr, 1U);
	KUNIT_EXPECT_TRUE(test, dmr_age_clock_valid(&c));
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 10, 500), 490ULL);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 10, 501 + J), 491ULL);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 10, 1000 + J), 990ULL);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 600 + J, 1000 + J), 400ULL);
	/* a load with nothing to jump over adds nothing */
	dmr_age_clock_jump(&c, 1000 + J, 1001 + J);
	KUNIT_EXPECT_EQ(test, c.nr, 1U);
	/* a crash right after the recovery: jumps back to back */
	dmr_age_clock_jump(&c, 500 + J, 501 + 2 * J);
	KUNIT_EXPECT_TRUE(test, dmr_age_clock_valid(&c));
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 10, 600 + 2 * J), 590ULL);

	/* nine jumps, 1000 units apart: one segment from before all of them */
	memset(&c, 0, sizeof(c));
	from = 1000;
	for (i = 0; i < DMR_AGE_JUMPS + 1; i++) {
		to = from + J + 1;
		dmr_age_clock_jump(&c, from, to);
		KUNIT_EXPECT_TRUE(test, dmr_age_clock_valid(&c));
		from = to + 999;
	}
	now = from;
	KUNIT_EXPECT_EQ(test, c.nr, (u32)DMR_AGE_JUMPS);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, 1, now), 999ULL + 1000 * (DMR_AGE_JUMPS + 1));
	/* born between the two merged ones: younger than it is, never older */
	born = 1000 + J + 1 + 500;
	KUNIT_EXPECT_LE(test, dmr_seq_age(&c, born, now), now - born - (DMR_AGE_JUMPS) * J);
	KUNIT_EXPECT_LT(test, dmr_seq_age(&c, born, now), J);
	/* born after the merged ones: exact */
	born = c.at[1] + 10;	/* the third jump's: six after it */
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, born, now),
			now - born - (u64)(DMR_AGE_JUMPS - 2) * J);
}

/* dmr_temp_classify() of @lba whose copy is in @seg, the estimate at 1000 */
static unsigned int dmr_gct_classify(struct dmr_map *m, u64 lba, u32 seg, u64 now)
{
	struct dmr_temp t = { .threshold = 1000 };

	return dmr_temp_classify(&t, m, lba, seg == DMR_NO_SEGMENT ? DMR_UNMAPPED :
				 (u64)seg * GCT_SEG_BLOCKS + 1, now);
}

/*
 * The write heat (issue 41, goal 4): a block's writes go to the hot head
 * only after three net short-lived judgements, and a long-lived one (or
 * a first write) takes one back.  Without heat, one judgement decides,
 * at 1.5 times the estimate instead of twice it.  Segment 0 holds
 * long-lived data (4900 units old, one block dead: 156800), segment 1
 * short-lived (100), segment 2 between the factors (1800 against the
 * estimate's 1000).
 */
static void dmr_gct_temp_heat(struct kunit *test)
{
	const u64 now = 5000, lba = 5;
	struct dmr_map m;
	u8 *heat;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, 4, GCT_SEG_BLOCKS);
	dmr_gct_set_seg(&m, 0, DMR_SEG_USED, GCT_SEG_BLOCKS - 1, 100);
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED, 1, 4900);
	dmr_gct_set_seg(&m, 2, DMR_SEG_USED, 1, 3200);
	/* no heat: one judgement, below 1.5 times the estimate */
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 1, now), (u32)DMR_HEAD_HOT);
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 2, now), (u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 0, now), (u32)DMR_HEAD_COLD);

	heat = kunit_kzalloc(test, dmr_heat_bytes(GCT_LOGICAL), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, heat);
	m.heat = heat;
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 1, now), (u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 2, now), (u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba), 2U);
	/* the third (1800 is short at twice the estimate) */
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 2, now), (u32)DMR_HEAD_HOT);
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 1, now), (u32)DMR_HEAD_HOT);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba), DMR_HEAT_MAX);
	/* its neighbours in the byte are untouched */
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba - 1), 0U);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba + 1), 0U);
	KUNIT_EXPECT_EQ(test, heat[lba >> 2], (u8)(DMR_HEAT_MAX << 2));
	/* a long life takes one back, a short one gives it again */
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 0, now), (u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba), 2U);
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, 1, now), (u32)DMR_HEAD_HOT);
	/* a first write (after a discard) is long-lived */
	KUNIT_EXPECT_EQ(test, dmr_gct_classify(&m, lba, DMR_NO_SEGMENT, now),
			(u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba), 2U);
	/* no estimate yet: long-lived; at 0 it stays 0 */
	KUNIT_EXPECT_EQ(test, dmr_temp_classify(&(struct dmr_temp){ 0 }, &m, lba + 1,
						1 * GCT_SEG_BLOCKS + 1, now),
			(u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba + 1), 0U);
	/* the last block of a byte, and the packing at the top bits */
	dmr_heat_set(heat, 7, DMR_HEAT_MAX);
	KUNIT_EXPECT_EQ(test, heat[1], (u8)(DMR_HEAT_MAX << 6 | 2 << 2));
	KUNIT_EXPECT_EQ(test, dmr_heat_bytes(5), 2ULL);
	KUNIT_EXPECT_EQ(test, dmr_heat_bytes(8), 2ULL);
}

/* dmr_large_split(): the whole segment-aligned ranges of a write */
static void dmr_gct_large_split(struct kunit *test)
{
	const u64 big = (1ULL << 40) * 256;	/* a block number past 32 bits */
	u64 first = 7;

	KUNIT_EXPECT_EQ(test, dmr_large_split(0, 256, 256, &first), 256ULL);
	KUNIT_EXPECT_EQ(test, first, 0ULL);
	/* one block off: no whole segment */
	KUNIT_EXPECT_EQ(test, dmr_large_split(1, 256, 256, &first), 0ULL);
	KUNIT_EXPECT_EQ(test, dmr_large_split(0, 255, 256, &first), 0ULL);
	/* the whole one inside, its ends left to the small heads */
	KUNIT_EXPECT_EQ(test, dmr_large_split(1, 512, 256, &first), 256ULL);
	KUNIT_EXPECT_EQ(test, first, 256ULL);
	KUNIT_EXPECT_EQ(test, dmr_large_split(200, 1000, 256, &first), 768ULL);
	KUNIT_EXPECT_EQ(test, first, 256ULL);
	KUNIT_EXPECT_EQ(test, dmr_large_split(big + 3, 4 * 256, 256, &first), 3 * 256ULL);
	KUNIT_EXPECT_EQ(test, first, big + 256);
	/* a segment of 2048 blocks (8 MiB) */
	KUNIT_EXPECT_EQ(test, dmr_large_split(2048, 4096, 2048, &first), 4096ULL);
	KUNIT_EXPECT_EQ(test, dmr_large_split(0, 0, 256, &first), 0ULL);
}

/*
 * dmr_heat_seed() after a load: a block in a segment a hot head opened
 * starts hot, every other block (cold segment, unmapped, a page never
 * allocated) at 0, whatever it held.
 */
static void dmr_gct_heat_seed(struct kunit *test)
{
	const u64 nr = 2 * DMR_MAP_NARROW_ENTRIES;
	struct dmr_map m;
	u32 **pages;
	u8 *heat;
	u64 lba;

	dmr_gct_map_init(test, &m, nr, 4, GCT_SEG_BLOCKS);
	heat = kunit_kzalloc(test, dmr_heat_bytes(nr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, heat);
	memset(heat, 0xff, dmr_heat_bytes(nr));
	m.heat = heat;
	pages = m.pages;
	m.segs[1].flags = DMR_SEG_USED | DMR_SEG_HOT;
	m.segs[2].flags = DMR_SEG_USED;
	pages[0][0] = 1 * GCT_SEG_BLOCKS + 1;		/* hot segment */
	pages[0][1] = 2 * GCT_SEG_BLOCKS + 5 + 1;	/* cold one */
	/* [2]: unmapped */
	pages[0][3] = 1 * GCT_SEG_BLOCKS + 9 + 1;
	pages[1] = NULL;			/* the second page: none */
	dmr_heat_seed(&m, 0);
	dmr_heat_seed(&m, 1);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, 0), DMR_HEAT_MAX);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, 1), 0U);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, 2), 0U);
	KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, 3), DMR_HEAT_MAX);
	for (lba = 4; lba < nr; lba++)
		KUNIT_EXPECT_EQ(test, dmr_heat_get(heat, lba), 0U);
}

/*
 * Item 14 in the victim choice and the temperature estimate.  A full old
 * segment opened before a recovery and a half-empty one opened after it:
 * counting the jump, the old one would score 2^32 units of age and
 * cost-benefit would move its 48 blocks; on the clock, the young one
 * frees more per block moved.  The temperature estimate is fed the
 * lifetime of a block's previous copy: never 2^32.
 */
static void dmr_gct_victim_after_recovery(struct kunit *test)
{
	const u64 J = 1ULL << 32, now = 1000 + J;
	struct dmr_temp t = { };
	struct dmr_map m;
	u32 v;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, 4, GCT_SEG_BLOCKS);
	dmr_age_clock_jump(&m.age, 500, 501 + J);
	dmr_gct_set_seg(&m, 0, DMR_SEG_USED, 48, 10);
	dmr_gct_set_seg(&m, 1, DMR_SEG_USED, 16, 600 + J);
	/* (64 - 48) * 991 / 49 = 323 against (64 - 16) * 401 / 17 = 1132 */
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, now), 1U);
	KUNIT_EXPECT_LT(test, dmr_gc_score(&m, &m.segs[0], now, false), 400ULL);

	/* a block in the old segment overwritten now: its life was 991 units */
	v = dmr_temp_classify(&t, &m, 0, 0 * GCT_SEG_BLOCKS + 1, now);
	KUNIT_EXPECT_EQ(test, v, (u32)DMR_HEAD_COLD);
	KUNIT_EXPECT_LT(test, t.threshold, 100000ULL);

	/* the jump counted (the clock before item 14): the old, full one */
	memset(&m.age, 0, sizeof(m.age));
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, now), 0U);
}

/*
 * Issue 24 item 5: segments written once (not collectable) are no reason
 * to give up, however many: DMR_NO_SEGMENT means that no segment of the
 * device is collectable, and one is found wherever it is, greedy or not,
 * with no search: on 2^16 + 5 segments, past the module's old window of
 * 65536 (2^17 would not fit one kmalloc under UML).
 */
static void dmr_gct_victim_whole_device(struct kunit *test)
{
	const u32 nr = (1U << 16) + 5, b = GCT_SEG_BLOCKS;
	struct dmr_map m;
	u32 s;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, nr, GCT_SEG_BLOCKS);
	for (s = 0; s < nr; s++)
		dmr_gct_set_seg(&m, s, DMR_SEG_USED, b - 1, 1);
	/* nothing collectable anywhere */
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), DMR_NO_SEGMENT);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 100), DMR_NO_SEGMENT);
	/* one candidate, far from the others: found, greedy or not */
	dmr_gct_set_seg(&m, nr - 2, DMR_SEG_USED, 40, 1);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), nr - 2);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 100), nr - 2);
	/* two: greedy the fewest valid blocks, cost-benefit the best score */
	dmr_gct_set_seg(&m, 10, DMR_SEG_USED, 60, 1);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), nr - 2);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 100), nr - 2);
	dmr_gct_set_seg(&m, 10, DMR_SEG_USED, 41, 0);
	dmr_gct_set_seg(&m, nr - 2, DMR_SEG_USED, 40, 99);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, true, 100), nr - 2);
	KUNIT_EXPECT_EQ(test, dmr_gct_victim(&m, false, 100), 10U);
}

/*
 * Issue 24: the greedy choice from the buckets has the score of a full
 * scan's (the fewest valid blocks of any collectable segment), and the
 * cost-benefit choice what dmr_gct_victims_agree() asks, on random maps
 * of random states: every segment state and valid count, segments moved
 * between lists one by one by the map's own functions.
 */
static void dmr_gct_victim_matches_scan(struct kunit *test)
{
	static const u32 states[] = {
		0, DMR_SEG_OPEN, DMR_SEG_USED | DMR_SEG_OPEN, DMR_SEG_USED,
		DMR_SEG_USED | DMR_SEG_MEM, DMR_SEG_USED | DMR_SEG_NOGC,
		DMR_SEG_USED | DMR_SEG_HOT,
	};
	const u32 nr = 300, b = GCT_SEG_BLOCKS;
	struct dmr_gct_sim *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	u32 round, i, seg, exact = 0;
	const char *why = NULL;
	struct dmr_map m;

	if (!r)
		kunit_skip(test, "cannot allocate the generator");
	r->rng = 0x1234567;
	dmr_gct_map_init(test, &m, GCT_LOGICAL, nr, b);
	for (round = 0; round < 40 && !why; round++) {
		/* from a few segments a bucket to many */
		u32 spread = round < 20 ? b : 8;

		for (i = 0; i < nr; i++) {
			u32 st = states[dmr_gct_rand(r) % ARRAY_SIZE(states)];
			u32 dead = dmr_gct_rand(r) % (dmr_gct_rand(r) % spread + 1);

			/* valid counts crowd near full, as on a real device */
			dmr_gct_set_seg(&m, i, st, st & DMR_SEG_USED ? b - 1 - dead : 0,
					dmr_gct_rand(r) % 1000);
		}
		dmr_map_lists_rebuild(&m);
		KUNIT_ASSERT_TRUE(test, dmr_map_lists_consistent(&m));
		/* then segments change state one by one, through dmr-map.c */
		for (i = 0; i < 200 && !why; i++) {
			seg = dmr_gct_rand(r) % nr;
			switch (dmr_gct_rand(r) % 4) {
			case 0:
				dmr_seg_set_mem(&m, seg, !(m.segs[seg].flags & DMR_SEG_MEM));
				break;
			case 1:
				if (m.segs[seg].flags & DMR_SEG_USED &&
				    !(m.segs[seg].flags & DMR_SEG_OPEN))
					dmr_seg_gc_refuse(&m, seg, DMR_SEG_NOGC);
				break;
			default:
				if (m.segs[seg].valid > 1)
					dmr_gct_drop(&m, seg);
			}
			if (!dmr_map_lists_consistent(&m))
				why = "segment lists differ from a full scan";
			else
				why = dmr_gct_victims_agree(&m, 1000);
			exact += dmr_gct_bucket_max(&m) <= DMR_GC_CB_PER_BUCKET;
		}
	}
	KUNIT_EXPECT_STREQ(test, why ? why : "(none)", "(none)");
	/* both kinds of map were seen: buckets looked at whole, and not */
	KUNIT_EXPECT_GT(test, exact, 0U);
	KUNIT_EXPECT_LT(test, exact, 40U * 200U);
}

/*
 * Issue 24 item 8: collecting must free more than moving costs, counting
 * a summary per relocation unit (DMR_SUMMARY_WORDS / 2 blocks each).
 */
static void dmr_gct_collectable_counts_summaries(struct kunit *test)
{
	const u32 per = DMR_SUMMARY_WORDS / 2;
	struct dmr_seg sg = { .flags = DMR_SEG_USED };

	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(0, false), 0U);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(1, false), 2U);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(per, false), per + 1);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(per + 1, false), per + 3);
	/* 1 MiB segments: one summary, as before */
	sg.valid = 254;
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&sg, 256, false));
	sg.valid = 255;
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&sg, 256, false));
	/* 8 MiB segments written once: 2045 valid would need 2050 blocks */
	sg.valid = 2045;
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&sg, 2048, false));
	sg.valid = 2043;	/* 2043 + 5 = 2048: gains nothing */
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&sg, 2048, false));
	sg.valid = 2042;
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&sg, 2048, false));
	/* the largest segments (1 GiB) */
	sg.valid = DMR_MAX_SEGMENT_BLOCKS - dmr_gc_move_cost(DMR_MAX_SEGMENT_BLOCKS, false) +
		   DMR_MAX_SEGMENT_BLOCKS;
	while (dmr_gc_move_cost(sg.valid, false) >= DMR_MAX_SEGMENT_BLOCKS)
		sg.valid--;
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&sg, DMR_MAX_SEGMENT_BLOCKS, false));
	sg.valid++;
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&sg, DMR_MAX_SEGMENT_BLOCKS, false));

	/* wide units (format 4): a relocation unit lists 252 blocks */
	KUNIT_EXPECT_EQ(test, dmr_unit_capacity(false, false), DMR_SUMMARY_WORDS);
	KUNIT_EXPECT_EQ(test, dmr_unit_capacity(false, true), per);
	KUNIT_EXPECT_EQ(test, dmr_unit_capacity(true, false), 504U);
	KUNIT_EXPECT_EQ(test, dmr_unit_capacity(true, true), 252U);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(252, true), 253U);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(253, true), 255U);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(504, true), 506U);
	KUNIT_EXPECT_EQ(test, dmr_gc_move_cost(504, false), 505U);
	/* 1 MiB segments: 254 valid move in 255 narrow, 256 wide */
	sg.valid = 254;
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&sg, 256, false));
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&sg, 256, true));
	sg.valid = 253;
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&sg, 256, true));
}

/*
 * Issue 24 item 6: watermarks the spare space cannot hold are refused,
 * the defaults never are, and a table line and a message set them alike.
 */
static void dmr_gct_high_max(struct kunit *test)
{
	struct dmr_gc_params p, d;
	struct dmr_geometry g;
	u32 max;

	/* the review's device: 255 segments of 256 KiB, 10% over-provisioning */
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(255 * 64 + 2 * 64, 64, 10, &g), DMR_GEO_OK);
	KUNIT_ASSERT_GE(test, g.nr_segments, 250U);
	max = dmr_gc_high_max(&g);
	dmr_gc_params_default(g.nr_segments, &d);
	KUNIT_EXPECT_GE(test, max, d.high);
	KUNIT_EXPECT_LT(test, max, 20U);
	p = d;
	dmr_gc_params_apply(&p, 120, 120);
	KUNIT_EXPECT_NOT_NULL(test, dmr_gc_params_check(g.nr_segments, max, &p));
	p = d;
	dmr_gc_params_apply(&p, 0, max);
	KUNIT_EXPECT_TRUE(test, !dmr_gc_params_check(g.nr_segments, max, &p));
	p = d;
	dmr_gc_params_apply(&p, 0, max + 1);
	KUNIT_EXPECT_NOT_NULL(test, dmr_gc_params_check(g.nr_segments, max, &p));
	/* more spare, higher bound */
	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(255 * 64 + 2 * 64, 64, 40, &g), DMR_GEO_OK);
	KUNIT_EXPECT_GT(test, dmr_gc_high_max(&g), 2 * max);
	/*
	 * Wide units pack fewer blocks behind each summary: 8 MiB segments
	 * hold 2045 data blocks narrow, 2043 wide.  A logical space of
	 * exactly 100 packed narrow segments needs 101 wide ones.
	 */
	g = (struct dmr_geometry){ .segment_blocks = 2048, .nr_segments = 200,
				   .logical_blocks = 2045 * 100 };
	dmr_gc_params_default(g.nr_segments, &d);
	KUNIT_ASSERT_LT(test, d.high, 45U);
	KUNIT_EXPECT_EQ(test, dmr_gc_high_max(&g), (200U - 100 - 2 * DMR_NR_HEADS) / 2);
	g.wide = true;
	KUNIT_EXPECT_EQ(test, dmr_gc_high_max(&g), (200U - 101 - 2 * DMR_NR_HEADS) / 2);

	/* one watermark alone moves the other only as far as it must */
	p = (struct dmr_gc_params){ .reserve = 4, .low = 5, .high = 5, .batch = 2 };
	dmr_gc_params_apply(&p, 10, 0);
	KUNIT_EXPECT_EQ(test, p.low, 10U);
	KUNIT_EXPECT_EQ(test, p.high, 10U);
	dmr_gc_params_apply(&p, 0, 7);
	KUNIT_EXPECT_EQ(test, p.low, 7U);
	KUNIT_EXPECT_EQ(test, p.high, 7U);
	dmr_gc_params_apply(&p, 0, 12);
	KUNIT_EXPECT_EQ(test, p.low, 7U);
	KUNIT_EXPECT_EQ(test, p.high, 12U);
	/* gc_high 3 alone: refused for gc_high, the one given */
	dmr_gc_params_apply(&p, 0, 3);
	KUNIT_EXPECT_STREQ(test, dmr_gc_params_check(1000, 1000, &p),
			   "gc_high must be at least the GC reserve");
}

/*
 * Issue 24 items 12 and 13: GC verifies a unit's data before it moves its
 * blocks, and a segment it could not read is left only until
 * dmr_seg_gc_retry_all(), while one it found inconsistent stays left.
 */
static void dmr_gct_gc_refuse_and_verify(struct kunit *test)
{
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_map m;
	struct dmr_unit *u;
	u8 *data;
	u32 s, crc[3];

	dmr_gct_map_init(test, &m, GCT_LOGICAL, 6, GCT_SEG_BLOCKS);
	for (s = 0; s < 6; s++)
		dmr_gct_set_seg(&m, s, DMR_SEG_USED, 10, 1);
	dmr_seg_gc_refuse(&m, 1, DMR_SEG_GCERR);
	dmr_seg_gc_refuse(&m, 2, DMR_SEG_NOGC);
	dmr_seg_gc_refuse(&m, 3, DMR_SEG_GCERR);
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&m.segs[1], GCT_SEG_BLOCKS, false));
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&m.segs[2], GCT_SEG_BLOCKS, false));
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&m.segs[0], GCT_SEG_BLOCKS, false));
	KUNIT_EXPECT_EQ(test, dmr_seg_gc_retry_all(&m), 2U);
	KUNIT_EXPECT_EQ(test, dmr_seg_gc_retry_all(&m), 0U);
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&m.segs[1], GCT_SEG_BLOCKS, false));
	KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&m.segs[3], GCT_SEG_BLOCKS, false));
	KUNIT_EXPECT_FALSE(test, dmr_seg_collectable(&m.segs[2], GCT_SEG_BLOCKS, false));
	/* freeing forgets both */
	m.segs[2].valid = 0;
	m.segs[2].flags |= DMR_SEG_PREFREE;
	dmr_seg_gc_refuse(&m, 2, DMR_SEG_GCERR);
	dmr_seg_make_free(&m, 2);
	KUNIT_EXPECT_EQ(test, m.segs[2].flags & (DMR_SEG_NOGC | DMR_SEG_GCERR), 0U);

	/* a unit's data against the checksum its summary carries */
	u = f->unit;
	data = kunit_kzalloc(test, 3 * DMR_BLOCK_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, data);
	memset(data, 0x5a, 3 * DMR_BLOCK_SIZE);
	dmr_unit_reset(u, DMR_UNIT_RELOC);
	u->nr_blocks = 3;
	u->data_csum = dmr_data_csum(data, 3);
	KUNIT_EXPECT_TRUE(test, dmr_unit_data_check(u, data, crc));
	data[2 * DMR_BLOCK_SIZE + 4095] ^= 1;	/* the last byte of the last block */
	KUNIT_EXPECT_FALSE(test, dmr_unit_data_check(u, data, crc));
	data[2 * DMR_BLOCK_SIZE + 4095] ^= 1;
	data[0] ^= 0x80;
	KUNIT_EXPECT_FALSE(test, dmr_unit_data_check(u, data, crc));
}

/*
 * dmr_seg_verify(), the check GC's victim gets beside the worker: a unit
 * is marked movable only where its summary is, it had a live block and
 * its data match; dead units are not checked; the walk stops where
 * dmr_gc_collect()'s does (a unit of an earlier use of the segment).
 */
static void dmr_gct_seg_verify(struct kunit *test)
{
	struct dmr_gct_dev *f = dmr_gct_dev_new(test);
	struct dmr_log_pos pos = { .segment = 1, .next_segment = 2 };
	static const u32 a[] = { 1, 2 }, b[] = { 3 }, c[] = { 4, 5 };
	u32 fa, fb, fc, i;
	u8 *ok = kunit_kzalloc(test, GCT_SEG_BLOCKS, GFP_KERNEL);
	u32 *crc = kunit_kzalloc(test, GCT_SEG_BLOCKS * sizeof(*crc), GFP_KERNEL);
	u8 *buf = f->dev + ((size_t)GCT_DATA_OFFSET + GCT_SEG_BLOCKS) * DMR_BLOCK_SIZE;
	u64 block0 = GCT_DATA_OFFSET + GCT_SEG_BLOCKS;
	u32 *l2p = f->map.pages[0];	/* GCT_LOGICAL: one page */

	KUNIT_ASSERT_NOT_NULL(test, ok);
	KUNIT_ASSERT_NOT_NULL(test, crc);
	fa = dmr_gct_user(f, &pos, 5, a, 2);
	fb = dmr_gct_user(f, &pos, 6, b, 1);
	fc = dmr_gct_user(f, &pos, 7, c, 2);
	l2p[1] = fa + 0 + 1;		/* a: one block live, one dead */
	l2p[2] = 0;
	l2p[3] = fb + 40;		/* b: overwritten elsewhere */
	l2p[4] = fc + 0 + 1;		/* c: live */
	l2p[5] = fc + 1 + 1;
	memset(ok, 0xee, GCT_SEG_BLOCKS);
	memset(crc, 0xee, GCT_SEG_BLOCKS * sizeof(*crc));
	KUNIT_EXPECT_EQ(test, dmr_seg_verify(buf, block0, GCT_SEG_BLOCKS,
					     GCT_SEG_BLOCKS, 5, f->uuid, &f->map,
					     f->unit, ok, crc), 2U);
	for (i = 0; i < GCT_SEG_BLOCKS; i++)
		KUNIT_EXPECT_EQ(test, ok[i],
				(u8)(i == fa - 1 - GCT_SEG_BLOCKS ||
				     i == fc - 1 - GCT_SEG_BLOCKS));
	/* the checked units' blocks' CRCs, dead a[1] included; b's not */
	for (i = 0; i < GCT_SEG_BLOCKS; i++) {
		bool in_a = i == fa - GCT_SEG_BLOCKS || i == fa + 1 - GCT_SEG_BLOCKS;
		bool in_c = i == fc - GCT_SEG_BLOCKS || i == fc + 1 - GCT_SEG_BLOCKS;

		KUNIT_EXPECT_EQ(test, crc[i], in_a || in_c ?
				dmr_block_digest(buf + (size_t)i * DMR_BLOCK_SIZE) : 0xeeeeeeeeU);
	}

	/* c's last data byte damaged: c is not movable, a still is */
	f->dev[((size_t)GCT_DATA_OFFSET + fc + 1) * DMR_BLOCK_SIZE + 4095] ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_seg_verify(buf, block0, GCT_SEG_BLOCKS,
					     GCT_SEG_BLOCKS, 5, f->uuid, &f->map,
					     f->unit, ok, crc), 2U);
	KUNIT_EXPECT_EQ(test, ok[fa - 1 - GCT_SEG_BLOCKS], 1);
	KUNIT_EXPECT_EQ(test, ok[fc - 1 - GCT_SEG_BLOCKS], 0);

	/* b dead: its damage is not looked at (and it is not moved anyway) */
	f->dev[((size_t)GCT_DATA_OFFSET + fc + 1) * DMR_BLOCK_SIZE + 4095] ^= 1;
	f->dev[((size_t)GCT_DATA_OFFSET + fb) * DMR_BLOCK_SIZE] ^= 1;
	KUNIT_EXPECT_EQ(test, dmr_seg_verify(buf, block0, GCT_SEG_BLOCKS,
					     GCT_SEG_BLOCKS, 5, f->uuid, &f->map,
					     f->unit, ok, crc), 2U);
	KUNIT_EXPECT_EQ(test, ok[fc - 1 - GCT_SEG_BLOCKS], 1);
	KUNIT_EXPECT_EQ(test, ok[fb - 1 - GCT_SEG_BLOCKS], 0);

	/*
	 * The map's page out of memory (map_cache): any unit may be live,
	 * so every one is checked (unchecked, a live one would count as
	 * failing its checksum when GC reads the page back): b's damage is
	 * found, a and c are movable.
	 */
	f->map.pages[0] = DMR_PAGE_OUT;
	KUNIT_EXPECT_EQ(test, dmr_seg_verify(buf, block0, GCT_SEG_BLOCKS,
					     GCT_SEG_BLOCKS, 5, f->uuid, &f->map,
					     f->unit, ok, crc), 3U);
	KUNIT_EXPECT_EQ(test, ok[fa - 1 - GCT_SEG_BLOCKS], 1);
	KUNIT_EXPECT_EQ(test, ok[fb - 1 - GCT_SEG_BLOCKS], 0);
	KUNIT_EXPECT_EQ(test, ok[fc - 1 - GCT_SEG_BLOCKS], 1);
	f->map.pages[0] = l2p;

	/* the segment's use began at seq 6: a is stale and ends the walk */
	KUNIT_EXPECT_EQ(test, dmr_seg_verify(buf, block0, GCT_SEG_BLOCKS,
					     GCT_SEG_BLOCKS, 6, f->uuid, &f->map,
					     f->unit, ok, crc), 0U);
	for (i = 0; i < GCT_SEG_BLOCKS; i++)
		KUNIT_EXPECT_EQ(test, ok[i], 0);
}

static void dmr_gct_head_may_alloc(struct kunit *test)
{
	const struct dmr_gc_params p = { .reserve = 6, .low = 8, .high = 10, .batch = 2 };
	struct dmr_gc_params d;

	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, 0));
	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, 6));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, 7));
	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_COLD, 6));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_COLD, 7));
	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_GC, 0));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_GC, 1));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_GC, 6));
	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_GC_HOT, 0));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_GC_HOT, 1));

	dmr_gc_params_default(1000, &d);
	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&d, DMR_HEAD_HOT, d.reserve));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&d, DMR_HEAD_HOT, d.reserve + 1));
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&d, DMR_HEAD_GC, 1));
}

/*
 * GC's two heads: which heads write relocations, which segments are hot,
 * and where a victim's blocks go.
 */
static u32 dmr_gct_readers(const void *ctx, u32 seg)
{
	return ((const u32 *)ctx)[seg];
}

/*
 * Issue 24 item 10: GC waiting for reads in flight to prefree segments
 * stops waiting when any one of them is left with none, not only the
 * first of the list (the wait then lasted its 100 ms timeout).
 */
static void dmr_gct_ready_reusable(struct kunit *test)
{
	u32 readers[GCT_NR_SEGS] = { }, seg[3], i;
	struct dmr_map m;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	KUNIT_EXPECT_FALSE(test, dmr_map_ready_reusable(&m, dmr_gct_readers, readers));
	for (i = 0; i < 3; i++) {
		seg[i] = dmr_seg_alloc(&m);
		KUNIT_ASSERT_NE(test, seg[i], DMR_NO_SEGMENT);
		dmr_seg_open(&m, seg[i], i + 1);
		dmr_map_set(&m, i, seg[i] * GCT_SEG_BLOCKS + 1);
		dmr_seg_seal(&m, seg[i]);
		dmr_map_unmap(&m, i);		/* empty: prefree */
		readers[seg[i]] = 1;
	}
	/* the reuse rule's checkpoints and flush: all three on the ready list */
	dmr_map_ckpt_done(&m, m.ckpt_seq + DMR_REUSE_CHECKPOINTS);
	dmr_map_flush_done(&m);
	KUNIT_ASSERT_EQ(test, m.nr_wait[DMR_REUSE_READY], 3U);
	KUNIT_EXPECT_FALSE(test, dmr_map_ready_reusable(&m, dmr_gct_readers, readers));
	/* the last one of the list loses its reader: done waiting */
	readers[seg[2]] = 0;
	KUNIT_EXPECT_TRUE(test, dmr_map_ready_reusable(&m, dmr_gct_readers, readers));
	readers[seg[2]] = 1;
	readers[seg[1]] = 0;
	KUNIT_EXPECT_TRUE(test, dmr_map_ready_reusable(&m, dmr_gct_readers, readers));
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
}

/* dmr_gc_head() with no temperature estimate: by the victim's flag */
#define GCT_GC_HEAD(m, s) dmr_gc_head(m, &(s), 100, &(struct dmr_temp){ 0 })

static void dmr_gct_gc_heads(struct kunit *test)
{
	struct dmr_map m;
	u32 seg[DMR_NR_HEADS], h;

	KUNIT_EXPECT_FALSE(test, dmr_head_is_gc(DMR_HEAD_HOT));
	KUNIT_EXPECT_FALSE(test, dmr_head_is_gc(DMR_HEAD_COLD));
	KUNIT_EXPECT_TRUE(test, dmr_head_is_gc(DMR_HEAD_GC));
	KUNIT_EXPECT_TRUE(test, dmr_head_is_gc(DMR_HEAD_GC_HOT));

	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	for (h = 0; h < DMR_NR_HEADS; h++) {
		seg[h] = dmr_seg_alloc(&m);
		KUNIT_ASSERT_NE(test, seg[h], DMR_NO_SEGMENT);
		dmr_seg_open(&m, seg[h], h + 1);
		dmr_seg_set_head(&m.segs[seg[h]], h);
		dmr_map_set(&m, h, seg[h] * GCT_SEG_BLOCKS + 1);
		dmr_seg_seal(&m, seg[h]);
	}
	/* the hot user head's and GC's hot head's segments are hot */
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_HOT]]), DMR_HEAD_GC_HOT);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_GC_HOT]]), DMR_HEAD_GC_HOT);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_COLD]]), DMR_HEAD_GC);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_GC]]), DMR_HEAD_GC);
	/* hot or cold, a segment is collectable all the same */
	for (h = 0; h < DMR_NR_HEADS; h++)
		KUNIT_EXPECT_TRUE(test, dmr_seg_collectable(&m.segs[seg[h]],
							    GCT_SEG_BLOCKS, false));

	/* reused by a cold head, a hot segment turns cold */
	dmr_map_unmap(&m, DMR_HEAD_HOT);
	dmr_map_ckpt_done(&m, m.ckpt_seq + DMR_REUSE_CHECKPOINTS);
	dmr_map_flush_done(&m);
	KUNIT_ASSERT_TRUE(test, dmr_seg_reusable(&m.segs[seg[DMR_HEAD_HOT]],
						 m.ckpt_seq, m.flush_seq, 0));
	dmr_seg_make_free(&m, seg[DMR_HEAD_HOT]);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_HOT]]), DMR_HEAD_GC);
	dmr_seg_open(&m, seg[DMR_HEAD_HOT], 9);
	dmr_seg_set_head(&m.segs[seg[DMR_HEAD_HOT]], DMR_HEAD_COLD);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_HOT]]), DMR_HEAD_GC);
	/* a load keeps it (item 14: checkpoints carry it, DMR_DISK_SEG_HOT) */
	dmr_map_load_states(&m);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_GC_HOT]]), DMR_HEAD_GC_HOT);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_HOT]]), DMR_HEAD_GC);
	/* a new use starts cold: a hot segment freed and opened again by replay */
	dmr_seg_open(&m, seg[DMR_HEAD_GC_HOT], 20);
	KUNIT_EXPECT_EQ(test, GCT_GC_HEAD(&m, m.segs[seg[DMR_HEAD_GC_HOT]]), DMR_HEAD_GC);
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
}

/*
 * Item 3 of issue 25: the blocks of a hot victim whose data is old go to
 * the cold GC head, so cold blocks the classifier sent to the hot head
 * leave the hot pool.  Birth: a user segment's is its seq; a GC segment's
 * the mean of its blocks' sources; replay mixes it the same way.
 */
static void dmr_gct_gc_head_birth(struct kunit *test)
{
	struct dmr_temp t = { .threshold = 1000 };
	struct dmr_map m;
	u32 hot, gch, cold, b = GCT_SEG_BLOCKS;

	dmr_gct_map_init(test, &m, GCT_LOGICAL, GCT_NR_SEGS, GCT_SEG_BLOCKS);
	hot = dmr_seg_alloc(&m);
	dmr_seg_open(&m, hot, 5000);
	dmr_seg_set_head(&m.segs[hot], DMR_HEAD_HOT);
	KUNIT_EXPECT_EQ(test, m.segs[hot].birth, 5000ULL);
	dmr_map_set(&m, 1, hot * b + 1);
	dmr_map_set(&m, 2, hot * b + 2);
	dmr_map_set(&m, 3, hot * b + 3);
	dmr_seg_seal(&m, hot);
	/* young data stays hot; at the threshold too; one past it goes cold */
	KUNIT_EXPECT_EQ(test, dmr_gc_head(&m, &m.segs[hot], 5100, &t), DMR_HEAD_GC_HOT);
	KUNIT_EXPECT_EQ(test, dmr_gc_head(&m, &m.segs[hot], 6000, &t), DMR_HEAD_GC_HOT);
	KUNIT_EXPECT_EQ(test, dmr_gc_head(&m, &m.segs[hot], 6001, &t), DMR_HEAD_GC);
	/* no estimate yet: hot */
	KUNIT_EXPECT_EQ(test, dmr_gc_head(&m, &m.segs[hot], 1ULL << 40,
					  &(struct dmr_temp){ 0 }), DMR_HEAD_GC_HOT);
	/* a recovery jump does not age it (item 14's clock) */
	dmr_age_clock_jump(&m.age, 5500, 5501 + (1ULL << 32));
	KUNIT_EXPECT_EQ(test, dmr_gc_head(&m, &m.segs[hot], 5900 + (1ULL << 32), &t),
			DMR_HEAD_GC_HOT);

	/* a cold victim's blocks go cold whatever their age */
	cold = dmr_seg_alloc(&m);
	dmr_seg_open(&m, cold, 7000);
	dmr_seg_set_head(&m.segs[cold], DMR_HEAD_COLD);
	dmr_map_set(&m, 4, cold * b + 1);
	dmr_seg_seal(&m, cold);
	KUNIT_EXPECT_EQ(test, dmr_gc_head(&m, &m.segs[cold], 7001, &t), DMR_HEAD_GC);

	/*
	 * moves mix the sources' births, weighted by the blocks held; on a
	 * log without jumps (7000 is in the one above: dmr_gct_birth_mix_jump
	 * mixes across jumps)
	 */
	m.age.nr = 0;
	gch = dmr_seg_alloc(&m);
	dmr_seg_open(&m, gch, 9000);
	dmr_seg_set_head(&m.segs[gch], DMR_HEAD_GC_HOT);
	KUNIT_EXPECT_EQ(test, m.segs[gch].birth, 9000ULL);
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(&m, 1, hot * b + 1, gch * b + 1));
	KUNIT_EXPECT_EQ(test, m.segs[gch].birth, 5000ULL);	/* the first sets it */
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(&m, 2, hot * b + 2, gch * b + 2));
	KUNIT_EXPECT_EQ(test, m.segs[gch].birth, 5000ULL);
	KUNIT_EXPECT_TRUE(test, dmr_move_commit(&m, 4, cold * b + 1, gch * b + 3));
	KUNIT_EXPECT_EQ(test, m.segs[gch].birth, 5666ULL);	/* (2 * 5000 + 7000) / 3 */
	/* a move the map refuses mixes nothing */
	KUNIT_EXPECT_FALSE(test, dmr_move_commit(&m, 3, hot * b + 9, gch * b + 4));
	KUNIT_EXPECT_EQ(test, m.segs[gch].birth, 5666ULL);
	/* an older source pulls the mean down */
	dmr_seg_birth_mix(&m.age, &m.segs[gch], 2000);
	KUNIT_EXPECT_EQ(test, m.segs[gch].birth, 4750ULL);	/* 5666 - 3666 / 4 */
	KUNIT_EXPECT_TRUE(test, dmr_map_consistent(&m));
}

/*
 * Births from both sides of a recovery jump average on the clock without
 * it (review 3, item 13): on raw sequence numbers the mean of 100 and
 * 600 + J was 350 + J / 2, inside the skipped range, and the segment's
 * age 0.
 */
static void dmr_gct_birth_mix_jump(struct kunit *test)
{
	const u64 J = 1ULL << 32;
	struct dmr_age_clock c = { };
	struct dmr_seg d = { };

	dmr_age_clock_jump(&c, 500, 501 + J);	/* 501 ... 500 + J skipped */
	d.valid = 1;
	d.birth = 100;
	dmr_seg_birth_mix(&c, &d, 600 + J);	/* 600 on the clock */
	KUNIT_EXPECT_EQ(test, d.birth, 350ULL);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, d.birth, 700 + J), 350ULL);
	/* a mean past the jump lands past it: (400 + 1501) / 2 = 950 */
	d.birth = 400;
	dmr_seg_birth_mix(&c, &d, 1501 + J);
	KUNIT_EXPECT_EQ(test, d.birth, 950 + J);
	KUNIT_EXPECT_EQ(test, dmr_seq_age(&c, d.birth, 1501 + J), 551ULL);
	/* exactly at the jump's end: the first sequence number after it */
	d.birth = 400;
	dmr_seg_birth_mix(&c, &d, 602 + J);	/* (400 + 602) / 2 = 501 */
	KUNIT_EXPECT_EQ(test, d.birth, 501 + J);
	/* weighted: 3 blocks at 100, one at 600 + J: 100 + 500 / 4 = 225 */
	d.valid = 3;
	d.birth = 100;
	dmr_seg_birth_mix(&c, &d, 600 + J);
	KUNIT_EXPECT_EQ(test, d.birth, 225ULL);
	/* both after the jump, or no jump: the plain mean */
	d.valid = 1;
	d.birth = 1000 + J;
	dmr_seg_birth_mix(&c, &d, 2000 + J);
	KUNIT_EXPECT_EQ(test, d.birth, 1500 + J);
	c.nr = 0;
	d.birth = 100;
	dmr_seg_birth_mix(&c, &d, 600 + J);
	KUNIT_EXPECT_EQ(test, d.birth, 350 + J / 2);
	/* two jumps (J, then 2J), the mean between them */
	dmr_age_clock_jump(&c, 500, 501 + J);
	dmr_age_clock_jump(&c, 1000 + J, 1001 + 3 * J);
	d.birth = 100;
	dmr_seg_birth_mix(&c, &d, 1300 + 3 * J);	/* 1300 on the clock */
	KUNIT_EXPECT_EQ(test, d.birth, 700 + J);	/* (100 + 1300) / 2 = 700 */
}

static void dmr_gct_gc_active(struct kunit *test)
{
	const struct dmr_gc_params p = { .reserve = 6, .low = 8, .high = 12, .batch = 2 };

	/* starts below low */
	KUNIT_EXPECT_FALSE(test, dmr_gc_active(&p, false, 8, 0));
	KUNIT_EXPECT_TRUE(test, dmr_gc_active(&p, false, 7, 0));
	KUNIT_EXPECT_TRUE(test, dmr_gc_active(&p, false, 7, 100));
	/* between the watermarks, keeps its state */
	KUNIT_EXPECT_FALSE(test, dmr_gc_active(&p, false, 10, 0));
	KUNIT_EXPECT_TRUE(test, dmr_gc_active(&p, true, 10, 1));
	/* stops once free and prefree reach high */
	KUNIT_EXPECT_FALSE(test, dmr_gc_active(&p, true, 10, 2));
	KUNIT_EXPECT_FALSE(test, dmr_gc_active(&p, true, 12, 0));
}

static void dmr_gct_params_check(struct kunit *test)
{
	const u32 batch = 3;
	const struct dmr_gc_params good = {
		.batch = batch,
		.reserve = DMR_GC_FLOOR + batch,
		.low = DMR_GC_FLOOR + batch,
		.high = DMR_GC_FLOOR + batch,
	};
	const u32 nr = 2 * good.high;
	const char *why[6];
	struct dmr_gc_params p;
	unsigned int i, j;

	KUNIT_EXPECT_TRUE(test, !dmr_gc_params_check(nr, nr, &good));
	KUNIT_EXPECT_TRUE(test, !dmr_gc_params_check(10 * nr, nr, &good));

	p = good;
	p.batch = 0;
	why[0] = dmr_gc_params_check(nr, nr, &p);
	p = good;
	p.reserve = DMR_GC_FLOOR + batch - 1;
	p.low = p.reserve;
	p.high = p.reserve;
	why[1] = dmr_gc_params_check(nr, nr, &p);
	p = good;
	p.low = good.reserve - 1;
	why[2] = dmr_gc_params_check(nr, nr, &p);
	p = good;
	p.high = good.low + 5;
	p.low = good.low + 6;
	why[3] = dmr_gc_params_check(4 * nr, 4 * nr, &p);
	why[4] = dmr_gc_params_check(nr - 1, nr, &good);
	why[5] = dmr_gc_params_check(nr, good.high - 1, &good);
	for (i = 0; i < ARRAY_SIZE(why); i++)
		KUNIT_ASSERT_NOT_NULL(test, why[i]);
	for (i = 0; i < ARRAY_SIZE(why); i++)
		for (j = i + 1; j < ARRAY_SIZE(why); j++)
			KUNIT_EXPECT_STRNEQ(test, why[i], why[j]);
}

/**
 * struct dmr_gct_dev_case - a device dm-remap can format
 * @name: description
 * @device_blocks: its size
 * @segment_blocks: its segment size
 */
struct dmr_gct_dev_case {
	const char *name;
	u64 device_blocks;
	u32 segment_blocks;
};

static const struct dmr_gct_dev_case dmr_gct_dev_cases[] = {
	{ "smallest, 256 KiB segments", 1216, 64 },
	{ "smallest, 1 MiB segments", 4864, 256 },
	{ "20 segments", 5376, 256 },
	{ "64 MiB", 16384, 256 },
	{ "1 GiB, RAID-5 stripes", 262144, 288 },
	{ "8 TiB, 8 MiB segments", 1ULL << 31, 2048 },
	{ "largest, ~16 TiB", 4303512319ULL, 256 },
};

static void dmr_gct_dev_desc(const struct dmr_gct_dev_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->name);
}

KUNIT_ARRAY_PARAM(dmr_gct_dev, dmr_gct_dev_cases, dmr_gct_dev_desc);

/* The default watermarks are accepted on every device that can be formatted. */
static void dmr_gct_params_default(struct kunit *test)
{
	const struct dmr_gct_dev_case *c = test->param_value;
	struct dmr_geometry g;
	struct dmr_gc_params p;
	const char *why;

	KUNIT_ASSERT_EQ(test, dmr_geometry_compute(c->device_blocks, c->segment_blocks,
						   DMR_DEFAULT_OVERPROVISION, &g),
			DMR_GEO_OK);
	dmr_gc_params_default(g.nr_segments, &p);
	why = dmr_gc_params_check(g.nr_segments, dmr_gc_high_max(&g), &p);
	KUNIT_EXPECT_STREQ(test, why ? why : "(accepted)", "(accepted)");
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_GC, 1));
	/* 1/512 of the segments, within 2 ... DMR_GC_BATCH_MAX (short bursts) */
	KUNIT_EXPECT_EQ(test, p.batch, clamp_t(u32, g.nr_segments / 512, 2,
					       DMR_GC_BATCH_MAX));
	KUNIT_EXPECT_LE(test, p.batch, DMR_GC_BATCH_MAX);
}

/*
 * The default batch at its boundaries (a size-dependent constant): 1/512
 * of the segments, at least 2, at most DMR_GC_BATCH_MAX (64) from 32768
 * segments on (32 GiB at 1 MiB segments) up to the 2^32 - 1 the format's
 * 32-bit counts allow.
 */
static void dmr_gct_batch_boundaries(struct kunit *test)
{
	static const u32 cases[][2] = {
		{ 16, 2 }, { 1023, 2 }, { 1536, 3 }, { 32767, 63 }, { 32768, 64 },
		{ 32769, 64 }, { 1U << 20, 64 }, { 1U << 24, 64 }, { ~0U, 64 },
	};
	struct dmr_gc_params p;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		dmr_gc_params_default(cases[i][0], &p);
		KUNIT_EXPECT_EQ(test, p.batch, cases[i][1]);
		/* the reserve holds GC's floor and a batch, low and high above it */
		KUNIT_EXPECT_EQ(test, p.reserve, DMR_GC_FLOOR + p.batch);
		KUNIT_EXPECT_GT(test, p.low, p.reserve);
		KUNIT_EXPECT_GE(test, p.high, p.low);
	}
}

/*
 * The map page cache's CLOCK: a used page gets a second chance, a page
 * dirty for the newest checkpoint slot never leaves (one dirty only for
 * the other may), a cache of dirty pages has no victim until a
 * checkpoint cleans one.
 */
static bool dmr_gct_pick_odd(void *ctx, u64 p)
{
	(*(u32 *)ctx)++;
	return p & 1;
}

/*
 * GC's read-ahead of map pages (dmr_pages_pick()): the pages of the
 * blocks, those @want names only, each once, ascending; when the room is
 * full it stops at the first block that needs another page, so the next
 * call goes on from there and no page is left out or read twice.
 */
static void dmr_gct_pages_pick(struct kunit *test)
{
	/* pages (shift 10): 5 3 5 1 4 7 3 9 1 11 */
	static const u64 lba[] = { 5120, 3073, 5200, 1024, 4096, 7168, 3072, 9216,
				   2047, 11264 };
	u64 pages[8];
	u32 used, calls = 0, k;

	k = dmr_pages_pick(lba, ARRAY_SIZE(lba), 10, dmr_gct_pick_odd, &calls, pages, 8,
			   &used);
	KUNIT_EXPECT_EQ(test, k, 6U);
	KUNIT_EXPECT_EQ(test, used, (u32)ARRAY_SIZE(lba));
	KUNIT_EXPECT_EQ(test, pages[0], 1ULL);
	KUNIT_EXPECT_EQ(test, pages[1], 3ULL);
	KUNIT_EXPECT_EQ(test, pages[2], 5ULL);
	KUNIT_EXPECT_EQ(test, pages[3], 7ULL);
	KUNIT_EXPECT_EQ(test, pages[4], 9ULL);
	KUNIT_EXPECT_EQ(test, pages[5], 11ULL);
	/* a page picked is not asked about again: 5, 3, 1, 4, 7, 9, 11 */
	KUNIT_EXPECT_EQ(test, calls, 7U);

	/* room for two: 5 and 3, then 1 (block 3) ends the call */
	k = dmr_pages_pick(lba, ARRAY_SIZE(lba), 10, dmr_gct_pick_odd, &calls, pages, 2,
			   &used);
	KUNIT_EXPECT_EQ(test, k, 2U);
	KUNIT_EXPECT_EQ(test, used, 3U);
	KUNIT_EXPECT_EQ(test, pages[0], 3ULL);
	KUNIT_EXPECT_EQ(test, pages[1], 5ULL);
	/*
	 * From there: 1, 7 (4 is not wanted), and 3 ends it (the module's
	 * @want says no to 3 by then: the call before read it in)
	 */
	k = dmr_pages_pick(lba + used, ARRAY_SIZE(lba) - used, 10, dmr_gct_pick_odd,
			   &calls, pages, 2, &used);
	KUNIT_EXPECT_EQ(test, k, 2U);
	KUNIT_EXPECT_EQ(test, used, 3U);
	KUNIT_EXPECT_EQ(test, pages[0], 1ULL);
	KUNIT_EXPECT_EQ(test, pages[1], 7ULL);
	/* nothing wanted, or no blocks: nothing picked, all looked at */
	k = dmr_pages_pick(lba + 4, 1, 10, dmr_gct_pick_odd, &calls, pages, 2, &used);
	KUNIT_EXPECT_EQ(test, k, 0U);
	KUNIT_EXPECT_EQ(test, used, 1U);
	k = dmr_pages_pick(lba, 0, 10, dmr_gct_pick_odd, &calls, pages, 2, &used);
	KUNIT_EXPECT_EQ(test, k, 0U);
	KUNIT_EXPECT_EQ(test, used, 0U);
}

static void dmr_gct_page_clock(struct kunit *test)
{
	struct dmr_page_clock c;
	u32 ring[3];
	u8 state[10], ref[10], dirty[10] = {};

	dmr_page_clock_init(&c, ring, state, ref, 3, 10);
	KUNIT_EXPECT_FALSE(test, dmr_page_clock_touch(&c, 1));
	dmr_page_clock_insert(&c, 1);
	dmr_page_clock_insert(&c, 2);
	dmr_page_clock_insert(&c, 3);
	KUNIT_EXPECT_EQ(test, c.nr, 3U);
	KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, 1));
	KUNIT_EXPECT_FALSE(test, dmr_page_clock_touch(&c, 4));
	/* 1 was used: it stays, its bit cleared; 2 goes */
	KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 0), 2U);
	KUNIT_EXPECT_EQ(test, c.nr, 2U);
	KUNIT_EXPECT_EQ(test, state[2], 0);
	KUNIT_EXPECT_EQ(test, state[1], (u8)DMR_PC_RESIDENT);
	KUNIT_EXPECT_EQ(test, ref[1], 0);
	KUNIT_EXPECT_FALSE(test, dmr_page_clock_touch(&c, 2));
	KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, 1));
	dmr_page_clock_insert(&c, 4);
	/* 1 used again; 3 is dirty for both slots: passed over; 4 goes */
	dirty[3] = DMR_DIRTY_ALL;
	KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 0), 4U);
	dmr_page_clock_insert(&c, 5);
	/* all dirty for slot 0, all used: no victim, the used bits cleared */
	dirty[1] = DMR_DIRTY_SLOT(0);
	dirty[5] = DMR_DIRTY_ALL;
	KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, 1));
	KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, 5));
	KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 0), DMR_NO_PAGE);
	KUNIT_EXPECT_EQ(test, c.nr, 3U);
	KUNIT_EXPECT_EQ(test, state[1], (u8)DMR_PC_RESIDENT);
	KUNIT_EXPECT_EQ(test, state[5], (u8)DMR_PC_RESIDENT);
	KUNIT_EXPECT_EQ(test, ref[1] | ref[3] | ref[5], 0);
	/* a checkpoint into slot 0 leaves 5 dirty for 1 only: it goes, 1 and 3 stay */
	dirty[5] = DMR_DIRTY_SLOT(1);
	KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 0), 5U);
	KUNIT_EXPECT_EQ(test, c.nr, 2U);
	KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, 1));
	KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, 3));

	/*
	 * A use from another thread (dmr_page_clock_ref(), the read path's)
	 * gives the same second chance; a page that comes in starts unused,
	 * whatever its byte held.
	 */
	dirty[1] = 0;
	dirty[3] = 0;
	WRITE_ONCE(ref[1], 0);
	WRITE_ONCE(ref[3], 0);
	dmr_page_clock_ref(&c, 1);
	KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 1), 3U);
	ref[6] = 1;
	dmr_page_clock_insert(&c, 6);
	KUNIT_EXPECT_EQ(test, ref[6], 0);
	dmr_page_clock_ref(&c, 1);
	KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 1), 6U);
	KUNIT_EXPECT_EQ(test, state[1], (u8)DMR_PC_RESIDENT);
}

/*
 * Pages read in one after another, none used again (a scan, or a hot set
 * that moved): the hand goes round, so the pages the cache held leave in
 * turn, then the first of the new ones.  Were a page read in left under
 * the hand, each would be the next victim, and 2 and 3 would stay for
 * ever.
 */
static void dmr_gct_page_clock_turns(struct kunit *test)
{
	static const u32 want[] = { 1, 2, 3, 4, 5, 6, 7 };
	struct dmr_page_clock c;
	u32 ring[4], i;
	u8 state[12], ref[12], dirty[12] = {};

	dmr_page_clock_init(&c, ring, state, ref, 3, 12);
	for (i = 1; i <= 3; i++)
		dmr_page_clock_insert(&c, i);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		dmr_page_clock_insert(&c, i + 4);	/* one over: trimmed */
		KUNIT_EXPECT_EQ(test, dmr_page_clock_victim(&c, dirty, 0), want[i]);
		KUNIT_EXPECT_EQ(test, c.nr, 3U);
	}
	/* the last three read in are the cache now */
	for (i = 8; i <= 10; i++)
		KUNIT_EXPECT_TRUE(test, dmr_page_clock_touch(&c, i));
}

static void dmr_gct_gc_decide(struct kunit *test)
{
	struct dmr_gc_params p;
	struct dmr_gc_state st;
	int a, b;

	dmr_gc_params_default(1000, &p);
	KUNIT_ASSERT_TRUE(test, !dmr_gc_params_check(1000, 1000, &p));

	/* nothing wanted: idle, whatever the state */
	st = (struct dmr_gc_state){ .nr_free = 0, .nr_prefree_ckpt = 1000,
				    .nr_prefree_readers = 5, .victim = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);
	st = (struct dmr_gc_state){ .nr_free = 100, .victim = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);

	/* a victim, GC above its floor, nothing waiting for a checkpoint */
	st = (struct dmr_gc_state){ .nr_free = p.low - 1, .victim = true,
				    .active = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_COLLECT);
	st = (struct dmr_gc_state){ .nr_free = DMR_GC_FLOOR + 1, .victim = true,
				    .user_waits = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_COLLECT);

	/*
	 * A user waited, and the reuse rule freed enough just now: it goes
	 * on (the throttle lets it), even with nothing to collect (a device
	 * of large segments only); one segment fewer and nothing can free
	 * space.  (Mutation: without the room check, ENOSPC with 146 free
	 * segments in test_large.py.)
	 */
	st = (struct dmr_gc_state){ .nr_free = p.reserve + 1, .user_waits = true };
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, st.nr_free));
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);
	st.victim = true;
	st.victim_fits = true;
	st.nr_prefree_ckpt = 1;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);
	st = (struct dmr_gc_state){ .nr_free = p.reserve, .user_waits = true };
	KUNIT_EXPECT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, st.nr_free));
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_STUCK);

	/* a user waits, prefree segments wait for a checkpoint, no collection */
	st = (struct dmr_gc_state){ .nr_free = 1, .nr_prefree_ckpt = 1,
				    .user_waits = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_CHECKPOINT);
	st = (struct dmr_gc_state){ .nr_free = 0, .nr_prefree_ckpt = 1,
				    .nr_prefree_readers = 1, .victim = true,
				    .user_waits = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_CHECKPOINT);
	/* many waiting for a checkpoint: checkpoint before collecting more */
	st = (struct dmr_gc_state){ .nr_free = p.low - 1, .nr_prefree_ckpt = 1000,
				    .victim = true, .active = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_CHECKPOINT);
	st.user_waits = true;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_CHECKPOINT);

	/*
	 * Segments that only wait for a flush: flushed (cheap) before any
	 * checkpoint, at once when a user waits, else once a batch waits.
	 */
	st = (struct dmr_gc_state){ .nr_free = 1, .nr_prefree_flush = 1,
				    .nr_prefree_ckpt = 1, .user_waits = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_FLUSH);
	st = (struct dmr_gc_state){ .nr_free = p.low - 1, .victim = true,
				    .nr_prefree_flush = p.batch - 1, .active = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_COLLECT);
	st.victim = false;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);
	st.nr_prefree_flush = p.batch;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_FLUSH);
	/* two batches waiting, for a flush or a checkpoint: no collection */
	st = (struct dmr_gc_state){ .nr_free = p.low - 1, .victim = true,
				    .nr_prefree_flush = p.batch,
				    .nr_prefree_ckpt = p.batch, .active = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_FLUSH);
	st.nr_prefree_flush = p.batch - 1;
	st.nr_prefree_ckpt = p.batch + 1;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_CHECKPOINT);

	/* a user waits and only reads in flight hold space */
	st = (struct dmr_gc_state){ .nr_free = 0, .nr_prefree_readers = 2,
				    .user_waits = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_WAIT_READERS);
	st.victim = true;	/* below GC's floor: cannot collect it */
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_WAIT_READERS);

	/* a user waits and nothing can free space */
	st = (struct dmr_gc_state){ .nr_free = 0, .user_waits = true };
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_STUCK);
	st.victim = true;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_STUCK);
	/* the same without a waiting user is not stuck: nothing is wanted */
	st.user_waits = false;
	st.active = true;
	KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);

	/* every action has a name of its own */
	for (a = DMR_GC_IDLE; a <= DMR_GC_STUCK; a++) {
		KUNIT_EXPECT_STRNEQ(test, dmr_gc_action_name(a), "unknown");
		for (b = a + 1; b <= DMR_GC_STUCK; b++)
			KUNIT_EXPECT_STRNEQ(test, dmr_gc_action_name(a),
					    dmr_gc_action_name(b));
	}
	KUNIT_EXPECT_STREQ(test, dmr_gc_action_name(DMR_GC_STUCK + 1), "unknown");
}

/*
 * GC below its floor: a waiting user, nothing emptied, a victim.  It is
 * collected if its move fits in the free segments (a load can leave GC
 * there), after reads, flushes and checkpoints that free space without
 * taking any; never for background GC.
 */
static void dmr_gct_gc_decide_floor(struct kunit *test)
{
	struct dmr_gc_params p;
	struct dmr_gc_state st;
	u32 n;

	dmr_gc_params_default(1000, &p);
	for (n = 0; n <= DMR_GC_FLOOR; n++) {
		st = (struct dmr_gc_state){ .nr_free = n, .victim = true,
					    .user_waits = true };
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_STUCK);
		st.victim_fits = true;
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_COLLECT);
		st.nr_prefree_readers = 1;
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_WAIT_READERS);
		st.nr_prefree_readers = 0;
		st.nr_prefree_ckpt = 1;
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_CHECKPOINT);
		st.nr_prefree_flush = 1;
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_FLUSH);
		st = (struct dmr_gc_state){ .nr_free = n, .victim = true,
					    .victim_fits = true, .active = true };
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_IDLE);
		/* fits means nothing without a victim */
		st = (struct dmr_gc_state){ .nr_free = n, .victim_fits = true,
					    .user_waits = true };
		KUNIT_EXPECT_EQ(test, dmr_gc_decide(&p, &st), DMR_GC_STUCK);
	}
}

/*
 * dmr_gc_segments_needed() at its boundaries: the move's blocks and
 * summaries, one summary more, and two free blocks left (dmr_seg_done())
 * stay in the head's segment; one block more takes the next segment, and
 * a move that leaves the next one done too takes two.  A reserved next
 * segment counts as taken.
 */
static void dmr_gct_gc_segments_needed(struct kunit *test)
{
	const u32 sb = GCT_SEG_BLOCKS;
	u32 valid, blocks, big, w;

	for (w = 0; w < 2; w++) {
		for (valid = 0; dmr_gc_move_cost(valid, w) + 3 <= sb; valid++) {
			blocks = dmr_gc_move_cost(valid, w) + 1;
			KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(valid, w, sb - 2 - blocks,
								     false, sb), 0U);
			KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(valid, w, sb - 1 - blocks,
								     false, sb), 1U);
			KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(valid, w, sb - 1 - blocks,
								     true, sb), 0U);
			KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(valid, w, sb, false, sb),
					1U);
			KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(valid, w, sb, true, sb),
					0U);
		}
		/* the first valid count whose move leaves a segment done */
		big = valid;
		KUNIT_EXPECT_LT(test, dmr_gc_move_cost(big, w), sb);
		KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(big, w, sb, false, sb), 2U);
		KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(big, w, sb, true, sb), 1U);
		KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(big, w, 1, false, sb), 2U);
		/* a head past its segment's end (none) is a head with no room */
		KUNIT_EXPECT_EQ(test, dmr_gc_segments_needed(0, w, sb + 1, false, sb), 1U);
	}
}

/*
 * A load that leaves GC at its floor with nothing emptied (the CI failure
 * of 330becf, test_gc_power_cut_during_heavy_gc[2]: the power cut kept
 * the segment GC was filling and lost what emptied its victim; every
 * write after the load failed with ENOSPC).  The model's device is
 * written at random until its user heads stop at DMR_GC_FLOOR free
 * segments, GC's head takes one of them for a few blocks, and the load
 * seals every head.  A user write then waits, and every action
 * dmr_gc_decide() names is carried out until a user head may take a
 * segment: none may be STUCK, and no collection may run out of space.
 */
static void dmr_gct_load_at_floor(struct kunit *test)
{
	const struct dmr_gc_params p = { .reserve = DMR_GC_FLOOR + 2,
					 .low = DMR_GC_FLOOR + 3,
					 .high = DMR_GC_FLOOR + 4, .batch = 2 };
	struct dmr_gct_sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	struct dmr_gc_state st;
	struct dmr_map *m;
	u32 i, v, lba, e, next_free, steps, collected = 0, ckpts = 0;
	unsigned int h;

	if (!s)
		kunit_skip(test, "cannot allocate the model");
	m = &s->m;
	s->rng = 0x2545f491;
	dmr_gct_map_init(test, m, GCT_SIM_LOGICAL, GCT_SIM_SEGS, GCT_SIM_SEG_BLOCKS);
	for (h = 0; h < DMR_NR_HEADS; h++)
		s->seg[h] = DMR_NO_SEGMENT;
	s->inflight = DMR_NO_SEGMENT;
	for (lba = 0; lba < GCT_SIM_LOGICAL; lba++)
		dmr_gct_sim_write(s, lba);
	for (i = 0; i < 4000 && m->nr_free > GCT_SIM_RESERVE; i++)
		dmr_gct_sim_write(s, dmr_gct_rand(s) % GCT_SIM_LOGICAL);
	/*
	 * GC's head took one of the floor's segments and moved a few blocks
	 * into it; the power cut lost the rest of that collection
	 */
	for (lba = 0; lba < 5; lba++)
		KUNIT_ASSERT_TRUE(test, dmr_gct_sim_move(s, lba, 0));
	/* the load: every head's segment sealed, the states rebuilt */
	for (h = 0; h < DMR_NR_HEADS; h++) {
		if (s->seg[h] != DMR_NO_SEGMENT)
			dmr_seg_seal(m, s->seg[h]);
		s->seg[h] = DMR_NO_SEGMENT;
	}
	dmr_gct_sim_reap(s);
	dmr_map_load_states(m);
	KUNIT_ASSERT_TRUE(test, dmr_map_consistent(m));
	/* the premise: at or below the floor, nothing emptied, user heads stopped */
	KUNIT_ASSERT_LE(test, m->nr_free, DMR_GC_FLOOR);
	KUNIT_ASSERT_GE(test, m->nr_free, 1U);
	KUNIT_ASSERT_EQ(test, m->nr_prefree, 0U);
	KUNIT_ASSERT_FALSE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, m->nr_free));

	for (steps = 0; steps < 200 &&
	     !dmr_head_may_alloc(&p, DMR_HEAD_HOT, m->nr_free); steps++) {
		st = (struct dmr_gc_state){
			.nr_free = m->nr_free,
			.nr_prefree_ckpt = m->nr_wait[DMR_REUSE_CKPT],
			.nr_prefree_flush = m->nr_wait[DMR_REUSE_FLUSH],
			.nr_prefree_readers = m->nr_wait[DMR_REUSE_READY],
			.user_waits = true,
		};
		v = dmr_gc_victim(m, true, s->seq);
		st.victim = v != DMR_NO_SEGMENT;
		if (st.victim) {
			next_free = s->seg[DMR_HEAD_GC] == DMR_NO_SEGMENT ?
				    m->seg_blocks : s->off[DMR_HEAD_GC];
			st.victim_fits = dmr_gc_segments_needed(m->segs[v].valid, false,
								next_free, false,
								m->seg_blocks) <= m->nr_free;
		}
		switch (dmr_gc_decide(&p, &st)) {
		case DMR_GC_COLLECT:
			for (lba = 0; lba < m->nr_logical; lba++) {
				e = dmr_map_get(m, lba);
				if (e != DMR_UNMAPPED && dmr_pba_segment(m, e - 1) == v)
					KUNIT_ASSERT_TRUE(test, dmr_gct_sim_move(s, lba, 0));
			}
			/* GC never ran out of free segments in the middle */
			KUNIT_ASSERT_EQ(test, m->segs[v].valid, 0U);
			collected++;
			break;
		case DMR_GC_FLUSH:
			KUNIT_ASSERT_NULL(test, dmr_gct_sim_flush(s, false));
			break;
		case DMR_GC_CHECKPOINT:
			KUNIT_ASSERT_NULL(test, dmr_gct_sim_flush(s, true));
			ckpts++;
			break;
		default:
			KUNIT_FAIL(test, "step %u, %u free: %s", steps, m->nr_free,
				   dmr_gc_action_name(dmr_gc_decide(&p, &st)));
			return;
		}
		KUNIT_ASSERT_TRUE(test, dmr_map_consistent(m));
	}
	KUNIT_EXPECT_TRUE(test, dmr_head_may_alloc(&p, DMR_HEAD_HOT, m->nr_free));
	KUNIT_EXPECT_GT(test, collected, 0U);
	KUNIT_EXPECT_GT(test, ckpts, 0U);
}

/*
 * GC reads its victim asynchronously: a decision is made only with no
 * read pending, a completed read is collected, and an in-flight one is
 * waited for only when a user write waits for space.
 */
static void dmr_gct_gc_read_step(struct kunit *test)
{
	static const struct {
		bool pending, done, urgent;
		enum dmr_gc_read_step want;
	} t[] = {
		{ false, false, false, DMR_GC_READ_NONE },
		{ false, false, true, DMR_GC_READ_NONE },
		{ false, true, false, DMR_GC_READ_NONE },	/* stale flag */
		{ true, false, false, DMR_GC_READ_LATER },
		{ true, false, true, DMR_GC_READ_WAIT },
		{ true, true, false, DMR_GC_READ_COLLECT },
		{ true, true, true, DMR_GC_READ_COLLECT },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++)
		KUNIT_EXPECT_EQ(test, (int)dmr_gc_read_step(t[i].pending, t[i].done,
							    t[i].urgent), (int)t[i].want);
}

static struct kunit_case dmr_gct_cases[] = {
	KUNIT_CASE(dmr_gct_move_commit_rule),
	KUNIT_CASE(dmr_gct_replay_overwrite_beats_reloc),
	KUNIT_CASE(dmr_gct_replay_reloc_then_overwrite),
	KUNIT_CASE(dmr_gct_replay_discard_beats_reloc),
	KUNIT_CASE(dmr_gct_replay_reloc_moves_untouched),
	KUNIT_CASE(dmr_gct_replay_merges_heads),
	KUNIT_CASE(dmr_gct_replay_missing_unit_stops),
	KUNIT_CASE(dmr_gct_replay_torn_unit_stops),
	KUNIT_CASE(dmr_gct_replay_stale_not_applied),
	KUNIT_CASE(dmr_gct_replay_into_reused_segment),
	KUNIT_CASE(dmr_gct_reuse_open_then_sealed),
	KUNIT_CASE(dmr_gct_reuse_counts_checkpoints),
	KUNIT_CASE(dmr_gct_alloc_skips_unfree),
	KUNIT_CASE_PARAM(dmr_gct_random_accounting, dmr_gct_seed_gen_params),
	KUNIT_CASE(dmr_gct_victim_greedy),
	KUNIT_CASE(dmr_gct_victim_cost_benefit),
	KUNIT_CASE(dmr_gct_victim_whole_device),
	KUNIT_CASE(dmr_gct_age_clock),
	KUNIT_CASE(dmr_gct_birth_mix_jump),
	KUNIT_CASE(dmr_gct_batch_boundaries),
	KUNIT_CASE(dmr_gct_ready_reusable),
	KUNIT_CASE(dmr_gct_victim_after_recovery),
	KUNIT_CASE(dmr_gct_temp_heat),
	KUNIT_CASE(dmr_gct_heat_seed),
	KUNIT_CASE(dmr_gct_large_split),
	KUNIT_CASE(dmr_gct_victim_matches_scan),
	KUNIT_CASE(dmr_gct_collectable_counts_summaries),
	KUNIT_CASE(dmr_gct_high_max),
	KUNIT_CASE(dmr_gct_gc_refuse_and_verify),
	KUNIT_CASE(dmr_gct_head_may_alloc),
	KUNIT_CASE(dmr_gct_gc_heads),
	KUNIT_CASE(dmr_gct_gc_head_birth),
	KUNIT_CASE(dmr_gct_gc_active),
	KUNIT_CASE(dmr_gct_params_check),
	KUNIT_CASE_PARAM(dmr_gct_params_default, dmr_gct_dev_gen_params),
	KUNIT_CASE(dmr_gct_gc_decide),
	KUNIT_CASE(dmr_gct_gc_decide_floor),
	KUNIT_CASE(dmr_gct_gc_segments_needed),
	KUNIT_CASE(dmr_gct_load_at_floor),
	KUNIT_CASE(dmr_gct_pages_pick),
	KUNIT_CASE(dmr_gct_page_clock),
	KUNIT_CASE(dmr_gct_page_clock_turns),
	KUNIT_CASE(dmr_gct_gc_read_step),
	KUNIT_CASE(dmr_gct_seg_verify),
	{}
};

static struct kunit_suite dmr_gct_suite = {
	.name = "dm-remap-gc",
	.test_cases = dmr_gct_cases,
};

kunit_test_suite(dmr_gct_suite);
