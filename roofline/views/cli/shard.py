"""`roofline shard`: how far each kind of sharding scales before the network binds."""

from __future__ import annotations

import typer

from roofline.analyses.shard import shard_limits
from roofline.core.fmt import format_bytes, format_seconds
from roofline.views.cli import values
from roofline.views.cli._common import (
    EXPLAIN_OPTION,
    JSON_OPTION,
    console,
    emit,
    explanations_into,
    print_assumptions,
    print_explanations,
    quantity_table,
)
from roofline.views.cli.options import (
    BATCH,
    COMPUTE,
    CONTEXT,
    HARDWARE,
    KV_DTYPE,
    MODEL,
    WEIGHTS,
    load_hardware_option,
    load_model_option,
    precision_from_options,
)
from roofline.views.explain import explain_shard


def shard_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    chips: int = typer.Option(8, "--chips", "-n", parser=values.count(), help="Chips in the slice."),
    batch: int = BATCH,
    context: int = CONTEXT,
    tp: int = typer.Option(
        None, "--tp", parser=values.count(), help="Tensor-parallel degree (default: all chips / the topology)."
    ),
    topology: str = typer.Option(
        None,
        "--topology",
        parser=values.topology_text,
        help="TPU slice axes, e.g. 4x4; the tp group takes leading axes.",
    ),
    expert_ways: int = typer.Option(
        None, "--expert-ways", parser=values.count(), help="MoE: chips the experts split over (Z)."
    ),
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    explain: bool = EXPLAIN_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Sharding limits: model-parallel Y in decode and prefill, latency-bound Y, KV sharding, 1D vs 2D, experts.

    Example: roofline shard --model book-exercise --hardware tpu-v5e --chips 16 --topology 4x4 --batch 32
    """
    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype=compute_dtype)
    prec = precision_from_options(weights, kv_dtype, compute_dtype)
    res = shard_limits(m, hw, chips, batch, context, prec, tp, topology, expert_ways)
    data: dict[str, object] = {"model": m.name, "hardware": hw.name, "context": context, **res.as_dict()}
    explanations = explanations_into(data, explain_shard(m, res) if explain else [])

    def render() -> None:
        table = quantity_table(f"{m.name} on {chips}x {hw.name}, tp {res.tp}, batch {batch}, context {context}")
        rows = [
            (
                "β = W_hbm / W_ici (per-chip ICI of the tp group)",
                f"{res.beta:.1f} ({format_bytes(res.ici_bandwidth_bytes_per_s)}/s)",
            ),
            ("decode: largest Y before ICI binds, F/(B·β)", f"{res.max_tp_decode:.1f}"),
            ("prefill: largest Y before ICI binds, F/α_ici", f"{res.max_tp_prefill:.1f}"),
            ("activation collectives latency-bound above Y", f"{res.latency_bound_above_tp:.1f}"),
            ("KV cache split: heads x batch", f"{res.kv_head_shards} x {res.kv_batch_shards}"),
            ("AllToAlls per attention layer", str(res.attention_alltoalls_per_layer)),
            (
                "MLP comms 1D / optimal 2D (per layer)",
                f"{format_seconds(res.comms_1d_s)} / {format_seconds(res.comms_2d_s)}",
            ),
            ("2D weight-stationary wins above", f"{res.weight_stationary_2d_crossover_chips:.0f} chips"),
            (
                "sequence-sharded KV: Q gather + output reduce per step",
                format_seconds(float(res.sequence_sharding_comms_s)),
            ),
            ("decode step (no comms)", format_seconds(float(res.local_step_time_s))),
            ("decode step (prediction)", format_seconds(float(res.step_time_s))),
            ("collectives per step", format_seconds(float(res.comms_time_s))),
            (
                "step lower (overlapped) / upper (serialized)",
                f"{format_seconds(float(res.step_time_lower_s))} / {format_seconds(float(res.step_time_upper_s))}",
            ),
            ("bound", f"[bold yellow]{res.bound}[/]"),
        ]
        if res.moe:
            moe = res.moe
            smallest = moe["smallest_slice_chips"]
            rows += [
                ("experts: Z x Y", f"{moe['expert_ways']} x {moe['model_ways']}"),
                (
                    "weights per chip / load time",
                    f"{format_bytes(moe['weight_bytes_per_chip'])} / {format_seconds(moe['weight_load_time_s'])}",
                ),
                ("free HBM per chip", format_bytes(moe["free_hbm_per_chip_bytes"])),
                ("smallest slice holding the weights", f"{smallest} chips" if smallest else "none in one domain"),
                ("experts touched per step", f"{moe['experts_touched_per_step']:.1f}"),
            ]
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print(f"[dim]comms: {res.sources['comms']}[/]", highlight=False)
        print_assumptions(sources=res.sources)
        if explain:
            print_explanations(explanations, "where each number comes from")

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("shard")(shard_command)
