// SPDX-License-Identifier: GPL-2.0-only
/*
 * aio-pair: submit two O_DIRECT writes to a block device in one
 * io_submit() call, so that both reach the device below (a bio-based dm
 * target maps them in the submitting task, in order) before either is
 * handled, and print each one's result.  A test tool (the VM test of
 * issue 24 item 1 needs a FUA write queued just before a large write).
 *
 *   aio-pair DEV OFFSET1 LEN1 dsync|plain OFFSET2 LEN2 dsync|plain
 *
 * Offsets and lengths in bytes (multiples of 4096).  The data is the byte
 * 0x5a.  Output: "write 1: RES" and "write 2: RES" (bytes written or a
 * negative errno).  Exit 0 if both were submitted and completed (whatever
 * their results), 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int parse(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end || *v % 4096;
}

int main(int argc, char **argv)
{
	struct iocb cb[2], *cbs[2] = { &cb[0], &cb[1] };
	struct io_event ev[2];
	unsigned long long off[2], len[2];
	aio_context_t ctx = 0;
	void *buf[2];
	int fd, i, got = 0;

	if (argc != 8 || parse(argv[2], &off[0]) || parse(argv[3], &len[0]) ||
	    parse(argv[5], &off[1]) || parse(argv[6], &len[1])) {
		fprintf(stderr, "usage: aio-pair DEV OFF1 LEN1 dsync|plain OFF2 LEN2 dsync|plain\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_DIRECT);
	if (fd < 0 || syscall(SYS_io_setup, 2, &ctx)) {
		perror(argv[1]);
		return 1;
	}
	memset(cb, 0, sizeof(cb));
	for (i = 0; i < 2; i++) {
		if (posix_memalign(&buf[i], 4096, len[i]))
			return 1;
		memset(buf[i], 0x5a, len[i]);
		cb[i].aio_lio_opcode = IOCB_CMD_PWRITE;
		cb[i].aio_fildes = fd;
		cb[i].aio_buf = (unsigned long)buf[i];
		cb[i].aio_nbytes = len[i];
		cb[i].aio_offset = off[i];
		cb[i].aio_data = i + 1;
		cb[i].aio_rw_flags = strcmp(argv[4 + 3 * i], "dsync") ? 0 : RWF_DSYNC;
	}
	if (syscall(SYS_io_submit, ctx, 2, cbs) != 2) {
		perror("io_submit");
		return 1;
	}
	while (got < 2) {
		long n = syscall(SYS_io_getevents, ctx, 1, 2 - got, ev, NULL);

		if (n < 0) {
			perror("io_getevents");
			return 1;
		}
		for (i = 0; i < n; i++)
			printf("write %llu: %lld\n", (unsigned long long)ev[i].data,
			       (long long)ev[i].res);
		got += n;
	}
	return 0;
}
