"""Hugging Face ``config.json`` -> a model mapping in the book's notation (L, D, F, N, K, H, V).

Reads only the keys each supported architecture defines and refuses what it does not
understand: an unknown architecture, or a key that is neither mapped nor on the list of
keys known not to change the parameter count or the KV cache, is a
:class:`~roofline.errors.SpecError` naming it.  Nothing is guessed silently: every value
in the result carries a note saying which config key (or which architecture rule) gave it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import SpecError, listed, shown
from .hf_checks import as_int as _as_int
from .hf_checks import bad_key as _bad
from .hf_checks import check_config_types
from .hf_checks import flag_key as _flag
from .hf_checks import int_key as _int
from .hf_checks import note_text as _text
from .hf_checks import optional_int as _opt_int

#: Keys the shared mapping code reads for every family (positions, windows, activations, tying).
SHARED_KEYS = frozenset({
    "vocab_size", "head_dim", "tie_word_embeddings", "max_position_embeddings", "sliding_window",
    "sliding_window_pattern", "layer_types", "use_sliding_window", "max_window_layers", "hidden_act",
    "hidden_activation", "activation_function",
})
#: Keys of any config that do not change the parameter count or the KV-cache size.
IGNORED_KEYS = frozenset({
    "architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "use_cache",
    "initializer_range", "init_std", "rope_theta", "rope_scaling", "rope_parameters",
    "rope_interleave", "rope_local_base_freq", "partial_rotary_factor", "pretraining_tp",
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "attention_dropout",
    "hidden_dropout", "dropout", "activation_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "summary_first_dropout", "layerdrop", "bos_token_id", "eos_token_id", "pad_token_id",
    "decoder_start_token_id", "sep_token_id", "unk_token_id", "output_attentions",
    "output_hidden_states", "return_dict", "is_decoder", "is_encoder_decoder", "quantization_config",
    "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
    "router_aux_loss_coef", "output_router_logits", "router_jitter_noise", "norm_topk_prob",
    "aux_loss_alpha", "seq_aux", "routed_scaling_factor", "scoring_func", "topk_method",
    "n_group", "topk_group", "ep_size", "router_z_loss_coef", "use_qk_norm_in_gating",
    "attn_implementation", "_attn_implementation", "tokenizer_class", "prefix", "task_specific_params",
    "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
    "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "init_range", "cache_implementation", "use_bidirectional_attention",
    "n_ctx",  # GPT-2: a duplicate of n_positions
    "use_mrope",  # rotary layout only
    "num_nextn_predict_layers",  # DeepSeek's MTP module: not counted, as in its 671 B
    "_remove_final_layer_norm", "use_return_dict", "mup_width_multiplier", "finetuning_task",
    "id2label", "label2id", "problem_type", "chunk_size_feed_forward", "tf_legacy_loss",
    "pruned_heads", "torchscript", "use_bfloat16", "tie_encoder_decoder", "add_cross_attention",
    "cross_attention_hidden_size", "num_beams", "max_length", "min_length", "do_sample",
    "temperature", "top_k", "top_p", "repetition_penalty", "length_penalty", "bad_words_ids",
    "no_repeat_ngram_size", "num_return_sequences", "early_stopping", "diversity_penalty",
    "num_beam_groups", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
    "typical_p", "encoder_no_repeat_ngram_size", "return_dict_in_generate", "output_scores",
    "chunk_size", "image_token_index", "boi_token_index", "eoi_token_index", "mm_tokens_per_image",
    "auto_map",
    "sliding_window_size",  # Gemma 2: a duplicate of sliding_window
})
#: Key prefixes that never change the shape (private keys, token ids, dropouts).
IGNORED_SUFFIXES = ("_token_id", "_dropout", "_pdrop")


@dataclass(frozen=True)
class Value:
    """One ModelSpec value and the note saying where it came from."""

    value: Any
    note: str


Mapped = dict[str, Value]


def _opt(cfg: dict[str, Any], key: str, default: Any) -> Any:
    """``cfg[key]``, or ``default`` where the key is absent or null (types checked by check_config_types)."""
    value = cfg.get(key)
    return default if value is None else value


def _f(value: Any, key: str) -> Value:
    return Value(value, f"config.json: {key}")


def _attention_fields(cfg: dict[str, Any], origin: str) -> Mapped:
    """Heads and head size: num_attention_heads, num_key_value_heads (default N), head_dim."""
    d = _int(cfg, "hidden_size", origin)
    n = _int(cfg, "num_attention_heads", origin)
    kv_key = "num_key_value_heads" if cfg.get("num_key_value_heads") is not None else None
    k = _as_int(cfg[kv_key], kv_key, origin) if kv_key else n
    if cfg.get("head_dim") is not None:
        head = Value(_as_int(cfg["head_dim"], "head_dim", origin), "config.json: head_dim")
    elif d % n:
        raise SpecError(f"{origin}: hidden_size {d} is not a multiple of num_attention_heads {n} "
                        "and head_dim is not given")
    else:
        head = Value(d // n, f"hidden_size / num_attention_heads = {d} / {n}")
    return {
        "num_heads": _f(n, "num_attention_heads"),
        "num_kv_heads": _f(k, "num_key_value_heads") if kv_key
        else Value(k, "no num_key_value_heads: multi-head attention (K = N)"),
        "head_dim": head,
    }


def _core(cfg: dict[str, Any], origin: str, tie_default: bool) -> Mapped:
    """L, D, V, tied embeddings and max positions, shared by the Llama-like families."""
    out: Mapped = {
        "num_layers": _f(_int(cfg, "num_hidden_layers", origin), "num_hidden_layers"),
        "d_model": _f(_int(cfg, "hidden_size", origin), "hidden_size"),
        "vocab_size": _f(_int(cfg, "vocab_size", origin), "vocab_size"),
    }
    out.update(_attention_fields(cfg, origin))
    tie = _flag(cfg, "tie_word_embeddings", origin)
    out["tie_embeddings"] = (
        _f(tie, "tie_word_embeddings") if tie is not None
        else Value(tie_default, f"tie_word_embeddings absent: this architecture's default ({tie_default})")
    )
    if cfg.get("max_position_embeddings") is not None:
        out["max_position_embeddings"] = _f(_int(cfg, "max_position_embeddings", origin),
                                            "max_position_embeddings")
    return out


def _gated(act_key: str, cfg: dict[str, Any]) -> Value:
    act = cfg.get(act_key, "silu")
    return Value(True, f"gated MLP: gate_proj/up_proj/down_proj ({act_key} {_text(act)})")


def _local_layers(cfg: dict[str, Any], origin: str, rule: str) -> Mapped:
    """Sliding-window layers: from ``layer_types`` when present, else the family's rule."""
    window = cfg.get("sliding_window")
    layers = _int(cfg, "num_hidden_layers", origin)
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise _bad(origin, "layer_types", types, "a list of layer type names")
        unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
        if unknown:
            raise SpecError(f"{origin}: layer_types has unknown entries {listed(unknown, 4)}; "
                            "understood: sliding_attention, full_attention")
        local = sum(t == "sliding_attention" for t in types)
        note = f"layer_types: {local} of {len(types)} are sliding_attention"
    elif window is None or rule == "none":
        return {}
    elif rule == "all":
        local, note = layers, "sliding_window set: every layer uses the window"
    elif rule == "qwen":
        if not _flag(cfg, "use_sliding_window", origin):
            return {}
        first = _opt_int(cfg, "max_window_layers", origin, layers)
        local = max(layers - first, 0)
        note = f"use_sliding_window: layers from max_window_layers ({first}) on are local"
    elif rule == "alternate":
        local, note = (layers + 1) // 2, "Gemma 2: even-numbered layers are local (alternating)"
    elif rule == "pattern":
        pattern = _opt_int(cfg, "sliding_window_pattern", origin, 6, minimum=1)
        local = layers - layers // pattern
        note = f"Gemma 3: every {pattern}th layer is global (sliding_window_pattern {pattern})"
    else:  # pragma: no cover - rules are fixed above
        raise AssertionError(rule)
    if not local:
        return {}
    if window is None:
        raise SpecError(f"{origin}: layer_types lists sliding layers but sliding_window is missing")
    return {"sliding_window": _f(_as_int(window, "sliding_window", origin), "sliding_window"),
            "num_local_layers": Value(local, note)}


