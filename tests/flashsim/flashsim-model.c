// SPDX-License-Identifier: GPL-2.0-only
/*
 * flashsim model: the FTL decisions and their costs (see flashsim-model.h).
 *
 * Pure code, built into dm-flashsim.ko and into the userspace unit test
 * (tests/flashsim/flashsim-model-test.c).  It owns no lock: the caller
 * serialises every call on one struct flashsim_model.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/stddef.h>
#endif
#include "flashsim-model.h"

#define FLASHSIM_NS_PER_US	1000ULL
#define FLASHSIM_NS_PER_S	1000000000ULL

/*
 * Profile defaults.
 *
 * block: Mtron 7025 PRO 32 GB, the single bare drive of seed 000 ("Test
 * Results for Single Bare Drives: Mtron PRO series", Highpoint controller).
 *   read_us=40      the text's device access time ("the true access time
 *                   for the drive is .040 ms", from the 512B row, 10
 *                   threads: 20,751 IOPS = 48 us with the transfer)
 *   read_mibs=114   1M row, 10 threads: 113 IOPS, 113.8M ("this drive
 *                   tests at 114 MB/sec"); 4K then costs 40 + 34 us, 13.5k
 *                   IOPS against the 4K row's 13,223 (10 threads)
 *   prog_mibs=84    "Linear writes ... the drive actually tests at 83.5
 *                   MB/sec" (the 1M random write row, 70.5M, is lower)
 *   erase_kib=256,  random write rows 512B to 64K, 1 thread: 120-125 IOPS,
 *   erase_us=2800   8.0 ms each at every size: one merge costs
 *                   40 + 256K/114 MiB/s + erase + 256K/84 MiB/s
 *                   = 40 + 2193 + 2800 + 2976 us = 8.0 ms (124.8/s).  With
 *                   these bandwidths a 512 KiB erase block could not be
 *                   merged in under 10.4 ms (96/s), so the table bounds the
 *                   unit at about 300 KiB; 2800 us is the remainder, not a
 *                   datasheet erase time
 *   open_blocks=4   not in the tables (one bm-flash thread never has two
 *                   streams); log-block FTLs of the time kept a few
 * page: a generic modern SATA SSD of the Samsung 830 class (seed 001's
 * array members; the seed has no single-drive table, so these are round
 * spec-sheet figures, not a fit): 80 us reads, 520 MiB/s read, 320 MiB/s
 * program, 20 us per write command, 2 MiB erase blocks erased in 3 ms,
 * spare=7 (128 GiB of flash behind 128 GB).
 */
void flashsim_params_default(struct flashsim_params *p, enum flashsim_mode mode)
{
	if (mode == FLASHSIM_BLOCK) {
		*p = (struct flashsim_params) {
			.mode = FLASHSIM_BLOCK, .page_kib = 4, .erase_kib = 256,
			.read_us = 40, .write_us = 0, .read_mibs = 114,
			.prog_mibs = 84, .erase_us = 2800, .open_blocks = 4,
			.spare = 7, .flush_us = 0,
		};
	} else {
		*p = (struct flashsim_params) {
			.mode = FLASHSIM_PAGE, .page_kib = 4, .erase_kib = 2048,
			.read_us = 80, .write_us = 20, .read_mibs = 520,
			.prog_mibs = 320, .erase_us = 3000, .open_blocks = 1,
			.spare = 7, .flush_us = 0,
		};
	}
}

int flashsim_parse_mode(const char *arg, enum flashsim_mode *mode)
{
	if (!strcmp(arg, "block"))
		*mode = FLASHSIM_BLOCK;
	else if (!strcmp(arg, "page"))
		*mode = FLASHSIM_PAGE;
	else
		return -EINVAL;
	return 0;
}

struct flashsim_key {
	const char *name;
	size_t offset;		/* of the u32 in struct flashsim_params */
	u32 min, max;
	bool pow2;
	const char *err_invalid;
	const char *err_range;
};

