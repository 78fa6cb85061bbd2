"""MLA attention as kernel families of its own: absorbed decode, decompressed prefill, the absorb BMMs.

Multi-head latent attention (DeepSeek-V2/V3) caches one latent per token: ``kv_lora_rank`` + the
rope dims.  Shape arrays per GPU (see :mod:`roofline.kernels.schema`):

* ``mla_decode`` (absorbed form): ``batch`` sequences decode one token over ``kv_len`` cached tokens
  with ``num_heads`` query heads on **one** latent KV head; ``head_dim`` = kv_lora_rank + rope (the
  query-key width, 576 for DeepSeek-V3) and ``v_head_dim`` = kv_lora_rank (512).  The latent is read
  once for all heads: bytes = batch · kv_len · head_dim · KV bytes; FLOPs = 2 · batch · heads · kv_len ·
  (head_dim + v_head_dim).  The row's dtype is the latent cache's (fp8 runs at the fp8 rate).
* ``mla_prefill``: the decompressed heads (query-key ``head_dim`` = nope + rope = 192, ``v_head_dim``
  128), causal.
* ``bmm``: the absorb batched GEMMs around decode attention, ``batch`` (= heads) products
  [m, k] x [k, n]: pre (q_nope into the latent: k = nope, n = kv_lora_rank) and post (the latent output
  back to v: k = kv_lora_rank, n = v_head_dim); fp8 is block-scaled with its 1x128 quantize pass.
"""

from __future__ import annotations

import numpy as np

from roofline.formulas.compute import roofline_time_s
from roofline.kernels.forms import ACTIVATION_BYTES, Arrays, Hw, Params, fill_fraction, soft_max
from roofline.kernels.lsq import Param
from roofline.kernels.registry import Achievable, KernelFamily, register
from roofline.kernels.trtllm_gen_mla import (
    GENERIC,
    REREAD,
    head_tile,
    kv_step,
    latent_reads,
    mma_heads,
    setup_ctas,
    trtllm_gen_constants,
)


def decode_flops(s: Arrays) -> np.ndarray:
    """2 · batch · heads · kv_len · (head_dim + v_head_dim): scores and the latent-weighted sum."""
    return 2.0 * s["batch"] * s["num_heads"] * s["kv_len"] * (s["head_dim"] + s["v_head_dim"])


def decode_latent_bytes(s: Arrays) -> np.ndarray:
    """batch · kv_len · head_dim · KV bytes: the latent cache, read once for all heads."""
    return s["batch"] * s["kv_len"] * s["head_dim"] * s["width"]


def decode_query_bytes(s: Arrays) -> np.ndarray:
    """batch · heads · (head_dim + v_head_dim) · 2: absorbed queries in, latent outputs out (bf16)."""
    return s["batch"] * s["num_heads"] * (s["head_dim"] + s["v_head_dim"]) * ACTIVATION_BYTES


