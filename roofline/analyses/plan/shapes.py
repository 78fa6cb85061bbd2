"""Candidate deployment shapes: what one replica of each can carry, for one or more workloads.

A *shape* is everything about a replica but how many there are: chip, slice (chips, tp, pp and any
axis the sweep adds), batch, weight and KV dtypes.  :func:`candidate_shapes` evaluates every shape of
a :class:`SearchSpace` with one :func:`roofline.analyses.sweep.run.decode_sweep` (decode steps at each
workload's decode-weighted context, collectives included, points that overflow HBM dropped) and
:func:`roofline.analyses.request.prefill_and_memory` (each workload's prefill moments, request_from's TTFT,
one call per slice), then
gives each (shape, workload) the largest per-replica request rate meeting the memory, concurrency
(Little's law) and SLO limits (:mod:`roofline.analyses.plan.queueing`).  The planners size replicas
from that table: :func:`roofline.analyses.plan.capacity.plan` (one steady rate), the day plan, the chip
mix.  A new search axis (attention DP, EP) plugs in through the sweep: a shape is one sweep *part*
(its slice and parallelism) at one batch, whatever the part holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from roofline.analyses.executors import ExecutorConfig, run_jobs
from roofline.analyses.lengths import LengthDistribution, weighted_mean
from roofline.analyses.plan.queueing import rate_for_concurrency, rate_for_tpot, rate_for_ttft
from roofline.analyses.request import prefill_and_memory
from roofline.analyses.step import Precision
from roofline.analyses.sweep.run import decode_sweep
from roofline.core.errors import OptionError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, deployment
from roofline.deploy.layout import check_expert_degree
from roofline.model import memory
from roofline.specs import HardwareSpec, ModelSpec

#: Dtypes the search tries by default (weights × KV cache; matmuls in SearchSpace.compute_dtype, bf16).
WEIGHT_DTYPES = ("bf16", "int8")
KV_DTYPES = ("bf16", "int8")
BATCHES = tuple(2**k for k in range(0, 11))
#: Per-shape columns copied from the sweep (block labels and part columns); an added axis adds its name.
SHAPE_COLUMNS = tuple("hardware weights kv_dtype compute_dtype chips tp pp batch ep attention_dp".split())
#: Names of the per-replica rate limits, in the order the binding constraint is read.
LIMITS = ("concurrency", "TTFT SLO", "TPOT SLO")


@dataclass(frozen=True)
class SearchSpace:
    """The deployment shapes a plan tries, and how each is priced and modelled."""

    max_chips: int = 256
    batches: tuple[int, ...] = BATCHES
    weights: tuple[str, ...] = WEIGHT_DTYPES
    kv_dtypes: tuple[str, ...] = KV_DTYPES
    tp: tuple[int, ...] | None = None
    pp: tuple[int, ...] | None = None
    ep: int | tuple[int, ...] | None = None
    mfu: float = 1.0
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    engine: str | None = None
    prices: Mapping[str, float] = field(default_factory=dict)
    #: Price each shape at the pessimistic edge of its data tier's band at this confidence (None: as predicted):
    #: latencies x the band's ``confidence`` quantile of measured/predicted (roofline.analyses.bands.pessimistic).
    confidence: float | None = None
    #: Also try expert parallelism over each whole stage, with attention tensor- and data-parallel (None: for
    #: MoE models); :func:`roofline.analyses.sweep.options.expert_layouts`.
    wide_ep: bool | None = None
    #: Matmul dtype of every shape, and per-component overrides (Precision.compute/compute_components).
    compute_dtype: str = "bf16"
    compute_components: tuple[tuple[str, str], ...] = ()

    def explores_wide_ep(self, model: ModelSpec) -> bool:
        """Whether the search adds the wide expert-parallel layouts for ``model``."""
        return model.num_experts > 1 if self.wide_ep is None else self.wide_ep


@dataclass(frozen=True)
class Targets:
    """Latency targets (seconds; None: no target)."""

    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None


@dataclass(frozen=True)
class ShapeTable:
    """Candidate shapes (rows, S) × workloads (columns, W): what one replica carries and why not more.

    Arrays are (S, W) unless noted; ``rate`` is 0 where the shape cannot serve the workload at all.
    """

    fields: dict[str, np.ndarray]  # (S,) per SHAPE_COLUMNS
    price: np.ndarray  # (S,) USD per chip-hour
    step_s: np.ndarray  # decode step at the workload's context (1.0 where absent: see present)
    step_double_s: np.ndarray  # the same part's step at twice the batch (inf: not in the search or no fit)
    prefill_mean_s: np.ndarray
    prefill_sq_s2: np.ndarray
    longest_bytes: np.ndarray  # the tightest request's bytes on the replica (request's memory check)
    usable_bytes: np.ndarray  # the replica's usable HBM
    memory_bytes: np.ndarray  # the sweep's total bytes at the batch and context
    hbm_bytes: np.ndarray
    present: np.ndarray  # the sweep kept the point (it fits at the batch)
    in_domain: np.ndarray  # (S,) the slice fits the chip's ICI domain and max_chips
    limits: dict[str, np.ndarray]
    rate: np.ndarray
    workloads: tuple[LengthDistribution, ...]
    evaluated: int
    reasons: tuple[dict[str, int], ...]  # per workload: shapes lost to memory / TTFT / TPOT
    sources: dict[str, str]

    def __len__(self) -> int:
        return int(self.price.shape[0])

    @property
    def usable(self) -> np.ndarray:
        """(S, W): fits in the ICI domain, in HBM at the batch, and holds the tightest request."""
        return (
            self.in_domain[:, None]
            & self.present
            & np.asarray(memory.fits_in_memory(self.longest_bytes, self.usable_bytes))
        )

    @property
    def chips(self) -> np.ndarray:
        return self.fields["chips"].astype(float)

    def dollars_per_replica_hour(self) -> np.ndarray:
        """(S,) chips × USD per chip-hour of one replica."""
        return self.chips * self.price


def _chip_axis(hardware: Sequence[HardwareSpec], max_chips: int) -> np.ndarray:
    """Powers of two up to ``max_chips`` (a replica stays within one chip's ICI/NVLink domain)."""
    top = max(min(hw.max_ici_domain_chips or max_chips, max_chips) for hw in hardware)
    return np.array([2**k for k in range(0, 20) if 2**k <= top], dtype=np.int64)


def prefill_moments(
    model: ModelSpec,
    hw: HardwareSpec,
    layout: tuple[int, ...],
    workloads: Sequence[LengthDistribution],
    precision: Precision,
    space: SearchSpace,
) -> np.ndarray:
    """(4, W): E[S], E[S²] of one request's prefill (request, batch 1) on a (chips, tp, pp, ep) slice, and the
    memory of each workload's tightest request with the replica's usable HBM (request's own check,
    KV at I + O beside its prefill); one vectorised request over every workload's points."""
    chips, tp, pp, ep = layout if len(layout) == 4 else (*layout, space.ep if isinstance(space.ep, int) else 1)
    dep = deployment(
        model,
        hw,
        chips,
        precision,
        tp=tp,
        pp=pp if pp > 1 else None,
        ep=ep if isinstance(ep, int) and ep > 1 else None,
        memory_utilization=space.memory_utilization,
        engine=space.engine,
    )
    inp = np.concatenate([w.input_len for w in workloads])
    out = np.concatenate([w.output_len for w in workloads])
    prefill, held = prefill_and_memory(dep, inp, out, 1, space.mfu)  # request_from's TTFT and memory check
    ttft = np.broadcast_to(np.asarray(prefill.time_s, dtype=float), inp.shape)
    need, room = (
        np.broadcast_to(np.asarray(v, dtype=float), inp.shape) for v in (held.replica_bytes, held.replica_usable_bytes)
    )
    moments = np.empty((4, len(workloads)))
    start = 0
    for j, w in enumerate(workloads):
        seg = slice(start, start + w.input_len.size)
        start = seg.stop
        t, n, r = ttft[seg], need[seg], room[seg]
        worst = int(np.argmax(n - r))
        moments[:, j] = (weighted_mean(t, w.weight), weighted_mean(t**2, w.weight), n[worst], r[worst])
    return moments


def _check_asked_ep(space: SearchSpace, chip_axis: np.ndarray, num_experts: int) -> None:
    """An expert degree the user asked for needs a slice it divides (its experts spread over ep of the
    slice's chips); none in the search is refused, not silently replaced by the wide-EP layouts."""
    asked = [space.ep] if isinstance(space.ep, int) else list(space.ep or ())
    for e in asked:
        check_expert_degree(e, num_experts)
        if e > 1 and not np.any(chip_axis % e == 0):
            raise OptionError(
                f"ep={e}: no slice the plan tries has a multiple of {e} chips (slices of 1 to "
                f"{int(np.max(chip_axis))} chips: the chip's NVLink/ICI domain and max_chips); allowed: an ep "
                "that divides a slice's chips",
                parameters=("ep",),
            )


def candidate_shapes(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    workloads: Sequence[LengthDistribution],
    targets: Targets,
    space: SearchSpace,
    executor: ExecutorConfig | None = None,
    chip_axis: np.ndarray | None = None,
) -> ShapeTable:
    """Every shape of ``space`` on ``hardware`` and the per-replica rate it carries for each workload.

    With a Ray (or other non-local) ``executor`` and several chips, each chip's sweep is one task and the
    tables are joined in chip order: the same table as one sweep over all of them.
    """
    if chip_axis is None:
        chip_axis = _chip_axis(hardware, space.max_chips)
    _check_asked_ep(space, chip_axis, model.num_experts)
    if executor is not None and executor.kind != "local" and len(hardware) > 1:
        jobs = [(model, [hw], workloads, targets, space, None, chip_axis) for hw in hardware]
        return join_tables(run_jobs(candidate_shapes, jobs, executor))
    by_name = {hw.name: hw for hw in hardware}
    contexts = [int(round(w.decode_context)) for w in workloads]
    axis = sorted(set(contexts))
    sw = decode_sweep(
        model,
        hardware,
        batch=np.asarray(space.batches),
        chips=chip_axis,
        context=tuple(axis),
        weights=space.weights,
        kv_dtypes=space.kv_dtypes,
        prices=dict(space.prices),
        tp=None if space.tp is None else list(space.tp),
        pp=None if space.pp is None else list(space.pp),
        memory_utilization=space.memory_utilization,
        ep=space.ep,
        engine=space.engine,
        wide_ep=space.explores_wide_ep(model),
        compute_dtype=space.compute_dtype,
        compute_components=space.compute_components,
    )
    cols = sw.columns
    stored = cols.stored  # type: ignore[attr-defined]  # decode_sweep's SweepColumns
    # A shape is one (part, batch); its rows at the workloads' contexts become its columns.
    key = stored["part"].astype(np.int64) * len(space.batches) + stored["batch_index"].astype(np.int64)
    shape_keys, first, row_shape = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # shapes in the sweep's order (ties in the ranking keep it)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    row_shape = rank[row_shape]
    n_shapes, n_work = order.size, len(workloads)
    ctx_index = np.asarray([axis.index(c) for c in contexts])
    cell = np.full((n_shapes, len(axis)), -1, dtype=np.int64)
    cell[row_shape, stored["context_index"]] = np.arange(row_shape.size)
    rows = cell[:, ctx_index]  # (S, W) sweep row or -1
    present = rows >= 0
    any_row = first[order]
    fields = {name: sw.column(name)[any_row] for name in SHAPE_COLUMNS}
    blocks = cols["block"][any_row]
    price = np.array([space.prices.get(h, by_name[h].price_per_chip_hour) for h in fields["hardware"]], dtype=float)
    domain = np.array([by_name[h].max_ici_domain_chips or space.max_chips for h in fields["hardware"]], dtype=float)
    chips = fields["chips"].astype(float)
    in_domain = (chips <= domain) & (chips <= space.max_chips)

    def gather(column: np.ndarray, fill: float) -> np.ndarray:
        return np.where(present, column[np.maximum(rows, 0)], fill)

    step_s = gather(cols["step_time_s"], 1.0)
    memory_bytes = gather(cols["total_bytes"], np.nan)
    hbm = gather(cols["hbm_capacity_bytes"], np.nan)
    step_double_s = _double_batch_steps(stored["part"][any_row], fields["batch"], step_s, present)
    moments = np.ones((4, n_shapes, n_work))
    moments[2] = 0.0
    parts = stored["part"][any_row]
    for part in np.unique(parts):
        sel = np.flatnonzero(parts == part)
        blk = sw.blocks[int(blocks[sel[0]])]
        layout = tuple(int(fields[k][sel[0]]) for k in ("chips", "tp", "pp", "ep"))
        prec = Precision(blk["weights"], blk["kv_dtype"]).with_compute(blk["compute_dtype"])
        moments[:, sel, :] = prefill_moments(model, by_name[blk["hardware"]], layout, workloads, prec, space)[
            :, None, :
        ]
    p_mean, p_sq, longest, usable_hbm = moments
    if space.confidence is not None:
        step_s, step_double_s, p_mean, p_sq = _pessimistic(
            model, by_name, fields["hardware"], space, (step_s, step_double_s, p_mean, p_sq)
        )
    table = ShapeTable(
        fields,
        price,
        step_s,
        step_double_s,
        p_mean,
        p_sq,
        longest,
        usable_hbm,
        memory_bytes,
        hbm,
        present,
        in_domain,
        {},
        np.zeros((n_shapes, n_work)),
        tuple(workloads),
        sw.evaluated,
        (),
        {**sw.sources, **_confidence_source(space)},
    )
    return _with_limits(table, targets, sw.evaluated // max(len(axis), 1), sw.dropped_out_of_memory, len(axis))


def _pessimistic(
    model: ModelSpec,
    by_name: Mapping[str, HardwareSpec],
    names: np.ndarray,
    space: SearchSpace,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decode steps x the TPOT band's ``confidence`` quantile, prefill moments x the TTFT band's (E[S²] x its
    square), per chip's data tier: the shapes priced at the band's pessimistic edge."""
    from roofline.analyses.bands import pessimistic

    step, double, mean, sq = (a.copy() for a in arrays)
    assert space.confidence is not None
    for name in np.unique(names):
        dep = deployment(model, by_name[str(name)], 1, engine=space.engine)
        r_tpot = pessimistic(dep, "tpot_s", 1.0, space.confidence)
        r_ttft = pessimistic(dep, "ttft_s", 1.0, space.confidence)
        rows = names == name
        step[rows] *= r_tpot
        double[rows] *= r_tpot
        mean[rows] *= r_ttft
        sq[rows] *= r_ttft**2
    return step, double, mean, sq


def _confidence_source(space: SearchSpace) -> dict[str, str]:
    if space.confidence is None:
        return {}
    return {
        "confidence": f"latencies at the {space.confidence:.0%} pessimistic edge of each chip's band (held-out "
        "measured/predicted of its data tier, roofline/data/bands.yaml); a tier without a band as predicted"
    }


def join_tables(tables: Sequence[ShapeTable]) -> ShapeTable:
    """Tables of the same workloads over different chips as one: shapes in order, counts added."""
    first = tables[0]

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(t, name) for t in tables])

    arrays = ("price", "step_s", "step_double_s", "prefill_mean_s", "prefill_sq_s2", "longest_bytes", "usable_bytes")
    arrays += ("memory_bytes", "hbm_bytes", "present", "in_domain", "rate")
    reasons = tuple(
        {k: sum(t.reasons[j][k] for t in tables) for k in first.reasons[j]} for j in range(len(first.workloads))
    )
    return ShapeTable(
        **{name: cat(name) for name in arrays},
        fields={k: np.concatenate([t.fields[k] for t in tables]) for k in first.fields},
        limits={k: np.concatenate([t.limits[k] for t in tables]) for k in first.limits},
        workloads=first.workloads,
        evaluated=sum(t.evaluated for t in tables),
        reasons=reasons,
        sources={k: v for t in tables for k, v in t.sources.items()},
    )


def _double_batch_steps(parts: np.ndarray, batch: np.ndarray, step_s: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(S, W): the step of the same part at twice the batch where the search holds and fits it, else inf."""
    index = {(int(p), int(b)): i for i, (p, b) in enumerate(zip(parts, batch, strict=True))}
    out = np.full(step_s.shape, np.inf)
    for i, (p, b) in enumerate(zip(parts, batch, strict=True)):
        j = index.get((int(p), int(b) * 2))
        if j is not None:
            out[i] = np.where(present[j], step_s[j], np.inf)
    return out


def _with_limits(table: ShapeTable, targets: Targets, per_context: int, dropped: int, contexts: int) -> ShapeTable:
    """The table with each rate limit, the binding minimum, and per-workload counts of why shapes fail."""
    decode_steps = np.array([max(w.mean_output - 1.0, 0.0) for w in table.workloads])
    p_mean, p_sq, step_s = table.prefill_mean_s, table.prefill_sq_s2, table.step_s
    inf = np.full(step_s.shape, np.inf)
    limits = {
        "concurrency": rate_for_concurrency(
            table.fields["batch"].astype(float)[:, None], p_mean, p_sq, step_s, decode_steps
        ),
        "TTFT SLO": rate_for_ttft(targets.ttft_slo_s, p_mean, p_sq) if targets.ttft_slo_s else inf,
        "TPOT SLO": rate_for_tpot(targets.tpot_slo_s, step_s, p_mean) if targets.tpot_slo_s else inf,
    }
    usable = table.usable
    rate = np.where(usable, np.minimum.reduce([limits[k] for k in LIMITS]), 0.0)
    in_domain = table.in_domain[:, None] & table.present
    reasons = []
    for j in range(len(table.workloads)):
        # One context: the sweep's own count of dropped points; several: the points of this context it lacks.
        lost = dropped if contexts == 1 else per_context - int(np.sum(table.present[:, j]))
        reasons.append(
            {
                "memory": lost + int(np.sum(in_domain[:, j] & ~usable[:, j])),
                "TTFT SLO": int(np.sum(usable[:, j] & (limits["TTFT SLO"][:, j] <= 0))),
                "TPOT SLO": int(np.sum(usable[:, j] & (limits["TPOT SLO"][:, j] <= 0))),
            }
        )
    return ShapeTable(
        **{**table.__dict__, "limits": limits, "rate": rate, "reasons": tuple(reasons)}  # type: ignore[arg-type]
    )
