"""Per-op models and their predictions: measured rows or broadcast shapes -> seconds, and errors.

Each profile key (``gemm/bf16``, ``gemm/fp8``, ``gemm_fp8_block/fp8``; see :mod:`.keys`)
selects one model; a row is predicted by the profile entry that covers its op class and
dtype, or by the spec-sheet roofline; evaluation scores covered rows only and counts the rest.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from roofline.core.units import DTYPE_BYTES
from roofline.kernels import forms as models
from roofline.kernels.keys import base_op, entry_key, op_key, resolve, split_key
from roofline.kernels.lsq import Param
from roofline.kernels.schema import COLLECTIVE_OPS, OP_SHAPE, CalibrationError, Measurements
from roofline.specs import HardwareSpec, SpecError

# --------------------------------------------------------------------------- op models


@dataclass(frozen=True)
class OpModel:
    """One op class: its time model, fitted parameters, fixed constants, range split."""

    op: str
    time: Callable[[models.Arrays, models.Hw, models.Params], np.ndarray]
    params: tuple[Param, ...]
    constants: dict[str, float] = field(default_factory=dict)
    range_column: str = ""
    range_max: float = 0.0


COMMON = (
    Param("compute_efficiency", 0.8, 0.01, 1.5),
    Param("memory_efficiency", 0.85, 0.05, 1.5),
    Param("overhead_s", 3e-6, 1e-8, 1e-3),
    Param("overlap_exponent", 3.0, 1.0, 12.0),
)
GEMM_PARAMS = COMMON + (
    Param("k_pipeline", 30.0, 1e-2, 1e4),
    Param("n_half", 100.0, 1e-2, 1e5),
    Param("l2_gain", 0.5, 1e-3, 20.0),
    Param("l2_bytes", 3e7, 1e4, 1e10),
    Param("k_step_s", 1.2e-9, 1e-13, 1e-7),
    Param("split_k", 2500.0, 16.0, 1e6),
    Param("fill_exponent", 0.3, 1e-3, 2.0),
)
GEMM_CONSTANTS = {"tile_m": 128.0, "tile_n": 128.0}


def quantize_params(floor_s: float) -> tuple[Param, ...]:
    """The activation-quantize kernel's floor (seconds) and streaming rate (bytes/s)."""
    return (Param("quantize_floor_s", floor_s, 1e-8, 1e-4), Param("quantize_bandwidth_bytes_per_s", 1e12, 1e9, 1e14))


#: dtypes whose GEMMs quantize their bf16 activations first (a kernel of its own).
QUANTIZED_DTYPES = ("fp8", "int8", "fp4", "int4")
MODELS: dict[str, OpModel] = {
    "gemm": OpModel("gemm", models.gemm_time, GEMM_PARAMS, GEMM_CONSTANTS, "m", 1024),
    # per-tensor dynamic quantization: an amax reduction, then the cast (~12 µs floor)
    "gemm_quantized": OpModel(
        "gemm", models.gemm_quantized_time, GEMM_PARAMS + quantize_params(12e-6), GEMM_CONSTANTS, "m", 1024
    ),
    # 1x128 block scales: one fused pass (~4 µs floor)
    "gemm_quantized_block": OpModel(
        "gemm", models.gemm_quantized_time, GEMM_PARAMS + quantize_params(4e-6), GEMM_CONSTANTS, "m", 1024
    ),
    "attention_decode": OpModel(
        "attention_decode",
        models.attention_decode_time,
        (
            Param("compute_efficiency", 0.15, 0.01, 1.5),
            Param("memory_efficiency", 0.85, 0.05, 1.5),
            Param("overhead_s", 9e-6, 1e-8, 1e-3),
            Param("overlap_exponent", 1.3, 1.0, 12.0),
            Param("fill_exponent", 0.3, 1e-3, 2.0),
            Param("block_setup_s", 1e-8, 1e-13, 1e-5),
            Param("group_block_setup_s", 3e-8, 1e-13, 1e-5),
            Param("fallback_head_setup_s", 9e-9, 1e-13, 1e-5),
            Param("fallback_compute_efficiency", 0.007, 1e-4, 1.5),
            Param("multi_block_overhead_s", 3e-6, 1e-9, 1e-4),
            Param("setup_dim_exponent", 0.5, 1e-3, 3.0),
        ),
        {"kv_chunk": 4096.0, "max_group": 32.0, "multi_block_kv_bytes": 262144.0, "group_tile": 16.0},
        range_column="batch",
        range_max=32,
    ),
    "attention_prefill": OpModel(
        "attention_prefill",
        models.attention_prefill_time,
        COMMON
        + (
            Param("fill_exponent", 0.3, 1e-3, 2.0),
            Param("head_setup_s", 1e-8, 1e-13, 1e-5),
        ),
        {"q_tile": 128.0},
        range_column="q_len",
        range_max=1024,
    ),
}
COMPUTE_OPS = ("gemm", "attention_decode", "attention_prefill")
COLLECTIVE_PARAMS = (
    Param("latency_s", 1e-5, 1e-7, 1e-2),
    Param("bandwidth_bytes_per_s", 1e11, 1e6, 1e13),
    Param("small_message_bytes", 1e5, 1.0, 1e9),
)
#: Shape-range split of collectives: fit on messages up to this many bytes.
COLLECTIVE_RANGE_MAX = 16 * 2**20
CONSTANT_PARAMS = COMMON[:3]


