"""Fitting calibrated profiles: one entry per op class and dtype, with held-out errors.

Every profile entry (``gemm/bf16``, ``gemm/fp8``, ``gemm_fp8_block/fp8``,
``allreduce/fp16``, ...; see :mod:`.keys`) is fitted on its own rows only by
:func:`.lsq.fit_params` (least squares on log error, robust re-weighting, several starting
points), records what it was fitted on and which parameters ended at a bound, and is checked
on a seeded random 80/20 split and a shape-range split.  A kernel family may fit on some of its
rows only (fused MoE: the evenly spread ``balanced`` ones, whose routing is exact) and drops its
outlier sweeps and isolated spikes first (:mod:`.sweeps`; the entry counts them).  The prediction side (models,
``predict``, ``evaluate``, ``op_time``) lives in :mod:`.predict` and is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.calibrate.kernels.identifiable import undetermined, undetermined_collective
from roofline.calibrate.kernels.sweeps import outlier_sweeps, spikes
from roofline.core.errors import OptionError
from roofline.kernels import forms as models
from roofline.kernels.keys import SEPARATE_IMPLS, base_op, entry_key, op_key, split_key
from roofline.kernels.lsq import Param, at_bound, fit_params, levenberg_marquardt
from roofline.kernels.predict import (
    COLLECTIVE_PARAMS,
    COLLECTIVE_RANGE_MAX,
    CONSTANT_PARAMS,
    MODELS,
    SHAPE_COLUMNS,
    compute_ops,
    covering_keys,
    entry_constants,
    error_stats,
    evaluate,
    evaluate_by_dtype,
    flops_bytes,
    hw_numbers,
    model_for,
    num_sms,
    op_time,
    op_times,
    predict,
    predict_op,
    row_entry_keys,
    row_keys,
    shapes,
    spec_predict,
    uncovered,
)
from roofline.kernels.schema import COLLECTIVE_OPS, MIN_FIT_ROWS, CalibrationError, Measurements, check_fit_request
from roofline.specs import HardwareSpec, hardware_from_dict

__all__ = [
    "COLLECTIVE_PARAMS",
    "COLLECTIVE_RANGE_MAX",
    "MODELS",
    "SEPARATE_IMPLS",
    "SHAPE_COLUMNS",
    "OpFit",
    "Param",
    "base_op",
    "calibrate",
    "calibrate_op",
    "covering_keys",
    "entry_key",
    "error_stats",
    "evaluate",
    "evaluate_by_dtype",
    "fit_constant",
    "fit_op",
    "holdout",
    "hw_numbers",
    "levenberg_marquardt",
    "model_for",
    "num_sms",
    "op_key",
    "op_time",
    "op_times",
    "predict",
    "predict_op",
    "row_entry_keys",
    "row_keys",
    "shapes",
    "spec_predict",
    "split_random",
    "split_range",
    "uncovered",
]


def _subsample(index: np.ndarray, max_rows: int, rng: np.random.Generator) -> np.ndarray:
    return index if len(index) <= max_rows else np.sort(rng.choice(index, max_rows, False))


def fit_rows(key: str, table: Measurements) -> Measurements:
    """The rows a fit of ``key`` uses: its family's ``fit_where`` rows where there are enough of them."""
    model = model_for(key)
    if model is None or model.fit_where is None:
        return table
    column, values = model.fit_where
    chosen = table.take(np.isin(table[column], list(values)))
    return chosen if len(chosen) >= MIN_FIT_ROWS else table


