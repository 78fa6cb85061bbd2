"""Published tables' labels and cells: GPU and model names -> built-in names, checked CSV numbers."""

from __future__ import annotations

import math

from roofline.calibrate.engine.schema import E2EError

#: GPU names in the published tables -> built-in hardware names (gb200 has no built-in profile).
HARDWARE = {
    "h100-sxm-80gb": "h100-sxm",
    "h100": "h100-sxm",
    "h100-80gb": "h100-sxm",
    "h200": "h200",
    "a100-sxm-80gb": "a100-80gb",
    "a100-80gb": "a100-80gb",
    "a100": "a100-80gb",
    "b200": "b200",
    "gb200": "gb200",
}
#: Model names in the published tables -> catalog names.  TensorRT-LLM's "LLaMA-7B" and
#: "LLaMA-70B" have the Llama 2 shapes (LLaMA-1 had no 70B; its 7B has the same shape).
MODELS = {
    "gpt-j-6b": "gpt-j-6b",
    "llama-7b": "llama-2-7b",
    "llama-70b": "llama-2-70b",
    "falcon-180b": "falcon-180b",
    "llama-3.1-8b": "llama-3.1-8b",
    "llama-3.3-70b": "llama-3.3-70b",
    "llama-3.1-70b": "llama-3.1-70b",
    "llama-3.1-405b": "llama-3.1-405b",
    "llama2-70b": "llama-2-70b",
    "bloom-176b": "bloom-176b",
}


def _key(text: str) -> str:
    return text.strip().lower().replace(" ", "-")


def _hardware(name: str, origin: str) -> str:
    try:
        return HARDWARE[_key(name)]
    except KeyError:
        raise E2EError(f"{origin}: unknown GPU {name!r}; allowed: {', '.join(sorted(HARDWARE))}") from None


def _model(name: str, origin: str) -> str:
    try:
        return MODELS[_key(name)]
    except KeyError:
        raise E2EError(f"{origin}: unknown model {name!r}; allowed: {', '.join(sorted(MODELS))}") from None


def _number(row: dict[str, str], column: str, origin: str, line: int) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise E2EError(f"{origin}: row {line}: column {column!r} is {text!r}; allowed: a number") from None
    if not (math.isfinite(value) and value > 0):
        raise E2EError(f"{origin}: row {line}: column {column!r} is {text!r}; allowed: a number > 0")
    return value


def _int(row: dict[str, str], column: str, origin: str, line: int) -> int:
    value = _number(row, column, origin, line)
    if value != int(value):
        raise E2EError(f"{origin}: row {line}: column {column!r} is {row[column]!r}; allowed: a whole number")
    return int(value)


def _need_columns(header: list[str], columns: tuple[str, ...], origin: str, fmt: str) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise E2EError(f"{origin}: missing column {missing[0]!r} for format {fmt} (needs: {', '.join(columns)})")
