"""`roofline plan`: the cheapest deployment meeting qps, TTFT and TPOT targets."""

from __future__ import annotations

from dataclasses import asdict

import typer

from roofline.analyses.lengths import lengths_from_options
from roofline.analyses.plan.capacity import KV_DTYPES, WEIGHT_DTYPES, inverse_questions
from roofline.analyses.sweep.run import check_dtypes, parse_int_list
from roofline.core.errors import OptionError
from roofline.core.fmt import format_bytes, format_seconds
from roofline.views.cli import values
from roofline.views.cli._common import (
    JSON_OPTION,
    WIDE_OPTION,
    compact_table,
    console,
    emit,
    print_assumptions,
)
from roofline.views.cli.options import (
    BATCH,
    CHIPS,
    CONTEXT,
    ENGINE,
    EP,
    HARDWARE,
    INPUT_LEN,
    KV_DTYPE,
    LENGTHS,
    LENGTHS_CSV,
    MEMORY_UTILIZATION,
    MFU,
    MODEL,
    OUTPUT_LEN,
    TPOT_SLO,
    TTFT_SLO,
    WEIGHTS,
    compute_from_option,
    load_hardware_option,
    load_model_option,
    precision_from_options,
    refuse_without,
)
from roofline.views.cli.values import check_outputs, parse_prices, split_names

PLAN_CSV = typer.Option(None, "--csv", help="Write the candidate deployments shown (see --top) to this CSV file.")


LOAD_PROFILE = typer.Option(
    None,
    "--load-profile",
    help="A day of load: CSV start_hour,rate[,input_len,output_len][,max_replicas] (hours from the start of "
    "the day, requests/s; max_replicas caps a slot, e.g. a maintenance window). Plans replicas per slot.",
)
DIURNAL = typer.Option(
    False,
    "--diurnal",
    help="A day of load from the built-in diurnal shape (an assumption, not measured): hourly slots peaking "
    "at --qps at 16:00, --trough x that at 04:00.",
)
TROUGH = typer.Option(
    None,
    "--trough",
    parser=values.probability,
    help="The built-in day's lowest rate as a fraction of its peak (default 0.3).",
)
MIN_REPLICAS = typer.Option(
    None,
    "--min-replicas",
    parser=values.count(0),
    help="A day plan runs at least this many replicas in every slot (default 1).",
)
LOAD_BANDWIDTH = typer.Option(
    None,
    "--load-bandwidth",
    parser=values.number(0.0, dimension="bytes/s"),
    metavar="RATE",
    help="Rate a new replica reads its weights at, e.g. 2GB/s (sets the scale-up delay; default 1,000 MiB/s: "
    "one AWS EBS gp3 volume's largest throughput).",
)
SPARE = typer.Option(0, "--spare", parser=values.count(0), help="The SLOs still hold with this many replicas down.")
SPARE_NODES = typer.Option(
    0,
    "--spare-nodes",
    parser=values.count(0),
    help="The SLOs still hold with this many nodes down (each takes out every replica with a chip on it).",
)
NODE_CHIPS = typer.Option(
    None,
    "--node-chips",
    parser=values.count(),
    help="Chips per node for --spare-nodes (default: the chip's scale-up domain, max_ici_domain_chips: 8 GPUs "
    "of an HGX server; give the host size for TPU pods and NVL72 racks).",
)
MAX_REPLICAS = typer.Option(
    None, "--max-replicas", parser=values.count(), help="Most replicas the fleet may run (in every slot)."
)
MIX = typer.Option(
    False,
    "--mix",
    help="Split the traffic by length bucket across the --hardware chip types (one shape each), cheapest "
    "mix by a mixed-integer program; compared with the best single type.",
)
EXECUTOR = typer.Option(
    "local",
    "--executor",
    parser=values.choice("local", "ray"),
    help="Where --percentile simulations (and, on ray, each chip's sweep) run: local (a process pool) or ray "
    "(pip install 'roofline[ray]').",
)
WORKERS = typer.Option(2, "--workers", parser=values.count(maximum=1024), help="Local processes or local Ray CPUs.")
RAY_ADDRESS = typer.Option(
    None,
    "--ray-address",
    parser=values.name,
    help="A Ray cluster to run on (auto, or ray://head:10001); default: a local Ray for the run.",
)


