"""Closed-form inverse questions for one configuration: longest context, the batch where KV reads
overtake weight reads, and the HBM bandwidth, chips and batch a TPOT target needs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from roofline.analyses.plan.queueing import bandwidth_for_tpot, chips_for_tpot, kv_crossover_batch
from roofline.analyses.step import BOOK, Precision, decode_step
from roofline.core.errors import OptionError, shown
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, deployment
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import decode_work, step_terms

SECTION = f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'"


@dataclass(frozen=True)
class InverseAnswers:
    """The closed-form inverse questions for one configuration (SI units; inf where impossible)."""

    longest_context_tokens: float
    kv_crossover_batch: float
    bandwidth_for_tpot_bytes_per_s: float
    bandwidth_per_chip_for_tpot_bytes_per_s: float
    chips_for_tpot: float
    min_chips_for_memory: float
    max_batch_for_tpot: float
    max_batch_for_memory: float
    step_time_s: float
    tpot_s: float
    sources: dict[str, str] = field(default_factory=dict)


def inverse_questions(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    batch: int,
    context: int,
    tpot_s: float,
    precision: Precision | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
) -> InverseAnswers:
    """Longest context at B; batch where KV reads overtake weights; HBM bandwidth, chips and batch for T.

    The bytes are the step terms' (:func:`roofline.terms.step_terms`): weights read at this batch (MoE:
    the experts touched), KV (and recurrent state) read per sequence; a calibrated
    profile's fixed overhead is taken off the target first, since the closed forms have none.
    """
    if not tpot_s > 0:
        raise OptionError(f"tpot_s must be positive (got {shown(tpot_s)})", parameters=("tpot_s",))
    precision = precision or Precision()
    res = decode_step(model, hw, chips, batch, context, precision, memory_utilization=memory_utilization)
    dep = deployment(model, hw, chips, precision, memory_utilization=memory_utilization)
    terms = step_terms(dep, decode_work(batch, context))  # the bytes the step reads, as step prices them
    weights_read = float(terms.weight_read_bytes)
    kv_seq = float(np.add(terms.kv_read_bytes, terms.state_bytes)) / batch
    target = tpot_s - float(res.overhead_time_s)
    one_chip = decode_step(model, hw, 1, batch, context, precision)
    bandwidth = float(bandwidth_for_tpot(target, batch, kv_seq, weights_read, res.compute_time_s))
    return InverseAnswers(
        longest_context_tokens=float(res.max_context),
        kv_crossover_batch=float(kv_crossover_batch(weights_read, kv_seq)),
        bandwidth_for_tpot_bytes_per_s=bandwidth,
        bandwidth_per_chip_for_tpot_bytes_per_s=bandwidth / chips,
        chips_for_tpot=float(chips_for_tpot(float(one_chip.step_time_s) - float(one_chip.overhead_time_s), target))
        if target > 0
        else np.inf,
        min_chips_for_memory=float(res.min_chips),
        max_batch_for_tpot=largest_batch_within(model, hw, chips, context, precision, tpot_s),
        max_batch_for_memory=float(res.max_batch),
        step_time_s=float(res.step_time_s),
        tpot_s=tpot_s,
        sources={**res.sources, "inverse": f"{SECTION}: the step-time formula solved for S, B, W and chips"},
    )


def largest_batch_within(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    context: int,
    precision: Precision,
    tpot_s: float,
    limit: int = 1 << 16,
) -> float:
    """Largest batch whose decode step (the step model's prediction) is ≤ T; 0 if none (a search, no formula)."""
    batches = np.arange(1, limit + 1, dtype=float)
    steps = np.asarray(decode_step(model, hw, chips, batches, context, precision).step_time_s, dtype=float)
    ok = np.flatnonzero(steps <= tpot_s)
    return float(batches[ok[-1]]) if ok.size else 0.0
