"""Row tiles of OpenAI's Triton grouped GEMM (``triton_kernels`` ``matmul_ogs``), which runs mxfp4 experts.

Its heuristic (``matmul_ogs_details/opt_flags.py``, ``make_default_opt_flags_nvidia``) picks one row tile
``block_m`` for a call from the rows an expert gets on average, ``tokens_per_expt = max(1, m // n_experts)``
(m = the T·k gathered rows, n_experts = the GPU's local experts, as the tables' steps show at every ep):

* plain: ``block_m = max(16, min(next_pow2(tokens_per_expt), 128))``;
* ragged (an expert histogram is passed): up to 64 rows an expert ``max(16, min(next_pow2(2·tokens_per_expt),
  64))`` ("likely memory bound; set the block size higher to minimize loading weights more than once"),
  the plain rule above.

Every expert's rows are padded up to whole ``block_m`` tiles, and the tensor cores compute the padding too;
one CTA computes one ``block_m`` x 128 output tile (``compute_block_n``: 128 for Hopper's mx-scale layout), so
a call of few tiles leaves SMs idle (the compute's wave fill, :func:`row_tiles`).
Which entries run it (:func:`triton_tile_constants`): vLLM's gpt-oss mxfp4 experts (``moe_vllm/mxfp4``,
kernel ``oaitritonmxfp4experts``: the plain rule, whose steps its table shows at 32 → 40 rows an expert on
one GPU) and TensorRT-LLM's Triton MoE backend, which aiconfigurator's collector runs gpt-oss's mxfp4 with
on Hopper (``86 < sm < 100``: a chip without an fp4 tensor-core rate; Blackwell runs CUTLASS): the ragged
rule, whose steps its table shows at 8 → 10 rows an expert on one GPU and at 1 → 2 on eight.
"""

from __future__ import annotations

import numpy as np

from roofline.kernels.forms import Arrays

#: ``triton_block_m`` of a profile entry: 0 no Triton row tiles (the generic ``pad_tokens`` only), 1 the plain
#: heuristic, 2 the ragged one.
NO_TILES, PLAIN, RAGGED = 0.0, 1.0, 2.0
#: The heuristic's smallest and largest row tile, and its ragged branch's largest (rows).
BLOCK_M_MIN, BLOCK_M_MAX, RAGGED_MAX = 16.0, 128.0, 64.0


def next_pow2(x: np.ndarray) -> np.ndarray:
    """2^⌈log2 x⌉ (x >= 1): Triton's ``next_power_of_2``."""
    return 2.0 ** np.ceil(np.log2(np.maximum(x, 1.0)) - 1e-12)


def block_m(s: Arrays, rule: float) -> np.ndarray:
    """Row tile of the call: clip(next_pow2(t), 16, 128), t = max(1, ⌊T·k/(E/ep)⌋); ragged rule below 64 rows
    an expert clip(next_pow2(2t), 16, 64) (``triton_kernels`` opt_flags, module doc)."""
    per_expert = np.maximum(1.0, np.floor(s["m"] * s["top_k"] / np.floor(s["num_experts"] / s["ep"]) + 1e-9))
    plain = np.clip(next_pow2(per_expert), BLOCK_M_MIN, BLOCK_M_MAX)
    if rule != RAGGED:
        return plain
    return np.where(per_expert <= RAGGED_MAX, np.clip(next_pow2(2.0 * per_expert), BLOCK_M_MIN, RAGGED_MAX), plain)


def row_tiles(s: Arrays, rule: float) -> np.ndarray:
    """active·⌈(slots/active)/block_m⌉: the row tiles of the call's active experts (each expert's rows
    start a tile of their own)."""
    active = np.maximum(s["active"], 1e-9)
    return active * np.ceil(s["slots"] / (active * block_m(s, rule)) - 1e-9)


def tiled_rows(s: Arrays, rule: float) -> np.ndarray:
    """row tiles · block_m: the routed rows the tensor cores compute, each active expert's padded up to
    whole row tiles; ``slots`` itself where the entry runs no Triton tiles (rule 0)."""
    if rule == NO_TILES:
        return s["slots"]
    return row_tiles(s, rule) * block_m(s, rule)


def triton_tile_constants(impl: str, dtype: str, fp4_tensor_cores: bool) -> dict[str, float]:
    """``{"triton_block_m": rule}`` of an entry that runs OpenAI's Triton grouped GEMM (module doc), else {}."""
    if dtype != "mxfp4":
        return {}
    if impl == "vllm":
        return {"triton_block_m": PLAIN}
    return {"triton_block_m": RAGGED} if impl == "" and not fp4_tensor_cores else {}
