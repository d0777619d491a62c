# SPDX-License-Identifier: GPL-2.0-only
"""Regression tests for the kernel defects of the third review.

Each test names the item it guards against, and failed on 95897e3, the
commit the review read (see /tmp/helper-kernel-notes.md for the runs).
"""
import hashlib
import os
import subprocess

import pytest

from conftest import (DM_PREFIX, Kmsg, cleanup_dm, dm_create, dm_create_table, dm_path,
                      dm_remove, dm_table, dump, remapctl, run, sectors, status_fields)

MIB = 1 << 20
PATTERN = "/tmp/dmrt-review3.pat"


def _fmt(dev, *args):
    remapctl("format", "--force", *args, dev)
    return int(dump(dev)["logical_sectors"])


def _pattern(seed, mib=8):
    """@mib MiB of bytes that differ per seed and per block, in /tmp."""
    out, h = bytearray(), hashlib.sha256(f"review3-{seed}".encode()).digest()
    while len(out) < mib * MIB:
        h = hashlib.sha256(h).digest()
        out += h * 128                      # 4 KiB per hash
    with open(PATTERN, "wb") as f:
        f.write(out)
    return hashlib.md5(out).hexdigest()


def _write(dev, seed, at_mib=0, mib=8):
    """Write the pattern of @seed at @at_mib MiB of @dev with O_DIRECT and
    no flush; return its md5."""
    md5 = _pattern(seed, mib)
    run(["dd", f"if={PATTERN}", f"of={dev}", "bs=1M", f"seek={at_mib}",
         f"count={mib}", "oflag=direct", "status=none"])
    return md5


def _md5(dev, at_mib=0, mib=8):
    p = subprocess.run(["dd", f"if={dev}", "bs=1M", f"skip={at_mib}", f"count={mib}",
                        "iflag=direct", "status=none"], capture_output=True, check=True)
    assert len(p.stdout) == mib * MIB
    return hashlib.md5(p.stdout).hexdigest()


def _refused(name, table, why, kmsg):
    """dmsetup create must fail with EBUSY, naming the instance in the way."""
    lines = table if isinstance(table, list) else [table]
    p = dm_create_table(name, lines, check=False)
    assert p.returncode != 0, f"{lines} loaded"
    text = kmsg.text()
    assert why in text, text
    assert "(-EBUSY)" in text, text
    assert "already uses as" in text, text
    assert run(["dmsetup", "info", DM_PREFIX + name], check=False).returncode != 0 or \
        "LIVE" not in run(["dmsetup", "info", DM_PREFIX + name]).stdout


