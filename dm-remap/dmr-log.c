// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap log units, checkpoint headers and roll-forward replay.
 *
 * Pure code (see dmr-pure.h): the module, KUnit (with an in-memory fake
 * device) and the userspace tools run this same replay.  No locking.
 */
#include "dmr-log.h"

const char *dmr_log_strerror(enum dmr_log_status st)
{
	static const char *const msg[DMR_LOG_NR_STATUS] = {
		[DMR_LOG_OK] = "ok",
		[DMR_LOG_BAD_MAGIC] = "no unit (bad magic)",
		[DMR_LOG_BAD_CSUM] = "torn or corrupted summary",
		[DMR_LOG_BAD_LOCATION] = "misdirected block",
		[DMR_LOG_BAD_UUID] = "block of another format",
		[DMR_LOG_BAD_COUNTS] = "impossible unit contents",
		[DMR_LOG_BAD_SEQ] = "out of sequence",
		[DMR_LOG_BAD_DATA] = "torn data",
		[DMR_LOG_READ_ERROR] = "read error",
		[DMR_LOG_END] = "log ran out of segments",
		[DMR_LOG_STALE] = "unit of an earlier use of the segment",
	};

	return st < DMR_LOG_NR_STATUS ? msg[st] : "unknown log status";
}

/*
 * Start an empty unit; @flags: DMR_UNIT_RELOC for a relocation unit,
 * DMR_UNIT_WIDE for 64-bit numbers in its summary.
 */
void dmr_unit_reset(struct dmr_unit *u, u32 flags)
{
	u->flags = flags;
	u->nr_extents = 0;
	u->nr_blocks = 0;
	u->nr_discards = 0;
	u->data_csum = 0;
	u->crc_known = false;
}

/* Return: summary words one number takes: 2 in a wide unit, else 1. */
static u32 dmr_unit_number_words(const struct dmr_unit *u)
{
	return u->flags & DMR_UNIT_WIDE ? 2 : 1;
}

/*
 * Return: summary words a data block takes: a number (its logical block),
 * two in a relocation unit (and its source).
 */
u32 dmr_unit_block_words(const struct dmr_unit *u)
{
	return (u->flags & DMR_UNIT_RELOC ? 2 : 1) * dmr_unit_number_words(u);
}

/* Return: summary words a discard extent takes: two numbers. */
u32 dmr_unit_discard_words(const struct dmr_unit *u)
{
	return 2 * dmr_unit_number_words(u);
}

/*
 * Return: summary words a large segment takes (DMR_UNIT_EXTENTS): its
 * first logical block, its segment and its checksum.  The count before
 * them takes one more (dmr_unit_room()).
 */
u32 dmr_unit_extent_words(const struct dmr_unit *u)
{
	return dmr_unit_number_words(u) + 2;
}

/**
 * dmr_unit_capacity() - data blocks a log unit's summary lists at most
 * @wide: 64-bit numbers (DMR_UNIT_WIDE): two words each
 * @reloc: a relocation unit (DMR_UNIT_RELOC): a logical block and its
 *	source for each
 *
 * Return: DMR_SUMMARY_WORDS divided by the words a block takes
 * (dmr_unit_block_words()): 1008, 504, 504 or 252.
 */
u32 dmr_unit_capacity(bool wide, bool reloc)
{
	return DMR_SUMMARY_WORDS / ((wide ? 2 : 1) * (reloc ? 2 : 1));
}

/*
 * Return: summary words @u's entries take: its large segments (and their
 * count), blocks and discard extents.
 */
u64 dmr_unit_words(const struct dmr_unit *u)
{
	return (u->nr_extents ? 1 + (u64)u->nr_extents * dmr_unit_extent_words(u) : 0) +
	       (u64)u->nr_blocks * dmr_unit_block_words(u) +
	       (u64)u->nr_discards * dmr_unit_discard_words(u);
}

/* Return: true if @words more summary words (dmr_unit_*_words()) fit. */
bool dmr_unit_room(const struct dmr_unit *u, u32 words)
{
	return dmr_unit_words(u) + words <= DMR_SUMMARY_WORDS;
}

/* Store @v at @d->words[*w] in @u's width, advancing *w past it. */
static void dmr_put_number(const struct dmr_unit *u, struct dmr_disk_summary *d,
			   u32 *w, u64 v)
{
	d->words[(*w)++] = cpu_to_le32(lower_32_bits(v));
	if (u->flags & DMR_UNIT_WIDE)
		d->words[(*w)++] = cpu_to_le32(upper_32_bits(v));
}

/* The number at @d->words[*w] in @u's width, advancing *w past it. */
static u64 dmr_get_number(const struct dmr_unit *u, const struct dmr_disk_summary *d,
			  u32 *w)
{
	u64 v = le32_to_cpu(d->words[(*w)++]);

	if (u->flags & DMR_UNIT_WIDE)
		v |= (u64)le32_to_cpu(d->words[(*w)++]) << 32;
	return v;
}

/**
 * dmr_data_csum() - the data checksum of whole blocks (format 6)
 * @data: @nr_blocks blocks, contiguous
 * @nr_blocks: their number
 *
 * What a unit's summary and a large segment's record keep of their data
 * blocks: each block's digest (dmr_block_digest()) folded in order into
 * a running value (dmr_data_csum_fold()), from DMR_DATA_CSUM_SEED, and
 * salted (dmr_data_csum_end()).
 *
 * Format 6 (issue 41): the digest is xxh64's where formats up to 5 took
 * CRC32C over the bytes.  Both run at memory speed on hardware with a
 * CRC32C instruction (on the development host 31 GB/s for crc32c, 16
 * for xxh64); the emulator the project measures in runs the crc32
 * instruction in software, 50 times slower than xxh64's plain integer
 * arithmetic, and it was most of the CPU a write cost there (a 1 MiB
 * write's checksum 8 ms).  xxh64 is also the fast one on a CPU without a
 * CRC instruction (table-driven CRC32C: 2 GB/s on that host).
 *
 * Return: the checksum.
 */
u32 dmr_data_csum(const void *data, u32 nr_blocks)
{
	return dmr_data_csum_end(dmr_data_csum_add(DMR_DATA_CSUM_SEED, data, nr_blocks));
}

/**
 * dmr_data_csum_add() - add whole blocks to a data checksum being built
 * @csum: DMR_DATA_CSUM_SEED, or what the previous call returned
 * @data: the next @nr_blocks blocks of the data, contiguous
 * @nr_blocks: their number
 *
 * dmr_data_csum_end() of the chain over pieces in order equals
 * dmr_data_csum() of the same blocks contiguous.
 *
 * Return: the running checksum.
 */
u32 dmr_data_csum_add(u32 csum, const void *data, u32 nr_blocks)
{
	const u8 *p = data;
	u32 i;

	for (i = 0; i < nr_blocks; i++)
		csum = dmr_data_csum_fold(csum, dmr_block_digest(p + (size_t)i * DMR_BLOCK_SIZE));
	return csum;
}

/* Return: the data checksum of a chain built with dmr_data_csum_add(). */
u32 dmr_data_csum_end(u32 csum)
{
	return csum ^ DMR_DATA_CSUM_SALT;
}

/*
 * x^(8 * DMR_BLOCK_SIZE) mod the CRC32C polynomial, bit-reflected as the
 * CRC's register is (x^0 is the top bit): what a block of zeros does to
 * a CRC32C register.  KUnit (dmr_test_csum_fold) checks it against
 * crc32c() over zeros.
 */
#define DMR_CRC32C_X_BLOCK	0x35d73a62U
#define DMR_CRC32C_POLY		0x82f63b78U	/* reflected */

/* a * b mod the CRC32C polynomial, both bit-reflected (zlib's multmodp()) */
static u32 dmr_crc32c_mul(u32 a, u32 b)
{
	u32 m = 1U << 31, p = 0;

	for (; m; m >>= 1) {
		if (a & m)
			p ^= b;
		b = b & 1 ? (b >> 1) ^ DMR_CRC32C_POLY : b >> 1;
	}
	return p;
}

/**
 * dmr_block_digest() - the digest of one data block alone (format 6)
 * @block: DMR_BLOCK_SIZE bytes
 *
 * Return: the low 32 bits of xxh64(@block, DMR_BLOCK_DIGEST_SEED), what
 * dmr_data_csum_fold() takes.
 */
