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
/*
 * 6 (issue 41): data checksums fold each block's xxh64 digest instead of
 * running CRC32C over the bytes (dmr_data_csum()); metadata keeps CRC32C.
 * 5: large segments.  4: 64-bit block numbers.
 */
#define DMR_FORMAT_VERSION	6
#define DMR_SB_COPIES		2
#define DMR_CKPT_SLOTS		2

/*
 * Feature flags.  An unknown bit in incompat refuses the device; an
 * unknown bit in ro_compat allows a read-only load only; compat bits may
 * be ignored.  Version 5 (issue 41, goal 1: large segments, a whole
 * segment of one write's data with no summary in it, found through an
 * extent record in a log unit's summary, DMR_UNIT_EXTENTS, and the
 * segment table's 32-byte entries, whose @base and @data_csum say what
 * such a segment holds) replaced version 4 (issue 26: 64-bit block numbers where a device
 * needs them, DMR_FEATURE_INCOMPAT_WIDE; a narrow version 4 device is laid
 * out as version 3 was, but nothing converts one silently) replaced
 * version 3 (a second GC head: four head positions per checkpoint, ten
 * reserved segments), version 2 (GC: relocation units, one log head per
 * temperature, segment reuse) and version 1, which nothing but
 * development builds ever wrote.
 *
 * DMR_FEATURE_INCOMPAT_GROW (remapctl format --grow-limit): the
 * checkpoint slots are sized, and their tables placed, for a device of
 * @grow_limit blocks, so the device can grow online up to that size
 * (dmr_geometry_grow()) without moving a slot or a table in it.  A module
 * without it would place the tables elsewhere: it must refuse the device.
 */
#define DMR_FEATURE_INCOMPAT_GROW	0x1U
/*
 * DMR_FEATURE_INCOMPAT_WIDE (remapctl format --wide; format 4, issue 26):
 * every log unit's summary holds 64-bit block numbers (DMR_UNIT_WIDE), so
 * a unit lists at most 504 data blocks, 252 relocated.  The map and the
 * segment table are still 32-bit (the geometry still stops below 2^32
 * data blocks); the bit is what later steps widen them under.  A module
 * without it would write narrow units that truncate such numbers: it must
 * refuse the device.
 */
#define DMR_FEATURE_INCOMPAT_WIDE	0x2U

#define DMR_FEATURE_COMPAT_SUPP		0U
#define DMR_FEATURE_RO_COMPAT_SUPP	0U
#define DMR_FEATURE_INCOMPAT_SUPP	(DMR_FEATURE_INCOMPAT_GROW | \
					 DMR_FEATURE_INCOMPAT_WIDE)

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
/*
 * Segments kept out of the user-visible capacity on top of the
 * over-provisioning: the log heads' open segments and the segments they
 * reserve to go on in (2 per head), and GC's own minimum.
 */
#define DMR_RESERVED_SEGMENTS	10U
/* Below this many user segments a device is too small to be useful. */
#define DMR_MIN_USER_SEGMENTS	8U
/*
 * Log heads: fresh user writes are sorted into a hot and a cold head by
 * their expected lifetime, and GC relocations go to two heads of their
 * own, one for blocks moved out of hot segments and one for the others.
 * Each head is a chain of segments of its own; units of all heads share
 * one sequence.
 */
#define DMR_NR_HEADS		4U
/*
 * Bytes of checkpointed map (and of a map page in memory) per logical
 * block: 32-bit entries, 64-bit ones on a device formatted --wide
 * (DMR_FEATURE_INCOMPAT_WIDE).
 */
#define DMR_MAP_ENTRY_SIZE	4U
#define DMR_MAP_ENTRY_SIZE_WIDE	8U
/* Bytes of checkpointed segment table per segment (16 before format 5). */
#define DMR_SEGTAB_ENTRY_SIZE	32U
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
 * @device_blocks: size of the device the data area covers: at format
 *	time, then at the last grow
 * @ckpt_offset: first block of checkpoint slot 0
 * @ckpt_slot_blocks: blocks per checkpoint slot
 * @segment_blocks: blocks per segment (a whole number of RAID stripes)
 * @data_offset: first block of segment 0, segment aligned
 * @nr_segments: number of segments
 * @logical_blocks: user-visible capacity
 * @overprovision: percent of segment space kept out of the user capacity
 * @stripe_blocks: full-stripe size seen at format time (0 if none)
 * @label: free text, NUL padded
 * @grow_limit: with DMR_FEATURE_INCOMPAT_GROW, the device size (blocks)
 *	the checkpoint slots are sized for, at least @device_blocks; else 0
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
	__le64 grow_limit;
	__u8 reserved[3928];
} __packed;

