// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: superblock decode (dmr_sb_decode()).
 *
 * Input: flags byte, then the block.  The copy number (0 or 1) the block
 * is "read from" is bit 1 of the flags.  A superblock that decodes must
 * describe a geometry that fits its device, and must encode back to a
 * block that decodes to the same superblock.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 block[DMR_BLOCK_SIZE], again[DMR_BLOCK_SIZE];
	unsigned int flags = fuzz_block(data, size, block);
	u64 blocknr = (flags >> 1) & 1;
	struct dmr_sb sb, sb2;
	struct dmr_ckpt_layout l;
	const struct dmr_geometry *g = &sb.geo;

	if (flags & FUZZ_FIX_CSUM)
		fuzz_fix_csum(block, DMR_SB_CSUM_SALT);
	if (dmr_sb_decode(block, blocknr, &sb) != DMR_SB_OK)
		return 0;

	/* the geometry lies inside the device, regions in order */
	FUZZ_ASSERT(g->ckpt_offset >= DMR_SB_COPIES);
	FUZZ_ASSERT(g->ckpt_offset + (u64)DMR_CKPT_SLOTS * g->ckpt_slot_blocks <=
		    g->data_offset);
	FUZZ_ASSERT(g->data_offset % g->segment_blocks == 0);
	FUZZ_ASSERT(g->data_offset + g->nr_segments * g->segment_blocks <=
		    g->device_blocks);
	FUZZ_ASSERT(g->logical_blocks < g->nr_segments * g->segment_blocks);
	dmr_ckpt_layout(g, &l);
	FUZZ_ASSERT(l.segtab_offset + l.segtab_blocks <= g->ckpt_slot_blocks);
	FUZZ_ASSERT((l.map_blocks << dmr_map_shift(g->wide)) >= g->logical_blocks);

	/* round trip */
	dmr_sb_encode(&sb, again);
	FUZZ_ASSERT(dmr_sb_decode(again, blocknr, &sb2) == DMR_SB_OK);
	FUZZ_ASSERT(!memcmp(&sb, &sb2, sizeof(sb)));
	return 0;
}
