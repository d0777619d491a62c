// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap pure codec: superblock encode/decode, device geometry and the
 * memory a loaded device needs.
 *
 * This file is pure (see dmr-pure.h): it is built into the module, into the
 * KUnit test kernel and into the userspace tools, so the on-disk format is
 * implemented exactly once.  No locking: callers own all memory passed in.
 */
#include "dmr-codec.h"
#include "dmr-map.h"

/**
 * dmr_csum_block() - checksum of one metadata block
 * @block: DMR_BLOCK_SIZE bytes
 * @salt: per block-type salt (DMR_*_CSUM_SALT)
 *
 * Covers everything after the magic and the checksum field itself, so the
 * reserved tail must be zero for a block to validate.
 */
u32 dmr_csum_block(const void *block, u32 salt)
{
	const u8 *p = block;

	return crc32c(~0U, p + DMR_CSUM_START,
		      DMR_BLOCK_SIZE - DMR_CSUM_START) ^ salt;
}

static u64 dmr_div_round_up(u64 n, u64 d)
{
	return div64_u64(n + d - 1, d);
}

/*
 * The slot tables' sizes for a device of @device_blocks (the worst case),
 * its map's entries wide or not.
 */
static void dmr_slot_sizes(u64 device_blocks, u32 segment_blocks, bool wide,
			   u64 *map_blocks, u64 *crc_blocks, u64 *segtab_blocks)
{
	*map_blocks = dmr_map_blocks(device_blocks, wide);
	*crc_blocks = dmr_div_round_up(*map_blocks * 4, DMR_BLOCK_SIZE);
	*segtab_blocks = dmr_div_round_up(div64_u64(device_blocks, segment_blocks) *
					  DMR_SEGTAB_ENTRY_SIZE, DMR_BLOCK_SIZE);
}

/**
 * dmr_geometry_compute_wide() - lay out a device that may grow
 * @device_blocks: device size in DMR_BLOCK_SIZE blocks
 * @grow_limit: 0, or the size (at least @device_blocks) the checkpoint
 *	slots are sized for (DMR_FEATURE_INCOMPAT_GROW)
 * @segment_blocks: segment size in blocks
 * @overprovision: percent of segment space withheld from the user
 * @wide: 64-bit block numbers (DMR_FEATURE_INCOMPAT_WIDE): 8-byte map
 *	entries, so twice the map blocks, and wide log units
 * @geo: filled on success
 *
 * The checkpoint slots are sized for the worst case (every block of the
 * device, or of @grow_limit, mapped), which keeps the computation
 * non-circular and costs about 0.2% of that size; dmr_ckpt_layout() gives
 * the part a slot actually uses.  The data area starts on a segment
 * boundary, so segments stay stripe aligned whenever the segment size is
 * a stripe multiple.  With a grow limit, where the slots and the data
 * area start depends on the limit only: growing keeps both.
 *
 * Return: DMR_GEO_OK or the reason the geometry is impossible.
 */
enum dmr_geo_status dmr_geometry_compute_wide(u64 device_blocks, u64 grow_limit,
					      u32 segment_blocks, u32 overprovision, bool wide,
					      struct dmr_geometry *geo)
{
	u64 map_blocks, crc_blocks, segtab_blocks, meta_blocks, user_segs, user_blocks;
	u64 slot_blocks;
	u64 sized_for = grow_limit ? grow_limit : device_blocks;

	if (segment_blocks < DMR_MIN_SEGMENT_BLOCKS ||
	    segment_blocks > DMR_MAX_SEGMENT_BLOCKS)
		return DMR_GEO_BAD_SEGMENT_SIZE;
	if (overprovision < DMR_MIN_OVERPROVISION ||
	    overprovision > DMR_MAX_OVERPROVISION)
		return DMR_GEO_BAD_OVERPROVISION;
	if (grow_limit && grow_limit < device_blocks)
		return DMR_GEO_BAD_GROW_LIMIT;

	memset(geo, 0, sizeof(*geo));
	geo->device_blocks = device_blocks;
	geo->grow_limit = grow_limit;
	geo->segment_blocks = segment_blocks;
	geo->overprovision = overprovision;
	geo->wide = wide;

