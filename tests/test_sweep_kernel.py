"""The sweep kernel and streaming frontiers give exactly the step model's numbers.

The reference is the evaluation the sweep did before its kernel: every (chips, context) slot's
batches up to the screen's max batch, flattened and given to :func:`roofline.analyses.step.decode_step`
once per block, the points that do not fit dropped.  Columns must be equal bit for bit, on random
grids of models, chips (spec sheet and a calibrated profile), dtypes, tp/pp and ep.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from roofline.analyses.pareto import OBJECTIVES, frontier_by_group, pareto_order, staircase_floor
from roofline.analyses.step import Precision, decode_step
from roofline.analyses.sweep.frontier import decode_frontier
from roofline.analyses.sweep.kernel import grids
from roofline.analyses.sweep.run import POINT_COLUMNS, decode_sweep, feasible_points, parallel_groups
from roofline.deploy import FITTED_ENGINE_TERMS, deployment
from roofline.formulas import cost, step
from roofline.specs import hardware_from_dict, load_hardware, load_model
from roofline.terms import decode_work, step_terms
from tests.profiles import at_most

FEW = at_most(12)


def calibrated_h100():
    """A hand-made profile: constant-efficiency GEMM and decode attention, all-reduce fitted at 2/4/8."""
    data = load_hardware("h100-sxm").model_dump(exclude_none=True)
    coll = {
        f"{k}@{n}": v
        for n in (2, 4, 8)
        for k, v in (("latency_s", 1e-5 * n), ("bandwidth_bytes_per_s", 3e11), ("small_message_bytes", 1e7))
    }
    data["name"] = "h100-calibrated"
    data["calibration"] = {
        "source": "hand-made test profile",
        "ops": {
            "gemm/bf16": {"compute_efficiency": 0.75, "memory_efficiency": 0.8, "overhead_s": 3e-6},
            "attention_decode/bf16": {"compute_efficiency": 0.9, "memory_efficiency": 0.55, "overhead_s": 1.2e-5},
            "allreduce/bf16": {"memory_efficiency": 0.8, "overhead_s": 1.8e-5, "params": coll},
        },
    }
    return hardware_from_dict(data)


def shipped_profile_one_engine():
    """The shipped h100-sxm-cal profile with one engine entry, so engine terms apply: an entry whose only
    term is a step overhead of 1 ms set here."""
    data = load_hardware("h100-sxm-cal").model_dump(exclude_none=True)
    zeroed = {name: 0.0 for name in FITTED_ENGINE_TERMS}  # only the known 1 ms remains
    data["engine"] = {"trtllm/1.0": {**zeroed, "step_overhead_s": 1e-3}}
    data["name"] = "h100-sxm-cal-trtllm"
    return hardware_from_dict(data)


# Spec sheets (no engine), the hand-made profile (no engine), the shipped calibrated profile
# (several engines, none chosen: kernel times only) and that profile with one engine (engine terms on).
CHIPS = {name: load_hardware(name) for name in ("tpu-v5e", "h100-sxm", "h200", "h100-sxm-cal")}
CHIPS["h100-calibrated"] = calibrated_h100()
CHIPS["h100-sxm-cal-trtllm"] = shipped_profile_one_engine()
MODELS = {name: load_model(name) for name in ("llama-2-13b", "llama-3-8b", "mixtral-8x7b", "gemma-2-9b")}


def reference(model, hardware, batch, chips, context, weights, kv_dtypes, tp, pp, ep, mu):
    """The sweep's columns the way it evaluated them before the kernel (decode_step per block)."""
    batch_axis, chips_axis, context_axis = (np.unique(np.asarray(v, dtype=np.int64)) for v in (batch, chips, context))
    groups = parallel_groups(chips_axis, tp, pp)
    parts = []
    for hw in hardware:
        for w in weights:
            for kv in kv_dtypes:
                prec = Precision(w, kv)
                screen = decode_step(
                    model,
                    hw,
                    chips_axis[:, None].astype(float),
                    1,
                    context_axis[None, :].astype(float),
                    prec,
                    memory_utilization=mu,
                )
                max_batch = np.broadcast_to(screen.max_batch, (chips_axis.size, context_axis.size))
                for degree, stages, rows, _ in groups:
                    slot, b = feasible_points(batch_axis, max_batch[rows])
                    if slot.size == 0:  # (decode_step on no points fails on a calibrated profile: np.max of [])
                        continue
                    c = np.repeat(chips_axis[rows].astype(float), context_axis.size)[slot]
                    s = np.tile(context_axis.astype(float), rows.size)[slot]
                    res = decode_step(
                        model,
                        hw,
                        c,
                        b,
                        s,
                        prec,
                        tp=degree,
                        pp=stages if stages > 1 else None,
                        ep=ep,
                        memory_utilization=mu,
                    )
                    fits = np.asarray(res.fits)

                    def kept(v, fits=fits):
                        return np.broadcast_to(np.asarray(v, dtype=float), fits.shape)[fits]

                    step_s, bk, ck = kept(res.step_time_s), b[fits], c[fits]
                    tps = step.tokens_per_s(bk, step_s)
                    parts.append(
                        {
                            "chips": ck.astype(np.int64),
                            "tp": np.full(bk.size, degree, dtype=np.int64),
                            "pp": np.full(bk.size, stages, dtype=np.int64),
                            "ep": np.full(bk.size, ep or 1, dtype=np.int64),
                            "attention_dp": np.full(bk.size, res.attention_dp, dtype=np.int64),
                            "batch": bk.astype(np.int64),
                            "context": s[fits].astype(np.int64),
                            "step_time_s": step_s,
                            "step_time_lower_s": kept(res.step_time_lower_s),
                            "step_time_upper_s": kept(res.step_time_upper_s),
                            "comms_time_s": kept(res.comms_time_s),
                            "tokens_per_s": tps,
                            "tokens_per_s_per_chip": tps / ck,
                            "tokens_per_s_per_user": 1.0 / step_s,
                            "cost_per_million_tokens": cost.cost_per_million_tokens(hw.price_per_chip_hour, ck, tps),
                            "bound": np.asarray(res.bound)[fits],
                            "total_bytes": kept(res.total_bytes),
                            "hbm_capacity_bytes": kept(res.hbm_capacity_bytes),
                        }
                    )
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


