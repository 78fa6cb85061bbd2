"""The ``roofline`` command line: thin parse -> estimate -> render layers, one module per group.

Each command module exposes ``register(app)``; add a module to ``COMMAND_MODULES`` to plug
in a new command group.  Modules are registered when ``main`` runs (only the one a
``FAST_COMMANDS`` leaf needs, else all); call ``register_commands()`` for the full ``app``.
Nothing else in the package imports the CLI.
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
    "sweep",
    "report",
    "e2e",
    "validate",
    "simulate",
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


#: Top-level commands that are leaves (no sub-commands) and the module that registers each.
#: ``main`` imports only that module for them (CLI start-up time); anything else loads all.
FAST_COMMANDS = {
    "step": "step", "request": "step", "textbook": "textbook", "sweep": "sweep", "pareto": "sweep",
    "report": "report", "plan": "plan", "inverse": "plan", "diff": "diff",
}
_registered: set[str] = set()


def register_commands(names: tuple[str, ...] = COMMAND_MODULES) -> typer.Typer:
    """Import the named command modules (default: all) and ``register(app)`` each once."""
    for name in names:
        if name not in _registered:
            importlib.import_module(f"{__name__}.{name}").register(app)
            _registered.add(name)
    return app


def modules_for(args: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: one for a FAST_COMMANDS leaf, else all."""
    words = [a for a in args if not a.startswith("-")]
    if words and words[0] in FAST_COMMANDS:
        return (FAST_COMMANDS[words[0]],)
    return COMMAND_MODULES


def main() -> None:
    """Console entry point: bad input becomes one line on stderr and exit status 2."""
    try:
        register_commands(modules_for(sys.argv[1:]))
        app()
    except (RooflineError, ValueError) as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
