"""Fitted kernel times from a calibrated profile: the bridge from the step model to calibration.

The step model asks for GEMMs, attention and collectives by shape; this module finds the
profile entry fitted on that op and dtype, evaluates the same per-op model the fit used
(:mod:`roofline.kernels.forms`), and names its source.  A shape the profile does not
cover is reported by :func:`coverage`, so the caller falls back to the spec sheet openly.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike

from roofline.specs import HardwareSpec, OpCalibration

#: Step terms -> the measured op (and kernel families) that calibrate them.
TERM_OPS = {
    "gemm": ("gemm",),
    "attention_decode": ("attention_decode",),
    "attention_prefill": ("attention_prefill",),
    "collective": ("allreduce", "allreduce_custom", "alltoall", "allgather"),
}


def entry(hw: HardwareSpec, key: str, dtype: str) -> OpCalibration | None:
    """The profile entry for op class ``key`` fitted on ``dtype`` (``gemm``/``fp8``), else None."""
    from roofline.kernels.lookup import entry_for

    op, impl = split_family(key)
    return entry_for(hw, op, dtype, impl, fallback=True)


@functools.lru_cache(maxsize=256)
def split_family(key: str) -> tuple[str, str]:
    """('allreduce', 'custom') from 'allreduce_custom'; ('attention_decode', '') stays whole (memoised)."""
    from roofline.kernels.keys import SEPARATE_IMPLS

    for impl in SEPARATE_IMPLS:
        if key.endswith(f"_{impl}"):
            return key.removesuffix(f"_{impl}"), impl
    return key, ""


def gemm_family(dtype: str, block_scaled: bool = False) -> str:
    """The kernel family of a weight matmul: fp8 block-scaled GEMMs are fitted on their own."""
    return "fp8_block" if (block_scaled and dtype == "fp8") else ""


#: Dtypes of the same width and tensor-core rate: a fit on one prices the other (said in sources).
TWINS = {"fp16": "bf16", "bf16": "fp16"}
#: GEMM formats fitted under another key (block-scaled fp8: ``gemm_fp8_block/fp8``), then the entries that
#: price them when the profile lacks their own, at the format's bytes and rate (named in the source).
GEMM_FORMATS: dict[str, tuple[tuple[str, str], ...]] = {
    "fp8_block": (("gemm_fp8_block", "fp8"), ("gemm", "fp8")),
    "nvfp4": (("gemm", "nvfp4"), ("gemm", "mxfp4"), ("gemm_fp8_block", "fp8"), ("gemm", "fp8")),
    "mxfp4": (("gemm", "mxfp4"), ("gemm", "nvfp4"), ("gemm_fp8_block", "fp8"), ("gemm", "fp8")),
}


def gemm_entry(hw: HardwareSpec, dtype: str) -> tuple[str, str, str, str] | None:
    """(op class, entry dtype, dtype priced at, note) of the entry that prices a ``dtype`` GEMM, or None.

    A block-scaled or fp4 format takes its own entry (``gemm_fp8_block/fp8``, ``gemm/nvfp4``); without one,
    the next of :data:`GEMM_FORMATS` at the format's own bytes and rate, and the note says which.
    """
    for i, (op_class, fitted) in enumerate(GEMM_FORMATS.get(dtype, ())):
        if entry(hw, op_class, fitted) is None:
            continue
        if i == 0:
            return op_class, fitted, fitted, ""
        return op_class, fitted, dtype, f"{op_class}/{fitted} entry at {dtype} bytes and rate (no {dtype} GEMM entry)"
    return None


def resolve(hw: HardwareSpec, key: str, dtype: str) -> tuple[str, str, str] | None:
    """(entry dtype, dtype priced at, note) of the entry that prices ``key`` in ``dtype``, or None.

    The exact entry; else its fp16/bf16 twin (same width and rate); else, for attention, the bf16
    kernel model — decode attention at ``dtype``'s KV bytes, prefill attention as bf16 — an explicit
    fallback named in the note.  GEMM formats with entries of their own: :func:`gemm_entry`.
    """
    if key == "gemm" and dtype in GEMM_FORMATS:
        found = gemm_entry(hw, dtype)
        return None if found is None else found[1:]
    if entry(hw, key, dtype) is not None:
        return dtype, dtype, ""
    twin = TWINS.get(dtype)
    if twin and entry(hw, key, twin) is not None:
        return twin, twin, f"{twin} entry for {dtype}: same width and tensor-core rate"
    if key.startswith("attention") and dtype != "bf16" and entry(hw, key, "bf16") is not None:
        if key == "attention_decode":
            return "bf16", dtype, f"bf16 kernel model at {dtype} KV bytes (no {key}/{dtype} entry)"
        return "bf16", "bf16", f"bf16 kernel (no {key}/{dtype} entry)"
    return None


def coverage(hw: HardwareSpec, term: str, dtype: str) -> str:
    """'calibrated profile (gemm/bf16, ... rows)' or 'spec sheet (profile has no gemm/fp8 entry)'."""
    from roofline.kernels.lookup import source_label

    labels = []
    for key in TERM_OPS[term]:
        found = resolve(hw, key, "bf16" if term == "collective" else dtype)
        if found is None:
            continue
        if key == "gemm" and dtype in GEMM_FORMATS:
            key = (gemm_entry(hw, dtype) or (key,))[0]
        op, impl = split_family(key)
        label = source_label(hw, op, found[0], impl).removeprefix("calibrated profile (").removesuffix(")")
        labels.append(label + (f"; {found[2]}" if found[2] else ""))
    if not labels:
        return source_label(hw, TERM_OPS[term][0], dtype)
    return f"calibrated profile ({'; '.join(labels)})"


def _time(hw: HardwareSpec, op: str, dtype: str, impl: str, **shape: ArrayLike) -> np.ndarray:
    """The fitted model of the entry :func:`resolve` picks (the fit's own formula), else the spec roofline."""
    from roofline.kernels.keys import op_key
    from roofline.kernels.lookup import op_time
    from roofline.kernels.predict import op_time_with

    key = op_key(op, impl)
    found = resolve(hw, key, dtype)
    if found is None:
        return np.asarray(op_time(hw, op, dtype, impl, fallback=True, **shape)[0], dtype=float)
    if key == "gemm" and dtype in GEMM_FORMATS:
        key = (gemm_entry(hw, dtype) or (key,))[0]
    fitted = entry(hw, key, found[0])
    assert fitted is not None
    return np.asarray(op_time_with(hw, f"{key}/{found[1]}", dict(fitted.params), shape), dtype=float)


def gemm_time_s(
    hw: HardwareSpec, dtype: str, m: ArrayLike, n: ArrayLike, k: ArrayLike, weight_bytes: float | None = None
) -> np.ndarray:
    """Fitted time of C[m, n] = A[m, k]·W[k, n] in ``dtype`` (0 where m is 0), the weights read at
    ``weight_bytes`` each where given (weight-only quantization: the ``dtype`` kernel model)."""
    m_arr = np.asarray(m, dtype=float)
    safe = np.maximum(m_arr, 1.0)
    extra = {} if weight_bytes is None else {"weight_width": weight_bytes}
    return np.where(m_arr > 0, _time(hw, "gemm", dtype, "", m=safe, n=n, k=k, **extra), 0.0)


def attention_decode_time_s(
    hw: HardwareSpec,
    dtype: str,
    batch: ArrayLike,
    kv_len: ArrayLike,
    num_heads: float,
    num_kv_heads: float,
    head_dim: float,
) -> np.ndarray:
    """Fitted decode attention: ``batch`` one-token queries over ``kv_len`` cached tokens (0 if no batch)."""
    b = np.asarray(batch, dtype=float)
    t = _time(
        hw,
        "attention_decode",
        dtype,
        "",
        batch=np.maximum(b, 1.0),
        kv_len=np.maximum(kv_len, 1.0),
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
    )
    return np.where(b > 0, t, 0.0)


def attention_prefill_time_s(
    hw: HardwareSpec,
    dtype: str,
    batch: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    num_heads: float,
    num_kv_heads: float,
    head_dim: float,
) -> np.ndarray:
    """Fitted causal prefill attention of ``q_len`` new tokens over ``kv_len`` (0 if no tokens)."""
    q = np.asarray(q_len, dtype=float)
    t = _time(
        hw,
        "attention_prefill",
        dtype,
        "",
        batch=np.maximum(batch, 1.0),
        q_len=np.maximum(q, 1.0),
        kv_len=np.maximum(kv_len, 1.0),
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
    )
    return np.where(q > 0, t, 0.0)


def collective_devices(hw: HardwareSpec, op: str, impl: str = "") -> set[int]:
    """Device counts a collective entry was fitted at (``latency_s@8`` -> 8)."""
    found = entry(hw, f"{op}_{impl}" if impl else op, "bf16")
    if found is None:
        return set()
    return {int(name.split("@")[1]) for name in found.params if name.startswith("latency_s@")}


def collective_time_s(hw: HardwareSpec, op: str, message_bytes: ArrayLike, devices: int) -> tuple[np.ndarray, str]:
    """Fitted time of ``op`` on a per-device buffer; all-reduce takes the faster of NCCL and custom.

    Returns (seconds, which kernel family); raises KeyError when no entry covers ``devices``.
    """
    times: list[tuple[np.ndarray, str]] = []
    impls = ("", "custom") if op == "allreduce" else ("",)
    for impl in impls:
        if devices in collective_devices(hw, op, impl):
            t = _time(hw, op, "bf16", impl, message_bytes=np.maximum(message_bytes, 1.0), num_devices=devices)
            times.append((t, "custom all-reduce" if impl else "NCCL"))
    if not times:
        raise KeyError(op)
    if len(times) == 1:
        return times[0]
    (a, _), (b, _) = times
    faster = np.minimum(a, b)
    return faster, "faster of NCCL and custom all-reduce per message size"
