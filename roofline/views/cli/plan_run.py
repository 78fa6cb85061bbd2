"""Runs of ``roofline plan``: call the analysis for a steady rate, a day of load or a chip mix, then emit
its JSON object or its tables (:mod:`roofline.views.cli.plan_views`).  Helpers of :mod:`roofline.views.cli.plan`."""

from __future__ import annotations

from dataclasses import asdict

from roofline.analyses.executors import ExecutorConfig
from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.plan.capacity import PlanCandidate, PlanConfig, PlanResult, plan_with
from roofline.analyses.plan.load_profile import LoadProfile
from roofline.analyses.plan.shapes import SearchSpace
from roofline.core.fmt import format_bytes, format_seconds
from roofline.specs import HardwareSpec, ModelSpec
from roofline.views.cli._common import (
    compact_table,
    console,
    emit,
    print_assumptions,
    print_explanations,
    progress_bar,
    write_records_csv,
)
from roofline.views.cli.plan_views import (
    day_data,
    mix_best,
    mix_data,
    render_day,
    render_mix,
    render_resilience,
    resilience_data,
)
from roofline.views.explain import explain_deployment


def header(
    m: ModelSpec, hws: list[HardwareSpec], qps: float, dist: LengthDistribution, config: PlanConfig
) -> dict[str, object]:
    """The JSON keys every plan starts with: what was asked."""
    return {
        "model": m.name,
        "hardware": [h.name for h in hws],
        "qps": qps,
        "lengths": dist.source,
        "mean_input_len": dist.mean_input,
        "mean_output_len": dist.mean_output,
        "ttft_slo_s": config.targets.ttft_slo_s,
        "tpot_slo_s": config.targets.tpot_slo_s,
    }


def best_bands(m: ModelSpec, hws: list[HardwareSpec], best: PlanCandidate, space: SearchSpace) -> dict[str, object]:
    """The p10-p90 bands of the best plan's TTFT and TPOT (its chip's data tier; analyses.bands)."""
    from roofline.analyses.bands import bands_for
    from roofline.deploy import deployment

    hw = next(h for h in hws if h.name == best.hardware)
    dep = deployment(m, hw, 1, engine=space.engine)
    return bands_for(dep, {"ttft_s": best.ttft_s, "tpot_s": best.tpot_s})


def steady_command(
    m: ModelSpec,
    hws: list[HardwareSpec],
    qps: float,
    dist: LengthDistribution,
    config: PlanConfig,
    percentile: str | None,
    run_on: ExecutorConfig,
    explain: bool,
    wide: bool,
    csv_path: str | None,
    as_json: bool,
    requests: int = 2000,
) -> None:
    """One steady rate: the closed-form plan, or sized at a percentile by simulation."""
    sized: list[object] = []
    space = config.space
    if percentile is not None:
        from roofline.analyses.plan.percentile import SimulationSettings, plan_at_percentile_with

        settings = SimulationSettings(percentile, requests, executor=run_on)
        with progress_bar("simulating candidates", not as_json) as progress:
            res, sized = plan_at_percentile_with(m, hws, qps, dist, config, settings, max(config.top, 4), progress)
    else:
        res = plan_with(m, hws, qps, dist, config)
    explanations = explain_deployment(res.best, qps, dist.mean_output) if (explain and res.best) else []
    data: dict[str, object] = {
        **header(m, hws, qps, dist, config),
        "decode_context": dist.decode_context,
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
        "resilience": resilience_data(res.resilience),
    }
    if explain:
        data["explain"] = [e.as_dict() for e in explanations]
    if res.best is not None:
        data["bands"] = best_bands(m, hws, res.best, space)

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
        render_steady(res, m.name, qps, dist, hws, wide)
        render_resilience(res.resilience, res.best)
        if csv_path is not None:
            console.print(f"wrote {len(res.candidates)} deployments to {csv_path}")
        hardware = " ".join(v for k, v in res.sources.items() if k.startswith("hardware:"))
        print_assumptions(
            mfu=space.mfu,
            memory_utilization=space.memory_utilization,
            kinds=tuple(h.kind for h in hws),
            sources={"hardware": hardware},
        )
        if explain:
            print_explanations(explanations, "where the plan's numbers come from")

    emit(data, as_json, render)


