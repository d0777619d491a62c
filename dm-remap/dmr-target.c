// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap: device-mapper glue (constructor, destructor, map, status,
 * messages, limits).
 *
 * Table line:
 *
 *   <start> <len> remap <dev> [<#opt args> <opt args>...]
 *
 * The device must have been formatted by `remapctl format`.  Writes,
 * discards and flushes go to the worker (dmr-worker.c); reads of data on
 * the device are remapped directly (dmr-read.c).
 *
 * Locking: see dmr.h.  The constructor, destructor and suspend hooks run
 * with no I/O in flight; the statistics are atomics.  @dmr_instances_lock
 * protects the list of instances, which the constructor uses to tell a
 * table reload (another instance of the same device in another table of
 * the same mapped device) from a first load, and to refuse any other
 * instance of a device one already uses (dmr_register()).  Each
 * instance's @ctl_lock serialises the checkpoint message with
 * postsuspend, preresume and resume.
 */
#include <linux/module.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/slab.h>

#include "dmr.h"

static LIST_HEAD(dmr_instances);
static DEFINE_MUTEX(dmr_instances_lock);	/* protects dmr_instances */

/* @md's name as dmsetup shows it, or its number before it has one */
static void dmr_md_name(struct mapped_device *md, char name[DM_NAME_LEN])
{
	if (dm_copy_name_and_uuid(md, name, NULL))
		strscpy(name, dm_device_name(md), DM_NAME_LEN);
}

/*
 * Add @rc to the instances.  Device-mapper opens every table's devices
 * with the same holder, so a second mapped device can open a device a
 * live one already writes, and one table can name a device twice; nor
 * is the block device all there is to compare: a dm-linear slice from
 * block 0, a second loop device over one image file or a cloned disk is
 * the same dm-remap device (the same superblock uuid) under another
 * block device.  Any of those must be refused (-EBUSY), or two
 * instances would append to one log.  Another instance of the same
 * device in another table of the same mapped device is a table reload
 * (through an alias too): @rc must not read the metadata before the old
 * instance's postsuspend wrote its last checkpoint (*@shared is set, the
 * load waits for preresume).  dmr_instance_relation() decides; @rc->sb
 * was read, and an instance's uuid does not change once registered.
 *
 * Return: 0 or -EBUSY, with *@error set.
 */
static int dmr_register(struct dmr_target *rc, bool *shared, const char **error)
{
	char name[DM_NAME_LEN], o_name[DM_NAME_LEN];
	struct mapped_device *md = dm_table_get_md(rc->ti->table);
	struct dmr_target *o;
	int r = 0;

	*shared = false;
	mutex_lock(&dmr_instances_lock);
	list_for_each_entry(o, &dmr_instances, node) {
		struct mapped_device *o_md = dm_table_get_md(o->ti->table);
		bool same_table = o->ti->table == rc->ti->table;

		switch (dmr_instance_relation(o->dev->bdev == rc->dev->bdev,
					      !memcmp(o->sb.uuid, rc->sb.uuid,
						      sizeof(rc->sb.uuid)),
					      o_md == md, same_table)) {
		case DMR_INSTANCE_UNRELATED:
			continue;
		case DMR_INSTANCE_RELOAD:
			*shared = true;
			continue;
		case DMR_INSTANCE_REFUSE:
			break;
		}
		/* a leaf lock (dm_hash_cells_mutex), taken under ours */
		dmr_md_name(md, name);
		dmr_md_name(o_md, o_name);
		DMERR("%s: %s holds dm-remap device %pUb, which %s already uses as %s",
		      name, rc->dev->name, rc->sb.uuid, same_table ? "this table" : o_name,
		      o->dev->name);
		*error = same_table ? "Device is used twice in this table" :
			 "Device is in use by another dm-remap mapped device";
		r = -EBUSY;
		break;
	}
	if (!r)
		list_add(&rc->node, &dmr_instances);
	mutex_unlock(&dmr_instances_lock);
	return r;
}

static void dmr_unregister(struct dmr_target *rc)
{
	mutex_lock(&dmr_instances_lock);
	list_del(&rc->node);
	mutex_unlock(&dmr_instances_lock);
}

static void dmr_clear_stats(struct dmr_stats *s)
{
	atomic64_set(&s->user_blocks, 0);
	atomic64_set(&s->device_blocks, 0);
	atomic64_set(&s->flushes, 0);
	atomic64_set(&s->short_units, 0);
	atomic64_set(&s->discards, 0);
	atomic64_set(&s->gc_runs, 0);
	atomic64_set(&s->gc_moved, 0);
	atomic64_set(&s->segs_freed, 0);
	atomic64_set(&s->throttled, 0);
	atomic64_set(&s->device_flushes, 0);
	atomic64_set(&s->zero_copy_blocks, 0);
	atomic64_set(&s->zero_copy_recopied, 0);
	atomic64_set(&s->gc_read_errors, 0);
	atomic64_set(&s->gc_unverified, 0);
	atomic64_set(&s->map_misses, 0);
	atomic64_set(&s->map_evictions, 0);
	atomic64_set(&s->map_forced, 0);
	atomic64_set(&s->inline_writes, 0);
	atomic64_set(&s->ckpt_table_blocks, 0);
	atomic64_set(&s->read_splits, 0);
	atomic64_set(&s->large_segments, 0);
}

/* GC watermarks: the defaults for the device, or the table's. */
static int dmr_gc_setup(struct dmr_target *rc, const char **error)
{
	struct dmr_gc_params p;
	const char *why;

	dmr_gc_params_default(rc->sb.geo.nr_segments, &p);
	dmr_gc_params_apply(&p, rc->opts.gc_low, rc->opts.gc_high);
	why = dmr_gc_params_check(rc->sb.geo.nr_segments,
				  dmr_gc_high_max(&rc->sb.geo), &p);
	if (why) {
		*error = why;
		return -EINVAL;
	}
	rc->gc = p;
	rc->discard_free = !rc->opts.no_discard_passdown &&
			   bdev_max_discard_sectors(rc->dev->bdev);
	/*
	 * The zero-copy path measured 0.74-0.81x of the copying one (one
	 * synchronous unit at a time, its pages checksummed twice) and was
	 * removed (issue 25); old table lines still load, and re-emit it.
	 */
	if (rc->opts.zero_copy)
		DMWARN("%s: zero_copy is retired and ignored (writes are copied)",
		       rc->dev->name);
	return 0;
}

/*
 * A table longer than the formatted logical size grows the device (issue
 * 26): the geometry of the device as it is now below, with its grow
 * limit (dmr_geometry_for_length()).  @rc->sb takes the grown geometry
 * here, before anything is sized from it; the load writes it to the
 * device before anything else (dmr_load()).
 */
static int dmr_grow_setup(struct dmr_target *rc, struct dm_target *ti)
{
	struct dmr_geometry g;
	u64 dev_blocks = bdev_nr_sectors(rc->dev->bdev) / DMR_SECTORS_PER_BLOCK;

	switch (dmr_geometry_for_length(&rc->sb.geo, dev_blocks,
					ti->len / DMR_SECTORS_PER_BLOCK, &g)) {
	case DMR_GROW_NONE:
		return 0;
	case DMR_GROW_YES:
		break;
	case DMR_GROW_NO_LIMIT:
		ti->error = "Target length exceeds the formatted logical size";
		return -EINVAL;
	case DMR_GROW_SHRUNK:
		ti->error = "Device is smaller than its formatted size";
		return -EINVAL;
	default:
		ti->error = "Target length exceeds what the device can grow to";
		return -EINVAL;
	}
	if (rc->read_only) {
		ti->error = "Cannot grow a read-only table";
		return -EINVAL;
	}
	rc->grow_from = rc->sb.geo.device_blocks;
	rc->sb.geo = g;
	return 0;
}

static int dmr_check_device(struct dmr_target *rc, struct dm_target *ti)
{
	struct block_device *bdev = rc->dev->bdev;
	const struct dmr_geometry *geo = &rc->sb.geo;
	u64 need = (geo->data_offset + geo->nr_segments * geo->segment_blocks) *
		   DMR_SECTORS_PER_BLOCK;

	if (bdev_logical_block_size(bdev) > DMR_BLOCK_SIZE) {
		ti->error = "Device logical block size above 4096 bytes";
		return -EINVAL;
	}
	if (bdev_nr_sectors(bdev) < need) {
		ti->error = "Device is smaller than its formatted size";
		return -EINVAL;
	}
	/*
	 * 64-bit map entries are read without the lock (dmr_map_read()): a
	 * kernel whose longs are 32-bit could see one half written.
	 */
	if (geo->wide && BITS_PER_LONG < 64) {
		ti->error = "64-bit block numbers need a 64-bit kernel";
		return -EINVAL;
	}
	if ((rc->sb.feature_ro_compat & ~DMR_FEATURE_RO_COMPAT_SUPP) &&
	    !rc->read_only) {
		ti->error = "Unsupported read-only-compatible features: load with read_only";
		return -EINVAL;
	}
	if (ti->len & (DMR_SECTORS_PER_BLOCK - 1)) {
		ti->error = "Target length is not a multiple of 4096 bytes";
		return -EINVAL;
	}
	return dmr_grow_setup(rc, ti);
}

/*
 * Construct a remap target:
 *   <dev> [<#opt args> <opt args>...]
 *
 * Loads the device here, so that a bad device fails the table load with
 * its own message; but a reload of a live table only allocates here and
 * loads at preresume (rule 8 in dmr-write.c).
 */
static int dmr_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dmr_target *rc;
	const char *err = NULL;
	int r;

	if (argc < 1) {
		ti->error = "Not enough arguments (need <dev>)";
		return -EINVAL;
	}

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc) {
		ti->error = "Cannot allocate target context";
		return -ENOMEM;
	}
	rc->ti = ti;
	INIT_LIST_HEAD(&rc->node);
	mutex_init(&rc->ctl_lock);

	r = dmr_options_parse(&rc->opts, argc - 1, argv + 1, &err);
	if (r)
		goto bad;
	/* the read_only option, or a table loaded read-only (dmsetup -r) */
	rc->read_only = rc->opts.read_only || !dmr_table_writable(ti);

	r = dm_get_device(ti, argv[0], rc->read_only ? DMR_OPEN_READ :
			  dm_table_get_mode(ti->table), &rc->dev);
	if (r) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	r = dmr_read_superblock(rc->dev->bdev, &rc->sb, &rc->sb_copy,
				&rc->sb_copies_valid, &err);
	if (r)
		goto bad_dev;
	r = dmr_check_device(rc, ti);
	if (r)
		goto bad_dev;

	rc->data_start = rc->sb.geo.data_offset * DMR_SECTORS_PER_BLOCK;
	dmr_clear_stats(&rc->stats);

	/* each layer sets up its own, from the bottom (dmr.h) */
	r = dmr_io_init(rc, &err);
	if (r)
		goto bad_io;
	r = dmr_page_init(rc, &err);
	if (r)
		goto bad_io;
	dmr_write_init(rc);
	dmr_gc_init(rc);
	dmr_worker_init(rc);
	r = dmr_gc_setup(rc, &err);
	if (r)
		goto bad_io;
	r = dmr_register(rc, &rc->deferred, &err);
	if (r)
		goto bad_io;
	if (!rc->deferred) {
		r = dmr_load(rc, &err);
		if (r)
			goto bad_load;
	}

	ti->num_flush_bios = 1;
	ti->flush_supported = true;
	ti->num_discard_bios = rc->opts.ignore_discard ? 0 : 1;
	ti->discards_supported = !rc->opts.ignore_discard;
	ti->num_write_zeroes_bios = 1;
	ti->per_io_data_size = sizeof(struct dmr_per_bio);
	ti->private = rc;
	return 0;

