"""Offered load: open-loop (Poisson or bursty gamma) arrivals, closed-loop clients, or a CSV trace.

Everything random draws from one seeded ``numpy.random.Generator``, so a seed fixes the run.
Lengths come from a :class:`roofline.analyses.lengths.LengthDistribution` (fixed or weighted
``I:O:weight`` points) or from the trace itself.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.core.errors import RooflineError

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


def read_trace(path: str | Path) -> Trace:
    """A CSV with header arrival_time_s,input_len,output_len (seconds >= 0, lengths integers >= 1)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise RooflineError(f"--trace {p}: cannot read file ({exc.strerror})") from None
    reader = csv.DictReader(text.splitlines())
    missing = [f for f in TRACE_FIELDS if f not in (reader.fieldnames or [])]
    if missing:
        raise RooflineError(f"--trace {p}: header must name {','.join(TRACE_FIELDS)} (missing {','.join(missing)})")
    rows: list[tuple[float, int, int]] = []
    for line, row in enumerate(reader, start=2):
        rows.append(_trace_row(p, line, row))
    if not rows:
        raise RooflineError(f"--trace {p}: no requests after the header")
    arr = np.array(rows, dtype=float)
    order = np.argsort(arr[:, 0], kind="stable")
    return Trace(arr[order, 0], arr[order, 1].astype(np.int64), arr[order, 2].astype(np.int64), source=str(p))


def _trace_row(path: Path, line: int, row: dict[str, str]) -> tuple[float, int, int]:
    """One trace row, or a one-line error naming the file, line, field and what is allowed."""
    try:
        t = float(row["arrival_time_s"])
    except (TypeError, ValueError):
        raise RooflineError(
            f"--trace {path}: line {line}: arrival_time_s must be a number of seconds "
            f"(got {row.get('arrival_time_s')!r})"
        ) from None
    if not (math.isfinite(t) and t >= 0):
        raise RooflineError(f"--trace {path}: line {line}: arrival_time_s must be >= 0 (got {t:g})")
    lengths = []
    for field in ("input_len", "output_len"):
        value = row.get(field)
        try:
            n = int(str(value).strip())
        except ValueError:
            n = 0
        if n < 1:
            raise RooflineError(f"--trace {path}: line {line}: {field} must be an integer >= 1 (got {value!r})")
        lengths.append(n)
    return t, lengths[0], lengths[1]