#define FLASHSIM_KEY(f, lo, hi, p2, range) {				\
	.name = #f, .offset = offsetof(struct flashsim_params, f),	\
	.min = lo, .max = hi, .pow2 = p2,				\
	.err_invalid = "Invalid " #f " (expected " #f "=<number>)",	\
	.err_range = #f " out of range (" range ")" }

static const struct flashsim_key flashsim_keys[] = {
	FLASHSIM_KEY(page_kib, 1, 64, true, "1-64, a power of two"),
	FLASHSIM_KEY(erase_kib, 4, 65536, false, "4-65536"),
	FLASHSIM_KEY(read_us, 0, 1000000, false, "0-1000000"),
	FLASHSIM_KEY(write_us, 0, 1000000, false, "0-1000000"),
	FLASHSIM_KEY(read_mibs, 1, 100000, false, "1-100000"),
	FLASHSIM_KEY(prog_mibs, 1, 100000, false, "1-100000"),
	FLASHSIM_KEY(erase_us, 0, 1000000, false, "0-1000000"),
	FLASHSIM_KEY(open_blocks, 1, FLASHSIM_MAX_OPEN, false, "1-16"),
	FLASHSIM_KEY(spare, 1, 100, false, "1-100 percent"),
	FLASHSIM_KEY(flush_us, 0, 1000000, false, "0-1000000"),
};

int flashsim_parse_param(struct flashsim_params *p, const char *arg, u32 *seen,
			 const char **why)
{
	const char *eq = strchr(arg, '=');
	size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
	unsigned int i, v;
	char dummy;

	for (i = 0; i < ARRAY_SIZE(flashsim_keys); i++) {
		const struct flashsim_key *k = &flashsim_keys[i];

		if (strlen(k->name) != klen || strncmp(k->name, arg, klen))
			continue;
		if (*seen & (1U << i)) {
			*why = "Parameter given twice";
			return -EINVAL;
		}
		if (!eq || sscanf(eq + 1, "%u%c", &v, &dummy) != 1) {
			*why = k->err_invalid;
			return -EINVAL;
		}
		if (v < k->min || v > k->max || (k->pow2 && (v & (v - 1)))) {
			*why = k->err_range;
			return -EINVAL;
		}
		*(u32 *)((char *)p + k->offset) = v;
		*seen |= 1U << i;
		return 0;
	}
	*why = "Unknown parameter (see Documentation/dm-remap-flashsim.rst)";
	return -EINVAL;
}

int flashsim_format_params(const struct flashsim_params *p, char *buf, size_t len)
{
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(flashsim_keys); i++) {
		const struct flashsim_key *k = &flashsim_keys[i];
		u32 v = *(const u32 *)((const char *)p + k->offset);
		int r;

		if (n >= len)
			break;
		r = snprintf(buf + n, len - n, "%s%s=%u", i ? " " : "", k->name, v);
		if (r < 0)
			break;
		n += r;
	}
	return n < len ? (int)n : (int)len;
}

/* Page-mode geometry: logical pages, erase blocks of flash. */
static u64 flashsim_nr_blocks(const struct flashsim_params *p, u64 lpages)
{
	u64 ppb = p->erase_kib / p->page_kib;
	u64 ppages = div64_u64(lpages * (100 + p->spare) + 99, 100);

	return div64_u64(ppages + ppb - 1, ppb);
}

u64 flashsim_state_bytes(const struct flashsim_params *p, u64 nr_sectors)
{
	u64 lpages, nblocks, ppb;

	if (p->mode != FLASHSIM_PAGE)
		return 0;
	lpages = div64_u64(nr_sectors, p->page_kib * 2);
	nblocks = flashsim_nr_blocks(p, lpages);
	ppb = p->erase_kib / p->page_kib;
	/* l2p + p2l + valid + free */
	return 4 * (lpages + nblocks * ppb + 2 * nblocks);
}

