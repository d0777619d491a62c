# SPDX-License-Identifier: GPL-2.0-only
"""remapctl on real block devices: refusals, stripe-aware defaults, create."""
import os

import pytest

from conftest import (BLOCK, DM_PREFIX, MNT, Ram, dm_path, dump,
                      remapctl, run, sectors, wipe)


def test_refuses_filesystem_unless_forced(ram):
    run(["mkfs.ext4", "-q", "-F", ram])
    p = remapctl("format", ram, check=False)
    assert p.returncode == 1
    assert "ext4" in p.stderr and "--force" in p.stderr
    assert run(["blkid", "-p", "-o", "value", "-s", "TYPE", ram]).stdout.strip() == "ext4"
    p = remapctl("format", "--force", ram)
    assert "logical size" in p.stdout
    assert dump(ram)["superblock_copy0"] == "ok"


def test_refuses_dm_remap_device_unless_forced(ram):
    remapctl("format", ram)
    uuid = dump(ram)["uuid"]
    p = remapctl("format", ram, check=False)
    assert p.returncode == 1 and "dm-remap" in p.stderr
    assert dump(ram)["uuid"] == uuid
    remapctl("format", "--force", ram)
    assert dump(ram)["uuid"] != uuid


def test_refuses_mounted_device(ram):
    run(["mkfs.ext4", "-q", "-F", ram])
    os.makedirs(MNT, exist_ok=True)
    run(["mount", ram, MNT])
    try:
        p = remapctl("format", ram, check=False)
        assert p.returncode == 1
        assert "in use" in p.stderr
    finally:
        run(["umount", MNT])


def test_refuses_device_held_by_dm(ram):
    remapctl("format", ram)
    remapctl("create", DM_PREFIX + "held", ram)
    p = remapctl("format", ram, check=False)
    assert p.returncode == 1 and "in use" in p.stderr


def test_printed_size_matches_superblock_and_create(ram):
    out = remapctl("format", "--overprovision", "20", "--segment-size", "2M",
                   "--label", "demo", ram).stdout
    info = dump(ram)
    assert f"logical size: {info['logical_sectors']} sectors" in out
    assert info["segment_blocks"] == str(2 * 1024 * 1024 // BLOCK)
    assert info["overprovision"] == "20" and info["label"] == "demo"
    remapctl("create", DM_PREFIX + "c", ram, "--checkpoint-interval", "9", "--zero-copy",
             "--gc-high", "6")
    assert sectors(dm_path("c")) == int(info["logical_sectors"])
    assert "5 checkpoint_interval 9 zero_copy gc_high 6" in run(
        ["dmsetup", "table", DM_PREFIX + "c"]).stdout
    remapctl("remove", DM_PREFIX + "c")


def test_too_small_device(ram):
    dev = ram
    run(["dmsetup", "create", DM_PREFIX + "tiny", "--table",
         f"0 8192 linear {dev} 0"])
    p = remapctl("format", dm_path("tiny"), check=False)
    assert p.returncode == 1 and "too small" in p.stderr


@pytest.fixture
def raid5():
    devs = [Ram.get() for _ in range(4)]
    md = "/dev/md/dmrt"
    run(["mdadm", "--create", md, "--run", "--quiet", "--level=5",
         "--raid-devices=4", "--chunk=64", "--assume-clean",
         "--metadata=1.2", *devs], input="y\n")
    yield md, devs
    run(["mdadm", "--stop", md], check=False)
    for d in devs:
        run(["mdadm", "--zero-superblock", d], check=False)
        wipe(d)
    Ram.used -= 4


def test_raid5_stripe_default_and_member_refusal(raid5):
    md, devs = raid5
    io_opt = int(run(["blockdev", "--getioopt", md]).stdout)
    assert io_opt == 3 * 64 * 1024
    remapctl("format", md)
    seg = int(dump(md)["segment_blocks"]) * BLOCK
    assert seg % io_opt == 0 and seg >= 1 << 20 and seg < (1 << 20) + io_opt
    assert int(dump(md)["stripe_blocks"]) * BLOCK == io_opt
    # a member of a running array is in use
    p = remapctl("format", devs[0], check=False)
    assert p.returncode == 1 and "in use" in p.stderr
    # a member of a stopped array still carries the RAID signature
    run(["mdadm", "--stop", md])
    p = remapctl("format", devs[0], check=False)
    assert p.returncode == 1 and "linux_raid_member" in p.stderr
