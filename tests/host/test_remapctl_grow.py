# SPDX-License-Identifier: GPL-2.0-only
"""remapctl format --grow-limit and remapctl grow, on image files.

The host has no device-mapper: a stand-in dmsetup on PATH answers
`dmsetup table NAME` with a table line over the image and records every
other call, so these tests check what grow asks of dmsetup.  The module's
side (the longer table loads, the data verifies, a power cut across the
grow) is tests/integration/test_grow.py in the VM.

The oracle for the grown length is an independent format: an image of
the grown size formatted with the same grow limit has the logical size a
grow to that size must give (the geometry of a grown device is the one
a format at its size would lay out, dmr_geometry_grow()).
"""
import os
import subprocess
from pathlib import Path

import pytest

# DMR_TEST_REMAPCTL: another build to run these tests against (a test
# hook, to show a test fails on an older remapctl); unset: the tree's own
REMAPCTL = os.environ.get("DMR_TEST_REMAPCTL") or \
    str(Path(__file__).resolve().parents[2] / "tools" / "remapctl")
MIB = 1 << 20


def rc(*args, env=None):
    return subprocess.run([REMAPCTL, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def kv(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def image(path, size):
    """A sparse image of SIZE bytes; an existing one keeps its content."""
    open(path, "ab").close()
    os.truncate(path, size)
    return str(path)


def formatted(tmp_path, name, size, *args):
    p = image(tmp_path / name, size)
    r = rc("format", "--segment-size", "1M", *args, p)
    assert r.returncode == 0, r.stderr
    return p, kv(rc("dump", p).stdout)


def fake_dmsetup(tmp_path, table, fail_resume=False):
    """dmsetup: `table` prints TABLE, everything else is logged (one line
    per call); with FAIL_RESUME the first resume fails."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "dmsetup.log"
    marker = tmp_path / "resumed-once"
    fake = bindir / "dmsetup"
    fail = (f'if [ "$1" = resume ] && [ ! -e {marker} ]; then touch {marker}; '
            'exit 1; fi\n') if fail_resume else ""
    fake.write_text("#!/bin/sh\n"
                    f'if [ "$1" = table ]; then echo "{table}"; exit 0; fi\n'
                    f'printf "%s|" "$@" >> {log}; echo >> {log}\n' + fail)
    fake.chmod(0o755)
    return log, dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def calls(log):
    return [ln.rstrip("|").split("|") for ln in log.read_text().splitlines()] \
        if log.exists() else []


def test_format_grow_limit_places_the_slots_for_the_limit(tmp_path):
    """The slots and the data area of a device formatted with a limit are
    those of a device of the limit's size; the feature bit and the limit
    are in the superblock, and the first checkpoint records its sizes."""
    _, d = formatted(tmp_path, "a.img", 256 * MIB, "--grow-limit", "1G")
    _, big = formatted(tmp_path, "big.img", 1024 * MIB)
    _, plain = formatted(tmp_path, "plain.img", 256 * MIB)
    assert d["feature_incompat"] == "1" and plain["feature_incompat"] == "0"
    assert int(d["grow_limit"]) == 1024 * MIB // 4096 and plain["grow_limit"] == "0"
    assert d["data_offset"] == big["data_offset"] != plain["data_offset"]
    assert d["ckpt_slot_blocks"] == big["ckpt_slot_blocks"]
    assert d["nr_segments"] < plain["nr_segments"]       # the room costs segments
    assert d["ckpt0_logical_blocks"] == d["logical_blocks"]
    assert d["ckpt0_nr_segments"] == d["nr_segments"]
    out = rc("format", "--force", "--segment-size", "1M", "--grow-limit", "1G",
             str(tmp_path / "a.img")).stdout
    assert "grows online (remapctl grow) up to a device of 1.0 GiB" in out


@pytest.mark.parametrize("size, limit, code, why", [
    # a limit this device cannot take is a bad value: bad usage (2)
    (256 * MIB, "100M", 2, "is smaller than the device"),
    (10 << 40, "4500T", 2, "--grow-limit too large: at most 2^32 - 2 segments"),
    # a device too small for the limit's slots is refused (1)
    (256 * MIB, "1T", 1, "too small for the checkpoint slots of --grow-limit 1T (2.1 GiB)"),
    # past 16 TiB: 64-bit block numbers, whose slots take 0.4% of the limit
    (40 << 30, "17T", 1, "too small for the checkpoint slots of --grow-limit 17T"),
])
def test_format_refuses_a_bad_limit_and_writes_nothing(tmp_path, size, limit, code, why):
    p = image(tmp_path / "a.img", size)
    r = rc("format", "--grow-limit", limit, p)
    assert r.returncode == code and why in r.stderr, (r.returncode, r.stderr)
    assert ("Try 'remapctl --help'" in r.stderr) == (code == 2), r.stderr
    assert rc("dump", p).returncode != 0             # no superblock written


@pytest.mark.parametrize("bad", ["", "lots", "1X", "2000P"])
def test_format_grow_limit_usage(tmp_path, bad):
    r = rc("format", "--grow-limit", bad, str(tmp_path / "x.img"))
    assert r.returncode == 2 and "invalid --grow-limit" in r.stderr, r.stderr


def test_grow_reloads_the_longer_table(tmp_path):
    """The device grew from 256 MiB to 768 MiB: grow reloads the table
    with the length a format at 768 MiB (same limit) gives, keeps the
    device and the options as the table had them, and resumes."""
    p, d = formatted(tmp_path, "a.img", 256 * MIB, "--grow-limit", "1G")
    _, want = formatted(tmp_path, "want.img", 768 * MIB, "--grow-limit", "1G")
    old = d["logical_sectors"]
    log, env = fake_dmsetup(tmp_path, f"0 {old} remap {p} 2 gc_low 6")
    image(p, 768 * MIB)
    r = rc("grow", "fast", env=env)
    assert r.returncode == 0, r.stderr
    assert calls(log) == [
        ["reload", "fast", "--table", f"0 {want['logical_sectors']} remap {p} 2 gc_low 6"],
        ["resume", "fast"]]
    assert f"grew fast: {old} to {want['logical_sectors']} sectors" in r.stdout
    assert "resize2fs /dev/mapper/fast" in r.stdout


def test_grow_past_the_limit_grows_to_the_limit(tmp_path):
    p, d = formatted(tmp_path, "a.img", 256 * MIB, "--grow-limit", "512M")
    _, want = formatted(tmp_path, "want.img", 512 * MIB, "--grow-limit", "512M")
    log, env = fake_dmsetup(tmp_path, f"0 {d['logical_sectors']} remap {p}")
    image(p, 2048 * MIB)
    r = rc("grow", "fast", env=env)
    assert r.returncode == 0, r.stderr
    assert "larger than the grow limit" in r.stderr
    assert calls(log)[0][3] == f"0 {want['logical_sectors']} remap {p}"


@pytest.mark.parametrize("case", ["no-limit", "shrunk", "not-remap", "two-targets"])
def test_grow_refusals_call_no_reload(tmp_path, case):
    args = ("--grow-limit", "1G") if case != "no-limit" else ()
    p, d = formatted(tmp_path, "a.img", 256 * MIB, *args)
    table = {"not-remap": f"0 {d['logical_sectors']} linear {p} 0",
             "two-targets": f"8 {d['logical_sectors']} remap {p}"}.get(
                 case, f"0 {d['logical_sectors']} remap {p}")
    log, env = fake_dmsetup(tmp_path, table)
    image(p, (128 if case == "shrunk" else 512) * MIB)
    r = rc("grow", "fast", env=env)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert {"no-limit": "formatted without room to grow (remapctl format --grow-limit)",
            "shrunk": "shrinking is not supported",
            "not-remap": "not a dm-remap device",
            "two-targets": "more than one remap target"}[case] in r.stderr, r.stderr
    assert calls(log) == []


def test_grow_nothing_to_grow(tmp_path):
    p, d = formatted(tmp_path, "a.img", 256 * MIB, "--grow-limit", "1G")
    log, env = fake_dmsetup(tmp_path, f"0 {d['logical_sectors']} remap {p}")
    r = rc("grow", "fast", env=env)
    assert r.returncode == 0 and "nothing to grow" in r.stdout, (r.stdout, r.stderr)
    assert calls(log) == []


def test_grow_puts_the_old_table_back_when_resume_fails(tmp_path):
    p, d = formatted(tmp_path, "a.img", 256 * MIB, "--grow-limit", "1G")
    old = f"0 {d['logical_sectors']} remap {p} 1 read_only"
    log, env = fake_dmsetup(tmp_path, old, fail_resume=True)
    image(p, 512 * MIB)
    r = rc("grow", "fast", env=env)
    assert r.returncode == 1 and "the old table is back" in r.stderr, r.stderr
    c = calls(log)
    assert [x[0] for x in c] == ["reload", "resume", "reload", "resume"]
    assert c[2] == ["reload", "fast", "--table", old]


@pytest.mark.parametrize("second", ["linear {other} 0", "remap {other}"])
def test_grow_refuses_a_table_of_more_than_one_line(tmp_path, second):
    """A table whose remap line is followed by another (a linear tail, a
    second remap): grow builds the reload, and its rollback, from the first
    line alone, so the rest would be lost.  It is refused, naming the
    device and the number of lines, and dmsetup is asked nothing more."""
    p, d = formatted(tmp_path, "a.img", 256 * MIB, "--grow-limit", "1G")
    n = int(d["logical_sectors"])
    second = second.format(other=image(tmp_path / "other.img", 16 * MIB))
    log, env = fake_dmsetup(tmp_path, f"0 {n} remap {p}\n{n} 2048 {second}")
    image(p, 512 * MIB)
    r = rc("grow", "fast", env=env)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "fast: its table has 2 lines" in r.stderr, r.stderr
    assert calls(log) == []
