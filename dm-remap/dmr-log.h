/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap log units, checkpoint headers and replay: functions defined in
 * dmr-log.c.
 *
 * Pure code.  No locking: replay runs from the constructor before any I/O
 * is admitted; the unit builder belongs to the single log writer.
 */
#ifndef DMR_LOG_H
#define DMR_LOG_H

#include "dmr-codec.h"
#include "dmr-map.h"

/**
 * struct dmr_unit - a log unit being built, or one decoded from disk
 * @seq: sequence number
 * @blocknr: device block of its summary
 * @next_segment: segment the log continues in
 * @data_csum: checksum of the data blocks (set by encode / decode)
 * @flags: DMR_UNIT_RELOC for a relocation unit, DMR_UNIT_WIDE for a unit
 *	whose summary holds 64-bit numbers; DMR_UNIT_EXTENTS is set by
 *	dmr_unit_encode_body() and dmr_unit_decode() from @nr_extents
 * @nr_extents: large segments it records (DMR_UNIT_EXTENTS)
 * @ext_lba: the first logical block of each
 * @ext_seg: the segment of each
 * @ext_csum: dmr_data_csum() of each segment's blocks
 * @nr_blocks: data blocks
 * @nr_discards: discard extents
 * @lba: logical block of each data block
 * @src: relocation units: data-area block each data block was copied from
 * @discard: (first, count) of each discard extent
 * @crc_known: in memory only: @crc holds every data block's
 *	dmr_block_digest(), so the summary's data checksum is folded from them
 *	(dmr_unit_encode_body()) and the data are not read again.  GC's
 *	relocation units: the victim's check computed them (dmr_seg_verify())
 * @crc: with @crc_known, dmr_block_digest() of each data block
 *
 * The numbers are 64-bit in memory whatever the summary's width (20 KiB
 * a unit); a narrow summary (no DMR_UNIT_WIDE) stores their low 32 bits,
 * so its builder must only be given numbers below 2^32 (a geometry of
 * fewer than 2^32 data and logical blocks).
 */
struct dmr_unit {
	u64 seq;
	u64 blocknr;
	u32 next_segment;
	u32 data_csum;
	u32 flags;
	u32 nr_extents;
	u64 ext_lba[DMR_UNIT_MAX_EXTENTS];
	u32 ext_seg[DMR_UNIT_MAX_EXTENTS];
	u32 ext_csum[DMR_UNIT_MAX_EXTENTS];
	u32 nr_blocks;
	u32 nr_discards;
	u64 lba[DMR_SUMMARY_WORDS];
	u64 src[DMR_SUMMARY_WORDS / 2];
	u64 discard[DMR_SUMMARY_WORDS / 2][2];
	bool crc_known;
	u32 crc[DMR_SUMMARY_WORDS / 2];
};

enum dmr_log_status {
	DMR_LOG_OK = 0,
	DMR_LOG_BAD_MAGIC,	/* never written (or not a summary) */
	DMR_LOG_BAD_CSUM,	/* torn or corrupted summary */
	DMR_LOG_BAD_LOCATION,	/* misdirected */
	DMR_LOG_BAD_UUID,	/* left over from an earlier format */
	DMR_LOG_BAD_COUNTS,	/* impossible sizes or logical blocks */
	DMR_LOG_BAD_SEQ,	/* not the next unit */
	DMR_LOG_BAD_DATA,	/* data blocks torn */
	DMR_LOG_READ_ERROR,
	DMR_LOG_END,		/* the log ran out of segments */
	DMR_LOG_STALE,		/* a unit of an earlier use of the segment */
	DMR_LOG_NR_STATUS,
};

const char *dmr_log_strerror(enum dmr_log_status st);

/* Unit builder (the writer side). */
void dmr_unit_reset(struct dmr_unit *u, u32 flags);
u32 dmr_unit_block_words(const struct dmr_unit *u);
u32 dmr_unit_discard_words(const struct dmr_unit *u);
u32 dmr_unit_extent_words(const struct dmr_unit *u);
u64 dmr_unit_words(const struct dmr_unit *u);
u32 dmr_unit_capacity(bool wide, bool reloc);
bool dmr_unit_room(const struct dmr_unit *u, u32 words);
u32 dmr_data_csum(const void *data, u32 nr_blocks);
#define DMR_DATA_CSUM_SEED	(~0U)
/*
 * In memory only: the summary checksum field of a unit encoded with its
 * data checksum set (dmr_unit_encode_body() of a unit with @crc_known),
 * until dmr_unit_finish() puts the summary's checksum there.  Never on disk.
 */
#define DMR_SUMMARY_DATA_SET	1U
u32 dmr_data_csum_add(u32 csum, const void *data, u32 nr_blocks);
u32 dmr_data_csum_end(u32 csum);
/* xxh64's seed for a block's digest (format 6): "dmremap6" */
#define DMR_BLOCK_DIGEST_SEED	0x646d72656d617036ULL
u32 dmr_block_digest(const void *block);
u32 dmr_data_csum_fold(u32 csum, u32 digest);
void dmr_unit_encode(struct dmr_unit *u, const u8 *uuid, const void *data,
		     void *block);
