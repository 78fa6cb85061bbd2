"""Formatting numbers for people: used only by the CLI and the reports."""

from __future__ import annotations

from .units import MS, US


def format_bytes(value: float, system: str = "si") -> str:
    """Human-readable bytes: ``si`` uses kB/MB/GB (1000), ``iec`` KiB/MiB/GiB (1024)."""
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
