"""Parsers for CLI option values: each option's value is checked once, where the option is declared.

Every scalar option carries one of these as its typer ``parser``: a count, a number in a range
(finite, sign, unit dimension), a fraction, a duration, a dtype, a name or one of a few words.
They are :mod:`roofline.core.checks` with the option's own range; a bad value raises a ``ValueError``
that typer turns into a usage error naming the flag, which :func:`roofline.views.cli.main` prints on
one line.  List options (``--batch 1,8,16``) are parsed by :func:`roofline.analyses.sweep.run.parse_int_list`
and :func:`split_names`, which name their option themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from roofline.core.checks import MAX_COUNT, MAX_VALUE, check_count, check_name, check_number
from roofline.core.errors import OptionError, nearest, shown
from roofline.core.files import check_output_path, output_kind
from roofline.core.units import DTYPE_BYTES, Dimension

#: Largest price accepted, in USD per chip-hour (the spec files' own limit).
MAX_PRICE_PER_CHIP_HOUR = 1e6
#: Largest request rate accepted (requests/s): far above any deployment, far from overflow.
MAX_RATE_PER_S = 1e9


def count(minimum: int = 1, maximum: int = MAX_COUNT) -> Callable[[object], int]:
    """A whole number in [minimum, maximum] (default [1, 2**31-1]); '4k' reads as 4000."""

    def parse(value: object) -> int:
        return check_count(value, "", minimum=minimum, maximum=maximum)

    return parse


def number(
    minimum: float | None = 0.0,
    maximum: float | None = None,
    *,
    open_low: bool = True,
    dimension: Dimension = "dimensionless",
) -> Callable[[object], float]:
    """A finite number of ``dimension`` (its unit checked) in the range; default (0, MAX_VALUE]."""

    def parse(value: object) -> float:
        return check_number(
            value,
            "",
            dimension=dimension,
            minimum=minimum,
            maximum=MAX_VALUE[dimension] if maximum is None else maximum,
            open_low=open_low,
        )

    return parse


#: (0, 1]: a share of peak (MFU) or of HBM (memory utilization).
fraction = number(0.0, 1.0)
#: [0, 1]: a probability or hit rate.
probability = number(0.0, 1.0, open_low=False)
#: A positive duration: '50ms', '0.05' or '50 ms' (bare numbers are seconds).
seconds = number(0.0, dimension="seconds")
#: A duration that may be zero.
seconds_or_zero = number(0.0, dimension="seconds", open_low=False)
#: USD per chip-hour.
price = number(0.0, MAX_PRICE_PER_CHIP_HOUR)
#: Requests per second.
rate = number(0.0, MAX_RATE_PER_S)


def dtype(value: object) -> str:
    """One numeric type name (bf16, fp8, int8, ...)."""
    if isinstance(value, str) and ("," in value or "=" in value):
        raise OptionError(
            f"takes one dtype here, not a list or component=dtype items (got {shown(value)}); allowed: "
            f"{', '.join(DTYPE_BYTES)}"
        )
    if value not in DTYPE_BYTES:
        close = nearest(str(value), DTYPE_BYTES) if isinstance(value, str) else []
        hint = f"; did you mean {close[0]}?" if close else ""
        raise OptionError(f"unknown dtype {shown(value)}{hint}; allowed: {', '.join(DTYPE_BYTES)}")
    return str(value)


def dtype_spec(value: object) -> str:
    """A dtype, or a default dtype and component=dtype items ('fp8_block,experts=nvfp4'); the components are
    checked against the model where the options are read."""
    from roofline.model.memory import WEIGHT_COMPONENTS

    component_items(value, "", WEIGHT_COMPONENTS, dtype, "fp8_block,experts=nvfp4")
    return str(value)


def optional_dtype(value: object) -> str:
    """A dtype, or '' for 'every dtype present'."""
    return "" if value == "" else dtype(value)


def name(value: object) -> str:
    """A non-empty one-line name (a built-in name or a path)."""
    return check_name(value, "")


def choice(*allowed: str) -> Callable[[object], str]:
    """One of ``allowed``; anything else is refused with the list."""

    def parse(value: object) -> str:
        if value not in allowed:
            raise OptionError(f"unknown {shown(value)}; allowed: {', '.join(allowed)}")
        return str(value)

    return parse


def topology_text(value: object) -> str:
    """Slice axes such as 4x4 or 2x4x4 (checked by roofline.deploy.topology.parse_topology)."""
    from roofline.deploy.topology import parse_topology

    if not isinstance(value, str) or not value.strip():
        raise OptionError("is empty; give axis sizes such as 8, 4x4 or 4x4x4")
    try:
        parse_topology(value)
    except OptionError as exc:
        raise OptionError(str(exc).removeprefix("topology_text: ")) from None
    return value


def split_names(text: object, option: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c']; an empty list or an empty item is an error naming the option."""
    parts = [t.strip() for t in str(text).split(",")]
    if not any(parts):
        raise OptionError(f"{option}: give at least one value")
    if not all(parts):
        raise OptionError(f"{option}: empty item in {shown(str(text))}; separate values with single commas")
    return list(dict.fromkeys(parts))


