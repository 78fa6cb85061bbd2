"""Compute, step-time and request estimators against the book and hand derivations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.request import request
from roofline.analyses.step import Precision, decode_step
from roofline.formulas import compute, step
from roofline.specs import load_hardware, load_model
from tests.profiles import at_most

LLAMA = load_model("llama-2-13b")
V5E = load_hardware("tpu-v5e")
H100 = load_hardware("h100-sxm")


@pytest.mark.parametrize(
    ("flops", "bw", "bytes_per_param", "experts", "expected"),
    [
        (1.97e14, 8.2e11, 2, (1, 1), 240),  # the book: v5e bf16
        (1.97e14, 8.2e11, 1, (1, 1), 120),  # int8 weights, bf16 FLOPs
        (3.94e14, 8.2e11, 1, (1, 1), 240),  # int8 weights, int8 FLOPs
        (9.89e14, 3.35e12, 2, (1, 1), 295),  # H100 SXM sheet: 989 TFLOP/s over 3.35 TB/s
        (1.97e14, 8.2e11, 2, (16, 2), 1920),  # MoE multiplies by E/k (problem 5)
    ],
)
def test_critical_batch(flops, bw, bytes_per_param, experts, expected):
    assert compute.critical_batch_size(flops, bw, bytes_per_param, *experts) == pytest.approx(expected, rel=0.005)


def test_critical_batch_is_where_compute_equals_weight_load():
    # At B = B_crit the matmul time 2·B·P/C equals the weight load P·bytes/W.
    b = compute.critical_batch_size(1.97e14, 8.2e11, 2.0)
    assert step.matmul_time_s(b, 13e9, 1.97e14) == pytest.approx(step.weight_load_time_s(26e9, 8.2e11))


def test_matmul_intensity_approaches_batch():
    # 2BDF/(2BD+2DF+2BF) → B when B ≪ D, F (bf16)
    assert compute.matmul_arithmetic_intensity(16, 8192, 32768) == pytest.approx(16, rel=0.003)


def test_attention_intensity_prefill_and_decode():
    # MHA prefill S = T: T/2; decode T = 1, S ≫ 1: ≈ 1; GQA decode: ≈ N/K
    assert compute.attention_arithmetic_intensity(4096, 4096) == pytest.approx(2048)
    assert compute.attention_arithmetic_intensity(8192, 1) == pytest.approx(1.0, rel=1e-3)
    assert compute.attention_arithmetic_intensity(8192, 1, 32, 8) == pytest.approx(4.0, rel=1e-2)


def test_prefill_flops_by_hand():
    # 2·P·T + 4·N·H·L·T(T+1)/2 with N·H = 5120, L = 40
    t = 1000
    counts_active = 13.015e9
    expected = 2 * counts_active * t + 4 * 5120 * 40 * t * (t + 1) / 2
    assert compute.prefill_flops(LLAMA, counts_active, t) == pytest.approx(expected)


def test_no_cache_generation_re_runs_prefixes():
    # O=3 steps from I=10: prefill_flops(10) + prefill_flops(11) + prefill_flops(12)
    brute = sum(compute.prefill_flops(LLAMA, 1e9, t) for t in (10, 11, 12))
    assert compute.no_cache_generation_flops(LLAMA, 1e9, 10, 3) == pytest.approx(brute)
    gemma = load_model("gemma-2-9b")  # half its layers use a 4096 window
    for i, o in [(4000, 200), (10, 5000), (5000, 3)]:
        manual = sum(compute.prefill_flops(gemma, 1e9, i + k) for k in range(o))
        assert compute.no_cache_generation_flops(gemma, 1e9, i, o) == pytest.approx(manual)


def test_book_table_row_batch_16():
    # The book: LLaMA-2-13B, 8x v5e, batch 16, 8192 ctx: 20.30 ms and 787.99 tok/s.
    r = decode_step(LLAMA, V5E, chips=8, batch=16, context=8192, memory_utilization=1.0)  # the book: all HBM
    assert r.step_time_s == pytest.approx(20.30e-3, rel=0.005)
    assert r.tokens_per_s == pytest.approx(787.99, rel=0.005)
    assert r.bound == "memory"
    assert bool(r.fits)
    assert r.max_batch == 16  # batch 32 needs 240 GB > 137 GB (the book: OOM beyond 16)


def test_pop_quiz_by_hand():
    # 30B int8 on 16 v5e, 100 kB/token KV at 8192: (4·819.2e6 + 30e9)/(16·8.2e11) = 2.536 ms
    t = step.min_decode_step_time_s(4 * 819.2e6, 30e9, 16 * 8.2e11)
    assert t == pytest.approx((4 * 819.2e6 + 30e9) / (16 * 8.2e11))
    assert t == pytest.approx(2.5e-3, rel=0.02)


def test_compute_bound_at_large_batch():
    # 2·2048·13e9/(8·989e12) = 6.7 ms of FLOPs vs (26 GB + 2048·16·819 kB)/26.8 TB/s = 2 ms of reads
    r = decode_step(LLAMA, H100, chips=8, batch=2048, context=16)
    assert r.bound == "compute"


def test_moe_reads_only_touched_experts_at_batch_one():
    mix = load_model("mixtral-8x7b")
    one = decode_step(mix, H100, chips=2, batch=1, context=128)
    many = decode_step(mix, H100, chips=2, batch=512, context=128)
    # batch 1 reads 2 of 8 experts per layer: well under the full 93 GB
    assert one.weight_time_s < 0.5 * many.weight_time_s


@at_most(50)
@given(
    b1=st.integers(1, 4096),
    b2=st.integers(1, 4096),
    s1=st.integers(1, 65536),
    s2=st.integers(1, 65536),
    name=st.sampled_from(["llama-2-13b", "mixtral-8x7b", "gemma-2-9b", "deepseek-v3"]),
    hw=st.sampled_from(["tpu-v5e", "h100-sxm", "b200"]),
)
def test_step_time_monotone_and_throughput_below_compute_roofline(b1, b2, s1, s2, name, hw):
    m, h = load_model(name), load_hardware(hw)
    lo_b, hi_b = sorted((b1, b2))
    lo_s, hi_s = sorted((s1, s2))
    base = decode_step(m, h, 8, lo_b, lo_s)
    assert decode_step(m, h, 8, hi_b, lo_s).step_time_s >= base.step_time_s
    assert decode_step(m, h, 8, lo_b, hi_s).step_time_s >= base.step_time_s
    roof = step.max_tokens_per_s_compute(base.active_param_count, 8 * h.flops_per_s["bf16"])
    assert base.tokens_per_s <= roof * (1 + 1e-12)
    assert base.min_step_time_s <= base.step_time_s * (1 + 1e-12)


def test_decode_step_broadcasts():
    batch = np.array([1, 16, 240])
    r = decode_step(LLAMA, V5E, chips=8, batch=batch, context=8192, memory_utilization=1.0)
    assert r.step_time_s.shape == (3,)
    assert list(r.fits) == [True, True, False]


def test_request_by_hand():
    # 1 chip H100, llama-3-8b, I = 1000, O = 1: no decode steps.  Prefill ≈ 2·8.03e9·1000 = 16 TFLOP
    # → 16 ms at 989 TFLOP/s, versus 16 GB / 3.35 TB/s = 4.8 ms of weights: compute-bound.
    m = load_model("llama-3-8b")
    r = request(m, H100, 1000, 1)
    assert r.decode_time_s == 0
    assert r.prefill_flops == pytest.approx(2 * 8.03e9 * 1000, rel=0.02)
    assert r.ttft_s == pytest.approx(r.prefill_flops / 9.89e14)
    # O = 101: 100 decode steps at contexts 1000..1099, each ≈ weights + KV over 3.35 TB/s
    r2 = request(m, H100, 1000, 101, precision=Precision())
    assert r2.tpot_s == pytest.approx(r2.decode_time_s / 100)
    assert r2.first_step_time_s <= r2.tpot_s <= r2.last_step_time_s
    assert r2.latency_s == pytest.approx(r2.ttft_s + r2.decode_time_s)
    assert r2.no_cache_latency_s > r2.latency_s


def test_explicit_tp_splits_slice_into_replicas():
    # 16 v5e with --tp 8 are two 8-chip replicas, each holding the 26 GB of weights and serving
    # 16 of the 32 sequences: the local step is the book's 8-chip batch-16 step (20.3 ms) and
    # the slice makes twice its tokens/s.
    one = decode_step(LLAMA, V5E, chips=8, batch=16, context=8192)
    two = decode_step(LLAMA, V5E, chips=16, batch=32, context=8192, tp=8)
    assert two.replicas == 2
    assert two.local_step_time_s == pytest.approx(one.step_time_s)
    assert two.total_bytes == pytest.approx(2 * one.total_bytes)
    assert two.max_batch == 2 * one.max_batch
    assert two.step_time_s >= two.local_step_time_s  # collectives overlapped at best


def test_a_request_runs_on_one_replica():
    # One prompt on two tp-8 replicas is prefilled by one of them: the TTFT of a lone replica, not
    # half of it; the slice's tokens/s per chip halves (the other replica idles).  Three sequences on
    # two replicas step as the busiest replica's two do.
    alone = request(LLAMA, V5E, 2048, 64, chips=8, tp=8)
    pair = request(LLAMA, V5E, 2048, 64, chips=16, tp=8)
    assert pair.ttft_s == pytest.approx(alone.ttft_s) and pair.tpot_s == pytest.approx(alone.tpot_s)
    assert pair.tokens_per_s_per_chip == pytest.approx(alone.tokens_per_s_per_chip / 2)
    three = decode_step(LLAMA, V5E, chips=16, batch=3, context=8192, tp=8)
    two = decode_step(LLAMA, V5E, chips=8, batch=2, context=8192, tp=8)
    assert three.step_time_s == pytest.approx(two.step_time_s)
    assert three.tokens_per_s == pytest.approx(3 / two.step_time_s)


def test_an_uneven_batch_is_decided_by_its_busiest_replica():
    # Two 8-chip replicas each fit one.max_batch = N sequences.  2N + 1 puts N + 1 on one replica:
    # it does not fit, overflowing by that replica's overflow alone, though the mean N + 0.5 would.
    one = decode_step(LLAMA, V5E, chips=8, batch=1, context=8192)
    n = int(one.max_batch)
    at, over = (decode_step(LLAMA, V5E, chips=16, batch=b, context=8192, tp=8) for b in (2 * n, 2 * n + 1))
    alone = decode_step(LLAMA, V5E, chips=8, batch=n + 1, context=8192)
    assert at.fits and not over.fits and over.max_batch == 2 * n and over.replica_batch == n + 1
    assert over.overflow_bytes == pytest.approx(alone.overflow_bytes)
    # the slice holds the weights twice and every sequence's KV once
    assert over.total_bytes == pytest.approx(2 * one.param_bytes + (2 * n + 1) * one.kv_bytes)
