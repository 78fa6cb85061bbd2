"""Importers from published or user-made serving results into the schema of :mod:`.schema`.

Formats (``auto`` detects them from the file: ``.json``/``.jsonl`` is vLLM, a CSV by its header):

* ``vllm``: the JSON ``vllm bench serve --save-result`` (earlier ``benchmarks/benchmark_serving.py``)
  writes: ``mean_/median_/pNN_{ttft,tpot,itl,e2el}_ms`` (milliseconds), ``output_throughput``
  (tokens/s), ``request_throughput`` (requests/s), ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``max_concurrency``, ``request_rate`` (number or ``"inf"``),
  ``model_id``; with ``--save-detailed`` also ``input_lens``/``output_lens``.  One object per file
  or one per line (``--append-result``).  Hardware, parallelism and dtypes are not in the file:
  they come from :class:`ImportOptions`.
* ``trtllm-static``: TensorRT-LLM's static-batching throughput table (v0.5.0 totals, v0.6.1 per GPU)
* ``trtllm-first-token``: TensorRT-LLM's batch-1 first-token latency table (ms)
* ``trtllm-perf-overview``: TensorRT-LLM perf-overview max-throughput tables (total output tok/s)
* ``splitwise``: splitwise-sim ``perf_model.csv`` (prefill of the whole batch and per-token decode
  time in ms, 5 repeats per point, averaged into one row)
* ``schema``: a file already in the schema
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import RooflineError, nearest
from ..units import DTYPE_BYTES, MS
from .schema import E2EError, E2ERow, is_schema_header, parse_rows, read_csv_dicts, row_cells

FORMATS = ("auto", "vllm", "trtllm-static", "trtllm-first-token", "trtllm-perf-overview", "splitwise", "schema")
TRTLLM_LICENSE = "Apache-2.0"
SPLITWISE_LICENSE = "MIT"
#: GPU names in the published tables -> built-in hardware names (gb200 has no built-in profile).
HARDWARE = {
    "h100-sxm-80gb": "h100-sxm", "h100": "h100-sxm", "h100-80gb": "h100-sxm", "h200": "h200",
    "a100-sxm-80gb": "a100-80gb", "a100-80gb": "a100-80gb", "a100": "a100-80gb", "b200": "b200",
    "gb200": "gb200",
}
#: Model names in the published tables -> catalog names.  TensorRT-LLM's "LLaMA-7B" and
#: "LLaMA-70B" have the Llama 2 shapes (LLaMA-1 had no 70B; its 7B has the same shape).
MODELS = {
    "gpt-j-6b": "gpt-j-6b", "llama-7b": "llama-2-7b", "llama-70b": "llama-2-70b",
    "falcon-180b": "falcon-180b", "llama-3.1-8b": "llama-3.1-8b", "llama-3.3-70b": "llama-3.3-70b",
    "llama-3.1-70b": "llama-3.1-70b", "llama-3.1-405b": "llama-3.1-405b", "llama2-70b": "llama-2-70b",
    "bloom-176b": "bloom-176b",
}
#: Published precision labels -> (weights, KV cache, compute).  TensorRT-LLM's FP8 builds and
#: ModelOpt FP8/FP4 checkpoints are read as FP8 KV caches (the tables do not state it: assumed).
PRECISION = {"fp8": ("fp8", "fp8", "fp8"), "fp16": ("fp16", "fp16", "fp16"), "fp4": ("fp4", "fp8", "fp4"),
             "bf16": ("bf16", "bf16", "bf16")}
KV_ASSUMED = "KV dtype not published: assumed fp8 for an FP8/FP4 build"


@dataclass(frozen=True)
class ImportOptions:
    """What a file lacks (vLLM JSON: hardware, parallelism, dtypes) and overrides for every row."""

    hardware: str | None = None
    model: str | None = None
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    weights: str = "bf16"
    kv_dtype: str | None = None
    compute_dtype: str | None = None
    engine: str | None = None
    engine_version: str = ""
    input_len: float | None = None
    output_len: float | None = None
    source: str | None = None
    license: str = ""

    def dtypes(self) -> tuple[str, str, str]:
        """(weights, KV, compute): KV defaults to bf16 (fp16 for fp16 weights), compute to the weights'
        dtype when the chip can multiply in it (bf16, fp16, fp8, fp4), else bf16 (weight-only int)."""
        kv = self.kv_dtype or ("fp16" if self.weights == "fp16" else "bf16")
        compute = self.compute_dtype or (self.weights if self.weights in ("bf16", "fp16", "fp8", "fp4") else "bf16")
        for flag, value in (("--weights", self.weights), ("--kv-dtype", kv), ("--compute-dtype", compute)):
            if value not in DTYPE_BYTES:
                raise E2EError(f"{flag} is {value!r}; allowed: {', '.join(DTYPE_BYTES)}")
        return self.weights, kv, compute


def _key(text: str) -> str:
    return text.strip().lower().replace(" ", "-")


def _hardware(name: str, origin: str) -> str:
    try:
        return HARDWARE[_key(name)]
    except KeyError:
        raise E2EError(f"{origin}: unknown GPU {name!r}; allowed: {', '.join(sorted(HARDWARE))}") from None


def _model(name: str, origin: str) -> str:
    try:
        return MODELS[_key(name)]
    except KeyError:
        raise E2EError(f"{origin}: unknown model {name!r}; allowed: {', '.join(sorted(MODELS))}") from None


def _precision(label: str, origin: str) -> tuple[str, str, str]:
    try:
        return PRECISION[_key(label)]
    except KeyError:
        raise E2EError(f"{origin}: unknown precision {label!r}; allowed: {', '.join(PRECISION)}") from None


def _number(row: dict[str, str], column: str, origin: str, line: int) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise E2EError(f"{origin}: row {line}: column {column!r} is {text!r}; allowed: a number") from None
    if not (math.isfinite(value) and value > 0):
        raise E2EError(f"{origin}: row {line}: column {column!r} is {text!r}; allowed: a number > 0")
    return value


def _int(row: dict[str, str], column: str, origin: str, line: int) -> int:
    value = _number(row, column, origin, line)
    if value != int(value):
        raise E2EError(f"{origin}: row {line}: column {column!r} is {row[column]!r}; allowed: a whole number")
    return int(value)


def _need_columns(header: list[str], columns: tuple[str, ...], origin: str, fmt: str) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise E2EError(f"{origin}: missing column {missing[0]!r} for format {fmt} (needs: {', '.join(columns)})")


# --------------------------------------------------------------------------- TensorRT-LLM tables

STATIC_COLUMNS = ("trtllm_version", "model", "gpu", "precision", "batch_size", "tp", "isl", "osl",
                  "throughput_value", "throughput_unit_as_published", "source")


def _static_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Static-batch output tokens/s: per-GPU units ("/GPU", and v0.6.1 A100's unlabelled "out tok/s",
    read as per GPU: that reading gives a consistent ~50% MFU over TP 1/4/8) are multiplied by tp."""
    _need_columns(header, STATIC_COLUMNS, origin, "trtllm-static")
    out = []
    for line, r in enumerate(rows, start=2):
        tp, batch = _int(r, "tp", origin, line), _int(r, "batch_size", origin, line)
        isl, osl = _int(r, "isl", origin, line), _int(r, "osl", origin, line)
        value, unit = _number(r, "throughput_value", origin, line), r["throughput_unit_as_published"].strip()
        if "(total)" in unit:
            total, how = value, f"published {value:g} out tok/s total"
        elif "/GPU" in unit or "does not say per GPU" in unit:
            total, how = value * tp, f"published {value:g} out tok/s per GPU x tp {tp}"
            if "does not say" in unit:
                how += " (header says only 'out tok/s'; read as per GPU)"
        else:
            raise E2EError(f"{origin}: row {line}: column 'throughput_unit_as_published' is {unit!r}; allowed: "
                           "'out tok/s/GPU', 'out tok/s (total)' or the A100 v0.6.1 label")
        model, hw, ver = _model(r["model"], origin), _hardware(r["gpu"], origin), r["trtllm_version"].strip()
        w, kv, c = _precision(r["precision"], origin)
        notes = [how, "gptSessionBenchmark static batching"] + ([KV_ASSUMED] if w != "fp16" else [])
        out.append(E2ERow(
            id=f"trtllm-static/{ver}/{model}/{hw}/{w}/tp{tp}/b{batch}/i{isl}-o{osl}", source="trtllm-static-batch",
            reference=r["source"].strip(), license=TRTLLM_LICENSE, model=model, hardware=hw, tp=tp,
            weight_dtype=w, kv_dtype=kv, compute_dtype=c, engine="trtllm", engine_version=ver, input_len=isl,
            output_len=osl, load="static", batch=batch, output_tokens_per_s=total, notes="; ".join(notes)))
    return out


