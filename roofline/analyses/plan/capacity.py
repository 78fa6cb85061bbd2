"""Capacity planning: inverse questions in closed form, and the cheapest deployment meeting SLOs.

Closed forms (pure functions of numbers, broadcasting) invert the book's decode step time
B·KV/W + max(2·B·P/C, P_bytes/W) ("Theoretical estimates for LLM latency and throughput").

The search (:func:`plan`) evaluates every chips × batch × dtype configuration of each chip with
one :func:`roofline.analyses.sweep.run.decode_sweep` (decode steps, tensor-parallel collectives included, points
that overflow HBM dropped) and :func:`roofline.analyses.step.request` (prefill), then sizes replicas.
Its queueing approximation, stated once:

* TTFT = prefill time + the M/G/1 (Pollaczek-Khinchine) wait λ·E[S²]/(2(1-ρ)) on each replica,
  S the prefill time of a request drawn from the length distribution, ρ = λ·E[S];
* prefill shares the replica's chips with decode, so TPOT = decode step / (1 - ρ);
* the decode step is taken at the full batch B and the decode-step-weighted mean context, with
  tensor parallelism over the whole replica (collectives overlapped, as the sweep reports it);
* Little's law: a replica holds λ·(TTFT + (E[O] - 1)·TPOT) sequences, at most B;
  replicas = ceil(qps / λ_max), λ_max the largest per-replica rate meeting all three limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.lengths import LengthDistribution, weighted_mean
from roofline.analyses.step import BOOK, Precision, decode_step, request_from
from roofline.analyses.sweep.run import decode_sweep
from roofline.core.errors import OptionError, shown
from roofline.core.units import HOUR_S
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, deployment
from roofline.formulas.cost import cost_per_hour
from roofline.formulas.serving import littles_law_concurrency
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec

SECTION = f"{BOOK}, 'Theoretical estimates for LLM latency and throughput'"

# --------------------------------------------------------------------------- closed forms


def kv_crossover_batch(weight_bytes: ArrayLike, kv_bytes_per_seq: ArrayLike) -> Number:
    """Batch where KV reads equal weight reads: B·KV_seq = P_bytes, so B* = P_bytes / KV_seq."""
    return np.divide(weight_bytes, kv_bytes_per_seq)


def bandwidth_for_tpot(
    tpot_s: ArrayLike,
    batch: ArrayLike,
    kv_bytes_per_seq: ArrayLike,
    weight_bytes: ArrayLike,
    compute_time_s: ArrayLike,
) -> Number:
    """HBM bytes/s for step ≤ T: max((B·KV + P_bytes)/T, B·KV/(T - 2BP/C)); inf if T ≤ 2BP/C."""
    t = np.asarray(tpot_s, dtype=float)
    kv = np.multiply(batch, kv_bytes_per_seq)
    room = t - np.asarray(compute_time_s, dtype=float)
    with np.errstate(divide="ignore"):
        compute_side = np.where(room > 0, kv / np.where(room > 0, room, 1.0), np.inf)
    return np.maximum(np.add(kv, weight_bytes) / t, compute_side)


def chips_for_tpot(step_time_one_chip_s: ArrayLike, tpot_s: ArrayLike) -> Number:
    """Chips for a TPOT target: every term of the step scales as 1/n, so n = ceil(step(1) / T)."""
    return np.ceil(np.divide(step_time_one_chip_s, tpot_s) - 1e-9)


def mg1_wait_s(arrival_rate: ArrayLike, mean_service_s: ArrayLike, mean_service_sq_s2: ArrayLike) -> Number:
    """Pollaczek-Khinchine M/G/1 delay λ·E[S²]/(2(1 - λE[S])), inf at ρ ≥ 1 (serving.md1_wait_s: E[S²] = E[S]²)."""
    lam = np.asarray(arrival_rate, dtype=float)
    rho = lam * np.asarray(mean_service_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = lam * np.asarray(mean_service_sq_s2, dtype=float) / (2.0 * (1.0 - rho))
    return np.where(rho < 1.0, wait, np.inf)


def rate_for_ttft(ttft_slo_s: ArrayLike, mean_prefill_s: ArrayLike, mean_prefill_sq_s2: ArrayLike) -> Number:
    """Largest λ with E[S] + λE[S²]/(2(1-λE[S])) ≤ SLO: λ = 2a/(E[S²] + 2a·E[S]), a = SLO - E[S]."""
    a = np.subtract(ttft_slo_s, mean_prefill_s)
    rate = 2.0 * a / (np.asarray(mean_prefill_sq_s2) + 2.0 * a * np.asarray(mean_prefill_s))
    return np.where(a > 0, rate, 0.0)


def rate_for_tpot(tpot_slo_s: ArrayLike, step_time_s: ArrayLike, mean_prefill_s: ArrayLike) -> Number:
    """Largest λ with step/(1 - λ·E[S]) ≤ SLO: λ = (1 - step/SLO) / E[S] (0 if step > SLO)."""
    return np.maximum(1.0 - np.divide(step_time_s, tpot_slo_s), 0.0) / np.asarray(mean_prefill_s, dtype=float)


def sequences_in_flight(
    rate: ArrayLike,
    mean_prefill_s: ArrayLike,
    mean_prefill_sq_s2: ArrayLike,
    step_time_s: ArrayLike,
    decode_steps: ArrayLike,
) -> Number:
    """Little's law L = λ·W with W = TTFT(λ) + n·step/(1 - λE[S]), TTFT(λ) = E[S] + M/G/1 wait."""
    lam = np.asarray(rate, dtype=float)
    rho = lam * np.asarray(mean_prefill_s, dtype=float)
    ttft = np.add(mean_prefill_s, mg1_wait_s(lam, mean_prefill_s, mean_prefill_sq_s2))
    with np.errstate(divide="ignore", invalid="ignore"):
        decode = np.multiply(decode_steps, step_time_s) / (1.0 - rho)
    return np.where(rho < 1.0, littles_law_concurrency(lam, ttft + decode), np.inf)


