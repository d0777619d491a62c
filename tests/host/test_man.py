# SPDX-License-Identifier: GPL-2.0-only
"""The man pages (man/*.rst): built, rendered, installed, and against the code.

1. `make man` builds remapctl(8), bm-flash(1) and dm-remap(4) with rst2man
   (which stops at any reST warning), and `man --warnings -l` renders each
   at MANWIDTH=80 with nothing on stderr and no line wider than 80
   columns.  The header carries the version of dkms.conf and a date; the
   sections are Debian's.
2. What the pages say against what the code and the admin guide say:
   - remapctl(8): every command `remapctl --help` lists has a subsection
     of COMMANDS, which shows the usage `remapctl CMD --help` prints and
     describes exactly the long options that help names (no fewer, no
     invented ones); SYNOPSIS shows every usage too.
   - bm-flash(1): OPTIONS describes exactly the long options of
     `bm-flash --help`, and SYNOPSIS names them all.
   - dm-remap(4): STATUS numbers exactly the status fields of
     Documentation/dm-remap.rst, in order; TABLE LINE describes exactly its
     optional arguments (with their ranges), MESSAGES its messages, and
     MODULE PARAMETERS its module parameters.  test_docs.py checks that
     document against the module's code, and its parsers are used here.
3. `make install-man DESTDIR=...` (which `make install` depends on) puts
   the pages under $(PREFIX)/share/man/man{1,4,8}, where `man -M` finds
   them.

The mutation tests at the end apply one edit to a copy of the pages (or
to the help text the tools print) and require the check concerned to
fail.  The tools must be built (make -C tools), as for the other host
tests.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_docs import (documented_messages, documented_module_params,
                       documented_options, documented_status_fields)

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"
PAGES = {"remapctl": "8", "bm-flash": "1", "dm-remap": "4"}
WIDTH = 80

# Sections each page must have (Debian's conventions, and dm-remap(4)'s own).
SECTIONS = {
    "remapctl": ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS",
                 "FILES", "EXAMPLES", "SEE ALSO"],
    "bm-flash": ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS",
                 "EXAMPLES", "SEE ALSO"],
    "dm-remap": ["NAME", "SYNOPSIS", "DESCRIPTION", "TABLE LINE", "STATUS",
                 "MESSAGES", "MODULE PARAMETERS", "FILES", "EXAMPLES", "SEE ALSO"],
}

LONG_OPT = re.compile(r"--[a-z][a-z0-9-]*")


def clean_env():
    """The environment without what an outer make or the user's man
    settings would pass on (MAKEFLAGS carries command-line variables)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "DESTDIR", "PREFIX",
                        "MANDIR", "BUILD", "MANOPT", "MANPATH", "MANROFFOPT",
                        "MAN_KEEP_FORMATTING", "MANSECT", "GROFF_SGR")}
    env.update(LC_ALL="C.UTF-8", MANWIDTH=str(WIDTH), MANPAGER="cat", PAGER="cat")
    return env


def make(*args):
    return subprocess.run(["make", "-s", *args], capture_output=True, text=True,
                          env=clean_env(), timeout=120)


def dkms_version(root=REPO):
    m = re.search(r'^PACKAGE_VERSION="([^"]+)"', (root / "dkms.conf").read_text(), re.M)
    assert m, "no PACKAGE_VERSION in dkms.conf"
    return m.group(1)


# ---------------------------------------------------------------- build, render

def build(root, out, only=None):
    """make -C ROOT/man BUILD=OUT [OUT/PAGE]: {page: path}."""
    pages = {name: Path(out) / f"{name}.{sec}" for name, sec in PAGES.items()
             if only in (None, name)}
    p = make("-C", str(root / "man"), f"BUILD={out}", *(map(str, pages.values()) if only else []))
    assert p.returncode == 0, f"make man failed:\n{p.stdout}{p.stderr}"
    assert not p.stderr.strip(), f"make man printed:\n{p.stderr}"
    for path in pages.values():
        assert path.is_file(), f"make man did not build {path.name}"
    return pages


