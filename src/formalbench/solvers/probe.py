"""The probe of the tactic portfolio: one script that tries every tactic on a hole, and how
the assistant's answer to it is read.

Each try is a branch of `first` that ends by naming itself with a marker `formalbench_portfolio
<hole> <tactic index>` (the index into the portfolio's full list, so it stays the same when
some tactics are left out of a later probe):

- Coq: one sentence a line, `try (assert_succeeds (solve [timeout T (tac_k)]); fail 100
  "marker").` for each tactic, then `fail 100 "marker hole none".`. The winning try raises an
  error of high level that `try` does not catch, so coqc stops there and its error names the
  winner; a losing one fails at level 0, `try` catches it and the goal is left as it was.
  One sentence per tactic rather than one `first [...]`: Coq's `Stack overflow` is not a
  tactic failure, no `first`/`try` catches it, and it stops coqc at the sentence that ran;
  inside one `first` it would end the whole probe without saying which branch overflowed,
  where on its own line it names the tactic to leave out of the next probe.
- Lean: `first | ((set_option maxHeartbeats B in (tac_k)); done; trace "marker") | ...
  | fail "marker hole none"`, one branch a line. The winner is named by an info message.

Lean's `first` (like `try`) likewise does not catch the exceptions of the heartbeat and recursion
limits (leanprover/lean4#2775; since lean4#11490 `try` lets them through on purpose): a
tactic that runs out of heartbeats aborts the whole proof block instead of passing to the
next branch. Lean places that error at the syntax it was elaborating when it gave up
(`throwMaxHeartbeat` throws at `getRef`), which lies inside the branch that ran, and every
branch has a line of its own, so the line of that error names the tactic to leave out of
the next probe (`ProbeReport.blown`). (Read from Lean's sources and tested on recorded
message shapes; no Lean toolchain runs on the machines this was written on.) A limit error
on no branch's line cannot be pinned to a tactic: the hole is then reported unsolved with
Lean's own messages.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from formalbench.core.records import CheckResult, Language, Severity

MARK = "formalbench_portfolio"
WIN = re.compile(rf"{MARK} (\d+) (\d+|none)")
HEARTBEATS_PER_SECOND = 50_000  # rough: Lean's default 200000 is a few seconds of work
# The limits that `first`/`try` cannot catch: Lean's texts (Lean.Exception,
# Core.throwMaxHeartbeat) and Coq's stack overflow
_BLOWN = re.compile(
    r"\(deterministic\) timeout|maximum number of heartbeats|maximum recursion depth"
    r"|^stack overflow\.?$",
    re.I,
)
_BRANCH_MARKS = ("set_option maxHeartbeats", "assert_succeeds")


def probe_script(
    language: Language, hole: int, tactics: Sequence[str], limit: int, skip: Collection[int] = ()
) -> str:
    """One script that tries `tactics` (all but the indices in `skip`) on a goal, each for
    about `limit` seconds, and names the first that closes it."""
    tries = [(k, t) for k, t in enumerate(tactics) if k not in skip]
    if language == Language.coq:
        lines = [
            f"try (assert_succeeds (solve [timeout {limit} ({' '.join(t.split())})]); "
            f'fail 100 "{MARK} {hole} {k}").'
            for k, t in tries
        ]
        lines.append(f'fail 100 "{MARK} {hole} none".')
        return "\n".join(lines)
    beats = limit * HEARTBEATS_PER_SECOND
    lines = ["first"]
    lines += [
        f"  | ((set_option maxHeartbeats {beats} in ({_one_line(t)})); done; "
        f'trace "{MARK} {hole} {k}")'
        for k, t in tries
    ]
    lines.append(f'  | fail "{MARK} {hole} none"')
    return "\n".join(lines)


def _one_line(tactic: str) -> str:
    """A Lean tactic sequence on one line (so that a branch is one line): `a\n b` -> `a; b`."""
    return "; ".join(line.strip() for line in tactic.splitlines() if line.strip())


@dataclass
class ProbeReport:
    """What one probe found, hole by hole (holes are numbered in the task's text order)."""

    wins: dict[int, int | None] = field(default_factory=dict)  # tactic index; None: none closed
    blown: dict[int, int] = field(default_factory=dict)  # tactic index that hit a limit
    blown_messages: list[str] = field(default_factory=list)  # limit errors of no known branch


def read_probe(result: CheckResult, text: str) -> ProbeReport:
    """Read the answer of the assistant to the probe file `text`."""
    report = ProbeReport()
    lines = text.splitlines()
    for diagnostic in result.diagnostics:
        for m in WIN.finditer(diagnostic.message):
            k = None if m.group(2) == "none" else int(m.group(2))
            report.wins.setdefault(int(m.group(1)), k)
        if diagnostic.severity != Severity.error or not _BLOWN.search(diagnostic.message):
            continue
        branch = _branch_at(lines, diagnostic.line)
        if branch is None:
            report.blown_messages.append(diagnostic.message)
        else:
            report.blown.setdefault(*branch)
    return report


def _branch_at(lines: list[str], line: int | None) -> tuple[int, int] | None:
    """The (hole, tactic index) of the probe branch on `line` (1-based), if it is one."""
    if line is None or not 0 < line <= len(lines):
        return None
    m = WIN.search(lines[line - 1])
    if m is None or m.group(2) == "none" or not any(b in lines[line - 1] for b in _BRANCH_MARKS):
        return None
    return int(m.group(1)), int(m.group(2))
