// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap map and segment accounting.
 *
 * Pure code (see dmr-pure.h); locking is the caller's (see dmr-map.h).
 * Invariants kept by every function here (dmr_map_consistent()): the sum
 * of the segments' valid counts equals @mapped, and equals the number of
 * non-zero map entries; @nr_free and @nr_prefree count the free and
 * prefree segments; while @track is on, every segment is on the list its
 * state names and no other (dmr_map_lists_consistent()).
 *
 * The lists: a segment's state changes only here, each change between
 * dmr_seg_unlist() and dmr_seg_list(), so each costs O(1) whatever the
 * device size.
 */
#include "dmr-map.h"

/* Which list @s belongs on (DMR_SEG_LIST_*), its index in @m->lists in @list. */
static u32 dmr_seg_list_want(const struct dmr_map *m, const struct dmr_seg *s,
			     u32 *list)
{
	u32 wait;

	if (dmr_seg_is_free(s)) {
		*list = m->seg_blocks + 1 + DMR_REUSE_WAITS;
		return DMR_SEG_LIST_FREE;
	}
	if (s->flags & DMR_SEG_PREFREE) {
		wait = dmr_seg_reuse_wait(s, m->ckpt_seq, m->flush_seq);
		*list = m->seg_blocks + 1 + wait;
		return DMR_SEG_LIST_PREFREE + wait;
	}
	if ((s->flags & DMR_SEG_GC_MASK) == DMR_SEG_USED && s->valid <= m->seg_blocks) {
		*list = s->valid;
		return DMR_SEG_LIST_BUCKET;
	}
	return DMR_SEG_LIST_NONE;
}

/* The list @s is on (its DMR_SEG_LIST_* bits and, in a bucket, its count). */
static u32 dmr_seg_list_of(const struct dmr_map *m, const struct dmr_seg *s)
{
	u32 kind = (s->flags & DMR_SEG_LIST_MASK) >> DMR_SEG_LIST_SHIFT;

	if (kind == DMR_SEG_LIST_BUCKET)
		return s->valid;
	if (kind == DMR_SEG_LIST_FREE)
		return m->seg_blocks + 1 + DMR_REUSE_WAITS;
	return m->seg_blocks + 1 + kind - DMR_SEG_LIST_PREFREE;
}

/* Unlink segment @seg from list @list (links and head only). */
static void dmr_list_del(struct dmr_map *m, u32 list, u32 seg)
{
	struct dmr_seg *s = &m->segs[seg];
	u32 *head = &m->lists[list];

	if (s->next == seg) {
		*head = DMR_NO_SEGMENT;
		return;
	}
	m->segs[s->prev].next = s->next;
	m->segs[s->next].prev = s->prev;
	if (*head == seg)
		*head = s->next;
}

/* Link segment @seg at the tail of list @list (links and head only). */
static void dmr_list_add(struct dmr_map *m, u32 list, u32 seg)
{
	struct dmr_seg *s = &m->segs[seg];
	u32 *head = &m->lists[list];
	struct dmr_seg *first;

	if (*head == DMR_NO_SEGMENT) {
		*head = seg;
		s->next = seg;
		s->prev = seg;
		return;
	}
	first = &m->segs[*head];
	s->next = *head;
	s->prev = first->prev;
	m->segs[first->prev].next = seg;
	first->prev = seg;
}

/* Take segment @seg off its list, if it is on one. */
static void dmr_seg_unlist(struct dmr_map *m, u32 seg)
{
	struct dmr_seg *s = &m->segs[seg];
	u32 kind = (s->flags & DMR_SEG_LIST_MASK) >> DMR_SEG_LIST_SHIFT;

	if (kind == DMR_SEG_LIST_NONE || !m->track)
		return;
	dmr_list_del(m, dmr_seg_list_of(m, s), seg);
	dmr_seg_flags(s, 0, DMR_SEG_LIST_MASK);
	if (kind == DMR_SEG_LIST_BUCKET)
		m->nr_bucketed--;
	else if (kind != DMR_SEG_LIST_FREE)
		m->nr_wait[kind - DMR_SEG_LIST_PREFREE]--;
}

/* Put segment @seg, on no list, at the tail of the list its state names. */
static void dmr_seg_list(struct dmr_map *m, u32 seg)
{
	struct dmr_seg *s = &m->segs[seg];
	u32 kind, list;

	if (!m->track)
		return;
	kind = dmr_seg_list_want(m, s, &list);
	if (kind == DMR_SEG_LIST_NONE)
		return;
	dmr_list_add(m, list, seg);
	dmr_seg_flags(s, kind << DMR_SEG_LIST_SHIFT, 0);
	if (kind == DMR_SEG_LIST_BUCKET) {
		m->nr_bucketed++;
		if (list < m->bucket_min)
			m->bucket_min = list;
	} else if (kind != DMR_SEG_LIST_FREE) {
		m->nr_wait[kind - DMR_SEG_LIST_PREFREE]++;
	}
}

/**
 * dmr_map_init_wide() - set up an empty map over caller-allocated arrays
 * @m: the map
 * @wide: 8-byte entries, 512 a page (a device formatted --wide), else 4
 * @pages: dmr_map_blocks(@nr_logical, @wide) page pointers
 * @flat: @nr_logical entries (4 or 8 bytes each, per @wide) that back
 *	every page (the tools: all the map at once, as one array, a page
 *	every 4 KiB of it), or NULL: pages present in @pages are
 *	cleared and kept, the others stay NULL until dmr_map_reserve()
 *	allocates them with @m->page_alloc, which the caller sets after this
 * @nr_logical: logical blocks
 * @segs: @nr_segs entries
 * @nr_segs: segments
 * @seg_blocks: blocks per segment
 * @dirty: one byte per map block
 * @lists: DMR_MAP_LISTS(@seg_blocks) entries
 *
 * Every map block starts dirty for both checkpoint slots, every segment
 * free (on the free list, in segment order), and segment states are
 * tracked.
 */
