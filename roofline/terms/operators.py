"""The operator terms of MoE and MLA models in one step: each MoE layer's routed experts as one fused-MoE
operator on the busiest GPU (:mod:`roofline.terms.moe`), MLA attention as its own kernels (absorbed decode with
its BMMs, decompressed prefill: :mod:`roofline.terms.mla`).

The step model prices the rest (the dense GEMMs, the collectives, the engine) around them.  Shapes come from
the deployment: the MoE layer sees the whole stage's tokens (every attention data-parallel rank's), split
over ep chips with each expert split stage chips / ep ways; MLA runs one rank's sequences on each of its tp
chips (heads split, the latent replicated).  Both terms name their source: a calibrated profile's fused-MoE /
MLA entries, the nearest fitted format, or the spec sheet at the chip's achievable defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy import Deployment
from roofline.model import memory
from roofline.model.memory import Number
from roofline.terms.exact import all_zero
from roofline.terms.work import Work

if TYPE_CHECKING:  # the kernel families load only when a step has MoE or MLA layers: CLI start-up
    from roofline.terms.mla import MlaShape
    from roofline.terms.moe import MoeShape

#: BMM formats of MLA's absorb GEMMs by the attention's compute dtype (fp8 kinds run the fp8 BMM).
_BMM_DTYPE = {"fp8": "fp8", "fp8_block": "fp8"}


def has_moe_operator(dep: Deployment) -> bool:
    """Whether the model's routed experts are priced as the fused-MoE operator (an MoE model)."""
    return dep.model.num_experts > 1 and memory.moe_layer_count(dep.model) > 0


def has_mla(dep: Deployment) -> bool:
    """Whether the model's attention is MLA (a latent KV cache: kv_lora_rank set)."""
    return dep.model.kv_lora_rank is not None


def moe_shape(dep: Deployment, stage_chips: float) -> MoeShape:
    """One MoE layer on the deployment: experts over ep chips, each split stage chips / ep ways; the experts'
    weight format and compute dtype; the deployment's routing skew."""
    from roofline.terms.moe import MoeShape

    m, prec = dep.model, dep.precision
    return MoeShape(
        hidden=m.d_model,
        inter=float(m.d_ff),
        top_k=m.experts_per_token,
        num_experts=m.num_experts,
        ep=dep.par.ep,
        moe_tp=stage_chips / dep.par.ep,
        gated=m.gated_mlp,
        dtype=prec.weight_dtype("experts"),
        act_dtype=prec.compute_dtype("experts"),
        routing=dep.routing,
    )


def mla_shape(dep: Deployment, rank_chips: float) -> MlaShape:
    """MLA on one chip of an attention rank of ``rank_chips`` chips: its query heads, the latent's dims and formats."""
    from roofline.terms.mla import MlaShape

    m, prec = dep.model, dep.precision
    compute = prec.compute_dtype("attention")
    return MlaShape(
        heads=m.num_heads / rank_chips,
        kv_lora_rank=int(m.kv_lora_rank or 0),
        rope_dim=int(m.qk_rope_head_dim or 0),
        nope_dim=int(m.qk_nope_head_dim or 0),
        v_dim=int(m.v_head_dim or m.head_dim),
        kv_dtype=prec.kv,
        bmm_dtype=_BMM_DTYPE.get(compute, "bf16"),
        compute_dtype=compute,
    )


@dataclass(frozen=True)
class OperatorTerms:
    """The operator terms of one stage's step (seconds on the busiest GPU; 0 where the model has no such layer).

    ``moe_s``: the routed experts of the stage's MoE layers; ``mla_decode_s`` / ``mla_prefill_s``: MLA attention
    of its layers (``mla_bmm_s`` the absorb BMMs inside the decode time); the expert bytes that GPU reads and
    ``moe_expert_share``, the share of its local experts it touches (active x ep / experts: the stage's reads).
    """

    moe_s: Number = 0.0
    moe_weight_bytes: Number = 0.0
    moe_expert_share: Number = 0.0
    mla_decode_s: Number = 0.0
    mla_prefill_s: Number = 0.0
    mla_bmm_s: Number = 0.0
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def mla_s(self) -> Number:
        """MLA attention of the step: decode (kernel + BMMs) and prefill."""
        return np.add(self.mla_decode_s, self.mla_prefill_s)


