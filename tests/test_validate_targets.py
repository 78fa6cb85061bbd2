"""End-to-end accuracy on the shipped public rows, engine terms held out by case (issue targets)."""

from __future__ import annotations

import pytest

from roofline.e2e.data import load_shipped
from roofline.e2e.validate import validate


@pytest.fixture(scope="module")
def held_out():
    return validate(load_shipped(), holdout=True)


def test_held_out_errors_meet_the_targets(held_out):
    s = held_out.summary
    # Targets (issue "Validated end to end"): TPOT <= 15%, TTFT <= 20%, output tokens/s <= 15% MAPE.
    assert s["tpot_s"]["mape"] <= 0.15 and s["tpot_s"]["n"] >= 140
    assert s["ttft_s"]["mape"] <= 0.20 and s["ttft_s"]["n"] >= 150
    assert s["throughput"]["mape"] <= 0.15 and s["throughput"]["n"] >= 140
    # The spec sheet alone is far off: the calibrated profile and engine terms carry the accuracy.
    assert all(held_out.summary_spec[q]["mape"] > 0.4 for q in ("ttft_s", "tpot_s", "throughput"))


def test_tensor_parallel_error_meets_the_target_for_throughput(held_out):
    # Issue target: TP > 1 no worse than 1.25x the TP1 error.  Met for throughput (TP1, 2, 4, 8 rows)
    # and for TTFT at TP2; TPOT has no TP1 row.
    for quantity, tps in (("throughput", ("2", "4", "8")), ("ttft_s", ("2",))):
        by_tp = held_out.summary[quantity]["by_tp"]
        for tp in tps:
            assert by_tp[tp]["mape"] <= 1.25 * by_tp["1"]["mape"], (quantity, tp)


def test_tensor_parallel_ttft_keeps_the_level_reached(held_out):
    # Missed for TTFT at TP4 (13.4%, 1.68x TP1's 8.0%) and TP8 (18.3%, 2.29x); see README: their rows are
    # mostly splitwise-sim prefills, whose per-token cost steps up past 2048 tokens a step where the model
    # has no term.  These guard the level reached, so a regression fails.
    by_tp = held_out.summary["ttft_s"]["by_tp"]
    assert by_tp["1"]["mape"] <= 0.09 and by_tp["4"]["mape"] <= 0.14 and by_tp["8"]["mape"] <= 0.19
