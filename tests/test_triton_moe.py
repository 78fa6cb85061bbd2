"""OpenAI's Triton grouped GEMM (triton_kernels matmul_ogs): its row tile block_m and the rows it computes.

Measured rows cited from /work/shared/measurements/aiconfigurator/systems/data (line numbers of the
decompressed CSV, header = line 1): gpt-oss's experts, 2880 hidden, 2880 inter, top 4 of 32, tp 1, ep 1,
balanced."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.kernels.forms import Hw
from roofline.kernels.moe import moe_gemm_times, routing_features
from roofline.kernels.predict import entry_constants
from roofline.kernels.triton_moe import PLAIN, RAGGED, block_m, tiled_rows, triton_tile_constants
from roofline.specs import load_hardware

#: Token counts around each step of the tables (32 experts, top 4: rows an expert = T·4/32 = T/8).
TOKENS = np.array([64.0, 80.0, 128.0, 160.0, 256.0, 320.0, 512.0, 768.0, 1024.0, 1536.0])
GPT_OSS = {"k": 2880.0, "n": 2880.0, "num_experts": 32.0, "top_k": 4.0, "ep": 1.0, "tp": 1.0, "gated": 1.0}


def shape(tokens: np.ndarray, ep: float = 1.0) -> dict[str, np.ndarray]:
    """gpt-oss's expert shape at ``tokens`` with its balanced routing features on ``ep`` GPUs."""
    s = {k: np.asarray(v) for k, v in {**GPT_OSS, "ep": ep, "width": 0.53125}.items()}
    s["m"] = tokens
    s["slots"], s["active"] = routing_features(0.0, 0.0, tokens, 4, 32, ep)
    return s


def test_block_m_follows_the_heuristics_two_branches():
    s = shape(TOKENS)
    assert list(s["slots"] / s["active"]) == [8, 10, 16, 20, 32, 40, 64, 96, 128, 192]
    # Plain: clip(next_pow2(rows), 16, 128).  Ragged: clip(next_pow2(2·rows), 16, 64) up to 64 rows, then plain.
    assert list(block_m(s, PLAIN)) == [16, 16, 16, 32, 32, 64, 64, 128, 128, 128]
    assert list(block_m(s, RAGGED)) == [16, 32, 32, 64, 64, 64, 64, 128, 128, 128]
    # Rows the tensor cores compute, per expert: padded up to whole tiles (192 rows: two tiles of 128).
    assert list(tiled_rows(s, PLAIN) / 32) == [16, 16, 16, 32, 32, 64, 64, 128, 128, 256]
    assert list(tiled_rows(s, RAGGED) / 32) == [16, 32, 32, 64, 64, 64, 64, 128, 128, 256]
    # The heuristic reads the T·k rows over the GPU's local experts: ep 8 (4 local) at T = 16 takes
    # ⌊64/4⌋ = 16 -> ragged 32, though the GPU's 4 experts get 2 rows each.
    eight = shape(np.array([16.0]), ep=8.0)
    assert float(eight["slots"][0] / eight["active"][0]) == 2.0
    assert float(block_m(eight, RAGGED)[0]) == 32.0 and float(tiled_rows(eight, RAGGED)[0]) == 4 * 32.0


def test_tiles_step_where_the_tables_step():
    # TensorRT-LLM's Triton backend on H100 (h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz): T = 512 takes
    # 313.5 us (line 55638: 64 rows an expert, one 64-row tile), T = 768 591.0 us (line 55639: 96 rows, a
    # 128-row tile), T = 1,024 595.3 us (line 55640: 128 rows, the same tile full), T = 1,536 1,109.6 us
    # (line 55641: 192 rows, two tiles).  The compute term doubles at each step and holds in between.
    s = shape(np.array([512.0, 768.0, 1024.0, 1536.0]))
    hw = Hw(peak_flops=989e12, bandwidth=3.35e12, num_sms=132.0)
    p = {"memory_efficiency": 1.0, "compute_efficiency": 1.0, "fill_exponent": 1.0, "pad_tokens": 0.0}
    p |= {"num_sms": 132.0, "k_half": 0.0, "triton_block_m": RAGGED}
    _, compute = moe_gemm_times(s, hw, p)
    assert compute[1] / compute[0] == pytest.approx(2.0) and compute[2] == pytest.approx(compute[1])
    assert compute[3] / compute[2] == pytest.approx(2.0)
    # 2·(32 experts·128 rows)·cols·2880 FLOPs at 989 TFLOP/s, each GEMM's CTAs (one 128-row x 128-column tile
    # each) in waves on 132 SMs: gate/up 32·⌈5760/128⌉ = 1,440 tiles in 11 waves (1,452 slots), down 32·⌈2880/128⌉
    # = 736 in 6 (792): 216.4 us.
    waves = 5760 * 1452 / 1440 + 2880 * 792 / 736
    assert float(compute[1]) == pytest.approx(2 * 32 * 128 * 2880 * waves / 989e12)
    # Without a rule the compute term follows the routed rows: 1.5x from 512 to 768 tokens.
    _, plain = moe_gemm_times(s, hw, {**p, "triton_block_m": 0.0})
    assert plain[1] / plain[0] == pytest.approx(1.5)


