"""The memory of a step: what each replica holds (weights + its share of the sequences) against the
HBM it may fill, and what the slice holds.  Read by ``step`` and ``request`` (and the plan)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy import Deployment
from roofline.deploy.layout import replica_loads
from roofline.model import memory
from roofline.model.memory import Number
from roofline.terms.exact import times


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
    r, weights = dep.replicas, dep.held_weight_bytes
    one = loads is None and not np.any(np.not_equal(r, 1.0))  # one replica holds it all: the slice is it
    busiest = batch if one else (loads if loads is not None else replica_loads(batch, r))[0]
    top, top_usable = replica_need(dep, busiest, bytes_per_seq, tokens_per_seq, sampled_per_seq)
    return StepMemory(
        bytes_per_seq,
        busiest,
        top,
        top_usable,
        total_bytes=top if one else np.add(times(r, weights), times(dep.kv_copies, np.multiply(batch, bytes_per_seq))),
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
    the activations of its step of n·tokens tokens, n·sampled of them sampled).

    With attention data-parallel ranks every rank is counted as full as the busiest (n = dp·⌈seqs/dp⌉:
    a chip holds its rank's sequences), P the weights it holds (:attr:`Deployment.held_weight_bytes`),
    and each sequence's cache ``kv_copies`` times (MLA's latent on every tp chip)."""
    seqs = rank_seqs(dep, seqs)
    sampled = None if sampled_per_seq is None else np.multiply(seqs, sampled_per_seq)
    return (
        memory.total_memory_bytes(dep.held_weight_bytes, times(dep.kv_copies, np.multiply(seqs, bytes_per_seq))),
        dep.usable_hbm_bytes(np.multiply(seqs, tokens_per_seq), sampled),
    )


def rank_seqs(dep: Deployment, seqs: ArrayLike) -> Number:
    """Sequences a replica holds with each attention data-parallel rank as full as its busiest: dp·⌈n/dp⌉
    (n itself with one rank)."""
    dp = dep.par.attention_dp
    return seqs if dp == 1 else dp * np.ceil(np.divide(seqs, dp))


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
