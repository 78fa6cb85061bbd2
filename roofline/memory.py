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
        named = {"full_attention": self.full, "sliding_attention": self.sliding,
                 "chunked_attention": self.chunked, "linear_attention": self.linear, "mamba": self.mamba,
                 "no_mixer": self.no_mixer, "dense_mlp": self.dense, "moe_mlp": self.moe, "no_mlp": self.no_mlp}
        return {k: v for k, v in named.items() if v}


def layer_mix(m: ModelShape) -> LayerMix:
    """Counts per layer kind from ``layer_types``/``mlp_types``, else num_local_layers / num_dense_layers."""
    types = getattr(m, "layer_types", None)
    local = m.num_local_layers
    if types is None:
        mixers = {"full_attention": m.num_layers - local, "sliding_attention": local}
    else:
        mixers = {t: types.count(t) for t in set(types)}
    mlps = getattr(m, "mlp_types", None)
    if mlps is None:
        moe = m.num_layers - m.num_dense_layers if m.num_experts > 1 else 0
        mlp_counts = {"moe": moe, "dense": m.num_layers - moe}
    else:
        mlp_counts = {t: mlps.count(t) for t in set(mlps)}
    return LayerMix(mixers.get("full_attention", 0), mixers.get("sliding_attention", 0),
                    mixers.get("chunked_attention", 0), mixers.get("linear_attention", 0), mixers.get("mamba", 0),
                    mixers.get("none", 0), mlp_counts.get("dense", 0), mlp_counts.get("moe", 0),
                    mlp_counts.get("none", 0))


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
    return float(attention_matrix_params(m) + attention_small_params(m))


def attention_matrix_params(m: ModelShape) -> float:
    """Weight matrices of one attention layer: Q, K, V, O (+ Q's gate with attention_output_gate)."""
    d, n, h, k = m.d_model, m.num_heads, m.head_dim, m.num_kv_heads
    if m.kv_lora_rank is not None:
        return attention_params_per_layer(m)
    gate = d * n * h if getattr(m, "attention_output_gate", False) else 0
    return float(2 * d * n * h + 2 * d * k * h + gate)


def attention_small_params(m: ModelShape) -> float:
    """Biases, sinks (N learned logits, gpt-oss) and per-attention-layer norms of one attention layer."""
    if m.kv_lora_rank is not None:
        return 0.0
    n, h, k = m.num_heads, m.head_dim, m.num_kv_heads
    biases = (n * h + 2 * k * h if m.qkv_bias else 0) + (m.d_model if m.o_bias else 0)
    sinks = n if getattr(m, "attention_sinks", False) else 0
    return float(biases + sinks + getattr(m, "attention_extra_params", 0))


def linear_attention_params(m: ModelShape) -> tuple[float, float]:
    """(matrices, small) of one Gated DeltaNet layer (Qwen3-Next's modelling code).

    in_proj_qkvz D·(2·Kd + 2·Vd), in_proj_ba D·2·nv, out_proj Vd·D; small: depthwise conv
    (2·Kd + Vd)·kernel, dt_bias and A_log (nv each), gated norm (dv); Kd = nk·dk, Vd = nv·dv.
    """
    d = m.d_model
    nk, nv = m.linear_num_key_heads or 0, m.linear_num_value_heads or 0
    dk, dv = m.linear_key_head_dim or 0, m.linear_value_head_dim or 0
    key_dim, value_dim = nk * dk, nv * dv
    matrices = d * (2 * key_dim + 2 * value_dim) + d * 2 * nv + value_dim * d
    small = (2 * key_dim + value_dim) * (m.linear_conv_kernel or 0) + 2 * nv + dv
    return float(matrices), float(small)