static_assert(DMR_BLOCK_SIZE == 1U << DMR_BLOCK_SHIFT, "block size and shift agree");
static_assert(sizeof(struct dmr_disk_superblock) == DMR_BLOCK_SIZE,
	      "superblock must be exactly one block");

/* Offset of the first byte covered by a metadata block checksum. */
#define DMR_CSUM_START		(DMR_MAGIC_LEN + 4)

/*
 * Log units.
 *
 * Everything written to a segment is a log unit: one summary block
 * followed by nr_blocks data blocks, back to back:
 *
 *   segment:  [S|d d d d d][S|d d][S|d d d d d d d d d d d d ...]
 *              unit seq 7   seq 8  seq 9 ...
 *
 * A unit holds at most 1008 data blocks (504 in a relocation unit), so a
 * segment filled without a flush holds one unit per 1008 blocks.  A flush or
 * FUA seals the unit being filled (a "short" unit) and the next unit starts
 * right after it in the same segment, so a flush costs one summary block.
 * A segment is left when fewer than two blocks remain; its head then goes
 * on at block 0 of @next_segment, which the unit that leaves the segment
 * done records (the head reserves it before it gets there; earlier units
 * record it too once reserved, else DMR_NO_SEGMENT).
 *
 * The summary lists the logical block of every data block, then the
 * discarded extents (which apply before the unit's data blocks), and
 * carries a checksum of the data (dmr_data_csum()), so replay tells a complete unit from a
 * torn one.  Units carry consecutive sequence numbers across all log heads;
 * replay merges the heads' chains, applies units in sequence order and
 * stops at the first one that is missing, torn or out of sequence.
 *
 * A relocation unit (DMR_UNIT_RELOC, written by garbage collection) lists
 * a (logical block, source block) pair per data block; replay applies a
 * pair only if the map still points at the source, so a relocation never
 * undoes a newer write or discard.
 */
#define DMR_SUMMARY_MAGIC	"DMR-LOGU"
#define DMR_SUMMARY_CSUM_SALT	0x10c0fa11U
#define DMR_DATA_CSUM_SALT	0xda7ada7aU
#define DMR_SUMMARY_HDR_SIZE	64U
/* 32-bit words available for block entries and discard extents */
#define DMR_SUMMARY_WORDS	((DMR_BLOCK_SIZE - DMR_SUMMARY_HDR_SIZE) / 4)
#define DMR_NO_SEGMENT		0xffffffffU
#define DMR_UNIT_RELOC		0x1U	/* summary flag: a GC relocation unit */
/*
 * Summary flag: every logical block, source block, discard start and
 * count takes two words, low then high (64-bit block numbers), so a unit
 * holds at most 504 data blocks (252 relocated).  Format 4's units
 * (issue 26, "beyond 16 TiB": devices of 2^32 data blocks and more);
 * no geometry the module accepts writes them yet, but every decoder
 * reads them.
 */
#define DMR_UNIT_WIDE		0x2U
/*
 * Summary flag (format 5, issue 41 goal 1): the unit records large
 * segments.  Its first summary word is their number, at most
 * DMR_UNIT_MAX_EXTENTS; each then takes its first logical block (a
 * number: two words in a DMR_UNIT_WIDE unit), its segment and the
 * checksum of the segment's data (dmr_data_csum() of all its blocks), and
 * the unit's block entries and discard extents follow.  A large segment
 * holds the data of logical blocks [first, first + segment_blocks), in
 * order, from its block 0, and no summary: it was written whole, before
 * the unit that records it, and replay reads it and checks its checksum
 * before it applies the unit (a segment whose data did not reach the
 * device stops replay there, as a torn unit does).  Within a unit the
 * discard extents apply first, then the large segments, then the data
 * blocks: the writer puts a large segment only into a unit that holds no
 * data block yet.  Never in a relocation unit.
 */
#define DMR_UNIT_EXTENTS	0x4U
#define DMR_UNIT_MAX_EXTENTS	64U