# --------------------------------------------------------------------------- families


def _llama(cfg: dict[str, Any], origin: str) -> Mapped:
    """Llama 2/3, Mistral: SwiGLU, RMSNorm, optional attention/MLP biases."""
    out = _core(cfg, origin, tie_default=False)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size")
    out["gated_mlp"] = _gated("hidden_act", cfg)
    out.update(_bias_fields(cfg, origin))
    out.update(_local_layers(cfg, origin, "all"))
    return out


def _bias_fields(cfg: dict[str, Any], origin: str) -> Mapped:
    """attention_bias: biases on q, k, v and o; mlp_bias: on the MLP projections."""
    out: Mapped = {}
    if _flag(cfg, "attention_bias", origin):
        out["qkv_bias"] = _f(True, "attention_bias")
        out["o_bias"] = _f(True, "attention_bias")
    if _flag(cfg, "mlp_bias", origin):
        out["mlp_bias"] = _f(True, "mlp_bias")
    return out


def _qwen(cfg: dict[str, Any], origin: str, qkv_bias_default: bool, qk_norm: bool) -> Mapped:
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


def _qwen2(cfg: dict[str, Any], origin: str) -> Mapped:
    return _qwen(cfg, origin, qkv_bias_default=True, qk_norm=False)


def _qwen3(cfg: dict[str, Any], origin: str) -> Mapped:
    return _qwen(cfg, origin, qkv_bias_default=False, qk_norm=True)


