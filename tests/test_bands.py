"""Uncertainty bands: the data tier of a deployment, bands from quantiles by hand, the shipped table."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from roofline.analyses.bands import bands_for, pessimistic
from roofline.deploy import deployment, engine_terms
from roofline.deploy.bands import BANDS_FILE, Band, band_table, data_tier
from roofline.specs import load_hardware, load_model

from .inprocess import run_roofline

LLAMA = load_model("llama-3-8b")
SPEC, CAL = load_hardware("h100-sxm"), load_hardware("h100-sxm-cal")


def test_the_data_tier_is_what_priced_the_deployment():
    assert data_tier(deployment(LLAMA, SPEC, 1)) == "spec sheet"
    assert data_tier(deployment(LLAMA, CAL, 1)) == "calibrated kernels"
    assert data_tier(deployment(LLAMA, CAL, 1, engine=engine_terms(CAL, "vllm"))) == "fitted engine entry"
    # a spec sheet with an engine entry is still the spec-sheet tier: its kernels are the spec's
    assert data_tier(deployment(LLAMA, SPEC, 1, engine=engine_terms(SPEC, "vllm"))) == "spec sheet"


def test_bands_and_the_pessimistic_edge_by_hand(monkeypatch):
    # Measured/predicted ratios whose log quantiles at 10%, 50%, 90% are ln 0.8, 0, ln 1.5: a 100 ms TTFT
    # lies in [80, 150] ms; at 90% confidence a latency is priced at its p90 (150 ms) and a throughput of
    # 1000 tokens/s at its p10 (800).
    band = Band((0.1, 0.5, 0.9), (math.log(0.8), 0.0, math.log(1.5)), 40, 0.8)
    table = {"fitted engine entry": {"ttft_s": band, "throughput": band}}
    monkeypatch.setattr("roofline.analyses.bands.band_table", lambda: table)
    dep = deployment(LLAMA, CAL, 1, engine=engine_terms(CAL, "vllm"))
    out = bands_for(dep, {"ttft_s": 0.1, "tokens_per_s_per_chip": 1000.0, "tpot_s": 0.01})
    assert out["tier"] == "fitted engine entry"
    assert out["ttft_s"] == {"p10": pytest.approx(0.08), "p90": pytest.approx(0.15), "n": 40}
    assert out["tokens_per_s_per_chip"]["p10"] == pytest.approx(800.0)
    assert "tpot_s" not in out  # no TPOT band in this table: none is invented
    assert pessimistic(dep, "ttft_s", 0.1, 0.9) == pytest.approx(0.15)
    assert pessimistic(dep, "tokens_per_s_per_chip", 1000.0, 0.9) == pytest.approx(800.0)
    assert pessimistic(deployment(LLAMA, SPEC, 1), "ttft_s", 0.1, 0.9) == 0.1  # no band for the tier: as is


def test_plan_confidence_meets_the_slo_at_the_bands_pessimistic_edge(monkeypatch):
    # A band whose 90th percentile of measured/predicted is 2 (TPOT) and 1.5 (TTFT): plan --confidence 0.9 prices
    # every shape at twice its decode step and 1.5x its prefill (E[S^2] x 2.25), then sizes replicas as usual.
    from roofline.analyses.lengths import lengths_from_options
    from roofline.analyses.plan.capacity import Targets
    from roofline.analyses.plan.shapes import SearchSpace, candidate_shapes

    levels = (0.1, 0.5, 0.9)
    table = {
        "calibrated kernels": {
            "tpot_s": Band(levels, (0.0, math.log(1.5), math.log(2.0)), 40, 0.8),
            "ttft_s": Band(levels, (0.0, math.log(1.2), math.log(1.5)), 40, 0.8),
        }
    }
    monkeypatch.setattr("roofline.analyses.bands.band_table", lambda: table)
    work = [lengths_from_options(512, 128, None, None, LLAMA)]
    space = SearchSpace(max_chips=2, batches=(8, 64), weights=("bf16",), kv_dtypes=("bf16",))
    plain = candidate_shapes(LLAMA, [CAL], work, Targets(tpot_slo_s=0.02), space)
    sure = candidate_shapes(LLAMA, [CAL], work, Targets(tpot_slo_s=0.02), replace(space, confidence=0.9))
    assert np.allclose(sure.step_s, 2.0 * plain.step_s) and np.allclose(sure.prefill_mean_s, 1.5 * plain.prefill_mean_s)
    assert np.allclose(sure.prefill_sq_s2, 2.25 * plain.prefill_sq_s2)
    assert "90% pessimistic edge" in sure.sources["confidence"] and "confidence" not in plain.sources
    args = ("plan", "-m", "llama-3-8b", "-H", "h100-sxm-cal", "--qps", "20", "-i", "512", "-o", "128")
    out = json.loads(run_roofline(*args, "--tpot-slo", "20ms", "--confidence", "0.9", "--json").stdout)
    assert out["best"]["tpot_s"] <= 0.020 and "confidence" in out["sources"]
    # plan --json gives the best plan's bands: here TPOT in [1, 2] x its (pessimistic) prediction
    assert out["bands"]["tier"] == "calibrated kernels"
    assert out["bands"]["tpot_s"]["p90"] == pytest.approx(2.0 * out["best"]["tpot_s"])


def test_request_serve_and_simulate_json_carry_bands():
    common = ("--model", "llama-2-7b", "--hardware", "h100-sxm-cal", "--engine", "vllm", "-i", "512", "-o", "64")
    req = json.loads(run_roofline("request", *common, "--json").stdout)
    assert req["bands"]["tier"] == "fitted engine entry" and "ttft_s" in req  # earlier keys kept
    srv = json.loads(run_roofline("serve", *common, "--mode", "mixed", "--batch", "8", "--json").stdout)
    assert srv["bands"]["tier"] == "fitted engine entry"
    sim = json.loads(run_roofline("simulate", *common, "--qps", "1", "--requests", "50", "--json").stdout)
    assert sim["bands"]["tier"] == "fitted engine entry" and "ttft_s" in sim
    if band_table():
        for data, key in ((req, "ttft_s"), (srv, "tpot_s"), (sim, "output_tokens_per_s")):
            assert data["bands"][key]["p10"] <= data["bands"][key]["p90"]


@pytest.mark.skipif(not BANDS_FILE.is_file(), reason="bands not built (python -m roofline.calibrate.engine.bands)")
def test_the_shipped_bands_record_their_coverage_held_out_by_source():
    # Issue 25 asks the p10-p90 band to cover 80% +- 10% of held-out rows.  The file records, per tier and
    # quantity, how often a band built without a source covered that source's rows, pooled and per source
    # (docs/guides/validation.md): the kernel tier's TTFT and tokens/s do (89%, 86%); the kernel tier's TPOT does
    # not (two sources 1.8x apart: 34%), which the guide says.
    table = band_table()
    assert set(table) == {"spec sheet", "calibrated kernels", "fitted engine entry"}
    for tier in table.values():
        for band in tier.values():
            assert band.n >= 20 and 0.0 <= band.coverage <= 1.0
            assert band.quantile(0.1) < band.quantile(0.5) < band.quantile(0.9)
            assert len(band.coverage_by_source) >= 2 and all(0 <= c <= 1 for _, c in band.coverage_by_source)
    kernels = table["calibrated kernels"]
    assert 0.7 <= kernels["ttft_s"].coverage <= 0.9 and 0.7 <= kernels["throughput"].coverage <= 0.9
    # with a fitted entry, the median TPOT and tokens/s (each source one vote) are within 10% of the prediction
    fitted = table["fitted engine entry"]
    assert abs(fitted["tpot_s"].quantile(0.5) - 1) < 0.1 and abs(fitted["throughput"].quantile(0.5) - 1) < 0.1
