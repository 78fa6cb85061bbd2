"""The first config.json families: Llama, Mistral, Qwen2/3 (and MoE), Mixtral, Gemma 1-3, OPT, GPT-2, DeepSeek."""

from __future__ import annotations

from roofline.core.errors import SpecError, shown
from roofline.core.types import JSONObject
from roofline.specs.hf.checks import as_int as _as_int
from roofline.specs.hf.checks import bad_key as _bad
from roofline.specs.hf.checks import flag_key as _flag
from roofline.specs.hf.checks import int_key as _int
from roofline.specs.hf.checks import note_text as _text
from roofline.specs.hf.checks import optional_int as _opt_int
from roofline.specs.hf.fields import (
    Family,
    Mapped,
    Value,
    _bias_fields,
    _core,
    _f,
    _gated,
    _local_layers,
    _plain_mlp_fields,
)


def _llama(cfg: JSONObject, origin: str) -> Mapped:
    """Llama 2/3, Mistral: SwiGLU, RMSNorm, optional attention/MLP biases."""
    out = _core(cfg, origin, tie_default=False)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size")
    out["gated_mlp"] = _gated("hidden_act", cfg)
    out.update(_bias_fields(cfg, origin))
    out.update(_local_layers(cfg, origin, "all"))
    return out


def _qwen(cfg: JSONObject, origin: str, qkv_bias_default: bool, qk_norm: bool) -> Mapped:
    out = _core(cfg, origin, tie_default=False)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size")
    out["gated_mlp"] = _gated("hidden_act", cfg)
    bias = _flag(cfg, "attention_bias", origin)
    if bias is None and qkv_bias_default:
        out["qkv_bias"] = Value(True, "Qwen2: q/k/v projections carry biases (o_proj does not)")
    else:
        out.update(_bias_fields({"attention_bias": bias}, origin))
    out.update(_bias_fields({"mlp_bias": cfg.get("mlp_bias")}, origin))
    if qk_norm:
        h = out["head_dim"].value
        out["extra_params_per_layer"] = Value(2 * h, f"Qwen3: q_norm and k_norm, 2 x head_dim ({h})")
    out.update(_local_layers(cfg, origin, "qwen"))
    return out


def _qwen2(cfg: JSONObject, origin: str) -> Mapped:
    return _qwen(cfg, origin, qkv_bias_default=True, qk_norm=False)


def _qwen3(cfg: JSONObject, origin: str) -> Mapped:
    return _qwen(cfg, origin, qkv_bias_default=False, qk_norm=True)


def _check_every_layer_sparse(cfg: JSONObject, origin: str) -> None:
    step_ = _opt_int(cfg, "decoder_sparse_step", origin, 1, minimum=1)
    dense_only = cfg.get("mlp_only_layers") or []
    if not isinstance(dense_only, list):
        raise _bad(origin, "mlp_only_layers", dense_only, "a list of layer indices")
    if step_ != 1 or dense_only:
        raise SpecError(
            f"{origin}: decoder_sparse_step {step_} / mlp_only_layers {shown(dense_only)} "
            "(MoE on only some layers) is not mapped; only every-layer MoE is"
        )


def _qwen_moe(cfg: JSONObject, origin: str, qwen3: bool) -> Mapped:
    out = _qwen(cfg, origin, qkv_bias_default=not qwen3, qk_norm=qwen3)
    _check_every_layer_sparse(cfg, origin)
    out["d_ff"] = _f(_int(cfg, "moe_intermediate_size", origin), "moe_intermediate_size (per expert)")
    out["num_experts"] = _f(_int(cfg, "num_experts", origin), "num_experts")
    out["experts_per_token"] = _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok")
    shared = _opt_int(cfg, "shared_expert_intermediate_size", origin, 0)
    if shared:
        d = out["d_model"].value
        out["num_shared_experts"] = Value(1, "Qwen2-MoE: one shared expert")
        out["shared_expert_d_ff"] = _f(shared, "shared_expert_intermediate_size")
        out["extra_params_per_layer"] = Value(d, f"Qwen2-MoE: shared_expert_gate, D ({d}) per layer")
    return out


def _qwen2_moe(cfg: JSONObject, origin: str) -> Mapped:
    return _qwen_moe(cfg, origin, qwen3=False)


def _qwen3_moe(cfg: JSONObject, origin: str) -> Mapped:
    return _qwen_moe(cfg, origin, qwen3=True)


def _mixtral(cfg: JSONObject, origin: str) -> Mapped:
    out = _llama(cfg, origin)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size (per expert)")
    out["num_experts"] = _f(_int(cfg, "num_local_experts", origin), "num_local_experts")
    out["experts_per_token"] = _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok")
    return out


