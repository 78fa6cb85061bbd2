"""Least-squares fit of the per-op models on log error, held-out evaluation, profiles.

The fit minimises sum(log(predicted / measured)^2) with Levenberg-Marquardt (numerical
Jacobian, parameters mapped into their bounds), then a few rounds of iteratively
re-weighted least squares that approximate least absolute log error, so that a handful of
odd kernel choices do not pull the physical parameters.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..specs import HardwareSpec, SpecError, hardware_from_dict
from ..units import DTYPE_BYTES
from . import models
from .schema import COLLECTIVE_OPS, CalibrationError, Measurements, check_fit_request

# --------------------------------------------------------------------------- op models


@dataclass(frozen=True)
class Param:
    """A fitted parameter with its starting value and bounds (all positive)."""

    name: str
    init: float
    lo: float
    hi: float


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
MODELS: dict[str, OpModel] = {
    "gemm": OpModel(
        "gemm", models.gemm_time,
        COMMON + (
            Param("k_pipeline", 30.0, 1e-2, 1e4),
            Param("n_half", 100.0, 1e-2, 1e5),
            Param("l2_gain", 0.5, 1e-3, 20.0),
            Param("l2_bytes", 3e7, 1e4, 1e10),
            Param("k_step_s", 1.2e-9, 1e-13, 1e-7),
            Param("split_k", 2500.0, 16.0, 1e6),
            Param("fill_exponent", 0.3, 1e-3, 2.0),
        ),
        {"tile_m": 128.0, "tile_n": 128.0},
        range_column="m", range_max=1024,
    ),
    "attention_decode": OpModel(
        "attention_decode", models.attention_decode_time,
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
        range_column="batch", range_max=32,
    ),
    "attention_prefill": OpModel(
        "attention_prefill", models.attention_prefill_time,
        COMMON + (
            Param("fill_exponent", 0.3, 1e-3, 2.0),
            Param("head_setup_s", 1e-8, 1e-13, 1e-5),
        ),
        {"q_tile": 128.0},
        range_column="q_len", range_max=1024,
    ),
}
COLLECTIVE_PARAMS = (
    Param("latency_s", 1e-5, 1e-7, 1e-2),
    Param("bandwidth_bytes_per_s", 1e11, 1e6, 1e13),
    Param("small_message_bytes", 1e5, 1.0, 1e9),
)
#: Shape-range split of collectives: fit on messages up to this many bytes.
COLLECTIVE_RANGE_MAX = 16 * 2**20
CONSTANT_PARAMS = COMMON[:3]


#: Kernel families fitted as their own op class: ``<op>_<impl>`` (e.g. allreduce_custom).
SEPARATE_IMPLS = ("custom", "fp8_block", "sq")


def op_key(op: str, impl: str) -> str:
    """Profile key of a row: the op, or ``<op>_<impl>`` for a separately fitted kernel family."""
    return f"{op}_{impl}" if impl in SEPARATE_IMPLS else op


def row_keys(table: Measurements) -> np.ndarray:
    return np.array([op_key(o, i) for o, i in zip(table["op"], table["impl"], strict=False)], dtype=object)


def base_op(key: str) -> str:
    """The schema op of a profile key (``allreduce_custom`` -> ``allreduce``)."""
    for impl in SEPARATE_IMPLS:
        key = key.removesuffix(f"_{impl}")
    return key


# --------------------------------------------------------------------------- hardware


def num_sms(hw: HardwareSpec) -> float:
    """Streaming multiprocessors (or cores) used by the fill effects."""
    known = {"h100": 132.0, "h200": 132.0, "a100": 108.0, "b200": 148.0}
    if hw.calibration and "gemm" in hw.calibration.ops:
        sms = hw.calibration.ops["gemm"].params.get("num_sms")
        if sms:
            return float(sms)
    for prefix, sms in known.items():
        if hw.name.lower().startswith(prefix):
            return sms
    return 132.0 if hw.kind != "cpu" else float(os.cpu_count() or 1)


def hw_numbers(hw: HardwareSpec, table: Measurements) -> models.Hw:
    """Per-row peak FLOP/s for each row's dtype plus the chip's bandwidths."""
    peak = np.empty(len(table))
    for dtype in table.unique("dtype"):
        mask = table["dtype"] == dtype
        try:
            peak[mask] = hw.flops_for(dtype)
        except SpecError:
            peak[mask] = max(hw.flops_per_s.values())
    return models.Hw(
        peak_flops=peak, bandwidth=hw.hbm_bandwidth_bytes_per_s, num_sms=num_sms(hw),
        link_bandwidth=hw.ici_bandwidth_bytes_per_s, hop_latency=hw.ici_hop_latency_s,
    )


SHAPE_COLUMNS = ("m", "n", "k", "batch", "q_len", "kv_len", "num_heads", "num_kv_heads",
                 "head_dim", "message_bytes", "num_devices")


def shapes(table: Measurements) -> dict[str, np.ndarray]:
    """Shape columns plus ``width`` (bytes per element of each row's dtype)."""
    out = {c: np.asarray(table[c], float) for c in SHAPE_COLUMNS}
    out["width"] = np.array([DTYPE_BYTES[d] for d in table["dtype"]], float)
    return out


# --------------------------------------------------------------------------- prediction


def spec_predict(hw: HardwareSpec, table: Measurements) -> np.ndarray:
    """The uncalibrated spec-sheet roofline for every row."""
    return _predict(hw, table, calibrated=False)


def predict(hw: HardwareSpec, table: Measurements) -> np.ndarray:
    """Calibrated times where the profile has the op's parameters, else the spec roofline."""
    return _predict(hw, table, calibrated=True)


def _predict(hw: HardwareSpec, table: Measurements, calibrated: bool) -> np.ndarray:
    out = np.empty(len(table))
    keys = row_keys(table)
    ops = hw.calibration.ops if (calibrated and hw.calibration) else {}
    for key in sorted(set(keys)):
        mask = keys == key
        sub = table.take(mask)
        cal = ops.get(key) or ops.get(base_op(key))
        params = dict(cal.params) if cal else None
        out[mask] = predict_op(key, sub, hw, params)
    return out


def predict_op(
    key: str, table: Measurements, hw: HardwareSpec, params: dict[str, float] | None
) -> np.ndarray:
    """Times of rows of one op class: the fitted model with ``params``, or the spec roofline."""
    return op_times(key, shapes(table), hw_numbers(hw, table), params)


def op_time(hw: HardwareSpec, op: str, dtype: str = "bf16", impl: str = "",
            **shape: float | np.ndarray) -> np.ndarray:
    """Predicted seconds of ``op`` on ``hw`` for broadcast shape arrays (calibrated if it can).

    Example: ``op_time(profile, "gemm", m=[1, 4096], n=8192, k=8192)``;
    ``op_time(profile, "attention_decode", batch=64, kv_len=4096, num_heads=32,
    num_kv_heads=8, head_dim=128)``; ``op_time(profile, "allreduce", message_bytes=2**26,
    num_devices=8)``.
    """
    unknown = sorted(set(shape) - set(SHAPE_COLUMNS))
    if unknown:
        raise CalibrationError(
            f"unknown shape {unknown[0]!r}; allowed: {', '.join(SHAPE_COLUMNS)}")
    if op == "attention_decode":
        shape.setdefault("q_len", 1.0)
    if op == "attention_prefill":
        shape.setdefault("kv_len", shape.get("q_len", np.nan))
    arrays = np.broadcast_arrays(*(np.asarray(v, float) for v in shape.values()))
    s = {name: np.full(arrays[0].shape, np.nan) for name in SHAPE_COLUMNS}
    s.update(zip(shape, arrays, strict=True))
    s["width"] = np.full(arrays[0].shape, DTYPE_BYTES[dtype])
    nums = models.Hw(
        peak_flops=hw.flops_for(dtype) if op not in COLLECTIVE_OPS else 1.0,
        bandwidth=hw.hbm_bandwidth_bytes_per_s, num_sms=num_sms(hw),
        link_bandwidth=hw.ici_bandwidth_bytes_per_s, hop_latency=hw.ici_hop_latency_s)
    key = op_key(op, impl)
    ops = hw.calibration.ops if hw.calibration else {}
    cal = ops.get(key) or ops.get(base_op(key))
    return op_times(key, s, nums, dict(cal.params) if cal else None)


def op_times(
    key: str, s: dict[str, np.ndarray], nums: models.Hw, params: dict[str, float] | None
) -> np.ndarray:
    """Times from shape arrays: the fitted model with ``params``, or the spec roofline."""
    op = base_op(key)
    if op in COLLECTIVE_OPS:
        if params is None:
            return models.collective_spec_time(op, s, nums)
        lat, bw, small = _collective_arrays(params, s["num_devices"])
        return models.collective_time(op, s, lat, bw, small)
    if params is None:
        return models.roofline_time(*_flops_bytes(op, s), nums)
    if op not in MODELS or not set(p.name for p in MODELS[op].params) <= set(params):
        return models.roofline_time(
            *_flops_bytes(op, s), nums, params.get("compute_efficiency", 1.0),
            params.get("memory_efficiency", 1.0), params.get("overhead_s", 0.0))
    return MODELS[op].time(s, nums, params)


def _flops_bytes(op: str, s: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if op == "gemm":
        return models.gemm_flops(s["m"], s["n"], s["k"]), models.gemm_bytes(
            s["m"], s["n"], s["k"], s["width"])
    return models.attention_flops(s), models.attention_bytes(s)


def _collective_arrays(
    params: dict[str, float], devices: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        return {"n": 0.0, "mape": float("nan"), "median_ape": float("nan"),
                "p90_ape": float("nan")}
    ape = np.abs(predicted - measured) / measured
    return {"n": float(len(ape)), "mape": float(ape.mean()),
            "median_ape": float(np.median(ape)), "p90_ape": float(np.quantile(ape, 0.9))}


def evaluate(hw: HardwareSpec, table: Measurements) -> dict[str, dict[str, float]]:
    """Per op class: error stats of the profile's predictions on ``table``."""
    pred, keys = predict(hw, table), row_keys(table)
    return {k: error_stats(pred[keys == k], table["time_s"][keys == k])
            for k in sorted(set(keys))}


# --------------------------------------------------------------------------- least squares


def _bounded(z: np.ndarray, spec: tuple[Param, ...]) -> np.ndarray:
    lo = np.log([p.lo for p in spec])
    hi = np.log([p.hi for p in spec])
    return np.exp(lo + (hi - lo) / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))))


