// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap garbage-collection policy (see dmr-policy.h).
 *
 * Pure code: the module, KUnit and tools/remap-sim run exactly this.  No
 * locking: every function works on what the caller passes.
 */
#include "dmr-log.h"
#include "dmr-policy.h"
#include "dmr-writer.h"

/**
 * dmr_gc_params_default() - default watermarks for a device
 * @nr_segs: segments of the device
 * @p: filled
 *
 * Free and prefree segments are space the log cannot use: the fewer of
 * them, the lower the write amplification of GC.  A segment GC empties is
 * free after the next log flush (dmr_seg_reusable(): it was sealed long
 * before, so no checkpoint slot's replay reaches it), and a flush costs a
 * summary block per head and a device flush, so batches can be small: 1/512
 * of the segments (at least 2), at most DMR_GC_BATCH_MAX.
 * tools/remap-sim measures GC's write amplification within 5% of the
 * analytic value at 10% and 28% over-provisioning with it
 * (Documentation/dm-remap-gc-sim.rst).
 *
 * The bound keeps GC's bursts short next to the time a user head takes to
 * fill a segment, on any device.  Background GC takes one step per
 * request, so a burst of a batch of victims lasts a batch of requests;
 * while it lasts, GC's heads fill segments with what they move and the
 * free pool dips below the reserve, so a user head that needs a segment
 * then waits, and urgent GC collects greedily, whatever the segments'
 * ages.  With 1/512 of 2^18 segments of 256 KiB (a batch of 512, eight
 * times a segment's 64 blocks) that took 80/20 writes from 4.34 to 5.28
 * and 95/5 from 1.83 to 2.58 (tools/remap-sim), where the same device
 * with a batch of 64 writes as a small one does.
 *
 * The reserve is GC's floor and one batch, the least dmr_gc_params_check()
 * accepts.  Background GC starts one segment above it and goes on until
 * GC's floor (or until two batches wait), then flushes: the free pool
 * stays near one batch, at most about 0.2% of the device.  The smallest
 * device the format accepts (18 segments) gets reserve 4, low 5, high 5.
 */
void dmr_gc_params_default(u32 nr_segs, struct dmr_gc_params *p)
{
	p->batch = clamp_t(u32, nr_segs / 512, 2, DMR_GC_BATCH_MAX);
	p->reserve = DMR_GC_FLOOR + p->batch;
	p->low = p->reserve + 1;
	p->high = p->low;
}

/**
 * dmr_gc_high_max() - the highest watermark a device's spare space can hold
 * @geo: the device's geometry
 *
 * GC can free at most the segments the user's data does not need: the
 * segments less those the whole logical space fills when packed (a unit
 * of DMR_SUMMARY_WORDS blocks behind each summary, half as many in wide
 * units, dmr_unit_capacity()) and the heads' open
 * and reserved segments.  A watermark at that bound makes GC compact the
 * device completely, at unbounded cost, and one above it can never be
 * reached, so GC copies without end while writes come.  Half the spare is
 * accepted: victims then hold at most about half their blocks valid in
 * steady state.  The default watermarks (dmr_gc_params_default()) are
 * GC's own floor and are always accepted, even where the spare of the
 * smallest formats is below them.
 *
 * Return: the largest gc_high (and gc_low) dmr_gc_params_check() accepts.
 */
u32 dmr_gc_high_max(const struct dmr_geometry *geo)
{
	u32 sb = geo->segment_blocks;
	u32 per_unit = dmr_unit_capacity(geo->wide, false);
	u64 data = sb - (sb + per_unit) / (per_unit + 1);
	u64 live = div64_u64(geo->logical_blocks + data - 1, data);
	u64 used = live + 2 * DMR_NR_HEADS;
	struct dmr_gc_params d;
	u32 spare;

	spare = geo->nr_segments > used ? geo->nr_segments - used : 0;
	dmr_gc_params_default(geo->nr_segments, &d);
	return max(spare / 2, d.high);
}

