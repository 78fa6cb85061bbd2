"""Per-request state shared by the replicas: plain Python lists, indexed by request id (arrival order)."""

from __future__ import annotations

import math


class RequestTable:
    """Lengths, timestamps and scheduler fields of ``n`` requests (lists: fast scalar access)."""

    def __init__(self, input_len: list[int], output_len: list[int], measured: list[bool]) -> None:
        n = len(input_len)
        self.inp, self.out, self.measured = input_len, output_len, measured
        self.arrival = [math.nan] * n
        self.first = [math.nan] * n  # first token
        self.finish = [math.nan] * n
        self.last_tok = [0.0] * n  # last token before a preemption
        self.gen = [0] * n  # tokens generated
        self.comp = [0] * n  # prompt (+ generated) tokens whose KV is computed
        self.target = list(input_len)  # tokens the current prefill must compute
        self.kv0 = [0] * n  # KV tokens when it joined the decode set ...
        self.d0 = [0] * n  # ... at this step number
        self.ver = [0] * n  # bumped on leaving the decode set (stale heap entries)
        self.decoding = [False] * n
        self.ready = [False] * n  # KV already present (shipped from a prefill replica)
        self.dropped: dict[int, str] = {}
