"""Multi-chip analyses: specs in, collectives/sharding/serving estimators applied, results out.

The layer behind ``roofline collective``, ``roofline shard`` and ``roofline serve`` (and the
Python API): it reads numbers off the specs, calls the pure estimators in
:mod:`roofline.collectives`, :mod:`roofline.sharding` and :mod:`roofline.serving` (and the
single-chip analyses in :mod:`roofline.analysis`) and says where every number came from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import collectives, compute, fabric, memory, serving, sharding, step
from .analysis import BOOK, Precision, decode_step, request
from .chip import chip_rates
from .errors import RooflineError
from .specs import HardwareSpec, ModelSpec
from .units import dtype_bytes

DEFAULT_PRECISION = Precision()


@dataclass(frozen=True)
class CollectiveResult:
    """One collective (contract keys of ``roofline collective --json``)."""

    op: str
    total_bytes: Any
    devices: int
    network: str
    time_s: Any
    time_upper_s: Any
    bandwidth_time_s: Any
    latency_time_s: Any
    latency_bound: Any
    rule_of_thumb_latency_bound: Any
    latency_bound_below_bytes: float
    sources: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def collective(
    hw: HardwareSpec,
    op: str,
    total_bytes: Any,
    devices: int | None = None,
    topology_text: str | None = None,
    axes: tuple[int, ...] | None = None,
    wraparound: bool | None = None,
    dcn_bandwidth_bytes_per_s: float | None = None,
) -> CollectiveResult:
    """Time of an AllGather/ReduceScatter/AllReduce/AllToAll of V bytes on a slice of ``hw``.

    ``dcn_bandwidth_bytes_per_s`` replaces the hardware file's per-chip scale-out egress (for a
    per-node figure, divide the node's NIC bandwidth by its chips).
    """
    v = np.asarray(total_bytes, dtype=float)
    if np.any(~np.isfinite(v)) or np.any(v <= 0):
        raise RooflineError(f"--bytes must be positive (got {total_bytes})")
    dcn_source = "hardware file"
    if dcn_bandwidth_bytes_per_s is not None:
        if not dcn_bandwidth_bytes_per_s > 0:
            raise RooflineError(f"--dcn-bandwidth must be positive (got {dcn_bandwidth_bytes_per_s})")
        hw = hw.model_copy(update={"dcn_bandwidth_bytes_per_s": float(dcn_bandwidth_bytes_per_s),
                                   "dcn_latency_s": hw.dcn_latency_s or 1e-5})
        dcn_source = "command line"
    layout = fabric.layout_for(hw, devices, topology_text, axes, wraparound)
    t = fabric.collective_on(hw, layout, op, v)
    n = layout.devices
    return CollectiveResult(
        op=op,
        total_bytes=v,
        devices=n,
        network=layout.describe(hw),
        time_s=t.time_s,
        time_upper_s=t.time_upper_s,
        bandwidth_time_s=t.bandwidth_time_s,
        latency_time_s=t.latency_time_s,
        latency_bound=t.latency_bound,
        rule_of_thumb_latency_bound=np.asarray(
            collectives.is_latency_bound(v, n, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s)),
        latency_bound_below_bytes=float(
            collectives.latency_bound_bytes(n, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s)),
        sources={
            "hardware": f"spec sheet ({hw.source or hw.name})",
            "formulas": fabric.PART3,
            "dcn": dcn_source,
            **fabric.link_summary(hw, layout),
        },
    )


# --------------------------------------------------------------------------- sharding limits


def slice_sizes(hw: HardwareSpec) -> list[int]:
    """Candidate slice sizes: powers of two up to the ICI domain (or 4096 when unknown)."""
    limit = hw.max_ici_domain_chips or 4096
    sizes, n = [], 1
    while n <= limit:
        sizes.append(n)
        n *= 2
    return sizes


@dataclass(frozen=True)
class ShardResult:
    """How far each kind of sharding scales (contract keys of ``roofline shard --json``)."""

    chips: int
    tp: int
    batch: int
    beta: float
    ici_bandwidth_bytes_per_s: float
    max_tp_decode: float
    alpha_ici: float
    max_tp_prefill: float
    latency_bound_above_tp: float
    kv_head_shards: int
    kv_batch_shards: int
    attention_alltoalls_per_layer: int
    comms_1d_s: float
    comms_2d_s: float
    weight_stationary_2d_crossover_chips: float
    sequence_sharding_comms_s: Any
    step_time_s: Any
    comms_time_s: Any
    step_time_lower_s: Any
    step_time_upper_s: Any
    bound: Any
    moe: dict[str, Any] | None
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def shard_limits(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    batch: int,
    context: int = 2048,
    precision: Precision = DEFAULT_PRECISION,
    tp: int | None = None,
    topology_text: str | None = None,
    expert_ways: int | None = None,
) -> ShardResult:
    """Model-parallel limits (decode, prefill, latency), KV sharding, 1D vs 2D, MoE experts, sharded step."""
    res = decode_step(model, hw, chips, batch, context, precision, tp=tp if tp is not None else (
        None if topology_text else chips), topology_text=topology_text)
    degree = int(res.tp)
    # Usable one-way ICI bandwidth per chip of the tp group: 2 links per wrapped axis (book part 3).
    layout = fabric.tp_layout(hw, degree, topology_text)
    w_ici = fabric.usable_bandwidth_bytes_per_s(hw, layout)
    q_bytes = sharding.attention_query_bytes(batch, model.num_heads, model.head_dim, dtype_bytes(precision.compute))
    sequence_comms = sharding.sequence_sharding_comms_time_s(
        model.num_layers, fabric.collective_on(hw, layout, "allgather", q_bytes).time_s,
        fabric.collective_on(hw, layout, "allreduce", q_bytes).time_s)
    rates = chip_rates(hw, precision.compute)
    beta = float(sharding.hbm_to_ici_ratio(rates.weight_bandwidth_bytes_per_s, w_ici))
    alpha = float(sharding.ici_arithmetic_intensity(rates.flops_per_s, w_ici))
    act_bytes = batch * model.d_model * dtype_bytes(precision.compute)
    return ShardResult(
        chips=chips,
        tp=degree,
        batch=batch,
        beta=beta,
        ici_bandwidth_bytes_per_s=w_ici,
        max_tp_decode=float(sharding.max_model_parallelism_decode(model.d_ff, batch, beta)),
        alpha_ici=alpha,
        max_tp_prefill=float(sharding.max_model_parallelism_prefill(model.d_ff, alpha)),
        latency_bound_above_tp=float(collectives.latency_bound_model_parallelism(
            act_bytes, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s)),
        kv_head_shards=int(sharding.kv_head_shards(model.num_kv_heads, degree)),
        kv_batch_shards=int(sharding.kv_batch_shards(model.num_kv_heads, degree)),
        attention_alltoalls_per_layer=int(sharding.attention_alltoalls_per_layer(model.num_kv_heads, degree)),
        comms_1d_s=float(sharding.model_parallel_1d_comms_s(batch, model.d_model, hw.ici_bandwidth_bytes_per_s)),
        comms_2d_s=float(sharding.optimal_2d_comms_s(batch, model.d_model, model.d_ff, chips,
                                                     hw.ici_bandwidth_bytes_per_s)),
        weight_stationary_2d_crossover_chips=float(
            sharding.weight_stationary_2d_crossover_chips(model.d_model, model.d_ff)),
        sequence_sharding_comms_s=sequence_comms,
        step_time_s=res.step_time_s,
        comms_time_s=res.comms_time_s,
        step_time_lower_s=res.step_time_lower_s,
        step_time_upper_s=res.step_time_upper_s,
        bound=res.bound,
        moe=moe_sharding(model, hw, chips, batch, precision, expert_ways) if model.is_moe else None,
        sources={
            "hardware": rates.source,
            "model": model.source or model.name,
            "formulas": f"{BOOK}, 'Distributing inference over multiple accelerators', problems 6-7, "
                        "appendices B-C",
            "comms": res.sources["comms"],
        },
    )


def moe_sharding(
    model: ModelSpec, hw: HardwareSpec, chips: int, batch: int, precision: Precision, expert_ways: int | None
) -> dict[str, Any]:
    """Expert sharding [E_Z, D, F_Y]: bytes and weight-load time per chip, free HBM, smallest slice."""
    counts = memory.param_counts(model)
    expert_bytes = float(memory.param_bytes(memory.routed_expert_params(model), precision.weight_bytes))
    other_bytes = float(memory.param_bytes(counts.total, precision.weight_bytes)) - expert_bytes
    if expert_ways is None:
        z, y, per_chip = sharding.best_expert_split(chips, model.num_experts, expert_bytes, other_bytes)
    else:
        if expert_ways < 1 or chips % expert_ways or model.num_experts % expert_ways:
            raise RooflineError(f"--expert-ways {expert_ways} must divide both --chips ({chips}) and the "
                                f"{model.num_experts} experts")
        z, y = expert_ways, chips // expert_ways
        per_chip = float(sharding.expert_sharded_bytes_per_chip(expert_bytes, other_bytes, z, y))
    smallest = sharding.smallest_slice_for_experts(slice_sizes(hw), hw.hbm_bytes, model.num_experts,
                                                   expert_bytes, other_bytes)
    rates = chip_rates(hw, precision.compute)
    return {
        "expert_ways": z,
        "model_ways": y,
        "weight_bytes_per_chip": per_chip,
        "weight_load_time_s": float(step.weight_load_time_s(per_chip, rates.weight_bandwidth_bytes_per_s)),
        "free_hbm_per_chip_bytes": float(sharding.free_hbm_per_chip(hw.hbm_bytes, per_chip)),
        "smallest_slice_chips": smallest[0] if smallest else None,
        "experts_touched_per_step": float(memory.expected_experts_touched(
            model.num_experts, model.experts_per_token, batch)),
        "weight_bytes_read_per_step": float(memory.weight_bytes_read_per_step(
            model, counts.total, precision.weight_bytes, batch)),
    }


# --------------------------------------------------------------------------- serving engines


@dataclass(frozen=True)
class ServeResult:
    """A serving design (contract keys of ``roofline serve --json``)."""

    mode: str
    ttft_s: float
    tpot_s: float
    tokens_per_s_per_chip: float
    chips: float
    prefill_s: float
    batch_prefill_s: float
    step_time_s: float
    decode_stall_s: float
    prefill_to_decode_ratio: float
    kv_transfer_s: float
    continuous: dict[str, Any] | None = None
    prefix_cache: dict[str, Any] | None = None
    speculative: dict[str, Any] | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def serve(
    model: ModelSpec,
    hw: HardwareSpec,
    mode: str,
    input_len: int,
    output_len: int,
    chips: int = 1,
    batch: int = 1,
    precision: Precision = DEFAULT_PRECISION,
    mfu: float = 1.0,
    arrival_rate: float | None = None,
    prefix_len: int | None = None,
    prefix_hit_rate: float = 1.0,
    num_prefixes: int = 1,
    prefix_store: str = "hbm",
    draft_model: ModelSpec | None = None,
    draft_len: int | None = None,
    acceptance: float | None = None,
) -> ServeResult:
    """TTFT, TPOT and tokens/s per chip of a static, interleaved or disaggregated engine, plus extras."""
    if mode not in serving.MODES:
        raise RooflineError(f"--mode: unknown mode {mode!r}; allowed: {', '.join(serving.MODES)}")
    prefill_1 = float(request(model, hw, input_len, 1, chips, 1, precision, mfu).ttft_s)
    prefill_b = float(request(model, hw, input_len, 1, chips, batch, precision, mfu).ttft_s)
    mean_context = input_len + output_len / 2.0
    step_res = decode_step(model, hw, chips, batch, mean_context, precision)
    step_s = float(step_res.step_time_s)
    ratio = float(serving.prefill_to_decode_ratio(prefill_1, step_s, batch, output_len))
    kv_bytes = float(memory.kv_cache_bytes_per_sequence(model, input_len, precision.kv_bytes))
    transfer = 0.0
    if mode == "disaggregated":
        if hw.dcn_bandwidth_bytes_per_s is None:
            raise RooflineError(f"{hw.name}: disaggregated mode needs dcn_bandwidth_bytes_per_s in the hardware file")
        transfer = float(serving.kv_transfer_time_s(kv_bytes, chips * hw.dcn_bandwidth_bytes_per_s,
                                                    hw.dcn_latency_s or 0.0))
    if mode == "static":
        ttft = float(serving.static_ttft_s(prefill_b))
        tpot, stall = step_s, 0.0
        tps = batch * output_len / float(serving.static_cycle_s(prefill_b, output_len, step_s))
        used = float(chips)
    elif mode == "interleaved":
        ttft = float(serving.interleaved_ttft_s(prefill_1, step_s))
        tpot = float(serving.interleaved_tpot_s(step_s, prefill_1, batch, output_len))
        stall, tps, used = prefill_1, batch / tpot, float(chips)
    else:
        ttft = float(serving.disaggregated_ttft_s(prefill_1, transfer))
        tpot, stall = step_s, 0.0
        tps, used = batch / step_s, chips * (1.0 + ratio)
    return ServeResult(
        mode=mode,
        ttft_s=ttft,
        tpot_s=tpot,
        tokens_per_s_per_chip=float(serving.tokens_per_s_per_chip(tps, used)),
        chips=used,
        prefill_s=prefill_1,
        batch_prefill_s=prefill_b,
        step_time_s=step_s,
        decode_stall_s=stall,
        prefill_to_decode_ratio=ratio,
        kv_transfer_s=transfer,
        continuous=(continuous_batching(model, hw, chips, input_len, output_len, precision, prefill_1, arrival_rate)
                    if arrival_rate is not None else None),
        prefix_cache=(prefix_caching(model, hw, chips, input_len, precision, mfu, prefix_len, prefix_hit_rate,
                                     num_prefixes, prefix_store) if prefix_len is not None else None),
        speculative=(speculative(model, hw, chips, batch, mean_context, precision, draft_model, draft_len,
                                 acceptance) if draft_len is not None else None),
        sources={
            "hardware": step_res.sources["hardware"],
            "model": model.source or model.name,
            "formulas": f"{BOOK}, 'Designing an effective inference engine', appendix D; part 8 "
                        "(disaggregation ratio)",
            "decode step": f"batch {batch} at the mean context I + O/2 = {mean_context:g}",
        },
    )


def continuous_batching(
    model: ModelSpec, hw: HardwareSpec, chips: int, input_len: int, output_len: int, precision: Precision,
    prefill_s: float, arrival_rate: float,
) -> dict[str, Any]:
    """Steady state at λ req/s: concurrency by Little's law, TPOT, TTFT with M/D/1 prefill queueing, chips."""
    if arrival_rate <= 0:
        raise RooflineError(f"--arrival-rate must be positive (got {arrival_rate})")
    context = input_len + output_len / 2.0
    capacity = memory.hbm_capacity_bytes(chips, hw.hbm_bytes)
    weights = memory.param_bytes(memory.param_counts(model).total, precision.weight_bytes)
    kv_seq = memory.kv_cache_bytes_per_sequence(model, input_len + output_len, precision.kv_bytes)
    max_batch = int(memory.max_batch_size(capacity, weights, kv_seq))
    if max_batch < 1:
        raise RooflineError(f"{model.name} does not fit on {chips}x {hw.name} at context {input_len + output_len}")
    batches = np.arange(1, max_batch + 1, dtype=float)
    steps = np.asarray(decode_step(model, hw, chips, batches, context, precision).step_time_s, dtype=float)
    replicas, concurrency = 1, float("inf")
    while replicas <= 4096:
        concurrency = serving.steady_state_batch(arrival_rate / replicas, output_len, batches, steps)
        if np.isfinite(concurrency):
            break
        replicas += 1
    if not np.isfinite(concurrency):
        raise RooflineError(f"--arrival-rate {arrival_rate}: needs more than 4096 decode replicas")
    tpot = float(steps[int(concurrency) - 1])
    prefill_servers = int(serving.servers_needed(arrival_rate * prefill_s))
    wait = float(serving.md1_wait_s(arrival_rate / prefill_servers, prefill_s))
    return {
        "arrival_rate_per_s": arrival_rate,
        "concurrency_per_replica": concurrency,
        "decode_replicas": replicas,
        "prefill_servers": prefill_servers,
        "tpot_s": tpot,
        "ttft_s": prefill_s + wait,
        "prefill_queue_wait_s": wait,
        "chips_needed": (replicas + prefill_servers) * chips,
        "queueing_model": "Little's law L = λ·O·TPOT(L) per decode replica; prefill pool as M/D/1 "
                          "(Poisson arrivals, fixed prefill time), sized to ≤ 80% utilization",
    }


