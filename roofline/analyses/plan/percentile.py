"""Capacity planning at a latency percentile: the closed-form plan screens, the simulator sizes.

:func:`roofline.analyses.plan.capacity.plan` (M/G/1 prefill wait, Little's law) ranks every deployment quickly; the
cheapest few are then re-sized with :func:`roofline.analyses.simulate.simulate` — a continuous-batching
replica at qps / replicas Poisson arrivals, priced by the step model — adding replicas until
the TTFT and TPOT SLOs hold at the requested percentile.  Candidates are simulated in parallel
with the standard library's process pool.  (A much larger search would hand the same
``size_candidate`` calls to a cluster scheduler such as Ray's task API, one task per candidate.)
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.plan.capacity import PlanCandidate, PlanResult, cost_per_million_output_tokens, plan
from roofline.core.errors import RooflineError
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


def _percentile(p: object, name: str) -> float:
    return float(getattr(p, name))


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
    """Smallest replica count (from the closed form's up) whose simulated percentile latencies meet the SLOs."""
    from roofline.analyses.simulate import OpenLoop, SchedulerConfig, simulate
    from roofline.analyses.simulate.adapter import cost_for
    from roofline.analyses.step import Precision

    longest = float(max(lengths.input_len + lengths.output_len))
    cost = cost_for(
        model,
        hw,
        d.tp,
        Precision(d.weights, d.kv_dtype),
        memory_utilization,
        pp=d.pp if d.pp > 1 else None,
        max_context=longest + 1.0,
        engine=engine,
    )
    scheduler = SchedulerConfig(max_num_seqs=d.batch, max_num_batched_tokens=max(8192, d.batch))
    replicas = d.replicas
    for _ in range(MAX_EXTRA_REPLICAS + 1):
        res = simulate(cost, OpenLoop(qps / replicas, 1.0), lengths, requests, seed, scheduler)
        ttft, tpot = _percentile(res.ttft_s, percentile), _percentile(res.tpot_s, percentile)
        ok = (ttft_slo_s is None or ttft <= ttft_slo_s) and (tpot_slo_s is None or tpot <= tpot_slo_s)
        # An overloaded replica shows as a growing queue, hence a p99 TTFT far past any SLO; dropped
        # requests (longer than the KV cache) never meet it.
        if ok and res.dropped == 0:
            return SimulatedSizing(d, replicas, ttft, tpot, True, requests)
        replicas += max(1, replicas // 4)
    return SimulatedSizing(d, replicas, ttft, tpot, False, requests)


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
    **plan_options: object,
) -> tuple[PlanResult, list[SimulatedSizing]]:
    """The closed-form plan, then its cheapest ``candidates`` re-sized by simulation at ``percentile``."""
    if percentile not in PERCENTILES:
        raise RooflineError(f"percentile (--percentile) must be one of {', '.join(PERCENTILES)} (got {percentile!r})")
    if ttft_slo_s is None:
        raise RooflineError("--percentile needs --ttft-slo: an overloaded replica shows as queueing in TTFT")
    screen = plan(model, hardware, qps, lengths, ttft_slo_s, tpot_slo_s, top=candidates, **plan_options)  # type: ignore[arg-type]
    by_name = {hw.name: hw for hw in hardware}
    mu = float(plan_options.get("memory_utilization", 0.9))  # type: ignore[arg-type]
    engine = plan_options.get("engine")
    jobs = [
        (model, by_name[d.hardware], d, qps, lengths, percentile, ttft_slo_s, tpot_slo_s, requests, seed, mu, engine)
        for d in screen.candidates
    ]
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            sized = list(pool.map(size_candidate, *zip(*jobs, strict=True)))
    else:
        sized = [size_candidate(*job) for job in jobs]
    priced = []
    for s in sized:
        if not s.meets:
            continue
        dollars = float(cost_per_hour(s.candidate.price_per_chip_hour, s.candidate.chips_per_replica * s.replicas))
        priced.append(
            (
                dollars,
                replace(
                    s.candidate,
                    replicas=s.replicas,
                    total_chips=s.candidate.chips_per_replica * s.replicas,
                    dollars_per_hour=dollars,
                    cost_per_million_output_tokens=float(
                        cost_per_million_output_tokens(dollars, qps, lengths.mean_output)
                    ),
                    ttft_s=s.ttft_s,
                    tpot_s=s.tpot_s,
                    binding=f"{percentile} by simulation",
                ),
            )
        )
    priced.sort(key=lambda item: item[0])
    best = priced[0][1] if priced else None
    sources = {
        **screen.sources,
        "sizing": f"{percentile} TTFT/TPOT from roofline.analyses.simulate ({requests} requests per "
        "candidate, Poisson arrivals, continuous batching) over the "
        f"{len(jobs)} cheapest closed-form candidates",
    }
    result = replace(screen, best=best, candidates=[d for _, d in priced], feasible=len(priced), sources=sources)
    return result, sized