int flashsim_params_check(const struct flashsim_params *p, u64 nr_sectors,
			  const char **why)
{
	u64 page_sectors = p->page_kib * 2, erase_sectors = p->erase_kib * 2;
	u64 lpages, lblocks, ppb;

	if (p->erase_kib % p->page_kib) {
		*why = "erase_kib must be a multiple of page_kib";
		return -EINVAL;
	}
	if (!nr_sectors || div64_u64(nr_sectors, page_sectors) * page_sectors != nr_sectors) {
		*why = "Device length must be a multiple of page_kib";
		return -EINVAL;
	}
	if (nr_sectors < erase_sectors) {
		*why = "Device smaller than one erase block";
		return -EINVAL;
	}
	if (p->mode != FLASHSIM_PAGE)
		return 0;
	lpages = div64_u64(nr_sectors, page_sectors);
	ppb = p->erase_kib / p->page_kib;
	if (lpages >= FLASHSIM_NO_PAGE / 2 ||
	    flashsim_state_bytes(p, nr_sectors) > FLASHSIM_MAX_STATE) {
		*why = "Model state would exceed 256 MiB (page mode: ~2.1 MiB/GiB at page_kib=4)";
		return -EINVAL;
	}
	lblocks = div64_u64(lpages + ppb - 1, ppb);
	if (flashsim_nr_blocks(p, lpages) < lblocks + FLASHSIM_MIN_SPARE_BLOCKS) {
		*why = "spare leaves fewer than 4 spare erase blocks for this device";
		return -EINVAL;
	}
	return 0;
}

void flashsim_model_init(struct flashsim_model *m, const struct flashsim_params *p,
			 u64 nr_sectors, void *mem)
{
	u64 ppages;
	u32 i;

	memset(m, 0, sizeof(*m));
	m->p = *p;
	m->nr_sectors = nr_sectors;
	m->page_sectors = p->page_kib * 2;
	m->erase_sectors = p->erase_kib * 2;
	m->pages_per_block = p->erase_kib / p->page_kib;
	if (p->mode != FLASHSIM_PAGE)
		return;

	m->nr_lpages = div64_u64(nr_sectors, m->page_sectors);
	m->nr_blocks = flashsim_nr_blocks(p, m->nr_lpages);
	ppages = (u64)m->nr_blocks * m->pages_per_block;
	m->l2p = mem;
	m->p2l = m->l2p + m->nr_lpages;
	m->valid = m->p2l + ppages;
	m->free = m->valid + m->nr_blocks;
	memset(m->l2p, 0xff, 4 * (m->nr_lpages + ppages));
	memset(m->valid, 0, 4 * m->nr_blocks);
	/* free stack: block 0 on top */
	for (i = 0; i < m->nr_blocks; i++)
		m->free[i] = m->nr_blocks - 1 - i;
	m->nr_free = m->nr_blocks;
	m->active_wp = m->pages_per_block;	/* no active block yet */
}

void flashsim_reset_counters(struct flashsim_model *m)
{
	memset(&m->c, 0, sizeof(m->c));
}

u64 flashsim_schedule(u64 *busy_until, u64 now, u64 service)
{
	u64 start = now > *busy_until ? now : *busy_until;

	*busy_until = start + service;
	return *busy_until;
}

u64 flashsim_xfer_ns(u64 bytes, u32 mibs)
{
	return div64_u64(bytes * FLASHSIM_NS_PER_S, (u64)mibs << 20);
}

/* One merge: read the erase block, erase it, program it whole. */
u64 flashsim_rmw_ns(const struct flashsim_model *m)
{
	u64 eb = (u64)m->p.erase_kib << 10;

	return m->p.read_us * FLASHSIM_NS_PER_US + flashsim_xfer_ns(eb, m->p.read_mibs) +
	       m->p.erase_us * FLASHSIM_NS_PER_US + flashsim_xfer_ns(eb, m->p.prog_mibs);
}

u64 flashsim_read(struct flashsim_model *m, u64 sector, u64 nr)
{
	u64 ns = m->p.read_us * FLASHSIM_NS_PER_US + flashsim_xfer_ns(nr << 9, m->p.read_mibs);

	m->c.reads++;
	m->c.busy_ns += ns;
	return ns;
}

u64 flashsim_flush(struct flashsim_model *m)
{
	u64 ns = m->p.flush_us * FLASHSIM_NS_PER_US;

	m->c.flushes++;
	m->c.busy_ns += ns;
	return ns;
}

