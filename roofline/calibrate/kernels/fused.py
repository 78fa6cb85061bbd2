"""Importers of aiconfigurator's fused-MoE, MLA and MLA-BMM tables (columns checked against its collectors).

* ``moe_perf`` -> ``moe``: ``num_tokens`` (hidden states entering the layer on the measured GPU, before
  the top-k fan-out: every token of the EP group), ``hidden_size``, ``inter_size`` (before the
  ``moe_tp_size`` split), ``topk``, ``num_experts`` (before the ``moe_ep_size`` split), ``distribution``
  (``balanced``: an even spread; ``power_law_<alpha>``: the busiest EP rank is the one measured),
  ``latency`` ms of one layer without communication.  ``moe_dtype``: bfloat16, fp8 (per-tensor),
  fp8_block, w4a16_mxfp4 (mxfp4 experts, bf16 activations), nvfp4, int4_wo.  Skipped: the
  TensorRT-LLM min-latency kernel (an alternative mode of the nvfp4 path) and w4a8_mxfp4_mxfp8.
  ``kernel_source`` ``*_nongated`` marks experts with one up matrix (ReLU²).  vLLM tables are kernel
  families of their own, one per kernel its ``kernel_source`` names (:func:`vllm_impl`): its Triton
  experts (impl ``vllm``), FlashInfer's CUTLASS fused MoE (``vllm_flashinfer``: vLLM runs fp8_block
  through it where ep > 1, Triton at ep 1) and Marlin (``vllm_marlin``).  They carry no non-gated flag:
  their rows of the collector's non-gated models (:data:`NON_GATED_EXPERTS`) are marked by shape.
* ``context_mla_perf`` -> ``mla_prefill`` (decompressed heads: query-key 192, value 128);
  ``generation_mla_perf`` -> ``mla_decode`` (``step`` cached tokens, so kv_len = step + 1; query-key
  576 = kv_lora_rank 512 + rope 64 over one latent head, value 512).  ``num_heads`` is per GPU.  The
  row's dtype is the KV cache's.  The collector's shapes are DeepSeek-V3's (kv_lora_rank 512, rope 64,
  nope 128, v 128).
* ``mla_bmm_perf`` -> ``bmm``: ``mla_gen_pre`` [T,128]x[128,512] and ``mla_gen_post`` [T,512]x[512,128] per
  head, ``num_heads`` heads (per GPU); fp8 rows are block-scaled with their quantize pass.
"""

from __future__ import annotations

from collections.abc import Callable

from roofline.calibrate.kernels.cells import Row, RowError, _cell, _dtype, _ms, _num
from roofline.core.errors import shown

#: aiconfigurator ``moe_dtype`` -> the expert weight dtype of the row.
MOE_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "fp8": "fp8",
    "fp8_block": "fp8_block",
    "w4a16_mxfp4": "mxfp4",
    "nvfp4": "nvfp4",
    "int4_wo": "int4",
}
#: Kernels of the tables not imported: alternative modes, not what engines run by default.
SKIPPED_KERNELS = ("moe_torch_flow_min_latency",)
#: (hidden, inter, top-k, experts) of the collector's non-gated MoE models (its ``NON_GATED_MOE_MODELS``:
#: Nemotron-3, ReLU² experts with one up matrix): Nano (2688, 1856, 6, 128) and the latent experts of Super
#: and Ultra (1024|4096 hidden, 2688; 2048|8192, 5120; top 22 of 512).  The TensorRT-LLM tables mark exactly
#: these ``*_nongated``; vLLM's name only the kernel, and its non-gated path (``is_act_and_mul`` False) runs
#: only unquantized and ModelOpt fp8/nvfp4 methods: the tables have no fp8_block rows of these shapes.
NON_GATED_EXPERTS = frozenset(
    {(2688.0, 1856.0, 6.0, 128.0), (1024.0, 2688.0, 22.0, 512.0), (4096.0, 2688.0, 22.0, 512.0)}
    | {(2048.0, 5120.0, 22.0, 512.0), (8192.0, 5120.0, 22.0, 512.0)}
)
#: DeepSeek-V3 MLA dims the collectors use: kv_lora_rank, rope, nope, v.
KV_LORA_RANK, ROPE_DIM, NOPE_DIM, V_DIM = 512.0, 64.0, 128.0, 128.0
BMM_SHAPES = {"mla_gen_pre": (NOPE_DIM, KV_LORA_RANK), "mla_gen_post": (KV_LORA_RANK, V_DIM)}


