#!/usr/bin/env bash
# dm-remap: the one idempotent dependency step.
#
#   scripts/deps.sh build   (make deps) what building and installing needs:
#                           the compiler and make, libblkid-dev, dkms and
#                           the packaging tools make deb uses, rst2man for
#                           the man pages.  Nothing else: no kernel image,
#                           no QEMU, no pip.
#   scripts/deps.sh [test]  (make test-deps, which make check, make demo and
#                           make bench call) all of that, and what the
#                           tests need: Debian's 6.12 kernel image (the VM
#                           boots it; it is installed beside the running
#                           kernel and may become the default boot entry),
#                           the 6.12 and 6.1 headers, linux-source-6.12
#                           (KUnit under UML, the debug kernel), QEMU,
#                           clang (the fuzz targets), sparse, fio, mdadm,
#                           xfsprogs, perf, pytest, matplotlib, and
#                           virtme-ng from PyPI (pip, into the system's
#                           Python: Debian 12 does not package it); and
#                           the peers (scripts/peers.sh: dm-writeboost
#                           and make-bcache unpacked into the cache).
#
# From Debian's packages and PyPI only.  A second run finds everything
# present and returns in about a second.
#
# Environment:
#   DMR_K612   Debian 6.12 kernel ABI to use (default: newest that has an
#              image, headers and a matching linux-source-6.12)
#   DMR_K61    Debian 6.1 headers ABI (default: newest available)
set -euo pipefail

mode=${1:-test}
case $mode in
build|test) ;;
*) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

stamp_dir=${DMR_CACHE:-$HOME/.cache/dm-remap}
mkdir -p "$stamp_dir"

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_update_once() {
	if [ $apt_updated = 0 ]; then
		apt-get update -qq >/dev/null
		apt_updated=1
	fi
}

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# Pick kernel versions.  Reuse what is already installed if present so a
# second run does not chase a newer point release.
pick_612() {
	local v
	v=$(ls -d /lib/modules/6.12.*+deb12-amd64 2>/dev/null | sed 's,.*/,,; s,-amd64$,,' | sort -V | tail -1)
	if [ -n "$v" ] && [ -d "/usr/src/linux-headers-$v-amd64" ]; then
		echo "$v"; return
	fi
	apt_update_once
	apt-cache pkgnames linux-headers-6.12. | sed -n 's/^linux-headers-\(6\.12\.[0-9]*+deb12\)-amd64$/\1/p' | sort -V | tail -1
}
pick_61() {
	local v
	v=$(ls -d /usr/src/linux-headers-6.1.0-*-amd64 2>/dev/null | sed 's,.*/linux-headers-,,; s,-amd64$,,' | sort -V | tail -1)
	if [ -n "$v" ]; then echo "$v"; return; fi
	apt_update_once
	apt-cache pkgnames linux-headers-6.1.0- | sed -n 's/^linux-headers-\(6\.1\.0-[0-9]*\)-amd64$/\1/p' | sort -V | tail -1
}

# apt-get install of those of the packages named that are not installed
install_missing() {
	local p missing=()
	for p in "$@"; do
		have_pkg "$p" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "deps: installing ${missing[*]}"
		apt_update_once
		$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

build_pkgs=(
	build-essential bc kmod git xz-utils libblkid-dev dkms dmsetup
	python3 python3-docutils man-db groff-base
	debhelper dh-dkms lintian dpkg-dev
)
if [ "$mode" = build ]; then
	install_missing "${build_pkgs[@]}"
	echo "deps: ok (build: ${build_pkgs[*]})"
	exit 0
fi

K612=${DMR_K612:-$(pick_612)}
K61=${DMR_K61:-$(pick_61)}
[ -n "$K612" ] || { echo "deps: no Debian 6.12 kernel found in apt" >&2; exit 1; }
[ -n "$K61" ] || { echo "deps: no Debian 6.1 headers found in apt" >&2; exit 1; }

pkgs=(
	"${build_pkgs[@]}"
	bison flex libelf-dev libssl-dev dwarves cpio
	qemu-system-x86 busybox-static
	"linux-image-$K612-amd64-unsigned" "linux-headers-$K612-amd64"
	"linux-headers-$K61-amd64"
	linux-source-6.12
	mdadm fio e2fsprogs xfsprogs util-linux udev
	python3-pytest python3-matplotlib
	linux-perf sparse clang-16 libclang-rt-16-dev
)
install_missing "${pkgs[@]}"

# virtme-ng from PyPI (Debian 12 does not package it).
if ! command -v vng >/dev/null 2>&1; then
	echo "deps: installing virtme-ng from PyPI"
	python3 -m pip install -q --root-user-action=ignore 'virtme-ng>=1.30' 2>/dev/null ||
		python3 -m pip install -q --break-system-packages 'virtme-ng>=1.30'
fi

{
	echo "K612=$K612"
	echo "K61=$K61"
	echo "KDIR612=/usr/src/linux-headers-$K612-amd64"
	echo "KDIR61=/usr/src/linux-headers-$K61-amd64"
	echo "KREL612=$K612-amd64"
} > "$stamp_dir/kernels.env"
# the peers compare --peers and make bench measure (scripts/peers.sh:
# Debian's dm-writeboost-dkms built for the 6.12 kernel and bcache-tools'
# make-bcache, unpacked into the cache, nothing installed)
bash "$(dirname "$0")/peers.sh" >/dev/null ||
	{ echo "deps: scripts/peers.sh failed" >&2; exit 1; }
echo "deps: ok (6.12: $K612, 6.1: $K61)"
