"""The known kernel bugs table (backends/coq_known_bugs.py): a pure version -> bug ids
function, the line a verdict's reader sees, and the docs' table kept equal to the data."""

from __future__ import annotations

from pathlib import Path

import pytest

from formalbench.backends.coq_known_bugs import (
    KNOWN_BUGS,
    bug,
    known_bugs_line,
    known_unsound,
    markdown_table,
    parse_version,
    unguarded,
)

DOCS = Path(__file__).parents[1] / "docs" / "decisions.md"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("coq 8.16.1 amber-1234abcd project /x 00", {b.id for b in KNOWN_BUGS}),
        ("8.19.0", {"rocq#20413", "rocq#20455", "rocq#21839", "rocq#19402", "rocq#21051"}
         | {"rocq#22387", "rocq#22378"}),
        ("9.0.1", {"rocq#21839", "rocq#22387", "rocq#22378"}),
        ("rocq 9.2.0", {"rocq#21839", "rocq#22387", "rocq#22378"}),
        ("9.2.1", {"rocq#21839"}),
        ("9.3.0", set()),
        ("8.0.5", set()),  # older than every listed bug's first release (this table's scope)
        ("8.4", {"rocq#16957"}),
    ],
)  # fmt: skip
def test_known_unsound_by_version(version: str, expected: set[str]) -> None:
    assert set(known_unsound(version)) == expected


def test_unreadable_version_is_every_bug() -> None:
    assert parse_version("coq unknown") is None
    assert known_unsound("coq unknown") == [b.id for b in KNOWN_BUGS]


def test_unguarded_are_the_ones_coqchk_does_not_catch() -> None:
    assert unguarded("8.16.1") == [b.id for b in KNOWN_BUGS if b.replay != "caught"]
    assert "rocq#19402" not in unguarded("8.16.1")  # a VM bug: coqchk has no VM
    assert unguarded("9.2.0") == ["rocq#21839", "rocq#22387", "rocq#22378"]


def test_line_names_the_unguarded_ones() -> None:
    line = known_bugs_line(["rocq#19402", "rocq#21839"])
    assert "rocq#19402, rocq#21839" in line
    assert line.split("not caught by the coqchk replay: ")[1].startswith("rocq#21839 (")
    with pytest.raises(KeyError):
        bug("rocq#1")


def test_docs_table_is_the_data() -> None:
    """docs/decisions.md shows `markdown_table()` verbatim: a changed entry changes both."""
    assert markdown_table() in DOCS.read_text(encoding="utf-8")


def test_every_entry_is_sourced() -> None:
    for entry in KNOWN_BUGS:
        assert entry.source == f"https://github.com/rocq-prover/rocq/issues/{entry.id[5:]}"
        assert entry.fixed is None or entry.first < entry.fixed
        assert entry.replay in ("caught", "missed", "partial")
