// SPDX-License-Identifier: GPL-2.0-only
/*
 * remapctl check: load a dm-remap device as the module's constructor does
 * (dmr_load() in dm-remap/dmr-ckpt.c), with the same shared code, and
 * check what the loader takes on trust.
 *
 *  1. Superblocks: both copies decode and agree; the device is not
 *     smaller than when it was formatted.
 *  2. Checkpoint slots: each header that decodes has tables that match
 *     their checksums (dmr_slot_load()), a map with as many mapped blocks
 *     as the header says and nothing mapped into a segment it records as
 *     free (dmr_map_free_mapped(): the module passes over such a slot),
 *     and per segment the valid count its map gives.
 *  3. Replay from the slot the module would load (dmr_ckpt_order(), then
 *     the first whose tables load), as the module does.
 *  4. The map after replay: every entry inside the data area, no
 *     physical block holding two logical blocks, nothing mapped into a
 *     free segment or past what a log head has written, valid counts
 *     that match the map segment by segment (dmr_map_consistent()).
 *  5. The log units that hold mapped data: in each segment with mapped
 *     blocks, every unit from block 0 up to the last mapped block has a
 *     summary that decodes, data that match its checksum, a sequence
 *     number that grows and is not older than the segment's current use,
 *     and every mapped block is one of their data blocks (never a
 *     summary).  Units past a segment's last mapped block hold nothing
 *     the module would read, and after a crash may be torn; they are not
 *     checked.
 *
 * What replay stops at is reported as a note, not a problem: a torn or
 * missing unit at the end of the log is what a crash leaves, and the
 * design's ordering rules make everything before it consistent.  So is a
 * checkpoint header torn by a crash while the other slot loads and its
 * log replays (torn_header()), and the older slot's tables torn by an
 * interrupted checkpoint.
 *
 * Repair (ck->write set) does what needs no guess, and nothing else:
 *
 *  - a superblock copy that is damaged or disagrees is rewritten from the
 *    valid copy with the higher generation;
 *  - when every other problem is in the checkpoint slots (or there is
 *    none, but a crash tore a checkpoint header), and the slot the module
 *    loads, replayed, gives a map without a problem, that state is
 *    written as a fresh checkpoint (repair_ckpt()).
 *
 * Everything else is reported and left.
 */
#include <stdarg.h>
#include <stdlib.h>

#include "dmr-check.h"
#include "dmr-writer.h"

/* Problems of one kind printed before "... and N more". */
#define CHECK_MAX_LINES	10
/*
 * Up to this many map blocks (4 GiB of them: 4 TiB of logical space, 2
 * TiB wide), every one is read, those the CRC table records as unmapped
 * too, as fsck would; past it those are left unread, as the module leaves
 * them (a 32 TiB device's 64 GiB of them took minutes under emulation).
 */
#define CHECK_READ_ZERO_MAX	(1ULL << 20)

struct check_state {
	struct dmr_check *ck;
	struct dmr_sb sb;
	struct dmr_map m;
	u32 **pages;		/* the map's, NULL where nothing is mapped */
	bool zero_noted;	/* the note that unmapped map blocks are not read */
	struct dmr_seg *segs;
	u8 *dirty;
	u32 *lists;
	u32 *map_crc;
	u32 *slot_valid;	/* valid counts as a slot recorded them */
	u32 *count;		/* valid counts from the map */
	u32 *maxref;		/* per segment: 1 + last offset the map references */
	u8 *summary;		/* per data-area block: a unit summary (bitmap) */
	u8 *mapped;		/* per data-area block: mapped (bitmap) */
	void *buf;		/* one segment */
	struct dmr_ckpt c[DMR_CKPT_SLOTS];
	enum dmr_log_status st[DMR_CKPT_SLOTS];	/* each slot's header */
	unsigned int slot_errors[DMR_CKPT_SLOTS];	/* problems in its tables */
	struct dmr_log_pos pos[DMR_NR_HEADS];	/* the heads, after replay */
	u64 seq;		/* last sequence number replay applied */
	bool recovery;		/* the module would recover at load */
	int torn;		/* a slot whose header a crash may have torn, or -1 */
	unsigned int residue;	/* crash residue a checkpoint rewrite mends */
	unsigned int kind_lines;
};

static void vline(struct dmr_check *ck, const char *tag, const char *fmt, va_list ap)
{
	fprintf(ck->out, "%s: ", tag);
	vfprintf(ck->out, fmt, ap);
	fputc('\n', ck->out);
}

static void __attribute__((format(printf, 2, 3)))
problem(struct check_state *s, const char *fmt, ...)
{
	va_list ap;

	s->ck->errors++;
	if (++s->kind_lines > CHECK_MAX_LINES)
		return;
	va_start(ap, fmt);
	vline(s->ck, "error", fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 2, 3)))