/**
 * dmr_gc_params_apply() - set the watermarks a table line or message gives
 * @p: the current (or default) watermarks; updated
 * @low: gc_low given, 0 if not
 * @high: gc_high given, 0 if not
 *
 * The table line and the gc_low/gc_high messages both use this, so they
 * behave the same: a watermark given alone moves the other one only as
 * far as it must (gc_low 10 alone raises gc_high to 10 if it was lower;
 * gc_high 3 alone lowers gc_low to 3, and the check then names gc_high,
 * the one given).  dmr_gc_params_check() then decides.
 */
void dmr_gc_params_apply(struct dmr_gc_params *p, u32 low, u32 high)
{
	if (low)
		p->low = low;
	if (high)
		p->high = high;
	if (low && !high && p->high < p->low)
		p->high = p->low;
	if (high && !low && p->low > p->high)
		p->low = p->high;
}

/**
 * dmr_gc_params_check() - are these watermarks usable?
 * @nr_segs: segments of the device
 * @high_max: dmr_gc_high_max() of the device
 * @p: the watermarks
 *
 * Return: NULL, or what is wrong with them.
 */
const char *dmr_gc_params_check(u32 nr_segs, u32 high_max,
				const struct dmr_gc_params *p)
{
	if (!p->batch)
		return "GC batch must be at least 1";
	if (p->reserve < DMR_GC_FLOOR + p->batch)
		return "GC reserve must cover GC's floor (2) and a batch";
	if (p->high < p->reserve)
		return "gc_high must be at least the GC reserve";
	if (p->low < p->reserve)
		return "gc_low must be at least the GC reserve";
	if (p->high < p->low)
		return "gc_high must be at least gc_low";
	if (p->high > nr_segs / 2)
		return "gc_high must be at most half the segments";
	if (p->high > high_max)
		return "gc_high is above what the spare space can hold";
	return NULL;
}

/**
 * dmr_head_is_gc() - does a head take GC's relocations?
 * @head: enum dmr_head_id
 *
 * Return: true for GC's two heads: they write relocation units, and may
 * take the segments user heads leave to GC (dmr_head_may_alloc()).
 */
bool dmr_head_is_gc(unsigned int head)
{
	return head == DMR_HEAD_GC || head == DMR_HEAD_GC_HOT;
}

/**
 * dmr_seg_set_head() - note the temperature of the head opening a segment
 * @s: the segment a head starts on
 * @head: enum dmr_head_id
 *
 * Segments of the hot user head and of GC's hot head are hot
 * (DMR_SEG_HOT), the others cold.  Checkpoints keep the flag
 * (DMR_DISK_SEG_HOT), so a sealed segment keeps it across a load; a
 * segment only replay saw counts as cold.
 */
void dmr_seg_set_head(struct dmr_seg *s, unsigned int head)
{
	if (head == DMR_HEAD_HOT || head == DMR_HEAD_GC_HOT)
		dmr_seg_flags(s, DMR_SEG_HOT, 0);
	else
		dmr_seg_flags(s, 0, DMR_SEG_HOT);
}

/**
 * dmr_gc_head() - the head that takes a victim's valid blocks
 * @m: the map (the age clock)
 * @victim: the segment GC collects
 * @now_seq: the log's last sequence number
 * @t: the temperature estimate (dmr_temp_classify())
 *
 * Blocks still valid in a hot segment are mostly young data that has not
 * been overwritten yet, and many of them soon will be; blocks of a cold
 * segment have outlived a collection or were written cold.  Each kind
 * goes to a GC head of its own, so GC's segments do not mix them and each
 * decays at its own rate.
 *
 * A hot victim also holds cold blocks the classifier sent to the hot
 * head.  Moved to GC's hot head they would stay hot for good, moved
 * again by every collection of a hot segment: on 80/20 writes they made
 * 44% of what GC's hot head wrote.  So the blocks of a hot victim whose
 * data users wrote longer ago than the estimate's lifetime (its birth,
 * struct dmr_seg) go to the cold GC head: settled, 80/20 from 4.32 to
 * 3.96, 95/5 from 1.72 to 1.68 (tools/remap-sim, 10% over-provisioning;
 * the separated bound 3.57 and 1.61).  With no estimate yet, a hot
 * victim's blocks stay hot.
 *
 * Return: DMR_HEAD_GC_HOT or DMR_HEAD_GC.
 */
