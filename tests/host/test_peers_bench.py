# SPDX-License-Identifier: GPL-2.0-only
"""tests/vm/guest-peers.py on the host: its medians, its table and the
remap / best-peer ratio, from made-up rounds; and scripts/peers.sh's
patch of Debian's dm-writeboost for 6.12.  Importing the script runs
nothing: its main is guarded."""
import json
from pathlib import Path

import pytest
from scriptload import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "vm" / "guest-peers.py"


@pytest.fixture(scope="module")
def gp():
    return load_script(SCRIPT, "guest_peers")


def cell(iops, mibs=None, cpu=1000.0, waf=None):
    return {"iops": iops, "mibs": mibs if mibs is not None else iops * 4096 / (1 << 20),
            "cpu_ns": cpu, "waf": waf}


def round_of(gp, scale, waf):
    r = {"fresh": {c: cell(1000 * scale, waf=waf) for c in gp.FRESH},
         "fill": cell(100, mibs=50 * scale, waf=waf),
         "pre": cell(900 * scale, waf=waf),
         "steady": {c: cell(800 * scale, mibs=40 * scale, cpu=1000.0 * scale,
                            waf=waf if "w" in c else None)
                    for c in gp.STEADY}}
    return r


def test_report_medians_and_ratio(gp, tmp_path):
    ways = ["bare", "remap", "writeboost", "bcache"]
    scales = {"bare": [1, 3, 2], "remap": [2, 2, 5], "writeboost": [1, 1, 1],
              "bcache": [4, 3, 1]}
    raw = {w: [round_of(gp, s, 1.5 if w != "bare" else 1.0) for s in scales[w]]
           for w in ways}
    res = {"kernel": "k", "date": "d", "runs": 3, "seconds": 1, "mib": 64,
           "region": 32 << 20, "ways": ways, "raw": raw}
    gp.report(res, str(tmp_path))
    text = (tmp_path / "peers.txt").read_text()
    row = next(ln for ln in text.splitlines()
               if ln.startswith("4K rand write, 1 writer, steady"))
    # medians: bare 1600 [800-2400], remap 1600 [1600-4000], writeboost
    # 800, bcache 2400 [800-3200]: remap / best peer = 1600 / 2400
    assert "1600 [800-2400]" in row and "1600 [1600-4000]" in row, row
    assert "2400 [800-3200]" in row, row
    assert row.split()[-2:] == ["1.00", "0.67"], row     # remap/bare, /best peer
    cpu = text.split("-- CPU per 4 KiB block")[1].split("--")[0]
    assert "remap/cheaper peer" in cpu
    # CPU medians: remap 2000, writeboost 1000, bcache 3000: remap /
    # cheaper peer = 2000 / 1000
    crow = next(ln for ln in cpu.splitlines() if ln.startswith("4K rand write, 1 writer, steady"))
    assert crow.split()[-1] == "2.00", crow
    # per block written below: CPU over WAF (1.5 but bare's 1.0), round
    # by round: remap 2000/1.5 [..5000/1.5], writeboost 1000/1.5
    dev = text.split("-- CPU per 4 KiB block written below")[1].split("--")[0]
    drow = next(ln for ln in dev.splitlines() if ln.startswith("4K rand write, 1 writer, steady"))
    assert "1333 [1333-3333]" in drow and "667 [667-667]" in drow, drow
    assert drow.split()[-1] == "2.00", drow
    big = next(ln for ln in text.splitlines() if ln.startswith("1M seq read"))
    assert "80 [40-120]" in big, big        # MiB/s for the 1 MiB cells
    waf = text.split("-- write amplification")[1]
    assert "1.50 [1.50-1.50]" in waf and "1.00 [1.00-1.00]" in waf, waf
    assert "1M seq read" not in waf         # reads have no WAF row
    saved = json.loads((tmp_path / "peers.json").read_text())
    assert saved["raw"]["remap"][2]["steady"]["w4k-1"]["iops"] == 4000


def test_agg_skips_missing(gp):
    assert gp.agg([None, None]) is None
    assert gp.agg([3, None, 1, 2])["median"] == 2


def test_writeboost_patch_matches_the_package_source():
    """The two lines scripts/peers.sh patches, as sed expressions the
    script carries, turn the 2.2.17 calls into the 6.12 ones."""
    s = (REPO / "scripts" / "peers.sh").read_text()
    assert "s/i_size_read(dev->bdev->bd_inode) >> 9/bdev_nr_sectors(dev->bdev)/" in s
    assert "s/blk_limits_io_opt(limits, 4096);/limits->io_opt = 4096;/" in s
    # and it refuses to go on when they did not apply
    assert "the 6.12 patch did not apply" in s


