#!/usr/bin/env bash
# `make transcript`: run tests/vm/guest-transcript.sh in the VM and write
# Documentation/dm-remap-transcript.txt from what it printed (a few
# minutes), so the documented session is a real one of this tree.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bash scripts/vm-job.sh transcript --mem 2048 -- \
	bash tests/vm/guest-transcript.sh | tee "$log"
out=$(sed -n 's/^transcript: results in //p' "$log")
[ -s "$out/guest.log" ] && [ "$(cat "$out/guest-rc" 2>/dev/null)" = 0 ] ||
	{ echo "transcript: the guest run failed (see $out)" >&2; exit 1; }
cp "$out/guest.log" Documentation/dm-remap-transcript.txt
echo "transcript: Documentation/dm-remap-transcript.txt written from $out"
