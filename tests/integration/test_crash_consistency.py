# SPDX-License-Identifier: GPL-2.0-only
"""Crash consistency: record dm-remap's write stream with dm-log-writes
while ext4 runs a create/rename/fsync workload, then replay the stream up
to flush points onto a scratch device and check that dm-remap recovers a
clean filesystem holding every file fsynced before that point."""
import hashlib
import os
import random
import subprocess

from conftest import (DM_PREFIX, MNT, REPO, Ram, dm_create, dm_path,
                      dm_remove, remapctl, run, cleanup_dm)

REPLAY = str(REPO / "tools" / "replay-log")
SIZE = 64 << 20                 # bytes of each device used
SECTORS = SIZE // 512
MAX_POINTS = 10                 # flush points checked (spread over the log)


def zero(dev):
    run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", f"count={SIZE >> 20}",
         "oflag=direct", "status=none"])


def mark(name):
    run(["dmsetup", "message", DM_PREFIX + "lw", "0", "mark", name])


def workload(rnd):
    """Files fsynced (with their directory), renamed, fsynced again.

    Returns the marks in order: (mark name, {path: sha256}) = the files
    that must exist with that content at any flush point after the mark.
    """
    state, marks = {}, []
    os.makedirs(f"{MNT}/d", exist_ok=True)
    dfd = os.open(f"{MNT}/d", os.O_RDONLY)
    try:
        for i in range(24):
            data = os.urandom(rnd.randrange(1, 64) * 1024)
            path = f"d/f{i}"
            with open(f"{MNT}/{path}", "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.fsync(dfd)
            state[path] = hashlib.sha256(data).hexdigest()
            mark(f"m{len(marks)}")
            marks.append(dict(state))
            if i % 4 == 3:
                new = f"d/g{i}"
                os.rename(f"{MNT}/{path}", f"{MNT}/{new}")
                os.fsync(dfd)
                state[new] = state.pop(path)
                mark(f"m{len(marks)}")
                marks.append(dict(state))
    finally:
        os.close(dfd)
    return marks


def check_files(expected):
    for path, digest in expected.items():
        with open(f"{MNT}/{path}", "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest, path


def test_replay_every_flush_point_recovers(ram, ram2):
    log_dev = Ram.get()
    scratch = Ram.get()
    try:
        for dev in (ram, log_dev, scratch):
            zero(dev)
        zero(ram2)
        dm_create("lw", f"0 {SECTORS} log-writes {ram} {log_dev}")
        lw = dm_path("lw")
        remapctl("format", "--force", lw)
        n = int(remapctl("dump", lw).stdout.split("logical_sectors=")[1].split()[0])
        dm_create("top", f"0 {n} remap {lw}")
        run(["mkfs.ext4", "-q", "-F", dm_path("top")])
        mark("mkfs-done")
        os.makedirs(MNT, exist_ok=True)
        run(["mount", dm_path("top"), MNT])
        try:
            marks = workload(random.Random(42))
        finally:
            run(["umount", MNT])
        dm_remove("top")
        dm_remove("lw")

        lines = run([REPLAY, "--log", log_dev, "--list"]).stdout.splitlines()
        entries = [ln.split(" ", 4) for ln in lines]
        mark_at = {e[4]: int(e[0]) for e in entries if "MARK" in e[1]}
        start = mark_at["mkfs-done"]
        flushes = [int(e[0]) for e in entries
                   if "FLUSH" in e[1] and int(e[0]) > start]
        assert len(flushes) >= len(marks), "expected a flush per fsync"
        step = max(1, len(flushes) // MAX_POINTS)
        points = flushes[::step][:MAX_POINTS] + [len(entries)]

        # scratch A accumulates the replay; each point is checked on a copy
        done = 0
        for end in points:
            run([REPLAY, "--log", log_dev, "--replay", scratch,
                 "--start", str(done), "--end", str(end)])
            done = end
            run(["dd", f"if={scratch}", f"of={ram2}", "bs=1M",
                 f"count={SIZE >> 20}", "status=none"])
            p = dm_create("chk", f"0 {n} remap {ram2}", check=False)
            assert p.returncode == 0, f"load failed at entry {end}: {p.stderr}"
            chk = dm_path("chk")
            # let ext4 replay its journal, then check and read back
            run(["mount", chk, MNT])
            run(["umount", MNT])
            fsck = run(["e2fsck", "-fn", chk], check=False)
            assert fsck.returncode == 0, f"entry {end}:\n{fsck.stdout}"
            expected = {}
            for i, m in enumerate(marks):
                if mark_at[f"m{i}"] < end:
                    expected = m
            run(["mount", "-o", "ro", chk, MNT])
            try:
                check_files(expected)
            finally:
                run(["umount", MNT])
            dm_remove("chk")
        assert expected == marks[-1]    # the last point saw every file
    finally:
        subprocess.run(["umount", MNT], capture_output=True)
        cleanup_dm()
        Ram.used -= 2
