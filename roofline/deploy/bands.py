"""Uncertainty bands: how far measured runs fall from predictions, per data tier, read from package data.

``roofline/data/bands.yaml`` (written by ``python -m roofline.calibrate.engine.bands``) holds, per
data tier and quantity, quantiles of log(measured / predicted) over held-out end-to-end rows.  A
deployment's tier (:func:`data_tier`) is what priced it: the spec sheet, calibrated kernels, or calibrated
kernels with a fitted engine entry.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.deploy.deployment import Deployment
from roofline.specs.files import read_yaml

BANDS_FILE = Path(__file__).resolve().parent.parent / "data" / "bands.yaml"
#: The data tiers, from least to most calibrated.
TIERS = ("spec sheet", "calibrated kernels", "fitted engine entry")
#: The quantities a band covers (latencies, and a rate whose pessimistic edge is its low one).
QUANTITIES = ("ttft_s", "tpot_s", "throughput")


@dataclass(frozen=True)
class Band:
    """Quantiles of log(measured / predicted) of one quantity in one tier, and what they rest on."""

    levels: tuple[float, ...]  # cumulative probabilities, increasing
    log_ratios: tuple[float, ...]  # the quantiles of log(measured / predicted) at those levels
    n: int
    coverage: float  # share of held-out rows the p10-p90 band covered, its bands fitted without their source
    coverage_by_source: tuple[tuple[str, float], ...] = ()  # the same per held-out source

    def quantile(self, level: float) -> float:
        """The ratio measured / predicted at cumulative probability ``level`` (interpolated in log)."""
        return float(np.exp(np.interp(level, self.levels, self.log_ratios)))


def data_tier(dep: Deployment) -> str:
    """The tier that priced ``dep``: spec sheet, calibrated kernels, or those with a fitted engine entry."""
    return tier_of(dep.rates.calibrated, dep.engine.active)


def tier_of(calibrated: bool, engine_active: bool) -> str:
    """Spec sheet without fitted kernels; calibrated kernels; and those with an engine entry on top."""
    if not calibrated:
        return TIERS[0]
    return TIERS[2] if engine_active else TIERS[1]


@functools.cache
def band_table() -> dict[str, dict[str, Band]]:
    """tier -> quantity -> Band, from the shipped file ({} when it has not been built)."""
    if not BANDS_FILE.is_file():
        return {}
    out: dict[str, dict[str, Band]] = {}
    for tier, quantities in (read_yaml(BANDS_FILE).get("tiers") or {}).items():
        out[str(tier)] = {
            str(q): Band(
                tuple(b["levels"]),
                tuple(b["log_ratios"]),
                int(b["n"]),
                float(b.get("coverage", np.nan)),
                tuple((str(k), float(v)) for k, v in (b.get("coverage_by_source") or {}).items()),
            )
            for q, b in quantities.items()
        }
    return out
