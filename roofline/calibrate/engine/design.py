"""Closed-form rows (a static batch, a max-throughput run) as device step times, priced at any engine entry.

The device time of each step a row needs is computed once by the step model with the entry's kernel
properties (:func:`~roofline.terms.engine.device_engine`); its registry host terms then enter each step
by :func:`roofline.terms.engine.engine_step_s`, as ``step_terms`` applies them, so
``design.predict(entry)`` equals pricing the row with the entry from scratch (a fit re-prices rows
hundreds of times).  The compositions are ``serve``'s:

* static batch B (``serve --mode static``): TTFT = the batch's prefill step; TPOT = the mean of the
  O − 1 decode steps as the context grows (the step model's Gauss-Legendre sum, node by node);
  tokens/s = B·O / (TTFT + (O − 1)·TPOT);
* max throughput (``serve --mode mixed``): every step carries B decodes and the prompts that replace
  finished sequences; TPOT = that step, TTFT = half a step + the step carrying a whole prompt, tokens/s =
  B / TPOT.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from roofline.analyses.request import _NODES, _WEIGHTS
from roofline.analyses.serve import mixed_work
from roofline.deploy import Deployment, EngineTerms
from roofline.deploy.engine_registry import StepShape
from roofline.deploy.layout import replica_loads
from roofline.formulas import serving
from roofline.terms import Work, decode_work, prefill_work, step_terms
from roofline.terms.engine import device_engine, engine_step_s, step_shape


def _priced(dep: Deployment, work: Work) -> tuple[float, StepShape]:
    """(engine-free device time, shape) of one replica's step of ``work``."""
    free = replace(dep, engine=device_engine(dep.engine))
    return float(step_terms(free, work).time_s), step_shape(float(dep.model.num_layers), work.dealt(dep.replicas))


@dataclass(frozen=True)
class StaticDesign:
    """A static batch of ``batch`` prompts of ``isl`` tokens generating ``osl`` tokens each."""

    batch: float
    osl: float
    replicas: int
    prefill: tuple[float, StepShape]
    decode_nodes: np.ndarray  # device times at the quadrature's contexts
    decode_shape: StepShape
    first: float  # device time of the first decode step (O = 1: TPOT reads it)

    @classmethod
    def build(cls, dep: Deployment, batch: int, isl: int, osl: int, replicas: int) -> StaticDesign:
        span = max(osl - 2.0, 0.0)
        free = replace(dep, engine=device_engine(dep.engine))
        nodes = np.asarray(step_terms(free, decode_work(batch, isl + span * (_NODES + 1.0) / 2.0)).time_s, float)
        first, shape = _priced(dep, decode_work(batch, float(isl)))
        return cls(float(batch), float(osl), replicas, _priced(dep, prefill_work(batch, float(isl))),
                   np.broadcast_to(nodes, _NODES.shape).copy(), shape, first)  # fmt: skip

    def predict(self, engine: EngineTerms) -> dict[str, float]:
        ttft = float(engine_step_s(engine, self.prefill[1], self.prefill[0]))
        steps = self.osl - 1.0
        priced = np.asarray(engine_step_s(engine, self.decode_shape, self.decode_nodes), dtype=float)
        total = 0.0
        for k, w in enumerate(_WEIGHTS):  # summed node by node, in order, as decode_total_s does
            total = total + w / 2.0 * priced[k]
        tpot = total if steps > 0 else float(engine_step_s(engine, self.decode_shape, self.first))
        tokens = self.batch * self.osl / float(serving.static_cycle_s(ttft, self.osl, tpot)) * self.replicas
        return {"ttft_s": ttft, "tpot_s": tpot, "output_tokens_per_s": tokens, "requests_per_s": tokens / self.osl}


@dataclass(frozen=True)
class MixedDesign:
    """The steady state of in-flight batching at ``batch`` sequences per replica."""

    batch: float
    osl: float
    replicas: int
    step: tuple[float, StepShape]
    prompt_step: tuple[float, StepShape]

    @classmethod
    def build(cls, dep: Deployment, batch: int, isl: int, osl: int, replicas: int) -> MixedDesign:
        context = isl + osl / 2.0
        mine = float(replica_loads(batch, dep.replicas)[0])
        step = replace(mixed_work(mine, isl, osl, context), per_replica=True)
        prompts = max(1.0, float(serving.prompts_per_step(mine, osl)))
        with_prompt = Work(decode_seqs=mine, decode_context=context, prefill_seqs=prompts, prefill_len=float(isl),
                           per_replica=True)  # fmt: skip
        return cls(float(batch), float(osl), replicas, _priced(dep, step), _priced(dep, with_prompt))

    def predict(self, engine: EngineTerms) -> dict[str, float]:
        step = float(engine_step_s(engine, self.step[1], self.step[0]))
        ttft = float(serving.mixed_ttft_s(step, engine_step_s(engine, self.prompt_step[1], self.prompt_step[0])))
        tokens = self.batch / step * self.replicas
        return {"ttft_s": ttft, "tpot_s": step, "output_tokens_per_s": tokens, "requests_per_s": tokens / self.osl}
