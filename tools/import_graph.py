"""Draw dperm's import graph between its rooms and check it has no circle.

A *room* is a top-level module of ``dperm`` or a (sub-)package; every import
of one ``dperm`` module by another (module level or inside a function) is an
edge between their rooms. Floors are the longest import chain below a room.

    python tools/import_graph.py --out docs/_static/import_graph.png

prints the rooms, floors, circles (between rooms, and between files: :func:`module_edges`)
and cross-package imports of private names,
and draws the graph (matplotlib only).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"  # --src overrides


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def packages() -> set[str]:
    return {module_name(p) for p in (SRC / "dperm").rglob("__init__.py")}


def room_of(module: str, pkgs: set[str]) -> str:
    """The deepest package below ``dperm`` that holds ``module``, or the module itself if top level."""
    parts = module.split(".")
    for k in range(len(parts), 1, -1):
        candidate = ".".join(parts[:k])
        if candidate in pkgs and candidate != "dperm":
            return candidate
    return ".".join(parts[:2])


def imports(path: Path, name: str, is_package: bool):
    """Every ``(imported module, imported names)`` of ``dperm`` in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dperm"):
                    yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith("dperm"):
                yield base, tuple(a.name for a in node.names)


def graph():
    pkgs = packages()
    modules = {}
    for path in sorted((SRC / "dperm").rglob("*.py")):
        modules[module_name(path)] = path
    edges = defaultdict(set)
    private = []
    lines = {}
    for name, path in modules.items():
        room = room_of(name, pkgs)
        lines[room] = lines.get(room, 0) + len(path.read_text(encoding="utf-8").splitlines())
        for target, names in imports(path, name, path.name == "__init__.py"):
            # "from dperm.x import y" may name the submodule dperm.x.y
            targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]
            for t in targets:
                if t not in modules:
                    continue
                troom = room_of(t, pkgs)
                if troom != room:
                    edges[room].add(troom)
                    outside = not name.startswith(troom + ".")
                    hidden = [n for n in names if n.startswith("_") and not n.startswith("__")]
                    if outside and (any(p.startswith("_") for p in t.split(".")[2:]) or hidden) \
                            and not room.startswith(troom):
                        private.append((name, t, hidden))
    rooms = sorted(set(lines))
    return rooms, edges, private, lines


def _is_type_checking(test) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree):
    """Every Import / ImportFrom node that can run: module level, in functions and classes,
    but not under ``if TYPE_CHECKING:`` (those never execute, so they cannot close a circle)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))


def module_edges() -> dict[str, set[str]]:
    """File-level import graph: module -> the ``dperm`` modules it imports.

    Imports inside functions count (they are how a circle is usually hidden);
    relative imports are resolved; ``from pkg import name`` is an edge to
    ``pkg.name`` when that is a module, else to ``pkg``. An edge to a package
    that contains the importing module is left out: Python imports a module's
    parent packages before the module itself, so that dependency exists anyway
    and is not a design choice.
    """
    modules = {module_name(p): p for p in sorted((SRC / "dperm").rglob("*.py"))}
    edges = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found = [(alias.name, ()) for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                found = [(base, tuple(alias.name for alias in node.names))]
            for target, names in found:
                targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
                if len(targets) < len(names) or not names:  # some names are attributes of target itself
                    targets.append(target)
                for t in targets:
                    if t in modules and t != name and not name.startswith(t + "."):
                        edges[name].add(t)
    return edges


def circles(rooms, edges):
    """Strongly connected components of more than one room (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in rooms:
        if v not in index:
            visit(v)
    return out


def floors(rooms, edges):
    """Longest import chain below each room (rooms on a circle share a floor)."""
    memo = {}

    def floor(v, seen=()):
        if v in memo:
            return memo[v]
        if v in seen:
            return 0
        below = [floor(w, seen + (v,)) for w in edges.get(v, ())]
        memo[v] = 1 + max(below, default=-1)
        return memo[v]

    return {v: floor(v) for v in rooms}


def draw(rooms, edges, level, lines, out: Path, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_floor = defaultdict(list)
    for r in rooms:
        by_floor[level[r]].append(r)
    pos = {}
    for f, members in by_floor.items():
        for i, r in enumerate(sorted(members)):
            pos[r] = ((i + 0.5) / len(members), f)
    fig, ax = plt.subplots(figsize=(14, 1.3 * (max(by_floor) + 2)))
    for a, targets in edges.items():
        for b in targets:
            (x0, y0), (x1, y1) = pos[a], pos[b]
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops=dict(arrowstyle="->", color="0.6", lw=0.6, shrinkA=14, shrinkB=14))
    for r, (x, y) in pos.items():
        ax.text(x, y, f"{r.removeprefix('dperm.')}\n{lines[r]}", ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc="#e8f0fe", ec="#4a6fa5"))
    ax.set_ylim(-0.7, max(by_floor) + 0.7)
    ax.set_xlim(-0.02, 1.02)
    ax.axis("off")
    ax.set_title(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="PNG to draw")
    parser.add_argument("--title", default="dperm: imports between rooms (lines of code below each)")
    parser.add_argument("--json", type=Path, help="write rooms, floors, edges, circles here")
    parser.add_argument("--src", type=Path, help="the src directory to read (default: this checkout's)")
    args = parser.parse_args(argv)
    if args.src:
        global SRC
        SRC = args.src.resolve()
    rooms, edges, private, lines = graph()
    level = floors(rooms, edges)
    found = circles(rooms, edges)
    print(f"{len(rooms)} rooms on {max(level.values()) + 1} floors")
    for r in sorted(rooms, key=lambda r: (-level[r], r)):
        print(f"  floor {level[r]:2d}  {r:34s} {lines[r]:6d} lines -> "
              + ", ".join(sorted(t.removeprefix('dperm.') for t in edges.get(r, ()))))
    print("circles:", found or "none")
    files = module_edges()
    print("file-level circles:", circles(sorted(files), files) or "none")
    print("private names imported across packages:", len(private))
    for name, target, hidden in private:
        print(f"  {name} -> {target} {', '.join(hidden)}")
    if args.out:
        draw(rooms, edges, level, lines, args.out, args.title)
    if args.json:
        args.json.write_text(json.dumps({
            "rooms": {r: {"floor": level[r], "lines": lines[r]} for r in rooms},
            "edges": {r: sorted(t) for r, t in edges.items()},
            "circles": found, "private_imports": [list(p[:2]) for p in private],
        }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