	dmr_slot_sizes(sized_for, segment_blocks, wide, &map_blocks, &crc_blocks,
		       &segtab_blocks);
	slot_blocks = 1 + crc_blocks + map_blocks + segtab_blocks;
	geo->ckpt_offset = DMR_SB_COPIES;
	meta_blocks = geo->ckpt_offset + (u64)DMR_CKPT_SLOTS * slot_blocks;
	geo->data_offset = dmr_div_round_up(meta_blocks, segment_blocks) *
			   segment_blocks;

	/*
	 * Too large is said before too small: a size past the format's is
	 * past it whatever the device now.  Narrow map entries are 32-bit:
	 * pba + 1 and logical blocks must fit, at the size the device may
	 * grow to as well.  Wide ones take any size whose segment numbers
	 * fit in 32 bits (DMR_NO_SEGMENT kept out): 2^40 blocks of 4 KiB (4
	 * PiB) in segments of 1 MiB, less two segments; and a slot's size
	 * in 32 bits (the superblock's field).
	 */
	if (slot_blocks > 0xffffffffULL)
		return DMR_GEO_TOO_LARGE;
	geo->ckpt_slot_blocks = slot_blocks;
	if (geo->data_offset < sized_for) {
		u64 segs = div64_u64(sized_for - geo->data_offset, segment_blocks);

		if (wide ? segs >= DMR_NO_SEGMENT : segs * segment_blocks >= 0xffffffffULL)
			return DMR_GEO_TOO_LARGE;
	}
	if (geo->data_offset >= device_blocks)
		return DMR_GEO_TOO_SMALL;
	geo->nr_segments = div64_u64(device_blocks - geo->data_offset,
				     segment_blocks);
	if (geo->nr_segments < DMR_RESERVED_SEGMENTS + DMR_MIN_USER_SEGMENTS)
		return DMR_GEO_TOO_SMALL;
	user_segs = geo->nr_segments - DMR_RESERVED_SEGMENTS;
	user_blocks = user_segs * segment_blocks;
	geo->logical_blocks = div64_u64(user_blocks * (100 - overprovision), 100);
	return DMR_GEO_OK;
}

/* dmr_geometry_compute_wide() of a narrow device (32-bit block numbers). */
enum dmr_geo_status dmr_geometry_compute_limit(u64 device_blocks, u64 grow_limit,
					       u32 segment_blocks, u32 overprovision,
					       struct dmr_geometry *geo)
{
	return dmr_geometry_compute_wide(device_blocks, grow_limit, segment_blocks,
					 overprovision, false, geo);
}

/**
 * dmr_geometry_compute() - lay out a device that does not grow
 * @device_blocks: device size in DMR_BLOCK_SIZE blocks
 * @segment_blocks: segment size in blocks
 * @overprovision: percent of segment space withheld from the user
 * @geo: filled on success
 *
 * Return: see dmr_geometry_compute_limit().
 */
enum dmr_geo_status dmr_geometry_compute(u64 device_blocks, u32 segment_blocks,
					 u32 overprovision,
					 struct dmr_geometry *geo)
{
	return dmr_geometry_compute_limit(device_blocks, 0, segment_blocks,
					  overprovision, geo);
}

/**
 * dmr_geometry_grow() - the geometry of a device grown to a new size
 * @old: the geometry it has (its superblock's)
 * @device_blocks: the device's new size
 * @geo: filled on success: more segments and logical blocks, the same
 *	slots and data area (dmr_geometry_compute_limit()); the same as
 *	@old if the size adds no whole segment
 *
 * Return: DMR_GEO_OK; DMR_GEO_NO_GROW_LIMIT for a device formatted
 * without room to grow, DMR_GEO_SHRINK for a smaller size,
 * DMR_GEO_BEYOND_GROW_LIMIT past the limit.
 */
enum dmr_geo_status dmr_geometry_grow(const struct dmr_geometry *old, u64 device_blocks,
				      struct dmr_geometry *geo)
{
	enum dmr_geo_status st;

	if (!old->grow_limit)
		return DMR_GEO_NO_GROW_LIMIT;
	if (device_blocks < old->device_blocks)
		return DMR_GEO_SHRINK;
	if (device_blocks > old->grow_limit)
		return DMR_GEO_BEYOND_GROW_LIMIT;
	st = dmr_geometry_compute_wide(device_blocks, old->grow_limit, old->segment_blocks,
				       old->overprovision, old->wide, geo);
	if (st != DMR_GEO_OK)
		return st;
	/* the limit alone places the slots and the data area */
	if (geo->data_offset != old->data_offset ||
	    geo->ckpt_slot_blocks != old->ckpt_slot_blocks ||
	    geo->nr_segments < old->nr_segments)
		return DMR_GEO_BAD_GROW_LIMIT;
	return DMR_GEO_OK;
}

