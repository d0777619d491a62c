# SPDX-License-Identifier: GPL-2.0-only
"""Writes handled by their submitter (issue 41, goal 6).

A plain write (no flush, no FUA) that comes while the worker is idle is
handled in the submitting task's context (dmr_worker_inline()), under the
worker's lock, by the worker's own code; the rest are queued.  Status
field 37 (inline_writes) counts the first kind.  These tests check that
the path is taken when it should be, is not taken when a map page would
have to be read back, and that data written both ways by many writers,
while GC runs, survives a power cut as rule 1 says."""
import random
import threading
import time

import pytest

from conftest import loop_dev, status_fields
from test_gc import SEG_SIZE, Dev, check_model, small_base
from test_log import Stack, block

WRITERS = 8
PAGE_BLOCKS = 1024          # logical blocks per map page (narrow entries)


def test_plain_writes_are_handled_by_their_submitter(ram):
    """One writer's plain writes to a fresh device, the worker idle
    between them: every one is handled inline.  Then writes each followed
    by an fsync: the flushes are queued (inline_writes counts no flush),
    and the data reads back."""
    s = Stack(small_base(ram, 32), ["--segment-size", SEG_SIZE])
    s.reload()
    dev = Dev(s.top)
    try:
        dev.pwrite(0, block(0, 1))      # the first write after the load: queued
        before = status_fields("top")   # (the clean checkpoint is marked first)
        for lba in range(1, 1001):
            dev.pwrite(lba, block(lba, 1))
        st = status_fields("top")
        wrote = st["user_blocks"] - before["user_blocks"]
        inline = st["inline_writes"] - before["inline_writes"]
        print(f"{wrote} blocks written, {inline} writes inline")
        assert wrote == 1000 and inline == 1000, (before, st)
        for lba in range(1001, 1101):
            dev.pwrite(lba, block(lba, 2))
            dev.fsync()
        st2 = status_fields("top")
        assert st2["flushes"] - st["flushes"] >= 100, st2
        assert st2["inline_writes"] - st["inline_writes"] <= 100, st2
        assert dev.pread(0, 1) == block(0, 1)
        for lba in (1, 500, 1000):
            assert dev.pread(lba, 1) == block(lba, 1), lba
        for lba in (1001, 1100):
            assert dev.pread(lba, 1) == block(lba, 2), lba
    finally:
        dev.close()
    assert s.status()["first_error"] == 0


@pytest.fixture
def loop4g():
    yield from loop_dev("writers", 4 << 30)


def test_writes_whose_map_page_is_out_are_queued(loop4g):
    """With map_cache 1 (256 of the ~900 map pages of a sparse 4 GiB
    device), a write whose map page is out is queued: reading the page
    back is I/O, which a map method cannot wait for (its bios wait until
    it returns).  A block written in every page, then again: the second
    pass reads pages back and is not all inline, and every block reads
    back."""
    s = Stack(loop4g)
    s.crash_free_remove()
    s.create("2 map_cache 1")
    nb = s.n // 8
    lbas = [p * PAGE_BLOCKS + (p * 389) % PAGE_BLOCKS for p in range(nb // PAGE_BLOCKS)]
    dev = Dev(s.top)
    try:
        for lba in lbas:
            dev.pwrite(lba, block(lba, 1))
        before = status_fields("top")
        for lba in lbas:
            dev.pwrite(lba, block(lba, 2))
        st = status_fields("top")
        inline = st["inline_writes"] - before["inline_writes"]
        misses = st["map_misses"] - before["map_misses"]
        print(f"{len(lbas)} writes: {inline} inline, {misses} map pages read back")
        assert misses > 0 and inline <= len(lbas) - misses, (before, st)
        for lba in lbas:
            assert dev.pread(lba, 1) == block(lba, 2), lba
    finally:
        dev.close()


def test_many_writers_plain_writes_power_cut(ram):
    """Eight threads write their own blocks of a 32 MiB device with plain
    writes, each fsyncing every eighth write, long enough for GC to run
    (writes then go both ways: inline while the worker is idle, queued
    while a flush waits or GC has work); power is cut while they run.
    After recovery every block holds the generation its thread's last
    completed fsync covered, or one written after it."""
    rnd = random.Random(41)
    s = Stack(small_base(ram, 32), ["--segment-size", SEG_SIZE])
    nr_blocks = WRITERS * 256
    acked = {lba: 0 for lba in range(nr_blocks)}
    written = {}        # lba -> generations written after its acked one
    cutting = threading.Event()
    cut_done = threading.Event()
    lock = threading.Lock()
    counts = [0] * WRITERS
    errors = []

    dev = Dev(s.top)
    try:
        for lba0 in range(0, nr_blocks, 256):
            dev.pwrite(lba0, b"".join(block(lba, 0) for lba in range(lba0, lba0 + 256)))
        dev.fsync()
    finally:
        dev.close()

    def writer(t):
        d = Dev(s.top)
        r = random.Random(100 + t)
        gen = t * 1000000
        mine = {}       # lba -> last generation written since the last fsync
        try:
            while not cut_done.is_set():
                gen += 1
                lba = t * 256 + r.randrange(256)
                with lock:
                    written.setdefault(lba, []).append(gen)
                try:
                    d.pwrite(lba, block(lba, gen))
                    mine[lba] = gen
                    if gen % 8 == 0:
                        d.fsync()
                    else:
                        continue
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
    time.sleep(rnd.uniform(5.0, 7.0))
    at_cut = status_fields("top")
    cutting.set()
    s.flakey("cut")
    cut_done.set()
    for th in threads:
        th.join()
    assert not errors, errors
    wrote = at_cut["user_blocks"] - before["user_blocks"]
    inline = at_cut["inline_writes"] - before["inline_writes"]
    print(f"{wrote} blocks written before the cut, {inline} inline; "
          f"{at_cut['gc_runs'] - before['gc_runs']} GC runs; fsyncs {counts}")
    assert at_cut["mode"] == "write" and at_cut["first_error"] == 0, at_cut
    assert min(counts) > 0, counts
    # both paths were taken, and GC ran among them
    assert 0 < inline < wrote, (inline, wrote)
    assert at_cut["gc_runs"] > before["gc_runs"], (before, at_cut)

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
