"""`roofline calibrate fit|evaluate` (the group; `calibrate import` and `measure` are in views/cli/measure.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from roofline.calibrate.engine.fit import EntryFit

from roofline.core.errors import RooflineError
from roofline.specs import user_catalog
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit
from roofline.views.cli.options import load_hardware_option
from roofline.views.cli.values import check_outputs

calibrate_app = typer.Typer(
    help="Fit a calibrated hardware profile to measured kernel timings.  Example: roofline "
    "calibrate fit builtin:h100-sxm --hardware h100-sxm --out h100-cal.yaml",
    no_args_is_help=True,
)
MEASUREMENTS_ARG = typer.Argument(
    ..., help="Measurement CSV files (schema or public formats, .csv/.csv.gz) or builtin:h100-sxm."
)

OUT_PROFILE = typer.Option(None, "--out", help="Calibrated profile YAML to write (or --save NAME).")
SAVE_PROFILE = typer.Option(
    None, "--save", help="Also save the profile in the user catalog under this name (then --hardware NAME anywhere)."
)
FORCE = typer.Option(False, "--force", help="With --save: replace a profile saved under that name.")
BASE_HARDWARE = typer.Option(
    None,
    "--hardware",
    parser=values.name,
    help="Base spec: built-in name or YAML (omit for local-cpu measurements: built from them).",
)
REPORT = typer.Option(None, "--report", help="Also write an HTML report here.")
FIT_DTYPE = typer.Option(
    "",
    "--dtype",
    parser=values.optional_dtype,
    help="Fit only GEMM/attention rows of this dtype (default: every dtype present, each its own entry).",
)
MAX_ROWS = typer.Option(4000, "--max-rows", parser=values.count(10, 2_000_000), help="Rows per op used in each fit.")
SEED = typer.Option(0, "--seed", parser=values.count(0), help="Seed of the random split and subsampling.")
OPS = typer.Option(None, "--op", help="Fit only this op class or entry (repeatable), e.g. gemm, gemm/fp8, allreduce.")
PROFILE = typer.Option(
    ...,
    "--profile",
    parser=values.name,
    help="Calibrated profile YAML (or a hardware name/YAML: then the spec roofline is evaluated).",
)
EVAL_DTYPE = typer.Option("", "--dtype", parser=values.optional_dtype, help="Only GEMM/attention rows of this dtype.")


def _pct(value: float | None) -> str:
    return "-" if value is None or value != value else f"{100 * value:.1f}%"


def _arrow(split: dict[str, float]) -> str:
    """'46→5.7%': held-out spec MAPE -> calibrated MAPE."""
    before, after = split.get("before_mape"), split.get("after_mape")
    if before is None or after is None:
        return "-"
    return f"{100 * before:.0f}→{_pct(after)}"


def _base_hardware(hardware: str | None, table: object) -> object:
    """The spec to calibrate: --hardware, else the rows' hardware (local-cpu built in code)."""
    from roofline.calibrate.kernels.measure import CPU_NAME, build_cpu_spec
    from roofline.kernels.schema import CalibrationError
    from roofline.specs import hardware_names, load_hardware

    if hardware:
        base = load_hardware(hardware)
        return base.model_copy(update={"calibration": None})
    names = table.unique("hardware")
    if names == [CPU_NAME]:
        return build_cpu_spec(table)
    if len(names) == 1 and names[0] in hardware_names():
        return load_hardware(names[0])
    raise CalibrationError(f"measurements are for hardware {', '.join(names)}; pass --hardware NAME_OR_YAML")


def _fit_row(fit: object) -> dict[str, object]:
    """The JSON of one fitted profile entry (an :class:`~roofline.calibrate.kernels.fit.OpFit`)."""
    entry = fit.profile_entry()
    return {
        "n": int(fit.stats["after_n"]),
        "before": {k.removeprefix("before_"): v for k, v in fit.stats.items() if k.startswith("before_")},
        "after": {
            k.removeprefix("after_"): v for k, v in fit.stats.items() if k.startswith("after_") and k != "after_n"
        },
        "constant": {k.removeprefix("constant_"): v for k, v in fit.stats.items() if k.startswith("constant_")},
        "random_split": fit.random,
        "range_split": fit.shape_range,
        "compute_efficiency": entry["compute_efficiency"],
        "memory_efficiency": entry["memory_efficiency"],
        "overhead_s": entry["overhead_s"],
        "params": fit.params,
        "key": fit.key,
        "dtypes": list(fit.dtypes),
        "kernels": list(fit.kernels),
        "at_bound": list(fit.at_bound),
        "undetermined": list(fit.undetermined),
    }


