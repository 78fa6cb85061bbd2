"""Invariants of a decode step of MoE and MLA models: monotone in batch and context, the all-bandwidth lower
bound never above the prediction, and the skewed routing's experts never more than the expert-union formula's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.step import Precision, decode_step
from roofline.kernels.moe import routing_features
from roofline.model.weight_bytes import expected_experts_touched
from roofline.specs import load_hardware, load_model
from tests.profiles import at_most

LAYOUTS = {"tp8": {}, "attention-dp8-ep8": {"tp": 1, "ep": 8}}
PRECISIONS = {"bf16": Precision(), "fp8_block": Precision(weights="fp8_block", compute="fp8_block")}


@pytest.mark.parametrize(("top_k", "experts", "ep"), [(8, 256, 1), (8, 256, 8), (2, 8, 1), (2, 8, 8), (8, 384, 8)])
def test_power_law_routing_never_falls_and_stays_under_the_expert_union(top_k, experts, ep):
    # The busiest GPU's slots and active experts grow with the tokens T (a larger batch never touches fewer
    # experts), also across T·k = E where the skew model changes regime (it fell by a third there); one GPU
    # never touches more experts than uniform routing would (E(1 - (1 - k/E)^T): uniform spreads the most).
    t = np.arange(1.0, 700.0)
    slots, active = routing_features(2.0, 1.01, t, top_k, experts, ep)
    assert np.all(np.diff(slots) >= 0) and np.all(np.diff(active) >= 0)
    assert np.all(active <= expected_experts_touched(experts, top_k, t) + 1e-9)
    assert np.all(active <= experts / ep) and np.all(active <= slots + 1e-9)
    one, first = routing_features(2.0, 1.01, np.array([1.0]), top_k, experts, 1)
    assert one[0] == pytest.approx(top_k) and first[0] == pytest.approx(top_k)  # one token: k distinct experts


def test_deepseek_on_v5e_moe_rises_with_batch_and_its_lower_bound_holds():
    # The invariant test's failure: DeepSeek-V3, 8 v5e, context 1.  Batch 1 by hand: one token takes 8 experts
    # of 3·7168·2048 bf16 weights split 8 ways = 11.01 MB per chip each, 88.1 MB per layer at 820 GB/s
    # = 107.4 µs, x 58 MoE layers = 6.23 ms (no achievable defaults on a TPU: ideal peaks).
    m, h = load_model("deepseek-v3"), load_hardware("tpu-v5e")
    r = decode_step(m, h, 8, np.array([1, 8, 16, 32, 33, 39, 40, 64, 128, 256]), 1)
    assert float(r.moe_time_s[0]) == pytest.approx(58 * 8 * 3 * 7168 * 2048 * 2 / 8 / 8.2e11, rel=1e-9)
    assert np.all(np.diff(r.moe_time_s) > 0) and np.all(np.diff(r.step_time_s) > 0)
    assert np.all(r.min_step_time_s <= r.step_time_s)


@at_most(12)
@given(
    b1=st.integers(1, 512),
    b2=st.integers(1, 512),
    s1=st.integers(1, 32768),
    s2=st.integers(1, 32768),
    name=st.sampled_from(["deepseek-r1", "mixtral-8x7b"]),
    hw=st.sampled_from(["h100-sxm", "h200", "b200", "mi300x"]),
    layout=st.sampled_from(sorted(LAYOUTS)),
    dtype=st.sampled_from(sorted(PRECISIONS)),
)
def test_moe_step_monotone_and_lower_bound_below_prediction(b1, b2, s1, s2, name, hw, layout, dtype):
    m, h = load_model(name), load_hardware(hw)
    batch = np.array(sorted((b1, b2)), dtype=float)[:, None]
    context = np.array(sorted((s1, s2)), dtype=float)[None, :]
    r = decode_step(m, h, 8, batch, context, precision=PRECISIONS[dtype], **LAYOUTS[layout])
    step = np.broadcast_to(r.step_time_s, (2, 2))
    assert np.all(np.diff(step, axis=0) >= 0) and np.all(np.diff(step, axis=1) >= 0)
    assert np.all(r.min_step_time_s <= step * (1 + 1e-12))
