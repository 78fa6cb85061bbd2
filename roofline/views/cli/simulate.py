"""`roofline simulate`: serving under load, a discrete-event simulation of continuous batching.

Thin: the flags become one :class:`~roofline.analyses.simulate.SimConfig` (engine entry values where
a flag is not given), the analysis runs, and the result is rendered or written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from roofline.analyses.bands import band_line, bands_for
from roofline.analyses.lengths import LengthDistribution, check_within_context, lengths_from_options
from roofline.analyses.simulate.bounds import PROGRESS_TOKENS, check_engine_tp, check_steps_lower_bound, check_work
from roofline.core.errors import RooflineError
from roofline.core.fmt import format_seconds
from roofline.specs import ModelSpec
from roofline.views.cli import simulate_options as so
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit, print_assumptions, progress_bar
from roofline.views.cli.options import (
    ACHIEVABLE,
    ATTENTION_DP,
    COMPUTE,
    ENGINE,
    EP,
    HARDWARE,
    INPUT_LEN,
    KV_DTYPE,
    LENGTHS,
    LENGTHS_CSV,
    MEMORY_UTILIZATION,
    MODEL,
    MOE_ROUTING,
    OUTPUT_LEN,
    PP,
    TPOT_SLO,
    TTFT_SLO,
    WEIGHTS,
    load_hardware_option,
    load_model_option,
    precision_from_options,
    refuse_without,
    spec_speed,
)
from roofline.views.cli.values import check_outputs

if TYPE_CHECKING:
    from roofline.analyses.simulate import Requests, SimConfig, SimulationResult, SpeculativeConfig
    from roofline.analyses.simulate.load import Load
    from roofline.deploy import Deployment

#: Built-in scheduler settings when neither a flag nor the engine entry gives one (vLLM's on smaller GPUs).
DEFAULT_SCHEDULER = {"max_num_seqs": 256, "max_num_batched_tokens": 8192, "policy": "decode-first"}


def simulate_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    tp: int = typer.Option(1, "--tp", parser=values.count(), help="Tensor-parallel chips per replica."),
    pp: int = PP,
    ep: int = EP,
    attention_dp: int = ATTENTION_DP,
    moe_routing: str = MOE_ROUTING,
    achievable: str = ACHIEVABLE,
    concurrency: int = so.CONCURRENCY,
    arrival_rate: float = so.ARRIVAL_RATE,
    trace: str = so.TRACE,
    stages: str = so.STAGES,
    stage_warmup: float = so.STAGE_WARMUP,
    input_len: int = INPUT_LEN,
    output_len: int = OUTPUT_LEN,
    lengths: str = LENGTHS,
    lengths_csv: str = LENGTHS_CSV,
    workload: str = so.WORKLOAD,
    requests: int = so.REQUESTS,
    seed: int = so.SEED,
    max_num_seqs: int = so.MAX_NUM_SEQS,
    max_num_batched_tokens: int = so.MAX_NUM_BATCHED_TOKENS,
    block_size: int = so.BLOCK_SIZE,
    prefix_hit_rate: float = so.PREFIX_HIT_RATE,
    prefix_caching: str = so.PREFIX_CACHING,
    policy: str = so.POLICY,
    preemption: str = so.PREEMPTION,
    event_loop: str = so.EVENT_LOOP,
    cv: float = so.CV,
    think_time: float = so.THINK_TIME,
    ramp: float = so.RAMP,
    timeout: float = so.TIMEOUT,
    frontend_in: float = so.FRONTEND_IN,
    frontend_out: float = so.FRONTEND_OUT,
    schedule_lag: int = so.SCHEDULE_LAG,
    offload_bytes: float = so.OFFLOAD_BYTES,
    offload_bandwidth: float = so.OFFLOAD_BANDWIDTH,
    draft: str = so.DRAFT,
    draft_len: int = so.DRAFT_LEN,
    acceptance: str = so.ACCEPTANCE,
    ttft_slo: float = TTFT_SLO,
    tpot_slo: float = TPOT_SLO,
    warmup: int = so.WARMUP,
    replicas: int = so.REPLICAS,
    prefill_replicas: int = so.PREFILL_REPLICAS,
    balancer: str = so.BALANCER,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    html_path: str = so.HTML,
    requests_csv: str = so.REQUESTS_CSV,
    as_json: bool = JSON_OPTION,
) -> None:
    """Serving under load: TTFT/TPOT/ITL/e2e percentiles, throughput and goodput from a continuous-batching simulation.

    Example: roofline simulate --model llama-3-8b --hardware h100-sxm --arrival-rate 10 -i 1024 -o 256
    """
    from roofline.analyses.simulate import simulate
    from roofline.analyses.simulate.adapter import cost_for

    check_outputs([("--html", html_path), ("--requests-csv", requests_csv)])
    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype=compute_dtype)
    check_engine_tp(m, tp)
    load, dist, reqs = _load(
        m, concurrency, arrival_rate, trace, stages, stage_warmup, cv, think_time, input_len, output_len, lengths,
        lengths_csv, workload, requests, seed, ramp,
    )  # fmt: skip
    spec = _speculative(draft, draft_len, acceptance)
    work = _check_work(load, dist, reqs, requests, replicas + prefill_replicas, max_num_batched_tokens)
    draft_model = None if draft is None else ("mtp" if draft == "mtp" else load_model_option(draft, "--draft"))
    given = {"max_num_seqs": max_num_seqs, "max_num_batched_tokens": max_num_batched_tokens, "policy": policy}
    cost = cost_for(
        m,
        hw,
        tp,
        precision_from_options(weights, kv_dtype, compute_dtype, m),
        memory_utilization,
        pp=pp,
        ep=ep,
        attention_dp=attention_dp,
        moe_routing=moe_routing,
        achievable=spec_speed(achievable),
        max_context=_longest(load, dist, reqs) + 1.0,
        reserve_tokens=max_num_batched_tokens,
        reserve_seqs=max_num_seqs,
        engine=engine,
        draft=draft_model,
    )
    flags = dict(locals(), requests=requests if trace is not None or stages is not None else (requests or 1000))
    config, notes = _config(cost.dep, given, flags, dist, reqs, spec)
    per_sequence = 1.0 if spec is None else spec.draft_len + 1.0  # tokens a sequence may gain in one step
    check_steps_lower_bound(work, config.scheduler.max_num_seqs, replicas + prefill_replicas, per_sequence)
    label = "simulated seconds" if stages is not None else "simulating requests"
    with progress_bar(label, not as_json and work > PROGRESS_TOKENS) as progress:
        res = simulate(cost, load, config, progress=progress)
    if res.completed == 0 and res.dropped == res.arrived:
        raise RooflineError(
            f"no request completed: all {res.dropped} need more KV cache than one replica holds "
            f"(longest request {_longest(load, dist, reqs):.0f} tokens); give a larger --tp, "
            "--memory-utilization or shorter lengths"
        )
    par = cost.dep.par
    data: dict[str, object] = {
        "model": m.name,
        "hardware": hw.name,
        "tp": tp,
        "ep": par.ep,
        "attention_dp": par.attention_dp,
        "chips_per_replica": par.group_chips,
        **res.as_dict(),
    }
    data["bands"] = bands_for(
        cost.dep, {"ttft_s": res.ttft_s.mean, "tpot_s": res.tpot_s.mean, "output_tokens_per_s": res.output_tokens_per_s}
    )
    title = f"{m.name} on {par.group_chips}x {hw.name}"
    data["sources"] = {**data["sources"], **notes}
    data.pop("time_series")  # in the --html page; too long for a terminal
    if requests_csv:
        from roofline.views.report.simulate_page import write_requests_csv

        write_requests_csv(requests_csv, res)
    if html_path:
        from roofline.views.report.simulate_page import write_simulate_page

        write_simulate_page(html_path, res, f"{title}: {res.load}")
    band = band_line(data["bands"])  # type: ignore[arg-type]
    emit(data, as_json, lambda: _render(res, title, replicas, memory_utilization, html_path, requests_csv, band))


def _check_work(
    load: object, dist: LengthDistribution | None, reqs: object, requests: int | None, replicas: int, budget: int | None
) -> float:
    """The simulator's work ceilings (analyses.simulate.bounds), checked before anything runs; its simulated tokens."""
    import numpy as np

    from roofline.analyses.simulate import Staged

    src = reqs if reqs is not None else (load if dist is None else None)
    if src is not None:
        lens_in, lens_out = np.asarray(src.input_len), np.asarray(src.output_len)  # type: ignore[attr-defined]
        n = lens_in.size if requests is None else min(requests, lens_in.size)
        mean_in, mean_out = float(np.mean(lens_in[:n])), float(np.mean(lens_out[:n]))
    else:
        assert dist is not None
        n, mean_in, mean_out = requests or 1000, dist.mean_input, dist.mean_output
        if isinstance(load, Staged):
            n = sum(round((s.rate_per_s or 0) * s.duration_s) for s in load.stages) or n
    return check_work(n, replicas, mean_in, mean_out, budget or int(DEFAULT_SCHEDULER["max_num_batched_tokens"]))


