"""Views of plan's day, chip-mix and failure-headroom results: the ``--json`` objects and the tables.

Helpers of :mod:`roofline.views.cli.plan` (not a command module): each ``*_data`` builds the JSON
object from an analysis result, each ``render_*`` prints it for people (tables within 80 columns).
"""

from __future__ import annotations

from dataclasses import asdict

from roofline.analyses.plan.capacity import PlanCandidate, Resilience
from roofline.analyses.plan.day import DayCandidate, DayPlan
from roofline.analyses.plan.mix import MixPlan
from roofline.core.fmt import format_seconds
from roofline.views.cli._common import compact_table, console
from roofline.views.report.day_page import clock


def shape_text(d: PlanCandidate) -> str:
    """'2 x h100-sxm (tp 2), batch 64, int8/bf16' for sentences."""
    par = f"tp {d.tp}" + (f", pp {d.pp}" if d.pp > 1 else "")
    return f"{d.chips_per_replica} x {d.hardware} ({par}), batch {d.batch}, {d.weights}/{d.kv_dtype}"


# --------------------------------------------------------------------------- failure headroom


def resilience_data(r: Resilience | None) -> dict[str, object] | None:
    if r is None:
        return None
    return {
        "spare_replicas": r.spares.replicas,
        "spare_nodes": r.spares.nodes,
        "node_chips": r.node_chips,
        "plain": asdict(r.plain) if r.plain else None,
        "extra_replicas": r.extra_replicas,
        "extra_dollars_per_hour": r.extra_dollars_per_hour,
        "source": r.source,
    }


def render_resilience(r: Resilience | None, best: PlanCandidate | None) -> None:
    if r is None or best is None:
        return
    plain = r.plain
    if plain is None:
        console.print("  without failure headroom: no deployment either")
        return
    share = r.extra_dollars_per_hour / plain.dollars_per_hour if plain.dollars_per_hour else 0.0
    console.print(
        f"[bold]resilience:[/] {best.spare_replicas} spare replica(s) for {_spares_text(r)}: "
        f"${best.dollars_per_hour:,.2f}/h against ${plain.dollars_per_hour:,.2f}/h without "
        f"({plain.replicas} x {plain.chips_per_replica} {plain.hardware}): +${r.extra_dollars_per_hour:,.2f}/h "
        f"(+{share:.0%})"
    )
    console.print(f"[dim]{r.source}[/]")


def _spares_text(r: Resilience) -> str:
    parts = []
    if r.spares.replicas:
        parts.append(f"{r.spares.replicas} replica(s)")
    if r.spares.nodes:
        parts.append(f"{r.spares.nodes} node(s)")
    return " or ".join(parts) + " down"


# --------------------------------------------------------------------------- a day of load


def day_candidate_data(c: DayCandidate | None) -> dict[str, object] | None:
    if c is None:
        return None
    return {
        "deployment": asdict(c.shape),
        "replicas": c.replicas,
        "cost_per_day": c.cost_per_day,
        "chip_hours": c.chip_hours,
        "replica_hours": c.replica_hours,
        "warmup_replica_hours": c.warmup_replica_hours,
        "scale_up_delay_s": c.scale_up_delay_s,
    }


def day_data(day: DayPlan) -> dict[str, object]:
    """The day's JSON: the chosen shape's schedule and cost, the fixed fleet, the runners-up."""
    best, fixed = day.best, day.fixed_fleet
    saving = (fixed.cost_per_day - best.cost_per_day) if (best and fixed) else None
    return {
        "profile": day.profile.source,
        "slots": len(day.profile),
        "cost_per_day": best.cost_per_day if best else None,
        "chip_hours": best.chip_hours if best else None,
        "replica_hours": best.replica_hours if best else None,
        "warmup_replica_hours": best.warmup_replica_hours if best else None,
        "scale_up_delay_s": best.scale_up_delay_s if best else None,
        "schedule": [asdict(s) for s in day.schedule],
        "fixed_fleet": day_candidate_data(fixed),
        "saving_vs_fixed_per_day": saving,
        "candidates": [day_candidate_data(c) for c in day.candidates],
        "plain": day_candidate_data(day.plain),
        "evaluated": day.evaluated,
        "feasible": day.feasible,
        "infeasible_by": day.reasons,
        "sources": day.sources,
    }


