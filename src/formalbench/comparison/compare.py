"""`compare`: one reference statement against one candidate, BEq and GTED together, in the
shape `formalbench compare` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.lean.backend import LeanBackend
from formalbench.comparison.beq_coq import BeqResult, CoqBeq, _header, parse_statement
from formalbench.comparison.beq_lean import LeanBeq, merged_header, parse_lean_statement
from formalbench.comparison.beq_model import SAMPLES, ModelTier, coq_direction, lean_direction
from formalbench.comparison.coq_trees import coq_trees
from formalbench.comparison.lean_trees import elaborated_trees
from formalbench.core.errors import InputError
from formalbench.llm.base import ChatModel
from formalbench.metrics.coq_optree import CoqParseError
from formalbench.metrics.gted import gted
from formalbench.metrics.lean_optree import LeanParseError, lean_tree


def compare_coq(
    reference: str,
    candidate: str,
    timeout: float = 120.0,
    model: ChatModel | None = None,
    samples: int = SAMPLES,
    project_dir: Path | None = None,
) -> dict[str, Any]:
    """BEq (tier 1, portfolio; tier 2 with `model`) and GTED over Coq's printed terms;
    `project_dir`: a Coq project whose libraries the statements require."""
    project = CoqBackend(timeout=timeout, project_dir=project_dir) if project_dir else None
    beq = CoqBeq(project, timeout=timeout)
    result = beq.compare(reference, candidate)
    if model is not None:
        p = parse_statement(reference, "reference")
        q = parse_statement(candidate, "candidate")
        header = _header(p, q)
        tasks = (coq_direction(p, q, header), coq_direction(q, p, header))
        result = ModelTier(model, beq.backend, samples, timeout=timeout).settle(result, tasks)
    out = _shape(result, timeout)
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
    model: ChatModel | None = None,
    samples: int = SAMPLES,
) -> dict[str, Any]:
    """BEq (tier 1; tier 2 with `model`) through a Lean backend (the given one, else the
    Lake project's) and GTED over the trees of the statements as Lean elaborates them
    (`pp.all`), else from their text (our Lean grammar; `gted` is None where it does not
    parse); `gted_source` says which."""
    own = backend is None
    lean = backend or LeanBackend(project_dir=project_dir, timeout=timeout)
    try:
        result = LeanBeq(lean, timeout=timeout).compare(reference, candidate)
        p = parse_lean_statement(reference, "reference")
        q = parse_lean_statement(candidate, "candidate")
        header = merged_header(p, q)
        if model is not None:
            tasks = (lean_direction(p, q, header), lean_direction(q, p, header))
            result = ModelTier(model, lean, samples, timeout=timeout).settle(result, tasks)
        trees = elaborated_trees(lean, header, [p, q]) if result.compiled else [None, None]
    finally:
        if own:
            lean.close()
    out = _shape(result, timeout)
    tp, tq = trees
    if tp is not None and tq is not None:  # both from Lean, or both from the text
        out["gted"], out["gted_source"] = gted(tp, tq), "elaborated"
        return out
    try:
        out["gted"], out["gted_source"] = gted(lean_tree(reference), lean_tree(candidate)), "text"
    except LeanParseError as exc:
        out["gted"], out["gted_error"] = None, str(exc)
    return out


def _shape(result: BeqResult, timeout: float) -> dict[str, Any]:
    """The printed record: verdicts, the tier that decided, what proved each direction, the
    limit the assistant ran under and the seconds each direction took."""
    return {
        "beq": result.beq,
        "forward": result.forward.counts,
        "backward": result.backward.counts,
        "gted": 0.0,
        "compiled": result.compiled,
        "tier": result.tier,
        "trivial": {"forward": result.forward.trivial, "backward": result.backward.trivial},
        "tactics": {"forward": result.forward.detail, "backward": result.backward.detail},
        "notes": result.notes,
        "timeout": timeout,
        "seconds": {"forward": result.forward.seconds, "backward": result.backward.seconds},
    }


def compare(
    reference: str,
    candidate: str,
    backend: str,
    timeout: float = 120.0,
    *,
    backend_object: Backend | None = None,
    project_dir: Path | None = None,
    model: ChatModel | None = None,
    samples: int = SAMPLES,
) -> dict[str, Any]:
    """`formalbench compare`: BEq and GTED of a candidate against a reference; with a
    model, BEq's tier 2 tries the directions the portfolio left open."""
    if samples < 1:
        raise InputError(f"--samples {samples}: at least one sample")
    if backend == "coq":
        return compare_coq(reference, candidate, timeout, model, samples, project_dir)
    if backend == "lean":
        return compare_lean(
            reference, candidate, timeout, backend_object, project_dir, model, samples
        )
    raise InputError(f"--backend {backend!r}: expected coq or lean")
