"""Explanations of an MoE or MLA model's operator terms: the fused-MoE operator, the GEMMs around it, MLA
attention with its absorb BMMs, the MoE layers' token exchange, and the achievable defaults they run at."""

from __future__ import annotations

from roofline.analyses.step import StepResult
from roofline.deploy import Deployment
from roofline.model import memory
from roofline.terms import StepTerms, operators
from roofline.views.explain.records import S_ATTENTION, S_LINEAR, S_SHARD, Explanation, Term, _f

#: Where the fused-MoE operator and MLA's absorbed decode come from (what engines run).
S_MOE = "fused MoE layer (router, permute, grouped GEMMs, finalize) as TensorRT-LLM, vLLM and SGLang run it"
S_MLA = "DeepSeek-V2/V3 technical reports: MLA, the absorbed decode over the latent cache"


def operator_explanations(dep: Deployment, res: StepResult, t: StepTerms) -> list[Explanation]:
    """The operator terms of one decode step (none for a model without MoE or MLA layers)."""
    out: list[Explanation] = []
    m, par, src = dep.model, dep.par, res.sources
    if operators.has_moe_operator(dep):
        out += [
            Explanation(
                "fused-MoE operator (routed experts)",
                _f(res.moe_time_s),
                "s",
                "Σ over MoE layers of one fused-MoE layer on the busiest GPU: the stage's T tokens × top-k over ep "
                "chips, each expert split moe_tp ways, spread by the routing skew",
                (
                    Term("MoE layers", memory.moe_layer_count(m) / par.pp, "layers"),
                    Term("T", _f(t.tokens) * par.attention_dp if par.attention_dp > 1 else _f(t.tokens), "tokens"),
                    Term("top-k", m.experts_per_token, ""),
                    Term("ep", par.ep, ""),
                    Term("moe_tp", _f(dep.stage_chips) / par.ep, ""),
                ),
                S_MOE,
                note=f"{src.get('moe', '')} (routing {dep.routing})",
            ),
            Explanation(
                "dense GEMMs (outside the MoE operator)",
                _f(res.dense_gemm_time_s),
                "s",
                "attention projections, dense and shared-expert MLPs, LM head: max(FLOPs / C, bytes / W) on the "
                "spec sheet (each rank's copy under attention DP), fitted kernels when calibrated",
                (Term("GEMMs", _f(res.gemm_time_s), "s"), Term("MoE operator", _f(res.moe_time_s), "s")),
                S_LINEAR,
                note=src.get("gemm", ""),
            ),
        ]
        if par.ep > 1:
            out.append(
                Explanation(
                    "MoE token exchange",
                    _f(res.moe_comms_time_s),
                    "s",
                    "per MoE layer: dispatch + combine all-to-all of T·k·D activations over ep chips (experts split "
                    "moe_tp ways under attention DP: all-gather + reduce-scatter of T·D instead)",
                    (Term("ep", par.ep, ""), Term("attention dp", par.attention_dp, "")),
                    S_SHARD,
                    note=src.get("comms", ""),
                )
            )
    if operators.has_mla(dep):
        out.append(
            Explanation(
                "MLA attention",
                _f(res.mla_time_s),
                "s",
                "absorbed decode: one read of (kv_lora_rank + rope) per cached token for all of a chip's heads, "
                "+ the absorb BMMs; the latent sits whole on each tp chip (kv_copies)",
                (
                    Term("heads/chip", m.num_heads / par.tp if par.explicit else m.num_heads, ""),
                    Term("kv_copies", dep.kv_copies, ""),
                    Term("absorb BMMs", _f(res.mla_bmm_time_s), "s"),
                ),
                S_MLA,
                note=src.get("mla", ""),
            )
        )
    if _f(res.small_kernels_time_s) > 0:
        per_moe, per_dense = operators.small_kernels_per_layer(dep)
        out.append(
            Explanation(
                "small kernels (norms, RoPE, activation, router top-k)",
                _f(res.small_kernels_time_s),
                "s",
                "Σ over layers of each layer's small kernels × max(kernel floor, 2·T·D·bytes / W_hbm)",
                (Term("per MoE layer", per_moe, "kernels"), Term("per dense layer", per_dense, "kernels")),
                S_LINEAR,
                note="the chip's smallest-kernel time from its achievable defaults (hardware YAML floor_s)",
            )
        )
    if "achievable" in src:
        out.append(
            Explanation(
                "achievable speed",
                dep.rates.hbm_bandwidth_bytes_per_s,
                "B/s",
                "the spec sheet at what real kernels reach: peak HBM bytes/s and FLOP/s x the chip's measured "
                "fractions (hardware YAML achievable:), kernel floors in the operator terms",
                (Term("peak HBM", dep.hw.hbm_bandwidth_bytes_per_s, "B/s"), Term("FLOP/s", dep.rates.flops_per_s, "")),
                S_ATTENTION,
                note=src["achievable"],
            )
        )
    return out
