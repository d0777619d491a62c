#!/usr/bin/env bash
# `make demo`: build, boot the VM, run tests/vm/guest-demo.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env"
make -s module KDIR="$KDIR612"
make -s -C tools
out=$cache/results/demo-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
bash tests/vm/run-vm.sh --mem 2048 "$out" -- bash tests/vm/guest-demo.sh
echo "demo: log in $out/guest.log"
