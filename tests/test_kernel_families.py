"""Kernel families: the registry, fused-MoE routing features and forms, MLA forms, and their importers.

Hand derivations cite the aiconfigurator tables in /work/shared/measurements (fixtures copy the rows:
file and line in each test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from roofline.calibrate.kernels.fit import calibrate_op
from roofline.calibrate.kernels.importers import import_file
from roofline.kernels.forms import Hw
from roofline.kernels.lsq import Param
from roofline.kernels.moe import (
    moe_gemm_times,
    moe_time,
    parse_routing,
    router_rounds,
    routing_features,
    unfused_slot_bytes,
    wave_fill,
    weight_passes,
)
from roofline.kernels.predict import model_for, op_time_with
from roofline.kernels.registry import FAMILIES, KernelFamily, register, unregister
from roofline.kernels.schema import CalibrationError, from_records, validate
from roofline.model.weight_bytes import expected_experts_touched
from roofline.specs import load_hardware

AIC = Path(__file__).parent / "fixtures" / "measurements" / "aiconfigurator"
H100 = load_hardware("h100-sxm")
DEEPSEEK_MOE = {"n": 2048, "k": 7168, "num_experts": 256, "top_k": 8, "ep": 8, "tp": 1}


def test_moe_table_rows_import_with_their_layout():
    # h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz lines 110 and 115230-115235 (fixture).
    t = import_file(AIC / "h100_sxm" / "moe_perf.csv")
    assert len(t) == 7 and set(t["op"]) == {"moe"} and t.unique("hardware") == ["h100-sxm"]
    row = t.take(t["m"] == 32)
    assert row["dtype"][0] == "fp8_block" and row["routing"][0] == "balanced" and row["gated"][0] == 1
    assert (row["k"][0], row["n"][0], row["top_k"][0], row["num_experts"][0]) == (7168, 2048, 8, 256)
    assert (row["tp"][0], row["ep"][0]) == (1, 8)
    assert row["time_s"][0] == pytest.approx(482.896e-6)
    nongated = t.take(t["gated"] == 0)
    assert nongated["dtype"][0] == "fp8" and nongated["routing"][0] == "power_law_1.2"


def test_vllm_moe_rows_of_non_gated_models_import_as_non_gated():
    # h100_sxm/moe/vllm/0.24.0/moe_perf.csv.gz lines 19926, 24172 and 24345 (fixture): vLLM names only its kernel.
    # Nemotron-3 Ultra's latent experts (2048, 5120, top 22 of 512) are ReLU² with one up matrix, as the
    # TensorRT-LLM tables mark them (moe_torch_flow_nongated); DeepSeek-V3's (7168, 2048, top 8 of 256) are gated.
    t = import_file(AIC / "h100_sxm" / "vllm" / "moe_perf.csv")
    # One kernel family per kernel: FlashInfer's CUTLASS fused MoE (fp8_block at ep 8, ModelOpt fp8), Triton (bf16).
    assert len(t) == 3 and list(t["impl"]) == ["vllm_flashinfer", "vllm", "vllm_flashinfer"]
    assert list(t["k"]) == [7168, 2048, 2048] and list(t["gated"]) == [1, 0, 0]
    assert list(t["dtype"]) == ["fp8_block", "bf16", "fp8"]


def test_moe_import_skips_min_latency_and_w4a8_rows():
    # b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz lines 2 (min-latency), 1163 (w4a8), 25 (nvfp4 cutlass).
    t = import_file(AIC / "b200_sxm" / "moe_perf.csv")
    assert len(t) == 1 and t["dtype"][0] == "nvfp4" and t.unique("hardware") == ["b200"]


def test_mla_and_bmm_rows_import_as_their_own_ops():
    # generation_mla_perf.csv.gz line 2032: 128 heads, batch 64, step 4095 -> 4096 latent tokens read.
    dec = import_file(AIC / "h100_sxm" / "generation_mla_perf.csv")
    row = dec.take(dec["kv_len"] == 4096)
    assert row["op"][0] == "mla_decode" and row["head_dim"][0] == 576 and row["v_head_dim"][0] == 512
    assert row["num_kv_heads"][0] == 1 and row["time_s"][0] == pytest.approx(139.429e-6)
    # context_mla_perf.csv.gz line 1375: decompressed heads, query-key 128 + 64, value 128.
    pre = import_file(AIC / "h100_sxm" / "context_mla_perf.csv")
    assert pre["op"][0] == "mla_prefill" and (pre["head_dim"][0], pre["v_head_dim"][0]) == (192, 128)
    assert pre["q_len"][0] == pre["kv_len"][0] == 4096
    # mla_bmm_perf.csv.gz lines 2, 4, 161, 175: pre = 128 heads of [T,128]x[128,512]; fp8 is block-scaled.
    bmm = import_file(AIC / "h100_sxm" / "mla_bmm_perf.csv")
    assert set(bmm["op"]) == {"bmm"} and set(bmm["dtype"]) == {"bf16", "fp8_block"}
    assert set(bmm["batch"]) == {128} and set(bmm["k"]) == {128} and set(bmm["n"]) == {512}


def test_balanced_routing_is_the_collectors_even_spread():
    # The collector's balanced routing: token i takes experts i·32 / T + 32 j (T < 32) or i + 32 j, mod 256.
    # Rank 0 holds experts 0..31: at T = 1 only expert 0 (slot 1); T = 16 experts 0, 2, ..., 30 (16);
    # T = 48: 32 slots i + 0 (i < 32) and 16 wrapped ones (i + 224 - 256 for i >= 32) -> 48 slots, 32 experts.
    t = np.array([1.0, 16.0, 48.0])
    slots, active = routing_features(0.0, 0.0, t, 8, 256, 8)
    assert list(slots) == [1.0, 16.0, 48.0] and list(active) == [1.0, 16.0, 32.0]


def test_balanced_routing_wraps_where_top_k_strides_overrun_the_experts():
    # E 512, k 22 (the Nemotron-class non-gated rows): stride s = ⌈512/22⌉ = 24 and 22·24 = 528 > 512, so the spread
    # wraps; ep 16: rank 0 holds experts 0..31 (mean T·k/ep: 1.375 slots at T = 1, 22 at T = 16, 66 at T = 48).
    # T = 1: experts 0, 24, ..., 504 -> 0 and 24 are local: 2 slots, 2 experts.
    # T = 16 (< s): ids ⌊1.5 i⌋ + 24 j: j = 0 gives 16 (0, 1, 3, 4, ..., 21, 22); j = 1 gives 24 + ⌊1.5 i⌋ < 32 for
    # i <= 5: 6 (24, 25, 27, 28, 30, 31); j = 21 wraps, 504 + ⌊1.5 i⌋ - 512 for i >= 6: 10 (1, 2, 4, 5, ..., 13, 14).
    # 32 slots on 16 + 6 + 5 new (2, 5, 8, 11, 14) = 27 experts.
    # T = 48 (>= s): [24 j, 24 j + 48) mod 512 below 32: j = 0: 32, j = 1: 8, j = 20: 16, j = 21: 32 -> 88; all 32 busy.
    slots, active = routing_features(0.0, 0.0, np.array([1.0, 16.0, 48.0]), 22, 512, 16)
    assert list(slots) == [2.0, 32.0, 88.0] and list(active) == [2.0, 27.0, 32.0]
    # ep 128 (experts 0..3): one token still occupies a whole expert (expert 0), not 22/128 of one.
    slots, active = routing_features(0.0, 0.0, np.array([1.0]), 22, 512, 128)
    assert (float(slots[0]), float(active[0])) == (1.0, 1.0)


def test_grouped_gemm_tiles_fill_whole_waves_of_sms():
    # 74 tiles on 148 SMs: half the SMs busy; 148: one full wave; 160: two waves of 148 slots, 160/296 = 54 % busy;
    # 296: two full waves.  β = 0.5: the square roots.
    tiles = np.array([74.0, 148.0, 160.0, 296.0])
    assert np.allclose(wave_fill(tiles, 148.0, 1.0), [0.5, 1.0, 160 / 296, 1.0])
    assert np.allclose(wave_fill(tiles, 148.0, 0.5), np.sqrt([0.5, 1.0, 160 / 296, 1.0]))


def test_each_grouped_gemm_streams_at_its_own_waves_and_k_loop():
    # DeepSeek-V3 experts (fp8, 1 byte a weight), 32 active on an H100 (132 SMs, 3.35 TB/s), η_m = 1, β = 1:
    # gate/up 4096 columns over K 7168 -> 32 tiles each, 1,024 tiles = 8 waves of 132 (1,056 slots): fill 0.9697;
    # down 7168 columns over K 2048 -> 56 tiles each, 1,792 tiles = 14 waves (1,848 slots): fill 0.9697.
    # Weights 32·(4096·7168 + 7168·2048) = 1,409,286,144 B / (3.35e12 · 1024/1056) = 433.8 µs.
    s = {k: np.asarray(float(v)) for k, v in {**DEEPSEEK_MOE, "gated": 1, "width": 1, "active": 32, "slots": 0}.items()}
    hw = Hw(peak_flops=1.979e15, bandwidth=3.35e12, num_sms=132.0)
    p = {"memory_efficiency": 1.0, "compute_efficiency": 1.0, "fill_exponent": 1.0, "pad_tokens": 0.0, "num_sms": 132.0}
    weights, compute = moe_gemm_times(s, hw, {**p, "k_half": 0.0})
    assert float(weights) == pytest.approx(32 * (4096 * 7168 + 7168 * 2048) / (3.35e12 * 1024 / 1056), rel=1e-12)
    assert float(compute) == 0.0  # no slots, no padding
    # k_half = 7168: the gate/up GEMM (K 7168) takes 2x, the down GEMM (K 2048) 1 + 7168/2048 = 4.5x.
    slow, _ = moe_gemm_times(s, hw, {**p, "k_half": 7168.0})
    expected = 32 * (4096 * 7168 * 2.0 + 7168 * 2048 * 4.5) / (3.35e12 * 1024 / 1056)
    assert float(slow) == pytest.approx(expected, rel=1e-12)


def test_flashinfer_per_tensor_fp8_re_reads_its_weights_for_each_128_row_tile():
    # vLLM's ModelOpt fp8 experts through FlashInfer's CUTLASS MoE (h100_sxm/moe/vllm/0.24.0/moe_perf.csv.gz,
    # balanced, tp 1, ep 1): 4096 hidden, 2048 inter, top 8 of 256 take 7.54 ms at T = 4,096 (line 1446: 128 rows an
    # expert, one tile), 15.1 ms at 8,192 (line 1457: 256 rows, two), 30.0 ms at 16,384 (line 1473: 512 rows, four),
    # and 17.0 ms at 6,144 (line 1453: 192 rows, a second tile half full): each row tile streams the weights again.
    slots, active = routing_features(0.0, 0.0, np.array([4096.0, 6144.0, 8192.0, 16384.0]), 8, 256, 1)
    assert list(slots / active) == [128.0, 192.0, 256.0, 512.0]
    s = {"slots": slots, "active": active}
    assert list(weight_passes(s, 1.0)) == [1.0, 2.0, 2.0, 4.0]
    assert list(weight_passes(s, 0.5)) == [1.0, 1.5, 1.5, 2.5]
    assert list(weight_passes(s, 0.0)) == [1.0, 1.0, 1.0, 1.0]  # L2 serves every further tile
    # Only that kernel's entries fit the share; the others' forms read it as 0 (bit-identical to before).
    assert "weight_reread_share" in [p.name for p in model_for("moe_vllm_flashinfer/fp8").params]
    for key in ("moe/fp8", "moe_vllm/bf16", "moe_vllm_marlin/int4"):
        assert "weight_reread_share" not in [p.name for p in model_for(key).params]
    shape = {k: np.asarray(float(v)) for k, v in {**DEEPSEEK_MOE, "gated": 1, "width": 1, "ep": 1}.items()}
    # In the weight stream (DeepSeek-V3's experts, all 256 active): 128 rows an expert (one tile) against 384 (three):
    # the same time without a re-read, 3x with every tile re-reading.
    shape |= {"slots": np.asarray(32768.0), "active": np.asarray(256.0)}
    shape3 = {**shape, "slots": np.asarray(98304.0)}
    hw = Hw(peak_flops=1.979e15, bandwidth=3.35e12, num_sms=132.0)
    p = {"memory_efficiency": 1.0, "compute_efficiency": 1.0, "fill_exponent": 1.0, "pad_tokens": 0.0}
    p |= {"num_sms": 132.0, "k_half": 0.0}
    one, _ = moe_gemm_times(shape, hw, p)
    assert float(moe_gemm_times(shape3, hw, p)[0]) == float(one)
    assert float(moe_gemm_times(shape3, hw, {**p, "weight_reread_share": 1.0})[0]) == pytest.approx(3 * float(one))


def test_unfused_slot_bytes_are_every_routed_slots_intermediates():
    # DeepSeek-V3 experts, 64 tokens, top 8, tp 1: per slot the gate/up output 2·2048 is written and read back
    # (8192), the activation writes 2048, the down GEMM writes 7168 and the top-k sum reads them (14336):
    # 24,576 bf16 values = 49,152 B; 64·8 slots -> 25,165,824 B, on every EP rank (ep does not enter).
    s = {k: np.asarray(float(v)) for k, v in {**DEEPSEEK_MOE, "m": 64, "gated": 1}.items()}
    assert float(unfused_slot_bytes(s)) == 64 * 8 * 49152
    # One up matrix (non-gated): 2·2048 + 2048 + 2·7168 = 20,480 values per slot.
    assert float(unfused_slot_bytes({**s, "gated": np.asarray(0.0)})) == 64 * 8 * 20480 * 2


def test_router_selects_top_k_in_warp_rounds_over_the_expert_logits():
    # k rounds of a warp arg-max, each lane ⌈E/32⌉ logits a round: DeepSeek-V3 (256 experts, top 8) 8·8 = 64;
    # Nemotron-class (512, top 22) 22·16 = 352; 160 experts top 8: 8·5 = 40; Mixtral (8, top 2): 2·1 = 2.
    s = {"top_k": np.array([8.0, 22.0, 8.0, 2.0]), "num_experts": np.array([256.0, 512.0, 160.0, 8.0])}
    assert list(router_rounds(s)) == [64.0, 352.0, 40.0, 2.0]
    # In the layer's time: one token, tiny experts, every other cost zeroed: overhead + 352 rounds at 50 ns.
    one = {**{k: np.asarray(float(v)) for k, v in DEEPSEEK_MOE.items()}, "top_k": np.asarray(22.0)}
    one |= {"num_experts": np.asarray(512.0), "m": np.asarray(1.0), "gated": np.asarray(1.0), "width": np.asarray(0.0)}
    one |= {"slots": np.asarray(0.0), "active": np.asarray(1.0)}
    p = {"memory_efficiency": 1.0, "compute_efficiency": 1.0, "overhead_s": 2e-5, "overlap_exponent": 2.0}
    p |= {"router_s_per_token": 0.0, "permute_bandwidth_bytes_per_s": 1e12, "pad_tokens": 0.0, "fill_exponent": 1.0}
    p |= {"k_half": 0.0, "slot_bandwidth_bytes_per_s": np.inf, "router_s_per_round": 5e-8, "num_sms": 132.0}
    hw = Hw(peak_flops=1.979e15, bandwidth=3.35e12, num_sms=132.0)
    assert float(moe_time(one, hw, p)) == pytest.approx(2e-5 + 352 * 5e-8, rel=1e-12)


def test_uniform_routing_reuses_the_expert_union_formula():
    t = np.array([1.0, 64.0, 4096.0])
    slots, active = routing_features(1.0, 0.0, t, 8, 256, 8)
    assert np.allclose(active, expected_experts_touched(256, 8, t) / 8)
    assert np.allclose(slots, t * 8 / 8)


def test_power_law_busiest_gpu_carries_at_least_the_mean_and_one_gpu_carries_all():
    t = np.geomspace(1, 65536, 9)
    slots, active = routing_features(2.0, 1.01, t, 8, 256, 8)
    assert np.all(slots >= t - 1e-9) and np.all(active <= 32) and np.all(active >= 1)
    one, _ = routing_features(2.0, 1.2, t, 8, 256, 1)  # a single GPU holds every expert: all T·k slots
    assert np.allclose(one, 8 * t)
    assert parse_routing("power_law_1.2") == (2.0, 1.2)
    with pytest.raises(CalibrationError, match="routing 'zipf' is unknown"):
        parse_routing("zipf")


def test_moe_ideal_roofline_is_the_hand_derivation_and_below_the_measured_layer():
    # DeepSeek-V3 experts on ep 8 (fixture line 115235): 32 tokens spread evenly -> 32 active local experts of
    # 3·7168·2048 fp8_block weights (1 + 4/128² bytes each) = 44.06 MB; at 3.35 TB/s: 32 · 13.15 µs = 420.8 µs.
    # The kernel measures 482.9 µs: the ideal roofline is a floor under it.
    t = op_time_with(H100, "moe/fp8_block", None, {**DEEPSEEK_MOE, "m": 32.0})
    expert = 3 * 7168 * 2048 * (1 + 4 / 128**2)
    assert float(t) == pytest.approx(32 * expert / 3.35e12, rel=1e-9)
    assert float(t) < 482.896e-6


def test_mla_decode_ideal_roofline_is_the_hand_derivation():
    # generation_mla_perf.csv.gz line 2032: batch 64, 4096 latent tokens of 576 bf16 values, 128 heads.
    # Latent 64·4096·576·2 = 302.0 MB + queries/outputs 64·128·(576+512)·2 = 17.8 MB -> 95.5 µs at 3.35 TB/s;
    # FLOPs 2·64·128·4096·1088 = 73.0 GFLOP -> 73.8 µs at 989 TFLOP/s; the read binds.  Measured 139.4 µs.
    shape = {"batch": 64.0, "kv_len": 4096.0, "num_heads": 128.0, "head_dim": 576.0, "v_head_dim": 512.0}
    t = float(op_time_with(H100, "mla_decode/bf16", None, shape))
    assert t == pytest.approx((64 * 4096 * 576 * 2 + 64 * 128 * 1088 * 2) / 3.35e12, rel=1e-9)
    assert t < 139.429e-6


def _toy_time(s, hw: Hw, p):
    """overhead + m·width / (BW η): a copy kernel."""
    return p["overhead_s"] + s["m"] * s["width"] / (hw.bandwidth * p["memory_efficiency"])


def test_a_toy_family_from_outside_the_package_is_read_fitted_and_predicted():
    toy = KernelFamily(
        name="toy_copy",
        time=_toy_time,
        params=(Param("overhead_s", 1e-6, 1e-9, 1e-3), Param("memory_efficiency", 0.5, 0.05, 1.5)),
        inputs=("m",),
        spec_time=lambda s, hw, ach: s["m"] * s["width"] / hw.bandwidth,
        range_column="m",
        range_max=2**20,
        source="test: a toy copy kernel",
    )
    register(toy)
    try:
        m = np.geomspace(1e3, 1e9, 40)
        rows = [
            {
                "hardware": "h100-sxm",
                "op": "toy_copy",
                "dtype": "bf16",
                "m": v,
                "time_s": 2e-6 + v * 2 / (3.35e12 * 0.8),
            }
            for v in m
        ]
        table = validate(from_records(rows), "toy")
        fit = calibrate_op("toy_copy/bf16", table, H100)
        assert fit.params["memory_efficiency"] == pytest.approx(0.8, rel=1e-3)
        assert fit.params["overhead_s"] == pytest.approx(2e-6, rel=1e-3)
        t = op_time_with(H100, "toy_copy/bf16", fit.params, {"m": 1e6})
        assert float(t) == pytest.approx(2e-6 + 2e6 / (3.35e12 * 0.8), rel=1e-3)
    finally:
        unregister("toy_copy")
    assert "toy_copy" not in FAMILIES


def test_a_family_must_name_schema_columns_and_a_spec_form():
    with pytest.raises(CalibrationError, match="inputs must be measurement number columns"):
        register(KernelFamily(name="bad", time=_toy_time, params=(), inputs=("tokens",), spec_time=_toy_time))
    with pytest.raises(CalibrationError, match="no spec-sheet form"):
        register(KernelFamily(name="bad", time=_toy_time, params=(), inputs=("m",)))


def test_moe_term_is_zero_without_tokens_and_names_its_source():
    from roofline.deploy import chip_rates
    from roofline.terms.moe import MoeShape, moe_layer, routing_for

    rates = chip_rates(H100)
    moe = MoeShape(7168, 2048, 8, 256, ep=8, dtype="fp8_block", routing=routing_for("balanced"))
    term = moe_layer(rates, moe, np.array([0.0, 32.0]))
    assert term.time_s[0] == 0.0 and term.weight_bytes[0] == 0.0
    # uniform routing of 32 tokens: 256·(1 − (1 − 8/256)^32)/8 = 20.3 active local experts of 44.06 MB each
    active = 256 * (1 - (1 - 8 / 256) ** 32) / 8
    assert term.active_experts[1] == pytest.approx(active)
    assert term.weight_bytes[1] == pytest.approx(active * 3 * 7168 * 2048 * (1 + 4 / 128**2))
    assert "spec sheet" in term.source and "routing uniform" in term.source
    assert routing_for("power_law", 1.2) == "power_law_1.2"


def test_a_missing_family_entry_names_the_entry_that_priced_it():
    from roofline.deploy.families import family_time_s
    from roofline.specs import hardware_from_dict

    data = H100.model_dump()
    params = {p.name: p.init for p in FAMILIES["moe"].params} | {"num_sms": 132.0}
    data["calibration"] = {"source": "test", "ops": {"moe/fp8": {"params": params, "rows": 10}}}
    hw = hardware_from_dict(data, "test")
    shape = {**DEEPSEEK_MOE, "m": 64.0, "routing": "balanced"}
    _, exact = family_time_s(hw, "moe", "fp8", **shape)
    t, borrowed = family_time_s(hw, "moe", "fp8_block", **shape)
    assert exact == "calibrated profile (moe/fp8, 10 rows)"
    assert borrowed == "calibrated profile (moe/fp8, 10 rows at fp8_block bytes and rate: no moe/fp8_block entry)"
    _, spec = family_time_s(hw, "moe", "bf16", **shape)
    assert spec.startswith("spec sheet") and "profile has no moe/bf16 entry" in spec
    assert float(t) > 0


def test_an_entry_fitted_before_the_form_changed_says_what_priced_it():
    from roofline.deploy.families import family_time_s
    from roofline.kernels.forms import roofline_time
    from roofline.kernels.moe import FAMILY
    from roofline.specs import hardware_from_dict

    data = H100.model_dump()
    params = {p.name: p.init for p in FAMILY.params if p.name not in ("k_half", "slot_bandwidth_bytes_per_s")}
    data["calibration"] = {"source": "test", "ops": {"moe/fp8": {"params": params | {"num_sms": 132.0}, "rows": 10}}}
    shape = {**DEEPSEEK_MOE, "m": 64.0, "routing": "balanced"}
    t, source = family_time_s(hardware_from_dict(data, "test"), "moe", "fp8", **shape)
    assert source == (
        "calibrated profile (moe/fp8, 10 rows; fitted before the form had k_half, slot_bandwidth_bytes_per_s: "
        "its constant-efficiency roofline (refit it))"
    )
    # The fallback: max(FLOPs/(peak η_c), bytes/(BW η_m)) + overhead at the entry's η_c 0.6, η_m 0.9, 25 µs.
    # Balanced, 64 tokens top 8 on ep 8: rank 0 computes 64 slots over its 32 experts (44.06 MB of fp8 each).
    flops = 2 * 64 * 3 * 7168 * 2048
    nbytes = 32 * 3 * 7168 * 2048 * 1.0
    assert float(t) == pytest.approx(
        float(roofline_time(flops, nbytes, Hw(1.979e15, 3.35e12, 132.0), 0.6, 0.9, 2.5e-5))
    )


def test_gemm_formats_take_their_own_entry_or_name_the_one_that_priced_them():
    from roofline.deploy.kernels import coverage

    cal = load_hardware("h100-sxm-cal")  # gemm/bf16, gemm/fp8 and gemm_fp8_block/fp8 (H100 GEMM table)
    assert coverage(cal, "gemm", "fp8_block") == "calibrated profile (gemm_fp8_block/fp8, 29,268 rows)"
    data = cal.model_dump()
    data["calibration"]["ops"].pop("gemm_fp8_block/fp8")
    from roofline.specs import hardware_from_dict

    lacking = hardware_from_dict(data, "test")
    assert coverage(lacking, "gemm", "fp8_block") == (
        "calibrated profile (gemm/fp8, 35,700 rows; "
        "gemm/fp8 entry at fp8_block bytes and rate (no fp8_block GEMM entry))"
    )


def test_achievable_spec_sheet_scales_the_peaks_and_adds_named_kernel_floors():
    from roofline.deploy import chip_rates, deployment
    from roofline.deploy.rates import at_achievable
    from roofline.specs import load_model
    from roofline.terms import decode_work, step_terms

    rates = at_achievable(chip_rates(H100))
    assert rates.flops_per_s == pytest.approx(0.78 * 989e12)  # hardware/h100-sxm.yaml achievable.flops_fraction.bf16
    assert rates.hbm_bandwidth_bytes_per_s == pytest.approx(0.80 * 3.35e12)  # achievable.hbm_fraction
    assert rates.achievable.startswith("spec sheet at h100-sxm's achievable defaults")
    dep = deployment(load_model("llama-3-8b"), H100, rates=rates)
    # Llama-3-8B: 32 layers of 4 weight GEMMs (QKV, O, gate+up, down) and one decode attention kernel, + the LM
    # head: 32 · (4 · 3.6 µs + 8.1 µs) + 3.6 µs = 723.6 µs of floors (achievable.floor_s gemm, attention).
    t = step_terms(dep, decode_work(8, 1024))
    assert float(t.overhead_s) == pytest.approx(32 * (4 * 3.6e-6 + 8.1e-6) + 3.6e-6)
    book = step_terms(deployment(load_model("llama-3-8b"), H100), decode_work(8, 1024))
    assert float(book.overhead_s) == 0.0 and chip_rates(H100).flops_per_s == 989e12
