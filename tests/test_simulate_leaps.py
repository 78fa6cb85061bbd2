"""Leaping over runs of decode-only steps gives the step-by-step simulation's results.

The reference is ``SimConfig(stepwise=True)``: every engine step composed and priced on its own.  The
default prices a run of decode-only steps between events in one go; per-request times, counts, step
totals, ITL samples, the window means and the time series must agree to floating rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import parse_lengths
from roofline.analyses.simulate import (
    ClosedLoop,
    FleetConfig,
    OpenLoop,
    SchedulerConfig,
    SimConfig,
    Stage,
    Staged,
    simulate,
)
from roofline.analyses.simulate.config import OffloadConfig, RequestPath
from roofline.analyses.simulate.results import RequestLog, TimeSeries
from roofline.analyses.simulate.table import StepTable
from roofline.analyses.simulate.workloads import pool_requests
from tests.profiles import at_most
from tests.sim_costs import LinearCost

REL = 1e-9


@dataclass(frozen=True)
class TabulatedLinear(LinearCost):
    """The synthetic cost read through the simulator's step table (the path real deployments take)."""

    def pricer(self, max_seqs, max_tokens, prompt_lens=(), draft_len=None):
        return StepTable(self.step_time_s, max_seqs, max_tokens, 400.0, prompt_lens)


def same(a, b, name: str) -> None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, name
    assert np.array_equal(np.isnan(a), np.isnan(b)), name
    ok = ~np.isnan(a)
    np.testing.assert_allclose(a[ok], b[ok], rtol=REL, atol=1e-12, err_msg=name)


def assert_same_results(leap, step) -> None:
    assert (leap.steps, leap.preemptions, leap.completed, leap.failed, leap.dropped) == (
        step.steps,
        step.preemptions,
        step.completed,
        step.failed,
        step.dropped,
    )
    for field in RequestLog.__dataclass_fields__:
        same(getattr(leap.requests, field), getattr(step.requests, field), f"requests.{field}")
    scalars = ("output_tokens_per_s", "requests_per_s", "mean_batch", "mean_kv_utilization", "mean_in_system")
    for name in (*scalars, "mean_queue", "duration_s"):
        same(getattr(leap, name), getattr(step, name), name)
    for name in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        same(list(getattr(leap, name).__dict__.values()), list(getattr(step, name).__dict__.values()), name)
    for name in TimeSeries.__dataclass_fields__:
        same(getattr(leap.series, name), getattr(step.series, name), f"series.{name}")
    assert len(leap.stages) == len(step.stages)
    for a, b in zip(leap.stages, step.stages, strict=True):
        assert (a.sent, a.completed, a.failed) == (b.sent, b.completed, b.failed)
        for name in ("output_tokens_per_s", "requests_per_s"):
            same(getattr(a, name), getattr(b, name), f"stage.{name}")
        same(list(a.itl_s.__dict__.values()), list(b.itl_s.__dict__.values()), "stage.itl_s")


def both(cost, load, config: SimConfig, **kwargs):
    return simulate(cost, load, config, **kwargs), simulate(cost, load, replace(config, stepwise=True), **kwargs)


@at_most(40)
@given(
    seqs=st.integers(1, 12),
    extra_budget=st.integers(0, 120),
    block=st.sampled_from([1, 4, 16]),
    capacity=st.integers(40, 1500),
    inp=st.integers(1, 60),
    out=st.integers(1, 90),
    rate=st.floats(0.5, 300.0),
    kind=st.sampled_from(["open", "closed", "think", "staged"]),
    timeout=st.sampled_from([None, 0.05, 0.3]),
    lag=st.integers(0, 1),
    tabulated=st.booleans(),
    fleet=st.sampled_from([(1, 0), (2, 0), (1, 1)]),
    balancer=st.sampled_from(["round-robin", "least-outstanding"]),
    cache=st.sampled_from(["none", "pool", "shortcut"]),
    swap=st.booleans(),
    seed=st.integers(0, 5),
)
def test_leaps_equal_step_by_step(
    seqs,
    extra_budget,
    block,
    capacity,
    inp,
    out,
    rate,
    kind,
    timeout,
    lag,
    tabulated,
    fleet,
    balancer,
    cache,
    swap,
    seed,
):
    cost = (TabulatedLinear if tabulated else LinearCost)(kv_capacity_tokens=capacity, transfer_s=0.002)
    sched = SchedulerConfig(
        max_num_seqs=seqs,
        max_num_batched_tokens=seqs + extra_budget,
        block_size=block,
        prefix_hit_rate=0.5 if cache == "shortcut" else 0.0,
        preemption="swap" if swap else "recompute",
    )
    load = {
        "open": OpenLoop(rate),
        "closed": ClosedLoop(3),
        "think": ClosedLoop(4, think_time_s=0.02, think_cv=1.0),
        "staged": Staged((Stage(0.3, rate_per_s=rate, warmup_s=0.05), Stage(0.3, concurrency=3, think_time_s=0.01))),
    }[kind]
    lengths = parse_lengths(f"{inp}:{out},{inp * 2}:{max(out // 2, 1)}")
    workload = None
    if cache == "pool":
        lens = np.array([inp, inp * 2, inp + 17])
        workload = pool_requests(400, lens, out)
        lengths = None
    config = SimConfig(
        lengths=lengths,
        workload=workload,
        requests=40,
        seed=seed,
        scheduler=sched,
        fleet=FleetConfig(replicas=fleet[0], prefill_replicas=fleet[1], balancer=balancer),
        path=RequestPath(0.001, 0.0005, lag),
        timeout_s=timeout,
        offload=OffloadConfig(64_000.0, 1e9) if swap else None,
        warmup=None if kind == "staged" else 4,
        max_points=50,
    )
    assert_same_results(*both(cost, load, config))


@pytest.mark.parametrize("tabulated", [False, True])
def test_long_runs_leap_and_agree(tabulated):
    # Eight clients decoding 300 tokens: runs of hundreds of decode steps between finishes, priced at once.
    cost = (TabulatedLinear if tabulated else LinearCost)(kv_capacity_tokens=20_000)
    config = SimConfig(lengths=parse_lengths("40:300,20:250"), requests=30, seed=2, warmup=3, max_points=200)
    leap, step = both(cost, ClosedLoop(8), config)
    assert_same_results(leap, step)
    assert leap.steps > 1000
