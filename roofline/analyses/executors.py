"""Executors: run independent jobs (a plan's candidate simulations, its per-workload evaluations) in a
local process pool or as Ray tasks, results in job order.

Every job is a module-level function and a tuple of plain arguments, deterministic by itself (its
seed is among its arguments), so the results do not depend on where or in what order jobs run: a
plan on Ray equals the plan in one process, bit for bit.  :data:`EXECUTORS` is a registry: a new
backend is one function ``(fn, jobs, config, progress) -> results`` and one
:func:`register_executor` call.

Ray (``pip install 'roofline[ray]'``) is imported only when asked for.  With no ``address`` it
starts a local Ray of ``workers`` CPUs for the call and stops it after; with an address
(``auto``, ``ray://head:10001``) it joins that cluster and ships this package to the workers
(``runtime_env`` ``py_modules``), so the cluster needs Ray and roofline's dependencies, not roofline.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from roofline.core.errors import OptionError, shown

T = TypeVar("T")
#: Called as ``progress(done, total)`` after each job finishes (a view draws a bar; analyses never print).
Progress = Callable[[int, int], None]
Runner = Callable[[Callable[..., T], Sequence[tuple[object, ...]], "ExecutorConfig", Progress | None], list[T]]

#: Most workers an executor is given (a local pool or a local Ray).
MAX_WORKERS = 1024


@dataclass(frozen=True)
class ExecutorConfig:
    """Where jobs run: ``kind`` ("local" process pool or "ray"), ``workers`` (local processes or local
    Ray CPUs; 1 runs in this process), ``address`` (a Ray cluster; None starts a local Ray)."""

    kind: str = "local"
    workers: int = 2
    address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise OptionError(
                f"executor: unknown {shown(self.kind)}; allowed: {', '.join(EXECUTORS)}", parameters=("executor",)
            )
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or not 1 <= self.workers <= MAX_WORKERS:
            raise OptionError(
                f"workers must be a whole number in [1, {MAX_WORKERS}] (got {shown(self.workers)})",
                parameters=("workers",),
            )
        if self.address is not None and self.kind != "ray":
            raise OptionError("address: a cluster address needs the ray executor", parameters=("address",))

    def describe(self) -> str:
        if self.kind == "ray":
            where = f"the Ray cluster at {self.address}" if self.address else f"a local Ray with {self.workers} CPUs"
            return f"Ray tasks on {where}"
        return f"a local pool of {self.workers} processes" if self.workers > 1 else "this process"


def run_jobs(
    fn: Callable[..., T],
    jobs: Sequence[tuple[object, ...]],
    config: ExecutorConfig | None = None,
    progress: Progress | None = None,
) -> list[T]:
    """``[fn(*job) for job in jobs]``, run where ``config`` says; results in job order."""
    config = config or ExecutorConfig()
    if not jobs:
        return []
    return EXECUTORS[config.kind](fn, list(jobs), config, progress)


def _local(
    fn: Callable[..., T], jobs: Sequence[tuple[object, ...]], config: ExecutorConfig, progress: Progress | None
) -> list[T]:
    """This process (one worker or one job), else a process pool of ``workers``."""
    total = len(jobs)
    if config.workers == 1 or total == 1:
        out = []
        for done, job in enumerate(jobs, start=1):
            out.append(fn(*job))
            if progress:
                progress(done, total)
        return out
    results: list[T | None] = [None] * total
    with ProcessPoolExecutor(max_workers=min(config.workers, total)) as pool:
        futures = {pool.submit(fn, *job): index for index, job in enumerate(jobs)}
        for done, future in enumerate(as_completed(futures), start=1):
            results[futures[future]] = future.result()
            if progress:
                progress(done, total)
    return results  # type: ignore[return-value]


def _ray(
    fn: Callable[..., T], jobs: Sequence[tuple[object, ...]], config: ExecutorConfig, progress: Progress | None
) -> list[T]:
    """One Ray task per job (one CPU each), gathered in order; a local Ray lives for this call only."""
    try:
        import ray
    except ImportError:
        raise OptionError(
            "executor: 'ray' needs the Ray package: pip install 'roofline[ray]' (or pip install ray)",
            parameters=("executor",),
        ) from None
    started = not ray.is_initialized()
    if started:
        quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if config.address:
            package = str(Path(__file__).resolve().parents[1])
            ray.init(address=config.address, runtime_env={"py_modules": [package]}, **quiet)
        else:
            # A local Ray for this run: its memory monitor would kill these small tasks for other
            # processes' memory on a shared machine; set RAY_memory_monitor_refresh_ms to keep it.
            saved = os.environ.get("RAY_memory_monitor_refresh_ms")
            os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
            try:
                ray.init(num_cpus=config.workers, **quiet)
            finally:
                if saved is None:
                    os.environ.pop("RAY_memory_monitor_refresh_ms", None)
    try:
        task = ray.remote(num_cpus=1)(fn)
        refs = [task.remote(*job) for job in jobs]
        pending, total = list(refs), len(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            if progress:
                progress(total - len(pending), total)
        return list(ray.get(refs))
    finally:
        if started:
            ray.shutdown()


EXECUTORS: dict[str, Runner] = {"local": _local, "ray": _ray}  # type: ignore[dict-item]


def register_executor(name: str, runner: Runner) -> None:
    """Add a backend: ``runner(fn, jobs, config, progress)`` returns ``[fn(*job) for job in jobs]`` in order."""
    EXECUTORS[name] = runner
