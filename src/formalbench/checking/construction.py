"""Construction tasks: a definition hole must be filled with an honest construction.

In evaluation and algorithm tasks (AMBER; PutnamBench's `abbrev ..._solution : T := sorry`)
the prover supplies a value, and a verification theorem states its property. Three shortcuts
would make such a task trivial, and each is refused here:

* leaving the value open (a hole in its body) -> forbidden_construct;
* changing its signature, e.g. taking the property as an extra parameter -> statement_changed,
  reported by statement preservation, which compares the signature token by token;
* picking the value by choice on an existence proof (`Classical.choose`, `Exists.choose` and
  its dot form `h.choose`, `Classical.epsilon`, `Classical.indefiniteDescription`, or the
  `choose` tactic) -> non_constructive. Helper definitions the candidate adds and the value
  refers to are followed, so the choice cannot hide one call away;
* `partial` on the value or a helper it uses (a `partial def` is opaque to the kernel)
  -> forbidden_construct.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.checking.decls import Decl
from formalbench.core.records import Finding, Language, Reason

LEAN_VALUE_KINDS = frozenset({"def", "abbrev", "opaque", "instance"})
COQ_VALUE_KINDS = frozenset({"Definition", "Fixpoint", "CoFixpoint", "Let", "Function", "Instance"})
_HOLE_WORDS = frozenset({"sorry", "admit", "Admitted", "give_up"})


def is_value(decl: Decl, language: Language) -> bool:
    kinds = LEAN_VALUE_KINDS if language == Language.lean else COQ_VALUE_KINDS
    return decl.kind in kinds


def _choice_hit(text: str, constants: Iterable[str]) -> str | None:
    for const in constants:
        last = const.rsplit(".", 1)[-1]
        if text in (const, last) or text.endswith("." + const):
            return const
        if text.endswith("." + last) and text[:1].islower():  # dot notation on a local: h.choose
            return const
    return None


def _used_helpers(start: Decl, added: dict[str, Decl]) -> list[Decl]:
    """The added declarations reachable from `start` through the names its body mentions."""
    seen: dict[str, Decl] = {}
    todo = [start]
    while todo:
        d = todo.pop()
        for tok in d.body:
            if tok.kind != "ident":
                continue
            helper = added.get(tok.text) or added.get(tok.text.rsplit(".", 1)[-1])
            if helper is not None and helper.name not in seen and helper is not start:
                seen[helper.name or ""] = helper
                todo.append(helper)
    return list(seen.values())


def construction_findings(
    original: list[Decl],
    candidate: list[Decl],
    language: Language,
    holes: set[int],
    choice_constants: Iterable[str],
    forbidden: Iterable[str],
) -> list[Finding]:
    """Findings for each hole-bearing value definition of the original (see module doc)."""
    constants = list(choice_constants)
    forbidden_set = set(forbidden)
    original_names = {d.name for d in original if d.name}
    added = {
        key: c
        for c in candidate
        if c.name and c.name not in original_names
        for key in (c.name, c.name.rsplit(".", 1)[-1])
    }
    by_name = {c.name: c for c in candidate if c.name}
    findings: list[Finding] = []
    for r in original:
        if r.index not in holes or not r.name or not is_value(r, language):
            continue
        c = by_name.get(r.name)
        if c is None:
            continue  # reported as missing_target by statement preservation
        body = [t for t in c.body if t.text != ":="]
        open_words = [t for t in body if t.text in _HOLE_WORDS and t.text not in forbidden_set]
        if not body or [t.text for t in body] == ["by"] or open_words:
            head = c.tokens[c.head]
            findings.append(
                Finding(
                    reason=Reason.forbidden_construct,
                    subject=r.name,
                    line=head.line,
                    column=head.column,
                    message=f"the value of `{r.name}` is not filled in",
                )
            )
        for d in [c, *_used_helpers(c, added)]:
            where = "" if d is c else f" (through `{d.name}`)"
            if any(t.text == "partial" for t in d.tokens[: d.head]):
                head = d.tokens[d.head]
                findings.append(
                    Finding(
                        reason=Reason.forbidden_construct,
                        subject="partial",
                        line=head.line,
                        column=head.column,
                        message=f"`partial` in the construction of `{r.name}`{where}",
                    )
                )
            for tok in d.body:
                hit = _choice_hit(tok.text, constants) if tok.kind == "ident" else None
                if hit is not None:
                    findings.append(
                        Finding(
                            reason=Reason.non_constructive,
                            subject=tok.text,
                            line=tok.line,
                            column=tok.column,
                            message=f"the value of `{r.name}` is chosen by `{tok.text}`{where}, "
                            "a choice on an existence proof, not a construction",
                        )
                    )
    return findings
