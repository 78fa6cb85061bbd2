"""`roofline e2e import|list`: end-to-end serving measurements in the schema of roofline.calibrate.engine.schema."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from roofline.core.checks import MAX_COUNT
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit
from roofline.views.cli.values import check_outputs

e2e_app = typer.Typer(
    help="End-to-end serving measurements (TTFT, TPOT, tokens/s).  Example: roofline e2e import "
    "result.json --hardware h100-sxm --tp 1 --out runs.csv",
    no_args_is_help=True,
)
FILES = typer.Argument(
    ...,
    help="Files to convert: vLLM or SGLang bench JSON, genai-perf/aiperf exports, inference-perf summaries, "
    "published tables, schema CSV.",
)
FORMAT = typer.Option(
    "auto",
    "--format",
    help="auto, vllm, sglang, genai-perf (also aiperf), inference-perf, trtllm-static, trtllm-first-token, "
    "trtllm-perf-overview, splitwise or schema.",
)
OUT = typer.Option(..., "--out", help="Schema CSV to write (.csv or .csv.gz).")
SOURCE_FILTER = typer.Option(None, "--source", help="Only this source (or sources starting with it).")


@e2e_app.command("import")
def import_command(
    files: list[Path] = FILES,
    out: str = OUT,
    fmt: str = FORMAT,
    hardware: str = typer.Option(None, "--hardware", help="Hardware of the runs (needed for vLLM JSON)."),
    model: str = typer.Option(None, "--model", help="Model name/YAML/config.json (vLLM: else from model_id)."),
    tp: int = typer.Option(1, "--tp", parser=values.count(), help="Tensor-parallel degree of the runs (vLLM)."),
    pp: int = typer.Option(1, "--pp", parser=values.count(), help="Pipeline-parallel degree (vLLM)."),
    ep: int = typer.Option(1, "--ep", parser=values.count(), help="Expert-parallel degree (vLLM)."),
    dp: int = typer.Option(1, "--dp", parser=values.count(), help="Data-parallel replicas (vLLM)."),
    weights: str = typer.Option("bf16", "--weights", parser=values.dtype, help="Weight dtype (vLLM)."),
    kv_dtype: str = typer.Option(
        None, "--kv-dtype", parser=values.dtype, help="KV-cache dtype (vLLM; default bf16, fp16 for fp16)."
    ),
    compute_dtype: str = typer.Option(
        None,
        "--compute-dtype",
        parser=values.dtype,
        help="Matmul dtype (vLLM; default the weights' if bf16/fp16/fp8/fp4).",
    ),
    engine: str = typer.Option(None, "--engine", help="Engine name (vLLM JSON: default vllm)."),
    engine_version: str = typer.Option("", "--engine-version", help="Engine version, e.g. 0.10.1."),
    input_len: float = typer.Option(
        None,
        "--input-len",
        "-i",
        parser=values.number(0.0, float(MAX_COUNT)),
        help="Input tokens per request (default: from the file).",
    ),
    output_len: float = typer.Option(
        None,
        "--output-len",
        "-o",
        parser=values.number(0.0, float(MAX_COUNT)),
        help="Output tokens per request (default: from file).",
    ),
    source: str = typer.Option(None, "--source", help="Source name for the rows (vLLM: vllm-bench-serve)."),
    license_: str = typer.Option("", "--license", help="Licence of the numbers (empty for your own runs)."),
    prefix_hit_rate: float = typer.Option(
        None,
        "--prefix-hit-rate",
        parser=values.number(0.0, 0.999999, open_low=False),
        help="Share of prompt tokens the prefix cache served (default: from the file, else none).",
    ),
    timeout: float = typer.Option(
        None, "--timeout", parser=values.number(0.0, 1e9), help="The client's request timeout in seconds."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Convert serving results into the end-to-end schema.

    Example: roofline e2e import result.json --hardware h100-sxm --tp 2 --weights fp8 --out runs.csv
    """
    from roofline.calibrate.engine.importers import ImportOptions, import_file
    from roofline.calibrate.engine.rows_out import row_cells, write_rows
    from roofline.calibrate.engine.schema import parse_rows

    check_outputs([("--out", out)])
    opt = ImportOptions(
        hardware=hardware,
        model=model,
        tp=tp,
        pp=pp,
        ep=ep,
        dp=dp,
        weights=weights,
        kv_dtype=kv_dtype,
        compute_dtype=compute_dtype,
        engine=engine,
        engine_version=engine_version,
        input_len=input_len,
        output_len=output_len,
        source=source,
        license=license_,
        prefix_hit_rate=prefix_hit_rate,
        timeout_s=timeout,
    )
    rows = [r for f in files for r in import_file(f, fmt, opt)]
    cells = [row_cells(r) for r in rows]
    parse_rows(list(cells[0]) if cells else [], cells, "the imported rows")  # ids unique across files
    write_rows(rows, out)
    counts = Counter(r.source for r in rows)
    data = {"out": str(out), "rows": len(rows), "by_source": dict(sorted(counts.items()))}

    def render() -> None:
        console.print(f"{len(rows)} rows -> {out}")
        for name, n in sorted(counts.items()):
            console.print(f"  {name}: {n}")

    emit(data, as_json, render)


def _quantity_counts(rows: list) -> dict[str, int]:
    return {
        "ttft_s": sum(r.ttft_s is not None or r.ttft_p50_s is not None for r in rows),
        "tpot_s": sum(r.tpot_s is not None or r.tpot_p50_s is not None for r in rows),
        "output_tokens_per_s": sum(r.output_tokens_per_s is not None for r in rows),
    }


@e2e_app.command("list")
def list_command(source: str = SOURCE_FILTER, as_json: bool = JSON_OPTION) -> None:
    """Summarise the end-to-end rows shipped with roofline, by source.

    Example: roofline e2e list --source trtllm --json
    """
    from roofline.calibrate.engine.data import load_shipped

    rows = load_shipped(source)
    sources = []
    for name in sorted({r.source for r in rows}):
        mine = [r for r in rows if r.source == name]
        sources.append(
            {
                "source": name,
                "rows": len(mine),
                "license": sorted({r.license for r in mine}),
                "models": sorted({r.model for r in mine}),
                "hardware": sorted({r.hardware for r in mine}),
                "engines": sorted({f"{r.engine} {r.engine_version}".strip() for r in mine}),
                "tp": sorted({r.tp for r in mine}),
                "quantities": _quantity_counts(mine),
            }
        )
    data = {"rows": len(rows), "sources": sources}

    def render() -> None:
        table = compact_table(
            f"Shipped end-to-end rows ({len(rows)})",
            ["source", "rows", "ttft", "tpot", "tok/s", "tp", "hardware"],
            left=("tp", "hardware"),
        )
        for s in sources:
            q = s["quantities"]
            table.add_row(
                s["source"],
                str(s["rows"]),
                str(q["ttft_s"]),
                str(q["tpot_s"]),
                str(q["output_tokens_per_s"]),
                ",".join(map(str, s["tp"])),
                ", ".join(s["hardware"]),
            )
        console.print(table)
        for s in sources:
            console.print(
                f"{s['source']} ({', '.join(s['license']) or 'no licence given'}): {', '.join(s['models'])}",
                highlight=False,
            )

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    """Plug ``e2e`` (import, list) into the root app."""
    app.add_typer(e2e_app, name="e2e")