note(struct check_state *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(s->ck, "note", fmt, ap);
	va_end(ap);
}

/* End a kind of problem: say how many lines were left out. */
static void kind_done(struct check_state *s)
{
	if (s->kind_lines > CHECK_MAX_LINES)
		fprintf(s->ck->out, "error: ... and %u more like it\n",
			s->kind_lines - CHECK_MAX_LINES);
	s->kind_lines = 0;
}

static void __attribute__((format(printf, 2, 3)))
operational(struct check_state *s, const char *fmt, ...)
{
	va_list ap;

	s->ck->operational = true;
	va_start(ap, fmt);
	vline(s->ck, "cannot check", fmt, ap);
	va_end(ap);
}

static void progress(struct check_state *s, const char *what, u64 done, u64 total)
{
	if (!s->ck->progress || !total)
		return;
	if (done < total)
		fprintf(stderr, "\rcheck: %s %3u%%", what, (unsigned int)(done * 100 / total));
	else
		fprintf(stderr, "\r%*s\r", 40, "");
}

void dmr_sb_version_msg(char *buf, size_t len, u32 version)
{
	snprintf(buf, len, "dm-remap format version %u, and this remapctl supports "
		 "version %u only; nothing converts a device between versions: %s",
		 version, DMR_FORMAT_VERSION, version > DMR_FORMAT_VERSION ?
		 "use a newer dm-remap (module and remapctl)" :
		 "copy the data off with the release that wrote it, then reformat "
		 "with this version's remapctl");
}

/* 1. Superblocks; returns the copy used, or -1. */
static int check_sb(struct check_state *s)
{
	struct dmr_check *ck = s->ck;
	enum dmr_sb_status st[DMR_SB_COPIES];
	struct dmr_sb sb[DMR_SB_COPIES];
	int i, best = -1, magic = 0;

	for (i = 0; i < DMR_SB_COPIES; i++) {
		if (ck->read(ck->ctx, i, 1, s->buf)) {
			operational(s, "superblock copy %d: read error", i);
			return -1;
		}
		magic += dmr_sb_has_magic(s->buf);
		st[i] = dmr_sb_decode(s->buf, i, &sb[i]);
		if (st[i] == DMR_SB_OK && (best < 0 || sb[i].generation > sb[best].generation))
			best = i;
	}
	if (!magic) {
		operational(s, "not a dm-remap device (no superblock magic in either copy)");
		return -1;
	}
	for (i = 0; best < 0 && i < DMR_SB_COPIES; i++) {
		char msg[512];

		/* another format: not a device this check can read */
		if (st[i] != DMR_SB_BAD_VERSION)
			continue;
		dmr_sb_version_msg(msg, sizeof(msg), sb[i].version);
		operational(s, "%s", msg);
		return -1;
	}
	if (best < 0) {
		problem(s, "no valid superblock: copy 0: %s; copy 1: %s",
			dmr_sb_strerror(st[0]), dmr_sb_strerror(st[1]));
		kind_done(s);
		return -1;
	}
	s->sb = sb[best];
	for (i = 0; i < DMR_SB_COPIES; i++) {
		bool bad = st[i] != DMR_SB_OK;

		if (i == best)
			continue;
		if (bad)
			problem(s, "superblock copy %d: %s", i, dmr_sb_strerror(st[i]));
		else if (sb[i].generation != sb[best].generation ||
			 memcmp(&sb[i].geo, &sb[best].geo, sizeof(sb[i].geo)) ||
			 memcmp(sb[i].uuid, sb[best].uuid, sizeof(sb[i].uuid)))
			problem(s, "superblock copy %d (generation %llu) disagrees with copy %d "
				"(generation %llu)", i, (unsigned long long)sb[i].generation,
				best, (unsigned long long)sb[best].generation);
		else
			continue;
		if (ck->write) {
			struct dmr_sb fix = sb[best];

			fix.blocknr = i;
			dmr_sb_encode(&fix, s->buf);
			if (ck->write(ck->ctx, i, 1, s->buf)) {
				operational(s, "superblock copy %d: write error", i);
				return -1;
			}
			ck->errors--;
			ck->repaired++;
			fprintf(ck->out, "repaired: superblock copy %d rewritten from copy %d "
				"(block %d)\n", i, best, i);
		}
	}
	kind_done(s);
	if (s->sb.geo.device_blocks > ck->dev_blocks) {
		problem(s, "the device has %llu blocks, fewer than the %llu it was formatted "
			"with: the module refuses it", (unsigned long long)ck->dev_blocks,
			(unsigned long long)s->sb.geo.device_blocks);
		kind_done(s);
		return -1;
	}
	return best;
}

