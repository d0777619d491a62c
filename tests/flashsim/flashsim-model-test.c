// SPDX-License-Identifier: GPL-2.0-only
/*
 * Userspace unit test of the flashsim model (flashsim-model.c, the same
 * file dm-flashsim.ko is built from).  Built and run by
 * tests/host/test_flashsim_model.py, which also breaks the model on
 * purpose (mutations) and checks that the test named for each break
 * fails.
 *
 * Output: "ok - NAME" or "FAIL - NAME: why" per test, then
 * "N passed, M failed".  Exit status 1 if any test failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashsim-model.h"

static int failed_checks;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		if (!failed_checks)					\
			printf("FAIL - %s: ", __func__);		\
		else							\
			printf("    also: ");				\
		printf(__VA_ARGS__);					\
		printf(" [%s:%d: %s]\n", __FILE__, __LINE__, #cond);	\
		failed_checks++;					\
	}								\
} while (0)

#define US 1000ULL
#define KIB 1024ULL
#define MIB (1024ULL * 1024)

struct sim {
	struct flashsim_model m;
	void *mem;
};

static void sim_init(struct sim *s, const struct flashsim_params *p, u64 bytes)
{
	const char *why = NULL;
	u64 n = bytes >> 9;

	if (flashsim_params_check(p, n, &why)) {
		printf("bad test parameters: %s\n", why);
		exit(2);
	}
	s->mem = calloc(1, flashsim_state_bytes(p, n) + 8);
	if (!s->mem)
		exit(2);
	flashsim_model_init(&s->m, p, n, s->mem);
}

static void sim_free(struct sim *s)
{
	free(s->mem);
}

/* a small deterministic generator (xorshift64) */
static u64 rng_state;

static u64 rnd(u64 n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state % n;
}

static double waf(const struct flashsim_counters *a, const struct flashsim_counters *b)
{
	return (double)(b->flash_pages - a->flash_pages) / (double)(b->host_pages - a->host_pages);
}

/* The block defaults reproduce the seed's Mtron 7025 rows. */
static void test_defaults_fit_mtron(void)
{
	struct flashsim_params p;
	struct sim s;
	double rmw, rd4k, wr1m;

	flashsim_params_default(&p, FLASHSIM_BLOCK);
	sim_init(&s, &p, 64 * MIB);
	rmw = flashsim_rmw_ns(&s.m);
	rd4k = flashsim_read(&s.m, 0, 8);
	wr1m = flashsim_write(&s.m, 0, 2048);
	CHECK(1e9 / rmw > 120 && 1e9 / rmw < 128,
	      "4K random write %.1f/s, want 120-128 (seed 000: 120-125)", 1e9 / rmw);
	CHECK(1e9 / rd4k > 12000 && 1e9 / rd4k < 14000,
	      "4K read %.0f/s, want 12000-14000 (seed 000: 13,223)", 1e9 / rd4k);
	CHECK(MIB * 1e9 / wr1m / MIB > 80 && MIB * 1e9 / wr1m / MIB < 90,
	      "sequential write %.1f MiB/s, want 80-90 (seed 000: 83.5)", MIB * 1e9 / wr1m / MIB);
	sim_free(&s);
}

/* Sequential writes, through erase-block boundaries, cost program time only. */
static void test_block_sequential_program_only(void)
{
	struct flashsim_params p;
	struct sim s;
	u64 sec, ns, want4k, want1m;

	flashsim_params_default(&p, FLASHSIM_BLOCK);
	sim_init(&s, &p, 64 * MIB);
	want4k = flashsim_xfer_ns(4 * KIB, p.prog_mibs);
	want1m = flashsim_xfer_ns(MIB, p.prog_mibs);
	for (sec = 0; sec < 3 * 512 + 24; sec += 8) {	/* 3 erase blocks and more */
		ns = flashsim_write(&s.m, sec, 8);
		CHECK(ns == want4k, "4K write at sector %llu cost %llu ns, want %llu",
		      (unsigned long long)sec, (unsigned long long)ns, (unsigned long long)want4k);
	}
	for (sec = 8 * 2048; sec < 12 * 2048; sec += 2048) {	/* 1 MiB writes */
		ns = flashsim_write(&s.m, sec, 2048);
		CHECK(ns > want1m - 4 && ns <= want1m,
		      "1M write at sector %llu cost %llu ns, want %llu", (unsigned long long)sec,
		      (unsigned long long)ns, (unsigned long long)want1m);
	}
	CHECK(s.m.c.rmws == 0, "%llu read-modify-writes", (unsigned long long)s.m.c.rmws);
	CHECK(s.m.c.flash_pages == s.m.c.host_pages, "flash pages %llu, host pages %llu",
	      (unsigned long long)s.m.c.flash_pages, (unsigned long long)s.m.c.host_pages);
	sim_free(&s);
}

