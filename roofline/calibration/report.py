"""The calibration report: one self-contained offline HTML page (plotly.js inlined once).

Per op class: predicted vs measured on log-log axes (spec roofline and calibrated model),
the distribution of relative errors, and achieved efficiency against problem size.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_bytes_atomic
from ..specs import HardwareSpec
from .keys import base_op
from .models import attention_flops, bus_bytes, gemm_flops
from .predict import predict_op, row_entry_keys, shapes
from .schema import COLLECTIVE_OPS, Measurements

MAX_POINTS = 3000


def _size_and_efficiency(key: str, rows: Measurements, hw: HardwareSpec) -> tuple[
        np.ndarray, np.ndarray, str, str]:
    """(problem size, achieved fraction of peak, axis titles) for the efficiency panel."""
    s, t = shapes(rows), rows["time_s"]
    op = base_op(key)
    if op in COLLECTIVE_OPS:
        bb = bus_bytes(op, s["message_bytes"], s["num_devices"])
        return s["message_bytes"], bb / t / hw.ici_bandwidth_bytes_per_s, \
            "message bytes", "bus bandwidth / link spec"
    if op == "gemm":
        flops = gemm_flops(s["m"], s["n"], s["k"])
    else:
        flops = attention_flops(s)
    if op == "attention_decode":
        kv = 2 * s["batch"] * s["kv_len"] * s["num_kv_heads"] * s["head_dim"] * s["width"]
        return s["batch"] * s["kv_len"], kv / t / hw.hbm_bandwidth_bytes_per_s, \
            "batch x KV length", "KV bandwidth / HBM spec"
    peak = np.array([hw.flops_per_s.get(d, max(hw.flops_per_s.values())) for d in rows["dtype"]])
    return flops, flops / t / peak, "FLOPs", "achieved FLOP/s / peak"


def op_figure(key: str, rows: Measurements, hw: HardwareSpec, params: dict[str, float]) -> Any:
    """Three panels for one op class: predicted vs measured, error histogram, efficiency."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if len(rows) > MAX_POINTS:
        pick = np.random.default_rng(0).choice(len(rows), MAX_POINTS, replace=False)
        rows = rows.take(np.sort(pick))
    measured = rows["time_s"]
    spec = predict_op(key, rows, hw, None)
    fitted = predict_op(key, rows, hw, params)
    size, eff, size_title, eff_title = _size_and_efficiency(key, rows, hw)
    fig = make_subplots(rows=1, cols=3, subplot_titles=(
        "predicted vs measured (s)", "relative error (predicted / measured - 1)",
        "efficiency vs size"))
    marker = {"size": 4, "opacity": 0.5}
    fig.add_trace(go.Scattergl(x=measured, y=spec, mode="markers", name="spec roofline",
                               marker=marker), 1, 1)
    fig.add_trace(go.Scattergl(x=measured, y=fitted, mode="markers", name="calibrated",
                               marker=marker), 1, 1)
    line = [float(measured.min()), float(measured.max())]
    fig.add_trace(go.Scatter(x=line, y=line, mode="lines", name="y = x",
                             line={"color": "black", "dash": "dot"}), 1, 1)
    for name, pred in (("spec roofline", spec), ("calibrated", fitted)):
        err = np.clip(pred / measured - 1.0, -1.0, 2.0)
        fig.add_trace(go.Histogram(x=err, name=f"{name} error", opacity=0.6, nbinsx=60), 1, 2)
    fig.add_trace(go.Scattergl(x=size, y=eff, mode="markers", name="measured efficiency",
                               marker=marker), 1, 3)
    fig.add_trace(go.Scattergl(x=size, y=eff * measured / fitted, mode="markers",
                               name="calibrated model efficiency", marker=marker), 1, 3)
    fig.update_xaxes(type="log", title_text="measured", row=1, col=1)
    fig.update_yaxes(type="log", title_text="predicted", row=1, col=1)
    fig.update_xaxes(title_text="relative error", row=1, col=2)
    fig.update_xaxes(type="log", title_text=size_title, row=1, col=3)
    fig.update_yaxes(title_text=eff_title, row=1, col=3)
    fig.update_layout(title_text=f"{key}: {len(rows)} rows", barmode="overlay", height=420)
    return fig


def _stats_table(fits: dict[str, Any]) -> str:
    head = ("entry", "rows", "spec MAPE", "constant MAPE", "calibrated MAPE",
            "held-out random (spec / calibrated)", "held-out shape range (spec / calibrated)",
            "parameters at a bound (missing terms)")
    lines = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]

    def pct(v: float | None) -> str:
        return "-" if v is None or not np.isfinite(v) else f"{100 * v:.1f}%"

    for key, fit in fits.items():
        s, r, g = fit.stats, fit.random, fit.shape_range
        cells = (key, f"{int(s['after_n'])}", pct(s.get("before_mape")),
                 pct(s.get("constant_mape")), pct(s.get("after_mape")),
                 f"{pct(r.get('before_mape'))} / {pct(r.get('after_mape'))}",
                 f"{pct(g.get('before_mape'))} / {pct(g.get('after_mape'))}",
                 ", ".join(fit.at_bound) or "-")
        lines.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(lines + ["</table>"])


def render_calibration_report(profile: HardwareSpec, fits: dict[str, Any],
                              table: Measurements) -> str:
    """The report page as an HTML string (plotly.js inlined once, works offline)."""
    import plotly.io as pio

    keys = row_entry_keys(table)
    parts = []
    for i, (key, fit) in enumerate(fits.items()):
        fig = op_figure(key, table.take(keys == key), profile, fit.params)
        parts.append(pio.to_html(fig, include_plotlyjs=(i == 0), full_html=False))
    title = f"roofline calibration report: {html.escape(profile.name)}"
    style = ("body{font-family:sans-serif;margin:2em} table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}")
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body><h1>{title}</h1>"
        "<p>MAPE = mean absolute relative error of predicted kernel time.  Spec = the "
        "datasheet roofline; constant = fitted constant efficiencies and overhead; "
        "calibrated = the shape-dependent model.  Held-out: fitted on the other rows.</p>"
        f"{_stats_table(fits)}{''.join(parts)}</body></html>"
    )


def write_calibration_report(path: str | Path, profile: HardwareSpec, fits: dict[str, Any],
                             table: Measurements) -> Path:
    """Write the HTML report to ``path`` atomically and return the path."""
    path = Path(path)
    write_bytes_atomic(path, render_calibration_report(profile, fits, table).encode("utf-8"))
    return path
