"""Property tests: any spec the validators accept gives finite, non-negative estimates.

Random valid models and chips (anywhere in the accepted ranges, built through the same
validators as a file) go through the pure estimators of memory.py, compute.py and step.py.
None may return NaN, an infinity or a negative number: the ranges the boundary accepts are
what keeps the estimators' arithmetic finite.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.checks import MAX_COUNT, MAX_VALUE
from roofline.core.units import DTYPE_BYTES
from roofline.formulas import compute, step
from roofline.model import memory
from roofline.specs import HardwareSpec, ModelSpec, hardware_from_dict, model_from_dict
from tests.profiles import at_most

PROPERTY = at_most(80)
COUNT = st.integers(1, MAX_COUNT)
SMALL = st.integers(1, 4096)


@st.composite
def models(draw: st.DrawFn) -> ModelSpec:
    """A model the validators accept: any size up to MAX_COUNT, MoE, windows and MLA included."""
    size = draw(st.sampled_from([SMALL, COUNT]))
    layers = draw(size)
    kv_heads, group = draw(SMALL), draw(st.integers(1, 64))
    experts = draw(st.integers(1, 512))
    data: dict[str, object] = {
        "name": "random",
        "num_layers": layers,
        "d_model": draw(size),
        "d_ff": draw(size),
        "num_heads": kv_heads * group,
        "num_kv_heads": kv_heads,
        "head_dim": draw(SMALL),
        "vocab_size": draw(size),
        "gated_mlp": draw(st.booleans()),
        "tie_embeddings": draw(st.booleans()),
        "num_experts": experts,
        "experts_per_token": draw(st.integers(1, experts)),
        "num_shared_experts": draw(st.integers(0, 4)),
        "num_dense_layers": draw(st.integers(0, layers)),
        "kv_share_factor": draw(st.integers(1, 8)),
        "norm_bias": draw(st.booleans()),
        "learned_position_embeddings": draw(st.integers(0, 10**6)),
    }
    if draw(st.booleans()):
        data["sliding_window"] = draw(COUNT)
        data["num_local_layers"] = draw(st.integers(0, layers))
    if draw(st.booleans()):
        data.update(
            kv_lora_rank=draw(SMALL),
            qk_rope_head_dim=draw(st.integers(0, 256)),
            qk_nope_head_dim=draw(SMALL),
            v_head_dim=draw(SMALL),
        )
    return model_from_dict(data)


def _float(dimension: str, low: float = 1.0) -> st.SearchStrategy[float]:
    return st.floats(low, MAX_VALUE[dimension], allow_nan=False, allow_infinity=False)


@st.composite
def chips(draw: st.DrawFn) -> HardwareSpec:
    """A chip the validators accept, every number anywhere in its allowed range."""
    return hardware_from_dict(
        {
            "name": "random",
            "flops_per_s": {"bf16": draw(_float("FLOP/s"))},
            "hbm_bytes": draw(_float("bytes")),
            "hbm_bandwidth_bytes_per_s": draw(_float("bytes/s")),
            "ici_bandwidth_bytes_per_s": draw(_float("bytes/s")),
            "ici_links": draw(st.integers(1, 64)),
            "ici_hop_latency_s": draw(_float("seconds", 1e-12)),
            "price_per_chip_hour": draw(st.floats(1e-6, 1e6)),
        }
    )


def _ok(*values: object) -> None:
    for value in values:
        array = np.asarray(value, dtype=float)
        assert np.all(np.isfinite(array)) and np.all(array >= 0), value


@PROPERTY
@given(models(), st.sampled_from(sorted(DTYPE_BYTES)), COUNT, COUNT, COUNT)
def test_memory_estimates_finite_and_non_negative(m, dtype, batch, input_len, output_len):
    width = DTYPE_BYTES[dtype]
    counts = memory.param_counts(m)
    _ok(counts.total, counts.active, counts.embedding, counts.attention, counts.mlp, counts.norms)
    assert counts.active <= counts.total
    _ok(
        memory.kv_cache_bytes_per_token(m, width),
        memory.kv_cache_bytes_per_sequence(m, input_len, width),
        memory.kv_cache_bytes(m, batch, input_len, width),
        memory.kv_cache_bytes_summed_over_decode(m, input_len, output_len, width),
        memory.weight_bytes_read_per_step(m, counts.total, width, batch),
        memory.param_bytes(counts.total, width),
    )


@PROPERTY
@given(models(), chips(), st.integers(1, 4096), COUNT, st.integers(1, 10**6), st.integers(1, 10**6))
def test_step_estimates_finite_and_non_negative(m, hw, chips_, batch, input_len, output_len):
    width = 2.0
    counts = memory.param_counts(m)
    flops = hw.flops_for("bf16") * chips_
    bandwidth = hw.hbm_bandwidth_bytes_per_s * chips_
    weights = memory.param_bytes(counts.total, width)
    kv_seq = memory.kv_cache_bytes_per_sequence(m, input_len, width)
    kv_sum = memory.kv_cache_bytes_summed_over_decode(m, input_len, output_len, width)
    prefill = compute.prefill_flops(m, counts.active, input_len)
    no_cache = compute.no_cache_generation_flops(m, counts.active, input_len, output_len)
    step_time = step.decode_step_time_s(batch, kv_seq, weights, counts.active, flops, bandwidth)
    _ok(
        compute.decode_flops_per_token(m, counts.active, input_len),
        prefill,
        no_cache,
        compute.critical_batch_size(flops, bandwidth, width, m.num_experts, m.experts_per_token),
        step_time,
        step.prefill_time_s(prefill, weights, flops, bandwidth),
        step.decode_time_total_s(batch, output_len, kv_sum, weights, counts.active, flops, bandwidth),
        step.no_cache_generation_time_s(no_cache, weights, output_len, flops, bandwidth),
        step.tokens_per_s(batch, step_time),
        step.max_tokens_per_s_compute(counts.active, flops),
        step.min_decode_step_time_s(batch * kv_seq, weights, bandwidth),
    )
    capacity = memory.hbm_capacity_bytes(chips_, hw.hbm_bytes)
    _ok(
        capacity,
        memory.min_chips(weights + batch * kv_seq, hw.hbm_bytes),
        memory.max_batch_size(capacity, weights, kv_seq),
    )
    longest = memory.max_context_length(m, batch, capacity, weights, width)
    assert not np.isnan(longest) and longest >= 0  # inf: every layer windowed, the cache stops growing
