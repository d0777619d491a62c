# SPDX-License-Identifier: GPL-2.0-only
"""tools/compare on the host: arguments, the dm-remap status parser, and
the report (table, ratios, write amplification, chart) rendered from saved
results.  Runs on real devices are in tests/integration/test_compare.py
(VM)."""
import json
import re
import subprocess
from pathlib import Path

import pytest
from scriptload import load_script

REPO = Path(__file__).resolve().parents[2]
COMPARE = str(REPO / "tools" / "compare")


def compare(*args):
    return subprocess.run([COMPARE, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, msg", [
    ([], "no device given"),
    (["--bs", "3K", "/dev/null"], "--bs: bad item '3K'"),
    (["--bs", "4K,,8K", "/dev/null"], "--bs: bad item ''"),
    (["--bs", "32M", "/dev/null"], "--bs: bad item '32M'"),
    (["--threads", "0", "/dev/null"], "--threads: bad item '0'"),
    (["--threads", "1,x", "/dev/null"], "--threads: bad item 'x'"),
    (["--seconds", "0", "/dev/null"], "--seconds: '0' is not a time"),
    (["--seconds", "nan", "/dev/null"], "--seconds: 'nan' is not a time"),
    (["--size", "1000K", "/dev/null"], "--size must be a positive multiple of 1M"),
    (["--fio", "bogus", "/dev/null"], "--fio: unknown job 'bogus'"),
    (["--seed", "-1", "/dev/null"], "--seed: '-1' is not"),
    (["--precondition", "-1", "/dev/null"], "--precondition: '-1' is not a number of capacities"),
    (["--precondition", "x", "/dev/null"], "--precondition: 'x' is not"),
    (["--precondition", "nan", "/dev/null"], "--precondition: 'nan' is not"),
    (["--precondition", "101", "/dev/null"], "--precondition: '101' is not"),
    (["--stall", "-5", "/dev/null"], "--stall: '-5' is not a time"),
    (["--name", "a b", "/dev/null"], "--name: 'a b' is not a plain device name"),
    (["--report", "x.json", "/dev/null"], "--report takes no device"),
    (["--peers", "flashcache", "/dev/null"], "--peers: unknown peer 'flashcache'"),
    (["--peers", "bcache,writeboost,bcache", "/dev/null"], "--peers: a peer named twice"),
    (["--make-bcache", "/sbin/make-bcache", "/dev/null"], "--make-bcache without --peers bcache"),
    (["--peers", "writeboost", "--make-bcache", "/x", "/dev/null"],
     "--make-bcache without --peers bcache"),
    (["/nonexistent/dev"], "/nonexistent/dev: no such device"),
    (["/etc/hostname"], "/etc/hostname: not a block device"),
])
def test_usage_errors(args, msg):
    p = compare(*args)
    assert p.returncode == 2, p
    assert p.stdout == ""
    assert p.stderr.startswith("compare: ") and msg in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1


def test_unknown_option_exit_2():
    p = compare("--bogus", "/dev/null")
    assert p.returncode == 2 and "unrecognized arguments" in p.stderr


def test_help():
    p = compare("--help")
    assert p.returncode == 0 and "--fio" in p.stdout and "--report" in p.stdout
    for opt in ("--precondition", "--fresh", "--stall"):
        assert opt in p.stdout
    assert "--max-bytes" not in p.stdout


def load_compare(path=COMPARE):
    """tools/compare (or a copy at path) as a module (it has no .py
    suffix), leaving no bytecode next to it."""
    return load_script(path, "compare_tool")


def documented_status_fields():
    """The numbered list of the Status section of Documentation/dm-remap.rst
    (as tests/integration/conftest.py reads it)."""
    text = (REPO / "Documentation" / "dm-remap.rst").read_text()
    section = text.split("\nStatus\n======\n", 1)[1].split("\n=====", 1)[0]
    items = re.findall(r"^(\d+)\. ``(\w+)``", section, re.M)
    assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)), items
    return [name for _, name in items]


def test_status_fields_are_the_documented_ones():
    assert load_compare().STATUS_FIELDS == documented_status_fields()


