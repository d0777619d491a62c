// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-flashsim: a test-only device-mapper target whose service time follows
 * a flash translation layer (Documentation/dm-remap-flashsim.rst).
 *
 * Data passes through to the underlying device as with dm-linear; what
 * the target adds is time.  Each bio is charged, when it is mapped, the
 * service time the model (flashsim-model.c) gives it, on one media
 * timeline (the drive serves one command at a time):
 *
 *   due = max(now, busy_until) + service;  busy_until = due
 *
 * The bio goes down at once; when the lower device completes it, end_io
 * holds it (DM_ENDIO_INCOMPLETE) on a list ordered by due time until the
 * hrtimer reaches its due time and calls bio_endio() on it again (the
 * way dm-writecache completes its held FUA writes).  So a bio never
 * completes before its data is on the lower device, and bios complete in
 * the order of their due times, which is the order they were mapped in.
 *
 * Locking: one spinlock per target, fc->lock, taken with interrupts off
 * (end_io may run in interrupt context).  The hrtimer callback runs in
 * softirq context (HRTIMER_MODE_ABS_SOFT) and calls bio_endio() with no
 * lock held.
 */
#include <linux/bio.h>
#include <linux/device-mapper.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "flashsim-model.h"

#define DM_MSG_PREFIX "flashsim"

/*
 * Kernel compatibility (6.1 to 6.12): every difference lives here, and
 * between those two there is none this target meets.  dm_get_device()'s
 * mode type (fmode_t, then blk_mode_t) is whatever dm_table_get_mode()
 * returns; queue_limits.io_min/io_opt are set directly (6.12 dropped
 * blk_limits_io_min()); STATUSTYPE_IMA exists in both.  The next one is
 * the timer set-up: hrtimer_setup() replaces hrtimer_init() plus an
 * assignment from 6.13 (a function, no macro to probe).
 */
static inline void flashsim_timer_setup(struct hrtimer *t,
					enum hrtimer_restart (*fn)(struct hrtimer *))
{
	hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	t->function = fn;
}

struct flashsim_c {
	struct dm_dev *dev;

	/*
	 * Protects model (its state and counters), busy_until, held (the
	 * bios waiting for their due time, in due order) and the arming of
	 * timer.
	 */
	spinlock_t lock;
	struct flashsim_model model;
	u64 busy_until;			/* ns, ktime_get_ns() clock */
	struct list_head held;
	struct hrtimer timer;

	void *state;			/* the model's memory (page mode) */
};

/* Per-bio data. */
struct flashsim_io {
	struct list_head node;		/* on fc->held */
	u64 due;			/* completion time, ns */
	bool released;			/* the timer's bio_endio(): complete */
};

static enum hrtimer_restart flashsim_timer_fn(struct hrtimer *t)
{
	struct flashsim_c *fc = container_of(t, struct flashsim_c, timer);
	struct flashsim_io *io, *tmp;
	unsigned long flags;
	LIST_HEAD(done);
	u64 now;

	spin_lock_irqsave(&fc->lock, flags);
	now = ktime_get_ns();
	list_for_each_entry_safe(io, tmp, &fc->held, node) {
		if (io->due > now)
			break;
		list_move_tail(&io->node, &done);
	}
	io = list_first_entry_or_null(&fc->held, struct flashsim_io, node);
	if (io)
		hrtimer_start(&fc->timer, ns_to_ktime(io->due), HRTIMER_MODE_ABS_SOFT);
	spin_unlock_irqrestore(&fc->lock, flags);

	list_for_each_entry_safe(io, tmp, &done, node) {
		list_del(&io->node);
		io->released = true;
		bio_endio(dm_bio_from_per_bio_data(io, sizeof(*io)));
	}
	return HRTIMER_NORESTART;
}

static int flashsim_map(struct dm_target *ti, struct bio *bio)
{
	struct flashsim_c *fc = ti->private;
	struct flashsim_io *io = dm_per_bio_data(bio, sizeof(*io));
	sector_t sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	u64 nr = bio_sectors(bio), cost;
	unsigned long flags;

	bio_set_dev(bio, fc->dev->bdev);
	bio->bi_iter.bi_sector = sector;
	INIT_LIST_HEAD(&io->node);
	io->released = false;

	spin_lock_irqsave(&fc->lock, flags);
	switch (bio_op(bio)) {
	case REQ_OP_READ:
		cost = flashsim_read(&fc->model, sector, nr);
		break;
	case REQ_OP_WRITE:
		cost = nr ? flashsim_write(&fc->model, sector, nr) : flashsim_flush(&fc->model);
		break;
	case REQ_OP_DISCARD:
		cost = flashsim_discard(&fc->model, sector, nr);
		break;
	default:
		cost = 0;
		break;
	}
	io->due = flashsim_schedule(&fc->busy_until, ktime_get_ns(), cost);
	spin_unlock_irqrestore(&fc->lock, flags);

	return DM_MAPIO_REMAPPED;
}

static int flashsim_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct flashsim_c *fc = ti->private;
	struct flashsim_io *io = dm_per_bio_data(bio, sizeof(*io)), *pos;
	unsigned long flags;

	if (io->released)
		return DM_ENDIO_DONE;

	spin_lock_irqsave(&fc->lock, flags);
	if (list_empty(&fc->held) && io->due <= ktime_get_ns()) {
		spin_unlock_irqrestore(&fc->lock, flags);
		return DM_ENDIO_DONE;
	}
	/* in due order: almost always at the tail */
	list_for_each_entry_reverse(pos, &fc->held, node)
		if (pos->due <= io->due)
			break;
	list_add(&io->node, &pos->node);
	if (fc->held.next == &io->node)
		hrtimer_start(&fc->timer, ns_to_ktime(io->due), HRTIMER_MODE_ABS_SOFT);
	spin_unlock_irqrestore(&fc->lock, flags);
	return DM_ENDIO_INCOMPLETE;
}

