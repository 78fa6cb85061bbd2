"""Physical per-op time models: pure numpy functions of shapes and hardware numbers.

Every model is ``overhead + soft_max(compute time, memory time, serial terms)``, the
roofline ``max(FLOPs / (peak η_c), bytes / (BW η_m)) + overhead`` with a fitted overlap
exponent, where the efficiencies depend on shape through named effects: too few output
tiles (GEMM) or blocks (attention) to fill ``num_sms`` SMs, a serial k-loop before split-K,
too few output columns to stream weights at full bandwidth, L2 residency of activations,
the fused-GQA kernel's group limit and MMA padding, multi-block decode's reduction pass.
A quantized (fp8, int8) GEMM adds its activation-quantize kernel as a term of its own.
Collectives are ``latency + bus_bytes / bandwidth`` per op and device count, with NCCL's
slower small-message protocols.  Times in seconds, sizes in bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from roofline.formulas import collectives
from roofline.formulas.compute import roofline_time_s

Arrays = Mapping[str, np.ndarray]
Params = Mapping[str, float]
#: Bytes per element of the activations a quantized GEMM reads and of its output (bf16).
ACTIVATION_BYTES = 2.0


@dataclass(frozen=True)
class Hw:
    """The hardware numbers a model needs: peak FLOP/s (per row), bandwidths, SM count."""

    peak_flops: np.ndarray | float
    bandwidth: float
    num_sms: float
    link_bandwidth: float = 1.0
    hop_latency: float = 1e-6


def soft_max(*times: np.ndarray, exponent: float) -> np.ndarray:
    """(sum t_i^p)^(1/p): max of the terms for large p, their sum for p = 1."""
    peak = np.maximum.reduce([np.asarray(t, float) for t in times])
    peak = np.where(peak > 0, peak, 1e-30)
    total = sum((np.asarray(t, float) / peak) ** exponent for t in times)
    return peak * total ** (1.0 / exponent)


def fill_fraction(blocks: np.ndarray, num_sms: float, exponent: float) -> np.ndarray:
    """min(1, blocks / SMs)^exponent: the share of peak reached with too few parallel blocks."""
    return np.minimum(1.0, blocks / num_sms) ** exponent


# --------------------------------------------------------------------------- GEMM


def gemm_flops(m: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """2 m n k."""
    return 2.0 * m * n * k


def gemm_bytes(
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    width: np.ndarray,
    out_width: np.ndarray | None = None,
) -> np.ndarray:
    """(m k + k n) w + m n w_out: read A and W once, write C once (w_out = w unless given)."""
    return (m * k + k * n) * width + m * n * (width if out_width is None else out_width)


def gemm_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + soft_max(t_compute, t_memory, t_serial) for C[m,n] = A[m,k] W[k,n].

    t_compute = 2mnk / (peak η_c fill) (1 + k_pipeline/k), fill = min(1, tiles/SMs)^β over
    tile_m x tile_n output tiles; t_memory = k n w_W / (BW η_m n/(n + n_half)) + (mk w + mn w_out)
    / (BW η_m (1 + l2_gain min(1, l2_bytes / act bytes))); t_serial = min(k, split_k) k_step_s.
    w_W, the bytes of a weight, is w unless given (``weight_width``: weight-only quantization).
    """
    m, n, k, width = s["m"], s["n"], s["k"], s["width"]
    tiles = np.ceil(m / p["tile_m"]) * np.ceil(n / p["tile_n"])
    fill = fill_fraction(tiles, p["num_sms"], p["fill_exponent"])
    t_compute = gemm_flops(m, n, k) / (hw.peak_flops * p["compute_efficiency"] * fill)
    t_compute = t_compute * (1.0 + p["k_pipeline"] / k)
    stream = hw.bandwidth * p["memory_efficiency"]
    weights = k * n * s.get("weight_width", width) / (stream * n / (n + p["n_half"]))
    activations = m * k * width + m * n * s.get("out_width", width)
    l2_hit = np.minimum(1.0, p["l2_bytes"] / activations)
    t_memory = weights + activations / (stream * (1.0 + p["l2_gain"] * l2_hit))
    t_serial = np.minimum(k, p["split_k"]) * p["k_step_s"]
    return soft_max(t_compute, t_memory, t_serial, exponent=p["overlap_exponent"]) + p["overhead_s"]


def quantize_time(s: Arrays, p: Params) -> np.ndarray:
    """quantize_floor_s + m k (2 + w) / quantize_bandwidth_bytes_per_s.

    The activation-quantize kernel an fp8/int8 GEMM runs first (a kernel of its own: read
    the bf16 activations, write them in w bytes, plus the scales): a launch-and-reduce floor
    and a streaming term in m k.
    """
    nbytes = s["m"] * s["k"] * (ACTIVATION_BYTES + s["width"])
    return p["quantize_floor_s"] + nbytes / p["quantize_bandwidth_bytes_per_s"]


def gemm_quantized_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """gemm_time + quantize_time: a quantized GEMM is two kernels back to back."""
    return gemm_time(s, hw, p) + quantize_time(s, p)


# --------------------------------------------------------------------------- attention


def attention_flops(s: Arrays) -> np.ndarray:
    """4 b h q kv d, halved for causal prefill (q = kv)."""
    causal = np.where(s["q_len"] > 1, 0.5, 1.0)
    return 4.0 * s["batch"] * s["num_heads"] * s["q_len"] * s["kv_len"] * s["head_dim"] * causal