def mamba_params(m: ModelShape) -> tuple[float, float]:
    """(matrices, small) of one Mamba layer (transformers' Mamba-2 mixer, or Jamba's Mamba-1).

    Mamba-2: in_proj D·(2·I + 2·G·N + heads), out_proj I·D; small: conv (I + 2GN)·(kernel + bias),
    dt_bias, A_log, D (heads each), gated norm (I).  Mamba-1: in_proj D·2I, x_proj I·(R + 2N),
    dt_proj R·I (+ I bias), out_proj I·D; small: conv I·(kernel + bias), A_log I·N, D (I), inner
    norms R + 2N (Jamba).  Projection biases (mamba_proj_bias) are small.
    """
    d, inner, n = m.d_model, m.mamba_d_inner or 0, m.mamba_state_size or 0
    kernel = (m.mamba_conv_kernel or 0) + (1 if m.mamba_conv_bias else 0)
    heads = m.mamba_num_heads
    if heads:
        groups = m.mamba_n_groups
        conv_dim = inner + 2 * groups * n
        in_out = 2 * inner + 2 * groups * n + heads
        matrices = d * in_out + inner * d
        small = conv_dim * kernel + 3 * heads + inner + ((in_out + d) if m.mamba_proj_bias else 0)
        return float(matrices), float(small)
    rank = m.mamba_dt_rank or 0
    matrices = d * 2 * inner + inner * (rank + 2 * n) + rank * inner + inner * d
    small = (inner * kernel + inner + inner * n + inner + (rank + 2 * n if m.mamba_inner_norms else 0)
             + ((2 * inner + d) if m.mamba_proj_bias else 0))
    return float(matrices), float(small)


def mixer_params(m: ModelShape) -> tuple[float, float]:
    """(matrices, small) of every layer's mixer: attention, linear attention and mamba layers."""
    mix = layer_mix(m)
    lin, mam = linear_attention_params(m), mamba_params(m)
    matrices = mix.attention * attention_matrix_params(m) + mix.linear * lin[0] + mix.mamba * mam[0]
    small = mix.attention * attention_small_params(m) + mix.linear * lin[1] + mix.mamba * mam[1]
    if m.kv_lora_rank is not None:
        matrices = mix.attention * attention_params_per_layer(m)
    return matrices, small


def moe_layer_count(m: ModelShape) -> int:
    """Layers with routed experts: all but the leading dense ones, or mlp_types' moe (0 if dense)."""
    return layer_mix(m).moe


