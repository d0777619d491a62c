# SPDX-License-Identifier: GPL-2.0-only
"""tests/vm/guest-profile.py on the host: the parser of `perf report
--stdio` and the CPU-per-block arithmetic, on perf output captured in the
VM (tests/host/data/profile/: excerpts of the reports of one `make
profile` run: 4 KiB random writes on dm-remap (reports and the start of
`perf script`) and random reads on dm-linear; the *-kcore-* ones from a run where perf read /proc/kcore and put
the modules' functions in the kernel), and the text report rendered from
them."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "host" / "data" / "profile"
GUEST = REPO / "tests" / "vm" / "guest-profile.py"
PERIOD = 1001001            # ns: cpu-clock's period at -F 999


@pytest.fixture(scope="module")
def gp():
    spec = importlib.util.spec_from_file_location("guest_profile", GUEST)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def text(name):
    return (DATA / name).read_text()


def test_import_has_no_side_effects(tmp_path):
    """Importing the guest script runs nothing: no command, no file."""
    code = ("import importlib.util, subprocess, sys\n"
            "def boom(*a, **k): raise SystemExit('ran a command')\n"
            "subprocess.run = subprocess.Popen = boom\n"
            f"spec = importlib.util.spec_from_file_location('g', {str(GUEST)!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print('ok', callable(m.parse_report), callable(m.metrics))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "DMR_OUT": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok True True"
    assert list(tmp_path.iterdir()) == []


def test_parse_full_report(gp):
    rep = gp.parse_report(text("randwrite-remap-kcore-full.txt"))
    assert rep["event"] == "cpu-clock"
    assert rep["samples"] == 13000                  # '13K'
    assert rep["event_count"] == 13145145132
    assert rep["lost"] == 0
    assert rep["columns"] == ["overhead", "samples", "period", "comm", "dso", "sym"]
    assert len(rep["rows"]) == 44
    first = rep["rows"][0]
    assert first == {"overhead": 35.33, "samples": 4640, "period": 4644644640,
                     "comm": "swapper", "dso": "[kernel.kallsyms]",
                     "sym": "pv_native_safe_halt", "kind": "k"}
    pw = [r for r in rep["rows"] if r["sym"] == "__libc_pwrite"]
    assert pw == [{"overhead": 0.43, "samples": 57, "period": 57057057, "comm": "fio",
                   "dso": "libc.so.6", "sym": "__libc_pwrite", "kind": "."}]
    # comm names are cut to perf's width, and stay whole words otherwise
    assert {r["comm"] for r in rep["rows"]} >= {"kworker/u8:6-fl", "md126_raid5", "fio"}
    # every row's period is its samples times the period
    assert all(r["period"] == r["samples"] * PERIOD for r in rep["rows"])


def test_captured_report_with_modules(gp):
    """perf with a copy of kallsyms: each module its own shared object."""
    rep = gp.parse_report(text("randwrite-remap-full.txt"))
    ch = gp.parse_report(text("randwrite-remap-children.txt"))
    assert rep["samples"] == 17000 and len(rep["rows"]) == 35
    assert gp.attribute_modules(rep["rows"], {"dmr_gc_run": "dm_remap"})[1] == 0
    own = [r for r in rep["rows"] if r["dso"] == "[dm_remap]"]
    assert [r["sym"] for r in own] == ["dmr_gc_run", "dmr_gc_run", "dmr_worker", "dmr_worker"]
    crc = [r for r in rep["rows"] if r["dso"] in ("[crc32c_intel]", "[libcrc32c]")]
    m = gp.metrics(rep, 23343, 999, 2, 10.01, "[dm_remap]", ch)
    total = sum(r["samples"] for r in rep["rows"])
    assert m["total_samples"] == total
    assert m["own"]["samples"] == 118 + 71 + 49 + 47
    assert m["own"]["ns_per_block"] == pytest.approx(285 * PERIOD / 23343)
    assert m["checksum"]["samples"] == sum(r["samples"] for r in crc) == 2841 + 550 + 437 + 2
    assert m["checksum"]["symbols"] == {"crc_pcl": 3828, "crc32c": 2}
    # inclusive: 30.81% of all samples have [dm_remap] in their call chain
    assert ch["rows"][1] == {"children": 30.81, "self": 2.41, "dso": "[dm_remap]"}
    assert m["own"]["inclusive"]["percent_all"] == 30.81
    assert m["own"]["inclusive"]["ns_per_block"] == pytest.approx(
        0.3081 * total * PERIOD / 23343)
    assert m["dm_mod"]["inclusive"]["percent_all"] == 7.76
    assert [d["name"] for d in m["dsos"][:2]] == ["[crc32c_intel]", "[kernel.kallsyms]"]
    assert m["top"][0] == {"name": "crc_pcl", "samples": 3828, "dso": "[crc32c_intel]",
                           "ns_per_block": pytest.approx(3828 * PERIOD / 23343),
                           "share_busy": pytest.approx(3828 / m["busy_samples"])}


def test_parse_children_and_samples_only(gp):
    ch = gp.parse_report(text("randwrite-remap-kcore-children.txt"))
    assert ch["columns"] == ["children", "self", "dso"]
    assert ch["rows"][0] == {"children": 95.82, "self": 95.82, "dso": "[kernel.kallsyms]"}
    assert ch["rows"][1] == {"children": 16.97, "self": 0.0, "dso": "[unknown]"}
    sym = gp.parse_report(text("randread-linear-sym.txt"))
    assert sym["columns"] == ["overhead", "samples", "sym"]
    assert sym["rows"][0] == {"overhead": 7.03, "samples": 1149, "sym": "brd_submit_bio",
                              "kind": "k"}
    assert sym["rows"][2]["kind"] == "."          # fio's get_io_u


def test_parse_skips_callchains(gp):
    rep = gp.parse_report(text("randwrite-remap-kcore-callers.txt"))
    assert [(r["sym"], r["overhead"]) for r in rep["rows"]] == [
        ("pv_native_safe_halt", 35.33), ("crc_pcl", 17.7), ("_raw_spin_unlock_irq", 6.27)]


def test_parse_empty(gp):
    rep = gp.parse_report("")
    assert rep["rows"] == [] and rep["samples"] is None
    m = gp.metrics(rep, 0, 999)
    assert m["total_samples"] == 0 and m["busy_ns_per_block"] is None


def test_classifiers(gp):
    assert gp.is_idle({"sym": "pv_native_safe_halt", "kind": "k"})
    assert gp.is_idle({"sym": "do_idle", "kind": "k"})
    assert not gp.is_idle({"sym": "do_idle", "kind": "."})        # user space
    assert not gp.is_idle({"sym": "finish_task_switch.isra.0", "kind": "k"})
    assert gp.is_checksum({"sym": "crc_pcl", "kind": "k", "dso": "[kernel.kallsyms]"})
    assert gp.is_checksum({"sym": "crc32c_pcl_intel_update", "kind": "k"})
    assert gp.is_checksum({"sym": "__crc32c_le_base", "kind": "k"})
    assert gp.is_checksum({"sym": "xxh64", "kind": "k"})     # data digests (format 6)
    assert gp.is_checksum({"sym": "chksum_update", "kind": "k", "dso": "[crc32c_generic]"})
    assert gp.is_checksum({"sym": "0xffffffffc07ae123", "kind": "k", "dso": "[crc32c_intel]"})
    assert not gp.is_checksum({"sym": "ceph_choose_crc32", "kind": ".",
                               "dso": "libceph-common.so.2"})
    assert not gp.is_checksum({"sym": "dmr_map", "kind": "k", "dso": "[dm_remap]"})
    assert gp.comm_group("kworker/u8:6-fl") == "kworker/*"
    assert gp.comm_group("md126_raid5") == "md126_raid5"


KALLSYMS = """\
ffffffff8a200000 T _text
ffffffff8a2010a0 T do_idle
ffffffff8a2020b0 t init_once
ffffffffc0a67010 t dmr_iterate_devices\t[dm_remap]
ffffffffc0a670d0 t dmr_map\t[dm_remap]
ffffffffc0a71460 d dmr_target_type\t[dm_remap]
ffffffffc0a68000 t init_once\t[dm_remap]
ffffffffc0a32000 t raid5_make_request\t[raid456]
"""


def test_kallsyms_and_attribution(gp):
    mods = gp.parse_kallsyms(KALLSYMS)
    # functions only; a name the kernel has too is ambiguous and left out
    assert mods == {"dmr_iterate_devices": "dm_remap", "dmr_map": "dm_remap",
                    "raid5_make_request": "raid456"}
    rows = [{"dso": "[kernel.kallsyms]", "sym": "dmr_map", "samples": 3},
            {"dso": "[kernel.kallsyms]", "sym": "do_idle", "samples": 5},
            {"dso": "[raid456]", "sym": "raid5_make_request", "samples": 2},
            {"dso": "libc.so.6", "sym": "dmr_map", "samples": 7}]
    out, moved = gp.attribute_modules(rows, mods)
    assert moved == 3
    assert [r["dso"] for r in out] == ["[dm_remap]", "[kernel.kallsyms]", "[raid456]",
                                       "libc.so.6"]
    assert rows[0]["dso"] == "[kernel.kallsyms]"       # the input is not changed


CRC_KALLSYMS = KALLSYMS + """\
ffffffffc08d9000 t crc_pcl\t[crc32c_intel]
ffffffffc08da200 t crc32c_intel_update\t[crc32c_intel]
ffffffffc08db000 t ahci_qc_issue\t[ahci]
"""

# perf script -G -F comm,cpu,time,ip,sym,dso, as a run printed it: the
# checksum's samples unnamed, in the wrong module
CRC_SCRIPT = """\
 kworker/u8:10-d [001]   213.898150:  ffffffffc08d9544 [unknown] ([ahci])
 kworker/u8:11-e [000]   213.898185:  ffffffffc08d9ffa [unknown] ([ahci])
 kworker/u8:10-d [001]   213.898883:  ffffffffc08da210 [unknown] ([ahci])
 kworker/u8:10-d [001]   213.899883:  ffffffffc0a670d8 [unknown] ([dm_remap])
 fio [000]   213.899900:  ffffffff8a2010a4 do_idle ([kernel.kallsyms])
 fio [000]   213.899950:  7f01020304 [unknown] ([unknown])
 swapper [000]   213.899990:  ffffffff8a100000 [unknown] ([kernel.kallsyms])
