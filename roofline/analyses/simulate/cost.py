"""The step-cost interface the simulator prices engine steps with, and a simple affine cost.

A step decodes ``decode_seqs`` sequences (one token each) whose cached contexts sum to
``decode_kv_tokens`` and processes ``prefill_tokens`` prompt tokens (chunks of several
requests) whose causal attention pairs sum to ``prefill_attention_pairs``.  A mixed step is
priced by one call, never as a sum of a prefill step and a decode step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import RooflineError


@runtime_checkable
class StepCost(Protocol):
    """What the simulator needs from a deployment: step time, KV capacity, KV transfer time."""

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the usable HBM holds after the weights."""
        ...

    def step_time_s(
        self,
        decode_seqs: ArrayLike,
        decode_kv_tokens: ArrayLike,
        prefill_tokens: ArrayLike,
        prefill_attention_pairs: ArrayLike,
    ) -> np.ndarray:
        """Seconds of one engine step with this mix (numpy arrays broadcast)."""
        ...

    def kv_transfer_time_s(self, tokens: float) -> float:
        """Seconds to ship ``tokens`` tokens of KV from a prefill to a decode replica."""
        ...


def causal_pairs(chunk_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
    """Attention pairs of a c-token chunk after p cached tokens: Σ_{i=1..c} (p + i) = c·(p + (c+1)/2)."""
    c = np.asarray(chunk_tokens, dtype=float)
    return c * (np.asarray(cached_tokens, dtype=float) + (c + 1.0) / 2.0)


@dataclass(frozen=True)
class AffineStepCost:
    """t = fixed + per_seq·(decode seqs) + per_kv_token·(KV tokens) + per_prefill_token·T + per_pair·pairs.

    A hand-checkable cost for tests and benchmarks; transfers cost
    ``transfer_latency_s + tokens·transfer_s_per_token``.
    """

    fixed_s: float
    per_seq_s: float
    per_kv_token_s: float
    per_prefill_token_s: float
    per_pair_s: float
    kv_capacity_tokens: int
    transfer_latency_s: float = 0.0
    transfer_s_per_token: float = 0.0

    def __post_init__(self) -> None:
        terms = (
            self.fixed_s,
            self.per_seq_s,
            self.per_kv_token_s,
            self.per_prefill_token_s,
            self.per_pair_s,
            self.transfer_latency_s,
            self.transfer_s_per_token,
        )
        if min(terms) < 0 or self.kv_capacity_tokens < 1:
            raise RooflineError("AffineStepCost: terms must be >= 0 and kv_capacity_tokens >= 1")

    def step_time_s(
        self,
        decode_seqs: ArrayLike,
        decode_kv_tokens: ArrayLike,
        prefill_tokens: ArrayLike,
        prefill_attention_pairs: ArrayLike,
    ) -> np.ndarray:
        """fixed + per_seq·n + per_kv_token·K + per_prefill_token·T + per_pair·pairs."""
        return np.asarray(
            self.fixed_s
            + np.multiply(self.per_seq_s, decode_seqs)
            + np.multiply(self.per_kv_token_s, decode_kv_tokens)
            + np.multiply(self.per_prefill_token_s, prefill_tokens)
            + np.multiply(self.per_pair_s, prefill_attention_pairs),
            dtype=float,
        )

    def kv_transfer_time_s(self, tokens: float) -> float:
        """transfer_latency + tokens·transfer_s_per_token."""
        return self.transfer_latency_s + tokens * self.transfer_s_per_token


class Pricer(Protocol):
    """What the engine calls each step: scalar prices (a table's lookups, or a step cost's own function)."""

    def mixed_s(self, n: int, kv: float, tokens: int, pairs: float) -> float:
        """One step of n decodes over kv cached tokens and ``tokens`` prompt tokens with ``pairs`` causal pairs."""
        ...

    def decode_run(self, n: int, kv0: float, k: int) -> list[float]:
        """k decode-only steps of n sequences from kv0 cached tokens (each step adds n)."""
        ...


class CostPricer:
    """A :class:`Pricer` over any :class:`StepCost` (one call per step; a run of decodes in one call)."""

    def __init__(self, cost: StepCost) -> None:
        self.price = cost.step_time_s

    def mixed_s(self, n: int, kv: float, tokens: int, pairs: float) -> float:
        return float(self.price(n, kv, tokens, pairs))

    def decode_run(self, n: int, kv0: float, k: int) -> list[float]:
        priced = self.price(n, kv0 + n * np.arange(k, dtype=float), 0, 0)
        return np.asarray(priced, dtype=float).tolist() if np.ndim(priced) else [float(priced)] * k


class RoundPricer(CostPricer):
    """Speculative decoding over a step cost with ``round_time_s(decode_seqs, decode_kv_tokens, draft_len)``: a
    decode "step" is one draft-and-verify round; a step with prompt chunks adds them at the plain step's price."""

    def __init__(self, cost: StepCost, draft_len: int) -> None:
        super().__init__(cost)
        round_time = getattr(cost, "round_time_s", None)
        if round_time is None:
            raise RooflineError(
                f"speculative decoding needs a step cost that prices verify rounds ({type(cost).__name__} does not)"
            )
        self.round, self.draft_len = round_time, draft_len

    def mixed_s(self, n: int, kv: float, tokens: int, pairs: float) -> float:
        base = float(self.round(n, kv, self.draft_len)) if n else 0.0
        if not tokens:
            return base
        return base + float(self.price(n, kv, tokens, pairs)) - (float(self.price(n, kv, 0, 0)) if n else 0.0)


def pricer_for(
    cost: StepCost, max_seqs: int, max_tokens: int, prompt_lens: Sequence[int], draft_len: int | None
) -> Pricer:
    """The cost's own tabulated pricer when it has one (``pricer(...)``), else one call per step."""
    own = getattr(cost, "pricer", None)
    if own is not None:
        return own(max_seqs, max_tokens, prompt_lens, draft_len)
    return CostPricer(cost) if draft_len is None else RoundPricer(cost, draft_len)
