"""The global names a term refers to, read off what coqc prints under `Set Printing All`.

`Print c.` shows a definition as `c = <body>\n     : <type>`, an axiom, a parameter or an
opaque library constant as `*** [ c : <type> ]`, an inductive as `Inductive c (params) :
arity :=  C1 : T1 | C2 : T2.` (records print as `Variant`), and an abbreviation as
`Notation c := target`. Coq 8.16 prints every global by its *shortest* name in the current
context (it has no "fully qualified" printing option), so the names returned here are
resolved by the caller in the same context (`About`/`Locate`).

Bound variables are told apart from globals by scope, not by name: the printer reuses a
global's name for an unrelated binder (`fun epsilon : nat => epsilon` while
`Epsilon.epsilon` is imported) and renames a binder only where it would capture a global
used in its scope. A small recursive-descent reader follows `fun`, `forall`, `let`, `fix`,
`match ... as ... in ... return ... with | pattern => ... end` and inductive parameters;
text it cannot follow falls back to "every identifier is a reference", which errs towards
finding more, never fewer, names (the non-constructive check must not miss one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""\s+|"(?:[^"]|"")*"|(?P<id>[A-Za-z_][A-Za-z0-9_']*(?:\.[A-Za-z_][A-Za-z0-9_']*)*)"""
    r"""(?:@\{[^}]*\})?|(?P<sym>=>|:=|[()\[\]{}|,:@%;.]|[^\sA-Za-z_])"""
)
_KEYWORDS = frozenset(
    (
        *("forall", "fun", "let", "in", "match", "with", "end", "as", "return", "fix"),
        *("cofix", "struct", "for", "if", "then", "else", "Prop", "Set", "Type", "SProp"),
        *("Inductive", "CoInductive", "Variant", "Record", "Structure", "Notation"),
    )
)


class _Unreadable(Exception):
    """The printed text has a shape the reader does not follow."""


def tokens(text: str) -> list[str]:
    """Identifiers (universe instances dropped) and symbols; strings and blanks skipped."""
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        if m.group("id"):
            out.append(m.group("id"))
        elif m.group("sym"):
            out.append(m.group("sym"))
    return out


def is_name(tok: str) -> bool:
    return bool(tok) and (tok[0].isalpha() or tok[0] == "_") and tok != "_"


