"""The tactic portfolio: no model, a fixed list of automation tactics tried on every hole.

It is the embedded default prover and a real baseline (what plain automation already
solves). The naive way, one check per (hole, tactic), pays the assistant's start-up for each
try: with Coq every check is a coqc process that re-loads its libraries (0.5-1 s), so 13
tactics with and without `intros` would cost ~26 runs per hole. Instead one *probe* check
tries them all, each under its own time limit, and reports which one closed the goal:

- Coq: the winning branch raises an error that `first` does not catch, so coqc stops there
  and its message names the winner; one probe per hole, the holes before it already filled
  with their winners. The probe is cut into chunks of the tactic list that spare slots of
  the assistant check in parallel (`probe_chunks`): the end of a run is not one long
  failing probe running alone.
- Lean: the winner is named by an info message; Lean goes on after an error, so one probe
  covers every hole. Each try runs under `set_option maxHeartbeats` (heartbeats stand in for
  seconds: Lean has no wall-clock tactic timeout). A try that runs out of heartbeats or of
  recursion depth (Lean) or overflows the stack (Coq) is not caught by `first`/`try` and
  aborts the proof: that tactic is left out and the hole is probed again with the rest
  (`probe`); `params["left_out"]` records, per hole and tactic, what happened.

The scripts and the reading of the answers are in `solvers.probe`. The winners then go, as
plain tactics (no `first`, no timeout), into the task's text, and that candidate is checked
by the strict verifier: one probe (Coq: up to one chunk per slot of the assistant) plus one
verification per task with a single hole, 2-3 coqc runs instead of up to 27. When the verifier rejects it anyway (the kernel check at
`Qed` fails, the proof needs a forbidden axiom, a configured tactic is a forbidden
construct, ...) and the rejection can be pinned to one hole (by line, or by the target whose
axioms are wrong), that hole's winner is left out and the next tactic that closes it is
probed for, at most `MAX_FALLBACKS` times per task; a rejection that names no hole is the
verdict. The portfolio is deterministic, so every sample repeats sample 0
(`deterministic`: a pipeline runs it with one sample).
"""

from __future__ import annotations

import re

from formalbench.checking.holes import HoleSite, fill_holes, find_holes
from formalbench.core.errors import InputError
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Finding,
    Language,
    Reason,
    Severity,
    Task,
    Verdict,
)
from formalbench.solvers.base import Draft, Solver
from formalbench.solvers.probe import MARK, ProbeReport, probe_script, read_probe
from formalbench.solvers.probe_chunks import chunk, chunked_probe

MAX_FALLBACKS = 3  # re-probes after a rejected verification, per task


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

    def probe_script(
        self, language: Language, hole: int, tactics: list[str], skip: set[int] | None = None
    ) -> str:
        """One script that tries `tactics` (but the indices in `skip`) on a goal and names
        the first that closes it."""
        return probe_script(language, hole, tactics, self.config.tactic_timeout, skip or ())

    async def _solve(self, task: Task, sample: int, draft: Draft) -> None:
        language = task.language
        original = task.source_text
        holes = find_holes(original, language)
        tactics = self.variants(language)
        draft.params |= {"tactics": tactics, "tactic_timeout": self.config.tactic_timeout}
        if not tactics:
            raise InputError(f"no portfolio tactics configured for {language.value}")
        search = _Search(self, task, holes, tactics)
        fallbacks = 0
        try:
            while True:
                failure = await search.run()
                if failure is not None and fallbacks:
                    return  # nothing else closes it: the rejected candidate stays the answer
                if failure is not None:
                    draft.code = search.code()
                    hole = holes[len(search.winners)]
                    draft.verdict = self._failed(failure, hole, tactics, language)
                    return
                draft.code = search.code()
                draft.verdict = await self.verify(task, draft.code)
                if draft.verdict.passed or fallbacks >= MAX_FALLBACKS:
                    return
                j = blame(draft.verdict, original, language, holes, search.fills())
                if j is None:
                    return
                fallbacks += 1
                search.reject(j, "the verifier rejected it")
        finally:
            draft.params["probes"] = search.probes
            if search.speculative:
                draft.params["speculative_probes"] = search.speculative
                draft.params["abandoned_probes"] = search.abandoned
            if fallbacks:
                draft.params["fallbacks"] = fallbacks
            if search.left_out:
                draft.params["left_out"] = search.left_out
            draft.outputs.append("\n".join(search.log))

    def _probe_timeout(self, tries: int) -> float:
        base = self.config.check_timeout or float(self.backend.timeout)
        return base + tries * self.config.tactic_timeout

    def _failed(
        self, result: CheckResult, hole: HoleSite, tactics: list[str], language: Language
    ) -> Verdict:
        """The verdict of a task some hole of which no tactic closed, read off the probe."""
        if result.status != CheckStatus.ok:
            reason = {
                CheckStatus.timeout: Reason.timeout,
                CheckStatus.out_of_memory: Reason.out_of_memory,
                CheckStatus.refused: Reason.forbidden_construct,  # the gate (core/gate.py)
            }.get(result.status, Reason.backend_crash)
            return Verdict(
                passed=False,
                reasons=[reason],
                diagnostics=list(result.diagnostics),
                elapsed=result.elapsed,
                backend=result.backend,
            )
        ours = [d for d in result.diagnostics if MARK in d.message]
        others = [d for d in result.errors if MARK not in d.message]
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


