"""A checkpoint's weight precision from ``config.json``'s ``quantization_config``.

Understood: ``mxfp4`` (transformers' MXFP4: the MoE experts, as gpt-oss ships them), ``fp8``
(block-scaled with ``weight_block_size`` [128, 128], e.g. DeepSeek-V3; per-tensor without it) and
``modelopt`` (NVFP4 with 16-element groups, or FP8).  Quantized formats apply to the linear
layers (attention, MLP, experts); embeddings and the LM head keep the checkpoint's ``torch_dtype``
unless named otherwise; ``modules_to_not_convert`` / ``ignored_layers`` / ``exclude_modules``
that name a whole component (``model.layers.*.self_attn``, ``mlp``, ``experts``) keep it too.
Anything else is an error naming the key.
"""

from __future__ import annotations

import re

from roofline.core.errors import SpecError, shown
from roofline.core.types import JSONObject, JSONValue
from roofline.specs.hf.fields import Value

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
#: Module names whose exclusion keeps a whole component in the default dtype.
_COMPONENT_MODULES = {
    "self_attn": "attention",
    "attn": "attention",
    "mixer": "attention",
    "linear_attn": "attention",
    "mlp": "mlp",
    "experts": "experts",
    "shared_expert": "mlp",
    "shared_experts": "mlp",
}
UNDERSTOOD = "mxfp4, fp8 (weight_block_size [128, 128] or per-tensor), modelopt (NVFP4 or FP8)"


def _excluded(quant: JSONObject, origin: str) -> set[str]:
    """Components a not-converted list names as a whole (any layer: no index, or '*')."""
    names: list[JSONValue] = []
    for key in ("modules_to_not_convert", "ignored_layers", "exclude_modules", "ignore"):
        value = quant.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SpecError(f"{origin}: quantization_config.{key} must be a list of module names (got {shown(value)})")
        names.extend(value)
    out = set()
    for name in names:
        if re.search(r"\.\d+\.", f".{name}."):
            continue  # one layer's module: priced with its component
        last = name.rstrip("*.").split(".")[-1]
        if last in _COMPONENT_MODULES:
            out.add(_COMPONENT_MODULES[last])
    return out


def _linear(dtype: str, excluded: set[str]) -> dict[str, str]:
    return {c: dtype for c in ("attention", "mlp", "experts") if c not in excluded}


def checkpoint_precision(quant: JSONValue, torch_dtype: JSONValue, origin: str) -> Value | None:
    """The ``precision`` field ({default, component: dtype}) of a quantized checkpoint; None if unquantized."""
    if quant is None:
        return None
    if not isinstance(quant, dict):
        raise SpecError(f"{origin}: quantization_config must be a mapping (got {shown(quant)})")
    default = _TORCH_DTYPES.get(torch_dtype, "bf16") if isinstance(torch_dtype, str) else "bf16"
    method = quant.get("quant_method")
    excluded = _excluded(quant, origin)
    kept = f"; kept in {default}: {', '.join(sorted(excluded))}" if excluded else ""
    if method == "mxfp4":
        spec = {"experts": "mxfp4"} if "experts" not in excluded else {}
        note = "quantization_config mxfp4: MoE experts in MXFP4 (32-element blocks, e8m0 scales)"
    elif method == "fp8":
        block = quant.get("weight_block_size")
        if block is None:
            dtype, what = "fp8", "per-tensor fp8"
        elif block == [128, 128]:
            dtype, what = "fp8_block", "fp8 with one fp32 scale per 128x128 block"
        else:
            raise SpecError(
                f"{origin}: quantization_config.weight_block_size {shown(block)} is not mapped (only [128, 128])"
            )
        spec = _linear(dtype, excluded)
        note = f"quantization_config fp8: linear layers in {what}"
    elif method == "modelopt":
        algo = quant.get("quant_algo")
        if algo == "NVFP4":
            group = quant.get("group_size", 16)
            if group != 16:
                raise SpecError(f"{origin}: quantization_config.group_size {shown(group)} is not mapped for NVFP4 (16)")
            spec = _linear("nvfp4", excluded)
            note = "quantization_config modelopt NVFP4 (16-element groups, fp8 scales)"
        elif algo == "FP8":
            spec, note = _linear("fp8", excluded), "quantization_config modelopt FP8"
        else:
            raise SpecError(
                f"{origin}: quantization_config.quant_algo {shown(algo)} is not mapped; understood: NVFP4, FP8"
            )
    else:
        raise SpecError(
            f"{origin}: quantization_config.quant_method {shown(method)} is not mapped; understood: {UNDERSTOOD}"
        )
    return Value({"default": default, **spec}, note + kept)
