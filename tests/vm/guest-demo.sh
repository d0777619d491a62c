#!/usr/bin/env bash
# `make demo`, guest side: format a ramdisk, create the target, mkfs, a short
# fio run on the filesystem, and the same fio on the bare ramdisk for scale.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1

RUNTIME=${DMR_DEMO_RUNTIME:-10}
modprobe -a dm-mod libcrc32c
insmod dm-remap/dm-remap.ko
modprobe brd rd_nr=1 rd_size=$((512 * 1024))

say() { printf '\n### %s\n' "$*"; }

# Print each command the way a transcript shows it, then run it.
run() { printf '# %s\n' "$*"; "$@"; }

run tools/remapctl format /dev/ram0
run tools/remapctl create demo /dev/ram0
run dmsetup table demo
run dmsetup status demo
run mkfs.ext4 -q -F /dev/mapper/demo
mkdir -p /tmp/demo-mnt
run mount /dev/mapper/demo /tmp/demo-mnt
run df -h /tmp/demo-mnt

fio_job() {	# fio_job NAME RW FILE-OR-DEV [SIZE]
	fio --name="$1" --rw="$2" --bs=4k --direct=1 --ioengine=psync \
		--numjobs=1 --time_based --runtime="$RUNTIME" --size="${4:-256M}" \
		--filename="$3" --group_reporting --output-format=terse \
		--terse-version=3 | awk -F';' -v n="$1" \
		'{ printf "%-28s read %8d IOPS  write %8d IOPS\n", n, $8, $49 }'
}

say "fio, ${RUNTIME}s per job, 4 KiB direct I/O, 1 thread"
fio_job "ext4-on-remap randwrite" randwrite /tmp/demo-mnt/fio.dat
fio_job "ext4-on-remap randread" randread /tmp/demo-mnt/fio.dat
rm -f /tmp/demo-mnt/fio.dat
run umount /tmp/demo-mnt
run e2fsck -fn /dev/mapper/demo
run dmsetup status demo
run dmsetup message demo 0 checkpoint
run tools/remapctl remove demo
say "for scale: the bare ramdisk"
fio_job "bare ram0 randwrite" randwrite /dev/ram0
fio_job "bare ram0 randread" randread /dev/ram0
rmmod dm-remap
say "demo finished"
