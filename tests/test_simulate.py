"""The serving simulator against hand derivations, queueing theory and invariants.

Every expected number comes from the synthetic cost of tests/sim_costs.py (constants chosen there), worked by
hand in the comments, or from a textbook queueing formula; none is copied from the output.
"""

from __future__ import annotations

from pathlib import Path

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
    StepCost,
    Trace,
    read_trace,
)
from roofline.analyses.simulate import simulate as simulate_config
from roofline.core.errors import RooflineError
from tests.profiles import at_most
from tests.sim_costs import A, B, C, LinearCost, decode_s, prefill_s


def simulate(cost, load, lengths=None, **kwargs):
    """simulate with the config's fields as keywords."""
    return simulate_config(cost, load, SimConfig(lengths=lengths, **kwargs))


def test_the_synthetic_cost_is_a_step_cost():
    assert isinstance(LinearCost(), StepCost)


# ---------------------------------------------------------------------- vanishing load


def test_vanishing_load_ttft_is_one_prefill_and_tpot_one_decode():
    # I = 100, O = 11, budget 8192 >= 100: TTFT = A + 100·B + C·100·101/2 = 5 ms + 10 ms + 50.5 µs.
    # Decode steps j = 1..10 at contexts 100..109: TPOT = A + B + C·104.5.
    res = simulate(LinearCost(), OpenLoop(0.01), fixed_lengths(100, 11), requests=20, seed=1, warmup=0)
    ttft = A + 100 * B + C * 5050
    tpot = A + B + C * 104.5
    for name, expected in (("ttft_s", ttft), ("tpot_s", tpot), ("e2e_s", ttft + 10 * tpot)):
        got = getattr(res, name)
        assert got.mean == pytest.approx(expected, rel=1e-9), name
        assert got.p99 == pytest.approx(expected, rel=1e-9), name
    # Inter-token gaps are the ten decode steps themselves: mean TPOT, p99 the longest (context 109).
    assert res.itl_s.mean == pytest.approx(tpot, rel=1e-9)
    assert res.itl_s.p99 == pytest.approx(decode_s(1, 109), rel=1e-9)
    assert res.completed == 20 and res.dropped == 0 and res.preemptions == 0
    assert res.mean_batch < 0.01  # one 21 ms request every 100 s


def test_chunked_prefill_sums_its_chunks():
    # Budget 32 < 100 prompt tokens: chunks 32, 32, 32, 4 after 0, 32, 64, 96 cached tokens.
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=32)
    res = simulate(LinearCost(), OpenLoop(0.01), fixed_lengths(100, 2), requests=1, warmup=0, scheduler=cfg)
    expected = prefill_s(32, 0) + prefill_s(32, 32) + prefill_s(32, 64) + prefill_s(4, 96)
    assert res.ttft_s.mean == pytest.approx(expected, rel=1e-12)
    assert res.tpot_s.mean == pytest.approx(decode_s(1, 100), rel=1e-12)


def test_prefix_hits_skip_that_share_of_the_prompt():
    # Hit rate 0.25 of 100 tokens: 25 cached, 75 computed after them.
    cfg = SchedulerConfig(prefix_hit_rate=0.25)
    res = simulate(LinearCost(), OpenLoop(0.01), fixed_lengths(100, 3), requests=1, warmup=0, scheduler=cfg)
    assert res.ttft_s.mean == pytest.approx(prefill_s(75, 25), rel=1e-12)


def test_disaggregated_ttft_adds_the_kv_transfer():
    # Prefill on its own replica, 7 ms to ship the KV, then decode steps at contexts 100..103.
    cost = LinearCost(transfer_s=0.007)
    res = simulate(
        cost,
        OpenLoop(0.01),
        fixed_lengths(100, 5),
        requests=3,
        warmup=0,
        fleet=FleetConfig(replicas=1, prefill_replicas=1),
    )
    assert res.ttft_s.mean == pytest.approx(prefill_s(100) + 0.007, rel=1e-12)
    assert res.tpot_s.mean == pytest.approx(decode_s(1, 101.5), rel=1e-12)
    assert res.completed == 3


# ---------------------------------------------------------------------- queueing theory


