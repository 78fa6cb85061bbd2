"""The end-to-end serving measurement schema: one CSV row per measured serving run, SI units.

A row says what ran (model, hardware, parallelism, dtypes, engine), what it was asked to do
(request lengths and the load) and what was measured.  Files may be gzip'd (``.csv.gz``) and
may start with a UTF-8 byte-order mark.  Columns (a contract; empty cell = not given):

Identity
  ``id``             unique within a file, e.g. ``trtllm-static/0.6.1/llama-2-70b/...``
  ``source``         short name of the data set, e.g. ``trtllm-static-batch``, ``vllm-bench-serve``
  ``reference``      where the numbers were published (repository @ commit, path, table)
  ``license``        licence of the numbers, e.g. ``Apache-2.0``, ``MIT`` (empty for own runs)

Deployment
  ``model``          built-in model name, model YAML path or Hugging Face ``config.json`` path
  ``hardware``       built-in hardware name or hardware/calibrated-profile YAML path
  ``tp, pp, ep, dp`` tensor-, pipeline-, expert- and data-parallel degrees (integers >= 1,
                     default 1).  One replica spans tp·pp chips; the deployment has dp
                     replicas, so tp·pp·dp chips.  Experts are sharded ep ways over those chips.
  ``weight_dtype, kv_dtype, compute_dtype``  one of bf16, fp16, fp32, tf32, fp8, int8, fp4, int4
  ``engine``         serving engine (``vllm``, ``trtllm``, ``sglang``; ``unknown`` if not stated)
  ``engine_version`` e.g. ``0.6.1`` (may be empty)

Workload
  ``input_len, output_len``  tokens per request (the mean when lengths vary), both > 0
  ``lengths``        optional distribution ``input:output:weight,...`` e.g. ``512:128:3,4096:512:1``
                     (``roofline.analyses.lengths.parse_lengths``); either it or input_len and output_len
  ``load``           ``static``: one batch of ``batch`` requests run together from prefill to the
                     last token; ``concurrency``: ``concurrency`` clients each keep one request in
                     flight (closed loop); ``rate``: requests arrive at ``arrival_rate`` per second
                     (``inf``: all at once, i.e. a max-throughput run)
  ``batch, concurrency``  integers >= 1 (``batch`` needed for static, ``concurrency`` for concurrency)
  ``arrival_rate``   requests/s > 0 or ``inf`` (needed for rate)
  ``num_requests``   requests completed in the run (integer >= 1); ``num_failed`` those that failed
                     (client timeouts, errors; integer >= 0)
  ``duration_s``     how long the load ran (s > 0; a stage of a staged run); ``timeout_s`` the client's
                     request timeout (s > 0), where requests were abandoned
  ``prefix_hit_rate``  share of prompt tokens served from the prefix cache, in [0, 1)
  ``max_num_batched_tokens, max_num_seqs``  the engine's scheduler knobs the run used (integers >= 1;
                     empty: the engine entry's defaults)

Measured (seconds, tokens/s, requests/s; at least one given, every one > 0)
  ``ttft_s, ttft_p50_s, ttft_p90_s, ttft_p99_s``  time to first token: mean and percentiles.
                     For a static batch: the prefill of the whole batch.
  ``tpot_s, tpot_p50_s, tpot_p90_s, tpot_p99_s``  time per output token after the first
                     (per request; for a static batch: one decode step)
  ``itl_s, itl_p50_s, itl_p90_s, itl_p99_s``  inter-token latency: mean and percentiles
  ``e2e_s, e2e_p50_s, e2e_p90_s, e2e_p99_s``  end-to-end request latency: mean and percentiles
  ``output_tokens_per_s``  generated tokens per second of the whole deployment (all its chips)
  ``requests_per_s`` completed requests per second of the whole deployment

``notes`` says, in words, what was converted or assumed for the row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from roofline.analyses.lengths import LengthDistribution, parse_lengths
from roofline.calibrate.engine.cells import (
    E2EError,
    bad_cell,
    cell_text,
    count_cell,
    hit_rate_cell,
    positive_cell,
    zero_count_cell,
)
from roofline.core.checks import MAX_COUNT
from roofline.core.errors import RooflineError
from roofline.core.files import read_input_text
from roofline.core.tables import MAX_CELL_CHARS, unescape_cell
from roofline.core.units import DTYPE_BYTES

LOADS = ("static", "concurrency", "rate")
TEXT_COLUMNS = (
    "id",
    "source",
    "reference",
    "license",
    "model",
    "hardware",
    "weight_dtype",
    "kv_dtype",
    "compute_dtype",
    "engine",
    "engine_version",
    "lengths",
    "load",
    "notes",
)
DEGREE_COLUMNS = ("tp", "pp", "ep", "dp")
COUNT_COLUMNS = ("batch", "concurrency", "num_requests", "max_num_batched_tokens", "max_num_seqs")
#: Optional run conditions: seconds > 0, and the prefix-cache hit rate in [0, 1).
CONDITION_COLUMNS = ("duration_s", "timeout_s")
MEASURED_COLUMNS = (
    "ttft_s",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "tpot_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "tpot_p99_s",
    "itl_s",
    "e2e_s",
    "output_tokens_per_s",
    "requests_per_s",
    "itl_p50_s",
    "itl_p90_s",
    "itl_p99_s",
    "e2e_p50_s",
    "e2e_p90_s",
    "e2e_p99_s",
)
COLUMNS = (
    "id",
    "source",
    "reference",
    "license",
    "model",
    "hardware",
    "tp",
    "pp",
    "ep",
    "dp",
    "weight_dtype",
    "kv_dtype",
    "compute_dtype",
    "engine",
    "engine_version",
    "input_len",
    "output_len",
    "lengths",
    "load",
    "batch",
    "concurrency",
    "arrival_rate",
    "num_requests",
    *MEASURED_COLUMNS[:12],
    "num_failed",
    "duration_s",
    "timeout_s",
    "prefix_hit_rate",
    "max_num_batched_tokens",
    "max_num_seqs",
    *MEASURED_COLUMNS[12:],
    "notes",
)
REQUIRED = ("id", "source", "model", "hardware", "weight_dtype", "kv_dtype", "compute_dtype", "engine", "load")
DTYPE_COLUMNS = ("weight_dtype", "kv_dtype", "compute_dtype")
#: Which count column each load needs.
LOAD_NEEDS = {"static": "batch", "concurrency": "concurrency", "rate": "arrival_rate"}


@dataclass(frozen=True)
class E2ERow:
    """One measured serving run in the schema above (numbers SI; None = not given)."""

    id: str
    source: str
    model: str
    hardware: str
    weight_dtype: str
    kv_dtype: str
    compute_dtype: str
    engine: str
    load: str
    input_len: float | None = None
    output_len: float | None = None
    lengths: str = ""
    reference: str = ""
    license: str = ""
    engine_version: str = ""
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    batch: int | None = None
    concurrency: int | None = None
    arrival_rate: float | None = None
    num_requests: int | None = None
    ttft_s: float | None = None
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_s: float | None = None
    tpot_p50_s: float | None = None
    tpot_p90_s: float | None = None
    tpot_p99_s: float | None = None
    itl_s: float | None = None
    e2e_s: float | None = None
    output_tokens_per_s: float | None = None
    requests_per_s: float | None = None
    num_failed: int | None = None
    duration_s: float | None = None
    timeout_s: float | None = None
    prefix_hit_rate: float | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    itl_p50_s: float | None = None
    itl_p90_s: float | None = None
    itl_p99_s: float | None = None
    e2e_p50_s: float | None = None
    e2e_p90_s: float | None = None
    e2e_p99_s: float | None = None
    notes: str = ""

    @property
    def chips(self) -> int:
        """Chips of the whole deployment: tp·pp per replica, dp replicas."""
        return self.tp * self.pp * self.dp

    def length_distribution(self) -> LengthDistribution | None:
        """The ``lengths`` column parsed, or None when the row gives fixed lengths only."""
        return parse_lengths(self.lengths) if self.lengths else None

    @property
    def mean_input_len(self) -> float:
        """input_len, else the mean input of ``lengths``."""
        dist = self.length_distribution()
        return float(self.input_len) if self.input_len is not None else dist.mean_input  # type: ignore[union-attr]

    @property
    def mean_output_len(self) -> float:
        """output_len, else the mean output of ``lengths``."""
        dist = self.length_distribution()
        return float(self.output_len) if self.output_len is not None else dist.mean_output  # type: ignore[union-attr]

    def conditions(self) -> str:
        """One line of the run's conditions, e.g. for a hover label."""
        load = {
            "static": f"static batch {self.batch}",
            "concurrency": f"concurrency {self.concurrency}",
            "rate": f"rate {cell_text(self.arrival_rate)} req/s",
        }[self.load]
        par = f"tp {self.tp}" + "".join(
            f" {k} {v}" for k, v in (("pp", self.pp), ("ep", self.ep), ("dp", self.dp)) if v > 1
        )
        engine = f"{self.engine} {self.engine_version}".strip()
        return (
            f"{self.model} on {self.chips}x {self.hardware} ({par}), weights {self.weight_dtype}, "
            f"KV {self.kv_dtype}, compute {self.compute_dtype}, {engine}, "
            f"{cell_text(self.mean_input_len)} in / {cell_text(self.mean_output_len)} out, {load}"
        )

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def parse_row(cells: dict[str, str], origin: str, line: int) -> E2ERow:
    """One CSV row (strings) -> a checked :class:`E2ERow`; one-line errors name file, row and column."""
    get = {k: (v or "").strip() for k, v in cells.items() if k is not None}
    values: dict[str, object] = {}
    for name in TEXT_COLUMNS:
        values[name] = unescape_cell(get.get(name, ""))
        if len(str(values[name])) > MAX_CELL_CHARS or any(ord(c) < 32 for c in str(values[name])):
            raise bad_cell(
                origin, line, name, str(values[name]), f"one line of text, at most {MAX_CELL_CHARS} characters"
            )
    for name in REQUIRED:
        if not values[name]:
            raise E2EError(f"{origin}: row {line}: column {name!r} is empty (required)")
    for name in DTYPE_COLUMNS:
        if values[name] not in DTYPE_BYTES:
            raise bad_cell(origin, line, name, str(values[name]), ", ".join(DTYPE_BYTES))
    if values["load"] not in LOADS:
        raise bad_cell(origin, line, "load", str(values["load"]), ", ".join(LOADS))
    for name in DEGREE_COLUMNS:
        values[name] = count_cell(get[name], origin, line, name) if get.get(name) else 1
    for name in COUNT_COLUMNS:
        values[name] = count_cell(get[name], origin, line, name) if get.get(name) else None
    values["arrival_rate"] = (
        positive_cell(get["arrival_rate"], origin, line, "arrival_rate", allow_inf=True, maximum=1e9)
        if get.get("arrival_rate")
        else None
    )
    for name in ("input_len", "output_len"):
        values[name] = positive_cell(get[name], origin, line, name, maximum=MAX_COUNT) if get.get(name) else None
        if values[name] is not None and values[name] < 1:  # type: ignore[operator]
            raise bad_cell(origin, line, name, get[name], f"a number of tokens >= 1 and at most {MAX_COUNT}")
    for name in (*MEASURED_COLUMNS, *CONDITION_COLUMNS):
        values[name] = positive_cell(get[name], origin, line, name) if get.get(name) else None
    values["num_failed"] = (
        zero_count_cell(get["num_failed"], origin, line, "num_failed") if get.get("num_failed") else None
    )
    values["prefix_hit_rate"] = hit_rate_cell(get.get("prefix_hit_rate", ""), origin, line)
    _check_lengths(values, origin, line)
    need = LOAD_NEEDS[str(values["load"])]
    if values[need] is None:
        raise E2EError(f"{origin}: row {line}: column {need!r} is empty; load {values['load']!r} needs it")
    if all(values[name] is None for name in MEASURED_COLUMNS):
        raise E2EError(f"{origin}: row {line}: no measured value; give at least one of {', '.join(MEASURED_COLUMNS)}")
    return E2ERow(**values)  # type: ignore[arg-type]


