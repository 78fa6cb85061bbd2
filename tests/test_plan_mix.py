"""The cheapest mix of chip types: length buckets, the mixed-integer program, the exact plan per type, the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.analyses.lengths import fixed_lengths, from_points
from roofline.analyses.plan.capacity import PlanConfig, Targets, plan
from roofline.analyses.plan.mix import Bucket, length_buckets, plan_mix, solve_assignment
from roofline.analyses.plan.shapes import ShapeTable
from roofline.core.errors import OptionError
from roofline.specs import hardware_from_dict, load_hardware, load_model
from tests.conftest import run_cli, run_json

THREE = from_points([256, 4096, 32768], [256, 256, 256], [0.6, 0.3, 0.1])


def toy_table(rates: list[list[float]], price: list[float], hardware: list[str]) -> ShapeTable:
    """A shapes table of one-chip shapes with the given per-bucket rates (req/s per replica)."""
    lam = np.array(rates, dtype=float)
    s, b = lam.shape
    ones = np.ones((s, b))
    return ShapeTable(
        fields={"hardware": np.array(hardware, dtype=object), "chips": np.ones(s, dtype=np.int64)},
        price=np.array(price, dtype=float),
        step_s=ones,
        step_double_s=ones,
        prefill_mean_s=ones,
        prefill_sq_s2=ones,
        longest_bytes=np.zeros((s, b)),
        usable_bytes=ones,
        memory_bytes=ones,
        hbm_bytes=ones,
        present=np.ones((s, b), dtype=bool),
        in_domain=np.ones(s, dtype=bool),
        limits={"concurrency": lam, "TTFT SLO": lam, "TPOT SLO": lam},
        rate=lam,
        workloads=(),
        evaluated=s,
        reasons=(),
        sources={},
    )


def test_the_program_by_hand():
    # Chip A at $1/h carries 10 req/s of short requests or 1 of long; chip B at $3/h carries 10 of either.
    # 10 req/s of each: A alone needs 10/10 + 10/1 = 11 replicas ($11/h); B alone 1 + 1 = 2 ($6/h); short on
    # A (1 replica, $1) and long on B (1 replica, $3): $4/h, the optimum.
    table = toy_table([[10, 1], [10, 10]], [1.0, 3.0], ["a", "b"])
    buckets = [Bucket("short", fixed_lengths(100, 10), 10.0), Bucket("long", fixed_lengths(10_000, 10), 10.0)]
    served, cost = solve_assignment(table, buckets, PlanConfig(), {"a": (8, ""), "b": (8, "")})
    assert served == {"a": [0], "b": [1]} and cost == pytest.approx(4.0)
    # Loads add on one replica: 4 req/s short and 0.5 long on A is 0.4 + 0.5 = 0.9 of a replica, so one
    # A replica ($1/h) serves both, cheaper than anything with B.
    buckets = [Bucket("short", fixed_lengths(100, 10), 4.0), Bucket("long", fixed_lengths(10_000, 10), 0.5)]
    served, cost = solve_assignment(table, buckets, PlanConfig(), {"a": (8, ""), "b": (8, "")})
    assert served == {"a": [0, 1]} and cost == pytest.approx(1.0)


def test_length_buckets():
    b = length_buckets(THREE, 50.0)
    assert [x.name for x in b] == ["in 256, out 256", "in 4096, out 256", "in 32768, out 256"]
    assert [x.qps for x in b] == pytest.approx([30.0, 15.0, 5.0])
    # Many points: powers-of-two bins of the input length, the lightest neighbours merged down to 8.
    many = from_points(np.arange(1, 301) * 100, np.full(300, 64), np.ones(300))
    bins = length_buckets(many, 10.0)
    assert len(bins) == 8 and sum(x.qps for x in bins) == pytest.approx(10.0)
    assert sum(x.lengths.input_len.size for x in bins) == 300


def test_a_single_type_mix_is_the_single_type_plan():
    # Consistency: with one chip type the mix is today's steady plan of that type, to the last digit.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    config = PlanConfig(Targets(2.0, 0.05))
    mix = plan_mix(m, [hw], 50.0, THREE, config)
    alone = plan(m, [hw], 50.0, THREE, 2.0, 0.05).best
    assert len(mix.parts) == 1 and mix.parts[0].deployment == alone
    assert mix.dollars_per_hour == alone.dollars_per_hour and mix.saving_dollars_per_hour == 0.0


@pytest.mark.slow
def test_a_mix_is_never_dearer_than_the_best_single_type():
    # TPU v5e ($1.2/chip-hour, 16 GB) for the short prompts and H100s for the long ones beat either alone.
    m = load_model("llama-3-8b")
    hws = [load_hardware("tpu-v5e"), load_hardware("h100-sxm")]
    mix = plan_mix(m, hws, 50.0, THREE, PlanConfig(Targets(2.0, 0.05)))
    singles = {h.name: plan(m, [h], 50.0, THREE, 2.0, 0.05).best.dollars_per_hour for h in hws}
    assert mix.best_single.dollars_per_hour == min(singles.values())
    assert mix.dollars_per_hour <= min(singles.values())
    assert mix.dollars_per_hour == pytest.approx(sum(p.deployment.dollars_per_hour for p in mix.parts))
    served = sorted(b for p in mix.parts for b in p.buckets)
    assert served == sorted(b.name for b in mix.buckets)  # every bucket served once
    assert sum(p.qps for p in mix.parts) == pytest.approx(50.0)
    assert len(mix.parts) == 2 and mix.saving_dollars_per_hour > 0


def test_a_chip_without_a_price_is_refused():
    from roofline.analyses.plan.mix import check_prices

    hw = load_hardware("h100-sxm")
    free = hardware_from_dict({**hw.model_dump(exclude_none=True), "name": "free"})
    object.__setattr__(free, "price_per_chip_hour", float("nan"))
    with pytest.raises(OptionError, match="prices: free has no price per chip-hour"):
        check_prices([hw, free], {})
    check_prices([hw, free], {"free": 1.0})


@pytest.mark.slow
def test_mix_cli(tmp_path):
    args = ("plan", "--model", "llama-3-8b", "--hardware", "tpu-v5e,h100-sxm", "--qps", "50")
    lengths = ("--lengths", "256:256:0.6,4096:256:0.3,32768:256:0.1", "--ttft-slo", "2s", "--tpot-slo", "50ms")
    out = run_json(*args, *lengths, "--mix")
    parts = out["mix"]["parts"]
    assert out["best"]["dollars_per_hour"] == pytest.approx(sum(p["deployment"]["dollars_per_hour"] for p in parts))
    assert out["best"]["dollars_per_hour"] < out["mix"]["best_single"]["dollars_per_hour"]
    # A chip file without a price: one line, exit 2.
    text = (tmp_path / "x.yaml").write_text
    spec = load_hardware("h100-sxm").model_dump(exclude_none=True)
    spec.pop("price_per_chip_hour")
    import yaml

    text(yaml.safe_dump({**spec, "name": "noprice"}))
    proc = run_cli(*args[:4], f"h100-sxm,{tmp_path / 'x.yaml'}", "--qps", "50", *lengths, "--mix")
    assert proc.returncode == 2 and "price" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli(*args, *lengths, "--mix", "--percentile", "p99")
    assert proc.returncode == 2 and "--mix plans in closed form" in proc.stderr
