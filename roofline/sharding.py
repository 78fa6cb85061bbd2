"""Sharding estimators: how far model parallelism scales before the network binds.

Formulas follow "All About Transformer Inference" (part 7), section "Generation" under
"Distributing inference over multiple accelerators".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .memory import Number


def hbm_to_ici_ratio(hbm_bandwidth_bytes_per_s: ArrayLike, ici_bandwidth_bytes_per_s: ArrayLike) -> Number:
    """β = W_hbm / W_ici (about 8 on TPU v5e/v6e per the book)."""
    return np.divide(hbm_bandwidth_bytes_per_s, ici_bandwidth_bytes_per_s)


def max_model_parallelism_decode(d_ff: ArrayLike, batch: ArrayLike, beta: ArrayLike) -> Number:
    """Largest Y before ICI binds in generation: ICI time 2BD/W_ici > 2DF/(Y·W_hbm) once Y > F/(B·β)."""
    return np.divide(d_ff, np.multiply(batch, beta))
