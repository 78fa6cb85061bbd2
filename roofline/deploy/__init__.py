"""The deployment: model + chip rates (spec or calibrated) + precision + parallelism, parsed once."""

from .deployment import DEFAULT_MEMORY_UTILIZATION, Deployment, Precision, deployment
from .layout import Parallelism
from .rates import TERM_SOURCES, Rates, chip_rates

__all__ = ["DEFAULT_MEMORY_UTILIZATION", "Deployment", "Parallelism", "Precision", "Rates", "TERM_SOURCES",
           "chip_rates", "deployment"]
