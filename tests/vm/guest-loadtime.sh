#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of an A/B of two builds of the module: how long a table load
# takes on a large, sparse device (the same tools):
#
#   tests/vm/run-vm.sh --mem 6144 OUTDIR -- bash tests/vm/guest-loadtime.sh A.ko B.ko [GIB] [ROUNDS]
#
# A sparse image of GIB GiB (256 by default) in the guest's /tmp, on a
# loop device, formatted with 4 MiB segments; with build A, 64 blocks
# written at random over the whole logical space and a clean remove (two
# checkpoints: both slots hold the map).  Then per round (3 by default),
# each build in turn: insmod, `dmsetup create` timed (the load: both
# slot headers, the CRC table, the map blocks, the segment table, replay),
# remove, rmmod.  One line per build and round:
#   round R LABEL load_ms MS map_blocks N nonzero_map_blocks K
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
a=${1:?usage: guest-loadtime.sh A.ko B.ko [GIB] [ROUNDS]}
b=${2:?usage: guest-loadtime.sh A.ko B.ko [GIB] [ROUNDS]}
gib=${3:-256}
rounds=${4:-3}
cd "$(dirname "$0")/../.."
modprobe -a dm-mod libcrc32c loop || exit 1
! grep -q "^dm_remap " /proc/modules || { echo "guest-loadtime: dm-remap already loaded" >&2; exit 1; }
img=$(mktemp /tmp/dmr-loadtime.XXXXXX)
trap 'dmsetup remove lt 2>/dev/null; losetup -d "$dev" 2>/dev/null; rm -f "$img"' EXIT
truncate -s "${gib}G" "$img"
dev=$(losetup -f --show "$img") || exit 1
tools/remapctl format --force --segment-size 4M "$dev" > /dev/null || exit 1
n=$(tools/remapctl dump "$dev" | sed -n 's/^logical_sectors=//p')
map_blocks=$(( (n / 8 + 1023) / 1024 ))
insmod "$a" || exit 1
dmsetup create lt --table "0 $n remap $dev" || exit 1
for i in $(seq 64); do
	lba=$(python3 -c "import random; random.seed($i); print(random.randrange($n // 8))")
	dd if=/dev/urandom of=/dev/mapper/lt bs=4k seek="$lba" count=1 oflag=direct status=none
done
dmsetup message lt 0 checkpoint || exit 1
dmsetup remove lt || exit 1
rmmod dm_remap || exit 1
nonzero=64	# at most: one map block per block written
for round in $(seq "$rounds"); do
	for ko in "$a" "$b"; do
		insmod "$ko" || exit 1
		sync; echo 3 > /proc/sys/vm/drop_caches
		t0=$(date +%s%N)
		dmsetup create lt --table "0 $n remap $dev" || exit 1
		t1=$(date +%s%N)
		echo "round $round $(basename "$ko" .ko) load_ms $(( (t1 - t0) / 1000000 ))" \
			"map_blocks $map_blocks nonzero_map_blocks_at_most $nonzero"
		dmsetup remove lt || exit 1
		rmmod dm_remap || exit 1
	done
done
