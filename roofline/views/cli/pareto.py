"""`roofline pareto`: the Pareto frontiers of a sweep (one per chip or group), --csv and --html."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import typer
from rich.table import Table

from roofline.analyses.pareto import OBJECTIVES, frontier_by_group
from roofline.analyses.sweep.run import COLUMNS, SweepResult
from roofline.core.errors import RooflineError
from roofline.core.files import write_atomic
from roofline.core.fmt import format_seconds
from roofline.core.tables import csv_writer
from roofline.views.cli._common import JSON_OPTION, WIDE_OPTION, compact_table, console, emit
from roofline.views.cli.options import ENGINE
from roofline.views.cli.sweep import (
    BATCH,
    CHIPS,
    COMPUTE,
    CONTEXT,
    DEFAULT_CHIPS,
    EP,
    GROUP,
    HARDWARE,
    HTML,
    KV_DTYPE,
    MEMORY_UTILIZATION,
    MODEL,
    OBJECTIVE,
    OBJECTIVE_SHORT,
    PARETO_CSV,
    PP,
    PRICE,
    TOPOLOGY,
    TP,
    WEIGHTS,
    print_skipped,
    run_sweep,
    summary,
    sweep_assumptions,
)
from roofline.views.cli.values import check_outputs, split_names


def frontier_table(result: SweepResult, name: str, groups: dict[object, object], model: str, wide: bool) -> Table:
    """One frontier's points; the default columns fit 80 columns, ``wide`` adds tp, dtypes and bound."""
    cols = ["group", "chips", "batch", "step", "tok/s\n/chip", "tok/s\n/user", "$/Mtok"]
    if wide:
        cols += ["tp", "pp", "weights", "KV", "context", "bound"]
    table = compact_table(f"{model}: {name} frontier", cols, left=("weights", "KV", "bound"))
    for key, idx in groups.items():
        for row in result.select(idx).rows():
            slice_ = row["topology"] or str(row["chips"])
            extra = (
                [str(row["tp"]), str(row["pp"]), row["weights"], row["kv_dtype"], str(row["context"]), row["bound"]]
                if wide
                else []
            )
            table.add_row(
                str(key),
                slice_,
                str(row["batch"]),
                format_seconds(row["step_time_s"]),
                f"{row['tokens_per_s_per_chip']:,.1f}",
                f"{row['tokens_per_s_per_user']:,.1f}",
                f"{row['cost_per_million_tokens']:.3f}",
                *extra,
            )
    return table


def pareto_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    batch: str = BATCH,
    chips: str = CHIPS,
    context: str = CONTEXT,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    tp: str = TP,
    compute_dtype: str = COMPUTE,
    price: str = PRICE,
    topology: str = TOPOLOGY,
    pp: str = PP,
    ep: str = EP,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    objective: str = OBJECTIVE,
    objective_short: str = OBJECTIVE_SHORT,
    group: str = GROUP,
    html_path: str = HTML,
    csv_path: str = PARETO_CSV,
    wide: bool = WIDE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Pareto frontiers of a sweep (one per chip), with the configuration on every point.

    Example: roofline pareto --model llama-3-70b --hardware tpu-v5e,h100-sxm --chips 4,8,16 --html frontier.html
    """
    objective = objective if objective_short is None else objective_short
    objectives = list(OBJECTIVES) if objective == "all" else split_names(objective, "--objective")
    for name in objectives:
        if name not in OBJECTIVES:
            raise RooflineError(f"--objective: unknown {name!r}; allowed: {', '.join(OBJECTIVES)}, all")
    check_outputs([("--html", html_path), ("--csv", csv_path)])
    result = run_sweep(
        model,
        hardware,
        batch,
        chips,
        context,
        weights,
        kv_dtype,
        tp,
        compute_dtype,
        price,
        topology,
        pp,
        memory_utilization,
        frontiers=(objectives, group),
        engine=engine,
        ep=ep,
    )
    if len(result) == 0:
        slices = f"--topology {topology}" if topology else f"--chips {chips or DEFAULT_CHIPS}"
        raise RooflineError(
            f"no configuration of {model} fits in HBM on {hardware} with {slices}; try more chips or smaller dtypes"
        )
    labels = result.group_labels(group)
    frontiers = {name: frontier_by_group(result.columns, labels, name) for name in objectives}
    if html_path is not None:
        from roofline.views.report import write_frontier_page

        notes = [
            ("model", model),
            ("chips", hardware),
            ("slices", topology or f"{chips or DEFAULT_CHIPS} chips"),
            ("batch", batch),
            ("context", context),
            ("weights", weights),
            ("KV", kv_dtype),
            ("tp", tp or "the whole slice"),
            ("evaluated", f"{result.evaluated:,}"),
            ("dropped (out of memory)", f"{result.dropped_out_of_memory:,}"),
        ]
        write_frontier_page(html_path, result, objectives, f"{model}: Pareto frontiers", notes, group=group)
    data = summary(result)
    data["frontiers"] = {
        name: {str(key): result.select(idx).rows() for key, idx in groups.items()} for name, groups in frontiers.items()
    }
    if csv_path is not None:
        write_frontier_csv(csv_path, result, frontiers)
        data["csv"] = str(csv_path)
    if html_path is not None:
        data["html"] = str(html_path)

    def render() -> None:
        for name, groups in frontiers.items():
            console.print(frontier_table(result, name, groups, model, wide))
        console.print(
            f"[dim]{result.evaluated:,} evaluated, {result.dropped_out_of_memory:,} dropped "
            f"(out of memory){'' if wide else '; --wide adds tp, pp, dtypes, context and bound'}[/]"
        )
        print_skipped(result)
        for path in (html_path, csv_path):
            if path is not None:
                console.print(f"wrote {path}")
        sweep_assumptions(result, hardware, memory_utilization)

    emit(data, as_json, render)


def write_frontier_csv(path: str | Path, result: SweepResult, frontiers: dict[str, dict[object, object]]) -> None:
    """Every frontier point as CSV: objective, group, then the sweep's columns."""

    def rows(handle: IO[str]) -> None:
        writer = csv_writer(handle)
        writer.writerow(("objective", "group", *COLUMNS))
        for name, groups in frontiers.items():
            for key, idx in groups.items():
                sel = result.select(idx)
                writer.writerows(
                    (name, str(key), *r) for r in zip(*[sel.column(k).tolist() for k in COLUMNS], strict=True)
                )

    write_atomic(path, rows)


def register(app: typer.Typer) -> None:
    app.command("pareto")(pareto_command)
