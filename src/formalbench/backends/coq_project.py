"""A Coq project's load path, read from its `_CoqProject`, for checking tasks that `Require` it.

Why: real tasks come from real projects (`From MyLib Require Import Foo.`); coqc finds `Foo`
only through the `-R`/`-Q` flags the project's build passes. `read_coq_project(DIR)` reads
`DIR/_CoqProject` as coq_makefile does (whitespace-separated words, `#` comments, `"…"`
quoting) and keeps what coqc needs: `-R dir Lib` and `-Q dir Lib` (a logical root over
compiled `.vo` files), `-I dir` (OCaml plugin folders) and `-arg` words. Folders are relative
to DIR. File and folder names of the build, `-native-compiler`, `-docroot`,
`-generate-meta-for-package` and `VAR = value` lines are build matters and are skipped.

The project is used read-only and never built: its compiled libraries are passed to coqc as
load-path flags and every folder is bound read-only in the sandbox (`ProjectPaths.read_only`,
see `backends/sandbox.py`), so a check cannot rebuild or change them. A `.vo` that is missing
or was compiled by another coqc is coqc's error, reported as an environment problem.

Bounds (issue 29 item 4: a project folder is data too). The project file is read up to
`MAX_PROJECT_FILE_BYTES` (a 3 GB sparse `_CoqProject` is refused, not read). A folder it
names may not be `/`, under `/proc`, `/sys` or `/dev`, nor reached through a symlink that
leaves the project; the walk over its compiled files (the verdict cache key's digest) goes
at most `MAX_WALK_DEPTH` folders deep and `MAX_WALK_ENTRIES` entries in all, never follows a
symlinked folder, reads only the metadata of `.vo` files, and refuses a `.vo` symlink that
leaves the project. Each violation is one line naming the file and the word.

`-arg` words go to coqc as given, except the flags that would change what a verdict means or
reach files (`-type-in-type` makes every statement provable, `-set "Dump Arith=…"` or
`-load-vernac-source f` would run around the gate): only `ALLOWED_ARGS` pass, and
`-set`/`-unset` of a proof-style setting (`ALLOWED_SETTINGS`; coq-topology's `_CoqProject`
sets `Default Goal Selector=!`). A line that
coq_makefile would refuse, or that we do not pass on, is an InputError naming the file and
the word: one line, exit 2 from the commands.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.core.errors import InputError
from formalbench.core.records import Language, Task

PROJECT_FILE = "_CoqProject"
ROCQ_PROJECT_FILE = "_RocqProject"  # Rocq 9's name, read the same way and preferred (as rocq does)
PROJECT_FILES = (ROCQ_PROJECT_FILE, PROJECT_FILE)


def project_file(folder: Path) -> Path | None:
    """The project file of `folder`: its `_RocqProject`, else its `_CoqProject`, else None."""
    return next((folder / n for n in PROJECT_FILES if (folder / n).is_file()), None)


# coqc flags a project may pass with `-arg` (with how many values each takes). Decided per
# flag (issue 29 item 5), measured on the kernel route with an honest proof of
# `forall n, n + 0 = n` checked against its admitted original under `-arg FLAG`:
# - `-w`, `-native-compiler`, `-q`: no bearing on the logic; pass.
# - `-indices-matter`, `-allow-sprop` (8.16's default), `-disallow-sprop`: only make the
#   kernel stricter (the dump lists no object as unsafe under them), both sides are compiled
#   under them; pass. The flags are part of the backend's version, hence of the verdict's
#   cache key.
# - `-noinit`, `-nois` (its 8.16 synonym): the prelude is not loaded; a file that imports it
#   (`From Coq Require Import Init.Prelude.`) passes, one that does not fails to compile on
#   both sides with coqc's own error. Nothing about the logic changes; pass.
# - `-impredicative-set` (in REFUSED_ARGS): changes the logic; the kernel route refuses every
#   object declared under it (the dump's `unsafe: impredicative_set`), so no proof could ever
#   pass: refused up front, naming the flag.
ALLOWED_ARGS: dict[str, int] = {
    "-w": 1,  # warnings
    "-native-compiler": 1,
    "-indices-matter": 0,
    "-allow-sprop": 0,
    "-disallow-sprop": 0,
    "-noinit": 0,
    "-nois": 0,
    "-q": 0,
}
REFUSED_ARGS: dict[str, str] = {
    "-impredicative-set": (
        "it makes Set impredicative, another logic than the one verdicts are given in: the "
        "kernel check refuses every object declared under it, so no proof could pass"
    ),
}
# Options a project may `-set`/`-unset` for all its files: proof-script style only (how goals
# are selected and bullets checked, which arguments are implicit). Nothing here weakens the
# kernel (`Guard Checking`, `Universe Checking`, ...) or writes files (`Dump Arith`); where
# one changes how a statement elaborates, it does so for the original and candidate alike,
# and the kernel comparison (`checking/coq_compare`) compares what the kernel got.
ALLOWED_SETTINGS = frozenset(
    {
        "Default Goal Selector",
        "Bullet Behavior",
        "Asymmetric Patterns",
        "Implicit Arguments",
        "Strict Implicit",
        "Default Proof Using",
        "Suggest Proof Using",
    }
)
_BUILD_ONLY = {"-native-compiler": 1, "-docroot": 1, "-generate-meta-for-package": 1}
_SOURCE_SUFFIXES = (".v", ".ml", ".mli", ".mlg", ".mllib", ".mlpack")


MAX_PROJECT_FILE_BYTES = 1 << 20  # real project files are a few kB (coq-topology: 2 kB)
MAX_WALK_DEPTH = 32
MAX_WALK_ENTRIES = 200_000  # files and folders seen; Mathlib-sized Coq projects hold ~20,000
SYSTEM_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))


@dataclass(frozen=True)
class CoqProject:
    """The coqc flags of a project and the folders they name (absolute, resolved)."""

    root: Path
    args: tuple[str, ...]
    read_only: tuple[Path, ...] = field(default=())

    def digest(self) -> str:
        """A short hash of the flags and of every `.vo` under the project's folders (name,
        size, modification time): a verdict kept under one build is not reused under another.
        The walk is bounded (see the module doc); a violation is an InputError. Walked once
        (when the project is read), as the backend's version is computed once."""
        return self._digest

    @functools.cached_property
    def _digest(self) -> str:
        digest = hashlib.sha256("\0".join(self.args).encode())
        for folder in self.read_only:
            for vo, size, mtime in vo_files(folder, self.root, self.read_only):
                digest.update(f"{vo}\0{size}\0{mtime}\n".encode())
        return digest.hexdigest()[:12]


