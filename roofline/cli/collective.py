"""`roofline collective`: time of one AllGather / ReduceScatter / AllReduce / AllToAll."""

from __future__ import annotations

import typer

from ..collectives import OPS
from ..errors import RooflineError
from ..fmt import format_bytes, format_seconds
from ..multichip import collective
from ..specs import load_hardware
from ..units import parse_quantity
from ._common import JSON_OPTION, console, emit, quantity_table


def parse_axes(text: str | None) -> tuple[int, ...] | None:
    """``'0,1'`` -> (0, 1); a one-line error naming --axes otherwise."""
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise RooflineError(f"--axes: cannot read {text!r}; expected axis indices like 0 or 0,1") from None


def collective_command(
    op: str = typer.Option(..., "--op", help=f"Collective: {', '.join(OPS)}."),
    bytes_text: str = typer.Option(..., "--bytes", help="V: the whole array (after the gather, before the "
                                   "scatter, the buffer reduced); e.g. 1e6, '360 kB', '16 MiB'."),
    hardware: str = typer.Option(..., "--hardware", "-H", help="Built-in chip or YAML path."),
    devices: int = typer.Option(None, "--devices", "-n", help="Devices in the collective."),
    topology: str = typer.Option(None, "--topology", help="TPU slice axes, e.g. 4x4 or 4x4x4."),
    axes: str = typer.Option(None, "--axes", help="Topology axes gathered over, e.g. 0 or 0,1 (default: all)."),
    wraparound: bool = typer.Option(None, "--wraparound/--no-wraparound",
                                    help="Force torus wraparound links (default: the book's rules per chip)."),
    dcn_bandwidth: str = typer.Option(None, "--dcn-bandwidth", help="Scale-out egress per chip, one direction "
                                      "(e.g. '50 GB/s'; a node's NICs / its chips); default: hardware file."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Time of a collective over N devices: lower bound max(latency, bandwidth), upper bound their sum.

    Example: roofline collective --op allgather --bytes 360e3 --hardware tpu-v5e --devices 8
    """
    if op not in OPS:
        raise RooflineError(f"--op: unknown collective {op!r}; allowed: {', '.join(OPS)}")
    try:
        total = parse_quantity(bytes_text)
    except ValueError as exc:
        raise RooflineError(f"--bytes: {exc}") from None
    hw = load_hardware(hardware)
    try:
        dcn = parse_quantity(dcn_bandwidth) if dcn_bandwidth is not None else None
    except ValueError as exc:
        raise RooflineError(f"--dcn-bandwidth: {exc}") from None
    res = collective(hw, op, total, devices, topology, parse_axes(axes), wraparound, dcn)
    data = {"hardware": hw.name, **res.as_dict()}

    def render() -> None:
        table = quantity_table(f"{op} of {format_bytes(total)} over {res.devices}x {hw.name}: {res.network}")
        for label, key in (("time (lower bound, max)", "time_s"), ("time (upper bound, sum)", "time_upper_s"),
                           ("bandwidth term", "bandwidth_time_s"), ("latency term", "latency_time_s")):
            table.add_row(label, format_seconds(float(data[key])))
        table.add_row("latency-bound", "[bold yellow]yes[/]" if data["latency_bound"] else "no")
        table.add_row("book rule: latency-bound below", format_bytes(res.latency_bound_below_bytes))
        console.print(table)

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("collective")(collective_command)
