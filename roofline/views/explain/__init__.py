"""Explanations: for each number of a result, its formula, the values substituted, the binding
term and the section of the book it comes from.

Returns data (:class:`Explanation`), never text: the CLI renders it.  Values are SI with a
unit string; the numbers are taken from an :class:`~roofline.analyses.step.StepResult` /
``RequestResult`` / plan deployment, so an explanation can never disagree with the result.
"""

from roofline.views.explain.records import Explanation, Term
from roofline.views.explain.serving import explain_deployment, explain_serve, explain_shard
from roofline.views.explain.step import explain_request, explain_step

__all__ = [
    "Explanation",
    "Term",
    "explain_deployment",
    "explain_request",
    "explain_serve",
    "explain_shard",
    "explain_step",
]
