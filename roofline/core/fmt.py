"""Formatting numbers for people: used only by the CLI and the reports."""

from __future__ import annotations

from roofline.core.errors import OptionError
from roofline.core.units import MS, US

#: Byte display system the CLI chose (formatting state only; estimators stay SI).
BYTE_SYSTEMS = ("si", "iec")
_byte_system = {"system": "si"}


def set_byte_system(system: str) -> None:
    """Choose how :func:`format_bytes` shows bytes when no system is passed: ``si`` or ``iec``."""
    if system not in BYTE_SYSTEMS:
        raise OptionError(
            f"units: unknown byte system {system!r}; allowed: {', '.join(BYTE_SYSTEMS)}", parameters=("units",)
        )
    _byte_system["system"] = system


def format_bytes(value: float, system: str | None = None) -> str:
    """Human-readable bytes: ``si`` uses kB/MB/GB (1000), ``iec`` KiB/MiB/GiB (1024)."""
    system = system or _byte_system["system"]
    base, names = (
        (1000.0, ["B", "kB", "MB", "GB", "TB", "PB"])
        if system == "si"
        else (1024.0, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
    )
    size = float(value)
    for name in names:
        if abs(size) < base or name == names[-1]:
            return f"{size:.3g} {name}" if name != "B" else f"{size:.0f} B"
        size /= base
    return f"{value} B"  # pragma: no cover


def format_seconds(value: float) -> str:
    """Human-readable duration in s, ms or us."""
    v = float(value)
    if abs(v) >= 1.0:
        return f"{v:.3g} s"
    if abs(v) >= 1e-3:
        return f"{v / MS:.3g} ms"
    return f"{v / US:.3g} us"


def format_quantity(value: float, unit: str) -> str:
    """A value with its unit for people: bytes and bytes/s in the chosen byte system, seconds scaled, else 4 digits."""
    if unit == "B":
        return format_bytes(value)
    if unit == "B/s":
        return format_bytes(value) + "/s"
    if unit == "s":
        return format_seconds(value)
    if unit in ("$", "$/h"):
        return f"${float(value):,.4g}" + ("/h" if unit == "$/h" else "")
    return f"{float(value):,.4g} {unit}".rstrip()


def format_si(value: float, unit: str) -> str:
    """A value with an SI prefix: 9.89e14 FLOP/s -> '989 TFLOP/s', 4.5e10 -> '45 G' + unit."""
    v = float(value)
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"