def _check_every_layer_sparse(cfg: dict[str, Any], origin: str) -> None:
    step_ = _opt_int(cfg, "decoder_sparse_step", origin, 1, minimum=1)
    dense_only = cfg.get("mlp_only_layers") or []
    if not isinstance(dense_only, list):
        raise _bad(origin, "mlp_only_layers", dense_only, "a list of layer indices")
    if step_ != 1 or dense_only:
        raise SpecError(f"{origin}: decoder_sparse_step {step_} / mlp_only_layers {shown(dense_only)} "
                        "(MoE on only some layers) is not mapped; only every-layer MoE is")


def _qwen_moe(cfg: dict[str, Any], origin: str, qwen3: bool) -> Mapped:
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


def _qwen2_moe(cfg: dict[str, Any], origin: str) -> Mapped:
    return _qwen_moe(cfg, origin, qwen3=False)


def _qwen3_moe(cfg: dict[str, Any], origin: str) -> Mapped:
    return _qwen_moe(cfg, origin, qwen3=True)


def _mixtral(cfg: dict[str, Any], origin: str) -> Mapped:
    out = _llama(cfg, origin)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size (per expert)")
    out["num_experts"] = _f(_int(cfg, "num_local_experts", origin), "num_local_experts")
    out["experts_per_token"] = _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok")
    return out


def _gemma(cfg: dict[str, Any], origin: str, version: int) -> Mapped:
    out = _core(cfg, origin, tie_default=True)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size")
    out["gated_mlp"] = _gated("hidden_activation" if "hidden_activation" in cfg else "hidden_act", cfg)
    out.update(_bias_fields(cfg, origin))
    d, h = out["d_model"].value, out["head_dim"].value
    if version == 2:
        out["extra_params_per_layer"] = Value(
            2 * d, f"Gemma 2: post-attention and post-feedforward norms, 2 x D ({d})")
        out.update(_local_layers(cfg, origin, "alternate"))
    elif version == 3:
        out["extra_params_per_layer"] = Value(
            2 * d + 2 * h, f"Gemma 3: post-attn/post-ffw norms 2 x D ({d}) + q_norm/k_norm 2 x head_dim ({h})")
        out.update(_local_layers(cfg, origin, "pattern"))
    return out


