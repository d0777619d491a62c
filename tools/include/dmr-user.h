/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace stand-ins for the kernel helpers dm-remap's pure code uses.
 *
 * Included by dm-remap/dmr-pure.h when __KERNEL__ is not defined, so the
 * very same dmr-format.c / dmr-table.c build into tools/ and tests.
 */
#ifndef DMR_USER_H
#define DMR_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <endian.h>
#include <linux/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#ifndef __packed
#define __packed __attribute__((packed))
#endif
#define __must_check __attribute__((warn_unused_result))
#define BUILD_BUG_ON(c) _Static_assert(!(c), #c)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BIT_ULL(n) (1ULL << (n))
#define lower_32_bits(n) ((u32)((n) & 0xffffffffU))
#define upper_32_bits(n) ((u32)((n) >> 32))

#define cpu_to_le16(x) ((__force __le16)htole16(x))
#define cpu_to_le32(x) ((__force __le32)htole32(x))
#define cpu_to_le64(x) ((__force __le64)htole64(x))
#define le16_to_cpu(x) le16toh((__force u16)(x))
#define le32_to_cpu(x) le32toh((__force u32)(x))
#define le64_to_cpu(x) le64toh((__force u64)(x))
#ifndef __force
#define __force
#endif

#ifndef min
#define min(a, b) ((a) < (b) ? (a) : (b))
#endif

#ifndef max
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define clamp_t(t, v, lo, hi) min_t(t, max_t(t, v, lo), hi)

/* single-copy-atomic accesses, as the kernel's (map entries, dmr-map.c) */
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
/* the tools' maps have one thread: nothing is freed under a reader */
#define rcu_read_lock() do { } while (0)
#define rcu_read_unlock() do { } while (0)

static inline u64 div64_u64(u64 a, u64 b)
{
	return a / b;
}

/* The kernel's memchr_inv(): the first byte that is not @c, or NULL. */
static inline void *memchr_inv(const void *start, int c, size_t bytes)
{
	const unsigned char *p = start;

	for (; bytes; bytes--, p++)
		if (*p != (unsigned char)c)
			return (void *)p;
	return NULL;
}

/* CRC32C (Castagnoli), same contract as the kernel's crc32c(): no pre or
 * post inversion, the caller seeds and finishes.  In tools/lib/crc32c.c. */
u32 crc32c(u32 crc, const void *buf, size_t len);

/* xxh64(), same result as the kernel's <linux/xxhash.h>.  In tools/lib/xxhash.c. */
u64 xxh64(const void *input, size_t len, u64 seed);

#endif /* DMR_USER_H */
