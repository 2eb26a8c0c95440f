"""Statement identity decided by Lean: the candidate's targets have the original's types.

The text layer compares declarations as token streams; what a statement *means* depends on
everything Lean elaborates before it (instances, notations, `open`s, section variables, an
indented command the splitter did not see). So, as SafeVerify and leanprover/comparator do
(compare each target constant's type, and its axioms, between the reference environment and
the candidate's), Lean itself is asked:

1. Fixed query lines of ours are appended to the original (holes as they are) and to the
   candidate: one line per named declaration of the original up to its last target,
   `set_option pp.all true in ... #check @_root_.NAME` for a target or theorem (its type),
   `#print _root_.NAME` for a definition, structure or instance (type and value). Each text is
   elaborated by the backend from its own header, so `#print axioms` still comes from the
   candidate's run. The query text is ours, never the candidate's: names come from the
   original, every pretty-printer option that could shorten the output is set on the line
   itself (so a `set_option` the candidate left in force does not matter), and names are
   rooted (`_root_.`), so a namespace the candidate left open does not either.
2. Lean's answers on those lines (found by line number; a candidate's own messages never
   start there) are compared after renaming bound variables to their binding order, so that
   `(h : P)` and `(_h : P)` are the same statement. `pp.all` prints every implicit argument,
   instance and universe with full names, so a different instance, notation, coercion or
   section variable gives a different text. An answer cut short (`⋯`, `[...]`) cannot be
   compared and is refused, and so is an answer whose form we do not know (it must start
   with the name asked for; a `#print` answer with its declaration kind).

A target whose signature differs from the original's only as text (redundant parentheses, a
`↑` Lean would insert anyway, a notation spelled another way), and a context command added
before a target whose effect Lean's answer shows (`open`, `variable`, an instance ...), are not
refused by the text layer alone when this check can run: the candidate is compiled and Lean's
answers decide (`deferred`, `settle_deferred`). The original's answers are kept per original text, so each task elaborates its original once
per verifier. Any backend serves (REPL, `lean --json` per file, a Kimina server): only
`check` is used. Where the original's answer is missing the candidate is refused with a
message naming the original, since identity cannot then be decided.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from formalbench.backends.base import Backend
from formalbench.checking import lean_printed
from formalbench.checking.holes import hole_decls
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Finding,
    Language,
    Reason,
    Severity,
)

# Every printing option the readers depend on is set on the query line itself (see
# docs/decisions.md, "Lean: reading real output"): whatever the candidate or the project set,
# the answer has one form. `pp.all` makes applications explicit (`@f.{u} a b`), prints universes,
# full names, binder types and raw literals (`nat_lit 2`); the others are pinned because
# `pp.all` leaves them alone or because an answer cut short cannot be compared:
# `pp.unicode.fun false` (`=>`, not Mathlib's `↦`), `pp.natLit true`, `pp.proofs true` (no
# `⋯` for proofs), `pp.maxSteps`/`pp.deepTerms` (no `⋯` for large terms), `pp.oneline false`,
# `pp.fieldNotation false`. An option a toolchain does not know (these exist since Lean v4.8,
# 2024) turns every answer into an error, which refuses: never a silent acceptance.
PP_OPTIONS = (
    "pp.all true",
    "pp.explicit true",
    "pp.notation false",
    "pp.coercions false",
    "pp.universes true",
    "pp.fullNames true",
    "pp.funBinderTypes true",
    "pp.natLit true",
    "pp.unicode.fun false",
    "pp.fieldNotation false",
    "pp.proofs true",
    "pp.maxSteps 100000000",
    "pp.deepTerms true",
    "pp.oneline false",
)
QUERY_PREFIX = "".join(f"set_option {o} in " for o in PP_OPTIONS)
_TYPE_KINDS = frozenset({"theorem", "example"})


@dataclass(frozen=True)
class Subject:
    """One declaration of the original whose elaborated form the candidate must share."""

    name: str
    target: bool
    query: str  # the fixed line sent after the text


def subjects(original: str) -> list[Subject]:
    """The original's named declarations up to its last target, with their query lines."""
    decls, holes = hole_decls(original, Language.lean)
    if not holes:
        return []
    last = max(holes)
    out: list[Subject] = []
    seen: set[str] = set()
    for d in decls[: last + 1]:
        if not d.name or d.name in seen:
            continue
        seen.add(d.name)
        target = d.index in holes
        if not _plain_name(d.name):
            if target:  # no query can be sent for it: its answer is missing, so it is refused
                out.append(Subject(d.name, True, "-- (no query for this name)"))
            continue
        if target or d.kind in _TYPE_KINDS:
            query = f"{QUERY_PREFIX}#check @_root_.{d.name}"
        else:
            query = f"{QUERY_PREFIX}#print _root_.{d.name}"
        out.append(Subject(d.name, target, query))
    return out


def _plain_name(name: str) -> bool:
    """A name we may put on a query line: no blanks, no comment or string starts."""
    return not re.search(r"\s|--|/-|\"", name)


