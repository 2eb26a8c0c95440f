"""The shipped example benchmarks, the task schema file, and (with coqc) the recorded solvability."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from formalbench.core.records import Language, Task, TaskKind
from formalbench.datasets import list_datasets, load_tasks, shipped_names
from formalbench.datasets.build_examples import build_example_coq, build_example_lean
from formalbench.datasets.schema import SCHEMA_PATH, render_task_schema, task_json_schema
from formalbench.datasets.shipped import EXAMPLES_DIR
from formalbench.datasets.text import has_hole
from tests.shared_data import DATA, needs_shared


def test_list_datasets_names_counts_and_alias():
    infos = {d.name: d for d in list_datasets()}
    assert {"example", "example-coq", "example-lean"} <= infos.keys()
    assert infos["example-coq"].count == 12 and infos["example-coq"].languages == ("coq",)
    assert infos["example-lean"].count == 12 and infos["example-lean"].languages == ("lean",)
    assert infos["example"].alias_of == "example-coq"
    assert shipped_names() == sorted(infos)
    assert load_tasks("example").tasks == load_tasks("example-coq").tasks


def test_examples_are_well_formed():
    for name in ("example-coq", "example-lean"):
        loaded = load_tasks(name)
        assert not loaded.problems and len({t.id for t in loaded}) == 12
        for task in loaded:
            assert has_hole(task.formal, task.language), task.id
            assert task.informal.statement, task.id
            provenance = task.metadata["provenance"]
            assert provenance["repository"].startswith("github.com/") and provenance["commit"]
    coq = load_tasks("example-coq").tasks
    solvable = [t for t in coq if t.metadata["portfolio"]["solvable"]]
    assert 4 <= len(solvable) <= 8  # about half
    assert all(bool(t.metadata["portfolio"]["solved_by"]) == (t in solvable) for t in coq)
    lean = load_tasks("example-lean").tasks
    assert sum(t.kind == TaskKind.evaluation for t in lean) == 2
    assert all(t.toolchain and t.toolchain.startswith("leanprover/lean4:") for t in lean)
    assert (EXAMPLES_DIR / "NOTICE").read_text().count("Licence") >= 4


@needs_shared
def test_shipped_examples_equal_a_fresh_build_from_the_public_samples():
    for name, built in (
        ("example-coq", build_example_coq(DATA)),
        ("example-lean", build_example_lean(DATA)),
    ):
        shipped = (EXAMPLES_DIR / f"{name}.jsonl").read_text(encoding="utf-8")
        assert shipped == "".join(t.model_dump_json() + "\n" for t in built), name


def test_schema_file_matches_the_model():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_task_schema(), (
        "task.schema.json is stale: run python -m formalbench.datasets.schema"
    )
    schema = task_json_schema()
    assert set(schema["required"]) == {"id", "language", "formal"}
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(Task.model_fields)
    language = schema["$defs"]["Language"]["enum"]
    assert language == [lang.value for lang in Language]


def _coqc(source: str) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "Example.v"
        path.write_text(source, encoding="utf-8")
        done = subprocess.run(
            ["coqc", "-q", str(path)], capture_output=True, text=True, timeout=120, cwd=folder
        )
        return done.returncode, done.stdout + done.stderr


@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
def test_example_coq_compiles_and_recorded_tactics_prove_it():
    """Every statement compiles with its hole; the first recorded tactic proves each solvable one."""
    jobs = []
    for task in load_tasks("example-coq"):
        solved_by = task.metadata["portfolio"]["solved_by"]
        if not solved_by:  # the statement itself must compile
            jobs.append((task.id, "hole", task.source_text))
            continue
        proof = task.formal.replace("Admitted.", f"{solved_by[0]}.\nQed.")
        assert proof != task.formal
        jobs.append((task.id, solved_by[0], task.header + proof))
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda job: (job[:2], _coqc(job[2])), jobs))
    failures = {key: out[-300:] for key, (rc, out) in results if rc != 0}
    assert not failures, json.dumps(failures, indent=1)
