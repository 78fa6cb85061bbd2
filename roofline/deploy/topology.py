"""Slice topologies: ``4x4`` / ``4x4x4`` to axis sizes, and which torus axes wrap around.

Wraparound rules follow How to Scale Your Model, part 2 ("TPU networking"): TPU v4/v5p
(3D torus) have wraparound links on axes whose size is a multiple of 4 (full cubes and
larger); TPU v5e/v6e (2D torus) only on an axis that spans the whole pod side (16 of a
16x16 pod).  Pure functions; nothing here reads a file.
"""

from __future__ import annotations

import math
import re

from roofline.core.errors import OptionError, shown

_TOPOLOGY = re.compile(r"^\s*\d+(\s*[xX×]\s*\d+)*\s*$")


def parse_topology(text: str) -> tuple[int, ...]:
    """``'4x4'`` -> (4, 4); ``'2x4x4'`` -> (2, 4, 4); a bare ``'8'`` -> (8,)."""
    if not isinstance(text, str) or len(text) > 64 or not _TOPOLOGY.match(text):
        raise OptionError(
            f"topology_text: cannot read {shown(text)}; expected axis sizes like 8, 4x4 or 4x4x4",
            parameters=("topology_text",),
        )
    sizes = tuple(int(part) for part in re.split(r"[xX×]", text.replace(" ", "")))
    if any(size < 1 for size in sizes) or math.prod(sizes) > 1 << 20:
        raise OptionError(
            f"topology_text: every axis size must be at least 1 and the slice at most "
            f"{1 << 20} chips (got {shown(text)})",
            parameters=("topology_text",),
        )
    return sizes


def format_topology(axis_sizes: tuple[int, ...]) -> str:
    """(4, 4) -> ``'4x4'``."""
    return "x".join(str(size) for size in axis_sizes)


def topology_chips(axis_sizes: tuple[int, ...]) -> int:
    """Chips in a slice: the product of its axis sizes."""
    return math.prod(axis_sizes)


def axis_wraps(axis_size: int, ici_topology: str, pod_chips: int | None) -> bool:
    """Whether a torus axis of ``axis_size`` chips has a wraparound link (book part 2)."""
    if axis_size < 3 or ici_topology == "switch":
        return False
    if ici_topology == "torus3d":
        return axis_size % 4 == 0
    if ici_topology == "torus2d":
        side = math.isqrt(pod_chips) if pod_chips else 0
        return side > 0 and axis_size == side
    return pod_chips is not None and axis_size == pod_chips


def pod_axes(pod_chips: int, ici_topology: str) -> tuple[int, ...]:
    """The axis sizes of a whole pod when they are a square/cube (16x16 for 256), else one axis."""
    dims = {"torus2d": 2, "torus3d": 3}.get(ici_topology, 1)
    side = round(pod_chips ** (1.0 / dims))
    return (side,) * dims if side**dims == pod_chips else (pod_chips,)


def axes_for_degree(axis_sizes: tuple[int, ...], degree: int) -> tuple[int, ...]:
    """Indices of the leading axes whose sizes multiply to ``degree`` (a tp group on a slice)."""
    product = 1
    for index, size in enumerate(axis_sizes):
        if product == degree:
            return tuple(range(index))
        product *= size
    if product == degree:
        return tuple(range(len(axis_sizes)))
    options = [math.prod(axis_sizes[:i]) for i in range(1, len(axis_sizes) + 1)]
    raise OptionError(
        f"tp={degree} does not match leading axes of topology {format_topology(axis_sizes)} "
        f"(allowed: {', '.join(str(o) for o in options)})",
        parameters=("tp",),
    )
