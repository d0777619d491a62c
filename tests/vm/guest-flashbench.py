#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, flash part: the papers' bm-flash grid on the flash model.

Seed 000 (EasyCo, 2007) measured Mtron 7025 PRO flash SSDs with bm-flash,
bare and under the MFT remapping driver, alone and in a 4-drive md RAID-5.
This script repeats that experiment on dm-flashsim (tests/flashsim,
Documentation/dm-remap-flashsim.rst), a DM target whose completion times
follow a flash translation layer, and prints the papers' figures beside
ours.

Configurations (DMR_FLASH_CONFIGS):

  block-1   one block-mapped drive (the Mtron profile: a random write
            costs an erase-block read-modify-write, about 8 ms)
  block-r5  md RAID-5 (64 KiB chunk) over four such drives
  page-1    one page-mapped drive (a modern SSD: its own spare area and
            greedy GC; fast fresh, slower full)
  page-r5   md RAID-5 (64 KiB chunk) over four page-mapped drives: the
            setting of seed 001 (EasyCo's ESS on 16 Samsung 830 in RAID-5,
            2012), with its grid: 4 KiB and 64 KiB at 1, 10 and 100
            outstanding (bm-flash threads), whatever DMR_FLASH_BS and
            DMR_FLASH_THREADS say; its figures beside ours

Each has two identical stacks, so that bare and remapped exist at once:
A, the bare drive(s) (flashsim over brd ramdisks; RAID-5 over them), and
B, the same with dm-remap on top (remapctl format, default options except
a segment of whole erase blocks on every member for the RAID-5 configs).

Phases, each in DMR_FLASH_RUNS rounds (3) with the order of the devices
rotating from round to round; figures are medians [min-max]:

  fresh     every write cell starts on a trimmed device (blkdiscard of the
            whole device: dm-remap then has every segment free, a
            page-mapped drive an empty map), and stops after at most a
            quarter of the capacity (bm-flash --max-bytes), so that no GC is
            needed; then a sequential fill, and the read cells (reads of
            data, not of unmapped blocks)
  own       steady state as SNIA's PTS takes it: each block size's cells
            after preconditioning with that block size's own random writes
            (chunks of half the capacity, fio QD8) until the write
            amplification of a chunk is within 3% of the one before (at
            most DMR_FLASH_OWN_MAX, 8, capacities; a warning then): B by
            dm-remap's status, A (page-mapped) by the drive's own counters
  steady    A and B filled sequentially, then DMR_FLASH_PRECONDITION (2)
            times the capacity of random 4 KiB writes (fio, QD32) on B and,
            page-mapped, on A (a block-mapped drive keeps no state but its
            open erase blocks: random writes cost it the same whatever came
            before, so A is only filled); then the write cells, each
            followed on B by a wait for GC idle (its write amplification
            includes the GC it caused), and the read cells

The cap.  Under TCG every instruction is emulated, so dm-remap's own CPU
cost may cap what it reaches over a drive.  After each phase, the members'
flashsim tables are replaced by dm-linear ones over the same ramdisks (no
media cost) and 4 KiB (1 to 40 threads) and 1 MiB random writes are run again
on bare and remapped: the remapped figure there is the most this emulator
lets dm-remap do, and is printed next to the same cell's figure over the
drives.  The 4 KiB cells at 1, 2, 4, 8, 10, 16 and 40 threads also show
issue 25's "more writers must not mean fewer writes" without media.  (Reloading
a flashsim table starts a fresh model; it is loaded again afterwards.)

