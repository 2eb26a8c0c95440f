"""Which files of a revision are library sources: read from the project's own build files.

Lean: the `lean_lib` targets of `lakefile.toml` (or `lakefile.lean`), each with its
`srcDir` and roots; a library's root import file (`Mathlib.lean`) is not a source of tasks.
Coq: the load path of `coqlayout` (`_CoqProject`, `Make`, dune's `coq.theory`, or a
Makefile's `-R`/`-Q`): the `.v` files the project file lists, or, when none are listed, the
`.v` files under its library folders. Read per revision, since libraries move (batteries:
`Std/` before May 2024; topology: `Make` at the root before 2020, `theories/` after).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable

from formalbench.pipelines.ape.coqlayout import git_layout
from formalbench.pipelines.ape.gitsource import GitRepo

SourceFilter = Callable[[str], bool]


def lean_roots(repo: GitRepo, rev: str) -> list[str]:
    """Path prefixes (without `.lean`) of the library roots at `rev`."""
    roots: list[str] = []
    text = repo.show(rev, "lakefile.toml")
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = {}
        for lib in data.get("lean_lib", []):
            src = str(lib.get("srcDir", ".")).strip("/").removeprefix("./")
            for root in lib.get("roots", [lib.get("name", "")]):
                path = root.replace(".", "/")
                roots.append(f"{src}/{path}" if src and src != "." else path)
        return [r for r in roots if r]
    text = repo.show(rev, "lakefile.lean") or ""
    for m in re.finditer(r"lean_lib\s+«?([\w.]+)»?(.*?)(?=\n\S|\Z)", text, re.DOTALL):
        body = m.group(2)
        src_dir = re.search(r'srcDir\s*:=\s*"([^"]*)"', body)
        prefix = (
            (src_dir.group(1).strip("/") + "/")
            if src_dir and src_dir.group(1) not in ("", ".")
            else ""
        )
        names = re.findall(
            r"`([\w.]+)", (re.search(r"roots\s*:=\s*#\[(.*?)\]", body) or m).group(0)
        )
        for name in names if "roots" in body else [m.group(1)]:
            roots.append(prefix + name.replace(".", "/"))
    return roots


def lean_filter(repo: GitRepo, rev: str, include_tests: bool = False) -> SourceFilter:
    roots = [r for r in lean_roots(repo, rev) if include_tests or not r.endswith("Test")]

    def accept(path: str) -> bool:
        return path.endswith(".lean") and any(path.startswith(r + "/") for r in roots)

    return accept


def coq_filter(repo: GitRepo, rev: str) -> SourceFilter:
    """The library files of the Coq project at `rev`, by whichever convention it declares
    its load path (`coqlayout`); a revision with none has no library files."""
    layout = git_layout(repo, rev)
    if layout is None:
        return lambda _path: False
    return layout.contains


def detect_language(repo: GitRepo, rev: str) -> str:
    if repo.show(rev, "lakefile.toml") is not None or repo.show(rev, "lakefile.lean") is not None:
        return "lean"
    if git_layout(repo, rev) is not None:
        return "coq"
    return "unknown"


def source_filter(repo: GitRepo, rev: str, language: str) -> SourceFilter:
    return coq_filter(repo, rev) if language == "coq" else lean_filter(repo, rev)