def model_for(key: str) -> OpModel | None:
    """The model of a profile key (None for collectives): quantized GEMMs add their quantize kernel."""
    op_class, dtype = split_key(key)
    op = base_op(op_class)
    if op in COLLECTIVE_OPS:
        return None
    if op == "gemm" and dtype in QUANTIZED_DTYPES:
        return MODELS["gemm_quantized_block" if op_class == "gemm_fp8_block" else "gemm_quantized"]
    return MODELS[op]


def row_keys(table: Measurements) -> np.ndarray:
    """The op class of every row (``gemm``, ``gemm_fp8_block``, ``allreduce_custom``, ...)."""
    return np.array([op_key(o, i) for o, i in zip(table["op"], table["impl"], strict=True)], dtype=object)


def row_entry_keys(table: Measurements) -> np.ndarray:
    """The profile key every row would be fitted into: ``<op class>/<dtype>``."""
    return np.array([entry_key(k, d) for k, d in zip(row_keys(table), table["dtype"], strict=True)], dtype=object)


def covering_keys(hw: HardwareSpec, table: Measurements) -> np.ndarray:
    """Per row: the key of ``hw``'s profile entry that covers it, or '' (none / no profile)."""
    ops = hw.calibration.ops if hw.calibration else {}
    out = np.full(len(table), "", dtype=object)
    for key in set(row_entry_keys(table)):
        mask = row_entry_keys(table) == key
        out[mask] = resolve(ops, *split_key(key)) or ""
    return out


# --------------------------------------------------------------------------- hardware


def num_sms(hw: HardwareSpec) -> float:
    """Streaming multiprocessors (or cores) used by the fill effects."""
    known = {"h100": 132.0, "h200": 132.0, "a100": 108.0, "b200": 148.0}
    for key, cal in hw.calibration.ops.items() if hw.calibration else ():
        if base_op(key) == "gemm" and cal.params.get("num_sms"):
            return float(cal.params["num_sms"])
    for prefix, sms in known.items():
        if hw.name.lower().startswith(prefix):
            return sms
    return 132.0 if hw.kind != "cpu" else float(os.cpu_count() or 1)


def _peak(hw: HardwareSpec, dtype: str) -> float:
    try:
        return hw.flops_for(dtype)
    except SpecError:
        return max(hw.flops_per_s.values())


def hw_numbers(hw: HardwareSpec, table: Measurements) -> models.Hw:
    """Per-row peak FLOP/s for each row's dtype plus the chip's bandwidths."""
    peak = np.empty(len(table))
    for dtype in table.unique("dtype"):
        peak[table["dtype"] == dtype] = _peak(hw, dtype)
    return _hw(hw, peak)


def _hw(hw: HardwareSpec, peak: np.ndarray | float) -> models.Hw:
    return models.Hw(
        peak_flops=peak,
        bandwidth=hw.hbm_bandwidth_bytes_per_s,
        num_sms=num_sms(hw),
        link_bandwidth=hw.ici_bandwidth_bytes_per_s,
        hop_latency=hw.ici_hop_latency_s,
    )


SHAPE_COLUMNS = (
    "m",
    "n",
    "k",
    "batch",
    "q_len",
    "kv_len",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "message_bytes",
    "num_devices",
)


