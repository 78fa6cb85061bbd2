"""Scheduling policies behind the registry: the built-ins by hand, and a policy added from outside the package."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.analyses.simulate import POLICIES, SchedulerConfig, SimConfig, Trace, register_policy, simulate
from roofline.core.errors import RooflineError
from tests.inprocess import run_roofline
from tests.sim_costs import A, B, C, LinearCost


@register_policy
class DrainFirst:
    """A toy policy defined here, outside the package: new requests wait until the batch has drained."""

    name = "test-drain-first"
    describes = "static batches: admit only when nothing decodes"

    def compose(self, engine):
        if engine.n_dec:
            engine.decodes()
            return
        used = engine.continue_prefills(engine.max_tokens) if engine.prefilling else 0
        engine.admit(engine.max_tokens - used)


# Request 0 (100 in, 11 out) at t = 0, request 1 (100 in, 2 out) 1 ms later, mid-prefill of request 0.
LOAD = Trace(np.array([0.0, 0.001]), np.array([100, 100]), np.array([11, 2]))
PREFILL = A + B * 100 + C * 100 * 101 / 2
E2E_0 = PREFILL + sum(A + B + C * (100 + j) for j in range(10))


def run(policy: str):
    return simulate(LinearCost(), LOAD, SimConfig(requests=None, warmup=0, scheduler=SchedulerConfig(policy=policy)))


def test_a_policy_from_outside_runs_through_simulate():
    # Drain-first: request 1 waits for request 0 to finish (E2E_0), then prefills alone.
    assert "test-drain-first" in POLICIES
    res = run("test-drain-first")
    assert res.samples["e2e_s"][0] == pytest.approx(E2E_0, rel=1e-12)
    assert res.samples["ttft_s"][1] == pytest.approx(E2E_0 + PREFILL - 0.001, rel=1e-12)
    assert "test-drain-first: static batches" in res.sources["scheduler"]


def test_a_policy_from_outside_runs_through_the_cli():
    run_ = run_roofline(
        "simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--arrival-rate", "2", "-i", "64", "-o", "8",
        "--requests", "20", "--policy", "test-drain-first", "--json",
    )  # fmt: skip
    assert run_.code == 0, run_.stderr
    assert '"scheduler": "test-drain-first' in run_.stdout


def test_prefill_first_runs_prompts_in_steps_of_their_own():
    # Request 1's prefill joins request 0's decodes in one mixed step (decode-first) or runs in a step of its
    # own (prefill-first, decodes waiting): the same work plus one more step's fixed cost A for request 0.
    mixed, alone = run("decode-first"), run("prefill-first")
    assert alone.samples["e2e_s"][0] - mixed.samples["e2e_s"][0] == pytest.approx(A, rel=1e-9)


def test_unknown_policy_lists_the_registered_ones():
    # Every registered policy is listed, sorted: the built-ins and any a test (or a plugin) registered.
    with pytest.raises(RooflineError, match="^policy: unknown 'fifo'; allowed: ") as info:
        SchedulerConfig(policy="fifo")
    allowed = str(info.value).split("allowed: ", 1)[1].split(", ")
    assert allowed == sorted(POLICIES) and {"decode-first", "prefill-first"} <= set(allowed)
