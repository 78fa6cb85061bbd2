"""The summary section and the page's controls: model, TPOT and TTFT targets, dtypes.

Every answer the controls can ask for is computed here, in Python, and embedded once as JSON; a small
inline script (no server, no network) swaps the summary's table, sentences and heatmap for the chosen
target and dtype, and shows the chosen model's traces in every figure whose traces carry
``meta.model``.  The page stays one self-contained file.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence

from roofline.analyses.targets import Served, Target, served
from roofline.views.report.page import PLOTLY_CONFIG, html_table, json_safe
from roofline.views.report.runs import ModelRun
from roofline.views.report.scenario import HardwareRef, Scenario
from roofline.views.report.summary import (
    TABLE_HEADERS,
    TPOT_CHOICES_S,
    TTFT_CHOICES_S,
    ModelAnswers,
    answers,
    binds_sentence,
    choices,
    dtype_choices,
    duration_text,
    heatmap_figure,
    table_rows,
    tiers,
)

HEATMAP_ID = "summary-heatmap"

SCRIPT = """
(function () {
  var D = JSON.parse(document.getElementById('roofline-data').textContent);
  function el(id) { return document.getElementById(id); }
  function cellKey() { return el('ctl-tpot').value + '|' + el('ctl-ttft').value + '|' + el('ctl-dtype').value; }
  function showSummary() {
    var c = D.cells[cellKey()];
    el('summary-rows').innerHTML = c.rows;
    el('summary-why').innerHTML = c.why;
    el('summary-title').textContent = c.title;
    Plotly.react(D.heatmap, c.figure.data, c.figure.layout, D.config);
    markModel();
  }
  function markModel() {
    var m = el('ctl-model').value;
    document.querySelectorAll('#summary-rows tr').forEach(function (tr) {
      tr.className = tr.firstChild && tr.firstChild.textContent === m ? 'chosen' : '';
    });
  }
  function showModel() {
    var m = el('ctl-model').value;
    document.querySelectorAll('.plotly-graph-div').forEach(function (gd) {
      if (!gd.data) { return; }
      var idx = [], vis = [];
      gd.data.forEach(function (t, i) {
        if (t.meta && t.meta.model !== undefined) { idx.push(i); vis.push(t.meta.model === m); }
      });
      if (idx.length) { Plotly.restyle(gd, {visible: vis}, idx); }
    });
    document.querySelectorAll('[data-model]').forEach(function (node) {
      node.hidden = node.getAttribute('data-model') !== m;
    });
    markModel();
  }
  ['ctl-tpot', 'ctl-ttft', 'ctl-dtype'].forEach(function (id) { el(id).addEventListener('change', showSummary); });
  el('ctl-model').addEventListener('change', showModel);
  showSummary();
  showModel();
})();
"""


def _select(control: str, label: str, options: Sequence[tuple[str, str]], chosen: str) -> str:
    items = "".join(
        f'<option value="{html.escape(v)}"{" selected" if v == chosen else ""}>{html.escape(text)}</option>'
        for v, text in options
    )
    return f'<label>{html.escape(label)} <select id="{control}">{items}</select></label>'


def key_of(value: float) -> str:
    """A target's control value: seconds written short ('0.05')."""
    return f"{value:g}"


def cell(
    runs: Mapping[str, ModelRun],
    refs: Sequence[HardwareRef],
    scenario: Scenario,
    target: Target,
    dtype: str,
    results: Mapping[str, Served],
) -> tuple[dict[str, object], list[ModelAnswers]]:
    """The summary for one target and dtype choice: table rows, sentences, heatmap, title."""
    found = [answers(run, refs, scenario, target, dtype, results[name]) for name, run in runs.items()]
    title = f"Answers at TTFT ≤ {duration_text(target.ttft_slo_s)} and TPOT ≤ {duration_text(target.tpot_slo_s)}"
    tier = tiers(refs)
    table = html_table(TABLE_HEADERS, table_rows(found, tier), text_columns=2)
    body = table[table.index("<tbody>") + len("<tbody>") : table.index("</tbody>")]
    why = "".join(f"<li>{binds_sentence(a, scenario, target)}</li>" for a in found)
    figure = heatmap_figure(found, tier, "cheapest $ per million output tokens meeting the target")
    return {"rows": body, "why": why, "title": title, "figure": figure}, found


