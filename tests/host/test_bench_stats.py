# SPDX-License-Identifier: GPL-2.0-only
"""tests/vm/guest-bench.py on the host: the pure parts of `make bench`'s
guest side (aggregation over rounds, ratios, goal evaluation, the device
rotation, cell selection, the media-model setting and the summary text),
on synthetic results.  Importing the script runs nothing: its main is
guarded."""
import re
from pathlib import Path

import pytest
from scriptload import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "vm" / "guest-bench.py"


@pytest.fixture(scope="module")
def gb():
    return load_script(SCRIPT, "guest_bench")


def cell_def(gb, cid):
    return next(c for c in gb.raw_cells(196608) if c["id"] == cid)


def iops_runs(**devs):
    """{device: [iops of each round]} -> the runs aggregate_cell takes."""
    return {d: [None if v is None else {"iops": v, "bw_mibs": v * 4096 / 2**20}
                for v in vals] for d, vals in devs.items()}


def test_aggregate_median_of_three(gb):
    a = gb.aggregate([30.0, 10.0, 20.0])
    assert (a["median"], a["min"], a["max"], a["n"]) == (20.0, 10.0, 30.0, 3)
    assert a["runs"] == [30.0, 10.0, 20.0]      # in round order


def test_aggregate_median_of_even_count(gb):
    a = gb.aggregate([4.0, 1.0, 3.0, 2.0])
    assert a["median"] == 2.5
    assert (a["min"], a["max"]) == (1.0, 4.0)


def test_aggregate_skips_missing_runs(gb):
    a = gb.aggregate([5.0, None, 7.0])
    assert (a["median"], a["n"]) == (6.0, 2)
    assert gb.aggregate([None, None]) is None
    assert gb.aggregate([]) is None


def test_aggregate_cell_ratios_of_medians(gb):
    c = cell_def(gb, "randwrite-4k-t1")
    res = gb.aggregate_cell(c, iops_runs(bare=[100, 90, 110], linear=[95, 80, 100],
                                         remap=[300, 310, 200]))
    assert res["metric"] == "iops"
    assert res["devices"]["bare"]["iops"]["median"] == 100
    assert res["devices"]["remap"]["iops"]["min"] == 200
    assert res["devices"]["remap"]["iops"]["max"] == 310
    assert res["ratios"]["remap_bare"] == pytest.approx(3.0)
    assert res["ratios"]["remap_linear"] == pytest.approx(300 / 95)
    assert res["ratios"]["linear_bare"] == pytest.approx(0.95)
    lo, hi = gb.ratio_range(res, "remap", "bare")
    assert lo == pytest.approx(200 / 110)
    assert hi == pytest.approx(310 / 90)


def test_aggregate_cell_large_blocks_judged_by_bandwidth(gb):
    c = cell_def(gb, "randwrite-1m-t10")
    runs = {d: [{"iops": 1.0, "bw_mibs": v} for v in vals]
            for d, vals in {"bare": [200, 210, 190], "remap": [180, 185, 100]}.items()}
    res = gb.aggregate_cell(c, runs)
    assert res["metric"] == "bw_mibs"
    assert res["ratios"]["remap_bare"] == pytest.approx(0.9)
    assert res["ratios"]["remap_linear"] is None        # no dm-linear runs


def test_aggregate_cell_waf_of_remapped_runs(gb):
    c = cell_def(gb, "randwrite-4k-t10")
    runs = iops_runs(bare=[1, 1, 1], remap=[2, 2, 2])
    for r, w in zip(runs["remap"], (5.5, 4.0, None)):
        r["waf"] = w
    res = gb.aggregate_cell(c, runs)
    assert res["devices"]["remap"]["waf"]["median"] == pytest.approx(4.75)
    assert "waf" not in res["devices"]["bare"]


def test_ratio_guards(gb):
    assert gb.ratio(None, 5) is None
    assert gb.ratio(5, 0) is None
    assert gb.ratio(5, None) is None
    assert gb.ratio(6, 3) == 2


def test_rotation_puts_each_device_first_once(gb):
    orders = [gb.rotation(gb.DEVICES, r) for r in range(3)]
    assert [o[0] for o in orders] == ["bare", "linear", "remap"]
    for o in orders:
        assert sorted(o) == sorted(gb.DEVICES)
    assert gb.rotation(("bare", "remap"), 3) == ["remap", "bare"]


def test_select_cells_by_pattern(gb):
    cells = gb.raw_cells(196608)
    assert gb.select(cells, "all") == cells
    assert gb.select(cells, "") == cells
    ids = [c["id"] for c in gb.select(cells, "randwrite-4k-t*, seqwrite-stripe")]
    assert ids == ["randwrite-4k-t1", "randwrite-4k-t2", "randwrite-4k-t4",
                   "randwrite-4k-t8", "randwrite-4k-t10", "randwrite-4k-t16",
                   "randwrite-4k-t40", "seqwrite-stripe"]
    assert gb.select(cells, "nothing-*") == []


