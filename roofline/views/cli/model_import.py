"""`roofline model import config.json`: a Hugging Face config.json to a catalog-style model YAML."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from roofline.core.files import write_text_atomic
from roofline.core.fmt import format_bytes
from roofline.model import memory
from roofline.specs import model_from_dict, read_json
from roofline.specs.hf.config import model_dict_with_notes
from roofline.views.cli._common import JSON_OPTION, console, emit
from roofline.views.cli.catalog import model_app


def yaml_with_comments(data: dict[str, object], notes: dict[str, str], header: str) -> str:
    """One ``key: value  # source`` line per field, so every number names where it came from."""
    lines = [f"# {line}" for line in header.splitlines()]
    for key, value in data.items():
        text = (
            json.dumps(value)
            if isinstance(value, str)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )
        lines.append(f"{key}: {text}  # {notes.get(key, 'config.json')}")
    return "\n".join(lines) + "\n"


def model_import(
    config: str = typer.Argument(..., help="Path to a Hugging Face config.json."),
    name: str = typer.Option(None, "--name", help="Model name (default: the config's folder name)."),
    out: str = typer.Option(None, "--out", help="Write the model YAML here (default: print it)."),
    out_short: str = typer.Option(None, "-o", hidden=True, help="Deprecated short form of --out."),
    save: bool = typer.Option(
        False,
        "--save",
        help="Save it in the user catalog under --name (then use the name anywhere; see roofline model list).",
    ),
    force: bool = typer.Option(False, "--force", help="With --save: replace a model saved under that name."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Turn a Hugging Face config.json into a model YAML; every line names its source.

    Example: roofline model import examples/hf/Meta-Llama-3.1-8B/config.json --name llama-3.1-8b
    """
    from roofline.specs import model_names, user_catalog
    from roofline.views.cli.values import check_outputs

    out = out if out_short is None else out_short
    path = Path(config)
    saved = None
    if save:
        key = user_catalog.check_name(path.resolve().parent.name if name is None else name, model_names(), "--name")
        saved = user_catalog.target("models", key, force, "--name")
        name = key
    check_outputs([("--out", out)])
    label = name or path.resolve().parent.name or path.stem
    data, notes = model_dict_with_notes(read_json(path), name=label, origin=str(path))
    spec = model_from_dict(data, str(path))  # validate before writing anything
    counts = memory.param_counts(spec)
    header = (
        f"{label}: imported by `roofline model import` from {path}\n"
        f"{counts.total / 1e9:.3f} B parameters, {counts.active / 1e9:.3f} B active"
    )
    text = yaml_with_comments(data, notes, header)
    if out is not None:
        write_text_atomic(out, text)
    if saved is not None:
        write_text_atomic(saved, text)
    summary = {
        "name": spec.name,
        "out": str(out) if out else None,
        "saved": str(saved) if saved else None,
        "model": spec.model_dump(exclude_none=True),
        "param_count": counts.total,
        "active_param_count": counts.active,
        "kv_bytes_per_token_bf16": float(memory.kv_cache_bytes_per_token(spec, 2.0)),
        "notes": notes,
    }

    def render() -> None:
        if out is None and saved is None:
            print(text, end="")
            return
        for where in (out, saved):
            if where is not None:
                console.print(
                    f"wrote {where}: {spec.name}, {counts.total / 1e9:.3f} B parameters "
                    f"({counts.active / 1e9:.3f} B active), KV "
                    f"{format_bytes(summary['kv_bytes_per_token_bf16'])}/token in bf16",
                    highlight=False,
                )
        if saved is not None:
            console.print(f"use it by name: roofline step --model {spec.name} --hardware h100-sxm", highlight=False)

    emit(summary, as_json, render)


def register(app: typer.Typer) -> None:
    model_app.command("import")(model_import)
