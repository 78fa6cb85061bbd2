"""Capacity planning: the cheapest deployment that meets the SLOs at one steady request rate.

:func:`plan` evaluates every candidate shape (:mod:`roofline.analyses.plan.shapes`: one decode sweep and
one prefill request per slice), sizes each shape's replicas for the rate under the queueing model of
:mod:`roofline.analyses.plan.queueing` (M/G/1 prefill wait, TPOT / (1 - ρ), Little's law), adds the
failure headroom asked for (:mod:`roofline.analyses.plan.spares`) and ranks by $/hour.  The closed
forms and the inverse questions live in their own modules and stay importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from roofline.analyses.executors import ExecutorConfig
from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.plan.inverse import SECTION, InverseAnswers, inverse_questions, largest_batch_within
from roofline.analyses.plan.queueing import (
    bandwidth_for_tpot,
    chips_for_tpot,
    cost_per_million_output_tokens,
    kv_crossover_batch,
    latencies,
    mg1_wait_s,
    rate_for_concurrency,
    rate_for_tpot,
    rate_for_ttft,
    replicas_needed,
    sequences_in_flight,
)
from roofline.analyses.plan.shapes import (
    BATCHES,
    KV_DTYPES,
    LIMITS,
    WEIGHT_DTYPES,
    SearchSpace,
    ShapeTable,
    Targets,
    candidate_shapes,
)
from roofline.analyses.plan.spares import Spares, check_spares_below, describe, node_size, replicas_lost
from roofline.analyses.step import BOOK
from roofline.core.checks import check_instance, check_scalar
from roofline.core.errors import OptionError, shown
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.deploy.deployment import check_hardware_list, check_model
from roofline.formulas.cost import cost_per_hour
from roofline.specs import HardwareSpec, ModelSpec

__all__ = [
    "BATCHES",
    "KV_DTYPES",
    "SECTION",
    "WEIGHT_DTYPES",
    "Deployment",
    "InverseAnswers",
    "PlanCandidate",
    "PlanConfig",
    "PlanResult",
    "Resilience",
    "SearchSpace",
    "Targets",
    "bandwidth_for_tpot",
    "binding_constraint",
    "chips_for_tpot",
    "cost_per_million_output_tokens",
    "inverse_questions",
    "kv_crossover_batch",
    "largest_batch_within",
    "mg1_wait_s",
    "plan",
    "plan_with",
    "rate_for_concurrency",
    "rate_for_tpot",
    "rate_for_ttft",
    "replicas_needed",
    "sequences_in_flight",
]


@dataclass(frozen=True)
class PlanCandidate:
    """One candidate deployment and every number the plan reports about it (SI units)."""

    hardware: str
    chips_per_replica: int
    tp: int
    sharding: str
    batch: int
    weights: str
    kv_dtype: str
    replicas: int
    total_chips: int
    dollars_per_hour: float
    cost_per_million_output_tokens: float
    ttft_s: float
    prefill_s: float
    tpot_s: float
    decode_step_s: float
    request_latency_s: float
    rate_per_replica: float
    sequences_per_replica: float
    prefill_utilisation: float
    memory_bytes: float
    hbm_bytes: float
    binding: str
    price_per_chip_hour: float
    pp: int = 1
    #: Replicas beyond the load's need, so the SLOs hold with the spares' failures (0: no headroom).
    spare_replicas: int = 0
    #: Expert-parallel degree and attention data-parallel ranks of a replica (1: none).
    ep: int = 1
    attention_dp: int = 1
    #: Matmul dtype of the replica (per-component form, e.g. 'fp8_block,experts=nvfp4').
    compute_dtype: str = "bf16"


#: The plan's candidate was called ``Deployment`` before the deployment layer's class took the name.
Deployment = PlanCandidate


@dataclass(frozen=True)
class Resilience:
    """What surviving failures costs: the plain plan (no headroom) beside the resilient best."""

    spares: Spares
    plain: PlanCandidate | None
    extra_replicas: int
    extra_dollars_per_hour: float
    node_chips: dict[str, int]
    source: str


@dataclass(frozen=True)
class PlanResult:
    """The cheapest deployment (None if nothing meets the targets) and the runners-up."""

    best: PlanCandidate | None
    candidates: list[PlanCandidate]
    qps: float
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    lengths: str
    evaluated: int
    feasible: int
    reasons: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    best_per_hardware: dict[str, PlanCandidate] = field(default_factory=dict)
    resilience: Resilience | None = None


@dataclass(frozen=True)
class PlanConfig:
    """Everything a plan needs beyond the model, the chips, the rate and the lengths."""

    targets: Targets = Targets()
    space: SearchSpace = SearchSpace()
    spares: Spares = Spares()
    max_replicas: int | None = None
    top: int = 10
    #: Where the shapes are evaluated: a Ray executor runs each chip's sweep as a task (None: here).
    executor: ExecutorConfig | None = None


def binding_constraint(
    limits: dict[str, float], larger_batch_fits: bool, larger_batch_step_s: float, tpot_slo_s: float | None
) -> str:
    """Name what sets the replica count: the smallest per-replica rate limit; when that is the
    batch (Little's law), say why the batch is not larger: memory, the TPOT SLO, or nothing (qps)."""
    name = min(limits, key=lambda k: limits[k])
    if name != "concurrency":
        return name
    if not larger_batch_fits:
        return "memory"
    if tpot_slo_s is not None and larger_batch_step_s > tpot_slo_s:
        return "TPOT SLO"
    return "qps"


def check_plan_inputs(qps: float, targets: Targets, hardware: Sequence[HardwareSpec]) -> None:
    """A positive finite rate, positive SLOs, at least one chip (one line naming the parameter)."""
    check_hardware_list(hardware)
    qps = check_scalar(qps, "qps", maximum=1e9)
    if not 0 < qps < float("inf"):
        raise OptionError(f"qps must be positive and finite (got {shown(qps)})", parameters=("qps",))
    for name, slo in (("ttft_slo_s", targets.ttft_slo_s), ("tpot_slo_s", targets.tpot_slo_s)):
        if slo is not None and not slo > 0:
            raise OptionError(f"{name} must be positive seconds (got {shown(slo)})", parameters=(name,))
    if not hardware:
        raise OptionError("hardware: give at least one chip", parameters=("hardware",))


def plan(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    qps: float,
    lengths: LengthDistribution,
    ttft_slo_s: float | None = None,
    tpot_slo_s: float | None = None,
    prices: dict[str, float] | None = None,
    max_chips: int = 256,
    batches: Sequence[int] = BATCHES,
    weights: Sequence[str] = WEIGHT_DTYPES,
    kv_dtypes: Sequence[str] = KV_DTYPES,
    mfu: float = 1.0,
    top: int = 10,
    tp: Sequence[int] | None = None,
    pp: Sequence[int] | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    ep: int | None = None,
    engine: str | None = None,
    spares: Spares | None = None,
    max_replicas: int | None = None,
    executor: ExecutorConfig | None = None,
) -> PlanResult:
    """Cheapest $/hour over chips × batch × dtypes (one :func:`sweep.decode_sweep`) meeting the targets."""
    space = SearchSpace(
        max_chips=max_chips,
        batches=tuple(int(b) for b in batches),
        weights=tuple(weights),
        kv_dtypes=tuple(kv_dtypes),
        tp=None if tp is None else tuple(int(t) for t in tp),
        pp=None if pp is None else tuple(int(p) for p in pp),
        ep=ep,
        mfu=mfu,
        memory_utilization=memory_utilization,
        engine=engine,
        prices=dict(prices or {}),
    )
    config = PlanConfig(Targets(ttft_slo_s, tpot_slo_s), space, spares or Spares(), max_replicas, top, executor)
    return plan_with(model, hardware, qps, lengths, config)


def plan_with(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    qps: float,
    lengths: LengthDistribution,
    config: PlanConfig,
    table: ShapeTable | None = None,
) -> PlanResult:
    """:func:`plan` with one config object; ``table`` reuses shapes already evaluated for ``lengths``."""
    check_model(model)
    check_instance(lengths, "lengths", LengthDistribution, "from roofline.fixed_lengths(2048, 256)")
    check_plan_inputs(qps, config.targets, hardware)
    check_spares_below(config.spares, config.max_replicas)
    if table is None:
        table = candidate_shapes(model, hardware, [lengths], config.targets, config.space, config.executor)
    by_name = {hw.name: hw for hw in hardware}
    nodes = {h: node_size(by_name[h], config.spares.node_chips) for h in set(table.fields["hardware"].tolist())}
    result = rank_at_rate(table, 0, qps, config, nodes)
    if not config.spares.any:
        return result
    plain = rank_at_rate(table, 0, qps, replace(config, spares=Spares(), top=1), nodes).best
    best = result.best
    resilience = Resilience(
        config.spares,
        plain,
        (best.replicas - plain.replicas) if (best and plain) else 0,
        (best.dollars_per_hour - plain.dollars_per_hour) if (best and plain) else float("nan"),
        {h: n for h, (n, _) in nodes.items()},
        f"SLOs hold with {describe(config.spares)}; " + "; ".join(s for _, s in nodes.values()),
    )
    return replace(result, resilience=resilience, sources={**result.sources, "spares": resilience.source})


def rank_at_rate(
    table: ShapeTable, j: int, qps: float, config: PlanConfig, nodes: dict[str, tuple[int, str]]
) -> PlanResult:
    """Size every shape's replicas for ``qps`` of workload ``j`` (plus the spares) and rank by $/hour."""
    lengths = table.workloads[j]
    rate = table.rate[:, j]
    node = np.array([nodes[h][0] for h in table.fields["hardware"]], dtype=np.int64)
    lost = replicas_lost(table.fields["chips"], node, config.spares)
    replicas = replicas_needed(qps, rate) + lost
    ok = rate > 0
    if config.max_replicas is not None:
        ok &= replicas <= config.max_replicas
    dollars = np.where(ok, cost_per_hour(table.price, table.chips * replicas), np.inf)
    ranked = [int(i) for i in np.lexsort((table.step_s[:, j], dollars)) if ok[i]]
    chosen = [candidate(table, i, j, qps, int(replicas[i]), int(lost[i]), config.targets) for i in ranked[: config.top]]
    per_hardware: dict[str, PlanCandidate] = {}
    for i in ranked:
        name = str(table.fields["hardware"][i])
        if name not in per_hardware:
            per_hardware[name] = candidate(table, i, j, qps, int(replicas[i]), int(lost[i]), config.targets)
    sources = {
        **table.sources,
        "queueing": "M/G/1 prefill wait, TPOT / (1 - ρ), Little's law (roofline.analyses.plan.queueing)",
        "lengths": lengths.source,
        "prefill": f"{BOOK}: analysis.request, batch 1, MFU {config.space.mfu:g}",
    }
    return PlanResult(
        chosen[0] if chosen else None,
        chosen,
        qps,
        config.targets.ttft_slo_s,
        config.targets.tpot_slo_s,
        lengths.source,
        table.evaluated,
        int(np.sum(ok)),
        dict(table.reasons[j]),
        sources,
        per_hardware,
    )


def candidate(
    table: ShapeTable, i: int, j: int, qps: float, replicas: int, spare: int, targets: Targets
) -> PlanCandidate:
    """Shape ``i`` serving ``qps`` of workload ``j`` on ``replicas`` replicas (``spare`` of them headroom)."""
    f, lengths = table.fields, table.workloads[j]
    chips, tp, pp, batch, ep, dp = (int(f[k][i]) for k in ("chips", "tp", "pp", "batch", "ep", "attention_dp"))
    serving = replicas - spare
    double = float(table.step_double_s[i, j])
    binding = binding_constraint(
        {k: float(table.limits[k][i, j]) for k in LIMITS}, np.isfinite(double), double, targets.tpot_slo_s
    )
    if serving == 1 and table.longest_bytes[i, j] > table.usable_bytes[i, j] / 2:
        binding = "memory"  # one replica carries the traffic; holding the weights sets its size
    dollars = float(cost_per_hour(table.price[i], chips * replicas))
    p_mean, p_sq, step_s = (float(a[i, j]) for a in (table.prefill_mean_s, table.prefill_sq_s2, table.step_s))
    return PlanCandidate(
        hardware=str(f["hardware"][i]),
        chips_per_replica=chips,
        tp=tp,
        sharding=(
            f"attention data-parallel over {dp} ranks of {tp} chip(s)" if dp > 1 else f"tensor-parallel over {tp} chips"
        )
        + (f", routed experts over {ep} chips" if ep > 1 else "")
        + (f" x {pp} pipeline stages" if pp > 1 else "")
        + f" within a replica, {replicas} data-parallel replica(s)",
        batch=batch,
        weights=str(f["weights"][i]),
        kv_dtype=str(f["kv_dtype"][i]),
        replicas=replicas,
        total_chips=chips * replicas,
        dollars_per_hour=dollars,
        cost_per_million_output_tokens=float(cost_per_million_output_tokens(dollars, qps, lengths.mean_output)),
        **latencies(qps / serving, p_mean, p_sq, step_s, max(lengths.mean_output - 1.0, 0.0)),
        memory_bytes=float(table.memory_bytes[i, j]),
        hbm_bytes=float(table.hbm_bytes[i, j]),
        binding=binding,
        price_per_chip_hour=float(table.price[i]),
        pp=pp,
        spare_replicas=spare,
        ep=ep,
        attention_dp=dp,
        compute_dtype=str(f["compute_dtype"][i]),
    )
