"""Capacity planning speed (issue 29): a 24-slot day over ~10^3 candidate shapes, and the percentile day on
1, 2 and 4 workers (local Ray and the local process pool).

    python benchmarks/bench_plan_day.py [--part closed|percentile|all] [--workers 1,2,4] [--requests N]

closed:     LLaMA-3-70B on h100-sxm, h200, mi300x and b200; weights bf16/int8/fp8 x KV bf16/int8; slices 1-8
            chips; batches 1-1024: 1,056 shapes.  24 hourly slots of the built-in diurnal shape, each slot
            with its own request lengths (24 distinct workloads).  Target: < 60 s on 2 cores.
percentile: the same day at p99 by simulation (LLaMA-3-8B on one H100 type, a smaller search so the runs
            dominate): the cheapest 4 shapes x 24 slots; wall time per executor and worker count, and the
            speed-up over 1 worker.  Target: linear in workers (bounded by the cores you have).
"""

from __future__ import annotations

import argparse
import os
import time

from roofline.analyses.executors import ExecutorConfig
from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.plan.capacity import PlanConfig, SearchSpace, Targets
from roofline.analyses.plan.day import Autoscaling, plan_day
from roofline.analyses.plan.load_profile import diurnal_profile, make_profile
from roofline.analyses.plan.percentile import SimulationSettings, plan_day_at_percentile
from roofline.specs import load_hardware, load_model


def day_with_lengths(peak: float) -> object:
    """The built-in diurnal day, each hour with its own lengths (prompts grow through the working day)."""
    base = diurnal_profile(peak)
    lengths = [fixed_lengths(512 + 128 * k, 128 + 8 * k) for k in range(24)]
    return make_profile(base.start_hour.tolist(), base.rate.tolist(), lengths, source="diurnal, 24 workloads")


def bench_closed() -> None:
    model = load_model("llama-3-70b")
    hws = [load_hardware(h) for h in ("h100-sxm", "h200", "mi300x", "b200")]
    space = SearchSpace(max_chips=8, weights=("bf16", "int8", "fp8"), kv_dtypes=("bf16", "int8"))
    config = PlanConfig(Targets(2.0, 0.05), space)
    start = time.perf_counter()
    day = plan_day(model, hws, day_with_lengths(20.0), None, config)
    seconds = time.perf_counter() - start
    best = day.best
    print(
        f"plan day [closed form]: {day.evaluated:,} shape-workload points ({day.evaluated // 24:,} shapes x 24 "
        f"workloads), {day.feasible:,} shapes feasible all day, in {seconds:.1f} s; best {best.shape.hardware} "
        f"x{best.shape.chips_per_replica} batch {best.shape.batch}: ${best.cost_per_day:,.0f}/day  [target: < 60 s]"
    )


def bench_percentile(workers: list[int], requests: int) -> None:
    model, hws = load_model("llama-3-8b"), [load_hardware("h100-sxm")]
    space = SearchSpace(max_chips=2, batches=(32, 64, 128), weights=("bf16",), kv_dtypes=("bf16",))
    config = PlanConfig(Targets(1.0, 0.05), space)
    profile = diurnal_profile(60.0)
    lengths = fixed_lengths(1024, 128)
    kinds = ["ray"] if _has_ray() else []
    times: dict[tuple[str, int], float] = {}
    answer = None
    for kind in [*kinds, "local"]:
        for n in workers:
            settings = SimulationSettings("p99", requests, 0, ExecutorConfig(kind, n))
            start = time.perf_counter()
            day, sized = plan_day_at_percentile(model, hws, profile, lengths, config, Autoscaling(), settings)
            times[(kind, n)] = seconds = time.perf_counter() - start
            cost = day.best.cost_per_day if day.best else None
            answer = answer if answer is not None else cost
            same = "same answer" if cost == answer else f"DIFFERENT answer {cost} vs {answer}"
            base = times[(kind, workers[0])]
            print(
                f"plan day [p99, {kind}, {n} worker(s)]: {len(sized)} simulations of {requests} requests in "
                f"{seconds:.1f} s, speed-up {base / seconds:.2f}x over {workers[0]} ({same}; "
                f"{os.cpu_count()} cores)  [target: linear in workers]"
            )


def _has_ray() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("closed", "percentile", "all"), default="all")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    if args.part in ("closed", "all"):
        bench_closed()
    if args.part in ("percentile", "all"):
        bench_percentile([int(w) for w in args.workers.split(",")], args.requests)
