#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, part `peers` (issue 41, goal 5): dm-remap beside the
peers a user would pick instead, on the same device with the same spare.

One brd ramdisk of DMR_PEERS_MIB (1024) MiB, loaded afresh for every
target (rmmod, modprobe: every target starts on zeroed, unallocated
memory), and five ways to use it:

  bare        the ramdisk itself
  linear      dm-linear over it
  remap       dm-remap over a dm-linear of all of it (remapctl format's
              defaults; the peers sit on two dm-linear devices)
  writeboost  dm-writeboost (Debian's, scripts/peers.sh), its cache on
              the last 10% of the ramdisk and its backing on the rest,
              default options (as its README creates it, less the
              writeback_threshold of its example)
  bcache      bcache in writeback mode (in the kernel; make-bcache from
              Debian's bcache-tools), the same split, default tunables
              (sequential_cutoff 4 MiB)

Every way is measured over the same logical region, the smallest of
their logical sizes (dm-remap's, with its default spare).  For each way:
the fresh cells, each on a new device, then on one more a sequential
fill of the region
(1 MiB writes), twice the region of 4 KiB random writes (libaio QD32),
then the steady cells.  fio, O_DIRECT, DMR_PEERS_SECONDS (10) per cell:

  w4k-1      4 KiB random writes, psync, one writer
  w4k-10     4 KiB random writes, psync, ten writers
  r1m        1 MiB sequential reads, libaio QD4 (after the random writes)
  r4k        4 KiB random reads, psync, one reader
  w1m        1 MiB random writes (1 MiB aligned), libaio QD4

Over a ramdisk nothing costs but the CPU, so beside each figure goes the
CPU the whole guest spent per 4 KiB block moved (busy time in
/proc/stat, fio's own included: the bare column is that floor), and the
write amplification: the sectors written to the dm-linear devices the
way sits on (brd keeps no statistics) over fio's.  Every way pays the
same emulator.

DMR_PEERS_RUNS (3) rounds, the ways in a rotating order; every figure the
median [min-max] of the rounds.  Knobs: DMR_PEERS_WAYS (comma list),
DMR_PEERS_DIR (scripts/peers.sh's directory; required for writeboost and
bcache).  Results: $DMR_OUT/peers.txt (printed too) and peers.json.
"""
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMAPCTL = os.path.join(REPO, "tools", "remapctl")
RAM = "/dev/ram0"
WAYS = ("bare", "linear", "remap", "writeboost", "bcache")
FRESH = ("w4k-1", "w4k-10")
STEADY = ("w4k-1", "w4k-10", "r1m", "r4k", "w1m")
CELLS = {
    "w4k-1": ("randwrite", "4k", ["--ioengine=psync", "--numjobs=1"]),
    "w4k-10": ("randwrite", "4k", ["--ioengine=psync", "--numjobs=10"]),
    "r1m": ("read", "1M", ["--ioengine=libaio", "--iodepth=4"]),
    "r4k": ("randread", "4k", ["--ioengine=psync", "--numjobs=1"]),
    "w1m": ("randwrite", "1M", ["--ioengine=libaio", "--iodepth=4"]),
}
MiB = 1 << 20


def sh(*cmd, check=True, inp=None):
    p = subprocess.run(cmd, capture_output=True, text=True, input=inp)
    if check and p.returncode:
        raise SystemExit(f"peers: {' '.join(cmd)}: {p.stderr.strip() or p.returncode}")
    return p.stdout


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def cpu_busy():
    """Busy seconds of all CPUs so far (/proc/stat, USER_HZ 100)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / 100.0


def dm_written(names):
    """Sectors written so far to the device-mapper devices @names (brd
    keeps no I/O statistics; the dm-linear devices a way sits on do)."""
    total = 0
    for n in names:
        dm = os.path.basename(os.path.realpath(f"/dev/mapper/{n}"))
        with open(f"/sys/block/{dm}/stat") as f:
            total += int(f.read().split()[6])
    return total


def fio(dev, rw, bs, extra, region, seconds=None, io_size=None, lower=()):
    args = ["fio", "--name=p", f"--filename={dev}", "--direct=1", f"--rw={rw}",
            f"--bs={bs}", f"--size={region}", "--randrepeat=0", "--norandommap",
            "--group_reporting", "--output-format=json", *extra]
    if seconds:
        args += ["--time_based", f"--runtime={seconds}"]
    if io_size:
        args.append(f"--io_size={io_size}")
    c0, w0 = cpu_busy(), dm_written(lower)
    out = sh(*args)
    c1, w1 = cpu_busy(), dm_written(lower)
    job = json.loads(out[out.index("{"):])["jobs"][0]
    d = job["read" if "read" in rw else "write"]
    blocks = d["io_bytes"] / 4096
    return {"iops": d["iops"], "mibs": d["bw_bytes"] / MiB,
            "cpu_ns": 1e9 * (c1 - c0) / max(1.0, blocks),
            "waf": ((w1 - w0) * 512 / d["io_bytes"]
                    if lower and "write" in rw and d["io_bytes"] else None)}


def fresh_ram(mib):
    """A new ramdisk: brd unloaded (udev may still hold the old one for a
    moment) and loaded again, so no way inherits another's pages."""
    for _ in range(100):
        if not os.path.exists("/sys/module/brd"):
            break
        sh("udevadm", "settle", check=False)
        sh("rmmod", "brd", check=False)
        time.sleep(0.1)
    else:
        raise SystemExit("peers: brd stays loaded (/dev/ram0 in use)")
    sh("modprobe", "brd", "rd_nr=1", f"rd_size={mib * 1024}", "max_part=0")


def bcache_bucket(cache_bytes):
    """make-bcache's bucket size for a cache of @cache_bytes: 512 KiB, or
    less, a power of two, so that there are more than 1024 buckets."""
    b = 512 << 10
    while b > 4096 and cache_bytes // b <= 1024:
        b >>= 1
    return b


class Stack:
    """One way over the ramdisk: up() returns the device, down() undoes."""

    def __init__(self, way, sectors, peers_dir):
        self.way, self.sectors, self.dir = way, sectors, peers_dir
        self.cache = (sectors // 10) // 2048 * 2048
        self.back = sectors - self.cache
        self.dm = []
        self.lower = []         # what the way writes to: dm_written()

    def linear(self, name, start, length):
        sh("dmsetup", "create", name, "--table", f"0 {length} linear {RAM} {start}")
        self.dm.append(name)
        return f"/dev/mapper/{name}"

    def up(self):
        w = self.way
        if w == "bare":
            return RAM
        if w == "linear":
            self.lower = ["peer-linear"]
            return self.linear("peer-linear", 0, self.sectors)
        if w == "remap":
            # over a dm-linear of the whole ramdisk, as the peers sit on
            # two: the same layer's cost, and its write count
            under = self.linear("peer-remap-under", 0, self.sectors)
            self.lower = ["peer-remap-under"]
            sh(REMAPCTL, "format", "--force", under)
            sh(REMAPCTL, "create", "peer-remap", under)
            self.dm.insert(0, "peer-remap")
            return "/dev/mapper/peer-remap"
        back = self.linear(f"peer-{w}-back", 0, self.back)
        cache = self.linear(f"peer-{w}-cache", self.back, self.cache)
        self.lower = [f"peer-{w}-back", f"peer-{w}-cache"]
        if w == "writeboost":
            # a zeroed first sector makes writeboost format its cache
            sh("dd", "if=/dev/zero", f"of={cache}", "bs=512", "count=1", "oflag=direct")
            sh("dmsetup", "create", "peer-wb", "--table",
               f"0 {self.back} writeboost {back} {cache}")
            self.dm.insert(0, "peer-wb")
            return "/dev/mapper/peer-wb"
        # the kernel refuses a cache of 512 buckets or fewer ("nbuckets
        # is too small"): buckets of make-bcache's default 512 KiB, or
        # the largest power of two that makes more than 1024 (bucket size
        # is an erase-block hint; a ramdisk has none)
        sh(os.path.join(self.dir, "sbin", "make-bcache"), "--writeback",
           "--bucket", f"{bcache_bucket(self.cache * 512) >> 10}k", "-B", back, "-C", cache)
        for d in (cache, back):
            write("/sys/fs/bcache/register", d)
        for _ in range(200):
            if os.path.exists("/sys/block/bcache0/bcache/state") and \
               os.path.exists("/dev/bcache0"):
                break
            time.sleep(0.1)
        with open("/sys/block/bcache0/bcache/cache_mode") as f:
            mode = f.read()
        if "[writeback]" not in mode:
            raise SystemExit(f"peers: bcache cache_mode {mode.strip()}")
        with open("/sys/block/bcache0/bcache/state") as f:
            state = f.read().strip()
        if state not in ("clean", "dirty"):
            raise SystemExit(f"peers: bcache0 not attached to its cache ({state})")
        return "/dev/bcache0"

    def down(self):
        if self.way == "bcache" and os.path.exists("/sys/block/bcache0/bcache/stop"):
            sets = [e for e in os.listdir("/sys/fs/bcache") if "-" in e]
            write("/sys/block/bcache0/bcache/stop", "1")
            for s in sets:
                write(f"/sys/fs/bcache/{s}/stop", "1")
            for _ in range(300):
                if not os.path.exists("/sys/block/bcache0") and \
                   not any("-" in e for e in os.listdir("/sys/fs/bcache")):
                    break
                time.sleep(0.1)
        for name in self.dm:
            sh("dmsetup", "remove", "--retry", name, check=False)
        self.dm = []


def measure(way, sectors, region, seconds, peers_dir):
    """One round of one way: {phase: {cell: result}}."""
    res = {"fresh": {}, "steady": {}}
    # each fresh cell on a new device (one cell of random writes can
    # write more than the region), then the fill, the preconditioning
    # and the steady cells on one more
    for c in FRESH + (None,):
        fresh_ram(sectors // 2048)
        st = Stack(way, sectors, peers_dir)
        dev = st.up()
        low = st.lower
        try:
            if c:
                rw, bs, extra = CELLS[c]
                res["fresh"][c] = fio(dev, rw, bs, extra, region, seconds, lower=low)
                continue
            res["fill"] = fio(dev, "write", "1M", ["--ioengine=libaio", "--iodepth=4"], region,
                              lower=low)
            res["pre"] = fio(dev, "randwrite", "4k", ["--ioengine=libaio", "--iodepth=32"],
                             region, io_size=2 * region, lower=low)
            for c2 in STEADY:
                rw, bs, extra = CELLS[c2]
                res["steady"][c2] = fio(dev, rw, bs, extra, region, seconds, lower=low)
        finally:
            st.down()
    return res


def agg(v):
    v = [x for x in v if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": v}


def fmt(a, f="{:.0f}"):
    if not a:
        return "-"
    return f"{f.format(a['median'])} [{f.format(a['min'])}-{f.format(a['max'])}]"


def region_bytes(mib, ways):
    """The smallest logical size of the ways, in whole MiB."""
    sizes = [mib * MiB]
    if "remap" in ways:
        fresh_ram(mib)
        sh(REMAPCTL, "format", "--force", RAM)
        sh(REMAPCTL, "create", "peer-remap", RAM)
        sizes.append(int(sh("blockdev", "--getsize64", "/dev/mapper/peer-remap")))
        sh("dmsetup", "remove", "--retry", "peer-remap")
    if "writeboost" in ways or "bcache" in ways:
        sectors = mib * 2048
        # bcache's backing device keeps 8 KiB for its superblock
        sizes.append((sectors - (sectors // 10) // 2048 * 2048 - 16) * 512)
    return min(sizes) // MiB * MiB


def main():
    env = os.environ
    runs = int(env.get("DMR_PEERS_RUNS", "3"))
    seconds = int(env.get("DMR_PEERS_SECONDS", "10"))
    mib = int(env.get("DMR_PEERS_MIB", "1024"))
    ways = [w for w in env.get("DMR_PEERS_WAYS", ",".join(WAYS)).split(",") if w]
    bad = [w for w in ways if w not in WAYS]
    if bad:
        raise SystemExit(f"peers: unknown ways {bad} (known: {', '.join(WAYS)})")
    peers_dir = env.get("DMR_PEERS_DIR", "")
    out_dir = env.get("DMR_OUT", "/tmp")
    sh("modprobe", "-a", "dm-mod", "libcrc32c", "crc32c-intel")
    if not os.path.exists("/sys/module/dm_remap"):
        sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
    if "writeboost" in ways and not os.path.exists("/sys/module/dm_writeboost"):
        sh("insmod", os.path.join(peers_dir, "wb", "dm-writeboost.ko"))
    if "bcache" in ways:
        sh("modprobe", "bcache")
    region = region_bytes(mib, ways)
    sectors = mib * 2048
    raw = {w: [] for w in ways}
    for r in range(runs):
        order = ways[r % len(ways):] + ways[:r % len(ways)]
        for w in order:
            t0 = time.time()
            raw[w].append(measure(w, sectors, region, seconds, peers_dir))
            s = raw[w][-1]["steady"]
            print(f"round {r + 1} {w}: {time.time() - t0:.0f} s, steady w4k-1 "
                  f"{s['w4k-1']['iops']:.0f} IOPS, w4k-10 {s['w4k-10']['iops']:.0f}, "
                  f"r1m {s['r1m']['mibs']:.0f} MiB/s", flush=True)
        # the report so far after every round: a run cut short keeps
        # the rounds it finished
        done = {w: v for w, v in raw.items() if len(v) == r + 1}
        res = {"kernel": os.uname().release, "date": time.strftime("%Y-%m-%d %H:%M"),
               "runs": r + 1, "seconds": seconds, "mib": mib, "region": region,
               "ways": [w for w in ways if w in done], "raw": done}
        report(res, out_dir, quiet=r + 1 < runs)
    return 0


def summary(res):
    """{(phase, cell): {way: {metric: agg}}}"""
    out = {}
    for w, rounds in res["raw"].items():
        keys = [("fresh", c) for c in FRESH] + [("fill", None), ("pre", None)] + \
               [("steady", c) for c in STEADY]
        for ph, c in keys:
            vals = [(r[ph][c] if c else r[ph]) for r in rounds]
            out.setdefault((ph, c), {})[w] = {
                k: agg([v[k] for v in vals]) for k in ("iops", "mibs", "cpu_ns", "waf")}
    return out


def report(res, out_dir, quiet=False):
    s = summary(res)
    ways = res["ways"]
    names = {("fresh", "w4k-1"): "4K rand write, 1 writer, fresh",
             ("fresh", "w4k-10"): "4K rand write, 10 writers, fresh",
             ("fill", None): "1M seq write (fill), fresh device",
             ("pre", None): "4K rand write QD32, 2x capacity",
             ("steady", "w4k-1"): "4K rand write, 1 writer, steady",
             ("steady", "w4k-10"): "4K rand write, 10 writers, steady",
             ("steady", "r1m"): "1M seq read, after random writes",
             ("steady", "r4k"): "4K rand read, 1 reader",
             ("steady", "w1m"): "1M rand write, steady"}
    lines = [f"==== peers (issue 41 goal 5): one {res['mib']} MiB brd ramdisk per way, "
             f"region {res['region'] // MiB} MiB, {res['seconds']} s cells, "
             f"median [min-max] of {res['runs']} rounds",
             f"kernel {res['kernel']}, {res['date']}; writeboost and bcache: cache on "
             "the last 10%, backing on the rest, defaults (bcache writeback)", ""]
    w = 22
    for metric, title, unit in (("rate", "throughput", "IOPS (4K) or MiB/s (1M)"),
                                ("cpu_ns", "CPU per 4 KiB block moved (ns, whole guest, "
                                 "fio included)", "ns"),
                                ("waf", "write amplification (sectors written to the "
                                 "dm-linear devices below / fio's)", "x")):
        lines.append(f"-- {title}")
        head = {"rate": "  remap/bare  remap/best peer", "cpu_ns": "  remap/cheaper peer",
                "waf": ""}[metric]
        lines.append(f"{'cell':36s}" + "".join(f"{x:>{w}s}" for x in ways) + head)
        for key, name in names.items():
            if key not in s:
                continue
            row = s[key]
            big = key[1] in ("r1m", "w1m") or key[0] == "fill"
            m = metric if metric != "rate" else ("mibs" if big else "iops")
            if metric == "waf" and not any(row[x]["waf"] for x in ways):
                continue
            f = "{:.2f}" if metric == "waf" else "{:.0f}"
            cells = "".join(f"{fmt(row[x][m], f):>{w}s}" for x in ways)
            extra = ""
            if metric != "waf" and "remap" in ways and row["remap"][m]:
                mine = row["remap"][m]["median"]
                peers = [row[x][m]["median"] for x in ("writeboost", "bcache")
                         if x in ways and row[x][m]]
                if metric == "rate":
                    bare = row["bare"][m]["median"] if "bare" in ways and row["bare"][m] else 0
                    extra = f"  {mine / bare:10.2f}" if bare else f"  {'-':>10s}"
                    if peers:
                        extra += f"  {mine / max(peers):15.2f}"
                elif peers:
                    extra = f"  {mine / min(peers):18.2f}"
            lines.append(f"{name:36s}{cells}{extra}")
        lines.append("")
    text = "\n".join(lines) + "\n"
    if not quiet:
        print(text)
    with open(os.path.join(out_dir, "peers.txt"), "w") as fh:
        fh.write(text)
    with open(os.path.join(out_dir, "peers.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
