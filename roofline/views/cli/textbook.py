"""`roofline textbook`: the book's worked answers, recomputed and checked."""

from __future__ import annotations

import typer

from roofline.answer_key import book as textbook
from roofline.core.errors import RooflineError, nearest, shown
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit


def textbook_command(
    only: str = typer.Option("", "--only", help="Run cases whose id contains this text."),
    wide: bool = typer.Option(False, "--wide", help="Add each case's description (the default fits 80 columns)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Recompute every worked number of the inference chapter; exit 1 if any fails.

    Example: roofline textbook --only crit-batch
    """
    every = textbook.run()
    rows = [r for r in every if only in r.id]
    if not rows:
        close = nearest(only, [r.id for r in every])
        hint = f"; did you mean: {', '.join(close)}?" if close else ""
        raise RooflineError(f"--only: no case id contains {shown(only)}{hint} (see: roofline textbook)")
    data = [r.as_dict() for r in rows]

    def render() -> None:
        cols = ["id", *(["description"] if wide else []), "book", "computed", "unit", "rel err", "ok"]
        table = compact_table(
            "How to Scale Your Model, part 7: answer key", cols, left=("description", "book", "unit", "ok")
        )
        for r in rows:
            ok = "[green]pass[/]" if r.passed else "[bold red]FAIL[/]"
            book = f"{r.expected:.4g}" + (f" (exact {r.exact:.4g})" if r.exact is not None else "")
            described = [r.description + (" [dim](derived)[/]" if r.derived else "")] if wide else []
            table.add_row(
                r.id + ("*" if r.derived and not wide else ""),
                *described,
                book,
                f"{r.computed:.4g}",
                r.unit,
                f"{r.rel_error:.2%}",
                ok,
            )
        console.print(table)
        notes: dict[str, list[str]] = {}
        for r in rows:
            if r.note:
                notes.setdefault(r.note, []).append(r.id)
        for note, ids in notes.items():
            more = f" and {len(ids) - 1} more" if len(ids) > 1 else ""
            console.print(f"[dim]{ids[0]}{more}: {note}[/]")
        if not wide:
            console.print("[dim]* derived (not a number the book prints); --wide adds each case's description[/]")
        failed = sum(not r.passed for r in rows)
        console.print(f"{len(rows) - failed} passed, {failed} failed")

    emit(data, as_json, render)
    if any(not r.passed for r in rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("textbook")(textbook_command)