def fit_op(key: str, table: Measurements, hw: HardwareSpec, max_rows: int = 4000, seed: int = 0) -> dict[str, float]:
    """Fitted parameters (plus fixed constants) of profile key ``key`` on ``table``'s rows."""
    rng = np.random.default_rng(seed)
    op = base_op(key)
    table = fit_rows(key, table) if op not in COLLECTIVE_OPS else table
    sub = table.take(_subsample(np.arange(len(table)), max_rows, rng))
    if op in COLLECTIVE_OPS:
        return _fit_collective(op, sub, seed)
    model = model_for(key)
    assert model is not None
    fixed = {**model.constants, **entry_constants(key, hw), "num_sms": num_sms(hw)}
    s, nums = shapes(sub), hw_numbers(hw, sub)
    params = model.params_with(fixed)
    fitted = fit_params(params, lambda p: model.time(s, nums, {**fixed, **p}), sub["time_s"], seed=seed)
    return {**fitted, **fixed}


def params_at_bound(key: str, params: dict[str, float]) -> list[str]:
    """Fitted parameters of ``key`` stuck at a bound (collectives: ``name@devices``)."""
    model = model_for(key)
    if model is not None:
        return at_bound(model.params_with(params), params)
    out = []
    for name, value in params.items():
        base, _, _ = name.partition("@")
        spec = tuple(p for p in COLLECTIVE_PARAMS if p.name == base)
        if spec and at_bound(spec, {base: value}):
            out.append(name)
    return out


def _fit_collective(op: str, table: Measurements, seed: int) -> dict[str, float]:
    out: dict[str, float] = {}
    devices = table["num_devices"]
    for n in np.unique(devices):
        sub = table.take(devices == n)
        s = shapes(sub)

        def time(p: dict[str, float], s: dict[str, np.ndarray] = s) -> np.ndarray:
            return models.collective_time(op, s, p["latency_s"], p["bandwidth_bytes_per_s"], p["small_message_bytes"])

        init = {
            "latency_s": float(sub["time_s"].min()),
            "bandwidth_bytes_per_s": float(
                np.max(models.bus_bytes(op, s["message_bytes"], s["num_devices"]) / sub["time_s"])
            ),
        }
        fitted = fit_params(COLLECTIVE_PARAMS, time, sub["time_s"], init, seed=seed)
        out.update({f"{name}@{int(n)}": v for name, v in fitted.items()})
    widest = table.take(devices == np.max(devices))
    out.update(_fit_collective_summary(op, widest, seed))
    return out


def _fit_collective_summary(op: str, table: Measurements, seed: int) -> dict[str, float]:
    """latency_s and bandwidth_bytes_per_s of plain ``latency + bus_bytes / bandwidth``."""
    s = shapes(table)
    bb = models.bus_bytes(op, s["message_bytes"], s["num_devices"])
    init = {"latency_s": float(table["time_s"].min()), "bandwidth_bytes_per_s": float(np.max(bb / table["time_s"]))}
    return fit_params(
        COLLECTIVE_PARAMS[:2],
        lambda p: p["latency_s"] + bb / p["bandwidth_bytes_per_s"],
        table["time_s"],
        init,
        seed=seed,
    )


def fit_constant(key: str, table: Measurements, hw: HardwareSpec) -> dict[str, float]:
    """Best constant summary: η_compute, η_memory, overhead of max(F/(Pη_c), B/(BWη_m)) + o.

    Decode attention rows with more query heads per KV head than the fused kernel takes
    (``max_group``, a CUDA-core fallback no GQA model uses) do not enter the summary.
    """
    op = base_op(key)
    if op == "attention_decode":
        group = table["num_heads"] / table["num_kv_heads"]
        typical = group <= MODELS[op].constants["max_group"]
        table = table.take(typical) if typical.sum() >= 3 else table
    s, nums = shapes(table), hw_numbers(hw, table)
    flops, nbytes = flops_bytes(op, s)
    return fit_params(
        CONSTANT_PARAMS,
        lambda p: models.roofline_time(
            flops, nbytes, nums, p["compute_efficiency"], p["memory_efficiency"], p["overhead_s"]
        ),
        table["time_s"],
        robust_rounds=0,
    )