def test_a_few_tiles_leave_the_sms_idle():
    # vLLM's gpt-oss Triton experts, 128 experts on ep 128 (one local expert; h100_sxm/moe/vllm/0.24.0): T = 16
    # takes 84.8 us (line 43280: the heuristic reads 16·4/1 = 64 rows -> a 64-row tile for the expert's 1 row),
    # T = 32 110.7 us (line 43282: 128 rows -> a 128-row tile, still 1 row).  The tile's rows are computed in one
    # CTA per 128 columns: 45 CTAs (gate/up) and 23 (down) on 132 SMs, so the compute runs at 45/132 (23/132)
    # of the chip (β = 1) and doubles with the tile.
    s = {**shape(np.array([16.0, 32.0]), ep=128.0), "num_experts": np.asarray(128.0)}
    s["slots"], s["active"] = routing_features(0.0, 0.0, s["m"], 4, 128, 128)
    assert list(s["slots"]) == [1.0, 1.0] and list(block_m(s, PLAIN)) == [64.0, 128.0]
    hw = Hw(peak_flops=989e12, bandwidth=3.35e12, num_sms=132.0)
    p = {"memory_efficiency": 1.0, "compute_efficiency": 1.0, "fill_exponent": 1.0, "pad_tokens": 0.0}
    p |= {"num_sms": 132.0, "k_half": 0.0, "triton_block_m": PLAIN}
    _, compute = moe_gemm_times(s, hw, p)
    full = 2 * 128 * 2880 * (5760 * 132 / 45 + 2880 * 132 / 23) / 989e12
    assert float(compute[1]) == pytest.approx(full) and float(compute[0]) == pytest.approx(full / 2)


def test_vllm_triton_steps_at_40_rows_an_expert():
    # vLLM's gpt-oss Triton experts (h100_sxm/moe/vllm/0.24.0/moe_perf.csv.gz): T = 256 takes 235.6 us (line
    # 807: 32 rows an expert) and T = 320 279.3 us (line 815: 40 rows): the plain rule's tile goes 32 -> 64 there,
    # where the ragged rule's stays at 64.
    s = shape(np.array([256.0, 320.0]))
    assert list(tiled_rows(s, PLAIN) / 32) == [32, 64]
    assert list(tiled_rows(s, RAGGED) / 32) == [64, 64]


def test_only_the_triton_mxfp4_entries_take_a_rule():
    assert triton_tile_constants("vllm", "mxfp4", False) == {"triton_block_m": PLAIN}
    assert triton_tile_constants("", "mxfp4", False) == {"triton_block_m": RAGGED}
    assert triton_tile_constants("", "mxfp4", True) == {}  # Blackwell: TensorRT-LLM runs CUTLASS
    for impl, dtype in (("vllm", "bf16"), ("vllm_marlin", "mxfp4"), ("", "fp8"), ("vllm_flashinfer", "fp8")):
        assert triton_tile_constants(impl, dtype, False) == {}
    assert entry_constants("moe/mxfp4", load_hardware("h100-sxm")) == {"triton_block_m": RAGGED}
    assert entry_constants("moe/mxfp4", load_hardware("b200")) == {}
    assert entry_constants("moe_vllm/mxfp4", load_hardware("h100-sxm")) == {"triton_block_m": PLAIN}
    assert entry_constants("gemm/bf16", load_hardware("h100-sxm")) == {}
    # No rule: the routed slots themselves, so every other entry's form is unchanged.
    s = shape(TOKENS)
    assert tiled_rows(s, 0.0) is s["slots"]
