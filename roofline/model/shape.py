"""The model shape the memory and step estimators read, and its layer counts by kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from roofline.core.memo import derived
from roofline.core.types import Number as Number  # re-exported: the estimators' number type


class ModelShape(Protocol):
    """The shape attributes the estimators read (the book's L, D, F, N, K, H, V and extras)."""

    num_layers: int
    d_model: int
    d_ff: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    gated_mlp: bool
    tie_embeddings: bool
    num_experts: int
    experts_per_token: int
    num_shared_experts: int
    shared_expert_d_ff: int | None
    num_dense_layers: int
    dense_d_ff: int | None
    sliding_window: int | None
    num_local_layers: int
    kv_share_factor: int
    kv_lora_rank: int | None
    q_lora_rank: int | None
    qk_rope_head_dim: int | None
    qk_nope_head_dim: int | None
    v_head_dim: int | None
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    norm_bias: bool
    learned_position_embeddings: int


@dataclass(frozen=True)
class LayerMix:
    """Layers of each kind: mixers (full, sliding, chunked attention; linear attention; mamba; none)
    and MLPs (dense, MoE, none)."""

    full: int
    sliding: int
    chunked: int
    linear: int
    mamba: int
    no_mixer: int
    dense: int
    moe: int
    no_mlp: int

    @property
    def attention(self) -> int:
        """Layers with softmax attention (and a KV cache)."""
        return self.full + self.sliding + self.chunked

    def kinds(self) -> dict[str, int]:
        """Non-zero counts by kind name (``model show``'s layer_kinds)."""
        named = {
            "full_attention": self.full,
            "sliding_attention": self.sliding,
            "chunked_attention": self.chunked,
            "linear_attention": self.linear,
            "mamba": self.mamba,
            "no_mixer": self.no_mixer,
            "dense_mlp": self.dense,
            "moe_mlp": self.moe,
            "no_mlp": self.no_mlp,
        }
        return {k: v for k, v in named.items() if v}


def layer_mix(m: ModelShape) -> LayerMix:
    """Counts per layer kind from ``layer_types``/``mlp_types``, else num_local_layers / num_dense_layers
    (kept on a frozen model: the estimators ask for it thousands of times a sweep)."""
    return derived(m, "layer_mix", lambda: _layer_mix(m))


def _layer_mix(m: ModelShape) -> LayerMix:
    types = getattr(m, "layer_types", None)
    local = m.num_local_layers
    mlps = getattr(m, "mlp_types", None)
    moe = m.num_layers - m.num_dense_layers if m.num_experts > 1 else 0
    if types is None and mlps is None:  # the common case, without the tallies
        return LayerMix(m.num_layers - local, local, 0, 0, 0, 0, m.num_layers - moe, moe, 0)
    if types is None:
        mixers = {"full_attention": m.num_layers - local, "sliding_attention": local}
    else:
        mixers = {t: types.count(t) for t in set(types)}
    if mlps is None:
        mlp_counts = {"moe": moe, "dense": m.num_layers - moe}
    else:
        mlp_counts = {t: mlps.count(t) for t in set(mlps)}
    return LayerMix(
        mixers.get("full_attention", 0),
        mixers.get("sliding_attention", 0),
        mixers.get("chunked_attention", 0),
        mixers.get("linear_attention", 0),
        mixers.get("mamba", 0),
        mixers.get("none", 0),
        mlp_counts.get("dense", 0),
        mlp_counts.get("moe", 0),
        mlp_counts.get("none", 0),
    )
