"""Collectives of one step on one pipeline stage: tp all-reduces, KV all-to-alls, ep dispatch/combine, pp sends.

Megatron tensor parallelism puts two all-reduces of the activations [T, D] in every layer
(attention output, MLP output); one where attention and MLP run in parallel (GPT-J, Falcon) and the
engine fuses them (its profile entry says so).
Once tp exceeds the KV heads the KV cache is batch-sharded and each attention layer adds two
all-to-alls of the decode queries [B, N·H] (book, part 7).
With expert parallelism an MoE layer's MLP all-reduce becomes a dispatch and a combine
all-to-all of the routed tokens [T·k, D] over ep chips.  Pipeline stages pass [T/m, D] to the
next stage.  Times come from the spec-sheet fabric (book, part 3) or the profile's fitted
collectives (the faster of NCCL and the custom all-reduce).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy import Deployment, kernels
from roofline.formulas import sharding
from roofline.model import memory
from roofline.model.memory import Number

if TYPE_CHECKING:  # fabric (and collectives) load only when a step has tp > 1: CLI start-up
    from roofline.deploy import fabric


@dataclass(frozen=True)
class CommsTerms:
    """Per-step collective time of one stage: lower (latency/bandwidth overlapped) and predicted (sum)."""

    lower_s: Number
    time_s: Number
    bytes_per_step: Number
    source: str
    ring_steps: Number = 0.0
    # The tp all-reduces' message [T, D] in bytes, and the bytes each chip moves in all of the stage's
    # all-reduces (ring: 2(n−1)/n of each message): what an engine's large-collective term prices.
    allreduce_message_bytes: Number = 0.0
    allreduce_wire_bytes: Number = 0.0
    #: The MoE layers' token exchange within ``time_s`` (dispatch + combine, or all-gather + reduce-scatter).
    moe_time_s: Number = 0.0


def allreduces_per_layer(dep: Deployment) -> float:
    """Megatron tp all-reduces per dense layer: 2 (attention output, MLP output); 1 where the model has a
    parallel block (GPT-J, Falcon) and the engine adds its attention and MLP partial sums before one."""
    return 1.0 if dep.model.parallel_block and dep.engine.fused_parallel_block else 2.0


def ring_steps_per_layer(
    tp: int, alltoalls: Number, allreduces: float = 2.0, ep: int = 1, moe_share: float = 0.0
) -> Number:
    """Peer-to-peer steps of one layer's collectives in a ring: 2(n−1) per all-reduce, n−1 per all-to-all.

    Dense layer: its all-reduces and the KV all-to-alls over tp; an MoE layer with ep > 1 swaps its MLP
    all-reduce for a dispatch and a combine over ep (NCCL ring algorithms; book, part 3)."""
    from roofline.formulas.collectives import ring_hops

    reduce_hops, a2a_hops = ring_hops("allreduce", tp), ring_hops("alltoall", tp)
    dense = allreduces * reduce_hops + alltoalls * a2a_hops
    if ep <= 1 or not moe_share:
        return dense
    moe = reduce_hops + 2.0 * ring_hops("alltoall", ep) + alltoalls * a2a_hops
    return (1.0 - moe_share) * dense + moe_share * moe


NO_COMMS = "none (tp = 1, or no tp given: the book's idealised fully sharded slice)"


def _spec_op(dep: Deployment, layout: fabric.Layout, op: str, total_bytes: ArrayLike) -> tuple[Number, Number]:
    from roofline.deploy import fabric

    t = fabric.collective_on(dep.hw, layout, op, total_bytes)
    return t.time_s, t.time_upper_s


def _op_time(
    dep: Deployment, layout: fabric.Layout, op: str, total_bytes: ArrayLike, devices: int
) -> tuple[Number, Number, str]:
    """(lower, predicted, source) of one collective of V = total_bytes over ``devices`` chips."""
    lower, upper = _spec_op(dep, layout, op, total_bytes)
    if dep.rates.uses("collective"):
        per_device = np.divide(total_bytes, devices) if op == "alltoall" else total_bytes
        try:
            fitted, family = kernels.collective_time_s(dep.hw, op, per_device, devices)
        except KeyError:
            return lower, upper, f"spec sheet (profile has no {op} fitted at {devices} devices)"
        return np.minimum(lower, fitted), fitted, f"calibrated profile ({op}, {family}, {devices} devices)"
    return lower, upper, "spec sheet"


def collective_bytes_per_element(dep: Deployment) -> float:
    """Bytes per activation element on the wire: the compute dtype's on TPUs (the book's int8 collectives),
    at least 16-bit on GPUs, whose engines all-reduce activations in bf16/fp16 even around fp8 or int8 GEMMs."""
    width = dep.precision.activation_bytes
    return width if dep.hw.kind == "tpu" else max(width, 2.0)


def stage_comms(
    dep: Deployment, tokens: ArrayLike, decode_seqs: ArrayLike, layers: float, group_tokens: ArrayLike | None = None
) -> CommsTerms:
    """Collectives of ``layers`` layers of one tp group processing ``tokens`` (``decode_seqs`` decoding); with
    attention data-parallel ranks, the MoE layers' exchange of the stage's ``group_tokens`` over its chips."""
    par, m = dep.par, dep.model
    if par.attention_dp > 1:
        return data_parallel_comms(dep, tokens, decode_seqs, layers, tokens if group_tokens is None else group_tokens)
    if not par.explicit or par.tp == 1:
        zero = np.zeros_like(np.asarray(tokens, dtype=float))
        return CommsTerms(zero, zero, zero, NO_COMMS)
    from roofline.deploy import fabric

    act = collective_bytes_per_element(dep)
    layout = fabric.tp_layout(dep.hw, par.tp, par.topology_text)
    ar_bytes = np.multiply(tokens, m.d_model * act)
    ar_lo, ar_t, ar_src = _op_time(dep, layout, "allreduce", ar_bytes, par.tp)
    q_bytes = sharding.attention_query_bytes(decode_seqs, m.num_heads, m.head_dim, act)
    a2a_count: Number = float(sharding.attention_alltoalls_per_layer(m.num_kv_heads, par.tp))
    a2a_lo, a2a_t, _ = _op_time(dep, layout, "alltoall", q_bytes, par.tp) if a2a_count else (0.0, 0.0, "")
    if a2a_count:  # only where the step has decode queries to exchange (none in a prefill-only step)
        a2a_count = np.where(np.asarray(decode_seqs) > 0, a2a_count, 0.0)
    ars = allreduces_per_layer(dep)
    moe_layers = memory.moe_layer_count(m) * layers / m.num_layers
    dense_layers = layers - moe_layers
    if par.ep > 1 and moe_layers:
        ep_layout = fabric.tp_layout(dep.hw, par.ep, par.topology_text)
        routed = np.multiply(tokens, m.experts_per_token * m.d_model * act)
        d_lo, d_t, _ = _op_time(dep, ep_layout, "alltoall", routed, par.ep)
        moe_lo = ar_lo + 2.0 * d_lo + a2a_count * a2a_lo
        moe_t = ar_t + 2.0 * d_t + a2a_count * a2a_t
    else:
        moe_lo = ars * ar_lo + a2a_count * a2a_lo
        moe_t = ars * ar_t + a2a_count * a2a_t
    dense_lo = ars * np.asarray(ar_lo) + a2a_count * np.asarray(a2a_lo)
    dense_t = ars * np.asarray(ar_t) + a2a_count * np.asarray(a2a_t)
    lower = dense_layers * dense_lo + moe_layers * np.asarray(moe_lo)
    time = dense_layers * dense_t + moe_layers * np.asarray(moe_t)
    moved = layers * (ars * ar_bytes + a2a_count * q_bytes)
    source = f"{fabric.PART3}; {layout.describe(dep.hw)}; {ar_src}"
    moe_share = moe_layers / layers if (par.ep > 1 and layers) else 0.0
    steps = layers * ring_steps_per_layer(par.tp, a2a_count, ars, par.ep, moe_share)
    allreduces = dense_layers * ars + moe_layers * (1.0 if par.ep > 1 and moe_layers else ars)
    from roofline.formulas.collectives import bus_bytes  # ring all-reduce: 2(n−1)/n of the message a chip

    wire = allreduces * bus_bytes("allreduce", np.asarray(ar_bytes, dtype=float), np.asarray(float(par.tp)))
    moe_time = moe_layers * (2.0 * np.asarray(d_t)) if par.ep > 1 and moe_layers else 0.0
    return CommsTerms(lower, time, moved, source, steps, ar_bytes, wire, moe_time)


def data_parallel_comms(
    dep: Deployment, tokens: ArrayLike, decode_seqs: ArrayLike, layers: float, group_tokens: ArrayLike
) -> CommsTerms:
    """Collectives of ``layers`` layers of a stage of attention data-parallel ranks (one of them processing
    ``tokens``, the stage ``group_tokens``).

    Each rank all-reduces its attention output [T, D] over its tp chips (and its dense MLP's, in dense layers);
    an MoE layer exchanges the stage's tokens over all its chips instead of the MLP all-reduce: with whole
    experts per chip (moe_tp = 1) a dispatch and a combine all-to-all of the routed tokens [T_stage·k, D] over
    ep chips (DeepEP, TensorRT-LLM's wide-EP all-to-all); with experts split moe_tp ways an all-gather of
    [T_stage, D] and a reduce-scatter of the partial outputs over the stage's chips (TensorRT-LLM attention DP).
    """
    par, m = dep.par, dep.model
    from roofline.deploy import fabric

    act = collective_bytes_per_element(dep)
    zero = np.zeros_like(np.asarray(np.add(tokens, group_tokens), dtype=float))
    ar_bytes = np.multiply(tokens, m.d_model * act)
    ars = allreduces_per_layer(dep)
    ar_lo, ar_t, ar_src = zero, zero, "no tp all-reduce (tp 1)"
    if par.tp > 1:
        layout = fabric.tp_layout(dep.hw, par.tp, par.topology_text)
        ar_lo, ar_t, ar_src = _op_time(dep, layout, "allreduce", ar_bytes, par.tp)
        ar_src = f"tp all-reduce over {layout.describe(dep.hw)}: {ar_src}"
    moe_layers = memory.moe_layer_count(m) * layers / m.num_layers
    dense_layers = layers - moe_layers
    if par.moe_tp == 1:
        ops, devices = (("alltoall", "alltoall"), par.ep)
        moe_bytes = np.multiply(group_tokens, m.experts_per_token * m.d_model * act)
    else:
        ops, devices = (("allgather", "reducescatter"), par.moe_chips)
        moe_bytes = np.multiply(group_tokens, m.d_model * act)
    moe_layout = fabric.tp_layout(dep.hw, devices, par.topology_text)
    moe_lo, moe_t, sources = zero, zero, []
    for op in ops:
        lo, t, src = _op_time(dep, moe_layout, op, moe_bytes, devices)
        moe_lo, moe_t = moe_lo + lo, moe_t + t
        sources.append(f"{op} over {moe_layout.describe(dep.hw)}: {src}")
    lower = dense_layers * ars * np.asarray(ar_lo) + moe_layers * (np.asarray(ar_lo) + moe_lo)
    time = dense_layers * ars * np.asarray(ar_t) + moe_layers * (np.asarray(ar_t) + moe_t)
    allreduces = (dense_layers * ars + moe_layers) if par.tp > 1 else 0.0
    moved = allreduces * ar_bytes + moe_layers * len(ops) * moe_bytes
    tp_steps = 2.0 * (par.tp - 1) * allreduces
    steps = tp_steps + moe_layers * len(ops) * (devices - 1)
    from roofline.formulas.collectives import bus_bytes

    wire = allreduces * bus_bytes("allreduce", np.asarray(ar_bytes, dtype=float), np.asarray(float(par.tp)))
    source = f"{fabric.PART3}; {ar_src}; MoE {' + '.join(sources)}"
    return CommsTerms(lower, time, moved, source, steps, ar_bytes, wire, moe_layers * moe_t)


def pipeline_send_time_s(dep: Deployment, tokens: ArrayLike) -> Number:
    """One stage-to-stage send of [T, D] activations: hop latency + bytes / link (scale-out past a domain)."""
    if dep.par.pp == 1:
        return np.zeros_like(np.asarray(tokens, dtype=float))
    hw = dep.hw
    nbytes = np.multiply(tokens, dep.model.d_model * collective_bytes_per_element(dep))
    domain = hw.max_ici_domain_chips
    if domain and dep.par.group_chips > domain and hw.dcn_bandwidth_bytes_per_s:
        return (hw.dcn_latency_s or 0.0) + nbytes / hw.dcn_bandwidth_bytes_per_s
    return hw.ici_hop_latency_s + nbytes / hw.ici_bandwidth_bytes_per_s