def test_cell_grid(gb):
    cells = {c["id"]: c for c in gb.raw_cells(196608)}
    for t in (1, 10, 40):
        assert f"randwrite-4k-t{t}" in cells and f"randread-4k-t{t}" in cells
    for t in (2, 4, 8, 16):     # the scaling of issue 25
        assert f"--numjobs={t}" in cells[f"randwrite-4k-t{t}"]["fio"]
    for bs in ("256k", "1m"):
        for t in (1, 10):
            assert f"randwrite-{bs}-t{t}" in cells
    for mix in (90, 70):
        for qd in (1, 10, 100):
            assert f"--iodepth={qd}" in cells[f"randrw{mix}-4k-qd{qd}"]["fio"]
    assert "--fsync=1" in cells["randwrite-4k-fsync-t10"]["fio"]
    seq = cells["seqwrite-stripe"]
    assert seq["devices"] == ("bare",)
    assert f"--bs={6 * 196608}" in seq["fio"]


def test_parse_media(gb):
    m = gb.parse_media("")
    assert set(m) == {"completion_us", "queue_depth", "mbps", "max_kb"}
    m = gb.parse_media("completion_us=1000, queue_depth=2,mbps=0")
    assert (m["completion_us"], m["queue_depth"], m["mbps"]) == (1000, 2, 0)
    for bad in ("speed=3", "mbps", "queue_depth=x", "queue_depth=0", "completion_us=-1"):
        with pytest.raises(ValueError):
            gb.parse_media(bad)


# ---------------------------------------------------------------- goals

def config(gb, name, cells):
    """A configuration's results from {cell id: runs}."""
    return {"name": name, "label": name,
            "cells": {cid: gb.aggregate_cell(cell_def(gb, cid), runs)
                      for cid, runs in cells.items()}}


def bw_runs(**devs):
    return {d: [{"iops": v * 256, "bw_mibs": v} for v in vals] for d, vals in devs.items()}


def full_raid5(gb, rw1=(100, 400), rw10=(100, 250), rw40=(100, 150)):
    cells = {
        "randwrite-4k-t1": iops_runs(bare=[rw1[0]] * 3, linear=[rw1[0]] * 3,
                                     remap=[rw1[1]] * 3),
        "randwrite-4k-t10": iops_runs(bare=[rw10[0]] * 3, linear=[rw10[0]] * 3,
                                      remap=[rw10[1]] * 3),
        "randwrite-4k-t40": iops_runs(bare=[rw40[0]] * 3, linear=[rw40[0]] * 3,
                                      remap=[rw40[1]] * 3),
        "randread-4k-t1": iops_runs(bare=[100] * 3, linear=[90] * 3, remap=[90] * 3),
        "randread-4k-t10": iops_runs(bare=[100] * 3, linear=[90] * 3, remap=[88] * 3),
        "randread-4k-t40": iops_runs(bare=[100] * 3, linear=[90] * 3, remap=[85] * 3),
        "randwrite-4k-fsync-t1": iops_runs(bare=[50] * 3, linear=[50] * 3, remap=[60] * 3),
        "randwrite-4k-fsync-t10": iops_runs(bare=[50] * 3, linear=[50] * 3, remap=[50] * 3),
        "seqwrite-stripe": bw_runs(bare=[1.0, 1.2, 1.1]),
    }
    for bs in ("256k", "1m"):
        for t in (1, 10):
            cells[f"randwrite-{bs}-t{t}"] = bw_runs(bare=[100] * 3, linear=[100] * 3,
                                                   remap=[95] * 3)
    return config(gb, "raid5-4", cells)


def goal(rows, prefix):
    return next(r for r in rows if r["measure"].startswith(prefix))


def test_goals_met_missed_and_not_measured(gb):
    rows = gb.evaluate_goals([full_raid5(gb)])
    assert len(rows) == len(gb.GOALS)
    assert goal(rows, "4K random write 1 thread")["status"] == "met"          # 4.0x
    g = goal(rows, "4K random write 10 and 40")
    assert g["status"] == "missed"                                           # 1.5x at 40
    assert g["values"] == [pytest.approx(2.5), pytest.approx(1.5)]
    assert goal(rows, "256K-1M")["status"] == "met"                          # 0.95x
    r = goal(rows, "4K random read vs dm-linear")
    assert r["status"] == "missed"                                           # 0.94x at 40
    assert r["values"][0] == pytest.approx(1.0)
    assert goal(rows, "4K write + fsync")["status"] == "met"                 # 1.2x, 1.0x
    s = goal(rows, "remapped 4K random-write BW")
    # best remapped 4K write: 400 IOPS = 1.5625 MiB/s over a 1.1 MiB/s median
    assert s["values"] == [pytest.approx(400 * 4096 / 2**20 / 1.1)]
    assert s["status"] == "met"
    m = goal(rows, "media model")
    assert m["status"] == "not measured" and m["values"] == []
    # no 8- or 16-thread cells in this run
    assert goal(rows, "remapped 4K random write, 8 and 16")["status"] == "not measured"