def _fit_rows(fits: dict[str, object]) -> dict[str, object]:
    """``ops[op class]``: its bf16 entry (else its largest) at the top, every dtype in by_dtype."""
    from roofline.kernels.keys import split_key

    grouped: dict[str, dict[str, object]] = {}
    for key, fit in fits.items():
        op_class, dtype = split_key(key)
        grouped.setdefault(op_class, {})[dtype] = _fit_row(fit)
    out = {}
    for op_class, by_dtype in grouped.items():
        top = "bf16" if "bf16" in by_dtype else max(by_dtype, key=lambda d: by_dtype[d]["n"])
        out[op_class] = {**by_dtype[top], "dtype": top, "by_dtype": by_dtype}
    return out


@calibrate_app.command("fit")
def fit_command(
    measurements: list[str] = MEASUREMENTS_ARG,
    out: str = OUT_PROFILE,
    hardware: str = BASE_HARDWARE,
    report: str = REPORT,
    dtype: str = FIT_DTYPE,
    max_rows: int = MAX_ROWS,
    seed: int = SEED,
    ops: list[str] = OPS,
    save: str = SAVE_PROFILE,
    force: bool = FORCE,
    as_json: bool = JSON_OPTION,
) -> None:
    """Fit a calibrated profile to measurements and report held-out errors.

    Example: roofline calibrate fit builtin:h100-sxm --hardware h100-sxm --out h100-cal.yaml --report cal.html
    """
    from roofline.calibrate.engine.importers import import_file as import_e2e
    from roofline.calibrate.engine.importers import is_end_to_end
    from roofline.calibrate.kernels.data import load_all
    from roofline.calibrate.kernels.fit import _wanted, calibrate
    from roofline.core.files import write_bytes_atomic
    from roofline.kernels.schema import CalibrationError
    from roofline.specs import dump_yaml, hardware_names
    from roofline.views.report.calibration import render_calibration_report

    saved = None
    if save is not None:
        saved = user_catalog.target(
            "hardware", user_catalog.check_name(save, hardware_names(), "--save"), force, "--save"
        )
    if out is None and saved is None:
        raise RooflineError("calibrate fit: give --out FILE.yaml or --save NAME for the profile")
    check_outputs([("--out", out), ("--report", report)])  # every output path before anything is written
    if ops:
        _wanted([], ops)  # unknown --op values are refused before the measurements are read
    e2e_files = [m for m in measurements if is_end_to_end(m)]
    kernel_files = [m for m in measurements if m not in e2e_files]
    engines: dict[str, object] = {}
    if kernel_files:
        given = load_hardware_option(hardware).model_copy(update={"calibration": None}) if hardware else None
        table = load_all(kernel_files)
        base = given if given is not None else _base_hardware(None, table)
        profile, fits = calibrate(table, base, dtype=dtype or None, max_rows=max_rows, seed=seed, ops=ops or None)
    elif hardware:  # end-to-end rows only: the engine terms go on top of the given spec or profile
        profile, fits, table = load_hardware_option(hardware), {}, None
    else:
        raise CalibrationError("end-to-end rows alone need --hardware (a spec or a calibrated profile to extend)")
    if e2e_files:
        from roofline.calibrate.engine.entries import with_engines

        profile, engine_fits = with_engines(profile, [r for f in e2e_files for r in import_e2e(f)])
        engines = {k: engine_summary(f) for k, f in engine_fits.items()}
    page = render_calibration_report(profile, fits, table) if (report and fits) else None
    text = dump_yaml(profile.model_dump(exclude_none=True))
    for target in (out, saved):
        if target is not None:
            write_bytes_atomic(target, text.encode("utf-8"))
    if page is not None:
        write_bytes_atomic(report, page.encode("utf-8"))
    rows = _fit_rows(fits)
    data = {
        "profile": str(out or saved),
        "hardware": profile.name,
        "report": str(report) if report else None,
        "saved": str(saved) if saved else None,
        "ops": rows,
        "engines": engines,
    }

    def _kernel_table() -> None:
        table_ = compact_table(
            f"calibrated {profile.name} -> {out or saved}",
            ["entry", "rows", "spec", "const", "model", "random", "range", "bnd"],
        )
        for key, fit in fits.items():
            r = _fit_row(fit)
            table_.add_row(
                key,
                str(r["n"]),
                _pct(r["before"].get("mape")),
                _pct(r["constant"].get("mape")),
                _pct(r["after"].get("mape")),
                _arrow(r["random_split"]),
                _arrow(r["range_split"]),
                str(len(r["at_bound"])) if r["at_bound"] else "-",
            )
        console.print(table_)
        console.print(
            "MAPE of predicted kernel time: spec roofline, constant efficiencies + "
            "overhead, calibrated model; random / shape range: held-out spec→model; "
            "bnd: fitted parameters stuck at a bound of their range."
        )
        for key, fit in fits.items():
            if fit.at_bound:
                console.print(f"missing term? {key}: {', '.join(fit.at_bound)} at a bound")
            if fit.undetermined:
                console.print(
                    f"undetermined: {key}: too few message sizes for {', '.join(fit.undetermined)} "
                    "(kept at the measured floor and peak bus rate)"
                )

    def render() -> None:
        if not fits:  # end-to-end rows only: no kernel entry was fitted
            console.print(f"calibrated {profile.name} -> {out or saved} (engine entries only; no kernel rows)")
        else:
            _kernel_table()
        for key, e in engines.items():
            terms = ", ".join(f"{n} {v:.3g} ± {e['spread'].get(n, 0.0):.2g}" for n, v in e["terms"].items())
            held = e.get("holdout_mape", float("nan"))
            held_text = f"{held:.1%} held out by row" if held == held else "none held out (one row)"
            console.print(
                f"engine {key}: {e['rows']} rows; MAPE {e['before_mape']:.1%} documented values -> "
                f"{e['after_mape']:.1%} fitted, {held_text}; fitted {terms}; at the upper bound (a missing "
                f"term?): {', '.join(e['at_upper_bound']) or 'none'}; not fitted: "
                + ("; ".join(f"{n} ({why})" for n, why in e["not_fitted"].items()) or "none"),
                highlight=False,
            )
        if report and fits:
            console.print(f"report: {report}")
        if saved is not None:
            console.print(f"saved in the user catalog: {saved} (use --hardware {saved.stem})", highlight=False)

    emit(data, as_json, render)


