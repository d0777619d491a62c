// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host runner for dm-remap's KUnit suites of pure code.  Compiles
 * dm-remap/dmr-test.c, dmr-log-test.c, dmr-writer-test.c and dmr-gc-test.c
 * unchanged, in this one file, against tools/include/kunit/test.h and runs
 * every case (each parameter as its own test), closing with
 * "N passed, N failed".
 */
#include <kunit/test.h>

struct kunit_suite *kunit_shim_suites[16];
int kunit_shim_nr_suites;

#include "../../dm-remap/dmr-test.c"
#include "../../dm-remap/dmr-log-test.c"
#include "../../dm-remap/dmr-writer-test.c"
#include "../../dm-remap/dmr-gc-test.c"

static int run_one(struct kunit_case *c, const void *param, const char *desc,
		   int *passed, int *failed, int *skipped)
{
	struct kunit t = { .name = c->name, .param_value = param };

	if (!setjmp(t.bail))
		c->run_case(&t);
	if (t.skipped) {
		(*skipped)++;
		printf("ok - %s%s%s # SKIP\n", c->name, desc ? " " : "", desc ? desc : "");
	} else if (t.failed) {
		(*failed)++;
		printf("not ok - %s%s%s\n", c->name, desc ? " " : "", desc ? desc : "");
	} else {
		(*passed)++;
		printf("ok - %s%s%s\n", c->name, desc ? " " : "", desc ? desc : "");
	}
	return 0;
}

int main(void)
{
	int passed = 0, failed = 0, skipped = 0, s;

	setvbuf(stdout, NULL, _IONBF, 0);	/* keep order with stderr */

	for (s = 0; s < kunit_shim_nr_suites; s++) {
		struct kunit_case *c;

		printf("# suite %s\n", kunit_shim_suites[s]->name);
		for (c = kunit_shim_suites[s]->test_cases; c->run_case; c++) {
			if (c->generate_params) {
				char desc[KUNIT_PARAM_DESC_SIZE];
				const void *p = NULL;

				desc[0] = '\0';
				while ((p = c->generate_params(p, desc))) {
					run_one(c, p, desc, &passed, &failed, &skipped);
					desc[0] = '\0';
				}
			} else {
				run_one(c, NULL, NULL, &passed, &failed, &skipped);
			}
		}
	}
	if (skipped)
		printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	else
		printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
