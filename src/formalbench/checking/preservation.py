"""Statement preservation (Lean): the candidate must prove the task's statement, not another one.

Coq has no text rule here: with coqc the kernel route decides every target's statement and
its context on kernel objects (`checking/coq_kernel.py`), and a text comparison refuses
genuine proofs the kernel accepts (a renamed binder, a `Notation` after the target, a helper
whose name a statement uses but whose proof still proves it), so it cannot be a pre-filter.
For Coq this module only names the candidate commands copied verbatim from the original's
hole-free part (anywhere: a section `Hypothesis` after the target is the task's own), which
the forbidden-word scan exempts. Without coqc (`check --static-only`) a Coq statement is not
judged at all.

Lean: targets are the original's declarations that contain a hole. Every command of the
original up to the last target must appear in the candidate, in the same order and
unchanged: a target keeps its signature (name, binders, type; the proof is free), every other
declaration and context command (`import`, `open`, `variable`, a preceding `def` ...) is kept
entirely. Commands are compared as normalised token streams: layout and comments do not
count, nor do `noncomputable` and attribute lists, `lemma` vs `theorem`, ASCII vs Unicode
spellings of the same notation (`->`/`→`, `fun`/`λ`, `=>`/`↦`, `<=`/`≤` ...), and
`set_option` for resource limits or linters (`maxHeartbeats`, `maxRecDepth`, `linter.*` ...),
which a candidate may add, drop or change anywhere.

Commands a candidate adds: new named declarations (helper lemmas and definitions) are allowed
anywhere, unless one placed before a target takes a name the statement uses (`shadowing`).
Commands that change how later text elaborates are refused anywhere: before a target
(statement_changed) they can change what its statement means; after the last target
(forbidden_construct) nothing needs them, and they could change how the queries a backend
appends after the text (`#print axioms`, the identity queries) parse or print. They are
`open`, `export`, `variable`, `include`, non-resource `set_option`, `notation`/`notation3`/
`binder_predicate`/`infix`/`macro`/`syntax`/`elab`/`macro_rules`/`elab_rules`, `instance`,
`attribute [instance ...]`, `local`/`scoped` commands, `run_cmd`, `#eval`, declarations
tagged `@[instance]`, `@[macro]`, elaborator attributes... Allowed because they cannot change
what a statement means: `import`s, `namespace`/`section`/`end` (a target moved into a
namespace no longer has its name), `universe`, `open X in` / `set_option o v in` prefixes on a
helper. Scoping: a scoped command (`open`, `variable`, `include`, `omit`, `set_option`, and any
`local`/`scoped` one) inside a `section`/`namespace` whose `end` comes before the next target
(or, after the last target, that is closed at all) is allowed, since Lean drops it at `end`; a
plain `instance`, `notation`, `attribute [instance]` or `macro` outlives `end` and stays
refused. Also compared modulo what does not change a statement: the names of a target's
binders (`(h : P)` vs `(_h : P)`, renamed to their position), the module system's `public`,
the order of an `open A B` list and of the imports (an original import must still be there).
Where a Lean backend can run the identity check (checking/lean_identity.py), a changed target
signature and some context commands before a target are left to Lean's answer (`deferred`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from formalbench.checking.decls import CLOSE_BRACKETS, OPEN_BRACKETS, Decl
from formalbench.checking.shadowing import shadow_findings
from formalbench.core.lexer import plain_name, words
from formalbench.core.records import Finding, Language, Reason

_LEAN_SYNONYMS = {
    "->": "→", "<-": "←", "<->": "↔", "<=": "≤", ">=": "≥", "λ": "fun", "↦": "=>",
    "forall": "∀", "exists": "∃", "lemma": "theorem",
}  # fmt: skip
_IGNORED_MODIFIERS = words("noncomputable public")  # neither changes what is stated
_HARMLESS_OPTIONS = words(
    "maxHeartbeats maxRecDepth synthInstance.maxHeartbeats synthInstance.maxSize diagnostics diagnostics.threshold profiler profiler.threshold exponentiation.threshold"
)
_HARMLESS_OPTION_PREFIXES = ("linter.", "trace.", "pp.")
RISKY_ATTRIBUTES = words(
    "instance default_instance macro term_elab command_elab tactic elab coe delab app_unexpander builtin_term_elab builtin_command_elab builtin_tactic builtin_macro local scoped implemented_by extern csimp"
)
_LEAN_CONTEXT = words(
    "open export variable include omit set_option notation notation3 binder_predicate infix infixl infixr prefix postfix macro macro_rules syntax elab elab_rules declare_syntax_cat instance initialize builtin_initialize run_cmd run_elab run_meta unif_hint deriving #eval"
)


def harmless_option(decl: Decl) -> bool:
    """A `set_option` for a resource limit, a linter or tracing: it cannot change meaning. A
    top-level `pp.*` option is not one: it would change how Lean prints the answers the
    identity check compares (as an `... in` prefix of one command it stays harmless)."""
    toks = decl.tokens
    if decl.kind != "set_option" or len(toks) < 2 or not _harmless_name(toks[1].text):
        return False
    return not plain_name(toks[1].text).startswith("pp.") or toks[-1].text == "in"


def _harmless_name(name: str) -> bool:
    name = plain_name(name)
    return name in _HARMLESS_OPTIONS or name.startswith(_HARMLESS_OPTION_PREFIXES)


def normalized(decl: Decl, *, stop: int | None = None, alpha: bool = True) -> list[str]:
    """The comparable token texts of `decl.tokens[:stop]` (see the module docstring); a
    signature (`stop` before the end) has its binder names renamed unless `alpha` is false."""
    toks = decl.tokens[: len(decl.tokens) if stop is None else stop]
    out: list[str] = []
    i, n = 0, len(toks)
    while i < n:
        text = toks[i].text
        if text == "@[" and i < decl.head:
            i = _skip_group(toks, i)
            continue
        if (
            text == "set_option"
            and i < decl.head
            and i + 1 < n
            and _harmless_name(toks[i + 1].text)
        ):
            j = i + 1
            while j < decl.head and toks[j].text != "in":
                j += 1
            i = j + 1
            continue
        if text not in _IGNORED_MODIFIERS:
            out.append(_LEAN_SYNONYMS.get(text, text))
        i += 1
    if (
        decl.kind == "open" and decl.head == 0 and all(t.kind == "ident" for t in toks[1:])
    ):  # `open A B` opens both whatever the order: compare the names as a set
        out[1:] = sorted(out[1:])
    if alpha and stop is not None and stop < len(decl.tokens):
        out = alpha_renamed(out)
    return out


# A binder name of a signature becomes its position: `(h : P)` and `(_h : P)` state the same.
_BINDER_OPEN = {"(": ")", "{": "}", "[": "]", "⦃": "⦄", "{{": "}}"}
_LEAN_DECL_WORDS = words("theorem def abbrev instance example opaque irreducible_def")


def alpha_renamed(texts: list[str]) -> list[str]:
    """`texts` (a normalised signature) with the names of its leading binder groups replaced
    by `⟪i⟫` in order of appearance, in every token after their group (`h.le` -> `⟪0⟫.le`);
    a later binder of the same name takes over from there, as in Lean."""
    try:
        k = next(i for i, t in enumerate(texts) if t in _LEAN_DECL_WORDS)
    except StopIteration:
        return texts
    i = k + 1 if texts[k] == "example" else k + 2
    renames: list[tuple[int, int]] = []  # (index of the name, index after its group)
    while i < len(texts) and texts[i] in _BINDER_OPEN:
        close = _BINDER_OPEN[texts[i]]
        j = i + 1
        depth = 0
        while j < len(texts) and not (depth == 0 and texts[j] == close):
            depth += texts[j] in OPEN_BRACKETS
            depth -= texts[j] in CLOSE_BRACKETS
            j += 1
        group = texts[i + 1 : j]
        names = group[: group.index(":")] if ":" in group else ([] if texts[i] == "[" else group)
        for n, name in enumerate(names):
            if name != "_" and (name[0].isalpha() or name[0] in "_«"):
                renames.append((i + 1 + n, j + 1))
        i = j + 1
    if not renames:
        return texts
    out = list(texts)
    replacement = {at: (texts[at], f"⟪{n}⟫") for n, (at, _) in enumerate(renames)}
    starts: dict[int, list[tuple[str, str]]] = {}
    for at, scope in renames:
        starts.setdefault(scope, []).append(replacement[at])
    active: dict[str, str] = {}  # name -> its replacement from here on (one pass, in order)
    for m, text in enumerate(texts):
        for name, new in starts.get(m, ()):
            active[name] = new
        if m in replacement:
            out[m] = replacement[m][1]
        elif text in active:
            out[m] = active[text]
        elif "." in text and (head := text.split(".", 1)[0]) in active:
            out[m] = active[head] + text[len(head) :]
    return out


def _skip_group(toks: Sequence, i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in ("@[", "["):
            depth += 1
        elif toks[j].text == "]":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def attributes(decl: Decl) -> set[str]:
    """The words inside the `@[...]` attribute lists of a declaration."""
    return {t.text for t in decl.tokens[: decl.head] if t.kind == "ident"} - {
        "private",
        "protected",
        "noncomputable",
        "public",
        "unsafe",
        "partial",
        "nonrec",
    }


def context_changing(decl: Decl) -> bool:
    """Whether `decl` changes how the text after it elaborates (see the module docstring)."""
    if decl.kind == "set_option":
        return not harmless_option(decl)
    if decl.kind == "attribute":
        return bool({t.text for t in decl.tokens} & RISKY_ATTRIBUTES)
    if decl.kind in _LEAN_CONTEXT or decl.kind.startswith("#eval"):
        return True
    return bool(attributes(decl) & RISKY_ATTRIBUTES)


def scoped_command(decl: Decl) -> bool:
    """A Lean command whose effect ends with its `section`/`namespace`: `open`, `variable`,
    `include`, `omit`, `set_option`, and `local`/`scoped` ones (`local notation`,
    `attribute [local instance] f`). A plain `instance`, `notation`, `attribute [instance]`
    or `macro` stays in force after `end`, so it is not one."""
    if decl.kind in _SCOPED_KINDS:
        return True
    if decl.kind == "attribute":
        toks = decl.tokens
        groups = [i for i, t in enumerate(toks) if t.text == "["]
        return bool(groups) and all(
            i + 1 < len(toks) and toks[i + 1].text in ("local", "scoped") for i in groups
        )
    return any(t.text in ("local", "scoped") for t in decl.tokens[: decl.head])


_SCOPED_KINDS = words("open variable include omit set_option")


def _closing_ends(decls: list[Decl]) -> dict[int, int]:
    """Command index -> index of the `end` that closes its innermost `section`/`namespace`
    (commands outside any, or in one never closed, are left out)."""
    stack: list[list[int]] = []
    out: dict[int, int] = {}
    for d in decls:
        if d.kind in ("section", "namespace"):
            stack.append([])
            continue
        if d.kind == "end" and stack:
            for i in stack.pop():
                out[i] = d.index
            continue
        if stack:
            stack[-1].append(d.index)
    return out


def _named_diff(r: Decl, c: Decl, is_target: bool) -> str:
    """`token_diff` of two commands with their own binder names (easier to read)."""
    want = normalized(r, stop=r.body_start if is_target else None, alpha=False)
    got = normalized(c, stop=c.body_start if is_target else None, alpha=False)
    return token_diff(want, got)


def token_diff(expected: Sequence[str], found: Sequence[str], context: int = 3) -> str:
    """A short view of the first place where two token streams differ."""
    ops = difflib.SequenceMatcher(None, expected, found, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        return (
            f"expected `{_excerpt(expected, i1, i2, context)}` "
            f"but found `{_excerpt(found, j1, j2, context)}`"
        )
    return "no difference"


def _excerpt(tokens: Sequence[str], i: int, j: int, context: int) -> str:
    lo, hi = max(0, i - context), min(len(tokens), j + context)
    text = " ".join(tokens[lo:i]) + " [" + " ".join(tokens[i:j]) + "] " + " ".join(tokens[j:hi])
    text = ("… " if lo else "") + text.strip() + (" …" if hi < len(tokens) else "")
    return text if len(text) <= 160 else text[:157] + "…"


def _label(decl: Decl) -> str:
    if decl.name:
        return f"`{decl.name}`"
    words = " ".join(t.text for t in decl.tokens[:6])
    return f"`{words}{' …' if len(decl.tokens) > 6 else ''}`"


def preservation_findings(
    original: list[Decl], candidate: list[Decl], language: Language, holes: set[int]
) -> tuple[list[Finding], set[int]]:
    """Findings about changed or missing statements (Lean), and the candidate commands that
    match an unchanged hole-free command of the original (exempt from the forbidden-word
    scan). `holes` holds the indices of the original declarations that contain a hole. Coq:
    no findings (the kernel's to judge, see the module docstring), only the copies."""
    if language == Language.coq:
        given = {tuple(t.text for t in r.tokens) for r in original if r.index not in holes}
        return [], {c.index for c in candidate if tuple(t.text for t in c.tokens) in given}
    findings: list[Finding] = []
    targets = [d for d in original if d.index in holes]
    if not targets:
        return findings, set()
    last = max(d.index for d in targets)
    by_name: dict[str, Decl] = {}
    for d in candidate:
        if d.name is not None:
            by_name.setdefault(d.name, d)
    matched: dict[int, Decl] = {}  # candidate index -> original command
    unchanged: set[int] = set()
    pos = -1
    for r in original[: last + 1]:
        if harmless_option(r):
            continue
        is_target = r.index in holes
        stop = r.body_start if is_target else None
        want = normalized(r, stop=stop)
        if r.name is not None:
            c = by_name.get(r.name)
            if c is None or c.index in matched:
                reason = Reason.missing_target if is_target else Reason.statement_changed
                what = "target" if is_target else "declaration"
                findings.append(
                    Finding(
                        reason=reason,
                        subject=r.name,
                        message=f"{what} `{r.name}` of the original is missing",
                    )
                )
                continue
        else:
            pool = candidate if r.kind == "import" else candidate[pos + 1 :]  # any order
            c = next(
                (
                    c
                    for c in pool
                    if c.index not in matched
                    and normalized(c, stop=c.body_start if is_target else None) == want
                ),
                None,
            )
            if c is None:
                findings.append(
                    Finding(
                        reason=Reason.statement_changed,
                        subject=_label(r),
                        message=f"command {_label(r)} of the original is missing or changed",
                    )
                )
                continue
        matched[c.index] = r
        got = normalized(c, stop=c.body_start if is_target else None)
        head = c.tokens[c.head]
        if got == want and not is_target:
            unchanged.add(c.index)
        if got != want:
            part = "statement" if is_target else "declaration"
            findings.append(
                Finding(
                    reason=Reason.statement_changed,
                    subject=r.name,
                    line=head.line,
                    column=head.column,
                    message=f"{part} of {_label(r)} changed: {_named_diff(r, c, is_target)}",
                )
            )
        elif (attributes(c) - attributes(r)) & RISKY_ATTRIBUTES:
            findings.append(
                Finding(
                    reason=Reason.statement_changed,
                    subject=r.name,
                    line=head.line,
                    column=head.column,
                    message=f"{_label(r)} gets attributes that change elaboration",
                )
            )
        if c.index < pos and r.kind != "import":
            findings.append(
                Finding(
                    reason=Reason.statement_changed,
                    subject=r.name or _label(r),
                    line=head.line,
                    column=head.column,
                    message=f"{_label(r)} is out of the original order",
                )
            )
        pos = max(pos, c.index)
    target_positions = sorted(i for i, r in matched.items() if r.index in holes)
    given = {tuple(normalized(r)) for r in original}
    refused: set[int] = set()
    closes = _closing_ends(candidate)
    for c in candidate:
        if c.index in matched or not context_changing(c):
            continue
        if tuple(normalized(c)) in given:
            continue  # the original has it too (after its last target)
        end = closes.get(c.index)
        if end is not None and scoped_command(c):
            later = [i for i in target_positions if i > c.index]
            if not later or end < later[0]:
                continue  # its section or namespace closes before the next target
        before = next((_label(matched[i]) for i in target_positions if i > c.index), None)
        refused.add(c.index)
        head = c.tokens[c.head]
        if before is not None:
            reason = Reason.statement_changed
            why = f"before target {before}: it can change what the statement means"
        else:
            reason = Reason.forbidden_construct
            why = "after the targets: it can only change how the checker's own queries read"
        findings.append(
            Finding(
                reason=reason,
                subject=_label(c),
                line=head.line,
                column=head.column,
                message=f"adds {_label(c)} {why}",
            )
        )
    findings += shadow_findings(candidate, matched, holes, skip=refused)
    return findings, unchanged
