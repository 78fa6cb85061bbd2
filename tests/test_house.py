"""House rules that a grep can hold (docs/contributing.md): small modules, few ``Any``, flag names only in the CLI.

Each check counts what the rule forbids and fails when it grows past its ceiling; a ceiling above the
goal is a debt to pay down, never to raise without saying why in the commit.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "roofline"

#: Lines a module may have: "about 400" (docs/contributing.md), with a little slack for a docstring.
MODULE_LINES = 420
#: Modules still over it, each with its ceiling (split them by concern, then drop the line).
OVERSIZED: dict[str, int] = {}
#: Lines of the package that mention ``Any`` (the issue's count: grep -rn "\bAny\b" roofline | wc -l).
MAX_ANY_LINES = 49
#: String literals below views/cli that name a CLI flag (docstrings excepted): none left.
MAX_FLAG_MESSAGES = 0
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_modules_stay_small():
    too_long = {}
    for path in modules():
        name = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > OVERSIZED.get(name, MODULE_LINES):
            too_long[name] = lines
    assert not too_long, f"split these modules by concern (at most {MODULE_LINES} lines): {too_long}"


def test_the_oversized_list_only_names_oversized_modules():
    # A module split below the limit leaves the list, so its ceiling cannot be reused.
    for name in OVERSIZED:
        path = PACKAGE / name
        assert path.is_file(), f"{name} is gone: drop it from OVERSIZED"
        assert len(path.read_text(encoding="utf-8").splitlines()) > MODULE_LINES, f"{name} is small now: drop it"


def test_any_is_rare():
    lines = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in modules()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bAny\b", line)
    ]
    assert len(lines) <= MAX_ANY_LINES, f"{len(lines)} lines mention Any (at most {MAX_ANY_LINES}): {lines}"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def flag_messages() -> list[str]:
    """Every string literal outside views/cli that names a ``--flag`` (docstrings excepted)."""
    hits = []
    for path in modules():
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith("views/cli/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if FLAG.search(node.value):
                    hits.append(f"{name}:{node.lineno}: {', '.join(FLAG.findall(node.value))}")
    return hits


def test_no_more_flag_names_below_the_cli():
    # The Python API names its parameters (any RooflineError(..., parameters=...)); the CLI maps each to its
    # flag (roofline.views.cli.flag_message), so only views/cli writes flag names.
    hits = flag_messages()
    assert len(hits) <= MAX_FLAG_MESSAGES, f"{len(hits)} messages name CLI flags below the CLI: {hits}"
