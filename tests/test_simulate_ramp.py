"""Closed-loop clients start evenly over one client cycle (roofline/analyses/simulate/clients.py), so identical
clients do not stay in lockstep; ``ramp_s=0`` keeps the all-at-once start.  Expected numbers come from the
synthetic step cost of tests/sim_costs.py, worked by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import ClosedLoop, RequestPath, SimConfig, simulate
from roofline.analyses.simulate.clients import idle_request_s, start_offsets_s
from roofline.core.errors import RooflineError
from tests.inprocess import run_roofline
from tests.sim_costs import A, B, C, LinearCost


def alone_s(inp: int, out: int) -> float:
    """E2E of one request alone: one prefill a + b·I + c·I(I+1)/2, then O − 1 decodes over I .. I + O − 2."""
    return A + B * inp + C * inp * (inp + 1) / 2 + sum(A + B + C * (inp + j) for j in range(out - 1))


def test_offsets_are_even_discrete_steps():
    assert start_offsets_s(4, 1.0) == [0.0, 0.25, 0.5, 0.75]
    assert start_offsets_s(3, 0.0) == [0.0, 0.0, 0.0]


def test_the_idle_request_is_the_hand_derived_one():
    assert idle_request_s(LinearCost(), 100, 11, 8192) == pytest.approx(alone_s(100, 11), rel=1e-12)
    # a 300-token prompt with a 128-token budget: chunks of 128, 128, 44 after 0, 128, 256 cached tokens
    chunks = [(128, 0), (128, 128), (44, 256)]
    prefill = sum(A + B * c + C * c * (p + (c + 1) / 2) for c, p in chunks)
    assert idle_request_s(LinearCost(), 300, 1, 128) == pytest.approx(prefill, rel=1e-12)


def test_clients_first_send_spread_over_one_idle_cycle():
    # Cycle = front end in 5 ms + the request alone + out 2 ms + think 0.25 s; client k sends at k/4 of it.
    path = RequestPath(frontend_in_s=0.005, frontend_out_s=0.002)
    cycle = 0.005 + alone_s(100, 11) + 0.002 + 0.25
    res = simulate(
        LinearCost(),
        ClosedLoop(4, think_time_s=0.25),
        SimConfig(lengths=fixed_lengths(100, 11), requests=40, path=path, warmup=0),
    )
    first = np.sort(res.requests.arrival_s)[:4]
    assert first == pytest.approx([0.0, cycle / 4, cycle / 2, 3 * cycle / 4], rel=1e-12)
    assert "over 0.3" in res.sources["clients"]


def test_an_all_at_once_start_stays_in_lockstep_and_the_ramp_does_not():
    # ramp_s = 0: 8 identical clients prefill together, decode together and send again together, so every
    # TTFT is one prefill step of 8 prompts of 100 tokens: a + b·800 + c·8·100·101/2.
    cfg = SimConfig(lengths=fixed_lengths(100, 11), requests=400)
    lockstep = A + B * 800 + C * 8 * 100 * 101 / 2
    at_once = simulate(LinearCost(), ClosedLoop(8, ramp_s=0.0), cfg)
    assert at_once.ttft_s.mean == pytest.approx(lockstep, rel=1e-9)
    assert at_once.ttft_s.p99 == pytest.approx(lockstep, rel=1e-9)
    # Started over one cycle, a prompt joins the other clients' decodes: between the request alone and the
    # lockstep, and well below it (the TTFT of one prompt beside 7 decodes is a + b·107 + c·(5050 + 7·kv)).
    ramped = simulate(LinearCost(), ClosedLoop(8), cfg)
    alone_ttft = A + B * 100 + C * 100 * 101 / 2
    assert alone_ttft <= ramped.ttft_s.mean < 0.5 * lockstep
    # the same clients, the same work: throughput within a few percent either way
    assert ramped.output_tokens_per_s == pytest.approx(at_once.output_tokens_per_s, rel=0.1)


def test_bad_ramps_are_refused():
    with pytest.raises(RooflineError, match="ramp_s must be >= 0"):
        ClosedLoop(4, ramp_s=-1.0)
    out = run_roofline("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--arrival-rate", "2",
                       "-i", "128", "-o", "16", "--ramp", "1s")  # fmt: skip
    assert out.code == 2 and "--ramp needs --concurrency" in out.stderr
