"""Simulator speed: simulated requests per second for 100,000 requests of 1024 in / 256 out (prints only).

    python benchmarks/bench_simulate.py [--requests N]

Step cost: the temporary analysis adapter for LLaMA-3-8B on one H100 (roofline.analyses.simulate.adapter),
closed loop of 64 clients and open loop Poisson at 20 requests/s (about 80% of what 64 clients
sustain).  One run each (a 100,000-request run is long enough to be stable).
"""

from __future__ import annotations

import argparse
import time

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import ClosedLoop, OpenLoop, simulate
from roofline.analyses.simulate.adapter import cost_for
from roofline.specs import load_hardware, load_model


def bench_simulate(requests: int = 100_000) -> None:
    cost = cost_for(load_model("llama-3-8b"), load_hardware("h100-sxm"))
    for load in (ClosedLoop(64), OpenLoop(20.0)):
        start = time.perf_counter()
        res = simulate(cost, load, fixed_lengths(1024, 256), requests=requests, seed=0)
        seconds = time.perf_counter() - start
        print(
            f"simulate [{load.describe()}]: {requests:,} requests (1024 in / 256 out, {res.steps:,} steps) in "
            f"{seconds:.1f} s = {requests / seconds:,.0f} simulated requests/s, "
            f"{res.steps / seconds / 1e3:.0f} k steps/s; p99 TTFT {res.ttft_s.p99 * 1e3:.1f} ms  "
            f"[target: seconds]"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    bench_simulate(parser.parse_args().requests)
