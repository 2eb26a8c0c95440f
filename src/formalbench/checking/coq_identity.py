"""The Coq verdict on "same statement, same context", asked of the kernel (`backends.coq_identity`).

The text layer compares token streams; it can be misled by what it does not model (a
`Time`-prefixed command, a proof closed by `Proof term.`, a `where` notation, what a
`Require Import` brings in, a character Python reads as a space and Coq does not ...). Here
the kernel decides: each target of the candidate must have the original's elaborated type.

What must be shared rather than compared: constants that conversion cannot identify across
two files. A task's `Parameter`/`Axiom`/`Conjecture` (anywhere), a `Variable`/`Hypothesis`/
`Context` outside a section (a global assumption), an `Inductive`/`CoInductive`/`Variant`/
`Record`/`Structure`/`Class`, an `Instance`, `Declare Module`: `Original.color` and
`Candidate.color` are different inductives. When the original has such a declaration before
its first target, its text up to the end of the last one (closed at top level) is the
*context*: the candidate must contain exactly that text (commands it adds before it, such as
a `Require`, stay before it), and both sides are compiled on
top of it as one library. A context that ends inside a section or module still open at the
first target cannot be cut out; such a task keeps the text layer's verdict alone (see
`context_of`, which raises `Unsplittable`), as does a task with a value to construct (a
`Definition` hole: `_value_holes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_identity import CONTEXT_MODULE, CoqIdentity
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.checking.holes import hole_decls
from formalbench.core.lexer import words
from formalbench.core.records import CheckResult, Finding, Language, Reason

_ALWAYS_NEW = words(
    "Parameter Parameters Axiom Axioms Conjecture Inductive CoInductive Variant Record Structure Class Instance Declare"
)
_GLOBAL_OUTSIDE_SECTIONS = words("Variable Variables Hypothesis Hypotheses Context")
# Commands of the context that `Require Import FbContext` does not carry into the rest (an
# `Import` is not re-exported, a `Local Open Scope` ends with the file): they are run again,
# as the original has them, at the top of both split files.
_REPLAYED = words("Require From Import Export Open Close Set Unset Delimit Bind")


class Unsplittable(Exception):
    """The original's shared context ends inside a section or module open at a target."""


def context_of(original: str) -> tuple[str, str] | None:
    """The original's text that both sides must share and the commands of it to replay
    (None: none is needed); raises `Unsplittable` when that text cannot be cut at top
    level before the first target."""
    decls, holes = hole_decls(original, Language.coq)
    scopes: list[str] = []
    pending = False
    cut: int | None = None
    replay: list[str] = []
    for d in decls:
        if d.index in holes:
            if pending:
                raise Unsplittable(d.name or "")
            break
        kind = d.kind
        if kind in _REPLAYED and not scopes:
            replay.append(original[d.start : d.end])
        in_section = "Section" in scopes
        if kind in _ALWAYS_NEW or (kind in _GLOBAL_OUTSIDE_SECTIONS and not in_section):
            pending = True
        if kind in ("Section", "Module") and not any(t.text == ":=" for t in d.tokens):
            scopes.append(kind)
        elif kind == "End" and scopes:
            scopes.pop()
        if pending and not scopes:
            cut, pending, kept = d.end, False, len(replay)
    if cut is None:
        return None
    return original[:cut], "".join(r + "\n" for r in replay[:kept])


_PLAIN = ("", "")  # marker: this task keeps the text layer's verdict alone


def _value_holes(original: str) -> bool:
    """Whether a target is a value to construct (`Definition f : T. Admitted.`): a later
    statement about `f` speaks of `Original.f` on one side and of the candidate's `f` on the
    other, so comparing the two types would refuse every answer; such tasks (evaluation,
    algorithm) keep the text layer's comparison and the construction checks."""
    decls, holes = hole_decls(original, Language.coq)
    return any(decls[i].kind != "Theorem" for i in holes)


