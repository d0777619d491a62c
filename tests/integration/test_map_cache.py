"""The map cache (table option map_cache, issue 26 "a map that pages"):
only that many MiB of map pages stay in memory; the others leave once
the newest checkpoint slot holds them and are read back from it
when a request or GC needs them.

A page maps 4 MiB of logical space and map_cache counts MiB of pages (256
pages per MiB), so these tests run on a sparse 4 GiB loop device: about
900 pages, a quarter of which fit in a cache of 1 MiB.
"""
import errno
import os
import random
import threading

import pytest

from conftest import (BLOCK, Kmsg, block_sysfs, ckpt_layout, dm_create, dm_create_table, dm_path,
                      dm_table, dump, loop_dev, newest_ckpt, read_blocks_direct, remapctl,
                      report_count, run, sectors, udev_paused, write_blocks_direct)
from test_log import Stack, _pread, _pwrite, block, mmap_buf

PAGE_BLOCKS = 1024          # logical blocks per map page (DMR_MAP_NARROW_ENTRIES)
CACHE_PAGES = 256           # map_cache 1 (MiB)


@pytest.fixture
def loop4g():
    yield from loop_dev("mapcache", 4 << 30)


def _one_per_page(n_blocks, salt, per_page=PAGE_BLOCKS):
    """A block in every map page, at a place that differs page to page."""
    lbas = []
    for p in range(-(-n_blocks // per_page)):
        lba = p * per_page + (p * 389 + salt) % per_page
        lbas.append(min(lba, n_blocks - 1))
    return lbas


def _write_all(top, lbas, gen):
    for lba in lbas:
        _pwrite(top, lba, block(lba, gen))


def _check_all(top, model, what):
    bad = [lba for lba, gen in model.items() if _pread(top, lba) != block(lba, gen)]
    assert not bad, f"{what}: {len(bad)} blocks wrong, first {bad[:5]}"


def _removed_checks_clean(s):
    """The target removed cleanly: `remapctl check` of the device finds
    nothing wrong."""
    s.crash_free_remove()
    p = remapctl("check", s.under, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def _cached_stack(dev):
    """A device formatted on @dev and loaded with map_cache 1: the stack,
    its logical blocks, and the empty map's memory with the cache."""
    s = Stack(dev)
    s.crash_free_remove()
    s.create("2 map_cache 1")
    return s, s.n // 8, s.status()["map_memory"]


@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
def test_map_cache_pages_leave_and_come_back(loop4g, wide):
    """A block written in every map page: the cache holds 256 of the ~900
    pages (~1800 of 512 8-byte entries on a device formatted --wide, format
    4's 64-bit block numbers), so pages leave (after checkpoints forced
    while every page in it was dirty) and the kernel memory the target
    holds grows by at most the cache; every block reads back, the reads of
    pages that left reading them back; overwrites, a GC collection (whose
    liveness test reads pages back too) and a power cut change none of it;
    the device then checks clean."""
    s = Stack(loop4g, ["--wide"] if wide else [])
    assert bool(int(s.info["feature_incompat"]) & 2) == wide
    per_page = PAGE_BLOCKS // 2 if wide else PAGE_BLOCKS
    nb = s.n // 8
    pages = -(-nb // per_page)
    assert pages > 3 * CACHE_PAGES, pages
    s.crash_free_remove()
    s.create("2 map_cache 1")
    assert dm_table("top").endswith(" 2 map_cache 1"), dm_table("top")
    mem0 = s.status()["map_memory"]

    first = _one_per_page(nb, 0, per_page)
    _write_all(s.top, first, 1)
    model = dict.fromkeys(first, 1)
    st = s.status()
    assert st["map_forced"] >= 2 and st["map_evictions"] >= pages - CACHE_PAGES, st
    grown = st["map_memory"] - mem0
    assert 0 < grown <= CACHE_PAGES * BLOCK, (grown, st)

    # every block back, most of them from pages that had left
    _check_all(s.top, model, "after the first pass")
    st = s.status()
    assert st["map_misses"] >= pages - 2 * CACHE_PAGES, st
    assert st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, st

    # overwrites of the blocks of every other page, then GC moves what is
    # left of their segments (a segment the first pass filled holds 255
    # blocks: moving them all takes 256 blocks narrow, 257 wide, so it is
    # no victim until blocks of it die; before this overwrote the blocks
    # it wrote, a victim came only from the units forced checkpoints cut
    # short, which a wide unit's larger summaries leave none of)
    second = first[::2]
    before = s.status()
    _write_all(s.top, second, 2)
    model.update(dict.fromkeys(second, 2))
    # a write whose page is out is queued, not handled by its submitter
    # (dmr_worker_inline(): reading the page back is I/O, which a map
    # method cannot wait for).  The cache holds the last 256 pages the
    # check above read, so at most about half of these writes find their
    # page in (udev's probes after each close read pages back too)
    st = s.status()
    missed = st["map_misses"] - before["map_misses"]
    inline = st["inline_writes"] - before["inline_writes"]
    print(f"{len(second)} writes, {inline} inline, {missed} map pages read back")
    assert missed > 0 and inline < len(second) // 2, (len(second), before, st)
    before = st
    misses = before["map_misses"]
    run(["dmsetup", "message", "dmrt-top", "0", "gc_collect"])
    st = s.status()
    assert st["gc_runs"] >= 1 and st["mode"] == "write", st
    # the victim emptied: every valid block moved, those of pages out too,
    # and none held back as unverified (dmr_seg_verify() checks a unit
    # whose page is out: it may be live)
    assert st["gc_moved"] > 0 and st["gc_unverified"] == 0, st
    assert st["prefree_segments"] + st["segments_freed"] > \
        before["prefree_segments"] + before["segments_freed"], (before, st)
    assert st["map_misses"] > misses, (before, st)
    # what the memory check counts for the cache (dmr_map_cache_most()):
    # GC tests a victim's every block, a page each at most, before any
    # page leaves (segments of 1 MiB: 256 blocks)
    most = CACHE_PAGES + max(CACHE_PAGES // 2 + 2, int(s.info["segment_blocks"]))
    assert st["map_pages_peak"] <= most, (most, st)
    _check_all(s.top, model, "after GC")

    # acknowledged by a flush, then the power goes
    third = random.Random(3).sample(range(nb), 200)
    _write_all(s.top, third, 3)
    _pwrite(s.top, third[0], block(third[0], 3), sync=True)
    model.update(dict.fromkeys(third, 3))
    s.crash()
    s.create("2 map_cache 1")
    st = s.status()
    # pages let go as the load counted them; those replay read back (if a
    # forced checkpoint did not come after the flush), after the recovery
    # checkpoint
    assert st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, (mem0, st)
    _check_all(s.top, model, "after the power cut")
    st = s.status()
    report_count(f"map_cache 1 over {pages} pages: {st['map_evictions']} evicted after "
                 f"the reload, {misses} read back before it, "
                 f"{st['map_forced']} checkpoints forced, at most "
                 f"{st['map_pages_peak']} pages in memory since the reload")
    _removed_checks_clean(s)


def _dev_io(dev):
    """(sectors read, sectors written) of a block device so far."""
    with open(f"{block_sysfs(dev)}/stat") as f:
        st = f.read().split()
    return int(st[2]), int(st[6])


def test_map_cache_load_of_a_twin_rewrites_no_map(loop4g):
    """Issue 41's "Also": the first checkpoint after a load marked every
    map page dirty for the other slot, so it rewrote the whole map there,
    reading back from the loaded slot the pages the cache had let go (on
    a full 32 TiB device 58 GiB written, as much read, after every mount).
    A clean removal now writes its clean checkpoint to both slots (the
    second a twin, DMR_CKPT_TWIN), and the load of the twin leaves the
    other slot's map alone: the first checkpoint after it writes the map
    block it changed and the table blocks that did.  Side by side in one
    run with ckpt_incremental=N (one clean checkpoint, whole tables, as
    before): a block in each of the ~900 map pages, a clean removal, a
    load with map_cache 1, one write, a checkpoint; the device's own
    counts of what that cost."""
    param = "/sys/module/dm_remap/parameters/ckpt_incremental"
    log = Kmsg()
    s, nb, _ = _cached_stack(loop4g)
    lbas = _one_per_page(nb, 1)
    _write_all(s.top, lbas, 1)
    model = dict.fromkeys(lbas, 1)
    cost = {}
    try:
        for mode in ("N", "Y"):
            with open(param, "w") as f:
                f.write(mode)
            s.crash_free_remove()           # clean: one checkpoint, or two
            r0, w0 = _dev_io(s.under)
            s.create("2 map_cache 1")
            _pwrite(s.top, lbas[5], block(lbas[5], 2), sync=True)
            model[lbas[5]] = 2
            run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
            r1, w1 = _dev_io(s.under)
            cost[mode] = ((r1 - r0) // 8, (w1 - w0) // 8)
            _check_all(s.top, model, f"ckpt_incremental={mode}")
    finally:
        with open(param, "w") as f:
            f.write("Y")
    pages = len(lbas)
    report_count(f"load of {pages} map pages (map_cache 1), one write, a checkpoint: "
                 f"ckpt_incremental=N read {cost['N'][0]} and wrote {cost['N'][1]} blocks, "
                 f"Y read {cost['Y'][0]} and wrote {cost['Y'][1]}")
    # before: the whole map written again (and its pages out read back)
    assert cost["N"][1] >= pages, cost
    # now: a few blocks (header, unit, map block, table blocks, header)
    assert cost["Y"][1] <= 32, cost
    assert cost["Y"][0] < cost["N"][0] - pages // 2, cost
    # slots that differ at a power cut (a checkpoint since the twin's
    # load): the load trusts nothing of the other slot (no twin), its
    # recovery checkpoint goes there, and the loads after it (of that
    # checkpoint after a second power cut, of the clean removal's twin)
    # use the newest slot: no table block was left stale
    _pwrite(s.top, lbas[6], block(lbas[6], 3), sync=True)
    model[lbas[6]] = 3
    run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
    _pwrite(s.top, lbas[8], block(lbas[8], 3), sync=True)
    model[lbas[8]] = 3
    s.crash()
    s.create("2 map_cache 1")
    s.crash()
    s.create("2 map_cache 1")
    _check_all(s.top, model, "after two power cuts")
    _pwrite(s.top, lbas[7], block(lbas[7], 3), sync=True)
    model[lbas[7]] = 3
    run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
    s.crash_free_remove()
    s.create("2 map_cache 1")
    _check_all(s.top, model, "after a power cut and two loads")
    _removed_checks_clean(s)
    assert "is damaged" not in log.text(), log.text()


def test_map_cache_damaged_page_fails_the_read(loop4g):
    """A page that left memory and cannot be read back (its map block
    damaged in both slots on the device below) fails the read that needs
    it with an I/O error and puts the target in failed mode; nothing
    reads as zeroes or as another block's data."""
    s = Stack(loop4g)
    nb = s.n // 8
    s.crash_free_remove()
    # no timed checkpoint: a checkpoint copies an out page's block from the
    # newest slot to the other (checked against its CRC) and would find
    # the damage first, failing with -EILSEQ instead of the read's -EIO
    s.create("4 map_cache 1 checkpoint_interval 86400")
    lbas = _one_per_page(nb, 0)
    _write_all(s.top, lbas, 1)
    # from here to the last status no udev probe reads a page back: the
    # writes' probes are settled first, and a probe that came late would
    # read pages 0 and 1 back between the two statuses (map_misses)
    with udev_paused():
        # two checkpoints: every page out is in both slots, none left to copy
        for _ in range(2):
            run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
        st = s.status()
        assert st["map_evictions"] > 0 and st["mode"] == "write", st
        # page 100 was written early and not used since: out of memory now
        # (udev's probes read the device's first and last pages back)
        victim = 100
        info = dump(s.under)
        lay = ckpt_layout(int(info["logical_blocks"]), int(info["nr_segments"]))
        slot_blocks = int(info["ckpt_slot_blocks"])
        for slot in (0, 1):
            blk = int(info["ckpt_offset"]) + slot * slot_blocks + lay["map_offset"] + victim
            raw = bytearray(read_blocks_direct(s.under, blk))
            raw[8] ^= 0x01
            write_blocks_direct(s.under, blk, bytes(raw))
        p = run(["dd", f"if={s.top}", "of=/dev/null", "bs=4096", f"skip={lbas[victim]}",
                 "count=1", "iflag=direct"], check=False)
        assert p.returncode != 0 and "Input/output error" in p.stderr, p.stderr
        after = s.status()
        assert after["mode"] == "failed" and after["first_error"] == -5, after
        assert after["map_misses"] == st["map_misses"], (st, after)
    # the other pages still read (those in memory, and those read back)
    assert _pread(s.top, lbas[-1]) == block(lbas[-1], 1)


def test_map_cache_damaged_copy_fails_the_checkpoint_before_it_writes(loop4g):
    """A page out of memory is in the newest slot only, and the next
    checkpoint copies it to the other.  If that copy is damaged on the
    device, the checkpoint fails (-EILSEQ, failed mode) before it writes
    a block of the other slot (dmr_check_copies()): that slot stays as it
    was, and a reload falls back to it and replays the log, so every
    block written reads back.  Checked only as each block was copied, the
    slot would be half written and neither slot would load."""
    s = Stack(loop4g)
    nb = s.n // 8
    s.crash_free_remove()
    opts = "4 map_cache 1 checkpoint_interval 86400"
    s.create(opts)
    lbas = _one_per_page(nb, 0)
    _write_all(s.top, lbas, 1)
    model = dict.fromkeys(lbas, 1)
    # page 100 changed, then a checkpoint: in the newest slot, dirty for
    # the other; then every other page read once, and CLOCK's hand goes
    # round and lets it go (dmr_gct_page_clock_turns: it used to leave
    # each page read in under the hand, the next victim, so that the
    # pages read came and went through one slot and page 100 stayed)
    victim = 100
    _pwrite(s.top, lbas[victim], block(lbas[victim], 2))
    model[lbas[victim]] = 2
    run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
    for i, lba in enumerate(lbas):
        if i != victim:
            assert _pread(s.top, lba) == block(lba, 1), lba
    st = s.status()
    assert st["mode"] == "write" and st["map_evictions"] > 0, st

    info = dump(s.under)
    lay = ckpt_layout(int(info["logical_blocks"]), int(info["nr_segments"]))
    slot_blocks = int(info["ckpt_slot_blocks"])
    new = newest_ckpt(s.under, info)
    other_start = int(info["ckpt_offset"]) + (new["slot"] ^ 1) * slot_blocks
    blk = int(info["ckpt_offset"]) + new["slot"] * slot_blocks + lay["map_offset"] + victim
    raw = bytearray(read_blocks_direct(s.under, blk))
    raw[8] ^= 0x01
    write_blocks_direct(s.under, blk, bytes(raw))
    other = read_blocks_direct(s.under, other_start, slot_blocks)

    # a page before it changed (the checkpoint writes it before it comes
    # to page 100), then the checkpoint that finds the damage
    _pwrite(s.top, lbas[10], block(lbas[10], 3), sync=True)
    model[lbas[10]] = 3
    p = run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"], check=False)
    st = s.status()
    assert p.returncode != 0, p
    assert st["mode"] == "failed" and st["first_error"] == -errno.EILSEQ, st
    assert read_blocks_direct(s.under, other_start, slot_blocks) == other, \
        "the failed checkpoint wrote into the older slot"
    assert newest_ckpt(s.under, info)["seq"] == new["seq"]

    # the newest slot fails its checksums: the load takes the older one
    s.crash_free_remove()
    s.create(opts)
    st = s.status()
    assert st["mode"] == "write", st
    _check_all(s.top, model, "after the reload")


def _peak_memory(s, stop, seen):
    """map_memory polled until @stop is set (a discard runs meanwhile)."""
    while not stop.is_set():
        seen.append(s.status()["map_memory"])


def _check_discarded(s, model, lo, hi, mem0, what):
    """Blocks in [lo, hi) read as zeroes, the others as written; the
    target in write mode, its map within the cache."""
    _check_all(s.top, {lba: g for lba, g in model.items() if not lo <= lba < hi}, what)
    gone = [lba for lba in model if lo <= lba < hi]
    bad = [lba for lba in gone if _pread(s.top, lba) != bytes(BLOCK)]
    assert not bad, f"{what}: {len(bad)} discarded blocks not zeroes, first {bad[:5]}"
    st = s.status()
    assert st["mode"] == "write", st
    assert st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, (what, st["map_memory"] - mem0, st)
    return st


def _discard_ios(dev):
    """Discard requests the mapped device completed (its block stat)."""
    with open(f"{block_sysfs(dev)}/stat") as f:
        return int(f.read().split()[11])


def test_map_cache_discard_whole_device(loop4g):
    """A discard of the middle 60% of the device (some 550 map pages, most
    of them out of memory) with map_cache 1: it is cut into parts of half
    the cache with a trim between them, so the pages it reads back never
    hold more than the cache and a half while it runs, and no more than
    the cache once it is done; the discarded blocks read as zeroes, the
    others (the edges of the range too) keep their data, and all of it
    holds after a power cut; the device then checks clean."""
    s, nb, mem0 = _cached_stack(loop4g)

    lbas = _one_per_page(nb, 0)
    lo = nb // 5 // PAGE_BLOCKS * PAGE_BLOCKS + 17       # not on page boundaries
    hi = nb * 4 // 5 // PAGE_BLOCKS * PAGE_BLOCKS + 601
    edges = [0, lo - 1, lo, lo + 1, hi - 2, hi - 1, hi, hi + 1, nb - 1]
    _write_all(s.top, lbas + edges, 1)
    model = dict.fromkeys(lbas + edges, 1)
    st = s.status()
    assert st["map_evictions"] > 0 and st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, st
    pages = -(-hi // PAGE_BLOCKS) - lo // PAGE_BLOCKS
    assert pages > 2 * CACHE_PAGES, pages

    # reads below slowed (5 ms) while the discard runs, so that the polls
    # see its parts reading their pages back
    before = st
    ios0 = _discard_ios(s.top)
    s.set_under(f"0 {s.size} delay {s.ram} 0 5 {s.ram} 0 0")
    stop, seen = threading.Event(), []
    poll = threading.Thread(target=_peak_memory, args=(s, stop, seen))
    poll.start()
    try:
        run(["blkdiscard", "-o", str(lo * BLOCK), "-l", str((hi - lo) * BLOCK), s.top])
    finally:
        stop.set()
        poll.join()
        s.flakey("up")
    done = s.status()
    # acknowledged by a flush (a write outside the range)
    _pwrite(s.top, edges[0], block(edges[0], 2), sync=True)
    model[edges[0]] = 2
    st = _check_discarded(s, model, lo, hi, mem0, "after the discard")
    # each discard request counted once, not once per part (the worker
    # holds it between parts and resumes it)
    ios = _discard_ios(s.top) - ios0
    assert ios > 0 and st["discards"] - before["discards"] == ios, (ios, before, st)
    # the pages the discard needed were read back, more than the cache holds
    assert done["map_misses"] - before["map_misses"] > CACHE_PAGES, (before, done)
    peak = max(seen, default=mem0) - mem0
    # a part needs half the cache's pages (one more when not aligned)
    assert peak <= (CACHE_PAGES + CACHE_PAGES // 2 + 2) * BLOCK, (peak // BLOCK, seen)
    report_count(f"map_cache 1, a discard over {pages} pages: "
                 f"{done['map_misses'] - before['map_misses']} read back, "
                 f"{done['map_evictions'] - before['map_evictions']} evicted, "
                 f"peak {peak // BLOCK} pages over {len(seen)} polls")

    s.crash()
    s.create("2 map_cache 1")
    # the load lets each page go as it counts it, and the pages replay
    # read back go after the recovery checkpoint: within the cache
    _check_discarded(s, model, lo, hi, mem0, "after the power cut")
    _pwrite(s.top, edges[-1], block(edges[-1], 2), sync=True)
    model[edges[-1]] = 2
    _check_discarded(s, model, lo, hi, mem0, "after the power cut and a write")
    _removed_checks_clean(s)


def test_map_cache_read_only(loop4g):
    """A device written with map_cache 1 (pages left memory), removed
    cleanly, loaded read_only with map_cache 1: every block reads back,
    writes and discards fail with an I/O error and the mode stays
    read-only.  The load lets pages go as it counts them, and nothing
    changed since the clean checkpoint: the map stays within the cache
    although a read-only target writes no checkpoint."""
    s, nb, mem0 = _cached_stack(loop4g)
    lbas = _one_per_page(nb, 5)
    _write_all(s.top, lbas, 1)
    model = dict.fromkeys(lbas, 1)
    st = s.status()
    assert st["map_evictions"] > 0, st
    s.crash_free_remove()

    s.create("3 read_only map_cache 1")
    assert dm_table("top").endswith(" 3 read_only map_cache 1"), dm_table("top")
    st = s.status()
    assert st["mode"] == "read-only", st
    assert st["map_evictions"] >= len(lbas) - CACHE_PAGES, st     # during the load
    assert st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, (mem0, st)
    _check_all(s.top, model, "read-only")
    st = s.status()
    assert st["map_misses"] >= len(lbas) - 2 * CACHE_PAGES, st
    assert st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, (mem0, st)
    for lba in (lbas[0], lbas[len(lbas) // 2], nb - 1):
        with pytest.raises(OSError) as e:
            _pwrite(s.top, lba, block(lba, 2))
        assert e.value.errno == errno.EIO, e.value
    p = run(["blkdiscard", "-o", "0", "-l", str(PAGE_BLOCKS * BLOCK), s.top], check=False)
    assert p.returncode != 0, p.stdout + p.stderr
    _check_all(s.top, model, "read-only, after the refused writes")
    after = s.status()
    assert after["mode"] == "read-only" and after["map_forced"] == 0, after
    report_count(f"map_cache 1 read-only over {len(lbas)} pages: map memory "
                 f"{(after['map_memory'] - mem0) // BLOCK} pages' worth over the "
                 f"empty map (cache {CACHE_PAGES}), {after['map_misses']} read back, "
                 f"{after['map_evictions']} evicted")
    _removed_checks_clean(s)


@pytest.fixture
def loop16g():
    yield from loop_dev("mapcache16", 16 << 30)


def _write_each(dev, lbas, gen):
    """One O_DIRECT write per block, through one descriptor, then fsync."""
    buf = mmap_buf(1)
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        for lba in lbas:
            buf.seek(0)
            buf.write(block(lba, gen))
            assert os.pwritev(fd, [buf], lba * BLOCK) == BLOCK
        os.fsync(fd)
    finally:
        os.close(fd)


def test_map_cache_replay_stays_within_the_cache(loop16g):
    """Issue 40, item 10: replay keeps no more map pages than the cache.
    A 16 GiB device (~3,600 map pages) written without a cache, a block
    in every page, checkpointed, then discarded whole (units of up to 2^20
    blocks whose extents touch every page), the discard made durable by a
    flush, and the power cut before the next checkpoint (interval 3600 s).
    Reloaded with map_cache 1 (256 pages): replay reads every page back to
    unmap its entries, and writes checkpoints as it goes (map_forced) so
    the pages it changed can leave: the most map memory the load held
    (map_pages_peak) stays within the cache, half of it again and two,
    where it used to hold them all until the recovery checkpoint.  A load
    while the device refuses writes fails at replay's first checkpoint
    ("Cannot write a checkpoint during replay") and loses nothing.  The
    data verifies, after a second power cut too, and the device checks
    clean."""
    s = Stack(loop16g)
    nb = s.n // 8
    pages = -(-nb // PAGE_BLOCKS)
    assert pages > 12 * CACHE_PAGES, pages
    s.crash_free_remove()
    s.create("2 map_cache 1")
    mem0 = s.status()["map_memory"]      # the empty map's, with the cache
    s.crash_free_remove()
    s.create("2 checkpoint_interval 3600")

    lbas = _one_per_page(nb, 11)
    _write_each(s.top, lbas, 1)
    st = s.status()
    assert st["map_pages_peak"] >= pages - 1, st
    assert st["map_memory"] > mem0 + CACHE_PAGES * BLOCK, (mem0, st)
    run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
    run(["blkdiscard", s.top])
    keep = lbas[len(lbas) // 3]
    _pwrite(s.top, keep, block(keep, 2), sync=True)      # the discard durable
    st = s.status()
    assert st["discards"] > 0 and st["checkpoint_seq"] >= 2, st
    s.crash()

    # the device refuses writes: the first checkpoint replay needs fails
    # the load, with its own message, and writes nothing else
    s.flakey("error")
    log = Kmsg()
    p = dm_create("top", f"0 {s.n} remap {s.under} 4 map_cache 1 checkpoint_interval 3600",
                  check=False)
    assert p.returncode != 0, "a load whose replay cannot checkpoint went live"
    assert "Cannot write a checkpoint during replay" in log.text(), log.text()
    s.flakey("up")

    s.create("4 map_cache 1 checkpoint_interval 3600")
    st = s.status()
    assert st["mode"] == "write" and st["replayed_units"] >= 2, st
    peak = st["map_pages_peak"]
    most = CACHE_PAGES + CACHE_PAGES // 2 + 2
    # the pages replay read back went out after checkpoints of its own
    assert st["map_misses"] > pages - CACHE_PAGES and st["map_forced"] >= 2, st
    assert peak <= most, (peak, most, st)
    assert st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, (mem0, st)
    report_count(f"replay of a discard over {pages} map pages with map_cache 1: "
                 f"peak {peak} pages (at most {most}), {st['map_misses']} read back, "
                 f"{st['map_forced']} checkpoints while replaying, "
                 f"{st['replayed_units']} units")

    sample = lbas[::7] + [lbas[-1]]
    bad = [lba for lba in sample if lba != keep and _pread(s.top, lba) != bytes(BLOCK)]
    assert not bad, f"{len(bad)} discarded blocks not zeroes, first {bad[:5]}"
    assert _pread(s.top, keep) == block(keep, 2)
    _pwrite(s.top, lbas[0], block(lbas[0], 3), sync=True)
    s.crash()
    s.create("2 map_cache 1")
    assert _pread(s.top, lbas[0]) == block(lbas[0], 3)
    assert _pread(s.top, keep) == block(keep, 2)
    bad = [lba for lba in sample[1:] if lba != keep and _pread(s.top, lba) != bytes(BLOCK)]
    assert not bad, f"after a second power cut: {len(bad)} blocks not zeroes, first {bad[:5]}"
    assert s.status()["map_pages_peak"] <= most
    _removed_checks_clean(s)


def test_map_cache_replay_of_large_segments_and_blocks(loop4g):
    """Replay of a unit asks for the map pages of all it holds at once
    (dmr_replay_unit()): a large segment's record one (two if it crossed
    a page), a data block one.  With 1 MiB segments a unit of 64 records
    (at most, DMR_UNIT_MAX_EXTENTS) and 255 data blocks in as many pages
    would need 319 pages over a full cache, past what a load may hold
    over it (a segment's blocks: dmr_map_cache_most()); the writer keeps
    records and data blocks in units of their own
    (dmr_unit_takes_data()).  Here: a checkpoint, 510 blocks one per map
    page (two units that fill two segments, so that the next unit starts
    a segment, and replay fills the cache before it), 64 writes of a
    whole segment in 64 other pages and 255 blocks in 255 more, all on
    the cold head with no flush between, then an fsync and a power cut.
    Loaded with map_cache 1, the load's peak stays within 256 + 256 pages
    (mutation: dmr_head_room() adding data blocks to a unit with records
    fails here: 575), the data reads back and the device checks
    clean."""
    s = Stack(loop4g, ["--segment-size", "1M"])
    nb = s.n // 8
    assert nb > 860 * PAGE_BLOCKS, nb
    s.crash_free_remove()
    s.create("2 checkpoint_interval 3600")
    run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
    model = {}
    fill = [p * PAGE_BLOCKS + 5 for p in range(510)]
    _write_each(s.top, fill, 1)
    model.update((lba, 1) for lba in fill)
    for p in range(520, 584):
        lba = p * PAGE_BLOCKS
        _pwrite(s.top, lba, b"".join(block(x, 2) for x in range(lba, lba + 256)))
        model.update((x, 2) for x in range(lba, lba + 256))
    small = [p * PAGE_BLOCKS + 7 for p in range(600, 855)]
    _write_each(s.top, small, 3)
    model.update((lba, 3) for lba in small)
    st = s.status()
    assert st["large_segments"] == 64 and st["mode"] == "write", st
    s.crash()
    s.create("2 map_cache 1")
    st = s.status()
    most = CACHE_PAGES + 256
    assert st["replayed_units"] >= 3 and st["map_misses"] > 0, st
    assert st["map_pages_peak"] <= most, (st["map_pages_peak"], most, st)
    report_count(f"replay of 64 large segments and 765 blocks over 829 map pages with "
                 f"map_cache 1: peak {st['map_pages_peak']} pages (at most {most}), "
                 f"{st['map_forced']} checkpoints while replaying")
    _check_all(s.top, model, "after the power cut")
    _removed_checks_clean(s)

# Issue 40, item 11: memory inside the I/O path
PAGE_ALLOC = "/sys/module/dm_remap/parameters/fault_page_alloc"
REFUSE_ALL = 10 ** 9


class _Refused:
    """Map page allocations refused (the test hook fault_page_alloc) while
    the block runs; a watchdog ends the refusal after @limit seconds, so a
    worker waiting for memory only the kernel could give (no reserve, or
    one never refilled) comes back instead of hanging the VM, and the
    test fails saying so."""

    def __init__(self, limit):
        self.limit, self.fired = limit, False
        self.done = threading.Event()

    def _watch(self):
        if not self.done.wait(self.limit):
            self.fired = True
            with open(PAGE_ALLOC, "w") as f:
                f.write("0")

    def __enter__(self):
        with open(PAGE_ALLOC, "w") as f:
            f.write(str(REFUSE_ALL))
        self.t = threading.Thread(target=self._watch)
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.t.join()
        with open(PAGE_ALLOC) as f:
            self.refused = REFUSE_ALL - int(f.read()) if not self.fired else None
        with open(PAGE_ALLOC, "w") as f:
            f.write("0")
        return False


def test_map_cache_goes_on_with_its_reserve_when_memory_is_refused(loop4g):
    """Issue 40, item 11: with every map page the kernel is asked for
    refused (fault_page_alloc), a device with map_cache 1 whose map is
    four times the cache still serves writes, reads and a discard over
    every page: the pages read back come from the map page reserve
    (DMR_MAP_RESERVE), refilled by the pages leaving the cache after
    their grace period, and the discard's pieces end where the pages
    memory gave at once end.  No request fails and none waits for memory
    that never comes (a watchdog ends the refusal after 240 s: the test
    then fails); every block holds after a power cut, and the device
    checks clean."""
    s, nb, mem0 = _cached_stack(loop4g)
    lbas = _one_per_page(nb, 11)
    assert len(lbas) > 3 * CACHE_PAGES, len(lbas)
    _write_all(s.top, lbas, 1)
    model = dict.fromkeys(lbas, 1)
    lo = nb // 4 // PAGE_BLOCKS * PAGE_BLOCKS + 3
    hi = nb // 2 // PAGE_BLOCKS * PAGE_BLOCKS + 500
    before = s.status()
    assert before["map_evictions"] > 0, before

    with _Refused(240) as w:
        _write_all(s.top, lbas[::2], 2)
        model.update(dict.fromkeys(lbas[::2], 2))
        _check_all(s.top, model, "refused: after the overwrites")
        run(["blkdiscard", "-o", str(lo * BLOCK), "-l", str((hi - lo) * BLOCK), s.top])
        _pwrite(s.top, lbas[0], block(lbas[0], 3), sync=True)
        model[lbas[0]] = 3
        _check_discarded(s, model, lo, hi, mem0, "refused: after the discard")
    st = s.status()
    assert not w.fired, f"the worker waited for memory while it was refused: {st}"
    misses = st["map_misses"] - before["map_misses"]
    # each page read back was first asked of the kernel, and refused
    assert misses > 2 * CACHE_PAGES and w.refused >= misses, (misses, w.refused, st)
    assert st["mode"] == "write" and st["map_forced"] > before["map_forced"], st

    s.crash()
    s.create("2 map_cache 1")
    _check_discarded(s, model, lo, hi, mem0, "after the power cut")
    report_count(f"map_cache 1, every page allocation refused: {misses} pages read "
                 f"back from the reserve, {w.refused} allocations refused")
    _removed_checks_clean(s)


HOG = r"""
import mmap, sys
want, most = int(sys.argv[1]), int(sys.argv[2])    # KiB of swap used; of hog
def swap_used():
    with open("/proc/meminfo") as f:
        m = {l.split(":")[0]: int(l.split()[1]) for l in f}
    return m["SwapTotal"] - m["SwapFree"]
chunks = []     # 8 MiB each, private anonymous memory, a stamp in every page
while swap_used() < want and len(chunks) * 8192 < most:
    m = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = len(chunks) * 2048
    for i in range(2048):
        m[i * 4096:i * 4096 + 16] = (base + i + 1).to_bytes(16, "little")
    chunks.append(m)
for r in range(1):
    for c, m in enumerate(chunks):
        for i in range(2048):
            if m[i * 4096:i * 4096 + 16] != (c * 2048 + i + 1).to_bytes(16, "little"):
                sys.exit(f"page {i} of chunk {c} lost its data")
print(len(chunks) * 8, swap_used() // 1024)
"""


def _meminfo():
    with open("/proc/meminfo") as f:
        return {l.split(":")[0]: int(l.split()[1]) for l in f}


def _sysctl(path, value):
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write(str(value))
    return old


def test_map_cache_swap_under_memory_pressure(ram, ram2):
    """Issue 40, item 11: swap on dm-remap (map_cache 1), the machine's
    free memory taken by huge pages, and a memory hog larger than what is
    left: the hog's pages go out to the device and come back intact while
    the worker allocates map pages under the same shortage (GFP_NOIO,
    memalloc_noio_save(), the reserve).  On 256 MiB the map is 64 pages,
    which a cache of 1 MiB holds whole (no cache in effect: the reserve,
    then the page allocator's own loop); the reserve with a cache that
    evicts is the test above's, with every allocation refused, since
    ramdisks cannot give the GiBs a map larger than 1 MiB needs here.
    The hung-task detector, at 30 s,
    reports any task that waits that long (the autouse kernel-log check
    fails the test on it); on the debug kernel lockdep also flags reclaim
    that could recurse into the device.  The swap then comes off cleanly
    and the device checks clean."""
    # two ramdisks end to end: swap of some 215 MiB, room for the pages
    # swapped back in that keep their slots (the swap cache) while the hog
    # checks them
    a, b = sectors(ram), sectors(ram2)
    # every page of the ramdisks allocated now: brd allocates a page at
    # its first write, with GFP_NOIO, which under this shortage waits for
    # ever (no OOM kill without __GFP_FS) where a disk would not; and no
    # discard passed down to free one again
    for dev, n in ((ram, a), (ram2, b)):
        run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", f"count={n // 2048}",
             "oflag=direct", "status=none"])
    dm_create_table("cat", [f"0 {a} linear {ram} 0", f"{a} {b} linear {ram2} 0"])
    s = Stack(dm_path("cat"))
    s.crash_free_remove()
    s.create("3 map_cache 1 no_discard_passdown")
    run(["mkswap", s.top])
    hung = "/proc/sys/kernel/hung_task_timeout_secs"
    old_hung = _sysctl(hung, 30) if os.path.exists(hung) else None
    huge = "/proc/sys/vm/nr_hugepages"
    run(["swapon", "-p", "32767", s.top])
    try:
        run(["sync"])
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        # free memory down to 128 MiB over four times the kernel's
        # reserve (min_free_kbytes; its watermarks are up to 1.5 times
        # that), taken in 2 MiB pages
        with open("/proc/sys/vm/min_free_kbytes") as f:
            keep = 4 * int(f.read()) + 128 * 1024
        _sysctl(huge, max(0, (_meminfo()["MemFree"] - keep) // 2048))
        left = _meminfo()["MemAvailable"]
        assert left < 512 * 1024, f"huge pages left {left} KiB available: {_meminfo()}"
        # the hog grows until 24 MiB of swap are in use, or to 48 MiB
        # over what was available (its pages swapped back in keep their
        # slots, the swap cache: one check of them all uses more)
        hog = left + 48 * 1024
        before = s.status()
        p = run(["sh", "-c", "echo 1000 > /proc/self/oom_score_adj && exec python3 -c \"$0\" "
                 + f"{24 * 1024} {hog}", HOG], check=False)
        st = s.status()
        used = st["user_blocks"] - before["user_blocks"]
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr, _meminfo())
    finally:
        _sysctl(huge, 0)
        run(["swapoff", s.top], check=False)
        if old_hung is not None:
            _sysctl(hung, old_hung)
    # the hog's pages went out through the device
    assert used * 4 >= 16 * 1024 and st["mode"] == "write", (used, st)
    report_count(f"swap on dm-remap, {left // 1024} MiB left, a hog of "
                 f"{p.stdout.split()[0]} MiB: "
                 f"{used * 4 // 1024} MiB swapped out through the device, "
                 f"{st['map_pages_peak']} map pages at most")
    _removed_checks_clean(s)


GC_PREFETCH = "/sys/module/dm_remap/parameters/gc_prefetch"


def _gc_victim_with_a_dead_tail(dev, fast, damage=False):
    """A segment whose valid blocks are its first 8, and whose 247 dead
    blocks each have their map page out of the cache, collected by the
    gc_collect message with the module parameter gc_prefetch @fast: the
    status before and after.  @damage: the map block of the victim's
    sixth block is damaged in both slots first (not the first two's:
    pages 0 and 1 are what udev's probes read back, blkid looking for
    LUKS2's second header up to 4 MiB in).  udev runs nothing from the
    writes' settle to the GC (udev_paused())."""
    s = Stack(dev)
    nb = s.n // 8
    seg = int(s.info["segment_blocks"])
    s.crash_free_remove()
    s.create("4 map_cache 1 checkpoint_interval 86400")
    lbas = _one_per_page(nb, 0)[:600]
    # the first segment: a block of each of pages 0 to 254 (fewer if a
    # checkpoint forced by the cache cut a unit short); pages to 599 after
    # through one descriptor each: one udev probe after the close, settled
    _write_each(s.top, lbas, 1)
    victim = lbas[:seg - 1]
    _write_each(s.top, victim[8:], 2)
    model = dict.fromkeys(victim[:8], 1)          # the victim's: what GC touches
    model.update(dict.fromkeys(victim[8:], 2))
    # from here to the GC, no udev probe reads a page back (a probe that
    # came late read pages 0 and 1 in again after the reads below made
    # them leave, and GC found the damaged page in memory: make check,
    # two VMs at once)
    with udev_paused():
        before, after, p = _dead_tail_collect(s, lbas, victim, seg, fast, damage)
    return s, model, before, after, p


def _dead_tail_collect(s, lbas, victim, seg, fast, damage):
    # every page clean, and 345 other pages read: the cache (256 pages)
    # lets the victim's pages go
    run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])
    for lba in lbas[seg:]:
        assert _pread(s.top, lba) == block(lba, 1), lba
    if damage:
        run(["dmsetup", "message", "dmrt-top", "0", "checkpoint"])   # both slots
        info = dump(s.under)
        lay = ckpt_layout(int(info["logical_blocks"]), int(info["nr_segments"]))
        for slot in (0, 1):
            blk = (int(info["ckpt_offset"]) + slot * int(info["ckpt_slot_blocks"]) +
                   lay["map_offset"] + victim[5] // PAGE_BLOCKS)
            raw = bytearray(read_blocks_direct(s.under, blk))
            raw[8] ^= 0x01
            write_blocks_direct(s.under, blk, bytes(raw))
    with open(GC_PREFETCH, "w") as f:
        f.write("Y" if fast else "N")
    try:
        before = s.status()
        p = run(["dmsetup", "message", "dmrt-top", "0", "gc_collect"], check=False)
        after = s.status()
    finally:
        with open(GC_PREFETCH, "w") as f:
            f.write("Y")
    return before, after, p


@pytest.mark.parametrize("fast", [True, False], ids=["ahead", "one-by-one"])
def test_map_cache_gc_reads_pages_ahead_and_stops_at_the_last_valid(loop4g, fast):
    """Issue 41: GC read the map page of each block of its victim, dead
    ones included, one synchronous read at a time.  A victim whose 8
    valid blocks come first and whose 247 dead blocks' pages are all out:
    with gc_prefetch (the default) GC reads ahead one batch of 32 pages
    (more than the 8 its tests then need: the read-ahead, not the tests,
    read them) and stops at the 8th valid block (live == the segment's
    count); with gc_prefetch=N it reads a page back for each block, as
    before.  The same 8 blocks move either way, and every block of the
    victim reads back."""
    s, model, before, after, p = _gc_victim_with_a_dead_tail(loop4g, fast)
    assert p.returncode == 0, p.stderr
    moved = after["gc_moved"] - before["gc_moved"]
    misses = after["map_misses"] - before["map_misses"]
    print(f"gc_prefetch={'Y' if fast else 'N'}: {moved} moved, {misses} map pages read back")
    assert after["mode"] == "write" and after["gc_unverified"] == 0, after
    assert moved == 8, (before, after)
    if fast:
        assert 24 <= misses <= 40, (misses, before, after)
    else:
        assert misses >= 200, (misses, before, after)
    _check_all(s.top, model, "after GC")
    _removed_checks_clean(s)


def test_map_cache_gc_read_ahead_page_damaged(loop4g):
    """A page the read-ahead reads that fails its checksum is not put in
    the map: the test of its block reads it again, fails, and the target
    goes to failed mode with nothing moved (a page taken as read would
    move blocks by a damaged map)."""
    s, _, before, after, p = _gc_victim_with_a_dead_tail(loop4g, True, damage=True)
    assert p.returncode != 0, p
    assert after["mode"] == "failed" and after["first_error"] == -errno.EIO, after
    assert after["gc_moved"] == before["gc_moved"], (before, after)
    s.crash_free_remove()
