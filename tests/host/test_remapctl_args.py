# SPDX-License-Identifier: GPL-2.0-only
"""remapctl on the host, on image files: argument handling and refusals.

Block-device behaviour (in use, RAID stripes, dmsetup) is covered by the
VM suite in tests/integration.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

# DMR_TEST_REMAPCTL: another build to run these tests against (a test
# hook, to show a test fails on an older remapctl); unset: the tree's own
REMAPCTL = os.environ.get("DMR_TEST_REMAPCTL") or \
    str(Path(__file__).resolve().parents[2] / "tools" / "remapctl")


def rc(*args):
    return subprocess.run([REMAPCTL, *args], capture_output=True, text=True)


@pytest.fixture
def img(tmp_path):
    p = tmp_path / "dev.img"
    with open(p, "wb") as f:
        f.truncate(64 << 20)
    return str(p)


def kv(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["format"],
    ["format", "a", "b"],
    ["format", "--segment-size", "1000", "x"],
    ["format", "--segment-size", "0", "x"],
    ["format", "--segment-size", "lots", "x"],
    ["format", "--overprovision", "2", "x"],
    ["format", "--overprovision", "61", "x"],
    ["format", "--overprovision", "1O", "x"],
    ["format", "--label", "x" * 33, "x"],
    ["format", "--bogus", "x"],
    ["dump"],
    ["create", "onlyname"],
    ["create", "n", "d", "--checkpoint-interval", "x"],
    ["create", "n", "d", "--checkpoint-interval", "0"],         # the target's range
    ["create", "n", "d", "--checkpoint-interval", "86401"],
    ["create", "n", "d", "--gc-low", "0"],
    ["create", "n", "d", "--gc-high", "2147483648"],
    ["create", "n", "d", "--gc-high"],
    ["create", "n", "d", "--map-cache", "0"],
    ["create", "n", "d", "--map-cache", "1048577"],
    ["create", "n", "d", "--map-cache", "1G"],
    ["remove"],
    ["grow"],
    ["grow", "a", "b"],
])
def test_usage_errors_exit_2(args):
    p = rc(*args)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert p.stderr.startswith("remapctl: ")
    assert p.stdout == ""


def test_missing_device_exit_1():
    p = rc("format", "/nonexistent/dev")
    assert p.returncode == 1 and "No such file" in p.stderr


def test_format_and_dump_roundtrip(img):
    p = rc("format", "--label", "hello", img)
    assert p.returncode == 0, p.stderr
    d = kv(rc("dump", img).stdout)
    assert d["superblock_copy0"] == "ok" and d["superblock_copy1"] == "ok"
    assert d["label"] == "hello" and d["version"] == "6"
    assert d["segment_blocks"] == "256"      # no stripe hint: 1 MiB
    assert d["overprovision"] == "10"
    assert f"logical size: {d['logical_sectors']} sectors" in p.stdout
    assert f"table: 0 {d['logical_sectors']} remap {img}" in p.stdout


def test_refuses_ext4_image_unless_forced(img):
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    p = rc("format", img)
    assert p.returncode == 1 and "ext4" in p.stderr
    assert rc("dump", img).returncode == 1
    assert rc("format", "--force", img).returncode == 0
    assert rc("dump", img).returncode == 0


def test_refuses_reformat_unless_forced(img):
    assert rc("format", img).returncode == 0
    uuid = kv(rc("dump", img).stdout)["uuid"]
    p = rc("format", img)
    assert p.returncode == 1 and "dm-remap" in p.stderr
    assert kv(rc("dump", img).stdout)["uuid"] == uuid


def test_too_small(tmp_path):
    p = tmp_path / "small.img"
    with open(p, "wb") as f:
        f.truncate(4 << 20)
    r = rc("format", str(p))
    assert r.returncode == 1 and "too small" in r.stderr


def test_dump_reports_damaged_copy(img):
    assert rc("format", img).returncode == 0
    with open(img, "r+b") as f:
        f.seek(300)
        b = f.read(1)
        f.seek(300)
        f.write(bytes([b[0] ^ 0xFF]))
    d = kv(rc("dump", img).stdout)
    assert d["superblock_copy0"] == "superblock checksum mismatch"
    assert d["superblock_copy1"] == "ok" and d["using_copy"] == "1"


def test_dump_unformatted(img):
    p = rc("dump", img)
    assert p.returncode == 1 and "no valid dm-remap superblock" in p.stderr


def test_create_table_options(img, tmp_path):
    """create's table line, with every option in the order given: a
    stand-in dmsetup on PATH records its arguments (the host has no
    device-mapper; tests/integration creates real devices)."""
    import os
    assert rc("format", img).returncode == 0
    sectors = kv(rc("dump", img).stdout)["logical_sectors"]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "dmsetup.args"
    fake = bindir / "dmsetup"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")

    def create(*opts):
        p = subprocess.run([REMAPCTL, "create", "fast", img, *opts], capture_output=True,
                           text=True, env=env)
        assert p.returncode == 0, p.stderr
        return log.read_text().splitlines()

    assert create() == ["create", "fast", "--table", f"0 {sectors} remap {img}"]
    args = create("--zero-copy", "--gc-low", "6", "--no-discard-passdown",
                  "--gc-high", "12", "--checkpoint-interval", "9", "--read-only",
                  "--ignore-discard")
    assert args[3] == (f"0 {sectors} remap {img} 10 zero_copy gc_low 6 "
                       "no_discard_passdown gc_high 12 checkpoint_interval 9 read_only "
                       "ignore_discard")
    args = create("--map-cache", "64", "--read-only")
    assert args[3] == f"0 {sectors} remap {img} 3 map_cache 64 read_only"
    args = create("--no-stripe-fill", "--gc-low", "6")
    assert args[3] == f"0 {sectors} remap {img} 3 no_stripe_fill gc_low 6"


# ---------------------------------------------------------------------------
# --help and -h for every command, options before or after the arguments.
# A stand-in dmsetup on PATH logs every call (the host has no
# device-mapper), and the devices named do not exist, so a command that
# went past its options would call dmsetup or fail to open them.

COMMANDS = ["format", "dump", "check", "status", "activate", "deactivate", "probe",
            "create", "grow", "remove"]


def fake_dmsetup(tmp_path):
    import os
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "dmsetup.log"
    fake = bindir / "dmsetup"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexit 1\n')
    fake.chmod(0o755)
    return log, dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def command_args(cmd, tmp_path):
    """Arguments that make @cmd do its work: a device that does not exist,
    a target name, a remaptab with one line."""
    missing = str(tmp_path / "missing.img")
    tab = tmp_path / "remaptab"
    tab.write_text(f"fast {missing}\n")
    return {"format": [missing], "dump": [missing], "check": [missing],
            "status": ["fast"], "activate": ["--remaptab", str(tab)],
            "deactivate": ["--remaptab", str(tab)], "probe": [missing],
            "create": ["fast", missing], "grow": ["fast"],
            "remove": ["fast"]}[cmd]


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("opt", ["--help", "-h"])
@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_answers_help(tmp_path, cmd, opt, where):
    """CMD --help / -h, before or after the command's arguments: its own
    synopsis on stdout, exit 0, and nothing done: no dmsetup call, and the
    device named (which does not exist) never opened."""
    log, env = fake_dmsetup(tmp_path)
    args = command_args(cmd, tmp_path)
    argv = [cmd, opt, *args] if where == "first" else [cmd, *args, opt]
    p = subprocess.run([REMAPCTL, *argv], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, (argv, p.stdout, p.stderr)
    assert p.stdout.startswith(f"Usage: remapctl {cmd} "), p.stdout
    assert p.stderr == ""
    assert not log.exists(), log.read_text()


@pytest.mark.parametrize("cmd", COMMANDS)
def test_the_same_commands_without_help_do_their_work(tmp_path, cmd):
    """The arguments of the test above are not inert: without --help each
    command fails on the missing device or calls dmsetup (which fails)."""
    log, env = fake_dmsetup(tmp_path)
    p = subprocess.run([REMAPCTL, cmd, *command_args(cmd, tmp_path)], capture_output=True,
                       text=True, env=env, timeout=60)
    assert "Usage:" not in p.stdout
    if cmd == "probe":      # udev's: silent, exit 1, on what holds no superblock
        assert p.returncode == 1 and not p.stdout and not p.stderr, p
        return
    assert log.exists() or "No such file" in p.stderr, (cmd, p.stdout, p.stderr)


def test_help_synopsis_matches_the_list(tmp_path):
    """remapctl --help, -h and help list every command with the synopsis
    that COMMAND --help prints; help COMMAND is COMMAND --help."""
    top = rc("--help")
    assert top.returncode == 0 and top.stderr == ""
    assert rc("-h").stdout == top.stdout == rc("help").stdout
    for cmd in COMMANDS:
        own = rc(cmd, "--help").stdout
        synopsis = own.split("\n\n")[0][len("Usage: "):]
        first, *rest = synopsis.splitlines()
        assert f"\n  {first}\n" in top.stdout, cmd
        for line in rest:                           # continuation lines
            assert line.strip() in top.stdout, cmd
        assert re.search(rf"^  {cmd} +\w", top.stdout, re.M), cmd
        assert rc("help", cmd).stdout == own
    assert rc("help", "frobnicate").returncode == 2


def test_create_h_is_help_and_gc_high_has_no_short_option(img, tmp_path):
    """-h used to be --gc-high's short option: now it is help, even with a
    number after it, and --gc-low / --gc-high stay long options."""
    import os
    assert rc("format", img).returncode == 0
    sectors = kv(rc("dump", img).stdout)["logical_sectors"]
    log, env = fake_dmsetup(tmp_path)
    p = subprocess.run([REMAPCTL, "create", "-h", "12", "fast", img], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("Usage: remapctl create ")
    assert not log.exists()
    p = subprocess.run([REMAPCTL, "create", "--gc-low", "6", "--gc-high=12", "fast", img],
                       capture_output=True, text=True, env=env, timeout=60)
    assert log.read_text().splitlines() == [
        f"create fast --table 0 {sectors} remap {img} 4 gc_low 6 gc_high 12"]
    assert p.returncode == 1                        # the stand-in dmsetup failed
    os.unlink(log)


def test_options_after_the_arguments(img, tmp_path):
    """dump, check, status, create and format take their options after
    their arguments as well as before, with the same result."""
    import json
    import os
    p = rc("format", img, "--label", "late", "--overprovision", "20")
    assert p.returncode == 0, p.stderr
    d = kv(rc("dump", img).stdout)
    assert d["label"] == "late" and d["overprovision"] == "20"
    before, after = rc("dump", "--json", img), rc("dump", img, "--json")
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout and json.loads(after.stdout)["label"] == "late"
    # check DEV --repair: copy 1 of the superblock damaged, and mended
    with open(img, "r+b") as f:
        f.seek(4096 + 200)
        b = f.read(1)
        f.seek(4096 + 200)
        f.write(bytes([b[0] ^ 0xFF]))
    p = rc("check", img, "--repair")
    assert p.returncode == 1 and "repaired: superblock copy 1" in p.stdout, p.stdout
    assert rc("check", img).returncode == 0
    # create NAME --opt DEV --opt: the options in the table in the order given
    sectors = d["logical_sectors"]
    log, env = fake_dmsetup(tmp_path)
    subprocess.run([REMAPCTL, "create", "--zero-copy", "fast", "--gc-low", "6", img,
                    "--read-only"], capture_output=True, text=True, env=env, timeout=60)
    assert log.read_text().splitlines() == [
        f"create fast --table 0 {sectors} remap {img} 4 zero_copy gc_low 6 read_only"]
    os.unlink(log)
    # status NAME --json and --json NAME: the stand-in prints a status line
    from test_remapctl_check import STATUS
    (tmp_path / "bin" / "dmsetup").write_text(f"#!/bin/sh\necho '{STATUS}'\n")
    outs = [subprocess.run([REMAPCTL, "status", *a], capture_output=True, text=True,
                           env=env, timeout=60) for a in (["fast", "--json"],
                                                          ["--json", "fast"])]
    assert [o.returncode for o in outs] == [0, 0], [o.stderr for o in outs]
    assert outs[0].stdout == outs[1].stdout
    assert json.loads(outs[0].stdout)["name"] == "fast"


def test_remove_retries_a_device_udev_is_probing(tmp_path):
    """remove NAME is dmsetup remove --retry: right after a create or a
    write, udev's blkid holds the new device open for a moment and a plain
    remove fails with EBUSY (CI saw it in test_compare); --retry tries
    again for a few seconds, and a device really in use is still refused.
    The stand-in dmsetup fails, and remove says so by its exit status."""
    log, env = fake_dmsetup(tmp_path)
    p = subprocess.run([REMAPCTL, "remove", "fast"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert log.read_text().splitlines() == ["remove --retry fast"]
    assert p.returncode == 1


def test_double_dash_ends_the_options(img):
    """After "--" a word starting with '-' is an argument, not an option."""
    p = rc("dump", "--", "--json")
    assert p.returncode == 1 and "--json: No such file" in p.stderr, p.stderr


@pytest.mark.parametrize("args,message", [
    (["dump", "--bogus", "x"], "dump: unrecognised or ambiguous option '--bogus'"),
    (["dump", "x", "--json=yes"], "dump: option '--json' takes no value"),
    (["check", "x", "-q"], "check: unrecognised option '-q'"),
    (["status", "x", "--bogus"], "status: unrecognised or ambiguous option '--bogus'"),
    (["activate", "--remaptab"], "activate: option '--remaptab' needs a value"),
    (["deactivate", "-x"], "deactivate: unrecognised option '-x'"),
    (["create", "n", "d", "--gc-high"], "create: option '--gc-high' needs a value"),
    (["create", "n", "d", "-c"], "create: option '-c' needs a value"),
    (["create", "n", "d", "--gc", "5"], "create: unrecognised or ambiguous option '--gc'"),
    (["remove", "n", "--force"], "remove: unrecognised or ambiguous option '--force'"),
    (["format", "x", "--bogus"], "format: unrecognised or ambiguous option '--bogus'"),
    (["dump", "a", "b"], "dump needs exactly one device"),
    (["check"], "check needs exactly one device"),
    (["status", "a", "b"], "status takes at most one NAME"),
    (["remove", "a", "b"], "remove needs exactly one NAME"),
    (["activate", "extra"], "activate takes no arguments besides its options"),
])
def test_bad_options_are_named(tmp_path, args, message):
    """An unknown option, a missing or unwanted value, a wrong number of
    arguments: exit 2, the problem named on stderr, nothing run."""
    log, env = fake_dmsetup(tmp_path)
    p = subprocess.run([REMAPCTL, *args], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert p.stderr.startswith(f"remapctl: {message}\n"), p.stderr
    assert p.stdout == "" and not log.exists()


def activate_one_line_refused(img, tmp_path, opts, message):
    """activate over a remaptab of one line, "fast IMG OPTS": refused with
    message, and nothing run but the check that fast is not active."""
    import os
    assert rc("format", img).returncode == 0
    tab = tmp_path / "remaptab"
    tab.write_text(f"fast {img} {opts}\n")
    log, env = fake_dmsetup(tmp_path)
    p = subprocess.run([REMAPCTL, "activate", "--remaptab", str(tab)], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"remaptab:1: fast: {message}\n" in p.stderr, p.stderr
    assert "activate: 0 done, 1 failed" in p.stdout
    assert log.read_text().splitlines() == ["info -c --noheadings -o name fast"]
    os.unlink(log)


@pytest.mark.parametrize("opt", ["help", "he"])
def test_activate_refuses_help_as_a_remaptab_option(img, tmp_path, opt):
    """A remaptab option "help" (or a prefix getopt would take for it) would
    make create print its usage and exit 0, so the line would count as
    active: activate refuses the line instead."""
    activate_one_line_refused(img, tmp_path, f"read-only,{opt}",
                              f"'{opt}' is not an option of create")


@pytest.mark.parametrize("opts, message", [
    (",".join(["read-only"] * 40), "too many options (more words than create has "
     "options and values)"),
    ("read-only,=8", "an option without a name ('=8')"),
    ("=", "an option without a name ('=')"),
])
def test_activate_refuses_lines_it_cannot_pass_on_whole(img, tmp_path, opts, message):
    """A remaptab line whose options activate cannot hand to create as
    written (more than it passes on, which it used to drop silently, or
    one without a name, which create would take for the end of its
    options) is refused with the reason, and nothing is created."""
    activate_one_line_refused(img, tmp_path, opts, message)


def test_version_names_the_package_and_the_format():
    """remapctl --version: dkms.conf's PACKAGE_VERSION and the on-disk
    format version it writes (dump's version= of a fresh format)."""
    root = Path(__file__).resolve().parents[2]
    pkg = re.search(r'^PACKAGE_VERSION="(.*)"', (root / "dkms.conf").read_text(), re.M)[1]
    fmt = re.search(r"#define DMR_FORMAT_VERSION\s+(\d+)",
                    (root / "dm-remap" / "dmr-format.h").read_text())[1]
    for opt in ("--version", "-V"):
        p = rc(opt)
        assert p.returncode == 0, p.stderr
        assert p.stdout == f"remapctl (dm-remap) {pkg}, on-disk format version {fmt}\n"


def test_segment_size_message_names_the_suffixes(img):
    p = rc("format", "--segment-size", "1MB", img)
    assert p.returncode == 2 and "K, M or G suffix" in p.stderr, p.stderr


def test_zero_copy_is_retired_but_accepted(img, tmp_path):
    """--zero-copy is in no help (nor, so, in the completion, which reads
    the help) but create still takes it, -z too, for old remaptab lines and
    scripts: the table gets zero_copy, which the module ignores."""
    assert "zero-copy" not in rc("--help").stdout
    assert "zero-copy" not in rc("create", "--help").stdout
    assert rc("format", img).returncode == 0
    log, env = fake_dmsetup(tmp_path)
    for opt in ("--zero-copy", "-z"):
        subprocess.run([REMAPCTL, "create", opt, "fast", img], capture_output=True,
                       text=True, env=env, timeout=60)
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and all(c.endswith(" 1 zero_copy") for c in calls), calls
