/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal userspace KUnit shim, so dm-remap/dmr-test.c (the KUnit suite
 * of the pure code) also runs on the host as tools/tests/test-pure.
 *
 * Supports what dmr-test.c uses: KUNIT_CASE, KUNIT_CASE_PARAM,
 * KUNIT_ARRAY_PARAM, the EXPECT/ASSERT comparison macros, kunit_kzalloc,
 * kunit_alloc_resource and kunit_skip.  An ASSERT failure or a skip ends the case (longjmp).
 */
#ifndef DMR_KUNIT_SHIM_H
#define DMR_KUNIT_SHIM_H

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmr-user.h"

#define KUNIT_PARAM_DESC_SIZE 128
#define GFP_KERNEL 0
#define MODULE_DESCRIPTION(x)
#define MODULE_LICENSE(x)

struct kunit {
	const char *name;
	const void *param_value;
	int failed;
	int skipped;
	jmp_buf bail;
};

struct kunit_case {
	void (*run_case)(struct kunit *test);
	const char *name;
	const void *(*generate_params)(const void *prev, char *desc);
};

struct kunit_suite {
	const char *name;
	struct kunit_case *test_cases;
	int (*init)(struct kunit *test);
	void (*exit)(struct kunit *test);
};

#define KUNIT_CASE(fn) { .run_case = fn, .name = #fn }
#define KUNIT_CASE_PARAM(fn, gen) { .run_case = fn, .name = #fn, .generate_params = gen }

#define KUNIT_ARRAY_PARAM(name, array, get_desc)				\
	static const void *name##_gen_params(const void *prev, char *desc)	\
	{									\
		typeof((array)[0]) *__next = prev ? ((typeof(__next))prev) + 1 : (array); \
		void (*__get_desc)(typeof(__next), char *) = get_desc;		\
		if (__next - (array) < (long)ARRAY_SIZE(array)) {		\
			if (__get_desc)						\
				__get_desc(__next, desc);			\
			return __next;						\
		}								\
		return NULL;							\
	}

extern struct kunit_suite *kunit_shim_suites[];
extern int kunit_shim_nr_suites;
#define kunit_test_suite(s)							\
	__attribute__((constructor)) static void kunit_shim_reg_##s(void)	\
	{ kunit_shim_suites[kunit_shim_nr_suites++] = &(s); }

static inline void *kunit_kzalloc(struct kunit *test, size_t size, int gfp)
{
	(void)test;
	(void)gfp;
	return calloc(1, size);	/* freed at exit */
}

/*
 * A test-managed resource (kunit_alloc_resource()): its free would run
 * when the test ends; here the memory is freed at exit, as kunit_kzalloc's.
 */
struct kunit_resource {
	void *data;
};
typedef int (*kunit_resource_init_t)(struct kunit_resource *, void *);
typedef void (*kunit_resource_free_t)(struct kunit_resource *);

static inline void *kunit_alloc_resource(struct kunit *test, kunit_resource_init_t init,
					 kunit_resource_free_t free, int gfp, void *context)
{
	struct kunit_resource res = { NULL };

	(void)test;
	(void)free;
	(void)gfp;
	return init(&res, context) ? NULL : res.data;
}

/* A test's own broken premise stops the run, as in the kernel. */
#define BUG_ON(c) do { if (c) abort(); } while (0)

#define kunit_skip(test, ...) do {						\
	(test)->skipped = 1;							\
	fprintf(stderr, "    # SKIP " __VA_ARGS__);				\
	fputc('\n', stderr);							\
	longjmp((test)->bail, 1);						\
} while (0)

#define KUNIT_SHIM_FAIL(test, fmt, ...) do {					\
	(test)->failed = 1;							\
	fprintf(stderr, "    # %s:%d: expectation failed: " fmt "\n",	\
		__FILE__, __LINE__, ##__VA_ARGS__);				\
} while (0)

#define KUNIT_SHIM_CMP(test, a, op, b, stop) do {				\
	long long __a = (long long)(a), __b = (long long)(b);			\
	if (!(__a op __b)) {							\
		KUNIT_SHIM_FAIL(test, "%s " #op " %s (%lld vs %lld)",		\
				#a, #b, __a, __b);				\
		if (stop)							\
			longjmp((test)->bail, 1);				\
	}									\
} while (0)

