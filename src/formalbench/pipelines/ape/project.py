"""A Coq project at a revision, with the dependency closure of a file compiled.

The source tree comes from a small provider (`git archive REV | tar -x`, no worktree); the
compiled tree (sources plus the `.vo` files of the closure) is kept in the snapshot store
under an id naming the revision and the closure, so a second task of the same commit, or a
second run, restores it instead of rebuilding. Flags (`-R`/`-Q` and `-arg`) come from the
project's `_CoqProject`; dependencies from `coqdep` on that file; each dependency is built
with `coqc` in dependency order.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import threading
from collections import defaultdict
from pathlib import Path
from typing import Protocol

from formalbench.backends.sandbox import run_limited, scrubbed_env
from formalbench.core.errors import BackendError, InputError
from formalbench.core.gate import refusal
from formalbench.core.records import CheckStatus, Language


class TreeProvider(Protocol):
    """Writes the project's source tree at `rev` into the empty folder `dest`."""

    def write_tree(self, rev: str, dest: Path) -> None: ...


class GitArchiveProvider:
    """`git archive REV | tar -x`: a plain checkout, no `.git`, no worktree bookkeeping."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir

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


def coq_project_args(tree: Path) -> tuple[list[str], list[str]]:
    """(flags relative to the tree root, flags with absolute paths) from `_CoqProject`."""
    path = tree / "_CoqProject"
    if not path.is_file():
        raise InputError(f"{tree}: no _CoqProject at this revision")
    words = shlex.split(path.read_text(encoding="utf-8"), comments=True)
    rel: list[str] = []
    absolute: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        if w in ("-R", "-Q") and k + 2 < len(words):
            rel += [w, words[k + 1], words[k + 2]]
            absolute += [w, str((tree / words[k + 1]).resolve()), words[k + 2]]
            k += 3
        elif w == "-arg" and k + 1 < len(words):
            extra = shlex.split(words[k + 1])
            rel += extra
            absolute += extra
            k += 2
        else:
            k += 1
    return rel, absolute


def dependency_closure(tree: Path, target: str) -> list[str]:
    """The `.v` files `target` needs, transitively, in build order (target excluded)."""
    run = subprocess.run(
        ["coqdep", "-f", "_CoqProject"], cwd=tree, capture_output=True, text=True, timeout=300
    )
    deps: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        head, _, tail = line.partition(":")
        outs = head.split()
        if not outs or not outs[0].endswith(".vo"):
            continue
        src = outs[0][:-3] + ".v"
        deps[src] = [d[:-3] + ".v" for d in tail.split() if d.endswith(".vo")]
    if target not in deps:  # a file outside _CoqProject: ask coqdep about it alone
        one = subprocess.run(
            ["coqdep", "-f", "_CoqProject", target], cwd=tree, capture_output=True, text=True
        )
        head, _, tail = one.stdout.partition(":")
        deps[target] = [d[:-3] + ".v" for d in tail.split() if d.endswith(".vo")]
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


class BuiltTrees:
    """Project trees at revisions with a file's dependencies compiled, cached as snapshots."""

    def __init__(self, provider: TreeProvider, work: Path, store=None, timeout: float = 600.0):
        self.provider = provider
        self.work = work
        self.store = store  # a formalbench.store.snapshots.SnapshotStore, or None
        self.timeout = timeout
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks[key]

    def tree_for(self, rev: str, target: str) -> Path:
        """A folder holding the project at `rev` with `target`'s closure built. Thread-safe:
        two tasks of one commit wait for one build instead of racing."""
        with self._lock(f"src:{rev}"):
            src = self._source(rev)
        closure = dependency_closure(src, target)
        key = hashlib.sha256("\n".join(closure).encode()).hexdigest()[:12]
        snap_id = f"coq-{rev}-{key}"
        with self._lock(snap_id):
            return self._built(rev, src, closure, snap_id)

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

    def _built(self, rev: str, src: Path, closure: list[str], snap_id: str) -> Path:
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
        subprocess.run(["cp", "-a", str(src), str(part)], check=True)
        rel, _ = coq_project_args(part)
        for dep in closure:
            # A library file is text from a repository: it passes the same gate as any
            # candidate, and coqc runs under the sandbox's limits, tied to this process.
            text = (part / dep).read_text(encoding="utf-8", errors="replace")
            refused = refusal(text, Language.coq, "coqc")
            if refused is not None:
                said = "; ".join(d.message for d in refused.diagnostics)
                raise BackendError(f"{rev}: dependency {dep} is refused by the gate: {said}")
            run = run_limited(
                ["coqc", "-q", *rel, dep], cwd=part, timeout=self.timeout, env=scrubbed_env()
            )
            if run.status != CheckStatus.ok or run.returncode != 0:
                why = run.stderr.strip()[:300] or run.status.value
                raise BackendError(f"{rev}: dependency {dep} does not build: {why}")
        part.rename(dest)
        if self.store is not None:
            self.store.put(dest, snap_id)
        return dest