/* ---- block-mapped FTL ---- */

static struct flashsim_open *flashsim_find_open(const struct flashsim_model *m, u64 block)
{
	unsigned int i;

	for (i = 0; i < m->p.open_blocks; i++)
		if (m->open[i].stamp && m->open[i].block == block)
			return (struct flashsim_open *)&m->open[i];
	return NULL;
}

enum flashsim_wkind flashsim_block_classify(const struct flashsim_model *m,
					    u64 block, u64 off)
{
	const struct flashsim_open *o = flashsim_find_open(m, block);

	if (o && o->wp == off)
		return FLASHSIM_W_SEQ;
	if (off == 0)
		return FLASHSIM_W_FRESH;
	return FLASHSIM_W_RMW;
}

/* The slot to open a block in: a free slot, else the least recently used. */
static struct flashsim_open *flashsim_open_slot(struct flashsim_model *m)
{
	struct flashsim_open *o, *lru = NULL;
	unsigned int i;

	for (i = 0; i < m->p.open_blocks; i++) {
		o = &m->open[i];
		if (!o->stamp)
			return o;
		if (!lru || o->stamp < lru->stamp)
			lru = o;
	}
	return lru;
}

/* One write inside erase block @block, sectors [off, off + nr). */
static u64 flashsim_block_write_one(struct flashsim_model *m, u64 block, u64 off, u64 nr)
{
	enum flashsim_wkind kind = flashsim_block_classify(m, block, off);
	struct flashsim_open *o = flashsim_find_open(m, block);
	u64 ns;

	if (kind == FLASHSIM_W_RMW) {
		ns = flashsim_rmw_ns(m);
		m->c.rmws++;
		m->c.erases++;
		m->c.flash_pages += m->pages_per_block;
	} else {
		ns = flashsim_xfer_ns(nr << 9, m->p.prog_mibs);
		m->c.flash_pages += div64_u64(nr + m->page_sectors - 1, m->page_sectors);
	}
	if (off + nr >= m->erase_sectors) {
		/* written to its end: the block closes (takes no slot) */
		if (o)
			o->stamp = 0;
		return ns;
	}
	if (!o)
		o = flashsim_open_slot(m);
	o->block = block;
	o->wp = off + nr;
	o->stamp = ++m->clock;
	return ns;
}

/* ---- page-mapped FTL ---- */

static void flashsim_unmap(struct flashsim_model *m, u32 lp)
{
	u32 pp = m->l2p[lp];

	if (pp == FLASHSIM_NO_PAGE)
		return;
	m->p2l[pp] = FLASHSIM_NO_PAGE;
	m->valid[pp / m->pages_per_block]--;
	m->l2p[lp] = FLASHSIM_NO_PAGE;
}

/* Next page of the log; opens a free erase block when the active is full. */
static u32 flashsim_log_page(struct flashsim_model *m)
{
	if (m->active_wp == m->pages_per_block) {
		/* flashsim_params_check() and FLASHSIM_GC_FREE keep one free */
		if (!m->nr_free)
			return FLASHSIM_NO_PAGE;
		m->active = m->free[--m->nr_free];
		m->active_wp = 0;
	}
	return m->active * m->pages_per_block + m->active_wp++;
}

static void flashsim_map(struct flashsim_model *m, u32 lp, u32 pp)
{
	m->l2p[lp] = pp;
	m->p2l[pp] = lp;
	m->valid[pp / m->pages_per_block]++;
}

/*
 * Greedy victim: the erase block with the fewest valid pages among those
 * holding data (not free, not the active log block); the lowest number on
 * a tie.  FLASHSIM_NO_PAGE if there is none.
 */
u32 flashsim_gc_victim(const struct flashsim_model *m)
{
	u32 b, i, best = FLASHSIM_NO_PAGE, best_valid = FLASHSIM_NO_PAGE;
	bool is_free;

	for (b = 0; b < m->nr_blocks; b++) {
		if (b == m->active && m->active_wp < m->pages_per_block)
			continue;
		is_free = false;
		for (i = 0; i < m->nr_free && !is_free; i++)
			is_free = m->free[i] == b;
		if (is_free)
			continue;
		if (m->valid[b] < best_valid) {
			best = b;
			best_valid = m->valid[b];
		}
	}
	return best;
}

