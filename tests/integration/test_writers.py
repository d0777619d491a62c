# SPDX-License-Identifier: GPL-2.0-only
"""Writes handled by their submitter (issue 41, goal 6).

A plain write (no flush, no FUA) that comes while the worker is idle is
handled in the submitting task's context (dmr_worker_inline()), under the
worker's lock, by the worker's own code; the rest are queued.  Status
field 37 (inline_writes) counts the first kind.  These tests check that
the path is taken when it should be, and that data written both ways by
many writers, while GC runs, survives a power cut as rule 1 says; that a
write whose map page is out is queued is checked by
test_map_cache.py::test_map_cache_pages_leave_and_come_back."""
import random

from conftest import status_fields
from test_gc import SEG_SIZE, Dev, small_base
from test_group_commit import cut_while_writing
from test_log import Stack, block



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


def test_many_writers_plain_writes_power_cut(ram):
    """Eight threads write their own blocks of a 32 MiB device with plain
    writes, each fsyncing every eighth write, long enough for GC to run
    (writes then go both ways: inline while the worker is idle, queued
    while a flush waits or GC has work); power is cut while they run.
    After recovery every block holds the generation its thread's last
    completed fsync covered, or one written after it
    (test_group_commit.cut_while_writing())."""
    rnd = random.Random(41)
    s = Stack(small_base(ram, 32), ["--segment-size", SEG_SIZE])
    before, at_cut, counts = cut_while_writing(s, 256, 8, rnd.uniform(5.0, 7.0), rnd)
    wrote = at_cut["user_blocks"] - before["user_blocks"]
    inline = at_cut["inline_writes"] - before["inline_writes"]
    print(f"{wrote} blocks written before the cut, {inline} inline; "
          f"{at_cut['gc_runs'] - before['gc_runs']} GC runs; fsyncs {counts}")
    # both paths were taken, and GC ran among them
    assert 0 < inline < wrote, (inline, wrote)
    assert at_cut["gc_runs"] > before["gc_runs"], (before, at_cut)
