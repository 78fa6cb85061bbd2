"""Simulator speed and memory against the issue's targets, with peer simulators' published times beside them.

    python benchmarks/bench_simulate.py [--part all|experiment|million|fit|table] [--requests N] [--stepwise]

* experiment: a 10,000-request two-stage experiment of Llama-2-70B at TP4 on calibrated H100s (vLLM
  settings of the shared runs: 128 sequences, 2,048-token budget; 575 in / 248 out; 5 then 12 requests/s),
  target < 1 s of CPU;
* million: 10^6 requests of the same deployment (open loop, 8 requests/s), target < 10 s of CPU and a peak
  of < 1 GB (the process's peak resident memory); it runs in the compiled event loop (numba, its cache
  warm: the first run after an install compiles it once, 10-25 s);
* fit: one engine-fit row (600 requests, Llama-2-7B TP1, prompt pool, vLLM entry) re-priced with other
  engine terms (e25's inner loop), target <= 40 ms;
* table: the tabulated step against step_terms on random mixes (mean and p99 relative error).

``--stepwise`` prices every engine step on its own (the reference the decode leaps are tested against;
same results) to show what the leaps save.

Peers' published per-experiment times (for scale, not the same experiments): Vidur 4.6-6.7 s, 2.2 s and
17.7 s (the figures issue 26 quotes).  CPU seconds are process time; the machine is shared, so runs vary.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import OpenLoop, SchedulerConfig, SimConfig, Stage, Staged, simulate
from roofline.analyses.simulate.adapter import cost_for, request_path_for, step_price
from roofline.specs import load_hardware, load_model

PEERS = "peers: Vidur 4.6-6.7 s, 2.2 s, 17.7 s per experiment"
SCHED = SchedulerConfig(128, 2048, 16, 0.96)


def seventy_b():
    return cost_for(
        load_model("llama-2-70b"), load_hardware("h100-sxm-cal"), tp=4, max_context=900, reserve_tokens=2048
    )


def experiment(stepwise: bool = False) -> None:
    load = Staged((Stage(400, rate_per_s=5), Stage(666.7, rate_per_s=12)))
    cost = seventy_b()  # specs read and the deployment built (not timed); the step table is built in the run
    start = time.process_time()
    res = simulate(cost, load, SimConfig(lengths=fixed_lengths(575, 248), scheduler=SCHED, stepwise=stepwise))
    cpu = time.process_time() - start
    mode = " (stepwise)" if stepwise else ""
    print(
        f"experiment{mode}: {res.arrived:,} requests, {res.steps:,} steps, 70B TP4: {cpu:.2f} s CPU "
        f"[target < 1 s; {PEERS}]"
    )


def compiled_ready() -> None:
    """Import numba and load (or, the first time after an install, compile) the compiled loop: not timed below."""
    cost = seventy_b()
    start = time.process_time()
    config = SimConfig(lengths=fixed_lengths(575, 248), requests=50, scheduler=SCHED, event_loop="compiled")
    simulate(cost, OpenLoop(8.0), config)
    cpu = time.process_time() - start
    print(f"compiled loop ready: {cpu:.1f} s CPU (importing numba, loading its cache; compiling it after an install)")


def million(requests: int, stepwise: bool = False) -> None:
    if not stepwise:
        compiled_ready()
    cost = seventy_b()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.process_time()
    config = SimConfig(lengths=fixed_lengths(575, 248), requests=requests, scheduler=SCHED, stepwise=stepwise)
    res = simulate(cost, OpenLoop(8.0), config)
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"million: {requests:,} requests, {res.steps:,} steps: {cpu:.1f} s CPU "
        f"({requests / cpu:,.0f} requests/s), peak RSS {peak / 2**20:,.0f} MiB "
        f"({before / 2**20:,.0f} MiB before the run) [targets < 10 s, < 1 GB]; event loop: {res.sources['event loop']}"
    )


def fit_row() -> None:
    from roofline.analyses.simulate.workloads import lengths_from_quantiles, pool_requests

    cost = cost_for(load_model("llama-2-7b"), load_hardware("h100-sxm-cal"), max_context=900, engine="vllm")
    lens = lengths_from_quantiles({0: 559, 50: 575, 100: 592}, 100, np.random.default_rng(0))
    config = SimConfig(
        workload=pool_requests(600, lens, 248),
        scheduler=SchedulerConfig(128, 2048),
        path=request_path_for(cost.dep),
        warmup=60,
    )
    simulate(cost, OpenLoop(10.0), config)  # the row's first run prices the device grids
    times = []
    for step_host in (0.0, 1e-4, 2e-4, 3e-4, 4e-4):
        engine = cost.dep.engine
        other = cost.with_engine(
            type(engine)(**{**engine.__dict__, "values": {**engine.values, "step_host_s": step_host}})
        )
        start = time.process_time()
        simulate(other, OpenLoop(10.0), config)
        times.append(time.process_time() - start)
    print(f"fit row: 600 requests, 7B TP1, engine terms changed: {1e3 * np.median(times):.0f} ms [target <= 40 ms]")


def table_accuracy() -> None:
    for hw, model, tp in (
        ("h100-sxm-cal", "llama-2-7b", 1),
        ("h100-sxm-cal", "llama-2-70b", 4),
        ("h100-sxm", "llama-2-70b", 4),
    ):
        cost = cost_for(load_model(model), load_hardware(hw), tp=tp, max_context=4096)
        table = cost.pricer(128, 2048)
        rng = np.random.default_rng(0)
        k = 4000
        n = rng.integers(0, 129, k)
        ctx = rng.uniform(1, 3800, k)
        tokens = np.where(rng.random(k) < 0.5, rng.integers(1, 64, k), rng.integers(1, 2049 - n))
        cached = np.minimum(rng.uniform(0, 3000, k), 4096 - tokens)
        want = step_price(cost.dep)(n.astype(float), ctx, tokens.astype(float), cached)
        got = np.array(
            [
                table.mixed_s(int(a), a * b, int(t), t * (c + (t + 1) / 2))
                for a, b, t, c in zip(n, ctx, tokens, cached, strict=True)
            ]
        )
        err = np.abs(got / want - 1)
        print(
            f"table {model} TP{tp} {hw}: mean |error| {err.mean():.3%}, "
            f"p99 {np.percentile(err, 99):.2%}, max {err.max():.1%}"
        )


def reference() -> None:
    """This machine's speed for pure Python: 10^7 additions in a loop (compare figures across machines)."""
    start, total = time.process_time(), 0
    for i in range(10_000_000):
        total += i
    print(f"reference: a 10^7-addition Python loop takes {time.process_time() - start:.2f} s of CPU here")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=("all", "experiment", "million", "fit", "table"))
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--stepwise", action="store_true", help="price every step on its own (the reference)")
    args = parser.parse_args()
    reference()
    if args.part in ("all", "experiment"):
        experiment(args.stepwise)
    if args.part in ("all", "fit"):
        fit_row()
    if args.part in ("all", "table"):
        table_accuracy()
    if args.part in ("all", "million"):
        million(args.requests, args.stepwise)
