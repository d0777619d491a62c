"""A map larger than the machine's memory (issue 26, "a map that pages"):
with the table option map_cache the load counts each map page as it
comes in and lets it go, so the constructor's memory check, and
remapctl format's with --map-cache, are of the cache, not of the whole
map.  Without the option such a device is refused before anything is
allocated.

The device is a sparse loop file of about 1.3 times the guest's RAM in
map (8 TiB in a 6 GiB guest).  Guest RAM cannot hold the checkpoint
slots' map areas as written blocks (the first checkpoint after a load
writes every map block, as zeroes), so, as in test_review's 2 TiB test,
dm-zero stands in for the all-zero stretches of each slot's map; the map
blocks that cover the blocks this test writes are real.
"""
import pytest

from conftest import (BLOCK, DM_PREFIX, Kmsg, ckpt_layout, cleanup_dm, dm_create,
                      dm_create_table, dm_path, geometry, loop_dev,
                      mem_total_bytes, remapctl, report_count, run, sectors,
                      zero_map_table)
from test_log import Stack, _pread, _pwrite, block

PAGE_BLOCKS = 1024          # logical blocks per map page
CACHE_PAGES = 256           # map_cache 1 (MiB)
SEG_BLOCKS = 4096           # 16 MiB segments: a small segment table
PAGES = 400                 # map pages written at the start: > CACHE_PAGES


