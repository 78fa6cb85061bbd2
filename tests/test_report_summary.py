"""The report's answers: points served at an interactivity target, the best of them, what binds,
frontier ratios for --compare, hardware entries, the default scenario and the load curves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.compare import best_at_least, frontier_ratio
from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.sweep.run import decode_sweep
from roofline.analyses.targets import (
    ChipSetup,
    Target,
    cheapest,
    concurrency_rate,
    fastest,
    prefill_of,
    served,
    what_binds,
)
from roofline.core.errors import OptionError, RooflineError
from roofline.specs import load_hardware, load_model

from .profiles import at_most

LENGTHS = fixed_lengths(2048, 256)


@pytest.fixture(scope="module")
def h100_points() -> tuple:
    """llama-3-8b on one H100 (spec sheet), batches 1..64 at the workload's decode context 2176."""
    model, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    sweep = decode_sweep(model, [hw], (1, 8, 16, 32, 64), (1,), (2176,), memory_utilization=1.0)
    prefill = prefill_of(model, sweep, {"h100-sxm": ChipSetup(hw)}, LENGTHS, 1.0)
    return sweep, prefill, concurrency_rate(sweep, prefill, LENGTHS)


def test_workload_context_is_the_decode_mean() -> None:
    # Every decode step of a 2048-in/256-out request sees 2048..2303 cached tokens: mean 2048 + 256/2.
    assert LENGTHS.decode_context == 2176


def test_served_point_follows_the_queueing_model_by_hand(h100_points: tuple) -> None:
    sweep, prefill, full = h100_points
    s = served(sweep, prefill, full, LENGTHS, Target(ttft_slo_s=1.0, tpot_slo_s=0.05))
    i = 0  # batch 1: the rate that fills it is the binding limit (both targets are loose)
    lam, S, step = float(s.rate_per_replica[i]), float(prefill.mean_s[i]), float(sweep.columns["step_time_s"][i])
    assert int(s.limit[i]) == 0 and lam == pytest.approx(float(full[i]))
    rho = lam * S  # prefill shares the chip with decode (plan's model): ρ = λ·E[S]
    ttft = S + lam * S**2 / (2 * (1 - rho))  # M/G/1 (fixed lengths: E[S²] = E[S]²)
    tpot = step / (1 - rho)
    assert s.ttft_s[i] == pytest.approx(ttft, rel=1e-9) and s.tpot_s[i] == pytest.approx(tpot, rel=1e-9)
    # Little's law at the full rate: one sequence in flight, λ·(TTFT + 255·TPOT) = 1.
    assert lam * (ttft + 255 * tpot) == pytest.approx(1.0, rel=1e-6)
    # One H100 at $3/h: $/Mtok = 3 / (λ·256 tokens · 3600 s) · 1e6; tokens/s per chip = λ·256.
    assert s.cost_per_million_tokens[i] == pytest.approx(3.0 / (lam * 256 * 3600) * 1e6, rel=1e-9)
    assert s.tokens_per_s_per_chip[i] == pytest.approx(lam * 256, rel=1e-9)


def test_prefill_is_the_prompt_step_and_compute_bound(h100_points: tuple) -> None:
    # A 2048-token prompt of llama-3-8b on one H100: ~3.2e13 FLOPs (2 x 7.5e9 matmul parameters x 2048
    # + causal attention 2·I²·d·L = 1.1e12) at 989 TFLOP/s is ~32 ms, against 16 GB of weights at 3.35 TB/s
    # = 4.8 ms: compute-bound, and the same for every batch of the slice (one request's prefill).
    _, prefill, _ = h100_points
    assert np.all(prefill.mean_s == prefill.mean_s[0]) and set(prefill.bound) == {"compute"}
    assert 0.030 < prefill.mean_s[0] < 0.037


