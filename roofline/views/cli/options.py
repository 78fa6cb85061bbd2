"""Options every command shares, each declared once with its check, default and help.

One name per concept across commands (the README's options table lists them): ``-o`` is
``--output-len`` everywhere, ``--qps`` and ``--arrival-rate`` are aliases, ``--context`` defaults
to :data:`~roofline.analyses.step.DEFAULT_CONTEXT` everywhere.  Each scalar option's ``parser`` (from
:mod:`roofline.views.cli.values`) checks its value once; :func:`deployment_from_options` builds the one
Deployment from them.
"""

from __future__ import annotations

import typer

from roofline.analyses.step import DEFAULT_CONTEXT
from roofline.core.errors import RooflineError, SpecError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, Deployment, Precision, deployment
from roofline.model import memory
from roofline.model.memory import WEIGHT_COMPONENTS
from roofline.specs import HardwareSpec, ModelSpec, load_hardware, load_model
from roofline.views.cli import values

#: Default achieved fraction of peak FLOP/s in prefill: 1, the roofline bound (said under every table).
DEFAULT_MFU = 1.0

MODEL = typer.Option(
    ..., "--model", "-m", parser=values.name, help="Built-in or catalog model name, YAML or config.json path."
)
HARDWARE = typer.Option(
    ..., "--hardware", "-H", parser=values.name, help="Built-in or catalog chip, YAML or calibrated profile."
)
CHIPS = typer.Option(1, "--chips", "-n", parser=values.count(), help="Chips in the slice.")
BATCH = typer.Option(1, "--batch", "-b", parser=values.count(), help="Concurrent sequences (decode batch).")
CONTEXT = typer.Option(
    DEFAULT_CONTEXT, "--context", "-s", parser=values.count(), help="Tokens in each sequence's KV cache."
)
WEIGHTS = typer.Option(
    "bf16",
    "--weights",
    help=(
        "Weight dtype: bf16, fp8, int8, int4, nvfp4, mxfp4, fp8_block, ...; per component: "
        "bf16,experts=mxfp4 (components: attention, mlp, experts, embeddings, lm_head); "
        "'checkpoint' = the model's own precision"
    ),
)
KV_DTYPE = typer.Option("bf16", "--kv-dtype", parser=values.dtype, help="KV-cache dtype.")
COMPUTE = typer.Option(
    "bf16",
    "--compute-dtype",
    parser=values.dtype_spec,
    help="Matmul dtype (its FLOP/s and kernels are used); per component like --weights: fp8_block,experts=nvfp4.",
)
PRICE = typer.Option(None, "--price", parser=values.price, help="USD per chip-hour (default: the hardware file's).")
TP = typer.Option(
    None, "--tp", parser=values.count(), help="Tensor-parallel degree per replica (adds its collectives)."
)
PP = typer.Option(
    None, "--pp", parser=values.count(), help="Pipeline-parallel stages per replica (adds sends and the bubble)."
)
EP = typer.Option(
    None,
    "--ep",
    parser=values.count(),
    help="Expert-parallel degree for MoE models: divides --tp, or a multiple of it (attention data-parallel "
    "over ep/tp ranks, e.g. --tp 1 --ep 8).",
)
ATTENTION_DP = typer.Option(
    None,
    "--attention-dp",
    parser=values.count(),
    help="Attention data-parallel ranks sharing one MoE group (default ep/tp where --ep exceeds --tp, else 1).",
)
MOE_ROUTING = typer.Option(
    None,
    "--moe-routing",
    parser=values.name,
    help="How tokens spread over an MoE layer's experts: balanced, uniform or power_law_<alpha> (default "
    "power_law_1.01: skewed, the busiest GPU sets the time).",
)
ACHIEVABLE = typer.Option(
    None,
    "--spec-speed",
    parser=values.choice("achievable", "peak"),
    help="Spec-sheet terms at the chip's achievable fractions of peak (its YAML achievable: block) or at its "
    "peaks (default: achievable for MoE and MLA models and with --engine, peak for the others).",
)
TOPOLOGY = typer.Option(
    None, "--topology", parser=values.topology_text, help="TPU slice axes, e.g. 4x4 (the tp group spans it)."
)
MEMORY_UTILIZATION = typer.Option(
    DEFAULT_MEMORY_UTILIZATION,
    "--memory-utilization",
    parser=values.fraction,
    help=f"Fraction of physical HBM the engine may use (default {DEFAULT_MEMORY_UTILIZATION}, vLLM's "
    "gpu_memory_utilization); 1 = the book's accounting (no activation reserve).",
)
MFU = typer.Option(
    DEFAULT_MFU,
    "--mfu",
    parser=values.fraction,
    help="Achieved fraction of peak FLOP/s in prefill (default 1: the roofline bound).",
)
INPUT_LEN = typer.Option(None, "--input-len", "-i", parser=values.count(), help="Prompt tokens of every request.")
OUTPUT_LEN = typer.Option(None, "--output-len", "-o", parser=values.count(), help="Generated tokens of every request.")
LENGTHS = typer.Option(None, "--lengths", help="Average over input:output:weight, e.g. 512:128:3,4096:512:1")
LENGTHS_CSV = typer.Option(
    None, "--lengths-csv", help="Average over a CSV with columns input_len, output_len and optionally count."
)
TTFT_SLO = typer.Option(
    None,
    "--ttft-slo",
    parser=values.seconds,
    metavar="TIME",
    help="Time-to-first-token target, e.g. 500ms or 0.5 (seconds).",
)
TPOT_SLO = typer.Option(
    None, "--tpot-slo", parser=values.seconds, metavar="TIME", help="Time-per-output-token target, e.g. 50ms."
)
#: Requests per second: ``--qps`` and ``--arrival-rate`` name the same thing in every command.
ARRIVAL_RATE = typer.Option(
    None, "--arrival-rate", "--qps", parser=values.rate, help="Requests/s arriving (alias --qps)."
)