#define KUNIT_SHIM_STR(test, a, op, b, stop) do {				\
	const char *__a = (a), *__b = (b);					\
	if (!(strcmp(__a, __b) op 0)) {					\
		KUNIT_SHIM_FAIL(test, "%s " #op " %s (\"%s\" vs \"%s\")",	\
				#a, #b, __a, __b);				\
		if (stop)							\
			longjmp((test)->bail, 1);				\
	}									\
} while (0)

#define KUNIT_EXPECT_EQ(t, a, b) KUNIT_SHIM_CMP(t, a, ==, b, 0)
/* the message is the kernel's; the shim prints the values compared */
#define KUNIT_EXPECT_EQ_MSG(t, a, b, ...) KUNIT_SHIM_CMP(t, a, ==, b, 0)
#define KUNIT_EXPECT_GE_MSG(t, a, b, ...) KUNIT_SHIM_CMP(t, a, >=, b, 0)
#define KUNIT_EXPECT_LE_MSG(t, a, b, ...) KUNIT_SHIM_CMP(t, a, <=, b, 0)
#define KUNIT_EXPECT_FALSE_MSG(t, c, ...) KUNIT_SHIM_CMP(t, !!(c), ==, 0, 0)
#define kunit_info(test, fmt, ...) \
	fprintf(stderr, "    # " fmt "\n", ##__VA_ARGS__)
#define KUNIT_EXPECT_NE(t, a, b) KUNIT_SHIM_CMP(t, a, !=, b, 0)
#define KUNIT_EXPECT_LT(t, a, b) KUNIT_SHIM_CMP(t, a, <, b, 0)
#define KUNIT_EXPECT_LE(t, a, b) KUNIT_SHIM_CMP(t, a, <=, b, 0)
#define KUNIT_EXPECT_GT(t, a, b) KUNIT_SHIM_CMP(t, a, >, b, 0)
#define KUNIT_EXPECT_GE(t, a, b) KUNIT_SHIM_CMP(t, a, >=, b, 0)
#define KUNIT_EXPECT_TRUE(t, c) KUNIT_SHIM_CMP(t, !!(c), ==, 1, 0)
#define KUNIT_EXPECT_FALSE(t, c) KUNIT_SHIM_CMP(t, !!(c), ==, 0, 0)
#define KUNIT_EXPECT_STREQ(t, a, b) KUNIT_SHIM_STR(t, a, ==, b, 0)
#define KUNIT_EXPECT_STRNEQ(t, a, b) KUNIT_SHIM_STR(t, a, !=, b, 0)
#define KUNIT_EXPECT_NOT_NULL(t, p) KUNIT_SHIM_CMP(t, (p) != NULL, ==, 1, 0)
#define KUNIT_EXPECT_NULL(t, p) KUNIT_SHIM_CMP(t, (p) == NULL, ==, 1, 0)
#define KUNIT_ASSERT_EQ(t, a, b) KUNIT_SHIM_CMP(t, a, ==, b, 1)
#define KUNIT_ASSERT_NE(t, a, b) KUNIT_SHIM_CMP(t, a, !=, b, 1)
#define KUNIT_ASSERT_GE(t, a, b) KUNIT_SHIM_CMP(t, a, >=, b, 1)
#define KUNIT_ASSERT_GT(t, a, b) KUNIT_SHIM_CMP(t, a, >, b, 1)
#define KUNIT_ASSERT_LT(t, a, b) KUNIT_SHIM_CMP(t, a, <, b, 1)
#define KUNIT_ASSERT_LE(t, a, b) KUNIT_SHIM_CMP(t, a, <=, b, 1)
#define KUNIT_ASSERT_TRUE(t, c) KUNIT_SHIM_CMP(t, !!(c), ==, 1, 1)
#define KUNIT_ASSERT_FALSE(t, c) KUNIT_SHIM_CMP(t, !!(c), ==, 0, 1)
#define KUNIT_ASSERT_NULL(t, p) KUNIT_SHIM_CMP(t, (p) == NULL, ==, 1, 1)
#define KUNIT_FAIL(t, fmt, ...) KUNIT_SHIM_FAIL(t, fmt, ##__VA_ARGS__)
#define KUNIT_ASSERT_NOT_NULL(t, p) KUNIT_SHIM_CMP(t, (p) != NULL, ==, 1, 1)

#endif /* DMR_KUNIT_SHIM_H */
