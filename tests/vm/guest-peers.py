#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, part `peers` (issue 41, goal 5): dm-remap beside the
peers a user would pick instead, on the same device with the same spare.

One drive of about DMR_PEERS_MIB (1024) MiB, made afresh for every
target (every target starts on zeroed, unallocated memory): with
DMR_PEERS_MEDIA=ram (the default) a brd ramdisk (rmmod, modprobe), with
DMR_PEERS_MEDIA=raid5 md RAID-5 (64 KiB chunk) over four brd ramdisks
(the README demo's array, goal 3's "over md RAID-5"), with
DMR_PEERS_MEDIA=media md RAID-5 over four null_blk members with
guest-bench.py's media model (DMR_BENCH_MEDIA, default a fixed 2 ms per
command, one command in service per member, 150 MB/s); the members of
both arrays a third of DMR_PEERS_MIB each.  Five ways to use it:

  bare        the drive itself
  linear      dm-linear over it
  remap       dm-remap over a dm-linear of all of it (remapctl format's
              defaults; the peers sit on two dm-linear devices)
  writeboost  dm-writeboost (Debian's, scripts/peers.sh), its cache on
              the last 10% of the drive and its backing on the rest,
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
  w4k-sync   4 KiB random writes, psync, one writer, an fsync() of the
             device after each (a write, then an empty flush)
  fs-sync    fresh only: ext4 made on the way's device (mkfs.ext4's
             discard included), then guest-bench.py's fs-smallfile-fsync
             job (16 KiB files, an fsync per 4 KiB write, four writers):
             what a file system's fsync costs, its journal's flush and
             FUA writes
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
DMR_PEERS_CELLS (comma list of the cells above, default all; without a
steady cell the fill and the preconditioning are skipped),
DMR_PEERS_DIR (scripts/peers.sh's directory; required for writeboost and
bcache), DMR_PEERS_MEDIA (ram, raid5 or media).  Results: $DMR_OUT/peers.txt (printed too) and peers.json.
"""
import importlib.machinery
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMAPCTL = os.path.join(REPO, "tools", "remapctl")
RAM = "/dev/ram0"
MD = "/dev/md/dmrpeers"
WAYS = ("bare", "linear", "remap", "writeboost", "bcache")
FRESH = ("w4k-1", "w4k-10", "w4k-sync", "fs-sync")
STEADY = ("w4k-1", "w4k-10", "w4k-sync", "r1m", "r4k", "w1m")
CELLS = {
    "w4k-1": ("randwrite", "4k", ["--ioengine=psync", "--numjobs=1"]),
    "w4k-10": ("randwrite", "4k", ["--ioengine=psync", "--numjobs=10"]),
    "w4k-sync": ("randwrite", "4k", ["--ioengine=psync", "--numjobs=1", "--fsync=1"]),
    "r1m": ("read", "1M", ["--ioengine=libaio", "--iodepth=4"]),
    "r4k": ("randread", "4k", ["--ioengine=psync", "--numjobs=1"]),
    "w1m": ("randwrite", "1M", ["--ioengine=libaio", "--iodepth=4"]),
}
MiB = 1 << 20
MNT = "/tmp/dmrpeers-mnt"


def block_sysfs(dev):
    """/sys/dev/block/M:m of block device node @dev: /dev/mapper/NAME is
    a node, not a link to ../dm-N, when libdevmapper makes it
    (DM_DISABLE_UDEV, as the VM tests run)."""
    rdev = os.stat(dev).st_rdev
    return f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"


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
        with open(f"{block_sysfs(f'/dev/mapper/{n}')}/stat") as f:
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
    return run_fio(args, "read" if "read" in rw else "write", lower)


def run_fio(args, side, lower=()):
    """fio's figures for one job (its @side: read or write), the guest's
    CPU per 4 KiB block and the writes below (dm_written) over fio's."""
    c0, w0 = cpu_busy(), dm_written(lower)
    out = sh(*args)
    c1, w1 = cpu_busy(), dm_written(lower)
    job = json.loads(out[out.index("{"):])["jobs"][0]
    d = job[side]
    blocks = d["io_bytes"] / 4096
    return {"iops": d["iops"], "mibs": d["bw_bytes"] / MiB,
            "cpu_ns": 1e9 * (c1 - c0) / max(1.0, blocks),
            "waf": ((w1 - w0) * 512 / d["io_bytes"]
                    if lower and side == "write" and d["io_bytes"] else None)}