/**
 * struct dmr_disk_summary - the first block of a log unit
 * @magic: DMR_SUMMARY_MAGIC
 * @csum: CRC32C of bytes [12, 4096), xored with DMR_SUMMARY_CSUM_SALT
 * @data_csum: dmr_data_csum() of the unit's data blocks (salted with
 *	DMR_DATA_CSUM_SALT)
 * @seq: log sequence number, consecutive from 1
 * @blocknr: device block this summary is stored at
 * @uuid: the superblock's uuid (units of an earlier format never match)
 * @nr_blocks: data blocks following the summary
 * @nr_discards: discard extents after the block entries
 * @next_segment: where this head's log continues when this segment is
 *	left (DMR_NO_SEGMENT until the head has reserved it)
 * @flags: DMR_UNIT_RELOC, DMR_UNIT_WIDE, DMR_UNIT_EXTENTS, or zero
 * @words: with DMR_UNIT_EXTENTS, the large segments first (see there);
 *	then @nr_blocks logical block numbers (relocation units: @nr_blocks
 *	pairs of logical block and source data-area block), then
 *	@nr_discards pairs of (first logical block, number of blocks); with
 *	DMR_UNIT_WIDE each of these numbers is two words, low word first
 */
struct dmr_disk_summary {
	__u8 magic[DMR_MAGIC_LEN];
	__le32 csum;
	__le32 data_csum;
	__le64 seq;
	__le64 blocknr;
	__u8 uuid[16];
	__le32 nr_blocks;
	__le32 nr_discards;
	__le32 next_segment;
	__le32 flags;
	__le32 words[DMR_SUMMARY_WORDS];
} __packed;

static_assert(sizeof(struct dmr_disk_summary) == DMR_BLOCK_SIZE,
	      "summary must be exactly one block");

/*
 * Checkpoints.
 *
 * Two slots alternate.  A slot holds, in this order:
 *
 *   block 0               header (struct dmr_disk_ckpt)
 *   1 .. crc_blocks       CRC32C of every map block (le32 each)
 *   .. + map_blocks       the map: le32 per logical block, 0 = unmapped,
 *                         else 1 + data-area block number
 *   .. + segtab_blocks    struct dmr_disk_segment per segment
 *
 * The header is written last, after a flush, with FUA; it checksums the
 * CRC table and the segment table, and the CRC table checksums each map
 * block, so a slot whose write was interrupted never validates and
 * recovery uses the other one.  Only map blocks changed since the slot
 * was last written are rewritten.
 */
#define DMR_CKPT_MAGIC		"DMR-CKPT"
/* Map entries per map block (and map page), narrow and wide. */
#define DMR_MAP_NARROW_ENTRIES	(DMR_BLOCK_SIZE / DMR_MAP_ENTRY_SIZE)
#define DMR_MAP_WIDE_ENTRIES	(DMR_BLOCK_SIZE / DMR_MAP_ENTRY_SIZE_WIDE)
/* Map pages (map blocks) per MiB of the table option map_cache. */
#define DMR_MAP_PAGES_PER_MIB		((1U << 20) / DMR_BLOCK_SIZE)
#define DMR_CKPT_CLEAN		0x1U	/* written at shutdown, nothing follows */
/*
 * The other slot holds this checkpoint's map and tables: a clean shutdown
 * writes its clean checkpoint to one slot, then to the other with this
 * flag and the next sequence number (dmr_ckpt_twin_holds()).  Modules
 * before it ignore the bit (a checkpoint's flags are not checked) and
 * rewrite the other slot's map whole, as they always did.
 */
#define DMR_CKPT_TWIN		0x2U