"""


def test_resolve_unknown_names_the_checksum(gp):
    """A run's report put crc32c-intel's samples under raw addresses in
    [ahci], so the checksum column read 0: the script's absolute addresses,
    looked up in kallsyms, name them, and they count as checksum."""
    addrs = gp.kallsyms_addrs(CRC_KALLSYMS)
    assert all(a[0] for a in addrs) and addrs == sorted(addrs)
    assert gp.resolve_ip(addrs, 0xffffffffc08d9000) == ("crc_pcl", "crc32c_intel")
    assert gp.resolve_ip(addrs, 0xffffffffc08da1ff) == ("crc_pcl", "crc32c_intel")
    assert gp.resolve_ip(addrs, 0xffffffffc08da200) == ("crc32c_intel_update",
                                                         "crc32c_intel")
    assert gp.resolve_ip(addrs, 0x1000) is None
    got = gp.resolve_unknown(CRC_SCRIPT, addrs)
    # named samples and user space are left alone; below _text: unknown
    assert got == {("crc_pcl", "crc32c_intel"): 2,
                   ("crc32c_intel_update", "crc32c_intel"): 1,
                   ("dmr_map", "dm_remap"): 1, ("?", None): 1}
    m = gp.metrics(synthetic(), 1000, 999)
    assert m["checksum"]["samples"] == 30
    gp.fold_resolved(m, got)
    assert m["checksum"]["samples"] == 33
    assert m["checksum"]["ns_per_block"] == pytest.approx(33 * PERIOD / 1000)
    assert m["checksum"]["share_busy"] == pytest.approx(33 / 300)
    assert m["checksum"]["symbols"] == {"crc_pcl": 30, "crc_pcl (resolved)": 2,
                                        "crc32c_intel_update (resolved)": 1}
    assert m["resolved"][0] == {"sym": "crc_pcl", "module": "crc32c_intel", "samples": 2}
    assert len(m["resolved"]) == 4


def synthetic():
    """400 samples: 100 idle, 50 in dm-remap, 30 in crc32c, 220 elsewhere."""
    def row(n, comm, dso, sym, kind="k"):
        return {"overhead": n / 4, "samples": n, "period": n * PERIOD, "comm": comm,
                "dso": dso, "sym": sym, "kind": kind}
    return {"samples": 400, "event": "cpu-clock", "event_count": 400 * PERIOD, "lost": 0,
            "rows": [row(90, "swapper", "[kernel.kallsyms]", "pv_native_safe_halt"),
                     row(10, "swapper", "[kernel.kallsyms]", "do_idle"),
                     row(40, "kworker/0:1-mm_", "[dm_remap]", "dmr_gc_run"),
                     row(10, "fio", "[dm_remap]", "dmr_map"),
                     row(30, "kworker/u8:6-fl", "[kernel.kallsyms]", "crc_pcl"),
                     row(20, "fio", "[dm_mod]", "dm_submit_bio"),
                     row(150, "fio", "[kernel.kallsyms]", "brd_submit_bio"),
                     row(40, "swapper", "[kernel.kallsyms]", "handle_softirqs"),
                     row(10, "fio", "fio", "get_io_u", ".")]}


def test_metrics_arithmetic(gp):
    children = {"rows": [{"children": 50.0, "self": 12.5, "dso": "[dm_remap]"},
                         {"children": 5.0, "self": 5.0, "dso": "[dm_mod]"}]}
    m = gp.metrics(synthetic(), 1000, 999, cpus=2, wall_s=0.2, own_dso="[dm_remap]",
                   children=children)
    assert m["total_samples"] == 400 and m["idle_samples"] == 100
    assert m["busy_samples"] == 300
    assert m["ns_per_sample"] == PERIOD
    assert m["busy_ns_per_block"] == pytest.approx(300 * PERIOD / 1000)
    assert m["busy_fraction"] == pytest.approx(0.75)
    assert m["expected_samples"] == pytest.approx(2 * 0.2 * 999)
    assert m["sample_ratio"] == pytest.approx(400 / 399.6)
    assert m["own"]["samples"] == 50
    assert m["own"]["ns_per_block"] == pytest.approx(50 * PERIOD / 1000)
    assert m["own"]["share_busy"] == pytest.approx(50 / 300)
    # inclusive: 50% of all samples have dm_remap in their call chain
    assert m["own"]["inclusive"]["ns_per_block"] == pytest.approx(200 * PERIOD / 1000)
    assert m["own"]["inclusive"]["share_busy"] == pytest.approx(200 / 300)
    assert m["dm_mod"]["samples"] == 20
    assert m["checksum"]["samples"] == 30
    assert m["checksum"]["ns_per_block"] == pytest.approx(30 * PERIOD / 1000)
    assert m["checksum"]["share_busy"] == pytest.approx(0.1)
    assert m["checksum"]["symbols"] == {"crc_pcl": 30}
    assert m["idle_symbols"] == {"pv_native_safe_halt": 90, "do_idle": 10}
    assert [t["name"] for t in m["top"][:3]] == ["brd_submit_bio", "dmr_gc_run",
                                                 "handle_softirqs"]
    assert m["top"][0]["share_busy"] == pytest.approx(0.5)
    assert m["top"][0]["dso"] == "[kernel.kallsyms]"
    assert {d["name"]: d["samples"] for d in m["comms"]} == {
        "fio": 190, "kworker/*": 70, "swapper": 40}
    # the idle task's samples, idle and not
    assert [(t["name"], t["idle"]) for t in m["swapper_top"]] == [
        ("pv_native_safe_halt", True), ("handle_softirqs", False), ("do_idle", True)]


def test_metrics_without_period_column(gp):
    """A report without --show-total-period: samples x 1e9 / freq."""
    rep = synthetic()
    for r in rep["rows"]:
        del r["period"]
    m = gp.metrics(rep, 1000, 500)
    assert m["ns_per_sample"] == 2e6
    assert m["busy_ns_per_block"] == pytest.approx(300 * 2e6 / 1000)
    assert m["own"]["ns_per_block"] == pytest.approx(50 * 2e6 / 1000)     # [dm_remap]
    assert "sample_ratio" not in m


def test_metrics_on_captured_report(gp):
    rep = gp.parse_report(text("randwrite-remap-kcore-full.txt"))
    mods = {"dmr_gc_run": "dm_remap", "dmr_worker": "dm_remap", "dmr_map": "dm_remap",
            "dmr_seal": "dm_remap"}
    rep["rows"], moved = gp.attribute_modules(rep["rows"], mods)
    assert moved == 52 + 47 + 42 + 32 + 13 + 2 + 1
    ch = gp.parse_report(text("randwrite-remap-kcore-children.txt"))
    m = gp.metrics(rep, 13261, 999, 2, 10.0, "[dm_remap]", ch)
    assert m["total_samples"] == sum(r["samples"] for r in rep["rows"]) == 10719
    assert m["idle_symbols"] == {"pv_native_safe_halt": 4640, "do_idle": 3,
                                 "default_idle_call": 2}
    assert m["idle_samples"] == 4645
    assert m["busy_samples"] == 10719 - 4645
    assert m["busy_ns"] == (10719 - 4645) * PERIOD
    assert m["busy_ns_per_block"] == pytest.approx((10719 - 4645) * PERIOD / 13261)
    assert m["own"]["samples"] == moved
    assert m["checksum"]["symbols"] == {"crc_pcl": 2325, "crc32c_pcl_intel_update": 2}
    assert m["checksum"]["ns_per_block"] == pytest.approx(2327 * PERIOD / 13261)
    assert m["top"][0]["name"] == "crc_pcl"
    assert "inclusive" not in m["own"]          # no [dm_remap] in that children report
    assert m["dsos"][0]["name"] == "[kernel.kallsyms]"


# `perf script -G -F comm,cpu,time,ip,sym,dso` lines (perf 6.1's format)
SCRIPT = """\
         swapper [000]   184.000000: ffffffff8a2f1a2e pv_native_safe_halt ([kernel.kallsyms])
             fio [001]   184.000100: ffffffffc0a670d0 dmr_map ([dm_remap])
         swapper [000]   184.001001: ffffffff8a2f1a2e pv_native_safe_halt ([kernel.kallsyms])
             fio [001]   184.001101:     7f88f58b5062 __libc_pwrite (/usr/lib/libc.so.6)
 kworker/u8:6-fl [000]   184.005005: ffffffff8a7a0a10 _raw_spin_unlock_irq ([kernel.kallsyms])
             fio [001]   184.002102: ffffffff8a7a0b20 brd_submit_bio ([brd])
         swapper [001]   184.010101: ffffffff8a2f1a2e pv_native_safe_halt ([kernel.kallsyms])
