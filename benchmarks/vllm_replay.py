"""Replay the shared vLLM load tests of Llama-2-7B (H100, vLLM 0.15.1) through `simulate` (prints only).

    python benchmarks/vllm_replay.py [--engine vllm] [--hardware h100-sxm-cal]

Source: /work/shared/measurements/vllm-serving-h100/llama-2-7b.json (inference-perf runs; README there).
The load generator cycled 100 fixed prompts, so the trace is a prompt pool of 100 prompts (lengths drawn
from each run's prompt_len quantiles) sent in turn, Poisson arrivals with each stage's exact count, and
the configured output length (shared_prefix.output_len) as decode steps.  Engine settings as the runs:
max_num_seqs 128, max_num_batched_tokens 2048, 16-token blocks, prefix caching on; the overloaded
reasoning run has the clients' 300 s timeout.  Each experiment runs twice: with the block prefix cache
(hits emerge from the repeats) and with the --prefix-hit-rate 0.96 shortcut.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from roofline.analyses.simulate import Requests, SchedulerConfig, SimConfig, Stage, Staged, simulate
from roofline.analyses.simulate.adapter import cost_for, request_path_for
from roofline.analyses.simulate.workloads import lengths_from_quantiles, pool_requests
from roofline.specs import load_hardware, load_model

DATA = Path("/work/shared/measurements/vllm-serving-h100/llama-2-7b.json")
QUANTILES = (("min", 0), ("p1", 1), ("p5", 5), ("p10", 10), ("p25", 25), ("median", 50), ("p75", 75),
             ("p90", 90), ("p95", 95), ("p99", 99), ("max", 100))  # fmt: skip
#: The clients' timeout in the overloaded run (the file's README: about 300 s).
CLIENT_TIMEOUT_S = 300.0
POOL = 100


def experiment_load(exp: dict, seed: int = 0) -> tuple[Staged, Requests]:
    """The staged load and the prompt-pool requests of one experiment record."""
    q = exp["stages"][0]["prompt_len"]
    lens = lengths_from_quantiles({p: q[k] for k, p in QUANTILES}, POOL, np.random.default_rng(seed))
    stages = Staged(tuple(Stage(float(s["duration"]), rate_per_s=float(s["rate"])) for s in exp["stages_cfg"]))
    n = sum(round(s["duration"] * s["rate"]) for s in exp["stages_cfg"])
    return stages, pool_requests(n, lens, int(exp["shared_prefix"]["output_len"]))


def replay(exp: dict, cost, path, cached: bool) -> tuple:
    stages, reqs = experiment_load(exp)
    sched = SchedulerConfig(128, 2048, 16, 0.0 if cached else 0.96)
    if not cached:
        reqs = Requests(reqs.input_len, reqs.output_len, source=reqs.source)
    timeout = CLIENT_TIMEOUT_S if exp["overload"] else None
    start = time.process_time()
    res = simulate(cost, stages, SimConfig(workload=reqs, scheduler=sched, timeout_s=timeout, path=path))
    return res, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=None)
    parser.add_argument("--hardware", default="h100-sxm-cal")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    cost = cost_for(load_model("llama-2-7b"), load_hardware(args.hardware), max_context=4097, reserve_tokens=2048,
                    engine=args.engine)  # fmt: skip
    path = request_path_for(cost.dep)
    print(f"step cost: {cost.source}\nrequest path: {path}")
    print("run        stage     mode   hit    TTFT ms (meas)    E2E s (meas)      done (meas)  failed (meas)  cpu s")
    for exp in data["experiments"]:
        for cached in (True, False):
            res, cpu = replay(exp, cost, path, cached)
            for s, m in zip(res.stages, exp["stages"], strict=True):
                hit = "" if s.prefix_hit_rate is None else f"{s.prefix_hit_rate:.3f}"
                print(
                    f"{exp['workload']:10s} r{m['rate']:<8g} {'cache' if cached else 'knob':6s} {hit:6s} "
                    f"{s.ttft_s.mean * 1e3:8.1f} ({m['ttft']['mean']:8.1f})  {s.e2e_s.mean:7.3f} "
                    f"({m['e2e']['mean'] / 1e3:7.3f})  {s.completed:5d} ({m['n_success']:5d})  "
                    f"{s.failed:5d} ({m['n_fail']:5d})  {cpu:5.1f}"
                )


if __name__ == "__main__":
    main()
