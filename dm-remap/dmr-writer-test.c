// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for dm-remap's writer and loader decisions (dmr-writer.c)
 * and the multi-unit summary encoding (dmr-log.c).  Also compiled into the
 * host runner tools/tests/test-pure.
 */
#include <kunit/test.h>

#include "dmr-writer.h"

#define TW_SEG_BLOCKS	64

/* ------------------------------------------------------------------ */
/* sealing */

struct dmr_seal_case {
	bool flush;
	u32 unwritten;
	bool seg_done;
	enum dmr_seal_action want;
};

static const struct dmr_seal_case dmr_seal_cases[] = {
	{ false, 0, false, DMR_SEAL_NONE },
	{ true, 0, false, DMR_SEAL_FLUSH },
	/* a closed unit in a segment that is not done waits for the rest */
	{ false, 1009, false, DMR_SEAL_NONE },
	{ false, 3000, false, DMR_SEAL_NONE },
	/* a done segment goes whole to the second stage */
	{ false, 2047, true, DMR_SEAL_FLIGHT },
	{ false, 5, true, DMR_SEAL_FLIGHT },
	/* a flush writes every closed unit now, done or not */
	{ true, 3, false, DMR_SEAL_WRITE },
	{ true, 2047, true, DMR_SEAL_WRITE },
};

static void dmr_seal_desc(const struct dmr_seal_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "flush=%d unwritten=%u done=%d",
		 c->flush, c->unwritten, c->seg_done);
}

KUNIT_ARRAY_PARAM(dmr_seal, dmr_seal_cases, dmr_seal_desc);

static void dmr_test_seal_action(struct kunit *test)
{
	const struct dmr_seal_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, dmr_seal_action(c->flush, c->unwritten, c->seg_done),
			c->want);
}

/* dmr_seg_done() leaves a segment exactly where dmr_log_advance() does. */
static void dmr_test_seg_done_matches_log_advance(struct kunit *test)
{
	u32 end;

	for (end = 1; end <= TW_SEG_BLOCKS; end++) {
		struct dmr_log_pos pos = { .segment = 3, .offset = 0,
					   .next_segment = 4 };

		dmr_log_advance(&pos, end, TW_SEG_BLOCKS);
		KUNIT_EXPECT_EQ(test, dmr_seg_done(end, TW_SEG_BLOCKS),
				pos.segment == 4);
	}
	KUNIT_EXPECT_FALSE(test, dmr_seg_done(TW_SEG_BLOCKS - 2, TW_SEG_BLOCKS));
	KUNIT_EXPECT_TRUE(test, dmr_seg_done(TW_SEG_BLOCKS - 1, TW_SEG_BLOCKS));
}

static struct dmr_unit *dmr_tw_unit(struct kunit *test)
{
	struct dmr_unit *u = kunit_kzalloc(test, sizeof(*u), GFP_KERNEL);

	if (!u)
		kunit_skip(test, "cannot allocate a unit");
	dmr_unit_reset(u, 0);
	return u;
}

static void dmr_test_unit_room_and_chunks(struct kunit *test)
{
	struct dmr_unit *u = dmr_tw_unit(test);
	u32 big = 8 << 8;	/* an 8 MiB segment: 2048 blocks */

	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(false, u, 1, big));
	KUNIT_EXPECT_TRUE(test, dmr_unit_takes_block(true, u, 1, big));
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(true, u, big, big));
	/* a chunk stops at the segment end and at the summary's capacity */
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, big, 5000), DMR_SUMMARY_WORDS);
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, TW_SEG_BLOCKS, 5000),
			TW_SEG_BLOCKS - 1U);
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, big, 7), 7U);
	u->nr_blocks = DMR_SUMMARY_WORDS - 3;
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, big, 100), 3U);
	u->nr_blocks = DMR_SUMMARY_WORDS;
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(true, u, 1010, big));
	/* discard extents take two words each */
	u->nr_blocks = 0;
	u->nr_discards = 2;
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, big, 5000), DMR_SUMMARY_WORDS - 4);
}

static void dmr_test_seal_after_write(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, dmr_seal_after_write(true, TW_SEG_BLOCKS, TW_SEG_BLOCKS));
	/* one block short of the end: the unit can still take a block */
	KUNIT_EXPECT_FALSE(test, dmr_seal_after_write(true, TW_SEG_BLOCKS - 1,
						      TW_SEG_BLOCKS));
	KUNIT_EXPECT_FALSE(test, dmr_seal_after_write(false, 0, TW_SEG_BLOCKS));
	/* a FUA write does not seal by itself: the group commit does */
	KUNIT_EXPECT_FALSE(test, dmr_seal_after_write(true, 5, TW_SEG_BLOCKS));
}

/*
 * The group commit waits while requests are queued (they join it), and
 * not past DMR_GROUP_COMMIT_MAX waiting requests, nor past
 * DMR_GROUP_COMMIT_BEHIND other requests handled since the oldest joined
 * (a queue that never empties); nothing waiting, no commit.
 */
static void dmr_test_group_commit_now(struct kunit *test)
{
	const u32 b = DMR_GROUP_COMMIT_BEHIND;
	u32 behind, i;

	KUNIT_EXPECT_FALSE(test, dmr_group_commit_now(0, true, 0));
	KUNIT_EXPECT_FALSE(test, dmr_group_commit_now(0, false, 0));
	KUNIT_EXPECT_FALSE(test, dmr_group_commit_now(0, false, b));
	KUNIT_EXPECT_TRUE(test, dmr_group_commit_now(1, true, 0));
	KUNIT_EXPECT_FALSE(test, dmr_group_commit_now(1, false, 0));
	KUNIT_EXPECT_FALSE(test, dmr_group_commit_now(DMR_GROUP_COMMIT_MAX - 1, false, 0));
	KUNIT_EXPECT_TRUE(test, dmr_group_commit_now(DMR_GROUP_COMMIT_MAX, false, 0));
	KUNIT_EXPECT_TRUE(test, dmr_group_commit_now(DMR_GROUP_COMMIT_MAX + 1, false, 0));
	/* the bound on a queue that never empties */
	KUNIT_EXPECT_FALSE(test, dmr_group_commit_now(1, false, b - 1));
	KUNIT_EXPECT_TRUE(test, dmr_group_commit_now(1, false, b));
	KUNIT_EXPECT_TRUE(test, dmr_group_commit_now(1, false, b + 1));

	/*
	 * The worker's count (dmr_commit_behind()): one flush arrives with
	 * the queue empty ahead of it, and every request after it finds the
	 * queue non-empty.  The commit comes after DMR_GROUP_COMMIT_BEHIND
	 * requests, the flush's own included, not never.
	 */
	for (i = 1; i < 10 * b; i++) {
		behind = dmr_commit_behind(1, 1000 + i, 1000);
		if (dmr_group_commit_now(1, false, behind))
			break;
	}
	KUNIT_EXPECT_EQ(test, i, b);
	/*
	 * Counted from its arrival (issue 40, item 14): a flush queued
	 * behind 1000 requests is committed as soon as the worker handled
	 * it, not DMR_GROUP_COMMIT_BEHIND requests later.
	 */
	behind = dmr_commit_behind(1, 1000 + 1001, 1000);
	KUNIT_EXPECT_TRUE(test, dmr_group_commit_now(1, false, behind));
	KUNIT_EXPECT_EQ(test, behind, 1001U);
	/* the count wraps; with nothing waiting there is none */
	KUNIT_EXPECT_EQ(test, dmr_commit_behind(1, 0x50, 0xffffff00U), 0x150U);
	KUNIT_EXPECT_EQ(test, dmr_commit_behind(0, 5000, 1000), 0U);
}

/*
 * The GC steps a waiting flush defers (issue 40, item 14): one per
 * request handled while a flush waits, taken one by one after, and all
 * dropped once a step finds nothing to do.
 */
static void dmr_test_gc_owed(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_request(0, 0), 0U);
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_request(0, 3), 3U);
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_request(1, 0), 1U);
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_request(64, 3), 4U);
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_step(3, true), 2U);
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_step(0, true), 0U);
	KUNIT_EXPECT_EQ(test, dmr_gc_owed_after_step(3, false), 0U);
}

/* The checkpoint message runs only on an active, writing, running target. */
static void dmr_test_message_checkpoint_verdict(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, dmr_message_checkpoint_verdict(DMR_MODE_WRITE, true, false), 0);
	KUNIT_EXPECT_EQ(test, dmr_message_checkpoint_verdict(DMR_MODE_WRITE, false, false),
			-EBUSY);
	/* postsuspend began: it writes the last one */
	KUNIT_EXPECT_EQ(test, dmr_message_checkpoint_verdict(DMR_MODE_WRITE, true, true),
			-EBUSY);
	KUNIT_EXPECT_EQ(test, dmr_message_checkpoint_verdict(DMR_MODE_FAILED, true, false),
			-EROFS);
	KUNIT_EXPECT_EQ(test, dmr_message_checkpoint_verdict(DMR_MODE_READ_ONLY, true, false),
			-EROFS);
}

/*
 * Every combination of (same block device, same superblock uuid, same
 * mapped device, same table): a match is a reload only from another
 * table of the same mapped device.  Same table but another mapped device
 * cannot happen; it is refused all the same.
 */
static void dmr_test_instance_relation(struct kunit *test)
{
	static const struct {
		bool bdev, uuid, md, table;
		enum dmr_instance_rel want;
	} cases[] = {
		{ false, false, false, false, DMR_INSTANCE_UNRELATED },
		{ false, false, false, true, DMR_INSTANCE_UNRELATED },
		{ false, false, true, false, DMR_INSTANCE_UNRELATED },
		{ false, false, true, true, DMR_INSTANCE_UNRELATED },
		/* an alias or clone in another mapped device */
		{ false, true, false, false, DMR_INSTANCE_REFUSE },
		{ false, true, false, true, DMR_INSTANCE_REFUSE },
		/* a reload naming an alias */
		{ false, true, true, false, DMR_INSTANCE_RELOAD },
		/* an alias and the disk in one table */
		{ false, true, true, true, DMR_INSTANCE_REFUSE },
		/* the same disk in another mapped device */
		{ true, false, false, false, DMR_INSTANCE_REFUSE },
		{ true, false, false, true, DMR_INSTANCE_REFUSE },
		{ true, false, true, false, DMR_INSTANCE_RELOAD },
		{ true, false, true, true, DMR_INSTANCE_REFUSE },
		{ true, true, false, false, DMR_INSTANCE_REFUSE },
		{ true, true, false, true, DMR_INSTANCE_REFUSE },
		/* the plain reload */
		{ true, true, true, false, DMR_INSTANCE_RELOAD },
		/* two targets over one disk in one table */
		{ true, true, true, true, DMR_INSTANCE_REFUSE },
	};
	unsigned int i;

	/* 4 * case + relation: a failure names its case */
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ(test, 4 * i + dmr_instance_relation(cases[i].bdev, cases[i].uuid,
								    cases[i].md, cases[i].table),
				4 * i + cases[i].want);
}