/**
 * dmr_geometry_for_length() - the geometry a table length asks for
 * @geo: the superblock's geometry
 * @dev_blocks: the device's size now
 * @want_blocks: the table's length, in blocks
 * @out: filled: @geo, or for DMR_GROW_YES the device grown to
 *	@dev_blocks, or to its grow limit if it is larger still
 *
 * A table no longer than the formatted logical size needs nothing; a
 * longer one grows the device (growing online), if it was formatted with
 * a grow limit and has grown enough below.
 *
 * Return: what the length needs (enum dmr_grow).
 */
enum dmr_grow dmr_geometry_for_length(const struct dmr_geometry *geo, u64 dev_blocks,
				      u64 want_blocks, struct dmr_geometry *out)
{
	*out = *geo;
	if (want_blocks <= geo->logical_blocks)
		return DMR_GROW_NONE;
	if (!geo->grow_limit)
		return DMR_GROW_NO_LIMIT;
	if (dev_blocks < geo->device_blocks)
		return DMR_GROW_SHRUNK;
	if (dmr_geometry_grow(geo, min(dev_blocks, geo->grow_limit), out) != DMR_GEO_OK ||
	    want_blocks > out->logical_blocks) {
		*out = *geo;
		return DMR_GROW_TOO_LONG;
	}
	return DMR_GROW_YES;
}

const char *dmr_geo_strerror(enum dmr_geo_status st)
{
	switch (st) {
	case DMR_GEO_OK:
		return "ok";
	case DMR_GEO_BAD_SEGMENT_SIZE:
		return "segment size out of range (256 KiB to 1 GiB)";
	case DMR_GEO_BAD_OVERPROVISION:
		return "overprovision out of range (3 to 60 percent)";
	case DMR_GEO_TOO_SMALL:
		return "device too small for this segment size";
	case DMR_GEO_TOO_LARGE:
		return "device too large (at most 16 TiB narrow, 2^32 - 2 segments wide)";
	case DMR_GEO_BAD_GROW_LIMIT:
		return "grow limit below the device size";
	case DMR_GEO_NO_GROW_LIMIT:
		return "formatted without room to grow (remapctl format --grow-limit)";
	case DMR_GEO_SHRINK:
		return "device is smaller than its formatted size (shrinking is not supported)";
	case DMR_GEO_BEYOND_GROW_LIMIT:
		return "device grew past the grow limit it was formatted with";
	default:
		return "unknown geometry error";
	}
}

