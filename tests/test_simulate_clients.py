"""Clients and load: timeouts, closed loops with think time, staged loads, the request path; bad input.

Expected numbers come from the synthetic step cost of tests/sim_costs.py, worked by hand
in the comments, or from queueing laws; none is copied from the output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import (
    ClosedLoop,
    OpenLoop,
    RequestPath,
    SchedulerConfig,
    SimConfig,
    Stage,
    Staged,
    Trace,
    parse_stages,
    simulate,
)
from roofline.core.errors import OptionError, RooflineError
from tests.inprocess import run_roofline
from tests.sim_costs import A, B, C, LinearCost


def alone_s(inp: int, out: int) -> tuple[float, float]:
    """(TTFT, E2E) of one request alone: one prefill, then out − 1 decodes at contexts inp .. inp + out − 2."""
    ttft = A + B * inp + C * inp * (inp + 1) / 2
    return ttft, ttft + sum(A + B + C * (inp + j) for j in range(out - 1))


# ---------------------------------------------------------------------- request path


def test_front_end_delays_the_client_view_only():
    # Vanishing load: TTFT and E2E gain in + out (7 ms); TPOT is unchanged.
    ttft, e2e = alone_s(100, 11)
    path = RequestPath(frontend_in_s=0.005, frontend_out_s=0.002)
    res = simulate(
        LinearCost(), OpenLoop(0.01), SimConfig(lengths=fixed_lengths(100, 11), requests=10, warmup=0, path=path)
    )
    assert res.ttft_s.mean == pytest.approx(ttft + 0.007, rel=1e-9)
    assert res.e2e_s.mean == pytest.approx(e2e + 0.007, rel=1e-9)
    assert res.tpot_s.mean == pytest.approx((e2e - ttft) / 10, rel=1e-9)


def test_async_scheduling_lag_costs_one_step_to_a_request_arriving_mid_step():
    # Request 0 (100 in, 2000 out) decodes alone; request 1 arrives 50 ms in, in the middle of a decode
    # step.  With lag 1 it joins one step later: its TTFT grows by exactly one decode step of request 0,
    # A + B + C·(100 + j) for a whole j.
    load = Trace(np.array([0.0, 0.05]), np.array([100, 100]), np.array([2000, 2]))
    ttft = [
        simulate(
            LinearCost(), load, SimConfig(requests=None, warmup=0, path=RequestPath(schedule_lag_steps=lag))
        ).samples["ttft_s"][1]
        for lag in (0, 1)
    ]
    j = (ttft[1] - ttft[0] - A - B) / C - 100
    assert j == pytest.approx(round(j), abs=1e-6) and 0 < round(j) < 10


# ---------------------------------------------------------------------- timeouts


def test_timeout_abandons_what_cannot_finish_in_time():
    # One slot, every step 10 ms (B = C = 0): 10 in / 5 out = 1 prefill + 4 decodes = 50 ms each.  Ten
    # requests at t = 0 with a 175 ms timeout: the first three finish at 50, 100, 150 ms; the fourth is cut
    # at the step boundary after 175 ms and the six still queued are abandoned: 3 completed, 7 failed.
    cost = LinearCost(a=0.010, b=0.0, c=0.0)
    load = Trace(np.zeros(10), np.full(10, 10), np.full(10, 5))
    cfg = SimConfig(requests=None, warmup=0, timeout_s=0.175, scheduler=SchedulerConfig(1, 64))
    res = simulate(cost, load, cfg)
    assert (res.completed, res.failed) == (3, 7)
    assert res.requests.failed.tolist() == [False] * 3 + [True] * 7
    assert res.e2e_s.mean == pytest.approx(0.100, rel=1e-9)  # (50 + 100 + 150) / 3
    assert np.isnan(res.requests.finish_s[3:]).all()
    assert res.requests.output_tokens[3] >= 1  # the fourth saw its first token before giving up


def test_timeout_below_one_step_is_refused():
    with pytest.raises(RooflineError, match=r"^timeout_s 1 ms is below one engine step \(5\.\d+ ms"):
        simulate(LinearCost(), OpenLoop(1.0), SimConfig(lengths=fixed_lengths(10, 2), timeout_s=0.001))


# ---------------------------------------------------------------------- closed loops


def test_one_client_with_think_time_sends_every_service_plus_think():
    # One client: each cycle is the request alone (E2E) plus 0.25 s of thinking; X = 1 / (E2E + Z).
    _, e2e = alone_s(100, 11)
    res = simulate(
        LinearCost(), ClosedLoop(1, think_time_s=0.25), SimConfig(lengths=fixed_lengths(100, 11), requests=400)
    )
    assert res.e2e_s.mean == pytest.approx(e2e, rel=1e-9)
    assert res.requests_per_s == pytest.approx(1 / (e2e + 0.25), rel=0.01)


def test_interactive_response_time_law():
    # N clients thinking Z between replies: N = X·(R + Z) (Little's law over the whole loop).
    res = simulate(
        LinearCost(),
        ClosedLoop(8, think_time_s=0.2, think_cv=1.0),
        SimConfig(lengths=fixed_lengths(200, 30), requests=4000),
    )
    assert res.requests_per_s * (res.e2e_s.mean + 0.2) == pytest.approx(8, rel=0.03)


# ---------------------------------------------------------------------- staged load


def test_stages_send_exact_counts_and_carry_their_backlog():
    # 30 s at 3/s then 20 s at 0.5/s: exactly 90 and 10 arrivals.  A first stage far beyond capacity (one
    # slot, 1 s a request) leaves a backlog that the light second stage still pays for.
    cost = LinearCost(a=0.2, b=0.0, c=0.0)  # 5 steps of 0.2 s: 1 s a request
    cfg = SimConfig(lengths=fixed_lengths(10, 5), scheduler=SchedulerConfig(1, 64))
    staged = simulate(cost, Staged((Stage(30, rate_per_s=3), Stage(20, rate_per_s=0.5))), cfg)
    assert [s.sent for s in staged.stages] == [90, 10]
    assert staged.completed == 100 and len(staged.stages) == 2
    light = simulate(cost, Staged((Stage(20, rate_per_s=0.5),)), cfg)
    assert staged.stages[1].ttft_s.mean > 10 * light.stages[0].ttft_s.mean
    sent = staged.requests.arrival_s
    assert np.all((sent[:90] >= 0) & (sent[:90] < 30)) and np.all((sent[90:] >= 30) & (sent[90:] < 50))


def test_stage_warmup_and_closed_stages():
    # A closed stage of 4 clients for 20 s after an open one; each stage measures what it sent after its
    # warm-up.  Four clients keep four requests in the system during their stage.
    cfg = SimConfig(lengths=fixed_lengths(100, 20))
    load = Staged((Stage(20, rate_per_s=2, warmup_s=5), Stage(20, concurrency=4)))
    res = simulate(LinearCost(), load, cfg)
    first, second = res.stages
    assert first.measured_requests == int(np.sum((res.requests.arrival_s >= 5) & (res.requests.arrival_s < 20)))
    assert second.sent > 4 * 20 / alone_s(100, 20)[1] * 0.5  # clients kept sending through their stage
    assert np.max(res.requests.arrival_s) < 40


@pytest.mark.parametrize(
    "text, message",
    [
        ("5:-600", "a stage's duration must be a positive number of seconds"),
        ("5:0", "a stage's duration must be a positive number"),
        ("c0:10", "concurrency must be at least 1"),
        ("fast:10", "cannot read 'fast:10'"),
    ],
)
def test_bad_stage_lists(text, message):
    with pytest.raises(RooflineError, match=message):
        parse_stages(text)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ClosedLoop(10**11),
        lambda: ClosedLoop(2.5),  # type: ignore[arg-type]
        lambda: Stage(60, concurrency=10**7),
        lambda: Stage(1e8, rate_per_s=1),
        lambda: Stage(60, rate_per_s=1e10),
    ],
)
def test_loads_from_python_are_bounded_like_the_flags(make):
    with pytest.raises(OptionError, match=r"at most 1(,000,000|e\+07|e\+09)"):
        make()


# ---------------------------------------------------------------------- the CLI boundary


M = ("--model", "llama-3-8b", "--hardware", "h100-sxm")


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--stages", "5:-600", "-i", "100", "-o", "10"), "--stages: a stage's duration must be a positive"),
        (("--arrival-rate", "1", "-i", "100", "-o", "10", "--timeout", "1us"), "is below one engine step"),
        (
            ("--arrival-rate", "1", "-i", "100", "-o", "10", "--offload-bytes", "10TB"),
            "--offload-bytes: 10000 GB is more than the host memory of one replica (1 x 250 GB",
        ),
        (("--arrival-rate", "1", "-i", "100", "-o", "10", "--preemption", "swap"), "needs a host tier"),
        # Bounded like --concurrency, --timeout and --arrival-rate: 10^11 clients used to be allocated (killed
        # for memory), a 1e300 s stage printed a 300-digit count of arrivals.
        (
            ("--stages", "c99999999999:60", "-i", "100", "-o", "10", "--json"),
            "--stages: a stage's concurrency must be at least 1 and at most 1,000,000 clients (got 99999999999)",
        ),
        (
            ("--stages", "5:1e300", "-i", "100", "-o", "10"),
            "--stages: a stage's duration must be a positive number of seconds, at most 1e+07 (got 1e+300)",
        ),
        (  # the 157 GB are both models': the message named only the target's
            (
                "--qps",
                "1",
                "-i",
                "100",
                "-o",
                "10",
                "--draft",
                "llama-3-70b",
                "--draft-len",
                "2",
                "--acceptance",
                "0.8",
            ),
            "llama-3-8b weights and its draft llama-3-70b's (157.2 GB) leave no KV cache",
        ),
        (
            ("--stages", "1e300:60", "-i", "100", "-o", "10"),
            "--stages: a stage's rate must be > 0 requests/s, at most 1e+09 (got 1e+300)",
        ),
    ],
)
def test_cli_refuses_bad_load_and_client_settings(extra, message, tmp_path: Path):
    out = tmp_path / "r.csv"
    run = run_roofline("simulate", *M, *extra, "--requests-csv", str(out))
    assert run.code == 2 and message in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not out.exists()


def test_cli_refuses_a_trace_over_its_limits(tmp_path: Path, monkeypatch):
    from roofline.analyses.simulate import trace_io

    p = tmp_path / "t.csv"
    p.write_text("arrival_time_s,input_len,output_len\n" + "0,10,5\n" * 4)
    monkeypatch.setattr(trace_io, "MAX_TRACE_ROWS", 3)
    run = run_roofline("simulate", *M, "--trace", str(p))
    assert run.code == 2 and "more than 3 rows; trace files are limited to 3 rows" in run.stderr
    monkeypatch.setattr(trace_io, "MAX_TRACE_BYTES", 16)
    run = run_roofline("simulate", *M, "--trace", str(p))
    assert run.code == 2 and "trace files are limited" in run.stderr and len(run.stderr.strip().splitlines()) == 1
