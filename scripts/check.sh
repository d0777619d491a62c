#!/usr/bin/env bash
# dm-remap test suite: `make check` (the README's test command).
#
# Stages (all by default but kunit, or name some: scripts/check.sh build61 kunit):
#   build612  module against Debian's 6.12 headers (-Werror), for the VM;
#             and tests/flashsim/dm-flashsim.ko, in the tree too
#   build61   the same against Debian's 6.1 headers, in copies
#   tools     userspace tools, and the KUnit suite of the pure code on the host
#   host      pytest: remapctl, bm-flash, compare (arguments, refusals, output)
#   dkms      `dkms build` of the tracked tree for the 6.12 and 6.1 kernels
#   style     checkpatch.pl --strict and sparse (make C=2) on the kernel sources
#   fuzz      libFuzzer targets over the shared codec and table parser,
#             DMR_FUZZ_SECONDS (default 10) each
#   kunit     KUnit under UML (kunit.py, cached build dir; a cold cache
#             builds the UML kernel first, about 28 minutes of one core).
#             Not a default stage: make check runs the same KUnit suite in
#             vmdebug's debug kernel (the kunit count), under KASAN,
#             lockdep and kmemleak, for no kernel build of its own
#   kdebug    vmdebug's debug kernel (scripts/debug-kernel.sh, cached: a
#             first build takes about 11 minutes of both cores, 36 of one)
#             (kdebug, host, dkms, style and fuzz run beside the VM
#             stages at SCHED_IDLE when vm runs too: the side lane below)
#   vm        VM integration suite (virtme-ng, Debian's 6.12 kernel); with
#             the side lane, in two shards (vm1, vm2: the VM pool below)
#   vmdebug   the fault, load, suspend and power-cut tests of that suite again,
#             on a 6.12 kernel with KASAN, lockdep, kmemleak and failslab
#             (the kdebug stage's), which Debian's kernel does not have;
#             first, dm-remap's KUnit suite as a module in that kernel
#             (counted as kunit)
#   deb       make deb's packages (scripts/deb.sh: build, lintian; in the
#             side lane as the debpkg stage when vm runs too), then in a
#             VM with /usr, /etc and /var as overlays in guest RAM: the
#             README's quick start as it stands (apt-get install of the
#             packages, remapctl on an md RAID-5 of ramdisks), dkms
#             status, dpkg -r/-P (tests/vm/guest-deb.sh); nothing is
#             installed on the host
#
# Each stage prints its own runner's summary and a result line; the last
# line is "check: N passed, N failed" over all tests the stages ran (a
# build or style stage counts as one test).  Exit status is non-zero if
# anything failed.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
mkdir -p "$cache"
# shellcheck disable=SC1091
. "$cache/kernels.env" || { echo "check: run 'make test-deps' first" >&2; exit 2; }
# DMR_CHECK_OUT and DMR_CHECK_COUNTS are set by this script for the side
# lane (below), which is this script run again on some stages.
out=${DMR_CHECK_OUT:-$cache/results/check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

all_stages=(build612 build61 tools kdebug host dkms style fuzz kunit vm vmdebug deb)
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build612 build61 tools kdebug host dkms style fuzz vm vmdebug deb)

total_pass=0
total_fail=0
summary=()
lane_pid=

count() {	# count PASSED FAILED STAGE-NAME STATUS
	total_pass=$((total_pass + $1))
	total_fail=$((total_fail + $2))
	summary+=("$(printf '%-9s %-4s %s passed, %s failed' "$3" "$4" "$1" "$2")")
	[ -z "${DMR_CHECK_COUNTS:-}" ] || echo "$1 $2 $3 $4" >> "$DMR_CHECK_COUNTS"
}

