# SPDX-License-Identifier: GPL-2.0-only
"""Documentation/dm-remap.rst against the module's sources in dm-remap/.

Five things the admin guide lists must be exactly what the code does:

1. "The constructor refuses" table (Table line): the messages the
   constructor path can leave in ti->error, each with the errno it
   returns, in the order the constructor checks them.
2. "Messages": the message names dmr_message() accepts, with their
   argument counts.
3. "Status": the numbered fields, as many as dmr_status() emits for
   STATUSTYPE_INFO (conversions in its DMEMIT format strings), and by
   the names remapctl status prints them under (status_names[]).
4. "Optional arguments" (Table line): the keywords of dmr_opts[] in
   dmr-table.c, whether each takes a value, and the range where the doc
   gives one.
5. "Module parameters": the module_param_named() / module_param() names
   and their defaults.

How the constructor's messages are found.  The sources are read as text,
comments removed, and cut into functions (a "{" at file level after a
"name(params)" header).  From dmr_ctr() the calls are followed, depth
first in the order they appear, into every function defined in
dm-remap/*.c (not the KUnit files); a call to a function defined
elsewhere (dm core, the block layer) is not followed.  In each function
reached, an *error outlet* is ti->error, "*p" for a parameter declared
"const char **p", or a local "const char *v" whose address is passed on
(dmr_ctr()'s err).  Every assignment to an outlet is a *site*; its
right-hand side gives the messages:

- a string literal: that message;
- another outlet (ti->error = (char *)err): a forward, no message;
- a call: every "return "...";" of the function called (dmr_sb_strerror());
- a local "const char *" variable: what its own assignments give
  (why = dmr_gc_params_check(...));
- ARRAY[i]: every literal in that array's initializer (read_error[]);
- p->field: every ".field = "..."" initializer in the same file
  (dmr_opts[]'s err_dup, err_missing, err_invalid, err_range).

Anything else fails the test, so that a new way of setting ti->error is
taught here rather than missed.  A few strings those functions can return
are never reached from the constructor; UNREACHABLE names them, and the
test fails if one of them disappears from the code.

The errno of a site is found from the statements that follow it: the
first "return -EXXX;" or "x = -EXXX;" before the path leaves by "return"
or "goto" (an "else" branch after the site's block is skipped).  If the
path returns a variable (directly, or after a goto to a label whose path
returns one), its nearest assignment before the site says where the
value comes from: a constant, or a call.  A call to a function defined
here gives the -EXXX its body assigns or returns, plus what the
variables it returns were assigned from calls, recursively; a call to a
function defined elsewhere, a call through a pointer or a returned
structure field is "passed on" (the device's error, say).  An errno the
"if" around the site tests for with "!=" is taken out (dmr_load()
passes over -EILSEQ).  The doc's errno cell must then list exactly the
constant errnos when nothing is passed on, and, when something is,
say in words where it comes from and list every constant errno too.

Placeholders in the documented messages ("<option>", "<slot>") match one
word.  Every message must match exactly one documented row, and every
row must match a message.

The mutation tests at the end apply one edit to a copy of the doc or the
code and require the check concerned to fail: each check does detect the
drift it is there for.
"""
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = Path("Documentation") / "dm-remap.rst"
SRC = Path("dm-remap")

PASSED = "passed on"

# Strings the constructor's message sources can return but the constructor
# never sees, and why.
UNREACHABLE = {
    "ok": "dmr_sb_strerror(DMR_SB_OK): only called when no copy is valid",
    "unknown superblock error": "dmr_sb_strerror()'s default: every status is named",
    "GC batch must be at least 1":
        "dmr_gc_params_check(): the batch comes from dmr_gc_params_default(), at least 2",
    "GC reserve must cover GC's floor (2) and a batch":
        "dmr_gc_params_check(): the reserve comes from dmr_gc_params_default()",
}


# ---------------------------------------------------------------- C source

def strip_comments(src):
    """Comments replaced by a space, string and character literals kept."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * src.count("\n", i, j))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_literal(text, i):
    """Index after the string or character literal starting at @i."""
    q, j = text[i], i + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def match_close(text, i):
    """Index after the bracket closing the one at @i (literals skipped)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack, j = [pairs[text[i]]], i + 1
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = skip_literal(text, j)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")}]":
            assert c == stack.pop(), f"unbalanced {c!r} in source"
            if not stack:
                return j + 1
        j += 1
    raise AssertionError("unbalanced brackets in source")


