"""The sweep kernel: a block of decode configurations evaluated grid by grid into preallocated columns.

A block is one (chip, dtypes, tp, pp, slice shape) over chips × context × batch.  Each chip count of a
block (a *part*) is one scalar :class:`~roofline.deploy.Deployment`; its points are evaluated as
(context rows × batch columns) grids of at most :data:`CHUNK` points by the step model itself
(:func:`roofline.terms.step_terms`, :func:`roofline.analyses.step.step_memory`), so numpy broadcasting
computes a term that depends on the batch only (weights, matmuls, collectives) once per column and
one that depends on the context only (KV bytes per sequence) once per row.  Nothing here restates
a formula.  The kernel keeps only what a sweep needs: the step time, its bounds, the collectives,
the bound as a small integer code and the total bytes; :class:`SweepColumns` derives the other
columns (per chip, per user, cost, labels) when they are first read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from roofline.analyses.step import step_memory
from roofline.deploy import Deployment
from roofline.formulas import cost, step
from roofline.model import memory
from roofline.terms import decode_work, step_terms
from roofline.terms.step import bound_names

#: Points per grid: large enough that Python overhead is small, small enough for the temporaries to stay cached.
CHUNK = 524288
#: Float columns the kernel writes for every kept point (SI units, as their names say).
FLOAT_COLUMNS = ("step_time_s", "step_time_lower_s", "step_time_upper_s", "comms_time_s", "total_bytes")
#: Integer columns that locate a point: its batch and context on the sweep's axes and its part.
INDEX_COLUMNS = ("batch_index", "context_index", "part")
#: Every stored column (``bound_code``: 0 memory, 1 compute, 2 network, 3 host: :data:`..terms.step.BOUND_NAMES`).
STORED_COLUMNS = (*FLOAT_COLUMNS, "bound_code", *INDEX_COLUMNS)


def index_dtype(n: int) -> np.dtype:
    """The smallest unsigned integer type that indexes ``n`` items."""
    return np.dtype(np.uint16 if n <= 1 << 16 else np.uint32 if n <= 1 << 32 else np.uint64)


@dataclass(frozen=True)
class Tables:
    """What points share, indexed by their stored integers: the sweep's axes and one row per part."""

    batch: np.ndarray
    context: np.ndarray
    part_block: np.ndarray
    part_chips: np.ndarray
    part_tp: np.ndarray
    part_pp: np.ndarray
    part_price: np.ndarray
    part_hbm_bytes: np.ndarray
    part_ep: np.ndarray | None = None
    part_dp: np.ndarray | None = None


class PointStore:
    """Preallocated stored columns of kept points; ``append`` writes one grid's kept points at the cursor.

    ``flush`` (optional) is called when a grid would not fit: it consumes ``columns()`` and the
    cursor restarts at 0 (a streaming frontier); without it the capacity must bound every point.
    """

    def __init__(
        self,
        capacity: int,
        n_batch: int,
        n_context: int,
        n_parts: int,
        flush: Callable[[PointStore], None] | None = None,
    ) -> None:
        capacity = max(int(capacity), 0)
        self.arrays: dict[str, np.ndarray] = {name: np.empty(capacity) for name in FLOAT_COLUMNS}
        self.arrays["bound_code"] = np.empty(capacity, np.int8)
        for name, n in zip(INDEX_COLUMNS, (n_batch, n_context, n_parts), strict=True):
            self.arrays[name] = np.empty(capacity, index_dtype(n))
        self.capacity, self.size, self.flush = capacity, 0, flush

    def columns(self) -> dict[str, np.ndarray]:
        """Views of the filled part of every stored column."""
        return {name: arr[: self.size] for name, arr in self.arrays.items()}

    def trimmed(self) -> dict[str, np.ndarray]:
        """The filled columns; copied when under half the capacity (frees the rest)."""
        cols = self.columns()
        return {k: v.copy() for k, v in cols.items()} if 2 * self.size < self.capacity else cols

    def append(
        self,
        part: int,
        rows: tuple[int, int],
        cols: tuple[int, int],
        keep: np.ndarray,
        values: tuple[np.ndarray, ...],
        code: np.ndarray,
    ) -> int:
        """Write the kept points of a (rows × cols) grid; returns how many were kept."""
        shape = (rows[1] - rows[0], cols[1] - cols[0])
        every = bool(keep.all())
        n = shape[0] * shape[1] if every else int(np.count_nonzero(keep))
        if self.size + n > self.capacity:
            if self.flush is None:
                raise RuntimeError("sweep kernel: point store overflow (capacity from the screen was too small)")
            self.flush(self)
            self.size = 0
            if n > self.capacity:
                raise RuntimeError("sweep kernel: one grid exceeds the streaming buffer")
        at = slice(self.size, self.size + n)
        a = self.arrays
        batch_ix = np.arange(cols[0], cols[1])[None, :]
        context_ix = np.arange(rows[0], rows[1])[:, None]
        for name, v in zip(
            (*FLOAT_COLUMNS, "bound_code", "batch_index", "context_index"),
            (*values, code, batch_ix, context_ix),
            strict=True,
        ):
            if every:
                a[name][at].reshape(shape)[...] = v
            else:
                a[name][at] = np.broadcast_to(v, shape)[keep]
        a["part"][at] = part
        self.size += n
        return n