u32 dmr_block_digest(const void *block)
{
	return (u32)xxh64(block, DMR_BLOCK_SIZE, DMR_BLOCK_DIGEST_SEED);
}

/**
 * dmr_data_csum_fold() - add a block to a data checksum by its digest
 * @csum: DMR_DATA_CSUM_SEED, or what the previous call (or
 *	dmr_data_csum_add()) returned
 * @digest: dmr_block_digest() of the next data block
 *
 * The running value is multiplied by x^(8 * DMR_BLOCK_SIZE) modulo the
 * CRC32C polynomial and the digest added (xored): a polynomial over
 * GF(2^32) in the blocks' digests, so a change to any one block changes
 * the checksum whenever it changes the block's digest (the multiplier is
 * invertible), and blocks that swap places change it too.  Up to format
 * 5, where the digest was the block's CRC32C, this was exactly CRC32C
 * over the blocks (the register's update is linear over GF(2)).  GC
 * checks a victim's units block by block (dmr_unit_data_check()) and
 * folds the moved blocks' digests into their new units' checksums, rather
 * than reading every moved block a second time.
 *
 * Return: the running checksum.
 */
u32 dmr_data_csum_fold(u32 csum, u32 digest)
{
	return dmr_crc32c_mul(DMR_CRC32C_X_BLOCK, csum) ^ digest;
}

static void dmr_put_csum(void *block, u32 salt)
{
	__le32 *csum = (__le32 *)((u8 *)block + DMR_MAGIC_LEN);

	*csum = cpu_to_le32(dmr_csum_block(block, salt));
}

static bool dmr_csum_ok(const void *block, u32 salt)
{
	const __le32 *csum = (const __le32 *)((const u8 *)block + DMR_MAGIC_LEN);

	return le32_to_cpu(*csum) == dmr_csum_block(block, salt);
}

/**
 * dmr_unit_encode_body() - write a unit's summary block, checksums aside
 * @u: the unit
 * @uuid: the superblock's uuid
 * @block: the summary block, fully overwritten
 *
 * The writer encodes a unit when it closes it, in the segment buffer right
 * in front of its data; the checksums are added by dmr_unit_finish() when
 * the unit is written, possibly together with the units after it.  A unit
 * whose blocks' CRCs are known (@u->crc_known) gets its data checksum
 * here, folded from them, and the summary's own checksum field, which
 * dmr_unit_finish() fills, holds DMR_SUMMARY_DATA_SET until then: the data
 * checksum is set, finish need not read the data.  (After a finish the
 * data checksum is right too, so a finish that ran twice and found its
 * own checksum equal to the marker would still keep a right one.)
 */
void dmr_unit_encode_body(const struct dmr_unit *u, const u8 *uuid, void *block)
{
	struct dmr_disk_summary *d = block;
	u32 i, w = 0;

	memset(d, 0, sizeof(*d));
	memcpy(d->magic, DMR_SUMMARY_MAGIC, DMR_MAGIC_LEN);
	d->seq = cpu_to_le64(u->seq);
	d->blocknr = cpu_to_le64(u->blocknr);
	memcpy(d->uuid, uuid, sizeof(d->uuid));
	d->nr_blocks = cpu_to_le32(u->nr_blocks);
	d->nr_discards = cpu_to_le32(u->nr_discards);
	d->next_segment = cpu_to_le32(u->next_segment);
	d->flags = cpu_to_le32((u->flags & ~DMR_UNIT_EXTENTS) |
			       (u->nr_extents ? DMR_UNIT_EXTENTS : 0));
	if (u->nr_extents)
		d->words[w++] = cpu_to_le32(u->nr_extents);
	for (i = 0; i < u->nr_extents; i++) {
		dmr_put_number(u, d, &w, u->ext_lba[i]);
		d->words[w++] = cpu_to_le32(u->ext_seg[i]);
		d->words[w++] = cpu_to_le32(u->ext_csum[i]);
	}
	for (i = 0; i < u->nr_blocks; i++) {
		dmr_put_number(u, d, &w, u->lba[i]);
		if (u->flags & DMR_UNIT_RELOC)
			dmr_put_number(u, d, &w, u->src[i]);
	}
	for (i = 0; i < u->nr_discards; i++) {
		dmr_put_number(u, d, &w, u->discard[i][0]);
		dmr_put_number(u, d, &w, u->discard[i][1]);
	}
	if (u->crc_known) {
		u32 crc = DMR_DATA_CSUM_SEED;

		for (i = 0; i < u->nr_blocks; i++)
			crc = dmr_data_csum_fold(crc, u->crc[i]);
		d->data_csum = cpu_to_le32(dmr_data_csum_end(crc));
		d->csum = cpu_to_le32(DMR_SUMMARY_DATA_SET);
	}
}

/**
 * dmr_unit_finish() - add the checksums to an encoded summary
 * @block: a summary written by dmr_unit_encode_body()
 * @data: its data blocks, contiguous (the blocks after @block in a segment)
 *
 * Return: the data checksum.
 */
u32 dmr_unit_finish(void *block, const void *data)
{
	struct dmr_disk_summary *d = block;
	u32 csum = le32_to_cpu(d->csum) == DMR_SUMMARY_DATA_SET ?
		   le32_to_cpu(d->data_csum) :
		   dmr_data_csum(data, le32_to_cpu(d->nr_blocks));

	dmr_unit_finish_csum(block, csum);
	return csum;
}

/**
 * dmr_unit_finish_csum() - add the checksums to an encoded summary
 * @block: a summary written by dmr_unit_encode_body()
 * @data_csum: dmr_data_csum() of its data blocks, computed elsewhere
 *	(data that is not behind its summary in memory)
 */
void dmr_unit_finish_csum(void *block, u32 data_csum)
{
	struct dmr_disk_summary *d = block;

	d->data_csum = cpu_to_le32(data_csum);
	dmr_put_csum(d, DMR_SUMMARY_CSUM_SALT);
}

/**
 * dmr_units_finish() - add the checksums to consecutive units in a buffer
 * @seg: segment buffer
 * @from: block of the first unit's summary
 * @to: block after the last unit
 *
 * Walks the summaries from @from, each followed by its data blocks.
 *
 * Return: true if the units end exactly at @to (false means the caller's
 * bookkeeping is wrong; nothing after the first misfit is touched).
 */
bool dmr_units_finish(void *seg, u32 from, u32 to)
{
	u8 *buf = seg;

	while (from < to) {
		u8 *s = buf + (size_t)from * DMR_BLOCK_SIZE;
		u32 nr = le32_to_cpu(((struct dmr_disk_summary *)s)->nr_blocks);

		if (nr > DMR_SUMMARY_WORDS || from + 1 + nr > to)
			return false;
		dmr_unit_finish(s, s + DMR_BLOCK_SIZE);
		from += 1 + nr;
	}
	return from == to;
}

/**
 * dmr_unit_encode() - write a unit's summary block, checksums included
 * @u: the unit; @u->data_csum is computed here
 * @uuid: the superblock's uuid
 * @data: the unit's @u->nr_blocks data blocks, contiguous
 * @block: the summary block, fully overwritten
 */
void dmr_unit_encode(struct dmr_unit *u, const u8 *uuid, const void *data,
		     void *block)
{
	dmr_unit_encode_body(u, uuid, block);
	u->data_csum = dmr_unit_finish(block, data);
}

/**
 * dmr_unit_decode() - validate and decode a summary block
 * @block: as read from the device
 * @blocknr: where it was read from
 * @uuid: the superblock's uuid
 * @nr_logical: logical blocks of the device (bounds for every entry)
 * @u: filled on success
 *
 * The data checksum is only decoded here; the caller checks the data.
 *
 * Return: DMR_LOG_OK or the first check that failed.
 */
enum dmr_log_status dmr_unit_decode(const void *block, u64 blocknr,
				    const u8 *uuid, u64 nr_logical,
				    struct dmr_unit *u)
{
	const struct dmr_disk_summary *d = block;
	u32 i, w = 0;

