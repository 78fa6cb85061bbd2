"""Cartesian sweeps of decode-step configurations, evaluated by the step model in chunks.

A sweep is one model on one or more chips over batch × chips × context × tp degree ×
weight and KV dtypes.  Python loops run over chips, dtype pairs, tp degrees and grids of a few
thousand points; :mod:`roofline.sweep_kernel` evaluates each grid with the step model's own
functions, so the formulas live in one place.  decode_step's own ``max_batch`` (fit in HBM is
monotone in batch) screens out the points that overflow HBM, which are counted, and sizes the
preallocated columns of the rest.  :func:`decode_frontier` streams a sweep to its Pareto
frontiers, keeping only each chunk's frontier candidates.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import cost, step, topology
from .analysis import BOOK, DEFAULT_CONTEXT, Precision, _check_positive, decode_step
from .checks import check_count
from .deploy import DEFAULT_MEMORY_UTILIZATION, Rates, chip_rates, deployment, engine_terms
from .errors import OptionError, shown
from .pareto import objective_columns, pareto_order
from .specs import HardwareSpec, ModelSpec
from .sweep_kernel import PointStore, SweepColumns, Tables, evaluate_part
from .units import DTYPE_BYTES

#: Per-point columns of a sweep (SI units, as their names say); ``block`` indexes ``blocks``.
POINT_COLUMNS = (
    "chips",
    "tp",
    "pp",
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
BLOCK_FIELDS = ("model", "hardware", "weights", "kv_dtype", "compute_dtype", "topology", "critical_batch",
                "price_per_chip_hour")
#: Columns of a row in ``--json`` / ``--csv`` output, in order.
COLUMNS = ("model", "hardware", "chips", "topology", "tp", "pp", "batch", "context", "weights", "kv_dtype",
           "compute_dtype", "step_time_s", "step_time_lower_s", "step_time_upper_s", "comms_time_s", "tokens_per_s",
           "tokens_per_s_per_chip", "tokens_per_s_per_user", "cost_per_million_tokens", "bound",
           "total_bytes", "hbm_capacity_bytes", "critical_batch")


@dataclass(frozen=True)
class SweepResult:
    """The feasible points of a sweep as equal-length 1-D columns, and what was dropped.

    Labels shared by a whole block (model, chip, dtypes, critical batch) are stored once in
    ``blocks``; ``column(name)`` expands them per point.  ``columns`` is a mapping of the
    :data:`POINT_COLUMNS` (a :class:`~roofline.sweep_kernel.SweepColumns`: derived columns are
    computed when first read).  ``dropped_slots`` describes every dropped point: per block and
    (chips, context) slot, the batches from the smallest dropped one up.
    """

    columns: Mapping[str, np.ndarray]
    blocks: tuple[dict[str, Any], ...]
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
        return SweepResult(picked, self.blocks, self.evaluated, self.dropped_out_of_memory,
                           self.dropped_by_hardware, self.sources, self.dropped_slots, self.skipped)

    def with_step_time(self, column: str) -> SweepResult:
        """The same points priced at another step-time column (``step_time_lower_s``: the bound).

        Throughput, interactivity and cost follow from the new step time as in the sweep itself.
        """
        cols = dict(self.columns)
        step_s = np.asarray(cols[column], dtype=float)
        tps = step.tokens_per_s(cols["batch"], step_s)
        price = self.column("price_per_chip_hour").astype(float)
        cols.update(step_time_s=step_s, tokens_per_s=tps, tokens_per_s_per_chip=tps / cols["chips"],
                    tokens_per_s_per_user=1.0 / step_s,
                    cost_per_million_tokens=cost.cost_per_million_tokens(price, cols["chips"], tps))
        return SweepResult(cols, self.blocks, self.evaluated, self.dropped_out_of_memory,
                           self.dropped_by_hardware, self.sources, self.dropped_slots, self.skipped)

    def group_labels(self, group: str) -> np.ndarray:
        """Per-point labels to split frontiers by: a block field, or 'all' (one group)."""
        if group == "all":
            return np.full(len(self), "all", dtype=object)
        _check_group(group)
        return self.column(group)

    def group_codes(self, group: str) -> tuple[np.ndarray, list[Any]]:
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

    def frontiers(self, objective: str, group: str = "hardware") -> dict[Any, np.ndarray]:
        """One frontier per group (chip by default): {label: indices, best x first} (as frontier_by_group)."""
        x_col, x_sense, y_col, y_sense = objective_columns(objective)
        codes, labels = self.group_codes(group)
        x, y = self.columns[x_col], self.columns[y_col]
        out: dict[Any, np.ndarray] = {}
        for i, label in enumerate(labels):
            idx = np.flatnonzero(codes == i) if len(labels) > 1 else np.arange(codes.size)
            out[label] = idx[pareto_order(x[idx], y[idx], x_sense, y_sense)]
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One dict per point (Python scalars), columns in :data:`COLUMNS` order."""
        lists = {k: self.column(k).tolist() for k in COLUMNS}
        return [{k: lists[k][i] for k in COLUMNS} for i in range(len(self))]


