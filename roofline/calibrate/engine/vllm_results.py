"""Importer of vLLM ``bench serve --save-result`` JSON, with the options such a file lacks."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.core.errors import nearest
from roofline.core.units import DTYPE_BYTES, MS


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
                    raise E2EError(
                        f"{path}: malformed JSON at line {first.lineno if n == 1 else n}: {first.msg}"
                    ) from None
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
    from roofline.specs import model_names

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
    raise E2EError(
        f"{origin}: model_id {model_id!r} is not a built-in model{hint}; pass --model NAME, YAML or config.json"
    )


def _vllm_row(obj: dict[str, Any], origin: str, rid: str, opt: ImportOptions) -> E2ERow:
    completed = obj.get("completed")
    if not isinstance(completed, int) or completed < 1:
        raise E2EError(
            f"{origin}: key 'completed' is {completed!r}; allowed: a whole number >= 1 "
            "(is this a vllm bench serve --save-result file?)"
        )
    if not opt.hardware:
        raise E2EError(f"{origin}: a vLLM result does not say which hardware ran it; pass --hardware NAME or YAML")
    model = opt.model or vllm_model_name(str(obj.get("model_id") or ""), origin)
    w, kv, c = opt.dtypes()
    notes = [f"vLLM bench serve result; hardware, tp and dtypes from options (weights {w}, KV {kv}, compute {c})"]
    inputs = opt.input_len or _ratio(obj.get("total_input_tokens"), completed)
    outputs = opt.output_len or _ratio(obj.get("total_output_tokens"), completed)
    if inputs is None or outputs is None:
        raise E2EError(
            f"{origin}: keys 'total_input_tokens'/'total_output_tokens' missing; pass --input-len and --output-len"
        )
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
        id=rid,
        source=opt.source or "vllm-bench-serve",
        reference=Path(origin).name,
        license=opt.license,
        model=model,
        hardware=opt.hardware,
        tp=opt.tp,
        pp=opt.pp,
        ep=opt.ep,
        dp=opt.dp,
        weight_dtype=w,
        kv_dtype=kv,
        compute_dtype=c,
        engine=opt.engine or "vllm",
        engine_version=opt.engine_version,
        input_len=inputs,
        output_len=outputs,
        lengths=_vllm_lengths(obj),
        load=load,
        concurrency=concurrency if load == "concurrency" else None,
        arrival_rate=rate_value,
        num_requests=completed,
        e2e_s=_ms(obj, "mean_e2el_ms"),
        output_tokens_per_s=_float_or_none(obj.get("output_throughput")),
        requests_per_s=_float_or_none(obj.get("request_throughput")),
        notes="; ".join(notes),
        **measured,
    )


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
