#!/usr/bin/env python3
"""The module graph of a crate's top-level modules and its strongly connected components.

Why: a strongly connected component is a set of modules each of which reaches every other
through `crate::` paths, so none of them can be understood, tested or moved out of the crate
alone. docs/architecture.md keeps the apiserver's largest one small; this prints it.

Usage: scripts/module-cycles.py [--tests] [--edges] [--check] [CRATE_SRC]   (default apiserver/src)

An edge A -> B is a path `crate::B...` (or a crate-root re-export of something in B, as
`crate::ApiError` for `status`) in any file of module A. `#[cfg(test)]` items are left out
unless --tests is given: a test may reach anything. Components are printed largest first,
with their sizes; --edges also prints every edge inside a component of more than one module,
with the files it comes from, which is where to cut.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments(text):
    """The text without `//` and `/* */` comments and with string literals emptied."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif text.startswith('r#"', i) or text.startswith('r"', i):
            hashes = 1 if text[i + 1] == "#" else 0
            end = '"' + "#" * hashes
            j = text.find(end, i + 2 + hashes)
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i : i + 4]):
            # A char literal (not a lifetime): '"' would otherwise open a string.
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append("' '")
            i += len(m.group(0)) if m else 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_test_items(text):
    """The text without `#[cfg(test)]` items (a `mod tests { ... }` block or one item)."""
    out = []
    i = 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        # Skip to the end of the item: the matching brace of its first block, or a `;`.
        j = m.end()
        depth = 0
        while j < len(text):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            elif ch == ";" and depth == 0:
                j += 1
                break
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def brace_group(text, start):
    """The contents of the `{...}` group opening at `start`, and the index after it."""
    depth, j = 0, start
    while j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : j], j + 1
        j += 1
    return text[start + 1 :], len(text)


def split_top(group):
    """The comma-separated items of a brace group, nested groups kept whole."""
    items, depth, cur = [], 0, []
    for ch in group:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return [item.strip() for item in items if item.strip()]


def crate_refs(text):
    """The first path segments after every `crate::` in `text`."""
    refs = []
    for m in re.finditer(r"\bcrate\s*::\s*", text):
        rest = m.end()
        if rest < len(text) and text[rest] == "{":
            group, _ = brace_group(text, rest)
            for item in split_top(group):
                first = re.match(IDENT, item)
                if first and first.group(0) != "self":
                    refs.append(first.group(0))
        else:
            first = re.match(IDENT, text[rest:])
            if first:
                refs.append(first.group(0))
    return refs


def module_files(src):
    """Top-level module name -> its files (lib.rs is the root, `crate`). A file that a
    `#[path = "..."]` attribute includes belongs to the module of the file that includes it."""
    modules = defaultdict(list)
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            modules[entry[:-3]].append(path)
        elif os.path.isdir(path):
            for root, _, files in os.walk(path):
                for name in sorted(files):
                    if name.endswith(".rs"):
                        modules[entry].append(os.path.join(root, name))
    included = {}
    for module, files in modules.items():
        for path in files:
            with open(path, encoding="utf-8") as f:
                for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]', f.read()):
                    target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
                    included[target] = module
    for target, owner in included.items():
        for module in list(modules):
            if module != owner and target in map(os.path.normpath, modules[module]):
                modules[module] = [p for p in modules[module] if os.path.normpath(p) != target]
                modules[owner].append(target)
                if not modules[module]:
                    del modules[module]
    return modules


def root_exports(src, modules):
    """Names re-exported at the crate root (`pub use status::ApiError`, or an inline module
    re-exporting one, as `pub mod protobuf { pub use crate::codec::... }`) -> their module."""
    lib = os.path.join(src, "lib.rs")
    if not os.path.exists(lib):
        return {}
    with open(lib, encoding="utf-8") as f:
        text = strip_comments(f.read())
    exports = {}
    for m in re.finditer(r"\bpub\s+use\s+(" + IDENT + r")\s*::\s*", text):
        module = m.group(1)
        if module not in modules:
            continue
        rest = m.end()
        if text[rest] == "{":
            group, _ = brace_group(text, rest)
            names = [re.split(r"\s+as\s+|::", item)[-1].strip() for item in split_top(group)]
        else:
            names = [re.match(r"[A-Za-z0-9_:]*(?:\s+as\s+" + IDENT + ")?", text[rest:]).group(0)]
            names = [re.split(r"\s+as\s+|::", names[0])[-1].strip()]
        for name in names:
            exports[name] = module
    for m in re.finditer(r"\bpub\s+mod\s+(" + IDENT + r")\s*\{", text):
        group, _ = brace_group(text, m.end() - 1)
        targets = {ref for ref in crate_refs(group) if ref in modules}
        if len(targets) == 1:
            exports[m.group(1)] = targets.pop()
    return exports


def graph(src, tests):
    modules = module_files(src)
    exports = root_exports(src, modules)
    edges = defaultdict(lambda: defaultdict(set))  # from -> to -> files
    for module, files in modules.items():
        for path in files:
            with open(path, encoding="utf-8") as f:
                text = strip_comments(f.read())
            if not tests:
                text = strip_test_items(text)
            for ref in crate_refs(text):
                target = ref if ref in modules else exports.get(ref)
                if target and target != module:
                    edges[module][target].add(os.path.relpath(path, src))
    return sorted(modules), edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(result, key=lambda c: (-len(c), c))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", default="apiserver/src")
    parser.add_argument("--tests", action="store_true", help="count #[cfg(test)] items too")
    parser.add_argument("--edges", action="store_true", help="print the edges inside cycles")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if any component has more than one module (CI)")
    args = parser.parse_args()
    nodes, edges = graph(args.src, args.tests)
    components = sccs(nodes, edges)
    sizes = [len(c) for c in components]
    print(f"{len(nodes)} modules, {len(components)} components; sizes: "
          + " ".join(str(s) for s in sizes if s > 1)
          + f" (and {sizes.count(1)} of one module)")
    for component in components:
        if len(component) < 2:
            continue
        print(f"\ncomponent of {len(component)}: {' '.join(component)}")
        if args.edges:
            members = set(component)
            for a in component:
                for b in sorted(edges.get(a, {})):
                    if b in members:
                        files = sorted(edges[a][b])
                        shown = ", ".join(files[:3]) + (" ..." if len(files) > 3 else "")
                        print(f"  {a} -> {b}  ({shown})")
    if args.check and any(s > 1 for s in sizes):
        sys.exit(1)


if __name__ == "__main__":
    main()
