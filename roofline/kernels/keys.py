"""Profile keys: ``<op_key>/<dtype>``, one calibrated entry per op class, kernel family and dtype.

``op_key`` is the schema op, or ``<op>_<impl>`` for a kernel family fitted on its own
(``gemm_fp8_block``, ``allreduce_custom``).  Examples: ``gemm/bf16``, ``gemm/fp8``,
``gemm_fp8_block/fp8``, ``attention_decode/bf16``, ``allreduce/fp16``.  A key without ``/``
(profiles written before per-dtype calibration) reads as bf16.
"""

from __future__ import annotations

import functools
from collections.abc import Container

from roofline.core.units import DTYPE_BYTES
from roofline.kernels.schema import COLLECTIVE_OPS

#: Kernel families fitted as their own op class: ``<op>_<impl>`` (e.g. allreduce_custom).
SEPARATE_IMPLS = ("custom", "fp8_block", "sq", "vllm", "vllm_flashinfer", "vllm_marlin")
#: The dtype a legacy key (no ``/``) was fitted on: the old ``calibrate fit`` default.
LEGACY_DTYPE = "bf16"


def op_key(op: str, impl: str = "") -> str:
    """The op class of a row: the op, or ``<op>_<impl>`` for a separately fitted kernel family."""
    return f"{op}_{impl}" if impl in SEPARATE_IMPLS else op


@functools.lru_cache(maxsize=1024)
def base_op(key: str) -> str:
    """The schema op of a key (``allreduce_custom/bf16`` -> ``allreduce``); pure, so memoised."""
    key = key.split("/")[0]
    for impl in SEPARATE_IMPLS:
        key = key.removesuffix(f"_{impl}")
    return key


def entry_key(op_class: str, dtype: str) -> str:
    """``<op_key>/<dtype>``: the profile key of one calibrated entry."""
    return f"{op_class}/{dtype}"


def split_key(key: str) -> tuple[str, str]:
    """(op_key, dtype) of a profile key; a legacy key without ``/`` is bf16."""
    op_class, _, dtype = key.partition("/")
    return op_class, dtype or LEGACY_DTYPE


def resolve(keys: Container[str], op_class: str, dtype: str) -> str | None:
    """The profile key that covers ``op_class`` in ``dtype``, or None.

    Exact ``op/dtype`` first, then a legacy ``op`` key for bf16.  Collectives only move
    bytes, so an entry of another dtype of the same element width covers them too
    (``allreduce/fp16`` for bf16: NCCL's tables time fp16, engines reduce bf16).
    """
    exact = entry_key(op_class, dtype)
    if exact in keys:
        return exact
    if dtype == LEGACY_DTYPE and op_class in keys:
        return op_class
    if base_op(op_class) in COLLECTIVE_OPS and dtype in DTYPE_BYTES:
        for other, width in DTYPE_BYTES.items():
            if other != dtype and width == DTYPE_BYTES[dtype]:
                if entry_key(op_class, other) in keys:
                    return entry_key(op_class, other)
                if other == LEGACY_DTYPE and op_class in keys:
                    return op_class
    return None