ENGINE = typer.Option(
    None,
    "--engine",
    parser=values.name,
    help="Engine entry: built-in (vllm, sglang, trtllm; or with a version, vllm/0.15.1) or the profile's own "
    "from calibrate fit, which wins (default: the profile's only entry, else none).",
)


def refuse_without(needed: str, present: bool, given: dict[str, object], why: str = "") -> None:
    """Flags that mean something only with ``needed``: one given (not None) while ``present`` is false is
    refused, never silently ignored.  ``given`` maps each such flag to its value (None: not given)."""
    if present:
        return
    for flag, value in given.items():
        if value is not None:
            raise RooflineError(f"{flag} needs {needed}{why}; without it {flag} would be ignored")


def load_model_option(text: str, flag: str = "--model") -> ModelSpec:
    """load_model, its one-line error prefixed by the flag that named the model."""
    try:
        return load_model(text)
    except RooflineError as exc:
        raise type(exc)(f"{flag}: {exc}") from None


def load_hardware_option(
    text: str, flag: str = "--hardware", compute_dtype: str | None = None, command: str | None = None
) -> HardwareSpec:
    """load_hardware, its one-line error prefixed by the flag that named the chip; with ``compute_dtype``
    the chip must have FLOP/s for it (:func:`check_compute_dtype`): the --compute-dtype value, or with
    ``command`` the dtype that command (which has no --compute-dtype) computes its matmuls in."""
    try:
        hw = load_hardware(text)
    except RooflineError as exc:
        raise type(exc)(f"{flag}: {exc}") from None
    if compute_dtype is not None:
        check_compute_dtype(hw, compute_dtype, f"{flag} {text}", command)
    return hw


def check_compute_dtype(hw: HardwareSpec, compute_dtype: str, where: str, command: str | None = None) -> None:
    """The chip (named by ``where``: the flag and file) must have FLOP/s for every matmul dtype: the
    --compute-dtype value (each of its per-component dtypes), or the one ``command`` computes in (it has no
    --compute-dtype)."""
    for item in str(compute_dtype).split(","):
        dtype = item.partition("=")[2] if "=" in item else item
        try:
            hw.flops_for(dtype)
        except SpecError:
            have = ", ".join(hw.flops_per_s)
            if command is None:
                marked = dtype in (hw.unsupported_dtypes or ())
                why = (
                    "its matrix units do not take it: the hardware file's unsupported_dtypes lists it"
                    if marked
                    else f"its hardware file has no {dtype} FLOP/s; add them there if the chip has them"
                )
                raise SpecError(
                    f"--compute-dtype {compute_dtype}: {where} cannot run {dtype} matmuls ({why}); allowed: "
                    f"{', '.join(_runs(hw))}"
                ) from None
            raise SpecError(
                f"{where} has no {dtype} FLOP/s, the dtype `{command}` computes its matmuls in; "
                f"its flops_per_s has: {have} (add {dtype} to the hardware file)"
            ) from None


def check_count(option: str, value: int | None, low: int = 1) -> None:
    """A whole-number option within [low, 2**31-1], else one line naming the option."""
    if value is not None:
        try:
            values.count(low)(value)
        except ValueError as exc:
            raise RooflineError(f"{option}: {exc}") from None


def _dtype(option: str, value: str) -> str:
    try:
        return values.dtype(value)
    except ValueError as exc:
        raise RooflineError(f"{option}: {exc}") from None


def _weight_dtype(value: object) -> str:
    """A weight dtype, or 'checkpoint' (the model's own precision) as the default item."""
    return "checkpoint" if value == "checkpoint" else values.dtype(value)


