"""`roofline collective`: time of one AllGather / ReduceScatter / AllReduce / AllToAll."""

from __future__ import annotations

import typer

from roofline.analyses.shard import collective
from roofline.core.errors import RooflineError, shown
from roofline.core.fmt import format_bytes, format_seconds
from roofline.formulas.collectives import OPS
from roofline.views.cli import values
from roofline.views.cli._common import JSON_OPTION, console, emit, print_assumptions, quantity_table
from roofline.views.cli.options import HARDWARE, load_hardware_option
from roofline.views.cli.values import split_names


def parse_axes(text: str | None) -> tuple[int, ...] | None:
    """``'0,1'`` -> (0, 1); a one-line error naming --axes otherwise."""
    if text is None:
        return None
    try:
        return tuple(values.count(0, 63)(part.strip()) for part in split_names(text, "--axes"))
    except ValueError:
        raise RooflineError(f"--axes: cannot read {shown(text)}; expected axis indices like 0 or 0,1") from None


def collective_command(
    op: str = typer.Option(..., "--op", parser=values.choice(*OPS), help=f"Collective: {', '.join(OPS)}."),
    total: float = typer.Option(
        ...,
        "--bytes",
        parser=values.number(dimension="bytes"),
        metavar="BYTES",
        help="V: the whole array (after the gather, before the scatter, the buffer "
        "reduced); e.g. 1e6, '360 kB', '16 MiB'.",
    ),
    hardware: str = HARDWARE,
    devices: int = typer.Option(None, "--devices", "-n", parser=values.count(), help="Devices in the collective."),
    topology: str = typer.Option(
        None, "--topology", parser=values.topology_text, help="TPU slice axes, e.g. 4x4 or 4x4x4."
    ),
    axes: str = typer.Option(
        None, "--axes", help="Topology axes gathered over, e.g. 0 or 0,1 (default: all; needs --topology)."
    ),
    wraparound: bool = typer.Option(
        None, "--wraparound/--no-wraparound", help="Force torus wraparound links (default: the book's rules per chip)."
    ),
    dcn: float = typer.Option(
        None,
        "--dcn-bandwidth",
        parser=values.number(dimension="bytes/s"),
        metavar="BYTES/S",
        help="Scale-out egress per chip, one direction (e.g. '50 GB/s'; "
        "a node's NICs / its chips); default: hardware file.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Time of a collective over N devices: lower bound max(latency, bandwidth), upper bound their sum.

    Example: roofline collective --op allgather --bytes 360e3 --hardware tpu-v5e --devices 8
    """
    if axes is not None and topology is None:
        raise RooflineError("--axes needs --topology (the axes are those of a slice such as 4x4)")
    hw = load_hardware_option(hardware)
    res = collective(hw, op, total, devices, topology, parse_axes(axes), wraparound, dcn)
    data = {"hardware": hw.name, **res.as_dict()}

    def render() -> None:
        table = quantity_table(f"{op} of {format_bytes(total)} over {res.devices}x {hw.name}: {res.network}")
        for label, key in (
            ("time (lower bound, max)", "time_s"),
            ("time (upper bound, sum)", "time_upper_s"),
            ("bandwidth term", "bandwidth_time_s"),
            ("latency term", "latency_time_s"),
        ):
            table.add_row(label, format_seconds(float(data[key])))
        table.add_row("latency-bound", "[bold yellow]yes[/]" if data["latency_bound"] else "no")
        table.add_row("book rule: latency-bound below", format_bytes(res.latency_bound_below_bytes))
        console.print(table)
        print_assumptions(sources={"hardware": str(data.get("sources", {}).get("hardware", ""))})

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("collective")(collective_command)
