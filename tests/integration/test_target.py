# SPDX-License-Identifier: GPL-2.0-only
"""dm-remap target: create, I/O, status, table, messages, refusals."""
import os

import pytest

from conftest import (BLOCK, SEGTAB_ENTRY, DM_PREFIX, STATUS_FIELDS, MNT, Kmsg, dm_create,
                      dm_path, dm_remove, dm_status, dm_table, dump, read_block,
                      remapctl, resum_sb, run, sectors, status_fields, udev_paused,
                      write_block)
from test_log import _pread, _pwrite, block


def formatted(dev, *args):
    remapctl("format", dev, *args)
    return dump(dev)


def test_target_registered():
    out = run(["dmsetup", "targets"]).stdout
    assert any(line.split()[0] == "remap" for line in out.splitlines())


def test_format_create_mkfs_fsck_remove(ram):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    dm_create("fs", f"0 {n} remap {ram}")
    dev = dm_path("fs")
    assert sectors(dev) == n
    assert run(["blockdev", "--getss", dev]).stdout.strip() == "4096"
    run(["mkfs.ext4", "-q", "-F", dev])
    os.makedirs(MNT, exist_ok=True)
    run(["mount", dev, MNT])
    try:
        for i in range(20):
            with open(f"{MNT}/f{i}", "wb") as f:
                f.write(os.urandom(4096 * (i + 1)))
        run(["sync"])
    finally:
        run(["umount", MNT])
    fsck = run(["e2fsck", "-fn", dev], check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    dm_remove("fs")
    # the filesystem did not overwrite dm-remap's metadata
    assert dump(ram)["superblock_copy0"] == "ok"
    assert dump(ram)["superblock_copy1"] == "ok"


def test_writes_are_appended_to_the_log(ram):
    """A small write of fresh blocks lands at the head of segment 1 (where
    format starts the cold log head), behind a summary."""
    info = formatted(ram)
    n = int(info["logical_sectors"])
    data_off = (int(info["data_offset"]) + int(info["segment_blocks"])) * BLOCK
    dm_create("lg", f"0 {n} remap {ram}")
    pattern = os.urandom(BLOCK * 4)
    fd = os.open(dm_path("lg"), os.O_WRONLY)
    try:
        os.pwrite(fd, pattern, 1000 * BLOCK)     # logical blocks 1000..1003
        os.fsync(fd)                              # flush: seals the unit
    finally:
        os.close(fd)
    st = status_fields("lg")
    assert st["device_blocks"] == 5 and st["short_units"] == 1
    with open(ram, "rb") as f:
        f.seek(data_off)
        unit = f.read(5 * BLOCK)
    assert unit[:8] == b"DMR-LOGU"
    assert unit[BLOCK:] == pattern
    # the summary lists the logical blocks in order
    words = [int.from_bytes(unit[64 + 4 * i:68 + 4 * i], "little") for i in range(4)]
    assert words == [1000, 1001, 1002, 1003]


def test_read_splits_count_the_pieces_of_scattered_reads(ram):
    """Issue 41, goal 2: status field read_splits counts the pieces reads
    are cut into past their first because their blocks are not stored one
    after the other.  1 MiB written by one write at a segment boundary
    (one segment: a large segment of its own, issue 41 goal 1) reads in
    one piece; once every other block of it was
    written again by a 4 KiB write, each of its 256 blocks is a piece of
    its own: 255 splits exactly, served by the worker while the new
    blocks' segment is in memory and remapped straight down after, the
    same count either way.  A read of one block counts nothing.  udev
    runs nothing meanwhile: its probes read the device too."""
    info = formatted(ram)
    n = int(info["logical_sectors"])
    seg = int(info["segment_blocks"])
    dm_create("rs", f"0 {n} remap {ram}")
    dev = dm_path("rs")
    base, nb = 4096, 256                    # 16 MiB in: past blkid's probes
    assert (base + nb + 4 * seg) * 8 <= n

    def splits_of(lba, count):
        before = status_fields("rs")["read_splits"]
        got = _pread(dev, lba, count)
        return status_fields("rs")["read_splits"] - before, got

    with udev_paused():
        _pwrite(dev, base, b"".join(block(base + i, 1) for i in range(nb)), sync=True)
        # other data after it: its segment is sealed, written and left
        _pwrite(dev, base + nb, b"".join(block(base + nb + i, 1) for i in range(3 * seg)),
                sync=True)
        one, got = splits_of(base, nb)
        assert got == b"".join(block(base + i, 1) for i in range(nb))
        # a large segment: its blocks in order, one piece (format 4's
        # layout, 255 data blocks a segment, read in 2 or 3)
        assert one == 0, one
        want = [block(base + i, 2 if i % 2 == 0 else 1) for i in range(nb)]
        for i in range(0, nb, 2):
            _pwrite(dev, base + i, want[i])
        os.sync()
        d, got = splits_of(base, nb)
        assert got == b"".join(want)
        assert d == nb - 1, d
        _pwrite(dev, base + nb, b"".join(block(base + nb + i, 3) for i in range(3 * seg)),
                sync=True)
        d, got = splits_of(base, nb)
        assert got == b"".join(want) and d == nb - 1, d
        d, got = splits_of(base + 1, 1)
        assert got == want[1] and d == 0, d
        print(f"read_splits of a 1 MiB read: {one} after one write, {nb - 1} after every "
              "other block was written again")
    dm_remove("rs")


def test_status_fields_and_messages(ram):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    dm_create("st", f"0 {n} remap {ram}")
    st = dm_status("st")
    assert st[2] == "remap" and len(st) == 3 + len(STATUS_FIELDS), st
    f = status_fields("st")
    assert f["mode"] == "write" and f["version"] == 6     # DMR_FORMAT_VERSION
    assert f["logical_blocks"] == int(info["logical_blocks"])
    assert f["segment_sectors"] == int(info["segment_blocks"]) * 8
    assert f["segments"] == int(info["nr_segments"])
    assert f["free_segments"] == f["segments"] - 4      # one per log head
    assert f["gc_state"] == "idle" and f["prefree_segments"] == 0
    assert f["gc_reserve"] <= f["gc_low"] <= f["gc_high"] <= f["segments"] // 2
    assert (f["waf_load"], f["waf_format"]) == ("-", "-")
    assert f["checkpoint_seq"] == 1 and f["replayed_units"] == 0
    # the map (a page of 4 KiB per 1024 logical blocks once one of them
    # is written: none yet; 8 bytes of pointer per page), 68 bytes per
    # segment (its entry with its birth, the two list links and a large
    # segment's base and checksum, and its
    # readers), a list head per valid count and per prefree and free list
    # (4 bytes each), 5 per map block, eight segment buffers, the 256 KiB
    # checkpoint buffer, 16 bytes per block of the checkpoint's CRC and
    # segment tables (a hash of each, for each slot) and the write heat (2
    # bits per logical block: no map_cache)
    lg, segs = f["logical_blocks"], f["segments"]
    seg_blocks = f["segment_sectors"] // 8
    map_blocks = -(-lg // 1024)
    fresh = (8 * -(-lg // 1024) + 68 * segs + 4 * (seg_blocks + 1 + 3 + 1)
             + 5 * -(-lg // 1024)
             + 8 * f["segment_sectors"] * 512 + 64 * BLOCK
             + 16 * (-(-map_blocks * 4 // BLOCK) + -(-segs * SEGTAB_ENTRY // BLOCK))
             + -(-lg // 4))
    assert f["map_memory"] == fresh
    assert f["sb_copies_ok"] == 2 and f["first_error"] == 0
    run(["dd", "if=/dev/urandom", f"of={dm_path('st')}", "bs=64k", "count=4",
         "oflag=direct,sync", "status=none"])
    run(["blkdiscard", "-o", "0", "-l", "1048576", dm_path("st")])
    f = status_fields("st")
    assert f["user_blocks"] == 64 and f["flushes"] >= 4 and f["discards"] >= 1
    assert f["map_memory"] == fresh + BLOCK     # blocks 0-63: one page
    assert f["device_blocks"] >= 64
    # each synchronous write waited for its own flush: nothing to share
    assert f["device_flushes"] >= 4, f
    # three decimals, rounded half up (integer arithmetic in the module)
    milli = (f["device_blocks"] * 1000 + f["user_blocks"] // 2) // f["user_blocks"]
    assert f["waf_load"] == f"{milli // 1000}.{milli % 1000:03d}", f
    assert f["waf_format"] == f["waf_load"]     # nothing before this load
    # the first write on a device fresh from format wrote checkpoint 2 into
    # the slot format left blank (rule 7 there, dmr_mark_dirty())
    assert f["checkpoint_seq"] == 2, f
    run(["dmsetup", "message", DM_PREFIX + "st", "0", "checkpoint"])
    assert status_fields("st")["checkpoint_seq"] == 3
    run(["dmsetup", "message", DM_PREFIX + "st", "0", "clear_stats"])
    f = status_fields("st")
    assert (f["user_blocks"], f["device_blocks"], f["flushes"], f["short_units"],
            f["discards"], f["device_flushes"]) == (0, 0, 0, 0, 0, 0)
    bad = run(["dmsetup", "message", DM_PREFIX + "st", "0", "frobnicate"],
              check=False)
    assert bad.returncode != 0


@pytest.mark.parametrize("opts", [
    "",
    "1 read_only",
    "1 ignore_discard",
    "2 checkpoint_interval 5",
    "4 checkpoint_interval 60 ignore_discard read_only",
    "3 read_only checkpoint_interval 86400",
])
def test_table_reemits_options(ram, opts):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    major_minor = run(["stat", "-L", "-c", "%Hr:%Lr", ram]).stdout.strip()
    dm_create("tb", f"0 {n} remap {ram} {opts}".strip())
    expect = f"0 {n} remap {major_minor}" + (f" {opts}" if opts else "")
    assert dm_table("tb") == expect


def test_read_only_refuses_writes(ram):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    dm_create("ro", f"0 {n} remap {ram} 1 read_only")
    assert status_fields("ro")["mode"] == "read-only"
    w = run(["dd", "if=/dev/zero", f"of={dm_path('ro')}", "bs=4k", "count=1",
             "oflag=direct", "status=none"], check=False)
    assert w.returncode != 0
    r = run(["dd", f"if={dm_path('ro')}", "of=/dev/null", "bs=4k", "count=1",
             "iflag=direct", "status=none"], check=False)
    assert r.returncode == 0


def test_ignore_discard_not_advertised(ram):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    dm_create("nd", f"0 {n} remap {ram} 1 ignore_discard")
    d = run(["blkdiscard", "-o", "0", "-l", "1048576", dm_path("nd")],
            check=False)
    assert d.returncode != 0


def test_one_damaged_superblock_copy_falls_back(ram):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    blk = read_block(ram, 0)
    blk[200] ^= 0x10
    write_block(ram, 0, blk)
    log = Kmsg()
    dm_create("fb", f"0 {n} remap {ram}")
    assert status_fields("fb")["sb_copies_ok"] == 1
    assert "superblock copy 0 invalid (superblock checksum mismatch), using copy 1" \
        in log.text()


# ---------------------------------------------------------------------------
# Malformed table lines: each refused with its own message.

BAD_LINES = [
    # (id, table built from {dev} and {n} = logical sectors, expected error)
    ("no-device", "0 {n} remap", "Not enough arguments (need <dev>)"),
    ("count-not-number", "0 {n} remap {dev} x", "Invalid optional argument count"),
    ("count-trailing", "0 {n} remap {dev} 1x read_only",
     "Invalid optional argument count"),
    ("count-negative", "0 {n} remap {dev} -1", "Invalid optional argument count"),
    ("count-too-big", "0 {n} remap {dev} 2 read_only",
     "Optional argument count exceeds the arguments given"),
    ("count-too-small", "0 {n} remap {dev} 1 read_only ignore_discard",
     "Too many arguments"),
    ("unknown-option", "0 {n} remap {dev} 1 turbo", "Unrecognised optional argument"),
    ("duplicate-flag", "0 {n} remap {dev} 2 read_only read_only",
     "Duplicate optional argument read_only"),
    ("duplicate-value", "0 {n} remap {dev} 4 checkpoint_interval 5 checkpoint_interval 5",
     "Duplicate optional argument checkpoint_interval"),
    ("missing-value", "0 {n} remap {dev} 1 checkpoint_interval",
     "Missing value for checkpoint_interval"),
    ("value-not-number", "0 {n} remap {dev} 2 checkpoint_interval soon",
     "Invalid checkpoint_interval (not a number)"),
    ("value-trailing", "0 {n} remap {dev} 2 checkpoint_interval 5s",
     "Invalid checkpoint_interval (not a number)"),
    ("value-zero", "0 {n} remap {dev} 2 checkpoint_interval 0",
     "checkpoint_interval out of range (1 to 86400 seconds)"),
    ("value-too-big", "0 {n} remap {dev} 2 checkpoint_interval 100000",
     "checkpoint_interval out of range (1 to 86400 seconds)"),
    ("no-such-device", "0 {n} remap /dev/nonexistent", "Device lookup failed"),
    ("too-long", "0 {n8} remap {dev}",
     "Target length exceeds the formatted logical size"),
    ("not-4k-multiple", "0 {n_odd} remap {dev}",
     "Target length is not a multiple of 4096 bytes"),
]


@pytest.mark.parametrize("case", BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_malformed_table_rejected(ram, case):
    _, template, error = case
    info = formatted(ram)
    n = int(info["logical_sectors"])
    table = template.format(dev=ram, n=n, n8=n + 8, n_odd=n - 4)
    log = Kmsg()
    p = dm_create("bad", table, check=False)
    assert p.returncode != 0, f"{table!r} was accepted"
    assert f"remap: {error}" in log.text(), log.text()
    assert run(["dmsetup", "info", DM_PREFIX + "bad"], check=False).returncode != 0 \
        or "LIVE" not in run(["dmsetup", "info", DM_PREFIX + "bad"]).stdout


# ---------------------------------------------------------------------------
# Devices that are not (validly) formatted.

def _refused(ram, error, n=None):
    if n is None:
        n = 8192
    log = Kmsg()
    p = dm_create("ref", f"0 {n} remap {ram}", check=False)
    assert p.returncode != 0
    assert f"remap: {error}" in log.text(), log.text()


def test_unformatted_device_refused(ram):
    _refused(ram, "not a dm-remap device (bad superblock magic)")


def test_foreign_filesystem_refused(ram):
    run(["mkfs.ext4", "-q", "-F", ram])
    _refused(ram, "not a dm-remap device (bad superblock magic)")


def test_flipped_byte_in_both_copies_refused(ram):
    info = formatted(ram)
    for nr in (0, 1):
        blk = read_block(ram, nr)
        blk[100] ^= 0x01
        write_block(ram, nr, blk)
    _refused(ram, "superblock checksum mismatch", int(info["logical_sectors"]))


def _rewrite_both(ram, offset, value):
    for nr in (0, 1):
        blk = read_block(ram, nr)
        blk[offset:offset + len(value)] = value
        write_block(ram, nr, resum_sb(blk))


def test_unsupported_version_refused(ram):
    # a newer format, version 5 (CRC32C data checksums, before format 6's
    # block digests), version 4 (before format 5's large segments),
    # version 3 (before format 4's 64-bit block numbers), version 2 (three
    # log heads) and version 1 (before GC)
    for version in (7, 5, 4, 3, 2, 1):
        remapctl("format", "--force", ram)
        _rewrite_both(ram, 12, (version).to_bytes(4, "little"))
        log = Kmsg()
        _refused(ram, "unsupported format version")
        # the log names both versions and the remedy (review 3, item 12)
        remedy = ("load it with a newer dm-remap module" if version > 6 else
                  "copy the data off with its release, "
                  "then reformat with this version's remapctl")
        assert f"format version {version}, this module reads 6: {remedy}" \
            in log.text(), log.text()


def test_incompat_feature_refused(ram):
    formatted(ram)
    _rewrite_both(ram, 24, (1 << 31).to_bytes(4, "little"))
    _refused(ram, "unsupported incompatible feature flags")


def test_grow_feature_without_its_limit_refused(ram):
    """Bit 0 (grow) is known, but says the superblock holds a grow limit:
    without one the slots would be looked for in the wrong place."""
    formatted(ram)
    _rewrite_both(ram, 24, (1).to_bytes(4, "little"))
    _refused(ram, "inconsistent superblock geometry")


def test_ro_compat_feature_needs_read_only(ram):
    info = formatted(ram)
    n = int(info["logical_sectors"])
    _rewrite_both(ram, 20, (1 << 31).to_bytes(4, "little"))
    _refused(ram, "Unsupported read-only-compatible features: load with read_only", n)
    dm_create("roc", f"0 {n} remap {ram} 1 read_only")


def test_misdirected_superblock_refused(ram):
    formatted(ram)
    blk = read_block(ram, 1)
    write_block(ram, 0, blk)          # copy 1's block at block 0
    write_block(ram, 1, bytearray(BLOCK))
    _refused(ram, "superblock location mismatch (misdirected write)")


def test_shrunk_device_refused(ram):
    info = formatted(ram)
    total = sectors(ram)
    dm_create("small", f"0 {total // 2} linear {ram} 0")
    _refused(dm_path("small"), "Device is smaller than its formatted size",
             int(info["logical_sectors"]) // 4 // 8 * 8)


def test_io_error_reading_superblock(ram):
    dm_create("err", "0 131072 error")
    _refused(dm_path("err"), "Superblock read failed")