def test_littles_law_and_throughput_below_saturation():
    # λ = 4/s of 200 in / 50 out.  L (time-averaged requests in the system, from the replica's
    # own queue and batch) must equal λ·W, and output tokens/s = λ·mean O = 200.
    rate = 4.0
    res = simulate(LinearCost(), OpenLoop(rate), fixed_lengths(200, 50), requests=6000, seed=3)
    assert res.mean_in_system == pytest.approx(rate * res.e2e_s.mean, rel=0.03)
    assert res.output_tokens_per_s == pytest.approx(rate * 50, rel=0.03)
    assert res.requests_per_s == pytest.approx(rate, rel=0.03)


def test_throughput_follows_the_mean_output_of_a_length_mix():
    # Equal weights of 20 and 80 output tokens: mean O = 50, so 3/s gives 150 tokens/s.
    res = simulate(LinearCost(), OpenLoop(3.0), parse_lengths("100:20:1,300:80:1"), requests=6000, seed=4)
    assert res.output_tokens_per_s == pytest.approx(3.0 * 50, rel=0.04)


def test_closed_loop_keeps_its_clients_in_the_system():
    res = simulate(LinearCost(), ClosedLoop(12), fixed_lengths(64, 16), requests=3000, seed=5)
    assert res.mean_in_system == pytest.approx(12, rel=0.01)
    assert res.mean_batch == pytest.approx(12, rel=0.01)


def test_one_slot_with_deterministic_service_waits_as_md1():
    # Every step costs 10 ms (B = C = 0); one slot; 10 in / 5 out = 1 prefill + 4 decode steps:
    # S = 50 ms.  λ = 10/s: ρ = 0.5, W = ρ·S / (2(1 - ρ)) = 25 ms; TTFT = W + 10 ms.
    cost = LinearCost(a=0.010, b=0.0, c=0.0)
    cfg = SchedulerConfig(max_num_seqs=1, max_num_batched_tokens=64)
    res = simulate(cost, OpenLoop(10.0), fixed_lengths(10, 5), requests=20000, seed=6, scheduler=cfg)
    assert res.ttft_s.mean - 0.010 == pytest.approx(0.025, rel=0.06)  # seeds 0-5 fall within 3.4%
    assert res.e2e_s.mean == pytest.approx(0.025 + 0.050, rel=0.03)


def test_percentiles_are_ordered_and_p99_ttft_rises_with_load():
    p99 = []
    for rate in (2.0, 5.0, 8.0):
        res = simulate(LinearCost(), OpenLoop(rate), fixed_lengths(300, 40), requests=3000, seed=7)
        for lat in (res.ttft_s, res.tpot_s, res.itl_s, res.e2e_s):
            assert lat.p50 <= lat.p90 <= lat.p99
        p99.append(res.ttft_s.p99)
    assert p99[0] < p99[1] < p99[2]


@pytest.mark.parametrize("replicas", [1, 2])
def test_throughput_saturates_at_the_largest_batch(replicas):
    # max_num_seqs = 8 always full (32 clients per replica, no think time).  Every step each of the
    # 8 slots yields one token, and a request spends 1 prefill step + 31 decode steps, so per
    # cycle of 8 requests: tokens = 8·32, time = t_pf + Σ_{j=1..31} t_dec(j) with
    # t_pf = A + B·8·64 + C·8·64·65/2 and t_dec(j) = A + 8B + 8C·(64 + j - 1).
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=1024)
    t_pf = A + B * 8 * 64 + C * 8 * 64 * 65 / 2
    t_dec = sum(A + 8 * B + 8 * C * (64 + j - 1) for j in range(1, 32))
    expected = replicas * 8 * 32 / (t_pf + t_dec)
    res = simulate(
        LinearCost(),
        ClosedLoop(32 * replicas),
        fixed_lengths(64, 32),
        requests=4000 * replicas,
        seed=8,
        scheduler=cfg,
        fleet=FleetConfig(replicas=replicas),
    )
    assert res.output_tokens_per_s == pytest.approx(expected, rel=0.01)
    assert res.mean_batch == pytest.approx(8, rel=0.01)
    assert res.requests_per_s == pytest.approx(expected / 32, rel=0.02)


