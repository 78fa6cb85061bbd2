"""What real kernels reach on a chip: fractions of its peaks and the smallest kernel time (the honest spec sheet).

Light on purpose (no model imports): the deployment's rates read it on every start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Achievable:
    """What real kernels reach on a chip: fractions of its peaks and the smallest kernel time.

    ``hbm_fraction`` of peak HBM bytes/s; ``flops_fraction`` of peak FLOP/s per dtype (``default``
    for a dtype not listed); ``floor_s`` the time of the smallest kernel of a family (``default``
    for one not listed).  ``IDEAL`` (all fractions 1, no floor) is the book's roofline.
    """

    hbm_fraction: float = 1.0
    flops_fraction: Mapping[str, float] = field(default_factory=dict)
    floor_s: Mapping[str, float] = field(default_factory=dict)
    source: str = "ideal peaks (the book's roofline)"

    def flops(self, dtype: str) -> float:
        """The fraction of peak FLOP/s kernels of ``dtype`` reach (1 when not set)."""
        return float(self.flops_fraction.get(dtype, self.flops_fraction.get("default", 1.0)))

    def floor(self, family: str) -> float:
        """The least time of one kernel of ``family`` in seconds (0 when not set)."""
        return float(self.floor_s.get(family, self.floor_s.get("default", 0.0)))


IDEAL = Achievable()


def achievable_hw(hw: Any, achievable: Achievable, dtype: str) -> Any:
    """``hw`` at what kernels reach: peak FLOP/s x the fraction of ``dtype``, bandwidth x the HBM fraction."""
    return replace(
        hw, peak_flops=hw.peak_flops * achievable.flops(dtype), bandwidth=hw.bandwidth * achievable.hbm_fraction
    )
