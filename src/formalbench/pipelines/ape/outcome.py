"""What a stage of an APE run (validation, synthesis) did to its tasks, counted by reason.

Every stored result of a stage is `{"kept": bool, "reason": str, "detail": str, ...}`; the
reason is a short fixed phrase (what went wrong), the detail the message behind it. A stage
where every task failed for one reason is almost always the environment or the model, not
the tasks (a relative path the sandbox cannot bind, an unreadable reply format), so the
command prints that reason and exits non-zero instead of reporting "0 kept".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MESSAGE_CAP = 2000  # characters of one stored message (Coq's longest usual errors fit whole)


def shorten(text: str, limit: int = MESSAGE_CAP) -> str:
    """`text` whole when it fits in `limit` characters; else cut at the last line break
    before the limit (else the last sentence end, else the last space) with " …" after
    it, so a reason never ends mid-word or mid-line (issue 30 item 3: "expected to have
    type \"n" was a message cut at 300 characters)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit - 2]
    for mark in ("\n", ". ", " "):
        at = head.rfind(mark)
        if at >= limit // 3:
            return head[: at + (1 if mark == ". " else 0)].rstrip() + " …"
    return head.rstrip() + " …"


def one_line(text: str, limit: int = 200) -> str:
    """`text` with its lines joined, shortened at a word for a one-line summary."""
    return shorten(" ".join(text.split()), limit)


@dataclass
class StageOutcome:
    stage: str  # "validation" / "synthesis"
    total: int = 0
    kept: int = 0
    errors: int = 0  # results recorded as errors (kept for a retry, never a verdict)
    reasons: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # said after the reasons (Coq versions)

    @classmethod
    def of(cls, stage: str, results: Iterable[dict[str, Any]]) -> StageOutcome:
        out = cls(stage)
        for result in results:
            out.total += 1
            if result.get("kept"):
                out.kept += 1
                continue
            out.errors += bool(result.get("error"))
            reason = str(result.get("reason") or "no reason recorded")
            out.reasons[reason] += 1
            out.examples.setdefault(reason, str(result.get("detail") or ""))
        return out

    @property
    def failed(self) -> int:
        return self.total - self.kept

    def single_reason(self) -> str | None:
        """The reason, when every task of a non-empty stage failed for it."""
        if self.total and not self.kept and len(self.reasons) == 1:
            return next(iter(self.reasons))
        return None

    def lines(self) -> list[str]:
        """One line per reason, most frequent first, with one example detail."""
        out = []
        for reason, n in self.reasons.most_common():
            example = self.examples.get(reason, "")
            tail = f" (e.g. {one_line(example, 240)})" if example else ""
            out.append(f"{n} {reason}{tail}")
        return out

    def summary(self) -> dict[str, Any]:
        """The figures as `report` shows them."""
        out: dict[str, Any] = {
            "checked": self.total,
            "kept": self.kept,
            "errors": self.errors,
            "reasons": dict(self.reasons.most_common()),
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out
