"""Coq operator trees from a term as Coq prints it under `Set Printing All` (fully applied,
no notations): an application is one node labelled by its head with the arguments as
children, `forall` and `fun` are nodes with their binders, numerals are folded (`S (S O)`,
`Zpos (xO xH)`, `IZR (Zpos xH)` become `2`, `2`, `1`), and bound names (variables, the
anonymous `_` of a hypothesis) are free-cost. Parsing the printed text is pure; running coqc
to print it lives in `comparison.beq_coq` (the run that checks BEq prints the terms too).
"""

from __future__ import annotations

import re
from functools import lru_cache

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

from formalbench.metrics.optree import HYPOTHESIS, VARIABLE, OpTree, mark_bound

GRAMMAR = r"""
?start: term
?term: "forall" binders "," term        -> forall
     | "fun" binders "=>" term          -> fun
     | app
?app: app atom                          -> apply
    | atom
?atom: NAME                             -> name
     | NUMBER                           -> name
     | "@" NAME                         -> name
     | "(" term ")"
     | "_"                              -> hole
binders: group+
group: "(" bname+ ":" term ")"
     | bname+ ":" term
!bname: NAME | "_"
NAME: /(?!(forall|fun)\b)[A-Za-z_][A-Za-z0-9_'.]*(@\{[^}]*\})?/
NUMBER: /[0-9]+/
%ignore /\s+/
"""


class CoqParseError(ValueError):
    """The printed term uses syntax the grammar does not cover (match, let, ...)."""


class _Build(Transformer[Token, OpTree]):
    def name(self, items: list) -> OpTree:
        return OpTree(str(items[0]).split("@{")[0])

    def hole(self, _: list) -> OpTree:
        return OpTree("_")

    def apply(self, items: list) -> OpTree:
        fun, arg = items
        if isinstance(fun, _App):
            return _App(fun.label, [*fun.children, arg])
        if not fun.children:
            return _App(fun.label, [arg])
        return _App("@apply", [fun, arg])

    def bname(self, items: list) -> str:
        return str(items[0])

    def group(self, items: list) -> list[tuple[str, OpTree]]:
        *names, typ = items
        return [(n, typ) for n in names]

    def binders(self, items: list) -> list[tuple[str, OpTree]]:
        return [b for g in items for b in g]

    def _binder(self, label: str, binders: list, body: OpTree) -> OpTree:
        kids = []
        for name, typ in binders:
            kind = HYPOTHESIS if name == "_" else VARIABLE
            kids.append(OpTree(" _ : _ ", [OpTree(name, [], kind), typ]))
        return OpTree(label, [*kids, body])

    def forall(self, items: list) -> OpTree:
        return self._binder("forall", items[0], items[1])

    def fun(self, items: list) -> OpTree:
        return self._binder("fun", items[0], items[1])


class _App(OpTree):
    __slots__ = ()


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr")


_POSITIVE = {"xH", "xO", "xI"}


def _number(node: OpTree) -> int | None:
    """The integer a numeral term denotes, or None."""
    label, kids = node.label, node.children
    if label.isdigit() and not kids:  # a unary numeral folded before parsing
        return int(label)
    if label in ("O", "Z0", "N0") and not kids:
        return 0
    if label == "xH" and not kids:
        return 1
    if len(kids) == 1:
        inner = _number(kids[0])
        if inner is None:
            return None
        if label in ("S", "Nat.succ"):
            return inner + 1
        if label == "xO":
            return 2 * inner
        if label == "xI":
            return 2 * inner + 1
        if label in ("Zpos", "Npos", "IZR", "INR", "Z.of_nat", "inject_Z"):
            return inner
        if label == "Zneg":
            return -inner
    return None


def _fold(node: OpTree) -> OpTree:
    value = _number(node)
    if value is not None and (node.children or node.label in ("O", "Z0", "xH")):
        return OpTree(str(value))
    if node.label == "Q2R" and len(node.children) == 1:
        q = node.children[0]
        if q.label.endswith("Qmake") and len(q.children) == 2:
            a, b = _number(q.children[0]), _number(q.children[1])
            if a is not None and b is not None:
                return OpTree(f"{a}/{b}")
    node.children = [_fold(c) for c in node.children]
    return node


# `S (S (... (S O)...))`: a nat numeral, one nesting level per unit (`50` is 50 levels)
_UNARY = re.compile(r"(?<![\w.'@])((?:S \()*)S O(?![\w'])(\)*)")


def _fold_unary(text: str) -> str:
    """Nat numerals as digits before parsing: Coq prints `n` as `n` nested `S`, which would
    nest the parse as deep (recursion limits) for nothing."""

    def digits(m: re.Match[str]) -> str:
        wrapped = m.group(1).count("S (")
        closing = len(m.group(2))
        if closing < wrapped:  # not a whole numeral: leave it to the grammar
            return m.group(0)
        return str(wrapped + 1) + ")" * (closing - wrapped)

    return _UNARY.sub(digits, text)


def coq_tree(printed: str) -> OpTree:
    """The operator tree of a term printed by `Check` or `Eval` under `Set Printing All`
    (the `: Prop` line after it, if present, is ignored)."""
    text = _fold_unary(printed.split("\n     :")[0].strip())
    try:
        tree = _Build().transform(_parser().parse(text))
    except LarkError as exc:
        raise CoqParseError(str(exc).strip().splitlines()[0][:200]) from None
    except RecursionError:
        raise CoqParseError("the printed term is nested too deeply to read") from None
    return OpTree("theorem", [mark_bound(_fold(tree), ("forall", "fun"))])
