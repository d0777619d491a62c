// SPDX-License-Identifier: GPL-2.0-only
/*
 * remap-sim - write-amplification simulator for dm-remap's log and GC.
 *
 *   remap-sim [--device-mib N | --segments N] [--segment-blocks S]
 *             [--op PCT[,PCT...]] [--workload W[,W...]]
 *             [--warmup K] [--overwrites K] [--single-head] [--seed N]
 *             [--gc-low N] [--gc-high N] [--gc-params R,L,H,B] [--check N] [--wide]
 *             [--json] [--verbose]
 *
 * W is uniform, hot80, hot95, shift80, cold70, seq, large, mix50, mix50s or
 * trace:FILE; every workload runs at every over-provisioning given, one
 * run each.
 *
 * The map, the segment table and every GC decision are the module's own
 * pure code, built from ../dm-remap/ (dmr-map.c, dmr-policy.c, dmr-writer.c,
 * dmr-log.c, dmr-format.c): the victim choice, watermarks, throttle, GC
 * actions and the hot/cold choice are exactly what the module runs.  This
 * file only stands in for the I/O: it drives the pure functions the way
 * dmr-write.c, dmr-gc.c and dmr-ckpt.c do (heads, units, reservation of the
 * next segment, foreground GC when a user head may not allocate, one
 * background GC step after each request, the log flushes and checkpoints
 * GC asks for (a flush seals every head; a checkpoint also writes the map
 * blocks changed since its slot was last written), freeing what the reuse
 * rule allows), with no user flushes and no periodic checkpoint.
 *
 * GC finds the logical block of a victim's data block in the unit
 * summaries on the device; the simulator keeps one array, "the logical
 * block written at each physical block", for that disk content.
 *
 * --single-head is the baseline: one head takes every write, user and
 * relocation (a single log), and every victim is chosen greedily.
 *
 * Each run fills the device sequentially, writes --warmup logical
 * capacities of the workload, then measures over --overwrites more.  In
 * the measurement window:
 *
 *   waf            device data blocks written (user and relocated) over
 *                  user blocks written
 *   waf_summaries  the same with the unit summary blocks
 *   waf_all        the same with the checkpoints' blocks too (map, CRC and
 *                  segment tables, header): everything the target writes
 *   idle_avg       segments holding no data when a victim is chosen (free,
 *                  prefree, the heads' open and reserved ones)
 *
 * For the uniform workload, analytic is greedy GC's write amplification
 * under uniform random writes (Desnoyers, SYSTOR 2012), A = 1 / (1 - x),
 * x = exp(-a (1 - x)), a = 1 / (1 - op), and analytic_eff the same for the
 * spare the run really had (segments minus idle_avg, summaries taken out):
 * analytic measures the design, analytic_eff the victim choice alone.  For
 * hot80 and hot95, bound is hot and cold data kept perfectly apart, each
 * greedy over its own share of the spare, split the best way.
 *
 * Output: one line per run (key=value, or a JSON object with --json), then
 * a closing line.  Exit status: 0 success, 1 a check failed or GC was
 * stuck, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "dmr-codec.h"
#include "dmr-map.h"
#include "dmr-msg.h"
#include "dmr-policy.h"
#include "dmr-waf.h"
#include "dmr-writer.h"

const char *dmr_prog = "remap-sim";

/* --warmup auto: rounds of 1/SIM_ROUNDS logical capacity ... */
#define SIM_ROUNDS	8U
/* ... until the WAF of the last quarter (>= SIM_SETTLE_ROUNDS) is that of the one before */
#define SIM_SETTLE_ROUNDS	4U
/* ... or this many logical capacities were written */
#define SIM_MAX_WARMUP	100
/* rev[] entry of a block that holds no data block of the current log */
#define SIM_NO_LBA	0xffffffffU


static void usage(void)
{
	printf("Usage: %s [options]\n"
	       "Simulate dm-remap's log heads and GC (the module's own policy code) and\n"
	       "measure steady-state write amplification.\n\n"
	       "  --device-mib N         device size in MiB (geometry as remapctl format)\n"
	       "  --segments N           or: number of segments (default 4096)\n"
	       "  --segment-blocks S     blocks (4 KiB) per segment (default 256)\n"
	       "  --op PCT[,PCT...]      over-provisioning percent (default 10)\n"
	       "  --workload W[,W...]    uniform, hot80, hot95, shift80, cold70, seq,\n"
	       "                         large (a segment's blocks at random aligned\n"
	       "                         places), mix50 (half the bytes large and\n"
	       "                         sequential, half 4 KiB random), mix50s (the\n"
	       "                         same, each in a half of the space) or\n"
	       "                         trace:FILE (default uniform); shift80: 80/20 whose\n"
	       "                         hot fifth moves every 2 capacities\n"
	       "  --warmup K|auto        logical capacities written before measuring\n"
	       "                         (default 2, after a sequential fill); auto: until\n"
	       "                         the WAF settles (see --settle)\n"
	       "  --settle PCT           auto warm-up: the WAF of the last half capacity\n"
	       "                         within PCT%% of the half before (default 1), and\n"
	       "                         the data left where the fill wrote it below a\n"
	       "                         tenth of the capacity, or not moving\n"
	       "  --overwrites K         logical capacities measured (default 3)\n"
	       "  --single-head          the baseline: one head (one log) for user writes\n"
	       "                         and relocations, greedy victims\n"
	       "  --seed N               random seed (default 1)\n"
	       "  --gc-low N, --gc-high N  GC watermarks (segments), as the table's\n"
	       "                         gc_low and gc_high (default: the module's)\n"
	       "  --gc-params R,L,H,B    what-if: all four GC parameters (reserve, low,\n"
	       "                         high, batch) instead of dmr_gc_params_default()\n"
	       "  --recover clock|legacy a crash and recovery after the warm-up: the\n"
	       "                         sequence jumps 2^32 (rule 4); clock: ages leave\n"
	       "                         the jump out and the hot flags and temperature\n"
	       "                         estimate are kept (the module); legacy: ages\n"
	       "                         count it and both are lost (before item 14)\n"
	       "  --no-heat              what-if: no write heat per logical block (the\n"
	       "                         module with a map_cache; before issue 41)\n"
	       "  --oracle               what-if: user writes go to the hot head by the\n"
	       "                         workload's own hot set (hot80, hot95, shift80):\n"
	       "                         what a perfect classifier would do\n"
	       "  --large-head           issue 41, goal 1: the whole segments of a write\n"
	       "                         (dmr_large_split()) each take a segment of\n"
	       "                         their own, written whole with no summary in it\n"
	       "                         (its record in a cold head's summary): the\n"
	       "                         module's default since format 5 (without it:\n"
	       "                         table option no_large_writes)\n"
	       "  --gc-sort              what-if (issue 41, goal 2): GC moves a victim's\n"
	       "                         valid blocks in logical order\n"
	       "  --defrag K[,N]         what-if (issue 41, goal 2): after the measured\n"
	       "                         writes, idle, the 1 MiB ranges read in more than\n"
	       "                         N I/Os [4] are rewritten in logical order through\n"
	       "                         the cold GC head, up to K capacities; the 1 MiB\n"
	       "                         reads' I/Os before and after, and GC's moves\n"
	       "  --block-birth          what-if: GC knows when users wrote each block,\n"
	       "                         and sends a hot victim's blocks older than twice\n"
	       "                         the temperature estimate to the cold GC head (a\n"
	       "                         summary word per block; not in format 3)\n"
	       "  --birth-group G        --block-birth with one birth per G blocks of a\n"
	       "                         GC unit, their mean (0: one per unit) [1]\n"
	       "  --map-cache PCT        only PCT%% of the map's pages in memory (CLOCK,\n"
	       "                         dmr_page_clock_*(); a page dirty for a\n"
	       "                         checkpoint slot stays until checkpoints clean\n"
	       "                         it): pages leave (dmr_map_evict()) and are read\n"
	       "                         back from the slots' copies, checked against\n"
	       "                         the simulator's; map lookups, misses (a 4 KiB\n"
	       "                         read each), evictions and checkpoints forced,\n"
	       "                         per user block\n"
	       "  --gc-bitmap            with --map-cache: GC tells a block still valid\n"
	       "                         by a bit per data block in memory, and looks\n"
	       "                         the map up only for the blocks it moves\n"
	       "  --wide                 a device formatted --wide: 64-bit block numbers\n"
	       "                         in every unit's summary (504 blocks a unit, 252\n"
	       "                         relocated) and in the map (8 bytes a block, 512\n"
	       "                         a page: twice the checkpoints' map blocks)\n"
	       "  --exact-cb             what-if: background victims by a scan of every\n"
	       "                         segment (the best cost-benefit score), the\n"
	       "                         reference for dmr_gc_victim()'s buckets\n"
	       "  --check N              check map consistency every N requests too\n"
	       "  --json                 one JSON object per line\n"
	       "  --verbose              per head: segments filled, and what GC found in\n"
	       "                         them (valid fraction, age), on stderr\n"
	       "  --timing               CPU cost in the measurement window: ns per user\n"
	       "                         block, per GC step and per victim choice\n"
	       "  -h, --help             this text\n\n"
	       "A trace file holds one write per line, \"offset length\" in bytes, or\n"
	       "blkparse text output (writes of one action: Q, else D, else C).\n"
	       "Offsets wrap around the logical capacity.  Exit status: 0 success,\n"
	       "1 a check failed, 2 bad usage.\n", dmr_prog);
}

/* ---- random numbers: splitmix64 ---- */

static u64 rng_state;

static u64 rng_next(void)
{
	u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static u64 rng_below(u64 n)
{
	return (u64)(((unsigned __int128)rng_next() * n) >> 64);
}

/* ---- traces ---- */

struct req {
	u64 lba;
	u32 nr;
};

struct trace {
	struct req *r;
	size_t n, cap;
};

static void trace_add(struct trace *t, u64 lba, u64 nr)
{
	while (nr) {
		u32 n = nr > (1U << 20) ? 1U << 20 : (u32)nr;

		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 4096;
			t->r = realloc(t->r, t->cap * sizeof(*t->r));
			if (!t->r)
				die("out of memory");
		}
		t->r[t->n].lba = lba;
		t->r[t->n++].nr = n;
		lba += n;
		nr -= n;
	}
}

/*
 * A blkparse event line: "maj,min cpu seq time pid ACTION RWBS SECTOR + NR ...".
 * Return: -1 if it is not one, 0 if it is not a write, else its action letter.
 */
static int blkparse_line(const char *line, u64 *sector, u64 *nsect)
{
	char dev[32], act[8], rwbs[16];
	unsigned long long sec, nr, sq;
	unsigned int cpu, pid;
	double time;

	if (sscanf(line, "%31s %u %llu %lf %u %7s %15s %llu + %llu", dev, &cpu, &sq,
		   &time, &pid, act, rwbs, &sec, &nr) != 9 || !strchr(dev, ','))
		return -1;
	if (strlen(act) != 1 || !strchr(rwbs, 'W') || !nr)
		return 0;
	*sector = sec;
	*nsect = nr;
	return act[0];
}

/* "offset length" in bytes.  Return: false if the line is not that. */
static bool plain_line(const char *p, u64 *off, u64 *len)
{
	char *end;

	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	*off = strtoull(p, &end, 0);
	if (errno || (*end != ' ' && *end != '\t'))
		return false;
	p = end;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	*len = strtoull(p, &end, 0);
	if (errno || !*len || *off + *len < *off)
		return false;
	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	return !*end;
}

/* Blocks [@first, @end) covering bytes [@from, @from + @len). */
static void trace_add_bytes(struct trace *t, u64 from, u64 len)
{
	u64 first = from / DMR_BLOCK_SIZE;

	trace_add(t, first, (from + len + DMR_BLOCK_SIZE - 1) / DMR_BLOCK_SIZE - first);
}

