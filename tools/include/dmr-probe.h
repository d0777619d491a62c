/* SPDX-License-Identifier: GPL-2.0-only */
/* Signature probing shared by remapctl and bm-flash (tools/lib/probe.c). */
#ifndef DMR_PROBE_H
#define DMR_PROBE_H

int dmr_probe_signature(const char *path, char **found);

#endif /* DMR_PROBE_H */
