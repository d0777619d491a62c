# SPDX-License-Identifier: GPL-2.0-only
"""Garbage collection: overwriting a device many times over (fio with
verifying readers, ext4 churn), the reuse rule with a read in flight,
power cuts while GC is busy, and the move rule at replay.

Every test runs on a small device (tens of MiB, 256 KiB segments), so
that GC, checkpoints and segment reuse happen many times in seconds.
"""
import json
import mmap
import os
import random
import re
import struct
import subprocess
import threading
import time

import pytest

import kernel_log
from conftest import (BLOCK, DM_PREFIX, MNT, NR_HEADS, REMAPCTL, REPO,
                      Kmsg, ckpt_layout, dm_create, dm_path, dm_remove, dump,
                      newest_ckpt, read_blocks_direct, remapctl, run,
                      status_fields)
from test_log import Stack, block, blocks

SEG_SIZE = "256K"
FIO_GC = str(REPO / "tests" / "fio" / "gc-verify-randwrite.fio")
REMAP_SIM = REPO / "tools" / "remap-sim"
# dm-remap's own complaints in the kernel log (DMERR / DMWARN lines)
REMAP_ERRORS = re.compile(
    r"remap: .*(GC |no space|failed|switching|cannot|Cannot|corrupt|"
    r"no free segment|invalid)")


# ------------------------------------------------------------------
# helpers