/*
 * Load a trace; byte ranges become whole 4 KiB blocks.  In blkparse output
 * every request shows up once per event (queued, dispatched, completed...):
 * the writes of one action are taken, Q if there are any, else D, else C,
 * and every other line (other events, the summary) is skipped.
 */
static void trace_load(const char *path, struct trace *t)
{
	static const char pick[] = "QDC";
	struct trace bp[3] = {};
	unsigned long lineno = 0, bad = 0;
	bool plain = false, blk = false;
	size_t cap = 0;
	char *line = NULL;
	FILE *f;
	int i;

	f = fopen(path, "r");
	if (!f)
		usage_error("cannot open trace %s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		u64 a, b;
		char *p = line;
		int act;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		act = blkparse_line(p, &a, &b);
		if (act >= 0) {
			const char *k = act ? strchr(pick, act) : NULL;

			if (k)
				trace_add_bytes(&bp[k - pick], a << 9, b << 9);
			blk = true;
		} else if (plain_line(p, &a, &b)) {
			trace_add_bytes(t, a, b);
			plain = true;
		} else if (!bad) {
			bad = lineno;
		}
	}
	free(line);
	fclose(f);
	if (plain && blk)
		usage_error("%s: mixes \"offset length\" lines and blkparse output", path);
	if (bad && !blk)
		usage_error("%s:%lu: expected \"offset length\" in bytes, or blkparse output",
			    path, bad);
	for (i = 0; blk && i < 3; i++) {
		if (bp[i].n) {
			*t = bp[i];
			bp[i].r = NULL;
			break;
		}
	}
	for (i = 0; i < 3; i++)
		free(bp[i].r);
	if (!t->n)
		usage_error("%s: no writes in trace", path);
}

/* ---- the simulated target ---- */

/* A log head: struct dmr_head's position, write pointer and open unit. */
struct sim_head {
	u32 seg;		/* pos.segment */
	u32 offset;		/* pos.offset: where the next unit's summary goes */
	u32 next;		/* pos.next_segment */
	u32 seg_written;
	u32 wp;
	bool unit_open;
	struct dmr_unit unit;
};

struct sim_counters {
	u64 user;		/* user data blocks */
	u64 moved;		/* blocks relocated by GC */
	u64 summaries;		/* units closed */
	u64 gc_runs;		/* victims collected */
	u64 gc_urgent;		/* of which while a user head waited */
	u64 ckpts;		/* checkpoints */
	u64 flushes;		/* log flushes GC asked for */
	u64 ckpt_blocks;	/* blocks they wrote (map, CRC and segment tables, header) */
	u64 throttled;		/* user reservations that had to wait */
	u64 hot;		/* user requests to the hot head */
	u64 extents;		/* --large-head: segments written whole by users */
	u64 free_sum;		/* free segments, summed after each request */
	u64 prefree_sum;	/* prefree segments, likewise */
	u64 idle_sum;		/* segments holding no data, summed at each collection */
	u64 gc_steps;		/* GC actions (collect, flush, checkpoint) */
	u64 greedy_steps;	/* of which with a greedy victim choice */
	u64 decide_ns;		/* time choosing them: free, count, victim */
	u64 decide_greedy_ns;	/* of which for greedy steps */
	u64 step_ns;		/* time in them, the action included */
	u64 map_touch;		/* --map-cache: map pages looked up */
	u64 map_miss;		/* of which out of memory: a 4 KiB read */
	u64 map_forced;		/* checkpoints written to make room in it */
	u64 map_evicted;	/* pages taken out of memory (dmr_map_evict()) */
	u64 map_copied;		/* blocks of pages out copied slot to slot */
	u64 defrag;		/* --defrag: blocks rewritten in logical order */
};

/* Per head, for --verbose: what GC found in the segments it wrote. */
struct sim_head_stats {
	u64 victims;		/* its segments collected */
	u64 victim_valid;	/* valid blocks they held */
	u64 victim_age;		/* their age (sequence numbers) when collected */
	u64 segs;		/* segments it filled */
};

struct sim {
	struct dmr_map m;
	struct dmr_page_clock pc;	/* --map-cache: the pages in memory */
	u32 *pc_ring;
	u8 *pc_state;
	u8 *pc_ref;
	bool paged;
	bool gc_bitmap;		/* --gc-bitmap */
	bool pc_over;		/* the cache holds more than pc.cap: checkpoint */
	u32 *l2p;	/* the map's pages, one array, 4 KiB a page (dmr_map_init_wide()) */
	u32 *slot_img[2];	/* --map-cache: the map as each checkpoint slot holds it */
	u64 map_pages_max;	/* --map-cache: most map pages in memory after a request */
	u32 **pages;
	u32 *rev;		/* per data-area block: lba written there */
	u64 *live;		/* --gc-sort: a victim's valid blocks, lba << 32 | pba */
	u64 *blk_birth;		/* --block-birth: per data-area block, its user write */
	u8 *owner;		/* per segment: the head that last filled it */
	struct sim_head_stats hs[DMR_NR_HEADS];
	bool stats;		/* collect hs[] (measurement window) */
	struct sim_head heads[DMR_NR_HEADS];
	struct dmr_gc_params p;
	struct dmr_temp temp;
	u64 seq;
	unsigned int ckpt_slot;
	u64 ckpt_fixed;		/* CRC table, segment table and header blocks */
	bool gc_active;
	bool single;
	bool timed;		/* time GC steps (the measurement window) */
	u8 *filled;		/* --warmup auto: per lba, not written since the fill */
	u64 fill_left;		/* how many */
	bool exact_cb;		/* --exact-cb */
	bool block_birth;	/* --block-birth */
	bool large_head;	/* --large-head */
	bool gc_sort;		/* --gc-sort */
	u64 oracle_hot;		/* --oracle: the hot set's blocks (0: no oracle) */
	const u64 *oracle_base;	/* and where it starts (shift80's moves) */
	u32 birth_group;	/* --birth-group: blocks per birth record, 0 a unit */
	struct sim_counters c;
};

static u64 now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (u64)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sim_fail(struct sim *s, const char *what)
{
	die("%s (seq %" PRIu64 ", %u free, %u prefree segments)", what, s->seq,
	    s->m.nr_free, s->m.nr_prefree);
}

/* dmr_head_enter() */
static void head_enter(struct sim *s, struct sim_head *h, u32 seg)
{
	h->seg = seg;
	h->offset = 0;
	h->next = DMR_NO_SEGMENT;
	h->seg_written = 0;
	h->unit_open = false;
	dmr_seg_open(&s->m, seg, s->seq + 1);
	dmr_seg_set_head(&s->m.segs[seg], h - s->heads);
	s->owner[seg] = h - s->heads;
	if (s->stats)
		s->hs[h - s->heads].segs++;
}

/*
 * --birth-group G: what a coarser record of the user-write time would
 * give.  A GC head's unit keeps one birth per G of its blocks (0: one for
 * the whole unit, as a field of its summary would), the mean of theirs.
 * A user head's unit needs none: its blocks were written at its sequence.
 */
static void birth_groups(struct sim *s, struct sim_head *h)
{
	u32 base = h->seg * s->m.seg_blocks, g = s->birth_group, i, j, first;
	u64 sum = 0;

	for (first = i = h->offset + 1; i < h->wp; i++) {
		sum += s->blk_birth[base + i];
		if (i + 1 < h->wp && (!g || i + 1 - first < g))
			continue;
		for (j = first; j <= i; j++)
			s->blk_birth[base + j] = sum / (i + 1 - first);
		sum = 0;
		first = i + 1;
	}
}

/* dmr_close_unit(): the unit takes the next sequence number */
static void close_unit(struct sim *s, struct sim_head *h)
{
	if (s->blk_birth && s->birth_group != 1 && dmr_head_is_gc(h - s->heads))
		birth_groups(s, h);
	h->unit.seq = ++s->seq;
	h->offset = h->wp;
	h->unit_open = false;
	s->c.summaries++;
}

/* dmr_seal() */
static void seal(struct sim *s, struct sim_head *h, bool sync)
{
	enum dmr_seal_action act;
	u32 nr;
	bool done;

	if (h->unit_open && (h->unit.nr_blocks || h->unit.nr_discards))
		close_unit(s, h);
	h->unit_open = false;
	nr = h->offset - h->seg_written;
	done = dmr_seg_done(h->offset, s->m.seg_blocks);
	act = dmr_seal_action(sync, nr, done);
	if (act == DMR_SEAL_NONE || act == DMR_SEAL_FLUSH)
		return;
	if (done && h->next == DMR_NO_SEGMENT)
		sim_fail(s, "log head without a next segment");
	h->seg_written = h->offset;
	if (!done)
		return;
	dmr_seg_seal(&s->m, h->seg);
	head_enter(s, h, h->next);
}

/* dmr_gc_free_ready(), with no read in flight: the map's ready list */
static void free_ready(struct sim *s)
{
	u32 n = s->m.nr_wait[DMR_REUSE_READY], i, next;

	for (i = dmr_seg_ready_first(&s->m); n; n--, i = next) {
		next = dmr_seg_next(&s->m, i);
		if (!dmr_seg_reusable(&s->m.segs[i], s->m.ckpt_seq, s->m.flush_seq, 0))
			sim_fail(s, "a segment on the ready list is not reusable");
		dmr_seg_make_free(&s->m, i);
	}
}

/* seal every head (dmr_flush_all()), then the device flush */
static void flush_log(struct sim *s)
{
	unsigned int i;

	for (i = 0; i < DMR_NR_HEADS; i++)
		seal(s, &s->heads[i], true);
	dmr_map_flush_done(&s->m);
}

/* Bytes of map page @p's entries (the last one is short) */
static size_t page_bytes(const struct sim *s, u64 p)
{
	return (size_t)dmr_map_page_len(&s->m, p) * dmr_map_entry_size(&s->m);
}

/* Map page @p's place in a flat array of pages (the map's, or a slot's) */
static u32 *page_at(u32 *flat, u64 p)
{
	return flat + p * DMR_MAP_NARROW_ENTRIES;	/* 4 KiB a page */
}

/*
 * The entry of @lba in the flat array behind the pages, whether its page
 * is in or out (--gc-bitmap's stand-in for a bit per block), and where it
 * is: a page's entries are 4 or 8 bytes, a page every 4 KiB, so entry
 * @lba is at @lba times the entry's size.
 */
static u64 flat_entry(const struct sim *s, u64 lba)
{
	return s->m.wide ? ((const u64 *)s->l2p)[lba] : s->l2p[lba];
}

static const void *flat_addr(const struct sim *s, u64 lba)
{
	return (const u8 *)s->l2p + lba * dmr_map_entry_size(&s->m);
}

/*
 * --map-cache: map page @p as checkpoint slot @slot now holds it.  A page
 * out of memory left once the newest slot (the other one) held it
 * (dmr_map_evict()): its block is copied across, as dmr_write_map() does.
 */
static void slot_write(struct sim *s, unsigned int slot, u64 p)
{
	u32 *dst = page_at(s->slot_img[slot], p);

	switch (dmr_map_page_state(&s->m, p)) {
	case DMR_PAGE_ABSENT:
		memset(dst, 0, page_bytes(s, p));
		break;
	case DMR_PAGE_RESIDENT:
		memcpy(dst, s->m.pages[p], page_bytes(s, p));
		break;
	default:
		if (s->m.dirty[p] & DMR_DIRTY_SLOT(slot ^ 1))
			sim_fail(s, "map cache: a page out of memory is not in the newest slot");
		memcpy(dst, page_at(s->slot_img[slot ^ 1], p), page_bytes(s, p));
		s->c.map_copied++;
	}
}

/*
 * dmr_checkpoint(): seal every head (a flush), write the slot (the map
 * blocks changed since the slot was last written, as dmr_write_map(), and
 * the whole CRC table, segment table and header), then the reuse rule.
 * Runs of all-zero map blocks go down as write-zeroes in the module; they
 * are counted as written here (after the fill there are none).
 */
