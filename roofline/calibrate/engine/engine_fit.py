"""Fit a serving engine's terms to end-to-end rows, honestly held out.

Every engine term enters a step's time linearly (:func:`roofline.terms.step.engine_overhead_s`),
so a row's predicted latency — and the reciprocal of its predicted throughput — is affine in
the terms: y(θ) = y₀ + J·θ.  y₀ and J come from the one prediction path (:func:`predict_row`,
the step model) evaluated with no engine and with one unit of each term, so the fit uses the
same roofline terms as every prediction.  The fit minimises Σ log(y/y_measured)² with θ ≥ 0
(Levenberg-Marquardt in bounded coordinates, several starts), and reports held-out error by
case (k-fold, seeded) and by source (fit on the other sources).  The large all-reduce term's
threshold is a choice among a few message sizes (or none) by the Bayesian information criterion,
made again in every held-out fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from roofline.calibrate.engine.predict import engine_key, predict_row
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.validate import QUANTITIES, measured_value
from roofline.core.errors import RooflineError
from roofline.deploy import ENGINE_FLOOR, ENGINE_TERMS, FITTED_ENGINE_TERMS, NO_ENGINE, EngineTerms
from roofline.kernels.lsq import Param, at_bound, fit_params
from roofline.specs import EngineCalibration, HardwareSpec

#: One unit of each term for the finite differences (exact: the prediction is affine in each).
UNITS = {
    "step_overhead_s": 1e-3,
    "layer_overhead_s": 1e-5,
    "layer_bytes_per_token": 1e5,
    "replicated_bytes_per_token": 1e5,
    "sample_s_per_seq": 1e-4,
    "prefill_seq_overhead_s": 1e-3,
    "gemm_slowdown": 0.1,
    "collective_hop_s": 1e-6,
    "gqa_kv_reread": 0.1,
    "large_collective_s_per_byte": 1e-12,
}
#: Bounds of each term (SI); the lower bound stands for "absent".
BOUNDS = {
    "step_overhead_s": (1e-9, 0.2),
    "layer_overhead_s": (1e-11, 2e-3),
    "layer_bytes_per_token": (1e-3, 1e9),
    "replicated_bytes_per_token": (1e-3, 1e9),
    "sample_s_per_seq": (1e-11, 5e-3),
    "prefill_seq_overhead_s": (1e-9, 0.5),
    "gemm_slowdown": (1e-6, 5.0),
    "collective_hop_s": (1e-10, 2e-5),
    "gqa_kv_reread": (1e-6, 1.0),
    "large_collective_s_per_byte": (1e-17, 1e-9),
    ENGINE_FLOOR: (1e-6, 1.0),
}
#: The large all-reduce term, and the message sizes the fit tries as its threshold: powers of two
#: from 16 to 256 MiB; :func:`fit_choosing_threshold` keeps one of them or none.
LARGE = "large_collective_s_per_byte"
LARGE_INDEX = ENGINE_TERMS.index(LARGE)
LARGE_THRESHOLDS_BYTES = tuple(float(2**k) for k in range(24, 29))
#: Floors far above every prompt-only step, to read how the floor enters a row's quantities.
PROBE_FLOORS_S = (100.0, 200.0)
#: A term within this fraction of its upper bound is reported there (a term the model lacks).
UPPER_SLACK = 0.01
#: Validation quantities whose reciprocal is affine in the terms (rates); the others are latencies.
RATES = ("throughput",)


@dataclass(frozen=True)
class Design:
    """One measured quantity of one row: y₀, J and the measured y (reciprocals for rates)."""

    row: E2ERow
    quantity: str
    measured: float
    y0: float
    jacobian: np.ndarray
    # The floor under prompt-only steps: y gains scale·max(0, F − p(θ)), p(θ) = p0 + Jp·θ the row's
    # prompt-only step (its TTFT design); scale 0 where the quantity has none.  floor_ok: the floor
    # enters the row so (else the fit keeps it absent for the row's engine).
    floor_scale: float = 0.0
    prefill_y0: float = 0.0
    prefill_jacobian: np.ndarray | None = None
    floor_ok: bool = True
    # The large all-reduce term's column (and the prompt step's) at each of LARGE_THRESHOLDS_BYTES;
    # the jacobians hold the one chosen (:meth:`at_threshold`), the first until then.
    large_columns: np.ndarray | None = None
    large_prefill_columns: np.ndarray | None = None

    def at_threshold(self, i: int | None) -> Design:
        """This design with the large all-reduce term at threshold ``i`` (None: the term absent)."""
        if self.large_columns is None and i is not None:
            return self
        col = 0.0 if i is None or self.large_columns is None else float(self.large_columns[i])
        jac = self.jacobian.copy()
        jac[LARGE_INDEX] = col
        pj = self.prefill_jacobian
        if pj is not None:
            pj = pj.copy()
            pj[LARGE_INDEX] = (
                0.0 if i is None or self.large_prefill_columns is None else float(self.large_prefill_columns[i])
            )
        return replace(self, jacobian=jac, prefill_jacobian=pj)

    def predict(self, theta: np.ndarray) -> float:
        """The prediction in the quantity's own units at fitted terms θ (:data:`FITTED_ENGINE_TERMS`)."""
        affine, floor = theta[:-1], float(theta[-1])
        y = self.y0 + float(self.jacobian @ affine)
        if self.floor_scale and self.prefill_jacobian is not None:
            y += self.floor_scale * max(0.0, floor - self.prefill_y0 - float(self.prefill_jacobian @ affine))
        return 1.0 / y if self.quantity in RATES else y


