#!/usr/bin/env bash
# dm-remap: build and run the fuzz targets (tests/fuzz).
#
#   tests/fuzz/run.sh [SECONDS]     each target for SECONDS (default
#                                   $DMR_FUZZ_SECONDS, else 10)
#
# First checks that the committed seed corpus is what mkseeds writes for
# the current format.  Then each target runs from a copy of its seeds (the
# corpus it grows stays in the cache, not in the tree) for a fixed time,
# with ASan and UBSan; a crash, a sanitizer report or a failed property
# stops it, and the input is kept as crash-* under the cache's fuzz
# directory (~/.cache/dm-remap/fuzz, with the grown corpora and logs).  Prints a line per target and closes with
# "fuzz: N inputs tried, N crashes" and "N passed, N failed" (targets);
# exits 1 on any crash.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
out=$cache/fuzz
secs=${1:-${DMR_FUZZ_SECONDS:-10}}
targets=(sb ckpt unit slot table replay)
# largest input: the replay target's header and three segments of blocks
max_len=$((15 + 3 * 64 * 4096))

command -v clang-16 >/dev/null || { echo "fuzz: clang-16 is not installed (make test-deps)" >&2; exit 2; }
# binaries in the tree (tests/fuzz/build, ignored by git): a cache shared
# by several checkouts could run one tree's build against another's code
bin=$here/build
make -s -C "$here" O="$bin" || { echo "fuzz: build failed"; exit 1; }

seeds=$(mktemp -d "${TMPDIR:-/tmp}/dmr-seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
"$bin/mkseeds" "$seeds/corpus" || exit 1
if ! diff -r "$here/corpus" "$seeds/corpus" >/dev/null; then
	echo "fuzz: tests/fuzz/corpus is not what mkseeds writes for this format;"
	echo "fuzz: regenerate it: $bin/mkseeds tests/fuzz/corpus"
	exit 1
fi

total=0
crashes=0
for t in "${targets[@]}"; do
	work=$out/corpus-$t
	mkdir -p "$work"
	cp "$here/corpus/$t"/* "$work/"
	log=$out/$t.log
	"$bin/fuzz-$t" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/$t-" "$work" > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	runs=${runs:-0}
	total=$((total + runs))
	if [ $rc -ne 0 ]; then
		crashes=$((crashes + 1))
		grep -E 'ERROR|SUMMARY|property failed|runtime error|Test unit written' "$log" | head -8
		echo "fuzz-$t: CRASH after $runs inputs (log $log)"
	else
		echo "fuzz-$t: $runs inputs in ${secs}s, corpus $(find "$work" -type f | wc -l) files, no crash"
	fi
done
echo "fuzz: $total inputs tried, $crashes crashes"
echo "$(( ${#targets[@]} - crashes )) passed, $crashes failed"
[ $crashes -eq 0 ]
