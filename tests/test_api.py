"""The public Python API: `import roofline as rl` is light and returns numbers, not text."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import roofline as rl
from tests.test_hf_config import MIXTRAL_8X7B


def test_import_is_light():
    code = (
        "import sys, roofline as rl; "
        "print([m for m in ('plotly', 'typer', 'rich', 'roofline.views.cli', 'roofline.specs', 'pydantic') "
        "if m in sys.modules]); print(rl.__version__)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, version = proc.stdout.splitlines()
    assert loaded == "[]"
    assert version and version[0].isdigit()


def test_every_public_name_resolves():
    for name in rl.__all__:
        assert getattr(rl, name) is not None, name
    with pytest.raises(AttributeError):
        rl.no_such_thing  # noqa: B018


def test_load_by_name_path_and_config_json(tmp_path):
    by_name = rl.load_model("mixtral-8x7b")
    folder = tmp_path / "Mixtral-8x7B-v0.1"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(MIXTRAL_8X7B))
    from_config = rl.load_model(folder / "config.json")
    assert rl.memory.param_counts(from_config).total == pytest.approx(rl.memory.param_counts(by_name).total)
    assert isinstance(rl.load_hardware("tpu-v5e"), rl.HardwareSpec)


def test_estimators_return_arrays_and_dataclasses():
    m, chip = rl.load_model("llama-2-13b"), rl.load_hardware("tpu-v5e")
    res = rl.decode_step(m, chip, chips=8, batch=np.array([1, 16, 240]), context=8192)
    assert isinstance(res, rl.StepResult)
    # The book's table: 4.98, 20.30 and 249.09 ms at batch 1, 16 and 240.
    assert np.allclose(res.step_time_s, [4.98e-3, 20.30e-3, 249.09e-3], rtol=0.01)
    req = rl.request(m, chip, input_len=[512, 2048], output_len=128, chips=8)
    assert np.shape(req.ttft_s) == (2,) and req.ttft_s[1] > req.ttft_s[0]


def test_sweep_frontier_and_plan():
    m, chip = rl.load_model("llama-3-8b"), rl.load_hardware("h100-sxm")
    sw = rl.decode_sweep(m, [chip], batch=[1, 8, 64, 256], chips=[1, 2])
    idx = rl.frontier_of(sw.columns, "cost-latency")
    steps = sw.columns["step_time_s"][idx]
    costs = sw.columns["cost_per_million_tokens"][idx]
    # Along the frontier, a slower step must buy a lower cost.
    assert np.all(np.diff(steps) > 0) and np.all(np.diff(costs) < 0)
    result = rl.plan_capacity(m, [chip], qps=2, lengths=rl.fixed_lengths(1024, 128), tpot_slo_s=0.05)
    assert isinstance(result.best, rl.PlanCandidate) and result.best.tpot_s <= 0.05
    assert rl.plan.kv_crossover_batch(16e9, 2e9) == 8.0


def test_one_deployment_class():
    # rl.Deployment is the deployment layer's class (what rl.deployment builds); the plan's candidate is
    # rl.PlanCandidate, still importable from its module under its old name.
    from roofline.analyses.plan import capacity
    from roofline.deploy import Deployment

    assert rl.Deployment is Deployment
    dep = rl.deployment(rl.load_model("llama-3-8b"), rl.load_hardware("h100-sxm"), 1)
    assert isinstance(dep, rl.Deployment)
    assert capacity.Deployment is capacity.PlanCandidate is rl.PlanCandidate
