"""Sharding estimators: how far each kind of sharding scales before the network binds.

Formulas follow "All About Transformer Inference" (part 7): "Distributing inference over
multiple accelerators" (prefill, generation, KV-cache sharding), problems 6 and 7 and
appendix B (2D weight-stationary).  Pure functions of numbers; arrays broadcast.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.memory import Number


def hbm_to_ici_ratio(hbm_bandwidth_bytes_per_s: ArrayLike, ici_bandwidth_bytes_per_s: ArrayLike) -> Number:
    """β = W_hbm / W_ici (about 8 on TPU v5e/v6e per the book)."""
    return np.divide(hbm_bandwidth_bytes_per_s, ici_bandwidth_bytes_per_s)


def max_model_parallelism_decode(d_ff: ArrayLike, batch: ArrayLike, beta: ArrayLike) -> Number:
    """Largest Y before ICI binds in generation: ICI time 2BD/W_ici > 2DF/(Y·W_hbm) once Y > F/(B·β)."""
    return np.divide(d_ff, np.multiply(batch, beta))


def ici_arithmetic_intensity(flops_per_s: ArrayLike, ici_bandwidth_bytes_per_s: ArrayLike) -> Number:
    """α_ici = C / W_ici: FLOPs per byte of ICI traffic the chip can hide."""
    return np.divide(flops_per_s, ici_bandwidth_bytes_per_s)


def max_model_parallelism_prefill(d_ff: ArrayLike, alpha_ici: ArrayLike) -> Number:
    """Largest Y before ICI binds in prefill (compute-bound): Y < F/α_ici (book: about 4-8 way on v5e)."""
    return np.divide(d_ff, alpha_ici)


def decode_weight_time_per_layer_s(
    d_model: ArrayLike, d_ff: ArrayLike, tp: ArrayLike, weight_bytes: ArrayLike, hbm_bandwidth_bytes_per_s: ArrayLike
) -> Number:
    """Per-chip MLP weight load with Y-way model parallelism: 2·D·F·bytes / (Y·W_hbm) (book: T_HBM comms)."""
    return 2.0 * np.multiply(np.multiply(d_model, d_ff), weight_bytes) / np.multiply(tp, hbm_bandwidth_bytes_per_s)


def decode_activation_comms_per_layer_s(
    batch: ArrayLike, d_model: ArrayLike, activation_bytes: ArrayLike, ici_bandwidth_bytes_per_s: ArrayLike
) -> Number:
    """Activation collectives per layer in generation: 2·B·D·bytes / W_ici (book's T_ICI comms = 2BD/W_ici)."""
    return (
        2.0
        * np.multiply(np.multiply(batch, d_model), activation_bytes)
        / np.asarray(ici_bandwidth_bytes_per_s, dtype=float)
    )


# --------------------------------------------------------------------------- KV cache sharding


def kv_head_shards(num_kv_heads: ArrayLike, tp: ArrayLike) -> Number:
    """Ways the KV cache splits over heads: gcd(K, Y) (Megatron over heads, at most K-way)."""
    return np.gcd(np.asarray(num_kv_heads, dtype=int), np.asarray(tp, dtype=int))


def kv_batch_shards(num_kv_heads: ArrayLike, tp: ArrayLike) -> Number:
    """Ways the KV cache splits over batch once heads run out: Y / gcd(K, Y) (KV[2, B_Z, S, K_Y, H])."""
    return np.asarray(tp, dtype=int) // kv_head_shards(num_kv_heads, tp)


def attention_alltoalls_per_layer(num_kv_heads: ArrayLike, tp: ArrayLike) -> Number:
    """AllToAlls per attention layer: 2 (Q to batch sharding, output back) when KV is batch-sharded, else 0."""
    return np.where(kv_batch_shards(num_kv_heads, tp) > 1, 2, 0)


def attention_query_bytes(
    batch: ArrayLike, num_heads: ArrayLike, head_dim: ArrayLike, activation_bytes: ArrayLike
) -> Number:
    """Bytes of one decode step's queries (or attention outputs) [B, N·H]: B·N·H·bytes."""
    return np.multiply(np.multiply(np.multiply(batch, num_heads), head_dim), activation_bytes)


def sequence_sharding_comms_time_s(num_layers: ArrayLike, allgather_s: ArrayLike, allreduce_s: ArrayLike) -> Number:
    """Sequence-sharded KV (long context): per layer AllGather Q, then combine partial outputs (AllReduce), × L."""
    return np.multiply(num_layers, np.add(allgather_s, allreduce_s))


# --------------------------------------------------------------------------- 2D weight-stationary


def model_parallel_1d_comms_s(
    batch: ArrayLike, d_model: ArrayLike, ici_bandwidth_bytes_per_s: ArrayLike, num_axes: ArrayLike = 3
) -> Number:
    """1D (Megatron) MLP comms in bf16 over a 3D torus: 4·B·D / (3·W_ici) (book problem 7)."""
    return 4.0 * np.multiply(batch, d_model) / np.multiply(num_axes, ici_bandwidth_bytes_per_s)


def weight_stationary_2d_comms_s(
    batch: ArrayLike,
    d_model: ArrayLike,
    d_ff: ArrayLike,
    x: ArrayLike,
    yz: ArrayLike,
    ici_bandwidth_bytes_per_s: ArrayLike,
) -> Number:
    """2D weight-stationary MLP comms: 2·B·D/(X·W_ici) + 4·B·F/(YZ·W_ici) (book problem 7)."""
    b = np.asarray(batch, dtype=float)
    return (2.0 * b * np.divide(d_model, x) + 4.0 * b * np.divide(d_ff, yz)) / np.asarray(
        ici_bandwidth_bytes_per_s, dtype=float
    )


def optimal_2d_split(num_chips: ArrayLike, d_model: ArrayLike, d_ff: ArrayLike) -> tuple[Number, Number]:
    """(X, YZ) minimising the 2D comms with X·YZ = N: X = sqrt(N·D/(2F)) (= sqrt(N/8) when F = 4D)."""
    x = np.sqrt(np.multiply(num_chips, d_model) / (2.0 * np.asarray(d_ff, dtype=float)))
    return x, np.divide(num_chips, x)


def optimal_2d_comms_s(
    batch: ArrayLike, d_model: ArrayLike, d_ff: ArrayLike, num_chips: ArrayLike, ici_bandwidth_bytes_per_s: ArrayLike
) -> Number:
    """Optimal 2D comms: 4·B·sqrt(2·F·D/N)/W_ici (= sqrt(128)·B·D/(sqrt(N)·W_ici) ≈ 11.3·BD/(√N·W) for F = 4D)."""
    x, yz = optimal_2d_split(num_chips, d_model, d_ff)
    return weight_stationary_2d_comms_s(batch, d_model, d_ff, x, yz, ici_bandwidth_bytes_per_s)


def weight_stationary_2d_crossover_chips(d_model: ArrayLike, d_ff: ArrayLike) -> Number:
    """Chips above which 2D beats 1D: N > 32·(F/D)·(3/4)² = 18·F/D (72 when F = 4D; problem 7)."""
    return 32.0 * np.divide(d_ff, d_model) * (3.0 / 4.0) ** 2


# --------------------------------------------------------------------------- MoE expert sharding


def expert_sharded_bytes_per_chip(
    expert_bytes: ArrayLike, other_bytes: ArrayLike, expert_ways: ArrayLike, model_ways: ArrayLike
) -> Number:
    """Weights per chip with experts as [E_Z, D, F_Y] and the rest Megatron over Y: E_bytes/(Z·Y) + rest/Y."""
    return np.divide(expert_bytes, np.multiply(expert_ways, model_ways)) + np.divide(other_bytes, model_ways)


def free_hbm_per_chip(hbm_bytes_per_chip: ArrayLike, used_bytes_per_chip: ArrayLike) -> Number:
    """HBM left per chip for KV cache and activations: HBM - weights per chip (negative: does not fit)."""
    return np.subtract(hbm_bytes_per_chip, used_bytes_per_chip)


def best_expert_split(chips: int, num_experts: int, expert_bytes: float, other_bytes: float) -> tuple[int, int, float]:
    """(Z, Y, bytes per chip) with Z·Y = chips, Z | E, minimising weights per chip."""
    best: tuple[int, int, float] | None = None
    for z in range(1, chips + 1):
        if chips % z or num_experts % z:
            continue
        y = chips // z
        per_chip = float(expert_sharded_bytes_per_chip(expert_bytes, other_bytes, z, y))
        if best is None or per_chip < best[2]:
            best = (z, y, per_chip)
    if best is None:  # pragma: no cover - z = 1 always qualifies
        raise ValueError(f"no expert split of {chips} chips")
    return best


def smallest_slice_for_experts(
    slice_sizes: Sequence[int], hbm_bytes_per_chip: float, num_experts: int, expert_bytes: float, other_bytes: float
) -> tuple[int, int, int, float] | None:
    """First slice (ascending) whose best (Z, Y) split holds the weights: (chips, Z, Y, bytes per chip)."""
    for chips in sorted(slice_sizes):
        z, y, per_chip = best_expert_split(chips, num_experts, expert_bytes, other_bytes)
        if per_chip <= hbm_bytes_per_chip:
            return chips, z, y, per_chip
    return None


# --------------------------------------------------------------------------- sharded decode step


def decode_comms_time_s(
    num_layers: ArrayLike, allreduce_s: ArrayLike, alltoall_s: ArrayLike, alltoalls_per_layer: ArrayLike
) -> Number:
    """Collectives of one Megatron decode step: L·(2 AllReduces (attention out, MLP out) + AllToAlls)."""
    return np.multiply(num_layers, 2.0 * np.asarray(allreduce_s) + np.multiply(alltoalls_per_layer, alltoall_s))


def overlapped_step_time_s(local_time_s: ArrayLike, comms_time_s: ArrayLike) -> Number:
    """Lower bound: collectives fully overlapped with HBM/FLOPs work, max(local, comms)."""
    return np.maximum(local_time_s, comms_time_s)


def serialized_step_time_s(local_time_s: ArrayLike, comms_time_s: ArrayLike) -> Number:
    """Upper bound: collectives run after the local work, local + comms."""
    return np.add(local_time_s, comms_time_s)


def sharded_bound(local_bound: ArrayLike, local_time_s: ArrayLike, comms_time_s: ArrayLike) -> np.ndarray:
    """'network' where collectives take longer than the local (HBM or FLOPs) work, else the local bound."""
    return np.where(np.greater(comms_time_s, local_time_s), "network", local_bound)
