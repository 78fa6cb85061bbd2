"""The MoE layer as one operator: router, permute, grouped GEMMs gate/up and down, finalize, as engines run it.

One layer on the busiest GPU of an MoE group, from the fused-MoE kernel family
(:mod:`roofline.kernels.moe`): a calibrated ``moe/<dtype>`` entry, else the nearest fitted format, else
the spec-sheet form at the chip's achievable speed (:mod:`roofline.deploy.families`).  The shared expert
is a dense MLP (the GEMM terms price it); communication (all-to-all or all-gather/reduce-scatter) is a
term of its own.  Replaces pricing each routed expert as its own GEMM with its own launch floor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy.families import family_time_arrays, positive
from roofline.deploy.rates import Rates
from roofline.kernels.moe import DEFAULT_ROUTING, expert_bytes, moe_flops
from roofline.kernels.shapes import shape_arrays


def routing_for(kind: str, alpha: float = 1.01) -> str:
    """The kernel family's routing of a deployment's skew: 'balanced' is uniform random routing (the
    expert-union formula), 'power_law' the bounded power law of exponent ``alpha`` (busiest GPU)."""
    return "uniform" if kind == "balanced" else f"power_law_{alpha:g}"


@dataclass(frozen=True)
class MoeShape:
    """One MoE layer of a model on a layout: experts, their split over ``ep`` x ``moe_tp`` chips, formats."""

    hidden: int
    inter: float
    top_k: int
    num_experts: int
    ep: int = 1
    moe_tp: float = 1.0
    gated: bool = True
    dtype: str = "bf16"
    act_dtype: str = "bf16"
    routing: str = DEFAULT_ROUTING
    impl: str = ""

    def shape(self, group_tokens: ArrayLike) -> dict[str, object]:
        """The kernel family's shape keywords for ``group_tokens`` tokens entering the layer."""
        return {
            "m": positive(group_tokens),
            "n": float(self.inter),
            "k": float(self.hidden),
            "num_experts": float(self.num_experts),
            "top_k": float(self.top_k),
            "ep": float(self.ep),
            "tp": float(self.moe_tp),
            "gated": 1.0 if self.gated else 0.0,
            "routing": self.routing,
        }


@dataclass(frozen=True)
class MoeTerm:
    """One MoE layer on the busiest GPU: time, the expert bytes and FLOPs it runs, its routing, the source."""

    time_s: np.ndarray
    weight_bytes: np.ndarray
    flops: np.ndarray
    routed_slots: np.ndarray
    active_experts: np.ndarray
    source: str


def moe_layer(rates: Rates, moe: MoeShape, group_tokens: ArrayLike) -> MoeTerm:
    """Seconds of one MoE layer on the busiest GPU for ``group_tokens`` tokens of the MoE group (0 where none).

    ``group_tokens``: tokens entering the layer across the group (the attention-DP ranks sharing the
    experts; the step's tokens under pure TP), before the top-k fan-out.
    """
    tokens = np.asarray(group_tokens, dtype=float)
    s = shape_arrays("moe", moe.dtype, moe.shape(tokens))  # routing features computed once
    t, source = family_time_arrays(rates.hw, "moe", moe.dtype, s, moe.impl, calibrated=bool(rates.calibrated))
    busy = tokens > 0
    zero = np.zeros_like(t)
    return MoeTerm(
        time_s=np.where(busy, t, 0.0),
        weight_bytes=np.where(busy, s["active"] * expert_bytes(s), zero),
        flops=np.where(busy, moe_flops(s, s["slots"]), zero),
        routed_slots=np.where(busy, s["slots"], zero),
        active_experts=np.where(busy, s["active"], zero),
        source=f"{source}; routing {moe.routing}",
    )
