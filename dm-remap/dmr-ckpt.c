// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap checkpoints (rule 5 in dmr-write.c) and loading: the newest
 * valid checkpoint, then roll-forward replay of every log head.
 *
 * Locking: see dmr.h.  Checkpoints run in the worker, or with the worker
 * stopped (postsuspend, destructor); loading runs in the constructor or
 * preresume, before any I/O is admitted.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dmr.h"

/*
 * Issue 41: a checkpoint writes only the table blocks that changed since
 * it last wrote that slot (dmr_write_table()), and a clean checkpoint goes
 * to both slots so that the next load need not rewrite the other slot's
 * map (dmr_checkpoint()).  N writes both tables whole at every checkpoint
 * and one clean checkpoint, as before, for the benchmark's side by side
 * (guest-mapcache.py).  Read at each checkpoint.
 */
static bool dmr_ckpt_incremental = true;
module_param_named(ckpt_incremental, dmr_ckpt_incremental, bool, 0644);
MODULE_PARM_DESC(ckpt_incremental,
		 "Checkpoints write only changed table blocks; a clean one goes to both slots");

/**
 * dmr_mark_dirty() - rule 7: the clean checkpoint on the device stops being clean
 * @rc: target, in the worker, before it accepts a write or discard
 *
 * Rewrites the header of the last checkpoint loaded or written, which was
 * clean, without the clean flag, with REQ_FUA, and waits.  Same slot,
 * same sequence number: only the flag and the header checksum change.  A
 * torn rewrite fails its checksum and the load uses the other slot, whose
 * log chain reaches this one's position (nothing was written after it).
 *
 * That needs another slot: on a device fresh from format the other slot
 * was never written (@ckpt_other_blank), and a torn rewrite of the only
 * header would leave none.  Then a whole (not clean) checkpoint goes
 * into the other slot instead, and the clean one is left as it is: the
 * newest header is then not clean, which is all rule 7 asks.
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
int dmr_mark_dirty(struct dmr_target *rc)
{
	struct dmr_ckpt c = rc->last_ckpt;
	int r;

	if (rc->ckpt_other_blank)
		return dmr_checkpoint(rc, false);
	c.flags &= ~DMR_CKPT_CLEAN;
	dmr_ckpt_encode(&c, rc->sb.uuid, rc->bounce);
	r = dmr_rw(rc, REQ_OP_WRITE | REQ_SYNC | REQ_FUA, c.blocknr, 1, rc->bounce);
	if (r) {
		dmr_fail(rc, r, "checkpoint write");
		return r;
	}
	rc->last_ckpt = c;
	rc->ckpt_clean_on_disk = false;
	return 0;
}

static bool dmr_map_block_dirty(const struct dmr_target *rc, u64 p,
				unsigned int slot)
{
	return rc->map.dirty[p] & DMR_DIRTY_SLOT(slot);
}

static void dmr_map_block_clean(struct dmr_target *rc, u64 p, u64 n,
				unsigned int slot)
{
	u64 j;

	spin_lock(&rc->map_lock);
	for (j = 0; j < n; j++)
		rc->map.dirty[p + j] &= ~DMR_DIRTY_SLOT(slot);
	spin_unlock(&rc->map_lock);
}

/*
 * Read map blocks [@p, @p + @n), whose pages are out of memory, from the
 * newest slot (the one slot @slot is not) into the bounce buffer, each
 * checked against @map_crc.
 */
static int dmr_read_copy(struct dmr_target *rc, u64 p, u32 n, unsigned int slot)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	struct dmr_ckpt_layout l;
	u32 i;
	int r;

	dmr_ckpt_layout(geo, &l);
	r = dmr_rw(rc, REQ_OP_READ, geo->ckpt_offset + (u64)(slot ^ 1) * geo->ckpt_slot_blocks +
		   l.map_offset + p, n, rc->bounce);
	if (r)
		return r;
	for (i = 0; i < n; i++) {
		if (crc32c(~0U, (u8 *)rc->bounce + (size_t)i * DMR_BLOCK_SIZE,
			   DMR_BLOCK_SIZE) != rc->map_crc[p + i]) {
			DMERR_LIMIT("%s: map page %llu fails its checksum in checkpoint slot %u",
				    rc->dev->name, (unsigned long long)(p + i), slot ^ 1);
			return -EILSEQ;
		}
	}
	return 0;
}

/* The run of map blocks from @p that one copy takes: out, dirty for @slot. */
static u32 dmr_copy_run(const struct dmr_target *rc, u64 p, unsigned int slot)
{
	u64 nr = rc->map.nr_map_blocks;
	u32 i = 0;

	while (p + i < nr && i < DMR_BOUNCE_BLOCKS &&
	       dmr_map_block_dirty(rc, p + i, slot) &&
	       dmr_map_page_state(&rc->map, p + i) == DMR_PAGE_EVICTED)
		i++;
	return i;
}

