"""Runs of decode-only steps between events, priced in one go (a mixin of the replica's Engine).

Between events (an arrival that could join, a finish, a deadline, KV exhaustion) a replica only
decodes: the decode set's running sums (sequences, total context, sequences per block phase) give
every step's KV growth, and the tabulated row of its sequence count gives every step's time, so a
run is priced step by step in plain Python when short and in one vectorised call when long.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from itertools import accumulate
from operator import mul
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine

#: Most decode steps priced in one call.
RUN_CAP = 4096
#: Runs up to this many steps are priced step by step from the tabulated row (no arrays).
SHORT_RUN = 16


class DecodeRuns:
    """``_decode_run`` and its long form (see the module docstring)."""

    def _leap(self: Engine, limit: float) -> bool:
        """Runs of decode-only steps up to the next outside event at ``limit`` (see advance); False if not one
        step fits.  A chain (one replica whose finishes schedule nothing) runs on past finishes."""
        # the run ends where step-by-step pricing would hear of the next outside event, unless arrivals
        # could only queue (see receive)
        shut = self.n_waiting or len(self.running) >= self.max_seqs
        horizon = math.inf if shut and self.solo else limit
        if self.failed or (self.n_waiting and self._head().eligible > self.step_no):
            horizon = self.clock  # one step: the clients that gave up send again, or the head may join
        if self.deadlines:
            horizon = min(horizon, self.deadlines[0][0])
        if not self._decode_run(horizon):
            return False
        # what the next advance(limit) would do, the loop having nothing else to do before it
        while self.chain and self.n_dec and not self.n_waiting and self.clock < limit:
            if not self._decode_run(math.inf if len(self.running) >= self.max_seqs else limit):
                break
        return True

    def _decode_run(self: Engine, horizon: float) -> bool:
        """Price up to the next finish, KV exhaustion or ``horizon`` in one call; False if not one step fits."""
        heap = self.heap
        top = heap[0]
        while top[2] != top[3].ver:
            heapq.heappop(heap)
            top = heap[0]
        d = self.dstep
        k = top[0] - d
        clock = self.clock
        if horizon != math.inf and self.last_step_s > 0:  # a guess; a short guess only costs another call
            guess = int(1.5 * (horizon - clock) / self.last_step_s) + 1
            if guess < 8:
                guess = 8
            if guess < k:
                k = guess
        n = self.n_dec
        rowfn = self.rowfn
        if k <= SHORT_RUN and rowfn is not None:  # step by step from the tabulated row, no arrays
            bs, counts, free = self.bs, self.counts, self.free
            row, inv, last = rowfn(n)
            kv, t = self.kv_sum, clock
            times: list[float] = []
            ends: list[float] = []
            new_blocks: list[int] = []
            grown = 0
            # step i grows the sequences of phase (-(d + i)) mod bs = (p - i) mod bs: negative indices wrap
            p = (-d) % bs
            phases = counts if k <= bs + 1 else counts * -(-k // bs)
            for i in range(k):
                grown += phases[p - i]
                if grown > free:
                    break
                x = kv / n * inv
                j = int(x)
                if j >= last:
                    if x > last + 1e-9:
                        self.pricer.decode_run(n, kv, 1)  # raises: beyond the table
                    j = last - 1
                lo = row[j]
                dt = lo + (x - j) * (row[j + 1] - lo)
                times.append(dt)
                new_blocks.append(grown)
                kv += n
                t += dt
                ends.append(t)
                if t >= horizon:
                    break
        else:
            times, ends, new_blocks = self._long_run(min(k, RUN_CAP), horizon)
        if not times:
            return False
        end = ends[-1]
        span = end - clock
        k = len(times)
        tl, total = self.tl, self.total_blocks
        if k > 1 and ends[-2] - tl.last_t >= tl.min_dt:
            tl.record_run(self, ends, times, new_blocks, clock)
        free = self.free
        running, waiting = len(self.running), self.n_waiting
        tl.c_batch += running * span
        tl.c_kv += (
            (total - free) * span + (times[0] * new_blocks[0] if k == 1 else sum(map(mul, times, new_blocks)))
        ) / total
        tl.c_insys += (running + waiting) * span
        tl.c_queue += waiting * span
        grown = new_blocks[-1]
        if grown:
            self.free = free - grown
            if self.cache is not None:
                self.cache.take(grown)
        self.kv_sum += n * k
        self.dstep = d = d + k
        self.step_no += k
        self.steps += k
        self.clock = end
        self.run_ends = ends
        self.last_step_s = times[-1]
        measured = self.n_measured
        if measured:
            self.itl_s.extend(times)
            self.itl_end.append(end)
            self.itl_w.append(measured)
            self.itl_k.append(k)
        tl.c_tokens += n * k
        if heap[0][0] <= d:
            self._pop_finished(end)
        if end - tl.last_t >= tl.min_dt:
            tl.record(self)
        return True

    def _long_run(self: Engine, k: int, horizon: float) -> tuple[list[float], list[float], list[int]]:
        """Up to k decode steps priced in one call (cut at KV exhaustion and at the first step ending at or
        after ``horizon``): their times, ends and the cumulative new blocks after each."""
        d, n, bs, counts = self.dstep, self.n_dec, self.bs, self.counts
        if k <= bs:
            new_blocks = list(accumulate(counts[(-(d + i)) % bs] for i in range(k)))
        else:
            cycle = list(accumulate(counts[(-(d + i)) % bs] for i in range(bs)))
            new_blocks = [(i // bs) * n + cycle[i % bs] for i in range(k)]
        k = bisect_right(new_blocks, self.free, 0, k)
        if k == 0:
            return [], [], []
        times = self.pricer.decode_run(n, self.kv_sum, k)
        ends = list(accumulate(times, initial=self.clock))
        del ends[0]
        if k > 1 and horizon <= ends[-2]:
            k = 1 + bisect_left(ends, horizon, 0, k - 1)
            del times[k:]
            del ends[k:]
        del new_blocks[k:]
        return times, ends, new_blocks

    def _queued_at_step(self: Engine, t: float) -> int:
        """The step after which step-by-step pricing would have queued a request that arrived at t during the
        last run (one replica leaps past arrivals that can only queue); its records count it from then."""
        ends = self.run_ends
        assert ends is not None
        if not self.solo or len(ends) < 2 or t > ends[-2]:
            return self.step_no
        i = bisect_left(ends, t)
        self.tl.arrived_during(t, ends[i])
        return self.step_no - (len(ends) - 1 - i)
