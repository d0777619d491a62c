/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dm-remap table-line option parsing: functions defined in dmr-table.c.
 *
 * Pure code (see dmr-pure.h).  No locking: the caller owns the structure.
 */
#ifndef DMR_TABLE_H
#define DMR_TABLE_H

#include "dmr-pure.h"

enum dmr_opt_id {
	DMR_OPT_READ_ONLY,
	DMR_OPT_IGNORE_DISCARD,
	DMR_OPT_CHECKPOINT_INTERVAL,
	DMR_OPT_NO_DISCARD_PASSDOWN,
	DMR_OPT_GC_LOW,
	DMR_OPT_GC_HIGH,
	DMR_OPT_ZERO_COPY,
	DMR_OPT_MAP_CACHE,
	DMR_OPT_NO_STRIPE_FILL,
	DMR_OPT_NO_LARGE_WRITES,
	DMR_OPT_NR,
};

/* Seconds between checkpoints unless the table says otherwise. */
#define DMR_DEFAULT_CHECKPOINT_INTERVAL	30U
#define DMR_MAX_CHECKPOINT_INTERVAL	86400U
/*
 * Largest GC watermark the parser takes, in free segments; the module then
 * checks the watermarks against the device (dmr_gc_params_check()).
 */
#define DMR_MAX_GC_WATERMARK		0x7fffffffU
/*
 * Bytes of the optional arguments of a table line as the target emits
 * them (dmr_options_emit(), STATUSTYPE_TABLE), terminator included: the
 * longest line is 169 bytes and its terminator.
 */
#define DMR_TABLE_OPTS_MAX		192
/* Largest map cache the parser takes, in MiB (the map of 256 TiB). */
#define DMR_MAX_MAP_CACHE		1048576U

/**
 * struct dmr_options - parsed optional arguments of a table line
 * @read_only: refuse every write, discard and flush-with-data
 * @ignore_discard: do not pass discards down (and do not advertise them)
 * @checkpoint_interval: seconds between periodic checkpoints
 * @no_discard_passdown: do not discard the segments GC frees on the device
 *	below (by default they are discarded when that device supports it)
 * @gc_low: background GC starts below this many free segments (0: not
 *	given, the device's default applies)
 * @gc_high: background GC stops at this many free or prefree segments
 *	(0: not given, the device's default applies)
 * @zero_copy: given (retired: accepted, re-emitted and ignored, with a
 *	warning; every write is copied into the segment buffer)
 * @map_cache: MiB of map pages kept in memory (0: not given, the whole
 *	map); the others are read back from the checkpoint when needed
 * @no_stripe_fill: write log units as they are, not padded to the end of
 *	their stripe of the device below (dmr_stripe_pad())
 * @no_large_writes: write every block of a write through a log head, none
 *	in a segment of its own (dmr_write_large())
 * @order: option ids in the order the table gave them, for re-emission
 * @nr_given: number of entries in @order
 */
struct dmr_options {
	bool read_only;
	bool ignore_discard;
	u32 checkpoint_interval;
	bool no_discard_passdown;
	u32 gc_low;
	u32 gc_high;
	bool zero_copy;
	u32 map_cache;
	bool no_stripe_fill;
	bool no_large_writes;
	u8 order[DMR_OPT_NR];
	u8 nr_given;
};

int __must_check dmr_parse_u64(const char *s, u64 *val);
void dmr_options_init(struct dmr_options *o);
int __must_check dmr_options_parse(struct dmr_options *o, unsigned int argc,
				   char **argv, const char **error);
void dmr_options_with_gc(const struct dmr_options *in, u32 low, u32 high,
			 u32 def_low, u32 def_high, struct dmr_options *out);
int dmr_options_emit(const struct dmr_options *o, char *buf, size_t len);

#endif /* DMR_TABLE_H */
