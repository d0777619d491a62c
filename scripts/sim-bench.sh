#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Full-size write-amplification table from tools/remap-sim (the module's own
# GC policy code in userspace): uniform random writes at 7, 10, 20 and 28%
# over-provisioning, 80/20 and 95/5 hot/cold, and sequential, each with the
# module's heads and with the single-head greedy baseline.  Prints a markdown
# table (Documentation/dm-remap-gc-sim.rst has one).
#
# Environment: SIM_SEGMENTS (default 4096), SIM_SEGMENT_BLOCKS (256),
# SIM_OVERWRITES (3), SIM_SEED (1), SIM_JOBS (2: runs at once).
# Builds tools/remap-sim if needed.  Writes nothing but a temporary
# directory, removed at exit.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
sim=$top/tools/remap-sim
segments=${SIM_SEGMENTS:-4096}
seg_blocks=${SIM_SEGMENT_BLOCKS:-256}
overwrites=${SIM_OVERWRITES:-3}
seed=${SIM_SEED:-1}
jobs=${SIM_JOBS:-2}

make -s -C "$top/tools" remap-sim >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# workload op
runs=(
	"uniform 7" "uniform 10" "uniform 20" "uniform 28"
	"hot80 10" "hot95 10" "shift80 10" "cold70 10" "seq 10"
)

# every run measured once its WAF settles (--warmup auto, the convergence
# rule of Documentation/dm-remap-gc-sim.rst), not after a fixed warm-up
common=(--segments "$segments" --segment-blocks "$seg_blocks" --warmup auto
	--overwrites "$overwrites" --seed "$seed" --json)
i=0
for r in "${runs[@]}"; do
	set -- $r
	for heads in multi single; do
		extra=()
		[ "$heads" = single ] && extra=(--single-head)
		out=$tmp/$(printf '%02d' $i)-$heads.json
		"$sim" "${common[@]}" --workload "$1" --op "$2" "${extra[@]}" \
			>"$out" &
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
			wait -n
		done
	done
	i=$((i + 1))
done
wait

python3 - "$tmp" "$segments" "$seg_blocks" "$overwrites" "$seed" <<'EOF'
import glob
import json
import sys

tmp, segments, seg_blocks, overwrites, seed = sys.argv[1:]
rows = {}
for path in sorted(glob.glob(tmp + "/*.json")):
    lines = [json.loads(l) for l in open(path)]
    assert lines[-1].get("done") and lines[-1]["consistent"], path
    run = lines[0]
    key = path.rsplit("/", 1)[1].split("-")[0]
    rows.setdefault(key, {})[run["heads"]] = run

print(f"remap-sim: {segments} segments of {seg_blocks} blocks, fill + warm-up "
      f"until the WAF settles, {overwrites} measured, seed {seed}\n")
print("| workload | OP | WAF | WAF, all writes | single-head WAF "
      "| single-head, all writes | vs single-head | analytic / bound "
      "| vs analytic / bound | warm-up (capacities) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(rows):
    m, s = rows[key]["multi"], rows[key]["single"]
    ref = m.get("analytic", m.get("bound"))
    kind = "analytic" if "analytic" in m else "bound"
    print(f"| {m['workload']} | {m['op']}% | {m['waf']:.2f} | "
          f"{m['waf_all']:.2f} | {s['waf']:.2f} | {s['waf_all']:.2f} | "
          f"{100 * (m['waf'] / s['waf'] - 1):+.0f}% | "
          + (f"{ref:.2f} ({kind}) | {100 * (m['waf'] / ref - 1):+.1f}% |"
             if ref else "- | - |")
          + f" {m['warmup']:.1f}{'' if m.get('settled') else ' (not settled)'} |")
print("\nWAF: device data blocks (user and relocated) per user block.  "
      "All writes: summaries and checkpoints too.")
EOF