@dataclass(frozen=True)
class DroppedSlot:
    """Batches of one block's (chips, context) slot that do not fit: every batch ≥ ``first_dropped``.

    ``total_bytes`` and ``usable_hbm_bytes`` are decode_step's memory at that first dropped batch.
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


#: Most configurations that fit in HBM one sweep holds (about 450 bytes each with the
#: temporaries of evaluating them: 2 million is about 1 GB); a larger grid is refused before
#: it is allocated.
MAX_SWEEP_POINTS = 2_000_000
#: Most (chips, context) slots screened at once per chip and dtype pair.
MAX_SWEEP_SLOTS = 1_000_000
#: Most values one list option (``--batch 1,2,...``) may hold.
MAX_LIST_VALUES = 4096


def _check_group(group: str) -> None:
    if group not in ("hardware", "weights", "kv_dtype", "model", "compute_dtype"):
        raise OptionError(f"group: unknown {shown(group)}; allowed: hardware, weights, kv_dtype, all",
                          parameters=("group",))


def parse_int_list(text: str, option: str, maximum: int = 2**31 - 1) -> np.ndarray:
    """'1,2,8' -> [1, 2, 8]; 'A..B' -> powers of two from A up to B (then B); each in [1, maximum]."""
    hint = f"give whole numbers from 1 to {maximum} like '1,2,8' or a doubling range like '1..4096'"
    text = str(text)
    if len(text) > 64 * MAX_LIST_VALUES:
        raise OptionError(f"{option}: too long ({len(text)} characters); {hint}", parameters=(option,))
    values: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        bounds = part.split("..") if ".." in part else [part]
        try:
            lo, hi = (check_count(x.strip(), "", maximum=maximum) for x in (bounds[0], bounds[-1]))
            if len(bounds) > 2 or hi < lo:
                raise ValueError
        except ValueError:
            raise OptionError(f"{option}: cannot read {shown(part)}; {hint}", parameters=(option,)) from None
        n = lo
        while n < hi:
            values.append(n)
            n *= 2
        values.append(hi)
        if len(values) > MAX_LIST_VALUES:
            raise OptionError(f"{option}: more than {MAX_LIST_VALUES} values", parameters=(option,))
    return np.unique(np.asarray(values, dtype=np.int64))


def check_dtypes(values: Sequence[str], option: str) -> tuple[str, ...]:
    """Validate dtype names, naming the option and the allowed values."""
    for value in values:
        if value not in DTYPE_BYTES:
            raise OptionError(f"{option}: unknown dtype {shown(value)}; allowed: {', '.join(DTYPE_BYTES)}",
                              parameters=(option,))
    if not values:
        raise OptionError(f"{option}: give at least one dtype", parameters=(option,))
    return tuple(dict.fromkeys(values))


def feasible_points(
    batch: np.ndarray, max_batch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``batch`` and ``max_batch`` per slot: (slot index, batch) of each B ≤ max.

    Fit in HBM is monotone in batch (P + B·KV ≤ HBM  ⇔  B ≤ max batch), so the points that
    fit are a prefix of the sorted batch axis in every (chips, context) slot.
    """
    counts = np.searchsorted(batch, max_batch.reshape(-1), side="right")
    slot = np.repeat(np.arange(counts.size), counts)
    starts = np.cumsum(counts) - counts
    position = np.arange(slot.size) - np.repeat(starts, counts)
    return slot, batch[position]


@dataclass(frozen=True)
class _Block:
    """One (chip, dtypes, tp, pp, slice shape) block: its chip rows and the screen's counts per context."""

    hw: HardwareSpec
    name: str
    rates: Rates
    precision: Precision
    price: float
    tp: int
    pp: int
    rows: np.ndarray
    shape: str | None
    counts: np.ndarray
    critical_batch: float


