"""Cartesian sweeps of deployments over batch and context, streamed Pareto frontiers.
Part of the analyses layer: the grid kernel calls the step model's own ``step_terms``.
"""
