"""Streaming a sweep to its Pareto frontiers: memory bounded by the frontier, not by the grid.

The kernel fills a fixed buffer of points; each time it is full, the buffer's points are
screened against the frontiers kept so far (a point weakly dominated by an earlier frontier
point is never on the final frontier: :func:`roofline.analyses.pareto.key_floor` bounds the staircase
with one ``np.interp``), and the survivors join the kept points, which are then reduced to
their frontiers again.  The points kept are the union of every objective's per-group frontier,
in sweep order, so the frontiers of the result equal those of the whole sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.pareto import key_floor, objective_columns, oriented, pareto_order
from roofline.analyses.step import DEFAULT_CONTEXT
from roofline.analyses.sweep.grid import SweepGrid
from roofline.analyses.sweep.kernel import CHUNK, PointStore, SweepColumns, Tables, concat
from roofline.analyses.sweep.layout import _evaluate, _finish_sources, _labels, _setup
from roofline.analyses.sweep.result import POINT_COLUMNS, BlockLabels, SweepResult, _check_group
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.specs import HardwareSpec, ModelSpec

#: Points the streaming buffer holds (about 47 MB of stored columns).
BUFFER_POINTS = 1 << 20


class FrontierKeeper:
    """The frontier candidates of a streamed sweep, per (objective, group), and their staircases."""

    def __init__(self, tables: Tables, objectives: Sequence[str], group_of_part: np.ndarray) -> None:
        self.tables = tables
        self.objectives = [(name, *objective_columns(name)) for name in objectives]
        self.group_of_part = group_of_part
        self.kept: SweepColumns | None = None
        self.stairs: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}

    def _groups(self, cols: SweepColumns) -> np.ndarray:
        return self.group_of_part[cols.stored["part"]]

    def flush(self, store: PointStore) -> None:
        """Screen the buffer against the kept frontiers, then reduce kept + survivors to frontiers."""
        if store.size == 0:
            return
        cols = SweepColumns(store.columns(), self.tables, POINT_COLUMNS)
        part = cols.stored["part"]
        cuts = np.flatnonzero(part[1:] != part[:-1]) + 1
        segments: list[tuple[int, int, int]] = []  # (start, end, group): runs of parts of one group
        for start, end in zip(np.r_[0, cuts].tolist(), np.r_[cuts, part.size].tolist(), strict=True):
            g = int(self.group_of_part[part[start]])
            if segments and segments[-1][2] == g:
                segments[-1] = (segments[-1][0], end, g)
            else:
                segments.append((start, end, g))
        survive = np.zeros(cols.size, dtype=bool)
        for name, x_col, x_sense, y_col, y_sense in self.objectives:
            key, ys = oriented(cols[x_col], cols[y_col], x_sense, y_sense)
            for start, end, g in segments:
                stair = self.stairs.get((name, g))
                if stair is None:  # a group's first points: its own frontier survives
                    survive[start + pareto_order(key[start:end], ys[start:end], "min", "max")] = True
                else:
                    survive[start:end] |= ys[start:end] > key_floor(stair[0], stair[1], key[start:end])
        fresh = cols.select(np.flatnonzero(survive))
        self._reduce(fresh if self.kept is None else concat([self.kept, fresh]))

    def _reduce(self, merged: SweepColumns) -> None:
        codes = self._groups(merged)
        present = np.unique(codes)
        members = (
            {int(g): np.flatnonzero(codes == g) for g in present}
            if present.size > 1
            else {int(g): np.arange(codes.size) for g in present}
        )
        union = []
        for name, x_col, x_sense, y_col, y_sense in self.objectives:
            key, ys = oriented(merged[x_col], merged[y_col], x_sense, y_sense)
            for g, idx in members.items():
                front = idx[pareto_order(key[idx], ys[idx], "min", "max")]
                self.stairs[(name, g)] = (key[front], ys[front])
                union.append(front)
        self.kept = merged.select(np.unique(np.concatenate(union)) if union else np.zeros(0, dtype=np.int64))


def _group_of_part(result_blocks: tuple[BlockLabels, ...], part_block: np.ndarray, group: str) -> np.ndarray:
    """Group number of every part: by the block label ``group`` (or one group for 'all')."""
    if group == "all":
        return np.zeros(part_block.size, dtype=np.int32)
    _check_group(group)
    labels = list(dict.fromkeys(blk[group] for blk in result_blocks))
    by_block = np.array([labels.index(blk[group]) for blk in result_blocks], dtype=np.int32)
    return by_block[part_block] if part_block.size else np.zeros(0, dtype=np.int32)


def decode_frontier(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    batch: ArrayLike,
    chips: ArrayLike | None = None,
    context: ArrayLike = (DEFAULT_CONTEXT,),
    weights: Sequence[str] = ("bf16",),
    kv_dtypes: Sequence[str] = ("bf16",),
    tp: Sequence[int] | None = None,
    compute_dtype: str = "bf16",
    prices: Mapping[str, float] | None = None,
    topologies: Sequence[str] | None = None,
    pp: Sequence[int] | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    ep: int | Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    objectives: Sequence[str] = ("latency-throughput",),
    group: str = "hardware",
    buffer_points: int = BUFFER_POINTS,
    engine: str | None = None,
    wide_ep: bool = False,
    compute_components: tuple[tuple[str, str], ...] = (),
) -> SweepResult:
    """:func:`frontier` with the grid's fields as keywords (see :class:`~roofline.analyses.sweep.grid.SweepGrid`)."""
    grid = SweepGrid(
        batch,
        chips,
        context,
        weights,
        kv_dtypes,
        tp,
        compute_dtype,
        prices,
        topologies,
        pp,
        memory_utilization,
        ep,
        labels,
        engine,
        wide_ep,
        compute_components,
    )
    return frontier(model, hardware, grid, objectives, group, buffer_points)


def frontier(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    grid: SweepGrid,
    objectives: Sequence[str] = ("latency-throughput",),
    group: str = "hardware",
    buffer_points: int = BUFFER_POINTS,
) -> SweepResult:
    """The sweep of :func:`roofline.analyses.sweep.run.sweep` of ``grid``, kept only where it is on a frontier.

    The result holds the union of the per-``group`` frontiers of ``objectives`` (names of
    :data:`roofline.analyses.pareto.OBJECTIVES`), in sweep order, with the whole sweep's counts
    (``evaluated``, ``dropped_out_of_memory``; points that fit = evaluated − dropped), so
    ``result.frontiers(objective, group)`` equals the full sweep's.  Memory: one buffer of
    ``buffer_points`` points plus the frontiers, so :data:`roofline.analyses.sweep.run.MAX_SWEEP_POINTS` does
    not apply (the slot limit does).
    """
    for name in objectives:
        objective_columns(name)
    plan = _setup(model, hardware, grid)
    blocks = _labels(model, plan.blocks)
    keeper = FrontierKeeper(plan.tables, objectives, _group_of_part(blocks, plan.tables.part_block, group))
    batch_axis, _, context_axis = plan.axes
    store = PointStore(
        max(int(buffer_points), CHUNK), batch_axis.size, context_axis.size, len(plan.parts), flush=keeper.flush
    )
    out = _evaluate(model, plan.blocks, plan.axes, store, grid.memory_utilization, plan.sources, grid.engine)
    keeper.flush(store)
    kept = keeper.kept if keeper.kept is not None else SweepColumns(store.columns(), plan.tables, POINT_COLUMNS)
    return SweepResult(
        kept,
        blocks,
        out.evaluated,
        out.dropped,
        out.dropped_by_hardware,
        _finish_sources(plan.sources, model),
        out.dropped_slots,
        plan.skipped,
    )