"""


def test_sampling_gaps(gp):
    g = gp.sampling_gaps(SCRIPT, PERIOD, window=(184.0, 184.0111))
    assert g["samples"] == 7 and g["cpus"] == 2
    # cpu 0: 184.001001 -> 184.005005 (4.004 ms, ended in busy code);
    # cpu 1: 184.002102 -> 184.010101 (7.999 ms, ended in halt)
    assert g["gaps"] == 2
    assert g["missed_busy_ns"] == pytest.approx(4004000 - PERIOD, abs=1)
    assert g["missed_idle_ns"] == pytest.approx(7999000 - PERIOD, abs=1)
    assert g["missed_ns"] == pytest.approx(g["missed_busy_ns"] + g["missed_idle_ns"])
    assert g["max_gap_ns"] == pytest.approx(7999000, abs=1)
    assert [t["name"] for t in g["busy_gap_syms"]] == ["_raw_spin_unlock_irq"]
    # cpu 0 ends 6.095 ms before the window does
    assert g["edge_ns"] == pytest.approx(6095000 - PERIOD, abs=2)


def test_sampling_gaps_captured(gp):
    """The first 60 samples `perf script` gave in the VM."""
    lines = text("randwrite-remap-script.txt").splitlines()
    g = gp.sampling_gaps("\n".join(lines), PERIOD)
    assert g["samples"] == 60 and g["cpus"] == 2 and g["gaps"] == 4
    assert g["missed_ns"] == pytest.approx(g["missed_busy_ns"] + g["missed_idle_ns"])
    assert [t["name"] for t in g["busy_gap_syms"]] == ["async_copy_data", "crc_pcl"]
    m = gp.SCRIPT_LINE.match(lines[1])
    assert m.groups() == ("kworker/0:2-eve", "000", "183.608088", "ffffffffc08d35c1",
                          "dmr_gc_run", "[dm_remap]")


def test_render(gp):
    rep = gp.parse_report(text("randwrite-remap-kcore-full.txt"))
    m = gp.metrics(rep, 13261, 999, 2, 10.0, "[dm_remap]")
    lin = gp.metrics(gp.parse_report(text("randread-linear-sym.txt")), 100000, 999, 2, 10.0,
                     "[dm_mod]")
    runs = [{"workload": "randwrite", "device": "remap", "jobs": 10, "seconds": 10,
             "iops": 1480.0, "io_bytes": 19261 * 4096, "fio_runtime_s": 13.0,
             "window": {"seconds": 10.0, "blocks": 13261, "iops": 1326.1},
             "metrics": m, "whole": m,
             "status_delta": {"user_blocks": 19261, "device_blocks": 96055, "waf": 4.99,
                              "gc_runs": 332, "gc_moved": 76340},
             "members": gp.member_io([10, 80, 100, 4000], [12, 96, 164, 36768], 16 << 20)},
            {"workload": "randwrite", "device": "linear", "jobs": 10, "seconds": 10,
             "iops": 10000.0, "io_bytes": 100000 * 4096, "fio_runtime_s": 13.0,
             "metrics": lin}]
    res = {"kernel": "6.12.117+deb12-amd64", "cpus": 2, "perf": "perf version 6.1.192",
           "date": "2026-11-23 18:13", "elapsed_s": 323,
           "knobs": {"seconds": 10, "jobs": 10, "workloads": ["randwrite"],
                     "precondition": 2.0, "freq": 999, "ramdisk_mib": 128},
           "setup": {"label": "two md RAID-5 arrays", "region_bytes": 331 << 20,
                     "state": "steady state"},
           "runs": runs, "workloads_ratio": gp.ratios(runs), "warnings": ["a warning"]}
    out = gp.render(res)
    busy = f"{(10719 - 4645) * PERIOD / 13261:.0f}"
    row = next(line for line in out.splitlines() if line.startswith("4K random write  dm-remap"))
    assert row.split()[4:6] == ["1326", busy]
    assert "idle = samples in default_idle_call, do_idle, pv_native_safe_halt" in out
    assert f"busy CPU {busy} ns/block" in out
    assert "WAF 4.99" in out and "warning: a warning" in out
    assert "4K random write: dm-remap / dm-linear busy CPU per block" in out
    assert "top 15 functions" in out and "crc_pcl [kernel.kallsyms]" in out
    # the members: 64 writes of 16 MiB in all, 8 KiB read in 2 reads, over 16 user MiB
    assert ("the arrays' members in the window, per user MiB: 4.0 writes of 256 KiB on "
            "average (1024 KiB, parity included), 0 KiB read in 2 reads") in out


def test_member_io(gp):
    """member_io(): the members' commands per user MiB and their mean size."""
    m = gp.member_io([0, 0, 0, 0], [3, 48, 40, 20480], 8 << 20)
    assert m == {"reads": 3, "read_kib": 24, "writes": 40, "write_kib": 10240,
                 "write_kib_mean": 256, "writes_per_mib": 5, "read_kib_per_mib": 3,
                 "write_kib_per_mib": 1280}
    m = gp.member_io([1, 2, 3, 4], [1, 2, 3, 4], 0)
    assert m["write_kib_mean"] is None and "writes_per_mib" not in m


