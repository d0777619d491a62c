/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap logical-to-physical map and segment table: functions defined in
 * dmr-map.c.
 *
 * Pure code.  The map is not locked here: in the module, every mutation
 * happens under struct dmr_target's map_lock (see dmr.h), entries are
 * stored with WRITE_ONCE(), and lookups from the I/O submission path take
 * no lock (dmr_map_read() validates what it read instead).
 *
 * Physical block numbers ("pba") are relative to the start of the data
 * area: segment s holds pba s * segment_blocks ... (s + 1) * segment_blocks - 1.
 * A map entry is 0 for an unmapped block, else pba + 1.
 */
#ifndef DMR_MAP_H
#define DMR_MAP_H

#include "dmr-pure.h"

#define DMR_UNMAPPED	0U

/*
 * log2 of the map entries one map block (and one map page) holds: 1024
 * 4-byte entries, or 512 8-byte ones in a wide map.
 */
static inline u32 dmr_map_shift(bool wide)
{
	return wide ? 9 : 10;
}

/* Map blocks (map pages) of @logical_blocks. */
static inline u64 dmr_map_blocks(u64 logical_blocks, bool wide)
{
	return (logical_blocks + (1ULL << dmr_map_shift(wide)) - 1) >> dmr_map_shift(wide);
}

/*
 * What dmr_map_get() returns for a block whose map page is out of memory
 * (dmr_map_evict()): read it in (dmr_map_page_in()) and look again.  Never
 * a map entry: the geometry keeps pba + 1 below 0xffffffff, or far below
 * 2^64 in a wide map (dmr_geometry_compute_wide()).
 */
#define DMR_MAP_MISS	(~0ULL)

/*
 * A map page's pointer while the page is out of memory: the newest
 * checkpoint slot holds its current copy (dmr_map_evict()).  NULL is a page with no
 * mapped entry (absent: a slot holds it as a zero block), anything else
 * the page itself (resident).  One pointer says which, so a lockless
 * reader never sees a state between two (dmr_map_get()).
 */
#define DMR_PAGE_OUT	((u32 *)1)

enum dmr_page_state {
	DMR_PAGE_ABSENT,	/* every entry unmapped, no memory */
	DMR_PAGE_RESIDENT,	/* in memory */
	DMR_PAGE_EVICTED,	/* out: both slots hold it */
};

/*
 * Segment states.  DMR_SEG_USED and DMR_SEG_LARGE are the flags on disk
 * (dmr-format.h; LARGE: a large segment, @base and @csum say what it
 * holds, sealed from its start: dmr_seg_large()); the others live
 * in memory and are rebuilt at load (dmr_map_load_states()).
 *
 *   free      not USED, not OPEN: may be handed to a head
 *   open      OPEN: a head's current segment, or the one it reserved to go
 *             on in; never collected, never handed out again
 *   sealed    USED only: a head left it; GC may collect it
 *   prefree   USED | PREFREE: sealed and empty; free again once the reuse
 *             rule allows (dmr_seg_reusable())
 */
#define DMR_SEG_OPEN	0x100U	/* a head's segment, or reserved by one */
#define DMR_SEG_MEM	0x200U	/* its blocks are read from memory (set by the glue) */
#define DMR_SEG_PREFREE	0x400U	/* empty, waiting for the reuse rule */
#define DMR_SEG_NOGC	0x800U	/* collection found it inconsistent: never again */
#define DMR_SEG_HOT	0x1000U	/* opened by a hot head since load (dmr_seg_set_head()) */
#define DMR_SEG_GCERR	0x2000U	/* GC could not read it: tried again after a checkpoint */
#define DMR_SEG_DISK_FLAGS	(DMR_SEG_USED | DMR_SEG_LARGE)

/*
 * The flags that decide whether GC may take a segment: exactly
 * DMR_SEG_USED of them (sealed, written, not in memory, not empty, not
 * found inconsistent, not unreadable); dmr_seg_collectable() adds the move cost.
 */
