"""The command-line reference (docs/reference/cli.md), generated from the commands themselves.

``python -m roofline.views.cli.reference`` rewrites the page; ``--check`` exits 1 when the page on
disk differs from what the commands say (``tests/test_docs.py`` runs it, so the page cannot go
stale).  Each command gets its help text and a table of its options: flags, default, help.
"""

from __future__ import annotations

import sys
from pathlib import Path

from typer.main import get_command

from roofline.views.cli import COMMANDS, register_commands

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "cli.md"
HEADER = """# Command-line reference

Generated from the commands themselves by `python -m roofline.views.cli.reference`; do not edit
by hand (a test fails when this page and the commands disagree). For what the options mean
across commands, see [options and defaults](options.md); for the JSON each command prints, see
[JSON contracts](json.md).

Global options go before the command: `--units si|iec` (byte display), `--version`.
"""


def _cell(text: object) -> str:
    """Text for one table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(param: object) -> str:
    """An option's default as the reader types it; empty where it is required or has none."""
    if getattr(param, "required", False) or getattr(param, "is_flag", False):
        return "required" if getattr(param, "required", False) else "off"
    value = getattr(param, "default", None)
    if value is None or value == "" or callable(value):
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) if value else ""
    return f"`{value}`"


def _options_table(command: object) -> list[str]:
    """The options of one command as Markdown table rows (hidden ones and --help left out)."""
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    arguments = []
    for param in getattr(command, "params", []):
        if getattr(param, "hidden", False):
            continue
        if getattr(param, "param_type_name", "") == "argument":
            arguments.append(f"`{param.name.upper()}`")
            continue
        flags = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        rows.append(f"| {flags} | {_cell(_default(param))} | {_cell(param.help or '')} |")
    lines = [f"Arguments: {', '.join(arguments)}", ""] if arguments else []
    return lines + (rows if len(rows) > 2 else ["No options."])


def _walk(command: object, path: list[str]) -> list[tuple[str, object]]:
    """(command path, click command) of every leaf command, in the order help lists them."""
    subs = getattr(command, "commands", None)
    if not subs:
        return [(" ".join(path), command)]
    out: list[tuple[str, object]] = []
    for name in sorted(subs) if path else _top_order(subs):
        out.extend(_walk(subs[name], [*path, name]))
    return out


def _top_order(subs: dict[str, object]) -> list[str]:
    """Top-level commands in the registry's order (then any plugin's, by name)."""
    known = [name for name in COMMANDS if name in subs]
    return known + sorted(set(subs) - set(known))


def reference_markdown() -> str:
    """The whole page: a header, a table of contents, and one section per command."""
    root = get_command(register_commands(tuple(dict.fromkeys(m for ms in COMMANDS.values() for m in ms))))
    leaves = _walk(root, [])
    toc = [f"- [`roofline {path}`](#roofline-{path.replace(' ', '-')})" for path, _ in leaves]
    parts = [HEADER, "## Commands", "", *toc, ""]
    for path, command in leaves:
        text = (getattr(command, "help", None) or "").strip()
        parts += [f"## roofline {path}", "", *[line.rstrip() for line in text.splitlines()], ""]
        parts += [*_options_table(command), ""]
    return "\n".join(parts).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the page (default) or, with --check, report whether it is current (exit 1 if not)."""
    args = sys.argv[1:] if argv is None else argv
    text = reference_markdown()
    if "--check" in args:
        current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if current != text:
            print(f"{PAGE} is stale: run python -m roofline.views.cli.reference", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
