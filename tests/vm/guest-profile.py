#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/profile.sh`, guest side: where the CPU goes, per 4 KiB block,
on dm-remap and on dm-linear (perf, in the VM).

Two identical md RAID-5 arrays over four ramdisks each (64 KiB chunk): A
carries dm-linear, B is formatted and remapped.  Both are filled
sequentially over the tested region (the remapped capacity) so that reads
find data; B is then, by default, preconditioned like `make bench` (twice
its capacity of random 4 KiB writes, so its garbage collector is at work:
steady state), and its GC is let go idle before every measurement.  Then,
for each workload and each device, fio runs (DMR_PROFILE_SECONDS + 3 s)
under

    perf record -a -g -e cpu-clock -F FREQ -k CLOCK_MONOTONIC -- fio ...

and the samples of a window of DMR_PROFILE_SECONDS in the middle of fio's
run (from 1 s after the device's first I/O: fio's start and exit are left
out) are reported with `perf report --stdio --no-children -g none -n
--show-total-period --time START,END` (sorted by command, shared object and
symbol).  The blocks are those the device moved in that window (its
/sys/block stat; fio's own count, over its whole run, is beside as a check).
Every cpu-clock sample stands for its period of CPU time (1e9 / FREQ ns):

    busy ns per block     = period of the non-idle samples / 4 KiB blocks
    own-code ns per block = period of the samples in the target's module
                            ([dm_remap], or [dm_mod] for dm-linear) / blocks
    checksum ns per block = period of the samples in kernel crc32c code / blocks

Idle samples are those in the idle loop's halt/poll functions (IDLE_SYMBOLS;
the profile lists what the idle task's samples were, to check the set).
Results: $DMR_OUT/profile.txt, $DMR_OUT/profile.json, and the perf reports
in $DMR_OUT/raw/.

Environment (defaults in brackets):
  DMR_PROFILE_SECONDS [10]        seconds profiled per measurement (fio runs 3 s more)
  DMR_PROFILE_JOBS [10]           fio jobs (psync, one I/O each in flight)
  DMR_PROFILE_WORKLOADS [randwrite,randread]  comma list
  DMR_PROFILE_PRECONDITION [2]    random 4 KiB writes on dm-remap before
                                  measuring, in capacities (0: fresh device,
                                  sequential fill only)
  DMR_PROFILE_FREQ [999]          perf sampling frequency, Hz
  DMR_PROFILE_RAMDISK_MIB [128]   size of each member (2 x DMR_PROFILE_MEMBERS)
  DMR_PROFILE_DEVICES [linear,remap]  comma list
  DMR_PROFILE_BS [4k]             fio's block size in the profiled runs (the
                                  figures stay per 4 KiB block)
  DMR_PROFILE_FORMAT ['']         more `remapctl format` arguments, e.g.
                                  '--segment-size 768K' so that 768 KiB
                                  writes fill whole segments
  DMR_PROFILE_MEDIA ['']          the arrays' members are null_blk devices
                                  with the bench's media model instead of
                                  ramdisks: 'default', or items as in
                                  DMR_BENCH_MEDIA (guest-bench.py), each
                                  member DMR_PROFILE_RAMDISK_MIB
  DMR_PROFILE_MEMBERS [4]         members of each md RAID-5 (64K chunk)
  DMR_PROFILE_MODPARAMS ['']      module parameters for dm-remap's insmod,
                                  e.g. 'flight_serial=Y'
  DMR_PROFILE_STRIPE_CACHE [0]    md's stripe_cache_size of both arrays
                                  (stripe heads of 4 KiB a member; 0: md's
                                  default, 256)

