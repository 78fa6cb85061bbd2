"""A sweep's result: its feasible points as columns, the per-block labels, and what was dropped.

:class:`SweepResult` holds the points of :func:`roofline.analyses.sweep.run.decode_sweep` (or the frontier
points of :func:`roofline.analyses.sweep.frontier.decode_frontier`); :class:`DroppedSlot` describes the
batches of one (chips, context) slot that did not fit in HBM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.pareto import objective_columns, pareto_order
from roofline.analyses.sweep.kernel import SweepColumns
from roofline.core.errors import OptionError, shown
from roofline.formulas import cost, step

#: Per-point columns of a sweep (SI units, as their names say); ``block`` indexes ``blocks``.
POINT_COLUMNS = (
    "chips",
    "tp",
    "pp",
    "ep",
    "attention_dp",
    "batch",
    "context",
    "step_time_s",
    "step_time_lower_s",
    "step_time_upper_s",
    "comms_time_s",
    "tokens_per_s",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_user",
    "cost_per_million_tokens",
    "bound",
    "total_bytes",
    "hbm_capacity_bytes",
    "block",
)
#: Per-block labels: one (model, chip, dtypes) block shares them.
BLOCK_FIELDS = (
    "model",
    "hardware",
    "weights",
    "kv_dtype",
    "compute_dtype",
    "topology",
    "critical_batch",
    "price_per_chip_hour",
)
#: Columns of a row in the sweep's JSON and CSV output, in order.
COLUMNS = (
    "model",
    "hardware",
    "chips",
    "topology",
    "tp",
    "pp",
    "batch",
    "context",
    "weights",
    "kv_dtype",
    "compute_dtype",
    "step_time_s",
    "step_time_lower_s",
    "step_time_upper_s",
    "comms_time_s",
    "tokens_per_s",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_user",
    "cost_per_million_tokens",
    "bound",
    "total_bytes",
    "hbm_capacity_bytes",
    "critical_batch",
    "ep",
    "attention_dp",
)

#: Labels a whole block of a sweep shares (model, chip, dtypes, topology, critical batch, price).
BlockLabels = dict[str, str | float]


@dataclass(frozen=True)
class SweepResult:
    """The feasible points of a sweep as equal-length 1-D columns, and what was dropped.

    Labels shared by a whole block (model, chip, dtypes, critical batch) are stored once in
    ``blocks``; ``column(name)`` expands them per point.  ``columns`` is a mapping of the
    :data:`POINT_COLUMNS` (a :class:`~roofline.analyses.sweep.kernel.SweepColumns`: derived columns are
    computed when first read).  ``dropped_slots`` describes every dropped point: per block and
    (chips, context) slot, the batches from the smallest dropped one up.
    """

    columns: Mapping[str, np.ndarray]
    blocks: tuple[BlockLabels, ...]
    evaluated: int
    dropped_out_of_memory: int
    dropped_by_hardware: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    dropped_slots: tuple[DroppedSlot, ...] = ()
    #: (slice, tp, pp) combinations of the options that were not evaluated, each with why.
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.columns["step_time_s"].shape[0])

    def column(self, name: str) -> np.ndarray:
        """A per-point column, block labels expanded (``column('hardware')``)."""
        if name in self.columns:
            return self.columns[name]
        if name not in BLOCK_FIELDS:
            raise KeyError(f"no sweep column {name!r}; have: {', '.join(COLUMNS)}")
        labels = np.empty(len(self.blocks), dtype=object)
        labels[:] = [blk[name] for blk in self.blocks]
        return labels[self.columns["block"]]

    def select(self, mask: ArrayLike) -> SweepResult:
        """The points where ``mask`` (bool array or index array) holds; counts unchanged."""
        idx = np.asarray(mask)
        cols = self.columns
        picked = cols.select(idx) if isinstance(cols, SweepColumns) else {k: v[idx] for k, v in cols.items()}
        return SweepResult(
            picked,
            self.blocks,
            self.evaluated,
            self.dropped_out_of_memory,
            self.dropped_by_hardware,
            self.sources,
            self.dropped_slots,
            self.skipped,
        )

    def with_step_time(self, column: str) -> SweepResult:
        """The same points priced at another step-time column (``step_time_lower_s``: the bound).

        Throughput, interactivity and cost follow from the new step time as in the sweep itself.
        """
        cols = dict(self.columns)
        step_s = np.asarray(cols[column], dtype=float)
        tps = step.tokens_per_s(cols["batch"], step_s)
        price = self.column("price_per_chip_hour").astype(float)
        cols.update(
            step_time_s=step_s,
            tokens_per_s=tps,
            tokens_per_s_per_chip=tps / cols["chips"],
            tokens_per_s_per_user=1.0 / step_s,
            cost_per_million_tokens=cost.cost_per_million_tokens(price, cols["chips"], tps),
        )
        return SweepResult(
            cols,
            self.blocks,
            self.evaluated,
            self.dropped_out_of_memory,
            self.dropped_by_hardware,
            self.sources,
            self.dropped_slots,
            self.skipped,
        )

    def group_labels(self, group: str) -> np.ndarray:
        """Per-point labels to split frontiers by: a block field, or 'all' (one group)."""
        if group == "all":
            return np.full(len(self), "all", dtype=object)
        _check_group(group)
        return self.column(group)

    def group_codes(self, group: str) -> tuple[np.ndarray, list[str | float]]:
        """(per-point group number, the groups' labels in order of first appearance), from the blocks."""
        if group == "all":
            return np.zeros(len(self), dtype=np.int32), ["all"] if len(self) else []
        _check_group(group)
        block = np.asarray(self.columns["block"])
        present = np.flatnonzero(np.bincount(block, minlength=len(self.blocks)))
        labels = list(dict.fromkeys(self.blocks[i][group] for i in present))
        number = {label: i for i, label in enumerate(labels)}
        by_block = np.array([number.get(blk[group], -1) for blk in self.blocks], dtype=np.int32)
        return by_block[block], labels

    def frontiers(self, objective: str, group: str = "hardware") -> dict[str | float, np.ndarray]:
        """One frontier per group (chip by default): {label: indices, best x first} (as frontier_by_group)."""
        x_col, x_sense, y_col, y_sense = objective_columns(objective)
        codes, labels = self.group_codes(group)
        x, y = self.columns[x_col], self.columns[y_col]
        out: dict[str | float, np.ndarray] = {}
        for i, label in enumerate(labels):
            idx = np.flatnonzero(codes == i) if len(labels) > 1 else np.arange(codes.size)
            out[label] = idx[pareto_order(x[idx], y[idx], x_sense, y_sense)]
        return out

    def rows(self) -> list[dict[str, str | float]]:
        """One dict per point (Python scalars), columns in :data:`COLUMNS` order."""
        lists = {k: self.column(k).tolist() for k in COLUMNS}
        return [{k: lists[k][i] for k in COLUMNS} for i in range(len(self))]


@dataclass(frozen=True)
class DroppedSlot:
    """Batches of one block's (chips, context) slot that do not fit: every batch ≥ ``first_dropped``.

    ``total_bytes`` and ``usable_hbm_bytes`` are decode_step's memory at that first dropped batch, as
    the busiest replica (which decides the fit) holds it, times the replicas.
    """

    block: int
    chips: int
    tp: int
    pp: int
    context: int
    largest_fit: int
    first_dropped: int
    dropped: int
    total_bytes: float
    usable_hbm_bytes: float


def _check_group(group: str) -> None:
    if group not in ("hardware", "weights", "kv_dtype", "model", "compute_dtype"):
        raise OptionError(
            f"group: unknown {shown(group)}; allowed: hardware, weights, kv_dtype, all", parameters=("group",)
        )
