"""Pareto frontiers of two objectives in O(n log n), and the frontiers the report draws.

A point is on the frontier when no other point is at least as good on both objectives and
strictly better on one.  Sort by the first objective (best first, ties broken by the second,
best first) and keep each point that beats the best second objective seen so far: one sort
and one running maximum.  Pure functions of numbers; ``sense`` is ``"min"`` or ``"max"``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

Sense = Literal["min", "max"]

#: The frontiers of the book's figure and the issue: (x column, x sense, y column, y sense).
OBJECTIVES: dict[str, tuple[str, Sense, str, Sense]] = {
    # Per-token latency vs throughput per chip (the book's latency/cost Pareto figure).
    "latency-throughput": ("step_time_s", "min", "tokens_per_s_per_chip", "max"),
    # Interactivity (tokens/s seen by one user = 1 / step time) vs tokens/s per chip.
    "interactivity-throughput": ("tokens_per_s_per_user", "max", "tokens_per_s_per_chip", "max"),
    # Dollars per million tokens vs per-token latency.
    "cost-latency": ("step_time_s", "min", "cost_per_million_tokens", "min"),
}


def _as_maximised(values: ArrayLike, sense: Sense) -> np.ndarray:
    """Objective values turned so that larger is better (negated for 'min')."""
    if sense not in ("min", "max"):
        raise ValueError(f"sense must be 'min' or 'max' (got {sense!r})")
    arr = np.asarray(values, dtype=float)
    return -arr if sense == "min" else arr


def _frontier_sorted(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Positions of the non-dominated points of maximised (xs, ys), largest x first.

    One sort by x; points with equal x form a run, and a run's best y (its first such point)
    is kept when it beats the best y of every run before it.
    """
    order = np.argsort(-xs, kind="stable")
    x_sorted, y_sorted = xs[order], ys[order]
    starts = np.flatnonzero(np.r_[True, x_sorted[1:] != x_sorted[:-1]])
    run_best = np.maximum.reduceat(y_sorted, starts)
    best_before = np.empty_like(run_best)
    best_before[0] = -np.inf
    np.maximum.accumulate(run_best[:-1], out=best_before[1:])
    keep_runs = np.flatnonzero(run_best > best_before)
    run_of = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, y_sorted.size]))
    hits = np.flatnonzero(y_sorted == run_best[run_of])
    first_hit = hits[np.r_[True, run_of[hits][1:] != run_of[hits][:-1]]]
    return order[first_hit[keep_runs]]


def _not_dominated_by_sample(xs: np.ndarray, ys: np.ndarray, stride: int = 64) -> np.ndarray:
    """Positions no point of a strided sample's frontier strictly beats (a superset of the frontier).

    The sample frontier is a staircase (x falling, y rising): a point is dominated when the
    last step with x ≥ its x has a larger y; one binary search per point, O(n log m).
    """
    sample = np.arange(0, xs.size, stride)
    stairs = sample[_frontier_sorted(xs[sample], ys[sample])]
    steps = np.searchsorted(-xs[stairs], -xs, side="right")
    best_y = np.r_[-np.inf, ys[stairs]][steps]
    return np.flatnonzero(ys >= best_y)


def pareto_order(x: ArrayLike, y: ArrayLike, x_sense: Sense = "min", y_sense: Sense = "max") -> np.ndarray:
    """Indices of the non-dominated points, best x first; O(n log n), NaNs never on it.

    Large inputs are first screened against the frontier of a 1-in-64 sample (cheap, exact:
    it only removes dominated points), then the survivors are sorted once.
    """
    xs, ys = _as_maximised(x, x_sense), _as_maximised(y, y_sense)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError(f"x and y must be 1-D and the same length (got {xs.shape} and {ys.shape})")
    candidates = np.flatnonzero(~(np.isnan(xs) | np.isnan(ys)))
    if candidates.size == 0:
        return np.zeros(0, dtype=np.int64)
    if candidates.size > 4096:
        candidates = candidates[_not_dominated_by_sample(xs[candidates], ys[candidates])]
    return candidates[_frontier_sorted(xs[candidates], ys[candidates])]


def pareto_mask(x: ArrayLike, y: ArrayLike, x_sense: Sense = "min", y_sense: Sense = "max") -> np.ndarray:
    """True on the points no other point dominates (one copy of exact duplicates kept)."""
    mask = np.zeros(np.shape(x), dtype=bool)
    mask[pareto_order(x, y, x_sense, y_sense)] = True
    return mask


def objective_columns(objective: str) -> tuple[str, Sense, str, Sense]:
    """(x column, x sense, y column, y sense) of a named frontier, or a one-line error."""
    try:
        return OBJECTIVES[objective]
    except KeyError:
        raise ValueError(f"unknown objective {objective!r}; allowed: {', '.join(OBJECTIVES)}") from None


def frontier_of(columns: dict[str, np.ndarray], objective: str) -> np.ndarray:
    """Indices on the named frontier of :data:`OBJECTIVES` for a table of columns."""
    x_col, x_sense, y_col, y_sense = objective_columns(objective)
    return pareto_order(columns[x_col], columns[y_col], x_sense, y_sense)


def frontier_by_group(
    columns: dict[str, np.ndarray], group: ArrayLike, objective: str
) -> dict[object, np.ndarray]:
    """One frontier per value of ``group`` (e.g. per chip): {value: indices, best x first}."""
    x_col, x_sense, y_col, y_sense = objective_columns(objective)
    x, y = np.asarray(columns[x_col]), np.asarray(columns[y_col])
    keys = np.asarray(group)
    out: dict[object, np.ndarray] = {}
    for key in dict.fromkeys(keys.tolist()):
        idx = np.flatnonzero(keys == key)
        out[key] = idx[pareto_order(x[idx], y[idx], x_sense, y_sense)]
    return out