unsigned int dmr_gc_head(const struct dmr_map *m, const struct dmr_seg *victim,
			 u64 now_seq, const struct dmr_temp *t)
{
	if (!(victim->flags & DMR_SEG_HOT))
		return DMR_HEAD_GC;
	if (t->threshold &&
	    dmr_seq_age(&m->age, victim->birth, now_seq) > t->threshold)
		return DMR_HEAD_GC;
	return DMR_HEAD_GC_HOT;
}

/**
 * dmr_head_may_alloc() - the throttle: may a head take a free segment now?
 * @p: watermarks
 * @head: enum dmr_head_id
 * @nr_free: free segments
 *
 * GC may take the last free segment; user heads leave the reserve to it.
 * A user head that may not allocate waits while GC frees space.
 */
bool dmr_head_may_alloc(const struct dmr_gc_params *p, unsigned int head,
			u32 nr_free)
{
	if (dmr_head_is_gc(head))
		return nr_free > 0;
	return nr_free > p->reserve;
}

/**
 * dmr_gc_active() - background GC hysteresis
 * @p: watermarks
 * @active: whether it was running
 * @nr_free: free segments
 * @nr_prefree: prefree segments (free after the next checkpoints)
 *
 * Starts below @p->low free segments, stops once free and prefree
 * segments together reach @p->high.
 */
bool dmr_gc_active(const struct dmr_gc_params *p, bool active, u32 nr_free,
		   u32 nr_prefree)
{
	if (nr_free < p->low)
		return true;
	if (nr_free + nr_prefree >= p->high)
		return false;
	return active;
}

/**
 * dmr_gc_decide() - what GC does next
 * @p: watermarks
 * @st: the state
 *
 * Only when space is wanted (a user head waits, or background GC is
 * active), and never for a waiting user once there is room for it again
 * (dmr_head_may_alloc(): the segments freed just before the decision
 * may be enough).  Collect while GC has more than its floor of free segments and
 * fewer than two batches wait for the reuse rule; then flush the log if
 * segments only wait for that (it costs a summary block per head and a
 * device flush), else checkpoint (it rewrites the map's changed blocks):
 * each at once when a user waits, else once a batch waits for it.  A
 * waiting user with nothing to collect, flush or checkpoint waits for
 * reads to emptied segments.  If there are none, GC collects below its
 * floor a victim whose move fits in the free segments there are
 * (@st->victim_fits): a load can leave GC there with nothing emptied,
 * since a power cut in the middle of a collection keeps the segment GC
 * was filling and loses the one it was emptying, and the floor alone
 * would then refuse every write for good.  Only with no such victim can
 * space not be freed (STUCK: the capacity arithmetic of the format and
 * dmr_gc_params_check() rule it out).
 *
 * Every action but IDLE makes progress: a collection empties a segment, a
 * flush frees every segment that only waited for one, a checkpoint moves
 * every prefree segment one step nearer reuse, and reads complete on their
 * own; none of them waits for a user write.
 *
 * Return: the action.
 */
