"""`compare`: one reference statement against one candidate, BEq and GTED together, in the
shape `formalbench compare` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from formalbench.backends.base import Backend
from formalbench.backends.lean.backend import LeanBackend
from formalbench.comparison.beq_coq import BeqResult, CoqBeq, _header, parse_statement
from formalbench.comparison.beq_lean import LeanBeq
from formalbench.comparison.coq_trees import coq_trees
from formalbench.core.errors import InputError
from formalbench.metrics.coq_optree import CoqParseError
from formalbench.metrics.gted import gted
from formalbench.metrics.lean_optree import LeanParseError, lean_tree


def compare_coq(reference: str, candidate: str, timeout: float = 120.0) -> dict[str, Any]:
    """BEq (tier 1, portfolio) and GTED over Coq's fully printed terms."""
    beq = CoqBeq(timeout=timeout)
    result = beq.compare(reference, candidate)
    out = _shape(result)
    if result.compiled:
        p = parse_statement(reference, "reference")
        q = parse_statement(candidate, "candidate")
        try:
            tp, tq = coq_trees(_header(p, q), [p, q], beq.backend)
        except CoqParseError as exc:
            raise InputError(f"cannot read Coq's printed statement: {exc}") from None
        out["gted"] = gted(tp, tq)
    return out


def compare_lean(
    reference: str,
    candidate: str,
    timeout: float = 120.0,
    backend: Backend | None = None,
    project_dir: Path | None = None,
) -> dict[str, Any]:
    """BEq (tier 1) through a Lean backend (the given one, else the Lake project's) and GTED
    from the statements' text (our Lean grammar; `gted` is None where it does not parse)."""
    own = backend is None
    lean = backend or LeanBackend(project_dir=project_dir, timeout=timeout)
    try:
        result = LeanBeq(lean, timeout=timeout).compare(reference, candidate)
    finally:
        if own:
            lean.close()
    out = _shape(result)
    try:
        out["gted"] = gted(lean_tree(reference), lean_tree(candidate))
    except LeanParseError as exc:
        out["gted"], out["gted_error"] = None, str(exc)
    return out


def _shape(result: BeqResult) -> dict[str, Any]:
    return {
        "beq": result.beq,
        "forward": result.forward.counts,
        "backward": result.backward.counts,
        "gted": 0.0,
        "compiled": result.compiled,
        "tier": result.tier,
        "trivial": {"forward": result.forward.trivial, "backward": result.backward.trivial},
        "tactics": {"forward": result.forward.detail, "backward": result.backward.detail},
    }


def compare(
    reference: str,
    candidate: str,
    backend: str,
    timeout: float = 120.0,
    *,
    backend_object: Backend | None = None,
    project_dir: Path | None = None,
) -> dict[str, Any]:
    """`formalbench compare`: BEq and GTED of a candidate against a reference."""
    if backend == "coq":
        return compare_coq(reference, candidate, timeout)
    if backend == "lean":
        return compare_lean(reference, candidate, timeout, backend_object, project_dir)
    raise InputError(f"--backend {backend!r}: expected coq or lean")