class Func:
    def __init__(self, name, params, body, file_text):
        self.name, self.params, self.body, self.file_text = name, params, body, file_text


HEADER = re.compile(r"\b(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)\s*$", re.S)


def functions(root):
    """Every function defined in dm-remap/*.c but the KUnit files."""
    funcs = {}
    for path in sorted((root / SRC).glob("*.c")):
        if path.name.endswith("-test.c"):
            continue
        text = strip_comments(path.read_text())
        text = re.sub(r"^[ \t]*#.*$", "", text, flags=re.M)  # preprocessor lines
        i, last = 0, 0
        while i < len(text):
            c = text[i]
            if c in "\"'":
                i = skip_literal(text, i)
            elif c == "{":
                end = match_close(text, i)
                header = text[last:i]
                m = HEADER.search(header)
                if m and "=" not in header and not re.search(r"\b(struct|enum|union)\s+\w+\s*$", header):
                    funcs[m.group(1)] = Func(m.group(1), m.group(2), text[i:end], text)
                i = last = end
            elif c == ";":
                i += 1
                last = i
            else:
                i += 1
    return funcs


def calls_in_order(body, funcs):
    return [(m.start(), m.group(1)) for m in re.finditer(r"\b([a-z_]\w*)\s*\(", body)
            if m.group(1) in funcs]


def literals(text):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def errno_consts(text):
    """-EXXX the text assigns, returns or yields (not the ones it compares with)."""
    return {m.group(1) for m in re.finditer(r"(?<![=!]=)(?<![=!]=\s)(-E[A-Z0-9]+)\b", text)}


def assignments(body, var, before=None):
    """Right-hand sides of "var = ...;" in @body (before index @before)."""
    text = body if before is None else body[:before]
    return [(m.start(), m.group(1).strip())
            for m in re.finditer(r"(?<![\w>.*])" + re.escape(var) + r"\s*=(?!=)\s*([^;]+);", text)]


def call_errnos(funcs, callee, seen):
    """What a call to @callee may return: -EXXX constants, and PASSED for
    an error passed on from somewhere this test does not read."""
    if callee not in funcs:
        return {PASSED}
    if callee in seen:
        return set()
    seen.add(callee)
    body = funcs[callee].body
    out = errno_consts(body)
    for m in re.finditer(r"\breturn\s+([^;]+);", body):
        out |= value_errnos(funcs, body, m.group(1).strip(), m.start(), seen)
    return out


def value_errnos(funcs, body, expr, before, seen):
    """What returning @expr may return (-EXXX constants, PASSED)."""
    if re.fullmatch(r"-?\d+|-E[A-Z0-9]+|true|false|NULL", expr):
        return set()
    m = re.match(r"([a-z_]\w*)\s*\(", expr)
    if m:
        return call_errnos(funcs, m.group(1), seen)
    if re.fullmatch(r"[a-z_]\w*", expr):
        out = set()
        # the value returned is the one last assigned before the return
        for _, rhs in assignments(body, expr, before)[-1:]:
            out |= errno_consts(rhs)
            if rhs.startswith("-E") or re.fullmatch(r"-?\d+|\w+\s*[+-]\s*\d+", rhs):
                continue
            c = re.match(r"([a-z_]\w*)\s*\(", rhs)
            if c:
                out |= call_errnos(funcs, c.group(1), seen)
            elif re.search(r"->\s*\w+\s*\(", rhs):
                out.add(PASSED)        # a call through a pointer
        return out
    return {PASSED}                    # a field (rc->first_error), an expression


def enclosing_if(body, pos):
    """The condition of the "if" whose block holds @pos, or ""."""
    depth, j = 0, pos
    while j > 0:
        j -= 1
        if body[j] == "}":
            depth += 1
        elif body[j] == "{":
            if depth == 0:
                head = body[:j].rstrip()
                if head.endswith(")"):
                    k = len(head) - 1
                    d = 0
                    while k >= 0:
                        d += head[k] == ")"
                        d -= head[k] == "("
                        if d == 0:
                            break
                        k -= 1
                    if re.search(r"\bif\s*$", head[:k]):
                        return head[k + 1:-1]
                return ""
            depth -= 1
    return ""


