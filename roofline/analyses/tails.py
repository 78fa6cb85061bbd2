"""Tail latency under load: one deployment simulated at a ladder of arrival rates up to saturation.

Each rung is one :func:`roofline.analyses.simulate.simulate` run (open-loop Poisson arrivals, the
deployment's step cost from the step terms through :func:`~roofline.analyses.simulate.adapter.cost_for`,
``max_num_seqs`` = the deployment's batch); the curve keeps p50 and p99 of TTFT and TPOT and the rate
the replica completed.  A rung is *saturated* when the replica completes less than
:data:`SATURATED` of the offered rate: the queue grows for as long as the load lasts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.simulate import OpenLoop, SchedulerConfig, SimConfig, simulate
from roofline.analyses.simulate.adapter import cost_for
from roofline.analyses.step import Precision
from roofline.core.errors import OptionError, shown
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.specs import HardwareSpec, ModelSpec

#: Rungs as fractions of the rate that fills the batch (the capacity plan's estimate of saturation).
RATE_FRACTIONS = (0.3, 0.6, 0.85, 1.0, 1.25)
#: A rung whose completed rate falls below this fraction of the arrived rate is saturated (finishes in a window
#: of a batch of requests vary by ~6%: the margin keeps noise from reading as saturation).
SATURATED = 0.9
#: Requests per rung at load fraction f of the rate that fills the batch (f capped at 1): a warm-up of f x B
#: (Little's law: a replica carrying f of its full rate holds about f x B requests, so about that many arrivals
#: fill it), then f x B measured; at least WARMUP_MIN and MEASURED_MIN of each.
WARMUP_MIN = 20
MEASURED_MIN = 200
#: vLLM's default token budget per step (max_num_batched_tokens, V1 OpenAI server on >= 70 GiB GPUs).
TOKEN_BUDGET = 8192


@dataclass(frozen=True)
class TailSetup:
    """One replica to load: model, chip (or profile) and engine entry, layout, dtypes, batch, lengths."""

    model: ModelSpec
    hw: HardwareSpec
    tp: int
    pp: int
    precision: Precision
    batch: int
    lengths: LengthDistribution
    engine: str | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    seed: int = 0
    #: Expert-parallel degree (1: none); above tp, attention runs data-parallel over ep / tp ranks.
    ep: int = 1

    def warmup(self, load: float = 1.0) -> int:
        """Requests left out of the latencies at load fraction ``load``: the arrivals that fill the replica."""
        return max(int(np.ceil(min(load, 1.0) * self.batch)), WARMUP_MIN)

    def requests(self, load: float = 1.0) -> int:
        """Requests of a rung at load fraction ``load``: its warm-up, then as many measured (at least 200)."""
        return self.warmup(load) + max(int(np.ceil(min(load, 1.0) * self.batch)), MEASURED_MIN)


@dataclass(frozen=True)
class LoadCurve:
    """p50/p99 TTFT and TPOT (seconds) at each offered rate (requests/s), with the rates that arrived and
    completed in the measurement window (after the warm-up)."""

    rate_per_s: np.ndarray
    ttft_p50_s: np.ndarray
    ttft_p99_s: np.ndarray
    tpot_p50_s: np.ndarray
    tpot_p99_s: np.ndarray
    completed_per_s: np.ndarray
    arrived_per_s: np.ndarray
    source: str

    @property
    def saturated(self) -> np.ndarray:
        """Rungs where the replica completes less than :data:`SATURATED` of what arrived: it falls behind."""
        return self.completed_per_s < SATURATED * self.arrived_per_s


def ladder(full_rate: float, fractions: Sequence[float] = RATE_FRACTIONS) -> np.ndarray:
    """Offered rates: ``fractions`` of the rate that fills the batch."""
    if not (np.isfinite(full_rate) and full_rate > 0):
        raise OptionError(
            f"full_rate must be a positive request rate (got {shown(full_rate)})", parameters=("full_rate",)
        )
    return np.asarray(fractions, dtype=float) * full_rate


def load_curve(setup: TailSetup, rates: Sequence[float], fill_rate: float | None = None) -> LoadCurve:
    """Simulate ``setup`` at each rate (same seed: common random numbers across rungs); with ``fill_rate`` (the
    rate that fills the batch) each rung simulates as many requests as its load fraction needs, else a full
    batch's worth."""
    cost = cost_for(
        setup.model,
        setup.hw,
        setup.tp,
        setup.precision,
        setup.memory_utilization,
        pp=setup.pp if setup.pp > 1 else None,
        ep=setup.ep if setup.ep > 1 else None,
        max_context=float(setup.lengths.max_context) + 1.0,
        engine=setup.engine,
    )
    scheduler = SchedulerConfig(max_num_seqs=setup.batch, max_num_batched_tokens=max(TOKEN_BUDGET, setup.batch))
    rows, sizes = [], []
    for rate in rates:
        load = 1.0 if fill_rate is None else float(rate) / fill_rate
        sizes.append(setup.requests(load))
        config = SimConfig(
            lengths=setup.lengths, requests=sizes[-1], seed=setup.seed, scheduler=scheduler, warmup=setup.warmup(load)
        )
        res = simulate(cost, OpenLoop(float(rate)), config)
        t0, t1 = res.window_s
        arrived = (res.arrived - res.warmup_requests - 1) / (t1 - t0) if t1 > t0 else float(rate)
        rows.append((res.ttft_s.p50, res.ttft_s.p99, res.tpot_s.p50, res.tpot_s.p99, res.requests_per_s, arrived))
    cols = np.asarray(rows, dtype=float).reshape(-1, 6)
    return LoadCurve(
        np.asarray(rates, dtype=float),
        *(cols[:, k] for k in range(6)),
        source=f"{cost.source}; open-loop Poisson arrivals, {min(sizes)}-{max(sizes)} requests per rate (about "
        "half of them warm-up), "
        f"max_num_seqs {setup.batch}, max_num_batched_tokens {max(TOKEN_BUDGET, setup.batch)}, seed {setup.seed}",
    )