def _gemma1(cfg: dict[str, Any], origin: str) -> Mapped:
    return _gemma(cfg, origin, 1)


def _gemma2(cfg: dict[str, Any], origin: str) -> Mapped:
    return _gemma(cfg, origin, 2)


def _gemma3(cfg: dict[str, Any], origin: str) -> Mapped:
    return _gemma(cfg, origin, 3)


def _plain_mlp_fields(act: str) -> Mapped:
    return {
        "gated_mlp": Value(False, f"plain MLP fc1 -> {act} -> fc2"),
        "qkv_bias": Value(True, "biases on q/k/v"),
        "o_bias": Value(True, "bias on the output projection"),
        "mlp_bias": Value(True, "biases on fc1 and fc2"),
        "norm_bias": Value(True, "LayerNorm with weight and bias"),
    }


def _opt_family(cfg: dict[str, Any], origin: str) -> Mapped:
    """OPT: ReLU MLP, LayerNorm with bias, learned positions with an offset of 2 rows."""
    d = _int(cfg, "hidden_size", origin)
    proj = cfg.get("word_embed_proj_dim")
    if proj is not None and _as_int(proj, "word_embed_proj_dim", origin) != d:
        raise SpecError(f"{origin}: word_embed_proj_dim {proj} != hidden_size {d} "
                        "(OPT-350m-style embedding projections are not mapped)")
    flags = ("do_layer_norm_before", "enable_bias", "layer_norm_elementwise_affine")
    if False in [_flag(cfg, key, origin) for key in flags]:
        raise SpecError(f"{origin}: do_layer_norm_before / enable_bias / layer_norm_elementwise_affine false "
                        "is not mapped")
    out = _core(cfg, origin, tie_default=True)
    out["d_ff"] = _f(_int(cfg, "ffn_dim", origin), "ffn_dim")
    out.update(_plain_mlp_fields(_text(cfg.get("activation_function", "relu"))))
    positions = _int(cfg, "max_position_embeddings", origin)
    out["learned_position_embeddings"] = Value(
        positions + 2, f"OPTLearnedPositionalEmbedding: max_position_embeddings {positions} + offset 2")
    return out


def _gpt2(cfg: dict[str, Any], origin: str) -> Mapped:
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
        "d_ff": _f(_as_int(inner, "n_inner", origin), "n_inner") if inner is not None
        else Value(4 * d, f"n_inner null: 4 x n_embd = {4 * d}"),
        "tie_embeddings": Value(True if tie is None else tie, "GPT-2 ties lm_head to wte"),
        "learned_position_embeddings": _f(positions, "n_positions (wpe rows)"),
        "max_position_embeddings": _f(positions, "n_positions"),
    }
    out.update(_plain_mlp_fields(_text(cfg.get("activation_function", "gelu_new"))))
    return out


def _deepseek(cfg: dict[str, Any], origin: str) -> Mapped:
    """DeepSeek-V2/V3: MLA attention, routed + shared experts, the first k layers dense."""
    freq = _opt_int(cfg, "moe_layer_freq", origin, 1, minimum=1)
    if freq != 1:
        raise SpecError(f"{origin}: moe_layer_freq {freq} is not mapped (only 1: every layer after "
                        "first_k_dense_replace is MoE)")
    out = _core(cfg, origin, tie_default=False)
    n = out["num_heads"].value
    rope = _int(cfg, "qk_rope_head_dim", origin, minimum=0)
    nope = _int(cfg, "qk_nope_head_dim", origin)
    kv_rank = _int(cfg, "kv_lora_rank", origin)
    q_rank = _opt_int(cfg, "q_lora_rank", origin, 0)
    routed_ff = _int(cfg, "moe_intermediate_size", origin)
    shared = _opt_int(cfg, "n_shared_experts", origin, 0)
    out.update({
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
            kv_rank + q_rank, "MLA: kv_a_layernorm (kv_lora_rank) + q_a_layernorm (q_lora_rank)"),
    })
    if shared:
        out["num_shared_experts"] = _f(shared, "n_shared_experts")
        out["shared_expert_d_ff"] = _f(routed_ff, "moe_intermediate_size (each shared expert)")
    if q_rank:
        out["q_lora_rank"] = _f(q_rank, "q_lora_rank")
    if _flag(cfg, "attention_bias", origin) or _flag(cfg, "mlp_bias", origin):
        raise SpecError(f"{origin}: attention_bias / mlp_bias true is not mapped for DeepSeek (MLA)")
    return out