FIRST_TOKEN_COLUMNS = ("gpu", "precision", "model", "tp", "batch_size", "isl", "first_token_latency_ms", "source")


def _first_token_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Batch-1 time to first token (ms -> s); output_len 1, since only the first token is timed."""
    _need_columns(header, FIRST_TOKEN_COLUMNS, origin, "trtllm-first-token")
    out = []
    for line, r in enumerate(rows, start=2):
        tp, batch, isl = _int(r, "tp", origin, line), _int(r, "batch_size", origin, line), _int(r, "isl", origin, line)
        model, hw = _model(r["model"], origin), _hardware(r["gpu"], origin)
        w, kv, c = _precision(r["precision"], origin)
        notes = [f"published {r['first_token_latency_ms'].strip()} ms first-token latency",
                 "output_len 1: only the first token is timed", "latency data from v0.5"]
        out.append(E2ERow(
            id=f"trtllm-first-token/0.5.0/{model}/{hw}/{w}/tp{tp}/b{batch}/i{isl}", source="trtllm-first-token",
            reference=r["source"].strip(), license=TRTLLM_LICENSE, model=model, hardware=hw, tp=tp, weight_dtype=w,
            kv_dtype=kv, compute_dtype=c, engine="trtllm", engine_version="0.5.0", input_len=isl, output_len=1,
            load="static", batch=batch, ttft_s=_number(r, "first_token_latency_ms", origin, line) * MS,
            notes="; ".join(notes + ([KV_ASSUMED] if w != "fp16" else []))))
    return out


OVERVIEW_COLUMNS = ("model", "gpu", "num_gpus", "tp", "weight_precision", "isl", "osl", "total_output_tokens_per_s",
                    "source")


def _overview_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Max-throughput runs (trtllm-bench, all requests at once): load rate, arrival_rate inf."""
    _need_columns(header, OVERVIEW_COLUMNS, origin, "trtllm-perf-overview")
    version = re.search(r"_v(\d+(?:\.\d+)*)_", Path(origin).name)
    ver = version.group(1) if version else ""
    out = []
    for line, r in enumerate(rows, start=2):
        tp, gpus = _int(r, "tp", origin, line), _int(r, "num_gpus", origin, line)
        pp = _int(r, "pp", origin, line) if r.get("pp") else 1
        if gpus % (tp * pp):
            raise E2EError(f"{origin}: row {line}: num_gpus {gpus} is not a multiple of tp x pp = {tp * pp}")
        isl, osl = _int(r, "isl", origin, line), _int(r, "osl", origin, line)
        model, hw = _model(r["model"], origin), _hardware(r["gpu"], origin)
        w, kv, c = _precision(r["weight_precision"], origin)
        total = _number(r, "total_output_tokens_per_s", origin, line)
        commit = re.search(r"@\s*([0-9a-f]{7})", r["source"])
        tag = ver or (commit.group(1) if commit else "unknown")
        out.append(E2ERow(
            id=f"trtllm-perf-overview/{tag}/{model}/{hw}/{w}/tp{tp}pp{pp}/i{isl}-o{osl}",
            source="trtllm-perf-overview", reference=r["source"].strip(), license=TRTLLM_LICENSE, model=model,
            hardware=hw, tp=tp, pp=pp, dp=gpus // (tp * pp), weight_dtype=w, kv_dtype=kv, compute_dtype=c,
            engine="trtllm", engine_version=ver, input_len=isl, output_len=osl, load="rate",
            arrival_rate=math.inf, output_tokens_per_s=total,
            notes="; ".join([f"published {total:g} total output tok/s on {gpus} GPU(s)",
                             "trtllm-bench max throughput (PyTorch flow, uniform ISL/OSL)", KV_ASSUMED])))
    return out


