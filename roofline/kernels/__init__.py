"""Layer 4, kernels: kernel time models (spec-sheet and fitted forms, bus factors), profile keys,
lookup and prediction from a calibrated profile.  Imports layers below only.
"""