# The side lane.  The vm stage's TCG guest gets one vCPU when the lane
# runs (DMR_VM_CPUS): its tests ran as fast on one as on two (40 tests of
# test_target.py: 58.7 s and 61.1 s), and the other core builds and runs
# the host-only stages beside it at the lowest priority, with one job
# each: vmdebug's debug kernel (kdebug), the UML KUnit kernel and its run,
# host, dkms, style, fuzz (on a cold cache about 40 minutes of one core,
# less than the vm stage takes).  Beside a guest of two vCPUs the kernels
# made every VM test about three times slower and the stage ran out of
# its timeout (issue 40); beside one, a -j1 build at SCHED_IDLE makes
# them about a fifth slower (test_target.py 71.4 s), what the lane's
# pytest runs cost before.  None of the lane's stages writes what the
# guest reads: the tree's module and tools are built before the lane
# starts, and the lane builds in copies and in the cache (the kernels'
# build directories, sparse.sh, dkms, fuzz, kunit's copy in the kernel
# source tree, which the debug kernel's build reads but does not build).
# DMR_CHECK_SERIAL=1 runs every stage in order instead.
lane=()
pool=()
if [ -z "${DMR_CHECK_SERIAL:-}" ] && [ -z "${DMR_CHECK_COUNTS:-}" ] &&
   [[ " ${stages[*]} " == *" vm "* ]]; then
	keep=()
	for s in "${stages[@]}"; do
		case $s in
		kdebug|host|dkms|style|fuzz|kunit) lane+=("$s") ;;
		*) keep+=("$s") ;;
		esac
	done
	stages=("${keep[@]}")
	# the deb stage's packages are built (about a minute) in the lane
	# first; the deb stage then only boots its VM
	[[ " ${stages[*]} " != *" deb "* ]] || lane=(debpkg "${lane[@]}")
	# the VM stages run in the VM pool (below), after the stages left
	pool=()
	keep=()
	for s in "${stages[@]}"; do
		case $s in
		vm) pool+=(vm1 vm2) ;;
		vmdebug|deb) pool+=("$s") ;;
		*) keep+=("$s") ;;
		esac
	done
	stages=("${keep[@]}")
fi

