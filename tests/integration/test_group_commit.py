# SPDX-License-Identifier: GPL-2.0-only
"""Group commit and the lock-free read path (issue 12).

Flush and FUA requests that queue up while the worker is busy share one
device flush (dmr_group_commit_now()); a power cut must still find every
write that an fsync acknowledged.  Reads look the map up without a lock
while writes and GC move blocks: they must return a copy of the block
they asked for, never another block's data."""
import os
import random
import threading
import time

from conftest import status_fields
from test_gc import SEG_SIZE, Dev, check_model, small_base
from test_log import Stack, block, blocks

WRITERS = 8


def fill(path, nr_blocks):
    """Write generation 0 of blocks 0..nr_blocks-1, and fsync."""
    dev = Dev(path)
    try:
        for lba0 in range(0, nr_blocks, 256):
            dev.pwrite(lba0, blocks(range(lba0, min(nr_blocks, lba0 + 256)), 0))
        dev.fsync()
    finally:
        dev.close()


def cut_while_writing(s, per_thread, fsync_every, seconds, rnd):
    """WRITERS threads write their own per_thread blocks of s's device
    (filled with generation 0 first), each fsyncing every fsync_every-th
    write; power is cut after seconds.  Then recovery, and every block
    must hold the generation its thread's last completed fsync covered,
    or one written after it.  Returns the statuses before the writers and
    at the cut, and each thread's acknowledged fsyncs."""
    nr_blocks = WRITERS * per_thread
    fill(s.top, nr_blocks)
    acked = {lba: 0 for lba in range(nr_blocks)}
    written = {}        # lba -> generations written after its acked one
    cutting = threading.Event()
    cut_done = threading.Event()
    lock = threading.Lock()
    counts = [0] * WRITERS
    errors = []

    def writer(t):
        d = Dev(s.top)
        r = random.Random(100 + t)
        gen = t * 1000000
        mine = {}       # lba -> last generation written since the last fsync
        try:
            while not cut_done.is_set():
                gen += 1
                lba = t * per_thread + r.randrange(per_thread)
                with lock:
                    written.setdefault(lba, []).append(gen)
                try:
                    d.pwrite(lba, block(lba, gen))
                    mine[lba] = gen
                    if gen % fsync_every:
                        continue
                    d.fsync()
                except OSError:
                    if not cutting.is_set():
                        raise
                    return
                if not cutting.is_set():    # the fsync completed before the cut
                    with lock:
                        for b, g in mine.items():
                            acked[b] = g
                            written[b] = [x for x in written[b] if x > g]
                    mine.clear()
                    counts[t] += 1
        except Exception as e:      # noqa: BLE001 (reported below)
            errors.append(e)
        finally:
            d.close()

    before = status_fields("top")
    threads = [threading.Thread(target=writer, args=(t,)) for t in range(WRITERS)]
    for th in threads:
        th.start()
    time.sleep(seconds)
    at_cut = status_fields("top")
    cutting.set()
    s.flakey("cut")
    cut_done.set()
    for th in threads:
        th.join()
    assert not errors, errors
    assert min(counts) > 0, counts
    assert at_cut["mode"] == "write" and at_cut["first_error"] == 0, at_cut

    s.crash()
    s.create()
    st = s.status()
    assert st["mode"] == "write" and st["first_error"] == 0, st

    def allowed(lba, g):
        return g == acked[lba] or g in written.get(lba, ())

    dev = Dev(s.top)
    try:
        bad = check_model(dev, nr_blocks, allowed)
    finally:
        dev.close()
    assert not bad, (
        f"{len(bad)} blocks hold neither their fsynced generation nor a later "
        "one: " + ", ".join(f"{lba}: {what} (acked gen {acked[lba]})"
                            for lba, what in bad[:8]))
    return before, at_cut, counts


def test_group_commit_concurrent_fsync_power_cut(ram):
    """Eight threads each write and fsync their own blocks of a 32 MiB
    device; power is cut while they run.  The device must have flushed
    less often than it was asked to (the group commit), and after recovery
    every block holds the generation its thread's last completed fsync
    acknowledged, or one written after it."""
    rnd = random.Random(12)
    s = Stack(small_base(ram, 32), ["--segment-size", SEG_SIZE])
    before, at_cut, counts = cut_while_writing(s, 64, 1, rnd.uniform(3.0, 5.0), rnd)
    requests = at_cut["flushes"] - before["flushes"]
    device = at_cut["device_flushes"] - before["device_flushes"]
    print(f"{sum(counts)} fsyncs acknowledged before the cut ({counts}); "
          f"{requests} flush requests, {device} device flushes")
    # the group commit: fsyncs queued behind a flush share the next one
    assert 0 < device < requests, (device, requests)


def test_reads_race_writes_and_gc(ram):
    """Readers check every block they read (it must be a copy of that
    block: its lba in its content) while a writer overwrites a small
    device at random with 1 to 8 block writes, so GC moves blocks and
    reuses segments under the lock-free lookups.  Some reads span several
    blocks, so runs are looked up and trimmed too."""
    base = small_base(ram, 16)
    s = Stack(base, ["--segment-size", SEG_SIZE])
    nr_blocks = s.n // 8
    fill(s.top, nr_blocks)
    stop = threading.Event()
    bad, reads, errors = [], [0, 0, 0], []

    def reader(t):
        d = Dev(s.top, write=False)
        r = random.Random(7 + t)
        try:
            while not stop.is_set():
                n = r.choice((1, 1, 2, 8))
                lba0 = r.randrange(nr_blocks - n + 1)
                data = d.pread(lba0, n)
                for i in range(n):
                    got = data[i * 4096:(i + 1) * 4096]
                    head = f"lba {lba0 + i} gen ".encode()
                    if not got.startswith(head):
                        bad.append((lba0 + i, got[:24]))
                reads[t] += 1
        except Exception as e:      # noqa: BLE001
            errors.append(e)
        finally:
            d.close()

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(3)]
    for th in threads:
        th.start()
    w = Dev(s.top)
    rnd = random.Random(3)
    before = status_fields("top")
    gen = 0
    try:
        deadline = time.monotonic() + 300
        # at least three overwrites of the device's capacity, so GC reuses
        while gen < 3 * nr_blocks // 4 and time.monotonic() < deadline and not bad:
            gen += 1
            n = rnd.choice((1, 2, 4, 8))
            lba0 = rnd.randrange(nr_blocks - n + 1)
            w.pwrite(lba0, blocks(range(lba0, lba0 + n), gen))
            if gen % 500 == 0:
                w.fsync()
    finally:
        stop.set()
        for th in threads:
            th.join()
        w.close()
    st = status_fields("top")
    print(f"{gen} writes, reads {reads}, gc_runs {st['gc_runs'] - before['gc_runs']}, "
          f"segments freed {st['segments_freed'] - before['segments_freed']}")
    assert not errors, errors
    assert not bad, f"{len(bad)} reads returned another block's data: {bad[:5]}"
    assert st["segments_freed"] > before["segments_freed"], st
    assert min(reads) > 0, reads
    assert os.path.exists(s.top)