The parsing and the arithmetic (parse_report, metrics, render) are pure
functions, tested on the host by tests/host/test_profile_parse.py.
"""
import bisect
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MiB = 1 << 20
BLOCK = 4096

# The idle loop: where a CPU with nothing to run sits (halt or poll), and the
# idle loop's own frames.  Samples in these symbols are idle time; anything
# else, interrupts and softirqs taken while idle included, is busy.
IDLE_SYMBOLS = frozenset({
    "pv_native_safe_halt", "native_safe_halt", "safe_halt", "halt",
    "default_idle", "default_idle_call", "arch_cpu_idle", "amd_e400_idle",
    "acpi_safe_halt", "acpi_idle_do_entry", "acpi_idle_enter",
    "acpi_idle_enter_s2idle", "acpi_processor_ffh_cstate_enter",
    "cpuidle_enter_state", "cpuidle_enter", "cpuidle_idle_call",
    "cpu_idle_poll", "poll_idle", "do_idle", "cpu_startup_entry",
    "intel_idle", "intel_idle_irq", "intel_idle_ibrs", "mwait_idle",
    "mwait_idle_with_hints", "haltpoll_enter_dead", "default_enter_idle",
})
# crc32c, whichever implementation the kernel picked and whoever calls it
# (metadata), and xxh64 (the data's block digests since format 6)
CHECKSUM_SYM = re.compile(r"crc32|crc_pcl|crc32c|chksum_(update|finup|digest)|xxh64")
CHECKSUM_DSO = re.compile(r"^\[crc32")
OWN_DSO = {"remap": "[dm_remap]", "linear": "[dm_mod]"}
DEVICE_LABEL = {"remap": "dm-remap", "linear": "dm-linear"}
WORKLOADS = {"randwrite": "4K random write", "randread": "4K random read"}


def block_sysfs(dev):
    """/sys/dev/block/M:m of block device node @dev: /dev/mapper/NAME is
    a node, not a link to ../dm-N, when libdevmapper makes it
    (DM_DISABLE_UDEV, as the VM tests run)."""
    rdev = os.stat(dev).st_rdev
    return f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"


def workload_label(workload, bs="4k"):
    """A workload's name in the report, with fio's block size (DMR_PROFILE_BS)."""
    label = WORKLOADS.get(workload, workload)
    return label if bs.lower() == "4k" else label.replace("4K", bs.upper(), 1)
TOP = 15
SETTLE, TAIL = 1, 2     # s: from fio's first I/O to the profiled window, and after it
# perf report (--stdio, and --ignore-vmlinux: a vmlinux without symbols may
# lie around) of each measurement; "full" and "children" are parsed
REPORTS = {
    "full": ["--no-children", "--sort", "comm,dso,sym", "-n", "--show-total-period",
             "-g", "none"],
    "children": ["--children", "--sort", "dso", "-g", "none"],
    "sym": ["--no-children", "--sort", "sym", "-n", "-g", "none"],
    "dso": ["--no-children", "--sort", "dso", "-n", "-g", "none"],
    "callers": ["--no-children", "--sort", "dso,sym", "-g", "caller,0.5",
                "--percent-limit", "1"],
    "crc-callers": ["--no-children", "--sort", "dso,sym", "-g", "callee,0.5",
                    "--symbol-filter=crc"],
}

# column names of perf report --stdio -> row keys
COLUMN_KEYS = {"Overhead": "overhead", "Self": "self", "Children": "children",
               "Samples": "samples", "Period": "period", "Command": "comm",
               "Shared Object": "dso", "Symbol": "sym"}


# ---------------------------------------------------------------- parsing

def _count(text):
    """'20K' -> 20000, '1M' -> 1000000, '246' -> 246 (perf's header)."""
    m = re.fullmatch(r"([\d.]+)\s*([KMG]?)", text.strip())
    if not m:
        return None
    return int(float(m.group(1)) * {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}[m.group(2)])


def _spans(dots):
    """Column spans from perf's '# ........  ......' underline."""
    return [(m.start(), m.end()) for m in re.finditer(r"\.+", dots)]


def parse_report(text):
    """Output of `perf report --stdio -g none` (any --sort keys, with or
    without -n, --show-total-period, --children) -> dict:

      event, samples (header, approximate: '20K'), event_count (header),
      lost, columns (row keys in order), rows: one dict per entry, with
      overhead/self/children in percent (float), samples and period (int),
      comm, dso, sym (the name, without '[k] '), kind ('k' kernel, '.' user).

    Columns are cut where perf's dotted underline puts them; callchain
    lines (if the report has them) are skipped."""
    rep = {"event": None, "samples": None, "event_count": None, "lost": 0,
           "columns": [], "rows": []}
    lines = text.splitlines()
    header = spans = None
    for i, line in enumerate(lines):
        m = re.match(r"# Samples: (\S+)\s+of event '([^']*)'", line)
        if m:
            rep["samples"], rep["event"] = _count(m.group(1)), m.group(2)
            continue
        m = re.match(r"# Event count \(approx\.\): (\d+)", line)
        if m:
            rep["event_count"] = int(m.group(1))
            continue
        m = re.match(r"# Total Lost Samples: (\d+)", line)
        if m:
            rep["lost"] = int(m.group(1))
            continue
        if (header is None and line.startswith("# ") and i + 1 < len(lines)
                and re.fullmatch(r"#( +\.+)+ *", lines[i + 1])):
            spans = _spans(lines[i + 1])
            names = []
            for j, (a, _) in enumerate(spans):
                b = spans[j + 1][0] if j + 1 < len(spans) else None
                names.append(line[a:b].strip())
            header = [COLUMN_KEYS.get(n, n.lower()) for n in names]
            rep["columns"] = header
            continue
        if header is None or not line.strip() or line.startswith("#"):
            continue
        # an entry begins with its first column, a percentage; callchain
        # lines ('|', '---', '--12.5%--') do not
        if not re.match(r"\s*\d+\.\d+%", line):
            continue
        row = {}
        for j, (a, _) in enumerate(spans):
            b = spans[j + 1][0] if j + 1 < len(spans) else None
            row[header[j]] = line[a:b].strip()
        for k in ("overhead", "self", "children"):
            if k in row:
                row[k] = float(row[k].rstrip("%"))
        for k in ("samples", "period"):
            if k in row:
                row[k] = int(row[k])
        if "sym" in row:
            m = re.match(r"\[(.)\] (.*)", row["sym"])
            if m:
                row["kind"], row["sym"] = m.group(1), m.group(2).strip()
        rep["rows"].append(row)
    return rep


# ---------------------------------------------------------------- arithmetic

def is_idle(row):
    return row.get("kind", "k") == "k" and row.get("sym") in IDLE_SYMBOLS


def is_checksum(row):
    """Kernel crc32c and xxh64 code (user space's own checksums are not ours)."""
    return row.get("kind", "k") == "k" and bool(
        CHECKSUM_SYM.search(row.get("sym", "")) or CHECKSUM_DSO.search(row.get("dso", "")))


def comm_group(comm):
    """kworker/1:2H-kblockd -> kworker/*; other commands as they are."""
    return "kworker/*" if comm.startswith("kworker/") else comm


KERNEL_DSOS = {"[kernel.kallsyms]", "[kernel.vmlinux]", "/proc/kcore"}


def parse_kallsyms(text):
    """/proc/kallsyms -> {function: module} for the functions of modules
    whose name is not also a function of the kernel proper (or of another
    module)."""
    mod, seen = {}, set()
    for line in text.splitlines():
        f = line.split()
        if len(f) < 3 or f[1] not in "tTwW":
            continue
        name = f[2]
        m = f[3][1:-1] if len(f) > 3 and f[3].startswith("[") else None
        if name in seen:
            mod.pop(name, None)
            continue
        seen.add(name)
        if m:
            mod[name] = m
    return mod


def attribute_modules(rows, modsyms):
    """Rows a perf report put in the kernel's shared object whose function
    is a module's (perf does that when it reads /proc/kcore): moved to
    '[module]'.  Returns the rows (new dicts where changed) and how many
    samples moved."""
    out, moved = [], 0
    for r in rows:
        m = modsyms.get(r.get("sym")) if r.get("dso") in KERNEL_DSOS else None
        if m:
            r = dict(r, dso=f"[{m}]")
            moved += r.get("samples", 0)
        out.append(r)
    return out, moved


def kallsyms_addrs(text):
    """/proc/kallsyms -> sorted [(address, function, module or None)] of
    its text symbols (addresses 0, as an unprivileged read shows them,
    left out)."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 3 or f[1] not in "tTwW":
            continue
        try:
            addr = int(f[0], 16)
        except ValueError:
            continue
        if addr:
            out.append((addr, f[2], f[3][1:-1] if len(f) > 3 and f[3].startswith("[")
                        else None))
    out.sort()
    return out


def resolve_ip(addrs, ip):
    """The function of kallsyms_addrs() that holds ip (the nearest one at
    or below it), as (function, module), or None."""
    i = bisect.bisect_right(addrs, (ip, "\uffff")) - 1
    return addrs[i][1:] if i >= 0 else None


def resolve_unknown(text, addrs):
    """Kernel samples perf could not name: `perf script -F comm,cpu,time,
    ip,sym,dso` lines whose symbol is [unknown] at a kernel address (perf
    may also put them in the wrong module: a run put crc32c-intel's code
    in [ahci]), named from kallsyms.  Returns {(function, module): samples},
    ('?', None) for what kallsyms does not hold."""
    out = {}
    for line in text.splitlines():
        m = SCRIPT_LINE.match(line)
        if not m or m.group(5) != "[unknown]":
            continue
        ip = int(m.group(4), 16)
        if ip < 1 << 63:            # user space
            continue
        key = resolve_ip(addrs, ip) or ("?", None)
        out[key] = out.get(key, 0) + 1
    return out


def fold_resolved(m, resolved):
    """Add the samples resolve_unknown() named to the checksum figures of
    metrics() m (perf's report counted them under a raw address, so they
    are in busy time but in no named part), and list them all in
    m['resolved'].  Samples are worth m['ns_per_sample'] each."""
    m["resolved"] = [{"sym": f, "module": mod, "samples": n} for (f, mod), n in
                     sorted(resolved.items(), key=lambda kv: -kv[1])]
    c = m["checksum"]
    for (f, mod), n in resolved.items():
        row = {"sym": f, "dso": f"[{mod}]" if mod else "[kernel.kallsyms]", "kind": "k"}
        if not is_checksum(row):
            continue
        c["samples"] += n
        c["ns"] += n * m["ns_per_sample"]
        name = f"{f} (resolved)"
        c["symbols"][name] = c["symbols"].get(name, 0) + n
    blocks, busy = m.get("blocks"), m.get("busy_ns")
    c["ns_per_block"] = c["ns"] / blocks if blocks else None
    c["share_busy"] = c["ns"] / busy if busy else None
    c["symbols"] = dict(sorted(c["symbols"].items(), key=lambda kv: -kv[1]))
    return m


# perf script -F comm,cpu,time,ip,sym,dso: "comm [cpu] time: ip sym (dso)"
SCRIPT_LINE = re.compile(
    r"^\s*(.*?)\s+\[(\d+)\]\s+(\d+\.\d+):\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")


def sampling_gaps(text, period_ns, window=None, top=8):
    """Where the samples did not come: `perf script -G -F comm,cpu,time,ip,
    sym,dso` -> per CPU, the gaps between consecutive samples longer than
    1.5 periods.  A gap is time that was not sampled: the vCPU did not run
    (the host did not schedule it), or the timer interrupt waited for
    interrupts to come back on.  Each gap's unsampled time (gap - period) is
    put to the sample that ended it: idle (the CPU woke from halt late) or
    busy (where interrupts came back on).  window (start, end), seconds:
    also the unsampled time at the window's edges (edge_ns)."""
    by_cpu = {}
    for line in text.splitlines():
        m = SCRIPT_LINE.match(line)
        if not m:
            continue
        sym = m.group(5)
        row = {"sym": sym, "dso": m.group(6),
               "kind": "k" if m.group(6).startswith("[") and m.group(6) != "[unknown]"
               else "."}
        by_cpu.setdefault(int(m.group(2)), []).append((float(m.group(3)), row))
    out = {"samples": 0, "cpus": len(by_cpu), "gaps": 0, "missed_ns": 0.0,
           "missed_busy_ns": 0.0, "missed_idle_ns": 0.0, "max_gap_ns": 0.0,
           "edge_ns": 0.0, "busy_gap_syms": []}
    ends = {}
    for cpu, samples in by_cpu.items():
        samples.sort(key=lambda x: x[0])
        out["samples"] += len(samples)
        if window:
            out["edge_ns"] += max(0.0, (samples[0][0] - window[0]) * 1e9 - period_ns)
            out["edge_ns"] += max(0.0, (window[1] - samples[-1][0]) * 1e9 - period_ns)
        for (t0, _), (t1, row) in zip(samples, samples[1:]):
            gap = (t1 - t0) * 1e9
            if gap <= 1.5 * period_ns:
                continue
            lost = gap - period_ns
            out["gaps"] += 1
            out["missed_ns"] += lost
            out["max_gap_ns"] = max(out["max_gap_ns"], gap)
            if is_idle(row):
                out["missed_idle_ns"] += lost
            else:
                out["missed_busy_ns"] += lost
                ends[row["sym"]] = ends.get(row["sym"], 0.0) + lost
    out["busy_gap_syms"] = [{"name": k, "ns": v} for k, v in
                            sorted(ends.items(), key=lambda kv: -kv[1])[:top]]
    return out


def _sum(rows, key):
    return sum(r.get(key, 0) for r in rows)


def _by(rows, keyf, value="period"):
    out = {}
    for r in rows:
        k = keyf(r)
        out[k] = out.get(k, 0) + r.get(value, 0)
    return out


def metrics(rep, blocks, freq, cpus=None, wall_s=None, own_dso="[dm_remap]",
            children=None, top=TOP):
    """CPU time per 4 KiB block from a parsed report (parse_report of
    `perf report --no-children -g none -n [--show-total-period] --sort
    comm,dso,sym`; a report without some of these keys still gives what it
    can).  blocks: 4 KiB blocks fio moved; freq: perf's sampling frequency;
    cpus, wall_s: to check the sample count against freq x cpus x wall;
    children: parse_report of `--children --sort dso` for the inclusive
    share (a module's code and all it calls).

    Time is the samples' period where the report has it (cpu-clock counts
    nanoseconds), samples x 1e9 / freq otherwise."""
    rows = rep["rows"]
    total_samples = _sum(rows, "samples")
    ns_per_sample = 1e9 / freq
    if rows and all("period" in r for r in rows):
        total_ns = _sum(rows, "period")
        if total_samples:
            ns_per_sample = total_ns / total_samples
    else:
        rows = [dict(r, period=r.get("samples", 0) * ns_per_sample) for r in rows]
        total_ns = _sum(rows, "period")
    idle = [r for r in rows if is_idle(r)]
    busy = [r for r in rows if not is_idle(r)]
    busy_ns = _sum(busy, "period")
    blocks = max(int(blocks), 0)

    def per_block(ns):
        return ns / blocks if blocks else None

    def share(ns):
        return ns / busy_ns if busy_ns else None

    def part(sel):
        ns = _sum(sel, "period")
        return {"samples": _sum(sel, "samples"), "ns": ns,
                "ns_per_block": per_block(ns), "share_busy": share(ns)}

    m = {"blocks": blocks, "freq": freq, "ns_per_sample": ns_per_sample,
         "total_samples": total_samples, "total_ns": total_ns,
         "header_samples": rep.get("samples"), "lost_samples": rep.get("lost", 0),
         "idle_samples": _sum(idle, "samples"), "idle_ns": _sum(idle, "period"),
         "busy_samples": _sum(busy, "samples"), "busy_ns": busy_ns,
         "busy_fraction": busy_ns / total_ns if total_ns else None,
         "busy_ns_per_block": per_block(busy_ns)}
    if cpus and wall_s:
        expect = cpus * wall_s * freq
        m["cpus"], m["wall_s"] = cpus, wall_s
        m["expected_samples"] = expect
        m["sample_ratio"] = total_samples / expect if expect else None
    m["own_dso"] = own_dso
    m["own"] = part([r for r in busy if r.get("dso") == own_dso])
    m["dm_mod"] = part([r for r in busy if r.get("dso") == "[dm_mod]"])
    m["dm_remap"] = part([r for r in busy if r.get("dso") == "[dm_remap]"])
    cs = [r for r in busy if is_checksum(r)]
    m["checksum"] = part(cs)
    m["checksum"]["symbols"] = {k: v for k, v in sorted(
        _by(cs, lambda r: r.get("sym", "?"), "samples").items(), key=lambda kv: -kv[1])}
    m["idle_symbols"] = dict(sorted(_by(idle, lambda r: r.get("sym", "?"), "samples").items(),
                                    key=lambda kv: -kv[1]))

    def table(keyf, sel, n=None):
        ns = _by(sel, keyf)
        smp = _by(sel, keyf, "samples")
        items = sorted(ns.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]
        return [{"name": k, "samples": smp[k], "ns_per_block": per_block(v),
                 "share_busy": share(v)} for k, v in items]

    m["dsos"] = table(lambda r: r.get("dso", "?"), busy)
    m["comms"] = table(lambda r: comm_group(r.get("comm", "?")), busy)
    # top functions: by symbol name (a symbol's dso beside it)
    dso_of = {}
    for r in busy:
        dso_of.setdefault(r.get("sym", "?"), {})
        d = dso_of[r.get("sym", "?")]
        d[r.get("dso", "?")] = d.get(r.get("dso", "?"), 0) + r.get("samples", 0)
    m["top"] = table(lambda r: r.get("sym", "?"), busy, top)
    for t in m["top"]:
        t["dso"] = max(dso_of[t["name"]].items(), key=lambda kv: kv[1])[0]
    perf_self = [r for r in busy if r.get("comm") == "perf"]
    m["perf_self"] = part(perf_self)
    # what the idle task's samples were: to check the idle set
    swapper = [r for r in rows if r.get("comm", "").startswith("swapper")]
    m["swapper_top"] = [dict(t, idle=t["name"] in IDLE_SYMBOLS) for t in
                        table(lambda r: r.get("sym", "?"), swapper, 12)]
    if children is not None:
        inc = {}
        for r in children["rows"]:
            if "children" in r and "dso" in r:
                inc[r["dso"]] = r["children"]
        for key, dso in (("own", own_dso), ("dm_mod", "[dm_mod]"), ("dm_remap", "[dm_remap]")):
            pct = inc.get(dso)
            if pct is not None:
                ns = pct / 100 * total_ns
                m[key]["inclusive"] = {"percent_all": pct, "ns_per_block": per_block(ns),
                                       "share_busy": share(ns)}
    return m


# ---------------------------------------------------------------- rendering

def _f(v, spec, none="-"):
    return none if v is None else format(v, spec)


def _pct(v):
    return _f(None if v is None else 100 * v, ".1f") + "%"


def run_text(r, bs="4k"):
    """The section of profile.txt for one measurement."""
    m = r["metrics"]
    lines = [f"---- {workload_label(r['workload'], bs)} on "
             f"{DEVICE_LABEL.get(r['device'], r['device'])} "
             f"({r['jobs']} psync jobs)"]
    win = r.get("window")
    if win:
        lines.append(f"  profiled window {win['seconds']:.1f} s in the middle of fio's "
                     f"{r['fio_runtime_s']:.1f} s: {m['blocks']} blocks ({win['iops']:.0f}/s; "
                     f"fio: {r['iops']:.0f} IOPS over its run)")
    else:
        lines.append(f"  the whole fio run ({r['fio_runtime_s']:.1f} s): {m['blocks']} blocks, "
                     f"{r['iops']:.0f} IOPS")
    chk = ""
    if m.get("sample_ratio") is not None:
        chk = (f"; {m['sample_ratio']:.2f} x the {m['expected_samples']:.0f} expected "
               f"from {m['cpus']} cpus x {m['wall_s']:.2f} s x {m['freq']} Hz")
    lines.append(f"  samples {m['total_samples']} of {m['ns_per_sample']:.0f} ns{chk}"
                 + (f"; {m['lost_samples']} LOST" if m["lost_samples"] else ""))
    lines.append(f"  busy {m['busy_samples']} samples ({_pct(m['busy_fraction'])}), "
                 f"idle {m['idle_samples']}: busy CPU {_f(m['busy_ns_per_block'], '.0f')} "
                 "ns/block")
    g = r.get("gaps")
    if g and m.get("wall_s") and m.get("cpus"):
        span = m["wall_s"] * m["cpus"] * 1e9
        top = ", ".join(f"{t['name']} {t['ns'] / 1e6:.0f}" for t in g["busy_gap_syms"][:4])
        lines.append(f"  not sampled: {g['missed_ns'] / 1e6:.0f} ms of the {span / 1e6:.0f} "
                     f"CPU-ms ({_pct(g['missed_ns'] / span)}), in {g['gaps']} gaps (longest "
                     f"{g['max_gap_ns'] / 1e6:.1f} ms): {g['missed_busy_ns'] / 1e6:.0f} ms ended "
                     f"in busy code{' (' + top + ')' if top else ''}, "
                     f"{g['missed_idle_ns'] / 1e6:.0f} ms in idle")
        if g.get("busy_ns_per_block_with_gaps") is not None:
            lines.append(f"  busy CPU counting the gaps that ended in busy code: "
                         f"{g['busy_ns_per_block_with_gaps']:.0f} ns/block (an upper bound)")
    w = r.get("whole")
    if w and win:
        lines.append(f"  (the whole fio run, its start and exit included, over fio's "
                     f"{w['blocks']} blocks: busy {_f(w['busy_ns_per_block'], '.0f')} ns/block)")
    o = m["own"]
    inc = o.get("inclusive")
    lines.append(f"  own code {m['own_dso']}: {_f(o['ns_per_block'], '.0f')} ns/block "
                 f"({_pct(o['share_busy'])} of busy)"
                 + (f"; with all it calls {_f(inc['ns_per_block'], '.0f')} ns/block "
                    f"({_pct(inc['share_busy'])})" if inc else ""))
    if m["own_dso"] != "[dm_mod]":
        o = m["dm_mod"]
        lines.append(f"  device-mapper core [dm_mod]: {_f(o['ns_per_block'], '.0f')} ns/block "
                     f"({_pct(o['share_busy'])} of busy)")
    c = m["checksum"]
    syms = ", ".join(f"{k} {v}" for k, v in list(c["symbols"].items())[:4])
    lines.append(f"  checksum (crc32c, xxh64): {_f(c['ns_per_block'], '.0f')} ns/block "
                 f"({_pct(c['share_busy'])} of busy)" + (
                     f": {syms} samples (callers: raw/{r['workload']}-{r['device']}-"
                     "crc-callers.txt)" if syms else ""))
    lines.append(f"  perf itself: {_pct(m['perf_self']['share_busy'])} of busy")
    res_ = m.get("resolved")
    if res_:
        lines.append("  samples perf left unnamed, named from kallsyms: " + ", ".join(
            f"{x['sym']}" + (f" [{x['module']}]" if x["module"] else "") + f" {x['samples']}"
            for x in res_[:6]))
    mi = r.get("members")
    if mi and mi.get("writes_per_mib") is not None:
        lines.append(f"  the arrays' members in the window, per user MiB: "
                     f"{mi['writes_per_mib']:.1f} writes of {_f(mi['write_kib_mean'], '.0f')}"
                     f" KiB on average ({mi['write_kib_per_mib']:.0f} KiB, parity included), "
                     f"{mi['read_kib_per_mib']:.0f} KiB read in {mi['reads']} reads")
    d = r.get("status_delta")
    if d:
        lines.append(f"  dm-remap status over the run: user_blocks +{d.get('user_blocks')}, "
                     f"device_blocks +{d.get('device_blocks')} (WAF {_f(d.get('waf'), '.2f')}),"
                     f" GC runs +{d.get('gc_runs')}, blocks moved +{d.get('gc_moved')}")
    lines.append("  busy by shared object: " + ", ".join(
        f"{d['name']} {_pct(d['share_busy'])}" for d in m["dsos"][:8]))
    lines.append("  busy by command: " + ", ".join(
        f"{d['name']} {_pct(d['share_busy'])}" for d in m["comms"][:8]))
    lines.append(f"  top {len(m['top'])} functions: share of busy, ns/block, samples")
    for t in m["top"]:
        lines.append(f"    {_pct(t['share_busy']):>6} {_f(t['ns_per_block'], '7.0f')} "
                     f"{t['samples']:>7}  {t['name']} {t['dso']}")
    return "\n".join(lines)


def member_io(a, b, user_bytes):
    """What the arrays' members did between two sums of their
    /sys/block stats (reads, sectors read, writes, sectors written), per
    MiB the device's user moved: the commands the members got and their
    mean size (a media model charges per command), and what they read
    (parity RAID's read-modify-write) and wrote (parity included)."""
    d = [y - x for x, y in zip(a, b)]
    mib = user_bytes / MiB
    out = {"reads": d[0], "read_kib": d[1] / 2, "writes": d[2], "write_kib": d[3] / 2,
           "write_kib_mean": d[3] / 2 / d[2] if d[2] else None}
    if mib > 0:
        out.update(writes_per_mib=d[2] / mib, read_kib_per_mib=d[1] / 2 / mib,
                   write_kib_per_mib=d[3] / 2 / mib)
    return out


def media_knob(m):
    """The media model as DMR_PROFILE_MEDIA takes it ('' for ramdisks)."""
    return ",".join(f"{key}={v}" for key, v in m.items()) if m else "''"


def render(res):
    """profile.txt from the results (profile.json's content)."""
    k = res["knobs"]
    bs = k.get("bs", "4k")
    s = res["setup"]
    seen = sorted(IDLE_SYMBOLS & set(sym for r in res["runs"]
                                     for sym in r["metrics"]["idle_symbols"]))
    lines = ["==== dm-remap CPU profile: perf cpu-clock samples on all CPUs in the VM, "
             "CPU ns per 4 KiB block",
             f"kernel {res['kernel']}, {res['cpus']} cpus, {res['perf']}, {res['date']}",
             f"devices: {s['label']}; tested region {s['region_bytes'] // MiB} MiB",
             f"dm-remap state: {s['state']}",
             f"knobs: DMR_PROFILE_SECONDS={k['seconds']} DMR_PROFILE_JOBS={k['jobs']} "
             f"DMR_PROFILE_WORKLOADS={','.join(k['workloads'])} "
             f"DMR_PROFILE_PRECONDITION={k['precondition']:g} DMR_PROFILE_FREQ={k['freq']} "
             f"DMR_PROFILE_RAMDISK_MIB={k['ramdisk_mib']} "
             f"DMR_PROFILE_BS={k.get('bs', '4k')} "
             f"DMR_PROFILE_FORMAT='{' '.join(k.get('format', []))}' "
             f"DMR_PROFILE_MEMBERS={k.get('members', 4)} "
             f"DMR_PROFILE_STRIPE_CACHE={k.get('stripe_cache', 0)} "
             f"DMR_PROFILE_MODPARAMS='{' '.join(k.get('modparams', []))}' "
             f"DMR_PROFILE_MEDIA={media_knob(k.get('media'))}",
             "idle = samples in " + (", ".join(seen) or "none") +
             " (of the idle set IDLE_SYMBOLS); busy = all other samples",
             "notes: cpu-clock samples taken with interrupts off land where they come "
             "back on (_raw_spin_unlock_irqrestore, finish_task_switch and the like); "
             "time that got no sample (a vCPU the host did not run, a late timer "
             "interrupt: see 'not sampled') is in no figure but the upper bound", "",
             f"{'workload':<16} {'device':<10} {'IOPS':>7} {'busy':>8} {'own':>7} "
             f"{'own+calls':>9} {'crc':>7} {'crc%':>6} {'busy%':>6}"]
    for r in res["runs"]:
        m = r["metrics"]
        inc = m["own"].get("inclusive") or {}
        iops = (r.get("window") or {}).get("iops", r["iops"])
        lines.append(f"{workload_label(r['workload'], bs):<16} "
                     f"{DEVICE_LABEL.get(r['device'], r['device']):<10} "
                     f"{iops:>7.0f} {_f(m['busy_ns_per_block'], '8.0f'):>8} "
                     f"{_f(m['own']['ns_per_block'], '7.0f'):>7} "
                     f"{_f(inc.get('ns_per_block'), '9.0f'):>9} "
                     f"{_f(m['checksum']['ns_per_block'], '7.0f'):>7} "
                     f"{_pct(m['checksum']['share_busy']):>6} "
                     f"{_pct(m['busy_fraction']):>6}")
    lines += ["(CPU ns per 4 KiB block: busy = all non-idle CPU; own = the target's "
              "module, [dm_remap] or, for dm-linear, [dm_mod]; own+calls = samples with "
              "that module anywhere in the call chain; crc = crc32c and xxh64 code, crc% its share "
              "of busy; busy% = busy share of all CPU time; IOPS in the profiled window)"]
    for w in res["workloads_ratio"]:
        lines.append(f"{workload_label(w['workload'], bs)}: dm-remap / "
                     f"dm-linear busy CPU per block {_f(w['ratio'], '.2f')}x")
    for r in res["runs"]:
        lines += ["", run_text(r, bs)]
    swap = {}
    for r in res["runs"]:
        for t in r["metrics"]["swapper_top"]:
            swap[t["name"]] = swap.get(t["name"], 0) + t["samples"]
    lines += ["", "the idle task's (swapper's) samples, all runs: " + ", ".join(
        f"{n} {c}{'' if n in IDLE_SYMBOLS else ' (busy)'}" for n, c in
        sorted(swap.items(), key=lambda kv: -kv[1])[:12])]
    lines += [f"warning: {w}" for w in res.get("warnings", [])]
    if res.get("elapsed_s") is not None:
        lines.append(f"guest run time {res['elapsed_s']} s")
    return "\n".join(lines)


def ratios(runs):
    out = []
    for w in dict.fromkeys(r["workload"] for r in runs):
        by = {r["device"]: r["metrics"]["busy_ns_per_block"] for r in runs
              if r["workload"] == w}
        if by.get("remap") and by.get("linear"):
            out.append({"workload": w, "ratio": by["remap"] / by["linear"]})
    return out


# ---------------------------------------------------------------- the VM side

ENV = os.environ.get


def knobs():
    k = {"seconds": int(ENV("DMR_PROFILE_SECONDS", "10")),
         "jobs": int(ENV("DMR_PROFILE_JOBS", "10")),
         "workloads": [w for w in ENV("DMR_PROFILE_WORKLOADS", "randwrite,randread").split(",")
                       if w],
         "precondition": float(ENV("DMR_PROFILE_PRECONDITION", "2")),
         "freq": int(ENV("DMR_PROFILE_FREQ", "999")),
         "ramdisk_mib": int(ENV("DMR_PROFILE_RAMDISK_MIB", "128")),
         "devices": [d for d in ENV("DMR_PROFILE_DEVICES", "linear,remap").split(",") if d],
         "bs": ENV("DMR_PROFILE_BS", "4k"),
         "format": ENV("DMR_PROFILE_FORMAT", "").split(),
         "media": ENV("DMR_PROFILE_MEDIA", ""),
         "members": int(ENV("DMR_PROFILE_MEMBERS", "4")),
         "stripe_cache": int(ENV("DMR_PROFILE_STRIPE_CACHE", "0")),
         "modparams": ENV("DMR_PROFILE_MODPARAMS", "").split()}
    bad = [w for w in k["workloads"] if w not in WORKLOADS]
    bad += [d for d in k["devices"] if d not in DEVICE_LABEL]
    if k["media"]:
        try:
            k["media"] = load_bench().parse_media("" if k["media"] == "default" else k["media"])
        except ValueError as e:
            bad.append(str(e))
    if not 3 <= k["members"] <= 8:
        bad.append(f"members {k['members']} (3 to 8)")
    if k["stripe_cache"] and not 17 <= k["stripe_cache"] <= 32768:
        bad.append(f"stripe_cache {k['stripe_cache']} (0, or md's 17 to 32768)")
    if bad or k["seconds"] < 1 or k["jobs"] < 1 or k["precondition"] < 0 or k["freq"] < 1:
        sys.exit(f"profile: bad knobs {k} ({bad})")
    return k


def log(text):
    print(f"profile: {text}", flush=True)


def sh(*cmd, check=True, input=None):
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode:
        sys.exit(f"profile: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p


def load_source(name, *path):
    """The Python file at REPO/path... as module name (importing runs nothing)."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(REPO, *path))
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def load_bench():
    """tests/vm/guest-bench.py, for its media model (parse_media(),
    make_nullb())."""
    return load_source("guest_bench", "tests", "vm", "guest-bench.py")


def load_compare():
    """tools/compare, for its dm-remap status parser (kept in step with the
    module), or None."""
    try:
        return load_source("compare_tool", "tools", "compare")
    except Exception as e:      # noqa: BLE001 - status figures are optional
        log(f"cannot load tools/compare ({e}): no dm-remap status figures")
        return None


class Rig:
    A, B = "/dev/md/dmrprofA", "/dev/md/dmrprofB"
    LINEAR, REMAP = "dmrprof-linear", "dmrprof-remap"

    def __init__(self, k):
        self.k = k
        self.compare = load_compare()
        self.warnings = []
        self.tmp = ENV("TMPDIR", "/tmp")
        self.undo = []          # (what, fn): make_nullb()'s teardown, last first

    def push(self, what, fn):
        self.undo.append((what, fn))

    def status(self):
        text = sh("dmsetup", "status", self.REMAP).stdout
        if self.compare:
            try:
                return self.compare.parse_status(self.REMAP, text)
            except Exception as e:      # noqa: BLE001
                self.warn(f"dm-remap status not understood ({e})")
                self.compare = None
        return None

    def warn(self, text):
        log("warning: " + text)
        self.warnings.append(text)

    def setup(self):
        mib = self.k["ramdisk_mib"]
        # crc32c-intel now, not on first use: a module loaded after the
        # kallsyms copy below would be attributed to its neighbour
        sh("modprobe", "-a", "dm-mod", "libcrc32c", "crc32c-intel", "raid456")
        sh("insmod", os.path.join(REPO, "dm-remap", "dm-remap.ko"), *self.k["modparams"])
        n = self.k["members"]
        if self.k["media"]:
            devs = load_bench().make_nullb(self, 2 * n, mib, self.k["media"])
            what = "null_blk members with the bench's media model"
        else:
            subprocess.run(["rmmod", "brd"], capture_output=True)
            sh("modprobe", "brd", f"rd_nr={2 * n}", f"rd_size={mib * 1024}")
            devs = [f"/dev/ram{i}" for i in range(2 * n)]
            what = "ramdisks"
        self.members = {"linear": devs[:n], "remap": devs[n:2 * n]}
        for md, first in ((self.A, 0), (self.B, n)):
            sh("mdadm", "--create", md, "--run", "--quiet", "--level=5",
               f"--raid-devices={n}", "--chunk=64", "--assume-clean", "--metadata=1.2",
               *devs[first:first + n], input="y\n")
            if self.k.get("stripe_cache"):
                name = os.path.basename(os.path.realpath(md))
                with open(f"/sys/block/{name}/md/stripe_cache_size", "w") as f:
                    f.write(str(self.k["stripe_cache"]))
        sh("udevadm", "settle", check=False)
        size = sh("blockdev", "--getsz", self.A).stdout.strip()
        sh("dmsetup", "create", self.LINEAR, "--table", f"0 {size} linear {self.A} 0")
        remapctl = os.path.join(REPO, "tools", "remapctl")
        sh(remapctl, "format", "--force", *self.k.get("format", []), self.B)
        sh(remapctl, "create", self.REMAP, self.B)
        sh("udevadm", "settle", check=False)
        for _ in range(100):
            if all(os.path.exists(f"/dev/mapper/{n}") for n in (self.LINEAR, self.REMAP)):
                break
            time.sleep(0.1)
        else:
            sys.exit("profile: /dev/mapper devices did not appear")
        logical = int(sh("blockdev", "--getsize64", f"/dev/mapper/{self.REMAP}").stdout)
        self.region = logical // MiB * MiB
        self.label = (f"two md RAID-5 arrays, each over {n} x {mib} MiB {what} (64K "
                      f"chunk, {int(size) * 512 // MiB} MiB): dm-linear over one, "
                      f"dm-remap over the other ({logical // MiB} MiB remapped)")
        log(self.label)
        # perf reads /proc/kcore when it reads /proc/kallsyms, and then puts
        # the modules' functions in the kernel's shared object: a copy of
        # kallsyms (no kcore beside it) gives every module its own
        self.kallsyms = os.path.join(tempfile.mkdtemp(prefix="dmrprof-"), "kallsyms")
        with open("/proc/kallsyms") as f:
            text = f.read()
        with open(self.kallsyms, "w") as f:
            f.write(text)
        self.modsyms = parse_kallsyms(text)
        self.addrs = kallsyms_addrs(text)

    def path(self, device):
        return f"/dev/mapper/{self.LINEAR if device == 'linear' else self.REMAP}"

    def fio(self, dev, *args):
        p = sh("fio", "--output-format=json", f"--filename={dev}", "--direct=1",
               f"--size={self.region}", *args)
        return json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]

    def fill(self, device):
        t = time.monotonic()
        dev = self.path(device)
        self.fio(dev, "--name=fill", "--rw=write", "--bs=1M", "--ioengine=libaio",
                 "--iodepth=4")
        log(f"{device}: sequential fill of {self.region // MiB} MiB, "
            f"{time.monotonic() - t:.0f} s")
        pre = self.k["precondition"]
        if device == "remap" and pre:
            t = time.monotonic()
            total = int(pre * self.region) // BLOCK * BLOCK
            j = self.fio(dev, "--name=precondition", "--rw=randwrite", "--bs=4k",
                         "--ioengine=libaio", "--iodepth=32", "--norandommap",
                         "--randrepeat=0", f"--io_size={total}")
            log(f"remap: preconditioned with {pre:g} x {self.region // MiB} MiB of random "
                f"4 KiB writes, {j['write']['iops']:.0f} IOPS, {time.monotonic() - t:.0f} s")

    def gc_idle(self, limit=120):
        if not self.compare:
            time.sleep(2)
            return
        end = time.monotonic() + limit
        while True:
            st = self.status()
            if st is None or st["gc_state"] == "idle":
                return
            if time.monotonic() > end:
                self.warn(f"dm-remap GC still {st['gc_state']} after {limit} s")
                return
            time.sleep(0.5)

    def sectors(self, dev, op):
        """(CLOCK_MONOTONIC seconds, sectors read or written so far) of a
        block device, from its /sys/block stat."""
        with open(f"{block_sysfs(dev)}/stat") as f:
            fields = f.read().split()
        return time.clock_gettime(time.CLOCK_MONOTONIC), int(fields[2 if op == "read" else 6])

    def member_sums(self, device):
        """Reads, sectors read, writes, sectors written of the members of
        @device's array, summed."""
        tot = [0, 0, 0, 0]
        for dev in self.members[device]:
            with open(f"{block_sysfs(dev)}/stat") as f:
                v = f.read().split()
            for i, j in enumerate((0, 2, 4, 6)):
                tot[i] += int(v[j])
        return tot

    def report(self, data, raw, fname, args, window=None, must=False):
        """One perf report of data, saved as raw/fname; returns its text."""
        cmd = ["perf", "report", "-i", data, "--stdio", "--ignore-vmlinux",
               f"--kallsyms={self.kallsyms}", *args]
        if window:
            cmd.append(f"--time={window[0]:.6f},{window[1]:.6f}")
        q = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(raw, fname), "w") as f:
            f.write(q.stdout)
            if q.stderr.strip():
                f.write("\n# perf report stderr:\n" + q.stderr)
        if q.returncode and must:
            sys.exit(f"profile: {' '.join(cmd)} failed:\n{q.stderr[-2000:]}")
        return q.stdout

    def parse(self, text, name):
        rep = parse_report(text)
        rep["rows"], moved = attribute_modules(rep["rows"], self.modsyms)
        if moved:
            self.warn(f"{name}: {moved} samples of module functions were in the kernel's "
                      "shared object (moved by /proc/kallsyms)")
        return rep

    def measure(self, workload, device, raw):
        """fio on one device under perf record.  The profile is cut to a
        window of DMR_PROFILE_SECONDS in the middle of fio's run (from
        SETTLE s after the device saw its first I/O), and the blocks are
        those the device moved in that window (its /sys/block stat), so
        fio's start and exit are not in the figures; the whole run, with
        fio's own block count, is kept beside as a check."""
        k = self.k
        dev = self.path(device)
        op = "read" if workload == "randread" else "write"
        before = None
        if device == "remap":
            self.gc_idle()
            before = self.status()
        name = f"{workload}-{device}"
        data = os.path.join(self.tmp, f"perf-{name}.data")
        fio_json = os.path.join(self.tmp, f"fio-{name}.json")
        runtime = k["seconds"] + SETTLE + TAIL
        cmd = ["perf", "record", "-a", "-g", "-e", "cpu-clock", "-F", str(k["freq"]),
               "-k", "CLOCK_MONOTONIC", "-N", "-B", "-o", data, "--",
               "fio", f"--name={workload}", f"--filename={dev}", f"--rw={workload}",
               f"--bs={k.get('bs', '4k')}", "--direct=1", "--ioengine=psync",
               f"--numjobs={k['jobs']}",
               "--group_reporting", "--time_based", f"--runtime={runtime}",
               f"--size={self.region}", "--randrepeat=0", "--norandommap",
               "--output-format=json", f"--output={fio_json}"]
        log(f"{name}: " + " ".join(cmd))
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        window = None
        _, s0 = self.sectors(dev, op)
        while proc.poll() is None and time.monotonic() - t0 < 60:
            t, s = self.sectors(dev, op)
            if s != s0:
                time.sleep(SETTLE)
                t1, s1 = self.sectors(dev, op)
                m1 = self.member_sums(device)
                time.sleep(k["seconds"])
                t2, s2 = self.sectors(dev, op)
                m2 = self.member_sums(device)
                running = proc.poll() is None
                time.sleep(0.2)
                _, s3 = self.sectors(dev, op)
                if running and s3 > s2:
                    window = (t1, t2, s1, s2)
                else:
                    self.warn(f"{name}: fio's I/O ended before the profiled window did")
                break
            time.sleep(0.05)
        out, _ = proc.communicate()
        wall = time.monotonic() - t0
        with open(os.path.join(raw, f"{name}-record.log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
        if proc.returncode:
            sys.exit(f"profile: perf record / fio failed ({proc.returncode}):\n{out[-2000:]}")
        with open(fio_json) as f:
            txt = f.read()
        j = json.loads(txt[txt.index("{"):])["jobs"][0]
        s = j[op]
        res = {"workload": workload, "device": device, "jobs": k["jobs"],
               "seconds": k["seconds"], "iops": s["iops"], "io_bytes": s["io_bytes"],
               "fio_runtime_s": s["runtime"] / 1000, "record_wall_s": wall}
        if device == "remap":
            after = self.status()
            if before and after and self.compare:
                res["status_delta"] = self.compare.status_delta(
                    dict(before, at=0), dict(after, at=wall))
        cpus = os.cpu_count()
        # the whole run: fio's blocks, every sample (fio's start and exit too)
        hdr = self.report(data, raw, f"{name}-header.txt", ["--header-only"])
        m = re.search(r"# sample duration :\s*([\d.]+) ms", hdr)
        whole_s = float(m.group(1)) / 1000 if m else None
        text = self.report(data, raw, f"{name}-whole-full.txt", REPORTS["full"], must=True)
        res["whole"] = metrics(self.parse(text, name), s["io_bytes"] // BLOCK, k["freq"],
                               cpus, whole_s, OWN_DSO[device], top=0)
        if window:
            t1, t2, s1, s2 = window
            res["window"] = {"start": t1, "end": t2, "seconds": t2 - t1,
                             "blocks": (s2 - s1) * 512 // BLOCK}
            res["window"]["iops"] = res["window"]["blocks"] / (t2 - t1)
            res["members"] = member_io(m1, m2, (s2 - s1) * 512)
            blocks, secs, cut = res["window"]["blocks"], t2 - t1, (t1, t2)
        else:
            blocks, secs, cut = s["io_bytes"] // BLOCK, whole_s, None
            self.warn(f"{name}: no window, the figures are of the whole fio run")
        texts = {}
        for rname, args in REPORTS.items():
            texts[rname] = self.report(data, raw, f"{name}-{rname}.txt", args, cut,
                                       must=rname in ("full", "children"))
        m = res["metrics"] = metrics(self.parse(texts["full"], name), blocks, k["freq"], cpus,
                                     secs, OWN_DSO[device], parse_report(texts["children"]))
        cmd = ["perf", "script", "-i", data, f"--kallsyms={self.kallsyms}", "-G",
               "-F", "comm,cpu,time,ip,sym,dso"]
        if cut:
            cmd.append(f"--time={cut[0]:.6f},{cut[1]:.6f}")
        q = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(raw, f"{name}-script-head.txt"), "w") as f:
            f.write("\n".join(q.stdout.splitlines()[:300]) + "\n")
        fold_resolved(m, resolve_unknown(q.stdout, self.addrs))
        res["gaps"] = g = sampling_gaps(q.stdout, m["ns_per_sample"], cut)
        if g["samples"] != m["total_samples"]:
            self.warn(f"{name}: perf script gave {g['samples']} samples, perf report "
                      f"{m['total_samples']}")
        if blocks:
            g["busy_ns_per_block_with_gaps"] = (m["busy_ns"] + g["missed_busy_ns"]) / blocks
        if m["lost_samples"]:
            self.warn(f"{name}: perf lost {m['lost_samples']} samples")
        # fewer samples than cpus x seconds x freq: time the vCPUs were not
        # sampled (see sampling_gaps); more: the period is not what it seems
        if m.get("sample_ratio") is not None and not 0.75 < m["sample_ratio"] < 1.05:
            self.warn(f"{name}: {m['total_samples']} samples, {m['sample_ratio']:.2f} x "
                      f"what {cpus} cpus x {secs:.1f} s x {k['freq']} Hz give")
        for path in (data, fio_json):
            os.unlink(path)
        log(f"{name}: {m['blocks']} blocks, busy {_f(m['busy_ns_per_block'], '.0f')} ns/block, "
            f"own {_f(m['own']['ns_per_block'], '.0f')}, checksum "
            f"{_f(m['checksum']['ns_per_block'], '.0f')} (whole run: busy "
            f"{_f(res['whole']['busy_ns_per_block'], '.0f')}), {time.monotonic() - t0:.0f} s")
        return res

    def teardown(self):
        sh("udevadm", "settle", check=False)
        for n in (self.LINEAR, self.REMAP):
            sh("dmsetup", "remove", "--retry", n, check=False)
        for md in (self.A, self.B):
            sh("mdadm", "--stop", md, check=False)
        sh("udevadm", "settle", check=False)
        for what, fn in reversed(self.undo):
            try:
                fn()
            except Exception as e:      # noqa: BLE001 - teardown goes on
                log(f"teardown: {what}: {e}")
        self.undo = []
        for _ in range(50):
            if self.k["media"] or \
               subprocess.run(["rmmod", "brd"], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        sh("rmmod", "dm-remap", check=False)


def main():
    k = knobs()
    out = ENV("DMR_OUT", "/tmp")
    raw = os.path.join(out, "raw")
    os.makedirs(raw, exist_ok=True)
    start = time.monotonic()
    # root may sample everything and read kernel (and module) addresses;
    # no throttling of the sampling interrupt (TCG makes it look slow)
    for path, val in (("/proc/sys/kernel/perf_event_paranoid", "-1"),
                      ("/proc/sys/kernel/kptr_restrict", "0"),
                      ("/proc/sys/kernel/perf_cpu_time_max_percent", "0")):
        try:
            with open(path, "w") as f:
                f.write(val)
        except OSError as e:
            log(f"cannot set {path}: {e}")
    rig = Rig(k)
    rig.setup()
    runs = []
    try:
        for d in k["devices"]:
            rig.fill(d)
        for w in k["workloads"]:
            for d in k["devices"]:
                runs.append(rig.measure(w, d, raw))
    finally:
        rig.teardown()
    pre = k["precondition"]
    state = (f"steady state: sequential fill, then {pre:g} x the capacity of random "
             "4 KiB writes (libaio, queue depth 32), GC idle before each measurement"
             if pre else "fresh: sequential fill only, no random preconditioning "
             "(GC may start during the write measurement)")
    res = {"kernel": platform.release(), "cpus": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "knobs": k,
           "perf": sh("perf", "--version", check=False).stdout.strip(),
           "setup": {"label": rig.label, "region_bytes": rig.region, "state": state},
           "idle_symbol_set": sorted(IDLE_SYMBOLS),
           "runs": runs, "workloads_ratio": ratios(runs), "warnings": rig.warnings,
           "elapsed_s": round(time.monotonic() - start)}
    text = render(res)
    print("\n" + text)
    with open(os.path.join(out, "profile.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "profile.json"), "w") as f:
        json.dump(res, f, indent=1)
    log(f"results in {out} ({res['elapsed_s']} s)")


if __name__ == "__main__":
    main()
