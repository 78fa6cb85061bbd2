"""Shape arrays and hardware numbers of kernel models: measured rows or shape keywords -> numpy arrays.

Every model reads a dict of broadcast arrays: the schema's shape columns, ``width`` and ``out_width``
(bytes per element in and out), the routing code and alpha of fused-MoE rows, and whatever a kernel
family's ``features`` derive once (the busiest GPU's slots and active experts).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from roofline.core.units import DTYPE_BYTES
from roofline.kernels import forms as models
from roofline.kernels.keys import base_op
from roofline.kernels.registry import FAMILIES
from roofline.kernels.schema import NUMBER_COLUMNS, OP_SHAPE, CalibrationError, Measurements
from roofline.specs import HardwareSpec, SpecError

#: Shape columns: every number column of the schema but the time.
SHAPE_COLUMNS = tuple(c for c in NUMBER_COLUMNS if c != "time_s")
#: Shape columns an op may omit, and the value it then takes.
DEFAULTS = {"gated": 1.0, "tp": 1.0, "ep": 1.0}
#: dtypes whose GEMMs quantize their bf16 activations first (a kernel of its own).
QUANTIZED_DTYPES = ("fp8", "int8", "fp4", "int4", "nvfp4", "mxfp4", "fp8_block")
#: Of those, the block-scaled formats: their quantize pass is one fused kernel (a few µs floor).
BLOCK_SCALED_DTYPES = ("nvfp4", "mxfp4", "fp8_block")


def num_sms(hw: HardwareSpec) -> float:
    """Streaming multiprocessors (or cores) used by the fill effects."""
    known = {"h100": 132.0, "h200": 132.0, "a100": 108.0, "b200": 148.0, "gb200": 148.0}
    for key, cal in hw.calibration.ops.items() if hw.calibration else ():
        if base_op(key) == "gemm" and cal.params.get("num_sms"):
            return float(cal.params["num_sms"])
    for prefix, sms in known.items():
        if hw.name.lower().startswith(prefix):
            return sms
    return 132.0 if hw.kind != "cpu" else float(os.cpu_count() or 1)


def peak_flops(hw: HardwareSpec, op: str, dtype: str) -> float:
    """Peak FLOP/s rows of ``op`` in ``dtype`` run at (a family's rate dtype; the fastest listed if none)."""
    family = FAMILIES.get(op)
    rate = family.peak_dtype(dtype) if family else dtype
    try:
        return hw.flops_for(rate)
    except SpecError:
        return max(hw.flops_per_s.values())


def hw_numbers(hw: HardwareSpec, table: Measurements) -> models.Hw:
    """Per-row peak FLOP/s for each row's op and dtype plus the chip's bandwidths."""
    peak = np.empty(len(table))
    for op in table.unique("op"):
        for dtype in table.unique("dtype"):
            rows = (table["op"] == op) & (table["dtype"] == dtype)
            if rows.any():
                peak[rows] = peak_flops(hw, op, dtype)
    return chip_numbers(hw, peak)


def chip_numbers(hw: HardwareSpec, peak: np.ndarray | float) -> models.Hw:
    """The chip's bandwidths, SM count and ``peak`` FLOP/s as model numbers."""
    return models.Hw(
        peak_flops=peak,
        bandwidth=hw.hbm_bandwidth_bytes_per_s,
        num_sms=num_sms(hw),
        link_bandwidth=hw.ici_bandwidth_bytes_per_s,
        hop_latency=hw.ici_hop_latency_s,
    )


def widths(op: str, dtype: str) -> tuple[float, float]:
    """(bytes per input element, bytes per output element): quantized GEMMs write bf16."""
    width = DTYPE_BYTES[dtype]
    quantized = op == "gemm" and dtype in QUANTIZED_DTYPES
    return width, models.ACTIVATION_BYTES if quantized else width


def routing_arrays(texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code, alpha) per row of ``routing`` texts ('' reads as balanced)."""
    from roofline.kernels.moe import parse_routing

    parsed = {t: parse_routing(t or "balanced") for t in set(texts.tolist())}
    code = np.array([parsed[t][0] for t in texts.tolist()], float)
    alpha = np.array([parsed[t][1] for t in texts.tolist()], float)
    return code, alpha


def with_features(op: str, s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``s`` plus the derived arrays of ``op``'s kernel family (unchanged for an op without any)."""
    family = FAMILIES.get(op)
    return dict(family.features(s)) if family and family.features else s


def shapes(table: Measurements) -> dict[str, np.ndarray]:
    """Shape columns, ``width``/``out_width``, routing codes and family features of a table's rows."""
    out = {c: np.asarray(table[c], float) for c in SHAPE_COLUMNS}
    for name, value in DEFAULTS.items():
        out[name] = np.where(np.isnan(out[name]), value, out[name])
    pairs = [widths(o, d) for o, d in zip(table["op"], table["dtype"], strict=True)]
    out["width"] = np.array([p[0] for p in pairs], float)
    out["out_width"] = np.array([p[1] for p in pairs], float)
    out["routing"], out["routing_alpha"] = routing_arrays(np.asarray(table["routing"]))
    for op in table.unique("op"):
        family = FAMILIES.get(op)
        if family is None or family.features is None:
            continue
        rows = table["op"] == op
        derived = family.features({c: v[rows] for c, v in out.items()})
        for name, value in derived.items():
            if name not in out:
                out[name] = np.full(len(table), np.nan)
            out[name][rows] = value
    return out


@functools.lru_cache(maxsize=512)
def _default_columns(size: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Every shape column at its default (NaN where none) as read-only views of ``size`` (shared: never written)."""
    return {name: np.broadcast_to(np.float64(DEFAULTS.get(name, np.nan)), size) for name in SHAPE_COLUMNS}


@functools.lru_cache(maxsize=1024)
def _constant(value: float, size: tuple[int, ...]) -> np.ndarray:
    """``value`` over ``size`` as a read-only view (no array of the grid's size per column; shared, never written)."""
    return np.broadcast_to(np.float64(value), size)


def shape_arrays(op: str, dtype: str, shape: dict[str, object]) -> dict[str, np.ndarray]:
    """Broadcast shape keywords of one op into model arrays (one-line errors for bad input).

    ``routing`` (fused MoE) is text: 'balanced', 'uniform' or 'power_law_<alpha>'.
    """
    shape = dict(shape)
    routing = str(shape.pop("routing", "balanced"))
    unknown = sorted(set(shape) - set(SHAPE_COLUMNS) - ({"weight_width"} if op == "gemm" else set()))
    if unknown:
        raise CalibrationError(f"unknown shape {unknown[0]!r}; allowed: {', '.join(SHAPE_COLUMNS)}")
    if dtype not in DTYPE_BYTES:
        raise CalibrationError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    if op == "attention_decode":
        shape.setdefault("q_len", 1.0)
    if op in ("attention_prefill", "mla_prefill") and "q_len" in shape:
        shape.setdefault("kv_len", shape["q_len"])
    missing = [c for c in OP_SHAPE[op] if c not in shape]
    if missing:
        raise CalibrationError(f"{op} needs shape {missing[0]!r} (needs: {', '.join(OP_SHAPE[op])})")
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in shape.values()))
    size = arrays[0].shape

    s = dict(_default_columns(size))
    s.update(zip(shape, arrays, strict=True))
    width, out_width = widths(op, dtype)
    s["width"], s["out_width"] = _constant(width, size), _constant(out_width, size)
    from roofline.kernels.moe import parse_routing

    code, alpha = parse_routing(routing)
    s["routing"], s["routing_alpha"] = _constant(code, size), _constant(alpha, size)
    return with_features(op, s)
