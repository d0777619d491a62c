"""The kernel module's files form a stack (issue 40): each calls only the
files below it, and the pure code.  The stack is the one dmr.h states at
its top; this reads it from there, strips comments and strings from the
kernel glue, and finds every use of a function another glue file defines.

A mechanism that needs work from above returns the need to the worker
(dmr_worker_next() schedules it), so a call upwards, or sideways within a
layer (GC and the checkpoint calling each other), is a defect here.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
MOD = ROOT / "dm-remap"

# the pure code: compiled in userspace too, so it can call no glue
PURE = {"dmr-map.c", "dmr-policy.c", "dmr-log.c", "dmr-writer.c",
        "dmr-format.c", "dmr-table.c"}
TESTS = re.compile(r"-test\.c$|^dmr-test\.c$")


def stack():
    """{file: layer} from dmr.h's 'layer N: files' lines."""
    text = (MOD / "dmr.h").read_text()
    layers = {}
    for n, files in re.findall(r"^ \*\s+layer (\d+): (.*)$", text, re.M):
        for f in files.split():
            layers[f] = int(n)
    return layers


def strip(src):
    """C source without comments and string literals, lines kept."""
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src,
                 flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', src)


DEF = re.compile(r"^(?!static\b)[a-z][\w \*]*?\b(dmr_\w+)\([^;{]*\)\s*\{", re.M)


def calls(layers):
    """(caller file, line, callee, callee file) for every cross-file use."""
    src = {f: strip((MOD / f).read_text()) for f in layers}
    defs = {}
    for f, s in src.items():
        for m in DEF.finditer(s):
            defs[m.group(1)] = f
    out = []
    for f, s in src.items():
        for m in re.finditer(r"\bdmr_\w+\b", s):
            d = defs.get(m.group(0))
            if d and d != f:
                out.append((f, s[:m.start()].count("\n") + 1, m.group(0), d))
    return defs, out


def test_every_glue_file_has_its_layer():
    layers = stack()
    assert len(set(layers.values())) >= 6, layers
    glue = {p.name for p in MOD.glob("dmr*.c")} - PURE
    glue = {f for f in glue if not TESTS.search(f)}
    assert glue == set(layers), "files outside the stack dmr.h states"


def test_calls_go_only_down_the_stack():
    layers = stack()
    defs, uses = calls(layers)
    # the scan sees what it checks: the worker's mechanisms are found
    assert defs.get("dmr_checkpoint") == "dmr-ckpt.c"
    assert defs.get("dmr_gc_run") == "dmr-gc.c"
    assert defs.get("dmr_map_trim") == "dmr-page.c"
    assert any(c == "dmr-worker.c" and d == "dmr-gc.c" for c, _, _, d in uses)
    bad = [f"{c}:{line} (layer {layers[c]}) uses {fn} of {d} (layer {layers[d]})"
           for c, line, fn, d in uses if layers[d] <= layers[c]]
    print(f"{len(uses)} cross-file uses in {len(layers)} files, "
          f"{len(bad)} not downwards")
    assert not bad, "\n".join(bad)


def test_the_scan_finds_a_call_upwards(tmp_path, monkeypatch):
    """The check itself: a call from the map pages up to the checkpoint,
    as dmr_map_trim() made before issue 40's structure, is reported."""
    for p in MOD.glob("dmr*.[ch]"):
        (tmp_path / p.name).write_text(p.read_text())
    page = tmp_path / "dmr-page.c"
    page.write_text(page.read_text() +
                    "\nvoid dmr_x(struct dmr_target *rc)\n{\n"
                    "\tdmr_checkpoint(rc, false);\n}\n")
    monkeypatch.setattr(__import__(__name__), "MOD", tmp_path)
    layers = stack()
    _, uses = calls(layers)
    up = [u for u in uses if layers[u[3]] <= layers[u[0]]]
    assert [(c, fn) for c, _, fn, _ in up] == [("dmr-page.c", "dmr_checkpoint")]
