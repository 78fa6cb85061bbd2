"""Two frontiers side by side: each one's best value at a common level of the other objective, and their ratio.

A frontier over (x, y) with x to be maximised (interactivity, tokens/s per user) answers "the best y
among configurations whose x is at least u": a step function of u, non-increasing for a maximised y
(non-decreasing for a minimised one).  Two of them are compared on a common grid of u where both are
defined (the overlap of their x ranges), point by point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError

#: Grid points of a comparison (log-spaced over the overlap of the two x ranges).
GRID_POINTS = 64


def best_at_least(x: ArrayLike, y: ArrayLike, levels: ArrayLike, maximize: bool = True) -> np.ndarray:
    """For each level u: the best y (max, or min with ``maximize`` False) over points with x ≥ u; NaN if none."""
    xs, ys, u = (np.asarray(v, dtype=float).reshape(-1) for v in (x, y, levels))
    if xs.shape != ys.shape:
        raise OptionError("x and y must have the same length", parameters=("x", "y"))
    out = np.full(u.shape, np.nan)
    if xs.size == 0:
        return out
    order = np.argsort(-xs, kind="stable")  # x descending: a prefix holds every point with x >= u
    best = (np.maximum if maximize else np.minimum).accumulate(ys[order])
    count = np.searchsorted(-xs[order], -u, side="right")  # points with x >= u
    ok = count > 0
    out[ok] = best[count[ok] - 1]
    return out


@dataclass(frozen=True)
class FrontierRatio:
    """Two frontiers of y against a common x grid, and ``b / a`` point by point (NaN outside the overlap)."""

    levels: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @property
    def ratio(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.b / self.a

    @property
    def median_ratio(self) -> float:
        """The median of b / a over the grid (NaN when the frontiers do not overlap)."""
        r = self.ratio[np.isfinite(self.ratio)]
        return float(np.median(r)) if r.size else float("nan")


def frontier_ratio(
    x_a: ArrayLike,
    y_a: ArrayLike,
    x_b: ArrayLike,
    y_b: ArrayLike,
    maximize: bool = True,
    points: int = GRID_POINTS,
) -> FrontierRatio:
    """Both frontiers (best y at x ≥ u) on a log grid of u over the overlap of the two x ranges."""
    xa, xb = (np.asarray(v, dtype=float) for v in (x_a, x_b))
    xa, xb = xa[np.isfinite(xa) & (xa > 0)], xb[np.isfinite(xb) & (xb > 0)]
    if xa.size == 0 or xb.size == 0:
        empty = np.zeros(0)
        return FrontierRatio(empty, empty, empty)
    lo, hi = max(xa.min(), xb.min()), min(xa.max(), xb.max())
    if not lo <= hi:
        empty = np.zeros(0)
        return FrontierRatio(empty, empty, empty)
    levels = np.geomspace(lo, hi, points) if hi > lo else np.array([lo])
    return FrontierRatio(levels, best_at_least(x_a, y_a, levels, maximize), best_at_least(x_b, y_b, levels, maximize))
