"""Layer 0, core: units and quantities, the error types, value checks, bounded file reads and safe writes,
number formatting.  Imports only the standard library and numpy.
"""
