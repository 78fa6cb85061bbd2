"""Held out by whole shape: each model shape (a kernel family's ``holdout`` columns) is predicted by a fit
that never saw it, in seeded folds, so no row of a held-out model is in its own fit."""

from __future__ import annotations

import numpy as np

from roofline.calibrate.kernels.fit import fit_op
from roofline.calibrate.kernels.sweeps import sweep_ids
from roofline.kernels.predict import model_for, predict_op
from roofline.kernels.schema import CalibrationError, Measurements
from roofline.specs import HardwareSpec


def shape_folds(key: str, table: Measurements, folds: int = 5, seed: int = 0) -> np.ndarray:
    """A fold number per row: the family's ``holdout`` shapes dealt at random into ``folds`` groups."""
    family = model_for(key)
    if family is None or not family.holdout:
        raise CalibrationError(f"{key}: its kernel family names no holdout columns (a whole shape)")
    ids = sweep_ids(table, family.holdout)
    if ids.max(initial=0) < 1:
        raise CalibrationError(f"{key}: one model shape only: nothing to hold out")
    shapes = np.random.default_rng(seed).permutation(ids.max() + 1)
    return (shapes % min(folds, len(shapes)))[ids]


def predict_held_out(
    key: str, table: Measurements, hw: HardwareSpec, folds: int = 5, max_rows: int = 3000, seed: int = 0
) -> np.ndarray:
    """Seconds of every row of ``table`` from a fit on the other folds' shapes (``fit_where`` rows only)."""
    fold = shape_folds(key, table, folds, seed)
    out = np.full(len(table), np.nan)
    for f in np.unique(fold):
        params = fit_op(key, table.take(fold != f), hw, max_rows, seed)
        out[fold == f] = predict_op(key, table.take(fold == f), hw, params)
    return out
