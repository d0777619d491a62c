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
	};

	return st < DMR_LOG_NR_STATUS ? msg[st] : "unknown log status";
}

void dmr_unit_reset(struct dmr_unit *u)
{
	u->nr_blocks = 0;
	u->nr_discards = 0;
	u->data_csum = 0;
}

/* Return: true if @words more summary words (1 per block, 2 per extent) fit. */
bool dmr_unit_room(const struct dmr_unit *u, u32 words)
{
	return u->nr_blocks + 2 * u->nr_discards + words <= DMR_SUMMARY_WORDS;
}

u32 dmr_data_csum(const void *data, u32 nr_blocks)
{
	return crc32c(~0U, data, (size_t)nr_blocks * DMR_BLOCK_SIZE) ^
	       DMR_DATA_CSUM_SALT;
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
 * the unit is written, possibly together with the units after it.
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
	for (i = 0; i < u->nr_blocks; i++)
		d->words[w++] = cpu_to_le32(u->lba[i]);
	for (i = 0; i < u->nr_discards; i++) {
		d->words[w++] = cpu_to_le32(u->discard[i][0]);
		d->words[w++] = cpu_to_le32(u->discard[i][1]);
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
	u32 csum = dmr_data_csum(data, le32_to_cpu(d->nr_blocks));

	d->data_csum = cpu_to_le32(csum);
	dmr_put_csum(d, DMR_SUMMARY_CSUM_SALT);
	return csum;
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
	if (u->nr_blocks > DMR_SUMMARY_WORDS ||
	    u->nr_discards > DMR_SUMMARY_WORDS / 2 ||
	    !dmr_unit_room(u, 0))
		return DMR_LOG_BAD_COUNTS;
	for (i = 0; i < u->nr_blocks; i++) {
		u->lba[i] = le32_to_cpu(d->words[w++]);
		if (u->lba[i] >= nr_logical)
			return DMR_LOG_BAD_COUNTS;
	}
	for (i = 0; i < u->nr_discards; i++) {
		u64 first = le32_to_cpu(d->words[w++]);
		u64 count = le32_to_cpu(d->words[w++]);

		if (!count || first + count > nr_logical)
			return DMR_LOG_BAD_COUNTS;
		u->discard[i][0] = first;
		u->discard[i][1] = count;
	}
	return DMR_LOG_OK;
}

/**
 * dmr_ckpt_encode() - write a checkpoint slot header
 * @c: the header
 * @uuid: the superblock's uuid
 * @block: fully overwritten
 */
void dmr_ckpt_encode(const struct dmr_ckpt *c, const u8 *uuid, void *block)
{
	struct dmr_disk_ckpt *d = block;

	memset(d, 0, sizeof(*d));
	memcpy(d->magic, DMR_CKPT_MAGIC, DMR_MAGIC_LEN);
	d->flags = cpu_to_le32(c->flags);
	d->seq = cpu_to_le64(c->seq);
	d->log_seq = cpu_to_le64(c->log_seq);
	d->blocknr = cpu_to_le64(c->blocknr);
	memcpy(d->uuid, uuid, sizeof(d->uuid));
	d->log_segment = cpu_to_le32(c->log_segment);
	d->log_offset = cpu_to_le32(c->log_offset);
	d->next_segment = cpu_to_le32(c->next_segment);
	d->crc_csum = cpu_to_le32(c->crc_csum);
	d->segtab_csum = cpu_to_le32(c->segtab_csum);
	d->mapped_blocks = cpu_to_le64(c->mapped_blocks);
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
	c->log_segment = le32_to_cpu(d->log_segment);
	c->log_offset = le32_to_cpu(d->log_offset);
	c->next_segment = le32_to_cpu(d->next_segment);
	c->crc_csum = le32_to_cpu(d->crc_csum);
	c->segtab_csum = le32_to_cpu(d->segtab_csum);
	c->mapped_blocks = le64_to_cpu(d->mapped_blocks);
	return DMR_LOG_OK;
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
 * dmr_unit_apply() - apply a unit to the map
 * @m: the map
 * @u: a validated unit
 * @segment: segment holding it
 * @offset: block of its summary within @segment
 *
 * Discards apply before the data blocks: the writer never puts a discard
 * into a unit after a data block (it seals the unit first), so this is
 * the order in which they happened.
 */
void dmr_unit_apply(struct dmr_map *m, const struct dmr_unit *u, u32 segment,
		    u32 offset)
{
	u32 base = segment * m->seg_blocks + offset + 1;
	struct dmr_seg *s = &m->segs[segment];
	u32 i;
	u64 b;

	for (i = 0; i < u->nr_discards; i++)
		for (b = 0; b < u->discard[i][1]; b++)
			dmr_map_unmap(m, u->discard[i][0] + b);
	for (i = 0; i < u->nr_blocks; i++)
		dmr_map_set(m, u->lba[i], base + i);
	if (!(s->flags & DMR_SEG_USED)) {
		s->flags |= DMR_SEG_USED;
		s->seq = u->seq;
	}
}

/**
 * dmr_replay_log() - roll the log forward from a position
 * @r: parameters; @r->units and @r->stop are set on return
 * @m: the map as of the checkpoint the position comes from
 * @pos: the checkpoint's log position; advanced past every unit applied
 *
 * Applies, in order, every unit whose sequence number follows the last
 * one applied, and stops at the first block that is not such a unit, or
 * whose data does not match its checksum.  Stopping is the normal end of
 * replay; @r->stop says why.
 *
 * Return: 0, or -EINVAL if a unit does not fit in its segment (corruption
 * that a checksum did not catch).
 */
int dmr_replay_log(struct dmr_replay *r, struct dmr_map *m,
		   struct dmr_log_pos *pos)
{
	const struct dmr_geometry *geo = r->geo;
	struct dmr_unit *u = r->unit;
	u8 *buf = r->buf;

	r->units = 0;
	for (;;) {
		u64 blk;

		if (pos->segment == DMR_NO_SEGMENT ||
		    pos->segment >= geo->nr_segments) {
			r->stop = DMR_LOG_END;
			return 0;
		}
		blk = geo->data_offset + (u64)pos->segment * geo->segment_blocks +
		      pos->offset;
		if (r->read(r->ctx, blk, 1, buf)) {
			r->stop = DMR_LOG_READ_ERROR;
			return 0;
		}
		r->stop = dmr_unit_decode(buf, blk, r->uuid, geo->logical_blocks, u);
		if (r->stop != DMR_LOG_OK)
			return 0;
		if (u->seq != pos->seq + 1) {
			r->stop = DMR_LOG_BAD_SEQ;
			return 0;
		}
		if (pos->offset + 1 + u->nr_blocks > geo->segment_blocks ||
		    u->next_segment == pos->segment) {
			r->stop = DMR_LOG_BAD_COUNTS;
			return -EINVAL;
		}
		if (u->nr_blocks) {
			if (r->read(r->ctx, blk + 1, u->nr_blocks, buf)) {
				r->stop = DMR_LOG_READ_ERROR;
				return 0;
			}
			if (dmr_data_csum(buf, u->nr_blocks) != u->data_csum) {
				r->stop = DMR_LOG_BAD_DATA;
				return 0;
			}
		}
		dmr_unit_apply(m, u, pos->segment, pos->offset);
		r->units++;
		pos->seq = u->seq;
		pos->next_segment = u->next_segment;
		dmr_log_advance(pos, 1 + u->nr_blocks, geo->segment_blocks);
	}
}
