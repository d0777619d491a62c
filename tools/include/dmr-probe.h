/* SPDX-License-Identifier: GPL-2.0-only */
/* Signature probing shared by remapctl and bm-flash (tools/lib/probe.c). */
#ifndef DMR_PROBE_H
#define DMR_PROBE_H

#include <stdio.h>

int dmr_probe_signature(const char *path, char **found);
int dmr_probe_foreign(const char *path, char **found);
int dmr_wipe_signatures(int fd, const char *path, FILE *report, const char *prog);

#endif /* DMR_PROBE_H */