def _unbounded(values: np.ndarray, spec: tuple[Param, ...]) -> np.ndarray:
    lo = np.log([p.lo for p in spec])
    hi = np.log([p.hi for p in spec])
    frac = np.clip((np.log(values) - lo) / (hi - lo), 1e-6, 1 - 1e-6)
    return np.log(frac / (1.0 - frac))


def levenberg_marquardt(
    residual: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, iterations: int = 60
) -> np.ndarray:
    """Minimise |residual(x)|^2 from x0 (numerical Jacobian, adaptive damping)."""
    x, damping = np.asarray(x0, float).copy(), 1e-2
    r = residual(x)
    cost = float(r @ r)
    for _ in range(iterations):
        jac = np.empty((r.size, x.size))
        for j in range(x.size):
            step = np.zeros_like(x)
            step[j] = 1e-5
            jac[:, j] = (residual(x + step) - r) / 1e-5
        a, g = jac.T @ jac, jac.T @ r
        improved = False
        while damping < 1e8:
            trial = x - np.linalg.solve(a + damping * (np.diag(np.diag(a)) + 1e-9 * np.eye(x.size)), g)
            rt = residual(trial)
            ct = float(rt @ rt)
            if np.isfinite(ct) and ct < cost:
                improved, gain = True, cost - ct
                x, r, cost, damping = trial, rt, ct, max(damping / 3.0, 1e-7)
                break
            damping *= 4.0
        if not improved or gain < 1e-9 * max(cost, 1e-30):
            break
    return x


