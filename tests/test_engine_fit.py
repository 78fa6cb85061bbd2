"""Engine terms: how they enter a step (hand-derived), the affine design of the fit, and recovery."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from roofline.analyses.step import step_from
from roofline.calibrate.engine import engine_fit as ef
from roofline.calibrate.engine.data import load_shipped
from roofline.calibrate.engine.predict import engine_key, predict_row
from roofline.core.errors import RooflineError
from roofline.deploy import NO_ENGINE, deployment
from roofline.specs import load_hardware, load_model

pytestmark = pytest.mark.slow  # fits or validates whole profiles: only in the full run

H100 = load_hardware("h100-sxm")
LLAMA = load_model("llama-3-8b")


def test_engine_terms_add_to_a_step_as_derived_by_hand():
    base = float(step_from(deployment(LLAMA, H100, 1), 8, 1024).step_time_s)
    # One step of 8 decodes on one H100: + step overhead + 8 sampled sequences' sampling
    # + 32 layers x (layer overhead + 8 tokens x bytes / 3.35 TB/s).
    eng = replace(
        NO_ENGINE,
        step_overhead_s=1e-3,
        sample_s_per_seq=1e-5,
        layer_overhead_s=2e-6,
        layer_bytes_per_token=1e5,
        key="test",
        source="test",
    )
    with_engine = float(step_from(deployment(LLAMA, H100, 1, engine=eng), 8, 1024).step_time_s)
    expected = 1e-3 + 8 * 1e-5 + 32 * (2e-6 + 8 * 1e5 / 3.35e12)
    assert with_engine - base == pytest.approx(expected, rel=1e-9)


def test_replicated_bytes_repeat_on_every_tp_chip_by_hand():
    # Llama-2-70B prefill of 2048 tokens on 8 H100s at tp 8, 1e5 B per token and layer: replicated
    # (each chip norms the whole [T, D]) that is 80 x 2048 x 1e5 B / 3.35 TB/s = 4.89 ms; split over
    # the 8 chips (layer_bytes_per_token) one eighth of it, 0.611 ms.  On one chip the two are equal.
    from roofline.terms import Work, step_terms

    model = load_model("llama-2-70b")
    work = Work(prefill_seqs=1.0, prefill_len=2048.0)
    for tp, replicated_s, split_s in ((8, 4.891e-3, 0.6114e-3), (1, 4.891e-3, 4.891e-3)):
        base = float(step_terms(deployment(model, H100, tp, tp=tp), work).time_s)
        for eng, added in (
            (replace(NO_ENGINE, replicated_bytes_per_token=1e5, key="t"), replicated_s),
            (replace(NO_ENGINE, layer_bytes_per_token=1e5, key="t"), split_s),
        ):
            slow = float(step_terms(deployment(model, H100, tp, tp=tp, engine=eng), work).time_s)
            assert slow - base == pytest.approx(added, rel=1e-3)


def test_gemm_slowdown_scales_the_gemm_term():
    dep = deployment(LLAMA, H100, 1)
    res = step_from(dep, 8, 1024)
    slow = step_from(deployment(LLAMA, H100, 1, engine=replace(NO_ENGINE, gemm_slowdown=0.5, key="t")), 8, 1024)
    # 1.5 x the GEMM time: the weight-read bound max(T_flops, T_weights) = 16.06 GB / 3.35 TB/s = 4.79 ms.
    assert float(slow.step_time_s) - float(res.step_time_s) == pytest.approx(0.5 * float(res.gemm_time_s))
    assert float(res.gemm_time_s) == pytest.approx(16.06e9 / 3.35e12, rel=0.01)


def test_collective_hop_latency_counts_ring_steps_by_hand():
    # Llama-2-70B on 8 H100s, tp 8, one decode step: 80 layers x 2 all-reduces x 2(8 - 1) ring steps
    # x 5 us = 11.2 ms on top of the kernel step; at tp 1 there is no collective, so nothing is added.
    model, hop = load_model("llama-2-70b"), replace(NO_ENGINE, collective_hop_s=5e-6, key="t")
    for tp, added in ((8, 80 * 2 * 14 * 5e-6), (1, 0.0)):
        base = float(step_from(deployment(model, H100, tp, tp=tp), 4, 1024).step_time_s)
        slow = float(step_from(deployment(model, H100, tp, tp=tp, engine=hop), 4, 1024).step_time_s)
        assert slow - base == pytest.approx(added, rel=1e-9, abs=1e-15)


def test_large_allreduce_term_prices_messages_from_its_threshold_by_hand():
    # Llama-2-70B prefill on 8 H100s at tp 8 with 10 ps more per byte from 64 MiB: a 4096-token step's
    # all-reduce message [4096, 8192] in bf16 is 4096 x 8192 x 2 B = 64 MiB, so each of its 80 x 2
    # all-reduces adds 2 x 7/8 x 64 MiB x 1e-11 s/B = 1.174 ms: 160 x 1.174 ms = 0.1879 s on the
    # network side of the step (on a GPU, the critical path); a 2048-token step's 32 MiB adds nothing.
    from roofline.terms import Work, step_terms

    model = load_model("llama-2-70b")
    eng = replace(NO_ENGINE, large_collective_s_per_byte=1e-11, large_collective_bytes=2.0**26, key="t")
    plain, large = deployment(model, H100, 8, tp=8), deployment(model, H100, 8, tp=8, engine=eng)
    for tokens, added in ((4096.0, 160 * 2 * 7 / 8 * 2**26 * 1e-11), (2048.0, 0.0)):
        work = Work(prefill_seqs=1.0, prefill_len=tokens)
        a, b = step_terms(plain, work), step_terms(large, work)
        assert float(b.time_s) - float(a.time_s) == pytest.approx(added, rel=1e-9, abs=1e-15)
        assert float(b.comms_time_s) - float(a.comms_time_s) == pytest.approx(added, rel=1e-9, abs=1e-15)
    assert "64 MiB" in step_terms(large, Work(prefill_seqs=1.0, prefill_len=4096.0)).sources["large_collectives"]
    # at tp 1 there is no all-reduce to price
    one = deployment(model, H100, 8, tp=1, engine=eng)
    work = Work(prefill_seqs=1.0, prefill_len=4096.0)
    assert float(step_terms(one, work).time_s) == float(step_terms(deployment(model, H100, 8, tp=1), work).time_s)


def test_fit_chooses_the_large_allreduce_threshold_or_none():
    # Synthetic designs: every affine term's column random, the large all-reduce term's columns per
    # threshold nonzero only from the row's own message size on.  With the truth at 64 MiB and 20 ps/B
    # the fit chooses 64 MiB and recovers the value; with the term absent from the truth it keeps none
    # (threshold 0, the term at its lower bound, written 0).
    rng = np.random.default_rng(3)
    rows = load_shipped("trtllm-perf-overview")[:40]
    names = list(ef.ENGINE_TERMS)
    scale = np.array([1.0 / ef.UNITS[n] for n in names]) * 1e-3
    k = ef.LARGE_THRESHOLDS_BYTES.index(2.0**26)
    ds = []
    for i, row in enumerate(rows):
        jac = rng.uniform(0.1, 1.0, len(names)) * scale * (np.arange(len(names)) % 3 == i % 3)
        message = 2.0 ** (23 + i % 6)  # 8 MiB … 256 MiB
        cols = np.where(message >= np.array(ef.LARGE_THRESHOLDS_BYTES), rng.uniform(1e9, 2e9), 0.0)
        ds.append(ef.Design(row, "ttft_s", 0.0, 0.01, jac, large_columns=cols))
    for truth_value, want in ((2e-11, 2.0**26), (0.0, 0.0)):
        truth = np.zeros(len(ef.FITTED_ENGINE_TERMS))
        truth[ef.LARGE_INDEX] = truth_value
        measured = [replace(d, measured=d.at_threshold(k).predict(truth)) for d in ds]
        fit = ef.fit_engine("synthetic/3", measured)
        entry = fit.profile_entry()
        assert entry["large_collective_bytes"] == want
        assert entry["large_collective_s_per_byte"] == pytest.approx(truth_value, rel=1e-3)


def test_kv_alltoalls_count_only_in_steps_with_decodes():
    # Qwen2.5-0.5B (2 KV heads) at tp 4: the KV cache is batch-sharded, so a decode step adds 2 all-to-alls
    # of its queries per layer, 2(4 - 1) + 2(4 - 1) = 12 + 6 = 18 ring steps a layer with the all-reduces.
    # A prefill-only step has no decode queries: its all-reduces' 12 steps a layer and no all-to-all time.
    from roofline.terms import Work, comms, step_terms

    model = load_model("qwen2.5-0.5b")
    dep = deployment(model, H100, 4, tp=4)
    layers = float(model.num_layers)
    decode = comms.stage_comms(dep, 8.0, 8.0, layers)
    prefill = comms.stage_comms(dep, 512.0, 0.0, layers)
    assert float(decode.ring_steps) == 18 * layers and float(prefill.ring_steps) == 12 * layers
    with_queries = comms.stage_comms(dep, 512.0, 1.0, layers)
    assert float(with_queries.time_s) > float(prefill.time_s)
    hop = replace(NO_ENGINE, collective_hop_s=5e-6, key="t")
    base = step_terms(dep, Work(prefill_seqs=1.0, prefill_len=512.0))
    slow = step_terms(deployment(model, H100, 4, tp=4, engine=hop), Work(prefill_seqs=1.0, prefill_len=512.0))
    assert float(slow.comms_time_s - base.comms_time_s) == pytest.approx(12 * layers * 5e-6, rel=1e-9)


def test_gqa_kv_reread_by_hand():
    # llama-3-8b (32 query heads over 8 KV heads: 3 extra reads of each KV head) on one H100, 8 decodes
    # at context 1024: KV 8 x 1024 x 131,072 B = 1.07e9 B; half re-read (f = 0.5): 0.5 x 3 x 1.07e9 B
    # / 3.35e12 B/s = 0.48 ms more.  An MHA model (GPT-J: K = N) has no group to re-read.
    hop = replace(NO_ENGINE, gqa_kv_reread=0.5, key="t")
    base = float(step_from(deployment(LLAMA, H100, 1), 8, 1024).step_time_s)
    slow = float(step_from(deployment(LLAMA, H100, 1, engine=hop), 8, 1024).step_time_s)
    assert slow - base == pytest.approx(0.5 * 3 * 8 * 1024 * 131_072 / 3.35e12, rel=1e-9)
    gptj = load_model("gpt-j-6b")
    assert (
        step_from(deployment(gptj, H100, 1, engine=hop), 8, 1024).step_time_s
        == step_from(deployment(gptj, H100, 1), 8, 1024).step_time_s
    )


def test_asking_for_an_engine_the_profile_lacks_names_what_it_has():
    with pytest.raises(RooflineError, match="no such engine entry .entries: .*trtllm/1.0"):
        deployment(LLAMA, load_hardware("h100-sxm-cal"), 1, engine="vllm/0.0")


@pytest.fixture(scope="module")
def designs():
    rows = [r for r in load_shipped("trtllm-first-token") if r.hardware == "h100-sxm"]
    hw = load_hardware("h100-sxm-cal")
    return [d for r in rows for d in ef.designs_for(r, hw)], hw


def test_design_is_the_prediction_path(designs):
    # The fit's affine design y0 + J·θ reproduces predict_row with those engine terms exactly.
    ds, hw = designs
    theta = ef.theta_of(
        {
            "step_overhead_s": 2e-3,
            "layer_overhead_s": 3e-5,
            "layer_bytes_per_token": 2e5,
            "replicated_bytes_per_token": 1e5,
            "sample_s_per_seq": 1e-4,
            "prefill_seq_overhead_s": 5e-3,
            "gemm_slowdown": 0.3,
            "collective_hop_s": 4e-6,
            "gqa_kv_reread": 0.2,
            "large_collective_s_per_byte": 5e-12,
            "prefill_floor_s": 0.03,
        }
    )
    # the large all-reduce term at its first threshold (16 MiB: the TP4 2048-token prefills' 32 MiB pass it)
    eng = replace(
        NO_ENGINE,
        **dict(zip(ef.FITTED_ENGINE_TERMS, theta, strict=True)),
        key="t",
        source="t",
        large_collective_bytes=ef.LARGE_THRESHOLDS_BYTES[0],
    )
    floored = large = 0
    for d in ds:
        direct = predict_row(d.row, hw, eng)["ttft_s"]
        assert d.at_threshold(0).predict(theta) == pytest.approx(direct, rel=1e-9)
        floored += direct == pytest.approx(0.03, rel=1e-12)
        large += bool(d.large_columns is not None and d.large_columns[0] > 0)
    assert 0 < floored < len(ds)  # the 30 ms floor binds some of these prefills, not all
    assert 0 < large < len(ds)  # and the large all-reduces price some of them (tp > 1), not all


def test_design_columns_of_the_tp_and_gqa_terms_are_the_prediction_path():
    # A TP4 Llama-2-70B decode (splitwise-sim, H100): ring steps and GQA groups exist, so both columns
    # of the affine design are non-zero, and y0 + J·θ still equals predict_row with those terms.
    hw = load_hardware("h100-sxm-cal")
    row = next(
        r for r in load_shipped("splitwise-sim") if r.hardware == "h100-sxm" and r.tp == 4 and r.model == "llama-2-70b"
    )
    ds = [d for d in ef.designs_for(row, hw) if d.quantity == "tpot_s"]
    assert ds
    names = list(ef.ENGINE_TERMS)
    for name in ("collective_hop_s", "gqa_kv_reread", "replicated_bytes_per_token"):
        assert ds[0].jacobian[names.index(name)] > 0
    theta = ef.theta_of(
        {
            "step_overhead_s": 1e-3,
            "layer_overhead_s": 2e-5,
            "layer_bytes_per_token": 1e5,
            "replicated_bytes_per_token": 5e4,
            "sample_s_per_seq": 1e-4,
            "prefill_seq_overhead_s": 2e-3,
            "gemm_slowdown": 0.2,
            "collective_hop_s": 5e-6,
            "gqa_kv_reread": 0.5,
            "large_collective_s_per_byte": 0.0,
            "prefill_floor_s": 0.0,
        }
    )
    eng = replace(NO_ENGINE, **dict(zip(ef.FITTED_ENGINE_TERMS, theta, strict=True)), key="t", source="t")
    assert ds[0].predict(theta) == pytest.approx(predict_row(row, hw, eng)["tpot_s"], rel=1e-9)


def test_design_columns_of_the_large_allreduce_term_follow_the_message_size():
    # A TP4 Llama-2-70B prefill of 4096 tokens (splitwise-sim, H100): its all-reduce message is
    # 4096 x 8192 x 2 B = 64 MiB, so the large all-reduce column is non-zero at the 16, 32 and 64 MiB
    # thresholds (the same there: the same bytes priced) and zero at 128 and 256 MiB; its decode steps'
    # messages are far smaller, so TPOT's column is zero at all of them.  At 64 MiB and 3e-12 s/B the
    # design still equals predict_row.
    hw = load_hardware("h100-sxm-cal")
    row = next(
        r
        for r in load_shipped("splitwise-sim")
        if r.hardware == "h100-sxm" and r.tp == 4 and r.model == "llama-2-70b" and r.input_len == 4096 and r.batch == 1
    )
    by_q = {d.quantity: d for d in ef.designs_for(row, hw)}
    ttft, tpot = by_q["ttft_s"], by_q["tpot_s"]
    assert ef.LARGE_THRESHOLDS_BYTES[:3] == (2.0**24, 2.0**25, 2.0**26)
    assert ttft.large_columns[0] > 0 and np.all(ttft.large_columns[:3] == ttft.large_columns[0])
    assert np.all(ttft.large_columns[3:] == 0) and np.all(tpot.large_columns == 0)
    values = {**dict.fromkeys(ef.FITTED_ENGINE_TERMS, 0.0), "large_collective_s_per_byte": 3e-12}
    eng = replace(NO_ENGINE, **values, large_collective_bytes=2.0**26, key="t", source="t")
    assert ttft.at_threshold(2).predict(ef.theta_of(values)) == pytest.approx(
        predict_row(row, hw, eng)["ttft_s"], rel=1e-9
    )


def test_fit_recovers_known_terms(designs):
    # Measurements synthesised from known terms are fitted back (the rows identify them).
    ds, _ = designs
    truth = ef.theta_of(
        {
            **dict.fromkeys(ef.FITTED_ENGINE_TERMS, 0.0),
            "layer_overhead_s": 4e-5,
            "prefill_seq_overhead_s": 3e-3,
            "gemm_slowdown": 0.4,
            "collective_hop_s": 6e-6,
        }
    )
    fake = [replace(d, measured=d.predict(truth)) for d in ds]
    fitted = ef.theta_of(ef.fit_terms(fake * 2))
    assert float(np.max(ef.ape(fake, fitted))) < 0.01
    assert engine_key(ds[0].row) == "trtllm/0.5.0"


def test_calibrate_fit_adds_an_engine_from_end_to_end_rows(tmp_path):
    # A user's end-to-end rows (here 20 shipped splitwise rows of one H100 engine) on top of a kernel
    # profile: `calibrate fit ROWS.csv --hardware PROFILE` writes an engine: entry that step then uses.
    from roofline.calibrate.engine.schema import write_rows
    from tests.conftest import run_cli, run_json

    rows = [r for r in load_shipped("splitwise-sim") if r.hardware == "h100-sxm"][:20]
    path = tmp_path / "mine.csv"
    write_rows(rows, path)
    out = tmp_path / "mine-cal.yaml"
    proc = run_cli("calibrate", "fit", str(path), "--hardware", "h100-sxm-cal", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    profile = load_hardware(str(out))
    assert "unknown/any" in (profile.engine or {}) and profile.engine["unknown/any"].rows == 20
    step = run_json(
        "step", "--model", "llama-2-70b", "--hardware", str(out), "--chips", "4", "--tp", "4", "--engine", "unknown/any"
    )
    plain = run_json("step", "--model", "llama-2-70b", "--hardware", "h100-sxm", "--chips", "4", "--tp", "4")
    assert "calibrated engine unknown/any" in step["sources"]["engine"]
    assert step["step_time_s"] > plain["step_time_s"]  # the engine's work outside the kernels


def test_refit_keeps_and_prices_with_the_hand_set_fused_parallel_block():
    # A profile whose trtllm/0.6.1 entry says by hand that Falcon's parallel block all-reduces once per
    # layer: refitting that engine on its rows prices every row with one all-reduce per layer (the design's
    # y0 is predict_row with that entry's hand-set properties, not with two) and writes the flag back.
    from roofline.calibrate.engine.profiles import with_engines
    from roofline.specs import hardware_from_dict

    base = load_hardware("h100-sxm-cal")
    data = base.model_dump(exclude_none=True)
    data["engine"]["trtllm/0.6.1"]["fused_parallel_block"] = True
    profile = hardware_from_dict(data, "<test profile>")
    rows = [
        r for r in load_shipped("trtllm-static-batch") if r.hardware == "h100-sxm" and engine_key(r) == "trtllm/0.6.1"
    ]
    falcon = next(r for r in rows if r.model == "falcon-180b")
    d = next(d for d in ef.designs_for(falcon, profile) if d.quantity == "throughput")
    fused = ef.handset_engine(falcon, profile)
    assert fused.fused_parallel_block and not ef.handset_engine(falcon, base).fused_parallel_block
    assert 1.0 / d.y0 == pytest.approx(predict_row(falcon, profile, fused)["output_tokens_per_s"], rel=1e-12)
    assert d.y0 != pytest.approx(1.0 / predict_row(falcon, profile, NO_ENGINE)["output_tokens_per_s"], rel=1e-6)
    refit, fits = with_engines(profile, rows)
    assert refit.engine["trtllm/0.6.1"].fused_parallel_block and fits["trtllm/0.6.1"].fused_parallel_block


def test_fit_tells_absent_terms_from_terms_at_their_upper_bound():
    # Synthetic designs whose truth needs a GEMM slowdown of 8 (its range ends at 5) and nothing else:
    # the fit pins gemm_slowdown at the top (a missing term, listed in at_upper_bound); terms at the
    # bottom are absent (written as 0, not listed there); at_bound lists both, as before.  Half the
    # rows see only the GEMM column, the other half every other column and measure y0 exactly, so no
    # other term can make up for the capped slowdown without spoiling those rows: all end absent.
    rng = np.random.default_rng(1)
    rows = load_shipped("trtllm-perf-overview")[:40]
    names = list(ef.ENGINE_TERMS)
    g = names.index("gemm_slowdown")
    truth = np.zeros(len(ef.FITTED_ENGINE_TERMS))  # the affine terms, then the floor (0)
    truth[g] = 8.0
    scale = np.array([1.0 / ef.UNITS[n] for n in names]) * 1e-3
    ds = []
    for i, row in enumerate(rows):
        jac = rng.uniform(0.1, 1.0, len(names)) * scale
        mask = np.arange(len(names)) == g
        ds.append(ef.Design(row, "ttft_s", 0.0, 0.01, np.where(mask if i % 2 == 0 else ~mask, jac, 0.0)))
    ds = [replace(d, measured=d.predict(truth)) for d in ds]
    fit = ef.fit_engine("synthetic/1", ds)
    entry = fit.profile_entry()
    assert entry["at_upper_bound"] == ["gemm_slowdown"] and entry["gemm_slowdown"] == pytest.approx(5.0)
    assert sorted(fit.at_lower) == sorted(n for n in ef.FITTED_ENGINE_TERMS if n != "gemm_slowdown")
    assert all(entry[n] == 0.0 for n in fit.at_lower)
    assert sorted(entry["at_bound"]) == sorted(fit.at_lower + ["gemm_slowdown"])


def test_refit_prices_base_and_units_with_the_entry_comms_overlap():
    # An entry that says by hand its collectives overlap half the local work: the fit's base prediction
    # (no fitted term) and each unit column use that overlap alike, so y0 is predict_row with the entry's
    # overlap and every column is the non-negative cost of one unit of its term (with the base at the
    # default overlap 0 and the units at 0.5, columns came out negative).
    from roofline.calibrate.engine.predict import row_deployment
    from roofline.specs import hardware_from_dict

    data = load_hardware("h100-sxm-cal").model_dump(exclude_none=True)
    data["engine"]["trtllm/0.6.1"]["comms_overlap"] = 0.5
    profile = hardware_from_dict(data, "<test profile>")
    row = next(
        r
        for r in load_shipped("trtllm-static-batch")
        if r.hardware == "h100-sxm" and r.tp == 2 and engine_key(r) == "trtllm/0.6.1"
    )
    handset = ef.handset_engine(row, profile)
    assert row_deployment(row, profile, handset).comms_overlap == 0.5
    assert row_deployment(row, profile, ef.unit_engine("collective_hop_s", handset)).comms_overlap == 0.5
    d = next(d for d in ef.designs_for(row, profile) if d.quantity == "throughput")
    assert 1.0 / d.y0 == pytest.approx(predict_row(row, profile, handset)["output_tokens_per_s"], rel=1e-12)
    assert np.all(d.jacobian >= 0) and d.jacobian[list(ef.ENGINE_TERMS).index("step_overhead_s")] > 0


def test_prompt_step_floor_by_hand():
    # A 30 ms floor under prompt-only steps (an eager engine's launches): Llama-3-8B's 128-token prefill
    # on one H100 (spec sheet: 2 x 8.0e9 x 128 FLOPs / 989 TFLOP/s = 2.1 ms, under the 16 GB weight read's
    # 4.8 ms) takes the floor; a 16,384-token prefill (its matmuls alone 2 x 8.0e9 x 16,384 / 989e12 =
    # 0.265 s, with causal attention more) is above it and unchanged; a decode step and a step that
    # carries decodes and a prompt do not take it.
    from roofline.terms import Work, step_terms

    floor = replace(NO_ENGINE, prefill_floor_s=0.03, key="t")
    plain_dep, floor_dep = deployment(LLAMA, H100, 1), deployment(LLAMA, H100, 1, engine=floor)
    short, long = Work(prefill_seqs=1.0, prefill_len=128.0), Work(prefill_seqs=1.0, prefill_len=16384.0)
    assert float(step_terms(plain_dep, short).time_s) < 0.006
    assert float(step_terms(floor_dep, short).time_s) == pytest.approx(0.03, rel=1e-12)
    # what binds: the 4.8 ms read on the spec sheet, the host's 30 ms of launches with the floor
    assert str(step_terms(plain_dep, short).bound) == "memory" and str(step_terms(floor_dep, short).bound) == "host"
    assert float(step_terms(plain_dep, long).time_s) > 0.265
    assert float(step_terms(floor_dep, long).time_s) == float(step_terms(plain_dep, long).time_s)
    assert str(step_terms(floor_dep, long).bound) == "compute"
    for work in (
        Work(decode_seqs=8.0, decode_context=1024.0),
        Work(decode_seqs=8.0, decode_context=1024.0, prefill_seqs=1.0, prefill_len=128.0),
    ):
        assert float(step_terms(floor_dep, work).time_s) == float(step_terms(plain_dep, work).time_s)
        assert str(step_terms(floor_dep, work).bound) == str(step_terms(plain_dep, work).bound)
    # on an array of prompt lengths the floor binds point by point: 128 → host, 16,384 → compute
    both = step_terms(floor_dep, Work(prefill_seqs=1.0, prefill_len=np.array([128.0, 16384.0])))
    assert both.bound.tolist() == ["host", "compute"] and both.bound_code.dtype == np.int8


def test_floor_that_a_row_cannot_express_exactly_is_kept_absent():
    # A design whose floor does not enter as scale·max(0, F − p) (floor_ok False) makes the fit keep the
    # floor at its lower bound (written 0, listed at_bound), whatever the other designs would fit.
    rng = np.random.default_rng(2)
    rows = load_shipped("trtllm-perf-overview")[:30]
    n = len(ef.ENGINE_TERMS)
    ds = [
        ef.Design(r, "ttft_s", 0.02, 0.01, rng.uniform(0.1, 1.0, n) * 1e-3, 1.0, 0.01, np.zeros(n), i > 0)
        for i, r in enumerate(rows)
    ]
    fit = ef.fit_engine("synthetic/2", ds)
    assert fit.profile_entry()["prefill_floor_s"] == 0.0 and "prefill_floor_s" in fit.at_lower


def test_shipped_splitwise_entries_put_the_large_allreduce_threshold_where_the_rows_step():
    # splitwise-sim's prefills step up in per-token cost between BLOOM-176B's 2048-token step (all-reduce
    # message 2048 x 14336 x 2 B = 56 MiB: no step) and Llama-2-70B's 4096-token one (4096 x 8192 x 2 B
    # = 64 MiB: stepped); the only candidate power of two in (56, 64] MiB is 64 MiB, on both chips.
    for chip in ("h100-sxm-cal", "a100-80gb-cal"):
        entry = load_hardware(chip).engine["unknown/any"]
        assert entry.large_collective_bytes == 2.0**26 and entry.large_collective_s_per_byte > 0
