/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap pure codec and geometry: functions defined in dmr-format.c.
 *
 * No locking: every function works on caller-owned memory only.
 */
#ifndef DMR_CODEC_H
#define DMR_CODEC_H

#include "dmr-pure.h"

/* Blocks of the module's checkpoint I/O buffer (counted by dmr_map_memory_bytes()). */
#define DMR_BOUNCE_BLOCKS	64U
/* Segments the log writer's second stage holds at once (dmr-write.c). */
#define DMR_FLIGHT_SLOTS	3U
/* Segment buffers: one per log head, those in flight, GC's read buffer. */
#define DMR_SEG_BUFFERS		(DMR_NR_HEADS + DMR_FLIGHT_SLOTS + 1U)

/**
 * struct dmr_geometry - where everything lives on a formatted device
 *
 * All fields are in DMR_BLOCK_SIZE blocks except @overprovision (percent).
 * @grow_limit is 0, or the device size the checkpoint slots are sized
 * and laid out for (DMR_FEATURE_INCOMPAT_GROW).  @wide: 64-bit block
 * numbers (DMR_FEATURE_INCOMPAT_WIDE): 8-byte map entries, so twice the
 * map blocks in a slot, wide log units, and sizes past 16 TiB
 * (dmr_geometry_compute_wide()).
 */
struct dmr_geometry {
	u64 device_blocks;
	u64 grow_limit;
	u32 segment_blocks;
	u32 overprovision;
	u64 ckpt_offset;
	u32 ckpt_slot_blocks;
	u64 data_offset;
	u64 nr_segments;
	u64 logical_blocks;
	bool wide;
};

/**
 * struct dmr_sb - decoded superblock, CPU byte order
 */
struct dmr_sb {
	u32 version;
	u32 feature_compat;
	u32 feature_ro_compat;
	u32 feature_incompat;
	u64 blocknr;
	u64 generation;
	u8 uuid[16];
	u64 ctime;
	u32 stripe_blocks;
	char label[DMR_LABEL_LEN + 1];
	struct dmr_geometry geo;
};

/* Every reason a superblock can be refused; see dmr_sb_strerror(). */
enum dmr_sb_status {
	DMR_SB_OK = 0,
	DMR_SB_BAD_MAGIC,
	DMR_SB_BAD_CSUM,
	DMR_SB_BAD_VERSION,
	DMR_SB_BAD_FEATURES,
	DMR_SB_BAD_BLOCK_SIZE,
	DMR_SB_BAD_LOCATION,
	DMR_SB_BAD_GEOMETRY,
	DMR_SB_NR_STATUS,
};

/* Why dmr_geometry_compute() can fail. */
enum dmr_geo_status {
	DMR_GEO_OK = 0,
	DMR_GEO_BAD_SEGMENT_SIZE,
	DMR_GEO_BAD_OVERPROVISION,
	DMR_GEO_TOO_SMALL,
	DMR_GEO_TOO_LARGE,
	DMR_GEO_BAD_GROW_LIMIT,
	DMR_GEO_NO_GROW_LIMIT,
	DMR_GEO_SHRINK,
	DMR_GEO_BEYOND_GROW_LIMIT,
	DMR_GEO_NR_STATUS,
};

/*
 * Whether a loaded device's memory fits a machine; see dmr_map_fits() and
 * dmr_fit_strerror().
 */
enum dmr_fit {
	DMR_FIT_OK = 0,
	DMR_FIT_NO_MEMORY,
	DMR_FIT_NO_VMALLOC,
	DMR_FIT_NR_STATUS,
};

/**
 * struct dmr_ckpt_layout - where the parts of a checkpoint slot are
 *
 * Offsets are in blocks from the start of the slot (the header is block 0).
 */
struct dmr_ckpt_layout {
	u64 crc_offset, crc_blocks;
	u64 map_offset, map_blocks;
	u64 segtab_offset, segtab_blocks;
};

u32 dmr_csum_block(const void *block, u32 salt);
void dmr_ckpt_layout(const struct dmr_geometry *geo, struct dmr_ckpt_layout *layout);

enum dmr_geo_status __must_check
dmr_geometry_compute(u64 device_blocks, u32 segment_blocks, u32 overprovision,
		     struct dmr_geometry *geo);
enum dmr_geo_status __must_check
dmr_geometry_compute_wide(u64 device_blocks, u64 grow_limit, u32 segment_blocks,
			  u32 overprovision, bool wide, struct dmr_geometry *geo);
