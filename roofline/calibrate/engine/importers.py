"""Importers from published or user-made serving results into the schema of :mod:`.schema`.

Formats (``auto`` detects them from the file: a JSON object by its keys, a CSV by its header):

* ``vllm``: the JSON ``vllm bench serve --save-result`` (earlier ``benchmarks/benchmark_serving.py``)
  writes: ``mean_/median_/pNN_{ttft,tpot,itl,e2el}_ms`` (milliseconds), ``output_throughput``
  (tokens/s), ``request_throughput`` (requests/s), ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``max_concurrency``, ``request_rate`` (number or ``"inf"``),
  ``model_id``; with ``--save-detailed`` also ``input_lens``/``output_lens``.  One object per file
  or one per line (``--append-result``).  Hardware, parallelism and dtypes are not in the file:
  they come from :class:`ImportOptions`.
* ``sglang``: SGLang ``bench_serving`` JSONL results; ``genai-perf``: genai-perf and aiperf profile
  exports (:mod:`.bench_results`); ``inference-perf``: inference-perf load-test summaries, one row per
  stage (:mod:`.inference_perf`)
* ``trtllm-static``: TensorRT-LLM's static-batching throughput table (v0.5.0 totals, v0.6.1 per GPU)
* ``trtllm-first-token``: TensorRT-LLM's batch-1 first-token latency table (ms)
* ``trtllm-perf-overview``: TensorRT-LLM perf-overview max-throughput tables (total output tok/s)
* ``splitwise``: splitwise-sim ``perf_model.csv`` (prefill of the whole batch and per-token decode
  time in ms, 5 repeats per point, averaged into one row)
* ``schema``: a file already in the schema

Each format has its module (:mod:`.vllm_results`, :mod:`.trtllm_tables`, :mod:`.splitwise_table`, with
the shared cell readers in :mod:`.table_cells`); this module detects the format, dispatches and re-exports
the public names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from roofline.calibrate.engine.bench_results import genai_perf_row, is_genai_perf, is_sglang, sglang_row
from roofline.calibrate.engine.inference_perf import import_inference_perf, is_inference_perf
from roofline.calibrate.engine.rows_out import row_cells
from roofline.calibrate.engine.schema import E2EError, E2ERow, is_schema_header, parse_rows, read_csv_dicts
from roofline.calibrate.engine.splitwise_table import (
    E2E_CONSISTENCY,
    SPLITWISE_COLUMNS,
    SPLITWISE_LICENSE,
    SPLITWISE_REFERENCE,
    _splitwise_rows,
)
from roofline.calibrate.engine.table_cells import HARDWARE, MODELS
from roofline.calibrate.engine.trtllm_tables import (
    FIRST_TOKEN_COLUMNS,
    KV_ASSUMED,
    OVERVIEW_COLUMNS,
    PRECISION,
    STATIC_COLUMNS,
    TRTLLM_LICENSE,
    _first_token_rows,
    _overview_rows,
    _static_rows,
)
from roofline.calibrate.engine.vllm_results import (
    VLLM_MAX_LENGTH_POINTS,
    VLLM_METRICS,
    ImportOptions,
    import_vllm,
    read_vllm_json,
    vllm_model_name,
)
from roofline.core.errors import OptionError, RooflineError

__all__ = [
    "E2E_CONSISTENCY",
    "FIRST_TOKEN_COLUMNS",
    "FORMATS",
    "HARDWARE",
    "KV_ASSUMED",
    "MODELS",
    "OVERVIEW_COLUMNS",
    "PRECISION",
    "SPLITWISE_COLUMNS",
    "SPLITWISE_LICENSE",
    "SPLITWISE_REFERENCE",
    "STATIC_COLUMNS",
    "TABLES",
    "TRTLLM_LICENSE",
    "VLLM_MAX_LENGTH_POINTS",
    "VLLM_METRICS",
    "ImportOptions",
    "TableImporter",
    "checked",
    "detect_format",
    "import_file",
    "import_vllm",
    "is_end_to_end",
    "read_vllm_json",
    "vllm_model_name",
]

FORMATS = (
    "auto",
    "vllm",
    "sglang",
    "genai-perf",
    "inference-perf",
    "trtllm-static",
    "trtllm-first-token",
    "trtllm-perf-overview",
    "splitwise",
    "schema",
)
#: JSON result formats -> (is this object of the format, one object -> rows).
JSON_FORMATS = ("inference-perf", "sglang", "genai-perf", "vllm")


# --------------------------------------------------------------------------- dispatch

TableImporter = Callable[[list[str], list[dict[str, str]], str], list[E2ERow]]
TABLES: dict[str, TableImporter] = {
    "trtllm-static": _static_rows,
    "trtllm-first-token": _first_token_rows,
    "trtllm-perf-overview": _overview_rows,
    "splitwise": _splitwise_rows,
    "schema": lambda header, rows, origin: parse_rows(header, rows, origin),
}


def detect_format(path: Path, header: list[str] | None) -> str:
    """The format of a file: vLLM for JSON, else from the CSV header."""
    if path.suffix in (".json", ".jsonl"):
        return "vllm"
    cols = set(header or [])
    if is_schema_header(header or []):
        return "schema"
    if "throughput_unit_as_published" in cols:
        return "trtllm-static"
    if "first_token_latency_ms" in cols:
        return "trtllm-first-token"
    if "total_output_tokens_per_s" in cols:
        return "trtllm-perf-overview"
    if {"prompt_time", "token_time"} <= cols:
        return "splitwise"
    raise E2EError(
        f"{path}: cannot tell the format from the header ({', '.join(sorted(cols)[:8])}...); "
        f"pass fmt=, one of: {', '.join(FORMATS[1:])}",
        parameters=("fmt",),
    )


def is_end_to_end(path: str | Path) -> bool:
    """True when ``path`` holds end-to-end rows (vLLM JSON, the schema or a published table), not kernels."""
    p = Path(path)
    if p.suffix in (".json", ".jsonl"):
        return True
    if not p.is_file():
        return False
    try:
        header, _ = read_csv_dicts(p)
        detect_format(p, header)
    except (E2EError, RooflineError):
        return False
    return True


#: Most rows one end-to-end file may hold (the shipped tables: a few hundred).
MAX_E2E_ROWS = 100_000
#: Most rows one validation predicts (each costs ~0.1 s of CPU: a few simulated or closed-form predictions).
MAX_VALIDATE_ROWS = 1_000


def json_format(obj: dict[str, object]) -> str:
    """The format of one JSON result object (vLLM when nothing else matches)."""
    if is_inference_perf(obj):
        return "inference-perf"
    if is_sglang(obj):
        return "sglang"
    if is_genai_perf(obj):
        return "genai-perf"
    return "vllm"


def import_json(path: Path, fmt: str, opt: ImportOptions) -> list[E2ERow]:
    """Rows of a JSON/JSONL result file: each object in its own format (``auto``) or in ``fmt``."""
    objects = read_vllm_json(path)
    if fmt == "vllm" or (fmt == "auto" and all(json_format(o) == "vllm" for o in objects)):
        return import_vllm(path, opt)
    stem = path.name.removesuffix(".json").removesuffix(".jsonl")
    rows: list[E2ERow] = []
    for n, obj in enumerate(objects, start=1):
        where = str(path) if len(objects) == 1 else f"{path}: object {n}"
        rid = stem if len(objects) == 1 else f"{stem}/{n}"
        kind = json_format(obj) if fmt == "auto" else fmt
        if kind == "inference-perf":
            rows += import_inference_perf(obj, path, opt)
        elif kind == "sglang":
            rows.append(sglang_row(obj, where, rid, opt))
        elif kind == "genai-perf":
            rows.append(genai_perf_row(obj, where, rid, opt))
        else:
            raise E2EError(f"{where}: a vLLM result among other formats; import it on its own")
    return rows


def import_file(
    path: str | Path, fmt: str = "auto", options: ImportOptions | None = None, max_rows: int = MAX_E2E_ROWS
) -> list[E2ERow]:
    """Rows of one file in any supported format; options fill what a benchmark result lacks; more than
    ``max_rows`` rows are refused before any is converted."""
    path, opt = Path(path), options or ImportOptions()
    if fmt not in FORMATS:
        raise OptionError(f"fmt is {fmt!r}; allowed: {', '.join(FORMATS)}", parameters=("fmt",))
    if fmt in JSON_FORMATS or (fmt == "auto" and path.suffix in (".json", ".jsonl")):
        return checked(_at_most(import_json(path, fmt, opt), max_rows, path), str(path))
    header, rows = read_csv_dicts(path)
    if not rows:  # not an empty table: validate would score nothing, import would write a header alone
        raise E2EError(f"{path}: no data rows after the header; allowed: at least one row")
    _at_most(rows, max_rows, path)
    fmt = detect_format(path, header) if fmt == "auto" else fmt
    if fmt in JSON_FORMATS:
        return checked(import_json(path, fmt, opt), str(path))
    return checked([_override(r, opt) for r in TABLES[fmt](header, rows, str(path))], str(path))


def _at_most(rows: list, max_rows: int, path: Path) -> list:  # type: ignore[type-arg]
    if len(rows) > max_rows:
        raise E2EError(
            f"{path}: more than {max_rows:,} rows (got {len(rows):,}); an end-to-end file holds at most "
            f"{MAX_E2E_ROWS:,} rows and validate predicts at most {MAX_VALIDATE_ROWS:,} in all"
        )
    return rows


def checked(rows: list[E2ERow], origin: str) -> list[E2ERow]:
    """Rows put through the schema's reader, so an import yields only rows a file could hold."""
    cells = [row_cells(r) for r in rows]
    header = list(cells[0]) if cells else []
    return parse_rows(header, cells, f"{origin} (converted)") if cells else []


def _override(row: E2ERow, opt: ImportOptions) -> E2ERow:
    """Options given for a table's rows replace its values (hardware, model, source, licence)."""
    changes = {k: v for k, v in (("hardware", opt.hardware), ("model", opt.model), ("source", opt.source)) if v}
    if opt.license:
        changes["license"] = opt.license
    return replace(row, **changes) if changes else row
