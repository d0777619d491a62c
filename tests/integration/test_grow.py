# SPDX-License-Identifier: GPL-2.0-only
"""Growing online (issue 26): a device formatted with --grow-limit grows
under a live target when the device below it grew (dm-linear or
dm-flakey reloaded longer, md RAID-5 reshaped from 4 to 5 disks), with
`remapctl grow`, and keeps every acknowledged write: across the grow,
across a power cut right after it, and at every write of a grow that a
dm-log-writes recording replays.

The oracle for the grown size is an independent format: a device of the
grown size formatted with the same options has the logical size and
segment count the grow must give.
"""
import os
import random
import time

import pytest

from conftest import (BLOCK, DM_PREFIX, REPO, Kmsg, Ram, cleanup_dm, dm_create, dm_path,
                      dm_remove, dm_set_table, dump, md_stop, remapctl, report_count, run,
                      sectors, status_fields)
from test_log import Stack, _pread, _pwrite, block, blocks, loop512, same  # noqa: F401
from test_review import _fio

MIB = 1 << 20
REPLAY = str(REPO / "tools" / "replay-log")
FMT = ("--segment-size", "256K")


class GrowStack(Stack):
    """Stack (dm-flakey 'under' over a ramdisk, dm-remap 'top') whose
    'under' starts at size_bytes and grows by a reload."""

    def __init__(self, ram, size_bytes, fmt_args):
        self.ram = ram
        self.size = size_bytes // 512
        self.flakey("up")
        remapctl("format", "--force", *fmt_args, self.under)
        self.info = dump(self.under)
        self.n = int(self.info["logical_sectors"])
        self.create()

    def grow_under(self, size_bytes):
        self.size = size_bytes // 512
        self.flakey("up")


def expected_geometry(dev, size_bytes, fmt_args):
    """logical_sectors and nr_segments of a fresh format of size_bytes."""
    dm_create("oracle", f"0 {size_bytes // 512} linear {dev} 0")
    try:
        remapctl("format", "--force", *fmt_args, dm_path("oracle"))
        d = dump(dm_path("oracle"))
        return int(d["logical_sectors"]), int(d["nr_segments"])
    finally:
        dm_remove("oracle")


def write_gen(dev, lbas, gen):
    for lba in lbas:
        _pwrite(dev, lba, block(lba, gen), sync=True)


def check_gen(dev, model, where):
    bad = [lba for lba, gen in model.items() if _pread(dev, lba) != block(lba, gen)]
    assert not bad, f"{where}: {len(bad)} blocks wrong, first {bad[:8]}"


