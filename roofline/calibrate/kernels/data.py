"""Measurements shipped inside the package, and the script that builds them.

``builtin:h100-sxm`` names both files in ``roofline/data/measurements/``: H100 SXM bf16
compute rows and the collectives (``h100-sxm-bf16.csv.gz``) and fp8 GEMM rows, per-tensor
and block-scaled (``h100-sxm-fp8.csv.gz``), converted from NVIDIA aiconfigurator's kernel
tables (Apache-2.0; see NOTICE.md there).  ``builtin:h100-sxm-bf16`` and
``builtin:h100-sxm-fp8`` name one file each; ``builtin:a100-80gb`` the A100 SXM tables (GEMM,
vLLM attention, NCCL and custom all-reduce); ``builtin:b200`` the B200 GEMM (bf16, fp8, fp8_block,
nvfp4), attention and collective tables; ``builtin:h100-sxm-fused`` and ``builtin:b200-fused`` the
fused-MoE, MLA and MLA-BMM tables of those chips (kept apart: their fits take minutes).  Rebuild with
``python -m roofline.calibrate.kernels.data ../shared/measurements``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from roofline.calibrate.kernels.importers import import_file
from roofline.kernels.schema import (
    COLLECTIVE_OPS,
    CalibrationError,
    Measurements,
    concat,
    read_measurements,
    write_measurements,
)

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "measurements"
BUILTIN = {
    "h100-sxm": ("h100-sxm-bf16.csv.gz", "h100-sxm-fp8.csv.gz"),
    "h100-sxm-bf16": ("h100-sxm-bf16.csv.gz",),
    "h100-sxm-fp8": ("h100-sxm-fp8.csv.gz",),
    "a100-80gb": ("a100-80gb.csv.gz",),
    "h100-sxm-fused": ("h100-sxm-fused.csv.gz",),
    "b200": ("b200.csv.gz",),
    "b200-fused": ("b200-fused.csv.gz",),
}
PREFIX = "builtin:"
#: Public tables (relative to the shared measurements folder) -> rows kept (0 = all).
H100_SOURCES = {
    "aiconfigurator/systems/data/h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.csv": 0,
    "aiconfigurator/systems/data/h100_sxm/attention/trtllm/1.3.0rc20/generation_attention_perf.csv": 0,
    "aiconfigurator/systems/data/h100_sxm/attention/trtllm/1.3.0rc20/context_attention_perf.csv": 6000,
    "aiconfigurator/systems/data/h100_sxm/comm/nccl/2.29.2/nccl_perf.csv": 0,
    "aiconfigurator/systems/data/h100_sxm/comm/trtllm/1.3.0rc20/custom_allreduce_perf.csv": 0,
}


def builtin_names() -> list[str]:
    """Names accepted as ``builtin:<name>`` measurement arguments."""
    return sorted(BUILTIN)


def load_measurements(ref: str | Path) -> Measurements:
    """A measurement file (schema or public format), or ``builtin:<name>``."""
    from roofline.calibrate.kernels.importers import import_file

    text = str(ref)
    if text.startswith(PREFIX):
        name = text.removeprefix(PREFIX)
        if name not in BUILTIN:
            raise CalibrationError(f"unknown built-in measurements {name!r}; allowed: {', '.join(BUILTIN)}")
        return concat([read_measurements(DATA_DIR / f) for f in BUILTIN[name]])
    return import_file(text)


def load_all(refs: list[str]) -> Measurements:
    """Concatenate :func:`load_measurements` over several references."""
    if not refs:
        raise CalibrationError("no measurement files given (e.g. builtin:h100-sxm)")
    return concat([load_measurements(r) for r in refs])


def build_h100(shared: Path, seed: int = 0, only: str = "") -> Measurements:
    """bf16 compute rows and all collective rows of the H100 tables (prefill subsampled).

    ``only``: keep just the tables whose path contains it (e.g. 'comm/' in tests).
    """
    rng = np.random.default_rng(seed)
    parts = []
    for rel, keep in H100_SOURCES.items():
        if only not in rel:
            continue
        table = import_file(shared / rel, "h100-sxm")
        compute = ~np.isin(table["op"], list(COLLECTIVE_OPS))
        table = table.take(~compute | np.isin(table["dtype"], ["bf16", "fp16"]))
        if keep and len(table) > keep:
            table = table.take(np.sort(rng.choice(len(table), keep, replace=False)))
        parts.append(table)
    return concat(parts)


#: A100 SXM tables (aiconfigurator @ the same commit): all rows, every dtype they hold.
A100_SOURCES = (
    "aiconfigurator/systems/data/a100_sxm/gemm/trtllm/1.0.0/gemm_perf.csv",
    "aiconfigurator/systems/data/a100_sxm/attention/vllm/0.14.0/context_attention_perf.csv",
    "aiconfigurator/systems/data/a100_sxm/attention/vllm/0.14.0/generation_attention_perf.csv",
    "aiconfigurator/systems/data/a100_sxm/comm/nccl/2.27.3/nccl_perf.csv",
    "aiconfigurator/systems/data/a100_sxm/comm/trtllm/1.0.0/custom_allreduce_perf.csv",
)


def build_a100(shared: Path) -> Measurements:
    """Every row of the A100 SXM tables (GEMM bf16/fp16/int8 SmoothQuant, vLLM attention, NCCL, custom)."""
    return concat([import_file(shared / rel, "a100-80gb") for rel in A100_SOURCES])


H100_GEMM = "aiconfigurator/systems/data/h100_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.csv"


def build_h100_fp8(shared: Path) -> Measurements:
    """All fp8 GEMM rows of the H100 table: per-tensor (impl '') and block-scaled (fp8_block)."""
    table = import_file(shared / H100_GEMM, "h100-sxm")
    return table.take(table["dtype"] == "fp8")


AIC = "aiconfigurator/systems/data"
#: Fused-MoE, MLA and MLA-BMM tables per chip (TensorRT-LLM 1.3.0rc20 kernels).
FUSED_SOURCES = {
    "h100-sxm": ("h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz", "h100_sxm/mla/trtllm/1.3.0rc20"),
    "b200": ("b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz", "b200_sxm/mla/trtllm/1.3.0rc20"),
}
#: Power-law MoE rows kept per table (seeded): the fit uses the evenly spread rows, these score the skew.
POWER_LAW_KEPT = 6000


def build_fused(shared: Path, chip: str, seed: int = 0) -> Measurements:
    """A chip's fused-MoE rows (every balanced one, a seeded sample of the power-law ones), MLA and MLA-BMM rows."""
    moe, mla = FUSED_SOURCES[chip]
    table = import_file(shared / AIC / moe, chip)
    skewed = np.flatnonzero(table["routing"] != "balanced")
    rng = np.random.default_rng(seed)
    kept = rng.choice(skewed, min(POWER_LAW_KEPT, len(skewed)), replace=False)
    parts = [table.take(np.sort(np.r_[np.flatnonzero(table["routing"] == "balanced"), kept]))]
    for name in ("generation_mla_perf.csv.gz", "context_mla_perf.csv.gz"):
        parts.append(import_file(shared / AIC / mla / name, chip))
    parts.append(import_file(shared / AIC / mla.replace("/mla/", "/mla_bmm/") / "mla_bmm_perf.csv.gz", chip))
    return concat(parts)


