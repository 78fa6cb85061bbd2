"""Explanations of one decode step and of a whole request, read from the step model's terms."""

from __future__ import annotations

import numpy as np

from roofline.analyses.request import RequestResult
from roofline.analyses.step import BOOK, StepResult
from roofline.core.checks import check_instance
from roofline.deploy import Deployment
from roofline.model import memory
from roofline.terms import decode_work, prefill_work, step_terms
from roofline.views.explain.records import (
    S_ATTENTION,
    S_LATENCY,
    S_LINEAR,
    S_MEMORY,
    S_PREFILL,
    S_SHARD,
    Explanation,
    Term,
    _allreduces,
    _f,
    _group_note,
)


def explain_step(dep: Deployment, batch: float, context: float, res: StepResult) -> list[Explanation]:
    """Every number of one decode step (scalar inputs), read from the step model's terms."""
    check_instance(dep, "dep", Deployment, "from roofline.deployment(model, hw, chips)")
    check_instance(res, "res", StepResult, "from roofline.step_from(dep, batch, context)")
    model, precision = dep.model, dep.precision
    t = step_terms(dep, decode_work(batch, context))
    pp = dep.par.pp
    stage_bw = _f(dep.stage_chips) * dep.rates.hbm_bandwidth_bytes_per_s
    stage_flops = _f(dep.stage_chips) * dep.rates.flops_per_s
    kv_seq = _f(memory.kv_cache_bytes_per_sequence(model, context, precision.kv_bytes))
    kv_t, w_t, c_t = _f(res.kv_time_s), _f(res.weight_time_s), _f(res.compute_time_s)
    group = _group_note(dep)
    src = res.sources
    local = _f(res.local_step_time_s)
    comms_up = _f(res.comms_time_upper_s)
    kv_formula = "(kv_lora_rank + qk_rope_head_dim)·L·bytes·S" if model.is_mla else "2·K·H·L·bytes·S"
    per_stage = "" if pp == 1 else f", × pp = {pp} stages"
    out = [
        Explanation(
            "weights",
            _f(res.param_bytes),
            "B",
            "P_bytes = params · bytes/param",
            (Term("params", res.param_count, "params"), Term("bytes/param", precision.weight_bytes, "B")),
            S_MEMORY,
        ),
        Explanation(
            "KV cache per sequence",
            kv_seq,
            "B",
            kv_formula + " (window-capped layers stop at W)",
            (
                Term("L", model.num_layers, "layers"),
                Term("K", model.num_kv_heads, "heads"),
                Term("H", model.head_dim, ""),
                Term("bytes", precision.kv_bytes, "B"),
                Term("S", context, "tokens"),
            ),
            S_MEMORY,
        ),
        Explanation(
            "KV cache (batch)",
            _f(res.kv_bytes),
            "B",
            "B · KV_seq",
            (Term("B", batch, "sequences"), Term("KV_seq", kv_seq, "B")),
            S_MEMORY,
        ),
        Explanation(
            "usable HBM",
            _f(res.usable_hbm_bytes),
            "B",
            "chips · HBM · memory utilization − activation reserve (B·(2D + 2F)·bytes + B·V·4)",
            (Term("chips · HBM", _f(res.hbm_capacity_bytes), "B"), Term("utilization", dep.memory_utilization, "")),
            S_MEMORY,
            note=src.get("memory", ""),
        ),
        Explanation(
            "total memory",
            _f(res.total_bytes),
            "B",
            "replicas·P_bytes + B·KV_seq; fits where the busiest replica's P_bytes + ⌈B/replicas⌉·KV_seq "
            "≤ its usable HBM",
            (
                Term("replicas", _f(res.replicas), ""),
                Term("P_bytes", _f(res.param_bytes), "B"),
                Term("B·KV_seq", _f(res.kv_bytes), "B"),
                Term("⌈B/replicas⌉", _f(res.replica_batch), "sequences"),
                Term("usable HBM", _f(res.usable_hbm_bytes), "B"),
            ),
            S_MEMORY,
            binding=not bool(np.all(res.fits)),
            note="fits" if np.all(res.fits) else "does NOT fit",
        ),
        Explanation(
            "KV read time",
            kv_t,
            "s",
            "T_kv = B·KV_seq / W_hbm (attention: always bandwidth-bound)" + group + per_stage,
            (Term("B·KV_seq", _f(t.kv_read_bytes), "B"), Term("W_hbm", stage_bw, "B/s")),
            S_LATENCY,
            note=src.get("attention_decode", ""),
        ),
        Explanation(
            "weight load time",
            w_t,
            "s",
            "T_weights = P_bytes read / W_hbm (MoE: the experts touched)" + group + per_stage,
            (Term("P_bytes read", _f(t.weight_read_bytes), "B"), Term("W_hbm", stage_bw, "B/s")),
            S_LATENCY,
        ),
        Explanation(
            "matmul time",
            c_t,
            "s",
            "T_flops = 2·B·P_active / C" + group + per_stage,
            (
                Term("B", _f(t.tokens), "tokens"),
                Term("P_active", res.active_param_count, "params"),
                Term("C", stage_flops, "FLOP/s"),
            ),
            S_LINEAR,
            binding=c_t > w_t,
        ),
        Explanation(
            "weight matmuls (GEMMs)",
            _f(res.gemm_time_s),
            "s",
            "spec sheet: max(T_flops, T_weights); calibrated: Σ fitted GEMM kernels per layer",
            (Term("T_flops", c_t, "s"), Term("T_weights", w_t, "s")),
            S_LINEAR,
            note=src.get("gemm", ""),
        ),
        Explanation(
            "attention",
            _f(res.attention_time_s),
            "s",
            "spec sheet: T_kv; calibrated: Σ fitted decode-attention kernels per layer",
            (Term("T_kv", kv_t, "s"),),
            S_ATTENTION,
            note=src.get("attention_decode", ""),
        ),
        Explanation(
            "step time without collectives",
            local,
            "s",
            "attention + GEMMs + overhead (+ small kernels of an MoE/MLA model)" + per_stage,
            (
                Term("attention", _f(res.attention_time_s), "s"),
                Term("GEMMs", _f(res.gemm_time_s), "s"),
                Term("overhead", _f(res.overhead_time_s), "s"),
                Term("small kernels", _f(res.small_kernels_time_s), "s"),
            ),
            S_LATENCY,
            note=f"bound: {np.asarray(res.bound).reshape(-1)[0]}",
        ),
        Explanation(
            "collectives per step",
            comms_up,
            "s",
            f"L · ({_allreduces(dep)} AllReduce [B, D] + AllToAlls when tp > K; ep: dispatch + combine) + pp sends",
            (Term("L", model.num_layers, "layers"), Term("tp", dep.par.tp, "")),
            S_SHARD,
            note=src.get("comms", ""),
        ),
        Explanation(
            "step time",
            _f(res.step_time_s),
            "s",
            "local + max(0, T_comms − overlap·local)  (the prediction)",
            (Term("local", local, "s"), Term("T_comms", comms_up, "s"), Term("overlap", dep.comms_overlap, "")),
            S_SHARD,
            binding=True,
            note=src.get("overlap", ""),
        ),
        Explanation(
            "step time lower bound",
            _f(res.step_time_lower_s),
            "s",
            "max(local, T_comms lower): collectives fully overlapped",
            (Term("local", local, "s"), Term("T_comms lower", _f(res.comms_time_s), "s")),
            S_LATENCY,
        ),
        Explanation(
            "step time upper bound",
            _f(res.step_time_upper_s),
            "s",
            "local + T_comms: serialized",
            (Term("local", local, "s"), Term("T_comms", comms_up, "s")),
            S_LATENCY,
        ),
        Explanation(
            "critical batch",
            res.critical_batch,
            "tokens",
            "B_crit = C·bytes/(2·W_hbm) · E/k",
            (
                Term("C/W_hbm", dep.rates.flops_per_s / dep.rates.hbm_bandwidth_bytes_per_s, "FLOP/B"),
                Term("bytes/param", precision.weight_bytes, "B"),
                Term("E/k", model.num_experts / model.experts_per_token, ""),
            ),
            S_LINEAR,
        ),
        Explanation(
            "tokens/s",
            _f(res.tokens_per_s),
            "tokens/s",
            "B / step time",
            (Term("B", batch, "tokens"), Term("step", _f(res.step_time_s), "s")),
            S_LATENCY,
        ),
        Explanation(
            "$ per million tokens",
            _f(res.cost_per_million_tokens),
            "$",
            "chips · $/chip-hour / (tokens/s · 3600) · 1e6",
            (Term("chips", _f(dep.chips), ""), Term("tokens/s", _f(res.tokens_per_s), "tokens/s")),
            S_LATENCY,
            note=src.get("price", ""),
        ),
    ]
    from roofline.views.explain.operators import operator_explanations

    at = next(i for i, e in enumerate(out) if e.name == "step time without collectives")
    out[at:at] = operator_explanations(dep, res, t)
    return out


