// SPDX-License-Identifier: GPL-2.0-only
/* Error exits shared by remapctl and remap-sim (include/dmr-msg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dmr-msg.h"

/*
 * "prog: message" on stderr, then exit with @code; a usage error (2) adds
 * a pointer to --help.
 */
void dmr_exit_msg(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", dmr_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (code == 2)
		fprintf(stderr, "\nTry '%s --help'.\n", dmr_prog);
	else
		fputc('\n', stderr);
	exit(code);
}
