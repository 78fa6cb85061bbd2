"""Weight bytes: stored per component and dtype, and read per step (MoE experts touched)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.params import mixer_params, param_counts, routed_expert_params
from roofline.model.shape import ModelShape, Number, layer_mix


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


def dense_weight_bytes(m: ModelShape, bytes_of: dict[str, float]) -> float:
    """Bytes of every weight but the routed experts' (what each attention data-parallel rank holds)."""
    parts = component_bytes(m, bytes_of)
    return float(sum(parts.values()) - parts["experts"] - parts["expert_other"])


def mean_bytes_per_param(m: ModelShape, bytes_of: dict[str, float]) -> float:
    """Weight bytes / parameters: the bytes per parameter of a mixed-precision model."""
    return model_weight_bytes(m, bytes_of) / param_counts(m).total


def weight_bytes_read(
    m: ModelShape, bytes_of: dict[str, float], batch: ArrayLike, touched: ArrayLike | None = None
) -> Number:
    """Weights read in one step of B tokens: every component, routed experts × the touched fraction (the
    expert-union formula's, or ``touched``: the fraction a fused-MoE operator's routing reads)."""
    if touched is not None:
        parts = component_bytes(m, bytes_of)
        return dense_weight_bytes(m, bytes_of) + (parts["experts"] + parts["expert_other"]) * np.asarray(touched)
    if len(set(bytes_of.values())) == 1:
        return weight_bytes_read_per_step(m, param_counts(m).total, bytes_of["other"], batch)
    parts = component_bytes(m, bytes_of)
    routed = parts.pop("experts") + parts.pop("expert_other")
    fraction = (
        expected_experts_touched(m.num_experts, m.experts_per_token, batch) / m.num_experts
        if routed
        else 0.0 * np.asarray(batch)
    )
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
