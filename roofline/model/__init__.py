"""Layer 2, model: a model's shape, parameter counts, KV-cache and weight bytes (per component), memory.
Pure functions of numbers; imports ``roofline.core`` and ``roofline.specs`` only.
"""
