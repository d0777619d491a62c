// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: log replay (dmr_replay_heads()) over a device whose data
 * area the input writes.
 *
 * The device: FUZZ_DEV_BLOCKS blocks, 64-block segments, 10%
 * overprovision.  Input: a flags byte; then, per log head, 3 bytes: its
 * segment, its offset and the segment reserved after it (0xff: none);
 * then 2 bytes: the checkpoint's last sequence number and the segment
 * the blocks that follow are written to; then those blocks, 4 KiB each
 * (the last one zero-padded), consecutive from block 0 of that segment.
 * Every other block of the device reads as zeroes.  With FUZZ_FIX_CSUM
 * every block that starts with a summary's magic gets the right data
 * checksum for the blocks after it and the right summary checksum (the
 * last ones first, so a unit's data checksum covers the summaries fixed
 * inside it).
 *
 * The properties are the loader's (dmr_load()): from an empty map,
 * replay either refuses the log or leaves a map and segment table that
 * agree with each other (dmr_map_consistent()), with every mapped block
 * inside a segment that replay marked used; and replaying the same log
 * again from the same start gives the same map.
 */
#include "fuzz.h"

#define FUZZ_DEV_BLOCKS	1536U
#define FUZZ_SEG_BLOCKS	64U
#define FUZZ_HDR	(1 + 3 * DMR_NR_HEADS + 2)
#define FUZZ_MAX_BLOCKS	(3 * FUZZ_SEG_BLOCKS)

static struct dmr_geometry geo;
static const uint8_t *img;	/* the input's blocks */
static size_t img_len;
static u8 fixed[FUZZ_MAX_BLOCKS][DMR_BLOCK_SIZE];
static struct fuzz_dev dev = { .blocks = fixed };

static void fuzz_fix_units(void)
{
	static u8 data[DMR_SUMMARY_WORDS * DMR_BLOCK_SIZE];
	int i;

	for (i = (int)dev.nr - 1; i >= 0; i--) {
		struct dmr_disk_summary *d = (void *)fixed[i];
		u32 n = le32_to_cpu(d->nr_blocks);

		if (memcmp(d->magic, DMR_SUMMARY_MAGIC, DMR_MAGIC_LEN))
			continue;
		if (n <= DMR_SUMMARY_WORDS &&
		    !fuzz_dev_read(&dev, dev.first + i + 1, n, data))
			d->data_csum = cpu_to_le32(dmr_data_csum(data, n));
		fuzz_fix_csum(d, DMR_SUMMARY_CSUM_SALT);
	}
}

