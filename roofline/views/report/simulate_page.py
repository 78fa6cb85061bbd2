"""The `roofline simulate --html` page: latency CDFs and the batch, queue and KV cache over time."""

from __future__ import annotations

import html
from pathlib import Path
from typing import IO

import numpy as np

from roofline.analyses.simulate.results import SimulationResult
from roofline.core.errors import RooflineError
from roofline.views.report.figures import themed
from roofline.views.report.page import figure_html, html_table, page_html, tool_version, write_page

#: Most points drawn per CDF (evenly spaced ranks of the sorted samples).
CDF_POINTS = 2000
LATENCIES = (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "end-to-end latency"))


def cdf_points(samples: np.ndarray, max_points: int = CDF_POINTS) -> tuple[list[float], list[float]]:
    """(sorted values, fraction of requests at or below each), at most ``max_points`` of them."""
    values = np.sort(np.asarray(samples, dtype=float))
    if values.size == 0:
        return [], []
    ranks = np.unique(np.linspace(0, values.size - 1, min(values.size, max_points)).round().astype(int))
    return values[ranks].tolist(), ((ranks + 1) / values.size).tolist()


def cdf_figure(samples: np.ndarray, label: str) -> dict[str, object]:
    """One latency's empirical CDF in milliseconds."""
    x, y = cdf_points(samples)
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": label,
        "x": [v * 1e3 for v in x],
        "y": y,
        "line": {"shape": "hv"},
        "hovertemplate": "%{x:.2f} ms: %{y:.1%} of requests<extra></extra>",
    }
    return {
        "data": [trace],
        "layout": themed(
            {
                "title": {"text": f"{label}: CDF over requests"},
                "height": 340,
                "xaxis": {"title": {"text": f"{label} (ms)"}},
                "yaxis": {"title": {"text": "fraction of requests"}, "range": [0, 1.02]},
            }
        ),
    }


def series_figure(result: SimulationResult) -> dict[str, object]:
    """Sequences in the batch and queued requests (left axis), KV cache fraction used (right axis)."""
    s = result.series
    t = s.time_s.tolist()
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "batch (sequences)",
            "x": t,
            "y": s.batch.tolist(),
            "line": {"shape": "hv"},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "queue (waiting requests)",
            "x": t,
            "y": s.queue.tolist(),
            "line": {"shape": "hv"},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "KV cache used",
            "x": t,
            "y": s.kv_use.tolist(),
            "yaxis": "y2",
            "line": {"shape": "hv", "dash": "dot"},
        },
    ]
    layout = {
        "title": {"text": "Batch, queue and KV cache over time"},
        "height": 420,
        "xaxis": {"title": {"text": "time (s)"}},
        "yaxis": {"title": {"text": "sequences / requests"}},
        "yaxis2": {"title": {"text": "KV fraction used"}, "overlaying": "y", "side": "right", "range": [0, 1.02]},
        "legend": {"orientation": "h", "y": -0.2},
    }
    return {"data": data, "layout": themed(layout)}


def requests_figure(result: SimulationResult, max_points: int = CDF_POINTS) -> dict[str, object]:
    """Each request's TTFT against its send time (at most ``max_points`` evenly picked); abandoned ones
    (client timeout) on the axis at the time they gave up."""
    log = result.requests
    data: list[dict[str, object]] = []
    if log is not None and len(log):
        pick = np.unique(np.linspace(0, len(log) - 1, min(len(log), max_points)).round().astype(int))
        sent, first, failed = log.arrival_s[pick], log.first_token_s[pick], log.failed[pick]
        done = ~failed & np.isfinite(first)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "completed: TTFT",
                "x": sent[done].tolist(),
                "y": ((first - sent)[done] * 1e3).tolist(),
                "marker": {"size": 4},
                "hovertemplate": "sent %{x:.2f} s: TTFT %{y:.1f} ms<extra></extra>",
            }
        )
        if failed.any():
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "failed (client timeout)",
                    "x": sent[failed].tolist(),
                    "y": [0.0] * int(failed.sum()),
                    "marker": {"size": 5, "symbol": "x"},
                    "hovertemplate": "sent %{x:.2f} s: abandoned<extra></extra>",
                }
            )
    layout = {
        "title": {"text": "Requests: time to first token by send time"},
        "height": 380,
        "xaxis": {"title": {"text": "sent at (s)"}},
        "yaxis": {"title": {"text": "TTFT (ms)"}},
        "legend": {"orientation": "h", "y": -0.2},
    }
    return {"data": data, "layout": themed(layout)}


