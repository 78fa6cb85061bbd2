"""Offered load: open-loop (Poisson or bursty gamma) arrivals, closed-loop clients, or a CSV trace.

Everything random draws from one seeded ``numpy.random.Generator``, so a seed fixes the run.
Lengths come from a :class:`roofline.analyses.lengths.LengthDistribution` (fixed or weighted
``I:O:weight`` points) or from the trace itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.core.errors import RooflineError
from roofline.core.tables import Column, read_table

TRACE_FIELDS = ("arrival_time_s", "input_len", "output_len")


@dataclass(frozen=True)
class OpenLoop:
    """Arrivals at ``rate_per_s``; gaps gamma-distributed with coefficient of variation ``cv`` (1: Poisson)."""

    rate_per_s: float
    cv: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate_per_s) and self.rate_per_s > 0):
            raise RooflineError(f"--arrival-rate must be a positive number of requests/s (got {self.rate_per_s})")
        if not (math.isfinite(self.cv) and self.cv >= 0):
            raise RooflineError(f"--cv must be >= 0 (0: evenly spaced, 1: Poisson; got {self.cv})")

    def describe(self) -> str:
        kind = "Poisson" if self.cv == 1 else ("evenly spaced" if self.cv == 0 else f"gamma, cv {self.cv:g}")
        return f"open loop, {self.rate_per_s:g} requests/s ({kind})"


@dataclass(frozen=True)
class ClosedLoop:
    """``clients`` clients, each sending its next request ``think_time_s`` after its previous completes."""

    clients: int
    think_time_s: float = 0.0

    def __post_init__(self) -> None:
        if self.clients < 1:
            raise RooflineError(f"--concurrency must be at least 1 (got {self.clients})")
        if not (math.isfinite(self.think_time_s) and self.think_time_s >= 0):
            raise RooflineError(f"think time must be >= 0 s (got {self.think_time_s})")

    def describe(self) -> str:
        think = f", {self.think_time_s:g} s think time" if self.think_time_s else ""
        return f"closed loop, {self.clients} clients{think}"


@dataclass(frozen=True)
class Trace:
    """Recorded requests: arrival times (sorted), input and output lengths."""

    arrival_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    source: str = "trace"
    #: The file line of each request (for messages naming a row); empty when not read from a file.
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def describe(self) -> str:
        return f"trace {self.source} ({self.arrival_s.size} requests)"


Load = OpenLoop | ClosedLoop | Trace


def open_loop_arrivals_s(load: OpenLoop, count: int, rng: np.random.Generator) -> np.ndarray:
    """Cumulative sums of gamma gaps, shape 1/cv², mean 1/rate (cv = 1: exponential; cv = 0: fixed)."""
    mean_gap = 1.0 / load.rate_per_s
    if load.cv == 0:
        gaps = np.full(count, mean_gap)
    else:
        shape = 1.0 / load.cv**2
        gaps = rng.gamma(shape, mean_gap / shape, size=count)
    return np.cumsum(gaps)


def sample_lengths(lengths: LengthDistribution, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (input, output) pairs drawn from the distribution's points by weight (rounded, >= 1)."""
    if lengths.weight.size == 1:
        pick = np.zeros(count, dtype=np.int64)
    else:
        pick = rng.choice(lengths.weight.size, size=count, p=lengths.weight)
    i = np.maximum(np.rint(lengths.input_len[pick]), 1).astype(np.int64)
    o = np.maximum(np.rint(lengths.output_len[pick]), 1).astype(np.int64)
    return i, o


#: Most rows a trace may have (each becomes one simulated request; the simulator's own limit).
MAX_TRACE_ROWS = 1_000_000
#: The trace file's columns: arrival time (s, >= 0) and whole-token lengths; others are refused.
TRACE_COLUMNS = (
    Column("arrival_time_s", "seconds", minimum=0.0),
    Column("input_len", "count"),
    Column("output_len", "count"),
)


def read_trace(path: str | Path) -> Trace:
    """A CSV with header arrival_time_s,input_len,output_len (seconds >= 0, lengths whole numbers >= 1),
    at most :data:`MAX_TRACE_ROWS` rows; rows are sorted by arrival time (stable)."""
    table = read_table(path, TRACE_COLUMNS, max_rows=MAX_TRACE_ROWS, what="--trace", kind="trace", extra_columns=True)
    arrival = np.asarray(table.columns["arrival_time_s"], dtype=float)
    order = np.argsort(arrival, kind="stable")
    inp = np.asarray(table.columns["input_len"], dtype=np.int64)
    out = np.asarray(table.columns["output_len"], dtype=np.int64)
    return Trace(arrival[order], inp[order], out[order], source=str(path), lines=np.asarray(table.lines)[order])
