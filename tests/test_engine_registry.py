"""The engine-term registry: terms and their sources, how they enter a step (hand-derived), entries and lookup."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from roofline.analyses.step import step_from
from roofline.core.errors import RooflineError
from roofline.deploy import NO_ENGINE, deployment, engine_terms
from roofline.deploy.engine_builtin import builtin_entries
from roofline.deploy.engine_registry import REGISTRY, EngineTerm, register_engine_term
from roofline.specs import EngineCalibration, load_hardware, load_model
from roofline.terms import Work, step_terms

from .inprocess import run_roofline

H100 = load_hardware("h100-sxm")
LLAMA2_7B = load_model("llama-2-7b")


def entry(**terms: float) -> object:
    """An entry in registry terms (only the terms given; the rest read as their defaults)."""
    return replace(NO_ENGINE, values=terms, key="test/1", source="test entry")


def test_every_registered_term_has_unit_bounds_default_and_source():
    for name, term in REGISTRY.items():
        assert term.name == name and term.unit and term.source and term.doc
        assert term.low <= term.default <= term.high


def test_step_and_sequence_host_time_add_to_a_decode_step_by_hand():
    # 8 decodes of Llama-2-7B at 1024 on one H100 (a CUDA-graph step): + 1 ms per step + 8 x 10 us per
    # sampled sequence = +1.08 ms exactly; the eager launch term does not bind (8 tokens <= 512).
    base = float(step_from(deployment(LLAMA2_7B, H100, 1), 8, 1024).step_time_s)
    eng = entry(step_host_s=1e-3, seq_host_s=1e-5, eager_launch_s_per_layer=1e-3)
    got = step_from(deployment(LLAMA2_7B, H100, 1, engine=eng, achievable=False), 8, 1024)  # both at the peaks
    assert float(got.step_time_s) - base == pytest.approx(1.08e-3, rel=1e-12)
    assert float(got.engine_host_s) == pytest.approx(1.08e-3, rel=1e-12)


def test_an_engine_entry_puts_the_spec_sheet_at_its_achievable_fractions():
    # A real engine's kernels reach the chip's achievable fractions, not the peaks: with an entry in registry
    # terms the spec sheet defaults to them (its host terms must not absorb the gap); achievable=False keeps
    # the peaks; without an entry a dense model stays at the book's peaks.
    eng = entry(step_host_s=0.0)
    assert deployment(LLAMA2_7B, H100, 1, engine=eng).rates.achievable
    assert not deployment(LLAMA2_7B, H100, 1, engine=eng, achievable=False).rates.achievable
    assert not deployment(LLAMA2_7B, H100, 1).rates.achievable


def test_an_eager_step_takes_the_launch_floor_by_hand():
    # A 1024-token prompt of Llama-2-7B on the H100 spec sheet: 2 x 6.74e9 x 1024 FLOPs / 989 TFLOP/s
    # = 13.9 ms of matmuls (+ attention); 1024 > 512 graph tokens, so the step is eager and takes at
    # least 32 layers x 0.6 ms = 19.2 ms of launches: the floor binds and the step is host-bound.
    work = Work(prefill_seqs=1.0, prefill_len=1024.0)
    device = float(step_terms(deployment(LLAMA2_7B, H100, 1), work).time_s)
    assert 0.0139 < device < 0.0170
    eng = entry(eager_launch_s_per_layer=6e-4, cuda_graph_max_tokens=512)
    t = step_terms(deployment(LLAMA2_7B, H100, 1, engine=eng, achievable=False), work)
    assert float(t.time_s) == pytest.approx(32 * 6e-4, rel=1e-12)
    assert str(t.bound) == "host"
    # 256 tokens replay a graph: no floor.
    small = Work(prefill_seqs=1.0, prefill_len=256.0)
    assert float(
        step_terms(deployment(LLAMA2_7B, H100, 1, engine=eng, achievable=False), small).time_s
    ) == pytest.approx(float(step_terms(deployment(LLAMA2_7B, H100, 1), small).time_s), rel=1e-12)


def test_a_toy_term_added_from_outside_the_package_reaches_step_json():
    # A 1 ms per-step host term registered here (not in the package) is priced into every entry that does
    # not give it (its default), and step --json lists it with its source.
    toy = EngineTerm(
        "toy_host_s", "s", 0.0, 1.0, 1e-3, "this test", "a toy per-step host time", "step",
        step_s=lambda values, shape: np.where(np.greater(shape.tokens, 0), values["toy_host_s"], 0.0),
    )  # fmt: skip
    args = ("step", "-m", "llama-2-7b", "-H", "h100-sxm", "-b", "8", "-s", "1024", "--engine", "vllm", "--json")
    before = json.loads(run_roofline(*args).stdout)
    register_engine_term(toy)
    try:
        after = json.loads(run_roofline(*args).stdout)
    finally:
        REGISTRY.pop("toy_host_s")
    assert after["step_time_s"] - before["step_time_s"] == pytest.approx(1e-3, rel=1e-9)
    assert after["engine"]["terms"]["toy_host_s"] == 1e-3
    assert after["engine"]["term_sources"]["toy_host_s"] == "default: this test"
    assert "toy_host_s" not in before["engine"]["terms"]


def test_built_in_entries_exist_for_the_three_engines_and_name_every_number_source():
    keys = set(builtin_entries())
    assert {k.split("/")[0] for k in keys} >= {"vllm", "sglang", "trtllm"}
    for key, cal in builtin_entries().items():
        assert set(cal.terms) <= set(cal.term_sources), key
        assert cal.policy in ("decode-first", "prefill-first"), key


def test_engine_name_resolves_to_its_latest_built_in_version_on_any_profile():
    for hw in (H100, load_hardware("h100-sxm-cal"), load_hardware("a100-80gb")):
        assert engine_terms(hw, "trtllm/0.6.1").key == "trtllm/0.6.1"
        assert engine_terms(hw, "vllm").key.startswith("vllm/")
    # trtllm 1.0 is later than 0.6.1 (not a string comparison)
    assert engine_terms(H100, "trtllm").key == "trtllm/1.0"


def test_a_profile_entry_wins_over_the_built_in_one():
    own = EngineCalibration(terms={"step_host_s": 0.004}, term_sources={"step_host_s": "my fit"}, rows=3)
    hw = replace(H100, engine={"vllm/0.15.1": own})
    eng = engine_terms(hw, "vllm/0.15.1")
    assert eng.step_host_s == 0.004 and "h100-sxm" in eng.source
    assert eng.frontend_in_s == REGISTRY["frontend_in_s"].default  # not given: the registry default


def test_an_engine_with_no_entry_lists_the_entries_there_are():
    with pytest.raises(RooflineError, match=r"no such engine entry \(entries: .*sglang/.*vllm/"):
        engine_terms(H100, "tgi")
    run = run_roofline("step", "-m", "llama-2-7b", "-H", "h100-sxm", "--engine", "tgi")
    assert run.code == 2 and "tgi" in run.stderr and "vllm/" in run.stderr and "Traceback" not in run.stderr


def test_an_entry_with_an_unknown_or_out_of_range_term_is_refused():
    for terms, pattern in (
        ({"warp_speed": 1.0}, "unknown engine term 'warp_speed'"),
        ({"frontend_in_s": -1}, "0 to 1 s"),
    ):
        hw = replace(H100, engine={"x/1": EngineCalibration(terms=terms)})
        with pytest.raises(RooflineError, match=pattern):
            engine_terms(hw, "x/1")