/*
 * Before slot @slot is written: read back and check every map block the
 * checkpoint will copy (dmr_copy_map()).  A page leaves memory once the
 * newest slot holds it (dmr_map_evict()), so that copy is the only one;
 * if it is damaged, the checkpoint fails here, before the first block of
 * slot @slot is written.  The older slot stays whole then, and a load
 * falls back to it when the newest fails its checksums, replaying the
 * log from its position (DMR_REUSE_CHECKPOINTS keeps that log).  Checked
 * only as each block is copied, a failure after the first write would
 * leave neither slot loadable.  It costs a second read of what is copied.
 */
static int dmr_check_copies(struct dmr_target *rc, unsigned int slot)
{
	u64 p = 0, nr = rc->map.nr_map_blocks;
	int r;

	if (!rc->map.nr_out)
		return 0;
	while (p < nr) {
		u32 n = dmr_copy_run(rc, p, slot);

		if (!n) {
			p++;
			continue;
		}
		r = dmr_read_copy(rc, p, n, slot);
		if (r)
			return r;
		p += n;
	}
	return 0;
}

/*
 * Copy map blocks [@p, @p + @n), whose pages are out of memory, from the
 * newest slot into slot @slot (at @start): a page leaves memory once the
 * newest slot holds it, dirty for the other one (dmr_map_evict()).  Each
 * is checked against @map_crc again (dmr_check_copies() did before the
 * slot's first write), so a block the device returns damaged this time is
 * not spread to the second slot: the checkpoint fails instead (the target
 * goes to failed mode, and the newest slot stays the one a load picks).
 */
static int dmr_copy_map(struct dmr_target *rc, u64 start, u64 p, u32 n, unsigned int slot)
{
	int r = dmr_read_copy(rc, p, n, slot);

	if (r)
		return r;
	return dmr_rw(rc, REQ_OP_WRITE, start + p, n, rc->bounce);
}

/*
 * Write the map blocks of slot @slot (at @start) that changed since it was
 * last written.  Runs of unmapped (all-zero) blocks go down as
 * write-zeroes, which costs a thin or flash device nothing and falls back
 * to writing zeroes elsewhere, so a large, mostly empty map is cheap to
 * checkpoint; those of pages out of memory are copied from the newest
 * slot (dmr_copy_map()).  Only the worker changes the map, so it is
 * stable here.
 */
static int dmr_write_map(struct dmr_target *rc, u64 start, unsigned int slot)
{
	u64 p = 0, nr = rc->map.nr_map_blocks;
	int r;

	while (p < nr) {
		u64 i = 0;

		if (!dmr_map_block_dirty(rc, p, slot)) {
			p++;
			continue;
		}
		if (dmr_slot_map_zero(&rc->map, p)) {
			while (p + i < nr && dmr_map_block_dirty(rc, p + i, slot) &&
			       dmr_slot_map_zero(&rc->map, p + i))
				rc->map_crc[p + i++] = rc->zero_crc;
			r = blkdev_issue_zeroout(rc->dev->bdev,
						 (start + p) * DMR_SECTORS_PER_BLOCK,
						 i * DMR_SECTORS_PER_BLOCK, GFP_NOIO, 0);
		} else if (dmr_map_page_state(&rc->map, p) == DMR_PAGE_EVICTED) {
			i = dmr_copy_run(rc, p, slot);
			r = dmr_copy_map(rc, start, p, i, slot);
		} else {
			while (p + i < nr && i < DMR_BOUNCE_BLOCKS &&
			       dmr_map_block_dirty(rc, p + i, slot) &&
			       dmr_map_page_state(&rc->map, p + i) == DMR_PAGE_RESIDENT &&
			       !dmr_slot_map_zero(&rc->map, p + i)) {
				rc->map_crc[p + i] =
					dmr_slot_map_encode(&rc->map, p + i, (u8 *)rc->bounce +
							    (size_t)i * DMR_BLOCK_SIZE);
				i++;
			}
			r = dmr_rw(rc, REQ_OP_WRITE, start + p, i, rc->bounce);
		}
		if (r)
			return r;
		dmr_map_block_clean(rc, p, i, slot);
		p += i;
	}
	return 0;
}

/* The key of the table blocks' hashes: any fixed one (not a secret). */
static const siphash_key_t dmr_tab_key = {{ 0x646d2d72656d6170ULL, 0x7461626c65686173ULL }};

/*
 * Where slot @slot's table hashes start (@rc->tab_hash: per slot, the CRC
 * table's blocks then the segment table's), or NULL if the array is not
 * the size of this geometry's tables.
 */