class _Reader:
    def __init__(self, toks: list[str]) -> None:
        self.toks = toks
        self.i = 0
        self.refs: list[str] = []
        self.scopes: list[set[str]] = []

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise _Unreadable(f"expected {expected!r}, got {tok!r}")
        self.i += 1
        return tok

    def bound(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    def ref(self, name: str) -> None:
        if name not in _KEYWORDS and not self.bound(name):
            self.refs.append(name)

    # term := binder-form | application of atoms, up to a stop token at this level
    def term(self, stops: frozenset[str]) -> None:
        while (tok := self.peek()) is not None and tok not in stops:
            if tok in ("fun", "forall"):
                self.take()
                self.binders(frozenset({"=>" if tok == "fun" else ","}))
                self.take()
                try:
                    self.term(stops)
                finally:
                    self.scopes.pop()
                return
            if tok == "let":
                self.let(stops)
                return
            if tok in ("fix", "cofix"):
                self.fix(stops)
                return
            if tok == "match":
                self.match()
            elif tok == "(":
                self.take()
                self.term(frozenset({")", ":"}))
                if self.peek() == ":":
                    self.take()
                    self.term(frozenset({")"}))
                self.take(")")
            elif tok in (")", "]", "}", "=>", ":=", "in", "with", "end", "|"):
                raise _Unreadable(f"unexpected {tok!r}")
            else:
                self.take()
                if is_name(tok):
                    self.ref(tok)

    def binders(self, ends: frozenset[str]) -> None:
        """Binder groups up to one of `ends` (not taken); opens the scope they bind."""
        scope: set[str] = set()
        self.scopes.append(scope)
        while (tok := self.peek()) is not None and tok not in ends:
            if tok == "(":
                self.take()
                names = self.names(frozenset({":", ")"}))
                if self.peek() == ":":
                    self.take()
                    self.term(frozenset({")"}))
                self.take(")")
                scope.update(names)
            elif tok == "{":  # `{struct n}` of a fix
                while self.take() != "}":
                    pass
            elif tok == ":" and ends == frozenset({":="}):
                return  # the return type of a fix
            else:
                names = self.names(frozenset({":"}) | ends)
                if self.peek() == ":":
                    self.take()
                    self.term(ends)
                scope.update(names)
        if self.peek() is None:
            raise _Unreadable("binders without a body")

    def names(self, ends: frozenset[str]) -> set[str]:
        found: set[str] = set()
        while (tok := self.peek()) is not None and tok not in ends:
            self.take()
            if tok != "_" and not is_name(tok):
                raise _Unreadable(f"binder {tok!r}")
            if tok != "_":
                found.add(tok)
        return found

    def let(self, stops: frozenset[str]) -> None:
        self.take("let")
        name = self.take()
        if not is_name(name) and name != "_":
            raise _Unreadable("let pattern")
        if self.peek() == ":":
            self.take()
            self.term(frozenset({":="}))
        self.take(":=")
        self.term(frozenset({"in"}))
        self.take("in")
        self.scopes.append({name})
        try:
            self.term(stops)
        finally:
            self.scopes.pop()

    def fix(self, stops: frozenset[str]) -> None:
        self.take()
        name = self.take()
        self.scopes.append({name})
        self.binders(frozenset({":="}))
        if self.peek() == ":":
            self.take()
            self.term(frozenset({":="}))
        self.take(":=")
        self.term(stops | {"with", "for"})
        if self.peek() in ("with", "for"):
            raise _Unreadable("mutual fix")
        self.scopes.pop()
        self.scopes.pop()

    def match(self) -> None:
        self.take("match")
        heads = frozenset({"as", "in", "return", "with", ","})
        self.term(heads)
        header: set[str] = set()
        while self.peek() in (",", "as", "in"):
            tok = self.take()
            if tok == ",":
                self.term(heads)
            elif tok == "as":
                header.add(self.take())
            else:
                ref = self.take()
                self.ref(ref)
                while (t := self.peek()) not in heads and t is not None:
                    if self.take() != "_":
                        header.add(t)
        self.scopes.append(header)
        if self.peek() == "return":
            self.take()
            self.term(frozenset({"with"}))
        self.scopes.pop()
        self.take("with")
        if self.peek() == "|":
            self.take()
        while self.peek() != "end":
            variables = self.pattern()
            self.take("=>")
            self.scopes.append(variables)
            try:
                self.term(frozenset({"|", "end"}))
            finally:
                self.scopes.pop()
            if self.peek() == "|":
                self.take()
        self.take("end")

    def pattern(self) -> set[str]:
        """Pattern variables; the head of each application is a constructor (a reference)."""
        variables: set[str] = set()
        head = True
        while (tok := self.peek()) not in ("=>", None):
            self.take()
            if tok in ("(", ","):
                head = True
            elif tok == "@":
                continue
            elif is_name(tok):
                if head:
                    self.ref(tok)
                else:
                    variables.add(tok)
                head = False
            elif tok in ("|", "as"):
                head = tok == "|"
        return variables


def term_refs(text: str) -> list[str]:
    """Global names the term `text` mentions, first occurrence first."""
    toks = tokens(text)
    reader = _Reader(toks)
    try:
        reader.term(frozenset())
    except (_Unreadable, IndexError, RecursionError):  # RecursionError: `S (S (... 1000 deep`
        return _all_names(toks)
    return list(dict.fromkeys(reader.refs))


def _all_names(toks: list[str]) -> list[str]:
    return list(dict.fromkeys(t for t in toks if is_name(t) and t not in _KEYWORDS))


@dataclass(frozen=True)
class Printed:
    """One `Print c.` answer: the printed name, whether a body was shown, the names used."""

    name: str
    kind: str  # "definition" (body shown), "assumption" (*** [ ]), "inductive", "alias"
    refs: list[str]
    declares: list[str]  # names the answer itself declares (an inductive's constructors)


_STARRED = re.compile(r"^\*\*\* \[ (?P<name>\S+) : (?P<type>.*) \]$", re.S)
_INDUCTIVE = re.compile(r"^(?:Inductive|CoInductive|Variant|Record|Structure) ")


def parse_print(lines: list[str]) -> Printed | None:
    """What one `Print` answer refers to (None: nothing printed that names a term)."""
    block: list[str] = []
    for line in lines:
        if not line.strip():
            if block:
                break
            continue
        block.append(line)
    text = "\n".join(block).strip()
    if not text:
        return None
    starred = _STARRED.match(text)
    if starred:
        return Printed(starred["name"], "assumption", term_refs(starred["type"]), [])
    if text.startswith("Notation "):
        _, _, rest = text.partition(" ")
        name, _, target = rest.partition(":=")
        return Printed(name.strip(), "alias", _all_names(tokens(target)), [])
    if _INDUCTIVE.match(text):
        return _inductive(text)
    name, sep, rest = text.partition(" = ")
    if not sep or " " in name.strip():
        return None
    return Printed(name.strip(), "definition", _definition_refs(rest), [])


def _definition_refs(rest: str) -> list[str]:
    """Names in `<body>\n     : <type>`: the type follows the last line starting with `:`."""
    lines = rest.split("\n")
    at = max((i for i, ln in enumerate(lines) if ln.lstrip().startswith(": ")), default=None)
    if at is None:
        return term_refs(rest)
    body = "\n".join(lines[:at])
    typ = "\n".join(lines[at:]).lstrip()[2:]
    return list(dict.fromkeys(term_refs(body) + term_refs(typ)))


def _inductive(text: str) -> Printed:
    """`Inductive I (params) : arity :=  C : T | ... [with J ...].`: the parameters are bound
    in the arity and constructor types; the inductives and constructors are declared here."""
    toks = tokens(text.rstrip("."))
    declares: list[str] = []
    refs: list[str] = []
    # split into blocks, one per mutual inductive (`with`)
    blocks: list[list[str]] = [[]]
    depth = 0
    for tok in toks[1:]:
        depth += (tok in "([{") - (tok in ")]}")
        if tok == "with" and depth == 0:
            blocks.append([])
        else:
            blocks[-1].append(tok)
    for block in blocks:
        if not block:
            continue
        declares.append(block[0])
        reader = _Reader(block[1:] + ["."])
        try:
            reader.binders(frozenset({":", ":="}))
            if reader.peek() == ":":
                reader.take()
                reader.term(frozenset({":="}))
            reader.take(":=")
            while reader.peek() not in (".", None):
                if reader.peek() == "|":
                    reader.take()
                ctor = reader.take()
                declares.append(ctor)
                reader.take(":")
                reader.term(frozenset({"|", "."}))
        except (_Unreadable, IndexError, RecursionError):  # RecursionError: `S (S (... 1000 deep`
            refs += _all_names(block[1:])
            continue
        refs += reader.refs
    name = declares[0] if declares else ""
    refs = [r for r in dict.fromkeys(refs) if r not in declares]
    return Printed(name, "inductive", refs, declares)


_EXPANDS = re.compile(r"^Expands to: (?P<kind>\S+(?: Type)?) (?P<path>\S+)")


def parse_about(lines: list[str]) -> tuple[str, str] | None:
    """(kind, fully qualified path) from `About c.`; None when c is not a defined object."""
    for line in lines:
        m = _EXPANDS.match(line.strip())
        if m:
            return m["kind"], m["path"]
    return None
