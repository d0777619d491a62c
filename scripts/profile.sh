#!/usr/bin/env bash
# `make profile`: where the CPU goes, per 4 KiB block, on dm-remap and on
# dm-linear: perf (cpu-clock samples, all CPUs) while fio runs 4 KiB random
# writes and reads on md RAID-5 over ramdisks, in the VM
# (tests/vm/guest-profile.py).  Reports busy CPU ns per block, the target's
# own code (the dm_remap module; dm_mod for dm-linear), the checksum (crc32c)
# and the top functions.
# Results: $DMR_CACHE/results/profile-<date>/ (profile.txt, profile.json,
# raw/: the perf reports; guest.log, dmesg.txt).
# Knobs: DMR_PROFILE_* variables (see tests/vm/guest-profile.py), in the
# environment or as arguments, e.g.
#   DMR_PROFILE_SECONDS=5 DMR_PROFILE_WORKLOADS=randwrite scripts/profile.sh
# Only one VM at a time on this machine: the run holds ${DMR_VM_LOCK:-/tmp/dmr-vm.lock}
# (flock; DMR_VM_LOCK=/some/other/file to use another lock).
set -uo pipefail
vars=()
while IFS= read -r v; do
	vars+=("$v")
done < <(env | grep -E '^DMR_PROFILE_[A-Z_]+=')
for a; do
	[[ $a == DMR_PROFILE_*=* ]] || { echo "usage: $0 [DMR_PROFILE_NAME=VALUE...]" >&2; exit 2; }
	vars+=("$a")
done
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env" || exit 1
command -v perf >/dev/null || { echo "profile: perf not found (scripts/deps.sh installs linux-perf)" >&2; exit 1; }
make -s module KDIR="$KDIR612" && make -s -C tools || exit 1
out=$cache/results/profile-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || exit 1

rc=0
flock "${DMR_VM_LOCK:-/tmp/dmr-vm.lock}" \
	bash tests/vm/run-vm.sh --mem 4096 --timeout 1800 "$out" -- \
	env "${vars[@]}" /usr/bin/python3 tests/vm/guest-profile.py || rc=$?

echo
if [[ -s $out/profile.txt ]]; then
	echo "==== profile ($out/profile.txt)"
	cat "$out/profile.txt"
else
	echo "==== the VM profile failed (run-vm exit $rc): see $out/guest.log"
	[[ $rc != 0 ]] || rc=1
fi
echo "profile: results in $out"
exit "$rc"
