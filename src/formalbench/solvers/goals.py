"""What is left to prove at a point of a proof, and the types of terms, read through a backend.

An agent needs to see goals, but the assistants say little about them on failure: coqc
ends an unfinished proof with "Attempt to save an incomplete proof" and no goals, and it
prints what `Show.` and `Check` answer on standard output, which `CoqBackend` does not
return (it keeps the located messages of standard error). So the Coq side asks through an
error instead: an Ltac2 tactic appended at the point of interest collects every focused goal
(its hypotheses and conclusion), or the type of each given term, into one message and
raises it as an error, which the backend does return; then `Abort.` (the verifier is not
involved: these texts are observations, never candidates). Ltac2 ships with Coq (8.11 on).

Lean writes the goals into its own messages ("unsolved goals", and most tactic failures
print the goal they failed on), so the Lean side reads them from there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from formalbench.backends.base import Backend
from formalbench.core.records import CheckResult, Diagnostic, Language, Severity
from formalbench.solvers.proofs import mask

GOALS_MARK = "formalbench_goals"
TYPES_MARK = "formalbench_types"
_SEP = "@@fb@@"  # separates the parts of the raised message; never printed by Coq itself

# Ltac2: one message with every focused goal, raised as an error.
_COQ_GOALS = f"""From Ltac2 Require Import Ltac2.
Set Printing Width 1000.
all: ltac2:(
  let s := Message.of_string in
  let acc := {{ contents := s "{GOALS_MARK}" }} in
  let add m := acc.(contents) := Message.concat (acc.(contents)) m in
  Control.enter (fun _ =>
    add (s "{_SEP}goal");
    List.iter (fun h => match h with (i, b, t) =>
      add (s "{_SEP}hyp"); add (Message.of_ident i);
      match b with Some v => add (s " := "); add (Message.of_constr v) | None => () end;
      add (s " : "); add (Message.of_constr t) end) (Control.hyps ());
    add (s "{_SEP}concl"); add (Message.of_constr (Control.goal ())));
  Control.throw (Tactic_failure (Some (acc.(contents))))).
Abort."""


def coq_goals_script() -> str:
    """Sentences that, appended inside an open proof, make coqc fail with its goals."""
    return _COQ_GOALS


def coq_types_script(terms: Sequence[str]) -> str:
    """Sentences that make coqc fail with the type of each of `terms` (what `Check` says)."""
    parts = [
        f'add (s "{_SEP}term{_quote(t)}{_SEP}type"); '
        f"add (Message.of_constr (Constr.type open_constr:({t})));"
        for t in terms
    ]
    return (
        "Goal True.\nFrom Ltac2 Require Import Ltac2.\nSet Printing Width 1000.\nltac2:(\n"
        f'  let s := Message.of_string in\n  let acc := {{ contents := s "{TYPES_MARK}" }} in\n'
        "  let add m := acc.(contents) := Message.concat (acc.(contents)) m in\n  "
        + "\n  ".join(parts)
        + "\n  Control.throw (Tactic_failure (Some (acc.(contents))))).\nAbort."
    )


def _quote(text: str) -> str:
    return " ".join(text.split()).replace('"', '""')  # a Coq string doubles its quotes


def _payload(result: CheckResult, mark: str) -> str | None:
    for d in result.diagnostics:
        at = d.message.find(mark)
        if d.severity == Severity.error and at >= 0:
            body = d.message[at + len(mark) :]
            return body[: body.rfind(")))")] if body.rstrip().endswith(")))") else body
    return None


def read_coq_goals(result: CheckResult) -> list[str] | None:
    """The goals raised by `coq_goals_script`, each as Coq shows them; None when the
    script did not run (no proof was open there, or Ltac2 is missing)."""
    body = _payload(result, GOALS_MARK)
    if body is None:
        return None
    goals = []
    for chunk in body.split(f"{_SEP}goal")[1:]:
        hyps, _, concl = chunk.partition(f"{_SEP}concl")
        lines = [_hypothesis(h) for h in hyps.split(f"{_SEP}hyp") if h.strip()]
        goals.append("\n".join([*lines, "============================", _bare(concl)]))
    return goals


def read_coq_types(result: CheckResult) -> list[tuple[str, str]] | None:
    """(term, type) pairs raised by `coq_types_script`, or None when it did not run."""
    body = _payload(result, TYPES_MARK)
    if body is None:
        return None
    pairs = []
    for chunk in body.split(f"{_SEP}term")[1:]:
        term, _, typ = chunk.partition(f"{_SEP}type")
        pairs.append((term.strip(), _bare(typ)))
    return pairs


def render_goals(goals: Sequence[str]) -> str:
    if not goals:
        return "no goals (everything is proved at that point)"
    n = len(goals)
    return "\n\n".join(f"goal {i + 1} of {n}:\n{g}" for i, g in enumerate(goals))


def _hypothesis(text: str) -> str:
    """`h : (0 < x)` -> `h : 0 < x`; `f := (fun ...) : (T)` likewise, at depth 0 only."""
    name, assign, rest = text.strip().partition(" := ")
    if not assign:
        name, _, typ = text.strip().partition(" : ")
        return f"{name} : {_bare(typ)}"
    value, typ = _split_top(rest, " : ")
    return f"{name} := {_bare(value)} : {_bare(typ)}"


def _split_top(text: str, sep: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and text.startswith(sep, i):
            return text[:i], text[i + len(sep) :]
    return text, ""


def _bare(text: str) -> str:
    """Without the parentheses Ltac2 puts around a printed term."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return text[1:-1].strip() if i == len(text) - 1 else text
    return text