def param_counts(m: ModelShape) -> ParamCounts:
    """Total and active parameters: L·(attention + MLP + norms) + V·D (×2 untied) + positions.

    Norms: (norms_per_layer·L + 1 final + 1 if embedding_norm) LayerNorms of D (2·D with bias).
    """
    d = m.d_model
    embedding = m.vocab_size * d * (1 if m.tie_embeddings else 2)
    embedding += m.learned_position_embeddings * d
    embedding += m.vocab_size if getattr(m, "lm_head_bias", False) else 0  # GPT-J's lm_head bias
    mix = layer_mix(m)
    moe_layers = mix.moe
    dense_layers = mix.dense
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
    mixer = sum(mixer_params(m))
    return ParamCounts(
        embedding=float(embedding),
        attention=float(mixer) if (mix.linear or mix.mamba or mix.no_mixer)
        else m.num_layers * attention_params_per_layer(m),
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


#: Weight components that may carry their own dtype; "other" (norms, biases, routers, sinks, conv and
#: SSM scalars) takes the default.
WEIGHT_COMPONENTS = ("attention", "mlp", "experts", "embeddings", "lm_head")


def weight_params_by_component(m: ModelShape) -> dict[str, float]:
    """Parameters per component; they sum to ``param_counts(m).total``.

    embeddings: V·D input table (+ learned positions); lm_head: V·D when untied (a tied head reads
    the embeddings); attention: every mixer's weight matrices; mlp: dense MLP and shared-expert
    matrices; experts: routed-expert matrices; expert_other: routed experts' biases (read like the
    experts, stored in the default dtype); other: the rest (norms, biases, routers, sinks, SSM scalars).
    """
    d, v = m.d_model, m.vocab_size
    counts = param_counts(m)
    mix = layer_mix(m)
    dense_ff = m.dense_d_ff if (mix.moe and m.dense_d_ff) else m.d_ff
    mats = 3 if m.gated_mlp else 2
    shared_ff = m.num_shared_experts * (m.shared_expert_d_ff or m.d_ff)
    expert_mats = mix.moe * m.num_experts * mats * d * m.d_ff
    out = {
        "embeddings": float(v * d + m.learned_position_embeddings * d),
        "lm_head": 0.0 if m.tie_embeddings else float(v * d),
        "attention": mixer_params(m)[0],
        "mlp": float(mix.dense * mats * d * dense_ff + mix.moe * mats * d * shared_ff),
        "experts": float(expert_mats),
        "expert_other": float(routed_expert_params(m) - expert_mats),
    }
    out["other"] = counts.total - sum(out.values())
    return out


def component_bytes(m: ModelShape, bytes_of: dict[str, float]) -> dict[str, float]:
    """Weight bytes per component: params × that component's bytes per param ("other" for the rest)."""
    params = weight_params_by_component(m)
    return {c: p * bytes_of.get("other" if c == "expert_other" else c, bytes_of["other"]) for c, p in params.items()}


def model_weight_bytes(m: ModelShape, bytes_of: dict[str, float]) -> float:
    """Bytes of one copy of the weights: Σ component params × bytes (uniform: params × bytes)."""
    if len(set(bytes_of.values())) == 1:
        return float(param_bytes(param_counts(m).total, bytes_of["other"]))
    return float(sum(component_bytes(m, bytes_of).values()))


def mean_bytes_per_param(m: ModelShape, bytes_of: dict[str, float]) -> float:
    """Weight bytes / parameters: the bytes per parameter of a mixed-precision model."""
    return model_weight_bytes(m, bytes_of) / param_counts(m).total


def weight_bytes_read(m: ModelShape, bytes_of: dict[str, float], batch: ArrayLike) -> Number:
    """Weights read in one step of B tokens: every component, routed experts × the touched fraction."""
    if len(set(bytes_of.values())) == 1:
        return weight_bytes_read_per_step(m, param_counts(m).total, bytes_of["other"], batch)
    parts = component_bytes(m, bytes_of)
    routed = parts.pop("experts") + parts.pop("expert_other")
    fraction = (expected_experts_touched(m.num_experts, m.experts_per_token, batch) / m.num_experts
                if routed else 0.0 * np.asarray(batch))
    return sum(parts.values()) + routed * fraction


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
    mix = layer_mix(m)
    return float(np.ceil(mix.full / share)), float(np.ceil(mix.sliding / share))


def capped_kv_layers(m: ModelShape) -> list[tuple[float, float]]:
    """(layers, cap) of the attention layers whose cache stops growing: sliding (W), chunked (C).

    A chunked layer attends within its chunk of C tokens; it is priced at min(S, C), the cache of
    a full chunk (an upper bound on the S mod C tokens of the current one).
    """
    _, local = kv_layer_counts(m)
    out = [(local, float(m.sliding_window or 0))] if local else []
    chunked = layer_mix(m).chunked
    if chunked:
        out.append((float(np.ceil(chunked / m.kv_share_factor)), float(getattr(m, "attention_chunk_size", 0) or 0)))
    return out


def kv_cache_bytes_per_token(m: ModelShape, kv_bytes_per_elem: ArrayLike) -> Number:
    """Uncapped cache per token: 2·bytes·H·K·L (the book), MLA, KV sharing and attention layers honoured."""
    global_layers, _ = kv_layer_counts(m)
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * (
        global_layers + sum(n for n, _ in capped_kv_layers(m)))


def kv_cache_bytes_per_sequence(
    m: ModelShape, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike
) -> Number:
    """Cache of one sequence of S tokens: per-layer bytes × (global·S + Σ capped·min(S, cap))."""
    s = np.asarray(context_len, dtype=float)
    global_layers, _ = kv_layer_counts(m)
    tokens = global_layers * s
    for layers, cap in capped_kv_layers(m):
        tokens = tokens + layers * np.minimum(s, cap)
    return kv_bytes_per_token_per_layer(m, kv_bytes_per_elem) * tokens


# --------------------------------------------------------------------------- recurrent state


def state_elements_per_layer(m: ModelShape) -> tuple[float, float]:
    """(linear-attention, mamba) state elements of one layer: conv history + recurrent state.

    Conv: (kernel − 1) past inputs of the conv channels (vLLM's and the causal-conv1d kernels'
    state); recurrent: Gated DeltaNet nv·dk·dv (one dk×dv matrix per value head), Mamba I·N.
    Conv channels: GDN 2·nk·dk + nv·dv; Mamba-2 I + 2·G·N; Mamba-1 I.
    """
    nk, nv = m.linear_num_key_heads or 0, m.linear_num_value_heads or 0
    dk, dv = m.linear_key_head_dim or 0, m.linear_value_head_dim or 0
    linear = max((m.linear_conv_kernel or 1) - 1, 0) * (2 * nk * dk + nv * dv) + nv * dk * dv
    inner, n = m.mamba_d_inner or 0, m.mamba_state_size or 0
    channels = inner + (2 * m.mamba_n_groups * n if m.mamba_num_heads else 0)
    mamba = max((m.mamba_conv_kernel or 1) - 1, 0) * channels + inner * n
    return float(linear), float(mamba)


def state_bytes_per_sequence(m: ModelShape, bytes_per_elem: ArrayLike) -> Number:
    """Constant state of one sequence over the linear-attention and mamba layers (0 without them).

    Stored in the KV-cache dtype; it does not grow with context.
    """
    mix = layer_mix(m)
    if not (mix.linear or mix.mamba):
        return np.multiply(0.0, bytes_per_elem)
    linear, mamba = state_elements_per_layer(m)
    return np.multiply(mix.linear * linear + mix.mamba * mamba, bytes_per_elem)


def cache_bytes_per_sequence(m: ModelShape, context_len: ArrayLike, kv_bytes_per_elem: ArrayLike) -> Number:
    """What one sequence holds in HBM: its KV cache at S tokens + its constant recurrent state."""
    return np.add(kv_cache_bytes_per_sequence(m, context_len, kv_bytes_per_elem),
                  state_bytes_per_sequence(m, kv_bytes_per_elem))


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
    global_layers, _ = kv_layer_counts(m)
    tokens = global_layers * capped_token_sum(input_len, output_len, None)
    for layers, cap in capped_kv_layers(m):
        tokens = tokens + layers * capped_token_sum(input_len, output_len, cap)
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
    """Largest S with P + B·(state + kv_seq(S)) ≤ capacity (capped layers stop growing at W or C).

    kv_seq is piecewise linear in S: between caps it grows by the layers not yet capped; past
    every cap with no uncapped layer left, any S fits (inf).  No room for the state: 0.
    """
    per_seq = (np.subtract(capacity_bytes, param_bytes_)) / np.asarray(batch, dtype=float)
    per_seq = per_seq - state_bytes_per_sequence(m, kv_bytes_per_elem)
    per_layer_token = kv_bytes_per_token_per_layer(m, kv_bytes_per_elem)
    global_layers, _ = kv_layer_counts(m)
    budget_tokens = np.maximum(per_seq, 0.0) / per_layer_token
    capped = sorted(capped_kv_layers(m), key=lambda lc: lc[1])
    if not capped:
        if not global_layers:
            return np.where(per_seq >= 0, np.inf, 0.0)
        return np.floor(budget_tokens / global_layers)
    result = np.full(np.shape(budget_tokens), np.nan)
    fixed, slope = 0.0, global_layers + sum(n for n, _ in capped)
    for layers, cap in capped:
        s = budget_tokens / slope if fixed == 0.0 else (budget_tokens - fixed) / slope
        result = np.where(np.isnan(result) & (s <= cap), s, result)
        fixed, slope = fixed + layers * cap, slope - layers
    if slope > 0:
        result = np.where(np.isnan(result), (budget_tokens - fixed) / slope, result)
    else:
        result = np.where(budget_tokens >= fixed, np.inf, result)
    return np.floor(result)


def min_chips(total_bytes: ArrayLike, hbm_bytes_per_chip: ArrayLike) -> Number:
    """Fewest chips whose HBM holds weights + KV: ceil(total / HBM per chip)."""
    return np.ceil(np.divide(total_bytes, hbm_bytes_per_chip))
