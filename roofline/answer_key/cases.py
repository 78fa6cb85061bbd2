"""The answer key's record types: a worked number (``Case``), its check (``Row``), and the book's chip numbers.

Shared by the single-chip key (:mod:`.book`) and the multi-chip key (:mod:`.multichip`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

# The book's TPU v5e numbers (chapter tables): FLOP/s, HBM bandwidth, one-way ICI link.
V5E_BF16 = 1.97e14
V5E_INT8 = 3.94e14
V5E_HBM_BW = 8.2e11
V5E_ICI_BW = 4.5e10
V5E_HOP_S = 1e-6
# NVIDIA H100 SXM sheet: dense bf16 and HBM3 bandwidth.
H100_BF16 = 9.89e14
H100_HBM_BW = 3.35e12

BATCHES = (1, 8, 16, 32, 64, 240)


@dataclass(frozen=True)
class Case:
    """One worked number: what the book says and how to recompute it."""

    id: str
    description: str
    expected: float
    compute: Callable[[], float]
    unit: str
    tolerance: float = 0.01
    exact: float | None = None
    note: str = ""
    derived: bool = False


@dataclass(frozen=True)
class Row:
    """A checked case, as printed by ``roofline textbook``."""

    id: str
    description: str
    expected: float
    computed: float
    unit: str
    rel_error: float
    tolerance: float
    passed: bool
    exact: float | None
    note: str
    derived: bool

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["pass"] = out.pop("passed")
        return out


_EXTRA: list[Callable[[], Iterable[Case]]] = []


def register(provider: Callable[[], Iterable[Case]]) -> Callable[[], Iterable[Case]]:
    """Add a provider of more cases (used by the sharding/serving answer keys)."""
    _EXTRA.append(provider)
    return provider


def check(case: Case) -> Row:
    """Recompute a case and compare with ``exact`` when given, else with the book's value."""
    computed = float(case.compute())
    target = case.exact if case.exact is not None else case.expected
    rel = abs(computed - target) / abs(target) if target else abs(computed)
    return Row(
        id=case.id,
        description=case.description,
        expected=case.expected,
        computed=computed,
        unit=case.unit,
        rel_error=rel,
        tolerance=case.tolerance,
        passed=rel <= case.tolerance,
        exact=case.exact,
        note=case.note,
        derived=case.derived,
    )
