"""KV-cache and recurrent-state bytes per token, per sequence and summed over decode."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.shape import ModelShape, Number, layer_mix


def kv_bytes_per_token_per_layer(m: ModelShape, kv_bytes_per_elem: ArrayLike) -> Number:
    """One layer's cache per token: 2·K·H·bytes (K and V); MLA: (kv_lora_rank + rope)·bytes."""
    if m.kv_lora_rank is not None:
        width = m.kv_lora_rank + (m.qk_rope_head_dim or 0)
    else:
        width = 2 * m.num_kv_heads * m.head_dim
    return np.multiply(width, kv_bytes_per_elem)


def kv_layer_counts(m: ModelShape) -> tuple[float, float]:
    """(global, local) layers that store their own cache, after cross-layer sharing."""
    share = m.kv_share_factor
    mix = layer_mix(m)
    return float(np.ceil(mix.full / share)), float(np.ceil(mix.sliding / share))


def capped_kv_layers(m: ModelShape) -> list[tuple[float, float]]:
    """(layers, cap) of the attention layers whose cache stops growing: sliding (W), chunked (C).

    A chunked layer attends within its chunk of C tokens; it is priced at min(S, C), the cache of
    a full chunk (an upper bound on the S mod C tokens of the current one).
    """
    _, local = kv_layer_counts(m)
    out = [(local, float(m.sliding_window or 0))] if local else []
    chunked = layer_mix(m).chunked
    if chunked:
        out.append((float(np.ceil(chunked / m.kv_share_factor)), float(getattr(m, "attention_chunk_size", 0) or 0)))
    return out


def kv_cache_bytes_per_token(m: ModelShape, kv_bytes_per_elem: ArrayLike) -> Number:
    """Uncapped cache per token: 2·bytes·H·K·L (the book), MLA, KV sharing and attention layers honoured."""
    global_layers, _ = kv_layer_counts(m)
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * (global_layers + sum(n for n, _ in capped_kv_layers(m)))


def kv_cache_bytes_per_sequence(m: ModelShape, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike) -> Number:
    """Cache of one sequence of S tokens: per-layer bytes × (global·S + Σ capped·min(S, cap))."""
    s = np.asarray(context_len, dtype=float)
    global_layers, _ = kv_layer_counts(m)
    tokens = global_layers * s
    for layers, cap in capped_kv_layers(m):
        tokens = tokens + layers * np.minimum(s, cap)
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * tokens


def state_elements_per_layer(m: ModelShape) -> tuple[float, float]:
    """(linear-attention, mamba) state elements of one layer: conv history + recurrent state.

    Conv: (kernel − 1) past inputs of the conv channels (vLLM's and the causal-conv1d kernels'
    state); recurrent: Gated DeltaNet nv·dk·dv (one dk×dv matrix per value head), Mamba I·N.
    Conv channels: GDN 2·nk·dk + nv·dv; Mamba-2 I + 2·G·N; Mamba-1 I.
    """
    nk, nv = m.linear_num_key_heads or 0, m.linear_num_value_heads or 0
    dk, dv = m.linear_key_head_dim or 0, m.linear_value_head_dim or 0
    linear = max((m.linear_conv_kernel or 1) - 1, 0) * (2 * nk * dk + nv * dv) + nv * dk * dv
    inner, n = m.mamba_d_inner or 0, m.mamba_state_size or 0
    channels = inner + (2 * m.mamba_n_groups * n if m.mamba_num_heads else 0)
    mamba = max((m.mamba_conv_kernel or 1) - 1, 0) * channels + inner * n
    return float(linear), float(mamba)


def state_bytes_per_sequence(m: ModelShape, bytes_per_elem: ArrayLike) -> Number:
    """Constant state of one sequence over the linear-attention and mamba layers (0 without them).

    Stored in the KV-cache dtype; it does not grow with context.
    """
    mix = layer_mix(m)
    if not (mix.linear or mix.mamba):
        return np.multiply(0.0, bytes_per_elem)
    linear, mamba = state_elements_per_layer(m)
    return np.multiply(mix.linear * linear + mix.mamba * mamba, bytes_per_elem)


def cache_bytes_per_sequence(m: ModelShape, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike) -> Number:
    """What one sequence holds in HBM: its KV cache at S tokens + its constant recurrent state."""
    return np.add(
        kv_cache_bytes_per_sequence(m, context_len, kv_bytes_per_elem), state_bytes_per_sequence(m, kv_bytes_per_elem)
    )


def kv_cache_bytes(m: ModelShape, batch: ArrayLike, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike) -> Number:
    """Cache of a batch: B × per-sequence bytes."""
    return np.multiply(batch, kv_cache_bytes_per_sequence(m, context_len, kv_bytes_per_elem))


def capped_token_sum(start: ArrayLike, count: ArrayLike, cap: float | None) -> Number:
    """Σ_{t=0}^{count-1} min(start + t, cap): tokens attended over ``count`` decode steps."""
    a = np.asarray(start, dtype=float)
    n = np.asarray(count, dtype=float)
    if cap is None:
        return n * a + n * (n - 1.0) / 2.0
    below = np.clip(cap - a, 0.0, n)
    return below * a + below * (below - 1.0) / 2.0 + (n - below) * cap


def kv_cache_bytes_summed_over_decode(
    m: ModelShape, input_len: ArrayLike, output_len: ArrayLike, kv_bytes_per_elem: ArrayLike
) -> Number:
    """Σ over O decode steps of the cache read per sequence, contexts I, I+1, ..., I+O-1."""
    global_layers, _ = kv_layer_counts(m)
    tokens = global_layers * capped_token_sum(input_len, output_len, None)
    for layers, cap in capped_kv_layers(m):
        tokens = tokens + layers * capped_token_sum(input_len, output_len, cap)
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * tokens
