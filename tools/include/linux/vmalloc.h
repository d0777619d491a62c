/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace stand-in for <linux/vmalloc.h>, for the KUnit suites the
 * host runs as tools/tests/test-pure (dmr-gc-test.c's large arrays).
 */
#ifndef DMR_USER_VMALLOC_H
#define DMR_USER_VMALLOC_H

#include <stdlib.h>

static inline void *vzalloc(size_t size)
{
	return calloc(1, size);
}

static inline void vfree(const void *p)
{
	free((void *)p);
}

#endif /* DMR_USER_VMALLOC_H */
