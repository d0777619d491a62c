#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of the map cache measurement (issue 26, "a map that pages"):

  tests/vm/run-vm.sh --mem 12288 OUTDIR -- \\
      /usr/bin/python3 tests/vm/guest-mapcache.py [ROUNDS] [loop|media|gc|ckpt,...]

One device of 44 GiB, sparse: a loop file in the guest's tmpfs (loop, the
default: what it measures is the CPU path), or a memory-backed null_blk
device that charges every command a service time (media: the model of
one member of make bench's media configuration, MEDIA below, where a
map miss costs one command more), formatted
(10% spare: about 40 GiB logical, a map of about 40 MiB, 10 000 pages).
Its first 512 MiB are written sequentially (the hot set: 128 pages), then one
block in every map page (so that every page holds a mapped block and a
read anywhere needs its page).  Then, for each table in turn (rotated
from round to round): no map_cache (the whole map), map_cache at 100%,
25% and 5% of the map's MiB, three jobs, one thread, psync, 4 KiB:

  hot-randread   random reads in the hot set (its pages fit every cache)
  hot-randwrite  random writes in the hot set
  all-randread   random reads over the whole device (a page out of a
                 cache of 25% is read back for 3 reads in 4)

Each job runs in windows of 4 s until two windows in a row are within
10% of each other (at most 6), then 12 s measured.  A table's ratio is
taken in each round against the whole map's figure of the same round
(the rounds rotate the order: with 4 rounds or more each table runs in
each place), and
the summary gives the median of those ratios and the worst one.  The log's writes
fill the guest's tmpfs (no GC runs on so empty a device): 12 GiB of
guest RAM, and a write run stops after 2500 writes per second of it
(its IOPS are then those of the time it took).  Per job: IOPS, the
ratio to the whole-map table, map pages read back per I/O (status field
33), and the time a miss costs: the extra time per I/O over the
whole-map table divided by the misses per I/O.  Under TCG the ratios
measure the emulator (a miss's CRC costs ~100x a real CPU's); what
carries over is the misses per I/O.