def prefix_caching(
    model: ModelSpec, hw: HardwareSpec, chips: int, input_len: int, precision: Precision, mfu: float,
    prefix_len: int, hit_rate: float, num_prefixes: int, store: str,
) -> dict[str, Any]:
    """Shared prefix of P tokens hit with rate h: FLOPs saved, cache bytes held, TTFT with and without."""
    if not 0 < prefix_len <= input_len:
        raise RooflineError(f"--prefix-len must be in (0, --input-len] (got {prefix_len})")
    if not 0 <= hit_rate <= 1:
        raise RooflineError(f"--prefix-hit-rate must be in [0, 1] (got {hit_rate})")
    if store not in ("hbm", "host"):
        raise RooflineError(f"--prefix-store: unknown {store!r}; allowed: hbm, host")
    rates = chip_rates(hw, precision.compute)
    active = memory.param_counts(model).active
    weights = memory.param_bytes(memory.param_counts(model).total, precision.weight_bytes)
    full_flops = compute.prefill_flops(model, active, input_len)
    prefix_flops = compute.prefill_flops(model, active, prefix_len)
    kv_prefix = float(memory.kv_cache_bytes_per_sequence(model, prefix_len, precision.kv_bytes))
    kv_full = float(memory.kv_cache_bytes_per_sequence(model, input_len, precision.kv_bytes))
    flops_rate, bw = chips * rates.flops_per_s, chips * rates.weight_bandwidth_bytes_per_s
    full = float(step.prefill_time_s(full_flops, weights + kv_full, flops_rate, bw, mfu))
    suffix = float(step.prefill_time_s(full_flops - prefix_flops, weights + kv_full - kv_prefix, flops_rate, bw,
                                       mfu))
    if store == "host":
        if hw.host_bandwidth_bytes_per_s is None:
            raise RooflineError(f"--prefix-store host: {hw.name} has no host_bandwidth_bytes_per_s")
        load = kv_prefix / (chips * hw.host_bandwidth_bytes_per_s)
        capacity = (hw.host_dram_bytes or 0.0) * chips
    else:
        load = 0.0  # read in place by the suffix's attention
        capacity = float(hw.hbm_bytes * chips - weights)
    held = float(serving.prefix_cache_bytes(num_prefixes, kv_prefix))
    cached = float(serving.prefix_cached_ttft_s(full, suffix, load, hit_rate))
    return {
        "prefix_len": prefix_len,
        "hit_rate": hit_rate,
        "prefill_flops": float(full_flops),
        "flops_saved_per_request": float(serving.prefix_flops_saved(prefix_flops, hit_rate)),
        "cache_bytes": held,
        "cache_store": store,
        "cache_fits": held <= capacity,
        "cache_load_s": load,
        "ttft_without_cache_s": full,
        "ttft_with_cache_s": cached,
        "ttft_gain_s": full - cached,
    }


