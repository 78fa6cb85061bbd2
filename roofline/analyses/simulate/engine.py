"""One serving replica: vLLM-style continuous batching over a paged KV cache, stepped whole batches at a time.

Each step (modelled on vLLM V1's scheduler): the running decodes take one token each from
the ``max_num_batched_tokens`` budget, then running partial prefills and then waiting
requests (FCFS, up to ``max_num_seqs``) fill the rest with prompt chunks.  KV lives in
blocks of ``block_size`` tokens; when a decode needs a block and none is free, the newest
running request is preempted by recompute (its blocks freed, it re-queues at the front to
prefill its prompt plus generated tokens).  Runs of pure-decode steps between events are
priced in one vectorised cost call: the decode set is kept as running sums (sequences,
total context, sequences per block phase) and a heap of finishing step numbers.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass
from itertools import accumulate
from operator import mul

import numpy as np

from roofline.analyses.simulate.cost import StepCost
from roofline.analyses.simulate.state import RequestTable
from roofline.core.errors import RooflineError

#: Most decode steps priced in one vectorised call.
RUN_CAP = 4096


@dataclass(frozen=True)
class SchedulerConfig:
    """vLLM engine arguments the simulator honours."""

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    prefix_hit_rate: float = 0.0

    def __post_init__(self) -> None:
        if self.max_num_seqs < 1 or self.block_size < 1:
            raise RooflineError("--max-num-seqs and --block-size must be at least 1")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise RooflineError(
                f"--max-num-batched-tokens ({self.max_num_batched_tokens}) must be at least "
                f"--max-num-seqs ({self.max_num_seqs}), as vLLM requires"
            )
        if not 0.0 <= self.prefix_hit_rate < 1.0:
            raise RooflineError(f"--prefix-hit-rate must be in [0, 1) (got {self.prefix_hit_rate})")


def blocks_for(tokens: int, block_size: int) -> int:
    """KV blocks holding ``tokens`` tokens: ceil(tokens / block_size)."""
    return -(-tokens // block_size)


class Engine:
    """A replica's scheduler state, clock and cumulative records (see the module docstring)."""

    def __init__(
        self, cost: StepCost, config: SchedulerConfig, table: RequestTable, prefill_only: bool = False
    ) -> None:
        self.cost, self.table, self.prefill_only = cost, table, prefill_only
        self.bs = config.block_size
        self.max_seqs, self.max_tokens = config.max_num_seqs, config.max_num_batched_tokens
        self.hit_rate = config.prefix_hit_rate
        self.total_blocks = int(cost.kv_capacity_tokens) // self.bs
        if self.total_blocks < 1:
            raise RooflineError(
                f"the KV cache holds {cost.kv_capacity_tokens} tokens, less than one "
                f"block of {self.bs}: the weights leave no room"
            )
        self.free = self.total_blocks
        self.clock = 0.0
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}  # admission order; the newest is preempted first
        self.prefilling: list[int] = []
        self.counts = [0] * self.bs  # decoding sequences by block phase (kv0 - d0) mod block_size
        self.n_dec = self.n_measured = self.kv_sum = self.step_no = 0
        self.heap: list[tuple[int, int, int]] = []  # (step number after which it finishes, id, version)
        self.preemptions = self.steps = self.last_done = 0
        self.last_step_s = 0.0
        self.finished: list[int] = []
        self.handoffs: list[int] = []
        self.itl_values: list[list[float] | float] = []
        self.itl_weights: list[np.ndarray | float] = []
        self.gaps: list[float] = []  # token gaps across a preemption (measured requests)
        # Cumulative integrals over time: batch, KV fraction, in system, queue; tokens produced.
        self.c_batch = self.c_kv = self.c_insys = self.c_queue = 0.0
        self.c_tokens = 0
        self.records: list[tuple[float, ...]] = [(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0)]

    # ------------------------------------------------------------------ driver interface
    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    def fits(self, tokens: int) -> bool:
        """Whether one request needing ``tokens`` tokens of KV fits the whole cache."""
        return blocks_for(tokens, self.bs) <= self.total_blocks

    def outstanding_at(self, t: float) -> int:
        """Requests routed here and not finished by time t (the last step's finishes count after it ends)."""
        return len(self.running) + len(self.waiting) + (self.last_done if self.clock > t else 0)

    def receive(self, rid: int, t: float) -> None:
        """A request routed here at time t (mid-step arrivals count as in the system from t)."""
        if not self.has_work() and self.clock < t:
            self.clock = t
            self._record()
        elif self.clock > t:
            self.c_insys += self.clock - t
            self.c_queue += self.clock - t
        self.waiting.append(rid)

    def advance(self, limit: float) -> None:
        """One segment: a run of pure-decode steps (cut at the first step ending at or after
        ``limit`` when a new arrival could join), else one mixed step."""
        self.last_done = 0
        if self.n_dec and not self.prefilling and not self._admissible():
            if self._decode_run(limit if not self.waiting and len(self.running) < self.max_seqs else math.inf):
                return
        self._step()

    # ------------------------------------------------------------------ one mixed step
    def _step(self) -> None:
        t, bs, now = self.table, self.bs, self.clock
        self._admit_ready()
        need = 0
        while self.n_dec:
            need = self.counts[(-self.step_no) % bs]
            if need <= self.free:
                break
            self._preempt_newest(now)
            need = 0
        self.free -= need
        n_dec, kv, measured = self.n_dec, self.kv_sum, self.n_measured
        budget = self.max_tokens - n_dec
        chunks: list[tuple[int, int]] = []
        tokens, pairs = 0, 0.0
        for rid in self.prefilling:
            if budget <= 0:
                break
            comp = t.comp[rid]
            c = min(t.target[rid] - comp, budget)
            held = blocks_for(comp, bs)
            more = blocks_for(comp + c, bs) - held
            if more > self.free:  # take what the free blocks hold
                c, more = (held + self.free) * bs - comp, self.free
                if c <= 0:
                    continue
            self.free -= more
            chunks.append((rid, c))
            tokens += c
            pairs += c * (comp + (c + 1) / 2)
            budget -= c
        while budget > 0 and self.waiting and len(self.running) < self.max_seqs:
            rid = self.waiting[0]
            if t.ready[rid]:
                break
            comp = self._cached(rid)
            c = min(t.target[rid] - comp, budget)
            more = blocks_for(comp + c, bs)
            if more > self.free:
                break
            self.waiting.popleft()
            self.running[rid] = None
            self.prefilling.append(rid)
            t.comp[rid] = comp
            self.free -= more
            chunks.append((rid, c))
            tokens += c
            pairs += c * (comp + (c + 1) / 2)
            budget -= c
        if not n_dec and not chunks:
            if not self.running:
                raise RuntimeError("simulator: a replica with queued work could schedule nothing")
            self._preempt_newest(now)  # everything stalled on KV: free the newest and retry
            return
        step_s = float(self.cost.step_time_s(n_dec, kv, tokens, pairs))
        end = now + step_s
        self._integrate(step_s, self.total_blocks - self.free)
        self.clock, self.last_step_s = end, step_s
        self.kv_sum += n_dec
        self.step_no += 1
        self.steps += 1
        produced = n_dec
        if measured:
            self.itl_values.append(step_s)
            self.itl_weights.append(float(measured))
        for rid, c in chunks:
            t.comp[rid] += c
            if t.comp[rid] == t.target[rid]:
                self.prefilling.remove(rid)
                produced += 1
                self._prefill_done(rid, end)
        self._pop_finished(end)
        self.c_tokens += produced
        self._record()

    # ------------------------------------------------------------------ a run of decode steps
    def _decode_run(self, limit: float) -> bool:
        """Price up to the next finish, KV exhaustion or ``limit`` in one call; False if not one step fits."""
        t, heap, bs, counts = self.table, self.heap, self.bs, self.counts
        while heap[0][2] != t.ver[heap[0][1]]:
            heapq.heappop(heap)
        k = min(heap[0][0] - self.step_no, RUN_CAP)
        if limit != math.inf and self.last_step_s > 0:  # a guess; a short guess only costs another call
            k = min(k, max(8, int(1.5 * (limit - self.clock) / self.last_step_s) + 1))
        d = self.step_no
        new_blocks = list(accumulate(counts[(-(d + i)) % bs] for i in range(k)))
        k = bisect_right(new_blocks, self.free, 0, k)
        if k == 0:
            return False
        n = self.n_dec
        priced = self.cost.step_time_s(n, self.kv_sum + n * np.arange(k), 0, 0)
        times = priced.tolist() if np.ndim(priced) else [float(priced)] * k
        ends = list(accumulate(times, initial=self.clock))[1:]
        if k > 1 and limit <= ends[-2]:
            k = 1 + bisect_left(ends, limit, 0, k - 1)
            times = times[:k]
        used0 = self.total_blocks - self.free
        span = ends[k - 1] - self.clock
        running, waiting = len(self.running), len(self.waiting)
        self.c_batch += running * span
        self.c_kv += (used0 * span + sum(map(mul, times, new_blocks[:k]))) / self.total_blocks
        self.c_insys += (running + waiting) * span
        self.c_queue += waiting * span
        self.free -= new_blocks[k - 1]
        self.kv_sum += n * k
        self.step_no += k
        self.steps += k
        self.clock, self.last_step_s = ends[k - 1], times[-1]
        if self.n_measured:
            self.itl_values.append(times)
            self.itl_weights.append(float(self.n_measured))
        self.c_tokens += n * k
        self._pop_finished(self.clock)
        self._record()
        return True

    # ------------------------------------------------------------------ bookkeeping
    def _admissible(self) -> bool:
        """Whether the head of the queue could join now (it stays blocked while only decodes run)."""
        if not self.waiting or len(self.running) >= self.max_seqs:
            return False
        t, rid = self.table, self.waiting[0]
        if t.ready[rid]:
            return blocks_for(t.comp[rid], self.bs) <= self.free
        comp = self._cached(rid)
        c = min(t.target[rid] - comp, self.max_tokens - self.n_dec)
        return c > 0 and blocks_for(comp + c, self.bs) <= self.free

    def _cached(self, rid: int) -> int:
        """Prompt tokens served by the prefix cache: floor(hit rate·I), at least one token computed."""
        t = self.table
        return min(int(self.hit_rate * t.inp[rid]), t.target[rid] - 1)

    def _admit_ready(self) -> None:
        """Requests whose KV arrived from a prefill replica join the decode set directly."""
        t = self.table
        while self.waiting and len(self.running) < self.max_seqs and t.ready[self.waiting[0]]:
            rid = self.waiting[0]
            need = blocks_for(t.comp[rid], self.bs)
            if need > self.free:
                return
            self.waiting.popleft()
            self.free -= need
            self.running[rid] = None
            self._join_decode(rid, t.comp[rid])

    def _join_decode(self, rid: int, kv0: int) -> None:
        t = self.table
        t.kv0[rid], t.d0[rid], t.decoding[rid] = kv0, self.step_no, True
        self.counts[(kv0 - self.step_no) % self.bs] += 1
        self.kv_sum += kv0
        self.n_dec += 1
        self.n_measured += t.measured[rid]
        heapq.heappush(self.heap, (self.step_no + t.out[rid] - t.gen[rid], rid, t.ver[rid]))

    def _leave_decode(self, rid: int) -> int:
        """Remove a decoding request from the running sums; returns the KV blocks it held."""
        t = self.table
        kv = t.kv0[rid] + self.step_no - t.d0[rid]
        self.counts[(t.kv0[rid] - t.d0[rid]) % self.bs] -= 1
        self.kv_sum -= kv
        self.n_dec -= 1
        self.n_measured -= t.measured[rid]
        t.decoding[rid] = False
        t.ver[rid] += 1
        return blocks_for(kv, self.bs)

    def _prefill_done(self, rid: int, end: float) -> None:
        """The chunk that completes a prefill samples the next token."""
        t = self.table
        if self.prefill_only:
            self.free += blocks_for(t.comp[rid], self.bs)
            del self.running[rid]
            self.handoffs.append(rid)
            return
        if t.gen[rid] == 0:
            t.first[rid] = end
        elif t.measured[rid]:
            self.gaps.append(end - t.last_tok[rid])
        t.gen[rid] += 1
        if t.gen[rid] >= t.out[rid]:
            self.free += blocks_for(t.comp[rid], self.bs)
            del self.running[rid]
            self._finish(rid, end)
        else:
            self._join_decode(rid, t.comp[rid])

    def _pop_finished(self, end: float) -> None:
        t, heap = self.table, self.heap
        while heap and heap[0][0] <= self.step_no:
            _, rid, ver = heapq.heappop(heap)
            if ver == t.ver[rid]:
                self.free += self._leave_decode(rid)
                t.gen[rid] = t.out[rid]
                del self.running[rid]
                self._finish(rid, end)

    def _finish(self, rid: int, end: float) -> None:
        self.table.finish[rid] = end
        self.finished.append(rid)
        self.last_done += 1

    def _preempt_newest(self, now: float) -> None:
        """Preemption by recompute: free the newest running request's KV, re-queue it at the front."""
        t = self.table
        rid = next(reversed(self.running))
        del self.running[rid]
        if t.decoding[rid]:
            self.free += self._leave_decode(rid)
            t.last_tok[rid] = now
        else:
            self.free += blocks_for(t.comp[rid], self.bs)
            self.prefilling.remove(rid)
        t.comp[rid], t.ready[rid] = 0, False
        t.target[rid] = t.inp[rid] + t.gen[rid]
        self.waiting.appendleft(rid)
        self.preemptions += 1

    def _integrate(self, dt: float, used_blocks: int) -> None:
        running, waiting = len(self.running), len(self.waiting)
        self.c_batch += running * dt
        self.c_kv += dt * used_blocks / self.total_blocks
        self.c_insys += (running + waiting) * dt
        self.c_queue += waiting * dt

    def record_array(self) -> np.ndarray:
        """The records as an array (time, cumulative batch, KV, in system, queue, tokens; running, waiting, KV)."""
        if getattr(self, "_array_rows", -1) != len(self.records):
            self._array, self._array_rows = np.asarray(self.records, dtype=float), len(self.records)
        return self._array

    def _record(self) -> None:
        self.records.append(
            (
                self.clock,
                self.c_batch,
                self.c_kv,
                self.c_insys,
                self.c_queue,
                float(self.c_tokens),
                len(self.running),
                len(self.waiting),
                (self.total_blocks - self.free) / self.total_blocks,
            )
        )
