# SPDX-License-Identifier: GPL-2.0-only
"""remapctl check on freshly formatted image files: fsck's exit codes (0
clean, 1 corrected, 4 errors left, 8 could not check), one line per
problem, and --repair of a superblock copy.  Used devices (a log, GC,
crashes) are checked in the VM (tests/integration/test_check.py).
"""
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from test_remapctl_format import BLOCK, SEGTAB_ENTRY, dump, layout, rc, sparse

CLEAN, CORRECTED, ERRORS, OPERATIONAL = 0, 1, 4, 8


def flip(path, byte_offset, mask=0x01):
    with open(path, "r+b") as f:
        f.seek(byte_offset)
        b = f.read(1)
        f.seek(byte_offset)
        f.write(bytes([b[0] ^ mask]))


def check(*args):
    p = rc("check", *args)
    # the closing line is always there, except for a usage error
    if p.returncode != 2 and p.returncode != OPERATIONAL:
        assert re.search(r"^check: .*: \d+ log units checked, \d+ replayed, "
                         r"\d+ blocks mapped; \d+ errors, \d+ repaired", p.stdout, re.M), p.stdout
    return p


def errors(p):
    return [l for l in p.stdout.splitlines() if l.startswith("error: ")]


@pytest.fixture
def fmt(tmp_path):
    img = sparse(tmp_path, 64 << 20)
    assert rc("format", img).returncode == 0
    return img, dump(img)


def test_fresh_device_is_clean(fmt):
    img, _ = fmt
    p = check(img)
    assert p.returncode == CLEAN, p.stdout + p.stderr
    assert errors(p) == []
    assert "0 errors, 0 repaired" in p.stdout
    assert "note: checkpoint slot 0: seq 1, log seq 0, clean" in p.stdout


def test_usage_errors(fmt):
    img, _ = fmt
    assert rc("check").returncode == 2
    assert rc("check", img, img).returncode == 2
    assert rc("check", "--bogus", img).returncode == 2


def test_not_dm_remap_and_missing_are_operational(tmp_path):
    zero = sparse(tmp_path, 64 << 20, "zero.img")
    p = check(zero)
    assert p.returncode == OPERATIONAL
    assert "not a dm-remap device" in p.stdout
    p = check(str(tmp_path / "nonexistent"))
    assert p.returncode == OPERATIONAL
    assert "No such file" in p.stderr
    p = check(str(tmp_path))
    assert p.returncode == OPERATIONAL
    assert "not a block device or regular file" in p.stderr


@pytest.mark.parametrize("copy", [0, 1])
def test_damaged_superblock_copy_found_and_repaired(fmt, copy):
    img, _ = fmt
    flip(img, copy * BLOCK + 200)           # a payload byte: checksum fails
    p = check(img)
    assert p.returncode == ERRORS
    assert errors(p) == [f"error: superblock copy {copy}: superblock checksum mismatch"]
    p = check("--repair", img)
    assert p.returncode == CORRECTED, p.stdout
    assert f"repaired: superblock copy {copy} rewritten from copy {1 - copy} " \
           f"(block {copy})" in p.stdout
    assert "0 errors, 1 repaired" in p.stdout
    p = check(img)
    assert p.returncode == CLEAN, p.stdout
    d = dump(img)
    assert d["superblock_copy0"] == d["superblock_copy1"] == "ok"


def test_check_without_repair_writes_nothing(fmt):
    img, _ = fmt
    flip(img, BLOCK + 200)
    before = Path(img).read_bytes()
    assert check(img).returncode == ERRORS
    assert Path(img).read_bytes() == before


def test_both_superblocks_damaged(fmt):
    img, _ = fmt
    flip(img, 200)
    flip(img, BLOCK + 12)                   # copy 1's version byte
    p = check("--repair", img)
    assert p.returncode == ERRORS           # nothing to repair from
    assert errors(p) == ["error: no valid superblock: copy 0: superblock checksum mismatch; "
                         "copy 1: superblock checksum mismatch"]
    assert not re.search(r"^repaired:", p.stdout, re.M)
    assert "not repaired: 1 problem above" in p.stdout    # what remapctl(8) promises


def test_device_that_shrank(fmt):
    img, d = fmt
    os.truncate(img, (int(d["device_blocks"]) - 1) * BLOCK)
    p = check(img)
    assert p.returncode == ERRORS
    assert "fewer than the %s it was formatted with" % d["device_blocks"] in p.stdout


def slot_block(d, slot, part):
    base = int(d["ckpt_offset"]) + slot * int(d["ckpt_slot_blocks"])
    return base + (0 if part == "header" else layout(d)[part + "_offset"])


@pytest.mark.parametrize("part,message", [
    ("map", "map block 0 does not match its checksum"),
    ("crc", "the map blocks' CRC table does not match its checksum"),
    ("segtab", "the segment table does not match its checksum"),
])
def test_damaged_table_of_the_only_slot(fmt, part, message):
    img, d = fmt
    flip(img, slot_block(d, 0, part) * BLOCK + 8)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == [
        f"error: checkpoint slot 0 (seq 1, the newest): {message}",
        "error: no checkpoint slot loads: the module refuses this device"]


def test_damaged_header_of_the_only_slot(fmt):
    img, d = fmt
    flip(img, slot_block(d, 0, "header") * BLOCK + 40)
    p = check(img)
    assert p.returncode == ERRORS
    assert errors(p) == [
        "error: checkpoint slot 0 header: torn or corrupted summary",
        "error: no valid checkpoint header: the module refuses this device"]


def test_random_header_is_damaged_not_never_written(fmt):
    """A slot header of random bytes (no magic) is damaged, not "never
    written" (only the zeroes format leaves are); --repair rewrites that
    slot from the one the module loads, and says so."""
    import random
    img, d = fmt
    noise = random.Random(16).randbytes(BLOCK)
    with open(img, "r+b") as f:
        f.seek(slot_block(d, 1, "header") * BLOCK)
        f.write(noise)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert "note: checkpoint slot 1: never written" not in p.stdout
    assert errors(p) == ["error: checkpoint slot 1 header: damaged (no checkpoint "
                         "magic, and not the zeroes of a slot never written)"], p.stdout
    p = check("--repair", img)
    assert p.returncode == CORRECTED, p.stdout
    assert "repaired: checkpoint slot 1" in p.stdout, p.stdout
    assert check(img).returncode == CLEAN


