"""`roofline validate`: every shipped (or given) end-to-end row predicted and compared."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from roofline.core.errors import RooflineError
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit
from roofline.views.cli.options import load_hardware_option

HARDWARE = typer.Option(
    None,
    "--hardware",
    help="Hardware profile (name or YAML, e.g. a calibrated profile), repeatable: only rows "
    "on that chip, predicted with it.",
)
SOURCE = typer.Option(None, "--source", help="Only rows of this source (or sources starting with it).")
ROWS = typer.Option(None, "--rows", help="Validate these end-to-end files (schema CSV or importable tables) instead.")
HTML = typer.Option(None, "--html", help="Also write an HTML page (predicted vs measured) here.")
CASES = typer.Option(False, "--cases", help="Also print one line per case.")
HOLDOUT = typer.Option(
    False,
    "--holdout",
    help="Engine entries held out: each row predicted by its entry refitted without the row's source; "
    "also summaries held out by model and by chip. Slower (minutes).",
)


def validate_command(
    hardware: list[str] = HARDWARE,
    source: str = SOURCE,
    rows_files: list[Path] = ROWS,
    html_out: str = HTML,
    show_cases: bool = CASES,
    holdout: bool = HOLDOUT,
    as_json: bool = JSON_OPTION,
) -> None:
    """Predict measured TTFT, TPOT and tokens/s of end-to-end rows and report the errors.

    Example: roofline validate --source splitwise --html validate.html
    """
    from roofline.calibrate.engine.data import load_shipped
    from roofline.calibrate.engine.importers import MAX_VALIDATE_ROWS, import_file
    from roofline.calibrate.engine.schema import E2EError
    from roofline.calibrate.engine.validate import validate
    from roofline.views.cli.values import check_outputs
    from roofline.views.report.validation import summary_rows, write_validation_page

    check_outputs([("--html", html_out)])
    if rows_files:
        try:
            rows = []
            for f in rows_files:
                rows += import_file(f, max_rows=MAX_VALIDATE_ROWS - len(rows))
        except RooflineError as exc:
            raise type(exc)(f"--rows: {exc}", parameters=exc.parameters) from None
        if source:
            rows = [r for r in rows if r.source == source or r.source.startswith(source)]
            if not rows:
                raise E2EError(f"--source {source!r} matches no rows of --rows")
    else:
        rows = load_shipped(source)
    profiles = [load_hardware_option(h) for h in hardware or []]
    result = validate(rows, profiles, holdout=holdout)
    if html_out is not None:
        write_validation_page(result, html_out)
    data = result.as_dict()

    def render() -> None:
        if show_cases:
            cases = compact_table(
                "Cases (ratio = predicted / measured)",
                ["id", "quantity", "measured", "predicted", "ratio"],
                left=("quantity",),
            )
            for c in result.cases:
                cases.add_row(c.id, c.quantity, f"{c.measured:.4g}", f"{c.predicted:.4g}", f"{c.ratio:.3f}")
            console.print(cases)
        table = compact_table(
            f"End-to-end validation: {len(result.cases)} cases from {len(rows)} rows",
            ["quantity", "group", "n", "MAPE", "median", "gmean", "spec"],
            left=("group",),
        )
        table.caption = (
            "MAPE/median/gmean: the prediction; spec: MAPE of the spec sheet; gmean: geometric-mean "
            "ratio predicted / measured"
        )
        for row in summary_rows(result.summary, result.summary_spec):
            table.add_row(*row)
        console.print(table)
        console.print(f"prediction: {result.tier}", highlight=False)
        for name, held in (
            ("source", result.summary_by_source_holdout),
            ("model", result.summary_by_model_holdout),
            ("chip", result.summary_by_chip_holdout),
        ):
            if not held:
                continue
            part = compact_table(
                f"Held out by {name}: engine entries refitted without it (documented values when none is left)",
                ["quantity", "group", "n", "MAPE", "median", "gmean"],
                left=("group",),
            )
            groups = ((f"by_{name}", name),) + ((("by_source_chip", ""),) if name == "source" else ())
            for row in summary_rows(_split_sources(held), None, groups):
                part.add_row(*row)
            console.print(part)
        reasons = Counter(s.reason for s in result.skipped)
        for reason, n in reasons.most_common():
            console.print(f"skipped {n} row(s): {reason}", highlight=False)
        if html_out is not None:
            console.print(f"wrote {html_out}")

    emit(data, as_json, render)


def _split_sources(summary: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """``summary`` with ``by_source_chip`` kept only for sources measured on more than one chip."""
    out = {}
    for quantity, entry in summary.items():
        slices = entry.get("by_source_chip", {})
        per_source = Counter(key.split(" on ")[0] for key in slices)  # type: ignore[union-attr]
        kept = {k: v for k, v in slices.items() if per_source[k.split(" on ")[0]] > 1}  # type: ignore[union-attr]
        out[quantity] = {**entry, "by_source_chip": kept}
    return out


def register(app: typer.Typer) -> None:
    """Plug ``validate`` into the root app."""
    app.command("validate")(validate_command)
