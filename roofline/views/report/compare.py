"""``roofline report --compare A B``: the two entries' frontiers as ratios at equal interactivity.

The frontiers themselves share the page's axes (the frontier figures draw both entries); this section
adds, per model, B's tokens/s per chip and $ per million tokens over A's at each level of interactivity
both reach (:func:`roofline.analyses.compare.frontier_ratio`, on the prediction points the frontier
figures draw).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import numpy as np

from roofline.analyses.compare import FrontierRatio, frontier_ratio
from roofline.views.report.figures import COLORS, axis, layout
from roofline.views.report.runs import ModelRun
from roofline.views.report.scenario import HardwareRef, Scenario

#: (sweep column, maximised, words) of each ratio drawn.
RATIOS = (
    ("tokens_per_s_per_chip", True, "tokens/s per chip"),
    ("cost_per_million_tokens", False, "$ per million tokens"),
)


def _points(run: ModelRun, ref: HardwareRef, scenario: Scenario) -> object:
    pred = run.predicted
    keep = pred.column("hardware") == ref.label
    if ref.domain and not scenario.scale_out_tp:
        keep &= np.asarray(pred.columns["tp"]) <= ref.domain
    return pred.select(np.flatnonzero(keep))


def ratios(run: ModelRun, refs: Sequence[HardwareRef], scenario: Scenario) -> dict[str, FrontierRatio]:
    """B over A for each of :data:`RATIOS`, against interactivity (tokens/s per user)."""
    a, b = (_points(run, r, scenario) for r in refs[:2])
    x = "tokens_per_s_per_user"
    return {
        col: frontier_ratio(a.columns[x], a.columns[col], b.columns[x], b.columns[col], maximize)
        for col, maximize, _ in RATIOS
    }


def ratio_figure(by_model: Mapping[str, dict[str, FrontierRatio]], refs: Sequence[HardwareRef]) -> dict[str, object]:
    """Per model (one shown at a time): each ratio against interactivity, with the line of parity."""
    a, b = refs[0].label, refs[1].label
    data, xs, ys = [], [], []
    for i, (model, found) in enumerate(by_model.items()):
        for j, (col, _, words) in enumerate(RATIOS):
            fr = found[col]
            ok = np.isfinite(fr.ratio)
            xs.append(fr.levels[ok])
            ys.append(fr.ratio[ok])
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": fr.levels[ok].tolist(),
                    "y": fr.ratio[ok].tolist(),
                    "name": f"{words}: {b} / {a}",
                    "line": {"color": COLORS[j], "shape": "hv"},
                    "hovertemplate": f"{html.escape(words)} at ≥ %{{x:,.1f}} tokens/s per user: "
                    f"{html.escape(b)} is %{{y:.2f}}× {html.escape(a)}<extra></extra>",
                    "meta": {"model": model},
                    "visible": i == 0,
                }
            )
    x_all = np.concatenate(xs) if xs else np.ones(1)
    y_all = np.concatenate([*ys, np.ones(1)])
    span = [float(x_all.min()), float(x_all.max())] if x_all.size else [1.0, 1.0]
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": span,
            "y": [1.0, 1.0],
            "name": "parity",
            "line": {"color": "#52606d", "dash": "dot", "width": 1},
            "hoverinfo": "skip",
        }
    )
    fig_layout = layout(
        f"{b} over {a} at equal interactivity (the ratio of their frontiers)",
        axis("interactivity (tokens/s per user)", x_all),
        axis(f"{b} / {a}", y_all, log=True),
        "ratio",
    )
    return {"data": data, "layout": fig_layout}


def ratio_notes(by_model: Mapping[str, dict[str, FrontierRatio]], refs: Sequence[HardwareRef]) -> list[str]:
    """One line per model: the median ratios over the interactivity both entries reach."""
    a, b = (html.escape(r.label) for r in refs[:2])
    items = []
    for model, found in by_model.items():
        tp, cost = found["tokens_per_s_per_chip"], found["cost_per_million_tokens"]
        if not tp.levels.size or not np.isfinite(tp.median_ratio):
            items.append(f"<li><b>{html.escape(model)}</b>: the two frontiers share no interactivity level.</li>")
            continue
        items.append(
            f"<li><b>{html.escape(model)}</b>: from {tp.levels[0]:,.1f} to {tp.levels[-1]:,.1f} tokens/s per user, "
            f"{b} delivers a median {tp.median_ratio:.2f}× the tokens/s per chip of {a} at "
            f"{cost.median_ratio:.2f}× its $ per million tokens.</li>"
        )
    return items
