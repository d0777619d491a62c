#!/usr/bin/env bash
# `make bench`: bare vs dm-remap on md RAID-5 over ramdisks, in the VM.
# Results are archived under $DMR_CACHE/results/bench-<date>/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env"
make -s module KDIR="$KDIR612"
make -s -C tools
out=$cache/results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
bash tests/vm/run-vm.sh --mem 3072 --timeout 3600 "$out" -- \
	/usr/bin/python3 tests/vm/guest-bench.py
echo "bench: $out"