def _whole_map_bytes(geo):
    """dmr_map_memory_bytes(geo, 0)'s map part: a page and its pointer,
    dirty byte and CRC per 1024 logical blocks (the rest is small)."""
    return -(-geo["logical_blocks"] // PAGE_BLOCKS) * (BLOCK + 8 + 1 + 4)


@pytest.fixture
def huge_loop():
    mem = mem_total_bytes()
    if not mem or mem > 12 << 30:
        pytest.skip(f"needs a guest with at most 12 GiB of RAM (has {mem >> 20} MiB)")
    # logical blocks whose map alone is 1.3 times the RAM; 10% spare
    want = int(mem * 1.3) // (BLOCK + 13) * PAGE_BLOCKS
    dev_bytes = (want * 100 // 90 // SEG_BLOCKS + 64) * SEG_BLOCKS * BLOCK
    assert dev_bytes < (1 << 44), dev_bytes       # below the format's 16 TiB
    yield from loop_dev("huge", dev_bytes)


def test_map_cache_map_larger_than_memory(huge_loop):
    mem = mem_total_bytes()
    dev_blocks = sectors(huge_loop) // 8
    geo = geometry(dev_blocks, SEG_BLOCKS)
    L = geo["logical_blocks"]
    assert _whole_map_bytes(geo) > mem, (geo, mem)
    lay = ckpt_layout(L, geo["nr_segments"])
    lbas = [p * PAGE_BLOCKS + (p * 389) % PAGE_BLOCKS for p in range(PAGES)]
    lbas += [L // 2 + 7, L - 1]
    real = [(0, PAGES), ((L // 2) // PAGE_BLOCKS, 1), ((L - 1) // PAGE_BLOCKS, 1)]
    lines = zero_map_table(huge_loop, dev_blocks, geo, lay, real)
    dm_create_table("huge", lines)
    huge = dm_path("huge")

    # format: refused for the whole map, done for a cache of 1 MiB
    p = remapctl("format", "--segment-size", "16M", huge, check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "give it a --map-cache" in p.stderr, p.stderr
    p = remapctl("format", "--segment-size", "16M", "--map-cache", "1", huge)
    line = [x for x in p.stdout.splitlines() if x.startswith("kernel memory when loaded")]
    assert line and "with map_cache 1" in line[0], p.stdout

    # (formatted again through dm-flakey: --force over the signature)
    whole = Kmsg()
    s = _CacheStack(huge, ["--force", "--segment-size", "16M", "--map-cache", "1"])
    st = s.status()
    assert st["logical_blocks"] == L, (st, geo)
    mem0 = st["map_memory"]
    assert mem0 < mem // 4, (mem0, mem)

    # the same device without the option: refused before allocating
    s.crash_free_remove()
    log = Kmsg()
    r = dm_create("top", f"0 {s.n} remap {s.under}", check=False)
    assert r.returncode != 0
    assert "remap: Map needs more memory than this machine has (-ENOMEM)" in log.text(), \
        log.text()
    s.create()

    def write(gen, which, sync=False):
        for lba in which:
            _pwrite(s.top, lba, block(lba, gen), sync=sync)

    def check(model, when):
        bad = [lba for lba, gen in model.items() if _pread(s.top, lba) != block(lba, gen)]
        assert not bad, f"{when}: {len(bad)} blocks wrong, first {bad[:5]}"
        assert _pread(s.top, PAGES * PAGE_BLOCKS + 5) == bytes(BLOCK), when

    def within_cache(when):
        st = s.status()
        assert 0 <= st["map_memory"] - mem0 <= CACHE_PAGES * BLOCK, (when, mem0, st)
        return st

    st0 = s.status()
    write(1, lbas)
    model = dict.fromkeys(lbas, 1)
    st = within_cache("written")
    assert st["map_evictions"] >= PAGES - CACHE_PAGES, st
    # issue 41's "Also": a checkpoint writes the table blocks that changed
    # since it last wrote that slot, not the whole CRC and segment tables
    # (16 MiB a slot here).  What each slot holds is known from the load
    # (its tables' hashes as read; the other slot's too, a twin's), so
    # every checkpoint writes a few blocks: the CRC table's block of the
    # map block it wrote, the segment table's of the segments written (64
    # is generous).  With ckpt_incremental=N, side by side, each writes
    # both whole, as before
    tables = lay["crc_blocks"] + lay["segtab_blocks"]
    param = "/sys/module/dm_remap/parameters/ckpt_incremental"
    wrote = {}
    try:
        for mode in ("N", "Y"):
            with open(param, "w") as f:
                f.write(mode)
            a = s.status()
            for i in range(5):
                write(1, lbas[i * 50:i * 50 + 2])
                run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"])
            b = s.status()
            assert b["checkpoint_seq"] - a["checkpoint_seq"] == 5, (a, b)
            wrote[mode] = b["ckpt_table_blocks"] - a["ckpt_table_blocks"]
    finally:
        with open(param, "w") as f:
            f.write("Y")
    report_count(f"5 checkpoints after {PAGES} pages written with map_cache 1: "
                 f"{wrote['N']} table blocks written with ckpt_incremental=N, "
                 f"{wrote['Y']} with Y, of {tables} a slot")
    assert wrote["N"] == 5 * tables, (tables, wrote)
    assert wrote["Y"] <= 5 * 64, (tables, wrote)
    # and the forced checkpoint of the writes above, after the load
    first = st["ckpt_table_blocks"] - st0["ckpt_table_blocks"]
    assert st["checkpoint_seq"] > st0["checkpoint_seq"] and first <= 64, (first, st0, st)
    check(model, "written")
    st = within_cache("read back")
    assert st["map_misses"] >= PAGES - 2 * CACHE_PAGES, st

    # a clean reload loads a page at a time: within the cache after it
    s.crash_free_remove()
    s.create()
    st = within_cache("after a clean reload")
    assert st["replayed_units"] == 0, st
    check(model, "after a clean reload")

    # a power cut: replay reads back the pages its units touch
    again = lbas[::3]
    write(2, again[:-1])
    write(2, again[-1:], sync=True)
    model.update(dict.fromkeys(again, 2))
    s.crash()
    s.create()
    st = within_cache("after recovery")
    assert st["replayed_units"] >= 1, st
    check(model, "after a power cut")

    # slots that differ, at a power cut, in a table block the writes after
    # their last checkpoint do not touch (the CRC table's last block: the
    # page of the last logical block): the load trusts nothing of the other
    # slot, its recovery checkpoint writes every table block there, and
    # the load of that checkpoint after a second power cut finds it whole
    write(3, [L - 1], sync=True)
    model[L - 1] = 3
    run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"])
    write(3, lbas[:2], sync=True)
    model.update(dict.fromkeys(lbas[:2], 3))
    s.crash()
    s.create()
    s.crash()
    s.create()
    check(model, "after two power cuts")
    report_count(f"map of {_whole_map_bytes(geo) >> 20} MiB in a guest of {mem >> 20} MiB: "
                 f"loaded in {mem0 >> 20} MiB (map_cache 1), "
                 f"{st['map_evictions']} pages evicted since the recovery load")
    s.crash_free_remove()
    # every load used the newest slot: none failed its checksums (a table
    # block a checkpoint skipped that had changed would fail it, and the
    # load fall back to the older slot)
    assert "is damaged" not in whole.text(), whole.text()
    cleanup_dm()


class _CacheStack(Stack):
    """Stack whose every create has map_cache 1 (and no timed checkpoint,
    so that the power cut always leaves units to replay)."""

    def create(self, opts="4 map_cache 1 checkpoint_interval 86400"):
        super().create(opts)
