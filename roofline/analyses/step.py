"""Whole-configuration analyses: a deployment in, the step model's terms read, one result out.

``decode_step`` and ``request`` are the layer the CLI, the sweeps, the planner and the Python
API share.  Each builds (or takes) one :class:`~roofline.deploy.Deployment` and reads the terms
of :func:`roofline.terms.step_terms`; no formula is restated here.  Scalars or numpy arrays
(batch, context, chips) broadcast, so one call evaluates a sweep.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.step_memory import (
    StepMemory,
    held_memory,
    overflow_bytes,
    rank_seqs,
    step_memory,
)
from roofline.core.checks import check_array, check_broadcast, check_instance, check_scalar
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, EngineTerms, Precision, Rates, deployment
from roofline.formulas import compute, cost
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import StepTerms, decode_work, step_terms
from roofline.terms.exact import times
from roofline.terms.step import BOOK

__all__ = [
    "BOOK",
    "DEFAULT_CONTEXT",
    "Precision",
    "StepMemory",
    "StepResult",
    "decode_step",
    "held_memory",
    "step_from",
    "step_memory",
]


DEFAULT_PRECISION = Precision()
#: Tokens in each sequence's KV cache when none is given: the book's LLaMA-2-13B tables (8192),
#: the same in the Python API and every command (step, inverse, diff, shard, sweep, pareto, report).
DEFAULT_CONTEXT = 8192


@dataclass(frozen=True)
class StepResult:
    """One decode step of a configuration (contract keys of the step command's JSON)."""

    param_count: float
    active_param_count: float
    param_bytes: Number
    kv_bytes_per_token: Number
    kv_bytes: Number
    total_bytes: Number
    hbm_capacity_bytes: Number
    usable_hbm_bytes: Number
    fits: Number
    overflow_bytes: Number
    max_batch: Number
    min_chips: Number
    critical_batch: float
    step_time_s: Number
    max_context: Number
    min_step_time_s: Number
    local_step_time_s: Number
    tokens_per_s: Number
    tokens_per_s_per_chip: Number
    bound: np.ndarray
    kv_time_s: Number
    weight_time_s: Number
    compute_time_s: Number
    overhead_time_s: Number
    cost_per_million_tokens: Number
    sources: dict[str, str] = field(default_factory=dict)
    tp: int = 1
    pp: int = 1
    ep: int = 1
    replicas: Number = 1.0
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    comms_time_s: Number = 0.0
    comms_time_upper_s: Number = 0.0
    step_time_lower_s: Number = 0.0
    step_time_upper_s: Number = 0.0
    gemm_time_s: Number = 0.0
    attention_time_s: Number = 0.0
    comms_exposed_s: Number = 0.0
    pipeline_bubble_s: Number = 0.0
    state_bytes: Number = 0.0
    #: Sequences on the busiest replica, ⌈B/r⌉: its memory decides ``fits`` and its step the time.
    replica_batch: Number = 1.0
    #: The KV cache those sequences hold.
    replica_kv_bytes: Number = 0.0
    #: Host time the engine entry adds to the step (its registry step terms, or an eager step's launch floor).
    engine_host_s: Number = 0.0
    #: The engine entry priced in (key, source, policy, every registry term and its source); None without one.
    engine: dict[str, object] | None = None
    #: Attention data-parallel ranks of a stage, the tensor split of each routed expert, and the copies of
    #: each cached token a rank's chips hold (MLA's latent: one per tp chip).
    attention_dp: int = 1
    moe_tp: int = 1
    kv_copies: float = 1.0
    #: Named operator terms of the step (seconds): the fused-MoE operator (routed experts), the GEMMs outside it,
    #: MLA attention and its absorb BMMs, and the MoE layers' token exchange (inside the collectives).
    moe_time_s: Number = 0.0
    dense_gemm_time_s: Number = 0.0
    mla_time_s: Number = 0.0
    mla_bmm_time_s: Number = 0.0
    moe_comms_time_s: Number = 0.0
    small_kernels_time_s: Number = 0.0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _check_positive(**values: ArrayLike) -> None:
    """Counts and lengths of a public entry point: real numbers in [1, 2**31-1] whose shapes broadcast."""
    for name, value in values.items():
        check_array(value, name, minimum=1.0, open_low=False)
    check_broadcast(**values)


def _check_request(dep: object, input_len: ArrayLike, output_len: ArrayLike, batch: ArrayLike, mfu: object) -> float:
    """request_from's arguments: a Deployment, lengths and batch >= 1 that broadcast, one mfu in (0, 1]."""
    check_instance(dep, "dep", Deployment, "from roofline.deployment(model, hw, chips)")
    _check_positive(input_len=input_len, output_len=output_len, batch=batch)
    return check_scalar(mfu, "mfu", minimum=0.0, maximum=1.0)


def _deploy(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: ArrayLike,
    precision: Precision,
    price: float | None,
    rates: Rates | None,
    tp: int | None,
    pp: int | None,
    ep: int | None,
    topology_text: str | None,
    memory_utilization: float,
    engine: str | EngineTerms | None = None,
) -> Deployment:
    return deployment(
        model,
        hw,
        chips,
        precision,
        tp=tp,
        pp=pp,
        ep=ep,
        topology_text=topology_text,
        memory_utilization=memory_utilization,
        price_per_chip_hour=price,
        rates=rates,
        engine=engine,
    )


def decode_step(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: ArrayLike = 1,
    batch: ArrayLike = 1,
    context: ArrayLike = DEFAULT_CONTEXT,
    precision: Precision = DEFAULT_PRECISION,
    price_per_chip_hour: float | None = None,
    rates: Rates | None = None,
    tp: int | None = None,
    topology_text: str | None = None,
    pp: int | None = None,
    ep: int | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    engine: str | EngineTerms | None = None,
) -> StepResult:
    """Memory, fit, step time, throughput and cost of one decode step (see :func:`step_from`)."""
    _check_positive(chips=chips, batch=batch, context=context)
    dep = _deploy(
        model, hw, chips, precision, price_per_chip_hour, rates, tp, pp, ep, topology_text, memory_utilization, engine
    )
    return step_from(dep, batch, context)


def step_from(dep: Deployment, batch: ArrayLike, context: ArrayLike) -> StepResult:
    """One decode step of ``dep`` at ``batch`` sequences over ``context`` tokens, from the step terms."""
    check_instance(dep, "dep", Deployment, "from roofline.deployment(model, hw, chips)")
    check_broadcast(batch=batch, context=context)
    m, prec = dep.model, dep.precision
    t = step_terms(dep, decode_work(batch, context))
    counts = memory.param_counts(m)
    replicas = dep.replicas
    chips = np.asarray(dep.chips, dtype=float)
    mem = step_memory(dep, batch, context)
    g_batch, kv_seq = mem.replica_batch, mem.kv_bytes_per_sequence
    weights = dep.held_weight_bytes
    kv_only, state_seq = mem.kv_only_bytes_per_sequence, mem.state_bytes_per_sequence
    act = dep.activation_reserve_bytes(1.0)
    held_seq = times(dep.kv_copies, kv_seq)
    budget = dep.group_capacity_bytes() * dep.memory_utilization
    tps = np.divide(batch, t.time_s)
    return StepResult(
        param_count=counts.total,
        active_param_count=counts.active,
        param_bytes=dep.weight_bytes,
        kv_bytes_per_token=memory.kv_cache_bytes_per_token(m, prec.kv_bytes),
        kv_bytes=np.multiply(batch, kv_only),
        total_bytes=mem.total_bytes,
        hbm_capacity_bytes=memory.hbm_capacity_bytes(chips, dep.hw.hbm_bytes),
        usable_hbm_bytes=mem.usable_bytes,
        fits=mem.fits,
        overflow_bytes=overflow_bytes(dep, batch, kv_seq, 1.0),
        max_batch=replicas * max_replica_batch(dep, budget, weights, np.add(held_seq, act)),
        min_chips=memory.min_chips(
            np.add(
                memory.total_memory_bytes(dep.weight_bytes, np.multiply(batch, kv_seq)),
                dep.activation_reserve_bytes(batch),
            ),
            dep.hw.hbm_bytes * dep.memory_utilization,
        ),
        critical_batch=float(
            compute.critical_batch_size(
                dep.rates.flops_per_s,
                dep.rates.hbm_bandwidth_bytes_per_s,
                memory.mean_bytes_per_param(m, prec.bytes_by_component) if prec.mixed else prec.weight_bytes,
                m.num_experts,
                m.experts_per_token,
            )
        ),
        step_time_s=t.time_s,
        max_context=memory.max_context_length(
            m,
            rank_seqs(dep, g_batch),
            budget - np.multiply(rank_seqs(dep, g_batch), act),
            weights,
            times(dep.kv_copies, prec.kv_bytes),
        ),
        min_step_time_s=np.maximum(
            (t.kv_read_bytes + t.weight_read_bytes + t.state_bytes)
            * dep.par.pp
            / (dep.stage_chips * dep.rates.hbm_bandwidth_bytes_per_s),
            t.comms_lower_s,
        ),
        local_step_time_s=t.local_s,
        tokens_per_s=tps,
        tokens_per_s_per_chip=tps / chips,
        bound=t.bound,
        kv_time_s=t.kv_time_s * dep.par.pp,
        weight_time_s=t.weight_time_s * dep.par.pp,
        compute_time_s=t.compute_time_s * dep.par.pp,
        overhead_time_s=t.overhead_s * dep.par.pp,
        cost_per_million_tokens=cost.cost_per_million_tokens(dep.price_per_chip_hour, chips, tps),
        sources=result_sources(dep, t),
        tp=dep.par.tp,
        pp=dep.par.pp,
        ep=dep.par.ep,
        replicas=replicas,
        memory_utilization=dep.memory_utilization,
        comms_time_s=t.comms_lower_s,
        comms_time_upper_s=t.comms_time_s,
        step_time_lower_s=t.lower_s,
        step_time_upper_s=t.upper_s,
        gemm_time_s=t.gemm_time_s * dep.par.pp,
        attention_time_s=(t.attention_decode_s + t.attention_prefill_s) * dep.par.pp,
        comms_exposed_s=t.comms_exposed_s,
        pipeline_bubble_s=t.pipeline_bubble_s,
        replica_batch=g_batch,
        replica_kv_bytes=times(dep.kv_copies, np.multiply(g_batch, kv_only)),
        state_bytes=np.multiply(batch, state_seq),
        engine_host_s=t.engine_host_s,
        engine=dep.engine.as_dict() if dep.engine.registry_entry else None,
        **layout_fields(dep),
        moe_time_s=t.moe_time_s,
        dense_gemm_time_s=t.dense_gemm_s,
        mla_time_s=t.mla_time_s,
        mla_bmm_time_s=t.mla_bmm_s,
        moe_comms_time_s=t.moe_comms_s,
        small_kernels_time_s=t.small_kernels_s,
    )


def layout_fields(dep: Deployment) -> dict[str, object]:
    """The layout keys a result reports beside tp, pp and ep: attention_dp, moe_tp, kv_copies."""
    return {"attention_dp": dep.par.attention_dp, "moe_tp": dep.par.moe_tp, "kv_copies": dep.kv_copies}


def max_replica_batch(dep: Deployment, budget: Number, weights: float, per_seq: Number) -> Number:
    """Largest batch one replica holds (:func:`memory.max_batch_size`), whole rounds of dp sequences where
    attention data-parallel ranks share it (each rank holds ⌈B/dp⌉)."""
    most = memory.max_batch_size(budget, weights, per_seq)
    dp = dep.par.attention_dp
    return most if dp == 1 else dp * np.floor(most / dp)


def result_sources(dep: Deployment, t: StepTerms) -> dict[str, str]:
    """Where every number came from: hardware, model, price, each term, collectives, memory policy."""
    return {
        "hardware": dep.rates.source,
        "model": dep.model.source or dep.model.name,
        "price": dep.price_source,
        **t.sources,
        **({"overhead": f"{t.sources.get('overhead', '')}; {dep.engine.source}"} if dep.engine.active else {}),
        "parallelism": dep.par.describe(),
        "memory": (
            f"usable HBM = physical × {dep.memory_utilization:g} − activation reserve"
            if dep.memory_utilization < 1
            else "all of physical HBM for weights + KV (the book's accounting)"
        ),
    }


#: Names that moved to :mod:`roofline.analyses.request`, still importable from here.
_MOVED_TO_REQUEST = ("RequestResult", "decode_total_s", "request", "request_from")


def __getattr__(name: str) -> object:
    """A whole request's names, from their home :mod:`roofline.analyses.request` (no import cycle)."""
    if name in _MOVED_TO_REQUEST:
        from roofline.analyses import request as home

        return getattr(home, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
