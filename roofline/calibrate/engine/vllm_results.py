"""Importer of vLLM ``bench serve --save-result`` JSON, with the options such a file lacks."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.core.checks import MAX_COUNT, check_number
from roofline.core.errors import OptionError, nearest, shown
from roofline.core.files import read_input_text
from roofline.core.jsontext import load_json
from roofline.core.units import DTYPE_BYTES, MS

#: Largest latency (ms), token count or throughput a result may state; beyond any real run.
MAX_MS = 1e10
MAX_TOKENS = 1e15
MAX_RATE_PER_S = 1e9


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


#: Largest vLLM result file read (real ones: a few kB, or a few MB with per-request lists).
MAX_RESULT_BYTES = 64 * 2**20


def read_vllm_json(path: Path) -> list[dict[str, object]]:
    """The result objects of a ``--save-result`` file: one JSON object, a list, or one per line."""
    text = read_input_text(path, MAX_RESULT_BYTES, E2EError, "result")
    data = load_json(text, str(path), E2EError, lines=True)
    objects = data if isinstance(data, list) else [data]
    if not objects or not all(isinstance(o, dict) for o in objects):
        raise E2EError(f"{path}: expected a vLLM benchmark result object (or one per line)")
    return objects


def _value(obj: dict[str, object], key: str, origin: str, maximum: float) -> float | None:
    """A number the file gives for ``key``: None when absent, null or 0 (vLLM writes 0 for 'not
    measured'); else a finite number in (0, maximum], or one line naming the key."""
    value = obj.get(key)
    if value is None or (type(value) in (int, float) and value == 0):
        return None
    try:
        return check_number(value if not isinstance(value, str) else "", "", minimum=0.0, maximum=maximum)
    except OptionError:
        raise E2EError(
            f"{origin}: key {key!r} is {shown(value)}; allowed: a number > 0 and at most {maximum:g}"
        ) from None


def _ms(obj: dict[str, object], key: str, origin: str = "") -> float | None:
    value = _value(obj, key, origin, MAX_MS)
    return None if value is None else value * MS


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


def _vllm_row(obj: dict[str, object], origin: str, rid: str, opt: ImportOptions) -> E2ERow:
    completed = obj.get("completed")
    if type(completed) is not int or not 1 <= completed <= MAX_COUNT:
        raise E2EError(
            f"{origin}: key 'completed' is {completed!r}; allowed: a whole number >= 1 "
            "(is this a vllm bench serve --save-result file?)"
        )
    if not opt.hardware:
        raise E2EError(f"{origin}: a vLLM result does not say which hardware ran it; pass --hardware NAME or YAML")
    model = opt.model or vllm_model_name(str(obj.get("model_id") or ""), origin)
    w, kv, c = opt.dtypes()
    notes = [f"vLLM bench serve result; hardware, tp and dtypes from options (weights {w}, KV {kv}, compute {c})"]
    inputs = opt.input_len or _ratio(_value(obj, "total_input_tokens", origin, MAX_TOKENS), completed)
    outputs = opt.output_len or _ratio(_value(obj, "total_output_tokens", origin, MAX_TOKENS), completed)
    if inputs is None or outputs is None:
        raise E2EError(
            f"{origin}: keys 'total_input_tokens'/'total_output_tokens' missing; pass --input-len and --output-len"
        )
    if opt.input_len is None:
        notes.append("input_len, output_len = total tokens / completed")
    rate = obj.get("request_rate")
    is_inf = rate is None or (isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity"))
    rate_value = math.inf if is_inf else _value(obj, "request_rate", origin, MAX_RATE_PER_S)
    concurrency = obj.get("max_concurrency")
    if concurrency is not None and (type(concurrency) is not int or not 1 <= concurrency <= MAX_COUNT):
        raise E2EError(
            f"{origin}: key 'max_concurrency' is {shown(concurrency)}; allowed: null or a whole number in "
            f"[1, {MAX_COUNT}]"
        )
    load = "concurrency" if concurrency is not None else "rate"
    measured = {f"{m}_s": _ms(obj, f"mean_{m}_ms", origin) for m in ("ttft", "tpot", "itl")}
    for m in ("ttft", "tpot"):
        measured[f"{m}_p50_s"] = _ms(obj, f"median_{m}_ms", origin) or _ms(obj, f"p50_{m}_ms", origin)
        measured[f"{m}_p90_s"] = _ms(obj, f"p90_{m}_ms", origin)
        measured[f"{m}_p99_s"] = _ms(obj, f"p99_{m}_ms", origin)
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
        e2e_s=_ms(obj, "mean_e2el_ms", origin),
        output_tokens_per_s=_value(obj, "output_throughput", origin, MAX_TOKENS),
        requests_per_s=_value(obj, "request_throughput", origin, MAX_TOKENS),
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
