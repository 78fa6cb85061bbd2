"""`roofline sweep`: every configuration of a Cartesian sweep (--csv/--json); its options and runner are
shared with `roofline pareto` (views/cli/pareto.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO

import typer
from rich.table import Table

from roofline.analyses.pareto import OBJECTIVES
from roofline.analyses.step import DEFAULT_CONTEXT
from roofline.analyses.sweep.frontier import decode_frontier
from roofline.analyses.sweep.run import COLUMNS, SweepResult, check_dtypes, decode_sweep, parse_int_list
from roofline.core.errors import RooflineError
from roofline.core.files import write_atomic
from roofline.core.fmt import format_seconds
from roofline.core.tables import csv_writer
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit, print_assumptions
from roofline.views.cli.options import ENGINE, compute_from_option, load_hardware_option, load_model_option
from roofline.views.cli.values import check_outputs, parse_prices, split_names

__all__ = ["MEMORY_UTILIZATION", "parse_prices", "run_sweep", "split_names"]

MODEL = typer.Option(
    ..., "--model", "-m", parser=values.name, help="Built-in or catalog model name, YAML or config.json path."
)
HARDWARE = typer.Option("tpu-v5e,h100-sxm", "--hardware", "-H", help="Comma-separated chips (names or YAML).")
BATCH = typer.Option("1..4096", "--batch", "-b", help="Batch sizes: '1,8,16' or a doubling range '1..4096'.")
#: Chips per slice swept when neither --chips nor --topology is given.
DEFAULT_CHIPS = "1,2,4,8"
CHIPS = typer.Option(
    None,
    "--chips",
    "-n",
    help=f"Chips per slice: '1,2,4,8' or '1..64' (default {DEFAULT_CHIPS}; with --topology: its sizes).",
)
TOPOLOGY = typer.Option(
    None,
    "--topology",
    help="Slice shapes instead of --chips, e.g. '2x2,2x4,4x4' (the collectives run on those ICI axes).",
)
CONTEXT = typer.Option(str(DEFAULT_CONTEXT), "--context", "-s", help="Context lengths (tokens in each KV cache).")
WEIGHTS = typer.Option("bf16", "--weights", help="Weight dtypes, comma-separated (bf16, int8, int4, ...).")
KV_DTYPE = typer.Option("bf16", "--kv-dtype", help="KV-cache dtypes, comma-separated.")
TP = typer.Option(
    None,
    "--tp",
    help="Model-parallel degrees to try (each must divide --chips); default: the whole slice is one tp group.",
)
PP = typer.Option(None, "--pp", help="Pipeline depths to try, comma-separated (tp·pp must divide --chips).")
EP = typer.Option(
    None,
    "--ep",
    help="Expert-parallel degrees to try (MoE), comma-separated; one above tp runs attention data-parallel over "
    "ep/tp ranks (e.g. --tp 1 --ep 8).",
)
MEMORY_UTILIZATION = typer.Option(
    DEFAULT_MEMORY_UTILIZATION,
    "--memory-utilization",
    parser=values.fraction,
    help=f"Fraction of physical HBM the engine may use (default "
    f"{DEFAULT_MEMORY_UTILIZATION}); 1 = the book's accounting.",
)
COMPUTE = typer.Option(
    "bf16",
    "--compute-dtype",
    parser=values.dtype_spec,
    help="Matmul dtype of every point (its FLOP/s and kernels are used); per component like step's: "
    "fp8_block,experts=nvfp4.",
)
PRICE = typer.Option(
    None,
    "--price",
    help="USD per chip-hour: one number for every chip or 'h100-sxm=2.5,tpu-v5e=1.2' (default: hardware files).",
)
CSV = typer.Option(None, "--csv", help="Write every point that fits to this CSV file.")
PARETO_CSV = typer.Option(None, "--csv", help="Write the frontier points to this CSV file.")
HTML = typer.Option(None, "--html", help="Write a self-contained HTML page of the frontiers.")
OBJECTIVE = typer.Option(
    "latency-throughput", "--objective", help=f"Comma-separated frontiers: {', '.join(OBJECTIVES)} or 'all'."
)
#: ``-o`` is ``--output-len`` everywhere else; pareto still reads it as --objective for old scripts.
OBJECTIVE_SHORT = typer.Option(None, "-o", hidden=True, help="Deprecated short form of --objective.")
GROUP = typer.Option(
    "hardware",
    "--group",
    parser=values.choice("hardware", "weights", "kv_dtype", "all"),
    help="One frontier per: hardware, weights, kv_dtype or all.",
)


#: Largest slice (chips) or parallel degree a sweep takes: the deployment model's own limit.
MAX_SLICE_CHIPS = 1 << 20


def run_sweep(
    model: str,
    hardware: str,
    batch: str,
    chips: str | None,
    context: str,
    weights: str,
    kv_dtype: str,
    tp: str | None,
    compute_dtype: str,
    price: str | None,
    topology: str | None = None,
    pp: str | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    frontiers: tuple[Sequence[str], str] | None = None,
    engine: str | None = None,
    ep: str | None = None,
) -> SweepResult:
    """Parse the shared sweep options and run :func:`roofline.analyses.sweep.run.decode_sweep`, or with
    ``frontiers`` = (objectives, group) :func:`roofline.analyses.sweep.frontier.decode_frontier`: the same
    sweep streamed to those frontiers (memory bounded by the frontier, not the grid)."""
    m = load_model_option(model)
    compute, compute_components = compute_from_option(compute_dtype, m)
    hw = [load_hardware_option(h, compute_dtype=compute_dtype) for h in split_names(hardware, "--hardware")]
    extra: dict[str, object] = {}
    if frontiers is not None:
        run = decode_frontier
        extra = {"objectives": tuple(frontiers[0]), "group": frontiers[1]}
    else:
        run = decode_sweep
    return run(
        m,
        hw,
        batch=parse_int_list(batch, "--batch"),
        chips=(
            None
            if chips is None and topology is not None
            else parse_int_list(DEFAULT_CHIPS if chips is None else chips, "--chips", MAX_SLICE_CHIPS)
        ),
        context=parse_int_list(context, "--context"),
        weights=check_dtypes(split_names(weights, "--weights"), "--weights"),
        kv_dtypes=check_dtypes(split_names(kv_dtype, "--kv-dtype"), "--kv-dtype"),
        tp=None if tp is None else parse_int_list(tp, "--tp", MAX_SLICE_CHIPS).tolist(),
        pp=None if pp is None else parse_int_list(pp, "--pp", MAX_SLICE_CHIPS).tolist(),
        memory_utilization=memory_utilization,
        compute_dtype=compute,
        compute_components=compute_components,
        prices=parse_prices(price, [h.name for h in hw]),
        topologies=None if topology is None else [_topology(t) for t in split_names(topology, "--topology")],
        engine=engine,
        ep=None if ep is None else parse_int_list(ep, "--ep", MAX_SLICE_CHIPS).tolist(),
        **extra,
    )


def _topology(text: str) -> str:
    try:
        return values.topology_text(text)
    except ValueError as exc:
        raise RooflineError(f"--topology: {exc}") from None


def write_csv(path: str | Path, result: SweepResult) -> None:
    """All points as CSV (header = sweep.COLUMNS), written to a temp file and renamed."""

    def rows(handle: IO[str]) -> None:
        writer = csv_writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(zip(*[result.column(k).tolist() for k in COLUMNS], strict=True))

    write_atomic(path, rows)


def summary(result: SweepResult) -> dict[str, object]:
    """Counts and sources of a sweep for --json."""
    return {
        "evaluated": result.evaluated,
        "fit": result.evaluated - result.dropped_out_of_memory,
        "dropped_out_of_memory": result.dropped_out_of_memory,
        "dropped_by_hardware": result.dropped_by_hardware,
        "skipped": list(result.skipped),
        "sources": result.sources,
    }


def summary_table(result: SweepResult, title: str) -> Table:
    """Per chip: evaluated, fit, dropped, best tokens/s/chip, fastest step, cheapest $/Mtok."""
    table = compact_table(
        title, ["chip", "evaluated", "fit", "dropped\n(OOM)", "best\ntok/s/chip", "fastest\nstep", "cheapest\n$/Mtok"]
    )
    hw = result.column("hardware")
    for chip, dropped in result.dropped_by_hardware.items():
        mask = hw == chip
        kept = int(mask.sum())
        cols = result.columns
        table.add_row(
            chip,
            f"{kept + dropped:,}",
            f"{kept:,}",
            f"{dropped:,}",
            f"{cols['tokens_per_s_per_chip'][mask].max():,.1f}" if kept else "-",
            format_seconds(cols["step_time_s"][mask].min()) if kept else "-",
            f"{cols['cost_per_million_tokens'][mask].min():.3f}" if kept else "-",
        )
    return table


def print_skipped(result: SweepResult) -> None:
    """Say which (slice, tp, pp) combinations of the options were not evaluated, and why."""
    if result.skipped:
        console.print(f"skipped {len(result.skipped)} combination(s) of the options:", highlight=False)
        for note in result.skipped:
            console.print(f"  {note}", highlight=False)


def sweep_assumptions(result: SweepResult, hardware: str, memory_utilization: float) -> None:
    """The 'assumes:' line under a sweep's tables."""
    kinds = tuple(load_hardware_option(h).kind for h in split_names(hardware, "--hardware"))
    hw_sources = " ".join(v for k, v in result.sources.items() if k.startswith("hardware:"))
    print_assumptions(memory_utilization=memory_utilization, kinds=kinds, sources={"hardware": hw_sources})


def sweep_command(
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
    csv_path: str = CSV,
    as_json: bool = JSON_OPTION,
) -> None:
    """Every decode-step configuration of a Cartesian sweep; out-of-memory points dropped and counted.

    Example: roofline sweep --model llama-2-13b --hardware tpu-v5e,h100-sxm --batch 1..1024 --csv sweep.csv
    """
    check_outputs([("--csv", csv_path)])
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
        engine=engine,
        ep=ep,
    )
    if csv_path is not None:
        write_csv(csv_path, result)
    data = summary(result)
    if csv_path is not None:
        data["csv"] = str(csv_path)
    else:
        data["points"] = result.rows()

    def render() -> None:
        console.print(summary_table(result, f"sweep of {model}"))
        print_skipped(result)
        if csv_path is not None:
            console.print(f"wrote {len(result):,} points to {csv_path}")
        else:
            console.print("[dim]add --csv FILE or --json for the points[/]")
        sweep_assumptions(result, hardware, memory_utilization)

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_command)
