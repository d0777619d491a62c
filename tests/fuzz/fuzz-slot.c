// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: a checkpoint slot's tables (dmr_slot_load(), what the
 * module's loader and remapctl check read: the map blocks' CRC table, the
 * map blocks and the segment table) behind its header.
 *
 * The device is fuzz-replay's (1536 blocks, 64-block segments); the input
 * is a flags byte, then the blocks of slot 1 from its header on (the
 * rest of the device reads as zeroes).  With FUZZ_FIX_CSUM the harness
 * stores every map block's CRC in the CRC table, the tables' checksums in
 * the header and the header's own checksum first, so that the fuzzer
 * reaches the entries behind them.  A slot that loads must load the same
 * way twice, written back with dmr_slot_write() (remapctl check --repair,
 * with the module's encoders) must load the same again, and its recount
 * must agree with itself (dmr_map_recount(), dmr_map_consistent() once the
 * segment states are rebuilt).  Flags bit 1 loads with @read_zero (remapctl
 * check's way: all-zero map blocks read and checked too), else as the
 * module does (not read).
 */
#include "fuzz.h"

#define FUZZ_DEV_BLOCKS	1536U
#define FUZZ_SEG_BLOCKS	64U
#define FUZZ_SLOT	1U
#define FUZZ_MAX_SLOT	16U

static struct dmr_geometry geo;
static struct dmr_ckpt_layout lay;
static u64 slot_base;
static u8 slot_img[FUZZ_MAX_SLOT][DMR_BLOCK_SIZE];
static struct fuzz_dev dev = { .blocks = slot_img };
static u8 out_img[FUZZ_MAX_SLOT][DMR_BLOCK_SIZE];	/* dmr_slot_write()'s */
static struct fuzz_dev out = { .blocks = out_img };

static void fuzz_fix_slot(u64 nr_map_blocks)
{
	struct dmr_ckpt c;
	__le32 *crcs = (__le32 *)slot_img[lay.crc_offset];
	u64 i;

	for (i = 0; i < nr_map_blocks; i++)
		crcs[i] = cpu_to_le32(crc32c(~0U, slot_img[lay.map_offset + i],
					     DMR_BLOCK_SIZE));
	fuzz_fix_csum(slot_img[0], DMR_CKPT_CSUM_SALT);
	if (dmr_ckpt_decode(slot_img[0], slot_base, fuzz_uuid, &c) != DMR_LOG_OK)
		return;
	c.crc_csum = crc32c(~0U, slot_img[lay.crc_offset],
			    lay.crc_blocks * DMR_BLOCK_SIZE);
	c.segtab_csum = crc32c(~0U, slot_img[lay.segtab_offset],
			       lay.segtab_blocks * DMR_BLOCK_SIZE);
	dmr_ckpt_encode(&c, fuzz_uuid, slot_img[0]);
}

static bool read_zero;		/* flags bit 1 */

static int fuzz_load(struct fuzz_dev *from, const struct dmr_ckpt *c, struct dmr_map *m,
		     u32 *l2p, u32 **pages, struct dmr_seg *segs, u8 *dirty, u32 *lists,
		     u32 *map_crc)
{
	static u8 bounce[2 * DMR_BLOCK_SIZE];
	const struct dmr_slot_io io = { .read = fuzz_dev_read, .ctx = from,
					.bounce = bounce, .bounce_blocks = 2,
					.read_zero = read_zero };
	struct dmr_slot_err err;
	int r;

	memset(l2p, 0xa5, geo.logical_blocks * sizeof(*l2p));
	memset(segs, 0, geo.nr_segments * sizeof(*segs));
	dmr_map_init(m, pages, l2p, geo.logical_blocks, segs, geo.nr_segments,
		     geo.segment_blocks, dirty, lists);
	m->track = false;
	r = dmr_slot_load(&io, &geo, FUZZ_SLOT, c, m, map_crc, &err);
	FUZZ_ASSERT(r == 0 || r == -EILSEQ);
	if (r)
		FUZZ_ASSERT(err.table <= DMR_SLOT_SIZES &&
			    (err.table != DMR_SLOT_MAP || err.block < m->nr_map_blocks));
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u32 *l2p, *l2p2, *map_crc, **pages, **pages2;
	static struct dmr_seg *segs, *segs2;
	static u8 *dirty;
	static u32 *lists, *lists2;
	struct dmr_map m, m2;
	struct dmr_ckpt c;
	unsigned int flags;
	u32 b;

	if (!l2p) {
		FUZZ_ASSERT(dmr_geometry_compute(FUZZ_DEV_BLOCKS, FUZZ_SEG_BLOCKS, 10,
						 &geo) == DMR_GEO_OK);
		dmr_ckpt_layout(&geo, &lay);
		FUZZ_ASSERT(geo.ckpt_slot_blocks <= FUZZ_MAX_SLOT);
		slot_base = geo.ckpt_offset + FUZZ_SLOT * geo.ckpt_slot_blocks;
		dev = (struct fuzz_dev){ .dev_blocks = geo.device_blocks, .first = slot_base,
					 .nr = geo.ckpt_slot_blocks, .blocks = slot_img };
		out = dev;
		out.blocks = out_img;
		l2p = calloc(geo.logical_blocks, sizeof(*l2p));
		l2p2 = calloc(geo.logical_blocks, sizeof(*l2p2));
		pages = calloc(lay.map_blocks, sizeof(*pages));
		pages2 = calloc(lay.map_blocks, sizeof(*pages2));
		map_crc = calloc(lay.map_blocks, sizeof(*map_crc));
		segs = calloc(geo.nr_segments, sizeof(*segs));
		segs2 = calloc(geo.nr_segments, sizeof(*segs2));
		dirty = calloc(lay.map_blocks, 1);
		lists = calloc(DMR_MAP_LISTS(geo.segment_blocks), sizeof(*lists));
		lists2 = calloc(DMR_MAP_LISTS(geo.segment_blocks), sizeof(*lists2));
		FUZZ_ASSERT(l2p && l2p2 && pages && pages2 && map_crc && segs && segs2 && dirty && lists &&
			    lists2);
	}
	if (!size)
		return 0;
	flags = data[0];
	read_zero = flags & 0x2U;
	for (b = 0; b < geo.ckpt_slot_blocks; b++) {
		size_t off = 1 + (size_t)b * DMR_BLOCK_SIZE;

		memset(slot_img[b], 0, DMR_BLOCK_SIZE);
		if (off < size)
			memcpy(slot_img[b], data + off, min_t(size_t, size - off, DMR_BLOCK_SIZE));
	}
	if (flags & FUZZ_FIX_CSUM)
		fuzz_fix_slot(dmr_map_blocks(geo.logical_blocks, geo.wide));
	if (dmr_ckpt_decode(slot_img[0], slot_base, fuzz_uuid, &c) != DMR_LOG_OK)
		return 0;

	if (fuzz_load(&dev, &c, &m, l2p, pages, segs, dirty, lists, map_crc))
		return 0;
	/* a loaded slot loads the same way again */
	FUZZ_ASSERT(fuzz_load(&dev, &c, &m2, l2p2, pages2, segs2, dirty, lists2, map_crc) == 0);
	FUZZ_ASSERT(!memcmp(l2p, l2p2, geo.logical_blocks * sizeof(*l2p)));
	FUZZ_ASSERT(!memcmp(segs, segs2, geo.nr_segments * sizeof(*segs)));
	/* and what dmr_slot_write() makes of it loads as the same state */
	{
		static u8 bounce[3 * DMR_BLOCK_SIZE];
		const struct dmr_slot_io io = { .write = fuzz_dev_write, .ctx = &out,
						.bounce = bounce, .bounce_blocks = 3 };
		struct dmr_ckpt w = c;

		memset(out_img, 0x5a, sizeof(out_img));
		FUZZ_ASSERT(dmr_slot_write(&io, &geo, FUZZ_SLOT, &m, map_crc, &w) == 0);
		FUZZ_ASSERT(fuzz_load(&out, &w, &m2, l2p2, pages2, segs2, dirty, lists2, map_crc) == 0);
		FUZZ_ASSERT(!memcmp(l2p, l2p2, geo.logical_blocks * sizeof(*l2p)));
		FUZZ_ASSERT(!memcmp(segs, segs2, geo.nr_segments * sizeof(*segs)));
	}
	if (dmr_map_recount(&m))
		return 0;		/* an entry outside the data area: refused */
	dmr_map_load_states(&m);
	FUZZ_ASSERT(dmr_map_consistent(&m));
	return 0;
}
