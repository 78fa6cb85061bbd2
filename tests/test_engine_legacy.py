"""Terms of engine entries fitted before the registry (old profiles still load): how they price a step, by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from roofline.analyses.step import step_from
from roofline.core.errors import RooflineError
from roofline.deploy import NO_ENGINE, deployment
from roofline.specs import load_hardware, load_model

H100 = load_hardware("h100-sxm")
LLAMA = load_model("llama-3-8b")


def test_engine_terms_add_to_a_step_as_derived_by_hand():
    base = float(step_from(deployment(LLAMA, H100, 1), 8, 1024).step_time_s)
    # One step of 8 decodes on one H100: + step overhead + 8 sampled sequences' sampling
    # + 32 layers x (layer overhead + 8 tokens x bytes / 3.35 TB/s).
    eng = replace(
        NO_ENGINE,
        step_overhead_s=1e-3,
        sample_s_per_seq=1e-5,
        layer_overhead_s=2e-6,
        layer_bytes_per_token=1e5,
        key="test",
        source="test",
    )
    with_engine = float(step_from(deployment(LLAMA, H100, 1, engine=eng), 8, 1024).step_time_s)
    expected = 1e-3 + 8 * 1e-5 + 32 * (2e-6 + 8 * 1e5 / 3.35e12)
    assert with_engine - base == pytest.approx(expected, rel=1e-9)


def test_replicated_bytes_repeat_on_every_tp_chip_by_hand():
    # Llama-2-70B prefill of 2048 tokens on 8 H100s at tp 8, 1e5 B per token and layer: replicated
    # (each chip norms the whole [T, D]) that is 80 x 2048 x 1e5 B / 3.35 TB/s = 4.89 ms; split over
    # the 8 chips (layer_bytes_per_token) one eighth of it, 0.611 ms.  On one chip the two are equal.
    from roofline.terms import Work, step_terms

    model = load_model("llama-2-70b")
    work = Work(prefill_seqs=1.0, prefill_len=2048.0)
    for tp, replicated_s, split_s in ((8, 4.891e-3, 0.6114e-3), (1, 4.891e-3, 4.891e-3)):
        base = float(step_terms(deployment(model, H100, tp, tp=tp), work).time_s)
        for eng, added in (
            (replace(NO_ENGINE, replicated_bytes_per_token=1e5, key="t"), replicated_s),
            (replace(NO_ENGINE, layer_bytes_per_token=1e5, key="t"), split_s),
        ):
            slow = float(step_terms(deployment(model, H100, tp, tp=tp, engine=eng), work).time_s)
            assert slow - base == pytest.approx(added, rel=1e-3)


def test_gemm_slowdown_scales_the_gemm_term():
    dep = deployment(LLAMA, H100, 1)
    res = step_from(dep, 8, 1024)
    slow = step_from(deployment(LLAMA, H100, 1, engine=replace(NO_ENGINE, gemm_slowdown=0.5, key="t")), 8, 1024)
    # 1.5 x the GEMM time: the weight-read bound max(T_flops, T_weights) = 16.06 GB / 3.35 TB/s = 4.79 ms.
    assert float(slow.step_time_s) - float(res.step_time_s) == pytest.approx(0.5 * float(res.gemm_time_s))
    assert float(res.gemm_time_s) == pytest.approx(16.06e9 / 3.35e12, rel=0.01)


def test_collective_hop_latency_counts_ring_steps_by_hand():
    # Llama-2-70B on 8 H100s, tp 8, one decode step: 80 layers x 2 all-reduces x 2(8 - 1) ring steps
    # x 5 us = 11.2 ms on top of the kernel step; at tp 1 there is no collective, so nothing is added.
    model, hop = load_model("llama-2-70b"), replace(NO_ENGINE, collective_hop_s=5e-6, key="t")
    for tp, added in ((8, 80 * 2 * 14 * 5e-6), (1, 0.0)):
        base = float(step_from(deployment(model, H100, tp, tp=tp), 4, 1024).step_time_s)
        slow = float(step_from(deployment(model, H100, tp, tp=tp, engine=hop), 4, 1024).step_time_s)
        assert slow - base == pytest.approx(added, rel=1e-9, abs=1e-15)


def test_large_allreduce_term_prices_messages_from_its_threshold_by_hand():
    # Llama-2-70B prefill on 8 H100s at tp 8 with 10 ps more per byte from 64 MiB: a 4096-token step's
    # all-reduce message [4096, 8192] in bf16 is 4096 x 8192 x 2 B = 64 MiB, so each of its 80 x 2
    # all-reduces adds 2 x 7/8 x 64 MiB x 1e-11 s/B = 1.174 ms: 160 x 1.174 ms = 0.1879 s on the
    # network side of the step (on a GPU, the critical path); a 2048-token step's 32 MiB adds nothing.
    from roofline.terms import Work, step_terms

    model = load_model("llama-2-70b")
    eng = replace(NO_ENGINE, large_collective_s_per_byte=1e-11, large_collective_bytes=2.0**26, key="t")
    plain, large = deployment(model, H100, 8, tp=8), deployment(model, H100, 8, tp=8, engine=eng)
    for tokens, added in ((4096.0, 160 * 2 * 7 / 8 * 2**26 * 1e-11), (2048.0, 0.0)):
        work = Work(prefill_seqs=1.0, prefill_len=tokens)
        a, b = step_terms(plain, work), step_terms(large, work)
        assert float(b.time_s) - float(a.time_s) == pytest.approx(added, rel=1e-9, abs=1e-15)
        assert float(b.comms_time_s) - float(a.comms_time_s) == pytest.approx(added, rel=1e-9, abs=1e-15)
    assert "64 MiB" in step_terms(large, Work(prefill_seqs=1.0, prefill_len=4096.0)).sources["large_collectives"]
    # at tp 1 there is no all-reduce to price
    one = deployment(model, H100, 8, tp=1, engine=eng)
    work = Work(prefill_seqs=1.0, prefill_len=4096.0)
    assert float(step_terms(one, work).time_s) == float(step_terms(deployment(model, H100, 8, tp=1), work).time_s)


def test_kv_alltoalls_count_only_in_steps_with_decodes():
    # Qwen2.5-0.5B (2 KV heads) at tp 4: the KV cache is batch-sharded, so a decode step adds 2 all-to-alls
    # of its queries per layer, 2(4 - 1) + 2(4 - 1) = 12 + 6 = 18 ring steps a layer with the all-reduces.
    # A prefill-only step has no decode queries: its all-reduces' 12 steps a layer and no all-to-all time.
    from roofline.terms import Work, comms, step_terms

    model = load_model("qwen2.5-0.5b")
    dep = deployment(model, H100, 4, tp=4)
    layers = float(model.num_layers)
    decode = comms.stage_comms(dep, 8.0, 8.0, layers)
    prefill = comms.stage_comms(dep, 512.0, 0.0, layers)
    assert float(decode.ring_steps) == 18 * layers and float(prefill.ring_steps) == 12 * layers
    with_queries = comms.stage_comms(dep, 512.0, 1.0, layers)
    assert float(with_queries.time_s) > float(prefill.time_s)
    hop = replace(NO_ENGINE, collective_hop_s=5e-6, key="t")
    base = step_terms(dep, Work(prefill_seqs=1.0, prefill_len=512.0))
    slow = step_terms(deployment(model, H100, 4, tp=4, engine=hop), Work(prefill_seqs=1.0, prefill_len=512.0))
    assert float(slow.comms_time_s - base.comms_time_s) == pytest.approx(12 * layers * 5e-6, rel=1e-9)


def test_gqa_kv_reread_by_hand():
    # llama-3-8b (32 query heads over 8 KV heads: 3 extra reads of each KV head) on one H100, 8 decodes
    # at context 1024: KV 8 x 1024 x 131,072 B = 1.07e9 B; half re-read (f = 0.5): 0.5 x 3 x 1.07e9 B
    # / 3.35e12 B/s = 0.48 ms more.  An MHA model (GPT-J: K = N) has no group to re-read.
    hop = replace(NO_ENGINE, gqa_kv_reread=0.5, key="t")
    base = float(step_from(deployment(LLAMA, H100, 1), 8, 1024).step_time_s)
    slow = float(step_from(deployment(LLAMA, H100, 1, engine=hop), 8, 1024).step_time_s)
    assert slow - base == pytest.approx(0.5 * 3 * 8 * 1024 * 131_072 / 3.35e12, rel=1e-9)
    gptj = load_model("gpt-j-6b")
    assert (
        step_from(deployment(gptj, H100, 1, engine=hop), 8, 1024).step_time_s
        == step_from(deployment(gptj, H100, 1), 8, 1024).step_time_s
    )


def test_asking_for_an_engine_the_profile_lacks_names_what_it_has():
    with pytest.raises(RooflineError, match="no such engine entry .entries: .*trtllm/1.0"):
        deployment(LLAMA, load_hardware("h100-sxm-cal"), 1, engine="vllm/0.0")


def test_prompt_step_floor_by_hand():
    # A 30 ms floor under prompt-only steps (an eager engine's launches): Llama-3-8B's 128-token prefill
    # on one H100 (spec sheet: 2 x 8.0e9 x 128 FLOPs / 989 TFLOP/s = 2.1 ms, under the 16 GB weight read's
    # 4.8 ms) takes the floor; a 16,384-token prefill (its matmuls alone 2 x 8.0e9 x 16,384 / 989e12 =
    # 0.265 s, with causal attention more) is above it and unchanged; a decode step and a step that
    # carries decodes and a prompt do not take it.
    from roofline.terms import Work, step_terms

    floor = replace(NO_ENGINE, prefill_floor_s=0.03, key="t")
    plain_dep, floor_dep = deployment(LLAMA, H100, 1), deployment(LLAMA, H100, 1, engine=floor)
    short, long = Work(prefill_seqs=1.0, prefill_len=128.0), Work(prefill_seqs=1.0, prefill_len=16384.0)
    assert float(step_terms(plain_dep, short).time_s) < 0.006
    assert float(step_terms(floor_dep, short).time_s) == pytest.approx(0.03, rel=1e-12)
    # what binds: the 4.8 ms read on the spec sheet, the host's 30 ms of launches with the floor
    assert str(step_terms(plain_dep, short).bound) == "memory" and str(step_terms(floor_dep, short).bound) == "host"
    assert float(step_terms(plain_dep, long).time_s) > 0.265
    assert float(step_terms(floor_dep, long).time_s) == float(step_terms(plain_dep, long).time_s)
    assert str(step_terms(floor_dep, long).bound) == "compute"
    for work in (
        Work(decode_seqs=8.0, decode_context=1024.0),
        Work(decode_seqs=8.0, decode_context=1024.0, prefill_seqs=1.0, prefill_len=128.0),
    ):
        assert float(step_terms(floor_dep, work).time_s) == float(step_terms(plain_dep, work).time_s)
        assert str(step_terms(floor_dep, work).bound) == str(step_terms(plain_dep, work).bound)
    # on an array of prompt lengths the floor binds point by point: 128 → host, 16,384 → compute
    both = step_terms(floor_dep, Work(prefill_seqs=1.0, prefill_len=np.array([128.0, 16384.0])))
    assert both.bound.tolist() == ["host", "compute"] and both.bound_code.dtype == np.int8
