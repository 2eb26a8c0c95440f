"""A Coq project at a revision, with the dependency closure of a file compiled.

The source tree comes from a small provider (`git archive REV | tar -x`, no worktree); the
compiled tree (sources plus the `.vo` files of the closure) is kept in the snapshot store
under an id naming the revision and the closure, so a second task of the same commit, or a
second run, restores it instead of rebuilding. Flags (`-R`/`-Q` and extra options) come from
the project's own build file at that revision, whichever convention it uses (`coqlayout`:
`_CoqProject`, `Make`, dune, Makefile); dependencies from `coqdep` over the library's files
with those flags; each dependency is built with `coqc` in dependency order.

Both run on the toolchain the trees are for (`BuiltTrees(toolchain=...)`, by default the
default toolchain, the one the validating `CoqBackend` uses): a `.vo` built by another Coq
cannot be loaded ("Error when parsing .vo"), so the snapshot id names the toolchain too.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from formalbench.backends.sandbox import ProcessOutcome, run_limited, scrubbed_env
from formalbench.core.errors import BackendError, InputError
from formalbench.core.gate import refusal
from formalbench.core.records import CheckStatus, Language, Severity
from formalbench.pipelines.ape.coqlayout import CoqLayout, tree_layout

if TYPE_CHECKING:
    from formalbench.toolchains.toolchain import Toolchain


def _toolchain(toolchain: Toolchain | None) -> Toolchain:
    from formalbench.toolchains.toolchain import resolve

    return toolchain if toolchain is not None else resolve()


INDEX_NAME = "index.jsonl"  # in the trees folder: which snapshot built which file's closure


class TreeProvider(Protocol):
    """Writes the project's source tree at `rev` into the empty folder `dest`."""

    def write_tree(self, rev: str, dest: Path) -> None: ...


class GitArchiveProvider:
    """`git archive REV | tar -x`: a plain checkout, no `.git`, no worktree bookkeeping."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = Path(git_dir).resolve()

    def write_tree(self, rev: str, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(
            ["git", "-C", str(self.git_dir), "archive", "--format=tar", rev],
            stdout=subprocess.PIPE,
        )
        untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout)
        if archive.stdout:
            archive.stdout.close()
        if archive.wait() != 0 or untar.returncode != 0:
            raise InputError(f"{self.git_dir}: cannot export revision {rev}")


class ProjectError(BackendError):
    """The project at a revision cannot be built: `reason` says how, in a fixed phrase (so
    failures of many tasks can be counted together), the message says where."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def project_layout(tree: Path) -> CoqLayout:
    """The load path of the project checked out at `tree` (any convention of `coqlayout`)."""
    layout = tree_layout(tree)
    if layout is None:
        raise ProjectError(
            "no Coq project file at this revision",
            f"{tree.name}: none of _CoqProject, Make, dune coq.theory, Makefile with -R/-Q",
        )
    return layout


def coq_project_args(tree: Path, for_file: str | None = None) -> tuple[list[str], list[str]]:
    """(flags relative to the tree root, flags with absolute paths) of the project."""
    layout = project_layout(tree)
    return layout.flags(None, for_file), layout.flags(tree, for_file)


def library_files(tree: Path, layout: CoqLayout) -> list[str]:
    """The project's `.v` files present in the tree, repository-relative."""
    if layout.files:
        return [f for f in layout.files if (tree / f).is_file()]
    found = (p.relative_to(tree).as_posix() for p in tree.rglob("*.v"))
    return sorted(f for f in found if layout.contains(f))


def dependency_closure(tree: Path, target: str, toolchain: Toolchain | None = None) -> list[str]:
    """The `.v` files `target` needs, transitively, in build order (target excluded), as the
    toolchain's `coqdep` finds them (None: the default toolchain)."""
    layout = project_layout(tree)
    files = library_files(tree, layout)
    if target not in files:
        files.append(target)
    chain = _toolchain(toolchain)
    run = chain.run(
        [chain.program("coqdep"), *layout.flags(tree, options=False), *files],
        cwd=tree,
        timeout=300,
    )
    if run.returncode != 0 and not run.stdout.strip():
        from formalbench.pipelines.ape.outcome import shorten

        raise ProjectError("coqdep failed", f"{tree.name}: {shorten(run.stderr)}")
    deps: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        head, _, tail = line.partition(":")
        outs = head.split()
        if not outs or not outs[0].endswith(".vo"):
            continue
        src = outs[0][:-3] + ".v"
        deps[src] = [_relative(tree, d[:-3] + ".v") for d in tail.split() if d.endswith(".vo")]
    order: list[str] = []
    seen: set[str] = set()

    def visit(node: str) -> None:
        if node in seen:
            return
        seen.add(node)
        for d in deps.get(node, []):
            visit(d)
        order.append(node)

    visit(target)
    return [f for f in order if f != target]


