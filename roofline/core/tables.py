"""CSV tables at the boundary: a schema per input kind when reading, formula-safe cells when writing.

Reading: :func:`read_table` takes the file's :class:`Column` list (name, kind, range, required or
default) and a row limit.  The file is read bounded and as UTF-8 (gzip accepted, see
:func:`roofline.core.files.read_input_text`); every cell is checked by :mod:`roofline.core.checks`;
any problem is one line ``WHAT FILE: line N: column 'c' is 'v'; allowed: ...``.  Columns come back
as lists in file order, so callers build numpy arrays from checked numbers only.

Writing: :func:`csv_cell` escapes text that a spreadsheet would run as a formula (a cell starting
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return; OWASP "CSV injection") by a leading
``'``; numbers, including negative ones, are left alone.  :func:`csv_writer` applies it to every
cell, and :func:`unescape_cell` undoes it when roofline reads its own files back.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from roofline.core.checks import MAX_COUNT, MAX_VALUE, check_count, check_name, check_number, interval
from roofline.core.errors import OptionError, RooflineError, listed, shown
from roofline.core.files import read_input_text

#: Largest CSV table read (after gzip decompression) unless the caller gives its own limit.
MAX_TABLE_FILE_BYTES = 64 * 2**20
#: Longest cell accepted (the csv module's own limit is 128 KiB).
MAX_CELL_CHARS = 4096

ColumnKind = Literal["count", "number", "seconds", "text", "name"]


@dataclass(frozen=True)
class Column:
    """One column of an input table: its kind, allowed range and whether it may be missing or empty.

    ``count``: a whole number in [minimum, maximum]; ``number``/``seconds``: a finite number in the
    range (``open_low``: the minimum itself excluded); ``name``: one line of text; ``text``: any text.
    A missing column or an empty cell takes ``default`` when ``required`` is false.
    """

    name: str
    kind: ColumnKind = "number"
    minimum: float | None = None
    maximum: float | None = None
    required: bool = True
    default: object = None
    open_low: bool = False

    def allowed(self) -> str:
        """What the column accepts, for messages."""
        if self.kind == "count":
            low = 1 if self.minimum is None else int(self.minimum)
            return f"a whole number in {interval(low, int(self.maximum or MAX_COUNT))}"
        if self.kind in ("number", "seconds"):
            unit = " (seconds)" if self.kind == "seconds" else ""
            high = (
                MAX_VALUE["seconds" if self.kind == "seconds" else "dimensionless"]
                if self.maximum is None
                else self.maximum
            )
            return f"a finite number in {interval(self.minimum, high, self.open_low)}{unit}"
        return "one line of text" if self.kind == "name" else "text"

    def parse(self, cell: str) -> object:
        """The checked value of one non-empty cell; OptionError when it is not allowed.

        Plain digits and plain decimals in range take a fast path (a million-row trace reads in
        seconds); anything else goes through :mod:`roofline.core.checks`, which also words the error.
        """
        if self.kind == "count":
            low = 1 if self.minimum is None else int(self.minimum)
            high = int(self.maximum or MAX_COUNT)
            if cell.isdigit() and len(cell) <= 10 and low <= int(cell) <= high:
                return int(cell)
            return check_count(cell, "", minimum=low, maximum=high)
        if self.kind in ("number", "seconds"):
            fast = _plain_float(cell)
            if fast is not None and self.within(fast):
                return fast
            return check_number(
                cell,
                "",
                dimension="seconds" if self.kind == "seconds" else "dimensionless",
                minimum=self.minimum,
                maximum=self.maximum,
                open_low=self.open_low,
            )
        if self.kind == "name":
            return check_name(cell, "", max_chars=MAX_CELL_CHARS)
        return cell

    def fast(self, cell: str) -> int | float | None:
        """A plain number in range (no unit, prefix or escape), else None: check it with :meth:`parse`."""
        if self.kind == "count":
            if cell.isdigit() and len(cell) <= 10:
                n = int(cell)
                return n if (1 if self.minimum is None else self.minimum) <= n <= (self.maximum or MAX_COUNT) else None
            return None
        if self.kind in ("number", "seconds"):
            x = _plain_float(cell)
            return x if x is not None and self.within(x) else None
        return None

    def within(self, x: float) -> bool:
        """Whether a finite number lies in the column's range."""
        high = (
            MAX_VALUE["seconds" if self.kind == "seconds" else "dimensionless"]
            if self.maximum is None
            else self.maximum
        )
        low_ok = self.minimum is None or (x > self.minimum if self.open_low else x >= self.minimum)
        return low_ok and x <= high