bad_load:
	dmr_unregister(rc);
bad_io:
	dmr_page_exit(rc);
	dmr_io_exit(rc);
bad_dev:
	dm_put_device(ti, rc->dev);
bad:
	/* ti->error is not const; every message here is a static string */
	if (err)
		ti->error = (char *)err;
	kfree(rc);
	return r;
}

static void dmr_dtr(struct dm_target *ti)
{
	struct dmr_target *rc = ti->private;

	dmr_worker_stop(rc);
	/*
	 * Device-mapper postsuspends a live table before destroying it, and
	 * postsuspend wrote the last checkpoint, so this normally writes
	 * nothing; a table loaded but never resumed never became active and
	 * must not write either: a live table may own the device.
	 */
	if (rc->active && READ_ONCE(rc->mode) == DMR_MODE_WRITE &&
	    dmr_checkpoint_now(rc, true))
		DMERR("%s: final checkpoint failed; the next load replays the log",
		      rc->dev->name);
	dmr_unregister(rc);
	dmr_page_exit(rc);
	dmr_io_exit(rc);
	dm_put_device(ti, rc->dev);
	kfree(rc);
}

/* A reloaded table loads here, after the old one's postsuspend. */
static int dmr_preresume(struct dm_target *ti)
{
	struct dmr_target *rc = ti->private;
	const char *err = "load failed";
	int r = 0;

	mutex_lock(&rc->ctl_lock);
	if (!rc->loaded) {
		r = dmr_load(rc, &err);
		if (r)
			DMERR("%s: %s (%d)", rc->dev->name, err, r);
	}
	if (!r)
		rc->active = true;
	mutex_unlock(&rc->ctl_lock);
	return r;
}