def fit_params(
    spec: tuple[Param, ...], predict_fn: Callable[[dict[str, float]], np.ndarray],
    measured: np.ndarray, init: dict[str, float] | None = None, robust_rounds: int = 3,
) -> dict[str, float]:
    """Fit ``spec`` parameters so that log(predict/measured) is small (LS, then IRLS ~ L1)."""
    names = [p.name for p in spec]
    start = np.array([(init or {}).get(p.name, p.init) for p in spec])

    def log_error(z: np.ndarray) -> np.ndarray:
        values = dict(zip(names, _bounded(z, spec), strict=False))
        with np.errstate(all="ignore"):
            out = np.log(predict_fn(values) / measured)
        return np.where(np.isfinite(out), out, 50.0)

    z = levenberg_marquardt(log_error, _unbounded(start, spec))
    for _ in range(robust_rounds):
        weight = 1.0 / np.sqrt(np.maximum(np.abs(log_error(z)), 0.02))
        z = levenberg_marquardt(lambda v, w=weight: log_error(v) * w, z)
    return {n: float(v) for n, v in zip(names, _bounded(z, spec), strict=False)}


# --------------------------------------------------------------------------- fitting


def _subsample(index: np.ndarray, max_rows: int, rng: np.random.Generator) -> np.ndarray:
    return index if len(index) <= max_rows else np.sort(rng.choice(index, max_rows, False))


