"""Reading a request trace (CSV): the input boundary of ``simulate --trace``.

Header ``arrival_time_s,input_len,output_len`` and optionally ``prefix_id`` (a name shared by
requests whose prompts start alike), ``prefix_len`` (how many tokens they share; default: the
whole prompt) and ``session_id`` (a multi-turn conversation: each request's prompt continues the
previous one of its session); other columns are ignored (a trace from elsewhere may carry ids).
At most :data:`MAX_TRACE_BYTES` and :data:`MAX_TRACE_ROWS` rows (a simulation's
:data:`~roofline.analyses.simulate.load.MAX_REQUESTS`); a bad cell is one line naming the file,
the line, the column, the value and what is allowed (:func:`roofline.core.tables.read_table`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from roofline.analyses.simulate.load import MAX_REQUESTS, Trace
from roofline.core.errors import OptionError, RooflineError
from roofline.core.tables import Column, read_table

TRACE_FIELDS = ("arrival_time_s", "input_len", "output_len")
#: Largest trace file read, after gzip decompression (a million rows with ids fit within it).
MAX_TRACE_BYTES = 128 * 2**20
#: Most rows a trace may hold (one request each; read at each call, so a test may lower it).
MAX_TRACE_ROWS = MAX_REQUESTS
COLUMNS = (
    Column("arrival_time_s", "seconds", minimum=0.0),
    Column("input_len", "count"),
    Column("output_len", "count"),
    Column("prefix_id", "name", required=False, default=""),
    Column("prefix_len", "count", minimum=0, required=False, default=-1),
    Column("session_id", "name", required=False, default=""),
)


def read_trace(path: str | Path) -> Trace:
    """A trace file -> :class:`Trace` sorted by arrival (stable), or a one-line :class:`RooflineError`."""
    try:
        rows, size = MAX_TRACE_ROWS, MAX_TRACE_BYTES
        table = read_table(path, COLUMNS, max_rows=rows, what="trace", kind="trace", max_bytes=size, extra_columns=True)
    except RooflineError as exc:
        raise OptionError(str(exc), parameters=("trace",)) from None
    cols = table.columns
    t = np.asarray(cols["arrival_time_s"], dtype=float)
    inp = np.asarray(cols["input_len"], dtype=np.int64)
    out = np.asarray(cols["output_len"], dtype=np.int64)
    pid = _ids(cols["prefix_id"])
    sid = _ids(cols["session_id"])
    plen = np.asarray(cols["prefix_len"], dtype=np.int64)
    if "prefix_len" in table.header and "prefix_id" not in table.header:
        raise OptionError(f"trace {path}: prefix_len needs a prefix_id column", parameters=("trace",))
    plen = np.where(pid < 0, 0, np.where(plen < 0, inp, plen))
    long = np.nonzero(plen > inp)[0]
    if long.size:
        i = int(long[0])
        raise OptionError(
            f"trace {path}: line {table.lines[i]}: prefix_len {int(plen[i])} is longer than its prompt "
            f"(input_len {int(inp[i])}); allowed: 0..input_len",
            parameters=("trace",),
        )
    order = np.argsort(t, kind="stable")
    has_prefix, has_session = "prefix_id" in table.header, "session_id" in table.header
    return Trace(
        t[order],
        inp[order],
        out[order],
        source=str(path),
        prefix_id=pid[order] if has_prefix else None,
        prefix_len=plen[order] if has_prefix else None,
        session_id=sid[order] if has_session else None,
        lines=np.asarray(table.lines, dtype=np.int64)[order],
    )


def _ids(names: list[object]) -> np.ndarray:
    """A small integer for each distinct non-empty name, in order of first use (-1 for none)."""
    seen: dict[object, int] = {}
    return np.array([seen.setdefault(n, len(seen)) if n else -1 for n in names], dtype=np.int64)
