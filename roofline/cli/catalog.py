"""`roofline hardware list|show` and `roofline model list|show`."""

from __future__ import annotations

import typer
from rich.table import Table

from .. import memory
from ..fmt import format_bytes
from ..specs import hardware_names, load_hardware, load_model, model_names
from ._common import JSON_OPTION, console, emit

hardware_app = typer.Typer(help="Built-in chips.  Example: roofline hardware show tpu-v5e", no_args_is_help=True)
model_app = typer.Typer(help="Built-in models.  Example: roofline model show llama-2-13b", no_args_is_help=True)


@hardware_app.command("list")
def hardware_list(as_json: bool = JSON_OPTION) -> None:
    """List built-in chips.  Example: roofline hardware list --json"""
    specs = [load_hardware(n) for n in hardware_names()]
    rows = [
        {
            "name": h.name,
            "kind": h.kind,
            "flops_per_s": h.flops_per_s,
            "hbm_bytes": h.hbm_bytes,
            "hbm_bandwidth_bytes_per_s": h.hbm_bandwidth_bytes_per_s,
            "price_per_chip_hour": h.price_per_chip_hour,
        }
        for h in specs
    ]

    def render() -> None:
        table = Table(title="Built-in hardware")
        for col in ("name", "kind", "bf16 TFLOP/s", "HBM", "HBM BW", "$/chip-h"):
            table.add_column(col)
        for h in specs:
            bf16 = h.flops_per_s.get("bf16")
            table.add_row(
                h.name, h.kind, f"{bf16 / 1e12:.0f}" if bf16 else "-",
                format_bytes(h.hbm_bytes), format_bytes(h.hbm_bandwidth_bytes_per_s) + "/s",
                f"{h.price_per_chip_hour:.2f}",
            )
        console.print(table)

    emit(rows, as_json, render)


@hardware_app.command("show")
def hardware_show(name: str = typer.Argument(..., help="Built-in name or YAML path."),
                  as_json: bool = JSON_OPTION) -> None:
    """Show one chip.  Example: roofline hardware show h100-sxm"""
    h = load_hardware(name)
    data = h.model_dump(exclude_none=True)

    def render() -> None:
        table = Table(title=h.name, show_header=False)
        for key, value in data.items():
            table.add_row(key, str(value))
        console.print(table)

    emit(data, as_json, render)


@model_app.command("list")
def model_list(as_json: bool = JSON_OPTION) -> None:
    """List built-in models.  Example: roofline model list"""
    rows = []
    for name in model_names():
        m = load_model(name)
        counts = memory.param_counts(m)
        rows.append({"name": m.name, "param_count": counts.total,
                     "active_param_count": counts.active,
                     "kv_bytes_per_token_bf16": float(memory.kv_cache_bytes_per_token(m, 2.0))})

    def render() -> None:
        table = Table(title="Built-in models")
        for col in ("name", "params", "active", "KV/token (bf16)"):
            table.add_column(col)
        for r in rows:
            table.add_row(r["name"], f"{r['param_count'] / 1e9:.2f} B",
                          f"{r['active_param_count'] / 1e9:.2f} B",
                          format_bytes(r["kv_bytes_per_token_bf16"]))
        console.print(table)

    emit(rows, as_json, render)


@model_app.command("show")
def model_show(name: str = typer.Argument(..., help="Built-in name, YAML or config.json path."),
               as_json: bool = JSON_OPTION) -> None:
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
        table = Table(title=m.name, show_header=False)
        for key, value in data.items():
            if key != "derived":
                table.add_row(key, str(value))
        for key, value in data["derived"].items():
            shown = format_bytes(value) if "bytes" in key else f"{value / 1e9:.3f} B"
            table.add_row(f"[bold]{key}[/]", shown)
        console.print(table)

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.add_typer(hardware_app, name="hardware")
    app.add_typer(model_app, name="model")
