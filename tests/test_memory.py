"""Memory estimators against hand-derived numbers and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.model import memory
from roofline.specs import load_model
from tests.profiles import at_most

LLAMA = load_model("llama-2-13b")


def test_llama2_13b_breakdown_by_hand():
    counts = memory.param_counts(LLAMA)
    # MLP: 3 · D · F · L = 3 · 5120 · 13824 · 40
    assert counts.mlp == 3 * 5120 * 13824 * 40
    # Attention: (2·D·N·H + 2·D·K·H)·L with N = K = 40, H = 128
    assert counts.attention == (2 * 5120 * 40 * 128 + 2 * 5120 * 40 * 128) * 40
    # Untied embeddings: 2 · V · D
    assert counts.embedding == 2 * 32000 * 5120
    # RMSNorm weights: (2 per layer + final) · D
    assert counts.norms == (2 * 40 + 1) * 5120
    assert counts.total == counts.active


def test_kv_bytes_llama2_13b_by_hand():
    # 2 (K and V) · 2 bytes · H 128 · K 40 · L 40 = 819,200 B per token
    assert memory.kv_cache_bytes_per_token(LLAMA, 2.0) == 819_200
    assert memory.kv_cache_bytes_per_sequence(LLAMA, 8192, 2.0) == 819_200 * 8192
    assert memory.kv_cache_bytes(LLAMA, 16, 8192, 2.0) == 16 * 819_200 * 8192


def test_gqa_divides_kv_by_q_to_kv_ratio():
    gqa = load_model("llama-2-13b-gqa")  # 40 query heads share 8 KV heads: 5x less KV
    assert memory.kv_cache_bytes_per_token(gqa, 2.0) * 5 == memory.kv_cache_bytes_per_token(LLAMA, 2.0)


def test_sliding_window_caps_local_layers():
    mistral = load_model("mistral-7b-v0.1")  # 32 layers, all local, window 4096, K=8, H=128
    per_layer_token = 2 * 8 * 128 * 2
    assert memory.kv_cache_bytes_per_sequence(mistral, 2000, 2.0) == 32 * 2000 * per_layer_token
    assert memory.kv_cache_bytes_per_sequence(mistral, 100_000, 2.0) == 32 * 4096 * per_layer_token
    gemma = load_model("gemma-2-9b")  # 21 global + 21 local (4096) layers, K=8, H=256
    per_layer_token = 2 * 8 * 256 * 2
    expected = (21 * 8192 + 21 * 4096) * per_layer_token
    assert memory.kv_cache_bytes_per_sequence(gemma, 8192, 2.0) == expected


def test_mla_caches_latent_plus_rope_key():
    ds = load_model("deepseek-v3")  # (kv_lora_rank 512 + rope 64) per layer, 61 layers, no K/V split
    assert memory.kv_cache_bytes_per_token(ds, 2.0) == (512 + 64) * 61 * 2


def test_kv_sharing_divides_stored_cache():
    shared = LLAMA.model_copy(update={"kv_share_factor": 2})
    assert memory.kv_cache_bytes_per_token(shared, 2.0) * 2 == memory.kv_cache_bytes_per_token(LLAMA, 2.0)


def test_moe_expected_experts_touched():
    # E(1-(1-k/E)^B): one token touches exactly k experts; many tokens touch nearly all E.
    assert memory.expected_experts_touched(16, 2, 1) == pytest.approx(2.0)
    assert memory.expected_experts_touched(16, 2, 2) == pytest.approx(16 * (1 - (14 / 16) ** 2))
    assert memory.expected_experts_touched(16, 2, 10_000) == pytest.approx(16.0)


def test_capped_token_sum_matches_brute_force():
    for start, count, cap in [(5, 10, None), (5, 10, 8), (10, 3, 4), (1, 1, 1), (3, 0, 2)]:
        brute = sum(min(start + t, cap) if cap else start + t for t in range(count))
        assert memory.capped_token_sum(start, count, cap) == brute


def test_min_chips_and_fit():
    # 133.4 GB on 16 GiB chips: ceil(133.4e9 / 17.18e9) = 8
    total = 26.03e9 + 16 * 6.71e9
    assert memory.min_chips(total, 16 * 2**30) == 8
    assert memory.fits_in_memory(total, 8 * 16 * 2**30)
    assert not memory.fits_in_memory(total, 7 * 16 * 2**30)


@at_most(60)
@given(
    context=st.integers(1, 200_000),
    chips=st.integers(1, 64),
    name=st.sampled_from(["llama-2-13b", "llama-3-8b", "gemma-2-9b", "mistral-7b-v0.1", "deepseek-v3"]),
)
def test_max_batch_is_largest_that_fits(context, chips, name):
    m = load_model(name)
    hbm = 16 * 2**30 * chips
    weights = memory.param_counts(m).total * 2.0
    kv_seq = memory.kv_cache_bytes_per_sequence(m, context, 2.0)
    b = memory.max_batch_size(hbm, weights, kv_seq)
    if b >= 1:
        assert memory.fits_in_memory(weights + b * kv_seq, hbm)
    assert not memory.fits_in_memory(weights + (b + 1) * kv_seq, hbm)


@at_most(60)
@given(
    batch=st.integers(1, 256),
    chips=st.integers(1, 64),
    name=st.sampled_from(["llama-2-13b", "llama-3-8b", "gemma-2-9b", "deepseek-v3"]),
)
def test_max_context_is_largest_that_fits(batch, chips, name):
    m = load_model(name)
    hbm = 16 * 2**30 * chips
    weights = memory.param_counts(m).total * 2.0
    s = memory.max_context_length(m, batch, hbm, weights, 2.0)
    if not np.isfinite(s) or s < 1:
        return
    assert memory.fits_in_memory(weights + memory.kv_cache_bytes(m, batch, s, 2.0), hbm)
    assert not memory.fits_in_memory(weights + memory.kv_cache_bytes(m, batch, s + 1, 2.0), hbm)


@at_most(40)
@given(s1=st.integers(1, 100_000), s2=st.integers(1, 100_000))
def test_kv_linear_in_context_without_window(s1, s2):
    a = memory.kv_cache_bytes_per_sequence(LLAMA, s1, 2.0)
    b = memory.kv_cache_bytes_per_sequence(LLAMA, s2, 2.0)
    both = memory.kv_cache_bytes_per_sequence(LLAMA, s1 + s2, 2.0)
    assert both == pytest.approx(a + b)


def test_broadcasts_over_arrays():
    batch = np.array([1, 8, 16])[:, None]
    context = np.array([1024, 8192])[None, :]
    kv = memory.kv_cache_bytes(LLAMA, batch, context, 2.0)
    assert kv.shape == (3, 2)
    assert kv[2, 1] == 16 * 8192 * 819_200
