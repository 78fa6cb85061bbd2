"""The main report: latency/throughput/cost frontiers per model and chip file, bound and prediction.

Data comes from :func:`roofline.analyses.sweep.run.decode_sweep` (the step model's terms per configuration)
and :mod:`roofline.terms.ops`; this module only lays it out as one self-contained HTML page.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from roofline.analyses.pareto import OBJECTIVES
from roofline.analyses.step import BOOK
from roofline.analyses.sweep.run import SweepResult, decode_sweep
from roofline.specs import load_model
from roofline.views.report import figures, sections
from roofline.views.report.page import figure_html, html_table, page_html, tool_version, write_page
from roofline.views.report.scenario import (
    DEFAULT_BATCH,
    DEFAULT_CHIPS,
    DEFAULT_HARDWARE,
    DEFAULT_MODELS,
    HardwareRef,
    Scenario,
)

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_CHIPS",
    "DEFAULT_HARDWARE",
    "DEFAULT_MODELS",
    "Scenario",
    "build_report",
    "write_frontier_page",
    "write_report",
]

OBJECTIVE_TITLES = {
    "latency-throughput": "per-token latency vs throughput per chip",
    "interactivity-throughput": "interactivity vs throughput per chip",
    "cost-latency": "$ per million tokens vs per-token latency",
}


@dataclass(frozen=True)
class ModelSweeps:
    """One model's sweeps: every chip file at its own rates, and calibrated files on their spec sheets."""

    name: str
    predicted: SweepResult
    spec: SweepResult | None


def _sweep(name: str, scenario: Scenario, refs: Sequence[HardwareRef], spec_sheet: bool) -> SweepResult:
    hardware = [r.spec_sheet if spec_sheet else r.spec for r in refs]
    return decode_sweep(
        load_model(name),
        hardware,
        scenario.batch,
        scenario.chips,
        scenario.context,
        scenario.weights,
        scenario.kv_dtypes,
        scenario.tp,
        scenario.compute_dtype,
        scenario.prices,
        pp=scenario.pp,
        memory_utilization=scenario.memory_utilization,
        labels=[r.label for r in refs],
        engine=None if spec_sheet else scenario.engine,
    )


def run_sweeps(scenario: Scenario, refs: Sequence[HardwareRef]) -> dict[str, ModelSweeps]:
    """Per model: one sweep over every chip file; a second on the spec sheets of calibrated ones (bounds)."""
    calibrated = [r for r in refs if r.calibrated]
    need_spec = calibrated and "bound" in scenario.traces
    return {
        name: ModelSweeps(
            name, _sweep(name, scenario, refs, False), _sweep(name, scenario, calibrated, True) if need_spec else None
        )
        for name in scenario.models
    }


