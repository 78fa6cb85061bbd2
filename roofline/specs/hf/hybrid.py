"""``config.json`` families with attention sinks, chunked attention, linear attention and state-space
layers: gpt-oss, Llama 4 (text), Qwen3-Next, Nemotron-H, Jamba and Granite-4.0-H
(the state-space ones in :mod:`roofline.specs.hf.ssm`).

Each mapper follows its family's transformers modelling code and writes the layer pattern
(``layer_types``: each layer's mixer; ``mlp_types``: dense, MoE or none) so memory and the step
model follow each layer kind.  Unknown keys stay errors (see :mod:`roofline.specs.hf.config`).
"""

from __future__ import annotations

from roofline.core.errors import SpecError, shown
from roofline.core.types import JSONObject
from roofline.specs.hf.checks import as_int as _as_int
from roofline.specs.hf.checks import bad_key
from roofline.specs.hf.checks import flag_key as _flag
from roofline.specs.hf.checks import int_key as _int
from roofline.specs.hf.checks import optional_int as _opt_int
from roofline.specs.hf.core_families import _LLAMA_KEYS
from roofline.specs.hf.fields import Family, Mapped, Value, _core, _f, _gated, _local_layers
from roofline.specs.hf.layers import _index_list, _no_window, _pattern
from roofline.specs.hf.ssm import SSM_FAMILIES


def _gpt_oss(cfg: JSONObject, origin: str) -> Mapped:
    """gpt-oss: GQA with biases and a learned sink per head, alternating 128-token windows, MoE with
    biased experts (gate_up_proj_bias, down_proj_bias) and a biased router, every layer."""
    out = _core(cfg, origin, tie_default=False)
    experts = _int(cfg, "num_local_experts", origin)
    k = _int(cfg, "num_experts_per_tok", origin)
    if cfg.get("experts_per_token") is not None and _as_int(cfg["experts_per_token"], "experts_per_token", origin) != k:
        raise SpecError(f"{origin}: experts_per_token {cfg['experts_per_token']} differs from num_experts_per_tok {k}")
    out.update(
        {
            "d_ff": _f(_int(cfg, "intermediate_size", origin), "intermediate_size (per expert)"),
            "gated_mlp": _gated("hidden_act", cfg),
            "num_experts": _f(experts, "num_local_experts"),
            "experts_per_token": _f(k, "num_experts_per_tok"),
            "mlp_bias": Value(True, "gpt-oss experts: gate_up_proj_bias (2F) and down_proj_bias (D)"),
            "attention_sinks": Value(True, "gpt-oss: self_attn.sinks, one learned logit per head"),
            "extra_params_per_layer": Value(experts, f"gpt-oss: router bias ({experts})"),
        }
    )
    if _flag(cfg, "attention_bias", origin) is not False:
        out["qkv_bias"] = Value(True, "attention_bias: q/k/v biases")
        out["o_bias"] = Value(True, "attention_bias: o_proj bias")
    local = _local_layers(cfg, origin, "alternate")
    out.update(local)
    if cfg.get("layer_types") is not None:
        out["layer_types"] = _f(list(cfg["layer_types"]), "layer_types")
    return out


# --------------------------------------------------------------------------- Llama 4


def _llama4(cfg: JSONObject, origin: str) -> Mapped:
    """Llama 4 text: RoPE layers use chunked attention (attention_chunk_size), every no_rope_layer_interval-th
    layer is global NoPE attention; MoE (routed + one shared expert) on moe_layers, dense MLP elsewhere."""
    _no_window(cfg, origin)
    out = _core(cfg, origin, tie_default=False)
    layers = out["num_layers"].value
    rope = _index_list(cfg, "no_rope_layers", origin, 2)  # entries are 0/1 flags
    interval = _opt_int(cfg, "no_rope_layer_interval", origin, 4, minimum=1)
    if not rope:
        rope, rope_note = (
            [int((i + 1) % interval != 0) for i in range(layers)],
            f"no_rope_layers absent: every {interval}th layer is NoPE (transformers default)",
        )
    elif len(rope) != layers:
        raise bad_key(origin, "no_rope_layers", rope, f"{layers} flags (one per layer)")
    else:
        rope_note = "no_rope_layers (1 = RoPE, chunked; 0 = NoPE, global)"
    chunk = cfg.get("attention_chunk_size")
    types = [("chunked_attention" if (r and chunk is not None) else "full_attention") for r in rope]
    listed = cfg.get("layer_types")
    if listed is not None and listed != types:
        raise SpecError(f"{origin}: layer_types {shown(listed)} disagrees with no_rope_layers/attention_chunk_size")
    step = _opt_int(cfg, "interleave_moe_layer_step", origin, 1, minimum=1)
    moe = _index_list(cfg, "moe_layers", origin, layers)
    moe_set = set(moe) if moe is not None else set(range(step - 1, layers, step))
    mlps = ["moe" if i in moe_set else "dense" for i in range(layers)]
    experts = _int(cfg, "num_local_experts", origin)
    ff = _int(cfg, "intermediate_size", origin)
    out.update(
        {
            "d_ff": _f(ff, "intermediate_size (per expert)"),
            "gated_mlp": _gated("hidden_act", cfg),
            "num_experts": _f(experts, "num_local_experts"),
            "experts_per_token": _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok"),
            "num_shared_experts": Value(1, "Llama 4: one shared_expert per MoE layer"),
            "shared_expert_d_ff": _f(ff, "intermediate_size (shared expert)"),
            "num_nope_layers": Value(rope.count(0), rope_note),
            **_pattern(
                types, mlps, f"{rope_note}; MoE on layers {'moe_layers' if moe is not None else f'every {step}'}"
            ),
        }
    )
    if "dense" in mlps:
        out["dense_d_ff"] = _f(_int(cfg, "intermediate_size_mlp", origin), "intermediate_size_mlp (dense layers)")
    if chunk is not None and "chunked_attention" in types:
        out["attention_chunk_size"] = _f(_as_int(chunk, "attention_chunk_size", origin), "attention_chunk_size")
    if _flag(cfg, "attention_bias", origin):
        raise SpecError(f"{origin}: attention_bias true is not mapped for Llama 4")
    return out


