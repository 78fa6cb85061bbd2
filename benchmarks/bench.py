"""Speed figures of this machine for the README's performance section (prints, asserts nothing).

    python benchmarks/bench.py            # every figure, each with its target
    python benchmarks/bench.py --quick    # fewer repeats, a 10^7-point streaming case
    python benchmarks/bench.py --json     # every figure as one JSON document on stdout
    python benchmarks/bench.py --only cold-start   # one part (repeatable; see --help)

Timings that are compared are paired and interleaved (A, B, A, B, ...) in one process and the
figure is the median (of the times, and of the per-pair ratios), so load from other processes
hits both sides alike.  Peak memory is measured in a fresh child process (VmHWM).

1. full-evaluation sweep, every point fits (10^7 points): configurations/s, ratio to a naive
   numpy evaluation of the book's formula with its memory-fit mask, peak bytes per point;
   the same sweep on a calibrated profile (fitted GEMM, attention and all-reduce kernels);
2. a 10^8-configuration sweep streamed to its Pareto frontier: seconds and peak memory;
3. Pareto frontier of 10^6 points: random, and the worst case beside a plain sort-and-cummax;
4. cold start of `roofline step` beside `python -c "import numpy, yaml, pydantic, typer, rich"`;
5. `roofline report` with 8 models beside 1 model;
6. the serving simulator (benchmarks/bench_simulate.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from roofline.analyses.pareto import pareto_order
from roofline.analyses.sweep.run import decode_sweep
from roofline.core.units import dtype_bytes
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.model import memory
from roofline.specs import load_hardware, load_model

STEP_ARGS = [
    "step",
    "--model",
    "llama-2-13b",
    "--hardware",
    "tpu-v5e",
    "--chips",
    "8",
    "--batch",
    "16",
    "--context",
    "8192",
    "--json",
]
BARE_IMPORT = "import numpy, yaml, pydantic, typer, rich"
REPORT_MODELS = (
    "llama-2-13b",
    "llama-2-13b-gqa",
    "llama-3-70b",
    "llama-3-8b",
    "mixtral-8x7b",
    "llama-2-7b",
    "mistral-7b-v0.1",
    "gemma-2-9b",
)
DTYPES = dict(weights=("bf16", "int8"), kv_dtypes=("bf16", "int8"))
FIGURES: list[dict[str, Any]] = []


def figure(name: str, value: float, unit: str, target: str, met: bool | None, note: str = "") -> None:
    """Record and print one figure with its target."""
    FIGURES.append(
        {
            "figure": name,
            "value": float(value),
            "unit": unit,
            "target": target,
            "met": None if met is None else bool(met),
            "note": note,
        }
    )
    verdict = "" if met is None else ("  ok" if met else "  MISSED")
    shown = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    print(
        f"{name}: {shown} {unit}  [target {target}]{verdict}{'  (' + note + ')' if note else ''}",
        file=sys.stderr if ARGS.json else sys.stdout,
        flush=True,
    )


#: CPU seconds (this process, user + system) of the last :func:`paired` call, by name.
CPU: dict[str, np.ndarray] = {}


def paired(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, np.ndarray]:
    """Wall seconds of each function over ``repeats`` interleaved rounds (one warm-up round first).

    The CPU seconds of this process for each call go to :data:`CPU` (other load does not count there).
    """
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    CPU.clear()
    CPU.update({name: np.asarray(c) for name, c in cpu.items()})
    return {name: np.asarray(t) for name, t in times.items()}


def roofline_command() -> list[str]:
    """The installed `roofline` script next to this interpreter, else `python -m roofline`."""
    script = Path(sys.executable).with_name("roofline")
    return [str(script)] if script.exists() else [sys.executable, "-m", "roofline"]


def peak_rss_bytes() -> int:
    """Peak resident memory of this process: VmHWM (reset by exec, unlike ru_maxrss, which a child
    started from a large parent inherits), else ru_maxrss."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(kind: str, *extra: str) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter (its own peak RSS); returns its JSON line."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, *extra], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- 1. full-evaluation sweep


