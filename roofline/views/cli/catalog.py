"""`roofline hardware list|show` and `roofline model list|show`."""

from __future__ import annotations

from pathlib import Path

import typer

from roofline.core.errors import RooflineError
from roofline.core.fmt import format_bytes, format_seconds, format_si
from roofline.model import memory
from roofline.specs import catalog_origins, hardware_names, load_hardware, load_model, model_names, user_catalog
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit, quantity_table

hardware_app = typer.Typer(
    help="Chips: built-in and saved in the user catalog.  Example: roofline hardware show tpu-v5e", no_args_is_help=True
)
model_app = typer.Typer(
    help="Models: built-in and saved in the user catalog.  Example: roofline model show llama-2-13b",
    no_args_is_help=True,
)


def _origin(name: str, origins: dict[str, str]) -> str:
    where = origins.get(name, "built-in")
    return where if where == "built-in" else "user"


def _footer() -> None:
    console.print(
        f"[dim]user catalog: {user_catalog.user_home()} (set {user_catalog.HOME_VARIABLE} to move it)[/]",
        highlight=False,
    )


@hardware_app.command("list")
def hardware_list(as_json: bool = JSON_OPTION) -> None:
    """List chips: the built-in ones, then those saved in the user catalog.  Example: roofline hardware list --json"""
    origins = catalog_origins("hardware")
    specs = {n: load_hardware(n if origins[n] == "built-in" else origins[n]) for n in origins}
    rows = [
        {
            "name": n,
            "kind": h.kind,
            "flops_per_s": h.flops_per_s,
            "hbm_bytes": h.hbm_bytes,
            "hbm_bandwidth_bytes_per_s": h.hbm_bandwidth_bytes_per_s,
            "price_per_chip_hour": h.price_per_chip_hour,
            "origin": origins[n],
            "calibrated": h.calibration is not None,
        }
        for n, h in specs.items()
    ]

    def render() -> None:
        table = compact_table(
            "Hardware",
            ["name", "kind", "bf16\nTFLOP/s", "HBM", "HBM BW", "$/chip\n-hour", "origin"],
            left=("kind", "origin"),
        )
        for r in rows:
            h = specs[r["name"]]
            bf16 = h.flops_per_s.get("bf16")
            origin = _origin(r["name"], origins) + (" (calibrated)" if r["calibrated"] else "")
            table.add_row(
                r["name"],
                h.kind,
                f"{bf16 / 1e12:.0f}" if bf16 else "-",
                format_bytes(h.hbm_bytes),
                format_bytes(h.hbm_bandwidth_bytes_per_s) + "/s",
                f"{h.price_per_chip_hour:.2f}",
                origin,
            )
        console.print(table)
        _footer()

    emit(rows, as_json, render)


def spec_value(key: str, value: object) -> str:
    """One hardware field for people: units and SI prefixes (80 GB, 3.35 TB/s, 2 us, $3.00/h)."""
    if isinstance(value, dict) and key == "flops_per_s":
        return "\n".join(f"{d} {format_si(v, 'FLOP/s')}" for d, v in value.items())
    if isinstance(value, dict) and key == "calibration":
        return f"{len(value)} fitted entries: {', '.join(map(str, value))}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if key.endswith("_bytes_per_s"):
        return format_bytes(value) + "/s"
    if key.endswith("_bytes"):
        return format_bytes(value)
    if key.endswith("_s"):
        return format_seconds(value) if value >= 1e-6 or value == 0 else f"{value * 1e9:.3g} ns"
    if key == "price_per_chip_hour":
        return f"${value:,.2f} per chip-hour"
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


