"""TensorRT-LLM's trtllm-gen MLA decode launch heuristic (Blackwell): kernel, head tiles, latent reads, MMA rows.

Measured rows cited from /work/shared/measurements/aiconfigurator/systems/data/b200_sxm/mla/trtllm/1.3.0rc20/
generation_mla_perf.csv.gz (line numbers of the decompressed CSV, header = line 1; latency in ms; kv_len =
step + 1); B200 has 148 SMs."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.kernels.forms import Hw
from roofline.kernels.mla import DECODE, mla_decode_time
from roofline.kernels.predict import entry_constants
from roofline.kernels.trtllm_gen_mla import (
    GENERIC,
    TRTLLM_GEN,
    head_tile,
    latent_reads,
    mma_heads,
    uses_swapped_kernel,
)
from roofline.specs import load_hardware

SMS = 148.0
HEADS = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0])


def shape(batch: float, kv: float, heads: np.ndarray = HEADS) -> dict[str, np.ndarray]:
    """DeepSeek-V3's absorbed decode (576 query-key, 512 value) at ``batch`` x ``kv`` cached tokens."""
    n = np.ones_like(heads)
    dims = {"head_dim": 576.0 * n, "v_head_dim": 512.0 * n, "width": 2.0 * n}
    return {"batch": batch * n, "kv_len": kv * n, "num_heads": heads, **dims}


def test_the_heuristic_picks_the_swapped_kernel_up_to_32_heads_and_while_it_fits_one_wave():
    # Batch 1,024: CTAs = 1,024·⌈h/16⌉ > 148 SMs, so only h <= 32 runs the swapped kernel.
    assert list(uses_swapped_kernel(shape(1024.0, 4096.0), SMS)) == [True] * 6 + [False, False]
    # Batch 1, 4,096 tokens: 64 heads take 4 CTAs, splits = min(⌈4096/256⌉, ⌊148/4⌋) = 16, 256 tokens a CTA
    # <= 1,024: swapped; 128 heads 8 CTAs, splits min(16, 18) = 16: swapped too.
    assert list(uses_swapped_kernel(shape(1.0, 4096.0), SMS)) == [True] * 8
    # Batch 16, 128 heads: 128 CTAs, splits = min(⌈kv/256⌉, ⌊148/128⌋ = 1) = 1: 1,024 tokens fit, 2,048 do not.
    assert list(uses_swapped_kernel(shape(16.0, 1024.0, np.array([128.0])), SMS)) == [True]
    assert list(uses_swapped_kernel(shape(16.0, 2048.0, np.array([128.0])), SMS)) == [False]


def test_head_tiles_reads_and_mma_rows_at_batch_1024():
    s = shape(1024.0, 4096.0)
    # Swapped: tile 8 up to 8 heads, else 16; the high-throughput kernel 64 (128 heads: a 2-CTA pair of 64).
    assert list(head_tile(s, SMS, TRTLLM_GEN)) == [8, 8, 8, 8, 16, 16, 64, 64]
    # One latent read per swapped CTA: 32 heads read twice; 64 and 128 heads once.
    assert list(latent_reads(s, SMS, TRTLLM_GEN)) == [1, 1, 1, 1, 1, 2, 1, 1]
    # MMA rows: the swapped kernel's tile, the other kernel's 128 (64 heads pad to 128).
    assert list(mma_heads(s, SMS, TRTLLM_GEN)) == [8, 8, 8, 8, 16, 32, 128, 128]
    # Without the rule: 64-head blocks, one read, the heads themselves.
    assert list(head_tile(s, SMS, GENERIC)) == [64.0] * 8
    assert list(latent_reads(s, SMS, GENERIC)) == [1.0] * 8
    assert mma_heads(s, SMS, GENERIC) is s["num_heads"]


def test_the_table_is_slow_where_the_rule_doubles_ctas_or_reads():
    # Batch 1,024, 2 cached tokens (lines 162-165): 128 / 64 / 32 / 16 heads take 90.3 / 59.1 / 86.6 / 50.0 us;
    # CTAs (groups) 2,048 / 1,024 / 2,048 / 1,024: the slow ones are those with twice the CTAs.
    measured = {128.0: 90.3147, 64.0: 59.1413, 32.0: 86.5867, 16.0: 49.9947}
    s = shape(1024.0, 2.0, np.array(list(measured)))
    ctas = s["batch"] * np.ceil(s["num_heads"] / head_tile(s, SMS, TRTLLM_GEN))
    assert list(ctas) == [2048, 1024, 2048, 1024]
    per_cta = np.array(list(measured.values())) / ctas
    assert per_cta.max() / per_cta.min() < 1.5  # against 1.8x apart per sequence
    # 4,096 cached tokens (lines 2098-2101): 863.0 / 861.1 / 1,147.7 / 815.4 us; only 32 heads read the latent
    # twice, and the second read costs 0.41 of the first (1,147.7 / 815.4 - 1): the latent_reread_share.
    assert 1147.71 / 815.355 - 1.0 == pytest.approx(0.41, abs=0.01)
    assert list(latent_reads(shape(1024.0, 4096.0, np.array([128.0, 64.0, 32.0, 16.0])), SMS, TRTLLM_GEN)) == [
        1,
        1,
        2,
        1,
    ]
    # fp8 latent (lines 2106-2109): 64 heads (489.4 us) as slow as 128 (531.2), where 16 take 380.7: the
    # high-throughput kernel computes 128 MMA rows either way.
    assert 489.445 / 531.179 == pytest.approx(1.0, abs=0.1) and 489.445 / 380.683 > 1.25


def test_the_form_costs_a_second_read_at_the_fitted_share():
    # Memory-bound batch 1,024 x 4,096: with compute never binding and no setup, 32 heads / 16 heads =
    # (latent·(1 + ρ) + queries(32)) / (latent + queries(16)); queries are 1,024·h·1,088·2 bytes.
    s = shape(1024.0, 4096.0, np.array([16.0, 32.0]))
    hw = Hw(peak_flops=2.25e15, bandwidth=8e12, num_sms=SMS)
    p = {"memory_efficiency": 1.0, "compute_efficiency": 1e6, "overhead_s": 0.0, "overlap_exponent": 20.0}
    p |= {"fill_exponent": 1.0, "seq_setup_s": 0.0, "head_setup_s": 0.0, "kv_chunk": 1024.0}
    p |= {"reduction_overhead_s": 0.0, "num_sms": SMS, "trtllm_gen_mla": TRTLLM_GEN, "latent_reread_share": 0.5}
    t = mla_decode_time(s, hw, p)
    latent, query = 1024 * 4096 * 576 * 2, 1024 * 1088 * 2
    assert t[1] / t[0] == pytest.approx((1.5 * latent + 32 * query) / (latent + 16 * query), rel=2e-3)
    # The same entry without the rule reads once: 32 and 16 heads cost the same latent.
    t0 = mla_decode_time(s, hw, p | {"trtllm_gen_mla": GENERIC})
    assert t0[1] / t0[0] == pytest.approx((latent + 32 * query) / (latent + 16 * query), rel=2e-3)


def test_only_blackwell_tensorrt_llm_entries_take_the_rule_and_fit_its_share():
    b200, h100 = load_hardware("b200"), load_hardware("h100-sxm")
    assert entry_constants("mla_decode/bf16", b200) == {"trtllm_gen_mla": 1.0}
    assert entry_constants("mla_decode/fp8", h100) == {}
    names = [q.name for q in DECODE.params_with({"trtllm_gen_mla": 1.0})]
    assert names[-1] == "latent_reread_share"
    assert "latent_reread_share" not in [q.name for q in DECODE.params_with({})]
