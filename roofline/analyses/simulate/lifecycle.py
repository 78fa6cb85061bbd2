"""Requests leaving a replica early: preemption (by recompute or swap) and abandonment at a client's
deadline; and speculative decoding's decode step (a mixin of the replica's Engine)."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from roofline.analyses.simulate.blocks import blocks_for

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine


class Lifecycle:
    """``_preempt_newest``, ``_expire`` and ``_spec_decodes`` (see the module docstring)."""

    def _preempt_newest(self: Engine, now: float) -> None:
        """Free the newest running request's KV: park it on the host (swap) or recompute it later."""
        req = next(reversed(self.running))
        del self.running[req]
        self.preemptions += 1
        req.preempts += 1
        if req.decoding:
            decoding = True
            req.comp = self._kv_now(req)
            req.gen = min(req.gen + int((self.dstep - req.d0) * self.per_round), req.out - 1)
            blocks = self._leave_decode(req)
            req.last_tok = now
        else:
            decoding = False
            blocks = blocks_for(req.comp, self.bs)
            self.prefilling.remove(req)
        if self.swap and self._swap_out(req, blocks):
            req.decoding = decoding  # resumes where it stopped
            self._release(req, blocks)
        else:
            self._release(req, blocks)
            req.comp, req.ready = 0, False
            req.target = req.inp + req.gen
        self.waiting.appendleft(req)
        self.n_waiting += 1

    def _expire(self: Engine) -> None:
        """Abort the requests whose client gave up by now; they free their KV."""
        heap, now = self.deadlines, self.clock
        while heap and heap[0][0] <= now:
            _, _, req = heapq.heappop(heap)
            if req.gone or req.home is not self:
                continue
            req.gone = True
            if req in self.running:
                del self.running[req]
                if req.decoding:
                    blocks = self._leave_decode(req)
                else:
                    blocks = blocks_for(req.comp, self.bs)
                    self.prefilling.remove(req)
                self._release(req, blocks)
            else:
                self.n_waiting -= 1
                if req.swapped and self.host is not None:
                    self.host.unpark(req.swapped)
                    req.swapped = 0
            self.failed.append(req)

    def _spec_decodes(self: Engine) -> int:
        """Decodes under speculation: each verify round adds the expected tokens to every sequence; the decode
        set's blocks follow its total context (Σ ceil ≈ (kv + n·(bs−1)/2) / bs)."""
        while self.n_dec:
            grown = self.kv_sum + self.n_dec * self.per_round
            want = int((grown + self.n_dec * (self.bs - 1) / 2) / self.bs + 0.5)
            need = max(0, want - self.spec_blocks)
            if need <= self.free:
                self._allocate(need)
                self.spec_blocks += need
                break
            self._preempt_newest(self.clock)
        self.decoded = self.n_dec
        return self.n_dec
