# SPDX-License-Identifier: GPL-2.0-only
"""tests/vm/guest-mapcache.py on the host: the pure parts of its gc phase
(the order of the gc_prefetch windows and the summary's side-by-side
ratios).  Importing the script runs nothing: its main is guarded."""
from pathlib import Path

import pytest
from scriptload import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "vm" / "guest-mapcache.py"


@pytest.fixture(scope="module")
def mc():
    return load_script(SCRIPT, "guest_mapcache")


def win(iops, moved=100, misses=50):
    return {"iops": iops, "lat_us": 1e6 / iops, "gc_moved": moved, "map_misses": misses,
            "user_blocks": iops * 10, "segments_freed": 1,
            "misses_per_moved": misses / moved, "gc_state": "idle"}


def test_gc_order_each_side_first_and_last(mc):
    o = mc.gc_order(2)
    assert o == [True, False, False, True] * 2
    assert o.count(True) == o.count(False) == 4


def test_gc_summary_pairs_windows_side_by_side(mc):
    wins = list(zip(mc.gc_order(2), [win(x) for x in (180, 120, 150, 165, 200, 160, 100, 110)]))
    text = "\n".join(mc.gc_summary(wins))
    # pairs (Y N) (N Y) (Y N) (N Y): 180/120, 165/150, 200/160, 110/100:
    # 1.50, 1.10, 1.25, 1.10, median (1.10 + 1.25) / 2
    assert "median 1.18x, worst 1.10x, best 1.50x (4 pairs)" in text, text
    y = next(line for line in text.splitlines() if line.startswith("Y "))
    n = next(line for line in text.splitlines() if line.startswith("N "))
    assert y.split()[1] == "172" and n.split()[1] == "135", (y, n)   # medians
    assert y.split()[-1] == "4" and n.split()[-1] == "4"
