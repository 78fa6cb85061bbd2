"""The main report: latency/throughput/cost frontiers per model and chip, the book's figures.

Data comes from :func:`roofline.sweep.decode_sweep` and :func:`roofline.analysis.decode_step`;
this module only lays it out as one self-contained HTML page.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import textbook
from ..analysis import BOOK, Precision, decode_step
from ..deploy import DEFAULT_MEMORY_UTILIZATION
from ..pareto import OBJECTIVES, frontier_by_group
from ..specs import load_hardware, load_model
from ..sweep import SweepResult, decode_sweep
from . import figures
from .page import figure_html, html_table, page_html, tool_version, write_page

DEFAULT_MODELS = ("llama-2-13b", "llama-2-13b-gqa", "llama-3-70b")
DEFAULT_HARDWARE = ("tpu-v5e", "tpu-v6e", "h100-sxm", "h200")
DEFAULT_BATCH = tuple(int(b) for b in np.unique(np.round(np.geomspace(1, 4096, 160))))
DEFAULT_CHIPS = (1, 2, 4, 8, 16, 32, 64)
OBJECTIVE_TITLES = {
    "latency-throughput": "per-token latency vs throughput per chip",
    "interactivity-throughput": "interactivity vs throughput per chip",
    "cost-latency": "$ per million tokens vs per-token latency",
}
#: The book's LLaMA-2-13B tables: 8x TPU v5e at context 8192.
BOOK_SLICE_CHIPS = 8
BOOK_CONTEXT = 8192


@dataclass(frozen=True)
class Scenario:
    """What a report sweeps: models × chips × dtypes × slice sizes × batch × context, and prices."""

    models: tuple[str, ...] = DEFAULT_MODELS
    hardware: tuple[str, ...] = DEFAULT_HARDWARE
    weights: tuple[str, ...] = ("bf16", "int8")
    kv_dtypes: tuple[str, ...] = ("bf16", "int8")
    context: tuple[int, ...] = (8192,)
    batch: tuple[int, ...] = DEFAULT_BATCH
    chips: tuple[int, ...] = DEFAULT_CHIPS
    tp: tuple[int, ...] | None = None
    compute_dtype: str = "bf16"
    prices: Mapping[str, float] = field(default_factory=dict)
    pp: tuple[int, ...] | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION

    def describe(self) -> list[tuple[str, str]]:
        """(parameter, value) rows for the report's scenario table."""
        batch = f"{len(self.batch)} values from {min(self.batch)} to {max(self.batch)}"
        return [
            ("models", ", ".join(self.models)),
            ("chips", ", ".join(self.hardware)),
            ("chips per slice", ", ".join(map(str, self.chips))),
            ("model-parallel degree (tp)", "the whole slice" if self.tp is None else ", ".join(map(str, self.tp))),
            ("pipeline depth (pp)", "1" if self.pp is None else ", ".join(map(str, self.pp))),
            ("memory utilization", f"{self.memory_utilization:g} of physical HBM"),
            ("batch", batch),
            ("context (tokens)", ", ".join(map(str, self.context))),
            ("weight dtypes", ", ".join(self.weights)),
            ("KV-cache dtypes", ", ".join(self.kv_dtypes)),
            ("matmul dtype", self.compute_dtype),
            ("prices ($/chip-hour)", ", ".join(f"{k}={v:g}" for k, v in self.prices.items()) or "hardware files"),
        ]


def run_sweeps(scenario: Scenario) -> dict[str, SweepResult]:
    """One sweep per model over the scenario's chips, dtypes, slices, batches and contexts."""
    hardware = [load_hardware(h) for h in scenario.hardware]
    return {
        name: decode_sweep(load_model(name), hardware, scenario.batch, scenario.chips, scenario.context,
                           scenario.weights, scenario.kv_dtypes, scenario.tp, scenario.compute_dtype,
                           scenario.prices, pp=scenario.pp, memory_utilization=scenario.memory_utilization)
        for name in scenario.models
    }


def frontier_rows(
    result: SweepResult, objective: str = "latency-throughput", group: str = "hardware"
) -> list[list[Any]]:
    """Table rows of every group's (chip's) frontier points, in the frontier's order."""
    rows: list[list[Any]] = []
    for idx in frontier_by_group(result.columns, result.group_labels(group), objective).values():
        for i in idx:
            c = {k: result.column(k)[i] for k in figures.HOVER_FIELDS}
            rows.append([c["hardware"], c["chips"], c["topology"] or "-", c["tp"], c["batch"], c["weights"],
                         c["kv_dtype"],
                         c["context"], f"{c['step_time_s'] * 1e3:.3f}", f"{c['tokens_per_s_per_chip']:,.1f}",
                         f"{c['tokens_per_s_per_user']:,.1f}", f"{c['cost_per_million_tokens']:.3f}",
                         c["bound"]])
    return rows


