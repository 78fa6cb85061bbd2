"""The measured-timing schema: one CSV row per timed kernel call, SI units.

Columns (a contract; ``time_s`` is seconds, ``message_bytes`` is bytes):

hardware, op, dtype, m, n, k, batch, q_len, kv_len, num_heads, num_kv_heads, head_dim,
message_bytes, num_devices, time_s, source, impl, num_experts, top_k, ep, tp, gated, routing,
v_head_dim

``op`` is one of :data:`OPS` or a registered kernel family (:mod:`roofline.kernels.registry`:
``moe``, ``mla_decode``, ``mla_prefill``, ``bmm``).  Shape columns an op does not use are left empty.  GEMM:
C[m, n] = A[m, k] . W[k, n].  Attention: ``batch`` sequences of ``q_len`` new tokens over
``kv_len`` cached tokens (decode: q_len = 1), heads per device.  Collectives:
``message_bytes`` is the per-device buffer nccl-tests calls ``size`` (all-reduce: the
buffer reduced; all-gather: the gathered output; reduce-scatter: the input; all-to-all:
the per-device send buffer) on ``num_devices`` devices.  ``impl`` names the kernel family
when an op has several (``nccl``, ``custom``); it may be empty.  Fused MoE (``moe``, one layer on
one GPU): ``m`` tokens entering the layer (before the top-k fan-out), ``k`` hidden size, ``n`` expert
intermediate size before the ``tp`` split, ``num_experts`` before the ``ep`` split, ``top_k``,
``gated`` (1 SwiGLU, 0 one up matrix), ``routing`` how tokens spread over experts (``balanced``,
``uniform``, ``power_law_<alpha>``).  MLA attention: ``head_dim`` is the query-key width per head
and ``v_head_dim`` the value width (absorbed decode: kv_lora_rank + rope and kv_lora_rank over one
latent KV head).  Batched GEMM (``bmm``): ``batch`` independent [m, k] x [k, n] products.  Files
may be gzip'd (``.csv.gz``).

Reading is bounded: at most :data:`~roofline.core.files.MAX_MEASUREMENT_FILE_BYTES` (after
decompression) and :data:`MAX_ROWS` rows per file, streamed into columns; a UTF-8 byte-order
mark is accepted; every cell is checked (a number, finite, in its column's range) and a bad
one is refused with one line naming the file, the row and the column.
"""

from __future__ import annotations

import gzip
import io
import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roofline.core.checks import MAX_COUNT, interval
from roofline.core.errors import MeasurementError, shown
from roofline.core.files import MAX_MEASUREMENT_FILE_BYTES as MAX_MEASUREMENT_FILE_BYTES  # the readers' limit
from roofline.core.files import write_bytes_atomic
from roofline.core.tables import SafeDictWriter
from roofline.core.units import DTYPE_BYTES

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
TEXT_COLUMNS = ("hardware", "op", "dtype", "source", "impl", "routing")
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
    "num_experts",
    "top_k",
    "ep",
    "tp",
    "gated",
    "v_head_dim",
)
COLUMNS = (
    "hardware",
    "op",
    "dtype",
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
    "source",
    "impl",
    "num_experts",
    "top_k",
    "ep",
    "tp",
    "gated",
    "routing",
    "v_head_dim",
)
REQUIRED = ("hardware", "op", "dtype", "time_s")
#: Shape columns each op needs (non-empty, positive).
OP_SHAPE: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k"),
    "attention_prefill": ("batch", "q_len", "num_heads", "num_kv_heads", "head_dim"),
    "attention_decode": ("batch", "kv_len", "num_heads", "num_kv_heads", "head_dim"),
    **{op: ("message_bytes", "num_devices") for op in COLLECTIVE_OPS},
}


#: Rows read from one measurement file at most (the public tables have up to ~100,000).
MAX_ROWS = 2_000_000
#: Largest value of each number column (shape columns are counts, like a model's dimensions).
COLUMN_MAX: dict[str, float] = {
    **{name: float(MAX_COUNT) for name in NUMBER_COLUMNS},
    "message_bytes": 1e18,  # an exabyte
    "time_s": 1e7,  # about four months
}


class CalibrationError(MeasurementError):
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
        return [{c: _cell(self.columns[c][i]) for c in COLUMNS} for i in range(len(self))]


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


def check_record(record: Mapping[str, object], where: str) -> None:
    """One row: op and dtype known, hardware named, numbers finite and in range, op shape positive."""
    op = record.get("op")
    if op not in OP_SHAPE:
        raise CalibrationError(f"{where}: column 'op' is {shown(op)}; allowed: {', '.join(OP_SHAPE)}")
    dtype = record.get("dtype")
    if dtype not in DTYPE_BYTES:
        raise CalibrationError(f"{where}: column 'dtype' is {shown(dtype)}; allowed: {', '.join(DTYPE_BYTES)}")
    if not str(record.get("hardware") or "").strip():
        raise CalibrationError(f"{where}: column 'hardware' is empty")
    needed = ("time_s", *OP_SHAPE[str(op)])
    for name in NUMBER_COLUMNS:
        value = record.get(name)
        if value is None or value == "":
            if name in needed:
                raise CalibrationError(
                    f"{where}: column {name!r} must be a positive number for op {op!r} (got an empty cell)"
                )
            continue
        number = cell_number(value, name, where)
        if name in needed and number <= 0:
            raise CalibrationError(
                f"{where}: column {name!r} must be a positive number for op {op!r} (got {shown(value)})"
            )