/**
 * struct dmr_disk_ckpt - checkpoint slot header
 * @magic: DMR_CKPT_MAGIC
 * @csum: CRC32C of bytes [12, 4096), xored with DMR_CKPT_CSUM_SALT
 * @flags: DMR_CKPT_CLEAN, DMR_CKPT_TWIN
 * @seq: checkpoint sequence number; the higher valid slot wins
 * @log_seq: sequence number of the last log unit included
 * @blocknr: device block this header is stored at
 * @uuid: the superblock's uuid
 * @heads: per log head, the segment it continues in, the block there
 *	where its next unit goes, and the segment reserved after it
 *	(DMR_NO_SEGMENT if none yet)
 * @crc_csum: CRC32C of the CRC table blocks
 * @segtab_csum: CRC32C of the segment table blocks
 * @mapped_blocks: number of mapped logical blocks (a consistency check)
 * @user_blocks: data blocks written by users since format
 * @log_blocks: blocks written to the log since format (user and GC data,
 *	summaries): @log_blocks / @user_blocks is the write amplification
 * @gc_moved: blocks relocated by GC since format
 * @temp_threshold: the temperature estimate (struct dmr_temp), 0 if none
 * @nr_age_jumps: recovery jumps in @age_jumps (at most 8)
 * @age_pad: zero
 * @age_jumps: the age clock (struct dmr_age_clock): per recovery jump,
 *	oldest first, the first sequence number after it and how many it
 *	skipped
 * @logical_blocks: the logical size the map tables cover
 * @nr_segments: the segments the segment table covers
 * @reserved: zero
 *
 * @temp_threshold, @nr_age_jumps and @age_jumps came after the first
 * modules of format 3, which write them as zero (no estimate yet, no
 * jump) and do not read them; the layout is otherwise unchanged.
 * @logical_blocks and @nr_segments came with growing online: a checkpoint
 * written before a grow covers the smaller device (the segments past it
 * are free, the blocks past it unmapped).  Earlier modules write 0 there:
 * the superblock's sizes (dmr_ckpt_geometry()).
 */
struct dmr_disk_ckpt {
	__u8 magic[DMR_MAGIC_LEN];
	__le32 csum;
	__le32 flags;
	__le64 seq;
	__le64 log_seq;
	__le64 blocknr;
	__u8 uuid[16];
	struct {
		__le32 segment;
		__le32 offset;
		__le32 next_segment;
	} __packed heads[DMR_NR_HEADS];
	__le32 crc_csum;
	__le32 segtab_csum;
	__le64 mapped_blocks;
	__le64 user_blocks;
	__le64 log_blocks;
	__le64 gc_moved;
	__le64 temp_threshold;
	__le32 nr_age_jumps;
	__le32 age_pad;
	struct {
		__le64 at;
		__le64 len;
	} __packed age_jumps[8];
	__le64 logical_blocks;
	__le64 nr_segments;
	__u8 reserved[3792];
} __packed;

static_assert(sizeof(struct dmr_disk_ckpt) == DMR_BLOCK_SIZE,
	      "checkpoint header must be exactly one block");

#define DMR_SEG_USED	0x1U	/* holds the log of its current use (not free) */
#define DMR_DISK_SEG_HOT	0x2U	/* a hot head opened it (DMR_SEG_HOT in memory) */
/*
 * A large segment (format 5, DMR_UNIT_EXTENTS): no summary, the data of
 * logical blocks [@base - 1, @base - 1 + segment_blocks) from block 0.
 */
#define DMR_SEG_LARGE	0x4U
/*
 * Bits 16-31: how much older its data is than its use, seq - birth
 * (struct dmr_seg), in the 16-bit float of dmr_birth_encode().  Written
 * since issue 25; earlier modules of format 3 mask it off (their load
 * keeps DMR_SEG_USED and DMR_DISK_SEG_HOT only), and a table written by
 * them has 0 there: a birth equal to the seq, as they had it.  A delta
 * past the seq (never written) loads as 0 too, so a load writes back
 * what it read.
 */
#define DMR_DISK_SEG_BIRTH_SHIFT	16

/**
 * struct dmr_disk_segment - one segment table entry
 * @seq: log sequence number of the first unit of its current use (its age)
 * @valid: valid data blocks (must match the map)
 * @flags: DMR_SEG_USED, DMR_DISK_SEG_HOT (written since the age clock came;
 *	earlier modules of format 3 mask it off when they load),
 *	DMR_SEG_LARGE, and the birth above DMR_DISK_SEG_BIRTH_SHIFT
 * @base: DMR_SEG_LARGE: 1 + the logical block its block 0 holds; else 0
 * @data_csum: DMR_SEG_LARGE: dmr_data_csum() of its blocks; else 0
 * @reserved: zero
 */
struct dmr_disk_segment {
	__le64 seq;
	__le32 valid;
	__le32 flags;
	__le64 base;
	__le32 data_csum;
	__le32 reserved;
} __packed;

static_assert(sizeof(struct dmr_disk_segment) == DMR_SEGTAB_ENTRY_SIZE,
	      "segment table entry size");

#endif /* DMR_FORMAT_H */