def fit_op(
    key: str, table: Measurements, hw: HardwareSpec, max_rows: int = 4000, seed: int = 0
) -> dict[str, float]:
    """Fitted parameters (plus fixed constants) of one op class on ``table``'s rows."""
    rng = np.random.default_rng(seed)
    sub = table.take(_subsample(np.arange(len(table)), max_rows, rng))
    measured = sub["time_s"]
    op = base_op(key)
    if op in COLLECTIVE_OPS:
        return _fit_collective(op, sub)
    model = MODELS[op]
    fixed = {**model.constants, "num_sms": num_sms(hw)}
    s, nums = shapes(sub), hw_numbers(hw, sub)
    fitted = fit_params(model.params, lambda p: model.time(s, nums, {**fixed, **p}), measured)
    return {**fitted, **fixed}


def _fit_collective(op: str, table: Measurements) -> dict[str, float]:
    out: dict[str, float] = {}
    devices = table["num_devices"]
    for n in np.unique(devices):
        sub = table.take(devices == n)
        s = shapes(sub)

        def time(p: dict[str, float], s: dict[str, np.ndarray] = s) -> np.ndarray:
            return models.collective_time(
                op, s, p["latency_s"], p["bandwidth_bytes_per_s"], p["small_message_bytes"])

        init = {"latency_s": float(sub["time_s"].min()),
                "bandwidth_bytes_per_s": float(np.max(
                    models.bus_bytes(op, s["message_bytes"], s["num_devices"]) / sub["time_s"]))}
        fitted = fit_params(COLLECTIVE_PARAMS, time, sub["time_s"], init)
        out.update({f"{name}@{int(n)}": v for name, v in fitted.items()})
    widest = table.take(devices == np.max(devices))
    out.update(_fit_collective_summary(op, widest))
    return out