def fresh_ram(mib, n=1):
    """@n new ramdisks: brd unloaded (udev may still hold the old one for a
    moment) and loaded again, so no way inherits another's pages."""
    for _ in range(100):
        if not os.path.exists("/sys/module/brd"):
            break
        sh("udevadm", "settle", check=False)
        sh("rmmod", "brd", check=False)
        time.sleep(0.1)
    else:
        raise SystemExit("peers: brd stays loaded (/dev/ram0 in use)")
    sh("modprobe", "brd", f"rd_nr={n}", f"rd_size={mib * 1024}", "max_part=0")


def fs_cell(dev, seconds, lower=()):
    """The fs-sync cell on @dev: ext4 made on it (discard allowed, as
    guest-bench.py's mkfs), mounted, guest-bench.py's fs-smallfile-fsync
    job for @seconds in a directory of it, unmounted."""
    job = next(j for j in guest_bench().fs_jobs() if j["id"] == "fs-smallfile-fsync")
    sh("mkfs.ext4", "-F", "-q", "-b", "4096", "-E",
       "discard,lazy_itable_init=0,lazy_journal_init=0", dev)
    os.makedirs(MNT, exist_ok=True)
    sh("mount", "-t", "ext4", dev, MNT)
    try:
        wd = os.path.join(MNT, "smallfile")
        os.makedirs(wd)
        return run_fio(["fio", "--name=p", f"--directory={wd}", "--group_reporting",
                        "--output-format=json", "--time_based", f"--runtime={seconds}",
                        *job["fio"]], "write", lower)
    finally:
        sh("umount", MNT)


