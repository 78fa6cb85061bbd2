"""roofline: an analytical performance calculator for LLM inference.

The public API (``import roofline as rl``); everything returns plain floats, numpy arrays or
frozen dataclasses / pydantic models, never printed text::

    import roofline as rl

    model = rl.load_model("llama-3-70b")            # built-in name, YAML path or config.json
    chip = rl.load_hardware("tpu-v5e")              # built-in name, YAML or calibrated profile
    step = rl.decode_step(model, chip, chips=8, batch=[1, 16, 64], context=4096)
    step.step_time_s, step.tokens_per_s_per_chip   # numpy arrays, one value per batch
    req = rl.request(model, chip, input_len=2048, output_len=256, chips=8)
    sw = rl.decode_sweep(model, [chip], batch=[1, 8, 64, 256], chips=[8, 16])
    frontier = rl.frontier_of(sw.columns, "cost-latency")   # indices into sw.columns
    best = rl.plan_capacity(model, [chip], qps=5, lengths=rl.fixed_lengths(2048, 256), tpot_slo_s=0.05).best

Estimator modules (``rl.memory``, ``rl.compute``, ``rl.step``, ``rl.cost``, ``rl.collectives``,
``rl.sharding``, and the closed forms in ``rl.plan``) are pure functions of numbers in SI units
that broadcast over arrays.  Names
load lazily, so ``import roofline`` stays cheap (no plotly, no CLI).
"""

from __future__ import annotations

import importlib

from roofline import _legacy

_legacy.install()


def _version() -> str:
    """The installed distribution's version; a fallback when running from an uninstalled tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("roofline")
    except PackageNotFoundError:
        return "0.0.0+unknown"


#: Public name -> (module, attribute); attribute None means the module itself.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    # specs: loading and validating chips and models
    "load_model": ("specs", "load_model"),
    "load_hardware": ("specs", "load_hardware"),
    "model_from_dict": ("specs", "model_from_dict"),
    "hardware_from_dict": ("specs", "hardware_from_dict"),
    "model_names": ("specs", "model_names"),
    "hardware_names": ("specs", "hardware_names"),
    "ModelSpec": ("specs", "ModelSpec"),
    "HardwareSpec": ("specs", "HardwareSpec"),
    "model_dict_from_hf_config": ("specs.hf.config", "model_dict_from_hf_config"),
    # whole-configuration analyses
    "Precision": ("analyses.step", "Precision"),
    "deployment": ("deploy", "deployment"),
    "Deployment": ("deploy", "Deployment"),
    "deploy": ("deploy", None),
    "step_terms": ("terms", "step_terms"),
    "Work": ("terms", "Work"),
    "step_from": ("analyses.step", "step_from"),
    "request_from": ("analyses.request", "request_from"),
    "serve": ("analyses.serve", "serve"),
    "decode_step": ("analyses.step", "decode_step"),
    "request": ("analyses.request", "request"),
    "StepResult": ("analyses.step", "StepResult"),
    "RequestResult": ("analyses.request", "RequestResult"),
    "chip_rates": ("deploy", "chip_rates"),
    # sweeps and frontiers
    "decode_sweep": ("analyses.sweep.run", "decode_sweep"),
    "SweepResult": ("analyses.sweep.run", "SweepResult"),
    "SweepGrid": ("analyses.sweep.grid", "SweepGrid"),
    "sweep": ("analyses.sweep.run", "sweep"),
    "decode_frontier": ("analyses.sweep.frontier", "decode_frontier"),
    "frontier_of": ("analyses.pareto", "frontier_of"),
    "pareto_mask": ("analyses.pareto", "pareto_mask"),
    # capacity planning and request lengths
    "plan_capacity": ("analyses.plan.capacity", "plan"),
    "plan": ("analyses.plan.capacity", None),
    "PlanResult": ("analyses.plan.capacity", "PlanResult"),
    "PlanCandidate": ("analyses.plan.capacity", "PlanCandidate"),
    "PlanConfig": ("analyses.plan.capacity", "PlanConfig"),
    "plan_day": ("analyses.plan.day", "plan_day"),
    "plan_mix": ("analyses.plan.mix", "plan_mix"),
    "Spares": ("analyses.plan.spares", "Spares"),
    "read_load_profile": ("analyses.plan.load_profile", "read_load_profile"),
    "diurnal_profile": ("analyses.plan.load_profile", "diurnal_profile"),
    "LengthDistribution": ("analyses.lengths", "LengthDistribution"),
    "fixed_lengths": ("analyses.lengths", "fixed_lengths"),
    "from_points": ("analyses.lengths", "from_points"),
    "read_lengths_csv": ("analyses.lengths", "read_lengths_csv"),
    "averaged_request": ("analyses.lengths", "averaged_request"),
    # explanations and differences
    "explain_step": ("views.explain", "explain_step"),
    "explain_request": ("views.explain", "explain_request"),
    "diff_steps": ("analyses.diff", "diff_steps"),
    # errors
    "RooflineError": ("core.errors", "RooflineError"),
    "SpecError": ("core.errors", "SpecError"),
    "OptionError": ("core.errors", "OptionError"),
    "MeasurementError": ("core.errors", "MeasurementError"),
    # estimator and helper modules
    "memory": ("model.memory", None),
    "compute": ("formulas.compute", None),
    "step": ("formulas.step", None),
    "cost": ("formulas.cost", None),
    "collectives": ("formulas.collectives", None),
    "sharding": ("formulas.sharding", None),
    "units": ("core.units", None),
    "textbook": ("answer_key.book", None),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> object:
    """Import a public name on first use (PEP 562), keeping ``import roofline`` light."""
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    try:
        module_name, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'roofline' has no attribute {name!r}") from None
    module = importlib.import_module(f"{__name__}.{module_name}")
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