def test_scaling_goal(gb):
    """Issue 25 2b: remapped IOPS at 8 and 16 writers against 1 writer,
    the remapped device's own medians (bare does not enter)."""
    def cfg(t8, t16):
        return config(gb, "raid5-4", {
            "randwrite-4k-t1": iops_runs(bare=[9] * 3, linear=[9] * 3, remap=[100, 90, 110]),
            "randwrite-4k-t8": iops_runs(bare=[1] * 3, linear=[1] * 3, remap=t8),
            "randwrite-4k-t16": iops_runs(bare=[1] * 3, linear=[1] * 3, remap=t16)})
    g = goal(gb.evaluate_goals([cfg([120, 130, 125], [101, 100, 99])]), "remapped 4K random write, 8")
    assert g["status"] == "met" and g["values"] == [pytest.approx(1.25), pytest.approx(1.0)]
    g = goal(gb.evaluate_goals([cfg([40, 41, 39], [200] * 3)]), "remapped 4K random write, 8")
    assert g["status"] == "missed" and g["values"][0] == pytest.approx(0.4)
    assert "40 vs 100 IOPS" in g["measured"]


def test_goal_with_a_missing_cell_is_not_measured(gb):
    cfg = full_raid5(gb)
    del cfg["cells"]["randwrite-4k-t40"]
    g = goal(gb.evaluate_goals([cfg]), "4K random write 10 and 40")
    assert g["status"] == "not measured"


def test_media_goal(gb):
    media = config(gb, "media", {"randwrite-4k-t10": iops_runs(
        bare=[100, 120, 80], linear=[100] * 3, remap=[490, 700, 400])})
    g = goal(gb.evaluate_goals([media]), "media model")
    assert g["status"] == "missed"                                           # 4.9x
    assert g["values"] == [pytest.approx(4.9)]
    assert "[3.33-8.75]" in g["measured"]
    media["cells"]["randwrite-4k-t10"]["ratios"]["remap_bare"] = 5.0
    assert goal(gb.evaluate_goals([media]), "media model")["status"] == "met"


def test_summary_text(gb):
    raid = full_raid5(gb)
    raid.update(orders=[["bare", "linear", "remap"], ["linear", "remap", "bare"],
                        ["remap", "bare", "linear"]], rounds_done=3,
                geometry={"array_bytes": 768 << 20, "ioopt": 196608,
                          "remap_logical_bytes": 690 << 20, "region_bytes": 690 << 20,
                          "segment_bytes": 1152 << 10, "gc_low": 8, "gc_high": 16},
                waf={"measured": {"waf": 5.4, "dev_waf": 5.5, "user_blocks": 1000,
                                  "device_blocks": 5400, "gc_runs": 3, "gc_moved": 44,
                                  "segments_freed": 3, "throttled": 0}},
                fs={"ext4-80-fstrim": {
                    "fs": "ext4", "fill": 80, "trim": "fstrim",
                    "jobs": {"fs-randwrite-4k": gb.aggregate_cell(
                        gb.fs_jobs()[0], iops_runs(bare=[10, 20, 30], remap=[40, 50, 60]))},
                    "used": {"bare": 0.801, "remap": 0.79},
                    "mkfs": {"discards": 3},
                    "aging_delta": {"waf": 1.234, "discards": 456, "user_blocks": 25600},
                    "jobs_delta": {"waf": 2.5, "dev_waf": 2.61, "discards": 7,
                                   "user_blocks": 256000},
                    "fstrim": {"bare": ["unsupported: the discard operation is not "
                                        "supported"],
                               "remap": ["/tmp/x: 100 MiB trimmed"]}}},
                warnings=["something odd"])
    media = config(gb, "media", {"randwrite-4k-t10": iops_runs(
        bare=[100] * 3, linear=[100] * 3, remap=[600] * 3)})
    media["media"] = gb.parse_media("")
    res = {"kernel": "6.12-test", "date": "2026-01-01 00:00",
           "params": {"runs": 3, "seconds": 3, "precondition": 2},
           "configs": [raid, media], "total_seconds": 600}
    res["goals"] = gb.evaluate_goals(res["configs"])
    text = gb.summary_text(res)
    assert "| measure | goal |" in text
    assert "| 4K random write 1 thread vs bare (raid5-4) | >= 3x | 4.00x [4.00-4.00] | met |" \
        in text
    assert "| >= 2x | 2.50x [2.50-2.50], 1.50x [1.50-1.50] | missed |" in text
    assert "| media model 4K random write 10 threads vs bare, steady state | >= 5x | " \
        "6.00x [6.00-6.00] | met |" in text
    assert "==== raid5-4" in text and "==== media" in text
    assert "100 [100-100]" in text                    # median [min-max]
    assert "1.1 [1.0-1.2]" in text                    # sequential MiB/s
    assert "ext4-80-fstrim" in text and "20 [10-30]" in text and "2.50x" in text
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("ext4-80-fstrim")
               and "80%/79%" in ln)
    # used, mkfs discards, aging MiB, WAF and discards, jobs MiB, WAF,
    # device WAF, discards, and the bare array's fstrim (md RAID-5: none)
    assert row.split()[1:] == ["80%/79%", "3", "100", "1.23", "456", "1000", "2.50", "2.61",
                               "7", "no", "discard"]
    assert "log 5.40, device 5.50" in text
    assert "a model, not a measurement" in text
    assert "warning: something odd" in text
    assert "bare/dm-linear/remapped; dm-linear/remapped/bare; remapped/bare/dm-linear" in text
    assert "total time in the guest: 10.0 min" in text


