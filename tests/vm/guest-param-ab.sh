#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of an A/B of a module parameter in steady state (make bench's
# part `param`, or by hand):
#
#   tests/vm/run-vm.sh --mem 4096 OUTDIR -- bash tests/vm/guest-param-ab.sh PARAM [ROUNDS] [SECONDS]
#
# One brd ramdisk of DMR_AB_MIB (256) MiB, dm-linear over all of it
# ("under", whose write count is the device's), dm-remap formatted on that
# with its defaults (10% spare) and created; written sequentially whole,
# then twice its capacity of random 4 KiB writes (libaio QD32): GC is at
# work from then on.  Per round (3), module parameter PARAM set to 0, then
# to 1, each time fio writes 4 KiB blocks at random over the whole device
# (one job, psync, SECONDS, 8 by default), and the guest's /proc/stat and
# under's sectors written are read around it.  One line per round and
# value:
#   round R PARAM V iops N blocks N busy_ticks N idle_ticks N
#       dev_sectors N us_per_block N waf N
# us_per_block: busy CPU time (all CPUs, fio's included) per 4 KiB block
# fio wrote; waf: sectors written to under over fio's.  With DMR_AB_PERF=1,
# one more run per value under perf (cpu-clock, 999 Hz, call graphs): the
# top symbols and the callers of the CRC32C code in perf-V-sym.txt and
# perf-V-callers.txt.  At the end the parameter is set back to 1, the
# device is removed and `remapctl check` reads the log back (its data
# checksums included): its line and exit status close the output.
# Results: $DMR_OUT/param-ab.txt (printed too).
set -eu
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
param=${1:?usage: guest-param-ab.sh PARAM [ROUNDS] [SECONDS]}
rounds=${2:-3}
secs=${3:-8}
mib=${DMR_AB_MIB:-256}
cd "$(dirname "$0")/../.."
out=${DMR_OUT:?}
rep=$out/param-ab.txt
: >"$rep"
sysp=/sys/module/dm_remap/parameters/$param
modprobe -a dm-mod libcrc32c crc32c-intel
modprobe brd rd_nr=1 rd_size=$((mib * 1024)) max_part=0
grep -q "^dm_remap " /proc/modules || insmod dm-remap/dm-remap.ko
[ -w "$sysp" ] || { echo "guest-param-ab: no module parameter $param" >&2; exit 1; }
dmsetup create under --table "0 $(blockdev --getsz /dev/ram0) linear /dev/ram0 0"
tools/remapctl format --force /dev/mapper/under >"$out/format.txt"
tools/remapctl create ab /dev/mapper/under >/dev/null
dev=/dev/mapper/ab
under=$(basename "$(readlink -f /dev/mapper/under)")
size=$(($(blockdev --getsize64 $dev) >> 20))
fio --name=fill --filename=$dev --rw=write --bs=1M --direct=1 --ioengine=libaio \
	--iodepth=4 --size=${size}M --output-format=terse >/dev/null
fio --name=pre --filename=$dev --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
	--iodepth=32 --size=${size}M --io_size=$((size * 2))M --randrepeat=0 \
	--output-format=terse >/dev/null
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }
written() { awk '{print $7}' "/sys/block/$under/stat"; }
job() {	# job JSON: fio's 4 KiB random writes over the device
	fio --name=w --filename=$dev --rw=randwrite --bs=4k --direct=1 --ioengine=psync \
		--size=${size}M --time_based --runtime="$secs" --randrepeat=0 \
		--output-format=json >"$1"
}
for round in $(seq "$rounds"); do
	for v in 0 1; do
		echo "$v" >"$sysp"
		w0=$(written)
		read -r b0 i0 < <(busy)
		job "$out/fio-$round-$v.json"
		read -r b1 i1 < <(busy)
		w1=$(written)
		python3 - "$out/fio-$round-$v.json" "$round" "$param" "$v" "$b0" "$b1" "$i0" \
			"$i1" "$w0" "$w1" <<'EOF' | tee -a "$rep"
import json, os, sys
f, rnd, param, v = sys.argv[1:5]
b0, b1, i0, i1, w0, w1 = map(int, sys.argv[5:])
j = json.load(open(f))["jobs"][0]["write"]
n = max(1, j["total_ios"])
hz = os.sysconf("SC_CLK_TCK")
print(f"round {rnd} {param} {v} iops {j['iops']:.0f} blocks {j['total_ios']} "
      f"busy_ticks {b1 - b0} idle_ticks {i1 - i0} dev_sectors {w1 - w0} "
      f"us_per_block {(b1 - b0) * 1e6 / hz / n:.0f} waf {(w1 - w0) / 8 / n:.2f}")
EOF
	done
done
if [ "${DMR_AB_PERF:-0}" = 1 ]; then
	echo 0 >/proc/sys/kernel/kptr_restrict	# the guest's, for symbol names
	for v in 1 0; do
		echo "$v" >"$sysp"
		perf record -o /dev/shm/ab-$v.data -a -g -e cpu-clock -F 999 -- \
			bash -c "$(declare -f job); dev=$dev size=$size secs=$secs job $out/perf-fio-$v.json" \
			>/dev/null 2>&1
		perf report -i /dev/shm/ab-$v.data --stdio --no-children --sort sym -n -g none \
			2>/dev/null | grep -v '^#' | grep -v '^$' | head -25 >"$out/perf-$v-sym.txt"
		perf report -i /dev/shm/ab-$v.data --stdio --no-children --sort sym \
			-g caller,0.5,callee --percent-limit 3 --symbol-filter=crc \
			2>/dev/null >"$out/perf-$v-callers.txt"
		rm -f /dev/shm/ab-$v.data
	done
fi
echo 1 >"$sysp"
dmsetup status ab >>"$rep"
tools/remapctl remove ab >/dev/null
rc=0
tools/remapctl check /dev/mapper/under >"$out/check.txt" 2>&1 || rc=$?
echo "$(tail -1 "$out/check.txt"); check exit $rc" | tee -a "$rep"
dmsetup remove under
exit $rc