@hardware_app.command("show")
def hardware_show(
    name: str = typer.Argument(..., help="Built-in or catalog name, YAML path or calibrated profile."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show one chip, with units.  Example: roofline hardware show h100-sxm"""
    h = load_hardware(name)
    data = h.model_dump(exclude_none=True)

    def render() -> None:
        table = quantity_table(h.name)
        table.show_header = False
        table.columns[1].justify = "left"
        for key, value in data.items():
            table.add_row(key, spec_value(key, value))
        console.print(table)

    emit(data, as_json, render)


@hardware_app.command("add")
def hardware_add(
    file: str = typer.Argument(..., help="Hardware YAML or calibrated profile to save."),
    name: str = typer.Option(None, "--name", help="Name to save it under (default: its name field)."),
    force: bool = typer.Option(False, "--force", help="Replace a file saved under that name."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Save a hardware file or calibrated profile in the user catalog, then use it by name.

    Example: roofline hardware add h100-cal.yaml --name h100-cal && roofline step -m llama-3-8b -H h100-cal
    """
    path = _save(file, "hardware", name, force)
    emit(
        {"name": path.stem, "path": str(path)},
        as_json,
        lambda: console.print(f"saved {path.stem} -> {path}", highlight=False),
    )


@model_app.command("add")
def model_add(
    file: str = typer.Argument(..., help="Model YAML to save (config.json: use model import --save)."),
    name: str = typer.Option(None, "--name", help="Name to save it under (default: its name field)."),
    force: bool = typer.Option(False, "--force", help="Replace a file saved under that name."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Save a model YAML in the user catalog, then use it by name.  Example: roofline model add my-model.yaml"""
    path = _save(file, "models", name, force)
    emit(
        {"name": path.stem, "path": str(path)},
        as_json,
        lambda: console.print(f"saved {path.stem} -> {path}", highlight=False),
    )


def _save(file: str, kind: user_catalog.Kind, name: str | None, force: bool) -> Path:
    """Validate ``file`` (named ``name`` or its own name), then write it whole into the user catalog."""
    from roofline.core.files import write_text_atomic
    from roofline.specs.files import read_yaml

    builtin = hardware_names() if kind == "hardware" else model_names()
    if name is not None:
        user_catalog.check_name(name, builtin, "--name")
    source = Path(file)
    if source.suffix == ".json":
        raise RooflineError(f"{file}: a config.json is saved with: roofline model import {file} --name NAME --save")
    load = load_hardware if kind == "hardware" else load_model
    spec = load(str(source) if "/" in file or source.suffix else f"./{file}")
    key = user_catalog.check_name(name or spec.name, builtin, "--name")
    target = user_catalog.target(kind, key, force, "--name")
    read_yaml(source)  # within the size and structure limits (load() already checked the fields)
    text = user_catalog.with_name(source.read_text(encoding="utf-8"), key)
    write_text_atomic(target, text)
    try:
        load(str(target))
    except RooflineError:
        target.unlink(missing_ok=True)
        raise
    return target


@model_app.command("list")
def model_list(as_json: bool = JSON_OPTION) -> None:
    """List models: the built-in ones, then those saved in the user catalog.  Example: roofline model list"""
    origins = catalog_origins("models")
    rows = []
    for name, origin in origins.items():
        m = load_model(name if origin == "built-in" else origin)
        counts = memory.param_counts(m)
        rows.append(
            {
                "name": name,
                "param_count": counts.total,
                "active_param_count": counts.active,
                "kv_bytes_per_token_bf16": float(memory.kv_cache_bytes_per_token(m, 2.0)),
                "origin": origin,
            }
        )

    def render() -> None:
        table = compact_table("Models", ["name", "params", "active", "KV/token\n(bf16)", "origin"], left=("origin",))
        for r in rows:
            table.add_row(
                r["name"],
                f"{r['param_count'] / 1e9:.2f} B",
                f"{r['active_param_count'] / 1e9:.2f} B",
                format_bytes(r["kv_bytes_per_token_bf16"]),
                _origin(r["name"], origins),
            )
        console.print(table)
        _footer()

    emit(rows, as_json, render)


@model_app.command("show")
def model_show(
    name: str = typer.Argument(..., help="Built-in name, YAML or config.json path."), as_json: bool = JSON_OPTION
) -> None:
    """Show a model with derived parameter counts and KV bytes.  Example: roofline model show llama-3-8b"""
    m = load_model(name)
    counts = memory.param_counts(m)
    data = m.model_dump(exclude_none=True)
    data["derived"] = {
        "param_count": counts.total,
        "active_param_count": counts.active,
        "params_embedding": counts.embedding,
        "params_attention": counts.attention,
        "params_mlp": counts.mlp,
        "params_norms": counts.norms,
        "kv_bytes_per_token_bf16": float(memory.kv_cache_bytes_per_token(m, 2.0)),
        "layer_kinds": memory.layer_mix(m).kinds(),
    }
    state = float(memory.state_bytes_per_sequence(m, 2.0))
    if state:
        data["derived"]["state_bytes_per_sequence"] = state  # bf16, like kv_bytes_per_token_bf16

    def render() -> None:
        table = quantity_table(m.name)
        table.show_header = False
        table.columns[1].justify = "left"
        for key, value in data.items():
            if key != "derived":
                table.add_row(key, str(value))
        for key, value in data["derived"].items():
            if isinstance(value, dict):
                shown = ", ".join(f"{k} {v}" for k, v in value.items())
            else:
                shown = format_bytes(value) if "bytes" in key else f"{value / 1e9:.3f} B"
            table.add_row(f"[bold]{key}[/]", shown)
        console.print(table)

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.add_typer(hardware_app, name="hardware")
    app.add_typer(model_app, name="model")
