#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, guest side: dm-remap against the bare device, in one run.

md RAID-5 over 4 ramdisks (64 KiB chunk, 192 KiB full stripe):
  - 4 KiB random writes, 1 / 10 / 40 threads, bare md vs dm-remap over it
  - the array's sequential full-stripe write bandwidth, and the remapped
    random-write bandwidth as a fraction of it
  - 4 KiB random reads (1 / 10 threads) over data written sequentially
  - 4 KiB random writes with fsync after each write (1 thread)
A fresh dm-remap format precedes every write test: there is no garbage
collector yet, so each test must fit in the free segments (io_size caps
what a test may write).  Results: a table on stdout and bench.json in
$DMR_OUT.
"""
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMAPCTL = os.path.join(REPO, "tools", "remapctl")
RUNTIME = int(os.environ.get("DMR_BENCH_RUNTIME", "5"))
RAM_MIB = int(os.environ.get("DMR_BENCH_RAM_MIB", "384"))
REGION = "256M"
IO_CAP = "220M"         # what one write test may write: fits a fresh device
MD = "/dev/md/dmrbench"
DM = "dmrbench"


def sh(*cmd, check=True, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def fio(dev, rw, bs, jobs, extra=()):
    out = sh("fio", "--name=b", f"--filename={dev}", f"--rw={rw}", f"--bs={bs}",
             "--direct=1", "--ioengine=psync", f"--numjobs={jobs}",
             "--group_reporting", "--time_based", f"--runtime={RUNTIME}",
             f"--size={REGION}", "--randrepeat=0", "--output-format=json",
             *extra)
    j = json.loads(out[out.index("{"):])["jobs"][0]
    side = j["write"] if "write" in rw else j["read"]
    if "rw" in rw and "read" in rw:
        side = j["read"]
    return {"iops": side["iops"], "bw": side["bw_bytes"]}


def fresh_remap():
    sh("dmsetup", "remove", "--retry", DM, check=False)
    sh(REMAPCTL, "format", "--force", MD)
    sh(REMAPCTL, "create", DM, MD)
    return f"/dev/mapper/{DM}"


def main():
    sh("modprobe", "-a", "dm-mod", "libcrc32c", "raid456")
    sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
    sh("modprobe", "brd", "rd_nr=4", f"rd_size={RAM_MIB * 1024}")
    rams = [f"/dev/ram{i}" for i in range(4)]
    sh("mdadm", "--create", MD, "--run", "--quiet", "--level=5",
       "--raid-devices=4", "--chunk=64", "--assume-clean", "--metadata=1.2",
       *rams, input="y\n")
    stripe = int(sh("blockdev", "--getioopt", MD))
    res = {"kernel": platform.release(), "device": f"md RAID-5, 4 x {RAM_MIB} MiB brd, 64K chunk",
           "full_stripe_bytes": stripe, "runtime_s": RUNTIME, "cells": {}}
    cells = res["cells"]

    def cell(name, bare, remap):
        cells[name] = {"bare": bare, "remap": remap}
        ratio = remap["iops"] / bare["iops"] if bare["iops"] else float("nan")
        print(f"{name:<34} {bare['iops']:>10.0f} {remap['iops']:>10.0f} {ratio:>7.2f}x",
              flush=True)

    print(f"{'test (IOPS)':<34} {'bare':>10} {'remapped':>10} {'ratio':>8}")
    for jobs in (1, 10, 40):
        bare = fio(MD, "randwrite", "4k", jobs)
        remap = fio(fresh_remap(), "randwrite", "4k", jobs, [f"--io_size={IO_CAP}"])
        cell(f"4K random write, {jobs} threads", bare, remap)
    bare = fio(MD, "randwrite", "4k", 1, ["--fsync=1"])
    remap = fio(fresh_remap(), "randwrite", "4k", 1, ["--fsync=1", f"--io_size={IO_CAP}"])
    cell("4K random write + fsync, 1 thread", bare, remap)

    seq = fio(MD, "write", str(stripe * 6), 1)
    remap_dev = fresh_remap()
    seq_remap = fio(remap_dev, "write", str(stripe * 6), 1, [f"--io_size={IO_CAP}"])
    cell("sequential write (6 stripes/IO)", seq, seq_remap)
    # data for the read test: the region written sequentially on both
    sh("fio", "--name=fill", f"--filename={MD}", "--rw=write", "--bs=1M",
       "--direct=1", f"--size={REGION}")
    remap_dev = fresh_remap()
    sh("fio", "--name=fill", f"--filename={remap_dev}", "--rw=write", "--bs=1M",
       "--direct=1", f"--size={REGION}")
    for jobs in (1, 10):
        cell(f"4K random read, {jobs} threads", fio(MD, "randread", "4k", jobs),
             fio(remap_dev, "randread", "4k", jobs))

    best = max(cells[f"4K random write, {j} threads"]["remap"]["bw"] for j in (1, 10, 40))
    res["remap_randwrite_over_seq_stripe_bw"] = best / seq["bw"]
    print(f"\nfull-stripe sequential write, bare md: {seq['bw'] / 2**20:.1f} MiB/s")
    print(f"best remapped 4K random write:         {best / 2**20:.1f} MiB/s"
          f" = {100 * best / seq['bw']:.0f}% of it")
    sh("dmsetup", "remove", "--retry", DM, check=False)
    sh("mdadm", "--stop", MD, check=False)
    out = os.environ.get("DMR_OUT", "/tmp")
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"bench: results in {out}/bench.json ({time.strftime('%Y-%m-%d %H:%M')})")


if __name__ == "__main__":
    main()