def stage_rows(result: SimulationResult) -> list[tuple[str, ...]]:
    """One row per stage: what it offered, sent, completed, failed, mean TTFT and E2E, tokens/s."""
    return [
        (
            s.load,
            str(s.sent),
            str(s.completed),
            str(s.failed),
            f"{s.ttft_s.mean * 1e3:.1f}",
            f"{s.e2e_s.mean:.3f}",
            f"{s.output_tokens_per_s:,.0f}",
            "not modelled" if s.prefix_hit_rate is None else f"{s.prefix_hit_rate:.1%}",
        )
        for s in result.stages
    ]


def summary_rows(result: SimulationResult) -> list[tuple[str, str, str, str, str]]:
    """Table rows: each latency's mean, p50, p90 and p99 in ms."""
    rows = []
    for key, label in (*LATENCIES[:2], ("itl_s", "inter-token latency"), LATENCIES[2]):
        p = getattr(result, key)
        rows.append((label, *(f"{v * 1e3:.2f}" for v in (p.mean, p.p50, p.p90, p.p99))))
    return rows


def simulate_page_html(result: SimulationResult, title: str) -> str:
    """The whole page: summary, latency table, three CDFs and the time series."""
    facts = [
        ("load", result.load),
        ("completed / failed (timeout) / dropped", f"{result.completed} / {result.failed} / {result.dropped}"),
        (
            "prefix cache hit rate",
            "not modelled" if result.prefix_hit_rate is None else f"{result.prefix_hit_rate:.1%}",
        ),
        ("warm-up", result.warmup_rule),
        ("output tokens/s", f"{result.output_tokens_per_s:,.1f}"),
        ("requests/s", f"{result.requests_per_s:,.3f}"),
        ("mean batch", f"{result.mean_batch:.1f}"),
        ("mean KV utilization", f"{result.mean_kv_utilization:.1%}"),
        ("preemptions", str(result.preemptions)),
        ("goodput (fraction meeting the SLOs)", f"{result.goodput_fraction:.1%}"),
    ] + [(k, v) for k, v in result.sources.items()]
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">roofline {html.escape(tool_version())}: discrete-event simulation of continuous '
        "batching; latencies over the measured requests.</p>",
        html_table(("quantity", "value"), facts, text_columns=2),
        "<h2>Latency percentiles (ms)</h2>",
        html_table(("latency", "mean", "p50", "p90", "p99"), summary_rows(result), text_columns=1),
    ]
    if result.stages:
        sections += [
            "<h2>Stages</h2>",
            html_table(
                (
                    "stage",
                    "sent",
                    "completed",
                    "failed",
                    "TTFT mean (ms)",
                    "E2E mean (s)",
                    "output tok/s",
                    "prefix hits",
                ),
                stage_rows(result),
                text_columns=1,
            ),
        ]
    sections.append("<h2>Latency CDFs</h2>")
    for i, (key, label) in enumerate(LATENCIES):
        figure = cdf_figure(result.samples.get(key, np.zeros(0)), label)
        sections.append(f'<div class="figure">{figure_html(figure, f"cdf{i}")}</div>')
    sections += [
        "<h2>Over time</h2>",
        f'<div class="figure">{figure_html(series_figure(result), "series")}</div>',
        f'<div class="figure">{figure_html(requests_figure(result), "requests")}</div>',
    ]
    return page_html(title, sections)


def write_simulate_page(path: str | Path, result: SimulationResult, title: str) -> Path:
    """Write the page atomically and return its path."""
    return write_page(path, simulate_page_html(result, title))


def write_requests_csv(path: str | Path, result: SimulationResult) -> Path:
    """One row per request sent (:data:`~roofline.analyses.simulate.results.REQUEST_FIELDS`), written atomically;
    text cells that a spreadsheet would run as formulas are escaped (roofline.core.tables)."""
    from roofline.analyses.simulate.results import REQUEST_FIELDS
    from roofline.core.files import write_atomic
    from roofline.core.tables import csv_writer

    log = result.requests
    if log is None:
        raise RooflineError("this result carries no per-request log to write")

    def fill(handle: IO[str]) -> None:
        writer = csv_writer(handle, lineterminator="\n")
        writer.writerow(REQUEST_FIELDS)
        writer.writerows(log.rows())

    return write_atomic(path, fill)
