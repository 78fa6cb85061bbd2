"""A serving engine's terms beyond the kernels, read from a profile's ``engine:`` section.

The work a GPU does outside the big kernels (norms, rotary, sampling, CPU scheduling, launch
gaps) differs by engine and version; ``roofline calibrate fit`` fits it from end-to-end rows
as a few physical quantities (see :class:`~roofline.specs.EngineCalibration`).  A profile may
hold several engines, keyed ``<engine>/<version>``; asking for one it lacks is an error that
lists what it has, and no engine means the kernel sum alone (said in ``sources``).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.errors import RooflineError
from roofline.specs import EngineCalibration, HardwareSpec

#: Fitted engine quantities, in the order the fit and the step model use them.
ENGINE_TERMS = (
    "step_overhead_s",
    "layer_overhead_s",
    "layer_bytes_per_token",
    "replicated_bytes_per_token",
    "sample_s_per_seq",
    "prefill_seq_overhead_s",
    "gemm_slowdown",
    "collective_hop_s",
    "gqa_kv_reread",
    "large_collective_s_per_byte",
)
#: The engine's floor under a prompt-only step (not affine in the step: the step is max(floor, its work)).
ENGINE_FLOOR = "prefill_floor_s"
#: Every fitted engine quantity: the affine terms, then the floor.
FITTED_ENGINE_TERMS = (*ENGINE_TERMS, ENGINE_FLOOR)


@dataclass(frozen=True)
class EngineTerms:
    """The engine quantities one deployment runs with, and where they came from."""

    step_overhead_s: float = 0.0
    layer_overhead_s: float = 0.0
    layer_bytes_per_token: float = 0.0
    replicated_bytes_per_token: float = 0.0
    sample_s_per_seq: float = 0.0
    prefill_seq_overhead_s: float = 0.0
    gemm_slowdown: float = 0.0
    collective_hop_s: float = 0.0
    gqa_kv_reread: float = 0.0
    large_collective_s_per_byte: float = 0.0
    prefill_floor_s: float = 0.0
    # The all-reduce message size (bytes) from which large_collective_s_per_byte applies (chosen by the fit).
    large_collective_bytes: float = 0.0
    comms_overlap: float | None = None
    fused_parallel_block: bool = False
    key: str = ""
    source: str = "none (kernel times only: no engine terms)"

    @property
    def active(self) -> bool:
        return any(getattr(self, name) for name in FITTED_ENGINE_TERMS)


NO_ENGINE = EngineTerms()


def from_calibration(key: str, cal: EngineCalibration, origin: str) -> EngineTerms:
    """EngineTerms of one profile entry, its source naming the entry and the rows it was fitted on."""
    held = cal.fit.get("holdout_mape")
    note = f", held-out MAPE {held:.1%}" if held is not None else ""
    return EngineTerms(
        **{name: float(getattr(cal, name)) for name in FITTED_ENGINE_TERMS},
        comms_overlap=float(cal.comms_overlap),
        fused_parallel_block=bool(cal.fused_parallel_block),
        large_collective_bytes=float(cal.large_collective_bytes),
        key=key,
        source=f"calibrated engine {key} ({origin}; {cal.rows} end-to-end rows{note})",
    )


def engine_terms(hw: HardwareSpec, engine: str | None) -> EngineTerms:
    """The profile's entry for ``engine`` ('trtllm/1.0', or a name with one version); none when not asked.

    With ``engine`` None the profile's single entry is used when it has exactly one.
    """
    entries = hw.engine or {}
    if engine is None:
        if len(entries) == 1:
            key, cal = next(iter(entries.items()))
            return from_calibration(key, cal, hw.name)
        if entries:
            return EngineTerms(
                source=f"none (profile has engines {', '.join(sorted(entries))}: choose one with --engine)"
            )
        return NO_ENGINE
    if engine in entries:
        return from_calibration(engine, entries[engine], hw.name)
    versions = sorted(k for k in entries if k.split("/")[0] == engine)
    if len(versions) == 1:
        return from_calibration(versions[0], entries[versions[0]], hw.name)
    have = ", ".join(sorted(entries)) or "none"
    raise RooflineError(f"engine (--engine) {engine!r}: {hw.name} has no such engine entry (has: {have})")
