"""Discrete-event simulation of continuous-batching serving under load.

``simulate(cost, load, SimConfig(...))`` steps whole batches through a scheduling policy
(:mod:`.policies`), priced by any :class:`StepCost` (the step model through :mod:`.adapter`), with a
block prefix cache, client timeouts, staged loads, a host KV tier and speculative decoding.
"""

from roofline.analyses.simulate.config import (
    BALANCERS,
    FleetConfig,
    OffloadConfig,
    RequestPath,
    SchedulerConfig,
    SimConfig,
    SpeculativeConfig,
)
from roofline.analyses.simulate.cost import AffineStepCost, StepCost, causal_pairs
from roofline.analyses.simulate.load import (
    MAX_REQUESTS,
    ClosedLoop,
    OpenLoop,
    Requests,
    Stage,
    Staged,
    Trace,
    parse_stages,
)
from roofline.analyses.simulate.policies import POLICIES, register_policy
from roofline.analyses.simulate.results import Percentiles, RequestLog, SimulationResult, StageResult, TimeSeries
from roofline.analyses.simulate.run import simulate
from roofline.analyses.simulate.trace_io import read_trace

__all__ = [
    "AffineStepCost",
    "BALANCERS",
    "ClosedLoop",
    "FleetConfig",
    "MAX_REQUESTS",
    "OffloadConfig",
    "OpenLoop",
    "POLICIES",
    "Percentiles",
    "RequestLog",
    "RequestPath",
    "Requests",
    "SchedulerConfig",
    "SimConfig",
    "SimulationResult",
    "SpeculativeConfig",
    "Stage",
    "StageResult",
    "Staged",
    "StepCost",
    "TimeSeries",
    "Trace",
    "causal_pairs",
    "parse_stages",
    "read_trace",
    "register_policy",
    "simulate",
]