enum dmr_gc_action dmr_gc_decide(const struct dmr_gc_params *p,
				 const struct dmr_gc_state *st)
{
	u32 flush = st->nr_prefree_flush, ckpt = st->nr_prefree_ckpt;

	if (!st->user_waits && !st->active)
		return DMR_GC_IDLE;
	/*
	 * Room again (dmr_gc_free_ready() freed segments just now): the
	 * waiting write goes on; background GC, if active, keeps its pace.
	 * Without this a user waiting over a device of large segments only
	 * (none collectable, nothing else prefree) was told STUCK with free
	 * segments there (test_large.py: ENOSPC with 146 free).
	 */
	if (st->user_waits && dmr_head_may_alloc(p, DMR_HEAD_HOT, st->nr_free))
		return DMR_GC_IDLE;
	if (st->victim && st->nr_free > DMR_GC_FLOOR && flush + ckpt < 2 * p->batch)
		return DMR_GC_COLLECT;
	if (flush && (st->user_waits || flush >= p->batch))
		return DMR_GC_FLUSH;
	if (ckpt && (st->user_waits || ckpt >= p->batch))
		return DMR_GC_CHECKPOINT;
	if (!st->user_waits)
		return DMR_GC_IDLE;
	if (st->nr_prefree_readers)
		return DMR_GC_WAIT_READERS;
	return st->victim && st->victim_fits ? DMR_GC_COLLECT : DMR_GC_STUCK;
}

/**
 * dmr_gc_segments_needed() - free segments a victim's move may take
 * @valid: the victim's valid blocks
 * @wide: the log's units are wide
 * @next_free: the next free block of the GC head's segment (@seg_blocks
 *	if it has none)
 * @next_reserved: the head has reserved the segment it goes on in
 * @seg_blocks: blocks per segment
 *
 * An upper bound: the move writes its blocks and their summaries
 * (dmr_gc_move_cost()), and one more summary if the head's open unit
 * fills first.  All of it stays in the head's segment if that leaves the
 * segment not done (two free blocks, dmr_seg_done()); else the head takes
 * the next segment, reserved before (rule 9); and one more if what goes
 * there leaves that one done too.  A collectable victim
 * (dmr_seg_collectable()) costs less than a segment, so never more.
 *
 * Return: 0, 1 or 2.
 */
u32 dmr_gc_segments_needed(u32 valid, bool wide, u32 next_free, bool next_reserved,
			   u32 seg_blocks)
{
	u64 blocks = (u64)dmr_gc_move_cost(valid, wide) + 1;
	u32 need;

	/* (each sum checked against @seg_blocks before it is a u32) */
	if (next_free <= seg_blocks && blocks <= seg_blocks - next_free &&
	    !dmr_seg_done(next_free + (u32)blocks, seg_blocks))
		return 0;
	need = blocks <= seg_blocks && !dmr_seg_done(blocks, seg_blocks) ? 1 : 2;
	return next_reserved ? need - 1 : need;
}

const char *dmr_gc_action_name(enum dmr_gc_action a)
{
	static const char *const name[] = {
		[DMR_GC_IDLE] = "idle",
		[DMR_GC_COLLECT] = "collect",
		[DMR_GC_CHECKPOINT] = "checkpoint",
		[DMR_GC_FLUSH] = "flush",
		[DMR_GC_WAIT_READERS] = "wait_readers",
		[DMR_GC_STUCK] = "stuck",
	};

	return a <= DMR_GC_STUCK ? name[a] : "unknown";
}

/**
 * dmr_gc_read_step() - GC's next step about the victim read
 * @pending: a victim's read into GC's buffer was submitted and the victim
 *	not collected yet
 * @done: that read completed
 * @urgent: a user write waits for a free segment
 *
 * GC reads its victim asynchronously: while the read is in flight the
 * worker serves requests (on slow media the read is several commands'
 * time per member), and collecting starts when it completes.  A user
 * write waiting for space cannot be served meanwhile, so it waits for the
 * read.  No new decision is made while a read is pending: GC has one
 * buffer, and the segment read holds a reader's reference that keeps it
 * from being reused (dmr_seg_reusable()), which a decision to wait for
 * readers would wait on.
 *
 * Return: enum dmr_gc_read_step.
 */
enum dmr_gc_read_step dmr_gc_read_step(bool pending, bool done, bool urgent)
{
	if (!pending)
		return DMR_GC_READ_NONE;
	if (done)
		return DMR_GC_READ_COLLECT;
	return urgent ? DMR_GC_READ_WAIT : DMR_GC_READ_LATER;
}

