/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Analytic write amplification, for the tools (floating point: never in
 * the module).  tools/lib/waf.c.
 */
#ifndef DMR_WAF_H
#define DMR_WAF_H

double dmr_waf_greedy_uniform(double a);
double dmr_waf_trimmed(unsigned int overprovision, double trimmed);

#endif /* DMR_WAF_H */
