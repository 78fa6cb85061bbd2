"""Collective-communication estimators (AllGather, ReduceScatter, AllReduce, AllToAll).

Formulas follow How to Scale Your Model, part 3 (networking) as used in part 7's
appendix C ("latency-bound communication").
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .memory import Number


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
