"""The step-cost interface the simulator prices engine steps with, and a simple affine cost.

A step decodes ``decode_seqs`` sequences (one token each) whose cached contexts sum to
``decode_kv_tokens`` and processes ``prefill_tokens`` prompt tokens (chunks of several
requests) whose causal attention pairs sum to ``prefill_attention_pairs``.  A mixed step is
priced by one call, never as a sum of a prefill step and a decode step.
"""

from __future__ import annotations

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
