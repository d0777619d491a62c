// SPDX-License-Identifier: GPL-2.0-only
/*
 * dm-remap table-line option parsing.
 *
 * The optional part of the table line is
 *
 *   <#opt args> <opt args>...
 *
 * parsed against a static table of option descriptors, in the style of
 * dm-flakey: every failure has its own message, numbers are strict
 * (digits only, no sign, no trailing garbage, no overflow) and an option
 * given twice is refused.  The options given are remembered in order so
 * that `dmsetup table` re-emits exactly what was loaded.
 *
 * Pure code: no locking, no allocation, no kernel-only calls.
 */
#include "dmr-table.h"

/**
 * struct dmr_opt_desc - one optional argument
 * @name: keyword on the table line
 * @nr_values: 0 for a flag, 1 for a keyword followed by a number
 * @min: smallest accepted value
 * @max: largest accepted value
 * @err_missing: message when the value is absent
 * @err_invalid: message when the value is not a number
 * @err_range: message when the value is outside [@min, @max]
 * @err_dup: message when the option is given twice
 */
struct dmr_opt_desc {
	const char *name;
	unsigned int nr_values;
	u64 min, max;
	const char *err_missing, *err_invalid, *err_range, *err_dup;
};

static const struct dmr_opt_desc dmr_opts[DMR_OPT_NR] = {
	[DMR_OPT_READ_ONLY] = {
		.name = "read_only",
		.err_dup = "Duplicate optional argument read_only",
	},
	[DMR_OPT_IGNORE_DISCARD] = {
		.name = "ignore_discard",
		.err_dup = "Duplicate optional argument ignore_discard",
	},
	[DMR_OPT_CHECKPOINT_INTERVAL] = {
		.name = "checkpoint_interval",
		.nr_values = 1,
		.min = 1,
		.max = DMR_MAX_CHECKPOINT_INTERVAL,
		.err_missing = "Missing value for checkpoint_interval",
		.err_invalid = "Invalid checkpoint_interval (not a number)",
		.err_range = "checkpoint_interval out of range (1 to 86400 seconds)",
		.err_dup = "Duplicate optional argument checkpoint_interval",
	},
	[DMR_OPT_NO_DISCARD_PASSDOWN] = {
		.name = "no_discard_passdown",
		.err_dup = "Duplicate optional argument no_discard_passdown",
	},
	[DMR_OPT_GC_LOW] = {
		.name = "gc_low",
		.nr_values = 1,
		.min = 1,
		.max = DMR_MAX_GC_WATERMARK,
		.err_missing = "Missing value for gc_low",
		.err_invalid = "Invalid gc_low (not a number)",
		.err_range = "gc_low out of range (1 to 2147483647 segments)",
		.err_dup = "Duplicate optional argument gc_low",
	},
	[DMR_OPT_GC_HIGH] = {
		.name = "gc_high",
		.nr_values = 1,
		.min = 1,
		.max = DMR_MAX_GC_WATERMARK,
		.err_missing = "Missing value for gc_high",
		.err_invalid = "Invalid gc_high (not a number)",
		.err_range = "gc_high out of range (1 to 2147483647 segments)",
		.err_dup = "Duplicate optional argument gc_high",
	},
	[DMR_OPT_ZERO_COPY] = {
		.name = "zero_copy",
		.err_dup = "Duplicate optional argument zero_copy",
	},
	[DMR_OPT_MAP_CACHE] = {
		.name = "map_cache",
		.nr_values = 1,
		.min = 1,
		.max = DMR_MAX_MAP_CACHE,
		.err_missing = "Missing value for map_cache",
		.err_invalid = "Invalid map_cache (not a number)",
		.err_range = "map_cache out of range (1 to 1048576 MiB)",
		.err_dup = "Duplicate optional argument map_cache",
	},
	[DMR_OPT_NO_STRIPE_FILL] = {
		.name = "no_stripe_fill",
		.err_dup = "Duplicate optional argument no_stripe_fill",
	},
	[DMR_OPT_NO_LARGE_WRITES] = {
		.name = "no_large_writes",
		.err_dup = "Duplicate optional argument no_large_writes",
	},
};

static_assert(DMR_OPT_NR <= 32, "dmr_options_parse() keeps a 32-bit seen mask");

/**
 * dmr_parse_u64() - strict decimal parse
 * @s: string
 * @val: result
 *
 * Return: 0, or -EINVAL for an empty string, any non-digit (signs and
 * spaces included) or a value that does not fit in 64 bits.
 */
