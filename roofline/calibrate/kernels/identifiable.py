"""Whether a fit's rows can determine an entry's terms: a least-squares fit of k terms needs at least
k + 1 distinct points (k points fit exactly, with nothing left to tell the fit from noise)."""

from __future__ import annotations

import numpy as np

from roofline.kernels.keys import base_op
from roofline.kernels.predict import COLLECTIVE_PARAMS, model_for
from roofline.kernels.schema import COLLECTIVE_OPS, Measurements
from roofline.kernels.shapes import SHAPE_COLUMNS


def distinct_shapes(table: Measurements) -> int:
    """Rows of ``table`` with different shape columns (a repeated shape adds no point to a fit)."""
    if not len(table):
        return 0
    cols = np.stack([np.nan_to_num(np.asarray(table[c], float), nan=-1.0) for c in SHAPE_COLUMNS], axis=1)
    return len(np.unique(cols, axis=0))


def undetermined_collective(table: Measurements) -> tuple[str, ...]:
    """A collective's terms its rows cannot determine: all three on a device count measured at no more
    message sizes than that (the fit keeps their start, the measured floor and peak bus rate, there)."""
    k, devices = len(COLLECTIVE_PARAMS), np.asarray(table["num_devices"], float)
    out: list[str] = []
    for n in np.unique(devices):
        if len(np.unique(np.asarray(table.take(devices == n)["message_bytes"], float))) <= k:
            out += [f"{p.name}@{int(n)}" for p in COLLECTIVE_PARAMS]
    return tuple(out)


def undetermined(key: str, table: Measurements) -> str | None:
    """Why ``table`` cannot determine compute entry ``key``'s terms (no more distinct shapes than terms),
    or None when it can (collectives: :func:`undetermined_collective`, which does not stop a fit)."""
    model = None if base_op(key) in COLLECTIVE_OPS else model_for(key)
    if model is None:
        return None
    k, n = len(model.params), distinct_shapes(table)
    if n > k:
        return None
    names = ", ".join(p.name for p in model.params)
    return (
        f"{n} distinct shape(s) cannot determine its {k} terms ({names}); give at least {k + 1} rows of "
        "different shapes"
    )