def _inside(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == f or path.is_relative_to(f) for f in folders)


def vo_files(folder: Path, root: Path, allowed: Sequence[Path] = ()) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of every `.vo` under `folder`, by a bounded walk (module doc):
    symlinked folders are not entered; a `.vo` symlink must stay in `root` or `allowed`."""
    where = f"{root}: load path {folder}"
    found: list[tuple[str, int, int]] = []
    seen = 0
    stack: list[tuple[Path, int]] = [(folder, 0)]
    while stack:
        current, depth = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            if current == folder:
                raise InputError(f"{where}: cannot be read ({exc.strerror})") from None
            continue  # a subfolder that vanished or is closed to us: coqc cannot read it either
        for entry in entries:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                raise InputError(
                    f"{where}: more than {MAX_WALK_ENTRIES:,} files and folders; name the "
                    "project's own library folders, not a larger tree"
                )
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 > MAX_WALK_DEPTH:
                        raise InputError(
                            f"{where}: folders nested more than {MAX_WALK_DEPTH} deep "
                            f"({entry.path})"
                        )
                    stack.append((Path(entry.path), depth + 1))
                elif entry.is_symlink():
                    _linked(entry, folder, root, allowed, where, found)
                elif entry.name.endswith(".vo"):
                    info = entry.stat(follow_symlinks=False)
                    found.append((entry.path, info.st_size, info.st_mtime_ns))
            except OSError:
                continue  # vanished while we looked
    found.sort()
    return found


def _linked(
    entry: os.DirEntry[str],
    folder: Path,
    root: Path,
    allowed: Sequence[Path],
    where: str,
    found: list[tuple[str, int, int]],
) -> None:
    """A symlink under a load-path folder. coqc follows symlinked folders when it maps
    `-R`/`-Q` (measured with 8.16: `theories/loop -> ..` bound the project's parent as
    `L.loop` and recursed until its own limit), so a folder link must stay inside `folder`
    and not lead to one of its own ancestors; a `.vo` link must stay in the project. Other
    links (sources, broken ones) are no library and are left alone."""
    link = Path(entry.path)
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        if entry.name.endswith(".vo"):
            raise InputError(f"{where}: {link} is a broken or looping symlink") from None
        return
    if target.is_dir():
        if not _inside(target, [folder]) or _inside(link, [target]):
            raise InputError(
                f"{where}: {link} links to the folder {target}, "
                + ("its own ancestor (a loop)" if _inside(link, [target]) else "outside it")
            )
        return  # a second name for a folder walked anyway
    if entry.name.endswith(".vo"):
        if not _inside(target, [root, *allowed]):
            raise InputError(f"{where}: {link} is a symlink out of the project ({target})")
        info = target.stat()
        found.append((str(link), info.st_size, info.st_mtime_ns))


def read_project_text(path: Path) -> str:
    """The text of a project file, read up to MAX_PROJECT_FILE_BYTES; one line if it is
    larger, no regular file, or unreadable (never read whole first: it may be sparse)."""
    if not os.path.isfile(path):  # before opening: a FIFO would block the open itself
        raise InputError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PROJECT_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_PROJECT_FILE_BYTES:
        raise InputError(
            f"{path}: larger than {MAX_PROJECT_FILE_BYTES:,} bytes; a project file lists "
            "options and files, not data"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def project_words(text: str, where: str) -> list[str]:
    """coq_makefile's reading: blanks split, `#` starts a comment, `"…"` is one word."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise InputError(f"{where}: unterminated string")
            words.append(text[i + 1 : end])
            i = end + 1
        else:
            j = i
            while j < n and text[j] not in " \t\r\n#":
                j += 1
            words.append(text[i:j])
            i = j
    return words


