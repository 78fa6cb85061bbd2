"""The day page (``roofline plan --load-profile ... --html``): load and replicas over the day, and the
autoscaled fleet's cost against a fixed fleet sized for the peak.

:func:`day_section` is the page's body as one HTML section, so the main report can include it (its
hook); :func:`day_page_html` wraps it in a whole page.  Views only read the day plan's numbers.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from roofline.analyses.plan.day import DayPlan
from roofline.views.report.figures import themed
from roofline.views.report.page import figure_html, html_table, page_html, tool_version, write_page


def _steps(start: np.ndarray, values: list[float], day_h: float) -> tuple[list[float], list[float]]:
    """x, y of a step line over the day: each slot's value from its start to the next start (cyclic end)."""
    x = [*start.tolist(), float(start[0] + day_h)]
    return x, [*values, values[-1]]


def load_figure(day: DayPlan) -> dict[str, object]:
    """Request rate (left axis) and replicas, autoscaled and fixed (right axis), over the day."""
    p, best, fixed = day.profile, day.best, day.fixed_fleet
    day_h = float(p.hours.sum())
    x, rate = _steps(p.start_hour, p.rate.tolist(), day_h)
    data: list[dict[str, object]] = [
        {"type": "scatter", "mode": "lines", "name": "load (req/s)", "x": x, "y": rate, "line": {"shape": "hv"}}
    ]
    if best is not None:
        _, reps = _steps(p.start_hour, [float(r) for r in best.replicas], day_h)
        data.append(
            {"type": "scatter", "mode": "lines", "name": "replicas (autoscaled)", "x": x, "y": reps, "yaxis": "y2",
             "line": {"shape": "hv", "width": 3}}
        )  # fmt: skip
    if fixed is not None:
        data.append(
            {"type": "scatter", "mode": "lines", "name": "replicas (fixed, peak-sized)", "x": [x[0], x[-1]],
             "y": [fixed.replicas[0]] * 2, "yaxis": "y2", "line": {"dash": "dash"}}
        )  # fmt: skip
    top = max([max(best.replicas) if best else 1, fixed.replicas[0] if fixed else 1, 1])
    layout = {
        "title": {"text": "Load and replicas over the day"},
        "height": 420,
        "xaxis": {"title": {"text": "hour of the day"}, "dtick": 2},
        "yaxis": {"title": {"text": "requests per second"}, "rangemode": "tozero"},
        "yaxis2": {
            "title": {"text": "replicas", "standoff": 12},
            "overlaying": "y",
            "side": "right",
            "range": [0, 1.1 * top],
            "tickformat": "d",
            "dtick": max(1, int(np.ceil(top / 6))),
            "automargin": True,
            "showgrid": False,
        },
        "legend": {"orientation": "h", "y": -0.2},
    }
    return {"data": data, "layout": themed(layout)}