void dmr_map_init_wide(struct dmr_map *m, bool wide, u32 **pages, u32 *flat,
		       u64 nr_logical, struct dmr_seg *segs, u32 nr_segs,
		       u32 seg_blocks, u8 *dirty, u32 *lists)
{
	u32 esize = wide ? DMR_MAP_ENTRY_SIZE_WIDE : DMR_MAP_ENTRY_SIZE;
	u64 p;

	m->pages = pages;
	m->page_alloc = NULL;
	m->page_ctx = NULL;
	m->nr_pages = 0;
	m->nr_out = 0;
	m->nr_logical = nr_logical;
	m->segs = segs;
	m->nr_segs = nr_segs;
	m->seg_blocks = seg_blocks;
	m->wide = wide;
	m->page_shift = dmr_map_shift(wide);
	m->mapped = 0;
	m->dirty = dirty;
	m->nr_map_blocks = dmr_map_blocks(nr_logical, wide);
	m->ckpt_seq = 0;
	m->flush_seq = 0;
	m->nr_free = nr_segs;
	m->nr_prefree = 0;
	m->track = true;
	memset(&m->age, 0, sizeof(m->age));
	m->heat = NULL;		/* the caller's, if it keeps any */
	if (flat)
		memset(flat, 0, nr_logical * esize);
	for (p = 0; p < m->nr_map_blocks; p++) {
		if (flat)
			pages[p] = flat + p * DMR_MAP_NARROW_ENTRIES;	/* 4 KiB a page */
		else if (pages[p])	/* (a flat array's last page is short) */
			memset(pages[p], 0, (size_t)dmr_map_page_len(m, p) * esize);
		m->nr_pages += !!pages[p];
	}
	m->nr_pages_peak = m->nr_pages;
	memset(segs, 0, (size_t)nr_segs * sizeof(*segs));
	memset(dirty, DMR_DIRTY_ALL, m->nr_map_blocks);
	m->lists = lists;
	dmr_map_lists_rebuild(m);
}

/* dmr_map_init_wide() of a map of 4-byte entries. */
void dmr_map_init(struct dmr_map *m, u32 **pages, u32 *flat, u64 nr_logical,
		  struct dmr_seg *segs, u32 nr_segs, u32 seg_blocks, u8 *dirty,
		  u32 *lists)
{
	dmr_map_init_wide(m, false, pages, flat, nr_logical, segs, nr_segs, seg_blocks,
			  dirty, lists);
}

/* One more page resident: status reads the count and its peak unlocked. */
static void dmr_map_pages_inc(struct dmr_map *m)
{
	WRITE_ONCE(m->nr_pages, m->nr_pages + 1);
	if (m->nr_pages > m->nr_pages_peak)
		WRITE_ONCE(m->nr_pages_peak, m->nr_pages);
}

/**
 * dmr_map_reserve() - allocate the pages blocks [@lba, @lba + @n) are in
 * @m: the map
 * @lba: first logical block
 * @n: blocks (@lba + @n <= @m->nr_logical)
 *
 * Called before dmr_map_set() of any of them, outside the map's lock (the
 * allocation may sleep): by the one thread that maps new blocks (the
 * worker; replay at load).  A page is zeroed before it is published, so
 * a lockless reader sees either no page (unmapped) or zeroes.
 *
 * A page that is out is left out, not replaced by a zeroed one, which
 * would unmap every block of it: a caller that may meet one (none does
 * while a map loads) reads it in first (dmr_map_page_in()).
 *
 * Return: 0, or -ENOMEM (the pages allocated so far stay).
 */
int dmr_map_reserve(struct dmr_map *m, u64 lba, u64 n)
{
	u64 p, last;

	if (!n)
		return 0;
	last = (lba + n - 1) >> m->page_shift;
	for (p = lba >> m->page_shift; p <= last; p++) {
		u32 *page;

		if (m->pages[p])	/* resident, or out (DMR_PAGE_OUT) */
			continue;
		page = m->page_alloc ? m->page_alloc(m->page_ctx, p) : NULL;
		if (!page)
			return -ENOMEM;
		/* the zeroes before the pointer: pairs with dmr_map_get() */
		smp_store_release(&m->pages[p], page);
		dmr_map_pages_inc(m);
	}
	return 0;
}

/**
 * dmr_map_load_page() - the page a checkpoint's map block is loaded into
 * @m: the map, not yet in use (no lockless reader)
 * @p: map page
 *
 * Allocated if absent; one that is out is replaced (the slot's copy is
 * the one that counts now).  The caller fills it; no reader may look at
 * the map until the load is done.
 *
 * Return: the page, or NULL without memory (the map is unchanged).
 */
u32 *dmr_map_load_page(struct dmr_map *m, u64 p)
{
	u32 *page;

	if (dmr_map_page_state(m, p) == DMR_PAGE_RESIDENT)
		return m->pages[p];
	page = m->page_alloc ? m->page_alloc(m->page_ctx, p) : NULL;
	if (!page)
		return NULL;
	m->nr_out -= m->pages[p] == DMR_PAGE_OUT;
	m->pages[p] = page;
	dmr_map_pages_inc(m);
	return page;
}

/*
 * Map block @p is all unmapped in the checkpoint being loaded into @m (not
 * yet in use): its page, if it has one, is cleared; one that is out is
 * forgotten (absent now).
 */
void dmr_map_load_zero(struct dmr_map *m, u64 p)
{
	switch (dmr_map_page_state(m, p)) {
	case DMR_PAGE_RESIDENT:
		/* (a flat array's last page is short: dmr_map_init_wide()) */
		memset(m->pages[p], 0, (size_t)dmr_map_page_len(m, p) * dmr_map_entry_size(m));
		break;
	case DMR_PAGE_EVICTED:
		m->pages[p] = NULL;
		m->nr_out--;
		break;
	default:
		break;
	}
}

