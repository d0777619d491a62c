# SPDX-License-Identifier: GPL-2.0-only
"""bm-flash on the host, on image files: arguments, refusals, output forms.

Block-device behaviour (logical block size, in use, ramdisks) is covered by
tests/integration/test_bm_flash.py in the VM.  Every run here that writes
targets an image file under pytest's tmp_path.
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# DMR_TEST_BM_FLASH: another build to run these tests against (a test
# hook, to show a test fails on an older bm-flash); unset: the tree's own
BM = os.environ.get("DMR_TEST_BM_FLASH") or str(REPO / "tools" / "bm-flash")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
SHORT = ["--bs", "4K,64K", "--threads", "1,2", "--seconds", "0.3",
         "--size", "16M"]


def bm(*args, user=None):
    cmd = [BM, *args]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}",
               "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def direct_io_works(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return False
    os.close(fd)
    return True


@pytest.fixture
def img(tmp_path):
    p = tmp_path / "dev.img"
    with open(p, "wb") as f:
        f.truncate(64 << 20)
    if not direct_io_works(p):
        pytest.skip(f"{tmp_path} does not support O_DIRECT")
    return str(p)


def bw_bytes(text):
    """'61.3K' -> bytes (1024-based, as printed in the table)."""
    m = re.fullmatch(r"(\d+\.\d)([KMGT])", text)
    assert m, text
    return float(m.group(1)) * UNITS[m.group(2)], UNITS[m.group(2)]


def parse_table(out):
    """Return (header lines, {bs label: [(iops, bw, unit), ...]})."""
    lines = out.splitlines()
    assert lines[0].startswith("Block Size")
    rows = {}
    for line in lines[3:]:
        label, *cols = line.split()
        assert len(cols) % 2 == 0, line
        rows[label] = [(int(cols[i]), *bw_bytes(cols[i + 1]))
                       for i in range(0, len(cols), 2)]
    return lines[:3], rows


@pytest.mark.parametrize("args", [
    [],
    ["--bs", "3K", "IMG"],
    ["--bs", "0", "IMG"],
    ["--bs", "4K,,8K", "IMG"],
    ["--bs", "4K,", "IMG"],
    ["--bs", "lots", "IMG"],
    ["--bs", "256", "IMG"],
    ["--threads", "0", "IMG"],
    ["--threads", "-1", "IMG"],
    ["--threads", "1.5", "IMG"],
    ["--seconds", "0", "IMG"],
    ["--seconds", "-2", "IMG"],
    ["--seconds", "nan", "IMG"],
    ["--size", "0", "IMG"],
    ["--size", "1T", "IMG"],
    ["--seed", "x", "IMG"],
    ["--bogus", "IMG"],
    ["-q", "IMG"],
    ["--bs"],
    ["--read-only", "--write-only", "IMG"],
    ["--json", "--csv", "IMG"],
    ["IMG", "IMG"],
    ["/nonexistent/dev"],
    ["/dev/null"],
    ["DIR"],
])
def test_usage_errors_exit_2(args, img, tmp_path):
    args = [img if a == "IMG" else str(tmp_path) if a == "DIR" else a
            for a in args]
    p = bm(*args)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert p.stderr.startswith("bm-flash: ")
    assert p.stderr.count("\n") == 1, p.stderr
    assert p.stdout == ""


def test_no_permission_exit_2(tmp_path):
    d = tmp_path / "perm"
    d.mkdir()
    f = d / "dev.img"
    f.write_bytes(b"\0" * (1 << 20))
    f.chmod(0o600)
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv")
        for p in (tmp_path, d):             # let nobody reach the file
            p.chmod(0o755)
        p = bm("--read-only", str(f), user=65534)
    else:
        f.chmod(0)
        p = bm("--read-only", str(f))
    assert p.returncode == 2, p.stderr
    assert p.stderr == f"bm-flash: {f}: Permission denied\n"


def test_help():
    p = bm("--help")
    assert p.returncode == 0 and p.stdout.startswith("Usage: bm-flash")
    for opt in ("--bs", "--threads", "--seconds", "--size", "--read-only",
                "--write-only", "--json", "--csv", "--force", "--seed", "--check",
                "--max-bytes"):
        assert opt in p.stdout


def test_version_names_the_package_and_the_format():
    """bm-flash --version (-V), as remapctl --version: dkms.conf's
    PACKAGE_VERSION and the on-disk format version of dmr-format.h; it
    does nothing else (no device needed), and --help lists it."""
    pkg = re.search(r'^PACKAGE_VERSION="(.*)"', (REPO / "dkms.conf").read_text(), re.M)[1]
    fmt = re.search(r"#define DMR_FORMAT_VERSION\s+(\d+)",
                    (REPO / "dm-remap" / "dmr-format.h").read_text())[1]
    for opt in ("--version", "-V"):
        p = bm(opt)
        assert p.returncode == 0, p.stderr
        assert p.stdout == f"bm-flash (dm-remap) {pkg}, on-disk format version {fmt}\n"
        assert p.stderr == ""
    assert "--version" in bm("--help").stdout


def test_refuses_ext4_image_unless_forced(img):
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    before = Path(img).read_bytes()[:1 << 20]
    p = bm("--bs", "4K", "--threads", "1", "--seconds", "0.1", img)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == (f"bm-flash: {img}: holds a signature (ext4); refusing "
                        "to write to it (use --force to override)\n")
    assert Path(img).read_bytes()[:1 << 20] == before

    p = bm("--bs", "4K", "--threads", "1", "--seconds", "0.1", "--read-only",
           "--csv", img)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert Path(img).read_bytes()[:1 << 20] == before

    p = bm("--bs", "4K", "--threads", "1", "--seconds", "0.1", "--force",
           "--csv", img)
    assert p.returncode == 0, p.stderr
    assert "overwriting its signature (ext4)" in p.stderr
    assert [r["op"] for r in csv.DictReader(io.StringIO(p.stdout))] == \
        ["read", "write"]


@pytest.mark.parametrize("block", [0, 1])
def test_refuses_dm_remap_superblock(img, block):
    with open(img, "r+b") as f:
        f.seek(block * 4096)
        f.write(b"DM-REMAP")
    p = bm("--write-only", "--bs", "4K", "--threads", "1", "--seconds", "0.1",
           img)
    assert p.returncode == 1
    assert "holds a signature (dm-remap)" in p.stderr and "--force" in p.stderr


def check_cell(iops, bw, bs, unit=None):
    assert iops > 0
    if unit is None:                        # exact bytes: iops has 2 decimals
        assert abs(bw - iops * bs) <= 0.01 * bs + 1
    else:                                   # table: IOPS and BW both rounded
        assert abs(bw - iops * bs) <= 0.05 * unit + 0.5 * bs


def test_table(img):
    p = bm(*SHORT, "--force", img)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""                   # no progress line: not a tty
    header, rows = parse_table(p.stdout)
    assert header[0].split() == ["Block", "Size", "Random", "Read", "Tests:",
                                 "Random", "Write", "Tests:"]
    assert header[1].split() == ["1", "thread", "2", "threads"] * 2
    assert header[2].split() == ["IOPS", "BW"] * 4
    assert list(rows) == ["4K", "64K"]
    for label, bs in (("4K", 4096), ("64K", 65536)):
        assert len(rows[label]) == 4        # read 1, read 2, write 1, write 2
        for iops, bw, unit in rows[label]:
            check_cell(iops, bw, bs, unit)


def test_json(img):
    p = bm(*SHORT, "--json", "--force", img)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["device"] == img
    assert j["size_bytes"] == 16 << 20
    assert j["seconds_per_cell"] == 0.3
    cells = [(r["op"], r["bs"], r["threads"]) for r in j["results"]]
    assert cells == [(op, bs, t) for op in ("read", "write")
                     for bs in (4096, 65536) for t in (1, 2)]
    for r in j["results"]:
        check_cell(r["iops"], r["bw_bytes"], r["bs"])
        assert r["seconds"] >= 0.3 and r["ios"] > 0
        assert r["iops"] == pytest.approx(r["ios"] / r["seconds"], rel=1e-3)


def test_csv(img):
    p = bm(*SHORT, "--csv", "--force", img)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "op,bs,threads,iops,bw_bytes,ios,seconds"
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 8
    for r in rows:
        bs = int(r["bs"])
        check_cell(float(r["iops"]), float(r["bw_bytes"]), bs)
        assert int(r["ios"]) > 0 and float(r["seconds"]) >= 0.3
        assert r["op"] in ("read", "write") and r["threads"] in ("1", "2")


def test_default_grid(img):
    """The papers' grid: 512B to 1M, 1/10/40 threads, read then write."""
    p = bm("--seconds", "0.02", "--force", img)
    assert p.returncode == 0, p.stderr
    header, rows = parse_table(p.stdout)
    assert header[1].split() == ["1", "thread", "10", "threads", "40",
                                 "threads"] * 2
    assert list(rows) == ["512B", "4K", "8K", "16K", "32K", "64K", "128K",
                          "256K", "512K", "1M"]
    assert all(len(cols) == 6 for cols in rows.values())