def test_grow_online_keeps_data_and_adds_space(ram, ram2):
    """64 MiB formatted with --grow-limit 128M, data written, the device
    below reloaded at 128 MiB, remapctl grow: the table, the status and
    the superblock have the grown geometry of a fresh 128 MiB format;
    the old data reads back, the new space (and a write across the old
    end) takes data, and all of it survives a clean reload, a power cut
    and remapctl check."""
    fmt = FMT + ("--grow-limit", "128M")
    want_n, want_segs = expected_geometry(ram2, 128 * MIB, fmt)
    # what a device holds before format: the slots' room past the tables
    # of the small device is never written by format
    run(["sh", "-c", f"tr '\\0' '\\245' < /dev/zero | dd of={ram} bs=1M count=4 "
         "oflag=direct iflag=fullblock status=none"])
    s = GrowStack(ram, 64 * MIB, fmt)
    damaged = Kmsg()
    old_n, old_segs = s.n, int(s.info["nr_segments"])
    old_blocks = old_n // 8
    assert want_n > old_n and s.info["grow_limit"] == str(128 * MIB // BLOCK)
    rnd = random.Random(7)
    model = {lba: 1 for lba in rnd.sample(range(old_blocks), 400)}
    model[old_blocks - 1] = 1
    write_gen(s.top, model, 1)
    free_before = s.status()["free_segments"]

    # nothing to grow yet: the device below has not grown
    p = remapctl("grow", DM_PREFIX + "top")
    assert "nothing to grow" in p.stdout and sectors(s.top) == old_n

    s.grow_under(128 * MIB)
    log = Kmsg()
    p = remapctl("grow", DM_PREFIX + "top")
    assert f"grew {DM_PREFIX}top: {old_n} to {want_n} sectors" in p.stdout, p.stdout
    assert sectors(s.top) == want_n
    assert any(f"grown from {64 * MIB // BLOCK} to {128 * MIB // BLOCK} blocks" in ln
               for ln in log.new()), log.text()
    st = s.status()
    assert st["logical_blocks"] == want_n // 8 and st["segments"] == want_segs
    assert st["free_segments"] == free_before + want_segs - old_segs
    assert not [ln for ln in log.new() if "recovery" in ln]
    d = dump(s.under)
    assert (int(d["logical_sectors"]), int(d["nr_segments"])) == (want_n, want_segs)
    assert int(d["device_blocks"]) == 128 * MIB // BLOCK
    assert d["data_offset"] == s.info["data_offset"]
    assert int(d["generation"]) == int(s.info["generation"]) + 1
    check_gen(s.top, model, "after the grow")

    # the new space: across the old end, in the middle, the last block
    new = [old_blocks, old_blocks + 1, (old_blocks + want_n // 8) // 2, want_n // 8 - 1]
    _pwrite(s.top, old_blocks - 1, blocks([old_blocks - 1, old_blocks], 2), sync=True)
    model.update({old_blocks - 1: 2, old_blocks: 2})
    write_gen(s.top, new[1:], 2)
    model.update({lba: 2 for lba in new[1:]})
    check_gen(s.top, model, "written after the grow")
    # a checkpoint into each slot by the grown instance: the map blocks
    # the old slot never held must go to both
    for _ in range(2):
        run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"])
        write_gen(s.top, [lba for lba in new if lba < want_n // 8 - 1][:1], 2)
    s.crash()
    s.n = want_n
    s.create()
    check_gen(s.top, model, "after a power cut after two checkpoints")
    assert not [ln for ln in damaged.new() if "damaged" in ln], damaged.text()

    s.reload()
    assert s.status()["replayed_units"] == 0
    check_gen(s.top, model, "after a clean reload")
    write_gen(s.top, new, 3)
    model.update({lba: 3 for lba in new})
    s.crash()
    s.create()
    check_gen(s.top, model, "after a power cut")
    dm_remove("top")
    p = remapctl("check", s.under, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    d = dump(s.under)
    newest = d["newest_ckpt"]
    assert int(d[f"ckpt{newest}_nr_segments"]) == want_segs


def test_power_cut_right_after_the_grow(ram, ram2):
    """The grow's load writes the superblock first; a power cut right
    after it (no checkpoint of the grown device yet: the newest one covers
    the old size) loads the grown device with the data of before."""
    fmt = FMT + ("--grow-limit", "96M")
    want_n, _ = expected_geometry(ram2, 96 * MIB, fmt)
    s = GrowStack(ram, 64 * MIB, fmt)
    model = {lba: 1 for lba in random.Random(3).sample(range(s.n // 8), 200)}
    write_gen(s.top, model, 1)
    s.grow_under(96 * MIB)
    remapctl("grow", DM_PREFIX + "top")
    s.crash()
    d = dump(s.under)
    newest = d["newest_ckpt"]
    assert int(d[f"ckpt{newest}_logical_blocks"]) < want_n // 8    # the old size
    assert int(d["logical_sectors"]) == want_n
    p = remapctl("check", s.under, check=False)    # the offline check agrees
    assert p.returncode == 0, p.stdout + p.stderr
    s.n = want_n
    s.create()
    check_gen(s.top, model, "after the power cut")
    write_gen(s.top, [want_n // 8 - 1], 4)


def test_grow_at_create(ram, ram2):
    """The device grew while no table was loaded: `dmsetup create` with
    the longer length grows it at its first load, as a reload would."""
    fmt = FMT + ("--grow-limit", "128M")
    want_n, want_segs = expected_geometry(ram2, 128 * MIB, fmt)
    s = GrowStack(ram, 64 * MIB, fmt)
    model = {lba: 1 for lba in random.Random(5).sample(range(s.n // 8), 100)}
    write_gen(s.top, model, 1)
    dm_remove("top")
    s.grow_under(128 * MIB)
    s.n = want_n
    s.create()
    st = s.status()
    assert st["logical_blocks"] == want_n // 8 and st["segments"] == want_segs
    check_gen(s.top, model, "after the grow at create")
    write_gen(s.top, [want_n // 8 - 1], 2)


@pytest.mark.parametrize("case", ["no-limit", "not-grown", "read-only", "shrunk"])
def test_grow_refusals(ram, ram2, case):
    """A longer table over a device formatted without a limit, over one
    that has not grown enough, or read-only, is refused with its message;
    so is a device smaller than its superblock says.  The superblock is
    unchanged and the device loads at its size after each."""
    fmt = FMT + (() if case == "no-limit" else ("--grow-limit", "128M"))
    s = GrowStack(ram, 64 * MIB, fmt)
    dm_remove("top")
    gen = dump(s.under)["generation"]
    if case != "not-grown" and case != "shrunk":
        s.grow_under(128 * MIB)
    if case == "shrunk":
        s.grow_under(60 * MIB)
    want_n, _ = expected_geometry(ram2, 128 * MIB, fmt)
    longer = {"no-limit": s.n + 8, "not-grown": s.n + 2048, "read-only": want_n,
              "shrunk": s.n + 8}[case]
    opts = " 1 read_only" if case == "read-only" else ""
    log = Kmsg()
    p = dm_create("top", f"0 {longer} remap {s.under}{opts}", check=False)
    assert p.returncode != 0
    msg = {"no-limit": "Target length exceeds the formatted logical size",
           "not-grown": "Target length exceeds what the device can grow to",
           "read-only": "Cannot grow a read-only table",
           "shrunk": "Device is smaller than its formatted size"}[case]
    assert msg in log.text(), log.text()
    assert dump(s.under)["generation"] == gen
    if case == "shrunk":
        s.grow_under(64 * MIB)
    dm_create("top", f"0 {s.n} remap {s.under}")


# ------------------------------------------------------------------
# every write of a grow, replayed from a dm-log-writes recording

def test_grow_crash_at_every_write(ram, ram2):
    """dm-remap over a dm-linear 'small' (32 MiB) over dm-log-writes
    (64 MiB): data is written and fsynced, 'small' is reloaded at
    64 MiB and remapctl grow runs, more data goes to the new space.  The
    recording is replayed to every write from the mark before the grow to
    the one after the writes that followed it: at each point the device
    loads (with the logical size of whichever superblock is valid there,
    old or grown), every block fsynced before the grow reads back, and the
    blocks fsynced after it once their mark is past.

    Superblock copy 1 is damaged before the target loads, so the grow's
    order matters: where the last write replayed is a superblock copy, the
    point is tried again with that write torn (its first half lost: zeros;
    the fields are all there, the rest of the block is zero anyway).  The
    copy not in use (1) must go first: a torn write of it leaves copy 0,
    and a torn write of copy 0 comes after copy 1 is whole; the other order
    would tear the only valid copy."""
    log_dev, scratch, copy = Ram.get(), Ram.get(), Ram.get()
    try:
        fmt = FMT + ("--grow-limit", "64M")
        want_n, _ = expected_geometry(ram2, 64 * MIB, fmt)
        dm_create("lw", f"0 {64 * MIB // 512} log-writes {ram} {log_dev}")
        lw = dm_path("lw")
        dm_set_table("small", f"0 {32 * MIB // 512} linear {lw} 0")
        remapctl("format", "--force", *fmt, dm_path("small"))
        old_n = int(dump(dm_path("small"))["logical_sectors"])
        with open(dm_path("small"), "r+b") as f:       # superblock copy 1
            f.seek(BLOCK)
            f.write(os.urandom(BLOCK))
            os.fsync(f.fileno())
        dm_create("top", f"0 {old_n} remap {dm_path('small')}")
        assert status_fields("top")["sb_copies_ok"] == 1
        rnd = random.Random(11)
        before = {lba: 1 for lba in rnd.sample(range(old_n // 8), 100)}
        write_gen(dm_path("top"), before, 1)
        run(["dmsetup", "message", DM_PREFIX + "lw", "0", "mark", "pre-grow"])
        dm_set_table("small", f"0 {64 * MIB // 512} linear {lw} 0")
        remapctl("grow", DM_PREFIX + "top")
        assert sectors(dm_path("top")) == want_n
        run(["dmsetup", "message", DM_PREFIX + "lw", "0", "mark", "grown"])
        after = {lba: 2 for lba in rnd.sample(range(old_n // 8, want_n // 8), 20)}
        write_gen(dm_path("top"), after, 2)
        run(["dmsetup", "message", DM_PREFIX + "lw", "0", "mark", "post-grow"])
        dm_remove("top")
        dm_remove("small")
        dm_remove("lw")

        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        entries = [ln.split(" ", 4) for ln in
                   run([REPLAY, "--log", log_dev, "--list"]).stdout.splitlines()]
        marks = {e[4]: int(e[0]) for e in entries if "MARK" in e[1]}
        first, grown, last = marks["pre-grow"], marks["grown"], marks["post-grow"]
        points = list(range(first, grown + 1))
        points += list(range(grown + 1, last + 1, max(1, (last - grown) // 8))) + [last]
        assert grown - first >= 4, "the grow wrote too little to be the grow"
        run([REPLAY, "--log", log_dev, "--replay", scratch, "--end", str(first)])
        done, saw_old, saw_new, torn = first, 0, 0, []
        for end in points:
            if end > done:
                run([REPLAY, "--log", log_dev, "--replay", scratch,
                     "--start", str(done), "--end", str(end)])
                done = end
            # the last write replayed: a superblock copy (sector 0 or 8)?
            e = entries[end - 1]
            sb = int(e[2]) // 8 if int(e[2]) in (0, 8) and int(e[3]) == 8 else None
            for tear in [False] + ([True] if sb is not None else []):
                # O_DIRECT both ways: the copy goes ramdisk to ramdisk, not
                # through both page caches (a direct read writes back what
                # replay-log left cached first)
                run(["dd", f"if={scratch}", f"of={copy}", "bs=4M", "count=16",
                     "iflag=direct", "oflag=direct", "status=none"])
                if tear:
                    with open(copy, "r+b") as f:
                        f.seek(sb * BLOCK)
                        f.write(bytes(BLOCK // 2))
                        os.fsync(f.fileno())
                    torn.append(sb)
                where = f"entry {end}" + (f", superblock copy {sb} torn" if tear else "")
                d = dump(copy)
                n = int(d["logical_sectors"])
                assert n in (old_n, want_n), (where, n)
                saw_old += n == old_n
                saw_new += n == want_n
                p = dm_create("chk", f"0 {n} remap {copy}", check=False)
                assert p.returncode == 0, f"load failed at {where}: {p.stderr}"
                try:
                    check_gen(dm_path("chk"), before, where)
                    if end >= last:
                        check_gen(dm_path("chk"), after, where)
                finally:
                    dm_remove("chk")
        assert saw_old and saw_new, (saw_old, saw_new)
        assert sorted(torn) == [0, 1], torn     # each copy written once, both torn
        report_count(f"grow crash points: {len(points)}, {saw_old + saw_new} loads "
                     f"({saw_old} at the old size, {saw_new} grown; superblock copies "
                     f"torn: {sorted(torn)}), log entries {first}..{grown} for the grow")
    finally:
        cleanup_dm()
        Ram.used -= 3


# ------------------------------------------------------------------
# md RAID-5 of 4 ramdisks reshaped to 5 under fio

def _md_speed(low, high):
    """md's resync and reshape speed limits, KiB/s."""
    for name, v in (("speed_limit_max", high), ("speed_limit_min", low)):
        with open(f"/proc/sys/dev/raid/{name}", "w") as f:
            f.write(f"{v}\n")


def _md_wait(md, timeout=900):
    end = time.time() + timeout
    while time.time() < end:
        if "reshape" not in open("/proc/mdstat").read():
            return
        time.sleep(2)
    raise AssertionError("md reshape did not finish:\n" + open("/proc/mdstat").read())


def test_md_raid5_grown_from_4_to_5_disks_under_fio(ram):
    """md RAID-5 over 4 ramdisks (32 MiB of each), dm-flakey, dm-remap
    formatted with --grow-limit: fio writes and verifies while md
    reshapes to 5 disks; a power cut during the reshape loses nothing
    fio fsynced; then the device below grows, remapctl grow gives the
    new space, fio verifies again, and after a second power cut (right
    after a write to the new space) everything verifies and remapctl
    check is clean."""
    devs = [ram] + [Ram.get() for _ in range(4)]
    md = "/dev/md/dmrt-grow"
    backup = "/tmp/dmrt-md-grow.backup"
    try:
        run(["mdadm", "--create", md, "--run", "--quiet", "--level=5", "--raid-devices=4",
             "--chunk=64", "--size=32M", "--assume-clean", "--metadata=1.2", *devs[:4]],
            input="y\n")
        md_dev = os.path.realpath(md)
        old_bytes = sectors(md_dev) * 512
        assert old_bytes == 96 * MIB
        _md_speed(1000, 1000)       # slow: the power cut comes during the reshape
        # the stripe is 192 KiB; segments of 4 stripes
        fmt = ("--segment-size", "768K", "--grow-limit", "256M")
        s = Stack.__new__(Stack)
        s.ram, s.size = md_dev, old_bytes // 512
        s.flakey("up")
        remapctl("format", "--force", *fmt, s.under)
        s.info = dump(s.under)
        s.n = int(s.info["logical_sectors"])
        s.create()
        size = "32M"
        _fio(s.top, size, 0)

        run(["mdadm", "--add", "--quiet", md, devs[4]])
        run(["mdadm", "--grow", md, "--raid-devices=5", f"--backup-file={backup}"])
        assert "reshape" in open("/proc/mdstat").read()
        _fio(s.top, size, 0)                  # while md reshapes
        mdstat = open("/proc/mdstat").read()
        assert "reshape" in mdstat, mdstat
        s.crash()
        s.create()
        _fio(s.top, size, 1)
        report_count("md grow: power cut during the reshape at "
                     + mdstat.split("reshape =")[1].split()[0])
        _md_speed(100000, 200000)
        _md_wait(md)
        new_bytes = sectors(md_dev) * 512
        assert new_bytes >= 128 * MIB, new_bytes

        s.size = new_bytes // 512
        s.flakey("up")
        p = remapctl("grow", DM_PREFIX + "top")
        grown_n = sectors(s.top)
        assert grown_n > s.n, p.stdout
        _fio(s.top, size, 1)
        last = grown_n // 8 - 1
        _pwrite(s.top, last, block(last, 9), sync=True)
        s.n = grown_n
        s.crash()
        s.create()
        _fio(s.top, size, 1)
        assert same(_pread(s.top, last), block(last, 9))
        s.remove_and_check()
    finally:
        cleanup_dm()
        md_stop(md, devs)
        if os.path.exists(backup):
            os.unlink(backup)
        _md_speed(1000, 200000)     # the kernel's defaults
        Ram.used -= 4


def test_grow_then_resize2fs_online(ram):
    """ext4 mounted on the device: the device below grows, remapctl grow,
    resize2fs online; the file system is larger, takes a file bigger than
    its old free space, and checks clean with every file intact."""
    import hashlib
    fmt = FMT + ("--grow-limit", "128M")
    s = GrowStack(ram, 64 * MIB, fmt)
    run(["mkfs.ext4", "-q", "-F", s.top])
    mnt = "/tmp/dmrt-grow-mnt"
    os.makedirs(mnt, exist_ok=True)
    run(["mount", s.top, mnt])
    try:
        sums = {}
        for i in range(4):
            data = os.urandom(4 * MIB)
            with open(f"{mnt}/f{i}", "wb") as f:
                f.write(data)
            sums[f"f{i}"] = hashlib.sha256(data).hexdigest()
        run(["sync"])
        before = os.statvfs(mnt)
        s.grow_under(128 * MIB)
        remapctl("grow", DM_PREFIX + "top")
        run(["resize2fs", s.top])
        after = os.statvfs(mnt)
        assert after.f_blocks * after.f_frsize > before.f_blocks * before.f_frsize + 48 * MIB
        big = os.urandom(before.f_bavail * before.f_frsize + 8 * MIB)
        with open(f"{mnt}/big", "wb") as f:
            f.write(big)
        sums["big"] = hashlib.sha256(big).hexdigest()
        run(["sync"])
    finally:
        run(["umount", mnt], check=False)
    p = run(["e2fsck", "-fn", s.top], check=False)
    assert p.returncode == 0, p.stdout
    run(["mount", "-o", "ro", s.top, mnt])
    try:
        for name, digest in sums.items():
            with open(f"{mnt}/{name}", "rb") as f:
                assert hashlib.sha256(f.read()).hexdigest() == digest, name
    finally:
        run(["umount", mnt])


def test_grow_then_xfs_growfs_online(loop512):
    """XFS mounted on the device (352 MiB of a sparse 512 MiB loop device:
    mkfs.xfs wants more than 300 MB): the device below grows to 512 MiB,
    remapctl grow, xfs_growfs online.  The file system has more allocation
    groups; files written after it, one per new directory (XFS puts each
    new directory in the next group), land in the new space (filefrag's
    physical offsets past the old size), and after a power cut xfs_repair
    -n is clean and every file reads back."""
    fmt = FMT + ("--grow-limit", "512M")
    s = GrowStack(loop512, 352 * MIB, fmt)
    old_bytes = s.n * 512
    run(["mkfs.xfs", "-q", "-f", s.top])
    mnt = "/tmp/dmrt-grow-mnt"
    os.makedirs(mnt, exist_ok=True)
    run(["mount", s.top, mnt])
    files = {}
    try:
        def agcount():
            out = run(["xfs_info", mnt]).stdout
            return int(out.split("agcount=")[1].split(",")[0])

        for i in range(2):
            files[f"old{i}"] = os.urandom(MIB) * 2
            with open(f"{mnt}/old{i}", "wb") as f:
                f.write(files[f"old{i}"])
        run(["sync"])
        ag_before, before = agcount(), os.statvfs(mnt)
        s.grow_under(512 * MIB)
        remapctl("grow", DM_PREFIX + "top")
        run(["xfs_growfs", mnt])
        grown_n = sectors(s.top)
        after = os.statvfs(mnt)
        ag_after = agcount()
        assert ag_after > ag_before
        assert after.f_blocks * after.f_frsize > before.f_blocks * before.f_frsize + 96 * MIB
        for i in range(3 * ag_after):
            os.makedirs(f"{mnt}/d{i}")
            files[f"d{i}/f"] = os.urandom(256 << 10) * 4
            with open(f"{mnt}/d{i}/f", "wb") as f:
                f.write(files[f"d{i}/f"])
        run(["sync"])
        beyond = []
        for name in files:
            out = run(["filefrag", "-v", "-b4096", f"{mnt}/{name}"]).stdout
            for line in out.splitlines():
                parts = line.replace(":", " ").replace("..", " ").split()
                if len(parts) >= 6 and parts[0].isdigit():
                    if int(parts[3]) * 4096 >= old_bytes:
                        beyond.append(name)
        assert beyond, "no file was written past the old size"
    finally:
        run(["umount", mnt], check=False)
    s.crash()
    s.n = grown_n           # the table the next load gets: the grown length
    s.create()
    p = run(["xfs_repair", "-n", s.top], check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    run(["mount", "-o", "ro", s.top, mnt])
    try:
        for name, data in files.items():
            with open(f"{mnt}/{name}", "rb") as f:
                assert f.read() == data, name
    finally:
        run(["umount", mnt])
    report_count(f"xfs_growfs: {len(set(beyond))} of {len(files)} files past the "
                 f"old size, allocation groups {ag_before} -> {ag_after}")


# ------------------------------------------------------------------
# a sparse multi-TiB device grown past 2^29 logical blocks

# The memory a 3 TiB grow limit needs (3.0 GiB: the map, 1 GiB per TiB,
# and the write heat) is about half a 6 GiB guest's RAM, where format's
# check draws its line; that check has tests of its own
# (tests/host/test_remapctl_format.py), this one is about growing.
BIG_MEM = ("--max-memory", "4G")


def test_grow_sparse_device_past_2tib():
    """A sparse 1 TiB image (1 MiB segments) formatted with --grow-limit
    3T, blocks written at both ends; the image grows to 2.5 TiB (truncate,
    losetup -c) and remapctl grow takes it past 2^29 logical blocks (2 TiB
    of logical space: the map's arrays go from kvcalloc() to vmalloc()
    sizes) and past 2^21 segments.  Blocks at the old end, across it, at
    2^29 and at the new end are written; everything reads back after a
    reload, the superblock has a fresh format's grown geometry, and
    remapctl check is clean."""
    img = "/tmp/dmrt-grow-large.img"
    with open(img, "wb") as f:
        f.truncate(1 << 40)
    dev = run(["losetup", "-f", "--show", img]).stdout.strip()
    oracle = "/tmp/dmrt-grow-oracle.img"
    try:
        remapctl("format", "--grow-limit", "3T", *BIG_MEM, dev)
        old = dump(dev)
        old_n = int(old["logical_sectors"])
        with open(oracle, "wb") as f:
            f.truncate(5 << 39)
        remapctl("format", "--grow-limit", "3T", *BIG_MEM, oracle)
        want = dump(oracle)
        os.unlink(oracle)
        want_n = int(want["logical_sectors"])
        assert old_n // 8 < 2**29 < want_n // 8 and int(want["nr_segments"]) > 2**21
        dm_create("top", f"0 {old_n} remap {dev}")
        top = dm_path("top")
        ob = old_n // 8
        model = {0: 1, ob - 1: 1}
        write_gen(top, model, 1)
        os.truncate(img, 5 << 39)
        run(["losetup", "-c", dev])
        p = remapctl("grow", DM_PREFIX + "top")
        assert sectors(top) == want_n, p.stdout
        new = {ob - 1: 2, ob: 2, 2**29: 2, want_n // 8 - 1: 2}
        write_gen(top, new, 2)
        model.update(new)
        check_gen(top, model, "after the grow")
        dm_remove("top")
        d = dump(dev)
        for k in ("logical_sectors", "nr_segments", "device_blocks", "data_offset",
                  "ckpt_slot_blocks"):
            assert d[k] == want[k], k
        dm_create("top", f"0 {want_n} remap {dev}")
        check_gen(top, model, "after a reload")
        write_gen(top, {2**29 + 1: 3}, 3)
        model[2**29 + 1] = 3
        dm_remove("top")
        p = remapctl("check", dev, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        dm_create("top", f"0 {want_n} remap {dev}")
        check_gen(top, model, "after the check")
    finally:
        cleanup_dm()
        run(["losetup", "-d", dev], check=False)
        for f in (img, oracle):
            if os.path.exists(f):
                os.unlink(f)
