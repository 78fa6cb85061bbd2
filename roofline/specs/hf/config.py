"""Hugging Face ``config.json`` -> a model mapping in the book's notation (L, D, F, N, K, H, V).

Reads only the keys each supported architecture defines and refuses what it does not
understand: an unknown architecture, or a key that is neither mapped nor on the list of
keys known not to change the parameter count or the KV cache, is a
:class:`~roofline.core.errors.SpecError` naming it.  Nothing is guessed silently: every value
in the result carries a note saying which config key (or which architecture rule) gave it.

Mappers live by concern: :mod:`roofline.specs.hf.fields` (the Value and Family records, shared fields),
:mod:`roofline.specs.hf.core_families`, :mod:`roofline.specs.hf.families` and
:mod:`roofline.specs.hf.hybrid` (the families),
:mod:`roofline.specs.hf.quant` (checkpoint precision); this module holds the refusal rules and the entry points.
"""

from __future__ import annotations

from roofline.core.errors import SpecError, listed, shown
from roofline.core.types import JSONObject
from roofline.specs.hf.checks import bad_key as _bad
from roofline.specs.hf.checks import check_config_types
from roofline.specs.hf.core_families import ARCHITECTURES, FAMILIES
from roofline.specs.hf.families import MORE_ARCHITECTURES, MORE_FAMILIES
from roofline.specs.hf.fields import Family, Mapped, Value
from roofline.specs.hf.hybrid import HYBRID_ARCHITECTURES, HYBRID_FAMILIES
from roofline.specs.hf.quant import checkpoint_precision

__all__ = [
    "ARCHITECTURES",
    "CLASS_DEFAULTS",
    "FAMILIES",
    "IGNORED_KEYS",
    "IGNORED_SUFFIXES",
    "SHARED_KEYS",
    "Family",
    "Mapped",
    "Value",
    "all_families",
    "map_hf_config",
    "model_dict_from_hf_config",
    "model_dict_with_notes",
]

#: Keys the shared mapping code reads for every family (positions, windows, activations, tying).
SHARED_KEYS = frozenset(
    {
        "vocab_size",
        "head_dim",
        "tie_word_embeddings",
        "max_position_embeddings",
        "sliding_window",
        "sliding_window_pattern",
        "layer_types",
        "use_sliding_window",
        "max_window_layers",
        "hidden_act",
        "hidden_activation",
        "activation_function",
    }
)
#: Keys of any config that do not change the parameter count or the KV-cache size.
IGNORED_KEYS = frozenset(
    {
        "architectures",
        "model_type",
        "transformers_version",
        "torch_dtype",
        "dtype",
        "use_cache",
        "initializer_range",
        "init_std",
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "rope_interleave",
        "rope_local_base_freq",
        "partial_rotary_factor",
        "pretraining_tp",
        "rms_norm_eps",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "norm_eps",
        "attention_dropout",
        "hidden_dropout",
        "dropout",
        "activation_dropout",
        "resid_pdrop",
        "embd_pdrop",
        "attn_pdrop",
        "summary_first_dropout",
        "layerdrop",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "decoder_start_token_id",
        "sep_token_id",
        "unk_token_id",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "is_decoder",
        "is_encoder_decoder",
        "quantization_config",
        "attn_logit_softcapping",
        "final_logit_softcapping",
        "query_pre_attn_scalar",
        "router_aux_loss_coef",
        "output_router_logits",
        "router_jitter_noise",
        "norm_topk_prob",
        "aux_loss_alpha",
        "seq_aux",
        "routed_scaling_factor",
        "scoring_func",
        "topk_method",
        "n_group",
        "topk_group",
        "ep_size",
        "router_z_loss_coef",
        "use_qk_norm_in_gating",
        "attn_implementation",
        "_attn_implementation",
        "tokenizer_class",
        "prefix",
        "task_specific_params",
        "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx",
        "reorder_and_upcast_attn",
        "summary_type",
        "summary_use_proj",
        "summary_activation",
        "summary_proj_to_labels",
        "init_range",
        "cache_implementation",
        "use_bidirectional_attention",
        "n_ctx",  # GPT-2: a duplicate of n_positions
        "use_mrope",  # rotary layout only
        "num_nextn_predict_layers",  # DeepSeek's MTP module: not counted, as in its 671 B
        "_remove_final_layer_norm",
        "use_return_dict",
        "mup_width_multiplier",
        "finetuning_task",
        "id2label",
        "label2id",
        "problem_type",
        "chunk_size_feed_forward",
        "tf_legacy_loss",
        "pruned_heads",
        "torchscript",
        "use_bfloat16",
        "tie_encoder_decoder",
        "add_cross_attention",
        "cross_attention_hidden_size",
        "num_beams",
        "max_length",
        "min_length",
        "do_sample",
        "temperature",
        "top_k",
        "top_p",
        "repetition_penalty",
        "length_penalty",
        "bad_words_ids",
        "no_repeat_ngram_size",
        "num_return_sequences",
        "early_stopping",
        "diversity_penalty",
        "num_beam_groups",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "remove_invalid_values",
        "exponential_decay_length_penalty",
        "suppress_tokens",
        "begin_suppress_tokens",
        "typical_p",
        "encoder_no_repeat_ngram_size",
        "return_dict_in_generate",
        "output_scores",
        "chunk_size",
        "image_token_index",
        "boi_token_index",
        "eoi_token_index",
        "mm_tokens_per_image",
        "auto_map",
        "sliding_window_size",  # Gemma 2: a duplicate of sliding_window
    }
)
#: Key prefixes that never change the shape (private keys, token ids, dropouts).
IGNORED_SUFFIXES = ("_token_id", "_dropout", "_pdrop")


