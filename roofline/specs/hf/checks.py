"""Type checks of Hugging Face ``config.json`` keys: one line naming the key, the value and what is allowed.

Used by :mod:`roofline.specs.hf.config`: whole numbers are never truncated (4096.7 is refused), a
true/false key is never guessed from text ("no") or a number, and lists and mappings must
have the shape the mappers read.  Limits: :data:`roofline.core.checks.MAX_COUNT`.
"""

from __future__ import annotations

import math

from roofline.core.checks import MAX_COUNT
from roofline.core.errors import SpecError, shown
from roofline.core.types import JSONObject, JSONValue


def required(cfg: JSONObject, key: str, origin: str, *aliases: str) -> JSONValue:
    for k in (key, *aliases):
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    raise SpecError(f"{origin}: config field {key!r} is missing (needed for the model shape)")


def bad_key(origin: str, key: str, value: object, allowed: str) -> SpecError:
    return SpecError(f"{origin}: config field {key!r} must be {allowed} (got {shown(value)})")


def as_int(value: object, key: str, origin: str, minimum: int = 1) -> int:
    """A whole number in [minimum, MAX_COUNT]: no booleans, fractions (not truncated), text or lists."""
    whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not whole or not minimum <= value <= MAX_COUNT:
        raise bad_key(origin, key, value, f"a whole number in [{minimum}, {MAX_COUNT}]")
    return int(value)


def int_key(cfg: JSONObject, key: str, origin: str, minimum: int = 1) -> int:
    """A required whole-number key."""
    return as_int(required(cfg, key, origin), key, origin, minimum)


def optional_int(cfg: JSONObject, key: str, origin: str, default: int, minimum: int = 0) -> int:
    """An optional whole-number key (``default`` when absent or null)."""
    value = cfg.get(key)
    return default if value is None else as_int(value, key, origin, minimum)


def flag_key(cfg: JSONObject, key: str, origin: str) -> bool | None:
    """An optional true/false key (None when absent); "no", 0 or a list is refused, not guessed."""
    value = cfg.get(key)
    if value is not None and not isinstance(value, bool):
        raise bad_key(origin, key, value, "true or false")
    return value


def note_text(value: object) -> str:
    """A config value shown inside a note (an activation name), shortened."""
    return value if isinstance(value, str) and len(value) <= 40 else shown(value)


#: The type of every config key the mappers read: ("int", minimum), ("flag",), ("text",),
#: ("names",) a list of text, ("ints",) a list of whole numbers, ("mapping",).
KEY_KINDS: dict[str, tuple[str | int, ...]] = {
    **{
        key: ("int", 1)
        for key in (
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "vocab_size",
            "max_position_embeddings",
            "sliding_window",
            "sliding_window_pattern",
            "moe_intermediate_size",
            "num_experts",
            "num_experts_per_tok",
            "num_local_experts",
            "n_routed_experts",
            "kv_lora_rank",
            "qk_nope_head_dim",
            "v_head_dim",
            "ffn_dim",
            "word_embed_proj_dim",
            "n_embd",
            "n_layer",
            "n_head",
            "n_positions",
            "n_inner",
            "decoder_sparse_step",
            "moe_layer_freq",
        )
    },
    **{
        key: ("int", 0)
        for key in (
            "max_window_layers",
            "shared_expert_intermediate_size",
            "n_shared_experts",
            "first_k_dense_replace",
            "q_lora_rank",
            "qk_rope_head_dim",
        )
    },
    **{
        key: ("flag",)
        for key in (
            "tie_word_embeddings",
            "attention_bias",
            "mlp_bias",
            "use_sliding_window",
            "do_layer_norm_before",
            "enable_bias",
            "layer_norm_elementwise_affine",
        )
    },
    **{key: ("text",) for key in ("model_type", "hidden_act", "hidden_activation", "activation_function")},
    "architectures": ("names",),
    "layer_types": ("names",),
    "mlp_only_layers": ("ints",),
    "text_config": ("mapping",),
}


def check_config_types(cfg: JSONObject, origin: str) -> None:
    """Every key of :data:`KEY_KINDS` present (and not null) has its type: one line naming it."""
    for key, kind in KEY_KINDS.items():
        value = cfg.get(key)
        if value is None:
            continue
        if kind[0] == "int":
            as_int(value, key, origin, kind[1])
        elif kind[0] == "flag" and not isinstance(value, bool):
            raise bad_key(origin, key, value, "true or false")
        elif kind[0] == "text" and not isinstance(value, str):
            raise bad_key(origin, key, value, "a name")
        elif kind[0] == "names" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise bad_key(origin, key, value, 'a list of names, e.g. ["LlamaForCausalLM"]')
        elif kind[0] == "ints" and not (
            isinstance(value, list)
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT for v in value)
        ):
            raise bad_key(origin, key, value, "a list of layer indices")
        elif kind[0] == "mapping" and not isinstance(value, dict):
            raise bad_key(origin, key, value, "a mapping of the language model's keys")
    check_rotary(cfg, origin)


def _number(value: JSONValue) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_rotary(cfg: JSONObject, origin: str) -> None:
    """The rotary part of a head fits in the head: rotary_dim <= head_dim, and partial_rotary_factor /
    rotary_pct are fractions in (0, 1] (their weights are none, but a larger rotary part is impossible)."""
    for key in ("partial_rotary_factor", "rotary_pct"):
        value = cfg.get(key)
        if value is not None and not (_number(value) and 0 < value <= 1):
            raise bad_key(origin, key, value, "a fraction of the head in (0, 1]")
    rotary = cfg.get("rotary_dim")
    if rotary is None:
        return
    rotary = as_int(rotary, "rotary_dim", origin, 0)
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    hidden = cfg.get("hidden_size", cfg.get("n_embd"))
    head = cfg.get("head_dim")
    if (
        head is None
        and isinstance(heads, int)
        and isinstance(hidden, int)
        and heads > 0
        and not isinstance(heads, bool)
    ):
        head = hidden // heads
    if isinstance(head, int) and not isinstance(head, bool) and rotary > head:
        raise bad_key(origin, "rotary_dim", rotary, f"at most the head dimension ({head})")
