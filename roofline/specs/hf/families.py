"""More ``config.json`` families: GPT-J, GPT-NeoX/Pythia, BLOOM, Falcon, Phi-3/Phi-4 (dense) and
the DeepSeek-style MoE families Kimi-K2, GLM-4.5 and MiniMax-M2.

Each mapper follows the family's transformers modelling code (which weights exist, which carry
biases, how many LayerNorms a block has) and reads only the keys named in its :class:`Family`;
the shared refusal rules of :mod:`roofline.specs.hf.config` apply (an unknown key is an error).
"""

from __future__ import annotations

from roofline.core.errors import SpecError
from roofline.core.types import JSONObject
from roofline.specs.hf.checks import as_int as _as_int
from roofline.specs.hf.checks import int_key as _int
from roofline.specs.hf.checks import required
from roofline.specs.hf.core_families import _DEEPSEEK_KEYS, _LLAMA_KEYS, _deepseek
from roofline.specs.hf.fields import Family, Mapped, Value, _core, _f, _gated, _local_layers, _opt


def _layers(cfg: JSONObject, origin: str) -> int:
    """num_hidden_layers (or Falcon's older n_layer), a whole number ≥ 1."""
    return _as_int(required(cfg, "num_hidden_layers", origin, "n_layer"), "num_hidden_layers", origin)


def _plain_mlp(act: str, d_ff: Value, bias: bool) -> Mapped:
    """A two-matrix MLP (up -> act -> down), biases on both when ``bias``."""
    out: Mapped = {"d_ff": d_ff, "gated_mlp": Value(False, f"plain MLP up -> {act} -> down")}
    if bias:
        out["mlp_bias"] = Value(True, "biases on both MLP projections")
    return out


def _layernorm(count: int, why: str) -> Mapped:
    return {"norm_bias": Value(True, "LayerNorm with weight and bias"), "norms_per_layer": Value(count, why)}


def _four_d(cfg: JSONObject, key: str, d: int) -> Value:
    inner = cfg.get(key)
    return _f(int(inner), key) if inner is not None else Value(4 * d, f"{key} absent/null: 4 x D = {4 * d}")


# --------------------------------------------------------------------------- dense families


