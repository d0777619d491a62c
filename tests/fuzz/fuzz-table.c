// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: the table line's optional arguments (dmr_options_parse()).
 *
 * Input: the words of a table line after the device, separated by
 * spaces or NULs, as device-mapper splits them.  Options that parse must
 * re-emit (dmr_options_emit(), what `dmsetup table` shows) as a line that
 * parses to the same options; a refused line must say why.
 */
#include "fuzz.h"

#define FUZZ_MAX_ARGS	64

/* Split @text in place into at most FUZZ_MAX_ARGS words. */
static unsigned int fuzz_split(char *text, char **argv)
{
	unsigned int argc = 0;
	char *p = text;

	while (*p && argc < FUZZ_MAX_ARGS) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		argv[argc++] = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = '\0';
	}
	return argc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), line[512], *argv[FUZZ_MAX_ARGS + 1];
	char *argv2[FUZZ_MAX_ARGS + 1];
	struct dmr_options o, o2;
	const char *error = NULL;
	unsigned int argc, argc2;
	size_t i;
	int n;

	if (!text)
		return 0;
	for (i = 0; i < size; i++)		/* NULs separate words too */
		text[i] = data[i] ? (char)data[i] : ' ';
	text[size] = '\0';
	argc = fuzz_split(text, argv);

	if (dmr_options_parse(&o, argc, argv, &error)) {
		FUZZ_ASSERT(error && *error);
		free(text);
		return 0;
	}
	FUZZ_ASSERT(o.nr_given <= DMR_OPT_NR);
	n = dmr_options_emit(&o, line, sizeof(line));
	FUZZ_ASSERT(n >= 0 && (size_t)n < sizeof(line) && strlen(line) == (size_t)n);
	argc2 = fuzz_split(line, argv2);
	error = NULL;
	FUZZ_ASSERT(dmr_options_parse(&o2, argc2, argv2, &error) == 0);
	FUZZ_ASSERT(!memcmp(&o, &o2, sizeof(o)));
	free(text);
	return 0;
}
