"""Cartesian sweeps of decode-step configurations, evaluated by the step model in chunks.

A sweep is one model on one or more chips over batch × chips × context × tp degree ×
weight and KV dtypes.  Python loops run over chips, dtype pairs, tp degrees and grids of a few
hundred thousand points; :mod:`roofline.analyses.sweep.kernel` evaluates each grid with the step model's
own functions, so the formulas live in one place.  decode_step's own ``max_batch`` (fit in HBM is
monotone in batch) screens out the points that overflow HBM, which are counted, and sizes the
preallocated columns of the rest.  :func:`roofline.analyses.sweep.frontier.decode_frontier` streams a
sweep to its Pareto frontiers, keeping only each chunk's frontier candidates.

The parts live in their own modules (all importable from here, as before): the result types in
:mod:`roofline.analyses.sweep.result`, option parsing and limits in :mod:`roofline.analyses.sweep.options`,
planning and evaluation in :mod:`roofline.analyses.sweep.layout`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from numpy.typing import ArrayLike

from roofline.analyses.step import DEFAULT_CONTEXT
from roofline.analyses.sweep.grid import SweepGrid
from roofline.analyses.sweep.kernel import PointStore, SweepColumns
from roofline.analyses.sweep.layout import _Block, _evaluate, _finish_sources, _labels, _Outcome, _plan, _Setup, _setup
from roofline.analyses.sweep.options import (
    MAX_LIST_VALUES,
    MAX_SWEEP_POINTS,
    MAX_SWEEP_SLOTS,
    check_dtypes,
    feasible_points,
    parallel_groups,
    parse_int_list,
    tp_groups,
)
from roofline.analyses.sweep.result import BLOCK_FIELDS, COLUMNS, POINT_COLUMNS, DroppedSlot, SweepResult, _check_group
from roofline.core.errors import OptionError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.specs import HardwareSpec, ModelSpec

__all__ = [
    "BLOCK_FIELDS",
    "COLUMNS",
    "MAX_LIST_VALUES",
    "MAX_SWEEP_POINTS",
    "MAX_SWEEP_SLOTS",
    "POINT_COLUMNS",
    "DroppedSlot",
    "SweepResult",
    "_Block",
    "_Outcome",
    "_Setup",
    "_check_group",
    "_evaluate",
    "_finish_sources",
    "_labels",
    "_plan",
    "_setup",
    "check_dtypes",
    "decode_sweep",
    "feasible_points",
    "parallel_groups",
    "parse_int_list",
    "tp_groups",
]


def decode_sweep(
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
    max_points: int | None = None,
    engine: str | None = None,
    wide_ep: bool = False,
    compute_components: tuple[tuple[str, str], ...] = (),
) -> SweepResult:
    """:func:`sweep` with the grid's fields as keywords (see :class:`~roofline.analyses.sweep.grid.SweepGrid`)."""
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
    return sweep(model, hardware, grid, max_points)


def sweep(
    model: ModelSpec, hardware: Sequence[HardwareSpec], grid: SweepGrid, max_points: int | None = None
) -> SweepResult:
    """Every (chip, weights, KV dtype, tp, chips, batch, context) decode step of ``grid`` that fits in HBM.

    The loops run over chips × dtypes × tp degrees and grids of points, never over configurations; the
    columns are allocated once, sized by the screen's counts, and a sweep holding more than ``max_points``
    (default :data:`MAX_SWEEP_POINTS`) is refused before any is evaluated.
    """
    plan = _setup(model, hardware, grid)
    limit = MAX_SWEEP_POINTS if max_points is None else int(max_points)
    if plan.capacity > limit:
        raise OptionError(
            f"the sweep would hold more than {limit:,} configurations that fit in HBM "
            f"(about {limit * 500 / 1e9:.0f} GB); use a smaller grid: fewer batch=, "
            "chips=, context= or dtype values, or a doubling range such as 1..4096",
            parameters=("batch", "chips", "context"),
        )
    batch_axis, _, context_axis = plan.axes
    store = PointStore(plan.capacity, batch_axis.size, context_axis.size, len(plan.parts))
    out = _evaluate(model, plan.blocks, plan.axes, store, grid.memory_utilization, plan.sources, grid.engine)
    columns = SweepColumns(store.trimmed(), plan.tables, POINT_COLUMNS)
    return SweepResult(
        columns,
        _labels(model, plan.blocks),
        out.evaluated,
        out.dropped,
        out.dropped_by_hardware,
        _finish_sources(plan.sources, model),
        out.dropped_slots,
        plan.skipped,
    )
