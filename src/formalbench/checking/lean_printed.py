"""Reading what Lean prints: `#check` and `#print` answers as tokens with their binders.

The identity check compares Lean's answers up to the names of bound variables, and the value
check follows the constants an answer mentions. Both need the same reading of Lean's printed
terms, which differs from our source lexer in three ways: a universe list `.{u, v}` belongs to
the name before it (it is not a `{u}` binder group); names may end in `✝` (inaccessible) or
`?`/`!`; and every binder form Lean prints must be seen as a binder, so that renaming its
variable never changes a verdict and changing its type or kind always does.

Binder forms read (as Lean prints them, with or without `pp.all`):

* keyword binders `∀ fun λ ∃ ∃! Π Σ ⋃ ⋂ ⨆ ⨅ ∑ ∏` with bare names, groups `(x y : A)`,
  `{x : A}`, `[inst : C]`, `⦃x : A⦄`, binder predicates (`∀ x > 0, …`, `∃ t ⊆ s, …`) and a body
  after `,`, `=>` or `↦` that runs to the enclosing bracket or to a `,` not taken by a nested
  binder;
* dependent arrows `(x : A) → B`, `{x : A} → B`, `[inst : C] → B`, `⦃x : A⦄ → B`;
* signature binders of a printed header (`def g.{u} {α : Type u} (x : α) : …`, the lines of a
  `#print` of a structure, `#print sig`), scoping over the rest of the answer;
* set-builder and subtype braces `{x | p x}`, `{x : A // p x}`, `{x ∈ s | p x}`;
* `let x := v; b`, `have h : P := v; b`, `let_fun x := v; b`;
* match alternatives `| pat, pat => rhs` (of `match … with`, `fun`, printed equations) and
  `fun` with a pattern (`fun (x, y) => …`, `fun ⟨a, h⟩ => …`).

Universe levels are what `.{…}` holds and the level of a `Type`/`Sort` that starts a term;
`Type`/`Sort`/`Prop` in argument position (`@id.{2} Type (@Classical.choice.{2} Type i)`) are
terms like any other, and what follows them is the next argument.

Text this reader cannot follow (unbalanced brackets, a cut `⋯`) is reported by `answer_problem`
so that the caller refuses instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_INACCESSIBLE = r"(?:✝[⁰¹²³⁴⁵⁶⁷⁸⁹]*)?"  # `x✝`, and `x✝¹` for a second inaccessible `x`
_NAME_PART = r"(?:«[^»]*»|[^\W\d][\w'!?]*" + _INACCESSIBLE + ")"
_TOKEN = re.compile(
    r"(?P<univ>\.\{[^{}]*\})"
    r"|(?P<str>'(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.))')"  # a char literal
    r"|(?P<name>" + _NAME_PART + r"(?:\.(?:" + _NAME_PART + r"|\d+))*" + _INACCESSIBLE + ")"
    r"|(?P<num>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"|(?P<str2>\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<sym>:=|=>|->|<-|<->|\.\.|//|@\[|∃!|[^\s\w])"
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


OPEN = {"(": ")", "{": "}", "[": "]", "⦃": "⦄", "⟨": "⟩", "@[": "]", "⟮": "⟯"}
CLOSE = frozenset(OPEN.values())
BINDER_WORDS = _words("∀ fun λ ∃ ∃! Π Σ Σ' ⋃ ⋂ ⨆ ⨅ ∑ ∏ ∑' ∏' ∫")
_BODY_START = frozenset({",", "=>", "↦"})
_PREDICATE_OPS = _words("> ≥ < ≤ ∈ ∉ ⊆ ⊂ ⊇ ⊃ ≠")
_GROUP_OPEN = frozenset({"(", "{", "[", "⦃"})
_ARROWS = frozenset({"→", "->"})
HEADER_WORDS = _words(
    "def theorem axiom opaque abbrev instance structure class inductive constructor "
    "recursor quot example"
)
MODIFIERS = _words("private protected noncomputable unsafe partial nonrec")
CUT = ("⋯", "[...]")
_LET_WORDS = _words("let have let_fun")  # `let x := v; b`, `let_fun this := v; b`
# words after which a term starts afresh (not an argument of what precedes)
_LEAD_WORDS = (
    HEADER_WORDS
    | MODIFIERS
    | BINDER_WORDS
    | _LET_WORDS
    | _words("show from by do if then else match with at return fun")
)


@dataclass
class Tok:
    """One token of printed Lean; `binder` is the index of the binding occurrence it refers to
    (its own index for the binding occurrence), or None for a free name or any other token."""

    text: str
    kind: str  # name, univ, num, str, sym
    line: int
    binder: int | None = None
    col: int = 0


def tokens(text: str) -> list[Tok]:
    """The tokens of Lean's printed text (layout dropped, lines kept)."""
    out: list[Tok] = []
    line = 0
    pos = 0
    for m in _TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        kind = {"str2": "str"}.get(m.lastgroup or "sym", m.lastgroup or "sym")
        col = m.start() - text.rfind("\n", 0, m.start()) - 1
        out.append(Tok(m.group(), kind, line, None, col))
    return out


