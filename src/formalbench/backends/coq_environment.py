"""What a Coq check is missing when coqc cannot load a library, said so the user can fix it.

Why: coqc's own words ("Unable to locate library BTree with prefix BT") do not say whether
the project was never built, was built by another coqc, or does not hold the library at all,
and the fix differs. With no project given, the fix is to give one (`--coq-project DIR` or
the task's `coq_project` field). With one given (issue 30 item 6), suggesting `--coq-project`
again is wrong: the library's logical name is read off coqc's message, mapped through the
project's `-R`/`-Q` folders, and the line says what is there: the source without its `.vo`
("the project is not built: no BTree.vo under DIR/theories; build it (make) with the same
coqc"), a `.vo` another coqc wrote, or nothing the project binds to that name.

The line leads with the diagnosis and ends with coqc's own message, so a summary that cuts a
long line keeps the part that says what to do. Only the file system is read (names and
existence, a bounded walk for `-R` folders); nothing is compiled.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from formalbench.backends.coq_project import (
    MAX_WALK_DEPTH,
    MAX_WALK_ENTRIES,
    CoqProject,
    project_file,
)
from formalbench.toolchains.toolchain import Toolchain

# coqc's words when a `Require` cannot be met here: the library is not on the load path, or its
# `.vo` files were compiled by another coqc or against other dependencies (Rocq 9: "Error when
# parsing .vo ... has bad version number").
ENVIRONMENT = re.compile(
    r"Cannot find a physical path bound to logical path|Cannot find library|"
    r"Unable to locate library|makes inconsistent assumptions over library|"
    r"contains library \S+ and not library|has bad magic number|incompatible version|"
    r"Error when parsing \.vo|has bad version number",
)
NO_PROJECT_HINT = (
    "a library the file requires is not on coqc's load path here, or was compiled by "
    "another coqc: give its Coq project with --coq-project DIR, the folder of its "
    "_CoqProject, or the task's `coq_project` field"
)
_MISSING = re.compile(
    r"(?:Unable to locate library|Cannot find a physical path bound to logical path|"
    r"Cannot find library)\s+(?P<name>[\w']+(?:\.[\w']+)*)"
    r"(?:\s+with prefix\s+(?P<prefix>[\w']+(?:\.[\w']+)*))?"
)
_OTHER_BUILD = re.compile(
    r"from file (?P<vo>\S+\.vo)\)? for library (?P<lib>[\w'.]+?)[:\s]|"
    r"(?P<vo2>\S+\.vo)\s+has bad (?:magic|version) number|"
    r"makes inconsistent assumptions over library (?P<lib2>[\w'.]+)"
)


def environment_message(coqc_message: str, project: CoqProject | None, toolchain: Toolchain) -> str:
    """The line an `environment` diagnostic carries: what is missing and how to fix it,
    then coqc's message."""
    said = " ".join(coqc_message.split())
    hint = NO_PROJECT_HINT if project is None else project_hint(said, project, toolchain)
    return f"{hint} (coqc: {said})"


def build_advice(toolchain: Toolchain, root: Path) -> str:
    """How to build the project at `root` with the coqc the checks run (a `.vo` loads only in
    the Coq that compiled it): `make`, after `coq_makefile` where the project has no
    Makefile, run through `formalbench toolchain run` for a provisioned toolchain."""
    make = "make" if (root / "Makefile").is_file() else None
    if make is None:
        found = project_file(root)
        listed = found.name if found is not None else "_CoqProject"
        make = f"coq_makefile -f {listed} -o Makefile && make"
    if toolchain.is_host:
        return f"the coqc on PATH (Coq {toolchain.version()}): cd {root} && {make}"
    quoted = make if make == "make" else f"sh -c '{make}'"
    return (
        f"the coqc of toolchain {toolchain.name} (Coq {toolchain.version()}): "
        f"formalbench toolchain run {toolchain.name} --in {root} -- {quoted}"
    )