def _plan(model: ModelSpec, hardware: Sequence[HardwareSpec], names: Sequence[str],
          axes: tuple[np.ndarray, np.ndarray, np.ndarray], precisions: list[Precision],
          groups: list[tuple[int, int, np.ndarray, str | None]], prices: Mapping[str, float],
          memory_utilization: float, sources: dict[str, str]) -> list[_Block]:
    """Every block of the sweep with the screen's feasible batch counts (known before any evaluation)."""
    batch_axis, chips_axis, context_axis = axes
    blocks: list[_Block] = []
    for hw, name in zip(hardware, names, strict=True):
        rates = chip_rates(hw, precisions[0].compute)
        sources[f"hardware:{name}"] = rates.source
        price = prices.get(name, prices.get(hw.name, hw.price_per_chip_hour))
        sources[f"price:{name}"] = "command line" if (name in prices or hw.name in prices) else "hardware spec"
        for precision in precisions:
            # The whole-slice max batch bounds every tp's (replicas each hold the weights):
            # one screen per dtype pair; the step's own `fits` drops what it lets through.
            screen = decode_step(model, hw, chips_axis[:, None].astype(float), 1,
                                 context_axis[None, :].astype(float), precision, price,
                                 memory_utilization=memory_utilization, rates=rates)
            max_batch = np.broadcast_to(screen.max_batch, (chips_axis.size, context_axis.size))
            counts = np.searchsorted(batch_axis, max_batch.reshape(-1), side="right").reshape(max_batch.shape)
            for degree, stages, rows, shape in groups:
                blocks.append(_Block(hw, name, rates, precision, price, degree, stages, rows, shape, counts[rows],
                                     float(screen.critical_batch)))
    return blocks


def _tables(blocks: list[_Block], parts: list[tuple[int, int]], batch_axis: np.ndarray,
            context_axis: np.ndarray) -> Tables:
    block_of = np.array([p[0] for p in parts], dtype=np.int32)
    return Tables(
        batch=batch_axis, context=context_axis, part_block=block_of,
        part_chips=np.array([p[1] for p in parts], dtype=np.int64),
        part_tp=np.array([blocks[i].tp for i in block_of], dtype=np.int64),
        part_pp=np.array([blocks[i].pp for i in block_of], dtype=np.int64),
        part_price=np.array([blocks[i].price for i in block_of], dtype=float),
        part_hbm_bytes=np.array([blocks[i].hw.hbm_bytes for i in block_of], dtype=float))


def _parts(blocks: list[_Block], chips_axis: np.ndarray) -> list[tuple[int, int]]:
    """(block, chips) of every part, in evaluation order."""
    return [(i, int(chips_axis[row])) for i, blk in enumerate(blocks) for row in blk.rows]


def _memory_at(model: ModelSpec, hw: HardwareSpec, precision: Precision, price: float, tp: int, pp: int,
               topology_text: str | None, ep: int | None, memory_utilization: float, chips: np.ndarray,
               batch: np.ndarray, context: np.ndarray) -> tuple[Any, Any]:
    """(weights + KV bytes, usable HBM bytes) of a block's configurations, from decode_step."""
    res = decode_step(model, hw, chips, batch, context, precision, price, tp=tp, topology_text=topology_text,
                      pp=pp if pp > 1 else None, ep=ep, memory_utilization=memory_utilization)
    return res.total_bytes, res.usable_hbm_bytes


def _dropped_slots(
    block: int, tp: int, pp: int, batch: np.ndarray, chips: np.ndarray, context: np.ndarray,
    kept: Sequence[int], memory: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Any, Any]],
) -> list[DroppedSlot]:
    """Each (chips, context) slot of a block that lost batches: the kept ones are a prefix of ``batch``.

    ``kept`` counts the points kept per slot (chips-major); ``memory(chips, batch, context)`` gives
    (total bytes, usable bytes) at the first dropped batch.
    """
    slots = [(int(c), int(s)) for c in chips for s in context]
    lost = [(slot, int(k)) for slot, k in zip(slots, kept, strict=True) if k < batch.size]
    if not lost:
        return []
    c_arr = np.array([float(c) for (c, _), _ in lost])
    s_arr = np.array([float(s) for (_, s), _ in lost])
    first = np.array([float(batch[k]) for _, k in lost])
    total, usable = memory(c_arr, first, s_arr)
    total, usable = (np.broadcast_to(np.asarray(v, dtype=float), first.shape) for v in (total, usable))
    return [DroppedSlot(block, c, tp, pp, s, int(batch[k - 1]) if k else 0, int(batch[k]), int(batch.size - k),
                        float(total[i]), float(usable[i]))
            for i, ((c, s), k) in enumerate(lost)]


