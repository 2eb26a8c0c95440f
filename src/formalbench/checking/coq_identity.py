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
first target cannot be cut out (`context_of` raises `Unsplittable`): both sides are then
compiled whole, the original's inductives renamed side to side (`plans`), and a mismatch is
`undecided`, never left to a text rule.

A candidate whose file begins with the context itself is decided whole first (one compile,
the file as submitted): its copy of the context is the original's, so the context's
declarations are renamed side to side without comparing them to themselves
(`same_text_renamed`), and only a clean pass decides there; anything else goes the split
way, which reuses that compile.

Axioms are read in the identity file too (`axiom_findings`), by full path: one source of
truth for "same statement" and "rests on no disallowed axiom".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_identity import (
    CONTEXT_MODULE,
    ORIGINAL_MODULE,
    RESERVED,
    CoqIdentity,
    IdentityReport,
    TargetPlan,
    instance_sides,
    is_argument,
)
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.checking.coq_functors import Undecided, resolved
from formalbench.checking.coq_plans import (
    POSTULATES,
    SplitBroken,
    Unsplittable,
    all_targets,
    closed,
    context_of,
    opaque_sides,
    plans,
    through_last_target,
    unfolds_in_section,
    wide_context,
)
from formalbench.checking.coq_replay import ReplayBuild
from formalbench.checking.holes import hole_decls
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import CheckResult, Finding, Language, Reason


