"""Serving-engine estimators: static, interleaved and disaggregated engines, continuous batching,
prefix caching and speculative decoding.

Formulas follow "All About Transformer Inference" (part 7), "Designing an effective inference
engine" and appendix D (speculative sampling), plus part 8's disaggregation example (910 ms
prefills, 19 ms steps at batch 32 and 512-token outputs give about 3 prefill servers per
generate server).  Inputs are step and prefill times already estimated (see
``roofline.formulas.step``); everything is pure and broadcasts over numpy arrays.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.memory import Number

#: The engine designs the serve analysis models (its ``mode``).
MODES = ("static", "interleaved", "disaggregated", "mixed")


# --------------------------------------------------------------------------- engine designs


def static_ttft_s(batch_prefill_s: ArrayLike) -> Number:
    """Static batching: every user waits for the whole batch's prefill, TTFT = prefill(B prompts)."""
    return np.asarray(batch_prefill_s, dtype=float)


def static_cycle_s(batch_prefill_s: ArrayLike, output_len: ArrayLike, step_s: ArrayLike) -> Number:
    """One static-batching cycle: prefill of the batch (it yields token 1), then O − 1 decode steps."""
    return np.add(batch_prefill_s, np.multiply(np.subtract(output_len, 1.0), step_s))


def prompts_per_step(batch: ArrayLike, output_len: ArrayLike) -> Number:
    """New prompts per decode step at steady state: B slots free every O steps, B/O (an interleaved
    engine prefills them one at a time between steps; a mixed engine carries them in the step)."""
    return np.divide(batch, output_len)


#: The interleaved engine's name for :func:`prompts_per_step` (batch-1 prefills inserted per step).
interleaved_prefills_per_step = prompts_per_step


def interleaved_tpot_s(step_s: ArrayLike, prefill_s: ArrayLike, batch: ArrayLike, output_len: ArrayLike) -> Number:
    """Interleaved TPOT: each step plus the stall of B/O batch-1 prefills that pause decoding."""
    return np.add(step_s, np.multiply(interleaved_prefills_per_step(batch, output_len), prefill_s))


def mixed_resident_seqs(batch: ArrayLike, output_len: ArrayLike) -> Number:
    """Sequences a mixed engine holds in HBM: its B decodes plus the ⌈B/O⌉ prompts it is prefilling
    (B/O a step when B ≥ O; below, the one prompt being prefilled in chunks)."""
    return np.add(batch, np.ceil(prompts_per_step(batch, output_len)))


def mixed_max_batch(max_seqs: int, output_len: int) -> int:
    """Largest B with B + ⌈B/O⌉ ≤ N (N sequences fit): ⌊N·O/(O + 1)⌋, since B + ⌈B/O⌉ < B(1 + 1/O) + 1."""
    return (max(int(max_seqs), 0) * int(output_len)) // (int(output_len) + 1)


def mixed_ttft_s(step_s: ArrayLike, prompt_step_s: ArrayLike) -> Number:
    """Mixed TTFT: half a step's wait for the running step, then the step that carries the decodes and
    the whole prompt (engines prefill a prompt within their token budget in the next step)."""
    return np.add(0.5 * np.asarray(step_s, dtype=float), prompt_step_s)


def interleaved_ttft_s(prefill_s: ArrayLike, step_s: ArrayLike) -> Number:
    """Interleaved TTFT: a batch-1 prefill, after waiting on average half a decode step."""
    return np.add(prefill_s, 0.5 * np.asarray(step_s, dtype=float))


def kv_transfer_time_s(kv_bytes: ArrayLike, bandwidth_bytes_per_s: ArrayLike, latency_s: ArrayLike = 0.0) -> Number:
    """Disaggregated serving ships each prompt's KV cache: bytes / network bandwidth + latency."""
    return np.divide(kv_bytes, bandwidth_bytes_per_s) + np.asarray(latency_s, dtype=float)


def disaggregated_ttft_s(prefill_s: ArrayLike, kv_transfer_s: ArrayLike) -> Number:
    """Disaggregated TTFT: batch-1 prefill on its own server, then the KV cache shipped to decode."""
    return np.add(prefill_s, kv_transfer_s)


def requests_per_s_decode(batch: ArrayLike, output_len: ArrayLike, step_s: ArrayLike) -> Number:
    """Requests one generate server finishes per second: B / (O · step time)."""
    return np.divide(batch, np.multiply(output_len, step_s))


def requests_per_s_prefill(prefill_s: ArrayLike, prefill_batch: ArrayLike = 1) -> Number:
    """Requests one prefill server handles per second: prefill batch / prefill time."""
    return np.divide(prefill_batch, prefill_s)


def prefill_to_decode_ratio(prefill_s: ArrayLike, step_s: ArrayLike, batch: ArrayLike, output_len: ArrayLike) -> Number:
    """Prefill servers per generate server: B·t_prefill / (O·t_step) (part 8: 32·0.91/(512·0.019) ≈ 3)."""
    return requests_per_s_decode(batch, output_len, step_s) / requests_per_s_prefill(prefill_s)