static int alloc_state(struct check_state *s)
{
	const struct dmr_geometry *g = &s->sb.geo;
	u64 nr_map = dmr_map_blocks(g->logical_blocks, g->wide);
	u64 data_blocks = g->nr_segments * g->segment_blocks;

	s->pages = calloc(nr_map, sizeof(*s->pages));
	s->segs = calloc(g->nr_segments, sizeof(*s->segs));
	s->dirty = calloc(nr_map, 1);
	s->lists = calloc(DMR_MAP_LISTS(g->segment_blocks), sizeof(*s->lists));
	s->map_crc = calloc(nr_map, sizeof(*s->map_crc));
	s->slot_valid = calloc(g->nr_segments, sizeof(u32));
	s->count = calloc(g->nr_segments, sizeof(u32));
	s->maxref = calloc(g->nr_segments, sizeof(u32));
	s->summary = calloc(data_blocks / 8 + 1, 1);
	s->mapped = calloc(data_blocks / 8 + 1, 1);
	free(s->buf);
	s->buf = aligned_alloc(DMR_BLOCK_SIZE, (size_t)g->segment_blocks * DMR_BLOCK_SIZE);
	if (!s->pages || !s->segs || !s->dirty || !s->lists || !s->map_crc ||
	    !s->slot_valid ||
	    !s->count || !s->maxref || !s->summary || !s->mapped || !s->buf) {
		operational(s, "out of memory for a map of %llu blocks",
			    (unsigned long long)g->logical_blocks);
		return -1;
	}
	return 0;
}

/*
 * A map page, zeroed, when a block of it is first mapped (struct
 * dmr_map's page_alloc): as in the module, a map block the checkpoint
 * holds as all unmapped takes no memory, so a check of a sparse device
 * costs memory for what it holds, not for its size (a flat array of 4
 * bytes per logical block did: 1 GiB for an empty 1 TiB device).
 */
static void *check_page_alloc(void *ctx, u64 p)
{
	(void)ctx;
	(void)p;
	return calloc(1, DMR_BLOCK_SIZE);
}

static void map_reset(struct check_state *s)
{
	const struct dmr_geometry *g = &s->sb.geo;

	memset(s->segs, 0, g->nr_segments * sizeof(*s->segs));
	/* pages of an earlier load are cleared and kept */
	dmr_map_init_wide(&s->m, g->wide, s->pages, NULL, g->logical_blocks, s->segs,
			  g->nr_segments, g->segment_blocks, s->dirty, s->lists);
	s->m.page_alloc = check_page_alloc;
	s->m.page_ctx = s;
	s->m.track = false;	/* as the loader: states are rebuilt after replay */
}

/*
 * The map entry of @lba, or DMR_UNMAPPED; *@lba is moved to the last
 * block of its page when the page has nothing mapped (the loops over
 * every logical block go on at the next page).
 */
static u64 map_entry(const struct check_state *s, u64 *lba)
{
	if (!s->pages[*lba >> s->m.page_shift]) {
		*lba |= dmr_map_per_page(&s->m) - 1;
		return DMR_UNMAPPED;
	}
	return dmr_map_get(&s->m, *lba);
}

static const char *const table_name[] = {
	[DMR_SLOT_CRC_TABLE] = "the map blocks' CRC table",
	[DMR_SLOT_MAP] = "a map block",
	[DMR_SLOT_SEGTAB] = "the segment table",
};

/*
 * Load slot @i into the map and check it.  The tables of the older slot
 * fail their checksums when a checkpoint into it was interrupted (the
 * header is written last): then that is a note, not a problem.  The
 * newest header is written after its tables, so its tables must match.
 * Return: 1 loaded (it may still report problems), 0 the module would
 * pass over it, -1 operational error.
 */
/* Read slot @i's tables into the map (dmr_slot_load()). */
static int load_slot(struct check_state *s, int i, struct dmr_slot_err *err)
{
	const struct dmr_geometry *g = &s->sb.geo;
	const struct dmr_slot_io io = {
		.read = s->ck->read, .ctx = s->ck->ctx, .bounce = s->buf,
		.bounce_blocks = g->segment_blocks,
		.read_zero = dmr_map_blocks(g->logical_blocks, g->wide) <= CHECK_READ_ZERO_MAX,
	};

	if (!io.read_zero && !s->zero_noted) {
		note(s, "map blocks the CRC table records as unmapped are not read (a map "
		     "of more than %llu blocks)", CHECK_READ_ZERO_MAX);
		s->zero_noted = true;
	}
	map_reset(s);
	return dmr_slot_load(&io, g, i, &s->c[i], &s->m, s->map_crc, err);
}

