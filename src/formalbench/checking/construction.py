"""Construction tasks: a definition hole must be filled with an honest construction.

In evaluation and algorithm tasks (AMBER; PutnamBench's `abbrev ..._solution : T := sorry`)
the prover supplies a value, and a verification theorem states its property. These shortcuts
would make such a task trivial, and each is refused here:

* leaving the value open (a hole in its body) -> forbidden_construct;
* changing its signature, e.g. taking the property as an extra parameter -> statement_changed,
  reported by statement preservation, which compares the signature token by token;
* picking the value by choice on an existence proof -> non_constructive (see `choice_hits`;
  Lean only). Helper definitions the candidate adds and the value refers to are followed, so
  the choice cannot hide one call away. A Coq value's choice is the assistant's to find: with
  coqc, `value_check` walks the elaborated value (`Print` with every notation off, names
  resolved by `Locate`), which sees a choice behind a notation or a `Require`d helper and
  does not take the file's own `choose` for one, as a token rule would;
* a word of `policy.construction_forbidden` (default `partial`: a `partial def` is opaque to
  the kernel) on the value or a helper it uses -> forbidden_construct.

Whether a task is a construction at all is read off the original (`task_kind`): it is one
when a value definition (Lean `def`/`abbrev`/..., Coq `Definition`/`Fixpoint`/...) holds a
hole. A task record may say more: its kind (`evaluation`, `algorithm`, `transformation`) and
which definitions are the constructions (`Task.constructions`); then exactly those are checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.checking.decls import COQ_VALUE_KINDS, LEAN_VALUE_KINDS, Decl
from formalbench.checking.holes import hole_decls
from formalbench.core.lexer import Token, plain_name, words
from formalbench.core.records import Finding, Language, Reason, TaskKind

_HOLE_WORDS = frozenset({"sorry", "admit", "Admitted", "give_up"})
# Tokens after which a term is not being applied to anything more (an argument cannot start).
_NOT_ARGUMENT = words("then else with in at from using generalizing says where do if match")
_ARGUMENT_SYMBOLS = words("( ⟨ [ { @ ↑ ⦃ ‹ λ")
_TACTIC_BEFORE = words("by ; <;> · • =>")


def is_value(decl: Decl, language: Language) -> bool:
    kinds = LEAN_VALUE_KINDS if language == Language.lean else COQ_VALUE_KINDS
    return decl.kind in kinds


def value_holes(decls: Iterable[Decl], holes: Iterable[int], language: Language) -> list[str]:
    """Names of the value definitions among the hole-bearing declarations `holes` (indices)."""
    hole_set = set(holes)
    return [d.name for d in decls if d.index in hole_set and d.name and is_value(d, language)]


def task_kind(original: str, language: Language) -> TaskKind:
    """`evaluation` when the original leaves a value definition open, else `proof`.

    Importers and `formalbench check` use this, so that the construction rules apply
    whenever the text asks for a construction and not only when a caller says so."""
    decls, holes = hole_decls(original, language)
    return TaskKind.evaluation if value_holes(decls, holes, language) else TaskKind.proof


# --- choice -------------------------------------------------------------------------------
def _opened(candidate: list[Decl], d: Decl) -> tuple[set[str], dict[str, str]]:
    """Namespaces whose names `d` can use bare (Lean `open`s before it or on it, the
    namespaces it is declared in) and `open X renaming a → b` aliases (b -> X.a)."""
    spaces: set[str] = set()
    aliases: dict[str, str] = {}
    if d.name and "." in d.name:
        parts = d.name.split(".")[:-1]
        spaces |= {".".join(parts[: i + 1]) for i in range(len(parts))}
    for c in candidate:
        if c.index < d.index and c.kind == "open":
            _read_opens(c.tokens, spaces, aliases)
    _read_opens(d.tokens[: d.head], spaces, aliases)  # `open X in` on `d` itself
    return spaces, aliases


def _read_opens(toks: list[Token], spaces: set[str], aliases: dict[str, str]) -> None:
    mode = ""
    last_space = ""
    for i, tok in enumerate(toks):
        text = plain_name(tok.text).removeprefix("_root_.")
        if text == "open":
            mode = "open"
        elif text == "in" or not mode:
            mode = ""
        elif text in ("scoped", "hiding", "renaming"):
            mode = text
        elif tok.kind != "ident":
            continue
        elif mode == "open":
            spaces.add(text)
            last_space = text
        elif mode == "renaming" and i >= 2 and toks[i - 1].text in ("→", "->"):
            aliases[text] = f"{last_space}.{plain_name(toks[i - 2].text)}"


def _applied(toks: list[Token], k: int) -> bool:
    """Whether the term ending at token k is applied to an argument (the next token opens one)."""
    if k + 1 >= len(toks):
        return False
    nxt, cur = toks[k + 1], toks[k]
    if nxt.line != cur.line:
        line_start = next(t for t in toks[: k + 1] if t.line == cur.line)
        if nxt.column <= line_start.column:
            return False
    if nxt.kind in ("number", "string", "char"):
        return True
    if nxt.kind == "ident":
        return nxt.text not in _NOT_ARGUMENT
    return nxt.text in _ARGUMENT_SYMBOLS


def _tactic_position(toks: list[Token], k: int) -> bool:
    """Whether token k starts a tactic: first on its line, or after `by`, `;`, a bullet."""
    prev = toks[k - 1] if k else None
    return prev is None or prev.line != toks[k].line or prev.text in _TACTIC_BEFORE


def _exists_bound(toks: list[Token], name: str) -> bool:
    """Whether `name` is bound in these tokens with an existential type (`(h : ∃ x, p x)`,
    `have h : Exists p`, `(h h' : ∃ ...)`)."""
    for i, tok in enumerate(toks):
        if tok.text != name:
            continue
        j = i + 1
        while j < len(toks) and toks[j].kind == "ident":
            j += 1
        if j + 1 < len(toks) and toks[j].text == ":" and toks[j + 1].text in ("∃", "Exists"):
            return True
    return False


def choice_hits(
    d: Decl, candidate: list[Decl], constants: Iterable[str], language: Language
) -> list[tuple[Token, str]]:
    """The tokens of `d`'s body that pick a value by choice, with the constant each one means.

    Lean, where `choose` is also `Nat.choose` and `Finset.choose`, counts only what must be a
    choice: the qualified constant (`Classical.choose`, `_root_.`/«» spellings included); its
    bare last name where the namespace is open (`open Classical`) or renamed; the `choose`
    tactic (`choose f hf using h`); and the dot form `e.choose` when nothing is applied to it
    (`Nat.choose` and `Finset.choose` always take arguments, `Exists.choose` takes none) or when
    its receiver is bound with an `∃` type in the declaration (a function-valued choice
    `h.choose x`). Coq: none (the value check's, see the module docstring)."""
    consts = list(constants)
    toks = d.tokens
    hits: list[tuple[Token, str]] = []
    if language == Language.coq:
        return hits
    spaces, aliases = _opened(candidate, d)
    for k in range(d.body_start, len(toks)):
        tok = toks[k]
        if tok.kind != "ident":
            continue
        text = plain_name(tok.text).removeprefix("_root_.")
        hit = _lean_hit(toks, k, text, consts, spaces, aliases)
        if hit is not None:
            hits.append((tok, hit))
    return hits


def _lean_hit(
    toks: list[Token],
    k: int,
    text: str,
    consts: list[str],
    spaces: set[str],
    aliases: dict[str, str],
) -> str | None:
    if aliases.get(text) in consts:
        return aliases[text]
    prev = toks[k - 1] if k else None
    after_dot = prev is not None and prev.text == "." and prev.end == toks[k].offset
    for const in consts:
        space, _, last = const.rpartition(".")
        if text == const or text.endswith("." + const):
            return const
        if text == last and not after_dot:
            if space in spaces:
                return const
            if _tactic_position(toks, k) and any(
                t.text == "using" for t in toks[k + 1 :] if t.line == toks[k].line
            ):
                return const  # the tactic `choose f hf using h`
        receiver = text[: -len(last) - 1] if text.endswith("." + last) else None
        if after_dot and text == last:
            receiver = ""
        if receiver is None:
            continue
        if receiver and _exists_bound(toks, receiver):
            return const
        if (not receiver or receiver[0].islower()) and not _applied(toks, k):
            return const
    return None


# --- findings -----------------------------------------------------------------------------
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
    construction_forbidden: Iterable[str] = ("partial",),
    constructions: Iterable[str] = (),
) -> list[Finding]:
    """Findings for each construction: the task's own list (`Task.constructions`, e.g. the
    target type and problem of a transformation) or, when it gives none, each hole-bearing
    value definition of the original (see module doc)."""
    constants = list(choice_constants)
    forbidden_set = set(forbidden)
    refused = set(construction_forbidden)
    original_names = {d.name for d in original if d.name}
    added = {
        key: c
        for c in candidate
        if c.name and c.name not in original_names
        for key in (c.name, c.name.rsplit(".", 1)[-1])
    }
    by_name = {c.name: c for c in candidate if c.name}
    findings: list[Finding] = []
    for name in list(constructions) or value_holes(original, holes, language):
        c = by_name.get(name)
        if c is None:
            continue  # reported as missing_target by statement preservation
        body = [t for t in c.body if t.text != ":="]
        open_words = [t for t in body if t.text in _HOLE_WORDS and t.text not in forbidden_set]
        if not body or [t.text for t in body] == ["by"] or open_words:
            findings.append(_finding(Reason.forbidden_construct, name, c.tokens[c.head],
                                     f"the value of `{name}` is not filled in"))  # fmt: skip
        for d in [c, *_used_helpers(c, added)]:
            where = "" if d is c else f" (through `{d.name}`)"
            word = next(
                (t.text for t in d.tokens if t.kind == "ident" and plain_name(t.text) in refused),
                None,
            )
            if word is not None:
                findings.append(_finding(Reason.forbidden_construct, word, d.tokens[d.head],
                                         f"`{word}` in the construction of `{name}`{where}"))  # fmt: skip
            for tok, _const in choice_hits(d, candidate, constants, language):
                findings.append(
                    _finding(
                        Reason.non_constructive,
                        tok.text,
                        tok,
                        f"the value of `{name}` is chosen by `{tok.text}`{where}, "
                        "a choice on an existence proof, not a construction",
                    )
                )
    return findings


def _finding(reason: Reason, subject: str, at: Token, message: str) -> Finding:
    return Finding(reason=reason, subject=subject, line=at.line, column=at.column, message=message)
