# SPDX-License-Identifier: GPL-2.0-only
"""Documentation/dm-remap.rst's "remapctl" section and remapctl(8)
against the remapctl the tree builds (tools/remapctl, or the build
DMR_TEST_REMAPCTL names):

1. the synopsis block holds every command's usage as `remapctl CMD
   --help` prints it, and no option the tool's help does not name;
2. the `remapctl status` example has the lines remapctl status prints,
   in its order and form (a stand-in dmsetup gives the status line);
3. the remaptab OPTIONS both documents list are create's long options
   (the ones activate passes on to create), no more, no fewer;
4. remapctl(8)'s FILES names the paths of both installs, the package's
   (PREFIX=/usr) and make install's (PREFIX=/usr/local), and each exists
   in that install.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "Documentation" / "dm-remap.rst"
MAN = REPO / "man" / "remapctl.8.rst"
# DMR_TEST_REMAPCTL: another build to run these tests against (a test
# hook, to show a test fails on an older remapctl); unset: the tree's own
REMAPCTL = os.environ.get("DMR_TEST_REMAPCTL") or str(REPO / "tools" / "remapctl")


def squash(text):
    return " ".join(text.split())


def run(*args, env=None):
    return subprocess.run([REMAPCTL, *args], capture_output=True, text=True, env=env,
                          timeout=60)


def remapctl_section():
    text = DOC.read_text()
    return text.split("\nremapctl\n========\n", 1)[1].split("\n=====", 1)[0]


def doc_synopsis():
    """The literal block that opens the remapctl section."""
    body = remapctl_section().split("::\n\n", 1)[1]
    return "\n".join(ln for ln in body.split("\n\n", 1)[0].splitlines())


def usages():
    """{command: its usage, squashed}, from `remapctl --help`'s Usage."""
    top = run("--help").stdout
    out = {}
    for cmd in re.findall(r"^  ([a-z]+) ", top.split("\nCommands:\n", 1)[1], re.M):
        first = run(cmd, "--help").stdout.split("\n\n", 1)[0]
        assert first.startswith("Usage: "), first
        out[cmd] = squash(first[len("Usage: "):])
    assert len(out) >= 9, top
    return out


def test_synopsis_is_the_tools():
    syn = squash(doc_synopsis())
    for cmd, use in usages().items():
        assert use in syn, f"the synopsis lacks '{use}' (remapctl {cmd} --help)"
    helps = " ".join(run(cmd, "--help").stdout for cmd in usages())
    extra = set(re.findall(r"--[a-z-]+", syn)) - set(re.findall(r"--[a-z-]+", helps))
    assert extra <= {"--version"}, f"the synopsis names {sorted(extra)}, no help does"
    assert "remapctl --version" in syn and "remapctl help [COMMAND]" in syn


STATUS = ("0 1863472 remap write 5 232934 2048 1021 15 524288 1250000 1204 1190 212 0 "
          "9646080 2 3 0 background 12 24 4 3 4862 700000 4872 37 2.385 1.923 1187 0 0 0 0 "
          "0 0 0 228 812345 5120 0 96")


def normal(line):
    """A status line with its numbers (and their units) made one token."""
    return re.sub(r"-?\d+(\.\d+)?( (B|KiB|MiB|GiB|TiB|PiB))?", "N", line)


def test_status_example_is_what_remapctl_prints(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "dmsetup").write_text(f"#!/bin/sh\necho '{STATUS}'\n")
    (bindir / "dmsetup").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    p = run("status", "fast", env=env)
    assert p.returncode == 0, p.stderr
    block = remapctl_section().split("  # remapctl status fast\n", 1)[1].split("\n\n", 1)[0]
    doc = [ln[2:] for ln in block.splitlines()]
    assert [normal(ln) for ln in doc] == [normal(ln) for ln in p.stdout.splitlines()], \
        (doc, p.stdout)


def create_options():
    """create's long options, as its help names them (--help aside)."""
    return set(re.findall(r"--([a-z-]+)", run("create", "--help").stdout)) - {"help"}


def test_remaptab_options_are_creates():
    want = create_options()
    assert {"read-only", "gc-low", "map-cache"} <= want, want
    # the list: after "a value after =", to the end of that sentence
    para = re.split(r"after\s+``=``", remapctl_section(), maxsplit=1)[1].split(".  ", 1)[0]
    doc = set(re.findall(r"``([a-z-]+)(?:=[A-Z]+)?``", para))
    assert doc == want, f"dm-remap.rst's remaptab OPTIONS {sorted(doc)}, create {sorted(want)}"
    man = MAN.read_text().split("\nREMAPTAB\n========\n", 1)[1].split("\n=====", 1)[0]
    para = re.split(r"after\s+\*\*=\*\*", man, maxsplit=1)[1].split(".  ", 1)[0]
    got = set(re.findall(r"\*\*([a-z-]+)(?:=\*\*\\ \*[A-Z]+\*|\*\*)", para))
    assert got == want, f"remapctl(8)'s REMAPTAB OPTIONS {sorted(got)}, create {sorted(want)}"


@pytest.fixture(scope="module")
def installs(tmp_path_factory):
    """make install's tree, as the package (PREFIX=/usr, its DOCDIR) and
    by default (PREFIX=/usr/local), each under a directory of its own."""
    out = {}
    for prefix, extra in (("/usr", ["DOCDIR=/usr/share/doc/dm-remap-tools"]),
                          ("/usr/local", [])):
        root = tmp_path_factory.mktemp("root")
        for args in (["-C", str(REPO / "tools"), "install",
                      "SYSTEMDDIR=/lib/systemd/system", "UDEVDIR=/lib/udev/rules.d", *extra],
                     ["-C", str(REPO), "install-man", f"BUILD={root}.man"]):
            p = subprocess.run(["make", "-s", *args, f"DESTDIR={root}", f"PREFIX={prefix}"],
                               capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stderr
        out[prefix] = root
    return out


def test_files_names_both_installs(installs):
    files = MAN.read_text().split("\nFILES\n=====\n", 1)[1].split("\n=====", 1)[0]
    paths = [p for p in re.findall(r"\*(/[^*\s]+)\*", files)
             if p.startswith(("/usr/", "/lib/"))]
    local = [p for p in paths if p.startswith("/usr/local/")]
    package = [p for p in paths if p.startswith("/usr/") and p not in local]
    assert local and package, f"FILES names {paths}"
    for p in paths:
        root = installs["/usr/local" if p in local else "/usr"]
        # the package's dh_compress gzips its documentation
        found = root / p.lstrip("/")
        assert found.exists() or (p.endswith(".gz") and Path(str(found)[:-3]).exists()), \
            f"FILES names {p}, which that install does not put in place"
