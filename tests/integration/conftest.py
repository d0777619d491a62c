# SPDX-License-Identifier: GPL-2.0-only
"""Fixtures for dm-remap's VM integration suite.

These tests run as root inside the virtme-ng guest (tests/vm/guest-run.sh),
with dm-remap.ko already loaded.  They create ramdisks (brd), loop devices,
md arrays and dm devices and remove them again.  Every test also fails if
the kernel logged a warning, oops or BUG while it ran.
"""
import contextlib
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

import kernel_log

REPO = Path(__file__).resolve().parents[2]
REMAPCTL = str(REPO / "tools" / "remapctl")
SECTOR = 512
BLOCK = 4096
# bytes of a checkpoint segment table entry (struct dmr_disk_segment,
# format 5: 16 before)
SEGTAB_ENTRY = 32
DM_PREFIX = "dmrt-"
RAM_MIB = 128           # size of each brd ramdisk
RAM_COUNT = 8
MNT = "/tmp/dmrt-mnt"   # the guest root is read-only; /tmp is an overlay


# A command that takes longer than this has hung (the longest, a whole
# multi-TiB sparse device's check or fio job under TCG, take a few
# minutes): the test fails with what every task waits on, instead of the
# shard running into its timeout with nothing said (the fresh-clone run
# of 6492bcc: a test of map_cache's failed mode waited 25 minutes).
RUN_TIMEOUT = 900


def hang_report():
    """What every task of the guest waits on: ps for the test's output,
    sysrq's blocked tasks (w) and every task's stack (t) for the console."""
    ps = subprocess.run(["ps", "-eo", "pid,stat,wchan:32,etime,args"],
                        capture_output=True, text=True).stdout
    # only in the guest run-vm.sh boots
    for key in "wt" if os.environ.get("DMR_IN_VM") else "":
        try:
            Path("/proc/sysrq-trigger").write_text(key)
        except OSError:
            pass
    return ps


def udev_report(cmd):
    """For a dmsetup that hung: its udev cookies and whether udevd answers.
    A dmsetup that changes a device waits for udev's rules to complete its
    cookie (`dmsetup udevcomplete`); seen once in make check (35da5be:
    dmsetup asleep, udevd idle with no worker).  The cookies are then
    released (`dmsetup udevcomplete_all`), so that one lost completion
    fails one test, not every dmsetup after it and the shard."""
    if not cmd or os.path.basename(str(cmd[0])) != "dmsetup":
        return ""
    out = []
    # then udevd is made to run events again and restarted: after one
    # lost completion (the CI run of 8e3da18) every later dmsetup slept
    # too, udevd alive and idle.  Not DM_DISABLE_UDEV for the whole suite
    # (libdevmapper making the nodes, no cookies): tried in c787dbb, it
    # changed the timing of bcache's teardown in test_compare_with_peers
    # (a bio slab left non-empty, a kernel WARNING, the peers left set up)
    # and the shard ran out of time
    for c in (["dmsetup", "udevcookies"], ["udevadm", "control", "--ping", "--timeout=5"],
              ["dmsetup", "udevcomplete_all", "-y"],
              ["udevadm", "control", "--start-exec-queue"],
              ["udevadm", "control", "--exit", "--timeout=30"],
              ["/usr/lib/systemd/systemd-udevd", "--daemon"],
              ["udevadm", "control", "--ping", "--timeout=5"]):
        try:
            p = subprocess.run(c, capture_output=True, text=True, timeout=30)
            out.append(f"$ {' '.join(c)} (exit {p.returncode})\n{p.stdout}{p.stderr}")
        except (OSError, subprocess.TimeoutExpired) as e:
            out.append(f"$ {' '.join(c)}: {e}")
    return "\n" + "\n".join(out)


