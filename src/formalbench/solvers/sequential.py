"""Sequential hole filling with repair turns (CAM-Bench's proof-search solver).

The file's holes are taken one at a time, in text order. For the current hole the model
sees the file with the holes before it already filled, the current one replaced by a
placeholder comment, and the later ones left as they are; it answers with the proof for
the placeholder only. The answer is put in and the file is checked; the check's errors
from the current hole on (earlier parts compiled before; later holes are only warnings in
Lean and compile as `Admitted` in Coq) go back to the model in a repair prompt with its
last answer. A hole gets one first call and then at most `max_turns` repair turns
(default 32, as CAM-Bench's "32 repair turns per sorry block"; temperature 0.4), so at
most 33 calls; the whole task shares one token budget (default 10^6) and each call's
output is capped (default 16,000). A hole that is still failing ends the attempt: the file
can no longer pass. Finally the whole file goes through the strict verifier, so a task with
several holes (several theorems, or several holes in one proof) is solved only when every
hole is filled and the whole file verifies.

The calls spent at each hole reached are recorded in `params["hole_turns"]`; the largest
of them is the number of turns within which the attempt solved the task, which gives
CAM-Bench's pass@k over turns (`metrics.turns`).

When the token budget runs out in the middle of a hole, the attempt still carries the last
candidate and the verdict of the strict verifier on it (then `solve` records the `budget:`
error), so the diagnostics of the last try are not lost.

Every call of sample i passes seed=i; the repair prompt names its turn, so no two calls of
one attempt are the same request (the response cache never feeds a repair loop its own
earlier answer), and a resumed run replays the same trajectory.

A fill is also refused before any check when it contains a construct the verifier forbids
(`sorry`, `admit`, ...), so a hole cannot be "solved" by an escape that only the final
verification would catch.
"""

from __future__ import annotations

from formalbench.checking.decls import split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.checking.holes import HoleSite, fill_holes, find_holes
from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Language, Task
from formalbench.llm.base import BudgetExceededError
from formalbench.solvers.base import Draft, Solver
from formalbench.solvers.candidate import with_placeholder
from formalbench.solvers.extract import FormatFailure, extract_fills

FILL_PROMPT = "solver_hole_fill"
REPAIR_PROMPT = "solver_hole_repair"
SCRIPT_KIND = {Language.lean: "Lean tactic proof", Language.coq: "Coq proof script"}


class SequentialSolver(Solver):
    name = "sequential"
    default_temperature = 0.4
    default_max_turns = 32

    async def _solve(self, task: Task, sample: int, draft: Draft) -> None:
        language = task.language
        original = task.source_text
        holes = find_holes(original, language)
        draft.params["max_turns"] = self.max_turns  # repair turns per hole
        # model calls spent at each hole reached, in order: pass@k over turns reads it
        hole_turns: list[int] = []
        draft.params["hole_turns"] = hole_turns
        solved: list[str] = []
        tries: list[str] = []  # the usable fills of the current hole, last one last
        try:
            for index, hole in enumerate(holes):
                tries = []
                start = draft.turns
                try:
                    filled = await self._fill(task, sample, draft, solved, hole, index, tries)
                finally:
                    hole_turns.append(draft.turns - start)
                if not filled:
                    break
                solved.append(tries[-1])
                tries = []
        except BudgetExceededError:
            # the budget stopped the search: verify what was reached, then let `solve`
            # record the budget error on an attempt that keeps the last try's diagnostics
            await self._finish(task, [*solved, *tries[-1:]], draft)
            raise
        await self._finish(task, [*solved, *tries[-1:]], draft)

    async def _finish(self, task: Task, fills: list[str], draft: Draft) -> None:
        draft.code = fill_holes(task.source_text, task.language, fills)
        draft.verdict = await self.verify(task, draft.code)

    async def _fill(
        self,
        task: Task,
        sample: int,
        draft: Draft,
        solved: list[str],
        hole: HoleSite,
        index: int,
        tries: list[str],
    ) -> bool:
        """One first try and up to `max_turns` repairs at one hole; every usable fill is
        appended to `tries`. True when the last one compiled."""
        language = task.language
        original = task.source_text
        context, marker = with_placeholder(original, language, solved)
        current = find_holes(fill_holes(original, language, solved), language)[0]
        base = self.prompt_vars(task) | {
            "context": context,
            "marker": marker,
            "decl": hole.decl or "",
            "script_kind": SCRIPT_KIND[language],
        }
        previous: str | None = None
        errors = ""
        for turn in range(1 + self.max_turns):
            if turn == 0:
                messages = self.prompt(draft, FILL_PROMPT).render(**base)
            else:
                messages = self.prompt(draft, REPAIR_PROMPT).render(
                    **base,
                    previous=previous or "",
                    errors=errors,
                    turn=turn,
                    max_turns=self.max_turns,
                )
            label = f"hole {index + 1} ({hole.decl}), turn {turn + 1}"
            completion = await self.generate(draft, messages, seed=sample, label=label)
            try:
                fill = extract_fills(completion.text, language, [hole], whole_answer=False)[0]
            except FormatFailure as exc:
                previous = completion.text.strip()[-2000:]
                errors = f"{exc}: answer with the proof in one `{language.value}` code block"
                continue
            previous = fill
            tries.append(fill)
            errors = self._forbidden(fill, language)
            if errors:
                continue
            candidate = fill_holes(original, language, [*solved, fill])
            result = await self.backend.acheck(candidate, timeout=self.config.check_timeout)
            errors = self._feedback(result, candidate, current.line)
            if not errors:
                return True
        return False

    def _forbidden(self, fill: str, language: Language) -> str:
        found = forbidden_findings(split_decls(fill, language), self.policy.forbidden_for(language))
        if not found:
            return ""
        words = ", ".join(dict.fromkeys(f"`{f.subject}`" for f in found))
        return f"the proof uses {words}, which the verifier rejects; prove the goal instead"

    def _feedback(self, result: CheckResult, candidate: str, first_line: int) -> str:
        """The errors about the current hole (from its line on), with their source lines."""
        if result.status != CheckStatus.ok:
            detail = f": {result.detail}" if result.detail else ""
            return f"the check ended with {result.status.value}{detail}"[:2000]
        errors = [d for d in result.errors if d.line is None or d.line >= first_line]
        return render_errors(errors, candidate, self.config.observation_chars)


def render_errors(errors: list[Diagnostic], source: str, limit: int) -> str:
    """Errors as a model reads them best: position, the offending line, the message."""
    lines = source.splitlines()
    parts: list[str] = []
    for d in errors:
        where = f"line {d.line}" + (f", column {d.column}" if d.column is not None else "")
        code = lines[d.line - 1].strip() if d.line and 0 < d.line <= len(lines) else ""
        head = f"{where}: {code}" if code else (where if d.line else "error")
        parts.append(f"{head}\n{d.message.strip()}")
    text = "\n\n".join(parts)
    if len(text) > limit:
        text = text[:limit] + "\n[... more errors cut]"
    return text
