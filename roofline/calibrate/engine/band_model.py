"""The spread of log(measured / predicted) expected on a source not seen: a source's offset plus the scatter
within a source (a random-effects, or one-way variance-components, predictive interval).

The residuals of one data tier fall in cells, one per (source, quantity).  A row's log ratio is
r = μ_q + b + e: μ_q the quantity's centre, b the offset of its cell (an engine, a harness, a chip's
kernels: what the source shares), e its scatter within the cell.  Pooling rows instead (each row one
vote) lets the largest source set the band and calls a new source's offset noise it never saw.  Here

* μ_q is the mean of the quantity's cell medians (each source one vote);
* b ~ N(0, τ²·(1 + 1/k_q)), τ² the variance of cell medians about their quantity's centre (pooled over
  quantities: Σ dev² / (cells − quantities)), 1/k_q the uncertainty of a centre from k_q cells;
* e is drawn from the cells' pooled deviations from their own medians (their skew kept);

so the predictive CDF is F(x) = mean_i Φ((x − μ_q − e_i) / σ_b).  With too few cells to estimate τ²
(cells − quantities < 1) the band is the rows' pooled quantiles, and says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: A residual: (source, quantity, log(measured / predicted)).
Residual = tuple[str, str, float]
#: Fewest rows a cell needs to give a median and its scatter.
MIN_CELL_ROWS = 2


@dataclass(frozen=True)
class Spread:
    """What a band rests on: the quantity's centre, the offset sd of a new source, the within-source deviations."""

    centre: float
    offset_sd: float
    within: np.ndarray
    cells: int
    method: str


def cells_of(residuals: Sequence[Residual]) -> dict[tuple[str, str], np.ndarray]:
    """(source, quantity) -> its log ratios."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for source, quantity, r in residuals:
        out[(source, quantity)].append(r)
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def spread_for(residuals: Sequence[Residual], quantity: str) -> Spread | None:
    """The random-effects spread of ``quantity`` from ``residuals`` (all quantities inform τ² and the
    within-source scatter); None when no cell has the quantity."""
    cells = {k: v for k, v in cells_of(residuals).items() if v.size >= MIN_CELL_ROWS}
    medians = {k: float(np.median(v)) for k, v in cells.items()}
    mine = [m for (_, q), m in medians.items() if q == quantity]
    if not mine:
        return None
    quantities = {q for _, q in medians}
    centres = {q: float(np.mean([m for (_, qq), m in medians.items() if qq == q])) for q in quantities}
    dof = len(medians) - len(quantities)
    within = np.concatenate([v - medians[k] for k, v in cells.items()])
    if dof < 1:
        pooled = np.concatenate([v for (_, q), v in cells.items() if q == quantity])
        return Spread(0.0, 0.0, pooled, len(mine), "pooled rows (too few sources for a between-source spread)")
    tau2 = sum((m - centres[q]) ** 2 for (_, q), m in medians.items()) / dof
    offset_sd = float(np.sqrt(tau2 * (1.0 + 1.0 / len(mine))))
    method = f"between-source sd {np.sqrt(tau2):.3f} over {len(medians)} cells + within-source scatter"
    return Spread(centres[quantity], offset_sd, within, len(mine), method)


def quantiles(spread: Spread, levels: Sequence[float]) -> np.ndarray:
    """log ratios at cumulative probabilities ``levels`` of F(x) = mean_i Φ((x − μ − e_i) / σ_b)."""
    from scipy.special import ndtr

    e = np.sort(spread.within)
    if spread.offset_sd <= 0.0:
        return spread.centre + np.quantile(e, levels)
    s = spread.offset_sd
    x = spread.centre + np.linspace(e[0] - 6.0 * s, e[-1] + 6.0 * s, 1201)
    cdf = ndtr((x[:, None] - spread.centre - e[None, :]) / s).mean(axis=1)
    return np.interp(levels, cdf, x)


def held_out_coverage(residuals: Sequence[Residual], quantity: str) -> tuple[float, dict[str, float]]:
    """Share of ``quantity``'s rows inside the p10-p90 band built without their source: pooled over the rows,
    and per source."""
    sources = sorted({s for s, q, _ in residuals if q == quantity})
    inside = total = 0
    per: dict[str, float] = {}
    for source in sources:
        spread = spread_for([r for r in residuals if r[0] != source], quantity)
        if spread is None:
            continue
        lo, hi = quantiles(spread, (0.1, 0.9))
        test = [r for s, q, r in residuals if s == source and q == quantity]
        hits = sum(lo <= r <= hi for r in test)
        per[source] = hits / len(test)
        inside, total = inside + hits, total + len(test)
    return (inside / total if total else float("nan")), per
