"""Collectives and topologies: hand-derived times on ICI, NVLink and DCN, and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.errors import RooflineError
from roofline.deploy import fabric, topology
from roofline.formulas import collectives
from roofline.specs import load_hardware

W_V5E = 4.5e10  # one-way ICI link, the book
HOP = 1e-6


def test_ring_8way_at_the_books_threshold():
    # 360 kB over an 8-chip ring without wraparound: each chip receives 7/8 of it over one link,
    # 360e3·7/8 / 4.5e10 = 7 us, in 7 steps of 1 us: the terms meet exactly at (V/N)/W = T_hop.
    t = collectives.torus_allgather(360e3, (8,), (False,), W_V5E, HOP)
    assert t.bandwidth_time_s == pytest.approx(7e-6)
    assert t.latency_time_s == pytest.approx(7e-6)
    assert t.time_s == pytest.approx(7e-6) and t.time_upper_s == pytest.approx(14e-6)
    assert collectives.latency_bound_bytes(8, W_V5E, HOP) == pytest.approx(360e3)


def test_wrapped_axis_doubles_bandwidth_and_halves_steps():
    # 16-chip ring with wraparound: 1e8·15/16 / (2·4.5e10) = 1.0417 ms; (16-1)/2 = 7.5 steps = 7.5 us.
    t = collectives.torus_allgather(1e8, (16,), (True,), W_V5E, HOP)
    assert t.bandwidth_time_s == pytest.approx(1e8 * 15 / 16 / 9e10)
    assert t.latency_time_s == pytest.approx(7.5e-6)
    # Book part 3: a wrapped axis is ~V/(2·W_ici), an unwrapped one ~V/W_ici.
    assert t.bandwidth_time_s == pytest.approx(1e8 / (2 * W_V5E), rel=0.07)


def test_two_axes_use_the_links_of_both():
    # 16x16 with wraparound on both axes: 1e8·255/256 / (4·4.5e10) = 0.5534 ms; 7.5 + 7.5 steps.
    t = collectives.torus_allgather(1e8, (16, 16), (True, True), W_V5E, HOP)
    assert t.bandwidth_time_s == pytest.approx(1e8 * 255 / 256 / 1.8e11)
    assert t.latency_time_s == pytest.approx(15e-6)


def test_nvlink_switch_and_two_level_over_infiniband():
    h100 = load_hardware("h100-sxm")
    # 8 GPUs: 1e8·7/8 / 4.5e11 = 194.4 us; 7 ring steps × 2 us = 14 us.
    t8 = fabric.collective_on(h100, fabric.layout_for(h100, 8), "allgather", 1e8)
    assert t8.bandwidth_time_s == pytest.approx(1e8 * 7 / 8 / 4.5e11)
    assert t8.latency_time_s == pytest.approx(14e-6)
    # 16 GPUs = 2 NVLink domains: + across nodes, 1e8/8 · 1/2 over 5e10 B/s IB = 125 us, 1 step of 5 us.
    t16 = fabric.collective_on(h100, fabric.layout_for(h100, 16), "allgather", 1e8)
    assert t16.bandwidth_time_s == pytest.approx(1e8 * 7 / 8 / 4.5e11 + 1.25e7 / 2 / 5e10)
    assert t16.latency_time_s == pytest.approx(19e-6)


def test_one_device_costs_nothing():
    t = collectives.torus_allgather(1e6, (1,), (False,), W_V5E, HOP)
    assert t.time_upper_s == 0.0 and not t.latency_bound


def test_allreduce_twice_and_alltoall_fraction():
    ag = collectives.torus_allgather(4e6, (8,), (True,), W_V5E, HOP)
    ar = collectives.collective_from_allgather("allreduce", ag, 8, switched=False)
    a2a = collectives.collective_from_allgather("alltoall", ag, 8, switched=False)
    a2a_switch = collectives.collective_from_allgather("alltoall", ag, 8, switched=True)
    assert ar.bandwidth_time_s == pytest.approx(2 * ag.bandwidth_time_s)
    assert ar.latency_time_s == pytest.approx(2 * ag.latency_time_s)
    assert a2a.bandwidth_time_s == pytest.approx(ag.bandwidth_time_s / 4)  # book part 3, ring
    assert a2a_switch.bandwidth_time_s == pytest.approx(ag.bandwidth_time_s / 8)  # (N-1)/N of V/N per chip
    with pytest.raises(ValueError, match="allowed"):
        collectives.collective_from_allgather("broadcast", ag, 8, switched=False)


def test_model_parallel_latency_threshold_int8():
    # Appendix C: Y > B·D/45,000 for int8; B = 16, D = 8192 -> 131,072 / 45,000 = 2.91.
    assert collectives.latency_bound_model_parallelism(16 * 8192, W_V5E, HOP) == pytest.approx(2.9127, rel=1e-4)


sizes = st.integers(min_value=2, max_value=512)
volumes = st.floats(min_value=1.0, max_value=1e11)


@given(volumes, sizes, st.booleans(), st.sampled_from(list(collectives.OPS)))
def test_lower_bound_never_exceeds_upper(v, n, wrap, op):
    ag = collectives.torus_allgather(v, (n,), (wrap,), W_V5E, HOP)
    t = collectives.collective_from_allgather(op, ag, n, switched=False)
    assert t.time_s <= t.time_upper_s
    assert max(t.bandwidth_time_s, t.latency_time_s) == pytest.approx(t.time_s)


@given(volumes, sizes, st.booleans())
def test_allreduce_bandwidth_is_twice_allgather(v, n, wrap):
    ag = collectives.torus_allgather(v, (n,), (wrap,), W_V5E, HOP)
    ar = collectives.collective_from_allgather("allreduce", ag, n, switched=False)
    assert ar.bandwidth_time_s == pytest.approx(2 * ag.bandwidth_time_s)


@given(volumes, sizes, st.booleans())
def test_more_devices_never_beat_v_over_w(v, n, wrap):
    # Fixed V: each chip must receive V·(N-1)/N, so more chips never help, and the term stays ≤ V/W_eff.
    w_eff = 2 * W_V5E if wrap else W_V5E
    small = collectives.torus_allgather(v, (n,), (wrap,), W_V5E, HOP)
    large = collectives.torus_allgather(v, (n + 1,), (wrap,), W_V5E, HOP)
    assert large.bandwidth_time_s >= small.bandwidth_time_s * (1 - 1e-12)
    assert small.bandwidth_time_s <= v / w_eff * (1 + 1e-12)
    assert small.bandwidth_time_s >= v / (2 * w_eff) * (1 - 1e-12)  # N ≥ 2: at least half of V arrives over W_eff


@given(volumes, sizes, st.booleans())
def test_1d_latency_bound_matches_the_books_rule(v, n, wrap):
    t = collectives.torus_allgather(v, (n,), (wrap,), W_V5E, HOP)
    ratio = (v / n) / W_V5E / HOP
    if abs(ratio - 1) > 1e-9:
        assert bool(t.latency_bound) == bool(collectives.is_latency_bound(v, n, W_V5E, HOP))


def test_topology_parsing_and_wraparound_rules():
    assert topology.parse_topology("4x4x4") == (4, 4, 4)
    assert topology.parse_topology("8") == (8,)
    with pytest.raises(ValueError, match="^topology_text: cannot read"):  # the Python parameter's name
        topology.parse_topology("4by4")
    # v5e (2D torus): only the full 16-chip side wraps; v5p (3D): multiples of 4 wrap.
    assert topology.axis_wraps(16, "torus2d", 256) and not topology.axis_wraps(8, "torus2d", 256)
    assert topology.axis_wraps(4, "torus3d", 8960) and not topology.axis_wraps(2, "torus3d", 8960)
    assert topology.axes_for_degree((4, 4), 4) == (0,)
    assert topology.axes_for_degree((4, 4), 16) == (0, 1)
    with pytest.raises(ValueError, match="allowed: 4, 16"):
        topology.axes_for_degree((4, 4), 8)


def test_layout_errors_are_one_line():
    v5e, h100 = load_hardware("tpu-v5e"), load_hardware("h100-sxm")
    with pytest.raises(RooflineError, match="^topology_text: h100-sxm has a switched NVLink domain"):
        fabric.layout_for(h100, None, "2x4")
    with pytest.raises(RooflineError, match="disagrees"):
        fabric.layout_for(v5e, 8, "4x4")
    with pytest.raises(RooflineError, match="multiple of the domain size 8"):
        fabric.layout_for(h100, 12)
    with pytest.raises(RooflineError, match="^axes: axis 2"):
        fabric.layout_for(v5e, None, "4x4", (2,))
    layout = fabric.layout_for(v5e, None, "4x4", (1,))
    assert layout.devices == 4 and layout.wraps == (False,)
