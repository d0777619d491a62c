# SPDX-License-Identifier: GPL-2.0-only
"""remapctl on the host, on image files: argument handling and refusals.

Block-device behaviour (in use, RAID stripes, dmsetup) is covered by the
VM suite in tests/integration.
"""
import subprocess
from pathlib import Path

import pytest

REMAPCTL = str(Path(__file__).resolve().parents[2] / "tools" / "remapctl")


def rc(*args):
    return subprocess.run([REMAPCTL, *args], capture_output=True, text=True)


@pytest.fixture
def img(tmp_path):
    p = tmp_path / "dev.img"
    with open(p, "wb") as f:
        f.truncate(64 << 20)
    return str(p)


def kv(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["format"],
    ["format", "a", "b"],
    ["format", "--segment-size", "1000", "x"],
    ["format", "--segment-size", "0", "x"],
    ["format", "--segment-size", "lots", "x"],
    ["format", "--overprovision", "2", "x"],
    ["format", "--overprovision", "61", "x"],
    ["format", "--overprovision", "1O", "x"],
    ["format", "--label", "x" * 33, "x"],
    ["format", "--bogus", "x"],
    ["dump"],
    ["create", "onlyname"],
    ["create", "n", "d", "--checkpoint-interval", "x"],
    ["create", "n", "d", "--gc-low", "0"],
    ["create", "n", "d", "--gc-high", "2147483648"],
    ["create", "n", "d", "--gc-high"],
    ["remove"],
])
def test_usage_errors_exit_2(args):
    p = rc(*args)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert p.stderr.startswith("remapctl: ")
    assert p.stdout == ""


def test_missing_device_exit_1():
    p = rc("format", "/nonexistent/dev")
    assert p.returncode == 1 and "No such file" in p.stderr


def test_format_and_dump_roundtrip(img):
    p = rc("format", "--label", "hello", img)
    assert p.returncode == 0, p.stderr
    d = kv(rc("dump", img).stdout)
    assert d["superblock_copy0"] == "ok" and d["superblock_copy1"] == "ok"
    assert d["label"] == "hello" and d["version"] == "3"
    assert d["segment_blocks"] == "256"      # no stripe hint: 1 MiB
    assert d["overprovision"] == "10"
    assert f"logical size: {d['logical_sectors']} sectors" in p.stdout
    assert f"table: 0 {d['logical_sectors']} remap {img}" in p.stdout


def test_refuses_ext4_image_unless_forced(img):
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    p = rc("format", img)
    assert p.returncode == 1 and "ext4" in p.stderr
    assert rc("dump", img).returncode == 1
    assert rc("format", "--force", img).returncode == 0
    assert rc("dump", img).returncode == 0


def test_refuses_reformat_unless_forced(img):
    assert rc("format", img).returncode == 0
    uuid = kv(rc("dump", img).stdout)["uuid"]
    p = rc("format", img)
    assert p.returncode == 1 and "dm-remap" in p.stderr
    assert kv(rc("dump", img).stdout)["uuid"] == uuid


def test_too_small(tmp_path):
    p = tmp_path / "small.img"
    with open(p, "wb") as f:
        f.truncate(4 << 20)
    r = rc("format", str(p))
    assert r.returncode == 1 and "too small" in r.stderr


def test_dump_reports_damaged_copy(img):
    assert rc("format", img).returncode == 0
    with open(img, "r+b") as f:
        f.seek(300)
        b = f.read(1)
        f.seek(300)
        f.write(bytes([b[0] ^ 0xFF]))
    d = kv(rc("dump", img).stdout)
    assert d["superblock_copy0"] == "superblock checksum mismatch"
    assert d["superblock_copy1"] == "ok" and d["using_copy"] == "1"


def test_dump_unformatted(img):
    p = rc("dump", img)
    assert p.returncode == 1 and "no valid dm-remap superblock" in p.stderr


def test_create_table_options(img, tmp_path):
    """create's table line, with every option in the order given: a
    stand-in dmsetup on PATH records its arguments (the host has no
    device-mapper; tests/integration creates real devices)."""
    import os
    assert rc("format", img).returncode == 0
    sectors = kv(rc("dump", img).stdout)["logical_sectors"]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "dmsetup.args"
    fake = bindir / "dmsetup"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")

    def create(*opts):
        p = subprocess.run([REMAPCTL, "create", "fast", img, *opts], capture_output=True,
                           text=True, env=env)
        assert p.returncode == 0, p.stderr
        return log.read_text().splitlines()

    assert create() == ["create", "fast", "--table", f"0 {sectors} remap {img}"]
    args = create("--zero-copy", "--gc-low", "6", "--no-discard-passdown",
                  "--gc-high", "12", "--checkpoint-interval", "9", "--read-only",
                  "--ignore-discard")
    assert args[3] == (f"0 {sectors} remap {img} 10 zero_copy gc_low 6 "
                       "no_discard_passdown gc_high 12 checkpoint_interval 9 read_only "
                       "ignore_discard")