def _widths(op: str, dtype: str) -> tuple[float, float]:
    """(bytes per input element, bytes per output element): quantized GEMMs write bf16."""
    width = DTYPE_BYTES[dtype]
    quantized = op == "gemm" and dtype in QUANTIZED_DTYPES
    return width, models.ACTIVATION_BYTES if quantized else width


def shapes(table: Measurements) -> dict[str, np.ndarray]:
    """Shape columns plus ``width`` and ``out_width`` (bytes per element in and out)."""
    out = {c: np.asarray(table[c], float) for c in SHAPE_COLUMNS}
    pairs = [_widths(o, d) for o, d in zip(table["op"], table["dtype"], strict=True)]
    out["width"] = np.array([p[0] for p in pairs], float)
    out["out_width"] = np.array([p[1] for p in pairs], float)
    return out


def shape_arrays(op: str, dtype: str, shape: dict[str, float | np.ndarray]) -> dict[str, np.ndarray]:
    """Broadcast shape keywords of one op into model arrays (one-line errors for bad input)."""
    unknown = sorted(set(shape) - set(SHAPE_COLUMNS) - ({"weight_width"} if op == "gemm" else set()))
    if unknown:
        raise CalibrationError(f"unknown shape {unknown[0]!r}; allowed: {', '.join(SHAPE_COLUMNS)}")
    if dtype not in DTYPE_BYTES:
        raise CalibrationError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    shape = dict(shape)
    if op == "attention_decode":
        shape.setdefault("q_len", 1.0)
    if op == "attention_prefill" and "q_len" in shape:
        shape.setdefault("kv_len", shape["q_len"])
    missing = [c for c in OP_SHAPE[op] if c not in shape]
    if missing:
        raise CalibrationError(f"{op} needs shape {missing[0]!r} (needs: {', '.join(OP_SHAPE[op])})")
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in shape.values()))
    s = {name: np.full(arrays[0].shape, np.nan) for name in SHAPE_COLUMNS}
    s.update(zip(shape, arrays, strict=True))
    width, out_width = _widths(op, dtype)
    s["width"] = np.full(arrays[0].shape, width)
    s["out_width"] = np.full(arrays[0].shape, out_width)
    return s


# --------------------------------------------------------------------------- prediction


def spec_predict(hw: HardwareSpec, table: Measurements) -> np.ndarray:
    """The uncalibrated spec-sheet roofline for every row."""
    return _predict(hw, table, calibrated=False)


def predict(hw: HardwareSpec, table: Measurements) -> np.ndarray:
    """Calibrated times where the profile has an entry for the row's op and dtype, else the spec."""
    return _predict(hw, table, calibrated=True)


def _predict(hw: HardwareSpec, table: Measurements, calibrated: bool) -> np.ndarray:
    out = np.empty(len(table))
    rows = row_entry_keys(table)
    cover = covering_keys(hw, table) if calibrated else np.full(len(table), "", dtype=object)
    for key, found in sorted(set(zip(rows, cover, strict=True))):
        mask = (rows == key) & (cover == found)
        params = dict(hw.calibration.ops[found].params) if found else None
        out[mask] = predict_op(key, table.take(mask), hw, params)
    return out


def predict_op(key: str, table: Measurements, hw: HardwareSpec, params: dict[str, float] | None) -> np.ndarray:
    """Times of the rows of one profile key: the fitted model with ``params``, or the spec."""
    return op_times(key, shapes(table), hw_numbers(hw, table), params)


def op_time_with(
    hw: HardwareSpec, key: str, params: dict[str, float] | None, shape: dict[str, float | np.ndarray]
) -> np.ndarray:
    """Seconds of profile key ``key`` for broadcast shape keywords, with ``params`` (None: spec)."""
    op_class, dtype = split_key(key)
    op = base_op(op_class)
    s = shape_arrays(op, dtype, shape)
    peak = 1.0 if op in COLLECTIVE_OPS else hw.flops_for(dtype)
    return op_times(key, s, _hw(hw, peak), params)


def op_time(hw: HardwareSpec, op: str, dtype: str = "bf16", impl: str = "", **shape: float | np.ndarray) -> np.ndarray:
    """Predicted seconds of ``op`` on ``hw`` (calibrated if it can): :func:`.lookup.op_time` without its label.

    Example: ``op_time(profile, "gemm", m=[1, 4096], n=8192, k=8192)``.
    """
    from roofline.kernels.lookup import op_time as labelled

    return labelled(hw, op, dtype, impl, fallback=True, **shape)[0]


