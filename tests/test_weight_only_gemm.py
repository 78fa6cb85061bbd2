"""Weight-only quantization on a calibrated profile: the compute dtype's GEMM model, reading the
weights at their own bytes (hand derivations from the fitted model's memory term)."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.analyses.step import Precision, decode_step
from roofline.deploy import kernels
from roofline.specs import load_hardware, load_model

CAL = load_hardware("h100-sxm-cal")


def test_a_memory_bound_gemm_reads_its_weights_at_their_width():
    # m = 1, n = k = 8192: the weights stream dominates.  The fitted memory term prices
    # k·n·w_W / (BW·η_m·n/(n + n_half)); int4 weights (0.5 B) save k·n·1.5 B of that stream.
    p = dict(CAL.calibration.ops["gemm/bf16"].params)
    n = k = 8192.0
    bf16 = float(kernels.gemm_time_s(CAL, "bf16", 1.0, n, k))
    int4 = float(kernels.gemm_time_s(CAL, "bf16", 1.0, n, k, weight_bytes=0.5))
    stream = CAL.hbm_bandwidth_bytes_per_s * p["memory_efficiency"] * n / (n + p["n_half"])
    assert bf16 - int4 == pytest.approx(k * n * 1.5 / stream, rel=0.02)
    # at the compute dtype's own width nothing changes
    assert float(kernels.gemm_time_s(CAL, "bf16", 1.0, n, k, weight_bytes=2.0)) == pytest.approx(bf16)


def test_weight_only_quantized_steps_are_faster_and_say_how_they_were_priced():
    m = load_model("llama-3-70b")
    steps = {
        w: decode_step(m, CAL, chips=2, batch=32, context=2176, tp=2, precision=Precision(w, "int8"))
        for w in ("bf16", "int8", "int4")
    }
    gemm = {w: float(s.gemm_time_s) for w, s in steps.items()}
    assert gemm["bf16"] > gemm["int8"] > gemm["int4"] > 0
    assert "weights read at their own bytes (int4" in steps["int4"].sources["gemm"]
    assert "weights read" not in steps["bf16"].sources["gemm"]
    # a memory-bound decode step: the weight stream halves from bf16 to int8, so the GEMMs at
    # least approach half (activations and kernel overheads do not shrink)
    assert 0.45 < gemm["int8"] / gemm["bf16"] < 0.6


def test_mixed_precision_reads_each_component_at_its_own_width():
    m = load_model("mixtral-8x7b")
    whole = decode_step(m, CAL, chips=1, batch=8, context=1024, precision=Precision("bf16"))
    experts = decode_step(
        m, CAL, chips=1, batch=8, context=1024, precision=Precision("bf16", components=(("experts", "int4"),))
    )
    assert float(experts.gemm_time_s) < float(whole.gemm_time_s)
    assert "experts int4" in experts.sources["gemm"]
    assert np.isfinite(float(experts.step_time_s))
