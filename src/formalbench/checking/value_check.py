"""The value-level check of construction tasks: what the *elaborated* value really uses.

The text layer (`construction.py`) reads the candidate's tokens; notations, coercions,
`Require`d helpers with innocent names and tactics that build terms (`exact (proj1_sig
(constructive_indefinite_description _ h))` inside `Definition answer : R. Proof. ...
Defined.`) hide a choice from it. Here coqc prints each of the file's own declarations
with every notation off (`Set Printing All. Print c.`), and the constants each value
refers to are followed through the file's own declarations down to the library, where the
walk stops (`backends.coq_terms` reads the printed terms, bound variables by scope). A
construction is refused with `non_constructive` when the walk reaches

* a choice operator (`epsilon`, `constructive_indefinite_description`, ...),
* a library infimum/supremum (`Glb_Rbar`, `Lub_Rbar`, ...: the optimum of the problem's own
  feasible set is no construction; `VerifierPolicy.value_extrema`, [] turns it off), or
* one of the task's own statements (its theorems), directly or through a declaration
  that mentions it.

`Print Assumptions` cannot do this: a `Glb_Rbar` answer depends only on the axioms every
real-number proof depends on. Everything is asked in one extra run of coqc per candidate,
after the candidate compiled: the names are known in advance (the file's own declarations,
and the refused constants, which `Locate` resolves in the file's final context so that a
local `epsilon` is told apart from `Coq.Logic.Epsilon.epsilon`). The text goes through the
gate like every other run (`CoqBackend.run`).

Proof terms of the file's own lemmas are walked too (a value can be `proj1_sig lemma` of a
lemma `{x | P x}` proved with a choice); a library lemma is a leaf like every library
declaration.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_print import ask
from formalbench.backends.coq_queries import LOCAL_MODULE, Located, basename, parse_locate
from formalbench.backends.coq_terms import Printed, parse_print
from formalbench.checking.construction import value_holes
from formalbench.checking.decls import Decl, split_decls
from formalbench.checking.holes import hole_decls
from formalbench.checking.lexer import words
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Language, Reason

# Declarations that make a term `Print` can show.
TERM_KINDS = words(
    "Theorem Definition Fixpoint CoFixpoint Let Function Instance Inductive CoInductive "
    "Variant Record Structure Class Axiom Axioms Parameter Parameters Conjecture"
)
_NOT_TERMS = frozenset({"Notation", "Ltac", "Ltac2", "Module", "Module Type", "Abbreviation"})


def matches(path: str, entries: Iterable[str]) -> str | None:
    """The entry a fully qualified `path` is (the full name or a dotted suffix of it)."""
    for entry in entries:
        if path == entry or path.endswith("." + entry):
            return entry
    return None


class _Names:
    """Printed (shortest) names resolved to qualified paths through `Locate` answers."""

    def __init__(self, located: dict[str, list[Located]]) -> None:
        self.located = located

    def path(self, printed: str) -> str | None:
        objects = [o for o in self.located.get(basename(printed), []) if o.kind not in _NOT_TERMS]
        exact = [o.path for o in objects if o.shortest == printed]
        if exact:
            return exact[0]
        suffix = [o.path for o in objects if o.path.endswith("." + printed)]
        return suffix[0] if len(suffix) == 1 else None


def value_findings(
    backend: CoqBackend,
    original: str,
    candidate: str,
    policy: VerifierPolicy,
    timeout: float | None = None,
) -> list[Finding]:
    """Findings on the values of the original's constructions in the compiled `candidate`."""
    if not policy.value_check:
        return []
    orig, holes = hole_decls(original, Language.coq)
    constructions = value_holes(orig, holes, Language.coq)
    if not constructions:
        return []
    statements = {d.name for d in orig if d.index in holes and d.name and d.kind == "Theorem"}
    own = _own_decls(candidate)
    choice, extrema = policy.value_refused_for(Language.coq)
    refused = [*choice, *extrema]
    lookups = sorted({basename(n) for n in own} | {basename(e) for e in refused})
    queries = [f"Locate {n}." for n in lookups] + [f"Print {n}." for n in own]
    answers = ask(backend, candidate, queries, float(timeout or backend.timeout))
    if answers.source_error is not None or len(answers.outputs) + len(answers.failed) < len(
        queries
    ):
        why = answers.source_error or f"coqc ended with {answers.status.value}"
        return [
            Finding(
                reason=Reason.non_constructive,
                subject=constructions[0],
                message=f"the values of the constructions could not be read from coqc: {why}"[
                    :500
                ],
            )
        ]
    located = {
        n: parse_locate(answers.outputs.get(i, []), n) for i, n in enumerate(lookups)
    }
    names = _Names(located)
    printed: dict[str, Printed] = {}
    for j, n in enumerate(own):
        answer = parse_print(answers.outputs.get(len(lookups) + j, []))
        if answer is None:
            continue
        path = names.path(n) or f"{LOCAL_MODULE}.{n}"
        printed[path] = answer
        for declared in answer.declares:
            target = names.path(declared)
            if target is not None:
                printed.setdefault(target, answer)
    goal_paths = {f"{LOCAL_MODULE}.{s}" for s in statements}
    findings: list[Finding] = []
    for name in constructions:
        findings += _walk(name, names, printed, goal_paths, choice, extrema)
    return findings


def _own_decls(candidate: str) -> list[str]:
    decls: list[Decl] = split_decls(candidate, Language.coq)
    return list(dict.fromkeys(d.name for d in decls if d.name and d.kind in TERM_KINDS))


def _walk(
    name: str,
    names: _Names,
    printed: dict[str, Printed],
    goals: set[str],
    choice: list[str],
    extrema: list[str],
) -> list[Finding]:
    """Follow `name`'s value through the file's own declarations; one finding per refused
    constant reached (with the declaration it was reached through)."""
    start = f"{LOCAL_MODULE}.{name}"
    seen = {start}
    todo = [start]
    findings: list[Finding] = []
    reported: set[str] = set()
    while todo:
        here = todo.pop()
        answer = printed.get(here)
        if answer is None:
            continue
        through = "" if here == start else f" (through `{here.removeprefix(LOCAL_MODULE + '.')}`)"
        for ref in answer.refs:
            path = names.path(ref)
            if path is None:
                continue  # a library name no rule is about
            problem = _problem(path, goals, choice, extrema)
            if problem is not None and path not in reported:
                reported.add(path)
                findings.append(
                    Finding(
                        reason=Reason.non_constructive,
                        subject=ref,
                        message=f"the value of `{name}` uses `{path}`{through}: {problem}",
                    )
                )
            if path.startswith(LOCAL_MODULE + ".") and path not in seen:
                seen.add(path)
                todo.append(path)
    return findings


def _problem(path: str, goals: set[str], choice: list[str], extrema: list[str]) -> str | None:
    if path in goals:
        return "the task's own statement, not a construction"
    if path.startswith(LOCAL_MODULE + "."):
        return None
    if matches(path, choice):
        return "a choice operator, not a construction"
    if matches(path, extrema):
        return "a library infimum/supremum of a set, not a construction of the optimum"
    return None