	if (memcmp(d->magic, DMR_SUMMARY_MAGIC, DMR_MAGIC_LEN))
		return DMR_LOG_BAD_MAGIC;
	if (!dmr_csum_ok(d, DMR_SUMMARY_CSUM_SALT))
		return DMR_LOG_BAD_CSUM;
	if (le64_to_cpu(d->blocknr) != blocknr)
		return DMR_LOG_BAD_LOCATION;
	if (memcmp(d->uuid, uuid, sizeof(d->uuid)))
		return DMR_LOG_BAD_UUID;
	u->seq = le64_to_cpu(d->seq);
	u->blocknr = blocknr;
	u->data_csum = le32_to_cpu(d->data_csum);
	u->nr_blocks = le32_to_cpu(d->nr_blocks);
	u->nr_discards = le32_to_cpu(d->nr_discards);
	u->next_segment = le32_to_cpu(d->next_segment);
	u->flags = le32_to_cpu(d->flags);
	u->nr_extents = 0;
	if ((u->flags & ~(DMR_UNIT_RELOC | DMR_UNIT_WIDE | DMR_UNIT_EXTENTS)) ||
	    u->nr_blocks > DMR_SUMMARY_WORDS ||
	    u->nr_discards > DMR_SUMMARY_WORDS / 2)
		return DMR_LOG_BAD_COUNTS;
	if (u->flags & DMR_UNIT_EXTENTS) {
		/* a count, at least one, never in a relocation unit */
		u->nr_extents = le32_to_cpu(d->words[w++]);
		if (!u->nr_extents || u->nr_extents > DMR_UNIT_MAX_EXTENTS ||
		    (u->flags & DMR_UNIT_RELOC))
			return DMR_LOG_BAD_COUNTS;
	}
	if (!dmr_unit_room(u, 0))
		return DMR_LOG_BAD_COUNTS;
	for (i = 0; i < u->nr_extents; i++) {
		u->ext_lba[i] = dmr_get_number(u, d, &w);
		u->ext_seg[i] = le32_to_cpu(d->words[w++]);
		u->ext_csum[i] = le32_to_cpu(d->words[w++]);
		if (u->ext_lba[i] >= nr_logical)
			return DMR_LOG_BAD_COUNTS;
	}
	for (i = 0; i < u->nr_blocks; i++) {
		u->lba[i] = dmr_get_number(u, d, &w);
		if (u->lba[i] >= nr_logical)
			return DMR_LOG_BAD_COUNTS;
		if (u->flags & DMR_UNIT_RELOC)
			u->src[i] = dmr_get_number(u, d, &w);
	}
	for (i = 0; i < u->nr_discards; i++) {
		u64 first = dmr_get_number(u, d, &w);
		u64 count = dmr_get_number(u, d, &w);

		if (!count || count > nr_logical || first > nr_logical - count)
			return DMR_LOG_BAD_COUNTS;
		u->discard[i][0] = first;
		u->discard[i][1] = count;
	}
	return DMR_LOG_OK;
}

static_assert(sizeof(((struct dmr_disk_ckpt *)0)->age_jumps) ==
	      DMR_AGE_JUMPS * 2 * sizeof(__le64), "the age clock's jumps on disk");

/**
 * dmr_ckpt_encode() - write a checkpoint slot header
 * @c: the header
 * @uuid: the superblock's uuid
 * @block: fully overwritten
 */
void dmr_ckpt_encode(const struct dmr_ckpt *c, const u8 *uuid, void *block)
{
	struct dmr_disk_ckpt *d = block;
	unsigned int i;

	memset(d, 0, sizeof(*d));
	memcpy(d->magic, DMR_CKPT_MAGIC, DMR_MAGIC_LEN);
	d->flags = cpu_to_le32(c->flags);
	d->seq = cpu_to_le64(c->seq);
	d->log_seq = cpu_to_le64(c->log_seq);
	d->blocknr = cpu_to_le64(c->blocknr);
	memcpy(d->uuid, uuid, sizeof(d->uuid));
	for (i = 0; i < DMR_NR_HEADS; i++) {
		d->heads[i].segment = cpu_to_le32(c->heads[i].segment);
		d->heads[i].offset = cpu_to_le32(c->heads[i].offset);
		d->heads[i].next_segment = cpu_to_le32(c->heads[i].next_segment);
	}
	d->crc_csum = cpu_to_le32(c->crc_csum);
	d->segtab_csum = cpu_to_le32(c->segtab_csum);
	d->mapped_blocks = cpu_to_le64(c->mapped_blocks);
	d->user_blocks = cpu_to_le64(c->user_blocks);
	d->log_blocks = cpu_to_le64(c->log_blocks);
	d->gc_moved = cpu_to_le64(c->gc_moved);
	d->temp_threshold = cpu_to_le64(c->temp_threshold);
	d->nr_age_jumps = cpu_to_le32(c->age.nr);
	for (i = 0; i < c->age.nr && i < DMR_AGE_JUMPS; i++) {
		d->age_jumps[i].at = cpu_to_le64(c->age.at[i]);
		d->age_jumps[i].len = cpu_to_le64(c->age.len[i]);
	}
	d->logical_blocks = cpu_to_le64(c->logical_blocks);
	d->nr_segments = cpu_to_le64(c->nr_segments);
	dmr_put_csum(d, DMR_CKPT_CSUM_SALT);
}

/**
 * dmr_ckpt_decode() - validate and decode a checkpoint slot header
 * @block: as read
 * @blocknr: where it was read from
 * @uuid: the superblock's uuid
 * @c: filled on success
 *
 * Return: DMR_LOG_OK or the first check that failed.
 */
enum dmr_log_status dmr_ckpt_decode(const void *block, u64 blocknr,
				    const u8 *uuid, struct dmr_ckpt *c)
{
	const struct dmr_disk_ckpt *d = block;
	unsigned int i;

	if (memcmp(d->magic, DMR_CKPT_MAGIC, DMR_MAGIC_LEN))
		return DMR_LOG_BAD_MAGIC;
	if (!dmr_csum_ok(d, DMR_CKPT_CSUM_SALT))
		return DMR_LOG_BAD_CSUM;
	if (le64_to_cpu(d->blocknr) != blocknr)
		return DMR_LOG_BAD_LOCATION;
	if (memcmp(d->uuid, uuid, sizeof(d->uuid)))
		return DMR_LOG_BAD_UUID;
	c->flags = le32_to_cpu(d->flags);
	c->seq = le64_to_cpu(d->seq);
	c->log_seq = le64_to_cpu(d->log_seq);
	c->blocknr = blocknr;
	for (i = 0; i < DMR_NR_HEADS; i++) {
		c->heads[i].segment = le32_to_cpu(d->heads[i].segment);
		c->heads[i].offset = le32_to_cpu(d->heads[i].offset);
		c->heads[i].next_segment = le32_to_cpu(d->heads[i].next_segment);
		c->heads[i].seq = 0;
	}
	c->crc_csum = le32_to_cpu(d->crc_csum);
	c->segtab_csum = le32_to_cpu(d->segtab_csum);
	c->mapped_blocks = le64_to_cpu(d->mapped_blocks);
	c->user_blocks = le64_to_cpu(d->user_blocks);
	c->log_blocks = le64_to_cpu(d->log_blocks);
	c->gc_moved = le64_to_cpu(d->gc_moved);
	c->temp_threshold = le64_to_cpu(d->temp_threshold);
	memset(&c->age, 0, sizeof(c->age));
	c->age.nr = le32_to_cpu(d->nr_age_jumps);
	if (c->age.nr > DMR_AGE_JUMPS)
		return DMR_LOG_BAD_COUNTS;
	for (i = 0; i < c->age.nr; i++) {
		c->age.at[i] = le64_to_cpu(d->age_jumps[i].at);
		c->age.len[i] = le64_to_cpu(d->age_jumps[i].len);
	}
	if (!dmr_age_clock_valid(&c->age))
		return DMR_LOG_BAD_COUNTS;
	c->logical_blocks = le64_to_cpu(d->logical_blocks);
	c->nr_segments = le64_to_cpu(d->nr_segments);
	return DMR_LOG_OK;
}