def _fit_collective_summary(op: str, table: Measurements) -> dict[str, float]:
    """latency_s and bandwidth_bytes_per_s of plain ``latency + bus_bytes / bandwidth``."""
    s = shapes(table)
    bb = models.bus_bytes(op, s["message_bytes"], s["num_devices"])
    init = {"latency_s": float(table["time_s"].min()),
            "bandwidth_bytes_per_s": float(np.max(bb / table["time_s"]))}
    return fit_params(
        COLLECTIVE_PARAMS[:2], lambda p: p["latency_s"] + bb / p["bandwidth_bytes_per_s"],
        table["time_s"], init)


def fit_constant(key: str, table: Measurements, hw: HardwareSpec) -> dict[str, float]:
    """Best constant summary: η_compute, η_memory, overhead of max(F/(Pη_c), B/(BWη_m)) + o.

    Decode attention rows with more query heads per KV head than the fused kernel takes
    (``max_group``, a CUDA-core fallback no GQA model uses) do not enter the summary.
    """
    if key == "attention_decode":
        group = table["num_heads"] / table["num_kv_heads"]
        typical = group <= MODELS[key].constants["max_group"]
        table = table.take(typical) if typical.sum() >= 3 else table
    s, nums = shapes(table), hw_numbers(hw, table)
    flops, nbytes = _flops_bytes(base_op(key), s)
    return fit_params(
        CONSTANT_PARAMS,
        lambda p: models.roofline_time(flops, nbytes, nums, p["compute_efficiency"],
                                       p["memory_efficiency"], p["overhead_s"]),
        table["time_s"], robust_rounds=0)


