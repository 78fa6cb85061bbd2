"""Sweep and plan speed on an MoE+MLA model against a dense model of the same size (issue 24).

    python benchmarks/bench_moe_sweep.py [--repeats N] [--quick]

DeepSeek-R1 (671 B, MLA, 256 experts top-8; fp8 weights) is priced through its operator terms (the fused-MoE
operator with its routing skew, MLA decode with its BMMs, the all-to-all of attention data-parallel layouts);
its dense twin is Llama-3.1-405B stretched to 209 layers (671 B, GQA, dense MLP).  Both run the same sweep
(H200 and MI355X; 8-64 chips; tp 1 and 8 with ep 8 for the MoE model, tp 8 for the dense one; contexts 1 k to
32 k; batch 1-1024) and the same plan (16 chips at most).  Configurations per second are evaluated points over
the median wall time of interleaved rounds.  Target: the MoE model within 2x of the dense one's
configurations per second (its sweep stays vectorised: one step-model call per chip count).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.plan.capacity import plan
from roofline.analyses.sweep.run import decode_sweep
from roofline.model import memory
from roofline.specs import load_hardware, load_model


def twins() -> dict[str, tuple[object, dict[str, object]]]:
    """The MoE+MLA model and its dense twin of the same total parameters, each with its sweep layouts."""
    moe = load_model("deepseek-r1")
    dense = load_model("llama-3.1-405b")
    dense = replace(dense, name="dense-671b", num_layers=209)
    return {
        "deepseek-r1": (moe, {"tp": [1, 8], "ep": [8], "weights": ("fp8",)}),
        "dense-671b": (dense, {"tp": [8], "weights": ("fp8",)}),
    }


def rounds(fns: dict[str, Callable[[], int]], repeats: int) -> dict[str, tuple[float, int]]:
    """(median wall seconds, points evaluated) of each function over interleaved rounds after a warm-up."""
    counts = {name: fn() for name, fn in fns.items()}
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: (float(np.median(t)), counts[name]) for name, t in times.items()}


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--repeats", type=int, default=5)
    args.add_argument("--quick", action="store_true", help="a smaller grid (1 chip type, 3 contexts)")
    opts = args.parse_args()
    hw = [load_hardware("h200")] + ([] if opts.quick else [load_hardware("mi355x")])
    contexts = [1024, 8192, 32768] if opts.quick else [1024, 2048, 4096, 8192, 16384, 32768]
    batch = np.arange(1, 1025)
    models = twins()
    for name, (m, _) in models.items():
        print(f"{name}: {memory.param_counts(m).total / 1e9:.0f} B parameters")

    def sweep(name: str) -> Callable[[], int]:
        m, layout = models[name]
        return lambda: decode_sweep(m, hw, batch, [8, 16, 32, 64], contexts, max_points=20_000_000, **layout).evaluated

    res = rounds({name: sweep(name) for name in models}, opts.repeats)
    rate = {name: n / t for name, (t, n) in res.items()}
    for name, (t, n) in res.items():
        print(f"sweep {name}: {n:,} configurations in {t:.3f} s = {rate[name]:,.0f} configurations/s")
    ratio = rate["dense-671b"] / rate["deepseek-r1"]
    print(f"dense / MoE+MLA configurations per second: {ratio:.2f}  [target <= 2: {'met' if ratio <= 2 else 'MISSED'}]")

    def planned(name: str) -> Callable[[], int]:
        m, layout = models[name]
        return lambda: (
            plan(
                m, hw, 20.0, fixed_lengths(2000, 1000), tpot_slo_s=0.05, weights=layout["weights"], max_chips=16
            ).evaluated
        )

    res = rounds({name: planned(name) for name in models}, max(1, opts.repeats // 2))
    rate = {name: n / t for name, (t, n) in res.items()}
    for name, (t, n) in res.items():
        print(f"plan {name}: {n:,} configurations in {t:.3f} s = {rate[name]:,.0f} configurations/s")
    ratio = rate["dense-671b"] / rate["deepseek-r1"]
    print(
        f"plan: dense / MoE+MLA configurations per second: {ratio:.2f}  "
        f"[target <= 2: {'met' if ratio <= 2 else 'MISSED'}]"
    )


if __name__ == "__main__":
    main()
