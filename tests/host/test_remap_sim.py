# SPDX-License-Identifier: GPL-2.0-only
"""tools/remap-sim: the module's GC policy code, measured in userspace.

The simulator runs dm-remap's own dmr-map.c / dmr-policy.c on small devices
(1024 segments of 256 blocks, a few seconds in all), and at the sizes users
have (2^20 segments, see "at the sizes users have" below).  The numbers asserted
are what the policy achieves, with a margin; if victim choice, the hot/cold
split, the watermarks or the relocation bookkeeping went wrong, they move
far outside it (a random victim or a lost relocation shows at once).
Documentation/dm-remap-gc-sim.rst has the full-size table and what the
numbers mean; scripts/sim-bench.sh produces it.
"""
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

SIM = str(Path(__file__).resolve().parents[2] / "tools" / "remap-sim")
SMALL = ["--segments", "1024"]


def sim(*args, check=True):
    p = subprocess.run([SIM, *args], capture_output=True, text=True,
                       timeout=300)
    if check:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def runs(*args):
    """Run with --json; return the run objects, checking the closing line."""
    p = sim(*args, "--json")
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert lines[-1] == {"done": True, "runs": len(lines) - 1,
                         "consistent": True}
    return lines[:-1]


@pytest.fixture(scope="module")
def uniform():
    return {r["op"]: r for r in runs(*SMALL, "--op", "10,28")}


@pytest.fixture(scope="module")
def skewed():
    multi = {r["workload"]: r for r in runs(*SMALL, "--workload", "hot80,hot95")}
    single = {r["workload"]: r
              for r in runs(*SMALL, "--workload", "hot80,hot95", "--single-head")}
    return multi, single


def test_uniform_matches_greedy_theory(uniform):
    """Victim choice is as good as greedy for the spare the run really had.

    analytic_eff is Desnoyers' greedy value for the segments that held data
    when victims were chosen; the policy may beat it slightly (GC's bursts
    choose while prefree segments still count as idle) but never trails it.
    """
    for op, r in uniform.items():
        assert r["heads"] == "multi" and r["segments"] == 1024
        assert 0.94 <= r["waf"] / r["analytic_eff"] <= 1.03, (op, r)


def test_uniform_vs_analytic(uniform):
    """Against the nominal over-provisioning: within 5% at 28%, 5.5% at 10%.

    A segment GC empties is free after the next log flush (the reuse rule
    counts checkpoints from its seal, long before), so the free pool stays
    small (batch 2, reserve 4 here) and checkpoints are rare: everything
    the target writes is within a few percent of the data it writes.  The
    four heads' open segments weigh more on this small device: at 10% it
    measures +5.0%, the full-size table (4096 segments, make bench) +4.5%.
    """
    r28, r10 = uniform[28], uniform[10]
    assert 1.92 < r28["analytic"] < 2.0
    assert 5.15 < r10["analytic"] < 5.2
    assert 0.0 < r28["diff"] < 0.05, r28
    assert 0.0 < r10["diff"] < 0.055, r10
    for r in (r10, r28):
        assert r["waf"] < r["waf_summaries"] < r["waf_all"]
        assert r["waf_all"] < 1.03 * r["waf_summaries"], r
        # every checkpoint writes the map (1 block per 1024 entries)
        assert r["ckpt_blocks"] >= r["checkpoints"] * r["logical_blocks"] // 1024
        # GC frees space by flushing the log, not by checkpoints
        assert r["flushes"] > 10 * r["checkpoints"], r
        assert r["gc_batch"] == 2 and r["gc_reserve"] == 4


def test_hot80_beats_single_head(skewed):
    """80/20: at least 20% fewer device writes than the greedy single head
    (the issue's goal; this size measures about 28%).  Blocks moved out of
    hot segments go to a GC head of their own (dmr_gc_head()): with a
    single GC head this was 14%."""
    multi, single = skewed
    m, s = multi["hot80"], single["hot80"]
    assert s["heads"] == "single" and s["hot_share"] == 1.0
    assert 5.3 < s["waf"] < 6.3, s
    assert m["waf"] < 0.8 * s["waf"], (m["waf"], s["waf"])
    assert m["waf_all"] < 0.8 * s["waf_all"]
    assert 0.7 < m["hot_share"] < 0.9, m
    assert m["waf"] > m["bound"] > 3.5


