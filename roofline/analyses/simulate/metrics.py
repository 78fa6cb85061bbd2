"""Summaries of a run: latency percentiles, throughput and goodput, utilisation, per stage and overall."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline.analyses.simulate.engine import Engine
from roofline.analyses.simulate.records import BATCH, IN_SYSTEM, KV, KV_USE, QUEUE, RUNNING, TOKENS, WAITING
from roofline.analyses.simulate.results import Percentiles, RequestLog, SimulationResult, StageResult, TimeSeries
from roofline.analyses.simulate.state import Records

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Window:
    """A span of send times measured together (the whole run, or one stage)."""

    start_s: float
    end_s: float
    label: str


@dataclass(frozen=True)
class RunFacts:
    """What the summary needs besides the records and the replicas."""

    warmup: int
    warmup_rule: str
    load: str
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    timeout_s: float | None
    max_points: int
    cache_modelled: bool
    stages: tuple[Window, ...]
    sources: dict[str, str]


def percentiles(values: np.ndarray) -> Percentiles:
    """Mean, p50, p90, p99 (numpy's linear interpolation); NaN for no samples."""
    if values.size == 0:
        return Percentiles(math.nan, math.nan, math.nan, math.nan)
    p = np.percentile(values, PERCENTILES)
    return Percentiles(float(values.mean()), float(p[0]), float(p[1]), float(p[2]))


def weighted_percentiles(values: np.ndarray, weights: np.ndarray) -> Percentiles:
    """Weighted mean and the smallest value whose cumulative weight reaches q of the total.  (Ties may sort in
    any order: a pick is a value, and the cumulative weights at the end of a run of ties do not depend on it.)"""
    keep = weights > 0
    if not keep.all():
        values, weights = values[keep], weights[keep]
    if values.size == 0:
        return Percentiles(math.nan, math.nan, math.nan, math.nan)
    order = np.argsort(values)
    v, cw = values[order], np.cumsum(weights[order])
    del order
    picks = [float(v[min(int(np.searchsorted(cw, q / 100 * cw[-1])), v.size - 1)]) for q in PERCENTILES]
    return Percentiles(float(np.dot(values, weights) / cw[-1]), *picks)


def step_ends(run_ends: np.ndarray, times: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each decode step's end from its run's end: the run's end less the later steps of the run."""
    after = np.cumsum(times[::-1])[::-1] - times  # Σ of the steps after each, to the end of all
    last = np.cumsum(counts) - 1
    return np.repeat(run_ends + after[last], counts) - after


def itl_samples(engines: Sequence[Engine], t0: float = -math.inf, t1: float = math.inf) -> Percentiles:
    """Inter-token gaps: each decode step of a run ending in [t0, t1] weighted by its measured decodes, plus
    the gaps across preemptions."""
    parts, weights = [], []
    for e in engines:
        if e.itl_k:
            times, counts = np.frombuffer(e.itl_s, dtype=float), np.frombuffer(e.itl_k, dtype=np.int64)
            weight = np.repeat(np.frombuffer(e.itl_w, dtype=float), counts)
            if t0 == -math.inf and t1 == math.inf:
                parts.append(times)
                weights.append(weight)
            else:
                ends = step_ends(np.frombuffer(e.itl_end, dtype=float), times, counts)
                sel = (ends >= t0) & (ends <= t1)
                parts.append(times[sel])
                weights.append(weight[sel])
        if e.gaps:
            parts.append(np.asarray(e.gaps))
            weights.append(np.ones(len(e.gaps)))
    if not parts:
        return weighted_percentiles(np.zeros(0), np.zeros(0))
    if len(parts) == 1:
        return weighted_percentiles(parts[0], weights[0])
    return weighted_percentiles(np.concatenate(parts), np.concatenate(weights))


def window_integral(engines: Sequence[Engine], column: int, t0: float, t1: float) -> float:
    """Σ over replicas of a cumulative record's increase between t0 and t1 (linear within a record)."""
    total = 0.0
    for e in engines:
        rec = e.tl.as_array()
        total += float(np.interp(t1, rec[:, 0], rec[:, column]) - np.interp(t0, rec[:, 0], rec[:, column]))
    return total


def time_series(decode: Sequence[Engine], every: Sequence[Engine], end_s: float, max_points: int) -> TimeSeries:
    """State after the last record before each grid time; batch and KV from the decode replicas."""
    grid = np.linspace(0.0, end_s, max(2, max_points))

    def column(engines: Sequence[Engine], col: int) -> np.ndarray:
        out = np.zeros((len(engines), grid.size))
        for i, e in enumerate(engines):
            rec = e.tl.as_array()
            out[i] = rec[np.maximum(np.searchsorted(rec[:, 0], grid, side="right") - 1, 0), col]
        return out

    return TimeSeries(
        grid,
        column(decode, RUNNING).sum(axis=0),
        column(every, WAITING).sum(axis=0),
        column(decode, KV_USE).mean(axis=0),
    )


def transfer_overlap_s(transfers: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Σ of each KV transfer's time inside [t0, t1] (requests in flight between pools)."""
    if not transfers:
        return 0.0
    arr = np.asarray(transfers)
    return float(np.clip(np.minimum(arr[:, 1], t1) - np.maximum(arr[:, 0], t0), 0.0, None).sum())


def request_log(rec: Records) -> RequestLog:
    return RequestLog(
        rec.send,
        rec.first,
        rec.finish,
        rec.input_len,
        rec.output_len,
        rec.cached,
        rec.preemptions,
        np.isfinite(rec.failed_at),
        rec.measured,
        rec.stage,
    )


class _Latencies:
    """Latency samples of a selection of requests (client view)."""

    def __init__(self, rec: Records, facts: RunFacts, sel: np.ndarray) -> None:
        done = np.isfinite(rec.finish) & sel
        self.sent, self.done = int(sel.sum()), done
        self.failed = int((np.isfinite(rec.failed_at) & sel).sum())
        out = rec.output_len.astype(float)
        self.ttft = (rec.first - rec.send)[done]
        self.e2e = (rec.finish - rec.send)[done]
        multi = done & (out > 1)
        self.tpot = ((rec.finish - rec.first) / np.maximum(out - 1, 1))[multi]
        ok = done.copy()
        if facts.ttft_slo_s is not None:
            ok &= (rec.first - rec.send) <= facts.ttft_slo_s
        if facts.tpot_slo_s is not None:
            ok &= (out <= 1) | ((rec.finish - rec.first) / np.maximum(out - 1, 1) <= facts.tpot_slo_s)
        self.good = float(ok.sum() / self.sent) if self.sent else math.nan
        admitted = sel & (rec.cached >= 0)
        prompt = float(rec.input_len[admitted].sum())
        self.hit_rate = float(rec.cached[admitted].sum()) / prompt if facts.cache_modelled and prompt else None


def _stage(i: int, w: Window, rec: Records, engines: Sequence[Engine], facts: RunFacts) -> StageResult:
    sel = rec.measured & (rec.send >= w.start_s) & (rec.send < w.end_s)
    lat = _Latencies(rec, facts, sel)
    span = max(w.end_s - w.start_s, 1e-300)
    all_sent = (rec.send >= w.start_s) & (rec.send < w.end_s)
    rps = float(((rec.finish > w.start_s) & (rec.finish <= w.end_s)).sum() / span)
    return StageResult(
        index=i,
        load=w.label,
        start_s=w.start_s,
        duration_s=w.end_s - w.start_s,
        sent=int(all_sent.sum()),
        completed=int((all_sent & np.isfinite(rec.finish)).sum()),
        failed=int((all_sent & np.isfinite(rec.failed_at)).sum()),
        measured_requests=lat.sent,
        ttft_s=percentiles(lat.ttft),
        tpot_s=percentiles(lat.tpot),
        itl_s=itl_samples(engines, w.start_s, w.end_s),
        e2e_s=percentiles(lat.e2e),
        output_tokens_per_s=window_integral(engines, TOKENS, w.start_s, w.end_s) / span,
        requests_per_s=rps,
        goodput_requests_per_s=rps * lat.good if lat.sent else math.nan,
        prefix_hit_rate=lat.hit_rate,
    )


def summarize(
    rec: Records,
    engines: Sequence[Engine],
    decode: Sequence[Engine],
    transfers: list[tuple[float, float]],
    facts: RunFacts,
) -> SimulationResult:
    """Latencies of the measured requests; throughput and means over the measurement window."""
    n = rec.send.size
    finish = rec.finish
    done = np.isfinite(finish)
    end = float(max(np.nanmax(finish) if done.any() else 0.0, max((e.clock for e in engines), default=0.0)))
    if facts.stages:
        t0, t1 = facts.stages[0].start_s, facts.stages[-1].end_s
    else:
        t0 = float(rec.send[min(facts.warmup, n - 1)])
        t1 = float(np.max(rec.send))
        if t1 <= t0:  # every request arrived at once: measure until the last finish
            t1 = end
    span = max(t1 - t0, 1e-300)
    lat = _Latencies(rec, facts, rec.measured)
    rps = float(((finish > t0) & (finish <= t1)).sum() / span)
    in_system = window_integral(engines, IN_SYSTEM, t0, t1) + transfer_overlap_s(transfers, t0, t1)
    reasons: dict[str, int] = {}
    for reason in rec.dropped.values():
        reasons[reason] = reasons.get(reason, 0) + 1
    return SimulationResult(
        ttft_s=percentiles(lat.ttft),
        tpot_s=percentiles(lat.tpot),
        itl_s=itl_samples(engines) if not facts.stages else itl_samples(engines, t0, t1),
        e2e_s=percentiles(lat.e2e),
        output_tokens_per_s=window_integral(engines, TOKENS, t0, t1) / span,
        requests_per_s=rps,
        goodput_requests_per_s=rps * lat.good if lat.sent else math.nan,
        goodput_fraction=lat.good,
        mean_batch=window_integral(decode, BATCH, t0, t1) / span / len(decode),
        mean_kv_utilization=window_integral(decode, KV, t0, t1) / span / len(decode),
        mean_in_system=in_system / span,
        mean_queue=window_integral(engines, QUEUE, t0, t1) / span,
        preemptions=sum(e.preemptions for e in engines),
        completed=int(done.sum()),
        failed=int(np.isfinite(rec.failed_at).sum()),
        dropped=len(rec.dropped),
        dropped_reasons=reasons,
        arrived=n,
        warmup_requests=facts.warmup,
        warmup_rule=facts.warmup_rule,
        measured_requests=int(rec.measured.sum()),
        window_s=(t0, t1),
        duration_s=end,
        steps=sum(e.steps for e in engines),
        load=facts.load,
        ttft_slo_s=facts.ttft_slo_s,
        tpot_slo_s=facts.tpot_slo_s,
        series=time_series(decode, engines, end, facts.max_points),
        prefix_hit_rate=lat.hit_rate,
        timeout_s=facts.timeout_s,
        stages=tuple(_stage(i, w, rec, engines, facts) for i, w in enumerate(facts.stages)),
        requests=request_log(rec),
        samples={"ttft_s": lat.ttft, "tpot_s": lat.tpot, "e2e_s": lat.e2e},
        sources=facts.sources,
    )
