"""Whether a Lean `sorry` stands where a tactic is expected or where a term is.

Filling needs to know: a tactic hole takes the script as it is, a term hole takes
`by <script>`. Lean decides this while parsing; here it is read off the tokens. A hole right
after `by`, `;`, `<;>`, a `·` bullet or a combinator such as `all_goals` is a tactic. Otherwise
the innermost `by` block that contains the hole is found (its column is that of its first
tactic; a line starting left of it, an unmatched closing bracket or a top-level comma ends
it): a hole that starts a line at the block's column is a tactic, and after `=>` the arm
decides (`fun x =>` takes a term; `case`, `next`, `induction ... with |` take tactics; a
`match` takes what its own position takes). Everything else is a term.
"""

from __future__ import annotations

from formalbench.checking.decls import CLOSE_BRACKETS, OPEN_BRACKETS
from formalbench.core.lexer import Token, words

TACTIC_LEADERS = words("; <;> · • . try repeat all_goals any_goals focus iterate decreasing_by")
COMBINATORS = words("<;> try repeat all_goals any_goals focus iterate")
_ARROW_TACTIC = words("case case' next on_goal induction cases rcases obtain conv")


def _by_block_column(toks: list[Token], k: int) -> int | None:
    """Column of the innermost `by` tactic block that contains token k, or None."""
    for b in range(k - 1, -1, -1):
        if toks[b].text != "by":
            continue
        col = toks[b + 1].column
        depth = 0
        inside = True
        for j in range(b + 1, k + 1):
            t = toks[j]
            if t.text in OPEN_BRACKETS:
                depth += 1
            elif t.text in CLOSE_BRACKETS:
                depth -= 1
            if depth < 0 or (depth == 0 and t.text == "," and j < k):
                inside = False
                break
            if j > b + 1 and t.line != toks[j - 1].line and t.column < col:
                inside = False
                break
        if inside:
            return col
    return None


def lean_mode(toks: list[Token], k: int) -> str:
    """Whether the `sorry` at k stands where a tactic is expected or where a term is."""
    if k == 0:
        return "term"
    prev = toks[k - 1].text
    if prev == "by" or prev in TACTIC_LEADERS:
        return "tactic"
    if prev == "|" and k >= 2 and toks[k - 2].text in ("tactic", "tacticSeq"):
        return "tactic"  # a syntax quotation `(tactic| sorry)
    col = _by_block_column(toks, k)
    if col is None:
        return "term"
    if prev == "|":
        return "tactic"
    if prev == "=>":
        return _arrow_mode(toks, k - 1, col)
    if toks[k - 1].line != toks[k].line and toks[k].column == col:
        return "tactic"
    return "term"


def _arrow_mode(toks: list[Token], arrow: int, col: int) -> str:
    """`=>` before a hole: a `fun` arm takes a term, a `case`/`induction ... with` arm a tactic."""
    depth = 0
    for j in range(arrow - 1, -1, -1):
        text = toks[j].text
        if text in CLOSE_BRACKETS:
            depth += 1
        elif text in OPEN_BRACKETS:
            depth -= 1
            if depth < 0:
                return "term"
        elif depth:
            continue
        elif text in ("fun", "λ"):
            return "term"
        elif text in _ARROW_TACTIC:
            return "tactic"
        elif text == "match":
            return lean_mode(toks, j)
        elif text == "by":
            return "tactic"
    return "term"
