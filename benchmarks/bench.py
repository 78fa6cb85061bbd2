"""Speed figures of this machine for the README's performance section (prints, asserts nothing).

    python benchmarks/bench.py            # all five figures
    python benchmarks/bench.py --quick    # fewer repeats

1. decode-step sweep: configurations evaluated per second (target ≥ 5 million / s);
2. Pareto frontier of one million points (target < 0.5 s);
3. cold start of `roofline step` beside `python -c "import numpy, yaml, pydantic, typer, rich"`
   (target: within 1.5×);
4. `roofline report` with no arguments, run in a temporary folder (target < 5 s);
5. the serving simulator: simulated requests/s for 100,000 requests (benchmarks/bench_simulate.py).

Each timing is the best of several runs (the minimum is the least disturbed by other load).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from roofline.pareto import pareto_order
from roofline.specs import load_hardware, load_model
from roofline.sweep import decode_sweep

STEP_ARGS = ["step", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--chips", "8", "--batch", "16",
             "--context", "8192"]
BARE_IMPORT = "import numpy, yaml, pydantic, typer, rich"


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """Fastest wall time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def roofline_command() -> list[str]:
    """The installed `roofline` script next to this interpreter, else `python -m roofline`."""
    script = Path(sys.executable).with_name("roofline")
    return [str(script)] if script.exists() else [sys.executable, "-m", "roofline"]


def bench_sweep(repeats: int) -> None:
    model = load_model("llama-2-13b")
    hardware = [load_hardware(h) for h in ("tpu-v5e", "tpu-v6e", "h100-sxm", "h200")]
    batch = np.arange(1, 4097)
    context = np.array([1024, 2048, 4096, 8192, 16384, 32768])
    cases = {
        # The report's kind of sweep: the whole slice is one tp group (one decode_step pair per chip count).
        "tp = whole slice, chips 1..128": dict(chips=[1, 2, 4, 8, 16, 32, 64, 128], tp=None),
        # tp as its own axis: tp 1, 2, 4, 8 on every chip count it divides.
        "tp in {1,2,4,8}, chips 8..128": dict(chips=[8, 16, 32, 64, 128], tp=[1, 2, 4, 8]),
    }
    # Every point fits (LLaMA-3-8B, short contexts, H200/B200): no point is screened out as OOM,
    # so this is the rate of full decode-step evaluations.
    small = load_model("llama-3-8b")
    big_hbm = [load_hardware(h) for h in ("h200", "b200")]
    all_fit = dict(model=small, hardware=big_hbm, batch=np.arange(1, 1025), context=np.arange(64, 513, 64))
    runs = {label: dict(model=model, hardware=hardware, batch=batch, context=context, **kw)
            for label, kw in cases.items()}
    runs["every point fits, llama-3-8b, chips 1..8"] = dict(all_fit, chips=[1, 2, 4, 8], tp=None)
    for label, kw in runs.items():
        result = decode_sweep(weights=("bf16", "int8"), kv_dtypes=("bf16", "int8"), **kw)
        seconds = best_of(repeats, lambda kw=kw: decode_sweep(weights=("bf16", "int8"),
                                                              kv_dtypes=("bf16", "int8"), **kw))
        fit = len(result)
        print(f"sweep [{label}]: {result.evaluated:,} configurations ({fit:,} fit in HBM) in "
              f"{seconds * 1e3:.0f} ms = {result.evaluated / seconds / 1e6:.1f} M configurations/s "
              f"({fit / seconds / 1e6:.1f} M full step evaluations/s)  [target >= 5 M/s]")


def bench_frontier(repeats: int) -> None:
    rng = np.random.default_rng(0)
    n = 1_000_000
    latency, throughput = rng.lognormal(size=n), rng.lognormal(size=n)
    seconds = best_of(repeats, lambda: pareto_order(latency, throughput, "min", "max"))
    print(f"frontier of {n:,} random points: {seconds * 1e3:.0f} ms  [target < 500 ms]")
    # Worst case for the sample screen: every point on the frontier (throughput rises with latency).
    line = np.sort(latency)
    seconds = best_of(max(1, repeats // 2), lambda: pareto_order(line, line, "min", "max"))
    print(f"frontier of {n:,} points that are all on it (worst case): {seconds * 1e3:.0f} ms")


def bench_cold_start(repeats: int) -> None:
    env = {**os.environ, "COLUMNS": "120"}

    def run(cmd: list[str]) -> None:
        subprocess.run(cmd, check=True, capture_output=True, env=env)

    bare = best_of(repeats, lambda: run([sys.executable, "-c", BARE_IMPORT]))
    step = best_of(repeats, lambda: run([*roofline_command(), *STEP_ARGS]))
    print(f"cold start: `roofline step ...` {step * 1e3:.0f} ms vs bare `python -c \"{BARE_IMPORT}\"` "
          f"{bare * 1e3:.0f} ms = {step / bare:.2f}x  [target <= 1.5x]")


def bench_report(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        seconds = best_of(repeats, lambda: subprocess.run([*roofline_command(), "report"], cwd=folder,
                                                         check=True, capture_output=True))
        size = (Path(folder) / "reports" / "index.html").stat().st_size
    print(f"`roofline report` (default scenario): {seconds:.2f} s, {size / 1e6:.1f} MB page  [target < 5 s]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    bench_sweep(repeats)
    bench_frontier(repeats)
    bench_cold_start(repeats)
    bench_report(max(1, repeats // 2))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_simulate import bench_simulate

    bench_simulate(20_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