def all_fit_case(hardware: list[Any] | None = None, batch: int = 1220) -> dict[str, Any]:
    """LLaMA-3-8B, batch 1..1220 × 256 contexts 8..518 × chips 1, 2, 4, 8 × 2 chips × 4 dtype pairs:
    9,994,240 configurations, every one fits in HBM (so each gets a full step evaluation)."""
    return dict(
        model=load_model("llama-3-8b"),
        hardware=hardware or [load_hardware("h200"), load_hardware("b200")],
        batch=np.arange(1, batch + 1),
        context=np.arange(8, 520, 2),
        chips=[1, 2, 4, 8],
        **DTYPES,
    )


def full_sweep(kw: dict[str, Any]) -> Any:
    """decode_sweep of ``kw`` with its point limit lifted (the CLI's MAX_SWEEP_POINTS guards 2 M points)."""
    return decode_sweep(**kw, max_points=20_000_000)


def naive_formula(kw: dict[str, Any]) -> int:
    """The book's step on the same grid, plain numpy per block: max(2·B·P_active/F, (W + B·KV(S))/BW), fit mask."""
    m = kw["model"]
    counts = memory.param_counts(m)
    batch = kw["batch"].astype(float)[None, :]
    context = kw["context"].astype(float)[:, None]
    total = 0
    for hw in kw["hardware"]:
        for w in kw["weights"]:
            for kv in kw["kv_dtypes"]:
                weights = counts.total * dtype_bytes(w)
                kv_seq = memory.kv_cache_bytes_per_token(m, dtype_bytes(kv)) * context
                for chips in kw["chips"]:
                    kv_bytes = batch * kv_seq
                    step = np.maximum(
                        2.0 * counts.active * batch / (chips * hw.flops_per_s["bf16"]),
                        (weights + kv_bytes) / (chips * hw.hbm_bandwidth_bytes_per_s),
                    )
                    fits = weights + kv_bytes <= chips * hw.hbm_bytes * DEFAULT_MEMORY_UTILIZATION
                    total += int(np.count_nonzero(fits)) + int(step.size)
    return total


def calibrated_h100() -> Any:
    """The H100 profile fitted on the shipped measurements (GEMM, decode attention, all-reduce), cached."""
    from roofline.specs import dump_yaml

    cache = Path(tempfile.gettempdir()) / "roofline-bench" / "h100-sxm-calibrated.yaml"
    if not cache.exists():
        from roofline.calibrate.kernels import fit
        from roofline.calibrate.kernels.data import load_measurements

        profile, _ = fit.calibrate(
            load_measurements("builtin:h100-sxm"),
            load_hardware("h100-sxm"),
            ops=["gemm", "attention_decode", "allreduce"],
        )
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(dump_yaml(profile.model_dump(exclude_none=True)), encoding="utf-8")
    return load_hardware(cache)