/* A discard unmaps in bounded steps, whatever its size. */
static void dmr_test_unmap_step(struct kunit *test)
{
	u64 left, steps;

	KUNIT_EXPECT_EQ(test, dmr_unmap_step(1), 1U);
	KUNIT_EXPECT_EQ(test, dmr_unmap_step(DMR_UNMAP_STEP), DMR_UNMAP_STEP);
	KUNIT_EXPECT_EQ(test, dmr_unmap_step(DMR_UNMAP_STEP + 1), DMR_UNMAP_STEP);
	/* the largest extent one discard unit holds (2^30 blocks) */
	KUNIT_EXPECT_EQ(test, dmr_unmap_step(1ULL << 30), DMR_UNMAP_STEP);
	KUNIT_EXPECT_EQ(test, dmr_unmap_step(1ULL << 40), DMR_UNMAP_STEP);
	for (left = (1ULL << 20) + 3, steps = 0; left; steps++)
		left -= dmr_unmap_step(left);
	KUNIT_EXPECT_EQ(test, steps, (u64)((1U << 20) / DMR_UNMAP_STEP + 1));
}

/*
 * Item 11 of issue 40: a write, a read and GC wait for every page they
 * need, a discard's piece for its first only; a piece cut short ends
 * where its pages end, never inside one, never past the extent, and
 * with no page it has no block.
 */
static void dmr_test_need_part(struct kunit *test)
{
	const unsigned int narrow = 10, wide = 9;

	KUNIT_EXPECT_TRUE(test, dmr_need_waits(true, 0));
	KUNIT_EXPECT_TRUE(test, dmr_need_waits(true, 5));
	KUNIT_EXPECT_TRUE(test, dmr_need_waits(false, 0));
	KUNIT_EXPECT_FALSE(test, dmr_need_waits(false, 1));

	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(0, 4096, 0, narrow), 0ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(1000, 4096, 0, narrow), 0ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(0, 4096, 1, narrow), 1024ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(0, 4096, 4, narrow), 4096ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(0, 4096, 9, narrow), 4096ULL);
	/* unaligned: the first page holds only its tail of the extent */
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(1000, 4096, 1, narrow), 24ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(1000, 4096, 2, narrow), 1048ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(1000, 10, 1, narrow), 10ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(1000, 4096, 1, wide), 24ULL);
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in(1030, 4096, 1, wide), 506ULL);
	/* 64-bit block numbers past 2^32, a piece of 2^30 blocks */
	KUNIT_EXPECT_EQ(test, dmr_need_blocks_in((1ULL << 40) + 7, 1ULL << 30, 3, wide),
			(3ULL << wide) - 7);
}

/*
 * Item 10 of issue 40: a discard's piece is half the map cache (a page
 * at least, 2^30 blocks at most, all of it without a cache), and the
 * cache holds at most itself and the larger of half of it and two, or a
 * segment's blocks (GC's collection; the memory check's count); replay
 * writes a checkpoint only over the cache's size, where it may write one
 * (a writable table, the newest slot loaded, no grow, both superblock
 * copies current) at positions a load accepts.
 */
static void dmr_test_replay_checkpoint_policy(struct kunit *test)
{
	const unsigned int narrow = 10, wide = 9;	/* dmr_map_shift() */
	unsigned int bits;

	KUNIT_EXPECT_EQ(test, dmr_discard_piece(0, narrow), 1U << 30);
	KUNIT_EXPECT_EQ(test, dmr_discard_piece(1, narrow), 1U << narrow);
	KUNIT_EXPECT_EQ(test, dmr_discard_piece(2, narrow), 1U << narrow);
	KUNIT_EXPECT_EQ(test, dmr_discard_piece(256, narrow), 128U << narrow);
	KUNIT_EXPECT_EQ(test, dmr_discard_piece(256, wide), 128U << wide);
	KUNIT_EXPECT_EQ(test, dmr_discard_piece(1U << 21, narrow), 1U << 30);
	KUNIT_EXPECT_EQ(test, dmr_discard_piece(~0U, narrow), 1U << 30);
	KUNIT_EXPECT_EQ(test, dmr_map_cache_most(0, 256), 0ULL);
	/* a unit of large segments' records: two pages each, small segments */
	KUNIT_EXPECT_EQ(test, dmr_map_cache_most(1, 2), 1ULL + 2 * DMR_UNIT_MAX_EXTENTS);
	KUNIT_EXPECT_EQ(test, dmr_map_cache_most(256, 64), 256ULL + 128 + 2);
	KUNIT_EXPECT_EQ(test, dmr_map_cache_most(256, 256), 256ULL + 256);
	/* 8 MiB segments: a victim's blocks, each in a page of its own */
	KUNIT_EXPECT_EQ(test, dmr_map_cache_most(256, 2048), 256ULL + 2048);
	/* a piece's pages, one more unaligned, within what the check counts */
	KUNIT_EXPECT_LE(test, 256ULL + (dmr_discard_piece(256, narrow) >> narrow) + 1,
			dmr_map_cache_most(256, 64));

	for (bits = 0; bits < 16; bits++) {
		bool writable = bits & 1, fell_back = bits & 2, growing = bits & 4;
		bool sb_ok = bits & 8;

		KUNIT_EXPECT_EQ(test, dmr_replay_may_checkpoint(writable, fell_back, growing,
								sb_ok),
				bits == (1 | 8));
	}
	KUNIT_EXPECT_TRUE(test, dmr_replay_ckpt_due(257, 256, true, true));
	KUNIT_EXPECT_FALSE(test, dmr_replay_ckpt_due(256, 256, true, true));
	KUNIT_EXPECT_FALSE(test, dmr_replay_ckpt_due(257, 256, false, true));
	KUNIT_EXPECT_FALSE(test, dmr_replay_ckpt_due(257, 256, true, false));
	KUNIT_EXPECT_FALSE(test, dmr_replay_ckpt_due(5, 0, true, true));
}

/*
 * What a flush writes: a head with closed units not yet written, or an
 * open unit holding blocks or discards; the last such head carries the
 * flush (PREFLUSH | FUA), and with none a plain flush is made.
 */
static void dmr_test_flush_carrier(struct kunit *test)
{
	struct dmr_unit *u = dmr_tw_unit(test);
	bool w[4] = { false, false, false, false };

	dmr_unit_reset(u, 0);
	KUNIT_EXPECT_FALSE(test, dmr_head_unwritten(true, u, 10, 10));
	KUNIT_EXPECT_TRUE(test, dmr_head_unwritten(true, u, 11, 10));
	KUNIT_EXPECT_TRUE(test, dmr_head_unwritten(false, u, 11, 10));
	u->nr_discards = 1;
	KUNIT_EXPECT_TRUE(test, dmr_head_unwritten(true, u, 10, 10));
	KUNIT_EXPECT_FALSE(test, dmr_head_unwritten(false, u, 10, 10));
	u->nr_discards = 0;
	u->nr_blocks = 1;
	KUNIT_EXPECT_TRUE(test, dmr_head_unwritten(true, u, 10, 10));

	KUNIT_EXPECT_EQ(test, dmr_flush_carrier(w, 4), -1);
	w[0] = true;
	KUNIT_EXPECT_EQ(test, dmr_flush_carrier(w, 4), 0);
	w[2] = true;
	KUNIT_EXPECT_EQ(test, dmr_flush_carrier(w, 4), 2);
	w[3] = true;
	KUNIT_EXPECT_EQ(test, dmr_flush_carrier(w, 4), 3);
	KUNIT_EXPECT_EQ(test, dmr_flush_carrier(w, 3), 2);
}

/*
 * The boundary of defect 1: the open unit holds data and ends one block
 * short of the segment end when a discard arrives.  The discard must not
 * join that unit; sealing it finishes the segment (it goes to the second
 * stage), and the discard goes into a new unit.
 */
static void dmr_test_discard_at_segment_end(struct kunit *test)
{
	struct dmr_unit *u = dmr_tw_unit(test);
	u32 wp = TW_SEG_BLOCKS - 1;

	u->nr_blocks = TW_SEG_BLOCKS - 2;
	KUNIT_EXPECT_TRUE(test, dmr_discard_needs_seal(true, u));
	KUNIT_EXPECT_TRUE(test, dmr_seg_done(wp, TW_SEG_BLOCKS));
	KUNIT_EXPECT_EQ(test, dmr_seal_action(false, wp, true), DMR_SEAL_FLIGHT);
	/* a unit of discards only takes more until its summary is full */
	dmr_unit_reset(u, 0);
	KUNIT_EXPECT_FALSE(test, dmr_discard_needs_seal(true, u));
	KUNIT_EXPECT_FALSE(test, dmr_discard_needs_seal(false, u));
	u->nr_discards = DMR_SUMMARY_WORDS / 2 - 1;
	KUNIT_EXPECT_FALSE(test, dmr_discard_needs_seal(true, u));
	u->nr_discards = DMR_SUMMARY_WORDS / 2;
	KUNIT_EXPECT_TRUE(test, dmr_discard_needs_seal(true, u));
}

/*
 * A log write that goes past what its head wrote is padded to the end of
 * its last stripe (issue 41, goal 3); never past the segment, never for a
 * stripe over 1 MiB, never backwards.
 */
static void dmr_test_stripe_pad(struct kunit *test)
{
	u32 end, padded, stop;

	/* no stripe, or one block: the units alone */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(52, 0, 0, 288), 52U);
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(52, 0, 1, 288), 52U);
	/* RAID-5, 4 x 64K: the first short unit in a stripe pads it out */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(2, 0, 48, 288), 48U);
	/* the next ones in that stripe are not padded again */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(4, 48, 48, 288), 4U);
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(48, 48, 48, 288), 48U);
	/* one that goes into the next stripe pads that one */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(50, 48, 48, 288), 96U);
	/* after a load at block 60 nothing after it is known */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(62, 60, 48, 288), 96U);
	/* a done segment whose last block stays empty */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(287, 240, 48, 288), 288U);
	/* never past the segment */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(245, 0, 48, 250), 250U);
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(201, 0, 48, 250), 240U);
	/* 1 MiB stripes are padded, larger ones not */
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(302, 256, 256, 1024), 512U);
	KUNIT_EXPECT_EQ(test, dmr_stripe_pad(302, 257, 257, 1028), 302U);
	/* every case: at least the units, a stripe boundary when padded */
	for (padded = 0; padded <= 288; padded += 13)
		for (end = 1; end <= 288; end++) {
			stop = dmr_stripe_pad(end, padded, 48, 288);
			KUNIT_EXPECT_GE(test, stop, end);
			KUNIT_EXPECT_LT(test, stop - end, 48U);
			if (end <= padded)
				KUNIT_EXPECT_EQ(test, stop, end);
			else
				KUNIT_EXPECT_EQ(test, stop % 48, 0U);
		}
}

/* Segment writes are cut on stripe (or 1 MiB) boundaries of the segment. */
static void dmr_test_write_pieces(struct kunit *test)
{
	u32 from, piece, n, nr;

	KUNIT_EXPECT_EQ(test, dmr_write_piece(0), 256U);
	KUNIT_EXPECT_EQ(test, dmr_write_piece(48), 240U);	/* RAID-5, 4 x 64K */
	KUNIT_EXPECT_EQ(test, dmr_write_piece(112), 224U);	/* RAID-5, 8 x 64K */
	KUNIT_EXPECT_EQ(test, dmr_write_piece(1024), 1024U);
	KUNIT_EXPECT_EQ(test, dmr_piece_len(0, 2048, 256), 256U);
	KUNIT_EXPECT_EQ(test, dmr_piece_len(300, 2048, 256), 212U);
	KUNIT_EXPECT_EQ(test, dmr_piece_len(300, 400, 256), 100U);
	/* a whole 8 MiB segment: aligned pieces that cover it exactly */
	piece = dmr_write_piece(0);
	for (from = 0, nr = 0; from < 2048; from += n, nr++) {
		n = dmr_piece_len(from, 2048, piece);
		KUNIT_EXPECT_EQ(test, from % piece, 0U);
		KUNIT_EXPECT_EQ(test, n, piece);
	}
	KUNIT_EXPECT_EQ(test, nr, 8U);
}