def _close_of(toks: list[Tok], k: int) -> int:
    """Index of the bracket closing the one opened at k (or len(toks) if none)."""
    depth = 0
    for m in range(k, len(toks)):
        t = toks[m].text
        if t in OPEN and toks[m].kind == "sym":
            depth += 1
        elif t in CLOSE and toks[m].kind == "sym":
            depth -= 1
            if depth == 0:
                return m
    return len(toks)


def _scope_end(toks: list[Tok], start: int) -> int:
    """Where a binder body that starts at `start` ends: the enclosing closing bracket, a `,` at
    its own depth that no nested binder takes as its separator (`⟨fun x => a, b⟩`), or a `:=`
    that no nested `let`/`have` takes (`def f : ∀ x, P x :=` ends the type)."""
    depth = 0
    owed_sep = 0  # separators owed to nested keyword binders
    owed_def = 0  # `:=` owed to nested let/have
    m = start - 1
    while m + 1 < len(toks):
        m += 1
        t = toks[m]
        if depth == 0 and t.text == "|" and t.kind == "sym":
            arrow = _alternative_arrow(toks, m)
            if arrow is not None:  # `| a, b =>`: the pattern's commas separate patterns
                m = arrow
                continue
        if depth == 0 and t.text == "match" and t.kind == "name":
            m = _match_with(toks, m)  # `match a, b with`: the commas separate discriminants
            continue
        if depth == 0 and t.text in BINDER_WORDS and t.kind in ("name", "sym"):
            owed_sep += 1
        elif depth == 0 and t.text in _LET_WORDS and t.kind == "name":
            owed_def += 1
        if t.kind != "sym":
            continue
        if t.text in OPEN:
            depth += 1
        elif t.text in CLOSE:
            depth -= 1
            if depth < 0:
                return m
        elif depth == 0 and t.text in _BODY_START:
            if owed_sep:
                owed_sep -= 1
            elif t.text == ",":
                return m
        elif depth == 0 and t.text == ":=":
            if not owed_def:
                return m
            owed_def -= 1
    return len(toks)


def _group_names(toks: list[Tok], k: int, close: int) -> list[int]:
    """Indices of the names a binder group `(x y : A)` (k is its opening bracket) binds."""
    inner = range(k + 1, close)
    colon = next((m for m in inner if toks[m].text == ":" and toks[m].kind == "sym"), None)
    if colon is None:
        if toks[k].text == "[":
            return []  # `[C]`: an anonymous instance binder
        names = list(inner)
    else:
        names = list(range(k + 1, colon))
    if not names or not all(toks[m].kind == "name" for m in names):
        return []
    return [m for m in names if toks[m].text != "_"]


def _is_group(toks: list[Tok], k: int) -> tuple[int, list[int]] | None:
    """(closing index, bound names) if a binder group opens at k."""
    if toks[k].kind != "sym" or toks[k].text not in _GROUP_OPEN:
        return None
    close = _close_of(toks, k)
    if close >= len(toks):
        return None
    names = _group_names(toks, k, close)
    has_colon = any(toks[m].text == ":" for m in range(k + 1, close))
    if toks[k].text == "[" and not has_colon:
        return close, []
    if not names and not (toks[k].text == "(" and has_colon and toks[k + 1].text == "_"):
        return None
    return close, names


@dataclass(frozen=True)
class Binding:
    """Names bound at `names` (token indices), visible in tokens [start, end)."""

    names: tuple[int, ...]
    start: int
    end: int