static int __check_one_slot(struct check_state *s, int i, bool newest)
{
	const struct dmr_geometry *g = &s->sb.geo;
	struct dmr_slot_err err;
	u32 seg;
	int r;

	r = load_slot(s, i, &err);
	if (r == -EILSEQ) {
		char what[64];

		if (err.table == DMR_SLOT_MAP)
			snprintf(what, sizeof(what), "map block %llu",
				 (unsigned long long)err.block);
		else
			snprintf(what, sizeof(what), "%s", table_name[err.table]);
		if (newest)
			problem(s, "checkpoint slot %d (seq %llu, the newest): %s does not "
				"match its checksum", i, (unsigned long long)s->c[i].seq, what);
		else
			note(s, "checkpoint slot %d (seq %llu, the older): %s does not match its "
			     "checksum (a checkpoint into it was interrupted; the next one "
			     "rewrites it)", i, (unsigned long long)s->c[i].seq, what);
		kind_done(s);
		return 0;
	}
	if (r) {
		operational(s, "checkpoint slot %d: read error in %s", i, table_name[err.table]);
		return -1;
	}
	for (seg = 0; seg < g->nr_segments; seg++)
		s->slot_valid[seg] = s->segs[seg].valid;
	if (dmr_map_recount(&s->m)) {
		problem(s, "checkpoint slot %d: a map entry points outside the data area", i);
		kind_done(s);
		return 0;
	}
	if (s->m.mapped != s->c[i].mapped_blocks) {
		problem(s, "checkpoint slot %d: %llu blocks mapped, its header says %llu", i,
			(unsigned long long)s->m.mapped,
			(unsigned long long)s->c[i].mapped_blocks);
		kind_done(s);
		return 0;
	}
	if (dmr_map_free_mapped(&s->m, &seg)) {
		problem(s, "checkpoint slot %d: segment %u holds %u mapped blocks but is "
			"recorded free", i, seg, s->segs[seg].valid);
		kind_done(s);
		return 0;
	}
	for (seg = 0; seg < g->nr_segments; seg++)
		if (s->slot_valid[seg] != s->segs[seg].valid)
			problem(s, "checkpoint slot %d: segment %u has valid count %u, its map %u",
				i, seg, s->slot_valid[seg], s->segs[seg].valid);
	kind_done(s);
	return 1;
}

static int check_one_slot(struct check_state *s, int i, bool newest)
{
	unsigned int before = s->ck->errors;
	int r = __check_one_slot(s, i, newest);

	s->slot_errors[i] = s->ck->errors - before;
	return r;
}

/*
 * The header of slot s->torn fails its checksum and the other slot's
 * decodes: what a crash while a header is written leaves (a checkpoint
 * into the slot, or rule 7's rewrite of the clean flag in place; see the
 * comment in check_slots()).  The module passes over it, loads the other
 * slot, replays the log after it as a recovery and writes its next
 * checkpoint into the torn slot (dmr_ckpt_order(), dmr_load_fell_back()),
 * so when that load works (@loads: the other slot's tables check out and
 * its log replays) this is a note, and --repair still rewrites the slot.
 * Otherwise it is a problem.  A header that decodes with the checksum
 * right but a wrong location or uuid is no crash's work: a problem, in
 * check_slots().
 */
static void torn_header(struct check_state *s, bool loads)
{
	int i = s->torn;

	if (i < 0)
		return;
	s->torn = -1;
	if (!loads) {
		problem(s, "checkpoint slot %d header: %s", i, dmr_log_strerror(s->st[i]));
		kind_done(s);
		return;
	}
	s->residue++;
	note(s, "checkpoint slot %d header: %s (what a crash while it is written leaves): "
	     "the module loads slot %d, replays the log after it and writes its next "
	     "checkpoint into slot %d", i, dmr_log_strerror(s->st[i]), i ^ 1, i);
}

