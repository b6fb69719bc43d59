#!/usr/bin/env python3
"""The shape of the library and binary code under crates/*/src (goodput issue 18):

- files over FILE_MAX (600) lines of non-test code (the lines before a file's
  `#[cfg(test)] mod`; files named tests.rs are left out);
- functions over FN_MAX (120) lines, from `fn` to its closing brace;
- pairs of sibling modules of a crate that name each other (`crate::a::…` in
  b and `crate::b::…` in a, or `super::` siblings), comments and tests left out;
- library functions (all crates but `goodput`, the binary) whose `Result`
  has `String` or `&str` for its error.

Usage: scripts/code_shape.py [REPO_ROOT]. Exits 1 when anything is found.
"""
import glob
import os
import re
import sys

FILE_MAX = int(os.environ.get("FILE_MAX", 600))
FN_MAX = int(os.environ.get("FN_MAX", 120))
root = os.path.normpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
TEST_MOD = re.compile(r"(pub(\([^)]*\))? )?mod ")
FN = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def non_test(lines):
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and TEST_MOD.match(lines[i + 1]):
            return lines[:i]
    return lines


def sources():
    for f in sorted(glob.glob(f"{root}/crates/*/src/**/*.rs", recursive=True)):
        if not f.endswith("/tests.rs"):
            yield os.path.relpath(f, root), non_test(open(f, encoding="utf-8").read().split("\n"))


def long_functions(f, lines):
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        k = i
        while k < len(lines) and "{" not in lines[k] and not lines[k].rstrip().endswith(";"):
            k += 1
        if k >= len(lines) or "{" not in lines[k] or lines[k].count("{") == lines[k].count("}"):
            i = k + 1
            continue
        j = k + 1
        while j < len(lines) and lines[j].rstrip() != m.group(1) + "}":
            j += 1
        if j - i + 1 > FN_MAX:
            yield j - i + 1, f"{f}:{i + 1} {m.group(7)}"
        i += 1


def string_errors(f, text):
    for m in re.finditer(r"\bfn\s+\w+[^{;]*?->\s*Result<", text):
        j, depth = m.end(), 1
        while depth and j < len(text):
            depth += {"<": 1, ">": -1}.get(text[j], 0)
            j += 1
        args, d, cut = text[m.end():j - 1], 0, -1
        for k, c in enumerate(args):
            d += 1 if c in "<([" else -1 if c in ">)]" else 0
            if c == "," and d == 0:
                cut = k
        if cut >= 0 and args[cut + 1:].strip() in ("String", "&'static str", "&str"):
            yield f"{f}:{text[:m.start()].count(chr(10)) + 1} {text[m.start():j].splitlines()[0]}"


big_files, big_fns, strings, deps = [], [], [], {}
for f, lines in sources():
    if len(lines) > FILE_MAX:
        big_files.append((len(lines), f))
    big_fns.extend(long_functions(f, lines))
    code = "\n".join(line.split("//")[0] for line in lines)
    if not f.startswith("crates/goodput/"):
        strings.extend(string_errors(f, code))
    crate, rel = f.split("/src/", 1)
    me = rel[:-3].split("/")
    if me[-1] in ("mod", "lib", "main"):
        me = me[:-1]
    refs = {tuple(m.group(1).split("::")) for m in re.finditer(r"crate::((?:\w+::)*\w+)", code)}
    refs |= {tuple(me[:-1] + m.group(1).split("::")) for m in re.finditer(r"\bsuper::((?:\w+::)*\w+)", code)}
    for r in refs:
        k = 0
        while k < min(len(me), len(r)) and me[k] == r[k]:
            k += 1
        if k < len(me) and k < len(r):
            deps.setdefault((crate, tuple(me[:k + 1])), set()).add(tuple(r[:k + 1]))
cycles = sorted(
    f"{crate}: {'::'.join(a)} <-> {'::'.join(b)}"
    for (crate, a), bs in deps.items()
    for b in bs
    if a < b and a in deps.get((crate, b), ())
)

print(f"files over {FILE_MAX} non-test lines: {len(big_files)}")
for n, f in sorted(big_files, reverse=True):
    print(f"  {n:5} {f}")
print(f"functions over {FN_MAX} lines: {len(big_fns)}")
for n, f in sorted(big_fns, reverse=True):
    print(f"  {n:5} {f}")
print(f"sibling modules naming each other: {len(cycles)}")
for c in cycles:
    print(f"  {c}")
print(f"library functions with a String error: {len(strings)}")
for s in strings:
    print(f"  {s}")
sys.exit(1 if big_files or big_fns or cycles or strings else 0)
