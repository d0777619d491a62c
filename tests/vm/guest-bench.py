#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, guest side: bare vs dm-linear vs dm-remap, alternating.

Two identical arrays per configuration, so that all three devices exist at
once and every cell can be run on each of them one after another:

  array A   measured bare, and through dm-linear over it (what
            device-mapper itself costs)
  array B   formatted with remapctl and measured through dm-remap

Configurations (DMR_BENCH_CONFIGS):

  raid5-4   each array md RAID-5 over 4 brd ramdisks, 64 KiB chunk,
            --assume-clean.  Ramdisks have no media cost: this measures CPU
            cost (md's parity read-modify-write against dm-remap's mapping,
            log and garbage collection).
  media     each array md RAID-5 over 4 null_blk devices (configfs,
            memory backed, timer completion) that charge per command: a
            fixed service time per command, a bounded number of commands in
            service per member and a bandwidth cap.  A model of media, not
            a measurement of any device (DMR_BENCH_MEDIA).

Method.  B is preconditioned to steady state the way tools/compare does
it: a sequential fill of its logical capacity, then DMR_BENCH_PRECONDITION
times that capacity of random 4 KiB writes (fio, libaio, QD32), then a wait
for dm-remap's GC to go idle (a warning if it is not idle in 120 s).  A is
only filled sequentially (a RAID-5 of ramdisks or null_blk devices has no
FTL whose state random writes would change).  On A only, the sequential
full-stripe write bandwidth is measured as a cell (bs = 6 x optimal I/O
size, libaio QD4).  Then DMR_BENCH_RUNS rounds: in each, every cell runs on
bare, dm-linear and remapped one after another, the first device rotating
from round to round.  After each remapped cell that writes, the bench waits
(at most DMR_BENCH_GC_WAIT s) for dm-remap's GC to go idle, so that its
background GC does not run during the other devices' cells; the wait is
recorded, and each such cell's write amplification (status delta from
before the cell to GC idle after it) includes the GC its writes caused.
B's status is checked after every cell (mode write, first_error 0).  Every
figure is the median of the rounds, with min and max; ratios are
median(remap) / median(bare) and median(remap) / median(dm-linear).

