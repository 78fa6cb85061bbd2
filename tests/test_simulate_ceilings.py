"""The simulator's engine-step ceiling (refused up front and while running) and its progress callback (issue 28).

Step counts are worked by hand: one closed-loop client with no think time sends its next request when the
previous one ends; a request of I = 100 prompt tokens (one chunk: 100 <= the 8192-token budget) and O = 11
output tokens takes 1 prefill step (its first token) and 10 decode steps, so k requests take 11·k steps.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import pytest

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import ClosedLoop, OpenLoop, SimConfig, bounds, parse_stages, run, simulate
from roofline.core.errors import OptionError
from tests.inprocess import assert_refused, run_roofline
from tests.sim_costs import LinearCost

M8 = ("simulate", "-m", "llama-3-8b", "-H", "h100-sxm")
ONE_CLIENT = (*M8, "--concurrency", "1", "-i", "100", "-o", "11")


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def low_ceiling(monkeypatch):
    """A ceiling of 1,000 steps, checked at every loop turn (the real ones: 10 M, every 4096 turns)."""
    monkeypatch.setattr(bounds, "MAX_ENGINE_STEPS", 1000)
    monkeypatch.setattr(run, "CHECK_TURNS", 1)


def _one_client(requests: int) -> SimConfig:
    return SimConfig(lengths=fixed_lengths(100, 11), requests=requests, warmup=0)


def test_one_client_takes_eleven_steps_a_request():
    # the hand count the tests below rely on: 200 requests x (1 prefill + 10 decode steps) = 2,200 steps
    assert simulate(LinearCost(), ClosedLoop(1), _one_client(200)).steps == 2200


def test_a_run_past_the_step_ceiling_stops_with_its_figures(low_ceiling):
    # 90 requests take 990 steps; the 91st's prefill (991) and its 10 decodes (1,001) pass 1,000
    with pytest.raises(OptionError) as caught:
        simulate(LinearCost(), ClosedLoop(1), _one_client(200))
    message = str(caught.value)
    assert "ceiling of 1,000 engine steps (1,001) after 91 of 200 requests" in message, message
    assert message.startswith("requests:") and caught.value.parameters == ("requests",)


def test_a_run_under_the_step_ceiling_is_not_stopped(low_ceiling):
    # 90 requests: 990 steps, under 1,000
    assert simulate(LinearCost(), ClosedLoop(1), _one_client(90)).completed == 90


def test_a_staged_run_past_the_step_ceiling_names_the_stages(low_ceiling):
    # one client for 100 s: each request takes ~0.3 s, so some 300 requests and 3,300 steps
    with pytest.raises(OptionError) as caught:
        simulate(LinearCost(), parse_stages("c1:100"), SimConfig(lengths=fixed_lengths(100, 11)))
    assert str(caught.value).startswith("stages: the simulation passed the ceiling of 1,000 engine steps")
    assert caught.value.parameters == ("stages",)


@pytest.mark.parametrize(
    ("tokens", "seqs", "replicas", "per_sequence", "refused"),
    [
        (10_000_001, 1, 1, 1.0, True),  # 10,000,001 steps at batch 1
        (10_000_000, 1, 1, 1.0, False),  # exactly the ceiling
        (2_560_000_256, 256, 1, 1.0, True),  # 10,000,001 full batches of 256
        (2_560_000_256, 256, 2, 1.0, False),  # two replicas halve it
        (24_000_000, 1, 1, 3.0, False),  # speculative, 2 drafts: at most 3 tokens a step, 8 M steps
        (24_000_000, 1, 1, 1.0, True),
    ],
)
def test_steps_lower_bound(tokens, seqs, replicas, per_sequence, refused):
    """fewest steps = tokens / (max_num_seqs x replicas x tokens a sequence gains per step)."""
    try:
        bounds.check_steps_lower_bound(tokens, seqs, replicas, per_sequence)
    except OptionError as exc:
        assert refused, str(exc)
        assert "over the simulator's ceiling of 10,000,000" in str(exc)
        assert exc.parameters == ("requests", "max_num_seqs")
    else:
        assert not refused


def test_work_ceilings_name_parameters_not_flags():
    # 1,000,000 requests x 4,096 replicas = 4,096,000,000 > 50 M held; 1,000,000 x (8,000 output tokens +
    # ceil(64 / 8192) = 1 prompt chunk) = 8,001,000,000 > 100 M tokens, at most 100 M // 8,001 = 12,498 requests.
    with pytest.raises(OptionError) as held:
        bounds.check_work(1_000_000, 4096, 64, 8, 8192)
    assert str(held.value).startswith("requests x replicas: 1,000,000 requests x 4,096 replicas = 4,096,000,000")
    assert "give fewer requests= or replicas=" in str(held.value) and "--" not in str(held.value)
    assert held.value.parameters == ("requests", "replicas")
    with pytest.raises(OptionError) as tokens:
        bounds.check_work(1_000_000, 1, 64, 8000, 8192)
    assert str(tokens.value).startswith("requests: 1,000,000 requests x (8,000 output tokens + 1 prompt chunks)")
    assert "give fewer requests= (at most 12,498 here)" in str(tokens.value) and "--" not in str(tokens.value)
    assert tokens.value.parameters == ("requests",)


def test_engine_tp_refusals_name_the_parameter():
    from dataclasses import replace

    from roofline.specs import load_model

    llama = load_model("llama-3-8b")  # 32 attention heads, 8 KV heads
    with pytest.raises(OptionError, match=r"^tp=3: llama-3-8b has 32 attention heads, .*allowed: 1, 2, 4, 8, 16, 32"):
        bounds.check_engine_tp(llama, 3)
    # 24 heads split 6 ways, but 8 KV heads neither divide 6 nor are divided by it
    with pytest.raises(OptionError, match=r"^tp=6: llama-3-8b's 8 KV heads neither divide 6") as kv:
        bounds.check_engine_tp(replace(llama, num_heads=24), 6)
    assert kv.value.parameters == ("tp",)


def test_progress_counts_requests_up_to_the_total_and_changes_nothing(monkeypatch):
    monkeypatch.setattr(run, "CHECK_TURNS", 1)
    calls: list[tuple[int, int]] = []
    config = SimConfig(lengths=fixed_lengths(100, 11), requests=50, seed=3)
    quiet = simulate(LinearCost(), OpenLoop(5.0), config)
    told = simulate(LinearCost(), OpenLoop(5.0), config, progress=lambda done, total: calls.append((done, total)))
    assert told.as_dict() == quiet.as_dict()  # the callback only listens
    assert len(calls) > 50 and {total for _, total in calls} == {50}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] < 50 and calls[-1] == (50, 50)


def test_progress_of_a_staged_load_counts_simulated_seconds(monkeypatch):
    monkeypatch.setattr(run, "CHECK_TURNS", 1)
    calls: list[tuple[int, int]] = []
    stages = parse_stages("2:20,4:10.5")  # a span of 30.5 s: the bar counts to 31
    simulate(LinearCost(), stages, SimConfig(lengths=fixed_lengths(100, 11)), progress=lambda *a: calls.append(a))
    assert {total for _, total in calls} == {math.ceil(30.5)}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] < 31 and calls[-1] == (31, 31)


# ---------------------------------------------------------------------------------------------- CLI


def test_cli_refuses_too_many_steps_up_front(here):
    # 100,000 requests x (200 output + 1 prompt chunk) = 20,100,000 tokens, at batch 1: as many steps
    cli = run_roofline(
        *M8, "--qps", "100", "--requests", "100000", "-i", "64", "-o", "200", "--max-num-seqs", "1",
        "--requests-csv", "r.csv",
    )  # fmt: skip
    assert_refused(
        cli,
        "--requests: 20,100,000 simulated tokens need at least 20,100,000 engine steps",
        "(batches of --max-num-seqs 1 on 1 replica(s))",
        "ceiling of 10,000,000",
    )
    assert list(here.iterdir()) == []


def test_cli_stops_a_run_past_the_ceiling_and_writes_nothing(here, low_ceiling):
    cli = run_roofline(*ONE_CLIENT, "--requests", "200", "--requests-csv", "r.csv", "--html", "s.html")
    assert_refused(cli, "--requests: the simulation passed the ceiling of 1,000 engine steps", "of 200 requests")
    assert list(here.iterdir()) == []


@pytest.mark.parametrize(("extra", "bar"), [((), True), (("--json",), False)])
def test_cli_shows_a_bar_over_the_token_threshold_and_never_with_json(here, monkeypatch, extra, bar):
    from roofline.views.cli import simulate as command

    asked: list[tuple[str, bool]] = []

    @contextmanager
    def recorder(label, enabled):
        asked.append((label, enabled))
        yield (lambda done, total: None) if enabled else None

    monkeypatch.setattr(command, "progress_bar", recorder)
    assert run_roofline(*ONE_CLIENT, "--requests", "20", *extra).code == 0
    assert asked == [("simulating requests", False)]  # 20 x (11 + 1) = 240 tokens, under 2,000,000
    monkeypatch.setattr(command, "PROGRESS_TOKENS", 200)
    assert run_roofline(*ONE_CLIENT, "--requests", "20", *extra).code == 0
    assert asked[-1] == ("simulating requests", bar)


def test_progress_bar_is_nothing_in_a_pipe(monkeypatch):
    import sys

    from roofline.views.cli._common import progress_bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with progress_bar("x", True) as progress:
        assert progress is None
    with progress_bar("x", False) as progress:
        assert progress is None
