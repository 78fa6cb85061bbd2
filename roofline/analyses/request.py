"""A whole request: the prefill step (TTFT), then the decode steps while the KV cache grows (TPOT),
each read from the step terms; beside it the same request without a KV cache."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.step import (
    DEFAULT_PRECISION,
    _check_positive,
    _check_request,
    _deploy,
    layout_fields,
    result_sources,
)
from roofline.analyses.step_memory import StepMemory, held_memory
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, EngineTerms, Precision, Rates
from roofline.formulas import compute
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import decode_work, prefill_work, step_terms
from roofline.terms.engine import frontend_s
from roofline.terms.step import BOOK, StepTerms


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
    attention_dp: int = 1
    moe_tp: int = 1
    kv_copies: float = 1.0
    #: The engine entry's front end in + out (HTTP, tokenise; detokenise, stream): on the client's path, no GPU time.
    frontend_s: Number = 0.0
    #: TTFT and end-to-end latency as the client sees them on an idle engine: the GPU figures + ``frontend_s``.
    client_ttft_s: Number = 0.0
    client_latency_s: Number = 0.0

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
    shape = np.broadcast_shapes(np.shape(dep.chips), np.shape(batch), np.shape(input_len), np.shape(span))
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


def prefill_and_memory(
    dep: Deployment, input_len: ArrayLike, output_len: ArrayLike, batch: ArrayLike = 1, mfu: float = 1.0
) -> tuple[StepTerms, StepMemory]:
    """A request's prefill step (its time is the GPU's TTFT) and the memory it holds at I + O tokens of KV:
    what :func:`request_from` and plan's per-shape prefill read."""
    mfu = _check_request(dep, input_len, output_len, batch, mfu)
    m, prec = dep.model, dep.precision
    i = np.asarray(input_len, dtype=float)
    o = np.asarray(output_len, dtype=float)
    prefill = step_terms(dep, prefill_work(batch, i), mfu)
    held = held_memory(dep, batch, memory.cache_bytes_per_sequence(m, i + o, prec.kv_bytes), i, sampled_per_seq=1.0)
    return prefill, held


def request_from(
    dep: Deployment, input_len: ArrayLike, output_len: ArrayLike, batch: ArrayLike = 1, mfu: float = 1.0
) -> RequestResult:
    """A whole request on ``dep``: the prefill step's terms, then the decode steps' terms.

    ``ttft_s`` and ``latency_s`` are GPU time (what serve and plan queue on); the client's figures add the
    entry's front end in and out.  An idle engine has no step running, so async scheduling's lag is 0 steps.
    """
    prefill, held = prefill_and_memory(dep, input_len, output_len, batch, mfu)  # checks the arguments
    mfu = float(mfu)
    m = dep.model
    counts = memory.param_counts(m)
    i = np.asarray(input_len, dtype=float)
    o = np.asarray(output_len, dtype=float)
    steps = o - 1.0
    decode, decode_comms = decode_total_s(dep, batch, i, steps)
    first = step_terms(dep, decode_work(batch, i))
    last = step_terms(dep, decode_work(batch, np.maximum(i + o - 2.0, i)))
    ttft = prefill.time_s
    latency = np.add(ttft, decode)
    front = float(sum(frontend_s(dep.engine)))
    chips = np.asarray(dep.chips, dtype=float)
    weights = dep.weight_bytes
    rates = dep.rates
    nc_flops = np.multiply(batch, compute.no_cache_generation_flops(m, counts.active, i, o))
    from roofline.formulas.step import no_cache_generation_time_s

    no_cache = no_cache_generation_time_s(
        nc_flops, weights, o, chips * rates.flops_per_s * mfu, chips * rates.hbm_bandwidth_bytes_per_s
    )
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
        **layout_fields(dep),
        frontend_s=front,
        client_ttft_s=np.add(ttft, front),
        client_latency_s=np.add(latency, front),
        sources={
            **result_sources(dep, prefill),
            "formulas": f"{BOOK}, prefill/generation sections (MFU {mfu:g})",
            "client": _client_note(dep, front),
            "no_cache": "spec-sheet roofline of the book's no-KV-cache comparison (chips × peak "
            f"FLOP/s × MFU {mfu:g}, chips × HBM bandwidth), whatever the profile",
        },
    )


def _client_note(dep: Deployment, front: float) -> str:
    """Where the client's TTFT and end-to-end latency come from."""
    if not front:
        return "client TTFT / end-to-end = the GPU's (no engine entry gives a front end)"
    fin, fout = frontend_s(dep.engine)
    return (
        f"client TTFT / end-to-end = GPU + front end {fin * 1e3:.3g} ms in + {fout * 1e3:.3g} ms out "
        f"({dep.engine.key}); idle engine: no scheduling lag"
    )