def op_times(key: str, s: dict[str, np.ndarray], nums: models.Hw, params: dict[str, float] | None) -> np.ndarray:
    """Times from shape arrays: the fitted model with ``params``, or the spec roofline."""
    op = base_op(key)
    if op in COLLECTIVE_OPS:
        if params is None:
            return models.collective_spec_time(op, s, nums)
        lat, bw, small = _collective_arrays(params, s["num_devices"])
        return models.collective_time(op, s, lat, bw, small)
    if params is None:
        return models.roofline_time(*flops_bytes(op, s), nums)
    model = model_for(key)
    if model is None or not {p.name for p in model.params} <= set(params):
        return models.roofline_time(
            *flops_bytes(op, s),
            nums,
            params.get("compute_efficiency", 1.0),
            params.get("memory_efficiency", 1.0),
            params.get("overhead_s", 0.0),
        )
    return model.time(s, nums, params)


def flops_bytes(op: str, s: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if op == "gemm":
        return models.gemm_flops(s["m"], s["n"], s["k"]), models.gemm_bytes(
            s["m"], s["n"], s["k"], s["width"], s.get("out_width")
        )
    return models.attention_flops(s), models.attention_bytes(s)


def _collective_arrays(params: dict[str, float], devices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row (latency, bandwidth, small-message bytes): per device count, else the summary."""
    lat = np.full(devices.shape, params.get("latency_s", 0.0))
    bw = np.full(devices.shape, params.get("bandwidth_bytes_per_s", 1.0))
    small = np.full(devices.shape, params.get("small_message_bytes", 0.0))
    for n in np.unique(devices):
        tag = f"@{int(n)}"
        if f"latency_s{tag}" in params:
            mask = devices == n
            lat[mask] = params[f"latency_s{tag}"]
            bw[mask] = params[f"bandwidth_bytes_per_s{tag}"]
            small[mask] = params.get(f"small_message_bytes{tag}", 0.0)
    return lat, bw, small


# --------------------------------------------------------------------------- statistics


def error_stats(predicted: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    """n, MAPE, median and p90 absolute relative error (fractions, not percent)."""
    if len(measured) == 0:
        return {"n": 0.0, "mape": float("nan"), "median_ape": float("nan"), "p90_ape": float("nan")}
    ape = np.abs(predicted - measured) / measured
    return {
        "n": float(len(ape)),
        "mape": float(ape.mean()),
        "median_ape": float(np.median(ape)),
        "p90_ape": float(np.quantile(ape, 0.9)),
    }


def scored_rows(hw: HardwareSpec, table: Measurements) -> Measurements:
    """The rows a profile is scored on: those an entry covers (all of them without a profile)."""
    if hw.calibration is None:
        return table
    return table.take(covering_keys(hw, table) != "")


def evaluate(hw: HardwareSpec, table: Measurements) -> dict[str, dict[str, float]]:
    """Per op class: error stats of the profile's predictions on the rows its entries cover."""
    table = scored_rows(hw, table)
    pred, keys = predict(hw, table), row_keys(table)
    return {k: error_stats(pred[keys == k], table["time_s"][keys == k]) for k in sorted(set(keys))}


def evaluate_by_dtype(hw: HardwareSpec, table: Measurements) -> dict[str, dict[str, dict[str, float]]]:
    """Per op class and dtype: error stats on covered rows, each scored by its own entry."""
    table = scored_rows(hw, table)
    pred, keys = predict(hw, table), row_keys(table)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for key in sorted(set(keys)):
        for dtype in sorted(set(table["dtype"][keys == key])):
            mask = (keys == key) & (table["dtype"] == dtype)
            out.setdefault(key, {})[dtype] = error_stats(pred[mask], table["time_s"][mask])
    return out


def uncovered(hw: HardwareSpec, table: Measurements) -> dict[str, int]:
    """``{"gemm/fp4": rows}``: rows of a calibrated profile's table that no entry covers."""
    if hw.calibration is None:
        return {}
    lacking = row_entry_keys(table)[covering_keys(hw, table) == ""]
    return {k: int(np.sum(lacking == k)) for k in sorted(set(lacking))}