def run(cmd, check=True, input=None, timeout=RUN_TIMEOUT):
    """Run a command, return CompletedProcess with text output.  One
    that runs past @timeout seconds fails the test (hang_report())."""
    if isinstance(cmd, str):
        cmd = ["sh", "-c", cmd]
    # not Popen's context manager, nor subprocess.run(): both wait for
    # the killed command, and one in the kernel's D state never ends
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else None,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        report = hang_report() + udev_report(cmd)
        # now, not only in the failure's summary: a hang in the teardown
        # after it can run the guest into its own timeout, and pytest then
        # prints no summary at all (vm2 of the fresh-clone run of 35da5be)
        note = f"run: {cmd} still running after {timeout} s; tasks:\n{report}"
        out_dir = os.environ.get("DMR_OUT")
        if out_dir:
            with open(os.path.join(out_dir, "hang-report.txt"), "a") as f:
                f.write(note + "\n")
        if os.environ.get("DMR_IN_VM"):     # pytest captures stderr: the console
            try:
                with open("/dev/kmsg", "w") as k:
                    for line in note.splitlines():
                        k.write(f"dmr-test: {line[:900]}\n")
                        k.flush()
            except OSError:
                pass
        proc.kill()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        raise AssertionError(f"{cmd} still running after {timeout} s "
                             f"(hung?); tasks:\n{report}") from None
    p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def block_sysfs(dev):
    """The sysfs directory of block device node @dev (/sys/dev/block/M:m),
    by its device number: /dev/mapper/NAME is a node of its own, not a
    link to ../dm-N, where libdevmapper makes the nodes (DM_DISABLE_UDEV)."""
    rdev = os.stat(dev).st_rdev
    return f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"


def report_count(line):
    """A count make check prints (damage cases, faults injected, verify
    errors): appended to $DMR_OUT/counts.txt, which guest-integration.sh
    prints after the run."""
    print(line)
    out = os.environ.get("DMR_OUT")
    if out:
        with open(os.path.join(out, "counts.txt"), "a") as f:
            f.write(line + "\n")


def kmsg_lines():
    return run(["dmesg"]).stdout.splitlines()


class Kmsg:
    """Kernel log since a mark."""

    def __init__(self):
        self.start = len(kmsg_lines())

    def new(self):
        return kmsg_lines()[self.start:]

    def text(self):
        return "\n".join(self.new())


@pytest.fixture(scope="session", autouse=True)
def _session_setup():
    assert os.geteuid() == 0, "integration tests run as root in the VM"
    targets = run(["dmsetup", "targets"]).stdout
    assert re.search(r"^remap\s+v", targets, re.M), \
        f"dm-remap module not loaded:\n{targets}"
    if not Path("/dev/ram0").exists():
        run(["modprobe", "brd", f"rd_nr={RAM_COUNT}",
             f"rd_size={RAM_MIB * 1024}"])
    yield
    cleanup_dm()


@pytest.fixture(autouse=True)
def kernel_log_clean():
    """Fail a test whose run made the kernel warn, oops or BUG."""
    mark = Kmsg()
    yield mark
    bad = kernel_log.problems(mark.new())
    assert not bad, "kernel reported problems:\n" + "\n".join(bad)


def cleanup_dm():
    names = [line.split()[0] for line in
             run(["dmsetup", "ls"], check=False).stdout.splitlines()
             if line.startswith(DM_PREFIX)]
    # Stacked devices go before the devices they sit on: a pass without
    # --retry removes what nothing holds, and a device below another fails
    # at once (dmsetup ls lists by name, so "base" comes before the "top"
    # on it; with --retry, dmsetup waited about 5 s on it in every
    # teardown).  Only a pass that removed nothing retries (udev may still
    # hold a device it probes), and one that removes nothing then ends it.
    retry = []
    while names:
        left = [n for n in names
                if run(["dmsetup", "remove", *retry, n], check=False).returncode]
        if len(left) == len(names):
            if retry:
                break
            retry = ["--retry"]
        names = left


def wipe(dev, mib=8):
    run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", f"count={mib}",
         "oflag=direct", "status=none"])


class Ram:
    """Hand out brd ramdisks, wiped at the start."""
    used = 0

    @classmethod
    def get(cls):
        assert cls.used < RAM_COUNT, "out of ramdisks"
        dev = f"/dev/ram{cls.used}"
        cls.used += 1
        wipe(dev)
        return dev


@pytest.fixture
def ram():
    dev = Ram.get()
    yield dev
    cleanup_dm()
    run(["umount", "-q", MNT], check=False)
    Ram.used -= 1


