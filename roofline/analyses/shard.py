"""Multi-chip analyses: specs in, collectives/sharding/serving estimators applied, results out.

The layer behind ``roofline collective``, ``roofline shard`` and ``roofline serve`` (and the
Python API): it reads numbers off the specs, calls the pure estimators in
:mod:`roofline.formulas.collectives`, :mod:`roofline.formulas.sharding` and :mod:`roofline.formulas.serving` (and the
single-chip analyses in :mod:`roofline.analyses.step`) and says where every number came from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from roofline.analyses import serve as engines
from roofline.analyses.serve import ServeResult
from roofline.analyses.step import BOOK, DEFAULT_CONTEXT, Precision, decode_step
from roofline.core.errors import OptionError, shown
from roofline.core.units import dtype_bytes
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, chip_rates, deployment, fabric, kernels
from roofline.formulas import collectives, sharding, step
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec

DEFAULT_PRECISION = Precision()


@dataclass(frozen=True)
class CollectiveResult:
    """One collective (contract keys of the collective command's JSON)."""

    op: str
    total_bytes: Number
    devices: int
    network: str
    time_s: Number
    time_upper_s: Number
    bandwidth_time_s: Number
    latency_time_s: Number
    latency_bound: Number
    rule_of_thumb_latency_bound: Number
    latency_bound_below_bytes: float
    spec_time_s: Number = 0.0
    sources: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def collective(
    hw: HardwareSpec,
    op: str,
    total_bytes: Number,
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
        raise OptionError(
            f"total_bytes must be positive and finite (got {shown(total_bytes)})", parameters=("total_bytes",)
        )
    dcn_source = "hardware file"
    if dcn_bandwidth_bytes_per_s is not None:
        if not 0 < dcn_bandwidth_bytes_per_s < float("inf"):
            raise OptionError(
                f"dcn_bandwidth_bytes_per_s must be positive and finite (got {shown(dcn_bandwidth_bytes_per_s)})",
                parameters=("dcn_bandwidth_bytes_per_s",),
            )
        hw = hw.model_copy(
            update={
                "dcn_bandwidth_bytes_per_s": float(dcn_bandwidth_bytes_per_s),
                "dcn_latency_s": hw.dcn_latency_s or 1e-5,
            }
        )
        dcn_source = "command line"
    layout = fabric.layout_for(hw, devices, topology_text, axes, wraparound)
    t = fabric.collective_on(hw, layout, op, v)
    n = layout.devices
    time_s, time_upper_s, hw_source = t.time_s, t.time_upper_s, f"spec sheet ({hw.source or hw.name})"
    fitted = _fitted_collective(hw, op, v, n)
    if fitted is not None:
        time_s, family = fitted
        time_upper_s = time_s
        hw_source = f"calibrated profile ({op}, {family}, fitted at {n} devices); spec sheet for the bounds"
    return CollectiveResult(
        op=op,
        total_bytes=v,
        devices=n,
        network=layout.describe(hw),
        time_s=time_s,
        time_upper_s=time_upper_s,
        bandwidth_time_s=t.bandwidth_time_s,
        latency_time_s=t.latency_time_s,
        latency_bound=t.latency_bound,
        rule_of_thumb_latency_bound=np.asarray(
            collectives.is_latency_bound(v, n, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s)
        ),
        latency_bound_below_bytes=float(
            collectives.latency_bound_bytes(n, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s)
        ),
        spec_time_s=t.time_upper_s,
        sources={
            "hardware": hw_source,
            "formulas": fabric.PART3,
            "dcn": dcn_source,
            **fabric.link_summary(hw, layout),
        },
    )


def _fitted_collective(hw: HardwareSpec, op: str, total_bytes: Number, devices: int) -> tuple[Number, str] | None:
    """(seconds, kernel family) from a profile fitted at ``devices``, else None (spec sheet)."""
    if hw.calibration is None:
        return None
    per_device = total_bytes / devices if op == "alltoall" else total_bytes
    try:
        return kernels.collective_time_s(hw, op, per_device, devices)
    except KeyError:
        return None


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
    """How far each kind of sharding scales (contract keys of the shard command's JSON)."""

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
    sequence_sharding_comms_s: Number
    step_time_s: Number
    local_step_time_s: Number
    comms_time_s: Number
    step_time_lower_s: Number
    step_time_upper_s: Number
    bound: str | np.ndarray
    moe: dict[str, float | None] | None
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def shard_limits(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    batch: int,
    context: int = DEFAULT_CONTEXT,
    precision: Precision = DEFAULT_PRECISION,
    tp: int | None = None,
    topology_text: str | None = None,
    expert_ways: int | None = None,
) -> ShardResult:
    """Model-parallel limits (decode, prefill, latency), KV sharding, 1D vs 2D, MoE experts, sharded step."""
    if expert_ways is not None and not model.is_moe:
        raise OptionError(
            f"expert_ways={expert_ways}: the model has no routed experts (splitting experts needs an MoE model)",
            parameters=("expert_ways",),
        )
    res = decode_step(
        model,
        hw,
        chips,
        batch,
        context,
        precision,
        tp=tp if tp is not None else (None if topology_text else chips),
        topology_text=topology_text,
    )
    degree = int(res.tp)
    # Usable one-way ICI bandwidth per chip of the tp group: 2 links per wrapped axis (book part 3).
    layout = fabric.tp_layout(hw, degree, topology_text)
    w_ici = fabric.usable_bandwidth_bytes_per_s(hw, layout)
    q_bytes = sharding.attention_query_bytes(batch, model.num_heads, model.head_dim, dtype_bytes(precision.compute))
    sequence_comms = sharding.sequence_sharding_comms_time_s(
        model.num_layers,
        fabric.collective_on(hw, layout, "allgather", q_bytes).time_s,
        fabric.collective_on(hw, layout, "allreduce", q_bytes).time_s,
    )
    rates = chip_rates(hw, precision.compute)
    beta = float(sharding.hbm_to_ici_ratio(rates.hbm_bandwidth_bytes_per_s, w_ici))
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
        latency_bound_above_tp=float(
            collectives.latency_bound_model_parallelism(act_bytes, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s)
        ),
        kv_head_shards=int(sharding.kv_head_shards(model.num_kv_heads, degree)),
        kv_batch_shards=int(sharding.kv_batch_shards(model.num_kv_heads, degree)),
        attention_alltoalls_per_layer=int(sharding.attention_alltoalls_per_layer(model.num_kv_heads, degree)),
        comms_1d_s=float(sharding.model_parallel_1d_comms_s(batch, model.d_model, hw.ici_bandwidth_bytes_per_s)),
        comms_2d_s=float(
            sharding.optimal_2d_comms_s(batch, model.d_model, model.d_ff, chips, hw.ici_bandwidth_bytes_per_s)
        ),
        weight_stationary_2d_crossover_chips=float(
            sharding.weight_stationary_2d_crossover_chips(model.d_model, model.d_ff)
        ),
        sequence_sharding_comms_s=sequence_comms,
        step_time_s=res.step_time_s,
        local_step_time_s=res.local_step_time_s,
        comms_time_s=res.comms_time_s,
        step_time_lower_s=res.step_time_lower_s,
        step_time_upper_s=res.step_time_upper_s,
        bound=res.bound,
        moe=moe_sharding(model, hw, chips, batch, precision, expert_ways) if model.is_moe else None,
        sources={
            "hardware": rates.source,
            "model": model.source or model.name,
            "formulas": f"{BOOK}, 'Distributing inference over multiple accelerators', problems 6-7, appendices B-C",
            "comms": res.sources["comms"],
        },
    )


def moe_sharding(
    model: ModelSpec, hw: HardwareSpec, chips: int, batch: int, precision: Precision, expert_ways: int | None
) -> dict[str, float | None]:
    """Expert sharding [E_Z, D, F_Y]: bytes and weight-load time per chip, free HBM, smallest slice."""
    parts = memory.component_bytes(model, precision.bytes_by_component)
    expert_bytes = (
        parts["experts"] + parts["expert_other"]
        if precision.mixed
        else float(memory.param_bytes(memory.routed_expert_params(model), precision.weight_bytes))
    )
    other_bytes = memory.model_weight_bytes(model, precision.bytes_by_component) - expert_bytes
    if expert_ways is None:
        z, y, per_chip = sharding.best_expert_split(chips, model.num_experts, expert_bytes, other_bytes)
    else:
        if expert_ways < 1 or chips % expert_ways or model.num_experts % expert_ways:
            raise OptionError(
                f"expert_ways={expert_ways} must divide both chips={chips} and the {model.num_experts} experts",
                parameters=("expert_ways", "chips"),
            )
        z, y = expert_ways, chips // expert_ways
        per_chip = float(sharding.expert_sharded_bytes_per_chip(expert_bytes, other_bytes, z, y))
    smallest = sharding.smallest_slice_for_experts(
        slice_sizes(hw), hw.hbm_bytes, model.num_experts, expert_bytes, other_bytes
    )
    rates = chip_rates(hw, precision.compute)
    return {
        "expert_ways": z,
        "model_ways": y,
        "weight_bytes_per_chip": per_chip,
        "weight_load_time_s": float(step.weight_load_time_s(per_chip, rates.hbm_bandwidth_bytes_per_s)),
        "free_hbm_per_chip_bytes": float(sharding.free_hbm_per_chip(hw.hbm_bytes, per_chip)),
        "smallest_slice_chips": smallest[0] if smallest else None,
        "experts_touched_per_step": float(
            memory.expected_experts_touched(model.num_experts, model.experts_per_token, batch)
        ),
        "weight_bytes_read_per_step": float(memory.weight_bytes_read(model, precision.bytes_by_component, batch)),
    }


# --------------------------------------------------------------------------- serving engines


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
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
) -> ServeResult:
    """A serving design of ``model`` on ``chips`` of ``hw`` (see :func:`roofline.analyses.serve.serve`)."""
    dep = deployment(model, hw, chips, precision, tp=tp, pp=pp, ep=ep, memory_utilization=memory_utilization)
    return engines.serve(
        dep,
        mode,
        input_len,
        output_len,
        batch,
        mfu,
        arrival_rate,
        prefix_len,
        prefix_hit_rate,
        num_prefixes,
        prefix_store,
        draft_model,
        draft_len,
        acceptance,
    )
