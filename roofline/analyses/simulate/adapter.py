"""The simulator's step cost from the one step model: :func:`roofline.terms.step_terms` of a deployment.

A simulated step (``decode_seqs`` sequences over ``decode_kv_tokens`` cached tokens, plus
``prefill_tokens`` new prompt tokens with ``prefill_attention_pairs`` causal pairs) is the
step model's :class:`~roofline.terms.Work` with the decodes at their mean context and the
prefill chunks as one sequence of T tokens after c cached ones, c = pairs/T − (T+1)/2 (so the
causal pairs match).  For speed the terms are tabulated, never restated: each distinct
(decode sequences, prefill tokens, cached offset) row is priced once by ``step_terms`` over a
grid of decode contexts and interpolated linearly between grid points (exact for the spec
sheet, whose step is affine in context; within a fraction of a percent for fitted kernels).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import RooflineError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, Precision, deployment
from roofline.deploy.layout import attention_dp_for
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import Work, step_terms

DEFAULT_PRECISION = Precision()
#: Decode-context grid points per row (the step is interpolated linearly between them).
GRID_POINTS = 257


def _cached_offset(tokens: ArrayLike, pairs: ArrayLike) -> Number:
    """c = pairs/T − (T + 1)/2 (≥ 0): the cached prefix one T-token chunk has for its causal pairs (0 at
    T = 0, whose pairs are 0: max(0/1 − 1/2, 0))."""
    return np.maximum(np.divide(pairs, np.maximum(tokens, 1.0)) - np.add(tokens, 1.0) / 2.0, 0.0)


@dataclass
class DeploymentStepCost:
    """A :class:`~roofline.analyses.simulate.cost.StepCost` reading the step model of one replica's deployment."""

    dep: Deployment
    kv_capacity_tokens: int
    max_context: float
    source: str
    _grid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _rows: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._grid = np.linspace(0.0, max(self.max_context, 1.0), GRID_POINTS)

    def _row(self, n: int, tokens: int, cached: int) -> np.ndarray:
        """Step times over the context grid for n decodes + one prefill chunk of ``tokens`` after ``cached``."""
        key = (n, tokens, cached)
        row = self._rows.get(key)
        if row is None:
            work = Work(
                decode_seqs=float(n),
                decode_context=self._grid,
                prefill_seqs=1.0 if tokens else 0.0,
                prefill_len=float(tokens),
                prefill_cached=float(cached),
            )
            row = np.broadcast_to(np.asarray(step_terms(self.dep, work).time_s, dtype=float), self._grid.shape)
            self._rows[key] = row
        return row

    def step_time_s(
        self,
        decode_seqs: ArrayLike,
        decode_kv_tokens: ArrayLike,
        prefill_tokens: ArrayLike,
        prefill_attention_pairs: ArrayLike,
    ) -> np.ndarray:
        """Seconds of each step: the tabulated step model, interpolated over the mean decode context."""
        if np.ndim(decode_seqs) == np.ndim(prefill_tokens) == np.ndim(prefill_attention_pairs) == 0:
            # one (decodes, chunk) row, as the simulator asks: a step, or a run of decode steps
            n, tokens = float(decode_seqs), float(prefill_tokens)
            cached = float(_cached_offset(tokens, float(prefill_attention_pairs)))
            kv = np.asarray(decode_kv_tokens, dtype=float)
            return self._priced(int(n), int(tokens), int(np.rint(cached)), kv / max(n, 1.0))
        n, kv, t, pairs = np.broadcast_arrays(
            *(
                np.asarray(v, dtype=float)
                for v in (decode_seqs, decode_kv_tokens, prefill_tokens, prefill_attention_pairs)
            )
        )
        out = np.empty(n.shape)
        flat = [a.reshape(-1) for a in (n, kv, t, pairs)]
        context = np.divide(flat[1], np.maximum(flat[0], 1.0))
        keys = np.stack([flat[0], flat[2], np.rint(_cached_offset(flat[2], flat[3]))], axis=1).astype(np.int64)
        result = out.reshape(-1)
        for key in np.unique(keys, axis=0):
            sel = np.all(keys == key, axis=1)
            result[sel] = self._priced(int(key[0]), int(key[1]), int(key[2]), context[sel])
        return out

    def _priced(self, n: int, tokens: int, cached: int, context: np.ndarray) -> np.ndarray:
        """The (n, tokens, cached) row interpolated at mean decode contexts ``context``."""
        if context.size and context.max() > self._grid[-1]:
            raise RooflineError(f"simulated context {np.max(context):.0f} exceeds the tabulated {self._grid[-1]:.0f}")
        return np.interp(context, self._grid, self._row(n, tokens, cached))

    def kv_transfer_time_s(self, tokens: float) -> float:
        """tokens·KV bytes over one replica's DCN links (:func:`roofline.analyses.serve.kv_transfer_s`, serve's)."""
        from roofline.analyses.serve import kv_transfer_s

        kv_token = float(memory.kv_cache_bytes_per_token(self.dep.model, self.dep.precision.kv_bytes))
        return kv_transfer_s(self.dep, tokens * kv_token)


def cost_for(
    model: ModelSpec,
    hw: HardwareSpec,
    tp: int | None = 1,
    precision: Precision = DEFAULT_PRECISION,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    pp: int | None = None,
    ep: int | None = None,
    max_context: float = 1 << 17,
    reserve_tokens: float = 8192,
    engine: str | None = None,
    attention_dp: int | None = None,
    moe_routing: str | None = None,
    achievable: bool | None = None,
) -> DeploymentStepCost:
    """The step cost of one replica (tp·attention_dp·pp chips), its KV capacity in tokens within the usable
    HBM (the weights it holds; each token's cache ``kv_copies`` times: MLA's latent on every tp chip)."""
    tp_d = tp or 1
    dp = attention_dp_for(tp_d, ep or 1, attention_dp, model.num_experts)
    chips = tp_d * dp * (pp or 1)
    dep = deployment(
        model,
        hw,
        chips,
        precision,
        tp=tp_d,
        pp=pp,
        ep=ep,
        memory_utilization=memory_utilization,
        engine=engine,
        attention_dp=attention_dp,
        moe_routing=moe_routing,
        achievable=achievable,
    )
    kv_token = float(memory.kv_cache_bytes_per_token(model, precision.kv_bytes)) * dep.kv_copies
    usable = float(dep.usable_hbm_bytes(reserve_tokens)) - dep.held_weight_bytes
    capacity = int(usable // kv_token) if usable > 0 else 0
    if capacity < 1:
        raise RooflineError(
            f"{model.name} weights ({dep.held_weight_bytes / 1e9:.1f} GB) leave no KV cache in "
            f"{memory_utilization:g} of {chips}x {hw.name} HBM; raise --tp or --pp"
        )
    return DeploymentStepCost(
        dep=dep,
        kv_capacity_tokens=capacity,
        max_context=max_context,
        source=f"step model (roofline.terms) of {dep.par.describe()} on {chips}x {hw.name}; {dep.rates.source}; "
        f"{dep.engine.source}; {memory_utilization:g} of HBM",
    )