def render_day(day: DayPlan, model: str, percentile: str | None) -> None:
    best, fixed = day.best, day.fixed_fleet
    if best is None:
        console.print(
            f"[bold red]no deployment serves every slot of the day[/] ({day.evaluated} configurations; "
            f"infeasible by memory / TTFT / TPOT: {day.reasons}; a slot's max_replicas may rule shapes out)"
        )
        return
    how = f"{percentile} by simulation" if percentile else "closed form"
    table = compact_table(
        f"{model}: {day.profile.source}; {shape_text(best.shape)}",
        ["start", "hours", "req/s", "replicas", "req/s per\nreplica", "TTFT", "TPOT", f"SLO\n({how})"],
    )
    for s in day.schedule:
        reps = f"{s.replicas}" + (f" ({s.spare_replicas} spare)" if s.spare_replicas else "")
        cap = f" cap {s.max_replicas:g}" if s.max_replicas != float("inf") else ""
        table.add_row(
            clock(s.start_hour),
            f"{s.hours:g}",
            f"{s.rate:,.3g}",
            reps + cap,
            f"{s.rate_per_replica:,.3g}",
            format_seconds(s.ttft_s),
            format_seconds(s.tpot_s),
            "met" if s.meets_slo else "[red]missed[/]",
        )
    console.print(table)
    console.print(
        f"[bold]day plan:[/] {shape_text(best.shape)}: {min(best.replicas)}-{max(best.replicas)} replicas, "
        f"{best.chip_hours:,.1f} chip-hours, [bold]${best.cost_per_day:,.2f} per day[/] "
        f"(scale-up delay {format_seconds(best.scale_up_delay_s)} to load the weights, "
        f"{best.warmup_replica_hours:.2f} replica-hours of it)"
    )
    if fixed is not None:
        saving = fixed.cost_per_day - best.cost_per_day
        share = saving / fixed.cost_per_day if fixed.cost_per_day else 0.0
        console.print(
            f"  a fixed fleet sized for the peak: {fixed.replicas[0]} x {shape_text(fixed.shape)}, "
            f"${fixed.cost_per_day:,.2f} per day; autoscaling saves ${saving:,.2f} ({share:.0%})"
        )
    if day.plain is not None:
        extra = best.cost_per_day - day.plain.cost_per_day
        console.print(
            f"[bold]resilience:[/] ${best.cost_per_day:,.2f} per day against ${day.plain.cost_per_day:,.2f} "
            f"without failure headroom: +${extra:,.2f} per day"
        )
        if "spares" in day.sources:
            console.print(f"[dim]{day.sources['spares']}[/]")
    console.print(f"[dim]{day.sources.get('autoscaling', '')}[/]")


# --------------------------------------------------------------------------- a mix of chip types


def mix_data(mix: MixPlan, qps: float) -> dict[str, object]:
    """The mix's JSON; ``best`` (built by the caller from :func:`mix_best`) holds the whole mix's cost."""
    return {
        "parts": [
            {"hardware": p.hardware, "buckets": p.buckets, "qps": p.qps, "deployment": asdict(p.deployment)}
            for p in mix.parts
        ],
        "dollars_per_hour": mix.dollars_per_hour,
        "cost_per_million_output_tokens": mix.cost_per_million_output_tokens,
        "best_single": asdict(mix.best_single) if mix.best_single else None,
        "single_per_hardware": {k: asdict(v) for k, v in mix.single_per_hardware.items()},
        "saving_dollars_per_hour": mix.saving_dollars_per_hour,
        "saving_fraction": mix.saving_fraction,
        "program_dollars_per_hour": mix.program_dollars_per_hour,
        "buckets": [
            {
                "name": b.name,
                "qps": b.qps,
                "mean_input_len": b.lengths.mean_input,
                "mean_output_len": b.lengths.mean_output,
            }
            for b in mix.buckets
        ],
        "sources": mix.sources,
    }


def mix_best(mix: MixPlan) -> dict[str, object] | None:
    """``best`` of a mix: the whole mix's cost and chips (``dollars_per_hour`` is the total)."""
    if not mix.parts:
        return None
    return {
        "hardware": "+".join(p.hardware for p in mix.parts),
        "dollars_per_hour": mix.dollars_per_hour,
        "cost_per_million_output_tokens": mix.cost_per_million_output_tokens,
        "total_chips": sum(p.deployment.total_chips for p in mix.parts),
        "replicas": sum(p.deployment.replicas for p in mix.parts),
        "binding": "mix",
    }


def render_mix(mix: MixPlan, model: str, qps: float) -> None:
    if not mix.parts:
        console.print("[bold red]no deployment meets the targets on any chip type[/]")
        return
    table = compact_table(
        f"{model}: {qps:g} req/s split by length over {len(mix.single_per_hardware) or len(mix.parts)} chip type(s)",
        ["chip", "buckets", "req/s", "replicas\nx chips", "batch", "$/h"],
        left=("buckets",),
    )
    for p in mix.parts:
        d = p.deployment
        table.add_row(
            p.hardware,
            "; ".join(p.buckets),
            f"{p.qps:,.3g}",
            f"{d.replicas} x {d.chips_per_replica}",
            str(d.batch),
            f"{d.dollars_per_hour:,.2f}",
        )
    console.print(table)
    console.print(
        f"[bold]mix:[/] ${mix.dollars_per_hour:,.2f}/h, "
        f"${mix.cost_per_million_output_tokens:.3f} per million output tokens"
    )
    single = mix.best_single
    if single is not None:
        console.print(
            f"  best single type: {single.replicas} x {shape_text(single)}: ${single.dollars_per_hour:,.2f}/h; "
            f"the mix saves ${mix.saving_dollars_per_hour:,.2f}/h ({mix.saving_fraction:.1%})"
        )
    for name, d in mix.single_per_hardware.items():
        if single is None or name != single.hardware:
            console.print(f"  {name} alone: ${d.dollars_per_hour:,.2f}/h")
    console.print(f"[dim]{mix.sources.get('mix', '')}; program estimate ${mix.program_dollars_per_hour:,.2f}/h[/]")