/**
 * dmr_map_evict() - take a map page out of memory
 * @m: the map
 * @p: map page
 * @newest: the checkpoint slot written last
 * @absent: set if the page held no mapped entry
 *
 * A page leaves memory only once the newest checkpoint slot holds its
 * current copy (it is not dirty for @newest): a read brings it back from
 * there, and a crash loads that slot or (if it dies writing the next one,
 * into the other slot) that slot still.  The other slot may lack it: the
 * next checkpoint, which writes that slot, copies the block across from
 * @newest (dmr_write_map()) before @newest is written again.  The
 * cache's victim rule (dmr_page_clock_victim()) is checked here again.
 * A page with every entry unmapped becomes absent (a slot holds it as a
 * zero block, which the load does not even read); any other is out, and
 * dmr_map_get() reports DMR_MAP_MISS for its blocks until
 * dmr_map_page_in().  The valid counts stay: they are the segments'.
 *
 * Return: the page, which the caller frees once no lockless reader can
 * still hold it; NULL, and nothing changed, if @p was not resident or is
 * dirty for @newest.
 */
u32 *dmr_map_evict(struct dmr_map *m, u64 p, unsigned int newest, bool *absent)
{
	u32 *page = m->pages[p];

	if (dmr_map_page_state(m, p) != DMR_PAGE_RESIDENT ||
	    (m->dirty[p] & DMR_DIRTY_SLOT(newest)))
		return NULL;
	/* (a flat array's last page is short: dmr_map_init_wide()) */
	*absent = !memchr_inv(page, 0, (size_t)dmr_map_page_len(m, p) * dmr_map_entry_size(m));
	WRITE_ONCE(m->pages[p], *absent ? NULL : DMR_PAGE_OUT);
	WRITE_ONCE(m->nr_pages, m->nr_pages - 1);	/* status reads it */
	m->nr_out += !*absent;
	return page;
}

/**
 * dmr_map_page_in() - put an evicted map page back
 * @m: the map
 * @p: an evicted page (DMR_PAGE_EVICTED)
 * @page: its entries, read from the newest checkpoint slot and checked
 *	against that slot's CRC table by the caller
 *
 * Every entry is checked against the data area, as dmr_map_recount()
 * does at load: a block that passed its CRC but points elsewhere is not
 * the map this device wrote.
 *
 * Return: 0, -EINVAL if an entry points outside the data area (the page
 * stays out), or -ENOENT if @p was not out.
 */
int dmr_map_page_in(struct dmr_map *m, u64 p, u32 *page)
{
	u64 limit = (u64)m->nr_segs * m->seg_blocks, e;
	u32 n = dmr_map_page_len(m, p), i;

	if (dmr_map_page_state(m, p) != DMR_PAGE_EVICTED)
		return -ENOENT;
	for (i = 0; i < n; i++) {
		e = dmr_page_entry(m, page, i);
		if (e != DMR_UNMAPPED && e - 1 >= limit)
			return -EINVAL;
	}
	/* the entries before the pointer: pairs with dmr_map_get() */
	smp_store_release(&m->pages[p], page);
	dmr_map_pages_inc(m);
	m->nr_out--;
	return 0;
}

/* Store the entry of @lba; its page must be there. */
static void dmr_map_store(struct dmr_map *m, u64 lba, u64 e)
{
	dmr_page_set_entry(m, m->pages[lba >> m->page_shift],
			   lba & (dmr_map_per_page(m) - 1), e);
}

static void dmr_map_dirty(struct dmr_map *m, u64 lba)
{
	m->dirty[lba >> m->page_shift] = DMR_DIRTY_ALL;
}

/*
 * A sealed segment that just lost its last valid block waits for the
 * reuse rule: the next device flush, which makes what emptied it durable,
 * on top of the checkpoints counted from its seal (see dmr_seg_reusable()).
 */
static void dmr_seg_prefree(struct dmr_map *m, struct dmr_seg *s)
{
	dmr_seg_flags(s, DMR_SEG_PREFREE, 0);
	s->flush_after = m->flush_seq + 1;
	m->nr_prefree++;
}

static bool dmr_seg_empty_sealed(const struct dmr_seg *s)
{
	return !s->valid &&
	       (s->flags & (DMR_SEG_USED | DMR_SEG_OPEN | DMR_SEG_PREFREE)) == DMR_SEG_USED;
}

/*
 * A block of segment @seg stops being valid.  A GC candidate moves down
 * one bucket (the common case: its flags, which the read path reads
 * without the lock, are not written), or to a prefree list once empty.
 */
static void dmr_map_drop(struct dmr_map *m, u64 entry)
{
	u32 seg = dmr_pba_segment(m, entry - 1);
	struct dmr_seg *s = &m->segs[seg];

	m->mapped--;
	if (m->track && s->valid > 1 &&
	    (s->flags & DMR_SEG_LIST_MASK) == DMR_SEG_LIST_BUCKET << DMR_SEG_LIST_SHIFT) {
		dmr_list_del(m, s->valid, seg);
		s->valid--;
		dmr_list_add(m, s->valid, seg);
		if (s->valid < m->bucket_min)
			m->bucket_min = s->valid;
		return;
	}
	dmr_seg_unlist(m, seg);
	s->valid--;
	if (m->track && dmr_seg_empty_sealed(s))
		dmr_seg_prefree(m, s);
	dmr_seg_list(m, seg);
}

/**
 * dmr_map_set() - point a logical block at a physical block
 * @m: the map
 * @lba: logical block, below @m->nr_logical
 * @pba: physical block in the data area
 *
 * The block's previous location, if any, stops being valid.  Its page
 * must be there: dmr_map_reserve() first.
 */
