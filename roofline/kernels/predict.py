"""Per-op models and their predictions: measured rows or broadcast shapes -> seconds, and errors.

Each profile key (``gemm/bf16``, ``gemm/fp8``, ``gemm_fp8_block/fp8``; see :mod:`.keys`)
selects one model; a row is predicted by the profile entry that covers its op class and
dtype, or by the spec-sheet roofline; evaluation scores covered rows only and counts the rest.
"""

from __future__ import annotations

import numpy as np

import roofline.kernels.mla
import roofline.kernels.moe  # noqa: F401  (registers the fused-MoE and MLA kernel families)
from roofline.kernels import forms as models
from roofline.kernels.keys import base_op, entry_key, op_key, resolve, split_key
from roofline.kernels.lsq import Param
from roofline.kernels.registry import FAMILIES, IDEAL, Achievable, KernelFamily, achievable_hw
from roofline.kernels.schema import COLLECTIVE_OPS, Measurements
from roofline.kernels.shapes import (
    BLOCK_SCALED_DTYPES,
    QUANTIZED_DTYPES,
    SHAPE_COLUMNS,
    chip_numbers,
    hw_numbers,
    num_sms,
    peak_flops,
    shape_arrays,
    shapes,
)
from roofline.specs import HardwareSpec

__all__ = ["QUANTIZED_DTYPES", "SHAPE_COLUMNS", "hw_numbers", "num_sms", "shape_arrays", "shapes"]

# --------------------------------------------------------------------------- op models


#: One op class's model: a kernel family (the built-in GEMM and attention models are families too).
OpModel = KernelFamily


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
BUILTIN_COMPUTE_OPS = ("gemm", "attention_decode", "attention_prefill")
#: Compute ops known at import: the built-in models and the registered kernel families (fused MoE, MLA).
COMPUTE_OPS = BUILTIN_COMPUTE_OPS + tuple(FAMILIES)


def compute_ops() -> tuple[str, ...]:
    """Compute ops now: the built-in models and every registered kernel family (one added later too)."""
    return BUILTIN_COMPUTE_OPS + tuple(FAMILIES)


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
        block = op_class == "gemm_fp8_block" or dtype in BLOCK_SCALED_DTYPES
        return MODELS["gemm_quantized_block" if block else "gemm_quantized"]
    if op in FAMILIES:
        return FAMILIES[op].for_impl(op_class.removeprefix(op).removeprefix("_"))
    return MODELS[op]


def entry_constants(key: str, hw: HardwareSpec) -> dict[str, float]:
    """Constants profile key ``key``'s kernel fixes on ``hw`` (its family's ``entry_constants``), else {}."""
    op_class, dtype = split_key(key)
    op = base_op(op_class)
    family = FAMILIES.get(op)
    if family is None or family.entry_constants is None:
        return {}
    return dict(family.entry_constants(op_class.removeprefix(op).removeprefix("_"), dtype, hw))


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


# --------------------------------------------------------------------------- shapes (kernels.shapes)

_hw = chip_numbers


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
    peak = 1.0 if op in COLLECTIVE_OPS else peak_flops(hw, op, dtype)
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
    family = FAMILIES.get(op)
    if params is None:
        if family is not None and family.spec_time is not None:
            return family.spec_time(s, nums, IDEAL)
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
    """(FLOPs, bytes) of rows of ``op``: a family's own work, the GEMM's, or attention's."""
    family = FAMILIES.get(op)
    if family is not None and family.work is not None:
        return family.work(s)
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


def family_times(
    hw: HardwareSpec,
    key: str,
    s: dict[str, np.ndarray],
    params: dict[str, float] | None,
    achievable: Achievable = IDEAL,
) -> np.ndarray:
    """Seconds of profile key ``key`` (``<family op>/<dtype>``) for shape arrays ``s`` already built
    (:func:`shape_arrays`): the fitted form with ``params``, else the spec form at ``achievable``."""
    op_class, dtype = split_key(key)
    op = base_op(op_class)
    nums = _hw(hw, peak_flops(hw, op, dtype))
    if params is not None:
        return op_times(key, s, nums, params)
    family = FAMILIES[op]
    assert family.spec_time is not None
    return family.spec_time(s, achievable_hw(nums, achievable, family.peak_dtype(dtype)), achievable)


def family_spec_time(
    hw: HardwareSpec, op: str, dtype: str, shape: dict[str, object], achievable: Achievable = IDEAL
) -> np.ndarray:
    """Seconds of kernel family ``op`` in ``dtype`` by its spec-sheet form, at the chip's ``achievable`` speed."""
    family = FAMILIES[op]
    assert family.spec_time is not None
    s = shape_arrays(op, dtype, shape)
    nums = achievable_hw(_hw(hw, peak_flops(hw, op, dtype)), achievable, family.peak_dtype(dtype))
    return family.spec_time(s, nums, achievable)