def plan_command(
    model: str = MODEL,
    hardware: str = typer.Option(..., "--hardware", "-H", help="Chips to consider, comma-separated."),
    qps: float = typer.Option(
        None,
        "--qps",
        "--arrival-rate",
        parser=values.rate,
        help="Requests per second to serve (alias --arrival-rate); with --diurnal, the peak.",
    ),
    input_len: int = INPUT_LEN,
    output_len: int = OUTPUT_LEN,
    lengths: str = LENGTHS,
    lengths_csv: str = LENGTHS_CSV,
    ttft_slo: float = TTFT_SLO,
    tpot_slo: float = TPOT_SLO,
    confidence: float = typer.Option(
        None,
        "--confidence",
        parser=values.number(0.5, 0.99),
        help="Meet the SLOs at the pessimistic edge of the prediction's band at this confidence, e.g. 0.9.",
    ),
    price: str = typer.Option(None, "--price", help="$/chip-hour: 2.5 for all, or h100-sxm=2.5,tpu-v5e=1.1."),
    weights: str = typer.Option(",".join(WEIGHT_DTYPES), "--weights", help="Weight dtypes to try, comma-separated."),
    kv_dtype: str = typer.Option(",".join(KV_DTYPES), "--kv-dtype", help="KV-cache dtypes to try, comma-separated."),
    compute_dtype: str = typer.Option(
        None,
        "--compute-dtype",
        parser=values.dtype_spec,
        help="Matmul dtype of every candidate (default bf16); per component like step's: fp8_block,experts=nvfp4.",
    ),
    max_chips: int = typer.Option(
        256,
        "--max-chips",
        parser=values.count(maximum=1 << 16),
        help="Largest slice per replica (also the chip's ICI domain).",
    ),
    mfu: float = MFU,
    top: int = typer.Option(
        5, "--top", parser=values.count(maximum=10_000), help="Show this many cheapest deployments."
    ),
    tp: str = typer.Option(
        None, "--tp", help="Tensor-parallel degrees to try, comma-separated (default: each slice is one tp group)."
    ),
    pp: str = typer.Option(None, "--pp", help="Pipeline depths to try, comma-separated (default 1)."),
    ep: int = EP,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    percentile: str = typer.Option(
        None,
        "--percentile",
        help="Size the cheapest candidates by simulation so the SLOs hold at p50, p90 or p99 (slower).",
    ),
    requests: int = typer.Option(
        None,
        "--requests",
        parser=values.count(10, 1_000_000),
        help="Simulated requests per --percentile run (default 2000).",
    ),
    load_profile: str = LOAD_PROFILE,
    diurnal: bool = DIURNAL,
    trough: float = TROUGH,
    min_replicas: int = MIN_REPLICAS,
    load_bandwidth: float = LOAD_BANDWIDTH,
    spare: int = SPARE,
    spare_nodes: int = SPARE_NODES,
    node_chips: int = NODE_CHIPS,
    max_replicas: int = MAX_REPLICAS,
    mix: bool = MIX,
    executor: str = EXECUTOR,
    workers: int = WORKERS,
    ray_address: str = RAY_ADDRESS,
    explain: bool = typer.Option(False, "--explain", help="Show formulas and values behind the best plan."),
    wide: bool = WIDE_OPTION,
    csv_path: str = PLAN_CSV,
    html_path: str = typer.Option(
        None, "--html", help="With a day of load: write its page (load, replicas and cost over the day) here."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Cheapest deployment (chips, sharding, batch, dtypes, replicas) meeting qps and latency targets.

    Example: roofline plan --model llama-3-70b --hardware h100-sxm,tpu-v5e --qps 10 -i 2048 -o 256 --tpot-slo 50ms
    """
    from roofline.analyses.executors import ExecutorConfig
    from roofline.analyses.plan.capacity import PlanConfig, SearchSpace, Targets
    from roofline.analyses.plan.spares import Spares

    day_mode = load_profile is not None or diurnal
    check_plan_flags(qps, load_profile, diurnal, mix, percentile)
    refuse_without("--diurnal", diurnal, {"--trough": trough})
    day_flags = {"--min-replicas": min_replicas, "--load-bandwidth": load_bandwidth, "--html": html_path}
    refuse_without("--load-profile or --diurnal", day_mode, day_flags)
    refuse_without("--spare-nodes", spare_nodes > 0, {"--node-chips": node_chips})
    refuse_without("--executor ray", executor == "ray", {"--ray-address": ray_address})
    refuse_without("--percentile", percentile is not None, {"--requests": requests})
    m = load_model_option(model)
    compute, compute_components = compute_from_option(compute_dtype or "bf16", m)
    hws = [
        load_hardware_option(h, compute_dtype=compute_dtype or "bf16", command=None if compute_dtype else "plan")
        for h in split_names(hardware, "--hardware")
    ]
    check_outputs([("--csv", csv_path), ("--html", html_path)])
    profile = None
    if load_profile is not None:
        from roofline.analyses.plan.load_profile import read_load_profile

        profile = read_load_profile(load_profile, "--load-profile")
    elif diurnal:
        from roofline.analyses.plan.load_profile import DEFAULT_TROUGH_FRACTION, diurnal_profile

        profile = diurnal_profile(qps, DEFAULT_TROUGH_FRACTION if trough is None else trough)
    own = profile is not None and profile.has_own_lengths and input_len is None and output_len is None
    dist = (
        None
        if own and lengths is None and lengths_csv is None
        else lengths_from_options(input_len, output_len, lengths, lengths_csv, m)
    )
    space = SearchSpace(
        max_chips=max_chips,
        weights=check_dtypes(split_names(weights, "--weights"), "--weights"),
        kv_dtypes=check_dtypes(split_names(kv_dtype, "--kv-dtype"), "--kv-dtype"),
        tp=None if tp is None else tuple(parse_int_list(tp, "--tp", 1 << 20).tolist()),
        pp=None if pp is None else tuple(parse_int_list(pp, "--pp", 1 << 20).tolist()),
        ep=ep,
        mfu=mfu,
        memory_utilization=memory_utilization,
        engine=engine,
        prices=parse_prices(price, [h.name for h in hws]),
        confidence=confidence,
        compute_dtype=compute,
        compute_components=compute_components,
    )
    run_on = ExecutorConfig(executor, workers, ray_address)
    runs = 2000 if requests is None else requests
    spares = Spares(spare, spare_nodes, node_chips)
    config = PlanConfig(Targets(ttft_slo, tpot_slo), space, spares, max_replicas, top, run_on)
    if day_mode:
        from roofline.views.cli.plan_run import day_command

        day_command(
            m,
            hws,
            profile,
            dist,
            config,
            1 if min_replicas is None else min_replicas,
            load_bandwidth,
            percentile,
            run_on,
            as_json,
            csv_path,
            html_path,
            runs,
        )
        return
    if mix:
        from roofline.views.cli.plan_run import mix_command

        mix_command(m, hws, qps, dist, config, as_json, csv_path)
        return
    from roofline.views.cli.plan_run import steady_command

    steady_command(m, hws, qps, dist, config, percentile, run_on, explain, wide, csv_path, as_json, runs)


def check_plan_flags(
    qps: float | None, load_profile: str | None, diurnal: bool, mix: bool, percentile: str | None
) -> None:
    """Flags that need or exclude one another: one line naming them (exit 2)."""
    if load_profile is not None and (qps is not None or diurnal):
        raise OptionError("--load-profile gives the rates: drop --qps and --diurnal")
    if load_profile is None and qps is None:
        raise OptionError("give --qps (requests/s; the peak with --diurnal) or --load-profile FILE")
    if mix and (load_profile is not None or diurnal):
        raise OptionError("--mix plans one steady --qps; it does not take --load-profile or --diurnal")
    if mix and percentile is not None:
        raise OptionError("--mix plans in closed form; it does not take --percentile")


def inverse_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    chips: int = CHIPS,
    batch: int = BATCH,
    context: int = CONTEXT,
    tpot_slo: float = typer.Option(
        ..., "--tpot-slo", parser=values.seconds, metavar="TIME", help="Time-per-output-token target, e.g. 20ms."
    ),
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    memory_utilization: float = MEMORY_UTILIZATION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Closed-form inverse questions: longest context, KV/weights crossover batch, bandwidth, chips, batch.

    Example: roofline inverse --model llama-2-13b --hardware tpu-v5e --chips 8 --batch 16 --context 8192 --tpot-slo 10ms
    """
    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype="bf16", command="inverse")
    precision = precision_from_options(weights, kv_dtype, "bf16")
    ans = inverse_questions(m, hw, chips, batch, context, tpot_slo, precision, memory_utilization)
    data: dict[str, object] = {
        "model": m.name,
        "hardware": hw.name,
        "chips": chips,
        "batch": batch,
        "context": context,
        "weights": weights,
        "kv_dtype": kv_dtype,
        **asdict(ans),
    }

    def render() -> None:
        table = compact_table(
            f"{m.name} on {chips}x {hw.name}, batch {batch}, context {context}: step "
            f"{format_seconds(ans.step_time_s)}, target {format_seconds(ans.tpot_s)}",
            ["question", "answer", "formula"],
            left=("answer", "formula"),
        )
        rows = [
            (
                "longest context that fits at this batch",
                f"{ans.longest_context_tokens:,.0f} tokens",
                "S: P_bytes + B·KV(S) = usable HBM",
            ),
            ("batch where KV reads overtake weight reads", f"{ans.kv_crossover_batch:,.2f}", "B* = P_bytes / KV_seq"),
            (
                "HBM bandwidth for the TPOT target",
                f"{format_bytes(ans.bandwidth_for_tpot_bytes_per_s)}/s "
                f"({format_bytes(ans.bandwidth_per_chip_for_tpot_bytes_per_s)}/s per chip)",
                "max((B·KV + P_bytes)/T, B·KV/(T - 2BP/C)), spec C",
            ),
            (
                "chips for the TPOT target",
                f"{ans.chips_for_tpot:,.0f} (memory needs {ans.min_chips_for_memory:,.0f})",
                "ceil(step(1 chip) / T)",
            ),
            (
                "largest batch meeting the TPOT target",
                f"{ans.max_batch_for_tpot:,.0f} (memory allows {ans.max_batch_for_memory:,.0f})",
                "largest B with step(B) ≤ T (search)",
            ),
        ]
        for row in rows:
            table.add_row(*row)
        console.print(table)
        print_assumptions(memory_utilization=memory_utilization, sources=ans.sources)

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)
    app.command("inverse")(inverse_command)
