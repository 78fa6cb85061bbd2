"""Engine calibration: end-to-end serving measurements (schema, importers, shipped data) -> fitted engine
entries, and validation of whole-request predictions against them.  Beside the analyses; imports them.
"""
