"""`compare`: one reference statement against one candidate, BEq and GTED together, in the
shape `formalbench compare` prints."""

from __future__ import annotations

from typing import Any

from formalbench.comparison.beq_coq import CoqBeq, _header, parse_statement
from formalbench.comparison.coq_trees import coq_trees
from formalbench.core.errors import InputError
from formalbench.metrics.coq_optree import CoqParseError
from formalbench.metrics.gted import gted


def compare_coq(reference: str, candidate: str, timeout: float = 120.0) -> dict[str, Any]:
    """BEq (tier 1, portfolio) and GTED over Coq's fully printed terms."""
    beq = CoqBeq(timeout=timeout)
    result = beq.compare(reference, candidate)
    out: dict[str, Any] = {
        "beq": result.beq,
        "forward": result.forward.counts,
        "backward": result.backward.counts,
        "gted": 0.0,
        "compiled": result.compiled,
        "tier": result.tier,
        "trivial": {"forward": result.forward.trivial, "backward": result.backward.trivial},
    }
    if result.compiled:
        p = parse_statement(reference, "reference")
        q = parse_statement(candidate, "candidate")
        try:
            tp, tq = coq_trees(_header(p, q), [p, q], beq.backend)
        except CoqParseError as exc:
            raise InputError(f"cannot read Coq's printed statement: {exc}") from None
        out["gted"] = gted(tp, tq)
    return out


def compare(reference: str, candidate: str, backend: str, timeout: float = 120.0) -> dict[str, Any]:
    if backend == "coq":
        return compare_coq(reference, candidate, timeout)
    if backend == "lean":
        raise InputError(
            "--backend lean: BEq needs a Lean toolchain and its portfolio is not built yet; "
            "use `formalbench metrics gted` for the Lean GTED"
        )
    raise InputError(f"--backend {backend!r}: expected coq or lean")