def _gptj(cfg: JSONObject, origin: str) -> Mapped:
    """GPT-J: rotary, attention and MLP in parallel after one LayerNorm (ln_1), untied lm_head with bias."""
    d = _int(cfg, "n_embd", origin)
    n = _int(cfg, "n_head", origin)
    out: Mapped = {
        "num_layers": _f(_int(cfg, "n_layer", origin), "n_layer"),
        "d_model": _f(d, "n_embd"),
        "num_heads": _f(n, "n_head"),
        "num_kv_heads": Value(n, "GPT-J: multi-head attention (K = N)"),
        "head_dim": Value(d // n, f"n_embd / n_head = {d} / {n}"),
        "vocab_size": _f(_int(cfg, "vocab_size", origin), "vocab_size"),
        "tie_embeddings": Value(
            bool(cfg.get("tie_word_embeddings", False)),
            "GPT-J: lm_head is its own matrix (tie_word_embeddings default false)",
        ),
        "lm_head_bias": Value(True, "GPT-J: lm_head carries a bias (V)"),
    }
    if cfg.get("n_positions") is not None:
        out["max_position_embeddings"] = _f(int(cfg["n_positions"]), "n_positions (rotary: no position weights)")
    out.update(_plain_mlp(str(cfg.get("activation_function", "gelu_new")), _four_d(cfg, "n_inner", d), bias=True))
    out.update(_layernorm(1, "GPT-J: one LayerNorm (ln_1) feeds attention and MLP in parallel"))
    out["parallel_block"] = Value(True, "GPT-J: attention and MLP in parallel, outputs summed")
    return out


def _gpt_neox(cfg: JSONObject, origin: str) -> Mapped:
    """GPT-NeoX / Pythia: fused QKV with biases, two LayerNorms per block (parallel residual or not)."""
    out = _core(cfg, origin, tie_default=False)
    out.update(
        _plain_mlp(
            str(cfg.get("hidden_act", "gelu")),
            _f(_int(cfg, "intermediate_size", origin), "intermediate_size"),
            bias=True,
        )
    )
    if cfg.get("attention_bias", True):
        note = "attention_bias" if "attention_bias" in cfg else "GPT-NeoX: attention_bias default true"
        out["qkv_bias"] = Value(True, f"{note}: query_key_value bias")
        out["o_bias"] = Value(True, f"{note}: dense (output) bias")
    out.update(_layernorm(2, "GPT-NeoX: input_layernorm and post_attention_layernorm in every block"))
    if cfg.get("use_parallel_residual", True):
        out["parallel_block"] = Value(True, "use_parallel_residual (default true): attention and MLP in parallel")
    return out


def _bloom(cfg: JSONObject, origin: str) -> Mapped:
    """BLOOM: ALiBi (no position weights), LayerNorm on the embeddings, biases everywhere, tied head."""
    d = _as_int(required(cfg, "hidden_size", origin, "n_embed"), "hidden_size", origin)
    n = _as_int(required(cfg, "num_attention_heads", origin, "n_head"), "num_attention_heads", origin)
    inner = cfg.get("n_inner")
    if inner is not None and int(inner) != 4 * d:
        raise SpecError(f"{origin}: n_inner {inner} is not mapped for BLOOM (its MLP is 4 x hidden = {4 * d})")
    d_key = "hidden_size" if cfg.get("hidden_size") is not None else "n_embed"
    out: Mapped = {
        "num_layers": _f(_layers(cfg, origin), "n_layer"),
        "d_model": _f(d, d_key),
        "num_heads": _f(n, "n_head"),
        "num_kv_heads": Value(n, "BLOOM: multi-head attention (K = N)"),
        "head_dim": Value(d // n, f"hidden / heads = {d} / {n}"),
        "vocab_size": _f(_int(cfg, "vocab_size", origin), "vocab_size"),
        "tie_embeddings": Value(bool(cfg.get("tie_word_embeddings", True)), "BLOOM ties lm_head to word_embeddings"),
        "qkv_bias": Value(True, "BLOOM: query_key_value bias"),
        "o_bias": Value(True, "BLOOM: dense (output) bias"),
        "embedding_norm": Value(True, "BLOOM: word_embeddings_layernorm"),
    }
    out.update(_plain_mlp("gelu", Value(4 * d, f"BLOOM: dense_h_to_4h is 4 x hidden = {4 * d}"), bias=True))
    out.update(_layernorm(2, "BLOOM: input_layernorm and post_attention_layernorm"))
    return out


def _falcon(cfg: JSONObject, origin: str) -> Mapped:
    """Falcon: parallel attention/MLP; old decoder (7B: multi-query, one LayerNorm) or new (40B/180B:
    num_kv_heads groups, ln_attn + ln_mlp); optional biases; tied head."""
    new_default = cfg.get("model_type") == "RefinedWeb"  # the pre-transformers 40B/180B configs
    new_arch = bool(_opt(cfg, "new_decoder_architecture", new_default))
    d = _int(cfg, "hidden_size", origin)
    n = _as_int(required(cfg, "num_attention_heads", origin, "n_head"), "num_attention_heads", origin)
    kv = cfg.get("num_kv_heads", cfg.get("n_head_kv"))
    if new_arch:
        k = Value(int(kv) if kv is not None else n, "new_decoder_architecture: num_kv_heads groups (GQA)")
    elif cfg.get("multi_query", True):
        k = Value(1, "old decoder with multi_query: one K/V head")
    else:
        k = Value(int(kv) if kv is not None else n, "old decoder without multi_query: num_kv_heads (default N)")
    out: Mapped = {
        "num_layers": _f(_layers(cfg, origin), "num_hidden_layers"),
        "d_model": _f(d, "hidden_size"),
        "num_heads": _f(n, "num_attention_heads"),
        "num_kv_heads": k,
        "head_dim": Value(d // n, f"hidden_size / num_attention_heads = {d} / {n}"),
        "vocab_size": _f(_int(cfg, "vocab_size", origin), "vocab_size"),
        "tie_embeddings": Value(
            bool(cfg.get("tie_word_embeddings", True)),
            "Falcon ties lm_head to word_embeddings (tie_word_embeddings default true)",
        ),
    }
    if cfg.get("max_position_embeddings") is not None:
        out["max_position_embeddings"] = _f(int(cfg["max_position_embeddings"]), "max_position_embeddings")
    bias = bool(cfg.get("bias", False))
    if bias:
        out["qkv_bias"] = _f(True, "bias")
        out["o_bias"] = _f(True, "bias")
    out.update(_plain_mlp(str(cfg.get("activation", "gelu")), _four_d(cfg, "ffn_hidden_size", d), bias=bias))
    ln_parallel = int(_opt(cfg, "num_ln_in_parallel_attn", 2))
    if new_arch and ln_parallel == 2:
        norms = _layernorm(2, "new_decoder_architecture: ln_attn and ln_mlp")
    elif cfg.get("parallel_attn", True):
        norms = _layernorm(1, "parallel_attn: one input_layernorm feeds attention and MLP")
    else:
        norms = _layernorm(2, "parallel_attn false: input_layernorm and post_attention_layernorm")
    out.update(norms)
    if new_arch or cfg.get("parallel_attn", True):
        out["parallel_block"] = Value(True, "Falcon: attention and MLP in parallel (parallel_attn / new decoder)")
    return out


def _phi3(cfg: JSONObject, origin: str) -> Mapped:
    """Phi-3 / Phi-4: Llama-shaped (fused qkv_proj and gate_up_proj hold the same weights), no biases."""
    out = _core(cfg, origin, tie_default=False)
    out["d_ff"] = _f(_int(cfg, "intermediate_size", origin), "intermediate_size")
    out["gated_mlp"] = _gated("hidden_act", cfg)
    out.update(_local_layers(cfg, origin, "all"))
    return out


# --------------------------------------------------------------------------- DeepSeek-style MoE


def _glm4_moe(cfg: JSONObject, origin: str) -> Mapped:
    """GLM-4.5: GQA with q/k/v biases and per-head q/k norms; DeepSeek-style routed + shared experts."""
    out = _core(cfg, origin, tie_default=False)
    h = out["head_dim"].value
    moe_ff = _int(cfg, "moe_intermediate_size", origin)
    shared = int(_opt(cfg, "n_shared_experts", 0))
    out.update(
        {
            "d_ff": _f(moe_ff, "moe_intermediate_size (per routed expert)"),
            "gated_mlp": _gated("hidden_act", cfg),
            "num_experts": _f(_int(cfg, "n_routed_experts", origin), "n_routed_experts"),
            "experts_per_token": _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok"),
            "num_dense_layers": _f(int(_opt(cfg, "first_k_dense_replace", 0)), "first_k_dense_replace"),
            "dense_d_ff": _f(_int(cfg, "intermediate_size", origin), "intermediate_size (dense layers)"),
        }
    )
    if shared:
        out["num_shared_experts"] = _f(shared, "n_shared_experts")
        out["shared_expert_d_ff"] = _f(moe_ff, "moe_intermediate_size (each shared expert)")
    if cfg.get("attention_bias"):
        out["qkv_bias"] = Value(True, "attention_bias: q/k/v projections (o_proj has none)")
    if cfg.get("use_qk_norm"):
        out["extra_params_per_layer"] = Value(2 * h, f"use_qk_norm: q_norm and k_norm, 2 x head_dim ({h})")
    return out


def _minimax_m2(cfg: JSONObject, origin: str) -> Mapped:
    """MiniMax-M2: GQA, whole-projection q/k RMS norms, 256 routed experts with a routing bias, no shared one."""
    out = _core(cfg, origin, tie_default=False)
    layers = out["num_layers"].value
    types = cfg.get("attn_type_list")
    if types is not None and (len(types) != layers or any(t != 1 for t in types)):
        raise SpecError(
            f"{origin}: attn_type_list has entries other than 1 (full attention); "
            "MiniMax lightning (linear) attention layers are not mapped"
        )
    if int(_opt(cfg, "shared_intermediate_size", 0)):
        raise SpecError(f"{origin}: shared_intermediate_size > 0 (a gated shared expert) is not mapped for MiniMax")
    experts = _int(cfg, "num_local_experts", origin)
    out.update(
        {
            "d_ff": _f(_int(cfg, "intermediate_size", origin), "intermediate_size (per expert)"),
            "gated_mlp": _gated("hidden_act", cfg),
            "num_experts": _f(experts, "num_local_experts"),
            "experts_per_token": _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok"),
        }
    )
    extra, notes = 0, []
    if cfg.get("use_qk_norm"):
        norm_type = cfg.get("qk_norm_type", "per_layer")
        if norm_type != "per_layer":
            raise SpecError(f"{origin}: qk_norm_type {norm_type!r} is not mapped (only 'per_layer')")
        n, k, h = out["num_heads"].value, out["num_kv_heads"].value, out["head_dim"].value
        extra += (n + k) * h
        notes.append(f"qk_norm_type per_layer: q_norm (N·H = {n * h}) + k_norm (K·H = {k * h})")
    if cfg.get("use_routing_bias"):
        extra += experts
        notes.append(f"use_routing_bias: e_score_correction_bias ({experts})")
    if extra:
        out["extra_params_per_layer"] = Value(extra, "; ".join(notes))
    return out


_FALCON_KEYS = frozenset(
    {
        "hidden_size",
        "num_hidden_layers",
        "n_layer",
        "num_attention_heads",
        "n_head",
        "num_kv_heads",
        "n_head_kv",
        "new_decoder_architecture",
        "multi_query",
        "parallel_attn",
        "bias",
        "ffn_hidden_size",
        "num_ln_in_parallel_attn",
        "activation",
        "alibi",  # ALiBi instead of rotary: no position weights either way
        "apply_residual_connection_post_layernorm",  # where the residual is taken: no weights
    }
)
_BLOOM_KEYS = frozenset(
    {
        "hidden_size",
        "n_embed",
        "num_hidden_layers",
        "n_layer",
        "num_attention_heads",
        "n_head",
        "n_inner",
        # Megatron-DeepSpeed fusion/precision switches and ALiBi details: no weights, no KV change.
        "apply_residual_connection_post_layernorm",
        "attention_softmax_in_fp32",
        "masked_softmax_fusion",
        "bias_dropout_fusion",
        "slow_but_exact",
        "offset_alibi",
        "skip_bias_add",
        "skip_bias_add_qkv",
        "seq_length",
    }
)
_MOE_DS_KEYS = frozenset(
    {
        "moe_intermediate_size",
        "n_routed_experts",
        "n_shared_experts",
        "num_experts_per_tok",
        "first_k_dense_replace",
        "use_qk_norm",
    }
)
_MINIMAX_KEYS = frozenset(
    {
        "num_local_experts",
        "num_experts_per_tok",
        "use_qk_norm",
        "qk_norm_type",
        "attn_type_list",
        "shared_intermediate_size",
        "use_routing_bias",
        "rotary_dim",  # partial rotary: no weights
        "shared_moe_mode",  # gating of a shared expert, refused above when one exists
        "layernorm_full_attention_beta",
        "layernorm_linear_attention_beta",
        "layernorm_mlp_beta",  # residual scalars
        "use_mtp",
        "num_mtp_modules",
        "mtp_transformer_layers",  # MTP modules: not counted, as DeepSeek's
        "mlp_intermediate_size",  # no dense MLP in the decoder stack (every layer is MoE); 230 B matches without it
    }
)

MORE_FAMILIES: dict[str, Family] = {
    "gptj": Family(
        _gptj,
        frozenset(
            {"n_embd", "n_layer", "n_head", "n_inner", "n_positions", "rotary", "rotary_dim", "gradient_checkpointing"}
        ),
    ),
    "gpt_neox": Family(
        _gpt_neox,
        frozenset(
            {
                "hidden_size",
                "intermediate_size",
                "num_hidden_layers",
                "num_attention_heads",
                "attention_bias",
                "rotary_pct",
                "rotary_emb_base",
                "use_parallel_residual",
            }
        ),
    ),
    "bloom": Family(_bloom, _BLOOM_KEYS),
    "falcon": Family(_falcon, _FALCON_KEYS),
    "phi3": Family(_phi3, _LLAMA_KEYS | {"original_max_position_embeddings"}),
    "kimi_k2": Family(_deepseek, _DEEPSEEK_KEYS),
    "glm4_moe": Family(_glm4_moe, _LLAMA_KEYS | _MOE_DS_KEYS),
    "minimax_m2": Family(_minimax_m2, _LLAMA_KEYS | _MINIMAX_KEYS),
}
MORE_ARCHITECTURES = {
    "GPTJForCausalLM": "gptj",
    "GPTNeoXForCausalLM": "gpt_neox",
    "BloomForCausalLM": "bloom",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "Phi3ForCausalLM": "phi3",
    "Glm4MoeForCausalLM": "glm4_moe",
    "MiniMaxM2ForCausalLM": "minimax_m2",
}
