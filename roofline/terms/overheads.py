"""The engine's work outside the kernels in a step, from a profile's fitted ``engine:`` entry: per step,
layer, token and sampled sequence, a GEMM slowdown, KV re-reads without grouped-query reuse, latency per
collective ring step, large all-reduces, and a floor under prompt-only steps.  0 without an engine."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from roofline.deploy import Deployment
from roofline.model.memory import Number
from roofline.terms import comms
from roofline.terms.bounds import HOST_BOUND
from roofline.terms.exact import all_zero, plus, zeros_shaped
from roofline.terms.floors import kernel_floors_s
from roofline.terms.work import Work


def gqa_kv_reread_s(dep: Deployment, decode_kv_bytes: Number, share: float, bw: Number) -> Number:
    """f·(N/K − 1)·share·decode KV bytes / W_hbm: a decode-attention kernel without grouped-query reuse
    (one thread block per query head, as before TensorRT-LLM's XQA) reads each KV head once per query
    head of its group; f is the share not served from cache (0 without an engine, or for MHA)."""
    f, m = dep.engine.gqa_kv_reread, dep.model
    extra = m.num_heads / max(m.num_kv_heads, 1) - 1.0
    if not f or extra <= 0:
        return 0.0
    return f * extra * share * np.asarray(decode_kv_bytes) / bw


def with_engine_collective_latency(dep: Deployment, tokens: Number, c: comms.CommsTerms) -> comms.CommsTerms:
    """The stage's collectives plus the engine's latency per ring step (``collective_hop_s``) × their ring
    steps and its large all-reduces' extra time (:func:`large_collective_s`), on the network side of the
    step (they bind, and overlap, as collectives); unchanged where both are 0."""
    hop = dep.engine.collective_hop_s
    extra = large_collective_s(dep, c)
    if (not hop or all_zero(c.ring_steps)) and extra is None:
        return c
    latency = np.where(np.asarray(tokens) > 0, c.ring_steps * hop, 0.0)
    if extra is not None:
        latency = latency + extra
    return replace(c, time_s=np.add(c.time_s, latency), lower_s=np.add(c.lower_s, latency))


def large_collective_s(dep: Deployment, c: comms.CommsTerms) -> Number | None:
    """k·(bytes each chip moves in the stage's all-reduces) where their message [T, D] is at least the
    engine's ``large_collective_bytes`` (k: ``large_collective_s_per_byte``, fitted: an engine whose large
    all-reduces leave its fast path); None where the engine has no such term."""
    k = dep.engine.large_collective_s_per_byte
    if not k:
        return None
    large = np.greater_equal(c.allreduce_message_bytes, dep.engine.large_collective_bytes)
    return np.where(large, k * np.asarray(c.allreduce_wire_bytes), 0.0)


def engine_overhead_s(
    dep: Deployment, stage: Work, layers: float, share: float, bw: Number, gemm_s: Number, decode_kv_bytes: Number = 0.0
) -> Number:
    """One stage's overheads: the engine's work outside the kernels (:func:`engine_terms_s`) plus, where the step
    runs at the chip's achievable defaults without calibrated kernels, the kernel floors
    (:func:`roofline.terms.floors.kernel_floors_s`)."""
    terms = engine_terms_s(dep, stage, layers, share, bw, gemm_s, decode_kv_bytes)
    if dep.rates.achievable and not dep.rates.uses("overhead"):
        return plus(terms, kernel_floors_s(dep, stage, layers))
    return terms


def engine_terms_s(
    dep: Deployment, stage: Work, layers: float, share: float, bw: Number, gemm_s: Number, decode_kv_bytes: Number = 0.0
) -> Number:
    """One stage's engine work outside the kernels (profile's ``engine:`` terms; 0 without an engine).

    share·(step overhead + sampled sequences·sampling + prefill sequences·prefill overhead)
    + layers·(layer overhead + tokens·(non-GEMM bytes per token / W_hbm + replicated bytes per token /
    one chip's W_hbm)) + GEMM·slowdown + the KV re-reads of a kernel without grouped-query reuse
    (:func:`gqa_kv_reread_s`).
    """
    e = dep.engine
    sampled = np.add(stage.decode_seqs, stage.prompts)
    if not e.legacy_active:  # every term 0: a read-only zero of the step's shape, no full-grid passes
        return zeros_shaped(sampled, stage.tokens, gemm_s)
    per_step = (
        e.step_overhead_s
        + np.multiply(sampled, e.sample_s_per_seq)
        + np.multiply(stage.prompts, e.prefill_seq_overhead_s)
    )
    # Replicated bytes: work each chip of a Megatron tp group repeats on the whole [T, D] (norms,
    # residual adds), over one chip's bandwidth; the others are split over the stage's chips.
    per_token = e.layer_bytes_per_token / bw + e.replicated_bytes_per_token / dep.rates.hbm_bandwidth_bytes_per_s
    per_layer = e.layer_overhead_s + np.multiply(stage.tokens, per_token)
    active = np.asarray(sampled) > 0
    return (
        np.where(active, share * per_step + layers * per_layer, 0.0)
        + e.gemm_slowdown * np.asarray(gemm_s)
        + gqa_kv_reread_s(dep, decode_kv_bytes, share, bw)
    )


def prompt_step_floor(
    dep: Deployment, stage: Work, share: float, pred: Number, upper: Number, code: np.ndarray
) -> tuple[Number, Number, np.ndarray]:
    """(prediction, upper, bound code) of a stage with the engine's floor under prompt-only steps:
    max(share·floor, t) where the step has prompts and no decodes (an eager step: device work shorter
    than the host's launches hides under them), bound 'host' where the floor is the larger; unchanged
    elsewhere and without a floor."""
    floor = dep.engine.prefill_floor_s
    if not floor:
        return pred, upper, code
    prompt_only = np.logical_and(np.asarray(stage.decode_seqs) == 0, np.asarray(stage.prefill_tokens) > 0)
    least = share * floor
    host = np.logical_and(prompt_only, np.less(pred, least))
    if host.any():
        shape = np.broadcast_shapes(np.shape(code), host.shape)
        code = np.where(host, HOST_BOUND, np.broadcast_to(code, shape)).astype(np.int8)
    return (
        np.where(prompt_only, np.maximum(pred, least), pred),
        np.where(prompt_only, np.maximum(upper, least), upper),
        code,
    )


def engine_sources(dep: Deployment) -> dict[str, str]:
    """Source lines of the engine entry's step floors: the prompt-only step floor, the large all-reduces' cost."""
    e, out = dep.engine, {}
    if e.prefill_floor_s:
        out["prefill_floor"] = (
            f"a prompt-only step takes at least {e.prefill_floor_s * 1e3:.3g} ms "
            "(the engine's prefill_floor_s: an eager step's host launches)"
        )
    if e.large_collective_s_per_byte:
        out["large_collectives"] = (
            f"all-reduces of messages ≥ {e.large_collective_bytes / 2**20:g} MiB take "
            f"{e.large_collective_s_per_byte * 1e12:.3g} ps more per byte each chip moves "
            "(the engine's large_collective_s_per_byte)"
        )
    return out
