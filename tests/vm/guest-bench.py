#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, guest side: tools/compare on three ramdisk configurations.

  raid5-4   md RAID-5 over 4 ramdisks (64 KiB chunk)
  raid5-8   md RAID-5 over 8 ramdisks (64 KiB chunk)
  ram       a single ramdisk: the cost of the remapping itself

For each: the bare device's sequential write bandwidth (full stripes on md:
6 stripes per write), then tools/compare with the bm-flash grid (4K to 1M,
1/10/40 threads) and every fio job of tests/fio, bare, through dm-linear
(what device-mapper itself costs) and remapped, in steady state: compare
preconditions both devices (a sequential fill of the remapped capacity,
then twice that in random 4 KiB writes) before measuring, so dm-remap's
garbage collector is at work, and measures the write cells on the fresh
devices too (--fresh).  Each configuration's results.json and chart.png go
to $DMR_OUT/<config>/; the summary (the figures the project's goals are
stated against: steady-state 4 KiB random-write IOPS remapped vs bare and
dm-remap's write amplification, fresh figures beside them) is printed and
saved as $DMR_OUT/summary.txt and $DMR_OUT/bench.json.

Environment (defaults in brackets), for shorter runs:
  DMR_BENCH_SECONDS [2]        seconds per bm-flash cell
  DMR_BENCH_FIO_RUNTIME [4]    seconds per fio job
  DMR_BENCH_FIO [all]          fio jobs (compare --fio)
  DMR_BENCH_BS [compare's]     block sizes (4K is always measured)
  DMR_BENCH_THREADS [1,10,40]  thread counts
  DMR_BENCH_REGION [capacity]  tested region (compare --size)
  DMR_BENCH_PRECONDITION [2]   compare --precondition
  DMR_BENCH_CONFIGS [all]      comma list of configurations to run
  DMR_BENCH_LINEAR [1]         0: no dm-linear grid
"""
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(REPO, "tools", "compare")
ENV = os.environ.get
SECONDS = ENV("DMR_BENCH_SECONDS", "2")
FIO_RUNTIME = ENV("DMR_BENCH_FIO_RUNTIME", "4")
FIO = ENV("DMR_BENCH_FIO", "all")
BS = ENV("DMR_BENCH_BS", "4K,8K,16K,32K,64K,128K,256K,512K,1M")
THREADS = ENV("DMR_BENCH_THREADS", "1,10,40")
REGION = ENV("DMR_BENCH_REGION", "")
PRECONDITION = ENV("DMR_BENCH_PRECONDITION", "2")
LINEAR = ENV("DMR_BENCH_LINEAR", "1") != "0"
OUT = ENV("DMR_OUT", "/tmp")
MD = "/dev/md/dmrbench"
CONFIGS = [  # name, ramdisks, MiB each, label
    ("raid5-4", 4, 384, "md RAID-5, 4 x 384 MiB ramdisks, 64K chunk"),
    ("raid5-8", 8, 192, "md RAID-5, 8 x 192 MiB ramdisks, 64K chunk"),
    ("ram", 1, 1024, "one 1 GiB ramdisk (brd)"),
]
if ENV("DMR_BENCH_CONFIGS"):
    CONFIGS = [c for c in CONFIGS if c[0] in ENV("DMR_BENCH_CONFIGS").split(",")]
if "4K" not in BS.upper().split(","):
    BS = "4K," + BS


def sh(*cmd, check=True, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def seq_write_bw(dev, bs):
    """Sequential write bandwidth of the bare device, measured after one
    whole pass: a ramdisk's first write to a page allocates it, which
    would otherwise count against the device."""
    sh("fio", "--name=fill", f"--filename={dev}", "--rw=write", f"--bs={bs}",
       "--direct=1", "--ioengine=libaio", "--iodepth=4", "--size=100%")
    out = sh("fio", "--name=seq", f"--filename={dev}", "--rw=write", f"--bs={bs}",
             "--direct=1", "--ioengine=libaio", "--iodepth=4", "--time_based",
             f"--runtime={FIO_RUNTIME}", "--size=100%", "--output-format=json")
    return json.loads(out[out.index("{"):])["jobs"][0]["write"]["bw_bytes"]


def setup(disks, mib):
    sh("modprobe", "brd", f"rd_nr={disks}", f"rd_size={mib * 1024}")
    rams = [f"/dev/ram{i}" for i in range(disks)]
    if disks == 1:
        return rams[0], 1 << 20
    sh("mdadm", "--create", MD, "--run", "--quiet", "--level=5",
       f"--raid-devices={disks}", "--chunk=64", "--assume-clean",
       "--metadata=1.2", *rams, input="y\n")
    return MD, int(sh("blockdev", "--getioopt", MD)) * 6


def teardown(dev):
    if dev == MD:
        sh("mdadm", "--stop", MD)
    sh("udevadm", "settle", check=False)
    for _ in range(50):
        if subprocess.run(["rmmod", "brd"], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    sys.exit("bench: cannot unload brd")


def cell(cells, op, bs, threads):
    for c in cells or []:
        if (c["op"], c["bs"], c["threads"]) == (op, bs, threads):
            return c
    return None


def pair(bare, remap):
    """bare and remapped IOPS of one cell, and their ratio."""
    if not (bare and remap):
        return None
    return {"bare": bare["iops"], "remap": remap["iops"],
            "ratio": remap["iops"] / bare["iops"] if bare["iops"] else None}


def summarise(name, res, seq_bw):
    bm, fresh = res["bm_flash"], res.get("bm_flash_fresh", {})
    s = {"config": name, "label": res["device"]["label"], "seq_write_bw": seq_bw,
         "logical_bytes": res["dm_remap"]["logical_bytes"],
         "region_bytes": res["params"]["region_bytes"],
         "precondition": res["params"]["precondition"],
         "randwrite_4k": {}, "randwrite_4k_fresh": {}, "randread_4k": {},
         "waf": res.get("waf", {}), "gc": res.get("gc", {}),
         "warnings": res.get("warnings", [])}
    for t in res["params"]["threads"]:
        r = cell(bm["remap"], "write", 4096, t)
        s["randwrite_4k"][t] = dict(pair(cell(bm["bare"], "write", 4096, t), r) or {},
                                    waf=r.get("waf") if r else None)
        s["randwrite_4k_fresh"][t] = pair(cell(fresh.get("bare"), "write", 4096, t),
                                          cell(fresh.get("remap"), "write", 4096, t))
        s["randread_4k"][t] = pair(cell(bm["bare"], "read", 4096, t),
                                   cell(bm["remap"], "read", 4096, t))
        li = cell(bm.get("linear"), "write", 4096, t)
        if li:
            s["randwrite_4k"][t]["linear"] = li["iops"]
    best = max([c["bw_bytes"] for c in bm["remap"]
                if c["op"] == "write" and c["bs"] == 4096] or [0])
    s["remap_4k_randwrite_best_bw"] = best
    s["remap_4k_randwrite_over_seq"] = best / seq_bw
    fb = res["fio"]["bare"].get("randwrite-4k-fsync", {}).get("write")
    fr = res["fio"]["remap"].get("randwrite-4k-fsync", {}).get("write")
    s["fsync"] = pair(fb, fr)
    return s


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def summary_text(sums):
    lines = ["==== summary: steady state (after preconditioning), remapped / bare "
             "(goals: 4K random write >= 5x on ramdisk RAID-5, >= 80% of sequential "
             "write bandwidth, reads >= 95%)"]
    for s in sums:
        w = s["waf"]
        lines += ["", f"{s['config']}: {s['label']}",
                  f"  remapped capacity {s['logical_bytes'] / 2**20:.0f} MiB, tested "
                  f"region {s['region_bytes'] / 2**20:.0f} MiB, preconditioned with "
                  f"{s['precondition']:g} x the capacity of random 4 KiB writes"]
        for key, what in (("randwrite_4k", "4K random write       "),
                          ("randwrite_4k_fresh", "4K random write, fresh"),
                          ("randread_4k", "4K random read        ")):
            cells = "  ".join(
                f"{t:>2} thr {v['bare']:>7.0f} -> {v['remap']:>7.0f} ({fmt(v['ratio'], '.2f')}x)"
                for t, v in s[key].items() if v and "bare" in v)
            if cells:
                lines.append(f"  {what} IOPS: {cells}")
        lines.append("  4K random write WAF by thread count: " + "  ".join(
            f"{t} thr {fmt(v.get('waf'), '.2f')}" for t, v in s["randwrite_4k"].items()))
        g = s["gc"]
        lines.append("  write amplification, log (device, checkpoints included): steady, "
                     f"all measured cells {fmt(w.get('steady'), '.2f')} "
                     f"({fmt(w.get('steady_device'), '.2f')}); preconditioning "
                     f"{fmt(w.get('precondition'), '.2f')} "
                     f"({fmt(w.get('precondition_device'), '.2f')}); fresh cells "
                     f"{fmt(w.get('fresh'), '.2f')} ({fmt(w.get('fresh_device'), '.2f')})")
        lines.append(f"  GC in the measured cells: {g.get('gc_runs', '-')} segments "
                     f"collected, {g.get('gc_moved', '-')} blocks moved, "
                     f"{g.get('throttled', '-')} writes waited for it")
        lin = "  ".join(f"{t:>2} thr {v['linear'] / v['bare']:.2f}x"
                        for t, v in s["randwrite_4k"].items() if v.get("linear") and v.get("bare"))
        if lin:
            lines.append(f"  dm-linear / bare, 4K random write (device-mapper floor): {lin}")
        f = s["fsync"]
        if f:
            lines.append(f"  4K random write + fsync IOPS: {f['bare']:.0f} -> {f['remap']:.0f} "
                         f"({fmt(f['ratio'], '.2f')}x)")
        lines.append(f"  sequential write, bare: {s['seq_write_bw'] / 2**20:.1f} MiB/s; best "
                     f"remapped 4K random write: {s['remap_4k_randwrite_best_bw'] / 2**20:.1f}"
                     f" MiB/s = {100 * s['remap_4k_randwrite_over_seq']:.0f}%")
        for warn in s["warnings"]:
            lines.append(f"  warning: {warn}")
    return "\n".join(lines)


def main():
    sh("modprobe", "-a", "dm-mod", "libcrc32c", "raid456")
    sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
    subprocess.run(["rmmod", "brd"], capture_output=True)
    sums = []
    for name, disks, mib, label in CONFIGS:
        print(f"\n==== {name}: {label}", flush=True)
        dev, seq_bs = setup(disks, mib)
        seq_bw = seq_write_bw(dev, seq_bs)
        print(f"sequential write, {seq_bs // 1024} KiB per I/O: "
              f"{seq_bw / 2**20:.1f} MiB/s", flush=True)
        out = os.path.join(OUT, name)
        cmd = [COMPARE, "--label", label, "--bs", BS, "--threads", THREADS,
               "--seconds", SECONDS, "--fio", FIO, "--fio-runtime", FIO_RUNTIME,
               "--precondition", PRECONDITION, "--fresh", "--name", "dmrbench",
               "--out", out, dev]
        if REGION:
            cmd[1:1] = ["--size", REGION]
        if LINEAR:
            cmd.insert(1, "--linear")
        print("# " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd)
        if p.returncode:
            sys.exit(f"bench: compare on {name} failed ({p.returncode})")
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        sums.append(summarise(name, res, seq_bw))
        teardown(dev)
    text = summary_text(sums)
    print("\n" + text)
    with open(os.path.join(OUT, "summary.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(OUT, "bench.json"), "w") as f:
        json.dump({"kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M"),
                   "seconds_per_cell": float(SECONDS), "fio_runtime": int(FIO_RUNTIME),
                   "region": REGION or "capacity", "precondition": float(PRECONDITION),
                   "configs": sums}, f, indent=1)
    print(f"\nbench: results in {OUT}")
    sh("rmmod", "dm-remap", check=False)


if __name__ == "__main__":
    main()