/*
 * Test hook for issue 24 item 3: postsuspend sleeps this many
 * milliseconds between stopping the worker and its clean checkpoint, so a
 * test can send a checkpoint message meanwhile (dm's suspend waits for
 * messages already in progress, not for those that come after its SRCU
 * grace period).  0, the default, does nothing.
 */
static unsigned int dmr_fault_suspend_delay_ms;
module_param_named(fault_suspend_delay_ms, dmr_fault_suspend_delay_ms, uint, 0600);
MODULE_PARM_DESC(fault_suspend_delay_ms,
		 "Test hook: postsuspend waits this long before its clean checkpoint");

/*
 * The last thing an instance writes before it is resumed again or
 * replaced by a reload: a clean checkpoint (rule 8).
 */
static void dmr_postsuspend(struct dm_target *ti)
{
	struct dmr_target *rc = ti->private;
	unsigned int delay = READ_ONCE(dmr_fault_suspend_delay_ms);

	/* a checkpoint message in progress finishes first (@ctl_lock) */
	mutex_lock(&rc->ctl_lock);
	WRITE_ONCE(rc->suspended, true);
	dmr_worker_stop(rc);
	if (delay)	/* test hook: a checkpoint message arrives meanwhile */
		msleep(delay);
	if (rc->active && READ_ONCE(rc->mode) == DMR_MODE_WRITE &&
	    dmr_checkpoint_now(rc, true))
		DMERR("%s: checkpoint at suspend failed; the next load replays the log",
		      rc->dev->name);
	rc->active = false;
	mutex_unlock(&rc->ctl_lock);
}