def grids(counts: np.ndarray, chunk: int = CHUNK) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """((row0, row1), (col0, col1)) of the grids covering, in each row i, columns 0..counts[i]-1.

    Consecutive rows join a grid while it stays within ``chunk`` points and each row needs at
    least half the grid's width (so at most half of a grid is outside the rows' counts); a row
    wider than ``chunk`` is split into column ranges.  Order: rows, then columns (the sweep's).
    """
    n, i = counts.size, 0
    while i < n:
        top = int(counts[i])
        if top <= 0:
            i += 1
            continue
        if top >= chunk:
            for c0 in range(0, top, chunk):
                yield (i, i + 1), (c0, min(top, c0 + chunk))
            i += 1
            continue
        j = i + 1
        while j < n and (j - i + 1) * top <= chunk and top >= int(counts[j]) and 2 * int(counts[j]) >= top:
            j += 1
        yield (i, j), (0, top)
        i = j


@functools.cache
def settle_allocator() -> None:
    """Allocate and free one 16 MB block, once per process.

    glibc's malloc then raises its dynamic mmap threshold to 16 MB (and its trim threshold to
    32 MB), so the few dozen temporaries of each grid are served from its heap instead of the
    heap being trimmed and page-faulted again at every grid (which cost more than the arithmetic).
    A process that freed one large array behaves the same; elsewhere this is a no-op.
    """
    np.empty(1 << 21)


def evaluate_part(
    dep: Deployment,
    batch: np.ndarray,
    context: np.ndarray,
    counts: np.ndarray,
    store: PointStore,
    part: int,
    chunk: int = CHUNK,
    row_kept: np.ndarray | None = None,
) -> tuple[int, str]:
    """Append the points of one chip count that fit: batch[:counts[i]] at each context[i].

    ``counts`` (per context) is the screen's upper bound; the step's own ``fits`` drops the rest.
    Returns (points kept, the collectives' source); ``row_kept`` (per context, when given) is
    increased by the points kept at each context.
    """
    settle_allocator()
    kept, comms_source = 0, ""
    for rows, cols in grids(counts, chunk):
        b = batch[None, cols[0] : cols[1]]
        s = context[rows[0] : rows[1], None]
        t = step_terms(dep, decode_work(b, s))
        mem = step_memory(dep, b, s)
        within = counts[rows[0] : rows[1]]
        if within.min() >= cols[1]:  # every row's count reaches past the grid: only the fit decides
            keep = np.broadcast_to(mem.fits, (within.size, cols[1] - cols[0]))
        else:
            keep = np.logical_and(mem.fits, np.arange(cols[0], cols[1])[None, :] < within[:, None])
        n = store.append(
            part, rows, cols, keep, (t.time_s, t.lower_s, t.upper_s, t.comms_lower_s, mem.total_bytes), t.bound_code
        )
        if row_kept is not None:
            row_kept[rows[0] : rows[1]] += cols[1] - cols[0] if n == keep.size else np.count_nonzero(keep, axis=1)
        kept += n
        comms_source = comms_source or t.sources.get("comms", "")
    if not comms_source:
        comms_source = step_terms(dep, decode_work(1.0, context[:1])).sources.get("comms", "")
    return kept, comms_source


