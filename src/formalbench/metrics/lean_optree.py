"""Lean 4 statement text -> operator tree, with a `lark` grammar (no elaboration).

GTED's authors build trees from Lean's elaborated hover output; without a Lean toolchain
this module parses the statement text itself ("GTED-approx"): binders (explicit, implicit,
instance, strict), quantifiers with typed binder groups (`∀ x y : T, …`, `∃ x ∈ s, …`),
`fun`, big operators, set-builder and the usual brackets, infix operators at Lean's
precedences (↔ 20, → 25, ∨ 30, ∧ 35, ¬ 40, relations 50, + - 65, * / % 70, ^ 75 right),
application, numerals folded (`(2 : ℝ)` is the leaf `2`). Labels follow the authors' hover
style (`" _ + _ "`, `"f _ "`, `"∀ _ , _ "`) so that trees of both kinds are comparable.
Names bound by the statement are flagged free-cost: hypotheses (binders whose type reads as a
proposition) and variables (all other bound names). Anything the grammar does not cover raises
`LeanParseError`, which callers count and report.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import LarkError
from lark.tree import Meta

from formalbench.metrics.optree import HYPOTHESIS, VARIABLE, OpTree


class LeanParseError(ValueError):
    """The statement text is outside what the grammar covers."""


GRAMMAR = r"""
start: DECL NAME? binder* ":" expr

DECL: "theorem" | "lemma" | "example"

binder: "(" NAME+ ":" expr ")"          -> explicit
      | "{" NAME+ ":" expr "}"          -> implicit
      | "{" NAME+ "}"                   -> implicit_untyped
      | "⦃" NAME+ ":" expr "⦄"          -> strict
      | "[" NAME ":" expr "]"           -> inst_named
      | "[" expr "]"                    -> inst
      | "(" NAME+ ")"                   -> explicit_untyped

?expr: lead | e20

// binder-led forms take everything to their right; they may end any operator chain
lead: quantop qbinders "," expr                  -> quant
    | funkw fbinders ("=>" | "↦") expr           -> fun
    | "if" expr "then" expr "else" expr        -> ite

!quantop: "∀ᶠ" | "∃ᶠ" | "∀" | "∃!" | "∃" | "Π" | "Σ"
!funkw: "fun" | "λ"
!bigopname: "∑" | "∏" | "⋃" | "⋂" | "∫" | "⨆" | "⨅"

qbinders: NAME+                                      -> qnames
        | NAME+ ":" expr                               -> qtyped
        | NAME+ binpred e50                            -> qpred
        | NAME+ "in" e50                               -> qin
        | qgroup+                                      -> qgroups
?qgroup: "_"                                          -> qhole
       | "(" NAME+ ":" expr ")"                       -> qtyped
       | "(" NAME+ ")"                                -> qnames
       | "(" "_" ":" expr ")"                         -> qanonhyp
       | "{" NAME+ ":" expr "}"                       -> qtyped
       | "⦃" NAME+ ":" expr "⦄"                       -> qtyped
       | "[" expr "]"                                 -> qinst
fbinders: fgroup+                                     -> qgroups
?fgroup: NAME                                         -> qnames
       | "_"                                          -> qhole
       | "(" NAME+ ":" expr ")"                       -> qtyped
       | "⟨" NAME ("," NAME)* "⟩"                    -> qanon
!binpred: "∈" | "∉" | "⊆" | "⊂" | ">" | "<" | "≥" | "≤" | "≠"

?r20: e20 | lead
?e20: e25 ("↔" | "<->") r25            -> iff
    | e25
?r25: e25 | lead
?e25: e30 arrowop r25                  -> arrow
    | e30
!arrowop: "→" | "->" | "≃+*" | "≃*" | "≃+" | "≃ₗ" | "≃" | "→+*" | "→*" | "→+" | "→ₗ" | "↪" | "⟶"
?r30: e30 | lead
?e30: e35 "∨" r30                      -> or
    | e35
?r35: e35 | lead
?e35: e40 "∧" r35                      -> and
    | e40 "×" r35                      -> prod
    | e40
?e40: "¬" r40                          -> not
    | e50