static void dmr_resume(struct dm_target *ti)
{
	struct dmr_target *rc = ti->private;

	mutex_lock(&rc->ctl_lock);
	WRITE_ONCE(rc->suspended, false);
	dmr_worker_start(rc);
	mutex_unlock(&rc->ctl_lock);
}

static int dmr_map(struct dm_target *ti, struct bio *bio)
{
	struct dmr_target *rc = ti->private;
	struct dmr_per_bio *pb = dm_per_bio_data(bio, sizeof(*pb));

	pb->seg = DMR_NO_SEGMENT;	/* dmr_map_read() sets it */
	pb->begun = false;
	switch (bio_op(bio)) {
	case REQ_OP_READ:
		if (!bio_sectors(bio)) {
			bio_endio(bio);
			return DM_MAPIO_SUBMITTED;
		}
		if (dmr_map_read(rc, bio))
			return DM_MAPIO_REMAPPED;
		dmr_queue_bio(rc, bio);		/* served from memory */
		return DM_MAPIO_SUBMITTED;
	case REQ_OP_WRITE:
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		if (bio_op(bio) == REQ_OP_WRITE && !bio_sectors(bio)) {
			switch (dmr_empty_flush_verdict(READ_ONCE(rc->mode))) {
			case DMR_FLUSH_DONE:
				bio_endio(bio);	/* read-only: nothing to flush */
				return DM_MAPIO_SUBMITTED;
			case DMR_FLUSH_FAIL:
				return DM_MAPIO_KILL;
			case DMR_FLUSH_QUEUE:
				break;
			}
		} else if (READ_ONCE(rc->mode) != DMR_MODE_WRITE) {
			return DM_MAPIO_KILL;
		}
		/* a flush's age for the group commit's bound (dmr_do_write()) */
		pb->arrived = READ_ONCE(rc->nr_handled);
		if (bio_op(bio) == REQ_OP_WRITE && bio_sectors(bio) &&
		    !(bio->bi_opf & (REQ_PREFLUSH | REQ_FUA)) && dmr_worker_inline(rc, bio))
			return DM_MAPIO_SUBMITTED;
		dmr_queue_bio(rc, bio);
		return DM_MAPIO_SUBMITTED;
	default:
		return DM_MAPIO_KILL;
	}
}