/**
 * dmr_ckpt_geometry() - the part of the device a checkpoint covers
 * @geo: the superblock's geometry
 * @c: a decoded checkpoint header
 * @covered: filled: @geo with the logical size and segment count @c was
 *	written for
 *
 * A checkpoint written before the device grew covers fewer segments and
 * logical blocks than the superblock says: those past it are free and
 * unmapped.  One written by a module before growing came records 0 for
 * both: the superblock's.  A device without a grow limit never grew, so
 * anything else than its own sizes there is damage; so is more than the
 * superblock's, or a mix of 0 and not.
 *
 * Return: true if @c may be loaded with @geo.
 */
bool dmr_ckpt_geometry(const struct dmr_geometry *geo, const struct dmr_ckpt *c,
		       struct dmr_geometry *covered)
{
	*covered = *geo;
	if (!c->logical_blocks && !c->nr_segments)
		return true;
	if (!c->logical_blocks || !c->nr_segments ||
	    c->logical_blocks > geo->logical_blocks || c->nr_segments > geo->nr_segments)
		return false;
	if (!geo->grow_limit && (c->logical_blocks != geo->logical_blocks ||
				 c->nr_segments != geo->nr_segments))
		return false;
	covered->logical_blocks = c->logical_blocks;
	covered->nr_segments = c->nr_segments;
	return true;
}

/*
 * A segment table entry as loaded: @flags as on the device.  A large
 * segment's @base and @csum only with DMR_SEG_LARGE and DMR_SEG_USED
 * (else the entry is no large segment's; remapctl check reports a
 * mapped block there that is not at its place).
 */
static void dmr_seg_load(struct dmr_seg *s, const struct dmr_disk_segment *d)
{
	u32 flags = le32_to_cpu(d->flags);
	bool large = (flags & DMR_SEG_LARGE) && (flags & DMR_SEG_USED) && d->base;
	u64 delta;

	s->seq = le64_to_cpu(d->seq);
	s->valid = le32_to_cpu(d->valid);
	s->base = large ? le64_to_cpu(d->base) : 0;
	s->csum = large ? le32_to_cpu(d->data_csum) : 0;
	if (!large)
		flags &= ~DMR_SEG_LARGE;
	/*
	 * A delta past the segment's own seq is no birth this code writes:
	 * the seq then, as before births, which writes back as 0 and loads
	 * the same again.
	 */
	delta = dmr_birth_decode(flags >> DMR_DISK_SEG_BIRTH_SHIFT);
	s->birth = delta <= s->seq ? s->seq - delta : s->seq;
	s->flags = (flags & DMR_SEG_DISK_FLAGS) |
		   ((flags & DMR_DISK_SEG_HOT) && (flags & DMR_SEG_USED) ?
		    DMR_SEG_HOT : 0);
	s->free_after = 0;
	s->flush_after = 0;
}

/* Read one table (map CRCs or segment table) of a slot and check it. */
static int dmr_slot_table(const struct dmr_slot_io *io, u64 start, u64 nr_blocks,
			  u64 nr_items, bool crc, u32 csum, struct dmr_map *m, u32 *map_crc)
{
	u32 per_block = crc ? DMR_BLOCK_SIZE / 4 : DMR_BLOCK_SIZE / DMR_SEGTAB_ENTRY_SIZE;
	u64 b, item = 0;
	u32 sum = ~0U;
	int r;

	for (b = 0; b < nr_blocks; ) {
		u32 n = min_t(u64, nr_blocks - b, io->bounce_blocks), k;

		r = io->read(io->ctx, start + b, n, io->bounce);
		if (r)
			return r;
		if (io->table_read)
			io->table_read(io->ctx, crc, b, n, io->bounce);
		sum = crc32c(sum, io->bounce, (size_t)n * DMR_BLOCK_SIZE);
		for (k = 0; k < n * per_block && item < nr_items; k++, item++) {
			if (crc) {
				map_crc[item] = le32_to_cpu(((__le32 *)io->bounce)[k]);
			} else {
				const struct dmr_disk_segment *d = io->bounce;

				dmr_seg_load(&m->segs[item], &d[k]);
			}
		}
		b += n;
	}
	return sum == csum ? 0 : -EILSEQ;
}

/**
 * dmr_slot_load() - read a checkpoint slot's tables into a map
 * @io: where to read, and scratch space
 * @geo: geometry (the superblock's)
 * @slot: slot number
 * @c: the slot's header, decoded (dmr_ckpt_decode())
 * @m: the map, sized for @geo; its entries and segment table are set
 *	(the segments' valid counts as the slot recorded them: the caller
 *	recounts them from the map, dmr_map_recount())
 * @map_crc: one entry per map block, set to the slot's CRC table
 * @err: on failure, which table and which block of it (map blocks only)
 *
 * The CRC table and the segment table are each checked against the
 * header's checksum of them, and every map block against its entry in
 * the CRC table; a map block that is all zeroes with the CRC of a zero
 * block is an unmapped one (not read at all unless @io->read_zero).  A
 * slot written before the device grew
 * covers only part of @m (dmr_ckpt_geometry()): the rest is unmapped,
 * its segments free, its map blocks' CRCs those of zero blocks.  The
 * loader and remapctl's check share it.
 *
 * Return: 0, -EILSEQ if a checksum does not match (a torn or corrupted
 * slot) or the header's sizes cannot be, or the reader's error.
 */
int dmr_slot_load(const struct dmr_slot_io *io, const struct dmr_geometry *geo,
		  unsigned int slot, const struct dmr_ckpt *c, struct dmr_map *m,
		  u32 *map_crc, struct dmr_slot_err *err)
{
	u64 base = geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks, p;
	struct dmr_geometry cg;
	struct dmr_ckpt_layout l;
	u32 zero_crc;
	int r;

	err->table = DMR_SLOT_SIZES;
	err->block = 0;
	if (!dmr_ckpt_geometry(geo, c, &cg))
		return -EILSEQ;
	dmr_ckpt_layout(&cg, &l);
	memset(io->bounce, 0, DMR_BLOCK_SIZE);
	zero_crc = crc32c(~0U, io->bounce, DMR_BLOCK_SIZE);
	/* what the slot does not cover: unmapped, free (see above) */
	for (p = l.map_blocks; p < m->nr_map_blocks; p++) {
		map_crc[p] = zero_crc;
		dmr_map_load_zero(m, p);
	}
	for (p = cg.nr_segments; p < m->nr_segs; p++) {
		static const struct dmr_disk_segment free_seg;

		dmr_seg_load(&m->segs[p], &free_seg);
	}
	err->table = DMR_SLOT_CRC_TABLE;
	r = dmr_slot_table(io, base + l.crc_offset, l.crc_blocks, l.map_blocks, true,
			   c->crc_csum, m, map_crc);
	if (r)
		return r;
	err->table = DMR_SLOT_MAP;
	for (p = 0; p < l.map_blocks; ) {
		u32 n = 0, i;

		/*
		 * A block the CRC table records as all-zero is unmapped: the
		 * table is checked against the header, written after every map
		 * block (rule 5), so it says what the block holds.  Unless
		 * @io->read_zero, such blocks are not even read; the others
		 * are read in runs.
		 */
		if (!io->read_zero && map_crc[p] == zero_crc) {
			dmr_map_load_zero(m, p++);
			continue;
		}
		while (p + n < l.map_blocks && n < io->bounce_blocks &&
		       (io->read_zero || map_crc[p + n] != zero_crc))
			n++;
		r = io->read(io->ctx, base + l.map_offset + p, n, io->bounce);
		if (r) {
			err->block = p;
			return r;
		}
		for (i = 0; i < n; i++) {
			const void *src = (u8 *)io->bounce + (size_t)i * DMR_BLOCK_SIZE;
			u32 *page;

			/* an unmapped block: no CRC to compute, no page */
			if (map_crc[p + i] == zero_crc &&
			    !memchr_inv(src, 0, DMR_BLOCK_SIZE)) {
				dmr_map_load_zero(m, p + i);
				continue;
			}
			if (crc32c(~0U, src, DMR_BLOCK_SIZE) != map_crc[p + i]) {
				err->block = p + i;
				return -EILSEQ;
			}
			page = dmr_map_load_page(m, p + i);
			if (!page) {
				err->block = p + i;
				return -ENOMEM;
			}
			dmr_map_block_decode(m, p + i, src, page);
			r = io->loaded ? io->loaded(io->ctx, p + i) : 0;
			if (r) {
				err->block = p + i;
				return r;
			}
		}
		p += n;
	}
	err->table = DMR_SLOT_SEGTAB;
	return dmr_slot_table(io, base + l.segtab_offset, l.segtab_blocks, cg.nr_segments,
			      false, c->segtab_csum, m, map_crc);
}