def load_source(path, name):
    """A script of the tree as a module; importing it runs nothing."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(REPO, path))
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def guest_bench():
    """tests/vm/guest-bench.py: its media model (make_nullb, make_md,
    parse_media)."""
    return load_source("tests/vm/guest-bench.py", "guest_bench")


# tools/compare: its Peer (the peers' setup, which compare --peers and
# the README demo use too) and bcache_bucket()
COMPARE = load_source("tools/compare", "dmr_compare")
bcache_bucket = COMPARE.bcache_bucket


class Drive:
    """What every way sits on, made afresh for each (fresh()) and undone
    (drop()): a brd ramdisk, or md RAID-5 over four null_blk members with
    the media model."""

    def __init__(self, kind, mib):
        if kind not in ("ram", "raid5", "media"):
            raise SystemExit(f"peers: DMR_PEERS_MEDIA={kind}: ram, raid5 or media")
        self.kind, self.mib, self.undo, self.path = kind, mib, [], None
        if kind != "ram":
            self.gb = guest_bench()
            self.media = self.gb.parse_media(os.environ.get("DMR_BENCH_MEDIA", ""))

    def push(self, what, fn):   # guest-bench.py's rig interface
        self.undo.append((what, fn))

    def fresh(self):
        """A new drive; its size in sectors."""
        self.drop()
        if self.kind == "ram":
            fresh_ram(self.mib)
            self.path = RAM
        elif self.kind == "raid5":
            fresh_ram(-(-self.mib // 3), 4)
            self.push("rmmod brd", lambda: sh("rmmod", "brd", check=False))
            self.path = self.gb.make_md(self, MD, [f"/dev/ram{i}" for i in range(4)])
        else:
            # 512-byte sectors, as a ramdisk's: dm-writeboost 2.2.17
            # writes single sectors (a partly dirty block goes back to
            # the backing device one sector at a time)
            devs = self.gb.make_nullb(self, 4, -(-self.mib // 3), self.media, blocksize=512)
            self.path = self.gb.make_md(self, MD, devs)
        return int(sh("blockdev", "--getsz", self.path))

    def drop(self):
        while self.undo:
            self.undo.pop()[1]()

    def label(self):
        if self.kind == "ram":
            return f"one {self.mib} MiB brd ramdisk per way"
        if self.kind == "raid5":
            return (f"one md RAID-5 per way over 4 brd ramdisks of {-(-self.mib // 3)} MiB, "
                    "64K chunk")
        m = self.media
        return (f"one md RAID-5 per way over 4 null_blk members of {-(-self.mib // 3)} MiB, "
                f"64K chunk, media model {m['completion_us']} us/command, "
                f"{m['queue_depth']} in service, {m['mbps']} MB/s")


class Stack:
    """One way over the ramdisk: up() returns the device, down() undoes.
    The peers are tools/compare's Peer: their cache on the last 10% of the
    drive, their backing on the rest."""

    def __init__(self, way, drive, sectors, peers_dir):
        self.way, self.drive, self.sectors, self.dir = way, drive, sectors, peers_dir
        self.dm = []
        self.lower = []         # what the way writes to: dm_written()
        self.peer = None

    def linear(self, name, start, length):
        sh("dmsetup", "create", name, "--table",
           f"0 {length} linear {self.drive.path} {start}")
        self.dm.append(name)
        return f"/dev/mapper/{name}"

    def up(self):
        w = self.way
        if w == "bare":
            return self.drive.path
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
        self.peer = COMPARE.Peer(w, self.drive.path, "peer",
                                 os.path.join(self.dir, "sbin", "make-bcache"))
        self.lower = [f"peer-{w}-back", f"peer-{w}-cache"]
        try:
            return self.peer.up()
        except COMPARE.Failure as e:
            raise SystemExit(f"peers: {e}")

    def down(self):
        if self.peer:
            try:
                self.peer.down()
            except COMPARE.Failure as e:
                print(f"peers: {e}", flush=True)
            self.peer = None
        for name in self.dm:
            sh("dmsetup", "remove", "--retry", name, check=False)
        self.dm = []


def pick_cells(text):
    """DMR_PEERS_CELLS (a comma list of cell names; '' or 'all': every
    cell) -> (fresh cells, steady cells), each in its own order."""
    if not text or text.strip() == "all":
        return FRESH, STEADY
    want = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in want if c not in FRESH + STEADY]
    if bad or not want:
        raise SystemExit(f"peers: DMR_PEERS_CELLS: unknown cells {bad} (known: "
                         f"{', '.join(dict.fromkeys(FRESH + STEADY))})")
    return (tuple(c for c in FRESH if c in want), tuple(c for c in STEADY if c in want))


def measure(way, drive, region, seconds, peers_dir, cells=(FRESH, STEADY)):
    """One round of one way: {phase: {cell: result}}."""
    fresh, steady = cells
    res = {"fresh": {}, "steady": {}}
    # each fresh cell on a new device (one cell of random writes can
    # write more than the region), then the fill, the preconditioning
    # and the steady cells on one more
    for c in fresh + ((None,) if steady else ()):
        sectors = drive.fresh()
        st = Stack(way, drive, sectors, peers_dir)
        try:        # down() undoes what a failed up() did too
            dev = st.up()
            low = st.lower
            if c == "fs-sync":
                res["fresh"][c] = fs_cell(dev, seconds, lower=low)
                continue
            if c:
                rw, bs, extra = CELLS[c]
                res["fresh"][c] = fio(dev, rw, bs, extra, region, seconds, lower=low)
                continue
            res["fill"] = fio(dev, "write", "1M", ["--ioengine=libaio", "--iodepth=4"], region,
                              lower=low)
            res["pre"] = fio(dev, "randwrite", "4k", ["--ioengine=libaio", "--iodepth=32"],
                             region, io_size=2 * region, lower=low)
            for c2 in steady:
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


def region_bytes(drive, ways):
    """The smallest logical size of the ways, in whole MiB."""
    sectors = drive.fresh()
    sizes = [sectors * 512]
    if "remap" in ways:
        sh(REMAPCTL, "format", "--force", drive.path)
        sh(REMAPCTL, "create", "peer-remap", drive.path)
        sizes.append(int(sh("blockdev", "--getsize64", "/dev/mapper/peer-remap")))
        sh("dmsetup", "remove", "--retry", "peer-remap")
    drive.drop()
    sizes += [COMPARE.peer_logical_bytes(w, sectors) for w in ways if w in COMPARE.PEERS]
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
    cells = pick_cells(env.get("DMR_PEERS_CELLS", ""))
    drive = Drive(env.get("DMR_PEERS_MEDIA", "ram"), mib)
    region = region_bytes(drive, ways)
    raw = {w: [] for w in ways}
    for r in range(runs):
        order = ways[r % len(ways):] + ways[:r % len(ways)]
        for w in order:
            t0 = time.time()
            try:
                raw[w].append(measure(w, drive, region, seconds, peers_dir, cells))
            finally:
                drive.drop()
            got = raw[w][-1]
            print(f"round {r + 1} {w}: {time.time() - t0:.0f} s, " + ", ".join(
                f"{ph} {c} " + (f"{v['mibs']:.0f} MiB/s" if c in ("r1m", "w1m")
                                 else f"{v['iops']:.0f} IOPS")
                for ph in ("fresh", "steady") for c, v in got[ph].items()), flush=True)
        # the report so far after every round: a run cut short keeps
        # the rounds it finished
        done = {w: v for w, v in raw.items() if len(v) == r + 1}
        res = {"kernel": os.uname().release, "date": time.strftime("%Y-%m-%d %H:%M"),
               "runs": r + 1, "seconds": seconds, "mib": mib, "region": region,
               "drive": drive.label(), "ways": [w for w in ways if w in done], "raw": done}
        report(res, out_dir, quiet=r + 1 < runs)
    return 0


def summary(res):
    """{(phase, cell): {way: {metric: agg}}}"""
    out = {}
    for w, rounds in res["raw"].items():
        # the cells the rounds measured (DMR_PEERS_CELLS)
        keys = [("fresh", c) for c in FRESH if c in rounds[0]["fresh"]] + \
               [(ph, None) for ph in ("fill", "pre") if ph in rounds[0]] + \
               [("steady", c) for c in STEADY if c in rounds[0]["steady"]]
        for ph, c in keys:
            vals = [(r[ph][c] if c else r[ph]) for r in rounds]
            row = {k: agg([v[k] for v in vals]) for k in ("iops", "mibs", "cpu_ns", "waf")}
            # CPU per block the way wrote below it: per written block over
            # the write amplification, round by round
            row["dev_ns"] = agg([v["cpu_ns"] / v["waf"] if v["cpu_ns"] and v["waf"] else None
                                 for v in vals])
            out.setdefault((ph, c), {})[w] = row
    return out


def report(res, out_dir, quiet=False):
    s = summary(res)
    ways = res["ways"]
    names = {("fresh", "w4k-1"): "4K rand write, 1 writer, fresh",
             ("fresh", "w4k-10"): "4K rand write, 10 writers, fresh",
             ("fresh", "w4k-sync"): "4K rand write + fsync, 1, fresh",
             ("fresh", "fs-sync"): "ext4 small files + fsync, fresh",
             ("fill", None): "1M seq write (fill), fresh device",
             ("pre", None): "4K rand write QD32, 2x capacity",
             ("steady", "w4k-1"): "4K rand write, 1 writer, steady",
             ("steady", "w4k-10"): "4K rand write, 10 writers, steady",
             ("steady", "w4k-sync"): "4K rand write + fsync, 1, steady",
             ("steady", "r1m"): "1M seq read, after random writes",
             ("steady", "r4k"): "4K rand read, 1 reader",
             ("steady", "w1m"): "1M rand write, steady"}
    drive = res.get("drive", f"one {res['mib']} MiB brd ramdisk per way")
    lines = [f"==== peers (issue 41 goal 5): {drive}, "
             f"region {res['region'] // MiB} MiB, {res['seconds']} s cells, "
             f"median [min-max] of {res['runs']} rounds",
             f"kernel {res['kernel']}, {res['date']}; writeboost and bcache: cache on "
             "the last 10%, backing on the rest, defaults (bcache writeback)", ""]
    w = 26
    for metric, title, unit in (("rate", "throughput", "IOPS (4K) or MiB/s (1M)"),
                                ("cpu_ns", "CPU per 4 KiB block moved (ns, whole guest, "
                                 "fio included)", "ns"),
                                ("dev_ns", "CPU per 4 KiB block written below (ns: the "
                                 "above over the write amplification)", "ns"),
                                ("waf", "write amplification (sectors written to the "
                                 "dm-linear devices below / fio's)", "x")):
        lines.append(f"-- {title}")
        head = {"rate": "  remap/bare  remap/best peer", "cpu_ns": "  remap/cheaper peer",
                "dev_ns": "  remap/cheaper peer", "waf": ""}[metric]
        lines.append(f"{'cell':36s}" + "".join(f"{x:>{w}s}" for x in ways) + head)
        for key, name in names.items():
            if key not in s:
                continue
            row = s[key]
            big = key[1] in ("r1m", "w1m") or key[0] == "fill"
            m = metric if metric != "rate" else ("mibs" if big else "iops")
            if metric in ("waf", "dev_ns") and not any(row[x][metric] for x in ways):
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