def path_end(body, start):
    """From @start (after a site), the first errno constant set, and how
    the path leaves: ("const", E), ("return", EXPR) or ("goto", LABEL)."""
    i, depth = start, 0
    token = re.compile(r"\breturn\s+([^;]+);|\bgoto\s+(\w+)\s*;|\b\w+\s*=\s*(-E[A-Z0-9]+)\s*;|[{}]")
    while True:
        m = token.search(body, i)
        assert m, "a constructor path that never returns"
        i = m.end()
        if m.group(0) == "{":
            depth += 1
        elif m.group(0) == "}":
            depth -= 1
            if depth < 0:              # left the site's block: skip an else branch
                depth = 0
                e = re.match(r"\s*else\b\s*", body[i:])
                if e:
                    i += e.end()
                    if body[i] == "{":
                        i = match_close(body, i)
                    else:
                        i = body.index(";", i) + 1
        elif m.group(3):
            return ("const", m.group(3))
        elif m.group(1) is not None:
            expr = m.group(1).strip()
            if expr.startswith("-E"):
                return ("const", expr)
            return ("return", expr)
        else:
            return ("goto", m.group(2))


def site_errnos(funcs, f, pos, end):
    kind, what = path_end(f.body, end)
    if kind == "const":
        return {what}
    if kind == "goto":
        label = re.search(r"^\s*" + re.escape(what) + r"\s*:", f.body, re.M)
        assert label, f"{f.name}: no label {what}"
        kind, what = path_end(f.body, label.end())
        if kind == "const":
            return {what}
        assert kind == "return", f"{f.name}: path after {what} does not return"
    if re.fullmatch(r"[a-z_]\w*", what):
        prev = assignments(f.body, what, pos)
        assert prev, f"{f.name}: {what} returned before it is set"
        rhs = prev[-1][1]
        if re.fullmatch(r"-E[A-Z0-9]+", rhs):
            out = {rhs}
        else:
            c = re.match(r"([a-z_]\w*)\s*\(", rhs)
            out = call_errnos(funcs, c.group(1), set()) if c else {PASSED}
    else:
        out = value_errnos(funcs, f.body, what, pos, set())
    out -= set(re.findall(r"!=\s*(-E[A-Z0-9]+)", enclosing_if(f.body, pos)))
    return out


def ternary_arms(expr):
    """The two arms of a top-level "c ? a : b", or None."""
    depth, q, i = 0, None, 0
    while i < len(expr):
        c = expr[i]
        if c in "\"'":
            i = skip_literal(expr, i)
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and c == "?" and q is None:
            q = i
        elif depth == 0 and c == ":" and q is not None:
            return [expr[q + 1:i].strip(), expr[i + 1:].strip()]
        i += 1
    return None


def message_sources(funcs, f, rhs, outlet_vars, pos):
    """The messages an outlet assignment's right-hand side can set, or
    None for a forward of another outlet."""
    rhs = re.sub(r"^\(\s*(?:const\s+)?char\s*\*\s*\)\s*", "", rhs.strip())
    arms = ternary_arms(rhs)
    if arms:
        return sum((message_sources(funcs, f, a, outlet_vars, pos) or [] for a in arms), [])
    if rhs.startswith('"'):
        return ["".join(literals(rhs))]
    if rhs == "NULL" or rhs in outlet_vars:
        return None
    m = re.fullmatch(r"([a-z_]\w*)\s*\(.*\)", rhs, re.S)
    if m and m.group(1) in funcs:
        return [lit for lit in re.findall(r'\breturn\s+"((?:[^"\\]|\\.)*)"\s*;',
                                          funcs[m.group(1)].body)]
    m = re.fullmatch(r"(\w+)\s*\[[^\]]*\]", rhs)
    if m:
        init = re.search(re.escape(m.group(1)) + r"\s*\[[^\]]*\]\s*=\s*\{([^}]*)\}", f.body) or \
            re.search(re.escape(m.group(1)) + r"\s*\[[^\]]*\]\s*=\s*\{([^}]*)\}", f.file_text)
        assert init, f"{f.name}: no initializer of {m.group(1)}"
        return literals(init.group(1))
    m = re.fullmatch(r"\w+\s*->\s*(\w+)", rhs)
    if m:
        found = re.findall(r"\." + m.group(1) + r'\s*=\s*"((?:[^"\\]|\\.)*)"', f.file_text)
        assert found, f"{f.name}: no .{m.group(1)} initializer in its file"
        return found
    if re.fullmatch(r"[a-z_]\w*", rhs):
        out = []
        for _, r2 in assignments(f.body, rhs, pos):
            got = message_sources(funcs, f, r2, outlet_vars, pos)
            out += got or []
        assert out, f"{f.name}: cannot tell what {rhs} holds"
        return out
    raise AssertionError(f"{f.name}: cannot tell what message '{rhs}' sets; "
                         "teach tests/host/test_docs.py")