/* ------------------------------------------------------------------ */
/* several units in one segment buffer, checksummed when written */

static void dmr_test_units_finish(struct kunit *test)
{
	static const u8 uuid[16] = { 1, 2, 3 };
	u8 *seg = kunit_kzalloc(test, (size_t)TW_SEG_BLOCKS * DMR_BLOCK_SIZE,
				GFP_KERNEL);
	struct dmr_unit *u = dmr_tw_unit(test), *d = dmr_tw_unit(test);
	static const u32 sizes[] = { 5, 1, 20 };
	u32 off = 0, i, k;

	if (!seg)
		kunit_skip(test, "cannot allocate a segment");
	for (k = 0; k < ARRAY_SIZE(sizes); k++) {
		dmr_unit_reset(u, 0);
		u->seq = 10 + k;
		u->blocknr = 1000 + off;
		u->next_segment = 7;
		for (i = 0; i < sizes[k]; i++) {
			u->lba[u->nr_blocks++] = 100 * k + i;
			memset(seg + (size_t)(off + 1 + i) * DMR_BLOCK_SIZE, k + i, 64);
		}
		dmr_unit_encode_body(u, uuid, seg + (size_t)off * DMR_BLOCK_SIZE);
		off += 1 + sizes[k];
	}
	/* without checksums no unit validates */
	KUNIT_EXPECT_EQ(test, dmr_unit_decode(seg, 1000, uuid, 1000, d),
			DMR_LOG_BAD_CSUM);
	/* a range that does not end at a unit boundary is refused */
	KUNIT_EXPECT_FALSE(test, dmr_units_finish(seg, 0, off - 1));
	KUNIT_EXPECT_TRUE(test, dmr_units_finish(seg, 0, off));
	for (off = 0, k = 0; k < ARRAY_SIZE(sizes); k++) {
		u8 *s = seg + (size_t)off * DMR_BLOCK_SIZE;

		KUNIT_ASSERT_EQ(test, dmr_unit_decode(s, 1000 + off, uuid, 1000, d),
				DMR_LOG_OK);
		KUNIT_EXPECT_EQ(test, d->seq, 10ULL + k);
		KUNIT_EXPECT_EQ(test, d->nr_blocks, sizes[k]);
		KUNIT_EXPECT_EQ(test, d->lba[sizes[k] - 1], 100 * k + sizes[k] - 1);
		KUNIT_EXPECT_EQ(test, dmr_data_csum(s + DMR_BLOCK_SIZE, d->nr_blocks),
				d->data_csum);
		off += 1 + sizes[k];
	}
	/* the same unit encoded in one go is byte for byte the same */
	dmr_unit_reset(u, 0);
	u->seq = 12;
	u->blocknr = 1000 + 8;
	u->next_segment = 7;
	for (i = 0; i < 20; i++)
		u->lba[u->nr_blocks++] = 200 + i;
	{
		u8 *again = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);

		if (!again)
			kunit_skip(test, "cannot allocate a block");
		dmr_unit_encode(u, uuid, seg + 9 * DMR_BLOCK_SIZE, again);
		KUNIT_EXPECT_EQ(test, memcmp(again, seg + 8 * DMR_BLOCK_SIZE,
					     DMR_BLOCK_SIZE), 0);
	}
}

/*
 * A summary finished with a checksum chained over pieces of the data
 * (whole blocks each, an empty piece among them) decodes and verifies
 * exactly like one finished over contiguous data.
 */
static void dmr_test_data_csum_pieces(struct kunit *test)
{
	static const u8 uuid[16] = { 4, 5, 6 };
	static const u32 cuts[] = { 1, 2, 0, 1, 1 };	/* 5 blocks */
	u8 *data = kunit_kzalloc(test, 5 * DMR_BLOCK_SIZE, GFP_KERNEL);
	u8 *a = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);
	u8 *b = kunit_kzalloc(test, DMR_BLOCK_SIZE, GFP_KERNEL);
	struct dmr_unit *u = dmr_tw_unit(test), *d = dmr_tw_unit(test);
	u32 crc = DMR_DATA_CSUM_SEED, i, at = 0;

	if (!data || !a || !b)
		kunit_skip(test, "cannot allocate");
	for (i = 0; i < 5 * DMR_BLOCK_SIZE; i++)
		data[i] = i * 7 + (i >> 12);
	for (i = 0; i < ARRAY_SIZE(cuts); i++) {
		crc = dmr_data_csum_add(crc, data + (size_t)at * DMR_BLOCK_SIZE, cuts[i]);
		at += cuts[i];
	}
	KUNIT_ASSERT_EQ(test, at, 5U);
	KUNIT_EXPECT_EQ(test, dmr_data_csum_end(crc), dmr_data_csum(data, 5));

	dmr_unit_reset(u, 0);
	u->seq = 77;
	u->blocknr = 500;
	u->next_segment = DMR_NO_SEGMENT;
	for (i = 0; i < 5; i++)
		u->lba[u->nr_blocks++] = 30 + i;
	dmr_unit_encode(u, uuid, data, a);
	dmr_unit_encode_body(u, uuid, b);
	dmr_unit_finish_csum(b, dmr_data_csum_end(crc));
	KUNIT_EXPECT_EQ(test, memcmp(a, b, DMR_BLOCK_SIZE), 0);
	KUNIT_ASSERT_EQ(test, dmr_unit_decode(b, 500, uuid, 1000, d), DMR_LOG_OK);
	KUNIT_EXPECT_EQ(test, d->data_csum, dmr_data_csum(data, 5));
	/* one changed byte of the data no longer verifies */
	data[2 * DMR_BLOCK_SIZE + 9] ^= 1;
	KUNIT_EXPECT_NE(test, d->data_csum, dmr_data_csum(data, 5));
}

/* ------------------------------------------------------------------ */
/* zero-copy writes */

static void dmr_test_mem_run(struct kunit *test)
{
	bool buf;

	/* nothing on the device: all from the buffer */
	KUNIT_EXPECT_EQ(test, dmr_mem_run(0, 10, 0, &buf), 10U);
	KUNIT_EXPECT_TRUE(test, buf);
	/* all on the device */
	KUNIT_EXPECT_EQ(test, dmr_mem_run(5, 10, 100, &buf), 10U);
	KUNIT_EXPECT_FALSE(test, buf);
	/* a run across the boundary is cut there, the rest from the buffer */
	KUNIT_EXPECT_EQ(test, dmr_mem_run(95, 10, 100, &buf), 5U);
	KUNIT_EXPECT_FALSE(test, buf);
	KUNIT_EXPECT_EQ(test, dmr_mem_run(100, 5, 100, &buf), 5U);
	KUNIT_EXPECT_TRUE(test, buf);
	KUNIT_EXPECT_EQ(test, dmr_mem_run(99, 1, 100, &buf), 1U);
	KUNIT_EXPECT_FALSE(test, buf);
}

/* ------------------------------------------------------------------ */
/* flush, timer, load */

static void dmr_test_empty_flush_verdict(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, dmr_empty_flush_verdict(DMR_MODE_WRITE), DMR_FLUSH_QUEUE);
	KUNIT_EXPECT_EQ(test, dmr_empty_flush_verdict(DMR_MODE_READ_ONLY), DMR_FLUSH_DONE);
	KUNIT_EXPECT_EQ(test, dmr_empty_flush_verdict(DMR_MODE_FAILED), DMR_FLUSH_FAIL);
}

static void dmr_test_ckpt_rearm(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, dmr_ckpt_rearm(DMR_MODE_WRITE, false, false));
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_rearm(DMR_MODE_WRITE, false, true));
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_rearm(DMR_MODE_WRITE, true, false));
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_rearm(DMR_MODE_FAILED, false, false));
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_rearm(DMR_MODE_READ_ONLY, false, false));
}

static void dmr_test_ckpt_order(struct kunit *test)
{
	struct dmr_ckpt c[DMR_CKPT_SLOTS] = { { .seq = 7 }, { .seq = 8 } };
	enum dmr_log_status st[DMR_CKPT_SLOTS] = { DMR_LOG_OK, DMR_LOG_OK };
	int order[DMR_CKPT_SLOTS], bad = -1;

	KUNIT_EXPECT_EQ(test, dmr_ckpt_order(st, c, order, &bad), 2);
	KUNIT_EXPECT_EQ(test, order[0], 1);
	KUNIT_EXPECT_EQ(test, order[1], 0);
	c[0].seq = 9;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_order(st, c, order, &bad), 2);
	KUNIT_EXPECT_EQ(test, order[0], 0);
	/* a torn or never-written header is passed over */
	st[0] = DMR_LOG_BAD_CSUM;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_order(st, c, order, &bad), 1);
	KUNIT_EXPECT_EQ(test, order[0], 1);
	st[1] = DMR_LOG_BAD_MAGIC;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_order(st, c, order, &bad), 0);
	/* an unreadable one refuses the load, whichever slot it is */
	st[0] = DMR_LOG_OK;
	st[1] = DMR_LOG_READ_ERROR;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_order(st, c, order, &bad), -EIO);
	KUNIT_EXPECT_EQ(test, bad, 1);
	st[0] = DMR_LOG_READ_ERROR;
	st[1] = DMR_LOG_OK;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_order(st, c, order, &bad), -EIO);
	KUNIT_EXPECT_EQ(test, bad, 0);
}

static void dmr_test_load_needs_recovery(struct kunit *test)
{
	struct dmr_ckpt clean = { .flags = DMR_CKPT_CLEAN }, dirty = { .flags = 0 };

	KUNIT_EXPECT_FALSE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_BAD_MAGIC, false));
	KUNIT_EXPECT_FALSE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_END, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 1, DMR_LOG_BAD_MAGIC, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_BAD_CSUM, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_BAD_SEQ, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_BAD_DATA, false));
	/* a unit of an earlier use of a reused segment is a normal end */
	KUNIT_EXPECT_FALSE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_STALE, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_BAD_UUID, false));
	/* a marked (not clean) checkpoint always recovers: rule 7 */
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&dirty, 0, DMR_LOG_BAD_MAGIC, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&dirty, 0, DMR_LOG_END, false));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&dirty, 0, DMR_LOG_STALE, false));
	/* a clean slot loaded by falling back is a recovery: issue 24 item 7 */
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_BAD_MAGIC, true));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_END, true));
	KUNIT_EXPECT_TRUE(test, dmr_load_needs_recovery(&clean, 0, DMR_LOG_STALE, true));
}

/*
 * A twin (the second of a clean shutdown's two checkpoints) lets the load
 * trust the other slot's map only if that slot is the clean checkpoint
 * it followed: any field that differs, a damaged or never-written other
 * slot, or no twin flag, and the other slot is rewritten as before.
 */
