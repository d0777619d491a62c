// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: log unit summary decode (dmr_unit_decode()).
 *
 * Input: flags byte, then the summary block, read from device block 4096
 * of a device with FUZZ_LOGICAL logical blocks.  A summary that decodes
 * holds only logical blocks and discard extents inside the device and
 * room for all of them, and encodes back to the same block.
 */
#include "fuzz.h"

#define FUZZ_BLOCKNR	4096U
#define FUZZ_LOGICAL	100000U

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 block[DMR_BLOCK_SIZE], again[DMR_BLOCK_SIZE];
	static struct dmr_unit u, u2;
	unsigned int flags = fuzz_block(data, size, block);
	u32 i;

	if (flags & FUZZ_FIX_CSUM)
		fuzz_fix_csum(block, DMR_SUMMARY_CSUM_SALT);
	if (dmr_unit_decode(block, FUZZ_BLOCKNR, fuzz_uuid, FUZZ_LOGICAL, &u) !=
	    DMR_LOG_OK)
		return 0;

	FUZZ_ASSERT(u.blocknr == FUZZ_BLOCKNR);
	FUZZ_ASSERT(dmr_unit_room(&u, 0));
	FUZZ_ASSERT(dmr_unit_block_words(&u) * u.nr_blocks + 2 * u.nr_discards <=
		    DMR_SUMMARY_WORDS);
	for (i = 0; i < u.nr_blocks; i++)
		FUZZ_ASSERT(u.lba[i] < FUZZ_LOGICAL);
	for (i = 0; i < u.nr_discards; i++) {
		FUZZ_ASSERT(u.discard[i][1] > 0);
		FUZZ_ASSERT((u64)u.discard[i][0] + u.discard[i][1] <= FUZZ_LOGICAL);
	}

	/* round trip: the body, then the checksums the block carried */
	dmr_unit_encode_body(&u, fuzz_uuid, again);
	dmr_unit_finish_csum(again, u.data_csum);
	FUZZ_ASSERT(dmr_unit_decode(again, FUZZ_BLOCKNR, fuzz_uuid, FUZZ_LOGICAL,
				    &u2) == DMR_LOG_OK);
	FUZZ_ASSERT(u2.seq == u.seq && u2.nr_blocks == u.nr_blocks &&
		    u2.nr_discards == u.nr_discards && u2.flags == u.flags &&
		    u2.next_segment == u.next_segment &&
		    u2.data_csum == u.data_csum);
	FUZZ_ASSERT(!memcmp(u2.lba, u.lba, u.nr_blocks * sizeof(u32)));
	if (u.flags & DMR_UNIT_RELOC)
		FUZZ_ASSERT(!memcmp(u2.src, u.src, u.nr_blocks * sizeof(u32)));
	FUZZ_ASSERT(!memcmp(u2.discard, u.discard, u.nr_discards * 2 * sizeof(u32)));
	return 0;
}