def status_line(**over):
    c = load_compare()
    st = {k: "0" for k in c.STATUS_FIELDS}
    st.update(mode="write", version="1", logical_blocks="9000", segment_sectors="2048",
              segments="46", free_segments="10", user_blocks="1000",
              device_blocks="2500", gc_state="idle", waf_load="2.500", waf_format="-")
    st.update({k: str(v) for k, v in over.items()})
    return "0 72000 remap " + " ".join(st[k] for k in c.STATUS_FIELDS)


def test_parse_status():
    c = load_compare()
    st = c.parse_status("x", status_line())
    assert st["mode"] == "write" and st["gc_state"] == "idle"
    assert st["user_blocks"] == 1000 and st["device_blocks"] == 2500
    assert st["waf_load"] == 2.5 and st["waf_format"] is None
    assert st["logical_bytes"] == 9000 * 4096 and st["segment_bytes"] == 1 << 20
    assert st["free_bytes"] == 10 << 20
    st["at"] = 0.0
    later = c.parse_status("x", status_line(user_blocks=3000, device_blocks=7500,
                                            gc_runs=7, throttled=3, gc_state="urgent"))
    later["at"] = 2.0
    d = c.status_delta(st, later)
    assert d["user_blocks"] == 2000 and d["device_blocks"] == 5000 and d["waf"] == 2.5
    assert d["gc_runs"] == 7 and d["throttled"] == 3 and d["seconds"] == 2.0
    assert c.status_delta(st, st)["waf"] is None        # nothing written


@pytest.mark.parametrize("text", [
    "0 72000 remap write 1 9000",                       # an older module
    status_line() + " 5",                               # a newer one
    status_line(user_blocks="x"),
    "0 72000 linear 7:0 0",
])
def test_parse_status_refuses_other_lines(text):
    c = load_compare()
    with pytest.raises(c.Failure, match="unexpected status of x"):
        c.parse_status("x", text)


def status(user, device, **over):
    """A parsed dm-remap status (the counters that matter here)."""
    st = {"mode": "write", "first_error": 0, "gc_state": "idle", "user_blocks": user,
          "device_blocks": device, "flushes": 0, "short_units": 0, "discards": 0,
          "gc_runs": 0, "gc_moved": 0, "segments_freed": 0, "throttled": 0,
          "waf_load": None, "waf_format": None, "at": 0.0}
    st.update(over)
    return st