@pytest.fixture
def ram2():
    dev = Ram.get()
    yield dev
    Ram.used -= 1


def sectors(dev):
    return int(run(["blockdev", "--getsz", dev]).stdout)


def remapctl(*args, check=True):
    return run([REMAPCTL, *args], check=check)


def dump(dev):
    out = remapctl("dump", dev).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def dm_create(name, table, check=True):
    p = run(["dmsetup", "create", DM_PREFIX + name, "--table", table],
            check=False)
    if check and p.returncode:
        raise AssertionError(f"dmsetup create {table!r} failed:\n{p.stderr}"
                             f"\n{'/'.join(kmsg_lines()[-5:])}")
    return p


def dm_set_table(name, table):
    """Create dm device name with table (lines), or reload it live."""
    text = table if table.endswith("\n") else table + "\n"
    if run(["dmsetup", "info", DM_PREFIX + name], check=False).returncode:
        run(["dmsetup", "create", DM_PREFIX + name], input=text)
    else:
        run(["dmsetup", "reload", DM_PREFIX + name], input=text)
        run(["dmsetup", "resume", DM_PREFIX + name])


def dm_remove(name):
    settle()        # udev may still be probing a device it just saw change
    run(["dmsetup", "remove", "--retry", DM_PREFIX + name])


def dm_path(name):
    return f"/dev/mapper/{DM_PREFIX}{name}"


def dm_status(name):
    return run(["dmsetup", "status", DM_PREFIX + name]).stdout.split()


def documented_status_fields(doc="dm-remap.rst"):
    """The status field names, in order, from Documentation/@doc (the
    target's, or dm-remap-flashsim.rst): the numbered list of its Status
    section, each item ``N. ``name``: ...``.  Tests parse status with this
    list, so documentation and code cannot drift apart."""
    text = (REPO / "Documentation" / doc).read_text()
    section = text.split("\nStatus\n======\n", 1)[1].split("\n=====", 1)[0]
    items = re.findall(r"^(\d+)\. ``(\w+)``", section, re.M)
    assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)), items
    return [name for _, name in items]


STATUS_FIELDS = documented_status_fields()
STATUS_WORDS = ("mode", "gc_state", "waf_load", "waf_format")


def status_fields(name):
    """dmsetup status of a remap device as a dict (documented field order)."""
    st = dm_status(name)
    assert st[2] == "remap" and len(st) == 3 + len(STATUS_FIELDS), st
    out = {}
    for k, v in zip(STATUS_FIELDS, st[3:]):
        out[k] = v if k in STATUS_WORDS else int(v)
    return out


def dm_table(name):
    return run(["dmsetup", "table", DM_PREFIX + name]).stdout.strip()


# CRC32C, for tests that craft superblocks with a valid checksum.
_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data, crc=0xFFFFFFFF):
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


SB_CSUM_SALT = 0x5B1C0DE1


def read_block(dev, nr):
    with open(dev, "rb", buffering=0) as f:
        f.seek(nr * BLOCK)
        return bytearray(f.read(BLOCK))


def write_block(dev, nr, data):
    assert len(data) == BLOCK
    with open(dev, "r+b", buffering=0) as f:
        f.seek(nr * BLOCK)
        f.write(data)
        os.fsync(f.fileno())


def resum_sb(block):
    csum = crc32c(bytes(block[12:])) ^ SB_CSUM_SALT
    block[8:12] = csum.to_bytes(4, "little")
    return block


def settle():
    run(["udevadm", "settle"], check=False)
    time.sleep(0.1)


@contextlib.contextmanager
def udev_paused():
    """udevd runs no event inside: for a test that needs to know which
    blocks of a device were read.  udevd probes a device after each
    close of a descriptor that wrote it (its inotify watch), and blkid
    reads more than the first blocks (LUKS2's second header is looked
    for up to 4 MiB in).  `udevadm settle` only waits for the events
    queued already: under load the close's event may be queued after it
    returns and probe the device a second later.  Here events queue but
    run only at the end."""
    settle()
    run(["udevadm", "control", "--stop-exec-queue"])
    try:
        yield
    finally:
        run(["udevadm", "control", "--start-exec-queue"])
        settle()