def all_families() -> tuple[dict[str, Family], dict[str, str]]:
    """Every mapped family and architecture: :mod:`roofline.specs.hf.core_families`, :mod:`roofline.specs.hf.families`
    and :mod:`roofline.specs.hf.hybrid`."""
    return (
        {**FAMILIES, **MORE_FAMILIES, **HYBRID_FAMILIES},
        {**ARCHITECTURES, **MORE_ARCHITECTURES, **HYBRID_ARCHITECTURES},
    )


def _family_of(cfg: JSONObject, origin: str) -> tuple[str, str]:
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
        f"{', '.join(sorted(architectures))}"
    )


def _unmapped(cfg: JSONObject, family: Family) -> list[str]:
    return sorted(
        k
        for k in cfg
        if k not in family.keys
        and k not in SHARED_KEYS
        and k not in IGNORED_KEYS
        and not k.startswith("_")
        and not k.endswith(IGNORED_SUFFIXES)
    )


def _text_config(cfg: JSONObject, origin: str) -> tuple[JSONObject, str]:
    """Multimodal configs (Gemma 3 4B+) nest the language model in ``text_config``."""
    if "text_config" not in cfg:
        return cfg, ""
    if not isinstance(cfg["text_config"], dict):
        raise _bad(origin, "text_config", cfg["text_config"], "a mapping of the language model's keys")
    extra = sorted(
        set(cfg)
        - {
            "text_config",
            "vision_config",
            "architectures",
            "model_type",
            "transformers_version",
            "torch_dtype",
            "dtype",
            "initializer_range",
        }
        - IGNORED_KEYS
        - SHARED_KEYS
    )
    if extra:
        raise SpecError(f"{origin}: unmapped fields next to text_config: {listed(extra)}")
    text = dict(cfg["text_config"])
    text.setdefault("architectures", cfg.get("architectures"))
    text.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings", True))
    return text, "; language model only: the vision tower is not counted"


#: Defaults a family's transformers config class fills in when a (nested) config omits a key;
#: Gemma 3's multimodal checkpoints write only the text_config keys that differ from these.
CLASS_DEFAULTS: dict[str, tuple[str, JSONObject]] = {
    "gemma3_text": (
        "transformers Gemma3TextConfig default",
        {
            "vocab_size": 262208,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "sliding_window": 4096,
            "sliding_window_pattern": 6,
            "max_position_embeddings": 131072,
        },
    ),
}


def map_hf_config(config: JSONObject, origin: str = "config.json") -> tuple[str, Mapped, str]:
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
            "(roofline cannot tell whether they change the parameter count or KV cache)"
        )
    label, defaults = CLASS_DEFAULTS.get(family_name, ("", {}))
    filled = {k: v for k, v in defaults.items() if cfg.get(k) is None}
    fields = family.mapper({**cfg, **filled}, origin)
    for key, value in fields.items():
        used = value.note.removeprefix("config.json: ").split(" ")[0]
        if used in filled:
            fields[key] = Value(value.value, f"{label}: {used} = {filled[used]}")
    quant = config.get("quantization_config", cfg.get("quantization_config"))
    dtype = config.get("torch_dtype", config.get("dtype", cfg.get("torch_dtype")))
    precision = checkpoint_precision(quant, dtype, origin)
    if precision is not None:
        fields["precision"] = precision
    return arch, fields, nested_note


def model_dict_with_notes(
    config: JSONObject, name: str, origin: str = "config.json"
) -> tuple[JSONObject, dict[str, str]]:
    """The ModelSpec mapping of a config.json and, per key, the note naming its source."""
    arch, fields, remark = map_hf_config(config, origin)
    data: JSONObject = {"name": name, "source": f"HF config.json at {origin} ({arch}{remark})"}
    notes = {"name": "the name given, or the config's folder", "source": "sources summary"}
    for key, field in fields.items():
        data[key] = field.value
        config_key = field.note.removeprefix("config.json: ")
        notes[key] = f"{origin}: {config_key}" if config_key != field.note else f"{arch} rule: {field.note}"
    return data, notes


def model_dict_from_hf_config(config: JSONObject, name: str, origin: str = "config.json") -> JSONObject:
    """The ModelSpec mapping of a Hugging Face config.json (validated by specs.model_from_dict)."""
    return model_dict_with_notes(config, name, origin)[0]
