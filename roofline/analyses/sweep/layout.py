"""Planning and evaluating a sweep: its blocks, the max-batch screen, the kernel run and the dropped slots.

A block is one (chip, dtypes, tp, pp, slice shape); decode_step's own ``max_batch`` (fit in HBM
is monotone in batch) screens each block's (chips, context) slots before anything is evaluated,
so the kernel's columns are allocated once; :func:`_evaluate` runs
:func:`roofline.analyses.sweep.kernel.evaluate_part` over every part and counts what it dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.step import BOOK, Precision, decode_step, step_memory
from roofline.analyses.sweep.grid import SweepGrid
from roofline.analyses.sweep.kernel import PointStore, Tables, evaluate_part
from roofline.analyses.sweep.options import MAX_SWEEP_SLOTS, check_dtypes, expert_layouts, parallel_groups
from roofline.analyses.sweep.result import BlockLabels, DroppedSlot
from roofline.core.checks import check_array
from roofline.core.errors import OptionError
from roofline.core.types import Number
from roofline.deploy import Rates, chip_rates, deployment, engine_terms, topology
from roofline.deploy.deployment import check_hardware_list, check_model, operator_priced
from roofline.deploy.layout import attention_dp_for, check_expert_degree
from roofline.deploy.rates import at_achievable
from roofline.specs import HardwareSpec, ModelSpec


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
    ep: int | None = None
    attention_dp: int = 1


def _plan(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    names: Sequence[str],
    axes: tuple[np.ndarray, np.ndarray, np.ndarray],
    precisions: list[Precision],
    groups: list[tuple[int, int, int | None, np.ndarray, str | None]],
    prices: Mapping[str, float],
    memory_utilization: float,
    sources: dict[str, str],
) -> list[_Block]:
    """Every block of the sweep with the screen's feasible batch counts (known before any evaluation)."""
    batch_axis, chips_axis, context_axis = axes
    blocks: list[_Block] = []
    for hw, name in zip(hardware, names, strict=True):
        rates = chip_rates(hw, precisions[0].compute)
        priced = at_achievable(rates) if operator_priced(model) else rates  # what each deployment runs at
        sources[f"hardware:{name}"] = priced.source
        price = prices.get(name, prices.get(hw.name, hw.price_per_chip_hour))
        sources[f"price:{name}"] = "command line" if (name in prices or hw.name in prices) else "hardware spec"
        for precision in precisions:
            # The whole-slice max batch bounds every tp's (replicas each hold the weights):
            # one screen per dtype pair; the step's own `fits` drops what it lets through.
            screen = decode_step(
                model,
                hw,
                chips_axis[:, None].astype(float),
                1,
                context_axis[None, :].astype(float),
                precision,
                price,
                memory_utilization=memory_utilization,
                rates=rates,
            )
            max_batch = np.broadcast_to(screen.max_batch, (chips_axis.size, context_axis.size))
            counts = np.searchsorted(batch_axis, max_batch.reshape(-1), side="right").reshape(max_batch.shape)
            for degree, stages, experts, rows, shape in groups:
                blocks.append(
                    _Block(
                        hw,
                        name,
                        rates,
                        precision,
                        price,
                        degree,
                        stages,
                        rows,
                        shape,
                        counts[rows],
                        float(screen.critical_batch),
                        experts,
                        attention_dp_for(degree, experts or 1, None, model.num_experts),
                    )
                )
    return blocks


def _tables(
    blocks: list[_Block], parts: list[tuple[int, int]], batch_axis: np.ndarray, context_axis: np.ndarray
) -> Tables:
    block_of = np.array([p[0] for p in parts], dtype=np.int32)
    return Tables(
        batch=batch_axis,
        context=context_axis,
        part_block=block_of,
        part_chips=np.array([p[1] for p in parts], dtype=np.int64),
        part_tp=np.array([blocks[i].tp for i in block_of], dtype=np.int64),
        part_pp=np.array([blocks[i].pp for i in block_of], dtype=np.int64),
        part_ep=np.array([blocks[i].ep or 1 for i in block_of], dtype=np.int64),
        part_dp=np.array([blocks[i].attention_dp for i in block_of], dtype=np.int64),
        part_price=np.array([blocks[i].price for i in block_of], dtype=float),
        part_hbm_bytes=np.array([blocks[i].hw.hbm_bytes for i in block_of], dtype=float),
    )


def _parts(blocks: list[_Block], chips_axis: np.ndarray) -> list[tuple[int, int]]:
    """(block, chips) of every part, in evaluation order."""
    return [(i, int(chips_axis[row])) for i, blk in enumerate(blocks) for row in blk.rows]


