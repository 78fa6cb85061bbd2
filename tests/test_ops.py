"""The per-op breakdown (roofline.terms.ops): hand-derived FLOPs and bytes, and sums equal to the step model's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.errors import RooflineError
from roofline.deploy import chip_rates, deployment
from roofline.specs import hardware_from_dict, load_hardware, load_model
from roofline.terms import decode_work, prefill_work, step_terms
from roofline.terms.ops import OUTSIDE_GEMMS, step_ops
from tests.profiles import at_most

LLAMA = load_model("llama-2-13b")  # D 5120, F 13824, 40 layers, 40 heads (MHA), V 32000
V5E = load_hardware("tpu-v5e")
H100 = load_hardware("h100-sxm")


def by_name(breakdown):
    return {op.name: op for op in breakdown.ops}


def test_book_decode_step_op_by_op():
    # The book's table: LLaMA-2-13B, 8x v5e, batch 16, context 8192: 20.30 ms (memory-bound).
    b = step_ops(deployment(LLAMA, V5E, 8, memory_utilization=1.0), decode_work(16, 8192))
    ops = by_name(b)
    assert ops["MLP gate+up"].flops == 40 * 2 * 16 * 5120 * (2 * 13824)
    assert ops["MLP down"].weight_bytes == 40 * 13824 * 5120 * 2
    assert ops["QKV projection"].weight_bytes == 40 * 5120 * (3 * 5120) * 2
    assert ops["LM head (sampled rows)"].flops == 2 * 16 * 5120 * 32000
    # KV: 2 (K, V) x 40 layers x 5120 x 2 bytes x 8192 tokens x 16 sequences.
    assert ops["attention (decode)"].kv_bytes == 2 * 40 * 5120 * 2 * 8192 * 16
    assert all(op.bound == "memory" for op in b.ops)  # intensity 16 FLOPs/byte (MHA attention: 1)
    assert b.time_s == pytest.approx(20.30e-3, rel=0.01)
    assert b.time_s == pytest.approx(b.local_s, rel=1e-12) and b.comms_exposed_s == 0.0


@pytest.mark.parametrize("model", ["llama-3-8b", "llama-2-13b-gqa", "llama-3-70b"])
@pytest.mark.parametrize("batch", [1, 16, 512])
def test_dense_decode_ops_sum_to_the_local_step(model, batch):
    # Every weight GEMM of a dense decode step has intensity 2B/bytes: one side of the ridge for all,
    # so Σ max(F/P, B/W) = max(ΣF/P, ΣB/W) and the ops add up to the step model's local time.
    dep = deployment(load_model(model), H100, 8, tp=8)
    t = step_terms(dep, decode_work(batch, 4096))
    b = step_ops(dep, decode_work(batch, 4096))
    assert b.time_s == pytest.approx(float(t.local_s), rel=1e-9)
    assert sum(op.flops for op in b.ops if "attention" not in op.name) == pytest.approx(float(t.matmul_flops))
    assert sum(op.weight_bytes for op in b.ops) == pytest.approx(float(t.weight_read_bytes))


def test_long_prefill_sums_and_the_sampled_lm_head_is_the_difference():
    # An 8192-token prompt: every op compute-bound except the LM head on its one sampled row
    # (intensity 2·1/2 = 1), so Σ ops exceeds the step model's one roofline by that row's
    # memory time minus its FLOPs time: V·D·2 bytes / W - 2·V·D / P.
    m = load_model("llama-3-8b")  # V 128,256, D 4096
    b = step_ops(deployment(m, H100, 1, tp=1), prefill_work(1, 8192))
    head = by_name(b)["LM head (sampled rows)"]
    assert head.bound == "memory" and head.flops == 2 * 128256 * 4096
    expected = 128256 * 4096 * 2 / H100.hbm_bandwidth_bytes_per_s - head.flops / H100.flops_for("bf16")
    assert -b.shared_roofline_s == pytest.approx(expected, rel=1e-6)


def test_fitted_gemms_sum_to_the_step_models_gemm_term():
    # A profile with constant efficiencies 0.5 and 10 us per GEMM: each row is the fitted kernel,
    # max(2mnk / (0.5 P), bytes / (0.5 W)) + 10 us, and their sum is the step model's GEMM term.
    entry = {
        "compute_efficiency": 0.5,
        "memory_efficiency": 0.5,
        "overhead_s": 1e-5,
        "params": {"compute_efficiency": 0.5, "memory_efficiency": 0.5, "overhead_s": 1e-5},
    }
    data = H100.model_dump()
    data["calibration"] = {"source": "test", "ops": {"gemm/bf16": entry}}
    cal = hardware_from_dict(data, "<test profile>")
    m = load_model("llama-3-8b")
    dep = deployment(m, cal, 2, tp=2)
    work = decode_work(4, 2048)
    b = step_ops(dep, work)
    t = step_terms(dep, work)
    gemm_rows = [op for op in b.ops if "attention" not in op.name and op.name != OUTSIDE_GEMMS]
    assert sum(op.time_s for op in gemm_rows) == pytest.approx(float(t.gemm_time_s), rel=1e-9)
    assert b.time_s == pytest.approx(float(t.local_s), rel=1e-9)
    # The down projection on one of 2 chips: [4, 7168] x [7168, 4096] bf16, memory-bound.
    down = by_name(b)["MLP down"]
    per_chip_bytes = 2 * (4 * 7168 + 7168 * 4096 + 4 * 4096)
    assert down.time_s == pytest.approx(32 * (per_chip_bytes / (0.5 * H100.hbm_bandwidth_bytes_per_s) + 1e-5), rel=1e-6)
    assert by_name(b)[OUTSIDE_GEMMS].time_s == 0.0  # the fitted step model times GEMMs only
    spec = step_ops(deployment(m, cal, 2, tp=2, rates=chip_rates(cal, "bf16", calibrated=False)), work)
    assert spec.time_s < b.time_s


def test_breakdown_refuses_pipelines_and_arrays():
    with pytest.raises(RooflineError, match="pp = 1"):
        step_ops(deployment(LLAMA, H100, 8, tp=4, pp=2), decode_work(8, 1024))
    with pytest.raises(RooflineError, match="one configuration"):
        step_ops(deployment(LLAMA, H100, 8, tp=8), decode_work(np.array([1, 2]), 1024))


@at_most(40)
@given(
    model=st.sampled_from(["llama-3-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "qwen3-32b"]),
    batch=st.integers(1, 2048),
    context=st.integers(16, 32768),
    prefill=st.booleans(),
)
def test_ops_never_undercut_the_step_model(model, batch, context, prefill):
    # Σ_i max(F_i/P, B_i/W) ≥ max(Σ F_i/P, Σ B_i/W): the ops' own rooflines add up to at least the
    # step model's one roofline; FLOPs and weight bytes add up to the step's exactly.
    m = load_model(model)
    work = prefill_work(1, context) if prefill else decode_work(batch, context)
    dep = deployment(m, H100, 8, tp=8)
    b = step_ops(dep, work)
    t = step_terms(dep, work)
    # MoE/MLA models: the step streams the KV a prefill writes inside the dense GEMMs' roofline
    # (terms.operators.dense_gemm_s), while the op rows show those bytes under MLA attention, timed by
    # its own kernel term: at most ~1e-5 of the step (DeepSeek-V3, 16 prompt tokens: 0.42 us of 36.7 ms).
    slack = 1e-4 if m.num_experts > 1 or m.kv_lora_rank is not None else 1e-12
    assert b.shared_roofline_s <= slack * b.local_s
    assert all(op.flops >= 0 and op.weight_bytes >= 0 for op in b.ops)
    gemm_flops = sum(op.flops for op in b.ops if "attention" not in op.name)
    assert gemm_flops == pytest.approx(float(t.matmul_flops), rel=1e-9)