def test_tight_targets_cap_the_rate_and_none_meets_impossible_ones(h100_points: tuple) -> None:
    sweep, prefill, full = h100_points
    # TPOT 6 ms: batches 1 and 8 (steps 4.9 and 5.5 ms) meet it only by lowering their rate; 16+ cannot.
    s = served(sweep, prefill, full, LENGTHS, Target(1.0, 0.006))
    assert list(s.meets) == [True, True, False, False, False]
    assert int(s.limit[1]) == 2 and s.tpot_s[1] == pytest.approx(0.006, rel=1e-9)
    # TTFT below one prompt's prefill (~34 ms) or TPOT below one batch-1 step: nothing meets.
    assert not served(sweep, prefill, full, LENGTHS, Target(0.02, 0.05)).meets.any()
    assert cheapest(served(sweep, prefill, full, LENGTHS, Target(1.0, 0.004))) is None


@given(ttft=st.floats(0.03, 5.0), tpot=st.floats(0.004, 0.2), shrink=st.floats(0.3, 1.0))
@at_most(30)
def test_best_points_are_best_and_tighter_targets_never_cheaper(
    h100_points: tuple, ttft: float, tpot: float, shrink: float
) -> None:
    sweep, prefill, full = h100_points
    s = served(sweep, prefill, full, LENGTHS, Target(ttft, tpot))
    i, j = cheapest(s), fastest(s)
    if i is None:
        assert j is None and not s.meets.any()
        return
    ok = s.meets
    assert s.cost_per_million_tokens[i] <= s.cost_per_million_tokens[ok].min()
    assert s.tokens_per_s_per_chip[j] >= s.tokens_per_s_per_chip[ok].max()
    assert np.all(s.ttft_s[ok] <= ttft * (1 + 1e-9)) and np.all(s.tpot_s[ok] <= tpot * (1 + 1e-9))
    tighter = served(sweep, prefill, full, LENGTHS, Target(ttft * shrink, tpot * shrink))
    k = cheapest(tighter)
    assert k is None or tighter.cost_per_million_tokens[k] >= s.cost_per_million_tokens[i] * (1 - 1e-12)


def test_what_binds_memory_and_targets() -> None:
    # llama-2-13b bf16 on one H100 at context 8192 (all of HBM): weights 26.03e9 B, KV 6.711e9 B per
    # sequence, (80e9 - 26.03e9) / 6.711e9 = 8.04 -> batch 8 fits, 16 does not (tests/test_report.py).
    model, hw = load_model("llama-2-13b"), load_hardware("h100-sxm")
    lengths = fixed_lengths(8192 - 128, 256)  # decode context 8192 - 128 + 128 = 8192
    sweep = decode_sweep(model, [hw], (1, 4, 8, 16), (1,), (8192,), memory_utilization=1.0)
    assert list(sweep.columns["batch"]) == [1, 4, 8]
    prefill = prefill_of(model, sweep, {"h100-sxm": ChipSetup(hw)}, lengths, 1.0)
    full = concurrency_rate(sweep, prefill, lengths)
    loose = served(sweep, prefill, full, lengths, Target(60.0, 1.0))
    best = cheapest(loose)
    assert best == 2 and what_binds(sweep, loose, best) == "memory"
    # TPOT just under batch 8's step: batch 8 cannot meet it at any rate, so batch 4 is the cheapest and
    # the target is what stops a larger batch.
    steps = sweep.columns["step_time_s"]
    tpot = served(sweep, prefill, full, lengths, Target(60.0, float(steps[2]) * 0.999))
    assert not tpot.meets[2] and cheapest(tpot) == 1 and what_binds(sweep, tpot, 1) == "TPOT SLO"
    # TTFT 5% above one prompt's prefill: prompts may barely queue, so that target caps the rate of every
    # batch that could carry more (4 and 8; batch 1 fills first), the cheapest's included.
    ttft = served(sweep, prefill, full, lengths, Target(float(prefill.mean_s[0]) * 1.05, 1.0))
    assert ttft.limit.tolist() == [0, 1, 1] and what_binds(sweep, ttft, int(cheapest(ttft))) == "TTFT SLO"


def test_target_must_be_positive_seconds() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(OptionError, match="tpot_slo_s"):
            Target(1.0, bad)


# --------------------------------------------------------------------------- frontier ratios (--compare)


