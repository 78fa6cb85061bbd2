"""MLA as its own attention: absorbed decode over the latent cache plus the absorb BMMs, decompressed prefill.

Per layer on one GPU, from the MLA kernel families (:mod:`roofline.kernels.mla`): a calibrated entry,
else the nearest fitted format, else the spec-sheet form at the chip's achievable speed
(:mod:`roofline.deploy.families`).

* Decode reads kv_lora_rank + rope values per cached token **once for all heads** and runs two absorb
  BMMs per token (q_nope into the latent: heads x [T,nope]x[nope,R]; the latent output back to v:
  heads x [T,R]x[R,v]).
* Prefill runs the decompressed heads (query-key nope + rope, value v_head_dim), causal.
* Under attention tensor parallelism each GPU holds every sequence's latent (it is not split over
  heads); only attention data parallelism divides the sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy.families import family_time_s, positive
from roofline.deploy.rates import Rates
from roofline.kernels.mla import decode_flops, decode_latent_bytes, prefill_flops
from roofline.kernels.shapes import shape_arrays


@dataclass(frozen=True)
class MlaShape:
    """MLA of one GPU: its query heads and the latent's dims and formats."""

    heads: float
    kv_lora_rank: int
    rope_dim: int
    nope_dim: int
    v_dim: int
    kv_dtype: str = "bf16"
    bmm_dtype: str = "bf16"
    compute_dtype: str = "bf16"


@dataclass(frozen=True)
class MlaTerm:
    """One MLA layer on one GPU: attention kernel + absorb BMMs (decode), their bytes, FLOPs and source."""

    time_s: np.ndarray
    attention_s: np.ndarray
    bmm_s: np.ndarray
    kv_bytes: np.ndarray
    flops: np.ndarray
    source: str


def mla_decode(rates: Rates, mla: MlaShape, seqs: ArrayLike, context: ArrayLike) -> MlaTerm:
    """``seqs`` sequences each decode one token over ``context`` cached tokens (0 where none)."""
    b = np.asarray(seqs, dtype=float)
    calibrated = bool(rates.calibrated)
    shape = {
        "batch": positive(b),
        "kv_len": positive(np.add(context, 1.0)),
        "num_heads": float(mla.heads),
        "head_dim": float(mla.kv_lora_rank + mla.rope_dim),
        "v_head_dim": float(mla.kv_lora_rank),
    }
    attn, source = family_time_s(rates.hw, "mla_decode", mla.kv_dtype, calibrated=calibrated, **shape)
    bmm_shape = {"batch": float(mla.heads), "m": positive(b)}
    pre, pre_source = family_time_s(
        rates.hw,
        "bmm",
        mla.bmm_dtype,
        calibrated=calibrated,
        **bmm_shape,
        k=float(mla.nope_dim),
        n=float(mla.kv_lora_rank),
    )
    post, _ = family_time_s(
        rates.hw,
        "bmm",
        mla.bmm_dtype,
        calibrated=calibrated,
        **bmm_shape,
        k=float(mla.kv_lora_rank),
        n=float(mla.v_dim),
    )
    s = shape_arrays("mla_decode", mla.kv_dtype, shape)
    busy = b > 0
    attn, bmm = np.where(busy, attn, 0.0), np.where(busy, pre + post, 0.0)
    return MlaTerm(
        time_s=attn + bmm,
        attention_s=attn,
        bmm_s=bmm,
        kv_bytes=np.where(busy, decode_latent_bytes(s), 0.0),
        flops=np.where(busy, decode_flops(s), 0.0),
        source=f"MLA decode: {source}; absorb BMMs: {pre_source}",
    )


def mla_prefill(rates: Rates, mla: MlaShape, seqs: ArrayLike, new: ArrayLike, cached: ArrayLike) -> MlaTerm:
    """``seqs`` sequences each prefill ``new`` tokens after ``cached`` ones, decompressed heads (0 where none).

    A chunk after ``cached`` tokens attends to new·(cached + new/2) pairs: the causal kernel of ``new``
    queries over kv_len = new + 2·cached prices exactly that.
    """
    q = np.asarray(new, dtype=float)
    kv = np.add(q, 2.0 * np.asarray(cached, dtype=float))
    shape = {
        "batch": positive(seqs),
        "q_len": positive(q),
        "kv_len": positive(kv),
        "num_heads": float(mla.heads),
        "head_dim": float(mla.nope_dim + mla.rope_dim),
        "v_head_dim": float(mla.v_dim),
    }
    t, source = family_time_s(rates.hw, "mla_prefill", mla.kv_dtype, calibrated=bool(rates.calibrated), **shape)
    s = shape_arrays("mla_prefill", mla.kv_dtype, shape)
    busy = (q > 0) & (np.asarray(seqs, dtype=float) > 0)
    latent = np.multiply(seqs, q) * (mla.kv_lora_rank + mla.rope_dim) * s["width"]
    zero = np.zeros_like(t)
    return MlaTerm(
        time_s=np.where(busy, t, 0.0),
        attention_s=np.where(busy, t, 0.0),
        bmm_s=zero,
        kv_bytes=np.where(busy, latent, 0.0),
        flops=np.where(busy, prefill_flops(s), 0.0),
        source=f"MLA prefill (decompressed heads): {source}",
    )
