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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.simulate.config import OffloadConfig, RequestPath, SchedulerConfig
from roofline.analyses.simulate.table import KernelGrids, PostFn, PriceFn, StepTable
from roofline.analyses.step_memory import replica_need, step_memory
from roofline.core.errors import OptionError, RooflineError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, EngineTerms, Precision, deployment
from roofline.deploy.layout import attention_dp_for
from roofline.formulas.serving import speculative_round_time_s
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec
from roofline.terms import Work, step_terms
from roofline.terms.engine import engine_step_s, frontend_s, step_shape

DEFAULT_PRECISION = Precision()
#: Decode-context grid points per row (the step is interpolated linearly between them).
GRID_POINTS = 257


def _cached_offset(tokens: ArrayLike, pairs: ArrayLike) -> Number:
    """c = pairs/T − (T + 1)/2 (≥ 0): the cached prefix one T-token chunk has for its causal pairs (0 at
    T = 0, whose pairs are 0: max(0/1 − 1/2, 0))."""
    return np.maximum(np.divide(pairs, np.maximum(tokens, 1.0)) - np.add(tokens, 1.0) / 2.0, 0.0)


def step_price(dep: Deployment) -> PriceFn:
    """(decodes, mean decode context, chunk tokens, chunk cached offset) -> step_terms(dep, that work).time_s."""

    def price(n: np.ndarray, ctx: np.ndarray, tokens: np.ndarray, cached: np.ndarray) -> np.ndarray:
        work = Work(
            decode_seqs=n,
            decode_context=ctx,
            prefill_seqs=np.greater(tokens, 0).astype(float),
            prefill_len=tokens,
            prefill_cached=cached,
        )
        return np.asarray(step_terms(dep, work).time_s, dtype=float)

    return price


def round_price(dep: Deployment, draft: Deployment, draft_len: int) -> PriceFn:
    """One speculative round of n sequences at mean context ctx, as serve prices it: γ draft decode steps
    + one target step verifying γ+1 tokens of each sequence after its context (0 for no sequences)."""

    def price(n: np.ndarray, ctx: np.ndarray, tokens: np.ndarray, cached: np.ndarray) -> np.ndarray:
        drafts = np.asarray(step_terms(draft, Work(decode_seqs=n, decode_context=ctx)).time_s, dtype=float)
        verify = step_terms(dep, Work(prefill_seqs=n, prefill_len=draft_len + 1.0, prefill_cached=ctx)).time_s
        return np.where(np.greater(n, 0), speculative_round_time_s(drafts, draft_len, verify), 0.0)

    return price


def engine_post(engine: EngineTerms, layers: float) -> PostFn:
    """The engine entry's host time on top of device times (:func:`roofline.terms.engine.engine_step_s`)."""

    def post(n: np.ndarray, ctx: np.ndarray, tokens: np.ndarray, cached: np.ndarray, device: np.ndarray) -> np.ndarray:
        work = Work(decode_seqs=n, prefill_seqs=np.greater(tokens, 0).astype(float), prefill_len=tokens)
        return np.asarray(engine_step_s(engine, step_shape(layers, work), device), dtype=float)

    return post


def split_price(dep: Deployment) -> tuple[PriceFn, PostFn | None]:
    """(device price, engine host time) of a deployment whose entry is in registry terms (pp = 1), so tables
    that differ only in those terms share their device grids; otherwise the whole step and None."""
    e = dep.engine
    if getattr(e, "registry_entry", False) and dep.par.pp == 1:
        device = replace(dep, engine=replace(e, values={}, policy=""))
        return step_price(device), engine_post(e, float(dep.model.num_layers))
    return step_price(dep), None