static void dmr_test_ckpt_twin_holds(struct kunit *test)
{
	struct dmr_ckpt first = {
		.flags = DMR_CKPT_CLEAN, .seq = 8, .log_seq = 1000, .mapped_blocks = 77,
		.crc_csum = 0x1234, .segtab_csum = 0x5678, .logical_blocks = 9000,
		.nr_segments = 40,
	}, twin, other;
	unsigned int i, h;

	for (h = 0; h < DMR_NR_HEADS; h++)
		first.heads[h] = (struct dmr_log_pos){ .segment = h, .offset = 3 * h,
						       .next_segment = 10 + h };
	twin = first;
	twin.flags = DMR_CKPT_CLEAN | DMR_CKPT_TWIN;
	twin.seq = 9;
	KUNIT_EXPECT_TRUE(test, dmr_ckpt_twin_holds(&twin, DMR_LOG_OK, &first));
	/* rule 7's rewrite of the twin's header keeps the relation */
	twin.flags = DMR_CKPT_TWIN;
	KUNIT_EXPECT_TRUE(test, dmr_ckpt_twin_holds(&twin, DMR_LOG_OK, &first));
	/* the first checkpoint is no twin of the second */
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_twin_holds(&first, DMR_LOG_OK, &twin));
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_twin_holds(&twin, DMR_LOG_BAD_CSUM, &first));
	KUNIT_EXPECT_FALSE(test, dmr_ckpt_twin_holds(&twin, DMR_LOG_BAD_MAGIC, &first));
	for (i = 0; i < 11 + 3 * DMR_NR_HEADS; i++) {
		other = first;
		switch (i) {
		case 0: /* marked, not clean */
			other.flags = 0;
			break;
		case 1:
			other.seq = 7;
			break;
		case 2:
			other.seq = 9;
			break;
		case 3:
			other.log_seq++;
			break;
		case 4:
			other.mapped_blocks--;
			break;
		case 5:
			other.crc_csum ^= 1;
			break;
		case 6:
			other.segtab_csum ^= 1;
			break;
		case 7:
			other.logical_blocks++;
			break;
		case 8:
			other.nr_segments++;
			break;
		case 9: /* still holds */
			other.flags |= DMR_CKPT_TWIN;
			other.seq = 8;
			break;
		case 10: /* no flag */
			twin.flags = DMR_CKPT_CLEAN;
			break;
		default:
			h = (i - 11) / 3;
			if ((i - 11) % 3 == 0)
				other.heads[h].segment++;
			else if ((i - 11) % 3 == 1)
				other.heads[h].offset++;
			else
				other.heads[h].next_segment++;
		}
		KUNIT_EXPECT_EQ_MSG(test, dmr_ckpt_twin_holds(&twin, DMR_LOG_OK, &other), i == 9,
				    "case %u", i);
		twin.flags = DMR_CKPT_TWIN;
	}
}

/*
 * Falling back: the slot loaded is not the newest valid one, or the other
 * header is present but does not decode.  A slot never written
 * (DMR_LOG_BAD_MAGIC) is no fall-back.
 */
static void dmr_test_load_fell_back(struct kunit *test)
{
	struct dmr_ckpt c[DMR_CKPT_SLOTS] = { { .seq = 7 }, { .seq = 8 } };
	enum dmr_log_status st[DMR_CKPT_SLOTS] = { DMR_LOG_OK, DMR_LOG_OK };
	static const enum dmr_log_status damaged[] = {
		DMR_LOG_BAD_CSUM, DMR_LOG_BAD_UUID, DMR_LOG_BAD_LOCATION, DMR_LOG_BAD_COUNTS,
	};
	unsigned int i;

	/* both valid: the newest is no fall-back, the older one is */
	KUNIT_EXPECT_FALSE(test, dmr_load_fell_back(st, c, 1));
	KUNIT_EXPECT_TRUE(test, dmr_load_fell_back(st, c, 0));
	c[0].seq = 9;
	KUNIT_EXPECT_FALSE(test, dmr_load_fell_back(st, c, 0));
	KUNIT_EXPECT_TRUE(test, dmr_load_fell_back(st, c, 1));
	/* the other never written (after format) */
	st[1] = DMR_LOG_BAD_MAGIC;
	KUNIT_EXPECT_FALSE(test, dmr_load_fell_back(st, c, 0));
	/* the other torn or damaged: it may be newer */
	for (i = 0; i < ARRAY_SIZE(damaged); i++) {
		st[1] = damaged[i];
		KUNIT_EXPECT_TRUE(test, dmr_load_fell_back(st, c, 0));
	}
}

/*
 * Rule 4: after a crash the sequence resumes above every number the
 * writer could have used since the checkpoint loaded, and the writer
 * checkpoints before it could use more.
 */
static void dmr_test_seq_window(struct kunit *test)
{
	u64 ck = 1000, s;

	/* the jump covers a whole window past the checkpoint... */
	KUNIT_EXPECT_EQ(test, dmr_seq_after_recovery(ck, ck), ck + DMR_SEQ_WINDOW);
	KUNIT_EXPECT_EQ(test, dmr_seq_after_recovery(ck, ck + 5), ck + DMR_SEQ_WINDOW);
	/* ...and never goes back below what replay applied */
	KUNIT_EXPECT_EQ(test, dmr_seq_after_recovery(ck, ck + DMR_SEQ_WINDOW + 9),
			ck + DMR_SEQ_WINDOW + 9);
	/* the writer stops at half the window, so a stale unit is always below */
	KUNIT_EXPECT_FALSE(test, dmr_seq_window_full(ck, ck));
	KUNIT_EXPECT_FALSE(test, dmr_seq_window_full(ck + DMR_SEQ_WINDOW / 2 - 1, ck));
	KUNIT_EXPECT_TRUE(test, dmr_seq_window_full(ck + DMR_SEQ_WINDOW / 2, ck));
	for (s = ck; s < ck + DMR_SEQ_WINDOW; s += DMR_SEQ_WINDOW / 7) {
		if (dmr_seq_window_full(s, ck))
			break;
		KUNIT_EXPECT_LT(test, s, dmr_seq_after_recovery(ck, ck) + 1);
	}
}

/*
 * Rule 4 when the load falls back past a newer slot: the sequence counts
 * from the newest completed checkpoint, or from a bound on it when that
 * slot's header does not decode (dmr_ckpt_log_seq_bound()).
 */
static void dmr_test_ckpt_log_seq_bound(struct kunit *test)
{
	enum dmr_log_status st[DMR_CKPT_SLOTS] = { DMR_LOG_OK, DMR_LOG_OK };
	struct dmr_ckpt c[DMR_CKPT_SLOTS] = {
		{ .seq = 7, .log_seq = 1000 },
		{ .seq = 8, .log_seq = 1000 + DMR_SEQ_WINDOW / 2 },
	};
	u64 newer = c[1].log_seq;

	/* the newest loaded: its own */
	KUNIT_EXPECT_EQ(test, dmr_ckpt_log_seq_bound(st, c, 1), newer);
	/* fell back to the older: the newer one's, not the older's */
	KUNIT_EXPECT_EQ(test, dmr_ckpt_log_seq_bound(st, c, 0), newer);
	KUNIT_EXPECT_GT(test, dmr_seq_after_recovery(dmr_ckpt_log_seq_bound(st, c, 0), 1001),
			newer + DMR_SEQ_WINDOW - 1);
	/* the other header unreadable as a checkpoint: a bound above any it held */
	st[1] = DMR_LOG_BAD_CSUM;
	KUNIT_EXPECT_EQ(test, dmr_ckpt_log_seq_bound(st, c, 0), 1000 + DMR_SEQ_WINDOW);
	KUNIT_EXPECT_GT(test, dmr_ckpt_log_seq_bound(st, c, 0), newer);
	st[1] = DMR_LOG_BAD_MAGIC;	/* zeroed, or never written */
	KUNIT_EXPECT_EQ(test, dmr_ckpt_log_seq_bound(st, c, 0), 1000 + DMR_SEQ_WINDOW);
}

/*
 * Where a GC head writes next (dmr_gc_segments_needed()'s room): the open
 * unit's write pointer, else the next summary's block; none without a
 * segment or in one that is done (dmr_seg_done(): fewer than two free).
 */
static void dmr_test_head_next_free(struct kunit *test)
{
	const u32 S = TW_SEG_BLOCKS;

	KUNIT_EXPECT_EQ(test, dmr_head_next_free(3, 10, true, 17, S), 17U);
	KUNIT_EXPECT_EQ(test, dmr_head_next_free(3, 10, false, 17, S), 10U);
	KUNIT_EXPECT_EQ(test, dmr_head_next_free(DMR_NO_SEGMENT, 10, false, 0, S), S);
	KUNIT_EXPECT_EQ(test, dmr_head_next_free(3, S - 2, false, 0, S), S - 2);
	KUNIT_EXPECT_EQ(test, dmr_head_next_free(3, S - 1, false, 0, S), S);
	KUNIT_EXPECT_EQ(test, dmr_head_next_free(3, 0, true, S - 1, S), S);
	KUNIT_EXPECT_EQ(test, dmr_head_next_free(3, 0, true, S, S), S);
}

/* Rule 9: a head reserves its next segment before it can be done. */
static void dmr_test_head_needs_next(struct kunit *test)
{
	const u32 S = 256;
	u32 wp;

	for (wp = 1; wp <= S; wp++) {
		KUNIT_EXPECT_EQ(test, dmr_head_needs_next(DMR_NO_SEGMENT, wp, S),
				dmr_seg_done(wp, S));
		KUNIT_EXPECT_FALSE(test, dmr_head_needs_next(7, wp, S));
	}
	/* the last two blocks: a unit ending there leaves the segment done */
	KUNIT_EXPECT_FALSE(test, dmr_head_needs_next(DMR_NO_SEGMENT, S - 2, S));
	KUNIT_EXPECT_TRUE(test, dmr_head_needs_next(DMR_NO_SEGMENT, S - 1, S));
}

/* A relocation unit takes two summary words per block. */
static void dmr_test_reloc_unit_room(struct kunit *test)
{
	struct dmr_unit *u = kunit_kzalloc(test, sizeof(*u), GFP_KERNEL);
	u32 n;

	KUNIT_ASSERT_NOT_NULL(test, u);
	dmr_unit_reset(u, DMR_UNIT_RELOC);
	KUNIT_EXPECT_EQ(test, dmr_unit_block_words(u), 2U);
	n = dmr_write_chunk(u, 1, 4096, 4000);
	KUNIT_EXPECT_EQ(test, n, DMR_SUMMARY_WORDS / 2);
	u->nr_blocks = DMR_SUMMARY_WORDS / 2 - 1;
	KUNIT_EXPECT_TRUE(test, dmr_unit_takes_block(true, u, 600, 4096));
	u->nr_blocks++;
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(true, u, 600, 4096));
	dmr_unit_reset(u, 0);
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, 4096, 4000), DMR_SUMMARY_WORDS);

	/*
	 * A --wide device's heads (format 4): every unit wide, a GC head's
	 * relocating, each at dmr_unit_capacity() of its kind.
	 */
	KUNIT_EXPECT_EQ(test, dmr_unit_flags(false, false), 0U);
	KUNIT_EXPECT_EQ(test, dmr_unit_flags(true, false), DMR_UNIT_RELOC);
	KUNIT_EXPECT_EQ(test, dmr_unit_flags(false, true), DMR_UNIT_WIDE);
	KUNIT_EXPECT_EQ(test, dmr_unit_flags(true, true), DMR_UNIT_RELOC | DMR_UNIT_WIDE);
	dmr_unit_reset(u, dmr_unit_flags(false, true));
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, 4096, 4000), dmr_unit_capacity(true, false));
	dmr_unit_reset(u, dmr_unit_flags(true, true));
	n = dmr_write_chunk(u, 1, 4096, 4000);
	KUNIT_EXPECT_EQ(test, n, dmr_unit_capacity(true, true));
	KUNIT_EXPECT_EQ(test, n, 252U);
	u->nr_blocks = n - 1;
	KUNIT_EXPECT_TRUE(test, dmr_unit_takes_block(true, u, 600, 4096));
	u->nr_blocks++;
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(true, u, 600, 4096));
}

