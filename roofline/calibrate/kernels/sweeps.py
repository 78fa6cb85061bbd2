"""Cleaning a kernel family's rows before its fit is scored: runs that are not the kernel's physics.

Two documented rules, both per family (:class:`~roofline.kernels.registry.KernelFamily`):

* an **outlier sweep**: all rows measured together (same ``sweep`` columns: one shape, layout and
  routing, every token count) whose median measured / fitted time is above the family's
  ``sweep_limit`` (fused MoE: 1.5).  In
  aiconfigurator's fused-MoE tables whole bf16 and per-tensor fp8 sweeps run 1.5-10x slower than their
  neighbours and than the same configuration's fp8_block sweep (physically at most 2x); the collector
  caches tuned tactics by (hidden, inter/tp, experts/ep), so one sweep can run another's tactic.
* an **isolated spike**: one row more than :data:`SPIKE_FACTOR` times slower than both its neighbours
  along the family's ``sweep_axis`` (MLA decode context length: a handful of rows per table).

The fit sees the cleaned rows; the profile entry records how many rows each rule removed.
"""

from __future__ import annotations

import numpy as np

from roofline.kernels.registry import KernelFamily
from roofline.kernels.schema import Measurements

#: A row this many times slower than both neighbours along the sweep axis is a spike.
SPIKE_FACTOR = 2.0


def sweep_ids(table: Measurements, columns: tuple[str, ...]) -> np.ndarray:
    """An integer id per row: rows with equal ``columns`` share one."""
    keys = list(zip(*(table[c].tolist() for c in columns), strict=True))
    index: dict[tuple[object, ...], int] = {}
    return np.array([index.setdefault(k, len(index)) for k in keys], dtype=int)


def outlier_sweeps(table: Measurements, family: KernelFamily, fitted: np.ndarray) -> np.ndarray:
    """Rows of sweeps whose median measured / fitted time is above the family's ``sweep_limit`` (a mask).

    Only sweeps of rows the fit uses (``fit_where``) are judged, so a slice the model predicts badly is
    never dropped for it; a configuration flagged there (its ``sweep`` columns but the ``fit_where`` one)
    is dropped in every variant (the MoE tables' power-law sweeps of a configuration share its tactic).
    """
    if not family.sweep or not family.sweep_limit or not len(table):
        return np.zeros(len(table), bool)
    judged = np.ones(len(table), bool)
    config = family.sweep
    if family.fit_where is not None:
        column, values = family.fit_where
        judged = np.isin(table[column], list(values))
        config = tuple(c for c in family.sweep if c != column)
    ids = sweep_ids(table, config)
    ratio = np.log(table["time_s"] / fitted)
    flagged = {i for i in np.unique(ids[judged]) if np.median(ratio[judged & (ids == i)]) > np.log(family.sweep_limit)}
    return np.isin(ids, sorted(flagged))


def spikes(table: Measurements, family: KernelFamily) -> np.ndarray:
    """Rows more than :data:`SPIKE_FACTOR` x slower than both neighbours along ``sweep_axis`` (a mask)."""
    if not family.sweep_axis or not len(table):
        return np.zeros(len(table), bool)
    ids = sweep_ids(table, family.sweep)
    order = np.lexsort((table[family.sweep_axis], ids))
    t, same = table["time_s"][order], ids[order]
    before = np.where(np.r_[False, same[1:] == same[:-1]], np.r_[np.inf, t[:-1]], np.nan)
    after = np.where(np.r_[same[:-1] == same[1:], False], np.r_[t[1:], np.inf], np.nan)
    neighbours = np.fmax(np.where(np.isinf(before), np.nan, before), np.where(np.isinf(after), np.nan, after))
    bad = np.zeros(len(table), bool)
    bad[order] = t > SPIKE_FACTOR * neighbours
    return bad