@dataclass(frozen=True)
class QueryText:
    """A text with the query lines appended, and which subject each line asks about."""

    text: str
    lines: dict[int, str]  # line (from 1) -> subject name


def with_queries(text: str, items: Sequence[Subject]) -> QueryText:
    """`text`, a blank line, then one query line per subject (and a final newline)."""
    base = text if text.endswith("\n") or not text else text + "\n"
    first = base.count("\n") + 2
    lines = {first + i: s.name for i, s in enumerate(items)}
    body = "".join(s.query + "\n" for s in items)
    return QueryText(f"{base}\n{body}", lines)


def take_answers(
    result: CheckResult, queries: QueryText
) -> tuple[CheckResult, dict[str, list[Diagnostic]]]:
    """The result without the messages on query lines, and those messages per subject."""
    answers: dict[str, list[Diagnostic]] = {}
    kept: list[Diagnostic] = []
    for d in result.diagnostics:
        name = queries.lines.get(d.line) if d.line is not None else None
        if name is None:
            kept.append(d)
        else:
            answers.setdefault(name, []).append(d)
    return result.model_copy(update={"diagnostics": kept}), answers


def canonical(text: str) -> str:
    """Lean's printed answer with bound variables renamed `⟪0⟫, ⟪1⟫ ...` in binding order, each
    within its scope, for every binder form Lean prints (see `lean_printed`); layout dropped."""
    return lean_printed.canonical(text)


_ANSWER_HEAD = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable|unsafe|partial|nonrec)\s+)*"
    r"(?:(?P<kind>def|theorem|axiom|opaque|abbrev|instance|structure|class|inductive|constructor|"
    r"recursor|quot|Quotient\s+primitive)\s+)?@?(?P<name>\S+?)(?:\.\{[^}]*\})?\s*(?:[:({\[⦃]|$)"
)


def answer_form_problem(name: str, query: str, text: str) -> str | None:
    """Why `text` is not an answer of the form our query asks for (`#check @c`: `@c : T` or
    `c : T`; `#print c`: an optional attribute list and modifiers, a declaration kind, `c`),
    or None. A form we do not know is refused, never compared loosely."""
    why = lean_printed.answer_problem(text)
    if why is not None:
        return why
    m = _ANSWER_HEAD.match(text)
    printed = m["name"].removeprefix("_root_.").rstrip("✝") if m else ""
    last = name.rsplit(".", 1)[-1]
    if m is None or not (printed in (name, last) or printed.endswith("." + last)):
        return f"Lean's answer does not start with the name asked for: `{text.strip()[:80]}`"
    if "#print" in query and m["kind"] is None:
        return f"Lean's #print answer names no declaration kind: `{text.strip()[:80]}`"
    return None


def _answer_text(
    found: list[Diagnostic] | None, subject: Subject | None = None
) -> tuple[str | None, str | None]:
    """(canonical answer, None) or (None, why it cannot be used)."""
    if not found:
        return None, "Lean gave no answer"
    bad = [d for d in found if d.severity != Severity.info]
    if bad:
        return None, f"Lean answered with an error: {bad[0].message.strip()[:200]}"
    text = "\n".join(d.message for d in found)
    if subject is not None:
        why = answer_form_problem(subject.name, subject.query, text)
    else:
        why = lean_printed.answer_problem(text)
    if why is not None:
        return None, why
    return canonical(text), None


def compare(
    items: Sequence[Subject],
    original: dict[str, list[Diagnostic]],
    candidate: dict[str, list[Diagnostic]],
) -> list[Finding]:
    """statement_changed for each subject whose elaborated form differs or cannot be read."""
    findings: list[Finding] = []
    for s in items:
        want, why_orig = _answer_text(original.get(s.name), s)
        got, why_cand = _answer_text(candidate.get(s.name), s)
        what = "statement" if s.target else "declaration"
        if want is None:
            if not s.target and _same_messages(original.get(s.name), candidate.get(s.name)):
                continue  # Lean says the same about both (e.g. a private name): text decides
            message = f"cannot confirm the {what} of `{s.name}`: for the original, {why_orig}"
        elif got is None:
            message = f"cannot confirm the {what} of `{s.name}`: {why_cand}"
        elif want != got:
            message = (
                f"Lean elaborates the {what} of `{s.name}` differently from the original's: "
                f"{_first_difference(want, got)}"
            )
        else:
            continue
        findings.append(Finding(reason=Reason.statement_changed, subject=s.name, message=message))
    return findings


def _same_messages(a: list[Diagnostic] | None, b: list[Diagnostic] | None) -> bool:
    return bool(a) and [d.message for d in a or []] == [d.message for d in b or []]