def test_read_only_and_write_only_sections(img):
    p = bm("--read-only", "--bs", "4K", "--threads", "1", "--seconds", "0.1",
           img)
    assert p.returncode == 0, p.stderr
    assert "Random Read Tests:" in p.stdout and "Write" not in p.stdout
    assert Path(img).read_bytes() == b"\0" * (64 << 20)
    p = bm("--write-only", "--bs", "4K", "--threads", "1", "--seconds", "0.1",
           "--csv", "--force", img)
    assert p.returncode == 0, p.stderr
    assert [r["op"] for r in csv.DictReader(io.StringIO(p.stdout))] == ["write"]


def test_writes_random_data_inside_size(img):
    p = bm("--write-only", "--bs", "4K", "--threads", "2", "--seconds", "0.3",
           "--size", "1M", "--csv", "--force", img)
    assert p.returncode == 0, p.stderr
    data = Path(img).read_bytes()
    assert data[1 << 20:] == b"\0" * ((64 << 20) - (1 << 20))
    blocks = [data[i:i + 4096] for i in range(0, 1 << 20, 4096)]
    written = [b for b in blocks if b != b"\0" * 4096]
    assert len(written) > 16
    assert len(set(written)) == len(written)    # no two writes alike
    assert all(len(set(b)) > 200 for b in written)  # random bytes, not a pattern