def frontier_traces(
    sweeps: ModelSweeps, refs: Sequence[HardwareRef], scenario: Scenario
) -> tuple[list[figures.FrontierTrace], dict[str, int]]:
    """Bound and prediction traces per chip file, and the points left out of each prediction (tp across
    the scale-out network)."""
    traces, excluded = [], {}
    for i, ref in enumerate(refs):
        color = figures.COLORS[i % len(figures.COLORS)]
        pred = sweeps.predicted.select(sweeps.predicted.column("hardware") == ref.label)
        if "bound" in scenario.traces:
            base = pred
            if ref.calibrated and sweeps.spec is not None:
                base = sweeps.spec.select(sweeps.spec.column("hardware") == ref.label)
            traces.append(
                figures.FrontierTrace(
                    f"{ref.label} · bound", "bound", color, base.with_step_time("step_time_lower_s"), ref.domain
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
                figures.FrontierTrace(
                    f"{ref.label} · prediction", "prediction", color, pred.select(~outside), ref.domain
                )
            )
    return traces, excluded


def frontier_rows(
    result: SweepResult, objective: str = "latency-throughput", group: str = "hardware"
) -> list[list[Any]]:
    """Table rows of every group's (chip's) frontier points, in the frontier's order."""
    rows: list[list[Any]] = []
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


def _summary_rows(name: str, result: SweepResult, excluded: dict[str, int]) -> list[list[Any]]:
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


SUMMARY_HEADERS = (
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
TRACE_HEADERS = ("trace", *FRONTIER_HEADERS)


class _Figures:
    """Numbers the page's figure divs in order."""

    def __init__(self) -> None:
        self.count = 0

    def html(self, fig: dict[str, Any]) -> str:
        self.count += 1
        return f'<div class="figure">{figure_html(fig, f"fig-{self.count - 1}")}</div>'


def _head(version: str, refs: Sequence[HardwareRef], scenario: Scenario) -> list[str]:
    return [
        "<h1>roofline: latency, throughput and cost frontiers</h1>",
        *sections.trace_legend(refs, scenario),
        f'<p class="note">roofline {html.escape(version)} · generated '
        f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC} · formulas: {html.escape(BOOK)}, "
        "'Theoretical estimates for LLM latency and throughput'. Every chip file is its own trace, named "
        "by the file (a calibrated profile is never merged with the chip it describes).</p>",
        "<h2>Scenario</h2>",
        html_table(("parameter", "value"), scenario.describe(), text_columns=2),
        html_table(("chip", "hardware"), [(r.label, r.describe()) for r in refs], text_columns=2),
    ]


def _frontier_table(traces: Sequence[figures.FrontierTrace]) -> list[list[Any]]:
    rows = []
    for tr in traces:
        if len(tr.result):
            rows += [[tr.name, *row] for row in frontier_rows(tr.result, group="all")]
    return rows


def build_report(scenario: Scenario) -> tuple[str, dict[str, Any]]:
    """The report's HTML and a summary (counts per model, figures, version) for --json."""
    refs = scenario.hardware_refs()
    sweeps = run_sweeps(scenario, refs)
    version = tool_version()
    page = _head(version, refs, scenario)
    figs = _Figures()
    traces = {name: frontier_traces(ms, refs, scenario) for name, ms in sweeps.items()}
    summary_rows, dropped, sources = [], [], {}
    for name, ms in sweeps.items():
        summary_rows += _summary_rows(name, ms.predicted, traces[name][1])
        dropped += sections.dropped_rows(name, ms.predicted)
        sources.update(ms.predicted.sources)
        sources[f"model:{name}"] = ms.predicted.sources["model"]
    sources.pop("model", None)
    excluded_total: dict[str, int] = {}
    for _, excluded in traces.values():
        for label, n in excluded.items():
            excluded_total[label] = excluded_total.get(label, 0) + n
    page += [
        "<h2>Configurations evaluated</h2>",
        '<p class="note">Points whose weights + KV cache exceed the slice\'s usable HBM are dropped; the '
        "table below lists each one (per slice, every batch from the first dropped one up).</p>",
        html_table(SUMMARY_HEADERS, summary_rows, text_columns=2),
        sections.excluded_note(excluded_total, scenario),
        f"<details><summary>{len(dropped)} configurations dropped for memory (each row: every batch from the "
        "first dropped one up)</summary>",
        html_table(sections.DROPPED_HEADERS, dropped, text_columns=4),
        "</details>",
        "<details><summary>Where the numbers come from</summary>",
        html_table(("input", "source"), sorted(sources.items()), text_columns=2),
        "</details>",
    ]
    summary: dict[str, Any] = {
        "version": version,
        "models": {},
        "sources": dict(sorted(sources.items())),
        "traces": [f"{r.label} · {k}" for r in refs for k in scenario.traces],
    }
    for name, ms in sweeps.items():
        page.append(f"<h2>{html.escape(name)}: frontiers</h2>")
        model_traces = traces[name][0]
        if len(ms.predicted) == 0:
            page.append('<p class="note">No configuration fits in HBM: nothing to plot.</p>')
        else:
            for objective in OBJECTIVES:
                page.append(
                    figs.html(
                        figures.trace_frontier_figure(model_traces, objective, f"{name}: {OBJECTIVE_TITLES[objective]}")
                    )
                )
        rows = _frontier_table(model_traces)
        page += [
            f"<details><summary>{len(rows)} points on the latency/throughput frontiers of "
            f"{html.escape(name)}</summary>",
            html_table(TRACE_HEADERS, rows, text_columns=2),
            "</details>",
        ]
        ops_html, ops_data = sections.ops_section(name, scenario, refs, figs.html)
        page += ops_html
        summary["models"][name] = {
            "evaluated": ms.predicted.evaluated,
            "fit": len(ms.predicted),
            "dropped_out_of_memory": ms.predicted.dropped_out_of_memory,
            "dropped_configurations": len(sections.dropped_rows(name, ms.predicted)),
            "left_out_of_prediction": traces[name][1],
            "frontier_points": len(rows),
            "ops": ops_data,
        }
    summary["book_tables"] = bool(scenario.book_models())
    if summary["book_tables"]:
        page += sections.book_section(figs.html)
    page += sections.memory_section(scenario, refs, figs.html)
    summary["figures"] = figs.count
    return page_html("roofline report", page), summary


def write_report(path: str | Path, scenario: Scenario | None = None) -> dict[str, Any]:
    """Build the report and write it atomically to ``path``; the summary gains 'path' and 'bytes'."""
    text, summary = build_report(scenario or Scenario())
    target = write_page(path, text)
    summary["path"] = str(target)
    summary["bytes"] = len(text.encode("utf-8"))
    return summary


def write_frontier_page(
    path: str | Path,
    result: SweepResult,
    objectives: Sequence[str],
    title: str,
    notes: Sequence[tuple[str, str]],
    group: str = "hardware",
) -> Path:
    """A smaller page for ``roofline pareto --html``: the chosen frontiers and their points."""
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        '<p class="lead">Every trace is the step model\'s <b>prediction</b> (step_time_s) at the rates of '
        "the hardware given: collectives on the critical path on GPUs, overlapped on TPUs; a spec sheet has "
        "no kernel overheads, a calibrated profile's fitted kernels do. The collectives-overlapped bound "
        "is the step_time_lower_s column of `roofline sweep`.</p>",
        f'<p class="note">roofline {html.escape(tool_version())}</p>',
        html_table(("parameter", "value"), list(notes), text_columns=2),
        "<details><summary>Where the numbers come from</summary>",
        html_table(("input", "source"), sorted(result.sources.items()), text_columns=2),
        "</details>",
    ]
    for i, objective in enumerate(objectives):
        fig = figures.frontier_figure(result, objective, OBJECTIVE_TITLES[objective], group)
        sections.append(f'<div class="figure">{figure_html(fig, f"fig-{i}")}</div>')
        sections.append(html_table(FRONTIER_HEADERS, frontier_rows(result, objective, group), text_columns=1))
    return write_page(path, page_html(title, sections))
