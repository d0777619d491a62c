# SPDX-License-Identifier: GPL-2.0-only
"""remapctl's guards against writing over something: format --force
overrides signatures only, never a device in use, and wipes every
signature it overrides; check --repair refuses an image a loop device
is backed by.

Everything here writes only to image files under tmp_path, and to loop
devices attached to them (skipped where losetup fails on this host).
"""
import os
import struct
import subprocess
from pathlib import Path

import pytest

from test_remapctl_format import rc, sparse

MIB = 1 << 20


@pytest.fixture
def loop(tmp_path):
    """attach(image) -> /dev/loopN backed by that image file; detached at the
    end.  Skips when losetup cannot attach one here."""
    attached = []

    def attach(image):
        p = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True,
                           text=True, timeout=60)
        if p.returncode or not p.stdout.strip().startswith("/dev/loop"):
            pytest.skip(f"losetup cannot attach a loop device here: {p.stderr.strip()}")
        attached.append(p.stdout.strip())
        return attached[-1]
    yield attach
    for dev in attached:
        subprocess.run(["losetup", "-d", dev], timeout=60)


# ---------------------------------------------------------------------------
# item 5: --force overrides signatures, not the in-use guard

def test_format_force_refuses_a_device_in_use(tmp_path, loop):
    """A block device that another opener holds exclusively (as a mount or
    an md array would) is refused with or without --force, and the message
    does not suggest --force; nothing is written."""
    img = sparse(tmp_path, 64 * MIB)
    dev = loop(img)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        for args in ([], ["--force"]):
            p = rc("format", *args, dev)
            assert p.returncode == 1, (args, p.stdout, p.stderr)
            assert "in use" in p.stderr and "--force" not in p.stderr, p.stderr
    finally:
        os.close(fd)
    assert rc("dump", img).returncode == 1          # nothing written
    p = rc("format", "--force", dev)                 # released: formats
    assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------------------
# item 6: format --force wipes every signature libblkid finds

MD_MAGIC = 0xA92B4EFC


def md_sb1(off):
    """An md 1.x superblock libblkid takes: magic, major version 1, its own
    offset in sectors, max_dev 0 and the checksum over its 256 bytes."""
    sb = bytearray(512)
    struct.pack_into("<II", sb, 0, MD_MAGIC, 1)
    struct.pack_into("<Q", sb, 144, off // 512)     # super_offset
    words = struct.unpack_from("<64I", sb)
    s = sum(words)
    struct.pack_into("<I", sb, 216, ((s & 0xFFFFFFFF) + (s >> 32)) & 0xFFFFFFFF)
    return bytes(sb)


def write_at(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


def foreign(path):
    """What blkid -p finds on PATH (its TYPE or PTTYPE), or None."""
    p = subprocess.run(["blkid", "-p", "-o", "export", path], capture_output=True,
                       text=True, timeout=60)
    kv = dict(ln.split("=", 1) for ln in p.stdout.splitlines() if "=" in ln)
    return kv.get("TYPE") or kv.get("PTTYPE")


def make_signature(path, size, kind):
    """Put a KIND signature on the image; return (blkid's type, offset of
    the magic blkid reports)."""
    if kind == "md-0.90":                   # 64 KiB-aligned, 64 KiB before the end
        off = (size & ~0xFFFF) - 0x10000
        write_at(path, off, struct.pack("<IIII", MD_MAGIC, 0, 90, 0))
        return "linux_raid_member", off
    if kind == "md-1.0":                    # 8 KiB from the end, 4 KiB aligned
        off = ((size // 512 - 16) & ~7) * 512
        write_at(path, off, md_sb1(off))
        return "linux_raid_member", off
    if kind == "md-1.2":                    # 4 KiB from the start
        write_at(path, 4096, md_sb1(4096))
        return "linux_raid_member", 4096
    if kind == "ext4":
        subprocess.run(["mkfs.ext4", "-q", "-F", path], check=True, timeout=120)
        return "ext4", 0x438
    if kind == "dos":                       # an MBR with one partition
        entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048,
                            size // 512 - 2048)
        write_at(path, 446, entry)
        write_at(path, 510, b"\x55\xaa")
        return "dos", 510
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["md-0.90", "md-1.0", "md-1.2", "ext4", "dos"])
def test_format_force_wipes_every_signature(tmp_path, kind):
    """format refuses an image with a signature; --force wipes it wherever
    it is (an md 0.90 or 1.0 superblock at the end of the device too, which
    format's own writes do not reach), names it and its offset, and blkid
    then finds nothing foreign on the image."""
    size = 64 * MIB
    img = sparse(tmp_path, size)
    want, off = make_signature(img, size, kind)
    assert foreign(img) == want                     # the oracle sees it first
    p = rc("format", img)
    assert p.returncode == 1 and want in p.stderr, p.stderr
    p = rc("format", "--force", img)
    assert p.returncode == 0, p.stderr
    assert f"{img}: wiping {want} signature at offset {off}" in p.stderr, p.stderr
    assert foreign(img) is None
    assert rc("dump", img).returncode == 0


# ---------------------------------------------------------------------------
# item 7: check --repair refuses an image a loop device is attached to

def check_env(*args, sysfs=None):
    from test_remapctl_format import REMAPCTL
    env = dict(os.environ)
    env.pop("DMR_SYSFS_ROOT", None)
    if sysfs is not None:
        env["DMR_SYSFS_ROOT"] = str(sysfs)
    return subprocess.run([REMAPCTL, "check", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def fake_loop_sysfs(tmp_path, backing):
    """A sysfs tree (DMR_SYSFS_ROOT) where loop7 is backed by BACKING."""
    root = tmp_path / "sys"
    d = root / "block" / "loop7" / "loop"
    d.mkdir(parents=True)
    (d / "backing_file").write_text(f"{backing}\n")
    (root / "block" / "sda").mkdir()                # not a loop device
    return root


def test_check_repair_refuses_a_loop_backed_image_fake_sysfs(tmp_path):
    """With a fake sysfs whose loop7 is backed by the image (through
    another path to the same file), check --repair refuses it, exit 8,
    naming the loop device, and writes nothing; a plain check still runs,
    and a loop device backed by another file does not count."""
    img = sparse(tmp_path, 64 * MIB)
    assert rc("format", img).returncode == 0
    (tmp_path / "link.img").symlink_to(img)
    sysfs = fake_loop_sysfs(tmp_path, tmp_path / "link.img")
    before = Path(img).read_bytes()
    p = check_env("--repair", img, sysfs=sysfs)
    assert p.returncode == 8, (p.stdout, p.stderr)
    assert "/dev/loop7 is attached to it" in p.stderr and img in p.stderr, p.stderr
    assert Path(img).read_bytes() == before
    assert check_env(img, sysfs=sysfs).returncode == 0
    other = sparse(tmp_path, MIB, "other.img")
    sysfs2 = fake_loop_sysfs(tmp_path / "b", other)
    p = check_env("--repair", img, sysfs=sysfs2)
    assert p.returncode == 0, (p.stdout, p.stderr)


def test_check_repair_refuses_a_loop_backed_image(tmp_path, loop):
    """The same with a real loop device on the image (skipped where losetup
    fails): a target over /dev/loopN would be writing under the repair."""
    img = sparse(tmp_path, 64 * MIB)
    assert rc("format", img).returncode == 0
    dev = loop(img)
    p = check_env("--repair", img)
    assert p.returncode == 8 and f"{dev} is attached to it" in p.stderr, p.stderr