static void checkpoint(struct sim *s)
{
	u8 bit = DMR_DIRTY_SLOT(s->ckpt_slot);
	u64 p;

	flush_log(s);
	for (p = 0; p < s->m.nr_map_blocks; p++) {
		if (s->m.dirty[p] & bit) {
			if (s->paged)
				slot_write(s, s->ckpt_slot, p);
			s->m.dirty[p] &= ~bit;
			s->c.ckpt_blocks++;
		}
	}
	s->c.ckpt_blocks += s->ckpt_fixed;
	s->ckpt_slot ^= 1;
	dmr_map_ckpt_done(&s->m, s->m.ckpt_seq + 1);
	free_ready(s);
	s->c.ckpts++;
}

static int gc_run(struct sim *s, bool urgent);

/*
 * --map-cache: the cache's victim @p leaves memory for real
 * (dmr_map_evict()).  Its entries stay in the flat array the pages live
 * in, untouched while it is out: the simulator's own copy of the map,
 * which page_in() compares with what the slots hold.  A page in the
 * cache that was only looked up (absent, never allocated) just leaves.
 */
static void evict(struct sim *s, u32 p)
{
	bool absent;

	if (!dmr_map_evict(&s->m, p, s->ckpt_slot ^ 1, &absent)) {
		if (dmr_map_page_state(&s->m, p) != DMR_PAGE_ABSENT)
			sim_fail(s, "map cache: its victim cannot leave memory");
		return;
	}
	s->c.map_evicted++;
}

/*
 * --map-cache: read map page @p back from the newest slot, as the module
 * would (dmr_map_page_in()).  An evicted page is current in the newest
 * slot, and in the other one too unless it is dirty for it: each must
 * hold what it held when it left.
 */
static void page_in(struct sim *s, u64 p)
{
	u32 *mem = page_at(s->l2p, p), *slot;
	size_t bytes = page_bytes(s, p);
	unsigned int i;

	for (i = 0; i < 2; i++)
		if (!(s->m.dirty[p] & DMR_DIRTY_SLOT(i)) &&
		    memcmp(page_at(s->slot_img[i], p), mem, bytes))
			sim_fail(s, "map cache: a page read back from a slot is not the one evicted");
	if (s->m.dirty[p] & DMR_DIRTY_SLOT(s->ckpt_slot ^ 1))
		sim_fail(s, "map cache: a page out of memory is dirty for the newest slot");
	slot = page_at(s->slot_img[s->ckpt_slot ^ 1], p);
	memcpy(mem, slot, bytes);
	if (dmr_map_page_in(&s->m, p, mem))
		sim_fail(s, "map cache: a page read back points outside the data area");
}

/*
 * --map-cache: a map lookup of @lba's page, which is in memory after it
 * (or absent: nothing of it mapped).  A page not in the cache joins it
 * after a victim left (dmr_page_clock_victim(), evict()); one that is
 * out is read back (page_in(), counted).  When every page in the cache is
 * dirty for a checkpoint slot there is no victim, and the page comes in
 * over the limit until map_cache_trim() writes checkpoints.
 */
static void map_touch(struct sim *s, u64 lba, bool count)
{
	u32 page = lba >> s->m.page_shift, victim;

	if (!s->paged)
		return;
	s->c.map_touch += count;
	if (dmr_page_clock_touch(&s->pc, page))
		return;
	if (s->pc.nr >= s->pc.cap) {
		victim = dmr_page_clock_victim(&s->pc, s->m.dirty, s->ckpt_slot ^ 1);
		if (victim == DMR_NO_PAGE)
			s->pc_over = true;
		else
			evict(s, victim);
	}
	dmr_page_clock_insert(&s->pc, page);
	if (dmr_map_page_state(&s->m, page) == DMR_PAGE_EVICTED) {
		s->c.map_miss++;
		page_in(s, page);
	}
}

/*
 * The entry of @lba, its page in memory first (map_touch()); not counted
 * as a lookup if !@count (a user write's, counted with its first block).
 */
static u64 map_lookup(struct sim *s, u64 lba, bool count)
{
	u64 e;

	map_touch(s, lba, count);
	e = dmr_map_get(&s->m, lba);
	if (e == DMR_MAP_MISS)
		sim_fail(s, "map cache: a lookup missed after its page was read in");
	return e;
}

/*
 * @lba's page in memory, allocated if it was absent, before a change;
 * counted as a lookup if @count (not if it was just looked up).
 */
static void map_ready(struct sim *s, u64 lba, bool count)
{
	map_touch(s, lba, count);
	if (s->paged && (dmr_map_reserve(&s->m, lba, 1) ||
			 dmr_map_page_state(&s->m, lba >> s->m.page_shift) !=
			 DMR_PAGE_RESIDENT))
		sim_fail(s, "map cache: a page to change is not in memory");
}

/* After a request: checkpoints until the cache is back within its limit. */
static void map_cache_trim(struct sim *s)
{
	unsigned int tries;
	u32 victim;

	for (tries = 0; s->pc_over && tries < 3; tries++) {
		checkpoint(s);
		s->c.map_forced++;
		while (s->pc.nr > s->pc.cap &&
		       (victim = dmr_page_clock_victim(&s->pc, s->m.dirty, s->ckpt_slot ^ 1)) != DMR_NO_PAGE)
			evict(s, victim);
		s->pc_over = s->pc.nr > s->pc.cap;
	}
	if (s->pc_over)
		sim_fail(s, "map cache: no clean page after three checkpoints");
}

/*
 * dmr_reserve_next().  @rule is the head whose allocation rule applies:
 * @hid itself, except in the one-log baseline, where relocations go to
 * the user head under GC's rule.
 */
static void reserve_next(struct sim *s, unsigned int hid, unsigned int rule)
{
	struct sim_head *h = &s->heads[hid];
	bool waited = false;
	u32 seg;

	while (!dmr_head_may_alloc(&s->p, rule, s->m.nr_free)) {
		if (dmr_head_is_gc(rule))
			sim_fail(s, "GC has no free segment");
		if (!waited)
			s->c.throttled++;
		waited = true;
		if (gc_run(s, true) < 0)
			sim_fail(s, "no space can be freed (GC stuck)");
		if (h->next != DMR_NO_SEGMENT)
			return;	/* one log: GC went on in this head meanwhile */
	}
	seg = dmr_seg_alloc(&s->m);
	if (seg == DMR_NO_SEGMENT)
		sim_fail(s, "no free segment to reserve");
	h->next = seg;
}

/* dmr_head_room(); @rule: see reserve_next() */
static u32 head_room(struct sim *s, unsigned int hid, u32 want, unsigned int rule)
{
	struct sim_head *h = &s->heads[hid];
	u32 seg_blocks = s->m.seg_blocks, n;

	for (;;) {
		if (!dmr_unit_takes_block(h->unit_open, &h->unit, h->wp, seg_blocks)) {
			if (h->unit_open) {
				seal(s, h, false);
				continue;
			}
			dmr_unit_reset(&h->unit, dmr_unit_flags(dmr_head_is_gc(hid) ||
								s->single, s->m.wide));
			h->unit_open = true;
			h->wp = h->offset + 1;
			s->rev[h->seg * seg_blocks + h->offset] = SIM_NO_LBA;
		}
		n = want ? dmr_write_chunk(&h->unit, h->wp, seg_blocks, want) : 0;
		if (!dmr_head_needs_next(h->next, h->wp + n, seg_blocks))
			return n;
		reserve_next(s, hid, rule);
	}
}

/*
 * dmr_gc_move().  In the one-log baseline relocations join the user head's
 * log, whose units all take two summary words per block (see user_write()).
 */
static void gc_move(struct sim *s, unsigned int hid, u64 lba, u32 src)
{
	struct sim_head *h = &s->heads[hid];
	u32 dst;

	head_room(s, hid, 1, s->single ? DMR_HEAD_GC : hid);
	dst = h->seg * s->m.seg_blocks + h->wp;
	if (dmr_map_page_state(&s->m, lba >> s->m.page_shift) != DMR_PAGE_RESIDENT)
		sim_fail(s, "GC moves a block whose map page is not in memory");
	if (!dmr_move_commit(&s->m, lba, src, dst))
		return;
	h->unit.lba[h->unit.nr_blocks] = lba;
	h->unit.src[h->unit.nr_blocks++] = src;
	s->rev[dst] = lba;
	if (s->blk_birth)
		s->blk_birth[dst] = s->blk_birth[src];
	h->wp++;
	s->c.moved++;
}

/*
 * --block-birth, a what-if the module cannot do in format 3: GC knows the
 * time each block was written by the user (as a summary word per block
 * would tell it), and the blocks of a hot victim older than twice the
 * temperature estimate's lifetime go to the cold GC head one by one,
 * instead of the whole victim by its segment's mean birth (dmr_gc_head()).
 */