def ctr_errors(root):
    """[(message, {errno or PASSED})] in the order the constructor path
    sets them (the first time each is met)."""
    funcs = functions(root)
    assert "dmr_ctr" in funcs, "no dmr_ctr() in dm-remap/*.c"
    found, order, visited = {}, [], set()

    def walk(name):
        visited.add(name)
        f = funcs[name]
        outlets = ["ti->error"]
        outlets += ["*" + p for p in re.findall(r"const\s+char\s*\*\*\s*(\w+)", f.params)]
        local = [v for v in re.findall(r"const\s+char\s*\*\s*(\w+)", f.body)
                 if re.search(r"&\s*" + v + r"\b", f.body)]
        events = []
        for o in outlets + local:
            pat = (r"\*\s*" + re.escape(o[1:]) if o.startswith("*") else
                   r"(?<![\w>.*])" + re.escape(o))
            for m in re.finditer(r"(?<![*\w])" + pat + r"\s*=(?!=)\s*([^;]+);", f.body):
                events.append((m.start(), "site", m))
        events += [(p, "call", c) for p, c in calls_in_order(f.body, funcs)]
        for pos, kind, what in sorted(events, key=lambda e: e[0]):
            if kind == "call":
                if what not in visited:
                    walk(what)
                continue
            msgs = message_sources(funcs, f, what.group(1), local, pos)
            if msgs is None:
                continue
            errs = site_errnos(funcs, f, what.start(), what.end())
            for msg in msgs:
                if msg not in found:
                    found[msg] = set()
                    order.append(msg)
                found[msg] |= errs

    walk("dmr_ctr")
    return [(m, found[m]) for m in order]


def dmr_status_conversions(root):
    f = functions(root)["dmr_status"]
    info = f.body[f.body.index("case STATUSTYPE_INFO:"):]
    info = info[:info.index("case STATUSTYPE_", 1)]
    n = 0
    for m in re.finditer(r"\bDMEMIT\s*\(", info):
        args = info[m.end() - 1:match_close(info, m.end() - 1)]
        fmt = "".join(literals(re.match(r'\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', args).group(1)))
        fmt = fmt.replace("%%", "")
        n += len(re.findall(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|t|j)?[diouxXcspeEfgG]", fmt))
    return n


def dmr_messages(root):
    """{name: number of arguments} dmr_message() accepts."""
    body = functions(root)["dmr_message"].body
    out = {}
    for m in re.finditer(r"\bif\s*\(", body):
        if body[:m.start()].count("{") - body[:m.start()].count("}") != 1:
            continue                   # not a top-level test of the message
        cond = body[m.end() - 1:match_close(body, m.end() - 1)]
        names = re.findall(r'strcasecmp\(\s*argv\[0\]\s*,\s*"(\w+)"\s*\)', cond)
        if not names:
            continue
        argc = re.search(r"\bargc\s*==\s*(\d+)", cond)
        assert argc, f"message {names}: no argument count in '{cond}'"
        for name in names:
            out[name] = int(argc.group(1)) - 1
    return out


def c_defines(root):
    defs = {}
    for path in (root / SRC).glob("*.h"):
        for name, val in re.findall(r"^#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)U?L*\b",
                                    path.read_text(), re.M):
            defs[name] = int(val, 0)
    return defs


def table_options(root):
    """{keyword: (takes a value, min, max)} of dmr_opts[] in dmr-table.c."""
    text = strip_comments((root / SRC / "dmr-table.c").read_text())
    start = re.search(r"\bdmr_opts\s*\[[^\]]*\]\s*=\s*\{", text)
    assert start, "no dmr_opts[] in dmr-table.c"
    init = text[start.end() - 1:match_close(text, start.end() - 1)]
    defs = c_defines(root)

    def num(v):
        lit = re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)[UuLl]*", v.strip())
        return int(lit.group(1), 0) if lit else defs[v.strip()]
    out = {}
    for m in re.finditer(r"\[\s*\w+\s*\]\s*=\s*\{", init):
        entry = init[m.end() - 1:match_close(init, m.end() - 1)]
        name = re.search(r'\.name\s*=\s*"(\w+)"', entry).group(1)
        nv = re.search(r"\.nr_values\s*=\s*(\d+)", entry)
        lo = re.search(r"\.min\s*=\s*(\w+)", entry)
        hi = re.search(r"\.max\s*=\s*(\w+)", entry)
        out[name] = (int(nv.group(1)) if nv else 0,
                     num(lo.group(1)) if lo else None, num(hi.group(1)) if hi else None)
    return out