/* A random 4K write pays a whole erase-block read-modify-write. */
static void test_block_random_write_rmw(void)
{
	struct flashsim_params p;
	struct sim s;
	u64 ns, i, n = 4000, nsum = 0;
	double mean;

	flashsim_params_default(&p, FLASHSIM_BLOCK);
	sim_init(&s, &p, 64 * MIB);
	ns = flashsim_write(&s.m, 8, 8);	/* 4 KiB into erase block 0 */
	CHECK(ns == flashsim_rmw_ns(&s.m), "4K write at 4K cost %llu ns, want the RMW's %llu",
	      (unsigned long long)ns, (unsigned long long)flashsim_rmw_ns(&s.m));
	CHECK(ns == 40 * US + flashsim_xfer_ns(256 * KIB, 114) + 2800 * US +
	      flashsim_xfer_ns(256 * KIB, 84), "the RMW is read + erase + program of 256 KiB");
	CHECK(s.m.c.rmws == 1 && s.m.c.erases == 1 && s.m.c.flash_pages == 64,
	      "rmws %llu erases %llu flash pages %llu, want 1 1 64", (unsigned long long)s.m.c.rmws,
	      (unsigned long long)s.m.c.erases, (unsigned long long)s.m.c.flash_pages);
	/* the same page again: not at the write pointer */
	ns = flashsim_write(&s.m, 8, 8);
	CHECK(ns == flashsim_rmw_ns(&s.m), "rewrite of the same 4K cost %llu ns",
	      (unsigned long long)ns);

	rng_state = 88172645463325252ULL;
	flashsim_reset_counters(&s.m);
	for (i = 0; i < n; i++)
		nsum += flashsim_write(&s.m, rnd(64 * MIB / 4096) * 8, 8);
	mean = (double)nsum / n;
	/* 1 in 64 lands at offset 0 of its erase block and is cheap */
	CHECK(s.m.c.rmws > n * 60 / 64 && s.m.c.rmws < n, "%llu RMWs of %llu random writes",
	      (unsigned long long)s.m.c.rmws, (unsigned long long)n);
	CHECK(1e9 / mean > 120 && 1e9 / mean < 132, "random 4K writes %.1f/s", 1e9 / mean);
	sim_free(&s);
}

/* A stream that starts mid-block pays one RMW, then continues cheaply. */
static void test_block_stream_mid_block(void)
{
	struct flashsim_params p;
	struct sim s;
	u64 ns, sec;

	flashsim_params_default(&p, FLASHSIM_BLOCK);
	sim_init(&s, &p, 64 * MIB);
	ns = flashsim_write(&s.m, 100 * 8, 8);
	CHECK(ns == flashsim_rmw_ns(&s.m), "first write mid-block cost %llu",
	      (unsigned long long)ns);
	for (sec = 101 * 8; sec < 140 * 8; sec += 8) {
		ns = flashsim_write(&s.m, sec, 8);
		CHECK(ns == flashsim_xfer_ns(4096, p.prog_mibs), "continuation at %llu cost %llu",
		      (unsigned long long)sec, (unsigned long long)ns);
	}
	sim_free(&s);
}

