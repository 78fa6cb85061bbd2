"""Hugging Face config.json import: published parameter counts, KV bytes, clear refusals.

The configs below are the released ``config.json`` files (public facts), trimmed of nothing
that affects the shape.  Published counts: Meta's Llama 3.1 model card (8.03 B), Mistral's
Mixtral announcement (46.7 B total, 12.9 B active), the DeepSeek-V3 report (671 B total,
37 B activated), Qwen3 model cards (Qwen3-8B 8.2 B, Qwen3-30B-A3B 30.5 B / 3.3 B), Qwen1.5-MoE
card (14.3 B / 2.7 B), Gemma 2 9B (9.24 B), GPT-2 (124 M), OPT-125m (125 M).
"""

from __future__ import annotations

import json

import pytest

from roofline.core.errors import SpecError
from roofline.model import memory
from roofline.specs import load_model, model_from_dict
from roofline.specs.hf.config import model_dict_from_hf_config, model_dict_with_notes

LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.02,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "auto_map": {
        "AutoConfig": "configuration_deepseek.DeepseekV3Config",
        "AutoModel": "modeling_deepseek.DeepseekV3Model",
        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
    },
    "aux_loss_alpha": 0.001,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "ep_size": 1,
    "first_k_dense_replace": 3,
    "hidden_act": "silu",
    "hidden_size": 7168,
    "initializer_range": 0.02,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_group": 8,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1,
    "pretraining_tp": 1,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
    "rms_norm_eps": 1e-06,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "rope_theta": 10000,
    "routed_scaling_factor": 2.5,
    "scoring_func": "sigmoid",
    "seq_aux": True,
    "tie_word_embeddings": False,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16",
    "transformers_version": "4.33.1",
    "use_cache": True,
    "v_head_dim": 128,
    "vocab_size": 129280,
}
QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 12288,
    "max_position_embeddings": 40960,
    "max_window_layers": 36,
    "model_type": "qwen3",
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "decoder_sparse_step": 1,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 6144,
    "max_position_embeddings": 40960,
    "max_window_layers": 48,
    "mlp_only_layers": [],
    "model_type": "qwen3_moe",
    "moe_intermediate_size": 768,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 48,
    "num_key_value_heads": 4,
    "output_router_logits": False,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.001,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