def _as_y(quantity: str, value: float) -> float:
    return 1.0 / value if quantity in RATES else value


def unit_engine(name: str, base: EngineTerms = NO_ENGINE) -> EngineTerms:
    """``base`` (no fitted terms) with one unit of ``name``."""
    return replace(base, **{name: UNITS[name]}, key="unit", source="engine fit: unit term")


def handset_engine(row: E2ERow, hw: HardwareSpec) -> EngineTerms:
    """No fitted terms, with the hand-set properties (``comms_overlap``, ``fused_parallel_block``) of
    ``hw``'s entry for the row's engine: a refit is priced with them and keeps them."""
    cal = (hw.engine or {}).get(engine_key(row))
    if cal is None:
        return NO_ENGINE
    return replace(
        NO_ENGINE,
        comms_overlap=float(cal.comms_overlap),
        fused_parallel_block=bool(cal.fused_parallel_block),
        key=engine_key(row),
        source=f"engine fit: hand-set properties of {hw.name}'s {engine_key(row)} entry",
    )


def designs_for(row: E2ERow, hw: HardwareSpec) -> list[Design]:
    """The row's designs on ``hw``; raises RooflineError when the row cannot be predicted."""
    handset = handset_engine(row, hw)
    base = predict_row(row, hw, handset)
    wanted = [(q, key) for q, (_, key) in QUANTITIES.items() if key in base and measured_value(row, q) is not None]
    if not wanted:
        return []
    units = {name: predict_row(row, hw, unit_engine(name, handset)) for name in ENGINE_TERMS if name != LARGE}
    large = [
        predict_row(row, hw, replace(unit_engine(LARGE, handset), large_collective_bytes=b))
        for b in LARGE_THRESHOLDS_BYTES
    ]
    probes = [predict_row(row, hw, replace(handset, **{ENGINE_FLOOR: f})) for f in PROBE_FLOORS_S]

    def affine(q: str, key: str) -> tuple[float, np.ndarray, np.ndarray]:
        """y₀, J (one unit of each affine term) and the large all-reduce term's column per threshold."""
        y0 = _as_y(q, base[key])
        cols = np.array([(_as_y(q, p[key]) - y0) / UNITS[LARGE] for p in large])
        jac = [cols[0] if n == LARGE else (_as_y(q, units[n][key]) - y0) / UNITS[n] for n in ENGINE_TERMS]
        return y0, np.array(jac), cols

    # A static row's TTFT is its one prompt-only step: the floor's argument p(θ).
    prefill = "ttft_s" in base and row.load == "static"
    p0, pj, pcols = affine("ttft_s", "ttft_s") if prefill else (0.0, None, None)
    out = []
    for q, key in wanted:
        y0, jac, cols = affine(q, key)
        measured = measured_value(row, q)
        assert measured is not None
        scale, ok = _floor_scale(q, key, y0, p0, probes, prefill)
        out.append(Design(row, q, measured[0], y0, jac, scale, p0, pj, ok, cols, pcols))
    return out