# ---------------------------------------------------------------------- conservation


def test_tiny_kv_preempts_and_every_request_is_accounted_for(tmp_path: Path):
    # 40 blocks of 16 = 640 tokens for 8 slots of up to 100 + 60 tokens: decodes run out of blocks.
    # The trace's last request needs 900 + 10 - 1 tokens of KV > 640: dropped with its reason.
    rows = [f"{0.01 * i:.2f},100,60" for i in range(40)] + ["0.5,900,10"]
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_time_s,input_len,output_len\n" + "\n".join(rows) + "\n")
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=512, block_size=16)
    res = simulate(LinearCost(kv_capacity_tokens=640), read_trace(trace), requests=None, scheduler=cfg, warmup=0)
    assert res.preemptions > 0
    assert res.completed == 40 and res.dropped == 1
    assert res.dropped_reasons == {"needs more KV than one replica's cache holds": 1}
    assert res.completed + res.dropped == res.arrived == 41
    assert res.mean_kv_utilization <= 1.0
    # A preempted request is slower than alone: e2e >= TTFT + 59 decode steps at batch 1.
    alone = prefill_s(100) + sum(decode_s(1, 100 + j - 1) for j in range(1, 60))
    assert res.e2e_s.p50 >= alone


def test_deterministic_for_a_seed():
    def run(seed: int) -> dict:
        return simulate(
            LinearCost(), OpenLoop(6.0, cv=2.0), parse_lengths("50:10,400:90"), requests=500, seed=seed
        ).as_dict()

    assert run(11) == run(11)
    assert run(11)["ttft_s"] != run(12)["ttft_s"]


def test_bursty_arrivals_wait_longer_than_poisson():
    common = dict(lengths=fixed_lengths(300, 40), requests=4000, seed=9)
    poisson = simulate(LinearCost(), OpenLoop(6.0), **common)
    bursty = simulate(LinearCost(), OpenLoop(6.0, cv=3.0), **common)
    assert bursty.ttft_s.mean > poisson.ttft_s.mean


@pytest.mark.slow
def test_least_outstanding_balances_a_fleet():
    common = dict(lengths=fixed_lengths(300, 40), requests=4000, seed=10)
    one = simulate(LinearCost(), OpenLoop(5.0), **common)
    two = simulate(LinearCost(), OpenLoop(10.0), fleet=FleetConfig(replicas=2, balancer="least-outstanding"), **common)
    assert two.completed == 4000
    assert two.ttft_s.mean < one.ttft_s.mean * 1.05  # each replica sees at most half the load
    assert two.output_tokens_per_s == pytest.approx(10.0 * 40, rel=0.04)


def test_warmup_rule_is_stated():
    res = simulate(LinearCost(), OpenLoop(1.0), fixed_lengths(10, 2), requests=50)
    assert res.warmup_requests == 5 and res.measured_requests == 45
    assert "first 5 requests by arrival" in res.warmup_rule
    with pytest.raises(RooflineError, match=r"^warmup must be in \[0, requests\) \(got 50 of 50\)"):
        simulate(LinearCost(), OpenLoop(1.0), fixed_lengths(10, 2), requests=50, warmup=50)


def test_time_series_is_bounded():
    res = simulate(LinearCost(), OpenLoop(5.0), fixed_lengths(100, 20), requests=2000, max_points=300)
    series = res.series
    assert series.time_s.size == 300 and series.batch.size == 300
    assert np.all(np.diff(series.time_s) > 0) and np.all((series.kv_use >= 0) & (series.kv_use <= 1))


def test_slo_goodput():
    # At vanishing load TTFT = 15.05 ms: an SLO of 10 ms fails every request, 20 ms passes all.
    common = dict(lengths=fixed_lengths(100, 11), requests=10, seed=1, warmup=0)
    assert simulate(LinearCost(), OpenLoop(0.01), ttft_slo_s=0.010, **common).goodput_fraction == 0.0
    assert simulate(LinearCost(), OpenLoop(0.01), ttft_slo_s=0.020, tpot_slo_s=0.006, **common).goodput_fraction == 1.0


