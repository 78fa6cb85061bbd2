"""Parallelism of a deployment, parsed once: tensor (tp), pipeline (pp), expert (ep), attention
data-parallel (attention_dp), replicas.

A slice of N chips holds N / (tp·attention_dp·pp) model replicas; each replica is a pipeline of pp
stages, each stage an MoE group of tp·attention_dp chips.  Attention (and every dense part: dense MLP
layers, shared experts, embeddings, LM head) runs tensor-parallel over tp chips and data-parallel over
the attention_dp ranks of a stage, each rank holding its own sequences and their KV.  ``ep`` spreads
the routed experts of an MoE layer over ep of the stage's chips, each expert split moe_tp =
tp·attention_dp / ep ways.  ``--ep E`` with E a multiple of tp means attention_dp = E / tp (the way
SGLang and TensorRT-LLM serve DeepSeek: ``--tp 1 --ep 8`` on 8 chips); ep dividing tp keeps
attention_dp = 1 and splits each expert tp/ep ways, as before.  Without an explicit tp the whole slice
is one idealised group with no collectives, as in the book's tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError, shown
from roofline.deploy import topology


@dataclass(frozen=True)
class Parallelism:
    """tp, pp, ep and attention-DP degrees; whether tp was asked for (collectives) and the slice's torus axes."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    explicit: bool = False
    topology_text: str | None = None
    attention_dp: int = 1

    @property
    def moe_chips(self) -> int:
        """Chips of one pipeline stage (its MoE group): tp·attention_dp."""
        return self.tp * self.attention_dp

    @property
    def moe_tp(self) -> int:
        """Tensor split of each routed expert: the stage's chips / ep (TensorRT-LLM's moe_tp_size)."""
        return self.moe_chips // self.ep

    @property
    def group_chips(self) -> int:
        """Chips of one model replica: tp·attention_dp·pp (an idealised slice is handled by the caller)."""
        return self.moe_chips * self.pp

    def describe(self) -> str:
        """'tp 4 x pp 2 x ep 4' or 'tp 1 x attention-dp 8 x ep 8 (moe-tp 1)' in words (the idealised slice
        when no tp was given)."""
        if not self.explicit:
            return "one idealised group (no tp given: no collectives, as in the book's tables)"
        parts = (
            [f"tp {self.tp}"]
            + ([f"attention-dp {self.attention_dp}"] if self.attention_dp > 1 else [])
            + ([f"pp {self.pp}"] if self.pp > 1 else [])
            + ([f"ep {self.ep}"] if self.ep > 1 else [])
        )
        moe = f" (moe-tp {self.moe_tp})" if self.attention_dp > 1 else ""
        return " x ".join(parts) + moe


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
    attention_dp: int | None = None,
) -> Parallelism:
    """Validate tp/pp/ep/attention_dp against the chips and the model; a topology's chips form the tp group."""
    sizes = topology.parse_topology(topology_text) if topology_text else None
    if sizes is not None and tp is None:
        tp = topology.topology_chips(sizes)
    tp_d, pp_d, ep_d = _degree(tp, "tp"), _degree(pp, "pp"), _degree(ep, "ep")
    check_expert_degree(ep_d, num_experts)
    dp_d = attention_dp_for(tp_d, ep_d, attention_dp, num_experts)
    chips_arr = np.asarray(chips, dtype=float)
    if sizes is not None and np.any(chips_arr != topology.topology_chips(sizes)):
        raise OptionError(
            f"topology_text={topology_text} has {topology.topology_chips(sizes)} chips, not chips={shown(chips)}",
            parameters=("topology_text", "chips"),
        )
    explicit = tp is not None or pp is not None or ep is not None or attention_dp is not None
    group = tp_d * dp_d * pp_d
    if np.any(np.mod(chips_arr, group) != 0):
        per = _per_replica(tp_d, dp_d, pp_d)
        if attention_dp is None and dp_d > 1:
            per = f"ep={ep_d} ({per})"
        raise OptionError(f"{per} must divide chips={shown(chips)}", parameters=_named(dp_d))
    if ep_d > 1 and (tp_d * dp_d) % ep_d:
        stage = f"tp={tp_d}" if dp_d == 1 else f"tp={tp_d} x attention_dp={dp_d} = {tp_d * dp_d} chips"
        fits = [e for e in _divisors(tp_d * dp_d) if num_experts % e == 0]
        raise OptionError(
            f"ep={ep_d} must divide {stage} (the chips a stage spreads its experts over); allowed: "
            f"{', '.join(map(str, fits))}",
            parameters=("ep", "tp", "attention_dp"),
        )
    return Parallelism(tp_d, pp_d, ep_d, explicit, topology_text, dp_d)


def check_expert_degree(ep: int, num_experts: int) -> None:
    """An expert-parallel degree above 1 needs routed experts, and must divide them (whole experts per chip)."""
    if ep <= 1:
        return
    if num_experts <= 1:
        raise OptionError(f"ep={ep}: the model has no routed experts (ep needs an MoE model)", parameters=("ep",))
    if num_experts % ep:
        raise OptionError(
            f"ep={ep} does not divide the model's {num_experts} routed experts; allowed: a divisor of "
            f"{num_experts} ({', '.join(map(str, _divisors(num_experts)))})",
            parameters=("ep",),
        )


def _divisors(n: int) -> list[int]:
    """The divisors of n in increasing order (n is a model's expert count or a stage's chips)."""
    return [d for d in range(1, n + 1) if n % d == 0]


def attention_dp_for(tp: int, ep: int, attention_dp: int | None, num_experts: int) -> int:
    """Attention data-parallel ranks: as given, else ep / tp where ep exceeds tp (tp must divide it), else 1."""
    if attention_dp is not None:
        dp = _degree(attention_dp, "attention_dp")
        if dp > 1 and num_experts <= 1:
            raise OptionError(
                f"attention_dp={dp}: the model has no routed experts, so attention data-parallel changes nothing "
                f"(its {dp} ranks would share no weights); give tp={tp} and {dp}x the chips for {dp} plain replicas",
                parameters=("attention_dp", "tp"),
            )
        return dp
    if ep <= tp:
        return 1
    if ep % tp:
        raise OptionError(
            f"ep={ep} must divide tp={tp} or be a multiple of it (attention data-parallel over ep / tp ranks)",
            parameters=("ep", "tp"),
        )
    return ep // tp


def _per_replica(tp: int, dp: int, pp: int) -> str:
    """'tp=4', 'tp=4 x pp=2 = 8 chips per replica' or 'tp=1 x attention_dp=8 = 8 chips per replica'."""
    if dp == 1 and pp == 1:
        return f"tp={tp}"
    parts = [f"tp={tp}"] + ([f"attention_dp={dp}"] if dp > 1 else []) + ([f"pp={pp}"] if pp > 1 else [])
    return f"{' x '.join(parts)} = {tp * dp * pp} chips per replica"


def _named(dp: int) -> tuple[str, ...]:
    return ("tp", "pp", "chips") if dp == 1 else ("tp", "ep", "attention_dp", "pp", "chips")


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
