"""Per-chip rates (kept for the Python API): see :mod:`roofline.deploy.rates`."""

from __future__ import annotations

from .deploy.rates import Rates as ChipRates
from .deploy.rates import chip_rates

__all__ = ["ChipRates", "chip_rates"]