static unsigned int block_head(struct sim *s, unsigned int hid, u32 pba)
{
	const struct dmr_seg *v = &s->m.segs[pba / s->m.seg_blocks];

	if (!s->block_birth || s->single || !(v->flags & DMR_SEG_HOT) ||
	    !s->temp.threshold)
		return hid;
	return dmr_seq_age(&s->m.age, s->blk_birth[pba], s->seq) > 2 * s->temp.threshold ?
	       DMR_HEAD_GC : DMR_HEAD_GC_HOT;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * dmr_gc_collect(): move every block the map still points at.  --gc-sort,
 * a what-if for issue 41's goal 2: a victim's valid blocks move in logical
 * order, not in the order the victim holds them.
 */
static void gc_collect(struct sim *s, u32 seg)
{
	unsigned int hid = s->single ? DMR_HEAD_HOT :
			   dmr_gc_head(&s->m, &s->m.segs[seg], s->seq, &s->temp);
	u32 base = seg * s->m.seg_blocks, i, nr;

	/* free, prefree, and the heads' open and reserved segments */
	s->c.idle_sum += s->m.nr_free + s->m.nr_prefree + DMR_NR_HEADS;
	for (i = 0; i < DMR_NR_HEADS; i++)
		s->c.idle_sum += s->heads[i].next != DMR_NO_SEGMENT;
	if (s->stats) {
		struct sim_head_stats *hs = &s->hs[s->owner[seg]];

		hs->victims++;
		hs->victim_valid += s->m.segs[seg].valid;
		hs->victim_age += dmr_seq_age(&s->m.age, s->m.segs[seg].seq, s->seq);
	}
	/* the map entries looked up below, fetched at once (a simulator's speed) */
	for (i = 0; i < s->m.seg_blocks; i++) {
		u32 lba = s->rev[base + i];

		if (lba != SIM_NO_LBA) {
			__builtin_prefetch(flat_addr(s, lba), 1);
			__builtin_prefetch(&s->m.dirty[lba >> s->m.page_shift], 1);
		}
	}
	for (i = 0, nr = 0; i < s->m.seg_blocks; i++) {
		u32 lba = s->rev[base + i];

		if (lba == SIM_NO_LBA)
			continue;
		/*
		 * Is it still there?  A map lookup; or with --gc-bitmap, a
		 * bit per block says (the simulator's own copy of the map
		 * stands in for it), and only a block moved is looked up.
		 */
		if (s->gc_bitmap ? flat_entry(s, lba) == base + i + 1 :
		    map_lookup(s, lba, true) == base + i + 1) {
			if (s->gc_sort) {	/* moved below, in logical order */
				s->live[nr++] = (u64)lba << 32 | (base + i);
				continue;
			}
			map_ready(s, lba, s->gc_bitmap);	/* the move changes the map */
			gc_move(s, block_head(s, hid, base + i), lba, base + i);
		}
	}
	if (nr)
		qsort(s->live, nr, sizeof(*s->live), cmp_u64);
	for (i = 0; i < nr; i++) {
		u32 lba = s->live[i] >> 32, src = (u32)s->live[i];

		map_ready(s, lba, s->gc_bitmap);
		gc_move(s, block_head(s, hid, src), lba, src);
	}
	s->c.gc_runs++;
	if (s->m.segs[seg].valid)
		sim_fail(s, "GC left valid blocks in its victim");
}

/*
 * dmr_gc_prefree_waiting(): prefree segments waiting for a checkpoint
 * (@ckpt) and for a flush only (@flush), the counts of the map's prefree
 * lists.  With no read in flight, one that waits for neither was freed by
 * free_ready() after the flush or checkpoint that made it so.
 */
static void prefree_waiting(struct sim *s, u32 *ckpt, u32 *flush)
{
	*ckpt = s->m.nr_wait[DMR_REUSE_CKPT];
	*flush = s->m.nr_wait[DMR_REUSE_FLUSH];
	if (s->m.nr_wait[DMR_REUSE_READY])
		sim_fail(s, "a reusable segment was not freed");
}

/*
 * The same by a scan of the segment table (what dmr_gc_prefree_waiting()
 * did before the lists): a check of the lists' counts.
 */
static void prefree_scan(struct sim *s)
{
	u32 i, n[DMR_REUSE_WAITS] = {};

	for (i = 0; i < s->m.nr_segs; i++)
		if (s->m.segs[i].flags & DMR_SEG_PREFREE)
			n[dmr_seg_reuse_wait(&s->m.segs[i], s->m.ckpt_seq, s->m.flush_seq)]++;
	for (i = 0; i < DMR_REUSE_WAITS; i++)
		if (n[i] != s->m.nr_wait[i])
			sim_fail(s, "prefree list counts differ from a scan");
}

/*
 * --exact-cb: the cost-benefit victim by a scan of every segment (the
 * best score, the older on a tie), the reference dmr_gc_victim()'s
 * buckets are measured against.
 */
static u32 exact_cb_victim(struct sim *s)
{
	u32 i, best = DMR_NO_SEGMENT;
	u64 best_score = 0, score;

	for (i = 0; i < s->m.nr_segs; i++) {
		const struct dmr_seg *g = &s->m.segs[i];

		if (!dmr_seg_collectable(g, s->m.seg_blocks, s->m.wide))
			continue;
		score = dmr_gc_score(&s->m, g, s->seq, false);
		if (best == DMR_NO_SEGMENT || score > best_score ||
		    (score == best_score && g->seq < s->m.segs[best].seq)) {
			best = i;
			best_score = score;
		}
	}
	return best;
}

/*
 * dmr_gc_run() past its first test: one GC action as the policy decides,
 * timed in the measurement window: the choice (freeing what the reuse
 * rule allows, the prefree counts, the victim), and the whole step.
 *
 * Return: 1 idle, 0 an action was taken, -1 stuck.
 */
static int gc_act(struct sim *s, bool urgent)
{
	struct dmr_gc_state st = { .user_waits = urgent };
	bool greedy = urgent || s->single;
	u64 t0 = 0, t1 = 0;
	u32 victim;
	int r;

	if (s->timed)
		t0 = now_ns();
	free_ready(s);
	st.nr_free = s->m.nr_free;
	st.nr_prefree_readers = 0;
	st.active = s->gc_active;
	prefree_waiting(s, &st.nr_prefree_ckpt, &st.nr_prefree_flush);
	victim = s->exact_cb && !greedy ? exact_cb_victim(s) :
		 dmr_gc_victim(&s->m, greedy, s->seq);
	st.victim = victim != DMR_NO_SEGMENT;
	/* below GC's floor, as dmr_gc_victim_fits() (not with one head: users') */
	if (st.victim && !s->single) {
		const struct sim_head *h = &s->heads[dmr_gc_head(&s->m, &s->m.segs[victim],
								 s->seq, &s->temp)];

		st.victim_fits = dmr_gc_segments_needed(s->m.segs[victim].valid, s->m.wide,
				dmr_head_next_free(h->seg, h->offset, h->unit_open, h->wp,
						   s->m.seg_blocks),
				h->next != DMR_NO_SEGMENT, s->m.seg_blocks) <= s->m.nr_free;
	}
	if (s->timed)
		t1 = now_ns();

	switch (dmr_gc_decide(&s->p, &st)) {
	case DMR_GC_COLLECT:
		gc_collect(s, victim);
		s->c.gc_urgent += urgent;
		r = 0;
		break;
	case DMR_GC_CHECKPOINT:
		checkpoint(s);
		r = 0;
		break;
	case DMR_GC_FLUSH:
		flush_log(s);
		free_ready(s);
		s->c.flushes++;
		r = 0;
		break;
	case DMR_GC_WAIT_READERS:
	case DMR_GC_STUCK:
		return -1;
	default:
		return 1;
	}
	s->c.gc_steps++;
	s->c.greedy_steps += greedy;
	if (s->timed) {
		u64 t2 = now_ns();

		s->c.decide_ns += t1 - t0;
		s->c.decide_greedy_ns += greedy ? t1 - t0 : 0;
		s->c.step_ns += t2 - t0;
	}
	return r;
}

/*
 * dmr_gc_run(): when neither a user waits nor background GC is active,
 * dmr_gc_decide() returns IDLE whatever the victim: the common case, after
 * every request, costs nothing more.
 */
static int gc_run(struct sim *s, bool urgent)
{
	s->gc_active = dmr_gc_active(&s->p, s->gc_active, s->m.nr_free,
				     s->m.nr_prefree);
	if (!urgent && !s->gc_active)
		return 1;
	return gc_act(s, urgent);
}

/*
 * A user block written to @pba (the unit, if any, is the caller's): the
 * map, the reverse map, --warmup auto's record of blocks not written since
 * the fill, and --block-birth's time (@seq, its unit's).
 */
static void user_block(struct sim *s, u64 lba, u32 pba, u64 seq)
{
	if (s->filled && s->filled[lba >> 3] & 1 << (lba & 7)) {
		s->filled[lba >> 3] &= ~(1 << (lba & 7));
		s->fill_left--;
	}
	map_ready(s, lba, true);
	dmr_map_set(&s->m, lba, pba);
	s->rev[pba] = lba;
	if (s->blk_birth)
		s->blk_birth[pba] = seq;
}

/*
 * --large-head, issue 41's goal 1 as the module does it since format 5
 * (dmr_write_large(); the module's default, its table option
 * no_large_writes what this simulator does without --large-head): the
 * whole segments of a write (dmr_large_split()) each take a free segment
 * of their own, written whole and sealed at once, with no summary block
 * in it (dmr_seg_large()): the write's record (its first block, the
 * segment and a checksum, DMR_UNIT_EXTENTS) goes into a summary of the
 * cold head (counted as 16 bytes of one).  Overwritten whole, the
 * segment is emptied whole and GC never moves it.  One segment: @lba is
 * segment-aligned.
 */
static void large_write(struct sim *s, u64 lba)
{
	u32 seg_blocks = s->m.seg_blocks, seg, i, pba;
	bool waited = false;

	while (!dmr_head_may_alloc(&s->p, DMR_HEAD_COLD, s->m.nr_free)) {
		if (!waited)
			s->c.throttled++;
		waited = true;
		if (gc_run(s, true) < 0)
			sim_fail(s, "no space can be freed for a large write (GC stuck)");
	}
	seg = dmr_seg_alloc(&s->m);
	if (seg == DMR_NO_SEGMENT)
		sim_fail(s, "no free segment for a large write");
	dmr_seg_open(&s->m, seg, ++s->seq);
	dmr_seg_set_head(&s->m.segs[seg], DMR_HEAD_COLD);
	s->owner[seg] = DMR_HEAD_COLD;
	pba = seg * seg_blocks;
	for (i = 0; i < seg_blocks; i++)
		user_block(s, lba + i, pba + i, s->seq);
	dmr_seg_large(&s->m, seg, lba, 0);
	dmr_seg_seal(&s->m, seg);
	s->c.user += seg_blocks;
	s->c.extents++;
}

static void small_write(struct sim *s, u64 lba, u32 nr);

/* dmr_do_write() for one request, then dmr_gc_background() */
static void user_write(struct sim *s, u64 lba, u32 nr)
{
	u64 first, big = s->large_head ? dmr_large_split(lba, nr, s->m.seg_blocks, &first) : 0;
	u64 i;

	if (!big) {
		small_write(s, lba, nr);
	} else {
		if (first > lba)
			small_write(s, lba, first - lba);
		for (i = 0; i < big; i += s->m.seg_blocks) {
			if (i && gc_run(s, false) < 0)
				sim_fail(s, "background GC stuck");
			large_write(s, first + i);
		}
		if (first + big < lba + nr)
			small_write(s, first + big, lba + nr - first - big);
	}
	if (gc_run(s, false) < 0)
		sim_fail(s, "background GC stuck");
	map_cache_trim(s);
	if (s->m.nr_pages > s->map_pages_max)
		s->map_pages_max = s->m.nr_pages;
	s->c.free_sum += s->m.nr_free;
	s->c.prefree_sum += s->m.nr_prefree;
}

/* A write through the log heads (a large one's ends with --large-head). */
static void small_write(struct sim *s, u64 lba, u32 nr)
{
	u32 seg_blocks = s->m.seg_blocks;
	unsigned int hid;
	struct sim_head *h;

	hid = s->single ? DMR_HEAD_HOT :
	      dmr_temp_classify(&s->temp, &s->m, lba, map_lookup(s, lba, false), s->seq);
	if (s->oracle_hot && !s->single) {
		u64 off = (lba + s->m.nr_logical - *s->oracle_base) % s->m.nr_logical;

		hid = off < s->oracle_hot ? DMR_HEAD_HOT : DMR_HEAD_COLD;
	}
	h = &s->heads[hid];
	s->c.hot += hid == DMR_HEAD_HOT;
	while (nr) {
		u32 n = head_room(s, hid, nr, hid), i, pba;

		pba = h->seg * seg_blocks + h->wp;
		for (i = 0; i < n; i++) {
			user_block(s, lba + i, pba + i, s->seq + 1);
			h->unit.lba[h->unit.nr_blocks++] = lba + i;
		}
		h->wp += n;
		lba += n;
		nr -= n;
		s->c.user += n;
	}
	if (dmr_seal_after_write(h->unit_open, h->wp, seg_blocks))
		seal(s, h, false);
}

/*
 * Every invariant: the map's own, the sim's disk content, the counters.
 * --map-cache: every page out is read back first (each compared with
 * what it held, page_in()), and leaves again after the check (it is still
 * clean for the newest slot), the cache as it was.
 */
static void sim_check(struct sim *s)
{
	u64 lba, p;
	bool ok;

	for (p = 0; s->paged && p < s->m.nr_map_blocks; p++) {
		if (dmr_map_page_state(&s->m, p) == DMR_PAGE_EVICTED)
			page_in(s, p);
	}
	ok = dmr_map_consistent(&s->m);
	for (p = 0; s->paged && p < s->m.nr_map_blocks; p++) {
		bool absent;

		if (!(s->pc.state[p] & DMR_PC_RESIDENT) &&
		    dmr_map_page_state(&s->m, p) == DMR_PAGE_RESIDENT &&
		    !dmr_map_evict(&s->m, p, s->ckpt_slot ^ 1, &absent))
			sim_fail(s, "map cache: a page read back for the check cannot leave");
	}
	if (!ok)
		sim_fail(s, "map inconsistent (dmr_map_consistent)");
	for (lba = 0; lba < s->m.nr_logical; lba++) {
		u64 e = flat_entry(s, lba);

		if (e != DMR_UNMAPPED && s->rev[e - 1] != lba)
			sim_fail(s, "map entry points at a block holding another lba");
	}
	prefree_scan(s);
}

/* ---- workloads ---- */

enum wl_kind { WL_UNIFORM, WL_HOT80, WL_HOT95, WL_COLD70, WL_SEQ, WL_TRACE, WL_SHIFT80,
	       WL_LARGE, WL_MIX50, WL_MIX50S };

/* shift80: the hot fifth moves to a random place every this many capacities */
#define SIM_SHIFT_CAPACITIES	2

struct workload {
	enum wl_kind kind;
	const char *name;
	struct trace trace;
	size_t pos;		/* next trace request */
	u64 seq_lba;		/* next sequential block */
	struct req pending[2];	/* drawn ahead by write_until(), not written */
	unsigned int nr_pending;
	u64 hot_base;		/* shift80: first block of the hot set */
	u64 shift_left;		/* shift80: writes before it moves */
	u32 seg_blocks;		/* large, mix50: blocks of a large write */
};

/* --workload's names (trace:FILE apart) */
static const struct {
	const char *name;
	enum wl_kind kind;
} wl_names[] = {
	{ "uniform", WL_UNIFORM }, { "hot80", WL_HOT80 }, { "shift80", WL_SHIFT80 },
	{ "hot95", WL_HOT95 }, { "cold70", WL_COLD70 }, { "seq", WL_SEQ },
	{ "large", WL_LARGE }, { "mix50", WL_MIX50 }, { "mix50s", WL_MIX50S },
};

/* Next request, cut to the logical capacity (offsets wrap). */
static struct req wl_next(struct workload *w, u64 nr_logical)
{
	struct req r = { .nr = 1 };
	u64 hot;

	if (w->nr_pending) {
		r = w->pending[0];
		w->pending[0] = w->pending[1];
		w->nr_pending--;
		return r;
	}
	switch (w->kind) {
	case WL_UNIFORM:
		r.lba = rng_below(nr_logical);
		break;
	case WL_HOT80:
	case WL_HOT95:
		/* 80% of writes to the first 20% of blocks, or 95% to 5% */
		hot = w->kind == WL_HOT80 ? nr_logical / 5 : nr_logical / 20;
		if (rng_below(100) < (w->kind == WL_HOT80 ? 80U : 95U))
			r.lba = rng_below(hot);
		else
			r.lba = hot + rng_below(nr_logical - hot);
		break;
	case WL_SHIFT80:
		/* 80% of writes to a fifth of the blocks that moves */
		if (!w->shift_left) {
			w->hot_base = rng_below(nr_logical);
			w->shift_left = SIM_SHIFT_CAPACITIES * nr_logical;
		}
		w->shift_left--;
		hot = nr_logical / 5;
		if (rng_below(100) < 80U)
			r.lba = (w->hot_base + rng_below(hot)) % nr_logical;
		else
			r.lba = (w->hot_base + hot + rng_below(nr_logical - hot)) % nr_logical;
		break;
	case WL_COLD70:
		/* the first 70% written once (the fill), the rest at random */
		hot = nr_logical * 7 / 10;
		r.lba = hot + rng_below(nr_logical - hot);
		break;
	case WL_SEQ:
		r.lba = w->seq_lba;
		w->seq_lba = (w->seq_lba + 1) % nr_logical;
		break;
	case WL_LARGE:
		/* a segment's blocks at a random segment-aligned place */
		r.nr = w->seg_blocks;
		r.lba = rng_below(nr_logical / w->seg_blocks) * w->seg_blocks;
		break;
	case WL_MIX50:
	case WL_MIX50S:
		/*
		 * half the bytes large sequential writes of a segment's blocks,
		 * segment-aligned, half 4 KiB random: both through the whole
		 * logical space (mix50), or the large ones through its second
		 * half and the small ones in its first (mix50s)
		 */
		hot = w->kind == WL_MIX50 ? 0 :
		      nr_logical / 2 / w->seg_blocks * w->seg_blocks;
		if (rng_below(w->seg_blocks + 1)) {
			r.lba = rng_below(hot ? hot : nr_logical);
			break;
		}
		r.nr = w->seg_blocks;
		if (w->seq_lba < hot || w->seq_lba + w->seg_blocks > nr_logical)
			w->seq_lba = hot;
		r.lba = w->seq_lba;
		w->seq_lba += w->seg_blocks;
		break;
	case WL_TRACE:
		r = w->trace.r[w->pos];
		w->pos = (w->pos + 1) % w->trace.n;
		r.lba %= nr_logical;
		if (r.nr > nr_logical - r.lba)
			r.nr = nr_logical - r.lba;
		break;
	}
	return r;
}

/* ---- reads: issue 41, goal 2 ---- */

/* blocks of the large read measured (1 MiB) */
#define SIM_READ_BLOCKS	256U

/* The I/Os of 1 MiB reads at every aligned place mapped whole. */
struct read_runs {
	u64 reads;		/* places measured */
	u64 runs;		/* I/Os (runs of consecutive physical blocks) */
	u64 one;		/* reads served by one I/O */
	u32 p50, p90, max;	/* I/Os of a read: median, 90th percentile, most */
};

/* How many I/Os a read of @nr blocks from @lba takes (dmr_map_run()). */
static u32 runs_of(const struct sim *s, u64 lba, u32 nr)
{
	u32 runs = 0, n;
	u64 first;

	while (nr) {
		n = dmr_map_run(&s->m, lba, nr, &first);
		if (first == DMR_UNMAPPED)
			return 0;	/* not mapped whole */
		runs++;
		lba += n;
		nr -= n;
	}
	return runs;
}

/*
 * Every 1 MiB-aligned read the map serves whole, as dmr-read.c splits it:
 * a run of blocks stored consecutively is one I/O.  Not with --map-cache
 * (pages out).
 */
static void read_runs(const struct sim *s, struct read_runs *r)
{
	u32 *count = calloc(SIM_READ_BLOCKS + 1, sizeof(*count)), n, k;
	u64 lba, seen = 0;

	if (!count)
		die("out of memory");
	memset(r, 0, sizeof(*r));
	for (lba = 0; lba + SIM_READ_BLOCKS <= s->m.nr_logical; lba += SIM_READ_BLOCKS) {
		n = runs_of(s, lba, SIM_READ_BLOCKS);
		if (!n)
			continue;
		count[n]++;
		r->reads++;
		r->runs += n;
		r->one += n == 1;
	}
	for (k = 1; k <= SIM_READ_BLOCKS; k++) {
		if (!count[k])
			continue;
		if (seen < r->reads / 2 && seen + count[k] >= r->reads / 2)
			r->p50 = k;
		if (seen < r->reads * 9 / 10 && seen + count[k] >= r->reads * 9 / 10)
			r->p90 = k;
		seen += count[k];
		r->max = k;
	}
	free(count);
}

/* read_runs() as output fields named @name_* (none if nothing was read) */
static void print_reads(const char *name, const struct read_runs *r, bool json)
{
	const char *f = json ? ", \"%s_%s\": " : " %s_%s=";

	if (!r->reads)
		return;
	printf(f, name, "ios");
	printf("%.3f", (double)r->runs / r->reads);
	printf(f, name, "p50");
	printf("%u", r->p50);
	printf(f, name, "p90");
	printf("%u", r->p90);
	printf(f, name, "max");
	printf("%u", r->max);
	printf(f, name, "one");
	printf("%.4f", (double)r->one / r->reads);
}

/*
 * --defrag, a what-if for issue 41's goal 2: with no user writes (idle),
 * every 1 MiB range read in more than @most I/Os is rewritten
 * in logical order, its blocks moved to the cold GC head as GC moves them,
 * background GC running after each block as after each user request,
 * until @caps capacities were rewritten.  Returns the blocks moved
 * by GC meanwhile.
 */
static u64 defrag(struct sim *s, double caps, u32 most)
{
	u64 budget = (u64)(caps * s->m.nr_logical), gc_moved = 0, lba, i, e, m0;

	for (lba = 0; lba + SIM_READ_BLOCKS <= s->m.nr_logical &&
	     s->c.defrag < budget; lba += SIM_READ_BLOCKS) {
		if (runs_of(s, lba, SIM_READ_BLOCKS) <= most)
			continue;
		for (i = lba; i < lba + SIM_READ_BLOCKS; i++) {
			/* as a user write: may wait for GC, not take its reserve */
			head_room(s, DMR_HEAD_GC_HOT, 1, DMR_HEAD_COLD);
			e = map_lookup(s, i, true);
			if (e == DMR_UNMAPPED)
				continue;
			map_ready(s, i, true);
			m0 = s->c.moved;
			gc_move(s, DMR_HEAD_GC_HOT, i, e - 1);
			s->c.defrag += s->c.moved - m0;
			s->c.moved = m0;
			m0 = s->c.moved;
			if (gc_run(s, false) < 0)
				sim_fail(s, "background GC stuck");
			gc_moved += s->c.moved - m0;
		}
	}
	return gc_moved;
}

/* ---- analytic values ---- */

/* Greedy GC, uniform random writes, spare factor a = physical / logical. */
static double desnoyers(double a)
{
	return dmr_waf_greedy_uniform(a);
}

/*
 * Hot and cold data perfectly apart: a fraction @h of the blocks takes a
 * fraction @r of the writes; each part is greedy over its own spare, and
 * the spare is split the best way.
 */
static double separated_bound(double r, double h, double op)
{
	double spare = 1 / (1 - op) - 1, best = INFINITY;
	int i;

	for (i = 1; i < 10000; i++) {
		double sh = spare * i / 10000, w;

		w = r * desnoyers(1 + sh / h) + (1 - r) * desnoyers(1 + (spare - sh) / (1 - h));
		if (w < best)
			best = w;
	}
	return best;
}

/* ---- a run ---- */

/*
 * Zeroed memory for the large arrays (map, segment table, reverse map),
 * in huge pages where the kernel gives them: at 2^20 segments and more
 * the run is bound by random accesses to these arrays, and huge pages
 * save most of the TLB misses.
 */
/*
 * --map-cache: map page @page's memory, zeroed: its place in the flat
 * array (dmr_map_reserve()).
 */
static void *sim_page_alloc(void *ctx, u64 page)
{
	struct sim *s = ctx;
	u32 *mem = page_at(s->l2p, page);

	memset(mem, 0, page_bytes(s, page));
	return mem;
}

static void *big_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("out of memory for %zu bytes", bytes);
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

static void big_free(void *p, size_t bytes)
{
	munmap(p, bytes ? bytes : 1);
}

enum { SIM_RECOVER_CLOCK = 1, SIM_RECOVER_LEGACY };

struct config {
	u64 device_mib;
	u32 segments;
	u32 seg_blocks;
	double warmup;
	double overwrites;
	u64 seed;
	u64 check_every;
	u32 gc_low, gc_high;
	struct dmr_gc_params gc;	/* --gc-params, all four set (batch > 0) */
	bool settle;		/* --warmup auto */
	double settle_pct;	/* --settle */
	bool single;
	bool exact_cb;
	bool block_birth;
	bool no_heat;		/* --no-heat */
	bool oracle;		/* --oracle */
	bool large_head;	/* --large-head */
	bool gc_sort;		/* --gc-sort */
	double defrag;		/* --defrag: capacities of rewrites at most */
	u32 defrag_runs;	/* --defrag: ranges read in more runs than this */
	u32 birth_group;
	u32 map_cache;		/* --map-cache: percent of the map's pages, 0: all */
	bool gc_bitmap;		/* --gc-bitmap */
	bool wide;		/* --wide */
	int recover;		/* --recover: 0 none, SIM_RECOVER_* */
	bool json;
	bool verbose;
	bool timing;
};

/*
 * Write the workload until @s has taken @target more user blocks.  The
 * requests are drawn two ahead, so that the map entry of the one after
 * next and the segment entry of the next are fetched meanwhile (the same
 * requests in the same order: only the simulator's speed changes).
 */
static void write_until(const struct config *cfg, struct sim *s, struct workload *w,
			u64 target, u64 *requests)
{
	u64 start = s->c.user;
	struct req r[3];
	unsigned int i = 0;

	r[0] = wl_next(w, s->m.nr_logical);
	r[1] = wl_next(w, s->m.nr_logical);
	while (s->c.user - start < target) {
		struct req *next = &r[(i + 1) % 3], *after = &r[(i + 2) % 3];
		u64 e;

		*after = wl_next(w, s->m.nr_logical);
		__builtin_prefetch(flat_addr(s, after->lba));
		e = flat_entry(s, next->lba);
		if (e != DMR_UNMAPPED)
			__builtin_prefetch(&s->m.segs[dmr_pba_segment(&s->m, e - 1)]);
		user_write(s, r[i % 3].lba, r[i % 3].nr);
		i++;
		++*requests;
		if (cfg->check_every && *requests % cfg->check_every == 0)
			sim_check(s);
	}
	w->pending[0] = r[i % 3];
	w->pending[1] = r[(i + 1) % 3];
	w->nr_pending = 2;
}

/*
 * --warmup auto: the convergence rule.  Rounds of 1/SIM_ROUNDS logical
 * capacity are written until both
 *
 * - the WAF is flat: that of the last quarter of the rounds written so far
 *   (at least SIM_SETTLE_ROUNDS of them) is within @cfg->settle_pct
 *   percent of that of the quarter before.  The windows grow with the
 *   warm-up, so a slow drift is seen too: before issue 25's GC heads,
 *   80/20 writes rose 3.93, 4.01, 4.14, 4.29, 4.35 from 2 to 40 capacities,
 *   each half capacity within 1% of the one before, and
 * - the run no longer remembers the sequential fill it started from: the
 *   blocks the user has not written again since the fill are below a
 *   tenth of the logical capacity, or fewer by less than a hundredth of it
 *   over the last 2 * SIM_SETTLE_ROUNDS rounds (data written once and
 *   never again, as cold70's, is part of the steady state).
 *
 * The WAF alone does not tell: after the fill, 80/20 writes stay within
 * 1% for two capacities, then climb 7% over the next six as the cold data
 * is rewritten (a quarter of it per capacity).  Gives up after
 * @cfg->warmup capacities.
 *
 * Return: whether it settled.
 */
static bool warm_up(const struct config *cfg, struct sim *s, struct workload *w,
		    u64 *requests)
{
	const unsigned int keep = 2 * SIM_SETTLE_ROUNDS;
	u64 round = s->m.nr_logical / SIM_ROUNDS + 1, start = s->c.user;
	u64 left[2 * SIM_SETTLE_ROUNDS + 1];
	/* user and device blocks written before each round */
	u64 user[SIM_MAX_WARMUP * SIM_ROUNDS + 2], dev[SIM_MAX_WARMUP * SIM_ROUNDS + 2];
	unsigned int n = 0, q;

	left[0] = s->fill_left;
	user[0] = s->c.user;
	dev[0] = s->c.user + s->c.moved;
	while (s->c.user - start < cfg->warmup * s->m.nr_logical &&
	       n < SIM_MAX_WARMUP * SIM_ROUNDS + 1) {
		double a, b;
		u64 now, then;

		write_until(cfg, s, w, round, requests);
		n++;
		user[n] = s->c.user;
		dev[n] = s->c.user + s->c.moved;
		left[n % (keep + 1)] = s->fill_left;
		if (n < keep)
			continue;
		q = max(SIM_SETTLE_ROUNDS, n / 4);
		if (2 * q > n)
			continue;
		a = (double)(dev[n - q] - dev[n - 2 * q]) / (user[n - q] - user[n - 2 * q]);
		b = (double)(dev[n] - dev[n - q]) / (user[n] - user[n - q]);
		now = left[n % (keep + 1)];
		then = left[(n + 1) % (keep + 1)];	/* keep rounds ago */
		if (fabs(b - a) <= cfg->settle_pct / 100 * (a + b) / 2 &&
		    (now * 10 <= s->m.nr_logical ||
		     (then - now) * 100 <= s->m.nr_logical))
			return true;
	}
	return false;
}

/*
 * --recover: what a crash and the load after it do to the policy's state
 * (dmr_load()).  The log's sequence resumes 2^32 on (rule 4; nothing was
 * lost here, so replay ends where the log ends); with the age clock
 * (item 14) ages leave the jump out, and the segments' hot flags and the
 * temperature estimate come back from the checkpoint.  Legacy: ages count
 * the jump, every segment is cold and the estimate starts again.  The
 * write heat, in memory only, starts from the hot flags (dmr_heat_seed()),
 * or at 0 in legacy.
 */
static void recover(struct sim *s, int how)
{
	u64 from = s->seq, p;
	u32 i;

	s->seq = dmr_seq_after_recovery(from, from);
	if (how == SIM_RECOVER_CLOCK) {
		dmr_age_clock_jump(&s->m.age, from, s->seq + 1);
		for (p = 0; s->m.heat && p < s->m.nr_map_blocks; p++)
			dmr_heat_seed(&s->m, p);	/* as dmr_load() */
		return;
	}
	if (s->m.heat)
		memset(s->m.heat, 0, dmr_heat_bytes(s->m.nr_logical));
	for (i = 0; i < s->m.nr_segs; i++)
		s->m.segs[i].flags &= ~DMR_SEG_HOT;
	s->temp.threshold = 0;
}

static bool run(const struct config *cfg, u32 op, struct workload *w)
{
	struct dmr_ckpt_layout layout;
	struct dmr_geometry geo;
	enum dmr_geo_status st;
	const char *why;
	struct sim_counters c0, d;
	struct read_runs rr = {}, rd = {};
	u64 dmoved = 0;
	struct sim *s;
	u64 lba, written, requests = 0, r0 = 0, mreq, t0, elapsed, scan_ns;
	double waf, wafs, wafa, ref = 0, idle, eff = 0, warm, left;
	bool settled = true;
	size_t l2p_bytes, rev_bytes, dirty_bytes, segs_bytes, filled_bytes;
	struct rusage ru;
	const char *refname = NULL;
	u32 *l2p, *lists;
	u8 *dirty;
	unsigned int i;

	if (cfg->device_mib) {
		st = dmr_geometry_compute_wide(cfg->device_mib << (20 - DMR_BLOCK_SHIFT), 0,
					       cfg->seg_blocks, op, cfg->wide, &geo);
	} else {
		/* the smallest device of exactly this many segments */
		u64 dev = (u64)cfg->segments * cfg->seg_blocks;

		do {
			st = dmr_geometry_compute_wide(dev, 0, cfg->seg_blocks, op, cfg->wide,
						       &geo);
			dev += cfg->seg_blocks;
		} while ((st == DMR_GEO_OK || st == DMR_GEO_TOO_SMALL) &&
			 (st != DMR_GEO_OK || geo.nr_segments < cfg->segments));
	}
	if (st != DMR_GEO_OK)
		usage_error("%s", dmr_geo_strerror(st));
	dirty_bytes = dmr_map_blocks(geo.logical_blocks, geo.wide);
	l2p_bytes = dirty_bytes * DMR_BLOCK_SIZE;	/* a page every 4 KiB */
	rev_bytes = (size_t)geo.nr_segments * geo.segment_blocks * sizeof(*s->rev);
	segs_bytes = (size_t)geo.nr_segments * sizeof(*s->m.segs);
	filled_bytes = (geo.logical_blocks + 7) / 8;

	s = calloc(1, sizeof(*s));
	if (!s)
		die("out of memory");
	l2p = big_alloc(l2p_bytes);
	s->l2p = l2p;
	s->pages = big_alloc(dirty_bytes * sizeof(*s->pages));
	s->rev = big_alloc(rev_bytes);
	if (cfg->block_birth)
		s->blk_birth = big_alloc(rev_bytes / sizeof(*s->rev) * sizeof(u64));
	dirty = big_alloc(dirty_bytes);
	s->m.segs = big_alloc(segs_bytes);
	s->owner = big_alloc(geo.nr_segments);
	lists = calloc(DMR_MAP_LISTS(geo.segment_blocks), sizeof(*lists));
	if (!lists)
		die("out of memory");
	memset(s->rev, 0xff, geo.nr_segments * geo.segment_blocks * sizeof(*s->rev));
	/* a device formatted --wide: 8-byte entries and wide units (dmr_io_init()) */
	dmr_map_init_wide(&s->m, geo.wide, s->pages, l2p, geo.logical_blocks, s->m.segs,
			  geo.nr_segments, geo.segment_blocks, dirty, lists);
	/* dmr_gc_setup(): the defaults, or the table's gc_low / gc_high */
	dmr_gc_params_default(geo.nr_segments, &s->p);
	if (cfg->gc.batch)
		s->p = cfg->gc;
	dmr_gc_params_apply(&s->p, cfg->gc_low, cfg->gc_high);
	why = dmr_gc_params_check(geo.nr_segments, dmr_gc_high_max(&geo), &s->p);
	if (why)
		usage_error("GC watermarks refused: %s", why);
	dmr_ckpt_layout(&geo, &layout);
	s->ckpt_fixed = layout.crc_blocks + layout.segtab_blocks + 1;
	s->single = cfg->single;
	s->exact_cb = cfg->exact_cb;
	s->block_birth = cfg->block_birth;
	s->large_head = cfg->large_head;
	s->gc_sort = cfg->gc_sort;
	if (s->gc_sort) {
		s->live = calloc(geo.segment_blocks, sizeof(*s->live));
		if (!s->live)
			die("out of memory");
	}
	if (cfg->oracle) {
		if (w->kind != WL_HOT80 && w->kind != WL_HOT95 && w->kind != WL_SHIFT80)
			usage_error("--oracle: workload '%s' has no hot set (hot80, hot95, shift80)",
				    w->name);
		s->oracle_hot = w->kind == WL_HOT95 ? geo.logical_blocks / 20 :
				geo.logical_blocks / 5;
		s->oracle_base = &w->hot_base;
	}
	s->birth_group = cfg->birth_group;
	/*
	 * the module keeps write heat unless its map is paged (DMR_ARRAY_HEAT):
	 * a cache of every page is none
	 */
	if (!cfg->no_heat &&
	    (!cfg->map_cache || (s->m.nr_map_blocks * cfg->map_cache + 99) / 100 >= s->m.nr_map_blocks))
		s->m.heat = big_alloc(dmr_heat_bytes(geo.logical_blocks));
	if (cfg->map_cache) {
		u32 cap = (s->m.nr_map_blocks * cfg->map_cache + 99) / 100;

		/* the ring may hold every page: the cache goes over until a checkpoint */
		s->pc_ring = big_alloc(s->m.nr_map_blocks * sizeof(u32));
		s->pc_state = big_alloc(s->m.nr_map_blocks);
		s->pc_ref = big_alloc(s->m.nr_map_blocks);
		dmr_page_clock_init(&s->pc, s->pc_ring, s->pc_state, s->pc_ref,
				    cap ? cap : 1, s->m.nr_map_blocks);
		s->paged = true;
		/*
		 * Real pages: none until a block of it is mapped (map_ready(),
		 * sim_page_alloc()), the slots' copies as format left them.
		 */
		for (lba = 0; lba < s->m.nr_map_blocks; lba++)
			s->pages[lba] = NULL;
		s->m.nr_pages = 0;
		s->m.page_alloc = sim_page_alloc;
		s->m.page_ctx = s;
		for (i = 0; i < 2; i++)
			s->slot_img[i] = big_alloc(l2p_bytes);
	}
	s->gc_bitmap = cfg->gc_bitmap;
	rng_state = cfg->seed;
	w->pos = 0;
	w->seq_lba = 0;
	w->seg_blocks = geo.segment_blocks;
	w->nr_pending = 0;

	/* the heads start on free segments, as after format */
	for (i = 0; i < DMR_NR_HEADS; i++) {
		u32 seg = dmr_seg_alloc(&s->m);

		head_enter(s, &s->heads[i], seg);
	}

	/* fill, then warm up, then measure */
	for (lba = 0; lba < geo.logical_blocks; lba++)
		user_write(s, lba, 1);
	c0 = s->c;
	if (cfg->settle) {
		s->filled = big_alloc(filled_bytes);
		memset(s->filled, 0xff, filled_bytes);
		s->fill_left = geo.logical_blocks;
		for (lba = geo.logical_blocks; lba < filled_bytes * 8; lba++)
			s->filled[lba >> 3] &= ~(1 << (lba & 7));
		settled = warm_up(cfg, s, w, &requests);
	}
	else
		write_until(cfg, s, w, cfg->warmup * geo.logical_blocks, &requests);
	warm = (double)(s->c.user - c0.user) / geo.logical_blocks;
	left = (double)s->fill_left / geo.logical_blocks;
	if (s->filled)
		big_free(s->filled, filled_bytes);
	s->filled = NULL;
	if (cfg->recover)
		recover(s, cfg->recover);
	c0 = s->c;
	s->stats = true;
	s->timed = true;
	r0 = requests;
	t0 = now_ns();
	write_until(cfg, s, w, cfg->overwrites * geo.logical_blocks, &requests);
	elapsed = now_ns() - t0;
	s->timed = false;
	scan_ns = now_ns();
	prefree_scan(s);
	scan_ns = now_ns() - scan_ns;
	sim_check(s);
	written = s->c.user - c0.user;
	d.user = written;
	d.moved = s->c.moved - c0.moved;
	d.summaries = s->c.summaries - c0.summaries;
	d.extents = s->c.extents - c0.extents;
	d.gc_runs = s->c.gc_runs - c0.gc_runs;
	d.gc_urgent = s->c.gc_urgent - c0.gc_urgent;
	d.ckpts = s->c.ckpts - c0.ckpts;
	d.flushes = s->c.flushes - c0.flushes;
	d.ckpt_blocks = s->c.ckpt_blocks - c0.ckpt_blocks;
	d.throttled = s->c.throttled - c0.throttled;
	d.hot = s->c.hot - c0.hot;
	mreq = requests - r0;
	d.free_sum = s->c.free_sum - c0.free_sum;
	d.prefree_sum = s->c.prefree_sum - c0.prefree_sum;
	d.idle_sum = s->c.idle_sum - c0.idle_sum;
	d.gc_steps = s->c.gc_steps - c0.gc_steps;
	d.greedy_steps = s->c.greedy_steps - c0.greedy_steps;
	d.decide_ns = s->c.decide_ns - c0.decide_ns;
	d.decide_greedy_ns = s->c.decide_greedy_ns - c0.decide_greedy_ns;
	d.step_ns = s->c.step_ns - c0.step_ns;
	d.map_touch = s->c.map_touch - c0.map_touch;
	d.map_miss = s->c.map_miss - c0.map_miss;
	d.map_forced = s->c.map_forced - c0.map_forced;
	d.map_evicted = s->c.map_evicted - c0.map_evicted;
	d.map_copied = s->c.map_copied - c0.map_copied;
	getrusage(RUSAGE_SELF, &ru);
	idle = d.gc_runs ? (double)d.idle_sum / d.gc_runs : 0;
	waf = (double)(d.user + d.moved) / d.user;
	/* --large-head: an extent record is 16 bytes of a small head's summary */
	wafs = (d.user + d.moved + d.summaries + d.extents * 16.0 / DMR_BLOCK_SIZE) / d.user;
	wafa = wafs + (double)d.ckpt_blocks / d.user;
	if (w->kind == WL_UNIFORM) {
		/* data blocks a segment holds, summaries taken out */
		double per_seg = geo.segment_blocks * (double)(d.user + d.moved) /
				 (d.user + d.moved + d.summaries);

		ref = desnoyers(100.0 / (100 - op));
		refname = "analytic";
		if (idle < geo.nr_segments && d.gc_runs)
			eff = desnoyers((geo.nr_segments - idle) * per_seg / geo.logical_blocks);
	} else if (w->kind == WL_HOT80 || w->kind == WL_HOT95) {
		ref = w->kind == WL_HOT80 ? separated_bound(0.8, 0.2, op / 100.0) :
		      separated_bound(0.95, 0.05, op / 100.0);
		refname = "bound";
	}

	/* goal 2: 1 MiB reads now, and after --defrag */
	if (!s->paged) {
		read_runs(s, &rr);
		if (cfg->defrag) {
			dmoved = defrag(s, cfg->defrag, cfg->defrag_runs);
			sim_check(s);
			read_runs(s, &rd);
		}
	}
	if (cfg->json) {
		printf("{\"workload\": \"%s\", \"heads\": \"%s\", \"op\": %u, "
		       "\"segment_blocks\": %u, \"segments\": %" PRIu64 ", "
		       "\"logical_blocks\": %" PRIu64 ", \"user_blocks\": %" PRIu64 ", "
		       "\"waf\": %.4f, \"waf_summaries\": %.4f, \"gc_runs\": %" PRIu64 ", "
		       "\"gc_urgent\": %" PRIu64 ", \"checkpoints\": %" PRIu64 ", "
		       "\"ckpt_blocks\": %" PRIu64 ", \"waf_all\": %.4f, "
		       "\"throttled\": %" PRIu64 ", \"hot_share\": %.4f, "
		       "\"free_avg\": %.1f, \"prefree_avg\": %.1f, "
		       "\"gc_reserve\": %u, \"gc_low\": %u, \"gc_high\": %u, \"gc_batch\": %u, "
		       "\"wide\": %s",
		       w->name, cfg->single ? "single" : "multi", op, geo.segment_blocks,
		       geo.nr_segments, geo.logical_blocks, d.user, waf, wafs,
		       d.gc_runs, d.gc_urgent, d.ckpts, d.ckpt_blocks, wafa, d.throttled,
		       mreq ? (double)d.hot / mreq : 0,
		       mreq ? (double)d.free_sum / mreq : 0,
		       mreq ? (double)d.prefree_sum / mreq : 0, s->p.reserve, s->p.low, s->p.high,
		       s->p.batch, cfg->wide ? "true" : "false");
		printf(", \"flushes\": %" PRIu64 ", \"idle_avg\": %.1f", d.flushes,
		       idle);
		if (refname)
			printf(", \"%s\": %.4f, \"diff\": %.4f", refname, ref, waf / ref - 1);
		if (eff)
			printf(", \"analytic_eff\": %.4f", eff);
		printf(", \"warmup\": %.3f, \"heat\": %s", warm, s->m.heat ? "true" : "false");
		if (cfg->large_head)
			printf(", \"large_head\": true, \"extents\": %" PRIu64, d.extents);
		if (cfg->oracle)
			printf(", \"oracle\": true");
		if (cfg->gc_sort)
			printf(", \"gc_sort\": true");
		print_reads("read_1m", &rr, true);
		if (rd.reads)
			printf(", \"defrag_blocks\": %.4f, \"defrag_gc_moved\": %.4f",
			       (double)s->c.defrag / geo.logical_blocks,
			       s->c.defrag ? (double)dmoved / s->c.defrag : 0);
		print_reads("defrag_read_1m", &rd, true);
		if (cfg->block_birth)
			printf(", \"block_birth\": true, \"birth_group\": %u", cfg->birth_group);
		if (cfg->recover)
			printf(", \"recover\": \"%s\"",
			       cfg->recover == SIM_RECOVER_CLOCK ? "clock" : "legacy");
		if (cfg->settle)
			printf(", \"settled\": %s, \"fill_left\": %.3f",
			       settled ? "true" : "false", left);
		if (cfg->map_cache)
			printf(", \"gc_bitmap\": %s", cfg->gc_bitmap ? "true" : "false");
		if (cfg->map_cache)
			printf(", \"map_cache\": %u, \"map_pages\": %u, \"map_lookups_per_block\": %.3f"
			       ", \"map_misses_per_block\": %.4f, \"map_hit\": %.4f"
			       ", \"map_forced_ckpts\": %" PRIu64
			       ", \"map_evictions_per_block\": %.4f"
			       ", \"map_copied_per_block\": %.4f"
			       ", \"map_pages_max\": %" PRIu64,
			       cfg->map_cache, s->pc.cap, (double)d.map_touch / d.user,
			       (double)d.map_miss / d.user,
			       d.map_touch ? 1 - (double)d.map_miss / d.map_touch : 1,
			       d.map_forced, (double)d.map_evicted / d.user,
			       (double)d.map_copied / d.user, s->map_pages_max);
		if (cfg->timing)
			printf(", \"gc_steps\": %" PRIu64 ", \"greedy_steps\": %" PRIu64
			       ", \"ns_per_block\": %.1f, \"step_ns\": %.1f"
			       ", \"decide_ns\": %.1f, \"decide_greedy_ns\": %.1f"
			       ", \"decide_cb_ns\": %.1f, \"scan_ns\": %" PRIu64
			       ", \"elapsed_s\": %.1f, \"rss_mib\": %ld",
			       d.gc_steps, d.greedy_steps, (double)elapsed / d.user,
			       d.gc_steps ? (double)d.step_ns / d.gc_steps : 0,
			       d.gc_steps ? (double)d.decide_ns / d.gc_steps : 0,
			       d.greedy_steps ? (double)d.decide_greedy_ns / d.greedy_steps : 0,
			       d.gc_steps > d.greedy_steps ?
			       (double)(d.decide_ns - d.decide_greedy_ns) /
			       (d.gc_steps - d.greedy_steps) : 0,
			       scan_ns, elapsed / 1e9, ru.ru_maxrss / 1024);
		printf("}\n");
	} else {
		printf("workload=%s heads=%s op=%u segment_blocks=%u segments=%" PRIu64
		       " logical_blocks=%" PRIu64 " user_blocks=%" PRIu64
		       " waf=%.3f waf_summaries=%.3f gc_runs=%" PRIu64
		       " gc_urgent=%" PRIu64 " checkpoints=%" PRIu64 " ckpt_blocks=%" PRIu64
		       " waf_all=%.3f throttled=%" PRIu64 " hot_share=%.3f"
		       " free_avg=%.1f prefree_avg=%.1f",
		       w->name, cfg->single ? "single" : "multi", op, geo.segment_blocks,
		       geo.nr_segments, geo.logical_blocks, d.user, waf, wafs, d.gc_runs,
		       d.gc_urgent, d.ckpts, d.ckpt_blocks, wafa, d.throttled,
		       mreq ? (double)d.hot / mreq : 0,
		       mreq ? (double)d.free_sum / mreq : 0,
		       mreq ? (double)d.prefree_sum / mreq : 0);
		printf(" flushes=%" PRIu64 " idle_avg=%.1f", d.flushes, idle);
		if (refname)
			printf(" %s=%.3f diff=%+.1f%%", refname, ref, 100 * (waf / ref - 1));
		if (eff)
			printf(" analytic_eff=%.3f", eff);
		printf(" warmup=%.3f heat=%s", warm, s->m.heat ? "yes" : "no");
		if (cfg->large_head)
			printf(" large_head=yes extents=%" PRIu64, d.extents);
		if (cfg->oracle)
			printf(" oracle=yes");
		if (cfg->gc_sort)
			printf(" gc_sort=yes");
		print_reads("read_1m", &rr, false);
		if (rd.reads)
			printf(" defrag_blocks=%.3f defrag_gc_moved=%.3f",
			       (double)s->c.defrag / geo.logical_blocks,
			       s->c.defrag ? (double)dmoved / s->c.defrag : 0);
		print_reads("defrag_read_1m", &rd, false);
		if (cfg->block_birth)
			printf(" block_birth=yes birth_group=%u", cfg->birth_group);
		if (cfg->settle)
			printf(" settled=%s fill_left=%.3f", settled ? "yes" : "no", left);
		if (cfg->map_cache)
			printf(" gc_bitmap=%s", cfg->gc_bitmap ? "yes" : "no");
		if (cfg->map_cache)
			printf(" map_cache=%u map_pages=%u map_lookups_per_block=%.3f"
			       " map_misses_per_block=%.4f map_hit=%.4f map_forced_ckpts=%" PRIu64
			       " map_evictions_per_block=%.4f map_copied_per_block=%.4f"
			       " map_pages_max=%" PRIu64,
			       cfg->map_cache, s->pc.cap, (double)d.map_touch / d.user,
			       (double)d.map_miss / d.user,
			       d.map_touch ? 1 - (double)d.map_miss / d.map_touch : 1,
			       d.map_forced, (double)d.map_evicted / d.user,
			       (double)d.map_copied / d.user, s->map_pages_max);
		if (cfg->timing)
			printf(" gc_steps=%" PRIu64 " ns_per_block=%.1f step_ns=%.1f"
			       " decide_ns=%.1f scan_ns=%" PRIu64 " elapsed_s=%.1f rss_mib=%ld",
			       d.gc_steps, (double)elapsed / d.user,
			       d.gc_steps ? (double)d.step_ns / d.gc_steps : 0,
			       d.gc_steps ? (double)d.decide_ns / d.gc_steps : 0,
			       scan_ns, elapsed / 1e9, ru.ru_maxrss / 1024);
		printf("\n");
	}
	if (cfg->verbose) {
		static const char *const hname[] = { "hot", "cold", "gc", "gc_hot" };

		for (i = 0; i < DMR_NR_HEADS; i++) {
			const struct sim_head_stats *hs = &s->hs[i];

			fprintf(stderr, "  head=%s segments=%" PRIu64 " victims=%" PRIu64
				" victim_valid=%.3f victim_age=%.0f\n", hname[i], hs->segs,
				hs->victims,
				hs->victims ? (double)hs->victim_valid / hs->victims /
					      geo.segment_blocks : 0,
				hs->victims ? (double)hs->victim_age / hs->victims : 0);
		}
	}
	fflush(stdout);
	big_free(s->owner, geo.nr_segments);
	big_free(s->m.segs, segs_bytes);
	big_free(s->rev, rev_bytes);
	if (s->m.heat)
		big_free(s->m.heat, dmr_heat_bytes(geo.logical_blocks));
	if (s->blk_birth)
		big_free(s->blk_birth, rev_bytes / sizeof(*s->rev) * sizeof(u64));
	big_free(l2p, l2p_bytes);
	big_free(s->pages, dirty_bytes * sizeof(*s->pages));
	if (s->paged) {
		big_free(s->pc_ring, s->m.nr_map_blocks * sizeof(u32));
		big_free(s->pc_state, s->m.nr_map_blocks);
		big_free(s->pc_ref, s->m.nr_map_blocks);
		big_free(s->slot_img[0], l2p_bytes);
		big_free(s->slot_img[1], l2p_bytes);
	}
	big_free(dirty, dirty_bytes);
	free(lists);
	free(s->live);
	free(s);
	return true;
}

/* ---- arguments ---- */

static u64 parse_u64(const char *opt, const char *arg, u64 lo, u64 hi)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (!*arg || *end || errno || arg[0] == '-' || v < lo || v > hi)
		usage_error("%s: expected an integer from %" PRIu64 " to %" PRIu64 ", got '%s'",
			    opt, lo, hi, arg);
	return v;
}

