"""A replica's state over time: cumulative integrals and a thinned record of them.

The integrals (sequences in the batch, KV fraction used, requests in the system and queued, tokens
produced) are kept exactly; they are recorded at segment ends, at most :data:`MAX_RECORDS` times
(older records are halved when full), so window means and the time series cost bounded memory
whatever the run's length.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine

#: Most records kept per replica (columns of 8-byte floats).
MAX_RECORDS = 1 << 13
#: Columns: time, cumulative batch, KV fraction, in system, queue, tokens; then running, waiting, KV fraction.
COLUMNS = ("time", "c_batch", "c_kv", "c_insys", "c_queue", "c_tokens", "running", "waiting", "kv_use")
BATCH, KV, IN_SYSTEM, QUEUE, TOKENS, RUNNING, WAITING, KV_USE = range(1, 9)


class Timeline:
    """Cumulative integrals of one replica and their thinned record."""

    def __init__(self, min_dt: float = 0.0) -> None:
        self.c_batch = self.c_kv = self.c_insys = self.c_queue = self.c_tokens = 0.0
        self.cols = [array("d", [0.0]) for _ in COLUMNS]
        self.min_dt = min_dt
        self.last_t = 0.0

    def integrate(self, e: Engine, dt: float) -> None:
        """Add ``dt`` seconds of the replica's present state."""
        running, waiting = len(e.running), e.n_waiting
        self.c_batch += running * dt
        self.c_kv += dt * (e.total_blocks - e.free) / e.total_blocks
        self.c_insys += (running + waiting) * dt
        self.c_queue += waiting * dt

    def record(self, e: Engine, force: bool = False) -> None:
        """Record the state at the replica's clock (skipped when closer than ``min_dt`` to the last record)."""
        if not force and e.clock - self.last_t < self.min_dt:
            return
        running, waiting, free, total = len(e.running), e.n_waiting, e.free, e.total_blocks
        self._append(
            e.clock,
            (self.c_batch, self.c_kv, self.c_insys, self.c_queue, self.c_tokens),
            (running, waiting, (total - free) / total),
        )

    def record_run(
        self, e: Engine, ends: Sequence[float], times: Sequence[float], grown: Sequence[int], clock0: float
    ) -> None:
        """The records step-by-step pricing makes within a run of decode steps (before its last): at the end of
        each step at least ``min_dt`` after the last record, with the run's constant batch and queue, its
        KV blocks ``grown`` beyond those used at its start and n tokens a step (e's sums: at the run's start)."""
        last = len(ends) - 1
        if last < 1 or ends[last - 1] - self.last_t < self.min_dt:
            return
        running, waiting, n, total = len(e.running), e.n_waiting, e.n_dec, e.total_blocks
        used0 = total - e.free
        c_batch, c_kv, c_insys, c_queue, c_tokens = self.c_batch, self.c_kv, self.c_insys, self.c_queue, self.c_tokens
        lo = acc = 0
        j = -1  # acc = Σ_{m <= j} times[m]·grown[m]
        while True:
            i = bisect_left(ends, self.last_t + self.min_dt, lo, last)
            while i > lo and ends[i - 1] - self.last_t >= self.min_dt:
                i -= 1
            while i < last and ends[i] - self.last_t < self.min_dt:
                i += 1
            if i >= last:
                return
            while j < i:
                j += 1
                acc += times[j] * grown[j]
            span = ends[i] - clock0
            self._append(
                ends[i],
                (
                    c_batch + running * span,
                    c_kv + (used0 * span + acc) / total,
                    c_insys + (running + waiting) * span,
                    c_queue + waiting * span,
                    c_tokens + n * (i + 1),
                ),
                (running, waiting, (used0 + grown[i]) / total),
            )
            lo = i + 1

    def arrived_during(self, t: float, seen: float) -> None:
        """A request arrived at t during a run of steps and step-by-step pricing would have queued it at
        ``seen``: the records after that count it waiting from t."""
        c = self.cols
        times, insys, queue, waiting = c[0], c[IN_SYSTEM], c[QUEUE], c[WAITING]
        j = len(times) - 1
        while j >= 0 and times[j] > seen:
            insys[j] += times[j] - t
            queue[j] += times[j] - t
            waiting[j] += 1
            j -= 1

    def _append(self, t: float, sums: Sequence[float], state: Sequence[float]) -> None:
        c = self.cols
        self.last_t = t
        c[0].append(t)
        c[1].append(sums[0])
        c[2].append(sums[1])
        c[3].append(sums[2])
        c[4].append(sums[3])
        c[5].append(sums[4])
        c[6].append(state[0])
        c[7].append(state[1])
        c[8].append(state[2])
        if len(c[0]) > MAX_RECORDS:
            self._halve()

    def _halve(self) -> None:
        """Keep every other record (the first and last always) and space later ones twice as far."""
        n = len(self.cols[0])
        keep_last = (n - 1) % 2 != 0
        for i, col in enumerate(self.cols):
            thinned = col[::2]
            if keep_last:
                thinned.append(col[-1])
            self.cols[i] = thinned
        t = self.cols[0]
        self.min_dt = max(2 * self.min_dt, (t[-1] - t[0]) / MAX_RECORDS)

    def as_array(self) -> np.ndarray:
        """The records as an (n, 9) array, columns as :data:`COLUMNS`."""
        return np.stack([np.frombuffer(c, dtype=float) for c in self.cols], axis=1)