class _Search:
    """The probes of one task: which tactic closes each hole, in text order.

    `winners[j]` is the index of the tactic that closed hole j; `skip[j]` holds the tactics
    left out of hole j's next probe (they hit a Lean limit, or their proof was rejected).
    Every round either finds a winner or leaves a tactic out, so the search ends.
    """

    def __init__(
        self, solver: PortfolioSolver, task: Task, holes: list[HoleSite], tactics: list[str]
    ) -> None:
        self.solver = solver
        self.language = task.language
        self.original = task.source_text
        self.holes = holes
        self.tactics = tactics
        self.winners: list[int] = []
        self.skip: list[set[int]] = [set() for _ in holes]
        self.probes = 0  # probe checks started (Coq: every chunk checked counts)
        self.speculative = 0  # Coq chunks started on a spare slot before they were needed
        self.abandoned = 0  # ... and killed because an earlier chunk decided
        self.log: list[str] = []
        self.left_out: list[dict[str, object]] = []  # {hole, tactic, why}, in order

    def fills(self) -> list[str]:
        return [self.solver._with_requires(self.language, self.tactics[k]) for k in self.winners]

    def code(self) -> str:
        return fill_holes(self.original, self.language, self.fills())

    def reject(self, j: int, why: str) -> None:
        """Leave hole j's winner out and search again from hole j."""
        k = self.winners[j]
        del self.winners[j:]
        self._leave_out(j, k, why)

    def _leave_out(self, j: int, k: int, why: str) -> None:
        self.skip[j].add(k)
        self.left_out.append({"hole": j + 1, "tactic": self.tactics[k], "why": why})
        self.log.append(f"hole {j + 1} ({self.holes[j].decl}): {self.tactics[k]} left out: {why}")

    async def _coq_probe(self, j: int) -> tuple[CheckResult, ProbeReport]:
        """Hole j's probe, in chunks that spare slots check in parallel (`probe_chunks`)."""
        tries = [k for k in range(len(self.tactics)) if k not in self.skip[j]]
        backend = self.solver.backend
        chunks = chunk(tries, backend.workers if self.solver.in_tail() else 1)

        def text_for(part: list[int]) -> str:
            left_out = set(range(len(self.tactics))) - set(part)
            script = self.solver.probe_script(self.language, j, self.tactics, left_out)
            fills = [*self.fills(), self.solver._with_requires(self.language, script)]
            return fill_holes(self.original, self.language, fills)

        found = await chunked_probe(backend, j, chunks, text_for, self.solver._probe_timeout)
        self.probes += found.checks
        self.speculative += found.speculative
        self.abandoned += found.abandoned
        return found.result, found.report

    async def run(self) -> CheckResult | None:
        """Probe until every hole has a winner (None) or one has none (the probe's result)."""
        language, holes = self.language, self.holes
        while len(self.winners) < len(holes):
            start = len(self.winners)
            if language == Language.coq:
                result, report = await self._coq_probe(start)
            else:
                todo = range(start, len(holes))
                scripts = [
                    self.solver.probe_script(language, j, self.tactics, self.skip[j]) for j in todo
                ]
                fills = [*self.fills(), *(self.solver._with_requires(language, p) for p in scripts)]
                text = fill_holes(self.original, language, fills)
                tries = max(len(self.tactics) - len(self.skip[j]) for j in todo)
                result = await self.solver.backend.acheck(
                    text, timeout=self.solver._probe_timeout(tries)
                )
                self.probes += 1
                report = read_probe(result, text)
            for j in range(start, len(holes)):
                k = report.wins.get(j)
                if k is None:
                    break
                self.winners.append(k)
                self.log.append(f"hole {j + 1} ({holes[j].decl}): {self.tactics[k]}")
            nxt = len(self.winners)
            if nxt == len(holes):
                break
            blown = {j: k for j, k in report.blown.items() if j >= nxt}
            stuck = nxt == start or language == Language.lean  # the probe reached hole nxt
            if report.wins.get(nxt, -1) is None or (stuck and not blown):
                self.log.append(f"hole {nxt + 1} ({holes[nxt].decl}): no tactic closed it")
                return result
            why = (
                "it overflowed the stack"
                if language == Language.coq
                else "it hit Lean's heartbeat or recursion limit"
            )
            for j, k in sorted(blown.items()):
                self._leave_out(j, k, why)
        return None


def blame(
    verdict: Verdict, original: str, language: Language, holes: list[HoleSite], fills: list[str]
) -> int | None:
    """The hole whose filled-in tactic a rejected verdict points to, if one can be told:
    the first hole that a located error or finding falls in (from the line where its fill
    starts to the line before the next fill), or the holes of a target with a disallowed
    axiom; the only hole when there is one."""
    if Reason.backend_crash in verdict.reasons:
        return None  # the assistant died: no tactic is to blame
    if len(holes) == 1:
        return 0
    starts = [
        find_holes(fill_holes(original, language, fills[:j]), language)[0].line
        for j in range(len(fills))
    ]
    lines = [f.line for f in verdict.findings if f.line is not None]
    lines += [d.line for d in verdict.diagnostics if d.line and d.severity == Severity.error]
    found = [max(j for j, s in enumerate(starts) if s <= n) for n in lines if n >= starts[0]]
    for f in verdict.findings:
        if f.reason == Reason.disallowed_axiom:
            found += [j for j, h in enumerate(holes) if h.decl and h.decl in _named(f)]
    return min(found) if found else None


def _named(finding: Finding) -> set[str]:
    """The declaration names in backquotes in a finding (`t` depends on the axiom `ax`)."""
    return {finding.subject or "", *re.findall(r"`([^`]+)`", finding.message)}
