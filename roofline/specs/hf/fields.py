"""Building blocks of the config.json mappers: the noted Value, the Family record and the shared fields."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from roofline.core.errors import SpecError, listed
from roofline.core.types import JSONObject, JSONValue
from roofline.specs.hf.checks import as_int as _as_int
from roofline.specs.hf.checks import bad_key as _bad
from roofline.specs.hf.checks import flag_key as _flag
from roofline.specs.hf.checks import int_key as _int
from roofline.specs.hf.checks import note_text as _text
from roofline.specs.hf.checks import optional_int as _opt_int


@dataclass(frozen=True)
class Value:
    """One ModelSpec value and the note saying where it came from."""

    value: JSONValue
    note: str


Mapped = dict[str, Value]


def _opt(cfg: JSONObject, key: str, default: JSONValue) -> JSONValue:
    """``cfg[key]``, or ``default`` where the key is absent or null (types checked by check_config_types)."""
    value = cfg.get(key)
    return default if value is None else value


def _f(value: JSONValue, key: str) -> Value:
    return Value(value, f"config.json: {key}")


def _attention_fields(cfg: JSONObject, origin: str) -> Mapped:
    """Heads and head size: num_attention_heads, num_key_value_heads (default N), head_dim."""
    d = _int(cfg, "hidden_size", origin)
    n = _int(cfg, "num_attention_heads", origin)
    kv_key = "num_key_value_heads" if cfg.get("num_key_value_heads") is not None else None
    k = _as_int(cfg[kv_key], kv_key, origin) if kv_key else n
    if cfg.get("head_dim") is not None:
        head = Value(_as_int(cfg["head_dim"], "head_dim", origin), "config.json: head_dim")
    elif d % n:
        raise SpecError(
            f"{origin}: hidden_size {d} is not a multiple of num_attention_heads {n} and head_dim is not given"
        )
    else:
        head = Value(d // n, f"hidden_size / num_attention_heads = {d} / {n}")
    return {
        "num_heads": _f(n, "num_attention_heads"),
        "num_kv_heads": _f(k, "num_key_value_heads")
        if kv_key
        else Value(k, "no num_key_value_heads: multi-head attention (K = N)"),
        "head_dim": head,
    }


def _core(cfg: JSONObject, origin: str, tie_default: bool) -> Mapped:
    """L, D, V, tied embeddings and max positions, shared by the Llama-like families."""
    out: Mapped = {
        "num_layers": _f(_int(cfg, "num_hidden_layers", origin), "num_hidden_layers"),
        "d_model": _f(_int(cfg, "hidden_size", origin), "hidden_size"),
        "vocab_size": _f(_int(cfg, "vocab_size", origin), "vocab_size"),
    }
    out.update(_attention_fields(cfg, origin))
    tie = _flag(cfg, "tie_word_embeddings", origin)
    out["tie_embeddings"] = (
        _f(tie, "tie_word_embeddings")
        if tie is not None
        else Value(tie_default, f"tie_word_embeddings absent: this architecture's default ({tie_default})")
    )
    if cfg.get("max_position_embeddings") is not None:
        out["max_position_embeddings"] = _f(_int(cfg, "max_position_embeddings", origin), "max_position_embeddings")
    return out


def _gated(act_key: str, cfg: JSONObject) -> Value:
    act = cfg.get(act_key, "silu")
    return Value(True, f"gated MLP: gate_proj/up_proj/down_proj ({act_key} {_text(act)})")


def _local_layers(cfg: JSONObject, origin: str, rule: str) -> Mapped:
    """Sliding-window layers: from ``layer_types`` when present, else the family's rule."""
    window = cfg.get("sliding_window")
    layers = _int(cfg, "num_hidden_layers", origin)
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise _bad(origin, "layer_types", types, "a list of layer type names")
        unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
        if unknown:
            raise SpecError(
                f"{origin}: layer_types has unknown entries {listed(unknown, 4)}; "
                "understood: sliding_attention, full_attention"
            )
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
    return {
        "sliding_window": _f(_as_int(window, "sliding_window", origin), "sliding_window"),
        "num_local_layers": Value(local, note),
    }


def _bias_fields(cfg: JSONObject, origin: str) -> Mapped:
    """attention_bias: biases on q, k, v and o; mlp_bias: on the MLP projections."""
    out: Mapped = {}
    if _flag(cfg, "attention_bias", origin):
        out["qkv_bias"] = _f(True, "attention_bias")
        out["o_bias"] = _f(True, "attention_bias")
    if _flag(cfg, "mlp_bias", origin):
        out["mlp_bias"] = _f(True, "mlp_bias")
    return out


def _plain_mlp_fields(act: str) -> Mapped:
    return {
        "gated_mlp": Value(False, f"plain MLP fc1 -> {act} -> fc2"),
        "qkv_bias": Value(True, "biases on q/k/v"),
        "o_bias": Value(True, "bias on the output projection"),
        "mlp_bias": Value(True, "biases on fc1 and fc2"),
        "norm_bias": Value(True, "LayerNorm with weight and bias"),
    }


@dataclass(frozen=True)
class Family:
    """A supported architecture: its mapper and the keys it reads beyond the common ones."""

    mapper: Callable[[JSONObject, str], Mapped]
    keys: frozenset[str]