def operator_terms(
    dep: Deployment, stage: Work, group_tokens: ArrayLike, layers: float, rank_chips: float, stage_chips: float
) -> OperatorTerms:
    """The stage's MoE and MLA operator terms for a rank's ``stage`` work and the stage's ``group_tokens``
    (``layers`` of the model's layers on the stage); all 0 for a model with neither."""
    m = dep.model
    share = layers / m.num_layers
    out: dict[str, object] = {"sources": {}}
    if has_moe_operator(dep):
        from roofline.terms.moe import moe_layer

        tokens = np.asarray(group_tokens, dtype=float)
        term = moe_layer(dep.rates, moe_shape(dep, stage_chips), tokens.reshape(-1) if tokens.ndim == 0 else tokens)
        moe_layers = memory.moe_layer_count(m) * share
        out.update(
            moe_s=moe_layers * term.time_s.reshape(tokens.shape),
            moe_weight_bytes=moe_layers * term.weight_bytes.reshape(tokens.shape),
            moe_expert_share=term.active_experts.reshape(tokens.shape) * dep.par.ep / m.num_experts,
        )
        out["sources"]["moe"] = f"fused-MoE operator per layer: {term.source}"  # type: ignore[index]
    if has_mla(dep):
        from roofline.terms.mla import mla_decode, mla_prefill

        attn_layers = memory.layer_mix(m).attention * share
        shape = mla_shape(dep, rank_chips)
        sources = []
        if not all_zero(stage.decode_seqs):  # (a prefill-only step has no decode kernel: its term is 0)
            dec = mla_decode(dep.rates, shape, stage.decode_seqs, stage.decode_context)
            out.update(mla_decode_s=attn_layers * dec.time_s, mla_bmm_s=attn_layers * dec.bmm_s)
            sources.append(dec.source)
        if not all_zero(stage.prefill_seqs):
            pre = mla_prefill(dep.rates, shape, stage.prefill_seqs, stage.prefill_len, stage.prefill_cached)
            out["mla_prefill_s"] = attn_layers * pre.time_s
            sources.append(pre.source)
        out["sources"]["mla"] = "; ".join(sources) or "MLA: no attention in the step"  # type: ignore[index]
    return OperatorTerms(**out)  # type: ignore[arg-type]


def dense_matmul_params(dep: Deployment, active: float) -> float:
    """Active parameters outside the routed experts (what a token multiplies in the dense GEMMs)."""
    m = dep.model
    if not has_moe_operator(dep):
        return active
    return active - memory.routed_expert_params(m) * m.experts_per_token / m.num_experts


def dense_gemm_s(
    dep: Deployment, stage: Work, share: float, chips: Number, kv_written: Number, attn_flops: Number, mfu: float
) -> Number:
    """The spec-sheet roofline of the GEMMs outside the routed experts (the fused-MoE operator prices those):
    max(FLOPs / C, bytes / W) over the stage's chips, every attention rank's dense weights read once a step
    (dp copies), its tokens through them, the KV written and any prefill attention FLOPs with them."""
    from roofline.terms.gemms import matmul_time_s

    m, prec, dp, rates = dep.model, dep.precision, dep.par.attention_dp, dep.rates
    nbytes = share * dp * memory.dense_weight_bytes(m, prec.bytes_by_component) + np.asarray(kv_written)
    flops_rate = chips * rates.flops_per_s
    bandwidth = chips * rates.hbm_bandwidth_bytes_per_s
    if prec.mixed_compute:
        decode_c = share * matmul_time_s(dep, stage.decode_seqs, 0.0, chips, routed=False)
        prefill_c = share * matmul_time_s(dep, stage.prefill_tokens, 0.0, chips, routed=False)
        compute_s = decode_c + (prefill_c + np.divide(attn_flops, flops_rate)) / mfu
        return np.maximum(compute_s, nbytes / bandwidth)
    active = dense_matmul_params(dep, memory.param_counts(m).active)
    decode = 2.0 * share * dp * np.multiply(stage.decode_seqs, active)
    prefill = 2.0 * share * dp * np.multiply(stage.prefill_tokens, active)
    return np.maximum(decode / flops_rate + (prefill + attn_flops) / (flops_rate * mfu), nbytes / bandwidth)


def small_kernels_per_layer(dep: Deployment) -> tuple[float, float]:
    """(kernels of an MoE layer, of a dense layer) outside the GEMMs, attention and fused MoE, as engines launch
    them in decode: the two RMSNorms (the residual add fused in), RoPE and the MLP's SiLU·mul; MLA adds its
    q_a and kv_a norms; an MoE layer adds the router's gate GEMM and its top-k (quantize kernels sit in the
    fp8 GEMM figures)."""
    attention = 2.0 + (2.0 if has_mla(dep) else 0.0)
    mlp = 2.0
    return attention + mlp + 2.0, attention + mlp


def small_kernels_s(dep: Deployment, tokens: Number, layers: float) -> Number:
    """Σ over the stage's layers of its small kernels, each max(floor, 2·T·D·bytes / W): at least the chip's
    smallest-kernel time (its achievable ``floor_s.default``), else streaming [T, D] in and out.  Priced at the
    achievable defaults only (0 at the spec sheet's peaks: the book's roofline has no such kernels)."""
    if not dep.rates.achievable:
        return 0.0
    from roofline.deploy.families import achievable

    m = dep.model
    per_moe, per_dense = small_kernels_per_layer(dep)
    moe_layers = memory.moe_layer_count(m) * layers / m.num_layers
    count = moe_layers * per_moe + (layers - moe_layers) * per_dense
    floor = achievable(dep.hw).floor("default")
    stream = 2.0 * np.multiply(tokens, m.d_model * dep.precision.activation_bytes) / dep.rates.hbm_bandwidth_bytes_per_s
    return np.where(np.asarray(tokens) > 0, count * np.maximum(floor, stream), 0.0)