QWEN15_MOE_A27B = {
    "architectures": ["Qwen2MoeForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "decoder_sparse_step": 1,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 5632,
    "max_position_embeddings": 8192,
    "max_window_layers": 21,
    "model_type": "qwen2_moe",
    "moe_intermediate_size": 1408,
    "norm_topk_prob": False,
    "num_attention_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "output_router_logits": False,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 5632,
    "sliding_window": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.39.0.dev0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0,
    "bos_token_id": 2,
    "cache_implementation": "hybrid",
    "eos_token_id": 1,
    "final_logit_softcapping": 30.0,
    "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "gemma2",
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "pad_token_id": 0,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "sliding_window_size": 4096,
    "torch_dtype": "float32",
    "transformers_version": "4.42.0.dev0",
    "use_cache": True,
    "vocab_size": 256000,
}
GEMMA3_1B = {
    "architectures": ["Gemma3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": None,
    "bos_token_id": 2,
    "cache_implementation": "hybrid",
    "eos_token_id": [1, 106],
    "final_logit_softcapping": None,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 1152,
    "initializer_range": 0.02,
    "intermediate_size": 6912,
    "max_position_embeddings": 32768,
    "model_type": "gemma3_text",
    "num_attention_heads": 4,
    "num_hidden_layers": 26,
    "num_key_value_heads": 1,
    "pad_token_id": 0,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.50.0.dev0",
    "use_cache": True,
    "vocab_size": 262144,
}
GEMMA3_4B_IT = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "boi_token_index": 255999,
    "eoi_token_index": 256000,
    "eos_token_id": [1, 106],
    "image_token_index": 262144,
    "initializer_range": 0.02,
    "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "model_type": "gemma3_text",
        "num_hidden_layers": 34,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
    "transformers_version": "4.50.0.dev0",
    "vision_config": {
        "hidden_size": 1152,
        "image_size": 896,
        "intermediate_size": 4304,
        "model_type": "siglip_vision_model",
        "num_attention_heads": 16,
        "num_hidden_layers": 27,
        "patch_size": 14,
        "vision_use_head": False,
    },
}
MISTRAL_7B_V01 = {
    "architectures": ["MistralForCausalLM"],
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mistral",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.34.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}
QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 896,
    "initializer_range": 0.02,
    "intermediate_size": 4864,
    "max_position_embeddings": 32768,
    "max_window_layers": 24,
    "model_type": "qwen2",
    "num_attention_heads": 14,
    "num_hidden_layers": 24,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
GPT2 = {
    "activation_function": "gelu_new",
    "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1,
    "bos_token_id": 50256,
    "embd_pdrop": 0.1,
    "eos_token_id": 50256,
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1024,
    "resid_pdrop": 0.1,
    "summary_activation": None,
    "summary_first_dropout": 0.1,
    "summary_proj_to_labels": True,
    "summary_type": "cls_index",
    "summary_use_proj": True,
    "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    "vocab_size": 50257,
}
OPT_125M = {
    "_name_or_path": "facebook/opt-125m",
    "_remove_final_layer_norm": False,
    "activation_dropout": 0.0,
    "activation_function": "relu",
    "architectures": ["OPTForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 2,
    "do_layer_norm_before": True,
    "dropout": 0.1,
    "eos_token_id": 2,
    "ffn_dim": 3072,
    "hidden_size": 768,
    "init_std": 0.02,
    "layerdrop": 0.0,
    "max_position_embeddings": 2048,
    "model_type": "opt",
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pad_token_id": 1,
    "prefix": "</s>",
    "torch_dtype": "float16",
    "transformers_version": "4.21.0.dev0",
    "use_cache": True,
    "vocab_size": 50272,
    "word_embed_proj_dim": 768,
}


def spec(config: dict, name: str = "m"):
    return model_from_dict(model_dict_from_hf_config(config, name=name, origin="config.json"))


def counts(config: dict) -> memory.ParamCounts:
    return memory.param_counts(spec(config))


@pytest.mark.parametrize(
    ("config", "published_total", "published_active"),
    [
        (LLAMA_31_8B, 8.03e9, None),
        (MIXTRAL_8X7B, 46.7e9, 12.9e9),
        (QWEN3_8B, 8.2e9, None),
        (QWEN3_30B_A3B, 30.5e9, None),
        (QWEN15_MOE_A27B, 14.3e9, 2.7e9),
        (GEMMA2_9B, 9.24e9, None),
        (MISTRAL_7B_V01, 7.24e9, None),
        (QWEN25_05B, 0.49e9, None),
        (GPT2, 124e6, None),
        (OPT_125M, 125e6, None),
    ],
    ids=[
        "llama-3.1-8b",
        "mixtral-8x7b",
        "qwen3-8b",
        "qwen3-30b-a3b",
        "qwen1.5-moe-a2.7b",
        "gemma-2-9b",
        "mistral-7b-v0.1",
        "qwen2.5-0.5b",
        "gpt2",
        "opt-125m",
    ],
)
def test_published_parameter_counts_within_one_percent(config, published_total, published_active):
    c = counts(config)
    assert c.total == pytest.approx(published_total, rel=0.01)
    if published_active is not None:
        assert c.active == pytest.approx(published_active, rel=0.01)


def test_qwen3_moe_non_embedding_count():
    # The Qwen3-30B-A3B card: 29.9 B non-embedding parameters (its "3.3 B activated" is 3.35 B
    # here with both embedding tables, so it is not asserted to 1%).
    c = counts(QWEN3_30B_A3B)
    assert c.total - c.embedding == pytest.approx(29.9e9, rel=0.01)
    assert c.active == pytest.approx(3.3e9, rel=0.02)


def test_llama_31_8b_exact_count():
    # By hand: embeddings 2·128256·4096 = 1,050,673,152; attention 32·(2·4096·4096 + 2·4096·1024)
    # = 1,342,177,280; MLP 32·3·4096·14336 = 5,637,144,576; norms (2·32+1)·4096 = 266,240.
    assert counts(LLAMA_31_8B).total == 8_030_261_248


def test_deepseek_v3_total_and_active():
    c = counts(DEEPSEEK_V3)
    m = spec(DEEPSEEK_V3)
    # 671 B total, MTP module (num_nextn_predict_layers) not counted, as DeepSeek counts it.
    assert c.total == pytest.approx(671e9, rel=0.01)
    # `active` counts every weight a token touches, both embedding tables included (the
    # convention of Mixtral's 12.9 B): 37.55 B.  DeepSeek's "37 B" leaves out the input
    # embedding table (a row lookup, no FLOPs): 37.55 - 129280·7168 = 36.63 B, which rounds to
    # DeepSeek's 37 B (and their V2 figure, 21 B, likewise matches 20.85 B, not 21.37 B).
    input_table = m.vocab_size * m.d_model
    assert c.active == pytest.approx(37.55e9, rel=0.001)
    assert round((c.active - input_table) / 1e9) == 37
    assert c.active - input_table == pytest.approx(37e9, rel=0.0102)


def test_deepseek_v3_matches_catalog_and_mla_kv_bytes():
    m = spec(DEEPSEEK_V3, name="deepseek-v3")
    cat = load_model("deepseek-v3")
    for key in (
        "num_layers",
        "d_model",
        "d_ff",
        "num_heads",
        "head_dim",
        "num_experts",
        "experts_per_token",
        "num_shared_experts",
        "shared_expert_d_ff",
        "num_dense_layers",
        "dense_d_ff",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "vocab_size",
    ):
        assert getattr(m, key) == getattr(cat, key), key
    # MLA caches the latent plus the rope key: (512 + 64)·61 layers·2 bytes = 70,272 B/token,
    # not 2·128 heads·192·61·2 = 5.99 MB of full heads.
    assert float(memory.kv_cache_bytes_per_token(m, 2.0)) == 70_272


def test_gqa_and_local_layers_kv_bytes():
    llama = spec(LLAMA_31_8B)
    # 2 (K,V)·8 heads·128·32 layers·2 bytes = 131,072 B per token.
    assert float(memory.kv_cache_bytes_per_token(llama, 2.0)) == 131_072
    gemma2 = spec(GEMMA2_9B)
    assert (gemma2.sliding_window, gemma2.num_local_layers) == (4096, 21)
    gemma3 = spec(GEMMA3_1B)
    # 26 layers, every 6th global: layers 6, 12, 18, 24 -> 4 global, 22 local.
    assert (gemma3.sliding_window, gemma3.num_local_layers) == (512, 22)
    # At 32k context the 22 local layers cache 512 tokens: 1 KV head·256·2·2 bytes = 1 kB per
    # layer-token -> 1024·(4·32768 + 22·512) bytes.
    assert float(memory.kv_cache_bytes_per_sequence(gemma3, 32768, 2.0)) == 1024 * (4 * 32768 + 22 * 512)


def test_gemma3_1b_count_and_extra_norms():
    c = counts(GEMMA3_1B)
    # ~1.0 B: embedding 262144·1152 = 302 M (tied), 26 layers of 2.95 M attention + 23.9 M MLP.
    assert c.total == pytest.approx(1.0e9, rel=0.01)
    # Gemma 3: 4 norms per layer plus q_norm/k_norm: (4·1152 + 2·256)·26 + 1152 = 133,120.
    assert c.norms == (4 * 1152 + 2 * 256) * 26 + 1152


def test_plain_mlp_families():
    g = spec(GPT2)
    assert (g.gated_mlp, g.learned_position_embeddings, g.d_ff, g.norm_bias) == (False, 1024, 3072, True)
    # GPT-2 small by hand: 50257·768 + 1024·768 + 12·(4·768² + 4·768 + 2·768·3072 + 3072 + 768
    # + 4·768) + 2·768 = 124,439,808.
    assert counts(GPT2).total == 124_439_808
    o = spec(OPT_125M)
    assert (o.gated_mlp, o.learned_position_embeddings) == (False, 2050)


def test_catalog_models_reproduced():
    for config, name in (
        (MIXTRAL_8X7B, "mixtral-8x7b"),
        (GEMMA2_9B, "gemma-2-9b"),
        (OPT_125M, "opt-125m"),
        (MISTRAL_7B_V01, "mistral-7b-v0.1"),
        (QWEN25_05B, "qwen2.5-0.5b"),
    ):
        a, b = counts(config), memory.param_counts(load_model(name))
        # Gemma 2's post-norms (2·3584·42 = 301,056) are the only difference from the catalog.
        assert a.total - b.total == a.norms - b.norms
        assert a.total == pytest.approx(b.total, rel=1e-4)
        # Same KV cache too: Mistral's window on every layer, Qwen's window switched off.
        m, cat = spec(config), load_model(name)
        assert float(memory.kv_cache_bytes_per_sequence(m, 32768, 2.0)) == float(
            memory.kv_cache_bytes_per_sequence(cat, 32768, 2.0)
        )


def test_unknown_architecture_is_named():
    with pytest.raises(SpecError, match="unknown architecture 'MambaForCausalLM'.*supported: .*LlamaForCausalLM"):
        spec({"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768})


def test_unmapped_fields_are_named():
    config = dict(LLAMA_31_8B, num_experts=8, cross_layer_kv=True)
    with pytest.raises(SpecError, match="unmapped config fields for LlamaForCausalLM: cross_layer_kv, num_experts"):
        spec(config)


def test_missing_field_and_partial_moe_refused():
    config = {k: v for k, v in LLAMA_31_8B.items() if k != "hidden_size"}
    with pytest.raises(SpecError, match="'hidden_size' is missing"):
        spec(config)
    with pytest.raises(SpecError, match="decoder_sparse_step 2"):
        spec(dict(QWEN3_30B_A3B, decoder_sparse_step=2))


def test_every_field_has_a_note():
    data, notes = model_dict_with_notes(DEEPSEEK_V3, name="ds", origin="x/config.json")
    assert set(data) <= set(notes)
    assert notes["kv_lora_rank"] == "x/config.json: kv_lora_rank"
    assert notes["num_kv_heads"].startswith("DeepseekV3ForCausalLM rule:")


def test_load_model_accepts_config_json_path(tmp_path):
    folder = tmp_path / "Meta-Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_31_8B))
    m = load_model(str(folder / "config.json"))
    assert m.name == "Meta-Llama-3.1-8B"
    assert memory.param_counts(m).total == 8_030_261_248


def test_a_json_not_named_config_json_names_the_model_after_itself(tmp_path):
    # --model dir/x.json used to name the model after its folder ("dir"); only config.json takes the folder's.
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "llama-8b-variant.json").write_text(json.dumps(LLAMA_31_8B))
    assert load_model(str(folder / "llama-8b-variant.json")).name == "llama-8b-variant"


def test_model_import_cli_writes_commented_yaml(tmp_path):
    from tests.conftest import run_cli, run_json

    folder = tmp_path / "DeepSeek-V3"
    folder.mkdir()
    config = folder / "config.json"
    config.write_text(json.dumps(DEEPSEEK_V3))
    out = tmp_path / "ds.yaml"
    summary = run_json("model", "import", str(config), "--out", str(out))
    assert summary["param_count"] == pytest.approx(671e9, rel=0.01)
    text = out.read_text()
    body = [line for line in text.splitlines() if line and not line.startswith("#")]
    # The catalog rule: every value line names its source in a comment.
    assert body and all("  # " in line for line in body)
    assert "kv_lora_rank: 512  # " in text and "config.json: kv_lora_rank" in text
    reloaded = load_model(str(out))
    assert memory.param_counts(reloaded).total == memory.param_counts(spec(DEEPSEEK_V3)).total
    assert reloaded.name == "DeepSeek-V3"
    bad = folder / "bad.json"
    bad.write_text(json.dumps(dict(LLAMA_31_8B, num_experts=8)))
    target = tmp_path / "never.yaml"
    proc = run_cli("model", "import", str(bad), "--out", str(target))
    assert proc.returncode == 2 and "num_experts" in proc.stderr and "Traceback" not in proc.stderr
    assert not target.exists() and list(tmp_path.glob(".never.yaml*")) == []


def test_gemma3_multimodal_uses_text_config_and_class_defaults():
    # Gemma 3 4B's text_config lists only what differs from Gemma3TextConfig; the rest (8 heads,
    # 4 KV heads, head_dim 256, vocab 262208, every 6th layer global) are the class defaults.
    data, notes = model_dict_with_notes(GEMMA3_4B_IT, name="gemma-3-4b", origin="config.json")
    m = model_from_dict(data)
    assert (m.num_heads, m.num_kv_heads, m.head_dim, m.vocab_size) == (8, 4, 256, 262208)
    assert notes["num_heads"].startswith("Gemma3ForConditionalGeneration")
    assert "Gemma3TextConfig default" in notes["num_heads"]
    assert notes["d_model"] == "config.json: hidden_size"
    # 34 layers, global at 6, 12, 18, 24, 30: 29 local with a 1024-token window.
    assert (m.num_local_layers, m.sliding_window) == (29, 1024)
    # The Gemma 3 report: 675 M embedding + 3,209 M non-embedding parameters (vision tower apart).
    c = memory.param_counts(m)
    assert c.embedding == pytest.approx(675e6, rel=0.01)
    assert c.total - c.embedding == pytest.approx(3209e6, rel=0.01)


@pytest.mark.parametrize(
    "name",
    [
        "LLAMA_31_8B",
        "MIXTRAL_8X7B",
        "DEEPSEEK_V3",
        "QWEN3_8B",
        "QWEN3_30B_A3B",
        "QWEN15_MOE_A27B",
        "GEMMA2_9B",
        "GEMMA3_1B",
        "GEMMA3_4B_IT",
        "GPT2",
        "OPT_125M",
    ],
)
def test_imported_yaml_round_trips(name):
    import yaml

    from roofline.views.cli.model_import import yaml_with_comments

    data, notes = model_dict_with_notes(globals()[name], name=name.lower(), origin="hf/config.json")
    text = yaml_with_comments(data, notes, f"{name} import")
    assert model_from_dict(yaml.safe_load(text)) == model_from_dict(data)
