"""Whole-proof sampling: one model call per sample, the answer verified as it is.

This is the pass@k baseline of CAM-Bench, AMBER and FMC: the model sees the formal
statement (and the informal one when the task has it) and answers with complete proofs;
n independent samples per task give pass@k by the unbiased estimator. Sample i calls the
model with seed=i, so the response cache keeps one entry per sample and a resumed run
replays each of them. Temperature defaults to 1.0 (diverse samples).

The answer's proofs go into the task's own text (`candidate.from_answer`): a restated or
altered statement in the answer is discarded, so the verifier judges the original theorem.
"""

from __future__ import annotations

from formalbench.core.records import Task
from formalbench.solvers.base import Draft, Solver
from formalbench.solvers.candidate import from_answer

PROMPT = "solver_whole"


class WholeProofSolver(Solver):
    name = "whole"
    default_temperature = 1.0

    async def _solve(self, task: Task, sample: int, draft: Draft) -> None:
        messages = self.prompt(draft, PROMPT).render(**self.prompt_vars(task))
        completion = await self.generate(draft, messages, seed=sample, label="answer")
        draft.code = from_answer(task.source_text, task.language, completion.text)
        draft.verdict = await self.verify(task, draft.code)