/* Open blocks: interleaved streams stay fast up to open_blocks; LRU eviction. */
static void test_block_open_lru(void)
{
	struct flashsim_params p;
	struct sim s;
	u64 A = 10 * 512, B = 20 * 512, C = 30 * 512, D = 40 * 512, prog, rmw;
	u64 i, nsum;

	flashsim_params_default(&p, FLASHSIM_BLOCK);
	p.open_blocks = 2;
	sim_init(&s, &p, 64 * MIB);
	prog = flashsim_xfer_ns(4096, p.prog_mibs);
	rmw = flashsim_rmw_ns(&s.m);

	/* two interleaved streams, two open blocks: all program-only */
	nsum = 0;
	for (i = 0; i < 8; i++) {
		nsum += flashsim_write(&s.m, A + i * 8, 8);
		nsum += flashsim_write(&s.m, B + i * 8, 8);
	}
	CHECK(nsum == 16 * prog && s.m.c.rmws == 0, "2 streams / 2 open: %llu RMWs",
	      (unsigned long long)s.m.c.rmws);

	/* A is used last; opening C evicts the least recently used, B */
	CHECK(flashsim_write(&s.m, A + 8 * 8, 8) == prog, "A continues");
	CHECK(flashsim_write(&s.m, C, 8) == prog, "C starts at offset 0");
	CHECK(flashsim_block_classify(&s.m, A / 512, 9 * 8) == FLASHSIM_W_SEQ,
	      "A (most recent) was evicted");
	CHECK(flashsim_block_classify(&s.m, B / 512, 8 * 8) == FLASHSIM_W_RMW,
	      "B (least recent) is still open");
	CHECK(flashsim_write(&s.m, A + 9 * 8, 8) == prog, "A (most recent) still open");
	CHECK(flashsim_write(&s.m, B + 8 * 8, 8) == rmw, "B (LRU) continuing costs an RMW");

	/* three streams over two open blocks thrash: every write an RMW */
	flashsim_reset_counters(&s.m);
	for (i = 20; i < 28; i++) {
		flashsim_write(&s.m, A + i * 8, 8);
		flashsim_write(&s.m, B + i * 8, 8);
		flashsim_write(&s.m, D + i * 8, 8);
	}
	CHECK(s.m.c.rmws == 24, "3 streams / 2 open: %llu RMWs of 24 writes",
	      (unsigned long long)s.m.c.rmws);

	/* a whole erase block written at once takes no slot */
	sim_free(&s);
	sim_init(&s, &p, 64 * MIB);
	flashsim_write(&s.m, A, 8);
	flashsim_write(&s.m, B, 8);
	flashsim_write(&s.m, C, 512);
	CHECK(flashsim_write(&s.m, A + 8, 8) == prog && flashsim_write(&s.m, B + 8, 8) == prog,
	      "a whole-block write evicted an open block");
	/* a stream that fills its block frees its slot */
	for (i = 0; i < 512; i += 64)		/* evicts A, the LRU */
		flashsim_write(&s.m, D + i, 64);
	CHECK(flashsim_block_classify(&s.m, A / 512, 16) == FLASHSIM_W_RMW, "D evicted A");
	flashsim_write(&s.m, C, 8);		/* opens C in D's freed slot */
	CHECK(flashsim_write(&s.m, B + 16, 8) == prog, "a full block kept its slot");
	sim_free(&s);
}

static void small_page_params(struct flashsim_params *p)
{
	flashsim_params_default(p, FLASHSIM_PAGE);
	p->erase_kib = 256;		/* 64 pages */
	p->spare = 10;
}

/* Page mode: writes to a fresh device cost program time, no GC. */
static void test_page_fresh_no_gc(void)
{
	struct flashsim_params p;
	struct sim s;
	u64 i, ns, want, lpages;

	small_page_params(&p);
	sim_init(&s, &p, 32 * MIB);
	lpages = s.m.nr_lpages;
	want = p.write_us * US + flashsim_xfer_ns(4096, p.prog_mibs);
	rng_state = 12345;
	for (i = 0; i < lpages / 2; i++) {
		ns = flashsim_write(&s.m, rnd(lpages) * 8, 8);
		CHECK(ns == want, "write %llu cost %llu, want %llu", (unsigned long long)i,
		      (unsigned long long)ns, (unsigned long long)want);
		if (ns != want)
			break;
	}
	CHECK(s.m.c.gc_copies == 0 && s.m.c.erases == 0, "GC on a half-written device");
	sim_free(&s);
}