class KernelIdentity:
    """Runs the kernel identity check for a Coq backend and turns it into findings."""

    def __init__(self, backend: CoqBackend) -> None:
        self.identity = CoqIdentity(backend)
        self.backend = backend
        # how many candidates' identity the statement prefix showed / the third file checked
        self.fast_paths = 0
        self.kernel_checks = 0
        self.fast = True  # False: always the third file (the bench measures both)

    def check(
        self, original: str, candidate: str, targets: Sequence[str], timeout: float | None
    ) -> tuple[CheckResult, CheckResult | None, list[Finding]]:
        """(the candidate's check as the verifier reads it, the check of its split form when
        the task has a shared context, the identity findings)."""
        try:
            split = context_of(original)
        except Unsplittable:
            split = _PLAIN
        if split is _PLAIN or _value_holes(original):
            return self.backend.check(candidate, targets=targets, timeout=timeout), None, []
        context, replay = split if split is not None else (None, "")
        if context is not None and context in candidate:
            # commands the candidate put before the shared text stay before it in its file
            at = candidate.index(context)
            candidate, prefix = candidate[at:], candidate[:at]
        else:
            prefix = ""
        if context is not None and not candidate.startswith(context):
            whole = self.backend.check(candidate, targets=targets, timeout=timeout)
            return whole, None, [_context_changed(context)]
        report = self.identity.check(
            original,
            candidate,
            targets,
            context=context,
            replay=replay,
            prefix=prefix,
            timeout=timeout,
            starts=_starts(original) if self.fast else None,
        )
        self.fast_paths += report.fast
        self.kernel_checks += report.checked
        findings = [
            Finding(
                reason=Reason.statement_changed,
                subject=target,
                message=f"`{target}` does not prove the original statement (kernel check): {why}"[
                    :500
                ],
            )
            for target, why in report.mismatches.items()
        ]
        if context is None:
            return report.candidate, None, findings
        if not report.candidate.compiled:
            first = report.candidate.errors[:1]
            why = first[0].message if first else report.candidate.status.value
            findings.append(
                Finding(
                    reason=Reason.statement_changed,
                    subject="context",
                    message="the candidate does not compile on top of the task's shared "
                    f"context, so its statements cannot be compared: {why}"[:500],
                )
            )
        # the verdict's diagnostics and lines are those of the file as the candidate wrote it
        whole = self.backend.check(prefix + candidate, targets=targets, timeout=timeout)
        return whole, _renamed(report.candidate), findings


def _renamed(result: CheckResult) -> CheckResult:
    """Axioms of the split compile, the shared context's named as the file's own (so the
    rule for task-declared postulates applies to them as to `Candidate.p`)."""
    prefix = f"{CONTEXT_MODULE}."
    axioms = {
        t: [LOCAL_MODULE + a[len(CONTEXT_MODULE) :] if a.startswith(prefix) else a for a in names]
        for t, names in result.axioms.items()
    }
    return result.model_copy(update={"axioms": axioms})


def _starts(original: str) -> dict[str, int]:
    """Where each target's declaration starts in the original (for the fast path, which
    checks it against coqc's own sentence spans of the original)."""
    decls, holes = hole_decls(original, Language.coq)
    return {name: decls[i].start for i in holes if (name := decls[i].name)}


def _context_changed(context: str) -> Finding:
    last = context.rstrip().splitlines()[-1] if context.strip() else ""
    return Finding(
        reason=Reason.statement_changed,
        subject="context",
        message="the candidate must keep the task's declarations up to its first target "
        f"verbatim (they are shared with the original); it changes them up to `{last[:80]}`",
    )


def kernel_identity_for(backend: Backend | None, language: Language) -> KernelIdentity | None:
    """The kernel identity check where the backend is a real coqc backend, else None."""
    if language == Language.coq and isinstance(backend, CoqBackend):
        return KernelIdentity(backend)
    return None