void dmr_map_set(struct dmr_map *m, u64 lba, u64 pba)
{
	u64 old = dmr_map_get(m, lba);
	u32 seg = dmr_pba_segment(m, pba);

	if (old != DMR_UNMAPPED)
		dmr_map_drop(m, old);
	dmr_map_store(m, lba, pba + 1);	/* read locklessly: dmr-read.c */
	dmr_seg_unlist(m, seg);		/* a head's segment: on no list */
	m->segs[seg].valid++;
	dmr_seg_list(m, seg);
	m->mapped++;
	dmr_map_dirty(m, lba);
}

/* Unmap a logical block (discard); a no-op if it is not mapped. */
void dmr_map_unmap(struct dmr_map *m, u64 lba)
{
	u64 old = dmr_map_get(m, lba);

	if (old == DMR_UNMAPPED)
		return;
	dmr_map_drop(m, old);
	dmr_map_store(m, lba, DMR_UNMAPPED);
	dmr_map_dirty(m, lba);
}

/**
 * dmr_move_commit() - commit a relocation of one block
 * @m: the map
 * @lba: logical block moved
 * @src: data-area block the copy was read from
 * @dst: data-area block the copy was written to
 *
 * The move rule: a move commits only if the map still points at the copy
 * it was made from.  A write or discard of @lba that landed after the copy
 * was read (at run time), or whose unit comes before the relocation unit
 * in the log (at replay), has changed the map, and it wins.  Replay of a
 * relocation unit uses this same function, so the rule holds there too.
 *
 * Return: true if @lba now points at @dst.
 */
bool dmr_move_commit(struct dmr_map *m, u64 lba, u64 src, u64 dst)
{
	struct dmr_seg *d = &m->segs[dmr_pba_segment(m, dst)];

	if (dmr_map_get(m, lba) != src + 1)
		return false;
	dmr_seg_birth_mix(&m->age, d, m->segs[dmr_pba_segment(m, src)].birth);
	dmr_map_set(m, lba, dst);
	return true;
}

/* @seq on the clock without the recovery jumps (struct dmr_age_clock) */
static u64 dmr_age_clock_compress(const struct dmr_age_clock *c, u64 seq)
{
	u64 t = seq;
	u32 i;

	for (i = 0; i < c->nr; i++)
		if (c->at[i] <= seq)
			t -= c->len[i];
	return t;
}

/* The inverse: the sequence number of @t, never one a jump skipped. */
static u64 dmr_age_clock_expand(const struct dmr_age_clock *c, u64 t)
{
	u32 i;

	for (i = 0; i < c->nr; i++)
		if (t >= c->at[i] - c->len[i])
			t += c->len[i];
	return t;
}

/**
 * dmr_seg_birth_mix() - a block moves into a segment: mix in its birth
 * @c: the age clock
 * @d: the segment it moves to (a GC head's)
 * @birth: the birth of the segment it comes from
 *
 * The mean over the blocks @d holds, each weighted alike: @d->valid
 * blocks before this one.  The first block of a use sets it.  The mean
 * is taken on the clock without the recovery jumps, as ages are
 * (dmr_seq_age()): on raw sequence numbers, births from both sides of a
 * jump would average to one inside the range it skipped, 2^31 past the
 * older one, and the segment would look new (age 0).
 */
void dmr_seg_birth_mix(const struct dmr_age_clock *c, struct dmr_seg *d, u64 birth)
{
	u64 n = (u64)d->valid + 1, t, at;

	if (d->valid == 0) {
		d->birth = birth;
		return;
	}
	t = dmr_age_clock_compress(c, d->birth);
	at = dmr_age_clock_compress(c, birth);
	if (at < t)
		t -= div64_u64(t - at, n);
	else
		t += div64_u64(at - t, n);
	d->birth = dmr_age_clock_expand(c, t);
}

/**
 * dmr_map_run() - length of a run of logical blocks stored alike
 * @m: the map
 * @lba: first logical block
 * @max: at most this many blocks (> 0, and @lba + @max <= nr_logical)
 * @first: the entry of @lba (DMR_UNMAPPED or pba + 1)
 *
 * Each entry is read once (READ_ONCE()): the read path looks runs up
 * without the lock, while the worker changes entries (dmr-read.c).
 *
 * Return: how many blocks from @lba are either all unmapped or mapped to
 * consecutive physical blocks, so that one I/O can serve them; 1 with
 * @first DMR_MAP_MISS if @lba's page is out.  A run ends before a page
 * that is out.
 */
u32 dmr_map_run(const struct dmr_map *m, u64 lba, u32 max, u64 *first)
{
	u64 e = dmr_map_get(m, lba);
	u32 n;

	*first = e;
	if (e == DMR_MAP_MISS)
		return 1;
	for (n = 1; n < max; n++) {
		u64 next = dmr_map_get(m, lba + n);

		if (next == DMR_MAP_MISS ||
		    (e == DMR_UNMAPPED ? next != DMR_UNMAPPED : next != e + n))
			break;
	}
	return n;
}

/**
 * dmr_map_recount() - rebuild valid counts and @mapped from the map
 * @m: the map
 *
 * Used after a checkpoint was loaded, with tracking off (the segment
 * lists are rebuilt by dmr_map_load_states(); with tracking on, here).
 *
 * Return: 0, or -EINVAL if an entry points outside the data area or a
 * page is out (its entries cannot be counted here; none is while a map
 * loads).
 */
int dmr_map_recount(struct dmr_map *m)
{
	u64 lba, limit = (u64)m->nr_segs * m->seg_blocks;
	u32 s;

	if (m->nr_out)
		return -EINVAL;
	for (s = 0; s < m->nr_segs; s++)
		m->segs[s].valid = 0;
	m->mapped = 0;
	for (lba = 0; lba < m->nr_logical; lba++) {
		u64 e;

		if (!m->pages[lba >> m->page_shift]) {	/* all unmapped */
			lba |= dmr_map_per_page(m) - 1;
			continue;
		}
		e = dmr_map_get(m, lba);
		if (e == DMR_UNMAPPED)
			continue;
		if (e - 1 >= limit)
			return -EINVAL;
		m->segs[dmr_pba_segment(m, e - 1)].valid++;
		m->mapped++;
	}
	if (m->track)
		dmr_map_lists_rebuild(m);
	return 0;
}