def test_unknown_knobs(gb):
    env = {"DMR_BENCH_RUNS": "3", "DMR_BENCH_FIO": "none", "DMR_BENCH_BS": "4K",
           "DMR_OUT": "/x", "PATH": "/bin"}
    assert gb.unknown_knobs(env) == ["DMR_BENCH_BS", "DMR_BENCH_FIO"]
    assert gb.unknown_knobs({"DMR_BENCH_MEDIA": "mbps=0", "DMR_BENCH_GC_WAIT": "0"}) == []


def test_every_knob_the_script_reads_is_known(gb):
    """Each DMR_BENCH_* setting guest-bench.py reads is in KNOBS, or the run
    warns that it ignores a setting it uses (DMR_BENCH_MEMBERS did)."""
    with open(SCRIPT) as f:
        read = set(re.findall(r'"DMR_BENCH_([A-Z0-9_]+)"', f.read()))
    assert read, "no setting found: the pattern is stale"
    assert sorted(read - gb.KNOBS) == []


def test_bench_settings_parse_without_touching_devices(gb):
    b = gb.Bench({"DMR_BENCH_RUNS": "5", "DMR_BENCH_FS": "0", "DMR_OUT": "/nonexistent",
                  "DMR_BENCH_MEDIA": "queue_depth=2"})
    assert (b.runs, b.seconds, b.fs_configs, b.configs) == (5, 3, set(), ["raid5-4", "media"])
    assert b.media["queue_depth"] == 2
    assert gb.Bench({"DMR_BENCH_FS": "1"}).fs_configs == {"raid5-4"}
    with pytest.raises(gb.Fail):
        gb.Bench({"DMR_BENCH_CONFIGS": "raid6"})
    with pytest.raises(gb.Fail):
        gb.Bench({"DMR_BENCH_RUNS": "0"})


def test_ab_parts_and_module_parameters(gb, tmp_path, monkeypatch):
    """DMR_BENCH_AB: 'module:NAME=VALUE' items are module parameters for
    the runs of B' (set, then set back to what they were), the rest table
    options; a malformed item is refused."""
    assert gb.ab_parts(["no_large_writes", "module:flight_serial=Y", "gc_high", "20"]) == \
        (["no_large_writes", "gc_high", "20"], {"flight_serial": "Y"})
    assert gb.ab_parts([]) == ([], {})
    for bad in ("module:flight_serial", "module:=Y", "module:x=", "module:../x=1"):
        with pytest.raises(ValueError, match="is not module:NAME=VALUE"):
            gb.ab_parts([bad])
        with pytest.raises(gb.Fail, match="is not module:NAME=VALUE"):
            gb.Bench({"DMR_BENCH_AB": bad})
    (tmp_path / "flight_serial").write_text("N\n")
    monkeypatch.setattr(gb, "MODPARAMS", str(tmp_path))
    old = gb.set_params({"flight_serial": "Y"})
    assert old == {"flight_serial": "N"} and (tmp_path / "flight_serial").read_text() == "Y"
    assert gb.set_params(old) == {"flight_serial": "Y"}
    assert (tmp_path / "flight_serial").read_text() == "N"


def test_with_options_adds_table_options(gb):
    assert gb.with_options("0 2048 remap /dev/md127", ["zero_copy"]) == \
        "0 2048 remap /dev/md127 1 zero_copy"
    assert gb.with_options("0 2048 remap /dev/md127 2 checkpoint_interval 86400",
                           ["zero_copy"]) == \
        "0 2048 remap /dev/md127 3 checkpoint_interval 86400 zero_copy"
    with pytest.raises(ValueError):
        gb.with_options("0 2048 linear /dev/md127 0", ["zero_copy"])