#define DMR_SEG_GC_MASK		(DMR_SEG_USED | DMR_SEG_OPEN | DMR_SEG_MEM | \
				 DMR_SEG_PREFREE | DMR_SEG_NOGC | DMR_SEG_GCERR)

/*
 * Which of the map's segment lists a segment is on (in memory, kept by
 * dmr-map.c alone): none, the bucket of its valid count, the prefree list
 * of what it waits for (DMR_SEG_LIST_PREFREE + enum dmr_reuse_wait), or
 * the free list.  The read path reads @flags without the lock for
 * DMR_SEG_MEM only; a segment moving between buckets, the common case,
 * keeps its bits.
 */
#define DMR_SEG_LIST_SHIFT	16
#define DMR_SEG_LIST_MASK	(7U << DMR_SEG_LIST_SHIFT)
#define DMR_SEG_LIST_NONE	0U
#define DMR_SEG_LIST_BUCKET	1U
#define DMR_SEG_LIST_PREFREE	2U	/* ... to 4 */
#define DMR_SEG_LIST_FREE	5U

/*
 * Checkpoints that must complete after a segment is sealed before its
 * reuse: then neither slot's log positions lead into it.
 */
#define DMR_REUSE_CHECKPOINTS	2U

/**
 * struct dmr_seg - in-memory segment table entry
 * @seq: log sequence number of the first unit of its current use
 * @birth: when the data it holds was written by users, in log sequence
 *	numbers: @seq for a user head's segment; for GC's, the mean of the
 *	births of the segments its blocks were moved from
 *	(dmr_seg_birth_mix()).  dmr_gc_head() sends the blocks of a hot
 *	victim whose data is old to the cold GC head.
 * @free_after: sealed: checkpoint sequence number from which no slot's
 *	replay reaches it (dmr_seg_reusable())
 * @flush_after: prefree: flush count from which what emptied it is durable
 * @valid: mapped logical blocks whose data lives in the segment
 * @flags: DMR_SEG_*
 * @next: the next segment on its list (see struct dmr_map), if it is on one
 * @prev: the previous one
 *
 * 48 bytes: the two links (8 bytes per segment, 128 MiB on a 16 TiB
 * device of 1 MiB segments) make every GC step cost the same on any size.
 */
struct dmr_seg {
	u64 seq;
	u64 birth;
	u64 free_after;
	u64 flush_after;
	u32 valid;
	u32 flags;
	u32 next;
	u32 prev;
	u64 base;
	u32 csum;
};

/* What a prefree segment waits for before the reuse rule allows it. */
enum dmr_reuse_wait {
	DMR_REUSE_READY,	/* nothing (reads in flight are the caller's) */
	DMR_REUSE_FLUSH,	/* a device flush */
	DMR_REUSE_CKPT,		/* a checkpoint */
	DMR_REUSE_WAITS
};

/*
 * Entries of the list heads array of a map of @seg_blocks-block segments:
 * a bucket per valid count, a prefree list per wait, the free list.
 */
#define DMR_MAP_LISTS(seg_blocks)	((seg_blocks) + 1 + DMR_REUSE_WAITS + 1)

/* Per map block dirty bits: one per checkpoint slot. */
#define DMR_DIRTY_SLOT(slot)	(1U << (slot))
#define DMR_DIRTY_ALL		(DMR_DIRTY_SLOT(0) | DMR_DIRTY_SLOT(1))

/*
 * Every change of a segment's @flags: one store (WRITE_ONCE()), since the
 * read path reads them without the map's lock (READ_ONCE(), for
 * DMR_SEG_MEM); writers are serialised by that lock or by the worker.
 */
static inline void dmr_seg_flags(struct dmr_seg *s, u32 set, u32 clear)
{
	WRITE_ONCE(s->flags, (s->flags & ~clear) | set);
}

