"""One chain: sample s of model m for a problem, from first translation to judged statement.

A candidate moves through translate -> compile -> (repair -> compile)* -> align, with at
most `repair_rounds` repairs after its translation (IndiMathBench: 6), and is
stored after every step, so a killed run resumes each candidate where it stopped: a round
whose model call was answered but whose compile did not finish is redone from the response
cache, costing no model request. A compiled candidate that the judge finds misaligned is
followed by a fresh translation (`<id>#t1`, ...), up to `retranslations` times; the
misaligned one stays in the store for the reviewer.

A model call that fails for good (endpoint down, budget spent) leaves the candidate with
`error` set and its chain unfinished: the next run picks it up from its last round.
"""

from __future__ import annotations

from formalbench.core.formalization import Candidate, Problem
from formalbench.judge.alignment import judge_alignment
from formalbench.llm.base import BudgetExceededError, ChatModel, ModelCallError
from formalbench.pipelines.formalize.config import FormalizeConfig
from formalbench.pipelines.formalize.session import Session
from formalbench.pipelines.formalize.translate import first_round, repair_round


def candidate_id(problem_id: str, model: str, sample: int, translation: int = 0) -> str:
    base = f"{problem_id}/{model}/{sample}"
    return base if translation == 0 else f"{base}#t{translation}"


def finished(candidate: Candidate, config: FormalizeConfig) -> bool:
    """Nothing more to do on this candidate itself (its chain may go on)."""
    if candidate.error is not None or not candidate.rounds:
        return False
    if candidate.compiled:
        return candidate.alignment is not None
    return len(candidate.rounds) >= config.max_rounds  # the translation and every repair


def retranslate(candidate: Candidate, config: FormalizeConfig) -> bool:
    """True when the judge read and rejected this candidate and tries are left."""
    a = candidate.alignment
    return (
        a is not None
        and a.error is None
        and not a.aligned
        and candidate.translation < config.retranslations
    )


def chain_done(
    stored: dict[str, Candidate], problem_id: str, model: str, sample: int, config: FormalizeConfig
) -> bool:
    """Whether a chain is complete, from the stored candidates alone (for progress counts)."""
    for translation in range(config.retranslations + 1):
        candidate = stored.get(candidate_id(problem_id, model, sample, translation))
        if candidate is None or not finished(candidate, config):
            return False
        if not retranslate(candidate, config):
            return True
    return True


async def run_chain(session: Session, problem: Problem, model: ChatModel, sample: int) -> Candidate:
    """Run (or resume) the chain and return its last candidate."""
    translation = 0
    while True:
        cid = candidate_id(problem.id, model.spec, sample, translation)
        candidate = session.store.candidate(cid) or Candidate(
            id=cid,
            problem_id=problem.id,
            model=model.spec,
            sample=sample,
            language=session.assistant.language,
            translation=translation,
        )
        if not finished(candidate, session.config):
            candidate = await advance(session, problem, model, candidate)
        if candidate.error is None and retranslate(candidate, session.config):
            translation += 1
            continue
        return candidate


async def advance(
    session: Session, problem: Problem, model: ChatModel, candidate: Candidate
) -> Candidate:
    """Take `candidate` as far as it goes, storing it after every step."""
    store, config = session.store, session.config
    candidate = candidate.model_copy(update={"error": None})
    try:
        while not finished(candidate, config):
            if not candidate.rounds:
                step = await first_round(session, problem, model, candidate)
                candidate.rounds = [step]
            elif candidate.compiled:
                alignment, hashes = await judge_alignment(
                    session.judge,
                    informal=problem.informal,
                    solution=problem.solution,
                    decomposition=await session.decomposition(problem),
                    code=candidate.code,
                    assistant=session.assistant.name,
                    fence=session.assistant.fence,
                    **session.judge_options(),
                )
                session.prompt_hashes.update(hashes)
                candidate.alignment = alignment
            else:
                step = await repair_round(session, problem, model, candidate)
                candidate.rounds = [*candidate.rounds, step]
            candidate.prompt_hashes = _hashes(session, candidate)
            store.put_candidate(candidate)
    except (ModelCallError, BudgetExceededError) as exc:
        candidate.error = str(exc)
        store.put_candidate(candidate)
    return candidate


def _hashes(session: Session, candidate: Candidate) -> dict[str, str]:
    """The prompt versions this candidate went through."""
    used = {"translate"}
    if len(candidate.rounds) > 1:
        used.add("repair")
    if candidate.alignment is not None:
        used |= {"align", "decompose", "fix_json"}
    known = {k: v for k, v in session.prompt_hashes.items() if k in used}
    return {**candidate.prompt_hashes, **known}
