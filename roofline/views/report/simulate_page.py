"""The `roofline simulate --html` page: latency CDFs and the batch, queue and KV cache over time."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from roofline.analyses.simulate.metrics import SimulationResult
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
        ("completed / dropped", f"{result.completed} / {result.dropped}"),
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
        "<h2>Latency CDFs</h2>",
    ]
    for i, (key, label) in enumerate(LATENCIES):
        figure = cdf_figure(result.samples.get(key, np.zeros(0)), label)
        sections.append(f'<div class="figure">{figure_html(figure, f"cdf{i}")}</div>')
    sections += ["<h2>Over time</h2>", f'<div class="figure">{figure_html(series_figure(result), "series")}</div>']
    return page_html(title, sections)


def write_simulate_page(path: str | Path, result: SimulationResult, title: str) -> Path:
    """Write the page atomically and return its path."""
    return write_page(path, simulate_page_html(result, title))
