"""The summary's answers: per model the cheapest $/Mtok and the highest tokens/s per chip that meet an
interactivity target, a model × chip heatmap of $/Mtok there, and one sentence per model on what binds.

Every number is read from :mod:`roofline.analyses.targets` (the points served at load) and the sweep's
columns; this module only picks, formats and lays them out, for each target and dtype the page's
controls offer (:mod:`roofline.views.report.controls` swaps them in the browser).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from roofline.analyses.bands import tier_bands
from roofline.analyses.sweep.result import BLOCK_FIELDS
from roofline.analyses.targets import Served, Target, cheapest, fastest, served, what_binds
from roofline.deploy.bands import TIERS
from roofline.views.report.figures import themed
from roofline.views.report.page import Markup
from roofline.views.report.runs import ModelRun
from roofline.views.report.scenario import HardwareRef, Scenario

#: Targets the page's controls offer besides the scenario's own (seconds).
TPOT_CHOICES_S = (0.02, 0.03, 0.05, 0.1, 0.2)
TTFT_CHOICES_S = (0.25, 0.5, 1.0, 2.0, 5.0)
ANY_DTYPE = "any"
#: Heatmap colours on log10(cost / the model's cheapest): green at 1x, yellow near 3x, red from 10x on.
HEAT_SCALE = [[0.0, "#1a9850"], [0.5, "#fee08b"], [1.0, "#d73027"]]
HEAT_CAP = 10.0
HEAT_TICKS = (1.0, 2.0, 5.0, 10.0)
TABLE_HEADERS = (
    "model",
    "answer",
    "$/Mtok",
    "tokens/s per chip",
    "chip",
    "deployment",
    "batch",
    "weights · KV · matmuls",
    "TTFT (ms)",
    "TPOT (ms)",
    "requests/s per replica",
)


def choices(default: float, options: Sequence[float]) -> tuple[float, ...]:
    """The control's values: the options and the scenario's own, sorted."""
    return tuple(sorted({*options, default}))


def dtype_choices(runs: Mapping[str, ModelRun]) -> list[tuple[str, str]]:
    """(key, label) of the dtype control: any, then each weights/KV pair present."""
    pairs: dict[str, str] = {}
    for run in runs.values():
        for blk in run.points.blocks:
            w, kv = blk["weights"], blk["kv_dtype"]
            pairs[f"{w}/{kv}"] = f"{w} weights and KV" if w == kv else f"{w} weights, {kv} KV"
    return [(ANY_DTYPE, "any dtypes"), *sorted(pairs.items())]


def dtype_mask(run: ModelRun, key: str) -> np.ndarray:
    """Points of ``run`` with the weights/KV pair ``key`` (all for 'any')."""
    if key == ANY_DTYPE:
        return np.ones(len(run.points), dtype=bool)
    w, _, kv = key.partition("/")
    return run.where("weights", w) & run.where("kv_dtype", kv)


def deployment_text(points: object, i: int) -> str:
    """'8 chips · tp 8' (and pp, data-parallel replicas, ep or attention-dp where the sweep has them)."""
    cols = points.columns
    chips, tp, pp = int(cols["chips"][i]), int(cols["tp"][i]), int(cols["pp"][i])
    ep, dp = int(cols["ep"][i]), int(cols["attention_dp"][i])
    parts = [f"{chips} chip{'s' if chips > 1 else ''}", f"tp {tp}"]
    if pp > 1:
        parts.append(f"pp {pp}")
    if ep > 1:
        parts.append(f"ep {ep}")
    if dp > 1:
        parts.append(f"attention-dp {dp}")
    if chips > tp * dp * pp:
        parts.append(f"{chips // (tp * dp * pp)} replicas")
    return " · ".join(parts)


@dataclass(frozen=True)
class Pick:
    """One answer: a point of a model's summary points at a target, and its served numbers."""

    run: ModelRun
    index: int
    result: Served
    #: The data tier of the point's chip entry, whose held-out errors make its p10-p90 bands.
    tier: str = TIERS[0]

    def field(self, name: str) -> object:
        return self.run.label(name)[self.index] if name in BLOCK_FIELDS else self.run.points.columns[name][self.index]

    def bands(self) -> dict[str, object]:
        """p10-p90 of the served TTFT, TPOT and tokens/s per chip, from the held-out errors of the point's tier."""
        r, i = self.result, self.index
        values = {"ttft_s": r.ttft_s[i], "tpot_s": r.tpot_s[i], "tokens_per_s_per_chip": r.tokens_per_s_per_chip[i]}
        return tier_bands(self.tier, {k: float(v) for k, v in values.items()})

    def row(self, goal: str, tiers: Mapping[str, str]) -> list[str]:
        r, i = self.result, self.index
        chip = str(self.field("hardware"))
        bands = self.bands()
        return [
            self.run.name,
            goal,
            f"{r.cost_per_million_tokens[i]:,.3f}",
            with_band(r.tokens_per_s_per_chip[i], bands.get("tokens_per_s_per_chip"), 1.0, ",.0f"),
            f"{chip} ({tiers[chip]})" if chip in tiers else chip,
            deployment_text(self.run.points, i),
            str(int(self.field("batch"))),
            f"{self.field('weights')} · {self.field('kv_dtype')} · {self.field('compute_dtype')}",
            with_band(r.ttft_s[i], bands.get("ttft_s"), 1e3, ",.0f"),
            with_band(r.tpot_s[i], bands.get("tpot_s"), 1e3, ",.1f"),
            f"{r.rate_per_replica[i]:,.3g}",
        ]

    def as_dict(self) -> dict[str, object]:
        """For --json: the deployment and its served numbers (SI units)."""
        r, i, cols = self.result, self.index, self.run.points.columns
        return {
            "hardware": str(self.field("hardware")),
            "chips": int(cols["chips"][i]),
            "tp": int(cols["tp"][i]),
            "pp": int(cols["pp"][i]),
            "ep": int(cols["ep"][i]),
            "attention_dp": int(cols["attention_dp"][i]),
            "batch": int(cols["batch"][i]),
            "weights": str(self.field("weights")),
            "kv_dtype": str(self.field("kv_dtype")),
            "compute_dtype": str(self.field("compute_dtype")),
            "cost_per_million_tokens": float(r.cost_per_million_tokens[i]),
            "tokens_per_s_per_chip": float(r.tokens_per_s_per_chip[i]),
            "ttft_s": float(r.ttft_s[i]),
            "tpot_s": float(r.tpot_s[i]),
            "rate_per_replica": float(r.rate_per_replica[i]),
            "decode_step_s": float(cols["step_time_s"][i]),
            "decode_bound": str(cols["bound"][i]),
            "prefill_s": float(self.run.prefill.mean_s[i]),
            "prefill_bound": str(self.run.prefill.bound[i]),
            "binds": what_binds(self.run.points, r, i),
            "bands": self.bands(),
        }


