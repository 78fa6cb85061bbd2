"""Pareto frontiers of two objectives in O(n log n), and the frontiers the report draws.

A point is on the frontier when no other point is at least as good on both objectives and
strictly better on one.  Sort by the first objective (best first, ties broken by the second,
best first) and keep each point that beats the best second objective seen so far: one sort
and one running maximum.  Pure functions of numbers; ``sense`` is ``"min"`` or ``"max"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError, shown

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
    _check_sense(sense)
    arr = np.asarray(values, dtype=float)
    return -arr if sense == "min" else arr


def _check_sense(sense: str) -> None:
    if sense not in ("min", "max"):
        raise ValueError(f"sense must be 'min' or 'max' (got {sense!r})")


def oriented(x: np.ndarray, y: np.ndarray, x_sense: Sense, y_sense: Sense) -> tuple[np.ndarray, np.ndarray]:
    """(sort key: smaller is better, y: larger is better) of two objectives and their senses."""
    return (x if x_sense == "min" else -x), (y if y_sense == "max" else -y)


def _frontier_runs(key: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Positions of the non-dominated points (``key`` smaller is better, ``ys`` larger), best first.

    One stable sort by key; points with equal key form a run, and a run's best y (its first
    such point) is kept when it beats the best y of every run before it.
    """
    order = np.argsort(key, kind="stable")
    x_sorted, y_sorted = key[order], ys[order]
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


