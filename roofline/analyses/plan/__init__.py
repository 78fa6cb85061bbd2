"""Capacity planning.  Part of the analyses layer.

``queueing`` (closed forms), ``inverse`` (inverse questions), ``shapes`` (candidate deployment shapes and
what one replica carries per workload), ``capacity`` (the steady plan, ``PlanConfig``), ``spares`` (failure
headroom), ``load_profile`` and ``day`` (a day of load with scheduled autoscaling), ``mix`` (the cheapest
mix of chip types, a mixed-integer program), ``percentile`` (sizing by simulation, on any executor of
:mod:`roofline.analyses.executors`).
"""
