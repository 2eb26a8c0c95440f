"""Added Lean declarations that can change what the task's statement means by taking its names.

A candidate may add helper lemmas and definitions, but a name declared before a target can
capture an identifier the statement (or a declaration it depends on) uses: `def Foo.bar`
inside `namespace Foo` captures `bar` for a target in that namespace or under `open Foo`, and
a plain `def fact (n : ℕ) := 0` does the same to `fact`. Compiling cannot tell: the shadowed
statement type-checks and is proved. (Coq needs no such rule: its verdict compares the
kernel objects of the statements, `checking/coq_compare`, where a name is a kernel name and
no scope plays a part.)

The rule is textual and errs towards refusing. An added declaration placed before the last
target is refused (statement_changed) when any dotted suffix of a name it introduces equals an
identifier of an original command that comes after it in the candidate, up to the last target
(the signature of a target or theorem, the whole of any other command). A suffix is what Lean
reaches through `namespace`/`open`, so every way the name can be reached is covered without
modelling scopes. Lean constructors and fields live in the type's namespace and are not
reached without an `open`, which is refused anyway.

What it costs: a helper that happens to share a name with a bound variable of the statement
(`def n := 5` before `theorem t (n : ℕ) ...`) is refused though a binder would win; renaming
the helper is the fix, and the message says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.checking.decls import Decl
from formalbench.core.lexer import plain_name
from formalbench.core.records import Finding, Reason


def _clean(text: str) -> str:
    return plain_name(text).removeprefix("_root_.")


def _suffixes(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[i:]) for i in range(len(parts))}


def introduced_names(decl: Decl) -> list[str]:
    """The global name `decl` declares (fully qualified as far as the text shows)."""
    return [_clean(decl.name)] if decl.name else []


def _used(decl: Decl, target: bool) -> set[str]:
    """The names a command of the original uses: a definition's in full, a theorem's (and a
    target's) in its signature only, since its proof cannot change what it states."""
    proof_only = target or decl.kind == "theorem"
    toks = decl.tokens[: decl.body_start] if proof_only else decl.tokens
    return {_clean(t.text) for t in toks if t.kind == "ident"}


def shadow_findings(
    candidate: list[Decl],
    matched: dict[int, Decl],
    holes: Iterable[int],
    skip: Iterable[int] = (),
) -> list[Finding]:
    """statement_changed for each added command that takes a name used after it (see above).

    `matched` maps candidate indices to the original commands they stand for (up to the last
    target); candidate commands not in it are the added ones, except those in `skip`
    (already refused for another reason)."""
    hole_set, skipped = set(holes), set(skip)
    later = sorted(matched.items())  # (candidate index, original command)
    targets = [i for i, r in later if r.index in hole_set]
    if not targets:
        return []
    used = {r.index: _used(r, r.index in hole_set) for _, r in later}
    findings: list[Finding] = []
    for c in candidate:
        if c.index in matched or c.index in skipped or c.index > targets[-1]:
            continue
        hit = _first_hit(c, later, used)
        if hit is None:
            continue
        name, word, r = hit
        head = c.tokens[c.head]
        where = f"`{r.name}`" if r.name else "a command of the original"
        findings.append(
            Finding(
                reason=Reason.statement_changed,
                subject=name,
                line=head.line,
                column=head.column,
                message=f"adds `{name}` before {where}, which uses the name `{word}`: the new "
                "declaration can change what the statement means (rename it)",
            )
        )
    return findings


def _first_hit(
    c: Decl, later: list[tuple[int, Decl]], used: dict[int, set[str]]
) -> tuple[str, str, Decl] | None:
    """(introduced name, the original's word it captures, that original command) or None."""
    for name in introduced_names(c):
        reach = _suffixes(name)
        for index, r in later:
            if index < c.index:
                continue
            common = reach & used[r.index]
            if common:
                return name, min(common, key=len), r
    return None
