"""The step model: every term of one engine step for a given mix of work, with its time and source.

One function, :func:`step_terms`, prices a step of a :class:`~roofline.deploy.Deployment`:
KV reads and decode attention, weight reads and matmul FLOPs (spec-sheet roofline, or the
calibrated GEMM kernels), prefill attention, collectives per stage (tp all-reduces, KV
all-to-alls, ep dispatch/combine), pipeline sends and bubble, and fixed overheads.  From those
terms it gives the prediction and two bounds: collectives overlapped (lower) and serialized
(upper).  Every command reads these terms; none recomputes them.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field

import numpy as np

from roofline.core.checks import check_instance
from roofline.deploy import Deployment
from roofline.model import memory
from roofline.model.memory import Number
from roofline.terms import attention, comms, gemms, operators
from roofline.terms.bounds import BOUND_NAMES, HOST_BOUND, bound_code, bound_names
from roofline.terms.engine import host_terms_s, step_shape
from roofline.terms.exact import all_zero, fits_into, nonnegative_finite, plus, times, zeros_shaped
from roofline.terms.gemms import active_params_by_component, gemm_dtypes, gemm_source, matmul_params, matmul_time_s
from roofline.terms.overheads import (
    engine_overhead_s,
    engine_sources,
    gqa_kv_reread_s,
    large_collective_s,
    prompt_step_floor,
    with_engine_collective_latency,
)
from roofline.terms.work import Work

BOOK = "How to Scale Your Model, part 7: All About Transformer Inference"


@dataclass(frozen=True)
class StepTerms:
    """One step on one replica: bytes, FLOPs and time of each term, the bounds and the prediction.

    Times are seconds for the whole replica's step; ``stage_*`` are one pipeline stage's share
    for one microbatch (equal to the step when pp = 1).  Fields equal by an exact shortcut
    (:mod:`roofline.terms.exact`: no collectives, pp = 1) may be one array, and a term that is 0
    everywhere a read-only broadcast zero.  Every array field is a read-only view (an in-place edit
    raises instead of changing the fields that share it): copy one to edit it.
    """

    tokens: Number
    kv_read_bytes: Number
    weight_read_bytes: Number
    kv_written_bytes: Number
    matmul_flops: Number
    attention_flops: Number
    kv_time_s: Number
    weight_time_s: Number
    compute_time_s: Number
    gemm_time_s: Number
    attention_decode_s: Number
    attention_prefill_s: Number
    overhead_s: Number
    stage_local_s: Number
    local_s: Number
    comms_time_s: Number
    comms_lower_s: Number
    comms_exposed_s: Number
    comms_bytes: Number
    pipeline_send_s: Number
    pipeline_bubble_s: Number
    microbatches: Number
    time_s: Number
    lower_s: Number
    upper_s: Number
    bound_code: np.ndarray
    sources: dict[str, str] = field(default_factory=dict)
    state_bytes: Number = 0.0
    #: Host time the engine entry's registry terms add to the step (step terms, or an eager floor's excess).
    engine_host_s: Number = 0.0
    #: Operator terms of the step (seconds, inside ``gemm_time_s`` / the attention times): the routed experts
    #: as the fused-MoE operator, MLA attention (with its absorb BMMs), and the MoE layers' token exchange
    #: (inside ``comms_time_s``); 0 for a model without such layers.
    moe_time_s: Number = 0.0
    mla_time_s: Number = 0.0
    mla_bmm_s: Number = 0.0
    moe_comms_s: Number = 0.0
    #: The GEMMs outside the fused-MoE operator (gemm_time_s less moe_time_s).
    dense_gemm_s: Number = 0.0
    #: Norms, RoPE, activations, router top-k of an MoE/MLA model at the achievable defaults (in local_s).
    small_kernels_s: Number = 0.0
    #: Routed-expert bytes the fused-MoE operator reads (inside ``weight_read_bytes``; its busiest GPU's share).
    moe_weight_bytes: Number = 0.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray) and value.flags.writeable:
                view = value.view()
                view.flags.writeable = False
                object.__setattr__(self, name, view)

    @functools.cached_property
    def bound(self) -> np.ndarray:
        """'memory', 'compute', 'network' or 'host' per point: the words of :attr:`bound_code` (made when read)."""
        return bound_names(self.bound_code)

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "bound": self.bound}


def _zeros(like: Number) -> np.ndarray:
    return np.zeros_like(np.asarray(like, dtype=float))


def microbatches(dep: Deployment, decode_seqs: Number) -> Number:
    """Microbatches in flight: min(pp, decode sequences) in steady decode; 1 for a one-shot prefill."""
    if dep.par.pp == 1:
        return np.ones_like(np.asarray(decode_seqs, dtype=float))
    return np.where(np.asarray(decode_seqs) > 0, np.clip(decode_seqs, 1.0, dep.par.pp), 1.0)


def _finite_within(stage_local: Number, c: comms.CommsTerms) -> bool:
    """Whether a stage's local work is float64, finite and ≥ 0 and its collectives broadcast into it
    (the condition of the exact shortcuts below)."""
    shape = np.shape(stage_local)
    return (
        getattr(stage_local, "dtype", None) == np.float64
        and fits_into(np.shape(c.time_s), shape)
        and fits_into(np.shape(c.lower_s), shape)
        and nonnegative_finite(stage_local)
    )


def _least_over_broadcast(x: np.ndarray, small: Number) -> np.ndarray | None:
    """min of ``x`` over the axes where ``small`` has size 1 (one reduction, no temporaries of x's size),
    shaped to compare with ``small``; None when ``small`` has no axes of x's length (nothing to save)."""
    shape, inner = x.shape, np.shape(small)
    if not inner or len(inner) != len(shape):
        return None
    axes = tuple(i for i, (n, m) in enumerate(zip(shape, inner, strict=True)) if m == 1 and n > 1)
    return np.minimum.reduce(x, axis=axes, keepdims=True) if axes else None


def _bitwise_equal(a: Number, b: Number) -> bool:
    """Whether two float64 arrays of one shape hold the same bits (so −0 ≠ +0)."""
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.shape == b.shape and a.dtype == b.dtype == np.float64 and np.array_equal(a.view(np.int64), b.view(np.int64))
    )


