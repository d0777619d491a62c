#!/usr/bin/env bash
# Run dm-remap's KUnit suite under UML with kunit.py from Debian's
# linux-source-6.12.
#
# The kernel tree is unpacked once into $DMR_CACHE (default
# ~/.cache/dm-remap), outside the repository; dm-remap/ is copied into it
# (copied) as drivers/dm-remap and hooked into drivers/Kconfig and drivers/Makefile.
# The UML build directory is cached there too, so only the first run pays
# for the full kernel build (about 10 minutes on 2 cores).
#
# Environment: DMR_KUNIT_PREPARE_ONLY=1 (unpack and wire, do not run),
# DMR_KUNIT_BUILD_ONLY=1 (unpack, wire and build the UML kernel, do not
# run: make check builds it before the VM stages on a cold cache),
# DMR_KUNIT_CONFIG (kunitconfig, default the file beside this
# script), DMR_KUNIT_JOBS (default nproc).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
tarball=$(ls /usr/src/linux-source-6.12.tar.xz 2>/dev/null || true)
src=$cache/linux-source-6.12
build=$cache/kunit-build
kconf=${DMR_KUNIT_CONFIG:-$here/dm-remap.kunitconfig}
jobs=${DMR_KUNIT_JOBS:-$(nproc)}

[ -n "$tarball" ] || { echo "kunit: /usr/src/linux-source-6.12.tar.xz missing (run make test-deps)" >&2; exit 2; }
mkdir -p "$cache"

# Unpack once; re-unpack if the Debian source package changed.
stamp=$cache/linux-source-6.12.stamp
want=$(stat -c '%s %Y' "$tarball")
if [ ! -f "$src/Makefile" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	echo "kunit: unpacking $tarball into $cache"
	rm -rf "$src" "$build"
	tar -xJf "$tarball" -C "$cache"
	echo "$want" > "$stamp"
fi

# Copy this checkout's dm-remap sources into the tree (a copy, not a
# symlink: kbuild's VPATH would otherwise pick up objects left in the
# checkout by the out-of-tree module build).  A file is copied only when
# its content differs, with a fresh mtime: unchanged files are not
# rebuilt, and a changed one always is (keeping the checkout's mtime did
# not: a file edited before another checkout's build, in another clone,
# looked older than that build's objects and ran the other code).
mkdir -p "$src/drivers/dm-remap"
for f in "$src"/drivers/dm-remap/*.[ch]; do
	if [ -e "$f" ] && [ ! -e "$repo/dm-remap/${f##*/}" ]; then rm -f "$f"; fi
done
for f in "$repo"/dm-remap/*.[ch] "$repo/dm-remap/Kbuild" "$repo/dm-remap/Kconfig"; do
	if ! cmp -s "$f" "$src/drivers/dm-remap/${f##*/}"; then
		cp "$f" "$src/drivers/dm-remap/"
	fi
done
grep -q 'drivers/dm-remap/Kconfig' "$src/drivers/Kconfig" ||
	sed -i 's|^endmenu|source "drivers/dm-remap/Kconfig"\n\nendmenu|' "$src/drivers/Kconfig"
grep -q 'dm-remap/' "$src/drivers/Makefile" ||
	echo 'obj-$(CONFIG_DM_REMAP_KUNIT_TEST) += dm-remap/' >> "$src/drivers/Makefile"

[ -z "${DMR_KUNIT_PREPARE_ONLY:-}" ] || exit 0

cd "$src"
if [ -n "${DMR_KUNIT_BUILD_ONLY:-}" ]; then
	exec python3 tools/testing/kunit/kunit.py build \
		--arch=um --build_dir="$build" --jobs="$jobs" --kunitconfig="$kconf"
fi
# kunit.py prints its own summary ("Testing complete. Ran N tests: passed: N").
exec python3 tools/testing/kunit/kunit.py run \
	--arch=um --build_dir="$build" --jobs="$jobs" \
	--kunitconfig="$kconf" "$@"