def explain_request(dep: Deployment, batch: float, mfu: float, res: RequestResult) -> list[Explanation]:
    """TTFT, TPOT and latency of one request (scalar inputs), read from the prefill step's terms."""
    check_instance(dep, "dep", Deployment, "from roofline.deployment(model, hw, chips)")
    check_instance(res, "res", RequestResult, "from roofline.request_from(dep, input_len, output_len)")
    t = step_terms(dep, prefill_work(batch, _f(res.input_len)), mfu)
    steps = max(_f(res.output_len) - 1.0, 0.0)
    compute_t, memory_t = _f(t.compute_time_s), _f(t.weight_time_s)
    floor = dep.engine.prefill_floor_s  # the engine's least prompt-only step (terms/step.py applies it)
    bound = str(np.asarray(t.bound).reshape(-1)[0])
    return [
        Explanation(
            "prefill FLOPs",
            _f(res.prefill_flops),
            "FLOP",
            "B·(2·P_active·I + causal attention 2·N·(H_qk+H_v)·I²/2·L)",
            (Term("B", batch, ""), Term("I", _f(res.input_len), "tokens")),
            S_ATTENTION,
        ),
        Explanation(
            "TTFT (prefill)",
            _f(res.ttft_s),
            "s",
            "spec: max(FLOPs / (C·MFU), (P_bytes + KV_written) / W_hbm); calibrated: Σ fitted GEMM and "
            "prefill-attention kernels; + collectives" + ("; at least the engine's prompt-step floor" if floor else ""),
            (
                Term("T_flops", compute_t, "s"),
                Term("T_memory", memory_t, "s"),
                Term("T_comms", _f(res.prefill_comms_s), "s"),
            )
            + ((Term("floor", floor, "s"),) if floor else ()),
            S_PREFILL,
            binding=True,
            note="host-bound: the engine's prefill floor (host launches)" if bound == "host" else f"{bound}-bound",
        ),
        Explanation(
            "TPOT (mean)",
            _f(res.tpot_s),
            "s",
            "Σ_t step(I + t) / (O - 1), each step from the step model",
            (
                Term("O - 1", steps, "steps"),
                Term("first step", _f(res.first_step_time_s), "s"),
                Term("last step", _f(res.last_step_time_s), "s"),
            ),
            S_LATENCY,
        ),
        Explanation(
            "latency",
            _f(res.latency_s),
            "s",
            "TTFT + Σ decode steps",
            (Term("TTFT", _f(res.ttft_s), "s"), Term("decode", _f(res.decode_time_s), "s")),
            S_LATENCY,
            binding=True,
            note=("prefill dominates" if _f(res.ttft_s) > _f(res.decode_time_s) else "decode dominates"),
        ),
        *_client_explanations(res),
        Explanation(
            "latency without KV cache",
            _f(res.no_cache_latency_s),
            "s",
            "max(Σ_t prefill FLOPs(I + t) / C, O·P_bytes / W_hbm)",
            (Term("O", _f(res.output_len), "tokens"),),
            f"{BOOK}, 'Transformer inference basics' (naive sampling)",
        ),
    ]


def _client_explanations(res: RequestResult) -> list[Explanation]:
    """TTFT and latency at the client: the GPU's + the entry's front end (none without one)."""
    front = _f(res.frontend_s)
    if not front:
        return []
    src = "the engine entry's request path (sources.client)"
    return [
        Explanation(
            f"{name} at the client",
            _f(client),
            "s",
            f"{name} + front end in + front end out",
            (Term(name, _f(gpu), "s"), Term("front end", front, "s")),
            src,
            note="front end: no GPU time",
        )
        for name, gpu, client in (
            ("TTFT", res.ttft_s, res.client_ttft_s),
            ("latency", res.latency_s, res.client_latency_s),
        )
    ]