/**
 * dmr_gc_move_cost() - log blocks moving a segment's valid blocks takes
 * @valid: valid blocks of the victim
 * @wide: the log's units are wide
 *
 * Each block, and a summary per relocation unit, which lists at most
 * dmr_unit_capacity(@wide, true) blocks.
 */
u32 dmr_gc_move_cost(u32 valid, bool wide)
{
	const u32 per_unit = dmr_unit_capacity(wide, true);

	return valid + (valid + per_unit - 1) / per_unit;
}

/**
 * dmr_seg_collectable() - may GC take this segment as a victim?
 * @s: the segment
 * @seg_blocks: blocks per segment
 * @wide: the log's units are wide
 *
 * Sealed (written, no head on it, not in memory, not already empty, not
 * left alone by GC: DMR_SEG_NOGC, DMR_SEG_GCERR), and
 * collecting it gains something: moving its valid blocks, with the
 * summaries of their relocation units (dmr_gc_move_cost()), takes fewer
 * blocks than the segment frees.  (A written-once segment of 2048 blocks
 * holds 2045 valid blocks and would need 2050 to move.)
 */
bool dmr_seg_collectable(const struct dmr_seg *s, u32 seg_blocks, bool wide)
{
	return (s->flags & DMR_SEG_GC_MASK) == DMR_SEG_USED &&
	       s->valid < seg_blocks && dmr_gc_move_cost(s->valid, wide) < seg_blocks;
}

/* Ages are capped so that the cost-benefit product fits in 64 bits. */
#define DMR_AGE_MAX	BIT_ULL(40)

/**
 * dmr_gc_score() - how good a victim is (higher is better)
 * @m: the map (blocks per segment, the age clock)
 * @s: a collectable segment of @m
 * @now_seq: the log's last sequence number
 * @greedy: greedy (urgent) or cost-benefit (background)
 *
 * Greedy: the blocks it frees.  Cost-benefit (the LFS paper's form): the
 * space freed per block moved, times age, (1 - u) * age / u with u the
 * valid fraction, in blocks and log sequence numbers: a cold segment is
 * worth collecting at a higher u than a hot one, whose blocks may yet die
 * on their own.  On skewed workloads this ranks hot segments lower than
 * (1 - u) * age / (1 + u) does, so they are collected emptier (95/5:
 * 6% fewer blocks written); on uniform ones both do as well as greedy.
 */
u64 dmr_gc_score(const struct dmr_map *m, const struct dmr_seg *s,
		 u64 now_seq, bool greedy)
{
	u64 free = m->seg_blocks - s->valid, age;

	if (greedy)
		return free;
	/* the age without recovery jumps (item 14) */
	age = dmr_seq_age(&m->age, s->seq, now_seq) + 1;
	if (age > DMR_AGE_MAX)
		age = DMR_AGE_MAX;
	return div64_u64(free * age, (u64)s->valid + 1);
}

/**
 * dmr_gc_victim() - choose the segment to collect
 * @m: the map, tracking on
 * @greedy: see dmr_gc_score()
 * @now_seq: the log's last sequence number
 *
 * From the map's buckets (struct dmr_map): the cost does not depend on
 * the size of the device, and no segment is ever missed.
 *
 * Greedy: the candidate with the fewest valid blocks
 * (dmr_seg_fewest_valid()), the best score of the whole device, in O(1)
 * amortised; on a tie, the one that has had its count longest.  Its count
 * also says whether any segment is collectable: the move cost grows with
 * the valid count, so if the fewest is not worth moving, none is, and
 * DMR_NO_SEGMENT means that no segment of the device is collectable.
 *
 * Cost-benefit: the best score among the first DMR_GC_CB_PER_BUCKET
 * segments of every bucket worth collecting, those that have had their
 * count longest; on a tie the older segment (lower @seq).  The score of a
 * bucket's segments only differs by their age, and a segment that keeps
 * its count keeps its blocks, so these are nearly always the bucket's
 * oldest: tools/remap-sim measures the write amplification within 1.2% of
 * a scan of every segment (Documentation/dm-remap-gc-sim.rst), for at
 * most DMR_GC_CB_PER_BUCKET scores per valid count.
 *
 * Return: a segment, or DMR_NO_SEGMENT if none is collectable.
 */