def split_random(n: int, seed: int = 0, test_fraction: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices of a seeded random split."""
    perm = np.random.default_rng(seed).permutation(n)
    cut = int(round(n * (1 - test_fraction)))
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def split_range(key: str, table: Measurements) -> tuple[np.ndarray, np.ndarray]:
    """Fit on small problems, test on large: GEMM m <= 1024, decode batch <= 32, ..."""
    op = base_op(key)
    if op in COLLECTIVE_OPS:
        small = table["message_bytes"] <= COLLECTIVE_RANGE_MAX
    else:
        model = MODELS[op]
        small = table[model.range_column] <= model.range_max
    return np.flatnonzero(small), np.flatnonzero(~small)


def _with_params(hw: HardwareSpec, key: str, params: dict[str, float]) -> HardwareSpec:
    data = hw.model_dump()
    data["calibration"] = {"source": "holdout", "ops": {key: {"params": params}}}
    return hardware_from_dict(data, "<holdout>")


def holdout(
    key: str, table: Measurements, hw: HardwareSpec, train: np.ndarray, test: np.ndarray,
    max_rows: int, seed: int,
) -> dict[str, float]:
    """Fit on ``train`` rows, report before (spec) and after stats on ``test`` rows."""
    if len(train) < 10 or len(test) == 0:
        return {}
    params = fit_op(key, table.take(train), hw, max_rows, seed)
    test_rows = table.take(test)
    after = predict_op(key, test_rows, hw, params)
    before = predict_op(key, test_rows, hw, None)
    const = fit_constant(key, table.take(train), hw) if base_op(key) in MODELS else None
    out = _prefixed("after_", error_stats(after, test_rows["time_s"]))
    out.update(_prefixed("before_", error_stats(before, test_rows["time_s"])))
    if const is not None:
        constant = predict_op(key, test_rows, hw, const)
        out.update(_prefixed("constant_", error_stats(constant, test_rows["time_s"])))
    return out


def _prefixed(prefix: str, stats: dict[str, float]) -> dict[str, float]:
    return {prefix + k: v for k, v in stats.items() if k != "n" or prefix == "after_"}


@dataclass
class OpFit:
    """Everything calibration learned about one op class."""

    key: str
    params: dict[str, float]
    constant: dict[str, float]
    stats: dict[str, float]
    random: dict[str, float]
    shape_range: dict[str, float]

    def profile_entry(self) -> dict[str, Any]:
        """The ``calibration.ops[key]`` mapping of a profile (numbers as floats)."""
        fit = {**self.stats}
        fit.update({f"random_{k}": v for k, v in self.random.items()})
        fit.update({f"range_{k}": v for k, v in self.shape_range.items()})
        fit = {k: float(v) for k, v in fit.items() if np.isfinite(v)}
        return {
            "compute_efficiency": float(min(self.constant["compute_efficiency"], 1.5)),
            "memory_efficiency": float(min(self.constant["memory_efficiency"], 1.5)),
            "overhead_s": float(self.constant["overhead_s"]),
            "params": {k: float(v) for k, v in self.params.items()},
            "fit": fit,
        }


def calibrate_op(
    key: str, table: Measurements, hw: HardwareSpec, max_rows: int = 4000, seed: int = 0
) -> OpFit:
    """Fit one op class on all its rows and evaluate both held-out splits."""
    params = fit_op(key, table, hw, max_rows, seed)
    measured = table["time_s"]
    stats = _prefixed("after_", error_stats(predict_op(key, table, hw, params), measured))
    stats.update(_prefixed("before_", error_stats(predict_op(key, table, hw, None), measured)))
    if base_op(key) in COLLECTIVE_OPS:
        constant = {"compute_efficiency": 1.0, "overhead_s": params["latency_s"],
                    "memory_efficiency": params["bandwidth_bytes_per_s"]
                    / hw.ici_bandwidth_bytes_per_s}
    else:
        constant = fit_constant(key, table.take(
            _subsample(np.arange(len(table)), max_rows, np.random.default_rng(seed))), hw)
        stats.update(_prefixed("constant_", error_stats(
            predict_op(key, table, hw, constant), measured)))
    random_split = holdout(key, table, hw, *split_random(len(table), seed), max_rows, seed)
    range_split = holdout(key, table, hw, *split_range(key, table), max_rows, seed)
    return OpFit(key, params, constant, stats, random_split, range_split)


def calibrate(
    table: Measurements, hw: HardwareSpec, *, dtype: str | None = None, max_rows: int = 4000,
    seed: int = 0, ops: list[str] | None = None,
) -> tuple[HardwareSpec, dict[str, OpFit]]:
    """A calibrated profile of ``hw`` from ``table`` (rows of other hardware are ignored)."""
    max_rows, seed = check_fit_request(dtype, max_rows, seed)
    rows = table.where(hardware=hw.name) if hw.name in table.unique("hardware") else table
    if dtype:
        compute = np.isin(rows["op"], list(MODELS))
        rows = rows.take(~compute | (rows["dtype"] == dtype))
    keys = row_keys(rows)
    known = [*MODELS, *COLLECTIVE_OPS]
    known += [f"{op}_{impl}" for op in known for impl in SEPARATE_IMPLS]
    unknown = sorted(set(ops or ()) - set(known))
    if unknown:
        allowed = ", ".join([*MODELS, *COLLECTIVE_OPS, "allreduce_custom", "gemm_fp8_block"])
        raise CalibrationError(f"unknown op {unknown[0]!r}; allowed: {allowed}")
    wanted = sorted(set(keys)) if not ops else [k for k in sorted(set(keys)) if k in ops]
    if not wanted:
        raise CalibrationError(
            f"no measurements to calibrate {hw.name!r} (rows for: "
            f"{', '.join(table.unique('hardware')) or 'none'})")
    fits = {k: calibrate_op(k, rows.take(keys == k), hw, max_rows, seed) for k in wanted}
    data = hw.model_dump()
    data["calibration"] = {
        "source": f"roofline calibrate fit: {len(rows)} rows from {len(rows.unique('source'))} "
                  f"sources ({', '.join(sorted({s.split('/')[0] for s in rows.unique('source')}))})",
        "ops": {k: f.profile_entry() for k, f in fits.items()},
    }
    return hardware_from_dict(data, f"<calibrated {hw.name}>"), fits
