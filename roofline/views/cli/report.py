"""`roofline report`: the main Pareto report as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import typer

from roofline.analyses.sweep.run import check_dtypes, parse_int_list
from roofline.core.errors import RooflineError
from roofline.deploy import engine_terms
from roofline.specs import load_model
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, console, emit, err_console
from roofline.views.cli.options import ENGINE, check_compute_dtype
from roofline.views.cli.report_file import read_report_file
from roofline.views.cli.sweep import MEMORY_UTILIZATION, parse_prices, split_names
from roofline.views.cli.values import check_outputs
from roofline.views.report import Scenario, hardware_refs, write_report
from roofline.views.report.scenario import SAME
from roofline.views.report.summary import duration_text

DEFAULT_OUT = Path("reports") / "index.html"
DEFAULTS = Scenario()


def joined(values: tuple[object, ...]) -> str:
    """(1, 2) -> '1,2' for an option's default."""
    return ",".join(str(v) for v in values)


OUT = typer.Option(str(DEFAULT_OUT), "--out", help="HTML file to write (folders are created).")
MODELS = typer.Option(joined(DEFAULTS.models), "--models", "-m", help="Comma-separated models.")
HARDWARE = typer.Option(
    joined(DEFAULTS.hardware),
    "--hardware",
    "-H",
    help="Comma-separated chips: built-in names, hardware YAML files or calibrated "
    "profiles (each file is its own trace, named by the file).",
)
WEIGHTS = typer.Option(joined(DEFAULTS.weights), "--weights", help="Weight dtypes, comma-separated.")
KV_DTYPE = typer.Option(
    joined(DEFAULTS.kv_dtypes),
    "--kv-dtype",
    help="KV-cache dtypes, comma-separated ('same': each weight dtype's own).",
)
COMPUTE = typer.Option(
    SAME,
    "--compute-dtype",
    help="Matmul dtype ('same': the weights' dtype where the chip has its FLOP/s, else bf16).",
)
CONTEXT = typer.Option(
    None,
    "--context",
    "-s",
    help="Decode contexts swept, comma-separated (default: the workload's mean, input + output/2).",
)
INPUT_LEN = typer.Option(
    DEFAULTS.input_len, "--input-len", "-i", parser=values.count(), help="Prompt tokens of every request."
)
OUTPUT_LEN = typer.Option(
    DEFAULTS.output_len, "--output-len", "-o", parser=values.count(), help="Generated tokens of every request."
)
TTFT_SLO = typer.Option(
    DEFAULTS.ttft_slo_s,
    "--ttft-slo",
    parser=values.seconds,
    metavar="TIME",
    help=f"The summary's time-to-first-token target (default {DEFAULTS.ttft_slo_s * 1e3:g}ms), e.g. 500ms.",
)
TPOT_SLO = typer.Option(
    DEFAULTS.tpot_slo_s,
    "--tpot-slo",
    parser=values.seconds,
    metavar="TIME",
    help=f"The summary's time-per-output-token target (default {DEFAULTS.tpot_slo_s * 1e3:g}ms), e.g. 30ms.",
)
TAILS = typer.Option(True, "--tails/--no-tails", help="Simulate each model's cheapest deployment under load.")
COMPARE = typer.Option(
    False,
    "--compare",
    help="Put two entries side by side: roofline report --compare A B, each a chip, profile "
    "(h100-sxm-cal@trtllm/1.0: an engine entry) or deployment (h200:tp=8,weights=fp8).",
)
ENTRIES = typer.Argument(None, help="The two entries of --compare.", show_default=False)
SCENARIO = typer.Option(
    None,
    "--scenario",
    help="A YAML file of these options (keys: the flags' names, e.g. models: [llama-3.1-8b], tpot_slo: 30ms); "
    "flags given on the command line win.",
)
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
    ctx: typer.Context,
    entries: list[str] = ENTRIES,
    out_text: str = OUT,
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
    input_len: int = INPUT_LEN,
    output_len: int = OUTPUT_LEN,
    ttft_slo: float = TTFT_SLO,
    tpot_slo: float = TPOT_SLO,
    tails: bool = TAILS,
    compare: bool = COMPARE,
    scenario_file: Path = SCENARIO,
    as_json: bool = JSON_OPTION,
) -> None:
    """Write the report to reports/index.html: per model the cheapest and fastest deployments meeting an
    interactivity target, latency under load, frontiers per chip, and the details folded away.

    Example: roofline report -m llama-3.1-8b -H h100-sxm-cal@trtllm/1.0,mi300x --tpot-slo 30ms --out r/llama.html
    """
    if scenario_file is not None:  # the file's options, where the command line gives none
        given = {name for name in ctx.params if ctx.get_parameter_source(name).name == "COMMANDLINE"}
        opts = {k: v for k, v in read_report_file(scenario_file).items() if k not in given}
        if "entries" in opts and "compare" not in given:
            opts["compare"] = True
        fields = dict(locals())
        fields.update(opts)
        entries, models, hardware, weights, kv_dtype, context, chips, batch, tp, price, pp = (
            fields[k]
            for k in ("entries", "models", "hardware", "weights", "kv_dtype", "context", "chips", "batch", "tp")
            + ("price", "pp")
        )
        memory_utilization, traces, scale_out_tp, compute_dtype, engine = (
            fields[k] for k in ("memory_utilization", "traces", "scale_out_tp", "compute_dtype", "engine")
        )
        input_len, output_len, ttft_slo, tpot_slo, tails, compare = (
            fields[k] for k in ("input_len", "output_len", "ttft_slo", "tpot_slo", "tails", "compare")
        )
    entries = list(entries or [])
    if entries and not compare:
        raise RooflineError(
            f"unexpected {' '.join(entries)!r}: entries after the options need --compare (--compare A B)"
        )
    if compare and len(entries) != 2:
        raise RooflineError(
            f"--compare: give exactly two entries to compare, e.g. --compare h100-sxm b200 (got {len(entries)}"
            + (f": {', '.join(entries)})" if entries else ")")
        )
    model_list = split_names(models, "--models")
    for name in model_list:
        load_model(name)  # unknown names fail here, before anything is written
    names = entries if compare else split_names(hardware, "--hardware")
    flag = "--compare" if compare else "--hardware"
    try:
        refs = hardware_refs(names, engine)  # names, hardware files, calibrated profiles, @engine, :deployment
    except RooflineError as exc:
        raise type(exc)(f"{flag}: {exc}".replace(f"{flag}: hardware: ", f"{flag}: ")) from None
    if compare and len(refs) < 2:
        raise RooflineError(
            f"--compare: the two entries are the same ({entries[0]}); compare two chips, profiles, "
            "engines (chip@engine) or deployments (chip:tp=8)"
        )
    weight_list = check_dtypes(split_names(weights, "--weights"), "--weights")
    for r in refs:
        for w in weight_list:  # 'same' resolves per weight dtype, falling back to bf16
            matmul = compute_dtype if compute_dtype != SAME else Scenario(compute_dtype=SAME).precisions(w, r.spec)[1]
            check_compute_dtype(r.spec, matmul, f"{flag} {r.ref}")
        if r.engine is not None:  # the profile must hold the entry (fail closed), as in sweep
            try:
                engine_terms(r.spec, r.engine)
            except RooflineError as exc:
                raise type(exc)(f"{flag} {r.entry.text}: {exc}") from None
    check_outputs([("--out", out_text)])  # a folder, a name ending in /, a path under a file: refused
    out = Path(out_text)
    scenario = Scenario(
        models=tuple(model_list),
        hardware=tuple(r.entry.text for r in refs),
        weights=weight_list,
        kv_dtypes=_kv_dtypes(kv_dtype),
        context=None if context is None else tuple(parse_int_list(context, "--context").tolist()),
        batch=DEFAULTS.batch if batch is None else tuple(parse_int_list(batch, "--batch").tolist()),
        chips=tuple(parse_int_list(chips, "--chips").tolist()),
        tp=None if tp is None else tuple(parse_int_list(tp, "--tp").tolist()),
        prices=parse_prices(price, list(dict.fromkeys([r.label for r in refs] + [r.spec.name for r in refs]))),
        pp=None if pp is None else tuple(parse_int_list(pp, "--pp").tolist()),
        memory_utilization=memory_utilization,
        traces=tuple(split_names(traces, "--traces")),
        scale_out_tp=scale_out_tp,
        compute_dtype=compute_dtype if compute_dtype == SAME else check_dtypes([compute_dtype], "--compute-dtype")[0],
        engine=engine,
        input_len=input_len,
        output_len=output_len,
        ttft_slo_s=ttft_slo,
        tpot_slo_s=tpot_slo,
        tails=tails,
        compare=compare,
    )
    summary = write_report(out, scenario)
    if summary["unmet"]:
        err_console.print(
            f"note: no deployment of {', '.join(summary['unmet'])} meets TTFT ≤ {duration_text(ttft_slo)} and "
            f"TPOT ≤ {duration_text(tpot_slo)}; the page says so (its controls offer other targets)",
            highlight=False,
            soft_wrap=True,
        )

    def render() -> None:
        from roofline.views.cli._common import compact_table

        title = f"cheapest meeting TTFT ≤ {duration_text(ttft_slo)}, TPOT ≤ {duration_text(tpot_slo)}"
        table = compact_table(title, ["model", "$/Mtok", "chip", "chips", "tp", "batch", "dtypes"], left=("model",))
        for name, counts in summary["models"].items():
            best = counts["cheapest"]
            if best is None:
                table.add_row(name, "none", "-", "-", "-", "-", "-")
                continue
            table.add_row(
                name,
                f"{best['cost_per_million_tokens']:,.3f}",
                best["hardware"],
                str(best["chips"]),
                str(best["tp"]),
                str(best["batch"]),
                f"{best['weights']}/{best['kv_dtype']}",
            )
        console.print(table)
        evaluated = sum(c["evaluated"] for c in summary["models"].values())
        fit = sum(c["fit"] for c in summary["models"].values())
        console.print(f"configurations: {evaluated:,} evaluated, {fit:,} fit in HBM")
        console.print(f"wrote {summary['path']} ({summary['bytes'] / 1e6:.1f} MB, {summary['figures']} figures)")

    emit(summary, as_json, render)


def _kv_dtypes(text: str) -> tuple[str, ...]:
    """--kv-dtype: dtypes and 'same' (each weight dtype's own)."""
    names = split_names(text, "--kv-dtype")
    check_dtypes([n for n in names if n != SAME] or ["bf16"], "--kv-dtype")
    return tuple(names)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