/* Rule 10: which copies force another head's open unit closed. */
static void dmr_test_copy_in_open_unit(struct kunit *test)
{
	const u32 S = 256, seg = 5, off = 40, wp = 60;
	u32 base = seg * S;

	/* the open unit's data blocks, off + 1 .. wp - 1 */
	KUNIT_EXPECT_TRUE(test, dmr_copy_in_open_unit(base + off + 1 + 1, S, true, seg, off, wp));
	KUNIT_EXPECT_TRUE(test, dmr_copy_in_open_unit(base + wp - 1 + 1, S, true, seg, off, wp));
	/* its summary slot, closed units before it, free blocks after it */
	KUNIT_EXPECT_FALSE(test, dmr_copy_in_open_unit(base + off + 1, S, true, seg, off, wp));
	KUNIT_EXPECT_FALSE(test, dmr_copy_in_open_unit(base + off - 1 + 1, S, true, seg, off, wp));
	KUNIT_EXPECT_FALSE(test, dmr_copy_in_open_unit(base + wp + 1, S, true, seg, off, wp));
	/* another segment, or no open unit */
	KUNIT_EXPECT_FALSE(test, dmr_copy_in_open_unit(base + S + off + 2, S, true, seg, off, wp));
	KUNIT_EXPECT_FALSE(test, dmr_copy_in_open_unit(base + off + 2, S, false, seg, off, wp));
}

/*
 * A large segment's checksum reaches its record after the segment went
 * to the second stage (dmr_write_large(), dmr_flight_fn()): the record of
 * that segment takes it, no other, and a segment the unit does not
 * record is refused.
 */
static void dmr_test_extent_csum_later(struct kunit *test)
{
	struct dmr_unit *u = dmr_tw_unit(test);

	KUNIT_EXPECT_FALSE(test, dmr_unit_set_extent_csum(u, 7, 0x1234));
	u->nr_extents = 3;
	u->ext_seg[0] = 9;
	u->ext_seg[1] = 7;
	u->ext_seg[2] = 12;
	KUNIT_EXPECT_TRUE(test, dmr_unit_set_extent_csum(u, 7, 0x1234));
	KUNIT_EXPECT_EQ(test, u->ext_csum[0], 0U);
	KUNIT_EXPECT_EQ(test, u->ext_csum[1], 0x1234U);
	KUNIT_EXPECT_EQ(test, u->ext_csum[2], 0U);
	KUNIT_EXPECT_TRUE(test, dmr_unit_set_extent_csum(u, 12, 0xabcd));
	KUNIT_EXPECT_EQ(test, u->ext_csum[2], 0xabcdU);
	/* the last record counts; one past it is not a record */
	u->ext_seg[3] = 30;
	KUNIT_EXPECT_FALSE(test, dmr_unit_set_extent_csum(u, 30, 1));
	KUNIT_EXPECT_EQ(test, u->ext_csum[3], 0U);
}

/*
 * Large segments in a unit (format 5, dmr_write_large()): a record joins
 * only a unit with no data block and room for it (the count word with
 * the first), at most DMR_UNIT_MAX_EXTENTS; a discard never joins a unit
 * after one; a unit holding only records is written by a flush and
 * leaves fewer words to a write's chunk; rule 10 sees the blocks a
 * record covers, not those next to it.
 */
static void dmr_test_extents_in_units(struct kunit *test)
{
	struct dmr_unit *u = dmr_tw_unit(test);
	const u32 S = 256;
	u32 w;

	KUNIT_EXPECT_FALSE(test, dmr_extent_needs_seal(true, u));
	KUNIT_EXPECT_FALSE(test, dmr_extent_needs_seal(false, u));
	/* discards first is the order they apply in: no seal */
	u->nr_discards = 3;
	KUNIT_EXPECT_FALSE(test, dmr_extent_needs_seal(true, u));
	u->nr_blocks = 1;
	KUNIT_EXPECT_TRUE(test, dmr_extent_needs_seal(true, u));
	KUNIT_EXPECT_FALSE(test, dmr_extent_needs_seal(false, u));
	u->nr_blocks = 0;
	u->nr_extents = DMR_UNIT_MAX_EXTENTS - 1;
	KUNIT_EXPECT_FALSE(test, dmr_extent_needs_seal(true, u));
	u->nr_extents = DMR_UNIT_MAX_EXTENTS;
	KUNIT_EXPECT_TRUE(test, dmr_extent_needs_seal(true, u));
	/* the summary's room: discards that leave one record and its count */
	dmr_unit_reset(u, 0);
	u->nr_discards = (DMR_SUMMARY_WORDS - 2) / 2;	/* 2 words left */
	KUNIT_EXPECT_TRUE(test, dmr_extent_needs_seal(true, u));
	u->nr_discards = (DMR_SUMMARY_WORDS - 4) / 2;	/* 4 left: 1 + 3 */
	KUNIT_EXPECT_FALSE(test, dmr_extent_needs_seal(true, u));
	u->nr_extents = 1;	/* now 0 left */
	KUNIT_EXPECT_TRUE(test, dmr_extent_needs_seal(true, u));
	/* a wide unit's record takes 4 words */
	dmr_unit_reset(u, DMR_UNIT_WIDE);
	u->nr_extents = 1;
	KUNIT_EXPECT_EQ(test, dmr_unit_words(u), 5ULL);
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, 8192, 5000), (DMR_SUMMARY_WORDS - 5) / 2);

	/* a discard waits for a unit without records */
	dmr_unit_reset(u, 0);
	u->nr_extents = 1;
	KUNIT_EXPECT_TRUE(test, dmr_discard_needs_seal(true, u));
	/* written by a flush, records alone */
	KUNIT_EXPECT_TRUE(test, dmr_head_unwritten(true, u, 10, 10));
	KUNIT_EXPECT_FALSE(test, dmr_head_unwritten(false, u, 10, 10));
	/* a write's chunk after 2 records: 1 + 2 * 3 words taken */
	u->nr_extents = 2;
	w = DMR_SUMMARY_WORDS - 7;
	KUNIT_EXPECT_EQ(test, dmr_write_chunk(u, 1, 8192, 5000), w);
	u->nr_blocks = w;
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_block(true, u, 2000, 8192));
	/* a write's data waits for a unit without records: replay's pages */
	u->nr_blocks = 0;
	KUNIT_EXPECT_TRUE(test, dmr_unit_takes_block(true, u, 2000, 8192));
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_data(true, u, 2000, 8192));
	u->nr_extents = 0;
	KUNIT_EXPECT_TRUE(test, dmr_unit_takes_data(true, u, 2000, 8192));
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_data(false, u, 2000, 8192));
	KUNIT_EXPECT_FALSE(test, dmr_unit_takes_data(true, u, 8192, 8192));
	u->nr_extents = 2;

	/* rule 10: blocks [512, 768) and [1024, 1280) recorded */
	dmr_unit_reset(u, 0);
	u->nr_extents = 2;
	u->ext_lba[0] = 512;
	u->ext_lba[1] = 1024;
	KUNIT_EXPECT_TRUE(test, dmr_unit_records(true, u, S, 512, 1));
	KUNIT_EXPECT_TRUE(test, dmr_unit_records(true, u, S, 767, 1));
	KUNIT_EXPECT_TRUE(test, dmr_unit_records(true, u, S, 1279, 1));
	KUNIT_EXPECT_TRUE(test, dmr_unit_records(true, u, S, 700, 400));
	KUNIT_EXPECT_TRUE(test, dmr_unit_records(true, u, S, 0, 513));
	KUNIT_EXPECT_FALSE(test, dmr_unit_records(true, u, S, 0, 512));
	KUNIT_EXPECT_FALSE(test, dmr_unit_records(true, u, S, 768, 256));
	KUNIT_EXPECT_FALSE(test, dmr_unit_records(true, u, S, 1280, 5));
	KUNIT_EXPECT_FALSE(test, dmr_unit_records(false, u, S, 512, 1));
	u->nr_extents = 1;
	KUNIT_EXPECT_FALSE(test, dmr_unit_records(true, u, S, 1024, 1));
}

/* ------------------------------------------------------------------ */
/* the worker's next step */

struct dmr_worker_case {
	const char *name;
	enum dmr_worker_phase phase;
	struct dmr_worker_state s;
	enum dmr_worker_step want;
	enum dmr_worker_phase then;
};

#define TW_ALL	.ckpt_due = true, .gc_collect_req = true, .mode_write = true, \
		.seq_window_full = true

