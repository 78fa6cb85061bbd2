"""Checked numbers of benchmark JSON files: latencies and rates by key, with one-line errors naming the field.

A latency that is NaN, infinite, negative, absurdly large or not a number is refused with the file, the
object (or row) and the key; a missing key, ``null`` or 0 reads as not measured (tools write 0 for a
latency they did not see, e.g. TPOT of one-token outputs).
"""

from __future__ import annotations

from roofline.calibrate.engine.schema import E2EError
from roofline.core.checks import check_number
from roofline.core.errors import OptionError, shown
from roofline.core.units import MS

#: Largest latency (ms), token count or throughput a result may state; beyond any real run.
MAX_MS = 1e10
MAX_TOKENS = 1e15
MAX_RATE_PER_S = 1e9

#: Per-request latency lists a detailed result carries (vLLM ``--save-detailed``, SGLang ``--output-details``), in
#: seconds: one number per request, ``itls`` one list per request.  0 (or null) is a failed request's.
LATENCY_LISTS = ("ttfts", "itls")
#: Longest per-request latency (s) a list may state: the longest time any load runs.
MAX_LIST_S = MAX_MS * MS

#: Benchmark "backend" or engine labels -> the schema's engine names.
ENGINES = {"sglang": "sglang", "vllm": "vllm", "trt": "trtllm", "tensorrtllm": "trtllm", "trtllm": "trtllm"}


def value_of(obj: dict[str, object], key: str, origin: str, maximum: float) -> float | None:
    """A number the file gives for ``key``: None when absent, null or 0 (tools write 0 for 'not
    measured'); else a finite number in (0, maximum], or one line naming the file, object and key."""
    value = obj.get(key)
    if value is None or (type(value) in (int, float) and value == 0):
        return None
    try:
        return check_number(value if not isinstance(value, str) else "", "", minimum=0.0, maximum=maximum)
    except OptionError:
        raise E2EError(
            f"{origin}: key {key!r} is {shown(value)}; allowed: a number > 0 and at most {maximum:g}"
        ) from None


def number(obj: dict[str, object], key: str, where: str, unit: str = "") -> float | None:
    """A count, length or rate under ``key`` (see :func:`value_of`)."""
    return value_of(obj, key, where, MAX_TOKENS)


def latency_ms(obj: dict[str, object], key: str, where: str) -> float | None:
    """A latency in milliseconds under ``key``, in seconds (see :func:`value_of`)."""
    value = value_of(obj, key, where, MAX_MS)
    return None if value is None else value * MS


def engine_name(label: str) -> str:
    """The schema's engine for a benchmark's backend label ('sglang-oai' -> sglang); 'unknown' if none."""
    text = label.strip().lower()
    for prefix, name in ENGINES.items():
        if text.startswith(prefix):
            return name
    return "unknown"


def split_engine(text: str) -> tuple[str, str]:
    """('vllm', '0.15.1') from 'vLLM 0.15.1' or 'vllm/0.15.1'; the version may be empty."""
    parts = text.replace("/", " ").split()
    if not parts:
        return "unknown", ""
    return engine_name(parts[0]), (parts[1] if len(parts) > 1 else "")


def check_latency_lists(obj: dict[str, object], where: str) -> None:
    """The per-request latency lists of a detailed result (:data:`LATENCY_LISTS`), when present: every item a
    finite number of seconds in [0, MAX_LIST_S] (null: not measured), else one line naming the key and request.

    They are not imported (the result's own statistics are), but a file whose requests' latencies are NaN or
    negative is not a measurement to trust."""
    for key in LATENCY_LISTS:
        values = obj.get(key)
        if values is None:
            continue
        if not isinstance(values, list):
            raise E2EError(f"{where}: key {key!r} is {shown(values)}; allowed: a list with one entry per request")
        for n, item in enumerate(values, start=1):
            for value in item if key == "itls" and isinstance(item, list) else [item]:
                ok = value is None or (
                    type(value) in (int, float) and 0.0 <= value <= MAX_LIST_S  # NaN fails both comparisons
                )
                if not ok:
                    raise E2EError(
                        f"{where}: key {key!r} (request {n}) is {shown(value)}; allowed: seconds in [0, {MAX_LIST_S:g}]"
                    )
