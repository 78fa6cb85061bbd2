"""Calibration: measured timings -> profiles the deployment reads (kernels/ and engine/)."""
