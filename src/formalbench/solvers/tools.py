"""The agent's tools: what `search`, `check` and `run` do, and the text each answers with.

- `search`: the task file's own declarations (those before its last target: what a proof
  may use) and the library's, by words (`solvers.search`).
- `check`: a free snippet (`Check foo.`, `#check foo`, `example ... := by ...`, `Goal ...`)
  is compiled after the task's context (its text before the first declaration to prove),
  with no strict verifier, and every message comes back, info ones included. The snippet
  is an observation, never a candidate, but it is still code from a model: commands that
  run programs or touch files (`REFUSED`) are not run. On Coq two answers need more than
  the backend's messages, since coqc prints them on standard output, which `CoqBackend`
  does not return: the types of `Check` terms and the goals of a proof the snippet leaves
  open (or fails in) are read through `solvers.goals`; other queries (`Search`, `Print`,
  `About`, ...) get a note saying their output cannot be shown.
- `run`: a proof is put into the task and strictly verified; on rejection the answer has
  the errors with their lines and the goals at the failing step: Coq's through
  `solvers.goals`, Lean's from its messages (and from the holes the REPL reports, when the
  verifier rejected the text before compiling it).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

from formalbench.checking.decls import split_decls
from formalbench.checking.holes import find_holes
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Finding,
    Language,
    Reason,
    Severity,
    Task,
)
from formalbench.solvers.candidate import from_code
from formalbench.solvers.extract import FormatFailure
from formalbench.solvers.goals import (
    coq_goals_at,
    coq_types_script,
    lean_goals,
    read_coq_types,
    render_goals,
)
from formalbench.solvers.proofs import coq_sentences, mask
from formalbench.solvers.search import (
    Declaration,
    DeclarationIndex,
    scan,
    search_declarations,
)
from formalbench.solvers.sequential import render_errors

if TYPE_CHECKING:
    from formalbench.solvers.base import Solver

# Commands a `check` snippet may not use: they run programs, load code or touch files.
REFUSED = {
    Language.lean: re.compile(
        r"(?<![\w.'])(#eval|#exit|run_cmd|run_elab|run_meta|run_tac|by_elab|elab|elab_rules"
        r"|macro|macro_rules|syntax|initialize|builtin_initialize|implemented_by|extern|unsafe"
        r"|import|IO\.\w+)(?![\w'])"
    ),
    Language.coq: re.compile(
        r"(?<![\w.'])(Declare\s+ML\s+Module|Load|Redirect|Cd|Drop|Add\s+(?:Rec\s+)?LoadPath"
        r"|Add\s+ML\s+Path)(?![\w'])"
    ),
}
_COQ_CHECK = re.compile(r"^\s*Check\s")
_COQ_QUIET = re.compile(
    r"^\s*(Search\w*|Print|About|Locate|Compute|Eval|Show|Test|Inspect)\b", re.M
)
_DOC_AT_END = re.compile(r"/--(?:(?!-/).)*-/\s*$", re.S)


class AgentTools:
    """The tools of one agent attempt on `task`."""

    def __init__(self, solver: Solver, task: Task, index: DeclarationIndex) -> None:
        self.solver = solver
        self.task = task
        self.language = task.language
        self.index = index
        self.local = task_declarations(task.source_text, task.language)

    @property
    def timeout(self) -> float | None:
        return self.solver.config.check_timeout

    async def search(self, query: str) -> str:
        limit = self.solver.config.search_results
        own = search_declarations(self.local, query, limit)
        found = await asyncio.to_thread(self.index.search, query, limit)
        names = {d.name for d in own}
        rows = [f"{d.render()}    [the task file, line {d.line}]" for d in own]
        rows += [
            f"{d.render()}    [{Path(d.path).name}:{d.line}]" for d in found if d.name not in names
        ]
        if not rows:
            return f"no declaration matches {query.strip()!r}"
        return "\n".join(rows[:limit])

    async def check(self, snippet: str) -> str:
        refused = REFUSED[self.language].search(mask(snippet, self.language))
        if refused:
            return f"nothing was run: the check tool does not run `{refused.group(1)}`"
        context = task_context(self.task.source_text, self.language).rstrip()
        prefix = f"{context}\n\n" if context else ""
        source = prefix + snippet.strip("\n") + "\n"
        first = prefix.count("\n") + 1  # the file line of the snippet's first line
        backend = self.solver.backend
        result = await backend.acheck(source, timeout=self.timeout)
        parts = [_render_messages(result, first)]
        if self.language == Language.coq and result.status == CheckStatus.ok:
            parts += await self._coq_extras(source, snippet, result)
        return "\n\n".join(p for p in parts if p)

    async def _coq_extras(self, source: str, snippet: str, result: CheckResult) -> list[str]:
        backend = self.solver.backend
        extras = []
        errors = result.errors
        if errors:
            goals = await coq_goals_at(backend, source, errors[0], self.timeout)
            if goals is not None:
                extras.append(f"Goals at that point:\n{render_goals(goals)}")
            return extras
        masked = mask(snippet, Language.coq)
        terms = [  # found in the masked text, taken from the snippet's own (strings kept)
            snippet[a + m.end() : b].strip().removesuffix(".").strip()
            for a, b in coq_sentences(snippet)
            if (m := _COQ_CHECK.match(masked[a:b]))
        ]
        if terms:
            answer = await backend.acheck(
                source + coq_types_script(terms) + "\n", timeout=self.timeout
            )
            types = read_coq_types(answer)
            if types:
                extras.append("\n".join(f"{term}\n     : {typ}" for term, typ in types))
        if _COQ_QUIET.search(masked):
            extras.append(
                "(the output of Search, Print, About, Locate, Compute and Show is not "
                "available from this Coq backend; `Check term.` is, the search tool finds "
                "lemmas, and a proof left open at the end of the snippet shows its goals)"
            )
        return extras

    async def run(self, proof: str) -> str:
        task = self.task
        try:
            candidate = from_code(task.source_text, self.language, proof)
        except FormatFailure as exc:
            return f"nothing was run: {exc}"
        verdict = await self.solver.verify(task, candidate)
        if verdict.passed:
            return "The strict verifier accepts this proof. Submit it."
        limit = self.solver.config.observation_chars
        lines: list[str] = [f"Rejected ({', '.join(r.value for r in verdict.reasons)})."]
        errors = [d for d in verdict.diagnostics if d.severity == Severity.error]
        if errors:
            lines.append(render_errors(errors, candidate, limit))
        shown = {d.message.strip() for d in errors}
        for f in verdict.findings:
            if f.message.strip() not in shown:
                where = f"line {f.line}: " if f.line else ""
                lines.append(f"{where}{f.message}")
        goals = await self._goals(candidate, errors, verdict.findings)
        if goals:
            lines.append(goals)
        return "\n".join(lines)

    async def _goals(
        self, candidate: str, errors: list[Diagnostic], findings: list[Finding]
    ) -> str:
        """The goals where the proof fails, when they are not in the messages already.

        Only text the verifier would have compiled is compiled here: on Coq the candidate
        up to its first error, or up to its earliest finding when the verifier refused it
        unseen; on Lean a refused candidate only when its findings are nothing but holes.
        """
        backend = self.solver.backend
        if self.language == Language.coq:
            located = [d for d in errors if d.line is not None]
            lined = sorted((f for f in findings if f.line is not None), key=_place)
            if located:
                point = located[0]
            elif lined and not errors:
                f = lined[0]
                point = Diagnostic(
                    severity=Severity.error, message="", line=f.line, column=f.column
                )
            else:
                return ""
            goals = await coq_goals_at(backend, candidate, point, self.timeout)
            if goals is None:
                return ""
            return f"\nGoals before the failing step (line {point.line}):\n" + render_goals(goals)
        if errors or not findings or not all(_is_hole(f) for f in findings):
            return ""  # Lean's errors quote the goal they are about
        result = await backend.acheck(candidate, timeout=self.timeout)
        goals = [h.goal for h in result.holes if h.goal] + lean_goals(result.errors)
        return "\nGoals left open:\n" + render_goals(goals) if goals else ""


def _place(finding: Finding) -> tuple[int, int]:
    return finding.line or 0, finding.column or 0


def _is_hole(finding: Finding) -> bool:
    return finding.reason == Reason.forbidden_construct and finding.subject in _HOLES


_HOLES = {"sorry", "admit"}


def task_context(text: str, language: Language) -> str:
    """The task's text before its first declaration to prove (header, definitions, given
    lemmas): where a `check` snippet is placed."""
    holes = find_holes(text, language)
    if not holes:
        return text
    start = holes[0].start
    for decl in split_decls(text, language):
        if decl.start <= start <= decl.end:
            start = decl.start
            break
    head = text[:start]
    return _DOC_AT_END.sub("", head) if language == Language.lean else head


def task_declarations(text: str, language: Language) -> list[Declaration]:
    """The task file's declarations that a proof may use: those before its last target."""
    holes = find_holes(text, language)
    last = max((h.start for h in holes), default=len(text))
    decls = split_decls(text, language)
    for decl in decls:
        if decl.start <= last <= decl.end:
            last = decl.start
    # usable: declarations whose line starts before `last` (line numbers, no offset walks)
    last_line = text.count("\n", 0, last) + 1
    usable = last_line if text.rfind("\n", 0, last) + 1 < last else last_line - 1
    return [d for d in scan(text, language, "<task>") if d.line <= usable]


def _render_messages(result: CheckResult, first: int) -> str:
    """Every message of a check, placed in the snippet (its line 1 is file line `first`)."""
    if result.status != CheckStatus.ok:
        detail = f": {result.detail}" if result.detail else ""
        return f"the check ended with {result.status.value}{detail}"
    parts = []
    for d in result.diagnostics:
        if d.line is not None and d.line < first and d.severity != Severity.error:
            continue  # the task's own warnings are not the snippet's business
        if d.line is None:
            where = ""
        elif d.line >= first:
            where = f"line {d.line - first + 1}" + (f", column {d.column}" if d.column else "")
        else:
            where = f"line {d.line} of the task's context"
        head = f"{d.severity.value}" + (f" ({where})" if where else "")
        parts.append(f"{head}:\n{d.message.strip()}")
    return "\n\n".join(parts) or "No messages: the snippet compiles."
