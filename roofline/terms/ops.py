"""Per-op breakdown of one step: each weight GEMM and the attention, with FLOPs, bytes, time and bound.

The rows are the GEMMs the step model prices (:mod:`roofline.terms.gemms`: QKV and O projections,
MLP gate+up and down, routed and shared experts, the LM head on the sampled rows) and the
attention it prices (:mod:`roofline.terms.attention`), with the step model's byte accounting:
weight and KV traffic are timed, activations are shown but not timed (as in the book).  On the
spec sheet each op's time is its own roofline, max(FLOPs / (chips·peak), bytes / (chips·HBM
bandwidth)); a calibrated profile's fitted kernels time the GEMMs and attention instead.  What
the step model's 2·P·T FLOPs and P·bytes count outside any GEMM (the input embedding table,
norms, router, LM-head rows that are not sampled) is one more row, so the FLOPs and bytes add up
to the step's.  Pure functions of one scalar configuration (pp = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.core.errors import RooflineError
from roofline.deploy import Deployment, kernels
from roofline.formulas import compute, sharding
from roofline.model import memory
from roofline.terms import gemms, operators
from roofline.terms.step import StepTerms, gemm_source, step_terms
from roofline.terms.work import Work

OUTSIDE_GEMMS = "outside the GEMMs (embedding table, norms, router; the step model's 2·P·T FLOPs)"


@dataclass(frozen=True)
class Op:
    """One op of a step on one replica: its kernels per step, totals over them, time and bound."""

    name: str
    count: float
    flops: float
    weight_bytes: float
    activation_bytes: float
    kv_bytes: float
    time_s: float
    bound: str
    source: str

    @property
    def timed_bytes(self) -> float:
        """Bytes the step model charges: weights + KV (activations are not timed)."""
        return self.weight_bytes + self.kv_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per timed byte (inf for an op that moves no timed bytes)."""
        return self.flops / self.timed_bytes if self.timed_bytes > 0 else float("inf")


@dataclass(frozen=True)
class OpBreakdown:
    """The ops of one step and the step model's own totals, for the table's last lines."""

    ops: tuple[Op, ...]
    chips: float
    flops_per_s: float
    hbm_bandwidth_bytes_per_s: float
    local_s: float
    comms_exposed_s: float
    step_s: float
    source: str

    @property
    def time_s(self) -> float:
        """Σ op times (equals the step model's local time where every op sits on one side of the ridge)."""
        return float(sum(op.time_s for op in self.ops))

    @property
    def shared_roofline_s(self) -> float:
        """Local time − Σ op times: ≤ 0 on the spec sheet, where the step model prices all matmuls as
        one roofline, max(ΣFLOPs/peak, Σbytes/bandwidth) ≤ Σ max(FLOPs/peak, bytes/bandwidth)."""
        return self.local_s - self.time_s


@dataclass(frozen=True)
class _Gemm:
    """[tokens, k] x [k, n] run ``count`` times per step; ``split`` is the axis tp shards (n or k)."""

    name: str
    count: float
    tokens: float
    k: float
    n: float
    split: str
    experts_per_chip_divisor: float = 1.0
    component: str = "attention"  # the weight component its matrix belongs to (its dtype)


def _gemm_shapes(dep: Deployment, tokens: float, lm_tokens: float) -> list[_Gemm]:
    """The weight GEMMs of :func:`roofline.terms.gemms.gemm_time_s`, unsharded, per step."""
    m = dep.model
    d = float(m.d_model)
    out = gemms.attention_out_params(m)
    qkv = memory.attention_params_per_layer(m) - out
    moe_layers = memory.moe_layer_count(m)
    dense_layers = m.num_layers - moe_layers
    dense_ff = float(m.dense_d_ff if (moe_layers and m.dense_d_ff) else m.d_ff)
    up = 2.0 if m.gated_mlp else 1.0
    shapes = [
        _Gemm("QKV projection", m.num_layers, tokens, d, qkv / d, "n"),
        _Gemm("O projection", m.num_layers, tokens, out / d, d, "k"),
    ]
    if dense_layers:
        shapes += [
            _Gemm(
                "MLP gate+up" if m.gated_mlp else "MLP up", dense_layers, tokens, d, up * dense_ff, "n", component="mlp"
            ),
            _Gemm("MLP down", dense_layers, tokens, dense_ff, d, "k", component="mlp"),
        ]
    if moe_layers and not operators.has_moe_operator(dep):
        touched = float(np.maximum(memory.expected_experts_touched(m.num_experts, m.experts_per_token, tokens), 1e-9))
        per_expert = tokens * m.experts_per_token / touched
        ep = float(dep.par.ep)
        shapes += [
            _Gemm("routed experts gate+up", moe_layers * touched, per_expert, d, up * m.d_ff, "n", ep, "experts"),
            _Gemm("routed experts down", moe_layers * touched, per_expert, float(m.d_ff), d, "k", ep, "experts"),
        ]
    if moe_layers:
        if m.num_shared_experts:
            shared_ff = float(m.num_shared_experts * (m.shared_expert_d_ff or m.d_ff))
            shapes += [
                _Gemm("shared experts gate+up", moe_layers, tokens, d, up * shared_ff, "n", component="mlp"),
                _Gemm("shared experts down", moe_layers, tokens, shared_ff, d, "k", component="mlp"),
            ]
    shapes.append(
        _Gemm(
            "LM head (sampled rows)",
            1.0,
            lm_tokens,
            d,
            float(m.vocab_size),
            "n",
            component="embeddings" if m.tie_embeddings else "lm_head",
        )
    )
    return [g for g in shapes if g.count > 0 and g.tokens > 0]


