"""From a hardware spec and a device layout to collective times: the bridge to ``collectives``.

Picks the network a collective runs on from the hardware file: TPU ICI torus axes (sizes from
a slice topology or one ring of N chips, wraparound by the book's part-2 rules unless given),
a GPU NVLink/NVSwitch domain (per-GPU bandwidth), and, when the devices outnumber one ICI
domain (``max_ici_domain_chips``), a two-level collective whose outer phase crosses the
scale-out network (DCN / InfiniBand, per-chip egress ``dcn_bandwidth_bytes_per_s``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import OptionError, RooflineError, shown
from roofline.deploy import topology
from roofline.formulas import collectives
from roofline.formulas.collectives import CollectiveTime
from roofline.specs import HardwareSpec

PART3 = "How to Scale Your Model, part 3 (collectives) and part 7 appendix C"


@dataclass(frozen=True)
class Layout:
    """Where a collective runs: ICI axes inside one domain and how many domains it spans."""

    axis_sizes: tuple[int, ...]
    wraps: tuple[bool, ...]
    switched: bool
    domains: int

    @property
    def domain_devices(self) -> int:
        """Devices inside one ICI/NVLink domain: the product of the axes used."""
        return topology.topology_chips(self.axis_sizes)

    @property
    def devices(self) -> int:
        """All devices in the collective: domain devices × domains."""
        return self.domain_devices * self.domains

    def describe(self, hw: HardwareSpec) -> str:
        """The network in words, e.g. 'ICI torus axes 4x4 (no wrap, no wrap)'."""
        if self.switched:
            inner = (
                f"{self.domain_devices}-GPU NVLink switch domain"
                if hw.kind == "gpu"
                else (f"{self.domain_devices}-chip switched domain")
            )
        else:
            wrap = ", ".join("wrap" if w else "no wrap" for w in self.wraps)
            inner = f"ICI torus axes {topology.format_topology(self.axis_sizes)} ({wrap})"
        if self.domains > 1:
            return f"{inner} x {self.domains} domains over the scale-out network (DCN/IB)"
        return inner


def layout_for(
    hw: HardwareSpec,
    devices: int | None = None,
    topology_text: str | None = None,
    axes: tuple[int, ...] | None = None,
    wraparound: bool | None = None,
) -> Layout:
    """Resolve ``devices`` / ``topology_text`` / ``axes`` into a Layout, with one-line errors naming them."""
    domain = hw.max_ici_domain_chips
    if topology_text:
        if hw.ici_topology == "switch":
            raise OptionError(
                f"topology_text: {hw.name} has a switched NVLink domain, not a torus; give devices=",
                parameters=("topology_text", "devices"),
            )
        sizes = topology.parse_topology(topology_text)
        chosen = tuple(range(len(sizes))) if axes is None else axes
        bad = [a for a in chosen if not 0 <= a < len(sizes)]
        if bad:
            raise OptionError(
                f"axes: axis {bad[0]} not in topology {topology_text} (0..{len(sizes) - 1})", parameters=("axes",)
            )
        sizes_used = tuple(sizes[a] for a in chosen)
        n = topology.topology_chips(sizes_used)
        if devices is not None and devices != n:
            raise OptionError(
                f"devices={devices} disagrees with topology_text={topology_text} over axes {list(chosen)} ({n} chips)",
                parameters=("devices", "topology_text"),
            )
        if domain and topology.topology_chips(sizes) > domain:
            raise OptionError(
                f"topology_text={topology_text}: {topology.topology_chips(sizes)} chips exceed "
                f"one {hw.name} ICI domain ({domain} chips); give devices= for multi-slice",
                parameters=("topology_text", "devices"),
            )
        wraps = tuple(_wraps(hw, s, wraparound) for s in sizes_used)
        return Layout(sizes_used, wraps, switched=False, domains=1)
    if devices is None or devices < 1:
        raise OptionError(
            "devices: give a positive number of devices (or topology_text=)", parameters=("devices", "topology_text")
        )
    domains = 1
    inner = devices
    if domain and devices > domain:
        if devices % domain:
            raise OptionError(
                f"devices={devices}: a collective spanning several {hw.name} domains needs a "
                f"multiple of the domain size {domain}",
                parameters=("devices",),
            )
        domains, inner = devices // domain, domain
    if hw.ici_topology == "switch":
        return Layout((inner,), (False,), switched=True, domains=domains)
    sizes = (inner,) if domains == 1 else topology.pod_axes(inner, hw.ici_topology)
    wraps = tuple(_wraps(hw, s, wraparound) for s in sizes)
    return Layout(sizes, wraps, switched=False, domains=domains)


def check_slice_topology(hw: HardwareSpec, topology_text: str | None) -> None:
    """A slice's topology is for a torus: a switched domain's slice is its chip count (chips=, tp=)."""
    if topology_text and hw.ici_topology == "switch":
        raise OptionError(
            f"topology_text: {hw.name} has a switched NVLink domain, not a torus; drop it and give chips= (and tp=)",
            parameters=("topology_text", "chips", "tp"),
        )


def tp_layout(hw: HardwareSpec, tp: int, topology_text: str | None) -> Layout:
    """The tp group's layout: the leading topology axes multiplying to ``tp``, else ``tp`` devices."""
    if not topology_text:
        return layout_for(hw, tp)
    check_slice_topology(hw, topology_text)
    axes = topology.axes_for_degree(topology.parse_topology(topology_text), tp)
    return layout_for(hw, None, topology_text, axes)


