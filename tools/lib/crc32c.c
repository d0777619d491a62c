// SPDX-License-Identifier: GPL-2.0-only
/*
 * Table-driven CRC32C for the userspace tools, bit-compatible with the
 * kernel's crc32c() (reflected polynomial 0x82F63B78, no inversion).
 */
#include "dmr-user.h"

static u32 crc32c_table[256];
static bool crc32c_ready;

static void crc32c_init(void)
{
	for (u32 i = 0; i < 256; i++) {
		u32 c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
		crc32c_table[i] = c;
	}
	crc32c_ready = true;
}

u32 crc32c(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	if (!crc32c_ready)
		crc32c_init();
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
