"""Importers of SGLang ``bench_serving`` results and NVIDIA genai-perf / aiperf exports.

* SGLang: ``python -m sglang.bench_serving --output-file run.jsonl`` appends one JSON object per run
  (sgl-project/sglang ``python/sglang/bench_serving.py``): ``backend``, ``request_rate`` (``Infinity``
  for all at once), ``max_concurrency``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``output_throughput``, ``mean_/median_/std_/p99_e2e_latency_ms``,
  ``mean_/median_/std_/p99_ttft_ms``, the same for ``tpot``, ``mean/median/p95/p99_itl_ms``.
* genai-perf ``profile_export_genai_perf.json`` and aiperf ``profile_export_aiperf.json``
  (triton-inference-server/perf_analyzer genai-perf ``json_exporter.py``; ai-dynamo/aiperf
  ``docs/reference/json-export-schema.md``): one object whose metric blocks ``{unit, avg, p50, p90,
  p99, ...}`` are keyed ``time_to_first_token``, ``inter_token_latency``, ``request_latency``,
  ``output_token_throughput``, ``request_throughput``, ``request_count``, ``input_sequence_length``,
  ``output_sequence_length``; ``input_config`` holds the load (``concurrency`` or ``request_rate``,
  nested in aiperf).

Neither says which hardware, parallelism or dtypes ran: :class:`ImportOptions` says it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from roofline.calibrate.engine.json_cells import check_latency_lists, engine_name, latency_ms, number
from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.calibrate.engine.vllm_results import ImportOptions, vllm_model_name

#: Metric units of genai-perf/aiperf blocks -> seconds per unit.
TIME_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "us": 1e-6, "ns": 1e-9}


def is_sglang(obj: dict[str, Any]) -> bool:
    """An SGLang bench_serving result (its E2E key differs from vLLM's ``mean_e2el_ms``)."""
    return "mean_e2e_latency_ms" in obj


def is_genai_perf(obj: dict[str, Any]) -> bool:
    """A genai-perf or aiperf profile export (metric blocks with units)."""
    block = obj.get("time_to_first_token") or obj.get("request_latency")
    return isinstance(block, dict) and "unit" in block


def _common(opt: ImportOptions, where: str, model_id: str) -> dict[str, object]:
    """The deployment fields a result lacks, from the options."""
    if not opt.hardware:
        raise E2EError(
            f"{where}: the result does not say which hardware ran it; pass hardware=NAME or YAML",
            parameters=("hardware",),
        )
    w, kv, c = opt.dtypes()
    return {
        "hardware": opt.hardware,
        "model": opt.model or vllm_model_name(model_id, where),
        "tp": opt.tp,
        "pp": opt.pp,
        "ep": opt.ep,
        "dp": opt.dp,
        "weight_dtype": w,
        "kv_dtype": kv,
        "compute_dtype": c,
        "license": opt.license,
        "prefix_hit_rate": opt.prefix_hit_rate,
        "timeout_s": opt.timeout_s,
        "engine_version": opt.engine_version,
    }


def _load(rate: object, concurrency: object) -> dict[str, object]:
    """load/arrival_rate/concurrency from a result's rate (number, 'inf', None) and concurrency."""
    if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency >= 1:
        return {"load": "concurrency", "concurrency": concurrency}
    value = math.inf if rate in (None, "inf", "Infinity") else float(rate)  # type: ignore[arg-type]
    return {"load": "rate", "arrival_rate": value if value > 0 else math.inf}


def sglang_row(obj: dict[str, Any], where: str, rid: str, opt: ImportOptions) -> E2ERow:
    """One SGLang bench_serving result object as a row."""
    completed = obj.get("completed")
    if not isinstance(completed, int) or completed < 1:
        raise E2EError(f"{where}: field 'completed' is {completed!r}; allowed: a whole number >= 1")
    tokens = [number(obj, k, where, "tokens") for k in ("total_input_tokens", "total_output_tokens")]
    if opt.input_len is None and (tokens[0] is None or tokens[1] is None):
        raise E2EError(
            f"{where}: fields 'total_input_tokens'/'total_output_tokens' missing; pass input_len= and output_len=",
            parameters=("input_len", "output_len"),
        )
    check_latency_lists(obj, where)
    measured: dict[str, float | None] = {}
    for m, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2e", "e2e_latency")):
        measured[f"{m}_s"] = latency_ms(obj, f"mean_{key}_ms", where)
        measured[f"{m}_p50_s"] = latency_ms(obj, f"median_{key}_ms", where)
        measured[f"{m}_p90_s"] = latency_ms(obj, f"p90_{key}_ms", where)
        measured[f"{m}_p99_s"] = latency_ms(obj, f"p99_{key}_ms", where)
    return E2ERow(
        id=rid,
        source=opt.source or "sglang-bench-serving",
        reference=Path(where.split(":")[0]).name,
        engine=opt.engine or engine_name(str(obj.get("backend") or "sglang")),
        input_len=opt.input_len or tokens[0] / completed,  # type: ignore[operator]
        output_len=opt.output_len or tokens[1] / completed,  # type: ignore[operator]
        num_requests=completed,
        output_tokens_per_s=number(obj, "output_throughput", where, "tokens/s"),
        requests_per_s=number(obj, "request_throughput", where, "requests/s"),
        notes="SGLang bench_serving result; hardware, tp and dtypes from options; lengths = total tokens / completed",
        **_common(opt, where, str(obj.get("model_id") or obj.get("model") or "")),  # type: ignore[arg-type]
        **_load(obj.get("request_rate"), obj.get("max_concurrency")),  # type: ignore[arg-type]
        **measured,
    )


def _block(obj: dict[str, Any], key: str, stat: str, where: str) -> float | None:
    """One statistic of a metric block, in SI units for time metrics (others as written)."""
    block = obj.get(key)
    if not isinstance(block, dict):
        return None
    value = number(block, stat, f"{where}: {key}", str(block.get("unit", "")))
    unit = str(block.get("unit", "")).strip().lower()
    return None if value is None else value * TIME_UNITS.get(unit, 1.0)


def _find(tree: object, key: str) -> object:
    """The first value of ``key`` anywhere in a nested mapping (aiperf nests the load), else None."""
    if isinstance(tree, dict):
        if tree.get(key) is not None:
            return tree[key]
        for value in tree.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def genai_perf_row(obj: dict[str, Any], where: str, rid: str, opt: ImportOptions) -> E2ERow:
    """One genai-perf / aiperf profile export as a row."""
    config = obj.get("input_config") or {}
    names = _find(config, "model") or _find(config, "model_names") or [""]
    model_id = str(names[0] if isinstance(names, list) and names else names)
    count = _block(obj, "request_count", "avg", where)
    measured: dict[str, float | None] = {}
    for m, key in (("ttft", "time_to_first_token"), ("itl", "inter_token_latency"), ("e2e", "request_latency")):
        measured[f"{m}_s"] = _block(obj, key, "avg", where)
        for p in ("p50", "p90", "p99"):
            measured[f"{m}_{p}_s"] = _block(obj, key, p, where)
    failed = _block(obj, "error_request_count", "avg", where)
    return E2ERow(
        id=rid,
        source=opt.source or ("aiperf" if "schema_version" in obj else "genai-perf"),
        reference=Path(where.split(":")[0]).name,
        engine=opt.engine or "unknown",
        input_len=opt.input_len or _block(obj, "input_sequence_length", "avg", where),
        output_len=opt.output_len or _block(obj, "output_sequence_length", "avg", where),
        num_requests=int(count) if count else None,
        num_failed=int(failed) if failed else None,
        output_tokens_per_s=_block(obj, "output_token_throughput", "avg", where),
        requests_per_s=_block(obj, "request_throughput", "avg", where),
        notes="genai-perf/aiperf export; hardware, tp, dtypes (and the engine, when not given: unknown) from options",
        **_common(opt, where, model_id),  # type: ignore[arg-type]
        **_load(_find(config, "request_rate"), _find(config, "concurrency")),  # type: ignore[arg-type]
        **measured,
    )