def bench_sweep(repeats: int) -> None:
    kw = all_fit_case()
    result = full_sweep(kw)
    n = result.evaluated
    assert len(result) == n, "the every-point-fits case must fit everywhere"
    del result
    t = paired({"sweep": lambda: full_sweep(kw), "naive": lambda: naive_formula(kw)}, repeats)
    rate = n / np.median(t["sweep"])
    ratio = float(np.median(t["naive"] / t["sweep"]))
    figure(
        f"full-evaluation sweep, spec sheet ({n:,} points, every one fits)",
        rate / 1e6,
        "M configurations/s",
        ">= 25",
        rate >= 25e6,
        f"{n / np.median(CPU['sweep']) / 1e6:.1f} M/s of this process's CPU time",
    )
    figure(
        "  ... as a fraction of a naive numpy evaluation of the formula",
        ratio,
        "x",
        ">= 0.12",
        ratio >= 0.12,
        f"naive {n / np.median(t['naive']) / 1e6:.0f} M/s; CPU-time ratio {np.median(CPU['naive'] / CPU['sweep']):.3f}",
    )
    peak = child("peak-sweep")
    per_point = peak["peak_bytes"] / peak["points"]
    above = (peak["peak_bytes"] - peak["baseline_bytes"]) / peak["points"]
    figure(
        "  ... peak memory per point (whole process)",
        per_point,
        "bytes",
        "<= 60",
        per_point <= 60,
        f"{peak['peak_bytes'] / 1e9:.2f} GB peak, {above:.0f} bytes/point above the loaded interpreter",
    )
    cal = calibrated_h100()
    kw_cal = all_fit_case([cal], batch=610)
    n_cal = full_sweep(kw_cal).evaluated
    t = paired({"calibrated": lambda: full_sweep(kw_cal)}, max(2, repeats // 2))
    figure(
        f"full-evaluation sweep, calibrated H100 profile ({n_cal:,} points)",
        n_cal / np.median(t["calibrated"]) / 1e6,
        "M configurations/s",
        "none (fitted kernels cost more)",
        None,
    )


def peak_sweep() -> dict[str, Any]:
    kw = all_fit_case()
    baseline = peak_rss_bytes()
    result = full_sweep(kw)
    return {"points": result.evaluated, "baseline_bytes": baseline, "peak_bytes": peak_rss_bytes()}


# --------------------------------------------------------------------------- 2. streaming frontier


def streaming_case(quick: bool) -> dict[str, Any]:
    """LLaMA-3-8B on six GPUs, batch 1..4096 × 256 contexts 16..4096 × chips 1, 2, 4, 8 × 4 dtype pairs:
    100,663,296 configurations (64.6 M fit in HBM); --quick: 2 GPUs, 128 contexts (16.8 M)."""
    names = ("h100-sxm", "h200") if quick else ("h100-sxm", "h200", "b200", "mi300x", "mi325x", "mi355x")
    context = np.arange(16, 2049, 16) if quick else np.arange(16, 4097, 16)
    return dict(
        model=load_model("llama-3-8b"),
        hardware=[load_hardware(h) for h in names],
        batch=np.arange(1, 4097),
        context=context,
        chips=[1, 2, 4, 8],
        **DTYPES,
    )


def stream_frontier(quick: bool) -> dict[str, Any]:
    from roofline.analyses.sweep.frontier import decode_frontier

    kw = streaming_case(quick)
    start = time.perf_counter()
    result = decode_frontier(**kw, objectives=("latency-throughput",), group="hardware")
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "evaluated": result.evaluated,
        "fit": result.evaluated - result.dropped_out_of_memory,
        "kept": len(result),
        "peak_bytes": peak_rss_bytes(),
    }


def bench_streaming(quick: bool) -> None:
    r = child("stream", *(["--quick"] if quick else []))
    figure(
        f"sweep of {r['evaluated']:,} configurations streamed to its frontier",
        r["seconds"],
        "s",
        "< 10",
        r["seconds"] < 10,
        f"{r['fit']:,} fit in HBM and are evaluated; {r['kept']:,} frontier points kept",
    )
    figure("  ... peak memory", r["peak_bytes"] / 1e9, "GB", "< 1.5", r["peak_bytes"] < 1.5e9)


# --------------------------------------------------------------------------- 3. Pareto


def plain_frontier(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The baseline: one argsort by x, a running maximum of y (no tie handling)."""
    order = np.argsort(x)
    ys = y[order]
    best = np.maximum.accumulate(ys)
    return order[np.r_[True, ys[1:] > best[:-1]]]


def bench_pareto(repeats: int) -> None:
    rng = np.random.default_rng(0)
    n = 1_000_000
    latency, throughput = rng.lognormal(size=n), rng.lognormal(size=n)
    line = rng.permutation(np.sort(latency))  # every point on the frontier, shuffled
    t = paired(
        {
            "random": lambda: pareto_order(latency, throughput, "min", "max"),
            "worst": lambda: pareto_order(line, line, "min", "max"),
            "plain": lambda: plain_frontier(line, line),
        },
        repeats,
    )
    figure(
        f"Pareto frontier of {n:,} random points",
        float(np.median(t["random"])) * 1e3,
        "ms",
        "< 500",
        np.median(t["random"]) < 0.5,
    )
    ratio = float(np.median(t["worst"] / t["plain"]))
    figure(
        "  ... worst case (every point on it, shuffled) / plain sort-and-cummax",
        ratio,
        "x",
        "near 1",
        ratio <= 1.5,
        f"{np.median(t['worst']) * 1e3:.0f} ms vs {np.median(t['plain']) * 1e3:.0f} ms",
    )


# --------------------------------------------------------------------------- 4, 5. commands


def bench_cold_start(repeats: int) -> None:
    # Python may write bytecode caches here (as an installed package has them): with
    # PYTHONDONTWRITEBYTECODE set, every start would compile roofline's sources again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"COLUMNS": "120"}
    cpu: dict[str, list[float]] = {}

    def run(name: str, cmd: list[str]) -> Callable[[], object]:
        def go() -> None:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.setdefault(name, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)

        return go

    t = paired(
        {
            "bare": run("bare", [sys.executable, "-c", BARE_IMPORT]),
            "step": run("step", [*roofline_command(), *STEP_ARGS]),
            "api": run(
                "api",
                [
                    sys.executable,
                    "-c",
                    "import roofline as rl; rl.decode_step(rl.load_model("
                    "'llama-2-13b'), rl.load_hardware('tpu-v5e'), 8, 16, 8192)",
                ],
            ),
        },
        repeats,
    )
    ratio = float(np.median(t["step"] / t["bare"]))
    cpu_ratio = float(np.median(np.divide(cpu["step"][1:], cpu["bare"][1:])))  # the warm-up round left out
    figure(
        "cold start: `roofline step ... --json` / bare imports",
        ratio,
        "x",
        "<= 1.25",
        ratio <= 1.25,
        f"{np.median(t['step']) * 1e3:.0f} ms vs {np.median(t['bare']) * 1e3:.0f} ms for the bare imports; "
        f"CPU time ratio {cpu_ratio:.2f}",
    )
    api = float(np.median(t["api"] / t["bare"]))
    figure(
        "  ... the same step through the Python API / bare imports",
        api,
        "x",
        "none (the CLI's share)",
        None,
        f"{np.median(t['api']) * 1e3:.0f} ms",
    )


def bench_report(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:

        def run(models: tuple[str, ...]) -> Callable[[], object]:
            cmd = [*roofline_command(), "report", "--models", ",".join(models), "--out", f"{folder}/r.html"]
            return lambda: subprocess.run(cmd, cwd=folder, check=True, capture_output=True)

        t = paired({"one": run(REPORT_MODELS[:1]), "eight": run(REPORT_MODELS)}, repeats)
        size = (Path(folder) / "r.html").stat().st_size
    ratio = float(np.median(t["eight"] / t["one"]))
    figure(
        "`roofline report`: 8 models / 1 model",
        ratio,
        "x",
        "<= 3",
        ratio <= 3,
        f"{np.median(t['eight']):.2f} s vs {np.median(t['one']):.2f} s; {size / 1e6:.1f} MB page",
    )


#: The parts of the benchmark, in the order they run (``--only`` picks some).
PARTS = ("sweep", "streaming", "pareto", "cold-start", "report", "simulate")


def main() -> None:
    if ARGS.child:
        result = peak_sweep() if ARGS.child == "peak-sweep" else stream_frontier(ARGS.quick)
        print(json.dumps(result))
        return
    repeats = 3 if ARGS.quick else 5
    out = sys.stderr if ARGS.json else sys.stdout
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs", file=out)
    wanted = set(ARGS.only or PARTS)
    for part, run in (
        ("sweep", lambda: bench_sweep(repeats)),
        ("streaming", lambda: bench_streaming(ARGS.quick)),
        ("pareto", lambda: bench_pareto(repeats)),
        ("cold-start", lambda: bench_cold_start(repeats + 2)),
        ("report", lambda: bench_report(max(2, repeats // 2))),
    ):
        if part in wanted:
            run()
    if "simulate" in wanted:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_simulate import experiment, million

        with contextlib.redirect_stdout(out):
            experiment()
            million(100_000 if ARGS.quick else 1_000_000)
    if ARGS.json:
        print(
            json.dumps(
                {"python": sys.version.split()[0], "numpy": np.__version__, "cpus": os.cpu_count(), "figures": FIGURES},
                indent=1,
            )
        )


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, a smaller streaming case")
    parser.add_argument("--json", action="store_true", help="every figure as JSON on stdout")
    parser.add_argument(
        "--only", action="append", choices=PARTS, help="run only this part (repeatable); default: every part"
    )
    parser.add_argument("--child", choices=("peak-sweep", "stream"), help=argparse.SUPPRESS)
    return parser.parse_args()


ARGS = _args() if __name__ == "__main__" else argparse.Namespace(quick=False, json=False, child=None, only=None)

if __name__ == "__main__":
    main()
