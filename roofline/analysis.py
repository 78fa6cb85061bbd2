"""Whole-configuration analyses: specs in, every estimator applied, one result out.

This is the layer between the specs and the pure estimators that the CLI, the sweeps and
the Python API share.  Scalars or numpy arrays (batch, context, chips, bytes per element)
broadcast, so one call evaluates a sweep.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import compute, cost, fabric, memory, sharding, step, topology
from .chip import ChipRates, chip_rates
from .errors import RooflineError
from .specs import HardwareSpec, ModelSpec
from .units import dtype_bytes

BOOK = "How to Scale Your Model, part 7: All About Transformer Inference"


@dataclass(frozen=True)
class Precision:
    """Dtypes of a deployment: weights, KV cache and the matmul compute."""

    weights: str = "bf16"
    kv: str = "bf16"
    compute: str = "bf16"

    @property
    def weight_bytes(self) -> float:
        return dtype_bytes(self.weights)

    @property
    def kv_bytes(self) -> float:
        return dtype_bytes(self.kv)


@dataclass(frozen=True)
class StepResult:
    """One decode step of a configuration (contract keys of ``roofline step --json``)."""

    param_count: float
    active_param_count: float
    param_bytes: Any
    kv_bytes_per_token: Any
    kv_bytes: Any
    total_bytes: Any
    hbm_capacity_bytes: Any
    fits: Any
    overflow_bytes: Any
    max_batch: Any
    min_chips: Any
    critical_batch: float
    step_time_s: Any
    max_context: Any
    min_step_time_s: Any
    local_step_time_s: Any
    tokens_per_s: Any
    tokens_per_s_per_chip: Any
    bound: Any
    kv_time_s: Any
    weight_time_s: Any
    compute_time_s: Any
    overhead_time_s: Any
    cost_per_million_tokens: Any
    sources: dict[str, str] = field(default_factory=dict)
    # Tensor parallelism (tp > 1): per-step activation collectives and the step-time bounds.
    tp: int = 1
    replicas: Any = 1.0
    comms_time_s: Any = 0.0
    comms_time_upper_s: Any = 0.0
    step_time_lower_s: Any = 0.0
    step_time_upper_s: Any = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_positive(**values: ArrayLike) -> None:
    for name, value in values.items():
        arr = np.asarray(value, dtype=float)
        if np.any(~np.isfinite(arr)) or np.any(arr <= 0):
            raise RooflineError(f"--{name.replace('_', '-')} must be positive (got {value})")


def decode_step(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: ArrayLike = 1,
    batch: ArrayLike = 1,
    context: ArrayLike = 2048,
    precision: Precision = Precision(),
    price_per_chip_hour: float | None = None,
    rates: ChipRates | None = None,
    tp: int | None = None,
    topology_text: str | None = None,
) -> StepResult:
    """Memory, fit, step time (book's general form), throughput and cost of one decode step.

    ``tp`` > 1 (or a ``topology_text`` such as ``4x4``, whose chips form the tp group) adds
    the Megatron activation collectives: bounds max(step, comms) and step + comms.
    """
    _check_positive(chips=chips, batch=batch, context=context)
    rates = rates or chip_rates(hw, precision.compute)
    counts = memory.param_counts(model)
    chips_f = np.asarray(chips, dtype=float)
    tp_degree, comms, comms_upper, comms_source = tensor_parallel_comms(
        model, hw, chips, batch, tp, topology_text, dtype_bytes(precision.compute)
    )
    # An explicit --tp k splits the slice into chips/k model replicas, each with its own weights
    # and 1/replicas of the batch; without it the whole slice is one (idealised) model group.
    explicit = tp is not None or topology_text is not None
    replicas = chips_f / tp_degree if explicit else np.ones_like(chips_f)
    g_chips = chips_f / replicas
    g_batch = np.divide(batch, replicas)
    weights = memory.param_bytes(counts.total, precision.weight_bytes)
    weights_read = memory.weight_bytes_read_per_step(model, counts.total, precision.weight_bytes, g_batch)
    kv_seq = memory.kv_cache_bytes_per_sequence(model, context, precision.kv_bytes)
    g_kv = np.multiply(g_batch, kv_seq)
    g_total = memory.total_memory_bytes(weights, g_kv)
    g_capacity = memory.hbm_capacity_bytes(g_chips, hw.hbm_bytes)
    flops = g_chips * rates.flops_per_s
    w_bw = g_chips * rates.weight_bandwidth_bytes_per_s
    kv_bw = g_chips * rates.kv_bandwidth_bytes_per_s
    overhead = rates.step_overhead_s(model.num_layers)
    local_s = step.decode_step_time_s(g_batch, kv_seq, weights_read, counts.active, flops, w_bw, kv_bw, overhead)
    # With tp > 1 the step is the overlapped bound max(local, comms); tp = 1 leaves the book's form.
    step_s = sharding.overlapped_step_time_s(local_s, comms)
    tps = step.tokens_per_s(batch, step_s)
    price = hw.price_per_chip_hour if price_per_chip_hour is None else price_per_chip_hour
    local_bound = step.decode_bound(g_batch, kv_seq, weights_read, counts.active, flops, w_bw, kv_bw)
    return StepResult(
        param_count=counts.total,
        active_param_count=counts.active,
        param_bytes=weights,
        kv_bytes_per_token=memory.kv_cache_bytes_per_token(model, precision.kv_bytes),
        kv_bytes=np.multiply(batch, kv_seq),
        total_bytes=replicas * g_total,
        hbm_capacity_bytes=memory.hbm_capacity_bytes(chips_f, hw.hbm_bytes),
        fits=memory.fits_in_memory(g_total, g_capacity),
        overflow_bytes=replicas * np.maximum(g_total - g_capacity, 0.0),
        max_batch=replicas * memory.max_batch_size(g_capacity, weights, kv_seq),
        min_chips=memory.min_chips(memory.total_memory_bytes(weights, np.multiply(batch, kv_seq)), hw.hbm_bytes),
        critical_batch=float(
            compute.critical_batch_size(
                rates.flops_per_s,
                rates.weight_bandwidth_bytes_per_s,
                precision.weight_bytes,
                model.num_experts,
                model.experts_per_token,
            )
        ),
        step_time_s=step_s,
        max_context=memory.max_context_length(model, g_batch, g_capacity, weights, precision.kv_bytes),
        min_step_time_s=sharding.overlapped_step_time_s(step.min_decode_step_time_s(g_kv, weights_read, w_bw), comms),
        local_step_time_s=local_s,
        tokens_per_s=tps,
        tokens_per_s_per_chip=tps / chips_f,
        bound=sharding.sharded_bound(local_bound, local_s, comms),
        kv_time_s=step.kv_read_time_s(g_kv, kv_bw),
        weight_time_s=step.weight_load_time_s(weights_read, w_bw),
        compute_time_s=step.matmul_time_s(g_batch, counts.active, flops),
        overhead_time_s=overhead,
        cost_per_million_tokens=cost.cost_per_million_tokens(price, chips_f, tps),
        sources={
            "hardware": rates.source,
            "model": model.source or model.name,
            "formulas": f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'",
            "price": "command line" if price_per_chip_hour is not None else "hardware spec",
            "comms": comms_source,
        },
        tp=tp_degree,
        replicas=replicas,
        comms_time_s=comms,
        comms_time_upper_s=comms_upper,
        step_time_lower_s=step_s,
        step_time_upper_s=sharding.serialized_step_time_s(local_s, comms_upper),
    )


def tensor_parallel_comms(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: ArrayLike,
    batch: ArrayLike,
    tp: int | None,
    topology_text: str | None,
    activation_bytes: float,
) -> tuple[int, Any, Any, str]:
    """(tp, comms lower, comms upper, source): L·(2 AllReduce of [B_g, D] + AllToAlls of [B_g, N·H]).

    B_g = B·tp/chips is one tp group's share of the batch (the rest of the slice splits the
    batch); the AllToAlls appear once tp exceeds the KV heads (KV then sharded over batch).
    """
    sizes = topology.parse_topology(topology_text) if topology_text else None
    degree = tp if tp is not None else (topology.topology_chips(sizes) if sizes else 1)
    if degree < 1:
        raise RooflineError(f"--tp must be at least 1 (got {degree})")
    chips_arr = np.asarray(chips, dtype=float)
    if sizes is not None and np.any(chips_arr != topology.topology_chips(sizes)):
        raise RooflineError(f"--topology {topology_text} has {topology.topology_chips(sizes)} chips but "
                            f"--chips is {chips}")
    if np.any(np.mod(chips_arr, degree) != 0):
        raise RooflineError(f"--tp {degree} must divide --chips ({chips})")
    if degree == 1:
        return 1, 0.0, 0.0, "none (tp = 1: the book's idealised fully sharded slice)"
    layout = fabric.tp_layout(hw, degree, topology_text)
    group_batch = np.multiply(batch, degree) / chips_arr
    allreduce = fabric.collective_on(hw, layout, "allreduce", group_batch * model.d_model * activation_bytes)
    q_bytes = sharding.attention_query_bytes(group_batch, model.num_heads, model.head_dim, activation_bytes)
    alltoall = fabric.collective_on(hw, layout, "alltoall", q_bytes)
    a2a_count = sharding.attention_alltoalls_per_layer(model.num_kv_heads, degree)
    lower = sharding.decode_comms_time_s(model.num_layers, allreduce.time_s, alltoall.time_s, a2a_count)
    upper = sharding.decode_comms_time_s(model.num_layers, allreduce.time_upper_s, alltoall.time_upper_s,
                                         a2a_count)
    source = f"{fabric.PART3}; {layout.describe(hw)}; hardware file links"
    return degree, lower, upper, source


@dataclass(frozen=True)
class RequestResult:
    """One request: prefill (TTFT), decode (TPOT) and end-to-end latency, with and without cache."""

    input_len: Any
    output_len: Any
    prefill_flops: Any
    ttft_s: Any
    tpot_s: Any
    decode_time_s: Any
    latency_s: Any
    first_step_time_s: Any
    last_step_time_s: Any
    no_cache_latency_s: Any
    no_cache_slowdown: Any
    tokens_per_s_per_chip: Any
    fits: Any
    total_bytes: Any
    hbm_capacity_bytes: Any
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def request(
    model: ModelSpec,
    hw: HardwareSpec,
    input_len: ArrayLike,
    output_len: ArrayLike,
    chips: ArrayLike = 1,
    batch: ArrayLike = 1,
    precision: Precision = Precision(),
    mfu: float = 1.0,
    rates: ChipRates | None = None,
) -> RequestResult:
    """TTFT = prefill of I tokens (yields token 1); O-1 decode steps follow, the KV growing."""
    _check_positive(input_len=input_len, output_len=output_len, chips=chips, batch=batch)
    if not 0 < mfu <= 1:
        raise RooflineError(f"--mfu must be in (0, 1] (got {mfu})")
    rates = rates or chip_rates(hw, precision.compute)
    counts = memory.param_counts(model)
    chips_f = np.asarray(chips, dtype=float)
    flops_rate = chips_f * rates.flops_per_s
    w_bw = chips_f * rates.weight_bandwidth_bytes_per_s
    kv_bw = chips_f * rates.kv_bandwidth_bytes_per_s
    weights = memory.param_bytes(counts.total, precision.weight_bytes)
    weights_read = memory.weight_bytes_read_per_step(
        model, counts.total, precision.weight_bytes, batch
    )
    i = np.asarray(input_len, dtype=float)
    o = np.asarray(output_len, dtype=float)
    # Prefill: the batch's prompts, weights read once, KV written once.
    p_flops = np.multiply(batch, compute.prefill_flops(model, counts.active, i))
    kv_written = memory.kv_cache_bytes(model, batch, i, precision.kv_bytes)
    ttft = step.prefill_time_s(p_flops, weights + kv_written, flops_rate, w_bw, mfu)
    overhead = rates.step_overhead_s(model.num_layers)
    # The prefill yields the first token; O-1 decode steps at contexts I, ..., I+O-2 follow.
    steps = o - 1.0
    kv_sum = memory.kv_cache_bytes_summed_over_decode(model, i, steps, precision.kv_bytes)
    decode = step.decode_time_total_s(
        batch, steps, kv_sum, weights_read, counts.active, flops_rate, w_bw, kv_bw, overhead
    )

    def step_at(context: ArrayLike) -> Any:
        kv_seq = memory.kv_cache_bytes_per_sequence(model, context, precision.kv_bytes)
        return step.decode_step_time_s(
            batch, kv_seq, weights_read, counts.active, flops_rate, w_bw, kv_bw, overhead
        )

    latency = step.request_latency_s(ttft, decode)
    nc_flops = np.multiply(
        batch, compute.no_cache_generation_flops(model, counts.active, i, o)
    )
    no_cache = step.no_cache_generation_time_s(nc_flops, weights, o, flops_rate * mfu, w_bw)
    total = memory.total_memory_bytes(
        weights, memory.kv_cache_bytes(model, batch, i + o, precision.kv_bytes)
    )
    capacity = memory.hbm_capacity_bytes(chips_f, hw.hbm_bytes)
    return RequestResult(
        input_len=i,
        output_len=o,
        prefill_flops=p_flops,
        ttft_s=ttft,
        tpot_s=np.where(steps > 0, decode / np.maximum(steps, 1.0), step_at(i)),
        decode_time_s=decode,
        latency_s=latency,
        first_step_time_s=step_at(i),
        last_step_time_s=step_at(np.maximum(i + o - 2.0, i)),
        no_cache_latency_s=no_cache,
        no_cache_slowdown=no_cache / latency,
        tokens_per_s_per_chip=np.multiply(batch, o) / latency / chips_f,
        fits=memory.fits_in_memory(total, capacity),
        total_bytes=total,
        hbm_capacity_bytes=capacity,
        sources={
            "hardware": rates.source,
            "model": model.source or model.name,
            "formulas": f"{BOOK}, prefill/generation sections (MFU {mfu:g})",
        },
    )
