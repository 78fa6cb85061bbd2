"""KV blocks of one replica: prefix-cache hits at admission, keys of computed blocks, release, swap.

A mixin of :class:`~roofline.analyses.simulate.engine.Engine` (plain methods, no extra indirection
in the step loop).  ``free`` counts free blocks; with a prefix cache the cache's free list holds
exactly as many.  Transfers to and from the host tier add their time to the step that needs them
(``xfer_s``).
"""

from __future__ import annotations

from roofline.analyses.simulate.cache import HostTier, PrefixCache, prefix_key, session_key
from roofline.analyses.simulate.state import Req


def blocks_for(tokens: int, block_size: int) -> int:
    """KV blocks holding ``tokens`` tokens: ceil(tokens / block_size)."""
    return -(-tokens // block_size)


class BlockBook:
    """Block accounting shared by the scheduler's steps (see the module docstring)."""

    bs: int
    free: int
    hit_rate: float
    cache: PrefixCache | None
    host: HostTier | None
    block_s: float  # seconds to move one block between HBM and host
    xfer_s: float

    # ------------------------------------------------------------------ keys and hits
    def _keys(self, req: Req, first: int, end: int) -> list[int]:
        """Cache keys of the request's blocks first..end−1 as far as other requests can share them (its system
        prompt's blocks under the prefix, the rest under its session; none past the prefix without one)."""
        shared = req.plen // self.bs if req.pid >= 0 else 0
        keys: list[int] = []
        if first < shared:
            base = prefix_key(req.pid, 0)
            keys = list(range(base + first, base + min(end, shared)))
            first = shared
        if req.sid >= 0 and first < end:
            base = session_key(req.sid, 0)  # -(s << bits | j) = base − j
            keys += range(base - first, base - end, -1)
        return keys

    def _lookup(self, req: Req) -> tuple[int, list[int], int, int]:
        """(cached tokens, hit keys, of them in use, of them on the host) before computing ``req.target``."""
        if self.hit_rate:
            return min(int(self.hit_rate * req.inp), req.target - 1), [], 0, 0
        if self.cache is None or not req.shared:
            return 0, [], 0, 0
        keys = self._keys(req, 0, (req.target - 1) // self.bs)
        hits, in_use, on_host = self.cache.lookup(keys)
        return hits * self.bs, keys[:hits], in_use, on_host

    def _claim(self, req: Req, keys: list[int], in_use: int, on_host: int, need: int) -> None:
        """Take ``need`` free blocks for the request: its free-listed hits first, then new ones from the front."""
        self.free -= need
        cache = self.cache
        if cache is None:
            return
        if keys:
            cache.claim(keys)
            req.keys = keys
            req.hits = len(keys)
            if on_host:
                self.xfer_s += on_host * self.block_s
        cache.take(need - (len(keys) - in_use - on_host))
        req.kb = len(keys)

    def _allocate(self, blocks: int) -> None:
        """New blocks for growth (a decode crossing a block, a prefill chunk)."""
        self.free -= blocks
        if self.cache is not None and blocks:
            self.cache.take(blocks)

    def _register(self, req: Req, upto_block: int) -> None:
        """The request's computed full blocks below ``upto_block`` become shareable (duplicates stay unkeyed)."""
        cache = self.cache
        if cache is None or not req.shared or upto_block <= req.kb:
            return
        keys = req.keys if req.keys is not None else []
        register = cache.register
        keys += [key for key in self._keys(req, req.kb, upto_block) if register(key)]
        req.keys, req.kb = keys, upto_block

    def _release(self, req: Req, blocks: int) -> None:
        """The request frees the ``blocks`` it holds (keyed ones stay cached until evicted)."""
        if self.cache is None or not req.keys:
            self.free += blocks
            if self.cache is not None:
                self.cache.release([], blocks)
        else:
            keys = req.keys
            before = len(self.cache.refs)
            self.cache.release(keys, blocks - len(keys))
            # keys whose last holder left joined the free list: blocks − keyed + those
            self.free += blocks - len(keys) + (before - len(self.cache.refs))
        req.keys, req.hits, req.kb = None, 0, 0

    # ------------------------------------------------------------------ swap
    def _swap_out(self, req: Req, blocks: int) -> bool:
        """Park the request's KV on the host (True), or refuse when the host tier is full."""
        if self.host is None or not self.host.park(blocks):
            return False
        self.xfer_s += blocks * self.block_s
        req.swapped = blocks
        return True

    def _swap_in(self, req: Req) -> None:
        """Bring a parked request's KV back (its blocks were reserved by the caller)."""
        assert self.host is not None
        self.host.unpark(req.swapped)
        self.xfer_s += req.swapped * self.block_s
        self._allocate(req.swapped)
        req.swapped = 0
