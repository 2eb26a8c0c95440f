"""Find the Lean toolchain and the Lake project a check runs in, and name their versions.

Lean is found as `lake`/`lean` on PATH or in elan's bin folder (`$ELAN_HOME/bin`, else
`~/.elan/bin`). The project is the folder the user gives, or the nearest folder above a
starting point that has a `lakefile.lean`, `lakefile.toml` or `lean-toolchain`. Its versions
come from files, not from running anything: the toolchain from `lean-toolchain`, the Mathlib
revision from `lake-manifest.json`.

Checks do not run inside the project (generated code can write files while it is elaborated),
so what `lake env` would give them is read once, at start-up, with `lake env printenv`: the
module search path, the toolchain's own folders, and their executables (`repl_binary`,
`lean_binary`) are then run directly in a throw-away folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from formalbench.backends.sandbox import allowed_name, run_limited, scrubbed_env
from formalbench.core.errors import BackendError, InputError, ToolchainMissingError
from formalbench.core.records import CheckStatus

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


def _manifest(project_dir: Path | None) -> dict:
    if project_dir is None:
        return {}
    try:
        data = json.loads((project_dir / "lake-manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_manifest(project_dir: Path | None) -> list[dict]:
    """The packages of `lake-manifest.json` (empty when absent or unreadable)."""
    packages = _manifest(project_dir).get("packages")
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


def repl_binary(project_dir: Path | None) -> Path | None:
    """The built REPL executable of the project (its own, or its `REPL` dependency's), or None.

    Where a dependency lives: its manifest `dir` for a path dependency, else the manifest's
    `packagesDir` (`.lake/packages` by default; `lake-packages` before Lake 5).
    """
    if project_dir is None:
        return None
    folders = [project_dir]
    manifest = _manifest(project_dir)
    for package in read_manifest(project_dir):
        name = str(package.get("name", ""))
        if name.lower() != "repl":
            continue
        if package.get("type") == "path" and package.get("dir"):
            folders.append(project_dir / str(package["dir"]))
        packages_dir = str(manifest.get("packagesDir") or ".lake/packages")
        folders += [project_dir / packages_dir / name, project_dir / "lake-packages" / name]
    for folder in folders:
        for build in (".lake/build", "build"):
            binary = folder / build / "bin" / "repl"
            if binary.is_file() and os.access(binary, os.X_OK):
                return binary.resolve()
    return None


_PATH_LISTS = ("LEAN_PATH", "LEAN_SRC_PATH", "PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")
_PATHS = ("LEAN_SYSROOT", "LEAN", "LAKE", "LAKE_HOME", "ELAN", "ELAN_HOME")


def parse_printenv(text: str) -> dict[str, str]:
    """`printenv` output as a mapping; a line that is not `NAME=...` continues the last value."""
    env: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", line, re.DOTALL)
        if match:
            last = match[1]
            env[last] = match[2]
        elif last is not None:
            env[last] += "\n" + line
    return env


def _absolute(value: str, base: Path) -> str:
    return str(base / value) if value and not os.path.isabs(value) else value


def lake_environment(lake: str, project_dir: Path, timeout: float = 300.0) -> dict[str, str]:
    """The variables `lake env` sets for the project, fit to run Lean outside it.

    Only allow-listed names are kept (see `sandbox.allowed_name`), and relative folders (some
    Lake versions print `./.lake/...`) are made absolute against the project, since the
    checks run elsewhere. Raises BackendError when Lake cannot load the project.
    """
    outcome = run_limited(
        [lake, "env", "printenv"],
        cwd=project_dir,
        timeout=timeout,
        env=scrubbed_env(),
        confine=False,  # a trusted command in the user's project: no sandbox folder in it
    )
    if outcome.status != CheckStatus.ok or outcome.returncode != 0:
        why = (
            f"no answer within {timeout:g} s"
            if outcome.status == CheckStatus.timeout
            else f"exit code {outcome.returncode}"
        )
        tail = (outcome.stderr.strip() or outcome.stdout.strip())[-1000:]
        raise BackendError(
            f"`lake env printenv` failed in Lean project {project_dir} ({why})"
            + (f": {tail}" if tail else "")
            + "; run `lake build` there first"
        )
    found = {k: v for k, v in parse_printenv(outcome.stdout).items() if allowed_name(k)}
    if not found.get("LEAN_PATH"):
        raise BackendError(f"`lake env printenv` in {project_dir} did not give LEAN_PATH")
    for name in _PATH_LISTS:
        if name in found:
            parts = [_absolute(p, project_dir) for p in found[name].split(os.pathsep) if p]
            found[name] = os.pathsep.join(parts)
    for name in _PATHS:
        if name in found and os.sep in found[name]:
            found[name] = _absolute(found[name], project_dir)
    return found


def lean_binary(lake_vars: dict[str, str], fallback: str | None) -> str | None:
    """The project's own `lean` (Lake's LEAN, else LEAN_SYSROOT/bin/lean), else `fallback`.

    elan's `lean` proxy picks the toolchain from the folder it runs in, which for a check is a
    throw-away folder, so the toolchain's binary is named directly where Lake says which.
    """
    if lake_vars.get("LEAN") and os.path.isabs(lake_vars["LEAN"]):
        return lake_vars["LEAN"]
    if lake_vars.get("LEAN_SYSROOT"):
        candidate = Path(lake_vars["LEAN_SYSROOT"]) / "bin" / "lean"
        if candidate.is_file():
            return str(candidate)
    return fallback


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
            f"{INSTALL_HINT} and pass --lean-project DIR, or verify through a Kimina Lean "
            "Server (--backend kimina --kimina-url URL)"
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