FRONTIER_HEADERS = ("chip", "chips", "slice", "tp", "batch", "weights", "KV", "context", "step (ms)",
                    "tokens/s/chip", "tokens/s/user", "$/Mtok", "bound")


def book_curves() -> tuple[list[dict[str, Any]], list[dict[str, Any]], float, list[dict[str, Any]]]:
    """The book's LLaMA-2-13B setup (8x v5e, context 8192): our curves, its table, B_crit, memory."""
    hw = load_hardware("tpu-v5e")
    batch = np.unique(np.round(np.geomspace(1, 512, 120)))
    curves, book, memory = [], [], []
    critical = 0.0
    for name, table in (("llama-2-13b", textbook.LLAMA_TABLE_1), ("llama-2-13b-gqa", textbook.LLAMA_TABLE_2)):
        res = decode_step(load_model(name), hw, BOOK_SLICE_CHIPS, batch, BOOK_CONTEXT)
        critical = float(res.critical_batch)
        curves.append({"name": name, "batch": batch, "tokens_per_s": res.tokens_per_s,
                       "fits": np.asarray(res.fits)})
        memory.append({"name": f"{name} (bf16)", "batch": batch, "total_bytes": res.total_bytes})
        book.append({"name": name, "batch": list(textbook.BATCHES), "tokens_per_s": list(table["tps"])})
    return curves, book, critical, memory


