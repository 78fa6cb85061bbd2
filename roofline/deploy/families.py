"""Kernel families seen from a deployment: the calibrated entry, else the nearest fitted format, else the
spec sheet at the chip's achievable speed, each time with the source that supplied it.

A family entry (``moe/fp8_block``, ``mla_decode/bf16``, ...) the profile lacks is priced with the first
fitted entry of the same family in :data:`FALLBACKS` (its fitted efficiencies at this dtype's own bytes
and rate) and the source names it; with none, the family's spec-sheet form runs at the chip's
``achievable`` defaults (hardware YAML), or at its ideal peaks where the chip has none, and says which.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.kernels.achievable import IDEAL, Achievable
from roofline.specs import HardwareSpec

#: Formats whose fitted entry prices a missing one (in order), at the missing format's bytes and rate.
FALLBACKS: dict[str, tuple[str, ...]] = {
    "bf16": ("fp16",),
    "fp16": ("bf16",),
    "fp8": ("fp8_block",),
    "fp8_block": ("fp8",),
    "nvfp4": ("mxfp4", "fp8_block", "fp8"),
    "mxfp4": ("nvfp4", "bf16"),
    "int4": ("mxfp4", "bf16"),
}


def achievable(hw: HardwareSpec) -> Achievable:
    """The chip's achievable fractions and floors (its YAML ``achievable:`` block), or the ideal peaks."""
    a = hw.achievable
    if a is None:
        return IDEAL
    return Achievable(a.hbm_fraction, dict(a.flops_fraction), dict(a.floor_s), a.source or f"{hw.name} YAML")


def spec_label(hw: HardwareSpec, op: str, dtype: str, why: str = "") -> str:
    """'spec sheet at <chip>'s achievable defaults (HBM 0.80, fp8_block 0.55 of peak, moe floor 25 µs)'."""
    a = achievable(hw)
    reason = f"; {why}" if why else ""
    if a is IDEAL:
        return f"spec sheet (ideal peaks: {hw.name} has no achievable defaults{reason})"
    from roofline.kernels.predict import model_for

    family = model_for(f"{op}/{dtype}")
    rate = family.peak_dtype(dtype) if family is not None else dtype
    floor = a.floor(op if op in a.floor_s else {"mla_decode": "attention", "mla_prefill": "attention"}.get(op, op))
    return (
        f"spec sheet at {hw.name}'s achievable defaults (HBM {a.hbm_fraction:.2f}, {rate} {a.flops(rate):.2f} of "
        f"peak, {op} floor {floor * 1e6:.3g} µs; {a.source}{reason})"
    )


def stale(key: str, params: dict[str, float]) -> str:
    """'; fitted before the form had k_half, ...: its constant-efficiency roofline' where an entry lacks some of
    its family's parameters (the prediction then falls back to the entry's efficiencies), else ''."""
    from roofline.kernels.predict import model_for

    family = model_for(key)
    missing = [p.name for p in family.params if p.name not in params] if family is not None else []
    if not missing:
        return ""
    return f"; fitted before the form had {', '.join(missing)}: its constant-efficiency roofline (refit it)"


def family_time_s(
    hw: HardwareSpec, op: str, dtype: str, impl: str = "", calibrated: bool = True, **shape: object
) -> tuple[np.ndarray, str]:
    """(seconds broadcast over ``shape``, source) of kernel family ``op`` in ``dtype`` (see the module doc)."""
    from roofline.kernels.shapes import shape_arrays

    return family_time_arrays(hw, op, dtype, shape_arrays(op, dtype, shape), impl, calibrated)


def family_time_arrays(
    hw: HardwareSpec, op: str, dtype: str, s: dict[str, np.ndarray], impl: str = "", calibrated: bool = True
) -> tuple[np.ndarray, str]:
    """:func:`family_time_s` for shape arrays already built (``shape_arrays``: features computed once)."""
    from roofline.deploy.kernels import entry
    from roofline.kernels.keys import op_key
    from roofline.kernels.predict import family_times

    key = op_key(op, impl)
    if calibrated and hw.calibration is not None:
        for fitted in (dtype, *FALLBACKS.get(dtype, ())):
            found = entry(hw, key, fitted)
            if found is None:
                continue
            t = family_times(hw, f"{key}/{dtype}", s, dict(found.params))
            rows = f", {found.rows:,} rows" if found.rows else ""
            note = "" if fitted == dtype else f" at {dtype} bytes and rate: no {key}/{dtype} entry"
            return np.asarray(
                t, dtype=float
            ), f"calibrated profile ({key}/{fitted}{rows}{note}{stale(key, found.params)})"
        why = f"profile has no {key}/{dtype} entry"
    else:
        why = ""
    t = family_times(hw, f"{key}/{dtype}", s, None, achievable(hw))
    return np.asarray(t, dtype=float), spec_label(hw, op, dtype, why)


def positive(x: ArrayLike) -> np.ndarray:
    """max(x, 1): a kernel shape that is never 0 (the term is 0 where the work is)."""
    return np.maximum(np.asarray(x, dtype=float), 1.0)
