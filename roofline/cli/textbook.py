"""`roofline textbook`: the book's worked answers, recomputed and checked."""

from __future__ import annotations

import typer
from rich.table import Table

from .. import textbook
from ._common import JSON_OPTION, console, emit


def textbook_command(
    only: str = typer.Option("", "--only", help="Run cases whose id contains this text."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Recompute every worked number of the inference chapter; exit 1 if any fails.

    Example: roofline textbook --only crit-batch
    """
    rows = [r for r in textbook.run() if only in r.id]
    data = [r.as_dict() for r in rows]

    def render() -> None:
        table = Table(title="How to Scale Your Model, part 7: answer key")
        for col in ("id", "description", "book", "computed", "unit", "rel err", "ok"):
            table.add_column(col, overflow="fold")
        for r in rows:
            ok = "[green]pass[/]" if r.passed else "[bold red]FAIL[/]"
            book = f"{r.expected:.4g}" + (f" (exact {r.exact:.4g})" if r.exact is not None else "")
            table.add_row(r.id, r.description + (" [dim](derived)[/]" if r.derived else ""), book,
                          f"{r.computed:.4g}", r.unit, f"{r.rel_error:.2%}", ok)
        console.print(table)
        notes: dict[str, list[str]] = {}
        for r in rows:
            if r.note:
                notes.setdefault(r.note, []).append(r.id)
        for note, ids in notes.items():
            more = f" and {len(ids) - 1} more" if len(ids) > 1 else ""
            console.print(f"[dim]{ids[0]}{more}: {note}[/]")
        failed = sum(not r.passed for r in rows)
        console.print(f"{len(rows) - failed} passed, {failed} failed")

    emit(data, as_json, render)
    if any(not r.passed for r in rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("textbook")(textbook_command)
