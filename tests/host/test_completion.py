# SPDX-License-Identifier: GPL-2.0-only
"""Bash completion for remapctl (tools/completion/remapctl.bash).

The script reads commands, options and which options take a value from
remapctl's own --help, so these tests take the expected sets from the
same help and check what bash offers at each position: commands, a
command's long options, nothing after an option that takes a number,
file names for DEV and --remaptab, the active dm-remap devices (a
stand-in dmsetup) for the NAME of status and remove and nothing for the
new NAME of create.  `make -C tools install DESTDIR=...` installs it
where bash-completion looks.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"
SCRIPT = TOOLS / "completion" / "remapctl.bash"


def complete(words, tmp_path, script=SCRIPT, names=("fast", "slow")):
    """COMPREPLY for the command line words (the last one being completed),
    in bash, with remapctl on PATH and a dmsetup that lists names."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / "dmsetup"
    listing = "".join(f"{n}\\t(253:{i})\\n" for i, n in enumerate(names)) or \
        "No devices found\\n"
    fake.write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "ls --target remap" ] && printf "{listing}"\n')
    fake.chmod(0o755)
    arr = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f". {script}\nCOMP_WORDS=({arr})\nCOMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
            "_remapctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    env = dict(os.environ, PATH=f"{bindir}:{TOOLS}:{os.environ['PATH']}")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 0 and not p.stderr, p.stderr
    return sorted(x for x in p.stdout.split("\n") if x)


def help_of(*args):
    p = subprocess.run([str(TOOLS / "remapctl"), *args, "--help"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def commands():
    text = help_of().split("Commands:", 1)[1]
    return re.findall(r"^  ([a-z]+) ", text, re.M)


def long_options(cmd):
    usage = help_of(cmd).split("\n\n", 1)[0]
    return sorted(set(re.findall(r"--[a-z-]+", usage)))


@pytest.fixture(autouse=True)
def built():
    assert (TOOLS / "remapctl").is_file(), "make -C tools first"


def test_commands(tmp_path):
    cmds = commands()
    assert {"format", "status", "create", "remove"} <= set(cmds)
    assert complete(["remapctl", ""], tmp_path) == sorted(cmds + ["help", "--help"])
    assert complete(["remapctl", "st"], tmp_path) == ["status"]
    assert complete(["remapctl", "help", "c"], tmp_path) == \
        sorted(c for c in cmds if c.startswith("c"))


@pytest.mark.parametrize("cmd", ["format", "dump", "check", "status", "activate", "create"])
def test_each_commands_options(tmp_path, cmd):
    opts = long_options(cmd)
    assert opts, cmd
    assert complete(["remapctl", cmd, "--"], tmp_path) == sorted(opts + ["--help"])


def test_values_and_positions(tmp_path):
    (tmp_path / "disk.img").write_bytes(b"")
    (tmp_path / "remaptab").write_text("")
    # an option's value: a number or a size has nothing to offer, a file does
    assert complete(["remapctl", "create", "n", "d", "--gc-low", ""], tmp_path) == []
    assert complete(["remapctl", "format", "--segment-size", ""], tmp_path) == []
    assert complete(["remapctl", "activate", "--remaptab", "rem"], tmp_path) == ["remaptab"]
    # DEV: file names, also after an option and its value
    assert complete(["remapctl", "format", "di"], tmp_path) == ["disk.img"]
    assert complete(["remapctl", "format", "--segment-size", "4M", "di"], tmp_path) == \
        ["disk.img"]
    assert complete(["remapctl", "create", "fast", "di"], tmp_path) == ["disk.img"]
    # NAME: the active devices for status and remove, nothing for a new one
    assert complete(["remapctl", "status", ""], tmp_path) == ["fast", "slow"]
    assert complete(["remapctl", "remove", "s"], tmp_path) == ["slow"]
    assert complete(["remapctl", "grow", ""], tmp_path) == ["fast", "slow"]
    assert complete(["remapctl", "status", "--json", "f"], tmp_path) == ["fast"]
    assert complete(["remapctl", "create", ""], tmp_path) == []
    assert complete(["remapctl", "status", ""], tmp_path, names=()) == []
    # past the last positional argument: nothing
    assert complete(["remapctl", "remove", "fast", ""], tmp_path) == []


def test_installed_where_bash_completion_looks(tmp_path):
    dest = tmp_path / "root"
    p = subprocess.run(["make", "-s", "-C", str(TOOLS), "install", f"DESTDIR={dest}",
                        "PREFIX=/usr"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    got = dest / "usr/share/bash-completion/completions/remapctl"
    assert got.read_text() == SCRIPT.read_text()
    assert oct(got.stat().st_mode & 0o777) == "0o644"


def test_mutation_value_taking_option_is_caught(tmp_path):
    """The check of the value rule fails if the script lost it."""
    bad = tmp_path / "bad.bash"
    text = SCRIPT.read_text()
    assert 'takes+="${words[n]} "' in text
    bad.write_text(text.replace('takes+="${words[n]} "', ":"))
    (tmp_path / "disk.img").write_bytes(b"")
    words = ["remapctl", "format", "--segment-size", "4M", "di"]
    assert complete(words, tmp_path) == ["disk.img"]
    assert complete(words, tmp_path, script=bad) == []