/**
 * dmr_slot_map_zero() - is a map block all unmapped?
 * @m: the map
 * @p: map block
 *
 * Return: true if its on-disk form is all zeroes (a checkpoint writes such
 * a run as write-zeroes; dmr_slot_load() needs no CRC for it).
 */
bool dmr_slot_map_zero(const struct dmr_map *m, u64 p)
{
	u64 n = dmr_map_page_len(m, p);

	switch (dmr_map_page_state(m, p)) {
	case DMR_PAGE_ABSENT:
		return true;
	case DMR_PAGE_EVICTED:	/* the newest slot holds it, not as zeroes */
		return false;
	default:
		return !memchr_inv(m->pages[p], 0, n * dmr_map_entry_size(m));
	}
}

/**
 * dmr_slot_map_encode() - a map block as a slot holds it
 * @m: the map
 * @p: map block, not out (a checkpoint copies an evicted page's block
 *	from the newest slot instead: dmr_write_map())
 * @block: one block, filled: little-endian entries (32-bit, 64-bit in a
 *	wide map), zero past the map's end
 *
 * Return: the block's CRC, its entry in the slot's CRC table.
 */
u32 dmr_slot_map_encode(const struct dmr_map *m, u64 p, void *block)
{
	u64 first = p << m->page_shift, e;
	u32 j;

	for (j = 0; j < dmr_map_per_page(m); j++) {
		e = first + j < m->nr_logical ? dmr_map_get(m, first + j) : 0;
		if (m->wide)
			((__le64 *)block)[j] = cpu_to_le64(e);
		else
			((__le32 *)block)[j] = cpu_to_le32((u32)e);
	}
	return crc32c(~0U, block, DMR_BLOCK_SIZE);
}

/**
 * dmr_map_block_decode() - a map block as a slot holds it, into a page
 * @m: the map (its entries' width)
 * @p: map block
 * @block: its DMR_BLOCK_SIZE bytes, as dmr_slot_map_encode() wrote them
 * @page: filled: the entries of @p's blocks in the map's width
 */
void dmr_map_block_decode(const struct dmr_map *m, u64 p, const void *block, u32 *page)
{
	u32 j, n = dmr_map_page_len(m, p);

	for (j = 0; j < n; j++) {
		if (m->wide)
			((u64 *)page)[j] = le64_to_cpu(((const __le64 *)block)[j]);
		else
			page[j] = le32_to_cpu(((const __le32 *)block)[j]);
	}
}

/**
 * dmr_slot_table_encode() - blocks of a slot's CRC table or segment table
 * @m: the map (its segment table, and its number of map blocks)
 * @map_crc: the map blocks' CRCs (DMR_SLOT_CRC_TABLE)
 * @t: DMR_SLOT_CRC_TABLE or DMR_SLOT_SEGTAB
 * @item: first entry to encode
 * @buf: @nr_blocks blocks, filled from @item on and zero padded
 * @nr_blocks: blocks to fill
 *
 * Only DMR_SEG_DISK_FLAGS of a segment's flags go to the device; the
 * in-memory states are rebuilt at load (dmr_map_load_states()).
 *
 * Return: the entry the next block starts with.
 */
u64 dmr_slot_table_encode(const struct dmr_map *m, const u32 *map_crc,
			  enum dmr_slot_table t, u64 item, void *buf, u32 nr_blocks)
{
	bool crc = t == DMR_SLOT_CRC_TABLE;
	u32 per_block = crc ? DMR_BLOCK_SIZE / 4 : DMR_BLOCK_SIZE / DMR_SEGTAB_ENTRY_SIZE;
	u64 nr_items = crc ? m->nr_map_blocks : m->nr_segs;
	u32 k;

	memset(buf, 0, (size_t)nr_blocks * DMR_BLOCK_SIZE);
	for (k = 0; k < nr_blocks * per_block && item < nr_items; k++, item++) {
		if (crc) {
			((__le32 *)buf)[k] = cpu_to_le32(map_crc[item]);
		} else {
			struct dmr_disk_segment *d = buf;
			const struct dmr_seg *s = &m->segs[item];

			d[k].seq = cpu_to_le64(s->seq);
			d[k].valid = cpu_to_le32(s->valid);
			d[k].flags = cpu_to_le32((s->flags & DMR_SEG_DISK_FLAGS) |
						  (s->flags & DMR_SEG_HOT ? DMR_DISK_SEG_HOT : 0) |
						  dmr_birth_encode(s->birth < s->seq ?
								   s->seq - s->birth : 0) <<
						  DMR_DISK_SEG_BIRTH_SHIFT);
			d[k].base = cpu_to_le64(s->flags & DMR_SEG_LARGE ? s->base : 0);
			d[k].data_csum = cpu_to_le32(s->flags & DMR_SEG_LARGE ? s->csum : 0);
		}
	}
	return item;
}

/**
 * dmr_table_run() - the next run of table blocks a checkpoint writes
 * @was: a hash of each block as the slot holds it, or NULL when that is
 *	not known (every block is written)
 * @now: a hash of each block as the checkpoint encodes it
 * @n: blocks
 * @from: the first block to look at
 * @len: set to the run's length, 0 when there is none
 *
 * A block whose hash has not changed since this instance last wrote it to
 * the slot is left as it is: the slot already holds those bytes.  The
 * hashes are 64-bit, so a changed block left unwritten by a collision is
 * a 2^-64 event per changed block; the table's checksum in the header
 * (computed from memory) would then fail the slot at load.
 *
 * Return: the run's first block, @n when there is none.
 */
u32 dmr_table_run(const u64 *was, const u64 *now, u32 n, u32 from, u32 *len)
{
	u32 i = from, j;

	while (was && i < n && was[i] == now[i])
		i++;
	for (j = i; j < n && (!was || was[j] != now[j]); j++)
		;
	*len = j - i;
	return i;
}

/* Write one table of a slot from @m; its checksum goes to @csum. */
static int dmr_slot_write_table(const struct dmr_slot_io *io, u64 start, u64 nr_blocks,
				enum dmr_slot_table t, const struct dmr_map *m,
				const u32 *map_crc, u32 *csum)
{
	u64 b, item = 0;
	int r;

	*csum = ~0U;
	for (b = 0; b < nr_blocks; ) {
		u32 n = min_t(u64, nr_blocks - b, io->bounce_blocks);

		item = dmr_slot_table_encode(m, map_crc, t, item, io->bounce, n);
		*csum = crc32c(*csum, io->bounce, (size_t)n * DMR_BLOCK_SIZE);
		r = io->write(io->ctx, start + b, n, io->bounce);
		if (r)
			return r;
		b += n;
	}
	return 0;
}

/**
 * dmr_slot_write() - write a checkpoint slot's tables from a map, whole
 * @io: where to write (@io->write), and scratch space
 * @geo: geometry
 * @slot: slot number
 * @m: the map and its segment table
 * @map_crc: one entry per map block, set to the CRC of each block written
 * @c: its @crc_csum, @segtab_csum and the sizes it covers are set
 *
 * Every map block, the CRC table and the segment table, with the encoders
 * the module's checkpoint writer uses, so dmr_slot_load() of @slot with
 * the header @c loads @m back.  The header is the caller's to write, after
 * a flush (rule 5 in dmr-write.c): until then the slot fails its checksums
 * and a load uses the other one.
 *
 * Return: 0 or the writer's error.
 */
int dmr_slot_write(const struct dmr_slot_io *io, const struct dmr_geometry *geo,
		   unsigned int slot, const struct dmr_map *m, u32 *map_crc,
		   struct dmr_ckpt *c)
{
	u64 base = geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks, p;
	struct dmr_ckpt_layout l;
	int r;

