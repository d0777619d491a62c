# SPDX-License-Identifier: GPL-2.0-only
"""What in a kernel log is a problem: shared by the integration tests'
autouse fixture (conftest.py) and tests/vm/run-vm.sh, which runs it on
the guest's whole log:

    python3 tests/integration/kernel_log.py FILE...   (exit 1: problems)

A problem is a BUG, WARNING, oops, KASAN/UBSAN or lockdep report, a
hung task, or lock debugging switched off (a run that lost lockdep
checked nothing).  The stack dumps the kernel prints for an allocation
that failed (what test_construction_out_of_memory injects) are not: they
are the kernel's own warnings of running out of memory, and every one of
them is skipped up to the end of its dump.
"""
import re
import sys

PROBLEMS = re.compile(
    r"BUG:|WARNING:|Oops|Call Trace|general protection fault|KASAN|UBSAN|"
    r"blocked for more than|hung_task|Disabling lock debugging|"
    r"lockdep is turned off|INFO: possible")

# an allocation failed: the kernel warns and dumps the stack
ALLOC_FAILED = re.compile(
    r"__kmem_cache_create_args\(.*\) failed with error -12|"
    r": page allocation failure: order:|vmalloc error: size ")
DUMP_END = re.compile(r"</TASK>|---\[ end trace")
DUMP_MAX_LINES = 80


def problems(lines):
    """The lines that report a problem, skipping allocation-failure dumps."""
    bad, skip = [], 0
    for line in lines:
        if skip:
            skip -= 1
            if DUMP_END.search(line):
                skip = 0
            continue
        if ALLOC_FAILED.search(line):
            skip = DUMP_MAX_LINES
            continue
        if PROBLEMS.search(line):
            bad.append(line)
    return bad


def main(paths):
    found = False
    for path in paths:
        with open(path, errors="replace") as f:
            for line in problems(f.read().splitlines()):
                print(f"{path}: {line}")
                found = True
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