def render(path):
    """The page as `man --warnings -l` shows it at MANWIDTH=80; fails on
    any warning or error, and on a line wider than the terminal."""
    p = subprocess.run(["man", "--warnings", "-l", str(path)], capture_output=True,
                       text=True, env=clean_env(), timeout=60)
    assert p.returncode == 0, f"man -l {path.name} exited {p.returncode}:\n{p.stderr}"
    assert not p.stderr, f"man --warnings -l {path.name}:\n{p.stderr}"
    text = re.sub(r"\x1b\[[0-9;]*m", "", re.sub(r".\x08", "", p.stdout))
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not wide, f"{path.name}: lines wider than {WIDTH} columns:\n" + "\n".join(wide)
    return text


def sections(text):
    """{SECTION: [lines]} of a rendered page (headings at column 0)."""
    out, cur = {}, None
    for line in text.splitlines():
        if re.fullmatch(r"[A-Z][A-Z ]*[A-Z]", line):
            cur = line
            assert cur not in out, f"section {cur} twice"
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def subsections(lines):
    """{title: [lines]} of a section's subsections (3-column indent)."""
    out, cur = {}, None
    for line in lines:
        m = re.fullmatch(r" {3}(\S.*)", line)
        if m:
            cur = m.group(1).strip()
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def unroff(s):
    """Text of roff words: font escapes dropped, \\- and "\\ " resolved."""
    s = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", s)
    return s.replace("\\-", "-").replace("\\ ", " ").replace("\\&", "").replace("\\e", "\\")


def roff_text(line):
    """A roff line as text: a font macro (.B, .BI, ...) with its arguments
    joined (with spaces for .B and .I, without for the alternating ones),
    another request as nothing, text as it is."""
    m = re.match(r"\.([BI]|[BIR][BIR])(?:\s+(.*))?$", line)
    if not m:
        return "" if line.startswith((".", "'")) else unroff(line)
    args = [a.strip('"') for a in re.findall(r'"[^"]*"|(?:\\.|[^\s\\])+', m.group(2) or "")]
    return unroff((" " if len(m.group(1)) == 1 else "").join(args))


def roff_sections(roff):
    """{SECTION: {"": [lines], subsection: [lines]}} of a page's roff
    source, as rst2man writes it (.SH, .SS)."""
    out, sh, ss = {}, None, ""
    for line in roff.splitlines():
        m = re.match(r'\.S([HS])\s+"?([^"]*?)"?\s*$', line)
        if m and m.group(1) == "H":
            sh, ss = m.group(2), ""
            out[sh] = {"": []}
        elif m:
            ss = m.group(2)
            out[sh][ss] = []
        elif sh:
            out[sh][ss].append(line)
    return out


def tags(lines):
    """The tagged paragraphs (.TP: option lists, definition lists) in roff
    @lines: [(tag, body)], the body as text up to the next tag."""
    out = []
    for i, line in enumerate(lines):
        if line == ".TP" and i + 1 < len(lines):
            out.append([roff_text(lines[i + 1]), []])
        elif out and lines[i - 1] != ".TP":
            out[-1][1].append(roff_text(line))
    return [(tag, squash(" ".join(body))) for tag, body in out]


def squash(text):
    return " ".join(text.split())


# ---------------------------------------------------------------- help output