def _load(
    model: ModelSpec,
    concurrency: int | None,
    arrival_rate: float | None,
    trace: str | None,
    stages: str | None,
    stage_warmup: float | None,
    cv: float | None,
    think_time: float | None,
    input_len: int | None,
    output_len: int | None,
    lengths: str | None,
    lengths_csv: str | None,
    workload: str | None,
    requests: int | None,
    seed: int,
    ramp: float | None = None,
) -> tuple[Load, LengthDistribution | None, Requests | None]:
    """The load (exactly one of four), the length distribution and the generated workload, checked."""
    from roofline.analyses.simulate import ClosedLoop, OpenLoop, parse_stages, read_trace
    from roofline.analyses.simulate.workloads import parse_workload

    chosen = (
        ("--concurrency", concurrency),
        ("--arrival-rate", arrival_rate),
        ("--trace", trace),
        ("--stages", stages),
    )
    named = [name for name, v in chosen if v is not None]
    if len(named) != 1:
        raise RooflineError(
            "give exactly one load: --concurrency C, --arrival-rate R, --trace FILE or --stages LIST"
            + (f" (got {', '.join(named)})" if named else "")
        )
    refuse_without("--concurrency", concurrency is not None or stages is not None, {"--think-time": think_time})
    refuse_without("--concurrency", concurrency is not None, {"--ramp": ramp})
    refuse_without("--arrival-rate", arrival_rate is not None, {"--cv": cv}, " (an open loop of random arrivals)")
    refuse_without("--stages", stages is not None, {"--stage-warmup": stage_warmup})
    if trace is not None:
        if any(v is not None for v in (input_len, output_len, lengths, lengths_csv, workload)):
            raise RooflineError("--trace carries its own lengths: drop -i/-o/--lengths/--lengths-csv/--workload")
        load = read_trace(trace)
        where = f"--trace {trace}"
        check_within_context(
            model.name, model.max_position_embeddings, load.input_len, load.output_len, where, load.lines
        )
        return load, None, None
    dist = lengths_from_options(input_len, output_len, lengths, lengths_csv, model, every_source=True)
    if stages is not None:
        load: Load = parse_stages(stages, stage_warmup or 0.0)
        if think_time:
            from dataclasses import replace

            load = type(load)(tuple(replace(s, think_time_s=think_time) for s in load.stages))
        count = sum(round((s.rate_per_s or 0) * s.duration_s) for s in load.stages) or (requests or 1000)
        if any(s.closed for s in load.stages) and workload is not None:
            count = requests or 100_000
    elif concurrency is not None:
        load, count = ClosedLoop(concurrency, think_time or 0.0, ramp_s=ramp), requests or 1000
    else:
        load, count = OpenLoop(arrival_rate, 1.0 if cv is None else cv), requests or 1000  # type: ignore[arg-type]
    reqs = parse_workload(workload, count, dist, seed) if workload is not None else None
    return load, (None if reqs is not None else dist), reqs