def _memory_at(
    model: ModelSpec,
    hw: HardwareSpec,
    precision: Precision,
    price: float,
    tp: int,
    pp: int,
    topology_text: str | None,
    ep: int | None,
    memory_utilization: float,
    chips: np.ndarray,
    batch: np.ndarray,
    context: np.ndarray,
) -> tuple[Number, Number]:
    """(weights + KV bytes, usable HBM bytes) of a block's configurations, the busiest replica's times r
    (it decides the fit): the step model's memory (:func:`~roofline.analyses.step.step_memory`, what
    ``decode_step`` reports), without its step terms."""
    dep = deployment(
        model,
        hw,
        chips,
        precision,
        tp=tp,
        pp=pp if pp > 1 else None,
        ep=ep,
        topology_text=topology_text,
        memory_utilization=memory_utilization,
        price_per_chip_hour=price,
    )
    mem = step_memory(dep, batch, context)
    return (np.multiply(dep.replicas, mem.replica_bytes), np.multiply(dep.replicas, mem.replica_usable_bytes))


def _dropped_slots(
    block: int,
    tp: int,
    pp: int,
    batch: np.ndarray,
    chips: np.ndarray,
    context: np.ndarray,
    kept: Sequence[int],
    memory: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Number, Number]],
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
    return [
        DroppedSlot(
            block,
            c,
            tp,
            pp,
            s,
            int(batch[k - 1]) if k else 0,
            int(batch[k]),
            int(batch.size - k),
            float(total[i]),
            float(usable[i]),
        )
        for i, ((c, s), k) in enumerate(lost)
    ]


@dataclass(frozen=True)
class _Outcome:
    """What evaluating a sweep's blocks counted: points evaluated and dropped, per chip, and each lost slot."""

    evaluated: int
    dropped: int
    dropped_by_hardware: dict[str, int]
    dropped_slots: tuple[DroppedSlot, ...]


def _evaluate(
    model: ModelSpec,
    blocks: list[_Block],
    axes: tuple[np.ndarray, np.ndarray, np.ndarray],
    store: PointStore,
    memory_utilization: float,
    sources: dict[str, str],
    engine: str | None = None,
) -> _Outcome:
    """Run the kernel over every part of every block into ``store``, counting what it dropped."""
    batch_axis, chips_axis, context_axis = axes
    batch_f, context_f = batch_axis.astype(float), context_axis.astype(float)
    for blk in blocks:
        sources[f"engine:{blk.name}"] = engine_terms(blk.hw, engine).source
    evaluated = dropped = part = 0
    dropped_by_hw: dict[str, int] = {}
    comms_sources: dict[str, dict[str, None]] = {}
    slots: list[DroppedSlot] = []
    known: dict[
        tuple[int, int, int, int | None, str | None], str
    ] = {}  # the collectives' source does not depend on points
    for index, blk in enumerate(blocks):
        key = (id(blk.rates), blk.tp, blk.pp, blk.ep, blk.shape)
        row_kept = np.zeros((blk.rows.size, context_axis.size), dtype=np.int64)
        for local, row in enumerate(blk.rows):
            if key in known and not blk.counts[local].any():  # nothing to evaluate, the source is known
                part += 1
                comms_sources.setdefault(blk.name, {})[known[key]] = None
                continue
            dep = deployment(
                model,
                blk.hw,
                float(chips_axis[row]),
                blk.precision,
                tp=blk.tp,
                pp=blk.pp if blk.pp > 1 else None,
                ep=blk.ep,
                topology_text=blk.shape,
                memory_utilization=memory_utilization,
                price_per_chip_hour=blk.price,
                rates=blk.rates,
                engine=engine,
            )
            sources[f"hardware:{blk.name}"] = dep.rates.source  # what the points ran at (achievable with an entry)
            _, comms = evaluate_part(dep, batch_f, context_f, blk.counts[local], store, part, row_kept=row_kept[local])
            part += 1
            known[key] = comms
            comms_sources.setdefault(blk.name, {})[comms] = None
        kept = int(row_kept.sum())
        n_eval = batch_axis.size * blk.rows.size * context_axis.size
        if kept < n_eval:
            memory = functools.partial(
                _memory_at,
                model,
                blk.hw,
                blk.precision,
                blk.price,
                blk.tp,
                blk.pp,
                blk.shape,
                blk.ep,
                memory_utilization,
            )
            slots += _dropped_slots(
                index,
                blk.tp,
                blk.pp,
                batch_axis,
                chips_axis[blk.rows],
                context_axis,
                row_kept.reshape(-1).tolist(),
                memory,
            )
        evaluated += n_eval
        dropped += n_eval - kept
        dropped_by_hw[blk.name] = dropped_by_hw.get(blk.name, 0) + n_eval - kept
    for name, found in comms_sources.items():
        sources[f"comms:{name}"] = " | ".join(found)
    return _Outcome(evaluated, dropped, dropped_by_hw, tuple(slots))