Cells (fio --output-format=json, O_DIRECT, over the same region from offset
0 on every device: B's logical capacity):
  randread-4k-t{1,10,40}        4K random read, psync, numjobs=T
  randwrite-4k-t{1,10,40}       4K random write, psync, numjobs=T
  randwrite-{256k,1m}-t{1,10}   large random writes
  randwrite-4k-fsync-t{1,10}    4K random write + fsync after each
  randrw{90,70}-4k-qd{1,10,100} mixed random read/write (rwmixread 90/70),
                                libaio, one job at iodepth 1, 10, 100
  seqwrite-stripe               bare only: sequential full-stripe writes
Own-workload preconditioning (issue 25 section 1, SNIA PTS's workload-
dependent preconditioning): after the rounds, each write cell matching
DMR_BENCH_WDP gets a second remapped figure.  B is written with the
cell's own workload (its fio options: pattern, block size, engine, jobs)
in windows of DMR_BENCH_WDP_WINDOW x the region, each followed by a GC-idle
wait, until the WAF of a window is within DMR_BENCH_WDP_TOL (relative) of
the window before (settle_verdict); at most DMR_BENCH_WDP_MAX windows, a
warning if that cap is hit.  Then the cell runs DMR_BENCH_RUNS rounds on
bare and remapped, the first of the two rotating; the table shows it
beside the 4K-preconditioned column (bare measured again beside it).

File system scenarios (bare and remapped, side by side): for each
configuration in DMR_BENCH_FS, file system (ext4, XFS), fill level
(DMR_BENCH_FS_FILL, % of the file system) and trim mode (DMR_BENCH_FS_TRIM:
discard = mounted -o discard, fstrim = fstrim after the fill, after each
churn round and before each round of jobs):
  mkfs       on A and on B, both of B's logical size (the same geometry),
             with discard (mkfs's default): on B every block becomes spare,
             so each scenario starts from an empty log, and TRIM is what
             keeps the free space spare afterwards.  md RAID-5 does not
             pass discards by default, so bare gets none (the table says so)
  the file   of the two file jobs below (a tenth of the file system), laid
             out with 1 MiB direct writes
  fill       files of 256 KiB to 4 MiB, buffered, until the used fraction
             (statvfs) reaches the fill level
  churn      DMR_BENCH_FS_CHURN rounds, each writing DMR_BENCH_FS_CHURN_PCT %
             of the file system's size: create, overwrite in place, append,
             truncate, delete (pick_op keeps the used fraction within 2% of
             the fill level), a sync every 16 MiB written and after
             each round
  jobs       DMR_BENCH_RUNS rounds of the file jobs, bare and remapped
             rotating
dm-remap's status deltas give the WAF and the discard requests of mkfs, of
the aging (fill + churn, GC idle after) and of the jobs; the bench fails if
no discard reached dm-remap during the aging.  The file jobs (mounted under
/tmp):
  fs-randwrite-4k               4K random writes into one file (direct=1,
                                libaio QD16)
  fs-randrw-70-30               70/30 random read/write into that file
  fs-smallfile-fsync            small files: create, 4 x 4K writes each
                                fsynced, unlink each loop (4 threads).  A
                                stand-in for fs_mark, which is not packaged
                                for Debian 12.

Results: $DMR_OUT/summary.txt (goals table, per-cell tables, write
amplification; also printed) and $DMR_OUT/bench.json (every run, the
aggregates, parameters, dm-remap statuses).

Environment (defaults in brackets):
  DMR_BENCH_RUNS [3]            rounds (>= 1; medians want >= 3)
  DMR_BENCH_SECONDS [3]         seconds per cell
  DMR_BENCH_CONFIGS [raid5-4,media]   configurations to run
  DMR_BENCH_CELLS [all]         comma list of shell patterns over cell ids,
                                e.g. 'randwrite-4k-*,seqwrite-stripe'
  DMR_BENCH_FS [all]            file system scenarios: all (every
                                configuration), 1 (raid5-4 only), 0 (none),
                                or a comma list of configurations
  DMR_BENCH_FS_TYPES [ext4,xfs] filesystems (XFS needs a remapped capacity
                                over 300 MB: skipped with a warning on the
                                media configuration's default 96 MiB
                                members; DMR_BENCH_MEDIA_MIB=128 is enough)
  DMR_BENCH_FS_JOBS [all]       comma list of patterns over fs job ids
  DMR_BENCH_FS_FILL [50,80]     fill levels, % of the file system
  DMR_BENCH_FS_TRIM [discard,fstrim]   trim modes
  DMR_BENCH_FS_CHURN [2]        churn rounds after the fill
  DMR_BENCH_FS_CHURN_PCT [50]   bytes written per churn round, % of the
                                file system's size
  DMR_BENCH_WDP [randwrite-4k-t1,randwrite-256k-*,randwrite-1m-*]
                                write cells that get the own-workload
                                preconditioning column (0: none)
  DMR_BENCH_WDP_WINDOW [0.5]    a preconditioning window, x the region
  DMR_BENCH_WDP_TOL [0.03]      settled: last window's WAF within this
                                (relative) of the one before
  DMR_BENCH_WDP_MAX [8]         windows at most (then a warning)
  DMR_BENCH_MEDIA [completion_us=2000,queue_depth=1,mbps=150,max_kb=512]
                                the media model of each null_blk member:
                                service time per command, commands in
                                service at once, MB/s cap (0: none), largest
                                command in KiB
  DMR_BENCH_PRECONDITION [2]    B: random 4 KiB writes, x its capacity
  DMR_BENCH_GC_WAIT [60]        seconds to wait for GC idle after a
                                remapped write cell (0: do not wait)
  DMR_BENCH_RAM_MIB [256]       size of each ramdisk (raid5-4)
  DMR_BENCH_MEDIA_MIB [96]      size of each null_blk member (media)
  DMR_BENCH_MEMBERS [4]         members of each md RAID-5 (5: four data
                                disks, a 256 KiB stripe, 1 MiB segments)
  DMR_BENCH_FORMAT ['']         remapctl format options for B (e.g.
                                '--segment-size 768K': segments that 1 MiB
                                writes can fill on a 3+1 RAID-5)
  DMR_BENCH_AB ['']             A/B: table options (e.g. 'zero_copy') for a
                                fourth device in every raw cell, "remapped
                                B'": B's table reloaded with them for that
                                run and back after it (a reload resets
                                dm-remap's counters, so the write
                                amplification over all the cells is not
                                reported then); B is reloaded with its
                                own table before each of its runs, so
                                both start on a fresh load; an item
                                'module:NAME=VALUE' sets dm-remap's
                                module parameter NAME for the runs of B'
                                instead (and back after each), e.g.
                                'module:flight_serial=Y'
"""
import fnmatch
import importlib.machinery
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MiB = 1 << 20
DEVICES = ("bare", "linear", "remap")
DEV_LABEL = {"bare": "bare", "linear": "dm-linear", "remap": "remapped",
             "remap_ab": "remapped B'"}
NAME = "dmrbench"                       # dm-remap device; NAME-linear for dm-linear
MD = {"A": "/dev/md/dmrbench-a", "B": "/dev/md/dmrbench-b"}
NULLB_DIR = "/sys/kernel/config/nullb"
MNT = "/tmp/dmrbench-mnt"
WAF_MIN_SEGMENTS = 4                    # per-cell WAF only past this many segments written
CHURN_SYNC = 16 * MiB                   # the churn syncs after this many bytes written
XFS_MIN = 320 * MiB                     # mkfs.xfs: "Filesystem must be larger than 300MB"
MEDIA_DEFAULT = "completion_us=2000,queue_depth=1,mbps=150,max_kb=512"
MEDIA_KEYS = {"completion_us": (1, 10**7), "queue_depth": (1, 4096),
              "mbps": (0, 100000), "max_kb": (4, 65536)}
MEDIA_APPROX = (
    "a model, not a measurement of any device: each member charges a fixed "
    "service time per command with a bounded number of commands in service "
    "and a bandwidth cap; the defaults (2 ms, one command at a time, 150 MB/s) "
    "are of the order of a 7200 rpm HDD's random access over a short range "
    "(its full-stroke random access costs 8-12 ms) or of a slow SATA/eMMC "
    "flash device at queue depth 1")


def _load_compare():
    """tools/compare as a module: its status parser, status deltas, the
    Remap device and Runner's preconditioning (no side effects on import)."""
    path = os.path.join(REPO, "tools", "compare")
    loader = importlib.machinery.SourceFileLoader("dmr_compare", path)
    spec = importlib.util.spec_from_loader("dmr_compare", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


compare = _load_compare()


# ---------------------------------------------------------------- cells

def _cell(cid, title, group, kind, unit, fio, devices=DEVICES):
    """kind: read, write or mixed (write and mixed cells are followed by a
    GC-idle wait on the remapped device); unit: iops or mibs (MiB/s)."""
    return {"id": cid, "title": title, "group": group, "kind": kind, "unit": unit,
            "fio": fio, "devices": devices}


def raw_cells(ioopt=0):
    """The raw-device cells, in the order they run within a round."""
    cells = []
    for t in (1, 10, 40):
        cells.append(_cell(f"randread-4k-t{t}", f"4K random read, {t} thr", "rand",
                           "read", "iops", ["--rw=randread", "--bs=4k", "--ioengine=psync",
                                            f"--numjobs={t}"]))
    # 1, 2, 4, 8 and 16 jobs: the scaling issue 25 asks for (more writers
    # must not mean fewer writes); 10 and 40 as the papers' grid
    for t in (1, 2, 4, 8, 10, 16, 40):
        cells.append(_cell(f"randwrite-4k-t{t}", f"4K random write, {t} thr", "rand",
                           "write", "iops", ["--rw=randwrite", "--bs=4k", "--ioengine=psync",
                                             f"--numjobs={t}"]))
    for bs in ("256k", "1m"):
        for t in (1, 10):
            cells.append(_cell(f"randwrite-{bs}-t{t}", f"{bs.upper()} random write, {t} thr",
                               "rand", "write", "mibs",
                               ["--rw=randwrite", f"--bs={bs}", "--ioengine=psync",
                                f"--numjobs={t}"]))
    for t in (1, 10):
        cells.append(_cell(f"randwrite-4k-fsync-t{t}", f"4K random write + fsync, {t} thr",
                           "rand", "write", "iops",
                           ["--rw=randwrite", "--bs=4k", "--ioengine=psync", "--fsync=1",
                            f"--numjobs={t}"]))
    for mix in (90, 70):
        for qd in (1, 10, 100):
            cells.append(_cell(f"randrw{mix}-4k-qd{qd}",
                               f"4K random {mix}/{100 - mix} r/w, QD{qd}", "mixed", "mixed",
                               "iops", ["--rw=randrw", f"--rwmixread={mix}", "--bs=4k",
                                        "--ioengine=libaio", f"--iodepth={qd}"]))
    bs = 6 * ioopt if ioopt else 0
    cells.append(_cell("seqwrite-stripe", "sequential full-stripe write"
                       + (f" ({bs // 1024}K, QD4)" if bs else ""), "seq", "write", "mibs",
                       ["--rw=write", f"--bs={bs or 1048576}", "--ioengine=libaio",
                        "--iodepth=4"], devices=("bare",)))
    return cells


def fs_jobs():
    return [
        _cell("fs-randwrite-4k", "4K random write into a file, QD16", "fs", "write", "iops",
              ["--rw=randwrite", "--bs=4k", "--direct=1", "--ioengine=libaio",
               "--iodepth=16", "--filename=bench.dat"], devices=("bare", "remap")),
        _cell("fs-randrw-70-30", "4K 70/30 random r/w in a file, QD16", "fs", "mixed", "iops",
              ["--rw=randrw", "--rwmixread=70", "--bs=4k", "--direct=1",
               "--ioengine=libaio", "--iodepth=16", "--filename=bench.dat"],
              devices=("bare", "remap")),
        _cell("fs-smallfile-fsync", "small files: 16K each, fsync per 4K write, 4 thr",
              "fs", "write", "iops",
              ["--rw=write", "--bs=4k", "--filesize=16k", "--nrfiles=256",
               "--file_service_type=sequential", "--create_on_open=1",
               "--unlink_each_loop=1", "--fsync=1", "--numjobs=4", "--ioengine=psync"],
              devices=("bare", "remap")),
    ]


def select(cells, patterns):
    """The cells whose id matches one of the comma-separated shell patterns
    ('' or 'all': every cell), in their own order."""
    if not patterns or patterns.strip() == "all":
        return list(cells)
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    return [c for c in cells if any(fnmatch.fnmatchcase(c["id"], p) for p in pats)]


def rotation(devices, round_no):
    """The order of the devices in a round: rotated by one each round, so
    over len(devices) rounds each device runs first once."""
    k = round_no % len(devices)
    return list(devices[k:]) + list(devices[:k])


def ab_rotation(round_no):
    """rotation() of the three devices with B' (remap_ab) beside remapped:
    after it in even rounds, before it in odd ones, so that neither
    always runs on the array the other has just written."""
    order = rotation(DEVICES, round_no)
    i = order.index("remap") + (1 if round_no % 2 == 0 else 0)
    return order[:i] + ["remap_ab"] + order[i:]


def parse_media(text):
    """'completion_us=2000,queue_depth=1,mbps=150,max_kb=512' (any subset;
    the rest from the default) -> dict of ints; ValueError on anything else."""
    out = {}
    for item in (MEDIA_DEFAULT + "," + (text or "")).split(","):
        item = item.strip()
        if not item:
            continue
        k, sep, v = item.partition("=")
        k = k.strip()
        if not sep or k not in MEDIA_KEYS:
            raise ValueError(f"DMR_BENCH_MEDIA: bad item '{item}' (keys: "
                             f"{', '.join(MEDIA_KEYS)})")
        lo, hi = MEDIA_KEYS[k]
        try:
            n = int(v)
        except ValueError:
            raise ValueError(f"DMR_BENCH_MEDIA: {k}={v!r} is not an integer")
        if not lo <= n <= hi:
            raise ValueError(f"DMR_BENCH_MEDIA: {k}={n} out of range ({lo} to {hi})")
        out[k] = n
    return out


KNOBS = {"RUNS", "SECONDS", "CONFIGS", "CELLS", "FS", "FS_TYPES", "FS_JOBS", "MEDIA",
         "PRECONDITION", "GC_WAIT", "RAM_MIB", "MEDIA_MIB", "AB", "FS_FILL", "FS_TRIM",
         "FS_CHURN", "FS_CHURN_PCT", "WDP", "WDP_WINDOW", "WDP_TOL", "WDP_MAX",
         "MEMBERS", "FORMAT",
         "PARTS", "MAPCACHE_ROUNDS"}   # scripts/bench.sh's (guest-mapcache.py)


def unknown_knobs(env):
    """DMR_BENCH_* variables this script does not know (older ones, typos)."""
    return sorted(k for k in env if k.startswith("DMR_BENCH_")
                  and k[len("DMR_BENCH_"):] not in KNOBS)


def media_text(m):
    return (f"{m['completion_us'] / 1000:g} ms per command, {m['queue_depth']} in service "
            f"per member, {'no bandwidth cap' if not m['mbps'] else str(m['mbps']) + ' MB/s'}"
            f" per member, commands of at most {m['max_kb']} KiB")


# ---------------------------------------------------------------- statistics

def aggregate(values):
    """Median, min and max of the runs (None values left out), or None."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v),
            "runs": list(values)}


def primary(cell):
    """The metric a cell is judged by."""
    return "bw_mibs" if cell["unit"] == "mibs" else "iops"


def aggregate_cell(cell, runs):
    """runs: {device: [metrics dict of each round, or None]} -> the cell's
    result: per device, every metric aggregated over the rounds; the
    ratios of the medians of its primary metric; the remapped device's
    write amplification and GC wait, aggregated too."""
    devs = {}
    for dev, rs in runs.items():
        metrics = sorted({k for r in rs if r for k, v in r.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool)})
        devs[dev] = {k: aggregate([r.get(k) if r else None for r in rs]) for k in metrics}
    key = primary(cell)

    def med(dev):
        a = devs.get(dev, {}).get(key)
        return a["median"] if a else None

    res = {"title": cell["title"], "group": cell["group"], "kind": cell["kind"],
           "unit": cell["unit"], "metric": key, "devices": devs,
           "ratios": {"remap_bare": ratio(med("remap"), med("bare")),
                      "remap_linear": ratio(med("remap"), med("linear")),
                      "linear_bare": ratio(med("linear"), med("bare"))}}
    if "remap_ab" in runs:
        res["ratios"]["ab_bare"] = ratio(med("remap_ab"), med("bare"))
        res["ratios"]["ab_remap"] = ratio(med("remap_ab"), med("remap"))
    return res


def ratio(num, den):
    if num is None or not den:
        return None
    return num / den


MODPARAMS = "/sys/module/dm_remap/parameters"


def ab_parts(items):
    """DMR_BENCH_AB's items -> (table options, {module parameter: value}):
    an item 'module:NAME=VALUE' is a module parameter for the runs of B', every
    other item a table option."""
    opts, params = [], {}
    for it in items:
        if it.startswith("module:"):
            name, eq, value = it[len("module:"):].partition("=")
            if not eq or not name or not value or "/" in name:
                raise ValueError(f"DMR_BENCH_AB: '{it}' is not module:NAME=VALUE")
            params[name] = value
        else:
            opts.append(it)
    return opts, params


def set_params(params):
    """Set dm-remap's module parameters; their values before."""
    old = {}
    for name, value in params.items():
        path = os.path.join(MODPARAMS, name)
        with open(path) as f:
            old[name] = f.read().strip()
        with open(path, "w") as f:
            f.write(value)
    return old


def with_options(table, extra):
    """A dm-remap table line ('0 N remap DEV [#opts opts...]') with the
    optional arguments in extra (a list) added after its own."""
    f = table.split()
    if len(f) < 4 or f[2] != "remap":
        raise ValueError(f"not a dm-remap table: {table!r}")
    opts = f[5:5 + int(f[4])] if len(f) > 4 else []
    return " ".join(f[:4] + [str(len(opts) + len(extra))] + opts + list(extra))


def ratio_range(cell_res, num_dev, den_dev):
    """The widest ratio the runs allow: min(num)/max(den) to max(num)/min(den)."""
    k = cell_res["metric"]
    n = cell_res["devices"].get(num_dev, {}).get(k)
    d = cell_res["devices"].get(den_dev, {}).get(k)
    if not n or not d or not d["min"] or not d["max"]:
        return None
    return (n["min"] / d["max"], n["max"] / d["min"])


# ---------------------------------------------------------------- file system scenarios

FS_TRIMS = ("discard", "fstrim")
FS_OPS = ("create", "overwrite", "append", "truncate", "delete")


def parse_fills(text):
    """DMR_BENCH_FS_FILL: '50,80' -> [50, 80] (percent of the file system,
    each 1 to 95); ValueError on anything else."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            n = int(item)
        except ValueError:
            raise ValueError(f"DMR_BENCH_FS_FILL: {item!r} is not an integer percentage")
        if not 1 <= n <= 95:
            raise ValueError(f"DMR_BENCH_FS_FILL: {n} out of range (1 to 95)")
        if n not in out:
            out.append(n)
    if not out:
        raise ValueError("DMR_BENCH_FS_FILL: no fill level")
    return out


def parse_trims(text):
    """DMR_BENCH_FS_TRIM: 'discard,fstrim' -> the trim modes, in FS_TRIMS
    order; ValueError on an unknown one."""
    got = [t.strip() for t in (text or "").split(",") if t.strip()]
    for t in got:
        if t not in FS_TRIMS:
            raise ValueError(f"DMR_BENCH_FS_TRIM: unknown mode '{t}' "
                             f"(modes: {', '.join(FS_TRIMS)})")
    if not got:
        raise ValueError("DMR_BENCH_FS_TRIM: no trim mode")
    return [t for t in FS_TRIMS if t in got]


def fs_scenarios(fs_types, fills, trims):
    """The file system scenarios of a configuration, in the order they
    run: every file system x fill level x trim mode."""
    return [{"id": f"{fs}-{fill}-{trim}", "fs": fs, "fill": fill, "trim": trim}
            for fs in fs_types for fill in fills for trim in trims]


def pick_op(r, used, target, slack=0.02):
    """The churn's next operation, from r (uniform in [0, 1)), the file
    system's used fraction and the target fraction: above the band
    (target + slack) only shrinking operations (delete, truncate), below it
    only growing ones (create, append, overwrite in place), inside it all
    five, with about as much freed as written."""
    if used > target + slack:
        return "delete" if r < 0.5 else "truncate"
    if used < target - slack:
        return "create" if r < 0.6 else "append" if r < 0.8 else "overwrite"
    for op, upto in (("create", 0.2), ("overwrite", 0.5), ("append", 0.65),
                     ("truncate", 0.8)):
        if r < upto:
            return op
    return "delete"


def trim_reached(discards, churn_rounds, trim):
    """Did TRIM reach dm-remap during a scenario's aging?  discards: the
    status delta's discard requests.  True or False; None when the aging
    had nothing to trim (discard mode without churn: a fill only creates
    files)."""
    if discards > 0:
        return True
    if trim == "discard" and not churn_rounds:
        return None
    return False


def used_fraction(st):
    """os.statvfs() result -> the fraction of the file system's blocks in
    use (what df shows, root's reserve counted as free)."""
    if not st.f_blocks:
        return 0.0
    return (st.f_blocks - st.f_bfree) / st.f_blocks


# ---------------------------------------------------------------- workload-dependent preconditioning

def waf_settled(wafs, tol):
    """SNIA-style steady state of the write amplification: the last
    window's WAF within tol (relative) of the window before it."""
    if len(wafs) < 2 or wafs[-1] is None or not wafs[-2]:
        return False
    return abs(wafs[-1] - wafs[-2]) <= tol * wafs[-2]


def settle_verdict(wafs, tol, max_windows, min_windows=2):
    """After each preconditioning window: 'settled' (waf_settled, at least
    min_windows windows), 'cap' (max_windows written without settling: the
    caller warns) or 'continue'."""
    if len(wafs) >= min_windows and waf_settled(wafs, tol):
        return "settled"
    if len(wafs) >= max_windows:
        return "cap"
    return "continue"


def _fio_opt(args, name, default=None):
    for a in args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def parse_bs(text):
    """fio block size '4k', '256k', '1m' or bytes -> bytes."""
    t = text.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    return int(t[:-1] if mult > 1 else t) * mult


def own_precondition_args(cell, dev, region, window):
    """fio arguments of one preconditioning window of a raw write cell
    with the cell's own workload: its fio options (pattern, block size,
    engine, jobs) over the same region, writing window bytes in all
    (io_size per job, a whole number of blocks) instead of running for
    a time."""
    jobs = int(_fio_opt(cell["fio"], "numjobs", "1"))
    bs = parse_bs(_fio_opt(cell["fio"], "bs", "4k"))
    per_job = max(bs, window // jobs // bs * bs)
    return [f"--name=precondition-{cell['id']}", f"--filename={dev}", "--direct=1",
            f"--size={region}", f"--io_size={per_job}", "--randrepeat=0", "--norandommap",
            "--thread", "--group_reporting", *cell["fio"]]


def wdp_cells(cells, patterns):
    """The cells that get the workload-dependent preconditioning column:
    the write cells run on the remapped device whose id matches
    DMR_BENCH_WDP ('0' or 'none': none)."""
    if (patterns or "").strip() in ("0", "none"):
        return []
    return [c for c in select(cells, patterns)
            if c["kind"] == "write" and "remap" in c["devices"]]


# ---------------------------------------------------------------- goals

# (measure, goal text, configuration, threshold, the checks: (cell, versus))
GOALS = [
    ("4K random write 1 thread vs bare (raid5-4)", ">= 3x", "raid5-4", 3.0,
     [("randwrite-4k-t1", "bare")]),
    ("4K random write 10 and 40 threads vs bare (raid5-4)", ">= 2x", "raid5-4", 2.0,
     [("randwrite-4k-t10", "bare"), ("randwrite-4k-t40", "bare")]),
    ("remapped 4K random-write BW / bare sequential full-stripe BW (raid5-4)", ">= 60%",
     "raid5-4", 0.6, "seq"),
    ("256K-1M random write vs bare (raid5-4)", ">= 0.9x", "raid5-4", 0.9,
     [("randwrite-256k-t1", "bare"), ("randwrite-256k-t10", "bare"),
      ("randwrite-1m-t1", "bare"), ("randwrite-1m-t10", "bare")]),
    ("4K random read vs dm-linear 1/10/40 threads (raid5-4)", ">= 0.95x", "raid5-4", 0.95,
     [("randread-4k-t1", "linear"), ("randread-4k-t10", "linear"),
      ("randread-4k-t40", "linear")]),
    ("4K write + fsync vs bare 1 and 10 threads (raid5-4)", ">= 1.0x", "raid5-4", 1.0,
     [("randwrite-4k-fsync-t1", "bare"), ("randwrite-4k-fsync-t10", "bare")]),
    ("media model 4K random write 10 threads vs bare, steady state", ">= 5x", "media", 5.0,
     [("randwrite-4k-t10", "bare")]),
    # issue 25 section 2b: remapped IOPS with 8 (and 16) writers / with one
    ("remapped 4K random write, 8 and 16 threads vs 1 thread (raid5-4)", ">= 1.0x",
     "raid5-4", 1.0, ("scale", "randwrite-4k-t1", ["randwrite-4k-t8", "randwrite-4k-t16"])),
    # issue 25 section 1: the same goal with each cell preconditioned with
    # its own workload until the WAF settles (SNIA PTS)
    ("256K-1M random write vs bare, own-workload preconditioning (raid5-4)", ">= 0.9x",
     "raid5-4", 0.9, ("wdp", ["randwrite-256k-t1", "randwrite-256k-t10",
                              "randwrite-1m-t1", "randwrite-1m-t10"])),
]


def seq_fraction(cfg):
    """Best median remapped 4K random-write bandwidth (over thread counts) /
    median bare sequential full-stripe bandwidth; (value, detail) or None."""
    cells = cfg.get("cells", {})
    seq = cells.get("seqwrite-stripe", {}).get("devices", {}).get("bare", {}).get("bw_mibs")
    best = None
    for cid, c in cells.items():
        if cid.startswith("randwrite-4k-t"):
            a = c["devices"].get("remap", {}).get("bw_mibs")
            if a and (best is None or a["median"] > best[1]):
                best = (cid, a["median"])
    if not seq or not best or not seq["median"]:
        return None
    return best[1] / seq["median"], (f"{best[1]:.1f} MiB/s ({best[0]}) / "
                                     f"{seq['median']:.1f} MiB/s")


def scale_ratios(cfg, base, cells):
    """The remapped device's median IOPS in each of @cells over its median
    in @base, with the IOPS; [(ratio, text)], or None if one is missing."""
    def med(cid):
        a = cfg.get("cells", {}).get(cid, {}).get("devices", {}).get("remap", {}).get("iops")
        return a["median"] if a else None

    b = med(base)
    if not b:
        return None
    out = []
    for cid in cells:
        v = med(cid)
        if v is None:
            return None
        out.append((v / b, f"{v / b:.2f}x ({v:.0f} vs {b:.0f} IOPS, {cid})"))
    return out


def evaluate_goals(configs):
    """The goals table from the configurations' results: for each goal the
    measured value(s), and met (every check at or above the goal), missed,
    or not measured (a cell or the configuration missing)."""
    by_name = {c["name"]: c for c in configs}
    rows = []
    for measure, goal, cfg_name, thr, checks in GOALS:
        row = {"measure": measure, "goal": goal, "config": cfg_name, "threshold": thr,
               "values": [], "measured": "-", "status": "not measured"}
        cfg = by_name.get(cfg_name)
        if cfg is None:
            rows.append(row)
            continue
        if checks == "seq":
            got = seq_fraction(cfg)
            if got:
                row["values"] = [got[0]]
                row["measured"] = f"{100 * got[0]:.0f}% ({got[1]})"
        elif checks[0] == "wdp":
            # the cells of the own-workload column that ran (this column is
            # selectable per cell: the goal is judged on those measured)
            vals, texts = [], []
            for cid in checks[1]:
                c = cfg.get("wdp", {}).get(cid)
                r = c["ratios"].get("remap_bare") if c else None
                if r is None:
                    continue
                vals.append(r)
                rng = ratio_range(c, "remap", "bare")
                texts.append(f"{r:.2f}x" + (f" [{rng[0]:.2f}-{rng[1]:.2f}]" if rng else "")
                             + f" ({cid})")
            if vals:
                row["values"] = vals
                row["measured"] = ", ".join(texts)
        elif checks[0] == "scale":
            got = scale_ratios(cfg, checks[1], checks[2])
            if got:
                row["values"] = [v for v, _ in got]
                row["measured"] = ", ".join(t for _, t in got)
        else:
            vals, texts, missing = [], [], False
            for cid, versus in checks:
                c = cfg.get("cells", {}).get(cid)
                r = c["ratios"].get(f"remap_{versus}") if c else None
                if r is None:
                    missing = True
                    continue
                vals.append(r)
                rng = ratio_range(c, "remap", versus)
                texts.append(f"{r:.2f}x" + (f" [{rng[0]:.2f}-{rng[1]:.2f}]" if rng else ""))
            if vals and not missing:
                row["values"] = vals
                row["measured"] = ", ".join(texts)
        if row["values"]:
            row["status"] = "met" if min(row["values"]) >= thr else "missed"
        rows.append(row)
    return rows


# ---------------------------------------------------------------- summary

def fmt_agg(a, unit):
    if not a:
        return "-"
    f = "{:.0f}" if unit == "iops" else "{:.1f}"
    return f"{f.format(a['median'])} [{f.format(a['min'])}-{f.format(a['max'])}]"


def fmt_x(v):
    return "-" if v is None else f"{v:.2f}x"


def fmt_waf(v):
    return "-" if v is None else f"{v:.2f}"


def _table(rows, head):
    """Plain text table, columns left-aligned then padded."""
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    out = ["  " + "  ".join(str(h).ljust(w) for h, w in zip(head, widths)).rstrip(),
           "  " + "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  " + "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    return out


def goals_lines(goals):
    lines = ["| measure | goal | measured (median ratio [run range]) | status |",
             "|---|---|---|---|"]
    for g in goals:
        lines.append(f"| {g['measure']} | {g['goal']} | {g['measured']} | {g['status']} |")
    return lines


def cell_rows(cells, group, devices=DEVICES, extra=None):
    rows = []
    for cid, c in cells.items():
        if c["group"] not in group:
            continue
        k, u = c["metric"], c["unit"]
        row = [c["title"], "IOPS" if u == "iops" else "MiB/s"]
        for d in devices:
            row.append(fmt_agg(c["devices"].get(d, {}).get(k), u))
        row += [fmt_x(c["ratios"]["remap_bare"])]
        if "linear" in devices:
            row.append(fmt_x(c["ratios"]["remap_linear"]))
        if "remap_ab" in devices:
            row += [fmt_x(c["ratios"].get("ab_bare")), fmt_x(c["ratios"].get("ab_remap"))]
        w = c["devices"].get("remap", {}).get("waf")
        row.append("" if c["kind"] == "read" or "remap" not in c["devices"]
                   else fmt_waf(w["median"] if w else None))
        if extra is not None:
            row += extra(cid, c)
        rows.append(row)
    return rows


WDP_HEAD = ["bare beside it", "own-precond. remapped", "own/bare", "WAF", "precond."]


def wdp_columns(wdp):
    """The workload-dependent preconditioning columns of a raw cell (empty
    strings where the cell has none): bare measured beside it, the
    remapped median [min-max] after preconditioning with the cell's own
    workload, their ratio, its WAF and how the preconditioning ended."""
    def cols(cid, c):
        w = wdp.get(cid)
        if not w:
            return [""] * len(WDP_HEAD)
        k, u = w["metric"], w["unit"]
        waf = w["devices"].get("remap", {}).get("waf")
        pre = w.get("precondition", {})
        n = len(pre.get("windows", []))
        how = (f"{n} win" if pre.get("verdict") == "settled" else
               f"cap {n} win" if pre.get("verdict") == "cap" else "-")
        return [fmt_agg(w["devices"].get("bare", {}).get(k), u),
                fmt_agg(w["devices"].get("remap", {}).get(k), u),
                fmt_x(w["ratios"]["remap_bare"]), fmt_waf(waf["median"] if waf else None),
                how]
    return cols


def mib(blocks):
    """4 KiB blocks -> whole MiB as text ('-' if unknown)."""
    return "-" if blocks is None else f"{blocks * 4096 / MiB:.0f}"


def fs_lines(cfg):
    """The file system scenarios: per job bare and remapped, and per
    scenario what dm-remap saw (WAF and discards of the aging and of the
    jobs)."""
    scen = cfg.get("fs", {})
    if not scen:
        return []
    rows = []
    ab = any("remap_ab" in j["devices"] for sc in scen.values()
             for j in sc.get("jobs", {}).values())
    devs = ("bare", "remap", "remap_ab") if ab else ("bare", "remap")
    for sid, sc in scen.items():
        for r in cell_rows(sc.get("jobs", {}), ("fs",), devices=devs):
            rows.append([sid] + r)
    lines = ["", "  file systems (mkfs with discard, same size on A and B; aged by a fill "
             "and a churn): median [min-max]; WAF: remapped, job + its GC"]
    lines += _table(rows, ["scenario", "job", "unit", "bare", "remapped"]
                    + (["remapped B'"] if ab else []) + ["remap/bare"]
                    + (["B'/bare", "B'/remap"] if ab else []) + ["WAF"])
    rows = []
    for sid, sc in scen.items():
        used = sc.get("used", {})
        ag, jd, mk = sc.get("aging_delta", {}), sc.get("jobs_delta", {}), sc.get("mkfs", {})
        bare_trim = sc.get("fstrim", {}).get("bare", [])
        rows.append([sid,
                     "/".join(f"{100 * used[d]:.0f}%" if d in used else "-"
                              for d in ("bare", "remap")),
                     str(mk.get("discards", "-")), mib(ag.get("user_blocks")),
                     fmt_waf(ag.get("waf")), str(ag.get("discards", "-")),
                     mib(jd.get("user_blocks")), fmt_waf(jd.get("waf")),
                     f"{jd.get('dev_waf') or 0:.2f}" if jd.get("dev_waf") else "-",
                     str(jd.get("discards", "-")),
                     ("-" if not bare_trim else "no discard" if all(
                         t.startswith("unsupported") for t in bare_trim) else "yes")])
    lines += ["", "  dm-remap in each scenario: user MiB written to it, WAF (log; device = "
              "bytes written below / user bytes) and discard requests of the aging (fill + "
              "churn; buffered, so what the page cache absorbed never reaches it) and of the "
              "jobs (all rounds)"]
    lines += _table(rows, ["scenario", "used bare/remap", "mkfs discards", "aging MiB",
                           "aging WAF", "aging discards", "jobs MiB", "jobs WAF",
                           "jobs dev WAF", "jobs discards", "bare fstrim"])
    return lines


def member_lines(cfg):
    """What the arrays' members did in the cells that write with a sync
    (fsync): md's reads per write and bytes written per byte written, bare
    against remapped (issue 41, goal 3: a short unit that is not a whole
    stripe makes md read)."""
    rows = []
    groups = [("", cfg.get("cells", {}))] + [(f"{sid}: ", sc.get("jobs", {}))
                                             for sid, sc in cfg.get("fs", {}).items()]
    for pre, cells in groups:
        for cid, c in cells.items():
            if "fsync" not in cid:
                continue
            row = [pre + c["title"]]
            for d in ("bare", "remap", "remap_ab"):
                if d == "remap_ab" and "remap_ab" not in c["devices"]:
                    continue
                dv = c["devices"].get(d, {})
                r, x = dv.get("md_reads_per_write"), dv.get("md_write_x")
                # 0 reads per write is the figure goal 3 wants: not "-"
                row.append("-" if r is None else f"{r['median']:.2f}")
                row.append("-" if x is None else f"{x['median']:.2f}")
            rows.append(row)
    if not rows:
        return []
    head = ["cell", "bare reads/write", "bare written x", "remapped reads/write",
            "remapped written x"]
    if any(len(r) > 5 for r in rows):
        head += ["remapped B' reads/write", "remapped B' written x"]
    rows = [r + [""] * (len(head) - len(r)) for r in rows]
    return ["", "  md's members in the cells with an fsync per write: read I/Os per "
            "write, bytes written per byte written (median of the rounds)"] + _table(rows, head)


def config_lines(cfg):
    g = cfg.get("geometry", {})
    lines = ["", f"==== {cfg['name']}: {cfg['label']}"]
    if cfg.get("media"):
        m = cfg["media"]
        lines.append(f"  media model: {media_text(m)}")
        lines.append(f"  approximates: {MEDIA_APPROX}")
        cal = cfg.get("calibration")
        if cal:
            lines.append("  one member alone, measured here: 4K random read QD1 "
                         f"{cal.get('randread_qd1_iops', 0):.0f} IOPS, 1M sequential write "
                         f"QD4 {cal.get('seqwrite_mibs', 0):.1f} MiB/s (TCG timers add to "
                         "the nominal service time)")
    if g:
        lines.append(f"  arrays A and B: {g.get('array_bytes', 0) / MiB:.0f} MiB each, optimal "
                     f"I/O {g.get('ioopt', 0) // 1024} KiB; remapped capacity "
                     f"{g.get('remap_logical_bytes', 0) / MiB:.0f} MiB, segment "
                     f"{g.get('segment_bytes', 0) // 1024} KiB, gc_low/gc_high "
                     f"{g.get('gc_low')}/{g.get('gc_high')} segments; every cell over "
                     f"{g.get('region_bytes', 0) / MiB:.0f} MiB from offset 0")
    pre = cfg.get("precondition", {})
    if pre:
        b, r = pre.get("bare", {}), pre.get("remap", {})
        lines.append(f"  preconditioning: A (bare, dm-linear) sequential fill only, "
                     f"{b.get('bytes', 0) / MiB:.0f} MiB in {b.get('seconds', 0):.0f} s; B "
                     f"(remapped) sequential fill of {r.get('bytes', 0) / MiB:.0f} MiB + "
                     f"{r.get('factor', 0):g} x that of random 4 KiB writes "
                     f"({r.get('seconds', 0):.0f} s), then GC idle after "
                     f"{r.get('gc_idle_seconds', 0):.0f} s")
    lines.append(f"  rounds: {cfg.get('rounds_done', 0)}, device order per round: "
                 + "; ".join("/".join(DEV_LABEL[d] for d in o)
                             for o in cfg.get("orders", [])))
    cells = cfg.get("cells", {})
    devices, head = DEVICES, ["cell", "unit", "bare", "dm-linear", "remapped", "remap/bare",
                              "remap/lin", "WAF"]
    if cfg.get("ab"):
        devices = DEVICES + ("remap_ab",)
        head = head[:5] + ["B'"] + head[5:7] + ["B'/bare", "B'/remap", "WAF"]
        lines.append(f"  A/B: B' is B with its table reloaded with the options "
                     f"'{' '.join(cfg['ab'])}' for each of its runs: {cfg.get('ab_table', '')}")
    wdp = cfg.get("wdp", {})
    rows = cell_rows(cells, ("rand", "seq"), devices,
                     extra=wdp_columns(wdp) if wdp else None)
    if rows:
        lines += ["", "  raw device: median [min-max]; WAF: remapped, cell + its GC"]
        if wdp:
            lines += ["  remapped, bare, dm-linear: B preconditioned with random 4 KiB "
                      "writes; own-precond.: B preconditioned with the cell's own workload "
                      "until the WAF of a window is within "
                      f"{100 * cfg.get('wdp_tol', 0.03):g}% of the one before, then the "
                      "cell on bare and remapped again, side by side (own/bare over that "
                      "bare)"]
        lines += _table(rows, head + (WDP_HEAD if wdp else []))
    rows = cell_rows(cells, ("mixed",), devices)
    if rows:
        lines += ["", "  mixed random read/write (total IOPS; read/write split in bench.json)"]
        lines += _table(rows, head)
    lines += fs_lines(cfg)
    lines += member_lines(cfg)
    w = cfg.get("waf", {})
    m = w.get("measured")
    if m:
        lines += ["", f"  write amplification of B over the measured raw cells: log "
                  f"{fmt_waf(m.get('waf'))}, device {fmt_waf(m.get('dev_waf'))} "
                  f"({m['user_blocks'] * 4096 / MiB:.0f} MiB written by the cells, "
                  f"{m['device_blocks'] * 4096 / MiB:.0f} MiB to the log); GC collected "
                  f"{m['gc_runs']} segments, moved {m['gc_moved']} blocks, freed "
                  f"{m['segments_freed']}; {m['throttled']} writes waited for GC"]
    gw = cfg.get("gc_wait")
    if gw:
        lines.append(f"  GC-idle waits after remapped write cells: {gw['count']}, "
                     f"{gw['total']:.0f} s in all, longest {gw['max']:.1f} s"
                     + (f", {gw['not_idle']} not idle within the limit" if gw.get("not_idle")
                        else "")
                     + (f"; idle headroom gc_high - gc_low = "
                        f"{gw['headroom_bytes'] / MiB:.0f} MiB" if gw.get("headroom_bytes")
                        is not None else ""))
    for warn in cfg.get("warnings", []):
        lines.append(f"  warning: {warn}")
    if cfg.get("failure"):
        lines.append(f"  FAILED: {cfg['failure']}")
    return lines


def summary_text(res):
    p = res.get("params", {})
    lines = [f"==== dm-remap bench: kernel {res.get('kernel', '?')}, {res.get('date', '?')}; "
             f"{p.get('runs', '?')} rounds, {p.get('seconds', '?')} s per cell",
             "Every figure: median of the rounds [min-max]. Within a round each cell runs on "
             "bare (array A), dm-linear over A and remapped (dm-remap over B, an identical "
             "array), one after another, the first device rotating each round. B is in "
             "steady state (sequential fill + "
             f"{p.get('precondition', '?')} x capacity of random 4 KiB writes, GC idle); A is "
             "only filled sequentially. After each remapped cell that writes, the bench waits "
             f"(at most {p.get('gc_wait', '?')} s) for dm-remap's GC to go idle, so that it "
             "does not run during the other devices' cells; a cell's WAF covers the cell and "
             f"that GC ('-': fewer than {WAF_MIN_SEGMENTS} segments written). Own-precond.: "
             "the cell again after preconditioning B with its own workload until its WAF "
             "settles. File systems: mkfs with discard on A and B, filled, aged by a churn, "
             "TRIM by -o discard or fstrim.",
             "", "== goals (measured in this run)"]
    lines += goals_lines(res.get("goals", []))
    for cfg in res.get("configs", []):
        lines += config_lines(cfg)
    for warn in res.get("warnings", []):
        lines.append(f"warning: {warn}")
    if res.get("failure"):
        lines += ["", f"bench FAILED: {res['failure']}"]
    if res.get("total_seconds") is not None:
        lines += ["", f"total time in the guest: {res['total_seconds'] / 60:.1f} min"]
    return "\n".join(lines)


# ---------------------------------------------------------------- guest side

class Fail(Exception):
    """A failure that stops the bench."""


def sh(*cmd, check=True, input=None, timeout=600):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, input=input,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail(f"{' '.join(cmd)}: no end after {timeout} s")
    if check and p.returncode:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise Fail(f"{' '.join(cmd)} failed (exit {p.returncode}): "
                   + " / ".join(msg[:4])[:600])
    return p.stdout


def say(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def fio_metrics(job):
    """What a cell keeps of fio's (group-reported) job."""
    m = {}
    for side in ("read", "write"):
        s = job[side]
        m[f"{side}_iops"] = s["iops"]
        m[f"{side}_bw_mibs"] = s["bw_bytes"] / MiB
        if s["total_ios"]:
            pct = s.get("clat_ns", {}).get("percentile", {})
            if "99.000000" in pct:
                m[f"{side}_p99_us"] = pct["99.000000"] / 1000
    m["iops"] = m["read_iops"] + m["write_iops"]
    m["bw_mibs"] = m["read_bw_mibs"] + m["write_bw_mibs"]
    return m


def member_io(md):
    """Read I/Os and sectors written, summed over the members of md array
    md (/sys/block/<md>/slaves/*/stat, fields 1 and 7)."""
    base = f"/sys/block/{os.path.basename(os.path.realpath(md))}/slaves"
    reads = written = 0
    for m in sorted(os.listdir(base)):
        with open(f"{base}/{m}/stat") as f:
            st = f.read().split()
        reads += int(st[0])
        written += int(st[6])
    return reads, written


def member_metrics(io0, io1, writes, wbytes):
    """What the array's members did for a cell that made `writes` writes of
    `wbytes` bytes: md_reads (read I/Os: a RAID-5 reads old data and parity,
    or the rest of the stripe, for every write that is not a whole stripe;
    a cell's own reads count too), md_reads_per_write, md_write_x (bytes
    the members wrote per byte the cell wrote).  Nothing for members that
    count no I/O in their stat (brd ramdisks: raid5-4)."""
    reads, sectors = io1[0] - io0[0], io1[1] - io0[1]
    if wbytes and not sectors:
        return {}           # members that count no I/O (brd): nothing known
    m = {"md_reads": reads}
    if writes:
        m["md_reads_per_write"] = reads / writes
    if wbytes:
        m["md_write_x"] = sectors * 512 / wbytes
    return m


def run_fio(args, what, limit):
    """fio with JSON output, killed after limit seconds; its first job."""
    cmd = ["fio", "--output-format=json", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        raise Fail(f"{what}: fio still running after {limit:.0f} s (stalled I/O?)")
    try:
        job = json.loads(out[out.index("{"):])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        job = None
    if p.returncode or job is None or job.get("error"):
        raise Fail(f"{what}: fio failed (exit {p.returncode}): "
                   f"{(err or out).strip()[-600:]}\n# {' '.join(cmd)}")
    return job


class Rig:
    """What the bench set up, undone in reverse order (cleanup)."""

    def __init__(self):
        self.undo = []

    def push(self, what, fn):
        self.undo.append((what, fn))

    def cleanup(self):
        while self.undo:
            what, fn = self.undo.pop()
            try:
                fn()
            except Exception as e:      # keep cleaning
                print(f"bench: cleanup: {what}: {e}", file=sys.stderr, flush=True)


def settle():
    subprocess.run(["udevadm", "settle"], capture_output=True)


def rmmod(mod):
    settle()
    for _ in range(50):
        if subprocess.run(["rmmod", mod], capture_output=True).returncode == 0:
            return
        if not os.path.exists(f"/sys/module/{mod}"):
            return
        time.sleep(0.2)
    raise Fail(f"cannot unload {mod}")


def wait_path(path, secs=10):
    end = time.monotonic() + secs
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise Fail(f"{path} did not appear")
        time.sleep(0.1)


def make_ramdisks(rig, n, mib):
    subprocess.run(["rmmod", "brd"], capture_output=True)
    sh("modprobe", "brd", f"rd_nr={n}", f"rd_size={mib * 1024}", "max_part=0")
    rig.push("rmmod brd", lambda: rmmod("brd"))
    settle()
    devs = [f"/dev/ram{i}" for i in range(n)]
    for d in devs:
        wait_path(d)
    return devs


def make_nullb(rig, n, mib, media, blocksize=4096):
    """n null_blk devices over configfs with the media model; their paths."""
    if not os.path.isdir("/sys/kernel/config"):
        sh("modprobe", "configfs")
    if not os.path.ismount("/sys/kernel/config"):
        sh("mount", "-t", "configfs", "none", "/sys/kernel/config")
    subprocess.run(["rmmod", "null_blk"], capture_output=True)
    sh("modprobe", "null_blk", "nr_devices=0")
    rig.push("rmmod null_blk", lambda: rmmod("null_blk"))
    devs = []
    for i in range(n):
        name = f"dmrbnb{i}"
        d = os.path.join(NULLB_DIR, name)
        os.mkdir(d)

        def gone(d=d):
            try:
                with open(os.path.join(d, "power"), "w") as f:
                    f.write("0")
            except OSError:
                pass
            os.rmdir(d)
        rig.push(f"rmdir {d}", gone)
        attrs = [("size", mib), ("blocksize", blocksize), ("memory_backed", 1),
                 ("irqmode", 2), ("completion_nsec", media["completion_us"] * 1000),
                 ("hw_queue_depth", media["queue_depth"]), ("submit_queues", 1),
                 ("max_sectors", media["max_kb"] * 2)]
        if media["mbps"]:
            attrs.append(("mbps", media["mbps"]))
        attrs.append(("power", 1))
        for k, v in attrs:
            try:
                with open(os.path.join(d, k), "w") as f:
                    f.write(str(v))
            except OSError as e:
                raise Fail(f"null_blk {name}: cannot set {k}={v}: {e}")
        settle()
        # the disk is named after the configfs directory (6.x), or nullb<index>
        path = f"/dev/{name}"
        if not os.path.exists(path):
            with open(os.path.join(d, "index")) as f:
                path = f"/dev/nullb{f.read().strip()}"
        wait_path(path)
        devs.append(path)
    return devs


def make_md(rig, path, members):
    sh("mdadm", "--create", path, "--run", "--quiet", "--level=5",
       f"--raid-devices={len(members)}", "--chunk=64", "--assume-clean",
       "--metadata=1.2", *members, input="y\n")

    def stop():
        settle()
        sh("mdadm", "--stop", path)
        for m in members:
            subprocess.run(["mdadm", "--zero-superblock", m], capture_output=True)
    rig.push(f"mdadm --stop {path}", stop)
    settle()
    wait_path(path)
    return path


def dm_remove(name):
    if os.path.exists(f"/dev/mapper/{name}"):
        settle()
        sh("dmsetup", "remove", "--retry", name)


def fill(dev, nbytes, bs):
    """Sequential fill of [0, nbytes) of dev; (bytes, seconds)."""
    t = time.monotonic()
    run_fio(["--name=fill", f"--filename={dev}", "--rw=write", f"--bs={bs}",
             "--direct=1", "--ioengine=libaio", "--iodepth=4", f"--size={nbytes}"],
            f"fill {dev}", 3600)
    return {"bytes": nbytes, "bs": bs, "seconds": round(time.monotonic() - t, 1)}


class Bench:
    def __init__(self, env):
        self.env = env
        self.runs = int(env.get("DMR_BENCH_RUNS", "3"))
        self.seconds = int(env.get("DMR_BENCH_SECONDS", "3"))
        self.precondition = float(env.get("DMR_BENCH_PRECONDITION", "2"))
        self.gc_wait = float(env.get("DMR_BENCH_GC_WAIT", "60"))
        self.cell_pat = env.get("DMR_BENCH_CELLS", "all")
        self.fs_pat = env.get("DMR_BENCH_FS_JOBS", "all")
        self.fs_types = [t for t in env.get("DMR_BENCH_FS_TYPES", "ext4,xfs").split(",") if t]
        self.configs = [c for c in env.get("DMR_BENCH_CONFIGS", "raid5-4,media").split(",") if c]
        fs = env.get("DMR_BENCH_FS", "all")
        self.fs_configs = ({"raid5-4"} if fs == "1" else set() if fs == "0" else
                           set(self.configs) if fs == "all" else set(fs.split(",")))
        self.media = parse_media(env.get("DMR_BENCH_MEDIA", ""))
        self.ram_mib = int(env.get("DMR_BENCH_RAM_MIB", "256"))
        self.media_mib = int(env.get("DMR_BENCH_MEDIA_MIB", "96"))
        self.ab = env.get("DMR_BENCH_AB", "").split()
        try:
            ab_parts(self.ab)
        except ValueError as e:
            raise Fail(str(e))
        self.format_opt = env.get("DMR_BENCH_FORMAT", "").split()
        self.members = int(env.get("DMR_BENCH_MEMBERS", "4"))
        if self.members < 3:
            raise Fail("DMR_BENCH_MEMBERS: an md RAID-5 needs 3 members or more")
        try:
            self.fs_fills = parse_fills(env.get("DMR_BENCH_FS_FILL", "50,80"))
            self.fs_trims = parse_trims(env.get("DMR_BENCH_FS_TRIM", "discard,fstrim"))
            self.fs_churn = int(env.get("DMR_BENCH_FS_CHURN", "2"))
            self.fs_churn_pct = float(env.get("DMR_BENCH_FS_CHURN_PCT", "50"))
            self.wdp_pat = env.get("DMR_BENCH_WDP",
                                   "randwrite-4k-t1,randwrite-256k-*,randwrite-1m-*")
            self.wdp_window = float(env.get("DMR_BENCH_WDP_WINDOW", "0.5"))
            self.wdp_tol = float(env.get("DMR_BENCH_WDP_TOL", "0.03"))
            self.wdp_max = int(env.get("DMR_BENCH_WDP_MAX", "8"))
        except ValueError as e:
            raise Fail(str(e))
        if self.fs_churn < 0 or not 0 < self.fs_churn_pct <= 400:
            raise Fail("DMR_BENCH_FS_CHURN must be >= 0, DMR_BENCH_FS_CHURN_PCT in (0, 400]")
        if not 0 < self.wdp_window <= 4 or not 0 < self.wdp_tol < 1 or self.wdp_max < 2:
            raise Fail("DMR_BENCH_WDP_WINDOW in (0, 4], DMR_BENCH_WDP_TOL in (0, 1), "
                       "DMR_BENCH_WDP_MAX >= 2")
        self.out = env.get("DMR_OUT", "/tmp")
        if self.runs < 1 or self.seconds < 1:
            raise Fail("DMR_BENCH_RUNS and DMR_BENCH_SECONDS must be >= 1")
        for c in self.configs:
            if c not in ("raid5-4", "media"):
                raise Fail(f"DMR_BENCH_CONFIGS: unknown configuration '{c}'")
        for t in self.fs_types:
            if t not in ("ext4", "xfs"):
                raise Fail(f"DMR_BENCH_FS_TYPES: unknown filesystem '{t}'")
        self.remapctl = os.path.join(REPO, "tools", "remapctl")
        unknown = unknown_knobs(env)
        if unknown:
            print(f"bench: warning: ignoring unknown settings {', '.join(unknown)} "
                  "(see tests/vm/guest-bench.py)", file=sys.stderr, flush=True)
        self.res = {"schema": "dm-remap-bench/2", "kernel": platform.release(),
                    "date": time.strftime("%Y-%m-%d %H:%M"),
                    "module_version": "",
                    "params": {"runs": self.runs, "seconds": self.seconds,
                               "precondition": self.precondition, "gc_wait": self.gc_wait,
                               "configs": self.configs, "cells": self.cell_pat,
                               "fs": sorted(self.fs_configs), "fs_types": self.fs_types,
                               "fs_jobs": self.fs_pat, "media": self.media,
                               "ram_mib": self.ram_mib, "media_mib": self.media_mib,
                               "ab": self.ab, "fs_fill": self.fs_fills,
                               "fs_trim": self.fs_trims, "fs_churn": self.fs_churn,
                               "fs_churn_pct": self.fs_churn_pct, "wdp": self.wdp_pat,
                               "wdp_window": self.wdp_window, "wdp_tol": self.wdp_tol,
                               "wdp_max": self.wdp_max},
                    "configs": [], "goals": [],
                    "warnings": [f"unknown setting {k} ignored" for k in unknown]}

    # ------------------------------------------------------------ one cell

    def fio_args(self, cell, dev, region):
        return [f"--name={cell['id']}", f"--filename={dev}", "--direct=1",
                f"--size={region}", "--time_based", f"--runtime={self.seconds}",
                "--randrepeat=0", "--norandommap", "--thread", "--group_reporting",
                *cell["fio"]]

    def after_remap(self, cfg, remap, before, writes, what, cwd=None):
        """B's status must be sound after each of its cells; after a cell
        that wrote, wait for GC idle; the cell's status delta, from
        flushed statuses (compare.Remap.flush(); with a file system, synced
        first) so that it counts every block the cell sent."""
        try:
            st = remap.check(remap.flushed_status(cwd))
        except compare.Failure as e:
            raise Fail(f"after {what}: {e}")
        waited, idle = 0.0, True
        if writes and self.gc_wait > 0 and st["gc_state"] != "idle":
            t = time.monotonic()
            try:
                st, idle = remap.wait_gc_idle(self.gc_wait)
            except compare.Failure as e:
                raise Fail(f"after {what}: {e}")
            waited = time.monotonic() - t
        gw = cfg["gc_wait"]
        if writes:
            gw["count"] += 1
            gw["total"] += waited
            gw["max"] = max(gw["max"], waited)
            if not idle:
                gw["not_idle"] += 1
        d = compare.status_delta(before, st)
        out = {"gc_wait_s": round(waited, 1)}
        if writes:
            # a cell that wrote less than a few segments may still hold
            # them in its open segments: no meaningful WAF then
            enough = d["user_blocks"] >= WAF_MIN_SEGMENTS * st["segment_bytes"] // 4096
            out["user_mib"] = d["user_blocks"] * 4096 / MiB
            out["waf"] = d["waf"] if enough else None
            out["dev_waf"] = d.get("dev_waf") if enough else None
            out["gc_moved"] = d["gc_moved"]
            out["throttled"] = d["throttled"]
        return out

    def run_cell(self, cfg, cell, dev_name, path, region, remap, cwd=None):
        """One cell on one device (a filesystem job: in directory cwd, with
        region as the size of its file); its metrics."""
        what = f"{cell['id']} on {DEV_LABEL[dev_name]}"
        if cwd:
            args = [f"--name={cell['id']}", f"--directory={cwd}", "--time_based",
                    f"--runtime={self.seconds}", "--randrepeat=0", "--thread",
                    "--group_reporting", *cell["fio"]]
            if cell["id"] != "fs-smallfile-fsync":
                args.append(f"--size={region}")
        else:
            args = self.fio_args(cell, path, region)
        remapped = dev_name in ("remap", "remap_ab")
        old_params = {}
        if dev_name == "remap_ab":
            old_params = set_params(cfg.get("ab_params", {}))
            self.reload(cfg["ab_table"])
        elif dev_name == "remap" and cfg.get("ab"):
            # B too starts each run on a freshly loaded table, so that
            # what a reload itself costs falls on both sides of the A/B
            self.reload(cfg["geometry"]["table"])
        md = cfg["devices"]["array_b" if remapped else "bare"]
        try:
            before = remap.flushed_status(cwd) if remapped else None
            io0 = member_io(md)
            job = run_fio(args, what, self.seconds + 180)
            m = fio_metrics(job)
            m.update(member_metrics(io0, member_io(md), job["write"]["total_ios"],
                                    job["write"]["io_bytes"]))
            if remapped:
                m.update(self.after_remap(cfg, remap, before, cell["kind"] != "read", what,
                                          cwd))
        finally:
            if dev_name == "remap_ab":
                self.reload(cfg["geometry"]["table"])
                set_params(old_params)
        return m

    def reload(self, table):
        """Replace B's live table (dm-remap: a clean checkpoint, no replay)."""
        sh("dmsetup", "reload", NAME, "--table", table)
        sh("dmsetup", "resume", NAME)

    # ------------------------------------------------------------ a configuration

    def setup_arrays(self, rig, name, cfg):
        k = self.members
        if name == "raid5-4":
            devs = make_ramdisks(rig, 2 * k, self.ram_mib)
            cfg["label"] = (f"md RAID-5 over {k} x {self.ram_mib} MiB brd ramdisks, 64K chunk "
                            "(x2: A and B); CPU cost only, ramdisks have no media cost")
        else:
            devs = make_nullb(rig, 2 * k, self.media_mib, self.media)
            cfg["label"] = (f"md RAID-5 over {k} x {self.media_mib} MiB null_blk members with "
                            "the media model, 64K chunk (x2: A and B)")
            cfg["media"] = dict(self.media, member_mib=self.media_mib,
                                approximates=MEDIA_APPROX)
            cal = {}
            j = run_fio(["--name=cal-read", f"--filename={devs[0]}", "--direct=1",
                         "--rw=randread", "--bs=4k", "--ioengine=libaio", "--iodepth=1",
                         "--time_based", "--runtime=2", "--size=100%"],
                        "member calibration", 120)
            cal["randread_qd1_iops"] = j["read"]["iops"]
            j = run_fio(["--name=cal-write", f"--filename={devs[0]}", "--direct=1",
                         "--rw=write", "--bs=1m", "--ioengine=libaio", "--iodepth=4",
                         "--time_based", "--runtime=2", "--size=100%"],
                        "member calibration", 120)
            cal["seqwrite_mibs"] = j["write"]["bw_bytes"] / MiB
            cfg["calibration"] = cal
            say(f"media member alone: 4K random read QD1 {cal['randread_qd1_iops']:.0f} IOPS, "
                f"1M sequential write {cal['seqwrite_mibs']:.1f} MiB/s")
        a = make_md(rig, MD["A"], devs[:k])
        b = make_md(rig, MD["B"], devs[k:])
        return a, b

    def run_config(self, name):
        cfg = {"name": name, "label": name, "orders": [], "rounds_done": 0, "cells": {},
               "fs": {}, "waf": {}, "warnings": [], "statuses": {},
               "gc_wait": {"count": 0, "total": 0.0, "max": 0.0, "not_idle": 0}}
        self.res["configs"].append(cfg)
        rig = Rig()
        try:
            self._run_config(rig, name, cfg)
        except (Fail, compare.Failure) as e:
            cfg["failure"] = str(e)
            raise
        finally:
            rig.cleanup()

    def _run_config(self, rig, name, cfg):
        say(f"==== {name}: setting up")
        a, b = self.setup_arrays(rig, name, cfg)
        array_bytes = int(sh("blockdev", "--getsize64", a))
        ioopt = int(sh("blockdev", "--getioopt", a))
        # B: dm-remap
        remap = compare.Remap(types.SimpleNamespace(name=NAME, format_opt=self.format_opt,
                                                    create_opt=[]),
                              b, self.remapctl)
        rig.push(f"dmsetup remove {NAME}", lambda: dm_remove(NAME))
        st = remap.create()
        cfg["statuses"]["format"] = st
        logical = st["logical_bytes"]
        region = logical // MiB * MiB
        cfg["geometry"] = {"array_bytes": array_bytes, "ioopt": ioopt,
                           "remap_logical_bytes": logical, "region_bytes": region,
                           "segment_bytes": st["segment_bytes"], "segments": st["segments"],
                           "gc_low": st["gc_low"], "gc_high": st["gc_high"],
                           "gc_reserve": st["gc_reserve"],
                           "table": sh("dmsetup", "table", NAME).strip()}
        cfg["gc_wait"]["headroom_bytes"] = (st["gc_high"] - st["gc_low"]) * st["segment_bytes"]
        # A: dm-linear over it
        lname = f"{NAME}-linear"
        sectors = sh("blockdev", "--getsz", a).strip()
        rig.push(f"dmsetup remove {lname}", lambda: dm_remove(lname))
        sh("dmsetup", "create", lname, "--table", f"0 {sectors} linear {a} 0")
        settle()
        wait_path(f"/dev/mapper/{lname}")
        paths = {"bare": a, "linear": f"/dev/mapper/{lname}", "remap": remap.path}
        devices = DEVICES
        if self.ab:
            devices = DEVICES + ("remap_ab",)
            paths["remap_ab"] = remap.path
            cfg["ab"] = self.ab
            opts, cfg["ab_params"] = ab_parts(self.ab)
            cfg["ab_table"] = with_options(cfg["geometry"]["table"], opts)
        cfg["devices"] = dict(paths, array_b=b)

        # preconditioning
        say(f"{name}: A: sequential fill of {array_bytes // MiB} MiB (full stripes)")
        pre_a = fill(a, array_bytes // (6 * ioopt) * (6 * ioopt), 6 * ioopt)
        say(f"{name}: B: sequential fill + {self.precondition:g} x {logical // MiB} MiB of "
            "random 4 KiB writes")
        runner = compare.Runner(types.SimpleNamespace(precondition=self.precondition,
                                                      stall=120), None)
        t = time.monotonic()
        pre_b = runner.precondition(remap.path, logical, remap)
        t1 = time.monotonic()
        st = runner.gc_idle(remap, "the preconditioning")
        pre_b["gc_idle_seconds"] = round(time.monotonic() - t1, 1)
        pre_b["seconds"] = round(time.monotonic() - t, 1)
        cfg["precondition"] = {"bare": pre_a, "remap": pre_b}
        cfg["statuses"]["measure_start"] = st
        cfg["warnings"] += runner.warnings

        # the rounds
        cells = select(raw_cells(ioopt), self.cell_pat)
        if self.ab:
            for c in cells:
                if "remap" in c["devices"]:
                    c["devices"] = c["devices"] + ("remap_ab",)
        runs = {c["id"]: {d: [None] * self.runs for d in c["devices"]} for c in cells}
        for rnd in range(self.runs):
            order = ab_rotation(rnd) if self.ab else rotation(devices, rnd)
            cfg["orders"].append(order)
            say(f"{name}: round {rnd + 1}/{self.runs}: {', '.join(order)}")
            for c in cells:
                for d in order:
                    if d not in c["devices"]:
                        continue
                    m = self.run_cell(cfg, c, d, paths[d], region, remap)
                    runs[c["id"]][d][rnd] = m
                    say(f"  {c['id']:<22} {DEV_LABEL[d]:<9} {m['iops']:>9.0f} IOPS "
                        f"{m['bw_mibs']:>8.1f} MiB/s"
                        + (f"  waf {fmt_waf(m.get('waf'))} gc wait {m['gc_wait_s']:.1f} s"
                           if d in ("remap", "remap_ab") and "waf" in m else ""))
            cfg["rounds_done"] = rnd + 1
            self.aggregate_into(cfg["cells"], cells, runs)
            self.save()
        st_end = remap.check(remap.flushed_status())
        if self.gc_wait > 0:
            st_end, _ = remap.wait_gc_idle(max(self.gc_wait, 60))
        cfg["statuses"]["measure_end"] = st_end
        if self.ab:
            cfg["warnings"].append("A/B: write amplification over all the cells not "
                                   "measured (each reload resets the counters)")
        else:
            cfg["waf"]["measured"] = compare.status_delta(cfg["statuses"]["measure_start"],
                                                          st_end)
        cfg["raw_runs"] = runs

        # workload-dependent preconditioning: the second remapped column
        wcells = wdp_cells(cells, self.wdp_pat)
        if wcells:
            self.run_wdp(cfg, wcells, paths, region, remap)

        # filesystems
        if name in self.fs_configs and self.fs_types:
            dm_remove(lname)        # mkfs wants A to itself
            for scen in fs_scenarios(self.fs_types, self.fs_fills, self.fs_trims):
                self.run_fs(rig, cfg, scen, {"bare": a, "remap": remap.path}, region, remap)
        self.save()

    def aggregate_into(self, dest, cells, runs):
        for c in cells:
            dest[c["id"]] = aggregate_cell(c, runs[c["id"]])

    # ------------------------------------------------------------ own-workload preconditioning

    def precondition_own(self, cfg, cell, region, remap):
        """Write windows of the cell's own workload on B (each window
        DMR_BENCH_WDP_WINDOW x the region, then GC idle) until the WAF of
        the last window is within DMR_BENCH_WDP_TOL of the one before
        (settle_verdict), at most DMR_BENCH_WDP_MAX windows (a warning if
        that cap is hit).  Returns the record of the windows."""
        window = max(MiB, int(self.wdp_window * region) // MiB * MiB)
        wafs, wins = [], []
        t0 = time.monotonic()
        while True:
            before = remap.check(remap.flushed_status())
            t = time.monotonic()
            run_fio(own_precondition_args(cell, remap.path, region, window),
                    f"own preconditioning for {cell['id']}", 3600)
            st, idle = remap.wait_gc_idle(max(self.gc_wait, 60))
            d = compare.status_delta(before, st)
            wafs.append(d["waf"])
            wins.append({"waf": d["waf"], "user_mib": round(d["user_blocks"] * 4096 / MiB, 1),
                         "seconds": round(time.monotonic() - t, 1), "gc_idle": idle})
            verdict = settle_verdict(wafs, self.wdp_tol, self.wdp_max)
            say(f"  {cell['id']}: own preconditioning window {len(wafs)}: "
                f"{window // MiB} MiB, WAF {fmt_waf(d['waf'])} -> {verdict}")
            if verdict != "continue":
                break
        if verdict == "cap":
            cfg["warnings"].append(
                f"{cell['id']}: own-workload preconditioning stopped at the cap of "
                f"{self.wdp_max} windows without the WAF settling within "
                f"{100 * self.wdp_tol:g}% (WAFs {', '.join(fmt_waf(w) for w in wafs)})")
        return {"window_bytes": window, "windows": wins, "verdict": verdict,
                "seconds": round(time.monotonic() - t0, 1)}

    def run_wdp(self, cfg, cells, paths, region, remap):
        """For each cell: precondition B with the cell's own workload until
        its WAF settles, then DMR_BENCH_RUNS rounds of the cell on bare and
        remapped, the first of the two rotating."""
        cfg["wdp"] = {}
        cfg["wdp_tol"] = self.wdp_tol
        runs_all = {}
        for c in cells:
            say(f"{cfg['name']}: {c['id']}: preconditioning B with its own workload")
            pre = self.precondition_own(cfg, c, region, remap)
            cell = dict(c, devices=("bare", "remap"))
            runs = {d: [None] * self.runs for d in cell["devices"]}
            for rnd in range(self.runs):
                for d in rotation(cell["devices"], rnd):
                    m = self.run_cell(cfg, cell, d, paths[d], region, remap)
                    runs[d][rnd] = m
                    say(f"  {c['id']:<22} {DEV_LABEL[d]:<9} (own precond.) "
                        f"{m['iops']:>9.0f} IOPS {m['bw_mibs']:>8.1f} MiB/s"
                        + (f"  waf {fmt_waf(m.get('waf'))}" if d == "remap" else ""))
            res = aggregate_cell(cell, runs)
            res["precondition"] = pre
            cfg["wdp"][c["id"]] = res
            runs_all[c["id"]] = runs
            self.save()
        cfg["wdp_runs"] = runs_all

    # ------------------------------------------------------------ file systems

    def mkfs(self, fs, dev, size):
        """ext4 or XFS of size bytes on dev (the same geometry on A and B:
        B's logical capacity), discard allowed: mkfs discards the whole
        device where it can (dm-remap: every block becomes spare)."""
        if fs == "ext4":
            sh("mkfs.ext4", "-F", "-q", "-b", "4096", "-E",
               "discard,lazy_itable_init=0,lazy_journal_init=0", dev, str(size // 4096))
        else:
            sh("mkfs.xfs", "-f", "-q", "-d", f"size={size}", dev)

    def fstrim(self, mounts, rec):
        """fstrim every mount; what it reported per device in rec (a
        device without discard support, such as md RAID-5 by default,
        says so and is recorded as such)."""
        for d, mnt in mounts.items():
            p = subprocess.run(["fstrim", "-v", mnt], capture_output=True, text=True,
                               timeout=600)
            rec.setdefault(d, []).append((p.stdout or p.stderr).strip()[-200:]
                                         if p.returncode == 0 else
                                         "unsupported: " + p.stderr.strip()[-160:])

    def age(self, mnt, target, rounds, churn_bytes, trim, mounts_one, rec, seed):
        """Fill the file system at mnt to target (fraction) with files, then
        rounds of churn (create, overwrite in place, append, truncate,
        delete; pick_op keeps it near the target), churn_bytes written per
        round, sync after each, fstrim after each in fstrim mode.  Buffered
        writes of a random buffer (dm-remap neither compresses nor dedupes).
        Returns what was done."""
        import random
        rng = random.Random(seed)
        buf = os.urandom(4 * MiB)
        d = os.path.join(mnt, "age")
        os.makedirs(d, exist_ok=True)
        files = []
        counts = {op: 0 for op in FS_OPS}
        serial = [0]

        def used():
            return used_fraction(os.statvfs(mnt))

        def write(f, nbytes):
            left = nbytes
            while left > 0:
                n = min(left, MiB)
                off = rng.randrange(0, 3 * MiB) & ~4095
                f.write(buf[off:off + n])
                left -= n
            return nbytes

        def create(sizes):
            serial[0] += 1
            path = os.path.join(d, f"f{serial[0]:07d}")
            with open(path, "wb") as f:
                n = write(f, rng.choice(sizes))
            files.append(path)
            return n

        written = 0
        # the fill: files of 256 KiB to 4 MiB
        while used() < target:
            try:
                written += create((256 << 10, MiB, 2 * MiB, 4 * MiB))
            except OSError:         # ENOSPC: as full as it gets
                break
            counts["create"] += 1
        sh("sync")
        if trim == "fstrim":
            self.fstrim(mounts_one, rec)
        filled = {"used": round(used(), 4), "files": len(files), "bytes": written}
        churned = []
        for _ in range(rounds):
            w = synced = 0
            while w < churn_bytes:
                if w - synced >= CHURN_SYNC:
                    # write back as it goes, so that the churn reaches the
                    # device instead of dying in the page cache
                    os.sync()
                    synced = w
                op = pick_op(rng.random(), used(), target)
                if op in ("overwrite", "append", "truncate", "delete") and not files:
                    op = "create"
                try:
                    if op == "create":
                        w += create((16 << 10, 64 << 10, 256 << 10, MiB, 4 * MiB))
                    elif op == "overwrite":
                        path = rng.choice(files)
                        size = os.path.getsize(path)
                        n = min(rng.choice((4096, 16384, 65536, 262144)), max(size, 4096))
                        with open(path, "r+b") as f:
                            f.seek(rng.randrange(0, max(1, size - n + 1)) & ~4095)
                            w += write(f, n)
                    elif op == "append":
                        with open(rng.choice(files), "ab") as f:
                            w += write(f, rng.choice((4096, 65536, 262144, MiB)))
                    elif op == "truncate":
                        path = rng.choice(files)
                        os.truncate(path, int(os.path.getsize(path) * rng.random()) & ~4095)
                    else:
                        path = files.pop(rng.randrange(len(files)))
                        os.unlink(path)
                    counts[op] += 1
                except OSError:
                    # ENOSPC: free some room
                    if files:
                        os.unlink(files.pop(rng.randrange(len(files))))
                        counts["delete"] += 1
            sh("sync")
            if trim == "fstrim":
                self.fstrim(mounts_one, rec)
            churned.append({"bytes": w, "used": round(used(), 4)})
        return {"fill": filled, "churn": churned, "ops": counts, "files": len(files)}

    def run_fs(self, rig, cfg, scen, paths, region, remap):
        """One file system scenario on A and B side by side: mkfs (discard
        allowed) of B's logical size on both, mount (-o discard in discard
        mode), the fio file's layout, fill to the target, churn; then the
        file jobs in rounds, bare and remapped rotating, fstrim before each
        round in fstrim mode.  dm-remap's status deltas give the WAF of the
        aging and of the jobs; the bench fails if no discard reached
        dm-remap during the aging."""
        fs, sid = scen["fs"], scen["id"]
        jobs = select(fs_jobs(), self.fs_pat)
        if not jobs:
            return
        size = region
        if fs == "xfs" and size < XFS_MIN:
            warn = (f"{sid} skipped: mkfs.xfs wants more than 300 MB (dm-remap's "
                    f"capacity is {size // MiB} MiB)")
            if warn not in cfg["warnings"]:
                cfg["warnings"].append(warn)
            return
        say(f"{cfg['name']}: {sid}: {fs} on A and B, fill {scen['fill']}%, {scen['trim']}")
        out = dict(scen, jobs={}, fstrim={})
        cfg["fs"][sid] = out
        t0 = time.monotonic()
        st0 = remap.check(remap.flushed_status())
        mounts = {}
        for d, dev in paths.items():
            self.mkfs(fs, dev, size)
        st_mkfs = remap.check(remap.flushed_status())
        out["mkfs"] = compare.status_delta(st0, st_mkfs)
        for d, dev in paths.items():
            mnt = os.path.join(MNT, d)
            os.makedirs(mnt, exist_ok=True)
            opts = ["-o", "discard"] if scen["trim"] == "discard" else []
            sh("mount", "-t", fs, *opts, dev, mnt)
            rig.push(f"umount {mnt}", lambda mnt=mnt: sh("umount", mnt))
            mounts[d] = mnt
        fs_bytes = min(os.statvfs(m).f_blocks * os.statvfs(m).f_frsize
                       for m in mounts.values())
        # the fio file (part of the fill): a tenth of the file system
        file_bytes = max(16 * MiB, min(fs_bytes // 10 // MiB * MiB, 1024 * MiB))
        for d, mnt in mounts.items():
            run_fio(["--name=layout", f"--directory={mnt}", "--filename=bench.dat",
                     f"--size={file_bytes}", "--rw=write", "--bs=1m", "--direct=1",
                     "--ioengine=libaio", "--iodepth=4"], f"{sid} layout on {d}", 3600)
        # aging: each device in turn (the first rotating with the scenario)
        churn_bytes = int(self.fs_churn_pct / 100 * fs_bytes)
        out["aging"] = {}
        k = len(cfg["fs"]) - 1
        for d in rotation(("bare", "remap"), k):
            t = time.monotonic()
            a = self.age(mounts[d], scen["fill"] / 100, self.fs_churn, churn_bytes,
                         scen["trim"], {d: mounts[d]}, out["fstrim"], seed=k)
            a["seconds"] = round(time.monotonic() - t, 1)
            out["aging"][d] = a
            say(f"  {sid} aged {DEV_LABEL[d]}: used {100 * a['fill']['used']:.0f}% after the "
                f"fill, {100 * (a['churn'][-1]['used'] if a['churn'] else 0):.0f}% after "
                f"{len(a['churn'])} churn rounds ({a['seconds']:.0f} s)")
        remap.flush(mounts["remap"])
        st_aged, _ = remap.wait_gc_idle(max(self.gc_wait, 60))
        out["aging_delta"] = compare.status_delta(st_mkfs, st_aged)
        if trim_reached(out["aging_delta"]["discards"], self.fs_churn, scen["trim"]) is False:
            raise Fail(f"{sid}: no discard reached dm-remap during the aging "
                       f"({scen['trim']} mode): TRIM does not get through (status "
                       f"discards {st_aged['discards']})")
        say(f"  {sid} aging on B: WAF {fmt_waf(out['aging_delta']['waf'])}, "
            f"{out['aging_delta']['discards']} discards (mkfs: "
            f"{out['mkfs']['discards']})")
        # with DMR_BENCH_AB the jobs run on B' too: B's file system, its
        # table reloaded with the options for the run (run_cell())
        fs_devs = ("bare", "remap") + (("remap_ab",) if self.ab else ())
        jmounts = dict(mounts, remap_ab=mounts["remap"])
        runs = {j["id"]: {d: [None] * self.runs for d in fs_devs} for j in jobs}
        st_jobs = remap.check(remap.flushed_status(mounts["remap"]))
        for rnd in range(self.runs):
            if scen["trim"] == "fstrim":
                self.fstrim(mounts, out["fstrim"])
            order = rotation(fs_devs, rnd + k)
            for j in jobs:
                for d in order:
                    wd = os.path.join(jmounts[d], j["id"] if j["id"] == "fs-smallfile-fsync"
                                      else "")
                    os.makedirs(wd, exist_ok=True)
                    m = self.run_cell(cfg, j, d, None, file_bytes, remap, cwd=wd)
                    if j["id"] == "fs-smallfile-fsync":       # what a loop left behind
                        for f in os.listdir(wd):
                            os.unlink(os.path.join(wd, f))
                    runs[j["id"]][d][rnd] = m
                    say(f"  {sid} {j['id']:<20} {DEV_LABEL[d]:<9} {m['iops']:>9.0f} IOPS"
                        + (f"  waf {fmt_waf(m.get('waf'))}" if d != "bare" else ""))
            self.aggregate_into(out["jobs"], jobs, runs)
            self.save()
        out["used"] = {d: round(used_fraction(os.statvfs(m)), 4) for d, m in mounts.items()}
        for d in ("remap", "bare"):
            sh("umount", mounts[d])
            rig.undo = [u for u in rig.undo if u[0] != f"umount {mounts[d]}"]
        st_end, _ = remap.wait_gc_idle(max(self.gc_wait, 60))
        # B' reloads B's table, which resets its counters: no delta then
        out["jobs_delta"] = {} if self.ab else compare.status_delta(st_jobs, st_end)
        out["file_bytes"] = file_bytes
        out["fs_bytes"] = fs_bytes
        out["churn_bytes"] = churn_bytes
        out["seconds"] = round(time.monotonic() - t0, 1)
        cfg.setdefault("fs_runs", {})[sid] = runs
        self.save()

    # ------------------------------------------------------------ all of it

    def save(self):
        self.res["goals"] = evaluate_goals(self.res["configs"])
        with open(os.path.join(self.out, "bench.json"), "w") as f:
            json.dump(self.res, f, indent=1)

    def setup(self, rig):
        """What the configurations need loaded (run_bench())."""
        sh("modprobe", "-a", "dm-mod", "raid456")
        if not os.path.exists("/sys/module/dm_remap"):
            sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
            rig.push("rmmod dm-remap", lambda: rmmod("dm_remap"))
        self.res["module_version"] = compare.read_sys("/sys/module/dm_remap/version")

    def main(self):
        return run_bench(self, summary_text, "summary.txt", "bench")


def run_bench(bench, summary, summary_file, label):
    """The frame of both bench scripts (this one and guest-flashbench.py):
    bench.setup(rig), then bench.run_config() for each of bench.configs,
    undoing the rig on the way out whatever happens; the total time and
    any failure go into bench.res, bench.save() writes it, summary(res)
    is written to summary_file in bench.out and printed.  Exit status: 0,
    or 1 after a failure."""
    t0 = time.monotonic()
    rig = Rig()
    failed = None
    try:
        bench.setup(rig)
        for name in bench.configs:
            bench.run_config(name)
    except (Fail, compare.Failure) as e:
        failed = str(e)
    except KeyboardInterrupt:
        failed = "interrupted"
    finally:
        rig.cleanup()
    bench.res["total_seconds"] = round(time.monotonic() - t0)
    if failed:
        bench.res["failure"] = failed
    bench.save()
    text = summary(bench.res)
    with open(os.path.join(bench.out, summary_file), "w") as f:
        f.write(text + "\n")
    print("\n" + text, flush=True)
    print(f"\n{label}: results in {bench.out}", flush=True)
    if failed:
        print(f"{label}: FAILED: {failed}", file=sys.stderr, flush=True)
        return 1
    return 0


def entry(make, label):
    """A bench script's main: SIGTERM as an interrupt (the rig is undone),
    make(os.environ) -> the bench (exit 2 on bad settings), its main()."""
    def term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, term)
    try:
        bench = make(os.environ)
    except (Fail, ValueError) as e:
        print(f"{label}: {e}", file=sys.stderr)
        return 2
    return bench.main()


def main():
    return entry(Bench, "bench")


if __name__ == "__main__":
    sys.exit(main())