def test_hot95_beats_single_head(skewed):
    """95/5: at least 60% fewer device writes than the greedy single head
    (the issue's goal; this size measures about 71%)."""
    multi, single = skewed
    m, s = multi["hot95"], single["hot95"]
    assert 5.3 < s["waf"] < 7, s
    assert m["waf"] < 0.4 * s["waf"], (m["waf"], s["waf"])
    assert m["waf_all"] < 0.4 * s["waf_all"]
    assert m["hot_share"] > 0.9, m
    assert m["waf"] > m["bound"] > 1.5


def test_sequential_needs_no_copying():
    (r,) = runs("--segments", "256", "--workload", "seq")
    assert r["waf"] < 1.001, r
    assert r["waf_summaries"] < 1.01


def test_trace_plain_and_blkparse_agree(tmp_path):
    """The same writes as "offset length" lines and as blkparse output."""
    import random
    rnd = random.Random(7)
    plain = ["# offset length (bytes)"]
    blk = []
    for i in range(20000):
        # 8 KiB writes, 90% of them to the first 10% of 100 MiB
        block = rnd.randrange(2560) if rnd.random() < 0.9 else rnd.randrange(25600)
        off, length = block * 4096, 8192
        plain.append(f"{off} {length}")
        for act in "QGIDC":     # every event of the request; Q is taken
            blk.append(f"  8,0    1   {i + 1:6d}   {i * 0.001:.9f}  4172  {act}  "
                       f"WS {off // 512} + {length // 512} [fio]")
        blk.append(f"  8,0    1   {i + 1:6d}   {i * 0.001:.9f}  4172  Q   R "
                   f"{off // 512} + 8 [fio]")
    blk += ["CPU1 (8,0):", " Reads Queued:       1,   4KiB  Writes Queued: 2"]
    (tmp_path / "plain.txt").write_text("\n".join(plain) + "\n")
    (tmp_path / "blk.txt").write_text("\n".join(blk) + "\n")
    out = []
    for f in ("plain.txt", "blk.txt"):
        (r,) = runs("--segments", "256", "--workload", f"trace:{tmp_path / f}")
        assert r["workload"] == f"trace:{tmp_path / f}"
        out.append({k: v for k, v in r.items() if k != "workload"})
    assert out[0] == out[1]
    r = out[0]
    # a hot tenth of the device: far below uniform random writes at 10% OP
    assert 1.0 < r["waf"] < 3.5, r
    assert r["hot_share"] > 0.8


def test_sequential_trace(tmp_path):
    f = tmp_path / "seq.txt"
    f.write_text("".join(f"{i * 65536} 65536\n" for i in range(4096)))
    (r,) = runs("--segments", "256", "--workload", f"trace:{f}")
    assert r["waf"] < 1.001, r


def test_consistency_checks_and_text_output():
    p = sim("--segments", "128", "--workload", "uniform,hot80", "--op", "7,20",
            "--check", "20000", "--overwrites", "1")
    lines = p.stdout.splitlines()
    assert len(lines) == 5
    assert lines[-1] == "remap-sim: 4 runs, map consistent"
    for line in lines[:-1]:
        kv = dict(f.split("=", 1) for f in line.split())
        assert kv["segments"] == "128" and kv["heads"] == "multi"
        assert float(kv["waf"]) > 1.5


def test_seed_decides_the_run():
    a = sim("--segments", "64", "--seed", "5").stdout
    assert a == sim("--segments", "64", "--seed", "5").stdout
    assert a != sim("--segments", "64", "--seed", "6").stdout


def test_device_mib_uses_the_format_geometry():
    (r,) = runs("--device-mib", "256", "--overwrites", "0.5")
    # remapctl format's geometry: metadata first, 8 segments reserved
    assert r["segments"] == 255
    assert r["logical_blocks"] == (255 - 10) * 256 * 90 // 100


