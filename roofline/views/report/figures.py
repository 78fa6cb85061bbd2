"""The report's figures as plotly.js figure specs (``{"data": [...], "layout": {...}}``).

Plain dicts rendered by the plotly.js that :mod:`roofline.views.report.page` inlines: building them
needs no plotly.py objects, whose validation would cost most of the report's time budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline.analyses.pareto import OBJECTIVES
from roofline.analyses.sweep.run import SweepResult

Figure = dict[str, object]

#: Axis titles (with units) and scale factors of the sweep columns the figures plot.
AXES: dict[str, tuple[str, float]] = {
    "step_time_s": ("per-token latency, step time (ms)", 1e3),
    "tokens_per_s_per_chip": ("throughput (tokens/s per chip)", 1.0),
    "tokens_per_s_per_user": ("interactivity (tokens/s per user)", 1.0),
    "cost_per_million_tokens": ("cost ($ per million tokens)", 1.0),
}
HOVER_FIELDS = (
    "hardware",
    "chips",
    "tp",
    "batch",
    "weights",
    "kv_dtype",
    "context",
    "step_time_s",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_user",
    "cost_per_million_tokens",
    "bound",
    "topology",
)
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
#: The one look of every page's figures (report, pareto, calibration, validate, simulate).
THEME: dict[str, object] = {
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
    "colorway": list(COLORS),
    "font": {"size": 12, "family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"},
    "hovermode": "closest",
    "margin": {"l": 70, "r": 20, "t": 60, "b": 60},
}
#: Log axes span more than this factor; their ticks are 1-2-5 within ~2.5 decades, powers of ten beyond.
LOG_SPAN = 20.0
DECADE_TICKS = 2.5


def needs_log_axis(values: object) -> bool:
    """Log scale when positive values span more than a factor of 20."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(v.size) and float(v.max() / v.min()) > LOG_SPAN


def tick_label(value: float) -> str:
    """1, 20, 500, 2k, 10k, 1M, 0.05: short and exact for 1-2-5 ticks."""
    for scale, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def log_ticks(values: object) -> dict[str, object]:
    """Readable log ticks: 1, 2, 5 per decade within ~2.5 decades, else one per decade, fully labelled."""
    v = np.asarray(values if values is not None else [], dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return {}
    lo, hi = np.floor(np.log10(v.min())), np.ceil(np.log10(v.max()))
    steps = (1.0,) if hi - lo > DECADE_TICKS else (1.0, 2.0, 5.0)
    ticks = [m * 10.0**e for e in np.arange(lo, hi + 1) for m in steps]
    ticks = [t for t in ticks if v.min() / 1.5 <= t <= v.max() * 1.5] or [10.0**lo]
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [tick_label(t) for t in ticks]}


def axis(title: str, values: object = None, log: bool | None = None) -> dict[str, object]:
    """An axis with its title; log when ``log`` says so or the values span > 20×, with readable ticks."""
    use_log = needs_log_axis(values) if log is None else log
    ticks = log_ticks(values) if use_log else {}
    return {"title": {"text": title}, "type": "log" if use_log else "linear", **GRID, **ticks}


def themed(fig_layout: dict[str, object]) -> dict[str, object]:
    """``fig_layout`` in the shared theme: colours, font, margins, and the grid on every axis."""
    out = {**THEME, **fig_layout}
    for key, value in fig_layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(value, dict):
            out[key] = {**GRID, **value}
    return out


def layout(title: str, x: dict[str, object], y: dict[str, object], legend: str = "") -> dict[str, object]:
    """Shared look: the theme, a title, a legend title."""
    return themed(
        {"title": {"text": title}, "xaxis": x, "yaxis": y, "height": 460, "legend": {"title": {"text": legend}}}
    )


def line_trace(
    x: object,
    y: object,
    name: str,
    color: str,
    dash: str = "solid",
    hover: str = "",
    mode: str = "lines",
    **extra: object,
) -> dict[str, object]:
    """A scatter trace (lists, so the spec is plain JSON)."""
    trace = {
        "type": "scatter",
        "x": np.asarray(x).tolist(),
        "y": np.asarray(y).tolist(),
        "name": name,
        "mode": mode,
        "line": {"color": color, "dash": dash},
    }
    if hover:
        trace["hovertemplate"] = hover
    trace.update(extra)
    return trace