/**
 * dmr_map_count_page() - add one page's entries to valid counts
 * @m: the map
 * @p: map page, resident or absent
 * @valid: per segment, one more for each entry there
 * @mapped: one more for each mapped entry
 *
 * dmr_map_recount() a page at a time, into counts of the caller's: a load
 * that lets pages leave memory as it goes (table option map_cache) counts
 * each before it leaves.
 *
 * Return: 0, or -EINVAL if @p is out of memory or an entry points outside
 * the data area (@valid and @mapped are then partly counted).
 */
int dmr_map_count_page(const struct dmr_map *m, u64 p, u32 *valid, u64 *mapped)
{
	u64 limit = (u64)m->nr_segs * m->seg_blocks, e;
	u32 n = dmr_map_page_len(m, p), i;
	const u32 *page = m->pages[p];

	if (dmr_map_page_state(m, p) == DMR_PAGE_EVICTED)
		return -EINVAL;
	for (i = 0; page && i < n; i++) {
		e = dmr_page_entry(m, page, i);
		if (e == DMR_UNMAPPED)
			continue;
		if (e - 1 >= limit)
			return -EINVAL;
		valid[dmr_pba_segment(m, e - 1)]++;
		(*mapped)++;
	}
	return 0;
}

/**
 * dmr_map_free_mapped() - a segment the map uses that is not in use
 * @m: the map, after dmr_map_recount()
 * @seg: set to the first such segment
 *
 * Every segment that holds mapped blocks was opened (DMR_SEG_USED) before
 * its first unit was written, and a checkpoint records that, so a loaded
 * slot that maps into a segment it records as free is damaged: the free
 * segment would be written again over the blocks mapped there.
 *
 * Return: true if there is one.
 */
bool dmr_map_free_mapped(const struct dmr_map *m, u32 *seg)
{
	u32 s;

	for (s = 0; s < m->nr_segs; s++) {
		if (m->segs[s].valid && !(m->segs[s].flags & DMR_SEG_USED)) {
			*seg = s;
			return true;
		}
	}
	return false;
}

/**
 * dmr_map_load_states() - rebuild segment states after a load
 * @m: the map, with valid counts, DMR_SEG_USED as loaded and replayed, and
 *	DMR_SEG_OPEN set on the heads' segments; @m->ckpt_seq the checkpoint
 *	loaded
 *
 * Whether a segment's units are still on a slot's replay path, or what
 * emptied it is durable, is not known at load: every segment written
 * counts as sealed now, and an empty one as emptied now (it waits for
 * DMR_REUSE_CHECKPOINTS checkpoints, which flush too).  Tracking is
 * switched on, and the segment lists are built.
 */
void dmr_map_load_states(struct dmr_map *m)
{
	u32 i;

	m->nr_free = 0;
	m->nr_prefree = 0;
	m->track = true;
	for (i = 0; i < m->nr_segs; i++) {
		struct dmr_seg *s = &m->segs[i];

		dmr_seg_flags(s, 0, ~(DMR_SEG_DISK_FLAGS | DMR_SEG_OPEN | DMR_SEG_HOT));
		s->free_after = m->ckpt_seq + DMR_REUSE_CHECKPOINTS;
		if (dmr_seg_is_free(s))
			m->nr_free++;
		else if (dmr_seg_empty_sealed(s))
			dmr_seg_prefree(m, s);
	}
	dmr_map_lists_rebuild(m);
}

/**
 * dmr_map_lists_rebuild() - put every segment on the list its state names
 * @m: the map, tracking on
 *
 * At load (dmr_map_load_states()), and for tests that set segment states
 * by hand.  Segments join their lists in segment order.
 */
void dmr_map_lists_rebuild(struct dmr_map *m)
{
	u32 i;

	for (i = 0; i < DMR_MAP_LISTS(m->seg_blocks); i++)
		m->lists[i] = DMR_NO_SEGMENT;
	m->nr_bucketed = 0;
	for (i = 0; i < DMR_REUSE_WAITS; i++)
		m->nr_wait[i] = 0;
	m->bucket_min = m->seg_blocks + 1;
	for (i = 0; i < m->nr_segs; i++) {
		dmr_seg_flags(&m->segs[i], 0, DMR_SEG_LIST_MASK);
		dmr_seg_list(m, i);
	}
}

/**
 * dmr_map_lists_consistent() - check the segment lists against the table
 * @m: the map, tracking on
 *
 * A full scan: every segment is on the list its state names (its bucket,
 * its prefree list, the free list, or none), each list is well linked,
 * holds only
 * segments that belong on it and as many as its count says, and no
 * bucket below @bucket_min holds one.
 *
 * Return: true if they agree.
 */
bool dmr_map_lists_consistent(const struct dmr_map *m)
{
	u32 wait[DMR_REUSE_WAITS] = {}, i, list, listed = 0, bucketed = 0, seen = 0;

	for (i = 0; i < m->nr_segs; i++) {
		const struct dmr_seg *s = &m->segs[i];
		u32 kind = dmr_seg_list_want(m, s, &list);

		if (kind != (s->flags & DMR_SEG_LIST_MASK) >> DMR_SEG_LIST_SHIFT)
			return false;
		if (kind == DMR_SEG_LIST_BUCKET)
			bucketed++;
		else if (kind != DMR_SEG_LIST_NONE && kind != DMR_SEG_LIST_FREE)
			wait[kind - DMR_SEG_LIST_PREFREE]++;
		listed += kind != DMR_SEG_LIST_NONE;
	}
	if (bucketed != m->nr_bucketed)
		return false;
	for (i = 0; i < DMR_REUSE_WAITS; i++)
		if (wait[i] != m->nr_wait[i])
			return false;
	for (list = 0; list < DMR_MAP_LISTS(m->seg_blocks); list++) {
		u32 first = m->lists[list], seg = first, n = 0;

		if (first == DMR_NO_SEGMENT)
			continue;
		if (list < m->bucket_min)
			return false;
		do {
			const struct dmr_seg *s = &m->segs[seg];

			if (seg >= m->nr_segs || n++ == m->nr_segs ||
			    s->next >= m->nr_segs || m->segs[s->next].prev != seg ||
			    (s->flags & DMR_SEG_LIST_MASK) == 0 ||
			    dmr_seg_list_of(m, s) != list)
				return false;
			seg = s->next;
		} while (seg != first);
		seen += n;
	}
	return seen == listed;
}

