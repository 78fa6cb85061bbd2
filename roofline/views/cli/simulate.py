"""`roofline simulate`: serving under load, a discrete-event simulation of continuous batching."""

from __future__ import annotations

import numpy as np
import typer

from roofline.analyses.lengths import LengthDistribution, check_within_context, lengths_from_options
from roofline.analyses.simulate.bounds import check_engine_tp, check_work
from roofline.core.errors import RooflineError
from roofline.core.fmt import format_seconds
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit, print_assumptions
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

#: Most requests one simulation runs (each holds a few hundred bytes of state and timings).
MAX_REQUESTS = 1_000_000


def simulate_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    tp: int = typer.Option(1, "--tp", parser=values.count(), help="Tensor-parallel chips per replica."),
    pp: int = PP,
    ep: int = EP,
    attention_dp: int = ATTENTION_DP,
    moe_routing: str = MOE_ROUTING,
    achievable: str = ACHIEVABLE,
    concurrency: int = typer.Option(
        None,
        "--concurrency",
        parser=values.count(maximum=MAX_REQUESTS),
        help="Closed loop: clients, each waiting for its reply.",
    ),
    arrival_rate: float = typer.Option(
        None,
        "--arrival-rate",
        "--qps",
        parser=values.rate,
        help="Open loop: requests/s (alias --qps; Poisson, see --cv).",
    ),
    trace: str = typer.Option(
        None, "--trace", parser=values.name, help="CSV with columns arrival_time_s, input_len, output_len."
    ),
    input_len: int = INPUT_LEN,
    output_len: int = OUTPUT_LEN,
    lengths: str = LENGTHS,
    lengths_csv: str = LENGTHS_CSV,
    requests: int = typer.Option(
        None,
        "--requests",
        "-n",
        parser=values.count(maximum=MAX_REQUESTS),
        help=f"Requests to simulate (default 1000, at most {MAX_REQUESTS:,}; a trace: all).",
    ),
    seed: int = typer.Option(
        0, "--seed", parser=values.count(0), help="Random seed (the run is deterministic for a seed)."
    ),
    max_num_seqs: int = typer.Option(
        256, "--max-num-seqs", parser=values.count(maximum=1 << 20), help="Most sequences in a step (vLLM)."
    ),
    max_num_batched_tokens: int = typer.Option(
        8192, "--max-num-batched-tokens", parser=values.count(maximum=1 << 24), help="Token budget per step."
    ),
    block_size: int = typer.Option(
        16, "--block-size", parser=values.count(maximum=1 << 16), help="KV cache block size in tokens."
    ),
    prefix_hit_rate: float = typer.Option(
        0.0, "--prefix-hit-rate", parser=values.probability, help="Share of prompt tokens in the prefix cache."
    ),
    cv: float = typer.Option(
        None,
        "--cv",
        parser=values.number(0.0, 100.0, open_low=False),
        help="Open loop: coefficient of variation of the gaps (default 1: Poisson).",
    ),
    think_time: float = typer.Option(
        None,
        "--think-time",
        parser=values.seconds_or_zero,
        metavar="TIME",
        help="Closed loop: seconds between reply and next send (default 0).",
    ),
    ttft_slo: float = TTFT_SLO,
    tpot_slo: float = TPOT_SLO,
    warmup: int = typer.Option(
        None,
        "--warmup",
        parser=values.count(0, MAX_REQUESTS),
        help="First requests excluded from latencies (default 10%).",
    ),
    replicas: int = typer.Option(
        1,
        "--replicas",
        parser=values.count(maximum=4096),
        help="Identical replicas (decode replicas when disaggregated).",
    ),
    prefill_replicas: int = typer.Option(
        0, "--prefill-replicas", parser=values.count(0, 4096), help="> 0: disaggregated prefill replicas."
    ),
    balancer: str = typer.Option(
        "round-robin",
        "--balancer",
        parser=values.choice("round-robin", "least-outstanding"),
        help="round-robin or least-outstanding.",
    ),
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    html_path: str = typer.Option(None, "--html", help="Write latency CDFs and time series to this HTML file."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Serving under load: TTFT/TPOT/ITL/e2e percentiles, throughput and goodput from a continuous-batching simulation.

    Example: roofline simulate --model llama-3-8b --hardware h100-sxm --arrival-rate 10 -i 1024 -o 256
    """
    from roofline.analyses.simulate import ClosedLoop, FleetConfig, OpenLoop, SchedulerConfig, read_trace, simulate
    from roofline.analyses.simulate.adapter import cost_for

    given = [
        name
        for name, v in (("--concurrency", concurrency), ("--arrival-rate", arrival_rate), ("--trace", trace))
        if v is not None
    ]
    if len(given) != 1:
        raise RooflineError(
            "give exactly one load: --concurrency C, --arrival-rate R or --trace FILE"
            + (f" (got {', '.join(given)})" if given else "")
        )
    refuse_without(
        "--concurrency",
        concurrency is not None,
        {"--think-time": think_time},
        " (a closed loop: clients waiting for replies)",
    )
    refuse_without("--arrival-rate", arrival_rate is not None, {"--cv": cv}, " (an open loop of random arrivals)")
    check_outputs([("--html", html_path)])
    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype=compute_dtype)
    check_engine_tp(m, tp)
    dist: LengthDistribution | None = None
    if trace is not None:
        if any(v is not None for v in (input_len, output_len, lengths, lengths_csv)):
            raise RooflineError("--trace carries its own lengths: drop -i/-o/--lengths/--lengths-csv")
        load: object = read_trace(trace)
        lines = getattr(load, "lines", None)
        check_within_context(
            m.name, m.max_position_embeddings, load.input_len, load.output_len, f"--trace {trace}", lines
        )
    else:
        dist = lengths_from_options(input_len, output_len, lengths, lengths_csv, m, every_source=True)
        load = (
            ClosedLoop(concurrency, think_time or 0.0)
            if concurrency is not None
            else OpenLoop(arrival_rate, 1.0 if cv is None else cv)
        )
        requests = 1000 if requests is None else requests
    if dist is None:
        n = load.input_len.size if requests is None else min(requests, load.input_len.size)
        mean_in, mean_out = float(np.mean(load.input_len[:n])), float(np.mean(load.output_len[:n]))
    else:
        n, mean_in, mean_out = requests, dist.mean_input, dist.mean_output
    check_work(n, replicas + prefill_replicas, mean_in, mean_out, max_num_batched_tokens)
    longest = max_trace_context(load) if dist is None else float(np.max(dist.input_len + dist.output_len))
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
        max_context=longest + 1.0,
        reserve_tokens=max_num_batched_tokens,
        engine=engine,
    )
    res = simulate(
        cost,
        load,
        dist,
        requests,
        seed,
        SchedulerConfig(max_num_seqs, max_num_batched_tokens, block_size, prefix_hit_rate),
        FleetConfig(replicas, balancer, prefill_replicas),
        ttft_slo,
        tpot_slo,
        warmup,
    )
    if res.completed == 0:
        raise RooflineError(
            f"no request completed: all {res.dropped} need more KV cache than one replica holds "
            f"(longest request {longest:.0f} tokens); give a larger --tp, --memory-utilization or shorter lengths"
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
    title = f"{m.name} on {par.group_chips}x {hw.name}"
    data.pop("time_series")  # in the --html page; too long for a terminal
    if html_path:
        from roofline.views.report.simulate_page import write_simulate_page

        write_simulate_page(html_path, res, f"{title}: {res.load}")

    def render() -> None:
        table = compact_table(f"{title} x {replicas} replica(s): {res.load}", ["latency", "mean", "p50", "p90", "p99"])
        for key, label in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"), ("e2e_s", "end-to-end")):
            p = getattr(res, key)
            table.add_row(label, *(format_seconds(v) for v in (p.mean, p.p50, p.p90, p.p99)))
        console.print(table)
        console.print(
            f"output tokens/s {res.output_tokens_per_s:,.1f}, requests/s {res.requests_per_s:,.3f}, "
            f"mean batch {res.mean_batch:.1f}, KV used {res.mean_kv_utilization:.0%}, "
            f"preemptions {res.preemptions}, completed {res.completed}, dropped {res.dropped}"
        )
        if ttft_slo is not None or tpot_slo is not None:
            console.print(
                f"goodput: {res.goodput_fraction:.1%} of requests meet the SLOs = "
                f"{res.goodput_requests_per_s:,.3f} requests/s"
            )
        console.print(f"[dim]{res.warmup_rule}; step cost: {res.sources['step cost']}[/]", highlight=False)
        print_assumptions(memory_utilization=memory_utilization, sources={"hardware": res.sources["step cost"]})
        if html_path:
            console.print(f"wrote {html_path}")

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_command)


def max_trace_context(load: object) -> float:
    """The longest prompt + output of a trace (the step model is tabulated up to it)."""
    return float(np.max(np.add(load.input_len, load.output_len)))
