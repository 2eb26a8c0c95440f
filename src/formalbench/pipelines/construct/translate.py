"""Step 9 (Algorithm 2 of CAM-Bench): translate one block after a frozen prefix, repair it.

The block's comment is fixed in the file and the earlier blocks are frozen context; the
model writes only the current block's code. Each candidate is checked as text first
(`blockfile.block_problems`), then the whole file `prefix + code` is compiled by the
assistant; on failure the diagnostics (lines counted from the block) go back to the model
for up to R repair rounds, each replacing only the current block. `repair_loop` is shared
with the semantic stage, where a repair must also keep the semantic fix (`constraint`).
"""

from __future__ import annotations

from formalbench.core.construct import ConstructProblem
from formalbench.core.records import Diagnostic, Severity, TokenUsage
from formalbench.llm.base import Message
from formalbench.pipelines.construct.block_records import Block, CompileRound
from formalbench.pipelines.construct.block_session import Session
from formalbench.pipelines.construct.blockfile import (
    BlockFile,
    FormatProblem,
    block_problems,
    describe,
    extract_code,
    relative,
)
from formalbench.pipelines.construct.blocks import statement_of
from formalbench.pipelines.construct.fewshot import for_repair, for_translation

_RAW_SHOWN = 3000


def block_vars(
    session: Session, problem: ConstructProblem, bfile: BlockFile, block: Block
) -> dict[str, object]:
    """What every block prompt shows: the exercise, the block, the frozen context."""
    return {
        "statement": statement_of(problem),
        "kind": block.kind.value,
        "term": block.term or "",
        "content": block.content,
        "context": bfile.text.strip("\n"),
        "comment": session.syntax.block_comment(block),
    }


async def check_code(
    session: Session,
    bfile: BlockFile,
    block: Block,
    code: str,
    *,
    stage: str,
    number: int,
    tokens: TokenUsage,
) -> CompileRound:
    """Text checks, then the assistant on the whole file; diagnostics relative to the block."""
    round_ = CompileRound(stage=stage, round=number, code=code, compiled=False, tokens=tokens)
    problems = block_problems(code, block.kind, session.syntax)
    if problems:
        return round_.model_copy(update={"diagnostics": problems})
    prefix = bfile.prefix(block)
    result = await session.compile(bfile.candidate(prefix, code))
    diagnostics = relative(result.diagnostics, bfile.body_start_line(block))
    if not result.compiled and not result.errors:
        status = result.status.value
        detail = f": {result.detail.strip()[:300]}" if result.detail else ""
        diagnostics.append(
            Diagnostic(severity=Severity.error, message=f"the check stopped ({status}){detail}")
        )
    return round_.model_copy(update={"compiled": result.compiled, "diagnostics": diagnostics})


async def _reply_round(
    session: Session, problem: ConstructProblem, bfile: BlockFile, block: Block,
    purpose: str, messages: list[Message], *, stage: str, number: int,
) -> CompileRound:  # fmt: skip
    text, usage = await session.ask(problem.id, purpose, messages)
    try:
        code = extract_code(text, session.syntax, block)
    except FormatProblem as exc:
        return CompileRound(
            stage=stage, round=number, code="", compiled=False, format_failure=str(exc),
            tokens=usage,
        )  # fmt: skip
    return await check_code(session, bfile, block, code, stage=stage, number=number, tokens=usage)


async def translate_block(
    session: Session, problem: ConstructProblem, bfile: BlockFile, block: Block
) -> list[CompileRound]:
    """Algorithm 2 for one block: translation, then up to R repairs. The last round of the
    list is the block's fate (compiled or not)."""
    shots = for_translation(session.examples, block, session.config.fewshot)
    messages = session.prompt(
        "translate",
        **block_vars(session, problem, bfile, block),
        examples=[e.model_dump(mode="json") for e in shots],
    )
    first = await _reply_round(
        session, problem, bfile, block, f"translate:{block.index}", messages,
        stage="translate", number=0,
    )  # fmt: skip
    if first.compiled:
        return [first]
    return [first, *await repair_loop(session, problem, bfile, block, first, stage="repair")]


async def repair_loop(
    session: Session,
    problem: ConstructProblem,
    bfile: BlockFile,
    block: Block,
    failed: CompileRound,
    *,
    stage: str,
    constraint: str = "",
    history: str = "",
    keep: CompileRound | None = None,
) -> list[CompileRound]:
    """Up to R repairs from the diagnostics of `failed`; stops at the first that compiles.
    `keep` is the last version with code, shown when `failed` was a reply with no code."""
    rounds: list[CompileRound] = []
    last = failed
    with_code = failed if failed.code else keep
    for number in range(1, session.config.repair_rounds + 1):
        if last.format_failure:
            previous = with_code.code if with_code else ""
            errors = (
                f"- your last answer could not be used: {last.format_failure}; answer with the "
                f"block's code in one `{session.syntax.fence}` code block"
            )
        else:
            previous = last.code
            errors = describe(last.diagnostics, last.code)
        shots = for_repair(session.examples, block, errors, session.config.fewshot)
        messages = session.prompt(
            "repair",
            examples=[e.model_dump(mode="json") for e in shots],
            **block_vars(session, problem, bfile, block),
            previous=previous.strip("\n"),
            errors=errors,
            repair=number,
            repairs=session.config.repair_rounds,
            constraint=constraint,
            history=history,
        )
        purpose = f"{stage}:{block.index}"
        current = await _reply_round(
            session, problem, bfile, block, purpose, messages, stage=stage, number=number
        )
        rounds.append(current)
        if current.compiled:
            break
        last = current
        if current.code:
            with_code = current
    return rounds
