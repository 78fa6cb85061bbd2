"""Bounded least squares on log error: Levenberg-Marquardt, robust re-weighting, multi-start.

Parameters are positive and mapped into (lo, hi) by a logistic function of a free variable
in log space.  The fit minimises sum(log(predicted / measured)^2), then a few rounds of
iteratively re-weighted least squares approximate least absolute log error, so that a
handful of odd kernel choices do not pull the physical parameters.  It starts from several
points and keeps the one with the least mean absolute log error; a parameter that ends
within 1% (of its log range) of a bound is reported: the data push it out of the model's
range, a sign of a missing term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Share of a parameter's log range next to a bound that counts as "at the bound".
AT_BOUND_FRACTION = 0.01
#: Starting points of every fit: the stated initial values plus seeded perturbations.
STARTS = 4


@dataclass(frozen=True)
class Param:
    """A fitted parameter with its starting value and bounds (all positive, SI units)."""

    name: str
    init: float
    lo: float
    hi: float


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


def starting_points(z0: np.ndarray, starts: int, seed: int) -> list[np.ndarray]:
    """z0 plus ``starts - 1`` seeded normal perturbations (sd 1 in the logistic variable)."""
    rng = np.random.default_rng(seed)
    return [z0] + [z0 + rng.normal(0.0, 1.0, z0.size) for _ in range(starts - 1)]


def fit_params(
    spec: tuple[Param, ...],
    predict_fn: Callable[[dict[str, float]], np.ndarray],
    measured: np.ndarray,
    init: dict[str, float] | None = None,
    robust_rounds: int = 3,
    starts: int = STARTS,
    seed: int = 0,
) -> dict[str, float]:
    """Fit ``spec`` so that log(predict/measured) is small: LS then IRLS ~ L1, best of ``starts``."""
    names = [p.name for p in spec]
    start = np.array([(init or {}).get(p.name, p.init) for p in spec])

    def log_error(z: np.ndarray) -> np.ndarray:
        values = dict(zip(names, _bounded(z, spec), strict=True))
        with np.errstate(all="ignore"):
            out = np.log(predict_fn(values) / measured)
        return np.where(np.isfinite(out), out, 50.0)

    best, best_cost = None, np.inf
    for z in starting_points(_unbounded(start, spec), starts, seed):
        z = levenberg_marquardt(log_error, z)
        for _ in range(robust_rounds):
            weight = 1.0 / np.sqrt(np.maximum(np.abs(log_error(z)), 0.02))
            z = levenberg_marquardt(lambda v, w=weight: log_error(v) * w, z)
        cost = float(np.mean(np.abs(log_error(z))))
        if cost < best_cost:
            best, best_cost = z, cost
    return {n: float(v) for n, v in zip(names, _bounded(best, spec), strict=True)}


def at_bound(spec: tuple[Param, ...], values: dict[str, float]) -> list[str]:
    """Names of fitted parameters within AT_BOUND_FRACTION of the log range of a bound."""
    out = []
    for p in spec:
        if p.name not in values:
            continue
        frac = (np.log(values[p.name]) - np.log(p.lo)) / (np.log(p.hi) - np.log(p.lo))
        if frac < AT_BOUND_FRACTION or frac > 1.0 - AT_BOUND_FRACTION:
            out.append(p.name)
    return out
