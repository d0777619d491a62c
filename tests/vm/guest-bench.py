#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, guest side: tools/compare on three ramdisk configurations.

  raid5-4   md RAID-5 over 4 ramdisks (64 KiB chunk)
  raid5-8   md RAID-5 over 8 ramdisks (64 KiB chunk)
  ram       a single ramdisk: the cost of the remapping itself

For each: the bare device's sequential write bandwidth (full stripes on md:
6 stripes per write), then tools/compare with the bm-flash grid (4K to 1M,
1/10/40 threads) and every fio job of tests/fio, bare, through dm-linear
(what device-mapper itself costs) and remapped.  Each
configuration's results.json and chart.png go to $DMR_OUT/<config>/; the
summary (the figures the project's goals are stated against) is printed
and saved as $DMR_OUT/bench.json.
"""
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(REPO, "tools", "compare")
SECONDS = os.environ.get("DMR_BENCH_SECONDS", "2")
FIO_RUNTIME = os.environ.get("DMR_BENCH_FIO_RUNTIME", "4")
REGION = os.environ.get("DMR_BENCH_REGION", "256M")
OUT = os.environ.get("DMR_OUT", "/tmp")
MD = "/dev/md/dmrbench"
CONFIGS = [  # name, ramdisks, MiB each, label
    ("raid5-4", 4, 384, "md RAID-5, 4 x 384 MiB ramdisks, 64K chunk"),
    ("raid5-8", 8, 192, "md RAID-5, 8 x 192 MiB ramdisks, 64K chunk"),
    ("ram", 1, 1024, "one 1 GiB ramdisk (brd)"),
]


def sh(*cmd, check=True, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def seq_write_bw(dev, bs):
    """Sequential write bandwidth of the bare device, measured after one
    whole pass: a ramdisk's first write to a page allocates it, which
    would otherwise count against the device (compare's bare and remapped
    tests run over a region it has written already)."""
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


def cell(res, side, op, bs, threads):
    for c in res["bm_flash"][side]:
        if (c["op"], c["bs"], c["threads"]) == (op, bs, threads):
            return c
    return None


def summarise(name, res, seq_bw):
    s = {"config": name, "label": res["device"]["label"], "seq_write_bw": seq_bw,
         "randwrite_4k": {}, "randread_4k": {}}
    for t in res["params"]["threads"]:
        for key, op in (("randwrite_4k", "write"), ("randread_4k", "read")):
            b, r = cell(res, "bare", op, 4096, t), cell(res, "remap", op, 4096, t)
            li = cell(res, "linear", op, 4096, t)
            s[key][t] = {"bare": b["iops"], "remap": r["iops"], "linear": li["iops"],
                         "ratio": r["iops"] / b["iops"],
                         "linear_ratio": li["iops"] / b["iops"]}
    best = max(c["bw_bytes"] for c in res["bm_flash"]["remap"]
               if c["op"] == "write" and c["bs"] == 4096)
    s["remap_4k_randwrite_best_bw"] = best
    s["remap_4k_randwrite_over_seq"] = best / seq_bw
    fs = res["fio"]
    b = fs["bare"]["randwrite-4k-fsync"]["write"]["iops"]
    r = fs["remap"]["randwrite-4k-fsync"]["write"]["iops"]
    s["fsync"] = {"bare": b, "remap": r, "ratio": r / b}
    s["remap_refreshes"] = res["remap_refreshes"]
    return s


def print_summary(sums):
    print("\n==== summary: remapped / bare (goals: 4K random write >= 5x on "
          "ramdisk RAID-5, >= 80% of sequential write bandwidth, reads >= 95%)")
    for s in sums:
        print(f"\n{s['config']}: {s['label']}")
        for key, what in (("randwrite_4k", "4K random write"),
                          ("randread_4k", "4K random read ")):
            cells = "  ".join(f"{t:>2} thr {v['bare']:>7.0f} -> {v['remap']:>7.0f} "
                              f"({v['ratio']:.2f}x)" for t, v in s[key].items())
            print(f"  {what} IOPS: {cells}")
            cells = "  ".join(f"{t:>2} thr {v['linear_ratio']:.2f}x" for t, v in s[key].items())
            print(f"    dm-linear / bare (device-mapper floor): {cells}")
        f = s["fsync"]
        print(f"  4K random write + fsync IOPS: {f['bare']:.0f} -> {f['remap']:.0f} "
              f"({f['ratio']:.2f}x)")
        print(f"  sequential write, bare: {s['seq_write_bw'] / 2**20:.1f} MiB/s; best "
              f"remapped 4K random write: {s['remap_4k_randwrite_best_bw'] / 2**20:.1f}"
              f" MiB/s = {100 * s['remap_4k_randwrite_over_seq']:.0f}%")


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
        p = subprocess.run([COMPARE, "--label", label, "--threads", "1,10,40",
                            "--seconds", SECONDS, "--size", REGION, "--fio", "all",
                            "--fio-runtime", FIO_RUNTIME, "--name", "dmrbench", "--linear",
                            "--out", out, dev])
        if p.returncode:
            sys.exit(f"bench: compare on {name} failed ({p.returncode})")
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        sums.append(summarise(name, res, seq_bw))
        teardown(dev)
    print_summary(sums)
    with open(os.path.join(OUT, "bench.json"), "w") as f:
        json.dump({"kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M"),
                   "seconds_per_cell": float(SECONDS), "fio_runtime": int(FIO_RUNTIME),
                   "region": REGION, "configs": sums}, f, indent=1)
    print(f"\nbench: results in {OUT}")


if __name__ == "__main__":
    main()
