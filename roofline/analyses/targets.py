"""Deployments that meet an interactivity target: a sweep's points served at load, and the best of them.

Each sweep point (chip, dtypes, slice, tp, batch B) is one replica.  Its requests' prefill is the
prefill step's terms on that replica (:func:`roofline.terms.step_terms`, the TTFT of an unloaded
request, as :func:`roofline.analyses.step.request_from` has it); the load it carries comes from the
capacity plan's queueing model (:mod:`roofline.analyses.plan.capacity`, its closed forms called, never
restated): the largest request rate λ whose sequences in flight fit the batch, whose TTFT (prefill +
M/G/1 wait) and whose TPOT (decode step / (1 - ρ)) stay within the target.  Tokens/s per chip and $
per million output tokens follow at that rate.  A point meets the target when λ > 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from roofline.analyses.lengths import LengthDistribution, weighted_mean
from roofline.analyses.plan.queueing import (
    cost_per_million_output_tokens,
    mg1_wait_s,
    rate_for_concurrency,
    rate_for_tpot,
    rate_for_ttft,
)
from roofline.analyses.step import Precision
from roofline.analyses.sweep.result import SweepResult
from roofline.core.errors import OptionError, shown
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, deployment
from roofline.formulas.cost import cost_per_hour
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import prefill_work, step_terms

#: What limits a replica's request rate, by code (``Served.limit``).
LIMITS = ("concurrency", "TTFT SLO", "TPOT SLO")


@dataclass(frozen=True)
class Target:
    """An interactivity target: TTFT and TPOT limits in seconds (each met by the mean, as plan does)."""

    ttft_slo_s: float
    tpot_slo_s: float

    def __post_init__(self) -> None:
        for name, value in (("ttft_slo_s", self.ttft_slo_s), ("tpot_slo_s", self.tpot_slo_s)):
            if not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise OptionError(f"{name} must be positive seconds (got {shown(value)})", parameters=(name,))


@dataclass(frozen=True)
class Prefill:
    """Per sweep point: E[S] and E[S²] of one request's prefill on its replica, and that step's bound."""

    mean_s: np.ndarray
    sq_s2: np.ndarray
    bound: np.ndarray


@dataclass(frozen=True)
class ChipSetup:
    """How a sweep label's points were priced: the chip (or profile) and its engine entry."""

    hw: HardwareSpec
    engine: str | None = None


#: Columns that name a point's replica (its layout); attention-dp follows from tp and ep.
SLOT_COLUMNS = ("block", "chips", "tp", "pp", "ep")


def slot_keys(sweep: SweepResult) -> np.ndarray:
    """(block, chips, tp, pp, ep) of every point: the replicas whose prefill is priced once."""
    cols = sweep.columns
    return np.stack([np.asarray(cols[k], dtype=np.int64) for k in SLOT_COLUMNS], axis=1)


def prefill_of(
    model: ModelSpec,
    sweep: SweepResult,
    setups: Mapping[str, ChipSetup],
    lengths: LengthDistribution,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
) -> Prefill:
    """Each point's prefill moments over ``lengths``: one prefill step's terms per distinct replica."""
    n = len(sweep)
    mean, sq, bound = np.zeros(n), np.zeros(n), np.empty(n, dtype=object)
    keys = slot_keys(sweep)
    if n == 0:
        return Prefill(mean, sq, bound)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for k, (block, chips, tp, pp, ep) in enumerate(uniq.tolist()):
        blk = sweep.blocks[block]
        setup = setups[blk["hardware"]]
        dep = deployment(
            model,
            setup.hw,
            chips,
            Precision(blk["weights"], blk["kv_dtype"], blk["compute_dtype"]),
            tp=tp,
            pp=pp if pp > 1 else None,
            ep=ep if ep > 1 else None,
            memory_utilization=memory_utilization,
            price_per_chip_hour=float(blk["price_per_chip_hour"]),
            engine=setup.engine,
        )
        terms = step_terms(dep, prefill_work(1.0, lengths.input_len))
        ttft = np.broadcast_to(np.asarray(terms.time_s, dtype=float), lengths.input_len.shape)
        at = inverse == k
        mean[at] = weighted_mean(ttft, lengths.weight)
        sq[at] = weighted_mean(ttft**2, lengths.weight)
        bound[at] = np.asarray(terms.bound).reshape(-1)[int(np.argmax(lengths.weight))]
    return Prefill(mean, sq, bound)


@dataclass(frozen=True)
class Served:
    """Every sweep point at the largest request rate meeting a target (0 where none does)."""

    rate_per_replica: np.ndarray
    limit: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    tokens_per_s_per_chip: np.ndarray
    cost_per_million_tokens: np.ndarray

    @property
    def meets(self) -> np.ndarray:
        return self.rate_per_replica > 0


