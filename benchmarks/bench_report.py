"""The default report's speed and size against the issue's targets (prints; asserts nothing).

    python benchmarks/bench_report.py              # 3 runs of `roofline report` (the quickstart's command)
    python benchmarks/bench_report.py --runs 1     # one run
    python benchmarks/bench_report.py --stages     # also time the stages in one process (serial)

Each run is `python -m roofline report --out DIR/index.html` in a fresh process, as the quickstart
runs it: wall time (target <= 5 s on 2 cores, simulations included), CPU time of the process and its
workers (the machine's load moves wall time, not CPU time), and the page's size (target < 8 MB).
The figure is the median over the runs.  ``--stages`` splits one run's CPU time into its parts
(imports, sweeps and prefill per model, the summary's answers for every target, the simulations).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
WALL_TARGET_S = 5.0
SIZE_TARGET_BYTES = 8e6


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every waited-for child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(folder: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, page bytes) of one `roofline report` in a fresh process."""
    out = folder / "index.html"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "roofline", "report", "--out", str(out)],
        check=True,
        env=env,
        cwd=folder,
        capture_output=True,
    )
    return time.perf_counter() - t0, children_cpu_s() - cpu0, out.stat().st_size


def stages() -> None:
    """CPU seconds of each stage of one default report, serially in this process."""
    t = time.process_time()
    from roofline.analyses.tails import ladder, load_curve
    from roofline.analyses.targets import Target
    from roofline.views.report import Scenario, build_report
    from roofline.views.report import work as report_work
    from roofline.views.report.controls import summary_section
    from roofline.views.report.runs import model_run
    from roofline.views.report.summary import ANY_DTYPE, answers
    from roofline.views.report.tails import tail_setup

    print(f"  imports: {time.process_time() - t:.2f} s")
    scenario = Scenario()
    refs = scenario.hardware_refs()
    runs = {}
    for name in scenario.models:
        t = time.process_time()
        runs[name] = model_run(name, refs, scenario)
        print(f"  {name}: sweeps and prefill {time.process_time() - t:.2f} s ({len(runs[name].predicted):,} points)")
    t = time.process_time()
    summary_section(runs, refs, scenario)
    print(f"  summary (every target and dtype of the controls): {time.process_time() - t:.2f} s")
    target = Target(scenario.ttft_slo_s, scenario.tpot_slo_s)
    for name, run in runs.items():
        best = answers(run, refs, scenario, target, ANY_DTYPE).cheapest
        if best is None:
            continue
        setup = tail_setup(best, refs, scenario)
        t = time.process_time()
        full = float(run.full_rate[best.index])
        load_curve(setup, ladder(full), full)
        spent = time.process_time() - t
        print(f"  {name}: tails, batch {setup.batch}, up to {setup.requests()} requests a rate: {spent:.2f} s")
    report_work.MAX_WORKERS = 1
    t = time.process_time()
    build_report(scenario)
    print(f"  the whole page, serially: {time.process_time() - t:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stages", action="store_true")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"default `roofline report`, {args.runs} runs, {cores} cores, load average {os.getloadavg()[0]:.1f}")
    walls, cpus, sizes = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):
            wall, cpu, size = one_run(Path(folder))
            walls.append(wall)
            cpus.append(cpu)
            sizes.append(size)
            print(f"  run: {wall:.2f} s wall, {cpu:.2f} s CPU, {size / 1e6:.2f} MB")
    wall, cpu, size = statistics.median(walls), statistics.median(cpus), max(sizes)
    print(f"default report wall time: {wall:.2f} s (target <= {WALL_TARGET_S:g} s: {'met' if wall <= 5 else 'MISSED'})")
    print(f"default report CPU time: {cpu:.2f} s (process and workers)")
    print(f"page size: {size / 1e6:.2f} MB (target < 8 MB: {'met' if size < SIZE_TARGET_BYTES else 'MISSED'})")
    if args.stages:
        print("stages (CPU, one process):")
        stages()


if __name__ == "__main__":
    main()