/* A remapped read completed: drop its count on the segment it read. */
static int dmr_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct dmr_target *rc = ti->private;
	struct dmr_per_bio *pb = dm_per_bio_data(bio, sizeof(*pb));

	if (pb->seg != DMR_NO_SEGMENT) {
		dmr_reader_put(rc, pb->seg);
		pb->seg = DMR_NO_SEGMENT;
	}
	return DM_ENDIO_DONE;
}

static const char *dmr_gc_mode_name(int mode)
{
	switch (mode) {
	case DMR_GC_MODE_BACKGROUND:
		return "background";
	case DMR_GC_MODE_URGENT:
		return "urgent";
	default:
		return "idle";
	}
}

/*
 * Write amplification, log blocks over user blocks, with three decimals
 * ("-" before any user write).
 */
static unsigned int dmr_emit_waf(char *buf, size_t len, u64 log, u64 user)
{
	u64 milli;

	if (!user)
		return scnprintf(buf, len, "-");
	milli = div64_u64(log * 1000 + user / 2, user);
	return scnprintf(buf, len, "%llu.%03llu", div64_u64(milli, 1000),
			 milli - div64_u64(milli, 1000) * 1000);
}

static const char *dmr_mode_name(int mode)
{
	switch (mode) {
	case DMR_MODE_WRITE:
		return "write";
	case DMR_MODE_READ_ONLY:
		return "read-only";
	default:
		return "failed";
	}
}

/*
 * Status (see Documentation/dm-remap.rst, "Status"):
 *   <mode> <format version> <logical blocks> <segment sectors>
 *   <segments> <free segments> <user blocks written> <device blocks written>
 *   <flushes> <short units> <checkpoint seq> <replayed units>
 *   <map memory bytes> <superblock copies ok> <discards> <first error>
 *   <gc state> <gc low> <gc high> <gc reserve> <prefree segments>
 *   <gc runs> <gc blocks moved> <segments freed> <throttled writes>
 *   <waf since load> <waf since format> <device flushes>
 *   <zero-copy blocks> <zero-copy units recopied>
 *   <gc read errors> <gc unverified units>
 * (32 fields)
 */
