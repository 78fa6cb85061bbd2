"""Sharding limits, KV sharding, 1D vs 2D, MoE expert sharding and the sharded decode step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses import shard as multichip
from roofline.analyses.step import Precision, decode_step
from roofline.core.errors import RooflineError
from roofline.formulas import sharding
from roofline.model import memory
from roofline.specs import load_hardware, load_model

V5E, H100 = load_hardware("tpu-v5e"), load_hardware("h100-sxm")


def test_model_parallel_limits():
    # Generation: F/(B·β) = 16384/(32·8) = 64 (the book).  Prefill: α_ici = 1.97e14/9e10 = 2188.9,
    # F/α = 16384/2188.9 = 7.49 (the book: "about 4-8 way").
    assert sharding.max_model_parallelism_decode(16384, 32, 8) == pytest.approx(64)
    alpha = sharding.ici_arithmetic_intensity(1.97e14, 9e10)
    assert sharding.max_model_parallelism_prefill(16384, alpha) == pytest.approx(7.485, rel=1e-3)


def test_the_decode_limit_is_where_comms_meet_weight_loading():
    # At Y = F/(B·β): 2·B·D·bytes/W_ici = 2·D·F·bytes/(Y·W_hbm).
    d, f, b, w_hbm, w_ici = 4096, 16384, 32, 8.2e11, 9e10
    y = sharding.max_model_parallelism_decode(f, b, sharding.hbm_to_ici_ratio(w_hbm, w_ici))
    assert sharding.decode_activation_comms_per_layer_s(b, d, 2, w_ici) == pytest.approx(
        sharding.decode_weight_time_per_layer_s(d, f, y, 2, w_hbm)
    )


@pytest.mark.parametrize(
    "k, tp, heads, batch, a2a", [(8, 16, 8, 2, 2), (40, 8, 8, 1, 0), (8, 12, 4, 3, 2), (1, 8, 1, 8, 2)]
)
def test_kv_sharding_over_heads_then_batch(k, tp, heads, batch, a2a):
    assert sharding.kv_head_shards(k, tp) == heads
    assert sharding.kv_batch_shards(k, tp) == batch
    assert sharding.attention_alltoalls_per_layer(k, tp) == a2a


def test_2d_weight_stationary_problem_7():
    # F = 4D: 1D = 4BD/(3W); optimal 2D = √128·BD/(√N·W); equal at N = 128·(3/4)² = 72.
    assert sharding.weight_stationary_2d_crossover_chips(8192, 4 * 8192) == pytest.approx(72)
    assert sharding.optimal_2d_comms_s(1, 1, 4, 72, 1) == pytest.approx(sharding.model_parallel_1d_comms_s(1, 1, 1))
    assert sharding.optimal_2d_comms_s(1, 1, 4, 2, 1) == pytest.approx(np.sqrt(128 / 2))
    x, yz = sharding.optimal_2d_split(128, 1, 4)
    assert (x, yz) == (pytest.approx(4), pytest.approx(32))  # X = √(N/8), YZ = √(8N)


@given(st.floats(2, 4096), st.floats(0.05, 0.95), st.floats(1, 8))
def test_optimal_2d_split_beats_any_other(n, share, f_over_d):
    # Any split X = N^share, YZ = N/X costs at least the optimum.
    x = n**share
    other = sharding.weight_stationary_2d_comms_s(1, 1, f_over_d, x, n / x, 1)
    assert sharding.optimal_2d_comms_s(1, 1, f_over_d, n, 1) <= other * (1 + 1e-9)


def test_expert_sharding_problem_6():
    # int8 MoE: experts 3·16·4096·16384·64 = 206.16e9 B over Z·Y = 128; the rest (5.50e9 B) over Y = 8.
    moe = load_model("book-exercise-moe")
    expert = memory.routed_expert_params(moe)
    other = memory.param_counts(moe).total - expert
    assert expert == pytest.approx(206.158e9, rel=1e-4)
    per_chip = sharding.expert_sharded_bytes_per_chip(expert, other, 16, 8)
    assert per_chip == pytest.approx(expert / 128 + other / 8)
    assert per_chip == pytest.approx(2.2987e9, rel=1e-3)
    assert sharding.free_hbm_per_chip(16e9, per_chip) == pytest.approx(13.70e9, rel=1e-3)
    slices = (1, 4, 8, 16, 32, 64, 128, 256)
    # 212.5e9 B: 8 chips hold at best 212.5e9/8 = 26.6e9 > 16e9; 16 chips (Z=1, Y=16) 13.28e9.
    assert sharding.smallest_slice_for_experts(slices, 16e9, 16, expert, other)[:3] == (16, 1, 16)
    # bf16 doubles it: 16 chips would need 26.6e9 each, so 32 chips.
    assert sharding.smallest_slice_for_experts(slices, 16e9, 16, 2 * expert, 2 * other)[0] == 32
    assert sharding.smallest_slice_for_experts((1, 2), 16e9, 16, expert, other) is None


def test_moe_in_shard_limits_uses_the_given_expert_ways():
    int8 = Precision("int8", "int8", "int8")
    res = multichip.shard_limits(load_model("book-exercise-moe"), V5E, 128, 32, 2048, int8, expert_ways=16)
    assert res.moe["expert_ways"] == 16 and res.moe["model_ways"] == 8
    assert res.moe["weight_load_time_s"] == pytest.approx(res.moe["weight_bytes_per_chip"] / 8.2e11)
    # E(1-(1-k/E)^B) with E=16, k=2, B=32: 16·(1 - (7/8)^32) = 15.777.
    assert res.moe["experts_touched_per_step"] == pytest.approx(16 * (1 - (7 / 8) ** 32))
    with pytest.raises(RooflineError, match="expert_ways=3"):
        multichip.shard_limits(load_model("book-exercise-moe"), V5E, 128, 32, expert_ways=3)


def test_sequence_sharding_comms_by_hand():
    # book-exercise, bf16, batch 4 over 8 v5e (ring, no wrap): Q = 4·32·256·2 = 65,536 B per layer.
    # AllGather: bandwidth 65536·7/8/4.5e10 = 1.27 us < 7 us of steps; AllReduce 14 us; × 64 layers.
    res = multichip.shard_limits(load_model("book-exercise"), V5E, 8, 4)
    assert sharding.attention_query_bytes(4, 32, 256, 2) == 65536
    assert res.sequence_sharding_comms_s == pytest.approx(64 * (7e-6 + 14e-6))


def test_tp_one_keeps_the_books_step():
    m = load_model("llama-2-13b")
    plain = decode_step(m, V5E, 8, 16, 8192)
    assert plain.tp == 1 and plain.comms_time_s == 0.0
    assert plain.step_time_lower_s == plain.step_time_upper_s == plain.step_time_s
    assert plain.step_time_s == pytest.approx(20.3e-3, rel=0.005)  # the book's table


def test_tp8_comms_by_hand():
    # LLaMA-2-13B, bf16, batch 16 on 8 v5e (one ring, no wraparound): AllReduce of 16·5120·2 = 163,840 B.
    # AllGather: bandwidth 163840·7/8/4.5e10 = 3.19 us < 7 steps × 1 us, so 7 us; AllReduce 14 us
    # (upper: 2·(7 + 3.19) us).  2 per layer × 40 layers; K = 40 heads ≥ 8, so no AllToAlls.
    res = decode_step(load_model("llama-2-13b"), V5E, 8, 16, 8192, tp=8)
    bw = 163840 * 7 / 8 / 4.5e10
    assert res.comms_time_s == pytest.approx(40 * 2 * 14e-6)
    assert res.comms_time_upper_s == pytest.approx(40 * 2 * 2 * (7e-6 + bw))
    assert res.step_time_lower_s == pytest.approx(max(res.step_time_s, res.comms_time_s))
    assert res.step_time_upper_s == pytest.approx(res.step_time_s + res.comms_time_upper_s)
    assert res.bound == "memory"


def test_parallel_block_all_reduces_once_per_layer_where_the_engine_fuses_it():
    # The same LLaMA-2-13B shape with attention and MLP in parallel (GPT-J/Falcon block): an engine that
    # adds their partial sums first all-reduces once, 40 × 1 × 14 us instead of 40 × 2 × 14 us (hand
    # derivation above); one that does not (the default; TensorRT-LLM's Falcon rows fit two) keeps two.
    from dataclasses import replace

    from roofline.deploy import NO_ENGINE

    m = load_model("llama-2-13b")
    par = m.model_copy(update={"parallel_block": True})
    fused = replace(NO_ENGINE, fused_parallel_block=True, key="t")
    two = decode_step(par, V5E, 8, 16, 8192, tp=8)
    one = decode_step(par, V5E, 8, 16, 8192, tp=8, engine=fused)
    plain = decode_step(m, V5E, 8, 16, 8192, tp=8, engine=fused)
    assert one.comms_time_s == pytest.approx(40 * 1 * 14e-6)
    assert two.comms_time_s == pytest.approx(2 * one.comms_time_s) == pytest.approx(plain.comms_time_s)
    assert one.local_step_time_s == two.local_step_time_s
    assert load_model("falcon-180b").parallel_block and load_model("gpt-j-6b").parallel_block


def test_small_batch_on_nvlink_is_network_bound():
    # LLaMA-3-8B batch 1 on 8 H100: 16 GB of weights over 8·3.35e12 B/s ≈ 0.6 ms, while each of the
    # 2·32 AllReduces of 8 kB pays 2·7 ring steps × 2 us = 28 us: 1.79 ms of collectives (K = 8 KV
    # heads cover tp = 8, so no AllToAlls).
    res = decode_step(load_model("llama-3-8b"), H100, 8, 1, 1024, tp=8)
    assert res.comms_time_s == pytest.approx(32 * 2 * 28e-6)
    assert res.bound == "network"


@given(st.integers(1, 512), st.sampled_from([2, 4, 8]))
def test_sharded_bounds_are_ordered(batch, tp):
    res = decode_step(load_model("book-exercise"), V5E, 8, batch, 4096, tp=tp)
    assert res.step_time_lower_s <= res.step_time_s <= res.step_time_upper_s


def test_tp_and_topology_errors():
    m = load_model("book-exercise")
    with pytest.raises(RooflineError, match="tp=3 must divide chips=8"):
        decode_step(m, V5E, 8, 1, 1024, tp=3)
    with pytest.raises(RooflineError, match="topology_text=4x4 has 16 chips"):
        decode_step(m, V5E, 8, 1, 1024, topology_text="4x4")
    with pytest.raises(ValueError, match="allowed: 4, 16"):
        decode_step(m, V5E, 16, 1, 1024, tp=8, topology_text="4x4")


def test_shard_no_comms_row_is_the_local_step():
    # Issue: "decode step (no comms)" printed the step including its collectives.  The book-exercise MoE
    # example: the local step (HBM and FLOPs only) is below the step with collectives, and the prediction on a
    # TPU overlaps them: max(local, comms).
    res = multichip.shard_limits(load_model("book-exercise"), V5E, 16, 32, 8192, topology_text="4x4")
    assert float(res.local_step_time_s) < float(res.step_time_upper_s)
    assert float(res.step_time_s) == pytest.approx(
        max(float(res.local_step_time_s), float(res.step_time_upper_s) - float(res.local_step_time_s))
    )