def _labels(model: ModelSpec, blocks: list[_Block]) -> tuple[BlockLabels, ...]:
    return tuple(
        {
            "model": model.name,
            "hardware": b.name,
            "weights": b.precision.weights,
            "kv_dtype": b.precision.kv,
            "compute_dtype": b.precision.describe_compute(),
            "topology": b.shape or "",
            "critical_batch": b.critical_batch,
            "price_per_chip_hour": float(b.price),
        }
        for b in blocks
    )


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


def slice_chips(topologies: Sequence[str], chips: ArrayLike | None) -> list[int]:
    """Chips of each topology; ``chips`` given as well must list the same sizes (never silently replaced)."""
    sizes = [topology.topology_chips(topology.parse_topology(t)) for t in topologies]
    if chips is not None:
        given = np.unique(np.asarray(chips, dtype=np.int64).reshape(-1)).tolist()
        if sorted(set(sizes)) != given:
            counts = ", ".join(str(n) for n in dict.fromkeys(sizes))
            listed = ",".join(str(c) for c in given[:8]) + (",..." if len(given) > 8 else "")
            raise OptionError(
                f"topologies={','.join(topologies)} has {counts} chips, not chips={listed}",
                parameters=("topologies", "chips"),
            )
    return sizes


def _setup(model: ModelSpec, hardware: Sequence[HardwareSpec], grid: SweepGrid) -> _Setup:
    """Validate a sweep's options and plan its blocks and parts (each (tp, pp) group with each expert layout:
    :func:`~roofline.analyses.sweep.options.expert_layouts`)."""
    batch, chips, context, tp, pp, topologies = grid.batch, grid.chips, grid.context, grid.tp, grid.pp, grid.topologies
    ep, compute_dtype, memory_utilization = grid.ep, grid.compute_dtype, grid.memory_utilization
    check_model(model)
    hardware = check_hardware_list(hardware)
    names = [hw.name for hw in hardware] if grid.labels is None else list(grid.labels)
    if len(names) != len(hardware):
        raise OptionError(f"labels: {len(names)} given for {len(hardware)} chips", parameters=("labels",))
    weights = check_dtypes(grid.weights, "weights")
    kv_dtypes = check_dtypes(grid.kv_dtypes, "kv_dtypes")
    if topologies:
        chips = slice_chips(topologies, chips)
    elif chips is None:
        chips = (1,)
    axes = tuple(
        np.unique(check_array(v, name, minimum=1.0, open_low=False, whole=True).astype(np.int64).reshape(-1))
        for name, v in (("batch", batch), ("chips", chips), ("context", context))
    )
    skipped: list[str] = []
    eps = None if ep is None else ([ep] if isinstance(ep, int) else list(ep))
    if eps and any(e > 1 for e in eps) and model.num_experts <= 1:
        raise OptionError(f"ep={eps}: the model has no routed experts (ep needs an MoE model)", parameters=("ep",))
    for e in eps or []:  # a degree no chip count can rescue is a bad value, not a skipped combination
        check_expert_degree(int(e), model.num_experts)
    groups = expert_layouts(
        axes[1], parallel_groups(axes[1], tp, pp, topologies, skipped), eps, grid.wide_ep, model.num_experts, skipped
    )
    if axes[1].size * axes[2].size > MAX_SWEEP_SLOTS:
        raise OptionError(
            f"the sweep has {axes[1].size:,} chip counts x {axes[2].size:,} contexts, more "
            f"than the {MAX_SWEEP_SLOTS:,} this tool screens at once; give fewer chips= or context= "
            "values",
            parameters=("chips", "context"),
        )
    compute = tuple(grid.compute_components)
    precisions = [Precision(w, kv, compute_dtype, compute_components=compute) for w in weights for kv in kv_dtypes]
    sources: dict[str, str] = {}
    blocks = _plan(
        model, hardware, names, axes, precisions, groups, dict(grid.prices or {}), memory_utilization, sources
    )
    parts = _parts(blocks, axes[1])
    return _Setup(axes, blocks, parts, _tables(blocks, parts, axes[0], axes[2]), sources, tuple(skipped))


def _finish_sources(sources: dict[str, str], model: ModelSpec) -> dict[str, str]:
    sources["model"] = model.source or model.name
    sources["formulas"] = f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'"
    return sources