u32 dmr_gc_victim(struct dmr_map *m, bool greedy, u64 now_seq)
{
	u32 fewest = dmr_seg_fewest_valid(m), best, v, first, seg, n;
	u64 best_score, score;

	if (fewest == DMR_NO_SEGMENT ||
	    !dmr_seg_collectable(&m->segs[fewest], m->seg_blocks, m->wide))
		return DMR_NO_SEGMENT;
	if (greedy)
		return fewest;
	best = fewest;
	best_score = dmr_gc_score(m, &m->segs[best], now_seq, false);
	for (v = m->segs[fewest].valid;
	     v < m->seg_blocks && dmr_gc_move_cost(v, m->wide) < m->seg_blocks; v++) {
		first = dmr_seg_bucket_first(m, v);
		if (first == DMR_NO_SEGMENT)
			continue;
		seg = first;
		for (n = 0; n < DMR_GC_CB_PER_BUCKET; n++) {
			const struct dmr_seg *s = &m->segs[seg];

			score = dmr_gc_score(m, s, now_seq, false);
			if (score > best_score ||
			    (score == best_score && s->seq < m->segs[best].seq)) {
				best = seg;
				best_score = score;
			}
			seg = dmr_seg_next(m, seg);
			if (seg == first)
				break;
		}
	}
	return best;
}

/**
 * dmr_temp_classify() - which user head a write goes to
 * @t: the estimate; updated
 * @m: the map; its write heat of @lba (@m->heat) is updated
 * @lba: the block being written
 * @old_entry: its map entry (before the write)
 * @now_seq: the log's last sequence number
 *
 * SepBIT's idea (FAST '22): a block whose previous copy lived a short time
 * is likely to be overwritten soon again.  With no time kept per block, the
 * previous copy's lifetime is estimated from its segment: the segment's
 * age A (its sequence number is when it was opened), scaled by how fast
 * its blocks die, A * S / (S - valid + 1) with S blocks per segment.  The
 * age alone is too short for a block GC moved (it counts from the move),
 * and the blocks GC moved are most of the device; a segment whose blocks
 * die fast holds hot data whatever its age, one that keeps its blocks
 * holds cold data.  The estimate is one 64-bit moving average (1/64
 * weight) of these lifetimes.  A block written for the first time is
 * judged long-lived.
 *
 * One judgement is a coin with a bias: on 80/20 writes it sent 10% of
 * the cold blocks' writes to the hot head, whose victims then carried them
 * from hot segment to hot segment, and 1.6% of the hot ones to the cold
 * head (settled WAF 3.96; sent by the truth, 3.72).  So where the map keeps
 * write heat, the judgements of a block are counted (up for short-lived,
 * down for long-lived, 0 to DMR_HEAT_MAX) and a write goes to the hot head
 * only at DMR_HEAT_MAX: three net short lives in a row.  Then a judgement
 * takes a lifetime below twice the average, else below 1.5 times it (the
 * factors tools/remap-sim measures best on 80/20 and 95/5 writes; settled
 * with heat, 80/20 3.78 and 95/5 1.665, Documentation/dm-remap-gc-sim.rst).
 *
 * Return: DMR_HEAD_HOT or DMR_HEAD_COLD.
 */
