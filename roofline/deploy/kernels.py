"""Fitted kernel times from a calibrated profile: the bridge from the step model to calibration.

The step model asks for GEMMs, attention and collectives by shape; this module finds the
profile entry fitted on that op and dtype, evaluates the same per-op model the fit used
(:mod:`roofline.calibration.models`), and names its source.  A shape the profile does not
cover is reported by :func:`coverage`, so the caller falls back to the spec sheet openly.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..specs import HardwareSpec, OpCalibration

#: Step terms -> the measured op (and kernel families) that calibrate them.
TERM_OPS = {
    "gemm": ("gemm",),
    "attention_decode": ("attention_decode",),
    "attention_prefill": ("attention_prefill",),
    "collective": ("allreduce", "allreduce_custom", "alltoall", "allgather"),
}


def entry(hw: HardwareSpec, key: str, dtype: str) -> OpCalibration | None:
    """The profile entry for ``key`` fitted on ``dtype`` ('gemm/fp8'); a legacy key is bf16."""
    cal = hw.calibration
    if cal is None:
        return None
    found = cal.ops.get(f"{key}/{dtype}")
    if found is None and dtype == "bf16":
        found = cal.ops.get(key)
    return found


def coverage(hw: HardwareSpec, term: str, dtype: str) -> str:
    """'calibrated profile (gemm/bf16)' or 'spec sheet (profile has no gemm/fp8 entry)'."""
    keys = [k for k in TERM_OPS[term] if entry(hw, k, dtype if term != "collective" else "bf16") is not None]
    if keys:
        rows = [int(getattr(entry(hw, k, "bf16" if term == "collective" else dtype), "rows", 0) or 0)
                for k in keys]
        count = f", {sum(rows):,} rows" if sum(rows) else ""
        shown = ", ".join(f"{k}/{dtype if term != 'collective' else 'bf16'}" for k in keys)
        return f"calibrated profile ({shown}{count})"
    return f"spec sheet (profile has no {TERM_OPS[term][0]}/{dtype} entry)"


def _time(hw: HardwareSpec, op: str, dtype: str, impl: str, **shape: ArrayLike) -> np.ndarray:
    from ..calibration.fit import op_time  # the fit's own models: one formula for fit and prediction

    return np.asarray(op_time(hw, op, dtype, impl, **shape), dtype=float)


def gemm_time_s(hw: HardwareSpec, dtype: str, m: ArrayLike, n: ArrayLike, k: ArrayLike) -> np.ndarray:
    """Fitted time of C[m, n] = A[m, k]·W[k, n] in ``dtype`` (0 where m is 0)."""
    m_arr = np.asarray(m, dtype=float)
    safe = np.maximum(m_arr, 1.0)
    return np.where(m_arr > 0, _time(hw, "gemm", dtype, "", m=safe, n=n, k=k), 0.0)


def attention_decode_time_s(hw: HardwareSpec, dtype: str, batch: ArrayLike, kv_len: ArrayLike,
                            num_heads: float, num_kv_heads: float, head_dim: float) -> np.ndarray:
    """Fitted decode attention: ``batch`` one-token queries over ``kv_len`` cached tokens (0 if no batch)."""
    b = np.asarray(batch, dtype=float)
    t = _time(hw, "attention_decode", dtype, "", batch=np.maximum(b, 1.0), kv_len=np.maximum(kv_len, 1.0),
              num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim)
    return np.where(b > 0, t, 0.0)


def attention_prefill_time_s(hw: HardwareSpec, dtype: str, batch: ArrayLike, q_len: ArrayLike,
                             kv_len: ArrayLike, num_heads: float, num_kv_heads: float,
                             head_dim: float) -> np.ndarray:
    """Fitted causal prefill attention of ``q_len`` new tokens over ``kv_len`` (0 if no tokens)."""
    q = np.asarray(q_len, dtype=float)
    t = _time(hw, "attention_prefill", dtype, "", batch=np.maximum(batch, 1.0), q_len=np.maximum(q, 1.0),
              kv_len=np.maximum(kv_len, 1.0), num_heads=num_heads, num_kv_heads=num_kv_heads,
              head_dim=head_dim)
    return np.where(q > 0, t, 0.0)


def collective_devices(hw: HardwareSpec, op: str, impl: str = "") -> set[int]:
    """Device counts a collective entry was fitted at (``latency_s@8`` -> 8)."""
    key = f"{op}_{impl}" if impl else op
    found = entry(hw, key, "bf16")
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