def speculative(
    model: ModelSpec, hw: HardwareSpec, chips: int, batch: int, context: float, precision: Precision,
    draft_model: ModelSpec | None, draft_len: int, acceptance: float | None,
) -> dict[str, Any]:
    """Speculative decoding with γ drafts at acceptance α: tokens per step, round time, speedup, break-even batch."""
    if draft_model is None or acceptance is None:
        raise RooflineError("speculative decoding needs --draft-model, --draft-len and --acceptance together")
    if draft_len < 1:
        raise RooflineError(f"--draft-len must be at least 1 (got {draft_len})")
    if not 0 <= acceptance <= 1:
        raise RooflineError(f"--acceptance must be in [0, 1] (got {acceptance})")
    rates = chip_rates(hw, precision.compute)
    counts = memory.param_counts(model)
    batches = np.unique(np.concatenate([[batch], 2.0 ** np.arange(0, 13)]))
    plain = np.asarray(decode_step(model, hw, chips, batches, context, precision).step_time_s, dtype=float)
    draft = np.asarray(decode_step(draft_model, hw, chips, batches, context, precision).step_time_s, dtype=float)
    weights_read = memory.weight_bytes_read_per_step(model, counts.total, precision.weight_bytes, batches)
    kv_seq = memory.kv_cache_bytes_per_sequence(model, context, precision.kv_bytes)
    verify = serving.verify_step_time_s(batches, draft_len, kv_seq, weights_read, counts.active,
                                        chips * rates.flops_per_s, chips * rates.weight_bandwidth_bytes_per_s)
    tokens = float(serving.expected_tokens_per_step(acceptance, draft_len))
    round_s = serving.speculative_round_time_s(draft, draft_len, verify)
    speedup = serving.speculative_speedup(tokens, round_s, plain)
    i = int(np.nonzero(batches == batch)[0][0])
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
        "break_even_batch": serving.break_even_batch(batches, speedup),
    }