def tokens_per_s_per_chip(tokens_per_s: ArrayLike, chips: ArrayLike) -> Number:
    """Throughput per chip: tokens/s divided over every chip the design occupies."""
    return np.divide(tokens_per_s, chips)


# --------------------------------------------------------------------------- continuous batching


def littles_law_concurrency(arrival_rate_per_s: ArrayLike, time_in_system_s: ArrayLike) -> Number:
    """Little's law: mean requests in flight L = λ · W."""
    return np.multiply(arrival_rate_per_s, time_in_system_s)


def steady_state_batch(arrival_rate_per_s: float, output_len: float, batches: np.ndarray, step_s: np.ndarray) -> float:
    """Smallest B with B ≥ λ·O·t_step(B): Little's law with the decode time O·t_step(B); inf if none."""
    needed = littles_law_concurrency(arrival_rate_per_s, np.multiply(output_len, step_s))
    ok = np.nonzero(np.asarray(batches, dtype=float) >= needed)[0]
    return float(batches[ok[0]]) if ok.size else float("inf")


def md1_wait_s(arrival_rate_per_s: ArrayLike, service_s: ArrayLike) -> Number:
    """M/D/1 queue (Poisson arrivals, fixed service): W_q = ρ·s / (2(1-ρ)), ρ = λ·s; inf when ρ ≥ 1."""
    s = np.asarray(service_s, dtype=float)
    rho = np.multiply(arrival_rate_per_s, s)
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(rho < 1.0, rho * s / (2.0 * (1.0 - rho)), np.inf)
    return wait


def servers_needed(load: ArrayLike, max_utilization: ArrayLike = 0.8) -> Number:
    """Servers for an offered load (λ · service time) kept under a utilization: ceil(load / ρ_max), at least 1."""
    return np.maximum(np.ceil(np.divide(load, max_utilization) - 1e-9), 1.0)


# --------------------------------------------------------------------------- prefix caching


def prefix_flops_saved(prefix_flops: ArrayLike, hit_rate: ArrayLike) -> Number:
    """Expected prefill FLOPs skipped per request: hit rate × FLOPs of the shared prefix."""
    return np.multiply(hit_rate, prefix_flops)


def prefix_cache_bytes(num_prefixes: ArrayLike, kv_bytes_per_prefix: ArrayLike) -> Number:
    """Cache held for reuse: distinct prefixes × KV bytes of one prefix."""
    return np.multiply(num_prefixes, kv_bytes_per_prefix)


def prefix_cached_ttft_s(
    full_prefill_s: ArrayLike, suffix_prefill_s: ArrayLike, cache_load_s: ArrayLike, hit_rate: ArrayLike
) -> Number:
    """Mean TTFT with a prefix cache: h·(suffix prefill + cache load) + (1-h)·full prefill."""
    h = np.asarray(hit_rate, dtype=float)
    return h * np.add(suffix_prefill_s, cache_load_s) + (1.0 - h) * np.asarray(full_prefill_s, dtype=float)


# --------------------------------------------------------------------------- speculative decoding


def expected_tokens_per_step(acceptance: ArrayLike, draft_len: ArrayLike) -> Number:
    """Tokens per target step with γ drafts accepted i.i.d. at α: (1 - α^(γ+1)) / (1 - α); γ+1 at α = 1."""
    a = np.asarray(acceptance, dtype=float)
    g = np.asarray(draft_len, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (1.0 - a ** (g + 1.0)) / (1.0 - a)
    return np.where(a >= 1.0, g + 1.0, value)


def expected_tokens_by_position(acceptance_by_position: ArrayLike) -> Number:
    """Tokens per target step when draft i is accepted with α_i given drafts 1..i−1 were: 1 + Σ_i Π_{j≤i} α_j
    (the bonus token, plus each draft that survives; α_i = α for all i gives (1 − α^(γ+1)) / (1 − α))."""
    a = np.asarray(acceptance_by_position, dtype=float)
    return 1.0 + np.sum(np.cumprod(a, axis=-1), axis=-1)


def speculative_round_time_s(draft_step_s: ArrayLike, draft_len: ArrayLike, verify_s: ArrayLike) -> Number:
    """One speculative round: γ draft steps then one target verification step."""
    return np.multiply(draft_len, draft_step_s) + np.asarray(verify_s, dtype=float)


def speculative_speedup(tokens_per_round: ArrayLike, round_s: ArrayLike, plain_step_s: ArrayLike) -> Number:
    """Speedup in tokens/s over plain decoding: (tokens per round / round time) / (1 / plain step)."""
    return np.multiply(tokens_per_round, plain_step_s) / np.asarray(round_s, dtype=float)


def break_even_batch(batches: np.ndarray, speedup: np.ndarray) -> float:
    """Smallest batch at which speculation no longer pays (speedup ≤ 1); inf if it always pays."""
    losing = np.nonzero(np.asarray(speedup) <= 1.0)[0]
    return float(np.asarray(batches)[losing[0]]) if losing.size else float("inf")
