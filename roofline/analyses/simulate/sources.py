"""What each request is, by send order: from a trace, a generated workload, or a length distribution.

Lengths drawn from a distribution come from their own random stream in fixed-size chunks, so the
n-th request is the same whatever else the run does (common random numbers across engine terms).
"""

from __future__ import annotations

import numpy as np

from roofline.analyses.simulate.config import SimConfig
from roofline.analyses.simulate.load import (
    MAX_REQUESTS,
    Load,
    OpenLoop,
    Requests,
    Staged,
    Trace,
    open_loop_arrivals_s,
    sample_lengths,
    stage_arrivals_s,
)
from roofline.core.errors import OptionError, RooflineError

#: Requests drawn at once from a length distribution.
CHUNK = 8192


class RequestSource:
    """``get(i)`` -> (input, output, prefix id, prefix length, session id) of the i-th request sent."""

    def __init__(self, load: Load, config: SimConfig) -> None:
        self.dist = None
        reqs: Requests | None = None
        if isinstance(load, Trace):
            if config.lengths is not None or config.workload is not None:
                raise OptionError(
                    "lengths: a trace carries its own lengths; give no lengths or workload with it",
                    parameters=("lengths",),
                )
            reqs = load.requests
            if config.requests is not None:
                reqs = reqs.head(config.requests)
        elif config.workload is not None:
            reqs = config.workload
        elif config.lengths is not None:
            self.dist = config.lengths
        else:
            raise OptionError("lengths: a generated load needs request lengths or a workload", parameters=("lengths",))
        staged_closed = isinstance(load, Staged) and any(s.closed for s in load.stages)
        if reqs is not None:
            self.limit = reqs.count
            if config.requests is not None and not isinstance(load, Staged | Trace):
                self.limit = min(self.limit, config.requests)
        elif isinstance(load, Staged):
            opened = sum(round(float(s.rate_per_s) * s.duration_s) for s in load.stages if not s.closed)
            self.limit = MAX_REQUESTS if staged_closed else opened
        else:
            if config.requests is None:
                raise OptionError("requests: a generated load needs a count of requests", parameters=("requests",))
            self.limit = config.requests
        self.reqs = reqs
        self.rng = np.random.default_rng([config.seed, 2])
        self.cols: list[list[int]] = [[], [], [], [], []]
        if reqs is not None:
            n = reqs.count
            none = [-1] * n
            self.cols = [
                reqs.input_len.tolist(),
                reqs.output_len.tolist(),
                reqs.prefix_id.tolist() if reqs.prefix_id is not None else none,
                reqs.prefix_len.tolist() if reqs.prefix_len is not None else [0] * n,
                reqs.session_id.tolist() if reqs.session_id is not None else none,
            ]
        self.shares = reqs is not None and reqs.shares

    def open_sends(self, load: Load, seed: int) -> np.ndarray | None:
        """Send times of the open-loop requests (trace, open loop, open stages), sorted; None: closed loop only."""
        rng = np.random.default_rng([seed, 1])
        if isinstance(load, Trace):
            return load.arrival_s[: self.limit]
        if isinstance(load, OpenLoop):
            return open_loop_arrivals_s(load, self.limit, rng)
        if isinstance(load, Staged):
            parts = [
                stage_arrivals_s(s, start, rng)
                for start, s in zip(load.starts_s, load.stages, strict=True)
                if not s.closed
            ]
            return np.concatenate(parts) if parts else None
        return None

    def get(self, i: int) -> tuple[int, int, int, int, int]:
        cols = self.cols
        while i >= len(cols[0]):
            if self.dist is None:
                raise RooflineError(f"the workload has {len(cols[0])} requests; the load asked for more")
            inp, out = sample_lengths(self.dist, CHUNK, self.rng)
            cols[0].extend(inp.tolist())
            cols[1].extend(out.tolist())
        if self.dist is not None:
            return cols[0][i], cols[1][i], -1, 0, -1
        return cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i]

    def prompt_lens(self) -> list[int]:
        """Distinct prompt lengths the load may send (tabulated exactly); a sample for a distribution."""
        if self.dist is not None:
            return np.unique(np.rint(self.dist.input_len)).astype(int).tolist()
        return np.unique(np.asarray(self.cols[0][: min(len(self.cols[0]), 1 << 20)])).tolist()

    def max_context(self) -> float:
        """The longest prompt + output (the step model is tabulated up to it)."""
        if self.dist is not None:
            return float(np.max(self.dist.input_len + self.dist.output_len))
        return float(np.max(np.add(self.cols[0], self.cols[1])))
