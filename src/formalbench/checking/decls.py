"""Cut a token stream into top-level commands (declarations and context commands).

Statement preservation, hole finding and the construction checks all reason per declaration:
which command a token belongs to, the declaration's full name, and where its signature ends
and its body (proof or value) begins.

Lean has no command terminator, so a command starts at a command keyword. Keywords that only
ever begin commands (`theorem`, `def`, `namespace`, ...) start one wherever they stand at
bracket depth 0; keywords that also exist as tactics or terms (`open`, `set_option`,
`attribute`, `module`, ...) start one at column 0 and also as the first word of a line at depth
0, since Lean needs no column 0 (an indented `attribute [instance] f` after a proof ends the
proof and is a command), except `open`/`set_option` with an `in` later on that line (the tactic
forms); a `#command` opening a line is always one. Modifiers and attributes (`@[simp] private
noncomputable`, the module system's `public`, `@[expose] public section`) and `open X in` /
`set_option o v in` prefixes stay with the command they introduce. A statement's own `:=`
(`let`/`have`/`letI`/`haveI`) and the arms of a `match` in it do not end the signature. Coq commands are sentences ended by `.`; a statement
and the proof sentences after it (up to `Qed`/`Defined`/`Admitted`/`Abort`, or up to the next
top-level command for a proof left open) form one declaration.
"""

from __future__ import annotations

from dataclasses import dataclass

from formalbench.core.lexer import Token, tokenize, words
from formalbench.core.records import Language

OPEN_BRACKETS = frozenset("([{⟨⦃⟦⟮⁅")
CLOSE_BRACKETS = frozenset(")]}⟩⦄⟧⟯⁆")

LEAN_NAMED = words(
    "theorem lemma def abbrev instance structure class inductive coinductive axiom opaque irreducible_def alias"
)
LEAN_MODIFIERS = words("private protected public noncomputable unsafe partial nonrec local scoped")
_LEAN_UNAMBIGUOUS = (
    LEAN_NAMED
    | LEAN_MODIFIERS
    | words(
        "example namespace section end universe import notation notation3 binder_predicate infix infixl infixr prefix postfix macro macro_rules syntax elab elab_rules declare_syntax_cat mutual variable initialize builtin_initialize run_cmd run_elab run_meta unif_hint add_decl_doc register_simp_attr"
    )
)
_LEAN_COLUMN0 = words("open set_option attribute export include omit module")
# Command words that are also tactics (`open Foo in tac`, `set_option o v in tac`): on a line
# of its own inside a proof such a word starts a command only when no `in` follows it there.
_LEAN_ALSO_TACTIC = words("open set_option")
_LEAN_IN_PREFIX = words("open set_option attribute include omit")
_LEAN_SYNONYMS = {"lemma": "theorem"}

COQ_THEOREMS = words("Theorem Lemma Fact Remark Corollary Proposition Property Example Goal")
COQ_DEFINITIONS = words(
    "Definition Fixpoint CoFixpoint Let Function Instance Inductive CoInductive Variant Record Structure Class Axiom Axioms Parameter Parameters Hypothesis Hypotheses Conjecture Variable Variables Context Ltac Module"
)
COQ_CLOSERS = words("Qed Defined Admitted Abort Save")
# Declarations that postulate instead of define: what a file adds to the axioms it rests on.
COQ_POSTULATES = words(
    "Axiom Axioms Parameter Parameters Hypothesis Hypotheses Conjecture Variable Variables"
)
# Declarations that define a value (a construction task's answer): the construction rules
# read them, and a filled Coq value hole ends with `Defined.` so that its value stays visible.
LEAN_VALUE_KINDS = frozenset({"def", "abbrev", "opaque", "instance"})
COQ_VALUE_KINDS = frozenset({"Definition", "Fixpoint", "CoFixpoint", "Let", "Function", "Instance"})
_COQ_PREFIXES = words("Local Global Polymorphic Monomorphic Program Private #")
_COQ_BULLETS = words("- + * { }")
_MODULE_WORDS = words("Import Export Type")
_COQ_TOP_LEVEL = (
    COQ_THEOREMS
    | COQ_DEFINITIONS
    | words("Require From Section End Notation Infix Reserved Tactic Declare")
)


@dataclass(slots=True)
class Decl:
    """One top-level command. `kind` is its main keyword (normalised: Lean `lemma` is
    `theorem`, Coq `Lemma`/`Fact`/... are `Theorem`); `name` is fully qualified or None."""

    kind: str
    name: str | None
    tokens: list[Token]
    head: int  # index of the main keyword; tokens before it are modifiers and prefixes
    body_start: int  # index where the proof/value begins (len(tokens) if there is none)
    index: int = 0

    @property
    def start(self) -> int:
        return self.tokens[0].offset

    @property
    def end(self) -> int:
        return self.tokens[-1].end

    @property
    def signature(self) -> list[Token]:
        return self.tokens[: self.body_start]

    @property
    def body(self) -> list[Token]:
        return self.tokens[self.body_start :]

    @property
    def line(self) -> int:
        return self.tokens[self.head].line


