"""The step model: terms of one step (bytes, FLOPs, collectives, overheads) for a mix of work."""

from roofline.terms.step import StepTerms, step_terms
from roofline.terms.work import Work, decode_work, prefill_work

__all__ = ["StepTerms", "Work", "decode_work", "prefill_work", "step_terms"]