def mla_decode_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + soft_max(t_latent + t_query, t_compute) + CTA setup + batch·heads·head setup + t_split.

    Blocks: groups = batch·⌈heads/tile⌉ (tile 64; the trtllm-gen rule's own, :mod:`trtllm_gen_mla`), each split
    over ⌈kv_len/step⌉ chunks at most (step = kv_chunk; the rule's 256), as many as fill the SMs (splits =
    clip(⌊SMs/groups⌋, 1, ⌈kv_len/step⌉)); t_latent = latent bytes·passes / (BW η_m fill), fill =
    min(1, groups·splits/SMs)^β, passes = 1 + ρ·(reads − 1); t_compute = FLOPs at the MMA's padded heads /
    (peak η_c); CTA setup = setup CTAs·seq setup (batch; the rule's groups); a split kernel adds its combine
    pass: reduction overhead + batch·heads·splits·(v_head_dim + 2)·4 bytes / (BW η_m).
    """
    rule, sms = p.get("trtllm_gen_mla", GENERIC), p["num_sms"]
    groups = s["batch"] * np.ceil(s["num_heads"] / head_tile(s, sms, rule))
    splits = np.clip(np.floor(sms / groups), 1.0, np.ceil(s["kv_len"] / kv_step(rule, p["kv_chunk"])))
    fill = fill_fraction(groups * splits, sms, p["fill_exponent"])
    stream = hw.bandwidth * p["memory_efficiency"]
    passes = 1.0 + p.get("latent_reread_share", 0.0) * (latent_reads(s, sms, rule) - 1.0)
    t_memory = decode_latent_bytes(s) * passes / (stream * fill) + decode_query_bytes(s) / stream
    t_compute = decode_flops({**s, "num_heads": mma_heads(s, sms, rule)}) / (hw.peak_flops * p["compute_efficiency"])
    partial = s["batch"] * s["num_heads"] * splits * (s["v_head_dim"] + 2.0) * 4.0
    t_split = np.where(splits > 1, p["reduction_overhead_s"] + partial / stream, 0.0)
    setup = setup_ctas(s, groups, rule) * p["seq_setup_s"] + s["batch"] * s["num_heads"] * p["head_setup_s"]
    return p["overhead_s"] + soft_max(t_memory, t_compute, exponent=p["overlap_exponent"]) + setup + t_split


def mla_decode_spec_time(s: Arrays, hw: Hw, achievable: Achievable) -> np.ndarray:
    """floor + max((latent + query bytes) / BW, FLOPs / peak) at the chip's achievable rates."""
    latent_and_query = decode_latent_bytes(s) + decode_query_bytes(s)
    return achievable.floor("attention") + roofline_time_s(
        decode_flops(s), latent_and_query, hw.peak_flops, hw.bandwidth
    )


def prefill_flops(s: Arrays) -> np.ndarray:
    """batch · heads · q_len · kv_len · (head_dim + v_head_dim), halved for a causal chunk (q_len > 1)."""
    causal = np.where(s["q_len"] > 1, 0.5, 1.0)
    return 2.0 * s["batch"] * s["num_heads"] * s["q_len"] * s["kv_len"] * (s["head_dim"] + s["v_head_dim"]) * causal


def prefill_bytes(s: Arrays) -> np.ndarray:
    """batch · heads · (q_len (head_dim + v) + kv_len (head_dim + v)) · bytes: Q, O, K, V once."""
    per_token = s["num_heads"] * (s["head_dim"] + s["v_head_dim"]) * s["width"]
    return s["batch"] * (s["q_len"] + s["kv_len"]) * per_token


def mla_prefill_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + soft_max(FLOPs/(peak η_c fill), bytes/(BW η_m), batch·heads·head setup + batch·q·token setup).

    fill = min(1, batch·heads·⌈q_len/128⌉ / SMs)^β.
    """
    blocks = s["batch"] * s["num_heads"] * np.ceil(s["q_len"] / 128.0)
    fill = fill_fraction(blocks, p["num_sms"], p["fill_exponent"])
    t_compute = prefill_flops(s) / (hw.peak_flops * p["compute_efficiency"] * fill)
    t_memory = prefill_bytes(s) / (hw.bandwidth * p["memory_efficiency"])
    setup = s["batch"] * (s["num_heads"] * p["head_setup_s"] + s["q_len"] * p["token_setup_s"])
    return p["overhead_s"] + soft_max(t_compute, t_memory, setup, exponent=p["overlap_exponent"])


def mla_prefill_spec_time(s: Arrays, hw: Hw, achievable: Achievable) -> np.ndarray:
    """floor + max(FLOPs / peak, bytes / BW) at the chip's achievable rates."""
    t = roofline_time_s(prefill_flops(s), prefill_bytes(s), hw.peak_flops, hw.bandwidth)
    return achievable.floor("attention") + t


def bmm_flops(s: Arrays) -> np.ndarray:
    """2 · batch · m · n · k."""
    return 2.0 * s["batch"] * s["m"] * s["n"] * s["k"]


def bmm_bytes(s: Arrays) -> np.ndarray:
    """batch · (k n w + m k 2 + m n 2): weights in their dtype, bf16 activations in and out."""
    return s["batch"] * (s["k"] * s["n"] * s["width"] + (s["m"] * s["k"] + s["m"] * s["n"]) * ACTIVATION_BYTES)


def bmm_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + soft_max(FLOPs/(peak η_c fill), bytes/(BW η_m)) + [narrow weights] quantize pass.

    fill = min(1, batch·⌈m/128⌉·⌈n/128⌉ / SMs)^β; a block-scaled (fp8) BMM quantizes its bf16 input
    first: quantize floor + batch·m·k·(2 + w) / quantize bandwidth.
    """
    tiles = s["batch"] * np.ceil(s["m"] / 128.0) * np.ceil(s["n"] / 128.0)
    fill = fill_fraction(tiles, p["num_sms"], p["fill_exponent"])
    t_compute = bmm_flops(s) / (hw.peak_flops * p["compute_efficiency"] * fill)
    t_memory = bmm_bytes(s) / (hw.bandwidth * p["memory_efficiency"])
    quantized = s["width"] < ACTIVATION_BYTES
    quantize = (
        p["quantize_floor_s"]
        + s["batch"] * s["m"] * s["k"] * (ACTIVATION_BYTES + s["width"]) / p["quantize_bandwidth_bytes_per_s"]
    )
    t = soft_max(t_compute, t_memory, exponent=p["overlap_exponent"]) + p["overhead_s"]
    return t + np.where(quantized, quantize, 0.0)


def bmm_spec_time(s: Arrays, hw: Hw, achievable: Achievable) -> np.ndarray:
    """floor + max(FLOPs / peak, bytes / BW) at the chip's achievable rates."""
    return achievable.floor("gemm") + roofline_time_s(bmm_flops(s), bmm_bytes(s), hw.peak_flops, hw.bandwidth)


COMMON = (
    Param("memory_efficiency", 0.9, 0.05, 1.5),
    Param("compute_efficiency", 0.6, 0.02, 1.5),
    Param("overhead_s", 1.2e-5, 1e-7, 2e-4),
    Param("overlap_exponent", 2.0, 1.0, 20.0),
    Param("fill_exponent", 0.3, 1e-3, 2.0),
)
SOURCE = "MLA attention (DeepSeek-V3 latent cache) per GPU: k24, issue 24"
DECODE = register(
    KernelFamily(
        name="mla_decode",
        time=mla_decode_time,
        params=COMMON
        + (
            Param("seq_setup_s", 2e-8, 1e-12, 1e-5),
            Param("head_setup_s", 5e-10, 1e-14, 1e-6),
            Param("kv_chunk", 1024.0, 16.0, 65536.0),
            Param("reduction_overhead_s", 3e-6, 1e-8, 5e-5),
        ),
        inputs=("batch", "kv_len", "num_heads", "head_dim", "v_head_dim"),
        spec_time=mla_decode_spec_time,
        work=lambda s: (decode_flops(s), decode_latent_bytes(s) + decode_query_bytes(s)),
        range_column="batch",
        range_max=64,
        holdout=("num_heads",),
        sweep=("num_heads", "batch"),
        sweep_axis="kv_len",
        entry_constants=lambda impl, dtype, hw: trtllm_gen_constants(impl, "fp4" in hw.flops_per_s),
        constant_params={"trtllm_gen_mla": REREAD},
        source=SOURCE,
    )
)
PREFILL = register(
    KernelFamily(
        name="mla_prefill",
        time=mla_prefill_time,
        params=COMMON + (Param("head_setup_s", 2e-8, 1e-13, 1e-5), Param("token_setup_s", 1e-9, 1e-14, 1e-6)),
        inputs=("batch", "q_len", "kv_len", "num_heads", "head_dim", "v_head_dim"),
        spec_time=mla_prefill_spec_time,
        work=lambda s: (prefill_flops(s), prefill_bytes(s)),
        range_column="q_len",
        range_max=1024,
        holdout=("num_heads",),
        sweep=("num_heads", "batch"),
        sweep_axis="q_len",
        source=SOURCE,
    )
)
BMM = register(
    KernelFamily(
        name="bmm",
        time=bmm_time,
        params=COMMON
        + (Param("quantize_floor_s", 4e-6, 1e-8, 1e-4), Param("quantize_bandwidth_bytes_per_s", 1e12, 1e9, 1e14)),
        inputs=("batch", "m", "n", "k"),
        spec_time=bmm_spec_time,
        work=lambda s: (bmm_flops(s), bmm_bytes(s)),
        range_column="m",
        range_max=1024,
        holdout=("batch",),
        source="MLA absorb batched GEMMs (pre: q_nope -> latent; post: latent -> v) per GPU: k24, issue 24",
    )
)
