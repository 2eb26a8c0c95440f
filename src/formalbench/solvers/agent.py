"""Agentic proof search: a tool loop with a turn limit (CAM-Bench / FormalProofBench style).

The model works in turns (at most `max_turns`, default 40). Each reply ends with one fenced
block whose tag is the action (the protocol is spelled out to the model in the prompt
`solver_agent`; what each tool does is in `solvers.tools`):

- `search`: words or a name; answered from the task file's own declarations and an offline
  index of the library's sources (`solvers.search`): Coq's standard library and packages
  under `coqc -where`, or the Lake project's `.lean` files for Lean;
- `check`: a free snippet (`Check foo.`, `#check foo`, a `Goal`/`example` left open) run
  after the task's context without the strict verifier; its messages, the types of Coq
  `Check` terms and the goals where it stops come back;
- `run`: a proof (for the target, or the whole file); it is put into the task's text and
  strictly verified, and the verdict's messages come back with the offending lines and the
  goals at the failing step;
- `submit`: the final proof; it ends the loop.

Every tool result returns as the next user turn (`solver_agent_observation`), cut to
`observation_chars`. A reply without exactly one action block is answered with a reminder
of the protocol and costs its turn. Whatever the model submits goes into the unchanged
statement (`candidate.from_code`) and through the strict verifier; an agent that never
submits fails with an empty candidate (the taxonomy counts that as incomplete output).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from formalbench.core.records import Diagnostic, Language, Severity, Task, Verdict
from formalbench.llm.base import ChatModel, Message
from formalbench.solvers.base import Draft, Solver, SolverConfig
from formalbench.solvers.candidate import from_code
from formalbench.solvers.extract import code_blocks
from formalbench.solvers.search import DeclarationIndex, default_roots
from formalbench.solvers.tools import AgentTools

if TYPE_CHECKING:
    from formalbench.checking.verifier import StrictVerifier

PROMPT = "solver_agent"
OBSERVATION = "solver_agent_observation"
ACTIONS = ("search", "check", "run", "submit")


def parse_action(reply: str) -> tuple[str, str] | None:
    """The (action, body) of a reply: its last block tagged with an action."""
    blocks = [b for b in code_blocks(reply) if b.tag in ACTIONS]
    if not blocks:
        return None
    return blocks[-1].tag, blocks[-1].body.strip("\n")


class AgentSolver(Solver):
    name = "agent"
    default_temperature = 0.4
    default_max_turns = 40

    def __init__(
        self, verifier: StrictVerifier, model: ChatModel | None, config: SolverConfig | None = None
    ) -> None:
        super().__init__(verifier, model, config)
        self._indexes: dict[Language, DeclarationIndex] = {}

    def index(self, language: Language) -> DeclarationIndex:
        """The declaration index of `language`'s library (built on first use)."""
        if language not in self._indexes:
            roots: list[Path | str] = list(self.config.search_paths)
            if not roots:
                toolchain = getattr(self.backend, "toolchain", None)
                roots = list(default_roots(language, getattr(toolchain, "project_dir", None)))
            self._indexes[language] = DeclarationIndex(roots, language)
        return self._indexes[language]

    async def _solve(self, task: Task, sample: int, draft: Draft) -> None:
        language = task.language
        draft.params["max_turns"] = self.max_turns
        index = self.index(language)
        library = ", ".join(str(r) for r in index.roots) or "no library sources (none found)"
        messages: list[Message] = self.prompt(draft, PROMPT).render(
            **self.prompt_vars(task),
            max_turns=self.max_turns,
            search_results=self.config.search_results,
            library=f"the sources of the library ({library})",
        )
        observe = self.prompt(draft, OBSERVATION)
        tools = AgentTools(self, task, index)
        actions: list[str] = []
        submitted: str | None = None
        for turn in range(self.max_turns):
            completion = await self.generate(draft, messages, seed=sample, label=f"turn {turn + 1}")
            messages.append(Message(role="assistant", content=completion.text))
            parsed = parse_action(completion.text)
            action = parsed[0] if parsed else "none"
            actions.append(action)
            if parsed and action == "submit":
                submitted = parsed[1]
                break
            left = self.max_turns - turn - 1
            if left == 0:
                break  # no turn is left to read a tool's answer
            if parsed is None:
                result = "End your reply with one ```search, ```check, ```run or ```submit block."
            elif action == "search":
                result = await tools.search(parsed[1])
            elif action == "check":
                result = await tools.check(parsed[1])
            else:
                result = await tools.run(parsed[1])
            text = result[: self.config.observation_chars]
            messages += observe.render(action=action, result=text, turns_left=left)
        draft.params["actions"] = actions
        if submitted is None:
            draft.verdict = Verdict(
                passed=False,
                static_only=True,
                diagnostics=[
                    Diagnostic(
                        severity=Severity.error,
                        message=f"the agent did not submit a proof in {self.max_turns} turns",
                        kind="incomplete",
                    )
                ],
            )
            return
        draft.code = from_code(task.source_text, language, submitted)
        draft.verdict = await self.verify(task, draft.code)