def usable_bandwidth_bytes_per_s(hw: HardwareSpec, layout: Layout) -> float:
    """One-way bandwidth per chip a collective on ``layout`` can use inside the domain (W_ici,eff)."""
    if layout.switched:
        return hw.ici_bandwidth_bytes_per_s
    return (
        collectives.torus_bandwidth_bytes_per_s(layout.axis_sizes, layout.wraps, hw.ici_bandwidth_bytes_per_s)
        or hw.ici_bandwidth_bytes_per_s
    )


def _wraps(hw: HardwareSpec, size: int, override: bool | None) -> bool:
    """Wraparound of one axis: the override when given, else the book's per-chip rule."""
    if override is not None:
        return bool(override) and size > 1
    return topology.axis_wraps(size, hw.ici_topology, hw.max_ici_domain_chips)


def allgather_on(
    hw: HardwareSpec, layout: Layout, total_bytes: ArrayLike
) -> tuple[CollectiveTime, CollectiveTime | None]:
    """(inner-domain AllGather of V, outer scale-out AllGather of V/domain or None)."""
    if layout.switched:
        inner = collectives.switch_allgather(
            total_bytes, layout.domain_devices, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s
        )
    else:
        inner = collectives.torus_allgather(
            total_bytes, layout.axis_sizes, layout.wraps, hw.ici_bandwidth_bytes_per_s, hw.ici_hop_latency_s
        )
    if layout.domains == 1:
        return inner, None
    if hw.dcn_bandwidth_bytes_per_s is None or hw.dcn_latency_s is None:
        raise RooflineError(
            f"{hw.name}: spans {layout.domains} domains but the hardware file has no "
            "dcn_bandwidth_bytes_per_s / dcn_latency_s"
        )
    outer = collectives.switch_allgather(
        np.divide(total_bytes, layout.domain_devices), layout.domains, hw.dcn_bandwidth_bytes_per_s, hw.dcn_latency_s
    )
    return inner, outer


def collective_on(hw: HardwareSpec, layout: Layout, op: str, total_bytes: ArrayLike) -> CollectiveTime:
    """Time of ``op`` over V = ``total_bytes`` on ``layout``; two-level phases add."""
    if op not in collectives.OPS:
        raise OptionError(
            f"op: unknown collective {shown(op)}; allowed: {', '.join(collectives.OPS)}", parameters=("op",)
        )
    inner, outer = allgather_on(hw, layout, total_bytes)
    result = collectives.collective_from_allgather(op, inner, layout.domain_devices, layout.switched)
    if outer is not None:
        outer_op = collectives.collective_from_allgather(op, outer, layout.domains, switched=True)
        result = collectives.two_level_allgather(result, outer_op)
    return result


def link_summary(hw: HardwareSpec, layout: Layout) -> dict[str, float | None]:
    """The per-link numbers used, for the ``sources`` of a result."""
    out: dict[str, float | None] = {
        "link_bandwidth_bytes_per_s": hw.ici_bandwidth_bytes_per_s,
        "hop_latency_s": hw.ici_hop_latency_s,
    }
    if layout.domains > 1:
        out["dcn_bandwidth_bytes_per_s"] = hw.dcn_bandwidth_bytes_per_s
        out["dcn_latency_s"] = hw.dcn_latency_s
    return out
