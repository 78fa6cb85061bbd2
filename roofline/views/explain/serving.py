"""Explanations of serving answers: a plan's deployment, the sharding limits, a serving design."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from roofline.specs import ModelSpec
from roofline.views.explain.records import (
    S_DISAGG,
    S_LATENCY,
    S_MEMORY,
    S_PREFILL,
    S_SHARD,
    Explanation,
    Term,
    _f,
)

if TYPE_CHECKING:  # result types only: the commands that explain them load nothing more
    from roofline.analyses.plan.capacity import PlanCandidate
    from roofline.analyses.serve import ServeResult
    from roofline.analyses.shard import ShardResult


def explain_deployment(d: PlanCandidate, qps: float, mean_output: float) -> list[Explanation]:
    """The plan's numbers for one deployment: Little's law, the M/G/1 prefill wait, replicas, cost."""
    steps = max(mean_output - 1.0, 0.0)
    return [
        Explanation(
            "TTFT",
            d.ttft_s,
            "s",
            "E[S] + λ·E[S²]/(2·(1 - λ·E[S]))  (M/G/1 wait on prefill)",
            (
                Term("E[S] prefill", d.prefill_s, "s"),
                Term("λ per replica", d.rate_per_replica, "req/s"),
                Term("ρ = λ·E[S]", d.prefill_utilisation, ""),
            ),
            S_PREFILL,
            binding=d.binding == "TTFT SLO",
        ),
        Explanation(
            "TPOT",
            d.tpot_s,
            "s",
            "decode step / (1 - ρ)  (prefill shares the chips)",
            (Term("decode step", d.decode_step_s, "s"), Term("ρ", d.prefill_utilisation, "")),
            S_LATENCY,
            binding=d.binding == "TPOT SLO",
        ),
        Explanation(
            "sequences per replica",
            d.sequences_per_replica,
            "sequences",
            "Little's law: λ · (TTFT + (E[O] - 1)·TPOT) ≤ batch",
            (
                Term("λ", d.rate_per_replica, "req/s"),
                Term("TTFT", d.ttft_s, "s"),
                Term("E[O] - 1", steps, "steps"),
                Term("TPOT", d.tpot_s, "s"),
                Term("batch", d.batch, ""),
            ),
            S_DISAGG,
            binding=d.binding in ("qps", "memory"),
        ),
        Explanation(
            "memory per replica",
            d.memory_bytes,
            "B",
            "P_bytes + B·KV_seq(mean decode context) ≤ chips·HBM",
            (Term("chips·HBM", d.hbm_bytes, "B"),),
            S_MEMORY,
            binding=d.binding == "memory",
        ),
        Explanation(
            "replicas",
            d.replicas,
            "",
            "ceil(qps / λ_max)",
            (Term("qps", qps, "req/s"), Term("λ_max", qps / d.replicas if d.replicas else 0.0, "req/s")),
            S_DISAGG,
            note=f"binding: {d.binding}",
        ),
        Explanation(
            "$ per hour",
            d.dollars_per_hour,
            "$/h",
            "replicas · chips · $/chip-hour",
            (
                Term("replicas", d.replicas, ""),
                Term("chips", d.chips_per_replica, ""),
                Term("$/chip-hour", d.price_per_chip_hour, "$"),
            ),
            S_LATENCY,
        ),
        Explanation(
            "$ per million output tokens",
            d.cost_per_million_output_tokens,
            "$",
            "$/h / (qps · E[O] · 3600) · 1e6",
            (Term("$/h", d.dollars_per_hour, "$"), Term("qps", qps, "req/s"), Term("E[O]", mean_output, "tokens")),
            S_LATENCY,
        ),
    ]


def explain_shard(model: ModelSpec, res: ShardResult) -> list[Explanation]:
    """The sharding limits of a :class:`~roofline.analyses.shard.ShardResult`, formula by formula."""
    lower, upper = _f(res.step_time_lower_s), _f(res.step_time_upper_s)
    comms = _f(res.comms_time_s)
    local = _f(res.local_step_time_s)
    return [
        Explanation(
            "β",
            res.beta,
            "",
            "β = W_hbm / W_ici (per chip of the tp group)",
            (Term("W_ici", res.ici_bandwidth_bytes_per_s, "B/s"),),
            S_SHARD,
        ),
        Explanation(
            "largest tp in decode",
            res.max_tp_decode,
            "chips",
            "Y < F / (B·β): ICI time 2BD/W_ici stays under weight time 2DF/(Y·W_hbm)",
            (Term("F", model.d_ff, ""), Term("B", res.batch, "tokens"), Term("β", res.beta, "")),
            S_SHARD,
            binding=res.tp > res.max_tp_decode,
            note="tp exceeds it: ICI binds" if res.tp > res.max_tp_decode else "tp within it",
        ),
        Explanation(
            "largest tp in prefill",
            res.max_tp_prefill,
            "chips",
            "Y < F / α_ici, α_ici = C / W_ici",
            (Term("F", model.d_ff, ""), Term("α_ici", res.alpha_ici, "FLOP/B")),
            S_PREFILL,
        ),
        Explanation(
            "collectives per step",
            comms,
            "s",
            "L · (2 AllReduce [B, D] + AllToAlls when tp > K)",
            (Term("L", model.num_layers, "layers"), Term("AllToAlls/layer", res.attention_alltoalls_per_layer, "")),
            S_SHARD,
        ),
        Explanation(
            "decode step without collectives",
            local,
            "s",
            "attention + GEMMs + overhead",
            (Term("local", local, "s"),),
            S_SHARD,
        ),
        Explanation(
            "step lower bound",
            lower,
            "s",
            "max(local, T_comms): collectives overlapped",
            (Term("T_comms", comms, "s"),),
            S_SHARD,
            binding=comms >= lower,
            note=f"bound: {np.asarray(res.bound).reshape(-1)[0]}",
        ),
        Explanation(
            "step time (prediction)",
            _f(res.step_time_s),
            "s",
            "local + max(0, T_comms − overlap·local)",
            (Term("local", local, "s"),),
            S_SHARD,
        ),
        Explanation(
            "step upper bound",
            upper,
            "s",
            "T_kv + max(T_flops, T_weights) + T_comms(upper): nothing overlapped",
            (Term("T_comms lower", comms, "s"),),
            S_SHARD,
        ),
    ]


def explain_serve(res: ServeResult, batch: int, output_len: int) -> list[Explanation]:
    """TTFT, TPOT and throughput of a :class:`~roofline.analyses.shard.ServeResult`, by engine mode."""
    ttft_formula = {
        "static": "prefill of the whole batch",
        "interleaved": "batch-1 prefill + step/2 wait",
        "disaggregated": "batch-1 prefill + KV transfer",
        "mixed": "step/2 wait + a step of the decodes and whole prompts",
    }[res.mode]
    tpot_formula = {
        "static": "decode step",
        "interleaved": "step + (B/O)·batch-1 prefill stall",
        "disaggregated": "decode step (prefill on its own servers)",
        "mixed": "step of B decodes + B/O prompts",
    }[res.mode]
    return [
        Explanation(
            "TTFT",
            res.ttft_s,
            "s",
            ttft_formula,
            (
                Term("batch-1 prefill", res.prefill_s, "s"),
                Term("batch prefill", res.batch_prefill_s, "s"),
                Term("decode step", res.step_time_s, "s"),
                Term("KV transfer", res.kv_transfer_s, "s"),
            ),
            S_DISAGG,
            binding=res.ttft_s > res.tpot_s * output_len,
        ),
        Explanation(
            "TPOT",
            res.tpot_s,
            "s",
            tpot_formula,
            (
                Term("decode step", res.step_time_s, "s"),
                Term("B", batch, ""),
                Term("O", output_len, ""),
                Term("stall per prefill", res.decode_stall_s, "s"),
            ),
            S_DISAGG,
        ),
        Explanation(
            "prefill : decode servers",
            res.prefill_to_decode_ratio,
            "",
            "B·t_prefill / (O·t_step)",
            (
                Term("B", batch, ""),
                Term("t_prefill", res.prefill_s, "s"),
                Term("O", output_len, ""),
                Term("t_step", res.step_time_s, "s"),
            ),
            S_DISAGG,
        ),
        Explanation(
            "tokens/s per chip",
            res.tokens_per_s_per_chip,
            "tokens/s",
            "B / TPOT over the chips the design occupies",
            (Term("chips", res.chips, ""),),
            S_DISAGG,
        ),
    ]