static u64 *dmr_tab_hash(struct dmr_target *rc, const struct dmr_ckpt_layout *l,
			 unsigned int slot)
{
	u64 per_slot = l->crc_blocks + l->segtab_blocks;

	if (2 * per_slot != dmr_array_elems(&rc->sb.geo, 0, DMR_ARRAY_TAB_HASH))
		return NULL;
	return rc->tab_hash + slot * per_slot;
}

static u64 dmr_tab_block_hash(const void *block)
{
	return siphash(block, DMR_BLOCK_SIZE, &dmr_tab_key);
}

/*
 * dmr_slot_io's @table_read while slot @rc->ckpt_slot ^ 1 loads: the
 * hashes of its table blocks as it holds them (dmr_load_slot() then
 * says whether they are all known).
 */
static void dmr_load_table_read(void *ctx, bool crc, u64 block, u32 nr, const void *buf)
{
	struct dmr_target *rc = ctx;
	struct dmr_ckpt_layout l;
	u64 *hash;
	u32 j;

	dmr_ckpt_layout(&rc->sb.geo, &l);
	hash = dmr_tab_hash(rc, &l, rc->ckpt_slot ^ 1);
	if (!hash || block + nr > (crc ? l.crc_blocks : l.segtab_blocks))
		return;
	if (!crc)
		hash += l.crc_blocks;
	for (j = 0; j < nr; j++)
		hash[block + j] = dmr_tab_block_hash((const u8 *)buf + (size_t)j * DMR_BLOCK_SIZE);
}

/*
 * Write table @t of a slot (dmr_slot_table_encode(), shared with
 * remapctl), at @start, of which @hash holds a hash per block as the slot
 * holds it (@known) and is updated to what it holds after the writes.
 * Only the runs of blocks whose hash changed are written
 * (dmr_table_run()): a forced checkpoint of a small map cache on a large
 * device changes a few blocks of tables of hundreds of MiB.  The table's
 * checksum (@csum) is over every block, written or not: a load checks the
 * slot as a whole.
 *
 * Crash ordering: a block left unwritten went down in an earlier
 * checkpoint to this slot, whose header was written after it with
 * REQ_PREFLUSH, so it is durable; a crash while the changed blocks are
 * written leaves the slot failing its checksums until its header is
 * written, as a crash during a whole rewrite did (rule 5 in dmr-write.c).
 */
static int dmr_write_table(struct dmr_target *rc, u64 start, u64 nr_blocks,
			   enum dmr_slot_table t, u64 *hash, bool known, u32 *csum)
{
	u64 now[DMR_BOUNCE_BLOCKS];
	u64 b, item = 0;
	u32 i, j, len;
	int r;

	*csum = ~0U;
	for (b = 0; b < nr_blocks; ) {
		u32 n = min_t(u64, nr_blocks - b, DMR_BOUNCE_BLOCKS);

		item = dmr_slot_table_encode(&rc->map, rc->map_crc, t, item, rc->bounce, n);
		*csum = crc32c(*csum, rc->bounce, (size_t)n * DMR_BLOCK_SIZE);
		for (j = 0; j < n; j++)
			now[j] = dmr_tab_block_hash((u8 *)rc->bounce + (size_t)j * DMR_BLOCK_SIZE);
		for (i = 0; (i = dmr_table_run(known ? hash + b : NULL, now, n, i, &len)) < n;
		     i += len) {
			r = dmr_rw(rc, REQ_OP_WRITE, start + b + i, len,
				   (u8 *)rc->bounce + (size_t)i * DMR_BLOCK_SIZE);
			if (r)
				return r;
			atomic64_add(len, &rc->stats.ckpt_table_blocks);
		}
		if (hash)
			memcpy(hash + b, now, (size_t)n * sizeof(*now));
		b += n;
	}
	return 0;
}

/*
 * Write one checkpoint into the next slot (rule 5 above), with header
 * flags @flags; see dmr_checkpoint().
 */
