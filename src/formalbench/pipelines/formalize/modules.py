"""The logical name a library file is imported by, so that retrieved context says where a
declaration comes from (`Coq.ZArith.BinInt`, `Mathlib.Data.Nat.Prime.Basic`).

A translator shown `Z.divide` without its module still has to guess the `Require` or
`import` line, and a wrong guess is a compile error. The name is derived from the file's
path, the way each assistant maps files to modules:

- Coq: files under `coqc -where`/theories are `Coq.<path>`, under user-contrib `<path>`;
  elsewhere the nearest `_CoqProject` above the file maps folders to logical names with its
  `-R`/`-Q` options; failing all that, the path relative to the library root given.
- Lean: a module is its path relative to the package it belongs to (the nearest folder
  above it with a `lakefile.lean`, `lakefile.toml` or `lean-toolchain`, which also finds
  each dependency under `.lake/packages/`); failing that, relative to the library root.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from formalbench.backends.coq_project import project_file, read_project_text
from formalbench.core.errors import InputError
from formalbench.core.records import Language
from formalbench.solvers.search import coq_library

_LEAN_MARKERS = ("lakefile.lean", "lakefile.toml", "lean-toolchain")


class ModuleNamer:
    """Names the modules of the files under `roots` (one instance per index build)."""

    def __init__(self, roots: Sequence[Path], language: Language) -> None:
        self.roots = [r.resolve() for r in roots]
        self.language = language
        self.coqlib = coq_library() if language == Language.coq else None
        self._projects: dict[Path, list[tuple[Path, str]] | None] = {}
        self._packages: dict[Path, Path | None] = {}

    def name(self, path: Path) -> str:
        """The dotted module name of the source file `path` ('' when it cannot be told)."""
        path = path.resolve()
        if self.language == Language.coq:
            return self._coq(path)
        package = self._package(path.parent)
        if package is not None:
            return _dotted(path.relative_to(package))
        return self._from_root(path)

    def _coq(self, path: Path) -> str:
        if self.coqlib is not None:
            for folder, prefix in (
                (self.coqlib / "theories", "Coq"),
                (self.coqlib / "user-contrib", ""),
            ):
                if path.is_relative_to(folder):
                    return ".".join(x for x in (prefix, _dotted(path.relative_to(folder))) if x)
        for physical, logical in self._project(path.parent) or []:
            if path.is_relative_to(physical):
                return ".".join(x for x in (logical, _dotted(path.relative_to(physical))) if x)
        return self._from_root(path)

    def _from_root(self, path: Path) -> str:
        for root in self.roots:
            if root.is_file() and root == path:
                return path.stem
            if path.is_relative_to(root):
                return _dotted(path.relative_to(root))
        return path.stem

    def _project(self, folder: Path) -> list[tuple[Path, str]] | None:
        """The -R/-Q mappings of the nearest _RocqProject/_CoqProject at or above `folder`."""
        if folder in self._projects:
            return self._projects[folder]
        found: list[tuple[Path, str]] | None = None
        project = project_file(folder)  # _RocqProject or _CoqProject
        if project is not None:
            found = _coq_project(project)
        elif folder.parent != folder:
            found = self._project(folder.parent)
        self._projects[folder] = found
        return found

    def _package(self, folder: Path) -> Path | None:
        """The nearest folder at or above `folder` that is a Lake package."""
        if folder in self._packages:
            return self._packages[folder]
        found: Path | None = None
        if any((folder / marker).is_file() for marker in _LEAN_MARKERS):
            found = folder
        elif folder.parent != folder:
            found = self._package(folder.parent)
        self._packages[folder] = found
        return found


def _coq_project(path: Path) -> list[tuple[Path, str]]:
    """`-R dir Name` / `-Q dir Name` lines of a _CoqProject, longest folder first."""
    try:  # bounded: a project file is never read whole past its size limit
        words = shlex.split(read_project_text(path), comments=True)
    except (InputError, ValueError):
        return []
    mappings = []
    for i, word in enumerate(words[:-2]):
        if word in ("-R", "-Q"):
            mappings.append(((path.parent / words[i + 1]).resolve(), words[i + 2]))
    return sorted(mappings, key=lambda m: -len(m[0].parts))


def _dotted(relative: Path) -> str:
    return ".".join(relative.with_suffix("").parts)
