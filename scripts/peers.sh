#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The peers `make bench` measures beside dm-remap (issue 41, goal 5), from
# Debian's packages, prepared on the host for the guest's kernel:
#
#   dm-writeboost  Debian's dm-writeboost-dkms source (bookworm: 2.2.17),
#                  built against the 6.12 headers (kernels.env's KDIR612)
#                  as DKMS would build it, into the cache, not installed
#   bcache         in Debian's kernel (bcache.ko); make-bcache from
#                  Debian's bcache-tools, unpacked into the cache
#
# Both packages are fetched with apt-get download and unpacked with
# dpkg-deb -x: nothing is installed on the host, no DKMS hook runs, and
# /lib/modules is not touched.
#
# Bookworm's dm-writeboost 2.2.17 predates two kernel API changes, and
# does not build against 6.12 as packaged; two lines are patched, each to
# what the kernel replaced the call with (no behaviour changes):
#   i_size_read(bdev->bd_inode) >> 9   -> bdev_nr_sectors(bdev)  (6.10
#                                          removed bd_inode)
#   blk_limits_io_opt(limits, 4096)    -> limits->io_opt = 4096  (6.11
#                                          removed the helper)
#
# Prints the directory: wb/dm-writeboost.ko and sbin/make-bcache in it.
# Cached in ${DMR_CACHE:-~/.cache/dm-remap}/peers; rebuilt when the
# packages' versions or this script change.
set -euo pipefail
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
# shellcheck disable=SC1091
. "$cache/kernels.env"
dir=$cache/peers
pkgs=(dm-writeboost-dkms bcache-tools)

vers=$(apt-cache policy "${pkgs[@]}" 2>/dev/null | sed -n 's/^  Candidate: //p' | tr '\n' ' ')
want=$(printf '%s %s %s' "$vers" "$KDIR612" "$(sha256sum "$0" | cut -c1-16)")
if [[ -f $dir/stamp && $(cat "$dir/stamp") == "$want" && -f $dir/wb/dm-writeboost.ko &&
      -x $dir/sbin/make-bcache ]]; then
	echo "$dir"
	exit 0
fi
rm -rf "$dir"
mkdir -p "$dir/debs" "$dir/root"
(cd "$dir/debs" && apt-get download "${pkgs[@]}") >"$dir/download.log" 2>&1 || {
	apt-get update -qq >/dev/null 2>&1 || true
	(cd "$dir/debs" && apt-get download "${pkgs[@]}") >"$dir/download.log" 2>&1 ||
		{ cat "$dir/download.log" >&2; exit 1; }
}
for d in "$dir"/debs/*.deb; do
	dpkg-deb -x "$d" "$dir/root"
done
src=$(ls -d "$dir"/root/usr/src/dm-writeboost-* | head -1)
[[ -d $src ]] || { echo "peers: no dm-writeboost source in the package" >&2; exit 1; }
cp -r "$src" "$dir/wb"
t=$dir/wb/dm-writeboost-target.c
sed -i 's/i_size_read(dev->bdev->bd_inode) >> 9/bdev_nr_sectors(dev->bdev)/
	s/blk_limits_io_opt(limits, 4096);/limits->io_opt = 4096;/' "$t"
grep -q 'bdev_nr_sectors(dev->bdev)' "$t" && grep -q 'limits->io_opt = 4096;' "$t" ||
	{ echo "peers: $t: the 6.12 patch did not apply (another version?)" >&2; exit 1; }
make -s -C "$KDIR612" M="$dir/wb" modules >"$dir/build.log" 2>&1 ||
	{ cat "$dir/build.log" >&2; exit 1; }
mkdir -p "$dir/sbin"
cp "$dir/root/usr/sbin/make-bcache" "$dir/sbin/"
echo "$want" >"$dir/stamp"
echo "$dir"
