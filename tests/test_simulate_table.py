"""The step model tabulated for the simulator agrees with step_terms: exactly where it is exact, closely elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import OpenLoop, SimConfig, simulate
from roofline.analyses.simulate.adapter import cost_for, step_price
from roofline.analyses.step import request
from roofline.specs import load_hardware, load_model


def exact(dep, n, kv, tokens, cached):
    n = np.asarray(n, dtype=float)
    return step_price(dep)(n, np.divide(kv, np.maximum(n, 1.0)), np.asarray(tokens, float), np.asarray(cached, float))


def test_decode_rows_and_lone_prompts_are_exact_on_the_spec_sheet():
    # The spec sheet's step is affine in context, so the decode rows (exact in n) interpolate exactly; a
    # lone prompt of a length the load sends is a grid point of the chunk axis.
    cost = cost_for(load_model("llama-3-8b"), load_hardware("h100-sxm"), max_context=4096)
    table = cost.pricer(256, 8192, prompt_lens=[1000, 3000])
    for n, kv in ((1, 1000.0), (37, 37 * 2100.5), (256, 256 * 4000.0)):
        assert table.decode_s(n, kv) == pytest.approx(float(exact(cost.dep, n, kv, 0, 0)), rel=1e-12)
    for tokens in (1000, 3000):
        assert table.mixed_s(0, 0.0, tokens, tokens * (tokens + 1) / 2) == pytest.approx(
            float(exact(cost.dep, 0, 0.0, tokens, 0.0)), rel=1e-12
        )


@pytest.mark.parametrize("hardware, model, tp", [("h100-sxm-cal", "llama-2-7b", 1), ("h100-sxm-cal", "llama-2-70b", 4)])
def test_mixed_steps_are_close_on_calibrated_kernels(hardware, model, tp):
    # Random mixes (decodes over a context, plus a chunk after a cached prefix) against step_terms: the mean
    # relative error stays below 0.5 % and the 99th percentile below 3 % (kernel tile steps are smoothed).
    cost = cost_for(load_model(model), load_hardware(hardware), tp=tp, max_context=4096)
    table = cost.pricer(128, 2048)
    rng = np.random.default_rng(0)
    n = rng.integers(0, 129, 400)
    ctx = rng.uniform(1, 3800, 400)
    tokens = np.where(rng.random(400) < 0.5, rng.integers(1, 64, 400), rng.integers(1, 2049 - n))
    tokens = np.where((n == 0) & (tokens == 0), 1, tokens)
    cached = np.minimum(rng.uniform(0, 3000, 400), 4096 - tokens)
    want = exact(cost.dep, n, n * ctx, tokens, cached)
    got = np.array(
        [
            table.mixed_s(int(a), a * b, int(t), t * (c + (t + 1) / 2))
            for a, b, t, c in zip(n, ctx, tokens, cached, strict=True)
        ]
    )
    err = np.abs(got / want - 1)
    assert err.mean() < 0.005 and np.percentile(err, 99) < 0.03


def test_idle_engine_agrees_with_request_on_calibrated_kernels():
    # One request alone: TTFT is the lone prompt step (exact: a tabulated length) and TPOT the decode row
    # (exact in n, linear in context between 257 grid points).
    model, hw = load_model("llama-2-7b"), load_hardware("h100-sxm-cal")
    res = simulate(
        cost_for(model, hw, max_context=1100),
        OpenLoop(0.001),
        SimConfig(lengths=fixed_lengths(1000, 64), requests=3, warmup=0),
    )
    alone = request(model, hw, 1000, 64)
    assert res.ttft_s.mean == pytest.approx(float(alone.ttft_s), rel=1e-9)
    assert res.tpot_s.mean == pytest.approx(float(alone.tpot_s), rel=1e-6)
