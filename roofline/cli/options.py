"""Options every deployment-building command shares, and the one parser from options to a Deployment."""

from __future__ import annotations

import typer

from ..deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, Precision, deployment
from ..errors import RooflineError
from ..memory import WEIGHT_COMPONENTS
from ..specs import HardwareSpec, ModelSpec
from ..units import DTYPE_BYTES

MODEL = typer.Option(..., "--model", "-m", help="Built-in model name, YAML or config.json path.")
HARDWARE = typer.Option(..., "--hardware", "-H", help="Built-in chip, YAML or calibrated profile.")
CHIPS = typer.Option(1, "--chips", "-n", help="Chips in the slice.")
BATCH = typer.Option(1, "--batch", "-b", help="Concurrent sequences (decode batch).")
WEIGHTS = typer.Option("bf16", "--weights", help=(
    "Weight dtype: bf16, fp8, int8, int4, nvfp4, mxfp4, fp8_block, ...; per component: "
    "bf16,experts=mxfp4 (components: attention, mlp, experts, embeddings, lm_head); "
    "'checkpoint' = the model's own precision"))
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


def _dtype(option: str, value: str) -> str:
    if value not in DTYPE_BYTES:
        raise RooflineError(f"{option}: unknown dtype {value!r}; allowed: {', '.join(DTYPE_BYTES)}")
    return value


def precision_from_options(weights: str, kv_dtype: str, compute_dtype: str,
                           model: ModelSpec | None = None) -> Precision:
    """Validate the dtype options into a Precision, naming the bad option.

    ``--weights`` is a default dtype and/or component=dtype items, comma-separated
    (``bf16,experts=mxfp4``; ``experts=fp4`` keeps bf16 as the default); ``checkpoint`` starts
    from the model's own ``precision`` (needs ``model``).
    """
    _dtype("--kv-dtype", kv_dtype)
    _dtype("--compute-dtype", compute_dtype)
    default, components = "bf16", {}
    for item in (part.strip() for part in str(weights).split(",")):
        if not item:
            raise RooflineError(f"--weights: empty item in {weights!r} (e.g. bf16,experts=mxfp4)")
        if item == "checkpoint":
            if model is None:
                raise RooflineError("--weights checkpoint: this command has no model to read a precision from")
            base = Precision.checkpoint(model)
            default, components = base.weights, {**dict(base.components), **components}
        elif "=" in item:
            name, _, dtype = (x.strip() for x in item.partition("="))
            if name not in WEIGHT_COMPONENTS:
                raise RooflineError(f"--weights: unknown component {name!r} in {item!r}; allowed: "
                                    f"{', '.join(WEIGHT_COMPONENTS)}")
            components[name] = _dtype("--weights", dtype)
        else:
            default = _dtype("--weights", item)
    return Precision(weights=default, kv=kv_dtype, compute=compute_dtype,
                     components=tuple(sorted((c, d) for c, d in components.items() if d != default)))


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
    prec = precision_from_options(weights, kv_dtype, compute_dtype, model)
    return deployment(model, hw, chips, prec, tp=tp, pp=pp, ep=ep, topology_text=topology,
                      memory_utilization=memory_utilization, price_per_chip_hour=price, engine=engine)
