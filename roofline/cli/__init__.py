"""The ``roofline`` command line: thin parse -> estimate -> render layers, one module per group.

Each command module exposes ``register(app)``; add a module to ``COMMAND_MODULES`` to plug
in a new command group.  Nothing else in the package imports the CLI.
"""

from __future__ import annotations

import importlib
import sys

import typer

from ..errors import RooflineError
from ..fmt import set_byte_system
from ._common import err_console

COMMAND_MODULES = (
    "calibrate",
    "catalog",
    "step",
    "textbook",
    "model_import",
    "plan",
    "diff",
    "collective",
    "shard",
    "serve",
)

app = typer.Typer(
    name="roofline",
    help=(
        "Analytical roofline calculator for LLM inference.\n\n"
        "Example: roofline step --model llama-2-13b --hardware tpu-v5e --chips 8 "
        "--batch 16 --context 8192"
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


@app.callback()
def _global_options(
    units: str = typer.Option("si", "--units", help="Byte display: si (kB, MB, GB) or iec (KiB, MiB, GiB)."),
) -> None:
    """Analytical roofline calculator for LLM inference."""
    set_byte_system(units)


for _name in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main() -> None:
    """Console entry point: bad input becomes one line on stderr and exit status 2."""
    try:
        app()
    except (RooflineError, ValueError) as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
