"""Hugging Face ``config.json`` -> a model spec: field reading, family rules, hybrid layers, quantization.
Part of the specs layer; imports only ``roofline.core``.
"""