def split_random(n: int, seed: int = 0, test_fraction: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices of a seeded random split."""
    perm = np.random.default_rng(seed).permutation(n)
    cut = int(round(n * (1 - test_fraction)))
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def split_range(key: str, table: Measurements) -> tuple[np.ndarray, np.ndarray]:
    """Fit on small problems, test on large: GEMM m <= 1024, decode batch <= 32, ..."""
    model = model_for(key)
    if model is None:
        small = table["message_bytes"] <= COLLECTIVE_RANGE_MAX
    else:
        small = table[model.range_column] <= model.range_max
    return np.flatnonzero(small), np.flatnonzero(~small)


def holdout(
    key: str,
    table: Measurements,
    hw: HardwareSpec,
    train: np.ndarray,
    test: np.ndarray,
    max_rows: int,
    seed: int,
) -> dict[str, float]:
    """Fit on ``train`` rows, report before (spec) and after stats on ``test`` rows."""
    if len(train) < 10 or len(test) == 0:
        return {}
    params = fit_op(key, table.take(train), hw, max_rows, seed)
    test_rows = table.take(test)
    after = predict_op(key, test_rows, hw, params)
    before = predict_op(key, test_rows, hw, None)
    out = _prefixed("after_", error_stats(after, test_rows["time_s"]))
    out.update(_prefixed("before_", error_stats(before, test_rows["time_s"])))
    if base_op(key) in compute_ops():
        constant = predict_op(key, test_rows, hw, fit_constant(key, table.take(train), hw))
        out.update(_prefixed("constant_", error_stats(constant, test_rows["time_s"])))
    return out


def _prefixed(prefix: str, stats: dict[str, float]) -> dict[str, float]:
    return {prefix + k: v for k, v in stats.items() if k != "n" or prefix == "after_"}


@dataclass
class OpFit:
    """Everything calibration learned about one profile entry (``gemm/fp8``, ...)."""

    key: str
    params: dict[str, float]
    constant: dict[str, float]
    stats: dict[str, float]
    random: dict[str, float]
    shape_range: dict[str, float]
    dtypes: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    rows: int = 0
    at_bound: tuple[str, ...] = ()
    #: Terms the rows cannot determine (a collective's on a device count with too few message sizes).
    undetermined: tuple[str, ...] = ()

    def profile_entry(self) -> dict[str, object]:
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
            "dtypes": list(self.dtypes),
            "kernels": list(self.kernels),
            "rows": int(self.rows),
            "at_bound": list(self.at_bound),
        }


def cleaned(key: str, table: Measurements, hw: HardwareSpec, max_rows: int, seed: int) -> tuple[Measurements, int]:
    """``table`` without its family's outlier sweeps and isolated spikes (:mod:`.sweeps`), and how many went."""
    family = model_for(key)
    if family is None or not family.sweep:
        return table, 0
    bad = spikes(table, family)
    if family.sweep_limit:
        first = fit_op(key, table.take(~bad), hw, max_rows, seed)
        bad |= outlier_sweeps(table, family, predict_op(key, table, hw, first))
    return table.take(~bad), int(bad.sum())


def calibrate_op(key: str, table: Measurements, hw: HardwareSpec, max_rows: int = 4000, seed: int = 0) -> OpFit:
    """Fit one profile entry on all its rows (less its family's outlier sweeps and spikes) and evaluate
    both held-out splits."""
    table, excluded = cleaned(key, table, hw, max_rows, seed)
    params = fit_op(key, table, hw, max_rows, seed)
    measured = table["time_s"]
    stats = _prefixed("after_", error_stats(predict_op(key, table, hw, params), measured))
    stats.update(_prefixed("before_", error_stats(predict_op(key, table, hw, None), measured)))
    if base_op(key) in COLLECTIVE_OPS:
        constant = {
            "compute_efficiency": 1.0,
            "overhead_s": params["latency_s"],
            "memory_efficiency": params["bandwidth_bytes_per_s"] / hw.ici_bandwidth_bytes_per_s,
        }
    else:
        constant = fit_constant(
            key, table.take(_subsample(np.arange(len(table)), max_rows, np.random.default_rng(seed))), hw
        )
        stats.update(_prefixed("constant_", error_stats(predict_op(key, table, hw, constant), measured)))
    if excluded:
        stats["excluded_rows"] = float(excluded)
    random_split = holdout(key, table, hw, *split_random(len(table), seed), max_rows, seed)
    range_split = holdout(key, table, hw, *split_range(key, table), max_rows, seed)
    kernels = tuple(sorted({str(i) for i in table["impl"] if i}))
    return OpFit(
        key,
        params,
        constant,
        stats,
        random_split,
        range_split,
        dtypes=tuple(table.unique("dtype")),
        kernels=kernels,
        rows=len(table),
        at_bound=tuple(params_at_bound(key, params)),
        undetermined=undetermined_collective(table) if base_op(key) in COLLECTIVE_OPS else (),
    )


def known_op_classes() -> list[str]:
    """Op classes a fit may be restricted to: the schema ops and their separate kernel families."""
    plain = [*compute_ops(), *COLLECTIVE_OPS]
    return plain + [f"{op}_{impl}" for op in plain for impl in SEPARATE_IMPLS]


def _wanted(keys: list[str], ops: list[str] | None) -> list[str]:
    """Entry keys selected by ``ops`` (op classes like gemm, or keys like gemm/fp8)."""
    if not ops:
        return keys
    unknown = [o for o in ops if split_key(o)[0] not in known_op_classes()]
    if unknown:
        allowed = ", ".join([*compute_ops(), *COLLECTIVE_OPS, "allreduce_custom", "gemm_fp8_block"])
        raise OptionError(
            f"ops: {unknown[0]!r} is unknown; allowed: {allowed} (optionally /DTYPE, e.g. gemm/fp8)",
            parameters=("ops",),
        )
    return [k for k in keys if k in ops or split_key(k)[0] in ops]


def calibrate(
    table: Measurements,
    hw: HardwareSpec,
    *,
    dtype: str | None = None,
    max_rows: int = 4000,
    seed: int = 0,
    ops: list[str] | None = None,
) -> tuple[HardwareSpec, dict[str, OpFit]]:
    """A calibrated profile of ``hw`` from ``table``: one entry per op class and dtype present.

    ``dtype`` keeps only compute rows (GEMM, attention) of that dtype; rows of other hardware
    are ignored when ``table`` has rows of ``hw``.
    """
    max_rows, seed = check_fit_request(dtype, max_rows, seed)
    rows = table.where(hardware=hw.name) if hw.name in table.unique("hardware") else table
    if dtype:
        compute = np.isin(rows["op"], list(compute_ops()))
        rows = rows.take(~compute | (rows["dtype"] == dtype))
    keys = row_entry_keys(rows)
    wanted = _wanted(sorted(set(keys)), ops)
    if not wanted:
        raise CalibrationError(
            f"no measurements to calibrate {hw.name!r} (rows for: "
            f"{', '.join(table.unique('hardware')) or 'none'}"
            f"{'; dtype ' + dtype if dtype else ''}{'; ops ' + ', '.join(ops) if ops else ''})"
        )
    for k in wanted:
        why = undetermined(k, rows.take(keys == k))
        if why:
            raise CalibrationError(f"{k}: {why} (or fit the other entries only)")
    fits = {k: calibrate_op(k, rows.take(keys == k), hw, max_rows, seed) for k in wanted}
    used = rows.take(np.isin(keys, wanted))
    data = hw.model_dump()
    data["calibration"] = {
        "source": f"roofline calibrate fit: {len(used)} rows from {len(used.unique('source'))} "
        f"sources ({', '.join(sorted({s.split('/')[0] for s in used.unique('source')}))})",
        "ops": {k: f.profile_entry() for k, f in fits.items()},
    }
    return hardware_from_dict(data, f"<calibrated {hw.name}>"), fits