static int dmr_checkpoint_one(struct dmr_target *rc, u32 flags)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	unsigned int slot = rc->ckpt_slot;
	u64 base = geo->ckpt_offset + (u64)slot * geo->ckpt_slot_blocks;
	struct dmr_ckpt_layout l;
	struct dmr_ckpt c = {};
	unsigned int i;
	bool known;
	u64 *hash;
	int r;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return rc->first_error;
	r = dmr_flush_all(rc, true);
	if (r)
		return r;

	dmr_ckpt_layout(geo, &l);
	r = dmr_check_copies(rc, slot);
	if (r)
		goto fail;
	r = dmr_write_map(rc, base + l.map_offset, slot);
	if (r)
		goto fail;
	/*
	 * The slot's tables are known again only once both are written
	 * whole: a failed write leaves blocks of unknown content.
	 */
	hash = dmr_tab_hash(rc, &l, slot);
	known = hash && rc->tab_known[slot] && READ_ONCE(dmr_ckpt_incremental);
	rc->tab_known[slot] = false;
	r = dmr_write_table(rc, base + l.crc_offset, l.crc_blocks, DMR_SLOT_CRC_TABLE,
			    hash, known, &c.crc_csum);
	if (r)
		goto fail;
	r = dmr_write_table(rc, base + l.segtab_offset, l.segtab_blocks, DMR_SLOT_SEGTAB,
			    hash ? hash + l.crc_blocks : NULL, known, &c.segtab_csum);
	if (r)
		goto fail;
	rc->tab_known[slot] = !!hash;

	c.flags = flags;
	c.seq = rc->ckpt_seq + 1;
	c.log_seq = rc->seq;
	c.blocknr = base;
	for (i = 0; i < DMR_NR_HEADS; i++)
		c.heads[i] = rc->heads[i].pos;
	c.mapped_blocks = rc->map.mapped;
	c.user_blocks = rc->total_user;
	c.log_blocks = rc->total_log;
	c.gc_moved = rc->total_moved;
	c.temp_threshold = rc->temp.threshold;
	c.age = rc->map.age;
	c.logical_blocks = geo->logical_blocks;
	c.nr_segments = geo->nr_segments;
	dmr_ckpt_encode(&c, rc->sb.uuid, rc->bounce);
	r = dmr_rw(rc, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, base, 1, rc->bounce);
	if (r)
		goto fail;
	WRITE_ONCE(rc->ckpt_seq, c.seq);
	rc->ckpt_log_seq = c.log_seq;
	rc->ckpt_slot ^= 1;
	rc->ckpt_other_blank = false;
	rc->last_ckpt = c;
	rc->ckpt_clean_on_disk = flags & DMR_CKPT_CLEAN;
	/* the reuse rule counts completed checkpoints */
	spin_lock(&rc->map_lock);
	dmr_map_ckpt_done(&rc->map, c.seq);
	spin_unlock(&rc->map_lock);
	/*
	 * What it made reusable is freed by GC, which the worker schedules
	 * (@ckpt_seq moved on: DMR_WORKER_GC_FREE).
	 */
	return 0;
fail:
	dmr_fail(rc, r, "checkpoint write");
	return r;
}

/**
 * dmr_checkpoint() - write a checkpoint
 * @rc: target; the worker must not be running concurrently
 * @clean: mark it as the last thing this instance writes
 *
 * A clean checkpoint is written to both slots, one after the other (the
 * second with DMR_CKPT_TWIN: dmr_ckpt_twin_holds()), so the next load
 * knows the other slot holds its map and its first checkpoint writes
 * only what changed since, not the whole map.  The second writes only
 * the map blocks the first slot got and it had not (those changed over
 * the last two checkpoints) and, with the tables' hashes, the table
 * blocks that changed.  Crash ordering: the first is complete (its
 * header written with REQ_FUA) before the second starts; a crash during
 * the second leaves it failing its checksums and the first is loaded,
 * clean, with nothing after it.  The module parameter ckpt_incremental=N
 * writes one, as before.
 *
 * Return: 0 or a negative errno (the target is then in failed mode).
 */
int dmr_checkpoint(struct dmr_target *rc, bool clean)
{
	int r = dmr_checkpoint_one(rc, clean ? DMR_CKPT_CLEAN : 0);

	if (r || !clean || !READ_ONCE(dmr_ckpt_incremental))
		return r;
	return dmr_checkpoint_one(rc, DMR_CKPT_CLEAN | DMR_CKPT_TWIN);
}

/* In the worker: a periodic or requested checkpoint is due. */
void dmr_checkpoint_due(struct dmr_target *rc)
{
	bool changed = READ_ONCE(rc->ckpt_requested) || rc->seq != rc->ckpt_log_seq;
	unsigned int i;

	WRITE_ONCE(rc->ckpt_due, false);
	for (i = 0; i < DMR_NR_HEADS; i++)
		changed |= rc->heads[i].unit_open;
	/* the periodic checkpoint is skipped when nothing changed since */
	if (changed)
		dmr_checkpoint(rc, false);
	WRITE_ONCE(rc->ckpt_requested, false);
	if (dmr_ckpt_rearm(READ_ONCE(rc->mode), READ_ONCE(rc->suspended),
			   READ_ONCE(rc->stopping)))
		queue_delayed_work(rc->wq, &rc->ckpt_work,
				   rc->opts.checkpoint_interval * HZ);
}

/* ------------------------------------------------------------------ */
/* loading */

static int dmr_replay_read(void *ctx, u64 blocknr, u32 nr, void *buf)
{
	return dmr_rw(ctx, REQ_OP_READ, blocknr, nr, buf);
}

