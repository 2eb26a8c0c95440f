"""The dependency walk of Lean statements, asked of Lean through any backend (the REPL
reuses one elaborated header per process).

Lean prints full names under `pp.fullNames` (part of `lean_identity.QUERY_PREFIX`), so,
unlike Coq, no resolution step is needed: (1) per task, the file up to the statement with
`#check @_root_.<statement>` (its type only) and `#print _root_.<d>` of every declaration
the file makes before it; (2) level by level for all tasks of one header, one check of the
header followed by `#print _root_.<name>` per library name (a theorem's proof is cut off:
its statement is what a reader must understand; a definition keeps its value). A name
Lean does not know (a bound variable the token reader took for a constant) gets kind
`unknown` and is neither counted nor walked. Declarations are cached by (Lean version,
name) in the same SQLite tables as Coq's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from formalbench.backends.base import Backend
from formalbench.backends.lean.header import split_header
from formalbench.checking import lean_printed
from formalbench.checking.holes import hole_decls
from formalbench.checking.lean_identity import QUERY_PREFIX, Subject, take_answers, with_queries
from formalbench.core.records import Language, Task
from formalbench.deps.coq_walk import LOCAL, StatementDeps, WalkStats
from formalbench.store.deps_cache import DepsCache

_OWN_KINDS = frozenset({"def", "abbrev", "instance", "opaque", "theorem", "structure", "inductive"})


def _sha(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def answer_names(text: str, own: str) -> list[str]:
    """Constant names in a `#check`/`#print` answer (its own name left out): keywords, bound
    variables, attribute names and universe levels are not constants
    (`checking.lean_printed.constants`); a theorem's proof after its top-level `:=` is dropped."""
    if _THEOREM.match(text):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch in "([{⟨"
            depth -= ch in ")]}⟩"
            if depth == 0 and text.startswith(":=", i):
                text = text[:i]
                break
    return [n for n in lean_printed.constants(text) if n != own and n not in _OWN_KINDS]


_THEOREM = re.compile(r"\s*(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable)\s+)*theorem\b")


class LeanDependencyWalker:
    """`CoqDependencyWalker`'s Lean counterpart, on any backend that answers `#print`."""

    def __init__(
        self,
        backend: Backend,
        cache: DepsCache | None = None,
        *,
        workers: int = 2,
        timeout: float = 300.0,
    ) -> None:
        self.backend = backend
        self.cache = cache or DepsCache()
        self.workers = max(1, workers)
        self.timeout = timeout
        self.version = backend.version()
        self.stats = WalkStats()

    def _answers(self, source: str, items: list[Subject]) -> dict[str, str]:
        queries = with_queries(source, items)
        result = self.backend.check(queries.text, timeout=self.timeout)
        self.stats.coqc_runs += 1
        _, answers = take_answers(result, queries)
        out: dict[str, str] = {}
        for name, found in answers.items():
            if all(d.severity.value == "info" for d in found):
                out[name] = "\n".join(d.message for d in found)
        return out

    def statement(self, task: Task) -> tuple[StatementDeps, str]:
        """The statement's part of the graph and the header its library names live under."""
        out = StatementDeps(task.id)
        text = task.source_text
        header = split_header(text).header_key
        decls, holes = hole_decls(text, Language.lean)
        targets = [decls[i] for i in sorted(holes) if decls[i].name]
        if not targets:
            out.error = "no statement with a hole"
            return out, header
        target = targets[0]
        own = [d.name for d in decls[: target.index] if d.name and d.kind in _OWN_KINDS]
        key = _sha("lean-statement-1", self.version, text[: target.end], *own)
        payload = self.cache.statement(key)
        if payload is None:
            name = target.name or ""
            items = [Subject(name, True, f"{QUERY_PREFIX}#check @_root_.{name}")]
            items += [Subject(n, False, f"{QUERY_PREFIX}#print _root_.{n}") for n in own]
            answers = self._answers(text[: target.end], items)
            if name not in answers:
                payload = {"error": "Lean did not print the statement"}
            else:
                local = {n: LOCAL + n for n in own}
                edges = {
                    LOCAL + n: [local.get(r, r) for r in answer_names(answers[n], n)]
                    for n in [name, *own]
                    if n in answers
                }
                payload = {"root": LOCAL + name, "edges": edges, "kinds": {}, "error": None}
                self.cache.put_statement(key, payload)
        else:
            self.stats.tasks_cached += 1
        out.error = payload.get("error")
        out.root = payload.get("root", "")
        out.edges = {k: list(v) for k, v in payload.get("edges", {}).items()}
        out.context = header
        return out, header

    def library(self, roots: dict[str, set[str]], depth: int) -> dict[str, tuple[str, list[str]]]:
        """Library declarations within `depth` hops of the roots (by header), each printed."""
        known: dict[str, tuple[str, list[str]]] = {}
        for header, names in roots.items():
            frontier, seen = set(names), set(names)
            for level in range(1, depth + 1):
                todo = []
                for name in sorted(frontier):
                    hit = self.cache.decl(self.version, name)
                    if hit is None:
                        todo.append(name)
                    else:
                        known[name] = hit
                if todo:
                    self.stats.library_asked += len(todo)
                    items = [Subject(n, False, f"{QUERY_PREFIX}#print _root_.{n}") for n in todo]
                    answers = self._answers(header, items)
                    found = {
                        n: (
                            ("declaration", answer_names(answers[n], n))
                            if n in answers
                            else ("unknown", [])
                        )
                        for n in todo
                    }
                    self.cache.put_decls(self.version, found)
                    known.update(found)
                if level == depth:
                    break
                frontier = {r for n in frontier for r in known.get(n, ("", []))[1]} - seen
                seen |= frontier
        return known

    def walk(
        self,
        tasks: Sequence[Task],
        depth: int,
        progress: Callable[[int, bool], None] | None = None,
    ) -> tuple[list[StatementDeps], dict[str, tuple[str, list[str]]]]:
        def one(task: Task) -> tuple[StatementDeps, str]:
            done = self.statement(task)
            if progress is not None:
                progress(1, False)  # a statement read from the cache is counted as worked
            return done

        with ThreadPoolExecutor(self.workers) as pool:
            pairs = list(pool.map(one, tasks))
        roots: dict[str, set[str]] = {}
        for s, header in pairs:
            if s.error is None:
                roots.setdefault(header, set()).update(
                    r for refs in s.edges.values() for r in refs if not r.startswith(LOCAL)
                )
        return [s for s, _ in pairs], self.library(roots, depth)