static void dmr_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result,
		       unsigned int maxlen)
{
	struct dmr_target *rc = ti->private;
	unsigned int sz = 0;
	char opts[DMR_TABLE_OPTS_MAX], waf_load[32], waf_fmt[32];
	struct dmr_gc_params p, def;
	struct dmr_options now;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock(&rc->map_lock);
		p = rc->gc;
		spin_unlock(&rc->map_lock);
		/* the worker's totals, read racily: a moment old at worst */
		dmr_emit_waf(waf_load, sizeof(waf_load),
			     atomic64_read(&rc->stats.device_blocks),
			     atomic64_read(&rc->stats.user_blocks));
		dmr_emit_waf(waf_fmt, sizeof(waf_fmt), READ_ONCE(rc->total_log),
			     READ_ONCE(rc->total_user));
		DMEMIT("%s %u %llu %llu %llu %u %lld %lld %lld %lld %llu %llu %llu %u %lld %d",
		       dmr_mode_name(READ_ONCE(rc->mode)),
		       rc->sb.version,
		       (unsigned long long)rc->sb.geo.logical_blocks,
		       (unsigned long long)rc->sb.geo.segment_blocks *
				DMR_SECTORS_PER_BLOCK,
		       (unsigned long long)rc->sb.geo.nr_segments,
		       READ_ONCE(rc->map.nr_free),
		       (long long)atomic64_read(&rc->stats.user_blocks),
		       (long long)atomic64_read(&rc->stats.device_blocks),
		       (long long)atomic64_read(&rc->stats.flushes),
		       (long long)atomic64_read(&rc->stats.short_units),
		       (unsigned long long)READ_ONCE(rc->ckpt_seq),
		       (unsigned long long)rc->replayed,
		       (unsigned long long)dmr_map_memory(rc),
		       rc->sb_copies_valid,
		       (long long)atomic64_read(&rc->stats.discards),
		       READ_ONCE(rc->first_error));
		DMEMIT(" %s %u %u %u %u %lld %lld %lld %lld %s %s %lld %lld %lld",
		       dmr_gc_mode_name(READ_ONCE(rc->gc_mode)),
		       p.low, p.high, p.reserve, READ_ONCE(rc->map.nr_prefree),
		       (long long)atomic64_read(&rc->stats.gc_runs),
		       (long long)atomic64_read(&rc->stats.gc_moved),
		       (long long)atomic64_read(&rc->stats.segs_freed),
		       (long long)atomic64_read(&rc->stats.throttled),
		       waf_load, waf_fmt,
		       (long long)atomic64_read(&rc->stats.device_flushes),
		       (long long)atomic64_read(&rc->stats.zero_copy_blocks),
		       (long long)atomic64_read(&rc->stats.zero_copy_recopied));
		DMEMIT(" %lld %lld %lld %lld %lld %llu %lld %lld %lld %lld",
		       (long long)atomic64_read(&rc->stats.gc_read_errors),
		       (long long)atomic64_read(&rc->stats.gc_unverified),
		       (long long)atomic64_read(&rc->stats.map_misses),
		       (long long)atomic64_read(&rc->stats.map_evictions),
		       (long long)atomic64_read(&rc->stats.map_forced),
		       (unsigned long long)READ_ONCE(rc->map.nr_pages_peak),
		       (long long)atomic64_read(&rc->stats.inline_writes),
		       (long long)atomic64_read(&rc->stats.ckpt_table_blocks),
		       (long long)atomic64_read(&rc->stats.read_splits),
		       (long long)atomic64_read(&rc->stats.large_segments));
		break;
	case STATUSTYPE_TABLE:
		/* the watermarks in use: the messages may have changed them */
		spin_lock(&rc->map_lock);
		p = rc->gc;
		spin_unlock(&rc->map_lock);
		dmr_gc_params_default(rc->sb.geo.nr_segments, &def);
		dmr_options_with_gc(&rc->opts, p.low, p.high, def.low, def.high, &now);
		DMEMIT("%s", rc->dev->name);
		if (dmr_options_emit(&now, opts, sizeof(opts)) > 0)
			DMEMIT(" %s", opts);
		break;
	default:
		break;
	}
}

