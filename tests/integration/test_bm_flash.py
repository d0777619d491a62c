# SPDX-License-Identifier: GPL-2.0-only
"""bm-flash on real block devices: logical block size, in use, ramdisks."""
import json
import os
import re

import pytest

from conftest import MNT, RAM_MIB, REPO, run

BM = str(REPO / "tools" / "bm-flash")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def bm(*args):
    return run([BM, *args], check=False)


def parse_table(out):
    """{bs label: [(iops, bw bytes), ...]} from the default table."""
    lines = out.splitlines()
    assert lines[0].startswith("Block Size") and "IOPS" in lines[2]
    rows = {}
    for line in lines[3:]:
        label, *cols = line.split()
        cells = []
        for iops, bw in zip(cols[::2], cols[1::2]):
            m = re.fullmatch(r"(\d+\.\d)([KMGT])", bw)
            assert m, line
            cells.append((int(iops), float(m.group(1)) * UNITS[m.group(2)]))
        rows[label] = cells
    return rows


@pytest.fixture
def loop4k():
    """A loop device with 4096-byte logical blocks over a file in /tmp."""
    img = "/tmp/bmf-loop.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    dev = run(["losetup", "--sector-size", "4096", "-f", "--show", img]).stdout.strip()
    yield dev
    run(["losetup", "-d", dev], check=False)
    os.unlink(img)


def test_loop_4k_skips_512(loop4k):
    assert run(["blockdev", "--getss", loop4k]).stdout.strip() == "4096"
    p = bm("--bs", "512,4K,64K", "--threads", "1,4", "--seconds", "0.3", loop4k)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ("bm-flash: skipping 512B: below the device's "
                        "4096-byte logical block size\n")
    rows = parse_table(p.stdout)
    assert list(rows) == ["4K", "64K"]
    for label, bs in (("4K", 4096), ("64K", 65536)):
        assert len(rows[label]) == 4        # read 1, read 4, write 1, write 4
        for iops, bw in rows[label]:
            assert iops > 0 and bw > 0
            assert abs(bw - iops * bs) <= 0.05 * bw + 0.5 * bs

    p = bm("--bs", "512,4K", "--threads", "2", "--seconds", "0.2", "--json",
           loop4k)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["size_bytes"] == 64 << 20
    assert [(r["op"], r["bs"]) for r in j["results"]] == \
        [("read", 4096), ("write", 4096)]
    assert all(r["iops"] > 0 for r in j["results"])


def test_mounted_device_refused(ram):
    run(["mkfs.ext4", "-q", "-F", ram])
    os.makedirs(MNT, exist_ok=True)
    run(["mount", ram, MNT])
    try:
        p = bm("--bs", "4K", "--threads", "1", "--seconds", "0.1", ram)
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr.count("\n") == 1
        assert "in use" in p.stderr and "--force" in p.stderr
        # reading never needs --force
        p = bm("--read-only", "--bs", "4K", "--threads", "1", "--seconds",
               "0.1", "--csv", ram)
        assert p.returncode == 0, p.stderr
    finally:
        run(["umount", MNT])
    # unmounted, the ext4 signature is what stops it
    p = bm("--bs", "4K", "--threads", "1", "--seconds", "0.1", ram)
    assert p.returncode == 1 and "signature (ext4)" in p.stderr


def test_read_only_ramdisk(ram):
    p = bm("--read-only", "--bs", "512,4K,1M", "--threads", "1,8",
           "--seconds", "0.3", "--json", ram)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    j = json.loads(p.stdout)
    assert j["device"] == ram
    assert j["size_bytes"] == RAM_MIB << 20
    assert j["logical_block_size"] == 512
    assert [(r["op"], r["bs"], r["threads"]) for r in j["results"]] == \
        [("read", bs, t) for bs in (512, 4096, 1 << 20) for t in (1, 8)]
    for r in j["results"]:
        assert r["iops"] > 0 and r["ios"] > 0 and r["seconds"] >= 0.3
        assert abs(r["bw_bytes"] - r["iops"] * r["bs"]) <= 0.01 * r["bs"] + 1