def check_outputs(paths: Sequence[tuple[str, Path | str | None]]) -> None:
    """Refuse, before anything is written, an output path that is a folder, a socket, lies under a file
    or an unwritable folder, or is given twice (flag, path pairs; None = not asked for).  A character
    device or FIFO (/dev/null, /dev/stdout) is accepted: it is written through, never replaced."""
    seen: dict[str, str] = {}
    for flag, raw in paths:
        if raw is None:
            continue
        text = str(raw)
        check_name(text, flag)
        check_output_path(text, flag)
        key = str(Path(text).resolve())
        if key in seen and output_kind(text) != "stream":
            raise OptionError(f"{flag}: {shown(text)} is also given to {seen[key]}")
        seen[key] = flag


def parse_prices(text: str | None, chips: Sequence[str], option: str = "--price") -> dict[str, float]:
    """'2.5' (every chip) or 'h100-sxm=2.5,tpu-v5e=1.1' -> {chip: USD per chip-hour}, each checked."""
    if text is None:
        return {}
    prices: dict[str, float] = {}
    for item in split_names(text, option):
        chip, _, value = item.rpartition("=")
        chip = chip.strip()
        if "=" in item and not chip:
            raise OptionError(f"{option}: {shown(item)} has no chip name before '='; use 2.5 or h100-sxm=2.5")
        if chip and chip not in chips:
            raise OptionError(f"{option}: {shown(chip)} is not one of --hardware ({', '.join(chips)})")
        try:
            usd = price(value.strip())
        except ValueError as exc:
            where = f"{option}: {chip}" if chip else option
            raise OptionError(f"{where}: {exc}; use 2.5 or h100-sxm=2.5,tpu-v5e=1.1") from None
        prices.update({chip: usd} if chip else dict.fromkeys(chips, usd))
    return prices


def component_items(
    text: object, option: str, components: Sequence[str], value: Callable[[object], str], example: str
) -> tuple[str | None, dict[str, str]]:
    """'bf16,experts=mxfp4' -> ('bf16', {'experts': 'mxfp4'}): an optional default and component=value
    items, each value checked by ``value``.  Refused, naming ``option``: an empty item (a trailing or
    doubled comma), an unknown component, a component given twice, and two defaults (bf16,fp8)."""
    raw = str(text)
    if len(raw) > 1000:
        raise OptionError(f"{option}: at most 1000 characters (got {len(raw):,}); e.g. {example}")
    default: str | None = None
    items: dict[str, str] = {}
    for item in raw.split(","):
        item = item.strip()
        if not item:
            raise OptionError(f"{option}: empty item in {shown(raw)} (a trailing or doubled comma?); e.g. {example}")
        name, has_name, given = item.partition("=")
        name = name.strip()
        if not has_name:
            if default is not None:
                raise OptionError(
                    f"{option}: two defaults in {shown(raw)} ({default} and {shown(item)}); give one, then "
                    f"component=value items, e.g. {example}"
                )
            default = _checked(value, item, option)
            continue
        if name not in components:
            raise OptionError(
                f"{option}: unknown component {shown(name)} in {shown(item)}; allowed: {', '.join(components)}"
            )
        if name in items:
            raise OptionError(f"{option}: component {name!r} given twice in {shown(raw)}; give each component once")
        items[name] = _checked(value, given.strip(), f"{option} {name}")
    return default, items


def _checked(value: Callable[[object], str], text: str, where: str, suffix: str = "") -> str:
    try:
        return value(text)
    except ValueError as exc:
        raise OptionError(f"{where}: {exc}{suffix}") from None
