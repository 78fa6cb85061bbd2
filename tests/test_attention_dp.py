"""Attention data-parallel with expert parallelism, MLA's replicated latent, per-component compute precision.

Hand derivations use DeepSeek-V3's config.json shape (61 layers, 3 dense, 256 routed experts of d_ff 2048,
top-8, d_model 7168, MLA latent 512 + rope 64) and the H200 spec sheet (4.8 TB/s, 989 TFLOP/s bf16).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.errors import OptionError
from roofline.deploy import Precision, deployment
from roofline.deploy.layout import parallelism
from roofline.specs import load_hardware, load_model
from roofline.terms import decode_work, step_terms
from roofline.terms.step import active_params_by_component
from tests.inprocess import assert_refused, run_roofline
from tests.profiles import at_most

DS = load_model("deepseek-v3")
H200 = load_hardware("h200")
FP8 = Precision("fp8", "bf16", "bf16")
#: MLA cache per token: (512 + 64) x 61 layers x 2 bytes (bf16).
KV_PER_TOKEN = (512 + 64) * 61 * 2
#: Routed expert parameters: 58 MoE layers x 256 experts x 3 matrices x 7168 x 2048.
ROUTED = 58 * 256 * 3 * 7168 * 2048


def test_layout_degrees_from_tp_and_ep():
    wide = parallelism(8, tp=1, ep=8, num_experts=256)
    assert (wide.attention_dp, wide.moe_tp, wide.group_chips) == (8, 1, 8)
    mixed = parallelism(8, tp=2, ep=8, num_experts=256)
    assert (mixed.attention_dp, mixed.moe_tp, mixed.group_chips) == (4, 1, 8)
    old = parallelism(8, tp=8, ep=2, num_experts=256)  # ep divides tp: the layout of before, unchanged
    assert (old.attention_dp, old.moe_tp, old.group_chips) == (1, 4, 8)
    explicit = parallelism(16, tp=2, ep=4, attention_dp=4, num_experts=256)  # experts split 2 ways
    assert (explicit.attention_dp, explicit.moe_tp, explicit.group_chips) == (4, 2, 8)
    assert parallelism(16, tp=1, ep=8, num_experts=256).group_chips == 8  # two replicas of 8


@pytest.mark.parametrize(
    ("chips", "kwargs", "words"),
    [
        (4, {"tp": 1, "ep": 8}, "must divide chips=4"),
        (24, {"tp": 4, "ep": 6, "num_experts": 384}, "ep=6 must divide tp=4 or be a multiple of it"),
        # The experts first: whatever the chips, 6 or 3 experts' worth of chips cannot share 256 experts.
        (8, {"tp": 4, "ep": 6}, r"^ep=6 does not divide the model's 256 routed experts; allowed: a divisor of 256 "),
        (3, {"tp": 1, "ep": 3}, r"^ep=3 does not divide the model's 256 routed experts; allowed: .*\(1, 2, 4, 8,"),
        (
            8,
            {"tp": 1, "ep": 8, "attention_dp": 4},
            r"^ep=8 must divide tp=1 x attention_dp=4 = 4 chips \(the chips a stage spreads its experts over\); "
            r"allowed: 1, 2, 4$",
        ),
        (8, {"tp": 1, "ep": 16, "attention_dp": 8}, "ep=16 must divide"),
    ],
)
def test_layout_refusals(chips, kwargs, words):
    with pytest.raises(OptionError, match=words):
        parallelism(chips, **{"num_experts": 256, **kwargs})


def test_attention_dp_on_a_dense_model_is_refused():
    with pytest.raises(OptionError, match="changes nothing"):
        parallelism(8, tp=1, attention_dp=8, num_experts=1)


def test_held_weights_replicate_the_dense_part_per_rank():
    # fp8: one byte a parameter.  Dense part = 671,026,404,352 - ROUTED = 17,117,633,536 bytes; eight ranks
    # hold it eight times and the experts once.
    dep = deployment(DS, H200, 8, FP8, tp=1, ep=8)
    assert dep.weight_bytes == 671_026_404_352
    assert dep.held_weight_bytes == 671_026_404_352 + 7 * (671_026_404_352 - ROUTED)
    assert deployment(DS, H200, 8, FP8, tp=8, ep=8).held_weight_bytes == dep.weight_bytes


def test_mla_latent_is_replicated_on_every_tp_chip():
    # Batch 64 at 2048 tokens: 64 x 2048 x 70,272 bytes of latent.  tp 8: each chip reads all of it
    # (9.21 GB / 4.8 TB/s = 1.919 ms); attention DP 8: each chip its 8 sequences' share (0.240 ms).
    work = decode_work(64.0, 2048.0)
    latent = 64 * 2048 * KV_PER_TOKEN
    tp8 = step_terms(deployment(DS, H200, 8, FP8, tp=8, achievable=False), work)
    dp8 = step_terms(deployment(DS, H200, 8, FP8, tp=1, ep=8, achievable=False), work)
    assert float(tp8.kv_time_s) == pytest.approx(latent / 4.8e12, rel=1e-12)
    assert float(dp8.kv_time_s) == pytest.approx(latent / 8 / 4.8e12, rel=1e-12)
    # Memory: tp 8 holds 8 copies of every sequence's latent; attention DP one.
    from roofline.analyses.step import step_from

    assert step_from(deployment(DS, H200, 8, FP8, tp=8), 64, 2048).replica_kv_bytes == 8 * latent
    assert step_from(deployment(DS, H200, 8, FP8, tp=1, ep=8), 64, 2048).replica_kv_bytes == latent


def test_wide_ep_exchanges_routed_tokens_by_all_to_all():
    # tp 1, ep 8: no all-reduce; each of the 58 MoE layers dispatches and combines 64 tokens x top-8 x 7168
    # x 2 bytes = 7,340,032 bytes.
    t = step_terms(deployment(DS, H200, 8, FP8, tp=1, ep=8), decode_work(64.0, 2048.0))
    assert float(t.comms_bytes) == pytest.approx(58 * 2 * 64 * 8 * 7168 * 2, rel=1e-12)
    assert "alltoall" in t.sources["comms"]


@given(batch=st.integers(1, 512), context=st.integers(1, 32768))
@at_most(20)
def test_a_rank_reads_what_one_chip_of_its_busiest_share_reads(batch, context):
    # Attention DP 8 over 8 chips: the KV read time is the busiest rank's ceil(B/8) sequences over one chip.
    dp8 = step_terms(deployment(DS, H200, 8, FP8, tp=1, ep=8), decode_work(float(batch), float(context)))
    one = step_terms(deployment(DS, H200, 1, FP8), decode_work(float(np.ceil(batch / 8)), float(context)))
    assert float(dp8.kv_time_s) == pytest.approx(float(one.kv_time_s), rel=1e-12)


def test_expert_compute_dtype_halves_the_expert_matmul_time():
    # Routed experts active per token: ROUTED x 8 / 256.  At fp8 their FLOPs run at the fp8 peak (1979 TFLOP/s
    # on the H200 sheet, the bf16 one 989), so the compute time drops by 2 x 64 x active x (1/989 - 1/1979)
    # per TFLOP/s; the rest is unchanged.
    active = ROUTED * 8 / 256
    assert active_params_by_component(deployment(DS, H200, 1))["experts"] == active
    work = decode_work(64.0, 2048.0)
    bf16 = step_terms(deployment(DS, H200, 1, Precision(), achievable=False), work)
    mixed = step_terms(
        deployment(DS, H200, 1, Precision(compute_components=(("experts", "fp8"),)), achievable=False), work
    )
    drop = 2 * 64 * active * (1 / 9.89e14 - 1 / 1.979e15)
    assert float(bf16.compute_time_s) - float(mixed.compute_time_s) == pytest.approx(drop, rel=1e-9)


def test_step_cli_accepts_attention_dp_and_reports_it():
    run = run_roofline(
        "step", "--model", "deepseek-r1", "--hardware", "h200", "--chips", "8", "--tp", "1", "--ep", "8", "--json"
    )
    assert run.code == 0, run.stderr
    import json

    data = json.loads(run.stdout)
    assert (data["attention_dp"], data["moe_tp"], data["ep"], data["tp"]) == (8, 1, 8, 1)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--model", "deepseek-r1", "--chips", "4", "--tp", "1", "--ep", "8"), ("--ep 8", "--chips 4")),
        (
            ("--model", "deepseek-r1", "--chips", "3", "--tp", "1", "--ep", "3"),
            ("--ep 3 does not divide", "256 routed experts", "allowed: a divisor of 256"),
        ),
        (
            ("--model", "llama-3-8b", "--chips", "8", "--tp", "1", "--attention-dp", "8"),
            ("changes nothing", "give --tp 1"),
        ),
        (("--model", "llama-3-8b", "--weights", "bf16,experts=fp8"), ("experts=fp8", "no routed experts")),
        (("--model", "llama-3-8b", "--compute-dtype", "bf16,lm_head=fp8,experts=fp8"), ("no routed experts",)),
        (("--model", "deepseek-r1", "--compute-dtype", "nvfp4"), ("h100-sxm", "nvfp4")),
    ],
)
def test_bad_layouts_and_dtypes_are_one_line_and_exit_2(args, words):
    hardware = "h100-sxm" if "nvfp4" in args else "h200"
    assert_refused(run_roofline("step", "--hardware", hardware, *args), *words)


def test_nvfp4_compute_is_refused_on_mi355x_but_mxfp4_runs():
    # The refusal lists what the chip runs (it used to advise adding nvfp4 to a file that marks it unsupported).
    assert_refused(
        run_roofline("step", "--model", "deepseek-r1", "--hardware", "mi355x", "--compute-dtype", "bf16,experts=nvfp4"),
        "--hardware mi355x cannot run nvfp4 matmuls (its matrix units do not take it",
        "unsupported_dtypes",
        "allowed: fp32, bf16, fp16, fp8, int8, fp4, mxfp4, fp8_block",
    )
    h100 = run_roofline(
        "step", "--model", "deepseek-r1", "--hardware", "h100-sxm", "--compute-dtype", "nvfp4", "--json"
    )
    assert_refused(h100, "--compute-dtype nvfp4: --hardware h100-sxm cannot run nvfp4 matmuls", "no nvfp4 FLOP/s")
    assert "allowed: fp32, tf32, bf16, fp16, fp8, int8, fp8_block" in h100.stderr
    ok = run_roofline(
        "step", "--model", "deepseek-r1", "--hardware", "mi355x", "--compute-dtype", "bf16,experts=mxfp4", "--json"
    )
    assert ok.code == 0, ok.stderr


def test_sweep_expert_layouts_equal_decode_step_bit_for_bit():
    from roofline.analyses.step import decode_step
    from roofline.analyses.sweep.run import decode_sweep

    got = decode_sweep(DS, [H200], [1, 64, 256], [8, 16], [2048], ("fp8",), ("bf16",), tp=[1, 8], ep=[8])
    assert set(zip(got.columns["tp"], got.columns["ep"], got.columns["attention_dp"], strict=True)) == {
        (1, 8, 8),
        (8, 8, 1),
    }
    for row in got.rows():
        ref = decode_step(DS, H200, row["chips"], row["batch"], row["context"], FP8, tp=row["tp"], ep=row["ep"])
        assert row["step_time_s"] == float(ref.step_time_s)


def test_plan_tries_wide_expert_parallelism_for_moe_models():
    from roofline.analyses.lengths import fixed_lengths
    from roofline.analyses.plan.capacity import plan

    kwargs = {"weights": ("fp8",), "kv_dtypes": ("bf16",), "max_chips": 8, "tpot_slo_s": 0.05}
    res = plan(DS, [H200], 20.0, fixed_lengths(1000, 1000), **kwargs)
    layouts = {(c.tp, c.ep, c.attention_dp) for c in res.candidates}
    assert (1, 8, 8) in layouts  # attention data-parallel over the 8 chips, experts over all of them
    assert all(c.chips_per_replica == c.tp * c.attention_dp for c in res.candidates)


def test_dense_models_keep_the_books_roofline():
    # No MoE or MLA layer: no operator term, the rates at the spec sheet's peaks (every dense figure unchanged).
    llama = load_model("llama-3-8b")
    dep = deployment(llama, H200, 1)
    assert dep.rates.achievable == "" and dep.rates.flops_per_s == 9.89e14
    t = step_terms(dep, decode_work(8.0, 1024.0))
    assert float(t.moe_time_s) == float(t.mla_time_s) == 0.0 and "moe" not in t.sources


def test_moe_and_mla_terms_make_up_the_step():
    # DeepSeek on the spec sheet: the GEMM time is the dense GEMMs plus the fused-MoE operator, attention is the
    # MLA term, both named in the sources with the achievable defaults they ran at (H200 YAML: HBM x 0.80).
    dep = deployment(DS, H200, 8, FP8, tp=1, ep=8)
    assert dep.rates.hbm_bandwidth_bytes_per_s == pytest.approx(0.80 * 4.8e12, rel=1e-12)
    t = step_terms(dep, decode_work(64.0, 2048.0))
    assert float(t.gemm_time_s) == float(t.dense_gemm_s) + float(t.moe_time_s)
    assert float(t.attention_decode_s) == float(t.mla_time_s) > float(t.mla_bmm_s) > 0
    assert float(t.moe_comms_s) > 0
    assert "achievable" in t.sources["moe"] and "achievable" in t.sources["mla"]
    # Balanced routing of 64 x 8 slots over 256 experts touches every expert: each of the 8 chips streams its
    # 32 experts (3 x 7168 x 2048 bytes each, fp8) per layer at no more than 0.80 x 4.8 TB/s.
    balanced = step_terms(deployment(DS, H200, 8, FP8, tp=1, ep=8, moe_routing="balanced"), decode_work(64.0, 2048.0))
    floor = 58 * 32 * 3 * 7168 * 2048 / (0.80 * 4.8e12)
    assert float(balanced.moe_time_s) >= floor


def test_step_json_names_the_operator_terms():
    import json

    run = run_roofline(
        "step", "--model", "deepseek-r1", "--hardware", "h200", "--chips", "8", "--tp", "1", "--ep", "8", "--json"
    )
    data = json.loads(run.stdout)
    terms = data["terms"]
    assert terms["gemm_s"] == pytest.approx(terms["dense_gemm_s"] + terms["moe_s"], rel=1e-12)
    assert terms["attention_s"] == terms["mla_s"] and terms["moe_comms_s"] > 0
    assert {"moe", "mla", "achievable"} <= set(data["sources"])
    assert_refused(
        run_roofline("step", "--model", "deepseek-r1", "--hardware", "h200", "--moe-routing", "zipf"), "zipf"
    )


PLAN = ("--qps", "1", "-i", "1000", "-o", "100", "--tpot-slo", "50ms")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        # plan used to drop an --ep it could not use and answer with ep 8 (its wide-EP layouts) instead.
        (("plan", "--ep", "3", *PLAN), ("--ep 3 does not divide the model's 256 routed experts", "allowed: a divisor")),
        (("plan", "--ep", "16", *PLAN), ("--ep 16: no slice the plan tries has a multiple of 16 chips", "1 to 8")),
        (("sweep", "--chips", "6", "--tp", "1", "--ep", "6"), ("--ep 6 does not divide", "256 routed experts")),
        (("pareto", "--chips", "8", "--tp", "1", "--ep", "3,8"), ("--ep 3 does not divide", "256 routed experts")),
        # A degree that divides the experts but no chip count of the sweep: say why.
        (
            ("sweep", "--chips", "8", "--tp", "1", "--ep", "16"),
            ("no degree in [16] fits chips=[8]", "16 does not divide 8"),
        ),
    ],
)
def test_plan_sweep_and_pareto_refuse_an_expert_degree_they_cannot_use(args, words, tmp_path):
    out = tmp_path / "out.csv"
    run = run_roofline(args[0], "--model", "deepseek-r1", "--hardware", "h200", *args[1:], "--csv", str(out), "--json")
    assert_refused(run, *words)
    assert not out.exists()


def test_plan_still_takes_an_expert_degree_a_slice_holds():
    run = run_roofline(
        "plan", "--model", "deepseek-r1", "--hardware", "h200", "--tp", "1", "--ep", "8", *PLAN, "--json"
    )
    assert run.code == 0, run.stderr
    import json

    best = json.loads(run.stdout)["best"]
    assert (best["ep"], best["chips_per_replica"]) == (8, 8)


@pytest.mark.parametrize("command", [("plan", *PLAN), ("sweep",), ("pareto",)])
def test_a_component_item_in_a_dtype_list_says_lists_take_whole_model_dtypes(command, tmp_path):
    # --weights of plan/sweep/pareto is a list of dtypes to try; 'experts=fp8' was an 'unknown dtype'.
    out = tmp_path / "out.csv"
    run = run_roofline(
        command[0], "--model", "deepseek-r1", "--hardware", "h200", *command[1:], "--weights", "bf16,experts=fp8",
        "--csv", str(out),
    )  # fmt: skip
    assert_refused(run, "--weights: 'experts=fp8' is a component=dtype item", "whole-model dtypes", "allowed: fp32")
    assert not out.exists()
