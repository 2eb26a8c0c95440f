"""What the dashboard shows of a construct run, read from its `construct.sqlite`.

A construct run is another kind of run the dashboard opens: per exercise the extracted source
with its dependency expansion, every source stage's text and review (component `construct`),
and the packaged file with its blocks, compile rounds and block reviews (component
`construct_formal`). Both components are opened read-only: the dashboard never changes what
the pipeline recorded; the reviewer's decisions go to the review tables (`store.review`)
of the same file, as for a formalize run.

The reviewer edits block bodies only; the file is assembled here from the packaged header,
the pipeline's block comments (immutable, as in the pipeline) and the edited bodies, so a
re-check always checks a whole file, the way the pipeline's final compile does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formalbench.core.construct import ConstructProblem, ExtractedExercise
from formalbench.core.errors import InputError
from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.core.records import Language
from formalbench.dashboard.views import backend_name
from formalbench.pipelines.construct.block_records import BlockStatus, BlockTrail
from formalbench.pipelines.construct.blockfile import SYNTAX, BlockFile, Syntax
from formalbench.pipelines.run_dir import KIND_MARKERS, read_json_object
from formalbench.store.construct import ConstructStore, StepRecord
from formalbench.store.construct_formal import ConstructFormalStore
from formalbench.store.db import StoreError

STORE_NAME = KIND_MARKERS["construct"]
LOG_NAME = "construct.json"  # the run's settings, as `formalbench construct` writes them
STAGES = (
    "problem",
    "problem_clean",
    "problem_with_context",
    "problem_standardized_math",
    "problem_finally",
)


@dataclass(frozen=True)
class ExerciseRow:
    """One line of the exercise list."""

    id: str
    source_idx: str
    preview: str
    usable: bool | None  # None: the source stages have not finished it
    validation: str | None  # the formal stages' status (None: not constructed)
    status: ReviewStatus
    reviewer: str | None


@dataclass
class ExerciseView:
    """One exercise's page: everything the run recorded of it."""

    id: str
    exercise: ExtractedExercise | None
    problem: ConstructProblem | None
    steps: list[StepRecord]
    result: dict[str, Any] | None  # the formal stages' package (see construct.package)
    trails: list[BlockTrail]
    language: Language
    decision: ReviewDecision | None = None
    history: list[ReviewDecision] = field(default_factory=list)

    @property
    def syntax(self) -> Syntax:
        return SYNTAX[self.language]

    @property
    def stages(self) -> list[tuple[str, str | None]]:
        p = self.problem
        return [(name, getattr(p, name) if p else None) for name in STAGES]

    def _files(self) -> dict[str, Any]:
        return self.result["files"] if self.result else {}

    @property
    def metadata(self) -> dict[str, Any]:
        return next(
            (v for k, v in self._files().items() if k.endswith(".json") and ".trail." not in k),
            {},
        )

    @property
    def file_name(self) -> str | None:
        return next((k for k, v in self._files().items() if isinstance(v, str)), None)

    @property
    def packaged(self) -> str:
        """The file as the pipeline packaged it ('' when it packaged none)."""
        name = self.file_name
        return self._files()[name] if name else ""

    @property
    def formal(self) -> list[BlockTrail]:
        """The blocks a reviewer may edit: every block but hints, in index order."""
        return [t for t in self.trails if t.status is not BlockStatus.skipped]

    @property
    def header(self) -> str:
        """The packaged file's header: its text before the first block comment."""
        text = self.packaged
        for t in self.trails:
            if t.code:
                at = text.find("\n" + self.syntax.block_comment(t.block) + "\n")
                return text[:at] if at >= 0 else text
        return text

    def assemble(self, codes: dict[int, str]) -> str:
        """The file with the given block bodies (block index -> code; blank: left out)."""
        parts = [
            (t.block, codes[t.block.index])
            for t in self.formal
            if codes.get(t.block.index, "").strip()
        ]
        return BlockFile(self.syntax, self.header, parts).text

    def start_codes(self) -> dict[int, str]:
        """What the block editors start with: the decided file's bodies, else the packaged."""
        if self.decision is not None and self.decision.code is not None:
            found = split_bodies(self, self.decision.code)
            if found is not None:
                return found
        return {t.block.index: t.code.rstrip("\n") for t in self.formal}