@dataclass(frozen=True)
class _Outcome:
    """What evaluating a sweep's blocks counted: points evaluated and dropped, per chip, and each lost slot."""

    evaluated: int
    dropped: int
    dropped_by_hardware: dict[str, int]
    dropped_slots: tuple[DroppedSlot, ...]


def _evaluate(model: ModelSpec, blocks: list[_Block], axes: tuple[np.ndarray, np.ndarray, np.ndarray],
              store: PointStore, memory_utilization: float, ep: int | None,
              sources: dict[str, str], engine: str | None = None) -> _Outcome:
    """Run the kernel over every part of every block into ``store``, counting what it dropped."""
    batch_axis, chips_axis, context_axis = axes
    batch_f, context_f = batch_axis.astype(float), context_axis.astype(float)
    for blk in blocks:
        sources[f"engine:{blk.name}"] = engine_terms(blk.hw, engine).source
    evaluated = dropped = part = 0
    dropped_by_hw: dict[str, int] = {}
    comms_sources: dict[str, dict[str, None]] = {}
    slots: list[DroppedSlot] = []
    known: dict[tuple[int, int, int, str | None], str] = {}  # the collectives' source does not depend on points
    for index, blk in enumerate(blocks):
        key = (id(blk.rates), blk.tp, blk.pp, blk.shape)
        row_kept = np.zeros((blk.rows.size, context_axis.size), dtype=np.int64)
        for local, row in enumerate(blk.rows):
            if key in known and not blk.counts[local].any():  # nothing to evaluate, the source is known
                part += 1
                comms_sources.setdefault(blk.name, {})[known[key]] = None
                continue
            dep = deployment(model, blk.hw, float(chips_axis[row]), blk.precision, tp=blk.tp,
                             pp=blk.pp if blk.pp > 1 else None, ep=ep, topology_text=blk.shape,
                             memory_utilization=memory_utilization, price_per_chip_hour=blk.price, rates=blk.rates,
                             engine=engine)
            _, comms = evaluate_part(dep, batch_f, context_f, blk.counts[local], store, part,
                                     row_kept=row_kept[local])
            part += 1
            known[key] = comms
            comms_sources.setdefault(blk.name, {})[comms] = None
        kept = int(row_kept.sum())
        n_eval = batch_axis.size * blk.rows.size * context_axis.size
        if kept < n_eval:
            memory = functools.partial(_memory_at, model, blk.hw, blk.precision, blk.price, blk.tp, blk.pp,
                                       blk.shape, ep, memory_utilization)
            slots += _dropped_slots(index, blk.tp, blk.pp, batch_axis, chips_axis[blk.rows], context_axis,
                                    row_kept.reshape(-1).tolist(), memory)
        evaluated += n_eval
        dropped += n_eval - kept
        dropped_by_hw[blk.name] = dropped_by_hw.get(blk.name, 0) + n_eval - kept
    for name, found in comms_sources.items():
        sources[f"comms:{name}"] = " | ".join(found)
    return _Outcome(evaluated, dropped, dropped_by_hw, tuple(slots))


def _labels(model: ModelSpec, blocks: list[_Block]) -> tuple[dict[str, Any], ...]:
    return tuple({"model": model.name, "hardware": b.name, "weights": b.precision.weights,
                  "kv_dtype": b.precision.kv, "compute_dtype": b.precision.compute, "topology": b.shape or "",
                  "critical_batch": b.critical_batch, "price_per_chip_hour": float(b.price)} for b in blocks)