static int dmr_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct dmr_target *rc = ti->private;

	if (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {
		dmr_clear_stats(&rc->stats);
		return 0;
	}
	if (argc == 2 && (!strcasecmp(argv[0], "gc_low") ||
			  !strcasecmp(argv[0], "gc_high"))) {
		struct dmr_gc_params p;
		const char *why;
		u64 v;

		if (dmr_parse_u64(argv[1], &v) || !v || v > INT_MAX) {
			DMWARN("%s: invalid %s value '%s'", rc->dev->name, argv[0], argv[1]);
			return -EINVAL;
		}
		spin_lock(&rc->map_lock);
		p = rc->gc;
		if (!strcasecmp(argv[0], "gc_low"))
			dmr_gc_params_apply(&p, v, 0);
		else
			dmr_gc_params_apply(&p, 0, v);
		why = dmr_gc_params_check(rc->sb.geo.nr_segments,
					  dmr_gc_high_max(&rc->sb.geo), &p);
		if (!why)
			rc->gc = p;
		spin_unlock(&rc->map_lock);
		if (why) {
			DMWARN("%s: %s", rc->dev->name, why);
			return -EINVAL;
		}
		return 0;
	}
	if (argc == 1 && !strcasecmp(argv[0], "checkpoint")) {
		int r;

		/*
		 * dm holds only SRCU around a message: @ctl_lock keeps it out
		 * of postsuspend's clean checkpoint and preresume's load,
		 * which share the worker's checkpoint state.
		 */
		mutex_lock(&rc->ctl_lock);
		r = dmr_message_checkpoint_verdict(READ_ONCE(rc->mode), rc->active,
						   READ_ONCE(rc->stopping));
		if (!r)
			r = dmr_checkpoint_now(rc, false);
		mutex_unlock(&rc->ctl_lock);
		return r;
	}
	if (argc == 1 && !strcasecmp(argv[0], "gc_collect")) {
		int r;

		/* as checkpoint: serialised with suspend, run by the worker */
		mutex_lock(&rc->ctl_lock);
		r = dmr_message_checkpoint_verdict(READ_ONCE(rc->mode), rc->active,
						   READ_ONCE(rc->stopping));
		if (!r) {
			rc->gc_collect_result = -EBUSY;
			WRITE_ONCE(rc->gc_collect_req, true);
			queue_work(rc->wq, &rc->work);
			flush_work(&rc->work);
			r = READ_ONCE(rc->gc_collect_req) ? -EBUSY : rc->gc_collect_result;
			WRITE_ONCE(rc->gc_collect_req, false);
		}
		mutex_unlock(&rc->ctl_lock);
		return r;
	}
	DMWARN("unrecognised message received (%u args, first '%s')",
	       argc, argc ? argv[0] : "");
	return -EINVAL;
}

static int dmr_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct dmr_target *rc = ti->private;

	return fn(ti, rc->dev, rc->data_start, ti->len, data);
}

static void dmr_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	struct dmr_target *rc = ti->private;

	limits->logical_block_size = max_t(unsigned int,
					   limits->logical_block_size,
					   DMR_BLOCK_SIZE);
	limits->physical_block_size = max_t(unsigned int,
					    limits->physical_block_size,
					    DMR_BLOCK_SIZE);
	limits->io_min = DMR_BLOCK_SIZE;
	limits->io_opt = rc->sb.geo.segment_blocks * DMR_BLOCK_SIZE;
	if (!rc->opts.ignore_discard) {
		/* discards are handled here (unmapped), not passed down */
		limits->discard_granularity = DMR_BLOCK_SIZE;
		limits->max_hw_discard_sectors = UINT_MAX >> 3 << 3;
		limits->max_discard_sectors = UINT_MAX >> 3 << 3;
	}
	limits->max_write_zeroes_sectors = UINT_MAX >> 3 << 3;
}

static struct target_type dmr_target_type = {
	.name = "remap",
	.version = {0, 4, 0},
	.module = THIS_MODULE,
	.ctr = dmr_ctr,
	.dtr = dmr_dtr,
	.map = dmr_map,
	.end_io = dmr_end_io,
	.status = dmr_status,
	.message = dmr_message,
	.preresume = dmr_preresume,
	.postsuspend = dmr_postsuspend,
	.resume = dmr_resume,
	.iterate_devices = dmr_iterate_devices,
	.io_hints = dmr_io_hints,
};

static int __init dmr_init(void)
{
	int r = dm_register_target(&dmr_target_type);

	if (r < 0)
		DMERR("register failed %d", r);
	return r;
}

static void __exit dmr_exit(void)
{
	dm_unregister_target(&dmr_target_type);
}

module_init(dmr_init);
module_exit(dmr_exit);

MODULE_DESCRIPTION(DM_NAME " log-structured remapping target for SSDs and parity RAID");
MODULE_AUTHOR("dm-remap developers");
MODULE_LICENSE("GPL");
