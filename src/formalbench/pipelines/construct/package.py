"""Step 11: package an exercise — its file, metadata, trail, and its task record.

Per exercise, in `run_dir/instances/`:
- `<stem>.v` / `<stem>.lean`: the header, then each formal block under its block comment;
  holes only in theorem proofs (the text checks of every block made sure of that);
- `<stem>.json`: metadata — source, informal statement, block ids and statuses, validation
  status, construction statistics, the final compile;
- `<stem>.trail.json`: diagnostics of every compile round, review reports, repair and
  rewrite histories, failure records.

A *task* (`core.records.Task`, one line of `run_dir/tasks.jsonl`) is made for an exercise
whose file compiles, whose formal blocks all compiled and were all reviewed usable (or, with
`tasks_from_unreviewed`, compiled but not all accepted), and which holds at least one hole.
The header (imports) is kept apart from `formal` as the task format expects; `metadata`
carries the hole count and the theorem names so that an evaluator can require every hole
filled and the whole file verified.

`package` returns everything as data (stored with the exercise's result); `write_package`
writes it, so a resumed run rewrites the files of finished exercises from the store.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from formalbench.core.construct import ConstructProblem
from formalbench.core.errors import InputError
from formalbench.core.records import CheckResult, Informal, Task, TaskKind
from formalbench.pipelines.construct.block_records import Block, BlockStatus, BlockTrail
from formalbench.pipelines.construct.blockfile import BlockFile, hole_count
from formalbench.pipelines.construct.blocks import statement_of

VALIDATED = "validated"
REVIEW_FAILED = "review_failed"
COMPILE_FAILED = "compile_failed"
SPLIT_FAILED = "split_failed"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")


def stem_of(problem_id: str) -> str:
    """A file name stem for an exercise id (`fcla/NM.C10` -> `fcla_NM_C10`).

    The stem is a Coq (and Lean) module name: coqc refuses `fcla_NM.C10.v` ("invalid
    character '.' in identifier") and a `-`, so only letters, digits and `_`, starting with
    a letter."""
    stem = _UNSAFE.sub("_", problem_id).strip("_") or "exercise"
    return stem if stem[0].isalpha() else f"x{stem}"


def block_id(block: Block) -> str:
    return f"{block.source_idx} | {block.index} | {block.kind.value}"


def validation(trails: list[BlockTrail], final: CheckResult | None) -> str:
    formal = [t for t in trails if t.status is not BlockStatus.skipped]
    if final is None or not final.compiled or not formal:
        return COMPILE_FAILED
    if any(t.status is BlockStatus.compile_failed for t in formal):
        return COMPILE_FAILED
    if all(t.status is BlockStatus.accepted for t in formal):
        return VALIDATED
    return REVIEW_FAILED


def statistics(trails: list[BlockTrail]) -> dict[str, int]:
    formal = [t for t in trails if t.status is not BlockStatus.skipped]
    rounds = [r for t in trails for r in t.compiles]
    reviews = [r for t in trails for r in t.reviews]
    return {
        "blocks": len(trails),
        "formal_blocks": len(formal),
        "blocks_compiled": sum(t.compiled for t in formal),
        "blocks_accepted": sum(t.status is BlockStatus.accepted for t in formal),
        "translation_rounds": len(rounds),
        "repair_rounds": sum(r.stage == "repair" for r in rounds),
        "review_rounds": len(reviews),
        "rewrites": sum(r.rewrite is not None for r in reviews),
        "rewrites_rejected": sum(bool(r.rejected) for r in reviews),
        "rewrite_compiles": sum(len(r.compiles) for r in reviews),
    }


def package(
    problem: ConstructProblem,
    stem: str,
    bfile: BlockFile | None,
    trails: list[BlockTrail],
    final: CheckResult | None,
    *,
    tokens: dict[str, int],
    split_error: str | None = None,
    tasks_from_unreviewed: bool = False,
) -> dict[str, Any]:
    """The exercise's package as data: files (name -> text or JSON value) and the task."""
    status = SPLIT_FAILED if split_error else validation(trails, final)
    text = bfile.text if bfile is not None else ""
    suffix = ".v" if bfile is None or bfile.syntax.language.value == "coq" else ".lean"
    holes, targets = hole_count(text, bfile.syntax) if bfile is not None else (0, [])
    stats = {**statistics(trails), "holes": holes, **tokens}
    metadata: dict[str, Any] = {
        "id": problem.id,
        "source": problem.source,
        "source_idx": problem.source_idx,
        "problem": problem.problem,
        "informal_statement": statement_of(problem),
        "file": f"{stem}{suffix}" if bfile is not None else None,
        "validation": status,
        "block_ids": [block_id(t.block) for t in trails],
        "blocks": [
            {**t.block.model_dump(mode="json"), "status": t.status.value, "failure": t.failure}
            for t in trails
        ],
        "targets": targets,
        "statistics": stats,
        "final_compile": None
        if final is None
        else {
            "compiled": final.compiled,
            "status": final.status.value,
            "diagnostics": [d.model_dump(mode="json") for d in final.diagnostics],
        },
        "failure": split_error,
    }
    trail = {
        "id": problem.id,
        "blocks": [t.model_dump(mode="json") for t in trails],
        "failures": [
            {"block": block_id(t.block), "status": t.status.value, "reason": t.failure}
            for t in trails
            if t.failure
        ]
        + ([{"block": None, "status": SPLIT_FAILED, "reason": split_error}] if split_error else []),
    }
    files: dict[str, Any] = {f"{stem}.json": metadata, f"{stem}.trail.json": trail}
    if bfile is not None:
        files[f"{stem}{suffix}"] = text
    wanted = {VALIDATED, REVIEW_FAILED} if tasks_from_unreviewed else {VALIDATED}
    task = None
    if bfile is not None and status in wanted and holes:
        task = make_task(problem, bfile, trails, stem + suffix, status, targets).model_dump(
            mode="json"
        )
    return {"status": status, "files": files, "task": task, "statistics": stats}


def make_task(
    problem: ConstructProblem,
    bfile: BlockFile,
    trails: list[BlockTrail],
    filename: str,
    status: str,
    targets: list[str],
) -> Task:
    text = bfile.text
    kinds = sorted({t.block.kind.value for t in trails})
    return Task(
        id=problem.id,
        language=bfile.syntax.language,
        header=bfile.header,
        formal=text[len(bfile.header) :],
        source=problem.source,
        informal=Informal(statement=statement_of(problem)),
        kind=TaskKind.proof,
        labels={"source_idx": problem.source_idx, "block_kinds": ",".join(kinds)},
        trail={
            "construct": {
                "problem": problem.problem,
                "problem_clean": problem.problem_clean,
                "problem_with_context": problem.problem_with_context,
                "problem_standardized_math": problem.problem_standardized_math,
                "problem_finally": problem.problem_finally,
                "reviews": [r.model_dump(mode="json") for r in problem.reviews],
                "blocks": [t.block.model_dump(mode="json") for t in trails],
                "validation": status,
            }
        },
        metadata={
            "instance": f"instances/{filename}",
            "holes": len(targets),
            "targets": targets,
            "solved_when": "every hole is filled and the whole file verifies",
        },
    )


def write_package(instances_dir: Path, result: dict[str, Any]) -> list[Path]:
    """Write an exercise's files; returns the formal file(s) written."""
    instances_dir.mkdir(parents=True, exist_ok=True)
    formal: list[Path] = []
    for name, value in result["files"].items():
        path = instances_dir / name
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        if isinstance(value, str):
            formal.append(path)
        else:
            text += "\n"
        if _unchanged(path, text):  # a rerun: no rewrite (each atomic write syncs the disk)
            continue
        _replace(path, text)
    return formal


def _replace(path: Path, text: str) -> None:
    """Whole or not at all (temporary file, then rename), without syncing the disk: the
    store is the record, and a file torn by a power cut differs from it, so the next run
    rewrites it. (A sync per file cost more than all the rest of packaging.)"""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write it ({exc.strerror or exc})") from None


def _unchanged(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False
