"""The report's per-model work, spread over the machine's cores: each model's sweeps, the per-op
breakdown, and the simulation of its cheapest deployment under load.

The tasks are independent except that a model's load curve needs its sweeps, so they run on a process
pool (the standard library's, as plan's percentile search uses) in three waves: every model's sweeps
(the costliest first, so the last task to finish is a short one), each load curve as soon as its
model's sweeps are in, then the per-op breakdowns as fillers. While the workers simulate, the page's
own process builds the summary.  Results are the same as a serial run's, in the scenario's order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np

from roofline.analyses.tails import LoadCurve, TailSetup, ladder, load_curve
from roofline.analyses.targets import Target
from roofline.specs import load_model
from roofline.views.report.runs import ModelRun, model_run
from roofline.views.report.scenario import HardwareRef, Scenario
from roofline.views.report.sections import OpsFound, ops_found
from roofline.views.report.summary import ANY_DTYPE, answers
from roofline.views.report.tails import tail_setup

#: Most worker processes (the report's target machine has 2 cores).
MAX_WORKERS = 2


@dataclass(frozen=True)
class ModelsWork:
    """Every model's sweeps, load curve (when the scenario draws tails and a deployment meets its target)
    and per-op breakdown (None when no slice within one scale-up domain holds the model)."""

    runs: dict[str, ModelRun]
    curves: dict[str, LoadCurve]
    ops: dict[str, OpsFound | None]


class _Inline(Executor):
    """An executor that runs each task at once in this process (one core, or one task)."""

    def submit(self, fn: Callable[..., object], /, *args: object, **kwargs: object) -> Future:
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def workers(tasks: int) -> int:
    """Processes to use: one per task up to the cores available and :data:`MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(tasks, cores, MAX_WORKERS))


def cost_order(names: Sequence[str]) -> list[str]:
    """Models whose sweeps cost most first: routed experts price every batch's expected active experts,
    so MoE models (most experts first) lead, then the rest in the scenario's order."""
    experts = {name: load_model(name).num_experts for name in names}
    return sorted(names, key=lambda name: -experts[name])


def tail_args(
    run: ModelRun, refs: Sequence[HardwareRef], scenario: Scenario
) -> tuple[TailSetup, np.ndarray, float] | None:
    """What :func:`load_curve` simulates for a model: its cheapest deployment at the scenario's target, at
    rates up to saturation (None when the scenario draws no tails or no deployment meets the target)."""
    if not scenario.tails:
        return None
    best = answers(run, refs, scenario, Target(scenario.ttft_slo_s, scenario.tpot_slo_s), ANY_DTYPE).cheapest
    if best is None:
        return None
    full = float(run.full_rate[best.index])
    return tail_setup(best, refs, scenario), ladder(full), full


def all_models(
    scenario: Scenario,
    refs: Sequence[HardwareRef],
    meanwhile: Callable[[dict[str, ModelRun]], object] | None = None,
) -> tuple[ModelsWork, object]:
    """Every model's work, in the scenario's order, and what ``meanwhile(runs)`` returned: it runs in this
    process once every model's sweeps are in, while the workers simulate."""
    names = list(scenario.models)
    n = workers(2 * len(names))
    pool: Executor = ProcessPoolExecutor(max_workers=n) if n > 1 else _Inline()
    with pool:
        sweeps = {pool.submit(model_run, name, refs, scenario): name for name in cost_order(names)}
        runs: dict[str, ModelRun] = {}
        curves: dict[str, Future] = {}
        for future in as_completed(sweeps):
            name = sweeps[future]
            runs[name] = future.result()
            args = tail_args(runs[name], refs, scenario)
            if args is not None:
                curves[name] = pool.submit(load_curve, *args)
        ops = {name: pool.submit(ops_found, name, scenario, refs) for name in names}
        ordered = {name: runs[name] for name in names}
        extra = meanwhile(ordered) if meanwhile is not None else None
        done = ModelsWork(
            runs=ordered,
            curves={name: curves[name].result() for name in names if name in curves},
            ops={name: ops[name].result() for name in names},
        )
    return done, extra
