"""Fit an engine entry's registry terms to end-to-end rows through the one prediction path.

Static rows are priced by the step model (a request of the batch); rows at a rate or a concurrency by
the simulator with their scheduler knobs (:mod:`.simulated`).  The fit minimises a robust sum of
squared log errors (scipy least squares, soft-L1 loss) over the terms the rows determine, each
bounded by the registry's physical range; the rest keep their documented values, and the fit says
which terms the rows could not determine.  A term that ends at its upper bound is reported as a
missing term (the rows want more than the physical range).  Spread: the standard deviation of each
fitted term over refits without one row (without one of 10 folds above 10 rows), whose predictions are
also the held-out errors.  Overloaded runs (over 5 % of requests failed at the client) are predicted, with
the row's client timeout, but not fitted.

Simulated rows are evaluated on a grid of the step-cost term (``step_host_s``) and interpolated
linearly; the request path (front end, lag) enters them exactly, so a fit of tens of rows runs a few
simulations per row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from roofline.calibrate.engine.design import MixedDesign, StaticDesign
from roofline.calibrate.engine.predict import closed_form_design, is_simulated, overloaded, row_deployment
from roofline.calibrate.engine.quantities import QUANTITIES, measured_value
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.simulated import SimulatedRow, simulated_row
from roofline.core.errors import RooflineError
from roofline.deploy import EngineTerms
from roofline.deploy.engine_registry import REGISTRY
from roofline.specs import HardwareSpec

#: A typical size of each fitted term: the determinability probe and the optimiser's scale.
PROBE = {"step_host_s": 1e-3, "seq_host_s": 2e-5, "eager_launch_s_per_layer": 2e-4, "frontend_out_s": 5e-3}
#: The simulated step-cost term and its grid (s): simulations run at these values only.
GRID_TERM = "step_host_s"
GRID = (0.0, 2.5e-4, 1e-3, 4e-3, 1.6e-2, 5e-2)
#: A term moving no prediction by this much (log) at its probe size is not determined by the rows.
DETERMINED = 0.005
#: Share of a term's range at its upper bound that counts as "at the bound".
AT_BOUND = 0.01
#: Most refits for the spread and the held-out errors: leave one row out up to this many rows, else folds.
FOLDS = 10


def measured(row: E2ERow, quantity: str) -> float | None:
    """The row's measured value of ``quantity`` (its first given column), else None."""
    found = measured_value(row, quantity)
    return None if found is None else found[0]


@dataclass
class FitRow:
    """One row ready to be predicted at any entry of its engine (deployment built once)."""

    row: E2ERow
    hw: HardwareSpec
    sim: SimulatedRow | None = None
    designs: dict[float, StaticDesign | MixedDesign] = field(default_factory=dict)

    @property
    def fittable(self) -> bool:
        """Whether the fit may use the row: not an overloaded run whose clients gave up (its survivors'
        latencies hang on the backlog, not on the engine terms), which ``validate`` still predicts."""
        return not overloaded(self.row)

    def predict(self, engine: EngineTerms) -> dict[str, float]:
        if self.sim is None:  # static or max throughput: device steps once, exact at any entry
            key = float(engine.gqa_kv_reread)  # the kernel property a design's device times depend on
            if key not in self.designs:
                self.designs[key] = closed_form_design(self.row, row_deployment(self.row, self.hw, engine))
            return self.designs[key].predict(engine)
        x = float(engine.value(GRID_TERM))
        lo = max(g for g in GRID if g <= x) if x < GRID[-1] else GRID[-2]
        hi = min(g for g in GRID if g > lo)
        a, b = (self._at(engine, g) for g in (lo, hi))
        w = (x - lo) / (hi - lo)
        return {k: (1 - w) * a[k] + w * b[k] for k in a if k in b}

    def _at(self, engine: EngineTerms, g: float) -> dict[str, float]:
        probe = replace(engine, values={**engine.values, GRID_TERM: g})
        assert self.sim is not None
        return self.sim.predict(probe)

    def cases(self) -> list[str]:
        return [q for q in QUANTITIES if measured(self.row, q) is not None]


def fit_rows(rows: Sequence[E2ERow], hw: HardwareSpec) -> list[FitRow]:
    """Rows on ``hw`` ready to fit (a row the model cannot run raises its one-line error)."""
    out = []
    for row in rows:
        if not is_simulated(row):
            out.append(FitRow(row, hw))
        else:
            out.append(FitRow(row, hw, simulated_row(row, row_deployment(row, hw))))
    return out


def with_values(base: EngineTerms, values: Mapping[str, float]) -> EngineTerms:
    """``base`` with registry terms set (a registry entry even when ``base`` had none)."""
    return replace(base, values={**base.values, **values}, policy=base.policy or "decode-first")


def residuals(rows: Sequence[FitRow], engine: EngineTerms) -> np.ndarray:
    """log(predicted / measured) of every case of every row."""
    out = []
    for r in rows:
        pred = r.predict(engine)
        for q in r.cases():
            p, m = pred.get(QUANTITIES[q][1]), measured(r.row, q)
            if p is not None and m and p > 0 and math.isfinite(p):
                out.append(math.log(p / m))
    return np.asarray(out)


