"""`compare`: one reference statement against one candidate, BEq and GTED together, in the
shape `formalbench compare` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.lean.backend import LeanBackend
from formalbench.backends.sandbox import work_dir
from formalbench.comparison.beq_coq import BeqResult, CoqBeq, parse_statement
from formalbench.comparison.beq_lean import LeanBeq, parse_lean_statement
from formalbench.comparison.beq_model import SAMPLES, ModelTier, coq_direction, lean_direction
from formalbench.comparison.coq_sides import load_path, local_names
from formalbench.comparison.lean_trees import elaborated_trees
from formalbench.core.errors import InputError
from formalbench.llm.base import ChatModel
from formalbench.metrics.coq_optree import CoqParseError, coq_tree
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
    """BEq (tier 1, portfolio; tier 2 with `model`) and GTED over Coq's printed terms, each
    statement elaborated in its own header only (`coq_sides`); `project_dir`: a Coq project
    whose libraries the statements require (read-only)."""
    project = CoqBackend(timeout=timeout, project_dir=project_dir) if project_dir else None
    beq = CoqBeq(project, timeout=timeout)
    with work_dir("beq") as tmp:
        folder = Path(tmp)
        result = beq.compare(reference, candidate, folder)
        if model is not None and result.names is not None:
            p = parse_statement(reference, "reference")
            q = parse_statement(candidate, "candidate")
            ref, cand = result.names
            # the verifier's coqc finds the statement libraries under their logical path
            checker = CoqBackend(timeout=timeout, args=load_path(folder), project_dir=project_dir)
            tasks = (coq_direction(p, q, (ref, cand)), coq_direction(q, p, (cand, ref)))
            result = ModelTier(model, checker, samples, timeout=timeout).settle(result, tasks)
    out = _shape(result, timeout)
    out.update(
        coq_gted(result) if result.compiled else {"gted_error": "the candidate is not accepted"}
    )
    return out


def coq_gted(result: BeqResult) -> dict[str, Any]:
    """`{"gted": score}`, or `{"gted": None, "gted_error": why}` when Coq printed no term
    or the operator-tree reader cannot read one: BEq stands without it."""
    if result.printed is None:
        return {"gted": None, "gted_error": "coqc did not print both statements"}
    try:
        tp, tq = (coq_tree(local_names(t)) for t in result.printed)
    except CoqParseError as exc:
        return {"gted": None, "gted_error": f"cannot read Coq's printed statement: {exc}"}
    return {"gted": gted(tp, tq)}


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
        if model is not None:
            roles = ("reference", "candidate")
            tasks = (lean_direction(p, q, roles), lean_direction(q, p, roles[::-1]))
            result = ModelTier(model, lean, samples, timeout=timeout).settle(result, tasks)
        trees = elaborated_trees(lean, [p, q]) if result.compiled else [None, None]
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
    """The printed record: verdicts, why, the tier that decided, what proved each direction
    (with the other statement, and alone where the goal is trivial), the limit the assistant
    ran under and the seconds each direction took. `gted` is filled in by the caller."""
    f, b = result.forward, result.backward
    return {
        "beq": result.beq,
        "undecided": f.undecided or b.undecided,
        "reason": reason(result),
        "forward": f.counts,
        "backward": b.counts,
        "gted": None,
        "compiled": result.compiled,
        "tier": result.tier,
        "trivial": {"forward": f.trivial, "backward": b.trivial},
        "tactics": {
            "forward": f.detail if f.proved else "",
            "backward": b.detail if b.proved else "",
        },
        "alone": {"forward": f.alone, "backward": b.alone},
        "notes": result.notes,
        "timeout": timeout,
        "seconds": {"forward": f.seconds, "backward": b.seconds},
    }


def reason(result: BeqResult) -> str:
    """Why the verdict is what it is, in one sentence a person reads."""
    f, b = result.forward, result.backward
    if not result.compiled:
        return f"the candidate is not accepted: {f.detail or 'it does not type-check'}"
    if result.beq:
        return "each statement was proved from the other, and neither is provable alone"
    if f.undecided or b.undecided:
        stopped = f if f.undecided else b
        return f"undecided: {stopped.detail}"
    if f.trivial and b.trivial:
        return (
            "both statements are provable without the other, so deriving one from the "
            "other shows nothing (a trivially true statement would match everything)"
        )
    said = []
    for d, goal, given in ((f, "candidate", "reference"), (b, "reference", "candidate")):
        if d.trivial:
            said.append(f"the {goal} is provable without the {given}")
        elif not d.proved:
            why = " ".join(d.detail.split())[:200]
            said.append(f"the {goal} was not derived from the {given}{f' ({why})' if why else ''}")
    return "; ".join(said)


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