def cell_number(value: object, name: str, where: str) -> float:
    """A number cell: finite, >= 0 and at most :data:`COLUMN_MAX` for its column."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise CalibrationError(f"{where}: column {name!r} is not a number ({shown(value)})") from None
    high = COLUMN_MAX[name]
    if not (math.isfinite(number) and 0 <= number <= high):
        raise CalibrationError(
            f"{where}: column {name!r} must be a finite number in {interval(0, high)} (got {shown(value)})"
        )
    return number


class TableBuilder:
    """Rows appended one at a time into compact columns (floats in arrays, text interned)."""

    def __init__(self) -> None:
        self._text: dict[str, list[str]] = {name: [] for name in TEXT_COLUMNS}
        self._numbers: dict[str, array[float]] = {name: array("d") for name in NUMBER_COLUMNS}
        self._interned: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._numbers["time_s"])

    def add(self, record: Mapping[str, object], where: str) -> None:
        """Check ``record`` (see :func:`check_record`) and append it."""
        check_record(record, where)
        for name in TEXT_COLUMNS:
            text = str(record.get(name, "") or "")
            self._text[name].append(self._interned.setdefault(text, text))
        for name in NUMBER_COLUMNS:
            value = record.get(name)
            self._numbers[name].append(math.nan if value is None or value == "" else float(value))  # type: ignore[arg-type]

    def build(self) -> Measurements:
        cols: dict[str, np.ndarray] = {}
        for name in TEXT_COLUMNS:
            cols[name] = np.array(self._text[name], dtype=object)
        for name in NUMBER_COLUMNS:
            cols[name] = np.frombuffer(self._numbers[name], dtype=float).copy()
        return Measurements({c: cols[c] for c in COLUMNS})


def validate(table: Measurements, origin: str) -> Measurements:
    """Check every row of a table built in memory (see :func:`check_record`)."""
    for i in range(len(table)):
        check_record({c: table[c][i] for c in COLUMNS if not _is_nan(table[c][i])}, f"{origin}: row {i + 2}")
    return table


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def parse_table(
    header: list[str], rows: Iterable[dict[str, str]] | Iterator[tuple[int, dict[str, str]]], origin: str
) -> Measurements:
    """Rows of a file in this schema -> validated table (one-line errors naming row and column).

    ``rows`` are dicts (numbered from line 2) or (line, dict) pairs from :func:`iter_csv`.
    """
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise CalibrationError(f"{origin}: missing column {missing[0]!r} (schema columns: {', '.join(COLUMNS)})")
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        raise CalibrationError(f"{origin}: unknown column {shown(unknown[0])} (schema columns: {', '.join(COLUMNS)})")
    builder = TableBuilder()
    for lineno, item in enumerate(rows, start=2):
        line, row = item if isinstance(item, tuple) else (lineno, item)
        record = {name: (row.get(name) or "").strip() for name in COLUMNS}
        builder.add(record, f"{origin}: row {line}")
    return builder.build()


def read_measurements(path: str | Path) -> Measurements:
    """Read one file in this schema (``.csv`` or ``.csv.gz``)."""
    path = Path(path)
    from roofline.kernels.csvfile import iter_csv  # the bounded reader (it reads this schema's limits)

    header, rows = iter_csv(path)
    try:
        return parse_table(header, rows, str(path))
    finally:
        rows.close()


def write_measurements(table: Measurements, path: str | Path) -> Path:
    """Write a table atomically (``.gz`` suffix -> gzip); no partial file on failure."""
    path = Path(path)
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table.to_rows())
    data = buffer.getvalue().encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    write_bytes_atomic(path, data)
    return path


#: Fewest rows per op a fit may be limited to (the held-out splits need 10 training rows).
MIN_FIT_ROWS = 10


def check_fit_request(dtype: str | None, max_rows: object, seed: object) -> tuple[int, int]:
    """(max_rows, seed) of a calibration request, or an OptionError naming the parameter.

    ``dtype`` must be a known compute dtype (or None for all); ``max_rows`` a whole number in
    [MIN_FIT_ROWS, MAX_ROWS]; ``seed`` a whole number >= 0.
    """
    from roofline.core.checks import check_count
    from roofline.core.errors import OptionError

    if dtype is not None and dtype not in DTYPE_BYTES:
        raise OptionError(f"dtype: unknown dtype {shown(dtype)}; allowed: {', '.join(DTYPE_BYTES)}")
    rows = check_count(max_rows, "max_rows", minimum=MIN_FIT_ROWS, maximum=MAX_ROWS)
    return rows, check_count(seed, "seed", minimum=0, maximum=2**63 - 1)