def _floor_scale(
    q: str, key: str, y0: float, p0: float, probes: Sequence[dict[str, float]], has_prefill: bool
) -> tuple[float, bool]:
    """(scale, ok): how a floor above the prompt-only step enters y, read at two probe floors; ok when
    y − y₀ = scale·(F − p₀) at both (the floor enters the design exactly) or it does not enter at all."""
    gains = [_as_y(q, p[key]) - y0 for p in probes]
    if all(abs(g) <= 1e-12 * abs(y0) for g in gains):
        return 0.0, True
    if not has_prefill:
        return 0.0, False
    scales = [g / (f - p0) for g, f in zip(gains, PROBE_FLOORS_S, strict=True)]
    return scales[0], bool(np.isclose(scales[0], scales[1], rtol=1e-9, atol=0.0))


def spec(floor: bool = True) -> tuple[Param, ...]:
    """The fitted terms' parameters (without ``floor``, all but the prompt-step floor)."""
    names = FITTED_ENGINE_TERMS if floor else ENGINE_TERMS
    return tuple(Param(n, np.sqrt(BOUNDS[n][0] * BOUNDS[n][1]) * 1e-2, *BOUNDS[n]) for n in names)


def fit_terms(designs: Sequence[Design], seed: int = 0) -> dict[str, float]:
    """Least log error θ ≥ 0 over ``designs`` (LM, robust rounds, several starts).  The floor under
    prompt-only steps is fitted only where it enters every design exactly (:attr:`Design.floor_ok`);
    elsewhere it stays at its lower bound (absent)."""
    if len(designs) < len(FITTED_ENGINE_TERMS):
        raise RooflineError(
            f"engine fit needs at least {len(FITTED_ENGINE_TERMS)} measured quantities (got {len(designs)})"
        )
    y0 = np.array([d.y0 for d in designs])
    jac = np.stack([d.jacobian for d in designs])
    scale = np.array([d.floor_scale for d in designs])
    p0 = np.array([d.prefill_y0 for d in designs])
    pj = np.stack([np.zeros(len(ENGINE_TERMS)) if d.prefill_jacobian is None else d.prefill_jacobian for d in designs])
    measured = np.array([_as_y(d.quantity, d.measured) for d in designs])
    with_floor = all(d.floor_ok for d in designs)

    def predict(values: dict[str, float]) -> np.ndarray:
        affine = np.array([values[n] for n in ENGINE_TERMS])
        floor = values.get(ENGINE_FLOOR, 0.0)
        return y0 + jac @ affine + scale * np.maximum(0.0, floor - p0 - pj @ affine)

    floored = scale > 0
    with_floor = with_floor and bool(np.any(floored))
    # Start the floor inside the data (a floor under every prompt step has no gradient): at the median
    # prompt step; a floor that binds no design at the end is absent.
    init = {ENGINE_FLOOR: float(np.median(p0[floored]))} if with_floor else None
    values = fit_params(spec(with_floor), predict, measured, init=init, seed=seed)
    affine = np.array([values[n] for n in ENGINE_TERMS])
    binds = with_floor and bool(np.any(values[ENGINE_FLOOR] > (p0 + pj @ affine)[floored]))
    return values if binds else {**values, ENGINE_FLOOR: BOUNDS[ENGINE_FLOOR][0]}


#: Parameters the large all-reduce term adds (its threshold and its value): what the fit's choice of it
#: pays for in the Bayesian information criterion.
LARGE_PARAMS = 2


@dataclass(frozen=True)
class Choice:
    """A fit's terms and the large all-reduce threshold it chose (an index of
    :data:`LARGE_THRESHOLDS_BYTES`; None: the term absent)."""

    values: dict[str, float]
    threshold: int | None

    @property
    def threshold_bytes(self) -> float:
        return 0.0 if self.threshold is None else LARGE_THRESHOLDS_BYTES[self.threshold]

    def predict(self, d: Design) -> float:
        return d.at_threshold(self.threshold).predict(theta_of(self.values))


def _distinct_thresholds(designs: Sequence[Design]) -> list[int]:
    """Thresholds that price some design and differ from every smaller one on these designs."""
    out: list[int] = []
    seen: list[np.ndarray] = []
    for i in range(len(LARGE_THRESHOLDS_BYTES)):
        cols = np.array([0.0 if d.large_columns is None else d.large_columns[i] for d in designs])
        if not np.any(cols) or any(np.array_equal(cols, c) for c in seen):
            continue
        seen.append(cols)
        out.append(i)
    return out


