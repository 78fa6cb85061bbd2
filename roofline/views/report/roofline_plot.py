"""The classic roofline plot and the per-op table of one configuration (rows from :mod:`roofline.terms.ops`).

x: arithmetic intensity (FLOPs per byte of weight and KV traffic), y: attained FLOP/s per chip
(op FLOPs / (chips · op time)); the roofs are the chip's peak FLOP/s and HBM bandwidth × intensity.
On the spec sheet every op sits on the roof by construction; fitted kernel times put them below it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from roofline.terms.ops import OUTSIDE_GEMMS, OpBreakdown
from roofline.views.report.figures import COLORS, Figure, axis, layout, line_trace

#: (label, marker symbol) of each phase's points.
PHASES = {"decode": "circle", "prefill": "diamond"}
TFLOP = 1e12


def _points(b: OpBreakdown) -> tuple[list[float], list[float], list[str]]:
    """(intensity, attained TFLOP/s per chip, op name) of the ops with FLOPs, timed bytes and a time."""
    xs, ys, names = [], [], []
    for op in b.ops:
        if op.flops > 0 and op.timed_bytes > 0 and op.time_s > 0:
            xs.append(op.intensity)
            ys.append(op.flops / (b.chips * op.time_s) / TFLOP)
            names.append(op.name)
    return xs, ys, names


def roofline_figure(phases: Sequence[tuple[str, str, OpBreakdown]], title: str) -> Figure:
    """Roofs of the chip and one marker per op for each (phase, rates, breakdown): spec sheet open where a
    calibrated profile's points (filled) are drawn too."""
    first = phases[0][2]
    peak, bw = first.flops_per_s / TFLOP, first.hbm_bandwidth_bytes_per_s / TFLOP
    ridge = peak / bw
    xs_all = [x for _, _, b in phases for x in _points(b)[0]] + [ridge]
    lo, hi = min(xs_all) / 3.0, max(xs_all) * 3.0
    label = f"roof: min({peak:,.0f} TFLOP/s, {bw * 1e3:,.0f} GB/s × intensity); ridge {ridge:,.0f} FLOP/B"
    data = [line_trace([lo, ridge, hi], [lo * bw, peak, peak], label, "#52606d", hoverinfo="skip")]
    kinds = list(dict.fromkeys(kind for _, kind, _ in phases))
    for phase, kind, b in phases:
        xs, ys, names = _points(b)
        fitted = kind != kinds[0]  # the spec sheet comes first; a calibrated profile's points are filled
        color = COLORS[(0 if phase == "decode" else 1) + (2 if fitted else 0)]
        symbol = PHASES[phase] + ("-open" if len(kinds) > 1 and not fitted else "")
        data.append(
            line_trace(
                xs,
                ys,
                f"{phase} · {kind}",
                color,
                mode="markers",
                customdata=names,
                hover="<b>%{customdata}</b><br>%{x:,.1f} FLOP/byte<br>%{y:,.2f} TFLOP/s per chip"
                "<extra>%{fullData.name}</extra>",
                marker={"color": color, "symbol": symbol, "size": 10, "line": {"width": 1.5}},
            )
        )
    ys_all = [y for _, _, b in phases for y in _points(b)[1]] + [lo * bw, peak]
    fig = layout(
        title,
        axis("arithmetic intensity (FLOPs per byte of weights + KV)", [lo, hi], log=True),
        axis("attained TFLOP/s per chip", ys_all, log=True),
        "ops",
    )
    return {"data": data, "layout": fig}


OP_HEADERS = (
    "op",
    "kernels / step",
    "GFLOP",
    "weights (MB)",
    "activations (MB, not timed)",
    "KV (MB)",
    "FLOP/byte",
    "bound",
    "time (ms)",
    "share",
)


def op_rows(b: OpBreakdown) -> list[list[str]]:
    """Per-op rows, then Σ ops, the step model's shared-roofline difference, local time, collectives, step."""
    total = b.time_s
    rows = []
    for op in b.ops:
        intensity = "-" if not np.isfinite(op.intensity) else f"{op.intensity:,.1f}"
        rows.append(
            [
                op.name,
                f"{op.count:,.4g}",
                f"{op.flops / 1e9:,.3f}",
                f"{op.weight_bytes / 1e6:,.2f}",
                f"{op.activation_bytes / 1e6:,.2f}",
                f"{op.kv_bytes / 1e6:,.2f}",
                intensity,
                op.bound,
                f"{op.time_s * 1e3:,.4f}",
                f"{op.time_s / total:.1%}" if total > 0 else "-",
            ]
        )
    flops = sum(op.flops for op in b.ops)
    sums = [sum(getattr(op, k) for op in b.ops) / 1e6 for k in ("weight_bytes", "activation_bytes", "kv_bytes")]
    blank = [""] * 4
    rows.append(
        ["Σ ops", "", f"{flops / 1e9:,.3f}", *(f"{v:,.2f}" for v in sums), "", "", f"{total * 1e3:,.4f}", "100%"]
    )
    rows.append(
        [
            "+ the step model's one roofline over all matmuls (spec sheet: max(ΣFLOPs/peak, Σbytes/BW))",
            "",
            *blank,
            "",
            "",
            f"{b.shared_roofline_s * 1e3:+,.4f}",
            "",
        ]
    )
    rows.append(["= step model's local time (no collectives)", "", *blank, "", "", f"{b.local_s * 1e3:,.4f}", ""])
    rows.append(["+ collectives on the critical path", "", *blank, "", "", f"{b.comms_exposed_s * 1e3:,.4f}", ""])
    rows.append(["= step time (prediction)", "", *blank, "", "", f"{b.step_s * 1e3:,.4f}", ""])
    return rows


def op_note(b: OpBreakdown) -> str:
    """One line under the table: what was timed and how."""
    return (
        f"{b.source}; on {b.chips:g} chips.  Time per op: its own roofline on the spec sheet, "
        "max(FLOPs / (chips · peak), (weight + KV bytes) / (chips · HBM bandwidth)); a calibrated profile's "
        "fitted kernel otherwise.  Activation bytes are shown, not timed (the book's accounting).  "
        f"'{OUTSIDE_GEMMS}' is what the step model counts beyond the GEMM shapes."
    )


def data_points(phases: Sequence[tuple[str, str, OpBreakdown]]) -> dict[str, object]:
    """For --json: each phase's Σ op time and the step model's local time."""
    return {f"{phase}:{kind}": {"ops_s": b.time_s, "local_s": b.local_s} for phase, kind, b in phases}