def _gemma(cfg: JSONObject, origin: str, version: int) -> Mapped:
    out = _core(cfg, origin, tie_default=True)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size")
    out["gated_mlp"] = _gated("hidden_activation" if "hidden_activation" in cfg else "hidden_act", cfg)
    out.update(_bias_fields(cfg, origin))
    d, h = out["d_model"].value, out["head_dim"].value
    if version == 2:
        out["extra_params_per_layer"] = Value(2 * d, f"Gemma 2: post-attention and post-feedforward norms, 2 x D ({d})")
        out.update(_local_layers(cfg, origin, "alternate"))
    elif version == 3:
        out["extra_params_per_layer"] = Value(
            2 * d + 2 * h, f"Gemma 3: post-attn/post-ffw norms 2 x D ({d}) + q_norm/k_norm 2 x head_dim ({h})"
        )
        out.update(_local_layers(cfg, origin, "pattern"))
    return out


def _gemma1(cfg: JSONObject, origin: str) -> Mapped:
    return _gemma(cfg, origin, 1)


def _gemma2(cfg: JSONObject, origin: str) -> Mapped:
    return _gemma(cfg, origin, 2)


def _gemma3(cfg: JSONObject, origin: str) -> Mapped:
    return _gemma(cfg, origin, 3)


def _opt_family(cfg: JSONObject, origin: str) -> Mapped:
    """OPT: ReLU MLP, LayerNorm with bias, learned positions with an offset of 2 rows."""
    d = _int(cfg, "hidden_size", origin)
    proj = cfg.get("word_embed_proj_dim")
    if proj is not None and _as_int(proj, "word_embed_proj_dim", origin) != d:
        raise SpecError(
            f"{origin}: word_embed_proj_dim {proj} != hidden_size {d} "
            "(OPT-350m-style embedding projections are not mapped)"
        )
    flags = ("do_layer_norm_before", "enable_bias", "layer_norm_elementwise_affine")
    if False in [_flag(cfg, key, origin) for key in flags]:
        raise SpecError(
            f"{origin}: do_layer_norm_before / enable_bias / layer_norm_elementwise_affine false is not mapped"
        )
    out = _core(cfg, origin, tie_default=True)
    out["d_ff"] = _f(_int(cfg, "ffn_dim", origin), "ffn_dim")
    out.update(_plain_mlp_fields(_text(cfg.get("activation_function", "relu"))))
    positions = _int(cfg, "max_position_embeddings", origin)
    out["learned_position_embeddings"] = Value(
        positions + 2, f"OPTLearnedPositionalEmbedding: max_position_embeddings {positions} + offset 2"
    )
    return out


