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

from roofline.core.errors import OptionError, RooflineError
from roofline.core.fmt import set_byte_system
from roofline.views.cli._coercion import use_direct_parsers
from roofline.views.cli._common import err_console

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


def _print_version(value: bool) -> None:
    if value:
        from roofline import __version__

        print(f"roofline {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    units: str = typer.Option("si", "--units", help="Byte display: si (kB, MB, GB) or iec (KiB, MiB, GiB)."),
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Analytical roofline calculator for LLM inference."""
    set_byte_system(units)


#: Top-level commands that are leaves (no sub-commands) and the module that registers each.
#: ``main`` imports only that module for them (CLI start-up time); anything else loads all.
FAST_COMMANDS = {
    "step": "step",
    "request": "step",
    "textbook": "textbook",
    "sweep": "sweep",
    "pareto": "sweep",
    "report": "report",
    "plan": "plan",
    "inverse": "plan",
    "diff": "diff",
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
    from typer._click.exceptions import NoArgsIsHelpError, UsageError  # typer's vendored click

    _hide_flag_metavars()
    use_direct_parsers()
    try:
        register_commands(modules_for(sys.argv[1:]))
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:  # typer has printed the help already (rich); plain click returns it
        if exc.format_message().strip():
            print(exc.format_message(), file=sys.stderr)
        sys.exit(2)
    except UsageError as exc:
        _fail(usage_message(exc))
    except OptionError as exc:
        _fail(flag_message(exc))
    except (RooflineError, ValueError) as exc:
        _fail(str(exc))
    if isinstance(code, int) and code:
        sys.exit(code)


def _fail(message: str) -> None:
    from rich.markup import escape

    err_console.print(f"[bold red]error:[/] {escape(' '.join(message.split()))}", highlight=False, soft_wrap=True)
    sys.exit(2)


def usage_message(exc: Exception) -> str:
    """A typer usage error on one line: '--batch: must be a whole number ... (see: roofline step --help)'."""
    param = getattr(exc, "param", None)
    message = str(getattr(exc, "message", "") or exc).removeprefix("Value error, ")
    if param is not None and getattr(param, "opts", None):
        flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        message = f"{flag}: {message}"
    elif hasattr(exc, "format_message"):
        message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "roofline"
    return f"{message} (see: {path} --help)"


#: Python parameter names whose flag is not the name with dashes.
PARAMETER_FLAGS = {
    "price_per_chip_hour": "--price",
    "topology_text": "--topology",
    "topologies": "--topology",
    "total_bytes": "--bytes",
    "dcn_bandwidth_bytes_per_s": "--dcn-bandwidth",
    "ttft_slo_s": "--ttft-slo",
    "tpot_slo_s": "--tpot-slo",
    "tpot_s": "--tpot-slo",
    "kv_dtypes": "--kv-dtype",
    "spare_replicas": "--spare",
    "load_bandwidth_bytes_per_s": "--load-bandwidth",
    "trough_fraction": "--trough",
    "address": "--ray-address",
    "prices": "--price",
}


def flag_message(exc: OptionError) -> str:
    """An OptionError naming Python parameters, with the CLI's flags instead (batch -> --batch)."""
    import re

    text = str(exc)
    for parameter in exc.parameters:
        if not parameter.isidentifier():
            continue
        flag = PARAMETER_FLAGS.get(parameter, "--" + parameter.replace("_", "-"))
        name = re.escape(parameter)
        text = re.sub(rf"^{name}(?![\w=-])", flag, text)
        text = re.sub(rf"(?<![\w-]){name}=(?=[^\s),;])", f"{flag} ", text)
        text = re.sub(rf"(?<![\w-]){name}=", flag, text)
    return text


def _hide_flag_metavars() -> None:
    """Help shows no '<bool>' type next to on/off flags (typer's default does)."""
    try:
        from typer.core import TyperOption
    except ImportError:  # another typer layout: keep its help as it is
        return
    if getattr(TyperOption, "_roofline_flags_hidden", False):
        return
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: object) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    TyperOption._roofline_flags_hidden = True  # type: ignore[attr-defined]
