"""The calibration report: one self-contained offline HTML page (plotly.js inlined once).

Per op class: predicted vs measured on log-log axes (spec roofline and calibrated model),
the distribution of relative errors, and achieved efficiency against problem size.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from roofline.core.files import write_bytes_atomic
from roofline.kernels.forms import attention_flops, bus_bytes, gemm_flops
from roofline.kernels.keys import base_op
from roofline.kernels.predict import predict_op, row_entry_keys, shapes
from roofline.kernels.schema import COLLECTIVE_OPS, Measurements
from roofline.specs import HardwareSpec

MAX_POINTS = 3000


def _size_and_efficiency(key: str, rows: Measurements, hw: HardwareSpec) -> tuple[np.ndarray, np.ndarray, str, str]:
    """(problem size, achieved fraction of peak, axis titles) for the efficiency panel."""
    s, t = shapes(rows), rows["time_s"]
    op = base_op(key)
    if op in COLLECTIVE_OPS:
        bb = bus_bytes(op, s["message_bytes"], s["num_devices"])
        return s["message_bytes"], bb / t / hw.ici_bandwidth_bytes_per_s, "message bytes", "bus bandwidth / link spec"
    if op == "gemm":
        flops = gemm_flops(s["m"], s["n"], s["k"])
    else:
        flops = attention_flops(s)
    if op == "attention_decode":
        kv = 2 * s["batch"] * s["kv_len"] * s["num_kv_heads"] * s["head_dim"] * s["width"]
        return (
            s["batch"] * s["kv_len"],
            kv / t / hw.hbm_bandwidth_bytes_per_s,
            "batch x KV length",
            "KV bandwidth / HBM spec",
        )
    peak = np.array([hw.flops_per_s.get(d, max(hw.flops_per_s.values())) for d in rows["dtype"]])
    return flops, flops / t / peak, "FLOPs", "achieved FLOP/s / peak"


def _sample(rows: Measurements, max_points: int = MAX_POINTS) -> Measurements:
    """At most ``max_points`` rows, a seeded random sample (the statistics use every row)."""
    if len(rows) <= max_points:
        return rows
    pick = np.random.default_rng(0).choice(len(rows), max_points, replace=False)
    return rows.take(np.sort(pick))


def _markers(x: object, y: object, name: str, color: str) -> dict[str, object]:
    return {
        "type": "scatter",
        "mode": "markers",
        "x": np.asarray(x).tolist(),
        "y": np.asarray(y).tolist(),
        "name": name,
        "marker": {"size": 4, "opacity": 0.5, "color": color},
    }


def op_figures(
    key: str, rows: Measurements, hw: HardwareSpec, params: dict[str, float]
) -> tuple[list[dict[str, object]], str]:
    """Three figures for one op class, each with its own legend: predicted vs measured, relative
    error, efficiency vs size; and the sentence saying how many rows are drawn."""
    from roofline.views.report.figures import COLORS, axis, layout

    sample = _sample(rows)
    drawn = (
        f"{key}: all {len(rows):,} rows plotted."
        if len(sample) == len(rows)
        else f"{key}: {len(sample):,} of {len(rows):,} rows plotted (a seeded random sample); "
        "the statistics above use every row."
    )
    measured = sample["time_s"]
    spec = predict_op(key, sample, hw, None)
    fitted = predict_op(key, sample, hw, params)
    size, eff, size_title, eff_title = _size_and_efficiency(key, sample, hw)
    line = [float(measured.min()), float(measured.max())]
    vs = {
        "data": [
            _markers(measured, spec, "spec roofline", COLORS[0]),
            _markers(measured, fitted, "calibrated", COLORS[1]),
            {
                "type": "scatter",
                "mode": "lines",
                "x": line,
                "y": line,
                "name": "y = x",
                "line": {"color": "#52606d", "dash": "dot"},
            },
        ],
        "layout": layout(
            f"{key}: predicted vs measured",
            axis("measured (s)", measured, log=True),
            axis("predicted (s)", np.concatenate([spec, fitted]), log=True),
            "model",
        ),
    }
    hist = []
    for i, (name, pred) in enumerate((("spec roofline", spec), ("calibrated", fitted))):
        err = np.clip(pred / measured - 1.0, -1.0, 2.0)
        hist.append(
            {
                "type": "histogram",
                "x": err.tolist(),
                "name": f"{name} error",
                "opacity": 0.6,
                "nbinsx": 60,
                "marker": {"color": COLORS[i]},
            }
        )
    err_fig = {
        "data": hist,
        "layout": {
            **layout(
                f"{key}: relative error", axis("predicted / measured - 1", log=False), axis("rows", log=False), "model"
            ),
            "barmode": "overlay",
        },
    }
    eff_fig = {
        "data": [
            _markers(size, eff, "measured efficiency", COLORS[2]),
            _markers(size, eff * measured / fitted, "calibrated model efficiency", COLORS[3]),
        ],
        "layout": layout(
            f"{key}: efficiency vs size", axis(size_title, size, log=True), axis(eff_title, log=False), "efficiency"
        ),
    }
    for fig in (vs, err_fig, eff_fig):
        fig["layout"].update(height=400, margin={"l": 60, "r": 10, "t": 50, "b": 120})
        fig["layout"]["legend"].update(orientation="h", y=-0.32, yanchor="top")
    return [vs, err_fig, eff_fig], drawn


def _stats_table(fits: dict[str, object]) -> str:
    head = (
        "entry",
        "rows",
        "spec MAPE",
        "constant MAPE",
        "calibrated MAPE",
        "held-out random (spec / calibrated)",
        "held-out shape range (spec / calibrated)",
        "parameters at a bound (missing terms)",
    )
    lines = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]

    def pct(v: float | None) -> str:
        return "-" if v is None or not np.isfinite(v) else f"{100 * v:.1f}%"

    for key, fit in fits.items():
        s, r, g = fit.stats, fit.random, fit.shape_range
        cells = (
            key,
            f"{int(s['after_n'])}",
            pct(s.get("before_mape")),
            pct(s.get("constant_mape")),
            pct(s.get("after_mape")),
            f"{pct(r.get('before_mape'))} / {pct(r.get('after_mape'))}",
            f"{pct(g.get('before_mape'))} / {pct(g.get('after_mape'))}",
            ", ".join(fit.at_bound) or "-",
        )
        lines.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(lines + ["</table>"])


def render_calibration_report(profile: HardwareSpec, fits: dict[str, object], table: Measurements) -> str:
    """The report page as an HTML string (plotly.js inlined once, works offline; the report's theme)."""
    from roofline.views.report.page import figure_html, page_html, tool_version

    keys = row_entry_keys(table)
    title = f"roofline calibration report: {profile.name}"
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">roofline {html.escape(tool_version())}. MAPE = mean absolute relative error '
        "of predicted kernel time.  Spec = the datasheet roofline; constant = fitted constant efficiencies "
        "and overhead; calibrated = the shape-dependent model.  Held-out: fitted on the other rows.  Each op "
        f"class's figures draw at most {MAX_POINTS:,} rows (a seeded random sample, said under each "
        "heading); the statistics use every row.</p>",
        _stats_table(fits),
    ]
    n = 0
    for key, fit in fits.items():
        figs, drawn = op_figures(key, table.take(keys == key), profile, fit.params)
        parts += [f"<h2>{html.escape(key)}</h2>", f'<p class="note">{html.escape(drawn)}</p>', '<div class="row3">']
        for fig in figs:
            parts.append(f'<div class="figure">{figure_html(fig, f"cal-{n}")}</div>')
            n += 1
        parts.append("</div>")
    return page_html(title, parts)


def write_calibration_report(
    path: str | Path, profile: HardwareSpec, fits: dict[str, object], table: Measurements
) -> Path:
    """Write the HTML report to ``path`` atomically and return the path."""
    path = Path(path)
    write_bytes_atomic(path, render_calibration_report(profile, fits, table).encode("utf-8"))
    return path