def scenario_memory_curves(scenario: Scenario) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Weights + KV vs batch for each scenario model (first dtypes, first context), HBM lines."""
    batch = np.asarray(scenario.batch, dtype=float)
    precision = Precision(scenario.weights[0], scenario.kv_dtypes[0], scenario.compute_dtype)
    first_hw = load_hardware(scenario.hardware[0])
    curves = []
    for name in scenario.models:
        res = decode_step(load_model(name), first_hw, 1, batch, scenario.context[0], precision)
        curves.append({"name": name, "batch": batch, "total_bytes": res.total_bytes})
    slice_chips = BOOK_SLICE_CHIPS
    capacities = [{"name": f"{slice_chips}x {h}", "bytes": slice_chips * load_hardware(h).hbm_bytes}
                  for h in scenario.hardware]
    return curves, capacities


def _summary_rows(name: str, result: SweepResult) -> list[list[Any]]:
    hw = result.column("hardware")
    rows = []
    for chip, dropped in result.dropped_by_hardware.items():
        mask = hw == chip
        kept = int(mask.sum())
        best = (f"{result.columns['tokens_per_s_per_chip'][mask].max():,.1f}" if kept else "-")
        fastest = (f"{result.columns['step_time_s'][mask].min() * 1e3:.3f}" if kept else "-")
        cheapest = (f"{result.columns['cost_per_million_tokens'][mask].min():.3f}" if kept else "-")
        rows.append([name, chip, kept + dropped, kept, dropped, best, fastest, cheapest])
    return rows


def build_report(scenario: Scenario) -> tuple[str, dict[str, Any]]:
    """The report's HTML and a summary (counts per model, figures, version) for --json."""
    sweeps = run_sweeps(scenario)
    version = tool_version()
    sections = [
        "<h1>roofline: latency, throughput and cost frontiers</h1>",
        f"<p class=\"note\">roofline {html.escape(version)} · generated "
        f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC} · formulas: {html.escape(BOOK)}, "
        "'Theoretical estimates for LLM latency and throughput'. Step time = the book's general form "
        "(KV read + max(matmul FLOPs, weight load)) with tensor-parallel collectives overlapped.</p>",
        "<h2>Scenario</h2>",
        html_table(("parameter", "value"), scenario.describe(), text_columns=2),
    ]
    summary_rows: list[list[Any]] = []
    sources: dict[str, str] = {}
    for name, result in sweeps.items():
        summary_rows += _summary_rows(name, result)
        sources.update(result.sources)
        sources[f"model:{name}"] = result.sources["model"]
    sources.pop("model", None)
    sections += [
        "<h2>Configurations evaluated</h2>",
        "<p class=\"note\">Points whose weights + KV cache exceed the slice's HBM are dropped "
        "(counted below).</p>",
        html_table(("model", "chip", "evaluated", "fit in HBM", "dropped (out of memory)",
                    "best tokens/s/chip", "fastest step (ms)", "cheapest $/Mtok"), summary_rows,
                   text_columns=2),
        "<details><summary>Where the numbers come from</summary>",
        html_table(("input", "source"), sorted(sources.items()), text_columns=2),
        "</details>",
    ]
    n_fig = 0
    summary: dict[str, Any] = {"version": version, "models": {}, "sources": dict(sorted(sources.items()))}
    for name, result in sweeps.items():
        sections.append(f"<h2>{html.escape(name)}: frontiers</h2>")
        if len(result) == 0:
            sections.append("<p class=\"note\">No configuration fits in HBM: nothing to plot.</p>")
        else:
            for objective in OBJECTIVES:
                fig = figures.frontier_figure(result, objective, f"{name}: {OBJECTIVE_TITLES[objective]}")
                sections.append(f"<div class=\"figure\">{figure_html(fig, f'fig-{n_fig}')}</div>")
                n_fig += 1
        rows = frontier_rows(result) if len(result) else []
        sections += [
            f"<details><summary>{len(rows)} points on the latency/throughput frontiers of {html.escape(name)}"
            "</summary>", html_table(FRONTIER_HEADERS, rows, text_columns=1), "</details>",
        ]
        summary["models"][name] = {"evaluated": result.evaluated, "fit": len(result),
                                   "dropped_out_of_memory": result.dropped_out_of_memory,
                                   "frontier_points": len(rows)}
    curves, book, critical, book_memory = book_curves()
    sections += [
        "<h2>Throughput vs batch: the book's LLaMA-2-13B tables</h2>",
        "<p class=\"note\">8x TPU v5e, context 8192, bf16, no collectives (the book's idealised slice). "
        "Crosses: the book's table values. The catalog's llama-2-13b-gqa has 8 KV heads and therefore "
        "1.7e9 fewer attention parameters than the book's 'same parameters, KV 5x smaller' thought "
        "experiment, so its curve sits slightly above the book's second table at small batch.</p>",
        figure_html(figures.throughput_vs_batch_figure(
            curves, book, critical, "LLaMA-2-13B on 8x TPU v5e: throughput vs batch"), f"fig-{n_fig}"),
        figure_html(figures.memory_vs_batch_figure(
            book_memory, [{"name": "8x tpu-v5e", "bytes": BOOK_SLICE_CHIPS * load_hardware("tpu-v5e").hbm_bytes}],
            "LLaMA-2-13B on 8x TPU v5e: memory vs batch"), f"fig-{n_fig + 1}"),
    ]
    n_fig += 2
    mem_curves, capacities = scenario_memory_curves(scenario)
    sections += [
        "<h2>Memory vs batch for the scenario's models</h2>",
        f"<p class=\"note\">{html.escape(scenario.weights[0])} weights, {html.escape(scenario.kv_dtypes[0])} KV, "
        f"context {scenario.context[0]}; dashed lines: HBM of an {BOOK_SLICE_CHIPS}-chip slice.</p>",
        figure_html(figures.memory_vs_batch_figure(mem_curves, capacities, "memory vs batch"), f"fig-{n_fig}"),
    ]
    n_fig += 1
    summary["figures"] = n_fig
    return page_html("roofline report", sections), summary


def write_report(path: str | Path, scenario: Scenario | None = None) -> dict[str, Any]:
    """Build the report and write it atomically to ``path``; the summary gains 'path' and 'bytes'."""
    text, summary = build_report(scenario or Scenario())
    target = write_page(path, text)
    summary["path"] = str(target)
    summary["bytes"] = len(text.encode("utf-8"))
    return summary


def write_frontier_page(
    path: str | Path, result: SweepResult, objectives: Sequence[str], title: str,
    notes: Sequence[tuple[str, str]], group: str = "hardware",
) -> Path:
    """A smaller page for ``roofline pareto --html``: the chosen frontiers and their points."""
    sections = [f"<h1>{html.escape(title)}</h1>",
                f"<p class=\"note\">roofline {html.escape(tool_version())}</p>",
                html_table(("parameter", "value"), list(notes), text_columns=2),
                "<details><summary>Where the numbers come from</summary>",
                html_table(("input", "source"), sorted(result.sources.items()), text_columns=2), "</details>"]
    for i, objective in enumerate(objectives):
        fig = figures.frontier_figure(result, objective, OBJECTIVE_TITLES[objective], group)
        sections.append(f"<div class=\"figure\">{figure_html(fig, f'fig-{i}')}</div>")
        sections.append(html_table(FRONTIER_HEADERS, frontier_rows(result, objective, group), text_columns=1))
    return write_page(path, page_html(title, sections))
