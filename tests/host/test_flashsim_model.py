# SPDX-License-Identifier: GPL-2.0-only
"""The flashsim model (tests/flashsim/flashsim-model.c, built into
dm-flashsim.ko) in userspace: tests/flashsim/flashsim-model-test.c.

test_model_unit_tests builds and runs it: every test must pass.  The
mutation tests build it again over a copy of the model with one decision
broken, and require the unit test named for that decision to fail: each
assertion does catch the mistake it is there for.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "tests" / "flashsim"
CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
          "-std=gnu11", "-D_GNU_SOURCE", f"-I{REPO / 'tools' / 'include'}"]
TESTS = re.findall(r"^\t\tT\((test_\w+)\),$",
                   (SRC / "flashsim-model-test.c").read_text(), re.M)


def build_and_run(tmp_path, model_c):
    exe = tmp_path / "flashsim-model-test"
    cc = subprocess.run(["cc", *CFLAGS, f"-I{SRC}", "-o", str(exe),
                         str(SRC / "flashsim-model-test.c"), str(model_c)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    ok = set(re.findall(r"^ok - (\w+)$", p.stdout, re.M))
    failed = set(re.findall(r"^FAIL - (\w+):", p.stdout, re.M))
    return p, ok, failed


def test_model_unit_tests(tmp_path):
    p, ok, failed = build_and_run(tmp_path, SRC / "flashsim-model.c")
    print(p.stdout)
    assert len(TESTS) >= 13
    assert p.returncode == 0 and not failed, p.stdout
    assert ok == set(TESTS), p.stdout
    assert p.stdout.splitlines()[-1] == f"{len(TESTS)} passed, 0 failed"


# (what is broken, text in flashsim-model.c, its replacement, the unit
# test that must fail)
MUTATIONS = [
    ("random writes classed as fresh (no merge)",
     "\t\treturn FLASHSIM_W_FRESH;\n\treturn FLASHSIM_W_RMW;",
     "\t\treturn FLASHSIM_W_FRESH;\n\treturn FLASHSIM_W_FRESH;",
     "test_block_random_write_rmw"),
    ("a merge without its erase",
     "\t       m->p.erase_us * FLASHSIM_NS_PER_US + flashsim_xfer_ns(eb, m->p.prog_mibs);",
     "\t       flashsim_xfer_ns(eb, m->p.prog_mibs);",
     "test_block_random_write_rmw"),
    ("sequential writes charged a merge",
     "\tif (o && o->wp == off)\n\t\treturn FLASHSIM_W_SEQ;",
     "\tif (o && o->wp == off + 1)\n\t\treturn FLASHSIM_W_SEQ;",
     "test_block_stream_mid_block"),
    ("eviction of the most recently used open block",
     "if (!lru || o->stamp < lru->stamp)",
     "if (!lru || o->stamp > lru->stamp)",
     "test_block_open_lru"),
    ("a block written to its end keeps a slot",
     "\tif (off + nr >= m->erase_sectors) {",
     "\tif (off + nr >= m->erase_sectors + 1) {",
     "test_block_open_lru"),
    ("GC victim: the last used block, not the emptiest",
     "\t\tif (m->valid[b] < best_valid) {",
     "\t\tif (m->valid[b] < best_valid || best != FLASHSIM_NO_PAGE) {",
     "test_gc_victim_greedy"),
    ("GC copies not charged to the write",
     "\t\t\tns += flashsim_gc_one(m, &stuck);",
     "\t\t\tflashsim_gc_one(m, &stuck);",
     "test_page_waf_rises"),
    ("DISCARD frees nothing",
     "\tfor (; (lp + 1) * m->page_sectors <= end; lp++)\n\t\tflashsim_unmap(m, lp);",
     "\tfor (; (lp + 1) * m->page_sectors <= end; lp++)\n\t\tcontinue;",
     "test_page_discard_lowers_waf"),
    ("timeline ignores a busy drive",
     "u64 start = now > *busy_until ? now : *busy_until;",
     "u64 start = now;",
     "test_schedule"),
]


@pytest.mark.parametrize("what,old,new,must_fail", MUTATIONS,
                         ids=[m[0] for m in MUTATIONS])
def test_mutation_is_caught(tmp_path, what, old, new, must_fail):
    text = (SRC / "flashsim-model.c").read_text()
    assert text.count(old) == 1, f"mutation site for {what!r} not found once"
    assert must_fail in TESTS
    model = tmp_path / "flashsim-model.c"
    model.write_text(text.replace(old, new))
    shutil.copy(SRC / "flashsim-model.h", tmp_path / "flashsim-model.h")
    p, ok, failed = build_and_run(tmp_path, model)
    print(f"{what}: failed {sorted(failed)}")
    assert p.returncode == 1, p.stdout
    assert must_fail in failed, p.stdout