def render_steady(
    res: PlanResult, model: str, qps: float, dist: LengthDistribution, hws: list[HardwareSpec], wide: bool
) -> None:
    """The candidates' table and the plan's sentence."""
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
        f"{model}: {qps:g} req/s, {dist.source}; cheapest first",
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
        f"({b.sharding}), batch {b.batch}, {b.weights} weights / {b.kv_dtype} KV"
        f"{'' if b.compute_dtype == 'bf16' else f' / {b.compute_dtype} matmuls'}: "
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


def day_command(
    m: ModelSpec,
    hws: list[HardwareSpec],
    profile: LoadProfile,
    dist: LengthDistribution | None,
    config: PlanConfig,
    min_replicas: int,
    load_bandwidth: float | None,
    percentile: str | None,
    run_on: ExecutorConfig,
    as_json: bool,
    csv_path: str | None,
    html_path: str | None = None,
    requests: int = 2000,
) -> None:
    """A day of load: the schedule, chip-hours and cost per day (``cost_per_day``), simulated per slot
    with ``percentile``; ``html_path`` gets the day page."""
    from roofline.analyses.plan.day import DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S, Autoscaling, plan_day

    autoscaling = Autoscaling(min_replicas, load_bandwidth or DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S)
    if percentile is not None:
        from roofline.analyses.plan.percentile import SimulationSettings, plan_day_at_percentile

        with progress_bar("simulating slots", not as_json) as progress:
            settings = SimulationSettings(percentile, requests, executor=run_on)
            day, _ = plan_day_at_percentile(m, hws, profile, dist, config, autoscaling, settings, progress=progress)
    else:
        day = plan_day(m, hws, profile, dist, config, autoscaling)
    best = day.best
    body = day_data(day)
    data: dict[str, object] = {
        "model": m.name,
        "hardware": [h.name for h in hws],
        "qps": profile.peak_rate,
        "lengths": dist.source if dist is not None else "per slot (load profile)",
        "ttft_slo_s": config.targets.ttft_slo_s,
        "tpot_slo_s": config.targets.tpot_slo_s,
        "percentile": percentile,
        "best": asdict(best.shape) if best else None,
        "cost_per_day": body["cost_per_day"],
        "day": body,
        "evaluated": day.evaluated,
        "feasible": day.feasible,
        "infeasible_by": day.reasons,
        "sources": day.sources,
    }
    if csv_path is not None:
        write_records_csv(csv_path, body["schedule"])
        data["csv"] = str(csv_path)
    if html_path is not None:
        from roofline.views.report.day_page import write_day_page

        write_day_page(html_path, day, f"{m.name}: a day of load on {', '.join(h.name for h in hws)}")
        data["html"] = str(html_path)

    def render() -> None:
        render_day(day, m.name, percentile)
        if csv_path is not None:
            console.print(f"wrote {len(day.schedule)} slots to {csv_path}")
        if html_path is not None:
            console.print(f"wrote the day page to {html_path}")
        space = config.space
        print_assumptions(mfu=space.mfu, memory_utilization=space.memory_utilization, kinds=tuple(h.kind for h in hws))

    emit(data, as_json, render)


def mix_command(
    m: ModelSpec,
    hws: list[HardwareSpec],
    qps: float,
    dist: LengthDistribution,
    config: PlanConfig,
    as_json: bool,
    csv_path: str | None,
) -> None:
    """The cheapest mix of chip types by length bucket; ``best.dollars_per_hour`` is the whole mix's cost."""
    from roofline.analyses.plan.mix import plan_mix

    mix = plan_mix(m, hws, qps, dist, config)
    body = mix_data(mix, qps)
    data: dict[str, object] = {
        **header(m, hws, qps, dist, config),
        "best": mix_best(mix),
        "mix": body,
        "evaluated": mix.evaluated,
        "sources": mix.sources,
    }
    if csv_path is not None:
        write_records_csv(
            csv_path,
            [
                {"hardware": p["hardware"], "buckets": "; ".join(p["buckets"]), "qps": p["qps"], **p["deployment"]}
                for p in body["parts"]
            ],
        )
        data["csv"] = str(csv_path)

    def render() -> None:
        render_mix(mix, m.name, qps)
        if csv_path is not None:
            console.print(f"wrote {len(mix.parts)} chip types to {csv_path}")
        space = config.space
        print_assumptions(mfu=space.mfu, memory_utilization=space.memory_utilization, kinds=tuple(h.kind for h in hws))

    emit(data, as_json, render)