def rate_for_concurrency(
    batch: ArrayLike,
    mean_prefill_s: ArrayLike,
    mean_prefill_sq_s2: ArrayLike,
    step_time_s: ArrayLike,
    decode_steps: ArrayLike,
    iterations: int = 60,
) -> Number:
    """Largest λ whose sequences in flight fit the batch B (bisection; in-flight grows with λ)."""
    hi = np.broadcast_to(
        1.0 / np.asarray(mean_prefill_s, dtype=float),
        np.broadcast_shapes(np.shape(batch), np.shape(mean_prefill_s), np.shape(step_time_s)),
    ).copy()
    lo = np.zeros_like(hi)
    for _ in range(iterations):
        mid = (lo + hi) / 2.0
        ok = sequences_in_flight(mid, mean_prefill_s, mean_prefill_sq_s2, step_time_s, decode_steps) <= batch
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return lo


def replicas_needed(qps: ArrayLike, rate_per_replica: ArrayLike) -> Number:
    """ceil(qps / per-replica rate); inf where a replica can carry no traffic."""
    r = np.asarray(rate_per_replica, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(r > 0, np.ceil(np.divide(qps, np.where(r > 0, r, 1.0)) - 1e-9), np.inf)


def cost_per_million_output_tokens(dollars_per_hour: ArrayLike, qps: ArrayLike, mean_output: ArrayLike) -> Number:
    """$ per 1e6 generated tokens: $/h / (qps·E[O]·3600) · 1e6."""
    return np.divide(dollars_per_hour, np.multiply(qps, mean_output) * HOUR_S) * 1e6


@dataclass(frozen=True)
class InverseAnswers:
    """The closed-form inverse questions for one configuration (SI units; inf where impossible)."""

    longest_context_tokens: float
    kv_crossover_batch: float
    bandwidth_for_tpot_bytes_per_s: float
    bandwidth_per_chip_for_tpot_bytes_per_s: float
    chips_for_tpot: float
    min_chips_for_memory: float
    max_batch_for_tpot: float
    max_batch_for_memory: float
    step_time_s: float
    tpot_s: float
    sources: dict[str, str] = field(default_factory=dict)


def inverse_questions(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    batch: int,
    context: int,
    tpot_s: float,
    precision: Precision | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
) -> InverseAnswers:
    """Longest context at B; batch where KV reads overtake weights; HBM bandwidth, chips and batch for T.

    Weight bytes are those read at this batch (MoE: the experts touched); a calibrated
    profile's fixed overhead is taken off the target first, since the closed forms have none.
    """
    if not tpot_s > 0:
        raise OptionError(f"tpot_s must be positive (got {shown(tpot_s)})", parameters=("tpot_s",))
    precision = precision or Precision()
    res = decode_step(model, hw, chips, batch, context, precision, memory_utilization=memory_utilization)
    weights_read = float(memory.weight_bytes_read(model, precision.bytes_by_component, batch))
    kv_seq = float(memory.cache_bytes_per_sequence(model, context, precision.kv_bytes))
    target = tpot_s - float(res.overhead_time_s)
    one_chip = decode_step(model, hw, 1, batch, context, precision)
    bandwidth = float(bandwidth_for_tpot(target, batch, kv_seq, weights_read, res.compute_time_s))
    return InverseAnswers(
        longest_context_tokens=float(res.max_context),
        kv_crossover_batch=float(kv_crossover_batch(weights_read, kv_seq)),
        bandwidth_for_tpot_bytes_per_s=bandwidth,
        bandwidth_per_chip_for_tpot_bytes_per_s=bandwidth / chips,
        chips_for_tpot=float(chips_for_tpot(float(one_chip.step_time_s) - float(one_chip.overhead_time_s), target))
        if target > 0
        else np.inf,
        min_chips_for_memory=float(res.min_chips),
        max_batch_for_tpot=largest_batch_within(model, hw, chips, context, precision, tpot_s),
        max_batch_for_memory=float(res.max_batch),
        step_time_s=float(res.step_time_s),
        tpot_s=tpot_s,
        sources={**res.sources, "inverse": f"{SECTION}: the step-time formula solved for S, B, W and chips"},
    )


def largest_batch_within(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    context: int,
    precision: Precision,
    tpot_s: float,
    limit: int = 1 << 16,
) -> float:
    """Largest batch whose decode step (the step model's prediction) is ≤ T; 0 if none (a search, no formula)."""
    batches = np.arange(1, limit + 1, dtype=float)
    steps = np.asarray(decode_step(model, hw, chips, batches, context, precision).step_time_s, dtype=float)
    ok = np.flatnonzero(steps <= tpot_s)
    return float(batches[ok[-1]]) if ok.size else 0.0


# --------------------------------------------------------------------------- search

#: Dtypes the search tries by default (weights × KV cache; matmuls in bf16).
WEIGHT_DTYPES = ("bf16", "int8")
KV_DTYPES = ("bf16", "int8")
BATCHES = tuple(2**k for k in range(0, 11))


@dataclass(frozen=True)
class Deployment:
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


@dataclass(frozen=True)
class PlanResult:
    """The cheapest deployment (None if nothing meets the targets) and the runners-up."""

    best: Deployment | None
    candidates: list[Deployment]
    qps: float
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    lengths: str
    evaluated: int
    feasible: int
    reasons: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    best_per_hardware: dict[str, Deployment] = field(default_factory=dict)


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


def _chip_axis(hardware: Sequence[HardwareSpec], max_chips: int) -> np.ndarray:
    """Powers of two up to ``max_chips`` (a replica stays within one chip's ICI/NVLink domain)."""
    top = max(min(hw.max_ici_domain_chips or max_chips, max_chips) for hw in hardware)
    return np.array([2**k for k in range(0, 20) if 2**k <= top], dtype=np.int64)


def _prefill_moments(
    model: ModelSpec,
    hw: HardwareSpec,
    layout: tuple[int, int, int],
    lengths: LengthDistribution,
    precision: Precision,
    mfu: float,
    memory_utilization: float,
    ep: int | None = None,
    engine: str | None = None,
) -> tuple[float, float, float, float]:
    """E[S] and E[S²] of one request's prefill (analysis.request, batch 1) on a (chips, tp, pp) slice,
    and the memory of its tightest request on the replica that holds it, with that replica's usable
    HBM (request's check, :func:`~roofline.analyses.step.held_memory`: KV at I + O beside its prefill)."""
    chips, tp, pp = layout
    dep = deployment(
        model,
        hw,
        chips,
        precision,
        tp=tp,
        pp=pp if pp > 1 else None,
        ep=ep,
        memory_utilization=memory_utilization,
        engine=engine,
    )
    res = request_from(dep, lengths.input_len, lengths.output_len, 1, mfu)
    ttft = np.asarray(res.ttft_s, dtype=float)
    need, room = (
        np.broadcast_to(np.asarray(v, dtype=float), ttft.shape) for v in (res.replica_bytes, res.replica_usable_bytes)
    )
    worst = int(np.argmax(need - room))
    return (
        float(weighted_mean(ttft, lengths.weight)),
        float(weighted_mean(ttft**2, lengths.weight)),
        float(need[worst]),
        float(room[worst]),
    )


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
) -> PlanResult:
    """Cheapest $/hour over chips × batch × dtypes (one :func:`sweep.decode_sweep`) meeting the targets."""
    if not 0 < qps < float("inf"):
        raise OptionError(f"qps must be positive and finite (got {shown(qps)})", parameters=("qps",))
    for name, slo in (("ttft_slo_s", ttft_slo_s), ("tpot_slo_s", tpot_slo_s)):
        if slo is not None and not slo > 0:
            raise OptionError(f"{name} must be positive seconds (got {shown(slo)})", parameters=(name,))
    if not hardware:
        raise OptionError("hardware: give at least one chip", parameters=("hardware",))
    prices = dict(prices or {})
    by_name = {hw.name: hw for hw in hardware}
    sw = decode_sweep(
        model,
        hardware,
        batch=np.asarray(batches),
        chips=_chip_axis(hardware, max_chips),
        context=(int(round(lengths.decode_context)),),
        weights=weights,
        kv_dtypes=kv_dtypes,
        prices=prices,
        tp=tp,
        pp=pp,
        memory_utilization=memory_utilization,
        ep=ep,
        engine=engine,
    )
    cols = sw.columns
    hw_col, w_col, kv_col = sw.column("hardware"), sw.column("weights"), sw.column("kv_dtype")
    chips, batch = cols["chips"].astype(float), cols["batch"].astype(float)
    domain = np.array([by_name[h].max_ici_domain_chips or max_chips for h in hw_col], dtype=float)
    in_domain = (chips <= domain) & (chips <= max_chips)
    # Prefill moments per block (chip × dtypes), vectorised over the block's slice sizes; and every
    # request must fit on its own beside the weights (longest: the tightest one's bytes).
    p_mean, p_sq = np.ones_like(chips), np.ones_like(chips)
    longest, usable_hbm = np.zeros_like(chips), np.ones_like(chips)
    for index, blk in enumerate(sw.blocks):
        rows = np.flatnonzero(cols["block"] == index)
        if rows.size:
            prec = Precision(blk["weights"], blk["kv_dtype"], blk["compute_dtype"])
            for key in {(int(chips[r]), int(cols["tp"][r]), int(cols["pp"][r])) for r in rows}:
                sel = rows[(chips[rows] == key[0]) & (cols["tp"][rows] == key[1]) & (cols["pp"][rows] == key[2])]
                p_mean[sel], p_sq[sel], longest[sel], usable_hbm[sel] = _prefill_moments(
                    model, by_name[blk["hardware"]], key, lengths, prec, mfu, memory_utilization, ep, engine
                )
    usable = in_domain & np.asarray(memory.fits_in_memory(longest, usable_hbm))
    step_s = cols["step_time_s"]
    decode_steps = max(lengths.mean_output - 1.0, 0.0)
    inf = np.full(step_s.shape, np.inf)
    limits = {
        "concurrency": rate_for_concurrency(batch, p_mean, p_sq, step_s, decode_steps),
        "TTFT SLO": rate_for_ttft(ttft_slo_s, p_mean, p_sq) if ttft_slo_s else inf,
        "TPOT SLO": rate_for_tpot(tpot_slo_s, step_s, p_mean) if tpot_slo_s else inf,
    }
    rate = np.minimum.reduce(list(limits.values()))
    ok = usable & (rate > 0)
    reasons = {
        "memory": sw.dropped_out_of_memory + int(np.sum(in_domain & ~usable)),
        "TTFT SLO": int(np.sum(usable & (limits["TTFT SLO"] <= 0))),
        "TPOT SLO": int(np.sum(usable & (limits["TPOT SLO"] <= 0))),
    }
    price = np.array([prices.get(h, by_name[h].price_per_chip_hour) for h in hw_col], dtype=float)
    replicas = replicas_needed(qps, rate)
    dollars = np.where(ok, cost_per_hour(price, chips * replicas), np.inf)
    ranked = [int(i) for i in np.lexsort((step_s, dollars)) if ok[i]]
    step_of = {(int(cols["block"][i]), int(chips[i]), int(batch[i])): float(step_s[i]) for i in range(step_s.size)}

    def deployment(i: int) -> Deployment:
        bigger = step_of.get((int(cols["block"][i]), int(chips[i]), int(batch[i]) * 2))
        binding = binding_constraint(
            {k: float(v[i]) for k, v in limits.items()},
            bigger is not None,
            bigger if bigger is not None else np.inf,
            tpot_slo_s,
        )
        if replicas[i] == 1 and longest[i] > usable_hbm[i] / 2:
            binding = "memory"  # one replica carries the traffic; holding the weights sets its size
        return Deployment(
            hardware=str(hw_col[i]),
            chips_per_replica=int(chips[i]),
            tp=int(cols["tp"][i]),
            sharding=f"tensor-parallel over {int(cols['tp'][i])} chips"
            + (f" x {int(cols['pp'][i])} pipeline stages" if cols["pp"][i] > 1 else "")
            + f" within a replica, {int(replicas[i])} data-parallel replica(s)",
            batch=int(batch[i]),
            weights=str(w_col[i]),
            kv_dtype=str(kv_col[i]),
            replicas=int(replicas[i]),
            total_chips=int(chips[i] * replicas[i]),
            dollars_per_hour=float(dollars[i]),
            cost_per_million_output_tokens=float(cost_per_million_output_tokens(dollars[i], qps, lengths.mean_output)),
            **_latencies(qps / replicas[i], p_mean[i], p_sq[i], step_s[i], decode_steps),
            memory_bytes=float(cols["total_bytes"][i]),
            hbm_bytes=float(cols["hbm_capacity_bytes"][i]),
            binding=binding,
            price_per_chip_hour=float(price[i]),
            pp=int(cols["pp"][i]),
        )

    chosen = [deployment(i) for i in ranked[:top]]
    per_hardware: dict[str, Deployment] = {}
    for i in ranked:
        if str(hw_col[i]) not in per_hardware:
            per_hardware[str(hw_col[i])] = deployment(i)
    sources = {
        **sw.sources,
        "queueing": "M/G/1 prefill wait, TPOT / (1 - ρ), Little's law (roofline.analyses.plan.capacity)",
        "lengths": lengths.source,
        "prefill": f"{BOOK}: analysis.request, batch 1, MFU {mfu:g}",
    }
    return PlanResult(
        chosen[0] if chosen else None,
        chosen,
        qps,
        ttft_slo_s,
        tpot_slo_s,
        lengths.source,
        sw.evaluated,
        int(np.sum(ok)),
        reasons,
        sources,
        per_hardware,
    )


def _latencies(rate: float, p_mean: float, p_sq: float, step_s: float, decode_steps: float) -> dict[str, float]:
    """TTFT, TPOT, latency and occupancy of a replica at request rate λ (the module's queueing model)."""
    rho = rate * p_mean
    ttft = p_mean + float(mg1_wait_s(rate, p_mean, p_sq))
    tpot = step_s / (1.0 - rho)
    return {
        "ttft_s": float(ttft),
        "prefill_s": float(p_mean),
        "tpot_s": float(tpot),
        "decode_step_s": float(step_s),
        "request_latency_s": float(ttft + decode_steps * tpot),
        "rate_per_replica": float(rate),
        "sequences_per_replica": float(sequences_in_flight(rate, p_mean, p_sq, step_s, decode_steps)),
        "prefill_utilisation": float(rho),
    }