def bindings(toks: list[Tok]) -> list[Binding]:
    """Every binder of the printed text, in the order it appears."""
    found: list[Binding] = []
    bars: set[int] = set()  # the bars of set-builders, which start no match alternative
    for k, t in enumerate(toks):
        if t.text in BINDER_WORDS and t.kind in ("name", "sym"):
            found += _keyword_binder(toks, k)
        elif t.text in _LET_WORDS and t.kind == "name":
            if k + 1 < len(toks) and toks[k + 1].kind == "name":
                found.append(_let(toks, k))
        elif t.kind == "sym" and t.text == "|" and k not in bars:
            alt = _alternative(toks, k)
            if alt is not None:
                found.append(alt)
        elif t.kind == "sym" and t.text in _GROUP_OPEN:
            if t.text == "{":
                sb = _set_builder(toks, k)
                if sb is not None:
                    found.append(sb)
                    bars.add(sb.start - 1)
                    continue
            group = _is_group(toks, k)
            if group is None:
                continue
            close, names = group
            nxt = toks[close + 1].text if close + 1 < len(toks) else ""
            if nxt in _ARROWS and not _after_binder_word(toks, k):
                found.append(Binding(tuple(names), close + 2, _scope_end(toks, close + 2)))
        elif t.kind == "name" and _signature_head(toks, k):
            found += _signature(toks, k)
    return found


def _top_level(
    toks: list[Tok],
    start: int,
    wanted: Collection[str],
    *,
    kind: str = "sym",
    stops: Collection[str] = (),
) -> int | None:
    """The first index from `start` at bracket depth 0 whose token is of `kind` with a text in
    `wanted`; None where a bracket closes below `start`, a symbol of `stops` comes first at
    depth 0, or there is none."""
    depth = 0
    for m in range(start, len(toks)):
        t = toks[m]
        if t.kind == "sym" and t.text in OPEN:
            depth += 1
        elif t.kind == "sym" and t.text in CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and t.kind == kind and t.text in wanted:
            return m
        elif depth == 0 and t.kind == "sym" and t.text in stops:
            return None
    return None


def _let(toks: list[Tok], k: int) -> Binding:
    """`let x := v; b`, `have h : P := v; b`, `let_fun this := v; b`: the name is visible in
    the body after the `;` (a `let` is not recursive: `v` and `P` are outside its scope), to
    the end of the enclosing term."""
    assign = _top_level(toks, k + 2, {":="})
    value = None if assign is None else assign + 1
    if value is None:
        return Binding((k + 1,), k + 2, _scope_end(toks, k + 2))
    end = _scope_end(toks, value)
    depth = 0
    for m in range(value, end):  # the body starts after the value's `;`
        t = toks[m]
        if t.kind == "sym" and t.text in OPEN:
            depth += 1
        elif t.kind == "sym" and t.text in CLOSE:
            depth -= 1
        elif depth == 0 and t.kind == "sym" and t.text == ";":
            return Binding((k + 1,), m + 1, end)
    return Binding((k + 1,), value, end)


def _after_binder_word(toks: list[Tok], k: int) -> bool:
    """Whether the group at k belongs to a keyword binder's list (`∀ (x : A) (y : B), …`)."""
    m = k - 1
    while m >= 0:
        t = toks[m]
        if t.text in BINDER_WORDS:
            return True
        if t.kind == "sym" and t.text in CLOSE:
            depth = 0
            while m >= 0:
                if toks[m].text in CLOSE:
                    depth += 1
                elif toks[m].text in OPEN:
                    depth -= 1
                    if depth == 0:
                        break
                m -= 1
            m -= 1
            continue
        if t.kind == "name":
            m -= 1
            continue
        return False
    return False


def _keyword_binder(toks: list[Tok], k: int) -> list[Binding]:
    """`∀ (x : A) {y : B} z, body`: each group's names are visible from the end of their group
    (later binder types may mention them) to the end of the body."""
    groups: list[tuple[list[int], int]] = []  # (names, where they become visible)
    j = k + 1
    if j < len(toks) and toks[j].text == "'":  # `∑' x, …`
        j += 1
    while j < len(toks):
        t = toks[j]
        group = _is_group(toks, j) if t.kind == "sym" else None
        if group is not None:
            groups.append((group[1], group[0] + 1))
            j = group[0] + 1
        elif t.kind == "sym" and t.text in ("(", "⟨") and toks[k].text in ("fun", "λ"):
            close = _close_of(toks, j)  # a pattern: `fun (x, y) => …`, `fun ⟨a, h⟩ => …`
            groups.append((_pattern_vars(toks, j, close + 1), close + 1))
            j = close + 1
        elif t.kind == "name" and t.text not in BINDER_WORDS:
            groups.append(([j] if t.text != "_" else [], j + 1))
            j += 1
        elif t.kind == "sym" and t.text == ":" and groups:  # `∀ x : A, …`
            j = _skip_to_body(toks, j)
        else:
            break
    if j < len(toks) and toks[j].text in _PREDICATE_OPS:  # `∀ x > 0, …`
        j = _skip_to_body(toks, j)
    body = j + 1 if j < len(toks) and toks[j].text in _BODY_START else j
    end = _scope_end(toks, body)
    return [Binding(tuple(names), start, end) for names, start in groups if names]


