"""Sections of the main report besides the frontiers: what each trace is, dropped configurations,
the book's LLaMA-2-13B tables, memory vs batch, and the classic roofline with its per-op table."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from roofline.analyses.step import Precision, decode_step
from roofline.analyses.sweep.run import SweepResult
from roofline.answer_key import book as textbook
from roofline.deploy import deployment
from roofline.specs import ModelSpec, load_hardware, load_model
from roofline.terms import decode_work, prefill_work
from roofline.terms.ops import OpBreakdown, step_ops
from roofline.views.report import figures, roofline_plot
from roofline.views.report.page import html_table
from roofline.views.report.scenario import HardwareRef, Scenario

FigureHtml = Callable[[dict[str, object]], str]
#: The book's LLaMA-2-13B tables: 8x TPU v5e at context 8192.
BOOK_SLICE_CHIPS = 8
BOOK_CONTEXT = 8192
#: The per-op configuration decodes the largest scenario batch up to this that fits.
OPS_BATCH = 32


def _collectives(ref: HardwareRef) -> str:
    if ref.spec.kind == "tpu":
        return "collectives overlapped with local work (XLA schedules them behind the matmuls)"
    return "collectives on the critical path (NCCL kernels run between the layers' matmuls)"


def trace_legend(refs: Sequence[HardwareRef], scenario: Scenario) -> list[str]:
    """The page's first lines: what a bound and a prediction are, and one row per trace."""
    rows = []
    for ref in refs:
        domain = f"{ref.domain}-chip scale-up domain" if ref.domain else "no scale-up limit in the file"
        if "bound" in scenario.traces:
            rows.append(
                (
                    f"{ref.label} · bound",
                    "dotted, open markers",
                    f"spec sheet of {ref.spec.name}: collectives overlapped (max of local work and "
                    "collectives), no kernel overheads; every tp degree, those across the scale-out "
                    f"network marked ✕ ({domain})",
                )
            )
        if "prediction" in scenario.traces:
            rates = (
                "fitted kernel times and per-kernel overheads of the calibrated profile"
                if ref.calibrated
                else "spec sheet rates and no kernel overheads (still optimistic)"
            )
            tp_rule = (
                "every tp degree"
                if scenario.scale_out_tp or not ref.domain
                else f"tp ≤ {ref.domain} only (one scale-up domain)"
            )
            rows.append(
                (
                    f"{ref.label} · prediction",
                    "solid, filled markers",
                    f"the step model's step time (step_time_s): {rates}; {_collectives(ref)}; {tp_rule}",
                )
            )
    lead = (
        '<p class="lead"><b>Bounds are not predictions.</b> A <b>bound</b> trace is the spec-sheet '
        "roofline with collectives hidden behind local work and no kernel overheads: a floor no engine "
        "reaches (on GPUs not even a plausible schedule). A <b>prediction</b> trace is the step model's "
        "step time, from a calibrated profile where one is given.</p>"
    )
    return [lead, html_table(("trace", "drawn as", "what it is"), rows, text_columns=3)]


def excluded_note(excluded: dict[str, int], scenario: Scenario) -> str:
    """The stated rule for tp across the scale-out network, with the points it left out."""
    if scenario.scale_out_tp or "prediction" not in scenario.traces:
        return ""
    counts = ", ".join(f"{label}: {n:,}" for label, n in excluded.items() if n) or "none in this scenario"
    return (
        '<p class="note">Left out of the prediction traces by default: tensor parallelism across a '
        "scale-out network (tp above the chip's max_ici_domain_chips, e.g. 8 NVLink GPUs), whose "
        "per-layer all-reduces over InfiniBand no deployment uses; such a slice is served as replicas of "
        f"a smaller tp group instead. Points left out: {html.escape(counts)}. The report's scale_out_tp "
        "option keeps them; the bound traces show them marked ✕.</p>"
    )


DROPPED_HEADERS = (
    "model",
    "chip",
    "weights",
    "KV",
    "chips",
    "tp",
    "context",
    "largest batch that fits",
    "dropped batches",
    "first dropped batch",
    "weights + KV there (GB)",
    "usable HBM (GB)",
)