def attention_bytes(s: Arrays) -> np.ndarray:
    """K and V of kv_len tokens plus Q and O of q_len tokens, per sequence."""
    kv = 2.0 * s["kv_len"] * s["num_kv_heads"]
    qo = 2.0 * s["q_len"] * s["num_heads"]
    return s["batch"] * (kv + qo) * s["head_dim"] * s["width"]


def attention_decode_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + soft_max(KV bytes/(BW η_m fill), FLOPs/(peak η_c), setup) + reduction.

    fill: blocks = batch x kv_heads x ceil(kv_len / kv_chunk) against the SMs.  setup: per
    (sequence, KV head) block, ``block_setup_s`` for MHA (group 1), ``group_block_setup_s`` x
    ceil(group / group_tile) for GQA (the MMA pads the query group), x (head_dim/128)^γ.
    Groups above ``max_group`` fall back to a CUDA-core kernel (per query head setup,
    ``fallback_compute_efficiency``).  reduction: ``multi_block_overhead_s`` once a block's KV
    exceeds ``multi_block_kv_bytes`` and the kernel splits it (a second, reduction pass).
    """
    b, heads, kv_heads = s["batch"], s["num_heads"], s["num_kv_heads"]
    group = heads / kv_heads
    fallback = group > p["max_group"]
    blocks = b * kv_heads * np.ceil(s["kv_len"] / p["kv_chunk"])
    fill = fill_fraction(blocks, p["num_sms"], p["fill_exponent"])
    t_memory = attention_bytes(s) / (hw.bandwidth * p["memory_efficiency"] * fill)
    eff = np.where(fallback, p["fallback_compute_efficiency"], p["compute_efficiency"])
    t_compute = attention_flops(s) / (hw.peak_flops * eff)
    tiles = np.ceil(group / p["group_tile"])
    setup = b * kv_heads * np.where(group > 1, tiles * p["group_block_setup_s"], p["block_setup_s"])
    setup = np.where(fallback, b * heads * p["fallback_head_setup_s"], setup)
    setup = setup * (s["head_dim"] / 128.0) ** p["setup_dim_exponent"]
    per_block = 2.0 * s["kv_len"] * s["head_dim"] * s["width"]
    reduction = np.where(per_block >= p["multi_block_kv_bytes"], p["multi_block_overhead_s"], 0.0)
    t = soft_max(t_memory, t_compute, setup, exponent=p["overlap_exponent"])
    return t + p["overhead_s"] + reduction


def attention_prefill_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + soft_max(FLOPs/(peak η_c fill), bytes/(BW η_m), per-head setup).

    fill: blocks = batch x heads x ceil(q_len / q_tile) against the SMs.
    """
    blocks = s["batch"] * s["num_heads"] * np.ceil(s["q_len"] / p["q_tile"])
    fill = fill_fraction(blocks, p["num_sms"], p["fill_exponent"])
    t_compute = attention_flops(s) / (hw.peak_flops * p["compute_efficiency"] * fill)
    t_memory = attention_bytes(s) / (hw.bandwidth * p["memory_efficiency"])
    setup = s["batch"] * s["num_heads"] * p["head_setup_s"]
    return soft_max(t_compute, t_memory, setup, exponent=p["overlap_exponent"]) + p["overhead_s"]


# --------------------------------------------------------------------------- collectives

#: Per-device link bytes of a collective (ring factors: :func:`roofline.formulas.collectives.bus_factor`).
bus_bytes = collectives.bus_bytes


def collective_time(
    op: str, s: Arrays, latency: np.ndarray, bandwidth: np.ndarray, small_bytes: np.ndarray
) -> np.ndarray:
    """latency + bus_bytes / bandwidth * (1 + small_bytes / (bus_bytes + small_bytes)).

    The last factor is the slower small-message protocol (NCCL LL/LL128), which halves the
    bandwidth of messages well below ``small_bytes``.
    """
    bb = bus_bytes(op, s["message_bytes"], s["num_devices"])
    return latency + bb / bandwidth * (1.0 + small_bytes / (bb + small_bytes))


def collective_spec_time(op: str, s: Arrays, hw: Hw) -> np.ndarray:
    """Spec roofline: the switch collective of :mod:`roofline.formulas.collectives`, latency and bandwidth
    serialized (ring hops × hop latency + bus bytes / link bandwidth); an all-to-all's buffer is one
    device's share, V/n."""
    n = s["num_devices"]
    total = s["message_bytes"] * n if op == "alltoall" else s["message_bytes"]
    return np.asarray(collectives.switch_collective(op, total, n, hw.link_bandwidth, hw.hop_latency).time_upper_s)


# --------------------------------------------------------------------------- roofline


def roofline_time(
    flops: np.ndarray,
    nbytes: np.ndarray,
    hw: Hw,
    compute_eff: float = 1.0,
    memory_eff: float = 1.0,
    overhead: float = 0.0,
) -> np.ndarray:
    """max(FLOPs / (peak η_c), bytes / (BW η_m)) + overhead: the (constant-efficiency) roofline
    (:func:`roofline.formulas.compute.roofline_time_s`)."""
    return roofline_time_s(flops, nbytes, hw.peak_flops * compute_eff, hw.bandwidth * memory_eff) + overhead
