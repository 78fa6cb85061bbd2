"""Hybrid layer kinds (chunked attention, sinks, NoPE, Gated DeltaNet, Mamba) and their config.json
families (gpt-oss, Llama 4, Qwen3-Next, Nemotron-H, Jamba, Granite-4.0-H): published parameter
counts, KV and state bytes by hand, step terms whose state reads do not grow with context.

Fixtures in tests/fixtures/hf/<name>/config.json carry the released config.json values of the
Hugging Face repos openai/gpt-oss-120b, openai/gpt-oss-20b, meta-llama/Llama-4-Scout-17B-16E-Instruct
(text_config; vision_config abbreviated), Qwen/Qwen3-Next-80B-A3B-Instruct, nvidia/Nemotron-H-8B-Base-8K,
ai21labs/AI21-Jamba-1.5-Mini and ibm-granite/granite-4.0-h-tiny.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from roofline.analyses.step import step_from
from roofline.core.errors import SpecError
from roofline.deploy import Precision, deployment
from roofline.formulas import compute
from roofline.model import memory
from roofline.specs import load_hardware, load_model, model_from_dict
from roofline.specs.hf.config import model_dict_from_hf_config
from roofline.terms import decode_work, step_terms

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"
GIB = 2.0**30


def config(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text(encoding="utf-8"))


def spec(name: str):
    return load_model(FIXTURES / name / "config.json")


def counts(name: str) -> memory.ParamCounts:
    return memory.param_counts(spec(name))


def without_input_table(name: str) -> float:
    m = spec(name)
    return counts(name).active - m.vocab_size * m.d_model


# --------------------------------------------------------------------------- published counts


def test_gpt_oss_counts_and_checkpoint_size():
    # OpenAI gpt-oss model card (Aug 2025), Table 1: gpt-oss-120b 116.83 B total, 5.13 B active per
    # token; gpt-oss-20b 20.91 B total, 3.61 B active (active without the input embedding table).
    assert round(counts("gpt-oss-120b").total / 1e7) == 11_683
    assert round(without_input_table("gpt-oss-120b") / 1e7) == 513
    assert round(counts("gpt-oss-20b").total / 1e7) == 2_091
    assert round(without_input_table("gpt-oss-20b") / 1e7) == 361
    m = spec("gpt-oss-120b")
    assert m.attention_sinks and (m.sliding_window, m.num_local_layers) == (128, 18)
    assert m.precision == {"default": "bf16", "experts": "mxfp4"}
    # Same card: checkpoint sizes 60.8 GiB and 12.8 GiB (MXFP4 experts, the rest bf16).  By hand for
    # 120b: expert matrices 36·128·3·2880² = 114,661,785,600 at 4.25 bits = 60,914,073,600 B; the
    # other 2,167,371,072 params (expert biases included) at 2 B = 4,334,742,144 B.
    dep = deployment(m, load_hardware("h100-sxm"), 1, Precision.checkpoint(m))
    assert dep.weight_bytes == 60_914_073_600 + 4_334_742_144
    assert round(dep.weight_bytes / GIB, 1) == 60.8
    small = spec("gpt-oss-20b")
    assert (
        round(deployment(small, load_hardware("h100-sxm"), 1, Precision.checkpoint(small)).weight_bytes / GIB, 1)
        == 12.8
    )


def test_llama4_scout():
    # Meta Llama 4 model card: Scout 17 B active, 109 B total (with the vision encoder; the text
    # model alone is 107.77 B by hand: 48 × (attention 62,914,560 + 16 experts and a shared one of
    # 3·5120·8192 + router 81,920 + norms) + 2·202048·5120).
    c = counts("llama-4-scout-17b-16e")
    assert c.total == 107_769_861_120
    assert c.total == pytest.approx(109e9, rel=0.015)
    assert round(c.active / 1e9) == 17
    m = spec("llama-4-scout-17b-16e")
    mix = memory.layer_mix(m)
    # no_rope_layers empty: every 4th layer NoPE (global); the other 36 chunked at 8192.
    assert (mix.chunked, mix.full, m.num_nope_layers, m.attention_chunk_size) == (36, 12, 12, 8192)
    assert m.layer_types[3] == "full_attention" and m.layer_types[0] == "chunked_attention"


def test_qwen3_next():
    # Qwen3-Next-80B-A3B model card: 80 B total, 3 B activated (non-embedding: 3.25 B here).
    c = counts("qwen3-next-80b-a3b")
    m = spec("qwen3-next-80b-a3b")
    assert round(c.total / 1e9) == 80
    assert round((c.active - 2 * m.vocab_size * m.d_model) / 1e9) == 3
    # By hand: 12 gated attention layers (q 2048·16·256·2, k, v 2048·512, o 4096·2048, q/k norms 512)
    # 27,263,488 + 36 Gated DeltaNet layers 33,718,464 + 48 MoE layers (512 experts 3·2048·512, shared
    # expert, its gate, router, 2 norms) 1,614,813,184 + 2·151936·2048 + 2048.
    assert c.total == 12 * 27_263_488 + 36 * 33_718_464 + 48 * 1_614_813_184 + 2 * 151_936 * 2048 + 2048
    assert memory.layer_mix(m).kinds() == {"full_attention": 12, "linear_attention": 36, "moe_mlp": 48}


def test_nemotron_h_8b():
    # Nemotron-H paper (arXiv 2504.03624), Nemotron-H-8B: 52 layers = 24 Mamba-2 + 4 attention + 24 FFN.
    m = spec("nemotron-h-8b-base")
    mix = memory.layer_mix(m)
    assert (mix.mamba, mix.full, mix.dense, mix.no_mixer, mix.no_mlp) == (24, 4, 24, 24, 28)
    assert round(counts("nemotron-h-8b-base").total / 1e9) == 8
    # By hand: Mamba-2 in_proj 4096·(2·8192 + 2·8·128 + 128) + out 8192·4096 + conv 10240·5 + 3·128 + norm 8192;
    # attention 2·4096² + 2·4096·1024; relu² MLP 2·4096·21504; one norm per block; untied head.
    mamba = 4096 * 18_560 + 8192 * 4096 + 10_240 * 5 + 384 + 8192
    attn = 2 * 4096**2 + 2 * 4096 * 1024
    total = 24 * mamba + 4 * attn + 24 * 2 * 4096 * 21_504 + 53 * 4096 + 2 * 131_072 * 4096
    assert counts("nemotron-h-8b-base").total == total


def test_jamba_15_mini():
    # AI21 Jamba-1.5 model card: Jamba-1.5-Mini 12 B active, 52 B total parameters.
    c = counts("jamba-1.5-mini")
    assert round(c.total / 1e9) == 52 and round(c.active / 1e9) == 12
    m = spec("jamba-1.5-mini")
    assert memory.layer_mix(m).kinds() == {"full_attention": 4, "mamba": 28, "dense_mlp": 16, "moe_mlp": 16}
    # Mamba-1 layer by hand: in 4096·16384, conv 8192·5, x_proj 8192·288, dt_proj 256·8192 + 8192,
    # A 8192·16, D 8192, out 8192·4096, dt/B/C norms 288 = 105,308,448.
    assert sum(memory.mamba_params(m)) == 105_308_448


def test_granite_40_h_tiny():
    # IBM Granite 4.0 announcement / model card: Granite-4.0-H-Tiny 7 B total, 1 B active (hybrid MoE).
    c = counts("granite-4.0-h-tiny")
    m = spec("granite-4.0-h-tiny")
    assert round(c.total / 1e9) == 7
    assert round((c.active - m.vocab_size * m.d_model) / 1e9) == 1
    assert memory.layer_mix(m).kinds() == {"full_attention": 4, "mamba": 36, "moe_mlp": 40}
    assert m.num_nope_layers == 4  # position_embedding_type nope: accepted, changes nothing


# --------------------------------------------------------------------------- KV and state by hand


def test_hybrid_kv_and_state_bytes():
    # Qwen3-Next: KV only in the 12 attention layers: 12 × 2·2·256 × 2 B = 24,576 B per token.
    # Gated DeltaNet state per layer: conv 3·(2·16·128 + 32·128) = 24,576 + 32·128·128 = 524,288
    # -> 548,864 × 36 layers × 2 B = 39,518,208 B per sequence.
    q = spec("qwen3-next-80b-a3b")
    assert float(memory.kv_cache_bytes_per_token(q, 2.0)) == 24_576
    assert float(memory.state_bytes_per_sequence(q, 2.0)) == 39_518_208
    # Jamba (Mamba-1): 3·8192 + 8192·16 = 155,648 × 28 × 2 B; Nemotron-H (Mamba-2): 3·(8192 + 2·8·128)
    # + 8192·128 = 1,079,296 × 24 × 2 B.
    assert float(memory.state_bytes_per_sequence(spec("jamba-1.5-mini"), 2.0)) == 155_648 * 28 * 2
    assert float(memory.state_bytes_per_sequence(spec("nemotron-h-8b-base"), 2.0)) == 1_079_296 * 24 * 2
    # The state does not grow with context; the KV does, in the attention layers only.
    for s in (1, 1000, 100_000):
        assert float(memory.cache_bytes_per_sequence(q, s, 2.0)) == 24_576 * s + 39_518_208
    assert float(memory.state_bytes_per_sequence(load_model("llama-3-8b"), 2.0)) == 0.0


def test_chunked_attention_kv_and_prefill_pairs():
    # Scout at S = 20,000: 12 global layers hold 20,000 tokens, 36 chunked layers at most 8,192;
    # 2·8·128·2 B = 4096 B per layer and token.
    m = spec("llama-4-scout-17b-16e")
    assert float(memory.kv_cache_bytes_per_sequence(m, 20_000, 2.0)) == 4096 * (12 * 20_000 + 36 * 8192)
    # Causal pairs within chunks: T = 2·8192 + 3616 -> 2·8192·8193/2 + 3616·3617/2.
    assert float(compute.chunked_causal_pairs(20_000, 8192)) == 8192 * 8193 + 3616 * 3617 / 2


def test_max_context_subtracts_the_state():
    # room per sequence 1e9 B: (1e9 − 39,518,208) / 24,576 = 39,082.1 -> 39,082 tokens.
    q = spec("qwen3-next-80b-a3b")
    assert float(memory.max_context_length(q, 1, 2e9, 1e9, 2.0)) == 39_082
    # less room than the state: nothing fits
    assert float(memory.max_context_length(q, 1, 1e9 + 1e6, 1e9, 2.0)) == 0


def test_step_state_reads_do_not_grow_with_context():
    q = spec("qwen3-next-80b-a3b")
    dep = deployment(q, load_hardware("h100-sxm"), 1, memory_utilization=1.0)
    bw = dep.rates.hbm_bandwidth_bytes_per_s
    for context in (1000.0, 4000.0):
        t = step_terms(dep, decode_work(8.0, context))
        # state read + written back: 2 × 8 × 39,518,208 B, whatever the context
        assert float(t.state_bytes) == 2 * 8 * 39_518_208
        assert float(t.kv_read_bytes) == 8 * 24_576 * context
        assert float(t.kv_time_s) * bw == pytest.approx(8 * 24_576 * context + 2 * 8 * 39_518_208, rel=1e-12)
    r = step_from(dep, 8.0, 1000.0)
    assert float(r.state_bytes) == 8 * 39_518_208
    assert float(r.total_bytes) == pytest.approx(dep.weight_bytes + 8 * (24_576 * 1000 + 39_518_208), rel=1e-12)


# --------------------------------------------------------------------------- precision


def test_block_scaled_dtypes_count_their_scales():
    from roofline.core.units import dtype_bytes

    assert dtype_bytes("nvfp4") == 4.5 / 8  # 16 × 4 bits + one 8-bit scale per 16
    assert dtype_bytes("mxfp4") == 4.25 / 8  # 32 × 4 bits + one 8-bit scale per 32
    assert dtype_bytes("fp8_block") == 1 + 4 / (128 * 128)  # one fp32 scale per 128×128 block
    h100 = load_hardware("h100-sxm")
    assert h100.flops_for("fp8_block") == h100.flops_for("fp8")


def test_mixed_precision_bytes_by_hand():
    m = load_model("llama-3-8b")
    total = memory.param_counts(m).total
    mlp = 32 * 3 * 4096 * 14336
    prec = Precision("bf16", components=(("mlp", "fp8"),))
    dep = deployment(m, load_hardware("h100-sxm"), 1, prec)
    assert dep.weight_bytes == (total - mlp) * 2 + mlp * 1
    nv = deployment(m, load_hardware("h100-sxm"), 1, Precision("nvfp4"))
    assert nv.weight_bytes == total * 0.5625
    # The step model reads the same bytes (dense: all of them every step).
    assert float(step_terms(dep, decode_work(1.0, 100.0)).weight_read_bytes) == dep.weight_bytes


def test_mixed_precision_moe_reads_touched_experts():
    # gpt-oss-20b at its checkpoint precision, batch 1: 4 of 32 experts touched.  Routed expert
    # bytes: 24·32·3·2880² at 0.53125 + expert biases 24·32·8640 at 2 B = 10,165,616,640; the rest is
    # 13,761,264,768 − that, read whole.
    m = spec("gpt-oss-20b")
    dep = deployment(m, load_hardware("h100-sxm"), 1, Precision.checkpoint(m))
    assert dep.weight_bytes == 13_761_264_768
    routed = 24 * 32 * 3 * 2880**2 * 0.53125 + 24 * 32 * 8640 * 2
    t = step_terms(dep, decode_work(1.0, 100.0))
    assert float(t.weight_read_bytes) == pytest.approx(13_761_264_768 - routed + routed * 4 / 32, rel=1e-12)


def test_weights_option_components():
    from roofline.core.errors import RooflineError
    from roofline.views.cli.options import precision_from_options

    p = precision_from_options("bf16,experts=mxfp4", "bf16", "bf16")
    assert (p.weights, p.components) == ("bf16", (("experts", "mxfp4"),))
    assert precision_from_options("experts=fp4,attention=bf16", "bf16", "bf16").components == (("experts", "fp4"),)
    assert precision_from_options("fp8", "bf16", "bf16") == Precision("fp8")
    m = spec("kimi-k2-instruct")
    ck = precision_from_options("checkpoint,experts=nvfp4", "bf16", "bf16", m)
    assert ck.weight_dtype("experts") == "nvfp4" and ck.weight_dtype("attention") == "fp8_block"
    with pytest.raises(RooflineError, match="unknown component 'router'"):
        precision_from_options("router=fp8", "bf16", "bf16")
    with pytest.raises(RooflineError, match="--weights experts: unknown dtype 'fp9'"):
        precision_from_options("experts=fp9", "bf16", "bf16")


def test_quantization_config_mapping():
    # DeepSeek-style block fp8 (Kimi-K2's config.json): linear layers fp8_block, embeddings/head bf16.
    assert spec("kimi-k2-instruct").precision == {
        "default": "bf16",
        "attention": "fp8_block",
        "mlp": "fp8_block",
        "experts": "fp8_block",
    }
    cfg = config("kimi-k2-instruct")
    bad = copy.deepcopy(cfg)
    bad["quantization_config"]["weight_block_size"] = [64, 64]
    with pytest.raises(SpecError, match="weight_block_size"):
        model_dict_from_hf_config(bad, "x")
    bad["quantization_config"] = {"quant_method": "gptq", "bits": 4}
    with pytest.raises(SpecError, match="quant_method 'gptq'"):
        model_dict_from_hf_config(bad, "x")
    nv = copy.deepcopy(cfg)
    nv["quantization_config"] = {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "group_size": 16,
        "exclude_modules": ["lm_head", "model.layers.*.self_attn*"],
    }
    assert model_dict_from_hf_config(nv, "x")["precision"] == {"default": "bf16", "mlp": "nvfp4", "experts": "nvfp4"}


def test_model_yaml_precision_is_validated():
    base = load_model("llama-3-8b").model_dump()
    with pytest.raises(SpecError, match="unknown component"):
        model_from_dict({**base, "precision": {"router": "fp8"}})
    assert model_from_dict({**base, "precision": {"default": "fp8"}}).precision == {"default": "fp8"}


# --------------------------------------------------------------------------- refusals and invariants


def test_unmappable_hybrid_keys_are_errors():
    nem = config("nemotron-h-8b-base")
    nem["hybrid_override_pattern"] = "E" + nem["hybrid_override_pattern"][1:]
    with pytest.raises(SpecError, match="hybrid_override_pattern"):
        model_dict_from_hf_config(nem, "x")
    qn = config("qwen3-next-80b-a3b")
    qn["mlp_only_layers"] = [0]
    with pytest.raises(SpecError, match="mlp_only_layers"):
        model_dict_from_hf_config(qn, "x")
    jam = config("jamba-1.5-mini")
    jam["mamba_fancy_new_knob"] = 3
    with pytest.raises(SpecError, match="mamba_fancy_new_knob"):
        model_dict_from_hf_config(jam, "x")


def test_layer_pattern_validation():
    base = load_model("llama-3-8b").model_dump()
    with pytest.raises(SpecError, match="layer_types has 2 entries"):
        model_from_dict({**base, "layer_types": ["full_attention"] * 2})
    with pytest.raises(SpecError, match="attention_chunk_size"):
        model_from_dict({**base, "layer_types": ["chunked_attention"] * 32})
    same = model_from_dict({**base, "layer_types": ["full_attention"] * 32, "mlp_types": ["dense"] * 32})
    m = load_model("llama-3-8b")
    assert memory.param_counts(same) == memory.param_counts(m)
    assert float(memory.kv_cache_bytes_per_sequence(same, 5000, 2.0)) == float(
        memory.kv_cache_bytes_per_sequence(m, 5000, 2.0)
    )


def test_existing_models_unchanged_by_uniform_precision():
    # A uniform Precision takes the old formulas: weights = params × bytes, reads unchanged.
    for name in ("llama-3-8b", "mixtral-8x7b", "deepseek-v3"):
        try:
            m = load_model(name)
        except SpecError:
            continue
        total = memory.param_counts(m).total
        dep = deployment(m, load_hardware("h100-sxm"), 8, Precision("fp8"))
        assert dep.weight_bytes == total * 1.0
        b = np.array([1.0, 64.0])
        assert np.array_equal(
            memory.weight_bytes_read(m, Precision("fp8").bytes_by_component, b),
            memory.weight_bytes_read_per_step(m, total, 1.0, b),
        )


def test_model_show_json_contract(tmp_path):
    from tests.inprocess import run_roofline

    run = run_roofline("model", "show", str(FIXTURES / "jamba-1.5-mini" / "config.json"), "--json")
    assert run.code == 0, run.stderr
    derived = json.loads(run.stdout)["derived"]
    assert {"param_count", "active_param_count", "kv_bytes_per_token_bf16"} <= set(derived)
    assert derived["state_bytes_per_sequence"] == 155_648 * 28 * 2
    assert derived["layer_kinds"] == {"full_attention": 4, "mamba": 28, "dense_mlp": 16, "moe_mlp": 16}
    dense = json.loads(run_roofline("model", "show", "llama-3-8b", "--json").stdout)["derived"]
    assert "state_bytes_per_sequence" not in dense and dense["layer_kinds"] == {"full_attention": 32, "dense_mlp": 32}