def split_decls(text: str, language: Language, tokens: list[Token] | None = None) -> list[Decl]:
    """The top-level commands of `text`, in order (comments are not part of any)."""
    if tokens is None:
        tokens = tokenize(text, language)
    decls = _split_lean(tokens) if language == Language.lean else _split_coq(tokens)
    for i, d in enumerate(decls):
        d.index = i
    return decls


# --- Lean ---------------------------------------------------------------------------------
def _lean_starts(
    tok: Token, prev: Token | None, depth: int, line_start: bool = False, in_follows: bool = False
) -> bool:
    """Whether `tok` opens a new command. `line_start`: it is the first token of its line;
    `in_follows`: an `in` stands later on that line (a tactic-scoped `open ... in`)."""
    text = tok.text
    if prev is not None and prev.text in ("deriving", "class"):
        return False
    if text == "@[":
        return depth == 0 or tok.column == 0
    if tok.kind != "ident":
        return False
    if text == "deriving":
        return tok.column == 0
    if text.startswith("#"):  # Lean reads a `#command` that opens a line as a command
        return tok.column == 0 or (depth == 0 and line_start)
    if text in _LEAN_UNAMBIGUOUS:
        return depth == 0 or tok.column == 0
    if text not in _LEAN_COLUMN0:
        return False
    if tok.column == 0:
        return True
    # Lean needs no column 0: an indented `attribute [instance] f` after a proof is a command.
    return depth == 0 and line_start and (text not in _LEAN_ALSO_TACTIC or not in_follows)


def _split_lean(tokens: list[Token]) -> list[Decl]:
    groups: list[tuple[list[Token], int]] = []  # (tokens, head index)
    cur: list[Token] = []
    head = 0
    prefix_only = False  # only modifiers / attributes so far
    in_prefix = False  # an `open X in` style prefix just ended
    depth = 0
    prev: Token | None = None
    in_lines = {t.line for t in tokens if t.text == "in"}
    for tok in tokens:
        line_start = prev is None or prev.line != tok.line
        if cur and _lean_starts(tok, prev, depth, line_start, tok.line in in_lines):
            if prefix_only or in_prefix:
                head = len(cur)
            else:
                groups.append((cur, head))
                cur, head = [], 0
            depth = 0
            prefix_only = tok.text in LEAN_MODIFIERS or tok.text == "@["
            in_prefix = False
        elif not cur:
            prefix_only = tok.text in LEAN_MODIFIERS or tok.text == "@["
        elif prefix_only and depth == 0 and tok.text not in LEAN_MODIFIERS and tok.text != "@[":
            prefix_only = False
        cur.append(tok)
        text = tok.text
        if text in OPEN_BRACKETS or text in ("@[", "%["):
            depth += 1
        elif text in CLOSE_BRACKETS:
            depth = max(0, depth - 1)
        elif text == "in" and depth == 0 and cur[head].text in _LEAN_IN_PREFIX:
            in_prefix = True
        prev = tok
    if cur:
        groups.append((cur, head))
    return _name_lean(groups)


def _name_lean(groups: list[tuple[list[Token], int]]) -> list[Decl]:
    scopes: list[str | None] = []  # namespace names (None for a section)
    decls: list[Decl] = []
    for toks, head in groups:
        kw = toks[head].text
        nxt = toks[head + 1] if head + 1 < len(toks) else None
        name: str | None = None
        if kw == "namespace" and nxt is not None:
            scopes.append(nxt.text)
        elif kw == "section":
            scopes.append(None)
        elif kw == "end":
            if scopes:
                scopes.pop()
        elif kw in LEAN_NAMED and nxt is not None:
            j = head + 1
            if kw == "class" and toks[j].text in ("inductive", "abbrev"):
                j += 1
            if j < len(toks) and toks[j].kind == "ident" and toks[j].text not in ("extends",):
                name = _qualify(toks[j].text, scopes)
        kind = _LEAN_SYNONYMS.get(kw, kw)
        decls.append(Decl(kind, name, toks, head, _lean_body_start(toks, head)))
    return decls


def _qualify(name: str, scopes: list[str | None]) -> str:
    if name.startswith("_root_."):
        return name[len("_root_.") :]
    prefix = ".".join(s for s in scopes if s)
    return f"{prefix}.{name}" if prefix else name


def _lean_body_start(toks: list[Token], head: int) -> int:
    """Index of the `:=`, `where` or first line-leading `|` that ends the signature."""
    if toks[head].text not in LEAN_NAMED and toks[head].text != "example":
        return len(toks)
    depth = 0
    pending_let = 0
    matches = 0  # a `match` in the statement: its line-leading arms are still the statement
    for j in range(head + 1, len(toks)):
        text = toks[j].text
        if text in OPEN_BRACKETS:
            depth += 1
        elif text in CLOSE_BRACKETS:
            depth = max(0, depth - 1)
        elif depth:
            continue
        elif text in _LEAN_LET_WORDS:
            pending_let += 1
        elif text == "match":
            matches += 1
        elif text == ":=":
            if not pending_let:
                return j
            pending_let -= 1
        elif text == "where" or (text == "|" and not matches and _match_arm(toks, j)):
            return j
    return len(toks)


