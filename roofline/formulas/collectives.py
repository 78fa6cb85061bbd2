"""Collective-communication estimators (AllGather, ReduceScatter, AllReduce, AllToAll).

Formulas follow How to Scale Your Model, part 3 (sharded matrices and collectives) as used
in part 7's appendix C ("latency-bound communication").  Conventions:

* ``total_bytes`` is the book's V: the whole array (after the gather, before the scatter,
  the buffer being reduced), so each of N chips holds a V/N shard.
* A ring collective runs in steps; each step moves one V/N shard over a link and costs one
  hop latency.  A ring with wraparound runs both directions at once: (N-1)/2 steps and
  2 links' worth of one-way bandwidth per chip; without wraparound (or through a switch,
  NCCL's ring) N-1 steps over one link.  So the bandwidth term is the bytes each chip must
  receive, V·(N-1)/N, over its usable bandwidth (-> the book's V/(2·W_ici) per wrapped axis,
  V/W_ici without), and the latency term is steps × hop latency (the book's T_min·|X|/2).
  With these, a 1D collective is latency-bound exactly when (V/N)/W < T_hop (appendix C).
* A collective over several torus axes uses the links of all of them: bandwidths add, the
  per-axis step counts add.
* Time = max(latency, bandwidth) is the lower bound (perfect pipelining), their sum the
  upper bound.  AllReduce = ReduceScatter + AllGather (twice an AllGather); AllToAll moves a
  quarter of an AllGather's bytes on a ring/torus (book part 3) and 1/N of them through a
  full-bisection switch (each chip sends (N-1)/N of its V/N shard).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError
from roofline.model.memory import Number

#: The collectives these estimators cover, as the CLI spells them.
OPS = ("allgather", "reducescatter", "allreduce", "alltoall")


@dataclass(frozen=True)
class CollectiveTime:
    """Latency and bandwidth terms of one collective; lower bound max(), upper bound sum."""

    bandwidth_time_s: Number
    latency_time_s: Number

    @property
    def time_s(self) -> Number:
        """Lower bound: latency and bandwidth fully pipelined, max(latency, bandwidth)."""
        return np.maximum(self.bandwidth_time_s, self.latency_time_s)

    @property
    def time_upper_s(self) -> Number:
        """Upper bound: no overlap, latency + bandwidth."""
        return np.add(self.bandwidth_time_s, self.latency_time_s)

    @property
    def latency_bound(self) -> Number:
        """Latency term ≥ bandwidth term (and a collective happens at all: one device has neither)."""
        lat = np.asarray(self.latency_time_s)
        return np.greater_equal(lat, self.bandwidth_time_s) & (lat > 0)


def latency_bound_bytes(
    num_shards: ArrayLike, link_bandwidth_bytes_per_s: ArrayLike, hop_latency_s: ArrayLike
) -> Number:
    """Largest buffer whose per-shard transfer fits in one hop: n_shards · W_ici · T_hop (360 kB, 8-way v5e)."""
    return np.multiply(np.multiply(num_shards, link_bandwidth_bytes_per_s), hop_latency_s)


def is_latency_bound(
    total_bytes: ArrayLike,
    num_shards: ArrayLike,
    link_bandwidth_bytes_per_s: ArrayLike,
    hop_latency_s: ArrayLike,
) -> np.ndarray:
    """True where (bytes / n_shards) / W_ici < T_hop (the book's appendix C criterion)."""
    per_shard_time = np.divide(total_bytes, num_shards) / np.asarray(link_bandwidth_bytes_per_s)
    return np.less(per_shard_time, hop_latency_s)


def latency_bound_model_parallelism(
    activation_bytes: ArrayLike, link_bandwidth_bytes_per_s: ArrayLike, hop_latency_s: ArrayLike
) -> Number:
    """Y above which a Y-way activation collective is latency-bound: Y > B·D·bytes/(W·T_hop) (BD/45,000 int8 v5e)."""
    return np.divide(activation_bytes, np.multiply(link_bandwidth_bytes_per_s, hop_latency_s))


def bus_factor(op: str, num_devices: ArrayLike) -> Number:
    """Bytes each device moves over its link, as a multiple of the buffer V, in a ring: all-reduce
    2(n-1)/n (a reduce-scatter, then an all-gather), the others (n-1)/n (book part 3; nccl-tests' bus bandwidth)."""
    n = num_devices if isinstance(num_devices, np.ndarray) else np.asarray(num_devices)
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    return (n - 1) / n


def bus_bytes(op: str, message_bytes: ArrayLike, num_devices: ArrayLike) -> Number:
    """Per-device link bytes of a collective of buffer V: :func:`bus_factor` × V."""
    return bus_factor(op, num_devices) * np.asarray(message_bytes)


def ring_hops(op: str, num_devices: ArrayLike) -> Number:
    """Peer-to-peer steps of a ring collective without wraparound: 2(n-1) for an all-reduce, n-1 otherwise."""
    n = num_devices if isinstance(num_devices, np.ndarray) else np.asarray(num_devices)
    return 2 * (n - 1) if op == "allreduce" else n - 1


def ring_steps(num_devices: ArrayLike, wraparound: bool) -> Number:
    """Steps of a ring AllGather: (N-1)/2 bidirectional with wraparound, N-1 without (book part 3)."""
    n = np.asarray(num_devices, dtype=float)
    return (n - 1.0) / 2.0 if wraparound else n - 1.0


def ring_bandwidth_bytes_per_s(link_bandwidth_bytes_per_s: ArrayLike, wraparound: bool) -> Number:
    """Usable one-way bandwidth per chip on one ring axis: 2·W_link with wraparound, W_link without."""
    return np.multiply(link_bandwidth_bytes_per_s, 2.0 if wraparound else 1.0)


def torus_bandwidth_bytes_per_s(
    axis_sizes: tuple[int, ...], wraps: tuple[bool, ...], link_bandwidth_bytes_per_s: float
) -> float:
    """Usable one-way bandwidth per chip over several torus axes: Σ over axes of size > 1 (book part 3)."""
    return sum(
        float(ring_bandwidth_bytes_per_s(link_bandwidth_bytes_per_s, wrap))
        for size, wrap in zip(axis_sizes, wraps, strict=True)
        if size > 1
    )


def gather_bytes_per_chip(total_bytes: ArrayLike, num_devices: ArrayLike) -> Number:
    """Bytes each chip receives in an AllGather of V over N: V·(N-1)/N."""
    return np.multiply(total_bytes, bus_factor("allgather", np.asarray(num_devices, dtype=float)))


def torus_allgather(
    total_bytes: ArrayLike,
    axis_sizes: tuple[int, ...],
    wraps: tuple[bool, ...],
    link_bandwidth_bytes_per_s: float,
    hop_latency_s: float,
) -> CollectiveTime:
    """AllGather over torus axes: V·(N-1)/N / Σ axis bandwidths, Σ axis steps × T_hop (book part 3)."""
    used = [(size, wrap) for size, wrap in zip(axis_sizes, wraps, strict=True) if size > 1]
    zero = np.multiply(total_bytes, 0.0)
    if not used:
        return CollectiveTime(zero, zero)
    n = float(np.prod([size for size, _ in used]))
    bandwidth = torus_bandwidth_bytes_per_s(axis_sizes, wraps, link_bandwidth_bytes_per_s)
    steps = sum(float(ring_steps(size, wrap)) for size, wrap in used)
    return CollectiveTime(gather_bytes_per_chip(total_bytes, n) / bandwidth, zero + steps * hop_latency_s)


def switch_allgather(
    total_bytes: ArrayLike,
    num_devices: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    hop_latency_s: ArrayLike,
) -> CollectiveTime:
    """AllGather through a switch (NVLink/NVSwitch, DCN, InfiniBand): V·(N-1)/N / W, (N-1) × latency (ring)."""
    steps = ring_steps(num_devices, wraparound=False)
    return CollectiveTime(
        gather_bytes_per_chip(total_bytes, num_devices) / np.asarray(bandwidth_bytes_per_s, dtype=float),
        np.multiply(steps, hop_latency_s) + np.multiply(total_bytes, 0.0),
    )


def switch_collective(
    op: str, total_bytes: ArrayLike, num_devices: ArrayLike, bandwidth_bytes_per_s: ArrayLike, hop_latency_s: ArrayLike
) -> CollectiveTime:
    """``op`` over V through a switch (NVLink/NVSwitch, DCN, InfiniBand): the ring AllGather
    (:func:`switch_allgather`) turned into the op (:func:`collective_from_allgather`)."""
    allgather = switch_allgather(total_bytes, num_devices, bandwidth_bytes_per_s, hop_latency_s)
    return collective_from_allgather(op, allgather, num_devices, switched=True)


def two_level_allgather(inner: CollectiveTime, outer: CollectiveTime) -> CollectiveTime:
    """Hierarchical AllGather: across nodes (V/domain per chip), then inside the domain; phases add."""
    return CollectiveTime(
        np.add(inner.bandwidth_time_s, outer.bandwidth_time_s),
        np.add(inner.latency_time_s, outer.latency_time_s),
    )


def alltoall_fraction(num_devices: ArrayLike, switched: bool) -> Number:
    """AllToAll bytes as a fraction of an AllGather's: 1/4 on a ring/torus (book part 3), 1/N through a switch."""
    if switched:
        return 1.0 / np.asarray(num_devices, dtype=float)
    return 0.25 + 0.0 * np.asarray(num_devices, dtype=float)


def collective_from_allgather(
    op: str, allgather: CollectiveTime, num_devices: ArrayLike, switched: bool
) -> CollectiveTime:
    """Each op from the AllGather of the same V: RS = AG, AllReduce = 2·AG, AllToAll = fraction·AG bytes."""
    if op in ("allgather", "reducescatter"):
        return allgather
    if op == "allreduce":
        return CollectiveTime(2.0 * np.asarray(allgather.bandwidth_time_s), 2.0 * np.asarray(allgather.latency_time_s))
    if op == "alltoall":
        fraction = alltoall_fraction(num_devices, switched)
        return CollectiveTime(np.multiply(allgather.bandwidth_time_s, fraction), allgather.latency_time_s)
    raise OptionError(f"op: unknown collective {op!r}; allowed: {', '.join(OPS)}", parameters=("op",))
