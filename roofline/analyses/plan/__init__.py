"""Capacity planning: the cheapest deployment that meets the SLOs (``capacity``), percentiles by simulation
(``percentile``).  Part of the analyses layer.
"""
