"""One serving replica: continuous batching over a paged KV cache, stepped whole batches at a time.

A step is composed by the scheduling policy (:mod:`~roofline.analyses.simulate.policies`) from the
primitives below: the running decodes take one token each, partial prefills and newly admitted
requests (first come, first served, up to ``max_num_seqs``) take prompt chunks within the
``max_num_batched_tokens`` budget.  KV lives in blocks of ``block_size`` tokens; when a decode needs
a block and none is free the newest running request is preempted, by recompute (its blocks freed,
it re-queues at the front to prefill its prompt and generated tokens again) or by swap (its KV
parked on the host tier).  Runs of decode-only steps between events are priced in one call: the
decode set is kept as running sums (sequences, total context, sequences per block phase) and a
heap of finishing decode-step numbers.  Requests whose client gave up (``deadline``) are aborted at
the next step boundary and free their KV.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque

from roofline.analyses.simulate.blocks import BlockBook, blocks_for
from roofline.analyses.simulate.cache import HostTier, PrefixCache
from roofline.analyses.simulate.config import SchedulerConfig
from roofline.analyses.simulate.cost import Pricer
from roofline.analyses.simulate.decode_run import DecodeRuns
from roofline.analyses.simulate.lifecycle import Lifecycle
from roofline.analyses.simulate.policies import Policy
from roofline.analyses.simulate.records import Timeline
from roofline.analyses.simulate.state import Req
from roofline.core.errors import RooflineError


class Engine(BlockBook, DecodeRuns, Lifecycle):
    """A replica's scheduler state, clock and cumulative records (see the module docstring)."""

    def __init__(
        self,
        pricer: Pricer,
        capacity_tokens: int,
        config: SchedulerConfig,
        policy: Policy,
        *,
        prefill_only: bool = False,
        lag: int = 0,
        caching: bool = False,
        host: HostTier | None = None,
        block_s: float = 0.0,
        tokens_per_round: float = 1.0,
        record_dt: float = 0.0,
        leaps: bool = True,
        solo: bool = False,
        chain: bool = False,
    ) -> None:
        self.leaps, self.solo, self.chain, self.run_ends = leaps, solo, chain, None
        self.pricer, self.policy, self.prefill_only, self.lag = pricer, policy, prefill_only, lag
        self.rowfn = getattr(pricer, "decode_row", None)
        self.bs = config.block_size
        self.max_seqs, self.max_tokens = config.max_num_seqs, config.max_num_batched_tokens
        self.hit_rate = config.prefix_hit_rate
        self.swap = config.preemption == "swap"
        self.total_blocks = int(capacity_tokens) // self.bs
        if self.total_blocks < 1:
            raise RooflineError(
                f"the KV cache holds {capacity_tokens} tokens, less than one block of {self.bs}: "
                "the weights leave no room"
            )
        self.free = self.total_blocks
        self.cache = PrefixCache(self.total_blocks, self.bs, host) if caching and not self.hit_rate else None
        self.host, self.block_s, self.xfer_s = host, block_s, 0.0
        self.spec = tokens_per_round != 1.0
        self.per_round = tokens_per_round
        self.clock = 0.0
        self.waiting: deque[Req] = deque()
        self.n_waiting = 0
        self.running: dict[Req, None] = {}  # admission order; the newest is preempted first
        self.prefilling: list[Req] = []
        self.counts = [0] * self.bs  # decoding sequences by block phase (kv0 - d0) mod block_size
        self.n_dec = self.n_measured = self.step_no = self.dstep = 0
        self.kv_sum = 0.0
        self.spec_blocks = 0  # speculative decoding: blocks held by the decode set (estimated from kv_sum)
        self.heap: list[tuple[int, int, int, Req]] = []  # (decode step after which it finishes, id, version, req)
        self.deadlines: list[tuple[float, int, Req]] = []
        self.preemptions = self.steps = self.last_done = 0
        self.last_step_s = 0.0
        self.finished: list[tuple[Req, float]] = []  # and when (a chain of runs: not all at the clock)
        self.failed: list[Req] = []
        self.handoffs: list[Req] = []
        self.chunks: list[tuple[Req, int]] = []
        self.resumed = False  # a swapped request came back this step
        self.tokens = self.decoded = 0
        self.pairs = 0.0
        self.tl = Timeline(record_dt)
        self.itl_s = array("d")  # every decode step's time (ITL samples) ...
        # ... by run of steps: its end, measured decodes and steps (arrays: a million requests make millions)
        self.itl_end, self.itl_w, self.itl_k = array("d"), array("d"), array("q")
        self.gaps: list[float] = []  # token gaps across a preemption (measured requests)

    # ------------------------------------------------------------------ driver interface
    def has_work(self) -> bool:
        return bool(self.running or self.n_waiting)

    def fits(self, tokens: int) -> bool:
        """Whether one request needing ``tokens`` tokens of KV fits the whole cache."""
        return blocks_for(tokens, self.bs) <= self.total_blocks

    def outstanding_at(self, t: float) -> int:
        """Requests routed here and not finished by time t (the last step's finishes count after it ends)."""
        return len(self.running) + self.n_waiting + (self.last_done if self.clock > t else 0)

    def receive(self, req: Req, t: float) -> None:
        """A request reaches this replica's queue at time t (mid-step arrivals count as in the system from t)."""
        busy = bool(self.running or self.n_waiting)
        clock = self.clock
        if not busy and clock < t:
            self.clock = t
            self.tl.record(self)
        elif clock > t:
            tl = self.tl
            tl.c_insys += clock - t
            tl.c_queue += clock - t
        # async scheduling: arriving during a step, it may join only the step after next
        step_no = self.step_no if self.run_ends is None else self._queued_at_step(t)
        req.eligible = step_no + (self.lag if busy and self.clock > t else 0)
        req.home = self
        self.waiting.append(req)
        self.n_waiting += 1
        if req.deadline < math.inf:
            heapq.heappush(self.deadlines, (req.deadline, req.rid, req))

    def advance(self, limit: float) -> None:
        """One segment: a run of decode-only steps (cut at the first step ending at or after ``limit``, unless
        arrivals could only queue, or at a deadline), else one composed step."""
        self.last_done, self.run_ends = 0, None
        if self.deadlines and self.deadlines[0][0] <= self.clock:
            self._expire()
            if not self.has_work():
                return
        if (
            self.leaps
            and self.n_dec
            and not self.prefilling
            and not self.spec
            and (not self.n_waiting or not self.admissible())
            and self._leap(limit)
        ):
            return
        self._step()

    # ------------------------------------------------------------------ policy primitives
    def admissible(self) -> bool:
        """Whether the head of the queue could join now."""
        if not self.n_waiting or len(self.running) >= self.max_seqs:
            return False
        req = self._head()
        if req.eligible > self.step_no:
            return False
        if req.ready or req.swapped:
            return blocks_for(req.comp, self.bs) <= self.free
        budget = self.max_tokens - self.n_dec
        if budget > 0 and blocks_for(min(req.target, budget), self.bs) <= self.free:
            return True  # fits even with no prefix hit
        comp, _, in_use, _ = self._lookup(req)
        c = min(req.target - comp, budget)
        return c > 0 and blocks_for(comp + c, self.bs) - in_use <= self.free

    def decodes(self) -> int:
        """Every running decode takes a token this step (preempting the newest requests for blocks)."""
        if self.spec:
            return self._spec_decodes()
        while self.n_dec:
            need = self.counts[(-self.dstep) % self.bs]
            if need <= self.free:
                self._allocate(need)
                break
            self._preempt_newest(self.clock)
        self.decoded = self.n_dec
        return self.n_dec

    def continue_prefills(self, budget: int) -> int:
        """Chunks of the partial prefills within ``budget`` tokens (as far as free blocks allow)."""
        used, bs = 0, self.bs
        for req in self.prefilling:
            if budget <= used:
                break
            comp = req.comp
            c = min(req.target - comp, budget - used)
            held = blocks_for(comp, bs)
            more = blocks_for(comp + c, bs) - held
            if more > self.free:  # take what the free blocks hold
                c, more = (held + self.free) * bs - comp, self.free
                if c <= 0:
                    continue
            self._allocate(more)
            self._chunk(req, c)
            used += c
        return used

    def admit(self, budget: int) -> int:
        """New requests from the queue, first come first served, their first chunks within ``budget``."""
        used = 0
        waiting, bs = self.waiting, self.bs
        while used < budget and self.n_waiting and len(self.running) < self.max_seqs:
            req = waiting[0]
            if req.gone:
                waiting.popleft()
                continue
            if req.ready or req.eligible > self.step_no:
                break
            if req.swapped:
                if blocks_for(req.comp, bs) > self.free:
                    break
                self._pop_head()
                self._swap_in(req)
                self.resumed = True
                if req.decoding:
                    req.decoding = False
                    self.running[req] = None
                    self._join_decode(req, req.comp)
                    continue
                self.running[req] = None
                self.prefilling.append(req)
                continue
            comp, keys, in_use, on_host = self._lookup(req)
            c = min(req.target - comp, budget - used)
            need = blocks_for(comp + c, bs) - in_use
            if need > self.free:
                break
            self._pop_head()
            self.running[req] = None
            self.prefilling.append(req)
            if req.cached < 0:
                req.cached = comp
            req.comp = comp
            self._claim(req, keys, in_use, on_host, need)
            self._chunk(req, c)
            used += c
        return used

    # ------------------------------------------------------------------ one composed step
    def _step(self) -> None:
        now = self.clock
        self.chunks, self.tokens, self.pairs, self.decoded, self.xfer_s = [], 0, 0.0, 0, 0.0
        self.resumed = False
        if self.n_waiting and self.waiting[0].ready:
            self._admit_ready()
        self.policy.compose(self)
        n_dec, chunks = self.decoded, self.chunks
        if not n_dec and not chunks:
            if not self.running:
                if self.n_waiting:  # the head waits for a step that never comes: let it in
                    self._head().eligible = self.step_no
                    return
                return
            if self.resumed:  # requests swapped back in this step: they run from the next one
                return
            self._preempt_newest(now)  # everything stalled on KV: free the newest and retry
            return
        step_s = self.pricer.mixed_s(n_dec, self.kv_sum if n_dec else 0.0, self.tokens, self.pairs) + self.xfer_s
        end = now + step_s
        self.tl.integrate(self, step_s)
        self.clock, self.last_step_s = end, step_s
        self.step_no += 1
        self.steps += 1
        produced = 0
        if n_dec:
            self.kv_sum += n_dec * self.per_round
            self.dstep += 1
            produced = n_dec * self.per_round
            if self.n_measured:
                self.itl_s.append(step_s / self.per_round)
                self.itl_end.append(end)
                self.itl_w.append(self.n_measured * self.per_round)
                self.itl_k.append(1)
        for req, c in chunks:
            req.comp += c
            if self.cache is not None:
                self._register(req, req.comp // self.bs)
            if req.comp == req.target:
                self.prefilling.remove(req)
                produced += 1
                self._prefill_done(req, end)
        if n_dec and self.heap[0][0] <= self.dstep:
            self._pop_finished(end)
        tl = self.tl
        tl.c_tokens += produced
        if end - tl.last_t >= tl.min_dt:
            tl.record(self)

    def _chunk(self, req: Req, c: int) -> None:
        self.chunks.append((req, c))
        self.tokens += c
        self.pairs += c * (req.comp + (c + 1) / 2)

    # ------------------------------------------------------------------ bookkeeping
    def _head(self) -> Req:
        """The first live request of the queue (abandoned ones are dropped from the front)."""
        waiting = self.waiting
        while waiting[0].gone:
            waiting.popleft()
        return waiting[0]

    def _pop_head(self) -> None:
        self.waiting.popleft()
        self.n_waiting -= 1

    def _admit_ready(self) -> None:
        """Requests whose KV arrived from a prefill replica join the decode set directly."""
        while self.n_waiting and len(self.running) < self.max_seqs and self._head().ready:
            req = self.waiting[0]
            if req.eligible > self.step_no:  # arrived during the last step (scheduling lag)
                return
            need = blocks_for(req.comp, self.bs)
            if need > self.free:
                return
            self._pop_head()
            if req.swapped:  # preempted by swap after its hand-off: its KV comes back from the host
                self._swap_in(req)
            else:
                self._allocate(need)
            self.running[req] = None
            self._join_decode(req, req.comp)

    def _join_decode(self, req: Req, kv0: int) -> None:
        req.kv0, req.d0, req.decoding = kv0, self.dstep, True
        if self.spec:
            left = req.out - req.gen
            req.rounds = max(1, math.ceil(left / self.per_round)) if left > 0 else 0
            self.spec_blocks += blocks_for(kv0, self.bs)
            steps = req.rounds
        else:
            self.counts[(kv0 - self.dstep) % self.bs] += 1
            steps = req.out - req.gen
        self.kv_sum += kv0
        self.n_dec += 1
        self.n_measured += req.measured
        heapq.heappush(self.heap, (self.dstep + steps, req.rid, req.ver, req))

    def _kv_now(self, req: Req) -> int:
        """KV tokens a decoding request holds now."""
        return req.kv0 + int((self.dstep - req.d0) * self.per_round)

    def _leave_decode(self, req: Req) -> int:
        """Remove a decoding request from the running sums; returns the KV blocks it held."""
        kv = self._kv_now(req)
        if self.spec:
            blocks = min(blocks_for(kv, self.bs), self.spec_blocks)
            self.spec_blocks -= blocks
            self.kv_sum -= req.kv0 + (self.dstep - req.d0) * self.per_round
        else:
            self.counts[(req.kv0 - req.d0) % self.bs] -= 1
            self.kv_sum -= kv
            blocks = blocks_for(kv, self.bs)
        self.n_dec -= 1
        self.n_measured -= req.measured
        req.decoding = False
        req.ver += 1
        return blocks

    def _prefill_done(self, req: Req, end: float) -> None:
        """The chunk that completes a prefill samples the next token."""
        if self.prefill_only:
            self._release(req, blocks_for(req.comp, self.bs))
            del self.running[req]
            req.home = None
            self.handoffs.append(req)
            return
        if req.gen == 0:
            req.first = end
        elif req.measured:
            self.gaps.append(end - req.last_tok)
        req.gen += 1
        if req.gen >= req.out:
            self._release(req, blocks_for(req.comp, self.bs))
            del self.running[req]
            self._finish(req, end)
        else:
            self._join_decode(req, req.comp)

    def _pop_finished(self, end: float) -> None:
        heap, dstep = self.heap, self.dstep
        while heap and heap[0][0] <= dstep:
            _, _, ver, req = heapq.heappop(heap)
            if ver == req.ver:
                if self.cache is not None and req.sid >= 0:  # its output continues the session
                    self._register(req, (req.inp + req.out - 1) // self.bs)
                self._release(req, self._leave_decode(req))
                req.gen = req.out
                del self.running[req]
                self._finish(req, end)

    def _finish(self, req: Req, end: float) -> None:
        req.gone = True
        self.finished.append((req, end))
        self.last_done += 1
