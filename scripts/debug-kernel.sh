#!/bin/bash
# Build the debug kernel the vmdebug stage boots, once: Debian's
# linux-source-6.12 (unpacked by scripts/deps.sh) with virtme's defconfig
# plus tests/vm/debug-kernel.config (KASAN, lockdep, failslab, the drivers
# the tests load).  Debian's own kernel has none of these checkers.
#
#   scripts/debug-kernel.sh     prints the build directory; its bzImage is
#                               arch/x86/boot/bzImage (vng --run takes it
#                               with the modules next to it)
#
# Cached in ${DMR_CACHE:-~/.cache/dm-remap}/kdebug; rebuilt when the
# fragment or the kernel source changes.  A first build takes about 11
# minutes of both cores; make check's side lane builds it with one job
# (DMR_KBUILD_JOBS, default nproc) beside the vm stage's one-vCPU guest.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
src=$cache/linux-source-6.12
kdir=$cache/kdebug
frag=$repo/tests/vm/debug-kernel.config
[[ -f $src/Makefile ]] || { echo "debug-kernel: $src missing: run make test-deps" >&2; exit 2; }
command -v virtme-configkernel >/dev/null ||
	{ echo "debug-kernel: virtme-configkernel missing: run make test-deps" >&2; exit 2; }

want=$(cat "$frag" "$src.stamp" 2>/dev/null | sha256sum | cut -c1-16)
if [[ -f $kdir/.dmr-stamp && $(cat "$kdir/.dmr-stamp") == "$want" &&
      -f $kdir/arch/x86/boot/bzImage ]]; then
	echo "$kdir"
	exit 0
fi
rm -f "$kdir/.dmr-stamp"
mkdir -p "$kdir"
start=$SECONDS
echo "debug-kernel: building in $kdir with ${DMR_KBUILD_JOBS:-$(nproc)} jobs (about 11 minutes of 2 cores)" >&2
(cd "$src" && virtme-configkernel --defconfig --custom "$frag" O="$kdir") >"$kdir/config.log" 2>&1 ||
	{ cat "$kdir/config.log" >&2; exit 1; }
# virtme's own items come last and turn debug info on: off again (build time)
"$src/scripts/config" --file "$kdir/.config" -d DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
	-e DEBUG_INFO_NONE
make -s -C "$src" O="$kdir" olddefconfig >>"$kdir/config.log" 2>&1
for c in KASAN PROVE_LOCKING FAILSLAB BLK_DEV_DM MODULES; do
	grep -qE "^CONFIG_$c=[ym]" "$kdir/.config" ||
		{ echo "debug-kernel: CONFIG_$c did not stay on" >&2; exit 1; }
done
if ! make -s -C "$src" O="$kdir" -j"${DMR_KBUILD_JOBS:-$(nproc)}" bzImage modules >"$kdir/build.log" 2>&1; then
	tail -40 "$kdir/build.log" >&2
	exit 1
fi
echo "$want" >"$kdir/.dmr-stamp"
echo "debug-kernel: built in $((SECONDS - start)) s" >&2
echo "$kdir"