def dropped_rows(name: str, result: SweepResult) -> list[list[object]]:
    """One row per (chip, dtypes, slice, tp, context) that lost batches: every batch ≥ the first dropped."""
    rows = []
    for slot in result.dropped_slots:
        blk = result.blocks[slot.block]
        tp = f"{slot.tp} x pp {slot.pp}" if slot.pp > 1 else slot.tp
        rows.append(
            [
                name,
                blk["hardware"],
                blk["weights"],
                blk["kv_dtype"],
                slot.chips,
                tp,
                slot.context,
                slot.largest_fit or "none",
                slot.dropped,
                slot.first_dropped,
                f"{slot.total_bytes / 1e9:,.1f}",
                f"{slot.usable_hbm_bytes / 1e9:,.1f}",
            ]
        )
    return rows


def book_section(fig_html: FigureHtml) -> list[str]:
    """The book's LLaMA-2-13B tables (8x v5e, context 8192) as curves with the book's values marked."""
    hw = load_hardware("tpu-v5e")
    batch = np.unique(np.round(np.geomspace(1, 512, 120)))
    curves, book, memory = [], [], []
    critical = 0.0
    for name, table in (("llama-2-13b", textbook.LLAMA_TABLE_1), ("llama-2-13b-gqa", textbook.LLAMA_TABLE_2)):
        res = decode_step(load_model(name), hw, BOOK_SLICE_CHIPS, batch, BOOK_CONTEXT, memory_utilization=1.0)
        critical = float(res.critical_batch)
        curves.append({"name": name, "batch": batch, "tokens_per_s": res.tokens_per_s, "fits": np.asarray(res.fits)})
        memory.append({"name": f"{name} (bf16)", "batch": batch, "total_bytes": res.total_bytes})
        book.append({"name": name, "batch": list(textbook.BATCHES), "tokens_per_s": list(table["tps"])})
    capacity = [{"name": f"{BOOK_SLICE_CHIPS}x tpu-v5e", "bytes": BOOK_SLICE_CHIPS * hw.hbm_bytes}]
    return [
        "<h2>Throughput vs batch: the book's LLaMA-2-13B tables</h2>",
        '<p class="note">8x TPU v5e, context 8192, bf16, no collectives (the book\'s idealised slice), all of '
        "HBM for weights + KV (the book's accounting). Crosses: the book's table values. The catalog's "
        "llama-2-13b-gqa has 8 KV heads and therefore 1.7e9 fewer attention parameters than the book's "
        "'same parameters, KV 5x smaller' thought experiment, "
        "so its curve sits slightly above the book's second table at small batch.</p>",
        fig_html(
            figures.throughput_vs_batch_figure(curves, book, critical, "LLaMA-2-13B on 8x TPU v5e: throughput vs batch")
        ),
        fig_html(figures.memory_vs_batch_figure(memory, capacity, "LLaMA-2-13B on 8x TPU v5e: memory vs batch")),
    ]


def first_precision(scenario: Scenario, ref: HardwareRef, weights: str | None = None) -> Precision:
    """A weight dtype (default the scenario's first) with its first KV and matmul dtypes on ``ref``."""
    weights = weights or scenario.weights[0]
    kv, compute = scenario.precisions(weights, ref.spec)
    return Precision(weights, kv[0], compute)


def memory_section(scenario: Scenario, refs: Sequence[HardwareRef], fig_html: FigureHtml) -> list[str]:
    """Weights + KV vs batch for each scenario model (first dtypes, first context), HBM lines per chip."""
    batch = np.asarray(scenario.batch, dtype=float)
    precision = first_precision(scenario, refs[0])
    curves = []
    for name in scenario.models:
        res = decode_step(load_model(name), refs[0].spec, 1, batch, scenario.contexts[0], precision)
        curves.append({"name": name, "batch": batch, "total_bytes": res.total_bytes})
    capacities = [
        {"name": f"{BOOK_SLICE_CHIPS}x {r.label}", "bytes": BOOK_SLICE_CHIPS * r.spec.hbm_bytes} for r in refs
    ]
    return [
        "<h2>Memory vs batch for the scenario's models</h2>",
        f'<p class="note">{html.escape(precision.weights)} weights, {html.escape(precision.kv)} KV, '
        f"context {scenario.contexts[0]}; dashed lines: physical HBM of an {BOOK_SLICE_CHIPS}-chip slice.</p>",
        fig_html(figures.memory_vs_batch_figure(curves, capacities, "memory vs batch")),
    ]


