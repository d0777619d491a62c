// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap garbage collection: the mechanism.  What to do, which victim
 * and when to throttle are decided by the pure policy (dmr-policy.c);
 * this file carries it out: it reads a victim, moves its valid blocks to
 * the GC head, flushes the log or writes checkpoints when the policy asks,
 * and frees (and discards) segments that the reuse rule allows.
 *
 * Locking: see dmr.h.  Everything here runs in the worker, or (freeing
 * after a checkpoint) with the worker stopped.  Map changes are made
 * under @map_lock.  Moves run synchronously in the worker, so no user
 * write can land between a victim's read and the moves' commit; the move
 * rule (dmr_move_commit()) is still checked at commit, and replay applies
 * it again.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/wait.h>

#include "dmr.h"

/* Victims looked at per choice on very large devices. */
#define DMR_GC_WINDOW	65536U

/*
 * Count prefree segments by what they wait for (dmr_seg_reuse_wait()): a
 * checkpoint, a flush, or (ready otherwise) reads in flight.
 */
void dmr_gc_prefree_waiting(struct dmr_target *rc, struct dmr_gc_state *st)
{
	u32 i;

	st->nr_prefree_ckpt = 0;
	st->nr_prefree_flush = 0;
	st->nr_prefree_readers = 0;
	if (!rc->map.nr_prefree)
		return;
	for (i = 0; i < rc->map.nr_segs; i++) {
		const struct dmr_seg *s = &rc->map.segs[i];

		if (!(s->flags & DMR_SEG_PREFREE))
			continue;
		switch (dmr_seg_reuse_wait(s, rc->map.ckpt_seq, rc->map.flush_seq)) {
		case DMR_REUSE_CKPT:
			st->nr_prefree_ckpt++;
			break;
		case DMR_REUSE_FLUSH:
			st->nr_prefree_flush++;
			break;
		default:
			st->nr_prefree_readers++;
		}
	}
}

/**
 * dmr_gc_free_ready() - free every segment the reuse rule allows
 * @rc: target, in the worker or with it stopped
 *
 * Each is discarded on the device below first when that is enabled (the
 * no_discard_passdown option is not given and the device supports
 * discard), so an SSD's own FTL knows the space is free.  A failed
 * discard only costs that: the segment is free anyway.
 *
 * The counts of reads in flight are read after a full barrier: it pairs
 * with the one in dmr_map_read(), between taking a count and looking the
 * entry up again, so a read that looked up an entry of a prefree segment
 * either sees that the entry left, or is seen here.
 */
void dmr_gc_free_ready(struct dmr_target *rc)
{
	u32 i, seg_blocks = dmr_seg_blocks(rc);

	if (!rc->map.nr_prefree)
		return;
	smp_mb();	/* entries moved out, then counts: see dmr_map_read() */
	for (i = 0; i < rc->map.nr_segs; i++) {
		if (!dmr_seg_reusable(&rc->map.segs[i], rc->map.ckpt_seq,
				      rc->map.flush_seq, atomic_read(&rc->readers[i])))
			continue;
		if (rc->discard_free &&
		    blkdev_issue_discard(rc->dev->bdev,
					 dmr_seg_block(rc, i, 0) * DMR_SECTORS_PER_BLOCK,
					 (sector_t)seg_blocks * DMR_SECTORS_PER_BLOCK,
					 GFP_NOIO))
			DMWARN_LIMIT("%s: discard of freed segment %u failed",
				     rc->dev->name, i);
		spin_lock(&rc->map_lock);
		dmr_seg_make_free(&rc->map, i);
		spin_unlock(&rc->map_lock);
		atomic64_inc(&rc->stats.segs_freed);
	}
}

/* Move one valid block of the victim to GC head @hid. */
static int dmr_gc_move(struct dmr_target *rc, unsigned int hid, u64 lba,
		       u32 src, const u8 *data)
{
	struct dmr_head *h = &rc->heads[hid];
	u32 n, dst;
	bool moved;
	int r;

	r = dmr_head_room(rc, hid, 1, &n);
	if (r)
		return r;
	memcpy((u8 *)h->buf + (size_t)h->wp * DMR_BLOCK_SIZE, data, DMR_BLOCK_SIZE);
	dst = h->pos.segment * dmr_seg_blocks(rc) + h->wp;
	spin_lock(&rc->map_lock);
	moved = dmr_move_commit(&rc->map, lba, src, dst);
	spin_unlock(&rc->map_lock);
	if (!moved)
		return 0;	/* overwritten or discarded meanwhile: it wins */
	h->unit->lba[h->unit->nr_blocks] = lba;
	h->unit->src[h->unit->nr_blocks++] = src;
	h->wp++;
	rc->total_moved++;
	atomic64_inc(&rc->stats.gc_moved);
	return 0;
}

/**
 * dmr_gc_collect() - collect one victim
 * @rc: target
 * @seg: the victim (dmr_gc_victim())
 *
 * Reads the whole segment at once (a victim is mostly valid in steady
 * state, so reading around the dead blocks costs little and one large
 * read is cheap on the devices this is for), walks its units from the
 * first summary, and moves every block the map still points at.  A unit
 * numbered below the segment's first unit belongs to an earlier use of
 * the segment and ends the walk.  The blocks go to the GC head
 * dmr_gc_head() names (hot or cold victim).  The segment is then empty,
 * hence prefree.  If it is not (a map entry points at a block no summary
 * lists), it is never chosen again.
 *
 * Return: 0 or a negative errno from the log writer.
 */