def results(tmp_path, **over):
    """A results file in compare's schema with known numbers: remapped
    writes 3x bare, reads 1.5x; fresh remapped writes 5x; write
    amplification 2.5 over the measured cells, 1.25 per 4K cell."""
    cells = {"bare": [], "remap": []}
    fresh = {"bare": [], "remap": []}
    scale = {("bare", "read"): 1.0, ("bare", "write"): 1.0,
             ("remap", "read"): 1.5, ("remap", "write"): 3.0}
    for side in ("bare", "remap"):
        for op in ("read", "write"):
            for bs in (4096, 1 << 20):
                for t in (1, 10):
                    iops = 1000.0 * t / (bs // 4096) * scale[side, op]
                    c = {"op": op, "bs": bs, "threads": t, "iops": iops,
                         "bw_bytes": iops * bs, "ios": int(iops), "seconds": 1.0}
                    if side == "remap" and op == "write":
                        c["waf"] = 1.25 if bs == 4096 else 3.5
                    if side == "remap" and op == "read" and bs > 4096:
                        c["read_splits"] = 200 * c["ios"]       # 201 I/Os a read
                        c["ios_per_read"] = 201.0
                    elif side == "remap" and op == "read":
                        c["read_splits"] = 0
                        c["ios_per_read"] = 1.0
                    cells[side].append(c)
                    if op == "write":
                        f = 2.0 if side == "bare" else 10.0
                        fresh[side].append(dict(c, iops=iops / scale[side, op] * f,
                                                bw_bytes=iops / scale[side, op] * f * bs))
    fio = {side: {"randwrite-4k-fsync": {"write": {"iops": 200.0 * s, "bw_bytes": 819200.0 * s,
                                                   "clat_mean_us": 10, "clat_p99_us": 20 * s}}}
           for side, s in (("bare", 1), ("remap", 2))}
    fio["remap"]["randwrite-4k-fsync"]["waf"] = 4.125
    gc = {"user_blocks": 262144, "device_blocks": 655360, "flushes": 0, "short_units": 0,
          "discards": 0, "gc_runs": 321, "gc_moved": 98765, "segments_freed": 320,
          "throttled": 17, "waf": 2.5, "dev_write_bytes": 2816 << 20, "dev_waf": 2.75,
          "seconds": 60.0}
    res = {"schema": "dm-remap-compare/2", "date": "2026-11-22T12:00:00+00:00",
           "host": "h", "kernel": "6.12.0-test",
           "device": {"path": "/dev/md0", "label": "test array", "bytes": 1 << 30},
           "dm_remap": {"table": "0 2000000 remap 9:0 0", "logical_bytes": 1 << 30},
           "params": {"bs": [4096, 1 << 20], "threads": [1, 10], "seconds": 2.0,
                      "region_bytes": 256 << 20, "seed": 1,
                      "fio_jobs": ["randwrite-4k-fsync"], "fio_runtime": 5,
                      "precondition": 2.0, "fresh": True, "stall": 120.0},
           "precondition": {"bytes": 900 << 20, "factor": 2.0},
           "bm_flash": cells, "bm_flash_fresh": fresh, "fio": fio,
           "remap_status": {"format": status(0, 0), "fresh_end": status(100, 101),
                            "measure_start": status(1000, 2000),
                            "measure_end": status(263144, 657360, waf_format=2.31)},
           "gc": gc, "waf": {"steady": 2.5, "precondition": 1.777, "fresh": 1.01,
                             "format": 2.31, "steady_device": 2.75,
                             "precondition_device": 2.0, "fresh_device": 1.1,
                             "format_device": 2.5},
           "warnings": []}
    res["remap_status_end"] = res["remap_status"]["measure_end"]
    res.update(over)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(res))
    return path


def row(text, bs):
    return re.search(rf"^\s+{bs}\s+\|.*$", text, re.M).group(0)


def test_report_table(tmp_path):
    path = results(tmp_path)
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("dm-remap compare: /dev/md0 (test array), kernel 6.12.0-test")
    assert "region 256 MiB" in out and "0 2000000 remap 9:0 0" in out
    assert ("steady state: each device preconditioned with a sequential fill of 900 MiB "
            "(the remapped capacity), then 2 x 900 MiB of random 4 KiB writes") in out
    read, steady, fresh = out.split("random write", 2)[0], *out.split("random write")[1:3]
    assert "random read" in read and "fresh devices, before preconditioning" in steady
    # steady write rows: remapped is 3x bare; read rows: 1.5x
    w4k = row(steady, "4K")
    assert re.findall(r"\d+\.\d\dx", w4k) == ["3.00x", "3.00x"]
    assert "1000    3.9M" in w4k and "3000   11.7M" in w4k, w4k
    assert re.findall(r"\d+\.\d\dx", row(read, "1M")) == ["1.50x", "1.50x"]
    # fresh write rows beside them: bare 2x, remapped 10x the base figures
    f4k = row(fresh, "4K")
    assert re.findall(r"\d+\.\d\dx", f4k) == ["5.00x", "5.00x"]
    assert "2000    7.8M" in f4k and "10000   39.1M" in f4k, f4k
    fio = re.search(r"^randwrite-4k-fsync\s+write\s+(\d+)\s+(\d+)\s+(\S+)\s+\S+\s+\S+\s+(\S+)$",
                    out, re.M)
    assert fio.groups() == ("200", "400", "2.00x", "4.12"), out
    # write amplification from the dm-remap status
    waf = out.split("dm-remap write amplification")[1]
    assert re.search(r"^\s+log\s+device$", waf, re.M), waf
    assert re.search(r"measured cells, steady state\s+2\.50\s+2\.75\s+\(1024 MiB written by "
                     r"the cells, 2560 MiB to the log, 2816 MiB to the device; GC collected "
                     r"321 segments, moved 98765 blocks; 17 writes waited for GC\)", waf), waf
    assert re.search(r"preconditioning\s+1\.78\s+2\.00$", waf, re.M), waf
    assert re.search(r"fresh write cells \(before preconditioning\)\s+1\.01\s+1\.10$",
                     waf, re.M)
    assert re.search(r"since format \(status waf_format\)\s+2\.31\s+2\.50$", waf, re.M)
    assert re.search(r"^\s+4K\s+1\.25\s+1\.25$", waf, re.M), waf
    assert re.search(r"^\s+1M\s+3\.50\s+3\.50$", waf, re.M), waf
    assert "formatted again" not in out and "garbage collector" not in out
    assert "*" not in out
    # reads: 1 + read_splits per read, per cell
    rd = out.split("dm-remap reads: I/Os per read (1 + status read_splits per read)")[1]
    assert re.search(r"^\s+4K\s+1\.00\s+1\.00$", rd, re.M), rd
    assert re.search(r"^\s+1M\s+201\.00\s+201\.00$", rd, re.M), rd


