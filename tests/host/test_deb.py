# SPDX-License-Identifier: GPL-2.0-only
"""The Debian packages `make deb` builds (debian/, scripts/deb.sh).

One build per session (scripts/deb.sh into a temporary directory, about
30 s with lintian), then, on the .deb files, without installing anything
on this machine:

- dm-remap-tools holds exactly the files `make install` puts in place with
  PREFIX=/usr (tools in /usr/sbin and /usr/bin, man pages, the systemd units
  and the udev rule with /usr/sbin substituted, the completion, the fio
  jobs, the admin guide) and Debian's copyright and changelog; nothing under
  /usr/local, no placeholder left; its remapctl runs;
- dm-remap-dkms holds dkms.conf and the module source DKMS needs (Kbuild,
  dm-remap/Kbuild, Kconfig and every tracked dm-remap/*.[ch]) under
  /usr/src/dm-remap-VERSION, depends on dkms, and `dkms build` of that tree
  (a private dkms tree, as check.sh's dkms stage) gives dm-remap.ko for
  Debian's 6.12 kernel;
- both carry dkms.conf's version; the tools package does not depend on
  dkms, and its scripts neither enable nor start dm-remap.service;
- lintian: no error or warning, the overridden tags exactly those of
  debian/*.lintian-overrides, each with a comment saying why.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSION = re.search(r'^PACKAGE_VERSION="(.*)"', (REPO / "dkms.conf").read_text(), re.M).group(1)
SRC = f"usr/src/dm-remap-{VERSION}"
CACHE = Path(os.environ.get("DMR_CACHE", Path.home() / ".cache" / "dm-remap"))


def run(*args, **kw):
    kw.setdefault("timeout", 300)
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


def tracked(pattern):
    out = run("git", "ls-files", pattern, cwd=REPO).stdout.split()
    assert out, pattern
    return out


@pytest.fixture(scope="session")
def debs(tmp_path_factory):
    """The packages of scripts/deb.sh: built here, or, in make check, the
    ones its debpkg stage built from this tree a few minutes before
    (DMR_DEB_PKGS, set only when that stage passed: the build took 43 s
    of the side lane a second time)."""
    built = os.environ.get("DMR_DEB_PKGS")
    if built:
        out = Path(built)
    else:
        out = tmp_path_factory.mktemp("deb")
        p = run("bash", str(REPO / "scripts" / "deb.sh"), str(out), timeout=600)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
        assert p.stdout.rstrip().endswith(f"deb: packages in {out}"), p.stdout[-500:]
    found = {f.name.split("_")[0]: f for f in out.glob("*.deb")}
    assert set(found) >= {"dm-remap-tools", "dm-remap-dkms"}, sorted(found)
    return out, found


def contents(deb):
    """{path without './': mode string} for every file (not directory)."""
    files = {}
    for line in run("dpkg-deb", "-c", str(deb)).stdout.splitlines():
        mode, path = line.split()[0], line.split()[5]
        if not mode.startswith("d"):
            files[path.removeprefix("./")] = mode
    return files


def field(deb, name):
    return run("dpkg-deb", "-f", str(deb), name).stdout.strip()


@pytest.fixture(scope="session")
def tools_root(debs, tmp_path_factory):
    root = tmp_path_factory.mktemp("tools-root")
    assert run("dpkg-deb", "-x", str(debs[1]["dm-remap-tools"]), str(root)).returncode == 0
    return root


def test_tools_files(debs):
    files = contents(debs[1]["dm-remap-tools"])
    man = {"remapctl": 8, "bm-flash": 1, "dm-remap": 4}
    doc = "usr/share/doc/dm-remap-tools"
    want = {
        "usr/sbin/remapctl", "usr/sbin/bm-flash", "usr/sbin/dm-remap-compare",
        "usr/bin/remap-sim",
        "lib/systemd/system/dm-remap.service", "lib/systemd/system/dm-remap-activate@.service",
        "lib/udev/rules.d/69-dm-remap.rules",
        "usr/share/bash-completion/completions/remapctl",
        f"{doc}/dm-remap.rst.gz", f"{doc}/copyright", f"{doc}/changelog.gz",
        "usr/share/lintian/overrides/dm-remap-tools",
    }
    want |= {f"usr/share/man/man{s}/{n}.{s}.gz" for n, s in man.items()}
    want |= {f"usr/share/dm-remap/fio/{Path(f).name}" for f in tracked("tests/fio/*.fio")}
    assert set(files) == want, (sorted(set(files) - want), sorted(want - set(files)))
    for f, mode in files.items():
        exe = "/sbin/" in f or "/bin/" in f
        assert mode == ("-rwxr-xr-x" if exe else "-rw-r--r--"), (f, mode)
    assert not any(f.startswith("usr/local") for f in files)


def test_tools_paths_substituted(tools_root):
    unit = (tools_root / "lib/systemd/system/dm-remap.service").read_text()
    per_dev = (tools_root / "lib/systemd/system/dm-remap-activate@.service").read_text()
    rules = (tools_root / "lib/udev/rules.d/69-dm-remap.rules").read_text()
    assert "ExecStart=/usr/sbin/remapctl activate\n" in unit
    assert "ExecStop=/usr/sbin/remapctl deactivate\n" in unit
    # man pages: the doc dir's dm-remap.rst is gzipped (dh_compress), so a
    # file:// of it would name nothing
    assert "Documentation=man:remapctl(8) man:dm-remap(4)\n" in unit
    assert "file://" not in unit
    assert "ExecStart=/usr/sbin/remapctl activate --device /dev/block/%i" in per_dev
    assert 'IMPORT{program}="/usr/sbin/remapctl probe $devnode"' in rules
    for text in (unit, per_dev, rules):
        assert "@" not in text.replace("dm-remap-activate@", ""), text
        assert "/usr/local" not in text
    comp = (tools_root / "usr/share/bash-completion/completions/remapctl").read_text()
    assert comp == (REPO / "tools/completion/remapctl.bash").read_text()
    p = run(str(tools_root / "usr/sbin/remapctl"), "--help")
    assert p.returncode == 0 and "format" in p.stdout, p.stdout + p.stderr


def test_tools_control(debs):
    deb = debs[1]["dm-remap-tools"]
    assert field(deb, "Version") == VERSION
    assert field(deb, "Architecture") == run("dpkg", "--print-architecture").stdout.strip()
    deps = field(deb, "Depends")
    assert "dmsetup" in deps and "libblkid1" in deps and "python3" in deps, deps
    assert "dkms" not in deps, deps
    scripts = run("sh", "-c", f"dpkg-deb --ctrl-tarfile {deb} | "
                  "tar -xO --wildcards './post*' './pre*'").stdout
    assert "deb-systemd-helper" in scripts
    assert "dkms" not in scripts
    # dm-remap.service left as `make install` leaves it: not enabled, not
    # started (starting or stopping it creates or removes devices)
    assert "deb-systemd-invoke" not in scripts and "systemctl start" not in scripts
    # (the one enable re-creates the links of a unit the administrator enabled)
    assert scripts.count("deb-systemd-helper enable") == len(re.findall(
        r"was-enabled 'dm-remap.service'; then\n(?:\s*#.*\n)*\s*deb-systemd-helper enable",
        scripts)) == 1, scripts


def test_dkms_files(debs):
    deb = debs[1]["dm-remap-dkms"]
    files = contents(deb)
    want = {f"{SRC}/dkms.conf", f"{SRC}/Kbuild", f"{SRC}/dm-remap/Kbuild", f"{SRC}/dm-remap/Kconfig",
            "usr/share/doc/dm-remap-dkms/copyright", "usr/share/doc/dm-remap-dkms/changelog.gz"}
    want |= {f"{SRC}/{f}" for f in tracked("dm-remap/*.[ch]")}
    assert set(files) == want, (sorted(set(files) - want), sorted(want - set(files)))
    assert field(deb, "Version") == VERSION
    assert field(deb, "Architecture") == "all"
    assert re.search(r"(^|, )dkms\b", field(deb, "Depends")), field(deb, "Depends")
    postinst = run("sh", "-c", f"dpkg-deb --ctrl-tarfile {deb} | tar -xO ./postinst").stdout
    assert "common.postinst" in postinst and "DKMS_VERSION=" + VERSION in postinst


def test_dkms_builds_the_packaged_source(debs, tmp_path):
    """dkms build of /usr/src/dm-remap-VERSION as the package has it, for
    Debian's 6.12 kernel (the VM's), in a private dkms tree."""
    env = CACHE / "kernels.env"
    if not env.exists():
        pytest.skip("no kernels.env: run make test-deps")
    krel = re.search(r"^KREL612=(.*)$", env.read_text(), re.M).group(1).strip("'\"")
    root = tmp_path / "root"
    assert run("dpkg-deb", "-x", str(debs[1]["dm-remap-dkms"]), str(root)).returncode == 0
    (tmp_path / "tree").mkdir()
    p = run("dkms", "build", f"dm-remap/{VERSION}", "--sourcetree", str(root / "usr/src"),
            "--dkmstree", str(tmp_path / "tree"), "-k", krel)
    assert p.returncode == 0, p.stdout + p.stderr
    assert list((tmp_path / "tree/dm-remap" / VERSION / krel).glob("*/module/dm-remap.ko*")), p.stdout


def override_tags():
    """(package, tag and context) of every override, each after a comment."""
    tags = []
    for f in sorted((REPO / "debian").glob("*.lintian-overrides")):
        comment = False
        for line in f.read_text().splitlines():
            if line.startswith("#"):
                comment = True
            elif line.strip():
                assert comment, f"{f.name}: override without a comment: {line}"
                pkg, tag = line.split(":", 1)
                tags.append((pkg.strip(), tag.strip()))
                comment = False
    return sorted(tags)


def test_uncommitted_changes_are_named(tmp_path):
    """A build from a tree with uncommitted changes to tracked files says
    which (the version says nothing of them); a clean tree, nothing.  The
    clone's changelog is made to disagree with dkms.conf so that deb.sh
    stops before building."""
    clone = tmp_path / "clone"
    assert run("git", "clone", "-q", str(REPO), str(clone)).returncode == 0
    script = clone / "scripts" / "deb.sh"
    script.write_text((REPO / "scripts" / "deb.sh").read_text())   # this tree's
    ch = clone / "debian" / "changelog"
    ch.write_text(ch.read_text().replace(f"({VERSION})", "(0.0.0)", 1))
    run("git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t",
        "commit", "-qam", "deb.sh under test")
    env = dict(os.environ, DMR_CACHE=str(tmp_path / "cache"))
    p = run("bash", str(script), str(tmp_path / "out"), env=env)
    assert p.returncode == 1 and "debian/changelog has version 0.0.0" in p.stderr, p.stderr
    assert "warning" not in p.stderr, p.stderr
    (clone / "README.md").write_text("changed\n")
    (clone / "untracked-file").write_text("not in the package\n")
    p = run("bash", str(script), str(tmp_path / "out"), env=env)
    assert p.returncode == 1 and "uncommitted changes" in p.stderr, p.stderr
    named = [ln.split()[-1] for ln in p.stderr.splitlines() if ln.startswith("deb:   ")]
    assert named == ["README.md"], p.stderr


def test_lintian(debs):
    out = debs[0]
    text = (out / "lintian.txt").read_text()
    bad = [line for line in text.splitlines() if re.match(r"[EW]: ", line)]
    assert not bad, bad
    shown = sorted(tuple(x.strip() for x in line[3:].split(":", 1))
                   for line in text.splitlines() if line.startswith("O: "))
    assert shown == override_tags()
    # lintian's own verdict, again, on the .changes
    changes = next(out.glob("*.changes"))
    p = run("lintian", "--fail-on", "error,warning", str(changes))
    assert p.returncode == 0, p.stdout + p.stderr