def _match_with(toks: list[Tok], k: int) -> int:
    """The index of the `with` of the `match` at k (or of the `match` itself if none)."""
    found = _top_level(toks, k + 1, {"with"}, kind="name")
    return k if found is None else found


def _alternative_arrow(toks: list[Tok], k: int) -> int | None:
    """The `=>` of a match alternative whose bar is at k (`| pat, pat => rhs`), or None when
    the bar starts none (an absolute value `|x|`, a set-builder's bar)."""
    return _top_level(toks, k + 1, {"=>", "↦"}, stops={"|", ":=", "//"})


def _alternative(toks: list[Tok], k: int) -> Binding | None:
    """A match alternative `| pat, pat => rhs` (of `match … with`, `fun | …`, or the equations
    of a printed definition): the pattern's variables are bound in its right-hand side, which
    ends at the enclosing bracket or at the next alternative of the same match. A bar after a
    nested `match` in the right-hand side belongs to it (Lean's parser is greedy), unless it
    stands on a later line at or left of this bar's column (Lean's layout of the outer match)."""
    arrow = _alternative_arrow(toks, k)
    if arrow is None:
        return None
    names = _pattern_vars(toks, k + 1, arrow)
    depth = 0
    nested = False
    end = len(toks)
    for m in range(arrow + 1, len(toks)):
        t = toks[m]
        if depth == 0 and t.kind == "name" and t.text == "match":
            nested = True
        if t.kind != "sym":
            continue
        if t.text in OPEN:
            depth += 1
        elif t.text in CLOSE:
            depth -= 1
            if depth < 0:
                end = m
                break
        elif depth == 0 and t.text == "|" and _alternative_arrow(toks, m) is not None:
            if t.line > toks[k].line and t.col <= toks[k].col:
                end = m
                break
            if not nested:
                end = m
                break
        elif depth == 0 and t.text == "fun" and m + 1 < len(toks) and toks[m + 1].text == "|":
            nested = True
    return Binding(tuple(names), arrow + 1, end)


def _pattern_vars(toks: list[Tok], start: int, stop: int) -> list[int]:
    """Indices of the variables a pattern binds (tokens [start, stop)): its names that are
    not the head of an application (`L.cons x xs` binds `x`, `xs`), not a dotted constant, and
    not after `.` (`.inl h`); a dotted name with a lower-case first part is a variable with
    field notation (`j.succ`, printed for `Nat.succ j`). Constructors are always dotted
    (`Option.none`) under `pp.fullNames`, which the verifier's queries pin; without it a bare
    nullary constructor (`none`) is read as a variable."""
    out: list[int] = []
    for m in range(start, stop):
        t = toks[m]
        if t.kind != "name" or t.text == "_" or t.text in _LEAD_WORDS or t.text in _KEYWORDS:
            continue
        prev = toks[m - 1] if m > start else None
        if prev is not None and prev.kind == "sym" and prev.text in (".", "@"):
            continue
        nxt = toks[m + 1] if m + 1 < stop else None
        starts_arg = nxt is not None and (
            nxt.kind in ("name", "num", "str") or nxt.text in ("(", "⟨", "[", "{", "@")
        )
        if starts_arg and not (prev is not None and ends_term(prev)):
            continue  # the head of an application: a constructor
        head = _head_name(t.text)
        if head != t.text and not head[:1].islower():
            continue  # a dotted constant `L.nil`
        out.append(m)
    return out


def _head_name(text: str) -> str:
    """The first part of a dotted name (`j` of `j.succ`), the whole name if undotted."""
    m = re.match(_NAME_PART, text)
    return m.group() if m else text


def _skip_to_body(toks: list[Tok], j: int) -> int:
    """From a `:` or predicate operator, the index of the `,`/`=>`/`↦` that starts the body."""
    depth = 0
    for m in range(j, len(toks)):
        t = toks[m].text
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
            if depth < 0:
                return m
        elif depth == 0 and t in _BODY_START:
            return m
    return len(toks)


