// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: checkpoint slot header decode (dmr_ckpt_decode()).
 *
 * Input: flags byte, then the block, read from block 2 (slot 0's header
 * on every device).  A header that decodes must encode back to the same
 * header.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 block[DMR_BLOCK_SIZE], again[DMR_BLOCK_SIZE];
	unsigned int flags = fuzz_block(data, size, block);
	struct dmr_ckpt c, c2;

	if (flags & FUZZ_FIX_CSUM)
		fuzz_fix_csum(block, DMR_CKPT_CSUM_SALT);
	memset(&c, 0, sizeof(c));
	memset(&c2, 0, sizeof(c2));
	if (dmr_ckpt_decode(block, DMR_SB_COPIES, fuzz_uuid, &c) != DMR_LOG_OK)
		return 0;
	dmr_ckpt_encode(&c, fuzz_uuid, again);
	FUZZ_ASSERT(dmr_ckpt_decode(again, DMR_SB_COPIES, fuzz_uuid, &c2) == DMR_LOG_OK);
	FUZZ_ASSERT(!memcmp(&c, &c2, sizeof(c)));
	return 0;
}
