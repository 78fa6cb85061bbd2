"""`roofline plan`: the cheapest deployment meeting qps, TTFT and TPOT targets."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import typer

from roofline.analyses.lengths import lengths_from_options
from roofline.analyses.plan.capacity import KV_DTYPES, WEIGHT_DTYPES, inverse_questions, plan
from roofline.analyses.sweep.run import check_dtypes, parse_int_list
from roofline.core.fmt import format_bytes, format_seconds
from roofline.views.cli import values
from roofline.views.cli._common import (
    JSON_OPTION,
    WIDE_OPTION,
    compact_table,
    console,
    emit,
    print_assumptions,
    print_explanations,
    write_records_csv,
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
    load_hardware_option,
    load_model_option,
    precision_from_options,
)
from roofline.views.cli.values import check_outputs, parse_prices, split_names
from roofline.views.explain import explain_deployment

PLAN_CSV = typer.Option(None, "--csv", help="Write the candidate deployments shown (see --top) to this CSV file.")


def plan_command(
    model: str = MODEL,
    hardware: str = typer.Option(..., "--hardware", "-H", help="Chips to consider, comma-separated."),
    qps: float = typer.Option(
        ..., "--qps", "--arrival-rate", parser=values.rate, help="Requests per second to serve (alias --arrival-rate)."
    ),
    input_len: int = INPUT_LEN,
    output_len: int = OUTPUT_LEN,
    lengths: str = LENGTHS,
    lengths_csv: str = LENGTHS_CSV,
    ttft_slo: float = TTFT_SLO,
    tpot_slo: float = TPOT_SLO,
    price: str = typer.Option(None, "--price", help="$/chip-hour: 2.5 for all, or h100-sxm=2.5,tpu-v5e=1.1."),
    weights: str = typer.Option(",".join(WEIGHT_DTYPES), "--weights", help="Weight dtypes to try, comma-separated."),
    kv_dtype: str = typer.Option(",".join(KV_DTYPES), "--kv-dtype", help="KV-cache dtypes to try, comma-separated."),
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
    explain: bool = typer.Option(False, "--explain", help="Show formulas and values behind the best plan."),
    wide: bool = WIDE_OPTION,
    csv_path: str = PLAN_CSV,
    as_json: bool = JSON_OPTION,
) -> None:
    """Cheapest deployment (chips, sharding, batch, dtypes, replicas) meeting qps and latency targets.

    Example: roofline plan --model llama-3-70b --hardware h100-sxm,tpu-v5e --qps 10 -i 2048 -o 256 --tpot-slo 50ms
    """
    m = load_model_option(model)
    hws = [load_hardware_option(h, compute_dtype="bf16", command="plan") for h in split_names(hardware, "--hardware")]
    check_outputs([("--csv", csv_path)])
    dist = lengths_from_options(input_len, output_len, lengths, lengths_csv)
    options: dict[str, Any] = dict(
        prices=parse_prices(price, [h.name for h in hws]),
        max_chips=max_chips,
        weights=check_dtypes(split_names(weights, "--weights"), "--weights"),
        kv_dtypes=check_dtypes(split_names(kv_dtype, "--kv-dtype"), "--kv-dtype"),
        mfu=mfu,
        tp=None if tp is None else parse_int_list(tp, "--tp", 1 << 20).tolist(),
        pp=None if pp is None else parse_int_list(pp, "--pp", 1 << 20).tolist(),
        ep=ep,
        memory_utilization=memory_utilization,
        engine=engine,
    )
    sized: list[Any] = []
    if percentile is not None:
        from roofline.analyses.plan.percentile import plan_at_percentile

        res, sized = plan_at_percentile(
            m, hws, qps, dist, percentile, ttft_slo, tpot_slo, candidates=max(top, 4), **options
        )
    else:
        res = plan(m, hws, qps, dist, ttft_slo, tpot_slo, top=top, **options)
    explanations = explain_deployment(res.best, qps, dist.mean_output) if (explain and res.best) else []
    data: dict[str, Any] = {
        "model": m.name,
        "hardware": [h.name for h in hws],
        "qps": qps,
        "lengths": dist.source,
        "mean_input_len": dist.mean_input,
        "mean_output_len": dist.mean_output,
        "decode_context": dist.decode_context,
        "ttft_slo_s": res.ttft_slo_s,
        "tpot_slo_s": res.tpot_slo_s,
        "best": asdict(res.best) if res.best else None,
        "candidates": [asdict(d) for d in res.candidates],
        "best_per_hardware": {k: asdict(d) for k, d in res.best_per_hardware.items()},
        "evaluated": res.evaluated,
        "feasible": res.feasible,
        "infeasible_by": res.reasons,
        "sources": res.sources,
        "percentile": percentile,
        "simulated": [
            {
                "hardware": z.candidate.hardware,
                "chips_per_replica": z.candidate.chips_per_replica,
                "batch": z.candidate.batch,
                "weights": z.candidate.weights,
                "kv_dtype": z.candidate.kv_dtype,
                "closed_form_replicas": z.candidate.replicas,
                "replicas": z.replicas,
                f"ttft_{percentile}_s": z.ttft_s,
                f"tpot_{percentile}_s": z.tpot_s,
                "meets": z.meets,
            }
            for z in sized
        ],
    }
    if explain:
        data["explain"] = [e.as_dict() for e in explanations]

    if csv_path is not None:
        write_records_csv(csv_path, [asdict(d) for d in res.candidates])
        data["csv"] = str(csv_path)

    def render() -> None:
        if res.best is None:
            console.print(
                f"[bold red]no deployment meets the targets[/] ({res.evaluated} configurations; "
                f"infeasible by memory / TTFT / TPOT: {res.reasons})"
            )
            return
        cols = [
            "chip",
            "replicas\nx chips",
            "batch",
            "weights\n/KV",
            "$/h",
            "$/Mtok\nout",
            "TTFT",
            "TPOT",
            "binding",
        ] + (["sharding", "memory\n/usable HBM"] if wide else [])
        table = compact_table(
            f"{m.name}: {qps:g} req/s, {dist.source}; cheapest first",
            cols,
            left=("weights\n/KV", "binding", "sharding"),
        )
        for d in res.candidates:
            extra = [d.sharding, f"{format_bytes(d.memory_bytes)}\n/{format_bytes(d.hbm_bytes)}"] if wide else []
            table.add_row(
                d.hardware,
                f"{d.replicas} x {d.chips_per_replica}",
                str(d.batch),
                f"{d.weights}/{d.kv_dtype}",
                f"{d.dollars_per_hour:,.2f}",
                f"{d.cost_per_million_output_tokens:.3f}",
                format_seconds(d.ttft_s),
                format_seconds(d.tpot_s),
                d.binding,
                *extra,
            )
        console.print(table)
        b = res.best
        console.print(
            f"[bold]plan:[/] {b.replicas} replica(s) x {b.chips_per_replica} {b.hardware} chips "
            f"({b.sharding}), batch {b.batch}, {b.weights} weights / {b.kv_dtype} KV: "
            f"${b.dollars_per_hour:,.2f}/h, ${b.cost_per_million_output_tokens:.3f} per million output "
            f"tokens; binding constraint: [bold yellow]{b.binding}[/]"
        )
        if len(hws) > 1:
            for name, d in res.best_per_hardware.items():
                console.print(
                    f"  cheapest on {name}: {d.replicas} replica(s) x {d.chips_per_replica} chips, "
                    f"batch {d.batch}, {d.weights}/{d.kv_dtype}: ${d.dollars_per_hour:,.2f}/h, "
                    f"${d.cost_per_million_output_tokens:.3f}/M output tokens ({d.binding})"
                )
            missing = [h.name for h in hws if h.name not in res.best_per_hardware]
            if missing:
                console.print(f"  no deployment meets the targets on: {', '.join(missing)}")
        if not wide:
            console.print("[dim]--wide adds sharding and memory / usable HBM[/]")
        if csv_path is not None:
            console.print(f"wrote {len(res.candidates)} deployments to {csv_path}")
        print_assumptions(mfu=mfu, memory_utilization=memory_utilization, kinds=tuple(h.kind for h in hws))
        if explain:
            print_explanations(explanations, "where the plan's numbers come from")

    emit(data, as_json, render)


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
    data: dict[str, Any] = {
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
