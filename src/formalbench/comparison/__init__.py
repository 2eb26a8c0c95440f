"""comparison: is a candidate statement the same as a reference? GTED over pair files, BEq by
the proof assistant (Coq, Lean), and the `compare` decision. Sits beside `judge`: it runs
assistants to get its inputs and hands records down to the pure scores in `metrics`."""
