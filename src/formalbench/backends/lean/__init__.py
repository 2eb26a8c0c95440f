"""Lean 4: per-file `lean --json`, the community REPL with a process pool, Kimina server client."""
