// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap set-up and tear-down of an instance's memory, work queues and
 * I/O clients, and the synchronous I/O helpers the writer, checkpoints,
 * loading and GC share: the bottom of the stack (dmr.h), calling nothing
 * above it.  Each layer above sets up what is its own after
 * dmr_io_init() (dmr_page_init(), dmr_write_init(), dmr_gc_init(),
 * dmr_worker_init(), in the constructor).
 *
 * Locking: see dmr.h.  dmr_io_init() and dmr_io_exit() run in the
 * constructor and destructor, with no I/O in flight.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dmr.h"

/* Synchronous block I/O on the device through dm-io. */
int dmr_rw(struct dmr_target *rc, blk_opf_t opf, u64 blocknr, u32 nr, void *buf)
{
	struct dm_io_region region = {
		.bdev = rc->dev->bdev,
		.sector = blocknr * DMR_SECTORS_PER_BLOCK,
		.count = (sector_t)nr * DMR_SECTORS_PER_BLOCK,
	};
	struct dm_io_request req = {
		.bi_opf = opf,
		.mem.type = is_vmalloc_addr(buf) ? DM_IO_VMA : DM_IO_KMEM,
		.mem.ptr.addr = buf,
		.client = rc->io_client,
	};
	unsigned long error_bits = 0;
	struct blk_plug plug;
	int r;

	/*
	 * dm-io submits a bio per piece of the buffer; under a plug the device
	 * below sees them together (md RAID-5 batches the stripes, a queue
	 * merges contiguous requests) before this waits for them.
	 */
	blk_start_plug(&plug);
	r = dmr_dm_io(&req, &region, &error_bits);
	blk_finish_plug(&plug);
	return r;
}

/* Enter failed mode, keeping the first error. */
void dmr_fail(struct dmr_target *rc, int err, const char *what)
{
	if (!rc->first_error) {
		rc->first_error = err;
		DMERR("%s: %s failed (%d): switching to read-only (failed) mode",
		      dm_device_name(dm_table_get_md(rc->ti->table)), what, err);
	}
	WRITE_ONCE(rc->mode, DMR_MODE_FAILED);
}

/*
 * Return: bytes of memory the map, segment table and buffers use with
 * @pages map pages in memory: dmr_map_memory_bytes() at the map cache's
 * size, with @pages counted instead of the pages it allows, and without
 * the load's valid counts, freed when the load ends.
 */
static u64 dmr_map_memory_at(const struct dmr_target *rc, u64 pages)
{
	u64 most = rc->pc.cap ? dmr_map_cache_most(rc->pc.cap, rc->sb.geo.segment_blocks) :
		   rc->map.nr_map_blocks;
	u64 load = dmr_array_elems(&rc->sb.geo, 0, DMR_ARRAY_LOAD_VALID) *
		   dmr_array_elem_size(DMR_ARRAY_LOAD_VALID);

	return dmr_map_memory_bytes(&rc->sb.geo, rc->pc.cap ? rc->opts.map_cache : 0) - load -
	       most * DMR_BLOCK_SIZE + pages * DMR_BLOCK_SIZE;
}

/*
 * Return: dmr_map_memory_at() the map's pages in memory now (read
 * without the lock: the worker may be adding one).
 */
u64 dmr_map_memory(const struct dmr_target *rc)
{
	return dmr_map_memory_at(rc, READ_ONCE(rc->map.nr_pages));
}

/*
 * Zeroed array of @n elements of @size bytes.  kvcalloc() refuses more
 * than INT_MAX bytes, and the map of a device above 2 TiB of logical
 * space (2^29 blocks) is bigger than that, as is every array of
 * enum dmr_array at the format's limits, so those go to vmalloc directly
 * (dmr_alloc_path()).  Freed with kvfree() either way.
 */