def _bound(flops: float, timed_bytes: float, flops_rate: float, bandwidth: float) -> str:
    """'compute' where FLOPs / peak ≥ bytes / bandwidth (right of the ridge), else 'memory'."""
    return "compute" if flops / flops_rate >= timed_bytes / bandwidth else "memory"


def _roofline_s(flops: float, timed_bytes: float, flops_rate: float, bandwidth: float) -> float:
    """The op's own roofline time: max(FLOPs / peak, bytes / bandwidth) over the replica's chips."""
    return float(compute.roofline_time_s(flops, timed_bytes, flops_rate, bandwidth))


def _gemm_op(dep: Deployment, g: _Gemm, shards: float, flops_rate: float, bandwidth: float, fitted: bool) -> Op:
    prec = dep.precision
    flops = g.count * float(compute.matmul_flops(g.tokens, g.k, g.n))
    weights = g.count * float(memory.param_bytes(g.k * g.n, prec.bytes_by_component[g.component]))
    acts = g.count * float(compute.matmul_bytes(g.tokens, g.k, g.n, prec.activation_bytes, 0.0))
    if fitted:
        split = shards / g.experts_per_chip_divisor
        n, k = (g.n / split, g.k) if g.split == "n" else (g.n, g.k / split)
        per_chip = g.count / g.experts_per_chip_divisor
        time = per_chip * float(
            kernels.gemm_time_s(
                dep.hw, prec.compute_dtype(g.component), g.tokens, n, k, prec.gemm_weight_bytes.get(g.component)
            )
        )
        source = gemm_source(dep)
    else:
        time = _roofline_s(flops, weights, flops_rate, bandwidth)
        source = "spec sheet roofline"
    return Op(g.name, g.count, flops, weights, acts, 0.0, time, _bound(flops, weights, flops_rate, bandwidth), source)


def _moe_op(dep: Deployment, t: StepTerms, tokens: float, flops_rate: float, bandwidth: float) -> Op:
    """The routed experts of every MoE layer as the fused-MoE operator: its time from the step's term, its FLOPs
    (2·T·k·mats·D·F a layer) and the active experts' bytes the operator reads (the step's)."""
    m = dep.model
    layers = float(memory.moe_layer_count(m))
    mats = 3 if m.gated_mlp else 2
    flops = layers * 2.0 * tokens * m.experts_per_token * mats * m.d_model * m.d_ff
    weights = _scalar(t.moe_weight_bytes)
    return Op(
        "routed experts (fused MoE operator)",
        layers,
        flops,
        weights,
        0.0,
        0.0,
        _scalar(t.moe_time_s),
        _bound(flops, weights, flops_rate, bandwidth),
        t.sources.get("moe", ""),
    )


def _scalar(value: object) -> float:
    arr = np.asarray(value, dtype=float)
    if arr.size != 1:
        raise RooflineError("the per-op breakdown takes one configuration (scalar batch, context and chips)")
    return float(arr.reshape(-1)[0])


