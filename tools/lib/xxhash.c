// SPDX-License-Identifier: GPL-2.0-only
/*
 * xxh64() for the userspace tools, bit-compatible with the kernel's
 * (lib/xxhash.c, from Yann Collet's xxHash, BSD-2-Clause or GPL-2.0):
 * the same algorithm and the same seed, little-endian input words.
 * Only the one-shot 64-bit hash, which dmr_block_digest() uses.
 */
#include <string.h>

#include "dmr-user.h"

#define PRIME64_1 11400714785074694791ULL
#define PRIME64_2 14029467366897019727ULL
#define PRIME64_3  1609587929392839161ULL
#define PRIME64_4  9650029242287828579ULL
#define PRIME64_5  2870177450012600261ULL

static u64 xxh_rotl64(u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static u64 xxh_le64(const u8 *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return le64_to_cpu(v);
}

static u32 xxh_le32(const u8 *p)
{
	u32 v;

	memcpy(&v, p, sizeof(v));
	return le32_to_cpu(v);
}

static u64 xxh64_round(u64 acc, u64 input)
{
	acc += input * PRIME64_2;
	acc = xxh_rotl64(acc, 31);
	return acc * PRIME64_1;
}

static u64 xxh64_merge_round(u64 acc, u64 val)
{
	acc ^= xxh64_round(0, val);
	return acc * PRIME64_1 + PRIME64_4;
}

u64 xxh64(const void *input, size_t len, u64 seed)
{
	const u8 *p = input, *const end = p + len;
	u64 h64;

	if (len >= 32) {
		const u8 *const limit = end - 32;
		u64 v1 = seed + PRIME64_1 + PRIME64_2, v2 = seed + PRIME64_2;
		u64 v3 = seed, v4 = seed - PRIME64_1;

		do {
			v1 = xxh64_round(v1, xxh_le64(p));
			v2 = xxh64_round(v2, xxh_le64(p + 8));
			v3 = xxh64_round(v3, xxh_le64(p + 16));
			v4 = xxh64_round(v4, xxh_le64(p + 24));
			p += 32;
		} while (p <= limit);
		h64 = xxh_rotl64(v1, 1) + xxh_rotl64(v2, 7) +
		      xxh_rotl64(v3, 12) + xxh_rotl64(v4, 18);
		h64 = xxh64_merge_round(h64, v1);
		h64 = xxh64_merge_round(h64, v2);
		h64 = xxh64_merge_round(h64, v3);
		h64 = xxh64_merge_round(h64, v4);
	} else {
		h64 = seed + PRIME64_5;
	}
	h64 += (u64)len;
	for (; p + 8 <= end; p += 8) {
		h64 ^= xxh64_round(0, xxh_le64(p));
		h64 = xxh_rotl64(h64, 27) * PRIME64_1 + PRIME64_4;
	}
	if (p + 4 <= end) {
		h64 ^= (u64)xxh_le32(p) * PRIME64_1;
		h64 = xxh_rotl64(h64, 23) * PRIME64_2 + PRIME64_3;
		p += 4;
	}
	for (; p < end; p++) {
		h64 ^= *p * PRIME64_5;
		h64 = xxh_rotl64(h64, 11) * PRIME64_1;
	}
	h64 ^= h64 >> 33;
	h64 *= PRIME64_2;
	h64 ^= h64 >> 29;
	h64 *= PRIME64_3;
	h64 ^= h64 >> 32;
	return h64;
}
