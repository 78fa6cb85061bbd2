"""The answer key: every worked number of the book's inference chapter, recomputed.

Each case recomputes a number stated in "All About Transformer Inference" (How to Scale
Your Model, part 7) with this package's estimators and the numbers the book states (e.g.
TPU v5e at 8.2e11 B/s, 16e9 B of HBM in problem 2).  ``expected`` is the book's value;
where the book's arithmetic or units are off, ``exact`` holds the right value and ``note``
says why, and the check is made against ``exact``.  Other modules add cases with
:func:`register`.
"""

from __future__ import annotations

from dataclasses import replace

from roofline.analyses.step import StepResult, decode_step
from roofline.answer_key import multichip
from roofline.answer_key.cases import (  # noqa: F401  (re-exported: the public answer-key module)
    _EXTRA,
    BATCHES,
    H100_BF16,
    H100_HBM_BW,
    V5E_BF16,
    V5E_HBM_BW,
    V5E_HOP_S,
    V5E_ICI_BW,
    V5E_INT8,
    Case,
    Row,
    check,
    register,
)
from roofline.formulas import collectives, compute, sharding, step
from roofline.model import memory
from roofline.specs import HardwareSpec, ModelSpec, load_hardware, load_model


def all_cases() -> list[Case]:
    """The core chapter's cases followed by every registered provider's."""
    cases = [*core_cases(), *multichip.multichip_cases()]
    for provider in _EXTRA:
        cases.extend(provider())
    return cases


def run() -> list[Row]:
    """Check every case."""
    return [check(c) for c in all_cases()]


# --------------------------------------------------------------------------- the cases


def _critical_batch_cases() -> list[Case]:
    cb = compute.critical_batch_size
    return [
        Case(
            "crit-batch-v5e-bf16",
            "critical batch, TPU v5e, bf16 weights and FLOPs",
            240,
            lambda: cb(V5E_BF16, V5E_HBM_BW, 2.0),
            "tokens",
        ),
        Case(
            "crit-batch-v5e-int8w",
            "critical batch, v5e, int8 weights, bf16 FLOPs",
            120,
            lambda: cb(V5E_BF16, V5E_HBM_BW, 1.0),
            "tokens",
        ),
        Case(
            "crit-batch-v5e-int8",
            "critical batch, v5e, int8 weights and int8 FLOPs",
            240,
            lambda: cb(V5E_INT8, V5E_HBM_BW, 1.0),
            "tokens",
            note="from 2·B·D·F/C = D·F·bytes/W; the book's β·α_hbm form "
            "(β = 1, α = 3.94e14/8.2e11) would give 480 and contradicts its own 240",
        ),
        Case(
            "crit-batch-h100-bf16",
            "critical batch, H100 SXM, bf16",
            280,
            lambda: cb(H100_BF16, H100_HBM_BW, 2.0),
            "tokens",
            exact=295.2,
            note="the book says 'about 280'; 989 TFLOP/s / 3.35 TB/s gives 295",
        ),
        Case(
            "crit-batch-moe",
            "critical batch, MoE E=16 k=2 on v5e (problem 5.2)",
            1920,
            lambda: cb(V5E_BF16, V5E_HBM_BW, 2.0, 16, 2),
            "tokens",
        ),
    ]


def _pop_quiz_cases() -> list[Case]:
    kv_seq = 100e3 * 8192  # 100 kB per token at 8192 tokens = 819 MB
    params = 30e9  # int8: one byte each
    chips = 16
    return [
        Case(
            "pop-quiz-30b-b4",
            "30B int8 on v5e 4x4, batch 4, 8192 ctx: min step",
            2.5e-3,
            lambda: step.min_decode_step_time_s(4 * kv_seq, params, chips * V5E_HBM_BW),
            "s",
            tolerance=0.03,
            note="the book rounds 2.54 ms to 2.5 ms",
        ),
        Case(
            "pop-quiz-30b-b256",
            "same model, batch 256: general step time",
            21e-3,
            lambda: step.decode_step_time_s(256, kv_seq, params, params, chips * V5E_BF16, chips * V5E_HBM_BW),
            "s",
            tolerance=0.03,
            note="15.98 ms of KV + 4.87 ms of bf16 FLOPs; the book rounds",
        ),
    ]


