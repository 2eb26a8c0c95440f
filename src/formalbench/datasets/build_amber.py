"""Build the shipped AMBER examples (`example-amber-coq`, `example-amber-lean`) from their
source folders, and say where each task's solutions are.

Each folder `datasets/examples/amber-<language>/` holds `tasks/` (one file a task, with its
`formalbench-task` marker: kind, constructions, informal statement), `solutions/` (a
reference solution of each task, same file name) and `nonconstructive/` (a "solution" of each
construction task that compiles but picks its answer by choice or as an infimum, so the
strict verifier must refuse it). Solutions stay out of the task records: a record is what a
prover is shown. Run `python -m formalbench.datasets.build_amber` after editing a task; a test
fails when the JSONL and the folder drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

from formalbench.core.records import Language, Task
from formalbench.datasets.loader import load_tasks
from formalbench.datasets.shipped import EXAMPLES_DIR
from formalbench.library import LEAN_MATHLIB_TARGET

FOLDERS: dict[str, Path] = {
    "example-amber-coq": EXAMPLES_DIR / "amber-coq",
    "example-amber-lean": EXAMPLES_DIR / "amber-lean",
}
SOURCE = "formalbench AMBER-style examples (written for formalbench)"
LEAN_TOOLCHAIN = "leanprover/lean4:v4.24.0"
MATHLIB_REVISION = LEAN_MATHLIB_TARGET  # the Mathlib tag library/lean/Amber.lean targets
SUFFIX = {Language.coq: ".v", Language.lean: ".lean"}


def amber_tasks(name: str) -> list[Task]:
    """The tasks of one AMBER example set, read from its `tasks/` folder."""
    tasks = []
    for task in load_tasks(FOLDERS[name] / "tasks"):
        task.source = SOURCE
        task.metadata = {
            "library": "Formalbench.Amber" if task.language == Language.coq else "Amber"
        }
        if task.language == Language.lean:
            task.toolchain = LEAN_TOOLCHAIN
            task.library_revision = MATHLIB_REVISION
        tasks.append(task)
    return tasks


def solution_file(name: str, task: Task, which: str = "solutions") -> Path | None:
    """The reference (`solutions`) or refused (`nonconstructive`) file of a task, if any."""
    path = FOLDERS[name] / which / f"{task.id}{SUFFIX[task.language]}"
    return path if path.is_file() else None


def render(name: str) -> str:
    return "".join(t.model_dump_json() + "\n" for t in amber_tasks(name))


def main(argv: list[str] | None = None) -> int:
    for name in FOLDERS:
        out = EXAMPLES_DIR / f"{name}.jsonl"
        out.write_text(render(name), encoding="utf-8")
        sys.stdout.write(f"{out}: {len(amber_tasks(name))} tasks\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
