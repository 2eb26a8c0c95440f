"""formalbench: build and evaluate formal-mathematics benchmarks under a strict verifier.

Layers (dependencies point downward only):
    cli, dashboard -> pipelines -> solvers, metrics, judge -> checking
    -> backends, llm, store -> core
"""

__version__ = "0.1.0"