	dmr_ckpt_layout(geo, &l);
	c->logical_blocks = geo->logical_blocks;
	c->nr_segments = geo->nr_segments;
	for (p = 0; p < m->nr_map_blocks; ) {
		u32 n = min_t(u64, m->nr_map_blocks - p, io->bounce_blocks), i;

		for (i = 0; i < n; i++)
			map_crc[p + i] = dmr_slot_map_encode(m, p + i, (u8 *)io->bounce +
							     (size_t)i * DMR_BLOCK_SIZE);
		r = io->write(io->ctx, base + l.map_offset + p, n, io->bounce);
		if (r)
			return r;
		p += n;
	}
	r = dmr_slot_write_table(io, base + l.crc_offset, l.crc_blocks,
				 DMR_SLOT_CRC_TABLE, m, map_crc, &c->crc_csum);
	if (r)
		return r;
	return dmr_slot_write_table(io, base + l.segtab_offset, l.segtab_blocks,
				    DMR_SLOT_SEGTAB, m, map_crc, &c->segtab_csum);
}

/**
 * dmr_heads_load_states() - segment states after a load
 * @m: the map, loaded from a slot and replayed
 * @pos: DMR_NR_HEADS log positions, where replay left them
 *
 * The heads' segments and the ones they reserved are open; every other
 * segment's state is rebuilt from the segment table (dmr_map_load_states()).
 */
void dmr_heads_load_states(struct dmr_map *m, const struct dmr_log_pos *pos)
{
	unsigned int i;

	for (i = 0; i < DMR_NR_HEADS; i++) {
		dmr_seg_flags(&m->segs[pos[i].segment], DMR_SEG_OPEN, 0);
		if (pos[i].next_segment != DMR_NO_SEGMENT)
			dmr_seg_flags(&m->segs[pos[i].next_segment], DMR_SEG_OPEN, 0);
	}
	dmr_map_load_states(m);
}

/**
 * dmr_heads_open() - start the use of a head's segment that has none yet
 * @m: the map, after dmr_heads_load_states()
 * @pos: DMR_NR_HEADS log positions
 * @seq: first sequence number the heads will write
 *
 * A head whose segment holds no unit of its use starts that use there,
 * numbered from @seq, so the next checkpoint records it as used: a
 * segment not DMR_SEG_USED, and any segment the head is at the start of.
 * The second is a segment the head reserved (a unit named it next) that
 * the slot still records as its previous use, a large segment (base,
 * checksum) or a head's: replay applied the units that emptied it (the
 * reuse rule made them durable before it was reserved) but no unit of
 * the new use, which would have started it (dmr_unit_apply() at offset
 * 0).  Left as it was, the head's units would go into a segment still
 * marked large: GC would check them against its old checksum and refuse
 * it for good (a segment lost), and remapctl check reports every block
 * mapped there.
 */
void dmr_heads_open(struct dmr_map *m, const struct dmr_log_pos *pos, u64 seq)
{
	unsigned int i;

	for (i = 0; i < DMR_NR_HEADS; i++)
		if (!(m->segs[pos[i].segment].flags & DMR_SEG_USED) || !pos[i].offset)
			dmr_seg_open(m, pos[i].segment, seq);
}

/**
 * dmr_log_advance() - move the log position past a unit
 * @pos: position; @pos->next_segment must be set for a segment change
 * @unit_blocks: summary plus data blocks of the unit
 * @seg_blocks: blocks per segment
 *
 * A segment is left when fewer than two blocks (a summary and one data
 * block) remain in it.
 */
void dmr_log_advance(struct dmr_log_pos *pos, u32 unit_blocks, u32 seg_blocks)
{
	pos->offset += unit_blocks;
	if (pos->offset + 2 > seg_blocks) {
		pos->segment = pos->next_segment;
		pos->offset = 0;
		pos->next_segment = DMR_NO_SEGMENT;
	}
}

/**
 * dmr_heads_valid() - may the log heads be at these positions?
 * @geo: geometry
 * @pos: DMR_NR_HEADS positions, as a checkpoint holds them or as replay
 *	left them
 *
 * Every head is in a segment of the device, with room for a unit (a
 * summary and one data block) left in it, in a segment of its own, and
 * any segment reserved to go on in is another one of the device.
 *
 * Return: true if they may.
 */
bool dmr_heads_valid(const struct dmr_geometry *geo, const struct dmr_log_pos *pos)
{
	unsigned int i, j;

	for (i = 0; i < DMR_NR_HEADS; i++) {
		if (pos[i].segment >= geo->nr_segments ||
		    pos[i].offset + 2 > geo->segment_blocks ||
		    (pos[i].next_segment != DMR_NO_SEGMENT &&
		     (pos[i].next_segment >= geo->nr_segments ||
		      pos[i].next_segment == pos[i].segment)))
			return false;
		for (j = 0; j < i; j++)
			if (pos[j].segment == pos[i].segment)
				return false;
	}
	return true;
}

static int __dmr_unit_apply(struct dmr_map *m, const struct dmr_unit *u,
			    u32 segment, u32 offset, bool discards);

/**
 * dmr_extent_fits() - may a unit's large segment be applied to this map?
 * @m: the map, as replay has it before the unit
 * @u: a decoded unit
 * @i: which of its large segments
 * @segment: the segment holding @u's summary
 *
 * The segment exists, is not the unit's own, is empty and is no head's
 * (the writer takes a large segment from the free list, and the reuse
 * rule emptied it durably before: replay applied what emptied it), and
 * the logical blocks fit in the device.
 *
 * Return: true if it may.
 */
bool dmr_extent_fits(const struct dmr_map *m, const struct dmr_unit *u, u32 i,
		     u32 segment)
{
	const struct dmr_seg *s;

	if (u->ext_seg[i] >= m->nr_segs || u->ext_seg[i] == segment ||
	    u->ext_lba[i] > m->nr_logical ||
	    m->nr_logical - u->ext_lba[i] < m->seg_blocks)
		return false;
	s = &m->segs[u->ext_seg[i]];
	return !s->valid && !(s->flags & DMR_SEG_OPEN);
}

/*
 * Apply large segment @i of @u (dmr_extent_fits(), pages reserved): its
 * logical blocks map to its blocks in order, and it is a sealed segment
 * of its own from @u's sequence number on, born then.
 */
static void dmr_extent_apply(struct dmr_map *m, const struct dmr_unit *u, u32 i)
{
	u32 seg = u->ext_seg[i], b;
	struct dmr_seg *s = &m->segs[seg];
	u64 pba = dmr_seg_pba(m, seg, 0);

	if (dmr_seg_is_free(s))
		m->nr_free--;
	dmr_seg_flags(s, DMR_SEG_USED | DMR_SEG_LARGE, DMR_SEG_HOT);
	s->seq = u->seq;
	s->birth = u->seq;
	s->base = u->ext_lba[i] + 1;
	s->csum = u->ext_csum[i];
	for (b = 0; b < m->seg_blocks; b++)
		dmr_map_set(m, u->ext_lba[i] + b, pba + b);
}

/**
 * dmr_unit_apply() - apply a unit to the map
 * @m: the map
 * @u: a validated unit
 * @segment: segment holding it
 * @offset: block of its summary within @segment
 *
 * Discards apply before the large segments (DMR_UNIT_EXTENTS), and these
 * before the data blocks: the writer never puts a discard into a unit
 * after a data block or a large segment, nor a large segment after a data
 * block (it seals the unit first), so this is the order in which they
 * happened.  A relocation unit's blocks go through
 * dmr_move_commit(): each moves only if the map still points at its
 * source, so a write or discard that came first in the log wins.
 *
 * Return: 0, -EINVAL if a large segment does not fit (dmr_extent_fits():
 * corruption a checksum did not catch), or -ENOMEM if a page of the map
 * could not be allocated (dmr_map_reserve()); the unit is then not applied.
 */
int dmr_unit_apply(struct dmr_map *m, const struct dmr_unit *u, u32 segment,
		   u32 offset)
{
	return __dmr_unit_apply(m, u, segment, offset, true);
}