class KernelIdentity:
    """Runs the identity file for a Coq backend and turns what it decides into findings."""

    def __init__(self, backend: CoqBackend) -> None:
        self.identity = CoqIdentity(backend)
        self.backend = backend
        self.kernel_checks = 0  # how many candidates reached the identity file
        # tasks (originals as compiled) whose whole route gave no answer: split first
        self._split_first: set[str] = set()
        # functors' parameter types as Coq located them, by task (the original's scope)
        self._located: dict[
            tuple[str, tuple[str, str] | None, tuple[str, ...]], list[TargetPlan]
        ] = {}

    def _plan(
        self,
        original: str,
        targets: Sequence[str],
        every: set[str],
        split: tuple[str, str] | None,
        unshared: bool,
        timeout: float | None,
    ) -> list[TargetPlan]:
        """The plan of the targets checked (and of the unnamed ones), functors' parameter
        types located; `Undecided` where a functor's header cannot be read or located."""
        plan = [p for p in plans(original, unshared) if p.name in targets or p.name not in every]
        if any(p.instance is not None for p in plan):
            plan = self._resolved(original, plan, split, timeout)
        return plan

    def _resolved(
        self,
        original: str,
        plan: list[TargetPlan],
        split: tuple[str, str] | None,
        timeout: float | None,
    ) -> list[TargetPlan]:
        """`plan` with its functors' parameter types located in the original's scope: on
        top of the shared context's library where the original is compiled on it."""
        key = (original, split, tuple(p.name for p in plan))
        known = self._located.get(key)
        if known is not None:  # located once per task: `eval` checks many candidates of it
            return known
        limit = float(timeout if timeout is not None else self.backend.timeout)
        if split is None:
            found = resolved(self.backend, original, plan, limit)
        else:
            context, replay = split
            build = self.identity.original(original, context, limit, replay)
            if build.folder is None:
                raise Undecided(f"environment: the original does not compile here: {build.problem}")
            found = resolved(self.backend, original, plan, limit, (context, replay, build.folder))
        self._located[key] = found
        return found

    def _unshared(
        self,
        original: str,
        candidate: str,
        targets: Sequence[str],
        every: set[str],
        timeout: float | None,
        keep: Callable[[Path], Path] | None = None,
    ) -> tuple[IdentityReport, list[TargetPlan]] | None:
        """The identity file with both sides compiled whole (`plans(..., unshared=True)`),
        or None where that route cannot decide either (the candidate or the original does
        not compile whole, a functor's instance not resolved)."""
        try:
            plan = self._plan(original, targets, every, None, True, timeout)
        except Undecided:
            return None
        report = self.identity.check(original, candidate, plan, timeout=timeout, keep=keep)
        if report.undecided is not None or not report.candidate.compiled:
            return None
        return report, plan

    def _whole_first(
        self,
        original: str,
        candidate: str,
        targets: Sequence[str],
        every: set[str],
        timeout: float | None,
        policy: VerifierPolicy,
        context: str,
        keep: Callable[[Path], Path] | None = None,
    ) -> tuple[IdentityReport, list[TargetPlan], bool] | None:
        """The whole route tried before the split one, for a candidate that begins with the
        shared context itself (`same_context`): (its report, its plan, whether it is a clean
        pass: the candidate compiled, the kernel answered with no mismatch and no refused
        axiom). Only a clean pass is the verdict; anything else goes the split way, which
        reuses this compile of the file as submitted. None: nothing compiled (a functor's
        instance not resolved, or a comparison there that cannot pass)."""
        try:
            plan = self._plan(original, targets, every, None, True, timeout)
        except Undecided:
            return None
        plan = same_text_renamed(plan, original, context)
        if compared_by_match(plan, original):
            return None  # it could not pass: the split way, without this identity file
        # the identity file may not pass where the split one would (two copies of a
        # definition that computes `2^63` compared by conversion: Cyclic63.v): bounded
        # here, and a task whose whole route gave no answer goes the split way from then on
        report = self.identity.check(
            original, candidate, plan, timeout=timeout, query_limit=WHOLE_QUERY_LIMIT, keep=keep
        )
        if report.undecided is not None and report.candidate.compiled:
            self._split_first.add(original)
        clean = (
            report.candidate.compiled
            and report.undecided is None
            and not report.mismatches
            and report.checked
            and not axiom_findings(_read_axioms(report.axioms, plan, every), original, policy)
        )
        return report, plan, clean

    def check(
        self,
        original: str,
        candidate: str,
        targets: Sequence[str],
        timeout: float | None,
        policy: VerifierPolicy,
        kept: ReplayBuild | None = None,
    ) -> tuple[CheckResult, list[Finding]]:
        """(the candidate's own compile as the verifier reads it, the findings of the
        identity file: changed statements, disallowed axioms, or why it cannot decide).
        `kept`: where each compile of the candidate is kept, and `kept.library` set to the
        one whose report decided (the input of the coqchk replay, `coq_replay`)."""
        keep = kept.keep if kept is not None else None
        original = through_last_target(closed(original))
        unshared: Unsplittable | None = None
        every = set(all_targets(original))
        try:
            try:
                split = context_of(original)
            except Unsplittable as why:  # compared unshared; a mismatch is then undecided
                split, unshared = None, why
            plan = self._plan(original, targets, every, split, unshared is not None, timeout)
        except Undecided as off_route:
            result = self.backend.check(candidate, timeout=timeout)
            return result, [_undecided(off_route)]
        context, replay = split if split is not None else (None, "")
        prefix = ""
        if context is not None and context in candidate:
            # commands the candidate put before the shared text stay before it in its file
            at = candidate.index(context)
            candidate, prefix = candidate[at:], candidate[:at]
        if context is not None and not candidate.startswith(context):
            changed = self.backend.check(prefix + candidate, timeout=timeout)
            return changed, [_context_changed(context)]
        # the candidate compiled whole, exactly as submitted: the verdict's own compile,
        # compiled first (once) wherever the candidate keeps the shared context
        whole: CheckResult | None = None
        if (
            context is not None
            and original not in self._split_first
            and same_context(original, prefix + candidate, context)
            and not postulates_in(original, context)
        ):
            # its copy of the context is the original's, elaborated alike: the whole route
            # first, which needs only this compile. A clean pass there is the kernel's proof
            # of the original's type resting on no refused axiom (each side's copy of a
            # context postulate is its own: `Candidate.p` is refused there, `FbContext.p` is
            # not on the split route), so it decides; anything else goes the split way.
            tried = self._whole_first(
                original, prefix + candidate, targets, every, timeout, policy, context, keep
            )
            if tried is not None:
                first, first_plan, clean = tried
                whole = first.candidate
                if clean:
                    self.kernel_checks += first.checked
                    if kept is not None:
                        kept.library = first.library
                    axioms = _read_axioms(first.axioms, first_plan, every)
                    return whole.model_copy(update={"axioms": axioms}), []
        if context is not None and whole is None:
            whole = self.backend.check(prefix + candidate, timeout=timeout)
        if whole is not None and not whole.compiled:
            return whole, []  # it does not compile alone, as submitted: refused
        report = self.identity.check(
            original,
            candidate,
            plan,
            context=context,
            replay=replay,
            prefix=prefix,
            timeout=timeout,
            keep=keep,
        )
        split_failed = report.environment or not report.candidate.compiled
        if context is not None and split_failed and replay:
            # the replayed imports shadow the context's own names (SetoidClass.v's `equiv`
            # under RelationClasses'), where the original has them after: imported again.
            # Not always: that also re-imports what the context exports, over a later import
            # (coq-topology Powerset_facts.v imports RelationClasses after Sets on purpose)
            again = self.identity.check(
                original, candidate, plan, context=context,
                replay=f"{replay}Import {CONTEXT_MODULE}.\n", prefix=prefix, timeout=timeout,
                keep=keep,
            )  # fmt: skip
            if again.undecided is None and again.candidate.compiled:
                report, replay = again, f"{replay}Import {CONTEXT_MODULE}.\n"
        if context is not None and (report.environment or not report.candidate.compiled):
            # the split broke, not the statement: a proof may use a name that `destruct`
            # generates (`f0` where the record's projection `f` is a constant of the same
            # file, `f` where it is imported from the context: NeighborhoodBases.v). Both
            # sides compiled whole instead, as for an `Unsplittable` context: a pass is the
            # kernel's, a mismatch is undecided. Only a candidate that kept the context
            # verbatim gets here, and each side's copy of a postulate stays its own.
            whole_route = self._unshared(
                original, prefix + candidate, targets, every, timeout, keep
            )
            if whole_route is not None:
                report, plan = whole_route
                candidate, prefix, context, replay = prefix + candidate, "", None, ""
                unshared = SplitBroken()
        wide = wide_context(original) if report.mismatches and unshared is None else None
        if wide is not None and wide[0] != context and (prefix + candidate).startswith(wide[0]):
            # a statement may unfold to lemmas the file proves before it (`Qed`: opaque, so
            # `Original.l` and `Candidate.l` differ): where the candidate keeps the whole text
            # before the first target, that text is shared instead, and the kernel decides again
            again = self.identity.check(
                original, prefix + candidate, plan, context=wide[0], replay=wide[1],
                timeout=timeout, keep=keep,
            )  # fmt: skip
            if not again.mismatches and again.undecided is None and again.candidate.compiled:
                report, (context, replay) = again, wide
                candidate, prefix = prefix + candidate, ""
        self.kernel_checks += report.checked
        if kept is not None:  # the report that decides: its compile is the one replayed
            kept.library = report.library
        bodies = {p.name for p in plan if p.body}
        findings = [
            _mismatch(target, why, target in bodies) for target, why in report.mismatches.items()
        ]
        if unshared is not None and findings:
            # the statement may speak of a nominal type of each side's own: not decidable
            findings = [_undecided(unshared, f.message) for f in findings]
        opaque = {**unfolds_in_section(original), **opaque_sides(original)}
        findings = [
            Finding(
                reason=Reason.undecided,
                subject=f.subject,
                message=f"undecided: `{f.subject}` {opaque[f.subject]}: {f.message}"[:500],
            )
            if f.subject in opaque and f.reason == Reason.statement_changed
            else f
            for f in findings
        ]
        if report.undecided is not None:
            kind = "environment: " if report.environment else ""
            findings.append(
                Finding(reason=Reason.undecided, message=f"{kind}{report.undecided}"[:500])
            )
        report.axioms = _read_axioms(report.axioms, plan, every)
        findings += axiom_findings(report.axioms, original, policy)
        result = report.candidate.model_copy(update={"axioms": report.axioms})
        if context is None:
            return result, findings
        if not result.compiled:
            first_error = result.errors[:1]
            said = first_error[0].message if first_error else result.status.value
            findings.append(
                Finding(
                    reason=Reason.statement_changed,
                    subject="context",
                    message="the candidate does not compile on top of the task's shared "
                    f"context, so its statements cannot be compared: {said}"[:500],
                )
            )
        # the verdict's diagnostics and lines are those of the file as the candidate wrote
        # it: its compile above where one ran (the same text), else compiled now
        if whole is None:
            whole = self.backend.check(prefix + candidate, timeout=timeout)
        return whole.model_copy(update={"axioms": report.axioms}), findings


