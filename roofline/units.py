"""Units: the one place where byte, time and rate scales and dtype widths are defined.

Everything inside roofline is SI (bytes, seconds, FLOP/s, bytes/s).  Decimal and binary
prefixes have distinct names (``GB`` vs ``GiB``) and strings carrying a unit are parsed
only by :func:`parse_quantity`, which refuses an ambiguous or unknown suffix.
"""

from __future__ import annotations

import re

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
}

#: Weight dtypes the CLI offers.
WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` (e.g. bf16 -> 2, int4 -> 0.5)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        allowed = ", ".join(DTYPE_BYTES)
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {allowed}") from None


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
}
_QUANTITY = re.compile(
    r"^\s*(?P<num>[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*(?P<prefix>Ki|Mi|Gi|Ti|[kKMGTP])?"
    r"(?P<unit>B/s|B|FLOP/s|FLOPS|s|ms|us)?\s*$"
)


def parse_quantity(value: str | float | int) -> float:
    """Parse ``'16 GiB'``, ``'819 GB/s'``, ``'8.2e11'`` or a number into an SI float.

    Decimal prefixes (k, M, G, T) are powers of 1000, binary ones (Ki, Mi, Gi, Ti) powers
    of 1024; ``ms``/``us`` scale seconds.  PyYAML 1.1 reads ``8.2e11`` as a string, which
    this also accepts.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().replace("_", "")
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(
            f"cannot read {value!r} as a number (examples: 8.2e11, '16 GiB', '819 GB/s')"
        )
    number = float(match.group("num"))
    prefix = match.group("prefix") or ""
    unit = match.group("unit") or ""
    if unit == "ms":
        return number * MS * _PREFIX[prefix]
    if unit == "us":
        return number * US * _PREFIX[prefix]
    return number * _PREFIX[prefix]
