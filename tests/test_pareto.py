"""Pareto frontiers: hand-checked examples and a brute-force O(n²) oracle under hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.pareto import OBJECTIVES, frontier_by_group, frontier_of, pareto_mask, pareto_order
from tests.profiles import at_most


def brute_force_mask(x: np.ndarray, y: np.ndarray, x_sense: str, y_sense: str) -> np.ndarray:
    """O(n²) definition: i is kept unless some j is ≥ on both and > on one, or is an earlier equal."""
    xs = -x if x_sense == "min" else x
    ys = -y if y_sense == "min" else y
    keep = np.ones(x.size, dtype=bool)
    for i in range(x.size):
        for j in range(x.size):
            if j == i:
                continue
            dominates = xs[j] >= xs[i] and ys[j] >= ys[i] and (xs[j] > xs[i] or ys[j] > ys[i])
            duplicate_before = xs[j] == xs[i] and ys[j] == ys[i] and j < i
            if dominates or duplicate_before:
                keep[i] = False
                break
    return keep


def test_hand_example_latency_vs_throughput() -> None:
    # Points (latency ms, tokens/s/chip): (1, 10) fastest; (2, 30) better throughput;
    # (3, 20) is beaten by (2, 30) on both; (4, 50) most throughput; (4, 40) ties on latency
    # but has less throughput.  Frontier, fastest first: indices 0, 1, 3.
    latency = np.array([1.0, 2.0, 3.0, 4.0, 4.0])
    throughput = np.array([10.0, 30.0, 20.0, 50.0, 40.0])
    assert pareto_order(latency, throughput, "min", "max").tolist() == [0, 1, 3]


def test_senses_flip_the_frontier() -> None:
    # Maximising both keeps only (3, 3); minimising both keeps only (1, 1).
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 2.0, 3.0])
    assert pareto_order(x, y, "max", "max").tolist() == [2]
    assert pareto_order(x, y, "min", "min").tolist() == [0]
    # min x, max y on a rising line: every point trades one objective for the other.
    assert pareto_order(x, y, "min", "max").tolist() == [0, 1, 2]


def test_duplicates_keep_one_and_nan_is_never_on_the_frontier() -> None:
    x = np.array([1.0, 1.0, np.nan, 2.0])
    y = np.array([5.0, 5.0, 9.0, 1.0])
    # (1, 5) twice: one copy; NaN dropped; (2, 1) is slower and worse.
    assert pareto_order(x, y, "min", "max").tolist() == [0]


def test_empty_and_bad_input() -> None:
    assert pareto_order(np.array([]), np.array([])).size == 0
    with pytest.raises(ValueError, match="same length"):
        pareto_order(np.array([1.0, 2.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="sense"):
        pareto_order(np.array([1.0]), np.array([1.0]), "up", "max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown objective 'speed'"):
        frontier_of({}, "speed")


@at_most(200)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=40),
    st.sampled_from(["min", "max"]),
    st.sampled_from(["min", "max"]),
)
def test_matches_brute_force_with_ties(points: list[tuple[int, int]], xs: str, ys: str) -> None:
    # Small integer grids force many ties and duplicates, the hard cases for a sort-based scan.
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    assert pareto_mask(x, y, xs, ys).tolist() == brute_force_mask(x, y, xs, ys).tolist()


@at_most(10)
@given(st.integers(0, 2**31 - 1), st.integers(5000, 20000))
def test_sample_screen_is_exact_on_large_inputs(seed: int, n: int) -> None:
    # Above 4096 points a 1-in-64 sample screens the input first; the result must equal the
    # plain sort-and-scan, checked here against an O(n) scan of the x-sorted points.
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(n), 2)  # ties in x
    y = rng.random(n)
    got = pareto_order(x, y, "min", "max")
    order = np.lexsort((-y, x))
    best, expected = -np.inf, []
    for i in order:
        if y[i] > best:
            expected.append(i)
            best = y[i]
    assert got.tolist() == expected


def test_frontier_points_are_monotone() -> None:
    # Along a min-x/max-y frontier, x rises and y rises strictly (each step buys y with x).
    rng = np.random.default_rng(1)
    x, y = rng.random(10000), rng.random(10000)
    f = pareto_order(x, y, "min", "max")
    assert np.all(np.diff(x[f]) > 0) and np.all(np.diff(y[f]) > 0)


def test_named_objectives_and_groups() -> None:
    assert set(OBJECTIVES) == {"latency-throughput", "interactivity-throughput", "cost-latency"}
    cols = {
        "step_time_s": np.array([0.01, 0.02, 0.01, 0.05]),
        "tokens_per_s_per_chip": np.array([100.0, 300.0, 50.0, 200.0]),
    }
    group = np.array(["a", "a", "b", "b"])
    # Chip a: both points trade off; chip b: (0.01, 50) and (0.05, 200) trade off too.
    got = frontier_by_group(cols, group, "latency-throughput")
    assert {k: v.tolist() for k, v in got.items()} == {"a": [0, 1], "b": [2, 3]}
