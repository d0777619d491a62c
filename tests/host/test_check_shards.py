# SPDX-License-Identifier: GPL-2.0-only
"""make check's VM pool (scripts/check.sh) runs the vm stage in two
guests, by test file: shard 1 the files VM_SHARD1 names, shard 2 every
other.  A name there that no file has (a file renamed or removed) would
silently move its tests' time to shard 2 and unbalance the pool; the
shards together must be the whole suite, each file once."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "check.sh"


def shard1_names():
    m = re.search(r'^VM_SHARD1="([^"]*)"', CHECK.read_text(), re.M)
    assert m, "VM_SHARD1 not found in scripts/check.sh"
    return m.group(1).split()


def shard(n):
    """check.sh's own vm_shard(), run on its own definitions."""
    text = CHECK.read_text()
    start = text.index('VM_SHARD1="')
    end = text.index("\n}\n", text.index("vm_shard() {")) + 3
    script = text[start:end] + f"\nvm_shard {n}\n"
    p = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True,
                       text=True, check=True)
    return p.stdout.split()


def test_shard1_names_existing_files():
    for name in shard1_names():
        assert (REPO / "tests" / "integration" / name).is_file(), name


def test_shards_cover_the_suite_once():
    suite = sorted(str(p.relative_to(REPO)) for p in
                   (REPO / "tests" / "integration").glob("test_*.py"))
    one, two = shard(1), shard(2)
    assert one and two
    assert not set(one) & set(two)
    assert sorted(one + two) == suite
    assert sorted(Path(f).name for f in one) == sorted(shard1_names())
