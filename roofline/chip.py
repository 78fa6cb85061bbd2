"""Per-chip rates the estimators use, from a spec sheet or a calibrated profile.

The bridge between a :class:`~roofline.specs.HardwareSpec` and the pure estimators: it picks
the FLOP/s for the compute dtype and, when the spec carries a ``calibration`` block, scales
peak rates by the fitted efficiencies and adds the fitted per-kernel overheads.  Every result
says where its numbers came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from .specs import HardwareSpec

#: Weight-matmul kernels per transformer layer (QKV, O, gate+up, down) for overhead counting.
GEMMS_PER_LAYER = 4


@dataclass(frozen=True)
class ChipRates:
    """Effective per-chip rates: FLOP/s, HBM bytes/s for weights and for KV, kernel overheads."""

    flops_per_s: float
    weight_bandwidth_bytes_per_s: float
    kv_bandwidth_bytes_per_s: float
    gemm_overhead_s: float
    attention_overhead_s: float
    source: str

    def step_overhead_s(self, num_layers: int) -> float:
        """Fixed kernel time per decode step: L·(GEMMS_PER_LAYER·gemm + attention overheads)."""
        return num_layers * (GEMMS_PER_LAYER * self.gemm_overhead_s + self.attention_overhead_s)


def chip_rates(hw: HardwareSpec, compute_dtype: str = "bf16", calibrated: bool = True) -> ChipRates:
    """Spec-sheet peaks, or peaks × fitted efficiencies when ``hw`` is a calibrated profile."""
    peak = hw.flops_for(compute_dtype)
    bw = hw.hbm_bandwidth_bytes_per_s
    cal = hw.calibration if calibrated else None
    if cal is None or not cal.ops:
        return ChipRates(peak, bw, bw, 0.0, 0.0, source=f"spec sheet ({hw.source or hw.name})")
    from .calibration.lookup import entry_for  # keys gemm/bf16, ...; no entry for the dtype: spec

    gemm = entry_for(hw, "gemm", compute_dtype, fallback=True)
    attn = entry_for(hw, "attention_decode", compute_dtype, fallback=True)
    return ChipRates(
        flops_per_s=peak * (gemm.compute_efficiency if gemm else 1.0),
        weight_bandwidth_bytes_per_s=bw * (gemm.memory_efficiency if gemm else 1.0),
        kv_bandwidth_bytes_per_s=bw * (attn.memory_efficiency if attn else 1.0),
        gemm_overhead_s=gemm.overhead_s if gemm else 0.0,
        attention_overhead_s=attn.overhead_s if attn else 0.0,
        source=f"calibrated profile ({cal.source}; ops: {', '.join(sorted(cal.ops))})",
    )