void dmr_unit_encode_body(const struct dmr_unit *u, const u8 *uuid, void *block);
u32 dmr_unit_finish(void *block, const void *data);
void dmr_unit_finish_csum(void *block, u32 data_csum);
bool dmr_unit_data_check(const struct dmr_unit *u, const void *data, u32 *crc);
bool dmr_blocks_check(const void *data, u32 nr, u32 csum, u32 *crc);
u32 dmr_seg_verify(const u8 *buf, u64 block0, u64 data0, u32 seg_blocks,
		   u64 first_seq, const u8 *uuid, const struct dmr_map *m,
		   struct dmr_unit *u, u8 *ok, u32 *crc);
bool __must_check dmr_units_finish(void *seg, u32 from, u32 to);
enum dmr_log_status __must_check
dmr_unit_decode(const void *block, u64 blocknr, const u8 *uuid,
		u64 nr_logical, struct dmr_unit *u);

/**
 * struct dmr_log_pos - where a log head goes on
 * @segment: segment of the head's next unit (DMR_NO_SEGMENT: none)
 * @offset: block in @segment of the next unit's summary
 * @next_segment: segment reserved to go on in (DMR_NO_SEGMENT: none yet)
 * @seq: single-chain replay (dmr_replay_log()): sequence number of the
 *	last unit applied; unused elsewhere
 */
struct dmr_log_pos {
	u32 segment;
	u32 offset;
	u32 next_segment;
	u64 seq;
};

/**
 * struct dmr_ckpt - decoded checkpoint header (see struct dmr_disk_ckpt)
 */
struct dmr_ckpt {
	u32 flags;
	u64 seq;
	u64 log_seq;
	u64 blocknr;
	struct dmr_log_pos heads[DMR_NR_HEADS];
	u32 crc_csum;
	u32 segtab_csum;
	u64 mapped_blocks;
	u64 user_blocks;
	u64 log_blocks;
	u64 gc_moved;
	u64 temp_threshold;
	struct dmr_age_clock age;
	u64 logical_blocks;
	u64 nr_segments;
};

void dmr_ckpt_encode(const struct dmr_ckpt *c, const u8 *uuid, void *block);
enum dmr_log_status __must_check
dmr_ckpt_decode(const void *block, u64 blocknr, const u8 *uuid,
		struct dmr_ckpt *c);

bool __must_check dmr_ckpt_geometry(const struct dmr_geometry *geo,
				    const struct dmr_ckpt *c,
				    struct dmr_geometry *covered);
void dmr_log_advance(struct dmr_log_pos *pos, u32 unit_blocks, u32 seg_blocks);
bool dmr_heads_valid(const struct dmr_geometry *geo, const struct dmr_log_pos *pos);

/**
 * typedef dmr_read_fn - read blocks for replay
 * @ctx: caller's context
 * @blocknr: first device block
 * @nr: number of blocks
 * @buf: destination, @nr * DMR_BLOCK_SIZE bytes
 *
 * Return: 0 or a negative errno.
 */
typedef int (*dmr_read_fn)(void *ctx, u64 blocknr, u32 nr, void *buf);

/**
 * typedef dmr_write_fn - write blocks (remapctl check --repair)
 * @ctx: caller's context
 * @blocknr: first device block
 * @nr: number of blocks
 * @buf: source, @nr * DMR_BLOCK_SIZE bytes
 *
 * Return: 0 or a negative errno.
 */
typedef int (*dmr_write_fn)(void *ctx, u64 blocknr, u32 nr, const void *buf);

/**
 * struct dmr_slot_io - how dmr_slot_load() reads and dmr_slot_write() writes a slot
 * @read: block reader
 * @write: block writer (dmr_slot_write() only)
 * @ctx: passed to @read and @write
 * @bounce: scratch space of @bounce_blocks blocks
 * @bounce_blocks: at least 1
 * @read_zero: dmr_slot_load() reads the map blocks the CRC table records
 *	as all-zero too, and checks they are (remapctl check); else it
 *	takes the table's word for them and reads only the others (the
 *	module's load: a sparse device's map is mostly such blocks)
 * @loaded: if set, called by dmr_slot_load() with @ctx after each map page
 *	that holds a mapped entry is filled, before the next is read: the
 *	module counts it and may let it leave memory (table option
 *	map_cache); an error ends the load with it
 * @table_read: if set, called by dmr_slot_load() with @ctx after each read
 *	of the CRC table (@crc) or the segment table: @nr blocks from block
 *	@block of it, as the slot holds them (the module hashes them, so a
 *	checkpoint skips the blocks that do not change: dmr_write_table())
 */