def run_help(prog, *args):
    exe = TOOLS / prog
    assert exe.is_file(), f"{exe} is not built (make -C tools)"
    p = subprocess.run([str(exe), *args, "--help"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0 and p.stdout, (args, p.stderr)
    return p.stdout


def remapctl_commands(top):
    """Commands of `remapctl --help`: its "Commands:" list, and the help
    command its last lines name."""
    block = top.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    cmds = re.findall(r"^  (\S+)  ", block, re.M)
    assert cmds, top
    if re.search(r"remapctl help COMMAND", top):
        cmds.append("help")
    return cmds


def usage(text):
    """The usage of `remapctl CMD --help` (its first paragraph), without
    "Usage: ", whitespace squashed."""
    first = text.split("\n\n", 1)[0]
    assert first.startswith("Usage: "), text
    return squash(first[len("Usage: "):])


@pytest.fixture(scope="module")
def helps():
    top = run_help("remapctl")
    out = {"remapctl": {"": top}, "bm-flash": run_help("bm-flash")}
    for cmd in remapctl_commands(top):
        if cmd != "help":
            out["remapctl"][cmd] = run_help("remapctl", cmd)
    return out


# ---------------------------------------------------------------- content checks

def check_header(path, text, root=REPO):
    """The .TH line: title, section, a date, "dm-remap VERSION"."""
    th = re.search(r'^\.TH "([^"]+)" (\S+) "([^"]*)" "([^"]*)"', path.read_text(), re.M)
    assert th, f"{path.name}: no .TH line"
    name, sec = path.name.rsplit(".", 1)
    assert th.group(1) == name.upper() and th.group(2) == sec, th.group(0)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", th.group(3)), f"{path.name}: date {th.group(3)!r}"
    assert th.group(4) == f"dm-remap {dkms_version(root)}", f"{path.name}: version {th.group(4)!r}"
    assert text.splitlines()[0].startswith(f"{name.upper()}({sec})"), text.splitlines()[0]


def check_sections(name, text):
    have = list(sections(text))
    want = SECTIONS[name]
    missing = [s for s in want if s not in have]
    assert not missing, f"{name}: sections {missing} missing (has {have})"
    assert [s for s in have if s in want] == want, f"{name}: sections out of order: {have}"
    assert re.search(rf"^ +{re.escape(name)} - \S", text, re.M), f"{name}: NAME line"


def check_remapctl(text, roff, helps):
    sec, src = sections(text), roff_sections(roff)
    synopsis = squash("\n".join(sec["SYNOPSIS"]))
    subs = subsections(sec["COMMANDS"])
    cmds = remapctl_commands(helps["remapctl"][""])
    assert sorted(subs) == sorted(cmds), (f"COMMANDS has subsections {sorted(subs)}; "
                                         f"remapctl --help lists {sorted(cmds)}")
    assert "remapctl help [COMMAND]" in synopsis, synopsis
    assert "remapctl COMMAND --help" in synopsis, synopsis
    for cmd in cmds:
        if cmd == "help":
            continue
        h = helps["remapctl"][cmd]
        use = usage(h)
        assert use in synopsis, f"SYNOPSIS lacks '{use}' (remapctl {cmd} --help)"
        assert use in squash("\n".join(subs[cmd])), f"COMMANDS {cmd} lacks '{use}'"
        want = set(LONG_OPT.findall(h)) - {"--help"}
        described = {o for tag, _ in tags(src["COMMANDS"][cmd]) for o in LONG_OPT.findall(tag)}
        assert described == want, (f"COMMANDS {cmd} describes {sorted(described)}; "
                                   f"remapctl {cmd} --help names {sorted(want)}")


def check_bm_flash(text, roff, helps):
    h = helps["bm-flash"]
    want = set(LONG_OPT.findall(h))
    assert len(want) >= 10, h
    described = {o for tag, _ in tags(roff_sections(roff)["OPTIONS"][""])
                 for o in LONG_OPT.findall(tag)}
    assert described == want, (f"OPTIONS describes {sorted(described)}; "
                               f"bm-flash --help names {sorted(want)}")
    synopsis = set(LONG_OPT.findall("\n".join(sections(text)["SYNOPSIS"])))
    assert want <= synopsis, f"SYNOPSIS lacks {sorted(want - synopsis)}"


def term_names(tag):
    """Keywords of a tag "gc_low <segments>, gc_high <segments>" (not the
    placeholders of "<len>")."""
    return [m.group(1) for m in re.finditer(r"(?:^|, )([a-z][a-z_]*)\b", tag)]


def check_dm_remap(text, roff, helps, root=REPO):
    sec, src = sections(text), roff_sections(roff)
    items = re.findall(r"^ {7}(\d+)\. +(\w+):", "\n".join(sec["STATUS"]), re.M)
    fields = documented_status_fields(root)
    assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)), items
    assert [name for _, name in items] == fields, (
        f"STATUS numbers {[n for _, n in items]}; dm-remap.rst has {fields}")

    opts = documented_options(root)
    got = {}
    for tag, body in tags(src["TABLE LINE"][""]):
        names = term_names(tag)
        for name in names:
            got[name] = (len(re.findall(r"<[^>]+>", tag)) // len(names), body)
    assert set(got) == set(opts), (f"TABLE LINE describes {sorted(got)}; "
                                   f"dm-remap.rst has {sorted(opts)}")
    for name, (nvalues, rng) in opts.items():
        assert got[name][0] == nvalues, f"{name}: {got[name][0]} values, doc {nvalues}"
        if rng:
            assert f"{rng[0]} to {rng[1]}" in got[name][1], f"{name}: range {rng} not given"

    msgs = {n for tag, _ in tags(src["MESSAGES"][""]) for n in term_names(tag)}
    assert msgs == set(documented_messages(root)), (
        f"MESSAGES describes {sorted(msgs)}; dm-remap.rst has {sorted(documented_messages(root))}")

    params = squash("\n".join(sec["MODULE PARAMETERS"]))
    for name, default in documented_module_params(root).items():
        assert re.search(rf"\b{name} \(default {re.escape(default)}\)", params), (
            f"MODULE PARAMETERS lacks {name} (default {default})")


CONTENT = {"remapctl": check_remapctl, "bm-flash": check_bm_flash, "dm-remap": check_dm_remap}


# ---------------------------------------------------------------- tests

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`make man` (the top-level target) into a directory of the test's."""
    out = tmp_path_factory.mktemp("man") / "build"
    p = make("-C", str(REPO), "man", f"BUILD={out}")
    assert p.returncode == 0 and not p.stderr.strip(), f"make man:\n{p.stdout}{p.stderr}"
    return {name: out / f"{name}.{sec}" for name, sec in PAGES.items()}


@pytest.mark.parametrize("page", PAGES)
def test_page_builds_and_renders_cleanly(page, built):
    text = render(built[page])
    check_header(built[page], text)
    check_sections(page, text)


@pytest.mark.parametrize("page", PAGES)
def test_page_matches_code(page, built, helps):
    CONTENT[page](render(built[page]), built[page].read_text(), helps)


def test_extraction_finds_what_it_should(built, helps):
    """Guards the parsers against finding too little."""
    assert len(remapctl_commands(helps["remapctl"][""])) >= 9
    assert "--gc-high" in helps["remapctl"]["create"]
    src = roff_sections(built["remapctl"].read_text())
    # create's nine (the retired --zero-copy, accepted, is in none of them)
    assert len(tags(src["COMMANDS"]["create"])) == 9, tags(src["COMMANDS"]["create"])
    assert tags(src["COMMANDS"]["format"])[0][0] == "-s SIZE, --segment-size SIZE"
    assert tags(src["COMMANDS"]["dump"]) == [
        ("--json", "Print the same keys as one JSON object, numbers as numbers.")]
    table = dict(tags(roff_sections(built["dm-remap"].read_text())["TABLE LINE"][""]))
    assert "gc_low <segments>, gc_high <segments>" in table, list(table)
    assert len(documented_status_fields(REPO)) >= 32
    assert "checkpoint_interval" in documented_options(REPO)


@pytest.mark.parametrize("prefix", [None, "/usr"])
def test_install_man(prefix, tmp_path):
    """make install-man DESTDIR=... [PREFIX=...] puts the pages where
    man -M finds them."""
    dest = tmp_path / "root"
    args = ["-C", str(REPO), "install-man", f"DESTDIR={dest}", f"BUILD={tmp_path / 'build'}"]
    if prefix:
        args.append(f"PREFIX={prefix}")
    p = make(*args)
    assert p.returncode == 0, p.stdout + p.stderr
    mandir = dest / (prefix or "/usr/local").lstrip("/") / "share" / "man"
    installed = sorted(str(f.relative_to(dest)) for f in dest.rglob("*") if f.is_file())
    assert installed == sorted(str((mandir / f"man{sec}" / f"{name}.{sec}").relative_to(dest))
                               for name, sec in PAGES.items()), installed
    for name, sec in PAGES.items():
        f = mandir / f"man{sec}" / f"{name}.{sec}"
        assert oct(f.stat().st_mode & 0o777) == "0o644", f
        w = subprocess.run(["man", "-M", str(mandir), "-w", sec, name], capture_output=True,
                           text=True, env=clean_env(), timeout=60)
        assert w.returncode == 0 and w.stdout.strip() == str(f), (w.stdout, w.stderr)
        shown = subprocess.run(["man", "-M", str(mandir), sec, name], capture_output=True,
                               text=True, env=clean_env(), timeout=60)
        assert shown.returncode == 0 and f"{name} - " in shown.stdout, shown.stderr


def test_install_depends_on_install_man():
    """make install (module, tools) installs the man pages too."""
    p = subprocess.run(["make", "-pq", "-C", str(REPO), ".DEFAULT"], capture_output=True,
                       text=True, env=clean_env(), timeout=60)
    rule = re.search(r"^install:(.*)$", p.stdout, re.M)
    assert rule, "no install rule in the top-level Makefile"
    assert "install-man" in rule.group(1).split(), rule.group(0)


# ---------------------------------------------------------------- mutations

def _sub(page, old, new, count=1):
    def edit(root, helps):
        p = root / "man" / f"{page}.{PAGES[page]}.rst"
        t = p.read_text()
        assert t.count(old) >= 1, f"mutation no longer applies: {old!r} in {p.name}"
        p.write_text(t.replace(old, new, count))
        return helps
    return edit


def _help(prog, cmd, old, new):
    def edit(root, helps):
        h = {k: (dict(v) if isinstance(v, dict) else v) for k, v in helps.items()}
        text = h[prog][cmd] if cmd is not None else h[prog]
        assert old in text, f"mutation no longer applies: {old!r} in {prog} {cmd} --help"
        text = text.replace(old, new, 1)
        if cmd is not None:
            h[prog][cmd] = text
        else:
            h[prog] = text
        return h
    return edit


def _drop_item(page, start, end):
    """Delete from the line @start up to (not including) the line @end."""
    def edit(root, helps):
        p = root / "man" / f"{page}.{PAGES[page]}.rst"
        t = p.read_text()
        i = t.index(start)
        j = t.index(end, i + len(start))
        p.write_text(t[:i] + t[j:])
        return helps
    return edit


MUTATIONS = {
    # name: (stage, page, edit): the check that must fail is the build
    # (rst2man), the rendering (man --warnings, the width) or the page's
    # content check
    "rst: a reST error": ("build", "remapctl", _sub(
        "remapctl", "Write a fresh superblock", "Write a `fresh`_ superblock")),
    "rst: a reST warning": ("build", "bm-flash", _sub(
        "bm-flash", "Default: **1,10,40**.", "Default: **1,10,40.")),
    "roff: an undefined macro": ("render", "bm-flash", _sub(
        "bm-flash", "   .nh\n", "   .nh\n   .xx\n")),
    "roff: a literal line too wide": ("render", "dm-remap", _sub(
        "dm-remap", "  0 1863472 remap /dev/md0 5 checkpoint_interval 10 gc_low 12 gc_high 24",
        "  0 1863472 remap /dev/md0 7 checkpoint_interval 10 gc_low 12 gc_high 24 ignore_discard no_discard_passdown")),
    # remapctl(8)
    "remapctl: an option of create dropped": ("content", "remapctl", _drop_item(
        "remapctl", "--gc-high N\n", "--map-cache MIB\n    **map_cache** *MIB*")),
    "remapctl: an option invented": ("content", "remapctl", _sub(
        "remapctl", "--json\n    Print the same keys",
        "--verbose\n    Say more.\n\n--json\n    Print the same keys")),
    "remapctl: a synopsis drifts": ("content", "remapctl", _sub(
        "remapctl",
        "| **remapctl deactivate** [**--remaptab** *FILE*] [**--device** *DEV*] [**--dry-run**]\n",
        "| **remapctl deactivate** [**--remaptab** *FILE*] [**--device** *DEV*]\n")),
    "remapctl: a command undocumented": ("content", "remapctl", _sub(
        "remapctl", "remove\n------\n", "delete\n------\n")),
    "help: remapctl dump grows an option": ("content", "remapctl", _help(
        "remapctl", "dump", "[--json] DEV", "[--json] [--verbose] DEV")),
    "help: remapctl grows a command": ("content", "remapctl", _help(
        "remapctl", "", "\n  remove ", "\n  resize      grow a device\n  remove ")),
    # bm-flash(1)
    "bm-flash: an option dropped": ("content", "bm-flash", _drop_item(
        "bm-flash", "--max-bytes N\n", "--read-only\n")),
    "help: bm-flash grows an option": ("content", "bm-flash", _help(
        "bm-flash", None, "  --help ", "  --direct-off     no O_DIRECT\n  --help ")),
    # dm-remap(4)
    "dm-remap: a status field renamed": ("content", "dm-remap", _sub(
        "dm-remap", "31. **gc_read_errors**", "31. **gc_read_error**")),
    "dm-remap: the last status field dropped": ("content", "dm-remap", _drop_item(
        "dm-remap", "39. **read_splits**", "\nMESSAGES\n")),
    "dm-remap: a table argument dropped": ("content", "dm-remap", _sub(
        "dm-remap", "**no_discard_passdown**\n    Do not", "**no_discard**\n    Do not")),
    "dm-remap: a range changed": ("content", "dm-remap", _sub(
        "dm-remap", "periodic checkpoints of the map, 1 to 86400",
        "periodic checkpoints of the map, 1 to 3600")),
    "dm-remap: a message dropped": ("content", "dm-remap", _drop_item(
        "dm-remap", "**gc_collect**\n", "**gc_low** *<segments>*, **gc_high** *<segments>*\n    Change")),
}


@pytest.fixture(scope="module")
def man_copy(tmp_path_factory):
    base = tmp_path_factory.mktemp("tree")
    (base / "man").mkdir()
    for f in list((REPO / "man").glob("*.rst")) + [REPO / "man" / "Makefile"]:
        shutil.copy(f, base / "man" / f.name)
    shutil.copy(REPO / "dkms.conf", base / "dkms.conf")
    return base


@pytest.mark.parametrize("name", MUTATIONS)
def test_mutation_is_caught(name, man_copy, helps, tmp_path):
    stage, page, mutate = MUTATIONS[name]
    root = tmp_path / "t"
    shutil.copytree(man_copy, root)
    h = mutate(root, helps)
    out = tmp_path / "build"
    if stage == "build":
        with pytest.raises(AssertionError):
            build(root, out, page)
        return
    path = build(root, out, page)[page]
    if stage == "render":
        with pytest.raises(AssertionError):
            render(path)
        return
    text = render(path)
    with pytest.raises(AssertionError):
        CONTENT[page](text, path.read_text(), h)