def _relative(tree: Path, path: str) -> str:
    """coqdep names dependencies through the (absolute) load path: back to tree-relative."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(tree.resolve()).as_posix()
        except ValueError:
            return path
    return path


def build_error(run: ProcessOutcome) -> str:
    """Why a dependency's coqc failed: its first error as Coq printed it, whole (up to
    `outcome.MESSAGE_CAP`, then cut at a line), with its line; warnings are not errors and
    are left out (Rocq 9 prints deprecations before the error)."""
    from formalbench.backends.coq_output import parse_messages
    from formalbench.pipelines.ape.outcome import shorten

    errors = [m for m in parse_messages(run.stderr, []) if m.severity == Severity.error]
    if errors:
        first = errors[0]
        where = f"line {first.line}: " if first.line else ""
        return shorten(where + first.text)
    if run.status != CheckStatus.ok:
        return f"coqc ended with {run.status.value}"
    return shorten(run.stderr) or f"coqc exited with {run.returncode}"


class BuiltTrees:
    """Project trees at revisions with a file's dependencies compiled, cached as snapshots."""

    def __init__(
        self,
        provider: TreeProvider,
        work: Path,
        store=None,
        timeout: float = 600.0,
        toolchain: Toolchain | None = None,
    ):
        self.provider = provider
        self._toolchain = toolchain  # None: the default toolchain, resolved on first build
        self.work = Path(work).resolve()  # trees are handed to coqc, coqdep and bwrap
        self.store = store  # a formalbench.store.snapshots.SnapshotStore, or None
        self.timeout = timeout
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._noted: set[str] = set()

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks[key]

    def tree_for(self, rev: str, target: str) -> Path:
        """A folder holding the project at `rev` with `target`'s closure built. Thread-safe:
        two tasks of one commit wait for one build instead of racing."""
        chain = self._toolchain = _toolchain(self._toolchain)
        # coqdep runs in the source tree, where the sandbox makes and removes its HOME and
        # TMPDIR folders: one run or copy of a tree at a time (two workers racing there made
        # the other's `cp -a` of the tree fail, CalledProcessError)
        with self._lock(f"src:{rev}"):
            src = self._source(rev)
            closure = dependency_closure(src, target, chain)
        built_by = f"{chain.name} {chain.version()}"  # a .vo loads only in the Coq that built it
        key = hashlib.sha256("\n".join([built_by, *closure]).encode()).hexdigest()[:12]
        snap_id = f"coq-{rev}-{key}"
        with self._lock(snap_id):
            tree = self._built(rev, src, closure, snap_id, chain)
        self._note(rev, target, snap_id, built_by)
        return tree

    def _note(self, rev: str, target: str, snap_id: str, built_by: str) -> None:
        """One line of `INDEX_NAME` per (revision, file, snapshot): which snapshot holds the
        file's closure, read by `ape export` (the id alone does not name the file)."""
        line = json.dumps({"rev": rev, "file": target, "snapshot": snap_id, "built_by": built_by})
        with self._guard:
            if line in self._noted:
                return
            self._noted.add(line)
            with (self.work / INDEX_NAME).open("a", encoding="utf-8") as index:
                index.write(line + "\n")

    def _source(self, rev: str) -> Path:
        src = self.work / "src" / rev
        src.parent.mkdir(parents=True, exist_ok=True)
        if not src.is_dir():
            tmp = src.with_name(rev + ".part")
            if tmp.exists():
                subprocess.run(["rm", "-rf", str(tmp)], check=True)
            self.provider.write_tree(rev, tmp)
            tmp.rename(src)
        return src

    def _built(
        self, rev: str, src: Path, closure: list[str], snap_id: str, chain: Toolchain
    ) -> Path:
        dest = self.work / "built" / snap_id
        if dest.is_dir():
            return dest
        if self.store is not None and self.store.has(snap_id):
            self.store.restore(snap_id, dest)
            return dest
        part = dest.with_name(snap_id + ".part")
        part.parent.mkdir(parents=True, exist_ok=True)
        if part.exists():
            subprocess.run(["rm", "-rf", str(part)], check=True)
        with self._lock(f"src:{rev}"):  # not while a coqdep runs in it (`tree_for`)
            subprocess.run(["cp", "-a", str(src), str(part)], check=True)
        for dep in closure:
            rel, _ = coq_project_args(part, dep)
            # A library file is text from a repository: it passes the same gate as any
            # candidate, and coqc runs under the sandbox's limits, tied to this process.
            text = (part / dep).read_text(encoding="utf-8", errors="replace")
            refused = refusal(text, Language.coq, "coqc")
            if refused is not None:
                said = "; ".join(d.message for d in refused.diagnostics)
                raise ProjectError(
                    "a dependency is refused by the gate", f"{rev[:12]}: {dep}: {said}"
                )
            run = run_limited(
                [chain.program("coqc"), "-q", *rel, dep],
                cwd=part,
                timeout=self.timeout,
                env=chain.env(scrubbed_env()),
                root=chain.sandbox_root,
            )
            if run.status != CheckStatus.ok or run.returncode != 0:
                raise ProjectError(
                    "a dependency does not build", f"{rev[:12]}: {dep}: {build_error(run)}"
                )
        part.rename(dest)
        if self.store is not None:
            self.store.put(dest, snap_id)
        return dest
