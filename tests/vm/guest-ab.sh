#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of an A/B of two builds of the module (the same tools):
#
#   tests/vm/run-vm.sh --mem 4096 OUTDIR -- bash tests/vm/guest-ab.sh A.ko B.ko [ROUNDS]
#
# Per round (3 by default), each build in turn: insmod, remapctl format
# and create over a 1 GiB brd ramdisk, 512 MiB written sequentially, then
# 4 KiB random writes and random reads over them, one thread, psync, 10 s
# each (fio); status field 13 (map_memory); remove, rmmod.  Then the bare
# ramdisk, the same two jobs.  One line per build and round:
#   round R LABEL randwrite IOPS randread IOPS [map_memory BYTES]
# Under TCG the ratios to bare measure the emulator; the two builds'
# figures, interleaved, compare their CPU cost per request.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
a=${1:?usage: guest-ab.sh A.ko B.ko [ROUNDS]}
b=${2:?usage: guest-ab.sh A.ko B.ko [ROUNDS]}
rounds=${3:-3}
cd "$(dirname "$0")/../.."
modprobe brd rd_nr=1 rd_size=1048576 || exit 1
modprobe -a dm-mod libcrc32c || exit 1
! grep -q "^dm_remap " /proc/modules || { echo "guest-ab: dm-remap already loaded" >&2; exit 1; }
job() {	# job DEV RW: IOPS
	local dir=write
	[ "$2" = randread ] && dir=read
	fio --name=j --filename="$1" --direct=1 --rw="$2" --bs=4k --ioengine=psync \
		--size=512M --time_based --runtime=10 --randrepeat=0 --output-format=json |
		python3 -c "import json, sys; print(round(json.load(sys.stdin)['jobs'][0]['$dir']['iops']))"
}
for round in $(seq "$rounds"); do
	for ko in "$a" "$b"; do
		insmod "$ko" || exit 1
		tools/remapctl format --force /dev/ram0 > /dev/null || exit 1
		tools/remapctl create ab /dev/ram0 > /dev/null || exit 1
		dd if=/dev/zero of=/dev/mapper/ab bs=1M count=512 oflag=direct status=none
		w=$(job /dev/mapper/ab randwrite)
		r=$(job /dev/mapper/ab randread)
		mem=$(dmsetup status ab | awk '{print $16}')
		echo "round $round $(basename "$ko" .ko) randwrite $w randread $r map_memory $mem"
		tools/remapctl remove ab > /dev/null || exit 1
		rmmod dm_remap || exit 1
	done
	echo "round $round bare randwrite $(job /dev/ram0 randwrite) randread $(job /dev/ram0 randread)"
done
