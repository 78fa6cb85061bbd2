"""The ``roofline validate --html`` page: predicted vs measured per quantity, offline HTML.

One log-log panel per quantity: a marker per case coloured by source (hover: the case's
conditions), the y = x line and a ±20% band; then the summary tables.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from roofline.calibrate.engine.validate import QUANTITIES, Case, Validation

BAND = 0.20
#: quantity -> (axis label, scale from SI to the unit shown).
UNITS: dict[str, tuple[str, float]] = {
    "ttft_s": ("time to first token (ms)", 1e3),
    "tpot_s": ("time per output token (ms)", 1e3),
    "e2e_s": ("end-to-end latency (s)", 1.0),
    "throughput": ("output tokens/s (whole deployment)", 1.0),
}
HOVER = (
    "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>measured %{x:.4g}, predicted %{y:.4g} "
    "(ratio %{customdata[2]:.3f})<br>profile %{customdata[3]}<extra>%{customdata[4]}</extra>"
)


def quantity_figure(cases: Sequence[Case], quantity: str) -> dict[str, object]:
    """Predicted vs measured for one quantity on log-log axes, with y = x and the ±20% band."""
    from roofline.views.report.figures import COLORS, axis, layout, line_trace

    label, scale = UNITS[quantity]
    mine = [c for c in cases if c.quantity == quantity]
    values = [v * scale for c in mine for v in (c.measured, c.predicted)] or [1.0, 10.0]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    traces = [
        line_trace(
            [lo, hi],
            [lo * (1 - BAND), hi * (1 - BAND)],
            f"-{BAND:.0%}",
            "#9aa5b1",
            dash="dot",
            hoverinfo="skip",
            showlegend=False,
        ),
        line_trace(
            [lo, hi],
            [lo * (1 + BAND), hi * (1 + BAND)],
            f"±{BAND:.0%}",
            "#9aa5b1",
            dash="dot",
            hoverinfo="skip",
            fill="tonexty",
            fillcolor="rgba(154,165,177,0.15)",
        ),
        line_trace([lo, hi], [lo, hi], "y = x", "#52606d", hoverinfo="skip"),
    ]
    for i, source in enumerate(sorted({c.source for c in mine})):
        group = [c for c in mine if c.source == source]
        color = COLORS[i % len(COLORS)]
        traces.append(
            line_trace(
                [c.measured * scale for c in group],
                [c.predicted * scale for c in group],
                f"{source} ({len(group)})",
                color,
                mode="markers",
                hover=HOVER,
                marker={"color": color, "size": 7, "opacity": 0.8},
                customdata=[[c.id, c.conditions, c.ratio, c.profile, source] for c in group],
            )
        )
    fig = layout(
        f"{quantity}: predicted vs measured",
        axis(f"measured {label}", log=True),
        axis(f"predicted {label}", log=True),
        "source",
    )
    return {"data": traces, "layout": fig}


def _pct(value: object) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}%"  # type: ignore[arg-type]


def _ratio(value: object) -> str:
    return "-" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]


#: The groups summary tables break each quantity into: (summary key, label).
SUMMARY_GROUPS = (("by_source", "source"), ("by_tp", "tp"), ("by_dtype", "dtype"))


def summary_rows(
    summary: dict[str, dict[str, object]],
    spec: dict[str, dict[str, object]] | None = None,
    groups: tuple[tuple[str, str], ...] = SUMMARY_GROUPS,
) -> list[list[str]]:
    """Rows (quantity, group, n, MAPE, median APE, gmean ratio[, spec-sheet MAPE]) for tables."""
    rows = []
    for quantity, entry in summary.items():
        base = (spec or {}).get(quantity, {})
        extra = [_pct(base["mape"])] if base else ([] if spec is None else ["-"])
        rows.append(
            [
                quantity,
                "all",
                str(entry["n"]),
                _pct(entry["mape"]),
                _pct(entry["median_ape"]),
                _ratio(entry["gmean_ratio"]),
                *extra,
            ]
        )
        for group, label in groups:
            for key, stats in entry.get(group, {}).items():
                other = base.get(group, {}).get(key) if base else None
                extra = [] if spec is None else [_pct(other["mape"]) if other else "-"]
                rows.append(
                    [
                        quantity,
                        f"{label} {key}",
                        str(stats["n"]),
                        _pct(stats["mape"]),
                        _pct(stats["median_ape"]),
                        _ratio(stats["gmean_ratio"]),
                        *extra,
                    ]
                )
    return rows


def validation_page_html(result: Validation, title: str = "roofline validate: end to end") -> str:
    """The whole page: one figure per quantity, the summary table and the skipped rows."""
    from roofline.views.report.page import figure_html, html_table, page_html, tool_version

    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">roofline {html.escape(tool_version())}: {len(result.cases)} cases, '
        f"{len(result.skipped)} rows skipped.  Ratio = predicted / measured; the grey band is "
        f"±{BAND:.0%}.</p>",
    ]
    for i, quantity in enumerate(QUANTITIES):
        sections.append(f"<h2>{html.escape(quantity)}</h2>")
        sections.append(f'<div class="figure">{figure_html(quantity_figure(result.cases, quantity), f"q{i}")}</div>')
    sections.append("<h2>Summary</h2>")
    sections.append(
        html_table(
            ("quantity", "group", "n", "MAPE", "median APE", "gmean ratio"),
            summary_rows(result.summary),
            text_columns=2,
        )
    )
    if result.skipped:
        sections.append(
            "<details><summary>Skipped rows</summary>"
            + html_table(
                ("id", "source", "reason"), [(s.id, s.source, s.reason) for s in result.skipped], text_columns=3
            )
            + "</details>"
        )
    return page_html(title, sections)


def write_validation_page(result: Validation, path: str | Path) -> Path:
    """Write the page atomically."""
    from roofline.views.report.page import write_page

    return write_page(path, validation_page_html(result))