def cost_figure(day: DayPlan) -> dict[str, object]:
    """Cumulative dollars over the day: the autoscaled fleet (warm-up spread over the day) against the fixed one."""
    p, best, fixed = day.profile, day.best, day.fixed_fleet
    hours = p.hours
    x = [float(p.start_hour[0]), *(p.start_hour[0] + np.cumsum(hours)).tolist()]
    data = []
    if best is not None:
        per_replica_h = best.cost_per_day / best.replica_hours if best.replica_hours else 0.0
        busy = np.array(best.replicas, dtype=float) * hours
        scale = best.replica_hours / busy.sum() if busy.sum() else 1.0
        data.append({"type": "scatter", "mode": "lines", "name": "autoscaled",
                     "x": x, "y": [0.0, *np.cumsum(busy * scale * per_replica_h).tolist()]})  # fmt: skip
    if fixed is not None:
        data.append({"type": "scatter", "mode": "lines", "name": "fixed fleet sized for the peak",
                     "x": x, "y": [0.0, *np.cumsum(hours / hours.sum() * fixed.cost_per_day).tolist()],
                     "line": {"dash": "dash"}})  # fmt: skip
    layout = {
        "title": {"text": "Cost over the day (USD, cumulative)"},
        "height": 380,
        "xaxis": {"title": {"text": "hour of the day"}, "dtick": 2},
        "yaxis": {"title": {"text": "USD"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.25},
    }
    return {"data": data, "layout": themed(layout)}


def facts(day: DayPlan) -> list[tuple[str, str]]:
    """The summary table: the shape, cost per day, chip-hours, the fixed fleet and the saving."""
    best, fixed = day.best, day.fixed_fleet
    if best is None:
        return [("plan", "no deployment serves every slot of the day")]
    d = best.shape
    rows = [
        ("load profile", day.profile.source),
        (
            "deployment shape",
            f"{d.chips_per_replica} x {d.hardware} (tp {d.tp}, pp {d.pp}), batch {d.batch}, "
            f"{d.weights} weights / {d.kv_dtype} KV",
        ),  # fmt: skip
        ("replicas", f"{min(best.replicas)} to {max(best.replicas)}"),
        ("cost per day", f"${best.cost_per_day:,.2f}"),
        ("chip-hours per day", f"{best.chip_hours:,.1f}"),
        ("scale-up delay (weight load)", f"{best.scale_up_delay_s:,.1f} s"),
    ]
    if fixed is not None:
        saving = fixed.cost_per_day - best.cost_per_day
        rows += [
            (
                "fixed fleet sized for the peak",
                f"{fixed.replicas[0]} x {fixed.shape.chips_per_replica} "
                f"{fixed.shape.hardware}: ${fixed.cost_per_day:,.2f} per day",
            ),  # fmt: skip
            ("autoscaling saves", f"${saving:,.2f} per day ({saving / fixed.cost_per_day:.0%})"),
        ]
    if day.plain is not None:
        rows.append(("without failure headroom", f"${day.plain.cost_per_day:,.2f} per day"))
    return rows + [(k, v) for k, v in day.sources.items() if k in ("autoscaling", "spares", "sizing", "queueing")]


def clock(hour: float) -> str:
    """'07:30' for 7.5 hours from the start of the day."""
    minutes = int(round(hour * 60))
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def slot_rows(day: DayPlan) -> list[tuple[str, ...]]:
    return [
        (clock(s.start_hour), f"{s.hours:g}", f"{s.rate:,.3g}", str(s.replicas), str(s.spare_replicas),
         f"{s.ttft_s * 1e3:,.1f}", f"{s.tpot_s * 1e3:,.2f}", "met" if s.meets_slo else "missed")
        for s in day.schedule
    ]  # fmt: skip


def day_section(day: DayPlan, title: str = "A day of load") -> str:
    """The page's body as one ``<section>``: facts, the two figures, the slot table (the report's hook)."""
    parts = [
        f'<section id="day"><h2>{html.escape(title)}</h2>',
        html_table(("quantity", "value"), facts(day), text_columns=2),
        f'<div class="figure">{figure_html(load_figure(day), "day-load")}</div>',
        f'<div class="figure">{figure_html(cost_figure(day), "day-cost")}</div>',
        "<h3>Slots</h3>",
        html_table(
            ("start", "hours", "req/s", "replicas", "spare", "TTFT (ms)", "TPOT (ms)", "SLO"), slot_rows(day), 0
        ),
        "</section>",
    ]
    return "\n".join(parts)


def day_page_html(day: DayPlan, title: str) -> str:
    """The whole page."""
    note = (
        f'<p class="note">roofline {html.escape(tool_version())}: the cheapest deployment shape for a day of '
        "load, replicas per slot (scheduled autoscaling with the weight-load delay), against a fixed fleet "
        "sized for the peak.</p>"
    )
    return page_html(title, [f"<h1>{html.escape(title)}</h1>", note, day_section(day, "The day")])


def write_day_page(path: str | Path, day: DayPlan, title: str) -> Path:
    """Write the page atomically and return its path."""
    return write_page(path, day_page_html(day, title))