GRID = st.fixed_dictionaries(
    {
        "model": st.sampled_from(sorted(MODELS)),
        "hardware": st.lists(st.sampled_from(sorted(CHIPS)), min_size=1, max_size=2, unique=True),
        "batch": st.lists(st.integers(1, 3000), min_size=1, max_size=40),
        "chips": st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=3),
        "context": st.lists(st.integers(1, 40000), min_size=1, max_size=6),
        "weights": st.sampled_from([("bf16",), ("int8", "bf16")]),
        "kv_dtypes": st.sampled_from([("bf16",), ("int4", "int8")]),
        "layout": st.sampled_from([(None, None), ([1, 2], None), ([2, 8], [1, 2]), ([4], [2])]),
        "mu": st.sampled_from([0.9, 1.0]),
    }
)


@FEW
@given(GRID)
@example(
    {
        "model": "llama-3-8b",
        "hardware": ["h200", "h100-calibrated"],
        "batch": list(range(1, 3000, 37)),
        "chips": [1, 2, 4, 8],
        "context": [1, 100, 2048, 32768],
        "weights": ("int8", "bf16"),
        "kv_dtypes": ("bf16",),
        "layout": ([1, 2], None),
        "mu": 0.9,
    }
)
@example(
    {
        "model": "llama-2-13b",
        "hardware": ["tpu-v5e"],
        "batch": list(range(1, 600, 7)),
        "chips": [8, 16],
        "context": [1024, 8192],
        "weights": ("bf16",),
        "kv_dtypes": ("int4", "int8"),
        "layout": ([2, 8], [1, 2]),
        "mu": 1.0,
    }
)
@example(
    {
        "model": "llama-3-8b",
        "hardware": ["h100-sxm-cal", "h100-sxm-cal-trtllm"],
        "batch": list(range(1, 2000, 29)),
        "chips": [1, 2, 8],
        "context": [1, 512, 8192, 32768],
        "weights": ("int8", "bf16"),
        "kv_dtypes": ("bf16",),
        "layout": ([1, 2], None),
        "mu": 0.9,
    }
)
def test_sweep_columns_equal_decode_step_bit_for_bit(g) -> None:
    model, hardware = MODELS[g["model"]], [CHIPS[h] for h in g["hardware"]]
    tp, pp = g["layout"]
    args = (model, hardware, g["batch"], g["chips"], g["context"], g["weights"], g["kv_dtypes"])
    try:
        ref = reference(*args, tp, pp, None, g["mu"])
    except Exception as exc:  # a layout the chips do not allow: the sweep must refuse it the same way
        event(f"refused: {type(exc).__name__}")
        with pytest.raises(type(exc)):
            decode_sweep(*args, tp=tp, pp=pp, memory_utilization=g["mu"])
        return
    got = decode_sweep(*args, tp=tp, pp=pp, memory_utilization=g["mu"])
    assert len(got) == (ref["step_time_s"].size if ref else 0)
    event("compared" if ref else "nothing fits")
    if not ref:
        return
    for name in POINT_COLUMNS[:-1]:
        assert got.columns[name].dtype == ref[name].dtype, name
        assert np.array_equal(got.columns[name], ref[name]), name