def test_ab_device_ratios_and_table(gb):
    """DMR_BENCH_AB: the fourth device's medians against bare and against
    the remapped device, and its columns in the summary."""
    c = cell_def(gb, "randwrite-1m-t1")
    c["devices"] = c["devices"] + ("remap_ab",)
    res = gb.aggregate_cell(c, iops_runs(bare=[100] * 3, linear=[100] * 3,
                                         remap=[50, 40, 60], remap_ab=[75, 80, 70]))
    assert res["metric"] == "bw_mibs"
    assert res["ratios"]["ab_bare"] == pytest.approx(0.75)
    assert res["ratios"]["ab_remap"] == pytest.approx(1.5)
    plain = gb.aggregate_cell(cell_def(gb, "randwrite-1m-t1"),
                              iops_runs(bare=[100] * 3, remap=[50] * 3))
    assert "ab_bare" not in plain["ratios"]
    cfg = {"name": "raid5-4", "label": "x", "cells": {"randwrite-1m-t1": res},
           "ab": ["zero_copy"], "ab_table": "0 8 remap /dev/md127 1 zero_copy",
           "orders": [["bare", "linear", "remap", "remap_ab"]], "rounds_done": 1}
    text = "\n".join(gb.config_lines(cfg))
    assert "B'/remap" in text and "options 'zero_copy'" in text
    row = next(ln for ln in text.splitlines() if "1M random write" in ln)
    assert "0.75x" in row and "1.50x" in row and "0.50x" in row
    assert gb.Bench({"DMR_BENCH_AB": "zero_copy"}).ab == ["zero_copy"]
    assert gb.unknown_knobs({"DMR_BENCH_AB": "zero_copy"}) == []


def test_ab_rotation_alternates_b_and_b_prime(gb):
    """B' sits next to B (both on array B), after it in one round and
    before it in the next: B' must not always follow B's writes."""
    orders = [gb.ab_rotation(r) for r in range(4)]
    assert orders[0] == ["bare", "linear", "remap", "remap_ab"]
    assert orders[1] == ["linear", "remap_ab", "remap", "bare"]
    for o in orders:
        assert sorted(o) == ["bare", "linear", "remap", "remap_ab"]
        assert abs(o.index("remap") - o.index("remap_ab")) == 1
    after = [o.index("remap_ab") > o.index("remap") for o in orders]
    assert after == [True, False, True, False]
    # the three devices keep their rotation
    assert [[d for d in o if d != "remap_ab"] for o in orders] == \
        [gb.rotation(gb.DEVICES, r) for r in range(4)]


# ---------------------------------------------------------------- issue 25 section 1

def test_waf_settled_is_relative_to_the_previous_window(gb):
    assert gb.waf_settled([5.0, 5.1], 0.03)             # 2%
    assert not gb.waf_settled([5.0, 5.2], 0.03)         # 4%
    assert not gb.waf_settled([5.2, 5.0], 0.03)         # falling 3.8%
    assert gb.waf_settled([10.0, 10.25], 0.03)          # 2.5%: relative, not absolute
    assert not gb.waf_settled([1.0, 1.05], 0.03)        # 5%, though 0.05 apart
    assert gb.waf_settled([9.0, 3.0, 3.05], 0.03)       # only the last two count
    assert not gb.waf_settled([3.0, 3.05, 9.0], 0.03)
    assert not gb.waf_settled([5.0], 0.03)
    assert not gb.waf_settled([], 0.03)
    assert not gb.waf_settled([None, 5.0], 0.03)
    assert not gb.waf_settled([5.0, None], 0.03)


def test_settle_verdict_rule_and_cap(gb):
    v = gb.settle_verdict
    assert v([6.0], 0.03, 8) == "continue"
    assert v([6.0, 4.0], 0.03, 8) == "continue"
    assert v([6.0, 4.0, 4.1], 0.03, 8) == "settled"
    assert v([6.0, 4.0, 3.0], 0.03, 3) == "cap"         # the cap, not settled
    assert v([6.0, 4.0, 4.05], 0.03, 3) == "settled"    # settling on the last window wins
    assert v([4.0, 4.0], 0.03, 8, min_windows=3) == "continue"
    assert v([4.0, 4.0, 4.0], 0.03, 8, min_windows=3) == "settled"
    # a preconditioning that never settles stops at the cap
    wafs = []
    for w in (5.0, 4.0, 5.0, 4.0, 5.0, 4.0, 5.0, 4.0, 5.0):
        wafs.append(w)
        if v(wafs, 0.03, 8) != "continue":
            break
    assert len(wafs) == 8 and v(wafs, 0.03, 8) == "cap"