def _llama_13b_cases() -> list[Case]:
    m = load_model("llama-2-13b")
    counts = memory.param_counts(m)
    return [
        Case("llama2-13b-ffw-params", "LLaMA-2-13B MLP parameters", 8.5e9, lambda: counts.mlp, "params"),
        Case(
            "llama2-13b-vocab-params",
            "LLaMA-2-13B embedding parameters",
            0.3e9,
            lambda: counts.embedding,
            "params",
            tolerance=0.10,
            note="2·32000·5120 = 0.328e9; the book rounds to one digit",
        ),
        Case("llama2-13b-attn-params", "LLaMA-2-13B attention parameters", 4.2e9, lambda: counts.attention, "params"),
        Case("llama2-13b-total-params", "LLaMA-2-13B total parameters", 13e9, lambda: counts.total, "params"),
        Case(
            "llama2-13b-kv-8192",
            "LLaMA-2-13B bf16 KV cache of one 8192-token sequence",
            6.7e9,
            lambda: memory.kv_cache_bytes_per_sequence(m, 8192, 2.0),
            "bytes",
            note="decimal GB (the book's table labels them GiB)",
        ),
    ]


def book_v5e() -> HardwareSpec:
    """TPU v5e with the book's chip numbers (bf16 and int8 FLOP/s, HBM bandwidth), as its tables take them."""
    hw = load_hardware("tpu-v5e")
    return replace(
        hw, flops_per_s={**hw.flops_per_s, "bf16": V5E_BF16, "int8": V5E_INT8}, hbm_bandwidth_bytes_per_s=V5E_HBM_BW
    )


def with_parameters_of(model: ModelSpec, reference: ModelSpec) -> ModelSpec:
    """``model`` carrying ``reference``'s parameter count (the difference as extra parameters per layer):
    the book's GQA table keeps LLaMA-2-13B's weights and shrinks only the KV cache."""
    missing = memory.param_counts(reference).total - memory.param_counts(model).total
    per_layer = int(round(missing / model.num_layers))
    return replace(model, extra_params_per_layer=model.extra_params_per_layer + per_layer)


def _table_cases(table: str, kv_model: ModelSpec, label: str, values: dict[str, tuple]) -> list[Case]:
    """One of the book's LLaMA-2-13B tables on 8x v5e: KV, total memory, step time, tokens/s, each read
    from :func:`roofline.analyses.step.decode_step` (the ``step`` command's terms) with all of HBM usable."""
    model = with_parameters_of(kv_model, load_model("llama-2-13b"))  # the book keeps LLaMA-2-13B's weights
    hw = book_v5e()
    note = "decimal GB though the book's table says GiB; the book rounds weights to 26 GB and KV to 6.7 GB per sequence"

    def step(b: int) -> StepResult:
        return decode_step(model, hw, chips=8, batch=b, context=8192, memory_utilization=1.0)

    cases: list[Case] = []
    for i, b in enumerate(BATCHES):
        kv_gb, total_gb, ms, tps = (values[k][i] for k in ("kv", "total", "ms", "tps"))
        cases += [
            Case(
                f"{table}-kv-b{b}",
                f"{label}: KV cache at batch {b}",
                kv_gb * 1e9,
                lambda b=b: float(step(b).kv_bytes),
                "bytes",
                note=note,
            ),
            Case(
                f"{table}-total-b{b}",
                f"{label}: total memory at batch {b}",
                total_gb * 1e9,
                lambda b=b: float(step(b).total_bytes),
                "bytes",
                note=note,
            ),
            Case(
                f"{table}-step-b{b}",
                f"{label}: step time at batch {b}",
                ms * 1e-3,
                lambda b=b: float(step(b).step_time_s),
                "s",
            ),
            Case(
                f"{table}-tps-b{b}",
                f"{label}: throughput at batch {b}",
                tps,
                lambda b=b: float(step(b).tokens_per_s),
                "tokens/s",
            ),
        ]
    return cases


LLAMA_TABLE_1 = {
    "kv": (6.7, 53.6, 107.2, 214.4, 428.8, 1608),
    "total": (32.7, 79.6, 133.2, 240.4, 454.8, 1634),
    "ms": (4.98, 12.13, 20.30, 36.65, 69.33, 249.09),
    "tps": (200.61, 659.30, 787.99, 873.21, 923.13, 963.53),
}
LLAMA_TABLE_2 = {
    "kv": (1.34, 10.72, 21.44, 42.88, 85.76, 321.6),
    "total": (27.34, 36.72, 47.44, 68.88, 111.76, 347.6),
    "ms": (4.17, 5.60, 7.23, 10.50, 17.04, 52.99),
    "tps": (239.94, 1429.19, 2212.48, 3047.62, 3756.62, 4529.34),
}


