"""Steps 3 and 4: translate a problem into a statement, compile it, repair it from the errors.

Round 1 of a candidate is a translation: the first translation of each model comes from one
request for all k samples (FMC samples 5 at temperature 1.0); a re-translation after a
failed alignment check is a fresh request with the very same prompt (the judgement is never
shown: FMC found that feeding semantic errors back made translations worse) and its own
seed. Rounds 2.. are repairs, up to `repair_rounds` of them (IndiMathBench: 6 after the
translation), each fed with the assistant's messages about the previous round (the
self-debug loop). Every round is compiled on the backend's pool.
"""

from __future__ import annotations

from formalbench.core.formalization import Candidate, CompileRound, Problem
from formalbench.core.records import Diagnostic
from formalbench.llm.base import ChatModel, Completion, Message
from formalbench.llm.prompts import load_prompt
from formalbench.pipelines.formalize.context import choose_fewshot, context_text
from formalbench.pipelines.formalize.session import Session
from formalbench.pipelines.formalize.statement import (
    FormatProblem,
    describe,
    extract_statement,
    result_diagnostics,
    static_diagnostics,
)

TRANSLATE = "formalize_translate"
REPAIR = "formalize_repair"
SEED_STRIDE = 1000  # seeds of re-translation t of sample s: t * SEED_STRIDE + s
_RAW_SHOWN = 4000


def _problem_vars(session: Session, problem: Problem) -> dict[str, str]:
    """What the translation and the repair prompts both show: the assistant and the problem."""
    category = problem.category or "other"
    return {
        "assistant": session.assistant.name,
        "fence": session.assistant.fence,
        "hole": session.assistant.hole,
        "informal": problem.informal,
        "solution": problem.solution or "",
        "category": category,
        "context": context_text(session.store, category),
    }


def translate_messages(session: Session, problem: Problem) -> list[Message]:
    prompt = load_prompt(TRANSLATE)
    session.prompt_hashes["translate"] = prompt.hash
    examples = choose_fewshot(session.fewshot, problem, session.config.fewshot)
    return prompt.render(
        **_problem_vars(session, problem),
        examples=[
            {"informal": e.informal, "solution": e.solution or "", "formal": e.formal.strip()}
            for e in examples
        ],
    )


def repair_messages(session: Session, problem: Problem, last: CompileRound) -> list[Message]:
    prompt = load_prompt(REPAIR)
    session.prompt_hashes["repair"] = prompt.hash
    if last.format_failure:
        previous = last.raw_output.strip()[:_RAW_SHOWN]
        errors = f"- {last.format_failure}; put the whole file in one `{session.assistant.fence}` code block"
    else:
        previous = last.code.strip("\n")
        errors = describe(last.diagnostics, last.code)
    return prompt.render(
        **_problem_vars(session, problem),
        previous=previous,
        errors=errors,
        repair=last.round,  # round 2 is the first repair
        repairs=session.config.repair_rounds,
    )


async def first_round(
    session: Session, problem: Problem, model: ChatModel, candidate: Candidate
) -> CompileRound:
    """Round 1: the sample's share of the batch, or a fresh re-translation."""
    if candidate.translation == 0:
        batch = await session.first_translations(
            problem, model, lambda: translate_messages(session, problem)
        )
        if candidate.sample < len(batch):
            return await compile_round(session, 1, batch[candidate.sample])
    seed = candidate.translation * SEED_STRIDE + candidate.sample
    completion = (
        await model.generate(
            translate_messages(session, problem),
            n=1,
            temperature=session.config.temperature,
            max_tokens=session.config.max_tokens,
            seed=seed,
        )
    )[0]
    return await compile_round(session, 1, completion)


async def repair_round(
    session: Session, problem: Problem, model: ChatModel, candidate: Candidate
) -> CompileRound:
    last = candidate.rounds[-1]
    completion = (
        await model.generate(
            repair_messages(session, problem, last),
            n=1,
            temperature=session.config.temperature,
            max_tokens=session.config.max_tokens,
            seed=candidate.translation * SEED_STRIDE + candidate.sample,
        )
    )[0]
    return await compile_round(session, last.round + 1, completion)


async def compile_round(session: Session, number: int, completion: Completion) -> CompileRound:
    """Read the statement out of a reply and compile it; a reply with no code is a
    formatting failure and is not compiled."""
    text, usage = completion.text, completion.usage
    try:
        code = extract_statement(completion.text, session.assistant)
    except FormatProblem as exc:
        return CompileRound(
            round=number,
            raw_output=text,
            tokens=usage,
            code="",
            compiled=False,
            format_failure=str(exc),
        )
    static = static_diagnostics(code, session.assistant)
    result = await session.backend.acheck(code, timeout=session.config.timeout)
    diagnostics: list[Diagnostic] = static + result_diagnostics(result, session.config.timeout)
    compiled = result.compiled and not static
    return CompileRound(
        round=number,
        raw_output=text,
        tokens=usage,
        code=code,
        compiled=compiled,
        diagnostics=diagnostics,
    )
