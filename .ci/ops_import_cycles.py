#!/usr/bin/env python3
"""Fails on an import circle among the files of host/src/ops (issue 41).

An edge runs from a file to the file of every module its code names by path:
`use super::x::...`, `use crate::ops::x::...`, `use self::x`, a child module
`use x::...` (declared `mod x;` in the file), and the same paths inline in
code (`super::prepared::launch(...)`). A path ends at the deepest module
file it names; an item of a `mod.rs` (`super::OpError`) is an edge to that
`mod.rs`. Comments and doc links are not code and do not count.

    python3 .ci/ops_import_cycles.py [host/src/ops]

prints the files with their edges (-v) and exits 1 with the circle found.
"""
import re
import sys
from pathlib import Path


def module_path(root: Path, f: Path) -> tuple:
    """`ops/family/bwd_weight/gemm.rs` -> ('ops', 'family', 'bwd_weight', 'gemm')."""
    rel = f.relative_to(root.parent).with_suffix("")
    parts = rel.parts
    return parts[:-1] if parts[-1] == "mod" else parts


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand(tree: str) -> list:
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases dropped)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    out, depth, cur = [], 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            if cur:
                out += [prefix + p for p in expand(cur)]
            cur = ""
            continue
        depth += (ch == "{") - (ch == "}")
        cur += ch
    return out


def resolve(path: str, here: tuple, children: set, modules: dict):
    """The module file a path names, or None (another crate, a std item)."""
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        base = list(here)
        while segs and segs[0] in ("super", "self"):
            if segs.pop(0) == "super":
                base.pop()
    elif segs[0] in children:
        base = list(here)
    else:
        return None
    full = tuple(base + segs)
    for n in range(len(full), 0, -1):
        if full[:n] in modules:
            return modules[full[:n]]
    return None


def edges(root: Path) -> dict:
    files = sorted(root.rglob("*.rs"))
    # Paths are resolved from the crate root: host/src is `crate`.
    modules = {module_path(root, f): f for f in files}
    graph = {}
    for f in files:
        here = module_path(root, f)
        code = strip_comments(f.read_text())
        children = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, flags=re.M))
        # Inline modules (`mod tests { ... }`): `super` there is this file.
        spans = []
        for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
            depth, i = 0, m.end() - 1
            while i < len(code):
                depth += (code[i] == "{") - (code[i] == "}")
                if depth == 0:
                    break
                i += 1
            spans.append((m.start(), i, m.group(1)))

        def at(pos):
            return here + tuple(name for a, b, name in spans if a < pos < b)

        found = []
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            found += [(m.start(), p) for p in expand(m.group(1))]
        for m in re.finditer(r"\b((?:crate::ops|super(?:::super)*|self)(?:::\w+)+)", code):
            found.append((m.start(), m.group(1)))
        for c in children:
            for m in re.finditer(r"(?<![\w:])(" + c + r"(?:::\w+)+)", code):
                found.append((m.start(), m.group(1)))
        targets = set()
        for pos, p in found:
            t = resolve(p, at(pos), children, modules)
            if t is not None and t != f:
                targets.add(t)
        graph[f] = sorted(targets)
    return graph


def find_cycle(graph: dict):
    """A circle as a list of files, or None (depth-first search)."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in graph:
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "-v"]
    root = Path(args[0] if args else "host/src/ops")
    graph = edges(root)
    if "-v" in sys.argv:
        for f, ts in graph.items():
            print(f"{f}: {' '.join(str(t) for t in ts)}")
    cycle = find_cycle(graph)
    n = sum(len(v) for v in graph.values())
    if cycle:
        print(f"import circle in {root}: " + " -> ".join(str(f.relative_to(root)) for f in cycle), file=sys.stderr)
        return 1
    print(f"{root}: {len(graph)} files, {n} import edges, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