def _set_builder(toks: list[Tok], k: int) -> Binding | None:
    """`{x | p x}`, `{x : A | p x}`, `{x // p x}`, `{x : A // p x}` and a binder predicate
    before the bar (`{x ∈ s | p x}`, `{n ≤ 5 | p n}`): the name is visible after the bar only
    (`s` and `A` are outside its scope)."""
    close = _close_of(toks, k)
    if k + 2 >= close or toks[k + 1].kind != "name":
        return None
    typed = toks[k + 2].text == ":" or toks[k + 2].text in _PREDICATE_OPS
    depth = 0
    for m in range(k + 2, close):
        t = toks[m].text
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
        elif depth == 0 and t in ("|", "//"):
            if m == k + 2 or typed:
                return Binding((k + 1,), m + 1, close)
            return None
        elif depth == 0 and t in (",", ":="):
            return None
    return None


def _signature_head(toks: list[Tok], k: int) -> bool:
    """A declaration name that starts a printed header or a line (`def g.{u} …`, a field or
    constructor line of a structure), followed by binder groups and a `:`."""
    if k > 0:
        prev = toks[k - 1]
        line_start = prev.line != toks[k].line
        after_word = prev.text in HEADER_WORDS or prev.text in MODIFIERS or prev.text == "]"
        if not (line_start or after_word):
            return False
    j = k + 1
    if j < len(toks) and toks[j].kind == "univ":
        j += 1
    saw = False
    while j < len(toks):
        group = _is_group(toks, j)
        if group is None:
            break
        saw = True
        j = group[0] + 1
    return saw and j < len(toks) and toks[j].text == ":"


def _signature(toks: list[Tok], k: int) -> list[Binding]:
    """Each group's names are visible from the end of their group to the end of the answer."""
    out: list[Binding] = []
    j = k + 1 + (toks[k + 1].kind == "univ")
    while (group := _is_group(toks, j)) is not None:
        out.append(Binding(tuple(group[1]), group[0] + 1, len(toks)))
        j = group[0] + 1
    return out


def resolve(toks: list[Tok]) -> list[Tok]:
    """Set `binder` on every binding occurrence and every use of a bound name (innermost
    binder wins: later binders are applied after, so they override inside their scope)."""
    for b in bindings(toks):
        for at in b.names:
            name = _head_name(toks[at].text)
            toks[at].binder = at
            for m in range(b.start, b.end):
                t = toks[m]
                if t.kind == "name" and (t.text == name or t.text.startswith(name + ".")):
                    t.binder = at
    return toks


_SPELLING = {"↦": "=>", "λ": "fun", "->": "→"}  # one term, spelt by `pp.unicode(.fun)`


def canonical(text: str) -> str:
    """The printed text with bound names replaced by `⟪k⟫` in binding order (a dotted use such
    as `h.le` keeps its field), `↦`/`λ`/`->` spelt `=>`/`fun`/`→`, layout dropped: equal
    exactly when two answers are the same up to the names of bound variables."""
    toks = resolve(tokens(text))
    levels = _level_params(toks)
    at_level = _level_positions(toks)
    order: dict[int, int] = {}
    out: list[str] = []
    for m, t in enumerate(toks):
        if t.kind == "univ":
            inner = [x.strip() for x in t.text[2:-1].split(",")]
            out.append(".{" + ", ".join(_level(x, levels) for x in inner) + "}")
            continue
        if m in at_level and t.text in levels:
            out.append(levels[t.text])
            continue
        if t.binder is None:
            out.append(_SPELLING.get(t.text, t.text) if t.kind in ("sym", "name") else t.text)
            continue
        new = order.setdefault(t.binder, len(order))
        name = _head_name(toks[t.binder].text)
        out.append(f"⟪{new}⟫" + t.text[len(name) :])
    return " ".join(out)


def _level_params(toks: list[Tok]) -> dict[str, str]:
    """The universe parameters of the declaration an answer is about (`def g.{u, v}`,
    `@t.{u_1} : …`): its first universe list right after its name, when that list is made of
    level names only. They are bound like variables: a renamed universe is the same statement.
    A list with a numeral or an expression (`Foo.{2}`, `List.map.{0, u}`) instantiates the
    constant, it does not declare parameters: its levels are compared as printed."""
    skip: set[int] = set()
    for m, t in enumerate(toks[:-1]):
        if t.text == "@[" and t.kind == "sym":
            skip.update(range(m, _close_of(toks, m) + 1))
        if m in skip:
            continue
        if t.kind == "name" and t.text not in HEADER_WORDS and t.text not in MODIFIERS:
            if toks[m + 1].kind == "univ":
                names = [x.strip() for x in toks[m + 1].text[2:-1].split(",")]
                if all(_LEVEL_NAME.fullmatch(n) for n in names):
                    return {n: f"⟪u{i}⟫" for i, n in enumerate(names)}
            return {}
    return {}


