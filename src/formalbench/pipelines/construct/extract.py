"""Deterministic extraction of a textbook (phase 1 of `formalbench construct`).

`extract_textbook` opens a folder or archive, reads it with the LaTeX reader (or, for a book
without `.tex` files, the Markdown reader), marks every reference resolved or not against
the book's own labels, and expands each selected exercise with Algorithm 1. No model is
involved: the same input always gives the same `Extraction`.
"""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path

from pydantic import Field

from formalbench.core.construct import ExtractedExercise, TextbookItem
from formalbench.core.errors import InputError
from formalbench.core.records import Record
from formalbench.pipelines.construct.expansion import DEFAULT_DEPTH, count_nodes, expand_item
from formalbench.pipelines.construct.latex_reader import BookReading, LatexBookReader, pick_main
from formalbench.pipelines.construct.markdown_reader import read_markdown_book
from formalbench.pipelines.construct.sources import find_files, open_source


class Extraction(Record):
    """What extraction hands to the source stages."""

    book: str
    conventions: str  # `fcla`, `general` or `markdown`
    items: list[TextbookItem] = Field(default_factory=list)  # every labelled item, book order
    exercises: list[ExtractedExercise] = Field(default_factory=list)  # the selected ones
    # `exercises`, `references`, `resolved_references`, `unresolved_references`: of the
    # selected exercises; `book_*`: the same over the whole book; `items_<kind>`: per kind
    stats: dict[str, int] = Field(default_factory=dict)


def extract_textbook(
    source: Path,
    *,
    depth: int = DEFAULT_DEPTH,
    pattern: str | None = None,
    limit: int | None = None,
    conventions: str | None = None,
) -> Extraction:
    """Read a textbook (folder or `.tar.gz`/`.tgz`/`.zip`) into items and expanded exercises.

    `pattern` is a glob matched against an exercise's id, its book name (`Exercise NM.C10`)
    and its source file; `limit` keeps the first N selected exercises in book order;
    `conventions` names the LaTeX conventions (`fcla`, `general`) instead of detecting them.
    """
    if depth < 0:
        raise InputError(f"--depth {depth}: the expansion depth must be 0 or more")
    if limit is not None and limit < 0:
        raise InputError(f"--limit {limit}: must be 0 or more")
    source = Path(source)
    with open_source(source) as folder:
        book = _read(folder, source, conventions)
    return _assemble(book, depth, pattern, limit)


def _read(folder: Path, source: Path, conventions: str | None) -> BookReading:
    if find_files(folder, (".tex", ".ltx")):
        root = book_root(folder)
        book = LatexBookReader(root, conventions).read()
    elif find_files(folder, (".md", ".markdown")):
        book = read_markdown_book(folder)
    else:
        raise InputError(f"{source}: no .tex or .md files in this textbook")
    if book.name in ("", ".") or book.name.startswith("formalbench-textbook-"):
        book.name = source.name.split(".")[0]
    return book


def book_root(folder: Path) -> Path:
    """The folder of the main file (`\\documentclass` + `\\begin{document}`), else `folder`."""
    mains = []
    for path in find_files(folder, (".tex", ".ltx")):
        head = path.read_bytes()
        if b"\\documentclass" in head and b"\\begin{document}" in head:
            mains.append(path)
    if not mains:
        return folder
    return pick_main(mains, folder).parent


def _assemble(book: BookReading, depth: int, pattern: str | None, limit: int | None) -> Extraction:
    index = {item.label: item for item in book.items}
    for item in book.items:
        for ref in item.refs:
            ref.resolved = ref.key in index
            if ref.kind is None and ref.resolved:
                ref.kind = index[ref.key].kind
    exercises: list[ExtractedExercise] = []
    for item in book.items:
        if item.kind != "exercise":
            continue
        info = book.exercises[item.label]
        ex_id = f"{book.name}/{info.local_id}"
        if pattern and not any(
            fnmatchcase(s, pattern)
            for s in (ex_id, info.local_id, info.source_idx, item.source_file)
        ):
            continue
        if limit is not None and len(exercises) >= limit:
            break
        section = item.section.split(" / ")[-1] if item.section else ""
        exercises.append(
            ExtractedExercise(
                id=ex_id,
                source=f"{book.name}/{section}" if section else book.name,
                source_idx=info.source_idx,
                section=item.section,
                text=item.text,
                solution=item.solution,
                refs=item.refs,
                expansion=expand_item(item, index, depth, book.expandable),
            )
        )
    return Extraction(
        book=book.name,
        conventions=book.conventions,
        items=book.items,
        exercises=exercises,
        stats=_stats(book, exercises),
    )


def _stats(book: BookReading, exercises: list[ExtractedExercise]) -> dict[str, int]:
    """Counts of the selected exercises (what the run works on), then of the whole book."""
    all_ex = [i for i in book.items if i.kind == "exercise"]
    selected = [r for e in exercises for r in e.refs]
    refs = [r for i in all_ex for r in i.refs]
    item_refs = [r for i in book.items for r in i.refs]
    stats = {
        "exercises": len(exercises),
        "references": len(selected),
        "resolved_references": sum(1 for r in selected if r.resolved),
        "unresolved_references": sum(1 for r in selected if not r.resolved),
        "with_solution": sum(1 for e in exercises if e.solution),
        "expansion_nodes": sum(count_nodes(e.expansion) - 1 for e in exercises),
        "book_exercises": len(all_ex),
        "book_references": len(refs),
        "book_resolved_references": sum(1 for r in refs if r.resolved),
        "book_unresolved_references": sum(1 for r in refs if not r.resolved),
        "items": len(book.items),
        "item_references": len(item_refs),
        "item_resolved_references": sum(1 for r in item_refs if r.resolved),
        "duplicate_labels": len(book.duplicate_labels),
    }
    for kind, n in sorted(Counter(i.kind for i in book.items).items()):
        stats[f"items_{kind}"] = n
    return stats
