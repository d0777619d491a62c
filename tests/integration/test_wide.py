# SPDX-License-Identifier: GPL-2.0-only
"""Format 4's 64-bit block numbers (issue 26, "beyond 16 TiB"): a sparse
32 TiB device, 2^33 blocks of 4 KiB, past the 2^32 that 32-bit map
entries and log summaries reach.  remapctl format gives it 64-bit block
numbers without being asked (feature wide: 8-byte map entries, wide log
units); its whole map would be 58 GiB of kernel memory, so it runs with
a map cache of 64 MiB, and 8 MiB segments keep the segment table to 4
million entries.  Blocks at both ends and on both sides of 2^32 are
written, read back across a reload and a power cut (the device below
turned into dm-error: nothing after the last flush lands, not even the
checkpoint of the removal; the log is replayed); then mkfs.xfs, files
written and read back across a reload, and remapctl check.

The checkpoint slots' maps (64 GiB each, all zero but for a few blocks)
are written as write-zeroes, which the loop device punches out of its
sparse file in the guest's RAM.
"""
import os

import pytest

from conftest import (dm_create, dm_path, dm_remove, dm_set_table, dump, loop_dev,
                      mem_total_bytes, remapctl, run, sectors, status_fields)
from test_review2 import _md5, _pattern_check as _check, _pattern_write as _write

SIZE = 32 << 40
HIGH = 1 << 32              # the first logical block 32 bits cannot name


@pytest.fixture
def loop32t():
    if mem_total_bytes() < 5 << 30:
        pytest.skip("needs a guest with 6 GiB of RAM (run-vm.sh --mem 6144)")
    yield from loop_dev("wide32t", SIZE)


def test_32tib_device_across_2_to_the_32(loop32t):
    p = remapctl("format", "--map-cache", "64", "--segment-size", "8M", loop32t)
    assert "past 16 TiB: 64-bit block numbers" in p.stdout, p.stdout
    d = dump(loop32t)
    assert int(d["feature_incompat"]) & 2, d
    L = int(d["logical_blocks"])
    n = int(d["logical_sectors"])
    assert L > HIGH and int(d["nr_segments"]) * 2048 > 2 * HIGH - (1 << 30), d
    size = sectors(loop32t)
    dm_set_table("under", f"0 {size} linear {loop32t} 0")
    # (no periodic checkpoint between the last writes and the power cut)
    table = f"0 {n} remap {dm_path('under')} 4 map_cache 64 checkpoint_interval 3600"
    dm_create("top", table)
    top = dm_path("top")
    lbas = [0, 1, HIGH - 2, HIGH - 1, HIGH, HIGH + 1, L - 2, L - 1]
    _write(top, lbas, 1)
    _check(top, lbas, 1, "written")
    dm_remove("top")
    dm_create("top", table)
    _check(top, lbas, 1, "after a reload")
    assert status_fields("top")["replayed_units"] == 0
    # a power cut after an fsync: the wide units after the checkpoint
    _write(top, lbas[2:6], 2)
    dm_set_table("under", f"0 {size} error")
    dm_remove("top")
    dm_set_table("under", f"0 {size} linear {loop32t} 0")
    dm_create("top", table)
    assert status_fields("top")["replayed_units"] > 0
    _check(top, lbas[:2] + lbas[6:], 1, "after a power cut")
    _check(top, lbas[2:6], 2, "after a power cut")
    st = status_fields("top")
    assert st["mode"] == "write" and st["first_error"] == 0, st

    mnt = "/tmp/dmrt-wide-mnt"
    os.makedirs(mnt, exist_ok=True)
    # no discard of 29 TiB, a small log: what mkfs writes stays small
    run(["mkfs.xfs", "-q", "-f", "-K", "-l", "size=64m", top])
    run(["mount", top, mnt])
    try:
        for i in range(4):
            os.makedirs(f"{mnt}/d{i}", exist_ok=True)
            run(["dd", "if=/dev/urandom", f"of={mnt}/d{i}/f", "bs=1M", "count=4",
                 "status=none"])
        sums = [_md5(f"{mnt}/d{i}/f") for i in range(4)]
    finally:
        run(["umount", mnt])
    dm_remove("top")
    dm_create("top", table)
    run(["mount", "-o", "ro", top, mnt])
    try:
        assert [_md5(f"{mnt}/d{i}/f") for i in range(4)] == sums
    finally:
        run(["umount", mnt])
    dm_remove("top")
    dm_remove("under")
    p = remapctl("check", loop32t, check=False)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "0 errors" in p.stdout