def _problem_cases() -> list[Case]:
    m = load_model("book-exercise")
    moe = load_model("book-exercise-moe")
    counts = memory.param_counts(m)
    moe_counts = memory.param_counts(moe)
    kv_tok = float(memory.kv_cache_bytes_per_token(m, 1.0))
    hbm_16 = 16 * 16e9  # the book: 16 chips of 16 GB
    seq = 128e3  # the book's "128k" tokens
    kv_seq_k1 = kv_tok / m.num_kv_heads
    return [
        Case(
            "p1-params",
            "problem 1: parameters of the exercise model (tied embeddings)",
            18.4e9,
            lambda: counts.total,
            "params",
        ),
        Case(
            "p1-kv-per-token",
            "problem 1: int8 KV cache per token",
            262e3,
            lambda: kv_tok,
            "bytes",
            note="2·L·K·H = 262,144 B",
        ),
        Case(
            "p2-max-batch",
            "problem 2: max batch, v5e 4x4, int8, 128k context",
            7,
            lambda: memory.max_batch_size(hbm_16, counts.total, kv_tok * seq),
            "sequences",
            tolerance=0.0,
            note="16 GB per chip and 128e3 tokens as the book takes them",
        ),
        Case(
            "p2-max-batch-k1",
            "problem 2: max batch with one KV head",
            56,
            lambda: memory.max_batch_size(hbm_16, counts.total, kv_seq_k1 * seq),
            "sequences",
            tolerance=0.0,
        ),
        Case(
            "p3-weight-load",
            "problem 3: time to load int8 weights on v5e 4x4",
            1.4e-3,
            lambda: step.weight_load_time_s(counts.total, 16 * V5E_HBM_BW),
            "s",
            tolerance=0.02,
        ),
        Case(
            "p5-total-params",
            "problem 5.1: MoE (E=16, k=2) total parameters",
            212e9,
            lambda: moe_counts.total,
            "params",
        ),
        Case("p5-active-params", "problem 5.1: MoE active parameters", 31.2e9, lambda: moe_counts.active, "params"),
        Case(
            "p5-crit-batch",
            "problem 5.2: MoE critical batch on v5e",
            1920,
            lambda: compute.critical_batch_size(V5E_BF16, V5E_HBM_BW, 2.0, moe.num_experts, moe.experts_per_token),
            "tokens",
        ),
        Case(
            "p5-kv-per-token",
            "problem 5.3: MoE int8 KV per token (unchanged)",
            262e3,
            lambda: memory.kv_cache_bytes_per_token(moe, 1.0),
            "bytes",
        ),
        Case(
            "p5-flops-per-token",
            "problem 5.4: forward FLOPs per token, 2·active params",
            2 * 31.2e9,
            lambda: 2.0 * moe_counts.active,
            "FLOPs",
        ),
    ]


def _sharding_cases() -> list[Case]:
    return [
        Case(
            "mp-limit-generation",
            "model-parallel limit in generation, F/(B·β), F=16384, B=32, β=8",
            64,
            lambda: sharding.max_model_parallelism_decode(16384, 32, 8),
            "chips",
            tolerance=0.0,
        ),
        Case(
            "ici-latency-bound-8way",
            "largest latency-bound buffer, 8-way on v5e ICI",
            360e3,
            lambda: collectives.latency_bound_bytes(8, V5E_ICI_BW, V5E_HOP_S),
            "bytes",
        ),
        Case(
            "ici-latency-bound-bs16",
            "int8 activations B=16, D=8192 (131 kB) are latency-bound",
            1,
            lambda: float(collectives.is_latency_bound(16 * 8192, 8, V5E_ICI_BW, V5E_HOP_S)),
            "bool",
            tolerance=0.0,
        ),
    ]


def core_cases() -> list[Case]:
    """The cases of the chapter's core sections and problems 1, 2, 3 and 5."""
    return [
        *_critical_batch_cases(),
        *_pop_quiz_cases(),
        *_llama_13b_cases(),
        *_table_cases("llama2-13b-table1", load_model("llama-2-13b"), "LLaMA-2-13B on 8x v5e", LLAMA_TABLE_1),
        *_table_cases(
            "llama2-13b-table2", load_model("llama-2-13b-gqa"), "LLaMA-2-13B, KV 5x smaller, on 8x v5e", LLAMA_TABLE_2
        ),
        *_problem_cases(),
        *_sharding_cases(),
    ]