def compared_by_match(plan: Sequence[TargetPlan], original: str) -> bool:
    """Whether a definition after the context that the whole route compares by its body is
    written with `match` (Streams.v's `hd`): `pattern` cannot rename an inductive inside a
    `match`, so that comparison fails and the whole route cannot pass. Only the order of
    the routes depends on it, never a verdict."""
    bodies = {p.name for p in plan if p.body}
    if not bodies:
        return False
    decls, _ = hole_decls(original, Language.coq)
    return any(d.name in bodies and any(t.text == "match" for t in d.tokens) for d in decls)


def _read_axioms(
    axioms: Mapping[str, Sequence[str]], plan: Sequence[TargetPlan], every: set[str]
) -> dict[str, list[str]]:
    """The axioms of each target of the original as the verdict names them: the fields of
    a functor's declared arguments (what its statement is about) left out, a field of an
    instance named as the side's functor's (`Candidate.F.adm`)."""
    sides = instance_sides(plan)
    return {
        t: [_side_name(n, sides) for n in a if not is_argument(n)]
        for t, a in axioms.items()
        if t in every
    }


# seconds for the identity file of the whole route tried first (a clean pass answers in
# about a second: `Print Assumptions` of the heaviest stdlib proofs measured, Machin.v)
WHOLE_QUERY_LIMIT = 10.0
_BLANKS = frozenset(" \t\r\n")
# a context declaring these cannot pass whole: a proof that uses the task's postulate rests
# on the candidate's copy of it there (`Candidate.classic`, refused), and a `Primitive` type
# cannot be declared by both libraries in one file
_POSTULATING = frozenset(
    ("Axiom", "Axioms", "Parameter", "Parameters", "Conjecture", "Declare", "Primitive")
)
_NOMINAL = frozenset(("Inductive", "CoInductive", "Variant"))  # each has its `_ind` plan


