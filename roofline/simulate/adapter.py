"""TEMPORARY step-cost adapter built from the existing estimators (roofline.analysis / roofline.step).

To be replaced by the one step model (issue 9): only :func:`cost_for` is imported elsewhere.
A step's terms come from the same pieces ``decode_step`` and ``request`` use:

    t = KV read / W_kv + max(FLOPs / C, (weights read + KV written) / W) + overhead (if any decode)
    FLOPs = 2·P_active·(decode seqs + prefill tokens) + attention FLOPs per pair · prefill pairs

so a lone prefill equals ``request``'s TTFT and a lone decode equals ``decode_step``'s step time
(``request --batch 1`` at vanishing load).  tp > 1 takes max(local, activation collectives) of
the step's tokens, as ``decode_step`` does.  Simplifications: decode attention FLOPs are left out
(as in ``decode_step``), KV read/written is per token with no sliding-window cap, and activation
memory is not subtracted from the KV capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .. import compute, memory, serving
from ..analysis import Precision, tensor_parallel_comms
from ..chip import chip_rates
from ..errors import RooflineError
from ..specs import HardwareSpec, ModelSpec
from ..units import dtype_bytes

#: Token counts whose tp collectives are tabulated once (a step never holds more than its token budget).
COMMS_TABLE_TOKENS = 1 << 16
DEFAULT_PRECISION = Precision()


@dataclass(frozen=True)
class AnalysisStepCost:
    """A :class:`~roofline.simulate.cost.StepCost` from the analysis terms (see the module docstring)."""

    model: ModelSpec
    hw: HardwareSpec
    tp: int
    precision: Precision
    kv_capacity_tokens: int
    flops_per_s: float
    weight_bandwidth_bytes_per_s: float
    kv_bandwidth_bytes_per_s: float
    overhead_s: float
    active_params: float
    total_params: float
    kv_bytes_per_token: float
    attention_flops_per_pair: float
    comms_s: np.ndarray  # tp collectives by tokens in the step (zeros for tp = 1)
    source: str

    def step_time_s(self, decode_seqs: ArrayLike, decode_kv_tokens: ArrayLike, prefill_tokens: ArrayLike,
                    prefill_attention_pairs: ArrayLike) -> np.ndarray:
        """KV/W_kv + max(FLOPs/C, (weights + KV written)/W) + overhead; max with tp comms."""
        n = np.asarray(decode_seqs, dtype=float)
        tokens = n + np.asarray(prefill_tokens, dtype=float)
        flops = 2.0 * self.active_params * tokens + self.attention_flops_per_pair * np.asarray(
            prefill_attention_pairs, dtype=float)
        weights = memory.weight_bytes_read_per_step(self.model, self.total_params, self.precision.weight_bytes,
                                                    np.maximum(tokens, 1.0))
        written = self.kv_bytes_per_token * np.asarray(prefill_tokens, dtype=float)
        local = (self.kv_bytes_per_token * np.asarray(decode_kv_tokens, dtype=float) / self.kv_bandwidth_bytes_per_s
                 + np.maximum(flops / self.flops_per_s, (weights + written) / self.weight_bandwidth_bytes_per_s)
                 + np.where(n > 0, self.overhead_s, 0.0))
        if self.tp == 1:
            return local
        index = np.minimum(tokens, COMMS_TABLE_TOKENS).astype(np.int64)
        return np.maximum(local, self.comms_s[index])

    def kv_transfer_time_s(self, tokens: float) -> float:
        """tokens·KV bytes / (tp·DCN bandwidth) + DCN latency (serve --mode disaggregated's transfer)."""
        if self.hw.dcn_bandwidth_bytes_per_s is None:
            raise RooflineError(f"{self.hw.name}: disaggregated mode needs dcn_bandwidth_bytes_per_s in the "
                                "hardware file")
        return float(serving.kv_transfer_time_s(tokens * self.kv_bytes_per_token,
                                                self.tp * self.hw.dcn_bandwidth_bytes_per_s,
                                                self.hw.dcn_latency_s or 0.0))


def cost_for(model: ModelSpec, hw: HardwareSpec, tp: int = 1, precision: Precision = DEFAULT_PRECISION,
             memory_utilization: float = 0.9) -> AnalysisStepCost:
    """TEMPORARY: the step cost of one tp-way replica (weights sharded over tp chips) from spec or profile."""
    if tp < 1:
        raise RooflineError(f"--tp must be at least 1 (got {tp})")
    if not 0 < memory_utilization <= 1:
        raise RooflineError(f"--memory-utilization must be in (0, 1] (got {memory_utilization})")
    rates = chip_rates(hw, precision.compute)
    counts = memory.param_counts(model)
    weights = float(memory.param_bytes(counts.total, precision.weight_bytes))
    kv_token = float(memory.kv_cache_bytes_per_token(model, precision.kv_bytes))
    usable = memory_utilization * tp * hw.hbm_bytes - weights
    capacity = int(usable // kv_token) if usable > 0 else 0
    if capacity < 1:
        raise RooflineError(f"{model.name} weights ({weights / 1e9:.1f} GB) leave no KV cache in "
                            f"{memory_utilization:g} of {tp}x {hw.name} HBM; raise --tp")
    comms = np.zeros(1)
    if tp > 1:
        tokens = np.arange(COMMS_TABLE_TOKENS + 1, dtype=float)
        _, comms, _, _ = tensor_parallel_comms(model, hw, tp, np.maximum(tokens, 1.0), tp, None,
                                               dtype_bytes(precision.compute))
        comms = np.broadcast_to(np.asarray(comms, dtype=float), tokens.shape).copy()
    return AnalysisStepCost(
        model=model, hw=hw, tp=tp, precision=precision, kv_capacity_tokens=capacity,
        flops_per_s=tp * rates.flops_per_s, weight_bandwidth_bytes_per_s=tp * rates.weight_bandwidth_bytes_per_s,
        kv_bandwidth_bytes_per_s=tp * rates.kv_bandwidth_bytes_per_s,
        overhead_s=rates.step_overhead_s(model.num_layers), active_params=counts.active, total_params=counts.total,
        kv_bytes_per_token=kv_token, attention_flops_per_pair=float(compute.prefill_attention_flops(model, 1.0)),
        comms_s=comms,
        source=f"TEMPORARY adapter over roofline.analysis terms; {rates.source}; tp {tp}, "
               f"{memory_utilization:g} of HBM",
    )
