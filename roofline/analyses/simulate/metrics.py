"""What a simulation reports: latency percentiles, throughput, goodput, utilisation and time series."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from roofline.analyses.simulate.engine import Engine
from roofline.analyses.simulate.state import RequestTable

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Percentiles:
    """Mean and p50/p90/p99 of one latency, in seconds (NaN when there is no sample)."""

    mean: float
    p50: float
    p90: float
    p99: float

    def as_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "p50": self.p50, "p90": self.p90, "p99": self.p99}


@dataclass(frozen=True)
class TimeSeries:
    """The fleet's state on an even time grid: sequences in the batch, queue length, KV fraction used."""

    time_s: np.ndarray
    batch: np.ndarray
    queue: np.ndarray
    kv_use: np.ndarray

    def as_dict(self) -> dict[str, list[float]]:
        return {
            "time_s": self.time_s.tolist(),
            "batch": self.batch.tolist(),
            "queue": self.queue.tolist(),
            "kv_use": self.kv_use.tolist(),
        }


@dataclass(frozen=True)
class SimulationResult:
    """One simulated run; latencies over the measured (non-warm-up) completed requests."""

    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float
    goodput_fraction: float
    mean_batch: float
    mean_kv_utilization: float
    mean_in_system: float
    mean_queue: float
    preemptions: int
    completed: int
    dropped: int
    dropped_reasons: dict[str, int]
    arrived: int
    warmup_requests: int
    warmup_rule: str
    measured_requests: int
    window_s: tuple[float, float]
    duration_s: float
    steps: int
    load: str
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    series: TimeSeries
    samples: dict[str, np.ndarray] = field(default_factory=dict)  # per-request ttft, tpot, e2e (for CDFs)
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready keys (the per-request samples are left out)."""
        return {
            "ttft_s": self.ttft_s.as_dict(),
            "tpot_s": self.tpot_s.as_dict(),
            "itl_s": self.itl_s.as_dict(),
            "e2e_s": self.e2e_s.as_dict(),
            "output_tokens_per_s": self.output_tokens_per_s,
            "requests_per_s": self.requests_per_s,
            "goodput": {
                "requests_per_s": self.goodput_requests_per_s,
                "fraction": self.goodput_fraction,
                "ttft_slo_s": self.ttft_slo_s,
                "tpot_slo_s": self.tpot_slo_s,
            },
            "mean_batch": self.mean_batch,
            "mean_kv_utilization": self.mean_kv_utilization,
            "mean_in_system": self.mean_in_system,
            "mean_queue": self.mean_queue,
            "preemptions": self.preemptions,
            "completed": self.completed,
            "dropped": self.dropped,
            "dropped_reasons": dict(self.dropped_reasons),
            "arrived": self.arrived,
            "warmup": {"requests": self.warmup_requests, "rule": self.warmup_rule},
            "measured_requests": self.measured_requests,
            "window_s": list(self.window_s),
            "duration_s": self.duration_s,
            "steps": self.steps,
            "load": self.load,
            "time_series": self.series.as_dict(),
            "sources": dict(self.sources),
        }


def percentiles(values: np.ndarray) -> Percentiles:
    """Mean, p50, p90, p99 (numpy's linear interpolation); NaN for no samples."""
    if values.size == 0:
        return Percentiles(math.nan, math.nan, math.nan, math.nan)
    p = np.percentile(values, PERCENTILES)
    return Percentiles(float(values.mean()), float(p[0]), float(p[1]), float(p[2]))


def weighted_percentiles(values: np.ndarray, weights: np.ndarray) -> Percentiles:
    """Weighted mean and the smallest value whose cumulative weight reaches q of the total."""
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    if values.size == 0:
        return Percentiles(math.nan, math.nan, math.nan, math.nan)
    order = np.argsort(values, kind="stable")
    v, cw = values[order], np.cumsum(weights[order])
    picks = [float(v[min(int(np.searchsorted(cw, q / 100 * cw[-1])), v.size - 1)]) for q in PERCENTILES]
    return Percentiles(float(np.dot(values, weights) / cw[-1]), *picks)


def itl_samples(engines: list[Engine]) -> tuple[np.ndarray, np.ndarray]:
    """Inter-token gaps: every decode step's duration weighted by its measured decodes, plus preemption gaps."""
    parts, weights = [], []
    for e in engines:
        if e.itl_values:
            arrays = [np.atleast_1d(np.asarray(v, dtype=float)) for v in e.itl_values]
            parts.extend(arrays)
            weights.append(np.repeat(np.asarray(e.itl_weights), [a.size for a in arrays]))
        if e.gaps:
            parts.append(np.asarray(e.gaps))
            weights.append(np.ones(len(e.gaps)))
    if not parts:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(parts), np.concatenate(weights)


def window_integral(engines: list[Engine], column: int, t0: float, t1: float) -> float:
    """Σ over replicas of a cumulative record's increase between t0 and t1 (linear within a segment)."""
    total = 0.0
    for e in engines:
        rec = e.record_array()
        total += float(np.interp(t1, rec[:, 0], rec[:, column]) - np.interp(t0, rec[:, 0], rec[:, column]))
    return total


def time_series(decode: list[Engine], every: list[Engine], end_s: float, max_points: int) -> TimeSeries:
    """State after the last segment before each grid time; batch and KV from the decode replicas."""
    grid = np.linspace(0.0, end_s, max(2, max_points))

    def column(engines: list[Engine], col: int) -> np.ndarray:
        out = np.zeros((len(engines), grid.size))
        for i, e in enumerate(engines):
            rec = e.record_array()
            out[i] = rec[np.maximum(np.searchsorted(rec[:, 0], grid, side="right") - 1, 0), col]
        return out

    return TimeSeries(grid, column(decode, 6).sum(axis=0), column(every, 7).sum(axis=0), column(decode, 8).mean(axis=0))


def transfer_overlap_s(transfers: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Σ of each KV transfer's time inside [t0, t1] (requests in flight between pools)."""
    if not transfers:
        return 0.0
    arr = np.asarray(transfers)
    return float(np.clip(np.minimum(arr[:, 1], t1) - np.maximum(arr[:, 0], t0), 0.0, None).sum())


def summarize(
    table: RequestTable,
    engines: list[Engine],
    decode: list[Engine],
    transfers: list[tuple[float, float]],
    warmup: int,
    warmup_rule: str,
    load: str,
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
    max_points: int,
    sources: dict[str, str],
) -> SimulationResult:
    """Latencies of the measured requests; throughput and means over the measurement window."""
    arrival, first, finish = (np.asarray(x, dtype=float) for x in (table.arrival, table.first, table.finish))
    out = np.asarray(table.out, dtype=float)
    n = arrival.size
    done = np.isfinite(finish)
    measured = done & np.asarray(table.measured)
    ttft = (first - arrival)[measured]
    e2e = (finish - arrival)[measured]
    multi = measured & (out > 1)
    tpot = ((finish - first) / np.maximum(out - 1, 1))[multi]
    end = float(np.nanmax(finish)) if done.any() else 0.0
    t0 = float(arrival[min(warmup, n - 1)])
    t1 = float(np.nanmax(arrival))
    if t1 <= t0:  # every request arrived at once: measure until the last finish
        t1 = end
    span = max(t1 - t0, 1e-300)
    ok = np.ones(n, dtype=bool)
    if ttft_slo_s is not None:
        ok &= (first - arrival) <= ttft_slo_s
    if tpot_slo_s is not None:
        ok &= (out <= 1) | ((finish - first) / np.maximum(out - 1, 1) <= tpot_slo_s)
    good = float((ok & measured).sum() / measured.sum()) if measured.any() else math.nan
    rps = float(((finish > t0) & (finish <= t1)).sum() / span)
    in_system = window_integral(engines, 3, t0, t1) + transfer_overlap_s(transfers, t0, t1)
    reasons: dict[str, int] = {}
    for reason in table.dropped.values():
        reasons[reason] = reasons.get(reason, 0) + 1
    return SimulationResult(
        ttft_s=percentiles(ttft),
        tpot_s=percentiles(tpot),
        itl_s=weighted_percentiles(*itl_samples(engines)),
        e2e_s=percentiles(e2e),
        output_tokens_per_s=window_integral(engines, 5, t0, t1) / span,
        requests_per_s=rps,
        goodput_requests_per_s=rps * good if measured.any() else math.nan,
        goodput_fraction=good,
        mean_batch=window_integral(decode, 1, t0, t1) / span / len(decode),
        mean_kv_utilization=window_integral(decode, 2, t0, t1) / span / len(decode),
        mean_in_system=in_system / span,
        mean_queue=window_integral(engines, 4, t0, t1) / span,
        preemptions=sum(e.preemptions for e in engines),
        completed=int(done.sum()),
        dropped=len(table.dropped),
        dropped_reasons=reasons,
        arrived=n,
        warmup_requests=warmup,
        warmup_rule=warmup_rule,
        measured_requests=int(measured.sum()),
        window_s=(t0, t1),
        duration_s=end,
        steps=sum(e.steps for e in engines),
        load=load,
        ttft_slo_s=ttft_slo_s,
        tpot_slo_s=tpot_slo_s,
        series=time_series(decode, engines, end, max_points),
        samples={"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e},
        sources=sources,
    )