def test_bcache_bucket_leaves_more_than_1024(gp):
    """bcache refuses a cache of 512 buckets or fewer; 51 MiB (a 512 MiB
    ramdisk's tenth) with the default 512 KiB buckets has 102."""
    for mib in (8, 51, 102, 511, 513, 4096):
        b = gp.bcache_bucket(mib << 20)
        assert (mib << 20) // b > 1024 and b & (b - 1) == 0, (mib, b)
        assert b == 512 << 10 or (mib << 20) // (2 * b) <= 1024, (mib, b)
    assert gp.bcache_bucket(1 << 30) == 512 << 10


def test_drive_kinds(gp, tmp_path, monkeypatch):
    """DMR_PEERS_MEDIA: ram or media (guest-bench.py's model, its
    DMR_BENCH_MEDIA), nothing else; the report names the drive."""
    with pytest.raises(SystemExit):
        gp.Drive("disk", 64)
    assert "brd ramdisk" in gp.Drive("ram", 64).label()
    monkeypatch.setenv("DMR_BENCH_MEDIA", "completion_us=500")
    d = gp.Drive("media", 100)
    assert d.media["completion_us"] == 500 and d.media["mbps"] == 150
    assert "4 null_blk members of 34 MiB" in d.label() and "500 us/command" in d.label()
    res = {"kernel": "k", "date": "d", "runs": 1, "seconds": 1, "mib": 100,
           "region": 32 << 20, "drive": d.label(), "ways": ["bare"],
           "raw": {"bare": [round_of(gp, 1, 1.0)]}}
    gp.report(res, str(tmp_path), quiet=True)
    assert (tmp_path / "peers.txt").read_text().startswith(
        "==== peers (issue 41 goal 5): one md RAID-5 per way")


def test_pick_cells(gp):
    """DMR_PEERS_CELLS picks cells by name in their own order; unknown
    names are refused; a pick without a steady cell skips the fill."""
    assert gp.pick_cells("") == (gp.FRESH, gp.STEADY)
    assert gp.pick_cells("all") == (gp.FRESH, gp.STEADY)
    assert gp.pick_cells("fs-sync, w4k-sync") == (("w4k-sync", "fs-sync"), ("w4k-sync",))
    assert gp.pick_cells("fs-sync") == (("fs-sync",), ())
    assert gp.pick_cells("r1m") == ((), ("r1m",))
    for bad in ("w4k-2", "fs-sync,nope", ","):
        with pytest.raises(SystemExit):
            gp.pick_cells(bad)


def test_report_of_the_fsync_cells_alone(gp, tmp_path):
    """Rounds of the fsync cells alone (no fill, no steady phase but
    w4k-sync's): the report has their rows and no others."""
    def rnd(scale):
        return {"fresh": {"w4k-sync": cell(100 * scale, waf=2.0),
                          "fs-sync": cell(50 * scale, waf=3.0)},
                "steady": {"w4k-sync": cell(70 * scale, waf=4.0)}}
    ways = ["bare", "remap", "bcache"]
    raw = {"bare": [rnd(1), rnd(2), rnd(3)], "remap": [rnd(2), rnd(2), rnd(2)],
           "bcache": [rnd(1), rnd(1), rnd(1)]}
    res = {"kernel": "k", "date": "d", "runs": 3, "seconds": 1, "mib": 64,
           "region": 32 << 20, "ways": ways, "raw": raw}
    gp.report(res, str(tmp_path), quiet=True)
    text = (tmp_path / "peers.txt").read_text()
    fs = next(ln for ln in text.splitlines() if ln.startswith("ext4 small files + fsync"))
    # medians bare 100, remap 100, bcache 50: remap/bare 1.00, /best peer 2.00
    assert fs.split()[-2:] == ["1.00", "2.00"], fs
    assert "4K rand write + fsync, 1, steady" in text
    assert "1 writer, fresh" not in text and "1M seq" not in text, text


def test_raid5_drive_label(gp):
    d = gp.Drive("raid5", 96)
    assert d.label() == "one md RAID-5 per way over 4 brd ramdisks of 32 MiB, 64K chunk"
