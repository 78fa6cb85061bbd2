"""The work of one engine step: decode tokens at a context, prefill tokens, or a mix of both."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.deploy.layout import replica_loads
from roofline.model.memory import Number


@dataclass(frozen=True)
class Work:
    """One step's work for the whole slice (arrays broadcast).

    ``decode_seqs`` sequences each decode one token over ``decode_context`` cached tokens;
    ``prefill_seqs`` sequences each process ``prefill_len`` new prompt tokens after
    ``prefill_cached`` tokens already in their cache (a chunk of chunked prefill, or a prefix hit).
    """

    decode_seqs: ArrayLike = 0.0
    decode_context: ArrayLike = 0.0
    prefill_seqs: ArrayLike = 0.0
    prefill_len: ArrayLike = 0.0
    prefill_cached: ArrayLike = 0.0
    #: Prompts those prefill tokens belong to, for per-prompt costs (sampling, the engine's per-prefill
    #: overhead, the LM head): one chunk a step may be a fraction of a prompt.  None: ``prefill_seqs``.
    prefill_prompts: ArrayLike | None = None
    #: True where the counts are already one replica's (a mixed engine's per-step rates): not dealt.
    per_replica: bool = False

    @property
    def prompts(self) -> ArrayLike:
        """Prompts in the step (``prefill_prompts``, else one per prefill sequence)."""
        return self.prefill_seqs if self.prefill_prompts is None else self.prefill_prompts

    @property
    def prefill_tokens(self) -> Number:
        """New prompt tokens in the step: prefill sequences × tokens each."""
        return np.multiply(self.prefill_seqs, self.prefill_len)

    @property
    def tokens(self) -> Number:
        """All tokens the weight matmuls see: decode sequences + new prompt tokens."""
        return np.add(self.decode_seqs, self.prefill_tokens)

    def scaled(self, factor: ArrayLike) -> Work:
        """The same work with the sequence counts divided by ``factor`` (one replica's or microbatch's share)."""
        prompts = None if self.prefill_prompts is None else np.divide(self.prefill_prompts, factor)
        return Work(
            np.divide(self.decode_seqs, factor),
            self.decode_context,
            np.divide(self.prefill_seqs, factor),
            self.prefill_len,
            self.prefill_cached,
            prompts,
        )

    def dealt(self, replicas: ArrayLike) -> Work:
        """The busiest of r replicas' share: sequences and prompts are dealt out, ⌈n/r⌉ (a request runs
        on one replica; :func:`~roofline.deploy.layout.replica_loads`).  Work already one replica's
        (``per_replica``) is its own share."""
        if self.per_replica or not np.any(np.not_equal(replicas, 1.0)):
            return self
        return self.busiest_of(replicas)

    def busiest_of(self, ranks: ArrayLike) -> Work:
        """The busiest of ``ranks`` equal shares of this work (a replica's attention data-parallel ranks, or its
        replicas): sequences and prompts dealt out, ⌈n/r⌉ to the busiest (a sequence lives on one rank)."""
        replicas = ranks
        decodes, prefills = (replica_loads(n, replicas)[0] for n in (self.decode_seqs, self.prefill_seqs))
        prompts = (
            None
            if self.prefill_prompts is None
            else np.where(
                np.greater(self.prefill_seqs, 0.0),
                np.multiply(self.prefill_prompts, np.divide(prefills, np.maximum(self.prefill_seqs, 1e-300))),
                np.divide(self.prefill_prompts, replicas),
            )
        )
        return Work(decodes, self.decode_context, prefills, self.prefill_len, self.prefill_cached, prompts)


def decode_work(batch: ArrayLike, context: ArrayLike) -> Work:
    """B sequences decoding one token each over S cached tokens."""
    return Work(decode_seqs=batch, decode_context=context)


def prefill_work(batch: ArrayLike, input_len: ArrayLike, cached: ArrayLike = 0.0) -> Work:
    """B prompts of I tokens each (after ``cached`` tokens already in the cache)."""
    return Work(prefill_seqs=batch, prefill_len=input_len, prefill_cached=cached)
