"""The mechanical half of the rejection of weakening rewrites (Algorithm 3, step 10).

A rewrite may fix a block, or it may make its theorem easier by losing content. What the
token stream can show is compared here, theorem by theorem (matched by name), between the
version that was reviewed and the rewrite:

- a theorem that disappears;
- a variable that is no longer bound (a binder or a `forall`/`∀` variable whose name the
  statement uses);
- a hypothesis that is gone: the hypotheses are the types of the binders and of the
  `forall`s plus the premises of the top-level implications, compared as a multiset of
  normalised token strings, so moving `(h : P)` to `P ->` is no loss;
- a changed conclusion (the part after the last top-level implication / quantifier).

A loss the review itself asked for is not one: a dropped variable or hypothesis named in the
review (in an issue's location, reason or fix), a changed conclusion when an issue is about
the conclusion, goal or objective. Renaming a variable shows as a dropped variable (the check
errs towards refusing). What it cannot see — a weaker type, a changed definition, a
hypothesis made stronger, a conclusion changed in meaning but kept in words by a changed
definition — is left to the model (`construct_block_weakening`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from formalbench.checking.decls import CLOSE_BRACKETS, OPEN_BRACKETS, split_decls
from formalbench.core.lexer import Token
from formalbench.core.records import Language
from formalbench.pipelines.construct.block_records import BlockReview

_THEOREMS = {Language.coq: "Theorem", Language.lean: "theorem"}
_ARROWS = frozenset({"->", "→"})
_FORALL = frozenset({"forall", "∀"})
_BINDING = frozenset({"forall", "∀", "exists", "∃", "fun", "λ", "let"})
_SYNONYMS = {"->": "→", "<->": "↔", "<=": "≤", ">=": "≥", "forall": "∀", "exists": "∃"}
_GOAL_WORDS = ("conclusion", "goal", "objective", "claim", "task_drift", "weak")


@dataclass
class Statement:
    """A theorem's statement read from its tokens."""

    name: str
    variables: dict[str, str] = field(default_factory=dict)  # bound name -> its type
    hypotheses: Counter[str] = field(default_factory=Counter)
    conclusion: str = ""


def _norm(tokens: list[Token]) -> str:
    return " ".join(_SYNONYMS.get(t.text, t.text) for t in tokens if not t.is_comment)


