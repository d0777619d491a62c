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
# Then, in a second VM, tests/vm/guest-flashbench.py: the papers' bm-flash
# grid on the flash model (dm-flashsim: one block-mapped drive, md RAID-5
# over four, one page-mapped drive), bare and remapped, fresh and steady,
# the papers' figures beside ours (flash/flash-summary.txt).
# Shorter runs: DMR_BENCH_* variables (see tests/vm/guest-bench.py) and
# DMR_FLASH_* (tests/vm/guest-flashbench.py), in the environment or as
# arguments, e.g.
#   DMR_BENCH_CONFIGS=raid5-4 DMR_BENCH_CELLS='randwrite-4k-*' DMR_BENCH_FS=0 make bench
# DMR_BENCH_PARTS [main,flash,sim,mapcache,writers,peers,param] chooses the
# parts; param is tests/vm/guest-param-ab.sh (module parameter
# DMR_BENCH_PARAM_AB, gc_crc_carry by default, at 0 and 1 in turn on one
# dm-remap in steady state over a 256 MiB ramdisk: IOPS, CPU per block,
# WAF; DMR_AB_MIB, DMR_AB_PERF; about 6 minutes: param/param-ab.txt);
# peers is tests/vm/guest-peers.py (issue 41 goal 5: bare, dm-linear,
# dm-remap, dm-writeboost and bcache in writeback mode on one ramdisk per
# way, the peers' cache on its last 10%; throughput, CPU per block and
# write amplification, fresh and steady, fsync cells raw and on ext4;
# DMR_PEERS_* knobs; the peers
# from Debian's packages by scripts/peers.sh: peers/peers.txt);
# writers is tests/vm/guest-writers.py (issue 41 goal 6: fio 4K random
# writes, psync 1-16 jobs and libaio QD 1-32, bare against dm-remap with
# and without inline writes, over a plain ramdisk, fresh and steady;
# DMR_WRITERS_* knobs; about 12 minutes: writers/writers.txt); mapcache is
# tests/vm/guest-mapcache.py (table option map_cache at 100, 25 and 5% of
# the map against the whole map; DMR_BENCH_MAPCACHE_ROUNDS, 3; on a loop
# file and on a null_blk media model, and what checkpoints write with and
# without ckpt_incremental: DMR_BENCH_MAPCACHE_KINDS, loop,media,ckpt;
# gc is the fourth kind), about 50 minutes under TCG (mapcache/mapcache.txt).
# Under TCG the default main part takes about 1.5-2 hours (the file
# system matrix on both configurations), the flash part about 2 hours
# (three configurations, five block sizes, three phases, three rounds).
set -uo pipefail
# DMR_BENCH_* settings, from the environment and the arguments, go to the guest
vars=()
while IFS= read -r v; do
	vars+=("$v")
done < <(env | grep -E '^DMR_(BENCH|FLASH|WRITERS|PEERS|AB)_[A-Z_]+=')
for a; do
	[[ $a == DMR_BENCH_*=* || $a == DMR_FLASH_*=* || $a == DMR_WRITERS_*=* ||
	   $a == DMR_PEERS_*=* || $a == DMR_AB_*=* ]] ||
		{ echo "usage: $0 [DMR_BENCH_NAME=VALUE | DMR_FLASH_NAME=VALUE | DMR_WRITERS_NAME=VALUE | DMR_PEERS_NAME=VALUE...]" >&2; exit 2; }
	vars+=("$a")
	export "${a?}"
done
parts=${DMR_BENCH_PARTS:-main,flash,sim,mapcache,writers,peers,param}
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env" || exit 1
make -s module KDIR="$KDIR612" && make -s -C tools || exit 1
out=$cache/results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || exit 1

rc=0
report=$out/report.txt
: >"$report"
if [[ ,$parts, == *,main,* ]]; then
	# guest RAM: 8 ramdisks of DMR_BENCH_RAM_MIB (2 GiB by default), or 8
	# memory-backed null_blk members, besides fio and the page cache
	bash tests/vm/run-vm.sh --mem 6144 --timeout 10800 "$out" -- \
		env "${vars[@]}" /usr/bin/python3 tests/vm/guest-bench.py || rc=$?
	if [[ -s $out/summary.txt ]]; then
		cat "$out/summary.txt" >>"$report"
	else
		echo "==== the VM benchmark failed (run-vm exit $rc): see $out/guest.log" >>"$report"
		rc=1
	fi