/**
 * dmr_map_consistent() - check the accounting invariants
 * @m: the map
 *
 * Return: true if the valid counts match the map entry by entry, and the
 * free and prefree counts match the segment states; false while a page
 * is out (read every page in first: its entries are not known here).
 */
bool dmr_map_consistent(const struct dmr_map *m)
{
	u64 lba, sum = 0, nonzero = 0, prefree = 0, resident = 0, p;
	u32 s;

	for (p = 0; p < m->nr_map_blocks; p++) {
		if (dmr_map_page_state(m, p) == DMR_PAGE_EVICTED)
			return false;
		resident += !!m->pages[p];
	}
	if (m->nr_out || resident != m->nr_pages)
		return false;
	for (s = 0; s < m->nr_segs; s++) {
		const struct dmr_seg *g = &m->segs[s];

		sum += g->valid;
		if (g->flags & DMR_SEG_PREFREE) {
			if (g->valid || !(g->flags & DMR_SEG_USED) ||
			    (g->flags & DMR_SEG_OPEN))
				return false;
			prefree++;
		}
		if (g->valid > m->seg_blocks)
			return false;
	}
	for (lba = 0; lba < m->nr_logical; lba++)
		nonzero += dmr_map_get(m, lba) != DMR_UNMAPPED;
	return sum == m->mapped && nonzero == m->mapped &&
	       prefree == m->nr_prefree && dmr_seg_free_count(m) == m->nr_free &&
	       (!m->track || dmr_map_lists_consistent(m));
}

/*
 * The segments of prefree list @wait whose wait may be over: moved to the
 * list they wait on now.  A segment leaves the checkpoint list after at
 * most DMR_REUSE_CHECKPOINTS checkpoints and the flush list at the next
 * flush, so each is looked at a bounded number of times.
 */
static void dmr_map_rewait(struct dmr_map *m, enum dmr_reuse_wait wait)
{
	u32 seg = m->lists[m->seg_blocks + 1 + wait], n = m->nr_wait[wait], next;

	for (; n; n--, seg = next) {
		next = m->segs[seg].next;
		if (dmr_seg_reuse_wait(&m->segs[seg], m->ckpt_seq, m->flush_seq) == wait)
			continue;
		dmr_seg_unlist(m, seg);
		dmr_seg_list(m, seg);
	}
}

/**
 * dmr_map_ckpt_done() - a checkpoint completed
 * @m: the map
 * @ckpt_seq: its sequence number (the reuse rule counts from it)
 *
 * Only the segments waiting for a checkpoint may change lists.
 */
void dmr_map_ckpt_done(struct dmr_map *m, u64 ckpt_seq)
{
	m->ckpt_seq = ckpt_seq;
	if (m->track)
		dmr_map_rewait(m, DMR_REUSE_CKPT);
}

/**
 * dmr_map_flush_done() - a device flush made every unit closed before it durable
 * @m: the map
 *
 * Only the segments waiting for a flush may change lists.
 */
void dmr_map_flush_done(struct dmr_map *m)
{
	m->flush_seq++;
	if (m->track)
		dmr_map_rewait(m, DMR_REUSE_FLUSH);
}

/* Return: true if @s may be handed to a head. */
bool dmr_seg_is_free(const struct dmr_seg *s)
{
	return !(s->flags & (DMR_SEG_USED | DMR_SEG_OPEN));
}

/**
 * dmr_seg_alloc() - reserve a free segment for a head
 * @m: the map, tracking on
 *
 * The segment becomes open (DMR_SEG_OPEN): no one else gets it, and GC
 * never collects it, until the head seals it.  Free segments are only
 * those never written since format or freed under the reuse rule, so
 * nothing that recovery might still read is ever handed out.  They are
 * handed out in the order they became free (after a load, in segment
 * order), from the map's free list: O(1) on any device.
 *
 * Return: a segment number, or DMR_NO_SEGMENT when none is free (or
 * tracking is off: the free list is only built at load).
 */
u32 dmr_seg_alloc(struct dmr_map *m)
{
	u32 seg = m->lists[m->seg_blocks + 1 + DMR_REUSE_WAITS];

	if (!m->track || seg == DMR_NO_SEGMENT)
		return DMR_NO_SEGMENT;
	dmr_seg_unlist(m, seg);
	dmr_seg_flags(&m->segs[seg], DMR_SEG_OPEN, 0);
	m->nr_free--;
	return seg;
}

/**
 * dmr_seg_open() - a head starts writing a segment
 * @m: the map
 * @seg: a segment reserved by dmr_seg_alloc() (or free, at format)
 * @seq: sequence number of its first unit: its age from now on
 *
 * A new use starts cold: the head's temperature is the caller's
 * (dmr_seg_set_head()); replay leaves it cold.
 */
void dmr_seg_open(struct dmr_map *m, u32 seg, u64 seq)
{
	struct dmr_seg *s = &m->segs[seg];

	if (dmr_seg_is_free(s))
		m->nr_free--;
	dmr_seg_unlist(m, seg);
	dmr_seg_flags(s, DMR_SEG_USED | DMR_SEG_OPEN, DMR_SEG_HOT | DMR_SEG_LARGE);
	s->seq = seq;
	s->birth = seq;
	s->base = 0;
	s->csum = 0;
}

