"""Several sweeps of one model as one :class:`~roofline.analyses.sweep.result.SweepResult`.

A report sweeps each chip file on its own (its own engine entry, slice sizes and matmul dtype);
``concat`` joins them so frontiers, tables and the summary read one result: columns end to end,
blocks in order (each sweep's block numbers shifted past the previous ones), counts added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from roofline.analyses.sweep.result import POINT_COLUMNS, SweepResult


def concat(results: Sequence[SweepResult]) -> SweepResult:
    """One result holding every point, block and dropped slot of ``results``, in order."""
    if len(results) == 1:
        return results[0]
    columns: dict[str, list[np.ndarray]] = {name: [] for name in POINT_COLUMNS}
    blocks: list[dict[str, object]] = []
    slots = []
    dropped_by_hw: dict[str, int] = {}
    sources: dict[str, str] = {}
    skipped: list[str] = []
    for res in results:
        offset = len(blocks)
        for name in POINT_COLUMNS:
            values = np.asarray(res.columns[name])
            columns[name].append(values + offset if name == "block" else values)
        blocks += res.blocks
        slots += [replace(s, block=s.block + offset) for s in res.dropped_slots]
        for label, n in res.dropped_by_hardware.items():
            dropped_by_hw[label] = dropped_by_hw.get(label, 0) + n
        sources.update(res.sources)
        skipped += res.skipped
    joined = {name: np.concatenate(parts) if parts else np.zeros(0) for name, parts in columns.items()}
    return SweepResult(
        joined,
        tuple(blocks),
        sum(r.evaluated for r in results),
        sum(r.dropped_out_of_memory for r in results),
        dropped_by_hw,
        sources,
        tuple(slots),
        tuple(dict.fromkeys(skipped)),
    )