def test_report_not_preconditioned(tmp_path):
    """--precondition 0: said so, and no fresh section without --fresh."""
    path = results(tmp_path, bm_flash_fresh=None,
                   precondition={"bytes": 256 << 20, "factor": 0.0})
    res = json.loads(path.read_text())
    res["params"].update(precondition=0.0, fresh=False)
    res["waf"] = {k: v for k, v in res["waf"].items()
                  if not k.startswith("fresh") and not k.endswith("_device")}
    del res["gc"]["dev_write_bytes"], res["gc"]["dev_waf"]
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0, p.stderr
    assert ("not preconditioned (--precondition 0): only a sequential fill of 256 MiB "
            "before measuring") in p.stdout
    assert "fresh" not in p.stdout
    assert re.search(r"measured cells \(not preconditioned\)\s+2\.50\n", p.stdout)
    assert "device" not in p.stdout.split("write amplification")[1]   # no such counts


def test_report_schema_1(tmp_path):
    """Results of compare before the garbage collector still print, with
    their capped cells and refreshes."""
    path = results(tmp_path, schema="dm-remap-compare/1", remap_refreshes=2)
    res = json.loads(path.read_text())
    for k in ("precondition", "bm_flash_fresh", "remap_status", "gc", "waf", "warnings"):
        del res[k]
    for c in res["bm_flash"]["remap"]:
        c.pop("waf", None)
        c["capped"] = c["op"] == "write" and c["bs"] == 1 << 20
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "steady state" not in out and "write amplification" not in out
    assert re.search(r"^\s+1M\s+\|.*\*", out.split("random write")[1], re.M), out
    assert "formatted again 2 time(s)" in out


def test_report_shows_warnings(tmp_path):
    path = results(tmp_path, warnings=["GC of x still background 60 s after y"])
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0 and "warning: GC of x still background 60 s after y" in p.stdout


def test_report_missing_cell_shows_dash(tmp_path):
    path = results(tmp_path)
    res = json.loads(path.read_text())
    res["bm_flash"]["remap"] = [c for c in res["bm_flash"]["remap"]
                                if not (c["op"] == "write" and c["bs"] == 4096 and c["threads"] == 10)]
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    w4k = row(p.stdout.split("random write")[1], "4K")
    assert re.findall(r"\d+\.\d\dx", w4k) == ["3.00x"] and w4k.rstrip().endswith("-"), w4k


def test_report_chart(tmp_path):
    path = results(tmp_path)
    for out, png in ((None, tmp_path / "chart.png"),
                     (tmp_path / "o", tmp_path / "o" / "chart.png")):
        p = compare("--report", str(path), *(["--out", str(out)] if out else []))
        assert p.returncode == 0, p.stderr
        assert f"chart: {png}" in p.stdout
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