def with_band(value: float, band: object, scale: float, spec: str) -> str:
    """A value with its p10-p90 band under it in small type ('31.2' over '(28.0-35.1)'), when the tier has one."""
    text = format(value * scale, spec)
    if not isinstance(band, dict):
        return text
    low, high = format(band["p10"] * scale, spec), format(band["p90"] * scale, spec)
    return Markup(f'{html.escape(text)}<br><span class="band">({html.escape(low)}–{html.escape(high)})</span>')


@dataclass(frozen=True)
class ModelAnswers:
    """One model at one target and dtype choice: the cheapest, the fastest per chip, each chip's cheapest."""

    run: ModelRun
    cheapest: Pick | None
    fastest: Pick | None
    per_chip: dict[str, Pick | None]


def answers(
    run: ModelRun,
    refs: Sequence[HardwareRef],
    scenario: Scenario,
    target: Target,
    dtype: str,
    result: Served | None = None,
) -> ModelAnswers:
    """The model's answers at ``target`` among the points with dtype choice ``dtype`` (``result``: the
    points already served at ``target``)."""
    if result is None:
        result = served(run.points, run.prefill, run.full_rate, scenario.lengths, target)
    mask = dtype_mask(run, dtype)

    tier = {r.label: r.data_tier for r in refs}

    def pick(i: int | None) -> Pick | None:
        return None if i is None else Pick(run, i, result, tier[str(run.label("hardware")[i])])

    per_chip = {r.label: pick(cheapest(result, mask & run.where("hardware", r.label))) for r in refs}
    return ModelAnswers(run, pick(cheapest(result, mask)), pick(fastest(result, mask)), per_chip)


