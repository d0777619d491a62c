#!/usr/bin/env bash
# `make bench`: tests/vm/guest-bench.py in the VM, then, if it exists,
# scripts/sim-bench.sh (the GC policy in simulation) on the host.
# In the VM: bare vs dm-linear vs dm-remap on two identical md RAID-5
# arrays per configuration (raid5-4: over brd ramdisks, the CPU cost;
# media: over null_blk devices with a per-command media model), dm-remap
# in steady state; every cell run on the three devices in turn, in
# DMR_BENCH_RUNS rounds (3), figures the median [min-max]; raw-device
# cells, mixed read/write, ext4 and XFS jobs, the goals table.
# Results: $DMR_CACHE/results/bench-<date>/ (report.txt: the summary and the
# simulation's table; summary.txt and bench.json; guest.log, dmesg.txt;
# sim-bench.txt).
# Shorter runs: DMR_BENCH_* variables (see tests/vm/guest-bench.py), in the
# environment or as arguments, e.g.
#   DMR_BENCH_CONFIGS=raid5-4 DMR_BENCH_CELLS='randwrite-4k-*' DMR_BENCH_FS=0 make bench
# The default run takes about 40 minutes in the TCG VM.
set -uo pipefail
# DMR_BENCH_* settings, from the environment and the arguments, go to the guest
vars=()
while IFS= read -r v; do
	vars+=("$v")
done < <(env | grep -E '^DMR_BENCH_[A-Z_]+=')
for a; do
	[[ $a == DMR_BENCH_*=* ]] || { echo "usage: $0 [DMR_BENCH_NAME=VALUE...]" >&2; exit 2; }
	vars+=("$a")
done
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env" || exit 1
make -s module KDIR="$KDIR612" && make -s -C tools || exit 1
out=$cache/results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || exit 1

rc=0
# guest RAM: 8 ramdisks of DMR_BENCH_RAM_MIB (2 GiB by default), or 8
# memory-backed null_blk members, besides fio and the page cache
bash tests/vm/run-vm.sh --mem 6144 --timeout 10800 "$out" -- \
	env "${vars[@]}" /usr/bin/python3 tests/vm/guest-bench.py || rc=$?

report=$out/report.txt
if [[ -s $out/summary.txt ]]; then
	cat "$out/summary.txt" >"$report"
else
	echo "==== the VM benchmark failed (run-vm exit $rc): see $out/guest.log" >"$report"
fi
if [[ -f scripts/sim-bench.sh ]]; then
	echo "==== scripts/sim-bench.sh"
	DMR_OUT=$out bash scripts/sim-bench.sh 2>&1 | tee "$out/sim-bench.txt"
	src=${PIPESTATUS[0]}
	{
		echo
		echo "==== simulation (scripts/sim-bench.sh)"
		cat "$out/sim-bench.txt"
		[[ $src == 0 ]] || echo "scripts/sim-bench.sh failed (exit $src)"
	} >>"$report"
	[[ $src == 0 ]] || rc=1
fi
echo
echo "==== bench report ($report)"
cat "$report"
echo "bench: results in $out"
exit "$rc"