?r40: e40 | lead
?e50: e65 relop r65                    -> rel
    | e65 "≡" e65 modkw e65 "]"        -> modeq
    | e65
!relop: "=" | "≠" | "!=" | ">=" | "<=" | "<" | ">" | "≤" | "≥" | "∈" | "∉" | "⊆" | "⊂" | "⊊" | "⊇" | "∣" | "≅" | "≈" | "⟂" | "≃"
!modkw: "[MOD" | "[ZMOD" | "[PMOD"
?r65: e65 | lead
?e65: e65 addop r70                    -> binop
    | e70
!addop: "⊔" | "+" | "-" | "∪" | "++" | "∆"
?r70: e70 | lead
?e70: m70 | bigop
?m70: m70 mulop r73                    -> binop
    | e73
// a big operator's body is read at level 67 (Mathlib): `∑ i, f i = 5` is `(∑ i, f i) = 5`
bigop: bigopname qbinders "," e70
!mulop: "⊓" | "*" | "/" | "%" | "∩" | "\\" | "⬝" | "×ˢ" | "⧸" | "⊗"
?r73: e73 | lead | bigop
?e73: e75 smulop r73                   -> binop
    | e75
!smulop: "•" | "∘"
?r75: e75 | lead
?e75: e90 "^" r75                      -> pow
    | "-" r75                          -> neg
    | e90
?e90: app
?app: app arg                          -> apply
    | prefix
?prefix: "↑" prefix                    -> coe
       | "√" prefix                    -> sqrt
       | "↥" prefix                    -> coe
       | "@" arg                       -> explicit_at
       | arg
?arg: postfix
?postfix: postfix "!"                  -> factorial
        | postfix "⁻¹"                 -> inv
        | postfix "⁻¹'" arg            -> preimage
        | postfix "''" arg             -> image
        | postfix "ᶜ"                  -> compl
        | postfix "ˣ"                  -> units
        | postfix "ᵀ"                  -> transpose
        | postfix PROJ                 -> proj
        | atom
