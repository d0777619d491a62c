# SPDX-License-Identifier: GPL-2.0-only
"""Randomized operations against a reference model (issue 40).

Each test runs one sequence: a device formatted with parameters the seed
picks (segment size, 64-bit block numbers, a map cache small enough to
evict, a grow limit), then DMR_OPS_STEPS operations drawn from the seed,
the way operators combine them: O_DIRECT writes and discards of random
extents, writes of whole segments (large segments, format 5), fsync,
power cuts (dm-flakey dropping every write, then a reload), clean remove and create with `remapctl check` between, reloads
of the same table, suspend/resume, the checkpoint and gc_collect
messages, GC watermark messages, growing the device below and then the
target, and the things that must be refused: a second mapped device over
an alias of the disk, and a table of two remap targets over one disk.

The model keeps, for every logical block written, its latest content and
the contents a power cut may leave (the one durable at the last completed
flush, and every one written since).  Invariants after every step:

- what reads back is what the model allows: exactly the latest content
  while the device lives, one of the allowed ones after a power cut;
- a refused operation changed nothing (the device still reads back, its
  table is unchanged);
- `remapctl check` exits 0 after every clean remove;
- the kernel logged no warning, oops or BUG.

The seed of sequence i is DMR_OPS_SEED (default 4000) + i, printed with
every step, so a failure is replayed with
  run-vm.sh OUT -- env DMR_OPS_SEED=S bash tests/vm/guest-integration.sh -k test_ops
Its counts (sequences, operations by kind) go to make check's counts.
"""
import os
import random
import time
from collections import Counter

import pytest

import kernel_log
from conftest import (BLOCK, DM_PREFIX, Kmsg, cleanup_dm, dm_create, dm_create_table,
                      dm_path, dm_remove, dm_set_table, dm_table, dump, read_blocks_direct,
                      remapctl, report_count, run, settle, status_fields,
                      write_blocks_direct)
from test_log import _pread, _pwrite, block, mmap_buf

SEED = int(os.environ.get("DMR_OPS_SEED", "4000"))
STEPS = int(os.environ.get("DMR_OPS_STEPS", "32"))
SEQUENCES = int(os.environ.get("DMR_OPS_SEQUENCES", "5"))
MIB = 1 << 20
ZERO = bytes(BLOCK)

TOTALS = Counter()


