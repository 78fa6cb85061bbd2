"""What a calibrated profile covers, and kernel times with the source that supplied them.

The step model asks here for each term: ``op_time(hw, "gemm", "fp8", m=..., n=..., k=...)``
gives broadcast seconds and a label, ``"calibrated profile (gemm/fp8, 35,700 rows)"``, or
``"spec sheet (profile has no gemm/fp4 entry)"`` when it falls back, or ``"spec sheet"`` for a
chip without calibration.  An uncovered op/dtype never borrows another dtype's parameters:
it raises :class:`CalibrationError` or, with ``fallback=True``, says it used the spec sheet.
"""

from __future__ import annotations

import numpy as np

from roofline.kernels.keys import base_op, entry_key, op_key, resolve, split_key
from roofline.kernels.predict import model_for, op_time_with
from roofline.kernels.schema import OP_SHAPE, CalibrationError
from roofline.specs import HardwareSpec, OpCalibration


def _op_class(op: str, impl: str) -> str:
    """``op`` (a schema op or an op class such as gemm_fp8_block) with ``impl`` applied."""
    op_class = op_key(op, impl) if impl else op
    if base_op(op_class) not in OP_SHAPE or "/" in op_class:
        raise CalibrationError(
            f"unknown op {op!r}; allowed: {', '.join(OP_SHAPE)} "
            "(or an op class such as gemm_fp8_block, allreduce_custom)"
        )
    return op_class


def covered(hw: HardwareSpec) -> dict[str, list[str]]:
    """``{op class: [dtypes]}`` the profile has entries for ({} without calibration).

    Example: ``{"gemm": ["bf16", "fp8"], "gemm_fp8_block": ["fp8"], "allreduce": ["fp16", "int8"]}``.
    """
    out: dict[str, list[str]] = {}
    for key in hw.calibration.ops if hw.calibration else {}:
        op_class, dtype = split_key(key)
        out.setdefault(op_class, []).append(dtype)
    return {k: sorted(v) for k, v in sorted(out.items())}


def entry_key_for(hw: HardwareSpec, op: str, dtype: str, impl: str = "") -> str | None:
    """The profile key covering ``op``/``dtype`` (see :func:`.keys.resolve`), or None."""
    if hw.calibration is None:
        return None
    return resolve(hw.calibration.ops, _op_class(op, impl), dtype)


def entry_for(hw: HardwareSpec, op: str, dtype: str, impl: str = "", fallback: bool = False) -> OpCalibration | None:
    """The calibrated entry for ``op`` in ``dtype``; None when ``hw`` has no calibration.

    A profile that lacks the op/dtype raises :class:`CalibrationError` naming it and what the
    profile covers, unless ``fallback`` (then None: the caller uses the spec sheet and says so).
    """
    if hw.calibration is None:
        return None
    key = entry_key_for(hw, op, dtype, impl)
    if key is not None:
        return hw.calibration.ops[key]
    if fallback:
        return None
    have = ", ".join(sorted(hw.calibration.ops)) or "nothing"
    raise CalibrationError(
        f"{hw.name}: calibrated profile has no {entry_key(_op_class(op, impl), dtype)} entry "
        f"(it covers {have}); fit {dtype} rows with `roofline calibrate fit` or fall back to "
        "the spec sheet explicitly"
    )


def source_label(hw: HardwareSpec, op: str, dtype: str, impl: str = "") -> str:
    """Where ``op``/``dtype`` times come from, as :func:`op_time` labels them."""
    if hw.calibration is None:
        return "spec sheet"
    key = entry_key_for(hw, op, dtype, impl)
    if key is None:
        return f"spec sheet (profile has no {entry_key(_op_class(op, impl), dtype)} entry)"
    entry = hw.calibration.ops[key]
    if "/" not in key:
        parts = [key, "a key without dtype, read as bf16"]
    else:
        parts = [key if split_key(key)[1] == dtype else f"{key} for {dtype}"]
    if entry.rows:
        parts.append(f"{entry.rows:,} rows")
    model = model_for(key)
    if model is not None and not {p.name for p in model.params} <= set(entry.params):
        parts.append("constant efficiencies + overhead")
    return f"calibrated profile ({', '.join(parts)})"


def op_time(
    hw: HardwareSpec, op: str, dtype: str = "bf16", impl: str = "", fallback: bool = True, **shape: float | np.ndarray
) -> tuple[np.ndarray, str]:
    """(predicted seconds broadcast over ``shape``, source label) of one kernel on ``hw``.

    The covering entry's fitted model, else (``fallback``) the spec-sheet roofline, labelled.
    Example: ``op_time(profile, "gemm", "fp8", m=[1, 4096], n=8192, k=8192)``;
    ``op_time(profile, "attention_decode", batch=64, kv_len=4096, num_heads=32,
    num_kv_heads=8, head_dim=128)``; ``op_time(profile, "allreduce", impl="custom",
    message_bytes=2**26, num_devices=8)``.
    """
    entry = entry_for(hw, op, dtype, impl, fallback=fallback)
    key = entry_key_for(hw, op, dtype, impl) or entry_key(_op_class(op, impl), dtype)
    params = dict(entry.params) if entry is not None else None
    return op_time_with(hw, key, params, shape), source_label(hw, op, dtype, impl)
