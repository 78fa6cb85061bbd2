"""The tails section: p50/p99 TTFT and TPOT against arrival rate for each model's cheapest deployment.

The curves come from :func:`roofline.analyses.tails.load_curve` (the serving simulator) at rates up to
and past the rate that fills the deployment's batch; the summary's operating point (the rate the
capacity plan's queueing model allows at the target) is marked, as are the targets.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from roofline.analyses.step import Precision
from roofline.analyses.tails import SATURATED, LoadCurve, TailSetup
from roofline.specs import load_model
from roofline.views.report.figures import COLORS, axis, themed
from roofline.views.report.scenario import HardwareRef, Scenario
from roofline.views.report.summary import ModelAnswers, Pick, deployment_text

PANELS = (("ttft", "TTFT", "x", "y"), ("tpot", "TPOT", "x2", "y2"))


def tail_setup(pick: Pick, refs: Sequence[HardwareRef], scenario: Scenario) -> TailSetup:
    """The replica of a summary answer, as the simulator loads it."""
    ref = next(r for r in refs if r.label == pick.field("hardware"))
    return TailSetup(
        model=load_model(pick.run.name),
        hw=ref.spec,
        tp=int(pick.field("tp")),
        pp=int(pick.field("pp")),
        precision=Precision(str(pick.field("weights")), str(pick.field("kv_dtype")), str(pick.field("compute_dtype"))),
        batch=int(pick.field("batch")),
        lengths=scenario.lengths,
        engine=ref.engine,
        memory_utilization=scenario.memory_utilization,
        ep=int(pick.field("ep")),
    )


def _traces(name: str, curve: LoadCurve, pick: Pick, scenario: Scenario, color: str) -> list[dict[str, object]]:
    data = []
    rate = float(pick.result.rate_per_replica[pick.index])
    for key, label, xa, ya in PANELS:
        for pct, dash in (("p50", "solid"), ("p99", "dash")):
            y = getattr(curve, f"{key}_{pct}_s") * 1e3
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "x": curve.rate_per_s.tolist(),
                    "y": y.tolist(),
                    "name": f"{label} {pct}",
                    "xaxis": xa,
                    "yaxis": ya,
                    "line": {"color": color, "dash": dash},
                    "marker": {"symbol": np.where(curve.saturated, "x", "circle").tolist(), "size": 8},
                    "customdata": (curve.completed_per_s).tolist(),
                    "hovertemplate": f"{label} {pct}: %{{y:,.1f}} ms at %{{x:.3g}} requests/s offered"
                    "<br>completed %{customdata:.3g}/s<extra></extra>",
                    "meta": {"model": name},
                    "legendgroup": pct,
                    "showlegend": key == "ttft",
                }
            )
        slo = (scenario.ttft_slo_s if key == "ttft" else scenario.tpot_slo_s) * 1e3
        x = [float(curve.rate_per_s.min()), float(curve.rate_per_s.max())]
        data.append(_line(x, [slo, slo], f"{label} target {slo:g} ms", xa, ya, name))
        lo, hi = _span(curve, key)
        data.append(_line([rate, rate], [lo, hi], "summary's operating point", xa, ya, name, dash="dot"))
    return data


def _span(curve: LoadCurve, key: str) -> tuple[float, float]:
    values = np.concatenate([getattr(curve, f"{key}_p50_s"), getattr(curve, f"{key}_p99_s")]) * 1e3
    values = values[np.isfinite(values) & (values > 0)]
    return (float(values.min()), float(values.max())) if values.size else (1.0, 10.0)


def _line(x: list[float], y: list[float], label: str, xa: str, ya: str, model: str, dash: str = "dashdot") -> dict:
    return {
        "type": "scatter",
        "mode": "lines",
        "x": x,
        "y": y,
        "name": label,
        "xaxis": xa,
        "yaxis": ya,
        "line": {"color": "#52606d", "dash": dash, "width": 1},
        "hovertemplate": f"{html.escape(label)}<extra></extra>",
        "meta": {"model": model},
        "showlegend": False,
    }


def tails_figure(found: Sequence[ModelAnswers], curves_by_model: dict[str, LoadCurve], scenario: Scenario) -> dict:
    """Two panels (TTFT, TPOT vs offered rate), one model's traces visible at a time (``meta.model``)."""
    data: list[dict[str, object]] = []
    for i, a in enumerate(found):
        if a.run.name in curves_by_model and a.cheapest is not None:
            traces = _traces(a.run.name, curves_by_model[a.run.name], a.cheapest, scenario, COLORS[i % len(COLORS)])
            for t in traces:
                t["visible"] = i == 0
            data += traces
    ys = {ya: [v for t in data if t.get("yaxis") == ya for v in t["y"]] for _, _, _, ya in PANELS}
    rate_title = "offered load (requests/s per replica)"
    layout = themed(
        {
            "title": {"text": "latency under load: the cheapest deployment, simulated"},
            "height": 420,
            "grid": {"rows": 1, "columns": 2, "pattern": "independent"},
            "xaxis": {"title": {"text": rate_title}},
            "xaxis2": {"title": {"text": rate_title}},
            "yaxis": axis("TTFT (ms)", ys["y"], log=True),
            "yaxis2": axis("TPOT (ms)", ys["y2"], log=True),
            "legend": {"orientation": "h", "y": -0.22},
        }
    )
    return {"data": data, "layout": layout}


def tails_notes(found: Sequence[ModelAnswers], curves_by_model: dict[str, LoadCurve]) -> list[str]:
    """Per model: the deployment simulated and the first saturated rate."""
    items = []
    for a in found:
        curve = curves_by_model.get(a.run.name)
        if curve is None or a.cheapest is None:
            items.append(
                f"<li><b>{html.escape(a.run.name)}</b>: no deployment meets the target; nothing simulated.</li>"
            )
            continue
        p = a.cheapest
        sat = curve.rate_per_s[curve.saturated]
        where = (
            f"saturates from {sat.min():.3g} requests/s (completes under {SATURATED:.0%} of the offered rate)"
            if sat.size
            else f"keeps up with every rate simulated, up to {curve.rate_per_s.max():.3g} requests/s"
        )
        items.append(
            f'<li data-model-note="{html.escape(a.run.name)}"><b>{html.escape(a.run.name)}</b> on '
            f"{html.escape(deployment_text(p.run.points, p.index))} of {html.escape(str(p.field('hardware')))}, "
            f"batch {int(p.field('batch'))}: {where}.</li>"
        )
    return items