def test_repair_says_what_it_leaves(fmt):
    """When --repair leaves a problem (here the only checkpoint slot's
    header is random bytes: nothing to rewrite it from), a "not repaired:"
    line says so, as remapctl(8) promises; a fresh slot 1 is "never
    written" (zeroes), a note."""
    import random
    img, d = fmt
    p = check(img)
    assert "note: checkpoint slot 1: never written" in p.stdout, p.stdout
    with open(img, "r+b") as f:
        f.seek(slot_block(d, 0, "header") * BLOCK)
        f.write(random.Random(17).randbytes(BLOCK))
    p = check("--repair", img)
    assert p.returncode == ERRORS, p.stdout
    assert "error: checkpoint slot 0 header: damaged" in p.stdout, p.stdout
    assert re.search(r"^not repaired: \d+ problems? above", p.stdout, re.M), p.stdout


def test_mapped_count_against_header(fmt):
    """A header whose mapped count disagrees with its map (re-checksummed,
    so only the cross-check can see it)."""
    img, d = fmt
    blk = slot_block(d, 0, "header")
    with open(img, "r+b") as f:
        f.seek(blk * BLOCK)
        h = bytearray(f.read(BLOCK))
    # struct dmr_disk_ckpt: mapped_blocks after the heads and two sums
    off = 8 + 4 + 4 + 8 + 8 + 8 + 16 + 12 * 4 + 4 + 4
    h[off:off + 8] = struct.pack("<Q", 5)
    from test_remapctl_format import crc32c
    h[8:12] = struct.pack("<I", crc32c(bytes(h[12:])) ^ 0xC4EC9017)
    with open(img, "r+b") as f:
        f.seek(blk * BLOCK)
        f.write(h)
    p = check(img)
    assert p.returncode == ERRORS
    assert "error: checkpoint slot 0: 0 blocks mapped, its header says 5" in p.stdout


def test_lost_slot_header(fmt):
    """Slot 1 at seq 2 means slot 0 was written too: a slot 0 without a
    header lost it (and slot 1's tables, never written here, fail)."""
    from test_remapctl_format import ckpt_header
    img, d = fmt
    hdr, blocknr = ckpt_header(d, 1, seq=2, flags=0, log_seq=0,
                               log_segment=0, log_offset=0)
    with open(img, "r+b") as f:
        f.seek(blocknr * BLOCK)
        f.write(hdr)
        f.seek(slot_block(d, 0, "header") * BLOCK)
        f.write(bytes(BLOCK))
    p = check(img)
    assert p.returncode == ERRORS
    assert errors(p) == [
        "error: checkpoint slot 0 header: lost (no header, but slot 1 is at seq 2, "
        "so both were written)",
        "error: checkpoint slot 1 (seq 2, the newest): the map blocks' CRC table "
        "does not match its checksum",
        "error: no checkpoint slot loads: the module refuses this device"]


# ---------------------------------------------------------------------------
# status: a stand-in dmsetup prints a status line (the host has no
# device-mapper; tests/integration/test_check.py reads a live target)

STATUS = ("0 1863472 remap write 3 232934 2304 1010 900 123456 456789 77 12 9 0 "
          "1140850688 2 5 -5 background 10 20 6 3 40 9000 38 11 3.700 2.950 60 0 0 2 1 "
          "31 29 4 290 17 96 255 12")