# ---------------------------------------------------------------------- input boundary


@pytest.mark.parametrize(
    "row, message",
    [
        ("x,10,10", "line 2: column 'arrival_time_s' is 'x'; allowed: a finite number in \\[0,"),
        ("-1,10,10", "line 2: column 'arrival_time_s' is '-1'; allowed"),
        ("0,0,10", "line 2: column 'input_len' is '0'; allowed: a whole number in \\[1,"),
        ("0,10,1.5", "line 2: column 'output_len' is '1.5'; allowed: a whole number"),
    ],
)
def test_bad_trace_rows_get_one_line(tmp_path: Path, row: str, message: str):
    p = tmp_path / "bad.csv"
    p.write_text(f"arrival_time_s,input_len,output_len\n{row}\n")
    with pytest.raises(RooflineError, match=message):
        read_trace(p)


def test_trace_is_sorted_by_arrival(tmp_path: Path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_time_s,input_len,output_len\n2.0,10,3\n1.0,20,4\n")
    trace = read_trace(p)
    assert isinstance(trace, Trace)
    assert trace.arrival_s.tolist() == [1.0, 2.0] and trace.input_len.tolist() == [20, 10]


def test_trace_columns_outside_the_schema_are_ignored(tmp_path: Path):
    # traces from elsewhere carry ids and other columns (docs/guides/input-boundaries.md); the schema's are read
    p = tmp_path / "t.csv"
    p.write_text("request_id,arrival_time_s,input_len,model,output_len\nr1,1.0,20,x,4\nr0,0.5,10,y,3\n")
    trace = read_trace(p)
    assert trace.arrival_s.tolist() == [0.5, 1.0] and trace.input_len.tolist() == [10, 20]
    assert trace.output_len.tolist() == [3, 4] and trace.lines.tolist() == [3, 2]


def test_bad_scheduler_settings():
    # The Python API names its parameters; the CLI shows its flags (tests/test_simulate_clients.py).
    with pytest.raises(RooflineError, match=r"^max_num_batched_tokens=32 must be at least max_num_seqs=64"):
        SchedulerConfig(max_num_seqs=64, max_num_batched_tokens=32)
    with pytest.raises(RooflineError, match=r"^prefix_hit_rate must be in \[0, 1\)"):
        SchedulerConfig(prefix_hit_rate=1.0)
    with pytest.raises(RooflineError, match="^balancer: unknown 'random'"):
        FleetConfig(balancer="random")


# ---------------------------------------------------------------------- properties


@at_most(30)
@given(
    seqs=st.integers(1, 6),
    extra_budget=st.integers(0, 100),
    block=st.sampled_from([1, 4, 16]),
    capacity=st.integers(64, 2000),
    inp=st.integers(1, 60),
    out=st.integers(1, 40),
    rate=st.floats(0.5, 200.0),
    closed=st.booleans(),
    prefill_replicas=st.integers(0, 1),
    replicas=st.integers(1, 2),
    hit=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 10),
)
def test_invariants_on_small_random_configs(
    seqs, extra_budget, block, capacity, inp, out, rate, closed, prefill_replicas, replicas, hit, seed
):
    cfg = SchedulerConfig(
        max_num_seqs=seqs, max_num_batched_tokens=seqs + extra_budget, block_size=block, prefix_hit_rate=hit
    )
    load = ClosedLoop(3) if closed else OpenLoop(rate)
    res = simulate(
        LinearCost(kv_capacity_tokens=capacity),
        load,
        parse_lengths(f"{inp}:{out},{inp * 2}:{out}"),
        requests=40,
        seed=seed,
        scheduler=cfg,
        fleet=FleetConfig(replicas=replicas, prefill_replicas=prefill_replicas),
        warmup=0,
    )
    assert res.completed + res.dropped == 40
    assert res.preemptions >= 0 and 0.0 <= res.mean_kv_utilization <= 1.0 + 1e-9
    if res.completed:
        assert np.all(res.samples["ttft_s"] > 0)
        assert np.all(res.samples["ttft_s"] <= res.samples["e2e_s"] + 1e-12)
        for lat in (res.ttft_s, res.e2e_s):
            assert lat.p50 <= lat.p90 <= lat.p99
        if out > 1:  # no decode step is cheaper than one sequence at its shortest context
            assert res.tpot_s.p50 >= decode_s(1, inp) - 1e-12


