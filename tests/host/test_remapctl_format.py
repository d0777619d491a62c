# SPDX-License-Identifier: GPL-2.0-only
"""remapctl format and dump on image files: the initial checkpoint, dump's
checkpoint lines, formatting large sparse images without writing the map,
and the refusal of a device whose map would not fit this machine's memory.

The machine's memory is faked with DMR_MEMINFO, remapctl's test hook: a
file read instead of /proc/meminfo.
"""
import math
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

# DMR_TEST_REMAPCTL: another build to run these tests against (a test
# hook, to show a test fails on an older remapctl); unset: the tree's own
REMAPCTL = os.environ.get("DMR_TEST_REMAPCTL") or \
    str(Path(__file__).resolve().parents[2] / "tools" / "remapctl")
BLOCK = 4096
# struct dmr_disk_segment (format 5; 16 bytes before)
SEGTAB_ENTRY = 32
NR_HEADS = 4          # DMR_NR_HEADS (dm-remap/dmr-format.h)
GiB = 1 << 30

# dump's lines before this change, in order; tests elsewhere parse them
OLD_KEYS = ["superblock_copy0", "superblock_copy1", "using_copy", "version",
            "generation", "uuid", "label", "ctime", "device_blocks",
            "segment_blocks", "nr_segments", "data_offset", "ckpt_offset",
            "ckpt_slot_blocks", "overprovision", "stripe_blocks",
            "logical_blocks", "logical_sectors"]


def rc(*args, meminfo=None):
    env = dict(os.environ)
    env.pop("DMR_MEMINFO", None)
    if meminfo is not None:
        env["DMR_MEMINFO"] = str(meminfo)
    return subprocess.run([REMAPCTL, *args], capture_output=True, text=True,
                          env=env, timeout=120)


