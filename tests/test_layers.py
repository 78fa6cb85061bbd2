"""The folder is the layer: every import in the package runs downward, and sub-packages form no cycle.

Layers, bottom to top (docs/contributing.md): core, specs, model, formulas, kernels, deploy, terms,
analyses, then calibrate and answer_key (side by side, neither imports the other), then views.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "roofline"

#: Top-level sub-package -> its layer; a module may import its own sub-package or a lower layer.
LAYERS = {
    "core": 0,
    "specs": 1,
    "model": 2,
    "formulas": 3,
    "kernels": 4,
    "deploy": 5,
    "terms": 6,
    "analyses": 7,
    "calibrate": 8,
    "answer_key": 8,
    "views": 9,
}
TOP_LEVEL_MODULES = {"__init__", "__main__", "_legacy"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every ``roofline.*`` name a module imports, at any depth (lazy and TYPE_CHECKING imports too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("roofline"):
                found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("roofline"))
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): imported_modules(p) for p in PACKAGE.rglob("*.py")}


def top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_top_level_module_is_a_layer_or_the_api():
    loose = {p.stem for p in PACKAGE.glob("*.py")} - TOP_LEVEL_MODULES
    assert not loose, f"modules directly in roofline/ outside a layer: {sorted(loose)}"
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS), packages ^ set(LAYERS)


def test_imports_only_go_downward():
    upward = []
    for source, targets in graph().items():
        if top(source) not in LAYERS:
            continue
        for target in targets:
            t = top(target)
            if t in LAYERS and t != top(source) and LAYERS[t] >= LAYERS[top(source)]:
                upward.append(f"{source} -> {target}")
    assert not upward, "imports that go upward or sideways:\n" + "\n".join(sorted(upward))


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle in a directed graph (depth-first search), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_cycle_between_sub_packages():
    """Within each layer, its sub-packages (analyses.sweep, analyses.plan, ...) import one another acyclically."""
    edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph().items():
        for target in targets:
            s, t = source.split(".")[:3], target.split(".")[:3]
            if s[:2] == t[:2] and len(s) == 3 and len(t) == 3 and s != t:
                src, dst = ".".join(s), ".".join(t)
                if (PACKAGE.parent / dst.replace(".", "/")).is_dir() or (
                    PACKAGE.parent / src.replace(".", "/")
                ).is_dir():
                    edges[src].add(dst)
    assert _cycle(edges) is None, _cycle(edges)


def test_old_module_paths_still_import():
    """Scripts outside the repo import the old flat paths; they resolve to the same module objects."""
    import importlib

    from roofline._legacy import MOVED

    for old, new in MOVED.items():
        assert importlib.import_module(f"roofline.{old}") is importlib.import_module(f"roofline.{new}")