unsigned int dmr_temp_classify(struct dmr_temp *t, struct dmr_map *m, u64 lba,
			       u64 old_entry, u64 now_seq)
{
	const struct dmr_seg *s;
	unsigned int heat;
	u64 life;
	u32 dead;
	bool hot;

	if (old_entry == DMR_UNMAPPED) {
		hot = false;
	} else {
		s = &m->segs[dmr_pba_segment(m, old_entry - 1)];
		life = dmr_seq_age(&m->age, s->seq, now_seq);
		if (life > DMR_AGE_MAX)
			life = DMR_AGE_MAX;
		dead = m->seg_blocks - min(s->valid, m->seg_blocks);
		life = div64_u64(life * m->seg_blocks, (u64)dead + 1);
		hot = t->threshold &&
		      (m->heat ? life < 2 * t->threshold : 2 * life < 3 * t->threshold);
		if (!t->threshold)
			t->threshold = life + 1;
		else
			t->threshold = t->threshold - (t->threshold >> 6) + (life >> 6);
	}
	if (!m->heat)
		return hot ? DMR_HEAD_HOT : DMR_HEAD_COLD;
	heat = dmr_heat_get(m->heat, lba);
	if (hot)
		heat = min(heat + 1, DMR_HEAT_MAX);
	else if (heat)
		heat--;
	dmr_heat_set(m->heat, lba, heat);
	return heat == DMR_HEAT_MAX ? DMR_HEAD_HOT : DMR_HEAD_COLD;
}

/**
 * dmr_large_split() - the whole segments of a write
 * @lba: its first logical block
 * @nr: its blocks
 * @seg_blocks: blocks per segment
 * @first: set to the first block of the part returned
 *
 * Issue 41's goal 1: the part of a write that covers whole
 * segment-aligned ranges of logical blocks may take segments of its own,
 * written whole, so that overwriting it empties them whole and GC never
 * moves it.  Only tools/remap-sim --large-head places writes by it so far
 * (the format has no segment without a summary block).
 *
 * Return: the blocks of that part, a multiple of @seg_blocks (0: none).
 */
u64 dmr_large_split(u64 lba, u64 nr, u32 seg_blocks, u64 *first)
{
	u64 start = div64_u64(lba + seg_blocks - 1, seg_blocks) * seg_blocks;
	u64 end = div64_u64(lba + nr, seg_blocks) * seg_blocks;

	*first = start;
	return end > start ? end - start : 0;
}

/**
 * dmr_heat_seed() - the write heat of one map page's blocks after a load
 * @m: the map, with write heat (@m->heat)
 * @p: a map page (absent: its blocks are unmapped)
 *
 * Heat is kept in memory only, and a load that started every block at 0
 * would send each hot block's next three writes to the cold head: in the
 * fifth of a capacity after a load, 95/5 writes wrote 11% more than
 * without it (tools/remap-sim --recover).  The segments' hot flags come
 * back from the checkpoint (DMR_DISK_SEG_HOT), so a block found in a
 * segment a hot head opened starts at DMR_HEAT_MAX, any other at 0.
 */
void dmr_heat_seed(struct dmr_map *m, u64 p)
{
	const u32 *page = m->pages[p];
	u32 i, n = dmr_map_page_len(m, p);
	u64 lba = p << m->page_shift, e;

	for (i = 0; i < n; i++) {
		bool hot = false;

		if (page && page != DMR_PAGE_OUT) {
			e = dmr_page_entry(m, page, i);
			hot = e != DMR_UNMAPPED &&
			      (m->segs[dmr_pba_segment(m, e - 1)].flags & DMR_SEG_HOT);
		}
		dmr_heat_set(m->heat, lba + i, hot ? DMR_HEAT_MAX : 0);
	}
}

/**
 * dmr_page_clock_init() - an empty page cache
 * @c: the cache
 * @ring: @cap entries
 * @state: @nr_pages entries, cleared here
 * @ref: @nr_pages entries, cleared here
 * @cap: pages it may hold (> 0)
 * @nr_pages: map pages
 */
void dmr_page_clock_init(struct dmr_page_clock *c, u32 *ring, u8 *state, u8 *ref,
			 u32 cap, u64 nr_pages)
{
	c->ring = ring;
	c->state = state;
	c->ref = ref;
	c->cap = cap;
	c->nr = 0;
	c->hand = 0;
	memset(state, 0, nr_pages);
	memset(ref, 0, nr_pages);
}

/*
 * A use of @page.  Return: true if it is in the cache (now marked used);
 * false on a miss: the caller reads it in, after dmr_page_clock_insert(),
 * making room first with dmr_page_clock_victim() if the cache is full.
 */
