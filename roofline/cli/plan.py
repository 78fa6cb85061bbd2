"""`roofline plan`: the cheapest deployment meeting qps, TTFT and TPOT targets."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import typer
from rich.table import Table

from ..errors import RooflineError
from ..explain import explain_deployment
from ..fmt import format_bytes, format_seconds
from ..lengths import lengths_from_options
from ..plan import KV_DTYPES, WEIGHT_DTYPES, inverse_questions, plan
from ..specs import load_hardware, load_model
from ..sweep import parse_int_list
from ..units import parse_quantity
from ._common import CONTEXT_OPTION, JSON_OPTION, console, emit, print_explanations
from .options import MEMORY_UTILIZATION
from .step import precision_from_options


def parse_seconds(option: str, text: str | None) -> float | None:
    """'200ms', '0.2', '50 ms' -> seconds; one-line error naming the option."""
    if text is None:
        return None
    try:
        value = parse_quantity(text if any(c.isalpha() for c in text) else f"{text}s")
    except ValueError as exc:
        raise RooflineError(f"{option}: {exc}") from None
    if value <= 0:
        raise RooflineError(f"{option} must be positive (got {text})")
    return value


def parse_prices(text: str | None, names: list[str]) -> dict[str, float]:
    """'2.5' (every chip) or 'h100-sxm=2.5,tpu-v5e=1.1' -> {chip: $/chip-hour}."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        name, _, value = item.rpartition("=")
        try:
            price = float(value)
        except ValueError:
            raise RooflineError(f"--price: cannot read {item!r}; use 2.5 or h100-sxm=2.5,tpu-v5e=1.1") from None
        if price <= 0:
            raise RooflineError(f"--price must be positive (got {item})")
        targets = [name] if name else names
        for target in targets:
            if target not in names:
                raise RooflineError(f"--price: {target!r} is not among --hardware ({', '.join(names)})")
            out[target] = price
    return out