def cache_most(seg_blocks, cap=256):
    """dmr_map_cache_most() for map_cache 1 (256 pages): what a load may
    hold at once, the cache and the largest of a discard piece (half of
    it and two), a unit's data blocks (fewer than a segment's) and a
    unit's large segments' records (64, at most two pages each below 4 MiB
    segments; the writer keeps them out of units with data:
    dmr_unit_takes_data())."""
    return cap + max(cap // 2 + 2, seg_blocks, 2 * 64)


class Model:
    """What each written logical block may read back as.

    cur[lba]: the generation last written (0: zeroes, discarded);
    may[lba]: the generations a power cut may leave: the one durable at
    the last completed flush and every one written since.
    """

    def __init__(self):
        self.cur = {}
        self.may = {}

    def write(self, lba, gen):
        self.cur[lba] = gen
        self.may.setdefault(lba, {0}).add(gen)

    def flushed(self):
        self.may = {lba: {g} for lba, g in self.cur.items()}

    def crashed(self, lba, got):
        assert got in self.may.get(lba, {0}), \
            f"lba {lba}: read gen {got}, a power cut may leave only {sorted(self.may[lba])}"
        self.cur[lba] = got
        self.may[lba] = {got}


def gen_of(lba, data):
    """The generation block() wrote at lba, 0 for zeroes, None otherwise."""
    if data == ZERO:
        return 0
    head = data[:40].split(b" ")
    try:
        g = int(head[3])
    except (IndexError, ValueError):
        return None
    return g if data == block(lba, g) else None


class Seq:
    """One sequence: loop over a sparse file in the guest's /tmp, dm-flakey
    'opsu' over it (power cuts, growing), dm-remap 'opst' on top."""

    def __init__(self, seed):
        self.seed = seed
        self.rnd = random.Random(seed)
        self.model = Model()
        self.gen = 0
        self.count = Counter()
        r = self.rnd
        # 3 GiB with map_cache 1, pages leave: two sequences in five, so
        # that make check's five have some whatever the seed
        self.big = seed % 5 in (1, 3)
        self.wide = r.random() < 0.3
        self.seg = r.choice(["256K", "1M"])
        mib = 3072 if self.big else 96
        self.max_bytes = mib * MIB * 3 // 2  # the grow limit
        self.img = f"/tmp/dmrt-ops-{seed}.img"
        with open(self.img, "wb") as f:
            f.truncate(self.max_bytes)
        self.loop = run(["losetup", "-f", "--show", self.img]).stdout.strip()
        self.size = mib * MIB // 512
        self.flakey("up")
        fmt = ["format", "--force", "--segment-size", self.seg,
               "--grow-limit", str(self.max_bytes)]
        if self.wide:
            fmt.append("--wide")
        remapctl(*fmt, self.under)
        self.cache = self.big                # map_cache 1 in the table
        self.n = int(dump(self.under)["logical_sectors"]) // 8
        self.live = False
        self.create()
        self.log(f"sequence seed {seed}: {mib} MiB, segment {self.seg}, "
                 f"wide {self.wide}, map_cache {'1' if self.cache else 'off'}, "
                 f"{self.n} logical blocks")

    # --- the stack -------------------------------------------------
    @property
    def under(self):
        return dm_path("opsu")

    @property
    def top(self):
        return dm_path("opst")

    def log(self, msg):
        print(f"ops[{self.seed}] {msg}", flush=True)

    def flakey(self, state):
        feats = {"up": "", "cut": " 1 drop_writes"}[state]
        up, down = (1000, 0) if state == "up" else (0, 1000)
        dm_set_table("opsu", f"0 {self.size} flakey {self.loop} 0 {up} {down}{feats}")

    def create(self):
        """As an operator does: remapctl create, the size from the
        superblock (a table of a remembered length would grow a stale
        geometry at load, and hide it)."""
        remapctl("create", DM_PREFIX + "opst", self.under,
                 *(["--map-cache", "1"] if self.cache else []))
        n = int(run(["blockdev", "--getsz", self.top]).stdout) // 8
        assert n == self.n, f"the device loaded with {n} logical blocks, the model has {self.n}"
        self.live = True
        if self.cache:
            # the load and its replay held no more map pages than the
            # cache may (item 10: replay checkpoints to stay within it)
            held = status_fields("opst")["map_pages_peak"]
            most = cache_most(256 if self.seg == "1M" else 64)
            assert held <= most, \
                f"the load held {held} map pages at once, the cache at most {most}"
            self.count["cache_loads_checked"] += 1

    def remove(self):
        dm_remove("opst")
        self.live = False

    def teardown(self):
        cleanup_dm()
        run(["losetup", "-d", self.loop], check=False)
        if os.path.exists(self.img):
            os.unlink(self.img)

    # --- checks ----------------------------------------------------
    def verify(self, after_crash=False):
        """Every block the model knows reads back as it allows."""
        lbas = sorted(self.model.cur)
        i = 0
        while i < len(lbas):
            j = i
            while j + 1 < len(lbas) and lbas[j + 1] == lbas[j] + 1 and j - i < 255:
                j += 1
            data = _pread(self.top, lbas[i], j - i + 1)
            for k in range(i, j + 1):
                lba = lbas[k]
                got = gen_of(lba, data[(k - i) * BLOCK:(k - i + 1) * BLOCK])
                if after_crash:
                    assert got is not None, f"lba {lba}: content of no write"
                    self.model.crashed(lba, got)
                else:
                    assert got == self.model.cur[lba], \
                        f"lba {lba}: read gen {got}, model {self.model.cur[lba]}"
            i = j + 1
        self.count["blocks_verified"] += len(lbas)

    # --- operations ------------------------------------------------
    def extent(self, most=64):
        n = self.rnd.randint(1, most)
        # mostly a hot tenth of the device, so that blocks are overwritten
        span = self.n // 10 if self.rnd.random() < 0.7 else self.n
        lba = self.rnd.randrange(0, max(1, span - n))
        return lba, n

    def op_write(self):
        lba, n = self.extent()
        self.gen += 1
        _pwrite(self.top, lba, b"".join(block(x, self.gen) for x in range(lba, lba + n)))
        for x in range(lba, lba + n):
            self.model.write(x, self.gen)
        return f"write {lba}+{n} gen {self.gen}"

    def op_write_large(self):
        """Whole segments at segment boundaries (format 5's large
        segments), or a write from inside one segment past the end of the
        next (its middle large, its ends through a head); mostly in the
        hot tenth, so that large segments are emptied and reused."""
        sb = (256 if self.seg == "1M" else 64)
        nsegs = self.n // sb
        span = max(2, nsegs // 10 if self.rnd.random() < 0.7 else nsegs) - 1
        first = self.rnd.randrange(0, span) * sb
        if self.rnd.random() < 0.6:
            lba, n = first, sb * self.rnd.randint(1, 2)
        else:
            lba = first + self.rnd.randrange(1, sb)
            n = sb + self.rnd.randrange(sb, 2 * sb) - (lba - first)
        n = min(n, self.n - lba)
        self.gen += 1
        _pwrite(self.top, lba, b"".join(block(x, self.gen) for x in range(lba, lba + n)))
        for x in range(lba, lba + n):
            self.model.write(x, self.gen)
        return f"large write {lba}+{n} gen {self.gen}"

    def op_discard(self):
        lba, n = self.extent(256)
        run(["blkdiscard", "-o", str(lba * BLOCK), "-l", str(n * BLOCK), self.top])
        for x in range(lba, lba + n):
            if x in self.model.cur:
                self.model.write(x, 0)
        return f"discard {lba}+{n}"

    def op_fsync(self):
        fd = os.open(self.top, os.O_WRONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.model.flushed()
        return "fsync"

    def op_verify(self):
        self.verify()
        return "verify"

    def op_power_cut(self):
        self.flakey("cut")
        self.remove()
        self.flakey("up")
        self.create()
        self.verify(after_crash=True)
        return "power cut, reload, replay"

    def op_remove_check_create(self):
        self.remove()
        p = remapctl("check", self.under, check=False)
        assert p.returncode == 0, f"remapctl check after a clean remove:\n{p.stdout}\n{p.stderr}"
        self.model.flushed()       # a clean remove wrote everything
        self.create()
        return "remove, check, create"

    def op_reload(self):
        """The live table reloaded as dmsetup table prints it (with the
        watermarks the messages set)."""
        before = dm_table("opst")
        run(["dmsetup", "reload", DM_PREFIX + "opst", "--table", before])
        run(["dmsetup", "resume", DM_PREFIX + "opst"])
        assert dm_table("opst") == before, (dm_table("opst"), before)
        return "reload the same table"

    def op_suspend_resume(self):
        run(["dmsetup", "suspend", DM_PREFIX + "opst"])
        run(["dmsetup", "resume", DM_PREFIX + "opst"])
        return "suspend, resume"

    def op_checkpoint(self):
        run(["dmsetup", "message", DM_PREFIX + "opst", "0", "checkpoint"])
        return "checkpoint message"

    def op_gc_collect(self):
        p = run(["dmsetup", "message", DM_PREFIX + "opst", "0", "gc_collect"], check=False)
        return f"gc_collect message (rc {p.returncode})"

    def op_gc_marks(self):
        st = status_fields("opst")
        low = self.rnd.randint(st["gc_reserve"], st["gc_reserve"] + 4)
        high = low + self.rnd.randint(0, 4)
        a = run(["dmsetup", "message", DM_PREFIX + "opst", "0", "gc_high", str(high)],
                check=False)
        b = run(["dmsetup", "message", DM_PREFIX + "opst", "0", "gc_low", str(low)],
                check=False)
        st = status_fields("opst")
        if a.returncode == 0 and b.returncode == 0:
            assert (st["gc_low"], st["gc_high"]) == (low, high), (low, high, st)
        return f"gc_high {high} (rc {a.returncode}), gc_low {low} (rc {b.returncode})"

    def op_grow(self):
        if self.size * 512 >= self.max_bytes:
            return None
        step = self.rnd.choice([8, 16, 32]) * MIB // 512
        self.size = min(self.max_bytes // 512, self.size + step)
        self.flakey("up")
        remapctl("grow", DM_PREFIX + "opst")
        n = int(run(["blockdev", "--getsz", self.top]).stdout) // 8
        assert n >= self.n, (n, self.n)
        grew = n - self.n
        self.n = n
        # the new end reads zeroes and takes a write
        assert _pread(self.top, n - 1) == ZERO
        return f"grow the disk and the target by {grew} blocks to {n}"

    def refused_unchanged(self, what, p, table_before):
        assert p.returncode != 0, f"{what} was not refused"
        assert dm_table("opst") == table_before, (dm_table("opst"), table_before)
        self.verify()
        return f"{what}: refused"

    def op_grow_torn(self):
        """A grow, then the state of a crash between its two superblock
        writes: the copy it wrote second (the one in use before) holds
        the old superblock again, while checkpoints and units of the grown
        device follow.  The next load must make both copies current."""
        if self.size * 512 >= self.max_bytes:
            return None
        self.remove()
        in_use = int(dump(self.under)["using_copy"])
        old = read_blocks_direct(self.under, in_use)
        self.create()
        what = self.op_grow()
        self.op_write()
        self.op_checkpoint()
        self.remove()
        write_blocks_direct(self.under, in_use, old)
        self.model.flushed()       # the clean remove wrote everything
        self.create()
        return f"{what}; torn: superblock copy {in_use} old again, reload"

    def op_damage_sb(self):
        """The superblock copy a load would use damaged while the device is
        removed: the next load must do as well with the other one."""
        self.remove()
        c = int(dump(self.under)["using_copy"])
        blk = bytearray(read_blocks_direct(self.under, c))
        blk[self.rnd.randrange(16, 512)] ^= 0x20
        write_blocks_direct(self.under, c, bytes(blk))
        self.model.flushed()
        self.create()
        return f"superblock copy {c} damaged, reload"

    def op_alias_refused(self):
        """A second mapped device over an alias of the disk (dm-linear
        from block 0 of the loop device, a path that is not 'opsu')."""
        before = dm_table("opst")
        dm_create("opsa", f"0 {self.size} linear {self.loop} 0")
        try:
            p = dm_create("opsx", f"0 {self.n * 8} remap {dm_path('opsa')}", check=False)
        finally:
            run(["dmsetup", "remove", "--retry", DM_PREFIX + "opsx"], check=False)
            dm_remove("opsa")
        return self.refused_unchanged("a second device over an alias", p, before)

    def op_two_targets_refused(self):
        """A table of two remap targets over the one disk, while the device
        is removed (so no other instance holds it)."""
        self.remove()
        half = (self.n // 2) * 8
        p = dm_create_table("opsy", [f"0 {half} remap {self.under}",
                                     f"{half} {half} remap {self.under}"], check=False)
        run(["dmsetup", "remove", "--retry", DM_PREFIX + "opsy"], check=False)
        self.create()
        # created again, it has the table create gives (what messages set,
        # gc_low and gc_high, is not in it): the data is what is checked
        return self.refused_unchanged("a table of two remap targets over one disk", p,
                                      dm_table("opst"))

    def op_cache_crash(self):
        """As an operator short of memory after a crash: the device run
        without the map cache (a clean remove, create without it), a
        discard of three fifths of it or more (fstrim, blkdiscard), made
        durable, the power cut before the next checkpoint, then the reload
        with map_cache 1, whose replay touches more pages than the cache
        holds (768 pages on 3 GiB, 1,536 --wide; the cache 256)."""
        if not self.big:
            return None
        self.remove()
        self.model.flushed()
        self.cache = False
        self.create()
        n = self.rnd.randint(self.n * 3 // 5, self.n)
        lba = self.rnd.randrange(0, self.n - n + 1)
        # a block in every map page of the range, so that its pages hold
        # entries (a page never written is no memory, read or not)
        per_page = 512 if self.wide else 1024
        self.gen += 1
        fill = range(lba + self.rnd.randrange(per_page), lba + n, per_page)
        buf = mmap_buf(1)
        fd = os.open(self.top, os.O_WRONLY | os.O_DIRECT)
        try:
            for x in fill:
                buf.seek(0)
                buf.write(block(x, self.gen))
                assert os.pwritev(fd, [buf], x * BLOCK) == BLOCK
        finally:
            os.close(fd)
        for x in fill:
            self.model.write(x, self.gen)
        run(["blkdiscard", "-o", str(lba * BLOCK), "-l", str(n * BLOCK), self.top])
        for x in self.model.cur:
            if lba <= x < lba + n:
                self.model.write(x, 0)
        self.op_fsync()
        self.flakey("cut")
        self.remove()
        self.flakey("up")
        self.cache = True
        self.create()
        self.verify(after_crash=True)
        return (f"without the cache: a block in each of {len(fill)} map pages, discard "
                f"{lba}+{n}, fsync, power cut, reload with map_cache 1")

    OPS = (("write", 30), ("write_large", 10), ("discard", 6), ("fsync", 10), ("verify", 4),
           ("power_cut", 7), ("remove_check_create", 5), ("reload", 4),
           ("suspend_resume", 4), ("checkpoint", 4), ("gc_collect", 3),
           ("gc_marks", 3), ("grow", 3), ("grow_torn", 5), ("damage_sb", 5),
           ("alias_refused", 3), ("two_targets_refused", 3), ("cache_crash", 5))

    def step(self, i):
        names = [n for n, _ in self.OPS]
        weights = [w for _, w in self.OPS]
        while True:
            name = self.rnd.choices(names, weights)[0]
            mark = Kmsg()
            what = getattr(self, "op_" + name)()
            if what is not None:
                break
        self.count[name] += 1
        self.log(f"step {i}: {what}")
        bad = kernel_log.problems(mark.new())
        assert not bad, f"step {i} ({what}): kernel reported problems:\n" + "\n".join(bad)


@pytest.mark.parametrize("i", range(SEQUENCES), ids=lambda i: f"seq{i}")
def test_ops(i):
    seq = Seq(SEED + i)
    t0 = time.monotonic()
    try:
        for k in range(STEPS):
            seq.step(k)
        # the end: everything acknowledged reads back, a clean remove
        # checks clean
        seq.verify()
        seq.op_remove_check_create()
        seq.verify()
        seq.remove()
    finally:
        seq.teardown()
        settle()
    TOTALS.update(seq.count)
    TOTALS["sequences"] += 1
    TOTALS["steps"] += STEPS
    ops = ", ".join(f"{k} {v}" for k, v in sorted(TOTALS.items())
                    if k not in ("sequences", "steps"))
    report_count(f"operations test: {TOTALS['sequences']} sequences, {TOTALS['steps']} "
                 f"operations from seed {SEED} ({time.monotonic() - t0:.0f} s for "
                 f"seed {SEED + i}): {ops}")