def _gpt2(cfg: JSONObject, origin: str) -> Mapped:
    """GPT-2: n_embd, n_layer, n_head, n_inner (default 4·D), learned positions n_positions."""
    d = _int(cfg, "n_embd", origin)
    n = _int(cfg, "n_head", origin)
    if d % n:
        raise SpecError(f"{origin}: n_embd {d} is not a multiple of n_head {n}")
    positions = _int(cfg, "n_positions", origin)
    inner = cfg.get("n_inner")
    tie = _flag(cfg, "tie_word_embeddings", origin)
    out: Mapped = {
        "num_layers": _f(_int(cfg, "n_layer", origin), "n_layer"),
        "d_model": _f(d, "n_embd"),
        "num_heads": _f(n, "n_head"),
        "num_kv_heads": Value(n, "GPT-2: multi-head attention (K = N)"),
        "head_dim": Value(d // n, f"n_embd / n_head = {d} / {n}"),
        "vocab_size": _f(_int(cfg, "vocab_size", origin), "vocab_size"),
        "d_ff": _f(_as_int(inner, "n_inner", origin), "n_inner")
        if inner is not None
        else Value(4 * d, f"n_inner null: 4 x n_embd = {4 * d}"),
        "tie_embeddings": Value(True if tie is None else tie, "GPT-2 ties lm_head to wte"),
        "learned_position_embeddings": _f(positions, "n_positions (wpe rows)"),
        "max_position_embeddings": _f(positions, "n_positions"),
    }
    out.update(_plain_mlp_fields(_text(cfg.get("activation_function", "gelu_new"))))
    return out


def _deepseek(cfg: JSONObject, origin: str) -> Mapped:
    """DeepSeek-V2/V3: MLA attention, routed + shared experts, the first k layers dense."""
    freq = _opt_int(cfg, "moe_layer_freq", origin, 1, minimum=1)
    if freq != 1:
        raise SpecError(
            f"{origin}: moe_layer_freq {freq} is not mapped (only 1: every layer after first_k_dense_replace is MoE)"
        )
    out = _core(cfg, origin, tie_default=False)
    n = out["num_heads"].value
    rope = _int(cfg, "qk_rope_head_dim", origin, minimum=0)
    nope = _int(cfg, "qk_nope_head_dim", origin)
    kv_rank = _int(cfg, "kv_lora_rank", origin)
    q_rank = _opt_int(cfg, "q_lora_rank", origin, 0)
    routed_ff = _int(cfg, "moe_intermediate_size", origin)
    shared = _opt_int(cfg, "n_shared_experts", origin, 0)
    out.update(
        {
            "num_kv_heads": Value(n, "MLA: every head has its own K/V after up-projection (K = N)"),
            "head_dim": Value(nope + rope, f"qk_nope_head_dim + qk_rope_head_dim = {nope} + {rope} (attention FLOPs)"),
            "d_ff": _f(routed_ff, "moe_intermediate_size (per routed expert)"),
            "gated_mlp": _gated("hidden_act", cfg),
            "num_experts": _f(_int(cfg, "n_routed_experts", origin), "n_routed_experts"),
            "experts_per_token": _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok"),
            "num_dense_layers": _f(_opt_int(cfg, "first_k_dense_replace", origin, 0), "first_k_dense_replace"),
            "dense_d_ff": _f(_int(cfg, "intermediate_size", origin), "intermediate_size (dense layers)"),
            "kv_lora_rank": _f(kv_rank, "kv_lora_rank"),
            "qk_rope_head_dim": _f(rope, "qk_rope_head_dim"),
            "qk_nope_head_dim": _f(nope, "qk_nope_head_dim"),
            "v_head_dim": _f(_int(cfg, "v_head_dim", origin), "v_head_dim"),
            "extra_params_per_layer": Value(
                kv_rank + q_rank, "MLA: kv_a_layernorm (kv_lora_rank) + q_a_layernorm (q_lora_rank)"
            ),
        }
    )
    if shared:
        out["num_shared_experts"] = _f(shared, "n_shared_experts")
        out["shared_expert_d_ff"] = _f(routed_ff, "moe_intermediate_size (each shared expert)")
    if q_rank:
        out["q_lora_rank"] = _f(q_rank, "q_lora_rank")
    if _flag(cfg, "attention_bias", origin) or _flag(cfg, "mlp_bias", origin):
        raise SpecError(f"{origin}: attention_bias / mlp_bias true is not mapped for DeepSeek (MLA)")
    return out


_LLAMA_KEYS = frozenset(
    {
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "attention_bias",
        "mlp_bias",
    }
)
_MOE_KEYS = frozenset(
    {
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "decoder_sparse_step",
        "mlp_only_layers",
    }
)
_DEEPSEEK_KEYS = _LLAMA_KEYS | {
    "moe_intermediate_size",
    "n_routed_experts",
    "n_shared_experts",
    "num_experts_per_tok",
    "first_k_dense_replace",
    "moe_layer_freq",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
}

FAMILIES: dict[str, Family] = {
    "llama": Family(_llama, _LLAMA_KEYS),
    "mistral": Family(_llama, _LLAMA_KEYS),
    "qwen2": Family(_qwen2, _LLAMA_KEYS),
    "qwen3": Family(_qwen3, _LLAMA_KEYS),
    "qwen2_moe": Family(_qwen2_moe, _LLAMA_KEYS | _MOE_KEYS),
    "qwen3_moe": Family(_qwen3_moe, _LLAMA_KEYS | _MOE_KEYS),
    "mixtral": Family(_mixtral, _LLAMA_KEYS | {"num_local_experts", "num_experts_per_tok"}),
    "gemma": Family(_gemma1, _LLAMA_KEYS),
    "gemma2": Family(_gemma2, _LLAMA_KEYS),
    "gemma3_text": Family(_gemma3, _LLAMA_KEYS),
    "opt": Family(
        _opt_family,
        frozenset(
            {
                "hidden_size",
                "ffn_dim",
                "num_hidden_layers",
                "num_attention_heads",
                "word_embed_proj_dim",
                "enable_bias",
                "do_layer_norm_before",
                "layer_norm_elementwise_affine",
            }
        ),
    ),
    "gpt2": Family(_gpt2, frozenset({"n_embd", "n_layer", "n_head", "n_inner", "n_positions"})),
    "deepseek_v2": Family(_deepseek, _DEEPSEEK_KEYS),
    "deepseek_v3": Family(_deepseek, _DEEPSEEK_KEYS),
}
#: ``architectures[0]`` values and the family each maps to.
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "MixtralForCausalLM": "mixtral",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3_text",
    "OPTForCausalLM": "opt",
    "GPT2LMHeadModel": "gpt2",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}