/*
 * Load the map and segment table of one slot whose header validated
 * (dmr_slot_load(), shared with remapctl check), counting each map page
 * as it comes in (dmr_map_cache_loaded(): with map_cache, pages leave as
 * the load goes, so the whole map is never in memory at once), then
 * check the counts.
 * Return: 0, -EILSEQ if a checksum or count does not match, or the map
 * uses a segment the slot records as free (a torn or damaged slot: the
 * other one may be used), or the read error.
 */
static int dmr_load_slot(struct dmr_target *rc, unsigned int slot,
			 const struct dmr_ckpt *c, bool twin)
{
	const struct dmr_slot_io io = {
		.read = dmr_replay_read, .ctx = rc,
		.bounce = rc->bounce, .bounce_blocks = DMR_BOUNCE_BLOCKS,
		.loaded = dmr_map_cache_loaded, .table_read = dmr_load_table_read,
	};
	struct dmr_slot_err err;
	struct dmr_ckpt_layout l;
	u64 *hash;
	struct dmr_geometry cg;
	u64 covered;
	u32 seg;
	int r;

	/*
	 * This slot matches memory as its pages come in, the other one is
	 * out of date unless it is this one's twin (@twin:
	 * dmr_ckpt_twin_holds()): pages may leave as soon as they are
	 * counted, read back from this slot if needed (dmr_map_evict()).
	 */
	memset(rc->map.dirty, twin ? 0 : DMR_DIRTY_SLOT(slot ^ 1), rc->map.nr_map_blocks);
	rc->ckpt_slot = slot ^ 1;
	rc->tab_known[0] = false;
	rc->tab_known[1] = false;
	memset(rc->load_valid, 0, (size_t)rc->map.nr_segs * sizeof(u32));
	rc->load_mapped = 0;
	r = dmr_slot_load(&io, &rc->sb.geo, slot, c, &rc->map, rc->map_crc, &err);
	if (r)
		return r;
	for (seg = 0; seg < rc->map.nr_segs; seg++)
		rc->map.segs[seg].valid = rc->load_valid[seg];
	rc->map.mapped = rc->load_mapped;
	if (rc->map.mapped != c->mapped_blocks || dmr_map_free_mapped(&rc->map, &seg))
		return -EILSEQ;
	/*
	 * Map blocks past what the slot covers (it was written before the
	 * device grew) are in neither slot yet: both checkpoints write them.
	 */
	if (dmr_ckpt_geometry(&rc->sb.geo, c, &cg)) {
		covered = dmr_map_blocks(cg.logical_blocks, cg.wide);
		memset(rc->map.dirty + covered, DMR_DIRTY_ALL,
		       rc->map.nr_map_blocks - covered);
	}
	/*
	 * Tables of this geometry, all read (dmr_load_table_read()): their
	 * hashes are what this slot holds, and a twin's other slot holds the
	 * same bytes (the same memory encoded twice).  A slot written before
	 * the device grew holds shorter tables: not known.
	 */
	if (cg.logical_blocks != rc->sb.geo.logical_blocks ||
	    cg.nr_segments != rc->sb.geo.nr_segments)
		return 0;
	dmr_ckpt_layout(&rc->sb.geo, &l);
	hash = dmr_tab_hash(rc, &l, slot);
	if (!hash)
		return 0;
	rc->tab_known[slot] = true;
	if (twin) {
		memcpy(dmr_tab_hash(rc, &l, slot ^ 1), hash,
		       (l.crc_blocks + l.segtab_blocks) * sizeof(*hash));
		rc->tab_known[slot ^ 1] = true;
	}
	return 0;
}

/**
 * dmr_replay_step() - the map cache back to its size during replay (dmr_replay's @step)
 * @ctx: the target, loading
 * @pos: the heads' positions a load from here would start at
 * @nr: DMR_NR_HEADS
 * @seq: the last sequence number applied before them
 *
 * Item 10 of issue 40: a unit replayed makes the map pages it changes
 * dirty for both slots, so they cannot leave before a checkpoint holds
 * them, and a log since the last checkpoint that touched every page (a
 * discard of the whole device, written without a cache) would hold the
 * whole map in memory until the recovery checkpoint.  So pages clean for
 * the newest slot leave first; if the cache is still over its size, a
 * checkpoint of the log replayed so far is written (dmr_replay_ckpt_due(),
 * dmr_replay_may_checkpoint()): the heads at @pos, the log at @seq, the
 * map as it is (dmr_replay_unit() says why a discard in part is one a
 * load from there replays to the same map), and the segment table as
 * replay left it.  It is the checkpoint a crash right after the unit at
 * @seq, then a clean remove, would have left, and a load from it replays
 * the rest of the log as this one goes on to.
 *
 * Crash safety: it is a checkpoint like any other (rule 5: its header
 * goes last, with a flush before it, which makes every unit replay read
 * durable too).  A crash while it is written leaves the slot torn and
 * the one loaded valid and newest; a crash after it leaves it the newest
 * (the same load replays less).  Its log sequence is above the loaded
 * checkpoint's, so the sequence a later load resumes at after a crash
 * (dmr_ckpt_log_seq_bound()) only grows.  The load itself ends in
 * recovery (a unit was replayed): its sequence jumps as computed from
 * the slots it found, and the recovery checkpoint follows.
 *
 * Return: 0, or the checkpoint's error (the load then fails).
 */
