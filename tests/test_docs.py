"""The docs stay true: every ``roofline`` command they show runs, the CLI reference is current, links resolve.

Commands are the ``roofline ...`` lines of the fenced ``bash`` blocks of README.md and docs/**/*.md.
Each page's commands run in order in one scratch folder (a later command may read a file an earlier
one wrote, as a reader following the page would), with its own user catalog.  Paths the pages give
relative to the repository (``examples/``, ``tests/fixtures/``, ``roofline/data/``) are made absolute, and ``/tmp/`` is
the scratch folder.  Every command must exit 0 and a ``--json`` one must print JSON; those a reader
reads in a terminal must also fit 80 columns (tests/test_terminal.py's rules).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from roofline.views.cli import _common
from tests.inprocess import run_roofline

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
#: Commands whose output is not read at 80 columns: text for scripts, files, or long fits and reports.
NOT_TERMINAL = ("--json", "calibrate", "measure", "e2e import", "report", "--holdout", "validate --html")
#: Commands a page shows whose whole work another test runs already (too long to run twice in CI).
RUN_ELSEWHERE = {
    # validate(load_shipped(), holdout=True), whose figures the validation page quotes (15 min on 2 busy cores)
    "roofline validate --holdout": "tests/test_validate_targets.py",
}


def page_commands(page: Path) -> list[str]:
    """The ``roofline ...`` lines of a page's bash blocks, comments dropped, in order."""
    text = page.read_text(encoding="utf-8")
    lines = [
        line.split("  #")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S)
        for line in block.splitlines()
    ]
    return [line for line in lines if line.startswith("roofline ")]


COMMANDS = {page.relative_to(REPO).as_posix(): page_commands(page) for page in PAGES}


def test_the_docs_show_commands():
    assert sum(len(c) for c in COMMANDS.values()) >= 60
    assert COMMANDS["README.md"], "the README's tour shows commands"


def test_the_readme_is_one_short_page():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    for needle in ("pip install . && roofline report", 'pip install ".[test]" && python -m pytest'):
        assert any(needle in line for line in lines), needle


def _args(command: str, scratch: Path) -> list[str]:
    """The command's arguments with the repository's relative paths made absolute."""
    return [
        a.replace("/tmp/", f"{scratch}/")
        .replace("examples/", f"{REPO}/examples/")
        .replace("tests/fixtures/", f"{REPO}/tests/fixtures/")
        .replace("roofline/data/", f"{REPO}/roofline/data/")
        for a in shlex.split(command)[1:]
    ]


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p, c in COMMANDS.items() if c])
def test_every_command_of_a_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path / "catalog"))
    monkeypatch.setattr(_common.console, "width", 80)
    monkeypatch.setattr(_common.err_console, "width", 80)
    saved = os.getcwd()
    os.chdir(tmp_path)
    try:
        for command in COMMANDS[page]:
            if command in RUN_ELSEWHERE:
                continue
            run = run_roofline(*_args(command, tmp_path))
            assert run.code == 0, (command, run.stderr[-2000:])
            if "--json" in command:
                json.loads(run.stdout)
            elif not any(s in command for s in NOT_TERMINAL):
                out = run.stdout + run.stderr
                assert "…" not in out, (command, [line for line in out.splitlines() if "…" in line])
                assert not [line for line in out.splitlines() if len(line) > 80], command
    finally:
        os.chdir(saved)


def test_commands_run_elsewhere_are_run_there():
    for command, test in RUN_ELSEWHERE.items():
        assert any(command in c for c in COMMANDS.values()), f"{command!r} is no longer in the docs: drop it"
        text = (REPO / test).read_text(encoding="utf-8")
        assert "holdout=True" in text, (command, test)


def test_the_cli_reference_is_generated_from_the_commands():
    # docs/reference/cli.md is written by `python -m roofline.views.cli.reference`: rerun it after
    # adding or changing a command or an option.
    from roofline.views.cli.reference import PAGE, reference_markdown

    assert PAGE.read_text(encoding="utf-8") == reference_markdown(), (
        "docs/reference/cli.md is stale: run python -m roofline.views.cli.reference"
    )


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def json_contracts() -> list[tuple[str, list[str]]]:
    """(command, keys) rows of docs/reference/json.md's contract table."""
    text = (REPO / "docs" / "reference" / "json.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(roofline [^`]+)` \| (.+) \|$", text, re.M)
    return [(command, re.findall(r"`([^`]+)`", keys)) for command, keys in rows]


CONTRACTS = json_contracts()


def _lookup(data: object, path: str) -> bool:
    """Whether the dotted key path exists ('a.b', 'points[].x': the first element of a list)."""
    for part in [p for p in re.split(r"\.|(\[\])", path) if p]:
        if part == "[]":
            if not isinstance(data, list) or not data:
                return False
            data = data[0]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return False
    return True


def test_the_json_contract_table_is_read():
    assert len(CONTRACTS) >= 15


@pytest.mark.parametrize(
    "command,keys",
    [
        pytest.param(c, k, id=c.split()[1], marks=[pytest.mark.slow] if c.split()[1] == "validate" else [])
        for c, k in CONTRACTS
    ],
)
def test_every_documented_json_key_is_printed(command, keys, tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path))
    run = run_roofline(*_args(command, tmp_path))
    assert run.code == 0, run.stderr
    data = json.loads(run.stdout)
    missing = [key for key in keys if not _lookup(data, key)]
    assert not missing, missing


def python_blocks() -> list[tuple[str, str]]:
    """(page, code) of every fenced ``python`` block of README.md and docs/."""
    return [
        (page.relative_to(REPO).as_posix(), block)
        for page in PAGES
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("page,code", python_blocks(), ids=[p for p, _ in python_blocks()])
def test_every_python_example_runs(page, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, page, "exec"), {"__name__": "__docs__"})  # noqa: S102 - the docs' own examples


def test_every_public_name_is_documented_and_every_documented_one_exists():
    # docs/reference/python.md lists the whole public API (rl.__all__); every rl.NAME the docs show exists.
    import roofline as rl

    reference = (REPO / "docs" / "reference" / "python.md").read_text(encoding="utf-8")
    missing = [name for name in rl.__all__ if not re.search(rf"`[^`]*\b{re.escape(name)}\b[^`]*`", reference)]
    assert not missing, f"document these public names in docs/reference/python.md: {missing}"
    shown = {name for page in PAGES for name in re.findall(r"\brl\.([A-Za-z_]\w*)", page.read_text(encoding="utf-8"))}
    absent = sorted(name for name in shown if not hasattr(rl, name))
    assert not absent, f"the docs show names roofline does not have: {absent}"