/**
 * dmr_seg_large() - a segment opened for a large write holds its data
 * @m: the map
 * @seg: a segment opened (dmr_seg_open()) for the write, not a head's
 * @lba: the logical block its block 0 holds (the next ones follow)
 * @csum: dmr_data_csum() of its blocks, or 0 until the module's second
 *	stage computed it (set before the segment leaves memory, which GC
 *	and checkpoints wait for: dmr_flight_reap())
 *
 * It has no summary: GC finds its blocks' logical blocks from @lba, and
 * checks them against @csum (struct dmr_seg @base and @csum, kept by
 * checkpoints).  The caller seals it (dmr_seg_seal()) once the map
 * points into it.
 */
void dmr_seg_large(struct dmr_map *m, u32 seg, u64 lba, u32 csum)
{
	struct dmr_seg *s = &m->segs[seg];

	dmr_seg_flags(s, DMR_SEG_LARGE, 0);
	s->base = lba + 1;
	s->csum = csum;
}

/**
 * dmr_seg_seal() - a head is done with a segment
 * @m: the map
 * @seg: a segment the head opened, or only reserved
 *
 * A segment the head wrote becomes sealed, and GC may collect it (at once
 * prefree if nothing in it is valid any more); one it only reserved is
 * free again.  Its units are all written before the next checkpoint takes
 * its log positions, so the reuse rule counts DMR_REUSE_CHECKPOINTS from
 * the last one completed.
 */
void dmr_seg_seal(struct dmr_map *m, u32 seg)
{
	struct dmr_seg *s = &m->segs[seg];

	dmr_seg_unlist(m, seg);
	dmr_seg_flags(s, 0, DMR_SEG_OPEN);
	s->free_after = m->ckpt_seq + DMR_REUSE_CHECKPOINTS;
	if (!(s->flags & DMR_SEG_USED))
		m->nr_free++;
	else if (m->track && dmr_seg_empty_sealed(s))
		dmr_seg_prefree(m, s);
	dmr_seg_list(m, seg);
}

/**
 * dmr_seg_reuse_wait() - what a prefree segment waits for
 * @s: a prefree segment
 * @ckpt_seq: sequence number of the last checkpoint completed
 * @flush_seq: device flushes completed (struct dmr_map)
 *
 * Return: DMR_REUSE_CKPT while a checkpoint slot's replay may still reach
 * it, else DMR_REUSE_FLUSH while what emptied it may not be durable, else
 * DMR_REUSE_READY.
 */
enum dmr_reuse_wait dmr_seg_reuse_wait(const struct dmr_seg *s, u64 ckpt_seq,
				       u64 flush_seq)
{
	if (ckpt_seq < s->free_after)
		return DMR_REUSE_CKPT;
	if (flush_seq < s->flush_after)
		return DMR_REUSE_FLUSH;
	return DMR_REUSE_READY;
}

/**
 * dmr_seg_reusable() - the reuse rule
 * @s: a segment
 * @ckpt_seq: sequence number of the last checkpoint completed
 * @flush_seq: device flushes completed (struct dmr_map)
 * @readers: reads sent down to the segment and not yet completed
 *
 * A segment may be written again only when no load can need what it
 * holds, and no read is still in flight to it:
 *
 * - it is empty and sealed (prefree): no map entry points into it, no head
 *   appends to it;
 * - DMR_REUSE_CHECKPOINTS checkpoints completed since it was sealed, so
 *   both slots' log positions were taken after its last unit: no replay,
 *   from either slot, reads a unit in it;
 * - a device flush completed since it emptied, so every unit that moved
 *   or overwrote its blocks (written before the flush, rule 1) is durable.
 *   A slot's map may still point into it, but replay from that slot
 *   applies those units, in sequence order and before any unit of its
 *   next use, so the map leaves it before anything is read through it;
 * - @readers is zero.
 *
 * Stale units left in it are never taken for new ones: sequence numbers
 * only grow (dmr_seq_after_recovery()), and replay wants the exact next one.
 *
 * Return: true if @s may be freed.
 */
bool dmr_seg_reusable(const struct dmr_seg *s, u64 ckpt_seq, u64 flush_seq,
		      u32 readers)
{
	return (s->flags & DMR_SEG_PREFREE) && !s->valid && !readers &&
	       dmr_seg_reuse_wait(s, ckpt_seq, flush_seq) == DMR_REUSE_READY;
}

/* A prefree segment that passed dmr_seg_reusable() becomes free. */
void dmr_seg_make_free(struct dmr_map *m, u32 seg)
{
	struct dmr_seg *s = &m->segs[seg];

	dmr_seg_unlist(m, seg);
	dmr_seg_flags(s, 0, DMR_SEG_USED | DMR_SEG_PREFREE | DMR_SEG_NOGC |
			 DMR_SEG_GCERR | DMR_SEG_MEM | DMR_SEG_HOT | DMR_SEG_LARGE);
	s->seq = 0;
	s->base = 0;
	s->csum = 0;
	s->free_after = 0;
	s->flush_after = 0;
	m->nr_prefree--;
	m->nr_free++;
	dmr_seg_list(m, seg);
}

/* Return: free segments, counted one by one (a check of @nr_free). */
u32 dmr_seg_free_count(const struct dmr_map *m)
{
	u32 s, n = 0;

	for (s = 0; s < m->nr_segs; s++)
		n += dmr_seg_is_free(&m->segs[s]);
	return n;
}

/**
 * dmr_seg_gc_refuse() - GC leaves a segment alone
 * @m: the map
 * @seg: the segment
 * @why: DMR_SEG_NOGC (it holds blocks no summary lists, or data that fails
 *	its checksum: never collected while it holds valid blocks), or
 *	DMR_SEG_GCERR (it could not be read: collectable again after
 *	dmr_seg_gc_retry_all())
 *
 * Either way its blocks stay where they are and are read from there, and
 * it leaves its bucket; the flag goes when the segment is freed
 * (dmr_seg_make_free()).
 */