/* Page mode: write amplification rises as the device fills. */
static void test_page_waf_rises(void)
{
	struct flashsim_params p;
	struct flashsim_counters c0, c1, c2;
	struct sim s;
	u64 i, lpages, gc_write_ns = 0, ns;
	double w_fresh, w_full;

	small_page_params(&p);
	sim_init(&s, &p, 32 * MIB);
	lpages = s.m.nr_lpages;
	rng_state = 777;
	c0 = s.m.c;
	for (i = 0; i < lpages; i++)		/* one capacity of random writes */
		flashsim_write(&s.m, rnd(lpages) * 8, 8);
	c1 = s.m.c;
	w_fresh = waf(&c0, &c1);
	for (i = 0; i < 3 * lpages; i++) {	/* three more: steady state */
		u64 copies = s.m.c.gc_copies;

		ns = flashsim_write(&s.m, rnd(lpages) * 8, 8);
		if (s.m.c.gc_copies > copies && ns > gc_write_ns)
			gc_write_ns = ns;
	}
	c1 = s.m.c;
	for (i = 0; i < lpages; i++)
		flashsim_write(&s.m, rnd(lpages) * 8, 8);
	c2 = s.m.c;
	w_full = waf(&c1, &c2);
	CHECK(w_full > 2.0 && w_full < 12.0,
	      "steady-state WAF %.2f, want 2-12 (greedy, 10%% spare)", w_full);
	CHECK(w_fresh == 1.0, "fresh WAF %.2f", w_fresh);
	CHECK(gc_write_ns > 10 * (p.write_us * US + flashsim_xfer_ns(4096, p.prog_mibs)),
	      "a write that triggers GC costs %llu ns: copies and erase not charged",
	      (unsigned long long)gc_write_ns);
	CHECK(s.m.c.erases > 0 && s.m.c.gc_copies > 0, "no GC");
	sim_free(&s);
}

/* Page mode: after discarding half the device, WAF falls. */
static void test_page_discard_lowers_waf(void)
{
	struct flashsim_params p;
	struct flashsim_counters a, b;
	struct sim s, ctl;
	u64 i, lpages, seed;
	double w_before, w_disc, w_ctl;

	small_page_params(&p);
	sim_init(&s, &p, 32 * MIB);
	sim_init(&ctl, &p, 32 * MIB);
	lpages = s.m.nr_lpages;
	rng_state = 4242;
	for (i = 0; i < 4 * lpages; i++) {
		u64 lp = rnd(lpages);

		flashsim_write(&s.m, lp * 8, 8);
		flashsim_write(&ctl.m, lp * 8, 8);
	}
	a = s.m.c;
	for (i = 0; i < lpages; i++) {
		u64 lp = rnd(lpages);

		flashsim_write(&s.m, lp * 8, 8);
		flashsim_write(&ctl.m, lp * 8, 8);
	}
	b = s.m.c;
	w_before = waf(&a, &b);

	flashsim_discard(&s.m, lpages / 2 * 8, lpages / 2 * 8);	/* upper half */
	seed = rng_state;
	a = s.m.c;
	for (i = 0; i < 2 * lpages; i++)
		flashsim_write(&s.m, rnd(lpages / 2) * 8, 8);
	b = s.m.c;
	w_disc = waf(&a, &b);
	rng_state = seed;
	a = ctl.m.c;
	for (i = 0; i < 2 * lpages; i++)
		flashsim_write(&ctl.m, rnd(lpages / 2) * 8, 8);
	b = ctl.m.c;
	w_ctl = waf(&a, &b);
	CHECK(w_disc < w_before * 0.6, "WAF %.2f after the discard, %.2f before", w_disc, w_before);
	CHECK(w_disc < w_ctl * 0.8, "WAF %.2f after the discard, %.2f without it", w_disc, w_ctl);
	sim_free(&s);
	sim_free(&ctl);
}