def test_workload_label_follows_the_block_size(gp):
    """DMR_PROFILE_BS names the workload in the report; the default keeps
    the 4K names."""
    assert gp.workload_label("randwrite") == "4K random write"
    assert gp.workload_label("randwrite", "768k") == "768K random write"
    assert gp.workload_label("randread", "4K") == "4K random read"


def test_media_knobs(gp, monkeypatch):
    """DMR_PROFILE_MEDIA takes the bench's media model (guest-bench.py's
    parse_media(): 'default' or items over its default), and the report's
    knobs line names it so that the run can be repeated; a bad item or a
    member count md RAID-5 cannot use is refused."""
    for k in list(gp.os.environ):
        if k.startswith("DMR_PROFILE_"):
            monkeypatch.delenv(k)
    k = gp.knobs()
    assert k["media"] == "" and k["members"] == 4 and k["stripe_cache"] == 0
    assert gp.media_knob(k["media"]) == "''"
    monkeypatch.setenv("DMR_PROFILE_MEDIA", "default")
    monkeypatch.setenv("DMR_PROFILE_MEMBERS", "5")
    k = gp.knobs()
    assert k["members"] == 5
    assert k["media"] == {"completion_us": 2000, "queue_depth": 1, "mbps": 150, "max_kb": 512}
    assert gp.media_knob(k["media"]) == "completion_us=2000,queue_depth=1,mbps=150,max_kb=512"
    monkeypatch.setenv("DMR_PROFILE_MEDIA", "mbps=300")
    assert gp.knobs()["media"]["mbps"] == 300
    monkeypatch.setenv("DMR_PROFILE_STRIPE_CACHE", "4096")
    assert gp.knobs()["stripe_cache"] == 4096
    for name, value in (("DMR_PROFILE_MEDIA", "speed=9"), ("DMR_PROFILE_MEMBERS", "2"),
                        ("DMR_PROFILE_STRIPE_CACHE", "16")):
        monkeypatch.setenv(name, value)
        with pytest.raises(SystemExit):
            gp.knobs()
        monkeypatch.setenv(name, {"DMR_PROFILE_MEDIA": "default",
                                  "DMR_PROFILE_MEMBERS": "5",
                                  "DMR_PROFILE_STRIPE_CACHE": "4096"}[name])
