# SPDX-License-Identifier: GPL-2.0-only
"""Faults from below while fio writes and verifies.

dm-remap sits on 'under', a dm device over a small base whose table has
one line per region of the format (superblocks, checkpoint slots, data
segments); a fault is a live reload of one region's line:

  error_writes   dm-flakey, always down, failing every write (reads pass)
  error          dm-error: every read and write fails
  gone           the whole device is dm-error (a pulled disk)

Before the fault the lower half of the logical space is written with a
known generation and fsynced (acknowledged by a completed flush); fio
writes the upper half with crc32c verify headers, verifying as it goes.
Expected for every fault: the errors reach the caller as EIO or the
target enters its failed mode (status), no oops and no hang (the autouse
fixture fails a test whose run made the kernel warn); fio never reports a
verify mismatch (only I/O errors); after the fault is cleared and the
target removed, remapctl check finds the device clean, and after it is
created again every acknowledged block is intact.
"""
import errno
import fcntl
import os
import re
import struct
import subprocess
import time

import pytest

from conftest import (BLOCK, DM_PREFIX, REMAPCTL, Kmsg, dev_sha256, dm_create,
                      dm_set_table, dm_remove, dump, mem_total_bytes, remapctl,
                      report_count, run, status_fields)
from test_gc import small_base
from test_log import Stack, _pread, _pwrite, block, blocks

SEG_SIZE = "256K"
COUNTS = {"faults": 0, "verify_errors": 0, "acked_checked": 0}


