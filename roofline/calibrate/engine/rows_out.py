"""Writing end-to-end rows: a row as CSV cells, the CSV text of rows, an atomic (optionally gzipped) file."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable
from pathlib import Path

from roofline.calibrate.engine.schema import COLUMNS, E2ERow, cell_text
from roofline.core.files import write_bytes_atomic
from roofline.core.tables import SafeDictWriter


def row_cells(row: E2ERow) -> dict[str, str]:
    """A row as CSV strings (empty for None; defaults of 1 written out)."""
    data = row.as_dict()
    return {c: (v if isinstance(v, str) else cell_text(v)) for c, v in data.items()}  # type: ignore[arg-type]


def rows_csv(rows: Iterable[E2ERow]) -> str:
    """The CSV text of rows, header first, columns in schema order."""
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(row_cells(r) for r in rows)
    return buffer.getvalue()


def write_rows(rows: Iterable[E2ERow], path: str | Path) -> Path:
    """Write rows atomically (``.gz`` suffix -> gzip); no partial file on failure."""
    path = Path(path)
    data = rows_csv(rows).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    return write_bytes_atomic(path, data)
