#!/usr/bin/env bash
# `make bench`: tools/compare (bm-flash grid + fio jobs, bare vs dm-remap, in
# steady state: both devices preconditioned with twice their capacity of
# random 4 KiB writes, fresh-device figures beside) on md RAID-5 over 4 and
# over 8 ramdisks and on a single ramdisk, in the VM; then, if it exists,
# scripts/sim-bench.sh (the GC policy in simulation) on the host.
# Results: $DMR_CACHE/results/bench-<date>/ (report.txt: the summary and the
# simulation's table; summary.txt and bench.json; one directory with
# results.json and chart.png per configuration; sim-bench.txt).
# Shorter runs: DMR_BENCH_* variables (see tests/vm/guest-bench.py), in the
# environment or as arguments, e.g.
#   DMR_BENCH_CONFIGS=raid5-4 DMR_BENCH_BS=4K DMR_BENCH_FIO=none make bench
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
bash tests/vm/run-vm.sh --mem 4096 --timeout 10800 "$out" -- \
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