def _split_top(tokens: list[Token], separators: frozenset[str]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.text in OPEN_BRACKETS:
            depth += 1
        elif tok.text in CLOSE_BRACKETS:
            depth = max(0, depth - 1)
        if depth == 0 and tok.text in separators:
            parts.append([])
            continue
        parts[-1].append(tok)
    return parts


def _groups(tokens: list[Token]) -> list[list[Token]]:
    """Bracketed binder groups and bare names, in order."""
    out: list[list[Token]] = []
    depth = 0
    for tok in tokens:
        if depth == 0 and tok.text not in OPEN_BRACKETS:
            out.append([tok])
            continue
        if depth == 0:
            out.append([])
        if tok.text in OPEN_BRACKETS:
            depth += 1
        elif tok.text in CLOSE_BRACKETS:
            depth -= 1
        out[-1].append(tok)
    return out


def _binders(tokens: list[Token], st: Statement) -> None:
    """Read `(x y : T) {z : U} [C] w` or `x y : T` into variables and hypotheses."""
    if tokens and tokens[0].text not in OPEN_BRACKETS:
        names, colon, typ = _at_colon(tokens)
        _bind(names, typ if colon else [], st)
        return
    for group in _groups(tokens):
        if group[0].text in OPEN_BRACKETS:
            names, colon, typ = _at_colon(group[1:-1])
            if colon:
                _bind(names, typ, st)
            else:  # `[Fintype n]`: an anonymous instance, a hypothesis
                st.hypotheses[_norm(group[1:-1])] += 1
        else:
            _bind(group, [], st)


def _at_colon(tokens: list[Token]) -> tuple[list[Token], bool, list[Token]]:
    colon = _first_top(tokens, ":")
    if colon is None:
        return tokens, False, []
    return tokens[:colon], True, tokens[colon + 1 :]


def _bind(names: list[Token], typ: list[Token], st: Statement) -> None:
    text = _norm(typ) if typ else "?"
    for n in names:
        if n.kind == "ident":
            st.variables[n.text] = text
            if typ:
                st.hypotheses[text] += 1


def _read_type(tokens: list[Token], st: Statement) -> None:
    while tokens:
        if tokens[0].text in _FORALL:
            comma = _first_top(tokens, ",")
            if comma is None:
                break
            _binders(tokens[1:comma], st)
            tokens = tokens[comma + 1 :]
            continue
        arrow = _first_arrow(tokens)
        if arrow is None:
            break
        st.hypotheses[_norm(tokens[:arrow])] += 1
        tokens = tokens[arrow + 1 :]
    st.conclusion = _norm(tokens)


def _first_arrow(tokens: list[Token]) -> int | None:
    """The top-level implication arrow, unless a binder (`exists x, ...`) reaches over it."""
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.text in OPEN_BRACKETS:
            depth += 1
        elif tok.text in CLOSE_BRACKETS:
            depth = max(0, depth - 1)
        elif depth == 0 and tok.text in _ARROWS:
            return i
        elif depth == 0 and tok.text in _BINDING:
            return None
    return None


def _first_top(tokens: list[Token], text: str) -> int | None:
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.text in OPEN_BRACKETS:
            depth += 1
        elif tok.text in CLOSE_BRACKETS:
            depth = max(0, depth - 1)
        elif depth == 0 and tok.text == text:
            return i
    return None


def statements(code: str, language: Language) -> dict[str, Statement]:
    """The theorems of `code` by name, each with its variables, hypotheses and conclusion."""
    out: dict[str, Statement] = {}
    for d in split_decls(code, language):
        if d.kind != _THEOREMS[language] or d.name is None:
            continue
        sig = [t for t in d.signature if not t.is_comment][d.head + 2 :]
        head, colon, typ = _at_colon(sig) if sig else ([], False, [])
        st = Statement(d.name)
        if colon:
            _binders(head, st)
            _read_type(typ, st)
        else:
            _read_type(sig, st)
        out[d.name.rsplit(".", 1)[-1]] = st
    return out


def _used(name: str, st: Statement) -> bool:
    texts = [st.conclusion, *st.hypotheses]
    return any(name in text.split() for text in texts)


def _review_text(review: BlockReview | None) -> str:
    if review is None:
        return ""
    parts = [review.top_priority_fix]
    for issue in review.issues:
        parts += [issue.location, issue.reason, issue.suggested_fix]
    return " ".join(" ".join(parts).split())


def _named(thing: str, review_text: str) -> bool:
    squeezed = "".join(thing.split())
    return bool(thing) and (thing in review_text or squeezed in "".join(review_text.split()))


def _goal_issue(review: BlockReview | None) -> bool:
    if review is None:
        return False
    fields = [*review.dominant_issue_types]
    for issue in review.issues:
        fields += [issue.issue_type, issue.location]
    return any(w in f.lower() for f in fields for w in _GOAL_WORDS)


def weakening_findings(
    before: str, after: str, language: Language, review: BlockReview | None = None
) -> list[str]:
    """Why `after` loses content of `before`'s theorems (empty: nothing the tokens show)."""
    old, new = statements(before, language), statements(after, language)
    said = _review_text(review)
    findings: list[str] = []
    for name, st in old.items():
        other = new.get(name)
        if other is None:
            findings.append(f"theorem `{name}` was dropped or renamed")
            continue
        for var, typ in st.variables.items():
            if var not in other.variables and _used(var, st) and not _named(var, said):
                findings.append(f"`{name}`: the variable `{var} : {typ}` is no longer bound")
        lost = st.hypotheses - other.hypotheses
        for hyp in lost:
            if not _named(hyp, said):
                findings.append(f"`{name}`: the hypothesis `{hyp}` was dropped")
        if st.conclusion != other.conclusion and not _goal_issue(review):
            findings.append(
                f"`{name}`: the conclusion changed from `{st.conclusion}` to `{other.conclusion}`"
            )
    return findings