/* Recovery jumps an age clock remembers (struct dmr_age_clock). */
#define DMR_AGE_JUMPS	8

/**
 * struct dmr_age_clock - segment ages without the recovery jumps
 * @nr: jumps in @at and @len, oldest first
 * @at: the first sequence number after each jump
 * @len: how many sequence numbers it skipped
 *
 * A recovery resumes the log's sequence 2^32 past the checkpoint (rule 4),
 * so a segment opened before it would look 2^32 units older than it is:
 * cost-benefit GC would take full old segments first and the temperature
 * estimate would see lifetimes of 2^32.  Ages are measured on the log's
 * sequence minus the jumps made since the segment was opened
 * (dmr_seq_age()).  Kept in every checkpoint header (format 3's reserved
 * bytes: a header without it has no jump), added to at each recovery
 * (dmr_age_clock_jump()).  When more than DMR_AGE_JUMPS jumps are to be
 * kept the two oldest merge into one at the later position: a segment
 * opened between them, after nine recoveries, then looks younger than it
 * is, never older.
 */
struct dmr_age_clock {
	u32 nr;
	u64 at[DMR_AGE_JUMPS];
	u64 len[DMR_AGE_JUMPS];
};

u64 dmr_seq_age(const struct dmr_age_clock *c, u64 born, u64 now);

/* The reads in flight to segment @seg (the glue's counts, read unlocked). */
typedef u32 (*dmr_readers_fn)(const void *ctx, u32 seg);
void dmr_age_clock_jump(struct dmr_age_clock *c, u64 from, u64 to);
bool dmr_age_clock_valid(const struct dmr_age_clock *c);