/* dmr_unit_apply(), its discards left out if !@discards (applied already) */
static int __dmr_unit_apply(struct dmr_map *m, const struct dmr_unit *u,
			    u32 segment, u32 offset, bool discards)
{
	u64 base = dmr_seg_pba(m, segment, offset + 1);
	struct dmr_seg *s = &m->segs[segment];
	u32 i;
	u64 b;
	int r;

	/* a relocated block is mapped (its page is there) or not moved */
	for (i = 0; i < u->nr_blocks && !(u->flags & DMR_UNIT_RELOC); i++) {
		r = dmr_map_reserve(m, u->lba[i], 1);
		if (r)
			return r;
	}
	for (i = 0; i < u->nr_extents; i++) {
		if (!dmr_extent_fits(m, u, i, segment))
			return -EINVAL;
		r = dmr_map_reserve(m, u->ext_lba[i], m->seg_blocks);
		if (r)
			return r;
	}

	/* a segment's first unit starts a use: it may have been reused */
	if (!(s->flags & DMR_SEG_USED) || !offset) {
		if (dmr_seg_is_free(s))
			m->nr_free--;
		/*
		 * a new use: its temperature is not in the log (cold), and it
		 * is a head's, whatever it was (a large segment) before
		 */
		dmr_seg_flags(s, DMR_SEG_USED, DMR_SEG_HOT | DMR_SEG_LARGE);
		s->seq = u->seq;
		s->base = 0;
		s->csum = 0;
	}
	for (i = 0; discards && i < u->nr_discards; i++)
		for (b = 0; b < u->discard[i][1]; b++)
			dmr_map_unmap(m, u->discard[i][0] + b);
	for (i = 0; i < u->nr_extents; i++)
		dmr_extent_apply(m, u, i);
	for (i = 0; i < u->nr_blocks; i++) {
		if (u->flags & DMR_UNIT_RELOC)
			dmr_move_commit(m, u->lba[i], u->src[i], base + i);
		else
			dmr_map_set(m, u->lba[i], base + i);
	}
	return 0;
}

/**
 * dmr_log_stop_benign() - is this the normal end of a head's chain?
 * @st: why the chain ended
 *
 * A block that never held a unit of this format, the end of the
 * segments, or a unit older than the checkpoint (left from an earlier use
 * of a reused segment: sequence numbers only grow).
 */
bool dmr_log_stop_benign(enum dmr_log_status st)
{
	return st == DMR_LOG_BAD_MAGIC || st == DMR_LOG_END || st == DMR_LOG_STALE;
}

/* Read and decode the summary at a head's position. */
static enum dmr_log_status dmr_replay_peek(struct dmr_replay *r,
					   const struct dmr_log_pos *pos,
					   struct dmr_unit *u)
{
	const struct dmr_geometry *geo = r->geo;
	u64 blk;

	if (pos->segment == DMR_NO_SEGMENT || pos->segment >= geo->nr_segments)
		return DMR_LOG_END;
	blk = geo->data_offset + (u64)pos->segment * geo->segment_blocks +
	      pos->offset;
	if (r->read(r->ctx, blk, 1, r->buf))
		return DMR_LOG_READ_ERROR;
	return dmr_unit_decode(r->buf, blk, r->uuid, r->geo->logical_blocks, u);
}

/*
 * Read a unit's data and check it against its checksum, then each large
 * segment it records against the record's (a segment whose write did not
 * reach the device before the unit's did: the unit is torn).
 */
static enum dmr_log_status dmr_replay_data(struct dmr_replay *r,
					   const struct dmr_unit *u)
{
	const struct dmr_geometry *geo = r->geo;
	u32 i;

	if (u->nr_blocks) {
		if (r->read(r->ctx, u->blocknr + 1, u->nr_blocks, r->buf))
			return DMR_LOG_READ_ERROR;
		if (dmr_data_csum(r->buf, u->nr_blocks) != u->data_csum)
			return DMR_LOG_BAD_DATA;
	}
	for (i = 0; i < u->nr_extents; i++) {
		if (r->read(r->ctx, geo->data_offset + (u64)u->ext_seg[i] * geo->segment_blocks,
			    geo->segment_blocks, r->buf))
			return DMR_LOG_READ_ERROR;
		if (dmr_data_csum(r->buf, geo->segment_blocks) != u->ext_csum[i])
			return DMR_LOG_BAD_DATA;
	}
	return DMR_LOG_OK;
}

/*
 * Does every large segment of @u fit (dmr_extent_fits()), none of them
 * where a head is or goes on (@u's own head included)?  Replay opens no head's segment before it
 * reads a unit there, so the map alone does not say.
 */
static bool dmr_replay_extents_fit(const struct dmr_map *m, const struct dmr_unit *u,
				   const struct dmr_log_pos *pos, unsigned int nr,
				   u32 segment)
{
	unsigned int i, h;

	for (i = 0; i < u->nr_extents; i++) {
		if (!dmr_extent_fits(m, u, i, segment) || u->ext_seg[i] == u->next_segment)
			return false;
		for (h = 0; h < nr; h++)
			if (u->ext_seg[i] == pos[h].segment ||
			    u->ext_seg[i] == pos[h].next_segment)
				return false;
	}
	return true;
}

/**
 * dmr_replay_unit() - apply a unit, asking for its pages (@r->need) first
 * @r: replay parameters
 * @m: the map
 * @pos: every head's position, @pos[@h] at the unit
 * @nr: heads
 * @seq: the last sequence number applied before the unit
 * @h: the head whose unit @r->unit[@h] is applied
 *
 * Each discard extent goes in pieces of @r->discard_step blocks: a
 * piece's pages are asked for, it is unmapped, then @r->step is called
 * with @pos and @seq, the log before this unit.  A checkpoint written
 * there holds a map with part of the unit's discards applied and no
 * more: a load from it replays the whole unit again, and a block
 * unmapped is unmapped again to the same effect (nothing else of the
 * unit is applied yet, and discards come first in a unit), so that load
 * ends in the same map as this one.  The data blocks' pages are asked
 * for after every step, so none of them leaves before its entry is set.
 *
 * Return: 0, or @r->need's, @r->step's or dmr_unit_apply()'s error.
 */
static int dmr_replay_unit(struct dmr_replay *r, struct dmr_map *m,
			   const struct dmr_log_pos *pos, unsigned int nr, u64 seq,
			   unsigned int h)
{
	const struct dmr_unit *u = &r->unit[h];
	u64 piece = r->discard_step ?: ~0ULL, lba, left, n, b;
	u32 i;
	int rc;

	if (!r->need)
		return dmr_unit_apply(m, u, pos[h].segment, pos[h].offset);
	for (i = 0; i < u->nr_discards; i++) {
		lba = u->discard[i][0];
		for (left = u->discard[i][1]; left; left -= n, lba += n) {
			n = min(left, piece);
			rc = r->need(r->ctx, lba, n);
			if (rc)
				return rc;
			for (b = 0; b < n; b++)
				dmr_map_unmap(m, lba + b);
			rc = r->step ? r->step(r->ctx, pos, nr, seq) : 0;
			if (rc)
				return rc;
		}
	}
	for (i = 0; i < u->nr_extents; i++) {
		rc = r->need(r->ctx, u->ext_lba[i], r->geo->segment_blocks);
		if (rc)
			return rc;
	}
	for (i = 0; i < u->nr_blocks; i++) {
		rc = r->need(r->ctx, u->lba[i], 1);
		if (rc)
			return rc;
	}
	return __dmr_unit_apply(m, u, pos[h].segment, pos[h].offset, false);
}

/**
 * dmr_replay_heads() - roll the log forward on every head
 * @r: parameters; @r->unit holds @nr units; @r->units, @r->stop and
 *	@r->head_stop are set on return
 * @m: the map as of the checkpoint the positions come from
 * @pos: the checkpoint's @nr head positions; each advanced past every
 *	unit applied from its head
 * @nr: heads (at most DMR_NR_HEADS)
 * @seq: the checkpoint's last sequence number; set to the last one applied
 *
 * Units of all heads share one sequence, so the heads' chains are merged:
 * the unit applied next is always the one numbered @seq + 1, wherever it
 * is, and replay stops when no head has it.  So replay applies units in
 * the order they were written and never skips one: a unit written after a
 * lost one is not applied, whatever head it is on.  A head whose chain
 * shows a unit numbered @seq or less has reached units of an earlier use
 * of a reused segment: its chain has ended (DMR_LOG_STALE).
 *
 * Return: 0, -EINVAL if a unit does not fit in its segment (corruption
 * that a checksum did not catch), -ENOMEM if a page of the map could
 * not be allocated (dmr_unit_apply()), or @r->need's error.
 */
