"""The report's figures as plotly.js figure specs (``{"data": [...], "layout": {...}}``).

Plain dicts rendered by the plotly.js that :mod:`roofline.report.page` inlines: building them
needs no plotly.py objects, whose validation would cost most of the report's time budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..pareto import OBJECTIVES, frontier_by_group
from ..sweep import SweepResult

Figure = dict[str, Any]

#: Axis titles (with units) and scale factors of the sweep columns the figures plot.
AXES: dict[str, tuple[str, float]] = {
    "step_time_s": ("per-token latency, step time (ms)", 1e3),
    "tokens_per_s_per_chip": ("throughput (tokens/s per chip)", 1.0),
    "tokens_per_s_per_user": ("interactivity (tokens/s per user)", 1.0),
    "cost_per_million_tokens": ("cost ($ per million tokens)", 1.0),
}
HOVER_FIELDS = ("hardware", "chips", "tp", "batch", "weights", "kv_dtype", "context", "step_time_s",
                "tokens_per_s_per_chip", "tokens_per_s_per_user", "cost_per_million_tokens", "bound", "topology")
HOVER = (
    "<b>%{customdata[0]}</b> × %{customdata[1]} chips %{customdata[12]} (tp=%{customdata[2]})<br>"
    "batch %{customdata[3]}, context %{customdata[6]}<br>"
    "weights %{customdata[4]}, KV %{customdata[5]}<br>"
    "step %{customdata[7]:.3f} ms · %{customdata[8]:,.1f} tok/s/chip<br>"
    "%{customdata[9]:,.1f} tok/s/user · $%{customdata[10]:.3f}/Mtok<br>"
    "bound: %{customdata[11]}<extra></extra>"
)
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
GRID = {"gridcolor": "#e4e7eb", "zerolinecolor": "#cbd2d9", "linecolor": "#9aa5b1", "showline": True}


def needs_log_axis(values: Any) -> bool:
    """Log scale when positive values span more than a factor of 20."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(v.size) and float(v.max() / v.min()) > 20.0


def axis(title: str, values: Any = None, log: bool | None = None) -> dict[str, Any]:
    """An axis with its title; log when ``log`` says so or the values span > 20×."""
    use_log = needs_log_axis(values) if log is None else log
    return {"title": {"text": title}, "type": "log" if use_log else "linear", **GRID}


def layout(title: str, x: dict[str, Any], y: dict[str, Any], legend: str = "") -> dict[str, Any]:
    """Shared look: white background, title, legend title, margins."""
    return {"title": {"text": title}, "xaxis": x, "yaxis": y, "height": 460, "hovermode": "closest",
            "legend": {"title": {"text": legend}}, "paper_bgcolor": "white", "plot_bgcolor": "white",
            "margin": {"l": 70, "r": 20, "t": 60, "b": 60}, "font": {"size": 12}}


def line_trace(x: Any, y: Any, name: str, color: str, dash: str = "solid", hover: str = "",
               mode: str = "lines", **extra: Any) -> dict[str, Any]:
    """A scatter trace (lists, so the spec is plain JSON)."""
    trace = {"type": "scatter", "x": np.asarray(x).tolist(), "y": np.asarray(y).tolist(), "name": name,
             "mode": mode, "line": {"color": color, "dash": dash}}
    if hover:
        trace["hovertemplate"] = hover
    trace.update(extra)
    return trace


def hover_data(result: SweepResult, idx: np.ndarray) -> list[list[Any]]:
    """customdata rows for the hover template (step time in ms)."""
    cols = [result.column(name)[idx] for name in HOVER_FIELDS]
    cols[7] = cols[7] * 1e3
    return [list(row) for row in zip(*(c.tolist() for c in cols), strict=True)]


