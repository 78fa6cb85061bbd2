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

from roofline.core.errors import OptionError, shown
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, EngineTerms, Precision, Rates, deployment
from roofline.deploy.layout import replica_loads
from roofline.formulas import compute, cost
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import StepTerms, decode_work, prefill_work, step_terms
from roofline.terms.exact import times
from roofline.terms.step import BOOK

__all__ = [
    "BOOK",
    "DEFAULT_CONTEXT",
    "Precision",
    "RequestResult",
    "StepMemory",
    "StepResult",
    "decode_step",
    "held_memory",
    "request",
    "request_from",
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

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _check_positive(**values: ArrayLike) -> None:
    for name, value in values.items():
        arr = np.asarray(value, dtype=float)
        if np.any(~np.isfinite(arr)) or np.any(arr <= 0):
            raise OptionError(f"{name} must be positive and finite (got {shown(value)})", parameters=(name,))


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


@dataclass(frozen=True)
class StepMemory:
    """Memory of a step: the busiest replica (``replica_*``: weights + its ⌈B/r⌉ sequences, which
    decides ``fits``) and the slice (``total_bytes``, ``usable_bytes``: exact sums over the replicas).

    ``kv_bytes_per_sequence`` is what a sequence holds: its KV cache plus ``state_bytes_per_sequence``
    (a hybrid model's constant recurrent state; 0 for pure attention).
    """

    kv_bytes_per_sequence: Number
    replica_batch: Number
    replica_bytes: Number
    replica_usable_bytes: Number
    total_bytes: Number
    fits: Number
    kv_only_bytes_per_sequence: Number = 0.0
    state_bytes_per_sequence: Number = 0.0
    usable_bytes: Number = 0.0


def held_memory(
    dep: Deployment,
    batch: ArrayLike,
    bytes_per_seq: ArrayLike,
    tokens_per_seq: ArrayLike,
    loads: tuple[Number, Number, Number] | None = None,
    sampled_per_seq: ArrayLike | None = None,
    **per_seq: Number,
) -> StepMemory:
    """B sequences of ``bytes_per_seq`` dealt over r replicas (``loads``: (busiest, quietest, how many
    busiest), default :func:`replica_loads`): each holds the weights + its sequences against HBM less
    the activations of its step of ``tokens_per_seq`` tokens (``sampled_per_seq`` of them sampled,
    default all) a sequence.  ``usable_bytes`` is :func:`slice_usable_bytes`'s."""
    r, weights = dep.replicas, dep.weight_bytes
    one = loads is None and not np.any(np.not_equal(r, 1.0))  # one replica holds it all: the slice is it
    busiest = batch if one else (loads if loads is not None else replica_loads(batch, r))[0]
    top, top_usable = replica_need(dep, busiest, bytes_per_seq, tokens_per_seq, sampled_per_seq)
    return StepMemory(
        bytes_per_seq,
        busiest,
        top,
        top_usable,
        total_bytes=top if one else np.add(times(r, weights), np.multiply(batch, bytes_per_seq)),
        fits=memory.fits_in_memory(top, top_usable),
        usable_bytes=top_usable if one else slice_usable_bytes(dep, batch, tokens_per_seq, sampled_per_seq),
        **per_seq,
    )


def replica_need(
    dep: Deployment,
    seqs: ArrayLike,
    bytes_per_seq: ArrayLike,
    tokens_per_seq: ArrayLike,
    sampled_per_seq: ArrayLike | None = None,
) -> tuple[Number, Number]:
    """(what one replica of ``seqs`` sequences holds: P + n·bytes, the HBM it may fill: physical·u less
    the activations of its step of n·tokens tokens, n·sampled of them sampled)."""
    sampled = None if sampled_per_seq is None else np.multiply(seqs, sampled_per_seq)
    return (
        memory.total_memory_bytes(dep.weight_bytes, np.multiply(seqs, bytes_per_seq)),
        dep.usable_hbm_bytes(np.multiply(seqs, tokens_per_seq), sampled),
    )


def slice_usable_bytes(
    dep: Deployment, batch: ArrayLike, tokens_per_seq: ArrayLike, sampled_per_seq: ArrayLike | None = None
) -> Number:
    """HBM the slice's r replicas may fill: r·physical·u less the activations of all B sequences'
    steps (linear in tokens, so the replicas' reserves sum to the slice's)."""
    sampled = None if sampled_per_seq is None else np.multiply(batch, sampled_per_seq)
    return times(dep.replicas, dep.usable_hbm_bytes(0.0)) - dep.activation_reserve_bytes(
        np.multiply(batch, tokens_per_seq), sampled
    )


def overflow_bytes(dep: Deployment, batch: ArrayLike, bytes_per_seq: ArrayLike, tokens_per_seq: ArrayLike) -> Number:
    """Σ over the replicas of what each holds beyond its usable HBM (:func:`held_memory`'s dealing):
    B mod r replicas at ⌈B/r⌉ sequences, the rest at ⌊B/r⌋."""
    busiest, quietest, n_busiest = replica_loads(batch, dep.replicas)

    def over(b: Number) -> Number:
        need, usable = replica_need(dep, b, bytes_per_seq, tokens_per_seq)
        return np.maximum(np.subtract(need, usable), 0.0)

    return np.add(
        np.multiply(n_busiest, over(busiest)), np.multiply(np.subtract(dep.replicas, n_busiest), over(quietest))
    )


def step_memory(dep: Deployment, batch: ArrayLike, context: ArrayLike) -> StepMemory:
    """A decode step's memory: each sequence holds KV(S) + state, each replica's step one token a
    sequence (:func:`held_memory`)."""
    kv_only = memory.kv_cache_bytes_per_sequence(dep.model, context, dep.precision.kv_bytes)
    state_seq = memory.state_bytes_per_sequence(dep.model, dep.precision.kv_bytes)
    kv_seq = np.add(kv_only, state_seq)  # what a sequence holds: KV + its constant recurrent state
    return held_memory(dep, batch, kv_seq, 1.0, kv_only_bytes_per_sequence=kv_only, state_bytes_per_sequence=state_seq)


def step_from(dep: Deployment, batch: ArrayLike, context: ArrayLike) -> StepResult:
    """One decode step of ``dep`` at ``batch`` sequences over ``context`` tokens, from the step terms."""
    m, prec = dep.model, dep.precision
    t = step_terms(dep, decode_work(batch, context))
    counts = memory.param_counts(m)
    replicas = dep.replicas
    chips = np.asarray(dep.chips, dtype=float)
    mem = step_memory(dep, batch, context)
    g_batch, kv_seq = mem.replica_batch, mem.kv_bytes_per_sequence
    weights = dep.weight_bytes
    kv_only, state_seq = mem.kv_only_bytes_per_sequence, mem.state_bytes_per_sequence
    act = dep.activation_reserve_bytes(1.0)
    budget = dep.group_capacity_bytes() * dep.memory_utilization
    tps = np.divide(batch, t.time_s)
    return StepResult(
        param_count=counts.total,
        active_param_count=counts.active,
        param_bytes=weights,
        kv_bytes_per_token=memory.kv_cache_bytes_per_token(m, prec.kv_bytes),
        kv_bytes=np.multiply(batch, kv_only),
        total_bytes=mem.total_bytes,
        hbm_capacity_bytes=memory.hbm_capacity_bytes(chips, dep.hw.hbm_bytes),
        usable_hbm_bytes=mem.usable_bytes,
        fits=mem.fits,
        overflow_bytes=overflow_bytes(dep, batch, kv_seq, 1.0),
        max_batch=replicas * memory.max_batch_size(budget, weights, np.add(kv_seq, act)),
        min_chips=memory.min_chips(
            np.add(memory.total_memory_bytes(weights, np.multiply(batch, kv_seq)), dep.activation_reserve_bytes(batch)),
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
        max_context=memory.max_context_length(m, g_batch, budget - np.multiply(g_batch, act), weights, prec.kv_bytes),
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
        replica_kv_bytes=np.multiply(g_batch, kv_only),
        state_bytes=np.multiply(batch, state_seq),
        engine_host_s=t.engine_host_s,
        engine=dep.engine.as_dict() if dep.engine.registry_entry else None,
    )


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


@dataclass(frozen=True)
class RequestResult:
    """One request: prefill (TTFT), decode (TPOT) and end-to-end latency, with and without cache."""

    input_len: Number
    output_len: Number
    prefill_flops: Number
    ttft_s: Number
    tpot_s: Number
    decode_time_s: Number
    latency_s: Number
    first_step_time_s: Number
    last_step_time_s: Number
    no_cache_latency_s: Number
    no_cache_slowdown: Number
    tokens_per_s_per_chip: Number
    fits: Number
    total_bytes: Number
    hbm_capacity_bytes: Number
    usable_hbm_bytes: Number = 0.0
    prefill_comms_s: Number = 0.0
    #: The busiest replica's weights + KV at I + O, and the HBM it may fill: what decides ``fits``.
    replica_bytes: Number = 0.0
    replica_usable_bytes: Number = 0.0
    decode_comms_s: Number = 0.0
    tp: int = 1
    pp: int = 1
    ep: int = 1
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


#: Gauss-Legendre nodes for the sum of decode steps over a growing context (exact for affine terms).
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(6)


def decode_total_s(dep: Deployment, batch: ArrayLike, input_len: Number, steps: Number) -> tuple[Number, Number]:
    """(Σ step times, Σ exposed comms) of ``steps`` decode steps at contexts I, ..., I+steps-1.

    The step is affine in context for the spec sheet, so Gauss-Legendre quadrature over the
    context range is exact there (and within a fraction of a percent for fitted kernels).
    """
    span = np.maximum(np.subtract(steps, 1.0), 0.0)
    shape = np.broadcast_shapes(np.shape(batch), np.shape(input_len), np.shape(span))
    nodes = _NODES.reshape((-1,) + (1,) * len(shape))  # one step_terms call: the nodes on a leading axis
    t = step_terms(dep, decode_work(batch, np.add(input_len, span * (nodes + 1.0) / 2.0)))
    times = np.broadcast_to(t.time_s, nodes.shape[:1] + shape)
    exposed = np.broadcast_to(t.comms_exposed_s, nodes.shape[:1] + shape)
    total, comms = 0.0, 0.0
    for k, w in enumerate(_WEIGHTS):  # summed node by node, in order, as the quadrature reads
        total = total + w / 2.0 * times[k]
        comms = comms + w / 2.0 * exposed[k]
    return np.multiply(steps, total), np.multiply(steps, comms)


def request(
    model: ModelSpec,
    hw: HardwareSpec,
    input_len: ArrayLike,
    output_len: ArrayLike,
    chips: ArrayLike = 1,
    batch: ArrayLike = 1,
    precision: Precision = DEFAULT_PRECISION,
    mfu: float = 1.0,
    rates: Rates | None = None,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    topology_text: str | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    engine: str | EngineTerms | None = None,
) -> RequestResult:
    """TTFT = prefill of I tokens (yields token 1); O-1 decode steps follow, the KV growing."""
    _check_positive(input_len=input_len, output_len=output_len, chips=chips, batch=batch)
    dep = _deploy(model, hw, chips, precision, None, rates, tp, pp, ep, topology_text, memory_utilization, engine)
    return request_from(dep, input_len, output_len, batch, mfu)


def request_from(
    dep: Deployment, input_len: ArrayLike, output_len: ArrayLike, batch: ArrayLike = 1, mfu: float = 1.0
) -> RequestResult:
    """A whole request on ``dep``: the prefill step's terms, then the decode steps' terms."""
    if not 0 < mfu <= 1:
        raise OptionError(f"mfu must be in (0, 1] (got {shown(mfu)})", parameters=("mfu",))
    m, prec = dep.model, dep.precision
    counts = memory.param_counts(m)
    i = np.asarray(input_len, dtype=float)
    o = np.asarray(output_len, dtype=float)
    prefill = step_terms(dep, prefill_work(batch, i), mfu)
    steps = o - 1.0
    decode, decode_comms = decode_total_s(dep, batch, i, steps)
    first = step_terms(dep, decode_work(batch, i))
    last = step_terms(dep, decode_work(batch, np.maximum(i + o - 2.0, i)))
    ttft = prefill.time_s
    latency = np.add(ttft, decode)
    chips = np.asarray(dep.chips, dtype=float)
    weights = dep.weight_bytes
    rates = dep.rates
    nc_flops = np.multiply(batch, compute.no_cache_generation_flops(m, counts.active, i, o))
    from roofline.formulas.step import no_cache_generation_time_s

    no_cache = no_cache_generation_time_s(
        nc_flops, weights, o, chips * rates.flops_per_s * mfu, chips * rates.hbm_bandwidth_bytes_per_s
    )
    held = held_memory(dep, batch, memory.cache_bytes_per_sequence(m, i + o, prec.kv_bytes), i, sampled_per_seq=1.0)
    return RequestResult(
        input_len=i,
        output_len=o,
        prefill_flops=np.multiply(batch, compute.prefill_flops(m, counts.active, i)),
        ttft_s=ttft,
        tpot_s=np.where(steps > 0, decode / np.maximum(steps, 1.0), first.time_s),
        decode_time_s=decode,
        latency_s=latency,
        first_step_time_s=first.time_s,
        last_step_time_s=last.time_s,
        no_cache_latency_s=no_cache,
        no_cache_slowdown=no_cache / latency,
        tokens_per_s_per_chip=np.multiply(batch, o) / latency / chips,
        fits=held.fits,
        total_bytes=held.total_bytes,
        hbm_capacity_bytes=memory.hbm_capacity_bytes(chips, dep.hw.hbm_bytes),
        usable_hbm_bytes=held.usable_bytes,
        replica_bytes=held.replica_bytes,
        replica_usable_bytes=held.replica_usable_bytes,
        prefill_comms_s=prefill.comms_exposed_s,
        decode_comms_s=np.where(steps > 0, decode_comms / np.maximum(steps, 1.0), first.comms_exposed_s),
        tp=dep.par.tp,
        pp=dep.par.pp,
        ep=dep.par.ep,
        sources={
            **result_sources(dep, prefill),
            "formulas": f"{BOOK}, prefill/generation sections (MFU {mfu:g})",
            "no_cache": "spec-sheet roofline of the book's no-KV-cache comparison (chips × peak "
            f"FLOP/s × MFU {mfu:g}, chips × HBM bandwidth), whatever the profile",
        },
    )