@dataclass(frozen=True)
class Family:
    """A supported architecture: its mapper and the keys it reads beyond the common ones."""

    mapper: Callable[[dict[str, Any], str], Mapped]
    keys: frozenset[str]


_LLAMA_KEYS = frozenset({"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                         "num_key_value_heads", "attention_bias", "mlp_bias"})
_MOE_KEYS = frozenset({"num_experts", "num_experts_per_tok", "moe_intermediate_size",
                       "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers"})
_DEEPSEEK_KEYS = _LLAMA_KEYS | {
    "moe_intermediate_size", "n_routed_experts", "n_shared_experts", "num_experts_per_tok",
    "first_k_dense_replace", "moe_layer_freq", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim"}

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
    "opt": Family(_opt_family, frozenset({"hidden_size", "ffn_dim", "num_hidden_layers",
                                          "num_attention_heads", "word_embed_proj_dim", "enable_bias",
                                          "do_layer_norm_before", "layer_norm_elementwise_affine"})),
    "gpt2": Family(_gpt2, frozenset({"n_embd", "n_layer", "n_head", "n_inner", "n_positions"})),
    "deepseek_v2": Family(_deepseek, _DEEPSEEK_KEYS),
    "deepseek_v3": Family(_deepseek, _DEEPSEEK_KEYS),
}
#: ``architectures[0]`` values and the family each maps to.
ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3", "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe", "MixtralForCausalLM": "mixtral",
    "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2", "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3_text", "OPTForCausalLM": "opt",
    "GPT2LMHeadModel": "gpt2", "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}


def all_families() -> tuple[dict[str, Family], dict[str, str]]:
    """Every mapped family and architecture: the ones above plus :mod:`roofline.hf_families`."""
    from .hf_families import MORE_ARCHITECTURES, MORE_FAMILIES
    from .hf_hybrid import HYBRID_ARCHITECTURES, HYBRID_FAMILIES

    return ({**FAMILIES, **MORE_FAMILIES, **HYBRID_FAMILIES},
            {**ARCHITECTURES, **MORE_ARCHITECTURES, **HYBRID_ARCHITECTURES})


def _family_of(cfg: dict[str, Any], origin: str) -> tuple[str, str]:
    families, architectures = all_families()
    archs = cfg.get("architectures") or []
    model_type = cfg.get("model_type")
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise _bad(origin, "architectures", archs, 'a list of class names, e.g. ["LlamaForCausalLM"]')
    if model_type is not None and not isinstance(model_type, str):
        raise _bad(origin, "model_type", model_type, 'a name, e.g. "llama"')
    if archs and archs[0] in architectures:
        return architectures[archs[0]], archs[0]
    if model_type in families:
        return str(model_type), str(model_type)
    label = archs[0] if archs else model_type
    raise SpecError(
        f"{origin}: unknown architecture {shown(label)} (architectures/model_type); supported: "
        f"{', '.join(sorted(architectures))}")


def _unmapped(cfg: dict[str, Any], family: Family) -> list[str]:
    return sorted(
        k for k in cfg
        if k not in family.keys and k not in SHARED_KEYS and k not in IGNORED_KEYS and not k.startswith("_")
        and not k.endswith(IGNORED_SUFFIXES)
    )


def _text_config(cfg: dict[str, Any], origin: str) -> tuple[dict[str, Any], str]:
    """Multimodal configs (Gemma 3 4B+) nest the language model in ``text_config``."""
    if "text_config" not in cfg:
        return cfg, ""
    if not isinstance(cfg["text_config"], dict):
        raise _bad(origin, "text_config", cfg["text_config"], "a mapping of the language model's keys")
    extra = sorted(set(cfg) - {"text_config", "vision_config", "architectures", "model_type",
                               "transformers_version", "torch_dtype", "dtype", "initializer_range"}
                   - IGNORED_KEYS - SHARED_KEYS)
    if extra:
        raise SpecError(f"{origin}: unmapped fields next to text_config: {listed(extra)}")
    text = dict(cfg["text_config"])
    text.setdefault("architectures", cfg.get("architectures"))
    text.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings", True))
    return text, "; language model only: the vision tower is not counted"


#: Defaults a family's transformers config class fills in when a (nested) config omits a key;
#: Gemma 3's multimodal checkpoints write only the text_config keys that differ from these.
CLASS_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemma3_text": ("transformers Gemma3TextConfig default", {
        "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
        "sliding_window_pattern": 6, "max_position_embeddings": 131072}),
}