def step_ops(dep: Deployment, work: Work) -> OpBreakdown:
    """Every op of one step of ``work`` on one replica of ``dep`` (pp = 1), with the step's totals."""
    if dep.par.pp != 1:
        raise RooflineError("the per-op breakdown needs pp = 1 (one pipeline stage holds every layer)")
    m, prec, rates = dep.model, dep.precision, dep.rates
    t = step_terms(dep, work)
    replica = work.dealt(dep.replicas)
    chips = _scalar(dep.stage_chips)
    flops_rate, bandwidth = chips * rates.flops_per_s, chips * rates.hbm_bandwidth_bytes_per_s
    decode_seqs, prefill_seqs = _scalar(replica.decode_seqs), _scalar(replica.prefill_seqs)
    tokens = _scalar(replica.tokens)
    fitted_gemm = rates.uses("gemm")
    ops = [
        _gemm_op(dep, g, chips, flops_rate, bandwidth, fitted_gemm)
        for g in _gemm_shapes(dep, tokens, decode_seqs + prefill_seqs)
    ]
    if operators.has_moe_operator(dep):
        ops.append(_moe_op(dep, t, tokens, flops_rate, bandwidth))
    gemm_flops = sum(op.flops for op in ops)
    gemm_weights = sum(op.weight_bytes for op in ops)
    if decode_seqs > 0:
        flops = decode_seqs * _scalar(compute.attention_flops_per_token(m, replica.decode_context))
        kv = _scalar(t.kv_read_bytes)
        acts = (
            2.0
            * m.num_layers
            * float(sharding.attention_query_bytes(decode_seqs, m.num_heads, m.head_dim, prec.activation_bytes))
        )
        fitted = rates.uses("attention_decode") or operators.has_mla(dep)  # a kernel model (MLA's own) times it
        time = _scalar(t.attention_decode_s) if fitted else _roofline_s(flops, kv, flops_rate, bandwidth)
        ops.append(
            Op(
                "attention (decode)",
                m.num_layers,
                flops,
                0.0,
                acts,
                kv,
                time,
                _bound(flops, kv, flops_rate, bandwidth),
                t.sources.get("mla", rates.sources.get("attention_decode", "")) if fitted else "spec sheet roofline",
            )
        )
    if prefill_seqs > 0:
        flops = _scalar(t.attention_flops)
        kv = _scalar(t.kv_written_bytes)
        acts = (
            2.0
            * m.num_layers
            * float(
                sharding.attention_query_bytes(
                    _scalar(replica.prefill_tokens), m.num_heads, m.head_dim, prec.activation_bytes
                )
            )
        )
        fitted = rates.uses("attention_prefill") or operators.has_mla(dep)
        time = _scalar(t.attention_prefill_s) if fitted else _roofline_s(flops, kv, flops_rate, bandwidth)
        ops.append(
            Op(
                "attention (prefill, KV written)",
                m.num_layers,
                flops,
                0.0,
                acts,
                kv,
                time,
                _bound(flops, kv, flops_rate, bandwidth),
                t.sources.get("mla", rates.sources.get("attention_prefill", "")) if fitted else "spec sheet roofline",
            )
        )
    if _scalar(t.small_kernels_s) > 0:
        ops.append(
            Op(
                "small kernels (norms, RoPE, activation, router top-k)",
                float(m.num_layers),
                0.0,
                0.0,
                0.0,
                0.0,
                _scalar(t.small_kernels_s),
                "memory",
                "each at least the chip's smallest-kernel time (achievable defaults)",
            )
        )
    if _scalar(t.overhead_s) > 0:
        ops.append(
            Op(
                "overheads (engine terms, kernel floors)",
                1.0,
                0.0,
                0.0,
                0.0,
                0.0,
                _scalar(t.overhead_s),
                "host",
                t.sources.get("overhead", ""),
            )
        )
    rest_flops = max(_scalar(t.matmul_flops) - gemm_flops, 0.0)
    rest_bytes = max(_scalar(t.weight_read_bytes) - gemm_weights, 0.0)
    if rest_flops > 0 or rest_bytes > 0:
        rest_time = 0.0 if fitted_gemm else _roofline_s(rest_flops, rest_bytes, flops_rate, bandwidth)
        ops.append(
            Op(
                OUTSIDE_GEMMS,
                1.0,
                rest_flops,
                rest_bytes,
                0.0,
                0.0,
                rest_time,
                _bound(rest_flops, rest_bytes, flops_rate, bandwidth),
                "not timed: the fitted GEMM kernels cover the GEMMs only" if fitted_gemm else "spec sheet roofline",
            )
        )
    return OpBreakdown(
        tuple(ops),
        chips,
        rates.flops_per_s,
        rates.hbm_bandwidth_bytes_per_s,
        _scalar(t.local_s),
        _scalar(t.comms_exposed_s),
        _scalar(t.time_s),
        rates.source,
    )
