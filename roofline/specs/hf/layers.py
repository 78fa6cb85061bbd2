"""Helpers the hybrid ``config.json`` families share: the layer pattern record, an index list of
layers, and refusing a sliding window a family does not define."""

from __future__ import annotations

from roofline.core.errors import SpecError, shown
from roofline.core.types import JSONObject
from roofline.specs.hf.checks import bad_key
from roofline.specs.hf.fields import Mapped, Value


def _no_window(cfg: JSONObject, origin: str) -> None:
    """These families define no sliding window: a set one is refused, not ignored."""
    if cfg.get("sliding_window") is not None:
        raise SpecError(f"{origin}: sliding_window {shown(cfg['sliding_window'])} is not mapped for this family")


def _pattern(types: list[str], mlps: list[str], note: str) -> Mapped:
    return {"layer_types": Value(types, note), "mlp_types": Value(mlps, note)}


def _index_list(cfg: JSONObject, key: str, origin: str, layers: int) -> list[int] | None:
    value = cfg.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise bad_key(origin, key, value, "a list of whole numbers")
    if any(not 0 <= v < layers for v in value):
        raise bad_key(origin, key, value, f"layer indices in [0, {layers})")
    return value


# --------------------------------------------------------------------------- gpt-oss