def _check_clean(dev):
    p = remapctl("check", dev, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


# ---------------------------------------------------------------------------
# Item 1: the second-device refusal compared block-device pointers only.

def test_two_targets_over_one_disk_in_one_table_refused(ram):
    """Item 1a: `0 H remap X` and `H H remap X` in one table: the second
    constructor took the first for a table reload of the same mapped
    device, was deferred, and both went live on one log."""
    n = _fmt(ram)
    dm_create("a", f"0 {n} remap {ram}")
    md5 = _write(dm_path("a"), 1)
    assert _md5(dm_path("a")) == md5
    dm_remove("a")
    half = n // 2 // 8 * 8
    kmsg = Kmsg()
    _refused("two", [f"0 {half} remap {ram}", f"{half} {half} remap {ram}"],
             "Device is used twice in this table", kmsg)
    dm_create("a", f"0 {n} remap {ram}")
    assert _md5(dm_path("a")) == md5
    dm_remove("a")
    _check_clean(ram)


def test_second_device_over_a_linear_alias_refused(ram):
    """Item 1b: a dm-linear slice from block 0 is the same dm-remap device
    (the same superblock) under another block device."""
    n = _fmt(ram)
    dm_create("a", f"0 {n} remap {ram}")
    md5 = _write(dm_path("a"), 2)
    dm_create("lin", f"0 {sectors(ram)} linear {ram} 0")
    kmsg = Kmsg()
    _refused("b", f"0 {n} remap {dm_path('lin')}",
             "in use by another dm-remap mapped device", kmsg)
    assert DM_PREFIX + "a" in kmsg.text(), kmsg.text()
    assert _md5(dm_path("a")) == md5
    dm_remove("a")
    dm_remove("lin")
    _check_clean(ram)
    dm_create("a", f"0 {n} remap {ram}")
    assert _md5(dm_path("a")) == md5


@pytest.fixture
def two_loops():
    """Two loop devices over one image file in the guest's /tmp (RAM)."""
    img = "/tmp/dmrt-review3.img"
    with open(img, "wb") as f:
        f.truncate(128 * MIB)
    devs = [run(["losetup", "-f", "--show", img]).stdout.strip() for _ in range(2)]
    yield devs
    cleanup_dm()
    for d in devs:
        run(["losetup", "-d", d], check=False)
    os.unlink(img)


def test_second_device_over_a_second_loop_refused(two_loops):
    """Item 1b: two loop devices over one image file."""
    l1, l2 = two_loops
    n = _fmt(l1)
    dm_create("a", f"0 {n} remap {l1}")
    md5 = _write(dm_path("a"), 3)
    kmsg = Kmsg()
    _refused("b", f"0 {n} remap {l2}", "in use by another dm-remap mapped device", kmsg)
    assert _md5(dm_path("a")) == md5
    dm_remove("a")
    _check_clean(l1)


def test_reload_through_an_alias_is_deferred(ram):
    """Item 1c: a reload of the live device naming an alias of its disk
    was not recognised as a reload: the new instance loaded in its
    constructor, before the old one's last checkpoint, and missed what
    was not yet checkpointed.  It must load at resume."""
    n = _fmt(ram)
    dm_create("a", f"0 {n} remap {ram}")
    dm_create("lin", f"0 {sectors(ram)} linear {ram} 0")
    md5_1 = _write(dm_path("a"), 4)           # no flush: in the log only
    assert _md5(dm_path("a")) == md5_1
    kmsg = Kmsg()
    run(["dmsetup", "reload", DM_PREFIX + "a", "--table",
         f"0 {n} remap {dm_path('lin')}"])
    run(["dmsetup", "resume", DM_PREFIX + "a"])
    assert "already uses" not in kmsg.text(), kmsg.text()
    assert dm_table("a").split()[3] == run(
        ["dmsetup", "info", "-c", "--noheadings", "-o", "major,minor",
         DM_PREFIX + "lin"]).stdout.strip().replace(" ", "")
    assert status_fields("a")["mode"] == "write"
    assert _md5(dm_path("a")) == md5_1, "data written before the reload"
    md5_2 = _write(dm_path("a"), 5, at_mib=16)
    assert _md5(dm_path("a"), at_mib=16) == md5_2
    assert _md5(dm_path("a")) == md5_1
    dm_remove("a")
    dm_remove("lin")
    _check_clean(ram)
    dm_create("a", f"0 {n} remap {ram}")
    assert _md5(dm_path("a")) == md5_1
    assert _md5(dm_path("a"), at_mib=16) == md5_2
    dm_remove("a")


# ---------------------------------------------------------------------------
# Item 15: watermarks set by message are part of the table.

def test_watermarks_set_by_message_survive_a_reload(ram):
    """Item 15: `dmsetup table` re-emitted only the table's own options,
    so a reload of its line (remapctl grow makes one) reverted the
    watermarks the gc_low / gc_high messages had set."""
    n = _fmt(ram, "--segment-size", "256K", "--overprovision", "10")
    dm_create("a", f"0 {n} remap {ram} 2 gc_high 10")
    st = status_fields("a")
    assert (st["gc_low"], st["gc_high"]) == (5, 10), st
    run(["dmsetup", "message", dm_path("a"), "0", "gc_high", "12"])
    run(["dmsetup", "message", dm_path("a"), "0", "gc_low", "8"])
    words = dm_table("a").split()
    assert words[4:] == ["4", "gc_high", "12", "gc_low", "8"], words
    run(f"dmsetup table {dm_path('a')} | dmsetup reload {dm_path('a')}")
    run(["dmsetup", "resume", dm_path("a")])
    st = status_fields("a")
    assert (st["gc_low"], st["gc_high"]) == (8, 12), st
    # a table without watermarks gains only the one a message changed
    dm_remove("a")
    dm_create("a", f"0 {n} remap {ram}")
    assert dm_table("a").split()[4:] == [], dm_table("a")
    run(["dmsetup", "message", dm_path("a"), "0", "gc_high", "9"])
    assert dm_table("a").split()[4:] == ["2", "gc_high", "9"], dm_table("a")
    run(f"dmsetup table {dm_path('a')} | dmsetup reload {dm_path('a')}")
    run(["dmsetup", "resume", dm_path("a")])
    st = status_fields("a")
    assert (st["gc_low"], st["gc_high"]) == (5, 9), st
