"""Extraction of the real textbook "A First Course in Linear Algebra" (fcla, shared data).

The expected numbers are recomputed here from the sources with plain text searches that are
independent of the reader (which parses and follows the book's own macros), so a reader
that drops, invents or mis-resolves an item fails.

Why 506 exercises and not the 550 of the data README: the README counts files. The archive
holds 550 `.tex` files under `latex/exercises/`: 42 per-section lists (`exercises/NM.tex`,
the `\\exercise{C10}{...}` calls that put exercises into the book) and 508 exercise files, of
which 2 are called by no list (`O/C22`, `RREF/C20`, the latter a fragment): they are not in
the book. Likewise 393 files under `solutions/` are 38 lists and 355 solution files, of which
353 belong to exercises of the book (`T/T30old`, `VR/m10_incomplete` are leftovers).
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from formalbench.core.construct import ExpansionNode
from formalbench.pipelines.construct.expansion import expand_item
from formalbench.pipelines.construct.extract import Extraction, extract_textbook
from tests.shared_data import DATA, needs_shared

pytestmark = needs_shared

ARCHIVE = DATA / "fcla-latex.tar.gz"
_COMMENT = re.compile(r"(?<!\\)%.*")


@pytest.fixture(scope="module")
def fcla(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fcla")
    with tarfile.open(ARCHIVE) as tf:
        tf.extractall(root, filter="data")
    return root / "fcla" / "latex"


@pytest.fixture(scope="module")
def extraction() -> Extraction:
    return extract_textbook(ARCHIVE)


def source(path: Path) -> str:
    return _COMMENT.sub("", path.read_text(encoding="utf-8"))


def book_exercises(latex: Path) -> list[str]:
    """`SECTION.NUMBER` of every `\\exercise{NUMBER}` call in the per-section lists."""
    sections = re.findall(r"^\\sect\{(\w+)\}", source(latex / "fcla.tex"), re.M)
    found = []
    for sec in sections:
        listing = latex / "exercises" / f"{sec}.tex"
        if listing.exists():
            found += [f"{sec}.{n}" for n in re.findall(r"\\exercise\{(\w+)\}", source(listing))]
    return found


def test_every_exercise_of_the_book_is_found_in_book_order(
    extraction: Extraction, fcla: Path
) -> None:
    assert extraction.conventions == "fcla"  # detected: the book defines \\acronymref
    expected = book_exercises(fcla)
    assert len(expected) == 506
    assert [e.id for e in extraction.exercises] == [f"fcla/{x}" for x in expected]
    assert extraction.stats["exercises"] == extraction.stats["book_exercises"] == 506
    files = list((fcla / "exercises").rglob("*.tex"))
    assert len(files) == 550  # what the data README counts: 42 lists + 508 exercise files
    assert "fcla/O.C22" not in {e.id for e in extraction.exercises}  # a file no list calls
    solutions = {p.relative_to(fcla / "solutions").with_suffix("").as_posix().replace("/", ".")
                 for p in (fcla / "solutions").glob("*/*.tex")}  # fmt: skip
    with_solution = {e.id.removeprefix("fcla/") for e in extraction.exercises if e.solution}
    assert with_solution == solutions & set(expected)
    assert extraction.stats["with_solution"] == 353


def test_labelled_statements_by_kind_match_the_sources(extraction: Extraction, fcla: Path) -> None:
    text = "".join(source(p) for p in (fcla / "sections").glob("*.tex"))
    counts = extraction.stats
    for env in ("definition", "theorem", "example"):
        assert counts[f"items_{env}"] == text.count("\\begin{" + env + "}"), env
    # properties: 41 environments, and 11 \property items in the field axioms' list
    assert counts["items_property"] == len(re.findall(r"\\begin\{property\}|\\property\{", text))
    assert counts["items_definition"] == 135 and counts["items_theorem"] == 277


def test_every_reference_resolves_and_none_unresolved_is_a_label_of_the_book(
    extraction: Extraction, fcla: Path
) -> None:
    stats = extraction.stats
    assert stats["references"] == stats["resolved_references"] + stats["unresolved_references"]
    everything = "".join(source(p) for p in fcla.rglob("*.tex"))
    defined = {f"{k}.{a}" for k, a in re.findall(r"\\begin\{(\w+)\}\{([\w.]+)\}", everything)}
    defined |= {f"section.{a}" for a in re.findall(r"\\sect\{(\w+)\}", everything)}
    defined |= {f"property.{a}" for a in re.findall(r"\\property\{(\w+)\}", everything)}
    defined |= {f"notation.{a}" for a in re.findall(r"\\denote\{(\w+)\}", everything)}
    unresolved = {r.key for e in extraction.exercises for r in e.refs if not r.resolved}
    assert not unresolved & defined
    assert stats["unresolved_references"] == 0
    # the whole book, not only its exercises: every \acronymref anywhere names an item
    labels = {i.label for i in extraction.items}
    cited = {f"{k}.{a}" for k, a in re.findall(r"\\acronymref\{(\w+)\}\{([\w.]+)\}", everything)}
    assert len(cited) > 700  # distinct keys
    assert cited <= labels


def test_exercise_citing_nmus_expands_to_that_theorem_at_depth_one(
    extraction: Extraction, fcla: Path
) -> None:
    exercise = next(e for e in extraction.exercises if e.id == "fcla/NM.T90")
    assert "\\acronymref{theorem}{NMUS}" in source(fcla / "exercises/NM/T90.tex")
    assert [r.key for r in exercise.refs] == ["theorem.NMUS", "theorem.REMEF", "theorem.RREFU"]
    child = next(c for c in exercise.expansion.children if c.label == "theorem.NMUS")
    assert (child.depth, child.parent, child.via) == (
        1,
        "exercise.NM.T90",
        "\\acronymref{theorem}{NMUS}",
    )
    theorem = next(i for i in extraction.items if i.label == "theorem.NMUS")
    assert child.text == theorem.text
    assert theorem.title == "Nonsingular Matrices and Unique Solutions"
    assert theorem.text.startswith("Suppose that $A$ is a square matrix.")
    assert "has a unique solution for every choice of the constant vector" in theorem.text
    lines = (fcla / "sections/NM.tex").read_text().splitlines()
    assert theorem.line is not None
    assert lines[theorem.line - 1].startswith("\\begin{theorem}{NMUS}")
    assert "\\vect" not in theorem.text and "{\\bf b}" in theorem.text  # macros expanded


def test_exercise_text_solution_group_lead_in_and_section(extraction: Extraction) -> None:
    by_id = {e.id: e for e in extraction.exercises}
    t10 = by_id["fcla/NM.T10"]
    assert t10.text.startswith("Suppose that $A$ is a square matrix, and $B$ is a matrix")
    assert t10.solution is not None and "\\acronymref{theorem}{NMRRI}" in t10.solution
    assert t10.section == "Systems of Linear Equations / Nonsingular Matrices"
    assert t10.source == "fcla/Nonsingular Matrices"
    assert t10.source_idx == "Exercise NM.T10"
    c31 = by_id["fcla/NM.C31"]  # a bare matrix: the group's instruction is what asks
    assert c31.text.startswith("In Exercises C30--C33 determine if the matrix is nonsingular")
    assert "\\begin{bmatrix}" in c31.text


def test_expansion_depth_and_provenance_hold_on_the_whole_book(extraction: Extraction) -> None:
    def walk(node: ExpansionNode, hop: int, path: set[str]) -> None:
        assert node.depth == hop <= 3
        assert node.label not in path  # cycle guard
        for child in node.children:
            assert child.parent == node.label and child.via
            walk(child, hop + 1, path | {node.label})

    for exercise in extraction.exercises:
        walk(exercise.expansion, 0, set())
    index = {i.label: i for i in extraction.items}
    exercises = [i for i in extraction.items if i.kind == "exercise"]
    shallow = [expand_item(e, index, depth=1) for e in exercises]
    assert all(not c.children for t in shallow for c in t.children)
    assert sum(len(c.truncated) for t in shallow for c in t.children) > 100
