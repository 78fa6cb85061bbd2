"""Layer 3, formulas: the book's closed forms (compute, the decode step, cost, collectives, sharding,
serving).  Pure functions of numbers over numpy arrays; imports ``core``, ``specs`` and ``model``.
"""