def _speculative(draft: str | None, draft_len: int | None, acceptance: str | None) -> SpeculativeConfig | None:
    given = [v is not None for v in (draft, draft_len, acceptance)]
    if not any(given):
        return None
    if not all(given):
        raise RooflineError("speculative decoding needs --draft, --draft-len and --acceptance together")
    from roofline.analyses.simulate import SpeculativeConfig
    from roofline.core.checks import check_probability

    rates = tuple(check_probability(a, "--acceptance") for a in values.split_names(acceptance, "--acceptance"))
    return SpeculativeConfig(int(draft_len), rates)  # type: ignore[arg-type]


def _longest(load: Load, dist: LengthDistribution | None, reqs: Requests | None) -> float:
    """The longest prompt + output the load can send (the step model is tabulated up to it)."""
    import numpy as np

    src = reqs if reqs is not None else (load if dist is None else None)
    if src is not None:
        return float(np.max(np.add(src.input_len, src.output_len)))
    assert dist is not None
    return float(np.max(dist.input_len + dist.output_len))


def _config(
    dep: Deployment,
    given: dict[str, object],
    flags: dict[str, object],
    dist: LengthDistribution | None,
    reqs: Requests | None,
    spec: SpeculativeConfig | None,
) -> tuple[SimConfig, dict[str, str]]:
    """The SimConfig of the flags; a setting no flag gives comes from the engine entry, else the built-in."""
    from roofline.analyses.simulate import FleetConfig, SchedulerConfig, SimConfig
    from roofline.analyses.simulate.adapter import offload_config, request_path_for, scheduler_defaults
    from roofline.analyses.simulate.config import RequestPath

    entry = scheduler_defaults(dep)
    chosen, notes = {}, {}
    for name, value in given.items():
        if value is not None:
            chosen[name] = value
        elif name in entry:
            chosen[name] = entry[name]
            notes[name] = f"{entry[name]} (engine entry {dep.engine.key})"
        else:
            chosen[name] = DEFAULT_SCHEDULER[name]
    scheduler = SchedulerConfig(
        block_size=flags["block_size"],
        prefix_hit_rate=flags["prefix_hit_rate"] or 0.0,
        prefix_caching=flags["prefix_caching"] == "on",
        preemption=flags["preemption"],
        **chosen,
    )
    path = request_path_for(dep)
    path = RequestPath(
        path.frontend_in_s if flags["frontend_in"] is None else flags["frontend_in"],
        path.frontend_out_s if flags["frontend_out"] is None else flags["frontend_out"],
        path.schedule_lag_steps if flags["schedule_lag"] is None else flags["schedule_lag"],
    )
    offload = (
        offload_config(dep, flags["offload_bytes"], flags["offload_bandwidth"])
        if flags["offload_bytes"] is not None
        else None
    )
    refuse_without("--offload-bytes", offload is not None, {"--offload-bandwidth": flags["offload_bandwidth"]})
    config = SimConfig(
        lengths=dist,
        workload=reqs,
        requests=flags["requests"],
        seed=flags["seed"],
        scheduler=scheduler,
        fleet=FleetConfig(flags["replicas"], flags["balancer"], flags["prefill_replicas"]),
        path=path,
        timeout_s=flags["timeout"],
        offload=offload,
        speculative=spec,
        ttft_slo_s=flags["ttft_slo"],
        tpot_slo_s=flags["tpot_slo"],
        warmup=flags["warmup"],
        event_loop=flags["event_loop"],
    )
    return config, notes


