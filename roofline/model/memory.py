"""Memory estimators: fit, max batch and context; re-exports the parameter, weight and cache estimators.

Formulas follow "All About Transformer Inference" (How to Scale Your Model, part 7),
sections "What about memory?" and the worked problems 1, 2 and 5.  Pure functions of
numbers; array arguments broadcast.  A model is any object with the attributes of
:class:`ModelShape` (``roofline.specs.ModelSpec`` is one).

The estimators live by concern in :mod:`roofline.model.shape` (shape, layer kinds),
:mod:`roofline.model.params` (parameter counts), :mod:`roofline.model.weight_bytes` (weight bytes stored and read)
and :mod:`roofline.model.kv_cache` (KV cache and recurrent state); this module re-exports them, so
``memory.<name>`` keeps working, and holds the capacity checks.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.kv_cache import (
    cache_bytes_per_sequence,
    capped_kv_layers,
    capped_token_sum,
    kv_bytes_per_token_per_layer,
    kv_cache_bytes,
    kv_cache_bytes_per_sequence,
    kv_cache_bytes_per_token,
    kv_cache_bytes_summed_over_decode,
    kv_layer_counts,
    state_bytes_per_sequence,
    state_elements_per_layer,
)
from roofline.model.params import (
    ParamCounts,
    attention_matrix_params,
    attention_params_per_layer,
    attention_small_params,
    linear_attention_params,
    mamba_params,
    mixer_params,
    mlp_params,
    moe_layer_count,
    param_counts,
    routed_expert_params,
)
from roofline.model.shape import LayerMix, ModelShape, Number, layer_mix
from roofline.model.weight_bytes import (
    WEIGHT_COMPONENTS,
    component_bytes,
    dense_weight_bytes,
    expected_experts_touched,
    mean_bytes_per_param,
    model_weight_bytes,
    param_bytes,
    weight_bytes_read,
    weight_bytes_read_per_step,
    weight_params_by_component,
)

__all__ = [
    "WEIGHT_COMPONENTS",
    "LayerMix",
    "ModelShape",
    "Number",
    "ParamCounts",
    "attention_matrix_params",
    "attention_params_per_layer",
    "attention_small_params",
    "cache_bytes_per_sequence",
    "capped_kv_layers",
    "capped_token_sum",
    "component_bytes",
    "dense_weight_bytes",
    "expected_experts_touched",
    "fits_in_memory",
    "hbm_capacity_bytes",
    "kv_bytes_per_token_per_layer",
    "kv_cache_bytes",
    "kv_cache_bytes_per_sequence",
    "kv_cache_bytes_per_token",
    "kv_cache_bytes_summed_over_decode",
    "kv_layer_counts",
    "layer_mix",
    "linear_attention_params",
    "mamba_params",
    "max_batch_size",
    "max_context_length",
    "mean_bytes_per_param",
    "min_chips",
    "mixer_params",
    "mlp_params",
    "model_weight_bytes",
    "moe_layer_count",
    "param_bytes",
    "param_counts",
    "routed_expert_params",
    "state_bytes_per_sequence",
    "state_elements_per_layer",
    "total_memory_bytes",
    "weight_bytes_read",
    "weight_bytes_read_per_step",
    "weight_params_by_component",
]


def total_memory_bytes(param_bytes_: ArrayLike, kv_bytes_: ArrayLike) -> Number:
    """Inference memory ≈ weights + KV cache (activations are negligible, per the book)."""
    return np.add(param_bytes_, kv_bytes_)


def hbm_capacity_bytes(chips: ArrayLike, hbm_bytes_per_chip: ArrayLike) -> Number:
    """HBM of a slice: chips × HBM per chip."""
    return np.multiply(chips, hbm_bytes_per_chip)


def fits_in_memory(total_bytes: ArrayLike, capacity_bytes: ArrayLike) -> np.ndarray:
    """True where weights + KV ≤ slice HBM."""
    return np.less_equal(total_bytes, capacity_bytes)


def max_batch_size(capacity_bytes: ArrayLike, param_bytes_: ArrayLike, kv_bytes_per_seq: ArrayLike) -> Number:
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
