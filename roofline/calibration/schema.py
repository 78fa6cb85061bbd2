"""The measured-timing schema: one CSV row per timed kernel call, SI units.

Columns (a contract; ``time_s`` is seconds, ``message_bytes`` is bytes):

hardware, op, dtype, m, n, k, batch, q_len, kv_len, num_heads, num_kv_heads, head_dim,
message_bytes, num_devices, time_s, source, impl

``op`` is one of :data:`OPS`.  Shape columns an op does not use are left empty.  GEMM:
C[m, n] = A[m, k] . W[k, n].  Attention: ``batch`` sequences of ``q_len`` new tokens over
``kv_len`` cached tokens (decode: q_len = 1), heads per device.  Collectives:
``message_bytes`` is the per-device buffer nccl-tests calls ``size`` (all-reduce: the
buffer reduced; all-gather: the gathered output; reduce-scatter: the input; all-to-all:
the per-device send buffer) on ``num_devices`` devices.  ``impl`` names the kernel family
when an op has several (``nccl``, ``custom``); it may be empty.  Files may be gzip'd
(``.csv.gz``).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import RooflineError
from ..files import write_bytes_atomic
from ..units import DTYPE_BYTES

OPS = (
    "gemm",
    "attention_prefill",
    "attention_decode",
    "allreduce",
    "allgather",
    "reducescatter",
    "alltoall",
)
COLLECTIVE_OPS = ("allreduce", "allgather", "reducescatter", "alltoall")
TEXT_COLUMNS = ("hardware", "op", "dtype", "source", "impl")
NUMBER_COLUMNS = (
    "m",
    "n",
    "k",
    "batch",
    "q_len",
    "kv_len",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "message_bytes",
    "num_devices",
    "time_s",
)
COLUMNS = (
    "hardware", "op", "dtype", "m", "n", "k", "batch", "q_len", "kv_len", "num_heads",
    "num_kv_heads", "head_dim", "message_bytes", "num_devices", "time_s", "source", "impl",
)
REQUIRED = ("hardware", "op", "dtype", "time_s")
#: Shape columns each op needs (non-empty, positive).
OP_SHAPE: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k"),
    "attention_prefill": ("batch", "q_len", "num_heads", "num_kv_heads", "head_dim"),
    "attention_decode": ("batch", "kv_len", "num_heads", "num_kv_heads", "head_dim"),
    **{op: ("message_bytes", "num_devices") for op in COLLECTIVE_OPS},
}


class CalibrationError(RooflineError):
    """Malformed measurements or an impossible calibration request."""


@dataclass(frozen=True)
class Measurements:
    """Columns of measured rows: text columns as str arrays, numbers as float (nan = empty)."""

    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["time_s"]) if self.columns else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def take(self, index: np.ndarray) -> Measurements:
        """The rows selected by a boolean mask or an index array."""
        return Measurements({c: v[index] for c, v in self.columns.items()})

    def where(self, **equal: str) -> Measurements:
        """Rows whose text columns equal the given values, e.g. ``where(op="gemm")``."""
        mask = np.ones(len(self), bool)
        for name, value in equal.items():
            mask &= self.columns[name] == value
        return self.take(mask)

    def unique(self, name: str) -> list[str]:
        return sorted({str(v) for v in self.columns[name]}) if len(self) else []

    def to_rows(self) -> list[dict[str, str]]:
        """Rows as CSV-ready strings (empty for nan)."""
        return [
            {c: _cell(self.columns[c][i]) for c in COLUMNS} for i in range(len(self))
        ]


def _cell(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return ""
        if value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return format(float(value), ".7g")
    return str(value)


def empty() -> Measurements:
    """A table with all columns and no rows."""
    return from_records([])


def from_records(records: Iterable[dict[str, object]]) -> Measurements:
    """Build a table from dicts keyed by column name (missing numbers -> nan, text -> '')."""
    rows = list(records)
    cols: dict[str, np.ndarray] = {}
    for name in TEXT_COLUMNS:
        cols[name] = np.array([str(r.get(name, "") or "") for r in rows], dtype=object)
    for name in NUMBER_COLUMNS:
        cols[name] = np.array([_float(r.get(name)) for r in rows], dtype=float)
    return Measurements(cols)


def _float(value: object) -> float:
    if value is None or value == "":
        return math.nan
    return float(value)  # type: ignore[arg-type]


def concat(tables: Sequence[Measurements]) -> Measurements:
    """Rows of several tables, in order."""
    tables = [t for t in tables if len(t)]
    if not tables:
        return empty()
    return Measurements({c: np.concatenate([t.columns[c] for t in tables]) for c in COLUMNS})


def open_text(path: Path) -> io.TextIOBase:
    """Open a CSV (``.gz`` transparently) for reading, with a one-line error."""
    try:
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
        return open(path, encoding="utf-8", newline="")  # noqa: SIM115
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read file ({exc.strerror})") from None


def read_csv_dicts(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file; a one-line error when it is not CSV."""
    with open_text(path) as handle:
        try:
            reader = csv.DictReader(handle)
            header = list(reader.fieldnames or [])
            rows = list(reader)
        except (csv.Error, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise CalibrationError(f"{path}: malformed CSV ({exc})") from None
    if not header:
        raise CalibrationError(f"{path}: empty file (expected a CSV header)")
    return header, rows


def validate(table: Measurements, origin: str) -> Measurements:
    """Check ops, dtypes, positive times and the shape columns each op needs."""
    for i in range(len(table)):
        op = table["op"][i]
        line = f"{origin}: row {i + 2}"
        if op not in OP_SHAPE:
            raise CalibrationError(f"{line}: column 'op' is {op!r}; allowed: {', '.join(OPS)}")
        dtype = table["dtype"][i]
        if dtype not in DTYPE_BYTES:
            allowed = ", ".join(DTYPE_BYTES)
            raise CalibrationError(f"{line}: column 'dtype' is {dtype!r}; allowed: {allowed}")
        if not table["hardware"][i]:
            raise CalibrationError(f"{line}: column 'hardware' is empty")
        for name in ("time_s", *OP_SHAPE[op]):
            value = table[name][i]
            if not (value > 0 and math.isfinite(value)):
                raise CalibrationError(
                    f"{line}: column {name!r} must be a positive number for op {op!r}"
                )
    return table


def parse_table(header: list[str], rows: list[dict[str, str]], origin: str) -> Measurements:
    """Rows of a file in this schema -> validated table (one-line errors)."""
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise CalibrationError(
            f"{origin}: missing column {missing[0]!r} (schema columns: {', '.join(COLUMNS)})"
        )
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        raise CalibrationError(
            f"{origin}: unknown column {unknown[0]!r} (schema columns: {', '.join(COLUMNS)})"
        )
    for lineno, row in enumerate(rows, start=2):
        for name in NUMBER_COLUMNS:
            text = (row.get(name) or "").strip()
            if text:
                try:
                    float(text)
                except ValueError:
                    raise CalibrationError(
                        f"{origin}: row {lineno}: column {name!r} is not a number ({text!r})"
                    ) from None
    return validate(from_records(rows), origin)


def read_measurements(path: str | Path) -> Measurements:
    """Read one file in this schema (``.csv`` or ``.csv.gz``)."""
    path = Path(path)
    header, rows = read_csv_dicts(path)
    return parse_table(header, rows, str(path))


def write_measurements(table: Measurements, path: str | Path) -> Path:
    """Write a table atomically (``.gz`` suffix -> gzip); no partial file on failure."""
    path = Path(path)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table.to_rows())
    data = buffer.getvalue().encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    write_bytes_atomic(path, data)
    return path