struct dmr_slot_io {
	dmr_read_fn read;
	dmr_write_fn write;
	void *ctx;
	void *bounce;
	u32 bounce_blocks;
	bool read_zero;
	int (*loaded)(void *ctx, u64 p);
	void (*table_read)(void *ctx, bool crc, u64 block, u32 nr, const void *buf);
};

/* The part of a checkpoint slot that failed to load. */
enum dmr_slot_table {
	DMR_SLOT_CRC_TABLE,	/* the map blocks' CRC table */
	DMR_SLOT_MAP,		/* a map block */
	DMR_SLOT_SEGTAB,	/* the segment table */
	DMR_SLOT_SIZES,		/* the sizes the header covers (dmr_ckpt_geometry()) */
};

/**
 * struct dmr_slot_err - where dmr_slot_load() failed
 * @table: which table
 * @block: the map block, for DMR_SLOT_MAP
 */
struct dmr_slot_err {
	enum dmr_slot_table table;
	u64 block;
};

int __must_check dmr_slot_load(const struct dmr_slot_io *io,
			       const struct dmr_geometry *geo, unsigned int slot,
			       const struct dmr_ckpt *c, struct dmr_map *m,
			       u32 *map_crc, struct dmr_slot_err *err);

/* The slot encoders: the module's checkpoint writer and dmr_slot_write(). */
bool dmr_slot_map_zero(const struct dmr_map *m, u64 p);
void dmr_map_block_decode(const struct dmr_map *m, u64 p, const void *block, u32 *page);
u32 dmr_slot_map_encode(const struct dmr_map *m, u64 p, void *block);
u64 dmr_slot_table_encode(const struct dmr_map *m, const u32 *map_crc,
			  enum dmr_slot_table t, u64 item, void *buf, u32 nr_blocks);
u32 dmr_table_run(const u64 *was, const u64 *now, u32 n, u32 from, u32 *len);
int __must_check dmr_slot_write(const struct dmr_slot_io *io,
				const struct dmr_geometry *geo, unsigned int slot,
				const struct dmr_map *m, u32 *map_crc,
				struct dmr_ckpt *c);

void dmr_heads_load_states(struct dmr_map *m, const struct dmr_log_pos *pos);
void dmr_heads_open(struct dmr_map *m, const struct dmr_log_pos *pos, u64 seq);

/**
 * struct dmr_replay - replay parameters and results
 * @geo: geometry
 * @uuid: the superblock's uuid
 * @read: block reader
 * @need: if set, called for the logical blocks [@lba, @lba + @n) before
 *	their entries change: the module reads back the map pages out of
 *	memory (table option map_cache); an error ends the replay with it.
 *	A unit's discard extents are asked for in pieces of @discard_step
 *	blocks, each unmapped before the next is asked for, and its data
 *	blocks one by one after them, before any is applied
 * @step: if set, called after each unit applied and after each piece of
 *	a discard (with @need), with the positions and the last sequence
 *	number a replay of the rest would start from: @pos and @seq before
 *	the unit whose discard is in pieces, after the unit otherwise.  The
 *	map is then one a load from there gives the same map from (see
 *	dmr_replay_unit()): the module writes a checkpoint here to let the
 *	pages replay made dirty leave memory.  An error ends the replay
 * @discard_step: blocks of a discard extent per @need (0: all of it)
 * @ctx: passed to @read, @need and @step
 * @buf: scratch space of @geo->segment_blocks blocks
 * @unit: scratch units, one per head replayed
 * @units: units applied (out)
 * @stop: why replay stopped (out): the first head, in head order, that
 *	stopped on something else than the normal end of a chain (no unit,
 *	out of segments, a stale unit), else head 0's reason
 * @head_stop: why each head's chain ended (out)
 */
struct dmr_replay {
	const struct dmr_geometry *geo;
	const u8 *uuid;
	dmr_read_fn read;
	int (*need)(void *ctx, u64 lba, u64 n);
	int (*step)(void *ctx, const struct dmr_log_pos *pos, unsigned int nr,
		    u64 seq);
	u64 discard_step;
	void *ctx;
	void *buf;
	struct dmr_unit *unit;
	u64 units;
	enum dmr_log_status stop;
	enum dmr_log_status head_stop[DMR_NR_HEADS];
};

bool dmr_log_stop_benign(enum dmr_log_status st);

bool dmr_extent_fits(const struct dmr_map *m, const struct dmr_unit *u, u32 i,
		     u32 segment);
int __must_check dmr_unit_apply(struct dmr_map *m, const struct dmr_unit *u, u32 segment,
				u32 offset);
int __must_check dmr_replay_heads(struct dmr_replay *r, struct dmr_map *m,
				  struct dmr_log_pos *pos, unsigned int nr,
				  u64 *seq);
int __must_check dmr_replay_log(struct dmr_replay *r, struct dmr_map *m,
				struct dmr_log_pos *pos);

#endif /* DMR_LOG_H */