int dmr_replay_heads(struct dmr_replay *r, struct dmr_map *m,
		     struct dmr_log_pos *pos, unsigned int nr, u64 *seq)
{
	const struct dmr_geometry *geo = r->geo;
	bool have[DMR_NR_HEADS] = {}, done[DMR_NR_HEADS] = {};
	unsigned int h;
	int rc;

	r->units = 0;
	for (h = 0; h < DMR_NR_HEADS; h++)
		r->head_stop[h] = DMR_LOG_END;
	for (;;) {
		struct dmr_unit *u;
		enum dmr_log_status st;
		int next = -1;

		for (h = 0; h < nr; h++) {
			if (!done[h] && !have[h]) {
				st = dmr_replay_peek(r, &pos[h], &r->unit[h]);
				if (st == DMR_LOG_OK && r->unit[h].seq <= *seq)
					st = DMR_LOG_STALE;
				if (st != DMR_LOG_OK) {
					r->head_stop[h] = st;
					done[h] = true;
					continue;
				}
				have[h] = true;
			}
			if (have[h] && r->unit[h].seq == *seq + 1)
				next = h;
		}
		if (next < 0)
			break;
		h = next;
		u = &r->unit[h];
		have[h] = false;
		if (pos[h].offset + 1 + u->nr_blocks > geo->segment_blocks ||
		    u->next_segment == pos[h].segment ||
		    !dmr_replay_extents_fit(m, u, pos, nr, pos[h].segment)) {
			r->head_stop[h] = DMR_LOG_BAD_COUNTS;
			r->stop = DMR_LOG_BAD_COUNTS;
			return -EINVAL;
		}
		st = dmr_replay_data(r, u);
		if (st != DMR_LOG_OK) {
			r->head_stop[h] = st;
			done[h] = true;
			break;
		}
		rc = dmr_replay_unit(r, m, pos, nr, *seq, h);
		if (rc)
			return rc;
		r->units++;
		*seq = u->seq;
		if (u->next_segment != DMR_NO_SEGMENT)
			pos[h].next_segment = u->next_segment;
		dmr_log_advance(&pos[h], 1 + u->nr_blocks, geo->segment_blocks);
		rc = r->step ? r->step(r->ctx, pos, nr, *seq) : 0;
		if (rc)
			return rc;
	}
	/* a head holding a later unit: the one before it is missing */
	for (h = 0; h < nr; h++)
		if (have[h])
			r->head_stop[h] = DMR_LOG_BAD_SEQ;
	r->stop = r->head_stop[0];
	for (h = 0; h < nr; h++) {
		if (!dmr_log_stop_benign(r->head_stop[h])) {
			r->stop = r->head_stop[h];
			break;
		}
	}
	return 0;
}

/**
 * dmr_replay_log() - roll a single chain forward
 * @r: see dmr_replay_heads()
 * @m: the map
 * @pos: the chain's position; @pos->seq is the last sequence number applied
 *
 * Return: see dmr_replay_heads().
 */
int dmr_replay_log(struct dmr_replay *r, struct dmr_map *m,
		   struct dmr_log_pos *pos)
{
	return dmr_replay_heads(r, m, pos, 1, &pos->seq);
}

/**
 * dmr_unit_data_check() - do a decoded unit's data blocks match its checksum?
 * @u: the unit, decoded (dmr_unit_decode() set @u->data_csum)
 * @data: its @u->nr_blocks data blocks, as read
 * @crc: @u->nr_blocks entries, set here to each block's dmr_block_digest()
 *
 * GC asks this before it moves a unit's blocks (dmr_seg_verify()): a move
 * writes them under a fresh checksum, so damage it did not catch here
 * could never be caught again.  It checks block by block, and the CRCs
 * it leaves in @crc let a move fold them into the checksum of the unit it
 * writes them in (dmr_data_csum_fold()) without reading them again.
 *
 * Return: true if the data match @u->data_csum.
 */
bool dmr_unit_data_check(const struct dmr_unit *u, const void *data, u32 *crc)
{
	return dmr_blocks_check(data, u->nr_blocks, u->data_csum, crc);
}

/**
 * dmr_blocks_check() - do blocks match a data checksum?
 * @data: @nr blocks, contiguous
 * @nr: blocks
 * @csum: dmr_data_csum() they should have
 * @crc: @nr entries, set to each block's dmr_block_digest()
 *
 * A unit's data (dmr_unit_data_check()), or a large segment's blocks
 * against the checksum its segment table entry keeps (GC's check).
 *
 * Return: true if they match.
 */
bool dmr_blocks_check(const void *data, u32 nr, u32 csum, u32 *crc)
{
	u32 i, c = DMR_DATA_CSUM_SEED;

	for (i = 0; i < nr; i++) {
		crc[i] = dmr_block_digest((const u8 *)data + (size_t)i * DMR_BLOCK_SIZE);
		c = dmr_data_csum_fold(c, crc[i]);
	}
	return dmr_data_csum_end(c) == csum;
}

/**
 * dmr_seg_verify() - which units of a victim read whole may GC move?
 * @buf: the segment as read, @seg_blocks blocks
 * @block0: device block number of the segment's first block
 * @data0: the map's value for the segment's first block, minus one: a
 *	block at offset o is live when its map entry is @data0 + o + 1
 * @seg_blocks: blocks per segment
 * @first_seq: the segment's first unit's sequence number (a unit below
 *	it is of an earlier use of the segment and ends the walk)
 * @uuid: the device's
 * @m: the map, read without its lock: a hint only (see below)
 * @u: scratch for the decoded summaries
 * @ok: @seg_blocks flags, set here: @ok[o] is 1 iff a unit's summary is
 *	at offset o, some block of it was live when looked at (or its map
 *	page was out of memory: it may be), and its data match their
 *	checksum; 0 everywhere else
 * @crc: @seg_blocks entries: for every unit checked (those @ok marks
 *	among them), each of its data blocks' dmr_block_digest()
 *	(dmr_unit_data_check()); the rest untouched
 *
 * The walk is dmr_gc_collect()'s, which then moves a unit's blocks only
 * where @ok says so: it runs on an unbound workqueue when the victim's
 * read ends, so the data checksums (most of GC's CPU time) are computed
 * beside the worker rather than in it.  Units with no live block are not
 * checked, and that is safe with @m read unlocked: a block of a sealed
 * segment that is not live never becomes live again (the map points only
 * to the log's open segments when it changes), so a unit skipped here is
 * also dead when GC collects; a unit seen live that died meanwhile was
 * checked for nothing.  A unit @ok does not mark is not moved: the safe
 * side, never laundering unverified data.
 *
 * Return: the number of units checked.
 */
u32 dmr_seg_verify(const u8 *buf, u64 block0, u64 data0, u32 seg_blocks,
		   u64 first_seq, const u8 *uuid, const struct dmr_map *m,
		   struct dmr_unit *u, u8 *ok, u32 *crc)
{
	u32 off = 0, i, live, n = 0;

	memset(ok, 0, seg_blocks);
	while (off + 2 <= seg_blocks) {
		const u8 *data = buf + (size_t)(off + 1) * DMR_BLOCK_SIZE;

		if (dmr_unit_decode(buf + (size_t)off * DMR_BLOCK_SIZE, block0 + off,
				    uuid, m->nr_logical, u) != DMR_LOG_OK ||
		    u->seq < first_seq || off + 1 + u->nr_blocks > seg_blocks)
			break;
		/*
		 * A page out of memory (map_cache) may hold a live entry: its
		 * unit is checked.  And a page that leaves meanwhile is freed
		 * after a grace period (dmr-page.c): looked at inside one.
		 */
		rcu_read_lock();
		for (i = 0, live = 0; i < u->nr_blocks && !live; i++) {
			u64 e = dmr_map_get(m, u->lba[i]);

			live = e == DMR_MAP_MISS || e == data0 + off + 1 + i + 1;
		}
		rcu_read_unlock();
		if (live) {
			ok[off] = dmr_unit_data_check(u, data, crc + off + 1);
			n++;
		}
		off += 1 + u->nr_blocks;
	}
	return n;
}
