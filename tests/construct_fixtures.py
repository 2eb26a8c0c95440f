"""Extracted exercises built by hand and a model stand-in that answers the construct prompts
by what they ask (read from the system prompt), for the tests of the source stages.

The answers make each stage's work visible in the text: naturalized items are `N<...>`
with their children inside, each condition-recovery pass appends `[hop d]`, a repair
prefixes `repaired:`. The exercise's words pick the review: ACCEPT, REVISE (accepted after
repair), HOLD with an unresolved reference (dropped), UNSUIT (held again after repair);
BROKEN answers the cleaning step with the input unchanged, a format failure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from formalbench.core.construct import ExpansionNode, ExtractedExercise, Reference


def node(label: str, kind: str, text: str, depth: int, *children: ExpansionNode, **kw: Any):
    return ExpansionNode(
        label=label, kind=kind, text=text, depth=depth, children=list(children), **kw
    )


def exercise(key: str, text: str, root: ExpansionNode | None = None, refs=()) -> ExtractedExercise:
    return ExtractedExercise(
        id=f"book/{key}",
        source="book/Chapter 1",
        source_idx=f"Exercise {key}",
        text=text,
        refs=list(refs),
        expansion=root or node(key, "exercise", text, 0),
    )


def exercises() -> list[ExtractedExercise]:
    d1 = node("D1", "definition", "A matrix is nonsingular if Ax=0 only for x=0.", 2, parent="T1")
    t1 = node("T1", "theorem", "Nonsingular (Definition D1) iff invertible.", 1, d1, via="T1")
    accept_text = "ACCEPT: Show A is invertible using Theorem T1. Hint: use the plot."
    hold_text = "HOLD: Prove it with Theorem ZZ. Remark: see chapter 2."
    return [
        exercise(
            "E1",
            accept_text,
            node("E1", "exercise", accept_text, 0, t1),
            [Reference(raw="\\ref{T1}", key="T1", resolved=True)],
        ),
        exercise("E2", "REVISE: Find x with x + 1 = 2. Remark: easy."),
        exercise(
            "E3",
            hold_text,
            node("E3", "exercise", hold_text, 0, unresolved=["ZZ"]),
            [Reference(raw="\\ref{ZZ}", key="ZZ", resolved=False)],
        ),
        exercise("E4", "UNSUIT: Sketch the graph of y = x^2. Hint: use software."),
        exercise("E5", "BROKEN: Show 1 = 1."),
    ]


def write_jsonl(path: Path, items: list[ExtractedExercise]) -> Path:
    path.write_text("".join(e.model_dump_json() + "\n" for e in items), encoding="utf-8")
    return path


def _after(label: str, text: str) -> str:
    """The paragraph after the line `label` in a prompt."""
    found = re.search(re.escape(label) + r"\n(.*?)(?:\n\n|\Z)", text, re.DOTALL)
    return found.group(1).strip() if found else ""


def answer(system: str, user: str, chat: str) -> str:
    """The stand-in's reply to one construct prompt (`chat`: every message, joined)."""
    if "You edit exercises" in system:
        text = user.split("\n", 1)[1]
        if "BROKEN" in text:
            return json.dumps({"problem_clean": text})  # unchanged: refused by the step
        kept = re.sub(r"\s*(Hint|Remark):.*$", "", text)
        return json.dumps({"problem_clean": kept.strip()})
    if "You rewrite items" in system:
        head, _, rest = user.partition(":\n")
        body = rest.split("\n\nIt depends on:\n")[0]
        children = re.findall(r"^- \S+ \S+: (.*)$", user, re.MULTILINE)
        return json.dumps({"text": f"N<{head}: {body}>[{'; '.join(children)}]"})
    if "You make the implicit conditions" in system:
        hop = re.search(r"at hop (\d+) of its dependencies", user)
        current = _after("Current statement:", user)
        added = [{"condition": "n > 0", "support": "the book"}] if hop else []
        return json.dumps(
            {
                "problem": f"{current} [hop {hop.group(1) if hop else 0}]",
                "added": added,
                "objective_unchanged": True,
            }
        )
    if "You review rewritten" in system:
        original = _after("Original exercise:", user)
        final = _after("Final statement:", user)
        if "ACCEPT" in original or ("REVISE" in original and "repaired:" in final):
            verdict = {"label": "accept"}
        elif "REVISE" in original:
            verdict = {"label": "revise", "flags": ["missing_assumption"], "reason": "x real?"}
        elif "HOLD" in original:
            verdict = {"label": "hold", "flags": ["missing_dependency"], "reason": "ZZ absent"}
        else:
            verdict = {"label": "hold", "flags": ["unsuitable"], "reason": "a sketch"}
        return json.dumps(verdict)
    if "You repair" in system:
        return json.dumps({"problem": "repaired: " + _after("Statement to repair:", user)})
    return "?"


def answer_body(body: dict[str, Any]) -> list[str]:
    """`answer` for the stand-in HTTP server."""
    messages = body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = [m["content"] for m in messages if m["role"] == "user"][0]
    chat = "\n".join(m["content"] for m in messages)
    return [answer(system, user, chat)]