# ------------------------------------------------------------------
# Helpers for tests that look at the on-disk format from below
# (test_review.py).  Reads and writes are O_DIRECT: the module writes
# with bios, so the page cache of the device below may be stale.

CKPT_MAGIC = b"DMR-CKPT"
CKPT_CSUM_SALT = 0xC4EC9017
CKPT_CLEAN = 0x1
CKPT_TWIN = 0x2                # DMR_CKPT_TWIN: the other slot holds its map
SUMMARY_MAGIC = b"DMR-LOGU"
# Log heads (enum dmr_head_id): fresh user writes, and rewrites of blocks
# whose last copy lived long, go to the cold head.
HEAD_HOT, HEAD_COLD, HEAD_GC, HEAD_GC_HOT = 0, 1, 2, 3
NR_HEADS = 4
# struct dmr_disk_ckpt up to gc_moved (dm-remap/dmr-format.h)
_CKPT_FMT = "<8sIIQQQ16s" + "III" * NR_HEADS + "IIQQQQ"
_CKPT_FIELDS = (("magic", "csum", "flags", "seq", "log_seq", "blocknr", "uuid")
                + tuple(f"head{h}_{f}" for h in range(NR_HEADS)
                        for f in ("segment", "offset", "next"))
                + ("crc_csum", "segtab_csum", "mapped_blocks", "user_blocks",
                   "log_blocks", "gc_moved"))


def read_blocks_direct(dev, nr, count=1):
    """O_DIRECT read of count blocks at block nr."""
    import mmap
    buf = mmap.mmap(-1, count * BLOCK)
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    try:
        got = os.preadv(fd, [buf], nr * BLOCK)
    finally:
        os.close(fd)
    assert got == count * BLOCK, (dev, nr, count, got)
    return bytes(buf)


def write_blocks_direct(dev, nr, data):
    """O_DIRECT write of whole blocks at block nr, then fsync."""
    import mmap
    assert len(data) % BLOCK == 0
    buf = mmap.mmap(-1, len(data))
    buf.write(data)
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        assert os.pwritev(fd, [buf], nr * BLOCK) == len(data)
        os.fsync(fd)
    finally:
        os.close(fd)


def decode_ckpt(block, blocknr):
    """Decode a checkpoint slot header (struct dmr_disk_ckpt).

    Returns a dict of its fields plus 'valid' (magic, checksum and
    location all good), as the module checks them.
    """
    import struct
    h = dict(zip(_CKPT_FIELDS, struct.unpack_from(_CKPT_FMT, block, 0)))
    h["valid"] = (h["magic"] == CKPT_MAGIC and
                  h["csum"] == crc32c(bytes(block[12:])) ^ CKPT_CSUM_SALT and
                  h["blocknr"] == blocknr)
    h["clean"] = bool(h["flags"] & CKPT_CLEAN)
    h["twin"] = bool(h["flags"] & CKPT_TWIN)
    return h


def ckpt_headers(dev, info):
    """Both checkpoint slot headers of a formatted device.

    info: dump() of the device (ckpt_offset, ckpt_slot_blocks).
    """
    out = []
    for slot in range(2):
        blk = int(info["ckpt_offset"]) + slot * int(info["ckpt_slot_blocks"])
        h = decode_ckpt(read_blocks_direct(dev, blk), blk)
        h["slot"] = slot
        out.append(h)
    return out


def newest_ckpt(dev, info):
    """The header the module loads from: the valid one with the highest seq."""
    valid = [h for h in ckpt_headers(dev, info) if h["valid"]]
    assert valid, f"no valid checkpoint header on {dev}"
    return max(valid, key=lambda h: h["seq"])


