// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes the fuzz targets' seed corpus (tests/fuzz/corpus/TARGET/NAME)
 * with the shared encoders, so every seed is a valid structure of the
 * current format:
 *
 *   mkseeds DIR
 *
 * Regenerate and commit the corpus when the format changes.
 */
#include <sys/stat.h>

#include "fuzz.h"

static const char *root;

static void put(const char *target, const char *name, u8 flags,
		const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	f = fopen(path, "wb");
	if (!f || (flags != 0xff && fwrite(&flags, 1, 1, f) != 1) ||
	    fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void seeds_sb(void)
{
	static u8 block[DMR_BLOCK_SIZE];
	struct dmr_sb sb = { .version = DMR_FORMAT_VERSION, .generation = 3,
			     .ctime = 1764000000, .stripe_blocks = 48,
			     .label = "fuzz" };

	memcpy(sb.uuid, fuzz_uuid, 16);
	if (dmr_geometry_compute(65536, 768, 10, &sb.geo) != DMR_GEO_OK)
		exit(1);
	sb.blocknr = 0;
	dmr_sb_encode(&sb, block);
	put("sb", "copy0", 0, block, sizeof(block));
	put("sb", "copy0-fix", FUZZ_FIX_CSUM, block, sizeof(block));
	sb.blocknr = 1;
	dmr_sb_encode(&sb, block);
	put("sb", "copy1", 2, block, sizeof(block));
	if (dmr_geometry_compute(1536, 64, 3, &sb.geo) != DMR_GEO_OK)
		exit(1);
	sb.blocknr = 0;
	dmr_sb_encode(&sb, block);
	put("sb", "small", FUZZ_FIX_CSUM, block, sizeof(block));
}

static void seeds_ckpt(void)
{
	static u8 block[DMR_BLOCK_SIZE];
	struct dmr_ckpt c = { .flags = DMR_CKPT_CLEAN, .seq = 7, .log_seq = 41,
			      .blocknr = DMR_SB_COPIES, .crc_csum = 0x1234,
			      .segtab_csum = 0x5678, .mapped_blocks = 100,
			      .user_blocks = 300, .log_blocks = 900, .gc_moved = 500 };
	unsigned int i;

	for (i = 0; i < DMR_NR_HEADS; i++)
		c.heads[i] = (struct dmr_log_pos){ .segment = i, .offset = 3 * i,
						   .next_segment = DMR_NO_SEGMENT };
	c.heads[1].next_segment = 9;
	dmr_ckpt_encode(&c, fuzz_uuid, block);
	put("ckpt", "clean", 0, block, sizeof(block));
	c.flags = 0;
	dmr_ckpt_encode(&c, fuzz_uuid, block);
	put("ckpt", "dirty-fix", FUZZ_FIX_CSUM, block, sizeof(block));
}

static void seeds_unit(void)
{
	static u8 block[DMR_BLOCK_SIZE], data[4 * DMR_BLOCK_SIZE];
	static struct dmr_unit u;

	memset(data, 0x5a, sizeof(data));
	dmr_unit_reset(&u, 0);
	u.seq = 12;
	u.blocknr = 4096;
	u.next_segment = DMR_NO_SEGMENT;
	u.nr_blocks = 4;
	u.lba[0] = 5; u.lba[1] = 99999; u.lba[2] = 0; u.lba[3] = 5;
	u.nr_discards = 1;
	u.discard[0][0] = 100; u.discard[0][1] = 28;
	dmr_unit_encode(&u, fuzz_uuid, data, block);
	put("unit", "data", 0, block, sizeof(block));
	put("unit", "data-fix", FUZZ_FIX_CSUM, block, sizeof(block));
	dmr_unit_reset(&u, DMR_UNIT_RELOC);
	u.seq = 13;
	u.blocknr = 4096;
	u.next_segment = 3;
	u.nr_blocks = 2;
	u.lba[0] = 7; u.src[0] = 640;
	u.lba[1] = 8; u.src[1] = 641;
	dmr_unit_encode(&u, fuzz_uuid, data, block);
	put("unit", "reloc-fix", FUZZ_FIX_CSUM, block, sizeof(block));
	/* format 5: a unit recording two large segments, and a block */
	dmr_unit_reset(&u, 0);
	u.seq = 14;
	u.blocknr = 4096;
	u.next_segment = DMR_NO_SEGMENT;
	u.nr_extents = 2;
	u.ext_lba[0] = 256; u.ext_seg[0] = 7; u.ext_csum[0] = 0x1234;
	u.ext_lba[1] = 512; u.ext_seg[1] = 9; u.ext_csum[1] = 0x5678;
	u.nr_blocks = 1;
	u.lba[0] = 300;
	dmr_unit_encode(&u, fuzz_uuid, data, block);
	put("unit", "extents-fix", FUZZ_FIX_CSUM, block, sizeof(block));
}

/*
 * Slot 1 of the fuzz-slot device: a header and tables whose checksums the
 * harness stores (FUZZ_FIX_CSUM): empty, and with a few mapped blocks.
 */
static void seeds_slot(void)
{
	static u8 img[16][DMR_BLOCK_SIZE];
	struct dmr_ckpt c = { .seq = 2, .log_seq = 9, .mapped_blocks = 0 };
	struct dmr_disk_segment *d;
	struct dmr_geometry geo;
	struct dmr_ckpt_layout l;
	__le32 *map;
	unsigned int i;

	if (dmr_geometry_compute(1536, 64, 10, &geo) != DMR_GEO_OK ||
	    geo.ckpt_slot_blocks > 16)
		exit(1);
	dmr_ckpt_layout(&geo, &l);
	c.blocknr = geo.ckpt_offset + geo.ckpt_slot_blocks;
	for (i = 0; i < DMR_NR_HEADS; i++)
		c.heads[i] = (struct dmr_log_pos){ .segment = i,
						   .next_segment = DMR_NO_SEGMENT };
	dmr_ckpt_encode(&c, fuzz_uuid, img[0]);
	put("slot", "empty-fix", FUZZ_FIX_CSUM, img, geo.ckpt_slot_blocks * DMR_BLOCK_SIZE);
	map = (__le32 *)img[l.map_offset];
	map[0] = cpu_to_le32(1);		/* segment 0, block 0 */
	map[5] = cpu_to_le32(66);		/* segment 1, block 1 */
	map[geo.logical_blocks - 1] = cpu_to_le32(67);
	d = (struct dmr_disk_segment *)img[l.segtab_offset];
	d[0] = (struct dmr_disk_segment){ .seq = cpu_to_le64(1), .valid = cpu_to_le32(1),
					  .flags = cpu_to_le32(DMR_SEG_USED) };
	d[1] = (struct dmr_disk_segment){ .seq = cpu_to_le64(4), .valid = cpu_to_le32(2),
					  .flags = cpu_to_le32(DMR_SEG_USED) };
	c.mapped_blocks = 3;
	dmr_ckpt_encode(&c, fuzz_uuid, img[0]);
	put("slot", "three-fix", FUZZ_FIX_CSUM, img, geo.ckpt_slot_blocks * DMR_BLOCK_SIZE);
	/*
	 * births: segment 0's past its seq (loads as the seq: 5001 has no
	 * exact float, so seq - birth would not load back the same), 1's
	 * within it
	 */
	d[0].seq = cpu_to_le64(5001);
	d[0].flags = cpu_to_le32(DMR_SEG_USED | DMR_DISK_SEG_HOT |
				 0xffffU << DMR_DISK_SEG_BIRTH_SHIFT);
	d[1].flags = cpu_to_le32(DMR_SEG_USED | 3U << DMR_DISK_SEG_BIRTH_SHIFT);
	/* format 5: a large segment, its base and checksum */
	d[2].seq = cpu_to_le64(5);
	d[2].flags = cpu_to_le32(DMR_SEG_USED | DMR_SEG_LARGE);
	d[2].base = cpu_to_le64(65);
	d[2].data_csum = cpu_to_le32(0xabcd);
	put("slot", "births-fix", FUZZ_FIX_CSUM, img, geo.ckpt_slot_blocks * DMR_BLOCK_SIZE);
}

static void seeds_table(void)
{
	static const char *const lines[] = {
		"", "0", "1 read_only", "2 ignore_discard zero_copy",
		"2 checkpoint_interval 30", "4 gc_low 4 gc_high 8",
		("9 read_only ignore_discard checkpoint_interval 86400 "
		 "no_discard_passdown gc_low 1 gc_high 2147483647"),
		"2 zero_copy zero_copy", "1 gc_low", "3 checkpoint_interval 0 x",
		"3 no_stripe_fill map_cache 8",
		"2 no_large_writes no_stripe_fill",
	};
	char name[16];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(lines); i++) {
		snprintf(name, sizeof(name), "line%zu", i);
		put("table", name, 0xff, lines[i], strlen(lines[i]));
	}
}

/*
 * A log over the fuzz-replay device: head 0 at block 0 of segment 0 with
 * a data unit, a unit with a discard, a relocation unit and a unit that
 * leaves the segment for segment 4; heads 1-3 empty in segments 1-3.
 */
static void seeds_replay(void)
{
	enum { NB = 64 };
	static u8 img[NB][DMR_BLOCK_SIZE];
	static struct dmr_unit u;
	struct dmr_geometry geo;
	u8 hdr[1 + 3 * DMR_NR_HEADS + 2], *out;
	u32 off = 0, i, h;
	u64 base;

	if (dmr_geometry_compute(1536, 64, 10, &geo) != DMR_GEO_OK)
		exit(1);
	base = geo.data_offset;
	for (i = 0; i < NB; i++)
		memset(img[i], (int)i, DMR_BLOCK_SIZE);

	dmr_unit_reset(&u, 0);			/* seq 1: blocks 10-13 */
	u.seq = 1; u.blocknr = base + off; u.next_segment = DMR_NO_SEGMENT;
	u.nr_blocks = 4;
	for (i = 0; i < 4; i++)
		u.lba[i] = 10 + i;
	dmr_unit_encode(&u, fuzz_uuid, img[off + 1], img[off]);
	off += 5;
	dmr_unit_reset(&u, 0);			/* seq 2: discard 11-12, write 20 */
	u.seq = 2; u.blocknr = base + off; u.next_segment = DMR_NO_SEGMENT;
	u.nr_blocks = 1; u.lba[0] = 20;
	u.nr_discards = 1; u.discard[0][0] = 11; u.discard[0][1] = 2;
	dmr_unit_encode(&u, fuzz_uuid, img[off + 1], img[off]);
	off += 2;
	dmr_unit_reset(&u, DMR_UNIT_RELOC);	/* seq 3: move 10 and 13 */
	u.seq = 3; u.blocknr = base + off; u.next_segment = DMR_NO_SEGMENT;
	u.nr_blocks = 2;
	u.lba[0] = 10; u.src[0] = 1;
	u.lba[1] = 13; u.src[1] = 4;
	dmr_unit_encode(&u, fuzz_uuid, img[off + 1], img[off]);
	off += 3;
	dmr_unit_reset(&u, 0);			/* seq 4: fills the segment */
	u.seq = 4; u.blocknr = base + off; u.next_segment = 4;
	u.nr_blocks = NB - off - 1;
	for (i = 0; i < u.nr_blocks; i++)
		u.lba[i] = 100 + i;
	dmr_unit_encode(&u, fuzz_uuid, img[off + 1], img[off]);

	memset(hdr, 0, sizeof(hdr));
	hdr[0] = 0;
	for (h = 0; h < DMR_NR_HEADS; h++) {
		hdr[1 + 3 * h] = h;		/* segment */
		hdr[2 + 3 * h] = 0;		/* offset */
		hdr[3 + 3 * h] = 0xff;		/* no next segment */
	}
	hdr[sizeof(hdr) - 2] = 0;		/* checkpoint's last seq */
	hdr[sizeof(hdr) - 1] = 0;		/* blocks go to segment 0 */
	out = malloc(sizeof(hdr) - 1 + sizeof(img));
	if (!out)
		exit(1);
	memcpy(out, hdr + 1, sizeof(hdr) - 1);
	memcpy(out + sizeof(hdr) - 1, img, sizeof(img));
	put("replay", "four-units", 0, out, sizeof(hdr) - 1 + sizeof(img));
	put("replay", "four-units-fix", FUZZ_FIX_CSUM, out, sizeof(hdr) - 1 + 12 * DMR_BLOCK_SIZE);
	free(out);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	root = argv[1];
	mkdir(root, 0755);
	seeds_sb();
	seeds_ckpt();
	seeds_unit();
	seeds_slot();
	seeds_table();
	seeds_replay();
	return 0;
}