def module_params(root):
    """{name: default} of module_param_named() / module_param()."""
    out = {}
    for path in sorted((root / SRC).glob("*.c")):
        if path.name.endswith("-test.c"):
            continue
        text = strip_comments(path.read_text())
        params = re.findall(r"\bmodule_param_named\s*\(\s*(\w+)\s*,\s*(\w+)\s*,", text)
        params += [(v, v) for v in re.findall(r"\bmodule_param\s*\(\s*(\w+)\s*,", text)]
        for name, var in params:
            decl = re.search(r"^[\w \t]*\b" + var + r"\s*(?:=\s*([^;]+))?;", text, re.M)
            assert decl, f"module parameter {name}: no definition of {var}"
            # static: zero (false for a bool)
            val = decl.group(1).strip() if decl.group(1) else \
                ("false" if re.search(r"\bbool\b", decl.group(0)) else "0")
            # a bool parameter reads back (sysfs, modinfo) as Y or N
            out[name] = {"true": "Y", "false": "N"}.get(val, val)
    return out


# ---------------------------------------------------------------- the doc

def doc_sections(root):
    """{title: text} of dm-remap.rst's sections ("=" underlines)."""
    text = (root / DOC).read_text()
    heads = [m for m in re.finditer(r"^([^\n=][^\n]*)\n(=+)\n", text, re.M)
             if len(m.group(2)) >= len(m.group(1).rstrip())]
    return {m.group(1).strip(): text[m.end():heads[i + 1].start() if i + 1 < len(heads) else None]
            for i, m in enumerate(heads)}


def simple_table(text):
    """Rows of the first reST simple table in @text, cells joined across
    continuation lines (a blank first column)."""
    lines = text.split("\n")
    border = [i for i, line in enumerate(lines) if re.fullmatch(r"=+( +=+)+ *", line)]
    assert len(border) >= 3, "no simple table"
    cols = [m.start() for m in re.finditer(r"=+", lines[border[0]])]
    rows = []
    for line in lines[border[1] + 1:border[2]]:
        cells = [line[a:b].strip() for a, b in zip(cols, cols[1:] + [None])]
        if line[:cols[1]].strip():
            rows.append(cells)
        else:
            assert rows, "a continuation line before the first row"
            rows[-1] = [(x + " " + y).strip() for x, y in zip(rows[-1], cells)]
    return rows


def documented_ctr_errors(root):
    table = doc_sections(root)["Table line"]
    table = table[table.index("The constructor refuses"):]
    return [(m, e) for m, e, *_ in simple_table(table)]


def definition_terms(text):
    """The terms (lines at column 0 starting with ``, followed by an
    indented line) of the definition lists in @text."""
    lines = text.split("\n")
    return [line for line, nxt in zip(lines, lines[1:] + [""])
            if line.startswith("``") and nxt.startswith(" ") and nxt.strip()]


def term_names(term):
    """[(name, number of <value> placeholders)] of a term line."""
    return [(m.group(1), len(re.findall(r"<[^>]+>", m.group(2))))
            for m in re.finditer(r"``(\w+)((?: <[^>`]+>)*)``", term)]


def documented_messages(root):
    out = {}
    for term in definition_terms(doc_sections(root)["Messages"]):
        out.update(term_names(term))
    return out


def documented_options(root):
    sec = doc_sections(root)["Table line"]
    sec = sec[sec.index("Optional arguments:"):sec.index("The constructor refuses")]
    out = {}
    for term in definition_terms(sec):
        rng = re.search(r"range (\d+) to (\d+)", term)
        for name, nv in term_names(term):
            out[name] = (nv, tuple(map(int, rng.groups())) if rng else None)
    return out


def documented_status_fields(root):
    items = re.findall(r"^(\d+)\. ``(\w+)``", doc_sections(root)["Status"], re.M)
    assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)), items
    return [name for _, name in items]


def documented_module_params(root):
    out = {}
    for term in definition_terms(doc_sections(root).get("Module parameters", "")):
        default = re.search(r"\(default: ([^,)]+)", term)
        for name, _ in term_names(term):
            out[name] = default.group(1).strip() if default else None
    return out


# ---------------------------------------------------------------- checks