/* 2. Checkpoint slots; returns the slot the module loads, or -1. */
static int check_slots(struct check_state *s)
{
	const struct dmr_geometry *g = &s->sb.geo;
	enum dmr_log_status *st = s->st;
	int i, n, bad, order[DMR_CKPT_SLOTS], loads[DMR_CKPT_SLOTS] = {};
	bool zeroes[DMR_CKPT_SLOTS] = {};
	int chosen = -1;

	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		u64 blk = g->ckpt_offset + (u64)i * g->ckpt_slot_blocks;
		const u8 *b = s->buf;

		st[i] = DMR_LOG_READ_ERROR;
		if (!s->ck->read(s->ck->ctx, blk, 1, s->buf)) {
			st[i] = dmr_ckpt_decode(s->buf, blk, s->sb.uuid, &s->c[i]);
			/* format clears both headers: never written is all zeroes */
			zeroes[i] = !b[0] && !memcmp(b, b + 1, DMR_BLOCK_SIZE - 1);
		}
	}
	s->torn = -1;
	for (i = 0; i < DMR_CKPT_SLOTS; i++) {
		if (st[i] == DMR_LOG_OK)
			note(s, "checkpoint slot %d: seq %llu, log seq %llu%s%s", i,
			     (unsigned long long)s->c[i].seq,
			     (unsigned long long)s->c[i].log_seq,
			     s->c[i].flags & DMR_CKPT_CLEAN ? ", clean" : "",
			     dmr_ckpt_twin_holds(&s->c[i], st[i ^ 1], &s->c[i ^ 1]) ?
			     ", twin of the other slot (a load rewrites none of its map)" : "");
		else if (st[i] == DMR_LOG_BAD_CSUM && st[i ^ 1] == DMR_LOG_OK)
			s->torn = i;	/* reported once the other slot is loaded */
		else if (st[i] != DMR_LOG_BAD_MAGIC)
			problem(s, "checkpoint slot %d header: %s", i, dmr_log_strerror(st[i]));
		else if (!zeroes[i])
			problem(s, "checkpoint slot %d header: damaged (no checkpoint magic, "
				"and not the zeroes of a slot never written)", i);
		else
			note(s, "checkpoint slot %d: never written", i);
	}
	/*
	 * Slots alternate from seq 1 in slot 0: from seq 2 on both were
	 * written, and a slot without a header lost it.  A crash does not do
	 * that: a header is one block written with FUA, into a slot that held
	 * a header unless the other is at seq 1 (the first checkpoint after
	 * format), and the magic of the old and the new header is the same,
	 * so a torn write leaves the magic and fails the checksum.
	 */
	for (i = 0; i < DMR_CKPT_SLOTS; i++)
		if (st[i] == DMR_LOG_BAD_MAGIC && zeroes[i] && st[i ^ 1] == DMR_LOG_OK &&
		    s->c[i ^ 1].seq >= 2)
			problem(s, "checkpoint slot %d header: lost (no header, but slot %d "
				"is at seq %llu, so both were written)", i, i ^ 1,
				(unsigned long long)s->c[i ^ 1].seq);
	kind_done(s);
	n = dmr_ckpt_order(st, s->c, order, &bad);
	if (n < 0) {
		operational(s, "checkpoint slot %d header: read error", bad);
		return -1;
	}
	if (!n) {
		problem(s, "no valid checkpoint header: the module refuses this device");
		kind_done(s);
		return -1;
	}
	for (i = n - 1; i >= 0; i--) {	/* the newest last: its map stays */
		loads[i] = check_one_slot(s, order[i], i == 0);
		if (loads[i] < 0)
			return -1;
	}
	for (i = 0; i < n; i++) {
		if (loads[i] > 0) {
			chosen = order[i];
			break;
		}
	}
	if (chosen < 0) {
		torn_header(s, false);
		problem(s, "no checkpoint slot loads: the module refuses this device");
		kind_done(s);
		return -1;
	}
	if (chosen != order[0]) {
		struct dmr_slot_err err;

		note(s, "the module loads slot %d; the newer slot %d is damaged", chosen, order[0]);
		/* its map again, without reporting what was reported above */
		if (load_slot(s, chosen, &err) || dmr_map_recount(&s->m)) {
			operational(s, "checkpoint slot %d: reading it again failed", chosen);
			return -1;
		}
	}
	return chosen;
}

/* 3. Replay; returns 0, or -1 if the module would refuse the log. */
static int check_replay(struct check_state *s, int slot)
{
	const struct dmr_geometry *g = &s->sb.geo;
	struct dmr_unit *units = calloc(DMR_NR_HEADS, sizeof(*units));
	struct dmr_replay rp = {
		.geo = g, .uuid = s->sb.uuid, .read = s->ck->read, .ctx = s->ck->ctx,
		.buf = s->buf, .unit = units,
	};
	u64 seq = s->c[slot].log_seq;
	unsigned int h;
	int r;

	if (!units) {
		operational(s, "out of memory");
		return -1;
	}
	memcpy(s->pos, s->c[slot].heads, sizeof(s->pos));
	if (!dmr_heads_valid(g, s->pos)) {
		problem(s, "checkpoint slot %d: log head positions out of range", slot);
		free(units);
		return -1;
	}
	r = dmr_replay_heads(&rp, &s->m, s->pos, DMR_NR_HEADS, &seq);
	free(units);
	if (r) {
		problem(s, "log corrupted: a unit does not fit its segment (the module "
			"refuses to load)");
		return -1;
	}
	for (h = 0; h < DMR_NR_HEADS; h++) {
		if (rp.head_stop[h] == DMR_LOG_READ_ERROR) {
			operational(s, "read error in the log of head %u", h);
			return -1;
		}
	}
	s->ck->replayed = rp.units;
	note(s, "replay: %llu units after the checkpoint (log seq %llu to %llu); heads end "
	     "at: %s / %s / %s / %s", (unsigned long long)rp.units,
	     (unsigned long long)s->c[slot].log_seq, (unsigned long long)seq,
	     dmr_log_strerror(rp.head_stop[0]), dmr_log_strerror(rp.head_stop[1]),
	     dmr_log_strerror(rp.head_stop[2]), dmr_log_strerror(rp.head_stop[3]));
	if (!dmr_heads_valid(g, s->pos)) {
		problem(s, "log corrupted: a head has no segment to go on in (the module "
			"refuses to load)");
		return -1;
	}
	s->seq = seq;
	s->recovery = dmr_load_needs_recovery(&s->c[slot], rp.units, rp.stop,
					      dmr_load_fell_back(s->st, s->c, slot));
	if (s->recovery)
		note(s, "not shut down cleanly: the module recovers (replays the log) at load");
	dmr_heads_load_states(&s->m, s->pos);
	return 0;
}