@pytest.mark.parametrize("args", [
    ["--op", "2"],
    ["--op", "61"],
    ["--op", "ten"],
    ["--op", "10,"],
    ["--op", ","],
    ["--segments", "15"],
    ["--segments", "-1"],
    ["--device-mib", "1"],
    ["--segment-blocks", "63"],
    ["--workload", "zipf"],
    ["--workload", "trace:"],
    ["--workload", "trace:/nonexistent/trace"],
    ["--workload", "trace:BAD"],
    ["--workload", "trace:EMPTY"],
    ["--overwrites", "0"],
    ["--overwrites", "x"],
    ["--warmup", "-1"],
    ["--warmup", "Auto"],
    ["--settle", "0"],
    ["--settle", "x"],
    ["--workload", "cold"],
    ["--recover", "yes"],
    ["--workload", "uniform", "--oracle"],
    ["--gc-low", "1"],
    ["--gc-high", "100000"],
    ["--seed", "-3"],
    ["--check", "0"],
    ["--bogus"],
    ["--op"],
    ["extra"],
])
def test_usage_errors_exit_2(args, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0 4096\nhello world\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    args = [a.replace("BAD", str(bad)).replace("EMPTY", str(empty))
            for a in args]
    p = sim("--segments", "64", *args, check=False)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert p.stderr.startswith("remap-sim: "), p.stderr
    assert "--help" in p.stderr
    assert p.stdout == ""


def test_bad_trace_line_is_named(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("0 4096\n\n8192 4096\n4096 lots\n")
    p = sim("--workload", f"trace:{bad}", check=False)
    assert p.returncode == 2
    assert f"{bad}:4: expected" in p.stderr


# ---- at the sizes users have (issue 24, scale) ----
#
# 2^20 segments of 64 blocks (256 KiB): a 256 GiB device, 230 GiB of
# logical space, 0.5 GiB of simulator memory each, filled sequentially,
# then 70% of it written once and random writes to the rest (cold70), and
# uniform random writes; 80/20 (hot80) on 2^18 segments; measured once
# the WAF settles (--warmup auto: the WAF flat over half a capacity and
# the fill forgotten, which takes 80/20 eight capacities), half a
# capacity measured, against the same runs on 2^17 segments.  About 3.5
# minutes of CPU (uniform 128 s, hot80 100 s, cold70 86 s at the larger
# size, 85 s the three smaller), two at a time.  80/20 at 2^20 took 415 s
# alone, the CI's longest step (its WAF: 4.402 at 2^20, 4.387 at 2^18,
# 4.392 at 2^17); 2^18 against 2^17 still catches what the comparison is
# for (without DMR_GC_BATCH_MAX, 5.338 against 5.031).  DMR_SIM_SCALE=full
# adds 80/20 at 2^20 and all three on 4718592 segments, 1.01 TiB of
# logical space (2.4 GiB of memory each, about 30 minutes more).
# 16 TiB of logical space is not feasible here: the simulator keeps the
# map (4 bytes per logical block) and the disk's summaries (4 per
# physical block), 36 GiB, and the format's largest device at 10%
# over-provisioning holds 14.4 TiB.
SCALE_SMALL = 1 << 17
SCALE = 1 << 20
SCALE_HOT = 1 << 18
SCALE_TIB = 4718592
SCALE_FULL = os.environ.get("DMR_SIM_SCALE") == "full"
# the longest first
SCALE_RUNS = [(SCALE, "uniform"), (SCALE_HOT, "hot80"), (SCALE, "cold70"),
              (SCALE_SMALL, "hot80"), (SCALE_SMALL, "uniform"),
              (SCALE_SMALL, "cold70")]
if SCALE_FULL:
    SCALE_RUNS = [(SCALE_TIB, "hot80"), (SCALE_TIB, "uniform"),
                  (SCALE_TIB, "cold70"), (SCALE, "hot80")] + SCALE_RUNS


def scale_run(segments, workload):
    p = subprocess.run([SIM, "--segments", str(segments), "--segment-blocks", "64",
                        "--workload", workload, "--warmup", "auto",
                        "--overwrites", "0.5", "--json"],
                       capture_output=True, text=True, timeout=7200)
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    return p, lines


@pytest.fixture(scope="module")
def at_scale():
    """Every run at once, two at a time (the machine's two cores), the
    longest first."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(scale_run, *k) for k in SCALE_RUNS}
        return {k: f.result() for k, f in futures.items()}


def test_scale_runs_without_stuck_or_enospc(at_scale):
    """GC never gets stuck and never runs out of segments at 2^20 segments
    (2^18 for 80/20; 2^20 and 1 TiB logical with DMR_SIM_SCALE=full): the
    simulator exits 1 on
    either (STUCK: "no space can be freed", ENOSPC: "GC has no free
    segment", "no free segment to reserve"), and checks the map, the
    segment lists and the prefree counts at the end."""
    for (segments, workload), (p, lines) in at_scale.items():
        assert p.returncode == 0 and p.stderr == "", (segments, workload, p.stderr)
        assert lines[-1] == {"done": True, "runs": 1, "consistent": True}
        (r,) = lines[:-1]
        assert r["segments"] == segments and r["segment_blocks"] == 64
        assert r["settled"], r
        assert r["gc_runs"] > 0, r


def test_scale_sizes(at_scale):
    (_, lines) = at_scale[(SCALE, "uniform")]
    r = lines[0]
    assert r["segments"] == 1 << 20
    assert r["logical_blocks"] * 4096 > 230 * 2**30
    if SCALE_FULL:
        (_, lines) = at_scale[(SCALE_TIB, "uniform")]
        assert lines[0]["logical_blocks"] * 4096 >= 2**40


def test_scale_waf_matches_smaller_scale(at_scale):
    """The same run at 2^17 segments (same segment size, over-provisioning,
    workload and convergence rule) writes within 3% as much: nothing in
    the policy depends on the size of the device.  It did: the default GC
    batch (1/512 of the segments) made GC's bursts outlast a user head's
    segment on large devices, and 80/20 writes went from 4.34 to 5.28 at
    2^18 segments; DMR_GC_BATCH_MAX bounds it (mutation, the bound
    removed: 5.338 at 2^18 against 5.031 at 2^17, caught)."""
    for (segments, workload), (_, lines) in at_scale.items():
        if segments == SCALE_SMALL:
            continue
        small = at_scale[(SCALE_SMALL, workload)][1][0]
        big = lines[0]
        assert abs(big["waf"] / small["waf"] - 1) < 0.03, (workload, big, small)
        assert abs(big["waf_all"] / small["waf_all"] - 1) < 0.03, (workload, big, small)


def test_wide_units_cost():
    """remap-sim --wide runs the module's writer, GC and map with wide units
    (format 4, remapctl format --wide): 504 blocks a unit, 252 relocated,
    so summaries take more of the segments and GC has less spare.  What
    it costs, 80/20 and uniform at 10% over-provisioning on 1 MiB
    segments: a little more written (1.1-1.5% when it was added), never
    less, and never much more; the map and segment lists stay consistent
    (runs() checks the closing line)."""
    args = (*SMALL, "--workload", "hot80,uniform", "--warmup", "4", "--overwrites", "1")
    narrow = {r["workload"]: r for r in runs(*args)}
    wide = {r["workload"]: r for r in runs(*args, "--wide")}
    for w in ("hot80", "uniform"):
        assert narrow[w]["wide"] is False and wide[w]["wide"] is True
        cost = wide[w]["waf_summaries"] / narrow[w]["waf_summaries"]
        assert 1.003 < cost < 1.03, (w, narrow[w], wide[w])


def test_convergence_rule_waits_for_80_20():
    """80/20 writes after a sequential fill look settled after two
    capacities (the WAF flat within 1%) while the fill's cold data is still
    being rewritten; --warmup auto waits until the fill is forgotten, and
    what it then measures is what a long warm-up (20 capacities) measures.
    Its windows grow with the warm-up (a quarter of it), so a slow drift is
    seen too: before issue 25, 80/20 rose 3.93 to 4.35 from 2 to 40
    capacities, each half capacity within 1% of the one before."""
    args = ("--segments", "4096", "--segment-blocks", "64", "--workload", "hot80",
            "--overwrites", "1")
    (r,) = runs(*args, "--warmup", "auto")
    assert r["settled"] and r["warmup"] > 6, r
    assert r["fill_left"] <= 0.1
    (fixed,) = runs(*args, "--warmup", "2")
    assert "settled" not in fixed
    (long,) = runs(*args, "--warmup", "20")
    assert abs(r["waf"] / long["waf"] - 1) < 0.01, (r["waf"], long["waf"])


# Issue 25 section 3: the goals, settled (--warmup auto, the convergence
# rule above), in the geometry: 4096 segments of 256 blocks, 10%
# over-provisioning.
GOAL_GEOMETRY = ("--segments", "4096", "--segment-blocks", "256", "--op", "10",
                 "--warmup", "auto")


@pytest.fixture(scope="module")
def settled():
    jobs = {"multi": ("--workload", "hot80,hot95,shift80"),
            "noheat": ("--workload", "hot80,hot95", "--no-heat"),
            "oracle": ("--workload", "hot80,hot95", "--oracle"),
            "single": ("--workload", "shift80", "--single-head"),
            "block": ("--workload", "hot80", "--block-birth")}
    with ThreadPoolExecutor(max_workers=2) as ex:
        fut = {k: ex.submit(runs, *GOAL_GEOMETRY, *a) for k, a in jobs.items()}
        return {k: {r["workload"]: r for r in f.result()} for k, f in fut.items()}


def test_settled_95_5(settled):
    """95/5 settled: 1.665 with the write heat (issue 41, goal 4), 1.680
    without it (a map_cache, or before), and the same as a classifier that
    knows each write's class (--oracle).  Issue 25's goal was 1.70; issue
    41's 1.65 is below what the oracle reaches in this layout (1.665: the
    summary blocks and idle segments keep 8% of the spare from GC), which
    is asserted too, as the bound the benchmarking doc reports."""
    r, n, o = (settled[k]["hot95"] for k in ("multi", "noheat", "oracle"))
    assert r["settled"] and r["segments"] == 4096 and r["op"] == 10, r
    assert r["heat"] and not n["heat"] and o["oracle"], (r, n, o)
    assert r["waf"] <= 1.67 and r["waf"] < n["waf"], (r, n)
    assert r["waf"] <= o["waf"] * 1.005, (r, o)
    assert o["waf"] > 1.65 and r["waf"] > r["bound"], (r, o)


def test_settled_80_20(settled):
    """80/20 settled: 3.78 with the write heat, 3.96 without (one
    judgement per write sent 10% of the cold blocks' writes hot), within 2%
    of the oracle's 3.72.  Issue 41's goal, 3.70, is below the oracle in
    this layout; the separated bound at the nominal spare is 3.57."""
    r, n, o = (settled[k]["hot80"] for k in ("multi", "noheat", "oracle"))
    assert all(x["settled"] for x in (r, n, o)), (r, n, o)
    assert r["waf"] <= 3.82 and n["waf"] - r["waf"] >= 0.1, (r, n)
    assert o["waf"] <= r["waf"] <= o["waf"] * 1.03, (r, o)
    assert o["waf"] > 3.70 and o["waf"] > r["bound"] > 3.5, (r, o)
    assert o["hot_share"] == pytest.approx(0.8, abs=0.005), o


def test_block_birth_adds_nothing_to_heat(settled):
    """Issue 25's what-if, GC routing each block of a hot victim by its own
    user-write time (a summary word per block, a format change), settled
    80/20 at 3.85 against the segment births' 3.96.  With writes sorted by
    heat the victims hold few misplaced blocks, and it moves nothing: the
    format stays."""
    r, m = settled["block"]["hot80"], settled["multi"]["hot80"]
    assert r["block_birth"] and r["settled"], r
    assert abs(r["waf"] / m["waf"] - 1) < 0.01, (r, m)


def test_shifting_hot_set_no_worse_than_single_head(settled):
    """80/20 whose hot fifth moves every 2 capacities: the hot/cold heads
    must not cost more than one greedy log (measured 4.53 against 5.59)."""
    m, s = settled["multi"]["shift80"], settled["single"]["shift80"]
    assert m["settled"] and s["settled"] and s["heads"] == "single"
    assert m["waf"] <= s["waf"], (m, s)


def test_timing_fields():
    (r,) = runs("--segments", "1024", "--timing", "--overwrites", "0.5")
    for k in ("ns_per_block", "step_ns", "decide_ns", "decide_greedy_ns",
              "decide_cb_ns", "scan_ns", "elapsed_s", "rss_mib", "gc_steps",
              "greedy_steps"):
        assert k in r, k
    assert r["gc_steps"] >= r["gc_runs"] > 0
    # the choice never scans: far below one scan of the segment table
    assert 0 < r["decide_ns"] < r["step_ns"]


def test_exact_cost_benefit_reference():
    """--exact-cb chooses background victims by a scan of every segment:
    the buckets' choice writes within 3% of it (the docs' table: 0.5% at most)."""
    args = ("--segments", "2048", "--segment-blocks", "64", "--workload",
            "hot80,cold70", "--overwrites", "1")
    b = {r["workload"]: r for r in runs(*args)}
    e = {r["workload"]: r for r in runs(*args, "--exact-cb")}
    for w in b:
        assert b[w] != e[w]
        assert abs(b[w]["waf"] / e[w]["waf"] - 1) < 0.03, (w, b[w], e[w])


def test_recovery_does_not_distort_ages():
    """Issue 24 item 14: a recovery resumes the log's sequence 2^32 on
    (rule 4).  Counting the jump, every segment written before the crash
    looked 2^32 units old: cost-benefit took full old segments first, the
    temperature estimate was fed lifetimes of 2^32, and the hot flags were
    lost at the load.  The 0.2 capacity after a recovery then wrote 3.3x
    (95/5) and 1.5x (80/20) as much as without the crash ("legacy", the
    code before the age clock); with the clock, and the flags and the
    estimate kept by checkpoints, within 2% of no crash at all."""
    args = ("--segments", "1024", "--workload", "hot95,hot80", "--warmup", "4",
            "--overwrites", "0.2")
    base = {r["workload"]: r for r in runs(*args)}
    clock = {r["workload"]: r for r in runs(*args, "--recover", "clock")}
    legacy = {r["workload"]: r for r in runs(*args, "--recover", "legacy")}
    for w in base:
        assert clock[w]["recover"] == "clock" and legacy[w]["recover"] == "legacy"
        assert abs(clock[w]["waf"] / base[w]["waf"] - 1) < 0.02, (w, base[w], clock[w])
        # the distortion is real in this run: the test would see the old code
        assert legacy[w]["waf"] > 1.3 * base[w]["waf"], (w, base[w], legacy[w])


def test_large_head_what_if():
    """Issue 41, goal 1, decided with the simulator first: --large-head
    gives the whole segment-aligned segments of a write segments of their
    own, with no summary in them.  Own-workload segment-sized writes at
    random aligned places then never need GC (the module's layout, a
    summary per unit, spreads each over two segments: WAF 1.36-1.39 here,
    1.50-1.56 measured on the media model); half large sequential and half
    4 KiB random writes in halves of the space (mix50s) write 28% less; in
    the same space (mix50) the random half's scatter is most of it."""
    args = (*SMALL, "--workload", "large,mix50,mix50s", "--warmup", "auto")
    today = {r["workload"]: r for r in runs(*args)}
    large = {r["workload"]: r for r in runs(*args, "--large-head")}
    assert all(r["settled"] for r in (*today.values(), *large.values()))
    t, g = today["large"], large["large"]
    assert g["large_head"] and g["extents"] * 256 == g["user_blocks"], g
    assert g["waf"] == 1.0 and g["gc_runs"] == 0 and g["waf_summaries"] < 1.001, g
    assert t["waf"] > 1.3 and "large_head" not in t, t
    assert large["mix50s"]["waf"] < 0.8 * today["mix50s"]["waf"], (large, today)
    assert large["mix50"]["waf"] <= today["mix50"]["waf"], (large, today)
    assert 0 < large["mix50"]["extents"] * 256 < large["mix50"]["user_blocks"]


def test_read_runs_and_what_ifs_for_goal_2():
    """Issue 41, goal 2: the I/Os of a 1 MiB read at every aligned place
    (runs of consecutive physical blocks, dmr_map_run(), as dmr-read.c
    splits a read).  Sequential writes leave ranges in 2 I/Os (a summary
    between two segments' data); a history of 4 KiB random writes leaves
    almost every block alone.  --gc-sort (GC moves a victim's blocks in
    logical order) changes nothing measurable: a victim's valid blocks
    are a handful of unrelated places.  --defrag (idle rewrites of ranges
    read in more than 4 I/Os, in logical order) brings them to a few I/Os
    at the price of GC's moves meanwhile, and leaves the map consistent
    (the run checks it after)."""
    args = (*SMALL, "--warmup", "1", "--overwrites", "1")
    (seq,) = runs(*args, "--workload", "seq")
    assert seq["read_1m_p50"] == 2 and seq["read_1m_ios"] <= 2.1, seq
    assert "defrag_blocks" not in seq and "gc_sort" not in seq
    (uni,) = runs(*args, "--workload", "uniform")
    (srt,) = runs(*args, "--workload", "uniform", "--gc-sort")
    (dfr,) = runs(*args, "--workload", "uniform", "--defrag", "2,4")
    assert uni["read_1m_ios"] > 250 and uni["read_1m_one"] == 0, uni
    assert srt["gc_sort"] and abs(srt["read_1m_ios"] - uni["read_1m_ios"]) < 2, (srt, uni)
    assert dfr["read_1m_ios"] == uni["read_1m_ios"], (dfr, uni)   # measured before
    assert 0.95 <= dfr["defrag_blocks"] <= 1.0, dfr
    assert dfr["defrag_read_1m_ios"] < 6 and dfr["defrag_read_1m_p50"] <= 4, dfr
    assert dfr["defrag_gc_moved"] > 1, dfr
    p = sim(*args, "--defrag", "1,0", check=False)
    assert p.returncode == 2 and "--defrag" in p.stderr, p.stderr


def test_help():
    p = sim("--help")
    assert p.stdout.startswith("Usage: remap-sim")
    for opt in ("--device-mib", "--segments", "--segment-blocks", "--op",
                "--workload", "--warmup", "--overwrites", "--single-head",
                "--seed", "--gc-low", "--gc-high", "--check", "--json",
                "--verbose", "--settle", "--timing", "--exact-cb", "cold70",
                "--recover", "--no-heat", "--oracle", "--large-head", "mix50s",
                "--gc-sort", "--defrag"):
        assert opt in p.stdout


def test_map_cache_what_if():
    """--map-cache: a cache of every page changes nothing and misses never;
    a quarter of them misses, and checkpoints are forced to clean pages
    (a page dirty for a slot cannot leave), which write more.  Every user
    block and every block GC looks at is a lookup.  The pages leave memory
    for real (dmr_map_evict()): after every request no more are in memory
    than the cache holds, and each one read back is compared with both
    slots' copies; --check reads every page back and checks the map."""
    args = [*SMALL, "--workload", "hot80", "--warmup", "1", "--overwrites", "1"]
    (base,) = runs(*args)
    (full,) = runs(*args, "--map-cache", "100")
    (quarter,) = runs(*args, "--map-cache", "25", "--check", "2000")
    assert full["map_misses_per_block"] == 0 and full["map_forced_ckpts"] == 0
    assert full["map_evictions_per_block"] == 0
    assert full["map_pages_max"] == full["map_pages"]
    assert 0 < quarter["map_pages_max"] <= quarter["map_pages"]
    # every page read back was evicted first; pages left as often as they came
    assert quarter["map_evictions_per_block"] == \
        pytest.approx(quarter["map_misses_per_block"], rel=0.01)
    assert full["map_hit"] == 1 and full["map_pages"] * 1024 >= full["logical_blocks"]
    assert (full["waf"], full["waf_all"], full["checkpoints"]) == \
        (base["waf"], base["waf_all"], base["checkpoints"])
    assert full["map_lookups_per_block"] >= full["waf"]
    assert quarter["map_pages"] == -(-full["map_pages"] * 25 // 100)
    assert 0 < quarter["map_misses_per_block"] < quarter["map_lookups_per_block"]
    assert quarter["map_forced_ckpts"] > 0
    assert quarter["waf_all"] > base["waf_all"]
    # --gc-bitmap: GC looks up only the blocks it moves: a lookup per user
    # block and per block moved, and fewer misses
    (bits,) = runs(*args, "--map-cache", "25", "--gc-bitmap")
    assert bits["gc_bitmap"] is True and quarter["gc_bitmap"] is False
    assert bits["map_lookups_per_block"] == pytest.approx(bits["waf"], abs=1e-3)
    assert bits["map_misses_per_block"] < quarter["map_misses_per_block"]
