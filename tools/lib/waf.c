// SPDX-License-Identifier: GPL-2.0-only
/*
 * Analytic write amplification of greedy GC under uniform random writes
 * (Desnoyers, "Analytic modeling of SSD write performance", SYSTOR 2012):
 * with a = physical / logical space, A = 1 / (1 - x) where x is the root
 * of x = exp(-a (1 - x)) below 1.  remap-sim's "analytic" column and
 * remapctl format's prediction are this function.
 */
#include <math.h>

#include "dmr-waf.h"

/**
 * dmr_waf_greedy_uniform() - steady-state write amplification
 * @a: physical over logical space (> 1)
 *
 * Return: A (1 for no live data, when @a is infinite).
 */
double dmr_waf_greedy_uniform(double a)
{
	double x = 0.5, prev;
	int i;

	if (isinf(a))
		return 1;
	for (i = 0; i < 1000000; i++) {
		prev = x;
		x = exp(-a * (1 - x));
		if (fabs(x - prev) < 1e-13)
			break;
	}
	return 1 / (1 - x);
}

/**
 * dmr_waf_trimmed() - the same on a device formatted with @overprovision
 * percent spare when a fraction @trimmed of its logical space holds no
 * data (never written, or discarded: TRIM, fstrim, mount -o discard)
 * @overprovision: percent of the space kept spare at format
 * @trimmed: 0 (all written) to below 1
 *
 * The live data is (1 - @trimmed) of the logical space: the effective
 * spare grows with every block the file system discards.
 */
double dmr_waf_trimmed(unsigned int overprovision, double trimmed)
{
	double live = (100.0 - overprovision) / 100 * (1 - trimmed);

	return live > 0 ? dmr_waf_greedy_uniform(1 / live) : 1;
}