def _first_difference(want: str, got: str, width: int = 60) -> str:
    k = next((i for i, (x, y) in enumerate(zip(want, got, strict=False)) if x != y),
             min(len(want), len(got)))  # fmt: skip
    lo = max(0, k - width // 2)
    return f"expected `…{want[lo : k + width]}…`, found `…{got[lo : k + width]}…`"


def deferred(finding: Finding, targets: Sequence[str]) -> bool:
    """A text-layer finding that Lean decides instead (see the module docstring): a target
    signature that differs as tokens (redundant parentheses, `↑`, another spelling), or a
    context command added before a target whose every effect on a statement shows in Lean's
    `pp.all` answer (`open`, `export`, `variable`, `include`, `omit`, a non-`pp` `set_option`,
    an unnamed `instance`, `attribute [instance]`). Notations, macros, elaborators and `pp`
    options stay refused: they can change how our queries parse or print."""
    if finding.reason != Reason.statement_changed:
        return False
    if finding.subject in targets and finding.message.startswith("statement of "):
        return True
    label = (finding.subject or "").strip("`")
    return (
        finding.message.startswith("adds `")
        and "before target" in finding.message
        and (label.split(" ", 1)[0] in _CONTEXT_WORDS or label.startswith(_INSTANCE_ATTRS))
        and not label.startswith("set_option pp.")
    )


_CONTEXT_WORDS = frozenset({"open", "export", "variable", "include", "omit", "set_option"})
_INSTANCE_ATTRS = ("instance :", "attribute [ instance ]", "attribute [ local instance ]")


def settle_deferred(
    findings: list[Finding], targets: Sequence[str], result: CheckResult, same: list[Finding]
) -> list[Finding]:
    """`findings` without the deferred ones Lean settled: the candidate compiled, and Lean
    reports the target's elaborated type identical to the original's (for an added context
    command: every subject's)."""
    if not result.compiled:
        return findings
    differs = {f.subject for f in same}

    def settled(f: Finding) -> bool:
        if not deferred(f, targets):
            return False
        return not same if f.message.startswith("adds `") else f.subject not in differs

    return [f for f in findings if not settled(f)]


class LeanIdentity:
    """The assistant-side identity check for one backend (see the module docstring)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._originals: dict[str, dict[str, list[Diagnostic]]] = {}
        self._lock = threading.Lock()

    def prepare(self, original: str, candidate: str) -> tuple[list[Subject], QueryText]:
        """The subjects and the candidate text to send (with our query lines)."""
        items = subjects(original)
        return items, with_queries(candidate, items)

    def _known(self, original: str) -> dict[str, list[Diagnostic]] | None:
        with self._lock:
            return self._originals.get(original)

    def _keep(
        self, original: str, items: Sequence[Subject], result: CheckResult
    ) -> dict[str, list[Diagnostic]]:
        answers = take_answers(result, with_queries(original, items))[1]
        if result.status == CheckStatus.ok:  # a timeout or crash is not kept: retried later
            with self._lock:
                self._originals[original] = answers
        return answers

    def settle(
        self,
        original: str,
        items: Sequence[Subject],
        queries: QueryText,
        result: CheckResult,
        timeout: float | None,
    ) -> tuple[CheckResult, list[Finding]]:
        """The candidate's result without our answers, and the identity findings. Nothing is
        compared when the candidate did not compile: its errors already fail it."""
        result, answers = take_answers(result, queries)
        if not result.compiled or not items:
            return result, []
        theirs = self._known(original)
        if theirs is None:
            text = with_queries(original, items).text
            theirs = self._keep(original, items, self.backend.check(text, timeout=timeout))
        return result, compare(items, theirs, answers)

    async def asettle(
        self,
        original: str,
        items: Sequence[Subject],
        queries: QueryText,
        result: CheckResult,
        timeout: float | None,
    ) -> tuple[CheckResult, list[Finding]]:
        """`settle` for asyncio code (the original runs on the backend's pool)."""
        result, answers = take_answers(result, queries)
        if not result.compiled or not items:
            return result, []
        theirs = self._known(original)
        if theirs is None:
            text = with_queries(original, items).text
            ran = await self.backend.acheck(text, timeout=timeout)
            theirs = self._keep(original, items, ran)
        return result, compare(items, theirs, answers)


def checked(
    identity: LeanIdentity | None,
    backend: Backend,
    original: str,
    candidate: str,
    targets: Sequence[str],
    timeout: float | None,
) -> tuple[CheckResult, list[Finding]]:
    """Run the candidate on `backend`, with the identity queries when `identity` is given."""
    if identity is None:
        return backend.check(candidate, targets=targets, timeout=timeout), []
    items, queries = identity.prepare(original, candidate)
    result = backend.check(queries.text, targets=targets, timeout=timeout)
    return identity.settle(original, items, queries, result, timeout)


async def achecked(
    identity: LeanIdentity | None,
    backend: Backend,
    original: str,
    candidate: str,
    targets: Sequence[str],
    timeout: float | None,
) -> tuple[CheckResult, list[Finding]]:
    """`checked` for asyncio code."""
    if identity is None:
        return await backend.acheck(candidate, targets=targets, timeout=timeout), []
    items, queries = identity.prepare(original, candidate)
    result = await backend.acheck(queries.text, targets=targets, timeout=timeout)
    return await identity.asettle(original, items, queries, result, timeout)
