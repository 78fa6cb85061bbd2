"""A day of load: the load profile, scheduled autoscaling with the weight-load delay, the day plan and its CLI."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.plan.capacity import PlanConfig, SearchSpace, Targets, plan
from roofline.analyses.plan.day import DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S, Autoscaling, level_hours, plan_day
from roofline.analyses.plan.load_profile import (
    diurnal_profile,
    diurnal_rate,
    flat_profile,
    make_profile,
    read_load_profile,
)
from roofline.analyses.plan.shapes import candidate_shapes
from roofline.core.errors import OptionError
from roofline.specs import load_hardware, load_model
from tests.conftest import run_cli, run_json
from tests.profiles import at_most

ONE_SHAPE = SearchSpace(max_chips=1, batches=(64,), weights=("bf16",), kv_dtypes=("bf16",))
TARGETS = Targets(1.0, 0.05)


def test_level_hours_by_hand():
    # Four 6-hour slots needing 1, 3, 2, 1 replicas, a 0.5 h load time.  Level 1 runs all day (24 h);
    # level 2 runs slots 1-2 (12 h) and is idle 12 h, longer than a restart: +0.5 h; level 3 runs slot 1
    # (6 h), idle 18 h: +0.5 h.  Replica-hours 6·(1+3+2+1) + 1.0 = 43.
    total, warm = level_hours(np.array([[1, 3, 2, 1]]), np.full(4, 6.0), np.array([0.5]))
    assert (total[0], warm[0]) == (43.0, 1.0)
    # A dip shorter than the load time keeps the replica: 2, 1, 2, 1 replicas over 6, 0.5, 6, 11.5 h with a
    # 1 h load: level 2 idles 0.5 h (kept, +0.5) and 11.5 h (restart, +1): 36 busy + 1.5 = 37.5.
    total, warm = level_hours(np.array([[2, 1, 2, 1]]), np.array([6.0, 0.5, 6.0, 11.5]), np.array([1.0]))
    assert (total[0], warm[0]) == (37.5, 1.5)
    # The day is a cycle: a level on in the last and the first slot runs through midnight without a restart.
    total, _ = level_hours(np.array([[2, 1, 1, 2]]), np.full(4, 6.0), np.array([0.5]))
    assert total[0] == 36.0 + 0.5


@at_most(40)
@given(
    reps=st.lists(st.integers(0, 6), min_size=1, max_size=12),
    delay=st.floats(0.0, 30.0),
)
def test_level_hours_bounds(reps, delay):
    # Invariants: never below the busy replica-hours; no delay -> exactly busy; a delay longer than any gap
    # keeps every level that runs at all through the whole day: max(n) x 24 h.
    n = np.array([reps])
    hours = np.full(len(reps), 24.0 / len(reps))
    busy = float((n * hours).sum())
    total, warm = level_hours(n, hours, np.array([delay]))
    assert total[0] == pytest.approx(busy + warm[0])
    assert total[0] >= busy - 1e-9
    assert level_hours(n, hours, np.array([0.0]))[0][0] == pytest.approx(busy)
    assert level_hours(n, hours, np.array([24.0]))[0][0] == pytest.approx(max(reps) * 24.0)


def test_day_plan_by_hand():
    # LLaMA-3-8B, one H100, batch 64, bf16, 1024 in / 128 out: one shape, whose replica carries λ req/s.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    lengths = fixed_lengths(1024, 128)
    lam = float(candidate_shapes(m, [hw], [lengths], TARGETS, ONE_SHAPE).rate[0, 0])
    assert 70 / 3 < lam < 35  # so 10, 70, 100, 40 req/s need 1, 3, 4, 2 replicas (ceil(rate/λ))
    profile = make_profile([0, 6, 12, 18], [10, 70, 100, 40])
    day = plan_day(m, [hw], profile, lengths, PlanConfig(TARGETS, ONE_SHAPE))
    assert day.best.replicas == [1, 3, 4, 2]
    # A replica loads 16.06e9 bytes of bf16 weights at 1,000 MiB/s: 16.06e9 / 1.048576e9 = 15.32 s.
    delay_h = 16.0605e9 / DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S / 3600
    assert day.best.scale_up_delay_s == pytest.approx(delay_h * 3600, rel=1e-4)
    # Levels 2, 3 and 4 each start once a day: 6·(1+3+4+2) + 3·delay replica-hours at $3 per chip-hour.
    assert day.best.replica_hours == pytest.approx(60 + 3 * delay_h)
    assert day.best.cost_per_day == pytest.approx(3.0 * (60 + 3 * delay_h))
    # A fixed fleet sized for the peak: 4 replicas all day, 4 · 24 · $3 = $288.
    assert day.fixed_fleet.cost_per_day == pytest.approx(288.0)
    assert all(s.meets_slo for s in day.schedule)
    # At least two replicas: slot 0 runs 2; level 2 never stops, levels 3 and 4 start once: 66 + 2·delay.
    two = plan_day(m, [hw], profile, lengths, PlanConfig(TARGETS, ONE_SHAPE), Autoscaling(min_replicas=2))
    assert two.best.replicas == [2, 3, 4, 2]
    assert two.best.replica_hours == pytest.approx(66 + 2 * delay_h)


def test_flat_profile_is_the_steady_plan():
    # Consistency: a flat day is the steady plan all day: the same shape, replicas in every slot, 24 x $/h.
    m, hws = load_model("llama-3-70b"), [load_hardware("h100-sxm"), load_hardware("h200")]
    lengths = fixed_lengths(2048, 256)
    steady = plan(m, hws, 10.0, lengths, 2.0, 0.05).best
    day = plan_day(m, hws, flat_profile(10.0), lengths, PlanConfig(Targets(2.0, 0.05))).best
    assert day.shape == steady
    assert day.replicas == [steady.replicas] * 24
    assert day.cost_per_day == pytest.approx(24 * steady.dollars_per_hour, rel=1e-12)
    assert day.warmup_replica_hours == 0.0


def test_diurnal_shape():
    # The built-in shape: f·peak at 04:00, the peak at 16:00, the mean of trough and peak at 10:00 and 22:00.
    assert diurnal_rate(np.array([4.0, 16.0, 10.0, 22.0]), 10.0, 0.3) == pytest.approx([3.0, 10.0, 6.5, 6.5])
    p = diurnal_profile(10.0, 0.3)
    assert len(p) == 24 and p.hours.tolist() == [1.0] * 24
    # Each hourly slot is sized for the highest rate within it: 15:00-16:00 and 16:00-17:00 reach the peak.
    assert p.rate[15] == p.rate[16] == 10.0 and p.rate.min() == pytest.approx(diurnal_rate(np.array([3.0]), 10, 0.3)[0])


def write(tmp_path, text, name="day.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_load_profile_reader(tmp_path):
    p = read_load_profile(write(tmp_path, "start_hour,rate\n0,5\n8,20\n20,10\n"))
    assert p.hours.tolist() == [8.0, 12.0, 4.0] and p.rate.tolist() == [5.0, 20.0, 10.0]
    # A first slot after midnight: the last one wraps round to it (22:00 -> 06:00 is 8 h).
    p = read_load_profile(
        write(tmp_path, "start_hour,rate,input_len,output_len,max_replicas\n6,1,512,64,\n22,2,4096,256,3\n")
    )
    assert p.hours.tolist() == [16.0, 8.0] and p.lengths[1].mean_input == 4096
    assert p.max_replicas[0] == np.inf and p.max_replicas[1] == 3


@pytest.mark.parametrize(
    "text, needle",
    [
        ("start_hour,rate\n0,-3\n", "column 'rate' is '-3'"),
        ("start_hour,rate\n0,\n", "column 'rate' is empty"),
        ("start_hour,rate\n0,nan\n", "column 'rate' is 'nan'"),
        ("start_hour,rate\n6,1\n2,1\n", "start_hour 2 is before the row above"),
        ("start_hour,rate\n6,1\n6,2\n", "start_hour 6 overlaps the row above"),
        ("start_hour,rate\n24,1\n", "start_hour is 24"),
        ("start_hour\n1\n", "rate"),
        ("start_hour,rate,input_len\n0,1,5\n", "input_len and output_len go together"),
        ("start_hour,rate,input_len,output_len\n0,1,5,\n", "give both input_len and output_len"),
        ("start_hour,rate,when\n0,1,x\n", "unknown column 'when'"),
        ("start_hour,rate\n", "no data rows"),
    ],
)
def test_bad_load_profiles(tmp_path, text, needle):
    with pytest.raises(OptionError, match=needle.replace("(", r"\(")):
        read_load_profile(write(tmp_path, text))


def test_a_slot_cap_rules_out_shapes_and_spares_below_it():
    # A maintenance window: slot 2 may run at most 3 replicas, but 100 req/s needs 4 of the one shape.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    profile = make_profile([0, 6, 12, 18], [10, 70, 100, 40], max_replicas=[np.inf, np.inf, 3, np.inf])
    day = plan_day(m, [hw], profile, fixed_lengths(1024, 128), PlanConfig(TARGETS, ONE_SHAPE))
    assert day.best is None
    from roofline.analyses.plan.spares import Spares

    with pytest.raises(OptionError, match="spare_replicas: 3 must be below"):
        plan_day(m, [hw], profile, fixed_lengths(1024, 128), PlanConfig(TARGETS, ONE_SHAPE, Spares(replicas=3)))


@pytest.mark.slow
def test_day_cli(tmp_path):
    csv = write(tmp_path, "start_hour,rate\n0,10\n6,70\n12,100\n18,40\n")
    base = ("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "1024", "-o", "128")
    one = ("--max-chips", "1", "--weights", "bf16", "--kv-dtype", "bf16", "--ttft-slo", "1s", "--tpot-slo", "50ms")
    out = run_json(*base, *one, "--load-profile", csv)
    # The hand example above, through the CLI (every batch tried: the same or cheaper).
    assert out["cost_per_day"] <= 3.0 * (60 + 3 * 15.32 / 3600) + 1e-6
    assert out["day"]["cost_per_day"] == out["cost_per_day"] and len(out["day"]["schedule"]) == 4
    assert out["best"]["hardware"] == "h100-sxm"
    assert all(s["meets_slo"] for s in out["day"]["schedule"])
    for args, needle in [
        (("--load-profile", write(tmp_path, "start_hour,rate\n0,-1\n", "neg.csv")), "'rate' is '-1'"),
        (("--load-profile", write(tmp_path, "start_hour,rate\n5,1\n1,1\n", "uns.csv")), "before the row above"),
        (("--load-profile", csv, "--qps", "3"), "--load-profile gives the rates"),
        (("--load-profile", csv, "--mix"), "--mix plans one steady --qps"),
        (("--qps", "10", "--diurnal", "--spare", "2", "--max-replicas", "2"), "--spare: 2 must be below"),
    ]:
        proc = run_cli(*base, *one, *args)
        assert proc.returncode == 2 and needle in proc.stderr and proc.stdout == "", (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_day_page_renders(tmp_path):
    # The day page in a real browser: load and replicas (load, autoscaled, fixed: 3 traces), cost (2 traces).
    from tests.browser import assert_page_renders, require_browser

    require_browser()
    page = tmp_path / "day.html"
    proc = run_cli(
        "plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--qps", "60", "--diurnal", "-i", "1024",
        "-o", "128", "--ttft-slo", "1s", "--tpot-slo", "50ms", "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = assert_page_renders(page, min_figures=2)
    assert [f["traces"] for f in found["figures"]] == [3, 2]
    text = page.read_text()
    assert "fixed fleet sized for the peak" in text and "cost per day" in text


@pytest.mark.slow
def test_day_at_a_percentile_cli(tmp_path):
    # Each slot of the cheapest shapes re-sized by simulation: never fewer replicas than the closed form,
    # the schedule's latencies are the simulated p99s, and they meet the SLOs where the slot says so.
    csv = write(tmp_path, "start_hour,rate\n0,10\n12,40\n")
    args = ("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "512", "-o", "64", "--load-profile", csv)
    one = ("--max-chips", "1", "--weights", "bf16", "--kv-dtype", "bf16", "--ttft-slo", "500ms", "--tpot-slo", "30ms")
    closed = run_json(*args, *one)
    sized = run_json(*args, *one, "--percentile", "p99", "--requests", "200", "--workers", "1")
    assert sized["percentile"] == "p99" and "p99 TTFT/TPOT" in sized["sources"]["sizing"]
    same = sized["best"]["batch"] == closed["best"]["batch"]
    for a, b in zip(closed["day"]["schedule"], sized["day"]["schedule"], strict=True):
        assert b["meets_slo"] and b["ttft_s"] <= 0.5 and b["tpot_s"] <= 0.03
        assert b["replicas"] >= a["replicas"] or not same
    # The simulation only adds replicas to a shape, so the day costs at least the closed form's cheapest.
    assert sized["cost_per_day"] >= closed["cost_per_day"]
    proc = run_cli(*args, *one, "--requests", "200")
    assert proc.returncode == 2 and "--requests needs --percentile" in proc.stderr
