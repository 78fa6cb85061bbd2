"""`request` on an idle engine: the client's TTFT and end-to-end latency add the engine entry's front end
(issue 25: "on the TTFT and E2E path ... does not consume GPU time"); the GPU figures keep their meaning."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import OpenLoop, SimConfig, simulate
from roofline.analyses.simulate.adapter import cost_for, request_path_for
from roofline.analyses.step import request
from roofline.deploy import deployment
from roofline.specs import load_hardware, load_model

from .inprocess import run_roofline
from .profiles import at_most

MODEL, HW = load_model("llama-2-7b"), load_hardware("h100-sxm-cal")


def test_the_client_sees_the_vllm_front_end_on_top_of_the_gpu_figures():
    # vllm/0.15.1: front end in = 2 ms (tt-inference-server#190: online TTFT = offline + ~4 ms, half before
    # the engine), front end out = the entry's fitted value (physical bounds 0-1 s).  An idle engine runs no
    # step, so async scheduling's one-step lag costs nothing: client TTFT = prefill + 2 ms + out.
    res = request(MODEL, HW, 1000, 64, engine="vllm")
    out = deployment(MODEL, HW, 1, engine="vllm").engine.frontend_out_s
    assert 0.0 < out < 1.0
    assert float(res.frontend_s) == pytest.approx(0.002 + out, rel=1e-12)
    assert float(res.client_ttft_s) == pytest.approx(float(res.ttft_s) + 0.002 + out, rel=1e-12)
    assert float(res.client_latency_s) == pytest.approx(float(res.latency_s) + 0.002 + out, rel=1e-12)
    assert "front end 2 ms in" in res.sources["client"]


@pytest.mark.parametrize("engine", [None, "trtllm/1.0"])
def test_without_a_front_end_the_client_figures_are_the_gpu_figures(engine):
    # No entry: tokens reach the client as the step ends; trtllm/1.0 is timed in process (trtllm-bench): 0 ms.
    res = request(MODEL, HW, 512, 32, engine=engine)
    assert float(res.frontend_s) == 0.0
    assert float(res.client_ttft_s) == float(res.ttft_s) and float(res.client_latency_s) == float(res.latency_s)


@at_most(10)
@given(st.integers(1, 3000), st.integers(1, 500))
def test_the_front_end_is_a_constant_shift_that_leaves_gpu_figures_alone(input_len, output_len):
    # No GPU time: the entry's front end changes neither TTFT, TPOT nor the GPU latency of the request, and
    # adds the same constant to the client's TTFT and end-to-end latency whatever the lengths.
    res = request(MODEL, HW, input_len, output_len, engine="vllm")
    front = float(res.frontend_s)
    assert float(res.client_ttft_s) - float(res.ttft_s) == pytest.approx(front, abs=1e-12)
    assert float(res.client_latency_s) - float(res.latency_s) == pytest.approx(front, abs=1e-12)
    assert float(res.latency_s) == pytest.approx(float(res.ttft_s) + float(res.decode_time_s), rel=1e-12)


def test_idle_engine_agrees_with_simulate_on_the_clients_figures():
    # Requests 1000 s apart on the vllm entry: each finds the engine idle, so the simulator's TTFT and E2E
    # (which include the request path) equal request's client figures; TPOT is GPU time in both.
    cost = cost_for(MODEL, HW, max_context=1100, engine="vllm")
    config = SimConfig(lengths=fixed_lengths(1000, 64), requests=3, warmup=0, path=request_path_for(cost.dep))
    res = simulate(cost, OpenLoop(0.001), config)
    alone = request(MODEL, HW, 1000, 64, engine="vllm")
    assert float(alone.frontend_s) > 0.006  # the shift is there to agree on
    assert res.ttft_s.mean == pytest.approx(float(alone.client_ttft_s), rel=1e-9)
    assert res.e2e_s.mean == pytest.approx(float(alone.client_latency_s), rel=1e-6)
    assert res.tpot_s.mean == pytest.approx(float(alone.tpot_s), rel=1e-6)


def test_request_json_adds_client_keys_and_keeps_the_gpu_ones():
    args = ("request", "--model", "llama-2-7b", "--hardware", "h100-sxm-cal", "-i", "1000", "-o", "64")
    plain = json.loads(run_roofline(*args, "--json").stdout)
    data = json.loads(run_roofline(*args, "--engine", "vllm", "--json").stdout)
    front = data["frontend_s"]
    assert data["client_ttft_s"] == pytest.approx(data["ttft_s"] + front, rel=1e-12)
    assert data["client_latency_s"] == pytest.approx(data["latency_s"] + front, rel=1e-12)
    assert plain["client_ttft_s"] == plain["ttft_s"] and plain["frontend_s"] == 0.0
    # the band rides on both TTFTs with the same ratios (the rows it was built from measured the client's)
    b = data["bands"]
    if "ttft_s" in b:
        assert b["client_ttft_s"]["p90"] / b["ttft_s"]["p90"] == pytest.approx(data["client_ttft_s"] / data["ttft_s"])
    table = run_roofline(*args, "--engine", "vllm").stdout
    assert "TTFT at the client" in table and "end-to-end at the client" in table
    assert "TTFT at the client" not in run_roofline(*args).stdout