def vllm_impl(kernel: str) -> str:
    """The kernel family of a vLLM fused-MoE row by its ``kernel_source``: FlashInfer's CUTLASS fused MoE
    (TensorRT-LLM's kernels: intermediates stay on chip) ``vllm_flashinfer``, Marlin ``vllm_marlin``, else
    vLLM's Triton experts ``vllm`` (unfused: every routed slot's intermediates go through HBM)."""
    if "_flashinfer_cutlass_" in kernel:
        return "vllm_flashinfer"
    return "vllm_marlin" if "_marlin_" in kernel else "vllm"


def _moe(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    kind, kernel = _cell(row, "moe_dtype"), row.get("kernel_source") or ""
    if kind not in MOE_DTYPES:
        if kind == "w4a8_mxfp4_mxfp8":
            return []
        raise RowError(f"unknown moe_dtype {shown(kind)}; allowed: {', '.join(MOE_DTYPES)}, w4a8_mxfp4_mxfp8")
    if kernel in SKIPPED_KERNELS:
        return []
    shape = {
        "k": _num(row, "hidden_size", positive=True),
        "n": _num(row, "inter_size", positive=True),
        "top_k": _num(row, "topk", positive=True),
        "num_experts": _num(row, "num_experts", positive=True),
    }
    vllm = kernel.startswith("vllm")
    non_gated = kernel.endswith("nongated") or (vllm and tuple(shape.values()) in NON_GATED_EXPERTS)
    return [
        {
            "op": "moe",
            "dtype": MOE_DTYPES[kind],
            "m": _num(row, "num_tokens", positive=True),
            **shape,
            "tp": _num(row, "moe_tp_size", positive=True),
            "ep": _num(row, "moe_ep_size", positive=True),
            "gated": 0.0 if non_gated else 1.0,
            "routing": _cell(row, "distribution"),
            "time_s": _ms(row, "latency"),
            "impl": vllm_impl(kernel) if vllm else "",
        }
    ]


def _mla(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    decode = ctx["format"] == "aiconfigurator-generation-mla"
    isl = _num(row, "isl", positive=True)
    common = {
        "dtype": _dtype(_cell(row, "kv_cache_dtype"), ctx["origin"]),
        "batch": _num(row, "batch_size", positive=True),
        "num_heads": _num(row, "num_heads", positive=True),
        "time_s": _ms(row, "latency"),
    }
    if decode:
        kv = _num(row, "step") + 1.0
        return [
            {
                **common,
                "op": "mla_decode",
                "q_len": 1.0,
                "kv_len": kv,
                "num_kv_heads": 1.0,
                "head_dim": KV_LORA_RANK + ROPE_DIM,
                "v_head_dim": KV_LORA_RANK,
            }
        ]
    return [
        {
            **common,
            "op": "mla_prefill",
            "q_len": isl,
            "kv_len": isl,
            "num_kv_heads": common["num_heads"],
            "head_dim": NOPE_DIM + ROPE_DIM,
            "v_head_dim": V_DIM,
        }
    ]


def _bmm(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    name = _cell(row, "op_name")
    if name not in BMM_SHAPES:
        raise RowError(f"unknown op_name {shown(name)}; allowed: {', '.join(BMM_SHAPES)}")
    k, n = BMM_SHAPES[name]
    dtype = _dtype(_cell(row, "bmm_dtype"), ctx["origin"])
    return [
        {
            "op": "bmm",
            "dtype": "fp8_block" if dtype == "fp8" else dtype,
            "batch": _num(row, "num_heads", positive=True),
            "m": _num(row, "num_tokens", positive=True),
            "k": k,
            "n": n,
            "time_s": _ms(row, "latency"),
            "impl": name.removeprefix("mla_gen_"),
        }
    ]


FORMATS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, str], dict[str, str]], list[Row]]]] = {
    "aiconfigurator-moe": (("moe_dtype", "num_tokens", "topk", "num_experts", "moe_ep_size", "distribution"), _moe),
    "aiconfigurator-generation-mla": (("mla_dtype", "kv_cache_dtype", "isl", "step", "tp_size"), _mla),
    "aiconfigurator-context-mla": (("mla_dtype", "kv_cache_dtype", "isl", "step", "tp_size"), _mla),
    "aiconfigurator-mla-bmm": (("bmm_dtype", "num_tokens", "num_heads", "op_name"), _bmm),
}
FILE_NAMES = {"aiconfigurator-generation-mla": "generation_mla", "aiconfigurator-context-mla": "context_mla"}
