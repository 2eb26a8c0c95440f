"""Reading a Markdown textbook with `$...$` math: a second, deliberately simple reader.

Conventions (documented in the README):
- files `*.md` in natural order; `#` headings are the sections (`##` below `#`, ...);
- an item starts at a heading or a paragraph opening with a kind and a number followed by
  `.`, `:`, `(`, bold markers or the line's end (so "Theorem 3 shows ..." stays narrative),
  optionally in bold and with a title: `### Exercise 1.2`, `**Exercise 1.2.**`, `**Theorem 3** (Rank)`,
  `Definition 2.1 (Basis).`; kinds: definition, theorem, lemma, proposition, corollary,
  example, algorithm, exercise (also `Problem`); an item without a number (`### Exercise`)
  is numbered `<file stem>-<n>` by its position among the file's unnumbered items of its kind;
- an item runs to the next item, heading, or a `Proof` paragraph; a `Solution` paragraph
  after an exercise is its solution;
- a statement is labelled `kind:number` (`theorem:3`); text such as `by Theorem 3`,
  `Lemma 2.1` or `Exercise 1.2` refers to that label; `$$...\\label{key}...$$` labels an
  equation, which `\\eqref{key}` / `\\ref{key}` refer to.
"""

from __future__ import annotations

import re
from pathlib import Path

from formalbench.core.construct import Reference, TextbookItem
from formalbench.pipelines.construct.latex_reader import BookReading, ExerciseInfo
from formalbench.pipelines.construct.sources import find_files, read_text

_KINDS = {
    "definition": "definition", "theorem": "theorem", "lemma": "lemma",
    "proposition": "proposition", "corollary": "corollary", "example": "example",
    "algorithm": "algorithm", "exercise": "exercise", "problem": "exercise",
}  # fmt: skip
_KIND_WORDS = "|".join(k.capitalize() for k in _KINDS)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_START = re.compile(
    rf"^(?:#{{1,6}}\s+)?[*_]{{0,2}}(?P<kind>{_KIND_WORDS})\b(?:\s+(?P<num>\d+(?:\.\d+)*[a-z]?))?"
    r"(?=\s*(?:[.:(*_]|$))"  # "Theorem 3 shows that ..." is narrative, not a new item
    r"[.:]?[*_]{0,2}\s*(?:\((?P<title>[^)]*)\))?[.:]?[*_]{0,2}[.:]?\s*"
)
_REF = re.compile(rf"\b(?P<kind>{_KIND_WORDS})\s+(?P<num>\d+(?:\.\d+)*[a-z]?)\b")
_EQREF = re.compile(r"\\(?:eq)?ref\{([^}]*)\}")
_EQLABEL = re.compile(r"\$\$(?:(?!\$\$).)*?\\label\{([^}]*)\}(?:(?!\$\$).)*?\$\$", re.DOTALL)
_PROOF = re.compile(r"^[*_]{0,2}(Proof|Solution)\b[.:]?[*_]{0,2}[.:]?\s*", re.IGNORECASE)


def read_markdown_book(folder: Path) -> BookReading:
    """Items of every Markdown file under `folder`, in natural file order."""
    book = BookReading(name=folder.name, conventions="markdown")
    labels: set[str] = set()
    for path in find_files(folder, (".md", ".markdown")):
        _read_file(path, folder, book, labels)
    return book


def _read_file(path: Path, root: Path, book: BookReading, labels: set[str]) -> None:
    rel = path.relative_to(root).as_posix()
    titles: dict[int, str] = {}
    current: dict[str, object] | None = None
    counts: dict[str, int] = {}

    def close() -> None:
        nonlocal current
        if current is not None:
            _finish(current, book, labels)
        current = None

    for lineno, line in enumerate(read_text(path, root).splitlines(), start=1):
        heading = _HEADING.match(line)
        start = _START.match(line)
        paragraph_start = start is not None and (heading is not None or _new_paragraph(current))
        if heading and not start:
            close()
            level = len(heading.group(1))
            titles = {k: v for k, v in titles.items() if k < level}
            titles[level] = heading.group(2).strip()
            continue
        if start and paragraph_start:
            close()
            kind = _KINDS[start.group("kind").lower()]
            section = " / ".join(t for _, t in sorted(titles.items()))
            number = start.group("num")
            if number is None:  # unnumbered: numbered by position in its file
                counts[kind] = counts.get(kind, 0) + 1
                number = f"{path.stem}-{counts[kind]}"
            current = {
                "kind": kind, "number": number, "title": start.group("title"),
                "section": section, "file": rel, "line": lineno,
                "lines": [line[start.end():]], "solution": None,
            }  # fmt: skip
            continue
        if current is None:
            continue
        proof = _PROOF.match(line)
        if proof and _new_paragraph(current):
            if proof.group(1).lower() == "solution" and current["kind"] == "exercise":
                current["solution"] = [line[proof.end() :]]
            else:
                close()
            continue
        target = current["solution"] if current["solution"] is not None else current["lines"]
        assert isinstance(target, list)
        target.append(line)
    close()


def _new_paragraph(current: dict[str, object] | None) -> bool:
    if current is None:
        return True
    lines = current["solution"] if current["solution"] is not None else current["lines"]
    assert isinstance(lines, list)
    return not lines or not lines[-1].strip()


def _finish(current: dict[str, object], book: BookReading, labels: set[str]) -> None:
    kind, number = str(current["kind"]), str(current["number"])
    lines, solution = current["lines"], current["solution"]
    assert isinstance(lines, list)
    text = "\n".join(lines).strip()
    label = f"{kind}:{number}"
    if label in labels:
        book.duplicate_labels.append(label)
        return
    labels.add(label)
    item = TextbookItem(
        label=label,
        kind=kind,
        text=text,
        title=str(current["title"]) if current["title"] else None,
        number=number,
        section=str(current["section"]),
        source_file=str(current["file"]),
        line=int(str(current["line"])),
        solution="\n".join(solution).strip() if isinstance(solution, list) else None,
        refs=_refs(text),
    )
    book.items.append(item)
    book.expandable.add(label)
    for m in _EQLABEL.finditer(text):
        key = m.group(1).strip()
        if key not in labels:
            labels.add(key)
            book.items.append(
                TextbookItem(
                    label=key,
                    kind="equation",
                    text=m.group(0),
                    section=item.section,
                    source_file=item.source_file,
                    line=item.line,
                )  # fmt: skip
            )
            book.expandable.add(key)
    if kind == "exercise":
        book.exercises[label] = ExerciseInfo(number, f"Exercise {number}")


def _refs(text: str) -> list[Reference]:
    refs = [
        Reference(
            raw=m.group(0),
            key=f"{_KINDS[m.group('kind').lower()]}:{m.group('num')}",
            kind=_KINDS[m.group("kind").lower()],
        )  # fmt: skip
        for m in _REF.finditer(text)
    ]
    refs += [Reference(raw=m.group(0), key=m.group(1).strip()) for m in _EQREF.finditer(text)]
    return refs
