"""Head tiles of TensorRT-LLM's trtllm-gen MLA decode kernels (Blackwell), from their published launch heuristic.

TensorRT-LLM's FMHA runner (``fmhaKernels.h``, ``selectMlaGenerationKernel``; FlashInfer mirrors it) picks one
of two kernels for a decode call with ``h`` query heads on the one latent KV head:

* the low-latency ``SwapsMmaAbForGeneration`` kernel, head tile 8 (h <= 8) or 16, when h <= 32, or when its
  CTAs fit one wave with at most 1,024 cached tokens each (``useSwapsMmaAbMlaGenKernel``: CTAs = batch·⌈h/16⌉
  <= SMs, splits = min(⌈kv/256⌉, max(1, ⌊SMs/CTAs⌋)), ⌈kv/splits⌉ <= 1,024);
* otherwise the high-throughput ``KeepsMmaAbForGeneration`` kernel, head tile 64 (a 2-CTA MMA pair at 128
  heads, each CTA half of the 512 value columns): the latent is read once for all heads.

The swapped kernel runs one CTA per head tile of a sequence, and each reads the sequence's whole latent, so 32
heads take two CTAs and two reads where 16 take one; 64 and 128 heads read once at scale. The B200 table
(``generation_mla_perf``, bf16, batch 1,024) shows it: 2 cached tokens take 50 / 87 / 59 / 90 µs at 16 / 32 /
64 / 128 heads (CTAs 1,024 / 2,048 / 1,024 / 2,048) and 4,096 take 815 / 1,148 / 861 / 863 µs (reads 1 / 2 /
1 / 1). Hopper's kernels (XQA / FlashMLA) are others: the rule is an entry constant of TensorRT-LLM entries
on a chip with fp4 tensor cores (:func:`trtllm_gen_constants`).
"""

from __future__ import annotations

import numpy as np

from roofline.kernels.forms import Arrays
from roofline.kernels.lsq import Param

#: ``trtllm_gen_mla`` of a profile entry: 0 the generic 64-head blocks, each reading the latent once; 1 the
#: trtllm-gen heuristic.
GENERIC, TRTLLM_GEN = 0.0, 1.0
#: The high-throughput kernel's head tile, the swapped kernel's two, its head limit and its KV step (tokens).
KEEPS_TILE, SWAPS_TILES, SWAPS_HEADS, STEP_KV = 64.0, (8.0, 16.0), 32.0, 256.0
#: The swapped kernel's largest KV share a CTA (tokens) for more than 32 heads.
SWAPS_MAX_KV = 1024.0
#: Rows of a full-rate Blackwell MMA (a one-CTA 64-row MMA runs at half its rate).
MMA_ROWS = 128.0
#: The share of a further latent read that costs a full HBM read (the rest hits L2: the head-tile CTAs of one
#: sequence run side by side); only entries under the rule fit it (``constant_params``).
REREAD = (Param("latent_reread_share", 0.5, 1e-4, 1.0),)


def uses_swapped_kernel(s: Arrays, num_sms: float) -> np.ndarray:
    """h <= 32, or CTAs = batch·⌈h/16⌉ <= SMs and ⌈kv/splits⌉ <= 1,024, splits = min(⌈kv/256⌉, max(1, ⌊SMs/CTAs⌋))."""
    ctas = s["batch"] * np.ceil(s["num_heads"] / SWAPS_TILES[1])
    splits = np.minimum(np.ceil(s["kv_len"] / STEP_KV), np.maximum(1.0, np.floor(num_sms / ctas)))
    fits = (ctas <= num_sms) & (np.ceil(s["kv_len"] / splits) <= SWAPS_MAX_KV)
    return (s["num_heads"] <= SWAPS_HEADS) | fits


def head_tile(s: Arrays, num_sms: float, rule: float) -> np.ndarray:
    """Query heads one CTA (pair) serves: 64; under the trtllm-gen rule 8 (h <= 8) or 16 in the swapped kernel."""
    if rule == GENERIC:
        return np.full_like(s["num_heads"], KEEPS_TILE, dtype=float)
    swapped_tile = np.where(s["num_heads"] <= SWAPS_TILES[0], SWAPS_TILES[0], SWAPS_TILES[1])
    return np.where(uses_swapped_kernel(s, num_sms), swapped_tile, KEEPS_TILE)


def latent_reads(s: Arrays, num_sms: float, rule: float) -> np.ndarray:
    """Reads of each sequence's latent: ⌈h/tile⌉ in the swapped kernel (one a CTA), else 1."""
    if rule == GENERIC:
        return np.ones_like(s["num_heads"], dtype=float)
    tiles = np.ceil(s["num_heads"] / head_tile(s, num_sms, rule))
    return np.where(uses_swapped_kernel(s, num_sms), tiles, 1.0)


def kv_step(rule: float, kv_chunk: float) -> float:
    """Tokens of one KV split at most: the fitted kv_chunk; the kernel's 256-token step under the rule."""
    return kv_chunk if rule == GENERIC else STEP_KV


def setup_ctas(s: Arrays, groups: np.ndarray, rule: float) -> np.ndarray:
    """What pays the per-sequence setup: batch; under the rule each CTA (pair) of the groups."""
    return s["batch"] if rule == GENERIC else groups


def mma_heads(s: Arrays, num_sms: float, rule: float) -> np.ndarray:
    """Query rows the tensor cores compute: h; under the trtllm-gen rule ⌈h/tile⌉·tile in the swapped kernel and
    ⌈h/128⌉·128 in the other (a one-CTA 64-row MMA at half the 128-row rate, the 2-CTA pair at 128 heads full)."""
    if rule == GENERIC:
        return s["num_heads"]
    tile = head_tile(s, num_sms, rule)
    swapped = uses_swapped_kernel(s, num_sms)
    return np.where(swapped, np.ceil(s["num_heads"] / tile) * tile, np.ceil(s["num_heads"] / MMA_ROWS) * MMA_ROWS)


def trtllm_gen_constants(impl: str, fp4_tensor_cores: bool) -> dict[str, float]:
    """``{"trtllm_gen_mla": 1}`` for a TensorRT-LLM MLA decode entry on Blackwell (fp4 tensor cores), else {}."""
    return {"trtllm_gen_mla": TRTLLM_GEN} if impl == "" and fp4_tensor_cores else {}
