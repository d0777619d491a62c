# SPDX-License-Identifier: GPL-2.0-only
"""tools/compare on ramdisks: bare vs dm-remap side by side, preconditioned
to steady state, with the garbage collector at work; and refusals.

The devices are small (dm-linear slices of a ramdisk) and preconditioned
with small factors: the VM is slow."""
import importlib.machinery
import importlib.util
import json
import mmap
import os
import random
import re
import types

from conftest import (BLOCK, DM_PREFIX, MNT, REMAPCTL, REPO, dm_create, dm_path,
                      dm_remove, dump, remapctl, run)

COMPARE = str(REPO / "tools" / "compare")
NAME = DM_PREFIX + "cmp"
MiB = 1 << 20


def compare(*args):
    return run([COMPARE, "--name", NAME, *args], check=False)


def dm_exists():
    return os.path.exists(f"/dev/mapper/{NAME}")


def small_device(ram, mib):
    dm_create("small", f"0 {mib << 11} linear {ram} 0")
    return dm_path("small")


def load(out):
    with open(f"{out}/results.json") as f:
        return json.load(f)


def test_compare_side_by_side(ram):
    out = "/tmp/dmrt-compare"
    p = compare("--bs", "4K,64K", "--threads", "1,2", "--seconds", "0.3",
                "--fio", "randwrite-4k,randread-4k", "--fio-runtime", "1",
                "--precondition", "1", "--fresh", "--label", "test ramdisk",
                "--linear", "--out", out, small_device(ram, 32))
    assert p.returncode == 0, p.stderr
    assert not dm_exists(), "compare must remove its dm device"
    res = load(out)
    assert res["schema"] == "dm-remap-compare/2"
    assert res["kernel"] == os.uname().release
    assert res["device"]["label"] == "test ramdisk"
    assert re.match(r"0 \d+ remap ", res["dm_remap"]["table"]), res["dm_remap"]
    logical = res["dm_remap"]["logical_bytes"]
    # the region defaults to the whole remapped capacity
    assert res["params"]["region_bytes"] == logical // MiB * MiB
    assert res["params"]["precondition"] == 1 and res["params"]["fresh"] is True
    grid = sorted((op, bs, t) for op in ("read", "write") for bs in (4096, 65536)
                  for t in (1, 2))
    wgrid = [g for g in grid if g[0] == "write"]
    for side in ("bare", "remap"):
        cells = res["bm_flash"][side]
        assert sorted((c["op"], c["bs"], c["threads"]) for c in cells) == grid
        for c in cells:
            assert c["iops"] > 0 and c["ios"] > 0
            assert abs(c["bw_bytes"] - c["iops"] * c["bs"]) <= 0.005 * c["bs"] + 1  # iops: 2 decimals
            assert not c.get("capped")
        fresh = res["bm_flash_fresh"][side]
        assert sorted((c["op"], c["bs"], c["threads"]) for c in fresh) == wgrid
        assert all(c["iops"] > 0 for c in fresh)
        fio = res["fio"][side]
        assert fio["randwrite-4k"]["write"]["iops"] > 0
        assert "read" not in fio["randwrite-4k"]
        assert fio["randread-4k"]["read"]["iops"] > 0
        # preconditioned: the remapped capacity filled, then overwritten once
        pre = res["precondition"][side]
        assert pre["bytes"] == logical and pre["factor"] == 1
        assert pre["random"]["bytes"] >= logical // 4096 * 4096 and pre["random"]["iops"] > 0
    lin = res["bm_flash"]["linear"]
    assert sorted((c["op"], c["bs"], c["threads"]) for c in lin) == grid
    assert all(c["iops"] > 0 for c in lin)
    assert "linear" not in run(["dmsetup", "ls"]).stdout

    # dm-remap status through the run: one format, counters never reset
    st = res["remap_status"]
    assert set(st) == {"format", "fresh_end", "measure_start", "measure_end"}
    assert st["format"]["user_blocks"] == 0
    assert (st["format"]["user_blocks"] < st["fresh_end"]["user_blocks"]
            < st["measure_start"]["user_blocks"] < st["measure_end"]["user_blocks"])
    # the preconditioning alone wrote twice the capacity through dm-remap
    pre_blocks = st["measure_start"]["user_blocks"] - st["fresh_end"]["user_blocks"]
    assert pre_blocks >= 2 * (logical // 4096), (pre_blocks, logical)
    end = res["remap_status_end"]
    assert end == st["measure_end"]
    assert end["mode"] == "write" and end["first_error"] == 0
    assert end["gc_state"] == "idle"                # compare waited for GC
    assert end["gc_runs"] > 0                       # a full device needs GC
    gc = res["gc"]
    assert gc["user_blocks"] == end["user_blocks"] - st["measure_start"]["user_blocks"]
    assert gc["waf"] == round(gc["device_blocks"] / gc["user_blocks"], 3)
    assert gc["waf"] >= 1.0 and res["waf"]["steady"] == gc["waf"]
    assert res["waf"]["precondition"] >= 1.0 and res["waf"]["fresh"] >= 1.0
    assert res["waf"]["format"] == end["waf_format"] and end["waf_format"] >= 1.0
    # what the device below counted: the log and the checkpoints
    assert gc["dev_write_bytes"] >= 0.95 * gc["device_blocks"] * 4096, gc
    assert res["waf"]["steady_device"] == gc["dev_waf"] >= 0.95 * gc["waf"]
    for c in res["bm_flash"]["remap"]:
        if c["op"] == "write":
            d = c["status_delta"]
            assert d["user_blocks"] >= c["ios"] * c["bs"] // 4096
            assert c["waf"] == d["waf"] and c["waf"] >= 1.0
        else:
            assert "status_delta" not in c
    assert res["fio"]["remap"]["randwrite-4k"]["waf"] >= 1.0
    assert res["warnings"] == []

    # the printed table: one row per block size, ratio = remapped/bare IOPS
    text = p.stdout
    assert "steady state: each device preconditioned with a sequential fill of" in text
    assert "then 1 x" in text
    grid_text, rest = text.split("fresh devices, before preconditioning")
    rows = [line for line in grid_text.splitlines()
            if re.match(r"\s+(4K|64K)\s+\|", line)]
    assert len(rows) == 4, text                 # read and write sections
    bare = {(c["op"], c["bs"], c["threads"]): c["iops"] for c in res["bm_flash"]["bare"]}
    remap = {(c["op"], c["bs"], c["threads"]): c["iops"] for c in res["bm_flash"]["remap"]}
    w4k = [line for line in rows if line.split()[0] == "4K"][1]
    ratios = [float(x) for x in re.findall(r"(\d+\.\d\d)x", w4k)]
    want = [remap[("write", 4096, t)] / bare[("write", 4096, t)] for t in (1, 2)]
    assert ratios == [round(w, 2) for w in want], (w4k, want)
    fresh_rows = [line for line in rest.split("dm-linear over")[0].splitlines()
                  if re.match(r"\s+(4K|64K)\s+\|", line)]
    assert len(fresh_rows) == 2, text
    assert "remapped / dm-linear" in text
    assert re.search(r"randwrite-4k\s+write", text)
    assert re.search(r"measured cells, steady state\s+%.2f\s+%.2f$" % (gc["waf"], gc["dev_waf"]),
                     text, re.M), text
    assert "formatted again" not in text and "garbage collector" not in text
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


def test_compare_writes_past_the_free_space(ram):
    """With the garbage collector a small device runs a write cell that
    writes more than twice its free space, for its whole time: no cap, no
    format in the middle of the run, no error; the GC ran during the
    measured cell and results.json has the steady-state write
    amplification.  (--precondition: the default, 2.)  No chart: what
    this test looks at is in results.json and the table, and
    test_compare_side_by_side checks the chart (matplotlib under TCG
    takes longer than a measured cell)."""
    out = "/tmp/dmrt-compare-gc"
    p = compare("--bs", "1M", "--threads", "1", "--seconds", "3", "--size", "8M",
                "--no-chart", "--out", out, small_device(ram, 32))
    assert p.returncode == 0, p.stderr
    res = load(out)
    assert "remap_refreshes" not in res and "bm_flash_fresh" not in res
    assert res["params"]["precondition"] == 2
    bare = {c["op"]: c for c in res["bm_flash"]["bare"]}
    remap = {c["op"]: c for c in res["bm_flash"]["remap"]}
    assert set(bare) == set(remap) == {"read", "write"}
    assert remap["read"]["seconds"] >= 2.9
    w = remap["write"]
    assert w["seconds"] >= 2.9 and w["iops"] > 0, w     # ran its whole time
    st = res["remap_status"]
    start, end = st["measure_start"], st["measure_end"]
    written = w["ios"] * w["bs"]
    assert written > 2 * start["free_bytes"], (written, start)
    # the counters since the one format cover everything: no reload, no refresh
    logical_blocks = res["dm_remap"]["logical_bytes"] // 4096
    assert end["user_blocks"] >= 3 * logical_blocks + written // 4096
    assert end["mode"] == "write" and end["first_error"] == 0
    assert res["gc"]["gc_runs"] > 0 and res["gc"]["segments_freed"] > 0
    assert w["status_delta"]["gc_runs"] > 0
    waf = res["waf"]["steady"]
    assert waf is not None and waf >= 1.0 and waf == res["gc"]["waf"]
    assert res["waf"]["precondition"] > 1.0          # GC moved blocks to fill it
    assert re.search(r"measured cells, steady state\s+\d+\.\d\d", p.stdout), p.stdout
    assert not re.search(r"^\s+1M\s+\|.*\*", p.stdout, re.M), p.stdout
    assert "formatted again" not in p.stdout
    assert not dm_exists()


def test_compare_says_when_the_device_is_too_small(ram):
    """compare still refuses what dm-remap cannot do: a device too small to
    format, and a region larger than the remapped capacity.  Both before
    any test is run."""
    out = "/tmp/dmrt-compare-small"
    p = compare("--bs", "1M", "--threads", "1", "--seconds", "0.3",
                "--out", out, small_device(ram, 12))
    assert p.returncode == 1, p.stdout
    msg = p.stderr.splitlines()[-1]
    assert re.fullmatch(r"compare: remapctl format \S+ failed: \S+: device too small "
                        r"for this segment size: segments of .* need a device "
                        r"of at least .*", msg), msg
    assert not dm_exists()
    assert not os.path.exists(f"{out}/results.json")

    dm_remove("small")      # settles udev's probe of it first
    p = compare("--bs", "1M", "--threads", "1", "--seconds", "0.3", "--size", "48M",
                "--out", out, small_device(ram, 48))
    assert p.returncode == 2, p.stdout
    msg = p.stderr.splitlines()[-1]
    assert re.fullmatch(r"compare: --size 50331648 is larger than the remapped "
                        r"capacity \(\d+ bytes\)", msg), msg
    assert not dm_exists()
    assert not os.path.exists(f"{out}/results.json")


def peers_dir():
    """scripts/peers.sh's directory (the deps step prepares it; make
    check passes it as DMR_PEERS_DIR): dm-writeboost.ko built for this
    kernel and make-bcache, from Debian's packages."""
    d = os.environ.get("DMR_PEERS_DIR") or os.path.expanduser("~/.cache/dm-remap/peers")
    assert os.path.exists(f"{d}/wb/dm-writeboost.ko") and os.access(
        f"{d}/sbin/make-bcache", os.X_OK), f"no peers in {d}: run scripts/peers.sh on the host"
    return d


def first_mib(dev):
    with open(dev, "rb") as f:
        return f.read(MiB)


def bcache_left():
    sets = [e for e in os.listdir("/sys/fs/bcache") if "-" in e] \
        if os.path.isdir("/sys/fs/bcache") else []
    return sets + [b for b in os.listdir("/sys/block") if b.startswith("bcache")]


def test_compare_with_peers(ram):
    """--peers writeboost,bcache (the README demo's): each peer set up over
    the same device, its cache on the last 10%, preconditioned as the
    others, its grid measured and printed with remapped / peer ratios and
    what it wrote to the device; everything torn down after, no bcache
    device or set and no dm device left.  A make-bcache that is not there
    is refused before anything is written."""
    d = peers_dir()
    run(["modprobe", "bcache"])
    if not os.path.exists("/sys/module/dm_writeboost"):
        run(["insmod", f"{d}/wb/dm-writeboost.ko"])
    dev = small_device(ram, 64)
    before = first_mib(dev)
    p = compare("--bs", "4K", "--threads", "1", "--seconds", "0.3", "--peers", "bcache",
                "--make-bcache", "/nonexistent/make-bcache", dev)
    assert p.returncode == 1 and p.stderr.splitlines()[-1] == (
        "compare: --peers bcache: /nonexistent/make-bcache not found (Debian: apt "
        "install bcache-tools)"), p.stderr
    assert first_mib(dev) == before and not dm_exists()

    out = "/tmp/dmrt-compare-peers"
    p = compare("--bs", "4K,64K", "--threads", "1,2", "--seconds", "0.3",
                "--precondition", "1", "--peers", "writeboost,bcache",
                "--make-bcache", f"{d}/sbin/make-bcache", "--out", out, dev)
    assert p.returncode == 0, p.stderr
    assert bcache_left() == [], bcache_left()
    assert [n for n in run(["dmsetup", "ls"]).stdout.split() if n.startswith(NAME)] == []
    res = load(out)
    assert res["params"]["peers"] == ["writeboost", "bcache"]
    assert res["peer_versions"]["writeboost"].startswith("dm-writeboost target v")
    logical = res["dm_remap"]["logical_bytes"]
    grid = sorted((op, bs, t) for op in ("read", "write") for bs in (4096, 65536)
                  for t in (1, 2))
    sectors = res["device"]["bytes"] // 512
    for way in ("writeboost", "bcache"):
        cells = res["bm_flash"][way]
        assert sorted((c["op"], c["bs"], c["threads"]) for c in cells) == grid
        assert all(c["iops"] > 0 and c["ios"] > 0 for c in cells)
        pre = res["precondition"][way]
        want = min(logical, load_compare_peer_logical(way, sectors) // MiB * MiB)
        assert pre["bytes"] == want and pre["random"]["bytes"] >= want // 4096 * 4096
        # what the peer's writes cost the device below: its cache took
        # every byte written (both cache every random write in writeback
        # mode), and a writeback may come on top
        assert res["peer_waf"][way] >= 0.9, res["peer_waf"]
        remap = {(c["op"], c["bs"], c["threads"]): c["iops"] for c in res["bm_flash"]["remap"]}
        peer = {(c["op"], c["bs"], c["threads"]): c["iops"] for c in cells}
        sec = p.stdout.split(" over the same device, its cache on the last 10%")[
            1 if way == "writeboost" else 2].split("\n\n")[0]
        w4k = re.findall(r"^\s+4K\s+\|.*$", sec, re.M)[1]
        assert [float(x) for x in re.findall(r"(\d+\.\d\d)x", w4k)] == [
            round(remap[("write", 4096, t)] / peer[("write", 4096, t)], 2) for t in (1, 2)], w4k
        assert f"  {way}: bytes written to {dev} during its measured cells" in sec
    with open(f"{out}/chart.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def load_compare_peer_logical(way, sectors):
    return compare_module().peer_logical_bytes(way, sectors)


def compare_module():
    loader = importlib.machinery.SourceFileLoader("dmr_compare", COMPARE)
    spec = importlib.util.spec_from_loader("dmr_compare", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_flushed_status_counts_what_open_units_hold(ram):
    """Status field 8 (device_blocks) counts a log block when its unit is
    written: 64 random 4 KiB writes, acknowledged (the target is a volatile
    write cache) but still in a head's open unit, are in user_blocks and
    not yet in it, so a bench cell that wrote little read a WAF below 1
    (70/30 file-system mixes: 0.69-0.95).  Remap.flushed_status() flushes
    the target first, which seals every head's unit: then they are."""
    cmp = compare_module()
    dev = small_device(ram, 32)
    remapctl("format", dev)
    n = int(dump(dev)["logical_sectors"])
    # no checkpoint (which flushes) while the test looks
    dm_create("cmp", f"0 {n} remap {dev} 2 checkpoint_interval 86400")
    r = cmp.Remap(types.SimpleNamespace(name=NAME, format_opt=[], create_opt=[]), dev,
                  REMAPCTL)
    st0 = r.flushed_status()
    buf = mmap.mmap(-1, BLOCK)
    fd = os.open(r.path, os.O_WRONLY | os.O_DIRECT)
    try:
        for lba in random.Random(5).sample(range(n // 8), 64):
            buf.seek(0)
            buf.write(lba.to_bytes(8, "little") * (BLOCK // 8))
            assert os.pwritev(fd, [buf], lba * BLOCK) == BLOCK
    finally:
        os.close(fd)
    d = cmp.status_delta(st0, r.check())
    assert d["user_blocks"] == 64 and d["device_blocks"] < 64, d
    d = cmp.status_delta(st0, r.check(r.flushed_status()))
    # the 64 blocks and at least one summary
    assert d["user_blocks"] == 64 and d["device_blocks"] >= 65 and d["waf"] > 1, d
    assert d["flushes"] >= 1, d