@pytest.mark.parametrize("content, msg", [
    (None, "No such file"),
    ("{not json", "Expecting property name"),
    ('{"schema": "other"}', "not a compare results file"),
])
def test_report_bad_file(tmp_path, content, msg):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    p = compare("--report", str(path))
    assert p.returncode == 1 and msg in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_report_linear_section(tmp_path):
    """With --linear results, remapped / dm-linear ratios are shown too."""
    path = results(tmp_path)
    res = json.loads(path.read_text())
    res["bm_flash"]["linear"] = [dict(c, iops=c["iops"] * 2) for c in res["bm_flash"]["bare"]]
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0, p.stderr
    sec = p.stdout.split("dm-linear over the same device")[1].split("\n\n")[0]
    read, write = sec.split("random write")
    r4k = re.search(r"^\s+4K\s+\|.*$", read, re.M).group(0)
    w4k = re.search(r"^\s+4K\s+\|.*$", write, re.M).group(0)
    assert re.findall(r"\d+\.\d\dx", r4k) == ["0.75x", "0.75x"]     # 1.5 / 2
    assert re.findall(r"\d+\.\d\dx", w4k) == ["1.50x", "1.50x"]     # 3 / 2
    assert "2000" in w4k and "20000" in w4k


def test_wait_quiet(monkeypatch):
    """Remap.wait_quiet(): quiet once the device's stat has not changed
    for `still` seconds; a device that keeps working is not, at the limit."""
    mod = load_compare()
    t = [0.0]
    stats = iter(["1", "2", "3", "3", "3", "3", "3", "3", "3", "3", "3", "3"])
    monkeypatch.setattr(mod, "sysfs_block", lambda dev: "/x")
    monkeypatch.setattr(mod, "read_sys", lambda path: next(stats))
    r = mod.Remap(argparse_ns(), "/dev/null", "remapctl")

    def sleep(d):
        t[0] += d
    assert r.wait_quiet(10, still=1.0, clock=lambda: t[0], sleep=sleep)
    # changed at the 3rd read (0.4 s), unchanged for 1 s after: about 1.4 s
    assert 1.3 <= t[0] <= 1.7, t[0]
    t[0] = 0.0
    busy = iter(range(10 ** 6))
    monkeypatch.setattr(mod, "read_sys", lambda path: str(next(busy)))
    assert not r.wait_quiet(5, still=1.0, clock=lambda: t[0], sleep=sleep)
    assert 5.0 <= t[0] <= 5.3


def argparse_ns():
    import types
    return types.SimpleNamespace(name="x", format_opt=[], create_opt=[])


def test_source_commit_names_the_checkout_and_whether_it_is_dirty(tmp_path):
    """results.json's "commit" (and the chart's title): the short commit
    of the git checkout compare runs from, "-dirty" once a tracked file
    differs from it (an untracked one does not count), "" outside a
    checkout."""
    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], check=True,
                              capture_output=True, text=True).stdout.strip()
    repo = tmp_path / "tree"
    (repo / "tools").mkdir(parents=True)
    tool = repo / "tools" / "compare"
    tool.write_text(Path(COMPARE).read_text())
    (repo / "README").write_text("one\n")
    git("init", "-q")
    git("add", "tools/compare", "README")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "one")
    head = git("rev-parse", "--short", "HEAD")
    c = load_compare(tool)
    assert c.source_commit() == head
    (repo / "untracked").write_text("x\n")
    assert c.source_commit() == head
    (repo / "README").write_text("two\n")
    assert c.source_commit() == head + "-dirty"
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "compare").write_text(Path(COMPARE).read_text())
    assert load_compare(outside / "compare").source_commit() == ""


def test_peer_split_and_sizes():
    """The peers' cache is the last 10% of the device in whole MiB, the
    backing the rest; bcache keeps 8 KiB of its backing for itself."""
    c = load_compare()
    for mib in (40, 64, 1365, 1536, 1 << 20):
        sectors = mib << 11
        cache, back = c.peer_split(sectors)
        assert cache + back == sectors and cache % 2048 == 0
        assert cache <= sectors // 10 < cache + 2048
        assert c.peer_logical_bytes("writeboost", sectors) == back * 512
        assert c.peer_logical_bytes("bcache", sectors) == back * 512 - 8192
    assert c.peer_split(1536 << 11) == (153 << 11, 1383 << 11)   # the demo's array
    assert c.peer_split(2047 * 10) == (0, 2047 * 10)             # too small for a MiB
    # bcache's buckets: more than 1024 where the cache allows, never below 4 KiB
    for mib in (4, 6, 64, 153, 1024):
        b = c.bcache_bucket(mib << 20)
        assert b >= 4096 and b & (b - 1) == 0
        assert (mib << 20) // b > 1024 or b == 4096
        assert (mib << 20) // b > 512
    assert c.bcache_bucket(1 << 30) == 512 << 10


