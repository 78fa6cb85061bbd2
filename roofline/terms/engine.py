"""The engine's host time in a step, from the registry's step and floor terms (one formula, used by the
step model and the simulator's step cost alike).

A replica's step takes max(device time + Σ step terms, Σ floor terms): step terms (host work not hidden
under the GPU) add to it; floor terms (an eager step's kernel launches) bound it from below, since the
device work of such a step runs behind the host's launches and is hidden when shorter.  Entries fitted
before the registry add nothing here (their terms enter :func:`roofline.terms.step.engine_overhead_s`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from roofline.deploy import EngineTerms
from roofline.deploy.engine_registry import StepShape, terms_of
from roofline.model.memory import Number
from roofline.terms.work import Work


def step_shape(layers: float, work: Work) -> StepShape:
    """The shape of one replica's step of ``work`` (already its share): sampled sequences, tokens, prompts."""
    return StepShape(
        sequences=np.add(work.decode_seqs, work.prompts), tokens=work.tokens, prompts=work.prompts, layers=layers
    )


def device_engine(engine: EngineTerms) -> EngineTerms:
    """``engine`` without its registry host and request terms: what a step's device time depends on (its
    kernel properties such as GQA KV re-reads, and an earlier fit's terms, stay)."""
    if not engine.registry_entry:
        return engine
    return replace(engine, values={}, term_sources={}, policy="")


def host_terms_s(engine: EngineTerms, shape: StepShape) -> tuple[Number, Number] | None:
    """(Σ step terms, Σ floor terms) of ``engine`` at ``shape`` in seconds; None for an entry without any."""
    if not engine.registry_entry:
        return None
    values = engine.terms()
    add: Number = 0.0
    for term in terms_of("step"):
        if values[term.name]:
            add = np.add(add, term.step_s(values, shape))  # type: ignore[misc]
    floor: Number = 0.0
    for term in terms_of("floor"):
        if values[term.name]:
            floor = np.add(floor, term.step_s(values, shape))  # type: ignore[misc]
    return add, floor


def frontend_s(engine: EngineTerms) -> tuple[float, float]:
    """(front end in, front end out) in seconds: the request path outside the GPU steps where the entry gives it
    (HTTP and tokenising before the scheduler; detokenising and streaming after a step), else (0, 0)."""
    given = engine.values or {}
    return float(given.get("frontend_in_s", 0.0)), float(given.get("frontend_out_s", 0.0))


def engine_step_s(engine: EngineTerms, shape: StepShape, device_s: Number) -> Number:
    """max(device + Σ step terms, Σ floor terms): a replica's step with the engine's host time."""
    host = host_terms_s(engine, shape)
    if host is None:
        return device_s
    add, floor = host
    return np.maximum(np.add(device_s, add), floor)