PROJ: /\.[A-Za-z0-9_']+/
?atom: NAME                                        -> name
     | NUMBER                                      -> number
     | "(" expr ")"
     | "(" expr ":" expr ")"                       -> ascribe
     | "(" expr ("," expr)+ ")"                    -> tuple_
     | "⟨" [expr ("," expr)*] "⟩"                   -> anon
     | "{" NAME "|" expr "}"                       -> setof
     | "{" NAME ":" expr "|" expr "}"              -> setof_typed
     | "{" NAME binpred e65 "|" expr "}"           -> setof_pred
     | "{" expr ("," expr)* "}"                    -> setlit
     | "{" "}"                                     -> emptyset
     | "⟬" expr "⟭"                                -> abs
     | "⸨" expr "⸩"                                -> norm
     | "⌊" expr "⌋" ["₊"]                          -> floor
     | "⌈" expr "⌉" ["₊"]                          -> ceil
     | "![" [expr ("," expr)*] "]"                 -> vec
     | "[" [expr ("," expr)*] "]"                  -> list_
     | "(" SECTION ")"                              -> section
     | "·"                                          -> dot
     | "_"                                          -> hole
     | STRING                                       -> name
     | "Type" "*"                                   -> sort
     | "Sort" "*"                                   -> sort
     | "Type" NAME                                  -> sort
     | "Type"                                       -> sort
     | "Prop"                                       -> sort
SECTION: /·\s*[^\s()·]+\s*·/

NAME: /(?!(fun|if|then|else|in|theorem|lemma|example|Type|Sort|Prop)(?![A-Za-z0-9_'!?.₀-₉]))[A-Za-z_α-κμ-ωΑ-Ωϕℝℕℤℚℂ𝕜𝔽ℓπ∞⊤⊥∅\U0001D4D0-\U0001D503][A-Za-z0-9_'!?₀-₉ₐ-ₜᵢ-ᵪ⁰-⁹ℝℕℤℚℂ]*(\.[A-Za-z_α-κμ-ωΑ-Ω][A-Za-z0-9_'!?₀-₉ₐ-ₜᵢ-ᵪℝℕℤℚℂ]*)*(\+)?/
NUMBER: /\d+(\.\d+)?(e\d+)?/
STRING: /"[^"]*"/

%ignore /\s+/
"""

# operators whose result is a proposition: a binder with such a type is a hypothesis
_PROP_LABELS = {
    " _ ↔ _ ",
    " _ ∨ _ ",
    " _ ∧ _ ",
    "¬",
    "∀ _ , _ ",
    "∃ _ , _ ",
    "∃! _ , _ ",
    " _ ≡ _ [MOD _ ]",
    " _ ≡ _ [ZMOD _ ]",
    " _ ≡ _ [PMOD _ ]",
    "True",
    "False",
}
_PROP_RELS = {"=", "≠", "<", ">", "≤", "≥", "∈", "∉", "⊆", "⊂", "⊊", "⊇", "∣", "≅", "≈", "⟂"}
_PREDICATE_PREFIXES = ("Is", "Nat.Prime", "Prime", "Even", "Odd", "Irrational", "Squarefree")
_PREDICATES = {
    "Continuous",
    "ContinuousOn",
    "Differentiable",
    "DifferentiableOn",
    "DifferentiableAt",
    "Tendsto",
    "Filter.Tendsto",
    "Function.Injective",
    "Function.Surjective",
    "Function.Bijective",
    "Injective",
    "Surjective",
    "Bijective",
    "Monotone",
    "StrictMono",
    "Antitone",
    "StrictAnti",
    "Summable",
    "HasDerivAt",
    "Irreducible",
    "Nat.Coprime",
    "Coprime",
    "IsUnit",
    "Disjoint",
    "Set.Finite",
    "Set.Infinite",
    "Finite",
    "Infinite",
    "Nonempty",
    "Set.Nonempty",
    "Countable",
    "Dense",
    "Measurable",
    "Integrable",
    "IntervalIntegrable",
    "UniformContinuous",
    "CauchySeq",
    "Subgroup.Normal",
    "IsCompact",
    "IsOpen",
    "IsClosed",
    "IsConnected",
}


def _is_prop(tree: OpTree) -> bool:
    """Does a binder's type read as a proposition (so the binder is a hypothesis)?"""
    label = tree.label
    if label in _PROP_LABELS:
        return True
    if label.startswith(" _ ") and label.endswith(" _ "):
        op = label.strip().strip("_").strip()
        if op in _PROP_RELS:
            return True
        if op in {"→"} and tree.children:
            return _is_prop(tree.children[-1])
    head = label.split(" ", 1)[0]
    return head in _PREDICATES or head.startswith(_PREDICATE_PREFIXES)


def _infix(op: str, left: OpTree, right: OpTree) -> OpTree:
    return OpTree(f" _ {op} _ ", [left, right])


class _Build(Transformer[Token, OpTree]):
    """Parse tree -> OpTree; binders come back as (names, type-or-None, kind) triples."""

    def __init__(self) -> None:
        super().__init__()

    # leaves
    def name(self, items: list[Token]) -> OpTree:
        return OpTree(str(items[0]))

    def number(self, items: list[Token]) -> OpTree:
        return OpTree(str(items[0]))

    def dot(self, _: list) -> OpTree:
        return OpTree("·")

    def hole(self, _: list) -> OpTree:
        return OpTree("_")

    def sort(self, items: list) -> OpTree:
        return OpTree("Type")

    def section(self, items: list[Token]) -> OpTree:
        return OpTree(re.sub(r"\s+", " ", str(items[0])))

    # operators
    def iff(self, items: list) -> OpTree:
        return _infix("↔", *items)

    def arrow(self, items: list) -> OpTree:
        return _infix(str(items[1]), items[0], items[2])

    def or_(self, items: list) -> OpTree:
        return _infix("∨", *items)

    def and_(self, items: list) -> OpTree:
        return _infix("∧", *items)

    def prod(self, items: list) -> OpTree:
        return _infix("×", *items)

    def rel(self, items: list) -> OpTree:
        return _infix(str(items[1]), items[0], items[2])

    def binop(self, items: list) -> OpTree:
        return _infix(str(items[1]), items[0], items[2])

    def pow(self, items: list) -> OpTree:
        return _infix("^", *items)

    def modeq(self, items: list) -> OpTree:
        a, b, kw, n = items
        return OpTree(f" _ ≡ _ {kw} _ ]", [a, b, n])

    def _prefix(self, op: str, items: list) -> OpTree:
        return OpTree(op, [items[-1]])

    def not_(self, items: list) -> OpTree:
        return self._prefix("¬", items)

    def neg(self, items: list) -> OpTree:
        return self._prefix("-", items)

    def coe(self, items: list) -> OpTree:
        return self._prefix("↑", items)

    def sqrt(self, items: list) -> OpTree:
        return self._prefix("√", items)

    def explicit_at(self, items: list) -> OpTree:
        return items[0]

    def factorial(self, items: list) -> OpTree:
        return OpTree(" _ !", [items[0]])

    def inv(self, items: list) -> OpTree:
        return OpTree(" _ ⁻¹", [items[0]])

    def compl(self, items: list) -> OpTree:
        return OpTree(" _ ᶜ", [items[0]])

    def units(self, items: list) -> OpTree:
        return OpTree(" _ ˣ", [items[0]])

    def transpose(self, items: list) -> OpTree:
        return OpTree(" _ ᵀ", [items[0]])

    def preimage(self, items: list) -> OpTree:
        return OpTree(" _ ⁻¹' _ ", [items[0], items[1]])

    def image(self, items: list) -> OpTree:
        return OpTree(" _ '' _ ", [items[0], items[1]])

    def proj(self, items: list) -> OpTree:
        return OpTree(f"_{items[1]}", [items[0]])

    def apply(self, items: list) -> OpTree:
        fun, arg = items
        # `f a b` is one node "f _  _ " with the arguments as children, as hover prints it
        if isinstance(fun, _App) and fun.label.endswith(" _ "):
            return _App(fun.label + " _ ", [*fun.children, arg])
        if not fun.children:
            return _App(f"{fun.label} _ ", [arg])
        return _App(" _  _ ", [fun, arg])

    # brackets
    def ascribe(self, items: list) -> OpTree:
        value, typ = items
        if not value.children and re.fullmatch(r"\d+(\.\d+)?", value.label):
            return value  # numerals folded: (2 : ℝ) is the leaf 2
        return OpTree("↑", [value])  # hover shows a type ascription as its coercion

    def tuple_(self, items: list) -> OpTree:
        return OpTree("(" + ", ".join("_" for _ in items) + ")", list(items))

    def anon(self, items: list) -> OpTree:
        kids = [i for i in items if i is not None]
        return OpTree("⟨" + ", ".join("_" for _ in kids) + "⟩", kids)

    def setof(self, items: list) -> OpTree:
        return OpTree("{ _ | _ }", [_bound(items[0]), items[1]])

    def setof_typed(self, items: list) -> OpTree:
        return OpTree("{ _ : _ | _ }", [_bound(items[0]), items[1], items[2]])

    def setof_pred(self, items: list) -> OpTree:
        return OpTree(f"{{ _ {items[1]} _ | _ }}", [_bound(items[0]), items[2], items[3]])

    def setlit(self, items: list) -> OpTree:
        return OpTree("{" + ", ".join("_" for _ in items) + "}", list(items))

    def emptyset(self, _: list) -> OpTree:
        return OpTree("{}")

    def abs(self, items: list) -> OpTree:
        return OpTree("||", [items[0]])

    def norm(self, items: list) -> OpTree:
        return OpTree("‖‖", [items[0]])

    def floor(self, items: list) -> OpTree:
        return OpTree("⌊⌋", [items[0]])

    def ceil(self, items: list) -> OpTree:
        return OpTree("⌈⌉", [items[0]])

    def vec(self, items: list) -> OpTree:
        kids = [i for i in items if i is not None]
        return OpTree("![" + ", ".join("_" for _ in kids) + "]", kids)

    def list_(self, items: list) -> OpTree:
        kids = [i for i in items if i is not None]
        return OpTree("[" + ", ".join("_" for _ in kids) + "]", kids)

    # binder-led forms
    def qnames(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [(str(n), None, "") for n in items]

    qanon = qnames

    def qhole(self, _: list) -> list[tuple[str, OpTree | None, str]]:
        return [("_", None, "")]

    def qtyped(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        *names, typ = items
        return [(str(n), typ, ":") for n in names]

    def qinst(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [("", items[0], "inst")]

    def qpred(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        *names, op, bound = items
        return [(str(n), bound, str(op)) for n in names]

    def qin(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        *names, bound = items
        return [(str(n), bound, "∈") for n in names]

    def qanonhyp(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [("_", items[0], ":")]

    def qgroups(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [b for group in items for b in group]

    def quant(self, items: list) -> OpTree:
        q, binders, body = items
        return _binder_node(f"{q} _ , _ ", binders, body)

    def fun(self, items: list) -> OpTree:
        _, binders, body = items
        return _binder_node("fun _ => _ ", binders, body)

    def bigop(self, items: list) -> OpTree:
        op, binders, body = items
        # `∑ i in s, f i` is "∑ _  _ , _ " [i, s, f i] as hover prints it; `∑ i, f i` is "∑ _ , _ "
        kids: list[OpTree] = []
        for name, typ, how in binders:
            kids.append(_bound(name))
            if typ is not None and how != ":":
                kids.append(typ)
        label = f"{op}" + " _ " * len(kids) + ", _ "
        return OpTree(label, [*kids, body])

    def ite(self, items: list) -> OpTree:
        return OpTree("if _ then _ else _ ", list(items))

    # statement
    def explicit(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        *names, typ = items
        return [(str(n), typ, "( _ : _ )") for n in names]

    def implicit(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        *names, typ = items
        return [(str(n), typ, "{ _ : _ }") for n in names]

    def strict(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        *names, typ = items
        return [(str(n), typ, "⦃ _ : _ ⦄") for n in names]

    def implicit_untyped(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [(str(n), None, "{ _ }") for n in items]

    def explicit_untyped(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [(str(n), None, "( _ )") for n in items]

    def inst_named(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [(str(items[0]), items[1], "[ _ : _ ]")]

    def inst(self, items: list) -> list[tuple[str, OpTree | None, str]]:
        return [("", items[0], "[ _ ]")]

    def _op(self, items: list) -> str:
        return str(items[0])

    arrowop = relop = addop = mulop = smulop = binpred = quantop = funkw = _op
    bigopname = modkw = _op

    def binder(self, items: list) -> list:
        return items[0]

    def start(self, items: list) -> OpTree:
        body = items[-1]
        binders = [b for group in items[1:-1] if isinstance(group, list) for b in group]
        nodes = []
        for name, typ, how in binders:
            if how == "[ _ ]":
                nodes.append(OpTree("[ _ ]", [typ]))
                continue
            label = " _ : _ " if how == "( _ : _ )" else how
            kids = [_bound(name)] + ([typ] if typ is not None else [])
            nodes.append(OpTree(label, kids))
        return OpTree("theorem", [OpTree(" _ " * len(nodes) + ": _ ", [*nodes, body])])


class _App(OpTree):
    """An application node, which a further argument extends instead of nesting."""

    __slots__ = ()


def _bound(name: str) -> OpTree:
    return OpTree(name)


def _binder_node(label: str, binders: list, body: OpTree) -> OpTree:
    kids = []
    for name, typ, how in binders:
        if typ is None:
            kids.append(_bound(name))
        elif how == "inst":
            kids.append(OpTree("[ _ ]", [typ]))
        else:
            kids.append(OpTree(f" _ {how} _ ", [_bound(name), typ]))
    return OpTree(label, [*kids, body])


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr")


_COMMENT = re.compile(r"/-.*?-/|--[^\n]*", re.S)


def statement_text(text: str) -> str:
    """The declaration head of a statement: comments, attributes and the proof removed."""
    text = _COMMENT.sub(" ", text)
    text = re.sub(r"^\s*@\[[^\]]*\]\s*", "", text)
    text = re.sub(r"\b(private|protected|noncomputable)\s+", "", text)
    start = re.search(r"\b(theorem|lemma|example)\b", text)
    if start is None:
        raise LeanParseError("no theorem, lemma or example in the text")
    text = text[start.start() :]
    cut = text.find(":=")
    if cut >= 0:
        text = text[:cut]
    return text.strip()


_OPENERS = set("([{⟨⟬⸨⌊⌈,:=<>≤≥≠+-*/%^∧∨¬→↔∣∈∉∪∩•")


def _mark_bars(text: str) -> str:
    """`|x|` (absolute value) uses one character to open and close, which an LR parser cannot
    tell apart from a set-builder bar: rewrite abs bars to the pair ⟬ ⟭ first. A bar closes
    an open abs unless it follows an operator; inside `{ x | … }` right after the bound
    part it is the set-builder bar."""
    out: list[str] = []
    stack: list[str] = []
    prev = ""
    for ch in text:
        if ch == "‖":  # the norm's bars, the same way
            if stack and stack[-1] == "⸨" and prev not in _OPENERS:
                stack.pop()
                out.append("⸩")
            else:
                stack.append("⸨")
                out.append("⸨")
        elif ch == "|":
            if stack and stack[-1] == "⟬" and prev not in _OPENERS:
                stack.pop()
                out.append("⟭")
            elif stack and stack[-1] == "{" and prev not in _OPENERS:
                out.append("|")
            else:
                stack.append("⟬")
                out.append("⟬")
        else:
            if ch in "([{⟨":
                stack.append(ch)
            elif ch in ")]}⟩" and stack and stack[-1] not in "⟬⸨":
                stack.pop()
            out.append(ch)
        if not ch.isspace():
            prev = out[-1]
    return "".join(out)


def lean_tree(text: str) -> OpTree:
    """The operator tree of a Lean statement (`theorem name binders : type := proof`)."""
    head = _mark_bars(statement_text(text))
    try:
        parsed: Tree = _parser().parse(head)
    except LarkError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LeanParseError(first[:200]) from None
    try:
        renamed = _Rename().transform(parsed)
        tree: object = _Build().transform(renamed)
    except LarkError as exc:
        raise LeanParseError(f"cannot build the tree: {exc}"[:200]) from None
    if not isinstance(tree, OpTree):
        raise LeanParseError(f"no tree for {tree!r}"[:200])
    _mark_free(tree)
    return tree


class _Rename(Transformer[Token, Tree[Token]]):
    """lark rule names `or`/`and`/`not` clash with Python keywords on the transformer."""

    def __default__(self, data: str, children: list[Any], meta: Meta) -> Tree[Token]:
        if data in ("or", "and", "not"):
            data = data + "_"
        return Tree(data, children, meta)


_BIGOPS = ("∑", "∏", "⋃", "⋂", "∫", "⨆", "⨅")


def _mark_free(tree: OpTree) -> None:
    """Flag every bound name and every leaf that names one (the authors' rule)."""
    kinds: dict[str, str] = {}
    body = tree.children[0] if tree.children else tree
    for binder in body.children[:-1]:  # statement binders: " _ : _ " [name, type]
        if len(binder.children) == 2 and not binder.children[0].children:
            name, typ = binder.children
            if name.label and name.label != "_":
                kinds[name.label] = HYPOTHESIS if _is_prop(typ) else VARIABLE
        elif len(binder.children) == 1 and binder.label != "[ _ ]":
            kinds.setdefault(binder.children[0].label, VARIABLE)
    for node in tree.nodes():  # names bound inside: ∀ ∃ fun ∑ { | }
        if node.label.endswith(", _ ") or node.label.startswith(("fun ", "{ _ ")):
            binders = node.children[:-1]
            if node.label.startswith(("{ _ ", *_BIGOPS)):
                binders = binders[:1]  # `{x : T | p}`, `∑ i in s, f`: only the name is bound
            for child in binders:
                if not child.children and child.label not in ("_", "·"):
                    kinds.setdefault(child.label, VARIABLE)
                elif child.label.startswith(" _ ") and child.children:
                    first = child.children[0]
                    if not first.children:
                        kinds.setdefault(first.label, VARIABLE)
    for node in tree.nodes():
        if not node.children and node.label in kinds:
            node.free = kinds[node.label]