def kv(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def dump(path):
    p = rc("dump", path)
    assert p.returncode == 0, p.stderr
    return kv(p.stdout)


def fake_meminfo(tmp_path, mem_kb, vmalloc_kb=None):
    p = tmp_path / "meminfo"
    text = f"MemTotal:       {mem_kb} kB\nMemFree:         1234 kB\n"
    if vmalloc_kb is not None:
        text += f"VmallocTotal:   {vmalloc_kb} kB\n"
    p.write_text(text)
    return p


def sparse(tmp_path, size, name="dev.img"):
    p = tmp_path / name
    with open(p, "wb") as f:
        try:
            f.truncate(size)
        except OSError as e:
            pytest.skip(f"cannot make a {size} byte sparse file here: {e}")
    return str(p)


@pytest.fixture
def img(tmp_path):
    return sparse(tmp_path, 64 << 20)


def crc32c(data, crc=0xFFFFFFFF):
    """CRC32C as the kernel's crc32c(): the caller seeds, no final xor."""
    tab = crc32c.table
    for b in data:
        crc = tab[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


crc32c.table = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    crc32c.table.append(_c)


def entries_per_block(d):
    """Map entries a map block holds: 1024, or 512 with 64-bit block
    numbers (feature wide, 2)."""
    return 512 if int(d.get("feature_incompat", "0")) & 2 else 1024


def layout(d):
    """dmr_ckpt_layout(): block offsets within a checkpoint slot."""
    map_blocks = math.ceil(int(d["logical_blocks"]) / entries_per_block(d))
    crc_blocks = math.ceil(map_blocks * 4 / BLOCK)
    segtab_blocks = math.ceil(int(d["nr_segments"]) * SEGTAB_ENTRY / BLOCK)
    return dict(crc_offset=1, crc_blocks=crc_blocks,
                map_offset=1 + crc_blocks, map_blocks=map_blocks,
                segtab_offset=1 + crc_blocks + map_blocks,
                segtab_blocks=segtab_blocks)


def memory_bytes(d, cache_mib=0):
    """dmr_map_memory_bytes(), from dump's geometry, with a map_cache of
    cache_mib MiB (0: none)."""
    logical, segs = int(d["logical_blocks"]), int(d["nr_segments"])
    # the map's pages (4 KiB per 1024 logical blocks, all of them: the
    # most the target holds) and their pointers (8), segment table
    # (64-byte struct dmr_seg, with its birth, list links, and a large
    # segment's base and checksum), reader
    # counts (4) and the load's valid counts (4), the segment lists' heads (4 per valid count, 3
    # prefree lists, the free list), map block bookkeeping, eight segment
    # buffers (four log heads, three in flight, GC's), the bounce buffer
    sb = int(d["segment_blocks"])
    pages = math.ceil(logical / entries_per_block(d))
    # with a cache smaller than the map: 256 pages per MiB, and the larger
    # of half of that and two (a discard's piece, in the writer or in
    # replay) or a segment's blocks (a GC collection): the most it holds
    # at once; and per map block the CLOCK's ring entry (4), state and
    # used byte; without one, the write heat (2 bits per logical block)
    held, clock, heat = pages, 0, math.ceil(logical / 4)
    if 0 < cache_mib * 256 < pages:
        cap = cache_mib * 256
        held, clock, heat = cap + max(cap // 2 + 2, sb), pages * 6, 0
    # and a checkpoint table block's hash (8) per block of each slot's CRC
    # table (4 bytes per map page) and segment table (32 per segment)
    tables = math.ceil(pages * 4 / BLOCK) + math.ceil(segs * SEGTAB_ENTRY / BLOCK)
    return (held * BLOCK + pages * 8 + clock + segs * (64 + 4 + 4) + (sb + 5) * 4 +
            pages * 5 + 8 * sb * BLOCK + 64 * BLOCK + 2 * 8 * tables + heat)


def fmt_bytes(b):
    """remapctl's fmt_bytes()."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, u = float(b), 0
    while v >= 1024 and u < 5:
        v /= 1024
        u += 1
    return f"{v:.1f} {units[u]}"


def read_blocks(path, blocknr, nr):
    with open(path, "rb") as f:
        f.seek(blocknr * BLOCK)
        return f.read(nr * BLOCK)


# ---------------------------------------------------------------------------
# dump: checkpoint lines


def test_dump_checkpoint_lines(img):
    assert rc("format", img).returncode == 0
    p = rc("dump", img)
    assert p.returncode == 0, p.stderr
    keys = [line.split("=", 1)[0] for line in p.stdout.splitlines()]
    assert keys[:len(OLD_KEYS)] == OLD_KEYS      # old lines first, unchanged
    d = kv(p.stdout)
    base = int(d["ckpt_offset"])
    assert d["ckpt0"] == "ok"
    assert d["ckpt0_seq"] == "1" and d["ckpt0_clean"] == "1" and d["ckpt0_twin"] == "0"
    assert d["ckpt0_log_seq"] == "0"
    for h in range(NR_HEADS):   # head h starts at block 0 of segment h
        assert d[f"ckpt0_head{h}_segment"] == str(h)
        assert d[f"ckpt0_head{h}_offset"] == "0"
        assert d[f"ckpt0_head{h}_next"] == "-1"
    assert d["ckpt0_user_blocks"] == d["ckpt0_log_blocks"] == "0"
    assert d["ckpt0_gc_moved"] == "0"
    # a fresh device: no temperature estimate yet, no recovery jump
    assert d["ckpt0_temp_threshold"] == "0" and d["ckpt0_age_jumps"] == "0"
    assert d["ckpt0_header_block"] == str(base)
    assert d["ckpt0_map_block"] == str(base + layout(d)["map_offset"])
    # slot 1 was only cleared by format
    assert "bad magic" in d["ckpt1"]
    assert not any(k.startswith("ckpt1_") for k in d)
    assert d["newest_ckpt"] == "0"
    assert keys[len(OLD_KEYS):] == (
        ["ckpt0", "ckpt0_seq", "ckpt0_clean", "ckpt0_twin", "ckpt0_log_seq"]
        + [f"ckpt0_head{h}_{f}" for h in range(NR_HEADS)
           for f in ("segment", "offset", "next")]
        + ["ckpt0_user_blocks", "ckpt0_log_blocks", "ckpt0_gc_moved",
           "ckpt0_temp_threshold", "ckpt0_age_jumps", "ckpt0_header_block", "ckpt0_map_block",
           "ckpt0_logical_blocks", "ckpt0_nr_segments", "ckpt1", "newest_ckpt",
           "feature_incompat", "grow_limit"])
    # what the slot covers: the whole device, which has no grow limit
    assert d["ckpt0_logical_blocks"] == d["logical_blocks"]
    assert d["ckpt0_nr_segments"] == d["nr_segments"]
    assert d["feature_incompat"] == d["grow_limit"] == "0"


def ckpt_header(d, slot, seq, flags, log_seq, log_segment, log_offset):
    """A valid struct dmr_disk_ckpt for @slot (dmr_ckpt_encode()); head 0
    at (log_segment, log_offset), head h > 0 at segment h (head 2 going on
    in segment 9)."""
    uuid = bytes.fromhex(d["uuid"].replace("-", ""))
    blocknr = int(d["ckpt_offset"]) + slot * int(d["ckpt_slot_blocks"])
    body = struct.pack("<IQQQ16s" + "III" * NR_HEADS + "IIQQQQ", flags, seq,
                       log_seq, blocknr, uuid, log_segment, log_offset,
                       0xFFFFFFFF, 1, 0, 0xFFFFFFFF, 2, 0, 9, 3, 0, 0xFFFFFFFF,
                       0, 0, 0, 0, 0, 0)
    body += bytes(BLOCK - 12 - len(body))
    csum = crc32c(body) ^ 0xC4EC9017          # DMR_CKPT_CSUM_SALT
    return b"DMR-CKPT" + struct.pack("<I", csum) + body, blocknr


def test_dump_newest_slot_and_no_segment(img):
    """A valid slot 1 with a higher seq is the newest; -1 for no segment."""
    assert rc("format", img).returncode == 0
    d = dump(img)
    hdr, blocknr = ckpt_header(d, 1, seq=7, flags=0, log_seq=41,
                               log_segment=0xFFFFFFFF, log_offset=3)
    with open(img, "r+b") as f:
        f.seek(blocknr * BLOCK)
        f.write(hdr)
    d = dump(img)
    assert d["ckpt0"] == "ok" and d["ckpt1"] == "ok"
    assert d["ckpt1_seq"] == "7" and d["ckpt1_clean"] == "0"
    assert d["ckpt1_log_seq"] == "41"
    assert d["ckpt1_head0_segment"] == "-1" and d["ckpt1_head0_offset"] == "3"
    assert d["ckpt1_head2_segment"] == "2" and d["ckpt1_head2_next"] == "9"
    assert d["ckpt1_header_block"] == str(blocknr)
    assert d["ckpt1_map_block"] == str(blocknr + layout(d)["map_offset"])
    assert d["newest_ckpt"] == "1"


def test_dump_damaged_and_unreadable_slots(img):
    assert rc("format", img).returncode == 0
    d = dump(img)
    base = int(d["ckpt_offset"])
    with open(img, "r+b") as f:                 # flip a bit of slot 0's seq
        f.seek(base * BLOCK + 16)
        b = f.read(1)
        f.seek(base * BLOCK + 16)
        f.write(bytes([b[0] ^ 1]))
    d = dump(img)
    assert d["ckpt0"] == "torn or corrupted summary"   # dmr_log_strerror()
    assert "ckpt0_seq" not in d and d["newest_ckpt"] == "-1"
    # cut the image after slot 0's header: slot 1's header cannot be read
    os.truncate(img, (base + 1) * BLOCK)
    d = dump(img)
    assert d["ckpt1"] == "read error" and d["newest_ckpt"] == "-1"


# ---------------------------------------------------------------------------
# format: the initial checkpoint, zeroed without writing the map


def test_initial_checkpoint_on_dirty_image(img):
    """Over old contents, the map and segment table read back as zeroes and
    every checksum the module checks at load matches."""
    with open(img, "r+b") as f:
        f.write(b"\xa5" * (64 << 20))
    assert rc("format", img).returncode == 0
    d = dump(img)
    l = layout(d)
    base = int(d["ckpt_offset"])
    hdr = read_blocks(img, base, 1)
    crc_csum, segtab_csum = struct.unpack_from("<II", hdr, 56 + 12 * NR_HEADS)
    crcs = read_blocks(img, base + l["crc_offset"], l["crc_blocks"])
    mp = read_blocks(img, base + l["map_offset"], l["map_blocks"])
    segtab = read_blocks(img, base + l["segtab_offset"], l["segtab_blocks"])
    assert mp == bytes(len(mp)) and segtab == bytes(len(segtab))
    zero_crc = crc32c(bytes(BLOCK))
    entries = struct.unpack(f"<{len(crcs) // 4}I", crcs)
    assert entries[:l["map_blocks"]] == (zero_crc,) * l["map_blocks"]
    assert not any(entries[l["map_blocks"]:])
    assert crc_csum == crc32c(crcs)
    assert segtab_csum == crc32c(segtab)
    # the log's first block holds no stale unit
    assert read_blocks(img, int(d["data_offset"]), 1) == bytes(BLOCK)


@pytest.mark.parametrize("size", [64 * GiB, 2400 * GiB],
                         ids=["64GiB", "2400GiB"])
def test_large_sparse_image_formats_without_writing_the_map(tmp_path, size):
    """The map (about 1/1024 of the device) is punched, not written: the
    image stays sparse.  At 2400 GiB the map is above 2 GiB (INT_MAX)."""
    img = sparse(tmp_path, size)
    mi = fake_meminfo(tmp_path, 256 << 20, 32 << 30)   # 256 GiB machine
    p = rc("format", img, meminfo=mi)
    assert p.returncode == 0, p.stderr
    d = dump(img)
    l = layout(d)
    assert d["ckpt0"] == "ok" and d["newest_ckpt"] == "0"
    map_bytes = l["map_blocks"] * BLOCK
    allocated = os.stat(img).st_blocks * 512
    # headers, superblocks, the CRC table and the log's first block only
    assert allocated <= (l["crc_blocks"] + 64) * BLOCK, (allocated, map_bytes)
    assert allocated < map_bytes // 100
    if size > 2000 * GiB:
        assert int(d["logical_blocks"]) > 1 << 29
    base = int(d["ckpt_offset"])
    first = read_blocks(img, base + l["map_offset"], 1)
    last = read_blocks(img, base + l["map_offset"] + l["map_blocks"] - 1, 1)
    assert first == bytes(BLOCK) and last == bytes(BLOCK)
    assert f"kernel memory when loaded: {fmt_bytes(memory_bytes(d))}\n" in p.stdout


# ---------------------------------------------------------------------------
# format: memory check


def test_refuses_map_larger_than_ram_unless_forced(tmp_path):
    img = sparse(tmp_path, 2400 * GiB)
    mi = fake_meminfo(tmp_path, 1 << 20, 32 << 30)     # 1 GiB of RAM
    p = rc("format", img, meminfo=mi)
    assert p.returncode == 1, p.stdout
    assert p.stdout == ""
    assert p.stderr.startswith(f"remapctl: {img}: the map of this device needs 2.4 GiB "
                               "of kernel memory, more than 512.0 MiB, half of this "
                               "machine's 1.0 GiB of RAM")
    assert "--force" in p.stderr
    # refused before anything was written
    assert os.stat(img).st_blocks == 0
    assert rc("dump", img).returncode == 1

    p = rc("format", "--force", img, meminfo=mi)
    assert p.returncode == 0, p.stderr
    assert "warning" in p.stderr and "2.4 GiB" in p.stderr
    d = dump(img)
    assert d["ckpt0"] == "ok"
    assert fmt_bytes(memory_bytes(d)) == "2.4 GiB"


def test_map_cache_formats_what_the_whole_map_cannot(tmp_path):
    """--map-cache MIB: the memory is checked and printed for a table with
    that map_cache (the module's check, dmr_map_memory_bytes()), so a
    device whose whole map is larger than the machine's memory formats;
    a cache too large for it is refused, one as large as the map is the
    whole map."""
    img = sparse(tmp_path, 2400 * GiB)
    mi = fake_meminfo(tmp_path, 1 << 20, 32 << 30)     # 1 GiB of RAM
    p = rc("format", img, meminfo=mi)
    assert p.returncode == 1 and "give it a --map-cache" in p.stderr, p.stderr
    # a cache of 1 GiB cannot fit either: nothing written
    p = rc("format", "--map-cache", "1024", img, meminfo=mi)
    assert p.returncode == 1, p.stdout
    assert "give it a smaller --map-cache" in p.stderr, p.stderr
    assert os.stat(img).st_blocks == 0
    p = rc("format", "--map-cache", "64", img, meminfo=mi)
    assert p.returncode == 0, p.stderr
    d = dump(img)
    need = memory_bytes(d, 64)
    assert need < 1 << 30 < memory_bytes(d)
    assert (f"kernel memory when loaded: {fmt_bytes(need)} with map_cache 64 "
            "(create --map-cache 64)\n") in p.stdout, p.stdout
    # the exact boundary, in kB of MemTotal, of which half may be the map's
    other = sparse(tmp_path, 2400 * GiB, "other.img")
    below, above = (need - 1) // 512, -(-need // 512)
    p = rc("format", "--map-cache", "64", other, meminfo=fake_meminfo(tmp_path, below))
    assert p.returncode == 1 and f"needs {fmt_bytes(need)}" in p.stderr, p.stderr
    p = rc("format", "--map-cache", "64", other, meminfo=fake_meminfo(tmp_path, above))
    assert p.returncode == 0, p.stderr
    # a cache as large as the map is no cache
    small = sparse(tmp_path, 64 << 20, "small.img")
    p = rc("format", "--map-cache", "1", small)
    assert p.returncode == 0, p.stderr
    assert (f"kernel memory when loaded: {fmt_bytes(memory_bytes(dump(small)))}\n"
            in p.stdout), p.stdout
    for bad in ("0", "1048577", "x"):
        p = rc("format", "--map-cache", bad, small)
        assert p.returncode == 2 and "invalid --map-cache" in p.stderr, (bad, p.stderr)


def test_refusal_boundary_is_exact(img, tmp_path):
    """Half of MemTotal (kB) just below the need is refused, just above it
    fits."""
    assert rc("format", img).returncode == 0
    need = memory_bytes(dump(img))
    below, above = (need - 1) // 512, -(-need // 512)     # kB
    p = rc("format", "--force", img, meminfo=fake_meminfo(tmp_path, below))
    assert p.returncode == 0 and "half of this machine's" in p.stderr
    other = sparse(tmp_path, 64 << 20, "other.img")
    p = rc("format", other, meminfo=fake_meminfo(tmp_path, below))
    assert p.returncode == 1 and f"needs {fmt_bytes(need)}" in p.stderr
    p = rc("format", other, meminfo=fake_meminfo(tmp_path, above))
    assert p.returncode == 0, p.stderr
    assert "warning" not in p.stderr


def test_memory_is_checked_at_the_grow_limit_against_half_of_ram(tmp_path):
    """--grow-limit: the map is checked at the limit, not at the device's
    size, against half of MemTotal; the refusal gives both numbers, and
    --max-memory allows more (or less)."""
    img = sparse(tmp_path, 128 * GiB)                  # room for 20T's slots
    mi = fake_meminfo(tmp_path, 24 << 20, 32 << 40)     # 24 GiB of RAM
    p = rc("format", "--grow-limit", "20T", img, meminfo=mi)
    assert p.returncode == 1, (p.stdout, p.stderr)
    m = re.search(r"the map of this device at its grow limit needs ([\d.]+ GiB) of kernel "
                  r"memory, more than 12\.0 GiB, half of this machine's 24\.0 GiB of RAM "
                  r"\(--max-memory allows more\)", p.stderr)
    assert m and float(m.group(1).split()[0]) > 24, p.stderr
    assert rc("dump", img).returncode == 1                # nothing written
    p = rc("format", "--grow-limit", "20T", "--max-memory", "64G", img, meminfo=mi)
    assert p.returncode == 0, p.stderr
    assert f"kernel memory {m.group(1)}" in p.stdout, p.stdout
    # half, not all: a map of 60% of RAM is refused; --max-memory lowers it too
    sized = sparse(tmp_path, 64 << 20, "sized.img")
    assert rc("format", sized).returncode == 0
    need = memory_bytes(dump(sized))                    # other's map, in bytes
    other = sparse(tmp_path, 64 << 20, "other.img")
    p = rc("format", other, meminfo=fake_meminfo(tmp_path, need * 10 // 6 // 1024))
    assert p.returncode == 1 and "half of this machine's" in p.stderr, p.stderr
    p = rc("format", "--max-memory", str(need - 1), other, meminfo=mi)
    assert p.returncode == 1 and "--max-memory allows" in p.stderr, p.stderr
    p = rc("format", "--max-memory", "lots", other)
    assert p.returncode == 2 and "invalid --max-memory" in p.stderr


def test_refuses_map_larger_than_vmalloc(img, tmp_path):
    p = rc("format", img, meminfo=fake_meminfo(tmp_path, 16 << 20, 1024))
    assert p.returncode == 1
    assert "more than this kernel's 1.0 MiB of vmalloc space" in p.stderr
    assert rc("dump", img).returncode == 1


def test_vmalloc_unknown_is_not_checked(img, tmp_path):
    p = rc("format", img, meminfo=fake_meminfo(tmp_path, 16 << 20))
    assert p.returncode == 0 and p.stderr == ""


def test_unreadable_meminfo_skips_the_check(img, tmp_path):
    p = rc("format", img, meminfo=tmp_path / "no-such-meminfo")
    assert p.returncode == 0
    assert "warning: cannot read MemTotal" in p.stderr
    assert dump(img)["ckpt0"] == "ok"


def test_real_meminfo_small_image(img):
    """Without the hook, /proc/meminfo is read and a small map fits."""
    p = rc("format", img)
    assert p.returncode == 0 and p.stderr == ""
    assert f"kernel memory when loaded: {fmt_bytes(memory_bytes(dump(img)))}\n" in p.stdout


def desnoyers(a):
    """Greedy GC under uniform random writes (Desnoyers, SYSTOR 2012),
    computed here independently of tools/lib/waf.c."""
    lo, hi = 0.0, 1 - 1e-12          # x = exp(-a (1 - x)) has one root in (0, 1)
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid - math.exp(-a * (1 - mid)) < 0:
            lo = mid
        else:
            hi = mid
    return 1 / (1 - lo)


@pytest.mark.parametrize("op", [5, 10, 28])
def test_format_predicts_write_amplification(tmp_path, op):
    """Issue 25: format says what the spare means, the predicted
    steady-state WAF for uniform random writes, and that TRIM raises the
    effective spare (20% and 50% of the logical space trimmed)."""
    path = sparse(tmp_path, 256 << 20)
    p = rc("format", str(path), "--overprovision", str(op))
    assert p.returncode == 0, p.stderr
    text = " ".join(p.stdout.split())
    m = re.search(
        r"predicted write amplification, uniform random writes: ([\d.]+) when every "
        r"logical block holds data; blocks the file system discards \(mount -o discard, "
        r"fstrim\) add to the spare: ([\d.]+) with 20% trimmed, ([\d.]+) with 50%", text)
    assert m, p.stdout
    full, t20, t50 = map(float, m.groups())
    live = (100 - op) / 100
    assert full == pytest.approx(desnoyers(1 / live), abs=0.006)
    assert t20 == pytest.approx(desnoyers(1 / (live * 0.8)), abs=0.006)
    assert t50 == pytest.approx(desnoyers(1 / (live * 0.5)), abs=0.006)
    assert full > t20 > t50 > 1


def test_wide_sets_the_feature_and_its_layout(tmp_path):
    """--wide (format 4's 64-bit block numbers) is the superblock's
    incompatible feature bit 2, with --grow-limit's bit 1 beside it; the
    map's entries take 8 bytes, so the checkpoint slots hold twice the
    map blocks; the fresh device checks clean."""
    plain, wide, both = (sparse(tmp_path, 1 << 30, n) for n in ("p.img", "w.img", "b.img"))
    assert rc("format", plain).returncode == 0
    p = rc("format", "--wide", wide)
    assert p.returncode == 0, p.stderr
    assert "past 16 TiB" not in p.stdout            # asked for, not needed
    assert rc("format", "--wide", "--grow-limit", "2G", both).returncode == 0
    dp, dw, db = dump(plain), dump(wide), dump(both)
    assert (dp["feature_incompat"], dw["feature_incompat"], db["feature_incompat"]) == \
        ("0", "2", "3")
    assert layout(dw)["map_blocks"] == -(-int(dw["logical_blocks"]) // 512)
    assert layout(dp)["map_blocks"] == -(-int(dp["logical_blocks"]) // 1024)
    assert int(dw["ckpt_slot_blocks"]) > int(dp["ckpt_slot_blocks"])
    c = rc("check", wide)
    assert c.returncode == 0 and "0 errors" in c.stdout, c.stdout
    assert rc("format", "--wide=1", plain).returncode == 2


@pytest.mark.parametrize("opts", [[], ["-s", "256K"], ["-s", "4M"], ["--wide"],
                                  ["--grow-limit", "1G"]])
def test_too_small_names_the_least_size_that_formats(tmp_path, opts):
    """A device too small for its segment size: the message gives the
    least size that formats with the same options, and that size is exact
    (the oracle is format itself: at it, it formats; a block less, not)."""
    small = sparse(tmp_path, 4 << 20, "small.img")
    p = rc("format", *opts, small)
    assert p.returncode == 1 and p.stdout == "", (p.stdout, p.stderr)
    m = re.fullmatch(rf"remapctl: {re.escape(small)}: device too small for this segment "
                     r"size: segments of (\S+ \S+) need a device of at least (\S+ \S+) "
                     r"\((\d+) bytes\), this one has 4194304 bytes\n", p.stderr)
    assert m, p.stderr
    least = int(m.group(3))
    assert m.group(2) == fmt_bytes(least) and least % BLOCK == 0
    at = sparse(tmp_path, least, "at.img")
    p = rc("format", *opts, at)
    assert p.returncode == 0, p.stderr
    assert m.group(1) == fmt_bytes(int(dump(at)["segment_blocks"]) * BLOCK)
    below = sparse(tmp_path, least - BLOCK, "below.img")
    p = rc("format", *opts, below)
    assert p.returncode == 1 and f"at least {m.group(2)} ({least} bytes)" in p.stderr


@pytest.mark.parametrize("size", ["100K", "128K", "252K", "2G", "1028M"])
def test_segment_size_out_of_range_is_bad_usage(img, size):
    """A --segment-size outside 256 KiB to 1 GiB is a bad value: exit 2,
    as EXIT STATUS says, before the device is touched; the bounds pass."""
    p = rc("format", "--segment-size", size, img)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert f"invalid --segment-size '{size}'" in p.stderr and "256K to 1G" in p.stderr
    assert "Try 'remapctl --help'" in p.stderr
    assert rc("format", "--segment-size", "256K", img).returncode == 0
    # 1G segments on a 64 MiB image: too small, a refusal (1), not bad usage
    assert rc("format", "--force", "--segment-size", "1G", img).returncode == 1


def test_map_cache_is_in_the_table_line(img, tmp_path):
    """format --map-cache N prints the table line create --map-cache N
    loads (a stand-in dmsetup records it), map_cache N included."""
    p = rc("format", "--map-cache", "64", img)
    assert p.returncode == 0, p.stderr
    shown = re.search(r"^table: (.*)$", p.stdout, re.M)[1]
    sectors = dump(img)["logical_sectors"]
    assert shown == f"0 {sectors} remap {img} 2 map_cache 64", p.stdout
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "dmsetup.args"
    (bindir / "dmsetup").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    (bindir / "dmsetup").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    c = subprocess.run([REMAPCTL, "create", "--map-cache", "64", "fast", img],
                       capture_output=True, text=True, env=env, timeout=60)
    assert c.returncode == 0, c.stderr
    assert log.read_text().splitlines() == ["create", "fast", "--table", shown]
    # without it, the plain line
    other = sparse(tmp_path, 64 << 20, "other.img")
    p = rc("format", other)
    assert f"table: 0 {dump(other)['logical_sectors']} remap {other}\n" in p.stdout


def slots_line(d):
    """format's line on the checkpoint slots of a 64-bit device, from dump."""
    slots = 2 * int(d["ckpt_slot_blocks"])
    dev, limit = int(d["device_blocks"]), int(d["grow_limit"])
    if limit:
        return (f"checkpoint slots: {fmt_bytes(slots * BLOCK)}, "
                f"{100 * slots / limit:.1f}% of the grow limit's {fmt_bytes(limit * BLOCK)} "
                f"({100 * slots / dev:.1f}% of the device now)\n")
    return f"checkpoint slots: {fmt_bytes(slots * BLOCK)}, {100 * slots / dev:.1f}% of the device\n"


def test_wide_says_what_the_checkpoint_slots_take(tmp_path):
    """--wide: format prints the checkpoint slots' space, about 0.4% of the
    device (8-byte map entries, two slots), and no "past 16 TiB" (asked
    for); a narrow device gets no such line."""
    wide, plain = sparse(tmp_path, 1 << 30, "w.img"), sparse(tmp_path, 1 << 30, "p.img")
    p = rc("format", "--wide", wide)
    assert p.returncode == 0, p.stderr
    line = slots_line(dump(wide))
    assert line in p.stdout and "0.4% of the device" in line, p.stdout
    assert "past 16 TiB" not in p.stdout
    p = rc("format", plain)
    assert p.returncode == 0 and "checkpoint slots" not in p.stdout, p.stdout


def test_past_16_tib_gets_64_bit_block_numbers(tmp_path):
    """A device, or a grow limit, whose data area holds 2^32 blocks or
    more is formatted with 64-bit block numbers without --wide, and says
    so; the slots are sized for 8-byte entries of the limit (0.4% of it),
    and the device checks clean."""
    img = sparse(tmp_path, 200 * GiB)
    mi = fake_meminfo(tmp_path, 256 << 20, 32 << 30)   # 256 GiB machine
    p = rc("format", "--grow-limit", "32T", img, meminfo=mi)
    assert p.returncode == 0, p.stderr
    assert f"{img}: past 16 TiB: 64-bit block numbers, for its grow limit (as --wide" \
        in p.stdout, p.stdout
    d = dump(img)
    assert d["feature_incompat"] == "3"
    # the slots, sized for the limit: 0.4% of it, and of this device now
    line = slots_line(d)
    assert line in p.stdout and "0.4% of the grow limit's 32.0 TiB" in line, p.stdout
    slot = int(d["ckpt_slot_blocks"])
    assert (32 << 40) // BLOCK * 8 // BLOCK < slot < (32 << 40) // BLOCK * 9 // BLOCK
    c = rc("check", img)
    assert c.returncode == 0 and "0 errors" in c.stdout, c.stdout
