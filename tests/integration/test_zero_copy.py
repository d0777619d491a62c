# SPDX-License-Identifier: GPL-2.0-only
"""Zero-copy large writes (issue 12), with the table option zero_copy.

A write of at least dmr_zero_copy_min() blocks goes to the log from the
request's own pages, behind a summary of its own, and leaves no copy in
the segment buffer: reads of its blocks must go to the device even while
the log head is still in that segment (dmr_mem_run()), a power cut must
keep what a flush covered, and a page changed under the write must not
leave a unit whose checksum stops replay (the unit is written again from
a copy)."""
import mmap
import os
import random
import threading

import pytest

from conftest import BLOCK
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


@pytest.mark.parametrize("zero_copy", [True, False], ids=["zero_copy", "default"])
def test_large_writes_read_back_and_survive_power_cut(ram, zero_copy):
    """Large writes mixed with small ones read back right away and after
    all of them; the zero-copy counter moves only when zero copy is on; a
    power cut keeps everything up to the last fsync, and a later block
    holds either its flushed generation or one written after it."""
    opts = "3 checkpoint_interval 86400 zero_copy" if zero_copy else \
        "2 checkpoint_interval 86400"
    s = make_stack(ram, opts)
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
    if zero_copy:
        assert 0 < st["zero_copy_blocks"] <= st["user_blocks"], st
    else:
        assert st["zero_copy_blocks"] == 0, st
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


def test_pages_changing_under_a_zero_copy_write(ram):
    """A thread scribbles on the buffer that large O_DIRECT writes are
    written from, as a program racing its own I/O (or a page re-dirtied
    under writeback) does.  dm-remap must notice that the pages changed
    after it checksummed them and write the unit again from a copy (status
    field zero_copy_recopied): a unit whose data did not match its
    checksum would stop replay there after a power cut, losing every
    write after it, here the known data written and flushed afterwards."""
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
    assert st["zero_copy_recopied"] >= 1, st

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


def test_zero_copy_write_is_write_through(ram):
    """The cost the table option's documentation names: with zero_copy a
    large write is not buffered, so when the device below fails its
    writes the request itself fails (and the target goes to failed
    mode), while the same write without the option is acknowledged into
    the segment buffer and reads back (test_log.py's
    test_failed_segment_write_keeps_its_data_readable).  Either way no
    read returns data the target did not acknowledge."""
    s = make_stack(ram, "3 checkpoint_interval 86400 zero_copy")
    # rule 7's first write marks the checkpoint not clean: let it succeed
    dev = Dev(s.top)
    try:
        dev.pwrite(1000, blocks([1000], 1))
        dev.fsync()
    finally:
        dev.close()
    data = os.urandom(256 * BLOCK)
    s.flakey("error")
    fd = os.open(s.top, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, len(data))
    buf[:] = data
    try:
        with pytest.raises(OSError) as e:
            os.pwritev(fd, [buf], 0)
    finally:
        os.close(fd)
    assert e.value.errno == 5, e.value
    st = s.status()
    assert st["mode"] == "failed" and st["first_error"] == -5, st
    assert st["zero_copy_blocks"] == 0, st
    s.flakey("up")
    dev = Dev(s.top)
    try:
        got = dev.pread(0, 256)
        assert got != data, "a failed write's data read back"
        assert dev.pread(1000, 1) == blocks([1000], 1)
    finally:
        dev.close()
