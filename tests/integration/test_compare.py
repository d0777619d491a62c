# SPDX-License-Identifier: GPL-2.0-only
"""tools/compare on ramdisks: bare vs dm-remap side by side, and refusals."""
import json
import os
import re

from conftest import DM_PREFIX, MNT, REPO, dm_create, dm_path, run

COMPARE = str(REPO / "tools" / "compare")
NAME = DM_PREFIX + "cmp"


def compare(*args):
    return run([COMPARE, "--name", NAME, *args], check=False)


def dm_exists():
    return os.path.exists(f"/dev/mapper/{NAME}")


def test_compare_side_by_side(ram):
    out = "/tmp/dmrt-compare"
    p = compare("--bs", "4K,64K", "--threads", "1,2", "--seconds", "0.5",
                "--size", "16M", "--fio", "randwrite-4k,randread-4k",
                "--fio-runtime", "1", "--label", "test ramdisk", "--linear",
                "--out", out, ram)
    assert p.returncode == 0, p.stderr
    assert not dm_exists(), "compare must remove its dm device"
    with open(f"{out}/results.json") as f:
        res = json.load(f)
    assert res["schema"] == "dm-remap-compare/1"
    assert res["kernel"] == os.uname().release
    assert res["device"]["path"] == ram and res["device"]["label"] == "test ramdisk"
    assert re.match(r"0 \d+ remap ", res["dm_remap"]["table"]), res["dm_remap"]
    assert res["params"]["region_bytes"] == 16 << 20
    grid = sorted((op, bs, t) for op in ("read", "write") for bs in (4096, 65536)
                  for t in (1, 2))
    for side in ("bare", "remap"):
        cells = res["bm_flash"][side]
        assert sorted((c["op"], c["bs"], c["threads"]) for c in cells) == grid
        for c in cells:
            assert c["iops"] > 0 and c["ios"] > 0
            assert abs(c["bw_bytes"] - c["iops"] * c["bs"]) <= 0.005 * c["bs"] + 1  # iops: 2 decimals
        fio = res["fio"][side]
        assert fio["randwrite-4k"]["write"]["iops"] > 0
        assert "read" not in fio["randwrite-4k"]
        assert fio["randread-4k"]["read"]["iops"] > 0
    lin = res["bm_flash"]["linear"]
    assert sorted((c["op"], c["bs"], c["threads"]) for c in lin) == grid
    assert all(c["iops"] > 0 for c in lin)
    assert "linear" not in run(["dmsetup", "ls"]).stdout
    assert "remapped / dm-linear" in p.stdout or "dm-linear over the same device" in p.stdout
    end = res["remap_status_end"]
    assert end["mode"] == "write" and end["first_error"] == 0
    assert end["user_blocks"] > 0     # the remapped cells did write through dm-remap

    # the printed table: one row per block size, ratio = remapped/bare IOPS
    grid_text = p.stdout.split("dm-linear over the same device")[0]
    rows = [line for line in grid_text.splitlines()
            if re.match(r"\s+(4K|64K)\s+\|", line)]
    assert len(rows) == 4, p.stdout             # read and write sections
    bare = {(c["op"], c["bs"], c["threads"]): c["iops"] for c in res["bm_flash"]["bare"]}
    remap = {(c["op"], c["bs"], c["threads"]): c["iops"] for c in res["bm_flash"]["remap"]}
    w4k = [line for line in rows if line.split()[0] == "4K"][1]
    ratios = [float(x) for x in re.findall(r"(\d+\.\d\d)x", w4k)]
    want = [remap[("write", 4096, t)] / bare[("write", 4096, t)] for t in (1, 2)]
    assert ratios == [round(w, 2) for w in want], (w4k, want)
    assert re.search(r"randwrite-4k\s+write", p.stdout)
    with open(f"{out}/chart.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # --report prints the same table again from the JSON
    r = run([COMPARE, "--report", f"{out}/results.json", "--no-chart"], check=False)
    assert r.returncode == 0 and w4k in r.stdout


def test_compare_refuses_mounted_and_formatted(ram):
    run(["mkfs.ext4", "-q", "-F", ram])
    p = compare("--bs", "4K", "--threads", "1", "--seconds", "0.2", ram)
    assert p.returncode == 1 and "signature" in p.stderr and "--force" in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr
    os.makedirs(MNT, exist_ok=True)
    run(["mount", ram, MNT])
    try:
        p = compare("--bs", "4K", "--threads", "1", "--seconds", "0.2", "--force", ram)
        assert p.returncode == 1 and "in use" in p.stderr, p.stderr
        assert not dm_exists()
    finally:
        run(["umount", MNT])
    run(["e2fsck", "-fn", ram])      # refusals wrote nothing


def small_device(ram, mib):
    dm_create("small", f"0 {mib << 11} linear {ram} 0")
    return dm_path("small")


def test_compare_caps_writes_on_a_small_device(ram):
    """No GC yet: a remapped write cell that would write more than the free
    space is capped to it (bm-flash --max-bytes), run again on a fresh
    format and marked, instead of failing with ENOSPC."""
    out = "/tmp/dmrt-compare-cap"
    p = compare("--bs", "1M", "--threads", "1", "--seconds", "6", "--size", "8M",
                "--out", out, small_device(ram, 48))
    assert p.returncode == 0, p.stderr
    with open(f"{out}/results.json") as f:
        res = json.load(f)
    bare = {c["op"]: c for c in res["bm_flash"]["bare"]}
    remap = {c["op"]: c for c in res["bm_flash"]["remap"]}
    assert not any(c.get("capped") for c in bare.values())
    assert not remap["read"]["capped"] and remap["read"]["seconds"] >= 5.9
    w = remap["write"]
    assert w["capped"] and w["seconds"] < 0.9 * 6 and w["iops"] > 0
    # it wrote about the free space of a fresh format, and no more
    assert 16 << 20 <= w["ios"] * w["bs"] <= 40 << 20, w
    assert res["remap_refreshes"] >= 1
    assert res["remap_status_end"]["first_error"] == 0
    assert re.search(r"^\s+1M\s+\|.*\*", p.stdout, re.M), p.stdout
    assert "no garbage collector yet" in p.stdout


def test_compare_says_when_the_device_is_too_small(ram):
    p = compare("--bs", "1M", "--threads", "1", "--seconds", "0.3", "--size", "8M",
                "--out", "/tmp/dmrt-compare-small", small_device(ram, 24))
    assert p.returncode == 1, p.stdout
    msg = p.stderr.splitlines()[-1]
    assert "garbage collector" in msg and "--seconds" in msg and "--size" in msg, msg
    assert not dm_exists()
    with open("/tmp/dmrt-compare-small/results.json") as f:
        res = json.load(f)
    assert [c["op"] for c in res["bm_flash"]["bare"]] == ["read", "write"]
    assert res["bm_flash"]["remap"] == []
