"""`roofline diff`: which terms (weights, KV, FLOPs, communication) explain two configurations' gap."""

from __future__ import annotations

import numpy as np
import typer

from roofline.analyses.diff import diff_steps
from roofline.analyses.step import step_from
from roofline.core.errors import OptionError, RooflineError, shown
from roofline.core.fmt import format_bytes, format_seconds
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, compact_table, console, emit, print_assumptions
from roofline.views.cli.options import (
    ATTENTION_DP,
    BATCH,
    CHIPS,
    COMPUTE,
    CONTEXT,
    ENGINE,
    EP,
    HARDWARE,
    KV_DTYPE,
    MEMORY_UTILIZATION,
    MODEL,
    PP,
    PRICE,
    TP,
    WEIGHTS,
    deployment_from_options,
    load_hardware_option,
    load_model_option,
)

#: Keys ``--with`` (``--b``) may override, and each one's check (the same as its own flag's).
OVERRIDES = {
    "model": values.name,
    "hardware": values.name,
    "chips": values.count(),
    "batch": values.count(),
    "context": values.count(),
    "weights": values.dtype,
    "kv_dtype": values.dtype,
    "compute_dtype": values.dtype,
    "price": values.price,
    "tp": values.count(),
    "pp": values.count(),
    "ep": values.count(),
    "attention_dp": values.count(),
    "memory_utilization": values.fraction,
    "engine": values.name,
}


def parse_overrides(text: str) -> dict[str, object]:
    """'hardware=tpu-v5e,chips=8' -> {'hardware': 'tpu-v5e', 'chips': 8}; unknown keys named."""
    out: dict[str, object] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in OVERRIDES:
            raise RooflineError(f"--with: cannot read {shown(item)}; use key=value with keys: {', '.join(OVERRIDES)}")
        if key in out:
            raise RooflineError(f"--with: key {key!r} is given twice (in {shown(text)}); give each key once")
        try:
            out[key] = OVERRIDES[key](value.strip())
        except ValueError as exc:
            raise RooflineError(f"--with: {key}: {exc}") from None
    if not out:
        raise RooflineError("--with: give at least one key=value, e.g. hardware=tpu-v5e,chips=8")
    return out


def diff_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    chips: int = CHIPS,
    batch: int = BATCH,
    context: int = CONTEXT,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    price: float = PRICE,
    tp: int = TP,
    pp: int = PP,
    ep: int = EP,
    attention_dp: int = ATTENTION_DP,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    b: str = typer.Option(
        ...,
        "--with",
        "--b",
        help="Configuration B as overrides of A: key=value,... "
        "(model, hardware, chips, batch, context, weights, kv_dtype, "
        "compute_dtype, price, tp, pp, ep, attention_dp, memory_utilization, engine).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Decode step of A (the options) vs B (A with --b overrides): which terms make the difference.

    Example: roofline diff --model llama-3-70b --hardware h100-sxm --chips 4 --batch 64 --b kv_dtype=int8
    """
    config_a = {
        "model": model,
        "hardware": hardware,
        "chips": chips,
        "batch": batch,
        "context": context,
        "weights": weights,
        "kv_dtype": kv_dtype,
        "compute_dtype": compute_dtype,
        "price": price,
        "tp": tp,
        "pp": pp,
        "ep": ep,
        "attention_dp": attention_dp,
        "memory_utilization": memory_utilization,
        "engine": engine,
    }
    config_b = {**config_a, **parse_overrides(b)}
    results = []
    for label, cfg in (("A", config_a), ("B", config_b)):
        try:
            dep = deployment_from_options(
                load_model_option(cfg["model"]),
                load_hardware_option(cfg["hardware"], compute_dtype=cfg["compute_dtype"]),
                cfg["chips"],
                cfg["weights"],
                cfg["kv_dtype"],
                cfg["compute_dtype"],
                cfg["tp"],
                cfg["pp"],
                cfg["ep"],
                None,
                cfg["memory_utilization"],
                cfg["price"],
                cfg["engine"],
                cfg["attention_dp"],
            )
        except OptionError as exc:
            raise OptionError(f"configuration {label}: {exc}", parameters=exc.parameters) from None
        except RooflineError as exc:
            raise type(exc)(f"configuration {label}: {exc}") from None
        results.append(step_from(dep, cfg["batch"], cfg["context"]))
    res = diff_steps(*results)
    fits_a, fits_b = (bool(np.all(r.fits)) for r in results)
    data: dict[str, object] = {
        "a": config_a,
        "b": config_b,
        **res.as_dict(),
        "fits_a": fits_a,
        "fits_b": fits_b,
        "sources": {"A": results[0].sources, "B": results[1].sources},
    }
    null_costs(data, fits_a, fits_b)

    def render() -> None:
        table = compact_table(
            f"step time and $/Mtok: A {format_seconds(res.step_a_s)}, {_cost(data['cost_a'])} -> "
            f"B {format_seconds(res.step_b_s)}, {_cost(data['cost_b'])}",
            ["term", "A", "B", "Δ time", "share of Δ", "Δ $/Mtok"],
        )
        for t, row in zip(res.terms, data["terms"], strict=True):
            table.add_row(
                t.term,
                format_seconds(t.a_s),
                format_seconds(t.b_s),
                ("+" if t.delta_s >= 0 else "-") + format_seconds(abs(t.delta_s)),
                f"{100 * t.share + 0.0:.0f}%",
                _signed(row["cost_delta"]),
            )
        table.add_row("chips · $/h / batch", "", "", "", "", _signed(data["cost_delta_from_price_chips_batch"]))
        console.print(table)
        mem = res.memory
        console.print(
            f"weights {format_bytes(mem['param_bytes']['a'])} -> {format_bytes(mem['param_bytes']['b'])}; "
            f"KV {format_bytes(mem['kv_bytes']['a'])} -> {format_bytes(mem['kv_bytes']['b'])}; "
            f"HBM {format_bytes(mem['hbm_capacity_bytes']['a'])} -> "
            f"{format_bytes(mem['hbm_capacity_bytes']['b'])}"
        )
        for side in ("a", "b"):
            if not data[f"fits_{side}"]:
                console.print(
                    f"[bold red]{side.upper()} does not fit in HBM[/] "
                    f"({format_bytes(mem['total_bytes'][side])} needed): no $/Mtok for it"
                )
        print_assumptions(sources=results[0].sources)

    emit(data, as_json, render)


def null_costs(data: dict[str, object], fits_a: bool, fits_b: bool) -> None:
    """A side that does not fit gets no $/Mtok, and a Δ$/Mtok needs both sides (the keys stay, null), as in step."""
    if not fits_a:
        data["cost_a"] = None
    if not fits_b:
        data["cost_b"] = None
    if not (fits_a and fits_b):
        data["cost_delta_from_price_chips_batch"] = None
        for term in data["terms"]:
            term["cost_delta"] = None


def _cost(value: float | None) -> str:
    return "does not fit" if value is None else f"${value:.3f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.4f}"


def register(app: typer.Typer) -> None:
    app.command("diff")(diff_command)
