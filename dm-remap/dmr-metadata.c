// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap metadata I/O: reading and choosing the superblock, and
 * rewriting it when the device grows.
 *
 * Runs only from the constructor and the load (process context, may
 * sleep, no I/O admitted yet).  No shared state, so no locking.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/gfp.h>
#include <linux/slab.h>

#include "dmr.h"

static int dmr_read_block(struct block_device *bdev, u64 blocknr,
			  struct page *page)
{
	struct bio *bio;
	int r;

	bio = bio_alloc(bdev, 1, REQ_OP_READ | REQ_SYNC | REQ_META, GFP_KERNEL);
	bio->bi_iter.bi_sector = blocknr * DMR_SECTORS_PER_BLOCK;
	__bio_add_page(bio, page, DMR_BLOCK_SIZE, 0);
	r = submit_bio_wait(bio);
	bio_put(bio);
	return r;
}

/**
 * dmr_read_superblock() - read both superblock copies and pick one
 * @bdev: the device
 * @sb: the chosen, decoded superblock
 * @copy: which copy was chosen
 * @nr_valid: how many copies are valid and current (dmr_sb_copies_current())
 * @error: static message for ti->error on failure
 *
 * The valid copy with the highest generation wins; a copy that is not
 * valid, or is valid with an older generation, is not current and a
 * writable load rewrites it (dmr_load()).  When neither copy
 * validates, the error reported is the one of the most advanced check any
 * copy reached (a copy with good magic but a bad checksum says more than
 * one without magic).
 *
 * Return: 0, -EIO on a read error, -EINVAL when no copy is valid.
 */
int dmr_read_superblock(struct block_device *bdev, struct dmr_sb *sb,
			unsigned int *copy, unsigned int *nr_valid,
			const char **error)
{
	enum dmr_sb_status st[DMR_SB_COPIES], worst = DMR_SB_BAD_MAGIC;
	u64 gen[DMR_SB_COPIES] = { };
	struct dmr_sb *cand;
	struct page *page;
	int i, best = -1, r = 0;

	if (bdev_nr_sectors(bdev) < DMR_SB_COPIES * DMR_SECTORS_PER_BLOCK) {
		*error = "Device too small to hold a dm-remap superblock";
		return -EINVAL;
	}
	page = alloc_page(GFP_KERNEL);
	cand = kcalloc(DMR_SB_COPIES, sizeof(*cand), GFP_KERNEL);
	if (!page || !cand) {
		*error = "Cannot allocate superblock buffer";
		r = -ENOMEM;
		goto out;
	}

	*nr_valid = 0;
	for (i = 0; i < DMR_SB_COPIES; i++) {
		r = dmr_read_block(bdev, i, page);
		if (r) {
			DMERR("superblock copy %d: read error %d", i, r);
			st[i] = DMR_SB_NR_STATUS;
			continue;
		}
		st[i] = dmr_sb_decode(page_address(page), i, &cand[i]);
		if (st[i] != DMR_SB_OK) {
			if (st[i] > worst)
				worst = st[i];
			continue;
		}
		gen[i] = cand[i].generation;
		if (best < 0 || cand[i].generation > cand[best].generation)
			best = i;
	}
	r = 0;

	if (best < 0) {
		if (st[0] == DMR_SB_NR_STATUS && st[1] == DMR_SB_NR_STATUS) {
			*error = "Superblock read failed";
			r = -EIO;
		} else {
			*error = dmr_sb_strerror(worst);
			r = -EINVAL;
		}
		/* ti->error is static: the versions and the remedy go to the log */
		for (i = 0; worst == DMR_SB_BAD_VERSION && i < DMR_SB_COPIES; i++)
			if (st[i] == DMR_SB_BAD_VERSION) {
				DMERR("%pg: format version %u, this module reads %u: %s",
				      bdev, cand[i].version, DMR_FORMAT_VERSION,
				      dmr_sb_version_remedy(cand[i].version));
				break;
			}
		goto out;
	}
	for (i = 0; i < DMR_SB_COPIES; i++)
		if (st[i] != DMR_SB_OK)
			DMWARN("%pg: superblock copy %d invalid (%s), using copy %d",
			       bdev, i, st[i] == DMR_SB_NR_STATUS ? "read error" :
			       dmr_sb_strerror(st[i]), best);
	*nr_valid = dmr_sb_copies_current(st, gen, best);
	for (i = 0; i < DMR_SB_COPIES; i++)
		if (st[i] == DMR_SB_OK && cand[i].generation != cand[best].generation)
			DMWARN("%pg: superblock copy %d is stale (generation %llu, %d has %llu)",
			       bdev, i, (unsigned long long)cand[i].generation, best,
			       (unsigned long long)cand[best].generation);
	*sb = cand[best];
	*copy = best;
out:
	kfree(cand);
	if (page)
		__free_page(page);
	return r;
}

/**
 * dmr_write_superblock() - rewrite both superblock copies from @rc->sb
 * @rc: target, loading (dmr_load()), before anything is written under
 *	the geometry @rc->sb now holds
 *
 * Crash ordering: the copy not in use is written first, then the one in
 * use, each with REQ_FUA and one generation higher than before.  Until
 * the first write completes the copy in use is untouched; a torn first
 * write fails its checksum and the old copy wins; once it completes it
 * wins (higher generation), and a torn second write leaves it the only
 * valid copy.  At every point a valid copy exists, and it is either the
 * old superblock or the new one whole.
 *
 * Return: 0 or the write's error.
 */
int dmr_write_superblock(struct dmr_target *rc)
{
	unsigned int order[DMR_SB_COPIES] = { rc->sb_copy ^ 1, rc->sb_copy };
	unsigned int i;
	int r;

	rc->sb.generation++;
	for (i = 0; i < DMR_SB_COPIES; i++) {
		rc->sb.blocknr = order[i];
		dmr_sb_encode(&rc->sb, rc->bounce);
		r = dmr_rw(rc, REQ_OP_WRITE | REQ_SYNC | REQ_META | REQ_FUA,
			   order[i], 1, rc->bounce);
		if (r)
			return r;
	}
	rc->sb.blocknr = rc->sb_copy;
	rc->sb_copies_valid = DMR_SB_COPIES;
	return 0;
}
