"""Units: the one place where byte, time and rate scales and dtype widths are defined.

Everything inside roofline is SI (bytes, seconds, FLOP/s, bytes/s).  Decimal and binary
prefixes have distinct names (``GB`` vs ``GiB``) and strings carrying a unit are parsed
only by :func:`parse_quantity`, which refuses an ambiguous or unknown suffix.
"""

from __future__ import annotations

import math
import re
from typing import Literal, get_args

from roofline.core.errors import OptionError, shown

# Decimal (SI) byte multiples.
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
# Binary (IEC) byte multiples.
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40

# Time.
MS = 1e-3
US = 1e-6
NS = 1e-9
HOUR_S = 3600.0

#: Bytes per element of each supported numeric type.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
    "int4": 0.5,
    # Block-scaled formats, scales included (OCP MX spec v1.0; NVIDIA Blackwell NVFP4; DeepSeek-V3 fp8):
    "nvfp4": (16 * 4 + 8) / 16 / 8,  # 16-element blocks of e2m1 + one fp8 (e4m3) scale: 4.5 bits
    "mxfp4": (32 * 4 + 8) / 32 / 8,  # 32-element blocks of e2m1 + one 8-bit (e8m0) scale: 4.25 bits
    "fp8_block": 1.0 + 4.0 / (128 * 128),  # e4m3 + one fp32 scale per 128x128 block
}

#: Block-scaled formats run at the rate of their element type on a chip that lists no rate of its own.
RATE_DTYPE: dict[str, str] = {"nvfp4": "fp4", "mxfp4": "fp4", "fp8_block": "fp8"}

#: Weight dtypes the CLI offers.
WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4", "nvfp4", "mxfp4", "fp8_block")


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` (e.g. bf16 -> 2, int4 -> 0.5)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        allowed = ", ".join(DTYPE_BYTES)
        raise OptionError(f"unknown dtype {shown(dtype)}; allowed: {allowed}") from None


_PREFIX = {
    "": 1.0,
    "k": KB,
    "K": KB,
    "M": MB,
    "G": GB,
    "T": TB,
    "P": 1e15,
    "Ki": KiB,
    "Mi": MiB,
    "Gi": GiB,
    "Ti": TiB,
    "Pi": 2.0**50,
}
_QUANTITY = re.compile(
    r"^(?P<num>[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTP])?"
    r"(?P<unit>B/s|B|FLOP/s|FLOPS|s|ms|us|µs|ns)?$"
)

#: What a number measures; :func:`parse_quantity` refuses a unit of another dimension.
Dimension = Literal["bytes", "seconds", "bytes/s", "FLOP/s", "dimensionless"]
DIMENSIONS: tuple[str, ...] = get_args(Dimension)
#: Unit (after any prefix) -> its dimension; seconds take no prefix but their own scales.
_UNIT_DIMENSION = {
    "B": "bytes",
    "B/s": "bytes/s",
    "FLOP/s": "FLOP/s",
    "FLOPS": "FLOP/s",
    "s": "seconds",
    "ms": "seconds",
    "us": "seconds",
    "µs": "seconds",
    "ns": "seconds",
}
_TIME_SCALE = {"s": 1.0, "ms": MS, "us": US, "µs": US, "ns": NS}
#: Units a quantity of each dimension may carry (a bare number is always its SI unit).
ALLOWED_UNITS: dict[str, str] = {
    "bytes": "B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB",
    "bytes/s": "B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s",
    "FLOP/s": "FLOP/s (or FLOPS) with k, M, G, T, P, e.g. '197 TFLOP/s'",
    "seconds": "s, ms, us, ns",
    "dimensionless": "none (a plain number, optionally with k, M, G, T, P, Ki, Mi, Gi, Ti)",
}
_MAX_TEXT = 64


def _quantity_error(name: str, message: str) -> OptionError:
    return OptionError(f"{name}: {message}" if name else message, parameters=(name,) if name.isidentifier() else ())


def parse_quantity(value: str | float | int, dimension: Dimension | None = None, *, name: str = "value") -> float:
    """Parse ``'16 GiB'``, ``'819 GB/s'``, ``'8.2e11'`` or a number into a finite SI float.

    Decimal prefixes (k, M, G, T, P) are powers of 1000, binary ones (Ki ... Pi) powers of
    1024; ``ms``/``us``/``ns`` scale seconds.  With ``dimension`` (bytes, seconds, bytes/s,
    FLOP/s or dimensionless) a unit of another dimension, or a bare prefix on a dimensioned
    quantity, is refused with the allowed units; without it any unit is accepted.  NaN,
    infinities, overflow (``1e400``) and booleans are refused.  PyYAML 1.1 reads ``8.2e11``
    as a string, which this also accepts.  Errors are :class:`OptionError` naming ``name``.
    """
    if dimension is not None and dimension not in DIMENSIONS:
        raise OptionError(f"dimension: {shown(dimension)} is not one of {', '.join(DIMENSIONS)}")
    what = dimension or "a quantity"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        kind = f" of {dimension}" if dimension else ""
        raise _quantity_error(name, f"expected a number{kind}, got {shown(value)}")
    if isinstance(value, (int, float)):
        return _finite(value, value, name)
    text = value.strip().replace("_", "")
    match = _QUANTITY.match(text) if len(text) <= _MAX_TEXT else None
    if not match:
        example = {
            "bytes": "8e10, '16 GiB', '80 GB'",
            "seconds": "2e-6, '2 us', '50 ms'",
            "bytes/s": "8.19e11, '819 GB/s'",
            "FLOP/s": "1.97e14, '197 TFLOP/s'",
        }.get(dimension or "", "8.2e11, '16 GiB', '819 GB/s'")
        raise _quantity_error(name, f"cannot read {shown(value)} as {what} (examples: {example})")
    prefix, unit = match.group("prefix") or "", match.group("unit") or ""
    if prefix and unit in _TIME_SCALE:
        raise _quantity_error(
            name, f"{shown(value)}: unknown unit {prefix + unit!r}; allowed for seconds: {ALLOWED_UNITS['seconds']}"
        )
    _check_unit(value, dimension, prefix, unit, name)
    scale = _TIME_SCALE[unit] if unit in _TIME_SCALE else _PREFIX[prefix]
    return _finite(float(match.group("num")) * scale, value, name)


def _check_unit(value: str, dimension: str | None, prefix: str, unit: str, name: str) -> None:
    """Refuse a unit whose dimension differs from ``dimension`` (or a prefix with no unit)."""
    if dimension is None or (not unit and (not prefix or dimension == "dimensionless")):
        return
    if unit and _UNIT_DIMENSION[unit] == dimension:
        return
    problem = (
        f"{shown(value)} is {_UNIT_DIMENSION[unit]}, not {dimension}"
        if unit
        else f"{shown(value)} has a prefix but no unit"
    )
    raise _quantity_error(name, f"{problem}; allowed units: {ALLOWED_UNITS[dimension]}")


def _finite(number: float, value: object, name: str) -> float:
    """``number`` as a float when finite, else an error (NaN, inf, overflow)."""
    try:
        result = float(number)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise _quantity_error(name, f"{shown(value)} is not a finite number")
    return result
