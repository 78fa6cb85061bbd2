"""Cartesian sweeps of decode-step configurations, evaluated as numpy arrays.

A sweep is one model on one or more chips over batch × chips × context × tp degree ×
weight and KV dtypes.  Python loops run over chips, dtype pairs and tp degrees only; every
(batch, chips, context) point of a block is one element of the arrays given to
:func:`roofline.analysis.decode_step`, so the formulas live in one place.  decode_step's own
``max_batch`` (fit in HBM is monotone in batch) screens out the points that overflow HBM,
which are counted, and the rest are evaluated and flattened into columns.
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
from .analysis import BOOK, DEFAULT_CONTEXT, Precision, decode_step
from .checks import check_count
from .deploy import DEFAULT_MEMORY_UTILIZATION, chip_rates
from .errors import OptionError, shown
from .specs import HardwareSpec, ModelSpec
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
    ``blocks``; ``column(name)`` expands them per point.  ``dropped_slots`` describes every
    dropped point: per block and (chips, context) slot, the batches from the smallest dropped one up.
    """

    columns: dict[str, np.ndarray]
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
        return SweepResult({k: v[idx] for k, v in self.columns.items()}, self.blocks,
                           self.evaluated, self.dropped_out_of_memory, self.dropped_by_hardware,
                           self.sources, self.dropped_slots, self.skipped)

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
        if group not in ("hardware", "weights", "kv_dtype", "model", "compute_dtype"):
            raise OptionError(f"group: unknown {shown(group)}; allowed: hardware, weights, kv_dtype, all",
                              parameters=("group",))
        return self.column(group)

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


def _block_columns(
    model: ModelSpec,
    hw: HardwareSpec,
    batch: np.ndarray,
    chips: np.ndarray,
    context: np.ndarray,
    max_batch: np.ndarray,
    tp: int,
    pp: int,
    topology_text: str | None,
    precision: Precision,
    price: float,
    memory_utilization: float,
    ep: int | None = None,
) -> tuple[dict[str, np.ndarray], str]:
    """Columns of the points of one (chip, dtypes, tp) block that fit in HBM, and the comms source.

    ``max_batch`` (chips × context, decode_step's own field) screens out every batch that
    overflows HBM; decode_step then runs once on the flat arrays of the rest.  The latency
    is the step model's prediction (``step_time_s``: collectives on the critical path on GPUs,
    overlapped on TPUs; the book's general form when tp = 1); throughput and cost follow from it.
    """
    slot, b = feasible_points(batch, max_batch)
    c = np.repeat(chips.astype(float), context.size)[slot]
    s = np.tile(context.astype(float), chips.size)[slot]
    none_fit = b.size == 0
    if none_fit:  # price one point for the block's sources (fitted kernels need a shape), keep none
        c, b, s = chips[:1].astype(float), batch[:1].astype(float), context[:1].astype(float)
    res = decode_step(model, hw, c, b, s, precision, price, tp=tp, topology_text=topology_text,
                      pp=pp if pp > 1 else None, ep=ep, memory_utilization=memory_utilization)
    fits = np.asarray(res.fits) & (not none_fit)  # all True but for float ties at the HBM edge
    keep = slice(None) if fits.all() else fits
    c, b = c[keep], b[keep]

    def kept(values: ArrayLike) -> np.ndarray:
        return np.broadcast_to(np.asarray(values, dtype=float), fits.shape)[keep]

    step_s = kept(res.step_time_s)
    tps = step.tokens_per_s(b, step_s)
    columns = {
        "chips": c.astype(np.int64),
        "tp": np.full(b.size, tp, dtype=np.int64),
        "pp": np.full(b.size, pp, dtype=np.int64),
        "batch": b.astype(np.int64),
        "context": s[keep].astype(np.int64),
        "step_time_s": step_s,
        "step_time_lower_s": kept(res.step_time_lower_s),
        "step_time_upper_s": kept(res.step_time_upper_s),
        "comms_time_s": kept(res.comms_time_s),
        "tokens_per_s": tps,
        "tokens_per_s_per_chip": tps / c,
        "tokens_per_s_per_user": 1.0 / step_s,
        "cost_per_million_tokens": cost.cost_per_million_tokens(price, c, tps),
        "bound": np.asarray(res.bound)[keep],
        "total_bytes": kept(res.total_bytes),
        "hbm_capacity_bytes": kept(res.hbm_capacity_bytes),
    }
    return columns, res.sources.get("comms", "")


def _memory_at(model: ModelSpec, hw: HardwareSpec, precision: Precision, price: float, tp: int, pp: int,
               topology_text: str | None, ep: int | None, memory_utilization: float, chips: np.ndarray,
               batch: np.ndarray, context: np.ndarray) -> tuple[Any, Any]:
    """(weights + KV bytes, usable HBM bytes) of a block's configurations, from decode_step."""
    res = decode_step(model, hw, chips, batch, context, precision, price, tp=tp, topology_text=topology_text,
                      pp=pp if pp > 1 else None, ep=ep, memory_utilization=memory_utilization)
    return res.total_bytes, res.usable_hbm_bytes