def fit_choosing_threshold(designs: Sequence[Design], seed: int = 0) -> Choice:
    """:func:`fit_terms` without the large all-reduce term and at each distinct threshold; the threshold
    whose fit has the least mean squared log error, if it lowers the Bayesian information criterion
    n·ln(MSE) + k·ln(n) against the fit without the term (k = LARGE_PARAMS), else none."""

    def fitted(i: int | None) -> tuple[float, Choice]:
        ds = [d.at_threshold(i) for d in designs]
        values = fit_terms(ds, seed)
        if i is None:
            values = {**values, LARGE: BOUNDS[LARGE][0]}
        theta = theta_of(values)
        return float(np.mean([np.log(d.predict(theta) / d.measured) ** 2 for d in ds])), Choice(values, i)

    n = len(designs)
    base, best = fitted(None)
    best_bic = n * np.log(base)
    for i in _distinct_thresholds(designs):
        mse, choice = fitted(i)
        bic = n * np.log(mse) + LARGE_PARAMS * np.log(n)
        if choice.values[LARGE] > 10.0 * BOUNDS[LARGE][0] and bic < best_bic:
            best, best_bic = choice, bic
    return best


def theta_of(values: dict[str, float]) -> np.ndarray:
    return np.array([values[n] for n in FITTED_ENGINE_TERMS])


def ape(designs: Sequence[Design], theta: np.ndarray) -> np.ndarray:
    """Absolute percentage errors of the designs' predictions at θ."""
    return np.array([abs(d.predict(theta) - d.measured) / d.measured for d in designs])


def kfold_predictions(designs: Sequence[Design], folds: int = 5, seed: int = 0) -> dict[tuple[str, str], float]:
    """Held-out by case: each row's predictions from a fit on the other folds' rows (leave one row out
    where a fold's training rows would hold fewer quantities than there are terms)."""
    ids = sorted({d.row.id for d in designs})
    order = np.random.default_rng(seed).permutation(len(ids))
    fold_of = {ids[i]: k % folds for k, i in enumerate(order)}
    if any(sum(fold_of[d.row.id] != k for d in designs) < len(FITTED_ENGINE_TERMS) for k in range(folds)):
        folds, fold_of = len(ids), {ids[i]: k for k, i in enumerate(order)}
    out: dict[tuple[str, str], float] = {}
    for k in range(folds):
        train = [d for d in designs if fold_of[d.row.id] != k]
        test = [d for d in designs if fold_of[d.row.id] == k]
        if not test or len(train) < len(FITTED_ENGINE_TERMS):
            continue
        choice = fit_choosing_threshold(train, seed)
        out.update({(d.row.id, d.quantity): choice.predict(d) for d in test})
    return out


@dataclass(frozen=True)
class EngineFit:
    """An engine entry: fitted terms, terms at a bound, and errors before, in-sample and held out."""

    key: str
    terms: dict[str, float]
    at_lower: list[str]
    at_upper: list[str]
    rows: int
    sources: list[str]
    stats: dict[str, float]
    comms_overlap: float = 0.0
    fused_parallel_block: bool = False
    large_collective_bytes: float = 0.0

    def profile_entry(self) -> dict[str, object]:
        """The ``engine[key]`` mapping of a profile (the hand-set properties kept as they were)."""
        return {
            **{n: float(v) for n, v in self.terms.items()},
            "large_collective_bytes": self.large_collective_bytes,
            "comms_overlap": self.comms_overlap,
            "fused_parallel_block": self.fused_parallel_block,
            "rows": self.rows,
            "sources": self.sources,
            "at_bound": sorted(self.at_lower + self.at_upper),
            "at_upper_bound": sorted(self.at_upper),
            "fit": {k: float(v) for k, v in self.stats.items() if np.isfinite(v)},
        }