bool dmr_page_clock_touch(struct dmr_page_clock *c, u32 page)
{
	if (!(c->state[page] & DMR_PC_RESIDENT))
		return false;
	dmr_page_clock_ref(c, page);
	return true;
}

/**
 * dmr_page_clock_victim() - take a page out of a full cache
 * @c: the cache (full: @c->nr == @c->cap)
 * @dirty: per map page, struct dmr_map's dirty bits
 * @newest: the checkpoint slot written last
 *
 * The hand goes round clearing the used bits, and takes the first page
 * neither used since it last passed nor dirty for @newest: a page leaves
 * memory only once the newest slot holds it (dmr_map_evict()).  After two
 * rounds every used bit is clear; a cache of pages changed since the last
 * checkpoint has no victim, and the caller must write one first.  The
 * page's ring slot is where dmr_page_clock_insert() puts the next.
 *
 * Return: the page taken out, or DMR_NO_PAGE.
 */
u32 dmr_page_clock_victim(struct dmr_page_clock *c, const u8 *dirty, unsigned int newest)
{
	u32 i;

	for (i = 0; i < 2 * c->nr; i++) {
		u32 page = c->ring[c->hand];

		if (READ_ONCE(c->ref[page])) {
			WRITE_ONCE(c->ref[page], 0);
		} else if (!(dirty[page] & DMR_DIRTY_SLOT(newest))) {
			c->state[page] = 0;
			c->nr--;
			/*
			 * Keep the ring dense: the last page (the one read in
			 * last, as a rule) takes the slot, and the hand moves
			 * past it, so it has a round to be used again before
			 * the hand comes back.  Left under the hand, it would
			 * be the next victim, and every page read in after it
			 * would come and go through that one slot while the
			 * rest of the cache never changed.
			 */
			c->ring[c->hand] = c->ring[c->nr];
			c->ring[c->nr] = page;
			if (++c->hand >= c->nr)
				c->hand = 0;
			return page;
		}
		if (++c->hand >= c->nr)
			c->hand = 0;
	}
	return DMR_NO_PAGE;
}

/* @page is read in (@c not full): it joins the ring, not used yet. */
void dmr_page_clock_insert(struct dmr_page_clock *c, u32 page)
{
	c->ring[c->nr++] = page;
	c->state[page] = DMR_PC_RESIDENT;
	WRITE_ONCE(c->ref[page], 0);
}

/**
 * dmr_pages_pick() - the map pages some blocks need, each once, ascending
 * @lba: logical blocks (GC's victim's, in its summaries' order)
 * @n: their number
 * @page_shift: log2 of the blocks one map page maps
 * @want: whether page @p is to be picked (out of memory), with @ctx
 * @ctx: for @want
 * @pages: the pages picked: distinct, ascending (so that pages next to
 *	each other in the checkpoint slot are read as one request)
 * @max: room in @pages (> 0)
 * @used: blocks of @lba looked at: @n, or fewer when @pages filled up
 *	and block *@used needs a page not in it (the next call starts there)
 *
 * The read-ahead of GC's map pages (dmr_map_prefetch()): instead of one
 * synchronous read per page as the victim's blocks are tested, the pages
 * of up to @max of them are read at once.  O(@n x @max).
 *
 * Return: the number of pages picked.
 */
u32 dmr_pages_pick(const u64 *lba, u32 n, unsigned int page_shift,
		   bool (*want)(void *ctx, u64 p), void *ctx, u64 *pages, u32 max,
		   u32 *used)
{
	u32 i, j, k = 0;

	for (i = 0; i < n; i++) {
		u64 p = lba[i] >> page_shift;

		for (j = 0; j < k && pages[j] < p; j++)
			;
		if ((j < k && pages[j] == p) || !want(ctx, p))
			continue;
		if (k == max)
			break;
		memmove(&pages[j + 1], &pages[j], (size_t)(k - j) * sizeof(*pages));
		pages[j] = p;
		k++;
	}
	*used = i;
	return k;
}