static const struct dmr_worker_case dmr_worker_cases[] = {
	/* a round, in its order: each check once */
	{ "round: the timer's checkpoint first", DMR_WORKER_AT_ROUND,
	  { TW_ALL, .batch_empty = true, .nr_commit = 1 },
	  DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_AT_COLLECT },
	{ "round: then gc_collect", DMR_WORKER_AT_COLLECT,
	  { TW_ALL, .batch_empty = true, .nr_commit = 1 },
	  DMR_WORKER_GC_COLLECT, DMR_WORKER_AT_WINDOW },
	{ "round: then the window", DMR_WORKER_AT_WINDOW,
	  { TW_ALL, .batch_empty = true, .nr_commit = 1 },
	  DMR_WORKER_CHECKPOINT_WINDOW, DMR_WORKER_AT_TAKE },
	{ "round: then the queue", DMR_WORKER_AT_TAKE,
	  { TW_ALL, .batch_empty = true, .nr_commit = 1 },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "round: gc_collect, no checkpoint due", DMR_WORKER_AT_ROUND,
	  { .gc_collect_req = true, .mode_write = true, .seq_window_full = true },
	  DMR_WORKER_GC_COLLECT, DMR_WORKER_AT_WINDOW },
	{ "round: the window, nothing else asked", DMR_WORKER_AT_ROUND,
	  { .mode_write = true, .seq_window_full = true },
	  DMR_WORKER_CHECKPOINT_WINDOW, DMR_WORKER_AT_TAKE },
	{ "round: a full batch is not taken again", DMR_WORKER_AT_ROUND,
	  { .mode_write = true },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "round: an empty batch takes the queue", DMR_WORKER_AT_ROUND,
	  { .mode_write = true, .batch_empty = true },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	/* a stopping worker: no checkpoint, no collection */
	{ "stopping: none of the three", DMR_WORKER_AT_ROUND,
	  { TW_ALL, .stopping = true, .batch_empty = true },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "stopping: no gc_collect", DMR_WORKER_AT_COLLECT,
	  { TW_ALL, .stopping = true },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "stopping: no window", DMR_WORKER_AT_WINDOW,
	  { TW_ALL, .stopping = true },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "stopping: still commits", DMR_WORKER_AT_POP,
	  { TW_ALL, .stopping = true, .batch_empty = true, .nr_commit = 1 },
	  DMR_WORKER_COMMIT, DMR_WORKER_AT_OWED },
	/* a target that does not write: no window checkpoint */
	{ "read-only or failed: no window", DMR_WORKER_AT_ROUND,
	  { .seq_window_full = true, .batch_empty = true },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "read-only: the timer's checkpoint still goes", DMR_WORKER_AT_ROUND,
	  { .ckpt_due = true, .seq_window_full = true },
	  DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_AT_COLLECT },
	/* after taking the queue */
	{ "pop: a request", DMR_WORKER_AT_POP,
	  { .mode_write = true, .nr_commit = 1, .commit_behind = 1 },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "pop: no request, a flush waits: commit", DMR_WORKER_AT_POP,
	  { .mode_write = true, .batch_empty = true, .nr_commit = 1,
	    .commit_behind = 1 },
	  DMR_WORKER_COMMIT, DMR_WORKER_AT_OWED },
	{ "pop: no request, no flush: try GC", DMR_WORKER_AT_POP,
	  { .mode_write = true, .batch_empty = true },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_GC_TRIED },
	{ "GC tried, it had work: next round", DMR_WORKER_AT_GC_TRIED,
	  { .mode_write = true, .batch_empty = true, .gc_did = true },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "GC tried, it had work: the timer's checkpoint", DMR_WORKER_AT_GC_TRIED,
	  { .ckpt_due = true, .batch_empty = true, .gc_did = true },
	  DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_AT_COLLECT },
	{ "GC tried, no work: idle", DMR_WORKER_AT_GC_TRIED,
	  { .mode_write = true, .batch_empty = true },
	  DMR_WORKER_IDLE, DMR_WORKER_AT_GC_TRIED },
	{ "GC tried, no work, a checkpoint due: idle", DMR_WORKER_AT_GC_TRIED,
	  { TW_ALL, .batch_empty = true },
	  DMR_WORKER_IDLE, DMR_WORKER_AT_GC_TRIED },
	/* after a request */
	{ "request, no flush waits: GC step", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_ROUND },
	{ "request, a flush waits: no GC, the next request", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .nr_commit = 1, .commit_behind = 1 },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "request, a flush waits, batch empty: no GC, take", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .batch_empty = true, .nr_commit = 1,
	    .commit_behind = 1 },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "request, a flush waits: the timer's checkpoint", DMR_WORKER_AT_REQ_COMMIT,
	  { TW_ALL, .nr_commit = 1, .commit_behind = 1 },
	  DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_AT_COLLECT },
	{ "request, behind one short: no commit", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .nr_commit = 1,
	    .commit_behind = DMR_GROUP_COMMIT_BEHIND - 1 },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "request, behind reached: commit", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .nr_commit = 1,
	    .commit_behind = DMR_GROUP_COMMIT_BEHIND },
	  DMR_WORKER_COMMIT, DMR_WORKER_AT_OWED },
	{ "request, most flushes wait: commit", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .nr_commit = DMR_GROUP_COMMIT_MAX,
	    .commit_behind = 1 },
	  DMR_WORKER_COMMIT, DMR_WORKER_AT_OWED },
	{ "request, committed: GC step", DMR_WORKER_AT_REQ_GC,
	  { .mode_write = true },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_ROUND },
	{ "request, committed, stopping: GC step", DMR_WORKER_AT_REQ_GC,
	  { .stopping = true },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_ROUND },
	/* GC steps deferred while flushes wait (item 14) */
	{ "request, a flush waits, steps owed: deferred", DMR_WORKER_AT_REQ_GC,
	  { .mode_write = true, .nr_commit = 1, .gc_owed = DMR_GC_OWED_MAX },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "request, a flush waits, too many owed: GC step", DMR_WORKER_AT_REQ_GC,
	  { .mode_write = true, .nr_commit = 1, .gc_owed = DMR_GC_OWED_MAX + 1 },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_ROUND },
	{ "committed, steps owed: GC step", DMR_WORKER_AT_OWED,
	  { .mode_write = true, .gc_owed = 2 },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_OWED },
	{ "committed, nothing owed: next round", DMR_WORKER_AT_OWED,
	  { .mode_write = true, .batch_empty = true },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "committed, nothing owed: the timer's checkpoint", DMR_WORKER_AT_OWED,
	  { TW_ALL },
	  DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_AT_COLLECT },
	/* what the mechanisms returned: first, whatever the phase */
	{ "needs: a checkpoint completed: free first", DMR_WORKER_AT_POP,
	  { TW_ALL, .ckpt_unfreed = true, .held = true,
	    .need = DMR_NEED_CKPT_GC | DMR_NEED_ROOM },
	  DMR_WORKER_GC_FREE, DMR_WORKER_AT_POP },
	{ "needs: read-only or failed: nothing freed", DMR_WORKER_AT_POP,
	  { .ckpt_unfreed = true },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "needs: GC's checkpoint, before the held request", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .held = true, .need = DMR_NEED_CKPT_GC | DMR_NEED_ROOM },
	  DMR_WORKER_CHECKPOINT_NEEDED, DMR_WORKER_AT_REQ_COMMIT },
	{ "needs: GC's checkpoint, even while stopping", DMR_WORKER_AT_ROUND,
	  { .mode_write = true, .stopping = true, .held = true,
	    .need = DMR_NEED_CKPT_GC | DMR_NEED_ROOM },
	  DMR_WORKER_CHECKPOINT_NEEDED, DMR_WORKER_AT_ROUND },
	{ "needs: the cache's checkpoint", DMR_WORKER_AT_ROUND,
	  { TW_ALL, .need = DMR_NEED_CKPT_CACHE },
	  DMR_WORKER_CHECKPOINT_NEEDED, DMR_WORKER_AT_ROUND },
	{ "needs: not the cache's while stopping", DMR_WORKER_AT_TAKE,
	  { .mode_write = true, .stopping = true, .batch_empty = true,
	    .need = DMR_NEED_CKPT_CACHE },
	  DMR_WORKER_TAKE_QUEUE, DMR_WORKER_AT_POP },
	{ "needs: no checkpoint without writing: the held request", DMR_WORKER_AT_POP,
	  { .held = true, .need = DMR_NEED_CKPT_GC | DMR_NEED_CKPT_CACHE },
	  DMR_WORKER_RESUME, DMR_WORKER_AT_POP },
	{ "needs: held, no room: urgent GC", DMR_WORKER_AT_REQ_COMMIT,
	  { .mode_write = true, .held = true, .nr_commit = 1,
	    .commit_behind = DMR_GROUP_COMMIT_BEHIND, .need = DMR_NEED_ROOM },
	  DMR_WORKER_GC_URGENT, DMR_WORKER_AT_REQ_COMMIT },
	{ "needs: held: goes on before the round", DMR_WORKER_AT_ROUND,
	  { TW_ALL, .held = true },
	  DMR_WORKER_RESUME, DMR_WORKER_AT_ROUND },
	{ "needs: room without a held request: nothing", DMR_WORKER_AT_POP,
	  { .mode_write = true, .need = DMR_NEED_ROOM },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	/* rule 7: marked not clean before a step that writes the log */
	{ "clean: a write is marked first", DMR_WORKER_AT_POP,
	  { .mode_write = true, .clean_on_disk = true, .next_writes = true },
	  DMR_WORKER_MARK_DIRTY, DMR_WORKER_AT_POP },
	{ "clean: a read is not", DMR_WORKER_AT_POP,
	  { .mode_write = true, .clean_on_disk = true },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "clean, read-only: nothing to mark", DMR_WORKER_AT_POP,
	  { .clean_on_disk = true, .next_writes = true },
	  DMR_WORKER_HANDLE_BIO, DMR_WORKER_AT_REQ_COMMIT },
	{ "clean: marked before the collection", DMR_WORKER_AT_COLLECT,
	  { TW_ALL, .clean_on_disk = true },
	  DMR_WORKER_MARK_DIRTY, DMR_WORKER_AT_COLLECT },
	{ "clean, stopping: no collection; the write is marked", DMR_WORKER_AT_COLLECT,
	  { TW_ALL, .stopping = true, .clean_on_disk = true, .next_writes = true },
	  DMR_WORKER_MARK_DIRTY, DMR_WORKER_AT_POP },
	{ "clean: a GC step with a victim read pending", DMR_WORKER_AT_POP,
	  { .mode_write = true, .batch_empty = true, .clean_on_disk = true,
	    .gc_rd_pending = true },
	  DMR_WORKER_MARK_DIRTY, DMR_WORKER_AT_POP },
	{ "clean: a GC step without one", DMR_WORKER_AT_POP,
	  { .mode_write = true, .batch_empty = true, .clean_on_disk = true },
	  DMR_WORKER_GC_STEP, DMR_WORKER_AT_GC_TRIED },
	{ "clean: the request's GC step", DMR_WORKER_AT_REQ_GC,
	  { .mode_write = true, .clean_on_disk = true, .gc_rd_pending = true },
	  DMR_WORKER_MARK_DIRTY, DMR_WORKER_AT_REQ_GC },
	{ "clean: an owed GC step", DMR_WORKER_AT_OWED,
	  { .mode_write = true, .clean_on_disk = true, .gc_rd_pending = true,
	    .gc_owed = 1 },
	  DMR_WORKER_MARK_DIRTY, DMR_WORKER_AT_OWED },
};

static void dmr_worker_desc(const struct dmr_worker_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", c->name);
}

KUNIT_ARRAY_PARAM(dmr_worker, dmr_worker_cases, dmr_worker_desc);

static void dmr_test_worker_next(struct kunit *test)
{
	const struct dmr_worker_case *c = test->param_value;
	enum dmr_worker_phase phase = c->phase;

	KUNIT_EXPECT_EQ(test, dmr_worker_next(&c->s, &phase), c->want);
	KUNIT_EXPECT_EQ(test, phase, c->then);
}

/*
 * Each check once per round, even when its step leaves the condition as
 * it was (a checkpoint that failed): the worker still gets to its
 * requests and commits.
 */
static void dmr_test_worker_round_order(struct kunit *test)
{
	static const enum dmr_worker_step want[] = {
		DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_GC_COLLECT,
		DMR_WORKER_CHECKPOINT_WINDOW, DMR_WORKER_TAKE_QUEUE,
		DMR_WORKER_COMMIT,
		DMR_WORKER_CHECKPOINT_DUE, DMR_WORKER_GC_COLLECT,
		DMR_WORKER_CHECKPOINT_WINDOW, DMR_WORKER_TAKE_QUEUE,
		DMR_WORKER_HANDLE_BIO, DMR_WORKER_COMMIT, DMR_WORKER_GC_STEP,
		DMR_WORKER_CHECKPOINT_DUE,
	};
	struct dmr_worker_state s = { TW_ALL, .batch_empty = true, .nr_commit = 1 };
	enum dmr_worker_phase phase = DMR_WORKER_AT_ROUND;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		/* the second round finds a request, then one flush waits */
		if (i == 9)
			s.batch_empty = false;
		if (i == 10) {
			s.batch_empty = true;
			s.commit_behind = DMR_GROUP_COMMIT_BEHIND;
		}
		/* the request's GC step, deferred while its flush waited */
		if (i == 11) {
			s.nr_commit = 0;
			s.gc_owed = 1;
		}
		if (i == 12)
			s.gc_owed = 0;
		KUNIT_EXPECT_EQ(test, dmr_worker_next(&s, &phase), want[i]);
	}
}

/*
 * A model of the worker (dmr_worker()) around dmr_worker_next(): the
 * steps change the state as the kernel's do.  @queued requests wait
 * (TW_ENDLESS: the queue never empties, a take finds TW_BATCH), every
 * @flush_every-th from the first is a flush, and GC has work for
 * @gc_work steps.
 */
