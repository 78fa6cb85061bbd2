"""Weight matmuls of one step as GEMM shapes per chip, timed with a calibrated profile's GEMM model.

Each layer's weights are grouped into input and output projections (attention: QKV in, O out;
MLP: gate+up in, down out), split over ``shards`` chips (Megatron: columns of the input
projection, rows of the output one).  Routed experts run as ``E_touched / ep`` GEMMs per chip of
``T·k / E_touched`` tokens each.  Pure functions; arrays broadcast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy import Deployment, Precision, kernels
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec


def attention_out_params(m: ModelSpec) -> float:
    """O projection: N·H_v·D (MLA: v_head_dim per head)."""
    head_v = m.v_head_dim if m.kv_lora_rank is not None else m.head_dim
    return float(m.num_heads * (head_v or m.head_dim) * m.d_model)


def mlp_gemm_pair(
    hw: HardwareSpec,
    dtype: str,
    tokens: ArrayLike,
    d_model: int,
    d_ff: float,
    gated: bool,
    shards: float,
    weight_bytes: float | None = None,
) -> Number:
    """Gate+up [T, D]x[D, (2|1)·F/s] then down [T, F/s]x[F/s, D] (weights at ``weight_bytes`` each)."""
    up = kernels.gemm_time_s(hw, dtype, tokens, (2.0 if gated else 1.0) * d_ff / shards, d_model, weight_bytes)
    down = kernels.gemm_time_s(hw, dtype, tokens, d_model, d_ff / shards, weight_bytes)
    return up + down


def attention_gemms(
    hw: HardwareSpec, dtype: str, m: ModelSpec, tokens: ArrayLike, shards: float, weight_bytes: float | None = None
) -> Number:
    """QKV [T, D]x[D, in/s] and O [T, out/(D·s)]x[., D] of one attention layer."""
    out = attention_out_params(m)
    qkv = memory.attention_params_per_layer(m) - out
    return kernels.gemm_time_s(
        hw, dtype, tokens, qkv / (m.d_model * shards), m.d_model, weight_bytes
    ) + kernels.gemm_time_s(hw, dtype, tokens, m.d_model, out / (m.d_model * shards), weight_bytes)


def moe_gemms(
    hw: HardwareSpec,
    dtype: str,
    m: ModelSpec,
    tokens: ArrayLike,
    shards: float,
    ep: int,
    weight_bytes: Mapping[str, float | None] | None = None,
    shared: tuple[ArrayLike, float] | None = None,
    shared_dtype: str | None = None,
) -> Number:
    """Routed experts: E_t/ep per chip, each [T·k/E_t, D] through an expert MLP split shards/ep ways; + shared
    (an MLP component, on ``shared`` = (tokens, shards) of one attention rank; default T over the shards)."""
    wb = weight_bytes or {}
    touched = np.maximum(memory.expected_experts_touched(m.num_experts, m.experts_per_token, tokens), 1e-9)
    per_expert = np.multiply(tokens, m.experts_per_token) / touched
    expert_split = shards / ep
    routed = (touched / ep) * mlp_gemm_pair(
        hw, dtype, per_expert, m.d_model, m.d_ff, m.gated_mlp, expert_split, wb.get("experts")
    )
    if m.num_shared_experts:
        shared_ff = m.num_shared_experts * (m.shared_expert_d_ff or m.d_ff)
        rank_tokens, rank_shards = shared or (tokens, shards)
        routed = routed + mlp_gemm_pair(
            hw, shared_dtype or dtype, rank_tokens, m.d_model, shared_ff, m.gated_mlp, rank_shards, wb.get("mlp")
        )
    return routed


def gemm_time_s(
    hw: HardwareSpec,
    dtype: str | Mapping[str, str],
    m: ModelSpec,
    tokens: ArrayLike,
    lm_tokens: ArrayLike,
    layers: float,
    shards: float,
    ep: int = 1,
    weight_bytes: Mapping[str, float | None] | None = None,
    moe_tokens: ArrayLike | None = None,
    moe_shards: float | None = None,
    routed: bool = True,
) -> Number:
    """Σ fitted GEMM times of ``layers`` layers (dense and MoE in the model's ratio) + the LM head.

    Dense parts take ``tokens`` over ``shards`` chips (one attention data-parallel rank); the MoE layers
    take ``moe_tokens`` over ``moe_shards`` chips (the stage's; default the same); ``routed`` False leaves the
    routed experts out (the fused-MoE operator prices them) and keeps the shared experts.

    The LM head runs on ``lm_tokens`` rows only: the positions that are sampled (one per sequence).
    ``weight_bytes`` (per weight component, ``Precision.gemm_weight_bytes``) reads narrower weights than the
    ``dtype`` kernel's own (weight-only quantization); a component absent there is read at ``dtype``.
    ``dtype`` may map each weight component to its own kernel dtype (per-component compute precision).
    """
    wb = weight_bytes or {}
    of = component_dtypes(dtype)
    mix = memory.layer_mix(m)
    moe_layers, dense_layers = mix.moe, mix.dense
    dense_ff = m.dense_d_ff if (moe_layers and m.dense_d_ff) else m.d_ff
    share = layers / m.num_layers
    total = mix.attention * attention_gemms(hw, of("attention"), m, tokens, shards, wb.get("attention"))
    for count, (matrices, _) in ((mix.linear, memory.linear_attention_params(m)), (mix.mamba, memory.mamba_params(m))):
        if count:  # in and out projections as one [T, D]x[D, .] and one [T, .]x[., D] GEMM of half the weights
            width = matrices / (2.0 * m.d_model * shards)
            total = total + count * (
                kernels.gemm_time_s(hw, of("attention"), tokens, width, m.d_model, wb.get("attention"))
                + kernels.gemm_time_s(hw, of("attention"), tokens, m.d_model, width, wb.get("attention"))
            )
    if dense_layers:
        total = total + dense_layers * mlp_gemm_pair(
            hw, of("mlp"), tokens, m.d_model, dense_ff, m.gated_mlp, shards, wb.get("mlp")
        )
    if moe_layers and not routed and m.num_shared_experts:
        shared_ff = m.num_shared_experts * (m.shared_expert_d_ff or m.d_ff)
        total = total + moe_layers * mlp_gemm_pair(
            hw, of("mlp"), tokens, m.d_model, shared_ff, m.gated_mlp, shards, wb.get("mlp")
        )
    elif moe_layers and routed:
        total = total + moe_layers * moe_gemms(
            hw,
            of("experts"),
            m,
            tokens if moe_tokens is None else moe_tokens,
            shards if moe_shards is None else moe_shards,
            ep,
            wb,
            shared=(tokens, shards),
            shared_dtype=of("mlp"),
        )
    total = share * total
    head_component = "embeddings" if m.tie_embeddings else "lm_head"  # a tied head reads the embeddings
    return total + kernels.gemm_time_s(
        hw, of(head_component), lm_tokens, m.vocab_size / shards, m.d_model, wb.get(head_component)
    )


def component_dtypes(dtype: str | Mapping[str, str]) -> Callable[[str], str]:
    """The kernel dtype of a weight component: one dtype for all, or a mapping's entry (its "other" else)."""
    if isinstance(dtype, str):
        return lambda _component: dtype
    return lambda component: dtype.get(component, dtype["other"])


def matmul_params(dep: Deployment, tokens: Number, group_tokens: Number, active: float) -> Number:
    """Σ tokens x active parameters of one step's weight matmuls, the stage's: a rank's ``tokens`` through its
    dense weights dp times, the stage's ``group_tokens`` through the k routed experts once.  One rank
    (dp = 1): tokens x active."""
    dp, m = dep.par.attention_dp, dep.model
    if dp == 1:
        return np.multiply(tokens, active)
    routed = memory.routed_expert_params(m) * m.experts_per_token / max(m.num_experts, 1)
    return np.add(np.multiply(tokens, dp * (active - routed)), np.multiply(group_tokens, routed))


def gemm_dtypes(prec: Precision) -> str | dict[str, str]:
    """The GEMM kernel dtype: one for all, or each weight component's compute dtype (and "other")."""
    if not prec.mixed_compute:
        return prec.compute
    return {**{c: prec.compute_dtype(c) for c in memory.WEIGHT_COMPONENTS}, "other": prec.compute}


def active_params_by_component(dep: Deployment) -> dict[str, float]:
    """Parameters each token multiplies, per weight component: every weight, the routed experts k of E
    (Σ = ``param_counts(m).active``); "expert_other" (expert biases) joins the experts."""
    m = dep.model
    params = memory.weight_params_by_component(m)
    routed = params.pop("experts") + params.pop("expert_other")
    params["experts"] = routed * m.experts_per_token / max(m.num_experts, 1) if m.num_experts > 1 else routed
    return params


def matmul_time_s(dep: Deployment, tokens: Number, group_tokens: Number, chips: Number, routed: bool = True) -> Number:
    """Σ over components c of 2·tokens_c·active_c / (chips·peak(c's compute dtype)): one rank's ``tokens``
    through the dense components dp times, the stage's ``group_tokens`` through the routed experts once
    (all layers; the caller takes a stage's share; ``routed`` False leaves the experts out)."""
    prec, dp = dep.precision, dep.par.attention_dp
    total: Number = 0.0
    for component, active in active_params_by_component(dep).items():
        if not active or (component == "experts" and not routed):
            continue
        dtype = prec.compute if component == "other" else prec.compute_dtype(component)
        rows = group_tokens if component == "experts" else np.multiply(dp, tokens)
        total = total + 2.0 * np.multiply(rows, active) / (chips * dep.peak_flops(dtype))
    return total


def gemm_source(dep: Deployment) -> str:
    """Where the GEMM times come from; with fitted GEMMs and weights narrower than the compute dtype
    (weight-only quantization), the compute dtype's kernel model reading them at their own bytes."""
    label = dep.rates.sources.get("gemm", "")
    narrow = dep.precision.gemm_weight_bytes
    if not (narrow and dep.rates.uses("gemm")):
        return label
    prec = dep.precision
    which = (
        prec.weights
        if not prec.mixed
        else ", ".join(f"{c} {prec.weight_dtype(c)}" for c in sorted(narrow) if c != "other") or prec.weights
    )
    return (
        f"{label}; weights read at their own bytes ({which}; weight-only quantization priced by "
        f"the {prec.compute} kernel model)"
    )