def placeholder_regex(doc_msg):
    """A documented message as a regex: a placeholder matches one word,
    or itself (the code's own "<dev>")."""
    out, last = "", 0
    for m in re.finditer(r"<[^>]+>", doc_msg):
        out += re.escape(doc_msg[last:m.start()]) + r"(?:\w+|" + re.escape(m.group(0)) + ")"
        last = m.end()
    return re.compile(out + re.escape(doc_msg[last:]))


def check_ctr_errors(root):
    code = ctr_errors(root)
    msgs = [m for m, _ in code]
    for s, why in UNREACHABLE.items():
        assert s in msgs, (f"'{s}' is no longer among the constructor's message sources "
                           f"({why}): take it out of UNREACHABLE")
    code = [(m, e) for m, e in code if m not in UNREACHABLE]
    doc = documented_ctr_errors(root)
    names = [m for m, _ in doc]
    assert len(set(names)) == len(names), "a message documented twice"
    rx = [placeholder_regex(m) for m in names]
    hits = {i: [] for i in range(len(doc))}
    for msg, errs in code:
        rows = [i for i, r in enumerate(rx) if r.fullmatch(msg)]
        assert rows, f"constructor message not documented: '{msg}'"
        assert len(rows) == 1, f"'{msg}' matches {[names[i] for i in rows]}"
        hits[rows[0]].append((msg, errs))
    for i, (name, cell) in enumerate(doc):
        assert hits[i], f"documented constructor message the code never sets: '{name}'"
        errs = set().union(*(e for _, e in hits[i]))
        consts = errs - {PASSED}
        cell_errnos = set(re.findall(r"-E[A-Z0-9]+", cell))
        prose = re.sub(r"``-E[A-Z0-9]+``|-E[A-Z0-9]+|\bor\b|[(),]", "", cell).strip()
        if PASSED in errs:
            assert prose and consts <= cell_errnos, (
                f"'{name}': errno passed on from a call (and {sorted(consts)}); "
                f"the doc says '{cell}'")
        else:
            assert not prose and cell_errnos == consts, (
                f"'{name}': the code returns {sorted(consts)}, the doc says '{cell}'")
    first = []
    for msg, _ in code:
        row = next(i for i, r in enumerate(rx) if r.fullmatch(msg))
        if row not in first:
            first.append(row)
    assert [names[i] for i in first] == names, (
        "the table is not in the order the constructor checks: "
        + ", ".join(names[i] for i in first))


def check_messages(root):
    doc, code = documented_messages(root), dmr_messages(root)
    assert doc == code, f"messages (name: arguments): documented {doc}, dmr_message() {code}"


def remapctl_status_names(root):
    text = strip_comments((root / "tools" / "remapctl.c").read_text())
    m = re.search(r"\bstatus_names\s*\[\s*\]\s*=\s*\{([^}]*)\}", text)
    assert m, "no status_names[] in tools/remapctl.c"
    return literals(m.group(1))


def check_status_fields(root):
    doc, code = documented_status_fields(root), dmr_status_conversions(root)
    assert len(doc) == code, f"{len(doc)} status fields documented, dmr_status() emits {code}"
    names = remapctl_status_names(root)
    assert names == doc, f"remapctl's status_names[] {names} are not the documented {doc}"


def check_table_options(root):
    code, doc = table_options(root), documented_options(root)
    doc_v = {n: v for n, (v, _) in doc.items()}
    code_v = {n: v for n, (v, _, _) in code.items()}
    assert doc_v == code_v, (f"table options (name: values): documented {doc_v}, "
                             f"dmr_opts[] {code_v}")
    for name, (_, rng) in doc.items():
        if rng:
            assert rng == code[name][1:], f"{name}: range {rng} documented, {code[name][1:]} in code"


def check_module_params(root):
    doc, code = documented_module_params(root), module_params(root)
    assert doc == code, f"module parameters (name: default): documented {doc}, code {code}"


CHECKS = [check_ctr_errors, check_messages, check_status_fields,
          check_table_options, check_module_params]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_doc_matches_code(check):
    check(REPO)


def test_extraction_finds_what_it_should():
    """Guards the extraction itself against finding too little."""
    errs = dict(ctr_errors(REPO))
    assert errs["Device lookup failed"] == {PASSED}
    assert errs["Device is in use by another dm-remap mapped device"] == {"-EBUSY"}
    assert errs["Superblock read failed"] == {"-EIO"}
    assert errs["unsupported format version"] == {"-EINVAL"}
    assert errs["Cannot create the workqueue"] == {"-ENOMEM"}
    assert errs["Duplicate optional argument zero_copy"] == {"-EINVAL"}
    assert errs["I/O error reading checkpoint slot 1"] == {"-EIO", PASSED}
    assert len(errs) >= 50
    assert dmr_status_conversions(REPO) >= 30
    assert {"checkpoint", "clear_stats", "gc_low", "gc_high"} <= set(dmr_messages(REPO))


