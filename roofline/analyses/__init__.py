"""Layer 7, analyses: step and request, serve, shard, diff, lengths, Pareto frontiers; ``sweep/``, ``plan/``
and ``simulate/``.  They read the deployment and the step terms; they never format for people.
"""