@calibrate_app.command("evaluate")
def evaluate_command(
    measurements: list[str] = MEASUREMENTS_ARG,
    profile: str = PROFILE,
    dtype: str = EVAL_DTYPE,
    as_json: bool = JSON_OPTION,
) -> None:
    """Per-op errors (n, MAPE, median, p90) of a profile's predictions on measurements.

    Example: roofline calibrate evaluate --profile h100-cal.yaml builtin:h100-sxm --json
    """
    import numpy as np

    from roofline.calibrate.kernels.data import load_all
    from roofline.kernels.predict import (
        COMPUTE_OPS,
        error_stats,
        evaluate,
        evaluate_by_dtype,
        row_keys,
        scored_rows,
        spec_predict,
        uncovered,
    )

    hw = load_hardware_option(profile, "--profile")
    table = load_all(measurements)
    if hw.name in table.unique("hardware"):
        table = table.where(hardware=hw.name)
    if dtype:
        table = table.take(~np.isin(table["op"], list(COMPUTE_OPS)) | (table["dtype"] == dtype))
    stats, by_dtype = evaluate(hw, table), evaluate_by_dtype(hw, table)
    scored = scored_rows(hw, table)
    spec, keys = spec_predict(hw, scored), row_keys(scored)
    for key, entry in stats.items():
        for dt, sub in by_dtype[key].items():
            mask = (keys == key) & (scored["dtype"] == dt)
            before = error_stats(spec[mask], scored["time_s"][mask])
            sub.update({f"spec_{k}": v for k, v in before.items() if k != "n"})
            sub["n"] = int(sub["n"])
        before = error_stats(spec[keys == key], scored["time_s"][keys == key])
        entry.update({f"spec_{k}": v for k, v in before.items() if k != "n"})
        entry["n"] = int(entry["n"])
        entry["by_dtype"] = by_dtype[key]
    missing = uncovered(hw, table)
    data = {"profile": profile, "hardware": hw.name, "ops": stats, "uncovered": missing}

    def render() -> None:
        t = compact_table(
            f"{hw.name}: predicted vs measured kernel time",
            ["op", "dtype", "n", "MAPE", "median", "p90", "spec MAPE"],
            left=("dtype",),
        )
        for key, entry in stats.items():
            for dt, s in entry["by_dtype"].items():
                t.add_row(
                    key,
                    dt,
                    str(s["n"]),
                    _pct(s["mape"]),
                    _pct(s["median_ape"]),
                    _pct(s["p90_ape"]),
                    _pct(s["spec_mape"]),
                )
        console.print(t)
        if missing:
            console.print(
                "not scored (the profile has no entry for them): "
                + ", ".join(f"{k} ({n} rows)" for k, n in missing.items())
            )

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    """Plug ``calibrate`` (fit, evaluate; ``import`` from :mod:`.measure`) into the root app."""
    app.add_typer(calibrate_app, name="calibrate")


def engine_summary(fit: EntryFit) -> dict[str, object]:
    """``calibrate fit --json``'s view of an engine fit (keys kept from the earlier fit, new ones beside)."""
    absent = [n for n in fit.fitted if fit.values[n] <= 0.0]
    return {
        "rows": fit.rows,
        **fit.stats,
        "terms": {n: fit.values[n] for n in fit.fitted},
        "at_bound": sorted(absent + fit.at_upper),
        "absent": absent,
        "at_upper_bound": fit.at_upper,
        "large_collective_bytes": 0.0,
        "fitted": fit.fitted,
        "not_fitted": fit.held,
        "spread": fit.spread,
        "entry": fit.values,
    }
