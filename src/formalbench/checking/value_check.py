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
real-number proof depends on. The queries run after the candidate compiled, as one extra
run of coqc in the usual case: the names to ask about are guessed in advance (the file's
own declarations, the refused constants, the identifiers of its definitions and the
constants Coq's notations stand for), and `Locate` resolves each in the file's final
context, so that a local `epsilon` is told apart from `Coq.Logic.Epsilon.epsilon`. A name
the walk meets that no guess covered and that may be the file's own (an `abstract`'s
`answer_subproof`, a `Program` obligation) is asked about in a further run, at most
`MAX_ROUNDS` in all; one still unknown then refuses the construction. The text goes through
the gate like every other run (`CoqBackend.run`).

Proof terms of the file's own lemmas are walked too (a value can be `proj1_sig lemma` of a
lemma `{x | P x}` proved with a choice); a library lemma is a leaf like every library
declaration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_print import ask
from formalbench.backends.coq_queries import LOCAL_MODULE, Located, basename, parse_locate
from formalbench.backends.coq_terms import Printed, parse_print
from formalbench.checking.construction import value_holes
from formalbench.checking.decls import (
    COQ_CLOSERS,
    COQ_DEFINITIONS,
    COQ_THEOREMS,
    Decl,
    split_decls,
)
from formalbench.checking.holes import hole_decls
from formalbench.core.config import VerifierPolicy
from formalbench.core.coq_names import coq8_name
from formalbench.core.lexer import words
from formalbench.core.records import Finding, Language, Reason

# Declarations that make a term `Print` can show.
TERM_KINDS = words(
    "Theorem Definition Fixpoint CoFixpoint Let Function Instance Inductive CoInductive "
    "Variant Record Structure Class Axiom Axioms Parameter Parameters Conjecture"
)
MAX_ROUNDS = 3  # runs of coqc at most per candidate; one in the usual case
# Constants that Coq's standard notations put into a value without their name in the text.
NOTATION_CONSTANTS = (
    *("eq", "and", "or", "not", "iff", "ex", "True", "False", "pair", "prod", "sig", "exist"),
    *("proj1_sig", "nat", "O", "S", "Nat.add", "Nat.mul", "Nat.sub", "Nat.div", "Nat.modulo"),
    *("Nat.pow", "Z", "Z0", "Zpos", "Zneg", "xH", "xO", "xI", "Z.add", "Z.mul", "Z.sub"),
    *("Z.opp", "Z.div", "Z.modulo", "Z.pow", "Z.lt", "Z.le", "R", "IZR", "Rplus", "Rmult"),
    *("Rminus", "Ropp", "Rdiv", "Rinv", "Rlt", "Rle", "Rgt", "Rge", "pow", "Rpower", "le"),
    *("lt", "ge", "gt", "bool", "true", "false", "list", "nil", "cons", "Q", "Qmake"),
)
# `_` alone is the wildcard, not a name (`Locate _.` is a syntax error that costs a run)
_PLAIN_IDENT = re.compile(r"^(?:[A-Za-z]|_[A-Za-z0-9_'])[A-Za-z0-9_'.]*$")
_KEYWORDS = (
    COQ_THEOREMS
    | COQ_DEFINITIONS
    | COQ_CLOSERS
    | words(
        "Proof Term File Library Module Ltac Ltac2 Require Import Export From Open Close Scope "
        "Section End Set Unset Notation Hint Arguments Local Global Program Obligation Next "
        "Fail Time Timeout Type Prop SProp forall fun match with end let in fix cofix if then "
        "else as at return exists exists2 for mod using where IF struct measure wf Qed"
    )
)
_NOT_TERMS = frozenset({"Notation", "Ltac", "Ltac2", "Module", "Module Type", "Abbreviation"})


def matches(path: str, entries: Iterable[str]) -> str | None:
    """The entry a fully qualified `path` is (the full name or a dotted suffix of it), in
    Coq 8's spelling or Rocq 9's (`Stdlib.`/`Corelib.` for `Coq.`)."""
    paths = {path, coq8_name(path)}
    for entry in entries:
        if any(p == entry or p.endswith("." + entry) for p in paths):
            return entry
        if coq8_name(entry) in paths:
            return entry
    return None