def map_hf_config(config: dict[str, Any], origin: str = "config.json") -> tuple[str, Mapped, str]:
    """(architecture, ModelSpec fields with a note each, remark); unknown input is an error."""
    if not isinstance(config, dict):
        raise SpecError(f"{origin}: expected a JSON object of config fields (got {type(config).__name__})")
    check_config_types(config, origin)
    cfg, nested_note = _text_config(config, origin)
    if cfg is not config:
        check_config_types(cfg, f"{origin} (text_config)")
    family_name, arch = _family_of(cfg, origin)
    family = all_families()[0][family_name]
    unknown = _unmapped(cfg, family)
    if unknown:
        raise SpecError(
            f"{origin}: unmapped config fields for {arch}: {listed(unknown)} "
            "(roofline cannot tell whether they change the parameter count or KV cache)")
    label, defaults = CLASS_DEFAULTS.get(family_name, ("", {}))
    filled = {k: v for k, v in defaults.items() if cfg.get(k) is None}
    fields = family.mapper({**cfg, **filled}, origin)
    for key, value in fields.items():
        used = value.note.removeprefix("config.json: ").split(" ")[0]
        if used in filled:
            fields[key] = Value(value.value, f"{label}: {used} = {filled[used]}")
    from .hf_quant import checkpoint_precision

    quant = config.get("quantization_config", cfg.get("quantization_config"))
    dtype = config.get("torch_dtype", config.get("dtype", cfg.get("torch_dtype")))
    precision = checkpoint_precision(quant, dtype, origin)
    if precision is not None:
        fields["precision"] = precision
    return arch, fields, nested_note


def model_dict_with_notes(
    config: dict[str, Any], name: str, origin: str = "config.json"
) -> tuple[dict[str, Any], dict[str, str]]:
    """The ModelSpec mapping of a config.json and, per key, the note naming its source."""
    arch, fields, remark = map_hf_config(config, origin)
    data: dict[str, Any] = {"name": name, "source": f"HF config.json at {origin} ({arch}{remark})"}
    notes = {"name": "--name or the config's folder", "source": "sources summary"}
    for key, field in fields.items():
        data[key] = field.value
        config_key = field.note.removeprefix("config.json: ")
        notes[key] = f"{origin}: {config_key}" if config_key != field.note else f"{arch} rule: {field.note}"
    return data, notes


def model_dict_from_hf_config(config: dict[str, Any], name: str, origin: str = "config.json") -> dict[str, Any]:
    """The ModelSpec mapping of a Hugging Face config.json (validated by specs.model_from_dict)."""
    return model_dict_with_notes(config, name, origin)[0]
