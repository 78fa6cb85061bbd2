"""End-to-end accuracy on the shipped public rows, engine entries held out (issue 25's figures).

The figures asserted are the ones `roofline validate --holdout` prints (docs/guides/validation.md),
with a little room for the simulator's seeded sampling.
"""

from __future__ import annotations

import pytest

from roofline.calibrate.engine.data import load_shipped
from roofline.calibrate.engine.validate import validate
from roofline.deploy.engine_builtin import builtin_entries

pytestmark = pytest.mark.slow  # fits and validates whole profiles: only in the full run


@pytest.fixture(scope="module")
def held_out():
    return validate(load_shipped(), holdout=True)


def by_source(summary: dict, quantity: str, source: str) -> float:
    return summary[quantity]["by_source"][source]["mape"]


def test_the_real_vllm_runs_held_out_by_source_are_within_15_percent(held_out):
    # Without the vLLM rows the vllm/0.15.1 entry has only its documented values (front end 2 + 2 ms,
    # one step of async-scheduling lag, no host time): measured over the six stages 11.2% TTFT, 5.5% TPOT,
    # 3.7% E2E, 1.5% tokens/s.
    s = held_out.summary_by_source_holdout
    assert by_source(s, "ttft_s", "vllm-serving-h100") <= 0.15
    assert by_source(s, "tpot_s", "vllm-serving-h100") <= 0.08
    assert by_source(s, "e2e_s", "vllm-serving-h100") <= 0.08
    assert by_source(s, "throughput", "vllm-serving-h100") <= 0.05
    # the static TensorRT-LLM batches, their entries refitted without them: 7.5%
    assert by_source(s, "throughput", "trtllm-static-batch") <= 0.10


def test_trtllm_1_0_held_out_by_source_is_within_15_percent_on_every_chip(held_out):
    # trtllm/1.0 without the perf-overview rows has only its documented values; B200 is priced by its own
    # kernel tables (aiconfigurator TensorRT-LLM 1.3.0rc20, nvfp4 GEMMs included), GB200 by B200's fit: the
    # issue's 15% on tokens/s overall (10.3%) and per chip (H100 6.2%, H200 7.3%, B200 16.4%, GB200 13.6%;
    # with H100's kernels transferred to B200 and GB200 these were 49.0% and 42.9%).
    s = held_out.summary_by_source_holdout
    assert by_source(s, "throughput", "trtllm-perf-overview") <= 0.15
    for chip, most in (("h100-sxm", 0.10), ("h200", 0.10), ("b200", 0.20), ("gb200", 0.20)):
        cases = [c for c in held_out.cases if c.source == "trtllm-perf-overview" and c.hardware == chip]
        assert cases and sum(abs(c.ratio - 1) for c in cases) / len(cases) <= most, chip


def test_the_overloaded_run_is_predicted_with_its_client_timeout(held_out):
    # The reasoning stage (4 req/s of 1448-token outputs; 4068 of 4800 requests failed at the 300 s client
    # timeout) runs whole through the simulator with that timeout: the survivors' TTFT (measured 106.6 s) and
    # E2E (160.1 s) come out within 10% and 5% (116.6 s, 162.9 s with the documented vLLM values), and no
    # tokens/s is compared (the load generator counts survivors over its own window).
    cases = {c.quantity: c for c in held_out.cases if "reasoning" in c.id}
    assert set(cases) == {"ttft_s", "tpot_s", "e2e_s"}
    assert abs(cases["ttft_s"].ratio - 1) < 0.10 and abs(cases["e2e_s"].ratio - 1) < 0.05
    assert not [s for s in held_out.skipped if "reasoning" in s.id]


def test_the_fitted_vllm_entry_transfers_across_its_load_stages():
    # Fitted on the five non-overloaded stages (5 to 20 req/s): each stage held out once, 1.6% over
    # TTFT, TPOT, E2E and tokens/s; two terms fitted, both inside their physical range.
    entry = builtin_entries()["vllm/0.15.1"]
    assert entry.rows == 5 and entry.fit["holdout_mape"] <= 0.03 and not entry.at_upper_bound
    assert 1e-4 < entry.terms["step_host_s"] < 1e-3 and 2e-3 < entry.terms["frontend_out_s"] < 8e-3


def test_every_held_out_case_says_how_its_entry_was_got(held_out):
    assert all(c.tier.startswith("held out by source: ") for c in held_out.cases)
    vllm = [c for c in held_out.cases if c.source == "vllm-serving-h100"]
    assert vllm and all("documented values" in c.tier for c in vllm)
