"""The APE-Bench pipeline (proof engineering from real commit histories).

One module per step: `diffrepair` (apply and repair model edits), `mining` (tasks from a git
history), `filters` (the task filters in the reference's order), `validate` (compile the file
before and after in the project at that commit), `synthesize` (instructions and reverse
validation), `evaluate` (patches, repair, compile, judge) and `metrics` (pass@k, semantic drop).
"""
