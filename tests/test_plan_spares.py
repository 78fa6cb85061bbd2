"""Failure headroom: replicas lost per node failure, the plan with k replicas or nodes down, its cost."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.plan.capacity import plan
from roofline.analyses.plan.spares import Spares, node_size, replicas_per_node
from roofline.core.errors import OptionError
from roofline.specs import load_hardware, load_model
from tests.conftest import run_cli
from tests.profiles import at_most

ONE_CHIP = dict(max_chips=1, weights=["bf16"], kv_dtypes=["bf16"], batches=[64])


def test_replicas_per_node_by_hand():
    # 8-GPU nodes: 2-chip replicas pack 4 to a node; an 8-chip replica is one node; a 16-chip replica spans
    # two nodes, and either failing takes out that one replica.  3-chip replicas in a row: a node of 8
    # overlaps at most ceil(7/3) + 1 = 4 of them (chips 0-7 against replicas [-2,0], [1,3], [4,6], [7,9]).
    assert replicas_per_node([1, 2, 8, 16, 3], 8).tolist() == [8, 4, 1, 1, 4]


@at_most(40)
@given(c=st.integers(1, 64), n=st.integers(1, 64))
def test_replicas_per_node_is_the_worst_overlap(c, n):
    # Invariant, by brute force over every alignment of a node against c-chip replicas packed in a row.
    if n % c and c % n:
        worst = max(len({(start + k) // c for k in range(n)}) for start in range(c))
        assert replicas_per_node(c, n) == worst
    else:
        assert replicas_per_node(c, n) == max(len({(start + k) // c for k in range(n)}) for start in range(0, c, n))


def test_node_size_comes_from_the_scale_up_domain():
    n, source = node_size(load_hardware("h100-sxm"))
    assert n == 8 and "max_ici_domain_chips" in source
    assert node_size(load_hardware("tpu-v5e"), 8) == (8, "8 chips per node (given)")


def test_no_spares_is_todays_plan():
    m, hws = load_model("llama-3-70b"), [load_hardware("h100-sxm"), load_hardware("h200")]
    lengths = fixed_lengths(2048, 256)
    plain = plan(m, hws, 10.0, lengths, 2.0, 0.05)
    zero = plan(m, hws, 10.0, lengths, 2.0, 0.05, spares=Spares(0, 0))
    assert zero == plain and zero.resilience is None


def test_spares_by_hand():
    # LLaMA-3-8B on 1-chip H100 replicas (8 to a node) at 50 req/s: the plain plan needs n replicas.
    # One replica down: n + 1.  One node down takes out 8 one-chip replicas: n + 8, costing 8 · $3 = $24/h more.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    lengths = fixed_lengths(1024, 128)
    n = plan(m, [hw], 50.0, lengths, 1.0, 0.05, **ONE_CHIP).best.replicas
    one = plan(m, [hw], 50.0, lengths, 1.0, 0.05, spares=Spares(replicas=1), **ONE_CHIP)
    assert (one.best.replicas, one.best.spare_replicas) == (n + 1, 1)
    node = plan(m, [hw], 50.0, lengths, 1.0, 0.05, spares=Spares(nodes=1), **ONE_CHIP)
    assert node.best.replicas == n + 8
    assert node.resilience.extra_replicas == 8 and node.resilience.extra_dollars_per_hour == pytest.approx(24.0)
    # The survivors carry the load: the latencies are those of n replicas, not n + 8.
    assert node.best.rate_per_replica == pytest.approx(50.0 / n)
    # With 4-chip nodes given, a node failure takes 4 replicas.
    small = plan(m, [hw], 50.0, lengths, 1.0, 0.05, spares=Spares(nodes=1, node_chips=4), **ONE_CHIP)
    assert small.best.replicas == n + 4


def test_spares_can_change_the_shape():
    # Headroom is priced per shape: losing a node costs a 1-chip shape 8 replicas, a larger replica fewer, so
    # the resilient best is the cheapest with its own loss, never dearer than any shape plus its loss.
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    res = plan(m, [hw], 20.0, fixed_lengths(1024, 128), 1.0, 0.05, spares=Spares(nodes=1), top=50)
    costs = [d.dollars_per_hour for d in res.candidates]
    assert costs == sorted(costs)
    for d in res.candidates:
        assert d.spare_replicas == replicas_per_node(d.chips_per_replica, 8)


def test_spares_at_or_above_the_cap_are_refused():
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    with pytest.raises(OptionError, match="spare_replicas: 2 must be below"):
        plan(m, [hw], 5.0, fixed_lengths(512, 64), spares=Spares(replicas=2), max_replicas=2)
    with pytest.raises(OptionError, match="spare_nodes"):
        Spares(nodes=-1)
    proc = run_cli(
        "plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--qps", "5", "-i", "512", "-o", "64",
        "--spare", "3", "--max-replicas", "3",
    )  # fmt: skip
    assert proc.returncode == 2 and "--spare: 3 must be below" in proc.stderr and "--max-replicas 3" in proc.stderr
