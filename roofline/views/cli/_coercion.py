"""CLI start-up: option values parsed by their own parser, without a pydantic adapter per option.

typer (0.2x) coerces every parameter of the command it runs, given or not, through a pydantic
``TypeAdapter`` it builds on first use: about 5 ms each, over 100 ms for ``roofline step``, and the
import of pydantic's whole model machinery.  Our options carry a ``parser`` (roofline.views.cli.values)
or are plain text or on/off flags, and for those the adapter only calls the parser (or keeps the
text or the bool).
:func:`use_direct_parsers` gives such parameters a coercion that does that directly; when the
parser refuses a value (or the value is not plain text) it hands the value to typer's own
adapter, which raises exactly the error it always did.  Any other parameter keeps typer's path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_origin


def use_direct_parsers() -> None:
    """Install the direct coercion on typer's parameters once (a different typer layout: left as it is)."""
    try:
        from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
        from typer.core import _TyperParameter
    except ImportError:
        return
    if getattr(_TyperParameter, "_roofline_direct_parsers", False):
        return

    @dataclass(frozen=True)
    class DirectRuntimeParam(RuntimeParam):
        """A parser's result, text or a flag's bool as given; typer's adapter for anything else (its errors)."""

        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            parser = self.parameter_info.parser
            if parser is None:
                if type(value) is self.annotation:  # text stays text, a flag's bool stays as it is
                    return value
            else:
                try:
                    return parser(value)
                except Exception:  # noqa: BLE001 - typer's adapter re-runs the parser and reports it
                    pass
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def direct(descriptor: TypeDescriptor) -> RuntimeParam | None:
        annotation, info = descriptor.annotation, descriptor.parameter_info
        if descriptor.file_annotation is not None or get_origin(annotation) in (list, tuple):
            return None
        if info.parser is None and annotation not in (str, bool):
            return None
        return DirectRuntimeParam(parameter_info=info, annotation=annotation, descriptor=descriptor)

    typer_runtime_param = _TyperParameter.get_runtime_param

    def get_runtime_param(self: Any) -> RuntimeParam:
        if self._runtime_param is None:
            self._runtime_param = direct(self.type_descriptor)
        return self._runtime_param if self._runtime_param is not None else typer_runtime_param(self)

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    _TyperParameter._roofline_direct_parsers = True  # type: ignore[attr-defined]