static bool bit_test_set(u8 *map, u64 bit)
{
	bool was = map[bit / 8] & (1U << (bit % 8));

	map[bit / 8] |= 1U << (bit % 8);
	return was;
}

static int head_of(const struct check_state *s, u32 seg)
{
	unsigned int h;

	for (h = 0; h < DMR_NR_HEADS; h++)
		if (s->pos[h].segment == seg)
			return h;
	return -1;
}

/* 4. The map against the segment table. */
static void check_map(struct check_state *s)
{
	const struct dmr_geometry *g = &s->sb.geo;
	u64 data_blocks = g->nr_segments * g->segment_blocks, lba;
	u32 seg;

	for (lba = 0; lba < g->logical_blocks; lba++) {
		u64 e = map_entry(s, &lba), pba;
		u32 off;
		int h;

		if (e == DMR_UNMAPPED)
			continue;
		pba = e - 1;
		if (pba >= data_blocks) {
			problem(s, "logical block %llu maps to block %llu, outside the data area",
				(unsigned long long)lba, (unsigned long long)pba);
			continue;
		}
		seg = dmr_pba_segment(&s->m, pba);
		off = dmr_pba_offset(&s->m, pba);
		s->count[seg]++;
		s->maxref[seg] = off + 1 > s->maxref[seg] ? off + 1 : s->maxref[seg];
		if (bit_test_set(s->mapped, pba))
			problem(s, "data-area block %llu holds two logical blocks (%llu and another)",
				(unsigned long long)pba, (unsigned long long)lba);
		if (!(s->segs[seg].flags & DMR_SEG_USED))
			problem(s, "logical block %llu maps into free segment %u",
				(unsigned long long)lba, seg);
		if ((s->segs[seg].flags & DMR_SEG_LARGE) && lba != s->segs[seg].base - 1 + off)
			problem(s, "logical block %llu maps to block %u of large segment %u, "
				"which holds logical block %llu there",
				(unsigned long long)lba, off, seg,
				(unsigned long long)(s->segs[seg].base - 1 + off));
		h = head_of(s, seg);
		if (h >= 0 && off >= s->pos[h].offset)
			problem(s, "logical block %llu maps to block %u of segment %u, past what "
				"log head %d has written there (%u blocks)",
				(unsigned long long)lba, off, seg, h, s->pos[h].offset);
	}
	kind_done(s);
	for (seg = 0; seg < g->nr_segments; seg++)
		if (s->count[seg] != s->segs[seg].valid)
			problem(s, "segment %u: valid count %u after replay, the map has %u",
				seg, s->segs[seg].valid, s->count[seg]);
	kind_done(s);
	if (!dmr_map_consistent(&s->m))
		problem(s, "the map's counts (mapped, free, prefree) disagree with the "
			"segment table");
	kind_done(s);
	s->ck->mapped = s->m.mapped;
}