def pipeline_bubble_s(pp: float, mb: Number, stage_s: Number, send_s: Number, finite: bool) -> Number:
    """(pp − m)·(stage + send): the stage-slots a round-robin pipeline idles; exactly 0 at pp = 1 when
    the stage time is known finite and ≥ 0 (``finite``), so no array is computed then."""
    if pp == 1.0 and finite and all_zero(send_s):
        return zeros_shaped(mb, stage_s, send_s)
    return (pp - mb) * (stage_s + send_s)


def step_terms(dep: Deployment, work: Work, mfu: float = 1.0) -> StepTerms:
    """Price one step of ``work`` (whole slice) on ``dep``: the busiest replica's terms (its share,
    :meth:`Work.dealt`), prediction and bounds.

    Prediction per stage: local + max(0, comms − overlap·local); lower: max(local, comms);
    upper: local + comms.  A replica's step: pp·(stage + send) (book: part 7; pp as in GPipe-style
    round-robin microbatches).
    """
    check_instance(dep, "dep", Deployment, "from roofline.deployment(model, hw, chips)")
    check_instance(work, "work", Work, "from roofline.terms.decode_work(batch, context)")
    m, prec, rates, par = dep.model, dep.precision, dep.rates, dep.par
    replica = work.dealt(dep.replicas)
    dp = par.attention_dp
    rank = replica if dp == 1 else replica.busiest_of(dp)  # the busiest attention data-parallel rank
    mb = microbatches(dep, rank.decode_seqs)
    stage = rank.scaled(mb)
    group = stage if dp == 1 else replica.scaled(mb)  # the whole stage's work: what its MoE layers see
    group_tokens = group.tokens
    layers = m.num_layers / par.pp
    share = layers / m.num_layers
    chips = dep.stage_chips
    flops_rate, bw = chips * rates.flops_per_s, chips * rates.hbm_bandwidth_bytes_per_s
    rank_chips = dep.attention_chips
    rank_bw = rank_chips * rates.hbm_bandwidth_bytes_per_s
    shards = float(np.max(chips)) if np.size(chips) else 1.0  # kernel shapes per chip (one tp degree per call)
    rank_shards = float(np.max(rank_chips)) if np.size(rank_chips) else 1.0
    counts = memory.param_counts(m)
    tokens = stage.tokens
    # Bytes and FLOPs below are the stage's: summed over its chips, every attention rank as busy as the
    # busiest (so / (stage chips x rate) is one chip's time).  A rank's KV (MLA: on each of its tp chips,
    # kv_copies) and its dense work count dp times; the routed experts see the whole stage's tokens once.
    # (Terms that are exactly 0 or factors exactly 1 for the whole call are skipped: terms/exact.py.)
    per_rank = dp * dep.kv_copies
    # KV read: the decodes' caches, and the cached prefix a prefill chunk (chunked prefill, prefix hit,
    # speculative verify) attends to.
    decode_kv = np.multiply(
        stage.decode_seqs, memory.kv_cache_bytes_per_sequence(m, stage.decode_context, prec.kv_bytes)
    )
    kv_read = times(
        share * per_rank,
        plus(
            decode_kv,
            np.multiply(stage.prefill_seqs, memory.kv_cache_bytes_per_sequence(m, stage.prefill_cached, prec.kv_bytes)),
        ),
    )
    kv_written = (share * per_rank) * np.multiply(
        stage.prefill_seqs,
        np.subtract(
            memory.kv_cache_bytes_per_sequence(m, np.add(stage.prefill_len, stage.prefill_cached), prec.kv_bytes),
            memory.kv_cache_bytes_per_sequence(m, stage.prefill_cached, prec.kv_bytes),
        ),
    )
    moe_op, mla_op = operators.has_moe_operator(dep), operators.has_mla(dep)
    ops = operators.operator_terms(dep, stage, group_tokens, layers, rank_shards, shards)
    # Routed experts: the fraction the fused-MoE operator's routing reads (its busiest GPU's), else the union's.
    touched = ops.moe_expert_share if moe_op else None
    weights_read = share * memory.weight_bytes_read(m, prec.bytes_by_component, group_tokens, touched)
    moe_bytes = weights_read - share * memory.dense_weight_bytes(m, prec.bytes_by_component) if moe_op else 0.0
    if dp > 1:  # every rank reads its own copy of the dense weights
        weights_read = weights_read + share * (dp - 1) * memory.dense_weight_bytes(m, prec.bytes_by_component)
    state = times(dp, attention.state_bytes_per_step(dep, np.add(stage.decode_seqs, stage.prefill_seqs), layers))
    attn_p_flops = (share * dp) * attention.prefill_attention_flops(
        dep, stage.prefill_seqs, stage.prefill_len, stage.prefill_cached
    )
    decode_mm = 2.0 * share * matmul_params(dep, stage.decode_seqs, group.decode_seqs, counts.active)
    prefill_mm = 2.0 * share * matmul_params(dep, stage.prefill_tokens, group.prefill_tokens, counts.active)
    kv_time = plus(kv_read, state) / bw
    weight_time = (weights_read + kv_written) / bw
    cal_prefill = rates.uses("attention_prefill")
    spec_attn_p = _zeros(tokens) if (cal_prefill or mla_op) else attn_p_flops
    if prec.mixed_compute:  # each component's matmuls at its own dtype's peak
        decode_c = matmul_time_s(dep, stage.decode_seqs, group.decode_seqs, chips)
        prefill_c = matmul_time_s(dep, stage.prefill_tokens, group.prefill_tokens, chips)
        compute_time = share * decode_c + (share * prefill_c + spec_attn_p / flops_rate) / mfu
    else:
        compute_time = decode_mm / flops_rate + (prefill_mm + spec_attn_p) / (flops_rate * mfu)
    if rates.uses("gemm"):
        lm_tokens = np.add(stage.decode_seqs, stage.prompts) * share
        gemm = gemms.gemm_time_s(
            dep.hw,
            gemm_dtypes(prec),
            m,
            tokens,
            lm_tokens,
            layers,
            rank_shards,
            par.ep,
            prec.gemm_weight_bytes,
            moe_tokens=group_tokens,
            moe_shards=shards,
            routed=not moe_op,
        )
        attn_prefill = (
            attention.prefill_attention_fitted_s(
                dep, stage.prefill_seqs, stage.prefill_len, stage.prefill_cached, layers, rank_shards
            )
            if cal_prefill
            else attn_p_flops / (flops_rate * mfu)
        )
    else:
        gemm = (
            operators.dense_gemm_s(dep, stage, share, chips, kv_written, spec_attn_p, mfu)
            if moe_op
            else np.maximum(compute_time, weight_time)
        )
        attn_prefill = (
            attention.prefill_attention_fitted_s(
                dep, stage.prefill_seqs, stage.prefill_len, stage.prefill_cached, layers, rank_shards
            )
            if cal_prefill
            else _zeros(tokens)
        )
    dense_gemm = gemm
    if moe_op:
        gemm = gemm + ops.moe_s
    attn_decode = (
        attention.decode_attention_fitted_s(dep, stage.decode_seqs, stage.decode_context, layers, rank_shards)
        + state / bw
        if rates.uses("attention_decode")
        else kv_time
    )
    if mla_op:
        attn_decode, attn_prefill = ops.mla_decode_s, ops.mla_prefill_s
    c = with_engine_collective_latency(
        dep, tokens, comms.stage_comms(dep, tokens, stage.decode_seqs, layers, group_tokens)
    )
    overhead = engine_overhead_s(dep, stage, layers, share, rank_bw, gemm, decode_kv)
    small = operators.small_kernels_s(dep, tokens, layers) if (moe_op or mla_op) else 0.0
    stage_local = plus(plus(plus(attn_decode + gemm, attn_prefill), overhead), small)
    send = comms.pipeline_send_time_s(dep, tokens)
    pp = float(par.pp)
    finite = _finite_within(stage_local, c)
    quiet = finite and all_zero(c.time_s) and all_zero(c.lower_s)
    quiet_net = quiet
    if quiet:  # nothing exposed: max(0, 0 − overlap·local) = 0, max(local, 0) = local + 0 = local
        exposed = zeros_shaped(c.time_s, stage_local)
        stage_pred = stage_lower = stage_upper = stage_local
    else:
        stage_upper = stage_local + c.time_s
        least = _least_over_broadcast(stage_local, c.lower_s) if finite else None
        # max(local, lower) = local where lower ≤ local everywhere
        stage_lower = (
            stage_local
            if least is not None and bool(np.all(np.less_equal(c.lower_s, least)))
            else np.maximum(stage_local, c.lower_s)
        )
        if finite and dep.comms_overlap == 0.0:  # 0·local = 0: exposed has the collectives' own shape
            alone = np.maximum(0.0, c.time_s)
            shape = np.shape(stage_local)
            exposed = alone if np.shape(alone) == shape else np.broadcast_to(alone, shape)
            # local + exposed = local + comms where exposed is comms itself (comms ≥ 0)
            stage_pred = stage_upper if _bitwise_equal(alone, c.time_s) else stage_local + exposed
            # never network where the exposed collectives ≤ the least local work they meet
            quiet_net = (
                np.shape(alone) == np.shape(c.lower_s)
                and least is not None
                and bool(np.all(np.less_equal(alone, least)))
            )
        else:
            exposed = np.maximum(0.0, np.subtract(c.time_s, dep.comms_overlap * stage_local))
            stage_pred = stage_local + exposed
            quiet_net = False
    code = bound_code(compute_time, kv_time + weight_time, None if quiet or quiet_net else exposed, stage_local)
    stage_pred, stage_upper, code = prompt_step_floor(dep, stage, share, stage_pred, stage_upper, code)
    bubble = pipeline_bubble_s(pp, mb, stage_pred, send, quiet or (finite and nonnegative_finite(c.time_s)))
    time_s, lower_s, upper_s = (
        times(pp, plus(stage_pred, send)),
        times(pp, plus(stage_lower, send)),
        times(pp, plus(stage_upper, send)),
    )
    host = host_terms_s(dep.engine, step_shape(float(m.num_layers), replica))
    engine_host: Number = 0.0
    if host is not None:
        code = np.where(np.greater(host[1], np.add(time_s, host[0])), HOST_BOUND, code).astype(np.int8)
        device_s = time_s
        time_s = np.maximum(np.add(time_s, host[0]), host[1])
        lower_s = np.maximum(np.add(lower_s, host[0]), host[1])
        upper_s = np.maximum(np.add(upper_s, host[0]), host[1])
        engine_host = np.subtract(time_s, device_s)
    return StepTerms(
        tokens=replica.tokens,
        kv_read_bytes=kv_read,
        weight_read_bytes=weights_read,
        kv_written_bytes=kv_written,
        matmul_flops=decode_mm + prefill_mm,
        attention_flops=attn_p_flops,
        kv_time_s=kv_time,
        weight_time_s=weight_time,
        compute_time_s=compute_time,
        gemm_time_s=gemm,
        attention_decode_s=attn_decode,
        attention_prefill_s=attn_prefill,
        overhead_s=overhead,
        stage_local_s=stage_local,
        local_s=times(pp, stage_local),
        comms_time_s=pp * (c.time_s + send),
        comms_lower_s=pp * (c.lower_s + send),
        comms_exposed_s=times(pp, plus(exposed, send)),
        comms_bytes=c.bytes_per_step,
        pipeline_send_s=pp * send,
        pipeline_bubble_s=bubble,
        microbatches=mb,
        time_s=time_s,
        lower_s=lower_s,
        upper_s=upper_s,
        bound_code=code,
        state_bytes=state,
        engine_host_s=engine_host,
        moe_time_s=times(pp, ops.moe_s),
        mla_time_s=times(pp, ops.mla_s),
        mla_bmm_s=times(pp, ops.mla_bmm_s),
        moe_comms_s=times(pp, c.moe_time_s),
        dense_gemm_s=times(pp, dense_gemm),
        small_kernels_s=times(pp, small),
        moe_weight_bytes=moe_bytes,
        sources={
            **rates.sources,
            **ops.sources,
            "gemm": gemm_source(dep),
            "comms": c.source,
            "engine": dep.engine.source,
            **engine_sources(dep),
            "overlap": f"collectives overlap {dep.comms_overlap:g} of local work "
            f"({'TPU: XLA overlaps' if dep.hw.kind == 'tpu' else 'GPU: on the critical path'})",
            "formulas": f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'",
        },
    )


#: Names of the step model's parts, importable from here as before they moved to their modules.
__all__ = [
    "BOOK",
    "BOUND_NAMES",
    "HOST_BOUND",
    "StepTerms",
    "active_params_by_component",
    "bound_code",
    "bound_names",
    "engine_overhead_s",
    "gemm_dtypes",
    "gemm_source",
    "gqa_kv_reread_s",
    "large_collective_s",
    "matmul_params",
    "matmul_time_s",
    "microbatches",
    "pipeline_bubble_s",
    "prompt_step_floor",
    "step_terms",
    "with_engine_collective_latency",
]
