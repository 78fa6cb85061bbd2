"""What a report sweeps, and the hardware it names: built-in chips, hardware files or calibrated profiles.

Each ``--hardware`` reference is loaded once and keeps its own label: the built-in name, or the
file's name (``h100-cal.yaml``), so a chip and its calibrated profile are two traces, never merged
by the chip name inside the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roofline.core.errors import RooflineError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.specs import HardwareSpec, load_hardware, load_model

DEFAULT_MODELS = ("llama-2-13b", "llama-2-13b-gqa", "llama-3-70b")
DEFAULT_HARDWARE = ("tpu-v5e", "tpu-v6e", "h100-sxm", "h200")
DEFAULT_BATCH = tuple(int(b) for b in np.unique(np.round(np.geomspace(1, 4096, 160))))
DEFAULT_CHIPS = (1, 2, 4, 8, 16, 32, 64)
TRACE_KINDS = ("bound", "prediction")
#: The models of the book's LLaMA-2-13B tables (the book section appears when one is in the scenario).
BOOK_MODELS = ("llama-2-13b", "llama-2-13b-gqa")


@dataclass(frozen=True)
class HardwareRef:
    """One ``--hardware`` entry: its label on the page, what was typed, and the loaded spec."""

    label: str
    ref: str
    spec: HardwareSpec

    @property
    def calibrated(self) -> bool:
        """True for a calibrated profile (fitted kernels): its prediction uses them."""
        return self.spec.calibration is not None and bool(self.spec.calibration.ops)

    @property
    def spec_sheet(self) -> HardwareSpec:
        """The same chip without its fitted kernels: the spec sheet the bound is priced on."""
        return self.spec.model_copy(update={"calibration": None}) if self.calibrated else self.spec

    @property
    def domain(self) -> int | None:
        """Chips of one scale-up domain (NVLink, ICI pod); tp beyond it crosses the scale-out network."""
        return self.spec.max_ici_domain_chips

    def describe(self) -> str:
        """'calibrated profile of h100-sxm (file h100-cal.yaml)' or 'built-in spec sheet of tpu-v5e'."""
        what = "calibrated profile" if self.calibrated else "spec sheet"
        where = "built-in" if self.label == self.ref else f"file {self.ref}"
        return f"{what} of {self.spec.name} ({where})"


def _looks_like_file(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml", ".json")) or "/" in ref or Path(ref).is_file()


def hardware_refs(refs: Sequence[str | HardwareSpec]) -> list[HardwareRef]:
    """Load each reference once; label files by their file name (the path as typed when two share one)."""
    seen: dict[str, None] = {}
    loaded = []
    for ref in refs:
        key = ref.name if isinstance(ref, HardwareSpec) else str(ref)
        if key in seen:
            continue
        seen[key] = None
        loaded.append((key, load_hardware(ref)))
    names = [Path(key).name if _looks_like_file(key) else key for key, _ in loaded]
    labels = [key if names.count(name) > 1 else name for (key, _), name in zip(loaded, names, strict=True)]
    if not loaded:
        raise RooflineError("--hardware: give at least one chip")
    return [HardwareRef(label, key, spec) for label, (key, spec) in zip(labels, loaded, strict=True)]


@dataclass(frozen=True)
class Scenario:
    """What a report sweeps: models × chips × dtypes × slice sizes × batch × context, and prices.

    ``hardware`` holds references (built-in names or paths to hardware files and calibrated
    profiles), loaded as given.  ``traces`` chooses the bound, the prediction or both per chip;
    ``scale_out_tp`` lets prediction traces keep tp beyond the scale-up domain.
    """

    models: tuple[str, ...] = DEFAULT_MODELS
    hardware: tuple[str, ...] = DEFAULT_HARDWARE
    weights: tuple[str, ...] = ("bf16", "int8")
    kv_dtypes: tuple[str, ...] = ("bf16", "int8")
    context: tuple[int, ...] = (8192,)
    batch: tuple[int, ...] = DEFAULT_BATCH
    chips: tuple[int, ...] = DEFAULT_CHIPS
    tp: tuple[int, ...] | None = None
    compute_dtype: str = "bf16"
    prices: Mapping[str, float] = field(default_factory=dict)
    pp: tuple[int, ...] | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    traces: tuple[str, ...] = TRACE_KINDS
    scale_out_tp: bool = False
    #: Engine entry of the chips' calibrated profiles (every chip must hold it); None: a profile's only entry.
    engine: str | None = None

    def __post_init__(self) -> None:
        bad = [k for k in self.traces if k not in TRACE_KINDS]
        if bad or not self.traces:
            raise RooflineError(f"--traces: unknown {', '.join(bad) or '(none)'}; allowed: {', '.join(TRACE_KINDS)}")

    def hardware_refs(self) -> list[HardwareRef]:
        """The scenario's chips, each loaded once from its reference."""
        return hardware_refs(self.hardware)

    def book_models(self) -> list[str]:
        """The scenario's models that the book's LLaMA-2-13B tables cover (by model name)."""
        return [m for m in self.models if load_model(m).name in BOOK_MODELS]

    def describe(self) -> list[tuple[str, str]]:
        """(parameter, value) rows for the report's scenario table."""
        batch = f"{len(self.batch)} values from {min(self.batch)} to {max(self.batch)}"
        return [
            ("models", ", ".join(self.models)),
            ("chips", ", ".join(self.hardware)),
            ("chips per slice", ", ".join(map(str, self.chips))),
            ("model-parallel degree (tp)", "the whole slice" if self.tp is None else ", ".join(map(str, self.tp))),
            ("pipeline depth (pp)", "1" if self.pp is None else ", ".join(map(str, self.pp))),
            ("memory utilization", f"{self.memory_utilization:g} of physical HBM"),
            ("batch", batch),
            ("context (tokens)", ", ".join(map(str, self.context))),
            ("weight dtypes", ", ".join(self.weights)),
            ("KV-cache dtypes", ", ".join(self.kv_dtypes)),
            ("matmul dtype", self.compute_dtype),
            ("engine", self.engine or "each profile's only engine entry, else none"),
            ("prices ($/chip-hour)", ", ".join(f"{k}={v:g}" for k, v in self.prices.items()) or "hardware files"),
            ("traces per chip", ", ".join(self.traces)),
            ("tp across the scale-out network in predictions", "kept" if self.scale_out_tp else "left out"),
        ]