start_lane() {
	: > "$out/lane.counts"
	rm -f "$out/debpkg.done" "$out/kdebug.done"
	(
		# SCHED_IDLE, not only nice 19: a runnable guest vCPU
		# always preempts the lane at once; one job per build, on the
		# core the guest leaves
		[ ${#lane[@]} -eq 0 ] ||
			DMR_CHECK_OUT=$out DMR_CHECK_COUNTS=$out/lane.counts \
			DMR_KBUILD_JOBS=${DMR_KBUILD_JOBS:-1} DMR_KUNIT_JOBS=${DMR_KUNIT_JOBS:-1} \
				chrt --idle 0 nice -n 19 bash scripts/check.sh "${lane[@]}"
	) > "$out/lane.log" 2>&1 &
	lane_pid=$!
}

# A guest's vCPUs: one while the side lane still runs (the other core is
# the lane's), two after.  Not vmdebug's: on the KASAN kernel its tests
# need both (638 s on two vCPUs, about 1000 s on one in the cold run of
# 1485311, whose lane ended 5 minutes into it).
guest_cpus() {
	if [ -n "${DMR_GUEST_CPUS:-}" ]; then	# the VM pool's choice
		echo "$DMR_GUEST_CPUS"
	elif [ -n "$lane_pid" ] && kill -0 "$lane_pid" 2>/dev/null; then
		echo "${DMR_VM_CPUS:-1}"
	else
		echo 2
	fi
}

# A stage run again as this script in the background (the lane's way),
# its counts left in $out/NAME.counts: pool_counts NAME then adds them
pool_counts() {	# pool_counts NAME
	local p f n st seen=0
	while read -r p f n st; do
		count "$p" "$f" "$n" "$st"
		seen=1
	done < "$out/$1.counts"
	[ $seen = 1 ] || count 0 1 "$1" FAIL
}

# The VM pool.  The VM stages run as jobs, one per core at a time (two
# here; DMR_POOL_SLOTS), the side lane taking one slot while it runs:
# the vm stage in two shards (vm1, vm2: the suite's files, split by the
# time their tests took, VM_SHARD1 below), vmdebug once the lane's kdebug
# stage has built its kernel, deb once the lane's debpkg has built the
# packages.  A job is this script run again on its stage (the lane's
# way), its guest of one vCPU, vmdebug's of two (vmdebug waits until it can run alone, on two: its KASAN kernel took
# 2281 s on one vCPU beside another guest, 974 s on two alone, and
# test_checkpoint_message_against_a_suspend failed on one, in the
# fresh-clone run of 96781ea).  Two guests of one vCPU each ran side by
# side as fast as one alone (vm1's 103 tests 1466 s beside vmdebug,
# 1564 s in CI's run of 75baac5 beside the lane); beside a guest, the
# lane's builds run at SCHED_IDLE as before.  With a warm cache the lane
# ends in about 15 minutes, not the vm stage's 53, and the second core
# went idle for the rest of that stage (the landed run of 75baac5: 82
# minutes); the jobs now fill it.  The order a free slot takes them in:
# vm1, vm2, deb, then vmdebug alone.  This script holds the VM lock for
# the whole pool (its jobs run with DMR_VM_LOCK=none).
run_pool() {
	local t0 j cpus free busy waiting ready
	local -A pid=()
	local left=("$@")
	t0=$(date +%s)
	exec 8>>"${DMR_VM_LOCK:-/tmp/dm-remap-vm.lock}"
	if ! flock -n 8; then
		echo "pool: waiting for another VM (lock ${DMR_VM_LOCK:-/tmp/dm-remap-vm.lock})"
		flock 8
	fi
	while [ ${#left[@]} -gt 0 ] || [ ${#pid[@]} -gt 0 ]; do
		for j in "${!pid[@]}"; do	# jobs done: their output, their counts
			kill -0 "${pid[$j]}" 2>/dev/null && continue
			wait "${pid[$j]}"
			unset "pid[$j]"
			echo "== pool: $j ended at $(( $(date +%s) - t0 ))s"
			cat "$out/$j.out"
			pool_counts "$j"
		done
		busy=${#pid[@]}
		if [ -n "$lane_pid" ] && kill -0 "$lane_pid" 2>/dev/null; then
			busy=$((busy + 1))
		fi
		free=$(( ${DMR_POOL_SLOTS:-$(nproc)} - busy ))
		waiting=()
		for j in "${left[@]}"; do
			ready=0
			case $j in
			vmdebug)	# alone, on two vCPUs (below)
				pool_wait kdebug vmdebug kunit || ready=$?
				[ "$ready" != 0 ] || [ "$busy" -eq 0 ] || ready=1 ;;
			deb) pool_wait debpkg deb || ready=$? ;;
			esac
			if [ "$ready" = 2 ]; then	# failed: counted, dropped
				continue
			elif [ "$ready" = 0 ] && [ "$free" -gt 0 ]; then
				cpus=1
				[ "$j" != vmdebug ] || cpus=2	# (it starts alone)
				pool_start "$j" "$cpus" "$t0"
				pid[$j]=$!
				free=$((free - 1))
				busy=$((busy + 1))
			else
				waiting+=("$j")
			fi
		done
		left=("${waiting[@]}")
		[ ${#left[@]} -eq 0 ] && [ ${#pid[@]} -eq 0 ] || sleep 5
	done
	flock -u 8
	exec 8>&-
}

# pool_wait STAGE JOB [COUNT...]: may JOB start, after the lane's STAGE?
# 0 yes, 1 not yet, 2 never (STAGE failed or the lane ended without it:
# JOB and the COUNTs are counted failed)
pool_wait() {
	local stage=$1 job=$2
	shift 2
	[[ " ${lane[*]} " == *" $stage "* ]] || return 0
	if [ -e "$out/$stage.done" ]; then
		[ "$(cat "$out/$stage.done")" != ok ] || return 0
		echo "$job: the lane's $stage stage failed ($out/lane.log)"
	elif [ -n "$lane_pid" ] && kill -0 "$lane_pid" 2>/dev/null; then
		return 1
	else
		echo "$job: the lane ended without its $stage stage ($out/lane.log)"
	fi
	count 0 1 "$job" FAIL
	for job in "$@"; do count 0 1 "$job" FAIL; done
	return 2
}

pool_start() {	# pool_start JOB CPUS T0
	local job=$1 stage=$1 shard=
	case $job in
	vm1|vm2) stage=vm shard=${job#vm} ;;
	esac
	: > "$out/$job.counts"
	echo "== pool: $job started at $(( $(date +%s) - $3 ))s, a guest of $2 vCPU"
	DMR_CHECK_OUT=$out DMR_CHECK_COUNTS=$out/$job.counts DMR_VM_LOCK=none \
		DMR_GUEST_CPUS=$2 DMR_VM_SHARD=$shard DMR_VMDEBUG_TOO=$vmdebug_too \
		bash scripts/check.sh "$stage" > "$out/$job.out" 2>&1 &
}

# the lane's output and its counts, once it is done
finish_lane() {
	[ -n "$lane_pid" ] || return 0
	wait "$lane_pid"
	lane_pid=
	echo "== side lane (${lane[*]}), beside the vm stage: $out/lane.log"
	cat "$out/lane.log"
	pool_counts lane
}

stage_build() {	# stage_build NAME KDIR DIR
	local name=$1 kdir=$2 dir=$3
	echo "== $name: module against $kdir"
	make -s -C "$kdir" M="$dir" CONFIG_DM_REMAP=m modules > "$out/$name.log" 2>&1
	build_result "$name" $? "$dir/dm-remap/dm-remap.ko"
}

# A module build's verdict: the make status, no warning or error in its
# log, and the module there; the log is shown when it failed.
build_result() {	# build_result NAME MAKE_STATUS KO
	local name=$1 rc=$2 ko=$3
	if [ "$rc" -ne 0 ] || grep -qE 'warning|error' "$out/$name.log" ||
	   [ ! -f "$ko" ]; then
		cat "$out/$name.log"
		echo "$name: FAILED"
		count 0 1 "$name" FAIL; return
	fi
	echo "$name: ok ($(modinfo -F vermagic "$ko"))"
	count 1 0 "$name" ok
}

# tests/flashsim/dm-flashsim.ko, the test-only flash timing target the
# VM suite loads (test_flashsim.py): in the tree for 6.12 (the VM's), in a
# copy of its own directory for 6.1
stage_build_flashsim() {	# stage_build_flashsim NAME KDIR [in-tree]
	local name=$1-flashsim kdir=$2 dir=$cache/$1-flashsim
	if [ "${3:-}" = in-tree ]; then
		dir=$repo/tests/flashsim
	else
		rm -rf "$dir" && mkdir -p "$dir"
		cp tests/flashsim/Kbuild tests/flashsim/dm-flashsim-target.c \
			tests/flashsim/flashsim-model.[ch] "$dir/"
	fi
	make -s -C "$kdir" M="$dir" modules > "$out/$name.log" 2>&1
	build_result "$name" $? "$dir/dm-flashsim.ko"
}

# pytest / kunit / test-pure closing lines -> counts
parse_counts() {	# parse_counts LOGFILE -> "PASSED FAILED"
	python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
p = f = 0
m = [x for x in re.findall(r"^=* ?(.*) in [\d.]+s(?: \(.*\))? ?=*$", text, re.M)
     if re.search(r"\d+ (passed|failed|error)", x)]                  # pytest
if m:
    s = m[-1]
    p = sum(int(x) for x in re.findall(r"(\d+) passed", s))
    f = sum(int(x) for x in re.findall(r"(\d+) (?:failed|error)", s))
else:
    m = re.findall(r"Ran (\d+) tests: passed: (\d+)", text)  # kunit.py
    if m:
        # a skipped KUnit case checked nothing: it counts as failed
        p, f = int(m[-1][1]), int(m[-1][0]) - int(m[-1][1])
    else:
        m = re.findall(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?", text, re.M)  # test-pure
        if m:
            p, f = int(m[-1][0]), int(m[-1][1]) + int(m[-1][2] or 0)
print(p, f)
PY
}

run_tests() {	# run_tests NAME LOGFILE CMD...
	local name=$1 log=$2 rc p f
	shift 2
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	read -r p f < <(parse_counts "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1	# the runner failed outside any test (build, boot, crash)
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "$name: ran no test"; f=1
	fi
	if [ "$rc" -eq 0 ] && [ "$f" -eq 0 ]; then
		count "$p" 0 "$name" ok
	else
		count "$p" "$f" "$name" FAIL
	fi
}

# what vmdebug runs (about 15 minutes; the whole suite would take over
# an hour on that kernel under TCG): faults from below under fio, a
# failed data write (the checkpoint write, read error and device-gone
# cases, and read errors at load, in the vm stage: 100 s each here),
# out of memory at construction and the load-time refusals, suspend/
# resume under fio and a busy remove, checkpoint messages against a
# suspend (lockdep on ctl_lock and the worker flush it is held across; the
# vm stage runs the random race loop too), and one sequence of the
# operations test (test_ops.py: seq0, whose power cuts and recoveries
# replaced test_check_after_power_cut[0] here; the vm stage runs the
# others).  Swap on dm-remap under memory pressure (issue 40, item 11)
# runs in neither stage for now (VM_SKIP, below): 428 s here in the
# fresh-clone run of 24c53d8, and in the vm stage, on a guest of one
# vCPU beside the side lane, the soft-lockup detector fired in it (22 s
# in the page allocator's swap-in, the fresh-clone run of 88e719d).  The
# large-device tier's whole-device discard runs under the soft-lockup
# detector on Debian's kernel in the vm stage (it caught 7d92c5b there).
# Boot options: every KASAN report, not only the first; 4-level paging
# (under TCG, KASAN with 5-level paging reports a wild access at boot,
# in the interrupt code, and the taint switches lockdep off for the run);
# a ring buffer the whole run fits in.
VMDEBUG_APPEND="kasan_multi_shot no5lvl log_buf_len=16M"
# On that kernel a test step takes three to five times as long, so the
# long loops are shorter there than in the vm stage, which runs them in
# full: 8 operations of sequence 0 (171 s for 16 on 2026-11-29), 2
# suspend/resume cycles (each a suspend and a resume under fio: lockdep
# sees every lock of the cycle in the first), and at construction each of the first and last 32 of a
# load's some 850 allocations failed, and every 26th between them (from
# an offset that turns with the day of the year, so 26 days' runs fail
# every one): about 95 loads.  (A guest of 3 GiB booted no faster:
# 4 minutes on 2026-11-29, 2.7 with 6 GiB the day before.)
VMDEBUG_ENV=${DMR_VMDEBUG_ENV:-"DMR_OPS_STEPS=8 DMR_SR_CYCLES=2 DMR_OOM_STRIDE=26"}
VMDEBUG_MEM=${DMR_VMDEBUG_MEM:-6144}
VMDEBUG_TESTS=${DMR_VMDEBUG_TESTS:-"test_fault_under_fio[data-write] or test_map_larger_than_memory_refused or test_device_above_format_limit_refused or test_construction_out_of_memory or test_suspend_resume_loop or test_checkpoint_message_against or test_ops[seq0]"}
# Not run by make check for now: swap under memory pressure (428 s on the
# debug kernel; a soft lockup on one vCPU in the vm stage, 88e719d), run
# with DMR_VMDEBUG_TESTS=test_map_cache_swap_under_memory_pressure
VM_SKIP=${DMR_VM_SKIP:-"test_map_cache_swap_under_memory_pressure"}
# (test_fault_counts, test_faults.py's counts, runs in both.)
# The vm stage's own: the operations test's other sequences at 24 steps
# (32 by default: about 70 s more)
VM_ENV=${DMR_VM_ENV:-"DMR_OPS_STEPS=24"}
# The VM pool's two shards of the vm stage: shard 1 these files (1,502 s
# of the 2,991 their tests took in the vm stage of the fresh-clone run of
# 88e719d, the swap test left out), shard 2 every other (1,491 s), so a
# new file goes to shard 2
VM_SHARD1="test_grow.py test_gc.py test_log.py test_ops.py test_crash_consistency.py
	test_target.py test_zero_copy.py test_review3.py test_writers.py test_bm_flash.py"

vm_shard() {	# vm_shard 1|2: the test files of that shard
	local f one=() two=()
	for f in tests/integration/test_*.py; do
		if [[ " $(echo $VM_SHARD1) " == *" ${f##*/} "* ]]; then
			one+=("$f")
		else
			two+=("$f")
		fi
	done
	if [ "$1" = 1 ]; then echo "${one[*]}"; else echo "${two[*]}"; fi
}

for s in "${stages[@]}"; do
	t0=$(date +%s)
	case $s in
	build612)
		stage_build build612 "$KDIR612" "$repo"
		stage_build_flashsim build612 "$KDIR612" in-tree ;;
	build61)
		rm -rf "$cache/build61" && mkdir -p "$cache/build61"
		cp -r Kbuild dm-remap "$cache/build61/"
		find "$cache/build61" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' \) -delete
		stage_build build61 "$KDIR61" "$cache/build61"
		stage_build_flashsim build61 "$KDIR61" ;;
	tools)
		echo "== tools: build and host run of the pure-code KUnit suite"
		if make -s -C tools > "$out/tools-build.log" 2>&1; then
			run_tests tools "$out/tools.log" tools/tests/test-pure
		else
			cat "$out/tools-build.log"; count 0 1 tools FAIL
		fi ;;
	host)
		echo "== host: pytest tests/host"
		# test_deb.py takes the packages the debpkg stage built from
		# this tree, when it ran first and passed (the lane's order)
		pk=
		[ "$(cat "$out/debpkg.done" 2>/dev/null)" != ok ] || pk=$out/deb-pkgs
		run_tests host "$out/host.log" env DMR_DEB_PKGS="$pk" \
			/usr/bin/python3 -m pytest -q -p no:cacheprovider \
			--durations=20 tests/host ;;
	dkms)
		echo "== dkms: dkms build (private dkms tree in $cache/dkms)"
		ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
		d=$cache/dkms
		rm -rf "$d" && mkdir -p "$d/src/dm-remap-$ver" "$d/tree"
		git ls-files -z | xargs -0 tar -c | tar -x -C "$d/src/dm-remap-$ver"
		ok=1
		for k in "$KREL612" "${KDIR61##*/linux-headers-}"; do
			if dkms build "dm-remap/$ver" --sourcetree "$d/src" --dkmstree "$d/tree" \
				-k "$k" > "$out/dkms-$k.log" 2>&1 &&
			   ls "$d/tree/dm-remap/$ver/$k"/*/module/dm-remap.ko* >/dev/null 2>&1; then
				echo "dkms: built for $k"
			else
				cat "$out/dkms-$k.log"; ok=0
			fi
		done
		if [ $ok = 1 ]; then count 1 0 dkms ok; else count 0 1 dkms FAIL; fi ;;
	style)
		echo "== style: checkpatch.pl --strict"
		cp_pl=$cache/linux-source-6.12/scripts/checkpatch.pl
		[ -f "$cp_pl" ] || DMR_KUNIT_PREPARE_ONLY=1 bash tests/kunit/run.sh
		if perl "$cp_pl" --no-tree --strict --terse --show-types \
			--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES \
			-f $(ls dm-remap/*.[ch] | grep -v '\.mod\.c$') \
			tests/flashsim/dm-flashsim-target.c tests/flashsim/flashsim-model.[ch] \
			> "$out/style.log" 2>&1; then
			echo "style: ok"; count 1 0 style ok
		else
			cat "$out/style.log"; count 0 1 style FAIL
		fi
		echo "== style: sparse (make C=2) against the 6.12 and 6.1 headers"
		if bash scripts/sparse.sh "$KDIR612" "$KDIR61" > "$out/sparse.log" 2>&1; then
			tail -1 "$out/sparse.log"; count 1 0 sparse ok
		else
			cat "$out/sparse.log"; count 0 1 sparse FAIL
		fi ;;
	fuzz)
		echo "== fuzz: libFuzzer + ASan + UBSan, ${DMR_FUZZ_SECONDS:-10}s per target"
		run_tests fuzz "$out/fuzz.log" bash tests/fuzz/run.sh ;;
	kunit)
		echo "== kunit: UML"
		run_tests kunit "$out/kunit.log" bash tests/kunit/run.sh ;;
	vm)
		shard=${DMR_VM_SHARD:-}
		echo "== vm${shard:+$shard}: integration suite in a virtme-ng guest${shard:+ (shard $shard of 2)}"
		# (a job of the VM pool runs on what the pool's caller built)
		if [ -z "${DMR_CHECK_COUNTS:-}" ]; then
			make -s module KDIR="$KDIR612" >/dev/null 2>&1 || true
			make -s -C tools >/dev/null 2>&1 || true
		fi
		kd=${DMR_VMDEBUG_TOO:-0}
		[[ " ${stages[*]} " != *" vmdebug "* ]] || kd=1
		cpus=$(guest_cpus)
		# The tests vmdebug runs on its stricter kernel (the same 6.12
		# source) are left to it when it runs: about 2.5 minutes less.
		sel=(-k "not ($VM_SKIP)")
		[ "$kd" = 0 ] || sel=(-k "not ($VMDEBUG_TESTS) and not ($VM_SKIP)")
		paths=()
		[ -z "$shard" ] || paths=("DMR_TEST_PATHS=$(vm_shard "$shard")")
		# The whole suite took 32 to 53 minutes on one vCPU (the
		# machine's speed varies by half between runs: 53 on
		# 2026-11-30), a shard half that; the timeout leaves room for a
		# slower one within CI's 90 minutes
		tmo=3600
		[ -z "$shard" ] || tmo=3000
		# the peers test_compare.py sets up (scripts/peers.sh: cached,
		# prepared by the deps step)
		pd=$(bash scripts/peers.sh 2>>"$out/peers.log") || pd=
		run_tests "vm$shard" "$out/vm$shard.log" bash tests/vm/run-vm.sh --mem 6144 \
			--cpus "$cpus" --timeout "$tmo" "$out/vm$shard" -- \
			env $VM_ENV "${paths[@]}" DMR_PEERS_DIR="$pd" \
			bash tests/vm/guest-integration.sh "${sel[@]}" ;;
	kdebug)
		echo "== kdebug: vmdebug's debug kernel (scripts/debug-kernel.sh)"
		# kunit's run.sh unpacks the kernel source both kernels use
		if DMR_KUNIT_PREPARE_ONLY=1 bash tests/kunit/run.sh > "$out/kdebug.log" 2>&1 &&
		   kd=$(bash scripts/debug-kernel.sh 2>> "$out/kdebug.log"); then
			cat "$out/kdebug.log"
			echo "kdebug: ok ($kd)"
			echo ok > "$out/kdebug.done"; count 1 0 kdebug ok
		else
			cat "$out/kdebug.log"
			echo FAIL > "$out/kdebug.done"; count 0 1 kdebug FAIL
		fi ;;
	vmdebug)
		echo "== vmdebug: VM tests on a KASAN + lockdep + kmemleak + failslab kernel"
		# (with the side lane, a job of the VM pool, started once the
		# lane's kdebug stage has built the kernel: a second build of
		# the same directory beside it would break both)
		if ! kd=$(bash scripts/debug-kernel.sh 2> "$out/vmdebug-kernel.log"); then
			cat "$out/vmdebug-kernel.log"; count 0 1 vmdebug FAIL; count 0 1 kunit FAIL
		else
			# a copy: the module is built for this kernel, not Debian's
			d=$out/vmdebug-src
			rm -rf "$d" && mkdir -p "$d"
			git ls-files -z | xargs -0 tar -c | tar -x -C "$d"
			# and the KUnit suite as a module for it, in a copy of its
			# own (both modules link the pure objects)
			k=$out/vmdebug-kunit
			rm -rf "$k" && mkdir -p "$k" && cp dm-remap/*.[ch] dm-remap/Kbuild "$k/"
			kko=
			if make -s -C "$kd" M="$k" CONFIG_DM_REMAP_KUNIT_MODULE=m modules \
				> "$out/vmdebug-kunit-build.log" 2>&1 && [ -f "$k/dm-remap-kunit.ko" ]; then
				kko=$k/dm-remap-kunit.ko
			else
				cat "$out/vmdebug-kunit-build.log"
			fi
			if make -s -C "$kd" M="$d" CONFIG_DM_REMAP=m modules \
				> "$out/vmdebug-build.log" 2>&1 &&
			   make -s -C "$d/tools" >> "$out/vmdebug-build.log" 2>&1; then
				# two vCPUs (638 s of tests on two, about 1000 s on
				# one, in the cold run of 1485311; the VM pool runs it
				# alone, on two)
				run_tests vmdebug "$out/vmdebug.log" \
					env DMR_VM_KERNEL="$kd/arch/x86/boot/bzImage" \
					DMR_VM_APPEND="$VMDEBUG_APPEND" \
					bash "$d/tests/vm/run-vm.sh" --mem "$VMDEBUG_MEM" \
					--cpus "${DMR_GUEST_CPUS:-2}" --timeout 2700 \
					"$out/vmdebug" -- env $VMDEBUG_ENV DMR_KUNIT_KO="$kko" \
					bash tests/vm/guest-integration.sh -k "$VMDEBUG_TESTS or test_fault_counts"
			else
				cat "$out/vmdebug-build.log"; count 0 1 vmdebug FAIL
			fi
			# kunit.py's own summary of the KTAP the guest kept
			echo "== kunit: dm-remap's KUnit suite, a module in vmdebug's kernel"
			if [ -n "$kko" ] && [ -s "$out/vmdebug/kunit.ktap" ]; then
				run_tests kunit "$out/kunit.log" python3 \
					"$cache/linux-source-6.12/tools/testing/kunit/kunit.py" parse \
					"$out/vmdebug/kunit.ktap"
			else
				echo "kunit: no KTAP from the guest (module build: $out/vmdebug-kunit-build.log)"
				count 0 1 kunit FAIL
			fi
		fi ;;
	debpkg)
		echo "== debpkg: make deb's packages (scripts/deb.sh: build, lintian)"
		rm -f "$out/debpkg.done"
		if bash scripts/deb.sh "$out/deb-pkgs" > "$out/debpkg.log" 2>&1; then
			echo ok > "$out/debpkg.done"; count 1 0 debpkg ok
		else
			echo FAIL > "$out/debpkg.done"
			cat "$out/debpkg.log"; count 0 1 debpkg FAIL
		fi ;;
	deb)
		echo "== deb: make deb, then the README quick start / dkms / dpkg -r in a VM (overlays)"
		# about 12 minutes: the build and lintian about a minute (in the
		# side lane when there is one), the VM 10 to 13 (boot, and
		# apt-get install's DKMS build of the module under TCG: 5 to 7)
		if [ -n "${DMR_CHECK_COUNTS:-}" ] && [ "$(cat "$out/debpkg.done" 2>/dev/null)" = ok ]; then
			# a job of the VM pool, after the lane's debpkg stage
			cat "$out/debpkg.log"
			run_tests deb "$out/deb.log" bash tests/vm/run-vm.sh --cpus "$(guest_cpus)" --overlay /usr \
				--overlay /etc --overlay /var --timeout 900 "$out/vmdeb" -- \
				bash tests/vm/guest-deb.sh "$out/deb-pkgs"
		else
			run_tests deb "$out/deb.log" bash -c '
				bash scripts/deb.sh "$1/deb-pkgs" &&
				bash tests/vm/run-vm.sh --overlay /usr --overlay /etc --overlay /var \
					--timeout 900 "$1/vmdeb" -- bash tests/vm/guest-deb.sh "$1/deb-pkgs"' \
				deb "$out"
		fi ;;
	*)
		echo "check: unknown stage '$s' (stages: ${all_stages[*]})" >&2; exit 2 ;;
	esac
	echo "-- $s took $(( $(date +%s) - t0 ))s"
done
if [ ${#pool[@]} -gt 0 ]; then
	# the guests read the tree's module and tools: built before the
	# lane and the pool's jobs start, none of which writes them
	t0=$(date +%s)
	make -s module KDIR="$KDIR612" >/dev/null 2>&1 || true
	make -s -C tools >/dev/null 2>&1 || true
	if [ ${#lane[@]} -gt 0 ]; then
		echo "== side lane at SCHED_IDLE, nice 19, one job: ${lane[*]}"
		start_lane
	fi
	vmdebug_too=0
	[[ " ${pool[*]} " != *" vmdebug "* ]] || vmdebug_too=1
	echo "== VM pool: ${pool[*]}"
	# vmdebug last, alone: on one vCPU it took 2281 s against 974 s on
	# two (and test_checkpoint_message_against_a_suspend failed there)
	order=()
	for s in vm1 vm2 deb vmdebug; do
		[[ " ${pool[*]} " != *" $s "* ]] || order+=("$s")
	done
	run_pool "${order[@]}"
	echo "-- VM pool took $(( $(date +%s) - t0 ))s"
fi
finish_lane
if [ -n "${DMR_CHECK_COUNTS:-}" ]; then	# the side lane: its parent sums up
	echo "${stages[*]}: $total_pass passed, $total_fail failed"
	exit 0
fi

echo
echo "== summary (logs in $out)"
printf '%s\n' "${summary[@]}"
# the counts the fuzz and VM stages report (issue 13's acceptance)
if [ -f "$out/fuzz.log" ] || [ -f "$out/vm.log" ] || [ -f "$out/vm1.log" ] ||
   [ -f "$out/vmdebug.log" ]; then
	echo "== counts"
	grep -h '^fuzz: .* inputs tried' "$out/fuzz.log" 2>/dev/null
	grep -h '^counts: ' "$out/vm.log" "$out/vm1.log" "$out/vm2.log" 2>/dev/null |
		sed 's/^counts: //'
	grep -h '^counts: ' "$out/vmdebug.log" 2>/dev/null | sed 's/^counts: /vmdebug: /'
fi
echo "check: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
