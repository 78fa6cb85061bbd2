"""``config.json`` families with attention sinks, chunked attention, linear attention and state-space
layers: gpt-oss, Llama 4 (text), Qwen3-Next, Nemotron-H, Jamba and Granite-4.0-H.

Each mapper follows its family's transformers modelling code and writes the layer pattern
(``layer_types``: each layer's mixer; ``mlp_types``: dense, MoE or none) so memory and the step
model follow each layer kind.  Unknown keys stay errors (see :mod:`roofline.specs.hf.config`).
"""

from __future__ import annotations

from typing import Any

from roofline.core.errors import SpecError, shown
from roofline.specs.hf.checks import as_int as _as_int
from roofline.specs.hf.checks import bad_key, required
from roofline.specs.hf.checks import flag_key as _flag
from roofline.specs.hf.checks import int_key as _int
from roofline.specs.hf.checks import optional_int as _opt_int
from roofline.specs.hf.core_families import _LLAMA_KEYS
from roofline.specs.hf.fields import Family, Mapped, Value, _core, _f, _gated, _local_layers


def _no_window(cfg: dict[str, Any], origin: str) -> None:
    """These families define no sliding window: a set one is refused, not ignored."""
    if cfg.get("sliding_window") is not None:
        raise SpecError(f"{origin}: sliding_window {shown(cfg['sliding_window'])} is not mapped for this family")


def _pattern(types: list[str], mlps: list[str], note: str) -> Mapped:
    return {"layer_types": Value(types, note), "mlp_types": Value(mlps, note)}


def _index_list(cfg: dict[str, Any], key: str, origin: str, layers: int) -> list[int] | None:
    value = cfg.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise bad_key(origin, key, value, "a list of whole numbers")
    if any(not 0 <= v < layers for v in value):
        raise bad_key(origin, key, value, f"layer indices in [0, {layers})")
    return value


# --------------------------------------------------------------------------- gpt-oss


def _gpt_oss(cfg: dict[str, Any], origin: str) -> Mapped:
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


def _llama4(cfg: dict[str, Any], origin: str) -> Mapped:
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


def _qwen3_next(cfg: dict[str, Any], origin: str) -> Mapped:
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


def _mamba2(cfg: dict[str, Any], origin: str, keys: dict[str, tuple[str, ...]]) -> Mapped:
    """Mamba-2 mixer fields from the family's key names (first present wins)."""

    def pick(field: str, default: int | None = None, minimum: int = 1) -> tuple[int, str]:
        for key in keys[field]:
            if cfg.get(key) is not None:
                return _as_int(cfg[key], key, origin, minimum), key
        if default is None:
            raise SpecError(f"{origin}: config field {keys[field][0]!r} is missing (needed for the mamba layers)")
        return default, f"{keys[field][0]} absent: default {default}"

    heads, heads_key = pick("heads")
    head_dim, head_key = pick("head_dim")
    out: Mapped = {
        "mamba_num_heads": _f(heads, heads_key),
        "mamba_d_inner": Value(heads * head_dim, f"{heads_key} x {head_key} = {heads} x {head_dim}"),
        "mamba_state_size": _f(*pick("state")),
        "mamba_conv_kernel": _f(*pick("conv")),
        "mamba_n_groups": _f(*pick("groups", 1)),
    }
    for field, default in (("conv_bias", True), ("proj_bias", False)):
        key = next((k for k in keys[field] if cfg.get(k) is not None), None)
        value = _flag(cfg, key, origin) if key else default
        out[f"mamba_{field}"] = _f(value, key) if key else Value(default, f"{keys[field][0]} absent: {default}")
    return out