class Dev:
    """O_DIRECT reads and writes of whole blocks through one descriptor."""

    def __init__(self, path, write=True):
        flags = (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT
        self.fd = os.open(path, flags)
        self.buf = mmap.mmap(-1, 256 * BLOCK)
        self.view = memoryview(self.buf)

    def _buf(self, nbytes):
        if nbytes <= len(self.buf):
            return self.view[:nbytes]
        return memoryview(mmap.mmap(-1, nbytes))

    def pwrite(self, lba, data):
        buf = self._buf(len(data))
        buf[:] = data
        assert os.pwritev(self.fd, [buf], lba * BLOCK) == len(data)

    def pread(self, lba, n=1):
        buf = self._buf(n * BLOCK)
        assert os.preadv(self.fd, [buf], lba * BLOCK) == n * BLOCK
        return bytes(buf)

    def fsync(self):
        os.fsync(self.fd)

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_BLOCK_HEAD = re.compile(rb"lba (\d+) gen (\d+) ")


def block_gen(data, lba):
    """The generation gen if data is exactly block(lba, gen), else None."""
    m = _BLOCK_HEAD.match(data)
    if not m or int(m.group(1)) != lba:
        return None
    gen = int(m.group(2))
    return gen if data == block(lba, gen) else None


def describe(data):
    """A short description of a block that is not what was expected."""
    if data == bytes(len(data)):
        return "zeroes"
    m = _BLOCK_HEAD.match(data)
    if m:
        return f"block(lba {int(m.group(1))}, gen {int(m.group(2))})"
    return repr(data[:24])


def message(name, *words):
    return run(["dmsetup", "message", DM_PREFIX + name, "0", *map(str, words)])


def checkpoint(name="top"):
    message(name, "checkpoint")


def dm_reload(name, lines):
    """Replace a live dm device's table (dmsetup reload + resume)."""
    run(["dmsetup", "reload", DM_PREFIX + name], input="\n".join(lines) + "\n")
    run(["dmsetup", "resume", DM_PREFIX + name])


def small_base(ram, mib, name="base"):
    """dm-linear over the first mib MiB of a ramdisk: a small device."""
    dm_create(name, f"0 {mib * 2048} linear {ram} 0")
    return dm_path(name)


def remap_errors(kmsg):
    return [ln for ln in kmsg.new() if REMAP_ERRORS.search(ln)]


def write_gen(dev, lbas, gen, model, chunk=256):
    """Write block(lba, gen) to the contiguous range lbas, in chunks."""
    lbas = list(lbas)
    for i in range(0, len(lbas), chunk):
        part = lbas[i:i + chunk]
        dev.pwrite(part[0], blocks(part, gen))
        for lba in part:
            model[lba] = gen


ZERO_GEN = -1        # check_model()'s generation of a block reading zeroes


def check_model(dev, nr_blocks, allowed, chunk=256):
    """Read blocks 0..nr_blocks-1; allowed(lba, gen) says whether block(lba,
    gen) may be there (gen ZERO_GEN: zeroes).  Returns (lba, what was
    found) for every block that is not allowed or not a block(lba, gen)."""
    bad = []
    zero = bytes(BLOCK)
    for start in range(0, nr_blocks, chunk):
        n = min(chunk, nr_blocks - start)
        data = dev.pread(start, n)
        for i in range(n):
            lba = start + i
            got = data[i * BLOCK:(i + 1) * BLOCK]
            gen = ZERO_GEN if got == zero else block_gen(got, lba)
            if gen is None or not allowed(lba, gen):
                bad.append((lba, describe(got)))
    return bad


def check_path(path, nr_blocks, allowed):
    """check_model() of the device at path, opened read-only for it."""
    dev = Dev(path, write=False)
    try:
        return check_model(dev, nr_blocks, allowed)
    finally:
        dev.close()


def ckpt_map(dev, info):
    """The map of the newest checkpoint on dev (read from below): one entry
    per logical block, 0 (unmapped) or its data-area block + 1."""
    h = newest_ckpt(dev, info)
    nr = int(info["logical_blocks"])
    lay = ckpt_layout(nr, int(info["nr_segments"]))
    first = (int(info["ckpt_offset"]) + h["slot"] * int(info["ckpt_slot_blocks"])
             + lay["map_offset"])
    raw = read_blocks_direct(dev, first, lay["map_blocks"])
    return h, struct.unpack_from(f"<{nr}I", raw)


# ------------------------------------------------------------------
# 1. fio: 10x overwrite with verifying readers, WAF against the simulator

def fio_gc(section, dev, size, write_size=0, timeout=900):
    """Run one section of the GC fio job; returns (returncode, jobs, output)."""
    env = dict(os.environ, DEV=dev, SIZE=str(size), WRITE_SIZE=str(write_size))
    p = subprocess.run(["fio", "--output-format=json", f"--section={section}",
                        FIO_GC], env=env, capture_output=True, text=True,
                       timeout=timeout)
    jobs = []
    if "{" in p.stdout:
        try:
            jobs = json.loads(p.stdout[p.stdout.index("{"):])["jobs"]
        except ValueError:
            pass
    return p.returncode, jobs, (p.stdout[-3000:] + p.stderr[-3000:])


def simulator(segments, seg_blocks, op, overwrites):
    """tools/remap-sim on this geometry: uniform random 4 KiB overwrites
    after a sequential fill, measured from the fill on (no warm-up), with
    the module's own policy code.  Returns its JSON result line."""
    cmd = [str(REMAP_SIM), "--segments", str(segments),
           "--segment-blocks", str(seg_blocks), "--op", str(op),
           "--workload", "uniform", "--warmup", "0",
           "--overwrites", str(overwrites), "--json"]
    assert REMAP_SIM.exists(), f"{REMAP_SIM} not built (make -C tools)"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{cmd} failed:\n{p.stdout}\n{p.stderr}"
    runs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    runs = [r for r in runs if "waf" in r]
    assert len(runs) == 1, p.stdout
    return runs[0]


def test_gc_fio_overwrite_10x_with_readers(ram):
    """fio overwrites a 32 MiB device's logical space ten times in random
    4 KiB blocks (crc32c verify headers), while readers read and verify
    random blocks the whole time (a block from a segment reused under a
    read would carry another offset); then the writer verifies the last
    generation of every block.  GC, segment reuse and throttling must
    have happened, with no error and no kernel warning; the write
    amplification is that of the simulator, within 10%."""
    t0 = time.monotonic()
    base = small_base(ram, 32)
    remapctl("format", "--segment-size", SEG_SIZE, base)
    info = dump(base)
    n = int(info["logical_sectors"])
    dm_create("top", f"0 {n} remap {base}")
    top = dm_path("top")
    st = status_fields("top")
    seg_blocks = st["segment_sectors"] // 8
    size = n * 512                          # the whole logical space
    overwrites = 10
    write_size = overwrites * size
    kmsg = Kmsg()

    rc, jobs, out = fio_gc("fill", top, size)
    assert rc == 0 and jobs and jobs[0]["error"] == 0, out
    assert jobs[0]["write"]["io_bytes"] == size, jobs[0]["write"]
    t_fill = time.monotonic() - t0
    message("top", "clear_stats")

    env = dict(os.environ, DEV=top, SIZE=str(size), WRITE_SIZE=str(write_size))
    writer = subprocess.Popen(["fio", "--output-format=json",
                               "--section=overwrite", FIO_GC], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    readers = {"passes": 0, "failed": [], "bytes": 0}
    stop = threading.Event()

    def read_passes():
        # a read job that verifies stops after one pass: run pass after pass
        while not stop.is_set():
            prc, pjobs, pout = fio_gc("readers", top, size)
            readers["passes"] += 1
            if prc or not pjobs or pjobs[0]["error"]:
                readers["failed"].append(pout)
                return
            readers["bytes"] += pjobs[0]["read"]["io_bytes"]

    rt = threading.Thread(target=read_passes)
    rt.start()
    try:
        wout, werr = writer.communicate(timeout=900)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
        stop.set()
        rt.join()
    t_over = time.monotonic() - t0 - t_fill
    print(f"fill {t_fill:.0f}s, overwrite+verify {t_over:.0f}s, "
          f"{readers['passes']} reader passes")
    assert writer.returncode == 0, wout[-3000:] + werr[-3000:]
    wjob = json.loads(wout[wout.index("{"):])["jobs"][0]
    assert wjob["error"] == 0, wjob
    assert wjob["write"]["io_bytes"] >= write_size, wjob["write"]["io_bytes"]
    # the verify pass read back every block written (nearly all of them)
    assert wjob["read"]["io_bytes"] >= size * 99 // 100, wjob["read"]["io_bytes"]
    assert not readers["failed"], \
        "a verifying reader failed:\n" + readers["failed"][0]
    assert readers["passes"] >= 2 and readers["bytes"] >= size, readers

    st = status_fields("top")
    print("status after the overwrites:", st)
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert st["gc_runs"] > 0 and st["gc_moved"] > 0, st
    assert st["segments_freed"] > 0, st
    assert st["throttled"] > 0, st
    assert st["user_blocks"] * BLOCK >= write_size, st
    assert not remap_errors(kmsg), remap_errors(kmsg)
    splats = kernel_log.problems(kmsg.new())
    assert not splats, splats
    waf = float(st["waf_load"])
    assert waf == pytest.approx(st["device_blocks"] / st["user_blocks"],
                                abs=0.002), st

    # the data survives a clean reload (read-only verify of every header)
    dm_remove("top")
    dm_create("top", f"0 {n} remap {base}")
    assert status_fields("top")["replayed_units"] == 0
    rc, jobs, out = fio_gc("verify", top, size)
    assert rc == 0 and jobs and jobs[0]["error"] == 0, out
    assert jobs[0]["read"]["io_bytes"] == size, jobs[0]["read"]

    # the simulator, on the same geometry and workload: device_blocks counts
    # unit summaries, so compare with its waf_summaries
    sim = simulator(st["segments"], seg_blocks, int(info["overprovision"]),
                    overwrites)
    print(f"WAF measured {waf:.3f} (gc_runs {st['gc_runs']}, throttled "
          f"{st['throttled']}); simulator {sim}; total "
          f"{time.monotonic() - t0:.0f}s")
    assert sim["logical_blocks"] == st["logical_blocks"], (sim, st)
    assert waf == pytest.approx(sim["waf_summaries"], rel=0.10), (waf, sim)


# ------------------------------------------------------------------
# 2. ext4 kept 90% full while it is written five times over

def churn(root, rnd, total, fill=0.90):
    """Create files of random sizes, overwrite parts in place, append,
    truncate, delete, rename, fsync now and then; keep the filesystem
    about fill full; stop after total bytes were written.

    Returns ({path relative to root: content}, {operation: count}, bytes).
    """
    pool = rnd.randbytes(8 << 20)
    files = {}
    ops = {}
    written = 0
    nid = 0
    for d in range(4):
        os.makedirs(f"{root}/d{d}", exist_ok=True)

    def data(nbytes):
        off = rnd.randrange(len(pool) - nbytes)
        return pool[off:off + nbytes]

    while written < total:
        s = os.statvfs(root)
        fs_bytes = s.f_blocks * s.f_frsize
        used = 1 - s.f_bfree / s.f_blocks
        room = max(0, int((0.96 - used) * fs_bytes))    # never near ENOSPC
        if not files or (used < fill - 0.02 and room > 64 << 10):
            op = "create"
        elif used > fill + 0.02 or room < 64 << 10:
            op = "delete"
        else:
            op = rnd.choice(["overwrite", "overwrite", "overwrite", "append",
                             "truncate", "delete", "rename", "create"])
        ops[op] = ops.get(op, 0) + 1
        name = rnd.choice(sorted(files)) if files else None
        path = f"{root}/{name}"
        if op == "create":
            nid += 1
            name = f"d{rnd.randrange(4)}/f{nid}"
            size = min(int(4096 * 2 ** rnd.uniform(0, 10)), room // 2)
            content = data(size)
            with open(f"{root}/{name}", "wb") as f:
                f.write(content)
                if rnd.random() < 0.3:
                    f.flush()
                    os.fsync(f.fileno())
            files[name] = bytearray(content)
            written += size
        elif op in ("overwrite", "append"):
            content = files[name]
            if op == "overwrite" and content:
                off = rnd.randrange(len(content))
                nbytes = min(rnd.randrange(1, 1 << 20), len(content) - off)
            else:
                off = len(content)
                nbytes = min(rnd.randrange(1, 256 << 10), room // 4)
            new = data(nbytes)
            with open(path, "r+b") as f:
                f.seek(off)
                f.write(new)
                if rnd.random() < 0.2:
                    f.flush()
                    os.fsync(f.fileno())
            content[off:off + nbytes] = new
            written += nbytes
        elif op == "truncate":
            new_size = rnd.randrange(len(files[name]) + 1)
            os.truncate(path, new_size)
            del files[name][new_size:]
        elif op == "delete":
            os.unlink(path)
            del files[name]
        elif op == "rename":
            nid += 1
            new = f"d{rnd.randrange(4)}/r{nid}"
            os.rename(path, f"{root}/{new}")
            files[new] = files.pop(name)
    return files, ops, written


def check_tree(root, files):
    found = set()
    for d in os.listdir(root):
        if d.startswith("d"):
            found |= {f"{d}/{f}" for f in os.listdir(f"{root}/{d}")}
    assert found == set(files), (sorted(found ^ set(files)))[:10]
    for name, content in files.items():
        with open(f"{root}/{name}", "rb") as f:
            got = f.read()
        assert got == content, f"{name}: {len(got)} bytes, want {len(content)}"


def test_gc_ext4_churn(ram):
    """ext4 (mounted with discard) on an 80 MiB device kept about 90%
    full while files are created, overwritten in place, appended,
    truncated, renamed and deleted until five times the filesystem's size
    was written.  GC ran; e2fsck -fn finds nothing; every file reads back
    as written, after a clean reload too."""
    t0 = time.monotonic()
    base = small_base(ram, 80)
    remapctl("format", "--segment-size", SEG_SIZE, base)
    n = int(dump(base)["logical_sectors"])
    dm_create("top", f"0 {n} remap {base}")
    top = dm_path("top")
    kmsg = Kmsg()
    run(["mkfs.ext4", "-q", "-F", top])
    os.makedirs(MNT, exist_ok=True)
    run(["mount", "-o", "discard", top, MNT])
    try:
        s = os.statvfs(MNT)
        fs_bytes = s.f_blocks * s.f_frsize
        files, ops, written = churn(MNT, random.Random(5), 5 * fs_bytes)
        run(["sync"])
        print(f"churn: {written >> 20} MiB written to a {fs_bytes >> 20} MiB "
              f"filesystem, {len(files)} files, {ops}, "
              f"{time.monotonic() - t0:.0f}s")
    finally:
        run(["umount", MNT])
    st = status_fields("top")
    print("status:", st)
    assert written >= 5 * fs_bytes
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert st["gc_runs"] > 0 and st["segments_freed"] > 0, st
    assert st["discards"] > 0, st
    assert not remap_errors(kmsg), remap_errors(kmsg)
    fsck = run(["e2fsck", "-fn", top], check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    dm_remove("top")
    dm_create("top", f"0 {n} remap {base}")
    assert status_fields("top")["replayed_units"] == 0
    run(["mount", "-o", "ro", top, MNT])
    try:
        check_tree(MNT, files)
    finally:
        run(["umount", MNT])
    print(f"total {time.monotonic() - t0:.0f}s")


# ------------------------------------------------------------------
# 3. the reuse rule: a read in flight keeps its segment from reuse

GC_READ_DELAY_MS = 5        # a victim read spans several 4-block writes


def test_gc_victim_read_overlaps_writes(ram):
    """GC reads its victim asynchronously and serves writes while the read
    is in flight (dmr_gc_read_step()).  Over a device whose reads take
    5 ms (dm-delay; writes are not delayed), a writer overwrites blocks at
    random while GC reads victims, so blocks of a victim are overwritten
    between its read and its moves: the move rule must skip them, and
    collecting must wait for the read's data.  Every block then holds its
    last generation, before and after a power cut, and dm-remap has no
    complaint (a victim whose summaries did not decode would be left
    behind with an error)."""
    mib = 32
    dm_create("slow", f"0 {mib * 2048} delay {ram} 0 {GC_READ_DELAY_MS} {ram} 0 0")
    s = Stack(dm_path("slow"), ["--segment-size", SEG_SIZE])
    nr_blocks = s.n // 8
    model = {}
    rnd = random.Random(8)
    kmsg = Kmsg()
    dev = Dev(s.top)
    try:
        write_gen(dev, range(nr_blocks), 0, model)
        dev.fsync()
        before = s.status()
        gen = 0
        for _ in range(3 * nr_blocks // 8):     # 1.5 x the capacity
            gen += 1
            lba0 = rnd.randrange(nr_blocks - 3)
            write_gen(dev, range(lba0, lba0 + 4), gen, model)
        dev.fsync()
        st = s.status()
        bad = check_model(dev, nr_blocks, lambda lba, g: g == model[lba])
    finally:
        dev.close()
    print(f"gc_runs {st['gc_runs'] - before['gc_runs']}, "
          f"moved {st['gc_moved'] - before['gc_moved']}")
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert st["gc_runs"] - before["gc_runs"] >= 20, (before, st)
    assert not bad, f"{len(bad)} blocks wrong: {bad[:8]}"
    assert not remap_errors(kmsg), remap_errors(kmsg)

    s.crash()
    s.create()
    dev = Dev(s.top)
    try:
        bad = check_model(dev, nr_blocks, lambda lba, g: g == model[lba])
    finally:
        dev.close()
    assert not bad, f"after the power cut: {len(bad)} blocks wrong: {bad[:8]}"


READ_DELAY_MS = 30000       # well below the 120 s hung-task report


def test_gc_read_in_flight_while_segment_reused(ram):
    """A read sent down to a segment holds it: the segment may empty, pass
    its two checkpoints and be needed by GC, but it is written again only
    once the read completed, so the read returns the data it was sent for.

    Block B (generation 1) is written to segment S; then the table below
    dm-remap is reloaded so that reads of S's sectors (only those) wait
    30 s in dm-delay.  A direct read of B is sent down and waits there.
    Meanwhile every block of S is overwritten, which empties S (a segment
    GC would empty the same way, but GC's own read of S would queue behind
    the user's read in dm-delay, so S is emptied by overwrites), two
    checkpoints pass, and random overwrites make GC collect and reuse far
    more segments than the device has: any free segment is allocated and
    written in that time.  S must stay prefree, untouched on the device,
    and the read returns B's generation 1.  After the read completed, S
    is reused like any other segment."""
    mib = 32
    mid = small_base(ram, mib, "mid")
    remapctl("format", "--segment-size", SEG_SIZE, mid)
    info = dump(mid)
    seg_blocks = int(info["segment_blocks"])
    data_off = int(info["data_offset"])
    nr_blocks = int(info["logical_blocks"])
    n = int(info["logical_sectors"])
    dm_create("top", f"0 {n} remap {mid} 2 checkpoint_interval 86400")
    top = dm_path("top")
    nr_segs = status_fields("top")["segments"]
    dev = Dev(top)
    model = {}
    rnd = random.Random(3)
    try:
        # three quarters of the space: GC stays idle until the heavy phase
        write_gen(dev, range(nr_blocks * 3 // 4), 0, model)
        dev.fsync()
        # a segment's worth of blocks in one request: most land in one segment
        g0 = nr_blocks // 2
        write_gen(dev, range(g0, g0 + seg_blocks - 1), 1, model)
        dev.fsync()
        b = g0 + seg_blocks // 2
        # S, B's segment, must be sealed: on the device, in no head's buffer
        more = nr_blocks * 3 // 4
        for _ in range(8):
            checkpoint()
            h, l2p = ckpt_map(ram, info)
            seg = (l2p[b] - 1) // seg_blocks
            heads = {h[f"head{i}_segment"] for i in range(NR_HEADS)}
            if seg not in heads:
                break
            write_gen(dev, range(more, more + seg_blocks - 1), 1, model)
            more += seg_blocks
            dev.fsync()
        assert seg not in heads, (seg, h)
        seg_first = data_off + seg * seg_blocks
        in_s = [lba for lba, e in enumerate(l2p)
                if e and (e - 1) // seg_blocks == seg]
        before = read_blocks_direct(ram, seg_first, seg_blocks)
        at = l2p[b] - 1 - seg * seg_blocks
        assert before[at * BLOCK:(at + 1) * BLOCK] == block(b, 1), \
            f"block {b} not where the checkpoint's map says"
        st = status_fields("top")
        print(f"block {b} in segment {seg} of {nr_segs} with {len(in_s)} "
              f"valid blocks; status {st}")
        assert st["gc_runs"] == 0, st

        # reads of S (and only of S) wait READ_DELAY_MS in dm-delay
        s0, slen, total = seg_first * 8, seg_blocks * 8, mib * 2048
        dm_reload("mid", [
            f"0 {s0} linear {ram} 0",
            f"{s0} {slen} delay {ram} {s0} {READ_DELAY_MS} {ram} {s0} 0",
            f"{s0 + slen} {total - s0 - slen} linear {ram} {s0 + slen}"])
        result = {}

        def reader():
            t = time.monotonic()
            rdev = Dev(top, write=False)
            try:
                result["data"] = rdev.pread(b)
            except OSError as e:
                result["error"] = e
            finally:
                rdev.close()
            result["secs"] = time.monotonic() - t

        t_read = time.monotonic()
        th = threading.Thread(target=reader)
        th.start()
        time.sleep(1.0)
        assert th.is_alive(), f"the read of block {b} did not wait: {result}"

        # empty S: overwrite its valid blocks (contiguous runs, one request each)
        freed0 = status_fields("top")["segments_freed"]
        runs = []
        for lba in sorted(in_s):
            if runs and runs[-1][-1] == lba - 1:
                runs[-1].append(lba)
            else:
                runs.append([lba])
        for r in runs:
            write_gen(dev, r, 2, model)
        dev.fsync()
        st = status_fields("top")
        assert st["prefree_segments"] >= 1, st
        checkpoint()
        checkpoint()
        st = status_fields("top")
        print("S empty, two checkpoints later:", st)
        prefree = [st["prefree_segments"]]     # S waits for its read
        _, l2p = ckpt_map(ram, info)
        left = [lba for lba, e in enumerate(l2p)
                if e and (e - 1) // seg_blocks == seg]
        assert not left, f"blocks still mapped into segment {seg}: {left[:8]}"
        gc0 = st["gc_runs"]

        # GC collects and reuses (much) more than the whole device
        target = 2 * nr_segs + st["free_segments"] + 8
        writes = 0
        while th.is_alive():
            if status_fields("top")["segments_freed"] - freed0 >= target:
                break
            for _ in range(50):
                lba = rnd.randrange(nr_blocks - 8)
                write_gen(dev, range(lba, lba + 8), 3 + writes, model)
                writes += 1
            waited = time.monotonic() - t_read
            assert waited < READ_DELAY_MS / 1000 - 5 or not th.is_alive(), \
                f"premise: only {status_fields('top')['segments_freed'] - freed0}" \
                f" of {target} segments freed in {waited:.0f}s, before the read ends"
        read_ended_early = not th.is_alive()
        dev.fsync()
        st = status_fields("top")
        waited = time.monotonic() - t_read
        print(f"{writes} writes of 8 blocks in {waited:.0f}s while the read "
              f"waited:", st)
        during = read_blocks_direct(ram, seg_first, seg_blocks)
        prefree.append(st["prefree_segments"])
        th.join(READ_DELAY_MS / 1000 + 60)
        assert not th.is_alive()
        # no more delays: GC may read S again once it holds data
        dm_reload("mid", [f"0 {total} linear {ram} 0"])
        assert "error" not in result, result
        got = result["data"]
        assert got == block(b, 1), \
            f"the delayed read of block {b} returned {describe(got)}, not " \
            f"its generation 1: segment {seg} was reused under the read"
        assert during == before, \
            f"segment {seg} was written while a read to it was in flight"
        assert min(prefree) >= 1, \
            f"no prefree segment while the read waited: {prefree}"
        assert result["secs"] >= READ_DELAY_MS / 1000 - 1, result["secs"]
        assert not read_ended_early, \
            f"premise: the read completed before {target} segments were freed"
        assert st["gc_runs"] > gc0, st

        # the read is done: S becomes free and is written again
        freed1 = status_fields("top")["segments_freed"]
        for i in range(200):
            for _ in range(50):
                lba = rnd.randrange(nr_blocks - 8)
                write_gen(dev, range(lba, lba + 8), 3 + writes, model)
                writes += 1
            dev.fsync()
            if read_blocks_direct(ram, seg_first, seg_blocks) != before:
                break
        assert read_blocks_direct(ram, seg_first, seg_blocks) != before, \
            f"segment {seg} never reused after its read completed"
        assert status_fields("top")["segments_freed"] > freed1

        bad = check_model(dev, nr_blocks,
                          lambda lba, gen: model.get(lba, ZERO_GEN) == gen)
        assert not bad, f"{len(bad)} blocks wrong: {bad[:8]}"
        st = status_fields("top")
        assert st["mode"] == "write" and st["first_error"] == 0, st
    finally:
        dev.close()


# ------------------------------------------------------------------
# 4. power cut while GC is busy

@pytest.mark.parametrize("case", [1, 2, 3, 4, 5])
def test_gc_power_cut_during_heavy_gc(ram, case):
    """A 32 MiB device is filled, then overwritten at random (1 to 16
    blocks a write, an fsync now and then) while GC collects and user
    writes are throttled; power is cut at a random moment (another thread,
    seeded per case) once GC runs.  After recovery every block holds the
    generation acknowledged by the last fsync completed before the cut,
    or one written after it: never an older one, never anything else.
    Even cases lower the background watermarks to the GC reserve, so all
    GC runs in the throttled write path."""
    rnd = random.Random(1000 + case)
    base = small_base(ram, 32)
    s = Stack(base, ["--segment-size", SEG_SIZE])
    st = s.status()
    if case % 2 == 0:
        message("top", "gc_low", st["gc_reserve"])
        message("top", "gc_high", st["gc_reserve"])
    nr_blocks = s.n // 8
    dev = Dev(s.top)
    acked = {}          # lba -> generation made durable by an fsync
    written = {}        # lba -> generations written since (in order)
    pending = {}        # lba -> last generation written since the last fsync
    cutting = threading.Event()
    cut_done = threading.Event()
    gc_running = threading.Event()
    at_cut = {}
    delay = rnd.uniform(0.2, 6.0)

    def cutter():
        if not gc_running.wait(300):
            return
        time.sleep(delay)
        at_cut.update(status_fields("top"))
        cutting.set()
        s.flakey("cut")
        cut_done.set()

    ct = threading.Thread(target=cutter)
    ct.start()
    gen = 0
    writes = fsyncs = 0
    after_cut_error = None
    t0 = time.monotonic()
    try:
        for lba0 in range(0, nr_blocks, 256):
            lbas = range(lba0, min(nr_blocks, lba0 + 256))
            dev.pwrite(lba0, blocks(lbas, 0))
            for lba in lbas:
                acked[lba] = 0
        dev.fsync()
        while not cut_done.is_set():
            gen += 1
            nb = rnd.choice((1, 1, 1, 2, 4, 8, 16))
            lba0 = rnd.randrange(nr_blocks - nb + 1)
            for lba in range(lba0, lba0 + nb):
                written.setdefault(lba, []).append(gen)
                pending[lba] = gen
            try:
                dev.pwrite(lba0, blocks(range(lba0, lba0 + nb), gen))
                writes += 1
                if rnd.random() < 0.05:
                    dev.fsync()
                    fsyncs += 1
                    if not cutting.is_set():    # completed before the cut began
                        for lba, g in pending.items():
                            acked[lba] = g
                            written[lba] = [x for x in written[lba] if x > g]
                        pending.clear()
            except OSError as e:
                # after the cut the instance goes on over a device that
                # drops its writes (GC reads back segments never written):
                # what it does then does not matter, the machine is off
                if not cutting.is_set():
                    raise
                after_cut_error = e
                break
            if not gc_running.is_set() and writes % 100 == 0 and \
                    status_fields("top")["gc_runs"] > 0:
                gc_running.set()
            assert time.monotonic() - t0 < 400, "GC never started"
    finally:
        gc_running.set()
        ct.join()
        dev.close()
    print(f"case {case}: cut {delay:.1f}s after GC started, {writes} writes, "
          f"{fsyncs} fsyncs; status at the cut: {at_cut}; error after the "
          f"cut: {after_cut_error}")
    assert at_cut["gc_runs"] > 0 and at_cut["mode"] == "write", at_cut
    log = Kmsg()
    s.crash()
    # the offline check finds what the power cut left consistent
    p = subprocess.run([REMAPCTL, "check", s.under], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    s.create()
    st = s.status()
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert "recovery" in log.text(), log.text()

    def allowed(lba, g):
        return g == acked[lba] or g in written.get(lba, ())

    dev = Dev(s.top)
    try:
        bad = check_model(dev, nr_blocks, allowed)
        assert not bad, (
            f"{len(bad)} blocks hold neither their fsynced generation nor a "
            f"later one: " + ", ".join(
                f"{lba}: {what} (acked gen {acked[lba]})" for lba, what in bad[:8]))
        after = dev.pread(0, 256)
    finally:
        dev.close()
    # recovery is stable: a clean reload changes nothing, and it writes
    # on: four segments' worth, so the user heads take new segments and GC
    # runs from the state the load left (the cut may have left GC at its
    # floor with nothing emptied: every write failed with ENOSPC before
    # dmr_gc_decide() collected below the floor)
    s.reload()
    st = s.status()
    assert st["replayed_units"] == 0 and st["first_error"] == 0, st
    free_at_load = st["free_segments"]
    dev = Dev(s.top)
    try:
        assert dev.pread(0, 256) == after
        more = {}
        for i in range(4 * st["segment_sectors"] // 8):
            lba = 0 if i == 0 else rnd.randrange(nr_blocks)
            more[lba] = gen + 1 + i
            dev.pwrite(lba, block(lba, more[lba]))
        dev.fsync()
        for lba, g in more.items():
            assert dev.pread(lba) == block(lba, g), lba
    finally:
        dev.close()
    st = s.status()
    print(f"case {case}: {free_at_load} free segments after the reload; "
          f"{len(more)} blocks written then, {st['gc_runs']} GC runs, "
          f"{st['free_segments']} free")
    assert st["mode"] == "write" and st["first_error"] == 0, st


# ------------------------------------------------------------------
# 5. the move rule at replay: a write logged before a relocation wins

def test_gc_replay_skips_relocation_of_overwritten_block(ram):
    """GC moves block X while the user overwrites it: at run time the write
    lands after the move (the map points at the new data), but in the log
    the write's unit can come first, since a flush seals the heads in the
    order hot, cold, GC.  Replay after a power cut must then skip the
    relocation of X (the map no longer points at its source, the move
    rule): X holds the overwrite, never GC's copy of the older data.

    Built deterministically: a device more than half full of whole
    segments (one unit each), segment V (blocks 0 to S-2) overwritten but
    for blocks 0-2 (into another whole segment), so that V is the only
    segment GC may collect (a segment with a second summary, from a flush
    in its middle, would be another victim); the gc_collect message makes
    GC collect V (its relocation unit stays open); then block 1 is
    overwritten and fsynced, and power is cut."""
    base = small_base(ram, 32)
    s = Stack(base, ["--segment-size", SEG_SIZE])
    opts = "2 checkpoint_interval 86400"
    s.crash_free_remove()
    s.create(opts)
    st = s.status()
    seg_blocks = st["segment_sectors"] // 8
    nr_segs = st["segments"]
    per = seg_blocks - 1                # data blocks of a one-unit segment
    nfill = nr_segs // 2 + 8
    dev = Dev(s.top)
    try:
        # whole segments, one request each: one unit per segment, no flush
        # before the last one is done, so none holds a second summary
        for k in range(nfill):
            dev.pwrite(k * per, blocks(range(k * per, (k + 1) * per), 1))
        dev.fsync()
        checkpoint()
        _, l2p = ckpt_map(s.under, s.info)
        v = (l2p[0] - 1) // seg_blocks
        in_v = [lba for lba, e in enumerate(l2p)
                if e and (e - 1) // seg_blocks == v]
        assert in_v == list(range(per)), (v, in_v[:8])
        # V's blocks 3.. and three fresh ones: one more whole one-unit
        # segment (two requests, one unit: no flush in between)
        fresh = nfill * per
        dev.pwrite(3, blocks(range(3, per), 2))
        dev.pwrite(fresh, blocks(range(fresh, fresh + 3), 2))
        dev.fsync()
        checkpoint()
        checkpoint()
        st = s.status()
        assert st["prefree_segments"] == 0 and st["gc_runs"] == 0, st
        # one collection now, whatever the watermarks (which may no longer
        # be raised past what the spare space holds: issue 24 item 6)
        message("top", "gc_collect")
        st = s.status()
        assert st["gc_runs"] == 1 and st["gc_moved"] == 3, \
            f"premise: GC collected segment {v} alone: {st}"
        ckpt = st["checkpoint_seq"]
        dev.pwrite(1, block(1, 4))
        dev.fsync()
        st = s.status()
        assert st["checkpoint_seq"] == ckpt and st["gc_runs"] == 1, \
            f"premise: no checkpoint since GC moved block 1: {st}"
    finally:
        dev.close()
    s.crash()
    s.create(opts)
    st = s.status()
    assert st["replayed_units"] >= 2 and st["first_error"] == 0, st
    want = {1: 4}
    want.update((lba, 2) for lba in range(3, per))
    want.update((lba, 2) for lba in range(fresh, fresh + 3))
    nr = fresh + 3

    def allowed(lba, g):
        return g == (want.get(lba, 1) if lba < nr else ZERO_GEN)

    dev = Dev(s.top)
    try:
        got = dev.pread(1)
        assert got == block(1, 4), \
            f"block 1 reads {describe(got)} after replay, not the write " \
            f"fsynced after GC moved it: the relocation was applied over it"
        bad = check_model(dev, nr + 64, allowed)
        assert not bad, f"{len(bad)} blocks wrong: {bad[:8]}"
    finally:
        dev.close()


def test_gc_moved_blocks_checksummed_from_the_check(ram):
    """GC's check of a victim computes each block's CRC, and the units GC
    moves blocks into take their data checksums folded from those CRCs
    (module parameter gc_crc_carry, the default; the second stage no
    longer reads the moved data again).  Blocks moved more than once (so
    relocation units written that way were victims themselves) pass GC's
    own check every time (nothing held back as unverified), replay after
    a power cut, and remapctl check, and read back as written; a folded
    checksum that did not match its data would fail all three."""
    param = "/sys/module/dm_remap/parameters/gc_crc_carry"
    with open(param) as f:
        assert f.read().strip() == "Y", "premise: gc_crc_carry is on by default"
    base = small_base(ram, 16)
    s = Stack(base, ["--segment-size", SEG_SIZE])
    opts = "2 checkpoint_interval 86400"
    s.crash_free_remove()
    s.create(opts)
    nr = s.n // 8
    rng = random.Random(41)
    model = {}
    dev = Dev(s.top)
    try:
        write_gen(dev, range(nr), 1, model)
        dev.fsync()
        for gen in range(2, 10):
            # runs of 8 at random: garbage in every segment, and GC at work
            for _ in range(nr // 40):
                start = rng.randrange(0, nr - 8)
                write_gen(dev, range(start, start + 8), gen, model)
            dev.fsync()
            for _ in range(6):
                p = run(["dmsetup", "message", DM_PREFIX + "top", "0", "gc_collect"],
                        check=False)
                if p.returncode:
                    break
        st = s.status()
    finally:
        dev.close()
    assert st["gc_moved"] > nr, f"premise: some blocks moved twice or more: {st}"
    assert st["gc_unverified"] == 0 and st["mode"] == "write", st
    s.crash()
    s.create(opts)
    st = s.status()
    assert st["replayed_units"] > 0 and st["first_error"] == 0, st
    bad = check_path(s.top, nr, lambda lba, g: g == model[lba])
    assert not bad, f"{len(bad)} blocks wrong after replay: {bad[:8]}"
    dm_remove("top")
    p = remapctl("check", s.under, check=False)
    assert p.returncode == 0 and " 0 errors" in p.stdout, p.stdout + p.stderr