def project_hint(said: str, project: CoqProject, toolchain: Toolchain) -> str:
    """What the project at hand lacks for the library coqc named in `said`."""
    compiler = build_advice(toolchain, project.root)
    other = _OTHER_BUILD.search(said)
    if other is not None:
        vo = other.group("vo") or other.group("vo2")
        what = f"{vo} was" if vo else f"the .vo of {other.group('lib2')} or one it requires was"
        return (
            f"{what} compiled by another coqc or against other libraries; rebuild the "
            f"project (make clean first) with {compiler}"
        )
    found = _MISSING.search(said)
    if found is None:
        return (
            f"a library the file requires cannot be loaded with the project {project.root}; "
            f"check that it is built with {compiler} and binds that library"
        )
    prefix, name = found.group("prefix"), found.group("name")
    logical = f"{prefix}.{name}" if prefix else name
    sources, built = _lookup(project, prefix, name)
    module = name.rsplit(".", 1)[-1]
    if sources and not built:
        where = ", ".join(sorted({str(s.parent) for s in sources}))
        return (
            f"the project is not built: no {module}.vo under {where} (its {module}.v is "
            f"there); build it with the same coqc, {compiler}"
        )
    if built:
        return (
            f"{built[0]} is there but coqc could not load it as {logical} (compiled by "
            f"another coqc, or a dependency missing); rebuild the project {project.root} "
            f"(make clean first) with {compiler}"
        )
    return (
        f"the project {project.root} has no library {logical} (it binds "
        f"{_bindings(project) or 'no logical name'}); check the file's Require or the "
        "project's -R/-Q lines"
    )


def _mappings(project: CoqProject) -> list[tuple[str, Path, str]]:
    """(flag, folder, logical root) of each `-R`/`-Q` of the project."""
    args = project.args
    return [
        (args[i], Path(args[i + 1]), args[i + 2])
        for i in range(len(args) - 2)
        if args[i] in ("-R", "-Q")
    ]


def _bindings(project: CoqProject) -> str:
    return ", ".join(
        f"{folder.relative_to(project.root) if folder.is_relative_to(project.root) else folder}"
        f" as {root}"
        for _, folder, root in _mappings(project)
    )


def _lookup(project: CoqProject, prefix: str | None, name: str) -> tuple[list[Path], list[Path]]:
    """The `.v` and `.vo` files of the project that `From prefix Require name` (or `Require
    name`) would load: at the exact path under the folder bound to the logical root, and any
    file below the prefix's folder whose logical path ends with `name` (coqc searches there
    for `From`, under `-R` and `-Q` alike; a short name without `From`, under `-R` only:
    measured with 8.16)."""
    full = f"{prefix}.{name}" if prefix else name
    sources: list[Path] = []
    built: list[Path] = []
    for flag, folder, root in _mappings(project):
        if full.startswith(root + "."):
            base = folder.joinpath(*full[len(root) + 1 :].split("."))
            sources += [base.with_suffix(".v")] if base.with_suffix(".v").is_file() else []
            built += [base.with_suffix(".vo")] if base.with_suffix(".vo").is_file() else []
        if prefix is None:  # `Require Deep`: a short name, found below `-R` folders only
            under: Path | None = folder if flag == "-R" else None
        elif prefix == root:
            under = folder
        elif prefix.startswith(root + "."):
            under = folder.joinpath(*prefix[len(root) + 1 :].split("."))
        else:
            under = None
        if under is not None:
            more_src, more_vo = _find_below(under, name.split("."))
            sources += [p for p in more_src if p not in sources]
            built += [p for p in more_vo if p not in built]
    return sources, built


def _find_below(folder: Path, parts: list[str]) -> tuple[list[Path], list[Path]]:
    """`parts[-1].v`/`.vo` files below `folder` whose folders end with `parts[:-1]`, by a
    walk bounded as the project's own (no symlinked folder entered)."""
    sources: list[Path] = []
    built: list[Path] = []
    seen = 0
    stack: list[tuple[Path, int]] = [(folder, 0)]
    while stack:
        current, depth = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                return sources, built
            if entry.is_dir(follow_symlinks=False):
                if depth < MAX_WALK_DEPTH:
                    stack.append((Path(entry.path), depth + 1))
                continue
            path = Path(entry.path)
            if path.stem != parts[-1] or path.suffix not in (".v", ".vo"):
                continue
            if len(parts) > 1 and list(path.parent.parts[-(len(parts) - 1) :]) != parts[:-1]:
                continue
            (sources if path.suffix == ".v" else built).append(path)
    return sources, built