_LEVEL_NAME = re.compile(r"(?!(?:max|imax)$)[^\W\d][\w']*")


def _level(expr: str, levels: dict[str, str]) -> str:
    return " ".join(levels.get(w, w) for w in expr.split())


def _level_positions(toks: list[Tok]) -> set[int]:
    """Indices of the names that are universe levels outside `.{…}`: the level argument of a
    `Type`/`Sort` that starts a term (`Type u`, `Sort (max 1 u)`, after `:`, `→`, `(`, a binder
    word). Lean parses that level at leading precedence only, so a `Type`/`Sort` in argument
    position (`@id.{2} Type (@Classical.choice.{2} Type inst)`, `@Eq.{2} Type Nat Int`) takes no
    level: what follows it is the next argument, a term like any other."""
    found: set[int] = set()
    for k, t in enumerate(toks[:-1]):
        if t.text not in ("Type", "Sort") or t.kind != "name":
            continue
        if k > 0 and ends_term(toks[k - 1]):
            continue  # an argument: `f Type x` is `f` applied to `Type` and `x`
        nxt = toks[k + 1]
        if nxt.line != t.line:
            continue  # `Foo.x : Type` ends a line of a `#print`; the next line is not its level
        if nxt.kind == "name" and nxt.text not in _LEAD_WORDS:
            found.add(k + 1)
        elif nxt.text == "(" and nxt.kind == "sym":
            found.update(range(k + 1, _close_of(toks, k + 1) + 1))
    return found


def ends_term(t: Tok) -> bool:
    """Whether a term can end with this token, so that a term right after it is an argument of
    an application (a name that is not a keyword, a literal, a universe list, a closing
    bracket)."""
    if t.kind in ("num", "str", "univ"):
        return True
    if t.kind == "name":
        return t.text not in _LEAD_WORDS
    return t.text in CLOSE


def answer_problem(text: str) -> str | None:
    """Why Lean's answer cannot be read (cut short, unbalanced brackets), or None."""
    if any(cut in text for cut in CUT):
        return "Lean's answer was cut short (⋯), so it cannot be compared"
    depth = 0
    for t in tokens(text):
        if t.kind != "sym":
            continue
        if t.text in OPEN:
            depth += 1
        elif t.text in CLOSE:
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        return "Lean's answer has unbalanced brackets, so it cannot be read"
    return None


_KEYWORDS = (
    HEADER_WORDS
    | MODIFIERS
    | BINDER_WORDS
    | _words(
        "let have let_fun show from by do if then else match with at fun Type Sort Prop nat_lit "
        "number of parameters fields parents constructors field notation resolution order primitive "
        "private_decl"
    )
)


def constants(text: str) -> list[str]:
    """The global constants a `#print`/`#check` answer mentions, in order, without keywords,
    bound variables, attribute names (`@[reducible]`), universe levels, field labels of
    structure instances (`{ plus := … }`) and the header words of a structure's `#print`."""
    toks = resolve(tokens(text))
    skip = _attribute_and_universe_tokens(toks)
    found: list[str] = []
    for m, t in enumerate(toks):
        if t.kind != "name" or t.binder is not None or m in skip or t.text in _KEYWORDS:
            continue
        nxt = toks[m + 1].text if m + 1 < len(toks) else ""
        prev = toks[m - 1].text if m else ""
        if nxt == ":=" and prev in ("{", ",", "("):
            continue  # a field label or a named argument
        if prev == "." and toks[m - 1].kind == "sym":
            continue  # a field of a term: `(n + m).succ`
        if t.text == "Quotient" and nxt == "primitive" and m == 0:
            continue  # the declaration kind of a `#print` of `Quot.mk`: `Quotient primitive`
        name = t.text.removeprefix("_root_.").rstrip("✝⁰¹²³⁴⁵⁶⁷⁸⁹")
        if name and name not in found:
            found.append(name)
    return found


def _attribute_and_universe_tokens(toks: list[Tok]) -> set[int]:
    """Indices inside `@[…]` and the universe levels after `Type`/`Sort`."""
    skip = _level_positions(toks)
    for k, t in enumerate(toks):
        if t.text == "@[" and t.kind == "sym":
            skip.update(range(k, _close_of(toks, k) + 1))
    return skip
