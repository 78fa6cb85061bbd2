"""The compiled event loop gives the Python engine's results (issue 26's speed without a second model).

The references are the Python loop step by step (``stepwise=True``, the same steps the compiled loop
runs) and with its decode leaps; every per-request column, count, percentile, window mean, time
series and stage figure must agree to floating rounding (tests/test_simulate_leaps.py's comparison).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import fixed_lengths, parse_lengths
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
from roofline.analyses.simulate.adapter import cost_for
from roofline.analyses.simulate.compiled import AUTO_MIN_REQUESTS, DESCRIBES
from roofline.analyses.simulate.config import OffloadConfig, RequestPath
from roofline.analyses.simulate.load import Trace
from roofline.core.errors import OptionError, RooflineError
from roofline.specs import load_hardware, load_model
from tests.profiles import at_most
from tests.test_simulate_leaps import TabulatedLinear, assert_same_results

pytest.importorskip("numba")


def three(cost, load, config: SimConfig):
    """(compiled, Python step by step, Python with leaps)."""
    return (
        simulate(cost, load, replace(config, event_loop="compiled")),
        simulate(cost, load, replace(config, event_loop="python", stepwise=True)),
        simulate(cost, load, replace(config, event_loop="python")),
    )


@at_most(40)
@given(
    seqs=st.integers(1, 12),
    extra_budget=st.integers(0, 120),
    block=st.sampled_from([1, 4, 16]),
    capacity=st.integers(40, 1500),
    inp=st.integers(1, 60),
    out=st.integers(1, 90),
    rate=st.floats(0.5, 300.0),
    kind=st.sampled_from(["open", "staged", "trace", "closed", "think"]),
    lag=st.integers(0, 1),
    policy=st.sampled_from(["decode-first", "prefill-first"]),
    shortcut=st.booleans(),
    timeout=st.sampled_from([None, 0.05, 0.3]),
    seed=st.integers(0, 5),
)
def test_compiled_equals_python(
    seqs, extra_budget, block, capacity, inp, out, rate, kind, lag, policy, shortcut, timeout, seed
):
    # capacities down to 40 tokens: preemptions, and requests too long for the cache (dropped)
    cost = TabulatedLinear(kv_capacity_tokens=capacity)
    sched = SchedulerConfig(
        max_num_seqs=seqs,
        max_num_batched_tokens=seqs + extra_budget,
        block_size=block,
        prefix_hit_rate=0.5 if shortcut else 0.0,
        policy=policy,
    )
    lengths = parse_lengths(f"{inp}:{out},{inp * 2}:{max(out // 2, 1)}")
    if kind == "trace":
        rng = np.random.default_rng(seed)
        n = 40
        load = Trace(
            np.sort(rng.uniform(0, 40 / rate, n)), rng.integers(1, 2 * inp + 1, n), rng.integers(1, out + 1, n)
        )
        lengths = None
    elif kind == "staged":
        load = Staged((Stage(0.2, rate_per_s=rate, warmup_s=0.05), Stage(0.3, rate_per_s=rate / 2, warmup_s=0.02)))
    elif kind in ("closed", "think"):
        load = ClosedLoop(3) if kind == "closed" else ClosedLoop(4, think_time_s=0.02, think_cv=1.0)
    else:
        load = OpenLoop(rate)
    config = SimConfig(
        lengths=lengths,
        requests=40,
        seed=seed,
        scheduler=sched,
        path=RequestPath(0.001, 0.0005, lag),
        warmup=None if kind == "staged" else 4,
        max_points=50,
        timeout_s=timeout,
    )
    compiled, stepwise, leaps = three(cost, load, config)
    assert compiled.sources["event loop"] == DESCRIBES
    assert stepwise.sources["event loop"].startswith("python")
    assert_same_results(compiled, stepwise)
    assert_same_results(compiled, leaps)


def test_seventy_b_deployment_agrees_and_preempts():
    # Llama-2-70B TP4 on calibrated H100s with a small KV share: the real step table, preemptions, 3,000
    # requests; compiled and Python agree on every figure.
    cost = cost_for(
        load_model("llama-2-70b"), load_hardware("h100-sxm-cal"), tp=4, max_context=900, reserve_tokens=2048
    )
    cost = replace(cost, kv_capacity_tokens=12_000)  # 14 full-length requests' KV: the batch preempts
    config = SimConfig(
        lengths=fixed_lengths(575, 248),
        requests=3000,
        scheduler=SchedulerConfig(128, 2048, 16),
        max_points=200,
    )
    compiled, stepwise, _ = three(cost, OpenLoop(12.0), config)
    assert_same_results(compiled, stepwise)
    assert compiled.completed == 3000  # no timeout, and 822 tokens fit the cache: every request finishes
    # Why it must preempt (by hand): 12,000 tokens are 750 blocks of 16; a request at full length holds
    # ceil(822 / 16) = 52, so 14 fit at once.  Each decode step reads the 138 GB of bf16 weights over
    # 4 x 3.35 TB/s (H100 SXM datasheet) at least: >= 10.3 ms, so a request spends >= 248 x 10.3 ms = 2.6 s
    # decoding and at 12 requests/s >= 31 are in flight (Little's law) > 14.
    assert compiled.preemptions > 0


def test_overloaded_run_with_client_timeout_agrees():
    # Llama-2-70B TP4 offered 100 requests/s, more than it serves, by clients who give up after 20 s: the
    # queue grows until abandonment balances it; completed, failed and every latency agree.
    cost = cost_for(
        load_model("llama-2-70b"), load_hardware("h100-sxm-cal"), tp=4, max_context=900, reserve_tokens=2048
    )
    config = SimConfig(
        lengths=fixed_lengths(575, 248),
        requests=3000,
        scheduler=SchedulerConfig(128, 2048, 16),
        timeout_s=20.0,
        max_points=200,
    )
    compiled, stepwise, _ = three(cost, OpenLoop(100.0), config)
    assert_same_results(compiled, stepwise)
    assert compiled.completed + compiled.failed + compiled.dropped == 3000
    # By hand: a prompt of 575 tokens costs 2 x 69e9 x 575 = 79.4 TFLOP, >= 20.1 ms at 4 x 989 TFLOP/s
    # (bf16 dense, H100 SXM datasheet), so at most 49.9 requests finish a second.  Sends span 30 s and each
    # must finish within 20 s of its send: within 50 s at most 2,493 finish, so >= 507 fail.
    assert compiled.failed >= 507


def test_buffers_grown_mid_run_change_nothing(monkeypatch):
    # Every output buffer starts at one slot, so the run returns to Python to grow each many times; the
    # 70B run with preemptions (stale heap entries, gaps) still equals the Python loop.
    from roofline.analyses.simulate import compiled

    monkeypatch.setattr(compiled, "FIRST_SIZES", {"itl_s": 1, "runs": 1, "gaps": 1, "heap": 0})
    cost = cost_for(load_model("llama-2-70b"), load_hardware("h100-sxm-cal"), tp=4, max_context=900)
    cost = replace(cost, kv_capacity_tokens=12_000)
    config = SimConfig(lengths=fixed_lengths(575, 248), requests=600, scheduler=SchedulerConfig(128, 2048, 16))
    compiled_run, stepwise, _ = three(cost, OpenLoop(12.0), config)
    assert_same_results(compiled_run, stepwise)
    assert compiled_run.preemptions > 0  # 14 requests' KV for >= 31 in flight (test_seventy_b_...)


def test_step_ceiling_stops_a_compiled_run(monkeypatch):
    from roofline.analyses.simulate import compiled

    # a ceiling of 1,000 steps for this run (the message names the module's constant, as bounds.Watch does)
    monkeypatch.setattr(compiled, "MAX_ENGINE_STEPS", 1000)
    config = SimConfig(lengths=fixed_lengths(20, 50), requests=5000, event_loop="compiled")
    with pytest.raises(OptionError, match="requests: the simulation passed the ceiling of 10,000,000 engine steps"):
        simulate(TabulatedLinear(kv_capacity_tokens=4000), OpenLoop(1.0), config)


def test_auto_compiles_long_runs_only():
    cost = TabulatedLinear(kv_capacity_tokens=4000)
    config = SimConfig(lengths=fixed_lengths(20, 5), requests=AUTO_MIN_REQUESTS, scheduler=SchedulerConfig(8, 64))
    assert simulate(cost, OpenLoop(50.0), config).sources["event loop"] == DESCRIBES
    short = replace(config, requests=AUTO_MIN_REQUESTS - 1)
    assert simulate(cost, OpenLoop(50.0), short).sources["event loop"] == "python"
    stepwise = replace(config, stepwise=True)
    assert simulate(cost, OpenLoop(50.0), stepwise).sources["event loop"] == "python, every step priced on its own"


@pytest.mark.parametrize(
    ("change", "load", "named"),
    [
        ({"offload": OffloadConfig(1e9, 1e9)}, OpenLoop(5.0), "KV offload"),
        ({"fleet": FleetConfig(replicas=2)}, OpenLoop(5.0), "more than one replica"),
        ({}, Staged((Stage(1.0, concurrency=3),)), "closed-loop stages"),
    ],
)
def test_compiled_refuses_what_it_does_not_cover(change, load, named):
    config = SimConfig(lengths=fixed_lengths(20, 5), requests=50, event_loop="compiled", **change)
    with pytest.raises(OptionError, match=f"event_loop: the compiled loop does not cover {named}"):
        simulate(TabulatedLinear(kv_capacity_tokens=4000), load, config)


def test_unknown_core_is_refused():
    with pytest.raises(OptionError, match="event_loop: unknown .fast.; allowed: auto, python, compiled"):
        SimConfig(event_loop="fast")


def test_context_beyond_the_table_is_refused_alike():
    # The synthetic table stops at 400 tokens of context; 300 in + 200 out pass it in both loops.
    cost = TabulatedLinear(kv_capacity_tokens=100_000)
    config = SimConfig(lengths=fixed_lengths(300, 200), requests=5, warmup=0)
    for core in ("python", "compiled"):
        with pytest.raises(RooflineError, match="exceeds the tabulated 400"):
            simulate(cost, OpenLoop(5.0), replace(config, event_loop=core))