def _nemotron_h(cfg: dict[str, Any], origin: str) -> Mapped:
    """Nemotron-H: each block is one of Mamba-2 (M), attention (*) or a relu² MLP (-), with one norm."""
    _no_window(cfg, origin)
    out = _core(cfg, origin, tie_default=False)
    pattern = required(cfg, "hybrid_override_pattern", origin)
    layers = out["num_layers"].value
    kinds = {"M": ("mamba", "none"), "*": ("full_attention", "none"), "-": ("none", "dense")}
    if not isinstance(pattern, str) or len(pattern) != layers or set(pattern) - set(kinds):
        raise bad_key(
            origin,
            "hybrid_override_pattern",
            pattern,
            f"{layers} characters of M (Mamba-2), * (attention), - (MLP); MoE blocks (E) are not mapped",
        )
    if cfg.get("attention_head_dim") is not None:
        out["head_dim"] = _f(_as_int(cfg["attention_head_dim"], "attention_head_dim", origin), "attention_head_dim")
    if _flag(cfg, "attention_bias", origin) or _flag(cfg, "mlp_bias", origin):
        raise SpecError(f"{origin}: attention_bias / mlp_bias true is not mapped for Nemotron-H")
    act = cfg.get("mlp_hidden_act", "relu2")
    out.update(
        {
            "d_ff": _f(_int(cfg, "intermediate_size", origin), "intermediate_size"),
            "gated_mlp": Value(False, f"plain MLP up_proj -> {act} -> down_proj"),
            "norms_per_layer": Value(1, "Nemotron-H: one norm per block"),
            **_pattern([kinds[c][0] for c in pattern], [kinds[c][1] for c in pattern], "hybrid_override_pattern"),
            **_mamba2(
                cfg,
                origin,
                {
                    "heads": ("mamba_num_heads",),
                    "head_dim": ("mamba_head_dim",),
                    "state": ("ssm_state_size",),
                    "conv": ("conv_kernel", "mamba_d_conv"),
                    "groups": ("n_groups", "mamba_n_groups"),
                    "conv_bias": ("use_conv_bias", "mamba_conv_bias"),
                    "proj_bias": ("use_bias", "mamba_proj_bias"),
                },
            ),
        }
    )
    return out


def _granite_hybrid(cfg: dict[str, Any], origin: str) -> Mapped:
    """Granite-4.0-H: Mamba-2 and attention layers (layer_types), each with a shared gated MLP and,
    when num_local_experts > 0, routed experts (no router bias)."""
    _no_window(cfg, origin)
    out = _core(cfg, origin, tie_default=False)
    layers = out["num_layers"].value
    names = {"mamba": "mamba", "attention": "full_attention"}
    types = required(cfg, "layer_types", origin)
    if len(types) != layers or set(types) - set(names):
        raise bad_key(origin, "layer_types", types, f"{layers} entries of mamba / attention")
    norm = cfg.get("normalization_function", "rmsnorm")
    if norm != "rmsnorm":
        raise SpecError(f"{origin}: normalization_function {shown(norm)} is not mapped (only rmsnorm)")
    if _flag(cfg, "attention_bias", origin):
        raise SpecError(f"{origin}: attention_bias true is not mapped for Granite-4.0-H")
    experts = _opt_int(cfg, "num_local_experts", origin, 0)
    shared = _int(cfg, "shared_intermediate_size", origin)
    mixers = [names[t] for t in types]
    nope = cfg.get("position_embedding_type") == "nope"
    out.update(
        {
            "gated_mlp": _gated("hidden_act", cfg),
            **_pattern(mixers, ["moe" if experts > 1 else "dense"] * layers, "layer_types"),
            **_mamba2(
                cfg,
                origin,
                {
                    "heads": ("mamba_n_heads",),
                    "head_dim": ("mamba_d_head",),
                    "state": ("mamba_d_state",),
                    "conv": ("mamba_d_conv",),
                    "groups": ("mamba_n_groups",),
                    "conv_bias": ("mamba_conv_bias",),
                    "proj_bias": ("mamba_proj_bias",),
                },
            ),
        }
    )
    if nope:
        out["num_nope_layers"] = Value(mixers.count("full_attention"), "position_embedding_type nope")
    if experts > 1:
        out.update(
            {
                "d_ff": _f(_int(cfg, "intermediate_size", origin), "intermediate_size (per expert)"),
                "num_experts": _f(experts, "num_local_experts"),
                "experts_per_token": _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok"),
                "num_shared_experts": Value(1, "Granite-4.0-H: shared_mlp"),
                "shared_expert_d_ff": _f(shared, "shared_intermediate_size"),
            }
        )
    else:
        out["d_ff"] = _f(shared, "shared_intermediate_size (dense: the shared MLP only)")
    return out


