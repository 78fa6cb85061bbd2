"""Step-time estimators: decode step (TPOT), prefill (TTFT), whole requests, and no-cache cost.

Formulas follow "All About Transformer Inference" (How to Scale Your Model, part 7),
section "Theoretical estimates for LLM latency and throughput".  Rates are for the whole
slice (chips × per-chip FLOP/s or bytes/s).  Pure functions; arrays broadcast.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.formulas.compute import roofline_time_s
from roofline.model.memory import Number

#: Names of the terms a step can be bound by.
BOUND_NAMES = ("memory", "compute", "network")


def min_decode_step_time_s(
    kv_bytes_total: ArrayLike, weight_bytes: ArrayLike, bandwidth_bytes_per_s: ArrayLike
) -> Number:
    """Lower bound, everything bandwidth-bound: (B·KV + weight bytes) / W_hbm."""
    return np.add(kv_bytes_total, weight_bytes) / np.asarray(bandwidth_bytes_per_s, dtype=float)


def kv_read_time_s(kv_bytes_total: ArrayLike, bandwidth_bytes_per_s: ArrayLike) -> Number:
    """Attention term, always bandwidth-bound: B·KV / W_hbm."""
    return np.divide(kv_bytes_total, bandwidth_bytes_per_s)


def weight_load_time_s(weight_bytes: ArrayLike, bandwidth_bytes_per_s: ArrayLike) -> Number:
    """Time to stream the weights from HBM: weight bytes / W_hbm."""
    return np.divide(weight_bytes, bandwidth_bytes_per_s)


def matmul_time_s(batch: ArrayLike, active_params: ArrayLike, flops_per_s: ArrayLike) -> Number:
    """Weight-matmul compute of a decode step: 2·B·active params / C."""
    return 2.0 * np.multiply(batch, active_params) / np.asarray(flops_per_s, dtype=float)


def mlp_time_s(
    batch: ArrayLike,
    weight_bytes: ArrayLike,
    active_params: ArrayLike,
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
) -> Number:
    """Weight matmuls of a decode step, compute or bandwidth bound: max(2·B·P/C, P_bytes/W)."""
    return roofline_time_s(2.0 * np.multiply(batch, active_params), weight_bytes, flops_per_s, bandwidth_bytes_per_s)


def decode_step_time_s(
    batch: ArrayLike,
    kv_bytes_per_seq: ArrayLike,
    weight_bytes: ArrayLike,
    active_params: ArrayLike,
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    kv_bandwidth_bytes_per_s: ArrayLike | None = None,
    overhead_s: ArrayLike = 0.0,
) -> Number:
    """General form: B·KV/W + max(2·B·P/C, P_bytes/W) (+ fixed kernel overhead when calibrated).

    One step is :func:`decode_time_total_s` over a single step.
    """
    return decode_time_total_s(
        batch,
        1.0,
        kv_bytes_per_seq,
        weight_bytes,
        active_params,
        flops_per_s,
        bandwidth_bytes_per_s,
        kv_bandwidth_bytes_per_s,
        overhead_s,
    )


def decode_bound(
    batch: ArrayLike,
    kv_bytes_per_seq: ArrayLike,
    weight_bytes: ArrayLike,
    active_params: ArrayLike,
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    kv_bandwidth_bytes_per_s: ArrayLike | None = None,
) -> np.ndarray:
    """'compute' where 2·B·P/C exceeds all HBM time (KV + weights), else 'memory'."""
    kv_bw = bandwidth_bytes_per_s if kv_bandwidth_bytes_per_s is None else kv_bandwidth_bytes_per_s
    memory = kv_read_time_s(np.multiply(batch, kv_bytes_per_seq), kv_bw) + weight_load_time_s(
        weight_bytes, bandwidth_bytes_per_s
    )
    compute = matmul_time_s(batch, active_params, flops_per_s)
    return np.where(compute > memory, "compute", "memory")


def tokens_per_s(batch: ArrayLike, step_time_s: ArrayLike) -> Number:
    """Decode throughput: B tokens per step / step time."""
    return np.divide(batch, step_time_s)


def max_tokens_per_s_compute(active_params: ArrayLike, flops_per_s: ArrayLike) -> Number:
    """Compute roofline on decode throughput: C / (2·active params)."""
    return np.divide(flops_per_s, 2.0 * np.asarray(active_params, dtype=float))


def prefill_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    mfu: ArrayLike = 1.0,
) -> Number:
    """Prefill (TTFT without queueing): max(FLOPs / (C·MFU), bytes / W_hbm)."""
    return roofline_time_s(flops, bytes_moved, np.multiply(flops_per_s, mfu), bandwidth_bytes_per_s)


def request_latency_s(ttft_s: ArrayLike, decode_time_total_s: ArrayLike) -> Number:
    """End-to-end latency: TTFT + Σ decode step times (the KV growing as it decodes)."""
    return np.add(ttft_s, decode_time_total_s)


def decode_time_total_s(
    batch: ArrayLike,
    output_len: ArrayLike,
    kv_bytes_summed: ArrayLike,
    weight_bytes: ArrayLike,
    active_params: ArrayLike,
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    kv_bandwidth_bytes_per_s: ArrayLike | None = None,
    overhead_s: ArrayLike = 0.0,
) -> Number:
    """Σ over O steps: B·Σ_t KV(I+t)/W + O·(max(2·B·P/C, P_bytes/W) + overhead)."""
    kv_bw = bandwidth_bytes_per_s if kv_bandwidth_bytes_per_s is None else kv_bandwidth_bytes_per_s
    attention = kv_read_time_s(np.multiply(batch, kv_bytes_summed), kv_bw)
    mlp = mlp_time_s(batch, weight_bytes, active_params, flops_per_s, bandwidth_bytes_per_s)
    return attention + np.multiply(output_len, np.add(mlp, overhead_s))


def no_cache_generation_time_s(
    flops_total: ArrayLike,
    weight_bytes: ArrayLike,
    output_len: ArrayLike,
    flops_per_s: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
) -> Number:
    """Without a KV cache each step re-runs the prefix: max(Σ FLOPs / C, O·weight bytes / W)."""
    bandwidth = np.asarray(bandwidth_bytes_per_s, dtype=float)
    return roofline_time_s(flops_total, np.multiply(output_len, weight_bytes), flops_per_s, bandwidth)
