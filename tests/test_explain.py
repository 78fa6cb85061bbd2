"""Explanations (--explain), step-time bounds, `roofline diff` and `--units`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.diff import TERMS, diff_steps
from roofline.analyses.request import request_from
from roofline.analyses.step import Precision, decode_step, step_from
from roofline.analyses.sweep.run import decode_sweep
from roofline.deploy import deployment
from roofline.specs import load_hardware, load_model
from roofline.views.explain import explain_request, explain_step
from tests.conftest import run_cli, run_json
from tests.profiles import at_most

M13 = load_model("llama-2-13b")
V5E = load_hardware("tpu-v5e")


def by_name(explanations):
    return {e.name: e for e in explanations}


def test_step_explanation_reproduces_the_book_table():
    # The book's LLaMA-2-13B table on 8x v5e, batch 16 at 8192 tokens: 20.30 ms per step.
    dep = deployment(M13, V5E, 8, memory_utilization=1.0)
    res = step_from(dep, 16, 8192)
    ex = by_name(explain_step(dep, 16, 8192, res))
    assert ex["step time"].value == pytest.approx(20.30e-3, rel=0.01)
    local = ex["step time without collectives"]
    terms = {t.symbol: t.value for t in local.terms}
    # attention + GEMMs + overhead, and on the spec sheet T_kv + max(T_flops, T_weights).
    assert terms["attention"] + terms["GEMMs"] + terms["overhead"] == pytest.approx(local.value)
    assert ex["KV read time"].value + max(ex["matmul time"].value, ex["weight load time"].value) == pytest.approx(
        local.value
    )
    # B = 16 is far below the critical batch (240): the weight load binds, not the FLOPs.
    assert not ex["matmul time"].binding
    assert ex["critical batch"].value == pytest.approx(1.97e14 / 8.2e11)  # 240.2, the book's 240
    assert "What about memory?" in ex["KV cache per sequence"].section
    kv = {t.symbol: t.value for t in ex["KV cache per sequence"].terms}
    # 2·K·H·L·bytes·S = 2·40·128·40·2·8192 = 6.71e9 bytes.
    assert 2 * kv["K"] * kv["H"] * kv["L"] * kv["bytes"] * kv["S"] == pytest.approx(ex["KV cache per sequence"].value)


@at_most(40)
@given(
    batch=st.integers(1, 2048),
    context=st.integers(1, 32768),
    chips=st.sampled_from([1, 4, 8, 16]),
    tp=st.sampled_from([None, 1, 2, 4]),
)
def test_step_time_lies_between_overlapped_and_serialized(batch, context, chips, tp):
    res = decode_step(M13, V5E, chips, batch, context, tp=min(tp, chips) if tp else None)
    lower, step, upper = float(res.step_time_lower_s), float(res.step_time_s), float(res.step_time_upper_s)
    assert lower <= step * (1 + 1e-12) and step <= upper * (1 + 1e-12)
    # The lower bound is at least the book's pure-bandwidth minimum.
    assert lower >= float(res.min_step_time_s) * (1 - 1e-12)


MODELS = ("llama-3-8b", "llama-2-13b", "mixtral-8x7b", "gemma-2-9b", "deepseek-v3")
CHIPS = ("h100-sxm", "tpu-v5e", "b200")


@at_most(30)
@given(
    model=st.sampled_from(MODELS),
    chip=st.sampled_from(CHIPS),
    chips=st.sampled_from([1, 2, 4, 8]),
    tp_index=st.integers(0, 3),
    batch=st.integers(1, 512),
    context=st.integers(16, 16384),
    weights=st.sampled_from(["bf16", "int8"]),
    kv=st.sampled_from(["bf16", "int8"]),
)
def test_step_diff_explain_and_sweep_agree_exactly(model, chip, chips, tp_index, batch, context, weights, kv):
    # One step model: the same configuration through step, diff's A side, --explain and the sweep.
    m, hw = load_model(model), load_hardware(chip)
    divisors = [t for t in (1, 2, 4, 8) if chips % t == 0]
    tp = divisors[min(tp_index, len(divisors) - 1)]
    prec = Precision(weights, kv)
    dep = deployment(m, hw, chips, prec, tp=tp)
    res = step_from(dep, batch, context)
    assert float(decode_step(m, hw, chips, batch, context, prec, tp=tp).step_time_s) == float(res.step_time_s)
    d = diff_steps(res, res)
    assert d.step_a_s == pytest.approx(float(res.step_time_s), rel=1e-12)
    ex = by_name(explain_step(dep, batch, context, res))
    for name, key in (
        ("step time", "step_time_s"),
        ("step time lower bound", "step_time_lower_s"),
        ("step time upper bound", "step_time_upper_s"),
        ("usable HBM", "usable_hbm_bytes"),
        ("tokens/s", "tokens_per_s"),
    ):
        assert ex[name].value == float(getattr(res, key))
    sw = decode_sweep(
        m, [hw], batch=[batch], chips=[chips], context=[context], weights=[weights], kv_dtypes=[kv], tp=[tp]
    )
    if bool(res.fits):
        assert len(sw) == 1 and sw.columns["step_time_s"][0] == pytest.approx(float(res.step_time_s), rel=1e-12)
    else:
        assert len(sw) == 0


def test_request_explanation_names_the_binding_part():
    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    dep = deployment(m, hw, 1)
    res = request_from(dep, 2048, 256)
    ex = by_name(explain_request(dep, 1, 1.0, res))
    # Prefill of 2048 tokens: 2·8.03e9·2048 = 3.29e13 FLOPs over 9.89e14 FLOP/s = 33 ms, above
    # the 16 GB / 3.35 TB/s = 4.8 ms of reads: compute-bound.
    assert ex["TTFT (prefill)"].note == "compute-bound"  # the step terms' own bound, not recomputed here
    assert ex["latency"].note == "decode dominates"
    assert ex["latency"].value == pytest.approx(float(res.ttft_s) + float(res.decode_time_s))


def test_request_explanation_names_the_prefill_floor_where_it_binds():
    # An engine with a 50 ms floor under prompt-only steps: the 128-token prefill of Llama-3-8B on one
    # H100 (2·8.03e9·128 FLOPs / 989 TFLOP/s = 2.1 ms, reads 16 GB / 3.35 TB/s = 4.8 ms) takes the floor,
    # and the explanation says so; an 8192-token one (2·8.03e9·8192 / 989e12 = 133 ms of matmuls) is
    # above it and stays compute-bound.
    from dataclasses import replace

    from roofline.deploy import NO_ENGINE

    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    dep = deployment(m, hw, 1, engine=replace(NO_ENGINE, prefill_floor_s=0.05, key="t"))
    short = by_name(explain_request(dep, 1, 1.0, request_from(dep, 128, 16)))["TTFT (prefill)"]
    assert short.value == pytest.approx(0.05) and short.note == "host-bound: the engine's prefill floor (host launches)"
    assert "floor" in short.formula and any(t.symbol == "floor" for t in short.terms)
    long = by_name(explain_request(dep, 1, 1.0, request_from(dep, 8192, 16)))["TTFT (prefill)"]
    assert long.value > 0.13 and long.note == "compute-bound"


def test_diff_terms_add_up_exactly():
    a = decode_step(M13, V5E, 8, 16, 8192)
    b = decode_step(M13, V5E, 8, 16, 8192, Precision(kv="int8"))
    d = diff_steps(a, b)
    by = {t.term: t for t in d.terms}
    assert [t.term for t in d.terms] == list(TERMS)
    assert sum(t.delta_s for t in d.terms) == pytest.approx(d.step_b_s - d.step_a_s)
    assert sum(t.cost_delta for t in d.terms) + d.cost_delta_from_price_chips_batch == pytest.approx(
        d.cost_b - d.cost_a
    )
    # An int8 cache halves the KV term and changes nothing else: 16·6.71e9/2 / 6.56e12 = 8.18 ms saved.
    assert by["KV reads"].delta_s == pytest.approx(-16 * 6.71e9 / 2 / (8 * 8.2e11), rel=0.01)
    assert by["KV reads"].share == pytest.approx(1.0)
    assert by["weight reads"].delta_s == 0


def test_diff_across_chips_splits_price_and_time():
    a = decode_step(M13, V5E, 8, 64, 4096)
    b = decode_step(M13, load_hardware("h100-sxm"), 2, 64, 4096)
    d = diff_steps(a, b)
    assert sum(t.cost_delta for t in d.terms) + d.cost_delta_from_price_chips_batch == pytest.approx(
        d.cost_b - d.cost_a
    )
    assert d.cost_a == pytest.approx(float(a.cost_per_million_tokens))


@pytest.mark.slow
def test_cli_explain_diff_and_units():
    out = run_json(
        "step",
        "--model",
        "llama-2-13b",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "8",
        "--batch",
        "16",
        "--context",
        "8192",
        "--explain",
    )
    names = {e["name"] for e in out["explain"]}
    assert {"step time", "step time lower bound", "step time upper bound", "KV read time"} <= names
    assert all(e["section"].startswith("How to Scale Your Model") for e in out["explain"])
    out = run_json("request", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "512", "-o", "64", "--explain")
    assert out["explain"][1]["name"] == "TTFT (prefill)"
    out = run_json(
        "diff",
        "--model",
        "llama-2-13b",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "8",
        "--batch",
        "16",
        "--context",
        "8192",
        "--b",
        "kv_dtype=int8",
    )
    assert out["terms"][0]["term"] == "KV reads" and out["terms"][0]["share"] == pytest.approx(1.0)
    proc = run_cli("diff", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--b", "colour=red")
    assert proc.returncode == 2 and "colour" in proc.stderr and proc.stdout == ""
    iec = run_cli("--units", "iec", "step", "--model", "llama-3-8b", "--hardware", "h100-sxm")
    si = run_cli("step", "--model", "llama-3-8b", "--hardware", "h100-sxm")
    # 16.06e9 weight bytes: 16.1 GB in SI, 16.06e9 / 2^30 = 15 GiB in IEC.
    assert "15 GiB" in iec.stdout and "16.1 GB" in si.stdout
    bad = run_cli("--units", "metric", "step", "--model", "llama-3-8b", "--hardware", "h100-sxm")
    assert bad.returncode == 2 and "--units" in bad.stderr


def test_shard_and_serve_explanations_match_their_formulas():
    from roofline.analyses.shard import serve, shard_limits
    from roofline.views.explain import explain_serve, explain_shard

    m = load_model("book-exercise")
    res = shard_limits(m, V5E, 16, 32, 2048, topology_text="4x4")
    ex = by_name(explain_shard(m, res))
    terms = {t.symbol: t.value for t in ex["largest tp in decode"].terms}
    # The book's generation limit: Y < F / (B·β).
    assert terms["F"] / (terms["B"] * terms["β"]) == pytest.approx(ex["largest tp in decode"].value)
    assert ex["step lower bound"].value <= ex["step upper bound"].value
    s = serve(load_model("llama-3-8b"), load_hardware("h100-sxm"), "disaggregated", 2048, 512, 1, 32)
    sx = by_name(explain_serve(s, 32, 512))
    t = {term.symbol: term.value for term in sx["prefill : decode servers"].terms}
    # B·t_prefill / (O·t_step), part 8's disaggregation ratio.
    assert t["B"] * t["t_prefill"] / (t["O"] * t["t_step"]) == pytest.approx(s.prefill_to_decode_ratio)
    assert sx["TTFT"].value == pytest.approx(s.prefill_s + s.kv_transfer_s)


def test_tensor_parallel_step_explanation_matches_decode_step():
    m = load_model("llama-3-70b")
    dep = deployment(m, V5E, 16, tp=16)
    res = step_from(dep, 64, 2048)
    ex = by_name(explain_step(dep, 64, 2048, res))
    terms = {t.symbol: t.value for t in ex["step time"].terms}
    # On a TPU the collectives overlap the local work: local + max(0, comms − local) = max(local, comms).
    assert terms["overlap"] == 1.0
    assert max(terms["local"], terms["T_comms"]) == pytest.approx(float(res.step_time_s))
    assert ex["step time lower bound"].value <= float(res.step_time_s) <= ex["step time upper bound"].value


def test_gpu_collectives_sit_on_the_critical_path():
    # Megatron tp on GPUs: the all-reduces are serialized with the layer's kernels, so the prediction is
    # local + comms (the upper bound); the overlapped max(local, comms) is only the lower bound.
    m, hw = load_model("llama-3-70b"), load_hardware("h100-sxm")
    res = decode_step(m, hw, 8, 64, 4096, tp=8)
    assert float(res.step_time_s) == pytest.approx(float(res.local_step_time_s) + float(res.comms_time_upper_s))
    assert float(res.step_time_s) == pytest.approx(float(res.step_time_upper_s))
    assert float(res.step_time_lower_s) == pytest.approx(max(float(res.local_step_time_s), float(res.comms_time_s)))


@pytest.mark.parametrize("tp", [None, 4])
def test_substituted_values_reproduce_each_time(tp):
    # T_kv = B·KV/W, T_weights = P_read/W and T_flops = 2·B·P/C from the terms shown, also when an
    # explicit tp = 4 on 8 chips makes 2 replicas (each with its own weights and half the batch).
    m, hw = load_model("llama-3-70b"), load_hardware("h100-sxm")
    dep = deployment(m, hw, 8, tp=tp)
    res = step_from(dep, 64, 4096)
    ex = by_name(explain_step(dep, 64, 4096, res))
    kv = [t.value for t in ex["KV read time"].terms]
    w = [t.value for t in ex["weight load time"].terms]
    c = [t.value for t in ex["matmul time"].terms]
    assert kv[0] / kv[1] == pytest.approx(ex["KV read time"].value)
    assert w[0] / w[1] == pytest.approx(ex["weight load time"].value)
    assert 2 * c[0] * c[1] / c[2] == pytest.approx(ex["matmul time"].value)


def test_diff_a_side_equals_step_on_the_cli():
    # The case: diff said 2.40 ms where step said 1.79 ms for the same llama-3-8b tp = 8.
    args = ("--model", "llama-3-8b", "--hardware", "h100-sxm", "--chips", "8", "--tp", "8", "--batch", "64")
    step = run_json("step", *args)
    diff = run_json("diff", *args, "--b", "batch=128")
    assert diff["step_a_s"] == pytest.approx(step["step_time_s"], rel=1e-12)
    assert diff["cost_a"] == pytest.approx(step["cost_per_million_tokens"], rel=1e-12)


def test_shard_and_serve_cli_explain():
    out = run_json(
        "shard",
        "--model",
        "book-exercise",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "16",
        "--topology",
        "4x4",
        "--batch",
        "32",
        "--explain",
    )
    ex = {e["name"]: e for e in out["explain"]}
    assert ex["step lower bound"]["value"] == pytest.approx(out["step_time_lower_s"])
    assert ex["step upper bound"]["value"] == pytest.approx(out["step_time_upper_s"])
    out = run_json(
        "serve",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--mode",
        "interleaved",
        "-i",
        "2048",
        "-o",
        "512",
        "-b",
        "32",
        "--explain",
    )
    assert {e["name"] for e in out["explain"]} == {"TTFT", "TPOT", "prefill : decode servers", "tokens/s per chip"}


@pytest.mark.parametrize("extra", [(), ("--chips", "8", "--tp", "4"), ("--hardware", "h100-sxm-cal")])
def test_every_explain_value_equals_the_json_value(extra):
    args = [
        "step",
        "--model",
        "llama-3-70b",
        "--hardware",
        "h100-sxm",
        "--batch",
        "32",
        "--context",
        "4096",
        "--chips",
        "4",
        *extra,
        "--explain",
    ]
    out = run_json(*args)
    ex = {e["name"]: e["value"] for e in out["explain"]}
    pairs = {
        "weights": "param_bytes",
        "KV cache (batch)": "kv_bytes",
        "usable HBM": "usable_hbm_bytes",
        "total memory": "total_bytes",
        "KV read time": "kv_time_s",
        "weight load time": "weight_time_s",
        "matmul time": "compute_time_s",
        "weight matmuls (GEMMs)": "gemm_time_s",
        "attention": "attention_time_s",
        "step time without collectives": "local_step_time_s",
        "collectives per step": "comms_time_upper_s",
        "step time": "step_time_s",
        "step time lower bound": "step_time_lower_s",
        "step time upper bound": "step_time_upper_s",
        "critical batch": "critical_batch",
    }
    for name, key in pairs.items():
        assert ex[name] == out[key], name