class _Names:
    """Printed (shortest) names resolved to qualified paths through `Locate` answers."""

    def __init__(self, located: dict[str, list[Located]]) -> None:
        self.located = located

    def maybe_local(self, printed: str) -> bool:
        """Whether an unresolved name may be the file's own: its basename was never Located,
        or Locate lists an object of the file with that basename."""
        objects = self.located.get(basename(printed))
        if objects is None:
            return True
        return any(o.path.startswith(LOCAL_MODULE + ".") for o in objects)

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
    goal_paths = {f"{LOCAL_MODULE}.{s}" for s in statements}
    choice, extrema = policy.value_refused_for(Language.coq)
    own = _own_decls(candidate)
    # Located in the first run: the file's names, the refused constants, every identifier of
    # the text and the constants Coq's notations for numbers and arithmetic stand for, so
    # that a second run is needed only for a name none of these covers (e.g. the
    # `answer_subproof` an `abstract` made, or `answer_obligation_1` of `Program`).
    guesses = {basename(n) for n in [*own, *choice, *extrema, *NOTATION_CONSTANTS]}
    guesses |= _value_words(candidate)
    located: dict[str, list[Located]] = {}
    printed: dict[str, Printed] = {}
    # The statements are never printed: reaching one refuses the value already, and the
    # printed proof of a long statement can outgrow the output cap and lose every answer.
    to_print = [n for n in own if n not in statements]
    to_locate = sorted(guesses)
    limit = float(timeout or backend.timeout)
    for _round in range(MAX_ROUNDS):
        queries = [f"Locate {n}." for n in to_locate] + [f"Print {n}." for n in to_print]
        answers = ask(backend, candidate, queries, limit)
        if answers.source_error is not None or len(answers.outputs) + len(answers.failed) < len(
            queries
        ):
            why = answers.source_error or f"coqc ended with {answers.status.value}"
            return [_unread(constructions[0], why)]
        for i, n in enumerate(to_locate):
            located[n] = parse_locate(answers.outputs.get(i, []), n)
        names = _Names(located)
        for j, n in enumerate(to_print):
            shown = parse_print(answers.outputs.get(len(to_locate) + j, []))
            path = names.path(n)
            if shown is None or path is None or not path.startswith(LOCAL_MODULE + "."):
                continue
            printed[path] = shown
            for declared in shown.declares:
                target = names.path(declared)
                if target is not None:
                    printed.setdefault(target, shown)
        findings: list[Finding] = []
        unknown: set[str] = set()
        for name in constructions:
            found, missing = _walk(name, names, printed, goal_paths, choice, extrema)
            findings += found
            unknown |= missing
        if findings or not unknown:  # a refusal needs no more names
            return findings
        to_locate = sorted({basename(n) for n in unknown} - set(located))
        to_print = sorted(unknown)
    return [_unread(constructions[0], f"names never resolved: {', '.join(sorted(unknown))}")]


def _unread(name: str, why: str) -> Finding:
    return Finding(
        reason=Reason.non_constructive,
        subject=name,
        message=f"the values of the constructions could not be read from coqc: {why}"[:500],
    )


def _value_words(candidate: str) -> set[str]:
    """Identifiers of the file's definitions (not of proof scripts), keywords left out: a
    keyword after `Locate` is a syntax error that would cost a run."""
    found: set[str] = set()
    for d in split_decls(candidate, Language.coq):
        if d.kind == "Theorem" or d.kind not in TERM_KINDS:
            continue
        for tok in d.tokens[d.head + 1 :]:
            if tok.kind == "ident" and _PLAIN_IDENT.match(tok.text) and tok.text not in _KEYWORDS:
                found.add(basename(tok.text))
    return found


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
) -> tuple[list[Finding], set[str]]:
    """Follow `name`'s value through the file's own declarations: one finding per refused
    constant reached (with the declaration it was reached through), and the printed names
    met that no `Locate` answered yet (they may be the file's own)."""
    start = f"{LOCAL_MODULE}.{name}"
    seen = {start}
    todo = [start]
    findings: list[Finding] = []
    reported: set[str] = set()
    unknown: set[str] = set()
    while todo:
        here = todo.pop()
        answer = printed.get(here)
        if answer is None:
            continue
        through = "" if here == start else f" (through `{here.removeprefix(LOCAL_MODULE + '.')}`)"
        for ref in answer.refs:
            path = names.path(ref)
            if path is None:
                if names.maybe_local(ref):
                    unknown.add(ref)
                continue
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
                if path not in printed:  # the file's own, not printed yet (a projection, ...)
                    unknown.add(ref)
    return findings, unknown


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