/* One GC step: copy the victim's valid pages to the log, erase it. */
static u64 flashsim_gc_one(struct flashsim_model *m, bool *stuck)
{
	u64 page = (u64)m->p.page_kib << 10, ns = 0;
	u32 v = flashsim_gc_victim(m), i, pp, lp;

	if (v == FLASHSIM_NO_PAGE || m->valid[v] >= m->pages_per_block) {
		*stuck = true;
		return 0;
	}
	for (i = 0; i < m->pages_per_block && m->valid[v]; i++) {
		lp = m->p2l[v * m->pages_per_block + i];
		if (lp == FLASHSIM_NO_PAGE)
			continue;
		pp = flashsim_log_page(m);
		if (pp == FLASHSIM_NO_PAGE) {
			*stuck = true;
			return ns;
		}
		flashsim_unmap(m, lp);
		flashsim_map(m, lp, pp);
		ns += flashsim_xfer_ns(page, m->p.read_mibs) +
		      flashsim_xfer_ns(page, m->p.prog_mibs);
		m->c.gc_copies++;
		m->c.flash_pages++;
	}
	m->free[m->nr_free++] = v;
	m->c.erases++;
	return ns + m->p.erase_us * FLASHSIM_NS_PER_US;
}

static u64 flashsim_page_write(struct flashsim_model *m, u64 sector, u64 nr)
{
	u64 first = div64_u64(sector, m->page_sectors);
	u64 last = div64_u64(sector + nr - 1, m->page_sectors);
	u64 ns = 0, lp, npages = 0;
	bool stuck = false;
	u32 pp;

	for (lp = first; lp <= last && lp < m->nr_lpages; lp++) {
		pp = flashsim_log_page(m);
		if (pp == FLASHSIM_NO_PAGE)
			break;
		flashsim_unmap(m, lp);
		flashsim_map(m, lp, pp);
		npages++;
		while (m->nr_free < FLASHSIM_GC_FREE && !stuck)
			ns += flashsim_gc_one(m, &stuck);
	}
	m->c.flash_pages += npages;
	return ns + flashsim_xfer_ns(npages * ((u64)m->p.page_kib << 10), m->p.prog_mibs);
}

u64 flashsim_write(struct flashsim_model *m, u64 sector, u64 nr)
{
	u64 ns = m->p.write_us * FLASHSIM_NS_PER_US;

	if (!nr || sector >= m->nr_sectors)
		return 0;
	if (nr > m->nr_sectors - sector)
		nr = m->nr_sectors - sector;
	m->c.writes++;
	m->c.host_pages += div64_u64(sector + nr - 1, m->page_sectors) -
			   div64_u64(sector, m->page_sectors) + 1;
	if (m->p.mode == FLASHSIM_PAGE) {
		ns += flashsim_page_write(m, sector, nr);
	} else {
		while (nr) {
			u64 block = div64_u64(sector, m->erase_sectors);
			u64 off = sector - block * m->erase_sectors;
			u64 n = min_t(u64, nr, m->erase_sectors - off);

			ns += flashsim_block_write_one(m, block, off, n);
			sector += n;
			nr -= n;
		}
	}
	m->c.busy_ns += ns;
	return ns;
}

/* Unmaps the pages the range covers whole (page mode); costs nothing. */
u64 flashsim_discard(struct flashsim_model *m, u64 sector, u64 nr)
{
	u64 lp, end;

	m->c.discards++;
	if (m->p.mode != FLASHSIM_PAGE || sector >= m->nr_sectors)
		return 0;
	end = min_t(u64, sector + nr, m->nr_sectors);
	lp = div64_u64(sector + m->page_sectors - 1, m->page_sectors);
	for (; (lp + 1) * m->page_sectors <= end; lp++)
		flashsim_unmap(m, lp);
	return 0;
}
