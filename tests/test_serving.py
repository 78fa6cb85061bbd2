"""Serving-engine estimators and analyses: hand-derived numbers and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses import shard as multichip
from roofline.core.errors import RooflineError
from roofline.formulas import serving
from roofline.specs import load_hardware, load_model

H100, V5E = load_hardware("h100-sxm"), load_hardware("tpu-v5e")


def test_disaggregation_ratio_from_part_8():
    # 32 requests per 512 × 19 ms = 9.73 s on a generate server; one per 0.91 s on a prefill server:
    # 32·0.91 / (512·0.019) = 2.99 prefill servers per generate server.
    assert serving.prefill_to_decode_ratio(0.910, 0.019, 32, 512) == pytest.approx(2.9934, rel=1e-4)


def test_interleaved_tpot_and_stall():
    # 10 ms steps, 100 ms prefills, B = 32, O = 512: 32/512 = 1/16 prefill per step -> 10 + 6.25 ms.
    assert serving.interleaved_tpot_s(0.010, 0.100, 32, 512) == pytest.approx(0.01625)
    assert serving.interleaved_ttft_s(0.100, 0.010) == pytest.approx(0.105)


def test_md1_queue_and_servers():
    # λ = 5/s, 0.1 s service: ρ = 0.5, W_q = 0.5·0.1/(2·0.5) = 50 ms; ρ ≥ 1 never drains.
    assert serving.md1_wait_s(5, 0.1) == pytest.approx(0.05)
    assert np.isinf(serving.md1_wait_s(10, 0.1))
    assert serving.servers_needed(2.0, 0.8) == 3  # 2 / 0.8 = 2.5 -> 3
    assert serving.servers_needed(0.1) == 1


def test_steady_state_batch_by_littles_law():
    # t(B) = 10 ms + 0.1 ms·B, λ = 10/s, O = 100: B = 1000·t(B) = 10 + 0.1B -> B* = 11.1, so 12.
    batches = np.arange(1, 65, dtype=float)
    assert serving.steady_state_batch(10, 100, batches, 0.010 + 0.0001 * batches) == 12
    assert np.isinf(serving.steady_state_batch(1e4, 100, batches, 0.010 + 0.0001 * batches))


def test_prefix_cache_formulas():
    assert serving.prefix_flops_saved(1e12, 0.5) == pytest.approx(5e11)
    assert serving.prefix_cache_bytes(10, 2e9) == pytest.approx(2e10)
    # h = 0.75: 0.75·(20 + 5) + 0.25·100 = 43.75 ms.
    assert serving.prefix_cached_ttft_s(0.100, 0.020, 0.005, 0.75) == pytest.approx(0.04375)


def test_expected_tokens_edges():
    assert serving.expected_tokens_per_step(0.0, 4) == pytest.approx(1.0)
    assert serving.expected_tokens_per_step(1.0, 4) == pytest.approx(5.0)
    assert serving.expected_tokens_per_step(0.5, 1) == pytest.approx(1.5)  # 1 + α


@given(st.floats(0.0, 0.999), st.integers(1, 16))
def test_expected_tokens_bounds_and_monotone(alpha, gamma):
    tokens = serving.expected_tokens_per_step(alpha, gamma)
    assert 1.0 - 1e-9 <= tokens <= gamma + 1 + 1e-9
    assert serving.expected_tokens_per_step(min(alpha + 1e-3, 1.0), gamma) >= tokens - 1e-9
    assert serving.expected_tokens_per_step(alpha, gamma + 1) >= tokens - 1e-9


def test_verify_step_is_the_step_model_on_gamma_plus_one_tokens():
    # The speculative verify step is the step model's work of B sequences x (γ+1) new tokens over the
    # cached context.  Hand derivation on one H100 (spec sheet), llama-3-8b, B = 4, γ = 3, context 2048:
    # weights 16.06e9 B / 3.35e12 = 4.79 ms > 2·16·8.03e9 / 9.89e14 = 0.26 ms of FLOPs (memory-bound);
    # KV 4 x 2048 x 131,072 B read once = 1.07e9 B / 3.35e12 = 0.32 ms; KV of 16 new tokens written.
    from roofline.deploy import deployment
    from roofline.terms import Work, step_terms

    dep = deployment(load_model("llama-3-8b"), H100, 1)
    verify = float(step_terms(dep, Work(prefill_seqs=4, prefill_len=4, prefill_cached=2048)).time_s)
    expected = (16.06e9 + 16 * 131_072) / 3.35e12 + 4 * 2048 * 131_072 / 3.35e12
    assert verify == pytest.approx(expected, rel=0.01)


def test_serve_modes_are_consistent():
    m = load_model("llama-3-8b")
    static = multichip.serve(m, H100, "static", 2048, 256, 1, 16)
    inter = multichip.serve(m, H100, "interleaved", 2048, 256, 1, 16)
    disagg = multichip.serve(m, H100, "disaggregated", 2048, 256, 1, 16)
    # Static users wait for the whole batch's prefill; interleaved only for their own.
    assert static.ttft_s == pytest.approx(static.batch_prefill_s) and static.ttft_s > inter.ttft_s
    assert inter.tpot_s == pytest.approx(inter.step_time_s + 16 / 256 * inter.prefill_s)
    assert inter.decode_stall_s == pytest.approx(inter.prefill_s)
    # Disaggregated: TPOT is the bare step; TTFT adds the KV shipped at 5e10 B/s (+5 us).
    kv = 2048 * 131072  # LLaMA-3-8B bf16: 2·8·128·32·2 = 131,072 B per token
    assert disagg.kv_transfer_s == pytest.approx(kv / 5e10 + 5e-6)
    assert disagg.tpot_s == pytest.approx(disagg.step_time_s)
    assert disagg.chips == pytest.approx(1 + disagg.prefill_to_decode_ratio)
    # A sequence lives on one tp-2 replica: its KV crosses 2 chips' DCN links however many
    # replicas the slice has, and the simulator ships it the same way.
    from roofline.analyses.serve import serve
    from roofline.analyses.simulate.adapter import DeploymentStepCost
    from roofline.deploy import deployment

    pair, four = (deployment(m, H100, c, tp=2) for c in (2, 8))
    one_replica = serve(pair, "disaggregated", 2048, 256, 16).kv_transfer_s
    assert one_replica == pytest.approx(kv / (2 * 5e10) + 5e-6)
    assert serve(four, "disaggregated", 2048, 256, 16).kv_transfer_s == pytest.approx(one_replica)
    assert DeploymentStepCost(four, 1, 4096.0, "").kv_transfer_time_s(2048) == pytest.approx(one_replica)
    with pytest.raises(RooflineError, match="^mode: unknown"):
        multichip.serve(m, H100, "batched", 2048, 256)


def test_mixed_engine_batches_the_new_prompts_into_the_decode_step():
    # In-flight batching (vLLM, TensorRT-LLM): each step carries B decodes and B/O new prompts, so the
    # weights are read once for both.  Hand derivation, one H100 (spec sheet), llama-3-8b, B = 128,
    # I = O = 128: one prompt a step, 256 tokens: 2·8.03e9·256 / 9.89e14 = 4.16 ms of FLOPs < weights
    # 16.06e9 B / 3.35e12 = 4.79 ms; KV read 128 x 192 (mean context) x 131,072 B = 0.96 ms; KV of the
    # 128 prompt tokens written.  TPOT = that step; TTFT = half a step's wait + the step carrying the
    # prompt, here the same step (B/O = 1 prompt a step): 1.5 steps.
    m = load_model("llama-3-8b")
    mixed = multichip.serve(m, H100, "mixed", 128, 128, 1, 128)
    step = (16.06e9 + 128 * 131_072 + 128 * 192 * 131_072) / 3.35e12
    assert mixed.tpot_s == pytest.approx(step, rel=0.01) and mixed.ttft_s == pytest.approx(1.5 * mixed.tpot_s)
    assert mixed.tokens_per_s_per_chip == pytest.approx(128 / mixed.tpot_s)
    # The book's interleaved engine pauses for each batch-1 prefill instead, re-reading the weights: the
    # 128-decode step (4.79 + 0.96 ms) plus one 128-token prefill (weights again, 4.79 ms) ≈ 10.5 ms,
    # about 1.8x the mixed step.
    inter = multichip.serve(m, H100, "interleaved", 128, 128, 1, 128)
    assert inter.tpot_s > 1.7 * mixed.tpot_s
    # B < O: one chunk of c = B·I/O = 32 tokens a step after a cached prefix (I − c)/2 = 48, a quarter
    # of a prompt (its per-prompt costs count B/O = 1/4); the first token comes after half a step and
    # the step of the 32 decodes with the whole 128-token prompt.
    from roofline.analyses.serve import mixed_work
    from roofline.deploy import deployment
    from roofline.terms import Work, step_terms

    small = multichip.serve(m, H100, "mixed", 128, 128, 1, 32)
    dep = deployment(m, H100, 1)
    assert mixed_work(32, 128, 128, 192.0) == Work(32.0, 192.0, 1.0, 32.0, 48.0, 0.25)
    assert small.tpot_s == float(step_terms(dep, Work(32.0, 192.0, 1.0, 32.0, 48.0, 0.25)).time_s)
    whole = float(step_terms(dep, Work(32.0, 192.0, 1.0, 128.0)).time_s)
    assert small.ttft_s == pytest.approx(0.5 * small.tpot_s + whole)


@given(st.integers(0, 10**7), st.integers(1, 10**5))
def test_mixed_max_batch_is_the_largest_batch_whose_prompts_fit_too(max_seqs, output_len):
    b = serving.mixed_max_batch(max_seqs, output_len)
    assert b + -(-b // output_len) <= max_seqs < (b + 1) + -(-(b + 1) // output_len)


def test_mixed_engine_holds_the_prompts_in_flight():
    # I = 4096, O = 4 on one H100 (80 GB, 0.9 usable): llama-3-8b's 8,030,261,248 bf16 parameters
    # (its HF card) leave 72.0 − 16.06 GB for sequences of 4100 × 131,072 B of KV plus an activation
    # reserve of (2·4096 + 2·14336)·2 + 4·128,256 B: 103.98, so 103 fit (a decode step's check, which
    # an interleaved engine makes).
    # A mixed engine also holds the B/O = B/4 prompts it is prefilling: B + ⌈B/4⌉ ≤ 103 gives
    # B ≤ ⌊103·4/5⌋ = 82 (82 + 21 = 103; 83 + 21 = 104).
    m = load_model("llama-3-8b")
    fit = int((0.9 * 80e9 - 2 * 8_030_261_248) // (4100 * 131_072 + (2 * 4096 + 2 * 14336) * 2 + 4 * 128_256))
    assert fit == 103
    inter = multichip.serve(m, H100, "interleaved", 4096, 4, 1, 103)
    assert inter.fits and inter.max_batch == fit
    # A static batch prefills its B prompts in one step (request's check): each sequence also
    # reserves 4096 tokens of (2·4096 + 2·14336)·2 B activations and one sampled row's logits,
    # 55.94 GB / 839,898,112 B = 66.6, so 66 fit.
    static_fit = int(
        (0.9 * 80e9 - 2 * 8_030_261_248) // (4100 * 131_072 + 4096 * (2 * 4096 + 2 * 14336) * 2 + 4 * 128_256)
    )
    assert static_fit == 66
    at_66, at_67 = (multichip.serve(m, H100, "static", 4096, 4, 1, b) for b in (66, 67))
    assert at_66.fits and not at_67.fits and at_66.max_batch == static_fit
    from roofline.analyses.request import request

    assert not request(m, H100, 4096, 4, batch=67).fits and request(m, H100, 4096, 4, batch=66).fits
    at, over = (multichip.serve(m, H100, "mixed", 4096, 4, 1, b) for b in (82, 83))
    assert at.fits and not over.fits and at.max_batch == over.max_batch == 82
    assert over.tokens_per_s_per_chip is None and over.tokens_per_s_per_chip_unchecked > 0
    # eight replicas (8 chips, tp 1): each holds ⌊103·4/5⌋ = 82 decodes, 656 in the slice
    from roofline.analyses.serve import serve
    from roofline.deploy import deployment

    eight = deployment(m, H100, 8, tp=1)
    assert float(eight.replicas) == 8 and serve(eight, "mixed", 4096, 4, 656).max_batch == 8 * 82
    # 657 puts 83 decodes (83 + 21 = 104 sequences) on one replica: it does not fit, though the
    # slice's mean is 82.1 a replica
    assert serve(eight, "mixed", 4096, 4, 656).fits and not serve(eight, "mixed", 4096, 4, 657).fits
    # what the prompts add: 21 sequences of 4100 tokens x 131,072 B of KV
    assert over.total_bytes - multichip.serve(m, H100, "interleaved", 4096, 4, 1, 83).total_bytes == pytest.approx(
        21 * 4100 * 131_072
    )


def test_continuous_batching_steady_state():
    m = load_model("llama-3-8b")
    res = multichip.serve(m, H100, "disaggregated", 1024, 256, 1, 32, arrival_rate=20.0)
    c = res.continuous
    # Little's law holds at the reported concurrency: λ/replicas · O · TPOT ≤ B.
    assert 20.0 / c["decode_replicas"] * 256 * c["tpot_s"] <= c["concurrency_per_replica"]
    assert c["ttft_s"] == pytest.approx(res.prefill_s + c["prefill_queue_wait_s"])
    assert c["chips_needed"] == c["decode_replicas"] + c["prefill_servers"]


def test_prefix_cache_analysis():
    m = load_model("llama-3-8b")
    res = multichip.serve(
        m, H100, "interleaved", 4096, 128, prefix_len=2048, prefix_hit_rate=1.0, num_prefixes=10, prefix_store="host"
    )
    p = res.prefix_cache
    assert p["cache_bytes"] == pytest.approx(10 * 2048 * 131072)
    assert p["cache_load_s"] == pytest.approx(2048 * 131072 / 6.4e10)  # PCIe Gen5 one way
    assert p["ttft_with_cache_s"] < p["ttft_without_cache_s"]
    with pytest.raises(RooflineError, match="^prefix_len must be"):
        multichip.serve(m, H100, "interleaved", 1024, 128, prefix_len=2048)


def test_speculative_pays_at_small_batch_only():
    m, draft = load_model("llama-3-8b"), load_model("qwen2.5-0.5b")
    # Short context: at large batch the target's 5x matmul FLOPs make verification compute-bound, so
    # speculation stops paying (at long context the shared KV read keeps it paying: appendix D).
    res = multichip.serve(m, H100, "disaggregated", 64, 64, 1, 1, draft_model=draft, draft_len=4, acceptance=0.8)
    s = res.speculative
    # (1 - α^(γ+1)) / (1 - α) with α = 0.8, γ = 4: (1 - 0.32768) / 0.2 = 3.3616 (appendix D)
    assert s["tokens_per_target_step"] == pytest.approx(3.3616)
    assert s["round_time_s"] == pytest.approx(4 * s["draft_step_s"] + s["verify_step_s"])
    assert s["speedup"] > 1.0
    assert 1 < s["break_even_batch"] < np.inf


@pytest.mark.parametrize(("batch", "one"), [(64, 32), (192, 96), (191, 96)])
def test_mixed_replicas_each_run_their_own_decodes_and_prompts(batch, one):
    # B < O and B ≥ O (B/O = 1.5 and 1.49 a step): r = 2 replicas of B decodes step as one replica of
    # ⌈B/2⌉, each with its own new prompts; the slice makes B tokens a step on twice the chips.
    from roofline.analyses.serve import serve
    from roofline.deploy import deployment

    m = load_model("llama-3.1-8b")
    pair = serve(deployment(m, H100, 2, tp=1), "mixed", 2048, 128, batch)
    alone = serve(deployment(m, H100, 1, tp=1), "mixed", 2048, 128, one)
    assert pair.tpot_s == pytest.approx(alone.tpot_s) and pair.ttft_s == pytest.approx(alone.ttft_s)
    assert pair.tokens_per_s_per_chip_unchecked == pytest.approx(batch / pair.tpot_s / 2)