/*
 * Construct a flashsim mapping:
 *   <dev_path> <block|page> [<key>=<value>]...
 */
static int flashsim_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct flashsim_params params;
	enum flashsim_mode mode;
	struct flashsim_c *fc;
	const char *why;
	unsigned int i;
	u32 seen = 0;
	u64 bytes;
	int r;

	if (argc < 2) {
		ti->error = "Invalid argument count (<dev> <block|page> [key=value]...)";
		return -EINVAL;
	}
	if (flashsim_parse_mode(argv[1], &mode)) {
		ti->error = "Invalid mode (block or page)";
		return -EINVAL;
	}
	flashsim_params_default(&params, mode);
	for (i = 2; i < argc; i++) {
		r = flashsim_parse_param(&params, argv[i], &seen, &why);
		if (r)
			goto refuse;
	}
	r = flashsim_params_check(&params, ti->len, &why);
	if (r)
		goto refuse;

	fc = kzalloc(sizeof(*fc), GFP_KERNEL);
	if (!fc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	bytes = flashsim_state_bytes(&params, ti->len);
	if (bytes) {
		fc->state = kvzalloc(bytes, GFP_KERNEL);
		if (!fc->state) {
			ti->error = "Cannot allocate model state";
			r = -ENOMEM;
			goto bad;
		}
	}
	r = dm_get_device(ti, argv[0], dm_table_get_mode(ti->table), &fc->dev);
	if (r) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	flashsim_model_init(&fc->model, &params, ti->len, fc->state);
	spin_lock_init(&fc->lock);
	INIT_LIST_HEAD(&fc->held);
	flashsim_timer_setup(&fc->timer, flashsim_timer_fn);

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->per_io_data_size = sizeof(struct flashsim_io);
	ti->private = fc;
	return 0;

bad:
	kvfree(fc->state);
	kfree(fc);
	return r;
refuse:
	ti->error = (char *)why;
	return r;
}

static void flashsim_dtr(struct dm_target *ti)
{
	struct flashsim_c *fc = ti->private;

	/* no bio is held: dm waits for every bio before the table goes */
	hrtimer_cancel(&fc->timer);
	dm_put_device(ti, fc->dev);
	kvfree(fc->state);
	kfree(fc);
}

static void flashsim_status(struct dm_target *ti, status_type_t type,
			    unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct flashsim_c *fc = ti->private;
	const char *mode = fc->model.p.mode == FLASHSIM_PAGE ? "page" : "block";
	struct flashsim_counters c;
	unsigned long flags;
	unsigned int sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irqsave(&fc->lock, flags);
		c = fc->model.c;
		spin_unlock_irqrestore(&fc->lock, flags);
		DMEMIT("%s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", mode,
		       c.reads, c.writes, c.discards, c.flushes, c.host_pages,
		       c.flash_pages, c.rmws, c.gc_copies, c.erases,
		       div_u64(c.busy_ns, NSEC_PER_USEC));
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s %s ", fc->dev->name, mode);
		if (sz < maxlen)
			flashsim_format_params(&fc->model.p, result + sz, maxlen - sz);
		break;
	case STATUSTYPE_IMA:
		*result = '\0';
		break;
	}
}

static int flashsim_message(struct dm_target *ti, unsigned int argc, char **argv,
			    char *result, unsigned int maxlen)
{
	struct flashsim_c *fc = ti->private;
	unsigned long flags;

	if (argc == 1 && !strcasecmp(argv[0], "reset")) {
		spin_lock_irqsave(&fc->lock, flags);
		flashsim_reset_counters(&fc->model);
		spin_unlock_irqrestore(&fc->lock, flags);
		return 0;
	}
	DMWARN("unrecognised message (flashsim accepts: reset)");
	return -EINVAL;
}

static int flashsim_iterate_devices(struct dm_target *ti, iterate_devices_callout_fn fn,
				    void *data)
{
	struct flashsim_c *fc = ti->private;

	return fn(ti, fc->dev, 0, ti->len, data);
}

static void flashsim_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	struct flashsim_c *fc = ti->private;

	/* what a drive reports: its page as minimum, erase block as optimal */
	limits->io_min = max_t(unsigned int, limits->io_min, fc->model.p.page_kib << 10);
	limits->io_opt = fc->model.p.erase_kib << 10;
}

static struct target_type flashsim_target = {
	.name = "flashsim",
	.version = {1, 0, 0},
	.module = THIS_MODULE,
	.ctr = flashsim_ctr,
	.dtr = flashsim_dtr,
	.map = flashsim_map,
	.end_io = flashsim_end_io,
	.status = flashsim_status,
	.message = flashsim_message,
	.iterate_devices = flashsim_iterate_devices,
	.io_hints = flashsim_io_hints,
};

static int __init dm_flashsim_init(void)
{
	return dm_register_target(&flashsim_target);
}

static void __exit dm_flashsim_exit(void)
{
	dm_unregister_target(&flashsim_target);
}

module_init(dm_flashsim_init);
module_exit(dm_flashsim_exit);

MODULE_DESCRIPTION(DM_NAME " flash drive timing model (test only)");
MODULE_LICENSE("GPL");