# ---------------------------------------------------------------- mutations

def _sub(path, old, new, count=1):
    def edit(root):
        p = root / path
        t = p.read_text()
        assert t.count(old) >= 1, f"mutation no longer applies: {old!r} in {path}"
        p.write_text(t.replace(old, new, count))
    return edit


MUTATIONS = {
    # constructor errors
    "doc: a message reworded": (check_ctr_errors, _sub(
        DOC, "Superblock read failed ", "Superblock reading failed")),
    "doc: an errno changed": (check_ctr_errors, _sub(
        DOC, "Device is in use by another dm-remap mapped device              ``-EBUSY`` ",
        "Device is in use by another dm-remap mapped device              ``-EINVAL``")),
    "doc: a row dropped": (check_ctr_errors, _sub(
        DOC, "Cannot create the bio set                                       ``-ENOMEM``             out of memory\n", "")),
    "doc: a passed-on errno given as a constant": (check_ctr_errors, _sub(
        DOC, "dm_get_device()'s     ", "``-ENODEV``           ")),
    "doc: two rows swapped": (check_ctr_errors, lambda root: _swap_rows(root)),
    "code: a new refusal": (check_ctr_errors, _sub(
        SRC / "dmr-target.c", '\tif (ti->len & (DMR_SECTORS_PER_BLOCK - 1)) {',
        '\tif (!ti->len) {\n\t\tti->error = "Target length is zero";\n\t\treturn -EINVAL;\n\t}\n'
        '\tif (ti->len & (DMR_SECTORS_PER_BLOCK - 1)) {')),
    "code: an errno changed": (check_ctr_errors, _sub(
        SRC / "dmr-io.c", '*error = "Cannot create the bio set";\n\t\treturn -ENOMEM;',
        '*error = "Cannot create the bio set";\n\t\treturn -EIO;')),
    "code: an errno changed through a goto": (check_ctr_errors, _sub(
        SRC / "dmr-metadata.c", '*error = "Superblock read failed";\n\t\t\tr = -EIO;',
        '*error = "Superblock read failed";\n\t\t\tr = -ENXIO;')),
    "code: a passed-on errno made a constant": (check_ctr_errors, _sub(
        SRC / "dmr-target.c", 'ti->error = "Device lookup failed";',
        'ti->error = "Device lookup failed";\n\t\tr = -ENODEV;')),
    "code: an errno changed in the callee": (check_ctr_errors, _sub(
        SRC / "dmr-target.c", "r = -EBUSY;", "r = -EEXIST;")),
    "code: a parser message reworded": (check_ctr_errors, _sub(
        SRC / "dmr-table.c", '"Missing value for gc_high"', '"No value for gc_high"')),
    "code: a watermark check added": (check_ctr_errors, _sub(
        SRC / "dmr-policy.c", '\tif (p->high > high_max)',
        '\tif (p->low > high_max)\n\t\treturn "gc_low is above what the spare space can hold";\n'
        '\tif (p->high > high_max)')),
    "code: an unreachable string removed": (check_ctr_errors, _sub(
        SRC / "dmr-format.c", 'return "unknown superblock error";', 'return "ok";')),
    # messages
    "doc: a message undocumented": (check_messages, _sub(
        DOC, "\n``clear_stats``\n", "\n``clear-stats``\n")),
    "code: a new message": (check_messages, _sub(
        SRC / "dmr-target.c", 'if (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {',
        'if (argc == 1 && !strcasecmp(argv[0], "flush")) {\n\t\treturn 0;\n\t}\n'
        '\tif (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {')),
    "code: a message takes an argument": (check_messages, _sub(
        SRC / "dmr-target.c", 'argc == 1 && !strcasecmp(argv[0], "checkpoint")',
        'argc == 2 && !strcasecmp(argv[0], "checkpoint")')),
    # status
    "code: a status field added": (check_status_fields, _sub(
        SRC / "dmr-target.c", '" %s %u %u %u %u %lld %lld %lld %lld %s %s %lld %lld %lld",',
        '" %s %u %u %u %u %lld %lld %lld %lld %s %s %lld %lld %lld %u",')),
    "doc: a status field dropped": (check_status_fields, lambda root: _drop_last_field(root)),
    "doc: a status field renamed": (check_status_fields, _sub(
        DOC, "28. ``device_flushes``", "28. ``device_flush``")),
    # table options
    "doc: an option dropped": (check_table_options, _sub(
        DOC, "``no_discard_passdown``\n", "``no-discard-passdown``\n")),
    "doc: a range changed": (check_table_options, _sub(
        DOC, "(default: 30, range 1 to 86400)", "(default: 30, range 1 to 3600)")),
    "code: an option added": (check_table_options, _sub(
        SRC / "dmr-table.c", '\t[DMR_OPT_ZERO_COPY] = {\n\t\t.name = "zero_copy",',
        '\t[DMR_OPT_ZERO_COPY] = {\n\t\t.name = "zero_copy_all",')),
    "code: a flag takes a value": (check_table_options, _sub(
        SRC / "dmr-table.c", '.name = "ignore_discard",', '.name = "ignore_discard",\n\t\t.nr_values = 1,')),
    # module parameters
    "doc: a default changed": (check_module_params, _sub(
        DOC, "``fault_flight_fail`` (default: 0)", "``fault_flight_fail`` (default: 1)")),
    "code: a parameter added": (check_module_params, _sub(
        SRC / "dmr-write.c",
        "module_param_named(fault_flight_fail, dmr_fault_flight_fail, uint, 0600);",
        "module_param_named(fault_flight_fail, dmr_fault_flight_fail, uint, 0600);\n"
        "static bool dmr_gc_off;\nmodule_param_named(gc_off, dmr_gc_off, bool, 0644);")),
    "code: a default changed": (check_module_params, _sub(
        SRC / "dmr-write.c", "static unsigned int dmr_fault_flight_fail;",
        "static unsigned int dmr_fault_flight_fail = 2;")),
}


