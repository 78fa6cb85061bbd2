"""A replica's state over time: cumulative integrals and a thinned record of them.

The integrals (sequences in the batch, KV fraction used, requests in the system and queued, tokens
produced) are kept exactly; they are recorded at segment ends, at most :data:`MAX_RECORDS` times
(older records are halved when full), so window means and the time series cost bounded memory
whatever the run's length.
"""

from __future__ import annotations

from array import array
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
        c = self.cols
        self.last_t = e.clock
        c[0].append(e.clock)
        c[1].append(self.c_batch)
        c[2].append(self.c_kv)
        c[3].append(self.c_insys)
        c[4].append(self.c_queue)
        c[5].append(self.c_tokens)
        c[6].append(len(e.running))
        c[7].append(e.n_waiting)
        c[8].append((e.total_blocks - e.free) / e.total_blocks)
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