/**
 * struct dmr_map - the map and the segment table
 * @pages: per map block (dmr_map_per_page() logical blocks, the
 *	unit a checkpoint writes), its entries, or NULL while all are
 *	unmapped: a page is only allocated when a block of it is first
 *	mapped (dmr_map_reserve()), so a device's map memory follows what
 *	was written, not its size; DMR_PAGE_OUT while evicted
 *	(dmr_map_evict(), dmr_map_page_in()).  The read path looks entries
 *	up without the lock (dmr_map_get()); the caller that evicts frees
 *	the page only when no such reader can hold it (RCU in a module).
 * @page_alloc: gives a zeroed page for dmr_map_reserve() (the page's
 *	number as its second argument), or NULL on failure; NULL if every
 *	page was given at dmr_map_init()
 * @page_ctx: @page_alloc's argument
 * @nr_pages: pages resident (allocated or given, not evicted)
 * @nr_pages_peak: the most @nr_pages was since dmr_map_init() (or the
 *	caller reset it to @nr_pages)
 * @nr_out: pages evicted (dmr_map_evict())
 * @nr_logical: logical blocks
 * @segs: one entry per segment
 * @nr_segs: segments
 * @seg_blocks: blocks per segment
 * @wide: the device is formatted --wide (struct dmr_geometry's @wide):
 *	8-byte map entries, 512 a page, and wide log units, whose GC
 *	relocation units list half as many blocks (dmr_gc_move_cost())
 * @page_shift: dmr_map_shift(@wide): a logical block's page and index
 * @mapped: logical blocks currently mapped
 * @dirty: per map block (dmr_map_per_page() entries), the slots
 *	whose copy of that block is out of date
 * @nr_map_blocks: entries in @dirty
 * @ckpt_seq: sequence number of the last checkpoint completed (the reuse
 *	rule counts checkpoints from it)
 * @flush_seq: device flushes completed that made every unit closed before
 *	them durable (checkpoints included; the reuse rule counts them)
 * @nr_free: free segments
 * @nr_prefree: prefree segments
 * @track: keep segment states as blocks are dropped (off while loading)
 * @lists: DMR_MAP_LISTS(@seg_blocks) list heads (the first segment of each
 *	list, or DMR_NO_SEGMENT): first the buckets, one per valid count
 *	0 ... @seg_blocks, then the prefree lists, one per enum
 *	dmr_reuse_wait, then the free list
 * @nr_bucketed: segments in the buckets
 * @nr_wait: prefree segments on each prefree list
 * @bucket_min: no bucket below this one holds a segment
 * @age: the clock segment ages are measured on (dmr_seq_age())
 * @heat: per logical block, its write heat (dmr_heat_get(), 2 bits, four
 *	blocks a byte): how many of its recent writes dmr_temp_classify()
 *	judged short-lived, net of the others; NULL when the map is paged
 *	(table option map_cache: memory stays within the cache) or the
 *	caller keeps none.  In memory only: a load seeds it from the
 *	segments' hot flags (dmr_heat_seed(), a pass over the map).
 *	Only the thread that writes (the module's worker) reads or changes
 *	it, in dmr_temp_classify(): no lock
 *
 * The segment lists make every GC step cost the same on any device size
 * (nothing scans the segment table).  Each is a circular doubly linked
 * list through struct dmr_seg's @next and @prev, in the order segments
 * joined it; a segment's DMR_SEG_LIST_* bits say which one it is on:
 *
 * - the bucket of its valid count: sealed segments GC may collect but for
 *   the move cost (DMR_SEG_GC_MASK is DMR_SEG_USED), so the one with the
 *   fewest valid blocks (dmr_seg_fewest_valid(), greedy GC) is found in
 *   O(1) amortised: @bucket_min only comes down by one when a segment
 *   loses a block, or when a segment joins (once per segment written);
 * - the prefree list of what it waits for (dmr_seg_reuse_wait()): a
 *   checkpoint or a flush completing moves only the segments of the one
 *   list it can change (dmr_map_ckpt_done(), dmr_map_flush_done()), and
 *   freeing looks only at the segments that wait for nothing but their
 *   reads in flight (DMR_REUSE_READY): their counts are the caller's and
 *   change without the map's lock, so they are read when freeing, never
 *   kept in the lists;
 * - the free list, in the order segments became free: dmr_seg_alloc()
 *   takes the first.
 *
 * Every change of a segment's valid count, flags or list goes through
 * dmr-map.c, under the same lock as the rest of the map; the lists hold
 * while @track is on (they are rebuilt by dmr_map_load_states()).
 */
struct dmr_map {
	u32 **pages;
	void *(*page_alloc)(void *ctx, u64 page);
	void *page_ctx;
	u64 nr_pages;
	u64 nr_pages_peak;
	u64 nr_out;
	u64 nr_logical;
	struct dmr_seg *segs;
	u32 nr_segs;
	u32 seg_blocks;
	bool wide;
	u32 page_shift;
	u64 mapped;
	u8 *dirty;
	u64 nr_map_blocks;
	u64 ckpt_seq;
	u64 flush_seq;
	u32 nr_free;
	u32 nr_prefree;
	bool track;
	u32 *lists;
	u32 nr_bucketed;
	u32 nr_wait[DMR_REUSE_WAITS];
	u32 bucket_min;
	struct dmr_age_clock age;
	u8 *heat;
};

/* Write heat (struct dmr_map @heat): saturates at DMR_HEAT_MAX. */
#define DMR_HEAT_MAX	3U

/* Bytes of write heat for @nr_logical blocks: 2 bits each. */
static inline u64 dmr_heat_bytes(u64 nr_logical)
{
	return (nr_logical + 3) >> 2;
}

static inline unsigned int dmr_heat_get(const u8 *heat, u64 lba)
{
	return heat[lba >> 2] >> ((lba & 3) * 2) & DMR_HEAT_MAX;
}

static inline void dmr_heat_set(u8 *heat, u64 lba, unsigned int v)
{
	unsigned int shift = (lba & 3) * 2;

	heat[lba >> 2] = (heat[lba >> 2] & ~(DMR_HEAT_MAX << shift)) | v << shift;
}

