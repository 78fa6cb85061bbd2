"""Importer of inference-perf load-test summaries: one row per load stage of each experiment.

The shape is the shared ``vllm-serving-h100/*.json`` (summary statistics of inference-perf's per-request
results): top-level ``engine`` ("vLLM 0.15.1"), ``hardware`` ("H100 SXM 80GB"), ``dtype``,
``engine_settings`` (``prefix_caching``, ``max_num_batched_tokens``, ``max_num_seqs``, ``block_size``),
and ``experiments``, each with ``model``, ``tp``, ``shared_prefix`` (the prompt generator) and ``stages``
of (``rate``, ``duration``, ``n_success``, ``n_fail``, ``ttft``/``e2e`` {mean, median, p90, p99} in ms,
``prompt_len``, ``output_len``, ``throughput``).

Conversions (each said in the row's notes):
* output tokens per request: the generator's configured ``output_len`` where given (outputs ran to full
  length; the file's ``output_len`` re-tokenises the text, about 0.82x for Llama-2);
* TPOT = ITL = (E2E - TTFT) / (output tokens - 1) from the means (the file's ``itl_mean`` divides by the
  re-tokenised count);
* prefix hits, where prefix caching was on and prompts come from a finite pool (``shared_prefix``):
  every prompt repeats, so all its whole cache blocks hit except on its first use; the last partial block
  is recomputed, (block + 1) / 2 tokens on average: hit = (1 - cold) x (1 - (block + 1) / 2 / I), with
  cold = pool / requests on the first stage of an experiment (pool = system prompts x users), 0 after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.calibrate.engine.json_cells import latency_ms, number, split_engine
from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.calibrate.engine.table_cells import _hardware
from roofline.calibrate.engine.vllm_results import ImportOptions, vllm_model_name
from roofline.core.units import DTYPE_BYTES


def is_inference_perf(obj: dict[str, Any]) -> bool:
    """A summary of inference-perf experiments (a list of staged runs)."""
    return isinstance(obj.get("experiments"), list)


def prefix_hit_rate(input_len: float, block: float, pool: float | None, requests: float, first: bool) -> float:
    """Share of prompt tokens served by the prefix cache when prompts repeat (module doc); 0 without a pool."""
    if not pool:
        return 0.0
    cold = min(1.0, pool / max(requests, 1.0)) if first else 0.0
    return max(0.0, (1.0 - cold) * (1.0 - (block + 1.0) / 2.0 / input_len))


def _stats(obj: dict[str, Any], key: str, where: str) -> dict[str, float | None]:
    """mean/p50/p90/p99 (s) of a latency block in ms."""
    block = obj.get(key) or {}
    if not isinstance(block, dict):
        raise E2EError(f"{where}: field {key!r} is {block!r}; allowed: a mapping of mean, median, p90, p99 (ms)")
    here = f"{where}: {key}"
    return {
        f"{key}_s": latency_ms(block, "mean", here),
        f"{key}_p50_s": latency_ms(block, "median", here),
        f"{key}_p90_s": latency_ms(block, "p90", here),
        f"{key}_p99_s": latency_ms(block, "p99", here),
    }


def _stage_row(top: dict[str, Any], exp: dict[str, Any], k: int, stage: dict[str, Any], opt: ImportOptions) -> E2ERow:
    where = f"{top['_path']}: experiment {exp.get('name', '?')}: stage {k + 1}"
    settings = top.get("engine_settings") or {}
    engine, version = split_engine(str(top.get("engine") or ""))
    dtype = opt.weights if opt.weights != "bf16" or not top.get("dtype") else str(top["dtype"])
    if dtype not in DTYPE_BYTES:
        raise E2EError(f"{where}: dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    gen = exp.get("shared_prefix") or {}
    prompt = number(stage.get("prompt_len") or {}, "mean", f"{where}: prompt_len", "tokens")
    configured = number(gen, "output_len", f"{where}: shared_prefix", "tokens")
    out = configured or number(stage.get("output_len") or {}, "mean", f"{where}: output_len", "tokens")
    if not prompt or not out or out <= 1:
        raise E2EError(f"{where}: prompt_len.mean and an output length > 1 are needed")
    lat = {**_stats(stage, "ttft", where), **_stats(stage, "e2e", where)}
    ok, failed = int(stage.get("n_success") or 0), int(stage.get("n_fail") or 0)
    tpot = (lat["e2e_s"] - lat["ttft_s"]) / (out - 1) if lat["e2e_s"] and lat["ttft_s"] else None
    rps = number(stage.get("throughput") or {}, "requests_per_sec", f"{where}: throughput", "requests/s")
    pool = (gen.get("num_unique_system_prompts") or 0) * (gen.get("num_users_per_system_prompt") or 0)
    hit = opt.prefix_hit_rate
    if hit is None and settings.get("prefix_caching"):
        hit = prefix_hit_rate(prompt, float(settings.get("block_size") or 16), pool, ok + failed, k == 0)
    w, kv, c = ImportOptions(weights=dtype, kv_dtype=opt.kv_dtype, compute_dtype=opt.compute_dtype).dtypes()
    notes = [
        "inference-perf stage summary",
        f"output_len = configured {out:g}" if configured else "output_len = measured mean (not the configured one)",
        "tpot_s = itl_s = (e2e - ttft) / (output_len - 1)",
        f"prefix_hit_rate estimated: a pool of {pool} repeating prompts, whole blocks cached" if pool and hit else "",
        f"{failed} requests failed (client timeout)" if failed else "",
    ]
    return E2ERow(
        id=f"{exp.get('name', 'experiment')}/stage{k + 1}-r{stage.get('rate')}",
        source=opt.source or "inference-perf",
        reference=str(top.get("source") or Path(top["_path"]).name),
        license=opt.license,
        model=opt.model or vllm_model_name(str(exp.get("model") or ""), where),
        hardware=opt.hardware or _hardware(str(top.get("hardware") or ""), where),
        tp=int(exp.get("tp") or opt.tp),
        weight_dtype=w,
        kv_dtype=kv,
        compute_dtype=c,
        engine=opt.engine or engine,
        engine_version=opt.engine_version or version,
        input_len=prompt,
        output_len=out,
        load="rate",
        arrival_rate=float(stage["rate"]),
        num_requests=ok or None,
        num_failed=failed,
        duration_s=number(stage, "duration", where, "s"),
        timeout_s=opt.timeout_s,
        prefix_hit_rate=hit,
        max_num_batched_tokens=exp.get("max_num_batched_tokens") or settings.get("max_num_batched_tokens"),
        max_num_seqs=exp.get("max_num_seqs") or settings.get("max_num_seqs"),
        tpot_s=tpot,
        itl_s=tpot,
        output_tokens_per_s=None if rps is None else rps * out,
        requests_per_s=rps,
        notes="; ".join(n for n in notes if n),
        **lat,
    )


def import_inference_perf(obj: dict[str, Any], path: Path, opt: ImportOptions) -> list[E2ERow]:
    """Rows of every stage of every experiment in an inference-perf summary."""
    top = {**obj, "_path": str(path)}
    rows = []
    for exp in obj["experiments"]:
        if not isinstance(exp, dict) or not isinstance(exp.get("stages"), list):
            raise E2EError(f"{path}: experiment {exp!r:.60}: expected a mapping with a 'stages' list")
        rows += [_stage_row(top, exp, k, s, opt) for k, s in enumerate(exp["stages"])]
    return rows
