"""The Coq a history was made for (issue 30 item 3): opam formulas and CI files read at a
commit of the shipped histories, opam's version order, and validation that reports the
failures of a commit made for another Coq as such (real coqc)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formalbench.pipelines.ape.coqversions import (
    compare_versions,
    declared,
    declared_at,
    parse_formula,
    render,
    satisfies,
)
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.validate import validate_run
from formalbench.toolchains.toolchain import resolve
from tests.shared_data import DATA, needs_shared
from tests.test_ape_validity import DEP, GOOD, HEAD, _repo, _results, _run


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("8.15~", "8.15", -1),
        ("8.15", "8.15.0", -1),
        ("8.14.1", "8.15~", -1),
        ("8.20.1", "8.20~", 1),
        ("9.2", "8.15~", 1),
        ("8.10", "8.9", 1),
        ("8.4pl4", "8.4", 1),
        ("8.13", "8.13", 0),
    ],
)
def test_opam_version_order(a: str, b: str, order: int) -> None:
    assert compare_versions(a, b) == order
    assert compare_versions(b, a) == -order


def test_formulas_of_real_opam_files() -> None:
    dblib = parse_formula('{(>= "8.7" & < "8.15~") | (= "dev")}')
    assert satisfies(dblib, "8.14.2") and satisfies(dblib, "dev")
    assert not satisfies(dblib, "8.15.0") and not satisfies(dblib, "9.2")
    assert render(dblib) == "(>= 8.7 & < 8.15~) | = dev"
    old = parse_formula('{>= "8.5" & < "8.13~" | = "dev"}')  # `&` binds tighter than `|`
    assert satisfies(old, "8.5") and not satisfies(old, "8.13")
    assert satisfies(parse_formula('{build & >= "8.12"}'), "9.2")  # a filter variable
    assert not satisfies(parse_formula('!(>= "9.0")'), "9.2")


def test_what_a_tree_declares() -> None:
    files = {
        "coq-x.opam": 'depends: [\n  "ocaml"\n  "coq" {(>= "8.12" & < "8.16~") | (= "dev")}\n]\n',
        ".github/workflows/ci.yml": "image:\n  - 'coqorg/coq:8.15'\n  - 'coqorg/coq:8.12'\n",
    }
    found = declared(sorted(files), files.get)
    assert found is not None and found.source == "coq-x.opam"
    assert found.range == ">= 8.12 & < 8.16~"
    assert found.fits("8.15.2") and found.fits("9.2") is False
    ci = declared([".github/workflows/ci.yml"], files.get)  # no opam file: the CI's versions
    assert ci is not None and ci.range == "8.12 to 8.15"
    assert ci.fits("8.13.1") and ci.fits("8.16.1") is False
    dev = declared(["opam"], {"opam": 'depends: [ "coq" {= "dev"} ]'}.get)
    assert dev is not None and dev.fits("9.2") is None  # `dev` alone: nothing to compare
    assert declared(["README.md"], {"README.md": "coq 8.4"}.get) is None
    # a repository's text is hostile: a formula nested past any sane depth is no range
    deep = 'depends: [ "coq" {' + "(" * 5000 + '>= "8.5"' + ")" * 5000 + "} ]"
    assert declared(["opam"], {"opam": deep}.get) is None
    named_elsewhere = 'depends: [ "ocaml" ]\nconflicts: [ "coq" {< "8.5"} ]\n'
    assert declared(["opam"], {"opam": named_elsewhere}.get) is None  # not in depends


@needs_shared
@pytest.mark.parametrize(
    ("history", "commit", "source", "range_"),
    [
        ("coq-dblib", "25469872c0ba", "coq-dblib.opam", ">= 8.7 & < 8.15~"),
        ("coq-dblib", "03e849c3480f", ".travis.yml", "8.5 to 8.12"),  # `COQ=8.5` … lines
        ("coq-topology", "bb1e30cbdd3c", "coq-topology.opam", ">= 8.11 & < 8.13~"),
        ("coq-topology", "2c87ba595ac0", "coq.opam", ">= 8.7 & < 8.12~"),
        ("coq-topology", "88173938d192", "meta.yml supported_coq_versions", ">= 8.7 & < 8.11~"),
        ("coq-huffman", "adfb872b68ae", "coq-huffman.opam", ">= 8.12 & < 8.20~"),
        ("coq-stalmarck", "3d10aec0498a", "coq-stalmarck-tactic.opam", "dev"),
    ],
)
def test_declared_at_commits_of_the_shipped_histories(
    tmp_path: Path, history: str, commit: str, source: str, range_: str
) -> None:
    repo = GitRepo.open(DATA / "git-histories" / f"{history}.bundle", tmp_path)
    try:
        found = declared_at(repo, commit)
    finally:
        repo.close()
    assert found is not None and (found.source, found.range) == (source, range_)
    assert found.fits("9.2") is (None if range_ == "dev" else False)


@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
def test_a_failure_at_a_commit_made_for_another_coq_says_so(tmp_path: Path) -> None:
    """The same broken dependency: "made for Coq …" where the opam file declares a range
    the running Coq is outside, the plain reason where it is inside."""
    version = resolve().version()
    broken = DEP.replace("reflexivity", "exact I")
    for name, formula in (("old", '>= "8.5" & < "8.6~"'), ("fits", f'>= "8.5" & <= "{version}"')):
        root = tmp_path / name
        root.mkdir()
        opam = f'opam-version: "2.0"\ndepends: [ "coq" {{{formula}}} ]\n'
        repo = _repo(root, dep=broken, extra={"coq-lib.opam": opam})
        run = _run(root, repo, {"t": (HEAD, HEAD + GOOD, "B.v")})
        outcome = validate_run(run, "coq")
        result = _results(run)["t"]
        assert result["coq"]["source"] == "coq-lib.opam"
        if name == "old":
            assert result["coq"]["fits"] is False
            assert result["reason"] == f"made for Coq >= 8.5 & < 8.6~ (running {version})"
            assert result["cause"] == "a dependency does not build"
            assert result["detail"].startswith("a dependency does not build: ")
            (note,) = outcome.notes
            assert note.startswith("1 task(s) from commits made for Coq >= 8.5 & < 8.6~")
        else:
            assert result["coq"]["fits"] is True and "cause" not in result
            assert result["reason"] == "a dependency does not build" and not outcome.notes
