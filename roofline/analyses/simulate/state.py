"""Per-request state: a small object while a request is in flight, and the finished records as arrays.

A :class:`Req` lives from its send to its finish or abandonment; what the results need is then
written into :class:`Records` (numpy arrays indexed by request id), so a million-request run
holds a few hundred bytes per request.
"""

from __future__ import annotations

import math

import numpy as np

NAN = math.nan


class Req:
    """One request in flight (times in seconds of engine time; ``send`` is the client's)."""

    __slots__ = (
        "rid",
        "inp",
        "out",
        "send",
        "deadline",
        "eligible",
        "measured",
        "first",
        "gen",
        "comp",
        "target",
        "cached",
        "preempts",
        "kv0",
        "d0",
        "ver",
        "decoding",
        "ready",
        "last_tok",
        "keys",
        "hits",
        "kb",
        "shared",
        "plen",
        "pid",
        "sid",
        "swapped",
        "rounds",
        "gone",
        "closed",
        "home",
    )

    def __init__(self, rid: int, inp: int, out: int, send: float, deadline: float, measured: bool) -> None:
        self.rid, self.inp, self.out, self.send, self.deadline, self.measured = rid, inp, out, send, deadline, measured
        self.eligible = 0  # first step it may join (scheduling lag)
        self.first = NAN
        self.gen = self.comp = self.preempts = self.kv0 = self.d0 = self.ver = 0
        self.cached = -1  # prompt tokens found cached at its first admission (-1: never admitted)
        self.target = inp
        self.decoding = self.ready = self.gone = False
        self.last_tok = 0.0
        self.keys: list[int] | None = None  # cache keys of the blocks it holds (hits, then its own)
        self.hits = 0  # of those, blocks it found cached
        self.kb = 0  # next block index to key once computed
        self.shared = False  # it names a prefix or session
        self.pid = self.sid = -1
        self.plen = 0
        self.swapped = 0  # blocks parked on the host by swap preemption
        self.rounds = 0  # speculative decoding: verify rounds it needs
        self.closed = False  # sent by a closed-loop client (who sends again when done)
        self.home: object = None  # the replica whose queue or batch holds it


class Records:
    """What the results need of every request, by id (NaN: never happened)."""

    def __init__(self, n: int) -> None:
        self.send = np.full(n, NAN)
        self.first = np.full(n, NAN)
        self.finish = np.full(n, NAN)
        self.failed_at = np.full(n, NAN)  # client gave up (timeout) at this send-relative engine time
        self.tokens = np.zeros(n, dtype=np.int64)
        self.input_len = np.zeros(n, dtype=np.int64)
        self.output_len = np.zeros(n, dtype=np.int64)
        self.cached = np.full(n, -1, dtype=np.int64)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.measured = np.zeros(n, dtype=bool)
        self.stage = np.zeros(n, dtype=np.int32)
        self.dropped: dict[int, str] = {}

    def grow(self, n: int) -> None:
        """Room for at least n requests (closed-loop stages do not know their count ahead)."""
        have = self.send.size
        if n <= have:
            return
        size = max(n, 2 * have)
        for name, fill in (
            ("send", NAN),
            ("first", NAN),
            ("finish", NAN),
            ("failed_at", NAN),
            ("tokens", 0),
            ("input_len", 0),
            ("output_len", 0),
            ("cached", -1),
            ("preemptions", 0),
            ("measured", False),
            ("stage", 0),
        ):
            old = getattr(self, name)
            new = np.full(size, fill, dtype=old.dtype)
            new[:have] = old
            setattr(self, name, new)

    def trim(self, n: int) -> None:
        """Keep the first n records (the requests actually sent)."""
        for name in (
            "send",
            "first",
            "finish",
            "failed_at",
            "tokens",
            "input_len",
            "output_len",
            "cached",
            "preemptions",
            "measured",
            "stage",
        ):
            setattr(self, name, getattr(self, name)[:n])