def test_moe_with_expert_parallelism_and_a_calibrated_profile() -> None:
    # Mixtral (8 experts, 2 per token) with ep 2 inside tp 2/8, spec sheet and calibrated collectives.
    hardware = [CHIPS["h100-sxm"], CHIPS["h100-calibrated"]]
    args = (MODELS["mixtral-8x7b"], hardware, [1, 3, 64, 700], [8, 16], [100, 4096], ("bf16", "int8"), ("bf16",))
    ref = reference(*args, [2, 8], None, 2, 0.9)
    got = decode_sweep(*args, tp=[2, 8], ep=2)
    assert len(got) == ref["batch"].size > 0
    for name in POINT_COLUMNS[:-1]:
        assert np.array_equal(got.columns[name], ref[name]), name


def test_bound_words_come_from_the_code() -> None:
    # Memory-bound at batch 1, compute-bound at batch 4096 (above the book's 240 on v5e).
    dep = deployment(MODELS["llama-2-13b"], CHIPS["tpu-v5e"], 8, Precision())
    t = step_terms(dep, decode_work(np.array([1.0, 4096.0]), 16.0))
    assert t.bound.tolist() == ["memory", "compute"] and t.bound_code.tolist() == [0, 1]
    scalar = step_terms(dep, decode_work(1.0, 128.0))
    assert scalar.bound.shape == () and str(scalar.bound) == "memory"
    assert scalar.as_dict()["bound"] == scalar.bound


@at_most(40)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=12), st.integers(1, 64))
def test_grids_cover_each_rows_prefix_once_in_order(counts: list[int], chunk: int) -> None:
    cells = []
    for (r0, r1), (c0, c1) in grids(np.array(counts), chunk):
        assert (r1 - r0) * (c1 - c0) <= max(chunk, c1 - c0) and c1 - c0 <= chunk
        cells += [(i, j) for i in range(r0, r1) for j in range(c0, c1) if j < counts[i]]
    assert cells == [(i, j) for i, n in enumerate(counts) for j in range(n)]


@FEW
@given(GRID, st.sampled_from(["hardware", "all", "weights"]), st.integers(8192, 20000))
def test_streamed_frontiers_equal_the_whole_sweeps(g, group: str, buffer_points: int) -> None:
    model, hardware = MODELS[g["model"]], [CHIPS[h] for h in g["hardware"]]
    tp, pp = g["layout"]
    kw = dict(
        model=model,
        hardware=hardware,
        batch=np.unique(np.r_[g["batch"], np.arange(1, 3000, 7)]),
        chips=g["chips"],
        context=g["context"],
        weights=g["weights"],
        kv_dtypes=g["kv_dtypes"],
        tp=tp,
        pp=pp,
    )
    try:
        full = decode_sweep(**kw)
    except Exception:
        return
    streamed = decode_frontier(**kw, objectives=list(OBJECTIVES), group=group, buffer_points=buffer_points)
    assert (streamed.evaluated, streamed.dropped_out_of_memory) == (full.evaluated, full.dropped_out_of_memory)
    for objective in OBJECTIVES:
        want = {k: full.select(v).rows() for k, v in full.frontiers(objective, group).items()}
        assert {k: streamed.select(v).rows() for k, v in streamed.frontiers(objective, group).items()} == want
        if group != "all":  # the per-point label path gives the same frontiers
            old = frontier_by_group(full.columns, full.group_labels(group), objective)
            assert {k: v.tolist() for k, v in old.items()} == {
                k: v.tolist() for k, v in full.frontiers(objective, group).items()
            }