BINDS = {
    "memory": "the batch stops at {batch} because a larger one does not fit in HBM",
    "TPOT SLO": "{tpot_why}",
    "TTFT SLO": "{ttft_why}",
    "cost": "a larger batch would still meet the target but cost more per token",
    "batch grid": "{batch} is the largest batch swept",
}


def binds_sentence(a: ModelAnswers, scenario: Scenario, target: Target) -> str:
    """One sentence: where the cheapest deployment runs, what bounds its steps, what stops it going further."""
    p = a.cheapest
    if p is None:
        return no_deployment_sentence(a.run.name, target)
    i, r = p.index, p.result
    why = what_binds(a.run.points, r, i)
    capped = int(r.limit[i]) != 0
    rate = f"{r.rate_per_replica[i]:.3g} requests/s per replica"
    tpot_why = (
        f"the {duration_text(target.tpot_slo_s)} TPOT target caps it at {rate} (prompts interleaved with the decode "
        "steps stretch them)"
        if capped
        else f"a larger batch would break the {duration_text(target.tpot_slo_s)} TPOT target"
    )
    ttft_why = (
        f"the {duration_text(target.ttft_slo_s)} TTFT target caps it at {rate} (prompts queue for prefill)"
        if capped
        else f"a larger batch would break the {duration_text(target.ttft_slo_s)} TTFT target"
    )
    tail = BINDS[why].format(batch=int(p.field("batch")), tpot_why=tpot_why, ttft_why=ttft_why)
    return (
        f"<b>{html.escape(a.run.name)}</b>: cheapest on {html.escape(deployment_text(a.run.points, i))} of "
        f"{html.escape(str(p.field('hardware')))} at batch {int(p.field('batch'))}; each decode step is "
        f"<b>{html.escape(str(p.field('bound')))}-bound</b> ({p.field('step_time_s') * 1e3:.1f} ms) and each "
        f"{scenario.input_len:,}-token prefill <b>{html.escape(str(a.run.prefill.bound[i]))}-bound</b> "
        f"({a.run.prefill.mean_s[i] * 1e3:,.0f} ms); {html.escape(tail)}."
    )


def no_deployment_sentence(name: str, target: Target) -> str:
    return (
        f"<b>{html.escape(name)}</b>: no deployment meets TTFT ≤ {duration_text(target.ttft_slo_s)} and TPOT ≤ "
        f"{duration_text(target.tpot_slo_s)} (none fits, or every one is too slow); a looser target may."
    )


def tiers(refs: Sequence[HardwareRef]) -> dict[str, str]:
    """Each entry's data tier in two words: 'calibrated' (fitted kernels) or 'spec sheet'."""
    return {r.label: "calibrated" if r.calibrated else "spec sheet" for r in refs}


def table_rows(all_answers: Sequence[ModelAnswers], tier: Mapping[str, str]) -> list[list[str]]:
    """Two rows per model (cheapest, fastest per chip; one when they are the same deployment), or one
    saying none meets the target; each chip with its data tier."""
    rows = []
    for a in all_answers:
        if a.cheapest is None or a.fastest is None:
            rows.append([a.run.name, "no deployment meets the target", *["-"] * (len(TABLE_HEADERS) - 2)])
        elif a.cheapest.index == a.fastest.index:
            rows.append(a.cheapest.row("cheapest and fastest", tier))
        else:
            rows.append(a.cheapest.row("cheapest", tier))
            rows.append(a.fastest.row("fastest", tier))
    return rows


