"""The deployment: model + chip rates (spec or calibrated) + precision + parallelism, parsed once."""

from roofline.deploy.deployment import (
    DEFAULT_MEMORY_UTILIZATION,
    Deployment,
    Precision,
    default_comms_overlap,
    deployment,
)
from roofline.deploy.engine import ENGINE_FLOOR, ENGINE_TERMS, FITTED_ENGINE_TERMS, NO_ENGINE, EngineTerms, engine_terms
from roofline.deploy.engine_registry import EngineTerm, register_engine_term
from roofline.deploy.layout import Parallelism
from roofline.deploy.rates import TERM_SOURCES, Rates, chip_rates

__all__ = [
    "DEFAULT_MEMORY_UTILIZATION",
    "ENGINE_FLOOR",
    "ENGINE_TERMS",
    "FITTED_ENGINE_TERMS",
    "NO_ENGINE",
    "Deployment",
    "EngineTerm",
    "EngineTerms",
    "register_engine_term",
    "engine_terms",
    "Parallelism",
    "Precision",
    "Rates",
    "TERM_SOURCES",
    "chip_rates",
    "default_comms_overlap",
    "deployment",
]
