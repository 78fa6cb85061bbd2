"""The engine fit in registry terms: rows through the simulator, the request path, recovery, refusals."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from roofline.analyses.simulate.adapter import DeploymentStepCost
from roofline.calibrate.engine.fit import fit_entry, fit_rows, with_values
from roofline.calibrate.engine.predict import predict_row, row_deployment, row_engine
from roofline.calibrate.engine.rows_out import write_rows
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.simulated import simulated_row
from roofline.core.errors import RooflineError
from roofline.deploy import NO_ENGINE
from roofline.deploy.engine_registry import REGISTRY
from roofline.specs import load_hardware, load_model

from .conftest import run_cli

H100 = load_hardware("h100-sxm")
SEVEN_B = load_model("llama-2-7b")
#: A vLLM-like run: Llama-2-7B on one H100 spec sheet at a low rate (no queue), prompts 512, outputs 64.
RATE_ROW = E2ERow(
    id="low-rate", source="mine", model="llama-2-7b", hardware="h100-sxm", weight_dtype="fp16", kv_dtype="fp16",
    compute_dtype="fp16", engine="vllm", engine_version="0.15.1", load="rate", arrival_rate=0.5,
    input_len=512, output_len=64, num_requests=60, max_num_batched_tokens=2048, max_num_seqs=128, ttft_s=0.03,
)  # fmt: skip
ENTRY = replace(
    NO_ENGINE, values={"step_host_s": 1e-3, "eager_launch_s_per_layer": 6e-4}, key="t/1", policy="decode-first"
)


def test_the_simulated_rows_cost_is_the_step_model_with_the_entry():
    # The row's kernel table re-priced at an entry (with_engine: device grids shared) == the step model priced
    # with the entry, bit for bit: a decode-only row (8 decodes), a graph-captured mixed step (8 + 256 tokens)
    # and an eager one (8 + 1024).
    dep = row_deployment(RATE_ROW, H100, NO_ENGINE)
    sim = simulated_row(RATE_ROW, dep)
    priced = sim.base_cost(ENTRY).with_engine(ENTRY)
    with_entry = DeploymentStepCost(
        dep=replace(sim.dep, memory_utilization=ENTRY.value("memory_utilization"), engine=ENTRY),
        kv_capacity_tokens=priced.kv_capacity_tokens,
        max_context=priced.max_context,
        source="t",
    )
    for n, tokens in ((8, 0), (8, 256), (8, 1024)):
        pairs = tokens * (tokens + 1) / 2
        a = priced.step_time_s(n, n * 700.0, tokens, pairs)
        b = with_entry.step_time_s(n, n * 700.0, tokens, pairs)
        assert np.array_equal(a, b), (n, tokens)
    # the eager step takes the launch floor: 32 layers x 0.6 ms = 19.2 ms, more than its device work
    # (2 x 6.74e9 x 1032 FLOPs / 989 TFLOP/s = 14.1 ms of matmuls, + attention) + 1 ms of host time
    assert float(priced.step_time_s(8, 5600.0, 1024, 1024 * 1025 / 2)) == pytest.approx(32 * 6e-4, rel=1e-12)


def test_the_request_path_adds_to_ttft_and_e2e_but_not_tpot_by_hand():
    # At 0.5 req/s nothing queues.  The entry's front end (in 3 ms + out 5 ms) adds to TTFT and E2E alone, with
    # no new simulation (an open loop's arrivals shifted by a constant); TPOT, tokens/s and requests/s are
    # unchanged.  One step of scheduling lag runs in the simulator: a request waits up to one more step
    # before it joins (at most one 7B decode step at batch <= 2, under 10 ms on the spec sheet).
    dep = row_deployment(RATE_ROW, H100, NO_ENGINE)
    sim = simulated_row(RATE_ROW, dep)
    plain = with_values(replace(NO_ENGINE, key="t/1"), {"frontend_in_s": 0.0, "frontend_out_s": 0.0})
    front = with_values(plain, {"frontend_in_s": 3e-3, "frontend_out_s": 5e-3})
    a, b = sim.predict(plain), sim.predict(front)
    assert b["ttft_s"] - a["ttft_s"] == pytest.approx(8e-3, rel=1e-9)
    assert b["e2e_s"] - a["e2e_s"] == pytest.approx(8e-3, rel=1e-9)
    assert b["tpot_s"] == a["tpot_s"] and b["output_tokens_per_s"] == a["output_tokens_per_s"]
    assert len(sim.cache) == 1  # one simulation: the front end is priced after the run
    lagged = sim.predict(with_values(front, {"schedule_lag_steps": 1.0}))
    assert len(sim.cache) == 2
    assert 0.0 < lagged["ttft_s"] - b["ttft_s"] < 1e-2 and lagged["tpot_s"] == pytest.approx(b["tpot_s"], rel=0.02)


def test_a_run_whose_clients_timed_out_is_simulated_whole_with_their_timeout():
    # 300 requests sent at 20 req/s of 512 + 512 tokens to one H100 spec sheet (past what it serves), the
    # clients giving up after 10 s: every request is simulated (no sample, no warm-up), some fail at the
    # timeout, the survivors' latencies stay under it, and no tokens/s is predicted (the measured one counts
    # survivors over the load generator's own window).
    row = replace(RATE_ROW, arrival_rate=20.0, output_len=512, num_requests=60, num_failed=240, timeout_s=10.0)
    sim = simulated_row(row, row_deployment(row, H100, NO_ENGINE))
    assert (sim.requests, sim.warmup) == (300, 0)
    entry = with_values(replace(NO_ENGINE, key="t/1"), {})
    res = sim.run(entry)
    assert res.failed > 0 and res.completed > 0 and res.completed + res.failed == 300
    pred = sim.predict(entry)
    assert pred["e2e_s"] < 10.0 and "output_tokens_per_s" not in pred


def test_a_row_of_an_engine_version_without_an_entry_takes_the_nearest_and_says_so():
    row = replace(RATE_ROW, engine_version="0.16.2")
    eng = row_engine(row, H100)
    assert eng.key.startswith("vllm/") and "nearest entry to vllm/0.16.2" in eng.source
    assert not row_engine(replace(RATE_ROW, engine="tgi"), H100).active  # no entry at all: kernels only


def static_rows(engine_values: dict[str, float]) -> list[E2ERow]:
    """Static batches of Llama-2-7B on the H100 spec sheet whose 'measured' values are the step model's
    own predictions with ``engine_values``: a fit must give the values back."""
    entry = with_values(replace(NO_ENGINE, key="mine/1"), engine_values)
    rows = []
    for i, (batch, isl) in enumerate(((1, 128), (1, 1024), (1, 2048), (8, 512), (32, 256), (64, 1024), (16, 4096))):
        row = E2ERow(
            id=f"s{i}", source="synthetic", model="llama-2-7b", hardware="h100-sxm", weight_dtype="fp16",
            kv_dtype="fp16", compute_dtype="fp16", engine="mine", engine_version="1", load="static",
            batch=batch, input_len=isl, output_len=128, ttft_s=1.0,
        )  # fmt: skip
        pred = predict_row(row, H100, entry)
        rows.append(
            replace(row, ttft_s=pred["ttft_s"], tpot_s=pred["tpot_s"], output_tokens_per_s=pred["output_tokens_per_s"])
        )
    return rows


def test_fit_gives_back_known_terms_and_their_spread_is_small():
    # 32 layers x 1.5 ms of launches = 48 ms binds the eager prompt steps of 1024 and 2048 tokens (19 and 38 ms on
    # the device: the spec sheet at H100's achievable fractions, the default with an engine entry), not the
    # 4096-token ones (78 ms) nor the graph-captured decodes.
    truth = {
        "step_host_s": 2e-3,
        "seq_host_s": 3e-5,
        "cuda_graph_max_tokens": 512.0,
        "eager_launch_s_per_layer": 1.5e-3,
    }
    rows = static_rows(truth)
    base = with_values(replace(NO_ENGINE, key="mine/1"), {"cuda_graph_max_tokens": 512.0})
    fit = fit_entry("mine/1", fit_rows(rows, H100), base)
    assert set(fit.fitted) >= {"step_host_s", "seq_host_s", "eager_launch_s_per_layer"}
    for name in ("step_host_s", "seq_host_s", "eager_launch_s_per_layer"):
        assert fit.values[name] == pytest.approx(truth[name], rel=0.02), name
        assert fit.spread[name] < 0.05 * truth[name]
    assert fit.stats["after_mape"] < 0.002 and fit.stats["holdout_mape"] < 0.01
    assert "frontend_out_s" in fit.held  # static rows: the front end moves nothing


def test_a_term_at_its_upper_bound_is_reported_as_missing():
    # Rows 60% slower than any per-step host time within its 50 ms bound can make them: step_host_s is
    # pinned at the bound, reported as a term the model lacks.
    rows = [replace(r, tpot_s=r.tpot_s * 40, ttft_s=r.ttft_s * 40, output_tokens_per_s=r.output_tokens_per_s / 40)
            for r in static_rows({})]  # fmt: skip
    fit = fit_entry("mine/1", fit_rows(rows, H100), replace(NO_ENGINE, key="mine/1"), spread=False)
    assert fit.values["step_host_s"] == pytest.approx(REGISTRY["step_host_s"].high, rel=1e-6)
    assert "step_host_s" in fit.at_upper


def test_rows_that_determine_no_term_are_refused_naming_the_terms(tmp_path):
    # One static row timed through its TTFT alone, a 4096-token prompt (above the 512 graph tokens, so the
    # eager floor could bind) ... but the candidate list is only the front end, which static rows never see.
    (row,) = static_rows({})[:1]
    with pytest.raises(RooflineError, match=r"determine none of its terms \(frontend_out_s: these rows cannot"):
        fit_entry("mine/1", fit_rows([row], H100), replace(NO_ENGINE, key="mine/1"), candidates=["frontend_out_s"])
    # calibrate fit on one 32k-token prompt of Llama-3.1-405B in fp8 on 8 H100s (TTFT only): 2 x 405e9 x 32000
    # FLOPs / (8 x 1979 TFLOP/s) = 1.6 s of matmuls + attention; 10 ms of host time, 0.2 ms per sequence or
    # 126 layers x 2 ms of launches (below the device time) move it less than 0.5%: no term is determined.
    row = replace(
        row,
        model="llama-3.1-405b",
        tp=8,
        weight_dtype="fp8",
        kv_dtype="fp8",
        compute_dtype="fp8",
        batch=1,
        input_len=32000,
        output_len=1,
        tpot_s=None,
        output_tokens_per_s=None,
        ttft_s=2.0,
    )
    path = tmp_path / "rows.csv"
    write_rows([row], path)
    run = run_cli("calibrate", "fit", str(path), "--hardware", "h100-sxm", "--out", str(tmp_path / "p.yaml"))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "determine none of its terms" in run.stderr and "step_host_s" in run.stderr
    assert not (tmp_path / "p.yaml").exists()
