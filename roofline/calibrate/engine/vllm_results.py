"""Importer of vLLM ``bench serve --save-result`` JSON, with the options such a file lacks."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from roofline.calibrate.engine.json_cells import MAX_RATE_PER_S, MAX_TOKENS, check_latency_lists, latency_ms, value_of
from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.core.checks import MAX_COUNT
from roofline.core.errors import OptionError, nearest, shown
from roofline.core.files import read_input_text
from roofline.core.jsontext import load_json
from roofline.core.units import DTYPE_BYTES


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
    prefix_hit_rate: float | None = None
    timeout_s: float | None = None

    def dtypes(self) -> tuple[str, str, str]:
        """(weights, KV, compute): KV defaults to bf16 (fp16 for fp16 weights), compute to the weights'
        dtype when the chip can multiply in it (bf16, fp16, fp8, fp4), else bf16 (weight-only int)."""
        kv = self.kv_dtype or ("fp16" if self.weights == "fp16" else "bf16")
        compute = self.compute_dtype or (self.weights if self.weights in ("bf16", "fp16", "fp8", "fp4") else "bf16")
        for name, value in (("weights", self.weights), ("kv_dtype", kv), ("compute_dtype", compute)):
            if value not in DTYPE_BYTES:
                raise OptionError(f"{name} is {value!r}; allowed: {', '.join(DTYPE_BYTES)}", parameters=(name,))
        return self.weights, kv, compute


VLLM_METRICS = {"ttft": "ttft", "tpot": "tpot"}
VLLM_MAX_LENGTH_POINTS = 64


#: Largest vLLM result file read (real ones: a few kB, or a few MB with per-request lists).
MAX_RESULT_BYTES = 64 * 2**20


def read_vllm_json(path: Path) -> list[dict[str, object]]:
    """The result objects of a ``--save-result`` file: one JSON object, a list, or one per line."""
    text = read_input_text(path, MAX_RESULT_BYTES, E2EError, "result")
    # Infinity is allowed (SGLang writes request_rate Infinity); every key read is checked on its own.
    data = load_json(text, str(path), E2EError, lines=True, finite=False)
    objects = data if isinstance(data, list) else [data]
    if not objects or not all(isinstance(o, dict) for o in objects):
        raise E2EError(f"{path}: expected a vLLM benchmark result object (or one per line)")
    return objects


def _vllm_lengths(obj: dict[str, object], origin: str = "") -> str:
    """``input:output:count,...`` from ``input_lens``/``output_lens`` when they vary (else '').

    When given, both must be lists of equally many whole numbers in [1, 2**31-1]."""
    ins, outs = obj.get("input_lens"), obj.get("output_lens")
    if ins is None and outs is None:
        return ""
    for key, value in (("input_lens", ins), ("output_lens", outs)):
        if not isinstance(value, list) or not all(type(v) is int and 1 <= v <= MAX_COUNT for v in value):
            raise E2EError(
                f"{origin}: key {key!r} is {shown(value)}; allowed: a list of whole numbers in [1, {MAX_COUNT}]"
            )
    if len(ins) != len(outs):  # type: ignore[arg-type]
        raise E2EError(f"{origin}: keys 'input_lens' and 'output_lens' have {len(ins)} and {len(outs)} entries")  # type: ignore[arg-type]
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for i, o in zip(ins, outs, strict=True):  # type: ignore[arg-type]
        counts[(i, o)] += 1
    if len(counts) <= 1 or len(counts) > VLLM_MAX_LENGTH_POINTS:
        return ""
    return ",".join(f"{i}:{o}:{n}" for (i, o), n in sorted(counts.items()))


def vllm_model_name(model_id: str, origin: str) -> str:
    """A catalog name for a Hugging Face id: 'meta-llama/Llama-3.1-8B-Instruct' -> 'llama-3.1-8b'."""
    from roofline.specs import model_names

    if not model_id.strip():
        raise E2EError(
            f"{origin}: the result does not name its model; pass model=NAME, YAML or config.json",
            parameters=("model",),
        )
    names = model_names()
    base = model_id.rstrip("/").split("/")[-1].lower()
    candidates = [base]
    stripped = base
    while (shorter := re.sub(r"-(instruct|chat|hf|it|fp8|base|v\d+(\.\d+)*|\d{4})$", "", stripped)) != stripped:
        stripped = shorter  # 'mixtral-8x7b-instruct-v0.1' -> 'mixtral-8x7b'; 'qwen2.5-7b-instruct-2507' too
        candidates.append(stripped)
    candidates += [c.replace("meta-llama-", "llama-") for c in candidates]
    for c in candidates:
        if c in names:
            return c
    close = nearest(base, names)
    hint = f"; closest built-in: {', '.join(close)}" if close else ""
    raise E2EError(
        f"{origin}: model_id {model_id!r} is not a built-in model{hint}; pass model=NAME, YAML or config.json",
        parameters=("model",),
    )


def _vllm_row(obj: dict[str, object], origin: str, rid: str, opt: ImportOptions) -> E2ERow:
    completed = obj.get("completed")
    if type(completed) is not int or not 1 <= completed <= MAX_COUNT:
        raise E2EError(
            f"{origin}: key 'completed' is {completed!r}; allowed: a whole number >= 1 "
            "(is this a result file saved by vllm bench serve?)"
        )
    if not opt.hardware:
        raise E2EError(
            f"{origin}: a vLLM result does not say which hardware ran it; pass hardware=NAME or YAML",
            parameters=("hardware",),
        )
    model = opt.model or vllm_model_name(str(obj.get("model_id") or ""), origin)
    w, kv, c = opt.dtypes()
    notes = [f"vLLM bench serve result; hardware, tp and dtypes from options (weights {w}, KV {kv}, compute {c})"]
    inputs = opt.input_len or _ratio(value_of(obj, "total_input_tokens", origin, MAX_TOKENS), completed)
    outputs = opt.output_len or _ratio(value_of(obj, "total_output_tokens", origin, MAX_TOKENS), completed)
    if inputs is None or outputs is None:
        raise E2EError(
            f"{origin}: keys 'total_input_tokens'/'total_output_tokens' missing; pass input_len= and output_len=",
            parameters=("input_len", "output_len"),
        )
    if opt.input_len is None:
        notes.append("input_len, output_len = total tokens / completed")
    rate = obj.get("request_rate")
    is_inf = rate is None or (isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity"))
    rate_value = math.inf if is_inf else value_of(obj, "request_rate", origin, MAX_RATE_PER_S)
    concurrency = obj.get("max_concurrency")
    if concurrency is not None and (type(concurrency) is not int or not 1 <= concurrency <= MAX_COUNT):
        raise E2EError(
            f"{origin}: key 'max_concurrency' is {shown(concurrency)}; allowed: null or a whole number in "
            f"[1, {MAX_COUNT}]"
        )
    load = "concurrency" if concurrency is not None else "rate"
    check_latency_lists(obj, origin)
    measured = {f"{m}_s": latency_ms(obj, f"mean_{m}_ms", origin) for m in ("ttft", "tpot", "itl")}
    for m, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2e", "e2el")):
        measured[f"{m}_p50_s"] = latency_ms(obj, f"median_{key}_ms", origin) or latency_ms(obj, f"p50_{key}_ms", origin)
        measured[f"{m}_p90_s"] = latency_ms(obj, f"p90_{key}_ms", origin)
        measured[f"{m}_p99_s"] = latency_ms(obj, f"p99_{key}_ms", origin)
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
        lengths=_vllm_lengths(obj, origin),
        load=load,
        concurrency=concurrency if load == "concurrency" else None,
        arrival_rate=rate_value,
        num_requests=completed,
        e2e_s=latency_ms(obj, "mean_e2el_ms", origin),
        prefix_hit_rate=opt.prefix_hit_rate,
        timeout_s=opt.timeout_s,
        output_tokens_per_s=value_of(obj, "output_throughput", origin, MAX_TOKENS),
        requests_per_s=value_of(obj, "request_throughput", origin, MAX_TOKENS),
        notes="; ".join(notes),
        **measured,
    )


def _ratio(total: float | None, n: int) -> float | None:
    return None if total is None else total / n


def import_vllm(path: Path, opt: ImportOptions) -> list[E2ERow]:
    """Rows of a vLLM ``--save-result`` file (one per result object)."""
    objects = read_vllm_json(path)
    stem = path.name.removesuffix(".json").removesuffix(".jsonl")
    rows = []
    for n, obj in enumerate(objects, start=1):
        where = str(path) if len(objects) == 1 else f"{path}: object {n}"
        rows.append(_vllm_row(obj, where, stem if len(objects) == 1 else f"{stem}/{n}", opt))
    return rows