# --------------------------------------------------------------------------- splitwise-sim

SPLITWISE_COLUMNS = ("model", "hardware", "prompt_size", "batch_size", "token_size", "prompt_time", "token_time",
                     "e2e_time", "tensor_parallel")
SPLITWISE_REFERENCE = "Mutinifni/splitwise-sim @ 8f99e7dc9b407f4ce2488d03dd44c0b8b946dab0, data/perf_model.csv"
#: e2e_time is kept only when it agrees with prompt + (O-1)·token within this fraction.
E2E_CONSISTENCY = 0.10


def _splitwise_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Mean over repeats of each (model, hardware, tp, prompt, batch, output) point, ms -> s.

    Skipped: ``h100-80gb-pcap`` (derived from h100-80gb, not measured) and TP2 batch 64 (its
    prefill is faster than batch 32's: the README calls these rows anomalous).
    """
    _need_columns(header, SPLITWISE_COLUMNS, origin, "splitwise")
    groups: dict[tuple[str, str, int, int, int, int], set[tuple[float, float, float]]] = defaultdict(set)
    for line, r in enumerate(rows, start=2):
        if r["hardware"].strip() == "h100-80gb-pcap":
            continue
        key = (_model(r["model"], origin), _hardware(r["hardware"], origin), _int(r, "tensor_parallel", origin, line),
               _int(r, "prompt_size", origin, line), _int(r, "batch_size", origin, line),
               _int(r, "token_size", origin, line))
        if key[2] == 2 and key[4] == 64:
            continue
        # Identical rows recur where sweeps share a point; a set keeps each repeat once.
        groups[key].add(tuple(_number(r, c, origin, line) * MS for c in ("prompt_time", "token_time", "e2e_time")))
    return [_splitwise_row(key, sorted(repeats)) for key, repeats in sorted(groups.items())]


def _splitwise_row(key: tuple[str, str, int, int, int, int], repeats: list[tuple[float, ...]]) -> E2ERow:
    model, hw, tp, isl, batch, osl = key
    prefill = statistics.fmean(p for p, _, _ in repeats)
    token = statistics.fmean(t for _, t, _ in repeats)
    consistent = [e for p, t, e in repeats if abs((p + (osl - 1) * t) / e - 1.0) <= E2E_CONSISTENCY]
    notes = [f"mean of {len(repeats)} repeats", "prompt_time = prefill of the whole batch -> ttft_s",
             "token_time = one decode iteration -> tpot_s", "FP16 per the Splitwise paper (not re-verified)",
             "engine as profiled for the Splitwise paper (not stated in the data)"]
    if len(consistent) < len(repeats):
        notes.append(f"e2e_time of {len(repeats) - len(consistent)} repeats disagrees with prompt + (O-1) x token "
                     f"by > {E2E_CONSISTENCY:.0%}: left out")
    return E2ERow(
        id=f"splitwise-sim/{model}/{hw}/tp{tp}/b{batch}/i{isl}-o{osl}", source="splitwise-sim",
        reference=SPLITWISE_REFERENCE, license=SPLITWISE_LICENSE, model=model, hardware=hw, tp=tp,
        weight_dtype="fp16", kv_dtype="fp16", compute_dtype="fp16", engine="unknown", input_len=isl,
        output_len=osl, load="static", batch=batch, num_requests=batch, ttft_s=prefill, tpot_s=token,
        e2e_s=statistics.fmean(consistent) if consistent else None, notes="; ".join(notes))


# --------------------------------------------------------------------------- vLLM bench serve JSON

VLLM_METRICS = {"ttft": "ttft", "tpot": "tpot"}
VLLM_MAX_LENGTH_POINTS = 64


def read_vllm_json(path: Path) -> list[dict[str, Any]]:
    """The result objects of a ``--save-result`` file: one JSON object, or one per line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise E2EError(f"{path}: cannot read file ({exc.strerror})") from None
    try:
        data = json.loads(text)
        objects = data if isinstance(data, list) else [data]
    except json.JSONDecodeError as first:
        objects = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    objects.append(json.loads(line))
                except json.JSONDecodeError:
                    raise E2EError(f"{path}: malformed JSON at line {first.lineno if n == 1 else n}: "
                                   f"{first.msg}") from None
    if not objects or not all(isinstance(o, dict) for o in objects):
        raise E2EError(f"{path}: expected a vLLM benchmark result object (or one per line)")
    return objects


def _ms(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        return None
    return float(value) * MS


def _vllm_lengths(obj: dict[str, Any]) -> str:
    """``input:output:count,...`` from ``input_lens``/``output_lens`` when they vary (else '')."""
    ins, outs = obj.get("input_lens"), obj.get("output_lens")
    if not isinstance(ins, list) or not isinstance(outs, list) or len(ins) != len(outs) or not ins:
        return ""
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for i, o in zip(ins, outs, strict=True):
        if isinstance(i, (int, float)) and isinstance(o, (int, float)) and i > 0 and o > 0:
            counts[(int(i), int(o))] += 1
    if len(counts) <= 1 or len(counts) > VLLM_MAX_LENGTH_POINTS:
        return ""
    return ",".join(f"{i}:{o}:{n}" for (i, o), n in sorted(counts.items()))


def vllm_model_name(model_id: str, origin: str) -> str:
    """A catalog name for a Hugging Face id: 'meta-llama/Llama-3.1-8B-Instruct' -> 'llama-3.1-8b'."""
    from ..specs import model_names

    names = model_names()
    base = model_id.rstrip("/").split("/")[-1].lower()
    candidates = [base]
    for suffix in ("-instruct", "-chat", "-hf", "-it", "-fp8", "-base"):
        candidates += [c.removesuffix(suffix) for c in candidates]
    candidates += [c.replace("meta-llama-", "llama-") for c in candidates]
    for c in candidates:
        if c in names:
            return c
    close = nearest(base, names)
    hint = f"; closest built-in: {', '.join(close)}" if close else ""
    raise E2EError(f"{origin}: model_id {model_id!r} is not a built-in model{hint}; pass --model NAME, YAML "
                   "or config.json")


def _vllm_row(obj: dict[str, Any], origin: str, rid: str, opt: ImportOptions) -> E2ERow:
    completed = obj.get("completed")
    if not isinstance(completed, int) or completed < 1:
        raise E2EError(f"{origin}: key 'completed' is {completed!r}; allowed: a whole number >= 1 "
                       "(is this a vllm bench serve --save-result file?)")
    if not opt.hardware:
        raise E2EError(f"{origin}: a vLLM result does not say which hardware ran it; pass --hardware NAME or YAML")
    model = opt.model or vllm_model_name(str(obj.get("model_id") or ""), origin)
    w, kv, c = opt.dtypes()
    notes = [f"vLLM bench serve result; hardware, tp and dtypes from options (weights {w}, KV {kv}, compute {c})"]
    inputs = opt.input_len or _ratio(obj.get("total_input_tokens"), completed)
    outputs = opt.output_len or _ratio(obj.get("total_output_tokens"), completed)
    if inputs is None or outputs is None:
        raise E2EError(f"{origin}: keys 'total_input_tokens'/'total_output_tokens' missing; pass --input-len and "
                       "--output-len")
    if opt.input_len is None:
        notes.append("input_len, output_len = total tokens / completed")
    rate = obj.get("request_rate")
    rate_value = math.inf if rate in (None, "inf", "Infinity") else _float_or_none(rate)
    concurrency = obj.get("max_concurrency")
    load = "concurrency" if isinstance(concurrency, int) and concurrency >= 1 else "rate"
    measured = {f"{m}_s": _ms(obj, f"mean_{m}_ms") for m in ("ttft", "tpot", "itl")}
    for m in ("ttft", "tpot"):
        measured[f"{m}_p50_s"] = _ms(obj, f"median_{m}_ms") or _ms(obj, f"p50_{m}_ms")
        measured[f"{m}_p90_s"] = _ms(obj, f"p90_{m}_ms")
        measured[f"{m}_p99_s"] = _ms(obj, f"p99_{m}_ms")
    return E2ERow(
        id=rid, source=opt.source or "vllm-bench-serve", reference=Path(origin).name, license=opt.license,
        model=model, hardware=opt.hardware, tp=opt.tp, pp=opt.pp, ep=opt.ep, dp=opt.dp, weight_dtype=w, kv_dtype=kv,
        compute_dtype=c, engine=opt.engine or "vllm", engine_version=opt.engine_version, input_len=inputs,
        output_len=outputs, lengths=_vllm_lengths(obj), load=load,
        concurrency=concurrency if load == "concurrency" else None, arrival_rate=rate_value,
        num_requests=completed, e2e_s=_ms(obj, "mean_e2el_ms"),
        output_tokens_per_s=_float_or_none(obj.get("output_throughput")),
        requests_per_s=_float_or_none(obj.get("request_throughput")), notes="; ".join(notes), **measured)


def _float_or_none(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _ratio(total: object, n: int) -> float | None:
    value = _float_or_none(total)
    return None if value is None else value / n


def import_vllm(path: Path, opt: ImportOptions) -> list[E2ERow]:
    """Rows of a vLLM ``--save-result`` file (one per result object)."""
    objects = read_vllm_json(path)
    stem = path.name.removesuffix(".json").removesuffix(".jsonl")
    rows = []
    for n, obj in enumerate(objects, start=1):
        where = str(path) if len(objects) == 1 else f"{path}: object {n}"
        rows.append(_vllm_row(obj, where, stem if len(objects) == 1 else f"{stem}/{n}", opt))
    return rows


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
    raise E2EError(f"{path}: cannot tell the format from the header ({', '.join(sorted(cols)[:8])}...); "
                   f"pass --format, one of: {', '.join(FORMATS[1:])}")


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


def import_file(path: str | Path, fmt: str = "auto", options: ImportOptions | None = None) -> list[E2ERow]:
    """Rows of one file in any supported format; options fill what vLLM files lack."""
    path, opt = Path(path), options or ImportOptions()
    if fmt not in FORMATS:
        raise E2EError(f"--format is {fmt!r}; allowed: {', '.join(FORMATS)}")
    if fmt == "vllm" or (fmt == "auto" and path.suffix in (".json", ".jsonl")):
        return checked(import_vllm(path, opt), str(path))
    header, rows = read_csv_dicts(path)
    fmt = detect_format(path, header) if fmt == "auto" else fmt
    if fmt == "vllm":
        return checked(import_vllm(path, opt), str(path))
    return checked([_override(r, opt) for r in TABLES[fmt](header, rows, str(path))], str(path))


def checked(rows: list[E2ERow], origin: str) -> list[E2ERow]:
    """Rows put through the schema's reader, so an import yields only rows a file could hold."""
    cells = [row_cells(r) for r in rows]
    header = list(cells[0]) if cells else []
    return parse_rows(header, cells, f"{origin} (converted)") if cells else []


def _override(row: E2ERow, opt: ImportOptions) -> E2ERow:
    """Options given for a table's rows replace its values (hardware, model, source, licence)."""
    changes = {k: v for k, v in (("hardware", opt.hardware), ("model", opt.model), ("source", opt.source))
               if v}
    if opt.license:
        changes["license"] = opt.license
    return replace(row, **changes) if changes else row