fi
if [[ ,$parts, == *,flash,* ]]; then
	# the flash model: 2 x DMR_FLASH_MIB (512) of ramdisks at a time
	mkdir -p "$out/flash" || exit 1
	frc=0
	bash tests/vm/run-vm.sh --mem 6144 --timeout 10800 "$out/flash" -- \
		env "${vars[@]}" /usr/bin/python3 tests/vm/guest-flashbench.py || frc=$?
	echo >>"$report"
	if [[ -s $out/flash/flash-summary.txt ]]; then
		cat "$out/flash/flash-summary.txt" >>"$report"
	fi
	if [[ $frc != 0 ]]; then
		echo "==== the flash benchmark failed (run-vm exit $frc): see $out/flash/guest.log" \
			>>"$report"
		rc=1
	fi
fi
if [[ ,$parts, == *,mapcache,* ]]; then
	mkdir -p "$out/mapcache" || exit 1
	mrc=0
	bash tests/vm/run-vm.sh --mem 12288 --timeout 5400 "$out/mapcache" -- \
		/usr/bin/python3 tests/vm/guest-mapcache.py "${DMR_BENCH_MAPCACHE_ROUNDS:-3}" \
		"${DMR_BENCH_MAPCACHE_KINDS:-loop,media,ckpt}" \
		>"$out/mapcache/mapcache.txt" 2>&1 || mrc=$?
	{
		echo
		sed -n '/^==== map cache/,$p' "$out/mapcache/mapcache.txt"
		[[ $mrc == 0 ]] || echo "==== the map cache benchmark failed (run-vm exit $mrc): see $out/mapcache"
	} >>"$report"
	[[ $mrc == 0 ]] || rc=1
fi
if [[ ,$parts, == *,writers,* ]]; then
	mkdir -p "$out/writers" || exit 1
	wrc=0
	bash tests/vm/run-vm.sh --mem 6144 --timeout 3600 "$out/writers" -- \
		env "${vars[@]}" /usr/bin/python3 tests/vm/guest-writers.py || wrc=$?
	echo >>"$report"
	if [[ -s $out/writers/writers.txt ]]; then
		cat "$out/writers/writers.txt" >>"$report"
	fi
	if [[ $wrc != 0 ]]; then
		echo "==== the writers benchmark failed (run-vm exit $wrc): see $out/writers/guest.log" \
			>>"$report"
		rc=1
	fi
fi
if [[ ,$parts, == *,peers,* ]]; then
	mkdir -p "$out/peers" || exit 1
	prc=0
	if pd=$(bash scripts/peers.sh 2>"$out/peers/prepare.log"); then
		bash tests/vm/run-vm.sh --mem 6144 --timeout 7200 "$out/peers" -- \
			env "${vars[@]}" DMR_PEERS_DIR="$pd" /usr/bin/python3 tests/vm/guest-peers.py ||
			prc=$?
	else
		prc=1
		cat "$out/peers/prepare.log" >>"$out/peers/guest.log"
	fi
	echo >>"$report"
	if [[ -s $out/peers/peers.txt ]]; then
		cat "$out/peers/peers.txt" >>"$report"
	fi
	if [[ $prc != 0 ]]; then
		echo "==== the peers benchmark failed (exit $prc): see $out/peers/guest.log" >>"$report"
		rc=1
	fi
fi
if [[ ,$parts, == *,param,* ]]; then
	# an A/B of a module parameter in steady state (tests/vm/guest-param-ab.sh)
	mkdir -p "$out/param" || exit 1
	arc=0
	bash tests/vm/run-vm.sh --mem 4096 --timeout 1800 "$out/param" -- \
		env "${vars[@]}" bash tests/vm/guest-param-ab.sh \
		"${DMR_BENCH_PARAM_AB:-gc_crc_carry}" 3 8 || arc=$?
	{
		echo
		echo "==== module parameter A/B, steady state (tests/vm/guest-param-ab.sh)"
		cat "$out/param/param-ab.txt" 2>/dev/null
		[[ $arc == 0 ]] || echo "==== the parameter A/B failed (exit $arc): see $out/param/guest.log"
	} >>"$report"
	[[ $arc == 0 ]] || rc=1
fi
if [[ ,$parts, == *,sim,* && -f scripts/sim-bench.sh ]]; then
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