def test_best_at_least_by_hand() -> None:
    # Points (interactivity, throughput): (1, 10), (2, 8), (4, 5).  At >= 0.5 and >= 1 the best is 10,
    # at >= 1.5: 8 (only x = 2 and 4 qualify), at >= 3 and >= 4: 5, at >= 5: none.
    x, y = [1.0, 2.0, 4.0], [10.0, 8.0, 5.0]
    got = best_at_least(x, y, [0.5, 1.0, 1.5, 3.0, 4.0, 5.0])
    assert got[:5].tolist() == [10.0, 10.0, 8.0, 5.0, 5.0] and np.isnan(got[5])
    # A minimised y (cost rising with interactivity): the cheapest among x >= u.
    cost = best_at_least(x, [1.0, 2.0, 4.0], [0.5, 1.5, 3.0], maximize=False)
    assert cost.tolist() == [1.0, 2.0, 4.0]


@given(
    st.lists(st.tuples(st.floats(0.1, 1e3), st.floats(0.1, 1e6)), min_size=1, max_size=30),
    st.floats(0.1, 10.0),
)
def test_scaled_frontier_ratio_is_the_scale(points: list[tuple[float, float]], k: float) -> None:
    x, y = (np.array(v) for v in zip(*points, strict=True))
    r = frontier_ratio(x, y, x, k * y)
    assert r.levels.size and np.allclose(r.ratio, k) and r.median_ratio == pytest.approx(k)


def test_disjoint_frontiers_have_no_ratio() -> None:
    r = frontier_ratio([1.0, 2.0], [5.0, 4.0], [10.0, 20.0], [5.0, 4.0])
    assert r.levels.size == 0 and np.isnan(r.median_ratio)


# --------------------------------------------------------------------------- entries and the default scenario


def test_hardware_entries_parse_engine_and_layout() -> None:
    from roofline.views.report.entries import parse_entry
    from roofline.views.report.scenario import hardware_refs

    e = parse_entry("h200-cal@trtllm/1.0:tp=8,weights=fp8")
    assert (e.ref, e.engine, e.fixed) == ("h200-cal", "trtllm/1.0", {"tp": 8, "weights": "fp8"})
    assert parse_entry("h200:tp=4:kv=fp8").fixed == {"tp": 4, "kv": "fp8"}
    refs = hardware_refs(["h100-sxm-cal@trtllm/0.5.0", "h100-sxm-cal@trtllm/1.0", "h200:tp=8", "h200:tp=4"])
    assert [r.label for r in refs] == [
        "h100-sxm-cal@trtllm/0.5.0",
        "h100-sxm-cal@trtllm/1.0",
        "h200:tp=8",
        "h200:tp=4",
    ]
    assert refs[0].calibrated and refs[1].engine == "trtllm/1.0" and not refs[2].calibrated
    for bad, match in (
        ("h200:tp=0", "tp must be a whole number"),
        ("h200:tp=9999999999", "tp must be a whole number"),
        ("h200:batch=8", "key one of tp, ep, chips, pp, weights, kv, compute"),
        ("h200:weights=fp9", "unknown dtype 'fp9'"),
        ("@trtllm/1.0", "cannot read"),
        ("h200@", "cannot read"),
    ):
        with pytest.raises(RooflineError, match=match):
            parse_entry(bad)


def test_default_scenario_is_todays_models_and_chips() -> None:
    from roofline.views.report.scenario import Scenario

    scenario = Scenario()
    models = [load_model(m) for m in scenario.models]
    dense = [m for m in models if m.num_experts <= 1]
    # A current dense model in two sizes (one family), a MoE model and an MLA+MoE model.
    assert len(dense) == 2 and dense[0].name.rsplit("-", 1)[0] == dense[1].name.rsplit("-", 1)[0]
    assert dense[0].d_model != dense[1].d_model
    assert any(m.num_experts > 1 and not m.kv_lora_rank for m in models)
    assert any(m.num_experts > 1 and m.kv_lora_rank for m in models)
    refs = scenario.hardware_refs()
    names = {r.spec.name.removesuffix("-cal") for r in refs}
    assert {"h100-sxm", "h200", "b200", "mi300x"} <= names and any(r.spec.kind == "tpu" for r in refs)
    # The built-in calibrated profile and an engine entry wherever one ships.
    from roofline.specs.catalog import hardware_names

    shipped = {n for n in hardware_names() if n.endswith("-cal")}
    for r in refs:
        if f"{r.spec.name.removesuffix('-cal')}-cal" in shipped:
            assert r.calibrated and r.engine is not None, r.label


