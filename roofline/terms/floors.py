"""Kernel floors of a spec-sheet step: the least time of each kernel the roofline prices, as a named term.

A chip's ``achievable`` defaults (hardware YAML) give the smallest time of one GEMM and of one attention
kernel (launch, the smallest tiles); real kernels never run faster however little work they carry.  Where
a step runs at the achievable defaults (``Rates.achievable``: MoE and MLA models by default, any model on
request) the step's weight GEMMs and attention are one roofline, so their floors enter as one term:
layers x (GEMMs per layer x GEMM floor + attention kernels x attention floor) + the LM head's.
The fused-MoE operator and MLA attention carry their own floors in their own terms (their spec forms),
so routed experts and MLA attention are not counted here; calibrated kernels have theirs inside the fit.
"""

from __future__ import annotations

import numpy as np

from roofline.deploy import Deployment
from roofline.deploy.families import achievable
from roofline.model.memory import Number
from roofline.model.shape import layer_mix
from roofline.terms.work import Work


def gemms_per_layer(dep: Deployment) -> float:
    """Weight GEMMs of an average layer the roofline prices: attention/mixer in+out, dense MLP or shared
    expert gate/up+down (routed experts are the MoE operator's)."""
    m = dep.model
    mix = layer_mix(m)
    mixers = 2.0 * (mix.attention + mix.linear + mix.mamba)
    mlps = 2.0 * mix.dense + (2.0 * mix.moe if m.num_shared_experts else 0.0)
    return (mixers + mlps) / m.num_layers


def kernel_floors_s(dep: Deployment, stage: Work, layers: float) -> Number:
    """layers x (GEMMs per layer x GEMM floor + attention kernels x attention floor) + one LM-head GEMM floor,
    where the stage has work (0 without achievable floors or a step without tokens)."""
    a, m = achievable(dep.hw), dep.model
    gemm, attention = a.floor("gemm"), a.floor("attention")
    tokens = np.asarray(stage.tokens, dtype=float)
    if not (gemm or attention):
        return np.zeros_like(tokens)
    mla = m.kv_lora_rank is not None
    attn_layers = 0.0 if mla else layer_mix(m).attention / m.num_layers
    kernels = np.where(np.asarray(stage.decode_seqs) > 0, attn_layers, 0.0) + np.where(
        np.asarray(stage.prefill_tokens) > 0, attn_layers, 0.0
    )
    per_layer = gemms_per_layer(dep) * gemm + kernels * attention
    return np.where(tokens > 0, layers * per_layer + gemm * layers / m.num_layers, 0.0)
