"""Chip rates for every term of a step, from the spec sheet or a calibrated profile, with sources.

The spec sheet gives peaks: dense FLOP/s for the compute dtype, HBM bytes/s and the fabric's
link numbers (the book's roofline).  A calibrated profile adds fitted kernel models for GEMMs
(per dtype), prefill and decode attention and each collective per device count; a term the
profile does not cover falls back to the spec sheet and says so in ``sources``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.core.checks import check_instance
from roofline.deploy import kernels
from roofline.specs import HardwareSpec

#: The step terms whose source a result names (a contract of ``step``/``request`` JSON).
TERM_SOURCES = ("gemm", "attention_decode", "attention_prefill", "collective", "overhead")


@dataclass(frozen=True)
class Rates:
    """Peak rates of one chip plus which terms a calibrated profile supplies, and their sources."""

    hw: HardwareSpec
    compute_dtype: str
    flops_per_s: float
    hbm_bandwidth_bytes_per_s: float
    calibrated: frozenset[str] = frozenset()
    sources: dict[str, str] = field(default_factory=dict)
    #: Where the rates are the chip's achievable speed (its YAML ``achievable:`` fractions), what they are;
    #: "" at the spec sheet's peaks.
    achievable: str = ""

    @property
    def source(self) -> str:
        """One line for the whole chip: spec sheet, or the calibrated profile and its ops."""
        if not self.calibrated:
            at = " at its achievable defaults" if self.achievable else ""
            return f"spec sheet{at} ({self.hw.source or self.hw.name})"
        cal = self.hw.calibration
        return f"calibrated profile ({cal.source if cal else ''}; terms: {', '.join(sorted(self.calibrated))})"

    def uses(self, term: str) -> bool:
        """True where the calibrated profile supplies ``term`` (else the spec-sheet roofline)."""
        return term in self.calibrated


def chip_rates(
    hw: HardwareSpec, compute_dtype: str = "bf16", calibrated: bool = True, kv_dtype: str | None = None
) -> Rates:
    """Spec-sheet peaks, and for a calibrated profile the terms its fitted kernels cover.

    Decode attention is looked up in the KV-cache dtype (default: the compute dtype), the rest in
    the compute dtype.
    """
    check_instance(hw, "hw", HardwareSpec, "from roofline.load_hardware('h100-sxm')")
    peak = hw.flops_for(compute_dtype)
    spec = f"spec sheet ({hw.source or hw.name})"
    sources = {term: spec for term in TERM_SOURCES}
    sources["overhead"] = "none (spec sheet: no kernel overheads)"
    covered: set[str] = set()
    if calibrated and hw.calibration is not None and hw.calibration.ops:
        for term in TERM_SOURCES[:4]:
            label = kernels.coverage(
                hw, term, (kv_dtype or compute_dtype) if term == "attention_decode" else compute_dtype
            )
            if label.startswith("calibrated"):
                covered.add(term)
            sources[term] = label
        if covered & {"gemm", "attention_decode", "attention_prefill"}:
            covered.add("overhead")
            sources["overhead"] = "calibrated profile (per-kernel overheads inside each fitted kernel)"
    return Rates(hw, compute_dtype, peak, hw.hbm_bandwidth_bytes_per_s, frozenset(covered), sources)


def at_achievable(rates: Rates) -> Rates:
    """The rates at what real kernels reach: peak FLOP/s x the compute dtype's fraction, HBM bytes/s x the HBM
    fraction of the chip's ``achievable:`` defaults (unchanged where it has none, or already applied)."""
    from dataclasses import replace

    from roofline.deploy.families import achievable

    a = achievable(rates.hw)
    if rates.achievable or rates.hw.achievable is None:
        return rates
    flops, hbm = a.flops(rates.compute_dtype), a.hbm_fraction
    note = (
        f"spec sheet at {rates.hw.name}'s achievable defaults: HBM x {hbm:.2f}, {rates.compute_dtype} FLOP/s x "
        f"{flops:.2f} ({a.source})"
    )
    sources = {
        term: f"{label} at its achievable defaults" if label.startswith("spec sheet") else label
        for term, label in rates.sources.items()
    }
    if a.floor_s and "overhead" not in rates.calibrated:
        sources["overhead"] = (
            f"kernel floors at {rates.hw.name}'s achievable defaults: GEMM {a.floor('gemm') * 1e6:.3g} µs, attention "
            f"{a.floor('attention') * 1e6:.3g} µs per kernel of the roofline (roofline.terms.floors)"
        )
    return replace(
        rates,
        flops_per_s=rates.flops_per_s * flops,
        hbm_bandwidth_bytes_per_s=rates.hbm_bandwidth_bytes_per_s * hbm,
        sources={**sources, "achievable": note},
        achievable=note,
    )


#: The name ``roofline.chip`` exported (kept for the Python API).
ChipRates = Rates
