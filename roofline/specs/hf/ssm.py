"""``config.json`` families with state-space (Mamba) layers: Nemotron-H (Mamba-2), Granite-4.0-H
(Mamba-2 + MoE) and Jamba (Mamba-1 + attention + MoE).

Each mapper follows its family's transformers modelling code and writes the layer pattern; the
recurrent state's fields (``mamba_*``) size the constant per-sequence cache.  Registered through
:data:`roofline.specs.hf.hybrid.HYBRID_FAMILIES`.
"""

from __future__ import annotations

from roofline.core.errors import SpecError, shown
from roofline.core.types import JSONObject
from roofline.specs.hf.checks import as_int as _as_int
from roofline.specs.hf.checks import bad_key, required
from roofline.specs.hf.checks import flag_key as _flag
from roofline.specs.hf.checks import int_key as _int
from roofline.specs.hf.checks import optional_int as _opt_int
from roofline.specs.hf.core_families import _LLAMA_KEYS
from roofline.specs.hf.fields import Family, Mapped, Value, _core, _f, _gated
from roofline.specs.hf.layers import _no_window, _pattern


def _mamba2(cfg: JSONObject, origin: str, keys: dict[str, tuple[str, ...]]) -> Mapped:
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


def _nemotron_h(cfg: JSONObject, origin: str) -> Mapped:
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


def _granite_hybrid(cfg: JSONObject, origin: str) -> Mapped:
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


def _jamba(cfg: JSONObject, origin: str) -> Mapped:
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

SSM_FAMILIES: dict[str, Family] = {
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