gc (issue 41, "Also": GC read back the map page of every block of its
victim, dead ones included, one synchronous read at a time): one device
of GC_SIZE on a memory-backed null_blk device with a flash-like read
latency and a queue (GC_MEDIA: a command takes its time, 32 at once),
formatted with its defaults.  It is filled with random 4 KiB writes,
each block once (fio's random map), so that a victim's blocks are
scattered over the map's pages as in steady state (a sequential fill's
victims need one page each), by a table without map_cache (with one, a
random fill forces a checkpoint for every few pages); then its table
with map_cache 1 (half of the map) writes random 4 KiB writes over all
of it (fio,
libaio, QD 8) until GC has freed segments for a capacity's tenth; then
windows of GC_WINDOW s in the order
Y N N Y (repeated ROUNDS times) of the module parameter gc_prefetch (Y:
GC reads its victim's map pages ahead, together, and its walk ends at
the last valid block; N: each block's page as its test needs it, to the
segment's end, as before).  Per window: write IOPS, blocks GC moved,
map pages read back per block moved (GC's and the writes' own: the
writes' are the same on both sides), and the time a window's write
takes.  The summary gives the median IOPS of each side, the median and
worst ratio Y / N of the windows next to each other, and the pages read
back per block moved.

ckpt (issue 41, "Also": a forced checkpoint wrote both tables whole, and
the first checkpoint after a load rewrote the whole map into the other
slot): one device of CK_SIZE, a sparse loop file, formatted with its
defaults, a block written in every map page (a map of CK_SIZE / 1024
real blocks).  Then, per round, for each value of the module parameter
ckpt_incremental (N: as before; Y: only changed table blocks, a clean
checkpoint to both slots; the order alternates between rounds): a load
and a clean removal (so the loads below find that side's removal), load
it with map_cache 1, CK_WRITES random 4 KiB writes over all of it (fio,
psync: the cache forces checkpoints), a clean removal, a load, one
write and a checkpoint, a removal.  Per side: the checkpoints the
writes forced, table blocks written per checkpoint (status field 38),
blocks the device wrote per 4 KiB written, and what the removal and the
load with its first checkpoint read and wrote (the loop device's own
counts).
"""
import json
import mmap
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMAPCTL = os.path.join(REPO, "tools", "remapctl")
IMG = "/tmp/dmr-mapcache.img"
NAME = "dmr-mc"
DEV = "/dev/mapper/" + NAME
SIZE = 44 << 30
HOT = 512 << 20
PAGE = 1024 * 4096           # logical bytes a map page maps
WINDOW, MEASURE, TOL, MAX_WINDOWS = 4, 12, 0.10, 6
# the media model of one member of make bench's media configuration
# (guest-bench.py's DMR_BENCH_MEDIA): a service time per command, one
# command at a time, a bandwidth cap (null_blk's completion_nsec,
# hw_queue_depth, mbps).  Its 2 ms dwarf what a request costs the CPU
# under TCG (0.1-0.4 ms), whose noise the loop runs measure as much as
# the map cache.
MEDIA = {"completion_us": 2000, "queue_depth": 1, "mbps": 150}
NULLB = "/sys/kernel/config/nullb/dmrmc"
# the gc phase: a flash-like device (read latency, 32 commands at once)
GC_SIZE = 2 << 30
GC_MEDIA = {"completion_us": 200, "queue_depth": 32, "mbps": 0}
GC_WINDOW = 10
GC_PARAM = "/sys/module/dm_remap/parameters/gc_prefetch"
# the ckpt phase
CK_SIZE = 64 << 30
CK_IMG = "/tmp/dmr-ckpt.img"
CK_WRITES = 2000
CK_PARAM = "/sys/module/dm_remap/parameters/ckpt_incremental"


def block_sysfs(dev):
    """/sys/dev/block/M:m of block device node @dev: /dev/mapper/NAME is
    a node, not a link to ../dm-N, when libdevmapper makes it
    (DM_DISABLE_UDEV, as the VM tests run)."""
    rdev = os.stat(dev).st_rdev
    return f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"


def sh(*cmd, check=True, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    return p.stdout


def status():
    out = json.loads(sh(REMAPCTL, "status", NAME, "--json"))
    return out[0] if isinstance(out, list) else out


def fio(job, runtime, size_bytes):
    rw = {"hot-randread": "randread", "hot-randwrite": "randwrite",
          "all-randread": "randread"}[job]
    # the writes go to the log in the guest's tmpfs: at most 2500 per
    # second of the run (no GC frees any space on so empty a device)
    # (fio's time_based ignores number_ios: a write run is not time based)
    cap = [f"--number_ios={2500 * runtime}"] if rw == "randwrite" else ["--time_based"]
    out = sh("fio", "--name=j", f"--filename={DEV}", "--direct=1", f"--rw={rw}",
             "--bs=4k", "--ioengine=psync", f"--size={size_bytes}",
             f"--runtime={runtime}", "--randrepeat=0", "--output-format=json", *cap)
    j = json.loads(out[out.index("{"):])["jobs"][0]
    d = j["write" if rw == "randwrite" else "read"]
    return d["iops"], d["total_ios"]


def run_job(job, size):
    area = HOT if job.startswith("hot") else size
    prev, windows = None, 0
    while windows < MAX_WINDOWS:
        iops, _ = fio(job, WINDOW, area)
        windows += 1
        if prev and abs(iops - prev) <= TOL * max(iops, prev):
            break
        prev = iops
    st0 = status()
    iops, ios = fio(job, MEASURE, area)
    st1 = status()
    misses = st1["map_misses"] - st0["map_misses"]
    return {"iops": iops, "ios": ios, "misses_per_io": misses / max(ios, 1),
            "windows": windows, "map_memory": st1["map_memory"],
            "forced": st1["map_forced"] - st0["map_forced"]}


def create(logical_sectors, loop, opts):
    sh("dmsetup", "create", NAME, "--table", f"0 {logical_sectors} remap {loop} {opts}".strip())


def remove():
    sh("dmsetup", "remove", NAME)


def precondition(size):
    """The hot GiB written in 1 MiB writes, then a block in every page."""
    sh("dd", "if=/dev/urandom", f"of={DEV}", "bs=1M", f"count={HOT >> 20}",
       "oflag=direct", "status=none")
    buf = mmap.mmap(-1, 4096)
    buf.write(os.urandom(4096))
    fd = os.open(DEV, os.O_WRONLY | os.O_DIRECT)
    try:
        for off in range(HOT, size, PAGE):
            os.pwritev(fd, [buf], min(off + (off // PAGE * 389 % 1024) * 4096, size - 4096))
    finally:
        os.close(fd)
    sh("sync")


def make_media(size=SIZE, media=MEDIA):
    """The null_blk device of the media model, size bytes, memory backed
    (pages allocated as they are written: sparse); its path."""
    if not os.path.isdir("/sys/kernel/config"):
        sh("modprobe", "configfs")
    if not os.path.ismount("/sys/kernel/config"):
        sh("mount", "-t", "configfs", "none", "/sys/kernel/config")
    sh("modprobe", "null_blk", "nr_devices=0")
    os.mkdir(NULLB)
    for k, v in [("size", size >> 20), ("blocksize", 4096), ("memory_backed", 1),
                 ("irqmode", 2), ("completion_nsec", media["completion_us"] * 1000),
                 ("hw_queue_depth", media["queue_depth"]), ("submit_queues", 1),
                 ("mbps", media["mbps"]), ("power", 1)]:
        with open(os.path.join(NULLB, k), "w") as f:
            f.write(str(v))
    sh("udevadm", "settle", check=False)
    path = "/dev/dmrmc"
    if not os.path.exists(path):
        with open(os.path.join(NULLB, "index")) as f:
            path = f"/dev/nullb{f.read().strip()}"
    return path


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    kinds = (sys.argv[2] if len(sys.argv) > 2 else "loop").split(",")
    if any(k not in ("loop", "media", "gc", "ckpt") for k in kinds):
        raise SystemExit(f"usage: {sys.argv[0]} [ROUNDS] [loop|media|gc|ckpt,...]")
    sh("modprobe", "-a", "loop", "dm-mod", "libcrc32c")
    sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"))
    for kind in kinds:
        if kind == "gc":
            measure_gc(rounds)
        elif kind == "ckpt":
            measure_ckpt(rounds)
        else:
            measure(kind, rounds)


def set_prefetch(on):
    with open(GC_PARAM, "w") as f:
        f.write("Y" if on else "N")


def gc_window(seconds, size):
    """Random 4 KiB writes for `seconds`: IOPS and the status delta."""
    st0 = status()
    out = sh("fio", "--name=gc", f"--filename={DEV}", "--direct=1", "--rw=randwrite",
             "--bs=4k", "--ioengine=libaio", "--iodepth=8", f"--size={size}",
             f"--runtime={seconds}", "--time_based", "--randrepeat=0", "--norandommap",
             "--output-format=json")
    st1 = status()
    j = json.loads(out[out.index("{"):])["jobs"][0]["write"]
    d = {k: st1[k] - st0[k] for k in ("gc_moved", "map_misses", "user_blocks",
                                        "segments_freed")}
    return {"iops": j["iops"], "lat_us": j["lat_ns"]["mean"] / 1000, **d,
            "misses_per_moved": d["map_misses"] / max(d["gc_moved"], 1),
            "gc_state": st1["gc_state"]}


def gc_order(rounds):
    """Y N N Y per round: each side first and last as often."""
    return [on for _ in range(rounds) for on in (True, False, False, True)]


def gc_summary(wins):
    """wins: [(on, window result)] in the order run -> summary lines."""
    side = {on: [w for o, w in wins if o == on] for on in (True, False)}
    # ratios of windows next to each other (Y N, N Y): the pairs of the order
    ratios = []
    for i in range(0, len(wins) - 1, 2):
        (a_on, a), (b_on, b) = wins[i], wins[i + 1]
        y, n = (a, b) if a_on else (b, a)
        if a_on != b_on and n["iops"]:
            ratios.append(y["iops"] / n["iops"])
    lines = ["", f"==== GC's map pages (issue 41), {len(wins)} windows of {GC_WINDOW} s, "
             f"{GC_SIZE >> 30} GiB, map_cache 1, media {GC_MEDIA}",
             f"{'gc_prefetch':12} {'IOPS':>8} {'moved/s':>8} {'pages/moved':>11} "
             f"{'lat us':>8} {'windows':>7}"]
    for on in (True, False):
        xs = side[on]
        if not xs:
            continue
        lines.append(f"{'Y' if on else 'N':12} {statistics.median(x['iops'] for x in xs):8.0f} "
                     f"{statistics.median(x['gc_moved'] for x in xs) / GC_WINDOW:8.0f} "
                     f"{statistics.median(x['misses_per_moved'] for x in xs):11.2f} "
                     f"{statistics.median(x['lat_us'] for x in xs):8.0f} {len(xs):7d}")
    if ratios:
        lines.append(f"IOPS Y / N, windows side by side: median {statistics.median(ratios):.2f}x, "
                     f"worst {min(ratios):.2f}x, best {max(ratios):.2f}x ({len(ratios)} pairs)")
    return lines


def measure_gc(rounds):
    dev = make_media(GC_SIZE, GC_MEDIA)
    sh(REMAPCTL, "format", "--force", dev)
    d = dict(x.split("=", 1) for x in sh(REMAPCTL, "dump", dev).splitlines() if "=" in x)
    sectors = int(d["logical_sectors"])
    size = sectors * 512
    create(sectors, dev, "")
    try:
        sh("fio", "--name=fill", f"--filename={DEV}", "--direct=1", "--rw=randwrite",
           "--bs=4k", "--ioengine=libaio", "--iodepth=32", f"--size={size}",
           "--randrepeat=0", "--output-format=json")
        remove()
        create(sectors, dev, "2 map_cache 1")
        set_prefetch(True)
        # until GC has freed a tenth of the capacity's segments: steady
        seg = status()["segment_sectors"] * 512
        start = status()["segments_freed"]
        warm = 0
        while status()["segments_freed"] - start < size // seg // 10 and warm < 60:
            gc_window(GC_WINDOW, size)
            warm += 1
        print(f"gc: warm after {warm} windows, {status()['segments_freed'] - start} "
              "segments freed", flush=True)
        wins = []
        for on in gc_order(rounds):
            set_prefetch(on)
            w = gc_window(GC_WINDOW, size)
            wins.append((on, w))
            print(json.dumps({"gc_prefetch": on, **w}), flush=True)
        set_prefetch(True)
        print("\n".join(gc_summary(wins)), flush=True)
    finally:
        set_prefetch(True)
        remove()
        with open(os.path.join(NULLB, "power"), "w") as f:
            f.write("0")
        os.rmdir(NULLB)


def dev_io(dev):
    """(blocks read, blocks written) by a block device so far."""
    with open(f"{block_sysfs(dev)}/stat") as f:
        st = f.read().split()
    return int(st[2]) // 8, int(st[6]) // 8


def set_incremental(on):
    with open(CK_PARAM, "w") as f:
        f.write("Y" if on else "N")


def ckpt_cycle(loop, sectors):
    """One side's cycle (see the docstring's ckpt): its figures.  A load
    and a clean removal first, so that the side's own removal (one clean
    checkpoint, or two) is what its loads find."""
    create(sectors, loop, "2 map_cache 1")
    remove()
    create(sectors, loop, "2 map_cache 1")
    st0, io0 = status(), dev_io(loop)
    sh("fio", "--name=ck", f"--filename={DEV}", "--direct=1", "--rw=randwrite",
       "--bs=4k", "--ioengine=psync", f"--size={sectors * 512}",
       f"--number_ios={CK_WRITES}", "--randrepeat=0", "--norandommap",
       "--output-format=json")
    st1, io1 = status(), dev_io(loop)
    remove()
    io2 = dev_io(loop)
    create(sectors, loop, "2 map_cache 1")
    buf = mmap.mmap(-1, 4096)
    buf.write(os.urandom(4096))
    fd = os.open(DEV, os.O_WRONLY | os.O_DIRECT | os.O_SYNC)
    try:
        os.pwritev(fd, [buf], 4096 * 7)
    finally:
        os.close(fd)
    sh("dmsetup", "message", NAME, "0", "checkpoint")
    io3 = dev_io(loop)
    remove()
    ckpts = st1["checkpoint_seq"] - st0["checkpoint_seq"]
    return {"ckpts": ckpts, "forced": st1["map_forced"] - st0["map_forced"],
            "tables_per_ckpt": (st1["ckpt_table_blocks"] - st0["ckpt_table_blocks"])
            / max(ckpts, 1),
            "written_per_write": (io1[1] - io0[1]) / CK_WRITES,
            "remove_written": io2[1] - io1[1],
            "load_read": io3[0] - io2[0], "load_written": io3[1] - io2[1]}


def measure_ckpt(rounds):
    with open(CK_IMG, "wb") as f:
        f.truncate(CK_SIZE)
    loop = sh("losetup", "-f", "--show", CK_IMG).strip()
    try:
        sh(REMAPCTL, "format", "--force", loop)
        d = dict(x.split("=", 1) for x in sh(REMAPCTL, "dump", loop).splitlines() if "=" in x)
        sectors = int(d["logical_sectors"])
        size = sectors * 512
        create(sectors, loop, "")
        buf = mmap.mmap(-1, 4096)
        buf.write(os.urandom(4096))
        fd = os.open(DEV, os.O_WRONLY | os.O_DIRECT)
        try:
            for off in range(0, size, PAGE):
                os.pwritev(fd, [buf], min(off + (off // PAGE * 389 % 1024) * 4096,
                                          size - 4096))
        finally:
            os.close(fd)
        st = status()
        remove()
        pages = -(-size // PAGE)
        lay_crc = -(-pages * 4 // 4096)
        lay_seg = -(-int(d["nr_segments"]) * 16 // 4096)
        print(f"ckpt: {size >> 30} GiB logical, {pages} map pages written, "
              f"tables {lay_crc} + {lay_seg} blocks a slot; "
              f"{st['user_blocks']} blocks written", flush=True)
        rows = {True: [], False: []}
        for r in range(rounds):
            for on in ((False, True) if r % 2 == 0 else (True, False)):
                set_incremental(on)
                row = ckpt_cycle(loop, sectors)
                rows[on].append(row)
                print(json.dumps({"ckpt_incremental": on, **row}), flush=True)
        set_incremental(True)
        lines = ["", f"==== checkpoints (issue 41), {rounds} rounds, {size >> 30} GiB, "
                 f"{pages} map pages, map_cache 1, {CK_WRITES} random 4 KiB writes",
                 f"{'incremental':12} {'ckpts':>6} {'tables/ckpt':>11} {'dev/write':>9} "
                 f"{'remove wr':>9} {'load rd':>8} {'load wr':>8}"]
        for on in (False, True):
            xs = rows[on]
            if not xs:
                continue

            def med(k, xs=xs):
                return statistics.median(x[k] for x in xs)
            lines.append(f"{'Y' if on else 'N':12} {med('ckpts'):6.0f} "
                         f"{med('tables_per_ckpt'):11.1f} {med('written_per_write'):9.2f} "
                         f"{med('remove_written'):9.0f} {med('load_read'):8.0f} "
                         f"{med('load_written'):8.0f}")
        print("\n".join(lines), flush=True)
    finally:
        set_incremental(True)
        sh("dmsetup", "remove", NAME, check=False)
        sh("losetup", "-d", loop, check=False)
        os.unlink(CK_IMG)


def measure(kind, rounds):
    if kind == "media":
        loop = make_media()
    else:
        with open(IMG, "wb") as f:
            f.truncate(SIZE)
        loop = sh("losetup", "-f", "--show", IMG).strip()
    sh(REMAPCTL, "format", "--force", loop)
    d = dict(x.split("=", 1) for x in sh(REMAPCTL, "dump", loop).splitlines() if "=" in x)
    sectors = int(d["logical_sectors"])
    size = sectors * 512
    map_mib = -(-(size // PAGE) // 256)
    tables = [("whole map", ""), ("100%", f"2 map_cache {map_mib}"),
              ("25%", f"2 map_cache {max(1, map_mib // 4)}"),
              ("5%", f"2 map_cache {max(1, map_mib // 20)}")]
    if kind == "media":
        print(f"media model: {MEDIA}")
    print(f"device ({kind}): {size >> 30} GiB logical, map {map_mib} MiB "
          f"({size // PAGE} pages); hot set {HOT >> 20} MiB ({HOT // PAGE} pages)", flush=True)
    create(sectors, loop, "")
    precondition(size)
    remove()
    res = {}
    for r in range(rounds):
        order = tables[r % len(tables):] + tables[:r % len(tables)]
        for label, opts in order:
            create(sectors, loop, opts)
            for job in ("hot-randread", "hot-randwrite", "all-randread"):
                x = run_job(job, size)
                res.setdefault((label, job), []).append(x)
                print(json.dumps({"round": r + 1, "table": label, "opts": opts, "job": job,
                                  **x}), flush=True)
            remove()
    print("\n==== map cache, 4 KiB, one thread, " + kind + " (" + str(rounds) +
          " rounds; ratio: to the whole map of the same round, median and worst)")
    print(f"{'job':14} {'table':10} {'IOPS':>8} {'ratio':>6} {'worst':>6} {'misses/IO':>9} "
          f"{'miss cost':>10} {'map memory':>11}")
    for job in ("hot-randread", "hot-randwrite", "all-randread"):
        base_xs = res[("whole map", job)]
        base = statistics.median(x["iops"] for x in base_xs)
        for label, _ in tables:
            xs = res[(label, job)]
            ratios = [x["iops"] / b["iops"] for x, b in zip(xs, base_xs)]
            iops = statistics.median(x["iops"] for x in xs)
            mpi = statistics.median(x["misses_per_io"] for x in xs)
            cost = ((1 / iops - 1 / base) / mpi * 1e6) if mpi > 0.01 else None
            mem = max(x["map_memory"] for x in xs)
            print(f"{job:14} {label:10} {iops:8.0f} {statistics.median(ratios):6.2f} "
                  f"{min(ratios):6.2f} {mpi:9.3f} "
                  f"{'' if cost is None else f'{cost:8.0f}us':>10} {mem >> 20:9d}MiB")
    if kind == "media":
        with open(os.path.join(NULLB, "power"), "w") as f:
            f.write("0")
        os.rmdir(NULLB)
    else:
        sh("losetup", "-d", loop)
        os.unlink(IMG)


if __name__ == "__main__":
    main()