def _plain_float(cell: str) -> float | None:
    """float(cell) for a plain finite decimal (no unit, no underscores, at most 32 characters), else None."""
    if len(cell) > 32 or "_" in cell:
        return None
    try:
        x = float(cell)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Table:
    """Checked columns of a CSV file (name -> values in row order), its header and data line numbers."""

    columns: dict[str, list[Any]]
    header: tuple[str, ...]
    lines: tuple[int, ...]
    source: str

    def __len__(self) -> int:
        return len(self.lines)


def _fail(what: str, message: str, error: type[RooflineError]) -> RooflineError:
    return error(f"{what} {message}" if what else message)


def _header(reader: Any, columns: Sequence[Column], origin: str, extra: bool) -> list[str]:
    header = [unescape_cell(h.strip()) for h in next(reader, [])]
    if not header:
        raise RooflineError(f"{origin}: empty file (expected a CSV header with {', '.join(c.name for c in columns)})")
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise RooflineError(f"{origin}: column {repeated[0]!r} appears twice in the header")
    missing = [c.name for c in columns if c.required and c.default is None and c.name not in header]
    if missing:
        need = ",".join(c.name for c in columns if c.required and c.default is None)
        raise RooflineError(f"{origin}: header must have {need} (missing {listed(missing)}; got {shown(header)})")
    known = [c.name for c in columns]
    unknown = [h for h in header if h not in known]
    if unknown and not extra:
        raise RooflineError(f"{origin}: unknown column {shown(unknown[0])}; allowed: {', '.join(known)}")
    return header


def read_table(
    path: str | Path,
    columns: Sequence[Column],
    *,
    max_rows: int,
    what: str = "",
    kind: str = "table",
    error: type[RooflineError] = RooflineError,
    max_bytes: int = MAX_TABLE_FILE_BYTES,
    extra_columns: bool = False,
) -> Table:
    """Read and check a CSV file against ``columns``: at most ``max_rows`` data rows and ``max_bytes``.

    ``what`` prefixes every message (the flag, e.g. ``--trace``); ``kind`` names the file kind in
    size messages; ``extra_columns`` lets columns outside the schema through (ignored).
    """
    origin = f"{what} {path}".strip()
    try:
        text = read_input_text(path, max_bytes, error, kind)
    except RooflineError as exc:
        raise _fail(what, str(exc), error) from None
    try:
        return _parse_table(text, columns, origin, max_rows, extra_columns, kind)
    except RooflineError as exc:
        raise error(str(exc)) from None


def _too_many_rows(text: str, max_rows: int) -> bool:
    """True when an unquoted CSV plainly has more than ``max_rows`` non-blank data lines (one fast pass),
    so an oversized file is refused before any cell is parsed."""
    if '"' in text or text.count("\n") <= max_rows + 1:
        return False
    return sum(1 for line in text.splitlines() if line.strip()) - 1 > max_rows


def _parse_table(text: str, columns: Sequence[Column], origin: str, max_rows: int, extra: bool, kind: str) -> Table:
    if _too_many_rows(text, max_rows):
        raise RooflineError(f"{origin}: more than {max_rows:,} rows; {kind} files are limited to {max_rows:,} rows")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = _header(reader, columns, origin, extra)
        index = {c.name: header.index(c.name) for c in columns if c.name in header}
        raw: dict[str, list[str]] = {c.name: [] for c in columns}
        lines: list[int] = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            line = reader.line_num
            if len(lines) >= max_rows:
                raise RooflineError(
                    f"{origin}: more than {max_rows:,} rows; {kind} files are limited to {max_rows:,} rows"
                )
            if len(row) > len(header):
                raise RooflineError(f"{origin}: line {line}: more cells than the header's {len(header)} columns")
            for name, at in index.items():
                raw[name].append(row[at] if at < len(row) else "")
            lines.append(line)
    except csv.Error as exc:
        raise RooflineError(f"{origin}: line {reader.line_num}: malformed CSV ({exc})") from None
    if not lines:
        raise RooflineError(f"{origin}: no data rows after the header")
    values = {c.name: _column(c, raw[c.name] if c.name in index else None, lines, origin) for c in columns}
    return Table(values, tuple(header), tuple(lines), origin)


