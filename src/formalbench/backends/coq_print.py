"""Many `About`/`Print`/`Locate` queries after a source, answered by one run of coqc.

Each query sits on its own line after `Set Printing All` (no notations, every implicit
argument shown) and is bracketed by `Locate fb_<nonce>_<i>.`, which prints `No object of
basename fb_<nonce>_<i>`: a marker the source cannot forge (the nonce is fresh per run), so
the output of query i is exactly the lines between markers i and i+1.

`Print x.` of a name that is not a term (a module, a notation that a later import hid) is
an error and coqc stops there; the query is then recorded as failed and the rest is asked
again, at most `MAX_RERUNS` more times, so one odd name does not lose a whole batch. An
error in the source itself is reported (`Answers.source_error`) and nothing is asked again.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import is_time_line, parse_messages
from formalbench.backends.coq_source import SourceMap
from formalbench.core.records import CheckStatus, Severity

MAX_RERUNS = 3
PRINTING = "Set Printing All.\nSet Printing Width 100000.\nSet Printing Depth 100000.\n"


@dataclass
class Answers:
    """What the queries printed, by index; which failed; why the run stopped early."""

    outputs: dict[int, list[str]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    source_error: str | None = None  # the source before the queries did not compile
    source_line: int | None = None  # where in the source (1-based) it failed
    status: CheckStatus = CheckStatus.ok
    runs: int = 0


def _script(queries: list[str], indices: list[int], nonce: str) -> tuple[str, dict[int, int]]:
    """The appended text and, per line offset inside it, the query index on that line."""
    lines = ["", *PRINTING.rstrip("\n").split("\n")]
    on_line: dict[int, int] = {}
    for i in indices:
        lines.append(f"Locate fb_{nonce}_{i}.")
        on_line[len(lines)] = i
        lines.append(queries[i])
    lines.append(f"Locate fb_{nonce}_end.")
    return "\n".join(lines) + "\n", on_line


def _split(stdout: str, nonce: str) -> dict[str, list[str]]:
    """Output lines by marker label (`0`, `1`, ..., `end`)."""
    outputs: dict[str, list[str]] = {}
    prefix = f"No object of basename fb_{nonce}_"
    current: str | None = None
    for line in stdout.splitlines():
        if is_time_line(line):
            continue
        if line.startswith(prefix):
            current = line[len(prefix) :].strip()
            outputs[current] = []
        elif current is not None:
            outputs[current].append(line)
    return outputs


def ask(
    backend: CoqBackend,
    source: str,
    queries: list[str],
    timeout: float,
    *,
    reruns: int = MAX_RERUNS,
) -> Answers:
    """Run `source` followed by `queries` (each on one line, e.g. `Print x.`); `reruns`: how
    many times the queries after a failed one are asked again."""
    body = source if source.endswith("\n") else source + "\n"
    base = body.count("\n")  # the appended text starts on line base + 1 (its line 0)
    answers = Answers()
    todo = list(range(len(queries)))
    for _ in range(1 + reruns):
        if not todo:
            break
        nonce = secrets.token_hex(6)
        script, on_line = _script(queries, todo, nonce)
        text = body + script
        outcome = backend.run(text, timeout)
        answers.runs += 1
        answers.status = outcome.status
        if outcome.status != CheckStatus.ok:
            return answers
        printed = _split(outcome.stdout, nonce)
        for i in todo:
            if str(i) in printed and _answered(i, todo, printed):
                answers.outputs[i] = printed[str(i)]
        errors = [
            m
            for m in parse_messages(outcome.stderr, SourceMap(text).line_starts)
            if m.severity == Severity.error
        ]
        if not errors:
            break
        error = errors[0]
        at = on_line.get((error.line or 0) - base - 1)
        if at is None:
            answers.source_error = error.text.strip()[:500]
            answers.source_line = error.line
            return answers
        answers.failed[at] = error.text.strip()[:200]
        answers.outputs.pop(at, None)
        todo = todo[todo.index(at) + 1 :]
    return answers


def _answered(i: int, todo: list[int], printed: dict[str, list[str]]) -> bool:
    """Query i finished when the next marker (or the end marker) was printed."""
    after = todo.index(i) + 1
    nxt = str(todo[after]) if after < len(todo) else "end"
    return nxt in printed
