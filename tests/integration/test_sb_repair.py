# SPDX-License-Identifier: GPL-2.0-only
"""Superblock copies that disagree (issue 40 item 4).

A grow writes the superblock copy not in use, then the one in use, FUA
each (dmr_write_superblock()).  A crash between the two leaves the grown
copy and a stale one, valid, with the old geometry, while checkpoints
and units past the old end follow on the device.  Nothing repaired that
copy: once the grown one was damaged, the module loaded the old
geometry.  A writable load now rewrites every copy that is damaged or
stale, so a later damage of either copy loads the grown device whole.
"""
import random

from conftest import (DM_PREFIX, Kmsg, dm_remove, dump, read_blocks_direct, remapctl,
                      run, status_fields, write_blocks_direct)
from test_grow import FMT, MIB, GrowStack, check_gen, write_gen


def test_stale_copy_after_a_crash_mid_grow_is_rewritten(ram, ram2):
    fmt = FMT + ("--grow-limit", "64M")
    s = GrowStack(ram, 32 * MIB, fmt)
    old_blocks = s.n // 8
    rnd = random.Random(40)
    model = {lba: 1 for lba in rnd.sample(range(old_blocks), 200)}
    write_gen(s.top, model, 1)
    dm_remove("top")
    in_use = int(dump(s.under)["using_copy"])    # the copy the grow writes second
    old = {c: read_blocks_direct(s.under, c) for c in (0, 1)}

    # grow, write past the old end, checkpoint there
    s.grow_under(64 * MIB)
    s.create()
    remapctl("grow", DM_PREFIX + "top")
    s.n = int(status_fields("top")["logical_blocks"]) * 8
    new = [old_blocks, old_blocks + 7, s.n // 8 - 1]
    write_gen(s.top, new, 2)
    model.update({lba: 2 for lba in new})
    run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"])
    dm_remove("top")

    # the crash between the grow's two superblock writes: the copy in
    # use at the grow (written second) still holds the old superblock
    write_blocks_direct(s.under, in_use, old[in_use])
    d = dump(s.under)
    assert int(d["logical_sectors"]) == s.n, d   # the grown copy wins

    log = Kmsg()
    s.create()
    assert status_fields("top")["sb_copies_ok"] == 1
    assert f"superblock copy {in_use} is stale" in log.text(), log.text()
    assert "superblock copies rewritten" in log.text(), log.text()
    check_gen(s.top, model, "after the load that rewrote the stale copy")
    dm_remove("top")
    a, b = read_blocks_direct(s.under, 0), read_blocks_direct(s.under, 1)
    assert a[16:] != old[0][16:] and b[16:] != old[1][16:]

    # now the grown copy loaded above is damaged: the other one, rewritten,
    # has the grown geometry too
    other = 1 - in_use
    blk = bytearray(read_blocks_direct(s.under, other))
    blk[200] ^= 0x10
    write_blocks_direct(s.under, other, bytes(blk))
    # as an operator loads it: remapctl create takes the size from the
    # superblock (a table of the grown length would grow the old
    # geometry again at load and hide the stale copy)
    remapctl("create", DM_PREFIX + "top", s.under)
    st = status_fields("top")
    assert st["logical_blocks"] * 8 == s.n, st
    assert st["sb_copies_ok"] == 1
    check_gen(s.top, model, "after the grown copy was damaged")
    dm_remove("top")
    # and that load rewrote the damaged copy in turn
    remapctl("create", DM_PREFIX + "top", s.under)
    assert status_fields("top")["sb_copies_ok"] == 2
    dm_remove("top")
    p = remapctl("check", s.under, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
