"""A day of load: one deployment shape, the replicas of each slot, chip-hours and cost per day.

Every candidate shape (:mod:`roofline.analyses.plan.shapes`, one sweep over the slots' distinct
workloads) gets, per slot, the replicas its rate needs (the steady plan's queueing model at the slot's
rate and lengths), at least ``min_replicas``, plus the failure headroom; a slot's cap
(``max_replicas``: a maintenance window) rules a shape out where it needs more.  Scaling is scheduled
from the known profile: a replica added for a slot starts ``delay`` earlier, the time to load its
weights (weight bytes / load bandwidth), and is billed from then, so every slot is served at full
strength.  Replicas leave at the end of their last slot, unless they are needed again within
``delay``: keeping one through a dip shorter than a restart is cheaper.  Counting replica "levels"
(the k-th replica runs while a slot needs at least k) makes that exact: each level costs its busy
hours plus, for each idle gap, min(gap, delay).  The shape with the lowest cost per day wins; a fixed
fleet sized for the peak and running all day is the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.plan.capacity import PlanCandidate, PlanConfig, candidate, check_plan_inputs
from roofline.analyses.plan.load_profile import LoadProfile
from roofline.analyses.plan.queueing import latencies, replicas_needed
from roofline.analyses.plan.shapes import ShapeTable, candidate_shapes
from roofline.analyses.plan.spares import Spares, check_spares_below, describe, node_size, replicas_lost
from roofline.analyses.step import Precision
from roofline.core.errors import OptionError, shown
from roofline.core.units import HOUR_S
from roofline.model import memory
from roofline.specs import HardwareSpec, ModelSpec

#: Default bandwidth at which a new replica reads its weights: one AWS EBS gp3 volume's largest
#: provisioned throughput, 1,000 MiB/s (AWS EC2 API reference, CreateVolume ``Throughput``: "maximum
#: of 1,000 MiB/s", gp3).  Local NVMe or a parallel file system is faster: give your own.
DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S = 1000 * 2**20
LOAD_BANDWIDTH_SOURCE = "1,000 MiB/s: one AWS EBS gp3 volume's largest throughput (AWS EC2 CreateVolume reference)"


@dataclass(frozen=True)
class Autoscaling:
    """How the fleet follows the load: at least ``min_replicas``; a new replica loads its weights at
    ``load_bandwidth_bytes_per_s`` before it serves."""

    min_replicas: int = 1
    load_bandwidth_bytes_per_s: float = DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S

    def __post_init__(self) -> None:
        if isinstance(self.min_replicas, bool) or not isinstance(self.min_replicas, int) or self.min_replicas < 0:
            raise OptionError(
                f"min_replicas must be a whole number >= 0 (got {shown(self.min_replicas)})",
                parameters=("min_replicas",),
            )
        if not (np.isfinite(self.load_bandwidth_bytes_per_s) and self.load_bandwidth_bytes_per_s > 0):
            raise OptionError(
                "load_bandwidth_bytes_per_s must be positive and finite "
                f"(got {shown(self.load_bandwidth_bytes_per_s)})",
                parameters=("load_bandwidth_bytes_per_s",),
            )


@dataclass(frozen=True)
class SlotPlan:
    """One slot of the chosen shape's schedule: its load, replicas and latencies (closed form or simulated)."""

    start_hour: float
    hours: float
    rate: float
    replicas: int
    spare_replicas: int
    rate_per_replica: float
    ttft_s: float
    tpot_s: float
    meets_slo: bool
    max_replicas: float
    lengths: str


@dataclass(frozen=True)
class DayCandidate:
    """One shape over the day: its cost per day and the replicas of each slot."""

    shape: PlanCandidate  # at the peak slot
    replicas: list[int]
    cost_per_day: float
    chip_hours: float
    replica_hours: float
    warmup_replica_hours: float
    scale_up_delay_s: float
    row: int = -1  # the shape's row in the plan's ShapeTable


