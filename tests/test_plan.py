"""Capacity planning: closed-form inverse questions, queueing, the search, lengths, the CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import averaged_request, fixed_lengths, from_points, parse_lengths, read_lengths_csv
from roofline.analyses.plan import capacity as plan
from roofline.analyses.step import request
from roofline.core.errors import RooflineError
from roofline.deploy import Precision, deployment
from roofline.model import memory
from roofline.specs import load_hardware, load_model
from tests.conftest import run_cli, run_json
from tests.profiles import at_most

V5E_BW, V5E_BF16 = 8.2e11, 1.97e14


def test_kv_crossover_batch_llama2_13b():
    # LLaMA-2-13B bf16 at 8192 tokens: P_bytes = 2·13.015e9 = 26.03 GB; KV_seq = 2·2·40·40·128·8192
    # = 6.71 GB, so KV reads pass weight reads at B = 26.03 / 6.71 = 3.88 (the book: KV dominates
    # its table from batch 8 on).
    m = load_model("llama-2-13b")
    weights = memory.param_counts(m).total * 2.0
    kv_seq = float(memory.kv_cache_bytes_per_sequence(m, 8192, 2.0))
    assert plan.kv_crossover_batch(weights, kv_seq) == pytest.approx(3.88, abs=0.01)


def test_bandwidth_and_chips_for_tpot():
    # Memory-bound: B=1, no KV, 26e9 weight bytes in 4 ms -> 6.5e12 B/s.
    assert plan.bandwidth_for_tpot(4e-3, 1, 0.0, 26e9, 1e-5) == pytest.approx(6.5e12)
    # Compute side binds: B·KV = 1e9 B, compute 3 ms of a 4 ms target -> 1e9 / 1e-3 = 1e12 B/s,
    # above (1e9 + 1e8)/4e-3 = 2.75e11.
    assert plan.bandwidth_for_tpot(4e-3, 1, 1e9, 1e8, 3e-3) == pytest.approx(1e12)
    assert math.isinf(float(plan.bandwidth_for_tpot(4e-3, 1, 1e9, 1e8, 5e-3)))
    # LLaMA-2-13B on one v5e at batch 1: 26.03e9 / 8.2e11 = 31.7 ms; a 5 ms target needs 7 chips.
    assert plan.chips_for_tpot(26.03e9 / V5E_BW, 5e-3) == 7


@at_most(25)
@given(tpot=st.floats(2e-3, 0.1), chips=st.sampled_from([1, 2, 4, 8]), context=st.integers(128, 8192))
def test_largest_batch_within_inverts_the_step_model(tpot, chips, context):
    # Invariant: step(B_max) ≤ T < step(B_max + 1), both from the step model itself (a search, no formula).
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    b = plan.largest_batch_within(m, hw, chips, context, Precision(), tpot, limit=4096)
    from roofline.analyses.step import decode_step

    if b >= 1:
        assert float(decode_step(m, hw, chips, b, context).step_time_s) <= tpot
    if b < 4096:
        assert float(decode_step(m, hw, chips, b + 1, context).step_time_s) > tpot


def test_mg1_wait_matches_md1():
    # M/D/1 with S = 1 s, λ = 0.5/s: Wq = ρ/(2μ(1-ρ)) = 0.5/(2·1·0.5) = 0.5 s.
    assert plan.mg1_wait_s(0.5, 1.0, 1.0) == pytest.approx(0.5)
    assert math.isinf(float(plan.mg1_wait_s(1.0, 1.0, 1.0)))
    # Fixed-length requests (E[S²] = E[S]²) reduce to the serving module's M/D/1 wait.
    from roofline.formulas.serving import md1_wait_s

    assert plan.mg1_wait_s(3.0, 0.2, 0.04) == pytest.approx(md1_wait_s(3.0, 0.2))


@at_most(60)
@given(s=st.floats(1e-3, 1.0), cv=st.floats(0.0, 2.0), slack=st.floats(1.01, 20.0))
def test_rate_for_ttft_is_the_exact_inverse(s, cv, slack):
    s2 = s * s * (1 + cv * cv)
    slo = s * slack
    rate = float(plan.rate_for_ttft(slo, s, s2))
    assert s + float(plan.mg1_wait_s(rate, s, s2)) == pytest.approx(slo, rel=1e-9)


@at_most(40)
@given(batch=st.integers(1, 1024), s=st.floats(1e-3, 0.5), t=st.floats(1e-3, 0.1), n=st.integers(1, 2000))
def test_rate_for_concurrency_fills_the_batch(batch, s, t, n):
    # Little's law: at the returned rate the sequences in flight equal the batch (bisection tolerance).
    rate = float(plan.rate_for_concurrency(batch, s, s * s, t, n))
    assert float(plan.sequences_in_flight(rate, s, s * s, t, n)) == pytest.approx(batch, rel=1e-6)
    assert float(plan.sequences_in_flight(rate * 1.001, s, s * s, t, n)) > batch


def test_replicas_and_cost():
    assert plan.replicas_needed(10.0, 3.0) == 4
    assert plan.replicas_needed(9.0, 3.0) == 3
    assert math.isinf(float(plan.replicas_needed(1.0, 0.0)))
    # $12/h for 10 req/s × 256 output tokens: 12 / (2560·3600) · 1e6 = $1.302.
    assert plan.cost_per_million_output_tokens(12.0, 10.0, 256) == pytest.approx(1.30208, rel=1e-4)


def test_plan_single_chip_by_hand():
    # LLaMA-3-8B, bf16, one H100, 1 req/s of 1000 in / 100 out: one chip carries it.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    res = plan.plan(
        m, [hw], qps=1.0, lengths=fixed_lengths(1000, 100), max_chips=1, weights=["bf16"], kv_dtypes=["bf16"]
    )
    best = res.best
    assert (best.chips_per_replica, best.replicas, best.dollars_per_hour) == (1, 1, 3.0)
    # $3/h over 100 output tokens per second: 3 / (100·3600) · 1e6 = $8.33 per million.
    assert best.cost_per_million_output_tokens == pytest.approx(8.3333, rel=1e-4)
    # Prefill of 1000 tokens is compute-bound: 2·8.03e9·1000 (+ attention) / 9.89e14 ≈ 16.3 ms.
    assert best.prefill_s == pytest.approx(2 * 8.03e9 * 1000 / 9.89e14, rel=0.03)
    assert best.sequences_per_replica <= best.batch
    assert best.rate_per_replica * best.replicas == pytest.approx(1.0)


@pytest.mark.slow
def test_plan_tighter_targets_never_cheaper_and_infeasible_is_named():
    m, hw = load_model("llama-3-8b"), [load_hardware("h100-sxm"), load_hardware("tpu-v5e")]
    lengths = fixed_lengths(2048, 256)
    costs = [
        plan.plan(m, hw, qps=20, lengths=lengths, tpot_slo_s=slo, top=1).best.dollars_per_hour
        for slo in (0.1, 0.03, 0.015)
    ]
    assert costs == sorted(costs)
    more = [plan.plan(m, hw, qps=q, lengths=lengths, top=1).best.dollars_per_hour for q in (5, 50, 200)]
    assert more == sorted(more) and more[-1] > more[0]
    none = plan.plan(m, hw, qps=20, lengths=lengths, tpot_slo_s=1e-6)
    assert none.best is None and none.reasons["TPOT SLO"] > 0
    with pytest.raises(RooflineError, match="^qps: must be"):
        plan.plan(m, hw, qps=0, lengths=lengths)


def test_binding_constraint_names():
    limits = {"concurrency": 1.0, "TTFT SLO": 2.0, "TPOT SLO": 3.0}
    assert plan.binding_constraint(limits, False, np.inf, None) == "memory"
    assert plan.binding_constraint(limits, True, 0.2, 0.1) == "TPOT SLO"
    assert plan.binding_constraint(limits, True, 0.05, 0.1) == "qps"
    assert plan.binding_constraint({**limits, "TTFT SLO": 0.5}, True, 0.05, 0.1) == "TTFT SLO"


def test_lengths_distribution(tmp_path):
    d = from_points([100, 1000], [10, 100], [1, 1])
    # Decode-step-weighted context: (10·(100+5) + 100·(1000+50)) / (10 + 100) = 106050/110 = 964.09.
    assert d.decode_context == pytest.approx(964.0909, rel=1e-6)
    assert (d.mean_input, d.mean_output, d.max_context) == (550.0, 55.0, 1100.0)
    p = parse_lengths("512:128:3,4096:512:1")
    assert p.weight.tolist() == [0.75, 0.25]
    csv = tmp_path / "lengths.csv"
    csv.write_text("input_len,output_len,count\n100,10,1\n1000,100,1\n")
    assert read_lengths_csv(csv).decode_context == pytest.approx(d.decode_context)
    csv.write_text("prompt,completion\n1,2\n")
    with pytest.raises(RooflineError, match="header must have input_len,output_len"):
        read_lengths_csv(csv)
    with pytest.raises(RooflineError, match="^lengths: cannot read '512-128'"):  # the CLI says --lengths
        parse_lengths("512-128")


def test_request_averaged_over_a_distribution():
    # One vectorised request() over the points, weighted, equals the weighted per-point values.
    from roofline.analyses.lengths import weighted_mean
    from roofline.analyses.step import request

    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    d = from_points([512, 4096], [128, 512], [0.7, 0.3])
    together = float(weighted_mean(request(m, hw, d.input_len, d.output_len).ttft_s, d.weight))
    apart = 0.7 * float(request(m, hw, 512, 128).ttft_s) + 0.3 * float(request(m, hw, 4096, 512).ttft_s)
    assert together == pytest.approx(apart, rel=1e-12)
    means = averaged_request(deployment(m, hw, 2), d)
    assert means["ttft_s"] == pytest.approx(
        0.7 * float(request(m, hw, 512, 128, chips=2).ttft_s) + 0.3 * float(request(m, hw, 4096, 512, chips=2).ttft_s)
    )
    assert means["input_len"] == pytest.approx(0.7 * 512 + 0.3 * 4096)


def test_plan_cli_json_and_errors(tmp_path):
    out = run_json(
        "plan",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm,tpu-v5e",
        "--qps",
        "10",
        "-i",
        "1024",
        "-o",
        "128",
        "--tpot-slo",
        "40ms",
        "--ttft-slo",
        "1s",
        "--explain",
    )
    best = out["best"]
    assert best["tpot_s"] <= 0.04 and best["ttft_s"] <= 1.0
    assert best["binding"] in ("memory", "TTFT SLO", "TPOT SLO", "qps")
    assert best["replicas"] * best["rate_per_replica"] == pytest.approx(10.0)
    assert any(e["name"] == "replicas" for e in out["explain"])
    csv = tmp_path / "l.csv"
    csv.write_text("input_len,output_len\n512,64\n2048,256\n")
    out = run_json("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--qps", "2", "--lengths-csv", str(csv))
    assert out["mean_input_len"] == 1280 and out["best"] is not None
    proc = run_cli("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--qps", "2")
    assert proc.returncode == 2 and "--input-len" in proc.stderr and proc.stdout == ""
    proc = run_cli(
        "plan",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--qps",
        "2",
        "-i",
        "10",
        "-o",
        "10",
        "--tpot-slo",
        "fast",
    )
    assert proc.returncode == 2 and "--tpot-slo" in proc.stderr


def test_inverse_questions_by_hand():
    # LLaMA-2-13B, 8x v5e, B = 16 at 8192 tokens: step 20.3 ms (the book's table).
    ans = plan.inverse_questions(
        load_model("llama-2-13b"), load_hardware("tpu-v5e"), 8, 16, 8192, 0.010, memory_utilization=1.0
    )  # the book's accounting: all of HBM
    # Longest context: (8·16 GiB - 26.03 GB) / 16 sequences / 819,200 B per token = 8499 tokens.
    assert ans.longest_context_tokens == 8499
    # Bandwidth for 10 ms: (16·6.71e9 + 26.03e9) / 0.01 = 1.334e13 B/s (memory side binds).
    assert ans.bandwidth_for_tpot_bytes_per_s == pytest.approx((16 * 6.7109e9 + 26.03e9) / 0.01, rel=1e-3)
    # Every term scales as 1/chips: 8 chips · 20.3 ms / 10 ms = 16.3 -> 17 chips.
    assert ans.chips_for_tpot == 17
    # Largest batch in 10 ms on 8 chips: (0.01·6.56e12 - 26.03e9) / 6.71e9 = 5.9 -> 5.
    assert ans.max_batch_for_tpot == 5 and ans.max_batch_for_memory == 16


@pytest.mark.slow
def test_command_examples_run_as_shown():
    import re
    import shlex

    from roofline.views.cli.diff import diff_command
    from roofline.views.cli.model_import import model_import
    from roofline.views.cli.plan import inverse_command, plan_command

    for func in (plan_command, inverse_command, diff_command, model_import):
        match = re.search(r"Example: (roofline [^\n]+)", func.__doc__ or "")
        assert match, func.__name__
        proc = run_cli(*shlex.split(match.group(1))[1:])
        assert proc.returncode == 0, (func.__name__, proc.stderr)


def test_memory_binds_when_the_weights_set_the_slice():
    # DeepSeek-V3 in int8: 671.03e9 bytes of weights; a B200 holds 180 GB of which an engine uses 0.9
    # (162 GB), so 4 chips (648 GB) are too few and the smallest power-of-two slice is 8 (1,296 GB):
    # memory sets the deployment.  With all of HBM (the book's accounting) 4 chips (720 GB) suffice.
    res = plan.plan(
        load_model("deepseek-v3"),
        [load_hardware("b200")],
        qps=1,
        lengths=fixed_lengths(1024, 128),
        weights=["int8"],
        kv_dtypes=["bf16"],
        top=1,
    )
    assert (res.best.chips_per_replica, res.best.replicas, res.best.binding) == (8, 1, "memory")
    res = plan.plan(
        load_model("deepseek-v3"),
        [load_hardware("b200")],
        qps=1,
        lengths=fixed_lengths(1024, 128),
        weights=["int8"],
        kv_dtypes=["bf16"],
        top=1,
        memory_utilization=1.0,
    )
    assert (res.best.chips_per_replica, res.best.binding) == (4, "memory")


def test_best_per_hardware_matches_single_chip_plans():
    m, lengths = load_model("llama-3-8b"), fixed_lengths(2048, 256)
    chips = [load_hardware("h100-sxm"), load_hardware("tpu-v5e")]
    both = plan.plan(m, chips, qps=20, lengths=lengths, tpot_slo_s=0.03, top=1)
    for hw in chips:
        alone = plan.plan(m, [hw], qps=20, lengths=lengths, tpot_slo_s=0.03, top=1).best
        assert both.best_per_hardware[hw.name].dollars_per_hour == alone.dollars_per_hour
    assert both.best.dollars_per_hour == min(d.dollars_per_hour for d in both.best_per_hardware.values())


def test_request_cli_averages_over_lengths(tmp_path):
    fixed = [
        run_json("request", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", str(i), "-o", str(o))
        for i, o in ((512, 128), (4096, 512))
    ]
    mixed = run_json("request", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--lengths", "512:128:3,4096:512:1")
    # Weights 3:1 -> 0.75 and 0.25 of each per-request estimate.
    for key in ("ttft_s", "latency_s", "input_len"):
        assert mixed[key] == pytest.approx(0.75 * fixed[0][key] + 0.25 * fixed[1][key])
    proc = run_cli(
        "request", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--lengths", "512:128,4096:512", "--explain"
    )
    assert proc.returncode == 2 and "--explain" in proc.stderr


def test_plan_at_a_percentile_is_sized_by_simulation():
    # The closed form screens; the simulator re-sizes the cheapest candidates so p99 meets the SLOs.
    from roofline.analyses.plan.percentile import plan_at_percentile

    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    res, sized = plan_at_percentile(
        m,
        [hw],
        4.0,
        fixed_lengths(512, 64),
        "p99",
        ttft_slo_s=0.5,
        tpot_slo_s=0.03,
        candidates=2,
        requests=300,
        workers=1,
    )
    assert res.best is not None and res.best.binding == "p99 by simulation"
    assert res.best.ttft_s <= 0.5 and res.best.tpot_s <= 0.03
    assert all(s.replicas >= s.candidate.replicas for s in sized)  # never fewer than the closed form
    with pytest.raises(RooflineError, match="percentile must be one of p50, p90, p99"):
        plan_at_percentile(m, [hw], 4.0, fixed_lengths(512, 64), "p95")


def test_plan_with_a_profiles_engine_names_it_and_is_slower():
    # --engine picks the profile's engine entry: its terms (here a known 1 ms step overhead) slow every
    # decode step, so the plan's TPOT is at least 1 ms above the kernel-only plan's at the same deployment.
    from roofline.specs import hardware_from_dict

    data = load_hardware("h100-sxm-cal").model_dump(exclude_none=True)
    data.pop("engine", None)
    entry = {"step_overhead_s": 1e-3}
    kernels_only = hardware_from_dict(data)
    hw = hardware_from_dict({**data, "engine": {"mine/1": entry, "other/2": entry}})
    lengths = fixed_lengths(1024, 128)
    plain = plan.plan(
        load_model("llama-3-8b"), [kernels_only], qps=2, lengths=lengths, top=1, weights=["bf16"], kv_dtypes=["bf16"]
    )
    slow = plan.plan(
        load_model("llama-3-8b"),
        [hw],
        qps=2,
        lengths=lengths,
        top=1,
        weights=["bf16"],
        kv_dtypes=["bf16"],
        engine="mine/1",
    )
    assert "calibrated engine mine/1" in slow.sources[f"engine:{hw.name}"]
    assert slow.best.decode_step_s >= 1e-3 and slow.best.decode_step_s > plain.best.decode_step_s


def test_plan_holds_the_longest_request_as_request_does():
    # LLaMA-3-8B bf16 on one H100 (72 GB usable): 16.06 GB of weights + 350,000 tokens × 131,072 B of
    # KV is 61.9 GB, but the prompt's prefill also reserves 350,000 × (2·4096 + 2·14336)·2 B = 25.8 GB
    # of activations: 87.7 GB, so neither request nor plan puts it on one chip.  At 200,000 tokens
    # (16.06 + 26.2 + 14.7 = 57.0 GB) both do.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    for prompt, fits in ((350_000, False), (200_000, True)):
        assert bool(request(m, hw, prompt, 100).fits) is fits
        res = plan.plan(
            m,
            [hw],
            qps=0.1,
            lengths=fixed_lengths(prompt, 100),
            max_chips=1,
            weights=["bf16"],
            kv_dtypes=["bf16"],
            tp=[1],
            top=1,
        )
        assert (res.best is not None) is fits
        if not fits:
            assert res.reasons["memory"] > 0