def summary_section(
    runs: Mapping[str, ModelRun], refs: Sequence[HardwareRef], scenario: Scenario
) -> tuple[list[str], list[ModelAnswers]]:
    """The page's first section (id ``summary``) and the answers at the scenario's own target."""
    tpots = choices(scenario.tpot_slo_s, TPOT_CHOICES_S)
    ttfts = choices(scenario.ttft_slo_s, TTFT_CHOICES_S)
    dtypes = dtype_choices(runs)
    cells: dict[str, dict[str, object]] = {}
    default = Target(scenario.ttft_slo_s, scenario.tpot_slo_s)
    first: list[ModelAnswers] = []
    for tpot in tpots:
        for ttft in ttfts:
            target = Target(ttft, tpot)
            results = {n: served(r.points, r.prefill, r.full_rate, scenario.lengths, target) for n, r in runs.items()}
            for key, _ in dtypes:
                data, found = cell(runs, refs, scenario, target, key, results)
                cells[f"{key_of(tpot)}|{key_of(ttft)}|{key}"] = data
                if Target(ttft, tpot) == default and key == dtypes[0][0]:
                    first = found
    start = cells[f"{key_of(default.tpot_slo_s)}|{key_of(default.ttft_slo_s)}|{dtypes[0][0]}"]
    payload = {"cells": cells, "heatmap": HEATMAP_ID, "config": PLOTLY_CONFIG}
    try:  # the payload is built without NaN or infinities; json_safe (slower) only if one slipped in
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    except ValueError:
        data = json.dumps(json_safe(payload), separators=(",", ":"), allow_nan=False)
    data = data.replace("</", "<\\/")
    controls = [
        _select("ctl-model", "model", [(m, m) for m in runs], next(iter(runs))),
        _select("ctl-tpot", "TPOT ≤", [(key_of(v), duration_text(v)) for v in tpots], key_of(default.tpot_slo_s)),
        _select("ctl-ttft", "TTFT ≤", [(key_of(v), duration_text(v)) for v in ttfts], key_of(default.ttft_slo_s)),
        _select("ctl-dtype", "dtypes", dtypes, dtypes[0][0]),
    ]
    table = html_table(TABLE_HEADERS, [], text_columns=2).replace("<tbody>", '<tbody id="summary-rows">')
    table = table.replace('<tbody id="summary-rows">', f'<tbody id="summary-rows">{start["rows"]}', 1)
    section = [
        '<section id="summary">',
        f'<h2 id="summary-title">{html.escape(start["title"])}</h2>',
        f'<div class="controls">{"".join(controls)}</div>',
        f'<div class="figure"><div id="{HEATMAP_ID}" class="plotly-graph-div" '
        f'style="height:{int(start["figure"]["layout"]["height"])}px; width:100%;"></div></div>',
        table,
        '<p class="note">Fastest: the most tokens/s per chip. Each answer is one replica at the largest request '
        "rate its batch and the target allow (the capacity plan's queueing model); $/Mtok is per million "
        "generated tokens at that rate. In brackets: the p10–p90 band of tokens/s, TTFT and TPOT, from the "
        "errors of the chip entry's data tier (spec sheet, calibrated kernels, or those with an engine entry) "
        "on measured runs held out by source.</p>",
        f'<ul id="summary-why" class="why">{start["why"]}</ul>',
        f'<script type="application/json" id="roofline-data">{data}</script>',
        "</section>",
    ]
    return section, first


def controls_script() -> str:
    """The inline script, placed after every figure so that it finds them drawn."""
    return f'<script type="text/javascript">{SCRIPT}</script>'