/* Greedy victim: fewest valid pages among used blocks; never free or active. */
static void test_gc_victim_greedy(void)
{
	struct flashsim_params p;
	struct sim s;
	u32 b, want, best, i, rounds;
	bool is_free;

	small_page_params(&p);
	sim_init(&s, &p, 32 * MIB);
	rng_state = 99;
	for (rounds = 0; rounds < 20; rounds++) {
		for (i = 0; i < s.m.nr_lpages / 4; i++)
			flashsim_write(&s.m, rnd(s.m.nr_lpages) * 8, 8);
		want = FLASHSIM_NO_PAGE;
		best = FLASHSIM_NO_PAGE;
		for (b = 0; b < s.m.nr_blocks; b++) {
			is_free = false;
			for (i = 0; i < s.m.nr_free; i++)
				is_free |= s.m.free[i] == b;
			if (is_free || (b == s.m.active && s.m.active_wp < s.m.pages_per_block))
				continue;
			if (s.m.valid[b] < best) {
				best = s.m.valid[b];
				want = b;
			}
		}
		b = flashsim_gc_victim(&s.m);
		CHECK(b == want, "round %u: victim %u (valid %u), want %u (valid %u)", rounds, b,
		      b < s.m.nr_blocks ? s.m.valid[b] : 0, want, best);
	}
	/* a used block with no valid page is the first choice */
	for (b = 0; b < s.m.nr_blocks; b++)
		if (b != s.m.active)
			break;
	for (i = 0; i < s.m.nr_lpages; i++)
		if (s.m.l2p[i] != FLASHSIM_NO_PAGE && s.m.l2p[i] / s.m.pages_per_block == b)
			flashsim_discard(&s.m, (u64)i * 8, 8);
	CHECK(s.m.valid[b] == 0, "block %u still has %u valid pages", b, s.m.valid[b]);
	CHECK(flashsim_gc_victim(&s.m) == b || s.m.valid[flashsim_gc_victim(&s.m)] == 0,
	      "an empty block %u is not the victim", b);
	sim_free(&s);
}

static void test_reads_and_flush(void)
{
	struct flashsim_params p;
	struct sim s;

	flashsim_params_default(&p, FLASHSIM_BLOCK);
	sim_init(&s, &p, 64 * MIB);
	CHECK(flashsim_read(&s.m, 123, 8) == 40 * US + flashsim_xfer_ns(4096, 114), "4K read");
	CHECK(flashsim_read(&s.m, 0, 2048) == 40 * US + flashsim_xfer_ns(MIB, 114), "1M read");
	CHECK(flashsim_flush(&s.m) == 0, "flush_us=0 costs nothing");
	CHECK(s.m.c.reads == 2 && s.m.c.flushes == 1 && s.m.c.writes == 0, "counters");
	CHECK(s.m.c.busy_ns == 80 * US + flashsim_xfer_ns(4096, 114) + flashsim_xfer_ns(MIB, 114),
	      "busy time is the sum of the costs");
	flashsim_reset_counters(&s.m);
	CHECK(s.m.c.reads == 0 && s.m.c.busy_ns == 0, "reset");
	sim_free(&s);
}

static void test_schedule(void)
{
	u64 busy = 0;

	CHECK(flashsim_schedule(&busy, 100, 10) == 110, "idle media starts now");
	CHECK(flashsim_schedule(&busy, 105, 10) == 120, "busy media queues");
	CHECK(flashsim_schedule(&busy, 105, 0) == 120, "a free command still waits its turn");
	CHECK(flashsim_schedule(&busy, 500, 1) == 501, "idle again");
	CHECK(busy == 501, "busy_until %llu", (unsigned long long)busy);
}