def tp_groups(
    chips: np.ndarray, tp: Sequence[int] | None, topologies: Sequence[str] | None = None,
    skipped: list[str] | None = None,
) -> list[tuple[int, np.ndarray, str | None]]:
    """(tp degree, indices into ``chips``, slice shape) of each decode_step call.

    tp = the whole slice when ``tp`` is None; otherwise each degree with the chip counts it
    divides, or the slice shapes (``4x4``, each its own group) whose leading axes it spans.
    Each (slice, degree) pair left out is described in ``skipped`` (when given), with why.
    """
    notes = [] if skipped is None else skipped
    degrees = None if tp is None else sorted(set(tp))
    if degrees is not None and any(t <= 0 for t in degrees):
        raise OptionError(f"tp: degrees must be positive integers (got {shown(tp)})", parameters=("tp",))
    groups: list[tuple[int, np.ndarray, str | None]] = []
    if topologies:
        for text in dict.fromkeys(topologies):
            sizes = topology.parse_topology(text)
            n = topology.topology_chips(sizes)
            row = np.flatnonzero(chips == n)
            # A tp group spans leading ICI axes: degree 1 or a product of the first k axis sizes.
            allowed = {1, *itertools.accumulate(sizes, operator.mul)}
            groups += [(d, row, text) for d in (degrees or [n]) if d in allowed]
            notes += [f"topology {text} with tp {d}: a tp group spans leading axes, so tp must be one of "
                      f"{', '.join(map(str, sorted(allowed)))}" for d in (degrees or [n]) if d not in allowed]
    elif degrees is None:
        groups = [(int(c), np.asarray([i]), None) for i, c in enumerate(chips)]
    else:
        groups = [(int(t), np.flatnonzero(chips % t == 0), None) for t in degrees]
        notes += [f"{int(c)} chips with tp {t}: {t} does not divide {int(c)}"
                  for t in degrees for c in chips if c % t]
        groups = [g for g in groups if g[1].size]
    if not groups:
        where = f"topologies={list(topologies)}" if topologies else f"chips={chips.tolist()}"
        raise OptionError(f"tp: no degree in {list(tp or [])} fits {where}", parameters=("tp",))
    return groups