def _folder(root: Path, name: str, flag: str, where: str) -> Path:
    """The folder `name` of the project at `root`, resolved, or one line saying why not:
    missing, `/` or a system folder, or a symlink that leads out of the project."""
    written = Path(os.path.normpath(root / name))
    try:
        path = written.resolve(strict=False)
    except (OSError, RuntimeError):
        raise InputError(f"{where}: `{flag} {name}`: a looping symlink") from None
    if not path.is_dir():
        raise InputError(f"{where}: `{flag} {name}`: no such folder ({path})")
    if path == Path("/") or _inside(path, SYSTEM_FOLDERS):
        raise InputError(f"{where}: `{flag} {name}`: {path} is not a project folder")
    if _inside(written, [root]) and not _inside(path, [root]):
        raise InputError(
            f"{where}: `{flag} {name}`: a symlink out of the project (to {path}); name the "
            "folder itself"
        )
    return path


def _logical(name: str, flag: str, where: str) -> str:
    parts = name.split(".")
    if not name or not all(p and (p[0].isalpha() or p[0] == "_") for p in parts):
        raise InputError(f"{where}: `{flag} … {name}`: not a Coq logical path such as `MyLib`")
    return name


def _split_arg(value: str, where: str) -> list[str]:
    """The words of one `-arg` value (quotes keep blanks together, as coq_makefile does)."""
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise InputError(f"{where}: `-arg {value}`: {exc}") from None


def _extra_args(words: list[str], where: str) -> list[str]:
    """The `-arg` words of the whole file (a flag and its value may come in two `-arg`s),
    each an allowed flag followed by its values."""
    out: list[str] = []
    i = 0
    while i < len(words):
        flag = words[i]
        if flag in ("-set", "-unset") and i + 1 < len(words):
            setting = words[i + 1].split("=", 1)[0].strip()
            if setting not in ALLOWED_SETTINGS or (flag == "-unset" and "=" in words[i + 1]):
                allowed = ", ".join(sorted(ALLOWED_SETTINGS))
                raise InputError(
                    f"{where}: `-arg {flag}` is not passed to coqc by formalbench for "
                    f"`{words[i + 1]}` (only proof-style settings are: {allowed})"
                )
            out += words[i : i + 2]
            i += 2
            continue
        if flag in REFUSED_ARGS:
            raise InputError(f"{where}: `-arg {flag}` is refused: {REFUSED_ARGS[flag]}")
        if flag not in ALLOWED_ARGS:
            allowed = ", ".join(ALLOWED_ARGS)
            raise InputError(
                f"{where}: `-arg {flag}` is not passed to coqc by formalbench "
                f"(it can change what a verdict means or reach files); allowed: {allowed}"
            )
        count = ALLOWED_ARGS[flag]
        if i + count >= len(words):
            raise InputError(f"{where}: `-arg {flag}` needs a value")
        out += words[i : i + 1 + count]
        i += 1 + count
    return out


