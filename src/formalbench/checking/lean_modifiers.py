"""Where a word that is forbidden as a Lean modifier is that modifier.

`unsafe` is refused because an `unsafe` declaration (or an `unsafe` term) escapes the kernel's
checks. Aesop uses the same word for a rule's phase, and real Mathlib writes it everywhere:
`@[aesop unsafe 90% apply (rule_sets := [SetLike])]`, `attribute [aesop unsafe 5% forward] f`,
`@[to_additive (attr := aesop unsafe 70% apply)]`, `aesop (add unsafe forward h)`,
`add_aesop_rules unsafe 50% …`. Lean's `unsafe` keyword can stand in none of those positions
(an attribute list holds attributes and their arguments; an Aesop clause holds Aesop rule
syntax), so the word is read there as Aesop's and anywhere else as Lean's, which is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class _Token(Protocol):
    @property
    def text(self) -> str: ...


_OPEN = {"(": ")", "[": "]", "{": "}", "@[": "]", "⟨": "⟩", "%[": "]"}
_CLOSE = frozenset(_OPEN.values())


def aesop_phase(tokens: Sequence[_Token], i: int) -> bool:
    """Whether the word at `i` of a command's tokens is an Aesop rule phase (see the module
    docstring): inside an attribute list, inside an Aesop tactic clause `(add …)`/`(erase …)`,
    or an argument of the `add_aesop_rules` command."""
    if tokens and tokens[0].text == "add_aesop_rules":
        return True
    depth = 0
    for k in range(i - 1, -1, -1):
        text = tokens[k].text
        if text in _CLOSE:
            depth += 1
        elif text in _OPEN:
            if depth:
                depth -= 1
                continue
            if text == "@[":
                return True
            before = tokens[k - 1].text if k else ""
            if text == "[" and before in ("attribute", "local", "scoped"):
                return True
            after = tokens[k + 1].text if k + 1 < len(tokens) else ""
            if text == "(" and after in ("add", "erase") and _aesop_call(tokens, k):
                return True
    return False


def _aesop_call(tokens: Sequence[_Token], k: int) -> bool:
    """Whether the clause opened at `k` belongs to an Aesop tactic (`aesop`, `aesop?`,
    `aesop_cat`, … possibly after other clauses)."""
    depth = 0
    for m in range(k - 1, -1, -1):
        text = tokens[m].text
        if text in _CLOSE:
            depth += 1
        elif text in _OPEN:
            depth -= 1
            if depth < 0:
                return False
        elif depth == 0:
            return text.startswith("aesop")
    return False
