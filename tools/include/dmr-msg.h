/* SPDX-License-Identifier: GPL-2.0-only */
/* Error exits shared by remapctl and remap-sim (tools/lib/msg.c). */
#ifndef DMR_MSG_H
#define DMR_MSG_H

/* The program's name, for messages: each tool defines it. */
extern const char *dmr_prog;

void __attribute__((noreturn, format(printf, 2, 3)))
dmr_exit_msg(int code, const char *fmt, ...);

/* Bad usage: the message and a pointer to --help, exit status 2. */
#define usage_error(...)	dmr_exit_msg(2, __VA_ARGS__)
/* Failure: the message, exit status 1. */
#define die(...)		dmr_exit_msg(1, __VA_ARGS__)

#endif /* DMR_MSG_H */
