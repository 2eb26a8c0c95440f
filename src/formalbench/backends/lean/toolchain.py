"""Find the Lean toolchain and the Lake project a check runs in, and name their versions.

Lean is found as `lake`/`lean` on PATH or in elan's bin folder (`$ELAN_HOME/bin`, else
`~/.elan/bin`). The project is the folder the user gives, or the nearest folder above a
starting point that has a `lakefile.lean`, `lakefile.toml` or `lean-toolchain`. Its versions
come from files, not from running anything: the toolchain from `lean-toolchain`, the Mathlib
revision from `lake-manifest.json`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from formalbench.core.errors import InputError, ToolchainMissingError

PROJECT_MARKERS = ("lakefile.lean", "lakefile.toml", "lean-toolchain")
INSTALL_HINT = (
    "install elan (curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh"
    " -sSf | sh) and build your Lake project with `lake build`"
)


def find_project(start: Path) -> Path | None:
    """The nearest folder at or above `start` (a file or folder) that is a Lake project."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if any((folder / marker).is_file() for marker in PROJECT_MARKERS):
            return folder
    return None


def check_project(project_dir: Path) -> Path:
    """The given project folder, resolved; InputError when it is not a Lake project."""
    path = Path(project_dir).expanduser()
    if not path.is_dir():
        raise InputError(f"Lean project folder {path} does not exist or is not a folder")
    if not any((path / marker).is_file() for marker in PROJECT_MARKERS):
        raise InputError(
            f"{path} is not a Lake project: it has no lakefile.lean, lakefile.toml or lean-toolchain"
        )
    return path.resolve()


def find_executable(name: str) -> str | None:
    """`name` on PATH, else in elan's bin folder."""
    found = shutil.which(name)
    if found:
        return found
    elan_home = os.environ.get("ELAN_HOME") or str(Path.home() / ".elan")
    candidate = Path(elan_home) / "bin" / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return None


def read_toolchain(project_dir: Path | None) -> str | None:
    """The content of `lean-toolchain` (e.g. `leanprover/lean4:v4.24.0`), or None."""
    if project_dir is None:
        return None
    path = project_dir / "lean-toolchain"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text.splitlines()[0].strip() if text else None


def read_manifest(project_dir: Path | None) -> list[dict]:
    """The packages of `lake-manifest.json` (empty when absent or unreadable)."""
    if project_dir is None:
        return []
    try:
        data = json.loads((project_dir / "lake-manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    packages = data.get("packages") if isinstance(data, dict) else None
    return [p for p in packages or [] if isinstance(p, dict)]


def package_revision(project_dir: Path | None, name: str = "mathlib") -> tuple[str, str] | None:
    """(rev, inputRev) of a manifest package, by case-insensitive name; None when absent."""
    for package in read_manifest(project_dir):
        if str(package.get("name", "")).lower() == name.lower():
            return str(package.get("rev") or ""), str(package.get("inputRev") or "")
    return None


def has_repl(project_dir: Path | None) -> bool:
    """Whether `lake exe repl` can work in the project: REPL is a dependency, or the project."""
    if project_dir is None:
        return False
    if package_revision(project_dir, "REPL") is not None:
        return True
    for lakefile in ("lakefile.lean", "lakefile.toml"):
        try:
            text = (project_dir / lakefile).read_text(encoding="utf-8")
        except OSError:
            continue
        if re.search(r"lean_exe\s+repl\b|name\s*=\s*\"repl\"", text):
            return True
    return (project_dir / ".lake" / "build" / "bin" / "repl").exists()


@dataclass(frozen=True)
class Toolchain:
    """What a Lean check runs with."""

    project_dir: Path | None
    lake: str | None
    lean: str | None

    @property
    def toolchain(self) -> str | None:
        return read_toolchain(self.project_dir)

    @property
    def library_revision(self) -> str | None:
        found = package_revision(self.project_dir)
        return found[0] or None if found else None


def discover(project_dir: Path | None, start: Path | None = None) -> Toolchain:
    """The project (given or found above `start`) and the Lean executables, or a clear error."""
    project = check_project(project_dir) if project_dir is not None else None
    if project is None and start is not None:
        project = find_project(start)
    lake, lean = find_executable("lake"), find_executable("lean")
    if lake is None and lean is None:
        raise ToolchainMissingError(
            "Lean 4 is not installed: no `lake` or `lean` on PATH or in ~/.elan/bin; "
            f"{INSTALL_HINT}, or give repl_command= to use a REPL you run yourself"
        )
    return Toolchain(project, lake, lean)


def _tag(toolchain: str) -> str:
    """`leanprover/lean4:v4.24.0` and `v4.24.0` and `4.24.0` all become `4.24.0`."""
    return toolchain.strip().rsplit(":", 1)[-1].lstrip("vV")


def mismatch_sentence(
    ours: tuple[str | None, str | None, str | None],
    toolchain: str | None,
    library_revision: str | None,
) -> str | None:
    """A sentence naming how a task's versions differ from ours (toolchain, rev, inputRev)."""
    our_toolchain, our_rev, our_input = ours
    problems: list[str] = []
    if toolchain and our_toolchain and _tag(toolchain) != _tag(our_toolchain):
        problems.append(f"toolchain {toolchain} (this project has {our_toolchain})")
    if library_revision and our_rev:
        wanted = library_revision.strip()
        same_commit = len(wanted) >= 7 and (
            our_rev.startswith(wanted) or wanted.startswith(our_rev)
        )
        same_tag = bool(our_input) and wanted == our_input
        if not (same_commit or same_tag):
            problems.append(f"Mathlib {wanted} (this project has {our_rev[:12]})")
    if not problems:
        return None
    return "the task was made for " + " and ".join(problems)