def fit_engine(
    key: str,
    designs: Sequence[Design],
    seed: int = 0,
    handset: EngineCalibration | None = None,
    comms_overlap: float = 0.0,
) -> EngineFit:
    """Fit one engine on its designs and score it: kernel terms only, in-sample, held out by case.

    ``handset``: the entry being refitted, whose hand-set properties the new entry keeps; without
    one the entry records ``comms_overlap``, the chip's default the rows were priced with."""
    choice = fit_choosing_threshold(designs, seed)
    values, designs = choice.values, [d.at_threshold(choice.threshold) for d in designs]
    theta = theta_of(values)
    held = kfold_predictions(designs, seed=seed)
    held_ape = np.array(
        [abs(held[(d.row.id, d.quantity)] - d.measured) / d.measured for d in designs if (d.row.id, d.quantity) in held]
    )
    bounds = {p.name: p for p in spec()}
    flagged = at_bound(spec(), values)
    lower = [n for n in flagged if abs(np.log(values[n] / bounds[n].lo)) < abs(np.log(values[n] / bounds[n].hi))]
    # the top counts only where a term is pinned there (within 1%), not 1% of a range of decades below it
    upper = [n for n in FITTED_ENGINE_TERMS if values[n] >= (1.0 - UPPER_SLACK) * bounds[n].hi]
    stats = {
        "before_mape": float(ape(designs, np.zeros(len(FITTED_ENGINE_TERMS))).mean()),
        "after_mape": float(ape(designs, theta).mean()),
        "holdout_mape": float(held_ape.mean()) if held_ape.size else float("nan"),
        "holdout_cases": float(held_ape.size),
    }
    return EngineFit(
        key,
        {n: (0.0 if n in lower else v) for n, v in values.items()},
        lower,
        upper,
        len({d.row.id for d in designs}),
        sorted({d.row.source for d in designs}),
        stats,
        *((float(handset.comms_overlap), bool(handset.fused_parallel_block)) if handset else (comms_overlap, False)),
        large_collective_bytes=0.0 if LARGE in lower else choice.threshold_bytes,
    )


#: Fewest measured quantities an engine entry is fitted on by itself.
MIN_DESIGNS = 12


def row_designs(rows: Sequence[E2ERow], profiles: Mapping[str, HardwareSpec]) -> dict[str, list[Design]]:
    """Designs of every row that its chip's profile can predict, by chip."""
    out: dict[str, list[Design]] = {}
    for row in rows:
        hw = profiles.get(row.hardware)
        if hw is None:
            continue
        try:
            out.setdefault(row.hardware, []).extend(designs_for(row, hw))
        except RooflineError:
            continue
    return out


def engine_groups(designs: Mapping[str, Sequence[Design]]) -> dict[tuple[str, str], list[Design]]:
    """(chip, engine key) -> the designs its terms are fitted on: that engine/version on that chip, else
    every version of the engine on that chip, else that engine/version on every chip (too few otherwise)."""
    out: dict[tuple[str, str], list[Design]] = {}
    for chip, mine in designs.items():
        for key in sorted({engine_key(d.row) for d in mine}):
            group = [d for d in mine if engine_key(d.row) == key]
            if len(group) < MIN_DESIGNS:
                group = [d for d in mine if d.row.engine == key.split("/")[0]]
            if len(group) < MIN_DESIGNS:
                group = [d for ds in designs.values() for d in ds if engine_key(d.row) == key]
            if len(group) >= MIN_DESIGNS:
                out[(chip, key)] = list(group)
    return out


def holdout_predictions(designs: Mapping[str, Sequence[Design]], seed: int = 0) -> dict[tuple[str, str], float]:
    """(row id, quantity) -> prediction with engine terms fitted without that row (k-fold by case)."""
    out: dict[tuple[str, str], float] = {}
    for (chip, key), group in engine_groups(designs).items():
        mine = {(d.row.id, d.quantity) for d in group if d.row.hardware == chip and engine_key(d.row) == key}
        out.update({k: v for k, v in kfold_predictions(group, seed=seed).items() if k in mine})
    return out


def source_holdout_predictions(designs: Mapping[str, Sequence[Design]], seed: int = 0) -> dict[tuple[str, str], float]:
    """(row id, quantity) -> prediction with engine terms fitted on the other sources' rows of its chip."""
    out: dict[tuple[str, str], float] = {}
    for mine in designs.values():
        for source in sorted({d.row.source for d in mine}):
            train = [d for d in mine if d.row.source != source]
            if len(train) < MIN_DESIGNS:
                continue
            choice = fit_choosing_threshold(train, seed)
            out.update({(d.row.id, d.quantity): choice.predict(d) for d in mine if d.row.source == source})
    return out
