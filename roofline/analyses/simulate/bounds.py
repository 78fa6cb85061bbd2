"""Ceilings on simulated work, checked before the event loop starts and while it runs (issue 28).

The event loop's cost grows with the engine steps it runs (each step moves every running request
by a token or a prompt chunk) times the replicas it scans per event.  Two figures bound it up front:

- **requests x replicas** <= :data:`MAX_REQUEST_REPLICAS` (the scan over replicas per event);
- **simulated tokens** = requests x (mean output tokens + mean prompt chunks of
  ``max_num_batched_tokens``) <= :data:`MAX_SIMULATED_TOKENS`: every step moves at least one of
  these, so it bounds the steps (at the ~30,000 steps/s of one core, a run at the ceiling with a
  mean batch of 30 takes about two minutes).

A run over either is refused at once with its figure and what to lower.  A third,
**engine steps** (all replicas) <= :data:`MAX_ENGINE_STEPS`, is refused up front when even full
batches would need more, and stops a run that passes it (a load that keeps batches small): the
loop checks it every :data:`CHECK_TURNS` turns (:class:`Watch`, which also reports progress to
the view's callback; the analysis prints nothing).  Tensor parallelism must
also divide the attention heads (and the KV heads divide or be divided by it), as serving engines
require (vLLM: "Total number of attention heads must be divisible by tensor parallel size").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from roofline.core.errors import OptionError
from roofline.specs import ModelSpec

if TYPE_CHECKING:
    from roofline.analyses.executors import Progress
    from roofline.analyses.simulate.engine import Engine

#: Most requests x replicas (decode + prefill) one simulation may hold.
MAX_REQUEST_REPLICAS = 50_000_000
#: Most simulated tokens (requests x (mean output + mean prompt chunks)) one simulation may run.
MAX_SIMULATED_TOKENS = 100_000_000
#: Most engine steps (all replicas) one simulation runs; checked up front from the fewest steps the
#: tokens need (every replica at max_num_seqs), and while it runs (a load that keeps batches small).
MAX_ENGINE_STEPS = 10_000_000
#: Runs above this many simulated tokens show a progress bar on a terminal.
PROGRESS_TOKENS = 2_000_000
#: The event loop checks the step ceiling (and reports progress) once every this many turns.
CHECK_TURNS = 4096


def simulated_tokens(requests: int, mean_input: float, mean_output: float, chunk_tokens: int) -> float:
    """requests x (mean output + mean prompt chunks): at least one step moves each of these."""
    return requests * (mean_output + math.ceil(mean_input / max(chunk_tokens, 1)))


def check_work(requests: int, replicas: int, mean_input: float, mean_output: float, chunk_tokens: int) -> float:
    """Refuse a simulation over a ceiling (one line with the figure); return its simulated tokens."""
    held = requests * replicas
    if held > MAX_REQUEST_REPLICAS:
        raise OptionError(
            f"requests x replicas: {requests:,} requests x {replicas:,} replicas = {held:,} is over the "
            f"simulator's ceiling of {MAX_REQUEST_REPLICAS:,}; give fewer requests= or replicas= "
            "(replicas serve alike: simulate one and scale its rate)",
            parameters=("requests", "replicas"),
        )
    tokens = simulated_tokens(requests, mean_input, mean_output, chunk_tokens)
    if tokens > MAX_SIMULATED_TOKENS:
        chunks = math.ceil(mean_input / max(chunk_tokens, 1))
        raise OptionError(
            f"requests: {requests:,} requests x ({mean_output:,.0f} output tokens + {chunks} prompt chunks) = "
            f"{tokens:,.0f} simulated tokens is over the "
            f"simulator's ceiling of {MAX_SIMULATED_TOKENS:,}; give fewer requests= (at most "
            f"{int(MAX_SIMULATED_TOKENS // max(tokens / requests, 1)):,} here)",
            parameters=("requests",),
        )
    return tokens


def check_steps_lower_bound(tokens: float, max_num_seqs: int, replicas: int, per_sequence: float = 1.0) -> None:
    """Refuse up front when even full batches on every replica need more than MAX_ENGINE_STEPS steps:
    fewest steps = tokens / (max_num_seqs x replicas x per_sequence), ``per_sequence`` being the most
    tokens one sequence gains in a step (1; draft_len + 1 with speculative decoding)."""
    fewest = tokens / max(max_num_seqs * replicas * per_sequence, 1.0)
    if fewest > MAX_ENGINE_STEPS:
        raise OptionError(
            f"requests: {tokens:,.0f} simulated tokens need at least {fewest:,.0f} engine steps (batches of "
            f"max_num_seqs={max_num_seqs} on {replicas} replica(s)), over the simulator's ceiling of "
            f"{MAX_ENGINE_STEPS:,}; give fewer requests",
            parameters=("requests", "max_num_seqs"),
        )


def steps_exceeded(steps: int, done: int, total: int | None) -> OptionError:
    """The refusal of a run that passed MAX_ENGINE_STEPS while running (a load that keeps batches small);
    ``total`` None: a staged load, whose stages set the count."""
    if total is None:
        return OptionError(
            f"stages: the simulation passed the ceiling of {MAX_ENGINE_STEPS:,} engine steps ({steps:,}) after "
            f"{done:,} requests (its load keeps batches small); shorten the stages",
            parameters=("stages",),
        )
    return OptionError(
        f"requests: the simulation passed the ceiling of {MAX_ENGINE_STEPS:,} engine steps ({steps:,}) after "
        f"{done:,} of {total:,} requests (its load keeps batches small); give fewer requests",
        parameters=("requests",),
    )


class Watch:
    """A running simulation's ceiling on engine steps, and its progress ``(done, total)`` for a view's bar:
    requests done of ``total``, or (``span_s`` given: a staged load) whole simulated seconds of its span."""

    def __init__(self, total: int, span_s: float | None, progress: Progress | None) -> None:
        self.total, self.span_s, self.progress = total, span_s, progress

    def check(self, engines: Sequence[Engine], done: int, final: bool = False) -> None:
        """Raise :func:`steps_exceeded` past the ceiling (not once the run is over: ``final``); else tell
        ``progress`` how far the run is."""
        steps = sum(e.steps for e in engines)
        if steps > MAX_ENGINE_STEPS and not final:
            raise steps_exceeded(steps, done, None if self.span_s is not None else self.total)
        if self.progress is None:
            return
        if self.span_s is None:
            self.progress(self.total if final else min(done, self.total), self.total)
        else:
            span = math.ceil(self.span_s)
            self.progress(span if final else min(int(max(e.clock for e in engines)), span), span)


def check_engine_tp(model: ModelSpec, tp: int) -> None:
    """A serving engine splits attention heads evenly: tp must divide the heads, and the KV heads must
    divide tp or be divided by it (KV heads are replicated when tp exceeds them)."""
    heads, kv = model.num_heads, model.num_kv_heads
    if heads % tp:
        raise OptionError(
            f"tp={tp}: {model.name} has {heads} attention heads, which {tp} does not divide; a serving engine "
            f"splits heads evenly (allowed: {', '.join(str(d) for d in range(1, heads + 1) if heads % d == 0)})",
            parameters=("tp",),
        )
    if kv and kv % tp and tp % kv:
        raise OptionError(
            f"tp={tp}: {model.name}'s {kv} KV heads neither divide {tp} nor are divided by it", parameters=("tp",)
        )
