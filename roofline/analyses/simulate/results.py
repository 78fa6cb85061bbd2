"""What a simulation returns: percentiles, per-stage results, the per-request log and the time series."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np


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


#: Columns of the per-request log (``simulate --requests-csv``), in order.
REQUEST_FIELDS = (
    "request",
    "stage",
    "arrival_s",
    "first_token_s",
    "finish_s",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "preemptions",
    "failed",
    "measured",
)


@dataclass(frozen=True)
class RequestLog:
    """Every request sent, by id: times as the client sees them (NaN: never happened)."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    preemptions: np.ndarray
    failed: np.ndarray
    measured: np.ndarray
    stage: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    def rows(self) -> Iterator[tuple[object, ...]]:
        """Rows in :data:`REQUEST_FIELDS` order (plain Python values; NaN times as empty cells)."""
        cols = [
            self.stage.tolist(),
            self.arrival_s.tolist(),
            self.first_token_s.tolist(),
            self.finish_s.tolist(),
            self.input_tokens.tolist(),
            self.output_tokens.tolist(),
            np.maximum(self.cached_tokens, 0).tolist(),
            self.preemptions.tolist(),
            self.failed.astype(int).tolist(),
            self.measured.astype(int).tolist(),
        ]
        for i, row in enumerate(zip(*cols, strict=True)):
            yield (i, row[0], *("" if v != v else round(v, 9) for v in row[1:4]), *row[4:])


@dataclass(frozen=True)
class StageResult:
    """One stage of a staged load: the requests sent in it (after its warm-up) and its window's throughput."""

    index: int
    load: str
    start_s: float
    duration_s: float
    sent: int
    completed: int
    failed: int
    measured_requests: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float
    prefix_hit_rate: float | None

    def as_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "load": self.load,
            "start_s": self.start_s,
            "duration_s": self.duration_s,
            "sent": self.sent,
            "completed": self.completed,
            "failed": self.failed,
            "measured_requests": self.measured_requests,
            "ttft_s": self.ttft_s.as_dict(),
            "tpot_s": self.tpot_s.as_dict(),
            "itl_s": self.itl_s.as_dict(),
            "e2e_s": self.e2e_s.as_dict(),
            "output_tokens_per_s": self.output_tokens_per_s,
            "requests_per_s": self.requests_per_s,
            "goodput_requests_per_s": self.goodput_requests_per_s,
            "prefix_hit_rate": self.prefix_hit_rate,
        }


@dataclass(frozen=True)
class SimulationResult:
    """One simulated run; latencies over the measured (non-warm-up) completed requests.

    ``completed`` and ``failed`` (abandoned at the client timeout) count every request sent;
    ``dropped`` ones could never fit one replica's KV cache.  ``prefix_hit_rate`` is the share of
    the measured requests' prompt tokens found cached at admission (None: no cache modelled).
    """

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
    failed: int
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
    prefix_hit_rate: float | None = None
    timeout_s: float | None = None
    stages: tuple[StageResult, ...] = ()
    requests: RequestLog | None = None
    samples: dict[str, np.ndarray] = field(default_factory=dict)  # per-request ttft, tpot, e2e (for CDFs)
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready keys (the per-request samples and log are left out)."""
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
            "failed": self.failed,
            "timeout_s": self.timeout_s,
            "dropped": self.dropped,
            "dropped_reasons": dict(self.dropped_reasons),
            "arrived": self.arrived,
            "prefix_hit_rate": self.prefix_hit_rate,
            "warmup": {"requests": self.warmup_requests, "rule": self.warmup_rule},
            "measured_requests": self.measured_requests,
            "window_s": list(self.window_s),
            "duration_s": self.duration_s,
            "steps": self.steps,
            "load": self.load,
            "stages": [s.as_dict() for s in self.stages],
            "time_series": self.series.as_dict(),
            "sources": dict(self.sources),
        }