#define TW_BATCH	7U
#define TW_ENDLESS	(~0U)

struct dmr_tw_worker {
	struct dmr_worker_state s;
	enum dmr_worker_phase phase;
	u32 queued, batch, flush_every, gc_work;
	u32 handled, oldest, max_wait;
	u32 commits, gc_steps, gc_with_flush, ckpts, collects;
	u32 refill, refill_left, unexpected;
};

static enum dmr_worker_step dmr_tw_step(struct dmr_tw_worker *w)
{
	struct dmr_worker_state *s = &w->s;
	enum dmr_worker_step step;

	s->batch_empty = !w->batch;
	step = dmr_worker_next(s, &w->phase);
	switch (step) {
	case DMR_WORKER_CHECKPOINT_DUE:
		s->ckpt_due = false;
		w->ckpts++;
		break;
	case DMR_WORKER_GC_COLLECT:
		s->gc_collect_req = false;
		w->collects++;
		break;
	case DMR_WORKER_CHECKPOINT_WINDOW:
		s->seq_window_full = false;
		w->ckpts++;
		break;
	case DMR_WORKER_TAKE_QUEUE:
		w->batch = w->queued == TW_ENDLESS ? TW_BATCH : w->queued;
		if (w->queued != TW_ENDLESS)
			w->queued = 0;
		break;
	case DMR_WORKER_HANDLE_BIO:
		w->batch--;
		if (w->flush_every && w->handled % w->flush_every == 0) {
			if (!s->nr_commit)
				w->oldest = w->handled;
			s->nr_commit++;
		}
		w->handled++;
		s->commit_behind = dmr_commit_behind(s->nr_commit, w->handled, w->oldest);
		s->gc_owed = dmr_gc_owed_after_request(s->nr_commit, s->gc_owed);
		if (s->nr_commit)
			w->max_wait = max(w->max_wait, w->handled - w->oldest);
		break;
	case DMR_WORKER_COMMIT:
		s->nr_commit = 0;
		s->commit_behind = 0;
		w->commits++;
		/* writers waiting for their completions send the next ones */
		w->queued += min(w->refill, w->refill_left);
		w->refill_left -= min(w->refill, w->refill_left);
		break;
	case DMR_WORKER_GC_STEP:
		/* while a flush waits only to pay a debt past DMR_GC_OWED_MAX */
		if (s->nr_commit && s->gc_owed <= DMR_GC_OWED_MAX)
			w->gc_with_flush++;
		s->gc_did = w->gc_work > 0;
		if (w->gc_work && w->gc_work != TW_ENDLESS)
			w->gc_work--;
		s->gc_owed = dmr_gc_owed_after_step(s->gc_owed, s->gc_did);
		w->gc_steps++;
		break;
	case DMR_WORKER_IDLE:
		break;
	case DMR_WORKER_GC_FREE:
	case DMR_WORKER_CHECKPOINT_NEEDED:
	case DMR_WORKER_MARK_DIRTY:
	case DMR_WORKER_GC_URGENT:
	case DMR_WORKER_RESUME:
		/* no mechanism here returns a need (dmr_test_worker_needs()) */
		w->unexpected++;
		break;
	}
	return step;
}

/*
 * Writers at queue depth: the queue never empties, yet no flush waits
 * for more than DMR_GROUP_COMMIT_BEHIND requests (itself included), and
 * no GC step runs while one waits.
 */
static void dmr_test_worker_commit_bound(struct kunit *test)
{
	static const u32 every[] = { 1, 2, 5, 100, DMR_GROUP_COMMIT_BEHIND - 1,
				     DMR_GROUP_COMMIT_BEHIND,
				     10 * DMR_GROUP_COMMIT_BEHIND };
	const u32 requests = 20 * DMR_GROUP_COMMIT_BEHIND;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(every); i++) {
		struct dmr_tw_worker w = {
			.s = { .mode_write = true }, .queued = TW_ENDLESS,
			.flush_every = every[i], .gc_work = TW_ENDLESS,
		};
		u32 steps = 0;

		while (w.handled < requests && steps++ < 10 * requests)
			KUNIT_ASSERT_NE(test, dmr_tw_step(&w), DMR_WORKER_IDLE);
		KUNIT_EXPECT_EQ(test, w.handled, requests);
		KUNIT_EXPECT_LE(test, w.max_wait, DMR_GROUP_COMMIT_BEHIND);
		KUNIT_EXPECT_EQ(test, w.gc_with_flush, 0);
		KUNIT_EXPECT_GT(test, w.commits, 0);
		/* one flush at a time: the commit at exactly the bound */
		if (every[i] > DMR_GROUP_COMMIT_BEHIND)
			KUNIT_EXPECT_EQ(test, w.max_wait, DMR_GROUP_COMMIT_BEHIND);
		/* a flush in every request: DMR_GROUP_COMMIT_MAX per commit */
		if (every[i] == 1)
			KUNIT_EXPECT_EQ(test, w.max_wait, DMR_GROUP_COMMIT_MAX);
	}
}

/*
 * Only FUA writes (issue 40, item 14), at queue depth @depth: the writers
 * send their next requests when the commit completes the previous ones.
 * Background GC, which always has work here, still takes a step per
 * request, as with plain writes; before, it got none between commits
 * (a flush always waited), and one per commit where the queue emptied
 * for a moment, where a collection takes two.  No flush waits past
 * DMR_GROUP_COMMIT_BEHIND requests.
 */
static void dmr_test_worker_fua_gc(struct kunit *test)
{
	static const u32 depths[] = { 1, 2, 8, 32, DMR_GROUP_COMMIT_MAX,
				      3 * DMR_GROUP_COMMIT_MAX };
	const u32 requests = 4 * DMR_GROUP_COMMIT_BEHIND;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(depths); i++) {
		struct dmr_tw_worker w = {
			.s = { .mode_write = true }, .queued = depths[i],
			.flush_every = 1, .gc_work = TW_ENDLESS,
			.refill = depths[i], .refill_left = requests - depths[i],
		};
		u32 steps = 0, before_last = 0;

		while ((w.handled < requests || w.s.nr_commit || w.s.gc_owed) &&
		       steps++ < 20 * requests) {
			if (dmr_tw_step(&w) == DMR_WORKER_HANDLE_BIO &&
			    w.handled == requests)
				before_last = w.gc_steps;
		}
		KUNIT_EXPECT_EQ(test, w.handled, requests);
		/* while requests came, not in the idle time after them */
		KUNIT_EXPECT_GE(test, before_last, requests - depths[i]);
		KUNIT_EXPECT_EQ(test, w.gc_steps, requests);
		KUNIT_EXPECT_EQ(test, w.gc_with_flush, 0);
		KUNIT_EXPECT_LE(test, w.max_wait, DMR_GROUP_COMMIT_BEHIND);
	}
}

/*
 * A queue that empties: every request is handled, GC runs until it
 * reports no work, and the worker stops with no flush waiting, stopping
 * or not; a stopping worker writes no checkpoint and collects nothing.
 */
static void dmr_test_worker_drains(struct kunit *test)
{
	static const struct {
		u32 queued, flush_every, gc_work;
		bool stopping;
	} runs[] = {
		{ 0, 0, 0, false },
		{ 0, 0, 5, false },
		{ 1, 1, 0, false },
		{ 10, 3, 0, false },
		{ 300, 7, 4, false },
		{ 1000, 1000, 0, false },
		{ 10, 3, 0, true },
		{ 300, 1, 0, true },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(runs); i++) {
		struct dmr_tw_worker w = {
			.s = { .mode_write = true, .ckpt_due = true,
			       .gc_collect_req = true, .seq_window_full = true,
			       .stopping = runs[i].stopping },
			.queued = runs[i].queued,
			.flush_every = runs[i].flush_every,
			.gc_work = runs[i].gc_work,
		};
		u32 steps = 0;

		while (dmr_tw_step(&w) != DMR_WORKER_IDLE)
			KUNIT_ASSERT_NE(test, steps++, 100000);
		KUNIT_EXPECT_EQ(test, w.handled, runs[i].queued);
		KUNIT_EXPECT_EQ(test, w.s.nr_commit, 0);
		KUNIT_EXPECT_EQ(test, w.gc_work, 0);
		KUNIT_EXPECT_EQ(test, w.gc_with_flush, 0);
		KUNIT_EXPECT_EQ(test, w.ckpts, runs[i].stopping ? 0 : 2);
		KUNIT_EXPECT_EQ(test, w.collects, runs[i].stopping ? 0 : 1);
		KUNIT_EXPECT_EQ(test, w.unexpected, 0);
	}
}

/*
 * A write its submitter handles (dmr_worker_inline()): over every
 * combination of the state, only where the worker, given that write as
 * its only request, would handle it first, and only with the instance
 * active, GC idle and the map pages in memory; and each condition is
 * needed: from a state that allows it, any one changed refuses it.
 */
static void dmr_test_worker_inline(struct kunit *test)
{
	static const u32 needs[] = { 0, DMR_NEED_ROOM, DMR_NEED_CKPT_GC, DMR_NEED_CKPT_CACHE };
	const struct dmr_worker_state ok = { .mode_write = true };
#define W(...) { .mode_write = true, __VA_ARGS__ }
	static const struct {
		struct dmr_worker_state s;
		bool active, gc_idle, resident;
	} refused[] = {
		{ W(.stopping = true), true, true, true },
		{ W(.ckpt_due = true), true, true, true },
		{ W(.gc_collect_req = true), true, true, true },
		{ { .mode_write = false }, true, true, true },
		{ W(.seq_window_full = true), true, true, true },
		{ W(.nr_commit = 1), true, true, true },
		{ W(.gc_owed = 1), true, true, true },
		{ W(.held = true), true, true, true },
		{ W(.ckpt_unfreed = true), true, true, true },
		{ W(.clean_on_disk = true), true, true, true },
		{ W(.gc_rd_pending = true), true, true, true },
		{ W(.need = DMR_NEED_CKPT_CACHE), true, true, true },
		{ W(.need = DMR_NEED_CKPT_GC), true, true, true },
		{ W(.need = DMR_NEED_ROOM), true, true, true },
		{ W(), false, true, true },
		{ W(), true, false, true },
		{ W(), true, true, false },
	};
#undef W
	u32 bits, n, allowed = 0;
	unsigned int i;

	for (bits = 0; bits < (1U << 14); bits++) {
		for (n = 0; n < ARRAY_SIZE(needs); n++) {
			struct dmr_worker_state s = {
				.stopping = bits & 1, .ckpt_due = bits & 2,
				.gc_collect_req = bits & 4, .mode_write = bits & 8,
				.seq_window_full = bits & 16, .nr_commit = !!(bits & 32),
				.gc_owed = !!(bits & 64), .held = bits & 128,
				.ckpt_unfreed = bits & 256, .clean_on_disk = bits & 512,
				.gc_rd_pending = bits & 1024, .need = needs[n],
			};
			bool active = bits & 2048, gc_idle = bits & 4096, resident = bits & 8192;
			enum dmr_worker_phase phase = DMR_WORKER_AT_ROUND;

			if (!dmr_worker_inline_ok(&s, active, gc_idle, resident))
				continue;
			allowed++;
			KUNIT_EXPECT_TRUE(test, active && gc_idle && resident);
			s.batch_empty = false;
			s.next_writes = true;
			KUNIT_EXPECT_EQ_MSG(test, dmr_worker_next(&s, &phase),
					    DMR_WORKER_HANDLE_BIO,
					    "bits %#x need %#x", bits, needs[n]);
		}
	}
	KUNIT_EXPECT_EQ(test, allowed, 1U);	/* the one state below */
	KUNIT_EXPECT_TRUE(test, dmr_worker_inline_ok(&ok, true, true, true));
	for (i = 0; i < ARRAY_SIZE(refused); i++)
		KUNIT_EXPECT_FALSE_MSG(test,
				       dmr_worker_inline_ok(&refused[i].s, refused[i].active,
							    refused[i].gc_idle,
							    refused[i].resident),
				       "change %u", i);
}

