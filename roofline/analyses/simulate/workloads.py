"""Workloads whose prompts share prefixes, for the block prefix cache: the common shapes, generated.

* :func:`prompt_pool`: a fixed pool of P prompts sent in turn, over and over (load generators that
  cycle a prompt set, e.g. inference-perf's runs in ``/work/shared/measurements/vllm-serving-h100``);
* :func:`system_prompts`: N system prompts of S tokens, each shared by M users who ask their own
  questions (the prompt's first S tokens are shared);
* :func:`multi_turn_chat`: conversations whose every turn sends the whole history (previous prompts
  and answers) plus a new message, so each turn's prompt continues the previous one.

Lengths come from a :class:`~roofline.analyses.lengths.LengthDistribution` (the prompt, or for a
chat the new message of each turn, and the output).  All draws use the generator given.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.simulate.load import Requests, sample_lengths
from roofline.core.errors import OptionError, shown


def prompt_pool(count: int, pool: int, lengths: LengthDistribution, rng: np.random.Generator) -> Requests:
    """``count`` requests cycling ``pool`` fixed prompts in order (each prompt a session repeating itself)."""
    inp, out = sample_lengths(lengths, pool, rng)
    return pool_requests(count, inp, out)


def lengths_from_quantiles(quantiles: Mapping[float, float], count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` whole lengths drawn from a distribution given by quantiles ({percent: length}, 0 and 100
    included), linear between them (a run's published prompt_len quantiles -> its prompt pool)."""
    ps = sorted(quantiles)
    if ps[0] != 0 or ps[-1] != 100:
        raise OptionError("quantiles need the 0th and 100th percentiles (min and max)")
    values = [float(quantiles[p]) for p in ps]
    return np.maximum(np.rint(np.interp(rng.random(count) * 100, ps, values)), 1).astype(np.int64)


def pool_requests(count: int, prompt_lens: np.ndarray, output_len: np.ndarray | int) -> Requests:
    """``count`` requests sending the prompts of ``prompt_lens`` in turn (a fixed prompt pool cycled)."""
    pick = np.arange(count) % prompt_lens.size
    out = np.broadcast_to(np.asarray(output_len, dtype=np.int64), (prompt_lens.size,))
    return Requests(
        prompt_lens[pick],
        out[pick].copy(),
        session_id=pick.astype(np.int64),
        source=f"prompt pool of {prompt_lens.size}",
    )


def system_prompts(
    count: int, prompts: int, users: int, system_len: int, lengths: LengthDistribution, rng: np.random.Generator
) -> Requests:
    """``count`` requests from ``prompts`` x ``users`` users: each request's first ``system_len`` tokens are its
    user's system prompt (users are spread evenly over the prompts), the rest its own question."""
    inp, out = sample_lengths(lengths, count, rng)
    if system_len > int(inp.min()):
        raise OptionError(
            f"workload: a system prompt of {system_len} tokens is longer than the shortest prompt ({int(inp.min())})",
            parameters=("workload",),
        )
    user = rng.integers(0, prompts * users, size=count)
    return Requests(
        inp,
        out,
        prefix_id=(user % prompts).astype(np.int64),
        prefix_len=np.full(count, system_len, dtype=np.int64),
        source=f"{prompts} system prompts x {users} users",
    )


def multi_turn_chat(
    count: int, sessions: int, turns: int, system_len: int, lengths: LengthDistribution, rng: np.random.Generator
) -> Requests:
    """``count`` requests of conversations, ``sessions`` at a time, ``turns`` each: turn t's prompt is a shared
    ``system_len``-token system prompt, the earlier turns' messages and answers, and a new message."""
    new, out = sample_lengths(lengths, count, rng)
    inp = np.empty(count, dtype=np.int64)
    sid = np.empty(count, dtype=np.int64)
    history = np.full(sessions, system_len, dtype=np.int64)
    turn = np.zeros(sessions, dtype=np.int64)
    ids = np.arange(sessions, dtype=np.int64)
    next_id = sessions
    for k in range(count):
        s = k % sessions
        inp[k] = history[s] + new[k]
        sid[k] = ids[s]
        history[s] += new[k] + out[k]
        turn[s] += 1
        if turn[s] == turns:  # the conversation ends; a new one takes its place
            history[s], turn[s], ids[s] = system_len, 0, next_id
            next_id += 1
    shared = system_len > 0
    return Requests(
        inp,
        out,
        prefix_id=np.zeros(count, dtype=np.int64) if shared else None,
        prefix_len=np.full(count, system_len, dtype=np.int64) if shared else None,
        session_id=sid,
        source=f"multi-turn chat, {sessions} sessions x {turns} turns",
    )


WORKLOAD_HINT = "pool:PROMPTS, system:PROMPTS:USERS:TOKENS or chat:SESSIONS:TURNS[:SYSTEM_TOKENS]"


def parse_workload(text: str, count: int, lengths: LengthDistribution, seed: int) -> Requests:
    """``--workload`` text -> requests (lengths from -i/-o or --lengths; see :data:`WORKLOAD_HINT`)."""
    parts = str(text).strip().split(":")
    kind, args = parts[0], parts[1:]
    try:
        nums = [int(a) for a in args]
    except ValueError:
        raise OptionError(
            f"workload: cannot read {shown(text)}; expected {WORKLOAD_HINT}", parameters=("workload",)
        ) from None
    shapes = {"pool": (1, 1), "system": (3, 3), "chat": (2, 3)}
    if kind not in shapes or not shapes[kind][0] <= len(nums) <= shapes[kind][1]:
        raise OptionError(f"workload: cannot read {shown(text)}; expected {WORKLOAD_HINT}", parameters=("workload",))
    least = [1] * len(nums)
    if kind in ("system", "chat") and len(nums) == 3:
        least[2] = 0 if kind == "chat" else 1
    if any(n < lo or n > 1_000_000 for n, lo in zip(nums, least, strict=True)):
        raise OptionError(
            f"workload: {shown(text)}: counts must be in [1, 1000000] (tokens >= 0 for a chat)",
            parameters=("workload",),
        )
    rng = np.random.default_rng([seed, 4])
    if kind == "pool":
        return prompt_pool(count, nums[0], lengths, rng)
    if kind == "system":
        return system_prompts(count, nums[0], nums[1], nums[2], lengths, rng)
    return multi_turn_chat(count, nums[0], nums[1], nums[2] if len(nums) == 3 else 0, lengths, rng)
