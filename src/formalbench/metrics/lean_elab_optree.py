"""Lean operator trees from the elaborated statement, as Lean prints it under `pp.all`
(`set_option pp.all true in #check (P : Prop)`): every application is explicit (`@f.{u} a b`),
no notation is left, so an application is one node labelled by its head (universe levels
dropped) with all its arguments as children, `∀`/`fun` are nodes with their binders, `→` is a
node, and numerals are folded (`@OfNat.ofNat.{0} Nat 2 (instOfNatNat 2)` becomes `2`). Bound
names are free-cost: a binder whose type is a proposition (headed by a relation or
connective, or an arrow or `∀` into one) is a hypothesis, any other a variable.

The printed syntax is read from Lean's pretty-printer rules; no Lean toolchain ran where this
was written, so it is tested on hand-written samples of that output only. `comparison.
lean_trees` falls back to the text parser (`lean_optree`) wherever this grammar fails.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lark import Lark, Transformer
from lark.exceptions import LarkError

from formalbench.metrics.lean_optree import LeanParseError
from formalbench.metrics.optree import HYPOTHESIS, VARIABLE, OpTree, mark_bound

GRAMMAR = r"""
?start: term
?term: "∀" binders "," term             -> forall
     | lambda
     | depgroup ARROW term              -> pi
     | arrow
lambda: "fun" binders FUNARROW term     -> fun
?arrow: app ARROW term                  -> arrow
      | app
?app: app atom                          -> apply
    | app lambda                        -> apply
    | atom
?atom: NAME                             -> name
     | "@" NAME                         -> name
     | NUMBER                           -> name
     | STRING                           -> name
     | "(" term ")"
binders: group+
       | bname+                         -> untyped
depgroup: "⟮" bname+ ":" term "⟯"
        | "{" bname+ ":" term "}"
        | "⦃" bname+ ":" term "⦄"
        | "[" bname ":" term "]"
        | "[" term "]"                  -> instance
group: depgroup
     | "{" bname+ "}"                   -> untyped
     | "⦃" bname+ "⦄"                   -> untyped
     | bname+ ":" term