def concurrency_rate(sweep: SweepResult, prefill: Prefill, lengths: LengthDistribution) -> np.ndarray:
    """λ at which each point's batch is full (Little's law with plan's TTFT and TPOT): independent of the target."""
    cols = sweep.columns
    steps = max(lengths.mean_output - 1.0, 0.0)
    return rate_for_concurrency(cols["batch"], prefill.mean_s, prefill.sq_s2, cols["step_time_s"], steps)


def served(
    sweep: SweepResult, prefill: Prefill, full_rate: np.ndarray, lengths: LengthDistribution, target: Target
) -> Served:
    """Rates, latencies, tokens/s per chip and $/Mtok of every point at ``target`` (plan's queueing model)."""
    cols = sweep.columns
    step_s = np.asarray(cols["step_time_s"], dtype=float)
    limits = np.stack(
        [
            full_rate,
            rate_for_ttft(target.ttft_slo_s, prefill.mean_s, prefill.sq_s2),
            rate_for_tpot(target.tpot_slo_s, step_s, prefill.mean_s),
        ]
    )
    rate = limits.min(axis=0)
    ok = rate > 0
    safe = np.where(ok, rate, 1.0)
    rho = safe * prefill.mean_s
    chips = np.asarray(cols["chips"], dtype=float)
    dollars = cost_per_hour(sweep.column("price_per_chip_hour").astype(float), chips)
    with np.errstate(divide="ignore", invalid="ignore"):
        ttft = prefill.mean_s + mg1_wait_s(safe, prefill.mean_s, prefill.sq_s2)
        tpot = step_s / (1.0 - rho)
    return Served(
        rate_per_replica=rate,
        limit=np.argmin(limits, axis=0).astype(np.int8),
        ttft_s=np.where(ok, ttft, np.inf),
        tpot_s=np.where(ok, tpot, np.inf),
        tokens_per_s_per_chip=np.where(ok, rate * lengths.mean_output / chips, 0.0),
        cost_per_million_tokens=np.where(
            ok, cost_per_million_output_tokens(dollars, safe, lengths.mean_output), np.inf
        ),
    )


def cheapest(result: Served, mask: np.ndarray | None = None) -> int | None:
    """Index of the lowest $/Mtok meeting the target within ``mask`` (ties: the higher tokens/s per chip)."""
    ok = result.meets if mask is None else result.meets & mask
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    order = np.lexsort((-result.tokens_per_s_per_chip[idx], result.cost_per_million_tokens[idx]))
    return int(idx[order[0]])


def fastest(result: Served, mask: np.ndarray | None = None) -> int | None:
    """Index of the highest tokens/s per chip meeting the target within ``mask`` (ties: the cheaper)."""
    ok = result.meets if mask is None else result.meets & mask
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    order = np.lexsort((result.cost_per_million_tokens[idx], -result.tokens_per_s_per_chip[idx]))
    return int(idx[order[0]])


def what_binds(sweep: SweepResult, result: Served, index: int) -> str:
    """What holds point ``index`` where it is: 'TTFT SLO' or 'TPOT SLO' when that target caps its request
    rate; with its batch full, what stops a larger batch: 'memory' (it does not fit), the target that a
    larger batch breaks ('TTFT SLO', 'TPOT SLO'), 'cost' (a larger batch meets the target but costs more
    per token) or 'batch grid' (the largest batch swept)."""
    limit = LIMITS[int(result.limit[index])]
    if limit != "concurrency":
        return limit
    keys = np.column_stack([slot_keys(sweep), np.asarray(sweep.columns["context"], dtype=np.int64)])
    batch = np.asarray(sweep.columns["batch"])
    same = np.flatnonzero(np.all(keys == keys[index], axis=1) & (batch > batch[index]))
    if not same.size:
        return "memory" if _larger_batch_dropped(sweep, index) else "batch grid"
    bigger = LIMITS[int(result.limit[int(same[np.argmin(batch[same])])])]
    return "cost" if bigger == "concurrency" else bigger


def _larger_batch_dropped(sweep: SweepResult, index: int) -> bool:
    """True when the sweep dropped a larger batch of this point's slot for memory."""
    cols = sweep.columns
    slot = tuple(int(cols[k][index]) for k in ("block", "chips", "tp", "pp", "context"))
    batch = int(cols["batch"][index])
    return any(
        (s.block, s.chips, s.tp, s.pp, s.context) == slot and s.first_dropped > batch for s in sweep.dropped_slots
    )  # a slot's block holds one expert layout, so (block, chips, tp, pp) names its ep too
