"""The block prefix cache: hits that emerge from reuse in the load, LRU eviction, the host tier.

Expected numbers are worked by hand in the comments from vLLM's rules as the simulator models them:
full 16-token blocks are keyed, at least the last prompt token is computed (hits cover at most
(I − 1) // 16 blocks), freed blocks join the free list tail first, allocation takes the oldest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import (
    OffloadConfig,
    OpenLoop,
    Requests,
    SchedulerConfig,
    SimConfig,
    Trace,
    read_trace,
    simulate,
)
from roofline.analyses.simulate.cache import PrefixCache
from roofline.analyses.simulate.workloads import multi_turn_chat, prompt_pool, system_prompts
from roofline.core.errors import RooflineError
from tests.profiles import at_most
from tests.sim_costs import LinearCost, prefill_s


def trace(times, inputs, outputs, sessions=None, prefixes=None, prefix_lens=None) -> Trace:
    arr = lambda v: None if v is None else np.asarray(v, dtype=np.int64)  # noqa: E731
    return Trace(
        np.asarray(times, dtype=float),
        arr(inputs),
        arr(outputs),
        prefix_id=arr(prefixes),
        prefix_len=arr(prefix_lens),
        session_id=arr(sessions),
    )


def run(cost, load, **kwargs):
    return simulate(cost, load, SimConfig(requests=None, warmup=0, **kwargs))


# ---------------------------------------------------------------------- the free list by hand


def test_free_list_evicts_the_oldest_freed_block_first():
    # 6 free blocks; a request takes 4 (from the never-used run), keys two of them (x0, x1) and frees all:
    # the two unkeyed go back first, then x1, then x0.  Taking 4 more uses the 2 never-used blocks and the
    # 2 unkeyed ones; a 5th evicts x1 (the older of the keyed), so x0 is still cached.
    cache = PrefixCache(6, 16)
    cache.take(4)
    assert cache.register(10) and cache.register(11)
    cache.release([10, 11], 2)
    assert cache.free_count() == 6 and cache.lookup([10, 11]) == (2, 0, 0)
    cache.take(4)
    assert cache.evictions == 0
    cache.take(1)
    assert cache.evictions == 1 and cache.lookup([10, 11]) == (1, 0, 0) and cache.lookup([11]) == (0, 0, 0)


def test_a_block_in_use_is_shared_not_freed():
    cache = PrefixCache(4, 16)
    cache.take(1)
    cache.register(7)
    cache.claim([7])  # a second request holds it too
    cache.release([7], 0)
    assert cache.refs == {7: 1} and cache.free_count() == 3  # still held by the first
    cache.release([7], 0)
    assert cache.refs == {} and cache.free_count() == 4


# ---------------------------------------------------------------------- hits that emerge from the load


def test_a_repeated_prompt_hits_its_full_blocks_but_the_last_token():
    # Two sends of one 100-token prompt, far apart: the second finds (100 − 1) // 16 = 6 blocks = 96 tokens
    # cached and computes 4 tokens after them.  Achieved hit rate over both: 96 / 200 = 0.48.
    res = run(LinearCost(), trace([0, 100], [100, 100], [5, 5], sessions=[0, 0]))
    assert res.requests.cached_tokens.tolist() == [0, 96]
    assert res.samples["ttft_s"].tolist() == pytest.approx([prefill_s(100), prefill_s(4, 96)], rel=1e-12)
    assert res.prefix_hit_rate == pytest.approx(0.48)


def test_a_shared_system_prompt_hits_only_its_own_blocks():
    # Prefix of 40 tokens in 100-token prompts: floor(40 / 16) = 2 full blocks = 32 tokens shared.
    res = run(LinearCost(), trace([0, 100], [100, 100], [5, 5], prefixes=[3, 3], prefix_lens=[40, 40]))
    assert res.requests.cached_tokens.tolist() == [0, 32]


def test_a_chat_turn_hits_the_previous_turn_prompt_and_answer():
    # Turn 1: 100 prompt + 20 answer tokens; its full blocks are keyed when it finishes:
    # (100 + 20 − 1) // 16 = 7 blocks.  Turn 2's prompt (150 tokens) starts with them: 112 tokens cached.
    res = run(LinearCost(), trace([0, 100], [100, 150], [20, 5], sessions=[1, 1]))
    assert res.requests.cached_tokens.tolist() == [0, 112]


@pytest.mark.parametrize("capacity, cached", [(128, 48), (96, 16)])
def test_eviction_follows_the_free_list(capacity, cached):
    # Prompts A, B, A (64 tokens, 2 out) one at a time.  A holds 4 prompt blocks + 1 for its decode and keys
    # (64 + 2 − 1) // 16 = 4 blocks; freed: its unkeyed block, then a3, a2, a1, a0.
    # 8 blocks: B's 5 come from the 3 never-used + A's unkeyed + a3 -> a0..a2 survive: A hits 3 blocks = 48.
    # 6 blocks: 1 never-used + A's unkeyed + a3, a2, a1 go to B -> only a0 survives: 16 tokens.
    load = trace([0, 100, 200], [64, 64, 64], [2, 2, 2], sessions=[0, 1, 0])
    res = run(LinearCost(kv_capacity_tokens=capacity), load)
    assert res.requests.cached_tokens.tolist() == [0, 0, cached]


def test_the_host_tier_keeps_evicted_blocks_and_loads_them_back():
    # As above with 6 blocks, plus a host tier: a3, a2, a1 are kept there when evicted, so A hits 3 blocks
    # again, 2 of them (a1, a2) loaded from the host: 2 blocks x 16 tokens x 1,000 B / 1 MB/s = 32 ms on
    # A's prefill step.
    load = trace([0, 100, 200], [64, 64, 64], [2, 2, 2], sessions=[0, 1, 0])
    res = run(LinearCost(kv_capacity_tokens=96), load, offload=OffloadConfig(1e6, 1e6))
    assert res.requests.cached_tokens.tolist() == [0, 0, 48]
    assert res.samples["ttft_s"][2] == pytest.approx(prefill_s(16, 48) + 0.032, rel=1e-12)


def test_the_shortcut_and_no_cache():
    load = trace([0, 100], [100, 100], [5, 5], sessions=[0, 0])
    knob = run(LinearCost(), load, scheduler=SchedulerConfig(prefix_hit_rate=0.25))
    assert knob.requests.cached_tokens.tolist() == [25, 25] and knob.prefix_hit_rate == pytest.approx(0.25)
    off = run(LinearCost(), load, scheduler=SchedulerConfig(prefix_caching=False))
    assert off.requests.cached_tokens.tolist() == [0, 0] and off.prefix_hit_rate is None
    plain = simulate(LinearCost(), OpenLoop(1.0), SimConfig(lengths=fixed_lengths(100, 5), requests=20))
    assert plain.prefix_hit_rate is None and "no shared prefix" in plain.sources["prefix cache"]


# ---------------------------------------------------------------------- generators


def test_generators_have_the_shapes_asked_for():
    rng = np.random.default_rng(0)
    pool = prompt_pool(10, 4, fixed_lengths(100, 8), rng)
    assert pool.session_id.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    sysp = system_prompts(50, 3, 5, 40, fixed_lengths(100, 8), rng)
    assert set(sysp.prefix_id.tolist()) <= {0, 1, 2} and set(sysp.prefix_len.tolist()) == {40}
    # 2 sessions of 3 turns, 10 new tokens and 5 answer tokens a turn after a 20-token system prompt:
    # turn t of a session sends 20 + 15·t + 10 tokens; the third conversation starts after the second's end.
    chat = multi_turn_chat(8, 2, 3, 20, fixed_lengths(10, 5), rng)
    assert chat.input_len.tolist() == [30, 30, 45, 45, 60, 60, 30, 30]
    assert chat.session_id.tolist() == [0, 1, 0, 1, 0, 1, 2, 3]
    with pytest.raises(RooflineError, match="longer than its prompt"):
        Requests(np.array([10]), np.array([5]), np.array([0]), np.array([11]))


def test_a_prompt_pool_reaches_its_steady_hit_rate():
    # 20 prompts of 100 tokens cycled 400 times at low load: after each prompt's first use every send hits
    # 96 of 100 tokens, so the measured (last 360) requests hit 0.96.
    reqs = prompt_pool(400, 20, fixed_lengths(100, 4), np.random.default_rng(1))
    res = simulate(LinearCost(), OpenLoop(5.0), SimConfig(workload=reqs, requests=None, warmup=40))
    assert res.prefix_hit_rate == pytest.approx(0.96)


# ---------------------------------------------------------------------- trace columns


def test_trace_prefix_and_session_columns(tmp_path: Path):
    p = tmp_path / "t.csv"
    p.write_text(
        "arrival_time_s,input_len,output_len,prefix_id,prefix_len,session_id\n"
        "0,100,5,sys,40,\n1,100,5,sys,,u1\n2,80,5,,,u1\n"
    )
    t = read_trace(p)
    assert t.prefix_id.tolist() == [0, 0, -1] and t.prefix_len.tolist() == [40, 100, 0]
    assert t.session_id.tolist() == [-1, 0, 0]
    p.write_text("arrival_time_s,input_len,output_len,prefix_id,prefix_len\n0,100,5,sys,101\n")
    with pytest.raises(RooflineError, match=r"line 2: prefix_len 101 is longer than its prompt \(input_len 100\)"):
        read_trace(p)


# ---------------------------------------------------------------------- invariants


@at_most(25)
@given(
    capacity=st.integers(8, 60).map(lambda b: 16 * b),
    prompts=st.integers(1, 6),
    inp=st.integers(17, 120),
    out=st.integers(1, 40),
    rate=st.floats(0.5, 100.0),
    host=st.sampled_from([None, 2e4, 1e6]),
    swap=st.booleans(),
    timeout=st.sampled_from([None, 0.05, 1.0]),
    seed=st.integers(0, 5),
)
def test_the_cache_never_loses_a_block(capacity, prompts, inp, out, rate, host, swap, timeout, seed):
    reqs = prompt_pool(60, prompts, fixed_lengths(inp, out), np.random.default_rng(seed))
    offload = OffloadConfig(host, 1e8) if host else None
    sched = SchedulerConfig(
        max_num_seqs=4, max_num_batched_tokens=64, preemption="swap" if swap and host else "recompute"
    )
    engines = []
    from roofline.analyses.simulate import run as run_module

    made = run_module._Run._engine

    def keep(self, cost, prefill_only=False):
        engines.append(made(self, cost, prefill_only))
        return engines[-1]

    run_module._Run._engine = keep
    try:
        res = simulate(
            LinearCost(kv_capacity_tokens=capacity),
            OpenLoop(rate),
            SimConfig(workload=reqs, requests=None, scheduler=sched, offload=offload, timeout_s=timeout, seed=seed),
        )
    finally:
        run_module._Run._engine = made
    e = engines[0]
    assert res.completed + res.failed + res.dropped == 60
    assert e.free == e.total_blocks and e.cache.free_count() == e.total_blocks and not e.cache.refs
    hit = res.requests.cached_tokens
    assert np.all(hit[hit >= 0] <= res.requests.input_tokens[hit >= 0] - 1)