/* Replay from an empty map as the loader does; false if it refuses. */
static bool fuzz_replay(struct dmr_map *m, u32 *l2p, u32 **pages, struct dmr_seg *segs,
			u8 *dirty, u32 *lists, const struct dmr_log_pos *start, u64 seq0)
{
	static u8 buf[FUZZ_SEG_BLOCKS * DMR_BLOCK_SIZE];
	static struct dmr_unit units[DMR_NR_HEADS];
	struct dmr_log_pos pos[DMR_NR_HEADS];
	struct dmr_replay r = {
		.geo = &geo, .uuid = fuzz_uuid, .read = fuzz_dev_read, .ctx = &dev,
		.buf = buf, .unit = units,
	};
	u64 seq = seq0;
	unsigned int h;

	memset(l2p, 0, geo.logical_blocks * sizeof(*l2p));
	memset(segs, 0, geo.nr_segments * sizeof(*segs));
	dmr_map_init(m, pages, l2p, geo.logical_blocks, segs, geo.nr_segments,
		     geo.segment_blocks, dirty, lists);
	m->track = false;
	FUZZ_ASSERT(dmr_map_recount(m) == 0);
	memcpy(pos, start, sizeof(pos));
	if (dmr_replay_heads(&r, m, pos, DMR_NR_HEADS, &seq))
		return false;
	FUZZ_ASSERT(seq >= seq0 && seq - seq0 == r.units);
	for (h = 0; h < DMR_NR_HEADS; h++)
		FUZZ_ASSERT(r.head_stop[h] != DMR_LOG_READ_ERROR);
	if (!dmr_heads_valid(&geo, pos))
		return false;
	for (h = 0; h < DMR_NR_HEADS; h++) {
		segs[pos[h].segment].flags |= DMR_SEG_OPEN;
		if (pos[h].next_segment != DMR_NO_SEGMENT)
			segs[pos[h].next_segment].flags |= DMR_SEG_OPEN;
	}
	dmr_map_load_states(m);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u32 *l2p, *l2p2, **pages, **pages2;
	static struct dmr_seg *segs, *segs2;
	static u8 *dirty;
	static u32 *lists, *lists2;
	struct dmr_log_pos start[DMR_NR_HEADS];
	struct dmr_map m, m2;
	unsigned int h, flags;
	u64 seq0, lba;
	u32 seg0, b;

	if (!l2p) {
		FUZZ_ASSERT(dmr_geometry_compute(FUZZ_DEV_BLOCKS, FUZZ_SEG_BLOCKS, 10,
						 &geo) == DMR_GEO_OK);
		l2p = calloc(geo.logical_blocks, sizeof(*l2p));
		l2p2 = calloc(geo.logical_blocks, sizeof(*l2p2));
		pages = calloc(dmr_map_blocks(geo.logical_blocks, geo.wide) + 1, sizeof(*pages));
		pages2 = calloc(dmr_map_blocks(geo.logical_blocks, geo.wide) + 1, sizeof(*pages2));
		segs = calloc(geo.nr_segments, sizeof(*segs));
		segs2 = calloc(geo.nr_segments, sizeof(*segs2));
		dirty = calloc(dmr_map_blocks(geo.logical_blocks, geo.wide) + 1, 1);
		lists = calloc(DMR_MAP_LISTS(geo.segment_blocks), sizeof(*lists));
		lists2 = calloc(DMR_MAP_LISTS(geo.segment_blocks), sizeof(*lists2));
		FUZZ_ASSERT(l2p && l2p2 && pages && pages2 && segs && segs2 && dirty && lists && lists2);
	}
	if (size < FUZZ_HDR)
		return 0;
	flags = data[0];
	for (h = 0; h < DMR_NR_HEADS; h++) {
		const uint8_t *p = data + 1 + 3 * h;

		start[h].segment = p[0] % geo.nr_segments;
		start[h].offset = p[1] % (geo.segment_blocks - 1);
		start[h].next_segment = p[2] == 0xff ? DMR_NO_SEGMENT :
					p[2] % geo.nr_segments;
		start[h].seq = 0;
	}
	if (!dmr_heads_valid(&geo, start))
		return 0;		/* the loader refuses the checkpoint */
	seq0 = data[FUZZ_HDR - 2];
	seg0 = data[FUZZ_HDR - 1] % geo.nr_segments;
	img = data + FUZZ_HDR;
	img_len = size - FUZZ_HDR;
	dev.dev_blocks = geo.device_blocks;
	dev.first = geo.data_offset + (u64)seg0 * geo.segment_blocks;
	dev.nr = min_t(u64, (img_len + DMR_BLOCK_SIZE - 1) / DMR_BLOCK_SIZE,
		       min_t(u64, FUZZ_MAX_BLOCKS, geo.device_blocks - dev.first));
	for (b = 0; b < dev.nr; b++) {
		size_t off = (size_t)b * DMR_BLOCK_SIZE;

		memset(fixed[b], 0, DMR_BLOCK_SIZE);
		memcpy(fixed[b], img + off, min_t(size_t, img_len - off, DMR_BLOCK_SIZE));
	}
	if (flags & FUZZ_FIX_CSUM)
		fuzz_fix_units();

	if (!fuzz_replay(&m, l2p, pages, segs, dirty, lists, start, seq0))
		return 0;
	FUZZ_ASSERT(dmr_map_consistent(&m));
	for (lba = 0; lba < geo.logical_blocks; lba++) {
		u32 e = l2p[lba];

		if (e == DMR_UNMAPPED)
			continue;
		FUZZ_ASSERT(e - 1 < geo.nr_segments * geo.segment_blocks);
		FUZZ_ASSERT(segs[(e - 1) / geo.segment_blocks].flags & DMR_SEG_USED);
	}
	/* replay is a function of the device: the same log, the same map */
	FUZZ_ASSERT(fuzz_replay(&m2, l2p2, pages2, segs2, dirty, lists2, start, seq0));
	FUZZ_ASSERT(!memcmp(l2p, l2p2, geo.logical_blocks * sizeof(*l2p)));
	return 0;
}
