"""Shared CLI plumbing: consoles, --json emission, and the options every command repeats."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)

JSON_OPTION = typer.Option(False, "--json", help="Print a JSON object for scripts instead of a table.")


def to_jsonable(value: Any) -> Any:
    """numpy scalars/arrays and dataclass-like objects to plain JSON types (inf -> null)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    return value


def emit(data: dict[str, Any] | list[Any], as_json: bool, render: Callable[[], None]) -> None:
    """Print ``data`` as JSON when ``as_json``; otherwise call ``render`` for people."""
    if as_json:
        print(json.dumps(to_jsonable(data), indent=2))
    else:
        render()


def print_explanations(explanations: list[Any], title: str) -> None:
    """Render roofline.explain data: name, formula, values substituted with units, result, section."""
    from rich.table import Table

    from ..fmt import format_quantity

    table = Table(title=title, show_lines=True)
    for col in ("quantity", "formula", "values", "= result", "book section"):
        table.add_column(col, overflow="fold")
    for e in explanations:
        values = ", ".join(f"{t.symbol} = {format_quantity(t.value, t.unit)}" for t in e.terms)
        result = format_quantity(e.value, e.unit) + (f"\n({e.note})" if e.note else "")
        name = f"[bold yellow]{e.name} (binds)[/]" if e.binding else e.name
        table.add_row(name, e.formula, values, result, e.section.split(", ", 1)[-1])
    console.print(table)

CONTEXT_OPTION = typer.Option(2048, "--context", "-s", help="Tokens in each sequence's KV cache.")
EXPLAIN_OPTION = typer.Option(
    False, "--explain", help="Show each number's formula, values, binding term and book section."
)


def explanations_into(data: dict[str, Any], explanations: list[Any]) -> list[Any]:
    """Add ``--explain`` rows to the JSON object (under ``explain``) and return them for rendering."""
    if explanations:
        data["explain"] = [e.as_dict() for e in explanations]
    return explanations


def quantity_table(title: str) -> Any:
    """A two-column rich table (quantity, right-aligned value) used by the single-result commands."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    return table
