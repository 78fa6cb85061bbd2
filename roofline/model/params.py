"""Parameter counts of a model shape by component (the book's LLaMA-2 table; MLA, MoE, hybrids)."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.memo import derived
from roofline.model.shape import ModelShape, layer_mix


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
    small = (
        inner * kernel
        + inner
        + inner * n
        + inner
        + (rank + 2 * n if m.mamba_inner_norms else 0)
        + ((2 * inner + d) if m.mamba_proj_bias else 0)
    )
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

    Norms: (norms_per_layer·L + 1 final + 1 if embedding_norm) LayerNorms of D (2·D with bias). Kept on a
    frozen model.
    """
    return derived(m, "param_counts", lambda: _param_counts(m))


def _param_counts(m: ModelShape) -> ParamCounts:
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
    shared = m.num_shared_experts * mlp_params(d, m.shared_expert_d_ff or m.d_ff, m.gated_mlp, m.mlp_bias)
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
        attention=float(mixer)
        if (mix.linear or mix.mamba or mix.no_mixer)
        else m.num_layers * attention_params_per_layer(m),
        mlp=float(mlp_total),
        mlp_active=float(mlp_active),
        norms=float(norms),
    )


def routed_expert_params(m: ModelShape) -> float:
    """Parameters in routed experts: (L - dense layers)·E·mlp(D, F)."""
    return moe_layer_count(m) * m.num_experts * mlp_params(m.d_model, m.d_ff, m.gated_mlp, m.mlp_bias)