def same_context(original: str, candidate: str, context: str) -> bool:
    """Whether the candidate's file begins with the task's shared context itself, followed,
    as in the original, by a blank: then its copy of the context is the original's own,
    declaration by declaration (the same sentences, first in a file compiled with the same
    flags; a blank after the last `.` ends that sentence, so nothing after it joins it).
    A command the candidate puts before the context (`prefix`) may change what the context
    means (a `Module Nat` shadowing `Nat.succ` in a constructor's type): not here."""
    at = len(context)
    return (
        candidate.startswith(context)
        and candidate[at : at + 1] in _BLANKS
        and original[at : at + 1] in _BLANKS
    )


def postulates_in(original: str, context: str) -> bool:
    """Whether the shared context postulates something (`_POSTULATING`): the split route,
    where the task's postulates are `FbContext.*` and allowed, is then taken first. Only
    the order of the routes depends on it, never a verdict."""
    decls, _ = hole_decls(original, Language.coq)
    return any(d.end <= len(context) and d.kind in _POSTULATING for d in decls)


def same_text_renamed(plan: Sequence[TargetPlan], original: str, context: str) -> list[TargetPlan]:
    """`plan` (`plans(..., unshared=True)`) without the checks of the shared context's own
    declarations, for a candidate whose copy of the context is the original's
    (`same_context`): an inductive's `_ind`, a record's `Scheme` and projections, a
    definition's body or a lemma's type there would only compare a declaration with its own
    copy. They are still renamed side to side (`Original.color` -> `Candidate.color`), and
    everything after the context is checked as before. This also lets through what those
    checks cannot read: a `CoInductive` (no `_ind`), an inductive under `Unset Elimination
    Schemes`, a definition by `match`."""
    decls, holes = hole_decls(original, Language.coq)
    own: set[str] = set()
    later: set[str] = set()  # never dropped: a name declared again after the context
    for d in decls:
        if not d.name:
            continue
        if d.end > len(context) or d.index in holes:
            later.add(d.name)
        elif d.kind in _NOMINAL:
            own.update((d.name, f"{d.name}_ind"))
        else:
            own.add(d.name)
    return [p for p in plan if p.name in later or p.name not in own]