def _jamba(cfg: dict[str, Any], origin: str) -> Mapped:
    """Jamba: Mamba-1 layers (with dt/B/C inner norms) and attention every attn_layer_period-th layer;
    MoE every expert_layer_period-th layer, dense gated MLP elsewhere."""
    _no_window(cfg, origin)
    out = _core(cfg, origin, tie_default=False)
    layers, d = out["num_layers"].value, out["d_model"].value
    period = _opt_int(cfg, "attn_layer_period", origin, 8, minimum=1)
    offset = _opt_int(cfg, "attn_layer_offset", origin, 4)
    e_period = _opt_int(cfg, "expert_layer_period", origin, 2, minimum=1)
    e_offset = _opt_int(cfg, "expert_layer_offset", origin, 1)
    experts = _opt_int(cfg, "num_experts", origin, 16)
    types = ["full_attention" if i % period == offset else "mamba" for i in range(layers)]
    mlps = ["moe" if (experts > 1 and i % e_period == e_offset) else "dense" for i in range(layers)]
    rank = cfg.get("mamba_dt_rank", "auto")
    dt_rank = -(-d // 16) if rank == "auto" else _as_int(rank, "mamba_dt_rank", origin)
    expand = _opt_int(cfg, "mamba_expand", origin, 2, minimum=1)
    ff = _int(cfg, "intermediate_size", origin)
    out.update(
        {
            "d_ff": _f(ff, "intermediate_size (experts and dense MLPs)"),
            "gated_mlp": _gated("hidden_act", cfg),
            **_pattern(
                types, mlps, f"attention where i % {period} == {offset}; MoE where i % {e_period} == {e_offset}"
            ),
            "mamba_d_inner": Value(expand * d, f"mamba_expand x hidden_size = {expand} x {d}"),
            "mamba_state_size": _f(_opt_int(cfg, "mamba_d_state", origin, 16, minimum=1), "mamba_d_state"),
            "mamba_conv_kernel": _f(_opt_int(cfg, "mamba_d_conv", origin, 4, minimum=1), "mamba_d_conv"),
            "mamba_dt_rank": Value(
                dt_rank, "mamba_dt_rank" if rank != "auto" else f"mamba_dt_rank auto: ceil(D/16) = {dt_rank}"
            ),
            "mamba_conv_bias": Value(_flag(cfg, "mamba_conv_bias", origin) is not False, "mamba_conv_bias"),
            "mamba_proj_bias": Value(bool(_flag(cfg, "mamba_proj_bias", origin)), "mamba_proj_bias"),
            "mamba_inner_norms": Value(True, "Jamba: dt_layernorm, b_layernorm, c_layernorm"),
        }
    )
    if "moe" in mlps:
        out["num_experts"] = _f(experts, "num_experts")
        out["experts_per_token"] = _f(_int(cfg, "num_experts_per_tok", origin), "num_experts_per_tok")
    return out


_MAMBA_SCALARS = frozenset(
    {  # dt initialisation/limits, kernels, chunking and residual switches: no weights
        "chunk_size",
        "mamba_chunk_size",
        "time_step_min",
        "time_step_max",
        "time_step_floor",
        "time_step_limit",
        "mamba_dt_min",
        "mamba_dt_max",
        "mamba_dt_limit",
        "mamba_dt_init_floor",
        "mamba_hidden_act",
        "rescale_prenorm_residual",
        "residual_in_fp32",
        "use_mamba_kernels",
        "num_logits_to_keep",
        "mamba_inner_layernorms",
        "calc_logits_for_entire_prompt",
        "time_step_rank",
    }
)
_GRANITE_SCALARS = frozenset(
    {  # muP multipliers and scalings: no weights
        "embedding_multiplier",
        "attention_multiplier",
        "residual_multiplier",
        "logits_scaling",
        "position_embedding_type",
        "normalization_function",
        "init_method",
    }
)

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
    "nemotron_h": Family(
        _nemotron_h,
        _LLAMA_KEYS
        | _MAMBA_SCALARS
        | {
            "hybrid_override_pattern",
            "attention_head_dim",
            "mlp_hidden_act",
            "mamba_num_heads",
            "mamba_head_dim",
            "ssm_state_size",
            "n_groups",
            "mamba_n_groups",
            "conv_kernel",
            "mamba_d_conv",
            "expand",
            "mamba_expand",
            "use_conv_bias",
            "mamba_conv_bias",
            "use_bias",
            "mamba_proj_bias",
        },
    ),
    "granitemoehybrid": Family(
        _granite_hybrid,
        _LLAMA_KEYS
        | _MAMBA_SCALARS
        | _GRANITE_SCALARS
        | {
            "mamba_n_heads",
            "mamba_d_head",
            "mamba_d_state",
            "mamba_d_conv",
            "mamba_expand",
            "mamba_n_groups",
            "mamba_conv_bias",
            "mamba_proj_bias",
            "num_local_experts",
            "num_experts_per_tok",
            "shared_intermediate_size",
        },
    ),
    "jamba": Family(
        _jamba,
        _LLAMA_KEYS
        | _MAMBA_SCALARS
        | {
            "attn_layer_period",
            "attn_layer_offset",
            "expert_layer_period",
            "expert_layer_offset",
            "num_experts",
            "num_experts_per_tok",
            "mamba_d_state",
            "mamba_d_conv",
            "mamba_expand",
            "mamba_dt_rank",
            "mamba_conv_bias",
            "mamba_proj_bias",
        },
    ),
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
