"""Where a Coq project's library lives, read from whichever build convention it uses.

Coq projects have declared their load path four ways over the years, and one history often
passes through several of them (topology: `Make` until 2020, then `_CoqProject` and dune):

1. `_CoqProject` (coq_makefile, IDEs): `-R dir Name`, `-Q dir Name`, `-arg OPT`, file names;
2. `Make`, the same format read by the older `coq_makefile -f Make`;
3. dune: every `dune` file with a `(coq.theory (name Name) (theories ...) (flags ...))`
   stanza maps its folder to `Name` (recursively, qualified, under `(include_subdirs
   qualified)`; its subfolders too, unqualified, under `(include_subdirs unqualified)`);
4. a plain `Makefile` with `-R`/`-Q` (or old `-I dir`, the empty logical prefix) on its
   command lines, `$(VAR)` expanded from the Makefile's own assignments.

The first convention present wins, in that order. A project file is only read, never run:
the same reading serves a git revision (mining) and a folder on disk (validation).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq_project import project_words, read_project_text
from formalbench.core.errors import InputError

Reader = Callable[[str], str | None]  # repository-relative path -> text, None if absent


@dataclass(frozen=True)
class LoadDir:
    """One physical folder bound to a logical name (`-R`/`-Q`)."""

    option: str  # "-R" or "-Q"
    path: str  # relative to the project root, "." for the root
    logical: str
    recursive: bool = True  # False: only the folder's own files belong to the library
    args: tuple[str, ...] = ()  # coqc options of this library only (dune `flags`)


@dataclass(frozen=True)
class CoqLayout:
    """The load path of a project at one revision, and which `.v` files are its library."""

    origin: str  # _CoqProject / Make / dune / Makefile
    dirs: tuple[LoadDir, ...]
    files: tuple[str, ...] = ()  # files listed by name (empty: every .v under `dirs`)
    args: tuple[str, ...] = ()  # coqc options of every file (`-arg` of _CoqProject/Make)
    outside: tuple[str, ...] = field(default=())  # load-path entries outside the tree

    def contains(self, path: str) -> bool:
        """Is `path` (repository-relative) a library source of this project?"""
        if not path.endswith(".v"):
            return False
        if self.files:
            return path in self.files
        return any(_under(path, d) for d in self.dirs)

    def flags(
        self, root: Path | None = None, for_file: str | None = None, options: bool = True
    ) -> list[str]:
        """coqc/coqdep options: paths relative to the root, or absolute under `root` (then a
        folder missing from the tree is left out: coqc would warn about it); the library
        options of `for_file`'s own folder last; `options=False`: the load path alone
        (coqdep's arguments)."""
        out: list[str] = []
        for d in self.dirs:
            if root is None:
                out += [d.option, d.path, d.logical]
            elif (root / d.path).is_dir():
                out += [d.option, str((root / d.path).resolve()), d.logical]
        if not options:
            return out
        out += self.args
        if for_file is not None:
            for d in self.dirs:
                if _under(for_file, d):
                    out += d.args
                    break
        return out


def _under(path: str, d: LoadDir) -> bool:
    parent = posixpath.dirname(path) or "."
    if d.path == ".":
        return d.recursive or parent == "."
    return parent == d.path or (d.recursive and path.startswith(d.path + "/"))


def _norm(path: str) -> str | None:
    """A repository-relative folder ("." for the root), None when it leaves the tree."""
    p = posixpath.normpath(path.strip().removeprefix("./") or ".")
    return None if p == ".." or p.startswith("../") or p.startswith("/") else p


def read_layout(read: Reader, list_paths: Callable[[], list[str]]) -> CoqLayout | None:
    """The layout from the first convention present, None when the project has none."""
    for name in ("_RocqProject", "_CoqProject", "Make"):
        text = read(name)
        if text is not None:
            return _project_file(text, name)
    dune_files = [p for p in list_paths() if p == "dune" or p.endswith("/dune")]
    layout = _dune(read, dune_files) if dune_files else None
    if layout is not None:
        return layout
    text = read("Makefile")
    return _makefile(text) if text is not None else None


def git_layout(repo, rev: str) -> CoqLayout | None:
    """The layout of a `GitRepo` at `rev`."""
    return read_layout(
        lambda p: repo.show(rev, p),
        lambda: repo.git("ls-tree", "-r", "--name-only", rev).splitlines(),
    )


def tree_layout(root: Path) -> CoqLayout | None:
    """The layout of a checked-out project folder."""

    def read(rel: str) -> str | None:
        """A layout file's text; None when absent, or no small regular file (a project file
        of a mined tree is data: never read whole past MAX_PROJECT_FILE_BYTES)."""
        path = root / rel
        try:
            return read_project_text(path) if path.is_file() else None
        except InputError:
            return None

    def list_paths() -> list[str]:
        return [p.relative_to(root).as_posix() for p in root.rglob("dune") if p.is_file()]

    return read_layout(read, list_paths)


def _project_file(text: str, origin: str) -> CoqLayout:
    """`_CoqProject` / `Make`: the coq_makefile argument format."""
    try:
        words = project_words(text, origin)  # coq_makefile's own reading of the format
    except InputError:  # an unbalanced quote: read it word by word
        words = text.split()
    dirs: list[LoadDir] = []
    files: list[str] = []
    args: list[str] = []
    outside: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        if w in ("-R", "-Q") and k + 2 < len(words):
            path = _norm(words[k + 1])
            if path is None:
                outside.append(words[k + 1])
            else:
                dirs.append(LoadDir(w, path, words[k + 2]))
            k += 3
        elif w == "-arg" and k + 1 < len(words):
            args += shlex.split(words[k + 1])
            k += 2
        elif w in ("-I", "-o", "-install", "-docroot") and k + 1 < len(words):
            k += 2  # -I names an OCaml folder here, not a Coq library
        else:
            if w.endswith(".v"):
                files.append(w.removeprefix("./"))
            k += 1
    if not dirs:  # an old Make of bare file names: coqc's implicit load path, the root
        dirs.append(LoadDir("-Q", ".", "", recursive=False))
    return CoqLayout(origin, tuple(dirs), tuple(files), tuple(args), tuple(outside))


def _sexps(text: str) -> list:
    """dune's s-expressions as nested lists of atoms (comments dropped)."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|[()]|[^\s()";]+|;[^\n]*', text)
    stack: list[list] = [[]]
    for tok in tokens:
        if tok.startswith(";"):
            continue
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) > 1:
                done = stack.pop()
                stack[-1].append(done)
        else:
            stack[-1].append(tok.strip('"'))
    while len(stack) > 1:  # unbalanced: close what is open
        done = stack.pop()
        stack[-1].append(done)
    return stack[0]


def _field(stanza: list, name: str) -> list:
    for item in stanza[1:]:
        if isinstance(item, list) and item and item[0] == name:
            return item[1:]
    return []


def _atoms(items: list) -> list[str]:
    out: list[str] = []
    for item in items:
        out += _atoms(item) if isinstance(item, list) else [item]
    return out


def _dune(read: Reader, dune_files: list[str]) -> CoqLayout | None:
    """Every `coq.theory` of the project's dune files, one load-path entry each."""
    dirs: list[LoadDir] = []
    needed: list[str] = []
    for path in sorted(dune_files):
        forms = _sexps(read(path) or "")
        folder = posixpath.dirname(path) or "."
        subdirs = next(
            (
                f[1]
                for f in forms
                if isinstance(f, list) and len(f) > 1 and f[0] == "include_subdirs"
            ),
            "no",
        )
        for form in forms:
            if not (isinstance(form, list) and form and form[0] == "coq.theory"):
                continue
            name = _field(form, "name")
            if not name or not isinstance(name[0], str):
                continue
            args = tuple(a for a in _atoms(_field(form, "flags")) if a != ":standard")
            needed += _atoms(_field(form, "theories"))
            if subdirs == "qualified":
                dirs.append(LoadDir("-R", folder, name[0], True, args))
            else:  # `no`: the folder's own files; `unqualified`: subfolders, flat
                dirs.append(LoadDir("-Q", folder, name[0], subdirs == "unqualified", args))
    if not dirs:
        return None
    ours = {d.logical for d in dirs}
    outside = tuple(sorted({t for t in needed if t not in ours}))  # installed libraries
    return CoqLayout("dune", tuple(dirs), outside=outside)


def _makefile(text: str) -> CoqLayout | None:
    """`-R`/`-Q`/`-I` on a plain Makefile's lines, with its `$(VAR)`s expanded."""
    text = re.sub(r"\\\n", " ", text)
    values: dict[str, list[str]] = {}
    for m in re.finditer(r"^\s*([A-Za-z_][\w.]*)\s*[:?+]?=\s*([^#\n]*)", text, re.MULTILINE):
        values.setdefault(m.group(1), []).append(m.group(2).strip())

    def expand(word: str, depth: int = 0) -> list[str]:
        m = re.search(r"\$[({]([\w.]+)[)}]", word)
        if m is None or depth > 5:
            return [] if "$" in word else [word]
        out: list[str] = []
        for value in values.get(m.group(1), []):
            out += expand(word[: m.start()] + value + word[m.end() :], depth + 1)
        return out

    dirs: list[LoadDir] = []
    outside: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        for m in re.finditer(r"(?<!\S)(-R|-Q)\s+(\S+)\s+(\S+)|(?<!\S)-I\s+(\S+)", line):
            option = m.group(1) or "-I"
            for raw in expand(m.group(2) or m.group(4)):
                logical_words = expand(m.group(3)) if m.group(3) else [""]
                for logical in logical_words[:1]:
                    path = _norm(raw)
                    if path is None:
                        outside.append(raw)
                    elif (option, path, logical) not in seen:
                        seen.add((option, path, logical))
                        if option == "-I":  # old coqc: the folder itself, empty prefix
                            dirs.append(LoadDir("-Q", path, "", recursive=False))
                        else:
                            dirs.append(LoadDir(option, path, logical))
    named = [d for d in dirs if d.logical]
    chosen = named or dirs  # `-I` counts only in a Makefile with no -R/-Q at all
    if not chosen:
        return None
    return CoqLayout("Makefile", tuple(chosen), outside=tuple(outside))