def split_bodies(view: ExerciseView, text: str) -> dict[int, str] | None:
    """The block bodies of a file assembled from this exercise's blocks (None: the text was
    not made that way, e.g. a whole file written by hand)."""
    marks = [(t.block.index, "\n" + view.syntax.block_comment(t.block) + "\n") for t in view.formal]
    found = [(i, text.find(m), m) for i, m in marks if m in text]
    if not text.startswith(view.header) or not found and text != view.header:
        return None
    found.sort(key=lambda x: x[1])
    codes = {t.block.index: "" for t in view.formal}
    for n, (index, at, mark) in enumerate(found):
        end = found[n + 1][1] if n + 1 < len(found) else len(text)
        codes[index] = text[at + len(mark) : end].rstrip("\n")
    return codes if view.assemble(codes) == text else None


class ConstructRun:
    """A construct run folder opened for review; thread-safe like its stores."""

    def __init__(self, run_dir: str | Path) -> None:
        self.root = Path(run_dir)
        path = self.root / STORE_NAME
        if not path.is_file():
            raise InputError(f"{run_dir!s}: no {STORE_NAME} here; not a construct run")
        try:
            self.source = ConstructStore(path, readonly=True)
        except StoreError as exc:  # its message names the file
            raise InputError(str(exc)) from None
        try:
            self.formal: ConstructFormalStore | None = ConstructFormalStore(path, readonly=True)
        except StoreError:  # the formal stages have not run yet
            self.formal = None
        self.settings = _settings(self.root)

    def language(self) -> Language:
        """The run's assistant: its settings say it, else its packaged files do."""
        name = backend_name(self.settings, None)
        if name is not None and name in Language.__members__:
            return Language(name)
        for result in self.formal.results() if self.formal else []:
            if any(k.endswith(".lean") for k in result["files"]):
                return Language.lean
        return Language.coq

    def rows(self, statuses: dict[str, tuple[ReviewStatus, str, str]]) -> list[ExerciseRow]:
        problems = {p.id: p for p, _ in self.source.problems()}
        formal = self.formal.statuses() if self.formal else {}
        rows = []
        for ex in self.source.exercises():
            problem = problems.get(ex.id)
            status, reviewer, _ = statuses.get(ex.id, (ReviewStatus.unreviewed, None, None))
            rows.append(
                ExerciseRow(
                    id=ex.id,
                    source_idx=ex.source_idx,
                    preview=_preview(problem.problem_finally if problem else None, ex.text),
                    usable=problem.usable if problem else None,
                    validation=None if formal.get(ex.id) in (None, "pending") else formal[ex.id],
                    status=status,
                    reviewer=reviewer,
                )
            )
        return rows

    def exercise(self, exercise_id: str) -> ExerciseView | None:
        exercise = next((e for e in self.source.exercises() if e.id == exercise_id), None)
        problem = self.source.problem(exercise_id)
        if exercise is None and problem is None:
            return None
        result = self.formal.result(exercise_id) if self.formal else None
        trail: dict[str, Any] = next(
            (v for k, v in (result or {}).get("files", {}).items() if k.endswith(".trail.json")),
            {},
        )
        trails = [BlockTrail.model_validate(b) for b in trail.get("blocks", [])]
        return ExerciseView(
            id=exercise_id,
            exercise=exercise,
            problem=problem,
            steps=[s for _, s in self.source.steps(exercise_id)],
            result=result,
            trails=trails,
            language=self.language(),
        )

    def close(self) -> None:
        self.source.close()
        if self.formal is not None:
            self.formal.close()


def _settings(root: Path) -> dict[str, Any]:
    path = root / LOG_NAME
    if not path.is_file():
        return {}
    return read_json_object(path)


def _preview(text: str | None, fallback: str, limit: int = 240) -> str:
    value = " ".join((text or fallback or "").split())
    return value if len(value) <= limit else value[:limit].rstrip() + "…"
