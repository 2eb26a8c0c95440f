"""Building a benchmark from a textbook (CAM-Bench): extraction, source stages, formal stages.

Each stage lives in its own module of this package; this file imports nothing, so that the
modules of the three phases can be added side by side.
"""