# --------------------------------------------------------------------------- load curves (the tails section)


def test_load_curve_rises_to_saturation() -> None:
    from roofline.analyses.step import Precision
    from roofline.analyses.tails import RATE_FRACTIONS, TailSetup, ladder, load_curve

    lengths = fixed_lengths(512, 64)
    setup = TailSetup(load_model("llama-3-8b"), load_hardware("h100-sxm"), 1, 1, Precision(), 16, lengths)
    # At full load about one batch of arrivals fills the replica (Little's law): 16 warm-up requests, raised to
    # 20, then at least 200 measured; at a third of it, 16 / 3 -> 6 -> 20 again.
    assert (setup.warmup(), setup.requests()) == (20, 220) and setup.requests(1 / 3) == 220
    big = TailSetup(load_model("llama-3-8b"), load_hardware("h100-sxm"), 1, 1, Precision(), 400, lengths)
    assert (big.warmup(0.5), big.requests(0.5), big.requests(1.3)) == (200, 400, 800)
    rates = ladder(10.0)
    assert rates.tolist() == pytest.approx([10.0 * f for f in RATE_FRACTIONS])
    curve = load_curve(setup, [2.0, 60.0])
    assert np.all(curve.ttft_p99_s >= curve.ttft_p50_s) and np.all(curve.tpot_p99_s >= curve.tpot_p50_s)
    # 2 requests/s of 64 tokens on one H100 is light load; 60/s is far past what batch 16 carries
    # (16 sequences x 64 tokens at ~5 ms a step: about 16 / 0.35 s = 46 requests/s at most).
    assert curve.saturated.tolist() == [False, True]
    assert curve.ttft_p50_s[1] > 10 * curve.ttft_p50_s[0]
    with pytest.raises(OptionError, match="full_rate"):
        ladder(0.0)


def test_summary_answers_carry_their_tiers_bands() -> None:
    """Each answer's p10-p90 is its served figure times the shipped held-out ratios of its chip entry's tier
    (read here straight from roofline/data/bands.yaml: exp of the log ratio at levels 0.1 and 0.9)."""
    import math

    import yaml

    from roofline.deploy.bands import BANDS_FILE, TIERS
    from roofline.views.report.runs import model_run
    from roofline.views.report.scenario import Scenario, hardware_refs
    from roofline.views.report.summary import ANY_DTYPE, answers, with_band

    refs = hardware_refs(["h100-sxm", "h100-sxm-cal", "h100-sxm-cal@vllm"])
    assert [r.data_tier for r in refs] == list(TIERS)  # spec sheet; fitted kernels; kernels + engine entry
    scenario = Scenario(models=("llama-2-7b",), hardware=(), weights=("bf16",), batch=(8, 64), chips=(1,), tails=False)
    run = model_run("llama-2-7b", refs, scenario)
    tiers = yaml.safe_load(BANDS_FILE.read_text())["tiers"]
    found = answers(run, refs, scenario, Target(scenario.ttft_slo_s, scenario.tpot_slo_s), ANY_DTYPE)
    for ref in refs:
        pick = found.per_chip[ref.label]
        assert pick is not None and pick.tier == ref.data_tier
        band = tiers[ref.data_tier]["tpot_s"]
        lo, hi = (math.exp(band["log_ratios"][band["levels"].index(q)]) for q in (0.1, 0.9))
        tpot = float(pick.result.tpot_s[pick.index])
        got = pick.as_dict()["bands"]["tpot_s"]
        assert (got["p10"], got["p90"]) == pytest.approx((tpot * lo, tpot * hi), rel=1e-9)
        shown = f'{tpot * 1e3:.1f}<br><span class="band">({tpot * lo * 1e3:.1f}–{tpot * hi * 1e3:.1f})</span>'
        assert with_band(tpot, got, 1e3, ".1f") == shown
