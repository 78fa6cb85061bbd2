"""config.json import for GPT-J, GPT-NeoX/Pythia, BLOOM, Falcon, Phi-3/Phi-4, Kimi-K2, GLM-4.5 and
MiniMax-M2: parameter counts against the published figures, KV bytes by hand, clear refusals.

The fixtures in tests/fixtures/hf/<name>/config.json carry the released config.json values of each
checkpoint (Hugging Face repos EleutherAI/gpt-j-6b, EleutherAI/pythia-160m, EleutherAI/gpt-neox-20b,
bigscience/bloom, bigscience/bloom-560m, tiiuae/falcon-7b, tiiuae/falcon-180B,
microsoft/Phi-3-mini-4k-instruct, microsoft/phi-4, moonshotai/Kimi-K2-Instruct, zai-org/GLM-4.5,
MiniMaxAI/MiniMax-M2).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from roofline.core.errors import SpecError
from roofline.model import memory
from roofline.specs import load_model, model_from_dict
from roofline.specs.hf.config import model_dict_from_hf_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"


def config(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text(encoding="utf-8"))


def spec(name: str):
    return load_model(FIXTURES / name / "config.json")


def counts(name: str) -> memory.ParamCounts:
    return memory.param_counts(spec(name))


def input_table(name: str) -> float:
    m = spec(name)
    return m.vocab_size * m.d_model


# --------------------------------------------------------------------------- exact published counts


@pytest.mark.parametrize(
    ("name", "published"),
    [
        # BLOOM model card (bigscience/bloom): "176,247,271,424 parameters".
        ("bloom-176b", 176_247_271_424),
        # bigscience/bloom-560m model card: 559,214,592 parameters.
        ("bloom-560m", 559_214_592),
        # Pythia model card / paper table: Pythia-160M 162,322,944 total parameters.
        ("pythia-160m", 162_322_944),
        # GPT-NeoX-20B model card: n_parameters 20,554,567,680.
        ("gpt-neox-20b", 20_554_567_680),
    ],
)
def test_published_exact_counts(name, published):
    assert counts(name).total == published


def test_bloom_by_hand():
    # V·D = 250880·14336 = 3,596,615,680 (tied) + embedding LayerNorm 2·D = 28,672; per layer
    # attention 4·D² + 4·D (qkv and dense biases) = 822,140,928, MLP 8·D² + 5·D = 1,644,238,848,
    # two LayerNorms 4·D = 57,344 -> 2,466,437,120 × 70 = 172,650,598,400; final LayerNorm 28,672.
    m = spec("bloom-176b")
    assert m.embedding_norm and m.tie_embeddings and m.learned_position_embeddings == 0  # ALiBi
    assert counts("bloom-176b").total == 3_596_615_680 + 28_672 + 172_650_598_400 + 28_672


def test_pythia_non_embedding_count():
    # Pythia model card: Pythia-160M has 85,056,000 non-embedding parameters.
    c = counts("pythia-160m")
    assert c.total - c.embedding == 85_056_000


# --------------------------------------------------------------------------- published totals


def test_gpt_j_6b():
    # EleutherAI/gpt-j-6b model card: n_parameters 6,053,381,344 ("6B"; HF page 6.05 B).
    # By hand: wte + untied lm_head 2·50400·4096 = 412,876,800 + lm_head bias 50,400; per layer
    # q,k,v,o 4·4096² = 67,108,864, fc_in/fc_out 2·4096·16384 + 16384 + 4096 = 134,238,208, one
    # LayerNorm ln_1 8,192 -> 201,355,264 × 28 = 5,637,947,392; ln_f 8,192: 6,050,882,784.
    m = spec("gpt-j-6b")
    assert (m.norms_per_layer, m.lm_head_bias, m.tie_embeddings) == (1, True, False)
    assert counts("gpt-j-6b").total == 412_876_800 + 50_400 + 5_637_947_392 + 8_192
    assert counts("gpt-j-6b").total == pytest.approx(6_053_381_344, rel=0.001)


def test_falcon_old_and_new_decoder():
    # tiiuae/falcon-7b model card: "a 7B parameters causal decoder-only model". Old decoder: multi-query
    # (fused qkv (71 + 2)·64 = 4672 wide), one input_layernorm per block, tied head. By hand:
    # per layer 4544·4672 + 4544² + 2·4544·18176 + 2·4544 = 207,070,080 × 32 = 6,626,242,560;
    # word_embeddings 65024·4544 = 295,469,056; ln_f 9,088 -> 6,921,720,704 (6.92 B; the "7B" rounds).
    f7 = spec("falcon-7b")
    assert (f7.num_kv_heads, f7.norms_per_layer, f7.tie_embeddings) == (1, 1, True)
    assert counts("falcon-7b").total == 6_626_242_560 + 295_469_056 + 9_088
    assert counts("falcon-7b").total == pytest.approx(7e9, rel=0.02)
    # tiiuae/falcon-180B model card: "a 180B parameters causal decoder-only model". New decoder:
    # 8 KV groups (GQA), ln_attn + ln_mlp. By hand: per layer q 14848², kv 2·14848·512, o 14848²,
    # MLP 2·14848·59392, norms 4·14848 = 2,219,894,784 × 80 + 65024·14848 + 2·14848 = 178.56 B.
    f180 = spec("falcon-180b")
    assert (f180.num_kv_heads, f180.norms_per_layer) == (8, 2)
    assert counts("falcon-180b").total == 2_219_894_784 * 80 + 65024 * 14848 + 2 * 14848
    assert counts("falcon-180b").total == pytest.approx(180e9, rel=0.01)


def test_phi3_and_phi4():
    # Phi-3 technical report: phi-3-mini has 3.8 B parameters.  By hand: 2·32064·3072 + 32 layers ×
    # (4·3072² + 3·3072·8192 + 2·3072) + 3072 = 3,821,079,552.
    assert counts("phi-3-mini-4k-instruct").total == 3_821_079_552
    assert counts("phi-3-mini-4k-instruct").total == pytest.approx(3.8e9, rel=0.01)
    # Phi-4 technical report: "a 14-billion parameter language model"; the HF page lists 14.7 B.
    assert counts("phi-4").total == pytest.approx(14.7e9, rel=0.01)
    # Phi-3-mini-4k sets sliding_window 2047: transformers applies it to every layer.
    m = spec("phi-3-mini-4k-instruct")
    assert (m.sliding_window, m.num_local_layers) == (2047, 32)
    assert spec("phi-4").num_kv_heads == 10


# --------------------------------------------------------------------------- DeepSeek-style MoE


def test_kimi_k2_maps_onto_the_deepseek_path():
    # Kimi-K2 model card: 1 T total parameters, 32 B activated (it reuses DeepseekV3ForCausalLM with
    # model_type kimi_k2: 61 layers, 1 dense, 384 routed experts of 2048, 1 shared, MLA).
    m = spec("kimi-k2-instruct")
    assert m.is_mla and (m.num_experts, m.num_dense_layers, m.num_shared_experts) == (384, 1, 1)
    c = counts("kimi-k2-instruct")
    assert c.total == pytest.approx(1.0e12, rel=0.03)  # 1.026 T by hand; the card rounds to 1 T
    # Active without the input embedding table (DeepSeek's convention, see test_hf_config): 31.7 B.
    assert round((c.active - input_table("kimi-k2-instruct")) / 1e9) == 32
    # MLA cache: (512 + 64)·61 layers·2 bytes = 70,272 B per token.
    assert float(memory.kv_cache_bytes_per_token(m, 2.0)) == 70_272


def test_glm_45():
    # GLM-4.5 model card: 355 B total parameters, 32 B active.  By hand (MTP layer not counted, as
    # for DeepSeek): 352.80 B total.  Active: attention 12.54 B + 3 dense MLPs 0.57 B + 89 MoE layers
    # × (8 routed + 1 shared expert of 3·5120·1536, router 5120·160) 18.97 B = 32.08 B without either
    # embedding table, which is the card's 32 B (with the output table 32.86 B).
    m = spec("glm-4.5")
    assert (m.num_kv_heads, m.head_dim, m.qkv_bias, m.o_bias) == (8, 128, True, False)
    assert (m.num_experts, m.num_dense_layers, m.shared_expert_d_ff, m.dense_d_ff) == (160, 3, 1536, 12288)
    assert m.extra_params_per_layer == 2 * 128  # q_norm, k_norm over head_dim
    c = counts("glm-4.5")
    assert c.total == pytest.approx(355e9, rel=0.01)
    assert c.active - c.embedding == pytest.approx(32e9, rel=0.01)
    # GQA cache: 2·8 heads·128·92 layers·2 bytes = 376,832 B per token.
    assert float(memory.kv_cache_bytes_per_token(m, 2.0)) == 376_832


def test_minimax_m2():
    # MiniMax-M2 model card: 230 B total parameters, 10 B active.  By hand: per layer attention
    # 2·3072·6144 + 2·3072·1024 = 44,040,192, 256 experts × 3·3072·1536 = 3,623,878,656, router
    # 3072·256, q/k norms 6144 + 1024, routing bias 256 -> × 62 + 2·200064·3072 = 228.69 B.
    m = spec("minimax-m2")
    assert (m.num_experts, m.experts_per_token, m.num_shared_experts) == (256, 8, 0)
    assert m.extra_params_per_layer == 6144 + 1024 + 256
    c = counts("minimax-m2")
    assert c.total == pytest.approx(230e9, rel=0.01)
    assert round((c.active - input_table("minimax-m2")) / 1e9) == 10


# --------------------------------------------------------------------------- KV bytes by hand


@pytest.mark.parametrize(
    ("name", "kv_bytes"),
    [
        ("falcon-7b", 2 * 1 * 64 * 32 * 2),  # multi-query: one K/V head
        ("falcon-180b", 2 * 8 * 64 * 80 * 2),  # 8 KV groups
        ("gpt-j-6b", 2 * 16 * 256 * 28 * 2),
        ("bloom-176b", 2 * 112 * 128 * 70 * 2),
        ("pythia-160m", 2 * 12 * 64 * 12 * 2),
        ("phi-4", 2 * 10 * 128 * 40 * 2),
    ],
)
def test_kv_bytes_per_token(name, kv_bytes):
    assert float(memory.kv_cache_bytes_per_token(spec(name), 2.0)) == kv_bytes


# --------------------------------------------------------------------------- refusals


def _refused(cfg: dict) -> str:
    with pytest.raises(SpecError) as err:
        model_from_dict(model_dict_from_hf_config(cfg, name="m", origin="config.json"))
    return str(err.value)


def test_unknown_key_is_named():
    cfg = config("gpt-j-6b")
    cfg["sparse_attention_blocks"] = 4
    assert "sparse_attention_blocks" in _refused(cfg)


def test_minimax_linear_attention_layers_are_refused():
    cfg = copy.deepcopy(config("minimax-m2"))
    cfg["attn_type_list"][0] = 0
    assert "attn_type_list" in _refused(cfg)


def test_bloom_unusual_mlp_width_is_refused():
    cfg = config("bloom-560m")
    cfg["n_inner"] = 1234
    assert "n_inner" in _refused(cfg)


def test_unmapped_architecture_is_named():
    cfg = config("phi-4")
    cfg["architectures"], cfg["model_type"] = ["Phi3SmallForCausalLM"], "phi3small"
    assert "Phi3SmallForCausalLM" in _refused(cfg)


def test_falcon_pre_transformers_refinedweb_config():
    # tiiuae/falcon-40b's original config (model_type RefinedWeb, RWForCausalLM): n_head, n_head_kv,
    # n_layer, new decoder implied.  By hand: per layer q/o 2·8192², kv 2·8192·512, MLP 2·8192·32768,
    # norms 4·8192 = 679,510,016 × 60 + 65024·8192 + 2·8192 = 41.30 B ("40B" on the card).
    cfg = {
        "alibi": False,
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["RWForCausalLM"],
        "attention_dropout": 0.0,
        "bias": False,
        "bos_token_id": 11,
        "eos_token_id": 11,
        "hidden_dropout": 0.0,
        "hidden_size": 8192,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "RefinedWeb",
        "n_head": 128,
        "n_head_kv": 8,
        "n_layer": 60,
        "parallel_attn": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.27.4",
        "use_cache": True,
        "vocab_size": 65024,
    }
    m = model_from_dict(model_dict_from_hf_config(cfg, name="falcon-40b"))
    assert (m.num_kv_heads, m.norms_per_layer, m.num_layers) == (8, 2, 60)
    assert memory.param_counts(m).total == 679_510_016 * 60 + 65024 * 8192 + 2 * 8192


@pytest.mark.parametrize(
    ("catalog", "fixture", "published"),
    [
        ("gpt-j-6b", "gpt-j-6b", 6.05e9),  # HF page / model card: 6.05 B (6,053,381,344)
        ("falcon-180b", "falcon-180b", 180e9),  # model card: 180 B
        ("bloom-176b", "bloom-176b", 176.247e9),  # model card: 176,247,271,424
    ],
)
def test_catalog_models_match_their_configs(catalog, fixture, published):
    cat, imported = load_model(catalog), spec(fixture)
    for key in type(cat).model_fields:
        if key not in ("name", "source", "max_position_embeddings"):
            assert getattr(cat, key) == getattr(imported, key), key
    assert memory.param_counts(cat).total == pytest.approx(published, rel=0.01)
