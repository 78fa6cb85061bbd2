"""`roofline report`: the main Pareto report as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import typer

from roofline.analyses.sweep.run import check_dtypes, parse_int_list
from roofline.core.errors import RooflineError
from roofline.deploy import engine_terms
from roofline.specs import load_model
from roofline.views.cli._common import JSON_OPTION, console, emit
from roofline.views.cli.options import COMPUTE, ENGINE, check_compute_dtype
from roofline.views.cli.sweep import MEMORY_UTILIZATION, parse_prices, split_names
from roofline.views.report import Scenario, hardware_refs, write_report

DEFAULT_OUT = Path("reports") / "index.html"
DEFAULTS = Scenario()


def joined(values: tuple[object, ...]) -> str:
    """(1, 2) -> '1,2' for an option's default."""
    return ",".join(str(v) for v in values)


OUT = typer.Option(DEFAULT_OUT, "--out", help="HTML file to write (folders are created).")
MODELS = typer.Option(joined(DEFAULTS.models), "--models", "-m", help="Comma-separated models.")
HARDWARE = typer.Option(
    joined(DEFAULTS.hardware),
    "--hardware",
    "-H",
    help="Comma-separated chips: built-in names, hardware YAML files or calibrated "
    "profiles (each file is its own trace, named by the file).",
)
WEIGHTS = typer.Option(joined(DEFAULTS.weights), "--weights", help="Weight dtypes, comma-separated.")
KV_DTYPE = typer.Option(joined(DEFAULTS.kv_dtypes), "--kv-dtype", help="KV-cache dtypes, comma-separated.")
CONTEXT = typer.Option(joined(DEFAULTS.context), "--context", "-s", help="Context lengths, comma-separated.")
CHIPS = typer.Option(joined(DEFAULTS.chips), "--chips", "-n", help="Chips per slice: '1,2,4,8' or '1..64'.")
BATCH = typer.Option(
    None,
    "--batch",
    "-b",
    help=f"Batch sizes (default: {len(DEFAULTS.batch)} geometric values from 1 to {max(DEFAULTS.batch)}).",
)
TP = typer.Option(None, "--tp", help="Model-parallel degrees (default: the whole slice is one tp group).")
PRICE = typer.Option(None, "--price", help="USD per chip-hour: one number or 'h100-sxm=2.5,tpu-v5e=1.2'.")
PP = typer.Option(None, "--pp", help="Pipeline depths, comma-separated (default 1).")
TRACES = typer.Option(
    joined(DEFAULTS.traces),
    "--traces",
    help="Per chip: 'bound' (spec sheet, collectives overlapped, no kernel overheads), "
    "'prediction' (the step model's step time) or both.",
)
SCALE_OUT_TP = typer.Option(
    False,
    "--scale-out-tp",
    help="Keep tp beyond the chip's scale-up domain (max_ici_domain_chips) in the "
    "prediction traces (default: left out; bounds show them marked).",
)


def report_command(
    out: Path = OUT,
    models: str = MODELS,
    hardware: str = HARDWARE,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    context: str = CONTEXT,
    chips: str = CHIPS,
    batch: str = BATCH,
    tp: str = TP,
    price: str = PRICE,
    pp: str = PP,
    memory_utilization: float = MEMORY_UTILIZATION,
    traces: str = TRACES,
    scale_out_tp: bool = SCALE_OUT_TP,
    compute_dtype: str = COMPUTE,
    engine: str = ENGINE,
    as_json: bool = JSON_OPTION,
) -> None:
    """Write the Pareto report (frontiers per model and chip, the book's figures) to reports/index.html.

    Example: roofline report --models llama-3-8b --hardware tpu-v5e,h100-sxm --out reports/llama-3-8b.html
    """
    model_list = split_names(models, "--models")
    for name in model_list:
        load_model(name)  # unknown names fail here, before anything is written
    refs = hardware_refs(split_names(hardware, "--hardware"))  # names, hardware files, calibrated profiles
    for r in refs:
        check_compute_dtype(r.spec, compute_dtype, f"--hardware {r.ref}")
        if engine is not None:  # every chip's profile must hold the entry (fail closed), as in sweep
            engine_terms(r.spec, engine)
    if out.exists() and out.is_dir():
        raise RooflineError(f"--out {out}: is a folder, give a file name such as {out / 'index.html'}")
    scenario = Scenario(
        models=tuple(model_list),
        hardware=tuple(r.ref for r in refs),
        weights=check_dtypes(split_names(weights, "--weights"), "--weights"),
        kv_dtypes=check_dtypes(split_names(kv_dtype, "--kv-dtype"), "--kv-dtype"),
        context=tuple(parse_int_list(context, "--context").tolist()),
        batch=DEFAULTS.batch if batch is None else tuple(parse_int_list(batch, "--batch").tolist()),
        chips=tuple(parse_int_list(chips, "--chips").tolist()),
        tp=None if tp is None else tuple(parse_int_list(tp, "--tp").tolist()),
        prices=parse_prices(price, list(dict.fromkeys([r.label for r in refs] + [r.spec.name for r in refs]))),
        pp=None if pp is None else tuple(parse_int_list(pp, "--pp").tolist()),
        memory_utilization=memory_utilization,
        traces=tuple(split_names(traces, "--traces")),
        scale_out_tp=scale_out_tp,
        compute_dtype=compute_dtype,
        engine=engine,
    )
    summary = write_report(out, scenario)

    def render() -> None:
        from roofline.views.cli._common import compact_table

        table = compact_table(
            "configurations per model", ["model", "evaluated", "fit", "out of memory", "frontier"], left=("model",)
        )
        for name, counts in summary["models"].items():
            table.add_row(
                name,
                f"{counts['evaluated']:,}",
                f"{counts['fit']:,}",
                f"{counts['dropped_out_of_memory']:,}",
                str(counts["frontier_points"]),
            )
        console.print(table)
        chips = list(dict.fromkeys(t.split(" · ")[0] for t in summary["traces"]))
        console.print(f"traces per chip (bound, prediction): {', '.join(chips)}")
        console.print(f"wrote {summary['path']} ({summary['bytes'] / 1e6:.1f} MB, {summary['figures']} figures)")

    emit(summary, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
