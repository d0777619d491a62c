/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap on-disk format.
 *
 * This header is shared verbatim by the kernel module and the userspace
 * tools (tools/remapctl, tools/tests).  It holds only the on-disk layout:
 * little-endian packed structures, magic numbers, the format version,
 * feature flags and checksum salts.  The pure encode/decode functions
 * operating on it live in dmr-codec.h / dmr-format.c.
 *
 * Device layout (all units are 4096-byte blocks):
 *
 *   block 0            superblock copy 0
 *   block 1            superblock copy 1
 *   ckpt_offset        checkpoint slot 0 (ckpt_slot_blocks long)
 *   +ckpt_slot_blocks  checkpoint slot 1
 *   ...                padding up to the first segment boundary
 *   data_offset        segment 0
 *   +segment_blocks    segment 1
 *   ...                nr_segments segments in all
 *
 * Every metadata block starts with an 8-byte magic and a CRC32C that covers
 * the rest of the block, salted per block type (as dm-thin does) so that a
 * block of one type can never validate as another.  Every metadata block
 * also records its own location, so a misdirected write is caught on read.
 * Both superblock copies are written at format time; the copy with the
 * higher generation wins when both are valid.
 */
#ifndef DMR_FORMAT_H
#define DMR_FORMAT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#else
#include <assert.h>
#include "dmr-user.h"	/* tools/include: __packed, u32, ... */
#endif

/* The one block size of the format, for metadata, map and data alike. */
#define DMR_BLOCK_SHIFT		12
#define DMR_BLOCK_SIZE		4096U
#define DMR_SECTORS_PER_BLOCK	(DMR_BLOCK_SIZE >> 9)

#define DMR_SB_MAGIC		"DM-REMAP"
#define DMR_MAGIC_LEN		8
#define DMR_FORMAT_VERSION	1
#define DMR_SB_COPIES		2
#define DMR_CKPT_SLOTS		2

/*
 * Feature flags.  An unknown bit in incompat refuses the device; an
 * unknown bit in ro_compat allows a read-only load only; compat bits may
 * be ignored.  No feature is defined in format version 1.
 */
#define DMR_FEATURE_COMPAT_SUPP		0U
#define DMR_FEATURE_RO_COMPAT_SUPP	0U
#define DMR_FEATURE_INCOMPAT_SUPP	0U

/* Checksum salts, one per metadata block type. */
#define DMR_SB_CSUM_SALT	0x5b1c0de1U
#define DMR_CKPT_CSUM_SALT	0xc4ec9017U

/* Geometry limits (in blocks unless said otherwise). */
#define DMR_MIN_SEGMENT_BLOCKS	64U		/* 256 KiB */
#define DMR_MAX_SEGMENT_BLOCKS	262144U		/* 1 GiB */
#define DMR_DEFAULT_SEGMENT_MIN	256U		/* 1 MiB: default at least */
#define DMR_MIN_OVERPROVISION	3U		/* percent */
#define DMR_MAX_OVERPROVISION	60U		/* percent */
#define DMR_DEFAULT_OVERPROVISION 10U		/* percent */
/* Segments kept out of the user-visible capacity for garbage collection. */
#define DMR_RESERVED_SEGMENTS	2U
/* Below this many user segments a device is too small to be useful. */
#define DMR_MIN_USER_SEGMENTS	4U
/* Bytes of checkpointed map per logical block (flat map, 32-bit entries). */
#define DMR_MAP_ENTRY_SIZE	4U
/* Bytes of checkpointed segment table per segment. */
#define DMR_SEGTAB_ENTRY_SIZE	16U
#define DMR_LABEL_LEN		32

/**
 * struct dmr_disk_superblock - one superblock copy, a whole 4 KiB block
 * @magic: DMR_SB_MAGIC
 * @csum: CRC32C of bytes [12, 4096), xored with DMR_SB_CSUM_SALT
 * @version: DMR_FORMAT_VERSION
 * @feature_compat: compatible feature bits
 * @feature_ro_compat: read-only compatible feature bits
 * @feature_incompat: incompatible feature bits
 * @block_size: bytes per block, DMR_BLOCK_SIZE
 * @blocknr: block this copy is stored at (0 or 1)
 * @generation: bumped on every superblock rewrite; higher copy wins
 * @uuid: random identity of this formatted device
 * @ctime: format time, seconds since the epoch
 * @device_blocks: size of the device at format time
 * @ckpt_offset: first block of checkpoint slot 0
 * @ckpt_slot_blocks: blocks per checkpoint slot
 * @segment_blocks: blocks per segment (a whole number of RAID stripes)
 * @data_offset: first block of segment 0, segment aligned
 * @nr_segments: number of segments
 * @logical_blocks: user-visible capacity
 * @overprovision: percent of segment space kept out of the user capacity
 * @stripe_blocks: full-stripe size seen at format time (0 if none)
 * @label: free text, NUL padded
 * @reserved: zero
 */
struct dmr_disk_superblock {
	__u8 magic[DMR_MAGIC_LEN];
	__le32 csum;
	__le32 version;
	__le32 feature_compat;
	__le32 feature_ro_compat;
	__le32 feature_incompat;
	__le32 block_size;
	__le64 blocknr;
	__le64 generation;
	__u8 uuid[16];
	__le64 ctime;
	__le64 device_blocks;
	__le64 ckpt_offset;
	__le32 ckpt_slot_blocks;
	__le32 segment_blocks;
	__le64 data_offset;
	__le64 nr_segments;
	__le64 logical_blocks;
	__le32 overprovision;
	__le32 stripe_blocks;
	__u8 label[DMR_LABEL_LEN];
	__u8 reserved[3936];
} __packed;

static_assert(DMR_BLOCK_SIZE == 1U << DMR_BLOCK_SHIFT, "block size and shift agree");
static_assert(sizeof(struct dmr_disk_superblock) == DMR_BLOCK_SIZE,
	      "superblock must be exactly one block");

/* Offset of the first byte covered by a metadata block checksum. */
#define DMR_CSUM_START		(DMR_MAGIC_LEN + 4)

#endif /* DMR_FORMAT_H */
