"""The fused MoE layer as one kernel family: routing features of the busiest GPU and its time forms.

One MoE layer on one GPU, as engines run it (TensorRT-LLM, vLLM fused MoE): the router over the
``m`` tokens entering the layer, the permute of the token-slots routed to this GPU's experts, the
grouped GEMMs gate/up and down over the active local experts, and the finalize (unpermute and
weighted sum).  Communication is not in it.  Shape arrays (see :mod:`roofline.kernels.schema`):
``m`` tokens (before the top-k fan-out), ``k`` hidden size, ``n`` expert intermediate size before the
``tp`` split, ``num_experts`` (before the ``ep`` split), ``top_k``, ``gated``, the routing kind, and
``width`` (bytes per expert weight, scales included).

Routing features on the busiest GPU (it sets the layer's time): ``slots`` (token-slots it computes)
and ``active`` (its local experts with at least one token):

* ``balanced``: aiconfigurator's even spread, exactly as measured: token i takes experts
  (i + j·s) mod E (T >= s) or (⌊i·s/T⌋ + j·s) mod E (T < s), s = ⌈E/k⌉, and the measured GPU is
  rank 0, holding experts [0, E/ep) (:func:`balanced_rank0`).  Where k·s > E the spread wraps, so rank 0
  carries more than the mean T·k/ep slots (E 512, k 22: 32 slots at T = 16, ep 16, not 22), and a few
  tokens occupy whole experts (one token on ep 16 touches 2 of its 22 experts there, not 1.4);
* ``uniform``: each token picks k experts uniformly at random; slots = T·k/ep and active = the
  expert-union formula (:func:`roofline.model.weight_bytes.expected_experts_touched`) over ep;
* ``power_law_<alpha>``: expert popularity ~ a bounded power law of exponent alpha on [1, 0.8·T]
  (aiconfigurator's synthetic skew, its serving default alpha 1.01), the busiest of the ep GPUs set
  by a small seeded Monte Carlo on a log grid of T, interpolated (deterministic, vectorised); slots and
  active experts never fall as T grows, and one GPU holding every expert never touches more than the
  expert-union formula's experts (a skew concentrates the tokens; see :func:`power_law_grid`).
"""

from __future__ import annotations

import functools

import numpy as np

from roofline.formulas.compute import roofline_time_s
from roofline.kernels.forms import Arrays, Hw, Params, soft_max
from roofline.kernels.lsq import Param
from roofline.kernels.registry import Achievable, KernelFamily, register
from roofline.kernels.schema import CalibrationError
from roofline.kernels.triton_moe import NO_TILES, row_tiles, tiled_rows, triton_tile_constants
from roofline.model.weight_bytes import expected_experts_touched

#: Routing kinds by code (the ``routing`` column: balanced, uniform, power_law_<alpha>).
BALANCED, UNIFORM, POWER_LAW = 0.0, 1.0, 2.0
#: The default skew of a deployment: power law, alpha 1.01 (aiconfigurator's serving default).
DEFAULT_ROUTING = "power_law_1.01"
#: Token counts of the power-law grid (1 .. 2^22, log-spaced) and Monte Carlo draws per point.
GRID_TOKENS = np.unique(np.round(np.geomspace(1.0, 2.0**22, 67)))
DRAWS = 32


def parse_routing(text: str) -> tuple[float, float]:
    """(code, alpha) of a routing kind: 'balanced', 'uniform' or 'power_law_<alpha>' (alpha > 1)."""
    text = str(text or "balanced").strip()
    if text in ("balanced", "uniform"):
        return (BALANCED if text == "balanced" else UNIFORM), 0.0
    if text.startswith("power_law_"):
        try:
            alpha = float(text.removeprefix("power_law_"))
        except ValueError:
            alpha = float("nan")
        if np.isfinite(alpha) and 1.0 < alpha <= 5.0:
            return POWER_LAW, alpha
    raise CalibrationError(
        f"routing {text!r} is unknown; allowed: balanced, uniform, power_law_<alpha> with 1 < alpha <= 5"
    )


