# SPDX-License-Identifier: GPL-2.0-only
"""Fixtures for dm-remap's VM integration suite.

These tests run as root inside the virtme-ng guest (tests/vm/guest-run.sh),
with dm-remap.ko already loaded.  They create ramdisks (brd), loop devices,
md arrays and dm devices and remove them again.  Every test also fails if
the kernel logged a warning, oops or BUG while it ran.
"""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REMAPCTL = str(REPO / "tools" / "remapctl")
SECTOR = 512
BLOCK = 4096
DM_PREFIX = "dmrt-"
RAM_MIB = 128           # size of each brd ramdisk
RAM_COUNT = 8
MNT = "/tmp/dmrt-mnt"   # the guest root is read-only; /tmp is an overlay

KERNEL_PROBLEMS = re.compile(
    r"BUG:|WARNING:|Oops|Call Trace|general protection fault|KASAN|UBSAN|"
    r"blocked for more than")


def run(cmd, check=True, input=None):
    """Run a command, return CompletedProcess with text output."""
    if isinstance(cmd, str):
        cmd = ["sh", "-c", cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


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
    bad = [line for line in mark.new() if KERNEL_PROBLEMS.search(line)]
    assert not bad, "kernel reported problems:\n" + "\n".join(bad)


def cleanup_dm():
    names = [line.split()[0] for line in
             run(["dmsetup", "ls"], check=False).stdout.splitlines()
             if line.startswith(DM_PREFIX)]
    # remove stacked devices before the devices they sit on
    for _ in range(3):
        for n in list(names):
            if run(["dmsetup", "remove", "--retry", n], check=False).returncode == 0:
                names.remove(n)


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


def dm_remove(name):
    settle()        # udev may still be probing a device it just saw change
    run(["dmsetup", "remove", "--retry", DM_PREFIX + name])


def dm_path(name):
    return f"/dev/mapper/{DM_PREFIX}{name}"


def dm_status(name):
    return run(["dmsetup", "status", DM_PREFIX + name]).stdout.split()


STATUS_FIELDS = ["mode", "version", "logical_blocks", "segment_sectors",
                 "segments", "free_segments", "user_blocks", "device_blocks",
                 "flushes", "short_units", "checkpoint_seq", "replayed_units",
                 "map_memory", "sb_copies_ok", "discards", "first_error"]


def status_fields(name):
    """dmsetup status of a remap device as a dict (documented field order)."""
    st = dm_status(name)
    assert st[2] == "remap" and len(st) == 3 + len(STATUS_FIELDS), st
    out = {}
    for k, v in zip(STATUS_FIELDS, st[3:]):
        out[k] = v if k == "mode" else int(v)
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