static int dmr_replay_step(void *ctx, const struct dmr_log_pos *pos,
			   unsigned int nr, u64 seq)
{
	struct dmr_target *rc = ctx;
	unsigned int i;
	int r;

	if (!dmr_map_trim(rc) ||
	    !dmr_replay_ckpt_due(rc->pc.nr, rc->pc.cap, rc->replay_ckpt,
				 dmr_heads_valid(&rc->sb.geo, pos)))
		return 0;
	for (i = 0; i < nr; i++) {
		struct dmr_head *h = &rc->heads[i];

		h->pos = pos[i];
		h->pos.seq = 0;
		h->seg_written = h->pos.offset;	/* nothing to write */
		h->padded = h->pos.offset;
		h->unit_open = false;
	}
	rc->seq = seq;
	WRITE_ONCE(rc->mode, DMR_MODE_WRITE);	/* for this checkpoint only */
	r = dmr_checkpoint(rc, false);
	if (r) {
		rc->replay_ckpt_err = r;	/* (failed mode: dmr_checkpoint()) */
		return r;
	}
	WRITE_ONCE(rc->mode, DMR_MODE_READ_ONLY);
	atomic64_inc(&rc->stats.map_forced);
	dmr_map_trim(rc);
	cond_resched();
	return 0;
}

/* The counts dmr_load_slot() kept, no longer needed. */
static void dmr_load_counts_free(struct dmr_target *rc)
{
	kvfree(rc->load_valid);
	rc->load_valid = NULL;
}

/*
 * Make the heads' segments open again after a load: replay left each
 * head at its position; the segments and the reserved next ones are
 * marked open before the segment states are rebuilt.  The part of each
 * head's segment already written stays on the device: reads of blocks
 * below a head's @seg_written go there (dmr_mem_run()).
 */
static void dmr_heads_restore(struct dmr_target *rc, const struct dmr_log_pos *pos)
{
	unsigned int i;

	dmr_heads_load_states(&rc->map, pos);
	dmr_heads_open(&rc->map, pos, rc->seq + 1);
	for (i = 0; i < DMR_NR_HEADS; i++) {
		struct dmr_head *h = &rc->heads[i];

		h->pos = pos[i];
		h->pos.seq = 0;
		h->seg_written = h->pos.offset;
		h->padded = h->pos.offset;	/* what follows: not known */
		h->unit_open = false;
		dmr_seg_set_head(&rc->map.segs[h->pos.segment], i);
		if (rc->read_only)
			continue;	/* nothing is written: read it from the device */
		/* the blocks before @seg_written are read from the device */
		dmr_seg_set_mem(&rc->map, h->pos.segment, true);
	}
}

/**
 * dmr_load() - newest valid checkpoint, then roll every head forward
 * @rc: target, with dmr_io_init() done
 * @error: static message for ti->error
 *
 * After a crash (dmr_load_needs_recovery()) the log's sequence jumps
 * (dmr_seq_after_recovery()) and a checkpoint is written before any new
 * write (rule 4).  A read-only table replays in memory only and never
 * writes (rule 8).  A read error on a checkpoint or in the log refuses the
 * load (rule 5).
 *
 * Return: 0 or a negative errno.
 */