void dmr_map_init(struct dmr_map *m, u32 **pages, u32 *flat, u64 nr_logical,
		  struct dmr_seg *segs, u32 nr_segs, u32 seg_blocks, u8 *dirty,
		  u32 *lists);
void dmr_map_init_wide(struct dmr_map *m, bool wide, u32 **pages, u32 *flat,
		       u64 nr_logical, struct dmr_seg *segs, u32 nr_segs,
		       u32 seg_blocks, u8 *dirty, u32 *lists);
int __must_check dmr_map_reserve(struct dmr_map *m, u64 lba, u64 n);

/* Entries of a map page (of a map block): 1024, or 512 in a wide map. */
static inline u32 dmr_map_per_page(const struct dmr_map *m)
{
	return 1U << m->page_shift;
}

/* Bytes of one map entry: 4, or 8 in a wide map. */
static inline u32 dmr_map_entry_size(const struct dmr_map *m)
{
	return m->wide ? DMR_MAP_ENTRY_SIZE_WIDE : DMR_MAP_ENTRY_SIZE;
}

/* The entries page @p holds (its last may be short). */
static inline u32 dmr_map_page_len(const struct dmr_map *m, u64 p)
{
	u64 first = p << m->page_shift;

	return min_t(u64, dmr_map_per_page(m), m->nr_logical - first);
}

/*
 * Entry @i of a map page (4 KiB of 32-bit entries, or of 64-bit ones in
 * a wide map), read once: the read path reads without the lock.
 */
static inline u64 dmr_page_entry(const struct dmr_map *m, const u32 *page, u32 i)
{
	if (m->wide)
		return READ_ONCE(((const u64 *)page)[i]);
	return READ_ONCE(page[i]);
}

/* Store entry @i of a map page, once (a lockless reader may look). */
static inline void dmr_page_set_entry(const struct dmr_map *m, u32 *page, u32 i, u64 e)
{
	if (m->wide)
		WRITE_ONCE(((u64 *)page)[i], e);
	else
		WRITE_ONCE(page[i], (u32)e);
}

/*
 * The map entry of @lba: DMR_UNMAPPED, pba + 1, or DMR_MAP_MISS if its
 * page is out.  Safe without the map's lock: a page is published with
 * smp_store_release() after it was zeroed or filled (dmr_map_reserve(),
 * dmr_map_page_in()), and the entry is read through the pointer read here
 * (an address dependency orders the two reads).
 */
static inline u64 dmr_map_get(const struct dmr_map *m, u64 lba)
{
	const u32 *p = READ_ONCE(m->pages[lba >> m->page_shift]);

	if (!p)
		return DMR_UNMAPPED;
	if (p == DMR_PAGE_OUT)
		return DMR_MAP_MISS;
	return dmr_page_entry(m, p, lba & (dmr_map_per_page(m) - 1));
}

/* The state of map page @p (the map's lock, or the one thread changing it) */
static inline enum dmr_page_state dmr_map_page_state(const struct dmr_map *m, u64 p)
{
	if (!m->pages[p])
		return DMR_PAGE_ABSENT;
	return m->pages[p] == DMR_PAGE_OUT ? DMR_PAGE_EVICTED : DMR_PAGE_RESIDENT;
}

u32 *dmr_map_load_page(struct dmr_map *m, u64 p);
void dmr_map_load_zero(struct dmr_map *m, u64 p);
u32 *dmr_map_evict(struct dmr_map *m, u64 p, unsigned int newest, bool *absent);
int __must_check dmr_map_page_in(struct dmr_map *m, u64 p, u32 *page);

