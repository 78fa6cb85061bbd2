"""Options every deployment-building command shares, and the one parser from options to a Deployment."""

from __future__ import annotations

import typer

from ..deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, Precision, deployment
from ..errors import RooflineError
from ..specs import HardwareSpec, ModelSpec
from ..units import DTYPE_BYTES

MODEL = typer.Option(..., "--model", "-m", help="Built-in model name, YAML or config.json path.")
HARDWARE = typer.Option(..., "--hardware", "-H", help="Built-in chip, YAML or calibrated profile.")
CHIPS = typer.Option(1, "--chips", "-n", help="Chips in the slice.")
BATCH = typer.Option(1, "--batch", "-b", help="Concurrent sequences (decode batch).")
WEIGHTS = typer.Option("bf16", "--weights", help="Weight dtype: bf16, fp8, int8, int4, ...")
KV_DTYPE = typer.Option("bf16", "--kv-dtype", help="KV-cache dtype.")
COMPUTE = typer.Option("bf16", "--compute-dtype", help="Matmul dtype (its FLOP/s are used).")
PRICE = typer.Option(None, "--price", help="USD per chip-hour (default: the hardware file's).")
TP = typer.Option(None, "--tp", help="Tensor-parallel degree per replica (adds its collectives).")
PP = typer.Option(None, "--pp", help="Pipeline-parallel stages per replica (adds sends and the bubble).")
EP = typer.Option(None, "--ep", help="Expert-parallel degree for MoE models (divides --tp).")
TOPOLOGY = typer.Option(None, "--topology", help="TPU slice axes, e.g. 4x4 (the tp group spans it).")
MEMORY_UTILIZATION = typer.Option(
    DEFAULT_MEMORY_UTILIZATION, "--memory-utilization",
    help=f"Fraction of physical HBM the engine may use (default {DEFAULT_MEMORY_UTILIZATION}, vLLM's "
         "gpu_memory_utilization); 1 = the book's accounting (no activation reserve).")

ENGINE = typer.Option(None, "--engine", help="Engine entry of a calibrated profile's engine: section, e.g. "
                                            "trtllm/1.0 (default: its only entry, else none).")

#: Largest whole number accepted for counts (batch, chips, degrees, lengths): far above any real system.
MAX_COUNT = 1 << 40


def check_count(option: str, value: int | None, low: int = 1) -> None:
    """A whole-number option within [low, 2**40], else one line naming the option."""
    if value is not None and not (low <= value <= MAX_COUNT):
        raise RooflineError(f"{option} must be a whole number from {low} to {MAX_COUNT} (got {value})")


def precision_from_options(weights: str, kv_dtype: str, compute_dtype: str) -> Precision:
    """Validate the three dtype options into a Precision, naming the bad option."""
    for option, value in (("--weights", weights), ("--kv-dtype", kv_dtype),
                          ("--compute-dtype", compute_dtype)):
        if value not in DTYPE_BYTES:
            raise RooflineError(f"{option}: unknown dtype {value!r}; allowed: {', '.join(DTYPE_BYTES)}")
    return Precision(weights=weights, kv=kv_dtype, compute=compute_dtype)


def deployment_from_options(model: ModelSpec, hw: HardwareSpec, chips: int, weights: str, kv_dtype: str,
                            compute_dtype: str, tp: int | None = None, pp: int | None = None,
                            ep: int | None = None, topology: str | None = None,
                            memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
                            price: float | None = None, engine: str | None = None) -> Deployment:
    """Parse the shared options once into a Deployment (one-line errors name the flag)."""
    check_count("--chips", chips)
    for option, value in (("--tp", tp), ("--pp", pp), ("--ep", ep)):
        check_count(option, value)
    if topology is not None and not topology.strip():
        raise RooflineError("--topology is empty; give axes such as 4x4")
    prec = precision_from_options(weights, kv_dtype, compute_dtype)
    return deployment(model, hw, chips, prec, tp=tp, pp=pp, ep=ep, topology_text=topology,
                      memory_utilization=memory_utilization, price_per_chip_hour=price, engine=engine)