# Words of a statement whose own `:=` does not end it (`letI inst := ...; P`).
_LEAN_LET_WORDS = words("let have letI haveI let_fun")


def _match_arm(toks: list[Token], j: int) -> bool:
    """A `|` that opens a line and has its `=>` on that line: a pattern-matching arm, not
    an absolute value such as `|x - y| ≤ 1` that happens to start a line."""
    line = toks[j].line
    if toks[j - 1].line == line:
        return False
    return any(t.text == "=>" for t in toks[j + 1 :] if t.line == line)


def _top_assign(sentence: list[Token], opener: str) -> int | None:
    """Index of the first `:=` at bracket depth 0 not taken by an earlier `opener` (each
    `opener` keyword consumes the next `:=` of its own)."""
    depth = 0
    pending = 0
    for i, tok in enumerate(sentence):
        text = tok.text
        if text in OPEN_BRACKETS:
            depth += 1
        elif text in CLOSE_BRACKETS:
            depth = max(0, depth - 1)
        elif depth:
            continue
        elif text == opener:
            pending += 1
        elif text == ":=":
            if not pending:
                return i
            pending -= 1
    return None


def coq_body_start(sentence: list[Token]) -> int | None:
    """Index of the `:=` that starts a Coq definition's body (not one of a `let ... :=`)."""
    return _top_assign(sentence, "let")


def module_body_start(sentence: list[Token]) -> int | None:
    """Index of the `:=` of `Module M := F X` (a module defined, which opens no scope), not
    one of a signature's `with Module E := X` / `with Definition t := u` (stdlib's
    FSetPositive.v: `Module PositiveSet <: S with Module E:=PositiveOrderedTypeBits.` opens
    the module `PositiveSet`)."""
    return _top_assign(sentence, "with")


# --- Coq ----------------------------------------------------------------------------------
def sentences(tokens: list[Token]) -> list[list[Token]]:
    """Coq sentences: token runs each ended by an `end` token (the last may be unended)."""
    out: list[list[Token]] = []
    cur: list[Token] = []
    for tok in tokens:
        cur.append(tok)
        if tok.kind == "end":
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def coq_head(sentence: list[Token]) -> int:
    """Index of the keyword of a sentence, past bullets, braces and attributes."""
    i = 0
    n = len(sentence)
    while i < n:
        text = sentence[i].text
        if text in _COQ_BULLETS or text in _COQ_PREFIXES:
            i += 1
        elif text == "[" and i > 0 and sentence[i - 1].text == "#":
            while i < n and sentence[i].text != "]":
                i += 1
            i += 1
        else:
            break
    return min(i, n - 1)


def _split_coq(tokens: list[Token]) -> list[Decl]:
    decls: list[Decl] = []
    scopes: list[tuple[str, str]] = []  # ("Module" | "Section", name)
    proof: Decl | None = None  # the declaration whose proof is still open
    for sent in sentences(tokens):
        h = coq_head(sent)
        kw = sent[h].text
        if proof is not None:
            if kw not in _COQ_TOP_LEVEL:
                proof.tokens.extend(sent)
                if kw in COQ_CLOSERS:
                    proof = None
                continue
            proof = None
        body_at = module_body_start(sent) if kw == "Module" else coq_body_start(sent)
        has_body = body_at is not None
        name = None
        if (kw in COQ_THEOREMS or kw in COQ_DEFINITIONS) and h + 1 < len(sent):
            nxt = sent[h + 1]
            if nxt.kind == "ident" and kw != "Goal":
                name = ".".join([s for k, s in scopes if k == "Module"] + [nxt.text])
        if kw in ("Module", "Section") and not has_body and h + 1 < len(sent):
            # `Module Import M`, `Module Export M`, `Module Type T`: the name is the next word
            at = h + 2 if kw == "Module" and sent[h + 1].text in _MODULE_WORDS else h + 1
            scopes.append((kw, sent[min(at, len(sent) - 1)].text))
        elif kw == "End" and scopes:
            scopes.pop()
        body_start = len(sent) - 1 if sent[-1].kind == "end" else len(sent)
        if body_at is not None:
            body_start = body_at
        kind = "Theorem" if kw in COQ_THEOREMS and kw != "Goal" else kw
        decl = Decl(kind, name, list(sent), h, body_start)
        decls.append(decl)
        # `Program Instance i : C.` (no body) opens no proof: its fields become obligations,
        # and what follows (`Local Open Scope ...`) is a command of its own
        programmed = any(t.text == "Program" for t in sent[:h])
        opens_proof = kw in COQ_THEOREMS or (
            kw in ("Definition", "Fixpoint", "CoFixpoint", "Instance", "Let")
            and not has_body
            and not programmed
        )
        if opens_proof and sent[-1].kind == "end":
            proof = decl
    return decls
