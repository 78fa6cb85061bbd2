"""The block prefix cache of one replica: hits emerge from reuse in the load, capacity is the KV pool.

Modelled on vLLM's automatic prefix caching: every full KV block whose tokens other requests
may share has a key (its prefix or session, and its index); a request's leading blocks that are
cached are hits (at least its last prompt token is computed).  Blocks no request holds stay
cached on the free list in least-recently-freed order (a request's tail blocks first, so shared
prefixes outlive them) until allocation takes them from its front.  The free list holds keyed
blocks one by one and unkeyed blocks as counted runs, so a load with no shared prefixes costs
nothing here.  An optional host tier (:class:`HostTier`) keeps evicted blocks, LRU, within its
capacity, and serves hits from there at the offload bandwidth.
"""

from __future__ import annotations

from collections import OrderedDict

#: Free-list entries at or above this are runs of unkeyed blocks (value: their count).
ANON = 1 << 62
#: Bits of a key holding the block index.
INDEX_BITS = 24


def prefix_key(prefix: int, block: int) -> int:
    """Key of block ``block`` of a shared prefix (a system prompt)."""
    return (prefix << INDEX_BITS) | block


def session_key(session: int, block: int) -> int:
    """Key of block ``block`` of a session's token stream (negative: its own namespace)."""
    return -(((session + 1) << INDEX_BITS) | block)


class HostTier:
    """Host memory for KV: an LRU of evicted prefix blocks plus blocks parked by swap preemption."""

    def __init__(self, capacity_blocks: int) -> None:
        self.capacity = capacity_blocks
        self.parked = 0  # blocks held by swapped-out requests
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def put(self, key: int) -> None:
        """Keep an evicted block (dropping the least recently stored when full)."""
        if self.capacity - self.parked <= 0:
            return
        self.blocks[key] = None
        self.blocks.move_to_end(key)
        while len(self.blocks) > self.capacity - self.parked:
            self.blocks.popitem(last=False)

    def park(self, blocks: int) -> bool:
        """Reserve room for a swapped-out request's blocks (evicting cached ones); False if it cannot fit."""
        if self.parked + blocks > self.capacity:
            return False
        self.parked += blocks
        while len(self.blocks) > self.capacity - self.parked:
            self.blocks.popitem(last=False)
        return True

    def unpark(self, blocks: int) -> None:
        self.parked -= blocks


class PrefixCache:
    """Keyed blocks in use (reference counts) and the free list's eviction order (see the module docstring)."""

    def __init__(self, free_blocks: int, block_size: int, host: HostTier | None = None) -> None:
        self.bs = block_size
        self.refs: dict[int, int] = {}
        self.lru: OrderedDict[int, int] = OrderedDict()
        self.anon_ids = ANON
        self.host = host
        self.evictions = 0
        if free_blocks:
            self._push_anon(free_blocks)

    # ------------------------------------------------------------------ free list
    def _push_anon(self, count: int) -> None:
        if not count:
            return
        if self.lru:
            last = next(reversed(self.lru))
            if last >= ANON:
                self.lru[last] += count
                return
        self.anon_ids += 1
        self.lru[self.anon_ids] = count

    def take(self, count: int) -> None:
        """Allocate ``count`` free blocks from the front of the free list, evicting the keyed ones taken."""
        lru = self.lru
        while count > 0:
            key, n = lru.popitem(last=False)
            if key >= ANON:
                if n > count:
                    lru[key] = n - count
                    lru.move_to_end(key, last=False)
                    return
                count -= n
            else:
                count -= 1
                self.evictions += 1
                if self.host is not None:
                    self.host.put(key)

    # ------------------------------------------------------------------ hits
    def lookup(self, keys: list[int]) -> tuple[int, int, int]:
        """(hits, of them in use by others, of them on the host) for the leading run of cached ``keys``."""
        refs, lru, host = self.refs, self.lru, self.host.blocks if self.host is not None else None
        in_use = on_host = 0
        for i, key in enumerate(keys):
            if key in refs:
                in_use += 1
            elif key in lru:
                continue
            elif host is not None and key in host:
                on_host += 1
            else:
                return i, in_use, on_host
        return len(keys), in_use, on_host

    def claim(self, keys: list[int]) -> None:
        """The request holds these hit blocks now (off the free list, or loaded from the host)."""
        refs, lru = self.refs, self.lru
        for key in keys:
            r = refs.get(key)
            if r:
                refs[key] = r + 1
            else:
                if key in lru:
                    del lru[key]
                refs[key] = 1

    def register(self, key: int) -> bool:
        """A block the request computed becomes shareable under ``key``; False if already cached (a duplicate)."""
        if key in self.refs or key in self.lru:
            return False
        self.refs[key] = 1
        return True

    def release(self, keys: list[int], unkeyed: int) -> None:
        """A request frees its blocks: the unkeyed tail first, then its keyed blocks from the last."""
        self._push_anon(unkeyed)
        refs, lru = self.refs, self.lru
        for key in reversed(keys):
            r = refs[key] - 1
            if r:
                refs[key] = r
            else:
                del refs[key]
                lru[key] = 1

    def free_count(self) -> int:
        """Blocks on the free list (equals the engine's free count; for checks)."""
        return sum(n if k >= ANON else 1 for k, n in self.lru.items())
