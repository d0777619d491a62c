#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make deb`: dm-remap-tools and dm-remap-dkms (debian/) built from a clean
# copy of the tracked tree (the files git tracks, as they are in the work
# tree), in a temporary directory under the cache, so dpkg-buildpackage
# writes nothing into the repository or beside it.  Binary only, unsigned.
# The .deb files (with the .buildinfo, .changes and lintian.txt, lintian's
# verdict) go to OUTDIR, default ${DMR_CACHE:-~/.cache/dm-remap}/deb, which
# the last line prints.  Fails if the version in debian/changelog is not
# dkms.conf's, if the build fails, or on a lintian error or warning that is
# not overridden (debian/*.lintian-overrides).  Tracked files with
# uncommitted changes go in as they are, with a warning that names them:
# the version says nothing of them.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
out=${1:-$cache/deb}
cd "$repo"

dirty=$(git status --porcelain --untracked-files=no)
if [ -n "$dirty" ]; then
	echo "deb: warning: the packages take these tracked files with uncommitted changes:" >&2
	sed 's/^/deb:   /' <<<"$dirty" >&2
fi

ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
chver=$(dpkg-parsechangelog -S Version -l debian/changelog)
if [ "$ver" != "$chver" ]; then
	echo "deb: debian/changelog has version $chver, dkms.conf $ver: add a changelog entry" >&2
	exit 1
fi

mkdir -p "$cache" "$out"
work=$(mktemp -d "$cache/deb-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/dm-remap-$ver
mkdir "$src"
git ls-files -z | xargs -0 tar -c | tar -x -C "$src"

echo "deb: dpkg-buildpackage in $src (log $out/build.log)"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	cp "$work/build.log" "$out/build.log"
	echo "deb: build FAILED" >&2
	exit 1
fi
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes "$out"/lintian.txt
cp "$work/build.log" "$out/build.log"
mv "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out/"
ls -l "$out"/*.deb

changes=$(ls "$out"/*.changes)
rc=0
# (--show-overrides would make the overridden tags fail too: a second run)
lintian --fail-on error,warning --info "$changes" > "$out/lintian.txt" 2>&1 || rc=$?
lintian --show-overrides "$changes" 2>/dev/null | grep '^O: ' >> "$out/lintian.txt" || true
grep -v '^N:' "$out/lintian.txt"
if [ $rc -ne 0 ]; then
	echo "deb: lintian FAILED (exit $rc)" >&2
	exit 1
fi
echo "deb: lintian: no error or warning that is not overridden"
echo "deb: packages in $out"