def _swap_rows(root):
    p = root / DOC
    lines = p.read_text().split("\n")
    a = next(i for i, line in enumerate(lines) if line.startswith("Too many arguments "))
    lines[a], lines[a - 1] = lines[a - 1], lines[a]
    p.write_text("\n".join(lines))


def _drop_last_field(root):
    p = root / DOC
    t = p.read_text()
    last = max(int(n) for n in re.findall(r"^(\d+)\. ``", doc_sections(root)["Status"], re.M))
    i = t.index(f"\n{last}. ``")
    j = t.index("\n\n", i)
    p.write_text(t[:i] + t[j:])


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory):
    base = tmp_path_factory.mktemp("tree")
    shutil.copytree(REPO / SRC, base / SRC, ignore=shutil.ignore_patterns("*.o", "*.ko", ".*"))
    (base / "tools").mkdir()
    shutil.copy(REPO / "tools" / "remapctl.c", base / "tools" / "remapctl.c")
    (base / DOC).parent.mkdir()
    shutil.copy(REPO / DOC, base / DOC)
    return base


@pytest.mark.parametrize("name", MUTATIONS)
def test_mutation_is_caught(name, tree_copy, tmp_path):
    check, mutate = MUTATIONS[name]
    root = tmp_path / "t"
    shutil.copytree(tree_copy, root)
    check(root)                        # the copy passes before the edit
    mutate(root)
    with pytest.raises(AssertionError):
        check(root)


def test_transcript_is_a_run_of_this_tree():
    """Documentation/dm-remap-transcript.txt comes from `make transcript`
    (a real run in the VM): every status line in it has the documented
    number of fields, and the memory remapctl format printed for its
    device is what dmr_map_memory_bytes() gives today (remapctl format of
    an image of the same size), so a change to either shows up here until
    the transcript is made again."""
    import subprocess
    import tempfile
    text = (REPO / "Documentation" / "dm-remap-transcript.txt").read_text()
    assert "make transcript" in text
    fields = documented_status_fields(REPO)
    lines = [ln.split() for ln in text.splitlines() if " remap write " in ln]
    assert len(lines) >= 2, text
    for words in lines:
        assert len(words) == 3 + len(fields), (len(words) - 3, len(fields), words)
    shown = next(ln for ln in text.splitlines() if ln.startswith("kernel memory when loaded"))
    with tempfile.TemporaryDirectory() as d:
        img = Path(d) / "ram0.img"
        with open(img, "wb") as f:
            f.truncate(512 << 20)
        p = subprocess.run([str(REPO / "tools" / "remapctl"), "format", str(img)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    assert shown in p.stdout, (shown, p.stdout)
