"""Kernel families: one registry row per kernel time model, with its inputs, forms, parameters and source.

A family is what a calibrated profile fits as one entry per dtype (``moe/fp8_block``,
``mla_decode/bf16``, ``gemm/nvfp4``): a measured op of :mod:`roofline.kernels.schema` with

* ``name``: the op (the ``op`` column of measurements, the first part of a profile key);
* ``inputs``: the schema shape columns a row needs (positive numbers);
* ``time``: the fitted form, ``time(shape arrays, Hw, params) -> seconds`` (numpy, broadcasting);
* ``spec_time``: the spec-sheet form, ``spec_time(shape arrays, Hw, achievable) -> seconds``: the
  roofline at the chip's achievable rates (the caller passes ``achievable_hw(hw, achievable, dtype)``)
  plus the family's small-shape floor from :class:`Achievable`;
* ``params``: the fitted parameters (:class:`~roofline.kernels.lsq.Param`: SI units in the name,
  starting value, bounds) and ``constants`` (fixed numbers the form reads);
* ``kernel_params``: parameters only the entries of one kernel (``<op>_<impl>``, by impl) fit, for an
  effect only that kernel shows; the form reads them with their neutral value elsewhere;
* ``entry_constants``: ``(impl, dtype, chip spec) -> constants`` an entry's kernel fixes on that chip
  (stored with the entry like ``constants``: the Triton row-tile rule of the mxfp4 MoE entries), or None;
* ``constant_params``: parameters only entries whose entry constants set a named constant (non-zero) fit,
  by that constant's name (the trtllm-gen MLA decode rule's latent re-read share);
* ``features``: derived shape arrays computed once per table (the MoE routing features), or None;
* ``work``: ``(FLOPs, bytes)`` of the shape arrays (the constant-efficiency summary and per-op rows);
* ``rate_dtype``: the dtype whose peak FLOP/s a row's dtype runs at, where it is not the dtype itself
  (weight-only formats: ``mxfp4`` experts with bf16 activations run at the bf16 rate);
* ``range_column``/``range_max``: the shape-range split (fit small, test large);
* ``holdout``: the columns that make one "whole shape" for a held-out split (all rows of one model
  shape are held out together);
* ``fit_where``: a text column and the values the fit uses (the other rows are scored only);
* ``sweep``/``sweep_axis``/``sweep_limit``: the columns of one measured sweep, the column it varies
  and the median measured / fitted ratio above which a whole sweep is dropped (0: never), for the
  cleaning rules of :mod:`roofline.calibrate.kernels.sweeps` (outlier sweeps, isolated spikes);
* ``source``: where the form comes from (one line).

Recipe: add a kernel family (one or two files)
1. Write the two forms as pure numpy functions of the shape arrays (SI units, broadcasting), each with
   a docstring giving the formula: ``time(s, hw, p)`` and ``spec_time(s, hw, achievable)``.
2. ``register(KernelFamily(name=..., inputs=(...), time=..., spec_time=..., params=(Param(...), ...),
   source="..."))`` at import of your module; import it where it must be known (a plugin, a test).
3. Measurements with ``op = name`` are then read, fitted (``roofline calibrate fit``), stored as
   ``<name>/<dtype>`` profile entries and predicted by :func:`roofline.kernels.predict.op_time`.
``tests/test_kernel_registry.py`` adds a toy family from outside the package this way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from roofline.kernels.achievable import IDEAL, Achievable, achievable_hw
from roofline.kernels.forms import Arrays, Hw, Params
from roofline.kernels.lsq import Param
from roofline.kernels.schema import NUMBER_COLUMNS, OP_SHAPE, CalibrationError

if TYPE_CHECKING:
    from roofline.specs import HardwareSpec

__all__ = ["FAMILIES", "IDEAL", "Achievable", "KernelFamily", "achievable_hw", "family", "register", "unregister"]
TimeForm = Callable[[Arrays, Hw, Params], np.ndarray]
SpecForm = Callable[[Arrays, Hw, Achievable], np.ndarray]


@dataclass(frozen=True)
class KernelFamily:
    """One kernel time model: inputs, fitted and spec-sheet forms, parameters and source (see module doc)."""

    name: str
    time: TimeForm
    params: tuple[Param, ...]
    constants: Mapping[str, float] = field(default_factory=dict)
    range_column: str = ""
    range_max: float = 0.0
    inputs: tuple[str, ...] = ()
    spec_time: SpecForm | None = None
    features: Callable[[Arrays], Arrays] | None = None
    work: Callable[[Arrays], tuple[np.ndarray, np.ndarray]] | None = None
    rate_dtype: Mapping[str, str] = field(default_factory=dict)
    holdout: tuple[str, ...] = ()
    sweep: tuple[str, ...] = ()
    sweep_axis: str = ""
    sweep_limit: float = 0.0
    fit_where: tuple[str, tuple[str, ...]] | None = None
    source: str = ""
    kernel_params: Mapping[str, tuple[Param, ...]] = field(default_factory=dict)
    entry_constants: Callable[[str, str, HardwareSpec], Mapping[str, float]] | None = None
    constant_params: Mapping[str, tuple[Param, ...]] = field(default_factory=dict)

    @property
    def op(self) -> str:
        """The measured op this family fits (its name)."""
        return self.name

    def for_impl(self, impl: str) -> KernelFamily:
        """The family an ``<op>_<impl>`` entry fits: its params plus ``kernel_params[impl]`` (if any)."""
        extra = self.kernel_params.get(impl, ())
        return replace(self, params=self.params + extra) if extra else self

    def params_with(self, constants: Mapping[str, float]) -> tuple[Param, ...]:
        """The params an entry with ``constants`` fits: ``params`` plus ``constant_params`` of each set constant."""
        return self.params + tuple(q for name, qs in self.constant_params.items() if constants.get(name) for q in qs)

    def peak_dtype(self, dtype: str) -> str:
        """The dtype whose peak FLOP/s rows of ``dtype`` run at."""
        return self.rate_dtype.get(dtype, dtype)


#: Kernel families beyond the built-in GEMM, attention and collective models, by name.
FAMILIES: dict[str, KernelFamily] = {}


def register(family: KernelFamily) -> KernelFamily:
    """Add ``family`` to the registry (and its op to the measurement schema); returns it.

    Its inputs must be schema number columns; re-registering a name replaces the entry.
    """
    unknown = [c for c in family.inputs if c not in NUMBER_COLUMNS]
    if unknown or not family.inputs:
        raise CalibrationError(
            f"kernel family {family.name!r}: inputs must be measurement number columns "
            f"(got {unknown[0] if unknown else 'none'}; allowed: {', '.join(NUMBER_COLUMNS)})"
        )
    if family.spec_time is None:
        raise CalibrationError(f"kernel family {family.name!r}: no spec-sheet form (spec_time)")
    FAMILIES[family.name] = family
    OP_SHAPE[family.name] = family.inputs
    return family


def unregister(name: str) -> None:
    """Remove family ``name`` (and its op from the schema); nothing happens when it is not registered."""
    if FAMILIES.pop(name, None) is not None:
        OP_SHAPE.pop(name, None)


def family(name: str) -> KernelFamily | None:
    """The registered family of op ``name``, or None."""
    return FAMILIES.get(name)
