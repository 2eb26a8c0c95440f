"""How the shipped example benchmarks were made, so that anyone can rebuild and audit them.

`example-coq`: 12 miniF2F problems from the Coq port (miniF2F-rocq), chosen so that the
built-in tactic portfolio solves about half. Each was checked by hand with coqc 8.16.1:
the hole replaced by each portfolio tactic alone, with and without `intros;` first. What
closed the goal is recorded under `metadata.portfolio`. The header gains one line,
`From Coq Require Import Lia Lra Psatz.`, so that the arithmetic deciders exist in every
task (the statements themselves are unchanged); the informal statement comes from the
miniF2F Lean 4 JSONL, matched by problem name.

`example-lean`: 8 of the same miniF2F problems from the Lean 4 project (toolchain and
Mathlib revision from its Lake files) plus 4 PutnamBench problems, two of them "find the
value" (`evaluation`) tasks. No Lean toolchain runs here, so nothing is recorded about
which are provable.

Rebuild: `python -m formalbench.datasets.build_examples ../shared/data`; a test checks
that the shipped files equal a fresh build.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from formalbench.core.records import Informal, Task
from formalbench.datasets.loader import load_tasks
from formalbench.datasets.shipped import EXAMPLES_DIR

COQ_TACTIC_IMPORTS = "From Coq Require Import Lia Lra Psatz.\n"
PORTFOLIO = [
    "lia",
    "nia",
    "lra",
    "nra",
    "ring",
    "field",
    "auto",
    "tauto",
    "firstorder",
    "congruence",
    "intuition",
    "easy",
    "reflexivity",
]
COQ_CHECKED_WITH = "coqc 8.16.1 (Debian)"

# Problem -> the portfolio scripts that proved it alone (empty: none of the 26 did).
COQ_EXAMPLES: dict[str, list[str]] = {
    "mathd_algebra_478": ["intros; nra"],
    "amc12a_2013_p4": ["lra", "intros; lra", "nra", "intros; nra", "field", "intros; field"],
    "mathd_algebra_190": [
        "field",
        "intros; field",
        "firstorder",
        "intros; firstorder",
        "intuition",
        "intros; intuition",
        "easy",
        "intros; easy",
        "reflexivity",
        "intros; reflexivity",
    ],
    "amc12a_2009_p2": [
        "auto",
        "intros; auto",
        "tauto",
        "intros; tauto",
        "firstorder",
        "intros; firstorder",
        "intuition",
        "intros; intuition",
        "easy",
        "intros; easy",
        "reflexivity",
        "intros; reflexivity",
    ],
    "mathd_numbertheory_342": [
        "auto",
        "intros; auto",
        "tauto",
        "intros; tauto",
        "firstorder",
        "intros; firstorder",
        "intuition",
        "intros; intuition",
        "easy",
        "intros; easy",
        "reflexivity",
        "intros; reflexivity",
    ],
    "amc12b_2002_p2": [
        "lia",
        "intros; lia",
        "nia",
        "intros; nia",
        "intuition",
        "intros; intuition",
    ],
    "imo_1959_p1": [],
    "induction_12dvd4expnp1p20": [],
    "imo_1963_p5": [],
    "aime_1983_p2": [],
    "aime_1987_p5": [],
    "aime_1984_p1": [],
}
LEAN_MINIF2F = [
    "mathd_algebra_478",
    "amc12a_2013_p4",
    "mathd_algebra_190",
    "amc12a_2009_p2",
    "mathd_numbertheory_342",
    "amc12b_2002_p2",
    "imo_1959_p1",
    "aime_1983_p2",
]
LEAN_PUTNAM = ["putnam_2010_a4", "putnam_2000_b2", "putnam_1963_b1", "putnam_2005_a5"]

SOURCES: dict[str, dict[str, str]] = {
    "minif2f-coq": {
        "repository": "github.com/LLM4Rocq/miniF2F-rocq",
        "commit": "b60affae5d9b81eb097424e3143c40165ccbe97b",
        "license": "MIT",
    },
    "minif2f-lean4": {
        "repository": "github.com/yangky11/miniF2F-lean4",
        "commit": "5746b7d6c47855ce1294bed87329618ff7f1bc31",
        "license": "MIT",
    },
    "minif2f-informal": {
        "repository": "github.com/deepseek-ai/DeepSeek-Prover-V1.5",
        "commit": "2c4ba9119eef74d0d611f494261b2c5bae98c69a",
        "path": "datasets/minif2f.jsonl",
        "license": "MIT",
    },
    "putnambench": {
        "repository": "github.com/trishullab/PutnamBench",
        "commit": "3c9b9268ebd132d482938b8e9d242dd71fc1ebc0",
        "license": "Apache-2.0 (informal statements: with permission from the MAA)",
    },
}


def _by_id(tasks: list[Task]) -> dict[str, Task]:
    return {t.id.lower(): t for t in tasks}


def _provenance(source: str, path: str, **extra: str) -> dict[str, Any]:
    return {**SOURCES[source], "path": path, **extra}


def build_example_coq(data: Path) -> list[Task]:
    coq = _by_id(load_tasks(data / "minif2f-coq").tasks)
    informal = _by_id(load_tasks(data / "minif2f-lean4" / "minif2f_deepseek_v15.jsonl").tasks)
    built = []
    for name, solved_by in COQ_EXAMPLES.items():
        task = coq[name]
        metadata = {
            "provenance": _provenance(
                "minif2f-coq",
                f"{task.split}/{name}.v",
                header_added=COQ_TACTIC_IMPORTS.strip(),
                informal_from=SOURCES["minif2f-informal"]["repository"],
            ),
            "portfolio": {
                "solvable": bool(solved_by),
                "solved_by": solved_by,
                "tried": [f"{p}{t}" for t in PORTFOLIO for p in ("", "intros; ")],
                "checked_with": COQ_CHECKED_WITH,
            },
        }
        built.append(
            task.model_copy(
                update={
                    "header": task.header.rstrip("\n") + "\n" + COQ_TACTIC_IMPORTS + "\n",
                    "formal": task.formal.rstrip("\n") + "\n",
                    "source": "miniF2F (Coq port miniF2F-rocq)",
                    "informal": Informal(statement=informal[name].informal.statement),
                    # the set predates the library labels of the Coq folder importer: it
                    # keeps its category alone, so its reports stay as they were
                    "labels": {k: v for k, v in task.labels.items() if k == "category"},
                    "metadata": metadata,
                }
            )
        )
    return built


def build_example_lean(data: Path) -> list[Task]:
    lean = _by_id(load_tasks(data / "minif2f-lean4" / "lean4_files").tasks)
    informal = _by_id(load_tasks(data / "minif2f-lean4" / "minif2f_deepseek_v15.jsonl").tasks)
    putnam = _by_id(load_tasks(data / "putnambench-lean4" / "putnambench_lean4_merged.jsonl").tasks)
    putnam_files = _by_id(load_tasks(data / "putnambench-lean4" / "lean4").tasks)
    built = []
    for name in LEAN_MINIF2F:
        task = lean[name]
        path = f"MiniF2F/{task.split.capitalize() if task.split else ''}/{name}.lean"
        built.append(
            task.model_copy(
                update={
                    "source": "miniF2F (Lean 4 port miniF2F-lean4)",
                    "informal": Informal(statement=informal[name].informal.statement),
                    "metadata": {
                        "provenance": _provenance(
                            "minif2f-lean4",
                            path,
                            informal_from=SOURCES["minif2f-informal"]["repository"],
                        )
                    },
                }
            )
        )
    for name in LEAN_PUTNAM:
        task, file_task = putnam[name], putnam_files[name]
        metadata = {
            **task.metadata,
            "provenance": _provenance("putnambench", f"lean4/src/{name}.lean"),
        }
        built.append(
            task.model_copy(
                update={
                    "toolchain": file_task.toolchain,
                    "library_revision": file_task.library_revision,
                    "metadata": metadata,
                }
            )
        )
    return built


def write_examples(data: Path, out: Path = EXAMPLES_DIR) -> dict[str, Path]:
    """Build both examples from the public samples in `data` and write them as JSONL."""
    written = {}
    for name, tasks in (
        ("example-coq", build_example_coq(data)),
        ("example-lean", build_example_lean(data)),
    ):
        path = out / f"{name}.jsonl"
        path.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
        written[name] = path
    return written


if __name__ == "__main__":  # pragma: no cover - maintainer entry point
    for name, path in write_examples(Path(sys.argv[1] if len(sys.argv) > 1 else "data")).items():
        print(name, path)