def test_own_precondition_args(gb):
    cells = {c["id"]: c for c in gb.raw_cells(196608)}
    window = 345 * 2**20
    args = gb.own_precondition_args(cells["randwrite-1m-t10"], "/dev/mapper/x", 690 << 20,
                                    window)
    assert "--filename=/dev/mapper/x" in args and f"--size={690 << 20}" in args
    assert "--bs=1m" in args and "--numjobs=10" in args and "--rw=randwrite" in args
    assert "--direct=1" in args
    # 345 MiB over 10 jobs: 34 whole MiB blocks each
    assert f"--io_size={34 * 2**20}" in args
    assert not any(a.startswith(("--time_based", "--runtime")) for a in args)
    args = gb.own_precondition_args(cells["randwrite-4k-t1"], "/dev/x", 1 << 30, window)
    assert f"--io_size={window}" in args and "--bs=4k" in args
    # never less than one block
    args = gb.own_precondition_args(cells["randwrite-1m-t10"], "/dev/x", 1 << 30, 4096)
    assert f"--io_size={2**20}" in args
    assert gb.parse_bs("256k") == 262144 and gb.parse_bs("4096") == 4096


def test_wdp_cells_are_remapped_write_cells(gb):
    cells = gb.raw_cells(196608)
    ids = [c["id"] for c in gb.wdp_cells(cells, "randwrite-4k-t1,randwrite-256k-*,"
                                                "randwrite-1m-*")]
    assert ids == ["randwrite-4k-t1", "randwrite-256k-t1", "randwrite-256k-t10",
                   "randwrite-1m-t1", "randwrite-1m-t10"]
    # reads, and the bare-only sequential cell, never
    assert [c["id"] for c in gb.wdp_cells(cells, "randread-4k-*,seqwrite-stripe")] == []
    assert gb.wdp_cells(cells, "0") == [] and gb.wdp_cells(cells, "none") == []


def test_pick_op_keeps_the_fill_in_its_band(gb):
    rs = [i / 100 for i in range(100)]
    above = {gb.pick_op(r, 0.85, 0.80) for r in rs}
    below = {gb.pick_op(r, 0.70, 0.80) for r in rs}
    inside = {gb.pick_op(r, 0.80, 0.80) for r in rs}
    assert above == {"delete", "truncate"}
    assert below == {"create", "append", "overwrite"}
    assert inside == set(gb.FS_OPS)
    # the band's edges: within slack is inside
    assert {gb.pick_op(r, 0.815, 0.80) for r in rs} == set(gb.FS_OPS)
    assert {gb.pick_op(r, 0.785, 0.80) for r in rs} == set(gb.FS_OPS)


def test_used_fraction(gb):
    from types import SimpleNamespace as NS
    assert gb.used_fraction(NS(f_blocks=1000, f_bfree=200)) == pytest.approx(0.8)
    assert gb.used_fraction(NS(f_blocks=0, f_bfree=0)) == 0.0


def test_fs_matrix_and_its_settings(gb):
    sc = gb.fs_scenarios(["ext4", "xfs"], [50, 80], ["discard", "fstrim"])
    assert len(sc) == 8
    assert [s["id"] for s in sc[:4]] == ["ext4-50-discard", "ext4-50-fstrim",
                                         "ext4-80-discard", "ext4-80-fstrim"]
    assert sc[-1] == {"id": "xfs-80-fstrim", "fs": "xfs", "fill": 80, "trim": "fstrim"}
    assert gb.parse_fills(" 80,50,80") == [80, 50]
    for bad in ("", "0", "96", "half"):
        with pytest.raises(ValueError):
            gb.parse_fills(bad)
    assert gb.parse_trims("fstrim,discard") == ["discard", "fstrim"]
    for bad in ("", "online", "discard,nodiscard"):
        with pytest.raises(ValueError):
            gb.parse_trims(bad)
    b = gb.Bench({"DMR_BENCH_CONFIGS": "raid5-4,media"})
    # the default is the full matrix: both configurations, both fills, both modes
    assert b.fs_configs == {"raid5-4", "media"}
    assert (b.fs_fills, b.fs_trims) == ([50, 80], ["discard", "fstrim"])
    b = gb.Bench({"DMR_BENCH_FS_FILL": "80", "DMR_BENCH_FS_TRIM": "fstrim",
                  "DMR_BENCH_WDP_TOL": "0.02", "DMR_BENCH_WDP_MAX": "5"})
    assert (b.fs_fills, b.fs_trims, b.wdp_tol, b.wdp_max) == ([80], ["fstrim"], 0.02, 5)
    for bad in ({"DMR_BENCH_FS_TRIM": "online"}, {"DMR_BENCH_WDP_MAX": "1"},
                {"DMR_BENCH_WDP_TOL": "0"}, {"DMR_BENCH_FS_FILL": "99"}):
        with pytest.raises(gb.Fail):
            gb.Bench(bad)
    assert gb.unknown_knobs({"DMR_BENCH_FS_FILL": "50", "DMR_BENCH_FS_TRIM": "discard",
                             "DMR_BENCH_FS_CHURN": "1", "DMR_BENCH_FS_CHURN_PCT": "10",
                             "DMR_BENCH_WDP": "0", "DMR_BENCH_WDP_WINDOW": "1",
                             "DMR_BENCH_WDP_TOL": "0.03", "DMR_BENCH_WDP_MAX": "8"}) == []