/* 5. The units holding mapped blocks, segment by segment. */
static int check_units(struct check_state *s)
{
	const struct dmr_geometry *g = &s->sb.geo;
	static struct dmr_unit u;
	u64 data_blocks = g->nr_segments * g->segment_blocks, lba;
	u32 seg;

	for (seg = 0; seg < g->nr_segments; seg++) {
		u64 base = g->data_offset + (u64)seg * g->segment_blocks, prev = 0;
		u32 off = 0;

		progress(s, "log units", seg, g->nr_segments);
		if ((s->segs[seg].flags & DMR_SEG_LARGE) && s->maxref[seg]) {
			/* a large segment: no unit, its data against its checksum */
			if (s->ck->read(s->ck->ctx, base, g->segment_blocks, s->buf)) {
				operational(s, "read error at block %llu",
					    (unsigned long long)base);
				return -1;
			}
			if (dmr_data_csum(s->buf, g->segment_blocks) != s->segs[seg].csum)
				problem(s, "large segment %u: its data do not match its checksum",
					seg);
			s->ck->large++;
			continue;
		}
		while (off < s->maxref[seg]) {
			enum dmr_log_status st;

			if (s->ck->read(s->ck->ctx, base + off, 1, s->buf)) {
				operational(s, "read error at block %llu",
					    (unsigned long long)(base + off));
				return -1;
			}
			st = dmr_unit_decode(s->buf, base + off, s->sb.uuid, g->logical_blocks, &u);
			if (st == DMR_LOG_OK && off + 1 + u.nr_blocks > g->segment_blocks)
				st = DMR_LOG_BAD_COUNTS;
			if (st != DMR_LOG_OK) {
				problem(s, "segment %u block %u: %s where a unit holding mapped "
					"blocks should be", seg, off, dmr_log_strerror(st));
				break;
			}
			/*
			 * Replay reads either width; but the module writes every
			 * unit of a --wide device wide and of any other narrow,
			 * and a narrow unit on a device past 2^32 blocks would
			 * have lost its numbers' high words.
			 */
			if (!(u.flags & DMR_UNIT_WIDE) != !g->wide)
				problem(s, "segment %u block %u: unit seq %llu is %s on a device "
					"formatted %s", seg, off, (unsigned long long)u.seq,
					u.flags & DMR_UNIT_WIDE ? "wide" : "narrow",
					g->wide ? "--wide" : "without --wide");
			if (u.seq < s->segs[seg].seq || u.seq <= prev) {
				problem(s, "segment %u block %u: unit seq %llu out of order (segment "
					"in use from seq %llu, previous unit %llu)", seg, off,
					(unsigned long long)u.seq,
					(unsigned long long)s->segs[seg].seq,
					(unsigned long long)prev);
				break;
			}
			if (u.nr_blocks) {
				if (s->ck->read(s->ck->ctx, base + off + 1, u.nr_blocks, s->buf)) {
					operational(s, "read error at block %llu",
						    (unsigned long long)(base + off + 1));
					return -1;
				}
				if (dmr_data_csum(s->buf, u.nr_blocks) != u.data_csum) {
					problem(s, "segment %u block %u: the data of unit seq %llu do "
						"not match its checksum", seg, off,
						(unsigned long long)u.seq);
					break;
				}
			}
			bit_test_set(s->summary, (u64)seg * g->segment_blocks + off);
			s->ck->units++;
			prev = u.seq;
			off += 1 + u.nr_blocks;
		}
	}
	progress(s, "log units", 1, 1);
	kind_done(s);
	for (lba = 0; lba < g->logical_blocks; lba++) {
		u64 e = map_entry(s, &lba);

		if (e != DMR_UNMAPPED && e - 1 < data_blocks &&
		    (s->summary[(e - 1) / 8] & (1U << ((e - 1) % 8))))
			problem(s, "logical block %llu maps onto the summary of a unit (block %llu)",
				(unsigned long long)lba, (unsigned long long)(e - 1));
	}
	kind_done(s);
	return 0;
}

/* Write the state loaded and replayed as checkpoint @c, into slot @to. */
static int write_ckpt(struct check_state *s, unsigned int to, struct dmr_ckpt *c)
{
	const struct dmr_geometry *g = &s->sb.geo;
	struct dmr_check *ck = s->ck;
	const struct dmr_slot_io io = {
		.write = ck->write, .ctx = ck->ctx, .bounce = s->buf,
		.bounce_blocks = g->segment_blocks,
	};

	c->blocknr = g->ckpt_offset + (u64)to * g->ckpt_slot_blocks;
	if (dmr_slot_write(&io, g, to, &s->m, s->map_crc, c) || ck->flush(ck->ctx)) {
		operational(s, "checkpoint slot %u: write error in its tables", to);
		return -1;
	}
	dmr_ckpt_encode(c, s->sb.uuid, s->buf);
	if (ck->write(ck->ctx, c->blocknr, 1, s->buf) || ck->flush(ck->ctx)) {
		operational(s, "checkpoint slot %u: write error in its header", to);
		return -1;
	}
	fprintf(ck->out, "repaired: checkpoint slot %u written (seq %llu, log seq %llu, not "
		"clean: the module recovers at the next load)\n", to,
		(unsigned long long)c->seq, (unsigned long long)c->log_seq);
	return 0;
}

