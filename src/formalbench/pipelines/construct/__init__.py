"""`formalbench construct`: a textbook in, a benchmark of self-contained formal exercises out.

Three phases, each in modules of its own here: extraction (`extract`, deterministic), the
source stages (clean, naturalize, conditions, review, repair, funnel; models), and the formal
stages (`formal`: blocks, block-wise translation and review, packaging). `runner` runs them
in order, resumably, from the command `formalbench construct`.
"""
