#!/usr/bin/env bash
# Build the module and tools, then run a guest command in the VM with its
# results under $DMR_CACHE/results/NAME-<date>/ (used by `make demo` and
# `make bench`).
#
#   scripts/vm-job.sh NAME [run-vm.sh options] -- COMMAND [ARGS...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env"
name=$1
shift
opts=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	opts+=("$1")
	shift
done
make -s module KDIR="$KDIR612"
make -s -C tools
out=$cache/results/$name-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
bash tests/vm/run-vm.sh "${opts[@]}" "$out" "$@"
echo "$name: results in $out"