def fake_status(tmp_path, line, rc_=0):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / "dmsetup"
    fake.write_text(f"#!/bin/sh\necho '{line}'\nexit {rc_}\n")
    fake.chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def status(env, *args):
    import subprocess
    from test_remapctl_format import REMAPCTL
    return subprocess.run([REMAPCTL, "status", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_status_json_has_every_documented_field(tmp_path):
    import json
    doc = (Path(__file__).resolve().parents[2] / "Documentation" / "dm-remap.rst").read_text()
    section = doc.split("\nStatus\n======\n", 1)[1].split("\n=====", 1)[0]
    names = re.findall(r"^\d+\. ``(\w+)``", section, re.M)
    p = status(fake_status(tmp_path, STATUS), "fast", "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert list(j)[1:1 + len(names)] == names
    values = STATUS.split()[3:]
    for name, raw in zip(names, values):
        if name in ("mode", "gc_state"):
            assert j[name] == raw
        else:
            assert j[name] == (float(raw) if "." in raw else int(raw)), name
    assert j["name"] == "fast" and j["first_error"] == -5
    assert j["capacity_bytes"] == 232934 * 4096
    assert j["segment_bytes"] == 2304 * 512
    assert j["free_bytes"] == 900 * 2304 * 512


def test_status_human(tmp_path):
    p = status(fake_status(tmp_path, STATUS), "fast")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "mode:             write" in out
    assert "capacity:         909.9 MiB (232934 blocks of 4 KiB)" in out
    assert "segments:         1010 of 1.1 MiB; free 900 (1012.5 MiB, 89.1%), prefree 3" in out
    assert "write amp.:       3.700 since load, 2.950 since format" in out
    assert "gc:               background; starts below 10 free segments, stops at 20, " \
           "reserve 6" in out
    assert "first error:      -5 (Input/output error)" in out
    assert "gc problems:      2 victim reads failed (tried again after a checkpoint), " \
           "1 units left unmoved: data fails its checksum (run remapctl check" in out
    assert "map cache:        31 pages read back, 29 evicted, 4 checkpoints forced; " \
           "at most 290 pages in memory since load" in out
    assert "inline writes:    17 of the user's writes handled by their submitter, " \
           "not queued" in out
    assert "checkpoint tables: 96 blocks written (unchanged blocks are not written " \
           "again)" in out
    assert "read splits:      255 pieces past a read's first (its blocks not stored " \
           "one after the other)" in out
    assert "large segments:   12 written whole by large writes (no summary in them)" \
        in out
    # fields 29 and 30 stay for parsers; the retired zero-copy path is not shown
    assert "zero copy" not in out


def test_status_of_a_newer_module_ignores_the_fields_it_adds(tmp_path):
    """A module newer than remapctl appends fields: status reads the ones
    it knows, as it would the same status without them (human and JSON)."""
    for args in ((), ("--json",)):
        want = status(fake_status(tmp_path, STATUS), "fast", *args)
        assert want.returncode == 0, want.stderr
        for extra in (" 7", " 7 x 1.5 -3"):
            p = status(fake_status(tmp_path, STATUS + extra), "fast", *args)
            assert p.returncode == 0, p.stderr
            assert (p.stdout, p.stderr) == (want.stdout, ""), p.stdout


def test_status_of_an_older_module_says_which_versions(tmp_path):
    """Fewer fields than remapctl reads (an older module): refused, the
    message giving both counts, the module's format version (status
    field 2) and remapctl's own (remapctl --version)."""
    from test_remapctl_format import REMAPCTL
    ver = subprocess.run([REMAPCTL, "--version"], capture_output=True, text=True).stdout
    pkg, fmt = re.fullmatch(r"remapctl \(dm-remap\) (\S+), on-disk format version (\d+)\n",
                            ver).groups()
    older = " ".join(STATUS.split()[:3 + 32])          # before the map cache's fields
    p = status(fake_status(tmp_path, older), "fast")
    assert p.returncode == 1 and p.stdout == "", p.stdout
    assert p.stderr == (f"remapctl: fast: the module's status has 32 fields (its on-disk "
                        f"format version: 3), this remapctl reads 40 (dm-remap {pkg}, "
                        f"on-disk format version {fmt}): an older module; use the remapctl "
                        "of its release, or load this release's module\n"), p.stderr
    p = status(fake_status(tmp_path, "0 100 remap write"), "fast")
    assert p.returncode == 1 and "has 1 field (its on-disk format version: not given)" \
        in p.stderr, p.stderr


def test_status_refusals(tmp_path):
    p = status(fake_status(tmp_path, "0 100 linear 8:0 0"), "lin")
    assert p.returncode == 1 and "not a dm-remap device" in p.stderr
    p = status(fake_status(tmp_path, STATUS.replace(" 77 ", " 7x ")), "fast")
    assert p.returncode == 1 and "field 9 (flushes) is not a number" in p.stderr
    p = status(fake_status(tmp_path, "", rc_=1), "gone")
    assert p.returncode == 1 and "dmsetup status failed" in p.stderr
    assert status(os.environ, "a", "b").returncode == 2


def fake_dm_ls(tmp_path, names):
    """A stand-in dmsetup: ls --target remap lists names, status prints
    STATUS for each (another target's line for 'lin', a failure for
    'gone': a device that went away after the listing)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / "dmsetup"
    listing = "".join(f"{n}\t(253:{i})\\n" for i, n in enumerate(names)) or \
        "No devices found\\n"
    fake.write_text("#!/bin/sh\n"
                    f'if [ "$1 $2 $3" = "ls --target remap" ]; then printf "{listing}"; '
                    "exit 0; fi\n"
                    'case "$2" in gone) exit 1 ;; lin) echo "0 100 linear 8:0 0" ;; '
                    f"*) echo '{STATUS}' ;; esac\n")
    fake.chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def test_status_of_every_device(tmp_path):
    """remapctl status without NAME: every dm-remap device dmsetup lists,
    one after the other, or a JSON array; none: says so (and [])."""
    import json
    env = fake_dm_ls(tmp_path, ["fast", "slow"])
    p = status(env)
    assert p.returncode == 0, p.stderr
    blocks = p.stdout.split("\n\n")
    assert len(blocks) == 2 and "fast" in blocks[0] and "slow" in blocks[1], p.stdout
    assert p.stdout.count("write amp.:       3.700 since load") == 2
    p = status(env, "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert [d["name"] for d in j] == ["fast", "slow"] and j[1]["first_error"] == -5
    # one that went away between the listing and its status: the others
    # are still printed, the exit status says one failed
    p = status(fake_dm_ls(tmp_path, ["fast", "gone", "slow"]), "--json")
    assert p.returncode == 1 and "gone: dmsetup status failed" in p.stderr
    assert [d["name"] for d in json.loads(p.stdout)] == ["fast", "slow"]
    p = status(fake_dm_ls(tmp_path, []))
    assert p.returncode == 0 and p.stdout == "no dm-remap device is active\n"
    p = status(fake_dm_ls(tmp_path, []), "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == []


def test_dump_json_matches_dump(fmt):
    import json
    img, d = fmt
    p = rc("dump", "--json", img)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert list(j) == list(d)
    for k, v in d.items():
        want = int(v) if re.fullmatch(r"-?(0|[1-9]\d*)", v) else v
        assert j[k] == want, k
    assert j["ckpt1"] == "no unit (bad magic)" and j["ckpt0_head0_next"] == -1
    assert rc("dump", "--json").returncode == 2


# ---------------------------------------------------------------------------
# activate / deactivate: /etc/remaptab, with a stand-in dmsetup that logs
# its calls and a stand-in /sys/class/block and /dev (DMR_SYSFS_BLOCK,
# DMR_DEV_DIR) for UUID=; tests/integration creates real devices

def fake_dm(tmp_path, active=False):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "dmsetup.log"
    fake = bindir / "dmsetup"
    info = 'echo "$7"; exit 0' if active else "exit 1"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = info ]; then {info}; fi\n'
                    f'echo "$*" >> {log}\n')
    fake.chmod(0o755)
    return log, dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def test_activate_remaptab(tmp_path):
    import subprocess
    from test_remapctl_format import REMAPCTL
    devdir, sysdir = tmp_path / "dev", tmp_path / "sys"
    devdir.mkdir()
    sysdir.mkdir()
    a = sparse(tmp_path, 64 << 20, "a.img")
    b = str(devdir / "vdb")
    sparse(devdir, 64 << 20, "vdb")
    sparse(devdir, 1 << 20, "vda")                  # not dm-remap
    for name in ("vda", "vdb"):
        (sysdir / name).mkdir()
    assert rc("format", a).returncode == 0
    assert rc("format", "--overprovision", "20", b).returncode == 0
    da, db = dump(a), dump(b)
    tab = tmp_path / "remaptab"
    tab.write_text(
        "# NAME DEV OPTIONS\n"
        f"fast   {a}   read-only,gc-low=8   # by path\n"
        "\n"
        f"slow UUID={db['uuid'].upper()}\n"
        "lonely\n"
        "missing UUID=00000000-0000-0000-0000-000000000000\n")
    log, env = fake_dm(tmp_path)
    env.update(DMR_SYSFS_BLOCK=str(sysdir), DMR_DEV_DIR=str(devdir))
    p = subprocess.run([REMAPCTL, "activate", "--remaptab", str(tab)], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "remaptab:5: want NAME DEV [OPTIONS]" in p.stderr
    assert "remaptab:6: UUID=00000000-0000-0000-0000-000000000000: no block device " \
           "holds it" in p.stderr
    assert "activate: 2 done, 2 failed" in p.stdout
    calls = log.read_text().splitlines()
    assert calls == [
        f"create fast --table 0 {da['logical_sectors']} remap {a} 3 read_only gc_low 8",
        f"create slow --table 0 {db['logical_sectors']} remap {b}"]
    # --dry-run runs nothing
    log.unlink()
    p = subprocess.run([REMAPCTL, "activate", "--dry-run", "--remaptab", str(tab)],
                       capture_output=True, text=True, env=env, timeout=60)
    # the line names every option as the table wrote them (not just the first)
    assert f"activate: fast: create over {a} with read-only,gc-low=8\n" in p.stdout
    assert not log.exists()
    # everything active: activate leaves it, deactivate removes last line first
    log, env = fake_dm(tmp_path, active=True)
    env.update(DMR_SYSFS_BLOCK=str(sysdir), DMR_DEV_DIR=str(devdir))
    p = subprocess.run([REMAPCTL, "activate", "--remaptab", str(tab)], capture_output=True,
                       text=True, env=env, timeout=60)
    assert "activate: fast: already active" in p.stdout and not log.exists()
    p = subprocess.run([REMAPCTL, "deactivate", "--remaptab", str(tab)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert log.read_text().splitlines() == ["remove --retry missing", "remove --retry slow",
                                              "remove --retry fast"]
    p = subprocess.run([REMAPCTL, "activate", "--remaptab", str(tmp_path / "none")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and "No such file" in p.stderr and "--help" not in p.stderr


def test_activate_uuid_not_held_and_not_ambiguous(tmp_path):
    """UUID= never picks a device another one holds (a RAID-1 member with
    its metadata at the end shows the array's superblock; so does a
    dm-linear slice from block 0), and two devices that carry the uuid
    and are held by nothing are ambiguous: nothing is created."""
    import shutil
    import subprocess
    from test_remapctl_format import REMAPCTL
    devdir, sysdir = tmp_path / "dev", tmp_path / "sys"
    devdir.mkdir()
    sysdir.mkdir()
    sparse(devdir, 64 << 20, "md0")
    md0 = str(devdir / "md0")
    assert rc("format", md0).returncode == 0
    d = dump(md0)
    shutil.copy(md0, devdir / "sda")               # a member: the same blocks
    for name in ("md0", "sda"):
        (sysdir / name).mkdir()
    tab = tmp_path / "remaptab"
    tab.write_text(f"fast UUID={d['uuid']}\n")
    log, env = fake_dm(tmp_path)
    env.update(DMR_SYSFS_BLOCK=str(sysdir), DMR_DEV_DIR=str(devdir))

    def activate():
        return subprocess.run([REMAPCTL, "activate", "--remaptab", str(tab)],
                              capture_output=True, text=True, env=env, timeout=60)
    p = activate()
    assert p.returncode == 1 and "name the device by its path" in p.stderr, p.stderr
    assert "remaptab:1: UUID=" in p.stderr and not log.exists()
    (sysdir / "sda" / "holders").mkdir()
    (sysdir / "sda" / "holders" / "md0").touch()
    p = activate()
    assert p.returncode == 0, p.stdout + p.stderr
    assert log.read_text().splitlines() == [
        f"create fast --table 0 {d['logical_sectors']} remap {md0}"]


def test_activate_one_device(tmp_path):
    """activate --device DEV (udev's per-device unit): only the lines that
    name DEV, by its uuid or by a path to the same device; a device no
    line names is left alone (exit 0, nothing run); deactivate --device
    removes only its lines' devices."""
    import subprocess
    from test_remapctl_format import REMAPCTL
    devdir, sysdir = tmp_path / "dev", tmp_path / "sys"
    devdir.mkdir()
    (sysdir / "vdb").mkdir(parents=True)
    a = sparse(tmp_path, 64 << 20, "a.img")
    b = sparse(devdir, 64 << 20, "vdb")             # what UUID= resolves to
    other = sparse(tmp_path, 1 << 20, "other.img")
    assert rc("format", a).returncode == 0 and rc("format", b).returncode == 0
    da, db = dump(a), dump(b)
    (tmp_path / "b-link").symlink_to(b)
    tab = tmp_path / "remaptab"
    tab.write_text(f"fast {a}\n"
                   f"slow UUID={db['uuid']}\n"
                   f"slower {tmp_path / 'b-link'} read-only\n")
    log, env = fake_dm(tmp_path)
    env.update(DMR_SYSFS_BLOCK=str(sysdir), DMR_DEV_DIR=str(devdir))

    def act(*args):
        return subprocess.run([REMAPCTL, *args, "--remaptab", str(tab)],
                              capture_output=True, text=True, env=env, timeout=60)
    p = act("activate", "--device", b)
    assert p.returncode == 0, p.stdout + p.stderr
    assert log.read_text().splitlines() == [
        f"create slow --table 0 {db['logical_sectors']} remap {b}",
        f"create slower --table 0 {db['logical_sectors']} remap {tmp_path / 'b-link'} "
        "1 read_only"]
    assert "activate: 2 done, 0 failed" in p.stdout
    log.unlink()
    p = act("activate", "--device", other)
    assert p.returncode == 0 and "in no line of" in p.stdout and not log.exists()
    p = act("activate", "--device", a)
    assert log.read_text().splitlines() == [
        f"create fast --table 0 {da['logical_sectors']} remap {a}"]
    log.unlink()
    log, env = fake_dm(tmp_path, active=True)
    env.update(DMR_SYSFS_BLOCK=str(sysdir), DMR_DEV_DIR=str(devdir))
    p = act("deactivate", "--device", b)
    assert log.read_text().splitlines() == ["remove --retry slower",
                                              "remove --retry slow"], p.stdout


def test_activate_device_resolves_the_uuid_as_the_boot_path(tmp_path):
    """activate --device DEV with a UUID= line resolves the uuid as the
    boot path does (every block device that carries it and that nothing
    holds), and creates only when that is DEV alone: of two disks carrying
    the uuid (a dd clone), whichever udev reports first is refused, naming
    both; once the clone is held (a RAID member), the other is created, and
    the held one is refused."""
    import shutil
    import subprocess
    from test_remapctl_format import REMAPCTL
    devdir, sysdir = tmp_path / "dev", tmp_path / "sys"
    devdir.mkdir()
    sparse(devdir, 64 << 20, "sda")
    sda, sdb = str(devdir / "sda"), str(devdir / "sdb")
    assert rc("format", sda).returncode == 0
    d = dump(sda)
    shutil.copy(sda, sdb)                          # dd if=sda of=sdb
    for name in ("sda", "sdb"):
        (sysdir / name).mkdir(parents=True)
    tab = tmp_path / "remaptab"
    tab.write_text(f"fast UUID={d['uuid']}\n")
    log, env = fake_dm(tmp_path)
    env.update(DMR_SYSFS_BLOCK=str(sysdir), DMR_DEV_DIR=str(devdir))

    def activate(dev):
        return subprocess.run([REMAPCTL, "activate", "--remaptab", str(tab),
                               "--device", dev], capture_output=True, text=True,
                              env=env, timeout=60)
    for dev in (sda, sdb):
        p = activate(dev)
        assert p.returncode == 1, p.stdout + p.stderr
        assert f"remaptab:1: UUID={d['uuid']}: on " in p.stderr, p.stderr
        assert sda in p.stderr and sdb in p.stderr and "not created" in p.stderr
        assert not log.exists()
    (sysdir / "sdb" / "holders").mkdir()
    (sysdir / "sdb" / "holders" / "md0").touch()
    p = activate(sdb)
    assert p.returncode == 1 and f"resolves to {sda}, not {sdb}" in p.stderr, p.stderr
    assert not log.exists()
    p = activate(sda)
    assert p.returncode == 0, p.stdout + p.stderr
    assert log.read_text().splitlines() == [
        f"create fast --table 0 {d['logical_sectors']} remap {sda}"]


def test_install_puts_the_boot_unit_in_place(tmp_path):
    """make -C tools install: the systemd unit that runs activate before
    local file systems, and the udev rule with its per-device unit, all
    pointing at the installed remapctl, the units valid for systemd-analyze
    where it exists.  Every directory is under tmp_path."""
    import shutil
    import subprocess
    tools = Path(__file__).resolve().parents[2] / "tools"
    prefix, unitdir, udevdir = tmp_path / "usr", tmp_path / "systemd", tmp_path / "udev"
    p = subprocess.run(["make", "-s", "-C", str(tools), "install", f"PREFIX={prefix}",
                        f"SYSTEMDDIR={unitdir}", f"UDEVDIR={udevdir}"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    unit = (unitdir / "dm-remap.service").read_text()
    assert f"ExecStart={prefix}/sbin/remapctl activate" in unit
    assert f"ExecStop={prefix}/sbin/remapctl deactivate" in unit
    assert "Before=local-fs-pre.target" in unit and "DefaultDependencies=no" in unit
    assert (prefix / "sbin" / "remapctl").exists()
    per_dev = (unitdir / "dm-remap-activate@.service").read_text()
    assert f"ExecStart={prefix}/sbin/remapctl activate --device /dev/block/%i" in per_dev
    rules = (udevdir / "69-dm-remap.rules").read_text()
    assert f'IMPORT{{program}}="{prefix}/sbin/remapctl probe $devnode"' in rules
    assert 'ENV{SYSTEMD_WANTS}+="dm-remap-activate@$major:$minor.service"' in rules
    assert "@SBINDIR@" not in rules + unit + per_dev
    if shutil.which("systemd-analyze"):
        # the units' Documentation=man:remapctl(8): verify runs man on it
        repo = tools.parent
        p = subprocess.run(["make", "-s", "-C", str(repo), "install-man", f"PREFIX={prefix}",
                            f"BUILD={tmp_path / 'man'}"], capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        env = dict(os.environ, MANPATH=str(prefix / "share" / "man"))
        for name in ("dm-remap.service", "dm-remap-activate@8:16.service"):
            if "@8:16" in name:
                shutil.copy(unitdir / "dm-remap-activate@.service", unitdir / name)
            v = subprocess.run(["systemd-analyze", "verify", str(unitdir / name)],
                               capture_output=True, text=True, timeout=120, env=env)
            assert name.split("@")[0] not in v.stdout + v.stderr, v.stdout + v.stderr


def test_units_name_documentation_every_install_has(tmp_path):
    """The units' Documentation= names man pages only: both the package
    (which gzips /usr/share/doc, so a file:// of dm-remap.rst there names
    nothing) and make install put those in place, under tmp_path here."""
    import subprocess
    repo = Path(__file__).resolve().parents[2]
    root = tmp_path / "root"
    for args in (["-C", str(repo / "tools"), "install", "SYSTEMDDIR=/lib/systemd/system",
                  "UDEVDIR=/lib/udev/rules.d"], ["-C", str(repo), "install-man",
                                                  f"BUILD={tmp_path / 'man'}"]):
        p = subprocess.run(["make", "-s", *args, f"DESTDIR={root}", "PREFIX=/usr"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    for unit in ("dm-remap.service", "dm-remap-activate@.service"):
        text = (root / "lib/systemd/system" / unit).read_text()
        uris = re.search(r"^Documentation=(.*)$", text, re.M)[1].split()
        assert uris, text
        for uri in uris:
            m = re.fullmatch(r"man:([\w.-]+)\((\d)\)", uri)
            assert m, f"{unit}: Documentation={uri} is not a man page"
            page = root / "usr/share/man" / f"man{m[2]}" / f"{m[1]}.{m[2]}"
            assert page.exists() or Path(f"{page}.gz").exists(), (unit, uri)
    assert "man:dm-remap(4)" in (root / "lib/systemd/system/dm-remap.service").read_text()


def test_probe(fmt, tmp_path):
    """remapctl probe: udev's IMPORT{program} lines for a dm-remap device
    (the uuid dump shows), nothing and exit 1 for anything else."""
    img, d = fmt
    p = rc("probe", img)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"DMR_UUID={d['uuid']}\nDMR_VERSION={d['version']}\n"
    other = sparse(tmp_path, 1 << 20, "other.img")
    p = rc("probe", other)
    assert p.returncode == 1 and p.stdout == "" and p.stderr == ""
    p = rc("probe", str(tmp_path / "absent"))
    assert p.returncode == 1 and p.stdout == ""
    assert rc("probe").returncode == 2


def test_probe_refuses_a_raid_member(fmt):
    """A dm-remap superblock beside another signature (issue 40, item 8):
    here an md 0.90 superblock at the end of the image, as a RAID-1 member
    holding a dm-remap array carries both.  probe exits 1, prints nothing
    for udev and names the other signature on stderr: activating the
    member would write under the array.  Once the member's metadata is
    wiped, the superblock alone is activated again."""
    img, d = fmt
    size = os.path.getsize(img)
    off = (size & ~0xffff) - 0x10000
    with open(img, "r+b") as f:
        f.seek(off)
        f.write(struct.pack("<IIII", 0xa92b4efc, 0, 90, 0).ljust(BLOCK, b"\0"))
    p = rc("probe", img)
    assert p.returncode == 1 and p.stdout == "", p
    assert "linux_raid_member signature: not activated" in p.stderr, p.stderr
    with open(img, "r+b") as f:
        f.seek(off)
        f.write(bytes(BLOCK))
    p = rc("probe", img)
    assert p.returncode == 0 and p.stdout.startswith(f"DMR_UUID={d['uuid']}\n"), p


def set_sb_version(img, version):
    """Both superblock copies as a remapctl of format VERSION wrote them:
    the version field (byte 12) and the checksum over bytes [12, 4096)."""
    from test_remapctl_format import crc32c
    with open(img, "r+b") as f:
        for copy in range(2):
            f.seek(copy * BLOCK)
            sb = bytearray(f.read(BLOCK))
            sb[12:16] = struct.pack("<I", version)
            sb[8:12] = struct.pack("<I", crc32c(bytes(sb[12:])) ^ 0x5B1C0DE1)
            f.seek(copy * BLOCK)
            f.write(sb)


@pytest.mark.parametrize("version", [3, 4, 5, 7])
def test_unsupported_format_version_is_explained(fmt, tmp_path, version):
    """A superblock of another format version (an older format 3, 4 or 5,
    or a newer one): probe (udev's activation) exits 1 and says why on stderr,
    nothing on stdout; dump and create say the same; check cannot check
    it (exit 8).  The message names both versions and the remedy."""
    img, d = fmt
    set_sb_version(img, version)
    supported = d["version"]
    want = [f"format version {version}", f"supports version {supported}",
            "nothing converts"]
    want.append("copy the data off" if version < int(supported) else "newer")
    p = rc("probe", img)
    assert p.returncode == 1 and p.stdout == "", (p.stdout, p.stderr)
    assert img in p.stderr and all(w in p.stderr for w in want), p.stderr
    for args in (["dump", img], ["create", "fast", img]):
        p = rc(*args)
        assert p.returncode == 1 and all(w in p.stderr for w in want), (args, p.stderr)
    p = check(img)
    assert p.returncode == OPERATIONAL and all(w in p.stdout for w in want), p.stdout


def test_fallback_slot_problems_reported_once(fmt):
    """The newest slot fails its tables, so check (like the module) loads
    the older one; that slot's own problem (a segment valid count its map
    does not have) is reported once, not again when its map is reloaded."""
    from test_remapctl_format import ckpt_header, crc32c
    img, d = fmt
    lay = layout(d)
    base0 = slot_block(d, 0, "header")
    with open(img, "r+b") as f:
        f.seek((base0 + lay["segtab_offset"]) * BLOCK)
        seg = bytearray(f.read(lay["segtab_blocks"] * BLOCK))
        seg[8:12] = struct.pack("<I", 3)            # segment 0: valid 3
        f.seek((base0 + lay["segtab_offset"]) * BLOCK)
        f.write(seg)
        f.seek(base0 * BLOCK)
        h = bytearray(f.read(BLOCK))
        h[108:112] = struct.pack("<I", crc32c(bytes(seg)))   # segtab_csum
        h[8:12] = struct.pack("<I", crc32c(bytes(h[12:])) ^ 0xC4EC9017)
        f.seek(base0 * BLOCK)
        f.write(h)
        hdr, blocknr = ckpt_header(d, 1, seq=2, flags=0, log_seq=0,
                                   log_segment=0, log_offset=0)
        f.seek(blocknr * BLOCK)
        f.write(hdr)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == [
        "error: checkpoint slot 0: segment 0 has valid count 3, its map 0",
        "error: checkpoint slot 1 (seq 2, the newest): the map blocks' CRC table "
        "does not match its checksum"]
    assert "note: the module loads slot 0; the newer slot 1 is damaged" in p.stdout


# ---------------------------------------------------------------------------
# --repair of a checkpoint slot: rewritten from the slot the module loads
# and the log replayed after it (tests/integration/test_check.py repairs
# slots of used devices)

SEQ_WINDOW = 1 << 32          # DMR_SEQ_WINDOW (dm-remap/dmr-writer.h)
# struct dmr_disk_ckpt: crc_csum, segtab_csum and mapped_blocks
HDR_CRC_CSUM, HDR_SEGTAB_CSUM, HDR_MAPPED = 104, 108, 112


def rewrite_slot0(img, d, entries=None, valid=None, used=True):
    """Slot 0 of a fresh image with map entries {lba: entry} and segment
    valid counts {segment: n} (DMR_SEG_USED if @used), every checksum
    recomputed, so only the cross-checks can find what is wrong."""
    from test_remapctl_format import crc32c
    lay = layout(d)
    base = slot_block(d, 0, "header")
    entries, valid = entries or {}, valid or {}
    with open(img, "r+b") as f:
        f.seek((base + lay["map_offset"]) * BLOCK)
        mp = bytearray(f.read(BLOCK))
        for lba, e in entries.items():
            mp[lba * 4:lba * 4 + 4] = struct.pack("<I", e)
        f.seek((base + lay["map_offset"]) * BLOCK)
        f.write(mp)
        f.seek((base + lay["crc_offset"]) * BLOCK)
        crcs = bytearray(f.read(lay["crc_blocks"] * BLOCK))
        crcs[0:4] = struct.pack("<I", crc32c(bytes(mp)))
        f.seek((base + lay["crc_offset"]) * BLOCK)
        f.write(crcs)
        f.seek((base + lay["segtab_offset"]) * BLOCK)
        seg = bytearray(f.read(lay["segtab_blocks"] * BLOCK))
        for s, n in valid.items():
            e = s * SEGTAB_ENTRY
            seg[e + 8:e + 12] = struct.pack("<I", n)
            seg[e + 12:e + 16] = struct.pack("<I", int(used))  # DMR_SEG_USED
        f.seek((base + lay["segtab_offset"]) * BLOCK)
        f.write(seg)
        f.seek(base * BLOCK)
        h = bytearray(f.read(BLOCK))
        h[HDR_CRC_CSUM:HDR_CRC_CSUM + 4] = struct.pack("<I", crc32c(bytes(crcs)))
        h[HDR_SEGTAB_CSUM:HDR_SEGTAB_CSUM + 4] = struct.pack("<I", crc32c(bytes(seg)))
        h[HDR_MAPPED:HDR_MAPPED + 8] = struct.pack("<Q", len(entries))
        h[8:12] = struct.pack("<I", crc32c(bytes(h[12:])) ^ 0xC4EC9017)
        f.seek(base * BLOCK)
        f.write(h)


def damaged_newer_slot1(img, d):
    """Slot 1 with a valid header at seq 2 over tables never written."""
    from test_remapctl_format import ckpt_header
    hdr, blocknr = ckpt_header(d, 1, seq=2, flags=0, log_seq=0,
                               log_segment=0, log_offset=0)
    with open(img, "r+b") as f:
        f.seek(blocknr * BLOCK)
        f.write(hdr)


def slot_bytes(img, d, slot):
    from test_remapctl_format import read_blocks
    return read_blocks(img, slot_block(d, slot, "header"), int(d["ckpt_slot_blocks"]))


def repaired_lines(p):
    return [ln for ln in p.stdout.splitlines() if ln.startswith("repair")]


def test_repair_rewrites_the_damaged_newer_slot(fmt):
    """The newer slot's tables fail: --repair writes slot 1 afresh from
    slot 0, one seq above it, not clean, with the log sequence jumped a
    window above the newest header's; slot 0 is not touched; check is
    clean afterwards, dump shows the new slot, and a second --repair
    writes nothing."""
    img, d = fmt
    damaged_newer_slot1(img, d)
    slot0 = slot_bytes(img, d, 0)
    p = check("--repair", img)
    assert p.returncode == CORRECTED, p.stdout
    assert errors(p) == [
        "error: checkpoint slot 1 (seq 2, the newest): the map blocks' CRC table "
        "does not match its checksum"]
    assert repaired_lines(p) == [
        "repairing: a fresh checkpoint from slot 0 and the 0 units replayed after it",
        f"repaired: checkpoint slot 1 written (seq 2, log seq {SEQ_WINDOW}, not clean: "
        "the module recovers at the next load)"]
    assert "checked again after the repair: clean" in p.stdout
    assert "0 errors, 1 repaired" in p.stdout
    assert slot_bytes(img, d, 0) == slot0
    p = check(img)
    assert p.returncode == CLEAN, p.stdout
    assert "not shut down cleanly" in p.stdout
    after = dump(img)
    assert after["newest_ckpt"] == "1" and after["ckpt1_seq"] == "2"
    assert after["ckpt1_clean"] == "0" and after["ckpt1_log_seq"] == str(SEQ_WINDOW)
    for h in range(4):                          # the heads as slot 0 had them
        assert after[f"ckpt1_head{h}_segment"] == d[f"ckpt0_head{h}_segment"]
        assert after[f"ckpt1_head{h}_offset"] == d[f"ckpt0_head{h}_offset"]
    # repair again: nothing to do, nothing written
    before = slot_bytes(img, d, 0) + slot_bytes(img, d, 1)
    p = check("--repair", img)
    assert p.returncode == CLEAN and "0 repaired" in p.stdout
    assert slot_bytes(img, d, 0) + slot_bytes(img, d, 1) == before


def test_repair_of_the_loaded_slots_own_counts(fmt):
    """The slot loaded records a valid count its map does not have: the
    state is recounted from the map and, once the damaged slot is written,
    goes into the loaded slot too, one seq higher."""
    img, d = fmt
    rewrite_slot0(img, d, valid={0: 3})
    damaged_newer_slot1(img, d)
    p = check("--repair", img)
    assert p.returncode == CORRECTED, p.stdout
    assert errors(p)[0] == "error: checkpoint slot 0: segment 0 has valid count 3, its map 0"
    assert repaired_lines(p)[1:] == [
        f"repaired: checkpoint slot 1 written (seq 2, log seq {SEQ_WINDOW}, not clean: "
        "the module recovers at the next load)",
        f"repaired: checkpoint slot 0 written (seq 3, log seq {SEQ_WINDOW}, not clean: "
        "the module recovers at the next load)"]
    assert "0 errors, 2 repaired" in p.stdout
    assert check(img).returncode == CLEAN
    assert dump(img)["newest_ckpt"] == "0"


def test_repair_of_the_older_header_jumps_past_what_it_held(fmt):
    """Once both slots are valid, slot 0's header is corrupted: it may
    have held a newer checkpoint, so the rewrite counts its log sequence
    from slot 1's plus a window (dmr_ckpt_log_seq_bound()), then jumps a
    window more."""
    img, d = fmt
    damaged_newer_slot1(img, d)
    assert check("--repair", img).returncode == CORRECTED
    flip(img, slot_block(d, 0, "header") * BLOCK + 40)
    p = check("--repair", img)
    assert p.returncode == CORRECTED, p.stdout
    assert errors(p) == []                  # slot 1 loads: a note (test_torn_header_*)
    assert "note: checkpoint slot 0 header: torn or corrupted summary" in p.stdout
    after = dump(img)
    assert after["newest_ckpt"] == "0" and after["ckpt0_seq"] == "3"
    assert after["ckpt0_log_seq"] == str(3 * SEQ_WINDOW)
    assert check(img).returncode == CLEAN


def test_repair_refused_when_the_map_has_problems(fmt):
    """A damaged newer slot, but the older one maps a block into a free
    segment that holds no unit: a checkpoint written from that map would
    keep the problem, so --repair writes nothing and says why."""
    img, d = fmt
    seg_blocks = int(d["segment_blocks"])
    rewrite_slot0(img, d, entries={0: 10 * seg_blocks + 1 + 1}, valid={10: 1})
    damaged_newer_slot1(img, d)
    before = Path(img).read_bytes()
    p = check("--repair", img)
    assert p.returncode == ERRORS, p.stdout
    errs = errors(p)
    assert errs[0].startswith("error: checkpoint slot 1 (seq 2, the newest)"), errs
    assert any("where a unit holding mapped blocks should be" in e for e in errs), errs
    assert "not repaired: the checkpoint is not rewritten" in p.stdout
    assert "repaired: checkpoint" not in p.stdout
    assert Path(img).read_bytes() == before


def test_slot_mapping_into_a_free_segment(fmt):
    """A slot, checksums and counts right, whose map uses a segment it
    records as free: the module passes over it (the free segment would be
    written over the blocks mapped there), and so does check."""
    img, d = fmt
    seg_blocks = int(d["segment_blocks"])
    rewrite_slot0(img, d, entries={0: 10 * seg_blocks + 2}, valid={10: 1}, used=False)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == [
        "error: checkpoint slot 0: segment 10 holds 1 mapped blocks but is recorded free",
        "error: no checkpoint slot loads: the module refuses this device"]


# ---------------------------------------------------------------------------
# A checkpoint header torn by a crash: a header is one block written with
# FUA, and a power cut while it is written may leave part of the old
# header and part of the new one (the magic of both), which fails its
# checksum.  The module passes over it and loads the other slot, replays
# the log after it and writes its next checkpoint into the torn slot;
# check says so in a note and exits 0, as long as that load works.

TEAR = 40       # bytes of the new header that made it: magic to blocknr


def two_slots(img, d):
    """Both slots written: slot 0 at seq 1 (format's, clean), slot 1 at
    seq 2 (a checkpoint --repair writes from slot 0, not clean)."""
    damaged_newer_slot1(img, d)
    assert check("--repair", img).returncode == CORRECTED
    assert check(img).returncode == CLEAN
    after = dump(img)
    assert (after["ckpt0_seq"], after["ckpt1_seq"], after["newest_ckpt"]) == ("1", "2", "1")


def tear_header(img, d, slot, seq):
    """A header write into @slot at @seq cut by a crash: its first bytes
    are the new header's (seq, log seq), the rest the old one's."""
    from test_remapctl_format import ckpt_header
    hdr, blocknr = ckpt_header(d, slot, seq=seq, flags=0, log_seq=3 * SEQ_WINDOW,
                               log_segment=0, log_offset=0)
    with open(img, "r+b") as f:
        f.seek(blocknr * BLOCK)
        f.write(hdr[:TEAR])


def notes(p):
    return [ln for ln in p.stdout.splitlines() if ln.startswith("note: ")]


@pytest.mark.parametrize("how", ["torn checkpoint into slot 0", "newest header flipped"])
def test_torn_header_with_a_valid_older_slot_is_a_note(fmt, how):
    """The newest header fails its checksum (a checkpoint into slot 0 at
    seq 3 torn by a crash, or slot 1's header at seq 2 damaged) while the
    other slot's tables check out and its log replays: the module loads
    that slot, so check exits 0, and a note names the torn slot and the
    slot loaded; nothing is written."""
    img, d = fmt
    two_slots(img, d)
    if how == "torn checkpoint into slot 0":
        tear_header(img, d, 0, seq=3)
        torn, loaded = 0, 1
    else:
        flip(img, slot_block(d, 1, "header") * BLOCK + 20)
        torn, loaded = 1, 0
    assert dump(img)["newest_ckpt"] == str(loaded)
    before = Path(img).read_bytes()
    p = check(img)
    assert p.returncode == CLEAN, p.stdout
    assert errors(p) == []
    assert f"note: checkpoint slot {torn} header: torn or corrupted summary (what a " \
           f"crash while it is written leaves): the module loads slot {loaded}, replays " \
           f"the log after it and writes its next checkpoint into slot {torn}" in notes(p)
    assert "note: not shut down cleanly: the module recovers (replays the log) at load" \
        in notes(p)
    assert "0 errors, 0 repaired" in p.stdout
    assert Path(img).read_bytes() == before


def test_torn_header_repaired(fmt):
    """--repair rewrites the torn slot from the slot loaded and the log
    (exit 1, one repair, no error), and the device then checks clean with
    both headers valid and no note about a torn one."""
    img, d = fmt
    two_slots(img, d)
    tear_header(img, d, 0, seq=3)
    p = check("--repair", img)
    assert p.returncode == CORRECTED, p.stdout
    assert errors(p) == []
    assert repaired_lines(p) == [
        "repairing: a fresh checkpoint from slot 1 and the 0 units replayed after it",
        f"repaired: checkpoint slot 0 written (seq 3, log seq {3 * SEQ_WINDOW}, not clean: "
        "the module recovers at the next load)"]
    assert "checked again after the repair: clean" in p.stdout
    assert "0 errors, 1 repaired" in p.stdout
    p = check(img)
    assert p.returncode == CLEAN, p.stdout
    assert not any("header" in ln for ln in notes(p)), notes(p)
    after = dump(img)
    assert after["ckpt0"] == after["ckpt1"] == "ok" and after["newest_ckpt"] == "0"


def test_torn_header_when_the_other_slot_does_not_load(fmt):
    """The torn header's slot is passed over, and the other slot's map
    fails its checksum: the module refuses the device, so the torn header
    is an error too, and --repair has nothing to rewrite from."""
    img, d = fmt
    two_slots(img, d)
    tear_header(img, d, 0, seq=3)
    flip(img, slot_block(d, 1, "map") * BLOCK + 8)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == [
        "error: checkpoint slot 1 (seq 2, the newest): map block 0 does not match its "
        "checksum",
        "error: checkpoint slot 0 header: torn or corrupted summary",
        "error: no checkpoint slot loads: the module refuses this device"]
    before = Path(img).read_bytes()
    assert check("--repair", img).returncode == ERRORS
    assert Path(img).read_bytes() == before


def test_torn_header_when_the_other_slots_log_does_not_replay(fmt):
    """The other slot's tables check out, but its header sends a log head
    outside the device (checksum redone): the module refuses the load,
    so the torn header is an error."""
    from test_remapctl_format import crc32c
    img, d = fmt
    two_slots(img, d)
    tear_header(img, d, 0, seq=3)
    blk = slot_block(d, 1, "header")
    with open(img, "r+b") as f:
        f.seek(blk * BLOCK)
        h = bytearray(f.read(BLOCK))
        h[56:60] = struct.pack("<I", int(d["nr_segments"]) + 5)   # head 0's segment
        h[8:12] = struct.pack("<I", crc32c(bytes(h[12:])) ^ 0xC4EC9017)
        f.seek(blk * BLOCK)
        f.write(h)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == [
        "error: checkpoint slot 1: log head positions out of range",
        "error: checkpoint slot 0 header: torn or corrupted summary"]


def test_both_headers_torn(fmt):
    """Neither header decodes: no slot to load, both are errors."""
    img, d = fmt
    two_slots(img, d)
    tear_header(img, d, 0, seq=3)
    flip(img, slot_block(d, 1, "header") * BLOCK + 20)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == [
        "error: checkpoint slot 0 header: torn or corrupted summary",
        "error: checkpoint slot 1 header: torn or corrupted summary",
        "error: no valid checkpoint header: the module refuses this device"]


def test_misdirected_header_stays_an_error(fmt):
    """Slot 1's header copied over slot 0's: its checksum holds, but it
    records another block.  No crash writes that (a misdirected write), so
    it is an error though slot 1 loads; --repair rewrites slot 0."""
    img, d = fmt
    two_slots(img, d)
    with open(img, "r+b") as f:
        f.seek(slot_block(d, 1, "header") * BLOCK)
        h = f.read(BLOCK)
        f.seek(slot_block(d, 0, "header") * BLOCK)
        f.write(h)
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == ["error: checkpoint slot 0 header: misdirected block"]
    assert check("--repair", img).returncode == CORRECTED
    assert check(img).returncode == CLEAN


def test_lost_header_of_a_written_slot_stays_an_error(fmt):
    """Both slots written, slot 0's header zeroed while slot 1 loads: a
    torn write keeps the magic of the old and the new header, so a header
    without one was lost, not torn: an error (and --repair rewrites it)."""
    img, d = fmt
    two_slots(img, d)
    with open(img, "r+b") as f:
        f.seek(slot_block(d, 0, "header") * BLOCK)
        f.write(bytes(BLOCK))
    p = check(img)
    assert p.returncode == ERRORS, p.stdout
    assert errors(p) == ["error: checkpoint slot 0 header: lost (no header, but slot 1 "
                         "is at seq 2, so both were written)"]
    assert check("--repair", img).returncode == CORRECTED
    assert check(img).returncode == CLEAN


def test_check_memory_follows_what_is_mapped(tmp_path):
    """check builds the map as the module does, a page where a block is
    mapped: a fresh 2400 GiB image (its map above 2 GiB if held whole, as
    check's flat array of 4 bytes per logical block was) checks clean in
    a small fraction of that (measured: 1 TiB empty took 1001 MiB before,
    57 MiB after, and 7.9 s against 0.6 s)."""
    from test_remapctl_format import REMAPCTL, GiB, fake_meminfo
    img = sparse(tmp_path, 2400 * GiB)
    mi = fake_meminfo(tmp_path, 256 << 20, 32 << 30)   # 256 GiB machine
    assert rc("format", img, meminfo=mi).returncode == 0
    whole_map = int(dump(img)["logical_blocks"]) * 4
    assert whole_map > 2 << 30
    with open(tmp_path / "out", "w+") as out:
        proc = subprocess.Popen([REMAPCTL, "check", img], stdout=out,
                                stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        text = out.read()
    assert os.waitstatus_to_exitcode(status) == CLEAN, text
    assert "0 errors, 0 repaired" in text
    assert usage.ru_maxrss * 1024 < whole_map // 8, (usage.ru_maxrss, whole_map)