def _side_name(name: str, sides: Mapping[str, str]) -> str:
    """A field of an instance module by the functor it applies (`Candidate.F.adm`)."""
    head, _, rest = name.partition(".")
    return f"{sides[head]}.{rest}" if head in sides and rest else name


def _mismatch(target: str, why: str, body: bool) -> Finding:
    """The identity file refused a target: no such constant in the candidate's library
    (`missing_target`), or another statement (`statement_changed`); or a definition the
    statements unfold is not the original's (`statement_changed`)."""
    if body:
        message = f"definition `{target}` is not the original's (kernel check): {why}"
        return Finding(reason=Reason.statement_changed, subject=target, message=message[:500])
    if f"{LOCAL_MODULE}.{target} was not found" in why:
        message = f"target `{target}` is not a top-level constant of the candidate: {why}"
        return Finding(reason=Reason.missing_target, subject=target, message=message[:500])
    message = f"`{target}` does not prove the original statement (kernel check): {why}"
    return Finding(reason=Reason.statement_changed, subject=target, message=message[:500])


def given_postulates(original: str) -> set[str]:
    """Full paths of the postulates the original itself declares outside its holes (a
    `Parameter` the task states): `Original.p` in the identity file."""
    decls, holes = hole_decls(original, Language.coq)
    return {
        f"{ORIGINAL_MODULE}.{d.name}"
        for d in decls
        if d.name and d.kind in POSTULATES and d.index not in holes
    }


def axiom_findings(
    axioms: Mapping[str, Sequence[str]], original: str, policy: VerifierPolicy
) -> list[Finding]:
    """Which axioms of the identity constants are refused, by full path: anything of the
    candidate's own library (`Candidate.*`, whatever it is named); of the original's, only
    what the original postulates outside its holes; the shared context's (`FbContext.*`,
    the task's own text verbatim) always allowed; a library axiom as the policy says. A
    name of the identity file's own modules (`RESERVED*`: a functor applied there) is the
    candidate's postulate (or the original's) made a field of that instance: refused. The
    fields of its declared arguments were taken out before (`is_argument`)."""
    given = given_postulates(original) if axioms else set()
    findings = []
    for target, names in axioms.items():
        for name in names:
            head = name.split(".", 1)[0]
            if head == CONTEXT_MODULE or name in given:
                continue
            own = head in (LOCAL_MODULE, ORIGINAL_MODULE) or head.startswith(RESERVED)
            if not own and (policy.allow_library_axioms or name in (policy.allowed_axioms or [])):
                continue
            findings.append(
                Finding(
                    reason=Reason.disallowed_axiom,
                    subject=name,
                    message=f"`{target}` depends on the axiom `{name}`",
                )
            )
    return findings


def _undecided(why: Exception, kernel: str = "") -> Finding:
    if isinstance(why, SplitBroken):
        message = (
            "a side does not compile on top of the task's shared context as a library (a "
            "proof may use a hypothesis name generated after a field of the context's "
            "records), so both sides were compiled whole, each with its own copy of the "
            f"context, and the statements differ there: {kernel}"
        )
    elif isinstance(why, Unsplittable):
        message = (
            f"the task's inductives or postulates before `{why}` are inside a section or "
            "module still open there, so both sides have their own copy; renamed "
            "side to side, the statements still differ (a `match` on such a type cannot "
            f"be renamed, and no text rule decides in the kernel's place): {kernel}"
        )
    else:
        message = str(why)
    return Finding(reason=Reason.undecided, message=f"undecided: {message}"[:500])


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