static void test_parse(void)
{
	struct flashsim_params p;
	enum flashsim_mode mode;
	const char *why = NULL;
	static const char want1[] = "page_kib=4 erase_kib=512 read_us=40 write_us=0 ";
	static const char want2[] =
		"read_mibs=114 prog_mibs=84 erase_us=2800 open_blocks=16 spare=7 flush_us=0";
	char buf[256];
	u32 seen = 0;

	CHECK(!flashsim_parse_mode("block", &mode) && mode == FLASHSIM_BLOCK, "block");
	CHECK(!flashsim_parse_mode("page", &mode) && mode == FLASHSIM_PAGE, "page");
	CHECK(flashsim_parse_mode("linear", &mode) == -EINVAL, "bad mode");
	flashsim_params_default(&p, FLASHSIM_BLOCK);
	CHECK(!flashsim_parse_param(&p, "erase_kib=512", &seen, &why) && p.erase_kib == 512, "set");
	CHECK(flashsim_parse_param(&p, "erase_kib=1024", &seen, &why) == -EINVAL &&
	      !strcmp(why, "Parameter given twice"), "duplicate: %s", why);
	CHECK(flashsim_parse_param(&p, "read_us=12x", &seen, &why) == -EINVAL &&
	      !strcmp(why, "Invalid read_us (expected read_us=<number>)"), "garbage: %s", why);
	CHECK(flashsim_parse_param(&p, "read_us", &seen, &why) == -EINVAL, "no value");
	CHECK(flashsim_parse_param(&p, "page_kib=3", &seen, &why) == -EINVAL &&
	      !strcmp(why, "page_kib out of range (1-64, a power of two)"), "pow2: %s", why);
	CHECK(flashsim_parse_param(&p, "open_blocks=17", &seen, &why) == -EINVAL, "open range");
	CHECK(flashsim_parse_param(&p, "open_blocks=0", &seen, &why) == -EINVAL, "open range");
	CHECK(flashsim_parse_param(&p, "erase=4", &seen, &why) == -EINVAL &&
	      !strncmp(why, "Unknown parameter", 17), "unknown: %s", why);
	CHECK(!flashsim_parse_param(&p, "open_blocks=16", &seen, &why) && p.open_blocks == 16,
	      "max");
	flashsim_format_params(&p, buf, sizeof(buf));
	CHECK(!strncmp(buf, want1, strlen(want1)) && !strcmp(buf + strlen(want1), want2),
	      "format: %s", buf);
}

static void test_params_check(void)
{
	struct flashsim_params p;
	const char *why = NULL;

	flashsim_params_default(&p, FLASHSIM_PAGE);
	CHECK(!flashsim_params_check(&p, 128 * MIB >> 9, &why), "128 MiB page mode: %s", why);
	CHECK(flashsim_params_check(&p, 200ULL * 1024 * MIB >> 9, &why) == -EINVAL &&
	      !strncmp(why, "Model state would exceed 256 MiB", 32), "200 GiB page mode: %s", why);
	CHECK(flashsim_state_bytes(&p, 1024 * MIB >> 9) < 2200 * KIB &&
	      flashsim_state_bytes(&p, 1024 * MIB >> 9) > 2000 * KIB, "~2.1 MiB per GiB: %llu",
	      (unsigned long long)flashsim_state_bytes(&p, 1024 * MIB >> 9));
	p.spare = 1;
	CHECK(flashsim_params_check(&p, 128 * MIB >> 9, &why) == -EINVAL &&
	      !strncmp(why, "spare leaves", 12), "spare=1: %s", why);
	flashsim_params_default(&p, FLASHSIM_BLOCK);
	CHECK(!flashsim_params_check(&p, 1ULL << 40 >> 9, &why) &&
	      flashsim_state_bytes(&p, 1ULL << 40 >> 9) == 0, "block mode needs no per-GiB state");
	CHECK(flashsim_params_check(&p, 128 * MIB / 512 + 1, &why) == -EINVAL, "odd length");
	CHECK(flashsim_params_check(&p, 128 * KIB >> 9, &why) == -EINVAL, "below one erase block");
	p.page_kib = 8;
	p.erase_kib = 260;
	CHECK(flashsim_params_check(&p, 128 * MIB >> 9, &why) == -EINVAL &&
	      !strcmp(why, "erase_kib must be a multiple of page_kib"), "%s", why);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
#define T(f) { #f, f }
		T(test_defaults_fit_mtron),
		T(test_block_sequential_program_only),
		T(test_block_random_write_rmw),
		T(test_block_stream_mid_block),
		T(test_block_open_lru),
		T(test_page_fresh_no_gc),
		T(test_page_waf_rises),
		T(test_page_discard_lowers_waf),
		T(test_gc_victim_greedy),
		T(test_reads_and_flush),
		T(test_schedule),
		T(test_parse),
		T(test_params_check),
#undef T
	};
	unsigned int i, pass = 0, fail = 0;

	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		failed_checks = 0;
		tests[i].fn();
		if (failed_checks) {
			fail++;
		} else {
			pass++;
			printf("ok - %s\n", tests[i].name);
		}
	}
	printf("%u passed, %u failed\n", pass, fail);
	return fail ? 1 : 0;
}