def test_block_size_larger_than_region_is_skipped(img):
    p = bm("--read-only", "--bs", "4K,1M", "--threads", "1", "--seconds",
           "0.1", "--size", "512K", img)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ("bm-flash: skipping 1M: larger than the tested region "
                        "(524288 bytes)\n")
    assert list(parse_table(p.stdout)[1]) == ["4K"]


def test_refuses_plain_file_unless_forced(tmp_path):
    """A regular file without any signature (a config file, say) is not
    written to unless --force: it is not a disk."""
    f = tmp_path / "notes.txt"
    text = b"root:*:20228:0:99999:7:::\n" * 200
    f.write_bytes(text)
    p = bm("--write-only", "--bs", "4K", "--threads", "1", "--seconds", "0.1",
           str(f))
    assert p.returncode == 1
    assert "is a regular file" in p.stderr and "--force" in p.stderr
    assert f.read_bytes() == text


def test_check_only_does_no_io(img):
    """--check applies the write-test rules and exits; it writes nothing
    even when the answer is yes (tools/compare asks it first)."""
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    before = Path(img).read_bytes()
    p = bm("--check", img)
    assert p.returncode == 1 and p.stdout == ""
    assert "holds a signature (ext4)" in p.stderr and "--force" in p.stderr
    p = bm("--check", "--force", img)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{img}: a write test is allowed (--force)\n"
    assert Path(img).read_bytes() == before
    p = bm("--check", "--read-only", img)
    assert p.returncode == 2 and "excludes --read-only" in p.stderr


def test_max_bytes_ends_cells_early(img):
    """--max-bytes ends a cell after that many bytes; IOPS are over the time
    the cell really ran (tools/compare caps remapped write cells with it)."""
    p = bm("--bs", "4K,64K", "--threads", "1,3", "--seconds", "60",
           "--max-bytes", "1M", "--force", "--json", img)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)["results"]
    assert len(res) == 8
    for r in res:
        assert r["ios"] == (1 << 20) // r["bs"], r
        assert r["seconds"] < 30                        # not the 60 s
        # "seconds" is printed to the microsecond, and a cell served from
        # the page cache can end in tens of microseconds: the IOPS must lie
        # within what the rounded time allows (plus 1%), not match it exactly.
        s = r["seconds"]
        lo = r["ios"] / (s + 5e-7)
        hi = r["ios"] / (s - 5e-7) if s > 5e-7 else float("inf")
        assert 0.99 * lo - 0.01 <= r["iops"] <= 1.01 * hi + 0.01, r
    for bad in ("0", "x", "1Q"):
        p = bm("--max-bytes", bad, img)
        assert p.returncode == 2 and f"--max-bytes: bad size '{bad}'" in p.stderr