def duration_text(seconds: float) -> str:
    """50 ms, 1 s, 2.5 s: a target as people write it."""
    return f"{seconds * 1e3:g} ms" if seconds < 1 else f"{seconds:g} s"


def heatmap_figure(all_answers: Sequence[ModelAnswers], tier: Mapping[str, str], title: str) -> dict[str, object]:
    """Model × chip heatmap of the cheapest $/Mtok meeting the target: colour = × the model's cheapest;
    each chip's data tier under its name."""
    chips = list(tier)
    models = [a.run.name for a in all_answers]
    z, text, hover, gaps = [], [], [], {"x": [], "y": []}
    for a in all_answers:
        costs = [p.result.cost_per_million_tokens[p.index] if p else np.nan for p in a.per_chip.values()]
        best = np.nanmin(costs) if not np.all(np.isnan(costs)) else np.nan
        z.append([None if np.isnan(c) else float(np.log10(min(c / best, HEAT_CAP))) for c in costs])
        text.append([f"${c:,.3g}" if not np.isnan(c) else "" for c in costs])
        hover.append([_hover(p, best) for p in a.per_chip.values()])
        for chip, p in a.per_chip.items():
            if p is None:
                gaps["x"].append(chip)
                gaps["y"].append(a.run.name)
    data: list[dict[str, object]] = [
        {
            "type": "heatmap",
            "x": list(chips),
            "y": models,
            "z": z,
            "text": text,
            "customdata": hover,
            "texttemplate": "%{text}",
            "hovertemplate": "%{y} on %{x}<br>%{customdata}<extra></extra>",
            "colorscale": HEAT_SCALE,
            "zmin": 0.0,
            "zmax": float(np.log10(HEAT_CAP)),
            "xgap": 2,
            "ygap": 2,
            "colorbar": {
                "title": {"text": "× the model's<br>cheapest"},
                "tickvals": [float(np.log10(t)) for t in HEAT_TICKS],
                "ticktext": [f"{t:g}×" for t in HEAT_TICKS[:-1]] + [f"≥{HEAT_TICKS[-1]:g}×"],
            },
        },
        {
            "type": "scatter",
            "mode": "text",
            "x": gaps["x"],
            "y": gaps["y"],
            "text": ["none meets"] * len(gaps["x"]),
            "textfont": {"color": "#7b8794"},
            "hoverinfo": "skip",
            "showlegend": False,
        },
    ]
    layout = themed(
        {
            "title": {"text": title, "y": 0.98, "yanchor": "top"},
            "height": 150 + 48 * len(models),
            "margin": {"l": 110, "r": 20, "t": 95, "b": 20},
            "xaxis": {
                "type": "category",
                "side": "top",
                "showline": False,
                "tickvals": chips,
                "ticktext": [f"{html.escape(c)}<br><i>{tier[c]}</i>" for c in chips],
            },
            "yaxis": {"type": "category", "autorange": "reversed", "showline": False},
        }
    )
    return {"data": data, "layout": layout}


def _hover(p: Pick | None, best: float) -> str:
    if p is None:
        return "no deployment meets the target"
    r, i = p.result, p.index
    return (
        f"${r.cost_per_million_tokens[i]:,.3f}/Mtok ({r.cost_per_million_tokens[i] / best:.2f}× the cheapest)<br>"
        f"{deployment_text(p.run.points, i)}, batch {int(p.field('batch'))}<br>"
        f"{p.field('weights')} weights, {p.field('kv_dtype')} KV<br>"
        f"{r.tokens_per_s_per_chip[i]:,.0f} tokens/s per chip<br>"
        f"TTFT {r.ttft_s[i] * 1e3:,.0f} ms, TPOT {r.tpot_s[i] * 1e3:,.1f} ms"
    )