def plan_command(
    model: str = typer.Option(..., "--model", "-m", help="Built-in model name, YAML or config.json path."),
    hardware: str = typer.Option(..., "--hardware", "-H", help="Chips to consider, comma-separated."),
    qps: float = typer.Option(..., "--qps", help="Requests per second to serve."),
    input_len: int = typer.Option(None, "--input-len", "-i", help="Prompt tokens of every request."),
    output_len: int = typer.Option(None, "--output-len", "-o", help="Generated tokens of every request."),
    lengths: str = typer.Option(None, "--lengths", help="Histogram input:output:weight,..., e.g. 512:128:3,4096:512:1"),
    lengths_csv: str = typer.Option(None, "--lengths-csv", help="CSV with input_len,output_len[,count] columns."),
    ttft_slo: str = typer.Option(None, "--ttft-slo", help="Time-to-first-token target, e.g. 500ms or 0.5."),
    tpot_slo: str = typer.Option(None, "--tpot-slo", help="Time-per-output-token target, e.g. 50ms."),
    price: str = typer.Option(None, "--price", help="$/chip-hour: 2.5 for all, or h100-sxm=2.5,tpu-v5e=1.1."),
    weights: str = typer.Option(",".join(WEIGHT_DTYPES), "--weights", help="Weight dtypes to try, comma-separated."),
    kv_dtype: str = typer.Option(",".join(KV_DTYPES), "--kv-dtype", help="KV-cache dtypes to try, comma-separated."),
    max_chips: int = typer.Option(256, "--max-chips", help="Largest slice per replica (also the chip's ICI domain)."),
    mfu: float = typer.Option(1.0, "--mfu", help="Achieved fraction of peak FLOP/s in prefill."),
    top: int = typer.Option(5, "--top", help="Show this many cheapest deployments."),
    tp: str = typer.Option(None, "--tp", help="Tensor-parallel degrees to try, comma-separated (default: "
                                              "each slice is one tp group)."),
    pp: str = typer.Option(None, "--pp", help="Pipeline depths to try, comma-separated (default 1)."),
    ep: int = typer.Option(None, "--ep", help="Expert-parallel degree for MoE models (divides tp)."),
    memory_utilization: float = MEMORY_UTILIZATION,
    percentile: str = typer.Option(None, "--percentile", help="Size the cheapest candidates by simulation so the "
                                                              "SLOs hold at p50, p90 or p99 (slower)."),
    explain: bool = typer.Option(False, "--explain", help="Show formulas and values behind the best plan."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Cheapest deployment (chips, sharding, batch, dtypes, replicas) meeting qps and latency targets.

    Example: roofline plan --model llama-3-70b --hardware h100-sxm,tpu-v5e --qps 10 -i 2048 -o 256 --tpot-slo 50ms
    """
    m = load_model(model)
    hws = [load_hardware(h.strip()) for h in hardware.split(",") if h.strip()]
    if not hws:
        raise RooflineError("--hardware: give at least one chip, e.g. h100-sxm,tpu-v5e")
    if max_chips < 1 or top < 1:
        raise RooflineError("--max-chips and --top must be at least 1")
    dist = lengths_from_options(input_len, output_len, lengths, lengths_csv)
    options: dict[str, Any] = dict(
        prices=parse_prices(price, [h.name for h in hws]), max_chips=max_chips,
        weights=_names(weights), kv_dtypes=_names(kv_dtype), mfu=mfu,
        tp=None if tp is None else parse_int_list(tp, "--tp").tolist(),
        pp=None if pp is None else parse_int_list(pp, "--pp").tolist(), ep=ep,
        memory_utilization=memory_utilization)
    ttft_s, tpot_s = parse_seconds("--ttft-slo", ttft_slo), parse_seconds("--tpot-slo", tpot_slo)
    sized: list[Any] = []
    if percentile is not None:
        from ..plan_sim import plan_at_percentile

        res, sized = plan_at_percentile(m, hws, qps, dist, percentile, ttft_s, tpot_s, candidates=max(top, 4),
                                        **options)
    else:
        res = plan(m, hws, qps, dist, ttft_s, tpot_s, top=top, **options)
    explanations = explain_deployment(res.best, qps, dist.mean_output) if (explain and res.best) else []
    data: dict[str, Any] = {
        "model": m.name, "hardware": [h.name for h in hws], "qps": qps, "lengths": dist.source,
        "mean_input_len": dist.mean_input, "mean_output_len": dist.mean_output,
        "decode_context": dist.decode_context, "ttft_slo_s": res.ttft_slo_s, "tpot_slo_s": res.tpot_slo_s,
        "best": asdict(res.best) if res.best else None,
        "candidates": [asdict(d) for d in res.candidates],
        "best_per_hardware": {k: asdict(d) for k, d in res.best_per_hardware.items()}, "evaluated": res.evaluated,
        "feasible": res.feasible, "infeasible_by": res.reasons, "sources": res.sources,
        "percentile": percentile,
        "simulated": [{"hardware": z.candidate.hardware, "chips_per_replica": z.candidate.chips_per_replica,
                       "batch": z.candidate.batch, "weights": z.candidate.weights, "kv_dtype": z.candidate.kv_dtype,
                       "closed_form_replicas": z.candidate.replicas, "replicas": z.replicas,
                       f"ttft_{percentile}_s": z.ttft_s, f"tpot_{percentile}_s": z.tpot_s, "meets": z.meets}
                      for z in sized],
    }
    if explain:
        data["explain"] = [e.as_dict() for e in explanations]

    def render() -> None:
        if res.best is None:
            console.print(f"[bold red]no deployment meets the targets[/] ({res.evaluated} configurations; "
                          f"infeasible by memory / TTFT / TPOT: {res.reasons})")
            return
        table = Table(title=f"{m.name}: {qps:g} req/s, {dist.source}; cheapest first")
        for col in ("chip", "chips x replicas", "batch", "weights/KV", "$/h", "$/M out tok", "TTFT", "TPOT",
                    "memory/HBM", "binding"):
            table.add_column(col)
        for d in res.candidates:
            table.add_row(d.hardware, f"{d.chips_per_replica} x {d.replicas}", str(d.batch),
                          f"{d.weights}/{d.kv_dtype}", f"{d.dollars_per_hour:,.2f}",
                          f"{d.cost_per_million_output_tokens:.3f}", format_seconds(d.ttft_s),
                          format_seconds(d.tpot_s), f"{format_bytes(d.memory_bytes)}/{format_bytes(d.hbm_bytes)}",
                          d.binding)
        console.print(table)
        b = res.best
        console.print(f"[bold]plan:[/] {b.replicas} replica(s) of {b.chips_per_replica}x {b.hardware} "
                      f"({b.sharding}), batch {b.batch}, {b.weights} weights / {b.kv_dtype} KV: "
                      f"${b.dollars_per_hour:,.2f}/h, ${b.cost_per_million_output_tokens:.3f} per million output "
                      f"tokens; binding constraint: [bold yellow]{b.binding}[/]")
        if len(hws) > 1:
            for name, d in res.best_per_hardware.items():
                console.print(f"  cheapest on {name}: {d.replicas} x {d.chips_per_replica} chips, batch {d.batch}, "
                              f"{d.weights}/{d.kv_dtype}: ${d.dollars_per_hour:,.2f}/h, "
                              f"${d.cost_per_million_output_tokens:.3f}/M output tokens ({d.binding})")
            missing = [h.name for h in hws if h.name not in res.best_per_hardware]
            if missing:
                console.print(f"  no deployment meets the targets on: {', '.join(missing)}")
        if explain:
            print_explanations(explanations, "where the plan's numbers come from")

    emit(data, as_json, render)


def inverse_command(
    model: str = typer.Option(..., "--model", "-m", help="Built-in model name, YAML or config.json path."),
    hardware: str = typer.Option(..., "--hardware", "-H", help="Built-in chip, YAML or calibrated profile."),
    chips: int = typer.Option(1, "--chips", "-n", help="Chips in the slice."),
    batch: int = typer.Option(1, "--batch", "-b", help="Concurrent sequences (decode batch)."),
    context: int = CONTEXT_OPTION,
    tpot_slo: str = typer.Option(..., "--tpot-slo", help="Time-per-output-token target, e.g. 20ms."),
    weights: str = typer.Option("bf16", "--weights", help="Weight dtype."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache dtype."),
    memory_utilization: float = MEMORY_UTILIZATION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Closed-form inverse questions: longest context, KV/weights crossover batch, bandwidth, chips, batch.

    Example: roofline inverse --model llama-2-13b --hardware tpu-v5e --chips 8 --batch 16 --context 8192 --tpot-slo 10ms
    """
    m, hw = load_model(model), load_hardware(hardware)
    precision = precision_from_options(weights, kv_dtype, "bf16")
    tpot = parse_seconds("--tpot-slo", tpot_slo)
    ans = inverse_questions(m, hw, chips, batch, context, tpot, precision, memory_utilization)
    data: dict[str, Any] = {"model": m.name, "hardware": hw.name, "chips": chips, "batch": batch,
                            "context": context, "weights": weights, "kv_dtype": kv_dtype, **asdict(ans)}

    def render() -> None:
        table = Table(title=f"{m.name} on {chips}x {hw.name}, batch {batch}, context {context}: step "
                            f"{format_seconds(ans.step_time_s)}, target {format_seconds(ans.tpot_s)}")
        for col in ("question", "answer", "formula"):
            table.add_column(col)
        rows = [
            ("longest context that fits at this batch", f"{ans.longest_context_tokens:,.0f} tokens",
             "S: P_bytes + B·KV(S) = chips·HBM"),
            ("batch where KV reads overtake weight reads", f"{ans.kv_crossover_batch:,.2f}",
             "B* = P_bytes / KV_seq"),
            ("HBM bandwidth for the TPOT target", f"{format_bytes(ans.bandwidth_for_tpot_bytes_per_s)}/s "
             f"({format_bytes(ans.bandwidth_per_chip_for_tpot_bytes_per_s)}/s per chip)",
             "max((B·KV + P_bytes)/T, B·KV/(T - 2BP/C))"),
            ("chips for the TPOT target", f"{ans.chips_for_tpot:,.0f} (memory needs {ans.min_chips_for_memory:,.0f})",
             "ceil(step(1 chip) / T)"),
            ("largest batch meeting the TPOT target", f"{ans.max_batch_for_tpot:,.0f} "
             f"(memory allows {ans.max_batch_for_memory:,.0f})", "min((T·W - P_bytes)/KV, T/(KV/W + 2P/C))"),
        ]
        for row in rows:
            table.add_row(*row)
        console.print(table)

    emit(data, as_json, render)


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)
    app.command("inverse")(inverse_command)