static u32 dmr_gcd(u32 a, u32 b)
{
	while (b) {
		u32 t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/**
 * dmr_default_segment_blocks() - default segment size for a device
 * @io_opt_bytes: optimal_io_size (full RAID stripe), 0 if none
 * @io_min_bytes: minimum_io_size (chunk), 0 if none
 *
 * The smallest whole number of full stripes that is at least 1 MiB and a
 * multiple of the block size, capped at DMR_MAX_SEGMENT_BLOCKS.
 *
 * Return: segment size in blocks.
 */
u32 dmr_default_segment_blocks(u32 io_opt_bytes, u32 io_min_bytes)
{
	u32 stripe = io_opt_bytes ? io_opt_bytes : io_min_bytes;
	u64 unit, seg;

	if (stripe < 512)
		stripe = DMR_BLOCK_SIZE;
	/* least common multiple of the stripe and the block size */
	unit = (u64)(stripe / dmr_gcd(stripe, DMR_BLOCK_SIZE)) * DMR_BLOCK_SIZE;
	seg = dmr_div_round_up((u64)DMR_DEFAULT_SEGMENT_MIN * DMR_BLOCK_SIZE,
			       unit) * unit;
	seg >>= DMR_BLOCK_SHIFT;
	if (seg > DMR_MAX_SEGMENT_BLOCKS)
		seg = DMR_MAX_SEGMENT_BLOCKS;
	return seg;
}

/**
 * dmr_map_cache_pages() - map pages a map_cache keeps in memory
 * @geo: device geometry
 * @cache_mib: the table option map_cache, 0 for none
 *
 * Return: the cache's pages, or 0 when there is no cache: none asked
 * for, or one as large as the map (dmr_map_cache_init()).
 */
u64 dmr_map_cache_pages(const struct dmr_geometry *geo, u32 cache_mib)
{
	u64 cache = (u64)cache_mib * DMR_MAP_PAGES_PER_MIB;

	return cache < dmr_map_blocks(geo->logical_blocks, geo->wide) ? cache : 0;
}

/**
 * dmr_map_cache_most() - map pages a map_cache may hold at once
 * @cap: dmr_map_cache_pages() (0: no cache)
 * @seg_blocks: blocks per segment
 *
 * Nothing leaves the cache while the worker serves one request or one GC
 * collection (dmr_map_need()).  A discard's piece (dmr_discard_piece())
 * reads back and changes half the cache's pages, one more when it is not
 * aligned, in the writer and in replay alike (dmr_replay_unit()), and the
 * request may need one more; GC's collection of a victim tests every
 * block of it (dmr_gc_collect()), which may be a page each; replay
 * applies a unit whole, its data blocks (fewer than a segment's) or its
 * large segments' records (DMR_UNIT_MAX_EXTENTS of them, the writer keeps
 * them in units of their own: dmr_unit_takes_data()), a segment's blocks
 * each, in two pages at most while a segment is smaller than a page's
 * entries and fewer pages than a segment's blocks past that.  So: the
 * cache, and the largest of half of it and two, a segment's blocks, and
 * two pages a record.
 *
 * Return: pages, 0 without a cache.
 */
u64 dmr_map_cache_most(u64 cap, u32 seg_blocks)
{
	u64 most = max_t(u64, cap / 2 + 2, seg_blocks);

	return cap ? cap + max_t(u64, most, 2 * DMR_UNIT_MAX_EXTENTS) : 0;
}

/**
 * dmr_array_elems() - elements of one of the arrays sized by the device
 * @geo: device geometry
 * @cache_mib: the table option map_cache, 0 for none
 * @a: the array
 *
 * Return: its elements; 0 for the map cache's arrays without a cache.
 */
u64 dmr_array_elems(const struct dmr_geometry *geo, u32 cache_mib, enum dmr_array a)
{
	u64 map_blocks = dmr_map_blocks(geo->logical_blocks, geo->wide);
	struct dmr_ckpt_layout l;

	switch (a) {
	case DMR_ARRAY_TAB_HASH:
		dmr_ckpt_layout(geo, &l);
		return 2 * (l.crc_blocks + l.segtab_blocks);
	case DMR_ARRAY_SEGS:
	case DMR_ARRAY_READERS:
	case DMR_ARRAY_LOAD_VALID:
		return geo->nr_segments;
	case DMR_ARRAY_LISTS:
		return DMR_MAP_LISTS(geo->segment_blocks);
	case DMR_ARRAY_HEAT:	/* a paged map keeps none (struct dmr_map @heat) */
		return dmr_map_cache_pages(geo, cache_mib) ? 0 :
		       dmr_heat_bytes(geo->logical_blocks);
	case DMR_ARRAY_PC_RING:
	case DMR_ARRAY_PC_STATE:
	case DMR_ARRAY_PC_REF:
		return dmr_map_cache_pages(geo, cache_mib) ? map_blocks : 0;
	default:
		return map_blocks;
	}
}

/**
 * dmr_array_elem_size() - bytes of an element of one of those arrays
 * @a: the array
 *
 * Return: the size; the module checks its own types against it.
 */
u32 dmr_array_elem_size(enum dmr_array a)
{
	switch (a) {
	case DMR_ARRAY_MAP_PAGES:
		return sizeof(void *);
	case DMR_ARRAY_TAB_HASH:
		return sizeof(u64);
	case DMR_ARRAY_SEGS:
		return sizeof(struct dmr_seg);
	case DMR_ARRAY_DIRTY:
	case DMR_ARRAY_HEAT:
	case DMR_ARRAY_PC_STATE:
	case DMR_ARRAY_PC_REF:
		return 1;
	default:	/* reader counts, list heads, CRCs, counts, ring entries */
		return sizeof(u32);
	}
}

/**
 * dmr_alloc_path() - how an array of @n elements of @size bytes is allocated
 * @n: elements
 * @size: bytes each
 * @max_bytes: the most the address space takes (ULONG_MAX)
 *
 * kvcalloc() refuses more than INT_MAX bytes (DMR_KVMALLOC_MAX), so
 * larger arrays go to vmalloc directly (dmr_alloc_array()).
 *
 * Return: the path.
 */
enum dmr_alloc_path dmr_alloc_path(u64 n, u32 size, u64 max_bytes)
{
	if (size && n > max_bytes / size)
		return DMR_ALLOC_TOO_BIG;
	return n * size <= DMR_KVMALLOC_MAX ? DMR_ALLOC_KVCALLOC : DMR_ALLOC_VMALLOC;
}

/**
 * dmr_map_memory_bytes() - kernel memory the target needs for a device
 * @geo: device geometry
 * @cache_mib: the table option map_cache (MiB of map pages), 0 for none
 *
 * What the target allocates when it loads the device: the map (a u32 per
 * logical block, a u64 if @geo->wide, in pages of a map block each; the
 * pages of blocks never mapped are not allocated, so this is the most it
 * takes, once every page holds a mapped block), every array sized by the
 * device (enum dmr_array: a pointer per map page, the segment table with
 * its links on the map's segment lists, a reader count and the load's
 * valid count per segment, the heads of those lists, a dirty byte and a
 * CRC32C per map block, and a 64-bit hash per block of each slot's CRC
 * and segment tables, and the write heat, 2 bits per logical block,
 * struct dmr_map), DMR_SEG_BUFFERS segment buffers (one per log
 * head, DMR_FLIGHT_SLOTS in flight, GC's read buffer) and the checkpoint
 * bounce buffer.  Small fixed allocations (the target itself, log unit
 * scratch, the map page reserve's 128 KiB: DMR_MAP_RESERVE) are left out.
 *
 * With a map cache smaller than the map (dmr_map_cache_init()), only the
 * pages it may hold at once are counted (dmr_map_cache_most(): a request,
 * a GC collection, and a load's replay, which checkpoints to stay within
 * it, dmr_replay_step()),
 * the cache's bookkeeping (a ring entry, a state and a used byte per
 * map block) is added, and the write heat is left out (a paged map keeps
 * none).
 *
 * All in 64 bits: above 2^29 logical blocks (about 2 TiB) the map alone is
 * more than INT_MAX bytes.
 *
 * Return: bytes.
 */
u64 dmr_map_memory_bytes(const struct dmr_geometry *geo, u32 cache_mib)
{
	u64 pages = dmr_map_cache_most(dmr_map_cache_pages(geo, cache_mib), geo->segment_blocks);
	u64 bytes;
	int a;

	if (!pages)
		pages = dmr_map_blocks(geo->logical_blocks, geo->wide);
	bytes = pages * DMR_BLOCK_SIZE +
		(u64)DMR_SEG_BUFFERS * geo->segment_blocks * DMR_BLOCK_SIZE +
		(u64)DMR_BOUNCE_BLOCKS * DMR_BLOCK_SIZE;
	for (a = 0; a < DMR_NR_ARRAYS; a++)
		bytes += dmr_array_elems(geo, cache_mib, a) * dmr_array_elem_size(a);
	return bytes;
}

/*
 * The birth's float: 5 bits of exponent, 11 of mantissa.  Below 2^11 the
 * value itself; else (2^11 + mantissa) << (exponent - 1), rounded down:
 * 0.05% at most, up to 2^42 sequence numbers (more is kept as that).
 */
#define DMR_BIRTH_MANT_BITS	11
#define DMR_BIRTH_MAX_EXP	31U

/**
 * dmr_birth_encode() - a segment's seq - birth as 16 bits of its table entry
 * @delta: how many sequence numbers its data is older than its use
 *
 * Return: the code, below 2^16 (DMR_DISK_SEG_BIRTH_SHIFT).
 */
u32 dmr_birth_encode(u64 delta)
{
	const u64 one = 1ULL << DMR_BIRTH_MANT_BITS;
	u32 e = 1;

	if (delta < one)
		return (u32)delta;
	while ((delta >> (e - 1)) >= 2 * one) {
		if (e == DMR_BIRTH_MAX_EXP)
			return DMR_BIRTH_MAX_EXP << DMR_BIRTH_MANT_BITS | (u32)(one - 1);
		e++;
	}
	return e << DMR_BIRTH_MANT_BITS | (u32)((delta >> (e - 1)) - one);
}

/**
 * dmr_birth_decode() - the inverse of dmr_birth_encode()
 * @code: its 16 bits (higher bits are ignored)
 *
 * Return: the delta, at most 0.05% below the one encoded.
 */
u64 dmr_birth_decode(u32 code)
{
	const u64 one = 1ULL << DMR_BIRTH_MANT_BITS;
	u32 e = (code >> DMR_BIRTH_MANT_BITS) & 31, mant = code & (u32)(one - 1);

	if (!e)
		return mant;
	return (one + mant) << (e - 1);
}

/**
 * dmr_map_fits() - whether a machine could load a device at all
 * @map_bytes: dmr_map_memory_bytes() of the device
 * @mem_total_bytes: the machine's RAM (MemTotal), 0 if unknown
 * @vmalloc_total_bytes: the kernel's vmalloc space (VmallocTotal), 0 if
 *	unknown
 *
 * The map lives in kernel memory, which is never swapped out, and its
 * large parts are virtually contiguous allocations.  A device needing more
 * than all of RAM, or more than the whole vmalloc address space, can never
 * load.  This is the hard limit only: a map close to the size of RAM loads
 * but leaves the machine little else.  RAM is checked first.
 *
 * Return: DMR_FIT_OK, DMR_FIT_NO_MEMORY or DMR_FIT_NO_VMALLOC.
 */
enum dmr_fit dmr_map_fits(u64 map_bytes, u64 mem_total_bytes,
			  u64 vmalloc_total_bytes)
{
	if (mem_total_bytes && map_bytes > mem_total_bytes)
		return DMR_FIT_NO_MEMORY;
	if (vmalloc_total_bytes && map_bytes > vmalloc_total_bytes)
		return DMR_FIT_NO_VMALLOC;
	return DMR_FIT_OK;
}

const char *dmr_fit_strerror(enum dmr_fit fit)
{
	switch (fit) {
	case DMR_FIT_OK:
		return "ok";
	case DMR_FIT_NO_MEMORY:
		return "map larger than the machine's RAM";
	case DMR_FIT_NO_VMALLOC:
		return "map larger than the kernel's vmalloc space";
	default:
		return "unknown memory fit status";
	}
}

bool dmr_sb_has_magic(const void *block)
{
	return memcmp(block, DMR_SB_MAGIC, DMR_MAGIC_LEN) == 0;
}

/**
 * dmr_sb_encode() - write a superblock copy into a block buffer
 * @sb: decoded superblock; @sb->blocknr says which copy this is
 * @block: DMR_BLOCK_SIZE bytes, fully overwritten
 */
void dmr_sb_encode(const struct dmr_sb *sb, void *block)
{
	struct dmr_disk_superblock *d = block;

	BUILD_BUG_ON(sizeof(*d) != DMR_BLOCK_SIZE);
	memset(d, 0, sizeof(*d));
	memcpy(d->magic, DMR_SB_MAGIC, DMR_MAGIC_LEN);
	d->version = cpu_to_le32(sb->version);
	d->feature_compat = cpu_to_le32(sb->feature_compat);
	d->feature_ro_compat = cpu_to_le32(sb->feature_ro_compat);
	/* the width's feature bit and the geometry can never disagree */
	d->feature_incompat = cpu_to_le32((sb->feature_incompat &
					   ~DMR_FEATURE_INCOMPAT_WIDE) |
					  (sb->geo.wide ? DMR_FEATURE_INCOMPAT_WIDE : 0));
	d->block_size = cpu_to_le32(DMR_BLOCK_SIZE);
	d->blocknr = cpu_to_le64(sb->blocknr);
	d->generation = cpu_to_le64(sb->generation);
	memcpy(d->uuid, sb->uuid, sizeof(d->uuid));
	d->ctime = cpu_to_le64(sb->ctime);
	d->device_blocks = cpu_to_le64(sb->geo.device_blocks);
	d->ckpt_offset = cpu_to_le64(sb->geo.ckpt_offset);
	d->ckpt_slot_blocks = cpu_to_le32(sb->geo.ckpt_slot_blocks);
	d->segment_blocks = cpu_to_le32(sb->geo.segment_blocks);
	d->data_offset = cpu_to_le64(sb->geo.data_offset);
	d->nr_segments = cpu_to_le64(sb->geo.nr_segments);
	d->logical_blocks = cpu_to_le64(sb->geo.logical_blocks);
	d->overprovision = cpu_to_le32(sb->geo.overprovision);
	d->stripe_blocks = cpu_to_le32(sb->stripe_blocks);
	d->grow_limit = cpu_to_le64(sb->geo.grow_limit);
	memcpy(d->label, sb->label, strnlen(sb->label, DMR_LABEL_LEN));
	d->csum = cpu_to_le32(dmr_csum_block(d, DMR_SB_CSUM_SALT));
}

static bool dmr_geometry_equal(const struct dmr_geometry *a,
			       const struct dmr_geometry *b)
{
	return a->device_blocks == b->device_blocks &&
	       a->segment_blocks == b->segment_blocks &&
	       a->overprovision == b->overprovision &&
	       a->ckpt_offset == b->ckpt_offset &&
	       a->ckpt_slot_blocks == b->ckpt_slot_blocks &&
	       a->data_offset == b->data_offset &&
	       a->nr_segments == b->nr_segments &&
	       a->grow_limit == b->grow_limit &&
	       a->logical_blocks == b->logical_blocks &&
	       a->wide == b->wide;
}

/**
 * dmr_sb_decode() - validate and decode one superblock copy
 * @block: DMR_BLOCK_SIZE bytes as read from the device
 * @blocknr: block the buffer was read from
 * @sb: filled on success (and partly on failure, for diagnostics)
 *
 * Checks, in order: magic, checksum, version, feature flags, block size,
 * recorded location, and that the geometry is exactly what
 * dmr_geometry_compute() derives from the recorded device size, segment
 * size and overprovision (so tools and module can never disagree).
 *
 * Return: DMR_SB_OK or the first check that failed.
 */
enum dmr_sb_status dmr_sb_decode(const void *block, u64 blocknr,
				 struct dmr_sb *sb)
{
	const struct dmr_disk_superblock *d = block;
	struct dmr_geometry geo;

	memset(sb, 0, sizeof(*sb));
	if (!dmr_sb_has_magic(d))
		return DMR_SB_BAD_MAGIC;
	if (le32_to_cpu(d->csum) != dmr_csum_block(d, DMR_SB_CSUM_SALT))
		return DMR_SB_BAD_CSUM;

	sb->version = le32_to_cpu(d->version);
	sb->feature_compat = le32_to_cpu(d->feature_compat);
	sb->feature_ro_compat = le32_to_cpu(d->feature_ro_compat);
	sb->feature_incompat = le32_to_cpu(d->feature_incompat);
	sb->blocknr = le64_to_cpu(d->blocknr);
	sb->generation = le64_to_cpu(d->generation);
	memcpy(sb->uuid, d->uuid, sizeof(sb->uuid));
	sb->ctime = le64_to_cpu(d->ctime);
	sb->stripe_blocks = le32_to_cpu(d->stripe_blocks);
	/* a NUL-padded string: what follows a NUL is not part of it */
	memcpy(sb->label, d->label, strnlen((const char *)d->label, DMR_LABEL_LEN));
	sb->geo.device_blocks = le64_to_cpu(d->device_blocks);
	sb->geo.ckpt_offset = le64_to_cpu(d->ckpt_offset);
	sb->geo.ckpt_slot_blocks = le32_to_cpu(d->ckpt_slot_blocks);
	sb->geo.segment_blocks = le32_to_cpu(d->segment_blocks);
	sb->geo.data_offset = le64_to_cpu(d->data_offset);
	sb->geo.nr_segments = le64_to_cpu(d->nr_segments);
	sb->geo.logical_blocks = le64_to_cpu(d->logical_blocks);
	sb->geo.overprovision = le32_to_cpu(d->overprovision);
	sb->geo.grow_limit = le64_to_cpu(d->grow_limit);
	sb->geo.wide = !!(sb->feature_incompat & DMR_FEATURE_INCOMPAT_WIDE);

	if (sb->version != DMR_FORMAT_VERSION)
		return DMR_SB_BAD_VERSION;
	if (sb->feature_incompat & ~DMR_FEATURE_INCOMPAT_SUPP)
		return DMR_SB_BAD_FEATURES;
	if (le32_to_cpu(d->block_size) != DMR_BLOCK_SIZE)
		return DMR_SB_BAD_BLOCK_SIZE;
	if (sb->blocknr != blocknr)
		return DMR_SB_BAD_LOCATION;
	/* a grow limit exactly with the feature that says where it is */
	if (!sb->geo.grow_limit != !(sb->feature_incompat & DMR_FEATURE_INCOMPAT_GROW))
		return DMR_SB_BAD_GEOMETRY;
	if (dmr_geometry_compute_wide(sb->geo.device_blocks, sb->geo.grow_limit,
				      sb->geo.segment_blocks, sb->geo.overprovision,
				      sb->geo.wide, &geo) != DMR_GEO_OK ||
	    !dmr_geometry_equal(&geo, &sb->geo))
		return DMR_SB_BAD_GEOMETRY;
	return DMR_SB_OK;
}

const char *dmr_sb_strerror(enum dmr_sb_status st)
{
	switch (st) {
	case DMR_SB_OK:
		return "ok";
	case DMR_SB_BAD_MAGIC:
		return "not a dm-remap device (bad superblock magic)";
	case DMR_SB_BAD_CSUM:
		return "superblock checksum mismatch";
	case DMR_SB_BAD_VERSION:
		return "unsupported format version";
	case DMR_SB_BAD_FEATURES:
		return "unsupported incompatible feature flags";
	case DMR_SB_BAD_BLOCK_SIZE:
		return "unsupported block size";
	case DMR_SB_BAD_LOCATION:
		return "superblock location mismatch (misdirected write)";
	case DMR_SB_BAD_GEOMETRY:
		return "inconsistent superblock geometry";
	default:
		return "unknown superblock error";
	}
}

/**
 * dmr_sb_version_remedy() - what to do with a device of another format version
 * @version: the version its superblock records (not DMR_FORMAT_VERSION)
 *
 * Nothing converts a device between versions: an older one's data is
 * copied off with the release that wrote it, and the device reformatted;
 * a newer one needs a newer module.
 *
 * Return: a static string, for the kernel log and remapctl.
 */
const char *dmr_sb_version_remedy(u32 version)
{
	if (version > DMR_FORMAT_VERSION)
		return "load it with a newer dm-remap module";
	return "copy the data off with its release, then reformat with this version's remapctl";
}

/**
 * dmr_sb_copies_current() - superblock copies that are valid and current
 * @st: each copy's dmr_sb_decode() status
 * @gen: each copy's generation, read only where @st is DMR_SB_OK
 * @best: the copy chosen: valid, with the highest generation
 *
 * A copy that does not decode, or that holds an older generation than
 * @best, is not current.  An older valid copy is what a crash between
 * the two writes of a grow (dmr_write_superblock()) leaves: the old
 * geometry, valid, which nothing may load once the grown copy is
 * damaged, since checkpoints and units past the old end are on the
 * device.  A writable load rewrites every copy that is not current
 * (dmr_load()).
 *
 * Return: 0 to DMR_SB_COPIES.
 */
unsigned int dmr_sb_copies_current(const enum dmr_sb_status *st, const u64 *gen,
				   unsigned int best)
{
	unsigned int i, n = 0;

	for (i = 0; i < DMR_SB_COPIES; i++)
		if (st[i] == DMR_SB_OK && gen[i] == gen[best])
			n++;
	return n;
}

/**
 * dmr_ckpt_layout() - blocks a checkpoint slot uses, after its header
 * @geo: device geometry, or the part of it a checkpoint covers
 *	(dmr_ckpt_geometry())
 * @layout: filled
 *
 * The map covers @geo->logical_blocks; the slot was sized in
 * dmr_geometry_compute_limit() for the whole device, so this always fits.
 * Without a grow limit the tables follow each other; with one, each
 * table starts where the limit's largest one before it ends, so a
 * checkpoint written before a grow is read at the same places after it.
 */
void dmr_ckpt_layout(const struct dmr_geometry *geo, struct dmr_ckpt_layout *layout)
{
	u64 max_map, max_crc, max_segtab;

	layout->map_blocks = dmr_map_blocks(geo->logical_blocks, geo->wide);
	layout->crc_blocks = dmr_div_round_up(layout->map_blocks * 4,
					      DMR_BLOCK_SIZE);
	layout->segtab_blocks = dmr_div_round_up(geo->nr_segments *
						 DMR_SEGTAB_ENTRY_SIZE,
						 DMR_BLOCK_SIZE);
	layout->crc_offset = 1;
	if (!geo->grow_limit) {
		layout->map_offset = layout->crc_offset + layout->crc_blocks;
		layout->segtab_offset = layout->map_offset + layout->map_blocks;
		return;
	}
	dmr_slot_sizes(geo->grow_limit, geo->segment_blocks, geo->wide, &max_map, &max_crc,
		       &max_segtab);
	layout->map_offset = layout->crc_offset + max_crc;
	layout->segtab_offset = layout->map_offset + max_map;
}