def determined(
    rows: Sequence[FitRow], base: EngineTerms, candidates: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    """The candidate terms the rows depend on (a probe-sized change moves a prediction), and why the others
    cannot be fitted."""
    ref = residuals(rows, base)
    keep, why = [], {}
    for name in candidates:
        term = REGISTRY[name]
        moved = 0.0
        for size in (PROBE[name], 10.0 * PROBE[name]):  # a floor term binds only past some size
            probe = with_values(base, {name: min(term.default + size, term.high)})
            moved = max(moved, float(np.max(np.abs(residuals(rows, probe) - ref))) if ref.size else 0.0)
        if moved >= DETERMINED:
            keep.append(name)
        else:
            why[name] = f"these rows cannot determine it (up to {10 * PROBE[name]:g} moves no prediction 0.5%)"
    return keep, why


def least_squares_fit(rows: Sequence[FitRow], base: EngineTerms, names: Sequence[str]) -> dict[str, float]:
    """Robust bounded least squares of the log errors over ``names`` (registry bounds, probe scale)."""
    from scipy.optimize import least_squares

    if not names:
        return {}
    scale = np.array([PROBE[n] for n in names])
    lo = np.array([REGISTRY[n].low for n in names]) / scale
    hi = np.array([REGISTRY[n].high for n in names]) / scale
    x0 = np.clip(np.array([max(base.value(n), 0.1 * PROBE[n]) for n in names]) / scale, lo, hi)

    def res(x: np.ndarray) -> np.ndarray:
        return residuals(rows, with_values(base, dict(zip(names, x * scale, strict=True))))

    # A floor term below every step it could bind has no gradient: start it at several sizes, keep the best.
    floors = [i for i, n in enumerate(names) if REGISTRY[n].kind == "floor"]
    starts = [x0] + [
        np.where(np.isin(np.arange(len(names)), floors), np.clip(k, lo, hi), x0) for k in (1.0, 10.0, 30.0)
    ]
    best = None
    for start in starts if floors else starts[:1]:
        fit = least_squares(res, start, bounds=(lo, hi), loss="soft_l1", f_scale=0.05, diff_step=1e-3, xtol=1e-10,
                            max_nfev=100)  # fmt: skip
        if best is None or fit.cost < best.cost:
            best = fit
    return {n: float(v) for n, v in zip(names, best.x * scale, strict=True)}


@dataclass(frozen=True)
class EntryFit:
    """A fitted entry: terms, which were fitted or held and why, spread, errors, terms at a bound."""

    key: str
    values: dict[str, float]
    fitted: list[str]
    held: dict[str, str]
    spread: dict[str, float]
    at_upper: list[str]
    rows: int
    sources: list[str]
    stats: dict[str, float]
    held_out: dict[tuple[str, str], float]  # (row id, quantity) -> prediction from a fit without the row


def fit_entry(
    key: str, rows: Sequence[FitRow], base: EngineTerms, candidates: Sequence[str] | None = None, spread: bool = True
) -> EntryFit:
    """Fit entry ``key`` (starting from ``base``'s documented values) on ``rows``; see the module doc."""
    every = list(rows)
    rows = [r for r in every if r.fittable]
    if not rows:
        raise RooflineError(f"engine {key}: no end-to-end rows to fit (overloaded runs are left out)")
    names = [n for n in (candidates or [n for n, t in REGISTRY.items() if t.fitted]) if n in PROBE]
    held: dict[str, str] = {}
    if any(r.sim is not None for r in rows):  # simulated rows move only with the grid term and the request path
        grid_only = [n for n in names if REGISTRY[n].kind in ("step", "floor") and n != GRID_TERM]
        held = {n: "not fitted on simulated rows (only step_host_s is simulated on a grid)" for n in grid_only}
        names = [n for n in names if n not in held]
    base = with_values(base, {})
    keep, undetermined = determined(rows, base, names)
    held.update(undetermined)
    if not keep:
        raise RooflineError(
            f"engine {key}: the rows determine none of its terms ({'; '.join(f'{n}: {w}' for n, w in held.items())})"
        )
    values = least_squares_fit(rows, base, keep)
    engine = with_values(base, values)
    at_upper = [n for n in keep if values[n] >= REGISTRY[n].high - AT_BOUND * (REGISTRY[n].high - REGISTRY[n].low)]
    held_out: dict[tuple[str, str], float] = {}
    spreads: dict[str, float] = {}
    if spread and len(rows) > 1:
        folds = min(len(rows), FOLDS)
        order = sorted(range(len(rows)), key=lambda i: rows[i].row.id)
        fold = {i: k % folds for k, i in enumerate(order)}
        refits = []
        for k in range(folds):
            v = least_squares_fit([r for i, r in enumerate(rows) if fold[i] != k], base, keep)
            refits.append(v)
            for r in (r for i, r in enumerate(rows) if fold[i] == k):
                pred = r.predict(with_values(base, v))
                held_out.update({(r.row.id, q): pred[QUANTITIES[q][1]] for q in r.cases() if QUANTITIES[q][1] in pred})
        spreads = {n: float(np.std([v[n] for v in refits])) for n in keep}
    before = residuals(rows, base)
    after = residuals(rows, engine)
    stats = {
        "before_mape": float(np.mean(np.abs(np.expm1(before)))),
        "after_mape": float(np.mean(np.abs(np.expm1(after)))),
        # the quantity the fit minimises (log residuals); MAPE need not fall with it
        "before_rms_log_error": float(np.sqrt(np.mean(np.square(before)))),
        "after_rms_log_error": float(np.sqrt(np.mean(np.square(after)))),
    }
    if held_out:
        apes = [abs(p / measured(r.row, q) - 1) for r in rows for q in r.cases() if (p := held_out.get((r.row.id, q)))]
        stats.update({"holdout_mape": float(np.mean(apes)), "holdout_cases": float(len(apes))})
    return EntryFit(key, {**base.values, **values}, keep, held, spreads, at_upper, len(rows),
                    sorted({r.row.source for r in rows}), stats, held_out)  # fmt: skip