#: Columns :class:`SweepColumns` derives from the stored ones and the tables.
DERIVED = (
    "chips",
    "tp",
    "pp",
    "ep",
    "attention_dp",
    "batch",
    "context",
    "block",
    "bound",
    "tokens_per_s",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_user",
    "cost_per_million_tokens",
    "hbm_capacity_bytes",
)


class SweepColumns(Mapping[str, np.ndarray]):
    """A sweep's per-point columns: the kernel's stored ones, the rest derived on first read (and kept).

    ``chips``/``tp``/``pp``/``block`` come from the point's part, ``batch``/``context`` from the
    axes, ``bound`` from its code; throughput, cost and HBM capacity from the step's estimators
    (:func:`roofline.formulas.step.tokens_per_s`, :func:`roofline.formulas.cost.cost_per_million_tokens`,
    :func:`roofline.model.memory.hbm_capacity_bytes`).
    """

    def __init__(self, stored: Mapping[str, np.ndarray], tables: Tables, names: tuple[str, ...]) -> None:
        self.stored = dict(stored)
        self.tables = tables
        self.names = names
        self._derived: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    @property
    def size(self) -> int:
        """Number of points."""
        return int(self.stored["step_time_s"].shape[0])

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.stored and name in self.names:
            return self.stored[name]
        if name not in self.names:
            raise KeyError(name)
        if name not in self._derived:
            self._derived[name] = self._derive(name)
        return self._derived[name]

    def _part(self, table: np.ndarray) -> np.ndarray:
        return table[self.stored["part"]]

    def _derive(self, name: str) -> np.ndarray:
        t, s = self.tables, self.stored
        ones = np.ones_like(t.part_tp)
        by_part = {
            "chips": t.part_chips,
            "tp": t.part_tp,
            "pp": t.part_pp,
            "ep": ones if t.part_ep is None else t.part_ep,
            "attention_dp": ones if t.part_dp is None else t.part_dp,
            "block": t.part_block,
        }
        if name in by_part:
            return self._part(by_part[name])
        if name == "batch":
            return t.batch[s["batch_index"]]
        if name == "context":
            return t.context[s["context_index"]]
        if name == "bound":
            return bound_names(s["bound_code"])
        if name == "tokens_per_s":  # batch and chips gathered as floats: the same values, one pass fewer
            return step.tokens_per_s(t.batch.astype(float)[s["batch_index"]], s["step_time_s"])
        if name == "tokens_per_s_per_user":
            return 1.0 / s["step_time_s"]
        chips = self._part(t.part_chips.astype(float))
        if name == "tokens_per_s_per_chip":
            return self["tokens_per_s"] / chips
        if name == "cost_per_million_tokens":
            return cost.cost_per_million_tokens(self._part(t.part_price), chips, self["tokens_per_s"])
        if name == "hbm_capacity_bytes":
            return memory.hbm_capacity_bytes(chips, self._part(t.part_hbm_bytes))
        raise KeyError(name)

    def select(self, index: np.ndarray) -> SweepColumns:
        """The points at ``index`` (indices or a boolean mask); derived columns are not carried."""
        return SweepColumns({k: v[index] for k, v in self.stored.items()}, self.tables, self.names)

    def nbytes(self) -> int:
        """Bytes held by the stored and derived columns."""
        return sum(v.nbytes for v in (*self.stored.values(), *self._derived.values()))


def concat(parts: list[SweepColumns]) -> SweepColumns:
    """One SweepColumns of several over the same tables, in order."""
    first = parts[0]
    stored = {k: np.concatenate([p.stored[k] for p in parts]) for k in first.stored}
    return SweepColumns(stored, first.tables, first.names)
