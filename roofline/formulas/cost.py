"""Cost estimators: chip-hours to dollars per million tokens."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.units import HOUR_S
from roofline.model.memory import Number


def cost_per_million_tokens(price_per_chip_hour: ArrayLike, chips: ArrayLike, tokens_per_s: ArrayLike) -> Number:
    """$ per 1e6 tokens = chips · $/chip-hour / (tokens/s · 3600) · 1e6."""
    dollars_per_s = np.multiply(price_per_chip_hour, chips) / HOUR_S
    return dollars_per_s / np.asarray(tokens_per_s, dtype=float) * 1e6


def cost_per_hour(price_per_chip_hour: ArrayLike, chips: ArrayLike) -> Number:
    """$ per hour of a deployment: chips · $/chip-hour."""
    return np.multiply(price_per_chip_hour, chips)
