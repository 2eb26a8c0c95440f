"""The value-level check of Lean construction tasks, through the REPL's `#print`.

The Coq check (`value_check`) has its Lean counterpart here: after the candidate compiled,
one more run of the backend on the candidate followed by a fixed query line per
declaration of the file, `set_option pp.all true in … #print _root_.NAME` (the options of
`lean_identity.QUERY_PREFIX`: no notation, full names), answered on that line. The
constants each value mentions are followed through the file's own declarations; a value
that reaches a choice operator (`Classical.choose`, `Exists.choose`, `Nonempty.some`,
`Classical.epsilon`, `Classical.choice`, `Classical.indefiniteDescription`), a library
infimum/supremum (`sInf`, `sSup`, `iInf`, `iSup`, `Function.argmin`, `Function.invFun`) or
the task's own statement is refused with `non_constructive`.

`#print axioms` is no help here (every real-number definition already depends on
`Classical.choice`). Names are read from the printed text with its binders (`lean_printed.constants`):
keywords (`def`, `fun`), bound variables, attribute names (`@[implicit_reducible]`), universe
levels and field labels are not constants. With `pp.fullNames` a library constant is printed by
its full name, so a bound variable (never dotted) cannot hide a dotted one.
An answer that is missing or cut short (`⋯`) refuses the construction, as in the Coq check.
"""

from __future__ import annotations

from formalbench.backends.base import Backend
from formalbench.checking import lean_printed
from formalbench.checking.construction import value_holes
from formalbench.checking.decls import split_decls
from formalbench.checking.holes import hole_decls
from formalbench.checking.lean_identity import (
    QUERY_PREFIX,
    Subject,
    take_answers,
    with_queries,
)
from formalbench.checking.value_check import matches
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Language, Reason

_DECL_KINDS = frozenset({"def", "abbrev", "instance", "opaque", "theorem", "structure"})


def lean_value_findings(
    backend: Backend,
    original: str,
    candidate: str,
    policy: VerifierPolicy,
    timeout: float | None = None,
) -> list[Finding]:
    """Findings on the values of the original's constructions in the compiled `candidate`."""
    if not policy.value_check:
        return []
    orig, holes = hole_decls(original, Language.lean)
    constructions = value_holes(orig, holes, Language.lean)
    if not constructions:
        return []
    goals = {d.name for d in orig if d.index in holes and d.name and d.kind == "theorem"}
    own = list(
        dict.fromkeys(
            d.name
            for d in split_decls(candidate, Language.lean)
            if d.name and d.kind in _DECL_KINDS and " " not in d.name
        )
    )
    items = [Subject(n, n in constructions, f"{QUERY_PREFIX}#print _root_.{n}") for n in own]
    queries = with_queries(candidate, items)
    result = backend.check(queries.text, timeout=timeout)
    _, answers = take_answers(result, queries)
    printed: dict[str, list[str]] = {}
    for name in own:
        text = "\n".join(d.message for d in answers.get(name, []))
        if text and lean_printed.answer_problem(text) is None:
            printed[name] = _names(text, name)
    choice, extrema = policy.value_refused_for(Language.lean)
    findings: list[Finding] = []
    for name in constructions:
        if name not in printed:
            findings.append(
                Finding(
                    reason=Reason.non_constructive,
                    subject=name,
                    message=f"Lean did not print the value of `{name}`, so it cannot be "
                    "checked for choice",
                )
            )
            continue
        findings += _walk(name, printed, goals, choice, extrema)
    return findings


def _names(text: str, name: str) -> list[str]:
    """Constant names in a `#print` answer, its own name (the header) left out: keywords, bound
    variables, attribute names, universe levels and field labels are not constants
    (`lean_printed.constants`)."""
    return [c for c in lean_printed.constants(text) if c != name]


def _walk(
    name: str,
    printed: dict[str, list[str]],
    goals: set[str],
    choice: list[str],
    extrema: list[str],
) -> list[Finding]:
    seen = {name}
    todo = [name]
    findings: list[Finding] = []
    while todo:
        here = todo.pop()
        through = "" if here == name else f" (through `{here}`)"
        for ref in printed.get(here, []):
            problem = None
            if ref in goals:
                problem = "the task's own statement, not a construction"
            elif ref not in printed and matches(ref, choice):
                problem = "a choice operator, not a construction"
            elif ref not in printed and matches(ref, extrema):
                problem = "a library infimum/supremum of a set, not a construction of the optimum"
            if problem is not None:
                findings.append(
                    Finding(
                        reason=Reason.non_constructive,
                        subject=ref,
                        message=f"the value of `{name}` uses `{ref}`{through}: {problem}",
                    )
                )
            elif ref in printed and ref not in seen:
                seen.add(ref)
                todo.append(ref)
    return findings