Cells: bm-flash (tools/bm-flash: blocking O_DIRECT pread/pwrite at random
aligned offsets), one block size, thread count and operation per run, over
the same region (B's logical capacity) on both devices.  The papers'
grid is 512 B to 1 MiB, 1, 10 and 40 threads (40 only up to 128 KiB, as
in their tables), random writes then random reads; by default five of its
block sizes run (the whole grid, PAPERS_BS, takes hours under TCG).

Goals (issue 25, section 4): 4 KiB random writes >= 100x bare on the
block-mapped single drive and RAID-5 when fresh, >= 20x in steady state;
reads >= 0.95x bare; large writes (>= 256 KiB) >= 0.8x bare; on the
page-mapped drive no cell below 0.9x bare.  Issue 41 goal 7 (page-r5): 4 KiB
random writes at 1, 10 and 100 outstanding ahead of bare RAID-5 (>= 1x) in
every phase, seed 001's ESS / bare ratio beside; 4 KiB reads >= 0.9x bare.

Results: $DMR_OUT/flash-summary.txt (also printed) and flash-bench.json.

Environment (defaults in brackets):
  DMR_FLASH_CONFIGS [block-1,block-r5,page-1,page-r5]
  DMR_FLASH_RUNS [3]            rounds per phase
  DMR_FLASH_SECONDS [1]         seconds per cell (bm-flash --seconds)
  DMR_FLASH_BS [4K,16K,64K,256K,1M]   (the papers: 512,4K,8K,...,512K,1M)
  DMR_FLASH_THREADS [1,10,40]   (more than 10 only for block sizes up
                                to 128K; page-r5: its own grid)
  DMR_FLASH_OPS [write,read]
  DMR_FLASH_PHASES [fresh,steady,own]
  DMR_FLASH_OWN_MAX [8]         own: most capacities of preconditioning
  DMR_FLASH_MIB [512]           bytes of ramdisk behind each drive
                                (RAID-5: each member a third of it, so
                                the arrays hold the same data)
  DMR_FLASH_PRECONDITION [2]    steady: random 4 KiB writes, x capacity
  DMR_FLASH_GC_WAIT [60]        seconds to wait for GC idle after a
                                remapped write cell
  DMR_FLASH_CAP [1]             0: no cap cells
  DMR_FLASH_OVERPROVISION []    remapctl format --overprovision PCT for B
                                (empty: the format's default)
"""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MiB = 1 << 20


def _load(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


gb = _load("guest_bench", os.path.join(HERE, "guest-bench.py"))
compare = gb.compare
Fail = gb.Fail
sh = gb.sh
say = gb.say

NAME = "dmrflash"                       # the dm-remap device
MD = {"A": "/dev/md/dmrflash-a", "B": "/dev/md/dmrflash-b"}
DEVICES = ("bare", "remap")
LABEL = {"bare": "bare", "remap": "remapped"}
CONFIGS = {
    "block-1": {"mode": "block", "members": 1,
                "label": "one block-mapped flash drive (Mtron 7025 PRO profile)"},
    "block-r5": {"mode": "block", "members": 4,
                 "label": "md RAID-5 (64K chunk) over four block-mapped drives"},
    "page-1": {"mode": "page", "members": 1,
               "label": "one page-mapped flash drive (modern SSD profile, 7% spare)"},
    # issue 41 goal 7: seed 001's setting and grid (its Q 1/10/100)
    "page-r5": {"mode": "page", "members": 4,
                "label": "md RAID-5 (64K chunk) over four page-mapped drives (the ESS "
                         "setting: modern SSD profile, 7% spare)",
                "sizes": (4096, 65536), "threads": (1, 10, 100)},
}
DEFAULT_CONFIGS = "block-1,block-r5,page-1,page-r5"
PAPERS_BS = "512,4K,8K,16K,32K,64K,128K,256K,512K,1M"
DEFAULT_BS = "4K,16K,64K,256K,1M"     # the whole grid takes hours under TCG
LARGE = 256 * 1024                      # "large writes": this size and up
FORTY_MAX = 128 * 1024                  # more than 10 threads only up to this size
CAP_THREADS = (1, 2, 4, 8, 10, 16, 40)    # also issue 25 2b's scaling, fresh and steady

# Seed 000's bm-flash tables, IOPS: {(op, bs KiB or 0.5, threads): iops};
# "bare" the drives alone, "mft" under EasyCo's MFT driver.
_K = [0.5, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def _paper(rows, threads=(1, 10, 40)):
    """rows: {bs: (r1, r10, r40, w1, w10, w40)} with None for the blanks
    (seed 001: threads (1, 10, 100))."""
    out = {}
    for bs, v in rows.items():
        for i, t in enumerate(threads):
            if v[i] is not None:
                out[("read", int(bs * 1024), t)] = v[i]
            if v[3 + i] is not None:
                out[("write", int(bs * 1024), t)] = v[3 + i]
    return out


PAPERS = {
    "block-1": {
        "source": "seed 000: Mtron PRO series (7025), Highpoint, and \"Single Mtron "
                  "PRO series drive with MFT\"",
        "bare": _paper({
            0.5: (14422, 20751, 20756, 122, 121, None),
            4: (10337, 13223, 13226, 123, 123, None),
            8: (7851, 9417, 9422, 124, 124, None),
            16: (5168, 5839, 5842, 120, 128, None),
            32: (3075, 3316, 3319, 125, 127, None),
            64: (1696, 1779, 1782, 121, 124, None),
            128: (876, 896, 899, 115, 115, None),
            256: (444, 450, None, 100, 101, None),
            512: (225, 226, None, 88, None, None),
            1024: (113, 113, None, 70, None, None)}),
        "mft": _paper({
            4: (10134, 13294, 13297, 14987, 16180, 16087),
            8: (7689, 9452, 9457, 7992, 8717, 8789),
            16: (5095, 5847, 5850, 4293, 4496, 4539),
            32: (3048, 3318, 3322, 2228, 2269, 2374),
            64: (1684, 1780, 1783, 1116, 1170, 1230),
            128: (871, 896, 899, 563, 590, 617),
            256: (442, 450, None, 281, 306, None),
            512: (224, 226, None, 138, 154, None),
            1024: (113, 113, None, 70, None, None)}),
    },
    "block-r5": {
        "source": "seed 000: \"4 Drive RAID-5 Arrays\" (Linux md) and \"Four Mtron PRO "
                  "series drives configured for RAID-5 with MFT\"",
        "bare": _paper({
            4: (10004, 41859, 50569, 248, 254, None),
            8: (7669, 31254, 36110, 254, 259, None),
            16: (5089, 19539, 22414, 249, 255, None),
            32: (3009, 11211, 12734, 250, 253, None),
            64: (1690, 6032, 6861, 245, 246, None),
            128: (1656, 3359, 3493, 182, 181, None),
            256: (1555, 1776, 1778, 121, 123, None),
            512: (806, 892, 895, 106, 107, None),
            1024: (416, 448, None, 92, None, None)}),
        "mft": _paper({
            4: (9768, 39689, 49952, 29500, 29618, 29698),
            8: (7419, 28635, 32830, 17856, 16293, 16099),
            16: (4953, 18122, 20309, 9655, 8522, 8315),
            32: (3091, 10470, 11657, 4847, 4257, 4336),
            64: (1942, 5772, 6336, 2663, 2181, 2174),
            128: (1445, 3185, 3348, 1158, 1093, 1153),
            256: (1172, 1753, 1766, 635, 552, 640),
            512: (638, 882, 889, 264, 273, None),
            1024: (330, 444, None, 129, 151, None)}),
    },
    # seed 001's "Raid-5 Bare" and "Raid-5 w/ ESS" tables (16 Samsung 830,
    # Q = bm-flash threads 1, 10, 100); "mft" is the remapping driver's
    "page-r5": {
        "source": "seed 001: 16 Samsung 830 in Linux md RAID-5, \"Raid-5 Bare\" and "
                  "\"Raid-5 w/ ESS\" (Q 1/10/100); 16 drives there, 4 here",
        "driver": "ESS",
        "bare": _paper({
            4: (5845, 54833, 431284, 1003, 1726, 1825),
            8: (4651, 43918, 351337, 826, 1389, 1384),
            16: (4246, 39606, 264558, 608, 927, 428),
            32: (3536, 32409, 164261, 438, 629, 217),
            64: (2593, 23803, 91366, 283, 392, 114),
            128: (2502, 20549, 50597, 227, 285, 68),
            256: (2395, 15742, 25691, 149, 187, 44),
            512: (2226, 10488, 8878, 84, 105, 34),
            1024: (590, 4063, 4307, 58, 72, 26)}, (1, 10, 100)),
        "mft": _paper({
            4: (5689, 53019, 309397, 344280, 1146965, 1115503),
            8: (5272, 47864, 232264, 279040, 554657, 570685),
            16: (3878, 35332, 214633, 200681, 285289, 285748),
            32: (3282, 29433, 139786, 124841, 143029, 142696),
            64: (2523, 22584, 84244, 70831, 71664, 71216),
            128: (2388, 18908, 48547, 35801, 35519, 35771),
            256: (2212, 10864, 21392, 17845, 17822, 17891),
            512: (1911, 8595, 9715, 8934, 8863, 8939),
            1024: (1287, 2953, 4446, 4464, 4496, 4491)}, (1, 10, 100)),
    },
}


# ---------------------------------------------------------------- pure parts

def parse_size(text):
    """'512', '4K', '1M' -> bytes."""
    t = text.strip().upper()
    mult = {"K": 1024, "M": MiB}.get(t[-1:], 1)
    n = int(t[:-1] if mult > 1 else t)
    if n <= 0:
        raise ValueError(f"bad block size '{text}'")
    return n * mult


def bs_label(bs):
    if bs >= MiB and bs % MiB == 0:
        return f"{bs // MiB}M"
    if bs >= 1024 and bs % 1024 == 0:
        return f"{bs // 1024}K"
    return f"{bs}B"


def grid(sizes, threads, ops):
    """The cells of a phase, in the order they run: writes then reads (as
    the ops list gives them), block sizes ascending, threads ascending;
    more than 10 threads only up to FORTY_MAX, as in seed 000's tables."""
    cells = []
    for op in ops:
        for bs in sorted(sizes):
            for t in sorted(threads):
                if t > 10 and bs > FORTY_MAX:
                    continue
                cells.append({"id": f"{op}-{bs_label(bs).lower()}-t{t}", "op": op,
                              "bs": bs, "threads": t})
    return cells


def settled(wafs, tol=0.03):
    """The own-workload preconditioning's convergence rule: the write
    amplification of the last chunk within tol (relative) of the chunk
    before it.  The first chunk after a change of workload is a transition
    and never counts alone."""
    if len(wafs) < 2 or wafs[-1] is None or wafs[-2] is None:
        return False
    return abs(wafs[-1] - wafs[-2]) <= tol * max(wafs[-2], 1e-9)


def table_params(table):
    """'1:0 block page_kib=4 ... spare=7' (a flashsim table's arguments) ->
    {key: int}."""
    return {k: int(v) for k, v in (w.split("=", 1) for w in table.split() if "=" in w)}


def steady_ceiling(params, members, waf):
    """The most 4 KiB random writes per second a log over these drives can
    take in steady state at write amplification waf, by the model's own
    bandwidths: every user block costs waf blocks programmed (itself and
    GC's copies) and, since GC reads each victim whole and gets 1/waf of
    it back, waf blocks read.  RAID-5 over n drives: full-stripe writes
    program n - 1 drives' worth of data at once, victim reads use all n.
    Per-command times (read_us, write_us) and erase-block merges are left
    out, so this is an upper bound.  None for page-mapped drives (their
    own GC comes on top) or without a WAF."""
    if not waf or params.get("erase_kib") is None or members < 1:
        return None
    data = max(members - 1, 1) if members > 1 else 1
    prog = params["prog_mibs"] * MiB * data
    read = params["read_mibs"] * MiB * members
    per_block = waf * 4096 * (1 / prog + 1 / read)
    return 1 / per_block


def cap_cells(threads=()):
    """4 KiB random writes at CAP_THREADS and the configuration's own
    thread counts (page-r5: 100), 1 MiB at 1 and 10."""
    return ([{"id": f"write-4k-t{t}", "op": "write", "bs": 4096, "threads": t}
             for t in sorted(set(CAP_THREADS) | set(threads))] +
            [{"id": f"write-1m-t{t}", "op": "write", "bs": MiB, "threads": t}
             for t in (1, 10)])


def median_of(cell_res, dev):
    a = (cell_res or {}).get(dev, {}).get("iops")
    return a["median"] if a else None


def ratio_of(cell_res):
    b, r = median_of(cell_res, "bare"), median_of(cell_res, "remap")
    return gb.ratio(r, b)


def paper_ratio(config, op, bs, t):
    p = PAPERS.get(config)
    if not p:
        return None
    key = (op, bs, t)
    b, m = p["bare"].get(key), p["mft"].get(key)
    return m / b if b and m else None


def _worst(cands):
    """cands: [(ratio, label)] -> (lowest ratio, its label, all labels
    with their ratios as text); ratios None are left out."""
    c = [(v, lab) for v, lab in cands if v is not None]
    if not c:
        return None, None, ""
    v, lab = min(c)
    return v, lab, ", ".join(f"{lab2} {gb.fmt_x(v2)}" for v2, lab2 in c)


def evaluate_goals(configs):
    """configs: [{name, phases: {phase: {cells: {id: cell result}, cap:
    {...}}}}] -> goal rows {measure, goal, measured, status, values}."""
    by = {c["name"]: c for c in configs}
    rows = []

    def phase_cells(name, phase):
        return by.get(name, {}).get("phases", {}).get(phase, {}).get("cells", {})

    def add(measure, goal, thr, cands, note=""):
        v, lab, text = _worst(cands)
        row = {"measure": measure, "goal": goal, "values": [x for x, _ in cands
                                                            if x is not None]}
        if v is None:
            row.update(measured="not measured", status="not measured")
        else:
            row.update(measured=f"lowest {gb.fmt_x(v)} ({lab}); {text}" + note,
                       status="met" if v >= thr else "missed")
        rows.append(row)

    def cap_note(name, bs, phases=("fresh", "steady")):
        caps = []
        for phase in phases:
            cap = by.get(name, {}).get("phases", {}).get(phase, {}).get("cap", {})
            caps += [f"{'' if len(phases) == 1 else phase + ' '}{cid.split('-')[-1]} "
                     f"{median_of(c, 'remap'):.0f}" for cid, c in cap.items()
                     if cid.split("-")[1] == bs and median_of(c, "remap")]
        return ("; the emulator's cap (remapped IOPS with no media cost): "
                + ", ".join(caps)) if caps else ""

    def ceiling_note(name, cells, large=False):
        """The model's media ceiling at the cells' measured WAF, and what
        it is as a ratio to the bare drive(s): 4 KiB write cells, or
        (large) those of LARGE and more, whose ceiling in IOPS is the same
        bandwidth in fewer, larger writes.  cells: [(label, cell)]."""
        cfg = by.get(name, {})
        table = cfg.get("geometry", {}).get("member_table")
        out = []
        for lab, c in cells:
            waf = ((c.get("remap") or {}).get("waf") or {}).get("median")
            bare = median_of(c, "bare")
            if (c["op"] != "write" or not table or not waf or
                    (c["bs"] < LARGE if large else c["bs"] != 4096)):
                continue
            ceil = steady_ceiling(table_params(table), CONFIGS[name]["members"], waf)
            if ceil:
                ceil *= 4096 / c["bs"]
                out.append(f"{lab} {ceil:.0f} at WAF {waf:.2f}"
                           + (f" ({gb.fmt_x(ceil / bare)} bare)" if bare else ""))
        return ("; the drives' bandwidth ceiling: " + ", ".join(out)) if out else ""

    for name in ("block-1", "block-r5"):
        for phase, thr in (("fresh", 100.0), ("steady", 20.0), ("own", 20.0)):
            cells = phase_cells(name, phase)
            cands = [(ratio_of(c), cid.split("-")[-1]) for cid, c in cells.items()
                     if c["op"] == "write" and c["bs"] == 4096]
            if phase == "own" and not cells:
                continue
            note = cap_note(name, "4k", (phase,))
            if phase != "fresh":
                note += ceiling_note(name, [(cid.split("-")[-1], c)
                                            for cid, c in cells.items()])
            add(f"{name} {phase}: 4K random write, remapped / bare",
                f">= {thr:.0f}x", thr, cands, note)
    for name in ("block-1", "block-r5"):
        cands, large = [], []
        for phase in ("fresh", "steady", "own"):
            for cid, c in phase_cells(name, phase).items():
                if c["op"] == "read":
                    cands.append((ratio_of(c), f"{phase} {cid}"))
                elif c["bs"] >= LARGE:
                    large.append((ratio_of(c), f"{phase} {cid}"))
        add(f"{name}: random reads, every cell", ">= 0.95x", 0.95, cands)
        after = [(f"{phase} {cid}", c) for phase in ("steady", "own")
                 for cid, c in phase_cells(name, phase).items()]
        add(f"{name}: random writes >= 256K, every cell", ">= 0.80x", 0.80, large,
            cap_note(name, "1m") + ceiling_note(name, after, large=True))
    # issue 25 2b: more writers must not mean fewer writes; over the
    # members as dm-linear (no media cost), fresh and steady
    cands = []
    for name in ("block-1", "block-r5", "page-1"):
        for phase in ("fresh", "steady"):
            cap = by.get(name, {}).get("phases", {}).get(phase, {}).get("cap", {})
            one = median_of(cap.get("write-4k-t1"), "remap")
            for t in (8, 16):
                cands.append((gb.ratio(median_of(cap.get(f"write-4k-t{t}"), "remap"), one),
                              f"{name} {phase} {t} thr"))
    add("4K random write, no media cost: remapped IOPS at 8 and 16 threads / 1 thread",
        ">= 1.00x", 1.0, cands)
    cands = []
    for phase in ("fresh", "steady", "own"):
        for cid, c in phase_cells("page-1", phase).items():
            cands.append((ratio_of(c), f"{phase} {cid}"))
    add("page-1: every cell", ">= 0.90x", 0.90, cands)
    # issue 41 goal 7: the ESS setting, seed 001's ratios beside
    paper = ", ".join(f"t{t} {gb.fmt_x(paper_ratio('page-r5', 'write', 4096, t))}"
                      for t in CONFIGS["page-r5"]["threads"])
    for phase in ("fresh", "steady", "own"):
        cells = phase_cells("page-r5", phase)
        if not cells:
            continue
        cands = [(ratio_of(c), cid.split("-")[-1]) for cid, c in cells.items()
                 if c["op"] == "write" and c["bs"] == 4096]
        add(f"page-r5 {phase}: 4K random write at 1/10/100 outstanding, remapped / bare",
            ">= 1.00x", 1.0, cands, cap_note("page-r5", "4k", (phase,))
            + f"; seed 001 (ESS / bare RAID-5, 16 drives): {paper}")
    cands = [(ratio_of(c), f"{phase} {cid}") for phase in ("fresh", "steady", "own")
             for cid, c in phase_cells("page-r5", phase).items()
             if c["op"] == "read" and c["bs"] == 4096]
    add("page-r5: 4K random reads, every cell", ">= 0.90x", 0.90, cands)
    return rows


def _agg_runs(runs):
    """{dev: [metrics or None per round]} -> {dev: {metric: aggregate}}."""
    out = {}
    for dev, rs in runs.items():
        keys = sorted({k for r in rs if r for k, v in r.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)})
        out[dev] = {k: gb.aggregate([r.get(k) if r else None for r in rs]) for k in keys}
    return out


def aggregate_cell(cell, runs):
    res = {"op": cell["op"], "bs": cell["bs"], "threads": cell["threads"]}
    res.update(_agg_runs(runs))
    return res


def fmt_iops(a):
    return gb.fmt_agg(a, "iops")


def phase_rows(config, cells, cap):
    """Table rows of one phase: ours beside the papers'."""
    p = PAPERS.get(config)
    rows = []
    for cid, c in cells.items():
        key = (c["op"], c["bs"], c["threads"])
        bare = c.get("bare", {})
        rem = c.get("remap", {})
        mib = (rem.get("bw_mibs") or {}).get("median")
        waf = (rem.get("waf") or {}).get("median")
        capc = cap.get(cid) if c["op"] == "write" else None
        merges = "/".join("-" if (x.get("merges") or {}).get("median") is None
                          else f"{x['merges']['median']:.0f}" for x in (bare, rem))
        row = [c["op"], bs_label(c["bs"]), str(c["threads"]), fmt_iops(bare.get("iops")),
               fmt_iops(rem.get("iops")), "-" if mib is None else f"{mib:.1f}",
               gb.fmt_x(ratio_of(c)),
               "" if waf is None else f"{waf:.2f}", merges,
               f"{median_of(capc, 'remap'):.0f}" if median_of(capc, "remap") else ""]
        if p:
            pb, pm = p["bare"].get(key), p["mft"].get(key)
            row += ["-" if pb is None else str(pb), "-" if pm is None else str(pm),
                    gb.fmt_x(paper_ratio(config, *key))]
        rows.append(row)
    return rows


def summary_text(res):
    lines = ["==== flash model: the papers' bm-flash grid on dm-flashsim "
             f"({res.get('date', '')}, kernel {res.get('kernel', '')})",
             f"  {res['params']['runs']} rounds per phase, {res['params']['seconds']} s per "
             "cell, figures median [min-max] IOPS; ratio = median remapped / median bare",
             "", "goals (issue 25, section 4):"]
    lines += gb.goals_lines(res.get("goals", []))
    for cfg in res["configs"]:
        lines += ["", f"==== {cfg['name']}: {cfg['label']}"]
        g = cfg.get("geometry")
        if g:
            lines.append(f"  region {g['region_bytes'] // MiB} MiB; dm-remap segment "
                         f"{g['segment_bytes'] // 1024} KiB, {g['segments']} segments; "
                         f"members: {g['member_table']}")
        p = PAPERS.get(cfg["name"])
        if p:
            lines.append(f"  papers: {p['source']}")
        for phase, ph in cfg.get("phases", {}).items():
            lines += ["", f"  {phase}: {ph.get('method', '')}"]
            head = ["op", "bs", "thr", "bare IOPS", "remapped IOPS", "rem MiB/s", "ratio",
                    "WAF", "merges b/r", "cap"]
            if p:
                head += ["paper bare", f"paper {p.get('driver', 'MFT')}", "paper ratio"]
            lines += gb._table(phase_rows(cfg["name"], ph.get("cells", {}),
                                          ph.get("cap", {})), head)
            lines.append("  merges b/r: the drives' erase-block merges during the cell "
                         "(median), bare / remapped")
            fl = ph.get("flash")
            if fl:
                lines.append("  the drives' own counters over the phase's cells (sum of "
                             "members): " + "; ".join(
                                 f"{LABEL[d]}: {v['host_pages']} pages written, "
                                 f"{v['rmws']} erase-block merges, {v['gc_copies']} GC "
                                 f"copies, flash WAF {v['flash_waf']}"
                                 for d, v in fl.items()))
            if ph.get("cap"):
                lines.append("  cap: the members' flashsim replaced by dm-linear (no media "
                             "cost): " + "; ".join(
                                 f"{cid} bare {median_of(c, 'bare') or 0:.0f} / remapped "
                                 f"{median_of(c, 'remap') or 0:.0f}"
                                 for cid, c in ph["cap"].items()))
        for w in cfg.get("warnings", []):
            lines.append(f"  warning: {w}")
        if cfg.get("failure"):
            lines.append(f"  FAILED: {cfg['failure']}")
    if res.get("failure"):
        lines += ["", f"flash bench FAILED: {res['failure']}"]
    return "\n".join(lines)


def flash_counters(texts):
    """dmsetup status lines of flashsim devices -> summed counters."""
    keys = ("reads", "writes", "discards", "flushes", "host_pages", "flash_pages", "rmws",
            "gc_copies", "erases", "busy_us")
    tot = dict.fromkeys(keys, 0)
    for t in texts:
        f = t.split()
        i = f.index("flashsim")
        for k, v in zip(keys, f[i + 2:i + 2 + len(keys)]):
            tot[k] += int(v)
    return tot


def counters_delta(a, b):
    d = {k: b[k] - a[k] for k in a}
    d["flash_waf"] = round(d["flash_pages"] / d["host_pages"], 2) if d["host_pages"] else None
    return d


# ---------------------------------------------------------------- the rig

class FlashBench:
    def __init__(self, env):
        self.env = env
        self.configs = [c for c in env.get("DMR_FLASH_CONFIGS",
                                           DEFAULT_CONFIGS).split(",") if c]
        for c in self.configs:
            if c not in CONFIGS:
                raise Fail(f"DMR_FLASH_CONFIGS: unknown configuration '{c}'")
        self.runs = int(env.get("DMR_FLASH_RUNS", "3"))
        self.seconds = float(env.get("DMR_FLASH_SECONDS", "1"))
        self.sizes = [parse_size(s) for s in env.get("DMR_FLASH_BS", DEFAULT_BS).split(",")]
        self.threads = [int(t) for t in env.get("DMR_FLASH_THREADS", "1,10,40").split(",")]
        self.ops = [o for o in env.get("DMR_FLASH_OPS", "write,read").split(",") if o]
        self.phases = [p for p in env.get("DMR_FLASH_PHASES",
                                          "fresh,steady,own").split(",") if p]
        self.own_max = float(env.get("DMR_FLASH_OWN_MAX", "8"))
        self.mib = int(env.get("DMR_FLASH_MIB", "512"))
        self.precondition = float(env.get("DMR_FLASH_PRECONDITION", "2"))
        self.gc_wait = float(env.get("DMR_FLASH_GC_WAIT", "60"))
        self.cap = env.get("DMR_FLASH_CAP", "1") != "0"
        self.op = env.get("DMR_FLASH_OVERPROVISION", "")
        if self.op and not self.op.isdigit():
            raise Fail(f"DMR_FLASH_OVERPROVISION: a percentage, not '{self.op}'")
        self.out = env.get("DMR_OUT", "/tmp")
        if self.runs < 1 or self.seconds <= 0:
            raise Fail("DMR_FLASH_RUNS must be >= 1 and DMR_FLASH_SECONDS > 0")
        if set(self.ops) - {"write", "read"} or set(self.phases) - {"fresh", "steady", "own"}:
            raise Fail("DMR_FLASH_OPS: write,read; DMR_FLASH_PHASES: fresh,steady,own")
        self.remapctl = os.path.join(REPO, "tools", "remapctl")
        self.bmflash = os.path.join(REPO, "tools", "bm-flash")
        self.res = {"schema": "dm-remap-flashbench/1", "kernel": os.uname().release,
                    "date": time.strftime("%Y-%m-%d %H:%M"),
                    "params": {"runs": self.runs, "seconds": self.seconds,
                               "sizes": self.sizes, "threads": self.threads,
                               "ops": self.ops, "phases": self.phases, "mib": self.mib,
                               "precondition": self.precondition, "gc_wait": self.gc_wait,
                               "cap": self.cap, "configs": self.configs,
                               "own_max": self.own_max},
                    "configs": [], "goals": []}

    # ------------------------------------------------------------ devices

    def flashsim_table(self, ram, mode):
        return f"0 {sh('blockdev', '--getsz', ram).strip()} flashsim {ram} {mode}"

    def linear_table(self, ram):
        return f"0 {sh('blockdev', '--getsz', ram).strip()} linear {ram} 0"

    def make_stack(self, rig, side, spec, rams):
        """The drives of one side (dm-flashsim over ramdisks), and the
        device the cells run on: the drive, or md RAID-5 over them."""
        names = []
        for i, ram in enumerate(rams):
            name = f"dmrf{side.lower()}{i}"
            rig.push(f"dmsetup remove {name}", lambda n=name: gb.dm_remove(n))
            sh("dmsetup", "create", name, "--table", self.flashsim_table(ram, spec["mode"]))
            names.append(name)
        gb.settle()
        paths = [f"/dev/mapper/{n}" for n in names]
        for p in paths:
            gb.wait_path(p)
        dev = paths[0] if len(paths) == 1 else gb.make_md(rig, MD[side], paths)
        return dev, names

    def reload_members(self, names, rams, table_fn):
        for n, ram in zip(names, rams):
            sh("dmsetup", "suspend", n)
            try:
                sh("dmsetup", "reload", n, "--table", table_fn(ram))
            finally:
                sh("dmsetup", "resume", n)

    def counters(self, names):
        return flash_counters([sh("dmsetup", "status", n) for n in names])

    # ------------------------------------------------------------ cells

    def bm_flash(self, cell, dev, region, rnd, max_bytes=0):
        cmd = [self.bmflash, "--bs", str(cell["bs"]), "--threads", str(cell["threads"]),
               "--seconds", f"{self.seconds:g}", "--size", str(region), "--json",
               "--seed", str(rnd + 1), "--force",
               "--write-only" if cell["op"] == "write" else "--read-only"]
        if max_bytes:
            cmd += ["--max-bytes", str(max_bytes)]
        out = sh(*cmd, dev, timeout=self.seconds * 4 + 300)
        r = json.loads(out)["results"][0]
        return {"iops": r["iops"], "bw_mibs": r["bw_bytes"] / MiB, "ios": r["ios"]}

    def discard(self, st, dev, what):
        """Trim all of dev (fresh write cells).  md RAID-5 passes discards
        only with raid456's devices_handle_discard_safely; a block-mapped
        drive keeps no state a trim would change, so a refusal there is
        recorded once, not fatal."""
        p = subprocess.run(["blkdiscard", "-f", dev], capture_output=True, text=True)
        if p.returncode:
            msg = f"blkdiscard {what} refused: {p.stderr.strip()[:200]}"
            if msg not in st["warnings"]:
                st["warnings"].append(msg)
            return False
        return True

    def run_cell(self, st, cell, d, rnd, fresh):
        """One cell on one device; None where the block size is below the
        device's logical block size (dm-remap's is 4 KiB: like MFT in the
        papers' tables, it has no 512-byte row)."""
        dev, region, remap = st["paths"][d], st["region"], st["remap"]
        if cell["bs"] < st["lbs"][d]:
            return None
        # flushed statuses (compare.Remap.flush()): the delta counts every
        # block the cell sent, none it left in an open unit
        before = remap.flushed_status() if d == "remap" else None
        if fresh and cell["op"] == "write":
            if self.discard(st, dev, f"of {LABEL[d]}") and d == "remap":
                # the flushes free what the discard emptied, and dm-remap
                # discards those segments below: the cell starts after that
                remap.wait_gc_idle(self.gc_wait)
                if not remap.wait_quiet(self.gc_wait):
                    st["cfg"]["warnings"].append(
                        f"{cell['id']}: the device below B still busy {self.gc_wait:g} s "
                        "after the discard")
                before = remap.flushed_status()
        names = None if st.get("cap_on") else st["names"]["A" if d == "bare" else "B"]
        c0 = self.counters(names) if names else None
        m = self.bm_flash(cell, dev, region, rnd,
                          max_bytes=region // 4 if fresh and cell["op"] == "write" else 0)
        if names:
            # what the drives did during the cell: erase-block merges and
            # media busy time (the sum over the members), e.g. a
            # checkpoint's writes stealing a read cell's media time
            dc = counters_delta(c0, self.counters(names))
            m["merges"] = dc["rmws"]
            m["media_busy_ms"] = dc["busy_us"] / 1000
        if d == "remap":
            stat = remap.check(remap.flushed_status())
            if cell["op"] == "write":
                if self.gc_wait > 0 and stat["gc_state"] != "idle":
                    stat, _ = remap.wait_gc_idle(self.gc_wait)
                delta = compare.status_delta(before, stat)
                seg_blocks = stat["segment_bytes"] // 4096
                if delta["user_blocks"] >= gb.WAF_MIN_SEGMENTS * seg_blocks:
                    m["waf"] = delta["waf"]
        return m

    def rounds(self, st, cells, fresh, between=None):
        """Every cell on both devices, rotating, for self.runs rounds;
        between(rnd): what runs after a round's write cells (the fresh
        phase's fill before its reads)."""
        runs = {c["id"]: {d: [None] * self.runs for d in DEVICES} for c in cells}
        for rnd in range(self.runs):
            order = gb.rotation(DEVICES, rnd)
            say(f"  round {rnd + 1}/{self.runs}: {', '.join(order)}")
            done_writes = False
            for c in cells:
                if c["op"] == "read" and not done_writes and between:
                    between(rnd)
                    done_writes = True
                for d in order:
                    m = self.run_cell(st, c, d, rnd, fresh)
                    runs[c["id"]][d][rnd] = m
                    if m is None:
                        say(f"    {c['id']:<14} {LABEL[d]:<9} not applicable (logical "
                            f"block {st['lbs'][d]} bytes)")
                        continue
                    say(f"    {c['id']:<14} {LABEL[d]:<9} {m['iops']:>9.0f} IOPS "
                        f"{m['bw_mibs']:>7.1f} MiB/s"
                        + (f" waf {m['waf']:.2f}" if m.get("waf") else ""))
        return {c["id"]: aggregate_cell(c, runs[c["id"]]) for c in cells}

    def fill_both(self, st):
        for d in DEVICES:
            gb.fill(st["paths"][d], st["region"], MiB)

    def precondition_own(self, st, bs):
        """Random writes of bs over the region, half a capacity at a time,
        until settled() on B (dm-remap's WAF) and, page-mapped, on A (the
        drive's): what each side needed."""
        out = {}
        chunk = st["region"] // 2 // bs * bs
        for d, side in (("remap", "B"), ("bare", "A")):
            if d == "bare" and st["spec"]["mode"] != "page" or bs < st["lbs"][d]:
                continue
            dev, wafs = st["paths"][d], []
            while not settled(wafs) and len(wafs) * chunk < self.own_max * st["region"]:
                if d == "remap":
                    before = st["remap"].flushed_status()
                else:
                    before = self.counters(st["names"][side])
                gb.run_fio(["--name=own", f"--filename={dev}", "--rw=randwrite",
                            f"--bs={bs}", "--direct=1", "--ioengine=libaio", "--iodepth=8",
                            "--norandommap", "--randrepeat=0", f"--size={st['region']}",
                            f"--io_size={chunk}"],
                           f"own preconditioning of {LABEL[d]} with {bs_label(bs)}", 3600)
                if d == "remap":
                    wafs.append(compare.status_delta(
                        before, st["remap"].check(st["remap"].flushed_status()))["waf"])
                else:
                    wafs.append(counters_delta(before,
                                               self.counters(st["names"][side]))["flash_waf"])
            if not settled(wafs):
                st["cfg"]["warnings"].append(
                    f"own preconditioning of {LABEL[d]} with {bs_label(bs)} random writes "
                    f"not settled after {self.own_max:g} capacities (WAF per half "
                    f"capacity: {wafs})")
            if d == "remap":
                st["remap"].wait_gc_idle(self.gc_wait)
            out[d] = {"chunks": len(wafs), "chunk_bytes": chunk, "wafs": wafs}
            say(f"  own preconditioning, {bs_label(bs)}, {LABEL[d]}: WAF per half "
                f"capacity {wafs}")
        return out

    def run_phase(self, st, phase):
        ph = {"cells": {}, "cap": {}}
        st["cfg"]["phases"][phase] = ph
        spec = st["spec"]
        cells = grid(spec.get("sizes", self.sizes), spec.get("threads", self.threads),
                     self.ops)
        fresh = phase == "fresh"
        names = st["names"]["A"] + st["names"]["B"]
        if fresh:
            ph["method"] = ("write cells each on a trimmed device, at most a quarter of "
                            "the capacity; reads after a sequential fill")
        elif phase == "own":
            ph["method"] = ("each block size after preconditioning with its own random "
                            "writes until the WAF settles (within 3% from one half "
                            "capacity to the next); GC idle after each remapped write cell")
        else:
            ph["method"] = (f"sequential fill, then {self.precondition:g} x capacity of "
                            "random 4K writes (B" + (", A" if st["spec"]["mode"] == "page"
                                                     else "; A, block-mapped, only filled")
                            + "); GC idle after each remapped write cell")
            say(f"{st['cfg']['name']}: steady state: preconditioning")
            runner = compare.Runner(types.SimpleNamespace(precondition=self.precondition,
                                                          stall=120), None)
            pre_b = runner.precondition(st["paths"]["remap"], st["region"], st["remap"])
            runner.gc_idle(st["remap"], "the preconditioning")
            if st["spec"]["mode"] == "page":
                pre_a = runner.precondition(st["paths"]["bare"], st["region"])
            else:
                pre_a = gb.fill(st["paths"]["bare"], st["region"], MiB)
            ph["precondition"] = {"bare": pre_a, "remap": pre_b}
            st["cfg"]["warnings"] += [w for w in runner.warnings
                                      if w not in st["cfg"]["warnings"]]
        c0 = {s: self.counters(st["names"][s]) for s in ("A", "B")}
        say(f"{st['cfg']['name']}: {phase}: {len(cells)} cells x {self.runs} rounds")
        if phase == "own":
            self.fill_both(st)
            ph["precondition"] = {}
            for bs in sorted({c["bs"] for c in cells}):
                ph["precondition"][bs_label(bs)] = self.precondition_own(st, bs)
                ph["cells"].update(self.rounds(st, [c for c in cells if c["bs"] == bs],
                                               False))
                self.save()
        else:
            ph["cells"] = self.rounds(st, cells, fresh,
                                      between=(lambda rnd: self.fill_both(st))
                                      if fresh else None)
        c1 = {s: self.counters(st["names"][s]) for s in ("A", "B")}
        ph["flash"] = {"bare": counters_delta(c0["A"], c1["A"]),
                       "remap": counters_delta(c0["B"], c1["B"])}
        if self.cap and "write" in self.ops and phase != "own":
            say(f"{st['cfg']['name']}: {phase}: the cap (members as dm-linear)")
            rams = st["rams"]["A"] + st["rams"]["B"]
            self.reload_members(names, rams, self.linear_table)
            try:
                st["cap_on"] = True
                ph["cap"] = self.rounds(st, cap_cells(spec.get("threads", ())), fresh)
            finally:
                st["cap_on"] = False
                self.reload_members(names, rams,
                                    lambda r: self.flashsim_table(r, st["spec"]["mode"]))
        self.save()

    def run_config(self, name):
        spec = CONFIGS[name]
        cfg = {"name": name, "label": spec["label"], "phases": {}, "warnings": []}
        self.res["configs"].append(cfg)
        rig = gb.Rig()
        try:
            n = spec["members"]
            member_mib = self.mib if n == 1 else -(-self.mib // (n - 1))
            rams = gb.make_ramdisks(rig, 2 * n, member_mib)
            st = {"cfg": cfg, "spec": spec, "rams": {"A": rams[:n], "B": rams[n:]},
                  "names": {}, "paths": {}}
            for side in ("A", "B"):
                dev, st["names"][side] = self.make_stack(rig, side, spec, st["rams"][side])
                st["paths"]["bare" if side == "A" else "remap_lower"] = dev
            fmt = []
            if n > 1:
                # a segment of whole erase blocks on every member: 16 stripes of
                # 3 x 64 KiB = 1 MiB per member = 4 erase blocks of 256 KiB
                fmt = ["--segment-size", "3M"]
            if self.op:
                fmt += ["--overprovision", self.op]
            remap = compare.Remap(types.SimpleNamespace(name=NAME, format_opt=fmt,
                                                        create_opt=[]),
                                  st["paths"].pop("remap_lower"), self.remapctl)
            rig.push(f"dmsetup remove {NAME}", lambda: gb.dm_remove(NAME))
            s = remap.create()
            st["remap"] = remap
            st["paths"]["remap"] = remap.path
            st["region"] = s["logical_bytes"] // MiB * MiB
            st["lbs"] = {d: int(sh("blockdev", "--getss", st["paths"][d]))
                         for d in DEVICES}
            cfg["geometry"] = {"region_bytes": st["region"], "segment_bytes": s["segment_bytes"],
                               "segments": s["segments"], "format_options": fmt,
                               "member_table": sh("dmsetup", "table",
                                                  st["names"]["A"][0]).split(None, 3)[3].strip()}
            for phase in self.phases:
                self.run_phase(st, phase)
        except (Fail, compare.Failure) as e:
            cfg["failure"] = str(e)
            raise
        finally:
            rig.cleanup()

    def save(self):
        self.res["goals"] = evaluate_goals(self.res["configs"])
        with open(os.path.join(self.out, "flash-bench.json"), "w") as f:
            json.dump(self.res, f, indent=1)

    def setup(self, rig):
        """Modules (gb.run_bench())."""
        sh("modprobe", "-a", "dm-mod", "raid456")
        try:        # let md RAID-5 pass the fresh cells' trims down
            with open("/sys/module/raid456/parameters/devices_handle_discard_safely",
                      "w") as f:
                f.write("Y")
        except OSError:
            pass
        if not os.path.exists("/sys/module/dm_remap"):
            sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
            rig.push("rmmod dm-remap", lambda: gb.rmmod("dm_remap"))
        if not os.path.exists("/sys/module/dm_flashsim"):
            sh("insmod", os.path.join(REPO, "tests", "flashsim", "dm-flashsim.ko"))
            rig.push("rmmod dm-flashsim", lambda: gb.rmmod("dm_flashsim"))

    def main(self):
        return gb.run_bench(self, summary_text, "flash-summary.txt", "flash bench")


def main():
    unknown = sorted(k for k in os.environ if k.startswith("DMR_FLASH_")
                     and k[10:] not in {"CONFIGS", "RUNS", "SECONDS", "BS", "THREADS", "OPS",
                                        "PHASES", "MIB", "PRECONDITION", "GC_WAIT", "CAP",
                                        "OWN_MAX", "OVERPROVISION"})
    if unknown:
        print(f"flash bench: warning: ignoring unknown settings {', '.join(unknown)}",
              file=sys.stderr, flush=True)
    return gb.entry(FlashBench, "flash bench")


if __name__ == "__main__":
    sys.exit(main())
