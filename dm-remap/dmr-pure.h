/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Environment for dm-remap's pure code.
 *
 * The policy and codec files (dmr-format.c, dmr-table.c) include only this
 * header.  In the kernel it maps to the kernel's own helpers; in userspace
 * (tools/, the simulator) tools/include/dmr-user.h provides the same names.
 * Pure code never touches a bio, never sleeps and never allocates behind the
 * caller's back, so KUnit and the userspace tools run exactly the same code.
 */
#ifndef DMR_PURE_H
#define DMR_PURE_H

#ifdef __KERNEL__
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/rcupdate.h>
#include <asm/barrier.h>
#include <asm/byteorder.h>
#include "dmr-compat.h"
#else
#include "dmr-user.h"
#endif

#include "dmr-format.h"

#endif /* DMR_PURE_H */
