"""Executors: jobs in this process, a local process pool or Ray tasks give the same results in job order."""

from __future__ import annotations

import importlib.util

import pytest

from roofline.analyses.executors import EXECUTORS, ExecutorConfig, register_executor, run_jobs
from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.plan.queueing import replicas_needed
from roofline.core.errors import OptionError
from roofline.specs import load_hardware, load_model

JOBS = [(10.0, float(r)) for r in range(1, 7)]
# ceil(10 / r) for r = 1..6
EXPECTED = [10.0, 5.0, 4.0, 3.0, 2.0, 2.0]
HAS_RAY = importlib.util.find_spec("ray") is not None


def test_local_executors_keep_job_order():
    seen: list[tuple[int, int]] = []
    out = run_jobs(replicas_needed, JOBS, ExecutorConfig("local", 1), lambda d, n: seen.append((d, n)))
    assert [float(x) for x in out] == EXPECTED and seen == [(d, 6) for d in range(1, 7)]
    calls: list[tuple[int, int]] = []
    out = run_jobs(replicas_needed, JOBS, ExecutorConfig("local", 2), lambda d, n: calls.append((d, n)))
    assert [float(x) for x in out] == EXPECTED
    assert calls[-1] == (6, 6) and [d for d, _ in calls] == list(range(1, 7))


def test_executor_registry_and_bad_config():
    register_executor("reversed-serial", lambda fn, jobs, config, progress: [fn(*j) for j in jobs[::-1]][::-1])
    try:
        assert [float(x) for x in run_jobs(replicas_needed, JOBS, ExecutorConfig("reversed-serial"))] == EXPECTED
    finally:
        EXECUTORS.pop("reversed-serial")
    with pytest.raises(OptionError, match="executor: unknown 'dask'"):
        ExecutorConfig("dask")
    with pytest.raises(OptionError, match="workers must be"):
        ExecutorConfig("local", 0)
    with pytest.raises(OptionError, match="address: a cluster address needs the ray executor"):
        ExecutorConfig("local", 2, "auto")


@pytest.mark.slow
@pytest.mark.skipif(
    not HAS_RAY, reason="ray is not installed (pip install 'roofline[ray]'): the Ray executor is optional"
)
def test_a_plan_on_ray_equals_the_local_plan():
    # On a local Ray of 2 CPUs (started once here; the executor joins it): each chip's sweep is a task and
    # the percentile plan's candidate simulations are tasks; the answer equals, bit for bit, the same
    # plan run in this process.
    import ray

    from roofline.analyses.plan.percentile import plan_at_percentile

    m, hws = load_model("llama-3-8b"), [load_hardware("h100-sxm"), load_hardware("h200")]
    common = dict(ttft_slo_s=0.5, tpot_slo_s=0.03, candidates=3, requests=200, weights=["bf16"], kv_dtypes=["bf16"])
    local = plan_at_percentile(
        m, hws, 8.0, fixed_lengths(512, 64), "p99", executor=ExecutorConfig("local", 1), **common
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = plan_at_percentile(
            m, hws, 8.0, fixed_lengths(512, 64), "p99", executor=ExecutorConfig("ray", 2), **common
        )
    finally:
        ray.shutdown()
    assert on_ray[1] == local[1]
    assert on_ray[0].best == local[0].best and on_ray[0].candidates == local[0].candidates
    assert on_ray[0].evaluated == local[0].evaluated and on_ray[0].reasons == local[0].reasons


def test_ray_missing_is_one_clear_line(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(OptionError, match=r"pip install 'roofline\[ray\]'"):
        run_jobs(replicas_needed, JOBS, ExecutorConfig("ray", 2))