@at_most(60)
@given(
    st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)), min_size=1, max_size=30),
    st.lists(st.floats(-2e3, 2e3), min_size=1, max_size=30),
)
# Found by hypothesis in a fresh-clone run: steps of y from -1 to -8e-196, where interpolating from
# the large end rounded the floor up to 0, above every step it stands for.
@example(
    [(1.0, -8.423442319820076e-196), (2.0, -1.5815781818577962e-100), (3.0, -1.0), (-4.552774953501435e-139, 0.0)],
    [0.0],
)
def test_staircase_floor_never_exceeds_the_best_step(points, queries) -> None:
    xs = np.array([p[0] for p in points])
    ys = np.array([p[1] for p in points])
    front = pareto_order(xs, ys, "max", "max")  # a staircase: x falling, y rising
    q = np.array(queries)
    floor = staircase_floor(xs[front], ys[front], q)
    for value, x in zip(floor.tolist(), q.tolist(), strict=True):
        reach = ys[front][xs[front] >= x]
        assert value == -np.inf if reach.size == 0 else value <= reach.max()


def test_every_point_on_the_frontier_shuffled_and_ties() -> None:
    # A rising line (min x, max y): every point is on the frontier, in x order.
    rng = np.random.default_rng(3)
    x = rng.permutation(np.arange(20000, dtype=float))
    assert np.array_equal(pareto_order(x, x, "min", "max"), np.argsort(x))
    # Two copies of each point: the first copy of each is kept (the tie path).
    x2 = np.r_[x, x]
    assert np.array_equal(pareto_order(x2, x2, "min", "max"), np.argsort(x))


def test_the_engine_terms_reach_the_sweep() -> None:
    # The one-engine profile's 1 ms step overhead adds exactly 1 ms to every decode step (GPU: no overlap).
    args = (MODELS["llama-3-8b"], [1, 8, 64], [1, 2], [2048])
    with_engine = decode_sweep(args[0], [CHIPS["h100-sxm-cal-trtllm"]], *args[1:])
    kernels_only = decode_sweep(args[0], [CHIPS["h100-sxm-cal"]], *args[1:])
    assert len(with_engine) == len(kernels_only) > 0
    delta = with_engine.columns["step_time_s"] - kernels_only.columns["step_time_s"]
    assert delta == pytest.approx(np.full(delta.shape, 1e-3), rel=1e-9)


def test_streamed_sweep_keeps_labels_slots_prices_and_skips() -> None:
    # Labels, per-block price, the dropped slots and the skipped (chips, tp) pairs of the full sweep.
    kw = {
        "model": MODELS["llama-2-13b"],
        "hardware": [CHIPS["h100-sxm"], CHIPS["h200"]],
        "batch": list(range(1, 4000, 97)),
        "chips": [1, 2, 3],
        "context": [4096, 32768],
        "tp": [1, 2],
        "labels": ["a.yaml", "b.yaml"],
        "prices": {"a.yaml": 2.5},
    }
    full = decode_sweep(**kw)
    streamed = decode_frontier(**kw, buffer_points=1)
    for res in (full, streamed):
        assert [b["hardware"] for b in res.blocks][:1] == ["a.yaml"] and res.blocks[-1]["hardware"] == "b.yaml"
        assert res.blocks[0]["price_per_chip_hour"] == 2.5
        assert res.blocks[-1]["price_per_chip_hour"] == CHIPS["h200"].price_per_chip_hour
        assert res.skipped == ("1 chips with tp 2: 2 does not divide 1", "3 chips with tp 2: 2 does not divide 3")
        assert set(res.dropped_by_hardware) == {"a.yaml", "b.yaml"}
    assert streamed.dropped_slots == full.dropped_slots and full.dropped_slots
    # Each dropped slot: its kept batches are those up to largest_fit, and the first dropped one overflows.
    for slot in full.dropped_slots:
        on = (
            (full.columns["block"] == slot.block)
            & (full.columns["chips"] == slot.chips)
            & (full.columns["context"] == slot.context)
        )
        assert int(full.columns["batch"][on].max(initial=0)) == slot.largest_fit
        assert slot.total_bytes > slot.usable_hbm_bytes
