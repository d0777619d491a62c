#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, part `writers` (issue 41, goal 6): more writers must not
mean fewer writes.

Two brd ramdisks of DMR_WRITERS_MIB (1024) MiB: bare is ram0, dm-remap is
formatted on ram1.  fio, 4 KiB random writes, O_DIRECT, over the first
DMR_WRITERS_REGION (800M) of each device, DMR_WRITERS_SECONDS (5) per run:

  psync-N     psync, N jobs (one write each in flight), N = 1 2 4 8 16
  libaio-qdN  libaio, one job at iodepth N, N = 1 8 32

Three ways, in turn within each round, the first rotating from round to
round: bare; dm-remap (module parameter inline_writes=Y: a plain write
that comes while the worker is idle is handled by its submitter); and
dm-remap with inline_writes=N (every write queued to the worker, as
before issue 41).  dm-remap is formatted afresh before each of its runs
(fresh: the issue's setting).  Then the steady state: dm-remap is
preconditioned with twice its capacity of random 4 KiB writes (libaio
QD32), GC is let go idle, and psync-1 and psync-8 run on it both ways
without formatting again (GC runs during them).  DMR_WRITERS_RUNS (3)
rounds; every figure the median [min-max] of the rounds.

Knobs: DMR_WRITERS_CELLS (comma list of patterns over the cell names,
default all), DMR_WRITERS_STEADY (0: no steady-state part).
Results: $DMR_OUT/writers.txt (printed too) and writers.json.
"""
import fnmatch
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "dmrwriters"
PARAM = "/sys/module/dm_remap/parameters/inline_writes"
CELLS = ([(f"psync-{n}", ["--ioengine=psync", f"--numjobs={n}"]) for n in (1, 2, 4, 8, 16)] +
         [(f"libaio-qd{n}", ["--ioengine=libaio", f"--iodepth={n}"]) for n in (1, 8, 32)])
STEADY = ("psync-1", "psync-8")
WAYS = ("bare", "inline", "queued")


def sh(*cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode:
        raise SystemExit(f"writers: {' '.join(cmd)}: {p.stderr.strip() or p.returncode}")
    return p.stdout


def fio(dev, args, seconds, region):
    out = sh("fio", "--name=w", f"--filename={dev}", "--direct=1", "--rw=randwrite",
             "--bs=4k", f"--size={region}", "--time_based", f"--runtime={seconds}",
             "--randrepeat=0", "--norandommap", "--group_reporting",
             "--output-format=json", *args)
    return json.loads(out[out.index("{"):])["jobs"][0]["write"]["iops"]


def status(remapctl):
    return json.loads(sh(remapctl, "status", NAME, "--json"))


def gc_idle(remapctl, limit=120):
    end = time.time() + limit
    while time.time() < end:
        if status(remapctl)["gc_state"] == "idle":
            return True
        time.sleep(0.5)
    return False


def agg(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": v}


def fmt(a):
    return f"{a['median']:8.0f} [{a['min']:.0f}-{a['max']:.0f}]"


def main():
    env = os.environ
    runs = int(env.get("DMR_WRITERS_RUNS", "3"))
    seconds = int(env.get("DMR_WRITERS_SECONDS", "5"))
    mib = int(env.get("DMR_WRITERS_MIB", "1024"))
    region = env.get("DMR_WRITERS_REGION", "800M")
    out_dir = env.get("DMR_OUT", "/tmp")
    cells = [c for c in CELLS if any(fnmatch.fnmatch(c[0], p) for p in
                                     env.get("DMR_WRITERS_CELLS", "*").split(","))]
    steady = env.get("DMR_WRITERS_STEADY", "1") != "0"
    remapctl = os.path.join(REPO, "tools", "remapctl")
    sh("modprobe", "-a", "dm-mod", "libcrc32c", "crc32c-intel")
    if not os.path.exists(PARAM):
        sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
    sh("modprobe", "brd", "rd_nr=2", f"rd_size={mib * 1024}", "max_part=0")
    bare, under, top = "/dev/ram0", "/dev/ram1", f"/dev/mapper/{NAME}"

    def fresh():
        sh("dmsetup", "remove", "--retry", NAME, check=False)
        sh(remapctl, "format", "--force", under)
        sh(remapctl, "create", NAME, under)

    def way(w):
        if w != "bare":
            with open(PARAM, "w") as f:
                f.write("Y" if w == "inline" else "N")

    res = {"kernel": os.uname().release, "date": time.strftime("%Y-%m-%d %H:%M"),
           "runs": runs, "seconds": seconds, "mib": mib, "region": region,
           "fresh": {}, "steady": {}, "inline_share": {}}
    raw = {c: {w: [] for w in WAYS} for c, _ in cells}
    for r in range(runs):
        order = WAYS[r % 3:] + WAYS[:r % 3]
        for cid, args in cells:
            for w in order:
                way(w)
                if w == "bare":
                    raw[cid][w].append(fio(bare, args, seconds, region))
                    continue
                fresh()
                st0 = status(remapctl)
                raw[cid][w].append(fio(top, args, seconds, region))
                st1 = status(remapctl)
                if w == "inline":
                    wrote = st1["user_blocks"] - st0["user_blocks"]
                    res["inline_share"].setdefault(cid, []).append(
                        (st1["inline_writes"] - st0["inline_writes"]) / max(1, wrote))
            print(f"round {r + 1} {cid}: " + ", ".join(
                f"{w} {raw[cid][w][-1]:.0f}" for w in WAYS), flush=True)
    res["fresh"] = {c: {w: agg(v) for w, v in d.items()} for c, d in raw.items()}

    if steady:
        steady_part(res, runs, seconds, region, remapctl, fresh, way, bare, top)
    sh("dmsetup", "remove", "--retry", NAME, check=False)
    report(res, region, mib, seconds, runs, out_dir)
    return 0


def steady_part(res, runs, seconds, region, remapctl, fresh, way, bare, top):
    """psync-1 and psync-8 after twice the capacity of random writes."""
    way("inline")
    fresh()
    sh("fio", "--name=pre", f"--filename={top}", "--direct=1", "--rw=randwrite", "--bs=4k",
       "--ioengine=libaio", "--iodepth=32", f"--size={region}", "--io_size=" +
       str(2 * int(sh("blockdev", "--getsize64", top))), "--randrepeat=0", "--norandommap")
    idle = gc_idle(remapctl)
    sraw = {c: {w: [] for w in WAYS} for c in STEADY}
    st0 = status(remapctl)
    for r in range(runs):
        order = WAYS[r % 3:] + WAYS[:r % 3]
        for cid in STEADY:
            args = dict(CELLS)[cid]
            for w in order:
                way(w)
                sraw[cid][w].append(fio(bare if w == "bare" else top, args, seconds, region))
                if w != "bare":
                    gc_idle(remapctl, 60)
    st1 = status(remapctl)
    way("inline")
    res["steady"] = {c: {w: agg(v) for w, v in d.items()} for c, d in sraw.items()}
    res["steady_status"] = {k: st1[k] - st0[k] for k in
                            ("user_blocks", "device_blocks", "gc_runs", "inline_writes")}
    res["steady_gc_idle_before"] = idle


def report(res, region, mib, seconds, runs, out_dir):
    lines = [f"==== writers (issue 41 goal 6): fio 4K random writes, O_DIRECT, "
             f"over {region} of a {mib} MiB brd ramdisk, {seconds} s, "
             f"median [min-max] of {runs} rounds, IOPS",
             f"kernel {res['kernel']}, {res['date']}; inline = dm-remap "
             "(inline_writes=Y), queued = dm-remap with inline_writes=N "
             "(every write to the worker: before issue 41)",
             "", "fresh device (formatted before each dm-remap run):",
             f"{'cell':12s} {'bare':>22s} {'inline':>22s} {'queued':>22s} "
             f"{'inline/bare':>11s} {'inline/queued':>13s} {'inline share':>12s}"]
    for c, d in res["fresh"].items():
        share = statistics.median(res["inline_share"][c])
        lines.append(f"{c:12s} {fmt(d['bare']):>22s} {fmt(d['inline']):>22s} "
                     f"{fmt(d['queued']):>22s} "
                     f"{d['inline']['median'] / d['bare']['median']:11.2f} "
                     f"{d['inline']['median'] / d['queued']['median']:13.2f} "
                     f"{100 * share:11.1f}%")
    f = res["fresh"]
    for w in ("inline", "queued"):
        one = f.get("psync-1", {}).get(w, {}).get("median")
        if one:
            lines.append(f"{w}: " + ", ".join(
                f"{n} writers / 1 writer {f[f'psync-{n}'][w]['median'] / one:.2f}"
                for n in (2, 4, 8, 16) if f"psync-{n}" in f))
    if res["steady"]:
        lines += ["", "steady state (2x capacity of random writes first, GC at work; "
                  f"GC idle before the cells: {res['steady_gc_idle_before']}):"]
    for c, d in res["steady"].items():
        lines.append(f"{c:12s} {fmt(d['bare']):>22s} {fmt(d['inline']):>22s} "
                     f"{fmt(d['queued']):>22s} "
                     f"{d['inline']['median'] / d['bare']['median']:11.2f} "
                     f"{d['inline']['median'] / d['queued']['median']:13.2f}")
    s = res.get("steady_status")
    if s:
        lines.append(f"steady cells: WAF {s['device_blocks'] / max(1, s['user_blocks']):.2f}, "
                 f"{s['gc_runs']} GC runs, {100 * s['inline_writes'] / max(1, s['user_blocks']):.1f}% "
                 "of the writes inline")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(out_dir, "writers.txt"), "w") as fh:
        fh.write(text)
    with open(os.path.join(out_dir, "writers.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
