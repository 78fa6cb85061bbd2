"""Serving designs over one deployment: static, interleaved, disaggregated and mixed engines, plus
continuous batching at steady state, prefix caching and speculative decoding.

Every step time here is :func:`roofline.terms.step_terms` of the right work: a prefill of the
prompt, a decode step at the mean context, a suffix prefill after a cached prefix, a
speculative verify step of γ+1 tokens per sequence.  The engine formulas are the pure
estimators of :mod:`roofline.formulas.serving` (book part 7, 'Designing an effective inference engine').
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from roofline.analyses.request import RequestResult, request_from
from roofline.analyses.speculative import speculative as speculative_decoding
from roofline.analyses.step import BOOK, StepResult, held_memory, step_from
from roofline.core.checks import check_instance, check_scalar
from roofline.core.errors import OptionError, RooflineError, shown
from roofline.deploy import Deployment
from roofline.deploy.layout import replica_loads
from roofline.formulas import serving
from roofline.model import memory
from roofline.specs import ModelSpec
from roofline.terms import Work, prefill_work, step_terms


@dataclass(frozen=True)
class ServeResult:
    """A serving design (contract keys of the serve command's JSON)."""

    mode: str
    ttft_s: float
    tpot_s: float
    tokens_per_s_per_chip: float | None
    chips: float
    prefill_s: float
    batch_prefill_s: float
    step_time_s: float
    decode_stall_s: float
    prefill_to_decode_ratio: float
    kv_transfer_s: float
    fits: bool = True
    tokens_per_s_per_chip_unchecked: float = 0.0
    max_batch: float = 0.0
    usable_hbm_bytes: float = 0.0
    total_bytes: float = 0.0
    prefill_comms_s: float = 0.0
    decode_comms_s: float = 0.0
    tp: int = 1
    pp: int = 1
    ep: int = 1
    continuous: dict[str, object] | None = None
    prefix_cache: dict[str, object] | None = None
    speculative: dict[str, object] | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _check_int(name: str, value: float, low: float = 1) -> None:
    if not np.isfinite(value) or value < low:
        raise OptionError(f"{name} must be at least {low:g} (got {shown(value)})", parameters=(name,))


def serve(
    dep: Deployment,
    mode: str,
    input_len: int,
    output_len: int,
    batch: int = 1,
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
        raise OptionError(
            f"mode: unknown mode {shown(mode)}; allowed: {', '.join(serving.MODES)}", parameters=("mode",)
        )
    check_instance(dep, "dep", Deployment, "from roofline.deployment(model, hw, chips)")
    for name, value in (("input_len", input_len), ("output_len", output_len), ("batch", batch)):
        check_scalar(value, name, minimum=1.0, open_low=False)
    mfu = check_scalar(mfu, "mfu", minimum=0.0, maximum=1.0)
    chips = float(dep.chips)
    one = request_from(dep, input_len, 1, 1, mfu)
    prefill_1 = float(one.ttft_s)
    prefill_b = float(request_from(dep, input_len, 1, batch, mfu).ttft_s)
    mean_context = input_len + output_len / 2.0
    step_res = step_from(dep, batch, mean_context)
    step_s = float(step_res.step_time_s)
    final = step_from(dep, batch, input_len + output_len)
    fits = bool(np.all(final.fits))
    ratio = float(serving.prefill_to_decode_ratio(prefill_1, step_s, batch, output_len))
    kv_bytes = float(memory.kv_cache_bytes_per_sequence(dep.model, input_len, dep.precision.kv_bytes))
    transfer = kv_transfer_s(dep, kv_bytes) if mode == "disaggregated" else 0.0
    if mode == "static":  # the batch is one request of B prompts: request's TTFT, TPOT and memory
        whole = request_from(dep, input_len, output_len, batch, mfu)
        ttft = float(serving.static_ttft_s(whole.ttft_s))
        tpot, stall, step_s = float(whole.tpot_s), 0.0, float(whole.tpot_s)
        tps = batch * output_len / float(serving.static_cycle_s(whole.ttft_s, output_len, whole.tpot_s))
        used = chips
        final = static_memory(dep, input_len, output_len, final, whole)
        fits = bool(np.all(final.fits))
    elif mode == "interleaved":
        ttft = float(serving.interleaved_ttft_s(prefill_1, step_s))
        tpot = float(serving.interleaved_tpot_s(step_s, prefill_1, batch, output_len))
        stall, tps, used = prefill_1, batch / tpot, chips
    elif mode == "mixed":  # each replica runs its own ⌈B/r⌉ decodes and their new prompts
        mine = float(replica_loads(batch, dep.replicas)[0])
        step_s = float(
            step_terms(
                dep, replace(mixed_work(mine, input_len, output_len, mean_context), per_replica=True), mfu
            ).time_s
        )
        prompts = max(1.0, float(serving.prompts_per_step(mine, output_len)))
        with_prompt = Work(
            decode_seqs=mine,
            decode_context=mean_context,
            prefill_seqs=prompts,
            prefill_len=float(input_len),
            per_replica=True,
        )
        ttft = float(serving.mixed_ttft_s(step_s, step_terms(dep, with_prompt, mfu).time_s))
        tpot, stall, tps, used = step_s, 0.0, batch / step_s, chips
        final = mixed_memory(dep, batch, input_len, output_len, final)
        fits = bool(np.all(final.fits))
    else:
        ttft = float(serving.disaggregated_ttft_s(prefill_1, transfer))
        tpot, stall = step_s, 0.0
        tps, used = batch / step_s, chips * (1.0 + ratio)
    return ServeResult(
        mode=mode,
        ttft_s=ttft,
        tpot_s=tpot,
        tokens_per_s_per_chip=float(serving.tokens_per_s_per_chip(tps, used)) if fits else None,
        chips=used,
        prefill_s=prefill_1,
        batch_prefill_s=prefill_b,
        step_time_s=step_s,
        decode_stall_s=stall,
        prefill_to_decode_ratio=ratio,
        kv_transfer_s=transfer,
        fits=fits,
        tokens_per_s_per_chip_unchecked=float(serving.tokens_per_s_per_chip(tps, used)),
        max_batch=float(final.max_batch),
        usable_hbm_bytes=float(final.usable_hbm_bytes),
        total_bytes=float(final.total_bytes),
        prefill_comms_s=float(one.prefill_comms_s),
        decode_comms_s=float(step_res.comms_exposed_s),
        tp=dep.par.tp,
        pp=dep.par.pp,
        ep=dep.par.ep,
        continuous=(
            continuous_batching(dep, input_len, output_len, prefill_1, arrival_rate)
            if arrival_rate is not None
            else None
        ),
        prefix_cache=(
            prefix_caching(dep, input_len, mfu, prefix_len, prefix_hit_rate, num_prefixes, prefix_store)
            if prefix_len is not None
            else None
        ),
        speculative=(
            speculative_decoding(dep, batch, mean_context, draft_model, draft_len, acceptance)
            if any(v is not None for v in (draft_model, draft_len, acceptance))
            else None
        ),
        sources={
            **step_res.sources,
            "formulas": f"{BOOK}, 'Designing an effective inference engine', appendix D; part 8 (disaggregation ratio)",
            "decode step": f"batch {batch} at the mean context I + O/2 = {mean_context:g}",
        },
    )


def kv_transfer_s(dep: Deployment, kv_bytes: float) -> float:
    """One sequence's KV from a prefill replica to a decode replica: bytes / (the replica's chips ·
    DCN bandwidth each) + DCN latency (a sequence lives on one replica, tp·pp chips)."""
    hw = dep.hw
    if hw.dcn_bandwidth_bytes_per_s is None:
        raise RooflineError(f"{hw.name}: disaggregated mode needs dcn_bandwidth_bytes_per_s in the hardware file")
    chips = float(np.max(dep.group_chips))
    return float(serving.kv_transfer_time_s(kv_bytes, chips * hw.dcn_bandwidth_bytes_per_s, hw.dcn_latency_s or 0.0))


def static_memory(
    dep: Deployment, input_len: int, output_len: int, decodes: StepResult, whole: RequestResult
) -> StepResult:
    """A static batch's memory, :func:`request_from`'s (B sequences at I + O beside the activations
    of their joint prefill), and the largest B that fits so (:func:`static_max_batch`)."""
    return replace(
        decodes,
        fits=whole.fits,
        total_bytes=whole.total_bytes,
        usable_hbm_bytes=whole.usable_hbm_bytes,
        max_batch=static_max_batch(dep, input_len, output_len),
    )


def static_max_batch(dep: Deployment, input_len: float, output_len: float) -> float:
    """Largest static batch whose KV at I + O and joint prefill (I tokens, 1 sampled row a sequence)
    fit: r·⌊(HBM·u − P) / (KV(I + O) + reserve(I, 1))⌋, each replica holding its share."""
    per_seq = np.add(
        memory.cache_bytes_per_sequence(dep.model, input_len + output_len, dep.precision.kv_bytes),
        dep.activation_reserve_bytes(float(input_len), 1.0),
    )
    budget = dep.group_capacity_bytes() * dep.memory_utilization
    return float(np.max(np.multiply(dep.replicas, memory.max_batch_size(budget, dep.weight_bytes, per_seq))))


def mixed_memory(dep: Deployment, batch: int, input_len: int, output_len: int, decodes: StepResult) -> StepResult:
    """The decode batch's memory at context I + O with the prompts in flight held too: a replica of
    b decodes holds b + ⌈b/O⌉ sequences at I + O (:func:`serving.mixed_resident_seqs`), each with a
    decode step's activation reserve (one token; the prompts' chunk is not reserved apart), the
    busiest deciding the fit; and the largest B that fits so (each of the r replicas holding
    ⌊N·O/(O + 1)⌋ of the N sequences that fit it)."""
    r = dep.replicas
    busiest, quietest, n_busiest = replica_loads(batch, r)
    top, low = (serving.mixed_resident_seqs(b, output_len) for b in (busiest, quietest))
    resident = np.add(np.multiply(n_busiest, top), np.multiply(np.subtract(r, n_busiest), low))
    seq_bytes = memory.cache_bytes_per_sequence(dep.model, input_len + output_len, dep.precision.kv_bytes)
    held = held_memory(dep, resident, seq_bytes, 1.0, loads=(top, low, n_busiest))
    per_replica = int(round(float(decodes.max_batch) / float(r)))
    return replace(
        decodes,
        fits=held.fits,
        total_bytes=held.total_bytes,
        usable_hbm_bytes=held.usable_bytes,
        max_batch=float(r) * serving.mixed_max_batch(per_replica, output_len),
    )


def mixed_work(batch: float, input_len: int, output_len: int, context: float) -> Work:
    """One steady-state step of a mixed engine: B decodes at the mean context plus the prompts that
    replace finished sequences, c = B·I/O prompt tokens a step.  With B ≥ O these are B/O whole
    prompts; below, one chunk of c tokens after a cached prefix (I − c)/2, whose causal attention
    c·((I − c)/2 + c/2) = c·I/2 is the prompts' I²/2 spread over their O/B steps, and whose per-prompt
    costs (sampling, the engine's per-prefill overhead, the LM head) count B/O of a prompt."""
    prompts = float(serving.prompts_per_step(batch, output_len))
    if prompts >= 1.0:
        return Work(
            decode_seqs=float(batch), decode_context=context, prefill_seqs=prompts, prefill_len=float(input_len)
        )
    chunk = prompts * input_len
    return Work(
        decode_seqs=float(batch),
        decode_context=context,
        prefill_seqs=1.0,
        prefill_len=chunk,
        prefill_cached=(input_len - chunk) / 2.0,
        prefill_prompts=prompts,
    )


def continuous_batching(
    dep: Deployment, input_len: int, output_len: int, prefill_s: float, arrival_rate: float
) -> dict[str, object]:
    """Steady state at λ req/s: concurrency by Little's law, TPOT, TTFT with M/D/1 prefill queueing, chips."""
    if not (np.isfinite(arrival_rate) and arrival_rate > 0):
        raise OptionError(
            f"arrival_rate must be positive and finite (got {shown(arrival_rate)})", parameters=("arrival_rate",)
        )
    context = input_len + output_len / 2.0
    at_final = step_from(dep, 1, input_len + output_len)
    max_batch = int(min(at_final.max_batch, 1 << 16))
    if max_batch < 1:
        raise RooflineError(
            f"{dep.model.name} does not fit on {dep.chips:g}x {dep.hw.name} at context "
            f"{input_len + output_len} (usable HBM {dep.memory_utilization:g} of physical)"
        )
    batches = np.arange(1, max_batch + 1, dtype=float)
    steps = np.asarray(step_from(dep, batches, context).step_time_s, dtype=float)
    replicas, concurrency = 1, float("inf")
    while replicas <= 4096:
        concurrency = serving.steady_state_batch(arrival_rate / replicas, output_len, batches, steps)
        if np.isfinite(concurrency):
            break
        replicas += 1
    if not np.isfinite(concurrency):
        raise OptionError(
            f"arrival_rate={arrival_rate:g}: needs more than 4096 decode replicas", parameters=("arrival_rate",)
        )
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
        "chips_needed": (replicas + prefill_servers) * float(dep.chips),
        "queueing_model": "Little's law L = λ·O·TPOT(L) per decode replica; prefill pool as M/D/1 "
        "(Poisson arrivals, fixed prefill time), sized to ≤ 80% utilization; "
        "see `roofline simulate` for queueing with a scheduler",
    }


def prefix_caching(
    dep: Deployment, input_len: int, mfu: float, prefix_len: int, hit_rate: float, num_prefixes: int, store: str
) -> dict[str, object]:
    """Shared prefix of P tokens hit with rate h: FLOPs saved, cache bytes held, TTFT with and without."""
    if not 0 < prefix_len <= input_len:
        raise OptionError(
            f"prefix_len must be in (0, input_len={input_len}] (got {shown(prefix_len)})",
            parameters=("prefix_len", "input_len"),
        )
    if not 0 <= hit_rate <= 1:
        raise OptionError(f"prefix_hit_rate must be in [0, 1] (got {shown(hit_rate)})", parameters=("prefix_hit_rate",))
    if num_prefixes < 1:
        raise OptionError(f"num_prefixes must be at least 1 (got {shown(num_prefixes)})", parameters=("num_prefixes",))
    if store not in ("hbm", "host"):
        raise OptionError(f"prefix_store: unknown {shown(store)}; allowed: hbm, host", parameters=("prefix_store",))
    m, hw, chips = dep.model, dep.hw, float(dep.chips)
    full_t = step_terms(dep, prefill_work(1, input_len), mfu)
    suffix_t = step_terms(dep, prefill_work(1, input_len - prefix_len, prefix_len), mfu)
    prefix_t = step_terms(dep, prefill_work(1, prefix_len), mfu)
    kv_prefix = float(memory.kv_cache_bytes_per_sequence(m, prefix_len, dep.precision.kv_bytes))
    if store == "host":
        if hw.host_bandwidth_bytes_per_s is None:
            raise OptionError(
                f"prefix_store: host: {hw.name} has no host_bandwidth_bytes_per_s", parameters=("prefix_store",)
            )
        load = kv_prefix / (chips * hw.host_bandwidth_bytes_per_s)
        capacity = (hw.host_dram_bytes or 0.0) * chips
    else:
        load = 0.0  # read in place by the suffix's attention
        capacity = float(np.max(dep.usable_hbm_bytes(input_len, 1.0)) - dep.weight_bytes)  # each replica's cache
    held = float(serving.prefix_cache_bytes(num_prefixes, kv_prefix))
    full, suffix = float(full_t.time_s), float(suffix_t.time_s)
    cached = float(serving.prefix_cached_ttft_s(full, suffix, load, hit_rate))
    prefix_flops = float(prefix_t.matmul_flops + prefix_t.attention_flops) * dep.par.pp
    return {
        "prefix_len": prefix_len,
        "hit_rate": hit_rate,
        "prefill_flops": float(full_t.matmul_flops + full_t.attention_flops) * dep.par.pp,
        "flops_saved_per_request": float(serving.prefix_flops_saved(prefix_flops, hit_rate)),
        "cache_bytes": held,
        "cache_store": store,
        "cache_fits": held <= capacity,
        "cache_load_s": load,
        "ttft_without_cache_s": full,
        "ttft_with_cache_s": cached,
        "ttft_gain_s": full - cached,
    }


#: The former home of speculative decoding (roofline.analyses.speculative now).
speculative = speculative_decoding
