# SPDX-License-Identifier: GPL-2.0-only
"""Large writes, and the retired table option zero_copy (issues 12, 25).

Issue 12 added a zero-copy path: a large write went to the log from the
request's own pages, one synchronous unit at a time.  It measured
0.74-0.81x of the copying path, and issue 25 removed it: every write is
copied into the segment buffer.  Table lines with ``zero_copy`` still load
(the option is accepted, re-emitted by ``dmsetup table`` and ignored, with
a kernel warning), and the status fields ``zero_copy_blocks`` and
``zero_copy_recopied`` stay, always 0, so parsers keep their positions.

What the tests keep asserting of large writes: they read back at once and
after a power cut, and a page changed under an O_DIRECT write never leaves
a unit whose checksum stops replay."""
import mmap
import os
import random
import threading

import pytest

from conftest import BLOCK, Kmsg, run
from test_gc import ZERO_GEN, Dev, check_model, small_base, write_gen
from test_log import Stack, blocks

MIB = 32            # small device: 1 MiB segments (no stripe below)


def make_stack(ram, opts):
    s = Stack(small_base(ram, MIB))
    s.crash_free_remove()
    s.create(opts)
    return s


def random_writes(dev, rnd, nr_blocks, count, gen, model, later=None,
                  read_back=True):
    """count writes, 70% large (64-300 blocks), the rest 1-4 blocks, each
    of a new generation; a large one is read back at once, while its
    segment is still the log head's.  Returns the last generation."""
    for _ in range(count):
        gen += 1
        n = rnd.choice((64, 100, 256, 300)) if rnd.random() < 0.7 \
            else rnd.randint(1, 4)
        lba0 = rnd.randrange(nr_blocks - n)
        lbas = range(lba0, lba0 + n)
        dev.pwrite(lba0, blocks(lbas, gen))
        for lba in lbas:
            model[lba] = gen
            if later is not None:
                later.setdefault(lba, set()).add(gen)
        if read_back and n >= 64:
            assert dev.pread(lba0, n) == blocks(lbas, gen), \
                f"read back of blocks {lba0}+{n}, gen {gen}"
    return gen


@pytest.mark.parametrize("zero_copy", [True, False], ids=["retired_option", "default"])
def test_large_writes_read_back_and_survive_power_cut(ram, zero_copy):
    """Large writes mixed with small ones read back right away and after
    all of them; with or without the retired option nothing is written
    from the request's pages (zero_copy_blocks stays 0: it counted them
    when the path existed); a power cut keeps everything up to the last
    fsync, and a later block holds either its flushed generation or one
    written after it."""
    opts = "3 checkpoint_interval 86400 zero_copy" if zero_copy else \
        "2 checkpoint_interval 86400"
    kmsg = Kmsg()
    s = make_stack(ram, opts)
    warned = "zero_copy is retired and ignored" in kmsg.text()
    assert warned == zero_copy, kmsg.text()
    table = run(["dmsetup", "table", s.top]).stdout
    assert ("zero_copy" in table) == zero_copy, table
    nr_blocks = s.n // 8
    rnd = random.Random(12)
    model = {}
    dev = Dev(s.top)
    try:
        gen = random_writes(dev, rnd, nr_blocks, 200, 0, model)
        bad = check_model(dev, nr_blocks,
                          lambda lba, g: g == model.get(lba, ZERO_GEN))
        assert not bad, f"{len(bad)} blocks wrong: {bad[:8]}"
        st = s.status()
        dev.fsync()
        flushed = dict(model)
        later = {}
        random_writes(dev, rnd, nr_blocks, 40, gen, model, later)
    finally:
        dev.close()
    print(f"user_blocks {st['user_blocks']}, zero_copy_blocks "
          f"{st['zero_copy_blocks']}, recopied {st['zero_copy_recopied']}")
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert st["zero_copy_blocks"] == 0 and st["user_blocks"] > 10000, st
    assert st["zero_copy_recopied"] == 0, st

    s.crash()
    s.create(opts)
    dev = Dev(s.top)
    try:
        bad = check_model(dev, nr_blocks, lambda lba, g: g == flushed.get(
            lba, ZERO_GEN) or g in later.get(lba, ()))
    finally:
        dev.close()
    # GC's checkpoints may leave nothing to replay here; the next test replays
    print(f"replayed_units {s.status()['replayed_units']}")
    assert not bad, f"after the power cut: {len(bad)} blocks wrong: {bad[:8]}"


def test_pages_changing_under_a_large_write(ram):
    """A thread scribbles on the buffer that large O_DIRECT writes are
    written from, as a program racing its own I/O (or a page re-dirtied
    under writeback) does.  dm-remap copies the pages before it checksums
    them, so no unit's data differs from its checksum: such a unit would
    stop replay there after a power cut, losing every write after it, here
    the known data written and flushed afterwards.  (The zero-copy path
    had to notice and write the unit again; zero_copy_recopied counted it.)"""
    s = make_stack(ram, "3 checkpoint_interval 86400 zero_copy")
    region = 2048               # 8 MiB: no GC, hence no checkpoint
    buf = mmap.mmap(-1, 256 * BLOCK)
    stop = threading.Event()

    def scribble():
        r = random.Random(5)
        while not stop.is_set():
            off = r.randrange(len(buf) - 8)
            buf[off:off + 8] = r.randbytes(8)

    rnd = random.Random(6)
    fd = os.open(s.top, os.O_RDWR | os.O_DIRECT)
    t = threading.Thread(target=scribble)
    t.start()
    try:
        for _ in range(120):
            lba0 = rnd.randrange(region - 256)
            assert os.pwritev(fd, [buf], lba0 * BLOCK) == len(buf)
    finally:
        stop.set()
        t.join()
        os.close(fd)
    st = s.status()
    print(f"zero_copy_blocks {st['zero_copy_blocks']}, "
          f"recopied {st['zero_copy_recopied']}")
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert st["zero_copy_recopied"] == 0 and st["zero_copy_blocks"] == 0, st

    model = {}
    dev = Dev(s.top)
    try:
        write_gen(dev, range(region), 1, model)
        for lba in rnd.sample(range(region), 100):
            dev.pwrite(lba, blocks([lba], 2))
            model[lba] = 2
        dev.fsync()
    finally:
        dev.close()
    s.crash()
    s.create("3 checkpoint_interval 86400 zero_copy")
    dev = Dev(s.top)
    try:
        bad = check_model(dev, region, lambda lba, g: g == model[lba])
    finally:
        dev.close()
    assert not bad, f"after the power cut: {len(bad)} blocks wrong: {bad[:8]}"
    assert s.status()["replayed_units"] > 0