def wdp_result(gb, cid, bare, remap, wafs, verdict, cell_waf=None):
    c = dict(cell_def(gb, cid), devices=("bare", "remap"))
    runs = bw_runs(bare=bare, remap=remap)
    if cell_waf:
        for r, w in zip(runs["remap"], cell_waf):
            r["waf"] = w
    res = gb.aggregate_cell(c, runs)
    res["precondition"] = {"windows": [{"waf": w} for w in wafs], "verdict": verdict}
    return res


def test_wdp_column_and_goal(gb):
    """The own-workload column beside the 4K-preconditioned one, and the
    goal row judged on the own-workload ratios."""
    cfg = config(gb, "raid5-4", {
        "randwrite-1m-t1": bw_runs(bare=[100] * 3, linear=[100] * 3, remap=[20, 22, 18]),
        "randwrite-4k-t1": iops_runs(bare=[10] * 3, linear=[10] * 3, remap=[5] * 3)})
    cfg["wdp"] = {"randwrite-1m-t1": wdp_result(gb, "randwrite-1m-t1", [100, 90, 110],
                                                [45, 50, 40], [3.1, 2.5, 2.45], "settled",
                                                cell_waf=[2.4, 2.5, 2.6])}
    cfg.update(orders=[], rounds_done=3)
    text = "\n".join(gb.config_lines(cfg))
    assert "own-precond. remapped" in text and "own/bare" in text
    row = next(ln for ln in text.splitlines() if "1M random write, 1 thr" in ln)
    # 4K-preconditioned remapped 20 [18-22] = 0.20x, own-workload 45 [40-50] = 0.45x
    assert "20.0 [18.0-22.0]" in row and "0.20x" in row
    assert "100.0 [90.0-110.0]" in row                   # bare, measured beside it
    assert "45.0 [40.0-50.0]" in row and "0.45x" in row and "2.50" in row
    assert "3 win" in row
    row4k = next(ln for ln in text.splitlines() if "4K random write, 1 thr" in ln)
    assert "win" not in row4k                            # no own-workload run of that cell
    g = goal(gb.evaluate_goals([cfg]), "256K-1M random write vs bare, own-workload")
    assert g["status"] == "missed" and g["values"] == [pytest.approx(0.45)]
    assert "(randwrite-1m-t1)" in g["measured"] and "[0.36-0.56]" in g["measured"]
    cfg["wdp"]["randwrite-1m-t1"] = wdp_result(gb, "randwrite-1m-t1", [100] * 3, [95] * 3,
                                               [3.0, 2.0, 1.5, 1.2], "cap")
    g = goal(gb.evaluate_goals([cfg]), "256K-1M random write vs bare, own-workload")
    assert g["status"] == "met"
    assert "cap 4 win" in "\n".join(gb.config_lines(cfg))
    del cfg["wdp"]
    g = goal(gb.evaluate_goals([cfg]), "256K-1M random write vs bare, own-workload")
    assert g["status"] == "not measured"


def test_trim_reached(gb):
    """The bench fails when this says False: TRIM never got to dm-remap."""
    assert gb.trim_reached(12, 2, "discard") is True
    assert gb.trim_reached(1, 0, "fstrim") is True
    assert gb.trim_reached(0, 2, "discard") is False
    assert gb.trim_reached(0, 2, "fstrim") is False
    assert gb.trim_reached(0, 0, "fstrim") is False     # fstrim runs after the fill too
    assert gb.trim_reached(0, 0, "discard") is None     # a fill alone frees nothing


class _FakeBench:
    """What run_bench() needs of a bench: configs, res, out, setup(rig),
    run_config(name), save()."""

    def __init__(self, out, fail=None):
        self.configs, self.res, self.out = ["a", "b"], {}, str(out)
        self.fail, self.ran, self.undone, self.saved = fail, [], [], 0

    def setup(self, rig):
        rig.push("undo setup", lambda: self.undone.append("setup"))

    def run_config(self, name):
        self.ran.append(name)
        if self.fail and name == "b":
            raise self.fail

    def save(self):
        self.saved += 1