def peer_results(tmp_path):
    """results() with the two peers: writeboost at half the remapped
    IOPS, bcache at a quarter."""
    path = results(tmp_path)
    res = json.loads(path.read_text())
    for way, f in (("writeboost", 2.0), ("bcache", 4.0)):
        res["bm_flash"][way] = [dict(c, iops=c["iops"] / f * (3.0 if c["op"] == "write" else 1.5))
                                for c in res["bm_flash"]["bare"]]
    res["params"]["peers"] = ["writeboost", "bcache"]
    res["peer_versions"] = {"writeboost": "dm-writeboost target v2.2.17",
                            "bcache": "bcache in 6.12.0-test"}
    res["peer_waf"] = {"writeboost": 1.5, "bcache": 2.25}
    path.write_text(json.dumps(res))
    return path


def test_report_peer_sections(tmp_path):
    """--peers results: a section per peer, its IOPS and remapped / peer
    for every cell, and what it wrote to the device per byte written."""
    path = peer_results(tmp_path)
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0, p.stderr
    for way, name, ratio, waf in (("writeboost", "dm-writeboost (dm-writeboost target "
                                   "v2.2.17)", "2.00x", "1.50"),
                                  ("bcache", "bcache (writeback) (bcache in 6.12.0-test)",
                                   "4.00x", "2.25")):
        sec = p.stdout.split(f"{name} over the same device")[1].split("\n\n")[0]
        assert sec.startswith(", its cache on the last 10%"), sec
        read, write = sec.split("random write")
        for part in (read, write):
            for bs in ("4K", "1M"):
                r = re.search(rf"^\s+{bs}\s+\|.*$", part, re.M).group(0)
                assert re.findall(r"\d+\.\d\dx", r) == [ratio, ratio], r
        w4k = re.search(r"^\s+4K\s+\|.*$", write, re.M).group(0)
        # remapped 4K writes: 3000 and 30000 IOPS; the peer's at 1/ratio
        f = float(ratio[:-1])
        assert f"{3000 / f:.0f}" in w4k and f"{30000 / f:.0f}" in w4k, w4k
        assert f"  {way}: bytes written to /dev/md0 during its measured cells / bytes " \
               f"its write cells wrote: {waf}" in sec, sec
    # the chart has them too
    p = compare("--report", str(path))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_without_a_peer_run(tmp_path):
    """A peer named but not measured (compare failed before it) prints
    no section for it; results from before --peers have no params.peers."""
    path = peer_results(tmp_path)
    res = json.loads(path.read_text())
    res["bm_flash"]["bcache"] = []
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0 and "dm-writeboost" in p.stdout and "bcache (" not in p.stdout
    del res["params"]["peers"]
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0 and "dm-writeboost" not in p.stdout


def test_collect_peer_waf():
    """collect(): a peer's device WAF is the bytes written to the device
    during its measured cells over what its write cells wrote."""
    c = load_compare()
    a = type("A", (), {"fresh": False})()
    res = {"bm_flash": {}, "fio": {}, "precondition": {}}
    cells = [{"op": "write", "bs": 4096, "ios": 1000}, {"op": "write", "bs": 65536, "ios": 100},
             {"op": "read", "bs": 4096, "ios": 5000}]
    written = 4096 * 1000 + 65536 * 100
    peers = {"writeboost": {"cells": cells, "grid_device_bytes": 3 * written,
                            "precondition": {"bytes": 1}},
             "bcache": {"cells": cells}}           # its run failed before the end
    c.collect(res, {"cells": []}, {"cells": []}, a, peers)
    assert res["peer_waf"] == {"writeboost": 3.0}
    assert res["bm_flash"]["writeboost"] == cells and res["precondition"]["writeboost"]