def hover_data(result: SweepResult, idx: np.ndarray) -> list[list[object]]:
    """customdata rows for the hover template (step time in ms)."""
    points = result.select(idx)
    cols = [points.column(name) for name in HOVER_FIELDS]
    cols[7] = cols[7] * 1e3
    return [list(row) for row in zip(*(c.tolist() for c in cols), strict=True)]


def frontier_figure(result: SweepResult, objective: str, title: str, group: str = "hardware") -> Figure:
    """One trace per ``group`` value (chip by default): its frontier points, best x first."""
    x_col, _, y_col, _ = OBJECTIVES[objective]
    (x_title, x_scale), (y_title, y_scale) = AXES[x_col], AXES[y_col]
    traces, xs, ys = [], [], []
    frontiers = result.frontiers(objective, group)
    for i, (key, idx) in enumerate(frontiers.items()):
        x = result.columns[x_col][idx] * x_scale
        y = result.columns[y_col][idx] * y_scale
        xs.append(x)
        ys.append(y)
        traces.append(
            line_trace(
                x,
                y,
                str(key),
                COLORS[i % len(COLORS)],
                hover=HOVER,
                mode="lines+markers",
                customdata=hover_data(result, idx),
            )
        )
        traces[-1]["line"]["shape"] = "hv"
    all_x = np.concatenate(xs) if xs else np.zeros(0)
    all_y = np.concatenate(ys) if ys else np.zeros(0)
    return {"data": traces, "layout": layout(title, axis(x_title, all_x), axis(y_title, all_y), group)}


@dataclass(frozen=True)
class FrontierTrace:
    """One trace of the report's frontiers: a chip file's bound or prediction points.

    ``domain`` is the chip's scale-up domain (max_ici_domain_chips): points with a larger tp
    cross the scale-out network and are drawn with a cross.
    """

    name: str
    kind: str
    color: str
    result: SweepResult
    domain: int | None = None
    #: The model the trace belongs to on a page with a model control (its ``meta.model``); "" for none.
    model: str = ""
    visible: bool = True


#: Line and marker style of each kind of trace (the page's first lines say what each is).
KIND_STYLE = {"bound": {"dash": "dot", "symbol": "circle-open"}, "prediction": {"dash": "solid", "symbol": "circle"}}
SCALE_OUT_SYMBOL = "x"
KIND_HOVER = "<i>%{fullData.name}</i> · %{customdata[13]}<br>"


def trace_frontier_figure(traces: Sequence[FrontierTrace], objective: str, title: str) -> Figure:
    """Each trace's own frontier for ``objective``: bounds dotted with open markers, predictions solid."""
    x_col, _, y_col, _ = OBJECTIVES[objective]
    (x_title, x_scale), (y_title, y_scale) = AXES[x_col], AXES[y_col]
    data, xs, ys = [], [], []
    for tr in traces:
        if len(tr.result) == 0:
            continue
        idx = tr.result.frontiers(objective, "all")["all"]
        x, y = tr.result.columns[x_col][idx] * x_scale, tr.result.columns[y_col][idx] * y_scale
        xs.append(x)
        ys.append(y)
        tp = tr.result.columns["tp"][idx]
        out = (tp > tr.domain) if tr.domain else np.zeros(tp.shape, dtype=bool)
        notes = np.where(out, "tp across the scale-out network", "tp within one scale-up domain")
        style = KIND_STYLE[tr.kind]
        custom = [row + [note] for row, note in zip(hover_data(tr.result, idx), notes.tolist(), strict=True)]
        symbols = np.where(out, SCALE_OUT_SYMBOL, style["symbol"]).tolist()
        data.append(
            line_trace(
                x,
                y,
                tr.name,
                tr.color,
                dash=style["dash"],
                hover=KIND_HOVER + HOVER,
                mode="lines+markers",
                customdata=custom,
                legendgroup=tr.name.split(" · ")[0],
                marker={"color": tr.color, "symbol": symbols, "size": 7},
            )
        )
        data[-1]["line"]["shape"] = "hv"
        if tr.model:
            data[-1].update(meta={"model": tr.model}, visible=tr.visible)
    all_x = np.concatenate(xs) if xs else np.zeros(0)
    all_y = np.concatenate(ys) if ys else np.zeros(0)
    return {"data": data, "layout": layout(title, axis(x_title, all_x), axis(y_title, all_y), "trace")}


