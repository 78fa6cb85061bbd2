"""A synthetic step cost for the simulator's tests: constants chosen here, every step time worked by hand.

t = a + b·(decode seqs + prefill tokens) + c·(decode KV tokens + prefill causal pairs); KV transfers take
``transfer_s``; a token's KV is ``kv_bytes_per_token`` bytes (for the host tier's transfer time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

A, B, C = 0.005, 1e-4, 1e-8  # s per step, s per token processed, s per KV token / attention pair read


@dataclass(frozen=True)
class LinearCost:
    """t = a + b·(decode seqs + prefill tokens) + c·(decode KV tokens + prefill pairs)."""

    a: float = A
    b: float = B
    c: float = C
    kv_capacity_tokens: int = 1_000_000
    transfer_s: float = 0.0
    kv_bytes_per_token: float = 1000.0

    def step_time_s(self, decode_seqs, decode_kv_tokens, prefill_tokens, prefill_attention_pairs):
        return np.asarray(
            self.a
            + self.b * np.add(decode_seqs, prefill_tokens)
            + self.c * np.add(decode_kv_tokens, prefill_attention_pairs),
            dtype=float,
        )

    def kv_transfer_time_s(self, tokens):
        return self.transfer_s


def prefill_s(tokens: int, cached: int = 0, cost: LinearCost = LinearCost()) -> float:
    """One chunk of c tokens after p cached: a + b·c + c·c·(p + (c+1)/2)."""
    return cost.a + cost.b * tokens + cost.c * tokens * (cached + (tokens + 1) / 2)


def decode_s(seqs: int, kv: float, cost: LinearCost = LinearCost()) -> float:
    """One decode step of n sequences over kv cached tokens in all: a + b·n + c·kv."""
    return cost.a + cost.b * seqs + cost.c * kv
