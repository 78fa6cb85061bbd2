"""Which terms account for the difference in decode step time and cost between two configurations.

The step model's prediction splits exactly into additive terms (book: Theoretical estimates for
LLM latency and throughput): T = attention (KV reads) + weight reads + the GEMM time beyond them
(FLOPs) + exposed communication + overhead, all read from the same
:class:`~roofline.analyses.step.StepResult` that ``roofline step`` prints, so diff's A side equals step.
Cost per token is T · k with k = chips · $/chip-hour / (3600 · B), so Δcost = Δk · T_a + k_b · ΔT
splits exactly as well.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.step import StepResult
from roofline.core.checks import check_instance
from roofline.model.memory import Number

#: The additive terms of a decode step, in display order.
TERMS = ("KV reads", "weight reads", "FLOPs beyond weight reads", "communication", "kernel overhead")


def flops_excess_s(gemm_time_s: ArrayLike, weight_time_s: ArrayLike) -> Number:
    """The part of the GEMM time above the weight reads: GEMM − min(T_weights, GEMM)."""
    return np.subtract(gemm_time_s, np.minimum(weight_time_s, gemm_time_s))


def step_terms_s(
    attention_s: float, weight_time_s: float, gemm_time_s: float, comms_exposed_s: float, overhead_s: float
) -> dict[str, float]:
    """The additive terms of T = attention + min(T_weights, GEMM) + (GEMM − that) + exposed comms + overhead."""
    weights = min(weight_time_s, gemm_time_s)
    return dict(
        zip(
            TERMS,
            (attention_s, weights, float(flops_excess_s(gemm_time_s, weight_time_s)), comms_exposed_s, overhead_s),
            strict=True,
        )
    )


def cost_rate(cost_per_million_tokens: float, step_time_s: float) -> float:
    """k = $ per million tokens per second of step time (chips · $/h / (3600 · B) · 1e6)."""
    return cost_per_million_tokens / step_time_s


@dataclass(frozen=True)
class TermDiff:
    """One term in both configurations, its change in seconds, its share of ΔT and its Δ$/Mtok."""

    term: str
    a_s: float
    b_s: float
    delta_s: float
    share: float
    cost_delta: float


@dataclass(frozen=True)
class DiffResult:
    """Step time and $/Mtok of A and B, and the per-term breakdown of the difference."""

    step_a_s: float
    step_b_s: float
    cost_a: float
    cost_b: float
    terms: list[TermDiff]
    cost_delta_from_price_chips_batch: float
    memory: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _scalar(value: object) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _terms_of(r: StepResult) -> dict[str, float]:
    return step_terms_s(
        _scalar(r.attention_time_s),
        _scalar(r.weight_time_s),
        _scalar(r.gemm_time_s),
        _scalar(r.comms_exposed_s),
        # an MoE/MLA model's small kernels, and an engine entry's host time (registry terms) beside its overheads
        _scalar(r.overhead_time_s) + _scalar(r.small_kernels_time_s) + _scalar(r.engine_host_s),
    )


def diff_steps(a: StepResult, b: StepResult) -> DiffResult:
    """Split ΔT and Δ$/Mtok between two scalar decode steps into the book's terms (exactly)."""
    check_instance(a, "a", StepResult, "from roofline.decode_step(...)")
    check_instance(b, "b", StepResult, "from roofline.decode_step(...)")
    ta, tb = _terms_of(a), _terms_of(b)
    step_a, step_b = sum(ta.values()), sum(tb.values())
    cost_a = _scalar(a.cost_per_million_tokens) * step_a / _scalar(a.step_time_s)
    cost_b = _scalar(b.cost_per_million_tokens) * step_b / _scalar(b.step_time_s)
    ka, kb = cost_rate(cost_a, step_a), cost_rate(cost_b, step_b)
    delta = step_b - step_a
    terms = [
        TermDiff(
            name,
            ta[name],
            tb[name],
            tb[name] - ta[name],
            (tb[name] - ta[name]) / delta if delta else 0.0,
            kb * (tb[name] - ta[name]),
        )
        for name in TERMS
    ]
    memory = {
        key: {"a": _scalar(getattr(a, key)), "b": _scalar(getattr(b, key))}
        for key in ("param_bytes", "kv_bytes", "total_bytes", "hbm_capacity_bytes", "usable_hbm_bytes")
    }
    return DiffResult(step_a, step_b, cost_a, cost_b, terms, (kb - ka) * step_a, memory)