void dmr_map_set(struct dmr_map *m, u64 lba, u64 pba);
void dmr_map_unmap(struct dmr_map *m, u64 lba);
void dmr_seg_birth_mix(const struct dmr_age_clock *c, struct dmr_seg *d, u64 birth);
bool dmr_move_commit(struct dmr_map *m, u64 lba, u64 src, u64 dst);
u32 dmr_map_run(const struct dmr_map *m, u64 lba, u32 max, u64 *first);
int __must_check dmr_map_recount(struct dmr_map *m);
int dmr_map_count_page(const struct dmr_map *m, u64 p, u32 *valid, u64 *mapped);
bool dmr_map_free_mapped(const struct dmr_map *m, u32 *seg);
void dmr_map_load_states(struct dmr_map *m);
void dmr_map_lists_rebuild(struct dmr_map *m);
bool dmr_map_lists_consistent(const struct dmr_map *m);
bool dmr_map_consistent(const struct dmr_map *m);
void dmr_map_ckpt_done(struct dmr_map *m, u64 ckpt_seq);
void dmr_map_flush_done(struct dmr_map *m);

bool dmr_seg_is_free(const struct dmr_seg *s);
u32 dmr_seg_alloc(struct dmr_map *m);
void dmr_seg_open(struct dmr_map *m, u32 seg, u64 seq);
void dmr_seg_large(struct dmr_map *m, u32 seg, u64 lba, u32 csum);
void dmr_seg_seal(struct dmr_map *m, u32 seg);
enum dmr_reuse_wait dmr_seg_reuse_wait(const struct dmr_seg *s, u64 ckpt_seq,
				       u64 flush_seq);
bool dmr_seg_reusable(const struct dmr_seg *s, u64 ckpt_seq, u64 flush_seq,
		      u32 readers);
void dmr_seg_make_free(struct dmr_map *m, u32 seg);
u32 dmr_seg_free_count(const struct dmr_map *m);
void dmr_seg_set_mem(struct dmr_map *m, u32 seg, bool mem);
u32 dmr_seg_fewest_valid(struct dmr_map *m);

/*
 * The prefree segments that wait for nothing but their reads in flight:
 * @m->nr_wait[DMR_REUSE_READY] of them from dmr_seg_ready_first(), each
 * followed by dmr_seg_next() (read @next before freeing a segment).
 */
static inline u32 dmr_seg_ready_first(const struct dmr_map *m)
{
	return m->lists[m->seg_blocks + 1 + DMR_REUSE_READY];
}

static inline u32 dmr_seg_next(const struct dmr_map *m, u32 seg)
{
	return m->segs[seg].next;
}

/*
 * The GC candidate that has had @valid valid blocks longest, or
 * DMR_NO_SEGMENT; the others of its bucket follow by dmr_seg_next(),
 * round to it again.
 */
static inline u32 dmr_seg_bucket_first(const struct dmr_map *m, u32 valid)
{
	return m->lists[valid];
}

/* The data-area block at offset @off of segment @seg (64-bit: wide maps). */
static inline u64 dmr_seg_pba(const struct dmr_map *m, u32 seg, u32 off)
{
	return (u64)seg * m->seg_blocks + off;
}

static inline u32 dmr_pba_segment(const struct dmr_map *m, u64 pba)
{
	/* (a 32-bit division where it will do: the common case, and cheaper) */
	if (pba <= 0xffffffffULL)
		return lower_32_bits(pba) / m->seg_blocks;
	return div64_u64(pba, m->seg_blocks);
}

/* The offset of data-area block @pba in its segment. */
static inline u32 dmr_pba_offset(const struct dmr_map *m, u64 pba)
{
	return (u32)(pba - (u64)dmr_pba_segment(m, pba) * m->seg_blocks);
}

void dmr_seg_gc_refuse(struct dmr_map *m, u32 seg, u32 why);
u32 dmr_seg_gc_retry_all(struct dmr_map *m);

bool dmr_map_ready_reusable(const struct dmr_map *m, dmr_readers_fn readers,
			    const void *ctx);

#endif /* DMR_MAP_H */
