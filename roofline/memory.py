"""Memory estimators: parameter counts and bytes, KV-cache bytes, fit, max batch and context.

Formulas follow "All About Transformer Inference" (How to Scale Your Model, part 7),
sections "What about memory?" and the worked problems 1, 2 and 5.  Pure functions of
numbers; array arguments broadcast.  A model is any object with the attributes of
:class:`ModelShape` (``roofline.specs.ModelSpec`` is one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

Number = float | np.ndarray


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
class ParamCounts:
    """Parameter counts by component; ``active`` counts k of E experts per MoE layer.

    ``active`` keeps both embedding tables (Mistral's 12.9 B for Mixtral counts them);
    DeepSeek's "37 B activated" leaves out the input table, a row lookup: ``active - V·D``.
    """

    embedding: float
    attention: float
    mlp: float
    mlp_active: float
    norms: float

    @property
    def total(self) -> float:
        return self.embedding + self.attention + self.mlp + self.norms

    @property
    def active(self) -> float:
        return self.embedding + self.attention + self.mlp_active + self.norms


def mlp_params(d_model: int, d_ff: int, gated: bool, bias: bool = False) -> float:
    """One MLP block: gated (SwiGLU) 3·D·F, plain 2·D·F; biases 2F+D or F+D."""
    mats = 3 if gated else 2
    biases = ((2 if gated else 1) * d_ff + d_model) if bias else 0
    return float(mats * d_model * d_ff + biases)


def attention_params_per_layer(m: ModelShape) -> float:
    """Q and O: 2·D·N·H; K and V: 2·D·K·H (the book's LLaMA-2 table); MLA uses its LoRA shapes."""
    d, n = m.d_model, m.num_heads
    if m.kv_lora_rank is not None:
        rope, nope, v = m.qk_rope_head_dim or 0, m.qk_nope_head_dim or 0, m.v_head_dim or 0
        if m.q_lora_rank:
            q = d * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * n * (nope + rope)
        else:
            q = d * n * (nope + rope)
        kv = d * (m.kv_lora_rank + rope) + m.kv_lora_rank + m.kv_lora_rank * n * (nope + v)
        return float(q + kv + n * v * d)
    h, k = m.head_dim, m.num_kv_heads
    weights = 2 * d * n * h + 2 * d * k * h
    biases = (n * h + 2 * k * h if m.qkv_bias else 0) + (d if m.o_bias else 0)
    return float(weights + biases)


def moe_layer_count(m: ModelShape) -> int:
    """Layers with routed experts: all but the leading dense ones (0 for a dense model)."""
    return m.num_layers - m.num_dense_layers if m.num_experts > 1 else 0


def param_counts(m: ModelShape) -> ParamCounts:
    """Total and active parameters: L·(attention + MLP + norms) + V·D (×2 untied) + positions.

    Norms: (norms_per_layer·L + 1 final + 1 if embedding_norm) LayerNorms of D (2·D with bias).
    """
    d = m.d_model
    embedding = m.vocab_size * d * (1 if m.tie_embeddings else 2)
    embedding += m.learned_position_embeddings * d
    embedding += m.vocab_size if getattr(m, "lm_head_bias", False) else 0  # GPT-J's lm_head bias
    moe_layers = moe_layer_count(m)
    dense_layers = m.num_layers - moe_layers
    dense_ff = m.dense_d_ff if (moe_layers and m.dense_d_ff) else m.d_ff
    dense_mlp = dense_layers * mlp_params(d, dense_ff, m.gated_mlp, m.mlp_bias)
    expert = mlp_params(d, m.d_ff, m.gated_mlp, m.mlp_bias)
    shared = m.num_shared_experts * mlp_params(
        d, m.shared_expert_d_ff or m.d_ff, m.gated_mlp, m.mlp_bias
    )
    router = d * m.num_experts if moe_layers else 0
    mlp_total = dense_mlp + moe_layers * (m.num_experts * expert + shared + router)
    mlp_active = dense_mlp + moe_layers * (m.experts_per_token * expert + shared + router)
    norm_size = d * (2 if m.norm_bias else 1)
    norms_per_layer = getattr(m, "norms_per_layer", 2)
    norms = (norms_per_layer * m.num_layers + 1 + int(getattr(m, "embedding_norm", False))) * norm_size
    norms += m.num_layers * getattr(m, "extra_params_per_layer", 0)  # extra norms / gates (hf_config)
    return ParamCounts(
        embedding=float(embedding),
        attention=m.num_layers * attention_params_per_layer(m),
        mlp=float(mlp_total),
        mlp_active=float(mlp_active),
        norms=float(norms),
    )


def routed_expert_params(m: ModelShape) -> float:
    """Parameters in routed experts: (L - dense layers)·E·mlp(D, F)."""
    return moe_layer_count(m) * m.num_experts * mlp_params(
        m.d_model, m.d_ff, m.gated_mlp, m.mlp_bias
    )


def param_bytes(param_count: ArrayLike, bytes_per_param: ArrayLike) -> Number:
    """Weight bytes = parameter count × bytes per parameter (bf16 2, int8 1, int4 0.5)."""
    return np.multiply(param_count, bytes_per_param)


def expected_experts_touched(num_experts: ArrayLike, k: ArrayLike, batch: ArrayLike) -> Number:
    """Distinct experts hit by B tokens routed to k of E uniformly: E·(1 - (1 - k/E)^B)."""
    e = np.asarray(num_experts, dtype=float)
    return e * (1.0 - (1.0 - np.asarray(k, dtype=float) / e) ** np.asarray(batch, dtype=float))


def weight_bytes_read_per_step(
    m: ModelShape, total_params: float, bytes_per_param: ArrayLike, batch: ArrayLike
) -> Number:
    """Weights read in one decode step: non-expert bytes + touched experts' bytes (MoE)."""
    expert_params = routed_expert_params(m)
    if not expert_params:
        return np.multiply(total_params, bytes_per_param) + 0.0 * np.asarray(batch)
    fraction = expected_experts_touched(m.num_experts, m.experts_per_token, batch) / m.num_experts
    return np.multiply(total_params - expert_params + expert_params * fraction, bytes_per_param)


# --------------------------------------------------------------------------- KV cache


def kv_bytes_per_token_per_layer(m: ModelShape, kv_bytes_per_elem: ArrayLike) -> Number:
    """One layer's cache per token: 2·K·H·bytes (K and V); MLA: (kv_lora_rank + rope)·bytes."""
    if m.kv_lora_rank is not None:
        width = m.kv_lora_rank + (m.qk_rope_head_dim or 0)
    else:
        width = 2 * m.num_kv_heads * m.head_dim
    return np.multiply(width, kv_bytes_per_elem)


def kv_layer_counts(m: ModelShape) -> tuple[float, float]:
    """(global, local) layers that store their own cache, after cross-layer sharing."""
    share = m.kv_share_factor
    local = m.num_local_layers
    return float(np.ceil((m.num_layers - local) / share)), float(np.ceil(local / share))


def kv_cache_bytes_per_token(m: ModelShape, kv_bytes_per_elem: ArrayLike) -> Number:
    """Uncapped cache per token: 2·bytes·H·K·L (the book), MLA and KV sharing honoured."""
    global_layers, local_layers = kv_layer_counts(m)
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * (global_layers + local_layers)


def kv_cache_bytes_per_sequence(
    m: ModelShape, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike
) -> Number:
    """Cache of one sequence of S tokens: per-layer bytes × (global·S + local·min(S, window))."""
    s = np.asarray(context_len, dtype=float)
    global_layers, local_layers = kv_layer_counts(m)
    tokens = global_layers * s
    if local_layers:
        tokens = tokens + local_layers * np.minimum(s, float(m.sliding_window or 0))
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * tokens


def kv_cache_bytes(
    m: ModelShape, batch: ArrayLike, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike
) -> Number:
    """Cache of a batch: B × per-sequence bytes."""
    return np.multiply(batch, kv_cache_bytes_per_sequence(m, context_len, kv_bytes_per_elem))


def capped_token_sum(start: ArrayLike, count: ArrayLike, cap: float | None) -> Number:
    """Σ_{t=0}^{count-1} min(start + t, cap): tokens attended over ``count`` decode steps."""
    a = np.asarray(start, dtype=float)
    n = np.asarray(count, dtype=float)
    if cap is None:
        return n * a + n * (n - 1.0) / 2.0
    below = np.clip(cap - a, 0.0, n)
    return below * a + below * (below - 1.0) / 2.0 + (n - below) * cap


def kv_cache_bytes_summed_over_decode(
    m: ModelShape, input_len: ArrayLike, output_len: ArrayLike, kv_bytes_per_elem: ArrayLike
) -> Number:
    """Σ over O decode steps of the cache read per sequence, contexts I, I+1, ..., I+O-1."""
    global_layers, local_layers = kv_layer_counts(m)
    tokens = global_layers * capped_token_sum(input_len, output_len, None)
    if local_layers:
        tokens = tokens + local_layers * capped_token_sum(
            input_len, output_len, float(m.sliding_window or 0)
        )
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * tokens


# --------------------------------------------------------------------------- capacity


def total_memory_bytes(param_bytes_: ArrayLike, kv_bytes_: ArrayLike) -> Number:
    """Inference memory ≈ weights + KV cache (activations are negligible, per the book)."""
    return np.add(param_bytes_, kv_bytes_)


def hbm_capacity_bytes(chips: ArrayLike, hbm_bytes_per_chip: ArrayLike) -> Number:
    """HBM of a slice: chips × HBM per chip."""
    return np.multiply(chips, hbm_bytes_per_chip)


def fits_in_memory(total_bytes: ArrayLike, capacity_bytes: ArrayLike) -> np.ndarray:
    """True where weights + KV ≤ slice HBM."""
    return np.less_equal(total_bytes, capacity_bytes)


def max_batch_size(
    capacity_bytes: ArrayLike, param_bytes_: ArrayLike, kv_bytes_per_seq: ArrayLike
) -> Number:
    """Largest B with P + B·kv_seq ≤ capacity: floor((capacity - P) / kv_seq), at least 0."""
    room = np.subtract(capacity_bytes, param_bytes_)
    return np.maximum(np.floor(room / np.asarray(kv_bytes_per_seq, dtype=float)), 0.0)


def max_context_length(
    m: ModelShape,
    batch: ArrayLike,
    capacity_bytes: ArrayLike,
    param_bytes_: ArrayLike,
    kv_bytes_per_elem: ArrayLike,
) -> Number:
    """Largest S with P + B·kv_seq(S) ≤ capacity (window-capped layers stop growing at W)."""
    per_seq = (np.subtract(capacity_bytes, param_bytes_)) / np.asarray(batch, dtype=float)
    per_layer_token = kv_bytes_per_token_per_layer(m, kv_bytes_per_elem)
    global_layers, local_layers = kv_layer_counts(m)
    budget_tokens = np.maximum(per_seq, 0.0) / per_layer_token
    window = float(m.sliding_window or 0)
    if not local_layers:
        return np.floor(budget_tokens / global_layers)
    if not global_layers:
        fits_window = budget_tokens >= local_layers * window
        return np.where(fits_window, np.inf, np.floor(budget_tokens / local_layers))
    short = budget_tokens / (global_layers + local_layers)
    long = (budget_tokens - local_layers * window) / global_layers
    return np.floor(np.where(short <= window, short, long))


def min_chips(total_bytes: ArrayLike, hbm_bytes_per_chip: ArrayLike) -> Number:
    """Fewest chips whose HBM holds weights + KV: ceil(total / HBM per chip)."""
    return np.ceil(np.divide(total_bytes, hbm_bytes_per_chip))