enum dmr_geo_status __must_check
dmr_geometry_compute_limit(u64 device_blocks, u64 grow_limit, u32 segment_blocks,
			   u32 overprovision, struct dmr_geometry *geo);
enum dmr_geo_status __must_check
dmr_geometry_grow(const struct dmr_geometry *old, u64 device_blocks,
		  struct dmr_geometry *geo);
const char *dmr_geo_strerror(enum dmr_geo_status st);

/* What a table length asks of a device; see dmr_geometry_for_length(). */
enum dmr_grow {
	DMR_GROW_NONE = 0,	/* it fits the formatted size */
	DMR_GROW_YES,		/* it fits once the device is grown */
	DMR_GROW_NO_LIMIT,	/* formatted without room to grow */
	DMR_GROW_SHRUNK,	/* the device is smaller than its formatted size */
	DMR_GROW_TOO_LONG,	/* more than the device can grow to now */
};

enum dmr_grow __must_check
dmr_geometry_for_length(const struct dmr_geometry *geo, u64 dev_blocks,
			u64 want_blocks, struct dmr_geometry *out);

u32 dmr_default_segment_blocks(u32 io_opt_bytes, u32 io_min_bytes);

/*
 * The arrays the module allocates in proportion to the device
 * (dmr_array_elems(), dmr_array_elem_size()), all through
 * dmr_alloc_array(): every one can be above INT_MAX bytes at the
 * format's limits, where kvcalloc() refuses.
 */
enum dmr_array {
	DMR_ARRAY_MAP_PAGES,	/* a page pointer per map block */
	DMR_ARRAY_SEGS,		/* struct dmr_seg per segment */
	DMR_ARRAY_READERS,	/* a reader count per segment */
	DMR_ARRAY_LISTS,	/* DMR_MAP_LISTS() list heads */
	DMR_ARRAY_DIRTY,	/* a dirty byte per map block */
	DMR_ARRAY_MAP_CRC,	/* a CRC32C per map block */
	DMR_ARRAY_LOAD_VALID,	/* a valid count per segment, while loading */
	DMR_ARRAY_TAB_HASH,	/* a 64-bit hash per slot table block, per slot */
	DMR_ARRAY_HEAT,		/* write heat, 2 bits per logical block; no cache */
	DMR_ARRAY_PC_RING,	/* map cache: a ring entry per map block */
	DMR_ARRAY_PC_STATE,	/* map cache: a state byte per map block */
	DMR_ARRAY_PC_REF,	/* map cache: a used byte per map block */
	DMR_NR_ARRAYS,
};

/* The most kvcalloc() allocates: INT_MAX bytes (checked in dmr-io.c). */
#define DMR_KVMALLOC_MAX	0x7fffffffULL

/* How dmr_alloc_array() allocates an array (dmr_alloc_path()). */
enum dmr_alloc_path {
	DMR_ALLOC_KVCALLOC,	/* up to DMR_KVMALLOC_MAX bytes: kvcalloc() */
	DMR_ALLOC_VMALLOC,	/* above: __vmalloc() */
	DMR_ALLOC_TOO_BIG,	/* more than the address space: refused */
};

u64 dmr_map_cache_pages(const struct dmr_geometry *geo, u32 cache_mib);
u64 dmr_map_cache_most(u64 cap, u32 seg_blocks);
u64 dmr_array_elems(const struct dmr_geometry *geo, u32 cache_mib, enum dmr_array a);
u32 dmr_array_elem_size(enum dmr_array a);
enum dmr_alloc_path dmr_alloc_path(u64 n, u32 size, u64 max_bytes);
u64 dmr_map_memory_bytes(const struct dmr_geometry *geo, u32 cache_mib);
u32 dmr_birth_encode(u64 delta);
u64 dmr_birth_decode(u32 code);
enum dmr_fit dmr_map_fits(u64 map_bytes, u64 mem_total_bytes,
			  u64 vmalloc_total_bytes);
const char *dmr_fit_strerror(enum dmr_fit fit);

void dmr_sb_encode(const struct dmr_sb *sb, void *block);
enum dmr_sb_status __must_check dmr_sb_decode(const void *block, u64 blocknr,
					      struct dmr_sb *sb);
const char *dmr_sb_strerror(enum dmr_sb_status st);
const char *dmr_sb_version_remedy(u32 version);
unsigned int dmr_sb_copies_current(const enum dmr_sb_status *st, const u64 *gen,
				   unsigned int best);
bool dmr_sb_has_magic(const void *block);

#endif /* DMR_CODEC_H */
