"""The tactic portfolio: no model, a fixed list of automation tactics tried on every hole.

It is the embedded default prover and a real baseline (what plain automation already
solves). The naive way, one check per (hole, tactic), pays the assistant's start-up for each
try: with Coq every check is a coqc process that re-loads its libraries (0.5-1 s), so 13
tactics with and without `intros` would cost ~26 runs per hole. Instead one *probe* check
tries them all, each under its own time limit, and reports which one closed the goal:

- Coq: `first [ assert_succeeds (solve [timeout T (tac_k)]); fail 100 "marker hole k" | ...
  | fail 100 "marker hole none" ]`. The winning branch raises an error of high level that
  `first` does not catch, so coqc stops there and its error message names the winner; a hole
  no tactic closes ends in the `none` branch. One probe per hole (coqc stops at the error),
  holes before it already filled with their winners.
- Lean: `first | ((tac_k); done; trace "marker hole k") | ... | fail "marker hole none"`.
  `first` catches every error, so the winner is reported by an info message instead; Lean
  goes on after an error, so one probe covers every hole. Each try runs under
  `set_option maxHeartbeats` (heartbeats stand in for seconds: Lean has no wall-clock
  tactic timeout).

The winners then go, as plain tactics (no `first`, no timeout), into the task's text, and
that candidate is checked by the strict verifier: one probe plus one verification per task
with a single hole, ~2 coqc runs instead of up to 27. The portfolio is deterministic, so
every sample repeats sample 0 (`deterministic`: a pipeline runs it with one sample).
"""

from __future__ import annotations

import re

from formalbench.checking.holes import HoleSite, fill_holes, find_holes
from formalbench.core.errors import InputError
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Language,
    Reason,
    Severity,
    Task,
    Verdict,
)
from formalbench.solvers.base import Draft, Solver

_MARK = "formalbench_portfolio"
_WIN = re.compile(rf"{_MARK} (\d+) (\d+|none)")
_HEARTBEATS_PER_SECOND = 50_000  # rough: Lean's default 200000 is a few seconds of work


class PortfolioSolver(Solver):
    name = "portfolio"
    uses_model = False
    deterministic = True

    def variants(self, language: Language) -> list[str]:
        """The tactics tried on each hole, in order: every tactic after the first prefix
        (as it is, by default), then after the next prefix (`intros; `), and so on."""
        tactics = list(dict.fromkeys(self.config.tactics.get(language, [])))
        prefixes = self.config.prefixes.get(language) or [""]
        return list(dict.fromkeys(p + t for p in prefixes for t in tactics))

    def _with_requires(self, language: Language, script: str) -> str:
        requires = self.config.requires.get(language, "").strip()
        return f"{requires}\n{script}" if requires else script

    def probe_script(self, language: Language, hole: int, tactics: list[str]) -> str:
        """One script that tries `tactics` on a goal and names the first that closes it."""
        limit = self.config.tactic_timeout
        if language == Language.coq:
            branches = [
                f'assert_succeeds (solve [timeout {limit} ({t})]); fail 100 "{_MARK} {hole} {k}"'
                for k, t in enumerate(tactics)
            ]
            branches.append(f'fail 100 "{_MARK} {hole} none"')
            return "first [ " + "\n  | ".join(branches) + " ]."
        beats = limit * _HEARTBEATS_PER_SECOND
        lines = ["first"]
        lines += [
            f'  | ((set_option maxHeartbeats {beats} in ({t})); done; trace "{_MARK} {hole} {k}")'
            for k, t in enumerate(tactics)
        ]
        lines.append(f'  | fail "{_MARK} {hole} none"')
        return "\n".join(lines)

    async def _solve(self, task: Task, sample: int, draft: Draft) -> None:
        language = task.language
        original = task.source_text
        holes = find_holes(original, language)
        tactics = self.variants(language)
        draft.params |= {"tactics": tactics, "tactic_timeout": self.config.tactic_timeout}
        if not tactics:
            raise InputError(f"no portfolio tactics configured for {language.value}")
        winners: list[str] = []
        probes = 0
        log: list[str] = []
        failure: CheckResult | None = None
        while len(winners) < len(holes):
            start = len(winners)
            todo = (
                range(start, len(holes)) if language == Language.lean else range(start, start + 1)
            )
            scripts = [self.probe_script(language, j, tactics) for j in todo]
            fills = [*winners, *(self._with_requires(language, p) for p in scripts)]
            result = await self.backend.acheck(
                fill_holes(original, language, fills), timeout=self._probe_timeout(len(tactics))
            )
            probes += 1
            found = self._winners(result)
            new = 0
            for j in range(start, len(holes)):
                k = found.get(j)
                if k is None or k == "none":
                    break
                winners.append(self._with_requires(language, tactics[int(k)]))
                log.append(f"hole {j + 1} ({holes[j].decl}): {tactics[int(k)]}")
                new += 1
            if new == 0 or (language == Language.lean and len(winners) < len(holes)):
                if len(winners) < len(holes):
                    failure = result
                    j = len(winners)
                    log.append(f"hole {j + 1} ({holes[j].decl}): no tactic closed it")
                break
        draft.params["probes"] = probes
        draft.outputs.append("\n".join(log))
        if failure is not None:
            draft.code = fill_holes(original, language, winners)
            draft.verdict = self._failed(failure, holes[len(winners)], tactics, language)
            return
        draft.code = fill_holes(original, language, winners)
        draft.verdict = await self.verify(task, draft.code)

    def _probe_timeout(self, tries: int) -> float:
        base = self.config.check_timeout or float(getattr(self.backend, "timeout", 60.0))
        return base + tries * self.config.tactic_timeout

    @staticmethod
    def _winners(result: CheckResult) -> dict[int, str]:
        found: dict[int, str] = {}
        for diagnostic in result.diagnostics:
            for m in _WIN.finditer(diagnostic.message):
                found.setdefault(int(m.group(1)), m.group(2))
        return found

    def _failed(
        self, result: CheckResult, hole: HoleSite, tactics: list[str], language: Language
    ) -> Verdict:
        """The verdict of a task some hole of which no tactic closed, read off the probe."""
        if result.status != CheckStatus.ok:
            reason = {
                CheckStatus.timeout: Reason.timeout,
                CheckStatus.out_of_memory: Reason.out_of_memory,
            }.get(result.status, Reason.backend_crash)
            return Verdict(
                passed=False,
                reasons=[reason],
                diagnostics=list(result.diagnostics),
                elapsed=result.elapsed,
                backend=result.backend,
            )
        ours = [d for d in result.diagnostics if _MARK in d.message]
        others = [d for d in result.errors if _MARK not in d.message]
        if others or not ours:
            # the probe never ran to its end (the task or a configured tactic is broken):
            # the assistant's own errors are the verdict
            return Verdict(
                passed=False,
                reasons=[Reason.compile_error],
                diagnostics=others or list(result.diagnostics),
                elapsed=result.elapsed,
                backend=result.backend,
            )
        where = f" of `{hole.decl}`" if hole.decl else ""
        summary = Diagnostic(
            severity=Severity.error,
            message=(
                f"Tactic failure: no tactic of the portfolio closed the goal{where} "
                f"(tried {', '.join(tactics)})"
            ),
            line=ours[0].line,
            column=ours[0].column,
        )
        return Verdict(
            passed=False,
            reasons=[Reason.compile_error],
            diagnostics=[summary],
            elapsed=result.elapsed,
            backend=result.backend,
        )
