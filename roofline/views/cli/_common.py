"""Shared CLI plumbing: consoles, --json emission, and the options every command repeats."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
import typer

from roofline.core.types import JSONValue

if TYPE_CHECKING:  # rich loads on first print (CLI start-up)
    from rich.console import Console
    from rich.table import Table

    from roofline.views.explain import Explanation


class _LazyConsole:
    """A rich Console made on first use (importing rich.console costs start-up; --json prints none).

    Attribute reads and writes go to the real Console, so ``console.print(...)`` and
    ``monkeypatch.setattr(console, "width", 80)`` behave as on a Console.
    """

    def __init__(self, **options: object) -> None:
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_console", None)

    def real(self) -> Console:
        """The rich Console itself (made now if not yet)."""
        if self._console is None:
            from rich.console import Console

            object.__setattr__(self, "_console", Console(**self._options))
        return self._console

    def __getattr__(self, name: str) -> object:
        return getattr(self.real(), name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self.real(), name, value)

    #: A property, as on Console, so that monkeypatch.setattr(console, "width", 80) is undone by setting it back.
    width = property(lambda self: self.real().width, lambda self, value: setattr(self.real(), "width", value))


#: The consoles every command prints to: rich Consoles, made on first use.  No emoji codes: text such as
#: 'I:O:weight' or a file name with ':o:' in it is printed as written (rich would make ':O:' an emoji).
console: Console = _LazyConsole(emoji=False)  # type: ignore[assignment]
err_console: Console = _LazyConsole(stderr=True, emoji=False)  # type: ignore[assignment]

JSON_OPTION = typer.Option(False, "--json", help="Print a JSON object for scripts instead of a table.")


def to_jsonable(value: object) -> JSONValue:
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


def emit(data: dict[str, object] | list[object], as_json: bool, render: Callable[[], None]) -> None:
    """Print ``data`` as JSON when ``as_json``; otherwise call ``render`` for people."""
    if as_json:
        print(json.dumps(to_jsonable(data), indent=2))
    else:
        render()


def print_explanations(explanations: Sequence[Explanation], title: str) -> None:
    """Render roofline.views.explain data: name, formula, values substituted with units, result, section."""
    from rich.table import Table

    from roofline.core.fmt import format_quantity

    table = Table(title=title, show_lines=True)
    for col in ("quantity", "formula", "values", "= result", "book section"):
        table.add_column(col, overflow="fold")
    for e in explanations:
        values = ", ".join(f"{t.symbol} = {format_quantity(t.value, t.unit)}" for t in e.terms)
        result = format_quantity(e.value, e.unit) + (f"\n({e.note})" if e.note else "")
        name = f"[bold yellow]{e.name} (binds)[/]" if e.binding else e.name
        table.add_row(name, e.formula, values, result, e.section.split(", ", 1)[-1])
    console.print(table)


EXPLAIN_OPTION = typer.Option(
    False, "--explain", help="Show each number's formula, values, binding term and book section."
)


def explanations_into(data: dict[str, object], explanations: Sequence[Explanation]) -> Sequence[Explanation]:
    """Add ``--explain`` rows to the JSON object (under ``explain``) and return them for rendering."""
    if explanations:
        data["explain"] = [e.as_dict() for e in explanations]
    return explanations


def quantity_table(title: str) -> Table:
    """A two-column rich table (quantity, right-aligned value) used by the single-result commands."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("quantity", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")  # wrapped, never cut with an ellipsis
    return table


def assumptions(
    *,
    memory_utilization: float | None = None,
    mfu: float | None = None,
    sources: dict[str, str] | None = None,
    kinds: tuple[str, ...] = (),
) -> str:
    """The assumptions that flatter the numbers, said under every table: 'assumes: ...'.

    MFU in prefill, the share of HBM usable, kernel overheads (none on a spec sheet) and whether
    collectives overlap local work (the deployment's, else the default per chip kind).
    """
    src = sources or {}
    parts = []
    if "calibrated" in src.get("hardware", "") or "calibrated" in src.get("overhead", ""):
        parts.append("calibrated kernel efficiencies and overheads")
    elif "achievable" in src or "achievable" in src.get("hardware", ""):
        parts.append("the spec sheet at the chip's achievable fractions of peak, with kernel floors (hardware YAML)")
    else:
        parts.append("spec-sheet peaks, no kernel overheads (a bound, not a prediction)")
    if mfu is not None:
        parts.append(f"MFU {mfu:g} in prefill" + (" (the default, --mfu)" if mfu == 1 else ""))
    if "memory" in src:
        parts.append(src["memory"])
    elif memory_utilization is not None:
        parts.append(
            f"usable HBM = physical × {memory_utilization:g}"
            + (" − activation reserve" if memory_utilization < 1 else "")
        )
    if "overlap" in src:
        parts.append(src["overlap"])
    elif kinds:
        tpu, gpu = "tpu" in kinds, any(k != "tpu" for k in kinds)
        parts.append(
            "collectives overlapped with local work on TPUs"
            if tpu and not gpu
            else "collectives on the critical path on GPUs"
            if gpu and not tpu
            else "collectives overlapped on TPUs, on the critical path on GPUs"
        )
    return "assumes: " + "; ".join(parts)


def print_assumptions(**kwargs: object) -> None:
    """Print :func:`assumptions` dimmed under a table."""
    from rich.markup import escape

    console.print(f"[dim]{escape(assumptions(**kwargs))}[/]")


WIDE_OPTION = typer.Option(False, "--wide", help="Show every column (the default fits 80 columns).")


def compact_table(title: str, columns: list[str], left: tuple[str, ...] = ()) -> Table:
    """A table for many columns that fits a terminal: light rules, one space between columns, and
    cells that wrap at spaces (never an ellipsis: no value is cut).  ``left``: left-aligned columns."""
    from rich import box
    from rich.table import Table

    table = Table(
        title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0), title_justify="left"
    )
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if (i == 0 or col in left) else "right", overflow="fold")
    return table


def write_records_csv(path: str | Path, records: list[dict[str, object]]) -> None:
    """``records`` (one dict per row, the same keys) as a CSV file, written atomically (formula-safe cells)."""
    from roofline.core.files import write_atomic
    from roofline.core.tables import csv_writer

    keys = list(records[0]) if records else []

    def rows(handle: IO[str]) -> None:
        writer = csv_writer(handle)
        writer.writerow(keys)
        writer.writerows([to_jsonable(r.get(k)) for k in keys] for r in records)

    write_atomic(path, rows)


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(done, total)`` callback drawing a transient bar on stderr when it is a terminal
    (None: no bar, when not ``enabled``, e.g. with ``--json``, or when stderr is a pipe or a file)."""
    import sys

    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console.real(),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
