"""The ``roofline`` command line: thin parse -> estimate -> render layers, one module per group.

Commands are a registry (:data:`COMMANDS`): each top-level command name maps to the module(s) of
this package whose ``register(app)`` adds it.  A new command is one module with a ``register``
function plus one line in :data:`COMMANDS` (docs/contributing.md has the recipe).  A command from
outside the package is an entry point in the group ``roofline.commands`` (name = the command,
value = a module with ``register(app)``), found only when a command line names no built-in one
or every command is listed.  ``main`` imports only the modules a command line needs (CLI
start-up time); ``register_commands()`` registers everything.  Nothing else in the package
imports the CLI.
"""

from __future__ import annotations

import importlib
import sys

import typer

from roofline.core.errors import RooflineError
from roofline.core.fmt import set_byte_system
from roofline.views.cli._coercion import use_direct_parsers
from roofline.views.cli._common import err_console

#: Top-level command -> the command modules that register it (``roofline.views.cli.<module>``), in
#: the order ``roofline --help`` lists them.  One line per command: add yours here.
COMMANDS: dict[str, tuple[str, ...]] = {
    "calibrate": ("calibrate", "measure"),
    "measure": ("measure",),
    "hardware": ("catalog",),
    "model": ("catalog", "model_import"),
    "step": ("step",),
    "request": ("step",),
    "textbook": ("textbook",),
    "plan": ("plan",),
    "inverse": ("plan",),
    "diff": ("diff",),
    "collective": ("collective",),
    "shard": ("shard",),
    "serve": ("serve",),
    "sweep": ("sweep",),
    "pareto": ("pareto",),
    "report": ("report",),
    "e2e": ("e2e",),
    "validate": ("validate",),
    "simulate": ("simulate",),
}
#: Every built-in command module, once each, in registration order.
COMMAND_MODULES = tuple(dict.fromkeys(module for modules in COMMANDS.values() for module in modules))
#: The entry-point group of commands from other packages (value: a module with ``register(app)``).
PLUGIN_GROUP = "roofline.commands"

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


_registered: set[str] = set()


def plugin_commands() -> dict[str, str]:
    """Commands other installed packages add: entry-point name -> its module (built-in names win)."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP) if ep.name not in COMMANDS}


def register_commands(names: tuple[str, ...] | None = None) -> typer.Typer:
    """Import the named command modules (default: every built-in and plugin one) and ``register(app)``
    each once; a name of :data:`COMMAND_MODULES` is a module of this package, any other a plugin's."""
    for name in (*COMMAND_MODULES, *plugin_commands().values()) if names is None else names:
        if name not in _registered:
            path = f"{__name__}.{name}" if name in COMMAND_MODULES else name
            importlib.import_module(path).register(app)
            _registered.add(name)
    return app


def modules_for(args: list[str]) -> tuple[str, ...] | None:
    """The command modules a command line needs: those of its built-in command, else the plugin's
    module that registers it; None (every module) when it names neither, or no command."""
    words = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] != "--units")]
    if not words:
        return None
    if words[0] in COMMANDS:
        return COMMANDS[words[0]]
    plugin = plugin_commands().get(words[0])
    return (plugin,) if plugin else None


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
    except RooflineError as exc:
        _fail(flag_message(exc))
    except ValueError as exc:
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
    "ops": "--op",
    "fmt": "--format",
    # simulate
    "rate_per_s": "--arrival-rate",
    "clients": "--concurrency",
    "timeout_s": "--timeout",
    "host_bytes": "--offload-bytes",
    "bandwidth_bytes_per_s": "--offload-bandwidth",
}


def flag_message(exc: RooflineError) -> str:
    """An error naming Python parameters (its ``parameters``), with the CLI's flags instead (batch -> --batch)."""
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