def precision_from_options(
    weights: str, kv_dtype: str, compute_dtype: str, model: ModelSpec | None = None
) -> Precision:
    """Validate the dtype options into a Precision, naming the bad option.

    ``--weights`` and ``--compute-dtype`` are each a default dtype and/or component=dtype items,
    comma-separated (``bf16,experts=mxfp4``; ``experts=fp4`` keeps bf16 as the default); ``checkpoint``
    (weights only) starts from the model's own ``precision`` (needs ``model``).  With a model, a component
    it does not have (experts of a dense model, a tied LM head) is refused.
    """
    _dtype("--kv-dtype", kv_dtype)
    example = "bf16,experts=mxfp4"
    try:
        given, components = values.component_items(weights, "--weights", WEIGHT_COMPONENTS, _weight_dtype, example)
        compute, compute_components = values.component_items(
            compute_dtype, "--compute-dtype", WEIGHT_COMPONENTS, values.dtype, "fp8_block,experts=nvfp4"
        )
    except ValueError as exc:
        raise RooflineError(str(exc)) from None
    if "checkpoint" in components.values():
        raise RooflineError(
            "--weights: 'checkpoint' is a default, not a component's dtype (e.g. checkpoint,attention=fp8)"
        )
    if model is not None:
        for option, items in (("--weights", components), ("--compute-dtype", compute_components)):
            for name, dtype in items.items():
                check_component(option, f"{name}={dtype}", name, model)
    default = "bf16" if given in (None, "checkpoint") else given
    if given == "checkpoint":
        if model is None:
            raise RooflineError("--weights checkpoint: this command has no model to read a precision from")
        base = Precision.checkpoint(model)
        default, components = base.weights, {**dict(base.components), **components}
    compute = compute or "bf16"
    return Precision(
        weights=default,
        kv=kv_dtype,
        compute=compute,
        components=tuple(sorted((c, d) for c, d in components.items() if d != default)),
        compute_components=tuple(sorted((c, d) for c, d in compute_components.items() if d != compute)),
    )


def compute_from_option(compute_dtype: str, model: ModelSpec | None = None) -> tuple[str, tuple[tuple[str, str], ...]]:
    """--compute-dtype as (default matmul dtype, per-component overrides), the components checked
    against the model (:func:`precision_from_options`)."""
    precision = precision_from_options("bf16", "bf16", compute_dtype, model)
    return precision.compute, precision.compute_components


def check_component(option: str, item: str, name: str, model: ModelSpec) -> None:
    """A per-component item must name a component the model has (its parameters are not 0)."""
    if memory.weight_params_by_component(model).get(name, 0.0) > 0:
        return
    why = {
        "experts": "it has no routed experts",
        "lm_head": "it ties its LM head to the embeddings (give embeddings=)",
        "mlp": "it has no dense MLP or shared expert",
        "attention": "it has no attention weights",
    }.get(name, f"it has no {name} weights")
    raise RooflineError(f"{option}: {item!r} names no component of {model.name}: {why}")


def deployment_from_options(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: int,
    weights: str,
    kv_dtype: str,
    compute_dtype: str,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    topology: str | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    price: float | None = None,
    engine: str | None = None,
    attention_dp: int | None = None,
    moe_routing: str | None = None,
    achievable: bool | str | None = None,
) -> Deployment:
    """Parse the shared options once into a Deployment (one-line errors name the flag); ``achievable`` is
    --spec-speed's value (achievable / peak) or a bool."""
    check_count("--chips", chips)
    for option, value in (("--tp", tp), ("--pp", pp), ("--ep", ep), ("--attention-dp", attention_dp)):
        check_count(option, value)
    if topology is not None and not topology.strip():
        raise RooflineError("--topology is empty; give axes such as 4x4")
    prec = precision_from_options(weights, kv_dtype, compute_dtype, model)
    return deployment(
        model,
        hw,
        chips,
        prec,
        tp=tp,
        pp=pp,
        ep=ep,
        topology_text=topology,
        memory_utilization=memory_utilization,
        price_per_chip_hour=price,
        engine=engine,
        attention_dp=attention_dp,
        moe_routing=moe_routing,
        achievable=spec_speed(achievable),
    )


def spec_speed(value: bool | str | None) -> bool | None:
    """--spec-speed achievable / peak as the deployment's ``achievable`` (None: the model's default)."""
    return value if value is None or isinstance(value, bool) else value == "achievable"


def _runs(hw: HardwareSpec) -> list[str]:
    """The compute dtypes ``hw`` runs (those :meth:`HardwareSpec.flops_for` prices), for messages."""
    from roofline.core.units import DTYPE_BYTES

    out = []
    for dtype in DTYPE_BYTES:
        try:
            hw.flops_for(dtype)
        except SpecError:
            continue
        out.append(dtype)
    return out
