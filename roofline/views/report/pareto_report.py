"""The main report: the summary's answers first, tails under load, frontiers, then folded details.

Numbers come from the report's runs (:mod:`roofline.views.report.runs`: sweeps of the step model's terms),
:mod:`roofline.analyses.targets` (points served at load), :mod:`roofline.analyses.tails` (the simulator)
and :mod:`roofline.terms.ops`; this module only lays them out as one self-contained HTML page.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence
from pathlib import Path

from roofline.analyses.step import BOOK
from roofline.analyses.sweep.result import SweepResult
from roofline.analyses.tails import LoadCurve
from roofline.views.report import figures, sections
from roofline.views.report.compare import ratio_figure, ratio_notes, ratios
from roofline.views.report.controls import controls_script, summary_section
from roofline.views.report.frontiers import (
    EVALUATED_HEADERS,
    FRONTIER_HEADERS,
    OBJECTIVE_TITLES,
    evaluated_rows,
    frontier_details,
    frontier_figures,
    frontier_rows,
    frontier_traces,
)
from roofline.views.report.page import figure_html, html_table, page_html, tool_version, write_page
from roofline.views.report.runs import ModelRun
from roofline.views.report.scenario import (
    DEFAULT_BATCH,
    DEFAULT_CHIPS,
    DEFAULT_HARDWARE,
    DEFAULT_MODELS,
    HardwareRef,
    Scenario,
)
from roofline.views.report.summary import ModelAnswers
from roofline.views.report.tails import tails_figure, tails_notes
from roofline.views.report.work import all_models

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_CHIPS",
    "DEFAULT_HARDWARE",
    "DEFAULT_MODELS",
    "Scenario",
    "build_report",
    "frontier_rows",
    "frontier_traces",
    "write_frontier_page",
    "write_report",
]


class _Figures:
    """Numbers the page's figure divs in order."""

    def __init__(self) -> None:
        self.count = 0

    def html(self, fig: dict[str, object]) -> str:
        self.count += 1
        return f'<div class="figure">{figure_html(fig, f"fig-{self.count - 1}")}</div>'


def _head(version: str, refs: Sequence[HardwareRef], scenario: Scenario) -> list[str]:
    """Title and one lead paragraph: the workload, and what every chip's prediction is priced from."""
    tiers: dict[str, list[str]] = {}
    for r in refs:
        tiers.setdefault(_tier(r), []).append(f"<b>{html.escape(r.label)}</b>")
    said = "; ".join(f"{', '.join(labels)}: {html.escape(tier)}" for tier, labels in tiers.items())
    return [
        "<h1>roofline: which deployment meets the target, and what it costs</h1>",
        f'<p class="lead">Requests of {scenario.input_len:,} prompt and {scenario.output_len:,} generated tokens; '
        f"each replica carries the load its batch and the target allow. Predictions from {said}.</p>",
    ]


def _tier(ref: HardwareRef) -> str:
    """Where one entry's predictions come from, in a few words."""
    if not ref.calibrated:
        return "the spec sheet (no calibrated profile ships: optimistic)"
    engine = f" with its {ref.engine} engine entry" if ref.engine else ""
    return f"the calibrated profile{engine}"


def _details(title: str, body: Sequence[str]) -> list[str]:
    return [f"<details><summary>{html.escape(title)}</summary>", *body, "</details>"]


