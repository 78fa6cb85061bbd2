"""Discrete-event simulation of continuous-batching serving under load (TTFT/TPOT percentiles).

``simulate(cost, load, lengths, ...)`` steps whole batches through a vLLM-style scheduler,
priced by any :class:`StepCost`.
"""

from roofline.analyses.simulate.cost import AffineStepCost, StepCost, causal_pairs
from roofline.analyses.simulate.engine import SchedulerConfig
from roofline.analyses.simulate.load import ClosedLoop, OpenLoop, Trace, read_trace
from roofline.analyses.simulate.metrics import Percentiles, SimulationResult, TimeSeries
from roofline.analyses.simulate.run import BALANCERS, FleetConfig, simulate

__all__ = [
    "AffineStepCost",
    "BALANCERS",
    "ClosedLoop",
    "FleetConfig",
    "OpenLoop",
    "Percentiles",
    "SchedulerConfig",
    "SimulationResult",
    "StepCost",
    "TimeSeries",
    "Trace",
    "causal_pairs",
    "read_trace",
    "simulate",
]
