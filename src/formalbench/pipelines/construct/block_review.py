"""Step 10 (Algorithm 3 of CAM-Bench): review a compiled block, rewrite it, recompile it.

Up to S rounds per block: the reviewer compares the block's code with its informal content
and returns the structured report (`BlockReview`); `usable` accepts the block. Otherwise the
model rewrites the block from the report and the block's history (the last `history` failed
attempts: code, error signature, the review they answered, why they were refused). A rewrite
is refused before it is compiled when it changes nothing, when the token-level comparison of
its theorems with the reviewed version finds a loss (`weakening`), or when the model judges
that it weakens the statement in a way the tokens cannot show. An accepted rewrite that does
not compile goes to compile repair (budget R) with the report as a constraint: the fix must
be kept (the repaired version is compared with the reviewed one again). A version that
compiles replaces the block and is reviewed next round; one that never compiles ends the
block's review (the last compiled version stays in the file, marked not accepted).
"""

from __future__ import annotations

from dataclasses import dataclass

from formalbench.core.construct import ConstructProblem
from formalbench.pipelines.construct.block_records import (
    Block,
    BlockReview,
    BlockStatus,
    ReviewRound,
    WeakeningVerdict,
)
from formalbench.pipelines.construct.block_session import Session
from formalbench.pipelines.construct.blockfile import (
    BlockFile,
    FormatProblem,
    extract_code,
    signature,
)
from formalbench.pipelines.construct.translate import block_vars, check_code, repair_loop
from formalbench.pipelines.construct.weakening import weakening_findings


@dataclass
class Attempt:
    """One failed rewrite, as the history shows it to the next rewrite."""

    round: int
    code: str
    error: str = ""
    review: str = ""
    rejected: str = ""


@dataclass
class ReviewOutcome:
    status: BlockStatus
    code: str  # the version in the file
    rounds: list[ReviewRound]
    failure: str | None = None


def _summary(review: BlockReview) -> str:
    issues = "; ".join(f"{i.severity.value} {i.issue_type}: {i.reason}" for i in review.issues)
    return f"{review.overall_status.value}" + (f" ({issues})" if issues else "")


def _history_text(history: list[Attempt], keep: int) -> str:
    out: list[str] = []
    for a in history[-keep:] if keep > 0 else []:
        lines = [f"Attempt of round {a.round}:", a.code.strip("\n")]
        if a.error:
            lines.append(f"  compile error: {a.error}")
        if a.review:
            lines.append(f"  review it answered: {a.review}")
        if a.rejected:
            lines.append(f"  refused because: {a.rejected}")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _constraint(review: BlockReview) -> str:
    fixes = [i.suggested_fix or i.reason for i in review.issues if i.suggested_fix or i.reason]
    head = review.top_priority_fix or (fixes[0] if fixes else "")
    rest = "\n".join(f"- {f}" for f in fixes)
    return f"{head}\n{rest}".strip()


async def review_block(
    session: Session,
    problem: ConstructProblem,
    bfile: BlockFile,
    block: Block,
    code: str,
) -> ReviewOutcome:
    """Algorithm 3 for one block whose compiled `code` follows the frozen prefix."""
    rounds: list[ReviewRound] = []
    history: list[Attempt] = []
    keep = session.config.history
    language = session.syntax.language
    for number in range(1, session.config.review_rounds + 1):
        vars_ = block_vars(session, problem, bfile, block)
        messages = session.prompt("review", **vars_, code=code.strip("\n"))
        report = await session.ask_structured(
            problem.id, f"review:{block.index}", messages, BlockReview
        )
        current = ReviewRound(round=number, code=code, review=report.value)
        rounds.append(current)
        review = report.value
        if review is None:
            current.review_error = report.error
            current.outcome = "unreadable"
            return ReviewOutcome(
                BlockStatus.review_failed, code, rounds, f"review unreadable: {report.error}"
            )
        if review.usable:
            current.outcome = "accepted"
            return ReviewOutcome(BlockStatus.accepted, code, rounds)
        messages = session.prompt(
            "rewrite",
            **vars_,
            code=code.strip("\n"),
            review=review.model_dump_json(indent=2),
            history=_history_text(history, keep),
        )
        text, usage = await session.ask(problem.id, f"rewrite:{block.index}", messages)
        try:
            new = extract_code(text, session.syntax, block)
        except FormatProblem as exc:
            current.rejected = [f"no code: {exc}"]
            current.outcome = "rejected"
            history.append(Attempt(number, text[:2000], review=_summary(review), rejected=str(exc)))
            continue
        current.rewrite = new
        reasons = await _refusals(session, problem, block, code, new, review)
        if reasons:
            current.rejected = reasons
            current.outcome = "rejected"
            history.append(
                Attempt(number, new, review=_summary(review), rejected="; ".join(reasons))
            )
            continue
        compiled = await check_code(
            session, bfile, block, new, stage="rewrite", number=number, tokens=usage
        )
        current.compiles.append(compiled)
        if not compiled.compiled:
            history.append(
                Attempt(number, new, error=signature(compiled.diagnostics), review=_summary(review))
            )
            repairs = await repair_loop(
                session,
                problem,
                bfile,
                block,
                compiled,
                stage="rewrite_repair",
                constraint=_constraint(review),
                history=_history_text(history, keep),
                keep=compiled,
            )
            current.compiles.extend(repairs)
            if not repairs or not repairs[-1].compiled:
                current.outcome = "compile_failed"
                return ReviewOutcome(
                    BlockStatus.review_failed,
                    code,
                    rounds,
                    f"round {number}: the rewrite did not compile within "
                    f"{session.config.repair_rounds} repairs",
                )
            compiled = repairs[-1]
            lost = weakening_findings(code, compiled.code, language, review)
            if lost:
                current.rejected = lost
                current.outcome = "rejected"
                history.append(
                    Attempt(
                        number, compiled.code, review=_summary(review), rejected="; ".join(lost)
                    )
                )
                continue
        current.outcome = "recompiled"
        code = compiled.code
    return ReviewOutcome(
        BlockStatus.review_failed,
        code,
        rounds,
        f"not reviewed usable within {session.config.review_rounds} rounds",
    )


async def _refusals(
    session: Session,
    problem: ConstructProblem,
    block: Block,
    before: str,
    after: str,
    review: BlockReview,
) -> list[str]:
    """Why the rewrite `after` of `before` is refused (empty: it may be compiled)."""
    if after.strip() == before.strip():
        return ["the rewrite changes nothing"]
    found = weakening_findings(before, after, session.syntax.language, review)
    if found:
        return found
    messages = session.prompt(
        "weakening",
        kind=block.kind.value,
        content=block.content,
        before=before.strip("\n"),
        after=after.strip("\n"),
        review=_summary(review),
    )
    verdict = await session.ask_structured(
        problem.id, f"weakening:{block.index}", messages, WeakeningVerdict
    )
    if verdict.value is None:
        return [f"the weakening judgement could not be read ({verdict.error})"]
    if verdict.value.weakens:
        return [f"judged weaker than the reviewed version: {verdict.value.reason}"]
    return []
