"""Cells of public measurement tables: numbers, milliseconds and dtype names, each checked, one-line errors."""

from __future__ import annotations

import math

from roofline.core.errors import shown
from roofline.core.units import MS

DTYPES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "half": "fp16",
    "float16": "fp16",
    "fp16": "fp16",
    "fp8": "fp8",
    "fp8_block": "fp8",
    "int8": "int8",
    "float": "fp32",
    "float32": "fp32",
    "sq": "int8",
    "nvfp4": "nvfp4",
}
Row = dict[str, object]


class RowError(ValueError):
    """A bad cell of a public table; the importer adds the file and the row."""


def _cell(row: dict[str, str], key: str) -> str:
    value = row.get(key)
    if value is None:
        raise RowError(f"missing column {shown(key)}")
    return value


def _num(row: dict[str, str], key: str, positive: bool = False) -> float:
    """A finite number >= 0 (> 0 with ``positive``: a divisor such as n_head or a TP degree)."""
    text = _cell(row, key)
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"column {shown(key)} is not a number (got {shown(text)})") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        sign = "> 0" if positive else ">= 0"
        raise RowError(f"column {shown(key)} must be a finite number {sign} (got {shown(text)})")
    return value


def _ms(row: dict[str, str], key: str) -> float:
    """A latency column in milliseconds, in seconds."""
    return _num(row, key) * MS


def _dtype(value: str, origin: str) -> str:
    try:
        return DTYPES[value]
    except KeyError:
        raise RowError(f"unknown dtype {shown(value)}; allowed: {', '.join(DTYPES)}") from None