def test_run_bench_frame(gb, tmp_path, capsys):
    b = _FakeBench(tmp_path)
    assert gb.run_bench(b, lambda res: f"summary {sorted(res)}", "s.txt", "x") == 0
    assert b.ran == ["a", "b"] and b.undone == ["setup"] and b.saved == 1
    assert (tmp_path / "s.txt").read_text() == "summary ['total_seconds']\n"
    assert "x: results in" in capsys.readouterr().out
    # a failure: the rest is not run, the rig is undone, the failure is
    # recorded, saved and summarised, and the exit status says so
    b = _FakeBench(tmp_path, fail=gb.Fail("boom"))
    b.configs = ["b", "a"]
    assert gb.run_bench(b, lambda res: res.get("failure", ""), "s.txt", "x") == 1
    assert b.ran == ["b"] and b.undone == ["setup"] and b.res["failure"] == "boom"
    assert (tmp_path / "s.txt").read_text() == "boom\n"
    assert "x: FAILED: boom" in capsys.readouterr().err


def test_entry_bad_settings(gb, capsys):
    def make(env):
        raise gb.Fail("DMR_BENCH_RUNS must be >= 1")
    assert gb.entry(make, "x") == 2
    assert "x: DMR_BENCH_RUNS must be >= 1" in capsys.readouterr().err


def test_member_metrics_per_write(gb):
    """md's members in a cell: read I/Os, per write, and bytes written per
    byte the cell wrote (issue 41, goal 3)."""
    m = gb.member_metrics((10, 100), (25, 100 + 3 * 2048), 5, 5 * 4096)
    assert m == {"md_reads": 15, "md_reads_per_write": 3.0, "md_write_x": 153.6}
    # a cell that wrote nothing has no per-write figures
    assert gb.member_metrics((1, 1), (4, 1), 0, 0) == {"md_reads": 3}
    # members that count nothing (brd) wrote nothing as far as stat says
    assert gb.member_metrics((0, 0), (0, 0), 5, 5 * 4096) == {}


def test_member_lines_show_the_fsync_cells(gb):
    def dev(r, x):
        return {"md_reads_per_write": {"median": r}, "md_write_x": {"median": x}}
    cfg = {"cells": {"randwrite-4k-fsync-t1": {"title": "4K write + fsync, 1 thr",
                                                "devices": {"bare": dev(2.0, 3.0),
                                                            "remap": dev(0.25, 9.5),
                                                            "remap_ab": dev(1.5, 2.0)}},
                     "randwrite-4k-t1": {"title": "4K write, 1 thr",
                                         "devices": {"bare": dev(9.0, 9.0)}}},
           "fs": {"ext4-50-discard": {"jobs": {"fs-smallfile-fsync": {
               "title": "small files", "devices": {"bare": dev(1.0, 4.0),
                                                   "remap": dev(0.0, 12.0)}}}}}}
    text = "\n".join(gb.member_lines(cfg))
    assert "4K write + fsync, 1 thr" in text and "4K write, 1 thr" not in text
    row = next(ln for ln in text.splitlines() if "4K write + fsync" in ln).split()
    assert row[-6:] == ["2.00", "3.00", "0.25", "9.50", "1.50", "2.00"]
    row = next(ln for ln in text.splitlines() if "small files" in ln).split()
    assert row[-4:] == ["1.00", "4.00", "0.00", "12.00"]      # zero is a figure
    assert "remapped B' reads/write" in text
    assert gb.member_lines({"cells": {}, "fs": {}}) == []


def test_fs_lines_show_b_prime_when_the_jobs_ran_on_it(gb):
    """With DMR_BENCH_AB the file-system jobs run on B' too: its column and
    its ratios are in the table; without it they are not."""
    def job(devs):
        runs = iops_runs(**devs)
        return gb.aggregate_cell({"title": "small files", "group": "fs", "kind": "write",
                                  "unit": "iops"}, runs)
    ab = {"fs": {"ext4-50-discard": {"jobs": {"fs-smallfile-fsync": job(
        {"bare": [100, 100, 100], "remap": [150, 150, 150], "remap_ab": [120, 120, 120]})}}}}
    text = "\n".join(gb.fs_lines(ab))
    assert "remapped B'" in text and "B'/remap" in text
    row = next(ln for ln in text.splitlines() if "small files" in ln)
    assert "1.50x" in row and "1.20x" in row and "0.80x" in row
    plain = {"fs": {"ext4-50-discard": {"jobs": {"fs-smallfile-fsync": job(
        {"bare": [100, 100, 100], "remap": [150, 150, 150]})}}}}
    text = "\n".join(gb.fs_lines(plain))
    assert "B'" not in text and "1.50x" in text
