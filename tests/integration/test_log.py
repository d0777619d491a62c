# SPDX-License-Identifier: GPL-2.0-only
"""The log-structured data path: persistence, flush cost, discard, crash
recovery, power cut, ENOSPC and metadata write errors."""
import contextlib
import json
import mmap
import os
import random
import subprocess

import pytest

from conftest import (BLOCK, DM_PREFIX, MNT, REPO, Kmsg, cleanup_dm, dm_create, dm_path,
                      dm_set_table, dm_remove, dump, loop_dev, md_stop, remapctl, run,
                      sectors, status_fields, udev_paused)


def mmap_buf(n):
    """A page-aligned buffer, as O_DIRECT needs."""
    return mmap.mmap(-1, n * BLOCK)


def _pread(dev, lba, n=1):
    """O_DIRECT read of n blocks (aligned buffer via mmap)."""
    buf = mmap_buf(n)
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    try:
        got = os.preadv(fd, [buf], lba * BLOCK)
    finally:
        os.close(fd)
    assert got == n * BLOCK
    return bytes(buf)


def _pwrite(dev, lba, data, sync=False):
    buf = mmap_buf(len(data) // BLOCK)
    buf.write(data)
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        assert os.pwritev(fd, [buf], lba * BLOCK) == len(data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def same(got, want):
    """got == want, without pytest diffing megabytes of random bytes
    (which takes minutes in the VM) when they differ."""
    if got == want:
        return True
    first = next((i for i in range(min(len(got), len(want)))
                  if got[i] != want[i]), min(len(got), len(want)))
    print(f"differ: {len(got)} vs {len(want)} bytes, first at byte {first} "
          f"(block {first // BLOCK})")
    return False


def block(lba, gen):
    """Recognisable content of logical block lba, generation gen."""
    head = f"lba {lba} gen {gen} ".encode()
    return (head * (BLOCK // len(head) + 1))[:BLOCK]


def blocks(lbas, gen):
    """block() of each of lbas, concatenated."""
    return b"".join(block(lba, gen) for lba in lbas)


class Stack:
    """dm-flakey 'under' over a ramdisk, dm-remap 'top' over it.

    The flakey layer lets a test cut power: from then on writes are
    dropped (but reported done), as if the machine lost power; then the
    remap target is removed and recreated over a working stack.
    """

    def __init__(self, ram, fmt_args=()):
        self.ram = ram
        self.size = sectors(ram)
        self.flakey("up")
        remapctl("format", *fmt_args, self.under)
        self.info = dump(self.under)
        self.n = int(self.info["logical_sectors"])
        self.create()

    @property
    def under(self):
        return dm_path("under")

    @property
    def top(self):
        return dm_path("top")

    def flakey(self, state):
        feats = {"up": "", "cut": " 1 drop_writes", "error": " 1 error_writes"}[state]
        up, down = (1000, 0) if state == "up" else (0, 1000)
        self.set_under(f"0 {self.size} flakey {self.ram} 0 {up} {down}{feats}")

    def set_under(self, table):
        """Create the 'under' device with table, or reload it live."""
        dm_set_table("under", table)

    def create(self, opts=""):
        dm_create("top", f"0 {self.n} remap {self.under} {opts}".strip())

    def crash(self):
        """Power cut: drop every later write, tear the target down."""
        self.flakey("cut")
        dm_remove("top")
        self.flakey("up")

    def reload(self):
        self.crash_free_remove()
        self.create()

    def crash_free_remove(self):
        dm_remove("top")

    def status(self):
        return status_fields("top")

    def remove_and_check(self):
        """Remove the target cleanly; `remapctl check` finds the device below
        clean."""
        dm_remove("top")
        p = remapctl("check", self.under, check=False)
        assert p.returncode == 0, p.stdout + p.stderr


@pytest.fixture
def stack(ram):
    s = Stack(ram)
    yield s


def test_data_persists_across_clean_reload(stack):
    rnd = random.Random(1)
    lbas = rnd.sample(range(stack.n // 8), 300)
    for lba in lbas:
        _pwrite(stack.top, lba, block(lba, 1))
    stack.reload()
    st = stack.status()
    assert st["replayed_units"] == 0          # clean shutdown: nothing to replay
    for lba in lbas:
        assert _pread(stack.top, lba) == block(lba, 1)


def test_unwritten_blocks_read_as_zeroes(stack):
    assert _pread(stack.top, 0, 64) == bytes(64 * BLOCK)
    _pwrite(stack.top, 10, block(10, 1))
    assert _pread(stack.top, 9, 3) == bytes(BLOCK) + block(10, 1) + bytes(BLOCK)


def test_large_write_is_one_log_write_and_reads_back(stack):
    data = os.urandom(256 * 1024)
    _pwrite(stack.top, 4096, data, sync=True)
    st = stack.status()
    assert st["user_blocks"] == 64
    # one summary for the whole request, not one per block
    assert st["device_blocks"] <= 64 + 2
    assert _pread(stack.top, 4096, 64) == data    # served from memory or device


def test_fsync_per_write_costs_one_summary_block(stack):
    n = 30
    for i in range(n):
        _pwrite(stack.top, 100 + i, block(100 + i, 1), sync=True)
    st = stack.status()
    assert st["flushes"] >= n
    assert st["short_units"] >= n
    # each fsync costs its data block plus one summary block
    assert st["device_blocks"] <= 2 * n + 2
    # and those units share segments: nowhere near a segment per fsync
    # (each of the four log heads holds one)
    assert st["segments"] - st["free_segments"] <= 4


def _member_reads(md_dev):
    """Read I/Os of md array md_dev's members, summed."""
    base = f"/sys/block/{os.path.basename(md_dev)}/slaves"
    total = 0
    for m in os.listdir(base):
        with open(f"{base}/{m}/stat") as f:
            total += int(f.read().split()[0])
    return total


@pytest.mark.parametrize("fill", [True, False], ids=["stripe-fill", "no-stripe-fill"])
def test_fsync_on_raid5_writes_whole_stripes(fill):
    """A flush's short unit is padded to the end of its stripe of the
    array below (issue 41, goal 3): on md RAID-5 over 4 loop devices (64
    KiB chunk, 192 KiB stripes; brd counts no I/O in its stat, loop
    does), 4 KiB writes each followed by an fsync make md read nothing
    from its members; with no_stripe_fill the same writes make it read
    (old data and parity, for a write that leaves part of a stripe it has
    not cached).  (The first synced write after a load is left out of
    the count: md read during it in every run, for some first I/O of
    dm-remap's after a load that is not a log write; not looked into.)  After
    a clean reload between two batches the head goes
    on mid-stripe with nothing known after it; then a power cut: every
    synced block reads back and remapctl check is clean."""
    md = "/dev/md/dmrt-fsync"
    # no periodic checkpoint inside the measured writes: its small
    # writes are not whole stripes either
    opts = "2 checkpoint_interval 86400" if fill else \
        "3 checkpoint_interval 86400 no_stripe_fill"
    with contextlib.ExitStack() as es:
        devs = [es.enter_context(contextlib.contextmanager(loop_dev)(f"r5-{i}", 32 << 20))
                for i in range(4)]
        try:
            run(["mdadm", "--create", md, "--run", "--quiet", "--level=5",
                 "--raid-devices=4", "--chunk=64", "--assume-clean", "--metadata=1.2",
                 *devs], input="y\n")
            md_dev = os.path.realpath(md)
            s = Stack.__new__(Stack)
            s.ram, s.size = md_dev, sectors(md_dev)
            s.flakey("up")
            remapctl("format", "--force", s.under)
            s.info = dump(s.under)
            assert s.info["stripe_blocks"] == "48"
            s.n = int(s.info["logical_sectors"])
            s.create(opts)
            # n synced writes, 2 blocks of log each: with the padding so
            # many that the heads go on into new segments (288 blocks);
            # without it a few show md's reads
            n = 400 if fill else 40
            lbas = random.Random(7).sample(range(s.n // 8), 2 * n + 1)
            with udev_paused():
                # not counted: md reads during the first synced write
                # after a load (see the docstring)
                _pwrite(s.top, lbas[-1], block(lbas[-1], 1), sync=True)
                st0 = s.status()
                r0 = _member_reads(md_dev)
                for lba in lbas[:n]:
                    _pwrite(s.top, lba, block(lba, 1), sync=True)
                reads = _member_reads(md_dev) - r0
                st1 = s.status()
            assert st1["checkpoint_seq"] == st0["checkpoint_seq"]
            # (a unit that ends its segment is not a short one)
            assert st1["short_units"] - st0["short_units"] >= n - 8
            assert not fill or st1["device_blocks"] - st0["device_blocks"] > 2 * 288
            print(f"md member reads for {n} synced 4 KiB writes: {reads}")
            if fill:
                # 0 in every run on an idle machine; 82 of 400 once, in a
                # cold-cache CI run with a kernel build beside the guest
                # (not understood yet: md's stripe cache under load?), so
                # a bound: without the padding it is 0.68-0.75 per write
                assert reads * 2 < n, reads
            else:
                assert reads > 0
            dm_remove("top")            # clean: the heads go on mid-stripe
            s.create(opts)
            for lba in lbas[n:2 * n:10]:
                _pwrite(s.top, lba, block(lba, 2), sync=True)
            s.crash()
            s.create(opts)
            for i, lba in enumerate(lbas):
                gen = 0 if n <= i < 2 * n and (i - n) % 10 else 2 if n <= i < 2 * n else 1
                want = bytes(BLOCK) if not gen else block(lba, gen)
                assert same(_pread(s.top, lba), want), lba
            s.remove_and_check()
        finally:
            cleanup_dm()
            md_stop(md, devs)


def test_overwrites_read_newest(stack):
    for gen in range(1, 6):
        _pwrite(stack.top, 77, block(77, gen))
        assert _pread(stack.top, 77) == block(77, gen)
    stack.reload()
    assert _pread(stack.top, 77) == block(77, 5)


def test_discard_persists_across_reload_and_crash(stack):
    for lba in range(200, 216):
        _pwrite(stack.top, lba, block(lba, 1))
    _pwrite(stack.top, 0, block(0, 1), sync=True)
    run(["blkdiscard", "-o", str(204 * BLOCK), "-l", str(8 * BLOCK), stack.top])
    assert _pread(stack.top, 204, 8) == bytes(8 * BLOCK)
    stack.reload()
    assert _pread(stack.top, 204, 8) == bytes(8 * BLOCK)
    assert _pread(stack.top, 203) == block(203, 1)
    # discard, fsync, crash: the discard is replayed from the log
    run(["blkdiscard", "-o", str(200 * BLOCK), "-l", str(4 * BLOCK), stack.top])
    _pwrite(stack.top, 1, block(1, 1), sync=True)
    stack.crash()
    stack.create()
    assert stack.status()["replayed_units"] >= 1
    assert _pread(stack.top, 200, 12) == bytes(12 * BLOCK)
    assert _pread(stack.top, 212) == block(212, 1)


def test_crash_keeps_every_fsynced_write(stack):
    rnd = random.Random(7)
    acked = {}
    for rounds in range(5):
        for _ in range(40):
            lba = rnd.randrange(stack.n // 16)
            acked[lba] = rounds + 1
            _pwrite(stack.top, lba, block(lba, rounds + 1))
        _pwrite(stack.top, stack.n // 16 + rounds, block(0, 0), sync=True)
    ckpt_before = stack.status()["checkpoint_seq"]
    log = Kmsg()
    stack.crash()
    stack.create()
    st = stack.status()
    assert st["replayed_units"] >= 1
    assert "recovery" in log.text()
    assert st["checkpoint_seq"] > ckpt_before   # recovery wrote a checkpoint
    for lba, gen in acked.items():
        assert _pread(stack.top, lba) == block(lba, gen), lba
    # and it keeps working after recovery, across another clean reload
    _pwrite(stack.top, 5, block(5, 9), sync=True)
    stack.reload()
    assert stack.status()["replayed_units"] == 0
    assert _pread(stack.top, 5) == block(5, 9)
    for lba, gen in acked.items():
        assert _pread(stack.top, lba) == block(lba, gen), lba


def test_crash_after_checkpoint_replays_only_the_tail(stack):
    for lba in range(0, 50):
        _pwrite(stack.top, lba, block(lba, 1))
    run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"])
    for lba in range(25, 30):
        _pwrite(stack.top, lba, block(lba, 2), sync=True)
    stack.crash()
    stack.create()
    st = stack.status()
    assert 1 <= st["replayed_units"] <= 5
    for lba in range(0, 50):
        assert _pread(stack.top, lba) == block(lba, 2 if 25 <= lba < 30 else 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_power_cut_at_random_point(ram, seed):
    """Writes acknowledged by a completed fsync survive a cut anywhere."""
    s = Stack(ram)
    rnd = random.Random(seed)
    acked, pending = {}, {}
    cut_after = rnd.randrange(50, 400)
    for i in range(cut_after):
        lba = rnd.randrange(2048)
        pending[lba] = i
        _pwrite(s.top, lba, block(lba, i))
        if rnd.random() < 0.1:
            _pwrite(s.top, 4000, block(4000, i), sync=True)
            acked.update(pending)
            pending.clear()
        if rnd.random() < 0.02:
            run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"])
            acked.update(pending)
            pending.clear()
    s.crash()
    s.create()
    for lba, gen in acked.items():
        if lba in pending:
            # written again after the last fsync: old or new, never garbage
            got = _pread(s.top, lba)
            assert got in (block(lba, gen), block(lba, pending[lba])), lba
        else:
            assert _pread(s.top, lba) == block(lba, gen), lba
    for lba in pending:
        if lba not in acked:
            got = _pread(s.top, lba)
            assert got in (bytes(BLOCK), block(lba, pending[lba])), lba


def test_metadata_write_error_enters_failed_mode(stack):
    _pwrite(stack.top, 3, block(3, 1), sync=True)
    stack.flakey("error")
    fd = os.open(stack.top, os.O_WRONLY | os.O_DIRECT)
    buf = mmap_buf(1)
    buf.write(block(4, 1))
    try:
        os.pwritev(fd, [buf], 4 * BLOCK)
        with pytest.raises(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
    st = stack.status()
    assert st["mode"] == "failed" and st["first_error"] == -5
    stack.flakey("up")
    # never silently back to writing, reads still served
    with pytest.raises(OSError):
        _pwrite(stack.top, 5, block(5, 1), sync=True)
    assert _pread(stack.top, 3) == block(3, 1)
    assert stack.status()["mode"] == "failed"
    stack.crash_free_remove()
    stack.create()
    assert _pread(stack.top, 3) == block(3, 1)


def test_rewrites_across_heads_replay_in_write_order(stack):
    """A block rewritten soon goes to the hot log head, one written once to
    the cold head; a unit is numbered when it is closed.  If an older copy
    of a block sat in one head's open unit while a newer copy (or a
    discard) went to the other, the older unit could be numbered last and
    replay would bring the older copy back after a crash, even though the
    newer one was flushed.  Random rewrites and discards of a few blocks,
    one fsync, a power cut: every block reads what it held at the fsync."""
    rng = random.Random(5)
    lbas = list(range(300, 340))
    model = {}
    gen = 0
    for _ in range(400):
        gen += 1
        lba = rng.choice(lbas)
        if rng.random() < 0.08:
            n = rng.randrange(1, 4)
            run(["blkdiscard", "-o", str(lba * BLOCK), "-l", str(n * BLOCK), stack.top])
            for b in range(lba, lba + n):
                model[b] = bytes(BLOCK)
            continue
        n = rng.randrange(1, 3)
        _pwrite(stack.top, lba, blocks(range(lba, lba + n), gen))
        for b in range(lba, lba + n):
            model[b] = block(b, gen)
    _pwrite(stack.top, 1000, block(1000, 1), sync=True)     # the fsync
    st = stack.status()
    stack.crash()
    stack.create()
    bad = [b for b in sorted(model) if not same(_pread(stack.top, b), model[b])]
    assert not bad, (bad[:10], st)


def test_overwrites_beyond_raw_size_never_fail(ram):
    """Before GC a device took about its raw size in writes, then every
    write failed with ENOSPC.  Now the full device is overwritten four
    times over (more than twice its raw size): every write succeeds, GC
    ran and freed segments, and the last generation reads back, before
    and after a reload.  On a 64 MiB slice of the ramdisk (63 segments
    of 1 MiB, 47.7 MiB logical: four rounds write 3 times the segments'
    size): the size is not the point, and each round writes the whole
    device from Python."""
    dm_create("base", f"0 {64 << 11} linear {ram} 0")
    s = Stack(dm_path("base"))
    n_blocks = s.n // 8
    chunk = 64
    rounds = 4
    rng = random.Random(11)
    starts = list(range(0, n_blocks - chunk + 1, chunk))
    for gen in range(1, rounds + 1):
        # the first round fills in order; later ones in random order, so
        # segments die partly and GC must move what is still valid
        order = starts if gen == 1 else rng.sample(starts, len(starts))
        for i, lba in enumerate(order):
            _pwrite(s.top, lba, blocks(range(lba, lba + chunk), gen),
                    sync=i % 16 == 0)
    st = s.status()
    assert st["mode"] == "write" and st["first_error"] == 0, st
    assert st["gc_runs"] > 0 and st["segments_freed"] > 0, st
    assert st["user_blocks"] * BLOCK > 2 * st["segments"] * st["segment_sectors"] * 512
    last = (n_blocks // chunk) * chunk
    for lba in range(0, last, 997):
        assert same(_pread(s.top, lba), block(lba, rounds)), lba
    s.reload()
    for lba in range(0, last, 997):
        assert same(_pread(s.top, lba), block(lba, rounds)), lba


@pytest.mark.parametrize("job", ["verify-randwrite", "verify-seqmix"])
def test_fio_verify_across_reload_and_crash(stack, job):
    """The verify jobs of tests/fio: write + verify, then verify only after a
    clean reload and after a power cut (the job ends with an fsync)."""
    path = str(REPO / "tests" / "fio" / f"{job}.fio")

    def fio(verify_only):
        env = dict(os.environ, DEV=stack.top, SIZE="16M", RUNTIME="0",
                   VERIFY_ONLY=str(verify_only))
        p = subprocess.run(["fio", "--output-format=json", path], env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr
        j = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
        assert j["error"] == 0 and j["read"]["io_bytes"] >= 16 << 20
        return j

    assert fio(0)["write"]["io_bytes"] >= 16 << 20
    stack.reload()
    assert stack.status()["replayed_units"] == 0
    fio(1)      # (fio counts the writes it skips in io_bytes)
    stack.crash()
    stack.create()
    fio(1)
    # and the check has teeth: a block overwritten behind fio's back fails it
    _pwrite(stack.top, 5, block(5, 1), sync=True)
    env = dict(os.environ, DEV=stack.top, SIZE="16M", RUNTIME="0", VERIFY_ONLY="1")
    p = subprocess.run(["fio", path], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "verify" in p.stdout + p.stderr


@pytest.fixture
def loop512():
    """A 512 MiB sparse loop device (mkfs.xfs wants more than 300 MB)."""
    yield from loop_dev("loop", 512 << 20)


@pytest.mark.parametrize("fs", ["ext4", "xfs"])
def test_filesystem_tree_survives_crash(loop512, fs):
    stack = Stack(loop512)
    mkfs = ["mkfs.ext4", "-q", "-F"] if fs == "ext4" else ["mkfs.xfs", "-q", "-f"]
    run(mkfs + [stack.top])
    os.makedirs(MNT, exist_ok=True)
    run(["mount", stack.top, MNT])
    try:
        for d in range(5):
            os.makedirs(f"{MNT}/d{d}")
            for i in range(20):
                with open(f"{MNT}/d{d}/f{i}", "wb") as f:
                    f.write(block(d * 100 + i, 1) * (i + 1))
        run(["sync"])
    finally:
        run(["umount", MNT])
    stack.crash()
    stack.create()
    check = ["e2fsck", "-fn", stack.top] if fs == "ext4" else \
        ["xfs_repair", "-n", stack.top]
    p = run(check, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    run(["mount", stack.top, MNT])
    try:
        for d in range(5):
            for i in range(20):
                with open(f"{MNT}/d{d}/f{i}", "rb") as f:
                    assert f.read() == block(d * 100 + i, 1) * (i + 1)
    finally:
        run(["umount", MNT])


def test_reads_racing_overwrites_see_whole_blocks(stack):
    """A read racing an overwrite returns the old or the new block, whole.

    Each generation of block 9 is followed by a segment's worth of other
    data, so block 9 keeps moving from the open segment (served from
    memory) to the device (remapped straight down) while it is read.
    """
    import threading
    gens = 30
    valid = {block(9, g) for g in range(gens + 1)} | {bytes(BLOCK)}
    filler = os.urandom(256 * BLOCK)
    stop = threading.Event()
    bad, reads = [], [0]

    def reader():
        while not stop.is_set():
            got = _pread(stack.top, 9)
            reads[0] += 1
            if got not in valid:
                bad.append(got[:32])
    t = threading.Thread(target=reader)
    t.start()
    try:
        for g in range(1, gens + 1):
            _pwrite(stack.top, 9, block(9, g))
            _pwrite(stack.top, 1024, filler)
    finally:
        stop.set()
        t.join()
    assert not bad, bad[:3]
    assert reads[0] > gens
    assert _pread(stack.top, 9) == block(9, gens)


def test_reads_while_a_full_segment_is_written_see_the_new_data(ram):
    """A segment that has just filled is written in the background (the
    writer's second stage); until that write is done its blocks must come
    from memory, never from the device, where they are not yet.

    dm-delay under dm-remap holds every write for 300 ms, so a segment is
    still in flight when it is read back.  Each round writes exactly a
    segment's worth of fresh data (format starts the log at a segment
    boundary), which fills the open segment and sends it to the second
    stage, and reads it back at once: one block through the map() fast
    path, then all of it.
    """
    slow = dm_path("slow")
    dm_create("slow", f"0 {sectors(ram)} delay {ram} 0 0 {ram} 0 300")
    remapctl("format", slow)
    n = int(dump(slow)["logical_sectors"])
    dm_create("top", f"0 {n} remap {slow}")
    top = dm_path("top")
    seg_blocks = status_fields("top")["segment_sectors"] // 8
    per_round = seg_blocks - 1          # the summary takes one block
    mid = per_round // 2
    data = b""
    for r in range(4):
        lba = r * seg_blocks
        data = os.urandom(per_round * BLOCK)
        _pwrite(top, lba, data)
        assert _pread(top, lba + mid) == data[mid * BLOCK:(mid + 1) * BLOCK], r
        assert same(_pread(top, lba, per_round), data), r
    st = status_fields("top")
    assert st["device_blocks"] >= 3 * seg_blocks    # the segments did fill
    dm_remove("top")
    dm_create("top", f"0 {n} remap {slow}")
    assert same(_pread(top, 3 * seg_blocks, per_round), data)


def test_failed_segment_write_keeps_its_data_readable(stack):
    """A full segment whose background write fails: the target goes to
    failed mode, the next fsync reports the error, and the acknowledged
    blocks of that segment are still read back (from memory; the device
    does not hold them), never stale data from the device."""
    seg_blocks = stack.status()["segment_sectors"] // 8
    # the first write after a load marks the clean checkpoint not clean
    # (rule 7): let that happen while the device works; the fsynced unit
    # takes blocks 0-1, and the data fills blocks 3 to the segment end
    _pwrite(stack.top, seg_blocks + 100, block(seg_blocks + 100, 1), sync=True)
    per_round = seg_blocks - 3
    stack.flakey("error")
    data = os.urandom(per_round * BLOCK)
    _pwrite(stack.top, 0, data)         # acknowledged; its segment write fails
    with pytest.raises(OSError):
        _pwrite(stack.top, seg_blocks + 7, block(seg_blocks + 7, 1), sync=True)
    st = stack.status()
    assert st["mode"] == "failed" and st["first_error"] == -5
    stack.flakey("up")
    assert _pread(stack.top, 5) == data[5 * BLOCK:6 * BLOCK]   # the map() path
    assert same(_pread(stack.top, 0, per_round), data)