def throughput_vs_batch_figure(
    curves: Sequence[dict[str, object]], book: Sequence[dict[str, object]], critical_batch: float, title: str
) -> Figure:
    """tokens/s vs batch per curve (solid where it fits in HBM, dotted where not), the book's
    table values as markers, and the critical batch as a vertical line."""
    traces = []
    for i, c in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        b, tps, fits = np.asarray(c["batch"]), np.asarray(c["tokens_per_s"]), np.asarray(c["fits"])
        traces.append(
            line_trace(
                b[fits],
                tps[fits],
                f"{c['name']} (fits)",
                color,
                hover="batch %{x}<br>%{y:,.1f} tokens/s<extra></extra>",
            )
        )
        traces.append(
            line_trace(
                b[~fits],
                tps[~fits],
                f"{c['name']} (out of HBM)",
                color,
                dash="dot",
                hover="batch %{x}<br>%{y:,.1f} tokens/s (OOM)<extra></extra>",
            )
        )
    for i, p in enumerate(book):
        traces.append(
            line_trace(
                p["batch"],
                p["tokens_per_s"],
                f"the book: {p['name']}",
                COLORS[i % len(COLORS)],
                mode="markers",
                hover="the book: batch %{x}<br>%{y:,.2f} tokens/s<extra></extra>",
                marker={"color": COLORS[i % len(COLORS)], "symbol": "x", "size": 10},
            )
        )
    top = max(float(np.max(c["tokens_per_s"])) for c in curves) if curves else 1.0
    low = min(float(np.min(c["tokens_per_s"])) for c in curves) if curves else 1.0
    label = f"critical batch {critical_batch:.0f}"
    traces.append(
        line_trace([critical_batch] * 2, [low, top], label, "#52606d", dash="dash", hover=label + "<extra></extra>")
    )
    values = np.concatenate([np.asarray(c["tokens_per_s"], dtype=float) for c in curves]) if curves else None
    return {
        "data": traces,
        "layout": layout(
            title,
            axis("batch size (sequences)", np.asarray([1.0, 512.0])),
            axis("throughput (tokens/s, whole slice)", values),
        ),
    }


def memory_vs_batch_figure(
    curves: Sequence[dict[str, object]], capacities: Sequence[dict[str, object]], title: str
) -> Figure:
    """Weights + KV bytes (GB) vs batch per curve, with one HBM capacity line per slice."""
    traces = [
        line_trace(
            c["batch"],
            np.asarray(c["total_bytes"]) / 1e9,
            c["name"],
            COLORS[i % len(COLORS)],
            hover="batch %{x}<br>%{y:,.1f} GB<extra>" + c["name"] + "</extra>",
        )
        for i, c in enumerate(curves)
    ]
    batches = [float(np.min(c["batch"])) for c in curves] + [float(np.max(c["batch"])) for c in curves]
    span = [min(batches), max(batches)] if batches else [1.0, 1.0]
    for i, cap in enumerate(capacities):
        label = f"HBM {cap['name']}: {cap['bytes'] / 1e9:,.0f} GB"
        traces.append(
            line_trace(
                span,
                [cap["bytes"] / 1e9] * 2,
                label,
                COLORS[(i + len(curves)) % len(COLORS)],
                dash="dash",
                hover=label + "<extra></extra>",
            )
        )
    gb = np.concatenate(
        [np.asarray(c["total_bytes"], dtype=float) / 1e9 for c in curves]
        + [np.asarray([cap["bytes"] / 1e9]) for cap in capacities]
    )
    return {
        "data": traces,
        "layout": layout(
            title,
            axis("batch size (sequences)", np.asarray(span), log=True),
            axis("memory: weights + KV cache (GB)", gb, log=True),
        ),
    }