def _dropped_slots(
    block: int, tp: int, pp: int, batch: np.ndarray, chips: np.ndarray, context: np.ndarray,
    cols: dict[str, np.ndarray], memory: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Any, Any]],
) -> list[DroppedSlot]:
    """Each (chips, context) slot of a block that lost batches: the kept ones are a prefix of ``batch``.

    ``memory(chips, batch, context)`` gives (total bytes, usable bytes) at the first dropped batch.
    """
    slots = [(int(c), int(s)) for c in chips for s in context]
    kept = [int(np.count_nonzero((cols["chips"] == c) & (cols["context"] == s))) for c, s in slots]
    lost = [(slot, k) for slot, k in zip(slots, kept, strict=True) if k < batch.size]
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
) -> SweepResult:
    """Every (chip, weights, KV dtype, tp, chips, batch, context) decode step that fits in HBM.

    ``chips`` is the slice that serves the batch, or ``topologies`` its shapes (``4x4``:
    16 chips whose ICI axes carry the collectives); ``tp`` the model-parallel degrees to try
    (each must divide the chip count; None: the whole slice is one tp group, the book's
    figure).  ``labels`` names each chip's points (default: its name; the report passes the
    file each came from).  The loops run over chips × dtypes × tp degrees, never over configurations.
    """
    if not hardware:
        raise OptionError("hardware: give at least one chip", parameters=("hardware",))
    names = [hw.name for hw in hardware] if labels is None else list(labels)
    if len(names) != len(hardware):
        raise OptionError(f"labels: {len(names)} given for {len(hardware)} chips", parameters=("labels",))
    weights = check_dtypes(weights, "weights")
    kv_dtypes = check_dtypes(kv_dtypes, "kv_dtypes")
    if topologies:
        chips = [topology.topology_chips(topology.parse_topology(t)) for t in topologies]
    batch_axis, chips_axis, context_axis = (
        np.unique(np.asarray(v, dtype=np.int64).reshape(-1)) for v in (batch, chips, context)
    )
    skipped: list[str] = []
    groups = parallel_groups(chips_axis, tp, pp, topologies, skipped)
    if chips_axis.size * context_axis.size > MAX_SWEEP_SLOTS:
        raise OptionError(f"the sweep has {chips_axis.size:,} chip counts x {context_axis.size:,} contexts, more "
                          f"than the {MAX_SWEEP_SLOTS:,} this tool screens at once; give fewer chips= or context= "
                          "values", parameters=("chips", "context"))
    prices = dict(prices or {})
    parts: list[dict[str, np.ndarray]] = []
    blocks: list[dict[str, Any]] = []
    evaluated = dropped = held = 0
    dropped_by_hw: dict[str, int] = {}
    sources: dict[str, str] = {}
    comms_sources: dict[str, dict[str, None]] = {}
    slots: list[DroppedSlot] = []
    for hw, name in zip(hardware, names, strict=True):
        sources[f"hardware:{name}"] = chip_rates(hw, compute_dtype).source
        price = prices.get(name, prices.get(hw.name, hw.price_per_chip_hour))
        sources[f"price:{name}"] = "command line" if (name in prices or hw.name in prices) else "hardware spec"
        for w in weights:
            for kv in kv_dtypes:
                precision = Precision(w, kv, compute_dtype)
                # The whole-slice max batch bounds every tp's (replicas each hold the weights):
                # one screen per dtype pair; decode_step's own `fits` drops what it lets through.
                screen = decode_step(model, hw, chips_axis[:, None].astype(float), 1,
                                     context_axis[None, :].astype(float), precision, price,
                                     memory_utilization=memory_utilization)
                max_batch = np.broadcast_to(screen.max_batch, (chips_axis.size, context_axis.size))
                for degree, stages, rows, shape in groups:
                    fit_here = int(np.searchsorted(batch_axis, max_batch[rows].reshape(-1), side="right").sum())
                    held += fit_here
                    if held > MAX_SWEEP_POINTS:
                        raise OptionError(
                            f"the sweep would hold more than {MAX_SWEEP_POINTS:,} configurations that fit in HBM "
                            f"(about {MAX_SWEEP_POINTS * 500 / 1e9:.0f} GB); use a smaller grid: fewer batch=, "
                            "chips=, context= or dtype values, or a doubling range such as 1..4096",
                            parameters=("batch", "chips", "context"))
                    cols, comms = _block_columns(model, hw, batch_axis, chips_axis[rows], context_axis,
                                                 max_batch[rows], degree, stages, shape, precision, price,
                                                 memory_utilization, ep)
                    comms_sources.setdefault(name, {})[comms] = None
                    n_eval = batch_axis.size * rows.size * context_axis.size
                    n_kept = cols["step_time_s"].size
                    cols["block"] = np.full(n_kept, len(blocks), dtype=np.int32)
                    parts.append(cols)

                    if n_kept < n_eval:
                        memory = functools.partial(_memory_at, model, hw, precision, price, degree, stages,
                                                   shape, ep, memory_utilization)
                        slots += _dropped_slots(len(blocks), degree, stages, batch_axis, chips_axis[rows],
                                                context_axis, cols, memory)
                    blocks.append({"model": model.name, "hardware": name, "weights": w,
                                   "kv_dtype": kv, "compute_dtype": compute_dtype,
                                   "topology": shape or "", "critical_batch": float(screen.critical_batch),
                                   "price_per_chip_hour": float(price)})
                    evaluated += n_eval
                    dropped += n_eval - n_kept
                    dropped_by_hw[name] = dropped_by_hw.get(name, 0) + n_eval - n_kept
    columns = {k: np.concatenate([part[k] for part in parts]) for k in POINT_COLUMNS}
    for name, found in comms_sources.items():
        sources[f"comms:{name}"] = " | ".join(found)
    sources["model"] = model.source or model.name
    sources["formulas"] = f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'"
    return SweepResult(columns, tuple(blocks), evaluated, dropped, dropped_by_hw, sources, tuple(slots),
                       tuple(skipped))