def _source_word(word: str) -> bool:
    """A file or folder of the build (coq_makefile takes sources, `META.*` and folders)."""
    name = Path(word).name
    return word.endswith(_SOURCE_SUFFIXES) or name.startswith("META.") or "." not in name


def read_coq_project(folder: str | Path) -> CoqProject:
    """The project in `folder` (its `_RocqProject` or `_CoqProject`); InputError with one line
    if it is not one."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise InputError(f"--coq-project {folder}: no such folder")
    root = root.resolve()
    found = project_file(root)
    if found is None:
        raise InputError(
            f"--coq-project {folder}: no {ROCQ_PROJECT_FILE} or {PROJECT_FILE} in {root}"
        )
    where = str(found)
    try:
        target = found.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InputError(f"{where}: a broken or looping symlink") from None
    if not _inside(target, [root]):
        raise InputError(f"{where}: a symlink out of the project (to {target})")
    text = read_project_text(found)
    words = project_words(text, where)
    args: list[str] = []
    extra: list[str] = []
    folders: list[Path] = []
    i = 0
    while i < len(words):
        word = words[i]
        needs = {"-R": 2, "-Q": 2, "-I": 1, "-arg": 1, **_BUILD_ONLY}.get(word, 0)
        if i + needs >= len(words):
            raise InputError(f"{where}: `{word}` needs {needs} value{'s' if needs > 1 else ''}")
        if word in ("-R", "-Q"):
            path = _folder(root, words[i + 1], word, where)
            args += [word, str(path), _logical(words[i + 2], word, where)]
            folders.append(path)
        elif word == "-I":
            path = _folder(root, words[i + 1], word, where)
            args += ["-I", str(path)]
            folders.append(path)
        elif word == "-arg":
            extra += _split_arg(words[i + 1], where)
        elif word in _BUILD_ONLY:
            pass
        elif i + 1 < len(words) and words[i + 1] == "=":  # `VAR = value`, a make variable
            if i + 2 >= len(words):
                raise InputError(f"{where}: `{word} =` needs a value")
            needs = 2
        elif word.startswith("-"):
            raise InputError(f"{where}: unknown option `{word}` (coq_makefile refuses it too)")
        elif not _source_word(word):
            raise InputError(f"{where}: `{word}` is neither an option nor a source file")
        i += 1 + needs
    args += _extra_args(extra, where)
    project = CoqProject(root=root, args=tuple(args), read_only=tuple(dict.fromkeys(folders)))
    project.digest()  # walk now: a folder too large or a symlink out is refused up front
    return project


BUILD_WORD = "build"  # in the backend's version: `project ROOT build DIGEST`
_BUILD = re.compile(rf"( project \S.*?) {BUILD_WORD} [0-9a-f]{{12}}(?= |$)")


def without_build(version: str) -> str:
    """A backend version with its project's build digest taken out: what a run's identity
    compares (issue 30 item 7). Building a project after a run failed for `environment`
    must let the same run resume; the verdict cache keeps the digest (`CoqBackend.version`),
    so no verdict made under one build is served under another."""
    return _BUILD.sub(r"\1", version, count=1)


def tasks_project(tasks: Sequence[Task]) -> str | None:
    """The one Coq project the Coq tasks of a run name (their `coq_project`), or None.

    One run has one backend, so tasks that name two projects cannot share it: an InputError
    says so (evaluate them apart, or give `--coq-project`, which overrides the field). Tasks
    that name none are checked under the others' project too: a larger load path changes
    nothing for a file that requires nothing of it."""
    named = sorted({t.coq_project for t in tasks if t.language == Language.coq and t.coq_project})
    if len(named) > 1:
        raise InputError(
            f"the tasks name {len(named)} Coq projects ({', '.join(named)}); one run uses one: "
            "evaluate them apart, or give --coq-project"
        )
    return named[0] if named else None