def _div_up(a, b):
    return -(-a // b)


def geometry(device_blocks, segment_blocks, overprovision=10):
    """dmr_geometry_compute() (dm-remap/dmr-format.c), in Python."""
    map_blocks = _div_up(device_blocks * 4, BLOCK)
    crc_blocks = _div_up(map_blocks * 4, BLOCK)
    segtab_blocks = _div_up(device_blocks // segment_blocks * SEGTAB_ENTRY, BLOCK)
    slot_blocks = 1 + crc_blocks + map_blocks + segtab_blocks
    data_offset = _div_up(2 + 2 * slot_blocks, segment_blocks) * segment_blocks
    nr_segments = (device_blocks - data_offset) // segment_blocks
    # DMR_RESERVED_SEGMENTS (8) are kept out of the user capacity
    logical = (nr_segments - 10) * segment_blocks * (100 - overprovision) // 100
    return {"device_blocks": device_blocks, "segment_blocks": segment_blocks,
            "ckpt_offset": 2, "ckpt_slot_blocks": slot_blocks,
            "data_offset": data_offset, "nr_segments": nr_segments,
            "logical_blocks": logical}


def ckpt_layout(logical_blocks, nr_segments):
    """dmr_ckpt_layout(): block offsets within a checkpoint slot."""
    map_blocks = _div_up(logical_blocks, BLOCK // 4)
    crc_blocks = _div_up(map_blocks * 4, BLOCK)
    return {"crc_offset": 1, "crc_blocks": crc_blocks,
            "map_offset": 1 + crc_blocks, "map_blocks": map_blocks,
            "segtab_offset": 1 + crc_blocks + map_blocks,
            "segtab_blocks": _div_up(nr_segments * SEGTAB_ENTRY, BLOCK)}


def dev_sha256(dev, nbytes, chunk=4 << 20):
    """sha256 of the first nbytes of a device, read with O_DIRECT."""
    import hashlib
    import mmap
    h = hashlib.sha256()
    buf = mmap.mmap(-1, chunk)
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    try:
        off = 0
        while off < nbytes:
            n = min(chunk, nbytes - off)
            got = os.preadv(fd, [buf], off)
            assert got >= n, (dev, off, got)
            h.update(buf[:n])
            off += n
    finally:
        os.close(fd)
    return h.hexdigest()


def dm_create_table(name, lines, readonly=False, check=True):
    """dmsetup create with a (multi-line) table on stdin."""
    cmd = ["dmsetup", "create", DM_PREFIX + name]
    if readonly:
        cmd.append("--readonly")
    p = run(cmd, check=False, input="\n".join(lines) + "\n")
    if check and p.returncode:
        raise AssertionError(f"dmsetup create {lines!r} failed:\n{p.stderr}"
                             f"\n{'/'.join(kmsg_lines()[-5:])}")
    return p


def zero_map_table(dev, dev_blocks, geo, lay, real):
    """Table lines over @dev (@dev_blocks blocks): dm-linear, but dm-zero
    for each checkpoint slot's map blocks outside @real, a list of (first
    map block, count): a multi-TiB device's slots, mostly all-zero map
    blocks, need no guest RAM (writes dropped, reads zero, which is what
    those blocks hold)."""
    zero = []                 # (first block, blocks) of dm-zero stretches
    for slot in range(2):
        m0 = geo["ckpt_offset"] + slot * geo["ckpt_slot_blocks"] + lay["map_offset"]
        prev = m0
        for first, n in list(real) + [(lay["map_blocks"], 0)]:
            if m0 + first > prev:
                zero.append((prev, m0 + first - prev))
            prev = m0 + first + n
    lines, pos = [], 0
    for first, nr in zero + [(dev_blocks, 0)]:
        if first > pos:
            lines.append(f"{pos * 8} {(first - pos) * 8} linear {dev} {pos * 8}")
        if nr:
            lines.append(f"{first * 8} {nr * 8} zero")
        pos = first + nr
    return lines


def mem_total_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def md_stop(md, members):
    """A test's teardown of md array md: stop it and clear its members'
    superblocks (nothing checked: it may not have been created)."""
    run(["mdadm", "--stop", md], check=False)
    for d in members:
        run(["mdadm", "--zero-superblock", d], check=False)


def loop_dev(name, size):
    """Generator for a fixture: a loop device on a sparse file of @size
    bytes in the guest's /tmp (an overlay in guest RAM), removed after."""
    img = f"/tmp/dmrt-{name}.img"
    with open(img, "wb") as f:
        f.truncate(size)
    dev = run(["losetup", "-f", "--show", img]).stdout.strip()
    yield dev
    cleanup_dm()
    run(["losetup", "-d", dev], check=False)
    os.unlink(img)