@dataclass(frozen=True)
class DayPlan:
    """The cheapest shape over the day, its schedule, and a fixed peak-sized fleet to compare with."""

    best: DayCandidate | None
    schedule: list[SlotPlan]
    candidates: list[DayCandidate]
    fixed_fleet: DayCandidate | None
    profile: LoadProfile
    evaluated: int
    feasible: int
    reasons: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    plain: DayCandidate | None = None  # the same day without failure headroom (when spares are asked for)


def level_hours(replicas: np.ndarray, hours: np.ndarray, delay_h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(replica-hours, of which warm-up) per row of a cyclic schedule ``replicas`` (S, T) of slots ``hours``.

    Level k (the k-th replica) runs through every slot needing >= k; an idle gap between its runs costs
    min(gap, delay): restart (load the weights again) or keep it warm, whichever is cheaper.  Two laps
    round the cycle close each gap once: in the second, a slot that turns level k on pays its gap.
    """
    n = np.asarray(replicas, dtype=np.int64)
    s, t = n.shape
    busy = (n * hours).sum(axis=1).astype(float)
    extra = np.zeros(s)
    for k in range(1, int(n.max(initial=0)) + 1):
        on = n >= k
        gap = np.full(s, -np.inf)  # idle hours since the level was last on (-inf: not yet seen on)
        for step in range(2 * t):
            j = step % t
            if step >= t:
                extra += np.where(on[:, j] & (gap > 0), np.minimum(gap, delay_h), 0.0)
            gap = np.where(on[:, j], 0.0, gap + hours[j])
    return busy + extra, extra


def scale_up_delay_s(model: ModelSpec, weights: np.ndarray, kv: np.ndarray, bandwidth: float) -> np.ndarray:
    """(S,) seconds to load one replica's weights: model weight bytes in its dtypes / load bandwidth."""
    cache: dict[tuple[str, str], float] = {}
    out = np.empty(weights.size)
    for i, key in enumerate(zip(weights.tolist(), kv.tolist(), strict=True)):
        if key not in cache:
            cache[key] = memory.model_weight_bytes(model, Precision(*key).bytes_by_component) / bandwidth
        out[i] = cache[key]
    return out


def workloads_of(
    profile: LoadProfile, lengths: LengthDistribution | None
) -> tuple[list[LengthDistribution], np.ndarray]:
    """The distinct workloads of the slots (a slot's own lengths, else ``lengths``) and each slot's index."""
    found: dict[tuple[tuple[float, ...], ...], int] = {}
    dists: list[LengthDistribution] = []
    index = np.empty(len(profile), dtype=np.int64)
    for k, own in enumerate(profile.lengths):
        dist = own if own is not None else lengths
        if dist is None:
            raise OptionError(
                f"{profile.source}: slot {k + 1} has no lengths: give the plan's lengths or input_len,output_len "
                "columns",
                parameters=("lengths",),
            )
        key = (tuple(dist.input_len), tuple(dist.output_len), tuple(dist.weight))
        if key not in found:
            found[key] = len(dists)
            dists.append(dist)
        index[k] = found[key]
    return dists, index


def slot_replicas(
    table: ShapeTable,
    profile: LoadProfile,
    work: np.ndarray,
    config: PlanConfig,
    lost: np.ndarray,
    autoscaling: Autoscaling,
) -> tuple[np.ndarray, np.ndarray]:
    """(S, T) replicas per shape and slot (need, at least the minimum, plus headroom) and (S,) feasible."""
    rate = table.rate[:, work]  # (S, T)
    need = np.where(profile.rate[None, :] > 0, replicas_needed(profile.rate[None, :], rate), 0.0)
    n = np.maximum(need, autoscaling.min_replicas) + lost[:, None]
    caps = profile.max_replicas[None, :]
    if config.max_replicas is not None:
        caps = np.minimum(caps, config.max_replicas)
    ok = np.all(np.isfinite(n) & (n <= caps), axis=1)
    return np.where(ok[:, None], n, 0).astype(np.int64), ok


def plan_day(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    profile: LoadProfile,
    lengths: LengthDistribution | None,
    config: PlanConfig,
    autoscaling: Autoscaling = Autoscaling(),
) -> DayPlan:
    """The cheapest shape for the day, its per-slot replicas, chip-hours and cost per day (and, with
    failure headroom asked for, the same day without it: the cost of resilience)."""
    table, work = day_table(model, hardware, profile, lengths, config)
    day = day_from_table(model, hardware, table, profile, work, config, autoscaling)
    if config.spares.any:
        plain = day_from_table(model, hardware, table, profile, work, replace(config, spares=Spares()), autoscaling)
        day = replace(day, plain=plain.best)
    return day


def day_table(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    profile: LoadProfile,
    lengths: LengthDistribution | None,
    config: PlanConfig,
) -> tuple[ShapeTable, np.ndarray]:
    """Inputs checked; every shape evaluated for the slots' distinct workloads; each slot's workload index."""
    check_plan_inputs(max(profile.peak_rate, 1.0), config.targets, hardware)
    caps = {int(c) for c in profile.max_replicas if np.isfinite(c)}
    for cap in sorted(caps):
        check_spares_below(config.spares, cap, f"{profile.source}: a slot's max_replicas")
    check_spares_below(config.spares, config.max_replicas)
    dists, work = workloads_of(profile, lengths)
    return candidate_shapes(model, hardware, dists, config.targets, config.space, config.executor), work


def day_from_table(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    table: ShapeTable,
    profile: LoadProfile,
    work: np.ndarray,
    config: PlanConfig,
    autoscaling: Autoscaling,
    simulated: dict[int, np.ndarray] | None = None,
) -> DayPlan:
    """Rank every shape of ``table`` by cost per day; ``simulated`` replaces the slot replicas of the shapes
    it names (and leaves only those in the running)."""
    by_name = {hw.name: hw for hw in hardware}
    nodes = {h: node_size(by_name[h], config.spares.node_chips) for h in set(table.fields["hardware"].tolist())}
    node = np.array([nodes[h][0] for h in table.fields["hardware"]], dtype=np.int64)
    lost = replicas_lost(table.fields["chips"], node, config.spares).astype(np.int64)
    n, ok = slot_replicas(table, profile, work, config, lost, autoscaling)
    if simulated is not None:
        ok &= np.isin(np.arange(len(table)), list(simulated))
        for i, reps in simulated.items():
            n[i] = reps
            ok[i] &= bool(np.all(reps >= 0))
    delay_s = scale_up_delay_s(
        model, table.fields["weights"], table.fields["kv_dtype"], autoscaling.load_bandwidth_bytes_per_s
    )
    rows = np.flatnonzero(ok)
    replica_h, warm_h = level_hours(n[rows], profile.hours, delay_s[rows] / HOUR_S)
    cost = replica_h * table.dollars_per_replica_hour()[rows]
    peak = int(np.argmax(profile.rate))
    order = np.lexsort((table.step_s[rows, work[peak]], cost))
    at_peak = (work[peak], max(profile.peak_rate, 1e-300))

    def day(r: int) -> DayCandidate:
        i = int(rows[r])
        shape = candidate(table, i, int(at_peak[0]), at_peak[1], int(n[i, peak]), int(lost[i]), config.targets)
        chip_h = float(replica_h[r] * table.chips[i])
        return DayCandidate(
            shape, n[i].tolist(), float(cost[r]), chip_h, float(replica_h[r]), float(warm_h[r]), float(delay_s[i]), i
        )

    chosen = [day(int(r)) for r in order[: config.top]]
    best = chosen[0] if chosen else None
    schedule = (
        schedule_of(table, int(rows[order[0]]), n[int(rows[order[0]])], lost, profile, work, config) if best else []
    )
    sources = {
        **table.sources,
        "load profile": profile.source,
        "autoscaling": autoscaling_source(autoscaling),
        "queueing": "each slot: the steady plan's M/G/1 prefill wait, TPOT / (1 - ρ), Little's law at its rate",
    }
    if config.spares.any:
        sources["spares"] = f"SLOs hold with {describe(config.spares)}; " + "; ".join(s for _, s in nodes.values())
    fixed = fixed_fleet(table, n, rows, lost, profile, work, config, delay_s)
    reasons = {k: int(sum(r[k] for r in table.reasons)) for k in ("memory", "TTFT SLO", "TPOT SLO")}
    return DayPlan(best, schedule, chosen, fixed, profile, table.evaluated, int(rows.size), reasons, sources)


def autoscaling_source(autoscaling: Autoscaling) -> str:
    """Where the scale-up delay and the minimum come from, for the result's sources."""
    bandwidth = autoscaling.load_bandwidth_bytes_per_s
    given = LOAD_BANDWIDTH_SOURCE if bandwidth == DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S else "given"
    return (
        f"scheduled from the profile, at least {autoscaling.min_replicas} replica(s); a new replica loads its "
        f"weights at {bandwidth / 1e9:g} GB/s ({given}) before its slot; one idle for less than that is kept"
    )


def fixed_fleet(
    table: ShapeTable,
    n: np.ndarray,
    rows: np.ndarray,
    lost: np.ndarray,
    profile: LoadProfile,
    work: np.ndarray,
    config: PlanConfig,
    delay_s: np.ndarray,
) -> DayCandidate | None:
    """The cheapest fleet with one replica count all day that serves every slot: sized for the peak."""
    if rows.size == 0:
        return None
    day_h = float(profile.hours.sum())
    top = n[rows].max(axis=1)
    per_day = top * table.dollars_per_replica_hour()[rows] * day_h
    r = int(np.argmin(per_day))
    i, reps = int(rows[r]), int(top[r])
    peak = int(np.argmax(profile.rate))
    shape = candidate(table, i, int(work[peak]), max(profile.peak_rate, 1e-300), reps, int(lost[i]), config.targets)
    chip_h = float(reps * table.chips[i] * day_h)
    return DayCandidate(
        shape, [reps] * len(profile), float(per_day[r]), chip_h, reps * day_h, 0.0, float(delay_s[i]), i
    )


def schedule_of(
    table: ShapeTable,
    i: int,
    n: np.ndarray,
    lost: np.ndarray,
    profile: LoadProfile,
    work: np.ndarray,
    config: PlanConfig,
) -> list[SlotPlan]:
    """Shape ``i``'s slots: replicas and the closed form's latencies at each slot's per-replica rate."""
    out = []
    ttft_slo, tpot_slo = config.targets.ttft_slo_s, config.targets.tpot_slo_s
    for k in range(len(profile)):
        j = int(work[k])
        dist = table.workloads[j]
        serving = int(n[k] - lost[i])
        per = float(profile.rate[k]) / serving if serving > 0 else 0.0
        moments = (float(table.prefill_mean_s[i, j]), float(table.prefill_sq_s2[i, j]), float(table.step_s[i, j]))
        lat = latencies(per, *moments, max(dist.mean_output - 1.0, 0.0))
        meets = (ttft_slo is None or lat["ttft_s"] <= ttft_slo * (1 + 1e-9)) and (
            tpot_slo is None or lat["tpot_s"] <= tpot_slo * (1 + 1e-9)
        )
        out.append(
            SlotPlan(
                float(profile.start_hour[k]),
                float(profile.hours[k]),
                float(profile.rate[k]),
                int(n[k]),
                int(lost[i]),
                per,
                lat["ttft_s"],
                lat["tpot_s"],
                bool(meets) and (profile.rate[k] == 0 or serving > 0),
                float(profile.max_replicas[k]),
                dist.source,
            )
        )
    return out