def _check_lengths(values: dict[str, object], origin: str, line: int) -> None:
    if values["lengths"]:
        try:
            parse_lengths(str(values["lengths"]))
        except RooflineError as exc:
            detail = str(exc).removeprefix("lengths: ")
            raise bad_cell(
                origin,
                line,
                "lengths",
                str(values["lengths"]),
                f"input:output[:weight],... e.g. 512:128:3,4096:512:1 ({detail})",
            ) from None
    elif values["input_len"] is None or values["output_len"] is None:
        missing = "input_len" if values["input_len"] is None else "output_len"
        raise E2EError(f"{origin}: row {line}: column {missing!r} is empty; give input_len and output_len (or lengths)")


# --------------------------------------------------------------------------- files


#: Largest end-to-end file read (after gzip decompression); the shipped tables are a few kB.
MAX_E2E_FILE_BYTES = 64 * 2**20


def read_csv_dicts(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file (bounded, UTF-8, gzip by its magic bytes); one line when it is not CSV."""
    text = read_input_text(path, MAX_E2E_FILE_BYTES, E2EError, "end-to-end")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        rows = list(reader)
    except csv.Error as exc:
        raise E2EError(f"{path}: malformed CSV ({exc})") from None
    if not header:
        raise E2EError(f"{path}: empty file (expected a CSV header)")
    return header, rows


def is_schema_header(header: Sequence[str]) -> bool:
    """True when a CSV header is this schema's (all required columns, nothing unknown)."""
    return set(REQUIRED) <= set(header) and set(header) <= set(COLUMNS)


def parse_rows(header: Sequence[str], rows: Iterable[dict[str, str]], origin: str) -> list[E2ERow]:
    """Rows of a file in this schema -> checked rows (unknown/missing columns, duplicate ids)."""
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        raise E2EError(f"{origin}: unknown column {unknown[0]!r} (schema columns: {', '.join(COLUMNS)})")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise E2EError(f"{origin}: missing column {missing[0]!r} (required: {', '.join(REQUIRED)})")
    out: list[E2ERow] = []
    seen: dict[str, int] = {}
    for line, cells in enumerate(rows, start=2):
        if None in cells:
            raise E2EError(f"{origin}: row {line}: more cells than header columns")
        row = parse_row(cells, origin, line)
        if row.id in seen:
            raise E2EError(
                f"{origin}: row {line}: column 'id' is {row.id!r}, already used in row {seen[row.id]}; "
                "allowed: an id unique within the file"
            )
        seen[row.id] = line
        out.append(row)
    return out


def read_rows(path: str | Path) -> list[E2ERow]:
    """Read one file in this schema (``.csv`` or ``.csv.gz``)."""
    path = Path(path)
    header, rows = read_csv_dicts(path)
    return parse_rows(header, rows, str(path))


assert {f.name for f in fields(E2ERow)} == set(COLUMNS), "E2ERow fields and COLUMNS must agree"