# --------------------------------------------------------------------------- Qwen3-Next


def _qwen3_next(cfg: JSONObject, origin: str) -> Mapped:
    """Qwen3-Next: Gated DeltaNet layers with every full_attention_interval-th a gated full attention
    (q_proj emits a gate; q/k norms); every layer MoE with a gated shared expert."""
    _no_window(cfg, origin)
    out = _core(cfg, origin, tie_default=False)
    layers, d, h = out["num_layers"].value, out["d_model"].value, out["head_dim"].value
    interval = _opt_int(cfg, "full_attention_interval", origin, 4, minimum=1)
    types = cfg.get("layer_types") or [
        "full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)
    ]
    if len(types) != layers or set(types) - {"full_attention", "linear_attention"}:
        raise bad_key(origin, "layer_types", types, f"{layers} entries of full_attention / linear_attention")
    step = _opt_int(cfg, "decoder_sparse_step", origin, 1, minimum=1)
    if step != 1 or cfg.get("mlp_only_layers"):
        raise SpecError(
            f"{origin}: decoder_sparse_step {step} / mlp_only_layers {shown(cfg.get('mlp_only_layers'))} "
            "(dense layers in Qwen3-Next) is not mapped; only every-layer MoE is"
        )
    if _flag(cfg, "attention_bias", origin):
        raise SpecError(f"{origin}: attention_bias true is not mapped for Qwen3-Next")
    out.update(
        {
            "d_ff": _f(_int(cfg, "moe_intermediate_size", origin), "moe_intermediate_size (per expert)"),
            "gated_mlp": _gated("hidden_act", cfg),
            "num_experts": _f(_int(cfg, "num_experts", origin), "num_experts"),
            "experts_per_token": _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok"),
            "num_shared_experts": Value(1, "Qwen3-Next: one shared_expert"),
            "shared_expert_d_ff": _f(
                _int(cfg, "shared_expert_intermediate_size", origin), "shared_expert_intermediate_size"
            ),
            "extra_params_per_layer": Value(d, f"shared_expert_gate, D ({d}) per layer"),
            "attention_output_gate": Value(True, "Qwen3-Next: q_proj emits query and gate (2·N·H)"),
            "attention_extra_params": Value(2 * h, f"q_norm and k_norm, 2 x head_dim ({h})"),
            "linear_num_key_heads": _f(_int(cfg, "linear_num_key_heads", origin), "linear_num_key_heads"),
            "linear_num_value_heads": _f(_int(cfg, "linear_num_value_heads", origin), "linear_num_value_heads"),
            "linear_key_head_dim": _f(_int(cfg, "linear_key_head_dim", origin), "linear_key_head_dim"),
            "linear_value_head_dim": _f(_int(cfg, "linear_value_head_dim", origin), "linear_value_head_dim"),
            "linear_conv_kernel": _f(_int(cfg, "linear_conv_kernel_dim", origin), "linear_conv_kernel_dim"),
            **_pattern(
                list(types),
                ["moe"] * layers,
                "layer_types" if cfg.get("layer_types") else f"every {interval}th layer full attention",
            ),
        }
    )
    return out


# --------------------------------------------------------------------------- Mamba hybrids


HYBRID_FAMILIES: dict[str, Family] = {
    "gpt_oss": Family(
        _gpt_oss,
        _LLAMA_KEYS
        | {"num_local_experts", "num_experts_per_tok", "experts_per_token", "swiglu_limit", "initial_context_length"},
    ),
    "llama4_text": Family(
        _llama4,
        _LLAMA_KEYS
        | {
            "attention_chunk_size",
            "no_rope_layers",
            "no_rope_layer_interval",
            "interleave_moe_layer_step",
            "moe_layers",
            "intermediate_size_mlp",
            "num_local_experts",
            "num_experts_per_tok",
            "use_qk_norm",  # an L2 norm without weights
            "attn_scale",
            "attn_temperature_tuning",
            "floor_scale",
            "for_llm_compressor",
        },
    ),  # query scaling
    "qwen3_next": Family(
        _qwen3_next,
        _LLAMA_KEYS
        | {
            "full_attention_interval",
            "linear_num_key_heads",
            "linear_num_value_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel_dim",
            "decoder_sparse_step",
            "mlp_only_layers",
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
            "num_experts",
            "num_experts_per_tok",
        },
    ),
    **SSM_FAMILIES,
}
HYBRID_ARCHITECTURES = {
    "GptOssForCausalLM": "gpt_oss",
    "Llama4ForConditionalGeneration": "llama4_text",
    "Llama4ForCausalLM": "llama4_text",
    "Qwen3NextForCausalLM": "qwen3_next",
    "NemotronHForCausalLM": "nemotron_h",
    "GraniteMoeHybridForCausalLM": "granitemoehybrid",
    "JambaForCausalLM": "jamba",
}