static int dmr_gc_collect(struct dmr_target *rc, u32 seg)
{
	u32 seg_blocks = dmr_seg_blocks(rc), off = 0, i;
	u64 first_seq = rc->map.segs[seg].seq;
	unsigned int hid = dmr_gc_head(&rc->map.segs[seg]);
	struct dmr_unit *u = rc->gc_unit;
	u8 *buf = rc->gc_buf;
	int r;

	if (rc->ckpt_clean_on_disk) {
		r = dmr_mark_dirty(rc);		/* rule 7: GC writes the log too */
		if (r)
			return r;
	}
	r = dmr_rw(rc, REQ_OP_READ, dmr_seg_block(rc, seg, 0), seg_blocks, buf);
	if (r) {
		DMERR_LIMIT("%s: GC cannot read segment %u (%d); it is left alone",
			    rc->dev->name, seg, r);
		goto bad;
	}
	while (off + 2 <= seg_blocks) {
		u64 blk = dmr_seg_block(rc, seg, off);

		if (dmr_unit_decode(buf + (size_t)off * DMR_BLOCK_SIZE, blk,
				    rc->sb.uuid, rc->sb.geo.logical_blocks, u) !=
		    DMR_LOG_OK || u->seq < first_seq ||
		    off + 1 + u->nr_blocks > seg_blocks)
			break;
		for (i = 0; i < u->nr_blocks; i++) {
			u32 src = seg * seg_blocks + off + 1 + i;

			if (rc->map.l2p[u->lba[i]] != src + 1)
				continue;	/* not valid any more */
			r = dmr_gc_move(rc, hid, u->lba[i], src,
					buf + (size_t)(off + 1 + i) * DMR_BLOCK_SIZE);
			if (r)
				return r;
		}
		off += 1 + u->nr_blocks;
	}
	atomic64_inc(&rc->stats.gc_runs);
	if (!rc->map.segs[seg].valid)
		return 0;
	DMERR_LIMIT("%s: GC left %u blocks in segment %u that no summary lists",
		    rc->dev->name, rc->map.segs[seg].valid, seg);
bad:
	spin_lock(&rc->map_lock);
	rc->map.segs[seg].flags |= DMR_SEG_NOGC;
	spin_unlock(&rc->map_lock);
	return 0;
}

static bool dmr_gc_readers_gone(struct dmr_target *rc)
{
	struct dmr_gc_state st;

	dmr_gc_prefree_waiting(rc, &st);
	return !st.nr_prefree_readers;
}

/**
 * dmr_gc_run() - one GC action, as the policy decides
 * @rc: target, in the worker
 * @urgent: a user write waits for a segment (greedy victims, no idling)
 *
 * Return: 1 if there was nothing to do, 0 after an action, or a negative
 * errno (-ENOSPC when nothing can free space, which the format's
 * reserved segments and the watermark checks rule out).
 */
int dmr_gc_run(struct dmr_target *rc, bool urgent)
{
	struct dmr_gc_state st = { .user_waits = urgent };
	struct dmr_gc_params p;
	u32 victim;
	int r;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE)
		return -EIO;
	spin_lock(&rc->map_lock);
	p = rc->gc;
	spin_unlock(&rc->map_lock);
	rc->gc_active = dmr_gc_active(&p, rc->gc_active, rc->map.nr_free,
				      rc->map.nr_prefree);
	/* the common case, after every request: nothing to do, no scan */
	if (!urgent && !rc->gc_active)
		return 1;
	dmr_gc_free_ready(rc);
	st.nr_free = rc->map.nr_free;
	dmr_gc_prefree_waiting(rc, &st);
	st.active = rc->gc_active;
	victim = dmr_gc_victim(&rc->map, urgent, rc->seq, &rc->gc_cursor,
			       DMR_GC_WINDOW);
	st.victim = victim != DMR_NO_SEGMENT;

	switch (dmr_gc_decide(&p, &st)) {
	case DMR_GC_COLLECT:
		return dmr_gc_collect(rc, victim);
	case DMR_GC_CHECKPOINT:
		r = dmr_checkpoint(rc, false);
		return r;
	case DMR_GC_FLUSH:
		r = dmr_flush_all(rc, true);
		if (!r)
			dmr_gc_free_ready(rc);
		return r;
	case DMR_GC_WAIT_READERS:
		wait_event_timeout(rc->readers_wq, dmr_gc_readers_gone(rc), HZ / 10);
		return 0;
	case DMR_GC_STUCK:
		DMERR_LIMIT("%s: no space can be freed (%u free, %u prefree segments)",
			    rc->dev->name, rc->map.nr_free, rc->map.nr_prefree);
		return -ENOSPC;
	default:
		return 1;
	}
}

/**
 * dmr_gc_background() - one step of background GC, if it has work
 * @rc: target, in the worker
 *
 * Not while suspended or stopping (postsuspend waits for the worker), and
 * never when the target cannot write.
 *
 * Return: true if it did something (the worker then looks again).
 */
bool dmr_gc_background(struct dmr_target *rc)
{
	bool did;

	if (READ_ONCE(rc->mode) != DMR_MODE_WRITE || READ_ONCE(rc->stopping) ||
	    READ_ONCE(rc->suspended) || !rc->active)
		return false;
	did = dmr_gc_run(rc, false) == 0;
	WRITE_ONCE(rc->gc_mode, rc->gc_active ? DMR_GC_MODE_BACKGROUND :
		   DMR_GC_MODE_IDLE);
	return did;
}
