"""Parallelism of a deployment, parsed once: tensor (tp), pipeline (pp), expert (ep), replicas.

A slice of N chips holds N / (tp·pp) model replicas; each replica is tp·pp chips, a pipeline of
pp stages of tp chips.  ``ep`` splits the routed experts of an MoE layer over ep of a stage's tp
chips (ep divides tp); the rest of the layer stays tensor-parallel.  Without an explicit tp the
whole slice is one idealised group with no collectives, as in the book's tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError, shown
from roofline.deploy import topology


@dataclass(frozen=True)
class Parallelism:
    """tp, pp, ep degrees; whether tp was asked for (collectives) and the slice's torus axes."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    explicit: bool = False
    topology_text: str | None = None

    @property
    def group_chips(self) -> int:
        """Chips of one model replica: tp·pp (an idealised slice is handled by the caller)."""
        return self.tp * self.pp

    def describe(self) -> str:
        """'tp 4 x pp 2, ep 4' in words (the idealised slice when no tp was given)."""
        if not self.explicit:
            return "one idealised group (no tp given: no collectives, as in the book's tables)"
        parts = (
            [f"tp {self.tp}"] + ([f"pp {self.pp}"] if self.pp > 1 else []) + ([f"ep {self.ep}"] if self.ep > 1 else [])
        )
        return " x ".join(parts)


def _degree(value: int | None, option: str) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or int(value) != value or value < 1 or value > 1 << 20:
        raise OptionError(
            f"{option} must be a whole number from 1 to {1 << 20} (got {shown(value)})", parameters=(option,)
        )
    return int(value)


def parallelism(
    chips: ArrayLike,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    topology_text: str | None = None,
    num_experts: int = 1,
) -> Parallelism:
    """Validate tp/pp/ep against the chips and the model; a topology's chips form the tp group."""
    sizes = topology.parse_topology(topology_text) if topology_text else None
    if sizes is not None and tp is None:
        tp = topology.topology_chips(sizes)
    tp_d, pp_d, ep_d = _degree(tp, "tp"), _degree(pp, "pp"), _degree(ep, "ep")
    chips_arr = np.asarray(chips, dtype=float)
    if sizes is not None and np.any(chips_arr != topology.topology_chips(sizes)):
        raise OptionError(
            f"topology_text={topology_text} has {topology.topology_chips(sizes)} chips, not chips={shown(chips)}",
            parameters=("topology_text", "chips"),
        )
    explicit = tp is not None or pp is not None or ep is not None
    if np.any(np.mod(chips_arr, tp_d * pp_d) != 0):
        per = f"tp={tp_d}" if pp_d == 1 else f"tp={tp_d} x pp={pp_d} = {tp_d * pp_d} chips per replica"
        raise OptionError(f"{per} must divide chips={shown(chips)}", parameters=("tp", "pp", "chips"))
    if ep_d > 1:
        if num_experts <= 1:
            raise OptionError(f"ep={ep_d}: the model has no routed experts (ep needs an MoE model)", parameters=("ep",))
        if tp_d % ep_d or num_experts % ep_d:
            raise OptionError(f"ep={ep_d} must divide tp={tp_d} and the {num_experts} experts", parameters=("ep", "tp"))
    return Parallelism(tp_d, pp_d, ep_d, explicit, topology_text)


def replicas(par: Parallelism, chips: ArrayLike) -> np.ndarray:
    """Model replicas in the slice: chips / (tp·pp) with an explicit layout, else 1 (idealised)."""
    chips_arr = np.asarray(chips, dtype=float)
    if not par.explicit:
        return np.ones_like(chips_arr)
    return chips_arr / par.group_chips


def replica_loads(batch: ArrayLike, replicas: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(⌈B/r⌉, ⌊B/r⌋, how many replicas hold ⌈B/r⌉): B whole sequences dealt over r replicas, the
    busiest B mod r holding one more (one replica holds B, and none is counted busier)."""
    r = np.asarray(replicas, dtype=float)
    share = np.divide(batch, r)
    many = r > 1.0
    busiest = np.where(many, np.ceil(share), share)
    quietest = np.where(many, np.floor(share), share)
    return busiest, quietest, np.subtract(batch, r * quietest)
