"""The frontier figures and tables of the main report: bound and prediction traces per chip entry.

Data comes from the report's runs (:mod:`roofline.views.report.runs`: the step model's terms per
configuration); this module only lays it out.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from roofline.analyses.pareto import OBJECTIVES
from roofline.analyses.sweep.result import SweepResult
from roofline.views.report import figures
from roofline.views.report.page import html_table
from roofline.views.report.runs import ModelRun
from roofline.views.report.scenario import HardwareRef, Scenario

OBJECTIVE_TITLES = {
    "latency-throughput": "per-token latency vs throughput per chip",
    "interactivity-throughput": "interactivity vs throughput per chip",
    "cost-latency": "$ per million tokens vs per-token latency",
}
FRONTIER_HEADERS = (
    "chip",
    "chips",
    "slice",
    "tp",
    "batch",
    "weights",
    "KV",
    "context",
    "step (ms)",
    "tokens/s/chip",
    "tokens/s/user",
    "$/Mtok",
    "bound",
)
TRACE_HEADERS = ("trace", *FRONTIER_HEADERS)
EVALUATED_HEADERS = (
    "model",
    "chip",
    "evaluated",
    "fit in HBM",
    "dropped (out of memory)",
    "left out of the prediction (tp across scale-out)",
    "best predicted tokens/s/chip",
    "fastest predicted step (ms)",
    "cheapest predicted $/Mtok",
)


def frontier_traces(
    run: ModelRun, refs: Sequence[HardwareRef], scenario: Scenario, visible: bool = True
) -> tuple[list[figures.FrontierTrace], dict[str, int]]:
    """Bound and prediction traces per chip entry, and the points left out of each prediction (tp across
    the scale-out network)."""
    traces, excluded = [], {}
    for i, ref in enumerate(refs):
        color = figures.COLORS[i % len(figures.COLORS)]
        pred = run.predicted.select(run.predicted.column("hardware") == ref.label)
        common = {"domain": ref.domain, "model": run.name, "visible": visible}
        if "bound" in scenario.traces:
            base = pred
            if ref.calibrated and run.spec is not None:
                base = run.spec.select(run.spec.column("hardware") == ref.label)
            traces.append(
                figures.FrontierTrace(
                    f"{ref.label} · bound", "bound", color, base.with_step_time("step_time_lower_s"), **common
                )
            )
        if "prediction" in scenario.traces:
            outside = (
                (pred.columns["tp"] > ref.domain)
                if (ref.domain and not scenario.scale_out_tp)
                else np.zeros(len(pred), dtype=bool)
            )
            excluded[ref.label] = int(outside.sum())
            traces.append(
                figures.FrontierTrace(f"{ref.label} · prediction", "prediction", color, pred.select(~outside), **common)
            )
    return traces, excluded


def frontier_rows(
    result: SweepResult, objective: str = "latency-throughput", group: str = "hardware"
) -> list[list[object]]:
    """Table rows of every group's (chip's) frontier points, in the frontier's order."""
    rows: list[list[object]] = []
    for idx in result.frontiers(objective, group).values():
        points = result.select(idx)  # the frontier's points only: columns read once, not per point
        cols = {k: points.column(k).tolist() for k in figures.HOVER_FIELDS}
        for i in range(len(idx)):
            c = {k: v[i] for k, v in cols.items()}
            rows.append(
                [
                    c["hardware"],
                    c["chips"],
                    c["topology"] or "-",
                    c["tp"],
                    c["batch"],
                    c["weights"],
                    c["kv_dtype"],
                    c["context"],
                    f"{c['step_time_s'] * 1e3:.3f}",
                    f"{c['tokens_per_s_per_chip']:,.1f}",
                    f"{c['tokens_per_s_per_user']:,.1f}",
                    f"{c['cost_per_million_tokens']:.3f}",
                    c["bound"],
                ]
            )
    return rows


def trace_table(traces: Sequence[figures.FrontierTrace]) -> list[list[object]]:
    """Rows of each trace's latency/throughput frontier."""
    rows = []
    for tr in traces:
        if len(tr.result):
            rows += [[tr.name, *row] for row in frontier_rows(tr.result, group="all")]
    return rows


def evaluated_rows(name: str, result: SweepResult, excluded: dict[str, int]) -> list[list[object]]:
    """Per chip: configurations evaluated, kept, dropped, left out, and the best predicted figures."""
    hw = result.column("hardware")
    rows = []
    for chip, dropped in result.dropped_by_hardware.items():
        mask = hw == chip
        kept = int(mask.sum())
        best = f"{result.columns['tokens_per_s_per_chip'][mask].max():,.1f}" if kept else "-"
        fastest = f"{result.columns['step_time_s'][mask].min() * 1e3:.3f}" if kept else "-"
        cheapest = f"{result.columns['cost_per_million_tokens'][mask].min():.3f}" if kept else "-"
        rows.append([name, chip, kept + dropped, kept, dropped, excluded.get(chip, 0), best, fastest, cheapest])
    return rows


def frontier_figures(
    traces: Mapping[str, list[figures.FrontierTrace]], fig_html: Callable[[dict[str, object]], str]
) -> list[str]:
    """One figure per objective holding every model's traces (the model control shows one model's)."""
    every = [t for model_traces in traces.values() for t in model_traces]
    if not any(len(t.result) for t in every):
        return ['<p class="note">No configuration fits in HBM: nothing to plot.</p>']
    return [
        fig_html(figures.trace_frontier_figure(every, objective, OBJECTIVE_TITLES[objective]))
        for objective in OBJECTIVES
    ]


def frontier_details(name: str, traces: Sequence[figures.FrontierTrace]) -> tuple[list[str], int]:
    """A folded table of the model's latency/throughput frontier points, and how many there are."""
    rows = trace_table(traces)
    return [
        f'<details data-model="{html.escape(name)}"><summary>{html.escape(name)}: {len(rows)} points on the '
        "latency/throughput frontiers</summary>",
        html_table(TRACE_HEADERS, rows, text_columns=2),
        "</details>",
    ], len(rows)
