/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap fuzz targets: what they share.
 *
 * Every target feeds bytes to the pure code shared by the module and
 * tools/ (dm-remap/dmr-*.c, built here with clang, libFuzzer, ASan and
 * UBSan) and checks properties that hold for every input, so a wrong
 * result is a crash too, not only a memory error:
 *
 *   decode(x) succeeds  =>  encode(decode(x)) decodes to the same value
 *
 * The first input byte holds flags.  With FUZZ_FIX_CSUM the harness
 * stores the right checksum into the block before decoding it, so the
 * fuzzer gets past the checksum to the fields behind it (a fuzzer cannot
 * forge a CRC32C); without it, the checksum check itself is fuzzed.
 */
#ifndef DMR_FUZZ_H
#define DMR_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#include "dmr-log.h"
#include "dmr-table.h"

#define FUZZ_FIX_CSUM	0x1U

/* The uuid every seed and fixed-up block uses (tests/fuzz/mkseeds.c). */
static const u8 fuzz_uuid[16] = {
	0xd7, 0x4e, 0x52, 0x11, 0x0a, 0x5c, 0x4b, 0x3e,
	0x9f, 0x21, 0x66, 0x08, 0xc3, 0x7d, 0xe5, 0x90,
};

/* Abort with a message: libFuzzer reports it as a crash with the input. */
#define FUZZ_ASSERT(c) do {						\
	if (!(c)) {							\
		fprintf(stderr, "%s:%d: property failed: %s\n",		\
			__FILE__, __LINE__, #c);			\
		abort();						\
	}								\
} while (0)

/*
 * Copy the input after the flags byte into a zeroed block; returns the
 * flags (0 for an empty input).
 */
static inline unsigned int fuzz_block(const uint8_t *data, size_t size,
				      void *block)
{
	unsigned int flags = size ? data[0] : 0;

	memset(block, 0, DMR_BLOCK_SIZE);
	if (size > 1)
		memcpy(block, data + 1, min_t(size_t, size - 1, DMR_BLOCK_SIZE));
	return flags;
}

/* Store a metadata block's checksum (after its magic) as an encoder does. */
static inline void fuzz_fix_csum(void *block, u32 salt)
{
	__le32 *csum = (__le32 *)((u8 *)block + DMR_MAGIC_LEN);

	*csum = cpu_to_le32(dmr_csum_block(block, salt));
}

/*
 * A device of @dev_blocks blocks that reads as zeroes but for @nr blocks
 * from block @first, which the input gave (@blocks).
 */
struct fuzz_dev {
	u64 dev_blocks;
	u64 first;
	u32 nr;
	u8 (*blocks)[DMR_BLOCK_SIZE];
};

/* dmr_read_fn over a struct fuzz_dev (@ctx) */
static inline int fuzz_dev_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	const struct fuzz_dev *d = ctx;
	u8 *out = buf;
	u32 i;

	if (blocknr + nr > d->dev_blocks)
		return -EIO;
	for (i = 0; i < nr; i++, out += DMR_BLOCK_SIZE) {
		u64 b = blocknr + i;

		if (b >= d->first && b - d->first < d->nr)
			memcpy(out, d->blocks[b - d->first], DMR_BLOCK_SIZE);
		else
			memset(out, 0, DMR_BLOCK_SIZE);
	}
	return 0;
}

/* dmr_write_fn over a struct fuzz_dev (@ctx): only its blocks are writable */
static inline int fuzz_dev_write(void *ctx, u64 blocknr, u32 nr, const void *buf)
{
	const struct fuzz_dev *d = ctx;

	FUZZ_ASSERT(blocknr >= d->first && blocknr + nr <= d->first + d->nr);
	memcpy(d->blocks[blocknr - d->first], buf, (size_t)nr * DMR_BLOCK_SIZE);
	return 0;
}

#endif /* DMR_FUZZ_H */
