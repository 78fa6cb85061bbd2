"""Offered load: open-loop arrivals, closed-loop clients, a recorded trace, or a list of stages.

A load says *when* requests are sent; :class:`Requests` says what they are (lengths, and which
prefix or session each continues, for the prefix cache).  Random draws come from numpy
generators seeded per purpose (arrivals, lengths, think times), so the same seed gives the same
arrivals and lengths whatever the engine (common random numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.core.checks import MAX_VALUE
from roofline.core.errors import OptionError, RooflineError, shown

#: Most requests one simulation runs (a trace, a generated load, or all stages together); also the most
#: closed-loop clients (``--concurrency``, a ``cCLIENTS`` stage): each client is a request in flight.
MAX_REQUESTS = 1_000_000
#: Longest stage (seconds, about four months) and highest stage rate (requests/s): the bounds of the
#: ``--stage-warmup``/``--timeout`` and ``--arrival-rate`` flags.
MAX_STAGE_S = MAX_VALUE["seconds"]
MAX_STAGE_RATE_PER_S = 1e9


@dataclass(frozen=True)
class Requests:
    """What the requests are, by send order: lengths, and optionally what each shares.

    ``prefix_id``/``prefix_len``: the first ``prefix_len`` prompt tokens are the same for every
    request with that id (a system prompt); ``session_id``: the prompt begins with the previous
    request of that session, prompt and output (a multi-turn chat), or repeats its prompt (a
    prompt pool).  Ids are integers >= 0; -1 means none.
    """

    input_len: np.ndarray
    output_len: np.ndarray
    prefix_id: np.ndarray | None = None
    prefix_len: np.ndarray | None = None
    session_id: np.ndarray | None = None
    source: str = "requests"

    def __post_init__(self) -> None:
        n = self.input_len.size
        if n < 1 or self.output_len.size != n:
            raise RooflineError(f"{self.source}: needs as many input as output lengths, at least one")
        if np.any(self.input_len < 1) or np.any(self.output_len < 1):
            raise RooflineError(f"{self.source}: input and output lengths must be >= 1")
        for name in ("prefix_id", "prefix_len", "session_id"):
            arr = getattr(self, name)
            if arr is not None and arr.size != n:
                raise RooflineError(f"{self.source}: {name} needs one value per request ({arr.size} for {n})")
        if (self.prefix_id is None) != (self.prefix_len is None):
            raise RooflineError(f"{self.source}: prefix_id and prefix_len go together")
        if self.prefix_len is not None:
            bad = np.nonzero((self.prefix_len < 0) | (self.prefix_len > self.input_len))[0]
            if bad.size:
                i = int(bad[0])
                raise RooflineError(
                    f"{self.source}: request {i}: prefix_len {int(self.prefix_len[i])} is longer than its prompt "
                    f"({int(self.input_len[i])} tokens); a prefix is part of the prompt"
                )

    @property
    def count(self) -> int:
        return int(self.input_len.size)

    @property
    def shares(self) -> bool:
        """Whether any request names a prefix or a session (the prefix cache has something to serve)."""
        named = [a for a in (self.prefix_id, self.session_id) if a is not None]
        return any(bool(np.any(a >= 0)) for a in named)

    def head(self, n: int) -> Requests:
        """The first n requests."""
        cut = [None if a is None else a[:n] for a in (self.prefix_id, self.prefix_len, self.session_id)]
        return Requests(self.input_len[:n], self.output_len[:n], *cut, source=self.source)


@dataclass(frozen=True)
class OpenLoop:
    """Arrivals at ``rate_per_s``; gaps gamma-distributed with coefficient of variation ``cv`` (1: Poisson)."""

    rate_per_s: float
    cv: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate_per_s) and self.rate_per_s > 0):
            raise OptionError(
                f"rate_per_s must be a positive number of requests/s (got {self.rate_per_s})",
                parameters=("rate_per_s",),
            )
        if not (math.isfinite(self.cv) and self.cv >= 0):
            raise OptionError(f"cv must be >= 0 (0: evenly spaced, 1: Poisson; got {self.cv})", parameters=("cv",))

    def describe(self) -> str:
        kind = "Poisson" if self.cv == 1 else ("evenly spaced" if self.cv == 0 else f"gamma, cv {self.cv:g}")
        return f"open loop, {self.rate_per_s:g} requests/s ({kind})"


@dataclass(frozen=True)
class ClosedLoop:
    """``clients`` clients, each sending its next request ``think_time_s`` after it saw the previous reply
    (or gave up on it); ``think_cv`` > 0 draws think times from a gamma of that coefficient of variation.

    Client k sends first at k/clients x ``ramp_s``; None (the default): one client cycle on an idle engine
    (request + front end + think time), the phase spread of a closed loop in steady state; 0: all at once,
    which keeps identical clients in lockstep (:mod:`roofline.analyses.simulate.clients`)."""

    clients: int
    think_time_s: float = 0.0
    think_cv: float = 0.0
    ramp_s: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.clients, bool) or not isinstance(self.clients, int) or not 1 <= self.clients <= MAX_REQUESTS:
            raise OptionError(
                f"clients must be at least 1 and at most {MAX_REQUESTS:,}, a whole number (got {shown(self.clients)})",
                parameters=("clients",),
            )
        if not (math.isfinite(self.think_time_s) and self.think_time_s >= 0):
            raise RooflineError(f"think time must be >= 0 s (got {self.think_time_s})")
        if not (math.isfinite(self.think_cv) and self.think_cv >= 0):
            raise RooflineError(f"think-time cv must be >= 0 (got {self.think_cv})")
        if self.ramp_s is not None and not (math.isfinite(self.ramp_s) and self.ramp_s >= 0):
            raise OptionError(
                f"ramp_s must be >= 0 s (0: all clients at once; got {self.ramp_s})", parameters=("ramp_s",)
            )

    def describe(self) -> str:
        think = f", {self.think_time_s:g} s think time" if self.think_time_s else ""
        return f"closed loop, {self.clients} clients{think}"


@dataclass(frozen=True)
class Trace:
    """Recorded requests: send times (sorted), input and output lengths, optional prefix and session ids."""

    arrival_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    source: str = "trace"
    prefix_id: np.ndarray | None = None
    prefix_len: np.ndarray | None = None
    session_id: np.ndarray | None = None
    #: The file line of each request (for messages naming a row); empty when not read from a file.
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def describe(self) -> str:
        return f"trace {self.source} ({self.arrival_s.size} requests)"

    @property
    def requests(self) -> Requests:
        return Requests(
            self.input_len, self.output_len, self.prefix_id, self.prefix_len, self.session_id, source=self.source
        )


@dataclass(frozen=True)
class Stage:
    """One stage of a staged load: ``rate_per_s`` (open loop, exactly rate x duration arrivals spread as
    a Poisson process given its count, or gamma gaps of ``cv``) or ``concurrency`` (closed loop) for
    ``duration_s``; requests sent in its first ``warmup_s`` are left out of its metrics."""

    duration_s: float
    rate_per_s: float | None = None
    concurrency: int | None = None
    cv: float = 1.0
    think_time_s: float = 0.0
    warmup_s: float = 0.0

    def __post_init__(self) -> None:
        duration, rate, clients = self.duration_s, self.rate_per_s, self.concurrency
        if not (isinstance(duration, int | float) and math.isfinite(duration) and 0 < duration <= MAX_STAGE_S):
            raise _stages(
                f"a stage's duration must be a positive number of seconds, at most {MAX_STAGE_S:g} "
                f"(got {shown(duration)})"
            )
        if (rate is None) == (clients is None):
            raise _stages("each stage needs a rate or a concurrency, not both")
        if rate is not None and not (math.isfinite(rate) and 0 < rate <= MAX_STAGE_RATE_PER_S):
            raise _stages(
                f"a stage's rate must be > 0 requests/s, at most {MAX_STAGE_RATE_PER_S:g} (got {shown(rate)})"
            )
        if clients is not None and (
            isinstance(clients, bool) or not isinstance(clients, int) or not 1 <= clients <= MAX_REQUESTS
        ):
            raise _stages(
                f"a stage's concurrency must be at least 1 and at most {MAX_REQUESTS:,} clients (got {shown(clients)})"
            )
        if not (math.isfinite(self.cv) and self.cv >= 0) or not (
            math.isfinite(self.think_time_s) and self.think_time_s >= 0
        ):
            raise _stages("cv and think time must be >= 0")
        if not (math.isfinite(self.warmup_s) and 0 <= self.warmup_s < self.duration_s):
            raise OptionError(
                f"stage_warmup must be in [0, a stage's duration) (got {self.warmup_s:g} of {self.duration_s:g} s)",
                parameters=("stage_warmup",),
            )

    @property
    def closed(self) -> bool:
        return self.concurrency is not None

    def describe(self) -> str:
        what = f"{self.rate_per_s:g} requests/s" if self.rate_per_s is not None else f"{self.concurrency} clients"
        return f"{what} for {self.duration_s:g} s"


@dataclass(frozen=True)
class Staged:
    """Stages one after the other; the backlog of one carries into the next."""

    stages: tuple[Stage, ...]

    def __post_init__(self) -> None:
        if not self.stages:
            raise _stages("give at least one stage")
        planned = sum(round(s.rate_per_s * s.duration_s) for s in self.stages if s.rate_per_s is not None)
        if planned > MAX_REQUESTS:
            raise _stages(f"{planned:,} arrivals planned, more than the {MAX_REQUESTS:,} allowed")

    @property
    def starts_s(self) -> list[float]:
        """Start time of each stage."""
        out, t = [], 0.0
        for s in self.stages:
            out.append(t)
            t += s.duration_s
        return out

    @property
    def end_s(self) -> float:
        return float(sum(s.duration_s for s in self.stages))

    def describe(self) -> str:
        return "staged: " + ", then ".join(s.describe() for s in self.stages)


Load = OpenLoop | ClosedLoop | Trace | Staged


def _stages(message: str) -> OptionError:
    """A bad stage list, naming the ``stages`` argument (``--stages`` on the command line)."""
    return OptionError(f"stages: {message}", parameters=("stages",))


def parse_stages(text: str, warmup_s: float = 0.0) -> Staged:
    """``'5:600,10:600'`` (rate:seconds) or ``'c32:300'`` (clients:seconds), items mixed freely; each stage's
    first ``warmup_s`` seconds of sends are not measured."""
    hint = "expected rate:seconds or cCLIENTS:seconds items, e.g. 5:600,10:600 or c32:300"
    items = str(text).split(",")
    if len(str(text)) > 1 << 14 or len(items) > 1000:
        raise _stages(f"too long (at most 1000 stages); {hint}")
    stages = []
    for item in items:
        parts = item.strip().split(":")
        if len(parts) != 2:
            raise _stages(f"cannot read {shown(item)}; {hint}")
        what, seconds = parts[0].strip(), parts[1].strip().removesuffix("s")
        closed = what[:1].lower() == "c"
        try:
            duration, value = float(seconds), (int(what[1:]) if closed else float(what))
        except ValueError:
            raise _stages(f"cannot read {shown(item)}; {hint}") from None
        if closed:
            stage = Stage(duration, concurrency=int(value), warmup_s=warmup_s)
        else:
            stage = Stage(duration, rate_per_s=float(value), warmup_s=warmup_s)
        stages.append(stage)
    return Staged(tuple(stages))


def open_loop_arrivals_s(load: OpenLoop, count: int, rng: np.random.Generator) -> np.ndarray:
    """Cumulative sums of gamma gaps, shape 1/cv², mean 1/rate (cv = 1: exponential; cv = 0: fixed)."""
    return np.cumsum(gamma_gaps(1.0 / load.rate_per_s, load.cv, count, rng))


def gamma_gaps(mean: float, cv: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` gamma-distributed gaps of mean ``mean`` and coefficient of variation ``cv`` (0: all equal)."""
    if cv == 0:
        return np.full(count, mean)
    shape = 1.0 / cv**2
    return rng.gamma(shape, mean / shape, size=count)


def stage_arrivals_s(stage: Stage, start_s: float, rng: np.random.Generator) -> np.ndarray:
    """Exactly round(rate x duration) sends in [start, start + duration): gaps of the stage's cv scaled to
    span the stage (cv = 1: a Poisson process given its count, i.e. sorted uniform times)."""
    count = round(float(stage.rate_per_s or 0.0) * stage.duration_s)
    if count == 0:
        return np.zeros(0)
    gaps = gamma_gaps(1.0, stage.cv, count + 1, rng)
    return start_s + np.cumsum(gaps[:-1]) / gaps.sum() * stage.duration_s


def sample_lengths(lengths: LengthDistribution, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (input, output) pairs drawn from the distribution's points by weight (rounded, >= 1)."""
    if lengths.weight.size == 1:
        pick = np.zeros(count, dtype=np.int64)
    else:
        pick = rng.choice(lengths.weight.size, size=count, p=lengths.weight)
    i = np.maximum(np.rint(lengths.input_len[pick]), 1).astype(np.int64)
    o = np.maximum(np.rint(lengths.output_len[pick]), 1).astype(np.int64)
    return i, o
