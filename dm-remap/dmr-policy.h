/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap garbage-collection policy: functions defined in dmr-policy.c.
 *
 * Pure code (see dmr-pure.h): victim choice, watermarks, the throttle, the
 * next GC action and the write temperature estimate.  No I/O, no locking:
 * the module (dmr-gc.c, dmr-write.c), KUnit and the simulator
 * (tools/remap-sim) call these same functions on the state they own.
 */
#ifndef DMR_POLICY_H
#define DMR_POLICY_H

#include "dmr-codec.h"
#include "dmr-map.h"

/* Log heads (DMR_NR_HEADS of them). */
enum dmr_head_id {
	DMR_HEAD_HOT,		/* user writes expected to be overwritten soon */
	DMR_HEAD_COLD,		/* other user writes */
	DMR_HEAD_GC,		/* relocations out of cold segments */
	DMR_HEAD_GC_HOT,	/* relocations out of hot segments */
};

bool dmr_head_is_gc(unsigned int head);
void dmr_seg_set_head(struct dmr_seg *s, unsigned int head);

/**
 * struct dmr_gc_params - GC tunables, in free segments
 * @reserve: user heads never take a segment when only this many are free:
 *	the rest is GC's, so GC can always make progress
 * @low: background GC starts when fewer segments than this are free
 * @high: and stops once this many are free or waiting for reuse
 * @batch: segments emptied before a flush or checkpoint is forced to free
 *	them
 */
struct dmr_gc_params {
	u32 reserve;
	u32 low;
	u32 high;
	u32 batch;
};

/* GC starts a victim only with more free segments than this. */
#define DMR_GC_FLOOR	2U
/* The largest default batch (dmr_gc_params_default()): short GC bursts. */
#define DMR_GC_BATCH_MAX	64U

void dmr_gc_params_default(u32 nr_segs, struct dmr_gc_params *p);
u32 dmr_gc_high_max(const struct dmr_geometry *geo);
void dmr_gc_params_apply(struct dmr_gc_params *p, u32 low, u32 high);
const char *dmr_gc_params_check(u32 nr_segs, u32 high_max,
				const struct dmr_gc_params *p);
bool dmr_head_may_alloc(const struct dmr_gc_params *p, unsigned int head,
			u32 nr_free);
bool dmr_gc_active(const struct dmr_gc_params *p, bool active, u32 nr_free,
		   u32 nr_prefree);

/**
 * struct dmr_gc_state - what dmr_gc_decide() looks at
 * @nr_free: free segments
 * @nr_prefree_ckpt: prefree segments still waiting for a checkpoint
 * @nr_prefree_flush: prefree segments only waiting for a device flush
 * @nr_prefree_readers: prefree segments only waiting for reads in flight
 * @victim: a segment could be collected
 * @victim_fits: moving it takes no more segments than are free
 *	(dmr_gc_segments_needed()), even at or below GC's floor
 * @user_waits: a user head needs a segment and may not take one
 * @active: background GC is running (dmr_gc_active())
 */
struct dmr_gc_state {
	u32 nr_free;
	u32 nr_prefree_ckpt;
	u32 nr_prefree_flush;
	u32 nr_prefree_readers;
	bool victim;
	bool victim_fits;
	bool user_waits;
	bool active;
};

enum dmr_gc_action {
	DMR_GC_IDLE,		/* nothing to do */
	DMR_GC_COLLECT,		/* collect one victim */
	DMR_GC_CHECKPOINT,	/* write a checkpoint: frees prefree segments */
	DMR_GC_FLUSH,		/* flush the log: frees those only waiting for it */
	DMR_GC_WAIT_READERS,	/* wait for reads in flight to emptied segments */
	DMR_GC_STUCK,		/* a user waits and nothing can free space */
};

enum dmr_gc_action dmr_gc_decide(const struct dmr_gc_params *p,
				 const struct dmr_gc_state *st);
u32 dmr_gc_segments_needed(u32 valid, bool wide, u32 next_free, bool next_reserved,
			   u32 seg_blocks);
const char *dmr_gc_action_name(enum dmr_gc_action a);

