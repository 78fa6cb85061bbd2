"""The report's per-model work, spread over the machine's cores: each model's sweeps, the points served
at load, and the simulation of its cheapest deployment under load.

Models are independent, so each is one task of a process pool (the standard library's, as plan's
percentile search uses) when there are several models and cores; results are the same as a serial
run's, in the scenario's order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from roofline.analyses.tails import LoadCurve, ladder, load_curve
from roofline.analyses.targets import Target
from roofline.views.report.runs import ModelRun, model_run
from roofline.views.report.scenario import HardwareRef, Scenario
from roofline.views.report.summary import ANY_DTYPE, answers
from roofline.views.report.tails import tail_setup

#: Most worker processes (the report's target machine has 2 cores).
MAX_WORKERS = 2


def model_work(name: str, refs: Sequence[HardwareRef], scenario: Scenario) -> tuple[ModelRun, LoadCurve | None]:
    """One model: its run, and its cheapest deployment at the scenario's target simulated up to saturation."""
    run = model_run(name, refs, scenario)
    if not scenario.tails:
        return run, None
    best = answers(run, refs, scenario, Target(scenario.ttft_slo_s, scenario.tpot_slo_s), ANY_DTYPE).cheapest
    if best is None:
        return run, None
    full = float(run.full_rate[best.index])
    return run, load_curve(tail_setup(best, refs, scenario), ladder(full), full)


def workers(tasks: int) -> int:
    """Processes to use: one per task up to the cores available and :data:`MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(tasks, cores, MAX_WORKERS))


def all_models(scenario: Scenario, refs: Sequence[HardwareRef]) -> tuple[dict[str, ModelRun], dict[str, LoadCurve]]:
    """Every model's run and load curve, in the scenario's order."""
    names = list(scenario.models)
    n = workers(len(names))
    if n > 1:
        with ProcessPoolExecutor(max_workers=n) as pool:
            done = list(pool.map(model_work, names, [refs] * len(names), [scenario] * len(names)))
    else:
        done = [model_work(name, refs, scenario) for name in names]
    runs = {name: run for name, (run, _) in zip(names, done, strict=True)}
    curves = {name: curve for name, (_, curve) in zip(names, done, strict=True) if curve is not None}
    return runs, curves
