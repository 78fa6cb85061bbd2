"""Speculative decoding in `serve`: γ drafts at acceptance α, the verify step priced by the step model.

The speedup over plain decoding falls below 1 where the verify step (γ+1 tokens a sequence) turns
compute-bound; the break-even batch is searched past what fits in memory, so it is finite wherever
the gain ends (``break_even_fits_memory`` says whether that batch fits).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from roofline.analyses.step import step_from
from roofline.core.errors import OptionError, shown
from roofline.deploy import Deployment
from roofline.formulas import serving
from roofline.specs import ModelSpec
from roofline.terms import Work, decode_work, step_terms

#: serve's speculative break-even checks batches 1, 2, 4, ... up to 2^this.
BREAK_EVEN_MAX_LOG2 = 20


def speculative(
    dep: Deployment,
    batch: int,
    context: float,
    draft_model: ModelSpec | None,
    draft_len: int | None,
    acceptance: float | None,
) -> dict[str, object]:
    """Speculative decoding, γ drafts at acceptance α: the verify step is γ+1 tokens per sequence priced
    by the step model (compute-bound above the critical batch), so the speedup falls below 1 there."""
    if draft_model is None or draft_len is None or acceptance is None:
        raise OptionError(
            "speculative decoding needs draft_model=, draft_len= and acceptance= together",
            parameters=("draft_model", "draft_len", "acceptance"),
        )
    if draft_len < 1:
        raise OptionError(f"draft_len must be at least 1 (got {shown(draft_len)})", parameters=("draft_len",))
    if not 0 <= acceptance <= 1:
        raise OptionError(f"acceptance must be in [0, 1] (got {shown(acceptance)})", parameters=("acceptance",))
    fit_limit = float(step_from(dep, 1, context).max_batch)
    # The gain ends where the verify step turns compute-bound, whether or not that batch fits in memory:
    # check powers of two up to 2^20 so the break-even is finite wherever the speedup falls to 1.
    grid = 2.0 ** np.arange(0, BREAK_EVEN_MAX_LOG2 + 1)
    batches = np.unique(np.concatenate([[batch], grid]))
    plain = np.asarray(step_from(dep, batches, context).step_time_s, dtype=float)
    from roofline.deploy import chip_rates

    draft_rates = chip_rates(dep.hw, dep.precision.compute, kv_dtype=dep.precision.kv)
    draft_dep = replace(dep, model=draft_model, rates=draft_rates)
    draft = np.asarray(step_terms(draft_dep, decode_work(batches, context)).time_s, dtype=float)
    verify = np.asarray(
        step_terms(dep, Work(prefill_seqs=batches, prefill_len=draft_len + 1.0, prefill_cached=context)).time_s,
        dtype=float,
    )
    tokens = float(serving.expected_tokens_per_step(acceptance, draft_len))
    round_s = serving.speculative_round_time_s(draft, draft_len, verify)
    speedup = serving.speculative_speedup(tokens, round_s, plain)
    i = int(np.nonzero(batches == batch)[0][0])
    even = serving.break_even_batch(batches, speedup)
    return {
        "draft_model": draft_model.name,
        "draft_len": draft_len,
        "acceptance": acceptance,
        "tokens_per_target_step": tokens,
        "draft_step_s": float(draft[i]),
        "verify_step_s": float(verify[i]),
        "round_time_s": float(round_s[i]),
        "plain_step_s": float(plain[i]),
        "tpot_s": float(round_s[i]) / tokens,
        "speedup": float(speedup[i]),
        "break_even_batch": even,
        "largest_batch_checked": float(batches[-1]),
        "max_batch_in_memory": fit_limit,
        "break_even_fits_memory": bool(np.isfinite(even) and even <= fit_limit),
        "break_even_note": (
            f"inf: speculation pays at every batch up to {batches[-1]:g}"
            if not np.isfinite(even)
            else f"the smallest power-of-two batch where the speedup is at most 1 ({even:g}); "
            + (
                "it fits in memory"
                if even <= fit_limit
                else f"beyond the {fit_limit:g} sequences that fit in memory: speculation pays at every batch that fits"
            )
        ),
    }