class Faulty(Stack):
    """base -> 'under' (region table) -> 'top' (dm-remap); test_log's
    Stack but for the table under."""

    def __init__(self, ram):
        self.base = small_base(ram, 32)
        remapctl("format", "--segment-size", SEG_SIZE, self.base)
        info = dump(self.base)
        blk = 8                                  # sectors per block
        self.regions = {
            "sb": (0, int(info["ckpt_offset"]) * blk),
            "ckpt": (int(info["ckpt_offset"]) * blk, int(info["data_offset"]) * blk),
            "data": (int(info["data_offset"]) * blk, int(info["device_blocks"]) * blk),
        }
        self.n = int(info["logical_sectors"])
        self.nr_blocks = self.n // 8
        self.set_under({})
        self.create()

    def table(self, faults):
        if faults.get("all") == "gone":
            return [f"0 {self.regions['data'][1]} error"]
        lines = []
        for name, (start, end) in self.regions.items():
            kind = faults.get(name, "ok")
            n = end - start
            if kind == "ok":
                lines.append(f"{start} {n} linear {self.base} {start}")
            elif kind == "error_writes":
                lines.append(f"{start} {n} flakey {self.base} {start} 0 1000 1 error_writes")
            elif kind == "error":
                lines.append(f"{start} {n} error")
            else:
                raise ValueError(kind)
        return lines

    def set_under(self, faults):
        dm_set_table("under", "\n".join(self.table(faults)))
        if faults:
            COUNTS["faults"] += 1

    def create(self, check=True):
        return dm_create("top", f"0 {self.n} remap {self.under}", check=check)

    def acked_half(self, gen=1):
        """Write the lower half with generation gen and fsync it."""
        half = self.nr_blocks // 2
        for lba in range(0, half, 256):
            n = min(256, half - lba)
            _pwrite(self.top, lba, blocks(range(lba, lba + n), gen), sync=lba + n >= half)
        return half

    def fio(self, seconds=10):
        """fio on the upper half: random 4 KiB writes with crc32c headers,
        verifying a backlog as it goes."""
        half = self.nr_blocks // 2 * BLOCK
        return subprocess.Popen(
            ["fio", "--name=upper", f"--filename={self.top}", f"--offset={half}",
             f"--size={half // 2}", "--rw=randwrite", "--bs=4k", "--direct=1",
             "--ioengine=libaio", "--iodepth=8", "--verify=crc32c", "--verify_backlog=64",
             "--verify_state_save=0", "--time_based", f"--runtime={seconds}",
             "--randrepeat=0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def check_acked(self, half, gen=1):
        bad = 0
        for lba in range(0, half, 256):
            n = min(256, half - lba)
            got = _pread(self.top, lba, n)
            want = blocks(range(lba, lba + n), gen)
            if got != want:
                bad += sum(got[i * BLOCK:(i + 1) * BLOCK] != want[i * BLOCK:(i + 1) * BLOCK]
                           for i in range(n))
        COUNTS["acked_checked"] += half
        return bad


def fio_result(proc, timeout=300):
    out, _ = proc.communicate(timeout=timeout)
    verify = re.findall(r"verify: bad|bad magic header|bad header|verify failed", out)
    COUNTS["verify_errors"] += len(verify)
    return proc.returncode, out, verify


def recover_and_verify(f, half):
    """Clear every fault, remove the target, check, recreate, verify."""
    f.set_under({})
    dm_remove("top")
    p = subprocess.run([REMAPCTL, "check", f.under], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    f.create()
    st = status_fields("top")
    assert st["mode"] == "write" and st["first_error"] == 0, st
    bad = f.check_acked(half)
    assert bad == 0, f"{bad} acknowledged blocks lost or changed"


def io_fails(fn):
    try:
        fn()
    except OSError as e:
        return e.errno
    return 0


@pytest.mark.parametrize("fault", ["data-write", "ckpt-write", "data-read", "gone"])
def test_fault_under_fio(ram, fault):
    f = Faulty(ram)
    half = f.acked_half()
    proc = f.fio()
    time.sleep(3)
    if fault == "data-write":
        f.set_under({"data": "error_writes"})
    elif fault == "ckpt-write":
        f.set_under({"ckpt": "error_writes"})
    elif fault == "data-read":
        f.set_under({"data": "error"})
    else:
        f.set_under({"all": "gone"})
    if fault == "ckpt-write":
        # fio's writes reach the data area; a checkpoint cannot be written
        p = run(["dmsetup", "message", DM_PREFIX + "top", "0", "checkpoint"], check=False)
        assert p.returncode != 0
    if fault in ("data-read", "gone"):
        # acknowledged data can no longer be read from the device: EIO
        # (a block GC just moved may still be served from memory)
        eio = [lba for lba in range(0, half, 97)
               if io_fails(lambda lba=lba: _pread(f.top, lba)) == 5]
        assert len(eio) >= 10, eio
    rc, out, verify = fio_result(proc)
    assert not verify, out[-3000:]
    st = status_fields("top")
    print(f"{fault}: fio rc {rc}, status mode {st['mode']}, first_error {st['first_error']}")
    if fault in ("data-write", "ckpt-write", "gone"):
        # every write after the fault either failed or is in memory only:
        # a flush must fail, and the target says so
        errno_ = io_fails(lambda: _pwrite(f.top, 3, block(3, 2), sync=True))
        assert errno_ == 5, errno_
        assert status_fields("top")["mode"] == "failed"
        assert status_fields("top")["first_error"] == -5
    else:
        assert rc != 0 or st["mode"] == "failed" or "error" in out.lower(), out[-2000:]
    recover_and_verify(f, half)


def test_read_errors_at_load(ram):
    """Units after the last checkpoint that cannot be read at load: the
    constructor refuses with a message (the log may hold acknowledged
    writes), and loads once the device reads again."""
    f = Faulty(ram)
    half = f.acked_half()
    # more fsynced writes after the checkpoint, so that load must replay
    _pwrite(f.top, half + 10, blocks(range(half + 10, half + 20), 5), sync=True)
    f.set_under({"ckpt": "error_writes"})    # the final checkpoint fails
    dm_remove("top")
    f.set_under({"data": "error"})
    log = Kmsg()
    r = f.create(check=False)
    assert r.returncode != 0
    assert re.search(r"remap: .*(I/O error|read).* \(-E[A-Z]+\)", log.text()), log.text()
    p = subprocess.run([REMAPCTL, "check", f.under], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 8 and "read error" in p.stdout, p.stdout
    f.set_under({})
    f.create()
    assert f.check_acked(half) == 0
    assert _pread(f.top, half + 10, 10) == blocks(range(half + 10, half + 20), 5)
    assert status_fields("top")["replayed_units"] > 0
    dm_remove("top")
    p = subprocess.run([REMAPCTL, "check", f.under], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout


# ------------------------------------------------------------------
# construction: memory and size limits

def _sparse_loop(tmp_name, size, format_args=()):
    """A sparse image in the guest's /tmp, formatted as a file (holes, no
    zeroes written), then a loop device over it."""
    img = f"/tmp/dmrt-{tmp_name}.img"
    with open(img, "wb") as f:
        f.truncate(size)
    p = run([REMAPCTL, "format", *format_args, img], check=False)
    return img, p


def test_map_larger_than_memory_refused():
    """A device whose map needs more than the machine's RAM: the
    constructor refuses it with a message before allocating anything
    (no OOM killer, no allocation warning), and memory is as before."""
    mem = mem_total_bytes()
    size = mem * 1400 // (1 << 20) * (1 << 20)      # map ~1.25x RAM
    img, p = _sparse_loop("huge", size, ["--force"])
    try:
        assert p.returncode == 0, p.stderr
        assert "half of this machine" in p.stderr       # format's warning
        dev = run(["losetup", "-f", "--show", img]).stdout.strip()
        try:
            n = int(dump(dev)["logical_sectors"])
            before = meminfo("MemAvailable")
            log = Kmsg()
            r = dm_create("top", f"0 {n} remap {dev}", check=False)
            assert r.returncode != 0
            assert "remap: Map needs more memory than this machine has (-ENOMEM)" \
                in log.text(), log.text()
            assert "oom" not in log.text().lower()
            assert meminfo("MemAvailable") > before - (64 << 20)
        finally:
            run(["losetup", "-d", dev], check=False)
    finally:
        os.unlink(img)


def test_device_above_format_limit_refused():
    """Segment numbers are 32 bits: a device of 2^32 - 1 segments or more
    (1 PiB of 256 KiB segments) cannot be formatted, even with 64-bit
    block numbers (--force only passes the memory check), and nothing is
    written to it.  (Past 16 TiB, below that, a device formats with 64-bit
    block numbers: test_wide.py.)"""
    img, p = _sparse_loop("toolarge", (1 << 50) + (1 << 44),
                          ["--force", "--segment-size", "256K"])
    try:
        assert p.returncode == 1, p.stdout + p.stderr
        assert "too large" in p.stderr, p.stderr
        assert os.stat(img).st_blocks == 0
    finally:
        os.unlink(img)


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


# ------------------------------------------------------------------
# out of memory at construction: fail-nth (the vmdebug stage's kernel)

DM_IOCTL_SIZE = 312             # struct dm_ioctl (include/uapi/linux/dm-ioctl.h)
DM_SPEC_SIZE = 40               # struct dm_target_spec


def _dm_ioc(nr):
    return (3 << 30) | (DM_IOCTL_SIZE << 16) | (0xfd << 8) | nr     # _IOWR


DM_DEV_CREATE, DM_DEV_REMOVE, DM_TABLE_LOAD = _dm_ioc(3), _dm_ioc(4), _dm_ioc(9)


def dm_ioctl(ctl, cmd, name, targets=()):
    """One device-mapper ioctl from this thread (dmsetup would be another
    process, and fail-nth counts this thread's allocations)."""
    body = b""
    for start, length, ttype, params in targets:
        p = params.encode() + b"\0"
        p += bytes(-(DM_SPEC_SIZE + len(p)) % 8)
        body += struct.pack("<QQiI16s", start, length, 0, DM_SPEC_SIZE + len(p),
                            ttype.encode()) + p
    size = DM_IOCTL_SIZE + len(body)
    buf = bytearray(struct.pack("<3IIIIiIIIQ128s129s7s", 4, 0, 0, size, DM_IOCTL_SIZE,
                                len(targets), 0, 0, 0, 0, 0, name.encode(), b"", b"")
                    + body)
    fcntl.ioctl(ctl, cmd, buf, True)


def _debugfs(path, value):
    with open(path, "w") as f:
        f.write(str(value))


# allocator entry points: the frame below them made the allocation
ALLOCATOR = re.compile(r"^(__)?(kmalloc|kmem_cache_alloc|kzalloc|kvmalloc|kvzalloc|"
                       r"vmalloc|vzalloc|krealloc|kstrdup|kmemdup|alloc_pages|"
                       r"__kmalloc|__vmalloc|__alloc_pages|mempool_alloc|kcalloc)")


def _kmemleak_of_dm_remap():
    """Scan for leaks; return (dm-remap's, others'): a leak is dm-remap's
    when the first frame below the allocator is in the module (a leak in
    a kernel function dm-remap called, on that function's own error path,
    is that function's)."""
    path = "/sys/kernel/debug/kmemleak"
    time.sleep(6)               # kmemleak reports objects older than 5 s
    for _ in range(2):
        _debugfs(path, "scan")
    with open(path) as f:
        text = f.read()
    ours, others = [], []
    for rep in text.split("unreferenced object")[1:]:
        frames = [ln.strip() for ln in rep.split("backtrace")[-1].splitlines()[1:]
                  if ln.strip()]
        site = next((f for f in frames if not ALLOCATOR.match(f)), "")
        (ours if "[dm_remap]" in site else others).append(rep)
    return ours, others


OOM_ALL = 32            # test_construction_out_of_memory: n tried at each end
OOM_STRIDE = 3          # and every OOM_STRIDE-th n between them


def test_construction_out_of_memory(ram):
    """The n-th memory allocation (slab or page, fail-nth with failslab and
    fail_page_alloc) of the table load fails, for n = 1, 2, ... until a
    load makes fewer than n.  Each load either fails with ENOMEM (never
    another errno: running out of memory is not corrupted metadata) and
    no kernel warning, or succeeds; kmemleak finds nothing of dm-remap's
    left behind; and then the target loads and serves what was written
    before.  Needs a kernel with fault injection and kmemleak (the vmdebug
    stage's); Debian's has neither, and the test says it skipped.

    A load makes about 770 allocations and each try costs 0.5 to 0.8 s on
    the KASAN kernel under TCG, so not every n is tried: every n up to OOM_ALL,
    then every OOM_STRIDE-th (from an offset that turns with the day of
    the year, so that successive runs cover every n; printed, and
    DMR_OOM_OFFSET sets it), then every one of the last OOM_ALL before
    the end, which is where the constructor's last steps (the worker,
    the timer, the replay) allocate.  DMR_OOM_STRIDE=1 tries them all."""
    nth, dbg = "/proc/thread-self/fail-nth", "/sys/kernel/debug"
    if not os.path.exists(nth):
        pytest.skip("no fault injection in this kernel (the vmdebug stage has it)")
    if not os.path.isdir(f"{dbg}/failslab"):
        run(["mount", "-t", "debugfs", "none", dbg], check=False)
    for need in ("failslab", "fail_page_alloc", "kmemleak"):
        if not os.path.exists(f"{dbg}/{need}"):
            pytest.skip(f"no {need} in this kernel (the vmdebug stage has it)")
    for attr in ("failslab", "fail_page_alloc"):
        _debugfs(f"{dbg}/{attr}/ignore-gfp-wait", "N")      # GFP_KERNEL fails too
        _debugfs(f"{dbg}/{attr}/verbose", 0)                # no stack dump
    _debugfs(f"{dbg}/fail_page_alloc/ignore-gfp-highmem", "N")
    _debugfs(f"{dbg}/fail_page_alloc/min-order", 0)
    _debugfs(f"{dbg}/kmemleak", "clear")

    base = small_base(ram, 32)
    remapctl("format", "--segment-size", SEG_SIZE, base)
    n = int(dump(base)["logical_sectors"])
    dm_create("top", f"0 {n} remap {base}")
    run(["dd", "if=/dev/urandom", f"of=/dev/mapper/{DM_PREFIX}top", "bs=1M", "count=4",
         "oflag=direct", "conv=fsync"])
    want = dev_sha256(f"/dev/mapper/{DM_PREFIX}top", 4 << 20)
    dm_remove("top")
    # Another dm-remap device stays active during the sweep, so the bio
    # slab caches its bio sets use exist and the loads below only take a
    # reference: kmem_cache_create()'s own error path leaks its name and
    # leaves the cache name taken (kmemleak, then -EINVAL), which is the
    # slab allocator's to fix, not dm-remap's to test.
    dm_create("keepbase", f"0 {16 * 2048} linear {ram} {64 * 2048}")
    keepbase = f"/dev/mapper/{DM_PREFIX}keepbase"
    remapctl("format", "--segment-size", SEG_SIZE, keepbase)
    dm_create("keep", f"0 {int(dump(keepbase)['logical_sectors'])} remap {keepbase}")

    name = DM_PREFIX + "oom"
    sweep = Kmsg()
    ctl = os.open("/dev/mapper/control", os.O_RDWR)
    # fail-nth cannot seek: one descriptor writes, a fresh one (opened
    # before the count starts: opening allocates) reads each result
    wfd = os.open(nth, os.O_WRONLY)
    tried = refused = 0
    errnos = set()
    stride = int(os.environ.get("DMR_OOM_STRIDE", OOM_STRIDE))
    offset = int(os.environ.get("DMR_OOM_OFFSET", time.gmtime().tm_yday)) % stride
    print(f"fail-nth: every n up to {OOM_ALL}, then each n = {offset} mod {stride} "
          f"(DMR_OOM_OFFSET, DMR_OOM_STRIDE), then the last {OOM_ALL}")
    done = set()

    def try_nth(k):
        """Load with the k-th allocation failing; True when the load made
        fewer than k allocations (nothing failed)."""
        nonlocal tried, refused
        dm_ioctl(ctl, DM_DEV_CREATE, name)
        rfd = os.open(nth, os.O_RDONLY)
        os.write(wfd, b"%d" % k)
        try:
            dm_ioctl(ctl, DM_TABLE_LOAD, name, [(0, n, "remap", base)])
            loaded = True
        except OSError as e:
            loaded = False
            errnos.add(e.errno)
        left = int(os.read(rfd, 32) or b"0")    # 0: the n-th failed
        os.write(wfd, b"0")
        os.close(rfd)
        dm_ioctl(ctl, DM_DEV_REMOVE, name)
        tried += 1
        refused += not loaded
        done.add(k)
        if left:
            assert loaded, f"a load with no failure injected failed: {errnos}"
        return bool(left)

    try:
        end = None
        for k in range(1, 20000):
            if (k <= OOM_ALL or k % stride == offset) and try_nth(k):
                end = k
                break
        else:
            pytest.fail("the table load never stopped allocating")
        # every n among the last OOM_ALL before the first that failed
        # nothing: the first of them to fail nothing is the end
        for k in range(max(1, end - OOM_ALL), end):
            if k not in done and try_nth(k):
                end = k
                break
    finally:
        os.close(wfd)
        os.close(ctl)
        run(["dmsetup", "remove", name], check=False)
        dm_remove("keep")
    # dm-remap's constructor reports running out of memory as ENOMEM, never
    # as anything else (corrupted metadata, EINVAL); dm core itself may
    # fail a load after it with EINVAL ("unable to set up device queue")
    assert errnos <= {errno.ENOMEM, errno.EINVAL} and errno.ENOMEM in errnos, errnos
    ctr = [ln for ln in sweep.new() if re.search(r"table: .*: remap: ", ln)]
    assert ctr and all(ln.endswith("(-ENOMEM)") for ln in ctr), \
        [ln for ln in ctr if not ln.endswith("(-ENOMEM)")][:5]
    assert refused > 10, (tried, refused)
    leaks, others = _kmemleak_of_dm_remap()
    assert not leaks, "kmemleak:\n" + "\n".join(leaks[:5])
    dm_create("top", f"0 {n} remap {base}")
    assert dev_sha256(f"/dev/mapper/{DM_PREFIX}top", 4 << 20) == want
    dm_remove("top")
    report_count(f"construction out of memory: {tried} table loads with the n-th "
                 f"allocation failing (of the {end - 1} a load makes: the first and "
                 f"last {OOM_ALL}, and n = {offset} mod {stride} between), {refused} refused (the constructor's errors all "
                 f"ENOMEM), dm-remap "
                 f"objects leaked: 0 (kernel objects leaked on the error paths of "
                 f"functions it called: {len(others)})")


def test_fault_counts():
    """Last: the counts of this module (pytest runs it after the others)."""
    report_count(f"faults injected: {COUNTS['faults']}, acknowledged blocks verified: "
                 f"{COUNTS['acked_checked']}, fio verify errors: {COUNTS['verify_errors']}")
    assert COUNTS["verify_errors"] == 0