def parallel_groups(
    chips: np.ndarray, tp: Sequence[int] | None, pp: Sequence[int] | None, topologies: Sequence[str] | None = None,
    skipped: list[str] | None = None,
) -> list[tuple[int, int, np.ndarray, str | None]]:
    """(tp, pp, indices into ``chips``, slice shape) of each block: tp groups × pipeline depths.

    Without ``pp`` every block is one stage; with it, each depth p keeps the chip counts that
    tp·p divides (tp = chips / p when no tp is given).
    """
    stages = sorted(set(pp or [1]))
    if any(p <= 0 for p in stages):
        raise OptionError(f"pp: depths must be positive integers (got {shown(pp)})", parameters=("pp",))
    if stages == [1]:
        return [(d, 1, rows, shape) for d, rows, shape in tp_groups(chips, tp, topologies, skipped)]
    if topologies:
        raise OptionError("pp with topologies is not supported: give chips and tp",
                          parameters=("pp", "topologies"))
    notes = [] if skipped is None else skipped
    groups: list[tuple[int, int, np.ndarray, str | None]] = []
    for p in stages:
        if tp is None:
            groups += [(int(c) // p, p, np.asarray([i]), None) for i, c in enumerate(chips) if c % p == 0]
        else:
            groups += [(int(t), p, np.flatnonzero(chips % (t * p) == 0), None) for t in sorted(set(tp))]
        if tp is None:
            notes += [f"{int(c)} chips with pp {p}: {p} does not divide {int(c)}" for c in chips if c % p]
        else:
            notes += [f"{int(c)} chips with tp {t} x pp {p}: {t * p} does not divide {int(c)}"
                      for t in sorted(set(tp)) for c in chips if c % (t * p)]
    groups = [g for g in groups if g[2].size]
    if not groups:
        raise OptionError(f"tp/pp: no tp x pp in {list(tp or [])} x {stages} divides chips={chips.tolist()}",
                          parameters=("tp", "pp", "chips"))
    return groups


@dataclass(frozen=True)
class _Setup:
    axes: tuple[np.ndarray, np.ndarray, np.ndarray]
    blocks: list[_Block]
    parts: list[tuple[int, int]]
    tables: Tables
    sources: dict[str, str]
    skipped: tuple[str, ...]

    @property
    def capacity(self) -> int:
        """Points the screen lets through: an upper bound of the points that fit."""
        return int(sum(int(b.counts.sum()) for b in self.blocks))


def _setup(model: ModelSpec, hardware: Sequence[HardwareSpec], batch: ArrayLike, chips: ArrayLike,
           context: ArrayLike, weights: Sequence[str], kv_dtypes: Sequence[str], tp: Sequence[int] | None,
           compute_dtype: str, prices: Mapping[str, float] | None, topologies: Sequence[str] | None,
           pp: Sequence[int] | None, memory_utilization: float, labels: Sequence[str] | None) -> _Setup:
    """Validate a sweep's options and plan its blocks and parts."""
    if not hardware:
        raise OptionError("hardware: give at least one chip", parameters=("hardware",))
    names = [hw.name for hw in hardware] if labels is None else list(labels)
    if len(names) != len(hardware):
        raise OptionError(f"labels: {len(names)} given for {len(hardware)} chips", parameters=("labels",))
    weights = check_dtypes(weights, "weights")
    kv_dtypes = check_dtypes(kv_dtypes, "kv_dtypes")
    if topologies:
        chips = [topology.topology_chips(topology.parse_topology(t)) for t in topologies]
    axes = tuple(np.unique(np.asarray(v, dtype=np.int64).reshape(-1)) for v in (batch, chips, context))
    if axes[0].size:
        _check_positive(batch=axes[0])
    skipped: list[str] = []
    groups = parallel_groups(axes[1], tp, pp, topologies, skipped)
    if axes[1].size * axes[2].size > MAX_SWEEP_SLOTS:
        raise OptionError(f"the sweep has {axes[1].size:,} chip counts x {axes[2].size:,} contexts, more "
                          f"than the {MAX_SWEEP_SLOTS:,} this tool screens at once; give fewer chips= or context= "
                          "values", parameters=("chips", "context"))
    precisions = [Precision(w, kv, compute_dtype) for w in weights for kv in kv_dtypes]
    sources: dict[str, str] = {}
    blocks = _plan(model, hardware, names, axes, precisions, groups, dict(prices or {}), memory_utilization,
                   sources)
    parts = _parts(blocks, axes[1])
    return _Setup(axes, blocks, parts, _tables(blocks, parts, axes[0], axes[2]), sources, tuple(skipped))


def _finish_sources(sources: dict[str, str], model: ModelSpec) -> dict[str, str]:
    sources["model"] = model.source or model.name
    sources["formulas"] = f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'"
    return sources


def decode_sweep(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    batch: ArrayLike,
    chips: ArrayLike = (1,),
    context: ArrayLike = (DEFAULT_CONTEXT,),
    weights: Sequence[str] = ("bf16",),
    kv_dtypes: Sequence[str] = ("bf16",),
    tp: Sequence[int] | None = None,
    compute_dtype: str = "bf16",
    prices: Mapping[str, float] | None = None,
    topologies: Sequence[str] | None = None,
    pp: Sequence[int] | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    ep: int | None = None,
    labels: Sequence[str] | None = None,
    max_points: int | None = None,
    engine: str | None = None,
) -> SweepResult:
    """Every (chip, weights, KV dtype, tp, chips, batch, context) decode step that fits in HBM.

    ``chips`` is the slice that serves the batch, or ``topologies`` its shapes (``4x4``:
    16 chips whose ICI axes carry the collectives); ``tp`` the model-parallel degrees to try
    (each must divide the chip count; None: the whole slice is one tp group, the book's
    figure).  ``labels`` names each chip's points (default: its name; the report passes the
    file each came from).  The loops run over chips × dtypes × tp degrees and grids of points,
    never over configurations; the columns are allocated once, sized by the screen's counts,
    and a sweep holding more than ``max_points`` (default :data:`MAX_SWEEP_POINTS`) is refused
    before any is evaluated.
    """
    plan = _setup(model, hardware, batch, chips, context, weights, kv_dtypes, tp, compute_dtype, prices,
                  topologies, pp, memory_utilization, labels)
    limit = MAX_SWEEP_POINTS if max_points is None else int(max_points)
    if plan.capacity > limit:
        raise OptionError(
            f"the sweep would hold more than {limit:,} configurations that fit in HBM "
            f"(about {limit * 500 / 1e9:.0f} GB); use a smaller grid: fewer batch=, "
            "chips=, context= or dtype values, or a doubling range such as 1..4096",
            parameters=("batch", "chips", "context"))
    batch_axis, _, context_axis = plan.axes
    store = PointStore(plan.capacity, batch_axis.size, context_axis.size, len(plan.parts))
    out = _evaluate(model, plan.blocks, plan.axes, store, memory_utilization, ep, plan.sources, engine)
    columns = SweepColumns(store.trimmed(), plan.tables, POINT_COLUMNS)
    return SweepResult(columns, _labels(model, plan.blocks), out.evaluated, out.dropped, out.dropped_by_hardware,
                       _finish_sources(plan.sources, model), out.dropped_slots, plan.skipped)
