"""Failure headroom: how many replicas a plan adds so its SLOs hold with k replicas or k nodes down.

A node is the unit that fails together (a server: 8 GPUs on one HGX baseboard).  Replicas are packed
onto nodes in order, so a node failure takes out every replica with a chip on it: N/c replicas of c
chips when c divides the node's N chips, one when N divides c, and at most ⌈(N-1)/c⌉ + 1 otherwise
(a node overlapping a run of c-chip replicas).  With k nodes down at most k times that many are lost;
the plan provisions the replicas its load needs plus that loss, so the survivors still meet the SLOs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError, shown
from roofline.specs import HardwareSpec


@dataclass(frozen=True)
class Spares:
    """Failure headroom: ``replicas`` replicas or ``nodes`` nodes may be down (the larger loss is covered).

    ``node_chips`` overrides each chip's node size (default: its scale-up domain, see :func:`node_size`).
    """

    replicas: int = 0
    nodes: int = 0
    node_chips: int | None = None

    def __post_init__(self) -> None:
        for name in ("replicas", "nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise OptionError(
                    f"spare_{name} must be a whole number >= 0 (got {shown(value)})", parameters=(f"spare_{name}",)
                )
        if self.node_chips is not None and (
            isinstance(self.node_chips, bool) or not isinstance(self.node_chips, int) or self.node_chips < 1
        ):
            raise OptionError(
                f"node_chips must be a whole number >= 1 (got {self.node_chips!r})", parameters=("node_chips",)
            )

    @property
    def any(self) -> bool:
        return self.replicas > 0 or self.nodes > 0


def node_size(hw: HardwareSpec, override: int | None = None) -> tuple[int, str]:
    """(chips per node, where that number comes from): the override, else the chip's scale-up domain
    (``max_ici_domain_chips``: one 8-GPU HGX/MI300X server; a TPU pod or an NVL72 rack is larger than a
    host, so give the host size there), else 1 (a chip with no domain fails alone)."""
    if override is not None:
        return override, f"{override} chips per node (given)"
    if hw.max_ici_domain_chips:
        return hw.max_ici_domain_chips, (
            f"{hw.max_ici_domain_chips} chips per node: {hw.name}'s scale-up domain (max_ici_domain_chips)"
        )
    return 1, f"1 chip per node: {hw.name} has no scale-up domain (max_ici_domain_chips)"


def replicas_per_node(chips_per_replica: ArrayLike, node_chips: ArrayLike) -> np.ndarray:
    """Replicas one node failure takes out: N/c if c | N, 1 if N | c, else ⌈(N-1)/c⌉ + 1 (packed in order)."""
    c = np.asarray(chips_per_replica, dtype=np.int64)
    n = np.broadcast_to(np.asarray(node_chips, dtype=np.int64), c.shape)
    overlap = -(-(n - 1) // c) + 1
    return np.where(n % c == 0, n // c, np.where(c % n == 0, 1, overlap))


def replicas_lost(chips_per_replica: ArrayLike, node_chips: ArrayLike, spares: Spares) -> np.ndarray:
    """Replicas the plan adds: max(k replicas, k nodes × replicas per node)."""
    per_node = replicas_per_node(chips_per_replica, node_chips)
    return np.maximum(spares.replicas, spares.nodes * per_node)


def describe(spares: Spares) -> str:
    """'1 node down' / '2 replicas down' / '1 replica or 1 node down' for messages and sources."""
    parts = []
    if spares.replicas:
        parts.append(f"{spares.replicas} replica{'s' * (spares.replicas != 1)}")
    if spares.nodes:
        parts.append(f"{spares.nodes} node{'s' * (spares.nodes != 1)}")
    return " or ".join(parts) + " down" if parts else "no failure headroom"


def check_spares_below(spares: Spares, max_replicas: int | None, where: str = "") -> None:
    """Refuse k spare replicas at or above the replicas allowed: with k down, none would serve."""
    if max_replicas is not None and spares.replicas >= max_replicas:
        allowed = f"{where} allows {max_replicas}" if where else f"max_replicas={max_replicas}"
        raise OptionError(
            f"spare_replicas: {spares.replicas} must be below the replicas allowed ({allowed}): with that many "
            "down none would serve",
            parameters=("spare_replicas", "max_replicas"),
        )
