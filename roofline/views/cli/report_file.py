"""``roofline report --scenario FILE``: the report's options read from a YAML file.

The file is a mapping whose keys are the report's flags without their dashes (``models``,
``hardware``, ``tpot_slo``, ``input_len`` ...; ``kv_dtypes``, ``prices``, ``ttft_slo_s`` and
``tpot_slo_s`` are accepted too).  A list is written as a YAML list or as the flag's comma text,
prices as a mapping or the flag's text, durations as numbers of seconds or text (``30ms``);
``compare: [A, B]`` compares two entries.  Each value goes through the flag's own check, so a bad
one is refused as the flag would be, naming the file and the key.  Flags given on the command line
win over the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from roofline.core.checks import check_flag
from roofline.core.errors import RooflineError, shown
from roofline.core.files import MAX_SPEC_FILE_BYTES, read_text_limited
from roofline.specs.files import check_tree, load_yaml_text
from roofline.views.cli import values

Parser = Callable[[object], object]
#: File key -> (the report command's parameter, the flag's parser; None: the flag's text, lists joined).
KEYS: dict[str, tuple[str, Parser | None]] = {
    "models": ("models", None),
    "hardware": ("hardware", None),
    "weights": ("weights", None),
    "kv_dtype": ("kv_dtype", None),
    "kv_dtypes": ("kv_dtype", None),
    "context": ("context", None),
    "chips": ("chips", None),
    "batch": ("batch", None),
    "tp": ("tp", None),
    "pp": ("pp", None),
    "price": ("price", None),
    "prices": ("price", None),
    "traces": ("traces", None),
    "compute_dtype": ("compute_dtype", None),
    "engine": ("engine", None),
    "memory_utilization": ("memory_utilization", values.fraction),
    "input_len": ("input_len", values.count()),
    "output_len": ("output_len", values.count()),
    "ttft_slo": ("ttft_slo", values.seconds),
    "ttft_slo_s": ("ttft_slo", values.seconds),
    "tpot_slo": ("tpot_slo", values.seconds),
    "tpot_slo_s": ("tpot_slo", values.seconds),
    "tails": ("tails", lambda v: check_flag(v, "")),
    "scale_out_tp": ("scale_out_tp", lambda v: check_flag(v, "")),
    "compare": ("entries", None),
}


def _text(value: object, where: str) -> str:
    """A flag's text from a YAML value: a scalar as written, a list joined by commas, a mapping as k=v."""
    if isinstance(value, bool) or value is None:
        raise RooflineError(f"{where}: expected text, a number or a list (got {shown(value)})")
    if isinstance(value, (list, tuple)):
        if not value or any(isinstance(v, (list, tuple, dict, bool)) or v is None for v in value):
            raise RooflineError(f"{where}: expected a list of names or numbers (got {shown(value)})")
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={_text(v, where)}" for k, v in value.items())
    return str(value)


def read_report_file(path: Path) -> dict[str, object]:
    """The report parameters a scenario file sets: {parameter: value}, each checked as its flag."""
    where = f"--scenario {path}"
    try:
        data = load_yaml_text(read_text_limited(path, MAX_SPEC_FILE_BYTES, RooflineError, "scenario"), where)
        check_tree(data, where)
    except RooflineError as exc:
        message = str(exc).removeprefix(where).removeprefix(str(path)).lstrip(": ")
        raise RooflineError(f"{where}: {message}") from None
    out: dict[str, object] = {}
    for key, value in data.items():
        if key not in KEYS:
            raise RooflineError(f"{where}: unknown key {shown(key)}; allowed: {', '.join(KEYS)}")
        param, parser = KEYS[key]
        if param in out:
            raise RooflineError(f"{where}: {key} sets {param.replace('_', '-')} a second time")
        if param == "entries":
            if not isinstance(value, list):
                raise RooflineError(f"{where}: compare: expected a list of two entries (got {shown(value)})")
            out[param] = [_text(v, f"{where}: compare") for v in value]
            continue
        try:
            out[param] = _text(value, f"{where}: {key}") if parser is None else parser(value)
        except (ValueError, RooflineError) as exc:
            raise RooflineError(f"{where}: {key}: {str(exc).removeprefix(': ')}") from None
    return out
