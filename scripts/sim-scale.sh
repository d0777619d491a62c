#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tools/remap-sim (the module's own map, segment-list and GC policy code in
# userspace) at the sizes users have: the three tables of
# Documentation/dm-remap-gc-sim.rst's "At the sizes users have".
#
#   cost  the CPU cost of a GC step and of choosing its victim, from 2^10
#         to 2^SIM_MAX_LOG2 segments of 64 blocks (uniform random writes
#         after a sequential fill, half a capacity of warm-up, a quarter
#         measured, --timing), beside one scan of the segment table (what
#         every step did two or three times before the segment lists);
#   waf   write amplification, settled (--warmup auto), at SIM_WAF_SEGMENTS
#         and at 2^17 segments: 80/20, uniform, cold70;
#   cb    cost-benefit from the first four segments of each bucket against
#         a scan of every segment (--exact-cb), 4096 segments.
#
# Usage: scripts/sim-scale.sh [--update-doc]
#   prints the tables; --update-doc also writes them into the doc between
#   its ".. sim-scale:NAME" markers.
# Environment: SIM_MAX_LOG2 (default 24: 4 TiB, about 8.5 GiB of memory and
# 10 minutes for that run alone), SIM_WAF_SEGMENTS (default 1048576),
# SIM_JOBS (default 2: runs at once), SIM_SEED (default 1).
# Writes nothing but a temporary directory, removed at exit (and the doc
# with --update-doc).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
sim=$top/tools/remap-sim
max_log2=${SIM_MAX_LOG2:-24}
waf_segments=${SIM_WAF_SEGMENTS:-1048576}
jobs=${SIM_JOBS:-2}
seed=${SIM_SEED:-1}
update=0
case "${1:-}" in
--update-doc) update=1 ;;
"") ;;
*) echo "usage: $0 [--update-doc]" >&2; exit 2 ;;
esac

make -s -C "$top/tools" remap-sim >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name, then remap-sim's arguments
runs=()
for ((l = 10; l <= max_log2; l += 2)); do
	runs+=("cost-$l --segments $((1 << l)) --segment-blocks 64 --warmup 0.5 --overwrites 0.25 --timing")
done
for w in hot80 uniform cold70; do
	runs+=("waf-big-$w --segments $waf_segments --segment-blocks 64 --workload $w --warmup auto --overwrites 0.5")
	runs+=("waf-small-$w --segments 131072 --segment-blocks 64 --workload $w --warmup auto --overwrites 0.5")
done
runs+=("cb-buckets --segments 4096 --segment-blocks 64 --workload hot80,hot95,uniform,cold70 --warmup auto --overwrites 1")
runs+=("cb-exact --segments 4096 --segment-blocks 64 --workload hot80,hot95,uniform,cold70 --warmup auto --overwrites 1 --exact-cb")

# the largest cost run first: it takes longest, the others run beside it
order=()
for ((i = max_log2 / 2 - 5; i >= 0; i--)); do
	order+=("$i")
done
for ((i = max_log2 / 2 - 4; i < ${#runs[@]}; i++)); do
	order+=("$i")
done
for i in "${order[@]}"; do
	set -- ${runs[$i]}
	name=$1
	shift
	echo "sim-scale: $name: remap-sim $* --seed $seed --json" >&2
	"$sim" "$@" --seed "$seed" --json >"$tmp/$name.json" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
done
# a failed run (STUCK, ENOSPC, an inconsistent map) fails the script
for pid in $(jobs -rp); do
	wait "$pid"
done
wait

python3 - "$tmp" "$update" "$top/Documentation/dm-remap-gc-sim.rst" <<'EOF'
import glob
import json
import os
import re
import sys

tmp, update, doc = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
res = {}
for path in glob.glob(tmp + "/*.json"):
    lines = [json.loads(line) for line in open(path)]
    assert lines[-1].get("done") and lines[-1]["consistent"], path
    res[os.path.basename(path)[:-5]] = lines[:-1]


def table(head, rows):
    cols = list(zip(head, *rows))
    width = [max(len(c) for c in col) for col in cols]
    rule = "  ".join("=" * w for w in width)
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip()
    return "\n".join([rule, fmt(head), rule] + [fmt(r) for r in rows] + [rule])


def gib(blocks):
    g = blocks * 4096 / 2**30
    return f"{g / 1024:.2f} TiB" if g >= 1024 else f"{g:.1f} GiB"


rows = []
for key in sorted((k for k in res if k.startswith("cost-")), key=lambda k: int(k[5:])):
    (r,) = res[key]
    rows.append((f"2^{key[5:]}", gib(r["logical_blocks"]), f"{r['ns_per_block']:.0f}",
                 f"{r['step_ns']:.0f}", f"{r['decide_ns']:.0f}",
                 f"{r['decide_greedy_ns']:.0f}", f"{r['decide_cb_ns']:.0f}",
                 f"{r['scan_ns']:.0f}", f"{r['rss_mib']}"))
cost = table(("segments", "logical", "ns/block", "step ns", "choice ns", "greedy ns",
              "cb ns", "scan ns", "RSS MiB"), rows)

rows = []
for w in ("hot80", "uniform", "cold70"):
    (b,) = res[f"waf-big-{w}"]
    (s,) = res[f"waf-small-{w}"]
    rows.append((w, f"{s['waf']:.3f}", f"{b['waf']:.3f}",
                 f"{100 * (b['waf'] / s['waf'] - 1):+.1f}%",
                 f"{s['warmup']:.1f} / {b['warmup']:.1f}",
                 "yes" if s["settled"] and b["settled"] else "NO"))
big = res["waf-big-uniform"][0]
waf = table(("workload", "WAF 2^17", f"WAF 2^{big['segments'].bit_length() - 1}",
             "change", "warm-up (capacities)", "settled"), rows)

bk = {r["workload"]: r for r in res["cb-buckets"]}
ex = {r["workload"]: r for r in res["cb-exact"]}
rows = [(w, f"{ex[w]['waf']:.3f}", f"{bk[w]['waf']:.3f}",
         f"{100 * (bk[w]['waf'] / ex[w]['waf'] - 1):+.1f}%") for w in bk]
cb = table(("workload", "scan of all", "4 per bucket", "change"), rows)

out = {"cost": cost, "waf": waf, "cb": cb}
for name, text in out.items():
    print(f"{name}:\n{text}\n")
if update:
    s = open(doc).read()
    for name, text in out.items():
        pat = re.compile(r"(\.\. sim-scale:%s\n\n).*?(\n\n\.\. sim-scale:end\n)" % name, re.S)
        assert pat.search(s), f"{doc}: no '.. sim-scale:{name}' marker"
        s = pat.sub(lambda m: m.group(1) + text + m.group(2), s)
    open(doc, "w").write(s)
EOF
