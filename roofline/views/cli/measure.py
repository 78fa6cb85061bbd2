"""`roofline measure` (microbenchmark this machine) and `roofline calibrate import` (public tables to the schema):
the commands that make measurement tables."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit
from roofline.views.cli.calibrate import calibrate_app
from roofline.views.cli.values import check_outputs

IMPORT_FILES = typer.Argument(..., help="Public measurement tables to convert.")
OUT_TABLE = typer.Option(..., "--out", help="Schema CSV to write (.csv or .csv.gz).")
ROW_HARDWARE = typer.Option(None, "--hardware", help="Hardware name for the rows (default: from folder names).")
OUT_MEASURE = typer.Option(..., "--out", help="Measurement CSV to write (schema).")
DEVICE = typer.Option(
    "auto",
    "--device",
    parser=values.choice("auto", "cpu", "gpu"),
    help="auto (CPU, plus GPU if torch+CUDA), cpu or gpu.",
)
FULL = typer.Option(False, "--full", help="The larger sweep (minutes) instead of the quick one.")


@calibrate_app.command("import")
def import_command(
    files: list[Path] = IMPORT_FILES,
    out: str = OUT_TABLE,
    hardware: str = ROW_HARDWARE,
    as_json: bool = JSON_OPTION,
) -> None:
    """Convert public measurement tables (aiconfigurator, vidur) to the schema.

    Example: roofline calibrate import nccl_perf.csv gemm_perf.csv --out h100.csv.gz
    """
    from collections import Counter

    from roofline.calibrate.kernels.importers import import_files
    from roofline.kernels.schema import write_measurements

    check_outputs([("--out", out)])
    table = import_files([str(f) for f in files], hardware)
    write_measurements(table, out)
    counts = Counter(zip(table["hardware"], table["op"], table["dtype"], strict=True))
    data = {
        "out": str(out),
        "rows": len(table),
        "counts": [{"hardware": h, "op": o, "dtype": d, "rows": n} for (h, o, d), n in sorted(counts.items())],
    }

    def render() -> None:
        t = compact_table(f"{len(table)} rows -> {out}", ["hardware", "op", "dtype", "rows"], left=("op", "dtype"))
        for row in data["counts"]:
            t.add_row(row["hardware"], row["op"], row["dtype"], str(row["rows"]))
        console.print(t)

    emit(data, as_json, render)


def measure_command(
    out: str = OUT_MEASURE,
    device: str = DEVICE,
    full: bool = FULL,
    as_json: bool = JSON_OPTION,
) -> None:
    """Microbenchmark this machine (numpy on the CPU; torch on a CUDA GPU) into the schema.

    Example: roofline measure --out local.csv && roofline calibrate fit local.csv --out local-cpu.yaml
    """
    from collections import Counter

    from roofline.calibrate.kernels.measure import measure
    from roofline.kernels.schema import write_measurements

    check_outputs([("--out", out)])
    table = measure(device, quick=not full)
    if os.environ.get("RANK", "0") != "0":  # under torchrun only rank 0 writes
        return
    write_measurements(table, out)
    counts = Counter(zip(table["hardware"], table["op"], strict=True))
    data = {
        "out": str(out),
        "rows": len(table),
        "counts": [{"hardware": h, "op": o, "rows": n} for (h, o), n in sorted(counts.items())],
    }

    def render() -> None:
        console.print(f"{len(table)} measurements -> {out}")
        for row in data["counts"]:
            console.print(f"  {row['hardware']}: {row['op']} x {row['rows']}")

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    """Plug ``measure`` into the root app (``calibrate import`` joined the calibrate group on import)."""
    app.command("measure")(measure_command)