/*
 * 6. The checkpoint, rewritten (ck->write) from the slot @slot the module
 * loads and the log replayed after it, when every problem found (@problems
 * of them) was in the slots, or the only thing found is a header a crash
 * tore (s->residue, a note: torn_header()).  The fresh checkpoint is the
 * one the module's load writes after a recovery (rule 4 in
 * dm-remap/dmr-write.c), written offline:
 *
 *  - into the other slot first: the slot loaded stays as it is until the
 *    new one is complete, so a repair that is interrupted leaves a slot
 *    that fails its checksums, and the module loads what it loaded
 *    before;
 *  - numbered one above the slot loaded, so the module loads it first;
 *  - with the log sequence jumped above any unit on the device
 *    (dmr_seq_after_recovery() from dmr_ckpt_log_seq_bound()): the slot
 *    overwritten may have held a newer checkpoint, and its log sequence
 *    goes with it;
 *  - not clean, so the next load replays after it (and jumps again);
 *  - its tables first and a flush, then its header and a flush (rule 5).
 *
 * If the slot loaded had problems of its own (counts its map does not
 * have: the state loaded is recounted from the map), the same state goes
 * into it too, one seq higher, once the first write is complete.
 *
 * Return: 0 or -1 (operational error, reported).
 */
static int repair_ckpt(struct check_state *s, int slot, unsigned int problems)
{
	const struct dmr_ckpt *from = &s->c[slot];
	struct dmr_ckpt c = {
		.seq = from->seq + 1,
		.log_seq = dmr_seq_after_recovery(dmr_ckpt_log_seq_bound(s->st, s->c, slot),
						  s->seq),
		.user_blocks = from->user_blocks,
		.log_blocks = from->log_blocks,
		.gc_moved = from->gc_moved,
		.temp_threshold = from->temp_threshold,
		.age = from->age,
	};
	unsigned int h;

	/* as the module's load: ages leave the jump out */
	dmr_age_clock_jump(&c.age, s->seq, c.log_seq + 1);
	dmr_heads_open(&s->m, s->pos, c.log_seq + 1);
	for (h = 0; h < DMR_NR_HEADS; h++) {
		c.heads[h] = s->pos[h];
		c.heads[h].seq = 0;
	}
	c.mapped_blocks = s->m.mapped;
	fprintf(s->ck->out, "repairing: a fresh checkpoint from slot %d and the %llu units "
		"replayed after it\n", slot, (unsigned long long)s->ck->replayed);
	if (write_ckpt(s, slot ^ 1, &c))
		return -1;
	if (s->slot_errors[slot]) {
		c.seq++;
		if (write_ckpt(s, slot, &c))
			return -1;
	}
	s->ck->errors -= problems;
	s->ck->repaired += problems + s->residue;
	return 0;
}

/**
 * dmr_check_run() - check a device
 * @ck: the device and where to report
 *
 * Return: DMR_CHECK_* (what remapctl check exits with).
 */
int dmr_check_run(struct dmr_check *ck)
{
	struct check_state s = { .ck = ck, .torn = -1 };
	unsigned int before, in_slots;
	bool said = false;
	int slot, ret;
	u64 p;

	s.buf = aligned_alloc(DMR_BLOCK_SIZE, DMR_BLOCK_SIZE);
	if (!s.buf) {
		operational(&s, "out of memory");
		goto out;
	}
	if (ck->dev_blocks < DMR_SB_COPIES) {
		operational(&s, "the device is too small to hold a dm-remap superblock");
		goto out;
	}
	if (check_sb(&s) < 0 || alloc_state(&s))
		goto out;
	before = ck->errors;
	slot = check_slots(&s);
	if (slot < 0)
		goto out;
	in_slots = ck->errors - before;
	if (check_replay(&s, slot)) {
		torn_header(&s, false);
		goto out;
	}
	torn_header(&s, true);
	check_map(&s);
	if (check_units(&s))
		goto out;
	if (!ck->write || (!in_slots && !s.residue))
		goto out;
	if (before || ck->errors != in_slots) {
		fprintf(ck->out, "not repaired: the checkpoint is not rewritten, because "
			"the map replay rebuilt has problems of its own (above)\n");
		said = true;
	} else {
		repair_ckpt(&s, slot, in_slots);
	}
out:
	/* --repair: every problem it leaves is said to be left, as promised */
	if (ck->write && ck->errors && !ck->operational && !said)
		fprintf(ck->out, "not repaired: %u problem%s above: --repair writes only "
			"what needs no guess\n", ck->errors, ck->errors == 1 ? "" : "s");
	if (ck->operational)
		ret = DMR_CHECK_OPERATIONAL;
	else if (ck->errors)
		ret = DMR_CHECK_ERRORS;
	else if (ck->repaired)
		ret = DMR_CHECK_CORRECTED;
	else
		ret = DMR_CHECK_CLEAN;
	/* (s.m.nr_map_blocks: 0 until the first map_reset()) */
	if (s.pages)
		for (p = 0; p < s.m.nr_map_blocks; p++)
			free(s.pages[p]);
	free(s.pages);
	free(s.segs);
	free(s.dirty);
	free(s.lists);
	free(s.map_crc);
	free(s.slot_valid);
	free(s.count);
	free(s.maxref);
	free(s.summary);
	free(s.mapped);
	free(s.buf);
	return ret;
}
