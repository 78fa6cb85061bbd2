"""Compute estimators: FLOPs per token, arithmetic intensity and the critical batch size.

Formulas follow "All About Transformer Inference" (How to Scale Your Model, part 7),
sections "Linear operations: what bottlenecks us?" and "What about attention?".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.memory import ModelShape, Number, capped_token_sum, layer_mix


def matmul_flops(batch: ArrayLike, d_in: ArrayLike, d_out: ArrayLike) -> Number:
    """FLOPs of [B, D] × [D, F]: 2·B·D·F."""
    return 2.0 * np.multiply(np.multiply(batch, d_in), d_out)


def matmul_bytes(
    batch: ArrayLike,
    d_in: ArrayLike,
    d_out: ArrayLike,
    activation_bytes: ArrayLike = 2.0,
    weight_bytes: ArrayLike = 2.0,
) -> Number:
    """HBM bytes of [B, D] × [D, F]: act·(B·D + B·F) + weight·D·F."""
    b, d, f = (np.asarray(x, dtype=float) for x in (batch, d_in, d_out))
    return np.multiply(activation_bytes, b * d + b * f) + np.multiply(weight_bytes, d * f)


def matmul_arithmetic_intensity(
    batch: ArrayLike,
    d_in: ArrayLike,
    d_out: ArrayLike,
    activation_bytes: ArrayLike = 2.0,
    weight_bytes: ArrayLike = 2.0,
) -> Number:
    """2·B·D·F / (2BD + 2DF + 2BF) in bf16; ≈ B when B ≪ D, F."""
    return matmul_flops(batch, d_in, d_out) / matmul_bytes(batch, d_in, d_out, activation_bytes, weight_bytes)


def roofline_time_s(
    flops: ArrayLike, nbytes: ArrayLike, flops_per_s: ArrayLike, bandwidth_bytes_per_s: ArrayLike
) -> Number:
    """The roofline: max(FLOPs / C, bytes / W), the longer of an operation's compute and memory time
    (book part 1, "Rooflines"; part 7 applies it to the decode step's matmuls and to prefill)."""
    return np.maximum(np.divide(flops, flops_per_s), np.divide(nbytes, bandwidth_bytes_per_s))


def hardware_arithmetic_intensity(flops_per_s: ArrayLike, bandwidth_bytes_per_s: ArrayLike) -> Number:
    """The chip's FLOPs per byte: C / W_hbm (240 for TPU v5e in bf16)."""
    return np.divide(flops_per_s, bandwidth_bytes_per_s)


def attention_arithmetic_intensity(
    kv_len: ArrayLike,
    query_len: ArrayLike,
    num_heads: ArrayLike = 1,
    num_kv_heads: ArrayLike = 1,
    bytes_per_elem: ArrayLike = 2.0,
) -> Number:
    """4·S·T·N·H / (bytes·(2·T·N·H + 2·S·K·H)): MHA bf16 gives S·T/(S+T), T/2 in prefill, ~N/K in decode."""
    s, t = np.asarray(kv_len, dtype=float), np.asarray(query_len, dtype=float)
    n, k = np.asarray(num_heads, dtype=float), np.asarray(num_kv_heads, dtype=float)
    flops = 4.0 * s * t * n
    bytes_ = np.multiply(bytes_per_elem, 2.0 * t * n + 2.0 * s * k)
    return flops / bytes_


def critical_batch_size(
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    bytes_per_param: ArrayLike = 2.0,
    num_experts: ArrayLike = 1,
    experts_per_token: ArrayLike = 1,
) -> Number:
    """B where 2·B·D·F/C = D·F·bytes/W: B_crit = C·bytes/(2·W), × E/k for MoE (book: 240 on v5e)."""
    ratio = np.divide(num_experts, experts_per_token)
    return np.divide(flops_per_s, bandwidth_bytes_per_s) * np.divide(bytes_per_param, 2.0) * ratio


def attention_flops_per_token(m: ModelShape, context_len: ArrayLike) -> Number:
    """QK and AV of one new token over S cached tokens: 2·N·(H_qk + H_v)·S per layer (S ≤ window)."""
    s = np.asarray(context_len, dtype=float)
    per_position = 2.0 * m.num_heads * _qk_plus_v_dim(m)
    global_layers, local_layers = _attention_layers(m)
    positions = global_layers * s
    if local_layers:
        positions = positions + local_layers * np.minimum(s, float(m.sliding_window or 0))
    chunked, chunk = _chunked_layers(m)
    if chunked:
        positions = positions + chunked * np.minimum(s, chunk)
    return per_position * positions + recurrent_flops_per_token(m)


#: FLOPs per recurrent-state element per token: Mamba h = exp(dt·A)·h + dt·B·x (3) and y = C·h (2);
#: Gated DeltaNet S = g·S (1), S·k (2), S += k·(β(v − S·k))ᵀ (2), o = S·q (2) (Yang et al. 2024).
STATE_FLOPS_PER_ELEMENT = {"linear": 7.0, "mamba": 5.0}


def recurrent_flops_per_token(m: ModelShape) -> float:
    """Linear-attention and mamba layers, one token: per-element state FLOPs × recurrent state + 2·conv taps.

    The projections are matmuls (in 2·active params); this is the recurrence and depthwise conv.
    """
    mix = layer_mix(m)
    if not (mix.linear or mix.mamba):
        return 0.0
    nk, nv = m.linear_num_key_heads or 0, m.linear_num_value_heads or 0
    dk, dv = m.linear_key_head_dim or 0, m.linear_value_head_dim or 0
    inner, n = m.mamba_d_inner or 0, m.mamba_state_size or 0
    lin_conv = 2.0 * (m.linear_conv_kernel or 0) * (2 * nk * dk + nv * dv)
    mam_conv = 2.0 * (m.mamba_conv_kernel or 0) * (inner + (2 * m.mamba_n_groups * n if m.mamba_num_heads else 0))
    lin = STATE_FLOPS_PER_ELEMENT["linear"] * nv * dk * dv + lin_conv
    mam = STATE_FLOPS_PER_ELEMENT["mamba"] * inner * n + mam_conv
    return float(mix.linear * lin + mix.mamba * mam)


def decode_flops_per_token(m: ModelShape, active_params: float, context_len: ArrayLike) -> Number:
    """One generated token: 2·active params (matmuls) + attention over the S cached tokens."""
    return 2.0 * active_params + attention_flops_per_token(m, context_len)


def prefill_attention_flops(m: ModelShape, prompt_len: ArrayLike) -> Number:
    """Causal attention of a T-token prompt: 2·N·(H_qk + H_v)·Σ_i min(i, W) per layer (≈T²/2 pairs)."""
    per_position = 2.0 * m.num_heads * _qk_plus_v_dim(m)
    global_layers, local_layers = _attention_layers(m)
    pairs = global_layers * capped_token_sum(1.0, prompt_len, None)
    if local_layers:
        pairs = pairs + local_layers * capped_token_sum(1.0, prompt_len, float(m.sliding_window or 0))
    chunked, chunk = _chunked_layers(m)
    if chunked:
        pairs = pairs + chunked * chunked_causal_pairs(prompt_len, chunk)
    return per_position * pairs + recurrent_flops_per_token(m) * np.asarray(prompt_len, dtype=float)


def chunked_causal_pairs(prompt_len: ArrayLike, chunk: float) -> Number:
    """Causal pairs within chunks of C: q·C(C+1)/2 + r(r+1)/2 for T = q·C + r (Llama 4 chunked attention)."""
    t = np.asarray(prompt_len, dtype=float)
    full, rest = np.floor(t / chunk), np.mod(t, chunk)
    return full * chunk * (chunk + 1.0) / 2.0 + rest * (rest + 1.0) / 2.0


def prefill_flops(m: ModelShape, active_params: float, prompt_len: ArrayLike) -> Number:
    """Prefill of T tokens: 2·active params·T + causal attention FLOPs."""
    t = np.asarray(prompt_len, dtype=float)
    return 2.0 * active_params * t + prefill_attention_flops(m, t)


def no_cache_generation_flops(
    m: ModelShape, active_params: float, input_len: ArrayLike, output_len: ArrayLike
) -> Number:
    """Generating O tokens without a KV cache re-runs the prefix: Σ_{t<O} prefill_flops(I + t)."""
    i = np.asarray(input_len, dtype=float)
    o = np.asarray(output_len, dtype=float)
    linear = 2.0 * active_params * capped_token_sum(i, o, None)
    per_position = 2.0 * m.num_heads * _qk_plus_v_dim(m)
    global_layers, local_layers = _attention_layers(m)
    # Σ_{t<O} (I+t)(I+t+1)/2 for global layers: sum of triangular numbers T_n for n = I..I+O-1.
    pairs = global_layers * (_tetrahedral(i + o - 1.0) - _tetrahedral(i - 1.0))
    if local_layers:
        w = float(m.sliding_window or 0)
        pairs = pairs + local_layers * _windowed_prefix_pairs(i, o, w)
    chunked, chunk = _chunked_layers(m)
    if chunked:  # priced as a window of C: an upper bound on in-chunk pairs
        pairs = pairs + chunked * _windowed_prefix_pairs(i, o, chunk)
    return linear + per_position * pairs + recurrent_flops_per_token(m) * capped_token_sum(i, o, None)


def _qk_plus_v_dim(m: ModelShape) -> float:
    if m.kv_lora_rank is not None:
        return float((m.qk_nope_head_dim or 0) + (m.qk_rope_head_dim or 0) + (m.v_head_dim or 0))
    return 2.0 * m.head_dim


def _attention_layers(m: ModelShape) -> tuple[float, float]:
    """(global, local) attention layers; KV sharing saves memory, not attention FLOPs."""
    mix = layer_mix(m)
    return float(mix.full), float(mix.sliding)


def _chunked_layers(m: ModelShape) -> tuple[float, float]:
    """(chunked-attention layers, chunk size C)."""
    return float(layer_mix(m).chunked), float(getattr(m, "attention_chunk_size", 0) or 0)


def _tetrahedral(n: Number) -> Number:
    """Σ_{j=1}^{n} j(j+1)/2 = n(n+1)(n+2)/6."""
    n = np.maximum(np.asarray(n, dtype=float), 0.0)
    return n * (n + 1.0) * (n + 2.0) / 6.0


def _windowed_prefix_pairs(i: Number, o: Number, w: float) -> Number:
    """Σ_{t<O} Σ_{j=1}^{I+t} min(j, W): windowed causal pairs of each re-processed prefix."""
    lengths_start, count = np.asarray(i, dtype=float), np.asarray(o, dtype=float)
    # Σ_{j=1}^{n} min(j, W) = T(min(n, W)) + (n - W)+ · W; sum that over n = I..I+O-1.
    below = np.clip(w - lengths_start + 1.0, 0.0, count)  # prefixes with n ≤ W
    tri = _tetrahedral(lengths_start + below - 1.0) - _tetrahedral(lengths_start - 1.0)
    above = count - below
    first_above = np.maximum(lengths_start, w + 1.0)
    tri_w = w * (w + 1.0) / 2.0
    excess = capped_token_sum(first_above - w, above, None) * w
    return tri + above * tri_w + excess
