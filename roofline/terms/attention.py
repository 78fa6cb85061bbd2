"""Attention of one step on one chip: decode over the KV cache and causal prefill, spec or fitted.

Spec sheet (the book): decode attention is bandwidth-bound, B·KV_seq / W_hbm; prefill attention
FLOPs join the matmul FLOPs.  A calibrated profile's fitted kernels take the per-chip shapes:
heads split over tp (KV heads at most K ways, then the batch), windowed layers capped at W.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy import Deployment, kernels
from roofline.formulas import compute, sharding
from roofline.model import memory
from roofline.model.memory import Number


def kv_layout(num_kv_heads: int, num_heads: int, shards: float) -> tuple[float, float, float]:
    """(query heads, KV heads, batch divisor) per chip: KV split over heads up to K, then over batch."""
    ways = int(round(shards))
    head_shards = float(sharding.kv_head_shards(num_kv_heads, ways))
    batch_shards = float(sharding.kv_batch_shards(num_kv_heads, ways))
    return num_heads / head_shards, num_kv_heads / head_shards, batch_shards


def chip_layout(dep: Deployment, shards: float) -> tuple[float, float, float]:
    """(query heads, KV heads, batch divisor) per chip of an attention rank of ``shards`` chips: MLA's one
    latent KV head is replicated on every chip, its query heads split (batch undivided); else
    :func:`kv_layout`."""
    m = dep.model
    if m.kv_lora_rank is not None:
        return m.num_heads / shards, 1.0, 1.0
    return kv_layout(m.num_kv_heads, m.num_heads, shards)


def _head_dims(dep: Deployment) -> tuple[float, float]:
    """(cached dim per KV head, KV heads) the kernel reads: MLA caches one latent of rank + rope."""
    m = dep.model
    if m.kv_lora_rank is not None:
        return float(m.kv_lora_rank + (m.qk_rope_head_dim or 0)), 1.0
    return float(m.head_dim), float(m.num_kv_heads)


def decode_attention_fitted_s(
    dep: Deployment, seqs: ArrayLike, context: ArrayLike, layers: float, shards: float
) -> Number:
    """Σ over attention layers of the fitted decode kernel (windowed at min(S, W), chunked at min(S, C))."""
    m, dtype = dep.model, dep.precision.kv
    head_dim, _ = _head_dims(dep)
    heads, kv_chip, batch_div = chip_layout(dep, shards)
    batch = np.divide(seqs, batch_div)
    attended = layers / m.num_layers
    mix = memory.layer_mix(m)
    total = (
        mix.full * attended * kernels.attention_decode_time_s(dep.hw, dtype, batch, context, heads, kv_chip, head_dim)
    )
    for count, cap in ((mix.sliding, m.sliding_window), (mix.chunked, m.attention_chunk_size)):
        if count:
            total = total + count * attended * kernels.attention_decode_time_s(
                dep.hw, dtype, batch, np.minimum(context, float(cap or 0)), heads, kv_chip, head_dim
            )
    return total


def state_bytes_per_step(dep: Deployment, seqs: ArrayLike, layers: float) -> Number:
    """Recurrent state of linear-attention/mamba layers: read and written back once per sequence per step.

    2 × state bytes × sequences (decode or a prefill chunk), for ``layers`` of the model's layers;
    constant in context (0 for a model without such layers).
    """
    m = dep.model
    state = memory.state_bytes_per_sequence(m, dep.precision.kv_bytes)
    return 2.0 * layers / m.num_layers * np.multiply(seqs, state)


def prefill_attention_flops(dep: Deployment, seqs: ArrayLike, new: ArrayLike, cached: ArrayLike) -> Number:
    """Causal attention FLOPs of ``new`` tokens after ``cached`` ones, all layers, all sequences."""
    m = dep.model
    after = compute.prefill_attention_flops(m, np.add(new, cached))
    before = compute.prefill_attention_flops(m, cached)
    return np.multiply(seqs, np.subtract(after, before))


def prefill_attention_fitted_s(
    dep: Deployment, seqs: ArrayLike, new: ArrayLike, cached: ArrayLike, layers: float, shards: float
) -> Number:
    """Σ over layers of the fitted prefill kernel for ``seqs`` chunks of ``new`` tokens after ``cached``."""
    m, dtype = dep.model, dep.precision.compute
    head_dim, _ = _head_dims(dep)
    heads, kv_chip, batch_div = chip_layout(dep, shards)
    batch = np.divide(seqs, batch_div)
    # The fitted kernel prices q·kv/2 causal pairs; a chunk after c cached tokens attends q·(c + q/2).
    kv_len = np.add(new, 2.0 * np.asarray(cached, dtype=float))
    t = kernels.attention_prefill_time_s(dep.hw, dtype, batch, new, kv_len, heads, kv_chip, head_dim)
    mix = memory.layer_mix(m)
    if mix.attention == m.num_layers:
        return layers * t
    # Hybrid: the fitted kernel on the attention layers; the recurrence of the others at peak FLOP/s.
    rest = np.multiply(np.multiply(seqs, new), compute.recurrent_flops_per_token(m)) / (shards * dep.rates.flops_per_s)
    return layers / m.num_layers * (mix.attention * t + rest)
