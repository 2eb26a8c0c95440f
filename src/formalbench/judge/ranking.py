"""The ensemble's summary of one problem: its candidates ranked, each with what it got wrong.

IndiMathBench's reviewers worked about twice as fast with such a summary: it points at the
best candidate and at the part another candidate got right. Sampling at temperature 1.0
makes many candidates identical, so the judge sees each distinct statement once (with the
models and samples that produced it) and every candidate gets its statement's rank and
verdict. Candidates that produced no code are ranked last without being shown.

When the judge's reply stays unreadable, the summary still ranks every candidate by what is
known (compiled and aligned, compiled, the rest) and says so in `error`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from formalbench.core.formalization import (
    Candidate,
    Decomposition,
    Problem,
    ProblemSummary,
    RankedCandidate,
)
from formalbench.core.records import Severity
from formalbench.judge.reply import lenient_text
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt
from formalbench.llm.structured import ask_structured

PROMPT = "judge_rank"
NO_CODE = "produced no code to rank"
NOT_RANKED = "not ranked by the judge"


@dataclass
class Group:
    """One distinct statement and the candidates that produced it."""

    key: str
    code: str
    members: list[Candidate] = field(default_factory=list)

    @property
    def first(self) -> Candidate:
        return self.members[0]

    @property
    def aligned(self) -> bool | None:
        a = self.first.alignment
        return None if a is None or a.error else a.aligned

    def known_order(self) -> tuple[int, int]:
        """Best first by what the pipeline knows: compiled and aligned, compiled, the rest."""
        if not self.first.compiled:
            return (3, 0)
        return ({True: 0, None: 1, False: 2}[self.aligned], 0)


def model_name(spec: str) -> str:
    """`openai:gpt-x@http://host/v1` -> `openai:gpt-x` (endpoints make poor labels); a
    replay of one model's recording, `replay:FILE#openai:gpt-x`, is named as that model, so
    that the prompts that name models (the ranking's) are those of the recorded run."""
    if spec.startswith("replay:") and "#" in spec:
        spec = spec.partition("#")[2]
    return spec.split("@http", 1)[0]


def model_labels(specs: Iterable[str]) -> dict[str, str]:
    """A label for each spec: the short name where no other spec has the same one, else the
    whole spec (two servers of one model name are two ensemble members, not one)."""
    unique = list(dict.fromkeys(specs))
    shorts = Counter(model_name(s) for s in unique)
    return {s: model_name(s) if shorts[model_name(s)] == 1 else s for s in unique}


def group_candidates(candidates: Sequence[Candidate]) -> tuple[list[Group], list[Candidate]]:
    """Distinct statements (whitespace-insensitive) in first-seen order, and code-less ones."""
    groups: dict[str, Group] = {}
    empty: list[Candidate] = []
    for c in candidates:
        code = c.code.strip()
        if not code:
            empty.append(c)
            continue
        norm = " ".join(code.split())
        if norm not in groups:
            groups[norm] = Group(key=f"C{len(groups) + 1}", code=code)
        groups[norm].members.append(c)
    return list(groups.values()), empty


def _errors(candidate: Candidate, limit: int = 3) -> str:
    if candidate.compiled or not candidate.rounds:
        return ""
    last = candidate.rounds[-1]
    if last.format_failure:
        return f"- {last.format_failure}"
    errors = [d for d in last.diagnostics if d.severity == Severity.error][:limit]
    return "\n".join(
        f"- {'line ' + str(d.line) + ': ' if d.line else ''}{d.message.strip()[:300]}"
        for d in errors
    )


def _rank_number(value: Any) -> Any:
    """A rank given as text or as a float ("2", 2.0) is the whole number it names."""
    if isinstance(value, bool):
        return value  # refused by the int field
    if isinstance(value, str | float):
        try:
            return int(float(value))
        except ValueError:
            return value
    return value


class RankEntry(BaseModel):
    candidate: Annotated[str, BeforeValidator(lenient_text)]
    rank: Annotated[int, BeforeValidator(_rank_number)]
    verdict: Annotated[str, BeforeValidator(lenient_text)] = ""


class RankingReply(BaseModel):
    """The judge's answer: the candidates best first, each with a verdict, and a summary."""

    ranking: list[RankEntry] = Field(min_length=1)
    summary: Annotated[str, BeforeValidator(lenient_text)] = ""

    def named(self, keys: set[str]) -> list[tuple[str, int, str]]:
        """(key, rank, verdict) of the entries that name a candidate, each key once."""
        ranked: list[tuple[str, int, str]] = []
        for entry in self.ranking:
            key = entry.candidate.strip()
            if key in keys and all(key != k for k, _, _ in ranked):
                ranked.append((key, entry.rank, entry.verdict))
        return ranked


def _names_one_of(keys: set[str]) -> Callable[[RankingReply], None]:
    def check(reply: RankingReply) -> None:
        if not reply.named(keys):
            raise ValueError(f"the ranking names none of the candidates {', '.join(sorted(keys))}")

    return check


async def rank_candidates(
    model: ChatModel,
    problem: Problem,
    candidates: Sequence[Candidate],
    *,
    decomposition: Decomposition | None,
    assistant: str,
    fence: str,
    retries: int = 2,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> ProblemSummary:
    """Rank `candidates` of `problem` with `model` as judge (no call when nothing to rank)."""
    groups, empty = group_candidates(candidates)
    if not groups:
        return _summary(problem, [], empty, "no candidate produced code", None, None)
    prompt = load_prompt(PROMPT)
    labels = model_labels(c.model for c in candidates)
    shown = [
        {
            "key": g.key,
            "sources": ", ".join(f"{labels[c.model]} sample {c.sample}" for c in g.members),
            "compiled": g.first.compiled,
            "aligned": g.aligned,
            "code": g.code,
            "errors": _errors(g.first),
        }
        for g in groups
    ]
    messages = prompt.render(
        informal=problem.informal,
        solution=problem.solution or "",
        decomposition=decomposition.model_dump() if decomposition else None,
        candidates=shown,
        assistant=assistant,
        fence=fence,
    )
    keys = {g.key for g in groups}
    outcome = await ask_structured(
        model,
        messages,
        RankingReply,
        check=_names_one_of(keys),
        retries=retries,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    by_key = {g.key: g for g in groups}
    if outcome.value is None:
        order = sorted(groups, key=lambda g: g.known_order())
        verdicts = [(g, NOT_RANKED) for g in order]
        return _summary(problem, verdicts, empty, "", model.spec, outcome.error)
    ranked, text = outcome.value.named(keys), outcome.value.summary
    ranked.sort(key=lambda item: item[1])  # stable: ties keep the judge's order
    verdicts = [(by_key[key], verdict) for key, _, verdict in ranked]
    named = {key for key, _, _ in ranked}
    verdicts += [(g, NOT_RANKED) for g in groups if g.key not in named]
    return _summary(problem, verdicts, empty, text, model.spec, None)


def _summary(
    problem: Problem,
    verdicts: list[tuple[Group, str]],
    empty: list[Candidate],
    text: str,
    model: str | None,
    error: str | None,
) -> ProblemSummary:
    ranking: list[RankedCandidate] = []
    for rank, (group, verdict) in enumerate(verdicts, start=1):
        ranking += [
            RankedCandidate(candidate_id=c.id, rank=rank, verdict=verdict) for c in group.members
        ]
    last = len(verdicts) + 1
    ranking += [RankedCandidate(candidate_id=c.id, rank=last, verdict=NO_CODE) for c in empty]
    keys = {g.key: [c.id for c in g.members] for g, _ in verdicts}
    return ProblemSummary(
        problem_id=problem.id, ranking=ranking, text=text, model=model, error=error, keys=keys
    )
