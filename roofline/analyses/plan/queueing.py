"""Queueing closed forms of capacity planning: pure functions of numbers that broadcast.

They invert the book's decode step time B·KV/W + max(2·B·P/C, P_bytes/W) ("Theoretical estimates
for LLM latency and throughput") and size a replica under one queueing approximation, stated once:

* TTFT = prefill time + the M/G/1 (Pollaczek-Khinchine) wait λ·E[S²]/(2(1-ρ)) on each replica,
  S the prefill time of a request drawn from the length distribution, ρ = λ·E[S];
* prefill shares the replica's chips with decode, so TPOT = decode step / (1 - ρ);
* Little's law: a replica holds λ·(TTFT + (E[O] - 1)·TPOT) sequences, at most B;
  replicas = ceil(qps / λ_max), λ_max the largest per-replica rate meeting all three limits.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.units import HOUR_S
from roofline.formulas.serving import littles_law_concurrency
from roofline.model.memory import Number


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


def latencies(rate: float, p_mean: float, p_sq: float, step_s: float, decode_steps: float) -> dict[str, float]:
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