def _render(
    res: SimulationResult, title: str, replicas: int, mu: float, html: str | None, csv: str | None, band: str
) -> None:
    table = compact_table(f"{title} x {replicas} replica(s): {res.load}", ["latency", "mean", "p50", "p90", "p99"])
    for key, label in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"), ("e2e_s", "end-to-end")):
        p = getattr(res, key)
        table.add_row(label, *(format_seconds(v) for v in (p.mean, p.p50, p.p90, p.p99)))
    console.print(table)
    console.print(band, highlight=False)
    if res.stages:
        stages = compact_table("per stage", ["stage", "sent", "done", "failed", "TTFT", "E2E", "tok/s", "hits"])
        for s in res.stages:
            stages.add_row(
                s.load,
                str(s.sent),
                str(s.completed),
                str(s.failed),
                format_seconds(s.ttft_s.mean),
                format_seconds(s.e2e_s.mean),
                f"{s.output_tokens_per_s:,.0f}",
                "-" if s.prefix_hit_rate is None else f"{s.prefix_hit_rate:.1%}",
            )
        console.print(stages)
    hits = "" if res.prefix_hit_rate is None else f", prefix hits {res.prefix_hit_rate:.1%}"
    console.print(
        f"output tokens/s {res.output_tokens_per_s:,.1f}, requests/s {res.requests_per_s:,.3f}, "
        f"mean batch {res.mean_batch:.1f}, KV used {res.mean_kv_utilization:.0%}{hits}, "
        f"preemptions {res.preemptions}, completed {res.completed}, failed {res.failed}, dropped {res.dropped}"
    )
    if res.ttft_slo_s is not None or res.tpot_slo_s is not None:
        console.print(
            f"goodput: {res.goodput_fraction:.1%} of requests meet the SLOs = "
            f"{res.goodput_requests_per_s:,.3f} requests/s"
        )
    loop = res.sources.get("event loop", "python")
    console.print(
        f"[dim]{res.warmup_rule}; event loop: {loop}; step cost: {res.sources['step cost']}[/]", highlight=False
    )
    print_assumptions(memory_utilization=mu, sources={"hardware": res.sources["step cost"]})
    for path in (html, csv):
        if path:
            console.print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_command)
