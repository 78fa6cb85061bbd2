"""Cartesian decode sweeps: the book's LLaMA-2-13B numbers, OOM counts derived by hand, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.sweep.run import COLUMNS, decode_sweep, feasible_points, parse_int_list
from roofline.core.errors import RooflineError
from roofline.specs import load_hardware, load_model
from tests.profiles import at_most

V5E = load_hardware("tpu-v5e")
H100 = load_hardware("h100-sxm")
LLAMA = load_model("llama-2-13b")
LLAMA_GQA = load_model("llama-2-13b-gqa")


def test_book_table_on_8x_v5e() -> None:
    # The book's LLaMA-2-13B table on 8x TPU v5e, context 8192: 4.98 ms and 200.61 tok/s at
    # batch 1, 20.30 ms and 787.99 tok/s at batch 16.  tp = 8 adds 1.1 ms of (latency-bound)
    # collectives, fully overlapped, so the step stays the book's general form.
    r = decode_sweep(LLAMA, [V5E], batch=[1, 16], chips=[8], context=[8192], memory_utilization=1.0)
    assert r.columns["batch"].tolist() == [1, 16]
    assert r.columns["step_time_s"] == pytest.approx([4.98e-3, 20.30e-3], rel=0.01)
    assert r.columns["tokens_per_s"] == pytest.approx([200.61, 787.99], rel=0.01)
    assert r.columns["tokens_per_s_per_chip"] == pytest.approx([200.61 / 8, 787.99 / 8], rel=0.01)
    assert r.column("critical_batch")[0] == pytest.approx(240, rel=0.01)  # the book: 240 on v5e
    assert set(r.columns["bound"].tolist()) == {"memory"}


def test_out_of_memory_points_are_dropped_and_counted() -> None:
    # 8x v5e hold 8·16 GiB = 137,438,953,472 B.  LLaMA-2-13B: weights 2·13,015,864,320 =
    # 26,031,728,640 B; KV of one 8192-token sequence 2·2·40·40·128·8192 = 6,710,886,400 B.
    # Max batch = floor((137.44e9 - 26.03e9) / 6.711e9) = floor(16.6) = 16 (the book: OOM
    # beyond 16).  With the GQA variant (K = 8, 11,338,142,720 params): KV 1,342,177,280 B
    # per sequence, max batch floor((137.44e9 - 22.68e9) / 1.342e9) = floor(85.5) = 85.
    batches = np.arange(1, 129)
    mha = decode_sweep(LLAMA, [V5E], batch=batches, chips=[8], context=[8192], memory_utilization=1.0)
    gqa = decode_sweep(LLAMA_GQA, [V5E], batch=batches, chips=[8], context=[8192], memory_utilization=1.0)
    assert mha.columns["batch"].max() == 16 and len(mha) == 16
    assert mha.evaluated == 128 and mha.dropped_out_of_memory == 112
    assert gqa.columns["batch"].max() == 85 and gqa.dropped_out_of_memory == 128 - 85
    assert mha.dropped_by_hardware == {"tpu-v5e": 112}


def test_cost_per_million_tokens_by_hand() -> None:
    # H100 at $3/GPU-hour, one GPU, batch 1, llama-2-13b bf16 at context 2048, memory-bound:
    # step = (26,031,728,640 + 2·2·40·40·128·2048) / 3.35e12 = 27,709,450,240 / 3.35e12
    # = 8.2715 ms -> 120.90 tok/s; $/Mtok = 3 / 3600 / 120.90 · 1e6 = 6.893.
    r = decode_sweep(LLAMA, [H100], batch=[1], chips=[1], context=[2048])
    assert r.columns["step_time_s"][0] == pytest.approx(8.2715e-3, rel=1e-4)
    assert r.columns["cost_per_million_tokens"][0] == pytest.approx(6.893, rel=1e-3)
    # A price from the command line scales it linearly: $6/h doubles it.
    r6 = decode_sweep(LLAMA, [H100], batch=[1], chips=[1], context=[2048], prices={"h100-sxm": 6.0})
    assert r6.columns["cost_per_million_tokens"][0] == pytest.approx(2 * 6.893, rel=1e-3)
    assert r6.sources["price:h100-sxm"] == "command line"


def test_dtype_blocks_and_labels() -> None:
    # int8 weights halve the 26 GB of weights: at batch 1, 8x v5e, context 8192 the step is
    # (13.02e9 + 6.71e9) / (8·8.2e11) = 3.007 ms instead of 4.99 ms.
    r = decode_sweep(LLAMA, [V5E], batch=[1], chips=[8], context=[8192], weights=["bf16", "int8"])
    weights = r.column("weights").tolist()
    assert weights == ["bf16", "int8"]
    assert r.columns["step_time_s"][1] == pytest.approx((13_015_864_320 + 6_710_886_400) / (8 * 8.2e11), rel=1e-6)
    row = r.rows()[1]
    assert list(row) == list(COLUMNS) and row["weights"] == "int8" and row["hardware"] == "tpu-v5e"


def test_tensor_parallel_degrees_must_divide_chips() -> None:
    # tp = 2 serves slices of 2 and 4 chips (not 1 or 3); tp = 1 has no collectives.  An explicit
    # tp k makes chips/k replicas that each hold the weights: LLaMA-2-13B's 26 GB never fit one
    # 16 GiB chip, so no tp-1 point fits; LLaMA-3-8B's 16.1 GB + 134 MB of KV do.
    r = decode_sweep(LLAMA, [V5E], batch=[1], chips=[1, 2, 3, 4], context=[1024], tp=[1, 2])
    pairs = sorted(zip(r.columns["tp"].tolist(), r.columns["chips"].tolist(), strict=True))
    assert pairs == [(2, 2), (2, 4)]
    # (all of HBM: at the default 0.9 of 17.18 GB = 15.46 GB, LLaMA-3-8B's 16.1 GB no longer fit one chip)
    r = decode_sweep(
        load_model("llama-3-8b"),
        [V5E],
        batch=[1],
        chips=[1, 2, 3, 4],
        context=[1024],
        tp=[1, 2],
        memory_utilization=1.0,
    )
    pairs = sorted(zip(r.columns["tp"].tolist(), r.columns["chips"].tolist(), strict=True))
    assert pairs == [(1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 4)]
    comms = dict(zip(r.columns["tp"].tolist(), r.columns["comms_time_s"].tolist(), strict=True))
    assert comms[1] == 0.0 and comms[2] > 0.0
    with pytest.raises(RooflineError, match=r"^tp: no degree"):  # the Python parameter, not the CLI flag
        decode_sweep(LLAMA, [V5E], batch=[1], chips=[3], context=[1024], tp=[2])


def test_everything_out_of_memory_gives_an_empty_result() -> None:
    # LLaMA-3-70B (about 141 GB in bf16) on one 16 GiB v5e: nothing fits.
    r = decode_sweep(load_model("llama-3-70b"), [V5E], batch=[1, 2], chips=[1], context=[1024])
    assert len(r) == 0 and r.evaluated == 2 and r.dropped_out_of_memory == 2
    assert r.rows() == []


def test_parse_int_list_and_bad_input() -> None:
    assert parse_int_list("8,1,2,2", "--batch").tolist() == [1, 2, 8]
    assert parse_int_list("1..20", "--batch").tolist() == [1, 2, 4, 8, 16, 20]
    for bad in ("0", "a", "4..2", "-1"):
        with pytest.raises(RooflineError, match="--batch"):
            parse_int_list(bad, "--batch")
    with pytest.raises(RooflineError, match="^weights: unknown dtype 'int3'"):
        decode_sweep(LLAMA, [V5E], batch=[1], weights=["int3"])


def test_feasible_points_prefix_by_hand() -> None:
    # Sorted batches 1, 2, 4, 8; max batch per slot 3, 0, 8: slot 0 keeps 1, 2; slot 2 all.
    slot, b = feasible_points(np.array([1, 2, 4, 8]), np.array([3.0, 0.0, 8.0]))
    assert slot.tolist() == [0, 0, 2, 2, 2, 2] and b.tolist() == [1, 2, 1, 2, 4, 8]


@at_most(25)
@given(
    st.sampled_from(["llama-2-13b", "llama-2-13b-gqa", "llama-3-8b", "mixtral-8x7b"]),
    st.sampled_from(["tpu-v5e", "h100-sxm", "h200"]),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([512, 4096, 32768]),
    st.sampled_from(["bf16", "int8", "int4"]),
)
def test_invariants(model: str, hw: str, chips: int, context: int, weights: str) -> None:
    r = decode_sweep(
        load_model(model),
        [load_hardware(hw)],
        batch=np.arange(1, 513),
        chips=[chips],
        context=[context],
        weights=[weights],
    )
    c = r.columns
    assert len(r) + r.dropped_out_of_memory == r.evaluated == 512
    assert np.all(c["total_bytes"] <= c["hbm_capacity_bytes"])
    assert np.all(c["step_time_s"] <= c["step_time_upper_s"])
    # Feasible batches are a prefix 1..max; step time and tokens/s/chip never fall with batch.
    assert c["batch"].tolist() == list(range(1, len(r) + 1))
    assert np.all(np.diff(c["step_time_s"]) >= 0)
    assert np.all(np.diff(c["tokens_per_s_per_chip"]) >= -1e-9 * c["tokens_per_s_per_chip"][1:])
    assert np.allclose(c["tokens_per_s_per_user"] * c["step_time_s"], 1.0)


def test_slice_shapes_and_the_tp_degrees_they_allow() -> None:
    # A tp group spans leading ICI axes: 4x4 allows tp 1, 4, 16 and 2x8 allows 1, 2, 16, so
    # of tp {4, 16}: (4x4, 4), (4x4, 16), (2x8, 16).  Both shapes are 16 chips; LLaMA-2-13B
    # bf16 at context 1024 fits at batch 1 and 8 on 16 x 16 GiB, so 3 blocks × 2 batches.
    r = decode_sweep(LLAMA, [V5E], batch=[1, 8], context=[1024], tp=[4, 16], topologies=["4x4", "2x8"])
    got = sorted(set(zip(r.column("topology").tolist(), r.columns["tp"].tolist(), strict=True)))
    assert got == [("2x8", 16), ("4x4", 4), ("4x4", 16)]
    assert r.evaluated == 6 and len(r) == 6 and set(r.columns["chips"].tolist()) == {16}
    assert np.all(r.columns["comms_time_s"] > 0)
    with pytest.raises(RooflineError, match=r"^tp: no degree"):
        decode_sweep(LLAMA, [V5E], batch=[1], tp=[3], topologies=["4x4"])
    with pytest.raises(ValueError, match="topology_text"):
        decode_sweep(LLAMA, [V5E], batch=[1], topologies=["4y4"])