int dmr_load(struct dmr_target *rc, const char **error)
{
	static const char *const read_error[DMR_CKPT_SLOTS] = {
		"I/O error reading checkpoint slot 0",
		"I/O error reading checkpoint slot 1",
	};
	const struct dmr_geometry *geo = &rc->sb.geo;
	struct dmr_ckpt c[DMR_CKPT_SLOTS];
	enum dmr_log_status st[DMR_CKPT_SLOTS];
	struct dmr_log_pos pos[DMR_NR_HEADS];
	struct dmr_replay rp = {
		.geo = geo, .uuid = rc->sb.uuid, .read = dmr_replay_read,
		.ctx = rc, .buf = rc->gc_buf,
	};
	int order[DMR_CKPT_SLOTS], i, n, bad = 0, slot = -1, r;
	bool recovery;
	u64 seq, p;

	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		u64 blk = geo->ckpt_offset + (u64)i * geo->ckpt_slot_blocks;

		r = dmr_rw(rc, REQ_OP_READ, blk, 1, rc->bounce);
		st[i] = r ? DMR_LOG_READ_ERROR :
			dmr_ckpt_decode(rc->bounce, blk, rc->sb.uuid, &c[i]);
	}
	n = dmr_ckpt_order(st, c, order, &bad);
	if (n < 0) {
		*error = read_error[bad];
		return n;
	}
	rc->map.track = false;	/* segment states are rebuilt after replay */
	rc->load_valid = dmr_alloc_dev_array(rc, DMR_ARRAY_LOAD_VALID);
	if (!rc->load_valid) {
		*error = "Cannot allocate the map's pages";
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		int s = order[i];

		r = dmr_load_slot(rc, s, &c[s], dmr_ckpt_twin_holds(&c[s], st[s ^ 1], &c[s ^ 1]));
		if (!r) {
			slot = s;
			break;
		}
		if (r == -ENOMEM) {	/* a page of the map */
			dmr_load_counts_free(rc);
			*error = "Cannot allocate the map's pages";
			return -ENOMEM;
		}
		if (r != -EILSEQ && r != -ENOMEM) {	/* (-ENOMEM: above) */
			dmr_load_counts_free(rc);
			*error = read_error[s];
			return r;
		}
		DMWARN("%s: checkpoint slot %d (seq %llu) is damaged, trying the other",
		       rc->dev->name, s, (unsigned long long)c[s].seq);
	}
	dmr_load_counts_free(rc);
	if (slot < 0) {
		*error = st[0] == DMR_LOG_BAD_MAGIC && st[1] == DMR_LOG_BAD_MAGIC ?
			 "No checkpoint on the device (format it with remapctl)" :
			 "No valid checkpoint (metadata corrupted)";
		return -EINVAL;
	}

	rc->ckpt_seq = c[slot].seq;
	rc->ckpt_log_seq = c[slot].log_seq;
	rc->ckpt_other_blank = st[slot ^ 1] == DMR_LOG_BAD_MAGIC;
	rc->ckpt_slot = slot ^ 1;
	rc->last_ckpt = c[slot];
	rc->map.ckpt_seq = c[slot].seq;
	rc->total_user = c[slot].user_blocks;
	rc->total_log = c[slot].log_blocks;
	rc->total_moved = c[slot].gc_moved;
	memcpy(pos, c[slot].heads, sizeof(pos));
	if (!dmr_heads_valid(geo, pos)) {
		*error = "Checkpoint log position out of range";
		return -EINVAL;
	}

	rp.unit = kvmalloc_array(DMR_NR_HEADS, sizeof(*rp.unit), GFP_KERNEL);
	if (!rp.unit) {
		*error = "Cannot allocate replay buffers";
		return -ENOMEM;
	}
	seq = c[slot].log_seq;
	/* what replay's checkpoints record (dmr_replay_step()) */
	rc->map.age = c[slot].age;
	rc->temp.threshold = c[slot].temp_threshold;
	if (rc->pc.cap) {
		/* pages out are read back as units need them, and leave */
		rp.need = dmr_map_cache_replay;
		rp.step = dmr_replay_step;
		rp.discard_step = dmr_discard_piece(rc->pc.cap, rc->map.page_shift);
		rc->replay_ckpt = dmr_replay_may_checkpoint(!rc->read_only,
							    dmr_load_fell_back(st, c, slot),
							    rc->grow_from,
							    rc->sb_copies_valid == DMR_SB_COPIES);
	}
	r = dmr_replay_heads(&rp, &rc->map, pos, DMR_NR_HEADS, &seq);
	kvfree(rp.unit);
	if (rc->replay_ckpt_err) {	/* dmr_replay_step() */
		*error = "Cannot write a checkpoint during replay";
		return rc->replay_ckpt_err;
	}
	if (r == -ENOMEM) {
		*error = "Cannot allocate the map's pages";
		return -ENOMEM;
	}
	if (r == -EIO) {	/* dmr_map_need() */
		*error = "Cannot read a map page back from the checkpoint";
		return -EIO;
	}
	if (r) {	/* the one error left: dmr_replay_heads()'s own */
		*error = "Log corrupted (unit does not fit its segment)";
		return -EINVAL;
	}
	for (i = 0; i < DMR_NR_HEADS; i++) {
		/* whatever head: a unit that cannot be read may hold flushed data */
		if (rp.head_stop[i] == DMR_LOG_READ_ERROR) {
			*error = "I/O error reading the log";
			return -EIO;
		}
	}
	/* replay may have ended a head's segment on an unreserved next */
	if (!dmr_heads_valid(geo, pos)) {
		*error = "Log corrupted (a head has no segment to go on in)";
		return -EINVAL;
	}
	rc->replayed = rp.units;
	recovery = dmr_load_needs_recovery(&c[slot], rp.units, rp.stop,
					   dmr_load_fell_back(st, c, slot));
	rc->seq = recovery ? dmr_seq_after_recovery(dmr_ckpt_log_seq_bound(st, c, slot),
						    seq) : seq;
	/*
	 * Item 14: segment ages leave the jump out (the numbers after the
	 * last unit replayed up to the next one written are never used), and
	 * the temperature estimate and the segments' hot flags
	 * (dmr_load_slot()) go on from the checkpoint.
	 */
	dmr_age_clock_jump(&rc->map.age, seq, rc->seq + 1);
	/* write heat, in memory only, from the hot flags (no map cache: no page out) */
	for (p = 0; rc->map.heat && p < rc->map.nr_map_blocks; p++) {
		dmr_heat_seed(&rc->map, p);
		cond_resched();
	}
	rc->mode = rc->read_only ? DMR_MODE_READ_ONLY : DMR_MODE_WRITE;
	if (recovery)
		DMINFO("%s: recovery%s: checkpoint %llu (slot %d), %llu units, end: %s/%s/%s/%s",
		       rc->dev->name, rc->read_only ? " in memory (read-only)" : "",
		       (unsigned long long)c[slot].seq, slot,
		       (unsigned long long)rp.units,
		       dmr_log_strerror(rp.head_stop[DMR_HEAD_HOT]),
		       dmr_log_strerror(rp.head_stop[DMR_HEAD_COLD]),
		       dmr_log_strerror(rp.head_stop[DMR_HEAD_GC]),
		       dmr_log_strerror(rp.head_stop[DMR_HEAD_GC_HOT]));

	dmr_heads_restore(rc, pos);
	dmr_map_cache_start(rc);
	if (rc->read_only) {
		rc->loaded = true;	/* rule 8: nothing is written */
		dmr_map_trim(rc);	/* (no checkpoint: nothing is written) */
		return 0;
	}
	/*
	 * Growing (dmr_grow_setup()): the superblock with the new geometry
	 * goes down before anything is written under it: the recovery
	 * checkpoint below, the first checkpoint (which records the new
	 * sizes) and the first unit in a new segment.  Until then every
	 * checkpoint and unit on the device is one of the old geometry,
	 * which the new one covers (dmr_ckpt_geometry()); a crash in between
	 * loads the old superblock or the new one (dmr_write_superblock()),
	 * and either loads what is on the device.
	 */
	if (rc->grow_from) {
		r = dmr_write_superblock(rc);
		if (r) {
			*error = "Cannot write the grown superblock";
			return r;
		}
		DMINFO("%s: grown from %llu to %llu blocks: %llu segments, %llu logical blocks",
		       rc->dev->name, (unsigned long long)rc->grow_from,
		       (unsigned long long)geo->device_blocks,
		       (unsigned long long)geo->nr_segments,
		       (unsigned long long)geo->logical_blocks);
	} else if (rc->sb_copies_valid < DMR_SB_COPIES) {
		/*
		 * A copy that is damaged, or valid but stale (a crash between
		 * the two writes of a grow left the old geometry in it), is
		 * rewritten from the one loaded, in dmr_write_superblock()'s
		 * order, before anything else is written: until both agree, a
		 * later damage to the current copy would load the stale one,
		 * whose geometry no longer covers the checkpoints and units on
		 * the device.  The copy loaded stays valid at every point of
		 * the rewrite, so a failed one leaves the device as it was: a
		 * warning, not a failed load.
		 */
		unsigned int at_load = rc->sb_copies_valid;

		r = dmr_write_superblock(rc);
		/* status field sb_copies_ok: what the load found */
		rc->sb_copies_valid = at_load;
		if (r) {
			rc->sb.blocknr = rc->sb_copy;
			DMWARN("%s: cannot rewrite the superblock copy that is not current (%d)",
			       rc->dev->name, r);
		} else {
			DMINFO("%s: superblock copies rewritten: both current again",
			       rc->dev->name);
		}
	}
	if (recovery) {
		/* rule 4: the sequence jumped; record it before any new write */
		r = dmr_checkpoint(rc, false);
		if (r) {
			*error = "Cannot write the recovery checkpoint";
			return r;
		}
	} else {
		/* rule 7: the clean checkpoint is marked not clean at the first write */
		rc->ckpt_clean_on_disk = true;
	}
	rc->loaded = true;
	/*
	 * The pages replay read back leave now: the recovery checkpoint made
	 * them clean for the newest slot (without one, no unit was replayed).
	 */
	dmr_map_trim(rc);
	return 0;
}
