"""The shared vLLM load tests of Llama-2-7B replayed from a trace of their repeating prompts.

Source: /work/shared/measurements/vllm-serving-h100/llama-2-7b.json (vLLM 0.15.1, H100, inference-perf;
its README: 100 fixed prompts cycled, prefix caching on, hits of about 95-98 % of prompt tokens, the
reasoning run overloaded with a client timeout of about 300 s).  The trace: 100 prompts with the run's
prompt_len quantiles sent in turn, Poisson arrivals with each stage's exact count, the configured output
length.  The hit rate must emerge from the cache (no --prefix-hit-rate), and the latencies be no worse
than the 0.96 shortcut's.  `python benchmarks/vllm_replay.py --engine vllm` prints every run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from roofline.analyses.simulate import Requests, SchedulerConfig, SimConfig, Stage, Staged, simulate
from roofline.analyses.simulate.adapter import cost_for, request_path_for
from roofline.analyses.simulate.workloads import lengths_from_quantiles, pool_requests
from roofline.specs import load_hardware, load_model

DATA = Path("/work/shared/measurements/vllm-serving-h100/llama-2-7b.json")
QUANTILES = {0: "min", 1: "p1", 5: "p5", 10: "p10", 25: "p25", 50: "median", 75: "p75", 90: "p90", 95: "p95"}
QUANTILES |= {99: "p99", 100: "max"}
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not DATA.exists(), reason="shared vLLM measurements absent")]


def replay(workload: str, cached: bool):
    exp = next(e for e in json.loads(DATA.read_text())["experiments"] if e["workload"] == workload)
    q = exp["stages"][0]["prompt_len"]
    lens = lengths_from_quantiles({p: q[k] for p, k in QUANTILES.items()}, 100, np.random.default_rng(0))
    n = sum(round(s["duration"] * s["rate"]) for s in exp["stages_cfg"])
    reqs = pool_requests(n, lens, exp["shared_prefix"]["output_len"])
    if not cached:
        reqs = Requests(reqs.input_len, reqs.output_len)
    cost = cost_for(
        load_model("llama-2-7b"), load_hardware("h100-sxm-cal"), max_context=4097, reserve_tokens=2048, engine="vllm"
    )
    config = SimConfig(
        workload=reqs,
        scheduler=SchedulerConfig(128, 2048, 16, 0.0 if cached else 0.96),
        timeout_s=300.0 if exp["overload"] else None,
        path=request_path_for(cost.dep),
    )
    stages = Staged(tuple(Stage(float(s["duration"]), rate_per_s=float(s["rate"])) for s in exp["stages_cfg"]))
    return simulate(cost, stages, config), exp["stages"]


def error(value: float, measured: float) -> float:
    return abs(value / measured - 1)


def test_codegen_hits_emerge_and_latencies_are_no_worse_than_the_shortcut():
    # First stage: 100 cold first uses of 3,000, then (I − 1) // 16 full blocks of each ~592-token prompt:
    # about 0.986 − 0.033 = 0.953; second stage all warm: about 0.986.  Both within the README's 95-98 %.
    cache, measured = replay("codegen", True)
    knob, _ = replay("codegen", False)
    assert [s.prefix_hit_rate for s in cache.stages] == pytest.approx([0.953, 0.986], abs=0.005)
    for c, k, m in zip(cache.stages, knob.stages, measured, strict=True):
        assert error(c.ttft_s.mean, m["ttft"]["mean"] / 1e3) <= error(k.ttft_s.mean, m["ttft"]["mean"] / 1e3) + 0.01
        assert error(c.e2e_s.mean, m["e2e"]["mean"] / 1e3) <= error(k.e2e_s.mean, m["e2e"]["mean"] / 1e3) + 0.01
        assert c.completed == m["n_success"] and c.failed == 0


def test_the_overloaded_run_keeps_the_survivors_and_their_latency():
    # 4,800 requests of ~1,082 + 1,448 tokens at 4/s on a cache of ~111 k tokens: the queue grows, clients
    # give up after 300 s.  Measured: 732 completed, 4,068 failed, survivors' mean TTFT 106.6 s.
    res, measured = replay("reasoning", True)
    stage, m = res.stages[0], measured[0]
    assert error(stage.completed, m["n_success"]) < 0.15 and error(stage.failed, m["n_fail"]) < 0.15
    assert error(stage.ttft_s.mean, m["ttft"]["mean"] / 1e3) < 0.5
    assert stage.completed + stage.failed == 4800