@dataclass
class DeploymentStepCost:
    """A :class:`~roofline.analyses.simulate.cost.StepCost` reading the step model of one replica's deployment.

    ``step_time_s`` prices any mix exactly (one row of the step model per distinct (decodes, chunk)
    shape, interpolated over context); the simulator reads :meth:`pricer`, a
    :class:`~roofline.analyses.simulate.table.StepTable` built once per scheduler shape.  ``draft``: the
    deployment of a speculative-decoding draft model (or MTP head), if any.
    """

    dep: Deployment
    kv_capacity_tokens: int
    max_context: float
    source: str
    draft: Deployment | None = None
    _grid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _rows: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)
    _tables: dict[tuple[int, int, tuple[int, ...], int | None], StepTable] = field(default_factory=dict)
    _kernels: dict[tuple[int, int, tuple[int, ...], int | None], KernelGrids] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._grid = np.linspace(0.0, max(self.max_context, 1.0), GRID_POINTS)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV cache bytes of one token on this replica."""
        return kv_token_bytes(self.dep)

    def pricer(
        self, max_seqs: int, max_tokens: int, prompt_lens: Sequence[int] = (), draft_len: int | None = None
    ) -> StepTable:
        """The step model tabulated for this scheduler shape (built once, then shared)."""
        lens = tuple(sorted({int(x) for x in prompt_lens}))[:4096]
        key = (max_seqs, max_tokens, lens, draft_len)
        table = self._tables.get(key)
        if table is None:
            if draft_len is not None:
                if self.draft is None:
                    raise OptionError("draft: speculative decoding needs a draft model (or mtp)", parameters=("draft",))
                base = round_price(self.dep, self.draft, draft_len)
                table = StepTable(step_price(self.dep), max_seqs, max_tokens, self.max_context, lens, base=base)
            else:
                price, post = split_price(self.dep)
                kernel = self._kernels.get(key) if post is not None else None
                table = StepTable(price, max_seqs, max_tokens, self.max_context, lens, post=post, kernel=kernel)
                if post is not None:
                    self._kernels[key] = table.kernel
            self._tables[key] = table
        return table

    def with_engine(self, engine: EngineTerms) -> DeploymentStepCost:
        """This replica with other engine terms (the engine fit's inner loop): tables built from here on share
        the device grids already priced when both entries are in registry terms; the KV capacity is kept."""
        dep = replace(self.dep, engine=engine)
        shared = self._kernels if split_price(dep)[1] is not None and split_price(self.dep)[1] is not None else {}
        return DeploymentStepCost(
            dep, self.kv_capacity_tokens, self.max_context, self.source, self.draft, _kernels=shared
        )

    def round_time_s(self, decode_seqs: ArrayLike, decode_kv_tokens: ArrayLike, draft_len: int) -> np.ndarray:
        """Seconds of one speculative round of n sequences over kv cached tokens in all."""
        if self.draft is None:
            raise OptionError("draft: speculative decoding needs a draft model (or mtp)", parameters=("draft",))
        n = np.asarray(decode_seqs, dtype=float)
        ctx = np.divide(decode_kv_tokens, np.maximum(n, 1.0))
        return round_price(self.dep, self.draft, draft_len)(n, ctx, np.zeros(1), np.zeros(1))

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

        return kv_transfer_s(self.dep, tokens * kv_token_bytes(self.dep))


def kv_token_bytes(dep: Deployment) -> float:
    """KV cache bytes one token adds on one replica: the step memory's per-sequence KV at one token, held
    ``kv_copies`` times (MLA's latent on every tp chip)."""
    return float(step_memory(dep, 1.0, 1.0).kv_only_bytes_per_sequence) * float(dep.kv_copies)


def kv_capacity(
    dep: Deployment, reserve_tokens: float, max_num_seqs: int, draft_dep: Deployment | None = None
) -> tuple[int, float]:
    """(KV tokens one replica holds, the weights it holds): (HBM·u − activations of a step of the token
    budget − weights − the entry's memory_reserve_bytes) / KV bytes per token (each held kv_copies times;
    a draft model's weights and KV besides).  The step samples one row per sequence (vLLM's profiling run:
    max_num_seqs logit rows), so the fp32 logits are reserved for min(token budget, max_num_seqs) rows."""
    sampled = min(reserve_tokens, float(max_num_seqs))
    weights, usable = (float(x) for x in replica_need(dep, 1.0, 0.0, reserve_tokens, sampled))
    kv_token = kv_token_bytes(dep)
    if draft_dep is not None:
        kv_token += kv_token_bytes(draft_dep)
        weights += float(draft_dep.held_weight_bytes)
    usable -= weights + float((getattr(dep.engine, "values", {}) or {}).get("memory_reserve_bytes", 0.0))
    if kv_token <= 0:  # no attention KV (a state-space model): tokens never fill the cache
        kv_token = 1e-300
    return (int(min(usable // kv_token, 1 << 40)) if usable > 0 else 0), weights


def mtp_model(model: ModelSpec) -> ModelSpec:
    """A multi-token-prediction head priced as one more decoder layer of the model (DeepSeek-V3's MTP
    module is one transformer block sharing the embeddings and the LM head)."""
    one = {"num_layers": 1, "num_dense_layers": 0, "num_local_layers": 0, "num_nope_layers": 0}
    if model.layer_types is not None:
        one["layer_types"] = model.layer_types[-1:]  # type: ignore[assignment]
    if model.mlp_types is not None:
        one["mlp_types"] = model.mlp_types[-1:]  # type: ignore[assignment]
    return replace(model, name=f"{model.name} MTP head", **one)  # type: ignore[arg-type]


def cost_for(
    model: ModelSpec,
    hw: HardwareSpec,
    tp: int | None = 1,
    precision: Precision = DEFAULT_PRECISION,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    pp: int | None = None,
    ep: int | None = None,
    max_context: float = 1 << 17,
    reserve_tokens: float | None = None,
    engine: str | None = None,
    attention_dp: int | None = None,
    draft: ModelSpec | str | None = None,
    moe_routing: str | None = None,
    achievable: bool | None = None,
    reserve_seqs: int | None = None,
) -> DeploymentStepCost:
    """The step cost of one replica (tp·attention_dp·pp chips), its KV capacity in tokens within the usable
    HBM (the step memory's: the weights it holds, each token's cache ``kv_copies`` times), less the engine
    entry's memory reserve and a draft model's weights and KV when given (``draft='mtp'``: one more layer
    of the model itself).  The activations reserved are a step of ``reserve_tokens`` tokens sampling
    ``reserve_seqs`` rows (each: given, else the engine entry's scheduler setting, else the default)."""
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
    draft_dep = None
    if draft is not None:
        from roofline.deploy import chip_rates

        draft_model = mtp_model(model) if draft == "mtp" else draft
        assert not isinstance(draft_model, str)
        draft_rates = chip_rates(dep.hw, dep.precision.compute, kv_dtype=dep.precision.kv)
        draft_dep = replace(dep, model=draft_model, rates=draft_rates)
    entry = scheduler_defaults(dep)
    tokens = reserve_tokens or _entry_int(entry, "max_num_batched_tokens", SchedulerConfig.max_num_batched_tokens)
    seqs = reserve_seqs or _entry_int(entry, "max_num_seqs", SchedulerConfig.max_num_seqs)
    capacity, weights = kv_capacity(dep, float(tokens), seqs, draft_dep)
    if capacity < 1:
        held = f" and its draft {draft_dep.model.name}'s" if draft_dep is not None else ""
        smaller = ", or a smaller draft" if draft_dep is not None else ""
        raise RooflineError(
            f"{model.name} weights{held} ({weights / 1e9:.1f} GB) leave no KV cache in "
            f"{memory_utilization:g} of {chips}x {hw.name} HBM; raise tp or pp{smaller}"
        )
    drafted = f"; draft {draft_dep.model.name}" if draft_dep is not None else ""
    return DeploymentStepCost(
        dep=dep,
        kv_capacity_tokens=capacity,
        max_context=max_context,
        source=f"step model (roofline.terms) of {dep.par.describe()} on {chips}x {hw.name}; {dep.rates.source}; "
        f"{dep.engine.source}; {memory_utilization:g} of HBM{drafted}",
        draft=draft_dep,
    )


def request_path_for(dep: Deployment) -> RequestPath:
    """The engine entry's request-path terms (front end in and out, scheduling lag) where the entry gives them;
    zeros otherwise (no entry: tokens reach the client as the step ends)."""
    given = getattr(dep.engine, "values", {}) or {}
    return RequestPath(*frontend_s(dep.engine), int(round(float(given.get("schedule_lag_steps", 0.0)))))


def scheduler_defaults(dep: Deployment) -> dict[str, object]:
    """The engine entry's scheduler settings (max_num_seqs, max_num_batched_tokens, policy) where it gives them."""
    e = dep.engine
    given = getattr(e, "values", {}) or {}
    found: dict[str, object] = {k: int(given[k]) for k in ("max_num_seqs", "max_num_batched_tokens") if k in given}
    if getattr(e, "policy", ""):
        found["policy"] = e.policy
    return found


def _entry_int(found: dict[str, object], key: str, default: int) -> int:
    """``found[key]`` (an entry's scheduler setting) as an int, else ``default``."""
    value = found.get(key)
    return value if isinstance(value, int) else default


def offload_config(dep: Deployment, host_bytes: float, bandwidth_bytes_per_s: float | None) -> OffloadConfig:
    """A host KV tier for one replica: at most the host DRAM of its chips; bandwidth by default its chips'
    host links (the hardware file's host_dram_bytes and host_bandwidth_bytes_per_s, per chip)."""
    hw, chips = dep.hw, int(dep.par.tp * dep.par.pp)
    if hw.host_dram_bytes is None:
        raise OptionError(
            f"host_bytes: {hw.name} has no host_dram_bytes in its hardware file", parameters=("host_bytes",)
        )
    limit = hw.host_dram_bytes * chips
    if host_bytes > limit:
        raise OptionError(
            f"host_bytes: {host_bytes / 1e9:g} GB is more than the host memory of one replica "
            f"({chips} x {hw.host_dram_bytes / 1e9:g} GB = {limit / 1e9:g} GB, {hw.name}'s host_dram_bytes)",
            parameters=("host_bytes",),
        )
    if bandwidth_bytes_per_s is None:
        if hw.host_bandwidth_bytes_per_s is None:
            raise OptionError(
                f"bandwidth_bytes_per_s: {hw.name} has no host_bandwidth_bytes_per_s; give one",
                parameters=("bandwidth_bytes_per_s",),
            )
        bandwidth_bytes_per_s = hw.host_bandwidth_bytes_per_s * chips
    return OffloadConfig(host_bytes, bandwidth_bytes_per_s)