def _column(column: Column, cells: list[str] | None, lines: list[int], origin: str) -> list[Any]:
    """One column's checked values: plain numbers in range by a fast pass (C-level int/float), anything
    else cell by cell through :func:`_cell`, which also words the error of the first bad one."""
    if cells is None:
        return [column.default] * len(lines)
    if column.kind in ("count", "number", "seconds"):
        fast = _fast_numbers(column, cells)
        if fast is not None:
            return fast
    out = []
    for cell, line in zip(cells, lines, strict=True):
        value = column.fast(cell)
        out.append(_cell(column, cell, origin, line) if value is None else value)
    return out


def _fast_numbers(column: Column, cells: list[str]) -> list[Any] | None:
    """The column as numbers when every cell is a plain number in range, else None (check cell by cell)."""
    try:
        if column.kind == "count":
            counts = [int(c) for c in cells if len(c) <= 12]
            if len(counts) != len(cells):
                return None
            low = 1 if column.minimum is None else int(column.minimum)
            high = int(column.maximum or MAX_COUNT)
            return counts if low <= min(counts) and max(counts) <= high else None
        numbers = [float(c) for c in cells if len(c) <= 32 and "_" not in c]
    except ValueError:
        return None
    if len(numbers) != len(cells) or not all(map(column.within, numbers)):
        return None
    return numbers if all(map(math.isfinite, numbers)) else None


def _cell(column: Column, raw: str | None, origin: str, line: int) -> object:
    cell = unescape_cell((raw or "").strip())
    if not cell:
        if column.required and column.default is None:
            raise RooflineError(f"{origin}: line {line}: column {column.name!r} is empty; allowed: {column.allowed()}")
        return column.default
    if len(cell) > MAX_CELL_CHARS:
        raise RooflineError(
            f"{origin}: line {line}: column {column.name!r} has {len(cell):,} characters; at most {MAX_CELL_CHARS}"
        )
    try:
        return column.parse(cell)
    except OptionError:
        raise RooflineError(
            f"{origin}: line {line}: column {column.name!r} is {shown(cell)}; allowed: {column.allowed()}"
        ) from None


# --------------------------------------------------------------------------- writing

#: First characters that make a spreadsheet treat a cell as a formula (OWASP CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: object) -> object:
    """``value`` safe for a spreadsheet: text starting with = + - @ (or a tab/CR) gets a leading ',
    unless it is a plain number such as -1.5; anything that is not text is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def unescape_cell(text: str) -> str:
    """Undo :func:`csv_cell` on a cell read back ('=x -> =x); any other text is returned as it is."""
    if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) and not _is_number(text[1:]):
        return text[1:]
    return text


class SafeWriter:
    """``csv.writer`` whose every cell passes through :func:`csv_cell`."""

    def __init__(self, handle: IO[str], **kwargs: Any) -> None:
        self._writer = csv.writer(handle, **kwargs)

    def writerow(self, row: Iterable[object]) -> Any:
        return self._writer.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


class SafeDictWriter(csv.DictWriter):
    """``csv.DictWriter`` whose every cell (header included) passes through :func:`csv_cell`."""

    def writeheader(self) -> Any:
        return self.writer.writerow([csv_cell(f) for f in self.fieldnames])

    def _dict_to_list(self, rowdict: Any) -> Any:  # csv.DictWriter's per-row hook
        return [csv_cell(v) for v in super()._dict_to_list(rowdict)]


def csv_writer(handle: IO[str], **kwargs: Any) -> SafeWriter:
    """A formula-safe ``csv.writer`` on ``handle`` (same keyword arguments)."""
    return SafeWriter(handle, **kwargs)