static void *dmr_alloc_array(u64 n, size_t size)
{
	BUILD_BUG_ON(DMR_KVMALLOC_MAX != INT_MAX);
	switch (dmr_alloc_path(n, size, ULONG_MAX)) {
	case DMR_ALLOC_KVCALLOC:
		return kvcalloc(n, size, GFP_KERNEL | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	case DMR_ALLOC_VMALLOC:
		/* a failure is an error for the table load, never the OOM killer */
		return __vmalloc(n * size, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
				 __GFP_RETRY_MAYFAIL);
	default:
		return NULL;
	}
}

/*
 * One of the arrays sized by the device (enum dmr_array), as
 * dmr_map_memory_bytes() counts it.
 */
void *dmr_alloc_dev_array(const struct dmr_target *rc, enum dmr_array a)
{
	return dmr_alloc_array(dmr_array_elems(&rc->sb.geo, rc->opts.map_cache, a),
			       dmr_array_elem_size(a));
}

int dmr_io_init(struct dmr_target *rc, const char **error)
{
	const struct dmr_geometry *geo = &rc->sb.geo;
	size_t seg_bytes = (size_t)geo->segment_blocks * DMR_BLOCK_SIZE;
	u64 nr_map_blocks = dmr_map_blocks(geo->logical_blocks, geo->wide);
	unsigned int i;
	u32 **pages;
	struct dmr_seg *segs;
	u64 heat_bytes;
	u8 *dirty, *heat;
	u32 *lists;
	bool ok;

	spin_lock_init(&rc->map_lock);
	spin_lock_init(&rc->bio_lock);
	init_waitqueue_head(&rc->readers_wq);
	bio_list_init(&rc->bios);
	bio_list_init(&rc->commit_bios);
	rc->mode = DMR_MODE_READ_ONLY;	/* until dmr_load() */
	/*
	 * A device this machine can never hold is refused before allocating:
	 * its whole map, or the map cache the table gives it.
	 */
	switch (dmr_map_fits(dmr_map_memory_bytes(geo, rc->opts.map_cache),
			     (u64)totalram_pages() << PAGE_SHIFT, dmr_vmalloc_total())) {
	case DMR_FIT_OK:
		break;
	case DMR_FIT_NO_MEMORY:
		*error = "Map needs more memory than this machine has";
		return -ENOMEM;
	default:
		*error = "Map needs more than the kernel's vmalloc space";
		return -ENOMEM;
	}
	/* the element sizes dmr_map_memory_bytes() counts */
	BUILD_BUG_ON(sizeof(*pages) != sizeof(void *));
	BUILD_BUG_ON(sizeof(*rc->readers) != sizeof(u32));
	BUILD_BUG_ON(sizeof(*lists) != sizeof(u32) || sizeof(*dirty) != 1);
	BUILD_BUG_ON(sizeof(*rc->map_crc) != sizeof(u32));
	BUILD_BUG_ON(sizeof(*rc->tab_hash) != sizeof(u64));
	pages = dmr_alloc_dev_array(rc, DMR_ARRAY_MAP_PAGES);
	segs = dmr_alloc_dev_array(rc, DMR_ARRAY_SEGS);
	dirty = dmr_alloc_dev_array(rc, DMR_ARRAY_DIRTY);
	lists = dmr_alloc_dev_array(rc, DMR_ARRAY_LISTS);
	rc->readers = dmr_alloc_dev_array(rc, DMR_ARRAY_READERS);
	rc->map_crc = dmr_alloc_dev_array(rc, DMR_ARRAY_MAP_CRC);
	rc->tab_hash = dmr_alloc_dev_array(rc, DMR_ARRAY_TAB_HASH);
	heat_bytes = dmr_array_elems(geo, rc->opts.map_cache, DMR_ARRAY_HEAT);
	heat = heat_bytes ? dmr_alloc_dev_array(rc, DMR_ARRAY_HEAT) : NULL;
	rc->gc_buf = vmalloc(seg_bytes);
	rc->bounce = vmalloc((size_t)DMR_BOUNCE_BLOCKS * DMR_BLOCK_SIZE);
	rc->gc_unit = kvzalloc(sizeof(*rc->gc_unit), GFP_KERNEL);
	rc->gc_vunit = kvzalloc(sizeof(*rc->gc_vunit), GFP_KERNEL);
	rc->gc_ok = kvzalloc(geo->segment_blocks, GFP_KERNEL);
	rc->gc_crc = kvmalloc_array(geo->segment_blocks, sizeof(*rc->gc_crc), GFP_KERNEL);
	rc->gc_lbas = kvmalloc_array(geo->segment_blocks, sizeof(*rc->gc_lbas), GFP_KERNEL);
	ok = pages && segs && dirty && lists && rc->readers && rc->map_crc &&
	     rc->tab_hash && rc->gc_buf && rc->bounce && rc->gc_unit && rc->gc_vunit && rc->gc_ok &&
	     rc->gc_crc && rc->gc_lbas && (heat || !heat_bytes);
	for (i = 0; i < DMR_FLIGHT_SLOTS; i++) {
		rc->flight[i].buf = vmalloc(seg_bytes);
		ok = ok && rc->flight[i].buf;
	}
	for (i = 0; i < DMR_NR_HEADS; i++) {
		struct dmr_head *h = &rc->heads[i];

		h->buf = vmalloc(seg_bytes);
		h->unit = kvzalloc(sizeof(*h->unit), GFP_KERNEL);
		h->pos.segment = DMR_NO_SEGMENT;
		h->pos.next_segment = DMR_NO_SEGMENT;
		ok = ok && h->buf && h->unit;
	}
	rc->map.pages = pages;
	rc->map.nr_map_blocks = nr_map_blocks;	/* for dmr_io_exit() */
	rc->map.segs = segs;
	rc->map.dirty = dirty;
	rc->map.lists = lists;
	rc->map.heat = heat;
	if (!ok) {
		*error = "Cannot allocate the map";
		return -ENOMEM;
	}
	memset(rc->bounce, 0, DMR_BLOCK_SIZE);
	rc->zero_crc = crc32c(~0U, rc->bounce, DMR_BLOCK_SIZE);
	dmr_map_init_wide(&rc->map, geo->wide, pages, NULL, geo->logical_blocks, segs,
			  geo->nr_segments, geo->segment_blocks, dirty, lists);
	rc->map.heat = heat;	/* (the init clears it) zeroed: every block cold */

	rc->io_client = dm_io_client_create();
	if (IS_ERR(rc->io_client)) {
		rc->io_client = NULL;
		*error = "Cannot create the dm-io client";
		return -ENOMEM;
	}
	if (bioset_init(&rc->bs, BIO_POOL_SIZE, offsetof(struct dmr_clone, bio),
			BIOSET_NEED_BVECS)) {
		*error = "Cannot create the bio set";
		return -ENOMEM;
	}
	rc->wq = alloc_workqueue("dmr-%s", WQ_MEM_RECLAIM, 0,
				 dm_device_name(dm_table_get_md(rc->ti->table)));
	/* unbound, so the second stage runs beside the worker, not behind it */
	rc->flight_wq = alloc_workqueue("dmr-%s-log", WQ_MEM_RECLAIM | WQ_UNBOUND,
					DMR_FLIGHT_SLOTS,
					dm_device_name(dm_table_get_md(rc->ti->table)));
	/* unbound: a victim's data are checked beside the worker */
	rc->gc_verify_wq = alloc_workqueue("dmr-%s-gc", WQ_MEM_RECLAIM | WQ_UNBOUND, 1,
					   dm_device_name(dm_table_get_md(rc->ti->table)));
	if (!rc->wq || !rc->flight_wq || !rc->gc_verify_wq) {
		*error = "Cannot create the workqueue";
		return -ENOMEM;
	}
	return 0;
}

/* Free what dmr_io_init() allocated; safe on a partial init. */
void dmr_io_exit(struct dmr_target *rc)
{
	unsigned int i;

	if (rc->wq)
		destroy_workqueue(rc->wq);
	if (rc->flight_wq)
		destroy_workqueue(rc->flight_wq);
	if (rc->gc_verify_wq)
		destroy_workqueue(rc->gc_verify_wq);
	bioset_exit(&rc->bs);
	if (rc->io_client)
		dm_io_client_destroy(rc->io_client);
	for (i = 0; i < DMR_NR_HEADS; i++) {
		kvfree(rc->heads[i].unit);
		vfree(rc->heads[i].buf);
	}
	kvfree(rc->gc_unit);
	kvfree(rc->gc_vunit);
	kvfree(rc->gc_ok);
	kvfree(rc->gc_crc);
	kvfree(rc->gc_lbas);
	vfree(rc->bounce);
	vfree(rc->gc_buf);
	for (i = 0; i < DMR_FLIGHT_SLOTS; i++)
		vfree(rc->flight[i].buf);
	kvfree(rc->map_crc);
	kvfree(rc->tab_hash);
	kvfree(rc->readers);
	kvfree(rc->map.heat);
	kvfree(rc->map.lists);
	kvfree(rc->map.dirty);
	kvfree(rc->map.segs);
	if (rc->map.pages) {
		u64 p;

		for (p = 0; p < rc->map.nr_map_blocks; p++) {
			if (dmr_map_page_state(&rc->map, p) == DMR_PAGE_RESIDENT)
				kfree(rc->map.pages[p]);
		}
		kvfree(rc->map.pages);
	}
}