def frontier_figure(result: SweepResult, objective: str, title: str, group: str = "hardware") -> Figure:
    """One trace per ``group`` value (chip by default): its frontier points, best x first."""
    x_col, _, y_col, _ = OBJECTIVES[objective]
    (x_title, x_scale), (y_title, y_scale) = AXES[x_col], AXES[y_col]
    traces, xs, ys = [], [], []
    frontiers = frontier_by_group(result.columns, result.group_labels(group), objective)
    for i, (key, idx) in enumerate(frontiers.items()):
        x = result.columns[x_col][idx] * x_scale
        y = result.columns[y_col][idx] * y_scale
        xs.append(x)
        ys.append(y)
        traces.append(line_trace(x, y, str(key), COLORS[i % len(COLORS)], hover=HOVER, mode="lines+markers",
                                 customdata=hover_data(result, idx)))
        traces[-1]["line"]["shape"] = "hv"
    all_x = np.concatenate(xs) if xs else np.zeros(0)
    all_y = np.concatenate(ys) if ys else np.zeros(0)
    return {"data": traces, "layout": layout(title, axis(x_title, all_x), axis(y_title, all_y), group)}


def throughput_vs_batch_figure(
    curves: Sequence[dict[str, Any]], book: Sequence[dict[str, Any]], critical_batch: float, title: str
) -> Figure:
    """tokens/s vs batch per curve (solid where it fits in HBM, dotted where not), the book's
    table values as markers, and the critical batch as a vertical line."""
    traces = []
    for i, c in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        b, tps, fits = np.asarray(c["batch"]), np.asarray(c["tokens_per_s"]), np.asarray(c["fits"])
        traces.append(line_trace(b[fits], tps[fits], f"{c['name']} (fits)", color,
                                 hover="batch %{x}<br>%{y:,.1f} tokens/s<extra></extra>"))
        traces.append(line_trace(b[~fits], tps[~fits], f"{c['name']} (out of HBM)", color, dash="dot",
                                 hover="batch %{x}<br>%{y:,.1f} tokens/s (OOM)<extra></extra>"))
    for i, p in enumerate(book):
        traces.append(line_trace(p["batch"], p["tokens_per_s"], f"the book: {p['name']}",
                                 COLORS[i % len(COLORS)], mode="markers",
                                 hover="the book: batch %{x}<br>%{y:,.2f} tokens/s<extra></extra>",
                                 marker={"color": COLORS[i % len(COLORS)], "symbol": "x", "size": 10}))
    top = max(float(np.max(c["tokens_per_s"])) for c in curves) if curves else 1.0
    label = f"critical batch {critical_batch:.0f}"
    traces.append(line_trace([critical_batch] * 2, [0.0, top], label, "#52606d", dash="dash",
                             hover=label + "<extra></extra>"))
    return {"data": traces, "layout": layout(title, axis("batch size (sequences)", log=True),
                                             axis("throughput (tokens/s, whole slice)", log=False))}


def memory_vs_batch_figure(
    curves: Sequence[dict[str, Any]], capacities: Sequence[dict[str, Any]], title: str
) -> Figure:
    """Weights + KV bytes (GB) vs batch per curve, with one HBM capacity line per slice."""
    traces = [line_trace(c["batch"], np.asarray(c["total_bytes"]) / 1e9, c["name"], COLORS[i % len(COLORS)],
                         hover="batch %{x}<br>%{y:,.1f} GB<extra>" + c["name"] + "</extra>")
              for i, c in enumerate(curves)]
    batches = [float(np.min(c["batch"])) for c in curves] + [float(np.max(c["batch"])) for c in curves]
    span = [min(batches), max(batches)] if batches else [1.0, 1.0]
    for i, cap in enumerate(capacities):
        label = f"HBM {cap['name']}: {cap['bytes'] / 1e9:,.0f} GB"
        traces.append(line_trace(span, [cap["bytes"] / 1e9] * 2, label,
                                 COLORS[(i + len(curves)) % len(COLORS)], dash="dash",
                                 hover=label + "<extra></extra>"))
    return {"data": traces, "layout": layout(title, axis("batch size (sequences)", log=True),
                                             axis("memory: weights + KV cache (GB)", log=True))}