def _frontier_sorted(key: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Positions of the non-dominated points (``key`` smaller is better, ``ys`` larger), best first.

    A plain sort by key and a running maximum of y: a point is kept when its y beats every y
    before it.  That is exact unless a kept point shares its key with a neighbour in the
    sorted order (then which of the tied points comes first matters), where the run-based
    scan of :func:`_frontier_runs` decides instead.
    """
    order = np.argsort(key)
    y_sorted = ys[order]
    best_before = np.empty_like(y_sorted)
    best_before[0] = -np.inf
    np.maximum.accumulate(y_sorted[:-1], out=best_before[1:])
    kept = np.flatnonzero(y_sorted > best_before)
    n = order.size
    if 4 * kept.size < n:  # few kept: look at their neighbours only
        here = key[order[kept]]
        tied = (kept > 0) & (key[order[np.maximum(kept - 1, 0)]] == here)
        tied |= (kept < n - 1) & (key[order[np.minimum(kept + 1, n - 1)]] == here)
        has_tie = bool(tied.any())
    else:
        x_sorted = key[order]
        has_tie = bool(np.any(x_sorted[1:] == x_sorted[:-1]))
    return _frontier_runs(key, ys) if has_tie else order[kept]


def key_floor(stair_key: np.ndarray, stair_y: np.ndarray, key: np.ndarray) -> np.ndarray:
    """:func:`staircase_floor` with the x axis as a rising sort key (smaller is better)."""
    # At stair_key[k] the bound is the y of the step before it, so between two steps it stays
    # at or below the true step there; each step is lowered by 1e-9 of the larger magnitude of
    # it and the step before, and all by 8 ulps of the largest |y|: the interpolation's rounding
    # is a few ulps of its larger end, which may be far larger than the step it stands for.
    size = np.abs(stair_y)
    ulps = 8.0 * np.finfo(float).eps * (float(size.max()) if size.size else 0.0)
    steps = stair_y - np.maximum(size, np.r_[size[:1], size[:-1]]) * 1e-9 - ulps
    return np.interp(key, stair_key, np.r_[steps[0], steps[:-1]], left=-np.inf, right=steps[-1])


def staircase_floor(stair_x: ArrayLike, stair_y: ArrayLike, x: ArrayLike) -> np.ndarray:
    """A lower bound on the best y among staircase points with x ≥ ``x`` (−inf where none).

    ``stair_x`` falls and ``stair_y`` rises (a frontier, best x first, both maximised).  The
    bound is a linear interpolation that never exceeds the step it stands for (less a relative
    1e-9 for rounding): one ``np.interp`` instead of a binary search per point.  A point whose
    y is at most the bound is weakly dominated by a staircase point.
    """
    return key_floor(-np.asarray(stair_x, dtype=float), np.asarray(stair_y, dtype=float), -np.asarray(x, dtype=float))


def _not_dominated_by_sample(key: np.ndarray, ys: np.ndarray, stride: int = 64) -> np.ndarray | None:
    """Positions no point of a strided sample's frontier dominates (a superset of the frontier).

    None when the sample's frontier is dense (the screen would keep almost everything).
    """
    sample = np.arange(0, key.size, stride)
    stairs = sample[_frontier_sorted(key[sample], ys[sample])]
    if stairs.size * 8 > sample.size:
        return None
    return np.flatnonzero(ys >= key_floor(key[stairs], ys[stairs], key))


def _real(values: ArrayLike, name: str) -> np.ndarray:
    """A real-valued array (NaN allowed: such points are never on a frontier); text, complex refused."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":
        raise OptionError(f"{name}: must be real numbers (got {shown(values)})", parameters=(name,))
    return arr.astype(float)


def pareto_order(x: ArrayLike, y: ArrayLike, x_sense: Sense = "min", y_sense: Sense = "max") -> np.ndarray:
    """Indices of the non-dominated points, best x first; O(n log n), NaNs never on it.

    Large inputs are first screened against the frontier of a 1-in-64 sample (cheap, exact:
    it only removes dominated points), then the survivors are sorted once.
    """
    _check_sense(x_sense)
    _check_sense(y_sense)
    xa, ya = _real(x, "x"), _real(y, "y")
    if xa.shape != ya.shape or xa.ndim != 1:
        raise OptionError(
            f"x, y: must be 1-D and the same length (got {xa.shape} and {ya.shape})", parameters=("x", "y")
        )
    key, ys = oriented(xa, ya, x_sense, y_sense)
    candidates: np.ndarray | None = None
    if np.isnan(key).any() or np.isnan(ys).any():
        candidates = np.flatnonzero(~(np.isnan(key) | np.isnan(ys)))
        key, ys = key[candidates], ys[candidates]
    if key.size == 0:
        return np.zeros(0, dtype=np.int64)
    if key.size > 4096:
        keep = _not_dominated_by_sample(key, ys)
        if keep is not None and keep.size < key.size:
            candidates = keep if candidates is None else candidates[keep]
            key, ys = key[keep], ys[keep]
    found = _frontier_sorted(key, ys)
    return found if candidates is None else candidates[found]


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
        raise OptionError(f"unknown objective {shown(objective)}; allowed: {', '.join(OBJECTIVES)}") from None


def frontier_of(columns: dict[str, np.ndarray], objective: str) -> np.ndarray:
    """Indices on the named frontier of :data:`OBJECTIVES` for a table of columns."""
    x_col, x_sense, y_col, y_sense = objective_columns(objective)
    missing = [c for c in (x_col, y_col) if not isinstance(columns, Mapping) or c not in columns]
    if missing:
        raise OptionError(
            f"columns: must be a mapping with columns {x_col!r} and {y_col!r} (e.g. a sweep's .columns; "
            f"got {shown(columns)})",
            parameters=("columns",),
        )
    return pareto_order(columns[x_col], columns[y_col], x_sense, y_sense)


def frontier_by_group(columns: dict[str, np.ndarray], group: ArrayLike, objective: str) -> dict[object, np.ndarray]:
    """One frontier per value of ``group`` (e.g. per chip): {value: indices, best x first}."""
    x_col, x_sense, y_col, y_sense = objective_columns(objective)
    x, y = np.asarray(columns[x_col]), np.asarray(columns[y_col])
    keys = np.asarray(group)
    out: dict[object, np.ndarray] = {}
    for key in dict.fromkeys(keys.tolist()):
        idx = np.flatnonzero(keys == key)
        out[key] = idx[pareto_order(x[idx], y[idx], x_sense, y_sense)]
    return out