def build_report(scenario: Scenario) -> tuple[str, dict[str, object]]:
    """The report's HTML and a summary (answers, counts per model, figures, version) for --json."""
    refs = scenario.hardware_refs()
    work, (summary_html, found) = all_models(scenario, refs, lambda runs: summary_section(runs, refs, scenario))
    runs, tail_curves = work.runs, work.curves
    version = tool_version()
    figs = _Figures()
    page = _head(version, refs, scenario)
    page += summary_html
    if scenario.tails:
        page += [
            "<h2>Latency under load</h2>",
            '<p class="note">The cheapest deployment of the chosen model, simulated (continuous batching, chunked '
            "prefill, Poisson arrivals) at rates up to and past the rate that fills its batch: p50 solid, p99 "
            "dashed, ✕ where the replica falls behind. The dotted line is the summary's operating point.</p>",
            figs.html(tails_figure(found, tail_curves, scenario)),
            f'<ul class="why">{"".join(tails_notes(found, tail_curves))}</ul>',
        ]
    if scenario.compare:
        by_model = {name: ratios(run, refs, scenario) for name, run in runs.items()}
        page += [
            f"<h2>{html.escape(refs[1].label)} against {html.escape(refs[0].label)}</h2>",
            '<p class="note">At each interactivity both reach, the best tokens/s per chip and the lowest $ per '
            "million tokens of each entry's prediction frontier, as a ratio (steady decode steps, as the "
            "frontiers below).</p>",
            figs.html(ratio_figure(by_model, refs)),
            f'<ul class="why">{"".join(ratio_notes(by_model, refs))}</ul>',
        ]
        summary_compare = {
            name: {
                "entries": [r.label for r in refs[:2]],
                "tokens_per_s_per_user": found["tokens_per_s_per_chip"].levels.tolist(),
                **{f"{col}_ratio": found[col].ratio.tolist() for col in found},
                **{f"median_{col}_ratio": found[col].median_ratio for col in found},
            }
            for name, found in by_model.items()
        }
    traces = {name: frontier_traces(run, refs, scenario, visible=i == 0) for i, (name, run) in enumerate(runs.items())}
    page += [
        "<h2>Frontiers</h2>",
        '<p class="note">Every point the sweep kept, as steady decode steps (no prefill): the best trade-off per '
        "chip entry between per-token latency, throughput per chip and cost. The model control above picks the "
        "model.</p>",
        *frontier_figures({m: t for m, (t, _) in traces.items()}, figs.html),
    ]
    summary = _json_summary(version, refs, scenario, runs, found, tail_curves)
    if scenario.compare:
        summary["compare"] = summary_compare
    evaluated, dropped, sources = [], [], {}
    for name, run in runs.items():
        model_traces, excluded = traces[name]
        evaluated += evaluated_rows(name, run.predicted, excluded)
        dropped += sections.dropped_rows(name, run.predicted)
        sources.update(run.predicted.sources)
        sources[f"model:{name}"] = run.predicted.sources["model"]
        rows_html, points = frontier_details(name, model_traces)
        ops_html, ops_data = sections.ops_section(name, scenario, refs, figs.html, work.ops[name])
        page += rows_html
        page += [
            f'<details data-model="{html.escape(name)}"><summary>{html.escape(name)}: the classic roofline, op '
            "by op</summary>",
            *ops_html,
            "</details>",
        ]
        summary["models"][name].update(frontier_points=points, ops=ops_data, left_out_of_prediction=excluded)
    sources.pop("model", None)
    excluded_total: dict[str, int] = {}
    for _, excluded in traces.values():
        for label, n in excluded.items():
            excluded_total[label] = excluded_total.get(label, 0) + n
    summary["sources"] = dict(sorted(sources.items()))
    page += _details("What each trace is", sections.trace_legend(refs, scenario))
    page += _details(
        "Configurations evaluated",
        [
            html_table(EVALUATED_HEADERS, evaluated, text_columns=2),
            sections.excluded_note(excluded_total, scenario),
        ],
    )
    page += _details(
        f"{len(dropped)} configurations dropped for memory (each row: every batch from the first dropped one up)",
        [html_table(sections.DROPPED_HEADERS, dropped, text_columns=4)],
    )
    summary["book_tables"] = bool(scenario.book_models())
    if summary["book_tables"]:
        page += _details("The book's LLaMA-2-13B tables", sections.book_section(figs.html))
    page += _details("Memory vs batch", sections.memory_section(scenario, refs, figs.html))
    page += _details(
        "Scenario and where the numbers come from",
        [
            f'<p class="note">roofline {html.escape(version)} · generated '
            f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC} · formulas: {html.escape(BOOK)}.</p>",
            html_table(("parameter", "value"), scenario.describe(), text_columns=2),
            html_table(("chip", "hardware"), [(r.label, r.describe()) for r in refs], text_columns=2),
            html_table(("input", "source"), sorted(sources.items()), text_columns=2),
        ],
    )
    page.append(controls_script())
    summary["figures"] = figs.count + 1  # and the summary's heatmap
    return page_html("roofline report", page), summary


def _json_summary(
    version: str,
    refs: Sequence[HardwareRef],
    scenario: Scenario,
    runs: dict[str, ModelRun],
    found: Sequence[ModelAnswers],
    tail_curves: dict[str, LoadCurve],
) -> dict[str, object]:
    """--json: the answers at the scenario's target, counts per model, tails, traces."""
    out: dict[str, object] = {
        "version": version,
        "target": {"ttft_slo_s": scenario.ttft_slo_s, "tpot_slo_s": scenario.tpot_slo_s},
        "workload": {"input_len": scenario.input_len, "output_len": scenario.output_len},
        "models": {},
        "traces": [f"{r.label} · {k}" for r in refs for k in scenario.traces],
        "unmet": [a.run.name for a in found if a.cheapest is None],
    }
    for a in found:
        run = a.run
        curve = tail_curves.get(run.name)
        out["models"][run.name] = {
            "evaluated": run.predicted.evaluated,
            "fit": len(run.predicted),
            "dropped_out_of_memory": run.predicted.dropped_out_of_memory,
            "dropped_configurations": len(sections.dropped_rows(run.name, run.predicted)),
            "left_out_of_prediction": {},
            "cheapest": a.cheapest.as_dict() if a.cheapest else None,
            "fastest": a.fastest.as_dict() if a.fastest else None,
            "tails": None
            if curve is None
            else {
                "rate_per_s": curve.rate_per_s.tolist(),
                "ttft_p50_s": curve.ttft_p50_s.tolist(),
                "ttft_p99_s": curve.ttft_p99_s.tolist(),
                "tpot_p50_s": curve.tpot_p50_s.tolist(),
                "tpot_p99_s": curve.tpot_p99_s.tolist(),
                "completed_per_s": curve.completed_per_s.tolist(),
                "saturated": curve.saturated.tolist(),
            },
        }
    return out


def write_report(path: str | Path, scenario: Scenario | None = None) -> dict[str, object]:
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