#: B200 tables (TensorRT-LLM 1.3.0rc20, NCCL 2.29.2) -> rows kept (0 = all).
B200_SOURCES = {
    "b200_sxm/gemm/trtllm/1.3.0rc20/gemm_perf.csv.gz": 0,
    "b200_sxm/attention/trtllm/1.3.0rc20/generation_attention_perf.csv.gz": 0,
    "b200_sxm/attention/trtllm/1.3.0rc20/context_attention_perf.csv.gz": 6000,
    "b200_sxm/comm/nccl/2.29.2/nccl_perf.csv": 0,
    "b200_sxm/comm/trtllm/1.3.0rc20/custom_allreduce_perf.csv": 0,
}


def build_b200(shared: Path, seed: int = 0) -> Measurements:
    """The B200 GEMM (bf16, fp8, fp8_block, nvfp4), bf16 attention (prefill sampled) and collective rows."""
    rng = np.random.default_rng(seed)
    parts = []
    for rel, keep in B200_SOURCES.items():
        table = import_file(shared / AIC / rel, "b200")
        if "attention" in rel:
            table = table.take(np.isin(table["dtype"], ["bf16", "fp16"]))
        if keep and len(table) > keep:
            table = table.take(np.sort(rng.choice(len(table), keep, replace=False)))
        parts.append(table)
    return concat(parts)


def main(argv: list[str]) -> int:
    shared = Path(argv[0] if argv else "../shared/measurements")
    if not shared.is_dir():
        print(f"{shared}: no such folder (the shared measurements)", file=sys.stderr)
        return 2
    for table, name in (
        (build_h100(shared), "h100-sxm-bf16"),
        (build_h100_fp8(shared), "h100-sxm-fp8"),
        (build_a100(shared), "a100-80gb"),
        (build_fused(shared, "h100-sxm"), "h100-sxm-fused"),
        (build_b200(shared), "b200"),
        (build_fused(shared, "b200"), "b200-fused"),
    ):
        out = write_measurements(table, DATA_DIR / BUILTIN[name][0])
        print(f"wrote {out} ({len(table)} rows, {out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