def _pareto_quantile(u: np.ndarray, alpha: float, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Inverse CDF of the bounded power law p(x) ~ x^-alpha on [low, high]."""
    a = 1.0 - alpha
    return ((high**a - low**a) * u + low**a) ** (1.0 / a)


def routed_loads(popularity: np.ndarray, tokens: int, top_k: int, rng: np.random.Generator) -> np.ndarray:
    """Tokens per expert when ``tokens`` tokens each take ``top_k`` distinct experts at random by ``popularity``
    (last axis; successive sampling: the k smallest of Exp(1)/p, Efraimidis-Spirakis), summed over the tokens."""
    keys = rng.standard_exponential(popularity.shape[:-1] + (tokens, popularity.shape[-1])) / popularity[..., None, :]
    kth = np.partition(keys, top_k - 1, axis=-1)[..., top_k - 1 : top_k]
    return (keys <= kth).sum(-2).astype(float)


@functools.lru_cache(maxsize=256)
def power_law_grid(top_k: int, num_experts: int, ep: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(slots, active) of the busiest GPU at each :data:`GRID_TOKENS`, mean of :data:`DRAWS` seeded draws
    (a pure function of its arguments, the draws seeded by them: cached, the arrays read-only).

    Expert popularity ~ bounded power law on [1, 0.8·T].  T·k > E: loads = popularity scaled to T·k slots
    (aiconfigurator's collector), an expert active when its load rounds to at least one token.  T·k <= E:
    each token takes k distinct experts at random by popularity (:func:`routed_loads`), so a few tokens
    touch no more than the expert-union formula's experts (exactly them without skew), not T·k distinct ones.
    The busiest of the ep GPUs (E/ep experts each) is kept; running maxima over T (a larger batch never loads
    the busiest GPU less nor touches fewer experts) keep the time monotone across the two regimes, and no GPU
    touches more experts than the expert-union formula (uniform routing spreads the most).
    """
    local = num_experts // ep
    rng = np.random.default_rng(int(top_k) * 1_000_003 + int(num_experts) * 1009 + int(ep) * 7 + int(alpha * 1e4))
    tokens = GRID_TOKENS[:, None, None]
    high = np.maximum(0.8 * tokens, 1.0 + 1e-9)
    draws = _pareto_quantile(rng.random((1, DRAWS, num_experts)), alpha, np.ones_like(high), high)
    popularity = draws / draws.sum(-1, keepdims=True)
    loads = popularity * tokens * top_k
    for row, count in enumerate(GRID_TOKENS):
        if count * top_k <= num_experts:
            loads[row] = routed_loads(popularity[row], int(count), top_k, rng)
    ranks = loads[..., : local * ep].reshape(len(GRID_TOKENS), DRAWS, ep, local)
    busiest = np.take_along_axis(ranks, ranks.sum(-1).argmax(-1)[..., None, None], axis=2)[:, :, 0, :]
    slots = np.maximum.accumulate(busiest.sum(-1).mean(-1))
    active = np.maximum.accumulate(np.maximum((busiest >= 0.5).sum(-1).mean(-1), 1.0))
    active = np.minimum(active, expected_experts_touched(num_experts, top_k, GRID_TOKENS))  # random routing's most
    slots.flags.writeable = active.flags.writeable = False
    return slots, active


def _local_count(a: np.ndarray, experts: np.ndarray, local: np.ndarray) -> np.ndarray:
    """#{x in [0, a): x mod E < L}: ⌊a/E⌋·L + min(a mod E, L) (a >= 0, real a interpolates linearly)."""
    return np.floor(a / experts) * local + np.minimum(np.mod(a, experts), local)


@functools.lru_cache(maxsize=4096)
def _few_tokens_rank0(tokens: int, top_k: int, experts: int, ep: int) -> tuple[float, float]:
    """(slots, active) of rank 0 when T < s = ⌈E/k⌉: the collector's ids (⌊i·s/T⌋ + j·s) mod E, counted."""
    stride = -(-experts // top_k)
    ids = ((np.arange(tokens)[:, None] * stride) // tokens + np.arange(top_k)[None, :] * stride) % experts
    local = ids[ids < experts // ep]
    return float(local.size), float(np.unique(local).size)


def balanced_rank0(
    tokens: np.ndarray, top_k: np.ndarray, experts: np.ndarray, ep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(slots, active) of rank 0 under the collector's balanced spread (see the module doc), broadcast.

    T >= s: slots = Σ_j [C(j·s + T) - C(j·s)] with C(a) = #{x < a: x mod E < E/ep} (:func:`_local_count`),
    and the k intervals of length T >= s cover every expert, so active = E/ep.  T < s: the ids are
    enumerated (at most about E of them), at ⌊T⌋ and ⌈T⌉, linear in between.
    """
    tokens, top_k, experts, ep = np.broadcast_arrays(*(np.asarray(x, float) for x in (tokens, top_k, experts, ep)))
    local = np.floor(experts / ep)
    stride = np.ceil(experts / top_k)
    slots, active = np.zeros(tokens.shape), np.array(local, dtype=float)
    for j in range(int(top_k.max(initial=0))):
        start = j * stride
        part = _local_count(start + tokens, experts, local) - _local_count(start, experts, local)
        slots = slots + np.where(j < top_k, part, 0.0)
    few = tokens < stride
    if few.any():
        weight = tokens[few] - np.floor(tokens[few])
        mixed = 0.0
        for whole, share in ((np.floor(tokens[few]), 1.0 - weight), (np.ceil(tokens[few]), weight)):
            keys = np.stack([np.maximum(whole, 1.0), top_k[few], experts[few], ep[few]], -1)
            combos, back = np.unique(keys, axis=0, return_inverse=True)
            counts = np.array([_few_tokens_rank0(*(int(x) for x in c)) for c in combos], float)
            mixed = mixed + counts[back.reshape(-1)] * share[:, None]
        slots[few], active[few] = mixed[:, 0], mixed[:, 1]
    return slots, active


def on_power_law_grid(
    tokens: np.ndarray, top_k: int, experts: int, ep: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """(slots, active) of the busiest GPU at ``tokens``: :func:`power_law_grid` interpolated in log-log (monotone
    in T); past the grid's end the slots grow with T (the last point's share), the active experts stay."""
    grid_slots, grid_active = power_law_grid(top_k, experts, ep, float(alpha))
    where = np.log(np.maximum(tokens, 1.0))
    log_grid = np.log(GRID_TOKENS)
    beyond = np.maximum(1.0, np.asarray(tokens, float) / GRID_TOKENS[-1])
    slots = np.exp(np.interp(where, log_grid, np.log(np.maximum(grid_slots, 1e-9)))) * beyond
    return slots, np.minimum(np.exp(np.interp(where, log_grid, np.log(grid_active))), experts / ep)


def routing_features(
    code: np.ndarray, alpha: np.ndarray, tokens: np.ndarray, top_k: np.ndarray, experts: np.ndarray, ep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(slots, active) on the busiest GPU for broadcast routing codes and shapes (see the module doc)."""
    params = [np.asarray(x, float) for x in (code, alpha, top_k, experts, ep)]
    one = all(p.size == 1 or (p.size and p.min() == p.max()) for p in params)
    if one and params[0].reshape(-1)[0] == POWER_LAW:  # one layer shape (a step, a sweep's part): no masks
        a, k, e, g = (p.reshape(-1)[0] for p in params[1:])
        shape = np.broadcast_shapes(np.shape(tokens), *(p.shape for p in params))
        slots, active = on_power_law_grid(np.broadcast_to(np.asarray(tokens, float), shape), int(k), int(e), int(g), a)
        return slots, np.maximum(active, np.minimum(1.0, slots))
    code, alpha, tokens, top_k, experts, ep = np.broadcast_arrays(
        *(np.asarray(x, float) for x in (code, alpha, tokens, top_k, experts, ep))
    )
    slots = tokens * top_k / ep
    active = expected_experts_touched(experts, top_k, tokens) / ep
    even = code == BALANCED
    if even.any():
        slots, active = np.array(slots, dtype=float), np.array(active, dtype=float)
        slots[even], active[even] = balanced_rank0(tokens[even], top_k[even], experts[even], ep[even])
    skewed = code == POWER_LAW
    if skewed.any():
        slots, active = np.array(slots, dtype=float), np.array(active, dtype=float)
        combos = np.unique(np.stack([top_k[skewed], experts[skewed], ep[skewed], alpha[skewed]], -1), axis=0)
        for k, e, g, a in combos:
            rows = skewed & (top_k == k) & (experts == e) & (ep == g) & (alpha == a)
            slots[rows], active[rows] = on_power_law_grid(tokens[rows], int(k), int(e), int(g), a)
    return slots, np.maximum(active, np.minimum(1.0, slots))


def moe_features(s: Arrays) -> dict[str, np.ndarray]:
    """Shape arrays plus ``slots`` and ``active`` (computed once for a table or a call)."""
    out = dict(s)
    out["slots"], out["active"] = routing_features(
        s["routing"], s["routing_alpha"], s["m"], s["top_k"], s["num_experts"], s["ep"]
    )
    return out


def matrices(s: Arrays) -> np.ndarray:
    """Weight matrices per expert: 3 gated (gate, up, down), 2 not."""
    return np.where(np.asarray(s.get("gated", 1.0)) > 0, 3.0, 2.0)


def expert_bytes(s: Arrays) -> np.ndarray:
    """Weight bytes of one local expert: (3|2) · hidden · inter/tp · bytes per weight."""
    return matrices(s) * s["k"] * s["n"] / s["tp"] * s["width"]


def moe_flops(s: Arrays, slots: np.ndarray) -> np.ndarray:
    """2 · slots · (3|2) · hidden · inter/tp: the grouped GEMMs' FLOPs."""
    return 2.0 * slots * matrices(s) * s["k"] * s["n"] / s["tp"]


#: Output columns of one grouped-GEMM tile (a CTA's share of an expert's output; the GEMM family's tile_n).
TILE_N = 128.0
#: Rows (routed tokens) of one grouped-GEMM tile: an expert with more rows than this runs several row tiles.
TILE_M = 128.0


def weight_passes(s: Arrays, reread_share: float) -> np.ndarray:
    """1 + ρ·(⌈slots/(active·128)⌉ − 1): weight reads of an expert whose rows span several 128-row tiles, each
    further row tile re-reading a share ρ of its weights from HBM (ρ = 0: L2 serves them; 1: none kept)."""
    tiles = np.ceil(s["slots"] / (np.maximum(s["active"], 1e-9) * TILE_M))
    return 1.0 + reread_share * np.maximum(tiles - 1.0, 0.0)


def wave_fill(tiles: np.ndarray, num_sms: float, exponent: float) -> np.ndarray:
    """(tiles / (⌈tiles/SMs⌉·SMs))^β: the share of the SMs' slots the tiles' waves keep busy.

    Below one wave it is the fill effect (tiles/SMs); above, the last wave's idle SMs (160 tiles on 148 SMs
    take two waves, 54 % busy).  β < 1: a CTA alone streams faster than its share of the bandwidth.
    """
    return (tiles / (np.ceil(tiles / num_sms) * num_sms)) ** exponent


def grouped_gemms(s: Arrays) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(output columns, reduction rows K) of the two grouped GEMMs of one expert: gate/up ((2|1)·inter/tp over
    hidden) and down (hidden over inter/tp)."""
    inter = s["n"] / s["tp"]
    return ((matrices(s) - 1.0) * inter, s["k"]), (s["k"], inter)


def moe_gemm_times(s: Arrays, hw: Hw, p: Params) -> tuple[np.ndarray, np.ndarray]:
    """(t_weights, t_compute) summed over the two grouped GEMMs, each at its own shape.

    t_weights = Σ active·cols·K·w / (BW η_m wave_fill(active·⌈cols/128⌉))·(1 + k_half/K);
    t_compute = Σ 2·(rows + pad·active)·cols·K / (peak η_c fill_c)·(1 + k_half/K): each GEMM's tiles fill the
    SMs in waves, each pays its k-loop start-up over its own reduction length K, and each active expert
    pads about ``pad_tokens`` rows of its tiles.  rows = slots and fill_c = 1, or, for an entry with
    ``triton_block_m`` (Triton's grouped GEMM), rows padded to its row tiles and fill_c = wave_fill(row tiles
    ·⌈cols/128⌉) at the same β: one CTA computes one block_m x 128 output tile (:mod:`.triton_moe`).
    """
    stream = hw.bandwidth * p["memory_efficiency"]
    rule = p.get("triton_block_m", NO_TILES)
    padded = tiled_rows(s, rule) + p["pad_tokens"] * s["active"]
    passes = weight_passes(s, p.get("weight_reread_share", 0.0))
    t_weights = t_compute = 0.0
    for cols, rows in grouped_gemms(s):
        k_loop = 1.0 + p["k_half"] / rows
        fill = wave_fill(s["active"] * np.ceil(cols / TILE_N), p["num_sms"], p["fill_exponent"])
        busy = (
            1.0
            if rule == NO_TILES
            else wave_fill(row_tiles(s, rule) * np.ceil(cols / TILE_N), p["num_sms"], p["fill_exponent"])
        )
        t_weights = t_weights + s["active"] * cols * rows * s["width"] / (stream * fill) * k_loop * passes
        t_compute = t_compute + 2.0 * padded * cols * rows / (hw.peak_flops * p["compute_efficiency"] * busy) * k_loop
    return t_weights, t_compute


def unfused_slot_bytes(s: Arrays) -> np.ndarray:
    """m·k·(2·up + inter/tp + 2·hidden)·2: bf16 intermediates of every routed slot, local or not.

    An unfused MoE (vLLM's Triton path) writes the gate/up GEMM's output (up = (2|1)·inter/tp values), the
    activation reads it and writes inter/tp values, the down GEMM writes hidden values and the top-k sum reads
    them, for all m·k slots: slots routed to other GPUs' experts get zeros written, not skipped.  A fused
    kernel (TensorRT-LLM) keeps them on chip: its fit prices them at a bandwidth far above the HBM's.
    """
    up = (matrices(s) - 1.0) * s["n"] / s["tp"]
    return s["m"] * s["top_k"] * (2.0 * up + s["n"] / s["tp"] + 2.0 * s["k"]) * 2.0


#: Lanes of a warp: the router's top-k kernel scans a token's expert logits a warp at a time.
WARP = 32.0


def router_rounds(s: Arrays) -> np.ndarray:
    """k·⌈E/32⌉: the router's top-k as k rounds of a warp arg-max, each lane scanning ⌈E/32⌉ of the E logits
    (one warp per token: TensorRT-LLM's renormMoeRoutingKernel, vLLM's topk_softmax; a per-layer latency, the
    tokens run in parallel warps)."""
    return s["top_k"] * np.ceil(s["num_experts"] / WARP)


def moe_time(s: Arrays, hw: Hw, p: Params) -> np.ndarray:
    """overhead + rounds·t_round + m·router + slots·hidden·2/permute BW + unfused slot bytes/slot BW
    + soft_max(t_weights, t_compute) (:func:`router_rounds`, :func:`moe_gemm_times`, :func:`unfused_slot_bytes`)."""
    t_weights, t_compute = moe_gemm_times(s, hw, p)
    permute = s["slots"] * s["k"] * 2.0 / p["permute_bandwidth_bytes_per_s"]
    busy = soft_max(t_weights, t_compute, exponent=p["overlap_exponent"])
    unfused = unfused_slot_bytes(s) / p["slot_bandwidth_bytes_per_s"]
    select = router_rounds(s) * p["router_s_per_round"]
    return p["overhead_s"] + select + s["m"] * p["router_s_per_token"] + permute + unfused + busy


def moe_spec_time(s: Arrays, hw: Hw, achievable: Achievable) -> np.ndarray:
    """floor + max(active · expert bytes / BW, FLOPs / peak): the grouped GEMMs' roofline at the chip's
    achievable rates (``hw`` carries them: :func:`~roofline.kernels.registry.achievable_hw`), plus the fused
    layer's floor (router, permute and finalize launches)."""
    weights = s["active"] * expert_bytes(s)
    return achievable.floor("moe") + roofline_time_s(moe_flops(s, s["slots"]), weights, hw.peak_flops, hw.bandwidth)


PARAMS = (
    Param("memory_efficiency", 0.9, 0.05, 1.5),
    Param("compute_efficiency", 0.6, 0.02, 1.5),
    Param("overhead_s", 2.5e-5, 1e-7, 2e-4),
    Param("overlap_exponent", 2.0, 1.0, 20.0),
    Param("router_s_per_token", 5e-9, 1e-13, 1e-6),
    Param("permute_bandwidth_bytes_per_s", 5e11, 1e9, 1e15),
    Param("pad_tokens", 32.0, 0.1, 512.0),
    Param("fill_exponent", 0.3, 1e-3, 2.0),
    Param("k_half", 50.0, 0.1, 4096.0),
    Param("slot_bandwidth_bytes_per_s", 2e12, 1e10, 1e15),
    Param("router_s_per_round", 2e-8, 1e-9, 1e-7),
)
#: FlashInfer's CUTLASS fused MoE in vLLM (ModelOpt per-tensor fp8) re-reads its weights for each 128-row tile.
REREAD = (Param("weight_reread_share", 0.5, 1e-4, 1.0),)
FAMILY = register(
    KernelFamily(
        name="moe",
        time=moe_time,
        params=PARAMS,
        inputs=("m", "n", "k", "num_experts", "top_k", "ep", "tp"),
        spec_time=moe_spec_time,
        features=moe_features,
        work=lambda s: (moe_flops(s, s["slots"]), s["active"] * expert_bytes(s)),
        rate_dtype={"mxfp4": "bf16", "int4": "bf16", "int8": "bf16"},
        range_column="m",
        range_max=1024,
        holdout=("k", "n", "top_k", "num_experts", "gated"),
        fit_where=("routing", ("balanced",)),
        sweep=("k", "n", "top_k", "num_experts", "tp", "ep", "gated", "routing", "impl"),
        sweep_axis="m",
        sweep_limit=1.5,
        source="fused MoE layer (router, permute, grouped GEMMs, finalize) on the busiest GPU: k24, issue 24",
        kernel_params={"vllm_flashinfer": REREAD},
        entry_constants=lambda impl, dtype, hw: triton_tile_constants(impl, dtype, "fp4" in hw.flops_per_s),
    )
)