/*
 * What the mechanisms return, against a model of them (issue 40's
 * structure): generated runs of requests (reads, writes, discards in
 * pieces, flushes) where a write may find no room (urgent GC, which may
 * ask for a checkpoint), a discard's piece may leave the map cache asking
 * for one, a checkpoint makes segments reusable, the newest checkpoint
 * starts clean, and GC reads victims.  Whatever the order: a held request
 * goes on before any other is handled; a request or GC writes the log
 * only after the clean checkpoint was marked (rule 7), which is marked
 * only when clean; a checkpoint a mechanism asked for comes before the
 * held request goes on (the map cache's not while stopping); the worker
 * stops with nothing held, nothing owed and every request done.
 */
struct dmr_tn_worker {
	struct dmr_worker_state s;
	enum dmr_worker_phase phase;
	u32 rnd, queued, batch, pieces, held_kind, gc_work;
	u32 done, ckpts, marks, frees, urgent;
	bool bad_order, bad_dirty, bad_mark, bad_ckpt;
};

static u32 dmr_tn_rand(struct dmr_tn_worker *w, u32 n)
{
	w->rnd = w->rnd * 1103515245U + 12345U;
	return (w->rnd >> 16) % n;
}

/* A request goes on (handled, or resumed): 0 read, 1 write, 2 discard. */
static void dmr_tn_request(struct dmr_tn_worker *w, u32 kind)
{
	struct dmr_worker_state *s = &w->s;

	s->held = false;
	if (kind && s->clean_on_disk)
		w->bad_dirty = true;
	/* a checkpoint asked for and due is written before anything goes on */
	if ((s->need & DMR_NEED_CKPT_GC) ||
	    ((s->need & DMR_NEED_CKPT_CACHE) && !s->stopping))
		w->bad_ckpt = true;
	if (kind == 1 && !dmr_tn_rand(w, 4)) {	/* no room */
		s->held = true;
		s->need |= DMR_NEED_ROOM;
	} else if (kind == 2 && w->pieces > 1) {	/* a piece */
		w->pieces--;
		s->held = true;
		if (!dmr_tn_rand(w, 2))
			s->need |= DMR_NEED_CKPT_CACHE;
	}
	if (s->held) {
		w->held_kind = kind;
		return;
	}
	w->done++;
	if (!dmr_tn_rand(w, 3)) {
		if (!s->nr_commit)
			s->commit_behind = 0;
		s->nr_commit++;
	}
	s->commit_behind += !!s->nr_commit;
}

static enum dmr_worker_step dmr_tn_step(struct dmr_tn_worker *w)
{
	struct dmr_worker_state *s = &w->s;
	enum dmr_worker_step step;
	u32 kind;

	s->batch_empty = !w->batch;
	step = dmr_worker_next(s, &w->phase);
	switch (step) {
	case DMR_WORKER_CHECKPOINT_DUE:
	case DMR_WORKER_CHECKPOINT_WINDOW:
	case DMR_WORKER_CHECKPOINT_NEEDED:
		if (step == DMR_WORKER_CHECKPOINT_DUE)
			s->ckpt_due = false;
		if (step == DMR_WORKER_CHECKPOINT_WINDOW)
			s->seq_window_full = false;
		s->need &= ~(DMR_NEED_CKPT_GC | DMR_NEED_CKPT_CACHE);
		s->ckpt_unfreed = true;
		w->ckpts++;
		break;
	case DMR_WORKER_GC_FREE:
		s->ckpt_unfreed = false;
		w->frees++;
		break;
	case DMR_WORKER_MARK_DIRTY:
		if (!s->clean_on_disk)
			w->bad_mark = true;
		s->clean_on_disk = false;
		w->marks++;
		break;
	case DMR_WORKER_GC_COLLECT:
		if (s->clean_on_disk)
			w->bad_dirty = true;
		s->gc_collect_req = false;
		s->gc_rd_pending = false;
		break;
	case DMR_WORKER_TAKE_QUEUE:
		w->batch = w->queued;
		w->queued = 0;
		break;
	case DMR_WORKER_HANDLE_BIO:
		if (s->held)
			w->bad_order = true;
		w->batch--;
		kind = s->next_writes ? 1 + dmr_tn_rand(w, 2) : 0;
		w->pieces = kind == 2 ? 1 + dmr_tn_rand(w, 4) : 0;
		dmr_tn_request(w, kind);
		/* the next request in the batch */
		s->next_writes = dmr_tn_rand(w, 3) != 0;
		break;
	case DMR_WORKER_RESUME:
		dmr_tn_request(w, w->held_kind);
		break;
	case DMR_WORKER_GC_URGENT:
		w->urgent++;
		if (!dmr_tn_rand(w, 3))
			s->need |= DMR_NEED_CKPT_GC;	/* room stays needed */
		else
			s->need &= ~DMR_NEED_ROOM;
		break;
	case DMR_WORKER_COMMIT:
		s->nr_commit = 0;
		s->commit_behind = 0;
		break;
	case DMR_WORKER_GC_STEP:
		if (s->gc_rd_pending && s->clean_on_disk)
			w->bad_dirty = true;
		s->gc_did = w->gc_work > 0;
		if (w->gc_work) {
			w->gc_work--;
			/* a victim read, collected at the next step */
			s->gc_rd_pending = !s->gc_rd_pending;
			if (!dmr_tn_rand(w, 4))
				s->need |= DMR_NEED_CKPT_GC;
		}
		break;
	case DMR_WORKER_IDLE:
		break;
	}
	return step;
}

static void dmr_test_worker_needs(struct kunit *test)
{
	u32 seed, runs = 0, steps_all = 0, urgent = 0, marks = 0;

	for (seed = 1; seed <= 400; seed++) {
		struct dmr_tn_worker w = {
			.s = { .mode_write = true, .clean_on_disk = seed % 2,
			       .stopping = seed % 5 == 0,
			       .ckpt_due = seed % 3 == 0, .gc_collect_req = seed % 7 == 0,
			       .next_writes = true },
			.rnd = seed, .gc_work = seed % 11,
		};
		u32 steps = 0, queued = 1 + seed % 40;

		w.queued = queued;
		while (dmr_tn_step(&w) != DMR_WORKER_IDLE)
			KUNIT_ASSERT_LT(test, steps++, 100000U);
		KUNIT_EXPECT_FALSE_MSG(test, w.bad_order,
				       "seed %u: a request before the held one", seed);
		KUNIT_EXPECT_FALSE_MSG(test, w.bad_dirty,
				       "seed %u: the log written while clean", seed);
		KUNIT_EXPECT_FALSE_MSG(test, w.bad_mark,
				       "seed %u: marked when not clean", seed);
		KUNIT_EXPECT_FALSE_MSG(test, w.bad_ckpt,
				       "seed %u: went on before its checkpoint", seed);
		KUNIT_EXPECT_EQ_MSG(test, w.done, queued, "seed %u", seed);
		KUNIT_EXPECT_FALSE_MSG(test, w.s.held, "seed %u", seed);
		KUNIT_EXPECT_FALSE_MSG(test, w.s.ckpt_unfreed, "seed %u", seed);
		KUNIT_EXPECT_EQ_MSG(test, w.s.nr_commit, 0U, "seed %u", seed);
		KUNIT_EXPECT_EQ_MSG(test, w.s.need & (DMR_NEED_ROOM | DMR_NEED_CKPT_GC), 0U,
				    "seed %u", seed);
		if (!w.s.stopping)
			KUNIT_EXPECT_EQ_MSG(test, w.s.need, 0U, "seed %u", seed);
		KUNIT_EXPECT_LE_MSG(test, w.marks, 1U, "seed %u", seed);
		runs++;
		steps_all += steps;
		urgent += w.urgent;
		marks += w.marks;
	}
	/* the runs walked through what they test */
	KUNIT_EXPECT_GT(test, urgent, 50U);
	KUNIT_EXPECT_GT(test, marks, 100U);
	kunit_info(test, "%u runs, %u steps, %u urgent GC steps, %u marks",
		   runs, steps_all, urgent, marks);
}

static struct kunit_case dmr_writer_cases[] = {
	KUNIT_CASE_PARAM(dmr_test_seal_action, dmr_seal_gen_params),
	KUNIT_CASE(dmr_test_seg_done_matches_log_advance),
	KUNIT_CASE(dmr_test_unit_room_and_chunks),
	KUNIT_CASE(dmr_test_seal_after_write),
	KUNIT_CASE(dmr_test_group_commit_now),
	KUNIT_CASE(dmr_test_gc_owed),
	KUNIT_CASE_PARAM(dmr_test_worker_next, dmr_worker_gen_params),
	KUNIT_CASE(dmr_test_worker_round_order),
	KUNIT_CASE(dmr_test_worker_commit_bound),
	KUNIT_CASE(dmr_test_worker_fua_gc),
	KUNIT_CASE(dmr_test_worker_drains),
	KUNIT_CASE(dmr_test_worker_needs),
	KUNIT_CASE(dmr_test_worker_inline),
	KUNIT_CASE(dmr_test_message_checkpoint_verdict),
	KUNIT_CASE(dmr_test_instance_relation),
	KUNIT_CASE(dmr_test_unmap_step),
	KUNIT_CASE(dmr_test_replay_checkpoint_policy),
	KUNIT_CASE(dmr_test_need_part),
	KUNIT_CASE(dmr_test_flush_carrier),
	KUNIT_CASE(dmr_test_discard_at_segment_end),
	KUNIT_CASE(dmr_test_write_pieces),
	KUNIT_CASE(dmr_test_stripe_pad),
	KUNIT_CASE(dmr_test_units_finish),
	KUNIT_CASE(dmr_test_data_csum_pieces),
	KUNIT_CASE(dmr_test_mem_run),
	KUNIT_CASE(dmr_test_empty_flush_verdict),
	KUNIT_CASE(dmr_test_ckpt_rearm),
	KUNIT_CASE(dmr_test_ckpt_order),
	KUNIT_CASE(dmr_test_load_needs_recovery),
	KUNIT_CASE(dmr_test_load_fell_back),
	KUNIT_CASE(dmr_test_ckpt_twin_holds),
	KUNIT_CASE(dmr_test_seq_window),
	KUNIT_CASE(dmr_test_ckpt_log_seq_bound),
	KUNIT_CASE(dmr_test_head_needs_next),
	KUNIT_CASE(dmr_test_head_next_free),
	KUNIT_CASE(dmr_test_reloc_unit_room),
	KUNIT_CASE(dmr_test_copy_in_open_unit),
	KUNIT_CASE(dmr_test_extents_in_units),
	KUNIT_CASE(dmr_test_extent_csum_later),
	{}
};

static struct kunit_suite dmr_writer_suite = {
	.name = "dm-remap-writer",
	.test_cases = dmr_writer_cases,
};

kunit_test_suite(dmr_writer_suite);

