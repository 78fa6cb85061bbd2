"""What an explanation is: one number with its formula, the values substituted, whether it binds,
and the book section it comes from; the section names and small helpers the explainers share."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from roofline.analyses.step import BOOK
from roofline.deploy import Deployment
from roofline.terms.comms import allreduces_per_layer

S_MEMORY = f"{BOOK}, 'What about memory?'"
S_LATENCY = f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'"
S_LINEAR = f"{BOOK}, 'Linear operations: what bottlenecks us?'"
S_ATTENTION = f"{BOOK}, 'What about attention?'"
S_PREFILL = f"{BOOK}, 'Distributing inference over multiple accelerators: Prefill'"
S_DISAGG = f"{BOOK}, 'Designing an effective inference engine'"
S_SHARD = f"{BOOK}, 'Distributing inference over multiple accelerators: Generation'"


@dataclass(frozen=True)
class Term:
    """One value substituted into a formula: its symbol, SI value and unit."""

    symbol: str
    value: float
    unit: str


@dataclass(frozen=True)
class Explanation:
    """One number: name, value, unit, formula, substituted terms, whether it binds, book section."""

    name: str
    value: float
    unit: str
    formula: str
    terms: tuple[Term, ...]
    section: str
    binding: bool = False
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _f(value: object) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _group_note(dep: Deployment) -> str:
    replicas = _f(dep.replicas)
    if replicas == 1:
        return ""
    return f" (per replica: {replicas:g} replicas of {_f(dep.group_chips):g} chips)"


def _allreduces(dep: Deployment) -> str:
    """'2', or '1' for a parallel attention/MLP block the engine fuses (the step model's count, as text)."""
    return f"{allreduces_per_layer(dep):g}"