/* What GC does about its victim read (dmr_gc_read_step()). */
enum dmr_gc_read_step {
	DMR_GC_READ_NONE,	/* no victim read: decide (dmr_gc_decide()) */
	DMR_GC_READ_COLLECT,	/* the read is done: collect the victim */
	DMR_GC_READ_WAIT,	/* in flight and a user waits: wait, collect */
	DMR_GC_READ_LATER,	/* in flight: serve requests meanwhile */
};

enum dmr_gc_read_step dmr_gc_read_step(bool pending, bool done, bool urgent);

u32 dmr_gc_move_cost(u32 valid, bool wide);
bool dmr_seg_collectable(const struct dmr_seg *s, u32 seg_blocks, bool wide);
u64 dmr_gc_score(const struct dmr_map *m, const struct dmr_seg *s,
		 u64 now_seq, bool greedy);
/* Segments of each bucket a cost-benefit victim choice looks at. */
#define DMR_GC_CB_PER_BUCKET	4U

u32 dmr_gc_victim(struct dmr_map *m, bool greedy, u64 now_seq);

/**
 * struct dmr_temp - online estimate of how soon a write is overwritten
 * @threshold: moving average of the lifetimes of the copies user writes
 *	replace, in log sequence numbers (0: no estimate yet)
 */
struct dmr_temp {
	u64 threshold;
};

unsigned int dmr_temp_classify(struct dmr_temp *t, struct dmr_map *m, u64 lba,
			       u64 old_entry, u64 now_seq);
void dmr_heat_seed(struct dmr_map *m, u64 p);
u64 dmr_large_split(u64 lba, u64 nr, u32 seg_blocks, u64 *first);
unsigned int dmr_gc_head(const struct dmr_map *m, const struct dmr_seg *victim,
			 u64 now_seq, const struct dmr_temp *t);

/*
 * A cache of the map's pages (issue 26, "a map that pages"): which pages
 * stay in memory when only @cap of them may (table option map_cache,
 * dmr-page.c).  The simulator measures it (remap-sim --map-cache).
 */
#define DMR_PC_RESIDENT	0x1U	/* in the cache */
#define DMR_NO_PAGE	0xffffffffU

/**
 * struct dmr_page_clock - CLOCK (second chance) over map pages
 * @ring: the resident pages, @nr of them (at most @cap)
 * @state: per map page, DMR_PC_RESIDENT or 0
 * @ref: per map page, 1 if used since the hand last passed it.  Apart
 *	from @state, so that a lookup without the cache's owner (a module's
 *	read path, without a lock) can set it: one byte store
 *	(dmr_page_clock_ref()), which the hand may miss at worst (the page
 *	then loses its second chance), never a change of @state
 * @cap: pages the cache may hold
 * @nr: pages it holds
 * @hand: the next @ring slot the hand looks at
 *
 * Everything but @ref belongs to one thread (the module's worker).
 */
struct dmr_page_clock {
	u32 *ring;
	u8 *state;
	u8 *ref;
	u32 cap;
	u32 nr;
	u32 hand;
};

void dmr_page_clock_init(struct dmr_page_clock *c, u32 *ring, u8 *state, u8 *ref,
			 u32 cap, u64 nr_pages);

/* A use of resident @page by any thread (the read path's hits). */
static inline void dmr_page_clock_ref(struct dmr_page_clock *c, u32 page)
{
	if (!READ_ONCE(c->ref[page]))	/* (no store, no line bounce, if set) */
		WRITE_ONCE(c->ref[page], 1);
}

bool dmr_page_clock_touch(struct dmr_page_clock *c, u32 page);
u32 dmr_page_clock_victim(struct dmr_page_clock *c, const u8 *dirty, unsigned int newest);
void dmr_page_clock_insert(struct dmr_page_clock *c, u32 page);
u32 dmr_pages_pick(const u64 *lba, u32 n, unsigned int page_shift,
		   bool (*want)(void *ctx, u64 p), void *ctx, u64 *pages, u32 max,
		   u32 *used);

#endif /* DMR_POLICY_H */
