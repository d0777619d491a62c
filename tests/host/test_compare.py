# SPDX-License-Identifier: GPL-2.0-only
"""tools/compare on the host: arguments, and the report (table, ratios,
chart) rendered from saved results.  Runs on real devices are in
tests/integration/test_compare.py (VM)."""
import json
import re
import subprocess
from pathlib import Path

import pytest

COMPARE = str(Path(__file__).resolve().parents[2] / "tools" / "compare")


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
    (["--name", "a b", "/dev/null"], "--name: 'a b' is not a plain device name"),
    (["--report", "x.json", "/dev/null"], "--report takes no device"),
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


def results(tmp_path, **over):
    """A results file in compare's schema with known numbers."""
    cells = {"bare": [], "remap": []}
    scale = {("bare", "read"): 1.0, ("bare", "write"): 1.0,
             ("remap", "read"): 1.5, ("remap", "write"): 3.0}
    for side in ("bare", "remap"):
        for op in ("read", "write"):
            for bs in (4096, 1 << 20):
                for t in (1, 10):
                    iops = 1000.0 * t / (bs // 4096) * scale[side, op]
                    cells[side].append({"op": op, "bs": bs, "threads": t, "iops": iops,
                                        "bw_bytes": iops * bs, "ios": int(iops),
                                        "seconds": 1.0})
    fio = {side: {"randwrite-4k-fsync": {"write": {"iops": 200.0 * s, "bw_bytes": 819200.0 * s,
                                                   "clat_mean_us": 10, "clat_p99_us": 20 * s}}}
           for side, s in (("bare", 1), ("remap", 2))}
    res = {"schema": "dm-remap-compare/1", "date": "2026-11-22T12:00:00+00:00",
           "host": "h", "kernel": "6.12.0-test",
           "device": {"path": "/dev/md0", "label": "test array", "bytes": 1 << 30},
           "dm_remap": {"table": "0 2000000 remap 9:0 0", "logical_bytes": 1 << 30},
           "params": {"bs": [4096, 1 << 20], "threads": [1, 10], "seconds": 2.0,
                      "region_bytes": 256 << 20, "seed": 1,
                      "fio_jobs": ["randwrite-4k-fsync"], "fio_runtime": 5},
           "bm_flash": cells, "fio": fio, "remap_refreshes": 2}
    res.update(over)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(res))
    return path


def test_report_table(tmp_path):
    path = results(tmp_path)
    p = compare("--report", str(path), "--no-chart")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("dm-remap compare: /dev/md0 (test array), kernel 6.12.0-test")
    assert "region 256 MiB" in out and "0 2000000 remap 9:0 0" in out
    sections = out.split("random write")
    assert len(sections) == 2 and "random read" in sections[0]
    # write rows: remapped is 3x bare; read rows: 1.5x
    w4k = re.search(r"^\s+4K\s+\|.*$", sections[1], re.M).group(0)
    assert re.findall(r"\d+\.\d\dx", w4k) == ["3.00x", "3.00x"]
    assert "1000    3.9M" in w4k and "3000   11.7M" in w4k, w4k
    r1m = re.search(r"^\s+1M\s+\|.*$", sections[0], re.M).group(0)
    assert re.findall(r"\d+\.\d\dx", r1m) == ["1.50x", "1.50x"]
    fio = re.search(r"^randwrite-4k-fsync\s+write\s+(\d+)\s+(\d+)\s+(\S+)", out, re.M)
    assert fio.groups() == ("200", "400", "2.00x")
    assert "formatted again 2 time(s)" in out


def test_report_missing_cell_shows_dash(tmp_path):
    path = results(tmp_path)
    res = json.loads(path.read_text())
    res["bm_flash"]["remap"] = [c for c in res["bm_flash"]["remap"]
                                if not (c["op"] == "write" and c["bs"] == 4096 and c["threads"] == 10)]
    path.write_text(json.dumps(res))
    p = compare("--report", str(path), "--no-chart")
    w4k = re.search(r"^\s+4K\s+\|.*$", p.stdout.split("random write")[1], re.M).group(0)
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