# ---- where to stop a Coq text to look at its goals ---------------------------------------


def sentence_start(text: str, offset: int) -> int:
    """The start of the Coq sentence that holds `offset`: the place to cut a script just
    before its failing step (the end of the text when nothing but blanks lies there)."""
    masked = mask(text, Language.coq)
    start = 0
    for m in re.finditer(r"(?<!\.)\.(?=\s|$)", masked):
        if offset < m.end():
            break
        start = m.end()
    else:
        if not masked[start:].strip():
            return len(text)
    while start < len(text) and text[start].isspace():
        start += 1
    # a bullet or brace before the failing step is kept, so the goal it focuses is shown
    while (bullet := _BULLET.match(text, start)) and bullet.end() <= offset:
        start = bullet.end()
    return start


_BULLET = re.compile(r"(?:-+|\++|\*+|\{)\s+")


def offset_of(text: str, line: int, column: int | None) -> int:
    """The character offset of a (1-based line, 0-based column) position in `text`."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    base = starts[min(line, len(starts)) - 1]
    return min(base + (column or 0), len(text))


async def coq_goals_at(
    backend: Backend, text: str, diagnostic: Diagnostic, timeout: float | None
) -> list[str] | None:
    """The goals of `text` just before the sentence that `diagnostic` points at (at the end
    of the text for a message with no place, such as "There are pending proofs")."""
    if diagnostic.line is None:
        offset = len(text)
    else:
        offset = offset_of(text, diagnostic.line, diagnostic.column)
    cut = sentence_start(text, offset)
    source = text[:cut].rstrip() + "\n" + coq_goals_script() + "\n"
    return read_coq_goals(await backend.acheck(source, timeout=timeout))


# ---- Lean -------------------------------------------------------------------------------


def lean_goals(diagnostics: Sequence[Diagnostic]) -> list[str]:
    """The goal states quoted in Lean's messages (those with a `⊢` line), in order."""
    found = []
    for d in diagnostics:
        lines = d.message.splitlines()
        first = next((i for i, ln in enumerate(lines) if _LEAN_GOAL_START.match(ln)), None)
        if first is not None and any(ln.lstrip().startswith("⊢") for ln in lines):
            found.append("\n".join(lines[first:]).strip())
    return found


_LEAN_GOAL_START = re.compile(r"^\s*(case\b|⊢|[^\s:][^:]*\s:\s)")
