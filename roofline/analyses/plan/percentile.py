"""Capacity planning at a latency percentile: the closed-form plan screens, the simulator sizes.

:func:`roofline.analyses.plan.capacity.plan` (M/G/1 prefill wait, Little's law) ranks every deployment
quickly; the cheapest few are then re-sized with :func:`roofline.analyses.simulate.simulate`: one
continuous-batching replica at qps / replicas Poisson arrivals, priced by the step model, replicas
added until the TTFT and TPOT SLOs hold at the requested percentile.  Each candidate is one job of
:func:`roofline.analyses.executors.run_jobs` (a local process pool, or Ray tasks on a cluster); jobs
are deterministic per seed, so the answer does not depend on where they ran.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, replace

import numpy as np

from roofline.analyses.executors import ExecutorConfig, Progress, run_jobs
from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.plan.capacity import (
    PlanCandidate,
    PlanConfig,
    PlanResult,
    candidate,
    cost_per_million_output_tokens,
    plan,
    plan_with,
)
from roofline.analyses.plan.day import Autoscaling, DayPlan, day_from_table, day_table
from roofline.analyses.plan.load_profile import LoadProfile
from roofline.core.errors import OptionError, shown
from roofline.formulas.cost import cost_per_hour
from roofline.specs import HardwareSpec, ModelSpec

PERCENTILES = ("p50", "p90", "p99")
#: Most replicas a simulated candidate may grow to beyond the closed form's count.
MAX_EXTRA_REPLICAS = 16


@dataclass(frozen=True)
class SimulatedSizing:
    """One candidate re-sized by simulation: replicas, the percentile latencies, and whether it meets the SLOs."""

    candidate: PlanCandidate
    replicas: int
    ttft_s: float
    tpot_s: float
    meets: bool
    simulated_requests: int


@dataclass(frozen=True)
class SimulationSettings:
    """How candidates are simulated: the percentile, requests per run, the seed, where the runs go."""

    percentile: str = "p99"
    requests: int = 2000
    seed: int = 0
    executor: ExecutorConfig = ExecutorConfig()

    def __post_init__(self) -> None:
        check_percentile(self.percentile)


def check_percentile(percentile: str) -> None:
    if percentile not in PERCENTILES:
        raise OptionError(
            f"percentile must be one of {', '.join(PERCENTILES)} (got {shown(percentile)})", parameters=("percentile",)
        )


def check_ttft_target(ttft_slo_s: float | None) -> None:
    if ttft_slo_s is None:
        raise OptionError(
            "ttft_slo_s: a percentile plan needs a TTFT target (an overloaded replica shows as queueing in TTFT)",
            parameters=("ttft_slo_s",),
        )


def size_candidate(
    model: ModelSpec,
    hw: HardwareSpec,
    d: PlanCandidate,
    qps: float,
    lengths: LengthDistribution,
    percentile: str,
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
    requests: int,
    seed: int,
    memory_utilization: float,
    engine: str | None = None,
) -> SimulatedSizing:
    """Smallest serving replica count (from the closed form's up) whose simulated percentile latencies
    meet the SLOs; ``replicas`` in the answer counts the candidate's spare replicas too."""
    from roofline.analyses.simulate import OpenLoop, SchedulerConfig, SimConfig, simulate
    from roofline.analyses.simulate.adapter import cost_for
    from roofline.analyses.step import Precision

    longest = float(max(lengths.input_len + lengths.output_len))
    cost = cost_for(
        model,
        hw,
        d.tp,
        Precision(d.weights, d.kv_dtype).with_compute(d.compute_dtype),
        memory_utilization,
        pp=d.pp if d.pp > 1 else None,
        ep=d.ep if d.ep > 1 else None,
        max_context=longest + 1.0,
        engine=engine,
    )
    scheduler = SchedulerConfig(max_num_seqs=d.batch, max_num_batched_tokens=max(8192, d.batch))
    replicas = max(d.replicas - d.spare_replicas, 1)
    for _ in range(MAX_EXTRA_REPLICAS + 1):
        config = SimConfig(lengths=lengths, requests=requests, seed=seed, scheduler=scheduler)
        res = simulate(cost, OpenLoop(qps / replicas, 1.0), config)
        ttft, tpot = float(getattr(res.ttft_s, percentile)), float(getattr(res.tpot_s, percentile))
        ok = (ttft_slo_s is None or ttft <= ttft_slo_s) and (tpot_slo_s is None or tpot <= tpot_slo_s)
        # An overloaded replica shows as a growing queue, hence a p99 TTFT far past any SLO; dropped
        # requests (longer than the KV cache) never meet it.
        if ok and res.dropped == 0:
            return SimulatedSizing(d, replicas + d.spare_replicas, ttft, tpot, True, requests)
        replicas += max(1, replicas // 4)
    return SimulatedSizing(d, replicas + d.spare_replicas, ttft, tpot, False, requests)


def sizing_jobs(
    model: ModelSpec,
    hardware: list[HardwareSpec],
    work: list[tuple[PlanCandidate, float, LengthDistribution]],
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
    settings: SimulationSettings,
    memory_utilization: float,
    engine: str | None,
) -> list[tuple[object, ...]]:
    """One :func:`size_candidate` argument tuple per (candidate, rate, lengths)."""
    by_name = {hw.name: hw for hw in hardware}
    return [
        (
            model,
            by_name[d.hardware],
            d,
            qps,
            lengths,
            settings.percentile,
            ttft_slo_s,
            tpot_slo_s,
            settings.requests,
            settings.seed,
            memory_utilization,
            engine,
        )
        for d, qps, lengths in work
    ]


def priced(s: SimulatedSizing, qps: float, mean_output: float, percentile: str) -> PlanCandidate:
    """The candidate at its simulated replica count, priced, with the percentile latencies."""
    d = s.candidate
    dollars = float(cost_per_hour(d.price_per_chip_hour, d.chips_per_replica * s.replicas))
    return replace(
        d,
        replicas=s.replicas,
        total_chips=d.chips_per_replica * s.replicas,
        dollars_per_hour=dollars,
        cost_per_million_output_tokens=float(cost_per_million_output_tokens(dollars, qps, mean_output)),
        ttft_s=s.ttft_s,
        tpot_s=s.tpot_s,
        binding=f"{percentile} by simulation",
    )


def plan_at_percentile(
    model: ModelSpec,
    hardware: list[HardwareSpec],
    qps: float,
    lengths: LengthDistribution,
    percentile: str,
    ttft_slo_s: float | None = None,
    tpot_slo_s: float | None = None,
    candidates: int = 6,
    requests: int = 2000,
    seed: int = 0,
    workers: int = 2,
    executor: ExecutorConfig | None = None,
    progress: Progress | None = None,
    **plan_options: object,
) -> tuple[PlanResult, list[SimulatedSizing]]:
    """The closed-form plan, then its cheapest ``candidates`` re-sized by simulation at ``percentile``."""
    settings = SimulationSettings(percentile, requests, seed, executor or ExecutorConfig("local", workers))
    check_ttft_target(ttft_slo_s)
    screen = plan(
        model,
        hardware,
        qps,
        lengths,
        ttft_slo_s,
        tpot_slo_s,
        top=candidates,
        executor=settings.executor,
        **plan_options,
    )  # type: ignore[arg-type]
    mu = float(plan_options.get("memory_utilization", 0.9))  # type: ignore[arg-type]
    engine = plan_options.get("engine")
    return resize(model, hardware, screen, lengths, settings, (mu, engine), progress)  # type: ignore[arg-type]


def plan_at_percentile_with(
    model: ModelSpec,
    hardware: list[HardwareSpec],
    qps: float,
    lengths: LengthDistribution,
    config: PlanConfig,
    settings: SimulationSettings,
    candidates: int = 6,
    progress: Progress | None = None,
) -> tuple[PlanResult, list[SimulatedSizing]]:
    """:func:`plan_at_percentile` with one config object (the plan's) and the simulation's settings."""
    check_ttft_target(config.targets.ttft_slo_s)
    screen = plan_with(model, hardware, qps, lengths, replace(config, top=candidates, executor=settings.executor))
    model_of = (config.space.memory_utilization, config.space.engine)
    return resize(model, hardware, screen, lengths, settings, model_of, progress)


def resize(
    model: ModelSpec,
    hardware: list[HardwareSpec],
    screen: PlanResult,
    lengths: LengthDistribution,
    settings: SimulationSettings,
    model_of: tuple[float, str | None],
    progress: Progress | None,
) -> tuple[PlanResult, list[SimulatedSizing]]:
    """The screen's candidates re-sized by simulation (``model_of``: memory utilization and engine),
    ranked by $/hour among those meeting the SLOs at the percentile."""
    qps, percentile = screen.qps, settings.percentile
    work = [(d, qps, lengths) for d in screen.candidates]
    jobs = sizing_jobs(model, hardware, work, screen.ttft_slo_s, screen.tpot_slo_s, settings, *model_of)
    sized = run_jobs(size_candidate, jobs, settings.executor, progress)
    ranked = sorted(
        (priced(s, qps, lengths.mean_output, percentile) for s in sized if s.meets), key=lambda d: d.dollars_per_hour
    )
    sources = {
        **screen.sources,
        "sizing": f"{percentile} TTFT/TPOT from roofline.analyses.simulate ({settings.requests} requests per "
        "candidate, Poisson arrivals, continuous batching) over the "
        f"{len(jobs)} cheapest closed-form candidates, run in {settings.executor.describe()}",
    }
    best = ranked[0] if ranked else None
    result = replace(screen, best=best, candidates=ranked, feasible=len(ranked), sources=sources)
    return result, sized


def plan_day_at_percentile(
    model: ModelSpec,
    hardware: list[HardwareSpec],
    profile: LoadProfile,
    lengths: LengthDistribution | None,
    config: PlanConfig,
    autoscaling: Autoscaling,
    settings: SimulationSettings,
    candidates: int = 4,
    progress: Progress | None = None,
) -> tuple[DayPlan, list[SimulatedSizing]]:
    """The closed-form day plan, then its cheapest ``candidates`` shapes re-sized slot by slot by simulation
    (one job per shape and distinct slot load), re-ranked by cost per day."""
    check_ttft_target(config.targets.ttft_slo_s)
    table, work = day_table(model, hardware, profile, lengths, config)
    screen = day_from_table(model, hardware, table, profile, work, replace(config, top=candidates), autoscaling)
    keys: dict[tuple[int, float, int], int] = {}
    tasks: list[tuple[PlanCandidate, float, LengthDistribution]] = []
    for c in screen.candidates:
        for k, rate in enumerate(profile.rate.tolist()):
            key = (c.row, rate, int(work[k]))
            if rate > 0 and key not in keys:
                keys[key] = len(tasks)
                d = candidate(table, c.row, key[2], rate, c.replicas[k], c.shape.spare_replicas, config.targets)
                tasks.append((d, rate, table.workloads[key[2]]))
    space = config.space
    jobs = sizing_jobs(
        model, hardware, tasks, *astuple(config.targets), settings, space.memory_utilization, space.engine
    )
    sized = run_jobs(size_candidate, jobs, settings.executor, progress)
    simulated: dict[int, np.ndarray] = {}
    for c in screen.candidates:
        reps = np.array(c.replicas, dtype=np.int64)
        for k, rate in enumerate(profile.rate.tolist()):
            s = sized[keys[(c.row, rate, int(work[k]))]] if rate > 0 else None
            if s is not None:
                cap = min(profile.max_replicas[k], np.inf if config.max_replicas is None else config.max_replicas)
                reps[k] = s.replicas if s.meets and s.replicas <= cap else -1
        simulated[c.row] = reps
    day = day_from_table(model, hardware, table, profile, work, config, autoscaling, simulated)
    if day.best is not None:
        row = day.best.row
        schedule = []
        for k, slot in enumerate(day.schedule):
            s = sized[keys[(row, slot.rate, int(work[k]))]] if slot.rate > 0 else None
            schedule.append(slot if s is None else replace(slot, ttft_s=s.ttft_s, tpot_s=s.tpot_s, meets_slo=s.meets))
        day = replace(day, schedule=schedule)
    sources = {
        **day.sources,
        "sizing": f"{settings.percentile} TTFT/TPOT from roofline.analyses.simulate ({settings.requests} requests per "
        f"slot load) for the {len(screen.candidates)} cheapest closed-form shapes, {len(jobs)} runs in "
        f"{settings.executor.describe()}",
    }
    return replace(day, sources=sources), sized