# ---------------------------------------------------------------------- adapter, page and CLI


def test_adapter_at_vanishing_load_equals_request_batch_1():
    # The issue's check: one request alone has request --batch 1's TTFT and TPOT.
    from roofline.analyses.simulate.adapter import cost_for
    from roofline.analyses.step import request
    from roofline.specs import load_hardware, load_model

    model, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    res = simulate(cost_for(model, hw), OpenLoop(0.001), fixed_lengths(1024, 64), requests=3, warmup=0)
    alone = request(model, hw, 1024, 64)
    assert res.ttft_s.mean == pytest.approx(float(alone.ttft_s), rel=1e-9)
    assert res.tpot_s.mean == pytest.approx(float(alone.tpot_s), rel=1e-9)


def test_page_has_three_cdfs_and_the_time_series(tmp_path: Path):
    from roofline.views.report.simulate_page import cdf_points, write_simulate_page

    assert cdf_points(np.array([3.0, 1.0, 2.0, 4.0])) == ([1.0, 2.0, 3.0, 4.0], [0.25, 0.5, 0.75, 1.0])
    res = simulate(LinearCost(), OpenLoop(5.0), fixed_lengths(100, 20), requests=300)
    text = write_simulate_page(tmp_path / "s.html", res, "synthetic").read_text()
    # three CDFs, the time series, and each request's TTFT by send time
    assert text.count('class="plotly-graph-div"') == 5 and "first 30 requests by arrival" in text


CONTRACT_KEYS = {
    "ttft_s",
    "tpot_s",
    "itl_s",
    "e2e_s",
    "output_tokens_per_s",
    "requests_per_s",
    "mean_batch",
    "preemptions",
    "completed",
}


def test_cli_json_contract_and_determinism(tmp_path: Path):
    from .conftest import run_json

    args = (
        "simulate",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--arrival-rate",
        "5",
        "-i",
        "512",
        "-o",
        "64",
        "--requests",
        "200",
        "--seed",
        "3",
    )
    first, again = run_json(*args), run_json(*args)
    assert CONTRACT_KEYS <= set(first) and first == again
    assert set(first["ttft_s"]) == {"mean", "p50", "p90", "p99"} and first["completed"] == 200
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_time_s,input_len,output_len\n0,100,10\n0.5,200,20\n")
    closed = run_json("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--trace", str(trace))
    assert closed["completed"] == 2 and closed["warmup"]["requests"] == 0


@pytest.mark.parametrize(
    "extra, message",
    [
        ((), "give exactly one load"),
        (("--arrival-rate", "1", "--concurrency", "2"), "give exactly one load"),
        (("--arrival-rate", "-1"), "--arrival-rate: must be a number in (0,"),
    ],
)
def test_cli_bad_input_is_one_line(extra, message):
    from .conftest import run_cli

    proc = run_cli("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "10", "-o", "5", *extra)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_writes_the_per_request_log_and_reports_clients(tmp_path: Path):
    import csv

    from tests.inprocess import run_roofline

    out = tmp_path / "requests.csv"
    run = run_roofline(
        "simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--stages", "4:5,c8:5", "-i", "256",
        "-o", "32", "--timeout", "10s", "--requests-csv", str(out), "--json",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    import json

    data = json.loads(run.stdout)
    assert {"failed", "stages", "prefix_hit_rate", "timeout_s"} <= set(data) and len(data["stages"]) == 2
    assert data["stages"][0]["sent"] == 20  # 4 requests/s for 5 s, exactly
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == data["arrived"] == data["completed"] + data["failed"]
    assert list(rows[0]) == [
        "request", "stage", "arrival_s", "first_token_s", "finish_s", "input_tokens", "output_tokens",
        "cached_tokens", "preemptions", "failed", "measured",
    ]  # fmt: skip
    assert {r["stage"] for r in rows} == {"0", "1"} and all(r["failed"] == "0" for r in rows)
