"""The AMBER library shipped with formalbench, in Coq (`coq/`) and Lean (`lean/`).

Construction-verification tasks (evaluation, algorithm, transformation) are written against
these structures; `formalbench library path` prints where they are. The Coq library is
compiled on first use (`backends/coq_library.py`)."""

from __future__ import annotations

from pathlib import Path

LIBRARY_DIR = Path(__file__).resolve().parent
COQ_SOURCE_DIR = LIBRARY_DIR / "coq"
LEAN_SOURCE_DIR = LIBRARY_DIR / "lean"
COQ_LOGICAL_ROOT = "Formalbench"  # `From Formalbench Require Import Amber.`
LEAN_MATHLIB_TARGET = "v4.24.0"  # the Mathlib tag the Lean library is written for