int dmr_parse_u64(const char *s, u64 *val)
{
	u64 v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = *s - '0';
		if (v > (~0ULL - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*val = v;
	return 0;
}

void dmr_options_init(struct dmr_options *o)
{
	memset(o, 0, sizeof(*o));
	o->checkpoint_interval = DMR_DEFAULT_CHECKPOINT_INTERVAL;
}

static int dmr_opt_lookup(const char *name)
{
	int i;

	for (i = 0; i < DMR_OPT_NR; i++)
		if (!strcmp(name, dmr_opts[i].name))
			return i;
	return -1;
}

static void dmr_opt_set(struct dmr_options *o, int id, u64 value)
{
	switch (id) {
	case DMR_OPT_READ_ONLY:
		o->read_only = true;
		break;
	case DMR_OPT_IGNORE_DISCARD:
		o->ignore_discard = true;
		break;
	case DMR_OPT_CHECKPOINT_INTERVAL:
		o->checkpoint_interval = value;
		break;
	case DMR_OPT_NO_DISCARD_PASSDOWN:
		o->no_discard_passdown = true;
		break;
	case DMR_OPT_GC_LOW:
		o->gc_low = value;
		break;
	case DMR_OPT_GC_HIGH:
		o->gc_high = value;
		break;
	case DMR_OPT_ZERO_COPY:
		o->zero_copy = true;
		break;
	case DMR_OPT_MAP_CACHE:
		o->map_cache = value;
		break;
	case DMR_OPT_NO_STRIPE_FILL:
		o->no_stripe_fill = true;
		break;
	case DMR_OPT_NO_LARGE_WRITES:
		o->no_large_writes = true;
		break;
	}
}

/* The value of an option that takes one (see dmr_opt_desc.nr_values). */
static u32 dmr_opt_value(const struct dmr_options *o, int id)
{
	switch (id) {
	case DMR_OPT_CHECKPOINT_INTERVAL:
		return o->checkpoint_interval;
	case DMR_OPT_GC_LOW:
		return o->gc_low;
	case DMR_OPT_GC_HIGH:
		return o->gc_high;
	case DMR_OPT_MAP_CACHE:
		return o->map_cache;
	default:
		return 0;
	}
}

/**
 * dmr_options_parse() - parse the optional arguments of a table line
 * @o: initialised with defaults here, then filled
 * @argc: number of words after the device path
 * @argv: those words; argv[0] is the optional argument count
 * @error: on failure, a static message for ti->error
 *
 * Return: 0 or -EINVAL.
 */
int dmr_options_parse(struct dmr_options *o, unsigned int argc, char **argv,
		      const char **error)
{
	unsigned int i, count;
	u32 seen = 0;
	u64 v;

	dmr_options_init(o);
	if (!argc)
		return 0;

	if (dmr_parse_u64(argv[0], &v)) {
		*error = "Invalid optional argument count";
		return -EINVAL;
	}
	if (v > argc - 1) {
		*error = "Optional argument count exceeds the arguments given";
		return -EINVAL;
	}
	if (v < argc - 1) {
		*error = "Too many arguments";
		return -EINVAL;
	}
	count = v;
	argv++;

	for (i = 0; i < count; i++) {
		const struct dmr_opt_desc *d;
		int id = dmr_opt_lookup(argv[i]);

		if (id < 0) {
			*error = "Unrecognised optional argument";
			return -EINVAL;
		}
		d = &dmr_opts[id];
		if (seen & (1U << id)) {
			*error = d->err_dup;
			return -EINVAL;
		}
		seen |= 1U << id;
		v = 0;
		if (d->nr_values) {
			if (i + 1 >= count) {
				*error = d->err_missing;
				return -EINVAL;
			}
			i++;
			if (dmr_parse_u64(argv[i], &v)) {
				*error = d->err_invalid;
				return -EINVAL;
			}
			if (v < d->min || v > d->max) {
				*error = d->err_range;
				return -EINVAL;
			}
		}
		dmr_opt_set(o, id, v);
		o->order[o->nr_given++] = id;
	}
	return 0;
}

/**
 * dmr_options_with_gc() - the options, with the watermarks in use now
 * @in: the options the table gave
 * @low: gc_low in use (the gc_low message may have changed it)
 * @high: gc_high in use
 * @def_low: the device's default gc_low (dmr_gc_params_default())
 * @def_high: its default gc_high
 * @out: @in, with the current watermarks
 *
 * `dmsetup table` shows a target's current arguments, and a reload of
 * that line (`remapctl grow` makes one) must keep what the messages set.
 * A watermark the table gave takes its current value in its place; one
 * it did not give is added when it differs from the default.  Loading
 * @out gives the same watermarks (dmr_gc_params_apply() moves the other
 * one only when they cross, and the ones in use do not).
 */
void dmr_options_with_gc(const struct dmr_options *in, u32 low, u32 high,
			 u32 def_low, u32 def_high, struct dmr_options *out)
{
	static const u8 ids[] = { DMR_OPT_GC_LOW, DMR_OPT_GC_HIGH };
	const u32 cur[] = { low, high }, def[] = { def_low, def_high };
	unsigned int i, j;

	*out = *in;
	out->gc_low = low;
	out->gc_high = high;
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		for (j = 0; j < out->nr_given; j++)
			if (out->order[j] == ids[i])
				break;
		if (j == out->nr_given && cur[i] != def[i] && out->nr_given < DMR_OPT_NR)
			out->order[out->nr_given++] = ids[i];
	}
}

/**
 * dmr_options_emit() - the optional arguments as `dmsetup table` shows them
 * @o: parsed options
 * @buf: output, NUL terminated
 * @len: size of @buf
 *
 * Emits "<#opt args> <opt args>..." in the order the table gave them, or
 * nothing at all when the table gave none.
 *
 * Return: characters written (excluding the NUL), or -ENOSPC.
 */
int dmr_options_emit(const struct dmr_options *o, char *buf, size_t len)
{
	unsigned int i, words = 0;
	size_t n = 0;
	int r;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	if (!o->nr_given)
		return 0;
	for (i = 0; i < o->nr_given; i++)
		words += 1 + dmr_opts[o->order[i]].nr_values;

	r = snprintf(buf, len, "%u", words);
	if (r < 0 || (size_t)r >= len)
		return -ENOSPC;
	n = r;
	for (i = 0; i < o->nr_given; i++) {
		int id = o->order[i];

		if (dmr_opts[id].nr_values)
			r = snprintf(buf + n, len - n, " %s %u",
				     dmr_opts[id].name, dmr_opt_value(o, id));
		else
			r = snprintf(buf + n, len - n, " %s", dmr_opts[id].name);
		if (r < 0 || (size_t)r >= len - n)
			return -ENOSPC;
		n += r;
	}
	return n;
}
