#!/usr/bin/env bash
# dm-remap: sparse (the kernel's `make C=2`) over every kernel source file.
#
#   scripts/sparse.sh [KDIR...]     (default: $KDIR612 and $KDIR61 from
#                                    the cache's kernels.env)
#
# The module's files are checked through the module build, the KUnit test
# files through single-object builds with CONFIG_DM_REMAP_KUNIT_TEST=m
# (an out-of-tree build does not compile obj-y).  Everything is built in a
# scratch copy, so the tree keeps no objects of another configuration.
# Prints one line per sparse report and a closing "sparse: N files checked,
# N warnings"; exits 1 if sparse reported anything or a build failed.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${DMR_CACHE:-$HOME/.cache/dm-remap}
if [ $# -eq 0 ]; then
	# shellcheck disable=SC1091
	. "$cache/kernels.env" || { echo "sparse: run 'make test-deps' first" >&2; exit 2; }
	set -- "$KDIR612" "$KDIR61"
fi
command -v sparse >/dev/null || { echo "sparse: sparse is not installed (make test-deps)" >&2; exit 2; }

tests=$(cd "$repo/dm-remap" && ls -- *-test.c | sed 's,\.c$,.o,')
checked=0
reports=0
failed=0
for kdir in "$@"; do
	work=$(mktemp -d "${TMPDIR:-/tmp}/dmr-sparse.XXXXXX")
	cp -r "$repo/Kbuild" "$repo/dm-remap" "$work/"
	find "$work" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete
	log=$work/sparse.log
	objs=()
	for o in $tests; do objs+=("dm-remap/$o"); done
	if ! make -C "$kdir" M="$work" CONFIG_DM_REMAP=m C=2 modules > "$log" 2>&1 ||
	   ! make -C "$kdir" M="$work" CONFIG_DM_REMAP_KUNIT_TEST=m C=2 "${objs[@]}" >> "$log" 2>&1; then
		echo "sparse: build against $kdir failed:"
		grep -E '(error|warning|Error)' "$log" | sed "s,$work/,,"
		failed=1
	fi
	n=$(grep -c '^  CHECK ' "$log")
	grep -E '(warning|error):' "$log" | sed "s,$work/,,"
	r=$(grep -cE '(warning|error):' "$log")
	echo "sparse: ${kdir##*/}: $n files checked, $r reports"
	checked=$((checked + n))
	reports=$((reports + r))
	rm -rf "$work"
done
echo "sparse: $checked files checked, $reports warnings"
[ "$reports" -eq 0 ] && [ "$checked" -gt 0 ] && [ $failed = 0 ]