static double parse_overwrites(const char *opt, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (!*arg || *end || errno || !(v >= 0) || v > 1000)
		usage_error("%s: expected a number from 0 to 1000, got '%s'", opt, arg);
	return v;
}

#define MAX_LIST	16

static int split_list(char *arg, char **item, const char *opt)
{
	int n = 0;
	char *p;

	while ((p = strsep(&arg, ","))) {
		if (!*p)
			usage_error("%s: empty value in the list", opt);
		if (n == MAX_LIST)
			usage_error("%s: at most %d values", opt, MAX_LIST);
		item[n++] = p;
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "device-mib", required_argument, NULL, 'd' },
		{ "segments", required_argument, NULL, 'n' },
		{ "segment-blocks", required_argument, NULL, 'S' },
		{ "op", required_argument, NULL, 'o' },
		{ "workload", required_argument, NULL, 'w' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "overwrites", required_argument, NULL, 'k' },
		{ "single-head", no_argument, NULL, '1' },
		{ "seed", required_argument, NULL, 's' },
		{ "check", required_argument, NULL, 'c' },
		{ "gc-low", required_argument, NULL, 'L' },
		{ "gc-high", required_argument, NULL, 'H' },
		{ "gc-params", required_argument, NULL, 'P' },
		{ "settle", required_argument, NULL, 'T' },
		{ "timing", no_argument, NULL, 't' },
		{ "exact-cb", no_argument, NULL, 'x' },
		{ "block-birth", no_argument, NULL, 'B' },
		{ "no-heat", no_argument, NULL, 'Q' },
		{ "oracle", no_argument, NULL, 'O' },
		{ "large-head", no_argument, NULL, 'E' },
		{ "gc-sort", no_argument, NULL, 'g' },
		{ "defrag", required_argument, NULL, 'D' },
		{ "birth-group", required_argument, NULL, 'G' },
		{ "map-cache", required_argument, NULL, 'M' },
		{ "gc-bitmap", no_argument, NULL, 'b' },
		{ "wide", no_argument, NULL, 'i' },
		{ "recover", required_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct config cfg = {
		.seg_blocks = 256, .warmup = 2, .overwrites = 3, .seed = 1,
		.settle_pct = 1, .birth_group = 1,
	};
	char opbuf[256] = "10", wlbuf[4096] = "uniform";
	char *ops[MAX_LIST], *wls[MAX_LIST];
	struct workload w[MAX_LIST] = {};
	u32 opv[MAX_LIST];
	int c, nops, nwl, i, j, runs = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			cfg.device_mib = parse_u64("--device-mib", optarg, 1, 1ULL << 24);
			cfg.segments = 0;
			break;
		case 'n':
			cfg.segments = parse_u64("--segments", optarg,
						 DMR_RESERVED_SEGMENTS + DMR_MIN_USER_SEGMENTS,
						 1U << 24);
			cfg.device_mib = 0;
			break;
		case 'S':
			cfg.seg_blocks = parse_u64("--segment-blocks", optarg,
						   DMR_MIN_SEGMENT_BLOCKS,
						   DMR_MAX_SEGMENT_BLOCKS);
			break;
		case 'o':
			if (strlen(optarg) >= sizeof(opbuf))
				usage_error("--op: list too long");
			strcpy(opbuf, optarg);
			break;
		case 'w':
			if (strlen(optarg) >= sizeof(wlbuf))
				usage_error("--workload: list too long");
			strcpy(wlbuf, optarg);
			break;
		case 'W':
			cfg.settle = !strcmp(optarg, "auto");
			cfg.warmup = cfg.settle ? SIM_MAX_WARMUP :
				     parse_overwrites("--warmup", optarg);
			break;
		case 'T':
			cfg.settle_pct = parse_overwrites("--settle", optarg);
			if (cfg.settle_pct <= 0)
				usage_error("--settle must be more than 0");
			break;
		case 't':
			cfg.timing = true;
			break;
		case 'B':
			cfg.block_birth = true;
			break;
		case 'Q':
			cfg.no_heat = true;
			break;
		case 'O':
			cfg.oracle = true;
			break;
		case 'E':
			cfg.large_head = true;
			break;
		case 'g':
			cfg.gc_sort = true;
			break;
		case 'D': {
			char *comma = strchr(optarg, ',');

			if (comma)
				*comma = '\0';
			cfg.defrag = parse_overwrites("--defrag", optarg);
			cfg.defrag_runs = comma ? parse_u64("--defrag", comma + 1, 1,
							    SIM_READ_BLOCKS) : 4;
			break;
		}
		case 'G':
			cfg.block_birth = true;
			cfg.birth_group = parse_u64("--birth-group", optarg, 0, 1U << 20);
			break;
		case 'M':
			cfg.map_cache = parse_u64("--map-cache", optarg, 1, 100);
			break;
		case 'b':
			cfg.gc_bitmap = true;
			break;
		case 'i':
			cfg.wide = true;
			break;
		case 'x':
			cfg.exact_cb = true;
			break;
		case 'R':
			if (!strcmp(optarg, "clock"))
				cfg.recover = SIM_RECOVER_CLOCK;
			else if (!strcmp(optarg, "legacy"))
				cfg.recover = SIM_RECOVER_LEGACY;
			else
				usage_error("--recover takes clock or legacy");
			break;
		case 'k':
			cfg.overwrites = parse_overwrites("--overwrites", optarg);
			if (cfg.overwrites <= 0)
				usage_error("--overwrites must be more than 0");
			break;
		case '1':
			cfg.single = true;
			break;
		case 's':
			cfg.seed = parse_u64("--seed", optarg, 0, UINT64_MAX);
			break;
		case 'c':
			cfg.check_every = parse_u64("--check", optarg, 1, UINT64_MAX);
			break;
		case 'L':
			cfg.gc_low = parse_u64("--gc-low", optarg, 1, INT32_MAX);
			break;
		case 'H':
			cfg.gc_high = parse_u64("--gc-high", optarg, 1, INT32_MAX);
			break;
		case 'P': {
			char *v[MAX_LIST], buf[256];

			if (strlen(optarg) >= sizeof(buf) ||
			    split_list(strcpy(buf, optarg), v, "--gc-params") != 4)
				usage_error("--gc-params: expected RESERVE,LOW,HIGH,BATCH");
			cfg.gc.reserve = parse_u64("--gc-params", v[0], 1, INT32_MAX);
			cfg.gc.low = parse_u64("--gc-params", v[1], 1, INT32_MAX);
			cfg.gc.high = parse_u64("--gc-params", v[2], 1, INT32_MAX);
			cfg.gc.batch = parse_u64("--gc-params", v[3], 1, INT32_MAX);
			break;
		}
		case 'j':
			cfg.json = true;
			break;
		case 'v':
			cfg.verbose = true;
			break;
		case 'h':
			usage();
			return 0;
		case ':':
			usage_error("%s needs a value", argv[optind - 1]);
		default:
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!cfg.device_mib && !cfg.segments)
		cfg.segments = 4096;

	nops = split_list(opbuf, ops, "--op");
	for (i = 0; i < nops; i++)
		opv[i] = parse_u64("--op", ops[i], DMR_MIN_OVERPROVISION,
				   DMR_MAX_OVERPROVISION);
	nwl = split_list(wlbuf, wls, "--workload");
	for (i = 0; i < nwl; i++) {
		size_t k;

		w[i].name = wls[i];
		for (k = 0; k < ARRAY_SIZE(wl_names); k++)
			if (!strcmp(wls[i], wl_names[k].name))
				break;
		if (k < ARRAY_SIZE(wl_names)) {
			w[i].kind = wl_names[k].kind;
		} else if (!strncmp(wls[i], "trace:", 6) && wls[i][6]) {
			w[i].kind = WL_TRACE;
			trace_load(wls[i] + 6, &w[i].trace);
		} else {
			usage_error("--workload: unknown workload '%s' (uniform, hot80, hot95, shift80, cold70, seq, large, mix50, mix50s, trace:FILE)",
				    wls[i]);
		}
	}

	for (i = 0; i < nwl; i++) {
		for (j = 0; j < nops; j++) {
			run(&cfg, opv[j], &w[i]);
			runs++;
		}
	}
	if (cfg.json)
		printf("{\"done\": true, \"runs\": %d, \"consistent\": true}\n", runs);
	else
		printf("remap-sim: %d run%s, map consistent\n", runs, runs == 1 ? "" : "s");
	return 0;
}