def ops_configuration(
    model: ModelSpec, ref: HardwareRef, scenario: Scenario, precision: Precision
) -> tuple[int, int] | None:
    """(chips = tp, batch) of the per-op section: the smallest scenario slice within the scale-up domain
    that holds the model, decoding the largest scenario batch up to 32 that fits there."""
    for chips in sorted(scenario.chips):
        if ref.domain and chips > ref.domain:
            continue
        res = decode_step(
            model,
            ref.spec_sheet,
            chips,
            1,
            scenario.contexts[0],
            precision,
            tp=chips,
            memory_utilization=scenario.memory_utilization,
        )
        fitting = [b for b in scenario.batch if b <= min(OPS_BATCH, float(res.max_batch))]
        if bool(np.all(res.fits)) and fitting:
            return chips, max(fitting)
    return None


def op_breakdowns(
    model: ModelSpec, ref: HardwareRef, scenario: Scenario, chips: int, batch: int, precision: Precision
) -> list[tuple[str, str, OpBreakdown]]:
    """(phase, rates, breakdown): decode of ``batch`` and prefill of one prompt, spec sheet then profile."""
    context = scenario.contexts[0]
    specs = [("spec sheet", ref.spec_sheet)] + ([("calibrated profile", ref.spec)] if ref.calibrated else [])
    out = []
    for kind, hw in specs:
        dep = deployment(
            model,
            hw,
            chips,
            precision,
            tp=chips,
            memory_utilization=scenario.memory_utilization,
            engine=ref.engine if hw is ref.spec and ref.calibrated else None,
        )
        out.append(("decode", kind, step_ops(dep, decode_work(batch, context))))
        out.append(("prefill", kind, step_ops(dep, prefill_work(1, context))))
    return out


@dataclass(frozen=True)
class OpsFound:
    """The per-op section's configuration (the chip entry by its index in the refs) and its breakdowns."""

    ref_index: int
    precision: Precision
    chips: int
    batch: int
    phases: list[tuple[str, str, OpBreakdown]]


def ops_found(name: str, scenario: Scenario, refs: Sequence[HardwareRef]) -> OpsFound | None:
    """The per-op configuration of model ``name`` (calibrated entries first, then each weight dtype) and its
    breakdowns; None when no scenario slice within one scale-up domain holds the model."""
    model = load_model(name)
    order = sorted(range(len(refs)), key=lambda i: not refs[i].calibrated)
    candidates = [(i, first_precision(scenario, refs[i], w)) for i in order for w in scenario.weights]
    for i, precision in candidates:
        cfg = ops_configuration(model, refs[i], scenario, precision)
        if cfg is not None:
            chips, batch = cfg
            phases = op_breakdowns(model, refs[i], scenario, chips, batch, precision)
            return OpsFound(i, precision, chips, batch, phases)
    return None


def ops_section(
    name: str,
    scenario: Scenario,
    refs: Sequence[HardwareRef],
    fig_html: FigureHtml,
    found: OpsFound | None,
) -> tuple[list[str], dict[str, object]]:
    """The classic roofline plot and the per-op tables of one configuration of model ``name``
    (``found``: :func:`ops_found`'s answer)."""
    head = f"<h3>{html.escape(name)}: the classic roofline, op by op</h3>"
    if found is None:
        return [
            head,
            '<p class="note">No scenario slice within one scale-up domain holds the model: no per-op breakdown.</p>',
        ], {}
    ref, precision, phases = refs[found.ref_index], found.precision, found.phases
    chips, batch = found.chips, found.batch
    config = (
        f"{ref.label}, {chips} chip{'s' if chips > 1 else ''} (tp {chips}), {precision.weights} weights, "
        f"{precision.kv} KV, context {scenario.contexts[0]}: decode of batch {batch} and prefill "
        f"of one {scenario.contexts[0]}-token prompt"
    )
    sections = [
        head,
        f'<p class="note">Configuration: {html.escape(config)} (the smallest scenario slice '
        f"within one scale-up domain that holds the model, the largest scenario batch up to "
        f"{OPS_BATCH} that fits, on the first chip entry (calibrated profiles first) and weight dtype where one "
        "does).</p>",
        fig_html(roofline_plot.roofline_figure(phases, f"{name} on {ref.label}: ops on the roofline")),
    ]
    for phase, kind, b in phases:
        sections += [
            f"<h4>{html.escape(phase)} · {html.escape(kind)}</h4>",
            html_table(roofline_plot.OP_HEADERS, roofline_plot.op_rows(b), text_columns=1),
            f'<p class="note">{html.escape(roofline_plot.op_note(b))}</p>',
        ]
    data = {
        "hardware": ref.label,
        "chips": chips,
        "batch": batch,
        "context": scenario.contexts[0],
        **roofline_plot.data_points(phases),
    }
    return sections, data