bname: NAME
ARROW: "→" | "->"
FUNARROW: "=>" | "↦"
NUMBER: /\d+(\.\d+)?/
STRING: /"(?:[^"\\]|\\.)*"/
NAME: /[^\W\d](?:[\w'!?✝]|\.(?!\{))*(?:\.\{[^}]*\})?/
    | /«[^»]*»/
%ignore /\s+/
"""

PROP_HEADS = frozenset(
    [
        "Eq",
        "Ne",
        "LT.lt",
        "LE.le",
        "GT.gt",
        "GE.ge",
        "Not",
        "And",
        "Or",
        "Iff",
        "Exists",
        "True",
        "False",
        "Membership.mem",
        "Dvd.dvd",
        "HasSubset.Subset",
        "HasSSubset.SSubset",
        "Nat.Prime",
        "Prime",
        "Irrational",
        "Function.Injective",
        "Function.Surjective",
        "Function.Bijective",
        "Continuous",
        "Differentiable",
        "IsOpen",
        "IsClosed",
        "Filter.Tendsto",
        "Set.InjOn",
        "Set.SurjOn",
        "Set.BijOn",
    ]
)


class _App(OpTree):
    __slots__ = ()


class _Build(Transformer):
    def name(self, items: list) -> OpTree:
        return OpTree(re.sub(r"\.\{[^}]*\}$", "", str(items[0])))

    def apply(self, items: list) -> OpTree:
        fun, arg = items
        if isinstance(fun, _App):
            return _App(fun.label, [*fun.children, arg])
        if not fun.children:
            return _App(fun.label, [arg])
        return _App("@apply", [fun, arg])

    def bname(self, items: list) -> str:
        return str(items[0])

    def depgroup(self, items: list) -> list[tuple[str, OpTree]]:
        *names, typ = items
        return [(n, typ) for n in names]

    def group(self, items: list) -> list[tuple[str, OpTree]]:
        if len(items) == 1 and isinstance(items[0], list):
            return items[0]  # a bracketed group
        *names, typ = items
        return [(n, typ) for n in names]

    def untyped(self, items: list) -> list[tuple[str, OpTree]]:
        return [(n, OpTree("_")) for n in items]

    def instance(self, items: list) -> list[tuple[str, OpTree]]:
        return [("inst✝", items[0])]

    def binders(self, items: list) -> list[tuple[str, OpTree]]:
        return [b for g in items for b in (g if isinstance(g, list) else [(g, OpTree("_"))])]

    def _binder(self, label: str, binders: list, body: OpTree) -> OpTree:
        kids = []
        for name, typ in binders:
            kind = HYPOTHESIS if _is_prop(typ) else VARIABLE
            kids.append(OpTree(" _ : _ ", [OpTree(name, [], kind), typ]))
        return OpTree(label, [*kids, body])

    def forall(self, items: list) -> OpTree:
        return self._binder("∀ _ , _", items[0], items[1])

    def fun(self, items: list) -> OpTree:
        return self._binder("fun _ => _", items[0], items[-1])

    def pi(self, items: list) -> OpTree:
        """`(x : A) → B`, `{x : A} → B`, `[inst : C] → B`: a dependent arrow is a `∀`."""
        return self._binder("∀ _ , _", items[0], items[-1])

    def arrow(self, items: list) -> OpTree:
        return OpTree(" _ → _ ", [items[0], items[-1]])


def _is_prop(typ: OpTree) -> bool:
    """A proposition: headed by a relation or connective, or an arrow/`∀` into one."""
    if typ.label in (" _ → _ ", "∀ _ , _"):
        return _is_prop(typ.children[-1])
    return typ.label in PROP_HEADS


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr")


def _fold(node: OpTree) -> OpTree:
    """`@OfNat.ofNat T n inst` is the numeral n; `@OfScientific.ofScientific T inst m s e`
    the decimal m·10^-e (s true) or m·10^e."""
    kids = node.children
    if node.label == "OfNat.ofNat" and len(kids) == 3 and kids[1].label.isdigit():
        return OpTree(kids[1].label)
    if node.label == "OfScientific.ofScientific" and len(kids) == 5:
        m, sign, e = (k.label for k in kids[2:])
        sign = sign.removeprefix("Bool.")
        if m.isdigit() and e.isdigit() and sign in ("true", "false"):
            if sign == "false":
                return OpTree(str(int(m) * 10 ** int(e)))
            digits = m.rjust(int(e) + 1, "0")
            return OpTree(f"{digits[: len(digits) - int(e)]}.{digits[len(digits) - int(e) :]}")
    node.children = [_fold(c) for c in kids]
    return node


_NAT_LIT = re.compile(r"\bnat_lit\s+(\d+)")
_LEVEL = re.compile(r"\b(Type|Sort)\s+(?:\((?:[^()]|\([^()]*\))*\)|[\w.]+(?:\s*\+\s*\d+)?)")
_BINDER_PAREN = re.compile(r"\(\s*(?:[^\W\d][\w'!?✝]*\s+)*[^\W\d][\w'!?✝]*\s*:(?!=)")


_TERM_END = re.compile(r"(?:(?P<word>[^\W\d][\w'!?✝.]*)|\d|[)}\]⟩⦄⟯»]|\.\{[^{}]*\})\s*$")
_LEAD_WORDS = frozenset(
    [
        "fun",
        "let",
        "have",
        "show",
        "from",
        "by",
        "do",
        "if",
        "then",
        "else",
        "match",
        "with",
        "at",
        "return",
    ]
)


def _drop_levels(text: str) -> str:
    """`Type u`/`Sort (max 1 u)` lose their level where they start a term. In argument position
    (`@id.{2} Type (@Classical.choice.{2} Type inst)`, `@Eq.{2} Type Nat Int`) Lean reads no
    level after `Type`/`Sort`: what follows is the next argument and is kept."""
    pos = 0
    while m := _LEVEL.search(text, pos):
        before = _TERM_END.search(text, max(0, m.start() - 400), m.start())
        if before is not None and before.group("word") not in _LEAD_WORDS:
            pos = m.end(1)  # an argument; its neighbour is a term
            continue
        text = text[: m.end(1)] + text[m.end() :]
        pos = m.end(1)
    return text


def _prepare(printed: str) -> str:
    """Lean's printed term made LR-friendly: raw literals `nat_lit 2` are numerals, universe
    levels after a leading `Type`/`Sort` are dropped (as `.{u}` after names is), and a binder group
    `(x y : A)` gets its own brackets `⟮x y : A⟯` (a parenthesised term never starts with
    names and a `:` in `pp.all` output, which prints no type ascriptions)."""
    text = _drop_levels(_NAT_LIT.sub(r"\1", printed))
    if "⋯" in text:
        raise LeanParseError("the printed term was cut short (⋯)")
    chars = list(text)
    for m in _BINDER_PAREN.finditer(text):
        depth = 0
        for k in range(m.start(), len(chars)):
            if chars[k] == "(":
                depth += 1
            elif chars[k] == ")":
                depth -= 1
                if depth == 0:
                    chars[m.start()], chars[k] = "⟮", "⟯"
                    break
    return "".join(chars)


def lean_elab_term(printed: str) -> OpTree:
    """The operator tree of any term Lean printed under `pp.all` (dependent arrows, `fun`
    with `=>` or `↦`, `nat_lit` numerals, `Bool.true` in scientific literals). Text outside
    the grammar raises `LeanParseError` naming what could not be read."""
    parser = _parser()
    try:
        tree = _Build().transform(parser.parse(_prepare(printed.strip())))
    except LarkError as exc:
        raise LeanParseError(str(exc).strip().splitlines()[0][:200]) from None
    return mark_bound(_fold(tree), ("∀ _ , _", "fun _ => _"))


def lean_elab_tree(printed: str) -> OpTree:
    """The operator tree of a proposition printed by `#check` under `pp.all` (a trailing
    `: Prop` is dropped)."""
    text = re.sub(r"\s*:\s*Prop\s*$", "", printed.strip())
    return OpTree("theorem", [lean_elab_term(text)])