void dmr_seg_gc_refuse(struct dmr_map *m, u32 seg, u32 why)
{
	dmr_seg_unlist(m, seg);
	dmr_seg_flags(&m->segs[seg], why & (DMR_SEG_NOGC | DMR_SEG_GCERR), 0);
	dmr_seg_list(m, seg);
}

/**
 * dmr_seg_gc_retry_all() - segments GC could not read become victims again
 * @m: the map
 *
 * A scan of every segment, made only after a checkpoint while some segment
 * is DMR_SEG_GCERR (the glue's @gc_retry), i.e. after a read error: not a
 * per-step cost.
 *
 * Return: how many were waiting (0: nothing changed).
 */
u32 dmr_seg_gc_retry_all(struct dmr_map *m)
{
	u32 i, n = 0;

	for (i = 0; i < m->nr_segs; i++) {
		if (m->segs[i].flags & DMR_SEG_GCERR) {
			dmr_seg_unlist(m, i);
			dmr_seg_flags(&m->segs[i], 0, DMR_SEG_GCERR);
			dmr_seg_list(m, i);
			n++;
		}
	}
	return n;
}

/**
 * dmr_seg_set_mem() - a segment's blocks are read from memory, or no longer
 * @m: the map
 * @seg: the segment
 * @mem: set or clear DMR_SEG_MEM
 *
 * A sealed segment whose write completes becomes a GC candidate here.
 */
void dmr_seg_set_mem(struct dmr_map *m, u32 seg, bool mem)
{
	dmr_seg_unlist(m, seg);
	if (mem)
		dmr_seg_flags(&m->segs[seg], DMR_SEG_MEM, 0);
	else
		dmr_seg_flags(&m->segs[seg], 0, DMR_SEG_MEM);
	dmr_seg_list(m, seg);
}

/**
 * dmr_seg_fewest_valid() - a GC candidate with the fewest valid blocks
 * @m: the map, tracking on
 *
 * The segment that joined the lowest non-empty bucket first.  O(1)
 * amortised: @bucket_min moves up past empty buckets here, and comes down
 * only by one bucket when a candidate loses a block, or to the bucket of
 * a segment joining (once per segment sealed or loaded).
 *
 * Return: the segment, or DMR_NO_SEGMENT if there is no candidate.
 */
u32 dmr_seg_fewest_valid(struct dmr_map *m)
{
	if (!m->nr_bucketed)
		return DMR_NO_SEGMENT;
	while (m->lists[m->bucket_min] == DMR_NO_SEGMENT)
		m->bucket_min++;
	return m->lists[m->bucket_min];
}

/**
 * dmr_seq_age() - a segment's age, the recovery jumps left out
 * @c: the age clock
 * @born: the segment's sequence number (the first unit of its current use)
 * @now: the log's last sequence number
 *
 * Return: @now - @born less every jump made after @born, 0 if @now is not
 * past @born (or, after merged jumps, would not be).
 */
u64 dmr_seq_age(const struct dmr_age_clock *c, u64 born, u64 now)
{
	u64 age = now > born ? now - born : 0;
	u32 i;

	for (i = 0; i < c->nr; i++) {
		if (c->at[i] <= born || c->at[i] > now)
			continue;
		age = age > c->len[i] ? age - c->len[i] : 0;
	}
	return age;
}

/**
 * dmr_age_clock_jump() - note a recovery jump
 * @c: the age clock
 * @from: the last sequence number before the jump (what replay applied)
 * @to: the first one after it
 *
 * Sequence numbers @from + 1 ... @to - 1 are never used, so they are no
 * one's age.  Beyond DMR_AGE_JUMPS jumps the two oldest merge (see struct
 * dmr_age_clock).
 */
void dmr_age_clock_jump(struct dmr_age_clock *c, u64 from, u64 to)
{
	u32 i;

	if (to <= from + 1)
		return;
	if (c->nr == DMR_AGE_JUMPS) {
		c->len[1] += c->len[0];
		for (i = 1; i < DMR_AGE_JUMPS; i++) {
			c->at[i - 1] = c->at[i];
			c->len[i - 1] = c->len[i];
		}
		c->nr--;
	}
	c->at[c->nr] = to;
	c->len[c->nr] = to - from - 1;
	c->nr++;
}

/**
 * dmr_age_clock_valid() - is a decoded age clock one this code writes?
 * @c: the clock
 *
 * Return: true if it holds at most DMR_AGE_JUMPS jumps, in increasing
 * order, none longer than the sequence number after it.
 */
bool dmr_age_clock_valid(const struct dmr_age_clock *c)
{
	u32 i;

	if (c->nr > DMR_AGE_JUMPS)
		return false;
	for (i = 0; i < c->nr; i++) {
		if (!c->len[i] || c->len[i] >= c->at[i])
			return false;
		if (i && c->at[i] - c->len[i] < c->at[i - 1])
			return false;
	}
	return true;
}

/**
 * dmr_map_ready_reusable() - may some segment of the ready list go now?
 * @m: the map, tracking on
 * @readers: the reads in flight to a segment
 * @ctx: for @readers
 *
 * GC waiting for reads in flight to prefree segments (DMR_GC_WAIT_READERS)
 * is done as soon as any segment of the ready list has none left, not
 * only the first one (issue 24 item 10: the wait then lasted its whole
 * timeout).
 *
 * Return: true if dmr_seg_reusable() holds for one of them.
 */
bool dmr_map_ready_reusable(const struct dmr_map *m, dmr_readers_fn readers,
			    const void *ctx)
{
	u32 n = m->nr_wait[DMR_REUSE_READY], i;

	for (i = dmr_seg_ready_first(m); n; n--, i = dmr_seg_next(m, i))
		if (dmr_seg_reusable(&m->segs[i], m->ckpt_seq, m->flush_seq,
				     readers(ctx, i)))
			return true;
	return false;
}
